/* Fuzz harness: a GGUF file from untrusted bytes. The input is the whole file (a memfd, since the loader
   maps a path). It goes through gguf_open_any (unread tensor types kept aside) and gguf_open, and on success
   through what the model loader reads without a GPU: every metadata value by every getter, every string of
   every string array, the tensor table (names findable, shapes and byte counts consistent, data inside the
   file, small tensors dequantized), the hyperparameters (llm_read_hparams, shapes checked against them), and
   the tokenizer.ggml.* arrays (llm_load_tokenizer_store: the bos/eos ids must be the file's; then
   fuzz_exercise_tokenizer). */
#include "fuzz_util.h"
#include "gguf.h"
#include "model.h"
#include "tokenizer_load.h"
#include <stdlib.h>
#include <string.h>

static volatile uint64_t sink; /* keeps the reads of every byte */

/* the tensor table of a store over a size-byte file; base is the mapping (derived from the first tensor) */
static void check_tensors(const wt_store *st, uint64_t size, const uint8_t **base) {
  size_t n = wt_count(st);
  *base = NULL;
  for (size_t i = 0; i < n; i++) {
    const wt_tensor *t = wt_at(st, i);
    FUZZ_CHECK(t && t->name && wt_find(st, t->name) == t, "tensor %zu: not found by its name", i);
    FUZZ_CHECK(t->n_dims >= 0 && t->n_dims <= 4 && wt_traits(t->dtype), "tensor '%s': %d dims, dtype %d", t->name,
               t->n_dims, (int)t->dtype);
    int64_t numel = wt_numel(t);
    FUZZ_CHECK(numel >= 0 && t->nbytes == wt_nbytes(t->dtype, numel), "tensor '%s': %lld elements in %llu bytes",
               t->name, (long long)numel, (unsigned long long)t->nbytes);
    FUZZ_CHECK(t->file_offset <= size && t->nbytes <= size - t->file_offset,
               "tensor '%s': bytes %llu..+%llu outside the %llu-byte file", t->name, (unsigned long long)t->file_offset,
               (unsigned long long)t->nbytes, (unsigned long long)size);
    const uint8_t *b = (const uint8_t *)t->data - t->file_offset;
    FUZZ_CHECK(!*base || b == *base, "tensor '%s': data pointer not at its file offset", t->name);
    *base = b;
    const uint8_t *p = t->data;
    uint64_t s = 0;
    for (uint64_t k = 0; k < t->nbytes; k++)
      s += p[k];
    sink += s;
    const wt_dtype_traits *tr = wt_traits(t->dtype);
    if (numel > 0 && numel <= 1 << 16 && tr->to_f32) { /* the CPU dequantizers on fuzzed blocks */
      float *f = malloc((size_t)numel * sizeof *f);
      llm_err err = {0};
      FUZZ_CHECK(f != NULL, "out of memory");
      wgllm_status s2 = tr->to_f32(t->data, f, numel, &err);
      FUZZ_CHECK(s2 == WGLLM_OK, "tensor '%s' (%s, %lld elements): to_f32 refused: %s", t->name, tr->name,
                 (long long)numel, err.msg);
      free(f);
    }
  }
}

static void check_metadata(const wt_store *st, uint64_t size, const uint8_t *base) {
  uint64_t n = gguf_kv_count(st);
  FUZZ_CHECK(gguf_version(st) == 2 || gguf_version(st) == 3, "version %u", gguf_version(st));
  FUZZ_CHECK(gguf_kv_key(st, n) == NULL && gguf_kv_type(st, n) == -1, "key past the end");
  for (uint64_t i = 0; i < n; i++) {
    const char *key = gguf_kv_key(st, i);
    int type = gguf_kv_type(st, i);
    FUZZ_CHECK(key != NULL && type >= 0 && type <= GGUF_TYPE_FLOAT64, "key %llu: type %d", (unsigned long long)i, type);
    uint64_t u;
    double f;
    const char *s = gguf_get_str(st, key);
    FUZZ_CHECK((s != NULL) == (type == GGUF_TYPE_STRING), "key '%s': string getter vs type %d", key, type);
    if (s) sink += strlen(s);
    if (gguf_get_u64(st, key, &u)) sink += u;
    if (gguf_get_f64(st, key, &f)) sink += f == f;
    int et;
    uint64_t count;
    const void *data;
    if (!gguf_get_arr(st, key, &et, &count, &data)) {
      FUZZ_CHECK(type != GGUF_TYPE_ARRAY, "key '%s': an array the getter does not return", key);
      continue;
    }
    FUZZ_CHECK(count <= size, "key '%s': %llu elements in a %llu-byte file", key, (unsigned long long)count,
               (unsigned long long)size);
    if (et == GGUF_TYPE_STRING) {
      for (uint64_t j = 0; j < count; j++) {
        size_t len = 0;
        const char *e = gguf_arr_str(st, key, j, &len);
        FUZZ_CHECK(e != NULL && len <= size, "key '%s': string %llu", key, (unsigned long long)j);
        if (base)
          FUZZ_CHECK((const uint8_t *)e >= base && (uint64_t)((const uint8_t *)e - base) + len <= size,
                     "key '%s': string %llu outside the file", key, (unsigned long long)j);
        uint64_t h = 0;
        for (size_t k = 0; k < len; k++)
          h += (uint8_t)e[k];
        sink += h;
      }
      FUZZ_CHECK(gguf_arr_str(st, key, count, NULL) == NULL, "key '%s': string past the end", key);
    } else if (data && count) { /* a fixed-size array: every element readable (ASan checks the copy's size) */
      static const int sz[] = {1, 1, 2, 2, 4, 4, 4, 1, 0, 0, 8, 8, 8};
      FUZZ_CHECK(et >= 0 && et <= GGUF_TYPE_FLOAT64 && sz[et] > 0, "key '%s': element type %d with data", key, et);
      sink += ((const uint8_t *)data)[count * (uint64_t)sz[et] - 1];
    }
  }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  const char *path = fuzz_memfd_path(data, size);
  llm_err err = {0};
  wt_store *st = NULL;
  const uint8_t *base;

  err.msg[0] = 0;
  wgllm_status s = gguf_open_any(path, &st, &err);
  if (s == WGLLM_OK) {
    check_tensors(st, size, &base);
    uint64_t nu = gguf_unsupported_count(st);
    for (uint64_t i = 0; i <= nu; i++) {
      uint32_t type;
      const char *tn;
      uint64_t bytes;
      const char *name = gguf_unsupported(st, i, &type, &tn, &bytes);
      FUZZ_CHECK((name != NULL) == (i < nu) && (!name || (tn && bytes <= size)), "unsupported tensor %llu",
                 (unsigned long long)i);
    }
    wt_store_free(st);
  } else {
    fuzz_note("gguf_open_any: %s", err.msg);
    FUZZ_CHECK(st == NULL && err.msg[0], "gguf_open_any failed (status %d) without a message or left a store", s);
  }

  err.msg[0] = 0;
  s = gguf_open(path, &st, &err);
  if (s != WGLLM_OK) {
    fuzz_note("gguf_open: %s", err.msg);
    FUZZ_CHECK(st == NULL && err.msg[0], "gguf_open failed (status %d) without a message or left a store", s);
    return 0;
  }
  FUZZ_CHECK(wt_store_format(st) == WT_FORMAT_GGUF && wt_config(st) == NULL, "not a GGUF store");
  check_tensors(st, size, &base);
  check_metadata(st, size, base);

  llm_hparams hp;
  err.msg[0] = 0;
  if (llm_read_hparams(st, &hp, &err) == WGLLM_OK) {
    FUZZ_CHECK(hp.n_layer >= 1 && hp.n_layer <= LLM_MAX_LAYERS && hp.head_dim <= 512 && hp.inv_freq,
               "hyperparameters: %u layers, head_dim %u", hp.n_layer, hp.head_dim);
    for (uint32_t i = 0; i < hp.rot_dim / 2; i++)
      sink += hp.inv_freq[i] == hp.inv_freq[i];
    for (uint32_t l = 0; l < hp.n_layer; l++)
      FUZZ_CHECK(llm_layer_kv_source(&hp, l) <= l && llm_layer_head_dim(&hp, l) <= 512, "layer %u", l);
    llm_hparams_free(&hp);
  } else {
    fuzz_note("llm_read_hparams: %s", err.msg);
    FUZZ_CHECK(err.msg[0], "llm_read_hparams failed without a message");
  }

  tokenizer *t = NULL;
  char *tmpl = NULL;
  err.msg[0] = 0;
  s = llm_load_tokenizer_store("fuzz.gguf", st, &t, &tmpl, &err);
  if (s == WGLLM_OK) {
    uint64_t id; /* the special ids are the file's, never wrapped into other tokens */
    if (gguf_get_u64(st, "tokenizer.ggml.bos_token_id", &id))
      FUZZ_CHECK(tok_bos(t) >= 0 && (uint64_t)tok_bos(t) == id, "bos %d, the file says %llu", tok_bos(t),
                 (unsigned long long)id);
    if (gguf_get_u64(st, "tokenizer.ggml.eos_token_id", &id))
      FUZZ_CHECK(tok_eos(t) >= 0 && (uint64_t)tok_eos(t) == id, "eos %d, the file says %llu", tok_eos(t),
                 (unsigned long long)id);
    fuzz_exercise_tokenizer(t);
    tok_free(t);
    free(tmpl);
  } else {
    fuzz_note("tokenizer: %s", err.msg);
    FUZZ_CHECK(t == NULL && tmpl == NULL && err.msg[0], "tokenizer load failed (status %d) without a message", s);
  }
  wt_store_free(st);
  return 0;
}
