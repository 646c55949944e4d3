/* The file-access seam of the browser build (replaces src/format/mapped_file.c, which maps files with mmap): the
   same interface over WASI reads, which web/wasi.js serves from File objects, URLs or ArrayBuffers. Only a model
   file's header is read into wasm memory (a GGUF file's key/values and tensor infos, a safetensors file's JSON
   header; other files whole): the tensors past it have no data pointer, and the loader either streams their bytes
   from the file into their GPU buffers (mf_upload: JavaScript copies them, web/wgllm.js) or, for the few it
   converts on the CPU, reads one tensor at a time (mf_read_range). So a model larger than wasm32's 4 GB loads. */
#include "gpu.h"
#include "mapped_file.h"
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

/* JavaScript (web/wgllm.js, uploadFromFile): bytes [offset, offset + n) of the registered file at path into the
   WebGPU buffer, suspending the wasm while they are read and written; 0 on success */
__attribute__((import_module("wgllm_host"), import_name("upload"))) int
host_upload(const char *path, uint64_t offset, uint64_t n, WGPUBuffer buffer, uint64_t dst_offset);

/* ---- the header's length: a walk over GGUF's key/values and tensor infos (as src/format/gguf.c reads them),
   through a window of the file (a GGUF vocabulary is hundreds of thousands of short strings: each read or skip is a
   step within the window, and only crossing its end reads the file) ---- */
typedef struct hdr_reader {
  FILE *fp;
  uint64_t pos, size; /* the reader's position in the file; the file's bytes */
  uint8_t *win;       /* [WIN] bytes of the file from win_at */
  uint64_t win_at, win_len;
  int bad;
} hdr_reader;
enum { WIN = 1 << 20 };

/* makes bytes [pos, pos + n) available in the window (n <= WIN) */
static int hr_have(hdr_reader *r, uint64_t n) {
  if (r->bad || n > r->size - r->pos) return r->bad = 1, 0;
  if (r->pos >= r->win_at && r->pos + n <= r->win_at + r->win_len) return 1;
  uint64_t len = r->size - r->pos < WIN ? r->size - r->pos : WIN;
  if (fseeko(r->fp, (off_t)r->pos, SEEK_SET) != 0 || fread(r->win, 1, (size_t)len, r->fp) != (size_t)len)
    return r->bad = 1, 0;
  r->win_at = r->pos;
  r->win_len = len;
  return 1;
}
static void hr_skip(hdr_reader *r, uint64_t n) {
  if (r->bad || n > r->size - r->pos) {
    r->bad = 1;
    return;
  }
  r->pos += n;
}
static uint64_t hr_u(hdr_reader *r, int bytes) {
  if (!hr_have(r, (uint64_t)bytes)) return 0;
  const uint8_t *b = r->win + (r->pos - r->win_at);
  uint64_t v = 0;
  for (int i = bytes - 1; i >= 0; i--)
    v = v << 8 | b[i];
  r->pos += (uint64_t)bytes;
  return v;
}
static void hr_string(hdr_reader *r) { hr_skip(r, hr_u(r, 8)); }
/* bytes of a GGUF scalar type; 0 for string (8), array (9) and unknown types */
static int gguf_scalar_bytes(uint32_t t) {
  static const int sz[13] = {1, 1, 2, 2, 4, 4, 4, 1, 0, 0, 8, 8, 8};
  return t < 13 ? sz[t] : -1;
}
static void hr_value(hdr_reader *r, uint32_t type, int depth) {
  int b = gguf_scalar_bytes(type);
  if (b > 0)
    hr_skip(r, (uint64_t)b);
  else if (type == 8)
    hr_string(r);
  else if (type == 9 && depth < 4) {
    uint32_t et = (uint32_t)hr_u(r, 4);
    uint64_t n = hr_u(r, 8);
    int eb = gguf_scalar_bytes(et);
    if (eb > 0) {
      if (n > (r->size - r->pos) / (uint64_t)eb) r->bad = 1;
      hr_skip(r, n * (uint64_t)eb);
    } else
      for (uint64_t i = 0; i < n && !r->bad; i++)
        hr_value(r, et, depth + 1);
  } else
    r->bad = 1;
}

/* bytes of the file's header, which the format readers parse in memory: 0 when it is neither GGUF nor safetensors
   (the file is then read whole), UINT64_MAX when the header runs past the end of the file (or no memory) */
static uint64_t header_bytes(FILE *fp, uint64_t size) {
  hdr_reader r = {fp, 0, size, malloc(WIN), 0, 0, 0};
  if (!r.win) return UINT64_MAX;
  uint64_t out = 0;
  if (size >= 24 && hr_have(&r, 4) && !memcmp(r.win, "GGUF", 4)) {
    r.pos = 4;
    hr_u(&r, 4); /* version */
    uint64_t n_tensors = hr_u(&r, 8), n_kv = hr_u(&r, 8);
    for (uint64_t i = 0; i < n_kv && !r.bad; i++) {
      hr_string(&r);
      hr_value(&r, (uint32_t)hr_u(&r, 4), 0);
    }
    for (uint64_t i = 0; i < n_tensors && !r.bad; i++) {
      hr_string(&r);
      uint32_t nd = (uint32_t)hr_u(&r, 4);
      if (nd > 8) r.bad = 1;
      hr_skip(&r, 8ull * nd + 4 + 8); /* dims, type, offset */
    }
    out = r.bad ? UINT64_MAX : r.pos;
  } else if (!r.bad && size >= 10) { /* safetensors: a little-endian u64 length, then that much JSON */
    r.bad = 0;
    r.pos = 0;
    uint64_t n = hr_u(&r, 8);
    if (!r.bad && n >= 2 && n <= size - 8 && hr_have(&r, 1) && r.win[r.pos - r.win_at] == '{') out = 8 + n;
  }
  free(r.win);
  return out;
}

wgllm_status mf_open(const char *path, mapped_file **out, llm_err *err) {
  *out = NULL;
  struct stat st;
  if (stat(path, &st) != 0) {
    return llm_err_set(err, WGLLM_ERR_IO, "%s: cannot open: %s", path, strerror(errno));
  }
  if (!S_ISREG(st.st_mode)) {
    return llm_err_set(err, WGLLM_ERR_IO, "%s: not a regular file", path);
  }
  FILE *fp = fopen(path, "rb");
  if (!fp) {
    return llm_err_set(err, WGLLM_ERR_IO, "%s: cannot open: %s", path, strerror(errno));
  }
  uint64_t size = (uint64_t)st.st_size;
  uint64_t resident = header_bytes(fp, size);
  if (resident == UINT64_MAX) {
    llm_err_set(err, WGLLM_ERR_FORMAT,
                "%s: truncated or corrupt GGUF header (its key/values and tensor infos run past the end of "
                "the %llu-byte file)",
                path, (unsigned long long)size);
    fclose(fp);
    return WGLLM_ERR_FORMAT;
  }
  if (resident == 0) resident = size;
  mapped_file *f = calloc(1, sizeof *f);
  char *p = strdup(path);
  uint8_t *data = resident > 0 ? malloc((size_t)resident) : NULL;
  if (!f || !p || (resident > 0 && !data) || (uint64_t)(size_t)resident != resident) {
    free(f);
    free(p);
    free(data);
    fclose(fp);
    return llm_err_set(err, WGLLM_ERR_OUT_OF_MEMORY, "%s: out of wasm memory for its %llu-byte header", path,
                       (unsigned long long)resident);
  }
  if (resident > 0 && (fseek(fp, 0, SEEK_SET) != 0 || fread(data, 1, (size_t)resident, fp) != (size_t)resident)) {
    llm_err_set(err, WGLLM_ERR_IO, "%s: cannot read its first %llu bytes: %s", path, (unsigned long long)resident,
                strerror(errno));
    free(f);
    free(p);
    free(data);
    fclose(fp);
    return WGLLM_ERR_IO;
  }
  fclose(fp);
  f->path = p;
  f->data = data;
  f->size = size;
  f->resident = resident;
  *out = f;
  return WGLLM_OK;
}

void mf_close(mapped_file *f) {
  if (!f) return;
  free((void *)f->data);
  free(f->path);
  free(f);
}

char *mf_read_text(const char *path, size_t *len) {
  FILE *f = fopen(path, "rb");
  if (!f) return NULL;
  char *b = NULL;
  if (fseek(f, 0, SEEK_END) == 0) {
    long n = ftell(f);
    if (n >= 0 && fseek(f, 0, SEEK_SET) == 0 && (b = malloc((size_t)n + 1))) {
      if (fread(b, 1, (size_t)n, f) != (size_t)n) {
        free(b);
        b = NULL;
      } else {
        b[n] = 0;
        if (len) *len = (size_t)n;
      }
    }
  }
  fclose(f);
  return b;
}

wgllm_status mf_read_range(const char *path, uint64_t offset, void *dst, uint64_t n, llm_err *err) {
  FILE *f = fopen(path, "rb");
  if (!f) {
    return llm_err_set(err, WGLLM_ERR_IO, "%s: cannot open: %s", path, strerror(errno));
  }
  int ok = fseeko(f, (off_t)offset, SEEK_SET) == 0 && fread(dst, 1, (size_t)n, f) == (size_t)n;
  fclose(f);
  if (!ok) {
    return llm_err_set(err, WGLLM_ERR_IO, "%s: cannot read bytes %llu..%llu", path, (unsigned long long)offset,
                       (unsigned long long)(offset + n));
  }
  return WGLLM_OK;
}

wgllm_status mf_upload(gpu_context *gpu, gpu_buffer *b, uint64_t dst_offset, const char *path, uint64_t offset,
                       uint64_t n, llm_err *err) {
  (void)gpu;
  if (host_upload(path, offset, n, b->handle, dst_offset) != 0) {
    return llm_err_set(err, WGLLM_ERR_IO, "%s: streaming bytes %llu..%llu into buffer \"%s\" failed", path,
                       (unsigned long long)offset, (unsigned long long)(offset + n), b->label);
  }
  return WGLLM_OK;
}

wgllm_status mf_check_size(const char *path, uint64_t cap, llm_err *err) {
  struct stat st;
  if (stat(path, &st) != 0 || (uint64_t)st.st_size <= cap) return WGLLM_OK;
  return llm_err_set(err, WGLLM_ERR_FORMAT, "%s: %llu bytes, past the cap of %llu bytes for this file (docs/LIMITS.md)",
                     path, (unsigned long long)st.st_size, (unsigned long long)cap);
}
