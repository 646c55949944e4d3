/* The activation scratch of a forward pass (every buffer sized for the model's widest layer, from the pool) and
   how many tokens a prefill pass takes (the chunk). */
#ifndef WGLLM_SCRATCH_H
#define WGLLM_SCRATCH_H
#include "kv_cache.h"
#include "llm_err.h"

/* Activation buffers for up to cap tokens (from the pool, released by llm_scratch_release). */
typedef struct llm_scratch {
  uint32_t cap;        /* tokens */
  uint32_t logit_rows; /* rows of logits it can hold */
  gpu_buffer *ids;     /* [cap] u32 token ids (input) */
  gpu_buffer *pos;     /* [cap] u32 positions (input) */
  gpu_buffer *x;       /* [cap][n_embd] residual stream */
  gpu_buffer *xn;      /* [cap][n_embd] normed */
  gpu_buffer *qkv;     /* [cap][q + 2*kv] fused projection output (widest layer) */
  gpu_buffer *qk2;     /* [cap][q + 2*kv]: q | k | v after the per-head norms (Qwen3, Gemma) */
  gpu_buffer *attn;    /* [cap][q] */
  gpu_buffer *proj;    /* [cap][n_embd] */
  gpu_buffer *gu;      /* [cap][2*n_ff] gate and up (widest layer) */
  gpu_buffer *h;       /* [cap][n_ff] */
  gpu_buffer *ple;     /* [cap][n_layer*ple_dim] Gemma 4's per-layer inputs (NULL without) */
  gpu_buffer *ple_tok; /* [cap][n_layer*ple_dim] their embedding-table part */
  gpu_buffer *ple_ctx; /* [cap][n_layer*ple_dim] their projection part */
  gpu_buffer *ple_h;   /* [cap][ple_dim] a layer's gate */
  gpu_buffer *logits;  /* [logit_rows][n_vocab] */
  /* mixture of experts (NULL without sparse layers); k = n_expert_used, a pair q = t * k + j */
  gpu_buffer *moe_logits;   /* [cap][n_expert] router logits */
  gpu_buffer *moe_ids;      /* [cap][k] u32 chosen experts */
  gpu_buffer *moe_w;        /* [cap][k] their weights */
  gpu_buffer *moe_lists;    /* op_moe_lists_words(cap * k, n_expert, OP_MOE_GROUP_MIN) u32: the pairs by expert and
                               the tile table (a prompt's tiles or batched decode's groups) */
  gpu_buffer *moe_h;        /* [cap * k][n_ff_exp] an expert's GLU output per pair */
  gpu_buffer *moe_y;        /* [cap * k][n_embd] an expert's output per pair */
  gpu_buffer *moe_x;        /* [cap][n_embd] the experts' input beside a dense MLP (Gemma 4's MoE block; else NULL) */
  gpu_buffer *xq;           /* a layer input as int8 blocks (fast precision only: llm_scratch_add_fast) */
  gpu_buffer *x16, *w16;    /* a layer input and a weight as f16 for the tensor cores (fast prefill scratch where
                               subgroup matrices exist; NULL elsewhere) */
  gpu_buffer *part;         /* the small-M GEMM's partial sums (fast batched decode: llm_scratch_add_small_gemm) */
  gpu_buffer *attn_partial; /* flash-decoding chunks (decode scratch only) */
  gpu_buffer *attn_args;    /* [3] u32 indirect grid of the chunk pass */
} llm_scratch;

/* Tokens a prefill pass takes by default: 1024 (a 2048-token prompt of the 8B shape: time to first token 1.19 s
   against 1.21 with 512 on the H200; PERF.md), 512 for models with sliding-window layers (their ring caches
   keep window + chunk slots), halved while a token's widest activation times the chunk would exceed one
   storage binding (gpu NULL: no device to fit, the chunk before halving). */
uint32_t llm_prefill_chunk(const gpu_context *gpu, const llm_hparams *hp);
/* The most tokens a prefill pass can take on this device (every activation within one storage binding). */
uint32_t llm_prefill_chunk_max(const gpu_context *gpu, const llm_hparams *hp);
wgllm_status llm_scratch_acquire(gpu_context *gpu, const llm_hparams *hp, uint32_t cap, uint32_t logit_rows,
                                 llm_scratch *s, llm_err *err);
/* The bytes llm_scratch_acquire takes for cap tokens and logit_rows rows (before the pool's rounding). */
uint64_t llm_scratch_bytes(const llm_hparams *hp, uint32_t cap, uint32_t logit_rows);
/* Adds the fast precision's int8 activation buffer (op_q8_act_bytes for the widest layer input, the scratch's
   tokens, or a MoE model's T * k pair rows of the experts' width if more); without it llm_linear and the fused GEMVs
   run exact. A scratch of more tokens than a GEMV takes, on a device with subgroup matrices, also gets x16 and w16
   (op_f16_bytes of the widest layer input and of the largest projection, within one storage binding) for the
   f16-operand GEMM; a projection larger than w16 dequantizes in the GEMM's tiles instead (op_linear_fast). */
wgllm_status llm_scratch_add_fast(gpu_context *gpu, const llm_hparams *hp, llm_scratch *s, llm_err *err);
/* Adds the fast batched decode's room for the small-M GEMM's partial sums (op_q8_small_part_bytes of the scratch's
   tokens and the widest projection, and one slice of the LM head's), when the scratch takes more tokens than one
   GEMV dispatch; optional: where it is refused the projections stay on the GEMV. */
void llm_scratch_add_small_gemm(gpu_context *gpu, const llm_hparams *hp, llm_scratch *s);
/* Adds the flash-decoding buffers for a cache (decode scratch): room for its largest layer. */
wgllm_status llm_scratch_add_decode(gpu_context *gpu, const llm_hparams *hp, const llm_kv_cache *kv, llm_scratch *s,
                                    llm_err *err);
void llm_scratch_release(gpu_context *gpu, llm_scratch *s);
/* Where the up rows' outputs start in moe_y (bytes, on a binding offset) when a layer's gate and up experts are apart:
   after the gate's [T * k][I] f32. */
static inline uint64_t llm_moe_up_offset(uint32_t T, uint32_t k, uint32_t I) {
  return ((uint64_t)T * k * I * 4 + 255) & ~(uint64_t)255;
}
#endif
