/* The model-wide paged KV pool that sessions draw their caches from (issue 28): the pool's buffers on the GPU
   (llm_kv_pool_gpu: the layers it holds, K and V in blocks of LLM_KV_BLOCK slots) and which block holds what
   (kv_blocks.h: reference counts, prefix sharing, the LRU cache of published blocks). A session on the pool
   (llm_session_options.pool) reserves blocks as it grows and releases them when it shrinks or ends, so memory goes
   to the tokens sequences hold, not to each session's worst case; sessions whose prompts start the same share the
   blocks of that prefix. One owner steps every session of a pool (not thread-safe), as for the model's sessions. */
#ifndef WGLLM_KV_POOL_H
#define WGLLM_KV_POOL_H
#include "kv_blocks.h"
#include "kv_cache.h"

#define LLM_KV_BLOCK 16 /* slots a block */

struct llm_session;
typedef struct llm_kv_pool {
  llm_model *m;
  llm_kv_pool_gpu g;
  kv_blocks *blocks;
  uint32_t sessions; /* sessions on it: it is freed after them */
  /* the sessions on it, least recently started first (llm_session_touch moves one to the back): whom pressure on
     the pool evicts first among those not running */
  struct llm_session *first, *last;
} llm_kv_pool;

/* A pool of at least `tokens` slots (rounded up to whole blocks) for sessions of at most max_ctx positions, f16 or
   f32, its memory checked against gpu_memory_left first. Refused with the reason (a binding limit, memory, a model
   none of whose layers it can hold) in err. */
wgllm_status llm_kv_pool_create(llm_model *m, uint32_t tokens, uint32_t max_ctx, int f16, llm_kv_pool **out,
                                llm_err *err);
/* The bytes a pool of that many tokens would take. */
uint64_t llm_kv_pool_estimate(const llm_model *m, uint32_t tokens, uint32_t max_ctx, int f16);
/* The most tokens (whole blocks) whose pool fits in `bytes`. */
uint32_t llm_kv_pool_tokens_in(const llm_model *m, uint64_t bytes, uint32_t max_ctx, int f16);
/* Frees it; refused (returns 0) while sessions are on it. NULL: 1. */
int llm_kv_pool_free(llm_kv_pool *p);
#endif
