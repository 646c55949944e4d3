/* CPU weight conversions done once at load time: half/bfloat widening and narrowing, GGUF Q8_0/Q4_0
   dequantization, and the q4gsw format the GPU kernels read.

   q4gsw (4-bit, group-symmetric, no zero point) for a weight W[N][K] with group size G in {32, 64, 128},
   K % G == 0:
     qs     u32 [N][K/8]: element k of row n is the nibble q (0..15) at bits 4*(k%8) of word n*(K/8) + k/8
     scales f16 [N][K/G]: scale of group g of row n at n*(K/G) + g
     W[n][k] = (q - 8) * scales[n][k/G]
   GGUF Q4_0 is exactly q4gsw with G = 32, so it is repacked, never requantized.

   Sources are `const void *` read byte by byte: tensors inside mapped files need not be aligned. */
#ifndef WGLLM_WEIGHT_CONVERT_H
#define WGLLM_WEIGHT_CONVERT_H
#include "llm_err.h"
#include "tensor_store.h"
#include "wgllm.h"
#include <stddef.h>
#include <stdint.h>

float wc_f16_to_f32(uint16_t h);
float wc_bf16_to_f32(uint16_t b);
uint16_t wc_f32_to_f16(float f); /* round to nearest even; overflow to inf; NaN stays NaN (quiet) */

void wc_f16_to_f32_n(const void *src /* [n] f16 */, float *dst /* [n] */, size_t n);
void wc_bf16_to_f32_n(const void *src /* [n] bf16 */, float *dst /* [n] */, size_t n);
void wc_f32_to_f16_n(const float *src /* [n] */, uint16_t *dst /* [n] f16 */, size_t n);
/* n must be a multiple of 32 (WGLLM_ERR_INVALID_ARG otherwise). */
wgllm_status wc_q8_0_dequant(const void *src /* [n/32] 34-byte blocks */, float *dst /* [n] */, int64_t n,
                             llm_err *err);
wgllm_status wc_q4_0_dequant(const void *src /* [n/32] 18-byte blocks */, float *dst /* [n] */, int64_t n,
                             llm_err *err);
/* ggml's other block types (dequant.c): n a multiple of the block (32, or 256 for the K-quants and IQ4_XS) */
wgllm_status wc_q4_1_dequant(const void *src, float *dst, int64_t n, llm_err *err);
wgllm_status wc_q5_0_dequant(const void *src, float *dst, int64_t n, llm_err *err);
wgllm_status wc_q5_1_dequant(const void *src, float *dst, int64_t n, llm_err *err);
wgllm_status wc_q2_k_dequant(const void *src, float *dst, int64_t n, llm_err *err);
wgllm_status wc_q3_k_dequant(const void *src, float *dst, int64_t n, llm_err *err);
wgllm_status wc_q4_k_dequant(const void *src, float *dst, int64_t n, llm_err *err);
wgllm_status wc_q5_k_dequant(const void *src, float *dst, int64_t n, llm_err *err);
wgllm_status wc_q6_k_dequant(const void *src, float *dst, int64_t n, llm_err *err);
wgllm_status wc_iq4_nl_dequant(const void *src, float *dst, int64_t n, llm_err *err);
wgllm_status wc_iq4_xs_dequant(const void *src, float *dst, int64_t n, llm_err *err);
wgllm_status wc_mxfp4_dequant(const void *src, float *dst, int64_t n, llm_err *err);
/* 2^(e - 128) of an e8m0 exponent byte e, as ggml's MXFP4 blocks scale their doubled e2m1 grid */
float wc_e8m0_half(uint8_t e);
/* Any store dtype to f32; dst holds wt_numel(t) floats. Messages name the tensor. */
wgllm_status wc_tensor_to_f32(const wt_tensor *t, float *dst, llm_err *err);

/* q4gsw sizes: qs words (N*K/8) and scale count (N*K/G). */
size_t q4gsw_qs_words(int64_t n, int64_t k);
size_t q4gsw_scale_count(int64_t n, int64_t k, int group);
/* WGLLM_OK when N, K > 0, G in {32, 64, 128} and K % G == 0; otherwise WGLLM_ERR_INVALID_ARG saying which. */
wgllm_status q4gsw_check_shape(int64_t n, int64_t k, int group, llm_err *err);

/* Repacks a GGUF Q4_0 weight [N][K] (row n = K/32 consecutive blocks) into q4gsw with G = 32, bit-exact. */
wgllm_status q4gsw_from_q4_0(const void *src /* [N][K/32] 18-byte blocks */, int64_t n, int64_t k,
                             uint32_t *qs /* [N][K/8] */, uint16_t *scales /* [N][K/32] f16 */, llm_err *err);
/* Quantizes with llama.cpp's Q4_0 reference rule per group: m = the element of largest |x| (first if tied,
   keeping its sign), d = m / -8, q = min(15, (int)(x * (1/d) + 8.5)) (0 when d == 0), scale = f16(d).
   Non-finite inputs are WGLLM_ERR_INVALID_ARG naming the element. */
wgllm_status q4gsw_quantize_f32(const float *w /* [N][K] */, int64_t n, int64_t k, int group,
                                uint32_t *qs /* [N][K/8] */, uint16_t *scales /* [N][K/G] f16 */, llm_err *err);
wgllm_status q4gsw_dequant(const uint32_t *qs /* [N][K/8] */, const uint16_t *scales /* [N][K/G] f16 */, int64_t n,
                           int64_t k, int group, float *out /* [N][K] */, llm_err *err);

#endif
