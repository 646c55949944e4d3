/* Rotary position embedding (kernels/rope.wgsl) and the CPU-built cos/sin table it reads. */
#include "ops.h"
#include <math.h>

typedef struct rope_params {
  uint32_t n_tokens, n_heads, head_dim, rot_dim, token_stride, mode, max_pos, x_off;
} rope_params;
_Static_assert(sizeof(rope_params) == 32, "rope_params mirrors the Params block of kernels/rope.wgsl");

wgllm_status op_rope(gpu_recorder *rec, gpu_view x, gpu_view pos, gpu_view cs, const op_rope_params *q) {
  uint32_t rot_dim = q->rot_dim, head_dim = q->head_dim, n_heads = q->n_heads, token_stride = q->token_stride;
  if (rot_dim == 0 || rot_dim % 2 || rot_dim > head_dim || token_stride < n_heads * head_dim || q->max_pos == 0)
    return op_fail(rec, WGLLM_ERR_INTERNAL, "rope: bad shape rot_dim=%u head_dim=%u heads=%u stride=%u", rot_dim,
                   head_dim, n_heads, token_stride);
  rope_params p = {.n_tokens = q->n_tokens,
                   .n_heads = n_heads,
                   .head_dim = head_dim,
                   .rot_dim = rot_dim,
                   .token_stride = token_stride,
                   .mode = (uint32_t)q->mode,
                   .max_pos = q->max_pos,
                   .x_off = q->x_off};
  uint32_t rows = q->n_tokens * n_heads;
  uint32_t maxg = op_ctx(rec)->limits.maxComputeWorkgroupsPerDimension, gy = rows < maxg ? rows : maxg;
  return op_dispatch(rec, &(op_dispatch_args){.kernel = K_ROPE,
                                              .variant = V_ROPE_F32,
                                              .params = &p,
                                              .params_size = sizeof p,
                                              .access = "wrr",
                                              .bind = {x, pos, cs},
                                              .grid = {(rot_dim / 2 + 63) / 64, gy, (rows + gy - 1) / gy}});
}

void op_rope_table(float *cs, const float *inv_freq, uint32_t rot_dim, uint32_t max_pos, float attn_scale) {
  uint32_t half = rot_dim / 2;
  for (uint32_t p = 0; p < max_pos; p++)
    for (uint32_t i = 0; i < half; i++) {
      float ang = (float)p * inv_freq[i]; /* f32 product, as transformers computes it */
      cs[(p * half + i) * 2 + 0] = (float)(cos((double)ang) * attn_scale);
      cs[(p * half + i) * 2 + 1] = (float)(sin((double)ang) * attn_scale);
    }
}

typedef struct rope_kv_gpu_params {
  uint32_t n_tokens, n_head, n_kv_head, head_dim, rot_dim, mode, max_pos, ctx;
  uint32_t q_off, q_stride, k_off, k_stride, v_off, v_stride, v_in_x, seq;
  uint32_t max_blocks, block, n_blocks, _q;
} rope_kv_gpu_params;
_Static_assert(sizeof(rope_kv_gpu_params) == 80, "rope_kv_gpu_params mirrors the Params block of kernels/rope_kv.wgsl");

wgllm_status op_rope_kv(gpu_recorder *rec, const op_kv_layout *kv, const op_rope_kv_params *rp, gpu_view x,
                        gpu_view vsrc, gpu_view pos, gpu_view cs, gpu_view kcache, gpu_view vcache) {
  /* the kernel clamps positions to max_pos - 1 (the angle table) and wraps them at ctx (the cache's slots) */
  if (!rp->max_pos || !kv->ctx || !kv->n_kv_head)
    return op_fail(rec, WGLLM_ERR_INTERNAL, "rope_kv: empty angle table or cache (max_pos %u, ctx %u)", rp->max_pos,
                   kv->ctx);
  if (kv->head_dim % 4 || rp->rot_dim % 4 || rp->rot_dim > kv->head_dim || !rp->n_tokens || rp->n_head % kv->n_kv_head)
    return op_fail(rec, WGLLM_ERR_UNSUPPORTED, "rope_kv: head_dim %u / rot_dim %u must be multiples of 4", kv->head_dim,
                   rp->rot_dim);
  const op_kv_pages *pg = rp->pages;
  wgllm_status s;
  if (pg && (s = op_check_pages(rec, "rope_kv", kv, pg, pg->seq + 1, kcache, vcache))) return s;
  rope_kv_gpu_params p = {.n_tokens = rp->n_tokens,
                          .n_head = rp->n_head,
                          .n_kv_head = kv->n_kv_head,
                          .head_dim = kv->head_dim,
                          .rot_dim = rp->rot_dim,
                          .mode = (uint32_t)rp->mode,
                          .max_pos = rp->max_pos,
                          .ctx = kv->ctx,
                          .q_off = rp->q_off,
                          .q_stride = rp->q_stride,
                          .k_off = rp->k_off,
                          .k_stride = rp->k_stride,
                          .v_off = rp->v_off,
                          .v_stride = rp->v_stride,
                          .v_in_x = vsrc.buf ? 0u : 1u,
                          .seq = pg ? pg->seq : 0,
                          .max_blocks = pg ? pg->max_blocks : 0,
                          .block = pg ? pg->block : 0,
                          .n_blocks = pg ? pg->n_blocks : 0};
  static const char *const variants[2][2] = {{V_ROPE_KV_F32, V_ROPE_KV_F32PAGED}, {V_ROPE_KV_F16, V_ROPE_KV_F16PAGED}};
  return op_dispatch(
      rec,
      &(op_dispatch_args){.kernel = K_ROPE_KV,
                          .variant = variants[kv->f16 != 0][pg != NULL],
                          .params = &p,
                          .params_size = sizeof p,
                          .access = pg ? "wrrrwwr" : "wrrrww",
                          /* vsrc unused when V comes from x */
                          .bind = {x, vsrc.buf ? vsrc : pos, pos, cs, kcache, vcache, pg ? pg->table : (gpu_view){0}},
                          .grid = {(kv->head_dim / 4 + 63) / 64, rp->n_head + kv->n_kv_head, rp->n_tokens}});
}
