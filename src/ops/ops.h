/* GPU ops: each appends dispatch records to a recorder. Params structs mirror the WGSL Params blocks.
   Every encode function validates its shapes first and returns a status with the reason on the recorder
   (gpu_recorder_error). Tensors are gpu_views; shapes are given as arguments and noted per function. */
#ifndef WGLLM_OPS_H
#define WGLLM_OPS_H
#include "gpu.h"

/* Weight storage of a [N][K] matrix (or an embedding table [V][D]):
   F32/F16: data [N][K] (f16 as packed pairs);
   Q4 (q4gsw): data u32 [N][K/8] nibbles q at bits 4*(k%8), value (q-8)*scale; scales f16 [N][K/group];
   Q8: data int8 [N][K] (4 per u32), value q*scale; scales f16 [N][K/32]. */
typedef enum op_act { OP_ACT_SILU = 0, OP_ACT_GELU_TANH = 1 } op_act;
typedef enum op_wtype { OP_W_F32 = 0, OP_W_F16 = 1, OP_W_Q4 = 2, OP_W_Q8 = 3, OP_W_COUNT } op_wtype;
typedef struct op_weight {
  op_wtype type;
  gpu_view data;
  gpu_view scales; /* Q4 / Q8 only */
  uint32_t group;  /* Q4: 32, 64 or 128 */
} op_weight;
const char *op_wtype_variant(op_wtype t);
const char *op_wtype_name(op_wtype t);

/* Splits a 1-D count of workgroups into a grid that fits the device's per-dimension limit. */
void op_grid_1d(const gpu_recorder *rec, uint32_t groups, uint32_t grid[3]);
gpu_context *op_ctx(const gpu_recorder *rec);
wgllm_status op_fail(gpu_recorder *rec, wgllm_status s, const char *fmt, ...);
/* Checks a [N][K] weight's storage (group, scales) for the op named who; shared by the linear and embedding ops. */
wgllm_status op_check_weight(gpu_recorder *rec, const char *who, const op_weight *w, uint32_t N, uint32_t K);

/* out[i] = bits (a raw 32-bit pattern) for i < n.   out: [n] u32/f32 */
wgllm_status op_fill(gpu_recorder *rec, gpu_view out, uint32_t n, uint32_t bits);
wgllm_status op_fill_f32(gpu_recorder *rec, gpu_view out, uint32_t n, float value);

/* out = a + b / a * b with b broadcast when nb divides n.   a, out: [n]; b: [nb] */
wgllm_status op_add(gpu_recorder *rec, gpu_view a, gpu_view b, gpu_view out, uint32_t n, uint32_t nb);
/* a += b (the residual stream).   a: [n], b: [nb] */
wgllm_status op_add_inplace(gpu_recorder *rec, gpu_view a, gpu_view b, uint32_t n, uint32_t nb);
wgllm_status op_mul(gpu_recorder *rec, gpu_view a, gpu_view b, gpu_view out, uint32_t n, uint32_t nb);

/* RMSNorm. x: [rows][in_stride] (first n used), w: [n], out: [rows][out_stride]. */
wgllm_status op_rms_norm(gpu_recorder *rec, gpu_view x, gpu_view w, gpu_view out, uint32_t n, uint32_t rows,
                         uint32_t in_stride, uint32_t out_stride, float eps, float w_offset);
wgllm_status op_rms_norm_add(gpu_recorder *rec, gpu_view x, gpu_view w, gpu_view out, uint32_t n, uint32_t rows,
                             float eps, float w_offset);
/* Where rows of a tensor lie: row r starts at element off + r * stride, or with group > 0 at
   off + (r / group) * gstride + (r % group) * stride (e.g. the heads of each token inside a fused QKV row). */
typedef struct op_rows {
  uint32_t off, stride, group, gstride;
} op_rows;
/* RMSNorm of rows rows of n elements each, read and written where in and out say (per-head q/k norms, the last
   rows of a prefill). */
typedef struct op_rms_norm_params {
  uint32_t n, rows;
  op_rows in, out;
  float eps, w_offset;
} op_rms_norm_params;
wgllm_status op_rms_norm_rows(gpu_recorder *rec, gpu_view x, gpu_view w, gpu_view out, const op_rms_norm_params *p);

/* RoPE in place. x: [n_tokens][token_stride] holding n_heads heads of head_dim; pos: [n_tokens] u32;
   cs: [max_pos][rot_dim/2] (cos, sin) pairs. mode 0 half-split, 1 adjacent pairs. */
typedef enum op_rope_mode { OP_ROPE_HALF = 0, OP_ROPE_ADJACENT = 1 } op_rope_mode;
wgllm_status op_rope(gpu_recorder *rec, gpu_view x, gpu_view pos, gpu_view cs, uint32_t n_tokens, uint32_t n_heads,
                     uint32_t head_dim, uint32_t rot_dim, uint32_t token_stride, op_rope_mode mode, uint32_t max_pos);
/* The same with the heads of token t starting at x_off + t * token_stride (e.g. K inside a fused QKV row). */
wgllm_status op_rope_at(gpu_recorder *rec, gpu_view x, uint32_t x_off, gpu_view pos, gpu_view cs, uint32_t n_tokens,
                        uint32_t n_heads, uint32_t head_dim, uint32_t rot_dim, uint32_t token_stride, op_rope_mode mode,
                        uint32_t max_pos);
/* CPU side of RoPE: fills cs [max_pos][rot_dim/2][2] from inverse frequencies inv_freq [rot_dim/2]
   (angle = f32(pos) * inv_freq in f32, as transformers does; cos/sin in double). */
void op_rope_table(float *cs, const float *inv_freq, uint32_t rot_dim, uint32_t max_pos, float attn_scale);

/* Row softmax of scale * x. x, out: [rows][n] */
wgllm_status op_softmax(gpu_recorder *rec, gpu_view x, gpu_view out, uint32_t n, uint32_t rows, float scale);

/* Row argmax. x: [rows][n] f32, out: [rows] u32 */
wgllm_status op_argmax(gpu_recorder *rec, gpu_view x, gpu_view out, uint32_t n, uint32_t rows);

/* The fused q4gsw decode GEMV (kernels/gemv_q4.wgsl), for one token:
   y[n] (+)= s * W[n] . (x * (norm_w + norm_offset)) (+ bias), s = 1/rms(x) when norm_w is set;
   glu_half > 0: W holds gate rows then up rows (glu_half each), y[n] = act(gate_n) * up_n for n < glu_half.
   Needs q4gsw weights and K % 32 == 0 (op_gemv_q4_supports); x and norm_w bound at 16-byte multiples.
   op_matvec takes it for plain M = 1 products (op_matvec_generic is the generic kernel, for comparisons). */
/* How a shape runs: the specialised subgroup kernel (tuned) or the general one, and its thread layout: tk
   threads split K, tr thread-rows a workgroup, r rows a thread-row (so tr * r rows a workgroup), u steps
   unrolled (1..4, 0 means 4). */
typedef struct op_gemv_plan {
  int tuned;
  uint32_t tk, tr, r, u;
  uint32_t probe; /* bench_kernels only: leave a stage out (kernels/gemv_q4.wgsl PROBE); 0 in real use */
} op_gemv_plan;
typedef struct op_gemv_opts {
  gpu_view norm_w; /* [K] f32 or none */
  float eps, norm_offset;
  int accumulate;    /* y += result (residual) */
  uint32_t glu_half; /* 0 or the number of gate rows */
  op_act act;
  const op_gemv_plan *plan; /* NULL: op_gemv_q4_plan's choice (tests and the kernel bench set it) */
} op_gemv_opts;
int op_gemv_q4_supports(const gpu_context *ctx, const op_weight *w, uint32_t M, uint32_t K, int *use_subgroups);
/* The predicate that picks the specialised kernel: it names the shapes (rows, K, group) and the device
   capabilities (subgroups of one fixed size, workgroup limits) the tuned layout accepts; any other case takes
   the general kernel as a whole. n_out: output rows (gate rows with GLU). */
op_gemv_plan op_gemv_q4_plan(const gpu_context *ctx, uint32_t n_out, uint32_t K, uint32_t group, int glu);
wgllm_status op_gemv_q4(gpu_recorder *rec, gpu_view x, const op_weight *w, gpu_view bias, gpu_view y, uint32_t N,
                        uint32_t K, const op_gemv_opts *o);
/* Linear: y[M][N] = x[M][K] . W[N][K]^T (+ bias[N] when bias.buf). Routes M <= 4 to the GEMV. */
wgllm_status op_linear(gpu_recorder *rec, gpu_view x, const op_weight *w, gpu_view bias, gpu_view y, uint32_t M,
                       uint32_t N, uint32_t K);
/* The two routes, callable directly (tests check both on the same shapes). */
wgllm_status op_matvec(gpu_recorder *rec, gpu_view x, const op_weight *w, gpu_view bias, gpu_view y, uint32_t M,
                       uint32_t N, uint32_t K);
wgllm_status op_matmul(gpu_recorder *rec, gpu_view x, const op_weight *w, gpu_view bias, gpu_view y, uint32_t M,
                       uint32_t N, uint32_t K);
/* The generic GEMV kernel for every weight type (op_matvec without the q4 route). */
wgllm_status op_matvec_generic(gpu_recorder *rec, gpu_view x, const op_weight *w, gpu_view bias, gpu_view y, uint32_t M,
                               uint32_t N, uint32_t K);

/* Embedding gather. ids: [n_tokens] u32, table: [V][D] (any op_wtype), out: [n_tokens][D] */
wgllm_status op_embedding(gpu_recorder *rec, gpu_view ids, const op_weight *table, gpu_view out, uint32_t n_tokens,
                          uint32_t D, uint32_t V, float scale);

/* Gated MLP activation: out[r][i] = act(x[r*in_stride + g_off + i]) * u[r*in_stride + u_off + i].
   out: [rows][n]. act 0 SiLU, 1 GELU-tanh. */
wgllm_status op_glu(gpu_recorder *rec, gpu_view x, gpu_view u, gpu_view out, uint32_t n, uint32_t rows,
                    uint32_t in_stride, uint32_t g_off, uint32_t u_off, op_act act);

/* KV cache: f32 or f16 storage of one layer: [n_kv_head][ctx][head_dim]. */
typedef struct op_kv_layout {
  uint32_t n_kv_head, head_dim, ctx;
  int f16; /* storage f16 as packed pairs in u32 (no shader-f16 needed), math f32 */
} op_kv_layout;
/* Appends K and V of n_tokens new tokens at positions pos[t]. k/v rows: k[t*k_stride + k_off + i]. */
wgllm_status op_kv_write(gpu_recorder *rec, const op_kv_layout *kv, gpu_view k, uint32_t k_stride, uint32_t k_off,
                         gpu_view v, uint32_t v_stride, uint32_t v_off, gpu_view pos, gpu_view kcache, gpu_view vcache,
                         uint32_t n_tokens);
/* RoPE of Q and K and the KV append in one dispatch (kernels/rope_kv.wgsl). Q heads of token t at
   x[q_off + t*q_stride + h*head_dim] are rotated in place; K heads at k_off/k_stride are rotated and written to
   the caches with the V heads (from x when vsrc.buf is NULL, else from vsrc), at positions pos[t].
   Needs head_dim % 4 == 0 and rot_dim % 4 == 0. */
typedef struct op_rope_kv_params {
  uint32_t n_tokens, n_head, rot_dim, max_pos;
  op_rope_mode mode;
  uint32_t q_off, q_stride, k_off, k_stride, v_off, v_stride;
} op_rope_kv_params;
wgllm_status op_rope_kv(gpu_recorder *rec, const op_kv_layout *kv, const op_rope_kv_params *rp, gpu_view x,
                        gpu_view vsrc, gpu_view pos, gpu_view cs, gpu_view kcache, gpu_view vcache);

/* Causal GQA attention of n_tokens queries at positions pos[t] over the cache.
   q: [n_tokens][q_stride] heads at q_off + h*head_dim; out: [n_tokens][out_stride].
   window 0 = full; softcap 0 = none. */
typedef struct op_attn_params {
  uint32_t n_tokens, n_head, q_stride, q_off, out_stride, window;
  float scale, softcap;
  uint32_t max_len; /* decode: the recording serves positions < max_len, a power of two (0: the whole cache) */
  uint32_t chunk;   /* decode: keys a chunk, 16 to 128, a power of two (0: chosen from max_len) */
  int no_subgroups; /* decode: take the workgroup-memory reductions even where subgroups fit (tests, bench) */
  const struct op_attn_rope *rope; /* decode: RoPE and the cache append done by the attention (NULL: done) */
} op_attn_params;
/* RoPE of the new token's q and k and its K/V cache append, folded into flash-decoding (what op_rope_kv does,
   for one token, without a dispatch of its own). q's buffer holds the token's K heads at k_off; V heads at
   v_off of vsrc, or of q's buffer when vsrc.buf is NULL. Needs rot_dim % 4 == 0. */
typedef struct op_attn_rope {
  gpu_view cs, vsrc; /* cs: [max_pos][rot_dim/2] (cos, sin) */
  uint32_t rot_dim, max_pos, k_off, v_off;
  op_rope_mode mode;
} op_attn_rope;
wgllm_status op_attention(gpu_recorder *rec, const op_kv_layout *kv, const op_attn_params *a, gpu_view q,
                          gpu_view kcache, gpu_view vcache, gpu_view pos, gpu_view out);

/* Flash-decoding for one new token (a->n_tokens == 1): the cached sequence is split into chunks of 32 to 128
   keys across workgroups (kernels/attn_split.wgsl), then reduced (attn_reduce.wgsl). The chunk length and the
   grid come from a->max_len (a recording per length bucket, so short contexts launch few, short chunks); within
   it the grid depends on the position on the GPU: with indirect != NULL a one-thread kernel writes it into
   *indirect (3 x u32), else it is the worst case for max_len and extra workgroups exit at once.
   partial: op_attn_partial_bytes(). Accepts: head_dim % 4 == 0, n_rep = n_head / n_kv_head <= 16,
   n_rep * head_dim <= 4096. */
int op_attention_decode_supports(const op_kv_layout *kv, uint32_t n_head);
/* Bytes of partial results for any length bucket; chunk: 0 for the chosen chunk lengths, else a forced one. */
uint64_t op_attn_partial_bytes(const op_kv_layout *kv, uint32_t n_head, uint32_t chunk);
wgllm_status op_attention_decode(gpu_recorder *rec, const op_kv_layout *kv, const op_attn_params *a, gpu_view q,
                                 gpu_view kcache, gpu_view vcache, gpu_view pos, gpu_view partial,
                                 const gpu_view *indirect, gpu_view out);

/* Sampling. state: u32 [4 + OP_SAMPLE_RING_MAX]: draw counter, ring fill, ring index, last token, ring of recent
   tokens (the repetition-penalty window, written by the kernel). logits [V] are modified (penalty). out[0] gets
   the token. temperature <= 0 is greedy. top_k 0 = off, top_p 1 = off, min_p 0 = off, rep_penalty 1 = off.
   Tokens more than 30 nats (scaled) below the best are not candidates: they carry < 1e-8 of the probability.
   The thresholds are found exactly over the whole vocabulary by radix selects spread over 2048-token blocks, so
   the cost does not depend on the distribution (flat logits included); see kernels/sample_prep.wgsl. */
#define OP_SAMPLE_RING_MAX 256
typedef struct op_sample_params {
  float temperature, top_p, min_p, rep_penalty;
  uint32_t top_k, ring_cap, seed;
} op_sample_params;
/* work: op_sample_work_bytes() of scratch (block maxima, threshold histograms, per-block mass prefix sums; about
   320 KiB). Vocabularies up to 524288. */
uint64_t op_sample_work_bytes(void);
/* the number of dispatches op_sample records for these settings: 2 greedy; sampling 3, plus 3 with top-k
   (0 < top_k < V) and 3 with top-p (0 < top_p < 1) */
uint32_t op_sample_dispatches(const op_sample_params *sp, uint32_t V);
/* work word holding the last draw's threshold order key (tokens with key >= it were eligible; tests read it) */
#define OP_SAMPLE_WORK_THRESHOLD 40
wgllm_status op_sample(gpu_recorder *rec, const op_sample_params *sp, gpu_view logits, gpu_view state, gpu_view out,
                       gpu_view work, uint32_t V);
#endif
