/* Gated MLP activation (kernels/glu.wgsl): SiLU for Llama/Qwen, GELU-tanh for Gemma. */
#include "ops.h"

typedef struct glu_params {
  uint32_t n, rows, in_stride, g_off, u_off, act, u_stride, _p1;
} glu_params;
_Static_assert(sizeof(glu_params) == 32, "glu_params mirrors the Params block of kernels/glu.wgsl");

wgllm_status op_glu_strided(gpu_recorder *rec, gpu_view x, gpu_view u, gpu_view out, uint32_t n, uint32_t rows,
                            uint32_t in_stride, uint32_t g_off, uint32_t u_stride, uint32_t u_off, op_act act) {
  if (!n || !rows) return op_fail(rec, WGLLM_ERR_INTERNAL, "glu: empty shape");
  if (rows > op_ctx(rec)->limits.maxComputeWorkgroupsPerDimension)
    return op_fail(rec, WGLLM_ERR_UNSUPPORTED, "glu: %u rows exceed the grid limit", rows);
  glu_params p = {.n = n,
                  .rows = rows,
                  .in_stride = in_stride,
                  .g_off = g_off,
                  .u_off = u_off,
                  .act = (uint32_t)act,
                  .u_stride = u_stride};
  return op_dispatch(rec, &(op_dispatch_args){.kernel = K_GLU,
                                              .variant = V_GLU_F32,
                                              .params = &p,
                                              .params_size = sizeof p,
                                              .access = "rrw",
                                              .bind = {x, u, out},
                                              .grid = {(n + 255) / 256, rows}});
}

wgllm_status op_glu(gpu_recorder *rec, gpu_view x, gpu_view u, gpu_view out, uint32_t n, uint32_t rows,
                    uint32_t in_stride, uint32_t g_off, uint32_t u_off, op_act act) {
  return op_glu_strided(rec, x, u, out, n, rows, in_stride, g_off, in_stride, u_off, act);
}
