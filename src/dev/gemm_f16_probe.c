/* The tensor-core GEMM's probes (gemm_f16_probe.h): one dispatch of a dev=1 variant of kernels/gemm_f16.wgsl, set up
   as src/ops/op_gemm_f16.c sets up the GEMM (its Params, bindings and grid along M first). */
#include "gemm_f16_probe.h"
#include "dev_kernels.h"
#include <stdio.h>
#include <string.h>

/* the kernel's Params block (kernels/gemm_f16.wgsl), as op_gemm_f16.c's; the recorder checks its size */
typedef struct gemm_f16_probe_params {
  uint32_t M, N, K, has_bias, y_stride, n_off, _p0, _p1;
} gemm_f16_probe_params;

wgllm_status dev_gemm_f16_probe(gpu_recorder *rec, gpu_view x16, gpu_view w16, gpu_view y, uint32_t M, uint32_t N,
                                uint32_t K, const char *variant) {
  const gpu_kernel_source *src = variant ? dev_kernel_find(K_GEMM_F16, variant) : NULL;
  char msg[256];
  if (!src) {
    snprintf(msg, sizeof msg, "gemm_f16 probe: no variant %s in dev_kernel_sources", variant ? variant : "(none)");
    return gpu_recorder_fail(rec, WGLLM_ERR_INTERNAL, msg);
  }
  uint32_t tm = strstr(variant, "_m128") ? 128 : 64, tk = strstr(variant, "_k64") ? 64 : 32;
  if (!op_gemm_f16_supports(op_ctx(rec), M, N, K) || K % tk || gpu_view_bytes(x16) < op_f16_bytes(M, K) ||
      gpu_view_bytes(w16) < op_f16_bytes(N, K)) {
    snprintf(msg, sizeof msg, "gemm_f16 probe %s: M=%u N=%u K=%u not taken here", variant, M, N, K);
    return gpu_recorder_fail(rec, WGLLM_ERR_UNSUPPORTED, msg);
  }
  gemm_f16_probe_params p = {.M = M, .N = N, .K = K, .y_stride = N};
  gpu_dispatch_desc d = {.kernel = src->kernel,
                         .variant = src->variant,
                         .source = src,
                         .params = &p,
                         .params_size = sizeof p,
                         .access = "rrrw",
                         .n_bind = 4,
                         .grid = {(M + tm - 1) / tm, (N + 127) / 128, 1}};
  d.bind[0] = x16;
  d.bind[1] = w16;
  d.bind[2] = x16; /* no bias */
  d.bind[3] = y;
  return gpu_record(rec, &d);
}
