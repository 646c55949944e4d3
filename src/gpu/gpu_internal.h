/* Private glue between the files of src/gpu. */
#ifndef WGLLM_GPU_INTERNAL_H
#define WGLLM_GPU_INTERNAL_H
#include "gpu.h"
#include "llm_err.h"
/* 1 when f completed; 0 when the wait failed or ran past the timeout (the device then counts as lost) */
int gpu_wait_future(gpu_context *ctx, WGPUFuture f);
gpu_pipeline_cache *gpu_pipeline_cache_create(void);
void gpu_pipeline_cache_destroy(gpu_pipeline_cache *c);
gpu_pool *gpu_pool_create(void);
void gpu_pool_destroy(gpu_context *ctx, gpu_pool *p);
/* recorder -> pool: a pin on b was dropped */
void gpu_buffer_unpin(gpu_context *ctx, gpu_buffer *b);
/* error scope helpers: push validation + OOM scopes, pop both and report the first error */
void gpu_scope_push(gpu_context *ctx);
wgllm_status gpu_scope_pop(gpu_context *ctx, llm_err *err);
/* 1 (with err set, naming what and its size) when this allocation is the injected failure (alloc_fail_at) */
int gpu_alloc_injected(gpu_context *ctx, const char *what, uint64_t size, llm_err *err);
#endif
