/* The KV cache of a session (per owning layer, in its own layout; KV-shared layers get none; ring caches for
   sliding-window layers; layers over the binding limit bound in groups of KV heads) and the RoPE cos/sin tables
   its positions read. */
#ifndef WGLLM_KV_CACHE_H
#define WGLLM_KV_CACHE_H
#include "llm_err.h"
#include "model.h"

/* KV cache: per owning layer K and V [n_kv][slots][hd] in its own layout, f32 or f16; a KV-shared layer has no
   buffers of its own (NULL) and reads its source layer's (llm_layer_kv_source). A sliding-window layer whose
   window plus a prefill chunk is shorter than the context keeps only that many slots, as a ring (position p in
   slot p % slots): at least window + chunk so a chunk's writes never overwrite a key one of its queries reads.
   A layer whose K is over the storage binding limit is bound in groups of KV heads (group_heads[l] a group, a
   divisor of its KV heads: [n_kv][slots][hd] is head-major, so a group is one contiguous range), and attention
   runs a dispatch a group over the query heads that read it (llm_kv_group). */
typedef struct llm_kv_cache {
  op_kv_layout *layout;  /* [n_layer]: layout[l].ctx is its slot count; a shared layer has its source's */
  const uint8_t *pooled; /* [n_layer] or NULL: layer l's K/V live in a paged pool (llm_kv_pool_gpu): k[l] and v[l]
                            are the pool's (borrowed, not freed here), read through pages (its layout[l].ctx the
                            cache's positions, never a ring) */
  op_kv_pages pages;     /* a pooled cache's: the pool's geometry and this cache's block table (row pages.seq) */
  uint32_t *group_heads; /* [n_layer]: KV heads a binding (layout[l].n_kv_head when the layer is one binding) */
  gpu_buffer **k, **v;   /* [n_layer] */
  uint32_t n_layer, ctx; /* ctx: positions the session serves */
  int f16;
  uint32_t ring_slack; /* how far back a rewind may go and keep every key it needs (UINT32_MAX: no ring) */
  uint64_t bytes;      /* over the owning layers */
} llm_kv_cache;
/* The layout of a cache without its buffers (kv->bytes what they will take): refused naming the layer where one KV
   head is over the storage binding limit (max_binding: the largest storage binding, 0: the device's limit) or a
   layer's K over the largest buffer. Free with llm_kv_cache_free. */
wgllm_status llm_kv_cache_plan(gpu_context *gpu, const llm_hparams *hp, uint32_t ctx, uint32_t chunk, int f16,
                               uint64_t max_binding, llm_kv_cache *kv, llm_err *err);
/* The bytes such a cache takes (K and V of the owning layers, rings their slots), without a device. */
uint64_t llm_kv_cache_bytes(const llm_hparams *hp, uint32_t ctx, uint32_t chunk, int f16);
/* The plan, checked against gpu_memory_left, then allocated (buffers "kv_k layer L", "kv_v layer L"). */
wgllm_status llm_kv_cache_create(gpu_context *gpu, const llm_hparams *hp, uint32_t ctx, uint32_t chunk, int f16,
                                 uint64_t max_binding, llm_kv_cache *kv, llm_err *err);
/* A paged pool of KV blocks shared by many sessions' caches (issue 28): per layer that it holds, K and V
   [n_kv][n_blocks * block][hd] (op_kv_pages). It holds every owning layer that is not a sliding-window ring at
   max_ctx (the positions a session on it may have) and whose pool fits one storage binding; the others stay
   each session's own (rings, KV heads bound in groups). Which block holds what is the runtime's (kv_blocks.h). */
typedef struct llm_kv_pool_gpu {
  uint32_t n_layer, block, n_blocks, max_ctx, max_blocks; /* max_blocks: ceil(max_ctx / block), a table row */
  int f16;
  uint8_t *pooled;     /* [n_layer] */
  gpu_buffer **k, **v; /* [n_layer], NULL where not pooled */
  uint64_t bytes;
} llm_kv_pool_gpu;
/* The bytes a pool of n_blocks blocks of `block` slots takes (every layer it would hold; see above). */
uint64_t llm_kv_pool_bytes(const llm_hparams *hp, uint32_t max_ctx, uint32_t chunk, int f16, uint32_t block,
                           uint32_t n_blocks);
/* Allocates it (buffers "kv_pool_k layer L", "kv_pool_v layer L"), checked against gpu_memory_left; refused naming
   the layer whose pool is over the binding or buffer limit and the blocks that fit, or a model none of whose layers
   it would hold. */
wgllm_status llm_kv_pool_gpu_create(gpu_context *gpu, const llm_hparams *hp, uint32_t max_ctx, uint32_t chunk, int f16,
                                    uint64_t max_binding, uint32_t block, uint32_t n_blocks, llm_kv_pool_gpu *out,
                                    llm_err *err);
void llm_kv_pool_gpu_free(gpu_context *gpu, llm_kv_pool_gpu *p);
/* A session's cache on the pool: its own buffers for the layers the pool does not hold (planned and allocated as
   llm_kv_cache_create does), the pool's for the rest, and table as its block table (one row of pool->max_blocks
   u32, row 0). kv->bytes counts its own buffers only. ctx <= pool->max_ctx, f16 the pool's. */
wgllm_status llm_kv_cache_create_pooled(gpu_context *gpu, const llm_hparams *hp, uint32_t ctx, uint32_t chunk,
                                        uint64_t max_binding, const llm_kv_pool_gpu *pool, gpu_view table,
                                        llm_kv_cache *kv, llm_err *err);
/* The bytes such a cache allocates of its own (the layers the pool does not hold). */
uint64_t llm_kv_cache_bytes_pooled(const llm_hparams *hp, uint32_t ctx, uint32_t chunk, const llm_kv_pool_gpu *pool);
/* Layer l's pages (of its source layer's cache) when the pool holds it, else NULL. */
const op_kv_pages *llm_kv_pages(const llm_kv_cache *kv, uint32_t l);

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
                                    llm_err *err);
/* The bytes of the global table (local 0) or the local one (local 1: 0 where the model has none) for max_pos. */
uint64_t llm_rope_table_bytes(const llm_hparams *hp, uint32_t max_pos, int local);
void llm_rope_tables_free(gpu_context *gpu, llm_rope_tables *t);
#endif
