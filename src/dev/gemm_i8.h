/* test_ops -f gemm_i8 and --perf -f gemm_perf/i8mma: the tensor-core GEMM on int8 operands (kernels/gemm_i8.wgsl,
   its developer variants). Measured on the H200 and rejected (docs/PERF.md, "The int8 tensor-core GEMM"): every
   32-element block of both operands has its own scale, so each i8 x i8 -> i32 16x16x32 product leaves its opaque
   result matrix through workgroup memory to be scaled into f32 sums, and the kernel runs at the integer-dot GEMM's
   pace, under the f16-operand one. Kept, with its conformance cases, for devices where the balance may differ. */
#ifndef WGLLM_DEV_GEMM_I8_H
#define WGLLM_DEV_GEMM_I8_H
#include "ops.h"

/* The device granted subgroup matrices with an i8 x i8 -> i32 configuration of 16x16x32, subgroups of exactly 32,
   256-thread workgroups and 43 KiB of workgroup memory; K a multiple of 32; every part of the weight q4gsw (groups
   of 32, 64, 128), q8, Q4_1, Q5_0, Q5_1, Q4_K, Q5_K, IQ4_NL or IQ4_XS (not Q6_K: its half blocks have their own
   scale, which one 32-deep multiply cannot apply). */
int dev_gemm_i8_supports(const gpu_context *ctx, const op_weight *w, uint32_t M, uint32_t N, uint32_t K);
/* y [M][N] = x . w^T (+ bias) as op_matmul_q8 computes it, from the same xq (op_quantize_q8) */
wgllm_status dev_gemm_i8(gpu_recorder *rec, gpu_view xq, const op_weight *w, gpu_view bias, gpu_view y, uint32_t M,
                         uint32_t N, uint32_t K);
#endif
