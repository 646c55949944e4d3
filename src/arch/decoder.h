/* The decoder forward passes as ops appended to a recorder, for prefill (T tokens) and for the recorded decode
   step (T = 1): what every family shares (activation scratch, the KV cache, RoPE tables, the attention and MLP
   blocks in blocks.c) and one forward function per family (arch_llama.c: Llama 2/3.x, Mistral, Qwen2/3,
   Gemma 3; arch_gemma4.c: Gemma 4). Every per-layer width comes from the llm_layer_* accessors. */
#ifndef WGLLM_DECODER_H
#define WGLLM_DECODER_H
#include "model.h"

/* Activation buffers for up to cap tokens (from the pool, released by llm_scratch_release). */
typedef struct llm_scratch {
  uint32_t cap;             /* tokens */
  uint32_t logit_rows;      /* rows of logits it can hold */
  gpu_buffer *ids;          /* [cap] u32 token ids (input) */
  gpu_buffer *pos;          /* [cap] u32 positions (input) */
  gpu_buffer *x;            /* [cap][n_embd] residual stream */
  gpu_buffer *xn;           /* [cap][n_embd] normed */
  gpu_buffer *qkv;          /* [cap][q + 2*kv] fused projection output (widest layer) */
  gpu_buffer *qk2;          /* [cap][q + 2*kv]: q | k | v after the per-head norms (Qwen3, Gemma) */
  gpu_buffer *attn;         /* [cap][q] */
  gpu_buffer *proj;         /* [cap][n_embd] */
  gpu_buffer *gu;           /* [cap][2*n_ff] gate and up (widest layer) */
  gpu_buffer *h;            /* [cap][n_ff] */
  gpu_buffer *ple;          /* [cap][n_layer*ple_dim] Gemma 4's per-layer inputs (NULL without) */
  gpu_buffer *ple_tok;      /* [cap][n_layer*ple_dim] their embedding-table part */
  gpu_buffer *ple_ctx;      /* [cap][n_layer*ple_dim] their projection part */
  gpu_buffer *ple_h;        /* [cap][ple_dim] a layer's gate */
  gpu_buffer *logits;       /* [logit_rows][n_vocab] */
  gpu_buffer *xq;           /* a layer input as int8 blocks (fast precision only: llm_scratch_add_fast) */
  gpu_buffer *x16, *w16;    /* a layer input and a weight as f16 for the tensor cores (fast prefill scratch where
                               subgroup matrices exist; NULL elsewhere) */
  gpu_buffer *attn_partial; /* flash-decoding chunks (decode scratch only) */
  gpu_buffer *attn_args;    /* [3] u32 indirect grid of the chunk pass */
} llm_scratch;

/* How flash-decoding sizes its chunk grid: the worst case for the recording's length bucket with early exit
   (the default: measured faster, PERF.md), or GPU-written indirect arguments. */
typedef enum llm_attn_grid { LLM_ATTN_GRID_WORST = 0, LLM_ATTN_GRID_INDIRECT } llm_attn_grid;

/* How a forward pass is recorded. */
typedef struct llm_forward_opts {
  uint32_t max_len;        /* a decode step (T = 1) serves positions below it: a power of two, or 0 for the cache */
  int unfused;             /* one token through the plain per-op path, not the fused kernels (comparisons) */
  llm_attn_grid attn_grid; /* flash-decoding's grid */
  int fast; /* linear layers of block-quantized weights on int8 activations (op_linear_fast, op_gemv_fast), where
               the scratch has its xq (llm_scratch_add_fast) */
} llm_forward_opts;

/* Tokens a prefill pass takes by default: 1024 (a 2048-token prompt of the 8B shape: time to first token 1.19 s
   against 1.21 with 512 on the H200; PERF.md), 512 for models with sliding-window layers (their ring caches
   keep window + chunk slots), halved while a token's widest activation times the chunk would exceed one
   storage binding. */
uint32_t llm_prefill_chunk(const gpu_context *gpu, const llm_hparams *hp);
/* The most tokens a prefill pass can take on this device (every activation within one storage binding). */
uint32_t llm_prefill_chunk_max(const gpu_context *gpu, const llm_hparams *hp);
wgllm_status llm_scratch_acquire(gpu_context *gpu, const llm_hparams *hp, uint32_t cap, uint32_t logit_rows,
                                 llm_scratch *s, char *err, size_t errlen);
struct llm_kv_cache;
/* Adds the fast precision's int8 activation buffer (op_q8_act_bytes for the widest layer input, the scratch's
   tokens); without it llm_linear and the fused GEMVs run exact. A scratch of more tokens than a GEMV takes, on a
   device with subgroup matrices, also gets x16 and w16 (op_f16_bytes of the widest layer input and of the largest
   projection, within one storage binding) for the f16-operand GEMM; a projection larger than w16 dequantizes in
   the GEMM's tiles instead (op_linear_fast). */
wgllm_status llm_scratch_add_fast(gpu_context *gpu, const llm_hparams *hp, llm_scratch *s, char *err, size_t errlen);
/* Adds the flash-decoding buffers for a cache (decode scratch): room for its largest layer. */
wgllm_status llm_scratch_add_decode(gpu_context *gpu, const llm_hparams *hp, const struct llm_kv_cache *kv,
                                    llm_scratch *s, char *err, size_t errlen);
void llm_scratch_release(gpu_context *gpu, llm_scratch *s);

/* KV cache: per owning layer K and V [n_kv][slots][hd] in its own layout, f32 or f16; a KV-shared layer has no
   buffers of its own (NULL) and reads its source layer's (llm_layer_kv_source). A sliding-window layer whose
   window plus a prefill chunk is shorter than the context keeps only that many slots, as a ring (position p in
   slot p % slots): at least window + chunk so a chunk's writes never overwrite a key one of its queries reads.
   A layer whose K is over the storage binding limit is bound in groups of KV heads (group_heads[l] a group, a
   divisor of its KV heads: [n_kv][slots][hd] is head-major, so a group is one contiguous range), and attention
   runs a dispatch a group over the query heads that read it (llm_kv_group). */
typedef struct llm_kv_cache {
  op_kv_layout *layout;  /* [n_layer]: layout[l].ctx is its slot count; a shared layer has its source's */
  uint32_t *group_heads; /* [n_layer]: KV heads a binding (layout[l].n_kv_head when the layer is one binding) */
  gpu_buffer **k, **v;   /* [n_layer] */
  uint32_t n_layer, ctx; /* ctx: positions the session serves */
  int f16;
  uint32_t ring_slack; /* how far back a rewind may go and keep every key it needs (UINT32_MAX: no ring) */
  uint64_t bytes;      /* over the owning layers */
} llm_kv_cache;
/* max_binding: the largest storage binding (0: the device's limit) */
wgllm_status llm_kv_cache_create(gpu_context *gpu, const llm_hparams *hp, uint32_t ctx, uint32_t chunk, int f16,
                                 uint64_t max_binding, llm_kv_cache *kv, char *err, size_t errlen);
/* Group j of layer l's cache (l its owner): the layout of its KV heads, their K and V ranges, and the first KV
   head; returns the number of groups (1 when the layer is one binding). */
uint32_t llm_kv_group(const llm_kv_cache *kv, uint32_t l, uint32_t j, op_kv_layout *layout, gpu_view *k, gpu_view *v,
                      uint32_t *first_head);
void llm_kv_cache_free(gpu_context *gpu, llm_kv_cache *kv);

/* RoPE tables for positions < max_pos: global from hp->inv_freq [rot_dim/2], local from hp->inv_freq_local
   [rot_dim_local/2] (the layers with rope_local) or NULL when there is none. */
typedef struct llm_rope_tables {
  gpu_buffer *global, *local;
} llm_rope_tables;
wgllm_status llm_rope_tables_create(gpu_context *gpu, const llm_hparams *hp, uint32_t max_pos, llm_rope_tables *out,
                                    char *err, size_t errlen);
void llm_rope_tables_free(gpu_context *gpu, llm_rope_tables *t);

/* Records the forward pass of T tokens (ids and pos already in the scratch's input buffers) writing the
   logits of the last n_logits tokens into scratch->logits. fo: NULL for the defaults. */
wgllm_status llm_encode_forward(gpu_recorder *rec, const llm_model *m, const llm_kv_cache *kv,
                                const llm_rope_tables *rope, const llm_scratch *s, uint32_t T, uint32_t n_logits,
                                const llm_forward_opts *fo);

/* Batched decode: T tokens of T different sessions in one pass. Everything but attention is the fused decode
   path with T tokens a GEMV (each weight read once for all); token i's RoPE, cache append and flash-decoding
   read what its own session holds. */
typedef struct llm_fwd_token {
  const llm_kv_cache *kv;
  const llm_rope_tables *rope;
  gpu_view pos;             /* [1] u32: the token's position (a binding of its own) */
  gpu_buffer *attn_partial; /* its session's flash-decoding scratch */
  gpu_buffer *attn_args;
  uint32_t max_len; /* its session's length bucket (0: the whole cache) */
  llm_attn_grid attn_grid;
} llm_fwd_token;
/* Whether the model's T-token batched pass can be recorded on this device (the fused GEMV for T tokens, RoPE in
   the attention, row offsets that are binding offsets); why not into why. */
int llm_batch_forward_ok(gpu_recorder *rec, const llm_model *m, uint32_t T, char *why, size_t whylen);
/* Records it for n sessions' tokens in T >= n rows (rows n.. pad the projections, so that a few token counts
   serve every batch: each is a pipeline to compile): ids [T] in s->ids, logits [T][n_vocab] into s->logits,
   rows n.. meaningless. */
wgllm_status llm_encode_forward_batch(gpu_recorder *rec, const llm_model *m, const llm_fwd_token *tokens, uint32_t n,
                                      uint32_t T, const llm_scratch *s, int fast);

/* ---- the blocks the families' forward passes are built from (blocks.c) ---- */
/* One forward pass being recorded: what every block reads. */
typedef struct llm_fwd {
  gpu_recorder *rec;
  const llm_model *m;
  const llm_kv_cache *kv;
  const llm_rope_tables *rope;
  const llm_scratch *s;
  uint32_t T;
  const llm_forward_opts *fo;
  int fused;                   /* one token (or a batch) through the fused decode kernels */
  const llm_fwd_token *tokens; /* batched decode: [n_seq] what each token's attention reads; NULL otherwise */
  uint32_t n_seq;              /* batched decode: the sessions' tokens, the first n_seq of the T rows (the rest
                                  pad the GEMVs to a token count of which a pipeline exists) */
} llm_fwd;
/* A linear layer y [M][N] = x [M][K] . W^T (+ bias): on int8 activations when the pass is fast and op_linear_fast's
   predicates take the weight (the integer-dot GEMV up to OP_GEMV_MAX_TOKENS rows, the GEMM above), else exact
   (op_linear). x's rows contiguous. */
wgllm_status llm_linear(const llm_fwd *f, gpu_view x, const op_weight *w, gpu_view bias, gpu_view y, uint32_t M,
                        uint32_t N, uint32_t K);
/* Whether every projection of the model takes the fused decode GEMV for T tokens (1 for a decode step). */
int llm_fused_decode_ok(gpu_recorder *rec, const llm_model *m, uint32_t T);
/* x += attention(norm(x)) of layer l: projection, per-head norms, RoPE, KV append (owning layers), attention
   over the source layer's cache, output projection, Gemma's post-attention norm. */
wgllm_status llm_block_attention(const llm_fwd *f, uint32_t l);
/* x += MLP(norm(x)) of layer l (gated, SiLU or GELU-tanh), with Gemma's post-MLP norm. */
wgllm_status llm_block_mlp(const llm_fwd *f, uint32_t l);
/* Final norm of the last n_logits rows and the LM head into s->logits. */
wgllm_status llm_block_head(const llm_fwd *f, uint32_t n_logits);
/* The two families' forward passes (arch_llama.c, arch_gemma4.c). */
wgllm_status llm_forward_llama(const llm_fwd *f, uint32_t n_logits);
wgllm_status llm_forward_gemma4(const llm_fwd *f, uint32_t n_logits);
#endif
