/* Elementwise add / mul / add-and-scale and in-place soft-capping (kernels/binary.wgsl). */
#include "ops.h"

typedef struct binary_params {
  uint32_t n, nb, op;
  float c;
} binary_params;
_Static_assert(sizeof(binary_params) == 16, "binary_params mirrors the Params block of kernels/binary.wgsl");

static wgllm_status binary(gpu_recorder *rec, gpu_view a, gpu_view b, gpu_view out, uint32_t n, uint32_t nb,
                           uint32_t op, float c) {
  if (nb == 0 || n % nb) return op_fail(rec, WGLLM_ERR_INTERNAL, "binary op: nb=%u does not divide n=%u", nb, n);
  binary_params p = {.n = n, .nb = nb, .op = op, .c = c};
  return op_dispatch(rec, &(op_dispatch_args){.kernel = K_BINARY,
                                              .variant = V_BINARY_F32,
                                              .params = &p,
                                              .params_size = sizeof p,
                                              .access = "rrw",
                                              .bind = {a, b, out},
                                              .groups = (n + 255) / 256});
}

wgllm_status op_add(gpu_recorder *rec, gpu_view a, gpu_view b, gpu_view out, uint32_t n, uint32_t nb) {
  return binary(rec, a, b, out, n, nb, 0, 1.0f);
}
static wgllm_status inplace(gpu_recorder *rec, gpu_view a, gpu_view b, uint32_t n, uint32_t nb, uint32_t op, float c,
                            const char *who) {
  if (nb == 0 || n % nb) return op_fail(rec, WGLLM_ERR_INTERNAL, "%s: nb=%u does not divide n=%u", who, nb, n);
  binary_params p = {.n = n, .nb = nb, .op = op, .c = c};
  return op_dispatch(rec, &(op_dispatch_args){.kernel = K_BINARY,
                                              .variant = V_BINARY_INPLACE,
                                              .params = &p,
                                              .params_size = sizeof p,
                                              .access = "wr",
                                              .bind = {a, b},
                                              .groups = (n + 255) / 256});
}

wgllm_status op_add_inplace(gpu_recorder *rec, gpu_view a, gpu_view b, uint32_t n, uint32_t nb) {
  return inplace(rec, a, b, n, nb, 0, 1.0f, "add_inplace");
}
wgllm_status op_mul_inplace(gpu_recorder *rec, gpu_view a, gpu_view b, uint32_t n, uint32_t nb) {
  return inplace(rec, a, b, n, nb, 1, 1.0f, "mul_inplace");
}
wgllm_status op_add_scale_inplace(gpu_recorder *rec, gpu_view a, gpu_view b, uint32_t n, uint32_t nb, float c) {
  return inplace(rec, a, b, n, nb, 2, c, "add_scale_inplace");
}

wgllm_status op_softcap_inplace(gpu_recorder *rec, gpu_view a, uint32_t n, float cap) {
  if (!(cap > 0)) return op_fail(rec, WGLLM_ERR_INTERNAL, "softcap: cap %g is not positive", cap);
  binary_params p = {.n = n, .nb = 1, .op = 3, .c = cap};
  return op_dispatch(rec, &(op_dispatch_args){.kernel = K_BINARY,
                                              .variant = V_BINARY_UNARY,
                                              .params = &p,
                                              .params_size = sizeof p,
                                              .access = "w",
                                              .bind = {a},
                                              .groups = (n + 255) / 256});
}

wgllm_status op_mul(gpu_recorder *rec, gpu_view a, gpu_view b, gpu_view out, uint32_t n, uint32_t nb) {
  return binary(rec, a, b, out, n, nb, 1, 1.0f);
}
