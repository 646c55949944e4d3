/* KV-cache append (kernels/kv_write.wgsl) and causal GQA attention over the cache (kernels/attention.wgsl). */
#include "ops.h"

typedef struct kv_write_params { uint32_t n_tokens, n_kv_head, head_dim, ctx, k_stride, k_off, v_stride, v_off; } kv_write_params;
typedef struct attn_gpu_params {
  uint32_t n_tokens, n_head, n_kv_head, head_dim, q_stride, q_off, out_stride, ctx, window;
  float scale, softcap;
  uint32_t _p;
} attn_gpu_params;

static wgllm_status check_kv(gpu_recorder *rec, const op_kv_layout *kv) {
  if (!kv->n_kv_head || !kv->head_dim || !kv->ctx) return op_fail(rec, WGLLM_ERR_INTERNAL, "kv: empty layout");
  if (kv->f16 && !op_ctx(rec)->has_f16)
    return op_fail(rec, WGLLM_ERR_UNSUPPORTED, "f16 KV cache needs shader-f16, which the device did not grant");
  if (kv->f16 && kv->head_dim % 4)
    return op_fail(rec, WGLLM_ERR_UNSUPPORTED, "f16 KV cache needs head_dim %% 4 == 0 (head_dim %u)", kv->head_dim);
  return WGLLM_OK;
}

wgllm_status op_kv_write(gpu_recorder *rec, const op_kv_layout *kv, gpu_view k, uint32_t k_stride, uint32_t k_off,
                         gpu_view v, uint32_t v_stride, uint32_t v_off, gpu_view pos, gpu_view kcache,
                         gpu_view vcache, uint32_t n_tokens) {
  wgllm_status s = check_kv(rec, kv);
  if (s) return s;
  if (!n_tokens) return op_fail(rec, WGLLM_ERR_INTERNAL, "kv_write: no tokens");
  kv_write_params p = {n_tokens, kv->n_kv_head, kv->head_dim, kv->ctx, k_stride, k_off, v_stride, v_off};
  gpu_dispatch_desc d = {.kernel = "kv_write", .variant = kv->f16 ? "f16" : "f32", .params = &p, .params_size = sizeof p, .n_bind = 5};
  d.bind[0] = k;
  d.bind[1] = v;
  d.bind[2] = pos;
  d.bind[3] = kcache;
  d.bind[4] = vcache;
  d.grid[0] = (kv->n_kv_head * kv->head_dim + 63) / 64;
  d.grid[1] = n_tokens;
  d.grid[2] = 1;
  return gpu_record(rec, &d);
}

wgllm_status op_attention(gpu_recorder *rec, const op_kv_layout *kv, const op_attn_params *a, gpu_view q,
                          gpu_view kcache, gpu_view vcache, gpu_view pos, gpu_view out) {
  wgllm_status s = check_kv(rec, kv);
  if (s) return s;
  if (!a->n_tokens || !a->n_head || a->n_head % kv->n_kv_head)
    return op_fail(rec, WGLLM_ERR_INTERNAL, "attention: %u heads not a multiple of %u KV heads", a->n_head, kv->n_kv_head);
  if (kv->head_dim > 512) return op_fail(rec, WGLLM_ERR_UNSUPPORTED, "attention: head_dim %u > 512", kv->head_dim);
  attn_gpu_params p = {a->n_tokens, a->n_head, kv->n_kv_head, kv->head_dim, a->q_stride, a->q_off, a->out_stride,
                       kv->ctx, a->window, a->scale, a->softcap, 0};
  gpu_dispatch_desc d = {.kernel = "attention", .variant = kv->f16 ? "f16" : "f32", .params = &p, .params_size = sizeof p, .n_bind = 5};
  d.bind[0] = q;
  d.bind[1] = kcache;
  d.bind[2] = vcache;
  d.bind[3] = pos;
  d.bind[4] = out;
  d.grid[0] = a->n_head;
  d.grid[1] = a->n_tokens;
  d.grid[2] = 1;
  return gpu_record(rec, &d);
}
