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
  softmax_params p = {n, rows, scale, 0};
  gpu_dispatch_desc d = {
      .kernel = K_SOFTMAX, .variant = V_SOFTMAX_F32, .params = &p, .params_size = sizeof p, .n_bind = 2};
  d.bind[0] = x;
  d.bind[1] = out;
  op_grid_1d(rec, rows, d.grid);
  return gpu_record(rec, &d);
}

wgllm_status op_argmax(gpu_recorder *rec, gpu_view x, gpu_view out, uint32_t n, uint32_t rows) {
  if (!n || !rows) return op_fail(rec, WGLLM_ERR_INTERNAL, "argmax: empty shape");
  if (rows > op_ctx(rec)->limits.maxComputeWorkgroupsPerDimension)
    return op_fail(rec, WGLLM_ERR_UNSUPPORTED, "argmax: %u rows exceed the grid limit", rows);
  argmax_params p = {n, rows, 0, 0};
  gpu_dispatch_desc d = {
      .kernel = K_ARGMAX, .variant = V_ARGMAX_F32, .params = &p, .params_size = sizeof p, .n_bind = 2};
  d.bind[0] = x;
  d.bind[1] = out;
  d.grid[0] = rows;
  d.grid[1] = d.grid[2] = 1;
  return gpu_record(rec, &d);
}
