/* Tensor table with hash lookup by name, owned mapped files and format metadata (see tensor_store.h). */
#define _POSIX_C_SOURCE 200809L
#include "tensor_store.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct wt_store {
  wt_format format;
  wt_tensor *tensors; /* [n_tensors] in insertion (file) order */
  size_t n_tensors, cap_tensors;
  uint32_t *slots;     /* [n_slots] open-addressing table: index + 1 into tensors, 0 = empty */
  size_t n_slots;      /* power of two, kept at least twice n_tensors */
  mapped_file **files; /* [n_files] */
  size_t n_files;
  cJSON *config;
  void *meta;
  void (*meta_free)(void *);
};

static uint64_t hash_name(const char *s) { /* FNV-1a */
  uint64_t h = 1469598103934665603ull;
  for (; *s; s++)
    h = (h ^ (uint8_t)*s) * 1099511628211ull;
  return h;
}

/* Slot holding `name`, or the empty slot where it would go. */
static size_t find_slot(const wt_store *s, const char *name) {
  size_t mask = s->n_slots - 1, i = (size_t)hash_name(name) & mask;
  while (s->slots[i] && strcmp(s->tensors[s->slots[i] - 1].name, name) != 0)
    i = (i + 1) & mask;
  return i;
}

static int rehash(wt_store *s, size_t n_slots) {
  uint32_t *slots = calloc(n_slots, sizeof *slots);
  if (!slots) return 0;
  free(s->slots);
  s->slots = slots;
  s->n_slots = n_slots;
  for (size_t t = 0; t < s->n_tensors; t++)
    s->slots[find_slot(s, s->tensors[t].name)] = (uint32_t)(t + 1);
  return 1;
}

wt_store *wt_store_create(wt_format fmt) {
  wt_store *s = calloc(1, sizeof *s);
  if (!s) return NULL;
  s->format = fmt;
  if (!rehash(s, 64)) {
    free(s);
    return NULL;
  }
  return s;
}

void wt_store_free(wt_store *s) {
  if (!s) return;
  for (size_t i = 0; i < s->n_tensors; i++)
    free(s->tensors[i].name);
  free(s->tensors);
  free(s->slots);
  for (size_t i = 0; i < s->n_files; i++)
    mf_close(s->files[i]);
  free(s->files);
  cJSON_Delete(s->config);
  if (s->meta_free) s->meta_free(s->meta);
  free(s);
}

wgllm_status wt_store_add_file(wt_store *s, mapped_file *f, llm_err *err) {
  mapped_file **files = realloc(s->files, (s->n_files + 1) * sizeof *files);
  if (!files) {
    llm_err_set(err, WGLLM_ERR_OUT_OF_MEMORY, "%s: out of host memory", f->path);
    mf_close(f);
    return WGLLM_ERR_OUT_OF_MEMORY;
  }
  s->files = files;
  s->files[s->n_files++] = f;
  return WGLLM_OK;
}

wgllm_status wt_store_add(wt_store *s, const wt_tensor *t, llm_err *err) {
  size_t slot = find_slot(s, t->name);
  if (s->slots[slot]) {
    const wt_tensor *prev = &s->tensors[s->slots[slot] - 1];
    return llm_err_set(err, WGLLM_ERR_FORMAT, "%s: duplicate tensor name '%s' (already loaded from %s)", t->file,
                       t->name, prev->file);
  }
  if (s->n_tensors >= UINT32_MAX - 1) {
    return llm_err_set(err, WGLLM_ERR_UNSUPPORTED, "%s: too many tensors", t->file);
  }
  if (s->n_tensors == s->cap_tensors) {
    size_t cap = s->cap_tensors ? 2 * s->cap_tensors : 64;
    wt_tensor *ts = realloc(s->tensors, cap * sizeof *ts);
    if (!ts) goto oom;
    s->tensors = ts;
    s->cap_tensors = cap;
  }
  char *name = strdup(t->name);
  if (!name) goto oom;
  wt_tensor *dst = &s->tensors[s->n_tensors++];
  *dst = *t;
  dst->name = name;
  s->slots[slot] = (uint32_t)s->n_tensors;
  if (2 * s->n_tensors > s->n_slots && !rehash(s, 2 * s->n_slots)) {
    free(name);
    s->n_tensors--; /* the old table is still intact: rehash frees it only on success */
    s->slots[slot] = 0;
    goto oom;
  }
  return WGLLM_OK;
oom:
  return llm_err_set(err, WGLLM_ERR_OUT_OF_MEMORY, "%s: out of host memory adding tensor '%s'", t->file, t->name);
}

const wt_tensor *wt_find(const wt_store *s, const char *name) {
  if (!s || !name) return NULL;
  uint32_t idx = s->slots[find_slot(s, name)];
  return idx ? &s->tensors[idx - 1] : NULL;
}

size_t wt_count(const wt_store *s) { return s ? s->n_tensors : 0; }

const wt_tensor *wt_at(const wt_store *s, size_t i) { return s && i < s->n_tensors ? &s->tensors[i] : NULL; }

int64_t wt_numel(const wt_tensor *t) {
  /* a zero dimension first: the loaders bound the product of the others only in file order (fuzz_gguf found a
     [2^49][3 * 2^56 + 1][0] tensor whose product overflowed in this order) */
  for (int i = 0; i < t->n_dims; i++)
    if (t->shape[i] == 0) return 0;
  int64_t n = 1;
  for (int i = 0; i < t->n_dims; i++)
    n *= t->shape[i];
  return n;
}

wt_format wt_store_format(const wt_store *s) { return s->format; }

const cJSON *wt_config(const wt_store *s) { return s ? s->config : NULL; }

void wt_store_set_config(wt_store *s, cJSON *config) {
  cJSON_Delete(s->config);
  s->config = config;
}

void wt_store_set_meta(wt_store *s, void *meta, void (*free_fn)(void *)) {
  if (s->meta_free) s->meta_free(s->meta);
  s->meta = meta;
  s->meta_free = free_fn;
}

void *wt_store_meta(const wt_store *s) { return s ? s->meta : NULL; }

const void *wt_tensor_bytes(const wt_tensor *t, void **tmp, llm_err *err) {
  *tmp = NULL;
  if (t->data || !t->nbytes) return t->data;
  void *b = malloc((size_t)t->nbytes);
  if (!b || (uint64_t)(size_t)t->nbytes != t->nbytes) {
    free(b);
    llm_err_set(err, WGLLM_ERR_OUT_OF_MEMORY, "out of host memory for tensor '%s' (%llu bytes)", t->name,
                (unsigned long long)t->nbytes);
    return NULL;
  }
  if (mf_read_range(t->file, t->file_offset, b, t->nbytes, err)) {
    free(b);
    return NULL;
  }
  *tmp = b;
  return b;
}
