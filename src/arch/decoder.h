/* The decoder forward passes as ops appended to a recorder, for prefill (T tokens), the recorded decode step
   (T = 1) and the batched decode of several sessions' tokens: what a caller records them with. The pieces live
   one object a file: the KV cache and RoPE tables (kv_cache.h), the activation scratch and prefill chunk
   (scratch.h), the family dispatch through a table of per-family rows (forward.c), the blocks the families'
   passes are built from (blocks.h) and one forward function per family (arch_llama.c: Llama 2/3.x, Mistral,
   Qwen2/3, Gemma 3; arch_gemma4.c: Gemma 4). Every per-layer width comes from the llm_layer_* accessors. */
#ifndef WGLLM_DECODER_H
#define WGLLM_DECODER_H
#include "kv_cache.h"
#include "scratch.h"

/* How flash-decoding sizes its chunk grid: the worst case for the recording's length bucket with early exit
   (the default: measured faster, PERF.md), or GPU-written indirect arguments. */
typedef enum llm_attn_grid { LLM_ATTN_GRID_WORST = 0, LLM_ATTN_GRID_INDIRECT } llm_attn_grid;

/* How a forward pass is recorded. */
typedef struct llm_forward_opts {
  uint32_t max_len;        /* a decode step (T = 1) serves positions below it: a power of two, or 0 for the cache */
  int unfused;             /* one token through the plain per-op path, not the fused kernels (comparisons) */
  llm_attn_grid attn_grid; /* flash-decoding's grid */
  int fast;    /* linear layers of block-quantized weights on int8 activations (op_linear_fast, op_gemv_fast), where
                  the scratch has its xq (llm_scratch_add_fast) */
  int prefill; /* a prompt's pass: the prefill kernels even for one token, never the fused decode path, so that a
                  prompt row's K and V do not depend on how passes cut the prompt (batched prefill, prefix sharing) */
  int hidden;  /* an embedding's pass (with prefill): the final norm of every row into scratch->xn [T][n_embd], no LM
                  head (n_logits unused) */
} llm_forward_opts;

/* Records the forward pass of T tokens (ids and pos already in the scratch's input buffers) writing the
   logits of the last n_logits tokens into scratch->logits. fo: NULL for the defaults. */
wgllm_status llm_encode_forward(gpu_recorder *rec, const llm_model *m, const llm_kv_cache *kv,
                                const llm_rope_tables *rope, const llm_scratch *s, uint32_t T, uint32_t n_logits,
                                const llm_forward_opts *fo);

/* Batched decode: T tokens of T different sessions in one pass. Everything but attention is the session's own
   step's path with T rows: the fused decode path with T tokens a GEMV where the weights have it, else the norms and
   the GEMV over the rows (op_matvec_generic: each row's sums in the order of a one-row pass); each weight read
   once for every 8 rows. Token i's RoPE, cache append and flash-decoding read what its own session holds (a KV-shared layer
   rotates q alone and reads its source layer's cache). */
typedef struct llm_fwd_token {
  const llm_kv_cache *kv;
  const llm_rope_tables *rope;
  gpu_view pos;             /* [1] u32: the token's position (a binding of its own) */
  gpu_buffer *attn_partial; /* its session's flash-decoding scratch */
  gpu_buffer *attn_args;
  uint32_t max_len; /* its session's length bucket (0: the whole cache) */
  llm_attn_grid attn_grid;
} llm_fwd_token;
/* A batched decode whose sessions' caches share one paged pool (llm_kv_pool_gpu): each layer the pool holds runs
   one flash-decoding pair for each group of tokens of one length bucket (the bucket sets the chunk length, so a
   token's attention sums in the order it does alone), over the step's block table. */
typedef struct llm_fwd_paged_group {
  uint32_t row0, n; /* rows [row0, row0 + n) of the step */
  uint32_t ctx;     /* the longest context of its sessions */
  uint32_t max_len; /* their length bucket, as a decode step alone records it (0: the whole context) */
  gpu_view pos;     /* [n] u32 positions (a binding offset of its own) */
  gpu_view table;   /* [n][max_blocks] u32: row i the blocks of row row0 + i's session */
  gpu_view partial; /* n x its flash-decoding partial bytes */
} llm_fwd_paged_group;
typedef struct llm_fwd_paged {
  /* one_seq: the tokens are consecutive rows of one session over its own cache (speculation's verify step): each
     layer's whole cache is one block (block and n_blocks unused), every table row [0]; each group's attention pair
     runs twice, the first appending every row's K and V (its scores read keys other rows may not have written yet,
     and the second rewrites every partial), so that each row reads the keys of the rows before it. A layer with
     its cache in several binding groups, or on a pool, takes a pair a row. */
  int one_seq;
  uint32_t max_blocks, block, n_blocks; /* the table's row stride (u32), the pool's block and blocks */
  const llm_rope_tables *rope;          /* tables covering every member's positions (below rope_max_pos) */
  uint32_t rope_max_pos;
  uint32_t n_groups;
  llm_fwd_paged_group groups[24];
} llm_fwd_paged;
/* Whether the model's T-token batched pass can be recorded on this device (where a token has the fused GEMV, T
   tokens have it too; RoPE in the attention; row offsets that are binding offsets); why not into why. */
int llm_batch_forward_ok(gpu_recorder *rec, const llm_model *m, uint32_t T, char *why, size_t whylen);
/* Records it for n sessions' tokens in T >= n rows (rows n.. pad the projections, so that a few token counts
   serve every batch: each is a pipeline to compile): ids [T] in s->ids, logits [T][n_vocab] into s->logits,
   rows n.. meaningless. paged: NULL, or the step's pool table when every token's cache is on one pool (its
   pooled layers then take one attention pair for all; a pooled cache without it takes a pair a token). The
   projections are the fused GEMV, OP_GEMV_MAX_TOKENS rows a dispatch (bit for bit each token alone), or in the fast
   precision past that many rows the small-M GEMM where s has its partial sums (s->part; op_gemv_fast); for weights
   without the fused GEMV, op_linear over the rows and the LM head's op_matvec (bit for bit each token alone). */
wgllm_status llm_encode_forward_batch(gpu_recorder *rec, const llm_model *m, const llm_fwd_token *tokens, uint32_t n,
                                      uint32_t T, const llm_scratch *s, int fast, const llm_fwd_paged *paged);
/* Batched prefill: the next prompt tokens of several sessions in one pass, their rows one after another (session
   k's n rows from row0): the linear layers over all the rows (each row's sums as a pass of its own gives them: the
   GEMM for every row count, op_linear), RoPE, the cache append and attention a session at a time over its own cache
   (its positions at a binding of their own), and the LM head over each session's last row only (gathered by
   last_rows [n_seqs] u32 row indices into s->proj). Logits [n_seqs][n_vocab] into s->logits. */
typedef struct llm_fwd_seq {
  const llm_kv_cache *kv;
  const llm_rope_tables *rope;
  uint32_t row0, n;
  gpu_view pos; /* [n] u32 */
} llm_fwd_seq;
/* Whether the model's batched prefill can be recorded (the batched decode's family and row-offset conditions). */
int llm_prefill_batch_ok(gpu_recorder *rec, const llm_model *m, char *why, size_t whylen);
wgllm_status llm_encode_prefill_batch(gpu_recorder *rec, const llm_model *m, const llm_fwd_seq *seqs, uint32_t n_seqs,
                                      uint32_t T, gpu_view last_rows, const llm_scratch *s, int fast);
#endif
