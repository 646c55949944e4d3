/* test_ops --perf -f gemm_perf/f16: the tensor-core GEMM on f16 operands (kernels/gemm_f16.wgsl) with one part of
   its work left out, to see which part limits it: its developer variants "_nomma" (the tile copies without the
   multiplies) and "_nostage" (the multiplies on whatever workgroup memory holds), so the library's kernel table
   carries no such switch. */
#ifndef WGLLM_DEV_GEMM_F16_PROBE_H
#define WGLLM_DEV_GEMM_F16_PROBE_H
#include "ops.h"

/* As op_gemm_f16_variant (no bias) with a probe variant (V_GEMM_F16_*_NOMMA / _NOSTAGE): the output is not the
   product. */
wgllm_status dev_gemm_f16_probe(gpu_recorder *rec, gpu_view x16, gpu_view w16, gpu_view y, uint32_t M, uint32_t N,
                                uint32_t K, const char *variant);
#endif
