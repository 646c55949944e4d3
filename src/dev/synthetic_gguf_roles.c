/* The synthetic shapes whose tensors come from the role table (Qwen3-MoE, Mixtral, gpt-oss) as GGUF files in
   llama.cpp's layout, so wgllm and llama.cpp run identical weights of a real MoE shape (see model_synthetic.h). gpt-oss
   is stored as its published MXFP4 files are (experts MXFP4, the other linears Q8_0); the others' each tensor in the
   type llama.cpp's Q4_K_M quantization gives it (llama-quant.cpp of v0.5.0: the LM head Q6_K; attn_v
   and ffn_down of the layers use_more_bits picks Q6_K; with 8 experts attn_k and attn_v Q8_0 and attn_output Q5_K;
   the router and the vectors F32; the rest Q4_K; Q8_0 where rows are no whole 256-element super-blocks), its blocks
   random bytes of bounded scale (a weight's spread is about 0.02, so activations stay finite through the layers and the
   router picks varied experts). Only speed is measured on these files: the numbers are no quantization of anything. */
#include "gguf_write.h"
#include "model_synthetic.h"
#include "weight_convert.h"
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* llama.cpp's layer pick for the wider types of Q4_K_M */
static int use_more_bits(int i, int n) { return i < n / 8 || i >= 7 * n / 8 || (i - n / 8) % 3 == 2; }

/* the type a Q4_K_M file gives role r of layer l (rows of K elements); gpt-oss as its published MXFP4 files are:
   the experts MXFP4, the other linears and the embedding Q8_0 */
static wt_dtype q4_k_m_type(const llm_hparams *hp, const llm_role *r, int l, uint64_t K) {
  if (r->d1 == LLM_DIM_NONE || r->kind == LLM_ROLE_NATIVE || r->kind == LLM_ROLE_VEC) return WT_F32;
  if (hp->arch == LLM_ARCH_GPT_OSS) return r->experts ? WT_MXFP4 : WT_Q8_0;
  if (K % 256) return WT_Q8_0; /* rows of no whole super-blocks (the tiny shapes): llama.cpp falls back likewise */
  if (!strcmp(r->role, "output")) return WT_Q6_K;
  int eight = hp->n_expert == 8, more = l >= 0 && use_more_bits(l, (int)hp->n_layer);
  if (!strcmp(r->role, "wk")) return eight ? WT_Q8_0 : WT_Q4_K;
  if (!strcmp(r->role, "wv")) return eight ? WT_Q8_0 : more ? WT_Q6_K : WT_Q4_K;
  if (!strcmp(r->role, "wo")) return eight ? WT_Q5_K : WT_Q4_K;
  if (!strcmp(r->role, "down") || !strcmp(r->role, "exp_down")) return more ? WT_Q6_K : WT_Q4_K;
  return WT_Q4_K;
}

typedef struct roles_tensor {
  char name[64];
  wt_dtype type;
  uint64_t elems;
} roles_tensor;

static uint64_t next(uint64_t *s) {
  *s ^= *s >> 12;
  *s ^= *s << 25;
  *s ^= *s >> 27;
  return *s * 0x2545F4914F6CDD1Dull;
}

/* n blocks of type t into out: random quants, scales so that a weight's spread is about 0.02 */
static void random_blocks(wt_dtype t, uint64_t *s, uint8_t *out, size_t n) {
  size_t bytes = (size_t)wt_nbytes(t, (int64_t)n * (t == WT_Q8_0 || t == WT_MXFP4 ? 32 : 256));
  for (size_t i = 0; i < bytes; i += 8) {
    uint64_t v = next(s);
    memcpy(out + i, &v, bytes - i < 8 ? bytes - i : 8);
  }
  for (size_t b = 0; b < n; b++) {
    float jitter = 0.5f + (float)(next(s) >> 40) / 16777216.0f; /* [0.5, 1.5) */
    uint16_t d;
    switch (t) {
    case WT_Q8_0: /* d, qs[32] int8 (spread ~74) */
      d = wc_f32_to_f16(2.7e-4f * jitter);
      memcpy(out + b * 34, &d, 2);
      break;
    case WT_MXFP4: /* e, qs[16]: 2^(e - 128) times the doubled e2m1 grid (spread ~5.9): e 120, 2^-8 */
      out[b * 17] = (uint8_t)(120 + (jitter > 1.0f));
      break;
    case WT_Q4_K: /* d, dmin, scales[12], qs[128]: every sub-block scale and min 32, so w = 32 d (q - 7.5) */
    case WT_Q5_K: /* the same with a fifth bit (qh[32] after the scales): w = 32 d (q - 15.5) */
    {
      uint8_t *o = out + b * (t == WT_Q4_K ? 144 : 176);
      float dq = (t == WT_Q4_K ? 1.4e-4f : 6.8e-5f) * jitter;
      uint16_t dm = wc_f32_to_f16((t == WT_Q4_K ? 7.5f : 15.5f) * dq);
      d = wc_f32_to_f16(dq);
      memcpy(o, &d, 2);
      memcpy(o + 2, &dm, 2);
      memset(o + 4, 0xA0, 8); /* 6-bit 32s: low bytes 32 with the high bits of the upper four (32 >> 4 = 2) */
      memset(o + 12, 0, 4);
      break;
    }
    case WT_Q6_K: { /* ql[128], qh[64], scales[16] int8, d: w = d sc (q - 32), sc 16 */
      uint8_t *o = out + b * 210;
      memset(o + 192, 16, 16);
      d = wc_f32_to_f16(6.8e-5f * jitter);
      memcpy(o + 208, &d, 2);
      break;
    }
    default:
      break;
    }
  }
}

static wgllm_status fill_roles(void *user, size_t i, gguf_sink *sink) {
  const roles_tensor *t = (const roles_tensor *)user + i;
  if (t->type == WT_F32) { /* norms ones; the router, biases and sinks small random */
    int router = strstr(t->name, "ffn_gate_inp") || strstr(t->name, ".bias") || strstr(t->name, "sinks");
    uint64_t s = 0x9E3779B97F4A7C15ull * (i + 1);
    float buf[256];
    wgllm_status st = WGLLM_OK;
    for (uint64_t j = 0; !st && j < t->elems; j += 256) {
      size_t n = (size_t)(t->elems - j < 256 ? t->elems - j : 256);
      for (size_t k = 0; k < n; k++)
        buf[k] = router ? 0.04f * ((float)(next(&s) >> 40) / 16777216.0f - 0.5f) : 1.0f;
      st = gguf_sink_write(sink, buf, n * 4);
    }
    return st;
  }
  uint64_t per = t->type == WT_Q8_0 || t->type == WT_MXFP4 ? 32 : 256, n_blocks = t->elems / per, chunk = 4096;
  size_t bsz = (size_t)wt_nbytes(t->type, (int64_t)per);
  uint8_t *buf = malloc(chunk * bsz);
  if (!buf) return WGLLM_ERR_OUT_OF_MEMORY;
  uint64_t s = 0xD1B54A32D192ED03ull * (i + 1);
  wgllm_status st = WGLLM_OK;
  for (uint64_t b = 0; !st && b < n_blocks; b += chunk) {
    size_t n = (size_t)(n_blocks - b < chunk ? n_blocks - b : chunk);
    random_blocks(t->type, &s, buf, n);
    st = gguf_sink_write(sink, buf, n * bsz);
  }
  free(buf);
  return st;
}

wgllm_status llm_synthetic_write_roles_gguf(const llm_hparams *hp, const char *name, const char *path, llm_err *err) {
  const char *arch = hp->arch == LLM_ARCH_QWEN3_MOE ? "qwen3moe"
                     : hp->arch == LLM_ARCH_MIXTRAL ? "llama"
                     : hp->arch == LLM_ARCH_GPT_OSS ? "gpt-oss"
                                                    : NULL;
  if (!arch)
    return llm_err_set(err, WGLLM_ERR_UNSUPPORTED,
                       "synthetic %s: no GGUF form (the Llama, Qwen3-MoE and Mixtral shapes have one)", name);
  size_t nr;
  const llm_role *roles = llm_roles(&nr);
  roles_tensor *t = calloc(nr * ((size_t)hp->n_layer + 1), sizeof *t);
  gguf_writer *w = gguf_writer_begin(3, 32);
  if (!t || !w) {
    free(t);
    gguf_writer_free(w);
    return llm_err_set(err, WGLLM_ERR_OUT_OF_MEMORY, "out of host memory");
  }
  char k[96];
#define KV_U32(key, v)                                                                                                 \
  do {                                                                                                                 \
    snprintf(k, sizeof k, "%s." key, arch);                                                                            \
    gguf_writer_kv_u32(w, k, v);                                                                                       \
  } while (0)
  gguf_writer_kv_str(w, "general.architecture", arch);
  gguf_writer_kv_str(w, "general.name", name);
  gguf_writer_kv_u32(w, "general.alignment", 32);
  gguf_writer_kv_u32(w, "general.file_type", 15); /* LLAMA_FTYPE_MOSTLY_Q4_K_M */
  KV_U32("context_length", hp->train_ctx);
  KV_U32("embedding_length", hp->n_embd);
  KV_U32("block_count", hp->n_layer);
  KV_U32("feed_forward_length", hp->n_ff);
  KV_U32("attention.head_count", hp->n_head);
  KV_U32("attention.head_count_kv", hp->n_head_kv);
  KV_U32("attention.key_length", hp->head_dim);
  KV_U32("attention.value_length", hp->head_dim);
  KV_U32("rope.dimension_count", hp->rot_dim);
  KV_U32("vocab_size", hp->n_vocab);
  KV_U32("expert_count", hp->n_expert);
  KV_U32("expert_used_count", hp->n_expert_used);
  if (hp->arch != LLM_ARCH_MIXTRAL) KV_U32("expert_feed_forward_length", hp->n_ff_exp);
  if (hp->window) KV_U32("attention.sliding_window", hp->window);
  if (hp->arch == LLM_ARCH_GPT_OSS) { /* its YaRN: factor 32 from 4096 (the shapes' config) */
    snprintf(k, sizeof k, "%s.rope.scaling.type", arch);
    gguf_writer_kv_str(w, k, "yarn");
    snprintf(k, sizeof k, "%s.rope.scaling.factor", arch);
    gguf_writer_kv_f32(w, k, 32.0f);
    KV_U32("rope.scaling.original_context_length", 4096);
  }
#undef KV_U32
  snprintf(k, sizeof k, "%s.attention.layer_norm_rms_epsilon", arch);
  gguf_writer_kv_f32(w, k, hp->norm_eps);
  /* the base of the shape's frequencies: inv_freq[1] = theta^(-2 / rot_dim) (YaRN's highest pairs keep theirs) */
  snprintf(k, sizeof k, "%s.rope.freq_base", arch);
  gguf_writer_kv_f32(w, k,
                     hp->arch == LLM_ARCH_GPT_OSS ? 150000.0f : (float)pow(1.0 / hp->inv_freq[1], hp->rot_dim / 2.0));
  size_t n = 0;
  for (int pass = 0; pass < 2; pass++)
    for (uint32_t l = 0; l < (pass ? hp->n_layer : 1); l++)
      for (size_t i = 0; i < nr; i++) {
        const llm_role *r = &roles[i];
        if (r->per_layer != pass || !llm_role_present(hp, r, l)) continue;
        roles_tensor *x = &t[n++];
        llm_role_name(hp, 1, r, pass ? (int)l : -1, x->name, sizeof x->name);
        uint64_t ne[3] = {0}, nd = 0;
        if (r->d1 != LLM_DIM_NONE) ne[nd++] = (uint64_t)llm_role_size(hp, r->d1, l);
        x->type = q4_k_m_type(hp, r, pass ? (int)l : -1, ne[0]);
        ne[nd++] = (uint64_t)llm_role_size(hp, r->d0, l);
        if (r->experts) ne[nd++] = hp->n_expert;
        x->elems = ne[0] * (nd > 1 ? ne[1] : 1) * (nd > 2 ? ne[2] : 1);
        gguf_writer_tensor(w, x->name, x->type, (uint32_t)nd, ne, NULL);
      }
  gguf_writer_set_fill(w, fill_roles, t);
  wgllm_status s = gguf_writer_finish_path(w, path, err);
  gguf_writer_free(w);
  free(t);
  return s;
}
