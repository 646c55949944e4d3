/* CPU reference of the sampler (kernels/sample.wgsl): the same order (penalties, temperature, top-k, top-p,
   min-p), the same order keys and RNG, sums in double. */
#include "ref.h"
#include <math.h>
#include <stdlib.h>
#include <string.h>

uint32_t ref_pcg(uint32_t v) {
  uint32_t s = v * 747796405u + 2891336453u;
  uint32_t w = ((s >> ((s >> 28u) + 4u)) ^ s) * 277803737u;
  return (w >> 22u) ^ w;
}

static uint32_t key_of(float f) {
  uint32_t u;
  memcpy(&u, &f, 4);
  return (u & 0x80000000u) ? ~u : (u | 0x80000000u);
}

static int cmp_desc(const void *a, const void *b) {
  uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
  return x < y ? 1 : x > y ? -1 : 0;
}

typedef struct key_mass {
  uint32_t key;
  double mass;
} key_mass;

static int cmp_key_mass_desc(const void *a, const void *b) {
  uint32_t x = ((const key_mass *)a)->key, y = ((const key_mass *)b)->key;
  return x < y ? 1 : x > y ? -1 : 0;
}

void ref_penalties(float *logits, uint32_t V, float rep_penalty, float presence, float frequency, const uint32_t *ring,
                   uint32_t n_ring) {
  if (rep_penalty == 1.0f && presence == 0 && frequency == 0) return;
  for (uint32_t i = 0; i < n_ring; i++) {
    int dup = 0;
    for (uint32_t j = 0; j < i; j++)
      dup |= ring[j] == ring[i];
    if (dup || ring[i] >= V) continue;
    uint32_t count = 0;
    for (uint32_t j = i; j < n_ring; j++)
      count += ring[j] == ring[i];
    float x = logits[ring[i]];
    float r = x > 0 ? x / rep_penalty : x * rep_penalty;
    logits[ring[i]] = r - ((float)count * frequency + presence);
  }
}

uint32_t ref_sample(float *logits, uint32_t V, float temp, uint32_t top_k, float top_p, float min_p, float rep_penalty,
                    const uint32_t *ring, uint32_t n_ring, uint32_t seed, uint32_t draw, uint8_t *allowed) {
  ref_penalties(logits, V, rep_penalty, 0, 0, ring, n_ring);
  if (temp <= 0) {
    uint32_t b = 0;
    for (uint32_t i = 1; i < V; i++)
      if (key_of(logits[i]) > key_of(logits[b])) b = i;
    if (allowed) {
      memset(allowed, 0, V);
      allowed[b] = 1;
    }
    return b;
  }
  float *s = malloc(V * sizeof *s);
  uint32_t *keys = malloc(V * sizeof *keys);
  uint32_t kmax = 0;
  for (uint32_t i = 0; i < V; i++) {
    s[i] = logits[i] / temp;
    keys[i] = key_of(s[i]);
    if (keys[i] > kmax) kmax = keys[i];
  }
  uint32_t mb = (kmax & 0x80000000u) ? (kmax & 0x7fffffffu) : ~kmax;
  float m;
  memcpy(&m, &mb, 4);
  uint32_t thr = 0;
  uint32_t *sorted = malloc(V * sizeof *sorted);
  memcpy(sorted, keys, V * sizeof *sorted);
  qsort(sorted, V, sizeof *sorted, cmp_desc);
  if (top_k > 0 && top_k < V && sorted[top_k - 1] > thr) thr = sorted[top_k - 1];
  if (top_p > 0 && top_p < 1) {
    double z = 0;
    for (uint32_t i = 0; i < V; i++)
      if (keys[i] >= thr) z += exp((double)s[i] - m);
    double target = top_p * z, acc = 0;
    /* walk distinct keys from the top: the largest t with mass(key >= t) >= target. The tokens are sorted by key
       once and the mass accumulated along (a sum over all tokens per distinct key was quadratic on flat logits) */
    uint32_t n_kept = 0;
    key_mass *km = malloc(V * sizeof *km);
    for (uint32_t i = 0; i < V; i++)
      if (keys[i] >= thr) km[n_kept++] = (key_mass){keys[i], exp((double)s[i] - m)};
    qsort(km, n_kept, sizeof *km, cmp_key_mass_desc);
    for (uint32_t r = 0; r < n_kept;) {
      uint32_t k = km[r].key;
      while (r < n_kept && km[r].key == k)
        acc += km[r++].mass;
      if (acc >= target) {
        if (k > thr) thr = k;
        break;
      }
    }
    free(km);
  }
  if (min_p > 0) {
    uint32_t k = key_of(m + logf(min_p));
    if (k > kmax) k = kmax;
    if (k > thr) thr = k;
  }
  double total = 0;
  for (uint32_t i = 0; i < V; i++)
    if (keys[i] >= thr) total += exp((double)s[i] - m);
  uint32_t r = ref_pcg(seed ^ ref_pcg(draw + 0x9e3779b9u));
  double u = (double)(r >> 8) * (1.0 / 16777216.0) * total, acc = 0;
  uint32_t pick = V;
  for (uint32_t i = 0; i < V; i++)
    if (keys[i] >= thr) {
      acc += exp((double)s[i] - m);
      pick = i;
      if (u < acc) break;
    }
  if (allowed)
    for (uint32_t i = 0; i < V; i++)
      allowed[i] = keys[i] >= thr;
  free(s);
  free(keys);
  free(sorted);
  return pick;
}
