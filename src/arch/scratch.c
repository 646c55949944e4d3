/* The activation scratch (scratch.h): buffers sized for the widest layer, the fast precision's int8 activations
   and flash-decoding's partial results, and the prefill chunk the device's binding limit allows. */
#include "scratch.h"
#include <string.h>

uint32_t llm_prefill_chunk_max(const gpu_context *gpu, const llm_hparams *hp) {
  /* the widest activation a token has in the scratch below (the logits row is sized apart) */
  uint64_t per = 2ull * llm_max_n_ff(hp), qkv = llm_max_qkv_rows(hp), ple = (uint64_t)hp->n_layer * hp->ple_dim;
  if (qkv > per) per = qkv;
  if (ple > per) per = ple;
  if (hp->n_embd > per) per = hp->n_embd;
  if (llm_has_moe(hp)) { /* a token's k pairs: their GLU outputs and their outputs */
    uint64_t k = hp->n_expert_used, moe = k * (hp->n_embd > 2 * hp->n_ff_exp ? hp->n_embd : 2 * hp->n_ff_exp);
    if (moe > per) per = moe;
  }
  uint64_t n = gpu->limits.maxStorageBufferBindingSize / (per * 4);
  return n > 65535 ? 65535 : (uint32_t)n; /* a pass's tokens are a grid dimension of the attention */
}

uint32_t llm_prefill_chunk(const gpu_context *gpu, const llm_hparams *hp) {
  uint32_t chunk = hp->window ? 512 : 1024, max = gpu ? llm_prefill_chunk_max(gpu, hp) : 65535;
  while (chunk > 16 && chunk > max)
    chunk /= 2;
  return chunk;
}

/* The activation buffers of a scratch for cap tokens and logit_rows rows of logits: where each goes, its bytes
   (0: not needed) and its name; one table for the allocation and the estimate. */
enum { SCRATCH_BUFS = 22 };
typedef struct scratch_want {
  gpu_buffer **b;
  uint64_t bytes;
  const char *name;
} scratch_want;

static void scratch_table(const llm_hparams *hp, uint32_t cap, uint32_t logit_rows, llm_scratch *s,
                          scratch_want want[SCRATCH_BUFS]) {
  uint64_t T = cap, qkv = llm_max_qkv_rows(hp), q = (uint64_t)hp->n_head * llm_max_head_dim(hp);
  uint64_t F = llm_max_n_ff(hp), P = hp->ple_dim;
  /* mixture of experts: E experts, k a token, each sized for the worst case (every token's k pairs) */
  int moe = llm_has_moe(hp);
  uint64_t E = moe ? hp->n_expert : 0, k = moe ? hp->n_expert_used : 0;
  /* the lists in a prompt's tiles or batched decode's smallest groups (the more tiles, the more words) */
  uint64_t lists = moe ? op_moe_lists_words(cap * hp->n_expert_used, hp->n_expert, OP_MOE_GROUP_MIN) * 4 : 0;
  /* the experts' outputs; or first, where gate and up are apart, their two outputs */
  uint64_t moe_y = T * k * hp->n_embd * 4, apart = moe ? llm_moe_up_offset(cap, (uint32_t)k, hp->n_ff_exp) * 2 : 0;
  if (apart > moe_y) moe_y = apart;
  scratch_want w[SCRATCH_BUFS] = {
      {&s->ids, T * 4, "ids"},
      {&s->pos, T * 4, "pos"},
      {&s->x, T * hp->n_embd * 4, "x"},
      {&s->xn, T * hp->n_embd * 4, "xn"},
      {&s->qkv, T * qkv * 4, "qkv"},
      {&s->qk2, T * qkv * 4, "qk2"},
      {&s->attn, T * q * 4, "attn"},
      {&s->proj, T * hp->n_embd * 4, "proj"},
      {&s->gu, T * 2 * F * 4, "gu"},
      {&s->h, T * F * 4, "h"},
      {&s->logits, (uint64_t)logit_rows * hp->n_vocab * 4, "logits"},
      {&s->ple, T * hp->n_layer * P * 4, "ple"},
      {&s->ple_tok, T * hp->n_layer * P * 4, "ple_tok"},
      {&s->ple_ctx, T * hp->n_layer * P * 4, "ple_ctx"},
      {&s->ple_h, T * P * 4, "ple_h"},
      {&s->moe_logits, T * E * 4, "moe_logits"},
      {&s->moe_ids, T * k * 4, "moe_ids"},
      {&s->moe_w, T * k * 4, "moe_w"},
      {&s->moe_lists, lists, "moe_lists"},
      {&s->moe_h, T * k * hp->n_ff_exp * 4, "moe_h"},
      {&s->moe_y, moe_y, "moe_y"},
      {&s->moe_x, hp->moe_dense_too ? T * hp->n_embd * 4 : 0, "moe_x"},
  };
  memcpy(want, w, sizeof w);
}

uint64_t llm_scratch_bytes(const llm_hparams *hp, uint32_t cap, uint32_t logit_rows) {
  llm_scratch s;
  scratch_want want[SCRATCH_BUFS];
  scratch_table(hp, cap, logit_rows, &s, want);
  uint64_t n = 0;
  for (size_t i = 0; i < SCRATCH_BUFS; i++)
    n += want[i].bytes;
  return n;
}

wgllm_status llm_scratch_acquire(gpu_context *gpu, const llm_hparams *hp, uint32_t cap, uint32_t logit_rows,
                                 llm_scratch *s, llm_err *err) {
  memset(s, 0, sizeof *s);
  s->cap = cap;
  s->logit_rows = logit_rows;
  scratch_want want[SCRATCH_BUFS];
  scratch_table(hp, cap, logit_rows, s, want);
  for (size_t i = 0; i < SCRATCH_BUFS; i++) {
    if (!want[i].bytes) continue; /* no per-layer inputs */
    wgllm_status st = gpu_pool_acquire(gpu, want[i].bytes, want[i].name, want[i].b, err);
    if (st) {
      llm_scratch_release(gpu, s);
      return st;
    }
  }
  return WGLLM_OK;
}

wgllm_status llm_scratch_add_fast(gpu_context *gpu, const llm_hparams *hp, llm_scratch *s, llm_err *err) {
  if (s->xq) return WGLLM_OK;
  /* the widest input of a multi-token linear layer: the hidden state, the MLP's, the attention's output (and below,
     the experts' rows) */
  uint64_t F = llm_max_n_ff(hp), q = (uint64_t)hp->n_head * llm_max_head_dim(hp);
  uint64_t kmax = hp->n_embd > F ? hp->n_embd : F;
  kmax = ((kmax > q ? kmax : q) + 31) / 32 * 32;
  uint64_t xq = op_q8_act_bytes(gpu, s->cap, (uint32_t)kmax);
  if (llm_has_moe(hp)) { /* the experts' down projection on a pass's T * k pair rows of the experts' width */
    uint64_t b = op_q8_act_bytes(gpu, s->cap * hp->n_expert_used, (hp->n_ff_exp + 31) / 32 * 32);
    if (b > xq) xq = b;
  }
  wgllm_status st = gpu_pool_acquire(gpu, xq, "xq", &s->xq, err);
  if (st || s->cap < OP_F16_MIN_ROWS || !op_gemm_f16_supports(gpu, s->cap, 256, 32)) return st;
  /* the largest projection: fused q|k|v, output, gate|up, down */
  uint32_t E = hp->n_embd, Fw = (uint32_t)F;
  uint64_t w16 = op_f16_bytes(llm_max_qkv_rows(hp), E), b;
  if ((b = op_f16_bytes(E, (uint32_t)q)) > w16) w16 = b;
  if ((b = op_f16_bytes(2 * Fw, E)) > w16) w16 = b;
  if ((b = op_f16_bytes(E, Fw)) > w16) w16 = b;
  uint64_t max_bind = gpu->limits.maxStorageBufferBindingSize, x16 = op_f16_bytes(s->cap, (uint32_t)kmax);
  if (w16 > max_bind) w16 = max_bind; /* the projections over it dequantize in the GEMM's tiles */
  if (x16 > max_bind) return WGLLM_OK;
  /* optional: refused (out of memory), the GEMMs dequantize in their tiles */
  if (gpu_pool_acquire(gpu, x16, "x16", &s->x16, NULL) || gpu_pool_acquire(gpu, w16, "w16", &s->w16, NULL)) {
    if (s->x16) gpu_pool_release(gpu, s->x16);
    s->x16 = s->w16 = NULL;
  }
  return WGLLM_OK;
}

void llm_scratch_add_small_gemm(gpu_context *gpu, const llm_hparams *hp, llm_scratch *s) {
  if (s->part || s->cap <= OP_GEMV_MAX_TOKENS || s->cap > OP_GEMV_MAX_BATCH) return;
  uint64_t n = 2ull * llm_max_n_ff(hp), b;
  if (llm_max_qkv_rows(hp) > n) n = llm_max_qkv_rows(hp);
  if (hp->n_embd > n) n = hp->n_embd;
  b = op_q8_small_part_bytes(s->cap, (uint32_t)n);
  if ((uint64_t)s->cap * hp->n_vocab * 4 > b) b = (uint64_t)s->cap * hp->n_vocab * 4;
  if (b > gpu->limits.maxStorageBufferBindingSize) b = gpu->limits.maxStorageBufferBindingSize;
  if (gpu_pool_acquire(gpu, b, "part", &s->part, NULL)) s->part = NULL; /* refused: the GEMV */
}

wgllm_status llm_scratch_add_decode(gpu_context *gpu, const llm_hparams *hp, const llm_kv_cache *kv, llm_scratch *s,
                                    llm_err *err) {
  wgllm_status st = WGLLM_OK;
  uint64_t partial = 0;
  for (uint32_t l = 0; l < kv->n_layer; l++) {
    uint64_t b = op_attn_partial_bytes(&kv->layout[l], hp->n_head, 0);
    if (b > partial) partial = b;
  }
  if (!s->attn_partial) st = gpu_pool_acquire(gpu, partial, "attn_partial", &s->attn_partial, err);
  if (!st && !s->attn_args) st = gpu_pool_acquire(gpu, 16, "attn_args", &s->attn_args, err);
  return st;
}

void llm_scratch_release(gpu_context *gpu, llm_scratch *s) {
  gpu_buffer **all[] = {
      &s->ids,        &s->pos,          &s->x,         &s->xn,        &s->qkv,     &s->qk2,     &s->attn,
      &s->proj,       &s->gu,           &s->h,         &s->ple,       &s->ple_tok, &s->ple_ctx, &s->ple_h,
      &s->logits,     &s->attn_partial, &s->attn_args, &s->xq,        &s->x16,     &s->w16,     &s->part,
      &s->moe_logits, &s->moe_ids,      &s->moe_w,     &s->moe_lists, &s->moe_h,   &s->moe_y,   &s->moe_x};
  for (size_t i = 0; i < sizeof all / sizeof all[0]; i++) {
    if (*all[i]) gpu_pool_release(gpu, *all[i]);
    *all[i] = NULL;
  }
}
