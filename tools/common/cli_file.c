/* File and text helpers of the command-line programs: a whole file (or standard input) into memory, where a string
   stops being valid UTF-8, and files written whole or not at all (a temporary name, then rename). */
#include "cli_file.h"
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

long cli_utf8_invalid_at(const char *s) {
  const unsigned char *p = (const unsigned char *)s;
  for (long i = 0; p[i];) {
    unsigned c = p[i], n = c < 0x80 ? 0 : (c & 0xE0) == 0xC0 ? 1 : (c & 0xF0) == 0xE0 ? 2 : (c & 0xF8) == 0xF0 ? 3 : 9;
    if (n == 9) return i;
    uint32_t cp = n == 0 ? c : n == 1 ? c & 0x1F : n == 2 ? c & 0x0F : c & 0x07;
    for (unsigned k = 1; k <= n; k++) {
      if ((p[i + k] & 0xC0) != 0x80) return i; /* also the terminating NUL: cut short */
      cp = cp << 6 | (p[i + k] & 0x3F);
    }
    static const uint32_t min[] = {0, 0x80, 0x800, 0x10000};
    if (cp < min[n] || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) return i;
    i += (long)n + 1;
  }
  return -1;
}

char *cli_read_file(const char *path, size_t *len) {
  FILE *f = strcmp(path, "-") ? fopen(path, "rb") : stdin;
  if (!f) return NULL;
  size_t cap = 4096, n = 0;
  char *buf = malloc(cap);
  while (buf) {
    if (n + 1 >= cap) {
      char *g = cap <= SIZE_MAX / 2 ? realloc(buf, cap * 2) : NULL; /* (1 << 40 overflowed wasm32) */
      if (!g) {
        free(buf);
        buf = NULL;
        errno = ENOMEM;
        break;
      }
      buf = g;
      cap *= 2;
    }
    size_t got = fread(buf + n, 1, cap - 1 - n, f);
    n += got;
    if (got == 0) {
      if (ferror(f)) {
        int e = errno ? errno : EIO;
        free(buf);
        buf = NULL;
        errno = e;
      }
      break;
    }
  }
  if (f != stdin) fclose(f);
  if (!buf) return NULL;
  buf[n] = 0;
  if (len) *len = n;
  return buf;
}

void *cli_out_open(cli_out *o, const char *path) {
  o->path = path;
  o->f = NULL;
  if ((size_t)snprintf(o->tmp, sizeof o->tmp, "%s.tmp.%ld", path, (long)getpid()) >= sizeof o->tmp) {
    errno = ENAMETOOLONG;
    return NULL;
  }
  o->f = fopen(o->tmp, "wb");
  return o->f;
}

int cli_out_close(cli_out *o, int failed) {
  if (!o->f) return -1;
  int e = failed ? (errno ? errno : EIO) : 0;
  if (!e && (ferror(o->f) || fflush(o->f) || fsync(fileno(o->f)))) e = errno ? errno : EIO;
  if (fclose(o->f) && !e) e = errno ? errno : EIO;
  o->f = NULL;
  if (!e && rename(o->tmp, o->path)) e = errno;
  if (e) {
    remove(o->tmp);
    errno = e;
    return -1;
  }
  return 0;
}
