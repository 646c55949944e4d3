/* Constant fill op (kernels/fill.wgsl). */
#include "ops.h"
#include <string.h>

typedef struct fill_params {
  uint32_t n, bits, _p0, _p1;
} fill_params;
_Static_assert(sizeof(fill_params) == 16, "fill_params mirrors the Params block of kernels/fill.wgsl");

wgllm_status op_fill(gpu_recorder *rec, gpu_view out, uint32_t n, uint32_t bits) {
  if (out.buf && (uint64_t)n * 4 > gpu_view_bytes(out))
    return op_fail(rec, WGLLM_ERR_INTERNAL, "fill: %u elements do not fit the output view", n);
  fill_params p = {.n = n, .bits = bits};
  return op_dispatch(rec, &(op_dispatch_args){.kernel = K_FILL,
                                              .variant = V_FILL_U32,
                                              .params = &p,
                                              .params_size = sizeof p,
                                              .access = "w",
                                              .bind = {out},
                                              .groups = (n + 255) / 256});
}

wgllm_status op_fill_f32(gpu_recorder *rec, gpu_view out, uint32_t n, float value) {
  uint32_t bits;
  memcpy(&bits, &value, 4);
  return op_fill(rec, out, n, bits);
}
