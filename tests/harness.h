/* Minimal test harness: CHECK macros that count failures, seeded random data, and helpers shared by tests. */
#ifndef WGLLM_TEST_HARNESS_H
#define WGLLM_TEST_HARNESS_H
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

extern int th_failures, th_checks;
#define CHECK(cond, ...)                                                                                               \
  do {                                                                                                                 \
    th_checks++;                                                                                                       \
    if (!(cond)) {                                                                                                     \
      th_failures++;                                                                                                   \
      fprintf(stderr, "FAIL %s:%d: %s: ", __FILE__, __LINE__, #cond);                                                  \
      fprintf(stderr, __VA_ARGS__);                                                                                    \
      fprintf(stderr, "\n");                                                                                           \
    }                                                                                                                  \
  } while (0)
/* prints the summary and returns the exit code */
int th_finish(const char *name);

typedef struct th_rng {
  uint64_t s;
} th_rng;
uint32_t th_u32(th_rng *r);
float th_uniform(th_rng *r, float lo, float hi); /* never all zeros: a continuous draw */
void th_fill(th_rng *r, float *x, size_t n, float lo, float hi);
/* reads a whole file; returns NULL on failure */
void *th_read_file(const char *path, size_t *len);
#endif

/* ---- GPU helpers (tests that touch the GPU) ---- */
#include "gpu.h"
/* creates the shared test context (once) or fails the test with the reason; honours WGLLM_TEST_NO_F16 and
   WGLLM_TEST_NO_SUBGROUPS (a device without shader-f16 / subgroups) */
gpu_context *th_gpu(void);
void th_gpu_done(void);
/* buffer holding n floats (or just bytes), uploaded */
gpu_buffer *th_upload(const void *data, size_t bytes);
/* buffer of `bytes` filled with the NaN poison pattern 0x7fc00000 */
gpu_buffer *th_poisoned(size_t bytes);
void th_download(gpu_buffer *b, void *dst, size_t bytes);
/* runs a one-shot recording built by the caller; returns 0 on success, printing the recorder error */
int th_run(gpu_recorder *rec);
/* |got - want| <= atol + rtol * |want| for each i, and got finite; prints the first few bad indices.
   Returns number of bad elements. */
size_t th_compare(const char *what, const float *got, const float *want, size_t n, double atol, double rtol);
