/* Tests of the safetensors loader and Hugging Face model directories: the reference models in data/models
   against values computed independently (Python struct at fixture time, or an independent decoder here),
   sharded directories with an index, and corrupt inputs generated into a temp dir (truncation at many cut
   points, byte mutations, hand-made broken headers, broken config.json and index files), each of which must
   fail with the right status and a message naming the file. Run from tests/. */
#define _XOPEN_SOURCE 700
#include "gguf.h"
#include "harness.h"
#include "json_shape.h"
#include "loader_util.h"
#include "safetensors.h"
#include "tensor_store.h"
#include "weight_convert.h"
#include <fcntl.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define GQA_DIR "data/models/llama_gqa"
#define BF16_DIR "data/models/llama_mha_bf16"

static llm_err err;

/* cJSON struct walk (the test does not link cJSON itself) */
static const cJSON *jget(const cJSON *o, const char *key) {
  for (const cJSON *c = o ? o->child : NULL; c; c = c->next)
    if (c->string && !strcmp(c->string, key)) return c;
  return NULL;
}

/* ---------------- safetensors: reference models ---------------- */

static void test_st_gqa(void) {
  wt_store *s = NULL;
  wgllm_status st = st_open_dir(GQA_DIR, &s, &err);
  CHECK(st == WGLLM_OK, "%s", err.msg);
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
  CHECK(wc_tensor_to_f32(k2, kv, &err) == WGLLM_OK, "%s", err.msg);
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
  wgllm_status st = st_open_dir(BF16_DIR, &s, &err);
  CHECK(st == WGLLM_OK, "%s", err.msg);
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
    CHECK(wc_tensor_to_f32(t, f, &err) == WGLLM_OK, "%s", err.msg);
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
  return st_open_dir(tpath("d"), s, &err);
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
  CHECK(st == WGLLM_OK, "%s", err.msg);
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
  /* overlapping data ranges: refused naming both tensors, as the safetensors library does */
  st = open_one("{\"a\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8]},"
                "\"b\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[4,8]}}",
                8, &s);
  EXPECT_ERR(st, WGLLM_ERR_FORMAT, st_path, "overlapping", "'b'");
  st = open_one("{\"w\":3}", 8, &s);
  EXPECT_ERR(st, WGLLM_ERR_FORMAT, st_path, "'w'", NULL);
  st = open_one("", 0, &s);
  EXPECT_ERR(st, WGLLM_ERR_FORMAT, st_path, "JSON", NULL);
  /* header length past EOF, and a file too short to hold it */
  uint8_t hdr[16] = {0x40, 0x42, 0x0f, 0, 0, 0, 0, 0, '{', '}'};
  write_file(st_path, hdr, 16);
  st = st_open_dir(tpath("d"), &s, &err);
  EXPECT_ERR(st, WGLLM_ERR_FORMAT, st_path, "header length 1000000", "past the end");
  memset(hdr, 0xff, 8);
  write_file(st_path, hdr, 16);
  st = st_open_dir(tpath("d"), &s, &err);
  EXPECT_ERR(st, WGLLM_ERR_FORMAT, st_path, "header length", NULL);
  write_file(st_path, hdr, 5);
  st = st_open_dir(tpath("d"), &s, &err);
  EXPECT_ERR(st, WGLLM_ERR_FORMAT, st_path, "too short", NULL);

  /* config.json: bad JSON, not an object, missing; then no weights at all */
  open_one("{}", 0, &s); /* restore a valid weights file */
  wt_store_free(s);
  write_file(tpath("d/config.json"), "{\"a\": tru}", 10);
  st = st_open_dir(tpath("d"), &s, &err);
  EXPECT_ERR(st, WGLLM_ERR_FORMAT, tpath("d/config.json"), "JSON", "byte");
  write_file(tpath("d/config.json"), "42", 2);
  st = st_open_dir(tpath("d"), &s, &err);
  EXPECT_ERR(st, WGLLM_ERR_FORMAT, tpath("d/config.json"), "not an object", NULL);
  unlink(tpath("d/config.json"));
  st = st_open_dir(tpath("d"), &s, &err);
  EXPECT_ERR(st, WGLLM_ERR_IO, tpath("d/config.json"), "open", NULL);
  CHECK(s == NULL, "no store on failure");
  /* duplicate keys: the last wins, as in Python's json (and transformers), in nested objects too */
  {
    const char *dup = "{\"model_type\": \"x\", \"k\": 1, \"o\": {\"a\": 1, \"a\": 3}, \"k\": 2, "
                      "\"model_type\": \"llama\"}";
    write_file(tpath("d/config.json"), dup, strlen(dup));
    open_one("{}", 0, &s);
    const cJSON *c = s ? wt_config(s) : NULL;
    const cJSON *k = c ? cJSON_GetObjectItemCaseSensitive(c, "k") : NULL;
    const cJSON *a = c ? cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(c, "o"), "a") : NULL;
    const cJSON *mt = c ? cJSON_GetObjectItemCaseSensitive(c, "model_type") : NULL;
    CHECK(k && k->valuedouble == 2 && a && a->valuedouble == 3 && cJSON_IsString(mt) &&
              !strcmp(mt->valuestring, "llama") && cJSON_GetArraySize(c) == 3,
          "duplicate config keys: the last must win");
    wt_store_free(s);
    s = NULL;
  }
  /* a config.json past its 16 MiB cap (a sparse file): refused naming the size and the cap, before parsing */
  write_file(tpath("d/config.json"), cfg, strlen(cfg));
  CHECK(truncate(tpath("d/config.json"), (16 << 20) + 1) == 0, "truncate config.json");
  st = st_open_dir(tpath("d"), &s, &err);
  EXPECT_ERR(st, WGLLM_ERR_FORMAT, tpath("d/config.json"), "16777217 bytes", "past the cap of 16777216");
  unlink(tpath("d/config.json"));
  /* a FIFO as config.json or model.safetensors: refused at once, not a hang (issue 27) */
  CHECK(mkfifo(tpath("d/config.json"), 0600) == 0, "mkfifo config.json");
  st = st_open_dir(tpath("d"), &s, &err);
  EXPECT_ERR(st, WGLLM_ERR_IO, tpath("d/config.json"), "not a regular file", NULL);
  unlink(tpath("d/config.json"));
  write_file(tpath("d/config.json"), cfg, strlen(cfg));
  unlink(st_path);
  CHECK(mkfifo(st_path, 0600) == 0, "mkfifo model.safetensors");
  st = st_open_dir(tpath("d"), &s, &err);
  EXPECT_ERR(st, WGLLM_ERR_IO, st_path, "not a regular file", NULL);
  unlink(st_path);
  st = st_open_dir(tpath("d"), &s, &err);
  EXPECT_ERR(st, WGLLM_ERR_IO, tpath("d"), "model.safetensors", NULL);
  st = st_open_dir(tpath("no_such_dir"), &s, &err);
  EXPECT_ERR(st, WGLLM_ERR_IO, tpath("no_such_dir/config.json"), NULL, NULL);
  /* a directory where the weights file should be */
  mkdir(st_path, 0755);
  st = st_open_dir(tpath("d"), &s, &err);
  EXPECT_ERR(st, WGLLM_ERR_IO, st_path, "regular file", NULL);
  rmdir(st_path);
}

/* ---------------- JSON's shape before parsing (src/base/json_shape.h, issue 27) ---------------- */

static size_t cjson_values(const cJSON *j, size_t depth, size_t *max_depth) {
  size_t n = 1;
  if ((cJSON_IsArray(j) || cJSON_IsObject(j)) && depth + 1 > *max_depth) *max_depth = depth + 1;
  for (const cJSON *c = j->child; c; c = c->next)
    n += cjson_values(c, depth + 1, max_depth);
  return n;
}

/* s of n zeros in [], inside {"x": ...}: n + 2 values as json_shape counts them (n values, two containers) */
static char *zeros_json(size_t n) {
  char *b = malloc(2 * n + 16);
  size_t k = (size_t)sprintf(b, "{\"x\":[");
  for (size_t i = 0; i < n; i++)
    k += (size_t)sprintf(b + k, i ? ",0" : "0");
  strcpy(b + k, "]}");
  return b;
}

static void test_json_shape(void) {
  make_dir("d");
  /* strings skipped with their escapes: brackets, commas and an escaped quote inside them count nothing */
  const char *t = "{\"a,[\": [1, 2, {\"b\": \"x,]}[\\\"{\"}], \"c\\\\\": []}";
  json_shape sh = json_shape_of(t, strlen(t));
  size_t depth = 0;
  cJSON *j = cJSON_Parse(t);
  size_t values = j ? cjson_values(j, 0, &depth) : 0;
  CHECK(j && sh.depth == 3 && depth == 3 && sh.values == 8 && values == 7,
        "json_shape of %s: %zu values (cJSON %zu, an empty [] counted as one more), depth %zu (cJSON %zu)", t,
        sh.values, values, sh.depth, depth);
  cJSON_Delete(j);
  /* on the real files: an upper bound of cJSON's values, the same depth */
  const char *files[] = {"../models/default/config.json",  "../models/default/tokenizer.json",
                         "../models/default/tokenizer_config.json", "data/models/gemma4_kv_shared/config.json",
                         "../third_party/tokenizers/llama3/tokenizer.json",
                         "../third_party/tokenizers/gemma3/tokenizer_config.json"};
  for (size_t i = 0; i < sizeof files / sizeof *files; i++) {
    size_t n = 0;
    char *text = th_read_file(files[i], &n);
    if (!text && i >= 4) continue; /* third_party/ is fetched by scripts/bootstrap.sh */
    CHECK(text != NULL, "read %s", files[i]);
    if (!text) continue;
    sh = json_shape_of(text, n);
    depth = 0;
    j = cJSON_ParseWithLength(text, n);
    values = j ? cjson_values(j, 0, &depth) : 0;
    CHECK(j && sh.values >= values && sh.values <= values + values / 100 && sh.depth == depth,
          "%s: json_shape %zu values, depth %zu; cJSON %zu, %zu", files[i], sh.values, sh.depth, values, depth);
    cJSON_Delete(j);
    free(text);
  }
  /* the safetensors header at its value cap is parsed (then refused for what it holds); one value more is refused
     before parsing, naming the count and the cap */
  wt_store *s = NULL;
  const char *cfg = "{\"model_type\": \"llama\"}";
  write_file(tpath("d/config.json"), cfg, strlen(cfg));
  char *h = zeros_json(2000000 - 2);
  wgllm_status st = open_one(h, 0, &s);
  EXPECT_ERR(st, WGLLM_ERR_FORMAT, "tensor 'x'", "not an object", NULL);
  free(h);
  h = zeros_json(2000000 - 1);
  st = open_one(h, 0, &s);
  EXPECT_ERR(st, WGLLM_ERR_FORMAT, tpath("d/model.safetensors"),
             "the header's JSON holds about 2000001 values; at most 2000000", NULL);
  free(h);
  /* config.json: 500,000 values, 64 levels */
  h = zeros_json(500000 - 1);
  write_file(tpath("d/config.json"), h, strlen(h));
  st = open_one("{}", 0, &s);
  EXPECT_ERR(st, WGLLM_ERR_FORMAT, tpath("d/config.json"), "JSON holds about 500001 values; at most 500000", NULL);
  free(h);
  char deep[200];
  for (int levels = 64; levels <= 65; levels++) {
    int k = sprintf(deep, "{\"model_type\": \"llama\", \"a\": ");
    for (int i = 1; i < levels; i++)
      deep[k++] = '[';
    for (int i = 1; i < levels; i++)
      deep[k++] = ']';
    strcpy(deep + k, "}");
    write_file(tpath("d/config.json"), deep, strlen(deep));
    st = open_one("{}", 0, &s);
    if (levels == 64) {
      CHECK(st == WGLLM_OK, "config.json 64 deep: %s", err.msg);
    } else {
      EXPECT_ERR(st, WGLLM_ERR_FORMAT, tpath("d/config.json"), "JSON nests 65 deep; at most 64 levels", NULL);
    }
    wt_store_free(s);
    s = NULL;
  }
  unlink(tpath("d/config.json"));
  unlink(tpath("d/model.safetensors"));
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
  if (st_open_dir(GQA_DIR, &ref, &err)) {
    CHECK(0, "%s", err.msg);
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
  wgllm_status st = st_open_dir(tpath("sh"), &s, &err);
  CHECK(st == WGLLM_OK, "%s", err.msg);
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
  st = st_open_dir(tpath("sh"), &s, &err);
  CHECK(st == WGLLM_OK, "index preferred: %s", err.msg);
  wt_store_free(s);
  unlink(tpath("sh/model.safetensors"));

  /* a tensor in two shards */
  write_shard(s2, ref, split, n, wt_at(ref, 0)->name);
  st = st_open_dir(tpath("sh"), &s, &err);
  EXPECT_ERR(st, WGLLM_ERR_FORMAT, s2, "duplicate", wt_at(ref, 0)->name);
  CHECK(contains(err.msg, s1), "names the first file: %s", err.msg);
  /* the index names a tensor its shard lacks */
  write_shard(s2, ref, split, n - 1, NULL);
  st = st_open_dir(tpath("sh"), &s, &err);
  EXPECT_ERR(st, WGLLM_ERR_FORMAT, "model.safetensors.index.json", wt_at(ref, n - 1)->name, s2);
  write_shard(s2, ref, split, n, NULL);
  /* a missing shard */
  write_index(ref, split, "model-00003-of-00002.safetensors");
  st = st_open_dir(tpath("sh"), &s, &err);
  EXPECT_ERR(st, WGLLM_ERR_IO, tpath("sh/model-00003-of-00002.safetensors"), NULL, NULL);
  /* a shard name escaping the directory */
  write_index(ref, split, "../d/model.safetensors");
  st = st_open_dir(tpath("sh"), &s, &err);
  EXPECT_ERR(st, WGLLM_ERR_FORMAT, "index.json", "shard file name", NULL);
  /* bad index JSON, and no weight_map */
  write_file(tpath("sh/model.safetensors.index.json"), "{\"weight_map\": {", 16);
  st = st_open_dir(tpath("sh"), &s, &err);
  EXPECT_ERR(st, WGLLM_ERR_FORMAT, tpath("sh/model.safetensors.index.json"), "JSON", NULL);
  write_file(tpath("sh/model.safetensors.index.json"), "{\"metadata\": {}}", 16);
  st = st_open_dir(tpath("sh"), &s, &err);
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
    wgllm_status st = st_open_dir(tpath("tr"), &s, &err);
    n++;
    if (st != WGLLM_ERR_FORMAT || !contains(err.msg, p) || s) {
      if (wrong++ < 5) CHECK(0, "cut at %zu: %s: %s", cut, wgllm_status_name(st), err.msg);
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
    wgllm_status st = st_open_dir(tpath("tr"), &s, &err);
    if (st == WGLLM_OK) {
      ok++;
      for (size_t i = 0; i < wt_count(s); i++) {
        const wt_tensor *t = wt_at(s, i);
        CHECK(t->file_offset + t->nbytes <= len, "mutated file: tensor '%s' out of bounds", t->name);
      }
    } else if ((st != WGLLM_ERR_FORMAT && st != WGLLM_ERR_UNSUPPORTED) || !contains(err.msg, p)) {
      if (other++ < 5) CHECK(0, "mutated safetensors: %s: %s", wgllm_status_name(st), err.msg);
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

int main(void) {
  if (!lt_begin("safetensors")) return 1;
  test_st_gqa();
  test_st_bf16();
  test_st_generated();
  test_st_sharded();
  test_st_truncated();
  test_json_shape();
  lt_end();
  return th_finish("test_safetensors");
}
