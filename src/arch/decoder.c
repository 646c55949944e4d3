/* What the decoder forward passes share (see decoder.h): activation scratch sized for the widest layer, the
   KV cache (per owning layer, in its own layout; KV-shared layers get none), RoPE tables, and the dispatch to
   the family's forward function. */
#include "decoder.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

uint32_t llm_prefill_chunk_max(const gpu_context *gpu, const llm_hparams *hp) {
  /* the widest activation a token has in the scratch below (the logits row is sized apart) */
  uint64_t per = 2ull * llm_max_n_ff(hp), qkv = llm_max_qkv_rows(hp), ple = (uint64_t)hp->n_layer * hp->ple_dim;
  if (qkv > per) per = qkv;
  if (ple > per) per = ple;
  if (hp->n_embd > per) per = hp->n_embd;
  uint64_t n = gpu->limits.maxStorageBufferBindingSize / (per * 4);
  return n > 65535 ? 65535 : (uint32_t)n; /* a pass's tokens are a grid dimension of the attention */
}

uint32_t llm_prefill_chunk(const gpu_context *gpu, const llm_hparams *hp) {
  uint32_t chunk = hp->window ? 512 : 1024, max = llm_prefill_chunk_max(gpu, hp);
  while (chunk > 16 && chunk > max)
    chunk /= 2;
  return chunk;
}

wgllm_status llm_scratch_acquire(gpu_context *gpu, const llm_hparams *hp, uint32_t cap, uint32_t logit_rows,
                                 llm_scratch *s, char *err, size_t errlen) {
  memset(s, 0, sizeof *s);
  s->cap = cap;
  s->logit_rows = logit_rows;
  uint64_t T = cap, qkv = llm_max_qkv_rows(hp), q = (uint64_t)hp->n_head * llm_max_head_dim(hp);
  uint64_t F = llm_max_n_ff(hp), P = hp->ple_dim;
  struct {
    gpu_buffer **b;
    uint64_t bytes;
    const char *name;
  } want[] = {
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
  };
  for (size_t i = 0; i < sizeof want / sizeof want[0]; i++) {
    if (!want[i].bytes) continue; /* no per-layer inputs */
    wgllm_status st = gpu_pool_acquire(gpu, want[i].bytes, want[i].name, want[i].b, err, errlen);
    if (st) {
      llm_scratch_release(gpu, s);
      return st;
    }
  }
  return WGLLM_OK;
}

wgllm_status llm_scratch_add_fast(gpu_context *gpu, const llm_hparams *hp, llm_scratch *s, char *err, size_t errlen) {
  if (s->xq) return WGLLM_OK;
  /* the widest input of a multi-token linear layer: the hidden state, the MLP's, the attention's output */
  uint64_t F = llm_max_n_ff(hp), q = (uint64_t)hp->n_head * llm_max_head_dim(hp);
  uint64_t kmax = hp->n_embd > F ? hp->n_embd : F;
  kmax = ((kmax > q ? kmax : q) + 31) / 32 * 32;
  wgllm_status st = gpu_pool_acquire(gpu, op_q8_act_bytes(gpu, s->cap, (uint32_t)kmax), "xq", &s->xq, err, errlen);
  if (st || s->cap <= OP_GEMV_MAX_TOKENS || !op_gemm_f16_supports(gpu, s->cap, 256, 32)) return st;
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
  char e2[256];
  if (gpu_pool_acquire(gpu, x16, "x16", &s->x16, e2, sizeof e2) ||
      gpu_pool_acquire(gpu, w16, "w16", &s->w16, e2, sizeof e2)) {
    if (s->x16) gpu_pool_release(gpu, s->x16);
    s->x16 = s->w16 = NULL;
  }
  return WGLLM_OK;
}

wgllm_status llm_scratch_add_decode(gpu_context *gpu, const llm_hparams *hp, const llm_kv_cache *kv, llm_scratch *s,
                                    char *err, size_t errlen) {
  wgllm_status st = WGLLM_OK;
  uint64_t partial = 0;
  for (uint32_t l = 0; l < kv->n_layer; l++) {
    uint64_t b = op_attn_partial_bytes(&kv->layout[l], hp->n_head, 0);
    if (b > partial) partial = b;
  }
  if (!s->attn_partial) st = gpu_pool_acquire(gpu, partial, "attn_partial", &s->attn_partial, err, errlen);
  if (!st && !s->attn_args) st = gpu_pool_acquire(gpu, 16, "attn_args", &s->attn_args, err, errlen);
  return st;
}

void llm_scratch_release(gpu_context *gpu, llm_scratch *s) {
  gpu_buffer **all[] = {&s->ids,    &s->pos,          &s->x,         &s->xn,  &s->qkv,     &s->qk2,     &s->attn,
                        &s->proj,   &s->gu,           &s->h,         &s->ple, &s->ple_tok, &s->ple_ctx, &s->ple_h,
                        &s->logits, &s->attn_partial, &s->attn_args, &s->xq,  &s->x16,     &s->w16};
  for (size_t i = 0; i < sizeof all / sizeof all[0]; i++) {
    if (*all[i]) gpu_pool_release(gpu, *all[i]);
    *all[i] = NULL;
  }
}

/* "488.3 MiB", "64.0 KiB": a size for messages */
static const char *size_str(uint64_t b, char *buf, size_t n) {
  if (b >= (1ull << 30))
    snprintf(buf, n, "%.2f GiB", (double)b / (1 << 30));
  else if (b >= (1ull << 20))
    snprintf(buf, n, "%.1f MiB", (double)b / (1 << 20));
  else
    snprintf(buf, n, "%.1f KiB", (double)b / 1024);
  return buf;
}

wgllm_status llm_kv_cache_create(gpu_context *gpu, const llm_hparams *hp, uint32_t ctx, uint32_t chunk, int f16,
                                 uint64_t max_binding, llm_kv_cache *kv, char *err, size_t errlen) {
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
    snprintf(err, errlen, "out of host memory");
    return WGLLM_ERR_OUT_OF_MEMORY;
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
      snprintf(err, errlen, "layer %u: head_dim %u is not a multiple of 4, which the attention kernels need", l, hd);
      st = WGLLM_ERR_UNSUPPORTED;
      break;
    }
    /* a window layer keeps window + chunk slots (at least 128: the kernels' blocks of up to 128 keys wrap at most
       once) */
    uint32_t w = llm_layer_window(hp, l), slots = ctx;
    if (w && (uint64_t)w + chunk < ctx) {
      slots = w + chunk < 128 ? 128 : w + chunk;
      if (slots > ctx) slots = ctx;
    }
    if (slots < ctx && slots - w < kv->ring_slack) kv->ring_slack = slots - w;
    kv->layout[l] = (op_kv_layout){llm_layer_n_head_kv(hp, l), hd, slots, f16};
    if (src != l) { /* a KV-shared layer: its source came earlier */
      kv->layout[l] = kv->layout[src];
      kv->group_heads[l] = kv->group_heads[src];
      continue;
    }
    uint32_t nkv = kv->layout[l].n_kv_head;
    uint64_t head = (uint64_t)slots * hd * (f16 ? 2 : 4), per = nkv * head;
    /* bound in groups of KV heads where the layer is over the binding limit: the most heads a binding that
       divides the heads and keeps the groups' K / V and attention-output offsets aligned */
    uint32_t g = nkv, rep = hp->n_head / nkv;
    while (g > 1 && ((uint64_t)g * head > max_bind || nkv % g))
      g--;
    if (g < nkv && (head % align || ((uint64_t)g * rep * hd * 4) % align)) g = 0;
    if (g == 0 || (uint64_t)g * head > max_bind) {
      char a[32], b[32];
      snprintf(err, errlen,
               "KV cache: layer %u keeps %u positions x %u KV heads x %u x %s = %s for K (and as much for V); one "
               "KV head%s is over the storage binding limit of %s: a context of at most %llu fits%s",
               l, slots, nkv, hd, f16 ? "f16" : "f32", size_str(per, a, sizeof a),
               g ? "" : " (or a group whose offset meets the binding alignment)", size_str(max_bind, b, sizeof b),
               (unsigned long long)ctx_fits, f16 ? "" : " (twice that with an f16 cache)");
      st = WGLLM_ERR_UNSUPPORTED;
      break;
    }
    if (per > gpu->limits.maxBufferSize) {
      char a[32], b[32];
      snprintf(err, errlen, "KV cache: layer %u needs %s for K, over the device's largest buffer of %s", l,
               size_str(per, a, sizeof a), size_str(gpu->limits.maxBufferSize, b, sizeof b));
      st = WGLLM_ERR_UNSUPPORTED;
      break;
    }
    kv->group_heads[l] = g;
    kv->bytes += 2 * per;
  }
  /* the whole cache against what the device has left (its memory less what this context holds), before any of
     it is allocated */
  uint64_t used = gpu->bytes_live < gpu->device_memory ? gpu->bytes_live : gpu->device_memory;
  if (!st && gpu->device_memory && kv->bytes > gpu->device_memory - used) {
    char a[32], b[32], c[32];
    snprintf(err, errlen,
             "KV cache: %u positions need %s, and %s has %s of its %s left (weights and other sessions hold the "
             "rest)%s",
             ctx, size_str(kv->bytes, a, sizeof a), gpu->adapter_name, size_str(gpu->device_memory - used, b, sizeof b),
             size_str(gpu->device_memory, c, sizeof c), f16 ? "" : "; an f16 cache takes half");
    st = WGLLM_ERR_OUT_OF_MEMORY;
  }
  for (uint32_t l = 0; !st && l < hp->n_layer; l++) {
    if (llm_layer_kv_source(hp, l) != l) continue;
    uint64_t per = (uint64_t)kv->layout[l].n_kv_head * kv->layout[l].ctx * kv->layout[l].head_dim * (f16 ? 2 : 4);
    st = gpu_buffer_create(gpu, per, "kv_k", &kv->k[l], err, errlen);
    if (!st) st = gpu_buffer_create(gpu, per, "kv_v", &kv->v[l], err, errlen);
  }
  if (st) llm_kv_cache_free(gpu, kv);
  return st;
}

void llm_kv_cache_free(gpu_context *gpu, llm_kv_cache *kv) {
  for (uint32_t l = 0; l < kv->n_layer; l++) {
    if (kv->k) gpu_buffer_destroy(gpu, kv->k[l]);
    if (kv->v) gpu_buffer_destroy(gpu, kv->v[l]);
  }
  free(kv->layout);
  free(kv->group_heads);
  free(kv->k);
  free(kv->v);
  memset(kv, 0, sizeof *kv);
}

static wgllm_status rope_table(gpu_context *gpu, const float *inv_freq, uint32_t rot_dim, uint32_t max_pos,
                               gpu_buffer **out, char *err, size_t errlen) {
  uint64_t n = (uint64_t)max_pos * (rot_dim / 2) * 2;
  float *cs = malloc(n * sizeof *cs);
  if (!cs) {
    snprintf(err, errlen, "out of host memory for the RoPE table");
    return WGLLM_ERR_OUT_OF_MEMORY;
  }
  op_rope_table(cs, inv_freq, rot_dim, max_pos, 1.0f);
  wgllm_status s = gpu_buffer_create(gpu, n * 4, "rope_cs", out, err, errlen);
  if (!s) gpu_write(gpu, *out, 0, cs, n * 4);
  free(cs);
  return s;
}

wgllm_status llm_rope_tables_create(gpu_context *gpu, const llm_hparams *hp, uint32_t max_pos, llm_rope_tables *out,
                                    char *err, size_t errlen) {
  memset(out, 0, sizeof *out);
  wgllm_status s = rope_table(gpu, hp->inv_freq, hp->rot_dim, max_pos, &out->global, err, errlen);
  uint32_t rot_local = hp->rot_dim_local ? hp->rot_dim_local : hp->rot_dim;
  if (!s && hp->inv_freq_local) s = rope_table(gpu, hp->inv_freq_local, rot_local, max_pos, &out->local, err, errlen);
  if (s) llm_rope_tables_free(gpu, out);
  return s;
}

void llm_rope_tables_free(gpu_context *gpu, llm_rope_tables *t) {
  gpu_buffer_destroy(gpu, t->global);
  gpu_buffer_destroy(gpu, t->local);
  t->global = t->local = NULL;
}

int llm_fused_decode_ok(gpu_recorder *rec, const llm_model *m, uint32_t T) {
  const llm_hparams *hp = &m->hp;
  int sg, ok = 1;
  for (uint32_t l = 0; ok && l < hp->n_layer; l++) {
    const llm_layer *ly = &m->layers[l];
    uint32_t F = llm_layer_n_ff(hp, l);
    ok = op_gemv_supports(op_ctx(rec), &ly->wqkv, T, hp->n_embd, &sg) &&
         op_gemv_supports(op_ctx(rec), &ly->wo, T, llm_layer_q_width(hp, l), &sg) &&
         op_gemv_supports(op_ctx(rec), &ly->w_gate_up, T, hp->n_embd, &sg) &&
         op_gemv_supports(op_ctx(rec), &ly->w_down, T, F, &sg);
  }
  return ok;
}

int llm_batch_forward_ok(gpu_recorder *rec, const llm_model *m, uint32_t T, char *why, size_t whylen) {
  const llm_hparams *hp = &m->hp;
  const gpu_context *ctx = op_ctx(rec);
  uint64_t align = ctx->limits.minStorageBufferOffsetAlignment ? ctx->limits.minStorageBufferOffsetAlignment : 256;
  const char *no = NULL;
  if (hp->arch == LLM_ARCH_GEMMA4)
    no = "Gemma 4's per-layer inputs have no batched path";
  else if (T < 2 || T > OP_GEMV_MAX_TOKENS)
    no = "a batch takes 2 to 8 tokens";
  else if (!llm_fused_decode_ok(rec, m, T))
    no = "the projections have no fused GEMV for several tokens (weight storage or device)";
  else if (((uint64_t)hp->n_embd * 4) % align || ((uint64_t)hp->n_vocab * 4) % align)
    no = "a token's row of the residual stream or of the logits does not start on a binding offset";
  for (uint32_t l = 0; !no && l < hp->n_layer; l++) {
    if (((uint64_t)llm_layer_q_width(hp, l) * 4) % align)
      no = "a token's row of the attention output does not start on a binding offset";
    else if (llm_layer_rot_dim(hp, l) % 4)
      no = "a rotary dimension that is not a multiple of 4 (RoPE is not folded into the attention)";
    else if (!llm_layer_owns_kv(hp, l))
      no = "KV-shared layers";
  }
  if (no) snprintf(why, whylen, "%s", no);
  return !no;
}

wgllm_status llm_encode_forward_batch(gpu_recorder *rec, const llm_model *m, const llm_fwd_token *tokens, uint32_t n,
                                      uint32_t T, const llm_scratch *s, int fast) {
  static const llm_forward_opts exact = {0}, fast_opts = {.fast = 1};
  const llm_forward_opts *defaults = fast ? &fast_opts : &exact;
  char why[160];
  if (!llm_batch_forward_ok(rec, m, T, why, sizeof why))
    return op_fail(rec, WGLLM_ERR_UNSUPPORTED, "batched decode: %s", why);
  if (T > s->cap || T > s->logit_rows || n == 0 || n > T)
    return op_fail(rec, WGLLM_ERR_INTERNAL, "batched forward: %u of T=%u over scratch %u/%u", n, T, s->cap,
                   s->logit_rows);
  llm_fwd f = {rec, m, tokens[0].kv, tokens[0].rope, s, T, defaults, 1, tokens, n};
  return llm_forward_llama(&f, T);
}

wgllm_status llm_encode_forward(gpu_recorder *rec, const llm_model *m, const llm_kv_cache *kv,
                                const llm_rope_tables *rope, const llm_scratch *s, uint32_t T, uint32_t n_logits,
                                const llm_forward_opts *fo) {
  static const llm_forward_opts defaults = {0};
  if (!fo) fo = &defaults;
  if (T == 0 || T > s->cap || n_logits == 0 || n_logits > T || n_logits > s->logit_rows)
    return op_fail(rec, WGLLM_ERR_INTERNAL, "forward: T=%u n_logits=%u over scratch %u/%u", T, n_logits, s->cap,
                   s->logit_rows);
  llm_fwd f = {rec, m, kv, rope, s, T, fo, 0};
  f.fused = T == 1 && !fo->unfused && llm_fused_decode_ok(rec, m, 1);
  if (m->hp.arch == LLM_ARCH_GEMMA4) return llm_forward_gemma4(&f, n_logits);
  return llm_forward_llama(&f, n_logits);
}

uint32_t llm_kv_group(const llm_kv_cache *kv, uint32_t l, uint32_t j, op_kv_layout *layout, gpu_view *k, gpu_view *v,
                      uint32_t *first_head) {
  const op_kv_layout *all = &kv->layout[l];
  uint32_t g = kv->group_heads[l] ? kv->group_heads[l] : all->n_kv_head;
  uint64_t head = (uint64_t)all->ctx * all->head_dim * (all->f16 ? 2 : 4);
  *layout = *all;
  layout->n_kv_head = g;
  *first_head = j * g;
  *k = (gpu_view){kv->k[l], (uint64_t)j * g * head, (uint64_t)g * head};
  *v = (gpu_view){kv->v[l], (uint64_t)j * g * head, (uint64_t)g * head};
  return all->n_kv_head / g;
}
