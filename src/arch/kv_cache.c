/* The KV cache and the RoPE tables (kv_cache.h): per-layer layouts and slot counts, the groups of KV heads a
   binding holds, the checks against the device's binding, buffer and memory limits, and the cos/sin tables. */
#include "kv_cache.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* a window layer keeps window + chunk slots (at least 128: the kernels' blocks of up to 128 keys wrap at most once),
   every other layer the whole context */
static uint32_t layer_slots(const llm_hparams *hp, uint32_t l, uint32_t ctx, uint32_t chunk) {
  uint32_t w = llm_layer_window(hp, l), slots = ctx;
  if (w && (uint64_t)w + chunk < ctx) {
    slots = w + chunk < 128 ? 128 : w + chunk;
    if (slots > ctx) slots = ctx;
  }
  return slots;
}

/* the bytes of the layers not in pooled (NULL: every layer) */
static uint64_t cache_bytes(const llm_hparams *hp, uint32_t ctx, uint32_t chunk, int f16, const uint8_t *pooled) {
  uint64_t n = 0;
  for (uint32_t l = 0; l < hp->n_layer; l++)
    if (llm_layer_kv_source(hp, l) == l && !(pooled && pooled[l]))
      n += 2ull * layer_slots(hp, l, ctx, chunk) * llm_layer_n_head_kv(hp, l) * llm_layer_head_dim(hp, l) *
           (f16 ? 2 : 4);
  return n;
}

uint64_t llm_kv_cache_bytes(const llm_hparams *hp, uint32_t ctx, uint32_t chunk, int f16) {
  return cache_bytes(hp, ctx, chunk, f16, NULL);
}

uint64_t llm_kv_cache_bytes_pooled(const llm_hparams *hp, uint32_t ctx, uint32_t chunk, const llm_kv_pool_gpu *pool) {
  return cache_bytes(hp, ctx, chunk, pool->f16, pool->pooled);
}

/* llm_kv_cache_plan, with the layers of pooled (NULL: none) whole (never rings), bound as one group, their bytes
   not counted: the pool's */
static wgllm_status plan(gpu_context *gpu, const llm_hparams *hp, uint32_t ctx, uint32_t chunk, int f16,
                         uint64_t max_binding, const uint8_t *pooled, llm_kv_cache *kv, llm_err *err) {
  memset(kv, 0, sizeof *kv);
  kv->n_layer = hp->n_layer;
  kv->ctx = ctx;
  kv->f16 = f16;
  kv->ring_slack = UINT32_MAX;
  kv->layout = calloc(hp->n_layer, sizeof *kv->layout);
  kv->group_heads = calloc(hp->n_layer, sizeof *kv->group_heads);
  kv->k = calloc(hp->n_layer, sizeof *kv->k);
  kv->v = calloc(hp->n_layer, sizeof *kv->v);
  if (!kv->layout || !kv->group_heads || !kv->k || !kv->v) {
    llm_kv_cache_free(gpu, kv);
    return llm_err_set(err, WGLLM_ERR_OUT_OF_MEMORY, "out of host memory");
  }
  wgllm_status st = WGLLM_OK;
  /* the context whose every layer's single KV head fits one storage binding (for the message below) */
  uint64_t max_bind = gpu->limits.maxStorageBufferBindingSize, ctx_fits = UINT64_MAX;
  if (max_binding && max_binding < max_bind) max_bind = max_binding;
  uint64_t align = gpu->limits.minStorageBufferOffsetAlignment ? gpu->limits.minStorageBufferOffsetAlignment : 256;
  for (uint32_t l = 0; l < hp->n_layer; l++) {
    uint64_t per_pos = (uint64_t)llm_layer_head_dim(hp, l) * (f16 ? 2 : 4);
    if (llm_layer_owns_kv(hp, l) && per_pos && max_bind / per_pos < ctx_fits) ctx_fits = max_bind / per_pos;
  }
  for (uint32_t l = 0; !st && l < hp->n_layer; l++) {
    uint32_t hd = llm_layer_head_dim(hp, l), src = llm_layer_kv_source(hp, l);
    if (hd % 4) { /* the attention kernels read K/V four elements at a time */
      st = llm_err_set(err, WGLLM_ERR_UNSUPPORTED,
                       "layer %u: head_dim %u is not a multiple of 4, which the attention kernels need", l, hd);
      break;
    }
    int in_pool = pooled && pooled[src];
    uint32_t w = llm_layer_window(hp, l), slots = in_pool ? ctx : layer_slots(hp, l, ctx, chunk);
    if (slots < ctx && slots - w < kv->ring_slack) kv->ring_slack = slots - w;
    kv->layout[l] = (op_kv_layout){.n_kv_head = llm_layer_n_head_kv(hp, l), .head_dim = hd, .ctx = slots, .f16 = f16};
    if (src != l) { /* a KV-shared layer: its source came earlier */
      kv->layout[l] = kv->layout[src];
      kv->group_heads[l] = kv->group_heads[src];
      continue;
    }
    uint32_t nkv = kv->layout[l].n_kv_head;
    if (in_pool) { /* the pool's buffers, checked when it was made */
      kv->group_heads[l] = nkv;
      continue;
    }
    uint64_t head = (uint64_t)slots * hd * (f16 ? 2 : 4), per = nkv * head;
    /* bound in groups of KV heads where the layer is over the binding limit: the most heads a binding that
       divides the heads and keeps the groups' K / V and attention-output offsets aligned */
    uint32_t g = nkv, rep = hp->n_head / nkv;
    while (g > 1 && ((uint64_t)g * head > max_bind || nkv % g))
      g--;
    if (g < nkv && (head % align || ((uint64_t)g * rep * hd * 4) % align)) g = 0;
    if (g == 0 || (uint64_t)g * head > max_bind) {
      char a[32], b[32];
      st = llm_err_set(
          err, WGLLM_ERR_UNSUPPORTED,
          "KV cache: layer %u keeps %u positions x %u KV heads x %u x %s = %s for K (and as much for V); one "
          "KV head%s is over the storage binding limit of %s: a context of at most %llu fits%s",
          l, slots, nkv, hd, f16 ? "f16" : "f32", gpu_size_str(per, a, sizeof a),
          g ? "" : " (or a group whose offset meets the binding alignment)", gpu_size_str(max_bind, b, sizeof b),
          (unsigned long long)ctx_fits, f16 ? "" : " (twice that with an f16 cache)");
      break;
    }
    if (per > gpu->limits.maxBufferSize) {
      char a[32], b[32];
      st = llm_err_set(err, WGLLM_ERR_UNSUPPORTED,
                       "KV cache: layer %u needs %s for K, over the device's largest buffer of %s", l,
                       gpu_size_str(per, a, sizeof a), gpu_size_str(gpu->limits.maxBufferSize, b, sizeof b));
      break;
    }
    kv->group_heads[l] = g;
    kv->bytes += 2 * per;
  }
  if (st) llm_kv_cache_free(gpu, kv);
  return st;
}

wgllm_status llm_kv_cache_plan(gpu_context *gpu, const llm_hparams *hp, uint32_t ctx, uint32_t chunk, int f16,
                               uint64_t max_binding, llm_kv_cache *kv, llm_err *err) {
  return plan(gpu, hp, ctx, chunk, f16, max_binding, NULL, kv, err);
}

/* Allocates the planned cache's own buffers (the layers the pool does not hold), checked against the memory left. */
static wgllm_status allocate(gpu_context *gpu, const llm_hparams *hp, uint32_t ctx, int f16, llm_kv_cache *kv,
                             llm_err *err) {
  wgllm_status st = WGLLM_OK;
  /* the whole cache against what the device has left, before any of it is allocated */
  char why[320];
  uint64_t left = gpu_memory_left(gpu, why, sizeof why);
  if (kv->bytes > left) {
    char a[32];
    st = llm_err_set(err, WGLLM_ERR_OUT_OF_MEMORY, "KV cache: %u positions need %s, and %s%s", ctx,
                     gpu_size_str(kv->bytes, a, sizeof a), why, f16 ? "" : "; an f16 cache takes half");
  }
  for (uint32_t l = 0; !st && l < hp->n_layer; l++) {
    if (llm_layer_kv_source(hp, l) != l || (kv->pooled && kv->pooled[l])) continue;
    uint64_t per = (uint64_t)kv->layout[l].n_kv_head * kv->layout[l].ctx * kv->layout[l].head_dim * (f16 ? 2 : 4);
    char name[32];
    snprintf(name, sizeof name, "kv_k layer %u", l);
    st = gpu_buffer_create(gpu, per, name, &kv->k[l], err);
    snprintf(name, sizeof name, "kv_v layer %u", l);
    if (!st) st = gpu_buffer_create(gpu, per, name, &kv->v[l], err);
  }
  if (st) llm_kv_cache_free(gpu, kv);
  return st;
}

wgllm_status llm_kv_cache_create(gpu_context *gpu, const llm_hparams *hp, uint32_t ctx, uint32_t chunk, int f16,
                                 uint64_t max_binding, llm_kv_cache *kv, llm_err *err) {
  wgllm_status st = llm_kv_cache_plan(gpu, hp, ctx, chunk, f16, max_binding, kv, err);
  return st ? st : allocate(gpu, hp, ctx, f16, kv, err);
}

wgllm_status llm_kv_cache_create_pooled(gpu_context *gpu, const llm_hparams *hp, uint32_t ctx, uint32_t chunk,
                                        uint64_t max_binding, const llm_kv_pool_gpu *pool, gpu_view table,
                                        llm_kv_cache *kv, llm_err *err) {
  if (ctx > pool->max_ctx)
    return llm_err_set(err, WGLLM_ERR_INVALID_ARG, "a session of %u positions on a KV pool made for at most %u", ctx,
                       pool->max_ctx);
  wgllm_status st = plan(gpu, hp, ctx, chunk, pool->f16, max_binding, pool->pooled, kv, err);
  if (st) return st;
  kv->pooled = pool->pooled;
  kv->pages = (op_kv_pages){
      .table = table, .max_blocks = pool->max_blocks, .block = pool->block, .n_blocks = pool->n_blocks, .seq = 0};
  for (uint32_t l = 0; l < hp->n_layer; l++)
    if (pool->pooled[l]) {
      kv->k[l] = pool->k[l];
      kv->v[l] = pool->v[l];
    }
  return allocate(gpu, hp, ctx, pool->f16, kv, err);
}

const op_kv_pages *llm_kv_pages(const llm_kv_cache *kv, uint32_t l) {
  return kv->pooled && kv->pooled[l] ? &kv->pages : NULL; /* l: a source layer (pooled[] holds owning layers) */
}

/* whether the pool would hold layer l (an owning layer, not a ring at max_ctx) */
static int pool_holds(const llm_hparams *hp, uint32_t l, uint32_t max_ctx, uint32_t chunk) {
  return llm_layer_owns_kv(hp, l) && layer_slots(hp, l, max_ctx, chunk) == max_ctx;
}

uint64_t llm_kv_pool_bytes(const llm_hparams *hp, uint32_t max_ctx, uint32_t chunk, int f16, uint32_t block,
                           uint32_t n_blocks) {
  uint64_t n = 0;
  for (uint32_t l = 0; l < hp->n_layer; l++)
    if (pool_holds(hp, l, max_ctx, chunk))
      n += 2ull * n_blocks * block * llm_layer_n_head_kv(hp, l) * llm_layer_head_dim(hp, l) * (f16 ? 2 : 4);
  return n;
}

wgllm_status llm_kv_pool_gpu_create(gpu_context *gpu, const llm_hparams *hp, uint32_t max_ctx, uint32_t chunk, int f16,
                                    uint64_t max_binding, uint32_t block, uint32_t n_blocks, llm_kv_pool_gpu *out,
                                    llm_err *err) {
  memset(out, 0, sizeof *out);
  if (!block || !n_blocks || !max_ctx)
    return llm_err_set(err, WGLLM_ERR_INVALID_ARG, "KV pool: %u blocks of %u slots for %u positions", n_blocks, block,
                       max_ctx);
  uint64_t max_bind = gpu->limits.maxStorageBufferBindingSize;
  if (max_binding && max_binding < max_bind) max_bind = max_binding;
  out->n_layer = hp->n_layer;
  out->block = block;
  out->n_blocks = n_blocks;
  out->max_ctx = max_ctx;
  out->max_blocks = (max_ctx + block - 1) / block;
  out->f16 = f16;
  out->pooled = calloc(hp->n_layer, 1);
  out->k = calloc(hp->n_layer, sizeof *out->k);
  out->v = calloc(hp->n_layer, sizeof *out->v);
  if (!out->pooled || !out->k || !out->v) {
    llm_kv_pool_gpu_free(gpu, out);
    return llm_err_set(err, WGLLM_ERR_OUT_OF_MEMORY, "out of host memory");
  }
  wgllm_status st = WGLLM_OK;
  uint32_t held = 0;
  for (uint32_t l = 0; !st && l < hp->n_layer; l++) {
    if (!pool_holds(hp, l, max_ctx, chunk)) continue;
    uint32_t hd = llm_layer_head_dim(hp, l), nkv = llm_layer_n_head_kv(hp, l);
    if (hd % 4) continue; /* refused by the session's plan with its reason */
    uint64_t per_slot = (uint64_t)nkv * hd * (f16 ? 2 : 4), per = per_slot * n_blocks * block;
    uint64_t elems = (uint64_t)nkv * n_blocks * block * hd;
    if (per > max_bind || per > gpu->limits.maxBufferSize || elems > UINT32_MAX - 3) {
      char a[32], b[32];
      uint64_t lim = per > max_bind ? max_bind : gpu->limits.maxBufferSize;
      uint64_t fits = lim / per_slot / block;
      if (fits > (UINT32_MAX - 3) / ((uint64_t)nkv * hd * block))
        fits = (UINT32_MAX - 3) / ((uint64_t)nkv * hd * block);
      st = llm_err_set(err, WGLLM_ERR_UNSUPPORTED,
                       "KV pool: layer %u's K of %u blocks of %u slots x %u KV heads x %u x %s takes %s, over the "
                       "device's %s of %s: at most %llu blocks (%llu tokens) fit",
                       l, n_blocks, block, nkv, hd, f16 ? "f16" : "f32", gpu_size_str(per, a, sizeof a),
                       per > max_bind ? "storage binding limit" : "largest buffer", gpu_size_str(lim, b, sizeof b),
                       (unsigned long long)fits, (unsigned long long)fits * block);
      break;
    }
    out->pooled[l] = 1;
    out->bytes += 2 * per;
    held++;
  }
  if (!st && !held)
    st = llm_err_set(err, WGLLM_ERR_UNSUPPORTED,
                     "KV pool: the model has no layer a pool can hold (each is a sliding-window ring at %u positions)",
                     max_ctx);
  char why[320];
  uint64_t left = st ? 0 : gpu_memory_left(gpu, why, sizeof why);
  if (!st && out->bytes > left) {
    char a[32];
    st = llm_err_set(err, WGLLM_ERR_OUT_OF_MEMORY, "KV pool: %u blocks of %u slots need %s, and %s", n_blocks, block,
                     gpu_size_str(out->bytes, a, sizeof a), why);
  }
  for (uint32_t l = 0; !st && l < hp->n_layer; l++) {
    if (!out->pooled[l]) continue;
    uint64_t per = (uint64_t)llm_layer_n_head_kv(hp, l) * llm_layer_head_dim(hp, l) * (f16 ? 2 : 4) * n_blocks * block;
    char name[40];
    snprintf(name, sizeof name, "kv_pool_k layer %u", l);
    st = gpu_buffer_create(gpu, per, name, &out->k[l], err);
    snprintf(name, sizeof name, "kv_pool_v layer %u", l);
    if (!st) st = gpu_buffer_create(gpu, per, name, &out->v[l], err);
  }
  if (st) llm_kv_pool_gpu_free(gpu, out);
  return st;
}

void llm_kv_pool_gpu_free(gpu_context *gpu, llm_kv_pool_gpu *p) {
  for (uint32_t l = 0; l < p->n_layer; l++) {
    if (p->k) gpu_buffer_destroy(gpu, p->k[l]);
    if (p->v) gpu_buffer_destroy(gpu, p->v[l]);
  }
  free(p->pooled);
  free(p->k);
  free(p->v);
  memset(p, 0, sizeof *p);
}

void llm_kv_cache_free(gpu_context *gpu, llm_kv_cache *kv) {
  for (uint32_t l = 0; l < kv->n_layer; l++) {
    if (kv->pooled && kv->pooled[l]) continue; /* the pool's */
    if (kv->k) gpu_buffer_destroy(gpu, kv->k[l]);
    if (kv->v) gpu_buffer_destroy(gpu, kv->v[l]);
  }
  free(kv->layout);
  free(kv->group_heads);
  free(kv->k);
  free(kv->v);
  memset(kv, 0, sizeof *kv);
}

uint64_t llm_rope_table_bytes(const llm_hparams *hp, uint32_t max_pos, int local) {
  uint32_t rot = local && hp->rot_dim_local ? hp->rot_dim_local : hp->rot_dim;
  if (local && !hp->inv_freq_local) return 0;
  return (uint64_t)max_pos * (rot / 2) * 2 * 4;
}

static wgllm_status rope_table(gpu_context *gpu, const float *inv_freq, uint32_t rot_dim, uint32_t max_pos, float scale,
                               gpu_buffer **out, llm_err *err) {
  uint64_t n = (uint64_t)max_pos * (rot_dim / 2) * 2;
  float *cs = malloc(n * sizeof *cs);
  if (!cs) {
    return llm_err_set(err, WGLLM_ERR_OUT_OF_MEMORY, "out of host memory for the RoPE table");
  }
  op_rope_table(cs, inv_freq, rot_dim, max_pos, scale);
  wgllm_status s = gpu_buffer_create(gpu, n * 4, "rope_cs", out, err);
  if (!s) gpu_write(gpu, *out, 0, cs, n * 4);
  free(cs);
  return s;
}

wgllm_status llm_rope_tables_create(gpu_context *gpu, const llm_hparams *hp, uint32_t max_pos, llm_rope_tables *out,
                                    llm_err *err) {
  memset(out, 0, sizeof *out);
  /* longrope: the long factors for a context past the original length, cos and sin times its attention factor */
  const float *inv = hp->inv_freq_long && max_pos > hp->rope_orig_ctx ? hp->inv_freq_long : hp->inv_freq;
  float scale = hp->rope_attn_factor > 0 ? hp->rope_attn_factor : 1.0f;
  wgllm_status s = rope_table(gpu, inv, hp->rot_dim, max_pos, scale, &out->global, err);
  uint32_t rot_local = hp->rot_dim_local ? hp->rot_dim_local : hp->rot_dim;
  if (!s && hp->inv_freq_local) s = rope_table(gpu, hp->inv_freq_local, rot_local, max_pos, 1.0f, &out->local, err);
  if (s) llm_rope_tables_free(gpu, out);
  return s;
}

void llm_rope_tables_free(gpu_context *gpu, llm_rope_tables *t) {
  gpu_buffer_destroy(gpu, t->global);
  gpu_buffer_destroy(gpu, t->local);
  t->global = t->local = NULL;
}

uint32_t llm_kv_group(const llm_kv_cache *kv, uint32_t l, uint32_t j, op_kv_layout *layout, gpu_view *k, gpu_view *v,
                      uint32_t *first_head) {
  const op_kv_layout *all = &kv->layout[l];
  uint32_t g = kv->group_heads[l] ? kv->group_heads[l] : all->n_kv_head;
  uint64_t head = (uint64_t)all->ctx * all->head_dim * (all->f16 ? 2 : 4);
  *layout = *all;
  layout->n_kv_head = g;
  *first_head = j * g;
  if (kv->pooled && kv->pooled[l]) { /* one group: the whole pool */
    *k = gpu_whole(kv->k[l]);
    *v = gpu_whole(kv->v[l]);
    return 1;
  }
  *k = (gpu_view){.buf = kv->k[l], .offset = (uint64_t)j * g * head, .size = (uint64_t)g * head};
  *v = (gpu_view){.buf = kv->v[l], .offset = (uint64_t)j * g * head, .size = (uint64_t)g * head};
  return all->n_kv_head / g;
}
