/* The forward pass of the Llama family (Llama 2/3.x, Qwen2 with q/k/v biases, Qwen3 with per-head q/k norms)
   and of Gemma 3 (the same decoder with flags: (1+w) norms, sandwich norms, GeGLU, scaled embeddings, sliding
   window on local layers with their own RoPE base) as ops appended to a recorder. Used for prefill (T tokens)
   and for the recorded decode step (T = 1). */
#ifndef WGLLM_ARCH_LLAMA_H
#define WGLLM_ARCH_LLAMA_H
#include "model.h"

/* Activation buffers for up to cap tokens (from the pool, released by llm_scratch_release). */
typedef struct llm_scratch {
  uint32_t cap;             /* tokens */
  uint32_t logit_rows;      /* rows of logits it can hold */
  gpu_buffer *ids;          /* [cap] u32 token ids (input) */
  gpu_buffer *pos;          /* [cap] u32 positions (input) */
  gpu_buffer *x;            /* [cap][n_embd] residual stream */
  gpu_buffer *xn;           /* [cap][n_embd] normed */
  gpu_buffer *qkv;          /* [cap][n_head*hd + 2*n_kv*hd] fused projection output */
  gpu_buffer *qk2;          /* [cap][n_head*hd + n_kv*hd]: q | k after the per-head norm (Qwen3) */
  gpu_buffer *attn;         /* [cap][n_head*hd] */
  gpu_buffer *proj;         /* [cap][n_embd] */
  gpu_buffer *gu;           /* [cap][2*n_ff] gate and up */
  gpu_buffer *h;            /* [cap][n_ff] */
  gpu_buffer *logits;       /* [logit_rows][n_vocab] */
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
} llm_forward_opts;

wgllm_status llm_scratch_acquire(gpu_context *gpu, const llm_hparams *hp, uint32_t cap, uint32_t logit_rows,
                                 llm_scratch *s, char *err, size_t errlen);
/* Adds the flash-decoding buffers for a cache layout (decode scratch). */
wgllm_status llm_scratch_add_decode(gpu_context *gpu, const llm_hparams *hp, const op_kv_layout *kv, llm_scratch *s,
                                    char *err, size_t errlen);
void llm_scratch_release(gpu_context *gpu, llm_scratch *s);

/* KV cache: per layer K and V [n_kv][ctx][hd], f32 or f16. */
typedef struct llm_kv_cache {
  op_kv_layout layout;
  gpu_buffer **k, **v; /* [n_layer] */
  uint32_t n_layer;
  uint64_t bytes;
} llm_kv_cache;

/* RoPE tables for positions < max_pos: [0] from hp->inv_freq, [1] from hp->inv_freq_local (local layers) or
   NULL when they share the first. */
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
#endif
