/* Row softmax (kernels/softmax.wgsl) and row argmax (kernels/argmax.wgsl). */
#include "ops.h"

typedef struct softmax_params {
  uint32_t n, rows;
  float scale;
  uint32_t _p;
} softmax_params;
_Static_assert(sizeof(softmax_params) == 16, "softmax_params mirrors the Params block of kernels/softmax.wgsl");
typedef struct argmax_params {
  uint32_t n, rows, _p0, _p1;
} argmax_params;
_Static_assert(sizeof(argmax_params) == 16, "argmax_params mirrors the Params block of kernels/argmax.wgsl");

wgllm_status op_softmax(gpu_recorder *rec, gpu_view x, gpu_view out, uint32_t n, uint32_t rows, float scale) {
  if (!n || !rows) return op_fail(rec, WGLLM_ERR_INTERNAL, "softmax: empty shape");
  softmax_params p = {.n = n, .rows = rows, .scale = scale};
  return op_dispatch(rec, &(op_dispatch_args){.kernel = K_SOFTMAX,
                                              .variant = V_SOFTMAX_F32,
                                              .params = &p,
                                              .params_size = sizeof p,
                                              .access = "rw",
                                              .bind = {x, out},
                                              .groups = rows});
}

wgllm_status op_argmax(gpu_recorder *rec, gpu_view x, gpu_view out, uint32_t n, uint32_t rows) {
  if (!n || !rows) return op_fail(rec, WGLLM_ERR_INTERNAL, "argmax: empty shape");
  if (rows > op_ctx(rec)->limits.maxComputeWorkgroupsPerDimension)
    return op_fail(rec, WGLLM_ERR_UNSUPPORTED, "argmax: %u rows exceed the grid limit", rows);
  argmax_params p = {.n = n, .rows = rows};
  return op_dispatch(rec, &(op_dispatch_args){.kernel = K_ARGMAX,
                                              .variant = V_ARGMAX_F32,
                                              .params = &p,
                                              .params_size = sizeof p,
                                              .access = "rw",
                                              .bind = {x, out},
                                              .grid = {rows}});
}
