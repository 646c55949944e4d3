/* The file-access seam of the browser build (replaces src/format/mapped_file.c, which maps files with mmap): the
   same mapped_file interface over WASI reads, which web/wasi.js serves from File objects, URLs or ArrayBuffers.
   A model file is read whole into wasm memory here; weights on the GPU path (web/wgllm_web.c) are instead copied
   by JavaScript straight from the file into their buffers. */
#include "mapped_file.h"
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

wgllm_status mf_open(const char *path, mapped_file **out, char *err, size_t errlen) {
  *out = NULL;
  struct stat st;
  if (stat(path, &st) != 0) {
    snprintf(err, errlen, "%s: cannot open: %s", path, strerror(errno));
    return WGLLM_ERR_IO;
  }
  if (!S_ISREG(st.st_mode)) {
    snprintf(err, errlen, "%s: not a regular file", path);
    return WGLLM_ERR_IO;
  }
  FILE *fp = fopen(path, "rb");
  if (!fp) {
    snprintf(err, errlen, "%s: cannot open: %s", path, strerror(errno));
    return WGLLM_ERR_IO;
  }
  mapped_file *f = calloc(1, sizeof *f);
  char *p = strdup(path);
  uint8_t *data = st.st_size > 0 ? malloc((size_t)st.st_size) : NULL;
  if (!f || !p || (st.st_size > 0 && !data)) {
    free(f);
    free(p);
    free(data);
    fclose(fp);
    snprintf(err, errlen, "%s: out of wasm memory for %llu bytes", path, (unsigned long long)st.st_size);
    return WGLLM_ERR_OUT_OF_MEMORY;
  }
  if (st.st_size > 0 && fread(data, 1, (size_t)st.st_size, fp) != (size_t)st.st_size) {
    snprintf(err, errlen, "%s: cannot read %llu bytes: %s", path, (unsigned long long)st.st_size, strerror(errno));
    free(f);
    free(p);
    free(data);
    fclose(fp);
    return WGLLM_ERR_IO;
  }
  fclose(fp);
  f->path = p;
  f->data = data;
  f->size = (uint64_t)st.st_size;
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
