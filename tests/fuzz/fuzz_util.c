/* Shared helpers of the fuzz harnesses (see fuzz_util.h): memfd/tmp files for the path-based loaders, the
   fatal check, and the tokenizer properties (encode refuses only invalid UTF-8, ids decode, the streaming
   decoder equals the whole decode, lossless tokenizers round-trip). */
#define _GNU_SOURCE
#include "fuzz_util.h"
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#ifndef WGLLM_SOURCE_DIR
#define WGLLM_SOURCE_DIR "."
#endif

void fuzz_fail(const char *file, int line, const char *cond, const char *fmt, ...) {
  fprintf(stderr, "\nFUZZ CHECK FAILED at %s:%d: %s\n  ", file, line, cond);
  va_list ap;
  va_start(ap, fmt);
  vfprintf(stderr, fmt, ap);
  va_end(ap);
  fprintf(stderr, "\n");
  abort();
}

void fuzz_note(const char *fmt, ...) {
  static int verbose = -1;
  if (verbose < 0) verbose = getenv("FUZZ_VERBOSE") != NULL;
  if (!verbose) return;
  va_list ap;
  va_start(ap, fmt);
  vfprintf(stderr, fmt, ap);
  va_end(ap);
  fputc('\n', stderr);
}

/* ---- files ---- */

static int memfd = -1;
static char memfd_name[64];

const char *fuzz_memfd_path(const uint8_t *data, size_t size) {
  if (memfd < 0) {
    memfd = memfd_create("wgllm-fuzz", MFD_CLOEXEC);
    if (memfd < 0) { /* no memfd: an unlinked file under /tmp, reached through the same /proc path */
      char tmpl[] = "/tmp/wgllm-fuzz-XXXXXX";
      memfd = mkstemp(tmpl);
      FUZZ_CHECK(memfd >= 0, "mkstemp: %s", strerror(errno));
      unlink(tmpl);
    }
    snprintf(memfd_name, sizeof memfd_name, "/proc/self/fd/%d", memfd);
  }
  FUZZ_CHECK(ftruncate(memfd, 0) == 0, "ftruncate: %s", strerror(errno));
  size_t done = 0;
  while (done < size) {
    ssize_t w = pwrite(memfd, data + done, size - done, (off_t)done);
    FUZZ_CHECK(w > 0, "pwrite: %s", strerror(errno));
    done += (size_t)w;
  }
  return memfd_name;
}

static char tmpdir[64];

static void tmpdir_remove(void) {
  DIR *d = opendir(tmpdir);
  if (!d) return;
  struct dirent *e;
  char p[512];
  while ((e = readdir(d)))
    if (strcmp(e->d_name, ".") && strcmp(e->d_name, "..")) {
      snprintf(p, sizeof p, "%s/%s", tmpdir, e->d_name);
      unlink(p);
    }
  closedir(d);
  rmdir(tmpdir);
}

const char *fuzz_tmpdir(void) {
  if (!tmpdir[0]) {
    snprintf(tmpdir, sizeof tmpdir, "/tmp/wgllm-fuzz-XXXXXX");
    FUZZ_CHECK(mkdtemp(tmpdir) != NULL, "mkdtemp: %s", strerror(errno));
    atexit(tmpdir_remove);
  }
  return tmpdir;
}

const char *fuzz_write_file(const char *dir, const char *name, const void *data, size_t size) {
  static char path[512];
  snprintf(path, sizeof path, "%s/%s", dir, name);
  FILE *f = fopen(path, "wb");
  FUZZ_CHECK(f != NULL, "%s: %s", path, strerror(errno));
  FUZZ_CHECK(fwrite(data, 1, size, f) == size && fclose(f) == 0, "%s: write failed", path);
  return path;
}

const char *fuzz_source_dir(void) {
  const char *e = getenv("WGLLM_SOURCE_DIR");
  return e && *e ? e : WGLLM_SOURCE_DIR;
}

/* ---- tokenizer properties ---- */

/* Strict UTF-8 (no overlong forms, surrogates or code points past U+10FFFF), written apart from the tokenizer's
   own validator so the harness checks it. Sets *bad to the first offending byte. */
int fuzz_utf8_valid(const char *text, size_t n, size_t *bad) {
  const uint8_t *s = (const uint8_t *)text;
  for (size_t i = 0; i < n;) {
    uint8_t c = s[i];
    size_t k = c < 0x80 ? 1 : (c & 0xE0) == 0xC0 ? 2 : (c & 0xF0) == 0xE0 ? 3 : (c & 0xF8) == 0xF0 ? 4 : 0;
    uint32_t cp = k == 1 ? c : k == 2 ? c & 0x1Fu : k == 3 ? c & 0x0Fu : c & 0x07u;
    int ok = k > 0 && i + k <= n;
    for (size_t j = 1; ok && j < k; j++) {
      ok = (s[i + j] & 0xC0) == 0x80;
      cp = cp << 6 | (s[i + j] & 0x3Fu);
    }
    static const uint32_t min_cp[5] = {0, 0, 0x80, 0x800, 0x10000};
    if (!ok || cp < min_cp[k] || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) {
      *bad = i;
      return 0;
    }
    i += k;
  }
  return 1;
}

static int has_replacement_char(const char *s, size_t n) { return memmem(s, n, "\xef\xbf\xbd", 3) != NULL; }

/* up to 24 bytes as hex, for messages (a static buffer each of two calls in turn) */
static const char *hex(const char *p, size_t n) {
  static char buf[2][80];
  static int which;
  char *o = buf[which ^= 1];
  size_t k = 0;
  for (size_t i = 0; i < n && i < 24; i++)
    k += (size_t)snprintf(o + k, 80 - k, "%02x", (uint8_t)p[i]);
  snprintf(o + k, 80 - k, "%s", n > 24 ? ".." : n == 0 ? "(end)" : "");
  return o;
}

/* The streaming decoder over ids, with a cap-byte output buffer (drained until empty after every push). */
static char *stream_decode(const tokenizer *t, const int32_t *ids, size_t n, int skip_special, size_t cap,
                           size_t *out_len) {
  tok_stream *s = tok_stream_create(t);
  FUZZ_CHECK(s != NULL, "tok_stream_create failed");
  tok_stream_skip_special(s, skip_special);
  size_t len = 0, room = 256;
  char *acc = malloc(room), buf[512];
  FUZZ_CHECK(acc != NULL && cap <= sizeof buf, "out of memory");
  for (size_t i = 0; i <= n; i++) {
    int32_t id = i < n ? ids[i] : -1;
    size_t r = i < n ? tok_stream_push(s, id, buf, cap) : tok_stream_flush(s, buf, cap);
    for (int rounds = 0; r; rounds++) {
      FUZZ_CHECK(r <= cap, "the stream wrote %zu bytes into a %zu-byte buffer", r, cap);
      FUZZ_CHECK(rounds < 1 << 20, "the stream never drains");
      if (len + r > room) {
        room = 2 * (len + r);
        acc = realloc(acc, room);
        FUZZ_CHECK(acc != NULL, "out of memory");
      }
      memcpy(acc + len, buf, r);
      len += r;
      r = i < n ? tok_stream_push(s, -1, buf, cap) : tok_stream_flush(s, buf, cap);
    }
  }
  tok_stream_free(s);
  *out_len = len;
  return acc;
}

/* whole decode == stream decode (both buffer sizes), unless the whole decode replaced invalid bytes */
static void check_stream(const tokenizer *t, const int32_t *ids, size_t n, int skip_special) {
  char *whole = NULL;
  llm_err err = {0};
  size_t wl = 0;
  wgllm_status st = tok_decode(t, ids, n, skip_special, &whole, &wl, &err);
  FUZZ_CHECK(st == WGLLM_OK, "tok_decode of %zu in-vocabulary ids: status %d: %s", n, st, err.msg);
  FUZZ_CHECK(whole[wl] == 0, "tok_decode's text is not NUL-terminated");
  if (!has_replacement_char(whole, wl)) {
    size_t caps[2] = {4, 512};
    for (int k = 0; k < 2; k++) {
      size_t sl, d = 0;
      char *s = stream_decode(t, ids, n, skip_special, caps[k], &sl);
      while (d < sl && d < wl && s[d] == whole[d])
        d++;
      FUZZ_CHECK(sl == wl && d == wl,
                 "stream decode (%zu-byte buffer, skip_special %d) of %zu ids gave %zu bytes, the whole decode %zu; "
                 "they differ from byte %zu: stream %s, whole %s",
                 caps[k], skip_special, n, sl, wl, d, hex(s + d, sl - d), hex(whole + d, wl - d));
      free(s);
    }
  }
  free(whole);
}

void fuzz_check_ids(const tokenizer *t, const int32_t *ids, size_t n) {
  size_t nv = tok_vocab_size(t);
  FUZZ_CHECK(nv <= INT32_MAX, "vocabulary size %zu", nv);
  if (nv == 0) n = 0; /* an empty vocabulary (a tokenizer.json may have one): only the refusal below */
  int32_t *v = malloc((n + 1) * sizeof *v);
  FUZZ_CHECK(v != NULL, "out of memory");
  size_t m = 0; /* ids reduced into the vocabulary; holes (ids no entry has) are left out */
  for (size_t i = 0; i < n; i++) {
    int32_t id = (int32_t)((uint32_t)ids[i] % (uint32_t)nv);
    if (tok_piece(t, id, NULL)) v[m++] = id;
  }
  n = m;
  check_stream(t, v, n, 0);
  check_stream(t, v, n, 1);
  /* an id past the vocabulary: the whole decode refuses it, the stream skips it */
  v[n] = (int32_t)nv;
  char *text = NULL;
  llm_err err = {0};
  size_t len;
  FUZZ_CHECK(tok_decode(t, v, n + 1, 0, &text, &len, &err) == WGLLM_ERR_INVALID_ARG,
             "tok_decode accepted id %zu of a %zu-token vocabulary", nv, nv);
  free(text);
  free(stream_decode(t, v, n + 1, 0, 16, &len));
  free(v);
}

void fuzz_check_tokenizer(const tokenizer *t, const char *text, size_t len, int flags) {
  int parse_special = flags & 1, add_special = (flags >> 1) & 1;
  int32_t *ids = NULL;
  size_t n = 0, bad;
  llm_err err = {0};
  wgllm_status st = tok_encode(t, text, len, add_special, parse_special, &ids, &n, &err);
  int valid = fuzz_utf8_valid(text, len, &bad);
  if (!valid) {
    FUZZ_CHECK(st == WGLLM_ERR_INVALID_ARG, "invalid UTF-8 (byte %zu) encoded with status %d", bad, st);
    FUZZ_CHECK(ids == NULL && n == 0, "a refused encode returned ids");
    return;
  }
  /* a normalizer or pre-tokenizer may grow the text past the pipeline's budgets (docs/LIMITS.md: a Replace of one
     byte by a long string, say): the one refusal valid UTF-8 may get, and it names the step */
  if (st == WGLLM_ERR_INVALID_ARG &&
      (strstr(err.msg, "): the text grew past ") || strstr(err.msg, "): the pipeline grew the text past "))) {
    FUZZ_CHECK(ids == NULL && n == 0, "a refused encode returned ids");
    return;
  }
  FUZZ_CHECK(st == WGLLM_OK, "encode of %zu bytes of valid UTF-8: status %d: %s", len, st, err.msg);
  FUZZ_CHECK(ids != NULL, "encode returned no id array");
  size_t nv = tok_vocab_size(t);
  for (size_t i = 0; i < n; i++)
    FUZZ_CHECK(ids[i] >= 0 && (size_t)ids[i] < nv && tok_piece(t, ids[i], NULL) != NULL,
               "encode returned id %d (position %zu) outside the %zu-token vocabulary", ids[i], i, nv);
  check_stream(t, ids, n, 0);
  check_stream(t, ids, n, 1);
  free(ids);
}

void fuzz_exercise_tokenizer(const tokenizer *t) {
  static const char *const texts[] = {"Hello world",
                                      " leading  spaces\tand\nnewlines \n",
                                      "<s>special</s><|endoftext|><unk>",
                                      "123 4567 89.5",
                                      "caf\xc3\xa9 \xe2\x96\x81 \xf0\x9f\x98\x80 \xe4\xb8\xad\xe6\x96\x87",
                                      "\xff\xfe invalid",
                                      ""};
  for (size_t i = 0; i < sizeof texts / sizeof *texts; i++)
    fuzz_check_tokenizer(t, texts[i], strlen(texts[i]), (int)(i & 3));
  /* the first 512 ids in runs of 64: each run decodes, and the whole and streaming decoders agree on it */
  size_t nv = tok_vocab_size(t), lim = nv < 512 ? nv : 512;
  int32_t ids[512];
  for (size_t i = 0; i < lim; i++)
    ids[i] = (int32_t)i;
  for (size_t i = 0; i < lim; i += 64)
    fuzz_check_ids(t, ids + i, lim - i < 64 ? lim - i : 64);
}
