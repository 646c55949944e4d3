/* Tests of the GGUF reader and writer: the reference model in data/models against values computed
   independently (Python at fixture time, or the layout definition here), Q4_0 -> q4gsw repack, files made with
   the GGUF writer (src/dev/gguf_write.h) holding every value type and tensor type, deliberately broken ones
   (the writer's raw key/values, or bytes patched after it), truncations at every byte and byte mutations,
   each of which must fail with the right status and a message naming the file; and the writer's own error
   returns. Run from tests/. */
#define _XOPEN_SOURCE 700
#include "gguf.h"
#include "gguf_write.h"
#include "harness.h"
#include "loader_util.h"
#include "tensor_store.h"
#include "weight_convert.h"
#include <fcntl.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define GGUF_PATH "data/models/llama_q4_0_gguf/model.gguf"

static llm_err err;

/* ---------------- GGUF: reference model ---------------- */

static void test_gguf_model(void) {
  wt_store *s = NULL;
  wgllm_status st = gguf_open(GGUF_PATH, &s, &err);
  CHECK(st == WGLLM_OK, "%s", err.msg);
  if (st) return;
  CHECK(wt_store_format(s) == WT_FORMAT_GGUF && wt_config(s) == NULL, "format");
  CHECK(gguf_version(s) == 3 && gguf_kv_count(s) == 21 && wt_count(s) == 22, "v%u, %llu keys, %zu tensors",
        gguf_version(s), (unsigned long long)gguf_kv_count(s), wt_count(s));
  CHECK(!strcmp(gguf_kv_key(s, 0), "general.architecture") && gguf_kv_type(s, 0) == GGUF_TYPE_STRING &&
            gguf_kv_key(s, 21) == NULL && gguf_kv_type(s, 21) == -1,
        "kv enumeration");
  /* tensors in file order: name, ggml type, ne (innermost first), offset in the data section (from Python) */
  static const struct {
    const char *name;
    wt_dtype t;
    int nd;
    int64_t ne0, ne1;
    uint64_t off;
  } want[] = {{"token_embd.weight", WT_Q8_0, 2, 96, 320, 0},
              {"output_norm.weight", WT_F32, 1, 96, 1, 32640},
              {"output.weight", WT_Q8_0, 2, 96, 320, 33024},
              {"rope_freqs.weight", WT_F32, 1, 8, 1, 65664},
              {"blk.0.attn_norm.weight", WT_F32, 1, 96, 1, 65696},
              {"blk.0.ffn_norm.weight", WT_F32, 1, 96, 1, 66080},
              {"blk.0.attn_q.weight", WT_Q4_0, 2, 96, 96, 66464},
              {"blk.0.attn_k.weight", WT_Q4_0, 2, 96, 32, 71648},
              {"blk.0.attn_v.weight", WT_Q4_0, 2, 96, 32, 73376},
              {"blk.0.attn_output.weight", WT_Q4_0, 2, 96, 96, 75104},
              {"blk.0.ffn_gate.weight", WT_Q4_0, 2, 96, 192, 80288},
              {"blk.0.ffn_up.weight", WT_Q4_0, 2, 96, 192, 90656},
              {"blk.0.ffn_down.weight", WT_Q4_0, 2, 192, 96, 101024},
              {"blk.1.attn_norm.weight", WT_F32, 1, 96, 1, 111392},
              {"blk.1.ffn_norm.weight", WT_F32, 1, 96, 1, 111776},
              {"blk.1.attn_q.weight", WT_Q4_0, 2, 96, 96, 112160},
              {"blk.1.attn_k.weight", WT_Q4_0, 2, 96, 32, 117344},
              {"blk.1.attn_v.weight", WT_Q4_0, 2, 96, 32, 119072},
              {"blk.1.attn_output.weight", WT_Q4_0, 2, 96, 96, 120800},
              {"blk.1.ffn_gate.weight", WT_Q4_0, 2, 96, 192, 125984},
              {"blk.1.ffn_up.weight", WT_Q4_0, 2, 96, 192, 136352},
              {"blk.1.ffn_down.weight", WT_Q4_0, 2, 192, 96, 146720}};
  for (int i = 0; i < 22; i++) {
    const wt_tensor *t = wt_at(s, (size_t)i);
    CHECK(t && !strcmp(t->name, want[i].name) && wt_find(s, want[i].name) == t, "tensor %d name", i);
    if (!t) continue;
    int64_t ne1 = want[i].ne1;
    CHECK(t->dtype == want[i].t && t->n_dims == want[i].nd && t->file_offset == 9152 + want[i].off, "%s", t->name);
    /* outermost first: [ne1, ne0] */
    CHECK(want[i].nd == 1 ? t->shape[0] == want[i].ne0 : t->shape[0] == ne1 && t->shape[1] == want[i].ne0,
          "%s shape [%lld, %lld]", t->name, (long long)t->shape[0], (long long)t->shape[1]);
    CHECK(t->nbytes == wt_nbytes(t->dtype, want[i].ne0 * ne1), "%s nbytes", t->name);
  }
  CHECK(wt_find(s, "blk.0.attn_q.weight")->shape[0] == 96 && wt_find(s, "blk.0.attn_k.weight")->shape[0] == 32 &&
            wt_find(s, "blk.0.attn_k.weight")->shape[1] == 96,
        "attn_k is [n_kv*hd, n_embd] like PyTorch");

  /* metadata */
  uint64_t u = 0;
  double f = 0;
  CHECK(!strcmp(gguf_get_str(s, "general.architecture"), "llama"), "architecture");
  CHECK(!strcmp(gguf_get_str(s, "general.name"), "llama_q4_0_gguf"), "name");
  CHECK(gguf_get_u64(s, "llama.block_count", &u) && u == 2, "block_count");
  CHECK(gguf_get_u64(s, "llama.attention.head_count_kv", &u) && u == 2, "head_count_kv");
  CHECK(gguf_get_u64(s, "general.alignment", &u) && u == 32, "alignment");
  CHECK(gguf_get_f64(s, "llama.attention.layer_norm_rms_epsilon", &f) && f == (double)1e-5f, "eps %g", f);
  CHECK(gguf_get_f64(s, "llama.rope.freq_base", &f) && f == 500000.0, "freq_base");
  CHECK(gguf_get_f64(s, "llama.embedding_length", &f) && f == 96.0, "f64 from an integer");
  CHECK(!gguf_get_u64(s, "llama.rope.freq_base", &u) && !gguf_get_u64(s, "general.architecture", &u) &&
            !gguf_get_u64(s, "no.such.key", &u) && !gguf_get_str(s, "llama.block_count") && !gguf_get_str(s, "nope"),
        "type mismatches and missing keys");
  int et;
  uint64_t n;
  const void *data;
  CHECK(gguf_get_arr(s, "tokenizer.ggml.tokens", &et, &n, &data) && et == GGUF_TYPE_STRING && n == 320 && !data,
        "tokens array");
  size_t len;
  const char *tok = gguf_arr_str(s, "tokenizer.ggml.tokens", 0, &len);
  CHECK(tok && len == 5 && !memcmp(tok, "<unk>", 5), "token 0");
  tok = gguf_arr_str(s, "tokenizer.ggml.tokens", 3, &len);
  CHECK(tok && len == 6 && !memcmp(tok, "<0x00>", 6), "token 3");
  tok = gguf_arr_str(s, "tokenizer.ggml.tokens", 319, &len);
  CHECK(tok && len == 6 && !memcmp(tok, "\xe2\x96\x81iii", 6), "token 319");
  CHECK(!gguf_arr_str(s, "tokenizer.ggml.tokens", 320, &len) && !gguf_arr_str(s, "tokenizer.ggml.scores", 0, &len),
        "out of range / not strings");
  CHECK(gguf_get_arr(s, "tokenizer.ggml.scores", &et, &n, &data) && et == GGUF_TYPE_FLOAT32 && n == 320 &&
            ((const float *)data)[0] == 0.0f && ((const float *)data)[319] == -60.0f,
        "scores");
  CHECK(gguf_get_arr(s, "tokenizer.ggml.token_type", &et, &n, &data) && et == GGUF_TYPE_INT32 && n == 320 &&
            ((const int32_t *)data)[0] == 2 && ((const int32_t *)data)[3] == 6 && ((const int32_t *)data)[319] == 1,
        "token_type");
  CHECK(!gguf_get_arr(s, "general.name", &et, &n, &data), "scalar is not an array");

  /* dequantized values (from Python) */
  float *buf = malloc(320 * 96 * sizeof *buf);
  CHECK(wc_tensor_to_f32(wt_find(s, "token_embd.weight"), buf, &err) == WGLLM_OK, "%s", err.msg);
  CHECK(buf[0] == 0.06053924560546875f && buf[1] == 0.061855316162109375f && buf[2] == -0.08291244506835938f &&
            buf[31] == -0.010528564453125f,
        "Q8_0 values %.9g %.9g", buf[0], buf[31]);
  wc_tensor_to_f32(wt_find(s, "output.weight"), buf, &err);
  CHECK(buf[0] == 0.02929973602294922f && buf[1] == -0.13878822326660156f && buf[31] == 0.08018875122070312f,
        "output Q8_0");
  wc_tensor_to_f32(wt_find(s, "blk.0.attn_q.weight"), buf, &err);
  CHECK(buf[0] == -0.03753662109375f && buf[2] == -0.0750732421875f && buf[16] == -0.11260986328125f && buf[31] == 0.0f,
        "Q4_0 values");
  wc_tensor_to_f32(wt_find(s, "blk.1.ffn_down.weight"), buf, &err);
  CHECK(buf[0] == -0.115997314453125f && buf[1] == 0.1353302001953125f && buf[16] == 0.0966644287109375f &&
            buf[31] == -0.038665771484375f,
        "ffn_down Q4_0");
  const float *rf = wt_find(s, "rope_freqs.weight")->data;
  CHECK(rf[0] == 1.0f && rf[1] == 32.0f && rf[7] == 32.0f, "rope_freqs");

  /* Q4_0 -> q4gsw: repack is bit-exact, and requantizing the dequantized weight reproduces it */
  int n_q4 = 0;
  for (size_t i = 0; i < wt_count(s); i++) {
    const wt_tensor *t = wt_at(s, i);
    if (t->dtype != WT_Q4_0) continue;
    n_q4++;
    int64_t N = t->shape[0], K = t->shape[1];
    uint32_t *qs = malloc(q4gsw_qs_words(N, K) * 4), *qs2 = malloc(q4gsw_qs_words(N, K) * 4);
    uint16_t *sc = malloc(q4gsw_scale_count(N, K, 32) * 2), *sc2 = malloc(q4gsw_scale_count(N, K, 32) * 2);
    float *a = malloc((size_t)(N * K) * 4), *b = malloc((size_t)(N * K) * 4);
    CHECK(q4gsw_from_q4_0(t->data, N, K, qs, sc, &err) == WGLLM_OK, "%s", err.msg);
    wc_q4_0_dequant(t->data, a, N * K, &err);
    q4gsw_dequant(qs, sc, N, K, 32, b, &err);
    CHECK(!memcmp(a, b, (size_t)(N * K) * 4), "%s: q4gsw dequant == Q4_0 dequant", t->name);
    /* element (n, k) straight from the layout definition */
    int64_t nn = N - 1, kk = K - 3;
    const uint8_t *blk = (const uint8_t *)t->data + (nn * (K / 32) + kk / 32) * 18;
    int j = (int)(kk % 32), q = j < 16 ? blk[2 + j] & 15 : blk[2 + j - 16] >> 4;
    CHECK((int)(qs[nn * (K / 8) + kk / 8] >> (4 * (kk % 8)) & 15) == q && sc[nn * (K / 32) + kk / 32] == ld16(blk),
          "%s layout", t->name);
    CHECK(q4gsw_quantize_f32(a, N, K, 32, qs2, sc2, &err) == WGLLM_OK, "%s", err.msg);
    CHECK(!memcmp(qs, qs2, q4gsw_qs_words(N, K) * 4) && !memcmp(sc, sc2, q4gsw_scale_count(N, K, 32) * 2),
          "%s: requantize(dequant(Q4_0)) == Q4_0", t->name);
    free(qs), free(qs2), free(sc), free(sc2), free(a), free(b);
  }
  CHECK(n_q4 == 14, "Q4_0 tensors: %d", n_q4);
  free(buf);
  wt_store_free(s);
}

/* ---------------- GGUF: generated files ---------------- */

typedef struct gbuf {
  uint8_t *p;
  size_t n;
} gbuf;

/* What to break in the generated GGUF. */
typedef struct gg_opts {
  uint32_t magic, version;
  int align;          /* general.alignment written (0 = key absent -> default 32) */
  int bad_value_type; /* a key with value type 13 */
  int dup_key, dup_tensor;
  int huge_str, huge_arr, huge_counts;
  int deep_nesting;
  uint32_t tensor_type; /* override the type of tensor "q" (a Q4_0 one) */
  int misalign_offset, oob_offset;
  uint32_t n_dims_override;
  int bad_row;        /* Q4_0 tensor with ne[0] = 48 */
  int align_type_str; /* general.alignment as a string */
} gg_opts;

static gg_opts gg_default(void) { return (gg_opts){.magic = 0x46554747u, .version = 3, .align = 64}; }

typedef struct gg_tensor {
  const char *name;
  wt_dtype type;
  uint32_t nd;
  uint64_t ne[4];
  uint64_t nbytes;
} gg_tensor;

/* The tensors of the generated file: every supported type, 1-D to 4-D. */
static const gg_tensor gg_tensors[] = {
    {"a.f32", WT_F32, 1, {5}, 20},         {"b.f16", WT_F16, 3, {3, 2, 4}, 48},      {"c.bf16", WT_BF16, 2, {2, 3}, 12},
    {"d.q8", WT_Q8_0, 2, {64, 2}, 4 * 34}, {"q", WT_Q4_0, 4, {32, 1, 2, 3}, 6 * 18},
};
#define GG_NT 5

/* Tensor data: deterministic bytes, with valid f16 block scales for the quantized tensors. */
static uint8_t gg_byte(int t, uint64_t i) { return (uint8_t)(t * 37 + i * 11 + 3); }

static size_t le(uint8_t *p, uint64_t v, int n) { /* v little-endian in n bytes at p; returns n */
  for (int i = 0; i < n; i++)
    p[i] = (uint8_t)(v >> (8 * i));
  return (size_t)n;
}

static uint64_t rd_le64(const uint8_t *p) {
  uint64_t v = 0;
  for (int i = 0; i < 8; i++)
    v |= (uint64_t)p[i] << (8 * i);
  return v;
}
static void add_le64(uint8_t *p, uint64_t d) { le(p, rd_le64(p) + d, 8); } /* the little-endian u64 at p += d */

/* Field positions of tensor i's info record in the file w writes. */
typedef struct gg_info {
  size_t n_dims, ne, type, offset;
} gg_info;
static gg_info info_of(const gguf_writer *w, int i) {
  gg_info f;
  f.n_dims = (size_t)gguf_writer_tensor_info_pos(w, (size_t)i) + 8 + strlen(gg_tensors[i].name);
  f.ne = f.n_dims + 4;
  f.type = f.ne + 8 * gg_tensors[i].nd;
  f.offset = f.type + 4;
  return f;
}

/* The generated file, made with the GGUF writer. What the writer refuses to write (broken values, a wrong
   magic or version, duplicate names, bad counts, types, dims and offsets) goes in through its raw key/values
   or is patched into the bytes afterwards. */
static gbuf build_gguf(gg_opts o) {
  static uint8_t data[GG_NT][4 * 34]; /* the largest tensor: d.q8 */
  for (int i = 0; i < GG_NT; i++) {
    const gg_tensor *t = &gg_tensors[i];
    for (uint64_t j = 0; j < t->nbytes; j++) {
      uint8_t c = gg_byte(i, j);
      uint64_t blk = t->type == WT_Q8_0 ? 34 : t->type == WT_Q4_0 ? 18 : 0;
      if (blk && j % blk == 1) c = 0x3c; /* scale high byte: f16 in [1, 2) */
      if (t->type == WT_F16 && j % 2 == 1) c &= 0x3f;
      data[i][j] = c;
    }
  }
  uint32_t layout = o.align > 0 && !(o.align & (o.align - 1)) ? (uint32_t)o.align : 32;
  gguf_writer *w = gguf_writer_begin(o.version == 2 ? 2 : 3, layout);
  uint8_t v[256];
  size_t n;
  /* one key of every scalar type */
  gguf_writer_kv_str(w, "general.architecture", "testarch");
  gguf_writer_kv(w, "k.u8", GGUF_TYPE_UINT8, &(uint8_t){200});
  gguf_writer_kv(w, "k.i8", GGUF_TYPE_INT8, &(int8_t){-5});
  gguf_writer_kv(w, "k.u16", GGUF_TYPE_UINT16, &(uint16_t){65000});
  gguf_writer_kv(w, "k.i16", GGUF_TYPE_INT16, &(int16_t){-300});
  gguf_writer_kv_u32(w, "k.u32", 4000000000u);
  gguf_writer_kv(w, "k.i32", GGUF_TYPE_INT32, &(int32_t){-70000});
  gguf_writer_kv_f32(w, "k.f32", 0.25f);
  gguf_writer_kv(w, "k.bool", GGUF_TYPE_BOOL, &(uint8_t){1});
  gguf_writer_kv(w, "k.u64", GGUF_TYPE_UINT64, &(uint64_t){1ull << 40});
  gguf_writer_kv(w, "k.i64", GGUF_TYPE_INT64, &(int64_t){-(1ll << 40)});
  gguf_writer_kv(w, "k.f64", GGUF_TYPE_FLOAT64, &(double){-2.5});
  gguf_writer_kv_str(w, "k.empty_str", "");
  /* arrays: fixed types, strings, empty, nested */
  gguf_writer_kv_arr(w, "a.u16", GGUF_TYPE_UINT16, 3, (uint16_t[]){1, 2, 65535});
  gguf_writer_kv_arr(w, "a.f64", GGUF_TYPE_FLOAT64, 2, (double[]){1.5, -3.0});
  gguf_writer_kv_arr_str(w, "a.str", 3, (const char *[]){"x", "", "hello"});
  gguf_writer_kv_arr(w, "a.empty", GGUF_TYPE_FLOAT32, 0, NULL);
  n = le(v, GGUF_TYPE_ARRAY, 4) + le(v + 4, 2, 8); /* [[u8 x2], [str x1]] */
  n += le(v + n, GGUF_TYPE_UINT8, 4), n += le(v + n, 2, 8), v[n++] = 7, v[n++] = 8;
  n += le(v + n, GGUF_TYPE_STRING, 4), n += le(v + n, 1, 8), n += le(v + n, 2, 8), v[n++] = 'i', v[n++] = 'n';
  gguf_writer_kv_raw(w, "a.nested", GGUF_TYPE_ARRAY, v, n);
  if (o.align_type_str) {
    n = le(v, 2, 8), v[n++] = '6', v[n++] = '4';
    gguf_writer_kv_raw(w, "general.alignment", GGUF_TYPE_STRING, v, n);
  } else if (o.align == (int)layout)
    gguf_writer_kv_u32(w, "general.alignment", layout);
  else if (o.align) /* not a power of two: only raw gets it past the writer */
    gguf_writer_kv_raw(w, "general.alignment", GGUF_TYPE_UINT32, v, le(v, (uint32_t)o.align, 4));
  if (o.bad_value_type) gguf_writer_kv_raw(w, "k.bad", 13, v, le(v, 0, 4));
  if (o.dup_key) gguf_writer_kv_raw(w, "k.u8", GGUF_TYPE_UINT8, v, le(v, 1, 1));
  if (o.huge_str) gguf_writer_kv_raw(w, "k.huge", GGUF_TYPE_STRING, v, le(v, 1ull << 62, 8));
  if (o.huge_arr) {
    n = le(v, GGUF_TYPE_FLOAT64, 4) + le(v + 4, 1ull << 61, 8);
    gguf_writer_kv_raw(w, "k.huge_arr", GGUF_TYPE_ARRAY, v, n);
  }
  if (o.deep_nesting) {
    n = 0;
    for (int i = 0; i < 12; i++)
      n += le(v + n, GGUF_TYPE_ARRAY, 4), n += le(v + n, 1, 8);
    n += le(v + n, GGUF_TYPE_UINT8, 4), n += le(v + n, 0, 8);
    gguf_writer_kv_raw(w, "k.deep", GGUF_TYPE_ARRAY, v, n);
  }
  for (int i = 0; i < GG_NT; i++)
    gguf_writer_tensor(w, gg_tensors[i].name, gg_tensors[i].type, gg_tensors[i].nd, gg_tensors[i].ne, data[i]);
  if (o.dup_tensor) gguf_writer_tensor(w, "c.bfXX", WT_F32, 1, (uint64_t[]){1}, data[0]); /* renamed below */
  gbuf b = {0};
  wgllm_status st = gguf_writer_finish_mem(w, &b.p, &b.n, &err);
  CHECK(st == WGLLM_OK, "gguf writer: %s", err.msg);
  /* patches */
  if (o.magic != 0x46554747u) le(b.p, o.magic, 4);
  if (o.version != 2 && o.version != 3) le(b.p + 4, o.version, 4);
  if (o.huge_counts) le(b.p + 8, 1ull << 60, 8), le(b.p + 16, 1ull << 59, 8);
  if (o.dup_tensor) { /* the extra tensor renamed c.bf16, pointed at offset 0 and its own data cut off the end */
    size_t at = (size_t)gguf_writer_tensor_info_pos(w, GG_NT), off_at = at + 8 + 6 + 4 + 8 + 4; /* name .. type */
    memcpy(b.p + at + 8, "c.bf16", 6);
    uint64_t base = b.n - 4 - rd_le64(b.p + off_at); /* the data section */
    b.n = (size_t)(base + rd_le64(b.p + info_of(w, 4).offset) + gg_tensors[4].nbytes);
    le(b.p + off_at, 0, 8);
  }
  if (o.n_dims_override) le(b.p + info_of(w, 1).n_dims, o.n_dims_override, 4);
  if (o.tensor_type) le(b.p + info_of(w, 4).type, o.tensor_type, 4);
  if (o.misalign_offset) add_le64(b.p + info_of(w, 2).offset, 4);
  if (o.oob_offset) add_le64(b.p + info_of(w, 3).offset, 1ull << 20);
  if (o.bad_row) /* 48 x 4 = 6 blocks */
    for (int d = 0; d < 4; d++)
      le(b.p + info_of(w, 4).ne + 8 * d, (uint64_t[]){48, 1, 1, 4}[d], 8);
  gguf_writer_free(w);
  return b;
}

static wgllm_status open_gg(gg_opts o, wt_store **s) {
  gbuf b = build_gguf(o);
  write_file(tpath("g.gguf"), b.p, b.n);
  free(b.p);
  return gguf_open(tpath("g.gguf"), s, &err);
}

static void test_gguf_generated(void) {
  wt_store *s = NULL;
  const char *gp = tpath("g.gguf");
  for (int v = 2; v <= 3; v++) {
    gg_opts o = gg_default();
    o.version = (uint32_t)v;
    if (v == 2) o.align = 0; /* default alignment 32 */
    wgllm_status st = open_gg(o, &s);
    CHECK(st == WGLLM_OK, "v%d: %s", v, err.msg);
    if (st) continue;
    CHECK(gguf_version(s) == (uint32_t)v && wt_count(s) == GG_NT && gguf_kv_count(s) == (v == 3 ? 19u : 18u),
          "v%d counts", v);
    uint64_t u;
    double f;
    CHECK(gguf_get_u64(s, "k.u8", &u) && u == 200, "u8");
    CHECK(!gguf_get_u64(s, "k.i8", &u) && gguf_get_f64(s, "k.i8", &f) && f == -5, "i8");
    CHECK(gguf_get_u64(s, "k.u16", &u) && u == 65000, "u16");
    CHECK(gguf_get_f64(s, "k.i16", &f) && f == -300, "i16");
    CHECK(gguf_get_u64(s, "k.u32", &u) && u == 4000000000u, "u32");
    CHECK(gguf_get_f64(s, "k.i32", &f) && f == -70000, "i32");
    CHECK(gguf_get_f64(s, "k.f32", &f) && f == 0.25 && !gguf_get_u64(s, "k.f32", &u), "f32");
    /* llama.cpp writes flags (tokenizer.ggml.add_bos_token) as bool: read as 0/1, but not as a float */
    CHECK(gguf_get_u64(s, "k.bool", &u) && u <= 1 && !gguf_get_f64(s, "k.bool", &f), "bool reads as 0/1 only");
    CHECK(gguf_get_u64(s, "k.u64", &u) && u == 1ull << 40, "u64");
    CHECK(gguf_get_f64(s, "k.i64", &f) && f == -(double)(1ll << 40), "i64");
    CHECK(gguf_get_f64(s, "k.f64", &f) && f == -2.5, "f64");
    CHECK(gguf_get_str(s, "k.empty_str") && !gguf_get_str(s, "k.empty_str")[0], "empty string");
    CHECK(!strcmp(gguf_get_str(s, "general.architecture"), "testarch"), "arch");
    int et;
    uint64_t n;
    const void *d;
    CHECK(gguf_get_arr(s, "a.u16", &et, &n, &d) && et == GGUF_TYPE_UINT16 && n == 3 &&
              ((const uint16_t *)d)[2] == 65535,
          "u16 array");
    CHECK(gguf_get_arr(s, "a.f64", &et, &n, &d) && et == GGUF_TYPE_FLOAT64 && n == 2 && ((const double *)d)[1] == -3.0,
          "f64 array (aligned copy)");
    size_t len;
    const char *x = gguf_arr_str(s, "a.str", 2, &len);
    CHECK(x && len == 5 && !memcmp(x, "hello", 5) && gguf_arr_str(s, "a.str", 1, &len) && len == 0, "string array");
    CHECK(gguf_get_arr(s, "a.empty", &et, &n, &d) && n == 0 && et == GGUF_TYPE_FLOAT32, "empty array");
    CHECK(gguf_get_arr(s, "a.nested", &et, &n, &d) && et == GGUF_TYPE_ARRAY && n == 2 && !d, "nested array");
    /* tensors: shapes reversed, data at the (aligned) data section */
    const wt_tensor *b = wt_find(s, "b.f16"), *q = wt_find(s, "q"), *a = wt_find(s, "a.f32");
    CHECK(b && b->dtype == WT_F16 && b->n_dims == 3 && b->shape[0] == 4 && b->shape[1] == 2 && b->shape[2] == 3,
          "3-D shape reversed");
    CHECK(q && q->dtype == WT_Q4_0 && q->n_dims == 4 && q->shape[0] == 3 && q->shape[1] == 2 && q->shape[2] == 1 &&
              q->shape[3] == 32 && q->nbytes == 108,
          "4-D Q4_0");
    CHECK(wt_find(s, "c.bf16")->dtype == WT_BF16 && wt_find(s, "d.q8")->dtype == WT_Q8_0, "dtypes");
    uint64_t al = v == 3 ? 64 : 32;
    for (int i = 0; i < GG_NT; i++) {
      const wt_tensor *t = wt_at(s, (size_t)i);
      CHECK(t->file_offset % al == 0 && ((const uint8_t *)t->data)[0] == gg_byte(i, 0), "%s data", t->name);
    }
    CHECK(a && ((const uint8_t *)a->data)[4] == gg_byte(0, 4), "f32 data");
    wt_store_free(s);
  }

  /* corrupt or unsupported variants */
  gg_opts o;
  wgllm_status st;
#define VARIANT(field, value) (o = gg_default(), o.field = (value), open_gg(o, &s))
  st = VARIANT(magic, 0x46554746u);
  EXPECT_ERR(st, WGLLM_ERR_FORMAT, gp, "not a GGUF file", NULL);
  st = VARIANT(version, 1);
  EXPECT_ERR(st, WGLLM_ERR_UNSUPPORTED, gp, "version 1", NULL);
  st = VARIANT(version, 0x03000000u);
  EXPECT_ERR(st, WGLLM_ERR_UNSUPPORTED, gp, "big-endian", NULL);
  st = VARIANT(tensor_type, 16); /* a type wgllm does not read */
  EXPECT_ERR(st, WGLLM_ERR_UNSUPPORTED, gp, "'q'", "type 16 (IQ2_XXS)");
  /* the same file described: gguf_open_any keeps 'q' aside (not in the store) and says what it is */
  {
    wt_store *sa = NULL;
    CHECK(gguf_open_any(gp, &sa, &err) == WGLLM_OK, "gguf_open_any: %s", err.msg);
    uint32_t ty = 0;
    const char *tn = NULL;
    uint64_t ub = 0;
    const char *un = sa ? gguf_unsupported(sa, 0, &ty, &tn, &ub) : NULL;
    CHECK(sa && gguf_unsupported_count(sa) == 1 && un && !strcmp(un, "q") && ty == 16 && !strcmp(tn, "IQ2_XXS") &&
              ub > 0 && !wt_find(sa, "q") && gguf_unsupported(sa, 1, &ty, &tn, &ub) == NULL,
          "the unread tensor is listed aside");
    wt_store_free(sa);
    char *text = NULL;
    CHECK(wgllm_describe_file(gp, &text) == WGLLM_ERR_UNSUPPORTED && text && strstr(text, "IQ2_XXS") &&
              strstr(text, "not read by wgllm") && strstr(text, "not runnable"),
          "describe a GGUF with an unread type: %s", text ? text : wgllm_last_error());
    wgllm_free(text);
  }
  st = VARIANT(tensor_type, 1000);
  EXPECT_ERR(st, WGLLM_ERR_UNSUPPORTED, gp, "'q'", "type 1000");
  st = VARIANT(bad_value_type, 1);
  EXPECT_ERR(st, WGLLM_ERR_FORMAT, gp, "'k.bad'", "byte");
  st = VARIANT(dup_key, 1);
  EXPECT_ERR(st, WGLLM_ERR_FORMAT, gp, "duplicate key 'k.u8'", "byte");
  st = VARIANT(dup_tensor, 1);
  EXPECT_ERR(st, WGLLM_ERR_FORMAT, gp, "duplicate tensor name 'c.bf16'", NULL);
  st = VARIANT(huge_str, 1);
  EXPECT_ERR(st, WGLLM_ERR_FORMAT, gp, "byte", "length");
  st = VARIANT(huge_arr, 1);
  EXPECT_ERR(st, WGLLM_ERR_FORMAT, gp, "'k.huge_arr'", "byte");
  st = VARIANT(huge_counts, 1);
  EXPECT_ERR(st, WGLLM_ERR_FORMAT, gp, "byte 8", NULL);
  st = VARIANT(deep_nesting, 1);
  EXPECT_ERR(st, WGLLM_ERR_FORMAT, gp, "'k.deep'", "byte");
  st = VARIANT(misalign_offset, 1);
  EXPECT_ERR(st, WGLLM_ERR_FORMAT, gp, "'c.bf16'", "alignment");
  st = VARIANT(oob_offset, 1);
  EXPECT_ERR(st, WGLLM_ERR_FORMAT, gp, "'d.q8'", "byte");
  st = VARIANT(n_dims_override, 5);
  EXPECT_ERR(st, WGLLM_ERR_FORMAT, gp, "'b.f16'", "5 dimensions");
  st = VARIANT(bad_row, 1);
  EXPECT_ERR(st, WGLLM_ERR_FORMAT, gp, "'q'", "48");
  st = VARIANT(align, 3);
  EXPECT_ERR(st, WGLLM_ERR_FORMAT, gp, "general.alignment", NULL);
  st = VARIANT(align, -1); /* put as u32 0xffffffff: not a power of two */
  EXPECT_ERR(st, WGLLM_ERR_FORMAT, gp, "general.alignment", NULL);
  st = VARIANT(align_type_str, 1);
  EXPECT_ERR(st, WGLLM_ERR_FORMAT, gp, "general.alignment", NULL);
  CHECK(s == NULL, "no store on failure");
  write_file(gp, "", 0);
  st = gguf_open(gp, &s, &err);
  EXPECT_ERR(st, WGLLM_ERR_FORMAT, gp, "byte 0", NULL);
  st = gguf_open(tpath("missing.gguf"), &s, &err);
  EXPECT_ERR(st, WGLLM_ERR_IO, tpath("missing.gguf"), NULL, NULL);

  /* the generated file truncated at every byte */
  gbuf g = build_gguf(gg_default());
  write_file(gp, g.p, g.n);
  int wrong = 0;
  for (size_t cut = g.n; cut-- > 0;) {
    CHECK(truncate(gp, (off_t)cut) == 0, "truncate");
    st = gguf_open(gp, &s, &err);
    if ((st != WGLLM_ERR_FORMAT || !contains(err.msg, gp) || !contains(err.msg, "byte")) && wrong++ < 5)
      CHECK(0, "cut at %zu: %s: %s", cut, wgllm_status_name(st), err.msg);
    wt_store_free(s);
  }
  CHECK(wrong == 0, "%d of %zu truncations wrong", wrong, g.n);
  free(g.p);
}

/* The reference GGUF truncated at every header byte and sampled data points, then byte-mutated. */
static void test_gguf_corrupt_model(void) {
  size_t len;
  uint8_t *full = th_read_file(GGUF_PATH, &len);
  if (!full) {
    CHECK(0, "read %s", GGUF_PATH);
    return;
  }
  const char *p = tpath("m.gguf");
  write_file(p, full, len);
  int wrong = 0, n = 0;
  for (size_t cut = len; cut-- > 0;) {
    if (cut > 9200 && cut % 4999 != 0 && cut < len - 40) continue;
    CHECK(truncate(p, (off_t)cut) == 0, "truncate");
    wt_store *s = NULL;
    wgllm_status st = gguf_open(p, &s, &err);
    n++;
    if ((st != WGLLM_ERR_FORMAT || !contains(err.msg, p) || !contains(err.msg, "byte") || s) && wrong++ < 5)
      CHECK(0, "cut at %zu: %s: %s", cut, wgllm_status_name(st), err.msg);
    wt_store_free(s);
  }
  CHECK(wrong == 0 && n > 9200, "%d of %d truncations wrong", wrong, n);

  /* mutations of 1..4 header bytes: any status but a crash; a success must still be in bounds */
  write_file(p, full, len);
  int fd = open(p, O_WRONLY);
  th_rng rng = {1234};
  int ok = 0, fmt = 0, uns = 0, other = 0;
  for (int it = 0; it < fuzz_iters; it++) {
    size_t pos[4];
    int k = 1 + (int)(th_u32(&rng) % 4);
    for (int j = 0; j < k; j++) {
      pos[j] = th_u32(&rng) % 9152;
      uint8_t c = (uint8_t)th_u32(&rng);
      if (pwrite(fd, &c, 1, (off_t)pos[j]) != 1) CHECK(0, "pwrite");
    }
    wt_store *s = NULL;
    wgllm_status st = gguf_open(p, &s, &err);
    if (st == WGLLM_OK) {
      ok++;
      for (size_t i = 0; i < wt_count(s); i++) {
        const wt_tensor *t = wt_at(s, i);
        CHECK(t->file_offset + t->nbytes <= len, "mutated file: tensor '%s' out of bounds", t->name);
      }
    } else if (st == WGLLM_ERR_FORMAT)
      fmt++;
    else if (st == WGLLM_ERR_UNSUPPORTED)
      uns++;
    else
      other++;
    if (st && !contains(err.msg, p) && other < 100) CHECK(0, "message does not name the file: %s", err.msg);
    wt_store_free(s);
    for (int j = k - 1; j >= 0; j--)
      if (pwrite(fd, full + pos[j], 1, (off_t)pos[j]) != 1) CHECK(0, "pwrite");
  }
  close(fd);
  CHECK(other == 0, "mutations: %d ok, %d format, %d unsupported, %d other", ok, fmt, uns, other);
  if (verbose) printf("gguf mutations: %d ok, %d format, %d unsupported\n", ok, fmt, uns);
  free(full);
}

/* ---------------- the GGUF writer's own checks ---------------- */

typedef struct fill_case {
  size_t short_by; /* bytes the fill leaves out */
  wgllm_status fail;
} fill_case;

/* Writes tensor i as bytes gg_byte(i, j), one byte a call, so the sink sees many small writes. */
static wgllm_status fill_bytes(void *user, size_t i, gguf_sink *sink) {
  const fill_case *fc = user;
  if (fc->fail) return fc->fail;
  for (uint64_t j = 0; j + fc->short_by < 16; j++) {
    uint8_t c = gg_byte((int)i, j);
    wgllm_status st = gguf_sink_write(sink, &c, 1);
    if (st) return st;
  }
  return WGLLM_OK;
}

static void test_gguf_writer(void) {
  uint8_t *p = NULL;
  size_t n = 0;
  wgllm_status st;
  gguf_writer *w = gguf_writer_begin(4, 32);
  st = gguf_writer_finish_mem(w, &p, &n, &err);
  EXPECT_ERR(st, WGLLM_ERR_INVALID_ARG, "version 4", NULL, NULL);
  CHECK(!p && !n, "no output on failure");
  gguf_writer_free(w);
  w = gguf_writer_begin(3, 48);
  st = gguf_writer_kv_u32(w, "k", 1);
  llm_err_set(&err, gguf_writer_status(w), "%s", gguf_writer_error(w));
  EXPECT_ERR(st, WGLLM_ERR_INVALID_ARG, "alignment 48", "power of two", NULL);
  gguf_writer_free(w);

  /* key/values: the first error sticks, later adds do nothing */
  w = gguf_writer_begin(3, 32);
  CHECK(gguf_writer_kv_u32(w, "k", 1) == WGLLM_OK && gguf_writer_status(w) == WGLLM_OK && !gguf_writer_error(w)[0],
        "a key");
  st = gguf_writer_kv_str(w, "k", "again");
  CHECK(gguf_writer_kv_u32(w, "other", 2) == st && gguf_writer_tensor_count(w) == 0, "sticky");
  st = gguf_writer_finish_path(w, tpath("w.gguf"), &err);
  EXPECT_ERR(st, WGLLM_ERR_INVALID_ARG, tpath("w.gguf"), "key 'k' added twice", NULL);
  CHECK(access(tpath("w.gguf"), F_OK) != 0, "no file on failure");
  gguf_writer_free(w);
  static const struct {
    const char *what;
    const char *needle;
  } kv_cases[] = {{"alignment value", "disagrees"}, {"alignment type", "must be a u32"},
                  {"bool", "bool value 2"},         {"string as scalar", "fixed-size scalar"},
                  {"array of arrays", "nested"},    {"NULL string", "string 1 is NULL"}};
  for (int c = 0; c < 6; c++) {
    w = gguf_writer_begin(3, 32);
    if (c == 0) gguf_writer_kv_u32(w, "general.alignment", 64);
    if (c == 1) gguf_writer_kv_str(w, "general.alignment", "32");
    if (c == 2) gguf_writer_kv(w, "b", GGUF_TYPE_BOOL, &(uint8_t){2});
    if (c == 3) gguf_writer_kv(w, "s", GGUF_TYPE_STRING, "x");
    if (c == 4) gguf_writer_kv_arr(w, "a", GGUF_TYPE_ARRAY, 1, "x");
    if (c == 5) gguf_writer_kv_arr_str(w, "a", 2, (const char *[]){"x", NULL});
    llm_err_set(&err, gguf_writer_status(w), "%s", gguf_writer_error(w));
    if (verbose) printf("  %s:\n", kv_cases[c].what);
    EXPECT_ERR(gguf_writer_status(w), WGLLM_ERR_INVALID_ARG, kv_cases[c].needle, NULL, NULL);
    gguf_writer_free(w);
  }

  /* tensors */
  static const struct {
    const char *name;
    wt_dtype dt;
    uint32_t nd;
    uint64_t ne0;
    const char *needle;
  } t_cases[] = {{"", WT_F32, 1, 4, "(1..63)"},
                 {"x123456789012345678901234567890123456789012345678901234567890123", WT_F32, 1, 4, "64 bytes"},
                 {"t", WT_F32, 0, 4, "0 dimensions"},
                 {"t", WT_F32, 5, 4, "5 dimensions"},
                 {"t", WT_Q4_0, 2, 48, "ne[0] = 48"},
                 {"t", WT_DTYPE_COUNT, 1, 4, "no GGUF type"},
                 {"a", WT_F32, 1, 4, "tensor name 'a' added twice"}};
  uint64_t ne[5] = {0, 2, 1, 1, 1};
  for (int c = 0; c < 7; c++) {
    w = gguf_writer_begin(3, 32);
    CHECK(gguf_writer_tensor(w, "a", WT_F32, 1, (uint64_t[]){4}, NULL) == WGLLM_OK, "%s", gguf_writer_error(w));
    ne[0] = t_cases[c].ne0;
    st = gguf_writer_tensor(w, t_cases[c].name, t_cases[c].dt, t_cases[c].nd, ne, NULL);
    llm_err_set(&err, gguf_writer_status(w), "%s", gguf_writer_error(w));
    EXPECT_ERR(st, WGLLM_ERR_INVALID_ARG, t_cases[c].needle, NULL, NULL);
    CHECK(gguf_writer_tensor_count(w) == 1, "refused tensor not added");
    gguf_writer_free(w);
  }
  w = gguf_writer_begin(3, 32);
  st = gguf_writer_tensor(w, "big", WT_F32, 4, (uint64_t[]){1ull << 20, 1ull << 20, 1ull << 20, 1ull << 20}, NULL);
  llm_err_set(&err, gguf_writer_status(w), "%s", gguf_writer_error(w));
  EXPECT_ERR(st, WGLLM_ERR_INVALID_ARG, "'big'", "too many", NULL);
  gguf_writer_free(w);

  /* streamed data: the fill writes each tensor's bytes (here one byte a call); wrong counts are refused */
  fill_case fc = {0, WGLLM_OK};
  w = gguf_writer_begin(3, 32);
  gguf_writer_kv_u32(w, "general.alignment", 32);
  uint8_t first[16];
  for (int j = 0; j < 16; j++)
    first[j] = gg_byte(0, (uint64_t)j);
  gguf_writer_tensor(w, "t0", WT_F32, 1, (uint64_t[]){4}, first); /* from memory */
  gguf_writer_tensor(w, "t1", WT_F16, 2, (uint64_t[]){4, 2}, NULL);
  gguf_writer_tensor(w, "t2", WT_BF16, 1, (uint64_t[]){8}, NULL);
  st = gguf_writer_finish_mem(w, &p, &n, &err);
  EXPECT_ERR(st, WGLLM_ERR_INVALID_ARG, "'t1'", "no fill", NULL);
  gguf_writer_set_fill(w, fill_bytes, &fc);
  st = gguf_writer_finish_mem(w, &p, &n, &err);
  CHECK(st == WGLLM_OK && n == 192 + 2 * 32 + 16, "streamed: %s, %zu bytes", err.msg, n);
  CHECK(p && gguf_writer_tensor_info_pos(w, 0) == 24 + 8 + 17 + 4 + 4 && p[gguf_writer_tensor_info_pos(w, 0)] == 2 &&
            !memcmp(p + gguf_writer_tensor_info_pos(w, 0) + 8, "t0", 2) &&
            !memcmp(p + gguf_writer_tensor_info_pos(w, 2) + 8, "t2", 2) && gguf_writer_tensor_info_pos(w, 3) == 0,
        "info positions");
  /* the same bytes to a path and to a FILE; the reader sees what was written */
  CHECK(gguf_writer_finish_path(w, tpath("w.gguf"), &err) == WGLLM_OK, "%s", err.msg);
  size_t len;
  uint8_t *back = th_read_file(tpath("w.gguf"), &len);
  CHECK(back && len == n && !memcmp(back, p, n), "path output == memory output");
  free(back);
  size_t n_whole = n;
  FILE *f = fopen(tpath("w2.gguf"), "wb");
  CHECK(f && gguf_writer_finish_file(w, f, &err) == WGLLM_OK, "%s", err.msg);
  if (f) fclose(f);
  back = th_read_file(tpath("w2.gguf"), &len);
  CHECK(back && len == n && !memcmp(back, p, n), "FILE output == memory output");
  free(back);
  free(p);
  wt_store *s = NULL;
  st = gguf_open(tpath("w.gguf"), &s, &err);
  CHECK(st == WGLLM_OK && wt_count(s) == 3 && gguf_kv_count(s) == 1, "read back: %s", err.msg);
  for (size_t i = 0; !st && i < 3; i++) {
    const wt_tensor *t = wt_at(s, i);
    int same = t->nbytes == 16 && t->file_offset % 32 == 0;
    for (uint64_t j = 0; same && j < 16; j++)
      same = ((const uint8_t *)t->data)[j] == gg_byte((int)i, j);
    CHECK(same, "tensor %zu data", i);
  }
  if (!st) CHECK(wt_at(s, 1)->shape[0] == 2 && wt_at(s, 1)->shape[1] == 4, "t1 shape [2, 4]");
  wt_store_free(s);
  fc.short_by = 2;
  st = gguf_writer_finish_mem(w, &p, &n, &err);
  EXPECT_ERR(st, WGLLM_ERR_INVALID_ARG, "wrote 14 bytes of tensor 't1'", "has 16", NULL);
  fc.short_by = 0, fc.fail = WGLLM_ERR_OUT_OF_MEMORY;
  st = gguf_writer_finish_mem(w, &p, &n, &err);
  EXPECT_ERR(st, WGLLM_ERR_OUT_OF_MEMORY, "out of host memory", "'t1'", NULL);
  /* a write that fails part way (the fill callback, after the header) onto a file that exists: the file keeps what
     it held and no temporary file stays beside it */
  st = gguf_writer_finish_path(w, tpath("w.gguf"), &err);
  EXPECT_ERR(st, WGLLM_ERR_OUT_OF_MEMORY, tpath("w.gguf"), "'t1'", NULL);
  back = th_read_file(tpath("w.gguf"), &len);
  CHECK(back && len == n_whole, "a failed write replaced the file it was to replace (%zu bytes, had %zu)",
        back ? len : 0, n_whole);
  free(back);
  char left[600];
  snprintf(left, sizeof left, "ls %s | grep -q 'w.gguf.tmp'", tmp_dir);
  CHECK(system(left) != 0, "a failed write left its temporary file in %s", tmp_dir);
  fc.fail = WGLLM_OK;
  st = gguf_writer_finish_path(w, "/nonexistent/dir/w.gguf", &err);
  EXPECT_ERR(st, WGLLM_ERR_IO, "/nonexistent/dir/w.gguf", "cannot create", NULL);
  gguf_writer_free(w);
  gguf_writer_free(NULL);
}

/* The metadata's bounds (issue 27, docs/LIMITS.md): files of nothing but key/values, written by hand (the writer
   keeps keys in memory a few at a time: these are plain bytes). n u8 keys, or one string of len bytes, its bytes a
   hole of the file (zeros, read as such). */
static void write_meta_only(const char *path, uint64_t n_keys, uint64_t str_len) {
  size_t cap = 24 + (size_t)n_keys * 20 + 64, k = 0;
  uint8_t *b = calloc(1, cap);
  memcpy(b, "GGUF", 4);
  k = 4 + le(b + 4, 3, 4) + le(b + 8, 0, 8) + le(b + 16, str_len ? 1 : n_keys, 8);
  for (uint64_t i = 0; i < n_keys && !str_len; i++) {
    k += le(b + k, 7, 8);
    k += (size_t)sprintf((char *)b + k, "k%06llu", (unsigned long long)i);
    k += le(b + k, GGUF_TYPE_UINT8, 4);
    b[k++] = 1;
  }
  if (str_len) {
    k += le(b + k, 4, 8);
    memcpy(b + k, "name", 4), k += 4;
    k += le(b + k, GGUF_TYPE_STRING, 4) + le(b + k + 4, str_len, 8);
  }
  CHECK(write_file(path, b, k) && truncate(path, (off_t)(k + str_len)) == 0, "write %s", path);
  free(b);
}

static void test_gguf_meta_bounds(void) {
  wt_store *s = NULL;
  const char *gp = tpath("meta.gguf");
  write_meta_only(gp, 65536, 0);
  wgllm_status st = gguf_open(gp, &s, &err);
  CHECK(st == WGLLM_OK && gguf_key_type(s, "k065535") == GGUF_TYPE_UINT8, "65,536 keys: %s", err.msg);
  wt_store_free(s);
  s = NULL;
  write_meta_only(gp, 65537, 0);
  st = gguf_open(gp, &s, &err);
  EXPECT_ERR(st, WGLLM_ERR_FORMAT, gp, "65537 metadata keys", "at most 65536");
  /* the key/value section: 128 MiB from byte 24, the key's length and name, the type and the string's length
     (8 + 4 + 4 + 8 bytes) before the string */
  uint64_t at_cap = (128ull << 20) - 24;
  write_meta_only(gp, 1, at_cap);
  st = gguf_open(gp, &s, &err);
  const char *v = st ? NULL : gguf_get_str(s, "name");
  CHECK(st == WGLLM_OK && v && !v[0], "a string up to the section's cap: %s", err.msg);
  wt_store_free(s);
  s = NULL;
  write_meta_only(gp, 1, at_cap + 1);
  st = gguf_open(gp, &s, &err);
  EXPECT_ERR(st, WGLLM_ERR_FORMAT, gp, "metadata key 'name' (at byte 24)", "cap of 134217728 bytes");
  CHECK(s == NULL, "no store on failure");
  unlink(gp);
}

int main(void) {
  if (!lt_begin("gguf")) return 1;
  test_gguf_meta_bounds();
  test_gguf_model();
  test_gguf_generated();
  test_gguf_corrupt_model();
  test_gguf_writer();
  lt_end();
  return th_finish("test_gguf");
}
