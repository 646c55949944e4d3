/* CPU weight conversions (see weight_convert.h). */
#include "weight_convert.h"
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static uint16_t ld16(const uint8_t *p) { return (uint16_t)(p[0] | p[1] << 8); }

float wc_f16_to_f32(uint16_t h) {
  uint32_t sign = (uint32_t)(h & 0x8000) << 16, e = (h >> 10) & 0x1f, m = h & 0x3ff, bits;
  if (e == 0) {
    float v = (float)m * 0x1p-24f; /* zero or subnormal: exact */
    return sign ? -v : v;
  }
  if (e == 31)
    bits = sign | 0x7f800000u | m << 13; /* inf / NaN (payload kept) */
  else
    bits = sign | (e + 112) << 23 | m << 13; /* rebias 15 -> 127 */
  float f;
  memcpy(&f, &bits, 4);
  return f;
}

float wc_bf16_to_f32(uint16_t b) {
  uint32_t bits = (uint32_t)b << 16;
  float f;
  memcpy(&f, &bits, 4);
  return f;
}

uint16_t wc_f32_to_f16(float f) {
  uint32_t x;
  memcpy(&x, &f, 4);
  uint16_t sign = (uint16_t)((x >> 16) & 0x8000);
  uint32_t ax = x & 0x7fffffffu;
  if (ax > 0x7f800000u) return sign | 0x7e00 | ((ax >> 13) & 0x3ff);   /* NaN: quiet, keep high payload bits */
  if (ax >= 0x47800000u) return sign | 0x7c00;                         /* >= 65536 (and inf): inf */
  if (ax < 0x38800000u) {                                              /* below 2^-14: f16 subnormal or zero */
    if (ax < 0x33000000u) return sign;                                 /* <= 2^-25 rounds to zero */
    uint32_t m = (ax & 0x7fffff) | 0x800000, shift = 126 - (ax >> 23); /* value / 2^-24 = m >> shift */
    uint32_t q = m >> shift, rem = m & ((1u << shift) - 1), half = 1u << (shift - 1);
    if (rem > half || (rem == half && (q & 1))) q++;
    return sign | (uint16_t)q;
  }
  uint32_t h = ((ax >> 23) - 112) << 10 | (ax & 0x7fffff) >> 13, rem = ax & 0x1fff;
  if (rem > 0x1000 || (rem == 0x1000 && (h & 1))) h++; /* a carry into the exponent is still right (65520 -> inf) */
  return sign | (uint16_t)h;
}

void wc_f16_to_f32_n(const void *src, float *dst, size_t n) {
  const uint8_t *p = src;
  for (size_t i = 0; i < n; i++)
    dst[i] = wc_f16_to_f32(ld16(p + 2 * i));
}

void wc_bf16_to_f32_n(const void *src, float *dst, size_t n) {
  const uint8_t *p = src;
  for (size_t i = 0; i < n; i++)
    dst[i] = wc_bf16_to_f32(ld16(p + 2 * i));
}

void wc_f32_to_f16_n(const float *src, uint16_t *dst, size_t n) {
  for (size_t i = 0; i < n; i++)
    dst[i] = wc_f32_to_f16(src[i]);
}

static wgllm_status check_blocks(const char *what, int64_t n, llm_err *err) {
  if (n < 0 || n % 32) {
    return llm_err_set(err, WGLLM_ERR_INVALID_ARG,
                       "%s dequant: %lld elements is not a multiple of the 32-element block", what, (long long)n);
  }
  return WGLLM_OK;
}

wgllm_status wc_q8_0_dequant(const void *src, float *dst, int64_t n, llm_err *err) {
  wgllm_status st = check_blocks("Q8_0", n, err);
  if (st) return st;
  const uint8_t *b = src; /* block: f16 d, int8 qs[32] */
  for (int64_t i = 0; i < n / 32; i++, b += 34) {
    float d = wc_f16_to_f32(ld16(b));
    for (int j = 0; j < 32; j++)
      dst[i * 32 + j] = (float)(int8_t)b[2 + j] * d;
  }
  return WGLLM_OK;
}

wgllm_status wc_q4_0_dequant(const void *src, float *dst, int64_t n, llm_err *err) {
  wgllm_status st = check_blocks("Q4_0", n, err);
  if (st) return st;
  const uint8_t *b = src; /* block: f16 d, qs[16]; element j = low nibble of qs[j], j+16 = high nibble */
  for (int64_t i = 0; i < n / 32; i++, b += 18) {
    float d = wc_f16_to_f32(ld16(b));
    for (int j = 0; j < 16; j++) {
      dst[i * 32 + j] = (float)((b[2 + j] & 0xf) - 8) * d;
      dst[i * 32 + j + 16] = (float)((b[2 + j] >> 4) - 8) * d;
    }
  }
  return WGLLM_OK;
}

wgllm_status wc_tensor_to_f32(const wt_tensor *t, float *dst, llm_err *err) {
  int64_t n = wt_numel(t);
  wgllm_status st = WGLLM_OK;
  const wt_dtype_traits *tr = wt_traits(t->dtype);
  if (!tr) return WGLLM_ERR_INTERNAL;
  void *tmp = NULL;
  const void *src = wt_tensor_bytes(t, &tmp, err);
  if (!src && n) return WGLLM_ERR_IO; /* err names the file and range */
  st = tr->to_f32(src, dst, n, err);
  free(tmp);
  if (st) llm_err_prefix(err, "%s: tensor '%s'", t->file, t->name);
  return st;
}

size_t q4gsw_qs_words(int64_t n, int64_t k) { return (size_t)(n * (k / 8)); }

size_t q4gsw_scale_count(int64_t n, int64_t k, int group) { return group > 0 ? (size_t)(n * (k / group)) : 0; }

wgllm_status q4gsw_check_shape(int64_t n, int64_t k, int group, llm_err *err) {
  if (group != 32 && group != 64 && group != 128) {
    return llm_err_set(err, WGLLM_ERR_INVALID_ARG, "q4gsw: group size %d is not 32, 64 or 128", group);
  }
  if (n <= 0 || k <= 0 || k % group) {
    return llm_err_set(err, WGLLM_ERR_INVALID_ARG,
                       "q4gsw: weight [%lld, %lld] needs N, K > 0 and K a multiple of the group size %d", (long long)n,
                       (long long)k, group);
  }
  return WGLLM_OK;
}

wgllm_status q4gsw_from_q4_0(const void *src, int64_t n, int64_t k, uint32_t *qs, uint16_t *scales, llm_err *err) {
  wgllm_status st = q4gsw_check_shape(n, k, 32, err);
  if (st) return st;
  const uint8_t *b = src;
  for (int64_t blk = 0; blk < n * (k / 32); blk++, b += 18) { /* rows are consecutive blocks: blk = n*(K/32)+g */
    scales[blk] = ld16(b);
    uint32_t *w = qs + blk * 4; /* 32 nibbles = 4 words */
    for (int i = 0; i < 4; i++) {
      uint32_t word = 0;
      for (int j = 0; j < 8; j++) {
        int e = i * 8 + j; /* element within the block */
        uint32_t q = e < 16 ? b[2 + e] & 0xfu : (uint32_t)b[2 + e - 16] >> 4;
        word |= q << (4 * j);
      }
      w[i] = word;
    }
  }
  return WGLLM_OK;
}

wgllm_status q4gsw_quantize_f32(const float *w, int64_t n, int64_t k, int group, uint32_t *qs, uint16_t *scales,
                                llm_err *err) {
  wgllm_status st = q4gsw_check_shape(n, k, group, err);
  if (st) return st;
  memset(qs, 0, q4gsw_qs_words(n, k) * sizeof *qs);
  for (int64_t r = 0; r < n; r++) {
    for (int64_t g = 0; g < k / group; g++) {
      const float *x = w + r * k + g * group;
      float amax = 0.0f, m = 0.0f;
      for (int j = 0; j < group; j++) {
        if (!isfinite(x[j])) {
          return llm_err_set(err, WGLLM_ERR_INVALID_ARG, "q4gsw quantize: W[%lld][%lld] is not finite", (long long)r,
                             (long long)(g * group + j));
        }
        if (amax < fabsf(x[j])) {
          amax = fabsf(x[j]);
          m = x[j];
        }
      }
      float d = m / -8.0f, id = d != 0.0f ? 1.0f / d : 0.0f;
      scales[r * (k / group) + g] = wc_f32_to_f16(d);
      for (int j = 0; j < group; j++) {
        float xs = x[j] * id;     /* in [-8, 8] up to rounding, so q >= 0 */
        int q = (int)(xs + 8.5f); /* truncation == floor here, as in llama.cpp */
        if (q > 15) q = 15;
        int64_t e = r * k + g * group + j; /* K % 8 == 0, so e / 8 == r*(K/8) + col/8 */
        qs[e / 8] |= (uint32_t)q << (4 * (e % 8));
      }
    }
  }
  return WGLLM_OK;
}

wgllm_status q4gsw_dequant(const uint32_t *qs, const uint16_t *scales, int64_t n, int64_t k, int group, float *out,
                           llm_err *err) {
  wgllm_status st = q4gsw_check_shape(n, k, group, err);
  if (st) return st;
  for (int64_t r = 0; r < n; r++)
    for (int64_t c = 0; c < k; c++) {
      int64_t e = r * k + c;
      int q = (int)(qs[e / 8] >> (4 * (e % 8)) & 0xf);
      out[e] = (float)(q - 8) * wc_f16_to_f32(scales[r * (k / group) + c / group]);
    }
  return WGLLM_OK;
}
