/* Read-only mmap of a model file (see mapped_file.h). */
#define _POSIX_C_SOURCE 200809L
#include "mapped_file.h"
#include "gpu.h"
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

wgllm_status mf_open(const char *path, mapped_file **out, llm_err *err) {
  *out = NULL;
  /* O_NONBLOCK: a FIFO (or a device) given as a model file must not hang the open; it is refused below */
  int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
  if (fd < 0) {
    return llm_err_set(err, WGLLM_ERR_IO, "%s: cannot open: %s", path, strerror(errno));
  }
  struct stat st;
  if (fstat(fd, &st) != 0) {
    llm_err_set(err, WGLLM_ERR_IO, "%s: cannot stat: %s", path, strerror(errno));
    close(fd);
    return WGLLM_ERR_IO;
  }
  if (!S_ISREG(st.st_mode)) {
    llm_err_set(err, WGLLM_ERR_IO, "%s: not a regular file", path);
    close(fd);
    return WGLLM_ERR_IO;
  }
  mapped_file *f = calloc(1, sizeof *f);
  char *p = strdup(path);
  if (!f || !p) {
    free(f);
    free(p);
    close(fd);
    return llm_err_set(err, WGLLM_ERR_OUT_OF_MEMORY, "%s: out of host memory", path);
  }
  f->path = p;
  f->size = f->resident = (uint64_t)st.st_size;
  if (f->size > 0) { /* mmap refuses length 0; an empty file simply has no data */
    void *m = mmap(NULL, (size_t)f->size, PROT_READ, MAP_PRIVATE, fd, 0);
    if (m == MAP_FAILED) {
      llm_err_set(err, WGLLM_ERR_IO, "%s: cannot mmap %llu bytes: %s", path, (unsigned long long)f->size,
                  strerror(errno));
      close(fd);
      free(p);
      free(f);
      return WGLLM_ERR_IO;
    }
    f->data = m;
  }
  close(fd); /* the mapping keeps the file alive */
  *out = f;
  return WGLLM_OK;
}

void mf_close(mapped_file *f) {
  if (!f) return;
  if (f->data) munmap((void *)f->data, (size_t)f->size);
  free(f->path);
  free(f);
}

char *mf_read_text(const char *path, size_t *len) {
  /* opened without blocking and refused unless a regular file: a FIFO as config.json must not hang */
  int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
  if (fd < 0) return NULL;
  struct stat st;
  if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    close(fd);
    errno = EINVAL;
    return NULL;
  }
  FILE *f = fdopen(fd, "rb");
  if (!f) {
    close(fd);
    return NULL;
  }
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
  int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
  if (fd < 0) {
    return llm_err_set(err, WGLLM_ERR_IO, "%s: cannot open: %s", path, strerror(errno));
  }
  uint64_t done = 0;
  while (done < n) {
    ssize_t k = pread(fd, (uint8_t *)dst + done, (size_t)(n - done), (off_t)(offset + done));
    if (k <= 0) {
      llm_err_set(err, WGLLM_ERR_IO, "%s: cannot read bytes %llu..%llu: %s", path, (unsigned long long)offset,
                  (unsigned long long)(offset + n), k < 0 ? strerror(errno) : "end of file");
      close(fd);
      return WGLLM_ERR_IO;
    }
    done += (uint64_t)k;
  }
  close(fd);
  return WGLLM_OK;
}

wgllm_status mf_upload(gpu_context *gpu, gpu_buffer *b, uint64_t dst_offset, const char *path, uint64_t offset,
                       uint64_t n, llm_err *err) {
  enum { CHUNK = 16u << 20 };
  uint8_t *tmp = malloc(n < CHUNK ? (size_t)n : CHUNK);
  if (!tmp && n) {
    return llm_err_set(err, WGLLM_ERR_OUT_OF_MEMORY, "out of host memory");
  }
  wgllm_status s = WGLLM_OK;
  for (uint64_t at = 0; !s && at < n; at += CHUNK) {
    uint64_t k = n - at < CHUNK ? n - at : CHUNK;
    s = mf_read_range(path, offset + at, tmp, k, err);
    if (!s) s = gpu_write(gpu, b, dst_offset + at, tmp, k);
  }
  free(tmp);
  return s;
}

wgllm_status mf_check_size(const char *path, uint64_t cap, llm_err *err) {
  struct stat st;
  if (stat(path, &st) != 0 || (uint64_t)st.st_size <= cap) return WGLLM_OK;
  return llm_err_set(err, WGLLM_ERR_FORMAT, "%s: %llu bytes, past the cap of %llu bytes for this file (docs/LIMITS.md)",
                     path, (unsigned long long)st.st_size, (unsigned long long)cap);
}
