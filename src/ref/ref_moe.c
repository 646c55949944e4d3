/* CPU references of the mixture-of-experts ops (src/ops/op_moe.c): router top-k, per-expert lists, the expert
   linear with its GLU, the weighted combine. Plain loops in double, for the tests. */
#include "ref.h"
#include <math.h>
#include <stdlib.h>
#include <string.h>

void ref_moe_route(const float *logits, size_t T, size_t E, size_t k, int mode, const float *scale, uint32_t *ids,
                   float *weights) {
  char *taken = malloc(E);
  for (size_t t = 0; t < T; t++) {
    const float *l = logits + t * E;
    memset(taken, 0, E);
    for (size_t j = 0; j < k; j++) { /* the largest not taken, the lower index on ties (strict >) */
      size_t best = E;
      for (size_t e = 0; e < E; e++)
        if (!taken[e] && (best == E || l[e] > l[best])) best = e;
      taken[best] = 1;
      ids[t * k + j] = (uint32_t)best;
    }
    double m = l[ids[t * k]], s_all = 0, s_k = 0, v[64];
    for (size_t e = 0; e < E; e++)
      s_all += exp((double)l[e] - m);
    for (size_t j = 0; j < k; j++) {
      v[j] = exp((double)l[ids[t * k + j]] - m);
      if (mode != 2) v[j] /= s_all;
      s_k += v[j];
    }
    for (size_t j = 0; j < k; j++) {
      double r = mode != 0 ? v[j] / s_k : v[j];
      if (scale) r *= scale[ids[t * k + j]];
      weights[t * k + j] = (float)r;
    }
  }
  free(taken);
}

void ref_moe_lists(const uint32_t *ids, size_t T, size_t k, size_t E, uint32_t *counts, uint32_t *offsets,
                   uint32_t *entries) {
  size_t np = T * k;
  memset(counts, 0, E * sizeof *counts);
  for (size_t q = 0; q < np; q++)
    counts[ids[q] < E ? ids[q] : E - 1]++;
  uint32_t o = 0;
  for (size_t e = 0; e < E; e++) {
    offsets[e] = o;
    o += counts[e];
  }
  offsets[E] = o;
  uint32_t *pos = malloc(E * sizeof *pos);
  memcpy(pos, offsets, E * sizeof *pos);
  for (size_t q = 0; q < np; q++)
    entries[pos[ids[q] < E ? ids[q] : E - 1]++] = (uint32_t)q;
  free(pos);
}

double ref_moe_act(int act, double g, double u, double alpha, double limit) {
  if (act == 0) return g / (1.0 + exp(-g)) * u;
  if (act == 1) {
    double z = 0.7978845608028654 * (g + 0.044715 * g * g * g);
    return 0.5 * g * (1.0 + tanh(z)) * u;
  }
  double gc = g < limit ? g : limit, uc = u < -limit ? -limit : u > limit ? limit : u;
  return (uc + 1.0) * (gc / (1.0 + exp(-alpha * gc)));
}

void ref_moe_linear(const float *x, int x_pair, const float *w, const float *bias, const uint32_t *ids, size_t T,
                    size_t k, size_t E, size_t N, size_t K, int glu, int act, float alpha, float limit, float *y) {
  size_t rows = glu ? 2 * N : N;
  for (size_t q = 0; q < T * k; q++) {
    size_t e = ids[q] < E ? ids[q] : E - 1;
    const float *xr = x + (x_pair ? q : q / k) * K;
    for (size_t n = 0; n < N; n++) {
      double g = 0, u = 0;
      const float *wg = w + (e * rows + n) * K, *wu = w + (e * rows + N + n) * K;
      for (size_t kk = 0; kk < K; kk++)
        g += (double)xr[kk] * wg[kk];
      if (glu)
        for (size_t kk = 0; kk < K; kk++)
          u += (double)xr[kk] * wu[kk];
      if (bias) {
        g += bias[e * rows + n];
        if (glu) u += bias[e * rows + N + n];
      }
      y[q * N + n] = (float)(glu ? ref_moe_act(act, g, u, alpha, limit) : g);
    }
  }
}

void ref_moe_combine(const float *y, const float *w, float *out, size_t T, size_t k, size_t D, int accumulate) {
  for (size_t t = 0; t < T; t++)
    for (size_t n = 0; n < D; n++) {
      double s = 0;
      for (size_t j = 0; j < k; j++)
        s += (double)w[t * k + j] * y[(t * k + j) * D + n];
      out[t * D + n] = (float)(accumulate ? s + out[t * D + n] : s);
    }
}
