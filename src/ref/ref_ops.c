/* CPU reference implementations (see ref.h). Deliberately plain: loops, double accumulation. */
#include "ref.h"
#include <math.h>
#include <stdlib.h>
#include <string.h>

float ref_f16_to_f32(uint16_t h) {
  uint32_t s = (uint32_t)(h >> 15) << 31, e = (h >> 10) & 31, m = h & 1023, bits;
  if (e == 0) {
    if (m == 0)
      bits = s;
    else { /* subnormal */
      float f = ldexpf((float)m, -24);
      memcpy(&bits, &f, 4);
      bits |= s;
    }
  } else if (e == 31)
    bits = s | 0x7f800000u | (m << 13);
  else
    bits = s | ((e + 112) << 23) | (m << 13);
  float f;
  memcpy(&f, &bits, 4);
  return f;
}

uint16_t ref_f32_to_f16(float f) {
  uint32_t x;
  memcpy(&x, &f, 4);
  uint32_t s = (x >> 16) & 0x8000, e = (x >> 23) & 255, m = x & 0x7fffff;
  if (e == 255) return (uint16_t)(s | 0x7c00 | (m ? 0x200 : 0));
  int ee = (int)e - 127 + 15;
  if (ee >= 31) return (uint16_t)(s | 0x7c00);
  if (ee <= 0) {
    if (ee < -10) return (uint16_t)s;
    m |= 0x800000;
    int shift = 14 - ee;
    uint32_t hm = m >> shift, rem = m & ((1u << shift) - 1), half = 1u << (shift - 1);
    if (rem > half || (rem == half && (hm & 1))) hm++;
    return (uint16_t)(s | hm);
  }
  uint32_t hm = m >> 13, rem = m & 0x1fff;
  uint32_t h = s | ((uint32_t)ee << 10) | hm;
  if (rem > 0x1000 || (rem == 0x1000 && (hm & 1))) h++;
  return (uint16_t)h;
}

void ref_add(const float *a, const float *b, float *out, size_t n, size_t nb) {
  for (size_t i = 0; i < n; i++)
    out[i] = a[i] + b[i % nb];
}
void ref_mul(const float *a, const float *b, float *out, size_t n, size_t nb) {
  for (size_t i = 0; i < n; i++)
    out[i] = a[i] * b[i % nb];
}
void ref_add_scale(const float *a, const float *b, float *out, size_t n, size_t nb, float c) {
  for (size_t i = 0; i < n; i++)
    out[i] = (a[i] + b[i % nb]) * c;
}
void ref_softcap(const float *a, float *out, size_t n, float cap) {
  for (size_t i = 0; i < n; i++)
    out[i] = (float)(cap * tanh((double)a[i] / cap));
}

void ref_rms_norm(const float *x, const float *w, float *out, size_t n, size_t rows, size_t in_stride,
                  size_t out_stride, float eps, float w_offset) {
  for (size_t r = 0; r < rows; r++) {
    double s = 0;
    for (size_t i = 0; i < n; i++)
      s += (double)x[r * in_stride + i] * x[r * in_stride + i];
    double inv = 1.0 / sqrt(s / (double)n + eps);
    for (size_t i = 0; i < n; i++)
      out[r * out_stride + i] = (float)(x[r * in_stride + i] * inv * ((double)w[i] + w_offset));
  }
}

static void rotate(float *x, size_t base, size_t i, size_t half, int mode, double c, double s) {
  size_t i0 = base + i, i1 = base + i + half;
  if (mode == 1) {
    i0 = base + 2 * i;
    i1 = i0 + 1;
  }
  double a = x[i0], b = x[i1];
  x[i0] = (float)(a * c - b * s);
  x[i1] = (float)(b * c + a * s);
}

void ref_rope(float *x, const uint32_t *pos, const float *cs, size_t n_tokens, size_t n_heads, size_t head_dim,
              size_t rot_dim, size_t token_stride, int mode, size_t max_pos) {
  size_t half = rot_dim / 2;
  for (size_t t = 0; t < n_tokens; t++) {
    size_t p = pos[t] < max_pos ? pos[t] : max_pos - 1;
    for (size_t h = 0; h < n_heads; h++)
      for (size_t i = 0; i < half; i++)
        rotate(x, t * token_stride + h * head_dim, i, half, mode, cs[(p * half + i) * 2], cs[(p * half + i) * 2 + 1]);
  }
}

void ref_rope_direct(float *x, const uint32_t *pos, const float *inv_freq, size_t n_tokens, size_t n_heads,
                     size_t head_dim, size_t rot_dim, size_t token_stride, int mode) {
  size_t half = rot_dim / 2;
  for (size_t t = 0; t < n_tokens; t++)
    for (size_t h = 0; h < n_heads; h++)
      for (size_t i = 0; i < half; i++) {
        double ang = (double)pos[t] * inv_freq[i];
        rotate(x, t * token_stride + h * head_dim, i, half, mode, cos(ang), sin(ang));
      }
}

void ref_softmax(const float *x, float *out, size_t n, size_t rows, float scale) {
  for (size_t r = 0; r < rows; r++) {
    double m = -INFINITY, s = 0;
    for (size_t i = 0; i < n; i++)
      m = fmax(m, (double)scale * x[r * n + i]);
    for (size_t i = 0; i < n; i++)
      s += exp((double)scale * x[r * n + i] - m);
    for (size_t i = 0; i < n; i++)
      out[r * n + i] = (float)(exp((double)scale * x[r * n + i] - m) / s);
  }
}

void ref_argmax(const float *x, uint32_t *out, size_t n, size_t rows) {
  for (size_t r = 0; r < rows; r++) {
    size_t b = 0;
    for (size_t i = 1; i < n; i++)
      if (x[r * n + i] > x[r * n + b]) b = i;
    out[r] = (uint32_t)b;
  }
}

void ref_quantize_q8(const float *x, size_t M, size_t K, int8_t *q, float *d, float *s) {
  for (size_t b = 0; b < M * (K / 32); b++) {
    const float *xb = x + b * 32;
    float a = 0;
    for (int i = 0; i < 32; i++)
      a = fabsf(xb[i]) > a ? fabsf(xb[i]) : a;
    float id = a > 0 ? 127.0f / a : 0.0f;
    int sum = 0;
    for (int i = 0; i < 32; i++) {
      float r = nearbyintf(xb[i] * id); /* the default rounding mode: ties to even, as WGSL's round */
      r = r < -127 ? -127 : r > 127 ? 127 : r;
      q[b * 32 + i] = (int8_t)r;
      sum += (int)r;
    }
    d[b] = a / 127.0f;
    s[b] = d[b] * (float)sum;
  }
}

void ref_linear(const float *x, const float *w, const float *bias, float *y, size_t M, size_t N, size_t K) {
  for (size_t m = 0; m < M; m++)
    for (size_t n = 0; n < N; n++) {
      double s = bias ? bias[n] : 0.0;
      for (size_t k = 0; k < K; k++)
        s += (double)x[m * K + k] * w[n * K + k];
      y[m * N + n] = (float)s;
    }
}

void ref_embedding(const uint32_t *ids, const float *table, float *out, size_t n_tokens, size_t D, float scale) {
  for (size_t t = 0; t < n_tokens; t++)
    for (size_t i = 0; i < D; i++)
      out[t * D + i] = table[ids[t] * D + i] * scale;
}

void ref_glu_strided(const float *x, const float *u, float *out, size_t n, size_t rows, size_t stride, size_t g_off,
                     size_t u_stride, size_t u_off, int act) {
  for (size_t r = 0; r < rows; r++)
    for (size_t i = 0; i < n; i++) {
      double g = x[r * stride + g_off + i], a;
      if (act == 0)
        a = g / (1.0 + exp(-g));
      else
        a = 0.5 * g * (1.0 + tanh(0.7978845608028654 * (g + 0.044715 * g * g * g)));
      out[r * n + i] = (float)(a * u[r * u_stride + u_off + i]);
    }
}

void ref_glu(const float *x, const float *u, float *out, size_t n, size_t rows, size_t stride, size_t g_off,
             size_t u_off, int act) {
  ref_glu_strided(x, u, out, n, rows, stride, g_off, stride, u_off, act);
}

void ref_attention(const float *q, size_t q_stride, size_t q_off, const float *kc, const float *vc, const uint32_t *pos,
                   float *out, size_t out_stride, size_t T, size_t H, size_t KVH, size_t D, size_t ctx, uint32_t window,
                   float scale, float softcap, const float *sinks) {
  double *s = malloc(ctx * sizeof *s);
  for (size_t t = 0; t < T; t++)
    for (size_t h = 0; h < H; h++) {
      size_t kvh = h / (H / KVH), last = pos[t], first = 0;
      if (window && last + 1 > window) first = last + 1 - window;
      const float *qh = q + t * q_stride + q_off + h * D;
      double m = -INFINITY, sum = 0;
      for (size_t j = first; j <= last; j++) {
        double dot = 0;
        for (size_t d = 0; d < D; d++)
          dot += (double)qh[d] * kc[(kvh * ctx + j) * D + d];
        dot *= scale;
        if (softcap > 0) dot = softcap * tanh(dot / softcap);
        s[j] = dot;
        if (dot > m) m = dot;
      }
      if (sinks && sinks[h] > m) m = sinks[h];
      for (size_t j = first; j <= last; j++) {
        s[j] = exp(s[j] - m);
        sum += s[j];
      }
      if (sinks) sum += exp(sinks[h] - m);
      for (size_t d = 0; d < D; d++) {
        double a = 0;
        for (size_t j = first; j <= last; j++)
          a += s[j] * vc[(kvh * ctx + j) * D + d];
        out[t * out_stride + h * D + d] = (float)(a / sum);
      }
    }
  free(s);
}

void ref_logit_filter(float *x, size_t n, const uint32_t *mask, const uint32_t *ids, const float *bias, size_t n_bias) {
  for (size_t i = 0; mask && i < n; i++)
    if (!(mask[i >> 5] >> (i & 31) & 1u)) x[i] = -INFINITY;
  for (size_t k = 0; k < n_bias; k++)
    if (ids[k] < n) x[ids[k]] += bias[k];
}

uint32_t ref_logprobs(const float *x, size_t n, uint32_t id, uint32_t top_n, float *lp_id, uint32_t *top_ids,
                      float *top_lps) {
  double m = -INFINITY, s = 0;
  for (size_t i = 0; i < n; i++)
    if (x[i] > m) m = x[i];
  for (size_t i = 0; i < n; i++)
    s += exp((double)x[i] - m);
  double lse = m + log(s);
  *lp_id = (float)((double)x[id < n ? id : n - 1] - lse);
  uint32_t k = 0;
  for (; k < top_n && k < n; k++) { /* selection: the best not yet taken (taken: an id listed before) */
    long best = -1;
    for (size_t i = 0; i < n; i++) {
      int taken = 0;
      for (uint32_t q = 0; q < k && !taken; q++)
        taken = top_ids[q] == i;
      if (!taken && (best < 0 || x[i] > x[best])) best = (long)i;
    }
    top_ids[k] = (uint32_t)best;
    top_lps[k] = (float)((double)x[best] - lse);
  }
  return k;
}

void ref_pool(const float *x, size_t rows, size_t D, int mode, int normalize, float *out) {
  double ss = 0;
  double *v = malloc(D * sizeof *v);
  for (size_t d = 0; d < D; d++) {
    if (mode == 1)
      v[d] = x[(rows - 1) * D + d];
    else if (mode == 2)
      v[d] = x[d];
    else {
      double s = 0;
      for (size_t r = 0; r < rows; r++)
        s += x[r * D + d];
      v[d] = s / (double)rows;
    }
    ss += v[d] * v[d];
  }
  double norm = sqrt(ss) > 1e-12 ? sqrt(ss) : 1e-12;
  for (size_t d = 0; d < D; d++)
    out[d] = (float)(normalize ? v[d] / norm : v[d]);
  free(v);
}
