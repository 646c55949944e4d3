/* Dense linear layers with f32 or f16 weights: the GEMV route (kernels/matvec.wgsl) for decode and the
   tiled GEMM route (kernels/matmul.wgsl) for prefill. */
#include "ops.h"

typedef struct linear_params { uint32_t M, N, K, has_bias; } linear_params;

static wgllm_status linear(gpu_recorder *rec, const char *kernel, gpu_view x, gpu_view w, op_wtype wt,
                           gpu_view bias, gpu_view y, uint32_t M, uint32_t N, uint32_t K, uint32_t gx, uint32_t gy) {
  if (!M || !N || !K) return op_fail(rec, WGLLM_ERR_INTERNAL, "%s: empty shape M=%u N=%u K=%u", kernel, M, N, K);
  uint32_t maxg = op_ctx(rec)->limits.maxComputeWorkgroupsPerDimension;
  if (gx > maxg || gy > maxg) return op_fail(rec, WGLLM_ERR_UNSUPPORTED, "%s: grid %ux%u over the device limit", kernel, gx, gy);
  linear_params p = {M, N, K, bias.buf ? 1u : 0u};
  gpu_dispatch_desc d = {.kernel = kernel, .variant = op_wtype_variant(wt), .params = &p, .params_size = sizeof p, .n_bind = 4};
  d.bind[0] = x;
  d.bind[1] = w;
  d.bind[2] = bias.buf ? bias : x; /* unused when has_bias = 0, but the binding must exist */
  d.bind[3] = y;
  d.grid[0] = gx;
  d.grid[1] = gy;
  d.grid[2] = 1;
  return gpu_record(rec, &d);
}

wgllm_status op_matvec(gpu_recorder *rec, gpu_view x, gpu_view w, op_wtype wt, gpu_view bias, gpu_view y,
                       uint32_t M, uint32_t N, uint32_t K) {
  return linear(rec, "matvec", x, w, wt, bias, y, M, N, K, (N + 7) / 8, M);
}

wgllm_status op_matmul(gpu_recorder *rec, gpu_view x, gpu_view w, op_wtype wt, gpu_view bias, gpu_view y,
                       uint32_t M, uint32_t N, uint32_t K) {
  return linear(rec, "matmul", x, w, wt, bias, y, M, N, K, (N + 63) / 64, (M + 63) / 64);
}

wgllm_status op_linear(gpu_recorder *rec, gpu_view x, gpu_view w, op_wtype wt, gpu_view bias, gpu_view y,
                       uint32_t M, uint32_t N, uint32_t K) {
  if (M <= 4) return op_matvec(rec, x, w, wt, bias, y, M, N, K);
  return op_matmul(rec, x, w, wt, bias, y, M, N, K);
}
