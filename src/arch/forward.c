/* The family dispatch: a row per architecture family with its forward function and what it can do (the batched
   prefill of several sessions), read instead of testing the family's name; the checks a pass needs before it is
   recorded (batched decode) and the entry points of decoder.h. */
#include "blocks.h"
#include <stdio.h>

/* A family as the forward pass sees it (the readers' row is src/model/families.c's llm_family). */
typedef struct arch_family {
  llm_arch arch;
  wgllm_status (*forward)(const llm_fwd *f, uint32_t n_logits);
  int batched_prefill;                 /* llm_encode_prefill_batch can record it */
  const char *why_not_batched_prefill; /* and if not, why */
} arch_family;

static const arch_family FAMILIES[] = {
    {.arch = LLM_ARCH_LLAMA, .forward = llm_forward_llama, .batched_prefill = 1},
    {.arch = LLM_ARCH_QWEN2, .forward = llm_forward_llama, .batched_prefill = 1},
    {.arch = LLM_ARCH_QWEN3, .forward = llm_forward_llama, .batched_prefill = 1},
    {.arch = LLM_ARCH_GEMMA3, .forward = llm_forward_llama, .batched_prefill = 1},
    /* the MoE block's ops take any number of rows: every path (batched decode by pair, batched prefill by tiles) */
    {.arch = LLM_ARCH_QWEN3_MOE, .forward = llm_forward_llama, .batched_prefill = 1},
    {.arch = LLM_ARCH_MIXTRAL, .forward = llm_forward_llama, .batched_prefill = 1},
    {.arch = LLM_ARCH_PHI3, .forward = llm_forward_llama, .batched_prefill = 1},
    {.arch = LLM_ARCH_GPT_OSS, .forward = llm_forward_llama, .batched_prefill = 1},
    {.arch = LLM_ARCH_GEMMA4,
     .forward = llm_forward_gemma4,
     .batched_prefill = 0,
     .why_not_batched_prefill = "Gemma 4's batched prefill is not built (its KV-shared layers would append)"},
};

/* The model's row; NULL for a family without one (a row missing here, not a model to run as another). */
static const arch_family *family_of(const llm_model *m) {
  for (size_t i = 0; i < sizeof FAMILIES / sizeof FAMILIES[0]; i++)
    if (FAMILIES[i].arch == m->hp.arch) return &FAMILIES[i];
  return NULL;
}

int llm_batch_forward_ok(gpu_recorder *rec, const llm_model *m, uint32_t T, char *why, size_t whylen) {
  const llm_hparams *hp = &m->hp;
  const gpu_context *ctx = op_ctx(rec);
  uint64_t align = ctx->limits.minStorageBufferOffsetAlignment ? ctx->limits.minStorageBufferOffsetAlignment : 256;
  const char *no = NULL;
  const arch_family *fam = family_of(m);
  if (!fam)
    no = "a family without a forward pass";
  else if (T < 2 || T > OP_GEMV_MAX_BATCH)
    no = "a batch takes 2 to 64 tokens";
  else if (llm_fused_decode_ok(rec, m, 1) && !llm_fused_decode_ok(rec, m, T))
    no = "the projections have a fused GEMV for one token and not for several (weight storage or device)";
  else if (((uint64_t)hp->n_embd * 4) % align || ((uint64_t)hp->n_vocab * 4) % align)
    no = "a token's row of the residual stream or of the logits does not start on a binding offset";
  for (uint32_t l = 0; !no && l < hp->n_layer; l++) {
    if (((uint64_t)llm_layer_q_width(hp, l) * 4) % align)
      no = "a token's row of the attention output does not start on a binding offset";
    else if (llm_layer_rot_dim(hp, l) % 4)
      no = "a rotary dimension that is not a multiple of 4 (RoPE is not folded into the attention)";
  }
  if (no) snprintf(why, whylen, "%s", no);
  return !no;
}

wgllm_status llm_encode_forward_batch(gpu_recorder *rec, const llm_model *m, const llm_fwd_token *tokens, uint32_t n,
                                      uint32_t T, const llm_scratch *s, int fast, const llm_fwd_paged *paged) {
  static const llm_forward_opts exact = {0}, fast_opts = {.fast = 1};
  const llm_forward_opts *defaults = fast ? &fast_opts : &exact;
  char why[160];
  if (!llm_batch_forward_ok(rec, m, T, why, sizeof why))
    return op_fail(rec, WGLLM_ERR_UNSUPPORTED, "batched decode: %s", why);
  if (T > s->cap || T > s->logit_rows || n == 0 || n > T)
    return op_fail(rec, WGLLM_ERR_INTERNAL, "batched forward: %u of T=%u over scratch %u/%u", n, T, s->cap,
                   s->logit_rows);
  llm_fwd f = {.rec = rec,
               .m = m,
               .kv = tokens[0].kv,
               .rope = tokens[0].rope,
               .s = s,
               .T = T,
               .fo = defaults,
               .fused = llm_fused_decode_ok(rec, m, 1), /* as the session's own step: its rows are its steps */
               .tokens = tokens,
               .n_seq = n,
               .paged = paged};
  return family_of(m)->forward(&f, T);
}

wgllm_status llm_encode_forward(gpu_recorder *rec, const llm_model *m, const llm_kv_cache *kv,
                                const llm_rope_tables *rope, const llm_scratch *s, uint32_t T, uint32_t n_logits,
                                const llm_forward_opts *fo) {
  static const llm_forward_opts defaults = {0};
  if (!fo) fo = &defaults;
  if (T == 0 || T > s->cap || n_logits == 0 || n_logits > T || n_logits > s->logit_rows)
    return op_fail(rec, WGLLM_ERR_INTERNAL, "forward: T=%u n_logits=%u over scratch %u/%u", T, n_logits, s->cap,
                   s->logit_rows);
  const arch_family *fam = family_of(m);
  if (!fam) return op_fail(rec, WGLLM_ERR_INTERNAL, "forward: family %d has no forward pass", (int)m->hp.arch);
  llm_fwd f = {.rec = rec,
               .m = m,
               .kv = kv,
               .rope = rope,
               .s = s,
               .T = T,
               .fo = fo,
               .fused = T == 1 && !fo->unfused && !fo->prefill && llm_fused_decode_ok(rec, m, 1)};
  return fam->forward(&f, n_logits);
}

int llm_prefill_batch_ok(gpu_recorder *rec, const llm_model *m, char *why, size_t whylen) {
  const llm_hparams *hp = &m->hp;
  uint64_t align = op_ctx(rec)->limits.minStorageBufferOffsetAlignment;
  if (!align) align = 256;
  const char *no = NULL;
  const arch_family *fam = family_of(m);
  if (!fam)
    no = "a family without a forward pass";
  else if (!fam->batched_prefill)
    no = fam->why_not_batched_prefill;
  for (uint32_t l = 0; !no && l < hp->n_layer; l++) {
    if (((uint64_t)llm_layer_q_width(hp, l) * 4) % align)
      no = "a token's row of the attention output does not start on a binding offset";
    else if (llm_layer_rot_dim(hp, l) % 4)
      no = "a rotary dimension that is not a multiple of 4 (RoPE is not done with the cache append)";
    else if (!llm_layer_owns_kv(hp, l))
      no = "KV-shared layers";
  }
  if (no) snprintf(why, whylen, "%s", no);
  return !no;
}

wgllm_status llm_encode_prefill_batch(gpu_recorder *rec, const llm_model *m, const llm_fwd_seq *seqs, uint32_t n_seqs,
                                      uint32_t T, gpu_view last_rows, const llm_scratch *s, int fast) {
  static const llm_forward_opts exact = {.prefill = 1}, fast_opts = {.fast = 1, .prefill = 1};
  char why[160];
  if (!llm_prefill_batch_ok(rec, m, why, sizeof why))
    return op_fail(rec, WGLLM_ERR_UNSUPPORTED, "batched prefill: %s", why);
  if (!n_seqs || T > s->cap || n_seqs > s->logit_rows || seqs[n_seqs - 1].row0 + seqs[n_seqs - 1].n != T)
    return op_fail(rec, WGLLM_ERR_INTERNAL, "batched prefill: %u sessions in %u rows over scratch %u/%u", n_seqs, T,
                   s->cap, s->logit_rows);
  llm_fwd f = {.rec = rec,
               .m = m,
               .kv = seqs[0].kv,
               .rope = seqs[0].rope,
               .s = s,
               .T = T,
               .fo = fast ? &fast_opts : &exact,
               .fused = 0,
               .seqs = seqs,
               .n_seqs = n_seqs,
               .last_rows = last_rows};
  return family_of(m)->forward(&f, n_seqs);
}
