/* CPU dequantization of ggml's other block types, as ggml-quants.c defines them (the golden vectors in
   tests/data/quant, made with llama.cpp's own libggml, are matched bit for bit by test_convert): Q4_1, Q5_0,
   Q5_1 (32-element blocks), the K-quants Q2_K..Q6_K (256-element super-blocks with 16- or 32-element sub-blocks
   and 6- or 8-bit scales), IQ4_NL and IQ4_XS (4-bit indices into a non-linear table), MXFP4 (e2m1 values times a
   power of two). Each to-f32 takes n elements, a multiple of its block. */
#include "weight_convert.h"
#include <stdio.h>
#include <string.h>

static uint16_t ld16(const uint8_t *p) { return (uint16_t)(p[0] | p[1] << 8); }
static float h2f(const uint8_t *p) { return wc_f16_to_f32(ld16(p)); }

static wgllm_status blocks_ok(const char *what, int64_t n, int64_t block, llm_err *err) {
  if (n < 0 || n % block) {
    return llm_err_set(err, WGLLM_ERR_INVALID_ARG,
                       "%s dequant: %lld elements is not a multiple of the %lld-element block", what, (long long)n,
                       (long long)block);
  }
  return WGLLM_OK;
}

/* Q4_1: f16 d, f16 m, qs[16]; element j = (low nibble of qs[j]) * d + m, j + 16 the high nibble */
wgllm_status wc_q4_1_dequant(const void *src, float *dst, int64_t n, llm_err *err) {
  wgllm_status st = blocks_ok("Q4_1", n, 32, err);
  const uint8_t *b = src;
  for (int64_t i = 0; !st && i < n / 32; i++, b += 20) {
    float d = h2f(b), m = h2f(b + 2);
    for (int j = 0; j < 16; j++) {
      dst[i * 32 + j] = (float)(b[4 + j] & 0xf) * d + m;
      dst[i * 32 + j + 16] = (float)(b[4 + j] >> 4) * d + m;
    }
  }
  return st;
}

/* Q5_0: f16 d, qh (32 fifth bits), qs[16]; (5-bit value - 16) * d */
wgllm_status wc_q5_0_dequant(const void *src, float *dst, int64_t n, llm_err *err) {
  wgllm_status st = blocks_ok("Q5_0", n, 32, err);
  const uint8_t *b = src;
  for (int64_t i = 0; !st && i < n / 32; i++, b += 22) {
    float d = h2f(b);
    uint32_t qh;
    memcpy(&qh, b + 2, 4);
    for (int j = 0; j < 16; j++) {
      uint8_t xh0 = (uint8_t)(((qh >> j) << 4) & 0x10), xh1 = (uint8_t)((qh >> (j + 12)) & 0x10);
      int32_t x0 = ((b[6 + j] & 0x0f) | xh0) - 16, x1 = ((b[6 + j] >> 4) | xh1) - 16;
      dst[i * 32 + j] = (float)x0 * d;
      dst[i * 32 + j + 16] = (float)x1 * d;
    }
  }
  return st;
}

/* Q5_1: f16 d, f16 m, qh, qs[16]; 5-bit value * d + m */
wgllm_status wc_q5_1_dequant(const void *src, float *dst, int64_t n, llm_err *err) {
  wgllm_status st = blocks_ok("Q5_1", n, 32, err);
  const uint8_t *b = src;
  for (int64_t i = 0; !st && i < n / 32; i++, b += 24) {
    float d = h2f(b), m = h2f(b + 2);
    uint32_t qh;
    memcpy(&qh, b + 4, 4);
    for (int j = 0; j < 16; j++) {
      uint8_t xh0 = (uint8_t)(((qh >> j) << 4) & 0x10), xh1 = (uint8_t)((qh >> (j + 12)) & 0x10);
      int x0 = (b[8 + j] & 0x0f) | xh0, x1 = (b[8 + j] >> 4) | xh1;
      dst[i * 32 + j] = (float)x0 * d + m;
      dst[i * 32 + j + 16] = (float)x1 * d + m;
    }
  }
  return st;
}

/* Q2_K (84 bytes): scales[16] (4-bit scale, 4-bit min each), qs[64] (2-bit values), f16 d, f16 dmin */
wgllm_status wc_q2_k_dequant(const void *src, float *dst, int64_t n, llm_err *err) {
  wgllm_status st = blocks_ok("Q2_K", n, 256, err);
  const uint8_t *b = src;
  float *y = dst;
  for (int64_t i = 0; !st && i < n / 256; i++, b += 84) {
    const uint8_t *sc = b, *q = b + 16;
    float d = h2f(b + 80), min = h2f(b + 82);
    int is = 0;
    for (int k = 0; k < 256; k += 128) {
      int shift = 0;
      for (int j = 0; j < 4; ++j) {
        uint8_t s = sc[is++];
        float dl = d * (float)(s & 0xf), ml = min * (float)(s >> 4);
        for (int l = 0; l < 16; ++l)
          *y++ = dl * (float)((int8_t)((q[l] >> shift) & 3)) - ml;
        s = sc[is++];
        dl = d * (float)(s & 0xf);
        ml = min * (float)(s >> 4);
        for (int l = 0; l < 16; ++l)
          *y++ = dl * (float)((int8_t)((q[l + 16] >> shift) & 3)) - ml;
        shift += 2;
      }
      q += 32;
    }
  }
  return st;
}

/* Q3_K (110 bytes): hmask[32] (third bits), qs[64] (low 2 bits), scales[12] (16 x 6-bit), f16 d */
wgllm_status wc_q3_k_dequant(const void *src, float *dst, int64_t n, llm_err *err) {
  wgllm_status st = blocks_ok("Q3_K", n, 256, err);
  const uint32_t kmask1 = 0x03030303, kmask2 = 0x0f0f0f0f;
  const uint8_t *b = src;
  float *y = dst;
  for (int64_t i = 0; !st && i < n / 256; i++, b += 110) {
    const uint8_t *hm = b, *q = b + 32;
    float d_all = h2f(b + 108);
    uint32_t aux[4];
    memcpy(aux, b + 96, 12);
    uint32_t tmp = aux[2];
    aux[2] = ((aux[0] >> 4) & kmask2) | (((tmp >> 4) & kmask1) << 4);
    aux[3] = ((aux[1] >> 4) & kmask2) | (((tmp >> 6) & kmask1) << 4);
    aux[0] = (aux[0] & kmask2) | (((tmp >> 0) & kmask1) << 4);
    aux[1] = (aux[1] & kmask2) | (((tmp >> 2) & kmask1) << 4);
    int8_t scales[16];
    memcpy(scales, aux, 16);
    int is = 0;
    uint8_t m = 1;
    for (int k = 0; k < 256; k += 128) {
      int shift = 0;
      for (int j = 0; j < 4; ++j) {
        float dl = d_all * (float)(scales[is++] - 32);
        for (int l = 0; l < 16; ++l)
          *y++ = dl * (float)((int8_t)((q[l] >> shift) & 3) - ((hm[l] & m) ? 0 : 4));
        dl = d_all * (float)(scales[is++] - 32);
        for (int l = 0; l < 16; ++l)
          *y++ = dl * (float)((int8_t)((q[l + 16] >> shift) & 3) - ((hm[l + 16] & m) ? 0 : 4));
        shift += 2;
        m = (uint8_t)(m << 1);
      }
      q += 32;
    }
  }
  return st;
}

/* the 6-bit scale and min of sub-block j of a Q4_K/Q5_K super-block (ggml's get_scale_min_k4) */
static void scale_min_k4(int j, const uint8_t *q, uint8_t *d, uint8_t *m) {
  if (j < 4) {
    *d = q[j] & 63;
    *m = q[j + 4] & 63;
  } else {
    *d = (uint8_t)((q[j + 4] & 0xf) | ((q[j - 4] >> 6) << 4));
    *m = (uint8_t)((q[j + 4] >> 4) | ((q[j] >> 6) << 4));
  }
}

/* Q4_K (144 bytes): f16 d, f16 dmin, scales[12] (8 x 6-bit scale and min), qs[128] */
wgllm_status wc_q4_k_dequant(const void *src, float *dst, int64_t n, llm_err *err) {
  wgllm_status st = blocks_ok("Q4_K", n, 256, err);
  const uint8_t *b = src;
  float *y = dst;
  for (int64_t i = 0; !st && i < n / 256; i++, b += 144) {
    float d = h2f(b), min = h2f(b + 2);
    const uint8_t *scales = b + 4, *q = b + 16;
    int is = 0;
    for (int j = 0; j < 256; j += 64) {
      uint8_t sc, m;
      scale_min_k4(is + 0, scales, &sc, &m);
      float d1 = d * sc, m1 = min * m;
      scale_min_k4(is + 1, scales, &sc, &m);
      float d2 = d * sc, m2 = min * m;
      for (int l = 0; l < 32; ++l)
        *y++ = d1 * (q[l] & 0xf) - m1;
      for (int l = 0; l < 32; ++l)
        *y++ = d2 * (q[l] >> 4) - m2;
      q += 32;
      is += 2;
    }
  }
  return st;
}

/* Q5_K (176 bytes): f16 d, f16 dmin, scales[12], qh[32] (fifth bits), qs[128] */
wgllm_status wc_q5_k_dequant(const void *src, float *dst, int64_t n, llm_err *err) {
  wgllm_status st = blocks_ok("Q5_K", n, 256, err);
  const uint8_t *b = src;
  float *y = dst;
  for (int64_t i = 0; !st && i < n / 256; i++, b += 176) {
    float d = h2f(b), min = h2f(b + 2);
    const uint8_t *scales = b + 4, *qh = b + 16, *ql = b + 48;
    int is = 0;
    uint8_t u1 = 1, u2 = 2;
    for (int j = 0; j < 256; j += 64) {
      uint8_t sc, m;
      scale_min_k4(is + 0, scales, &sc, &m);
      float d1 = d * sc, m1 = min * m;
      scale_min_k4(is + 1, scales, &sc, &m);
      float d2 = d * sc, m2 = min * m;
      for (int l = 0; l < 32; ++l)
        *y++ = d1 * ((ql[l] & 0xf) + (qh[l] & u1 ? 16 : 0)) - m1;
      for (int l = 0; l < 32; ++l)
        *y++ = d2 * ((ql[l] >> 4) + (qh[l] & u2 ? 16 : 0)) - m2;
      ql += 32;
      is += 2;
      u1 = (uint8_t)(u1 << 2);
      u2 = (uint8_t)(u2 << 2);
    }
  }
  return st;
}

/* Q6_K (210 bytes): ql[128] (low 4 bits), qh[64] (high 2 bits), int8 scales[16], f16 d */
wgllm_status wc_q6_k_dequant(const void *src, float *dst, int64_t n, llm_err *err) {
  wgllm_status st = blocks_ok("Q6_K", n, 256, err);
  const uint8_t *b = src;
  float *y = dst;
  for (int64_t i = 0; !st && i < n / 256; i++, b += 210) {
    float d = h2f(b + 208);
    const uint8_t *ql = b, *qh = b + 128;
    const int8_t *sc = (const int8_t *)(b + 192);
    for (int k = 0; k < 256; k += 128) {
      for (int l = 0; l < 32; ++l) {
        int is = l / 16;
        int8_t q1 = (int8_t)((ql[l + 0] & 0xf) | (((qh[l] >> 0) & 3) << 4)) - 32;
        int8_t q2 = (int8_t)((ql[l + 32] & 0xf) | (((qh[l] >> 2) & 3) << 4)) - 32;
        int8_t q3 = (int8_t)((ql[l + 0] >> 4) | (((qh[l] >> 4) & 3) << 4)) - 32;
        int8_t q4 = (int8_t)((ql[l + 32] >> 4) | (((qh[l] >> 6) & 3) << 4)) - 32;
        y[l + 0] = d * sc[is + 0] * q1;
        y[l + 32] = d * sc[is + 2] * q2;
        y[l + 64] = d * sc[is + 4] * q3;
        y[l + 96] = d * sc[is + 6] * q4;
      }
      y += 128;
      ql += 64;
      qh += 32;
      sc += 8;
    }
  }
  return st;
}

/* the non-linear 4-bit grid of IQ4_NL / IQ4_XS (ggml's kvalues_iq4nl) */
static const int8_t IQ4NL[16] = {-127, -104, -83, -65, -49, -35, -22, -10, 1, 13, 25, 38, 53, 69, 89, 113};

/* IQ4_NL (18 bytes): f16 d, qs[16]; element j = d * grid[low nibble of qs[j]], j + 16 the high nibble */
wgllm_status wc_iq4_nl_dequant(const void *src, float *dst, int64_t n, llm_err *err) {
  wgllm_status st = blocks_ok("IQ4_NL", n, 32, err);
  const uint8_t *b = src;
  for (int64_t i = 0; !st && i < n / 32; i++, b += 18) {
    float d = h2f(b);
    for (int j = 0; j < 16; ++j) {
      dst[i * 32 + j] = d * IQ4NL[b[2 + j] & 0xf];
      dst[i * 32 + j + 16] = d * IQ4NL[b[2 + j] >> 4];
    }
  }
  return st;
}

/* IQ4_XS (136 bytes): f16 d, u16 scales_h, scales_l[4] (8 x 6-bit sub-block scales), qs[128] */
wgllm_status wc_iq4_xs_dequant(const void *src, float *dst, int64_t n, llm_err *err) {
  wgllm_status st = blocks_ok("IQ4_XS", n, 256, err);
  const uint8_t *b = src;
  float *y = dst;
  for (int64_t i = 0; !st && i < n / 256; i++, b += 136) {
    float d = h2f(b);
    uint16_t scales_h = ld16(b + 2);
    const uint8_t *scales_l = b + 4, *qs = b + 8;
    for (int ib = 0; ib < 8; ++ib) {
      int ls = ((scales_l[ib / 2] >> 4 * (ib % 2)) & 0xf) | (((scales_h >> 2 * ib) & 3) << 4);
      float dl = d * (float)(ls - 32);
      for (int j = 0; j < 16; ++j) {
        y[j + 0] = dl * IQ4NL[qs[j] & 0xf];
        y[j + 16] = dl * IQ4NL[qs[j] >> 4];
      }
      y += 32;
      qs += 16;
    }
  }
  return st;
}

/* MXFP4 (17 bytes): e (e8m0), qs[16]; element j = 2^(e - 128) * grid[low nibble of qs[j]], j + 16 the high nibble
   (ggml's kvalues_mxfp4: the e2m1 values doubled, hence e - 128 where OCP's scale is 2^(e - 127)) */
static const int8_t MXFP4[16] = {0, 1, 2, 3, 4, 6, 8, 12, 0, -1, -2, -3, -4, -6, -8, -12};

float wc_e8m0_half(uint8_t e) { /* 2^(e - 128) exactly, as ggml's GGML_E8M0_TO_FP32_HALF (subnormal below e 2) */
  uint32_t bits = e < 2 ? 0x00200000u << e : (uint32_t)(e - 1) << 23;
  float f;
  memcpy(&f, &bits, 4);
  return f;
}

wgllm_status wc_mxfp4_dequant(const void *src, float *dst, int64_t n, llm_err *err) {
  wgllm_status st = blocks_ok("MXFP4", n, 32, err);
  const uint8_t *b = src;
  for (int64_t i = 0; !st && i < n / 32; i++, b += 17) {
    float d = wc_e8m0_half(b[0]);
    for (int j = 0; j < 16; j++) {
      dst[i * 32 + j] = d * MXFP4[b[1 + j] & 0xf];
      dst[i * 32 + j + 16] = d * MXFP4[b[1 + j] >> 4];
    }
  }
  return st;
}
