/* The blocks the families' forward passes are built from (blocks.c: attention, MLP, LM head, the linear layers
   of either precision) and the families' forward functions (arch_*.c), which forward.c dispatches to through
   its table of families. */
#ifndef WGLLM_BLOCKS_H
#define WGLLM_BLOCKS_H
#include "decoder.h"

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
  const llm_fwd_paged *paged;  /* batched decode over one pool: the step's table (NULL otherwise) */
  const llm_fwd_seq *seqs;     /* batched prefill: [n_seqs] the sessions whose rows the pass holds (NULL otherwise) */
  uint32_t n_seqs;
  gpu_view last_rows; /* batched prefill: [n_seqs] u32, each session's last row */
} llm_fwd;
/* A linear layer y [M][N] = x [M][K] . W^T (+ bias): on int8 activations when the pass is fast and op_linear_fast's
   predicates take the weight (the integer-dot GEMV up to OP_GEMV_MAX_TOKENS rows, the GEMM above), else exact: a
   decode step's rows (T = 1 outside a prompt, or a batched decode) the GEMV (op_matvec_generic: each row the same
   bits alone or in a batch), a prompt's the tiled GEMM (op_linear). x's rows contiguous. */
wgllm_status llm_linear(const llm_fwd *f, gpu_view x, const op_weight *w, gpu_view bias, gpu_view y, uint32_t M,
                        uint32_t N, uint32_t K);
/* Whether every projection of the model takes the fused decode GEMV for T tokens (1 for a decode step). */
int llm_fused_decode_ok(gpu_recorder *rec, const llm_model *m, uint32_t T);
/* x += attention(norm(x)) of layer l: projection, per-head norms, RoPE, KV append (owning layers), attention
   over the source layer's cache, output projection, Gemma's post-attention norm. */
wgllm_status llm_block_attention(const llm_fwd *f, uint32_t l);
/* x += MLP(norm(x)) of layer l (gated, SiLU or GELU-tanh), with Gemma's post-MLP norm. */
wgllm_status llm_block_mlp(const llm_fwd *f, uint32_t l);
/* x += MoE(norm(x)) of sparse layer l: router, top k, the chosen experts' GLU and down projections, their weighted
   sum (decode: by pair; a prompt's pass: by expert tiles). */
wgllm_status llm_block_moe(const llm_fwd *f, uint32_t l);
/* Gemma 4's MoE block (hp->moe_dense_too; llm_block_moe calls it): x += post_ffn_norm(post_dense_norm(MLP(
   ffn_norm(x))) + post_exp_norm(experts(exp_norm(x)))), the router on RMSNorm(x) * router.scale * D^-1/2, each
   chosen expert's renormalised weight times its per_expert_scale (transformers' Gemma4TextDecoderLayer). */
wgllm_status llm_block_moe_beside_dense(const llm_fwd *f, uint32_t l);
/* Final norm of the last n_logits rows and the LM head into s->logits. */
wgllm_status llm_block_head(const llm_fwd *f, uint32_t n_logits);
/* The families' forward passes (arch_llama.c, arch_gemma4.c): the rows of forward.c's table. */
wgllm_status llm_forward_llama(const llm_fwd *f, uint32_t n_logits);
wgllm_status llm_forward_gemma4(const llm_fwd *f, uint32_t n_logits);
#endif
