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
/* sqrt(sum (got - want)^2 / sum want^2) over n values */
double th_rel_l2(const float *got, const float *want, size_t n);
/* Batched decode's rows in the fast precision against each row's own step (test_generate, test_moe): NS rows of V
   logits each, together (the batch's), alone (each session's step by itself) and exact (the exact precision's on the
   same inputs). A batched row's sums run in another order than its step alone and its activations may be quantized
   by another kernel (a rounding tie then lands a step away), so it checks that each batched row is as close to its
   exact logits as the steps alone are (within twice the worst alone row's relative L2, + 1e-4) and that most rows (at
   least three quarters) are within 1e-4 of their step alone, which a wrong row, tile or expert (O(1) in the rows it
   touches) does not meet. near: [NS], each row within 1e-4 of alone (NULL: not wanted). */
typedef struct th_batched_rows {
  double worst_alone, worst, farthest; /* alone from exact, batched from exact, batched from alone: the worst rows */
  uint32_t close;                      /* rows within 1e-4 of alone */
} th_batched_rows;
th_batched_rows th_check_batched_rows(const char *what, uint32_t NS, uint32_t V, const float *together,
                                      const float *alone, const float *exact, int *near);
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
