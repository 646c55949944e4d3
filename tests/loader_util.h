/* Helpers of the loader tests (test_safetensors, test_gguf, test_convert): a temp dir with files in it, the
   error expectation every corrupt-input check uses, and independent bf16 / f16 decoders. Header-only (static
   inline), so a test includes it and tests.cmake needs nothing more. The including file defines
   _XOPEN_SOURCE 700 before any include (nftw, mkdtemp, truncate, pwrite). */
#ifndef WGLLM_TEST_LOADER_UTIL_H
#define WGLLM_TEST_LOADER_UTIL_H
#include "harness.h"
#include "wgllm.h"
#include <ftw.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static char tmp_dir[256];
static int fuzz_iters = 3000; /* WGLLM_LOADERS_FUZZ_ITERS overrides, for longer runs */
static int verbose;           /* WGLLM_TEST_VERBOSE=1 prints every expected error message */

/* Reads the environment and makes the temp dir /tmp/wgllm_<name>_XXXXXX; 0 (after perror) on failure. */
static inline int lt_begin(const char *name) {
  verbose = getenv("WGLLM_TEST_VERBOSE") != NULL;
  if (getenv("WGLLM_LOADERS_FUZZ_ITERS")) fuzz_iters = atoi(getenv("WGLLM_LOADERS_FUZZ_ITERS"));
  snprintf(tmp_dir, sizeof tmp_dir, "/tmp/wgllm_%s_XXXXXX", name);
  if (!mkdtemp(tmp_dir)) {
    perror("mkdtemp");
    return 0;
  }
  return 1;
}

static inline int lt_rm_entry(const char *p, const struct stat *sb, int flag, struct FTW *ftw) {
  (void)sb, (void)flag, (void)ftw;
  return remove(p);
}
static inline void lt_end(void) { nftw(tmp_dir, lt_rm_entry, 16, FTW_DEPTH | FTW_PHYS); }

static inline const char *tpath(const char *name) { /* path inside the temp dir; interned, so it stays valid */
  static char paths[64][512];
  static int n;
  char buf[512];
  snprintf(buf, sizeof buf, "%s/%s", tmp_dir, name);
  for (int i = 0; i < n; i++)
    if (!strcmp(paths[i], buf)) return paths[i];
  if (n == 64) return "/nonexistent/too-many-test-paths";
  snprintf(paths[n], sizeof paths[n], "%s", buf);
  return paths[n++];
}

static inline int write_file(const char *path, const void *data, size_t n) {
  FILE *f = fopen(path, "wb");
  if (!f) return 0;
  size_t w = n ? fwrite(data, 1, n, f) : 0;
  fclose(f);
  return w == n;
}

static inline void make_dir(const char *name) { mkdir(tpath(name), 0755); }

static inline int contains(const char *hay, const char *needle) { return strstr(hay, needle) != NULL; }

/* status and message (the test's `err`): the message must name every non-NULL needle */
#define EXPECT_ERR(st, want, n1, n2, n3)                                                                               \
  if (verbose) printf("  %s: %s\n", wgllm_status_name(st), err.msg);                                                   \
  CHECK((st) == (want) && contains(err.msg, n1) && (!(n2) || contains(err.msg, n2)) &&                                 \
            (!(n3) || contains(err.msg, n3)),                                                                          \
        "got %s, want %s; err = \"%s\"", wgllm_status_name(st), wgllm_status_name(want), err.msg)

/* Independent bf16 / f16 decoders: sign, exponent, mantissa through ldexp. */
static inline double bf16_ref(uint16_t b) {
  int s = b >> 15, e = (b >> 7) & 0xff, m = b & 0x7f;
  double v = e == 0 ? ldexp(m, -133) : e == 255 ? (m ? NAN : INFINITY) : ldexp(128 + m, e - 134);
  return s ? -v : v;
}
static inline double f16_ref(uint16_t h) {
  int s = h >> 15, e = (h >> 10) & 0x1f, m = h & 0x3ff;
  double v = e == 0 ? ldexp(m, -24) : e == 31 ? (m ? NAN : INFINITY) : ldexp(1024 + m, e - 25);
  return s ? -v : v;
}
static inline uint16_t ld16(const void *p) {
  const uint8_t *b = p;
  return (uint16_t)(b[0] | b[1] << 8);
}
#endif
