/* Mixture-of-experts hyperparameters (Qwen3-MoE, Mixtral, gpt-oss, Gemma 4's block) from config.json and GGUF
   metadata: the expert count, how many a token takes, their width, the routing's normalisation, gpt-oss's biases,
   sinks and clamped SwiGLU, and which layers are sparse, into llm_hparams and the per-layer table (hp->lay[l].moe).
   What would change the math and is not built (a shared expert, more experts or a larger top k than the ops take) is
   refused by name. */
#include "config_json.h"
#include "gguf.h"
#include <math.h>
#include <stdio.h>
#include <string.h>

/* The limits the MoE ops take (src/ops/ops.h), checked once for either format. */
static wgllm_status moe_usable(const llm_hparams *hp, const char *where, const char *n_key, const char *k_key,
                               const char *w_key, llm_err *err) {
  if (hp->n_expert == 0 || hp->n_expert > OP_MOE_MAX_EXPERTS)
    return llm_err_set(err, hp->n_expert ? WGLLM_ERR_UNSUPPORTED : WGLLM_ERR_FORMAT,
                       "%s: %s %u (1 to %d experts supported: the MoE kernels' limit)", where, n_key, hp->n_expert,
                       OP_MOE_MAX_EXPERTS);
  if (hp->n_expert_used == 0)
    return llm_err_set(err, WGLLM_ERR_FORMAT, "%s: %s is 0 (a token takes at least one expert)", where, k_key);
  if (hp->n_expert_used > OP_MOE_MAX_K || hp->n_expert_used > hp->n_expert)
    return llm_err_set(err, WGLLM_ERR_UNSUPPORTED,
                       "%s: %s %u (at most %d and at most the %u experts: the router kernel's top-k limit)", where,
                       k_key, hp->n_expert_used, OP_MOE_MAX_K, hp->n_expert);
  if (hp->n_ff_exp == 0) return llm_err_set(err, WGLLM_ERR_FORMAT, "%s: %s is 0", where, w_key);
  return WGLLM_OK;
}

static void moe_layers_set(llm_hparams *hp) {
  for (uint32_t l = 0; l < hp->n_layer; l++)
    if (hp->lay[l].moe) hp->lay[l].n_ff = hp->n_ff_exp; /* a sparse layer's FFN width is an expert's */
}

/* Mixtral: every layer sparse, num_local_experts experts of intermediate_size, the top num_experts_per_tok of the
   router's softmax renormalised (MixtralConfig's defaults: 8, top 2). */
static wgllm_status mixtral_hparams(const cJSON *cfg, llm_hparams *hp, llm_err *err) {
  hp->n_expert = 8;
  hp->n_expert_used = 2;
  hp->n_ff_exp = hp->n_ff;
  hp->moe_norm = 1;
  wgllm_status s;
  if ((s = json_opt_u32(cfg, "num_local_experts", &hp->n_expert, err)) ||
      (s = json_opt_u32(cfg, "num_experts_per_tok", &hp->n_expert_used, err)))
    return s;
  if ((s = moe_usable(hp, "config.json", "num_local_experts", "num_experts_per_tok", "intermediate_size", err)))
    return s;
  if (!hp->lay && (s = llm_hparams_layers_init(hp, err))) return s;
  for (uint32_t l = 0; l < hp->n_layer; l++)
    hp->lay[l].moe = 1;
  moe_layers_set(hp);
  return WGLLM_OK;
}

wgllm_status llm_gpt_oss_hparams(const cJSON *cfg, llm_hparams *hp, llm_err *err) {
  wgllm_status s;
  double alpha = 1.702, limit = 7.0; /* GptOssConfig's defaults, llama.cpp's constants */
  if (cfg) {
    int bias = 1; /* GptOssConfig's attention_bias default */
    hp->n_expert = 128;
    hp->n_expert_used = 4;
    hp->n_ff_exp = hp->n_ff; /* intermediate_size is an expert's width */
    if ((s = json_opt_u32(cfg, "num_local_experts", &hp->n_expert, err)) ||
        (s = json_opt_u32(cfg, "num_experts_per_tok", &hp->n_expert_used, err)) ||
        (s = json_opt_bool(cfg, "attention_bias", &bias, err)) ||
        (s = json_opt_num(cfg, "swiglu_alpha", &alpha, err)) || (s = json_opt_num(cfg, "swiglu_limit", &limit, err)))
      return s;
    if (!(alpha > 0) || !isfinite(alpha) || !(limit > 0) || !isfinite(limit))
      return llm_err_set(err, WGLLM_ERR_FORMAT, "config.json: swiglu_alpha %g, swiglu_limit %g (finite, positive)",
                         alpha, limit);
    if ((s = moe_usable(hp, "config.json", "num_local_experts", "num_experts_per_tok", "intermediate_size", err)))
      return s;
    hp->qkv_bias = hp->out_bias = bias;
    if (!hp->lay && (s = llm_hparams_layers_init(hp, err))) return s;
    for (uint32_t l = 0; l < hp->n_layer; l++)
      hp->lay[l].moe = 1;
    moe_layers_set(hp);
  } else /* GGUF: llama.cpp's gpt-oss graph reads q/k/v and output biases, always */
    hp->qkv_bias = hp->out_bias = 1;
  hp->moe_norm = OP_MOE_TOPK_SOFTMAX; /* GptOssTopKRouter: the top k of the biased logits, softmaxed */
  hp->moe_oai_glu = 1;
  hp->moe_glu_alpha = (float)alpha;
  hp->moe_glu_limit = (float)limit;
  hp->moe_bias = 1;
  hp->sinks = 1;
  return WGLLM_OK;
}

wgllm_status llm_moe_hparams(const cJSON *cfg, llm_hparams *hp, llm_err *err) {
  if (hp->arch == LLM_ARCH_MIXTRAL) return mixtral_hparams(cfg, hp, err);
  if (hp->arch == LLM_ARCH_GPT_OSS) return llm_gpt_oss_hparams(cfg, hp, err);
  /* transformers' Qwen3MoeConfig defaults */
  uint32_t step = 1, shared = 0;
  hp->n_expert = 128;
  hp->n_expert_used = 8;
  hp->n_ff_exp = 768;
  hp->moe_norm = 0;
  wgllm_status s;
  /* transformers 5 writes the count as num_local_experts (Qwen3MoeConfig's attribute map), the hub's files as
     num_experts: either, the same when both */
  uint32_t local = 0;
  const cJSON *lv = cJSON_GetObjectItemCaseSensitive(cfg, "num_local_experts"),
              *nv = cJSON_GetObjectItemCaseSensitive(cfg, "num_experts");
  int has_local = lv && !cJSON_IsNull(lv);
  if ((s = json_opt_u32(cfg, "num_local_experts", &local, err))) return s;
  if (has_local) hp->n_expert = local;
  if (has_local && nv && !cJSON_IsNull(nv)) {
    uint32_t n = 0;
    if ((s = json_opt_u32(cfg, "num_experts", &n, err))) return s;
    if (n != local)
      return llm_err_set(err, WGLLM_ERR_FORMAT, "config.json: num_experts %u and num_local_experts %u differ", n,
                         local);
  }
  if ((s = json_opt_u32(cfg, "num_experts", &hp->n_expert, err)) ||
      (s = json_opt_u32(cfg, "num_experts_per_tok", &hp->n_expert_used, err)) ||
      (s = json_opt_u32(cfg, "moe_intermediate_size", &hp->n_ff_exp, err)) ||
      (s = json_opt_bool(cfg, "norm_topk_prob", &hp->moe_norm, err)) ||
      (s = json_opt_u32(cfg, "decoder_sparse_step", &step, err)) ||
      (s = json_opt_u32(cfg, "shared_expert_intermediate_size", &shared, err)))
    return s;
  if (shared)
    return llm_err_set(err, WGLLM_ERR_UNSUPPORTED,
                       "config.json: shared_expert_intermediate_size %u (a shared expert beside the routed ones, "
                       "Qwen2-MoE's) is not supported",
                       shared);
  if (step == 0)
    return llm_err_set(err, WGLLM_ERR_FORMAT,
                       "config.json: decoder_sparse_step is 0 (layer l is sparse when (l + 1) "
                       "is a multiple of it)");
  if (hp->n_expert == 0) return WGLLM_OK; /* transformers: no sparse layer at all, a dense Qwen3 */
  if ((s = moe_usable(hp, "config.json", "num_experts", "num_experts_per_tok", "moe_intermediate_size", err))) return s;
  if (!hp->lay && (s = llm_hparams_layers_init(hp, err))) return s;
  /* Qwen3MoeDecoderLayer: sparse unless listed in mlp_only_layers, and when (l + 1) % decoder_sparse_step == 0 */
  for (uint32_t l = 0; l < hp->n_layer; l++)
    hp->lay[l].moe = (l + 1) % step == 0;
  const cJSON *only = cJSON_GetObjectItemCaseSensitive(cfg, "mlp_only_layers");
  if (only && !cJSON_IsNull(only)) {
    if (!cJSON_IsArray(only))
      return llm_err_set(err, WGLLM_ERR_FORMAT, "config.json: mlp_only_layers is not a list of layer indices");
    const cJSON *it;
    cJSON_ArrayForEach(it, only) {
      double d = cJSON_IsNumber(it) ? it->valuedouble : -1;
      if (!(d >= 0 && d < hp->n_layer && d == (double)(uint32_t)d))
        return llm_err_set(
            err, WGLLM_ERR_FORMAT, "config.json: mlp_only_layers holds %s, not a layer index from 0 to %u",
            cJSON_IsNumber(it) ? "a number out of range" : "a value that is not a number", hp->n_layer - 1);
      hp->lay[(uint32_t)d].moe = 0;
    }
  }
  moe_layers_set(hp);
  return WGLLM_OK;
}

wgllm_status llm_moe_beside_dense(llm_hparams *hp, uint32_t n_expert, uint32_t k, uint32_t width, const char *where,
                                  const char *n_key, const char *k_key, const char *w_key, llm_err *err) {
  hp->n_expert = n_expert;
  hp->n_expert_used = k;
  hp->n_ff_exp = width;
  hp->moe_norm = 1;      /* Gemma4TextRouter: the top k renormalised, then its per-expert scale */
  hp->moe_dense_too = 1; /* every layer keeps its dense MLP (n_ff stays the dense width) */
  hp->moe_hf_form =
      LLM_MOE_HF_3D; /* its experts are 3-D in every format: gate_up_proj [E][2I][H], down_proj [E][H][I] */
  wgllm_status s = moe_usable(hp, where, n_key, k_key, w_key, err);
  if (!s && !hp->lay) s = llm_hparams_layers_init(hp, err);
  for (uint32_t l = 0; !s && l < hp->n_layer; l++)
    hp->lay[l].moe = 1;
  return s;
}

wgllm_status llm_moe_gguf_hparams(const wt_store *st, const char *a, llm_hparams *hp, llm_err *err) {
  static const char *const keys[3] = {"expert_count", "expert_used_count", "expert_feed_forward_length"};
  uint32_t *dst[3] = {&hp->n_expert, &hp->n_expert_used, &hp->n_ff_exp};
  char k[3][128];
  for (int i = 0; i < 3; i++) {
    snprintf(k[i], sizeof k[i], "%s.%s", a, keys[i]);
    uint64_t v;
    /* llama.cpp's Mixtral (a llama GGUF) has no expert_feed_forward_length: its feed_forward_length is an expert's */
    if (i == 2 && gguf_key_type(st, k[i]) < 0 && hp->n_ff) {
      hp->n_ff_exp = hp->n_ff;
      continue;
    }
    if (gguf_key_type(st, k[i]) < 0 || !gguf_get_u64(st, k[i], &v) || v > 0xffffffffu)
      return llm_err_set(err, WGLLM_ERR_FORMAT, "GGUF: missing or invalid %s", k[i]);
    *dst[i] = (uint32_t)v;
  }
  char ks[128];
  snprintf(ks, sizeof ks, "%s.expert_shared_feed_forward_length", a);
  uint64_t shared = 0;
  if (gguf_key_type(st, ks) >= 0 && gguf_get_u64(st, ks, &shared) && shared)
    return llm_err_set(err, WGLLM_ERR_UNSUPPORTED, "GGUF: %s %llu (a shared expert) is not supported", ks,
                       (unsigned long long)shared);
  wgllm_status s = moe_usable(hp, "GGUF", k[0], k[1], k[2], err);
  if (s) return s;
  hp->moe_norm = 1; /* llama.cpp's qwen3moe and Mixtral always renormalise the chosen weights */
  if (!hp->lay && (s = llm_hparams_layers_init(hp, err))) return s;
  for (uint32_t l = 0; l < hp->n_layer; l++)
    hp->lay[l].moe = 1;                   /* llama.cpp's qwen3moe and Mixtral: every layer sparse */
  if (!hp->n_ff) hp->n_ff = hp->n_ff_exp; /* no dense layer: feed_forward_length may be absent */
  moe_layers_set(hp);
  return WGLLM_OK;
}
