/* Prefill attention on subgroup matrices (kernels/attn_prefill_mma.wgsl): the fast precision's prefill attention
   where the device grants f16 subgroup matrices, Q K^T and P V as f16 multiply-accumulates into f32. */
#include "ops.h"

typedef struct attn_mma_params {
  uint32_t n_tokens, n_head, n_kv_head, head_dim, q_stride, q_off, out_stride, ctx, window;
  float scale, softcap;
  uint32_t _p;
} attn_mma_params;
_Static_assert(sizeof(attn_mma_params) == 48,
               "attn_mma_params mirrors the Params block of kernels/attn_prefill_mma.wgsl");

/* workgroup memory: K and V tiles of 32 keys (q's 64 rows before the walk), 4 subgroups' scores and
   probabilities, the key range */
static uint32_t attn_mma_workgroup_bytes(uint32_t hd) {
  return 2 * 32 * (hd + 8) * 2 + 4 * 16 * 32 * 4 + 4 * 16 * 40 * 2 + 16;
}

int op_attention_mma_supports(const gpu_context *ctx, const op_kv_layout *kv, const op_attn_params *a) {
  if (kv->head_dim != 64 && kv->head_dim != 128) return 0;
  if (!kv->n_kv_head || !a->n_head || a->n_head % kv->n_kv_head || a->n_tokens < 2) return 0;
  /* a ring (a sliding window's cache) of fewer slots than a 32-key block could wrap twice in one block; a cache
     without a window is linear and never wraps */
  if (a->window && kv->ctx < 32) return 0;
  if ((a->n_tokens + 63) / 64 > ctx->limits.maxComputeWorkgroupsPerDimension) return 0;
  return op_smat_f16_ready(ctx, attn_mma_workgroup_bytes(kv->head_dim), 128);
}

wgllm_status op_attention_mma(gpu_recorder *rec, const op_kv_layout *kv, const op_attn_params *a, gpu_view q,
                              gpu_view kcache, gpu_view vcache, gpu_view pos, gpu_view out) {
  if (!op_attention_mma_supports(op_ctx(rec), kv, a))
    return op_fail(rec, WGLLM_ERR_UNSUPPORTED,
                   "attn_prefill_mma: needs f16 subgroup matrices, subgroups of 32, head_dim 64 or 128 (%u), at least "
                   "2 tokens (%u) and n_head a multiple of n_kv_head (%u, %u)",
                   kv->head_dim, a->n_tokens, a->n_head, kv->n_kv_head);
  attn_mma_params p = {.n_tokens = a->n_tokens,
                       .n_head = a->n_head,
                       .n_kv_head = kv->n_kv_head,
                       .head_dim = kv->head_dim,
                       .q_stride = a->q_stride,
                       .q_off = a->q_off,
                       .out_stride = a->out_stride,
                       .ctx = kv->ctx,
                       .window = a->window,
                       .scale = a->scale,
                       .softcap = a->softcap};
  const char *variant = kv->head_dim == 64 ? (kv->f16 ? V_ATTN_PREFILL_MMA_F16_D64 : V_ATTN_PREFILL_MMA_F32_D64)
                                           : (kv->f16 ? V_ATTN_PREFILL_MMA_F16_D128 : V_ATTN_PREFILL_MMA_F32_D128);
  return op_dispatch(rec, &(op_dispatch_args){.kernel = K_ATTN_PREFILL_MMA,
                                              .variant = variant,
                                              .params = &p,
                                              .params_size = sizeof p,
                                              .access = "rrrrw",
                                              .bind = {q, kcache, vcache, pos, out},
                                              .grid = {a->n_head, (a->n_tokens + 63) / 64}});
}
