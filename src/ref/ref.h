/* CPU references of every GPU op: plain loops in f32/f64, used only by the tests. */
#ifndef WGLLM_REF_H
#define WGLLM_REF_H
#include <stddef.h>
#include <stdint.h>

float ref_f16_to_f32(uint16_t h);
uint16_t ref_f32_to_f16(float f); /* round to nearest even */

void ref_add(const float *a, const float *b, float *out, size_t n, size_t nb);
void ref_mul(const float *a, const float *b, float *out, size_t n, size_t nb);
/* out[i] = (a[i] + b[i % nb]) * c */
void ref_add_scale(const float *a, const float *b, float *out, size_t n, size_t nb, float c);
/* out[i] = cap * tanh(a[i] / cap) */
void ref_softcap(const float *a, float *out, size_t n, float cap);
void ref_rms_norm(const float *x, const float *w, float *out, size_t n, size_t rows, size_t in_stride,
                  size_t out_stride, float eps, float w_offset);
/* x: [n_tokens][token_stride]; cs: [max_pos][rot/2][2] */
void ref_rope(float *x, const uint32_t *pos, const float *cs, size_t n_tokens, size_t n_heads, size_t head_dim,
              size_t rot_dim, size_t token_stride, int mode, size_t max_pos);
/* rope computed directly from frequencies in double (independent of the table) */
void ref_rope_direct(float *x, const uint32_t *pos, const float *inv_freq, size_t n_tokens, size_t n_heads,
                     size_t head_dim, size_t rot_dim, size_t token_stride, int mode);
void ref_softmax(const float *x, float *out, size_t n, size_t rows, float scale);
void ref_argmax(const float *x, uint32_t *out, size_t n, size_t rows);
/* op_logit_mask / op_logit_bias in place: x[i] = -inf where mask's bit i is clear (mask may be NULL); then x[ids[k]] +=
   bias[k] for k < n_bias with ids[k] < n */
/* op_logprobs: lp_id = x[id] - logsumexp(x) (in double); the top_n (ids, lps) by value, lower ids first on ties;
   returns the count written (min(top_n, n)) */
uint32_t ref_logprobs(const float *x, size_t n, uint32_t id, uint32_t top_n, float *lp_id, uint32_t *top_ids,
                      float *top_lps);
void ref_logit_filter(float *x, size_t n, const uint32_t *mask, const uint32_t *ids, const float *bias, size_t n_bias);
/* op_pool_rows + op_pool_finish over all the rows at once: mode 0 the mean of x's rows [rows][D], 1 the last row, 2
   the first (in double), then divided by the L2 norm (at least 1e-12) when normalize.   out: [D] */
void ref_pool(const float *x, size_t rows, size_t D, int mode, int normalize, float *out);
/* y[M][N] = x[M][K] . w[N][K]^T + bias (bias may be NULL); accumulates in double */
/* The fast precision's activations (kernels/quantize_q8.wgsl): per block of 32 of each row of x [M][K], d = amax / 127,
   q = round-half-even(x * 127 / amax) in -127..127 (0 for a block of zeros), s = d * sum q. q [M][K], d and s
   [M][K/32]. */
void ref_quantize_q8(const float *x, size_t M, size_t K, int8_t *q, float *d, float *s);
void ref_linear(const float *x, const float *w, const float *bias, float *y, size_t M, size_t N, size_t K);
void ref_embedding(const uint32_t *ids, const float *table, float *out, size_t n_tokens, size_t D, float scale);
/* out[r][i] = act(x[r*stride + g_off + i]) * u[r*stride + u_off + i]; act 0 SiLU, 1 GELU-tanh */
void ref_glu(const float *x, const float *u, float *out, size_t n, size_t rows, size_t stride, size_t g_off,
             size_t u_off, int act);
/* the same with u's rows strided by u_stride */
void ref_glu_strided(const float *x, const float *u, float *out, size_t n, size_t rows, size_t stride, size_t g_off,
                     size_t u_stride, size_t u_off, int act);
/* Mixture of experts (src/ref/ref_moe.c; the ops of src/ops/op_moe.c). ref_moe_route: per token of logits [T][E]
   the k largest logits, largest first, the lower index first on ties, into ids [T][k]; weights [T][k] by mode
   (op_moe_norm: 0 softmax over all E, 1 that renormalised over the k, 2 softmax over the k; in double), times
   scale[id] when scale is set. ref_moe_lists: counts [E], offsets [E + 1] and each expert's pairs q = t * k + j in
   ascending order, entries [T * k] (ids past E - 1 count as E - 1). ref_moe_act: the GLU of op_moe_act (0 SiLU, 1
   GELU-tanh, 2 gpt-oss's clamped SwiGLU). ref_moe_linear: y [T * k][N] for each pair q with expert e = ids[q]:
   W [E][rows][K] (rows 2N with glu: gate rows then up rows) times x's row q / k (x_pair 0) or q (x_pair 1), plus
   bias [E][rows] (may be NULL), through ref_moe_act with glu; double sums. ref_moe_combine: out [T][D] = (out +)
   sum_j w[t][j] y[t * k + j] (accumulate: out's values added). */
void ref_moe_route(const float *logits, size_t T, size_t E, size_t k, int mode, const float *scale, uint32_t *ids,
                   float *weights);
void ref_moe_lists(const uint32_t *ids, size_t T, size_t k, size_t E, uint32_t *counts, uint32_t *offsets,
                   uint32_t *entries);
double ref_moe_act(int act, double g, double u, double alpha, double limit);
void ref_moe_linear(const float *x, int x_pair, const float *w, const float *bias, const uint32_t *ids, size_t T,
                    size_t k, size_t E, size_t N, size_t K, int glu, int act, float alpha, float limit, float *y);
void ref_moe_combine(const float *y, const float *w, float *out, size_t T, size_t k, size_t D, int accumulate);
/* Attention over caches [n_kv][ctx][D] of queries q[t*q_stride + q_off + h*D] at positions pos[t]; sinks [H] (or
   NULL): each head's sink logit in the softmax's denominator (gpt-oss), as transformers' eager_attention_forward. */
void ref_attention(const float *q, size_t q_stride, size_t q_off, const float *kc, const float *vc, const uint32_t *pos,
                   float *out, size_t out_stride, size_t T, size_t H, size_t KVH, size_t D, size_t ctx, uint32_t window,
                   float scale, float softcap, const float *sinks);
/* The sampler's reference: same order and thresholds, double sums. ring: recent tokens (n_ring).
   draw: the counter value used for the RNG. Returns the token. logits are modified like the kernel does. */
uint32_t ref_sample(float *logits, uint32_t V, float temp, uint32_t top_k, float top_p, float min_p, float rep_penalty,
                    const uint32_t *ring, uint32_t n_ring, uint32_t seed, uint32_t draw,
                    uint8_t *allowed /* [V] or NULL: 1 where a token may be drawn */);
/* The sampler's penalties over the ring's distinct tokens, in llama.cpp's order: the repetition penalty (x / r
   above 0, x * r otherwise), then x - (frequency * count + presence), count the token's occurrences in the ring.
   Nothing when all are off. ref_sample applies this with presence and frequency 0 (rep_penalty 1: nothing). */
void ref_penalties(float *logits, uint32_t V, float rep_penalty, float presence, float frequency, const uint32_t *ring,
                   uint32_t n_ring);
uint32_t ref_pcg(uint32_t v);
#endif
