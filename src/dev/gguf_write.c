/* GGUF builder (see gguf_write.h). The key/values and the tensor infos are encoded as they are added, into
   two byte buffers; finishing writes the fixed header, both buffers, the padding and the data. */
#include "gguf_write.h"
#include <errno.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

typedef struct bytes {
  uint8_t *p;
  size_t n, cap;
} bytes;

typedef struct w_tensor {
  char *name;
  uint64_t nbytes, offset; /* offset in the data section */
  uint64_t info_at;        /* where its info record starts in the info buffer */
  const void *data;        /* NULL: streamed by the fill callback */
} w_tensor;

struct gguf_writer {
  uint32_t version, align;
  bytes kv, info;
  char **keys; /* every key added, for the duplicate check */
  size_t n_kv, cap_keys;
  w_tensor *t;
  size_t n_t, cap_t;
  uint64_t data_size; /* the data section so far: the next tensor's offset, before alignment */
  gguf_fill_fn fill;
  void *user;
  wgllm_status st;
  char err[512];
};

struct gguf_sink {
  FILE *f;    /* or */
  bytes *mem; /* exactly one is set */
  uint64_t n; /* bytes written since the start of the file */
  wgllm_status st;
  int errnum;
};

static wgllm_status fail(gguf_writer *w, wgllm_status st, const char *fmt, ...) {
  if (w->st) return w->st;
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(w->err, sizeof w->err, fmt, ap);
  va_end(ap);
  w->st = st;
  return st;
}

static int put(bytes *b, const void *d, size_t n) {
  if (n > b->cap - b->n) {
    size_t cap = b->cap ? b->cap : 256;
    while (cap - b->n < n) {
      if (cap > SIZE_MAX / 2) return 0;
      cap *= 2;
    }
    uint8_t *p = realloc(b->p, cap);
    if (!p) return 0;
    b->p = p;
    b->cap = cap;
  }
  if (n) memcpy(b->p + b->n, d, n);
  b->n += n;
  return 1;
}

static int put_le(bytes *b, uint64_t v, int n) {
  uint8_t c[8];
  for (int i = 0; i < n; i++)
    c[i] = (uint8_t)(v >> (8 * i));
  return put(b, c, (size_t)n);
}

static int put_str(bytes *b, const char *s, size_t n) { return put_le(b, n, 8) && put(b, s, n); }

/* bytes of a fixed-size value type, 0 for STRING, ARRAY and unknown types */
static int type_size(uint32_t t) {
  static const int sz[] = {1, 1, 2, 2, 4, 4, 4, 1, 0, 0, 8, 8, 8};
  return t < sizeof sz / sizeof sz[0] ? sz[t] : 0;
}

static uint64_t host_value(const uint8_t *p, int n) { /* a host-order integer (or float's bits) of n bytes */
  switch (n) {
  case 1:
    return p[0];
  case 2: {
    uint16_t v;
    memcpy(&v, p, 2);
    return v;
  }
  case 4: {
    uint32_t v;
    memcpy(&v, p, 4);
    return v;
  }
  default: {
    uint64_t v;
    memcpy(&v, p, 8);
    return v;
  }
  }
}

gguf_writer *gguf_writer_begin(uint32_t version, uint32_t alignment) {
  gguf_writer *w = calloc(1, sizeof *w);
  if (!w) return NULL;
  w->version = version;
  w->align = alignment;
  if (version != 2 && version != 3)
    fail(w, WGLLM_ERR_INVALID_ARG, "gguf writer: version %u (2 or 3)", version);
  else if (!alignment || (alignment & (alignment - 1)) || alignment > (1u << 30))
    fail(w, WGLLM_ERR_INVALID_ARG, "gguf writer: alignment %u is not a power of two up to 2^30", alignment);
  return w;
}

void gguf_writer_free(gguf_writer *w) {
  if (!w) return;
  for (size_t i = 0; i < w->n_kv; i++)
    free(w->keys[i]);
  for (size_t i = 0; i < w->n_t; i++)
    free(w->t[i].name);
  free(w->keys);
  free(w->t);
  free(w->kv.p);
  free(w->info.p);
  free(w);
}

wgllm_status gguf_writer_status(const gguf_writer *w) { return w->st; }
const char *gguf_writer_error(const gguf_writer *w) { return w->st ? w->err : ""; }

/* Starts a key/value: checks the key (unless raw), records it, encodes the key and the value type. */
static wgllm_status begin_kv(gguf_writer *w, const char *key, uint32_t type, int raw) {
  if (w->st) return w->st;
  if (!key) return fail(w, WGLLM_ERR_INVALID_ARG, "gguf writer: a key is NULL");
  if (!raw) {
    for (size_t i = 0; i < w->n_kv; i++)
      if (!strcmp(w->keys[i], key)) return fail(w, WGLLM_ERR_INVALID_ARG, "gguf writer: key '%s' added twice", key);
    if (!strcmp(key, "general.alignment") && type != GGUF_TYPE_UINT32)
      return fail(w, WGLLM_ERR_INVALID_ARG, "gguf writer: general.alignment must be a u32, not value type %u", type);
  }
  if (w->n_kv == w->cap_keys) {
    size_t cap = w->cap_keys ? 2 * w->cap_keys : 32;
    char **k = realloc(w->keys, cap * sizeof *k);
    if (!k) return fail(w, WGLLM_ERR_OUT_OF_MEMORY, "gguf writer: out of host memory");
    w->keys = k;
    w->cap_keys = cap;
  }
  char *copy = strdup(key);
  if (!copy || !put_str(&w->kv, key, strlen(key)) || !put_le(&w->kv, type, 4)) {
    free(copy);
    return fail(w, WGLLM_ERR_OUT_OF_MEMORY, "gguf writer: out of host memory");
  }
  w->keys[w->n_kv++] = copy;
  return WGLLM_OK;
}

static wgllm_status oom_if(gguf_writer *w, int ok) {
  return ok ? w->st : fail(w, WGLLM_ERR_OUT_OF_MEMORY, "gguf writer: out of host memory");
}

wgllm_status gguf_writer_kv(gguf_writer *w, const char *key, gguf_type type, const void *value) {
  int sz = type_size((uint32_t)type);
  if (w->st) return w->st;
  if (!sz)
    return fail(w, WGLLM_ERR_INVALID_ARG, "gguf writer: key '%s': value type %d is not a fixed-size scalar",
                key ? key : "(null)", (int)type);
  if (!value) return fail(w, WGLLM_ERR_INVALID_ARG, "gguf writer: key '%s': no value", key ? key : "(null)");
  uint64_t v = host_value(value, sz);
  if (type == GGUF_TYPE_BOOL && v > 1)
    return fail(w, WGLLM_ERR_INVALID_ARG, "gguf writer: key '%s': bool value %u (0 or 1)", key ? key : "(null)",
                (unsigned)v);
  if (key && !strcmp(key, "general.alignment") && type == GGUF_TYPE_UINT32 && v != w->align)
    return fail(w, WGLLM_ERR_INVALID_ARG, "gguf writer: general.alignment %llu disagrees with the layout's %u",
                (unsigned long long)v, w->align);
  if (begin_kv(w, key, (uint32_t)type, 0)) return w->st;
  return oom_if(w, put_le(&w->kv, v, sz));
}

wgllm_status gguf_writer_kv_u32(gguf_writer *w, const char *key, uint32_t v) {
  return gguf_writer_kv(w, key, GGUF_TYPE_UINT32, &v);
}

wgllm_status gguf_writer_kv_f32(gguf_writer *w, const char *key, float v) {
  return gguf_writer_kv(w, key, GGUF_TYPE_FLOAT32, &v);
}

wgllm_status gguf_writer_kv_str(gguf_writer *w, const char *key, const char *v) {
  if (w->st) return w->st;
  if (!v) return fail(w, WGLLM_ERR_INVALID_ARG, "gguf writer: key '%s': NULL string", key ? key : "(null)");
  if (begin_kv(w, key, GGUF_TYPE_STRING, 0)) return w->st;
  return oom_if(w, put_str(&w->kv, v, strlen(v)));
}

wgllm_status gguf_writer_kv_arr(gguf_writer *w, const char *key, gguf_type elem, uint64_t n, const void *elems) {
  int sz = type_size((uint32_t)elem);
  if (w->st) return w->st;
  if (!sz)
    return fail(w, WGLLM_ERR_INVALID_ARG,
                "gguf writer: key '%s': array element type %d is not a fixed-size scalar (strings: "
                "gguf_writer_kv_arr_str; nested arrays: gguf_writer_kv_raw)",
                key ? key : "(null)", (int)elem);
  if (n && !elems) return fail(w, WGLLM_ERR_INVALID_ARG, "gguf writer: key '%s': no elements", key ? key : "(null)");
  if (n > SIZE_MAX / 8)
    return fail(w, WGLLM_ERR_INVALID_ARG, "gguf writer: key '%s': %llu elements", key ? key : "(null)",
                (unsigned long long)n);
  const uint8_t *p = elems;
  for (uint64_t i = 0; elem == GGUF_TYPE_BOOL && i < n; i++)
    if (p[i] > 1)
      return fail(w, WGLLM_ERR_INVALID_ARG, "gguf writer: key '%s': bool element %llu is %u", key ? key : "(null)",
                  (unsigned long long)i, p[i]);
  if (begin_kv(w, key, GGUF_TYPE_ARRAY, 0)) return w->st;
  int ok = put_le(&w->kv, (uint32_t)elem, 4) && put_le(&w->kv, n, 8);
  for (uint64_t i = 0; ok && i < n; i++)
    ok = put_le(&w->kv, host_value(p + i * (size_t)sz, sz), sz);
  return oom_if(w, ok);
}

wgllm_status gguf_writer_kv_arr_str(gguf_writer *w, const char *key, uint64_t n, const char *const *strs) {
  if (w->st) return w->st;
  for (uint64_t i = 0; i < n; i++)
    if (!strs || !strs[i])
      return fail(w, WGLLM_ERR_INVALID_ARG, "gguf writer: key '%s': string %llu is NULL", key ? key : "(null)",
                  (unsigned long long)i);
  if (begin_kv(w, key, GGUF_TYPE_ARRAY, 0)) return w->st;
  int ok = put_le(&w->kv, GGUF_TYPE_STRING, 4) && put_le(&w->kv, n, 8);
  for (uint64_t i = 0; ok && i < n; i++)
    ok = put_str(&w->kv, strs[i], strlen(strs[i]));
  return oom_if(w, ok);
}

wgllm_status gguf_writer_kv_raw(gguf_writer *w, const char *key, uint32_t type, const void *value, size_t n) {
  if (w->st) return w->st;
  if (n && !value) return fail(w, WGLLM_ERR_INVALID_ARG, "gguf writer: key '%s': no value", key ? key : "(null)");
  if (begin_kv(w, key, type, 1)) return w->st;
  return oom_if(w, put(&w->kv, value, n));
}

wgllm_status gguf_writer_tensor(gguf_writer *w, const char *name, wt_dtype dtype, uint32_t n_dims, const uint64_t *ne,
                                const void *data) {
  if (w->st) return w->st;
  size_t len = name ? strlen(name) : 0;
  if (!len || len > 63)
    return fail(w, WGLLM_ERR_INVALID_ARG, "gguf writer: tensor name '%s' has %zu bytes (1..63)", name ? name : "(null)",
                len);
  const wt_dtype_traits *tr = wt_traits(dtype);
  if (!tr || tr->ggml_type < 0)
    return fail(w, WGLLM_ERR_INVALID_ARG, "gguf writer: tensor '%s': dtype %d has no GGUF type", name, (int)dtype);
  if (n_dims < 1 || n_dims > 4 || !ne)
    return fail(w, WGLLM_ERR_INVALID_ARG, "gguf writer: tensor '%s': %u dimensions (1..4)", name, n_dims);
  if (ne[0] % tr->block)
    return fail(w, WGLLM_ERR_INVALID_ARG, "gguf writer: tensor '%s': %s rows (ne[0] = %llu) must be a multiple of %u",
                name, tr->name, (unsigned long long)ne[0], tr->block);
  uint64_t n = 1;
  for (uint32_t d = 0; d < n_dims; d++) {
    if (ne[d] && n > UINT64_MAX / ne[d])
      return fail(w, WGLLM_ERR_INVALID_ARG, "gguf writer: tensor '%s': too many elements", name);
    n *= ne[d];
  }
  uint64_t nbytes = n / tr->block;
  if (nbytes > (UINT64_MAX >> 2) / tr->block_bytes ||
      nbytes * tr->block_bytes > (UINT64_MAX >> 2) - w->data_size - w->align)
    return fail(w, WGLLM_ERR_INVALID_ARG, "gguf writer: tensor '%s': too many bytes", name);
  nbytes *= tr->block_bytes;
  for (size_t i = 0; i < w->n_t; i++)
    if (!strcmp(w->t[i].name, name))
      return fail(w, WGLLM_ERR_INVALID_ARG, "gguf writer: tensor name '%s' added twice", name);
  if (w->n_t == w->cap_t) {
    size_t cap = w->cap_t ? 2 * w->cap_t : 32;
    w_tensor *t = realloc(w->t, cap * sizeof *t);
    if (!t) return fail(w, WGLLM_ERR_OUT_OF_MEMORY, "gguf writer: out of host memory");
    w->t = t;
    w->cap_t = cap;
  }
  uint64_t off = (w->data_size + w->align - 1) / w->align * w->align;
  w_tensor t = {strdup(name), nbytes, off, w->info.n, data};
  int ok = t.name && put_str(&w->info, name, len) && put_le(&w->info, n_dims, 4);
  for (uint32_t d = 0; ok && d < n_dims; d++)
    ok = put_le(&w->info, ne[d], 8);
  ok = ok && put_le(&w->info, (uint32_t)tr->ggml_type, 4) && put_le(&w->info, off, 8);
  if (!ok) {
    free(t.name);
    return fail(w, WGLLM_ERR_OUT_OF_MEMORY, "gguf writer: out of host memory");
  }
  w->t[w->n_t++] = t;
  w->data_size = off + nbytes;
  return WGLLM_OK;
}

size_t gguf_writer_tensor_count(const gguf_writer *w) { return w->n_t; }

uint64_t gguf_writer_tensor_info_pos(const gguf_writer *w, size_t i) {
  return i < w->n_t ? 24 + w->kv.n + w->t[i].info_at : 0;
}

void gguf_writer_set_fill(gguf_writer *w, gguf_fill_fn fill, void *user) {
  w->fill = fill;
  w->user = user;
}

wgllm_status gguf_sink_write(gguf_sink *s, const void *data, size_t n) {
  if (s->st) return s->st;
  if (s->mem ? !put(s->mem, data, n) : n && fwrite(data, 1, n, s->f) != n) {
    s->st = s->mem ? WGLLM_ERR_OUT_OF_MEMORY : WGLLM_ERR_IO;
    s->errnum = errno;
    return s->st;
  }
  s->n += n;
  return WGLLM_OK;
}

static wgllm_status zeros(gguf_sink *s, uint64_t n) {
  static const uint8_t z[4096];
  while (n && !s->st) {
    size_t k = n < sizeof z ? (size_t)n : sizeof z;
    gguf_sink_write(s, z, k);
    n -= k;
  }
  return s->st;
}

/* Writes the whole file to s; on failure err says what failed (without a path). */
static wgllm_status emit(gguf_writer *w, gguf_sink *s, llm_err *err) {
  if (w->st) return llm_err_set(err, w->st, "%s", w->err);
  uint8_t fixed[24];
  memcpy(fixed, "GGUF", 4);
  for (int i = 0; i < 4; i++)
    fixed[4 + i] = (uint8_t)(w->version >> (8 * i));
  for (int i = 0; i < 8; i++) {
    fixed[8 + i] = (uint8_t)((uint64_t)w->n_t >> (8 * i));
    fixed[16 + i] = (uint8_t)((uint64_t)w->n_kv >> (8 * i));
  }
  gguf_sink_write(s, fixed, sizeof fixed);
  gguf_sink_write(s, w->kv.p, w->kv.n);
  gguf_sink_write(s, w->info.p, w->info.n);
  uint64_t base = (s->n + w->align - 1) / w->align * w->align;
  zeros(s, base - s->n);
  for (size_t i = 0; i < w->n_t && !s->st; i++) {
    const w_tensor *t = &w->t[i];
    zeros(s, base + t->offset - s->n);
    if (t->data) {
      gguf_sink_write(s, t->data, (size_t)t->nbytes);
      continue;
    }
    if (!w->fill) {
      return llm_err_set(err, WGLLM_ERR_INVALID_ARG,
                         "gguf writer: tensor '%s' has no data and the writer no fill callback", t->name);
    }
    uint64_t at = s->n;
    wgllm_status st = w->fill(w->user, i, s);
    if (s->st) break;
    if (st) {
      if (st == WGLLM_ERR_OUT_OF_MEMORY)
        return llm_err_set(err, st, "gguf writer: out of host memory filling tensor '%s'", t->name);
      else
        return llm_err_set(err, st, "gguf writer: filling tensor '%s' failed (status %d)", t->name, (int)st);
    }
    if (s->n - at != t->nbytes) {
      return llm_err_set(err, WGLLM_ERR_INVALID_ARG,
                         "gguf writer: the fill wrote %llu bytes of tensor '%s', which has %llu",
                         (unsigned long long)(s->n - at), t->name, (unsigned long long)t->nbytes);
    }
  }
  if (s->st == WGLLM_ERR_OUT_OF_MEMORY)
    llm_err_set(err, s->st, "gguf writer: out of host memory");
  else if (s->st)
    llm_err_set(err, s->st, "write failed: %s", strerror(s->errnum));
  return s->st;
}

wgllm_status gguf_writer_finish_mem(gguf_writer *w, uint8_t **out, size_t *len, llm_err *err) {
  bytes b = {0};
  gguf_sink s = {.mem = &b};
  *out = NULL;
  *len = 0;
  wgllm_status st = emit(w, &s, err);
  if (st) {
    free(b.p);
    return st;
  }
  *out = b.p ? b.p : malloc(1);
  *len = b.n;
  if (!*out) {
    return llm_err_set(err, WGLLM_ERR_OUT_OF_MEMORY, "gguf writer: out of host memory");
  }
  return WGLLM_OK;
}

wgllm_status gguf_writer_finish_file(gguf_writer *w, FILE *f, llm_err *err) {
  gguf_sink s = {.f = f};
  wgllm_status st = emit(w, &s, err);
  if (!st && fflush(f)) {
    st = llm_err_set(err, WGLLM_ERR_IO, "write failed: %s", strerror(errno));
  }
  return st;
}

/* written to PATH.tmp.PID beside it and renamed onto it once whole: a failed write leaves PATH as it was */
wgllm_status gguf_writer_finish_path(gguf_writer *w, const char *path, llm_err *err) {
  if (w->st) return llm_err_set(err, w->st, "%s: %s", path, w->err);
  char tmp[4200];
  if ((size_t)snprintf(tmp, sizeof tmp, "%s.tmp.%ld", path, (long)getpid()) >= sizeof tmp)
    return llm_err_set(err, WGLLM_ERR_IO, "%s: the path is too long", path);
  FILE *f = fopen(tmp, "wb");
  if (!f) {
    return llm_err_set(err, WGLLM_ERR_IO, "%s: cannot create: %s", tmp, strerror(errno));
  }
  wgllm_status st = gguf_writer_finish_file(w, f, err);
  if (!st && fsync(fileno(f))) st = llm_err_set(err, WGLLM_ERR_IO, "write failed: %s", strerror(errno));
  if (fclose(f) && !st) st = llm_err_set(err, WGLLM_ERR_IO, "write failed: %s", strerror(errno));
  if (!st && rename(tmp, path)) st = llm_err_set(err, WGLLM_ERR_IO, "renaming %s onto it: %s", tmp, strerror(errno));
  if (st) {
    remove(tmp);
    llm_err_prefix(err, "%s", path);
  }
  return st;
}
