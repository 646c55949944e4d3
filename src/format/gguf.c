/* GGUF loader (see gguf.h). Layout, all little-endian:
     "GGUF" u32 version, u64 n_tensors, u64 n_kv,
     n_kv x { string key, u32 type, value },          string = u64 length + bytes (no NUL)
     n_tensors x { string name, u32 n_dims, u64 ne[n_dims] (innermost first), u32 ggml_type, u64 offset },
     padding to general.alignment (default 32), then the data section; offsets are relative to its start.
   The parser reads through a bounds-checked cursor: nothing is trusted before it is checked against the
   file size, and arrays are only allocated after their bytes are known to be in the file. */
#define _POSIX_C_SOURCE 200809L
#include "gguf.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define GGUF_MAX_DEPTH 8 /* nesting of arrays of arrays */
/* What reading the metadata may cost (docs/LIMITS.md). Keys: real files hold 20-60; each costs some 250 bytes of
   bookkeeping however short it is in the file (13 bytes at least), so their count is bounded, to ~16 MB in all. The
   key/value section: its keys, strings and arrays are copied (string arrays: 8 bytes of offset an element, which
   takes 8 bytes or more in the file), so it costs at most its own size; Gemma 3's vocabulary and merges, the largest
   real metadata, take ~16 MB. */
#define GGUF_MAX_KV 65536
#define GGUF_MAX_META_BYTES (128ull << 20)
#define GGUF_META_START 24 /* the key/value section's first byte: after magic, version and the two counts */

typedef struct gguf_kv {
  char *key; /* owned, NUL-terminated */
  int type;  /* gguf_type */
  union {
    uint64_t u; /* unsigned ints and bool */
    int64_t i;  /* signed ints */
    double f;   /* floats */
  } v;
  char *str;          /* STRING: owned, NUL-terminated copy */
  int elem_type;      /* ARRAY: gguf_type of the elements */
  uint64_t n;         /* ARRAY: element count */
  void *arr;          /* ARRAY of fixed-size elements: owned aligned copy [n] */
  uint64_t *str_offs; /* ARRAY of STRING: [n] file offsets of each string's u64 length prefix */
} gguf_kv;

/* A tensor of a ggml type wgllm does not read (gguf_open_any keeps these aside, out of the store). */
typedef struct gguf_unsup {
  char *name;
  uint32_t type;
  uint64_t offset, bytes; /* in the data section; bytes up to the next tensor (or the end of the file) */
} gguf_unsup;

typedef struct gguf_meta {
  uint32_t version;
  gguf_kv *kv; /* [n_kv] */
  uint64_t n_kv, cap_kv;
  const uint8_t *base; /* the mapped file (owned by the store) */
  gguf_unsup *unsup;   /* [n_unsup] */
  uint64_t n_unsup;
  uint64_t *slot; /* [n_slot] open-addressing index of kv by key (index + 1; 0 free): duplicate checks and look-ups
                     in O(1), where a scan made a 1 MB file of 70K keys take seconds */
  uint64_t n_slot;
} gguf_meta;

/* Bounds-checked little-endian reader. On failure it writes err and returns 0. */
typedef struct rd {
  const uint8_t *p;
  uint64_t size, pos;
  const char *path;
  llm_err *err;
} rd;

static int rd_need(rd *r, uint64_t n, const char *what) {
  if (n > r->size - r->pos) {
    llm_err_set(r->err, WGLLM_ERR_FORMAT, "%s: truncated or corrupt at byte %llu: %s needs %llu bytes, %llu remain",
                r->path, (unsigned long long)r->pos, what, (unsigned long long)n,
                (unsigned long long)(r->size - r->pos));
    return 0;
  }
  return 1;
}

static uint64_t ld_le(const uint8_t *p, int n) {
  uint64_t v = 0;
  for (int i = n - 1; i >= 0; i--)
    v = v << 8 | p[i];
  return v;
}

static int rd_uint(rd *r, int nbytes, uint64_t *out, const char *what) {
  if (!rd_need(r, (uint64_t)nbytes, what)) return 0;
  *out = ld_le(r->p + r->pos, nbytes);
  r->pos += (uint64_t)nbytes;
  return 1;
}

static int rd_u32(rd *r, uint32_t *out, const char *what) {
  uint64_t v;
  if (!rd_uint(r, 4, &v, what)) return 0;
  *out = (uint32_t)v;
  return 1;
}

/* A string: sets *off to its first byte and *len, and skips it. */
static int rd_str(rd *r, uint64_t *off, uint64_t *len, const char *what) {
  uint64_t at = r->pos;
  if (!rd_uint(r, 8, len, what)) return 0;
  if (*len > r->size - r->pos) {
    llm_err_set(r->err, WGLLM_ERR_FORMAT,
                "%s: truncated or corrupt at byte %llu: %s length %llu exceeds the %llu bytes left", r->path,
                (unsigned long long)at, what, (unsigned long long)*len, (unsigned long long)(r->size - r->pos));
    return 0;
  }
  *off = r->pos;
  r->pos += *len;
  return 1;
}

static char *dup_bytes(const uint8_t *p, uint64_t n) { /* n is bounded by the file size */
  char *s = malloc((size_t)n + 1);
  if (s) {
    memcpy(s, p, (size_t)n);
    s[n] = 0;
  }
  return s;
}

/* Bytes of one fixed-size value, 0 for STRING/ARRAY, -1 for an unknown type. */
static int type_size(uint32_t t) {
  switch (t) {
  case GGUF_TYPE_UINT8:
  case GGUF_TYPE_INT8:
  case GGUF_TYPE_BOOL:
    return 1;
  case GGUF_TYPE_UINT16:
  case GGUF_TYPE_INT16:
    return 2;
  case GGUF_TYPE_UINT32:
  case GGUF_TYPE_INT32:
  case GGUF_TYPE_FLOAT32:
    return 4;
  case GGUF_TYPE_UINT64:
  case GGUF_TYPE_INT64:
  case GGUF_TYPE_FLOAT64:
    return 8;
  case GGUF_TYPE_STRING:
  case GGUF_TYPE_ARRAY:
    return 0;
  default:
    return -1;
  }
}

static void meta_free(void *p) {
  gguf_meta *m = p;
  if (!m) return;
  for (uint64_t i = 0; i < m->n_unsup; i++)
    free(m->unsup[i].name);
  free(m->unsup);
  free(m->slot);
  for (uint64_t i = 0; i < m->n_kv; i++) {
    free(m->kv[i].key);
    free(m->kv[i].str);
    free(m->kv[i].arr);
    free(m->kv[i].str_offs);
  }
  free(m->kv);
  free(m);
}

typedef struct parser {
  rd r;
  wgllm_status st; /* set with the message when a step fails */
  int any_type;    /* keep tensors of types wgllm does not read aside instead of refusing the file */
} parser;

static int fail_format(parser *ps) {
  ps->st = WGLLM_ERR_FORMAT; /* message already written by rd_* */
  return 0;
}

static int fail_oom(parser *ps, const char *what) {
  ps->st = llm_err_set(ps->r.err, WGLLM_ERR_OUT_OF_MEMORY, "%s: out of host memory reading %s at byte %llu", ps->r.path,
                       what, (unsigned long long)ps->r.pos);
  return 0;
}

/* 1 when what is about to be copied, ending at byte end, stays within the key/value section's cap; else the error
   names the key (its first 64 bytes) and the byte at, where its entry (or its array) starts */
static int meta_within(parser *ps, const char *key, size_t key_len, uint64_t at, uint64_t end) {
  if (end - GGUF_META_START <= GGUF_MAX_META_BYTES) return 1;
  ps->st = llm_err_set(ps->r.err, WGLLM_ERR_FORMAT,
                       "%s: metadata key '%.*s' (at byte %llu) runs to byte %llu, past the key/value section's cap of "
                       "%llu bytes (GGUF_MAX_META_BYTES, docs/LIMITS.md)",
                       ps->r.path, (int)(key_len < 64 ? key_len : 64), key, (unsigned long long)at,
                       (unsigned long long)end, GGUF_MAX_META_BYTES);
  return 0;
}

/* Reads an array body (elem type, count, elements). kv receives it when non-NULL (top level); nested arrays
   are walked to validate and skip them. */
static int read_array(parser *ps, gguf_kv *kv, const char *key, int depth) {
  rd *r = &ps->r;
  uint64_t at = r->pos, n;
  uint32_t et;
  if (!rd_u32(r, &et, "array element type") || !rd_uint(r, 8, &n, "array length")) return fail_format(ps);
  int es = type_size(et);
  if (es < 0) {
    llm_err_set(r->err, WGLLM_ERR_FORMAT, "%s: corrupt at byte %llu: key '%s' is an array of unknown type %u", r->path,
                (unsigned long long)at, key, et);
    return fail_format(ps);
  }
  /* each element takes at least min_bytes, so n is checked against what is left before any allocation */
  uint64_t min_bytes = es > 0 ? (uint64_t)es : et == GGUF_TYPE_STRING ? 8 : 12;
  if (n > (r->size - r->pos) / min_bytes) {
    llm_err_set(r->err, WGLLM_ERR_FORMAT,
                "%s: truncated or corrupt at byte %llu: key '%s' array of %llu elements cannot fit "
                "in the %llu bytes left",
                r->path, (unsigned long long)at, key, (unsigned long long)n, (unsigned long long)(r->size - r->pos));
    return fail_format(ps);
  }
  if (kv) {
    kv->elem_type = (int)et;
    kv->n = n;
  }
  if (kv && !meta_within(ps, key, strlen(key), at, r->pos + n * min_bytes)) return 0; /* before its copy */
  if (es > 0) {
    if (kv && n) {
      if (!(kv->arr = malloc((size_t)(n * (uint64_t)es)))) return fail_oom(ps, key);
      memcpy(kv->arr, r->p + r->pos, (size_t)(n * (uint64_t)es)); /* copied: in the file it may be unaligned */
    }
    r->pos += n * (uint64_t)es;
    return 1;
  }
  if (et == GGUF_TYPE_STRING) {
    if (kv && n && !(kv->str_offs = malloc((size_t)n * sizeof *kv->str_offs))) return fail_oom(ps, key);
    for (uint64_t i = 0; i < n; i++) {
      uint64_t off, len;
      if (kv) kv->str_offs[i] = r->pos;
      if (!rd_str(r, &off, &len, "array string")) return fail_format(ps);
    }
    return 1;
  }
  if (depth >= GGUF_MAX_DEPTH) {
    llm_err_set(r->err, WGLLM_ERR_FORMAT, "%s: corrupt at byte %llu: key '%s' nests arrays more than %d deep", r->path,
                (unsigned long long)at, key, GGUF_MAX_DEPTH);
    return fail_format(ps);
  }
  for (uint64_t i = 0; i < n; i++)
    if (!read_array(ps, NULL, key, depth + 1)) return 0;
  return 1;
}

static uint64_t key_hash(const char *k) { /* FNV-1a */
  uint64_t h = 1469598103934665603ull;
  for (; *k; k++)
    h = (h ^ (uint8_t)*k) * 1099511628211ull;
  return h;
}

/* the slot of key in m's index: the one holding it, or the free one where it would go */
static uint64_t *key_slot(const gguf_meta *m, const char *key) {
  uint64_t mask = m->n_slot - 1;
  for (uint64_t i = key_hash(key) & mask;; i = (i + 1) & mask)
    if (!m->slot[i] || !strcmp(m->kv[m->slot[i] - 1].key, key)) return &m->slot[i];
}

/* enters kv[n_kv - 1] into the index (kept under half full); 0 when out of memory, -1 when the key is there */
static int index_key(gguf_meta *m) {
  if (2 * m->n_kv > m->n_slot) {
    uint64_t n = m->n_slot ? 2 * m->n_slot : 64;
    uint64_t *old = m->slot, n_old = m->n_slot;
    if (!(m->slot = calloc((size_t)n, sizeof *m->slot))) {
      m->slot = old;
      return 0;
    }
    m->n_slot = n;
    for (uint64_t i = 0; i < n_old; i++)
      if (old[i]) *key_slot(m, m->kv[old[i] - 1].key) = old[i];
    free(old);
  }
  uint64_t *sl = key_slot(m, m->kv[m->n_kv - 1].key);
  if (*sl) return -1;
  *sl = m->n_kv;
  return 1;
}

static int read_kv(parser *ps, gguf_meta *m) {
  rd *r = &ps->r;
  uint64_t at = r->pos, off, len;
  if (!rd_str(r, &off, &len, "key")) return fail_format(ps);
  if (m->n_kv == m->cap_kv) { /* grown as entries really parse, so a lying n_kv cannot force a big allocation */
    uint64_t cap = m->cap_kv ? 2 * m->cap_kv : 32;
    gguf_kv *kv = realloc(m->kv, (size_t)cap * sizeof *kv);
    if (!kv) return fail_oom(ps, "metadata");
    m->kv = kv;
    m->cap_kv = cap;
  }
  gguf_kv *kv = &m->kv[m->n_kv];
  memset(kv, 0, sizeof *kv);
  if (!meta_within(ps, (const char *)r->p + off, (size_t)len, at, off + len)) return 0;
  if (!(kv->key = dup_bytes(r->p + off, len))) return fail_oom(ps, "key");
  m->n_kv++; /* counted now so meta_free releases it on any later failure */
  int ix = index_key(m);
  if (!ix) return fail_oom(ps, "metadata index");
  if (ix < 0) {
    llm_err_set(r->err, WGLLM_ERR_FORMAT, "%s: corrupt at byte %llu: duplicate key '%s'", r->path,
                (unsigned long long)at, kv->key);
    return fail_format(ps);
  }
  uint32_t t;
  if (!rd_u32(r, &t, "value type")) return fail_format(ps);
  kv->type = (int)t;
  int ts = type_size(t);
  if (ts < 0) {
    llm_err_set(r->err, WGLLM_ERR_FORMAT, "%s: corrupt at byte %llu: key '%s' has unknown value type %u", r->path,
                (unsigned long long)(r->pos - 4), kv->key, t);
    return fail_format(ps);
  }
  if (t == GGUF_TYPE_ARRAY) /* its nested arrays are walked, not copied: the section's end is checked after */
    return read_array(ps, kv, kv->key, 0) && meta_within(ps, kv->key, strlen(kv->key), at, r->pos);
  if (t == GGUF_TYPE_STRING) {
    if (!rd_str(r, &off, &len, "string value")) return fail_format(ps);
    if (!meta_within(ps, kv->key, strlen(kv->key), at, off + len)) return 0;
    if (!(kv->str = dup_bytes(r->p + off, len))) return fail_oom(ps, kv->key);
    return 1;
  }
  uint64_t raw;
  if (!rd_uint(r, ts, &raw, "value")) return fail_format(ps);
  switch (t) {
  case GGUF_TYPE_INT8:
    kv->v.i = (int8_t)raw;
    break;
  case GGUF_TYPE_INT16:
    kv->v.i = (int16_t)raw;
    break;
  case GGUF_TYPE_INT32:
    kv->v.i = (int32_t)raw;
    break;
  case GGUF_TYPE_INT64:
    kv->v.i = (int64_t)raw;
    break;
  case GGUF_TYPE_FLOAT32: {
    uint32_t b = (uint32_t)raw;
    float f;
    memcpy(&f, &b, 4);
    kv->v.f = f;
    break;
  }
  case GGUF_TYPE_FLOAT64:
    memcpy(&kv->v.f, &raw, 8);
    break;
  default:
    kv->v.u = raw;
    break; /* unsigned and bool */
  }
  return 1;
}

static const char *ggml_type_name(uint32_t t) {
  static const char *names[] = {
      "F32",     "F16",   "Q4_0",   "Q4_1",  "Q4_2 (removed)", "Q4_3 (removed)", "Q5_0", "Q5_1",    "Q8_0",
      "Q8_1",    "Q2_K",  "Q3_K",   "Q4_K",  "Q5_K",           "Q6_K",           "Q8_K", "IQ2_XXS", "IQ2_XS",
      "IQ3_XXS", "IQ1_S", "IQ4_NL", "IQ3_S", "IQ2_S",          "IQ4_XS",         "I8",   "I16",     "I32",
      "I64",     "F64",   "IQ1_M",  "BF16"};
  return t < sizeof names / sizeof names[0] ? names[t] : "unknown";
}

/* Reads one tensor info into t (name owned by the caller); data and file_offset are filled in later. */
static int read_tensor_info(parser *ps, wt_tensor *t, uint64_t *rel_offset) {
  rd *r = &ps->r;
  uint64_t at = r->pos, off, len;
  uint32_t nd, type;
  if (!rd_str(r, &off, &len, "tensor name")) return fail_format(ps);
  if (!(t->name = dup_bytes(r->p + off, len))) return fail_oom(ps, "tensor name");
  if (!rd_u32(r, &nd, "tensor n_dims")) return fail_format(ps);
  if (nd > 4) {
    llm_err_set(r->err, WGLLM_ERR_FORMAT,
                "%s: corrupt at byte %llu: tensor '%s' has %u dimensions (GGUF allows at most 4)", r->path,
                (unsigned long long)(r->pos - 4), t->name, nd);
    return fail_format(ps);
  }
  int64_t ne[4] = {1, 1, 1, 1}, numel = 1;
  for (uint32_t i = 0; i < nd; i++) {
    uint64_t v;
    if (!rd_uint(r, 8, &v, "tensor dimension")) return fail_format(ps);
    if (v > (uint64_t)INT64_MAX || (v && (uint64_t)numel > (uint64_t)(INT64_MAX / 4) / v)) {
      llm_err_set(r->err, WGLLM_ERR_FORMAT, "%s: corrupt at byte %llu: tensor '%s' dimension %u (%llu) overflows",
                  r->path, (unsigned long long)(r->pos - 8), t->name, i, (unsigned long long)v);
      return fail_format(ps);
    }
    ne[i] = (int64_t)v;
    numel *= (int64_t)v;
  }
  if (!rd_u32(r, &type, "tensor type") || !rd_uint(r, 8, rel_offset, "tensor offset")) return fail_format(ps);
  if (!wt_dtype_from_gguf(type, &t->dtype) && ps->any_type) {
    t->dtype = WT_DTYPE_COUNT; /* kept aside by parse; its type in n_dims' place until then */
    t->n_dims = (int)type;
    return 1;
  }
  if (t->dtype == WT_DTYPE_COUNT || !wt_dtype_from_gguf(type, &t->dtype)) {
    char list[256] = "";
    for (int d = 0; d < WT_DTYPE_COUNT; d++)
      if (wt_traits((wt_dtype)d)->ggml_type >= 0)
        snprintf(list + strlen(list), sizeof list - strlen(list), "%s%s", list[0] ? ", " : "",
                 wt_dtype_name((wt_dtype)d));
    llm_err_set(r->err, WGLLM_ERR_UNSUPPORTED,
                "%s: tensor '%s' (info at byte %llu) has ggml type %u (%s); supported: %s", r->path, t->name,
                (unsigned long long)at, type, ggml_type_name(type), list);
    ps->st = WGLLM_ERR_UNSUPPORTED;
    return 0;
  }
  const wt_dtype_traits *tr = wt_traits(t->dtype);
  if (ne[0] % tr->block) {
    llm_err_set(r->err, WGLLM_ERR_FORMAT,
                "%s: corrupt at byte %llu: tensor '%s' row length %lld is not a multiple of the "
                "%s block size %u",
                r->path, (unsigned long long)at, t->name, (long long)ne[0], tr->name, tr->block);
    return fail_format(ps);
  }
  t->n_dims = (int)nd;
  for (int i = 0; i < 4; i++)
    t->shape[i] = i < (int)nd ? ne[nd - 1 - i] : 1; /* outermost first */
  t->nbytes = wt_nbytes(t->dtype, numel);
  return 1;
}

static const gguf_meta *meta_of(const wt_store *s) {
  return s && wt_store_format(s) == WT_FORMAT_GGUF ? wt_store_meta(s) : NULL;
}

static const gguf_kv *find_kv(const wt_store *s, const char *key) {
  const gguf_meta *m = meta_of(s);
  if (!m || !key || !m->n_slot) return NULL;
  uint64_t i = *key_slot(m, key);
  return i ? &m->kv[i - 1] : NULL;
}

static int u64_cmp(const void *a, const void *b) {
  uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
  return (x > y) - (x < y);
}

static wgllm_status parse(parser *ps, wt_store *s, mapped_file *f, gguf_meta *m) {
  rd *r = &ps->r;
  uint32_t magic, version;
  if (!rd_u32(r, &magic, "magic")) return WGLLM_ERR_FORMAT;
  if (magic != 0x46554747u) { /* "GGUF" */
    return llm_err_set(r->err, WGLLM_ERR_FORMAT,
                       "%s: not a GGUF file: bytes 0..3 are %02x %02x %02x %02x, expected \"GGUF\"", r->path,
                       f->data[0], f->data[1], f->data[2], f->data[3]);
  }
  if (!rd_u32(r, &version, "version")) return WGLLM_ERR_FORMAT;
  if (version != 2 && version != 3) {
    uint32_t swapped = __builtin_bswap32(version);
    return llm_err_set(r->err, WGLLM_ERR_UNSUPPORTED,
                       "%s: GGUF version %u at byte 4 is not supported (only v2 and v3, little-endian)%s", r->path,
                       version, swapped == 2 || swapped == 3 ? "; this looks like a big-endian file" : "");
  }
  m->version = version;
  uint64_t n_tensors, n_kv;
  if (!rd_uint(r, 8, &n_tensors, "tensor count") || !rd_uint(r, 8, &n_kv, "key/value count")) return WGLLM_ERR_FORMAT;
  if (n_kv > (r->size - r->pos) / 13 || n_tensors > (r->size - r->pos) / 24) { /* smallest kv / tensor info */
    return llm_err_set(r->err, WGLLM_ERR_FORMAT,
                       "%s: truncated or corrupt at byte 8: %llu tensors and %llu keys cannot fit in a "
                       "%llu-byte file",
                       r->path, (unsigned long long)n_tensors, (unsigned long long)n_kv, (unsigned long long)r->size);
  }
  if (n_kv > GGUF_MAX_KV) {
    return llm_err_set(r->err, WGLLM_ERR_FORMAT,
                       "%s: %llu metadata keys (count at byte 16); at most %d are read (GGUF_MAX_KV, docs/LIMITS.md)",
                       r->path, (unsigned long long)n_kv, GGUF_MAX_KV);
  }
  for (uint64_t i = 0; i < n_kv; i++)
    if (!read_kv(ps, m)) return ps->st;

  uint64_t align = 32;
  const gguf_kv *ka = find_kv(s, "general.alignment");
  if (ka && !gguf_get_u64(s, "general.alignment", &align)) {
    return llm_err_set(r->err, WGLLM_ERR_FORMAT, "%s: general.alignment has value type %d, not an unsigned integer",
                       r->path, ka->type);
  }
  if (align == 0 || (align & (align - 1)) || align > (1u << 30)) {
    return llm_err_set(r->err, WGLLM_ERR_FORMAT, "%s: general.alignment %llu is not a power of two (up to 2^30)",
                       r->path, (unsigned long long)align);
  }

  /* Tensor infos first: the data section starts after the last of them. */
  wt_tensor *ts = NULL;              /* [n_tensors] */
  uint64_t *offs = NULL, *at = NULL; /* [n_tensors] offsets relative to the data section, info positions */
  uint64_t *sorted = NULL;           /* [n_tensors] offs sorted, built at the first unread tensor */
  uint64_t n_read = 0, cap_unsup = 0;
  if (n_tensors) {
    ts = calloc((size_t)n_tensors, sizeof *ts); /* n_tensors <= size / 24, so this is bounded by the file */
    offs = calloc((size_t)n_tensors, sizeof *offs);
    at = calloc((size_t)n_tensors, sizeof *at);
    if (!ts || !offs || !at) {
      fail_oom(ps, "tensor infos");
      goto done;
    }
  }
  for (; n_read < n_tensors; n_read++) {
    at[n_read] = r->pos;
    ts[n_read].file = f->path;
    if (!read_tensor_info(ps, &ts[n_read], &offs[n_read])) {
      n_read++; /* its name may be allocated */
      goto done;
    }
  }
  uint64_t data_start = (r->pos + align - 1) / align * align;
  for (uint64_t i = 0; i < n_tensors; i++) {
    wt_tensor *t = &ts[i];
    if (offs[i] % align) {
      llm_err_set(r->err, WGLLM_ERR_FORMAT,
                  "%s: corrupt tensor info at byte %llu: tensor '%s' offset %llu is not a multiple of "
                  "the alignment %llu",
                  r->path, (unsigned long long)at[i], t->name, (unsigned long long)offs[i], (unsigned long long)align);
      ps->st = WGLLM_ERR_FORMAT;
      goto done;
    }
    if (data_start > r->size || offs[i] > r->size - data_start || t->nbytes > r->size - data_start - offs[i]) {
      llm_err_set(r->err, WGLLM_ERR_FORMAT,
                  "%s: truncated or corrupt: tensor '%s' (info at byte %llu) needs bytes %llu..%llu "
                  "but the file has %llu",
                  r->path, t->name, (unsigned long long)at[i], (unsigned long long)(data_start + offs[i]),
                  (unsigned long long)(data_start + offs[i] + t->nbytes), (unsigned long long)r->size);
      ps->st = WGLLM_ERR_FORMAT;
      goto done;
    }
    t->file_offset = data_start + offs[i];
    t->data = t->file_offset + t->nbytes <= f->resident ? f->data + t->file_offset : NULL; /* mapped_file.h */
    if (t->dtype == WT_DTYPE_COUNT) { /* an unread type: its bytes run to the next tensor */
      /* the next offset by binary search in the sorted offsets: linear in the tensors overall (a scan of all
         offsets for each made 300,000 unread tensors take 84 s, issue 27) */
      if (!sorted) {
        sorted = malloc((size_t)n_tensors * sizeof *sorted);
        if (!sorted) {
          fail_oom(ps, "tensor infos");
          goto done;
        }
        memcpy(sorted, offs, (size_t)n_tensors * sizeof *sorted);
        qsort(sorted, (size_t)n_tensors, sizeof *sorted, u64_cmp);
      }
      uint64_t end = r->size - data_start, lo = 0, hi = n_tensors;
      while (lo < hi) { /* first sorted offset above offs[i] */
        uint64_t mid = lo + (hi - lo) / 2;
        if (sorted[mid] <= offs[i])
          lo = mid + 1;
        else
          hi = mid;
      }
      if (lo < n_tensors && sorted[lo] < end) end = sorted[lo];
      if (m->n_unsup == cap_unsup) {
        uint64_t cap = cap_unsup ? 2 * cap_unsup : 16;
        gguf_unsup *u = realloc(m->unsup, (size_t)cap * sizeof *u);
        if (!u) {
          fail_oom(ps, "tensor infos");
          goto done;
        }
        m->unsup = u;
        cap_unsup = cap;
      }
      gguf_unsup *u = m->unsup;
      u[m->n_unsup++] = (gguf_unsup){t->name, (uint32_t)t->n_dims, offs[i], end - offs[i]};
      t->name = NULL; /* owned by the list now */
      continue;
    }
    if ((ps->st = wt_store_add(s, t, r->err))) {
      llm_err_set(r->err, ps->st, "%s; tensor info at byte %llu", llm_err_msg(r->err), (unsigned long long)at[i]);
      goto done;
    }
  }
done:
  for (uint64_t i = 0; i < n_read; i++)
    free(ts[i].name);
  free(ts);
  free(offs);
  free(sorted);
  free(at);
  return ps->st;
}

static wgllm_status open_gguf(const char *path, int any_type, wt_store **out, llm_err *err) {
  *out = NULL;
  mapped_file *f;
  wgllm_status st = mf_open(path, &f, err);
  if (st) return st;
  wt_store *s = wt_store_create(WT_FORMAT_GGUF);
  gguf_meta *m = calloc(1, sizeof *m);
  if (!s || !m) {
    free(m);
    wt_store_free(s);
    mf_close(f);
    return llm_err_set(err, WGLLM_ERR_OUT_OF_MEMORY, "%s: out of host memory", path);
  }
  m->base = f->data;
  wt_store_set_meta(s, m, meta_free);
  if ((st = wt_store_add_file(s, f, err))) goto fail;
  parser ps = {.r = {.p = f->data, .size = f->size, .path = f->path, .err = err}, .any_type = any_type};
  if ((st = parse(&ps, s, f, m))) goto fail;
  *out = s;
  return WGLLM_OK;
fail:
  wt_store_free(s);
  return st;
}

wgllm_status gguf_open(const char *path, wt_store **out, llm_err *err) { return open_gguf(path, 0, out, err); }
wgllm_status gguf_open_any(const char *path, wt_store **out, llm_err *err) { return open_gguf(path, 1, out, err); }

uint64_t gguf_unsupported_count(const wt_store *s) {
  const gguf_meta *m = meta_of(s);
  return m ? m->n_unsup : 0;
}
const char *gguf_unsupported(const wt_store *s, uint64_t i, uint32_t *ggml_type, const char **type_name,
                             uint64_t *bytes) {
  const gguf_meta *m = meta_of(s);
  if (!m || i >= m->n_unsup) return NULL;
  *ggml_type = m->unsup[i].type;
  *type_name = ggml_type_name(m->unsup[i].type);
  *bytes = m->unsup[i].bytes;
  return m->unsup[i].name;
}

int gguf_key_type(const wt_store *s, const char *key) {
  const gguf_kv *kv = find_kv(s, key);
  return kv ? kv->type : -1;
}

int gguf_get_u64(const wt_store *s, const char *key, uint64_t *out) {
  const gguf_kv *kv = find_kv(s, key);
  if (!kv) return 0;
  switch (kv->type) {
  case GGUF_TYPE_BOOL: /* llama.cpp writes flags such as tokenizer.ggml.add_bos_token as bool */
  case GGUF_TYPE_UINT8:
  case GGUF_TYPE_UINT16:
  case GGUF_TYPE_UINT32:
  case GGUF_TYPE_UINT64:
    *out = kv->v.u;
    return 1;
  case GGUF_TYPE_INT8:
  case GGUF_TYPE_INT16:
  case GGUF_TYPE_INT32:
  case GGUF_TYPE_INT64:
    if (kv->v.i < 0) return 0;
    *out = (uint64_t)kv->v.i;
    return 1;
  default:
    return 0;
  }
}

int gguf_get_f64(const wt_store *s, const char *key, double *out) {
  const gguf_kv *kv = find_kv(s, key);
  if (!kv) return 0;
  switch (kv->type) {
  case GGUF_TYPE_FLOAT32:
  case GGUF_TYPE_FLOAT64:
    *out = kv->v.f;
    return 1;
  case GGUF_TYPE_UINT8:
  case GGUF_TYPE_UINT16:
  case GGUF_TYPE_UINT32:
  case GGUF_TYPE_UINT64:
    *out = (double)kv->v.u;
    return 1;
  case GGUF_TYPE_INT8:
  case GGUF_TYPE_INT16:
  case GGUF_TYPE_INT32:
  case GGUF_TYPE_INT64:
    *out = (double)kv->v.i;
    return 1;
  default:
    return 0;
  }
}

const char *gguf_get_str(const wt_store *s, const char *key) {
  const gguf_kv *kv = find_kv(s, key);
  return kv && kv->type == GGUF_TYPE_STRING ? kv->str : NULL;
}

int gguf_get_arr(const wt_store *s, const char *key, int *elem_type, uint64_t *n, const void **data) {
  const gguf_kv *kv = find_kv(s, key);
  if (!kv || kv->type != GGUF_TYPE_ARRAY) return 0;
  if (elem_type) *elem_type = kv->elem_type;
  if (n) *n = kv->n;
  if (data) *data = kv->arr;
  return 1;
}

const char *gguf_arr_str(const wt_store *s, const char *key, uint64_t i, size_t *len) {
  const gguf_kv *kv = find_kv(s, key);
  if (!kv || kv->type != GGUF_TYPE_ARRAY || kv->elem_type != GGUF_TYPE_STRING || i >= kv->n) return NULL;
  const uint8_t *p = meta_of(s)->base + kv->str_offs[i]; /* length prefix, checked at load */
  if (len) *len = (size_t)ld_le(p, 8);
  return (const char *)p + 8;
}

uint32_t gguf_version(const wt_store *s) {
  const gguf_meta *m = meta_of(s);
  return m ? m->version : 0;
}

uint64_t gguf_kv_count(const wt_store *s) {
  const gguf_meta *m = meta_of(s);
  return m ? m->n_kv : 0;
}

const char *gguf_kv_key(const wt_store *s, uint64_t i) {
  const gguf_meta *m = meta_of(s);
  return m && i < m->n_kv ? m->kv[i].key : NULL;
}

int gguf_kv_type(const wt_store *s, uint64_t i) {
  const gguf_meta *m = meta_of(s);
  return m && i < m->n_kv ? m->kv[i].type : -1;
}
