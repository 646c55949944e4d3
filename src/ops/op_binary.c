/* Elementwise add / mul (kernels/binary.wgsl). */
#include "ops.h"

typedef struct binary_params {
  uint32_t n, nb, op, _p;
} binary_params;
_Static_assert(sizeof(binary_params) == 16, "binary_params mirrors the Params block of kernels/binary.wgsl");

static wgllm_status binary(gpu_recorder *rec, gpu_view a, gpu_view b, gpu_view out, uint32_t n, uint32_t nb,
                           uint32_t op) {
  if (nb == 0 || n % nb) return op_fail(rec, WGLLM_ERR_INTERNAL, "binary op: nb=%u does not divide n=%u", nb, n);
  binary_params p = {n, nb, op, 0};
  gpu_dispatch_desc d = {
      .kernel = K_BINARY, .variant = V_BINARY_F32, .params = &p, .params_size = sizeof p, .n_bind = 3};
  d.bind[0] = a;
  d.bind[1] = b;
  d.bind[2] = out;
  op_grid_1d(rec, (n + 255) / 256, d.grid);
  return gpu_record(rec, &d);
}

wgllm_status op_add(gpu_recorder *rec, gpu_view a, gpu_view b, gpu_view out, uint32_t n, uint32_t nb) {
  return binary(rec, a, b, out, n, nb, 0);
}
wgllm_status op_add_inplace(gpu_recorder *rec, gpu_view a, gpu_view b, uint32_t n, uint32_t nb) {
  if (nb == 0 || n % nb) return op_fail(rec, WGLLM_ERR_INTERNAL, "add_inplace: nb=%u does not divide n=%u", nb, n);
  binary_params p = {n, nb, 0, 0};
  gpu_dispatch_desc d = {
      .kernel = K_BINARY, .variant = V_BINARY_INPLACE, .params = &p, .params_size = sizeof p, .n_bind = 2};
  d.bind[0] = a;
  d.bind[1] = b;
  op_grid_1d(rec, (n + 255) / 256, d.grid);
  return gpu_record(rec, &d);
}

wgllm_status op_mul(gpu_recorder *rec, gpu_view a, gpu_view b, gpu_view out, uint32_t n, uint32_t nb) {
  return binary(rec, a, b, out, n, nb, 1);
}
