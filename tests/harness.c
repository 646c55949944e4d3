/* Test harness implementation (see harness.h). */
#include "harness.h"
#include <stdlib.h>

int th_failures, th_checks;

int th_finish(const char *name) {
  printf("%s: %d checks, %d failed\n", name, th_checks, th_failures);
  return th_failures ? 1 : 0;
}

uint32_t th_u32(th_rng *r) { /* splitmix64 */
  uint64_t z = (r->s += 0x9E3779B97F4A7C15ull);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return (uint32_t)((z ^ (z >> 31)) >> 32);
}

float th_uniform(th_rng *r, float lo, float hi) {
  return lo + (hi - lo) * (float)((th_u32(r) >> 8) * (1.0 / 16777216.0));
}

void th_fill(th_rng *r, float *x, size_t n, float lo, float hi) {
  for (size_t i = 0; i < n; i++)
    x[i] = th_uniform(r, lo, hi);
}

void *th_read_file(const char *path, size_t *len) {
  FILE *f = fopen(path, "rb");
  if (!f) return NULL;
  fseek(f, 0, SEEK_END);
  long n = ftell(f);
  fseek(f, 0, SEEK_SET);
  char *b = malloc((size_t)n + 1);
  if (b && fread(b, 1, (size_t)n, f) != (size_t)n) {
    free(b);
    b = NULL;
  }
  if (b) b[n] = 0;
  fclose(f);
  if (len) *len = (size_t)n;
  return b;
}

/* ---- GPU helpers ---- */
#include <math.h>
#include <string.h>
static gpu_context *g_ctx;

gpu_context *th_gpu(void) {
  if (g_ctx) return g_ctx;
  llm_err err = {0};
  gpu_options o = {0};
  o.disable_f16 = getenv("WGLLM_TEST_NO_F16") != NULL;
  o.disable_subgroups = getenv("WGLLM_TEST_NO_SUBGROUPS") != NULL;
  /* extra Dawn toggles, e.g. disable_robustness (forced whatever the default: the engine's own default is without
     robustness, WGLLM_DAWN_ROBUSTNESS=1 keeps it; docs/ARCHITECTURE.md, "Kernel bounds") */
  o.enable_toggles = getenv("WGLLM_TEST_DAWN_TOGGLES");
  wgllm_status s = gpu_create(&o, &g_ctx, &err);
  if (s) {
    fprintf(stderr, "FAIL: no GPU context: %s\n", err.msg);
    exit(1);
  }
  printf("adapter: %s (%s, %s)\n", g_ctx->adapter_name, g_ctx->backend, g_ctx->adapter_type);
  return g_ctx;
}

void th_gpu_done(void) {
  gpu_destroy(g_ctx);
  g_ctx = NULL;
}

gpu_buffer *th_upload(const void *data, size_t bytes) {
  gpu_buffer *b;
  llm_err err = {0};
  size_t padded = (bytes + 3) & ~(size_t)3;
  if (gpu_buffer_create(th_gpu(), padded ? padded : 4, "test", &b, &err)) {
    fprintf(stderr, "FAIL: buffer: %s\n", err.msg);
    exit(1);
  }
  if (bytes) {
    void *tmp = calloc(1, padded);
    memcpy(tmp, data, bytes);
    gpu_write(th_gpu(), b, 0, tmp, padded);
    free(tmp);
  }
  return b;
}

gpu_buffer *th_poisoned(size_t bytes) {
  size_t n = (bytes + 3) / 4;
  uint32_t *p = malloc(n * 4 + 4);
  for (size_t i = 0; i < n; i++)
    p[i] = 0x7fc00000u;
  gpu_buffer *b = th_upload(p, n * 4);
  free(p);
  return b;
}

void th_download(gpu_buffer *b, void *dst, size_t bytes) {
  llm_err err = {0};
  if (gpu_read(th_gpu(), b, 0, dst, bytes, &err)) {
    fprintf(stderr, "FAIL: readback: %s\n", err.msg);
    exit(1);
  }
}

int th_run(gpu_recorder *rec) {
  wgllm_status s = gpu_recorder_run(rec);
  if (s) {
    fprintf(stderr, "FAIL: run: %s (%s)\n", gpu_recorder_error(rec), wgllm_status_name(s));
    th_failures++;
    return 1;
  }
  return 0;
}

double th_rel_l2(const float *got, const float *want, size_t n) {
  double d2 = 0, n2 = 0;
  for (size_t v = 0; v < n; v++) {
    d2 += ((double)got[v] - want[v]) * ((double)got[v] - want[v]);
    n2 += (double)want[v] * want[v];
  }
  return sqrt(d2 / (n2 > 0 ? n2 : 1));
}

th_batched_rows th_check_batched_rows(const char *what, uint32_t NS, uint32_t V, const float *together,
                                      const float *alone, const float *exact, int *near) {
  th_batched_rows r = {0};
  for (uint32_t i = 0; i < NS; i++) {
    double d = th_rel_l2(alone + (size_t)i * V, exact + (size_t)i * V, V);
    if (d > r.worst_alone) r.worst_alone = d;
  }
  for (uint32_t i = 0; i < NS; i++) {
    const float *t = together + (size_t)i * V;
    double to_exact = th_rel_l2(t, exact + (size_t)i * V, V), to_alone = th_rel_l2(t, alone + (size_t)i * V, V);
    if (to_exact > r.worst) r.worst = to_exact;
    if (to_alone > r.farthest) r.farthest = to_alone;
    r.close += to_alone <= 1e-4;
    if (near) near[i] = to_alone <= 1e-4;
    CHECK(to_exact <= 2 * r.worst_alone + 1e-4,
          "%s: row %u of %u batched fast: %.3g relative L2 from its exact logits (the fast steps alone: at most %.3g)",
          what, i, NS, to_exact, r.worst_alone);
  }
  CHECK(r.close * 4 >= NS * 3, "%s: %u of %u batched fast rows within 1e-4 relative L2 of their fast step alone", what,
        r.close, NS);
  return r;
}

size_t th_compare(const char *what, const float *got, const float *want, size_t n, double atol, double rtol) {
  size_t bad = 0;
  double worst = 0;
  for (size_t i = 0; i < n; i++) {
    double d = fabs((double)got[i] - (double)want[i]);
    int ok = isfinite(got[i]) && d <= atol + rtol * fabs((double)want[i]);
    if (isfinite(got[i]) && d > worst) worst = d;
    if (!ok) {
      if (bad < 4) fprintf(stderr, "  %s[%zu]: got %.9g want %.9g (diff %.3g)\n", what, i, got[i], want[i], d);
      bad++;
    }
  }
  th_checks++;
  if (bad) {
    th_failures++;
    fprintf(stderr, "FAIL %s: %zu of %zu elements out of tolerance (atol %.2g rtol %.2g)\n", what, bad, n, atol, rtol);
  }
  return bad;
}
