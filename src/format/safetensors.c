/* safetensors loader (see safetensors.h). File layout: u64 little-endian header length n, n bytes of JSON
   {name: {dtype, shape, data_offsets: [begin, end]}, "__metadata__": {...}}, then the data section, which
   data_offsets index from its start. */
#define _POSIX_C_SOURCE 200809L
#include "safetensors.h"
#include "json_shape.h"
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#define ST_MAX_HEADER (100ull << 20) /* the reference implementation refuses larger headers too */
/* JSON values in a header (json_shape.h): about 8 a tensor, so 250,000 tensors in one file (a whole 235B MoE model
   in one file would have ~36,000); cJSON's nodes for them take at most ~300 MB */
#define ST_MAX_HEADER_VALUES 2000000u
#define ST_PATH_MAX 4096

static wgllm_status join_path(char *out, const char *dir, const char *name, llm_err *err) {
  int n = snprintf(out, ST_PATH_MAX, "%s/%s", dir, name);
  if (n < 0 || n >= ST_PATH_MAX) {
    return llm_err_set(err, WGLLM_ERR_INVALID_ARG, "%s: path too long joining '%s'", dir, name);
  }
  return WGLLM_OK;
}

/* Reads and parses a whole JSON file; the root must be an object. */
typedef struct key_at {
  cJSON *item;
  size_t at;
} key_at;

static int key_at_cmp(const void *x, const void *y) {
  const key_at *a = x, *b = y;
  int c = strcmp(a->item->string, b->item->string);
  return c ? c : (a->at > b->at) - (a->at < b->at);
}

/* Duplicate keys resolved as Python's json (and so transformers) does: the last one wins. cJSON would return
   the first; the earlier ones are deleted here, in every object, in O(n log n). false when out of memory. */
static bool json_last_wins(cJSON *o) {
  if (!cJSON_IsObject(o) && !cJSON_IsArray(o)) return true;
  size_t n = 0;
  for (cJSON *c = o->child; c; c = c->next) {
    if (!json_last_wins(c)) return false;
    n++;
  }
  if (!cJSON_IsObject(o) || n < 2) return true;
  key_at *v = malloc(n * sizeof *v);
  if (!v) return false;
  size_t i = 0;
  for (cJSON *c = o->child; c; c = c->next, i++)
    v[i] = (key_at){c, i};
  qsort(v, n, sizeof *v, key_at_cmp);
  for (i = 0; i + 1 < n; i++)
    if (!strcmp(v[i].item->string, v[i + 1].item->string)) cJSON_Delete(cJSON_DetachItemViaPointer(o, v[i].item));
  free(v);
  return true;
}

static wgllm_status read_json_file(const char *path, cJSON **out, llm_err *err) {
  *out = NULL;
  mapped_file *f;
  wgllm_status st = mf_check_size(path, MF_CAP_CONFIG_JSON, err);
  if (st) return st;
  if ((st = mf_open(path, &f, err))) return st;
  const char *text = (const char *)f->data, *end = NULL;
  char why[128];
  if (json_shape_check(text, (size_t)f->size, MF_VALUES_CONFIG_JSON, JSON_FILE_MAX_DEPTH, why, sizeof why)) {
    st = llm_err_set(err, WGLLM_ERR_FORMAT, "%s: %s (docs/LIMITS.md)", path, why);
    mf_close(f);
    return st;
  }
  cJSON *root = f->size ? cJSON_ParseWithLengthOpts(text, (size_t)f->size, &end, 0) : NULL;
  if (!root) {
    unsigned long long at = f->size && end ? (unsigned long long)(end - text) : 0;
    st = llm_err_set(err, WGLLM_ERR_FORMAT, "%s: invalid JSON near byte %llu", path, at);
  } else if (!json_last_wins(root)) {
    st = llm_err_set(err, WGLLM_ERR_OUT_OF_MEMORY, "%s: out of host memory", path);
    cJSON_Delete(root);
    root = NULL;
  } else if (!cJSON_IsObject(root)) {
    llm_err_set(err, WGLLM_ERR_FORMAT, "%s: top-level JSON value is not an object", path);
    cJSON_Delete(root);
    root = NULL;
    st = WGLLM_ERR_FORMAT;
  }
  mf_close(f);
  *out = root;
  return st;
}

/* A JSON number that is a non-negative integer exactly representable in a double. */
static int json_u64(const cJSON *v, uint64_t *out) {
  if (!cJSON_IsNumber(v)) return 0;
  double d = v->valuedouble;
  if (!(d >= 0.0 && d <= 9007199254740992.0) || d != (double)(uint64_t)d) return 0;
  *out = (uint64_t)d;
  return 1;
}

/* Validates one header entry and adds it to the store. data_start/data_size: the data section in the file. */
static wgllm_status add_entry(wt_store *s, const mapped_file *f, const cJSON *e, uint64_t data_start, llm_err *err) {
  const char *name = e->string, *path = f->path;
  if (!cJSON_IsObject(e)) {
    return llm_err_set(err, WGLLM_ERR_FORMAT, "%s: header entry for tensor '%s' is not an object", path, name);
  }
  const cJSON *jd = cJSON_GetObjectItemCaseSensitive(e, "dtype");
  const cJSON *js = cJSON_GetObjectItemCaseSensitive(e, "shape");
  const cJSON *jo = cJSON_GetObjectItemCaseSensitive(e, "data_offsets");
  if (!cJSON_IsString(jd) || !cJSON_IsArray(js) || !cJSON_IsArray(jo)) {
    return llm_err_set(err, WGLLM_ERR_FORMAT,
                       "%s: tensor '%s' lacks a string dtype, a shape array or a data_offsets array", path, name);
  }
  wt_tensor t = {.name = (char *)name, .file = path, .shape = {1, 1, 1, 1}};
  if (!wt_dtype_from_safetensors(jd->valuestring, &t.dtype)) {
    return llm_err_set(err, WGLLM_ERR_UNSUPPORTED, "%s: tensor '%s' has dtype %s (supported: F32, F16, BF16, U8)", path,
                       name, jd->valuestring);
  }
  int nd = cJSON_GetArraySize(js);
  if (nd > 4) {
    return llm_err_set(err, WGLLM_ERR_UNSUPPORTED, "%s: tensor '%s' has %d dimensions (at most 4 supported)", path,
                       name, nd);
  }
  t.n_dims = nd;
  int64_t numel = 1;
  for (int i = 0; i < nd; i++) {
    uint64_t d;
    if (!json_u64(cJSON_GetArrayItem(js, i), &d)) {
      return llm_err_set(err, WGLLM_ERR_FORMAT, "%s: tensor '%s' shape[%d] is not a non-negative integer", path, name,
                         i);
    }
    if (d && (uint64_t)numel > (uint64_t)(INT64_MAX / 4) / d) {
      return llm_err_set(err, WGLLM_ERR_FORMAT, "%s: tensor '%s' shape has too many elements", path, name);
    }
    t.shape[i] = (int64_t)d;
    numel *= (int64_t)d;
  }
  uint64_t b, en, data_size = f->size - data_start;
  if (cJSON_GetArraySize(jo) != 2 || !json_u64(cJSON_GetArrayItem(jo, 0), &b) ||
      !json_u64(cJSON_GetArrayItem(jo, 1), &en) || b > en) {
    return llm_err_set(err, WGLLM_ERR_FORMAT, "%s: tensor '%s' data_offsets is not [begin, end] with 0 <= begin <= end",
                       path, name);
  }
  if (en > data_size) {
    return llm_err_set(err, WGLLM_ERR_FORMAT,
                       "%s: tensor '%s' data_offsets [%llu, %llu] run past the end of the data section "
                       "(bytes %llu..%llu of a %llu-byte file)",
                       path, name, (unsigned long long)b, (unsigned long long)en, (unsigned long long)(data_start + b),
                       (unsigned long long)(data_start + en), (unsigned long long)f->size);
  }
  t.nbytes = wt_nbytes(t.dtype, numel);
  if (en - b != t.nbytes) {
    return llm_err_set(err, WGLLM_ERR_FORMAT,
                       "%s: tensor '%s' data_offsets [%llu, %llu] hold %llu bytes but %lld %s elements need %llu", path,
                       name, (unsigned long long)b, (unsigned long long)en, (unsigned long long)(en - b),
                       (long long)numel, wt_dtype_name(t.dtype), (unsigned long long)t.nbytes);
  }
  t.file_offset = data_start + b;
  t.data = t.file_offset + t.nbytes <= f->resident ? f->data + t.file_offset : NULL; /* mapped_file.h */
  return wt_store_add(s, &t, err);
}

typedef struct st_range {
  uint64_t b, e;
  const char *name;
} st_range;

static int range_cmp(const void *x, const void *y) {
  const st_range *a = x, *b = y;
  return a->b < b->b ? -1 : a->b > b->b ? 1 : a->e < b->e ? -1 : a->e > b->e;
}

/* Two tensors whose data ranges overlap are refused by name, as the safetensors library does (its
   InvalidOffset); the entries were validated by add_entry. O(n log n). */
static wgllm_status check_overlaps(const cJSON *h, const char *path, llm_err *err) {
  size_t n = 0;
  for (const cJSON *e = h->child; e; e = e->next)
    n += strcmp(e->string, "__metadata__") != 0;
  if (n < 2) return WGLLM_OK;
  st_range *r = malloc(n * sizeof *r);
  if (!r) return llm_err_set(err, WGLLM_ERR_OUT_OF_MEMORY, "%s: out of host memory", path);
  size_t k = 0;
  for (const cJSON *e = h->child; e; e = e->next) {
    if (!strcmp(e->string, "__metadata__")) continue;
    const cJSON *jo = cJSON_GetObjectItemCaseSensitive(e, "data_offsets");
    r[k++] = (st_range){(uint64_t)cJSON_GetArrayItem(jo, 0)->valuedouble,
                        (uint64_t)cJSON_GetArrayItem(jo, 1)->valuedouble, e->string};
  }
  qsort(r, n, sizeof *r, range_cmp);
  wgllm_status st = WGLLM_OK;
  size_t last = n; /* the non-empty range reaching furthest so far */
  for (size_t i = 0; i < n && !st; i++) {
    if (r[i].e == r[i].b) continue; /* an empty tensor holds no bytes */
    if (last < n && r[i].b < r[last].e)
      st = llm_err_set(err, WGLLM_ERR_FORMAT,
                       "%s: tensors '%s' [%llu, %llu] and '%s' [%llu, %llu] have overlapping data_offsets", path,
                       r[last].name, (unsigned long long)r[last].b, (unsigned long long)r[last].e, r[i].name,
                       (unsigned long long)r[i].b, (unsigned long long)r[i].e);
    if (last == n || r[i].e > r[last].e) last = i;
  }
  free(r);
  return st;
}

/* Maps one .safetensors file into the store and adds its tensors. */
static wgllm_status load_file(wt_store *s, const char *path, llm_err *err) {
  mapped_file *f;
  wgllm_status st = mf_open(path, &f, err);
  if (st) return st;
  if ((st = wt_store_add_file(s, f, err))) return st; /* the store owns f from here */
  if (f->size < 8) {
    return llm_err_set(err, WGLLM_ERR_FORMAT, "%s: file is %llu bytes, too short for the 8-byte header length", path,
                       (unsigned long long)f->size);
  }
  uint64_t n = 0;
  for (int i = 7; i >= 0; i--)
    n = n << 8 | f->data[i];
  if (n > f->size - 8) {
    return llm_err_set(err, WGLLM_ERR_FORMAT,
                       "%s: header length %llu (at byte 0) runs past the end of the %llu-byte file", path,
                       (unsigned long long)n, (unsigned long long)f->size);
  }
  if (n > ST_MAX_HEADER) {
    return llm_err_set(err, WGLLM_ERR_FORMAT, "%s: header length %llu exceeds the %llu-byte limit", path,
                       (unsigned long long)n, ST_MAX_HEADER);
  }
  const char *text = (const char *)f->data + 8, *end = NULL;
  char why[128];
  if (json_shape_check(text, (size_t)n, ST_MAX_HEADER_VALUES, JSON_FILE_MAX_DEPTH, why, sizeof why)) {
    return llm_err_set(err, WGLLM_ERR_FORMAT, "%s: the header's %s (docs/LIMITS.md)", path, why);
  }
  cJSON *h = n ? cJSON_ParseWithLengthOpts(text, (size_t)n, &end, 0) : NULL;
  if (!h) {
    return llm_err_set(err, WGLLM_ERR_FORMAT, "%s: invalid header JSON near byte %llu", path,
                       8 + (end ? (unsigned long long)(end - text) : 0ull));
  }
  if (!cJSON_IsObject(h)) {
    llm_err_set(err, WGLLM_ERR_FORMAT, "%s: header JSON (at byte 8) is not an object", path);
    cJSON_Delete(h);
    return WGLLM_ERR_FORMAT;
  }
  for (const cJSON *e = h->child; e && !st; e = e->next)
    if (strcmp(e->string, "__metadata__") != 0) st = add_entry(s, f, e, 8 + n, err);
  if (!st) st = check_overlaps(h, path, err);
  cJSON_Delete(h);
  return st;
}

static int file_exists(const char *path) {
  struct stat sb;
  return stat(path, &sb) == 0;
}

/* Loads every shard named in the index's weight_map, then checks each listed tensor came from its shard. */
static wgllm_status load_sharded(wt_store *s, const char *dir, const char *index_path, llm_err *err) {
  cJSON *idx;
  wgllm_status st = read_json_file(index_path, &idx, err);
  if (st) return st;
  const cJSON *wm = cJSON_GetObjectItemCaseSensitive(idx, "weight_map");
  if (!cJSON_IsObject(wm) || !wm->child) {
    llm_err_set(err, WGLLM_ERR_FORMAT, "%s: no weight_map object (or it is empty)", index_path);
    cJSON_Delete(idx);
    return WGLLM_ERR_FORMAT;
  }
  char path[ST_PATH_MAX];
  const char **shards = NULL; /* [n_shards] distinct shard names already loaded (few; tensors are many) */
  size_t n_shards = 0;
  for (const cJSON *e = wm->child; e && !st; e = e->next) {
    if (!cJSON_IsString(e) || !e->valuestring[0] || e->valuestring[0] == '/' || strstr(e->valuestring, "..")) {
      st = llm_err_set(err, WGLLM_ERR_FORMAT, "%s: weight_map entry for '%s' is not a plain shard file name%s%s%s",
                       index_path, e->string, cJSON_IsString(e) ? " ('" : "", cJSON_IsString(e) ? e->valuestring : "",
                       cJSON_IsString(e) ? "')" : "");
      break;
    }
    size_t i = 0;
    while (i < n_shards && strcmp(shards[i], e->valuestring) != 0)
      i++;
    if (i < n_shards) continue;
    const char **grown = realloc(shards, (n_shards + 1) * sizeof *shards);
    if (!grown) {
      st = llm_err_set(err, WGLLM_ERR_OUT_OF_MEMORY, "%s: out of host memory", index_path);
      break;
    }
    shards = grown;
    shards[n_shards++] = e->valuestring;
    if (!(st = join_path(path, dir, e->valuestring, err))) st = load_file(s, path, err);
  }
  free(shards);
  for (const cJSON *e = wm->child; e && !st; e = e->next) {
    const wt_tensor *t = wt_find(s, e->string);
    if ((st = join_path(path, dir, e->valuestring, err))) break;
    if (!t || strcmp(t->file, path) != 0) {
      st = llm_err_set(err, WGLLM_ERR_FORMAT, "%s: weight_map lists tensor '%s' in %s, but that file does not hold it",
                       index_path, e->string, path);
    }
  }
  cJSON_Delete(idx);
  return st;
}

wgllm_status st_open_dir(const char *dir, wt_store **out, llm_err *err) {
  *out = NULL;
  wt_store *s = wt_store_create(WT_FORMAT_SAFETENSORS);
  if (!s) {
    return llm_err_set(err, WGLLM_ERR_OUT_OF_MEMORY, "%s: out of host memory", dir);
  }
  char path[ST_PATH_MAX], index_path[ST_PATH_MAX];
  cJSON *config = NULL;
  wgllm_status st = join_path(path, dir, "config.json", err);
  if (!st) st = read_json_file(path, &config, err);
  if (st) goto fail;
  wt_store_set_config(s, config);
  if ((st = join_path(index_path, dir, "model.safetensors.index.json", err))) goto fail;
  if ((st = join_path(path, dir, "model.safetensors", err))) goto fail;
  if (file_exists(index_path)) {
    st = load_sharded(s, dir, index_path, err);
  } else if (file_exists(path)) {
    st = load_file(s, path, err);
  } else {
    st = llm_err_set(err, WGLLM_ERR_IO, "%s: no model.safetensors or model.safetensors.index.json", dir);
  }
  if (st) goto fail;
  *out = s;
  return WGLLM_OK;
fail:
  wt_store_free(s);
  return st;
}
