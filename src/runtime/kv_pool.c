/* The model-wide paged KV pool (kv_pool.h): its GPU buffers and its block bookkeeping, made and freed together. */
#include "kv_pool.h"
#include "scratch.h"
#include <stdlib.h>

static uint32_t chunk_of(const llm_model *m) { return llm_prefill_chunk(m->gpu, &m->hp); }

uint64_t llm_kv_pool_estimate(const llm_model *m, uint32_t tokens, uint32_t max_ctx, int f16) {
  uint32_t n_blocks = (uint32_t)(((uint64_t)tokens + LLM_KV_BLOCK - 1) / LLM_KV_BLOCK);
  return llm_kv_pool_bytes(&m->hp, max_ctx, chunk_of(m), f16, LLM_KV_BLOCK, n_blocks);
}

uint32_t llm_kv_pool_tokens_in(const llm_model *m, uint64_t bytes, uint32_t max_ctx, int f16) {
  uint64_t one = llm_kv_pool_bytes(&m->hp, max_ctx, chunk_of(m), f16, LLM_KV_BLOCK, 1);
  if (!one) return 0;
  uint64_t blocks = bytes / one;
  if (blocks > UINT32_MAX / LLM_KV_BLOCK / 2) blocks = UINT32_MAX / LLM_KV_BLOCK / 2;
  return (uint32_t)blocks * LLM_KV_BLOCK;
}

wgllm_status llm_kv_pool_create(llm_model *m, uint32_t tokens, uint32_t max_ctx, int f16, llm_kv_pool **out,
                                llm_err *err) {
  *out = NULL;
  if (!tokens || !max_ctx)
    return llm_err_set(err, WGLLM_ERR_INVALID_ARG, "KV pool: %u tokens for sessions of %u positions", tokens, max_ctx);
  if (tokens > UINT32_MAX / 2)
    return llm_err_set(err, WGLLM_ERR_INVALID_ARG, "KV pool: %u tokens is more than a pool holds", tokens);
  uint32_t n_blocks = (tokens + LLM_KV_BLOCK - 1) / LLM_KV_BLOCK;
  llm_kv_pool *p = calloc(1, sizeof *p);
  if (!p) return llm_err_set(err, WGLLM_ERR_OUT_OF_MEMORY, "out of host memory");
  p->m = m;
  wgllm_status st = llm_kv_pool_gpu_create(m->gpu, &m->hp, max_ctx, chunk_of(m), f16, m->max_binding, LLM_KV_BLOCK,
                                           n_blocks, &p->g, err);
  if (!st && !(p->blocks = kv_blocks_create(n_blocks, LLM_KV_BLOCK, err))) st = err ? err->status : WGLLM_ERR_OUT_OF_MEMORY;
  if (st) {
    llm_kv_pool_gpu_free(m->gpu, &p->g);
    free(p);
    return st;
  }
  *out = p;
  return WGLLM_OK;
}

int llm_kv_pool_free(llm_kv_pool *p) {
  if (!p) return 1;
  if (p->sessions) return 0;
  kv_blocks_destroy(p->blocks);
  llm_kv_pool_gpu_free(p->m->gpu, &p->g);
  free(p);
  return 1;
}
