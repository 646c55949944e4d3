/* Tests of the model file loaders (safetensors, GGUF), the tensor store and the CPU weight conversions:
   the reference models in data/models against values computed independently (Python struct at fixture
   time, or an independent decoder here), q4gsw repack/quantize bounds, and corrupt inputs generated into a
   temp dir (truncation at many cut points, byte mutations, hand-made broken headers), each of which must
   fail with the right status and a message naming the file. Run from tests/. */
#define _XOPEN_SOURCE 700
#include "gguf.h"
#include "harness.h"
#include "safetensors.h"
#include "tensor_store.h"
#include "weight_convert.h"
#include <fcntl.h>
#include <ftw.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define GQA_DIR "data/models/llama_gqa"
#define BF16_DIR "data/models/llama_mha_bf16"
#define GGUF_PATH "data/models/llama_q4_0_gguf/model.gguf"

static char tmp_dir[256];
static char err[1024];

/* ---------------- small file helpers ---------------- */

static const char *tpath(const char *name) { /* path inside the temp dir; interned, so it stays valid */
  static char paths[64][512];
  static int n;
  char buf[512];
  snprintf(buf, sizeof buf, "%s/%s", tmp_dir, name);
  for (int i = 0; i < n; i++)
    if (!strcmp(paths[i], buf)) return paths[i];
  if (n == 64) return "/nonexistent/too-many-test-paths";
  snprintf(paths[n], sizeof paths[n], "%s", buf);
  return paths[n++];
}

static int write_file(const char *path, const void *data, size_t n) {
  FILE *f = fopen(path, "wb");
  if (!f) return 0;
  size_t w = n ? fwrite(data, 1, n, f) : 0;
  fclose(f);
  return w == n;
}

static int rm_entry(const char *p, const struct stat *sb, int flag, struct FTW *ftw) { return remove(p); }

static void make_dir(const char *name) { mkdir(tpath(name), 0755); }

static int contains(const char *hay, const char *needle) { return strstr(hay, needle) != NULL; }

/* status and message: the message must name every non-NULL needle */
static int fuzz_iters = 3000; /* WGLLM_LOADERS_FUZZ_ITERS overrides, for longer runs */
static int verbose;           /* WGLLM_TEST_VERBOSE=1 prints every expected error message */
#define EXPECT_ERR(st, want, n1, n2, n3)                                                                               \
  if (verbose) printf("  %s: %s\n", wgllm_status_name(st), err);                                                       \
  CHECK((st) == (want) && contains(err, n1) && (!(n2) || contains(err, n2)) && (!(n3) || contains(err, n3)),           \
        "got %s, want %s; err = \"%s\"", wgllm_status_name(st), wgllm_status_name(want), err)

/* cJSON struct walk (the test does not link cJSON itself) */
static const cJSON *jget(const cJSON *o, const char *key) {
  for (const cJSON *c = o ? o->child : NULL; c; c = c->next)
    if (c->string && !strcmp(c->string, key)) return c;
  return NULL;
}

/* Independent bf16 / f16 decoders: sign, exponent, mantissa through ldexp. */
static double bf16_ref(uint16_t b) {
  int s = b >> 15, e = (b >> 7) & 0xff, m = b & 0x7f;
  double v = e == 0 ? ldexp(m, -133) : e == 255 ? (m ? NAN : INFINITY) : ldexp(128 + m, e - 134);
  return s ? -v : v;
}
static double f16_ref(uint16_t h) {
  int s = h >> 15, e = (h >> 10) & 0x1f, m = h & 0x3ff;
  double v = e == 0 ? ldexp(m, -24) : e == 31 ? (m ? NAN : INFINITY) : ldexp(1024 + m, e - 25);
  return s ? -v : v;
}
static uint16_t ld16(const void *p) {
  const uint8_t *b = p;
  return (uint16_t)(b[0] | b[1] << 8);
}

/* ---------------- safetensors: reference models ---------------- */

static void test_st_gqa(void) {
  wt_store *s = NULL;
  wgllm_status st = st_open_dir(GQA_DIR, &s, err, sizeof err);
  CHECK(st == WGLLM_OK, "%s", err);
  if (st) return;
  CHECK(wt_store_format(s) == WT_FORMAT_SAFETENSORS, "format");
  CHECK(wt_count(s) == 29, "count %zu", wt_count(s));
  static const struct {
    const char *suffix;
    int64_t r, c;
  } lin[] = {{"self_attn.q_proj.weight", 96, 96}, {"self_attn.k_proj.weight", 32, 96},
             {"self_attn.v_proj.weight", 32, 96}, {"self_attn.o_proj.weight", 96, 96},
             {"mlp.gate_proj.weight", 192, 96},   {"mlp.up_proj.weight", 192, 96},
             {"mlp.down_proj.weight", 96, 192}};
  for (int l = 0; l < 3; l++) {
    char name[128];
    for (int i = 0; i < 7; i++) {
      snprintf(name, sizeof name, "model.layers.%d.%s", l, lin[i].suffix);
      const wt_tensor *t = wt_find(s, name);
      CHECK(t && t->dtype == WT_F32 && t->n_dims == 2 && t->shape[0] == lin[i].r && t->shape[1] == lin[i].c &&
                t->nbytes == (uint64_t)(lin[i].r * lin[i].c * 4),
            "%s", name);
    }
    snprintf(name, sizeof name, "model.layers.%d.input_layernorm.weight", l);
    const wt_tensor *t = wt_find(s, name);
    CHECK(t && t->n_dims == 1 && t->shape[0] == 96, "%s", name);
  }
  const wt_tensor *emb = wt_find(s, "model.embed_tokens.weight");
  CHECK(emb && emb->shape[0] == 320 && emb->shape[1] == 96 && emb->file_offset == 3008, "embed_tokens");
  CHECK(emb && contains(emb->file, "llama_gqa/model.safetensors"), "file name");
  CHECK(wt_find(s, "lm_head.weight") == NULL, "tied: no lm_head");
  CHECK(wt_find(s, "model.norm") == NULL && wt_find(s, "") == NULL, "partial names are not found");
  CHECK(wt_at(s, 0) == emb && wt_at(s, 29) == NULL, "file order");
  CHECK(!strcmp(wt_at(s, 28)->name, "model.norm.weight"), "last in file order");
  for (size_t i = 0; i < wt_count(s); i++)
    CHECK(wt_find(s, wt_at(s, i)->name) == wt_at(s, i), "find(at(%zu))", i);

  /* values (from Python struct at fixture time) */
  const wt_tensor *norm = wt_find(s, "model.norm.weight");
  const float *nv = norm->data;
  CHECK(nv[0] == 0.8448109030723572f && nv[1] == 0.7316004037857056f && nv[3] == 1.1722338199615479f &&
            nv[95] == 1.2360137701034546f,
        "model.norm.weight values");
  const wt_tensor *k2 = wt_find(s, "model.layers.2.self_attn.k_proj.weight");
  float kv[32 * 96];
  CHECK(wc_tensor_to_f32(k2, kv, err, sizeof err) == WGLLM_OK, "%s", err);
  CHECK(kv[0] == 0.08247770369052887f && kv[1] == -0.016973042860627174f && kv[3] == -0.09598048776388168f &&
            kv[32 * 96 - 1] == 0.02518569678068161f,
        "k_proj values");
  /* data points at file_offset of the file named, byte for byte */
  size_t len;
  uint8_t *raw = th_read_file(GQA_DIR "/model.safetensors", &len);
  CHECK(raw && len == 1087040, "read file");
  for (size_t i = 0; raw && i < wt_count(s); i++) {
    const wt_tensor *t = wt_at(s, i);
    CHECK(t->file_offset + t->nbytes <= len && !memcmp(raw + t->file_offset, t->data, t->nbytes), "%s", t->name);
  }
  free(raw);

  const cJSON *cfg = wt_config(s);
  CHECK(cfg && jget(cfg, "hidden_size") && jget(cfg, "hidden_size")->valuedouble == 96, "config hidden_size");
  const cJSON *rp = jget(cfg, "rope_parameters");
  CHECK(rp && jget(rp, "rope_type") && !strcmp(jget(rp, "rope_type")->valuestring, "llama3"), "config rope");
  CHECK(gguf_get_str(s, "general.architecture") == NULL && gguf_kv_count(s) == 0, "no GGUF metadata");
  wt_store_free(s);
  wt_store_free(NULL);
}

static void test_st_bf16(void) {
  wt_store *s = NULL;
  wgllm_status st = st_open_dir(BF16_DIR, &s, err, sizeof err);
  CHECK(st == WGLLM_OK, "%s", err);
  if (st) return;
  CHECK(wt_count(s) == 21, "count %zu", wt_count(s));
  const wt_tensor *lm = wt_find(s, "lm_head.weight"), *emb = wt_find(s, "model.embed_tokens.weight");
  CHECK(lm && emb && lm->dtype == WT_BF16 && lm->shape[0] == 320 && lm->shape[1] == 96 && lm->nbytes == 61440,
        "lm_head");
  CHECK(wt_find(s, "model.layers.1.self_attn.k_proj.weight")->shape[0] == 96, "MHA k_proj");
  /* values from Python (bits << 16) */
  float e[4];
  wc_bf16_to_f32_n(emb->data, e, 4);
  CHECK(e[0] == 0.06005859375f && e[1] == 0.061767578125f && e[2] == -0.08251953125f && e[3] == 0.080078125f,
        "embed bf16 values %g %g %g %g", e[0], e[1], e[2], e[3]);
  CHECK(ld16(emb->data) == 0x3d76 && ld16((const uint8_t *)lm->data + lm->nbytes - 2) == 0x3dba, "raw bits");
  /* every element of every tensor against the independent decoder */
  size_t bad = 0, total = 0;
  for (size_t i = 0; i < wt_count(s); i++) {
    const wt_tensor *t = wt_at(s, i);
    int64_t n = wt_numel(t);
    float *f = malloc((size_t)n * sizeof *f);
    CHECK(wc_tensor_to_f32(t, f, err, sizeof err) == WGLLM_OK, "%s", err);
    for (int64_t j = 0; j < n; j++, total++)
      bad += (double)f[j] != bf16_ref(ld16((const uint8_t *)t->data + 2 * j));
    free(f);
  }
  CHECK(bad == 0 && total == 492480 / 2, "bf16 conversion: %zu of %zu differ", bad, total);
  const cJSON *cfg = wt_config(s);
  CHECK(cfg && jget(cfg, "tie_word_embeddings") && (jget(cfg, "tie_word_embeddings")->type & 0xff) == cJSON_False,
        "config tie_word_embeddings");
  wt_store_free(s);
}

/* ---------------- safetensors: generated files ---------------- */

/* Writes a safetensors file: header JSON padded with spaces to 8 bytes, then data. */
static void write_st(const char *path, const char *header, const void *data, size_t n) {
  size_t hl = strlen(header), pad = (8 - hl % 8) % 8, tot = 8 + hl + pad + n;
  uint8_t *b = malloc(tot);
  for (int i = 0; i < 8; i++)
    b[i] = (uint8_t)((uint64_t)(hl + pad) >> (8 * i));
  memcpy(b + 8, header, hl);
  memset(b + 8 + hl, ' ', pad);
  if (n) memcpy(b + 8 + hl + pad, data, n);
  CHECK(write_file(path, b, tot), "write %s", path);
  free(b);
}

/* One-tensor directory "d" with config.json, header as given and `n` bytes of data. */
static wgllm_status open_one(const char *header, size_t n, wt_store **s) {
  static uint8_t data[256];
  for (size_t i = 0; i < sizeof data; i++)
    data[i] = (uint8_t)(i * 7 + 1);
  write_st(tpath("d/model.safetensors"), header, data, n);
  return st_open_dir(tpath("d"), s, err, sizeof err);
}

static void test_st_generated(void) {
  make_dir("d");
  const char *cfg = "{\"model_type\": \"llama\"}";
  write_file(tpath("d/config.json"), cfg, strlen(cfg));
  const char *st_path = tpath("d/model.safetensors");
  wt_store *s = NULL;
  wgllm_status st;

  /* valid: F16, a scalar, an empty tensor, __metadata__, unaligned offsets are fine */
  st = open_one(
      "{\"__metadata__\":{\"format\":\"pt\"},\"h\":{\"dtype\":\"F16\",\"shape\":[2,3],\"data_offsets\":[0,12]},"
      "\"sc\":{\"dtype\":\"F32\",\"shape\":[],\"data_offsets\":[13,17]},"
      "\"z\":{\"dtype\":\"BF16\",\"shape\":[0,5],\"data_offsets\":[17,17]}}",
      17, &s);
  CHECK(st == WGLLM_OK, "%s", err);
  if (!st) {
    const wt_tensor *h = wt_find(s, "h"), *sc = wt_find(s, "sc"), *z = wt_find(s, "z");
    CHECK(wt_count(s) == 3 && h && sc && z, "count");
    CHECK(h->dtype == WT_F16 && h->n_dims == 2 && h->shape[0] == 2 && h->shape[1] == 3 && h->nbytes == 12, "h");
    CHECK(sc->n_dims == 0 && wt_numel(sc) == 1 && sc->nbytes == 4, "scalar");
    CHECK(z->nbytes == 0 && wt_numel(z) == 0, "empty");
    float f[6];
    wc_f16_to_f32_n(h->data, f, 6);
    for (int i = 0; i < 6; i++)
      CHECK(f[i] == (float)f16_ref(ld16((const uint8_t *)h->data + 2 * i)), "f16 %d", i);
    CHECK(ld16(h->data) == (1 | 8 << 8), "data starts at the data section");
  }
  wt_store_free(s);

  /* corrupt headers */
  st = open_one("{\"w\":{\"dtype\":\"F32\",\"shape\":[4],\"data_offsets\":[0,16]}}", 8, &s);
  EXPECT_ERR(st, WGLLM_ERR_FORMAT, st_path, "'w'", "data_offsets");
  st = open_one("{\"w\":{\"dtype\":\"F32\",\"shape\":[3],\"data_offsets\":[0,16]}}", 16, &s);
  EXPECT_ERR(st, WGLLM_ERR_FORMAT, st_path, "'w'", "need 12");
  st = open_one("{\"w\":{\"dtype\":\"I64\",\"shape\":[2],\"data_offsets\":[0,16]}}", 16, &s);
  EXPECT_ERR(st, WGLLM_ERR_UNSUPPORTED, st_path, "'w'", "I64");
  st = open_one("{\"w\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4]},"
                "\"w\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[4,8]}}",
                8, &s);
  EXPECT_ERR(st, WGLLM_ERR_FORMAT, st_path, "duplicate", "'w'");
  st = open_one("{\"w\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4]}", 8, &s);
  EXPECT_ERR(st, WGLLM_ERR_FORMAT, st_path, "JSON", "byte");
  st = open_one("[1, 2]", 8, &s);
  EXPECT_ERR(st, WGLLM_ERR_FORMAT, st_path, "not an object", NULL);
  st = open_one("{\"w\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[8,4]}}", 8, &s);
  EXPECT_ERR(st, WGLLM_ERR_FORMAT, st_path, "'w'", "begin <= end");
  st = open_one("{\"w\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[-4,0]}}", 8, &s);
  EXPECT_ERR(st, WGLLM_ERR_FORMAT, st_path, "'w'", NULL);
  st = open_one("{\"w\":{\"dtype\":\"F32\",\"shape\":[1.5],\"data_offsets\":[0,4]}}", 8, &s);
  EXPECT_ERR(st, WGLLM_ERR_FORMAT, st_path, "'w'", "shape[0]");
  st = open_one("{\"w\":{\"dtype\":\"F32\",\"shape\":[1,1,1,1,1],\"data_offsets\":[0,4]}}", 8, &s);
  EXPECT_ERR(st, WGLLM_ERR_UNSUPPORTED, st_path, "'w'", "5 dimensions");
  st = open_one("{\"w\":{\"dtype\":\"F32\",\"shape\":[4294967296,4294967296,4294967296],\"data_offsets\":[0,4]}}", 8,
                &s);
  EXPECT_ERR(st, WGLLM_ERR_FORMAT, st_path, "'w'", "too many");
  st = open_one("{\"w\":{\"shape\":[1],\"data_offsets\":[0,4]}}", 8, &s);
  EXPECT_ERR(st, WGLLM_ERR_FORMAT, st_path, "'w'", "dtype");
  st = open_one("{\"w\":3}", 8, &s);
  EXPECT_ERR(st, WGLLM_ERR_FORMAT, st_path, "'w'", NULL);
  st = open_one("", 0, &s);
  EXPECT_ERR(st, WGLLM_ERR_FORMAT, st_path, "JSON", NULL);
  /* header length past EOF, and a file too short to hold it */
  uint8_t hdr[16] = {0x40, 0x42, 0x0f, 0, 0, 0, 0, 0, '{', '}'};
  write_file(st_path, hdr, 16);
  st = st_open_dir(tpath("d"), &s, err, sizeof err);
  EXPECT_ERR(st, WGLLM_ERR_FORMAT, st_path, "header length 1000000", "past the end");
  memset(hdr, 0xff, 8);
  write_file(st_path, hdr, 16);
  st = st_open_dir(tpath("d"), &s, err, sizeof err);
  EXPECT_ERR(st, WGLLM_ERR_FORMAT, st_path, "header length", NULL);
  write_file(st_path, hdr, 5);
  st = st_open_dir(tpath("d"), &s, err, sizeof err);
  EXPECT_ERR(st, WGLLM_ERR_FORMAT, st_path, "too short", NULL);

  /* config.json: bad JSON, not an object, missing; then no weights at all */
  open_one("{}", 0, &s); /* restore a valid weights file */
  wt_store_free(s);
  write_file(tpath("d/config.json"), "{\"a\": tru}", 10);
  st = st_open_dir(tpath("d"), &s, err, sizeof err);
  EXPECT_ERR(st, WGLLM_ERR_FORMAT, tpath("d/config.json"), "JSON", "byte");
  write_file(tpath("d/config.json"), "42", 2);
  st = st_open_dir(tpath("d"), &s, err, sizeof err);
  EXPECT_ERR(st, WGLLM_ERR_FORMAT, tpath("d/config.json"), "not an object", NULL);
  unlink(tpath("d/config.json"));
  st = st_open_dir(tpath("d"), &s, err, sizeof err);
  EXPECT_ERR(st, WGLLM_ERR_IO, tpath("d/config.json"), "open", NULL);
  CHECK(s == NULL, "no store on failure");
  write_file(tpath("d/config.json"), cfg, strlen(cfg));
  unlink(st_path);
  st = st_open_dir(tpath("d"), &s, err, sizeof err);
  EXPECT_ERR(st, WGLLM_ERR_IO, tpath("d"), "model.safetensors", NULL);
  st = st_open_dir(tpath("no_such_dir"), &s, err, sizeof err);
  EXPECT_ERR(st, WGLLM_ERR_IO, tpath("no_such_dir/config.json"), NULL, NULL);
  /* a directory where the weights file should be */
  mkdir(st_path, 0755);
  st = st_open_dir(tpath("d"), &s, err, sizeof err);
  EXPECT_ERR(st, WGLLM_ERR_IO, st_path, "regular file", NULL);
  rmdir(st_path);
}

/* Splits llama_gqa into two shards plus an index, checks it loads identically, then breaks it. */
static void write_shard(const char *path, const wt_store *src, size_t from, size_t to, const char *extra) {
  size_t cap = 65536, hl = 0, dl = 0;
  char *h = malloc(cap);
  uint8_t *data = malloc(2 << 20);
  hl += (size_t)snprintf(h + hl, cap - hl, "{");
  for (size_t i = from; i < to; i++) {
    const wt_tensor *t = wt_at(src, i);
    hl += (size_t)snprintf(h + hl, cap - hl, "%s\"%s\":{\"dtype\":\"F32\",\"shape\":[", i > from ? "," : "", t->name);
    for (int d = 0; d < t->n_dims; d++)
      hl += (size_t)snprintf(h + hl, cap - hl, "%s%lld", d ? "," : "", (long long)t->shape[d]);
    hl += (size_t)snprintf(h + hl, cap - hl, "],\"data_offsets\":[%zu,%zu]}", dl, dl + (size_t)t->nbytes);
    memcpy(data + dl, t->data, t->nbytes);
    dl += t->nbytes;
  }
  if (extra) { /* one more entry copying tensor `from` under the name `extra` */
    const wt_tensor *t = wt_at(src, from);
    hl += (size_t)snprintf(h + hl, cap - hl, ",\"%s\":{\"dtype\":\"F32\",\"shape\":[%lld],\"data_offsets\":[%zu,%zu]}",
                           extra, (long long)wt_numel(t), dl, dl + (size_t)t->nbytes);
    memcpy(data + dl, t->data, t->nbytes);
    dl += t->nbytes;
  }
  snprintf(h + hl, cap - hl, "}");
  write_st(path, h, data, dl);
  free(h);
  free(data);
}

static void write_index(const wt_store *src, size_t split, const char *override_last) {
  size_t cap = 65536, n = 0;
  char *j = malloc(cap);
  n += (size_t)snprintf(j + n, cap - n, "{\"metadata\":{\"total_size\":0},\"weight_map\":{");
  for (size_t i = 0; i < wt_count(src); i++)
    n += (size_t)snprintf(j + n, cap - n, "%s\"%s\":\"%s\"", i ? "," : "", wt_at(src, i)->name,
                          override_last && i + 1 == wt_count(src) ? override_last
                          : i < split                             ? "model-00001-of-00002.safetensors"
                                                                  : "model-00002-of-00002.safetensors");
  snprintf(j + n, cap - n, "}}");
  write_file(tpath("sh/model.safetensors.index.json"), j, strlen(j));
  free(j);
}

static void test_st_sharded(void) {
  wt_store *ref = NULL, *s = NULL;
  if (st_open_dir(GQA_DIR, &ref, err, sizeof err)) {
    CHECK(0, "%s", err);
    return;
  }
  make_dir("sh");
  size_t len, split = 13, n = wt_count(ref);
  char *cfg = th_read_file(GQA_DIR "/config.json", &len);
  write_file(tpath("sh/config.json"), cfg, len);
  free(cfg);
  const char *s1 = tpath("sh/model-00001-of-00002.safetensors"), *s2 = tpath("sh/model-00002-of-00002.safetensors");
  write_shard(s1, ref, 0, split, NULL);
  write_shard(s2, ref, split, n, NULL);
  write_index(ref, split, NULL);
  wgllm_status st = st_open_dir(tpath("sh"), &s, err, sizeof err);
  CHECK(st == WGLLM_OK, "%s", err);
  if (!st) {
    CHECK(wt_count(s) == n, "sharded count %zu", wt_count(s));
    for (size_t i = 0; i < n; i++) {
      const wt_tensor *a = wt_at(ref, i), *b = wt_find(s, a->name);
      CHECK(b && b->nbytes == a->nbytes && b->n_dims == a->n_dims && !memcmp(a->shape, b->shape, sizeof a->shape) &&
                !memcmp(a->data, b->data, a->nbytes),
            "%s", a->name);
      CHECK(b && contains(b->file, i < split ? "model-00001" : "model-00002"), "%s in its shard", a->name);
    }
    CHECK(wt_config(s) && jget(wt_config(s), "vocab_size"), "sharded config");
  }
  wt_store_free(s);
  /* the index wins over a stray model.safetensors */
  write_file(tpath("sh/model.safetensors"), "junk", 4);
  st = st_open_dir(tpath("sh"), &s, err, sizeof err);
  CHECK(st == WGLLM_OK, "index preferred: %s", err);
  wt_store_free(s);
  unlink(tpath("sh/model.safetensors"));

  /* a tensor in two shards */
  write_shard(s2, ref, split, n, wt_at(ref, 0)->name);
  st = st_open_dir(tpath("sh"), &s, err, sizeof err);
  EXPECT_ERR(st, WGLLM_ERR_FORMAT, s2, "duplicate", wt_at(ref, 0)->name);
  CHECK(contains(err, s1), "names the first file: %s", err);
  /* the index names a tensor its shard lacks */
  write_shard(s2, ref, split, n - 1, NULL);
  st = st_open_dir(tpath("sh"), &s, err, sizeof err);
  EXPECT_ERR(st, WGLLM_ERR_FORMAT, "model.safetensors.index.json", wt_at(ref, n - 1)->name, s2);
  write_shard(s2, ref, split, n, NULL);
  /* a missing shard */
  write_index(ref, split, "model-00003-of-00002.safetensors");
  st = st_open_dir(tpath("sh"), &s, err, sizeof err);
  EXPECT_ERR(st, WGLLM_ERR_IO, tpath("sh/model-00003-of-00002.safetensors"), NULL, NULL);
  /* a shard name escaping the directory */
  write_index(ref, split, "../d/model.safetensors");
  st = st_open_dir(tpath("sh"), &s, err, sizeof err);
  EXPECT_ERR(st, WGLLM_ERR_FORMAT, "index.json", "shard file name", NULL);
  /* bad index JSON, and no weight_map */
  write_file(tpath("sh/model.safetensors.index.json"), "{\"weight_map\": {", 16);
  st = st_open_dir(tpath("sh"), &s, err, sizeof err);
  EXPECT_ERR(st, WGLLM_ERR_FORMAT, tpath("sh/model.safetensors.index.json"), "JSON", NULL);
  write_file(tpath("sh/model.safetensors.index.json"), "{\"metadata\": {}}", 16);
  st = st_open_dir(tpath("sh"), &s, err, sizeof err);
  EXPECT_ERR(st, WGLLM_ERR_FORMAT, tpath("sh/model.safetensors.index.json"), "weight_map", NULL);
  wt_store_free(ref);
}

/* Truncates a copy of llama_gqa's weights at every header byte and many data points. */
static void test_st_truncated(void) {
  make_dir("tr");
  size_t len, clen;
  uint8_t *full = th_read_file(GQA_DIR "/model.safetensors", &len);
  char *cfg = th_read_file(GQA_DIR "/config.json", &clen);
  write_file(tpath("tr/config.json"), cfg, clen);
  const char *p = tpath("tr/model.safetensors");
  write_file(p, full, len);
  int n = 0, wrong = 0;
  for (size_t cut = len; cut-- > 0;) {
    if (cut > 3100 && cut % 9973 != 0 && cut < len - 64) continue; /* all of the header, a sample of the data */
    if (truncate(p, (off_t)cut) != 0) break;
    wt_store *s = NULL;
    wgllm_status st = st_open_dir(tpath("tr"), &s, err, sizeof err);
    n++;
    if (st != WGLLM_ERR_FORMAT || !contains(err, p) || s) {
      if (wrong++ < 5) CHECK(0, "cut at %zu: %s: %s", cut, wgllm_status_name(st), err);
    }
    wt_store_free(s);
  }
  CHECK(wrong == 0 && n > 3100, "%d of %d truncations wrong", wrong, n);

  /* mutations of 1..4 header bytes: any status but a crash; a success must still be in bounds */
  write_file(p, full, len);
  int fd = open(p, O_WRONLY);
  th_rng rng = {777};
  int ok = 0, other = 0;
  for (int it = 0; it < fuzz_iters / 3; it++) {
    size_t pos[4];
    int k = 1 + (int)(th_u32(&rng) % 4);
    for (int j = 0; j < k; j++) {
      pos[j] = th_u32(&rng) % 3008;
      uint8_t c = th_u32(&rng) % 4 ? (uint8_t) "0123456789[]{},:\"FB"[th_u32(&rng) % 19] : (uint8_t)th_u32(&rng);
      if (pwrite(fd, &c, 1, (off_t)pos[j]) != 1) CHECK(0, "pwrite");
    }
    wt_store *s = NULL;
    wgllm_status st = st_open_dir(tpath("tr"), &s, err, sizeof err);
    if (st == WGLLM_OK) {
      ok++;
      for (size_t i = 0; i < wt_count(s); i++) {
        const wt_tensor *t = wt_at(s, i);
        CHECK(t->file_offset + t->nbytes <= len, "mutated file: tensor '%s' out of bounds", t->name);
      }
    } else if ((st != WGLLM_ERR_FORMAT && st != WGLLM_ERR_UNSUPPORTED) || !contains(err, p)) {
      if (other++ < 5) CHECK(0, "mutated safetensors: %s: %s", wgllm_status_name(st), err);
    }
    wt_store_free(s);
    for (int j = k - 1; j >= 0; j--)
      if (pwrite(fd, full + pos[j], 1, (off_t)pos[j]) != 1) CHECK(0, "pwrite");
  }
  close(fd);
  if (verbose) printf("safetensors mutations: %d ok of %d\n", ok, fuzz_iters / 3);
  free(full);
  free(cfg);
}

/* ---------------- GGUF: reference model ---------------- */

static void test_gguf_model(void) {
  wt_store *s = NULL;
  wgllm_status st = gguf_open(GGUF_PATH, &s, err, sizeof err);
  CHECK(st == WGLLM_OK, "%s", err);
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
  CHECK(wc_tensor_to_f32(wt_find(s, "token_embd.weight"), buf, err, sizeof err) == WGLLM_OK, "%s", err);
  CHECK(buf[0] == 0.06053924560546875f && buf[1] == 0.061855316162109375f && buf[2] == -0.08291244506835938f &&
            buf[31] == -0.010528564453125f,
        "Q8_0 values %.9g %.9g", buf[0], buf[31]);
  wc_tensor_to_f32(wt_find(s, "output.weight"), buf, err, sizeof err);
  CHECK(buf[0] == 0.02929973602294922f && buf[1] == -0.13878822326660156f && buf[31] == 0.08018875122070312f,
        "output Q8_0");
  wc_tensor_to_f32(wt_find(s, "blk.0.attn_q.weight"), buf, err, sizeof err);
  CHECK(buf[0] == -0.03753662109375f && buf[2] == -0.0750732421875f && buf[16] == -0.11260986328125f && buf[31] == 0.0f,
        "Q4_0 values");
  wc_tensor_to_f32(wt_find(s, "blk.1.ffn_down.weight"), buf, err, sizeof err);
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
    CHECK(q4gsw_from_q4_0(t->data, N, K, qs, sc, err, sizeof err) == WGLLM_OK, "%s", err);
    wc_q4_0_dequant(t->data, a, N * K, err, sizeof err);
    q4gsw_dequant(qs, sc, N, K, 32, b, err, sizeof err);
    CHECK(!memcmp(a, b, (size_t)(N * K) * 4), "%s: q4gsw dequant == Q4_0 dequant", t->name);
    /* element (n, k) straight from the layout definition */
    int64_t nn = N - 1, kk = K - 3;
    const uint8_t *blk = (const uint8_t *)t->data + (nn * (K / 32) + kk / 32) * 18;
    int j = (int)(kk % 32), q = j < 16 ? blk[2 + j] & 15 : blk[2 + j - 16] >> 4;
    CHECK((int)(qs[nn * (K / 8) + kk / 8] >> (4 * (kk % 8)) & 15) == q && sc[nn * (K / 32) + kk / 32] == ld16(blk),
          "%s layout", t->name);
    CHECK(q4gsw_quantize_f32(a, N, K, 32, qs2, sc2, err, sizeof err) == WGLLM_OK, "%s", err);
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
  size_t n, cap;
} gbuf;

static void put(gbuf *b, const void *d, size_t n) {
  if (b->n + n > b->cap) {
    b->cap = (b->n + n) * 2 + 64;
    b->p = realloc(b->p, b->cap);
  }
  memcpy(b->p + b->n, d, n);
  b->n += n;
}
static void put_le(gbuf *b, uint64_t v, int n) {
  for (int i = 0; i < n; i++) {
    uint8_t c = (uint8_t)(v >> (8 * i));
    put(b, &c, 1);
  }
}
static void put_u32(gbuf *b, uint32_t v) { put_le(b, v, 4); }
static void put_u64(gbuf *b, uint64_t v) { put_le(b, v, 8); }
static void put_str(gbuf *b, const char *s) {
  put_u64(b, strlen(s));
  put(b, s, strlen(s));
}
static void put_f32(gbuf *b, float f) {
  uint32_t u;
  memcpy(&u, &f, 4);
  put_u32(b, u);
}
static void put_f64(gbuf *b, double f) {
  uint64_t u;
  memcpy(&u, &f, 8);
  put_u64(b, u);
}

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
  uint32_t type, nd;
  uint64_t ne[4];
  uint64_t nbytes;
} gg_tensor;

/* The tensors of the generated file: every supported type, 1-D to 4-D. */
static const gg_tensor gg_tensors[] = {
    {"a.f32", 0, 1, {5}, 20},        {"b.f16", 1, 3, {3, 2, 4}, 48},     {"c.bf16", 30, 2, {2, 3}, 12},
    {"d.q8", 8, 2, {64, 2}, 4 * 34}, {"q", 2, 4, {32, 1, 2, 3}, 6 * 18},
};
#define GG_NT 5

/* Tensor data: deterministic bytes, with valid f16 block scales for the quantized tensors. */
static uint8_t gg_byte(int t, uint64_t i) { return (uint8_t)(t * 37 + i * 11 + 3); }

static gbuf build_gguf(gg_opts o) {
  gbuf b = {0};
  uint64_t n_kv = 18 + (o.align != 0) + (o.bad_value_type != 0) + (o.dup_key != 0) + (o.huge_str != 0) +
                  (o.huge_arr != 0) + (o.deep_nesting != 0);
  uint64_t n_t = GG_NT + (o.dup_tensor != 0);
  put_u32(&b, o.magic);
  put_u32(&b, o.version);
  put_u64(&b, o.huge_counts ? (1ull << 60) : n_t);
  put_u64(&b, o.huge_counts ? (1ull << 59) : n_kv);
  /* one key of every scalar type */
  put_str(&b, "general.architecture"), put_u32(&b, 8), put_str(&b, "testarch");
  put_str(&b, "k.u8"), put_u32(&b, 0), put_le(&b, 200, 1);
  put_str(&b, "k.i8"), put_u32(&b, 1), put_le(&b, (uint8_t)-5, 1);
  put_str(&b, "k.u16"), put_u32(&b, 2), put_le(&b, 65000, 2);
  put_str(&b, "k.i16"), put_u32(&b, 3), put_le(&b, (uint16_t)-300, 2);
  put_str(&b, "k.u32"), put_u32(&b, 4), put_u32(&b, 4000000000u);
  put_str(&b, "k.i32"), put_u32(&b, 5), put_u32(&b, (uint32_t)-70000);
  put_str(&b, "k.f32"), put_u32(&b, 6), put_f32(&b, 0.25f);
  put_str(&b, "k.bool"), put_u32(&b, 7), put_le(&b, 1, 1);
  put_str(&b, "k.u64"), put_u32(&b, 10), put_u64(&b, 1ull << 40);
  put_str(&b, "k.i64"), put_u32(&b, 11), put_u64(&b, (uint64_t) - (1ll << 40));
  put_str(&b, "k.f64"), put_u32(&b, 12), put_f64(&b, -2.5);
  put_str(&b, "k.empty_str"), put_u32(&b, 8), put_str(&b, "");
  /* arrays: fixed types, strings, empty, nested */
  put_str(&b, "a.u16"), put_u32(&b, 9), put_u32(&b, 2), put_u64(&b, 3);
  put_le(&b, 1, 2), put_le(&b, 2, 2), put_le(&b, 65535, 2);
  put_str(&b, "a.f64"), put_u32(&b, 9), put_u32(&b, 12), put_u64(&b, 2), put_f64(&b, 1.5), put_f64(&b, -3.0);
  put_str(&b, "a.str"), put_u32(&b, 9), put_u32(&b, 8), put_u64(&b, 3);
  put_str(&b, "x"), put_str(&b, ""), put_str(&b, "hello");
  put_str(&b, "a.empty"), put_u32(&b, 9), put_u32(&b, 6), put_u64(&b, 0);
  put_str(&b, "a.nested"), put_u32(&b, 9), put_u32(&b, 9), put_u64(&b, 2); /* [[u8 x2], [str x1]] */
  put_u32(&b, 0), put_u64(&b, 2), put_le(&b, 7, 1), put_le(&b, 8, 1);
  put_u32(&b, 8), put_u64(&b, 1), put_str(&b, "in");
  if (o.align_type_str)
    put_str(&b, "general.alignment"), put_u32(&b, 8), put_str(&b, "64");
  else if (o.align)
    put_str(&b, "general.alignment"), put_u32(&b, 4), put_u32(&b, (uint32_t)o.align);
  if (o.bad_value_type) put_str(&b, "k.bad"), put_u32(&b, 13), put_u32(&b, 0);
  if (o.dup_key) put_str(&b, "k.u8"), put_u32(&b, 0), put_le(&b, 1, 1);
  if (o.huge_str) put_str(&b, "k.huge"), put_u32(&b, 8), put_u64(&b, 1ull << 62);
  if (o.huge_arr) put_str(&b, "k.huge_arr"), put_u32(&b, 9), put_u32(&b, 12), put_u64(&b, 1ull << 61);
  if (o.deep_nesting) {
    put_str(&b, "k.deep"), put_u32(&b, 9);
    for (int i = 0; i < 12; i++)
      put_u32(&b, 9), put_u64(&b, 1);
    put_u32(&b, 0), put_u64(&b, 0);
  }
  /* tensor infos */
  uint64_t align = o.align > 0 ? (uint64_t)o.align : 32, off = 0, offs[GG_NT];
  for (int i = 0; i < GG_NT; i++) {
    gg_tensor t = gg_tensors[i];
    if (o.bad_row && i == 4) t.ne[0] = 48, t.ne[1] = 1, t.ne[2] = 1, t.ne[3] = 4; /* 48 x 4 = 6 blocks */
    put_str(&b, t.name);
    put_u32(&b, o.n_dims_override && i == 1 ? o.n_dims_override : t.nd);
    for (uint32_t d = 0; d < t.nd; d++)
      put_u64(&b, t.ne[d]);
    put_u32(&b, o.tensor_type && i == 4 ? o.tensor_type : t.type);
    offs[i] = off;
    put_u64(&b, off + (o.misalign_offset && i == 2 ? 4 : 0) + (o.oob_offset && i == 3 ? 1ull << 20 : 0));
    off = (off + t.nbytes + align - 1) / align * align;
  }
  if (o.dup_tensor) put_str(&b, "c.bf16"), put_u32(&b, 1), put_u64(&b, 1), put_u32(&b, 0), put_u64(&b, 0);
  while (b.n % align)
    put_le(&b, 0, 1);
  size_t base = b.n;
  for (int i = 0; i < GG_NT; i++) {
    while (b.n < base + offs[i])
      put_le(&b, 0, 1);
    const gg_tensor *t = &gg_tensors[i];
    for (uint64_t j = 0; j < t->nbytes; j++) {
      uint8_t c = gg_byte(i, j);
      uint64_t blk = t->type == 8 ? 34 : t->type == 2 ? 18 : 0;
      if (blk && j % blk == 1) c = 0x3c; /* scale high byte: f16 in [1, 2) */
      if (t->type == 1 && j % 2 == 1) c &= 0x3f;
      put(&b, &c, 1);
    }
  }
  return b;
}

static wgllm_status open_gg(gg_opts o, wt_store **s) {
  gbuf b = build_gguf(o);
  write_file(tpath("g.gguf"), b.p, b.n);
  free(b.p);
  return gguf_open(tpath("g.gguf"), s, err, sizeof err);
}

static void test_gguf_generated(void) {
  wt_store *s = NULL;
  const char *gp = tpath("g.gguf");
  for (int v = 2; v <= 3; v++) {
    gg_opts o = gg_default();
    o.version = (uint32_t)v;
    if (v == 2) o.align = 0; /* default alignment 32 */
    wgllm_status st = open_gg(o, &s);
    CHECK(st == WGLLM_OK, "v%d: %s", v, err);
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
  st = VARIANT(tensor_type, 12);
  EXPECT_ERR(st, WGLLM_ERR_UNSUPPORTED, gp, "'q'", "type 12 (Q4_K)");
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
  st = gguf_open(gp, &s, err, sizeof err);
  EXPECT_ERR(st, WGLLM_ERR_FORMAT, gp, "byte 0", NULL);
  st = gguf_open(tpath("missing.gguf"), &s, err, sizeof err);
  EXPECT_ERR(st, WGLLM_ERR_IO, tpath("missing.gguf"), NULL, NULL);

  /* the generated file truncated at every byte */
  gbuf g = build_gguf(gg_default());
  write_file(gp, g.p, g.n);
  int wrong = 0;
  for (size_t cut = g.n; cut-- > 0;) {
    CHECK(truncate(gp, (off_t)cut) == 0, "truncate");
    st = gguf_open(gp, &s, err, sizeof err);
    if ((st != WGLLM_ERR_FORMAT || !contains(err, gp) || !contains(err, "byte")) && wrong++ < 5)
      CHECK(0, "cut at %zu: %s: %s", cut, wgllm_status_name(st), err);
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
    wgllm_status st = gguf_open(p, &s, err, sizeof err);
    n++;
    if ((st != WGLLM_ERR_FORMAT || !contains(err, p) || !contains(err, "byte") || s) && wrong++ < 5)
      CHECK(0, "cut at %zu: %s: %s", cut, wgllm_status_name(st), err);
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
    wgllm_status st = gguf_open(p, &s, err, sizeof err);
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
    if (st && !contains(err, p) && other < 100) CHECK(0, "message does not name the file: %s", err);
    wt_store_free(s);
    for (int j = k - 1; j >= 0; j--)
      if (pwrite(fd, full + pos[j], 1, (off_t)pos[j]) != 1) CHECK(0, "pwrite");
  }
  close(fd);
  CHECK(other == 0, "mutations: %d ok, %d format, %d unsupported, %d other", ok, fmt, uns, other);
  if (verbose) printf("gguf mutations: %d ok, %d format, %d unsupported\n", ok, fmt, uns);
  free(full);
}

/* ---------------- conversions ---------------- */

static uint32_t f2u(float f) {
  uint32_t u;
  memcpy(&u, &f, 4);
  return u;
}
static float u2f(uint32_t u) {
  float f;
  memcpy(&f, &u, 4);
  return f;
}

static void test_half(void) {
  int bad_dec = 0, bad_rt = 0;
  for (uint32_t h = 0; h < 65536; h++) {
    float f = wc_f16_to_f32((uint16_t)h);
    double r = f16_ref((uint16_t)h);
    if (isnan(r) ? !isnan(f) : (double)f != r || !signbit(f) != !signbit(r)) bad_dec++;
    if (!isnan(r) && wc_f32_to_f16(f) != h) bad_rt++;
    if (isnan(r) && !isnan(wc_f16_to_f32(wc_f32_to_f16(f)))) bad_rt++;
  }
  CHECK(bad_dec == 0 && bad_rt == 0, "f16 decode %d wrong, round trip %d wrong", bad_dec, bad_rt);
  /* rounding: every midpoint between consecutive finite f16 values ties to even; just off it goes the near way */
  int bad_mid = 0;
  for (uint32_t h = 0; h < 0x7bff; h++) {
    double lo = f16_ref((uint16_t)h), hi = f16_ref((uint16_t)(h + 1)), mid = (lo + hi) / 2;
    float m = (float)mid; /* exact: f16 midpoints need 12 significant bits */
    uint16_t even = (h & 1) ? (uint16_t)(h + 1) : (uint16_t)h;
    if (wc_f32_to_f16(m) != even || wc_f32_to_f16(-m) != (even | 0x8000)) bad_mid++;
    if (wc_f32_to_f16(u2f(f2u(m) - 1)) != h || wc_f32_to_f16(u2f(f2u(m) + 1)) != h + 1) bad_mid++;
  }
  CHECK(bad_mid == 0, "f16 midpoints: %d wrong", bad_mid);
  CHECK(wc_f32_to_f16(65504.0f) == 0x7bff && wc_f32_to_f16(65519.99f) == 0x7bff && wc_f32_to_f16(65520.0f) == 0x7c00 &&
            wc_f32_to_f16(1e10f) == 0x7c00 && wc_f32_to_f16(-INFINITY) == 0xfc00 && wc_f32_to_f16(-0.0f) == 0x8000,
        "overflow / inf / -0");
  CHECK(wc_f32_to_f16(0x1p-24f) == 1 && wc_f32_to_f16(0x1p-25f) == 0 && wc_f32_to_f16(0x1.8p-25f) == 1 &&
            wc_f32_to_f16(0x1p-30f) == 0 && wc_f32_to_f16(0x1.ff8p-15f) == 0x3ff &&
            wc_f32_to_f16(0x1.ffap-15f) == 0x3ff && wc_f32_to_f16(0x1.ffcp-15f) == 0x400,
        "subnormals");
  uint16_t nan = wc_f32_to_f16(NAN);
  CHECK((nan & 0x7c00) == 0x7c00 && (nan & 0x3ff), "NaN stays NaN");
#ifdef __FLT16_MAX__
  /* random floats of every magnitude against the compiler's own conversion */
  th_rng rng = {99};
  int bad_rand = 0;
  for (int i = 0; i < 2000000; i++) {
    uint32_t u = th_u32(&rng);
    float f = u2f(u);
    if (isnan(f)) continue;
    _Float16 c = (_Float16)f;
    uint16_t cb;
    memcpy(&cb, &c, 2);
    if (wc_f32_to_f16(f) != cb && bad_rand++ < 3) CHECK(0, "f32 %a -> %04x, compiler %04x", f, wc_f32_to_f16(f), cb);
  }
  CHECK(bad_rand == 0, "random f32->f16: %d differ from _Float16", bad_rand);
#endif
  int bad_bf = 0;
  for (uint32_t b = 0; b < 65536; b++) {
    float f = wc_bf16_to_f32((uint16_t)b);
    double r = bf16_ref((uint16_t)b);
    if (isnan(r) ? !isnan(f) : (double)f != r) bad_bf++;
  }
  CHECK(bad_bf == 0, "bf16: %d wrong", bad_bf);
  uint16_t hs[3];
  float fs[3] = {1.0f, -2.5f, 0.1f}, back[3];
  wc_f32_to_f16_n(fs, hs, 3);
  wc_f16_to_f32_n(hs, back, 3);
  CHECK(hs[0] == 0x3c00 && hs[1] == 0xc100 && hs[2] == 0x2e66 && back[1] == -2.5f, "array forms");
}

static void test_block_dequant(void) {
  uint8_t q8[2 * 34], q4[2 * 18];
  th_rng rng = {5};
  for (size_t i = 0; i < sizeof q8; i++)
    q8[i] = (uint8_t)th_u32(&rng);
  for (size_t i = 0; i < sizeof q4; i++)
    q4[i] = (uint8_t)th_u32(&rng);
  q8[0] = 0x00, q8[1] = 0x3c;   /* d = 1 */
  q8[34] = 0x00, q8[35] = 0xb8; /* d = -0.5 */
  q4[0] = 0x00, q4[1] = 0x40;   /* d = 2 */
  q4[18] = 0x66, q4[19] = 0x2e; /* d = f16(0.1) */
  float f8[64], f4[64];
  CHECK(wc_q8_0_dequant(q8, f8, 64, err, sizeof err) == WGLLM_OK, "%s", err);
  CHECK(wc_q4_0_dequant(q4, f4, 64, err, sizeof err) == WGLLM_OK, "%s", err);
  int bad = 0;
  for (int i = 0; i < 32; i++) {
    bad += f8[i] != (float)(int8_t)q8[2 + i] || f8[32 + i] != -0.5f * (float)(int8_t)q8[36 + i];
    int lo = i < 16 ? q4[2 + i] & 15 : q4[2 + i - 16] >> 4, hi = i < 16 ? q4[20 + i] & 15 : q4[20 + i - 16] >> 4;
    bad += f4[i] != 2.0f * (float)(lo - 8) || f4[32 + i] != (float)((double)(hi - 8) * f16_ref(0x2e66));
  }
  CHECK(bad == 0, "block dequant: %d wrong", bad);
  wgllm_status st = wc_q8_0_dequant(q8, f8, 40, err, sizeof err);
  EXPECT_ERR(st, WGLLM_ERR_INVALID_ARG, "Q8_0", "40", NULL);
  st = wc_q4_0_dequant(q4, f4, 33, err, sizeof err);
  EXPECT_ERR(st, WGLLM_ERR_INVALID_ARG, "Q4_0", "33", NULL);
}

/* Counts elements whose q4gsw round-trip error exceeds the bound of the rule: half a step (plus the f16
   rounding of the scale, at most 8 * 2^-11 of a step) unless the element was clamped at q = 15, which
   happens only for x / d > 7.5 and then costs at most one step. */
static int q4_violations(const float *w, const float *deq, const uint16_t *sc, int64_t N, int64_t K, int G,
                         double *max_rel) {
  int bad = 0;
  *max_rel = 0;
  for (int64_t r = 0; r < N; r++)
    for (int64_t c = 0; c < K; c++) {
      double d = fabs(f16_ref(sc[r * (K / G) + c / G])), e = fabs((double)w[r * K + c] - deq[r * K + c]);
      double ratio = d > 0 ? w[r * K + c] / -f16_ref(sc[r * (K / G) + c / G]) : 0; /* x/d in [-8, 8] */
      int clamped = -ratio > 7.5 - 1e-3;
      double bound = d * ((clamped ? 1.0 : 0.5) + 8.0 / 2048) + 1e-30;
      if (e > bound) bad++;
      if (d > 0 && !clamped && e / d > *max_rel) *max_rel = e / d;
    }
  return bad;
}

static void test_q4gsw(void) {
  th_rng rng = {42};
  const int64_t N = 7, K = 384;
  float *w = malloc(N * K * sizeof *w), *deq = malloc(N * K * sizeof *deq);
  uint32_t *qs = malloc(q4gsw_qs_words(N, K) * 4);
  uint16_t *sc = malloc(q4gsw_scale_count(N, K, 32) * 2);
  for (int gi = 0; gi < 3; gi++) {
    int G = 32 << gi;
    for (int64_t i = 0; i < N * K; i++)
      w[i] = th_uniform(&rng, -1.0f, 1.0f) * (1.0f + (float)(i / G % 5));
    CHECK(q4gsw_quantize_f32(w, N, K, G, qs, sc, err, sizeof err) == WGLLM_OK, "%s", err);
    CHECK(q4gsw_dequant(qs, sc, N, K, G, deq, err, sizeof err) == WGLLM_OK, "%s", err);
    double rel;
    int bad = q4_violations(w, deq, sc, N, K, G, &rel);
    CHECK(bad == 0, "G=%d: %d elements beyond the bound", G, bad);
    CHECK(rel <= 0.5 + 8.0 / 2048 && rel > 0.45, "G=%d: max unclamped error %.4f steps", G, rel);
    /* the element of largest |x| in each group is reproduced up to the f16 rounding of the scale */
    int bad_max = 0, bad_code = 0;
    for (int64_t r = 0; r < N; r++)
      for (int64_t g = 0; g < K / G; g++) {
        int64_t im = r * K + g * G;
        for (int64_t j = 1; j < G; j++)
          if (fabsf(w[r * K + g * G + j]) > fabsf(w[im])) im = r * K + g * G + j;
        if (fabs(deq[im] - w[im]) > fabs(w[im]) * 1.0 / 2048 || (qs[im / 8] >> (4 * (im % 8)) & 15) != 0) bad_max++;
        /* codes against round(x / d) + 8 in double, away from ties */
        double d = w[im] / -8.0;
        for (int64_t j = 0; j < G; j++) {
          int64_t e = r * K + g * G + j;
          double t = w[e] / d + 8;
          if (fabs(t - floor(t) - 0.5) < 1e-4) continue;
          int want = (int)floor(t + 0.5);
          want = want > 15 ? 15 : want;
          bad_code += (int)(qs[e / 8] >> (4 * (e % 8)) & 15) != want;
        }
      }
    CHECK(bad_max == 0 && bad_code == 0, "G=%d: %d group maxima, %d codes wrong", G, bad_max, bad_code);
    /* the check catches broken quantizers: a code off by one, and a scale off by a factor of two */
    uint32_t save = qs[5];
    qs[5] ^= 1u << (4 * 3 + 1); /* element 43: its code changes by +-2 */
    q4gsw_dequant(qs, sc, N, K, G, deq, err, sizeof err);
    CHECK(q4_violations(w, deq, sc, N, K, G, &rel) > 0, "G=%d: broken code not caught", G);
    qs[5] = save;
    uint16_t s0 = sc[1];
    sc[1] = wc_f32_to_f16(2.0f * wc_f16_to_f32(sc[1]));
    q4gsw_dequant(qs, sc, N, K, G, deq, err, sizeof err);
    sc[1] = s0; /* the check is against the true scale */
    CHECK(q4_violations(w, deq, sc, N, K, G, &rel) > 0, "G=%d: broken scale not caught", G);
  }
  /* llama.cpp's example: a group with both extremes; a zero group */
  float g[64] = {0};
  for (int i = 0; i < 32; i++)
    g[i] = (float)(i - 16) / 4.0f; /* -4 .. 3.75: m = -4, d = 0.5 */
  q4gsw_quantize_f32(g, 1, 64, 32, qs, sc, err, sizeof err);
  q4gsw_dequant(qs, sc, 1, 64, 32, deq, err, sizeof err);
  CHECK(wc_f16_to_f32(sc[0]) == 0.5f && (qs[0] & 15) == 0 && deq[0] == -4.0f && deq[31] == 3.5f, "extremes: %g %g",
        deq[0], deq[31]);
  CHECK(wc_f16_to_f32(sc[1]) == 0.0f && qs[4] == 0x88888888u && deq[40] == 0.0f, "zero group");
  /* errors */
  wgllm_status st = q4gsw_quantize_f32(w, N, K, 48, qs, sc, err, sizeof err);
  EXPECT_ERR(st, WGLLM_ERR_INVALID_ARG, "group size 48", NULL, NULL);
  st = q4gsw_quantize_f32(w, 3, 100, 32, qs, sc, err, sizeof err);
  EXPECT_ERR(st, WGLLM_ERR_INVALID_ARG, "[3, 100]", "32", NULL);
  st = q4gsw_quantize_f32(w, 3, 192, 128, qs, sc, err, sizeof err);
  EXPECT_ERR(st, WGLLM_ERR_INVALID_ARG, "[3, 192]", "128", NULL);
  st = q4gsw_from_q4_0(w, 2, 48, qs, sc, err, sizeof err);
  EXPECT_ERR(st, WGLLM_ERR_INVALID_ARG, "[2, 48]", NULL, NULL);
  st = q4gsw_dequant(qs, sc, 0, 64, 32, deq, err, sizeof err);
  EXPECT_ERR(st, WGLLM_ERR_INVALID_ARG, "[0, 64]", NULL, NULL);
  w[70] = NAN;
  st = q4gsw_quantize_f32(w, 2, 64, 64, qs, sc, err, sizeof err);
  EXPECT_ERR(st, WGLLM_ERR_INVALID_ARG, "W[1][6]", "finite", NULL);
  free(w), free(deq), free(qs), free(sc);
}

static void test_store_misc(void) {
  CHECK(!strcmp(wt_dtype_name(WT_BF16), "BF16") && !strcmp(wt_dtype_name(WT_Q4_0), "Q4_0"), "dtype names");
  CHECK(wt_nbytes(WT_F32, 5) == 20 && wt_nbytes(WT_BF16, 5) == 10 && wt_nbytes(WT_Q8_0, 64) == 68 &&
            wt_nbytes(WT_Q4_0, 64) == 36 && wt_nbytes(WT_Q4_0, 33) == 0 && wt_nbytes(WT_F16, -1) == 0,
        "nbytes");
  /* many names: the hash table grows and still finds everything */
  wt_store *s = wt_store_create(WT_FORMAT_SAFETENSORS);
  char name[32];
  int bad = 0;
  for (int i = 0; i < 5000; i++) {
    snprintf(name, sizeof name, "t.%d.w", i);
    wt_tensor t = {.name = name, .dtype = WT_F32, .n_dims = 1, .shape = {i, 1, 1, 1}, .file = "mem"};
    bad += wt_store_add(s, &t, err, sizeof err) != WGLLM_OK;
  }
  for (int i = 0; i < 5000; i++) {
    snprintf(name, sizeof name, "t.%d.w", i);
    const wt_tensor *t = wt_find(s, name);
    bad += !t || t->shape[0] != i || wt_at(s, (size_t)i) != t;
  }
  wt_tensor t = {.name = "t.77.w", .file = "other"};
  wgllm_status st = wt_store_add(s, &t, err, sizeof err);
  EXPECT_ERR(st, WGLLM_ERR_FORMAT, "other", "'t.77.w'", "mem");
  CHECK(bad == 0 && wt_count(s) == 5000 && !wt_find(s, "t.5000.w"), "hash table: %d wrong", bad);
  wt_store_free(s);
}

int main(void) {
  verbose = getenv("WGLLM_TEST_VERBOSE") != NULL;
  if (getenv("WGLLM_LOADERS_FUZZ_ITERS")) fuzz_iters = atoi(getenv("WGLLM_LOADERS_FUZZ_ITERS"));
  snprintf(tmp_dir, sizeof tmp_dir, "/tmp/wgllm_loaders_XXXXXX");
  if (!mkdtemp(tmp_dir)) {
    perror("mkdtemp");
    return 1;
  }
  test_store_misc();
  test_half();
  test_block_dequant();
  test_q4gsw();
  test_st_gqa();
  test_st_bf16();
  test_st_generated();
  test_st_sharded();
  test_st_truncated();
  test_gguf_model();
  test_gguf_generated();
  test_gguf_corrupt_model();
  nftw(tmp_dir, rm_entry, 16, FTW_DEPTH | FTW_PHYS);
  return th_finish("test_loaders");
}
