/* Gemma 4 text (Gemma4TextConfig, transformers 5.17) from config.json, or from a GGUF file as llama.cpp's converter
   writes it (arch "gemma4": per-layer arrays, a rope_freqs tensor marking the unrotated pairs of the full layers):
   sliding and full layers with their own
   head_dim, KV heads and RoPE (plain on sliding layers, "proportional" with a partial rotary factor on full
   ones), KV sharing (the last num_kv_shared_layers layers read the cache of the last earlier layer of their
   type), per-layer input embeddings, attention_k_eq_v, the double-wide MLP of shared layers and final logit
   soft-capping. What changes the math and is not implemented (the MoE block, bidirectional attention,
   attention biases) is refused by name. */
#include "config_json.h"
#include "gguf.h"
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* A missing key gets transformers' default; a present one must be valid (err names it). */
static wgllm_status u32_or(const cJSON *cfg, const char *key, uint32_t def, uint32_t *out, llm_err *err) {
  *out = def;
  return json_opt_u32(cfg, key, out, err);
}

/* Each layer's head_dim and KV heads: from per_layer_config where config.json has it (as transformers 5.17 saves
   a config: {"<layer>": {"head_dim": ..., "num_key_value_heads": ...}}), else the global values on full layers.
   All layers of one attention type must agree (one RoPE table per type). */
static wgllm_status per_layer_config(const cJSON *cfg, llm_hparams *hp, const uint8_t *local, uint32_t *sliding_hd,
                                     uint32_t sliding_kv, uint32_t *global_hd, uint32_t *global_kv, llm_err *err) {
  const cJSON *plc = cJSON_GetObjectItemCaseSensitive(cfg, "per_layer_config");
  for (uint32_t l = 0; l < hp->n_layer; l++) {
    hp->lay[l].head_dim = local[l] ? *sliding_hd : *global_hd;
    hp->lay[l].n_head_kv = local[l] ? sliding_kv : *global_kv;
  }
  if (!plc || cJSON_IsNull(plc)) return WGLLM_OK;
  if (!cJSON_IsObject(plc)) {
    return llm_err_set(err, WGLLM_ERR_FORMAT, "config.json: per_layer_config is not an object");
  }
  for (uint32_t l = 0; l < hp->n_layer; l++) { /* unlisted layers keep the base values */
    hp->lay[l].head_dim = *sliding_hd;
    hp->lay[l].n_head_kv = sliding_kv;
  }
  const cJSON *e;
  cJSON_ArrayForEach(e, plc) {
    char *end;
    long l = strtol(e->string, &end, 10);
    if (*end || end == e->string || l < 0 || l >= (long)hp->n_layer || !cJSON_IsObject(e)) {
      return llm_err_set(err, WGLLM_ERR_FORMAT,
                         "config.json: per_layer_config key \"%s\" is not a layer below %u with an object", e->string,
                         hp->n_layer);
    }
    const cJSON *f;
    cJSON_ArrayForEach(f, e) {
      uint32_t v;
      if (strcmp(f->string, "head_dim") && strcmp(f->string, "num_key_value_heads")) {
        return llm_err_set(err, WGLLM_ERR_UNSUPPORTED,
                           "config.json: per_layer_config.%s.%s is not supported (head_dim, num_key_value_heads)",
                           e->string, f->string);
      }
      if (!json_u32(e, f->string, &v) || v == 0) {
        return llm_err_set(err, WGLLM_ERR_FORMAT, "config.json: per_layer_config.%s.%s is not a positive integer",
                           e->string, f->string);
      }
      if (!strcmp(f->string, "head_dim"))
        hp->lay[l].head_dim = v;
      else
        hp->lay[l].n_head_kv = v;
    }
  }
  int seen[2] = {0, 0};
  uint32_t hd[2] = {0, 0};
  for (uint32_t l = 0; l < hp->n_layer; l++) {
    llm_layer_hp *y = &hp->lay[l];
    int t = local[l];
    if (y->head_dim == 0 || y->head_dim > 512 || y->head_dim % 4 || y->n_head_kv == 0 || hp->n_head % y->n_head_kv) {
      return llm_err_set(err, WGLLM_ERR_UNSUPPORTED,
                         "config.json: layer %u: head_dim %u (multiples of 4 up to 512) or %u KV heads for %u "
                         "heads not supported",
                         l, y->head_dim, y->n_head_kv, hp->n_head);
    }
    if (seen[t] && hd[t] != y->head_dim) {
      return llm_err_set(err, WGLLM_ERR_UNSUPPORTED,
                         "config.json: %s layers with different head_dim (%u, %u) are not supported",
                         t ? "sliding" : "full", hd[t], y->head_dim);
    }
    seen[t] = 1;
    hd[t] = y->head_dim;
  }
  if (seen[0]) *global_hd = hd[0];
  if (seen[1]) *sliding_hd = hd[1];
  return WGLLM_OK;
}

static int is_true(const cJSON *cfg, const char *key) {
  return cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(cfg, key));
}

/* The inverse frequencies of one layer type's rope_parameters for heads of head_dim: rope_type "default" rotates
   every pair; "proportional" rotates the first partial_rotary_factor * head_dim / 2 pairs at frequencies of
   head_dim and leaves the rest (frequency 0: cos 1, sin 0), so its table spans the whole head. */
static wgllm_status rope_of(const cJSON *rp, const char *type_name, uint32_t head_dim, float **inv, char *desc,
                            size_t desclen, llm_err *err) {
  double theta = 10000.0, factor = 1.0, partial = 1.0;
  const cJSON *t = cJSON_GetObjectItemCaseSensitive(rp, "rope_type");
  const char *type = cJSON_IsString(t) ? t->valuestring : "default";
  wgllm_status s;
  if ((s = json_opt_num(rp, "rope_theta", &theta, err)) || (s = json_opt_num(rp, "factor", &factor, err)) ||
      (s = json_opt_num(rp, "partial_rotary_factor", &partial, err)))
    return s;
  /* theta as the other readers have it (over 1: 0.5 made frequencies grow with the pair), every value finite */
  if (!(theta > 1) || !(factor > 0) || !(partial > 0 && partial <= 1)) {
    return llm_err_set(err, WGLLM_ERR_FORMAT,
                       "config.json: rope_parameters.%s: rope_theta %g (over 1), factor %g (positive) or "
                       "partial_rotary_factor %g (over 0, at most 1) out of range",
                       type_name, theta, factor, partial);
  }
  *inv = default_inv_freq(theta, head_dim);
  if (!*inv) return WGLLM_ERR_OUT_OF_MEMORY;
  if (!strcmp(type, "default")) {
    snprintf(desc, desclen, "%s: default theta %g", type_name, theta);
    return WGLLM_OK;
  }
  if (strcmp(type, "proportional")) {
    return llm_err_set(err, WGLLM_ERR_UNSUPPORTED,
                       "config.json: rope_parameters.%s: rope type \"%s\" is not supported for Gemma 4 "
                       "(default, proportional)",
                       type_name, type);
  }
  uint32_t angles = (uint32_t)floor(partial * head_dim / 2); /* int(partial * head_dim // 2) */
  for (uint32_t i = 0; i < head_dim / 2; i++)
    (*inv)[i] = i < angles ? (float)((*inv)[i] / factor) : 0.0f;
  snprintf(desc, desclen, "%s: proportional theta %g, %u of %u pairs", type_name, theta, angles, head_dim / 2);
  return llm_rope_table_check(*inv, head_dim / 2, "config.json: rope_parameters", err);
}

wgllm_status llm_gemma4_hparams(const cJSON *cfg, llm_hparams *hp, llm_err *err) {
  if (hp->n_layer == 0) {
    return llm_err_set(err, WGLLM_ERR_FORMAT, "config.json: num_hidden_layers is 0");
  }
  static const char *const refused[] = {"attention_bias"};
  for (size_t i = 0; i < sizeof refused / sizeof refused[0]; i++)
    if (is_true(cfg, refused[i])) {
      return llm_err_set(err, WGLLM_ERR_UNSUPPORTED, "config.json: %s true is not supported for Gemma 4", refused[i]);
    }
  const cJSON *bidi = cJSON_GetObjectItemCaseSensitive(cfg, "use_bidirectional_attention");
  if (cJSON_IsString(bidi) && !strcmp(bidi->valuestring, "all")) {
    return llm_err_set(err, WGLLM_ERR_UNSUPPORTED,
                       "config.json: use_bidirectional_attention \"all\" is not supported (causal decoding)");
  }
  const cJSON *tie = cJSON_GetObjectItemCaseSensitive(cfg, "tie_word_embeddings");
  hp->tied_embeddings = cJSON_IsBool(tie) ? cJSON_IsTrue(tie) : 1;
  hp->norm_offset = 0.0f; /* Gemma 4's norms multiply by w, not (1 + w) */
  hp->embed_scale = sqrtf((float)hp->n_embd);
  hp->attn_scale = 1.0f;
  hp->sandwich_norms = 1;
  hp->qk_norm = 1;
  hp->v_norm = 1;
  hp->layer_scalar = 1;
  hp->rope_mode = OP_ROPE_HALF;
  uint32_t n_shared, global_hd, global_kv = 0, P, ple_vocab;
  double cap = 0;
  const cJSON *capj = cJSON_GetObjectItemCaseSensitive(cfg, "final_logit_softcapping");
  if (capj && !cJSON_IsNull(capj) &&
      (!json_num(cfg, "final_logit_softcapping", &cap) || !(cap > 0) || !isfinite(cap))) {
    return llm_err_set(err, WGLLM_ERR_FORMAT, "config.json: final_logit_softcapping must be a positive number or null");
  }
  hp->final_softcap = (float)cap;
  wgllm_status st;
  if ((st = u32_or(cfg, "num_kv_shared_layers", 0, &n_shared, err)) ||
      (st = u32_or(cfg, "global_head_dim", 512, &global_hd, err)) ||
      (st = u32_or(cfg, "num_global_key_value_heads", 0, &global_kv, err)) ||
      (st = u32_or(cfg, "hidden_size_per_layer_input", 256, &P, err)) ||
      (st = u32_or(cfg, "vocab_size_per_layer_input", 262144, &ple_vocab, err)) ||
      (st = u32_or(cfg, "sliding_window", 512, &hp->window, err)) ||
      (st = u32_or(cfg, "max_position_embeddings", 131072, &hp->train_ctx, err)))
    return st;
  if (hp->train_ctx == 0) {
    return llm_err_set(err, WGLLM_ERR_FORMAT, "config.json: max_position_embeddings is 0");
  }
  if (n_shared >= hp->n_layer) {
    return llm_err_set(err, WGLLM_ERR_FORMAT,
                       "config.json: num_kv_shared_layers %u leaves no layer of the %u to own a cache", n_shared,
                       hp->n_layer);
  }
  if (global_hd == 0 || global_hd > 512 || global_hd % 4 || hp->head_dim > 512) {
    return llm_err_set(err, WGLLM_ERR_UNSUPPORTED,
                       "config.json: head_dim %u / global_head_dim %u: the attention kernels take multiples of 4 "
                       "up to 512",
                       hp->head_dim, global_hd);
  }
  int k_eq_v = is_true(cfg, "attention_k_eq_v");
  if (!k_eq_v || global_kv == 0) global_kv = hp->n_head_kv;
  if (hp->n_head % global_kv) {
    return llm_err_set(err, WGLLM_ERR_FORMAT, "config.json: %u attention heads not a multiple of %u global KV heads",
                       hp->n_head, global_kv);
  }
  if (P && (uint64_t)P * hp->n_layer > 1u << 24) {
    return llm_err_set(err, WGLLM_ERR_FORMAT, "config.json: hidden_size_per_layer_input %u x %u layers is too large", P,
                       hp->n_layer);
  }
  if (P > hp->n_embd || (P && ple_vocab < hp->n_vocab)) {
    return llm_err_set(err, WGLLM_ERR_UNSUPPORTED,
                       "config.json: hidden_size_per_layer_input %u over hidden_size %u, or "
                       "vocab_size_per_layer_input %u under vocab_size %u, is not supported",
                       P, hp->n_embd, ple_vocab, hp->n_vocab);
  }
  hp->ple_dim = P;
  hp->ple_vocab = P ? ple_vocab : 0;
  if (P && ple_vocab == 0) {
    return llm_err_set(err, WGLLM_ERR_FORMAT, "config.json: vocab_size_per_layer_input is 0");
  }
  wgllm_status s = json_bos_eos(cfg, &hp->bos, &hp->eos, err);
  if (s) return s;
  uint8_t *local = NULL;
  s = llm_json_layer_types(cfg, hp->n_layer, 6, &local, err);
  if (s) return s;
  local[hp->n_layer - 1] = 0; /* transformers forces the last layer to full attention */
  /* the layers: sliding ones as the scalars say, full ones with the global head_dim and KV heads */
  uint32_t sliding_hd = hp->head_dim, sliding_kv = hp->n_head_kv;
  if (!s) s = llm_hparams_layers_init(hp, err);
  if (!s) s = per_layer_config(cfg, hp, local, &sliding_hd, sliding_kv, &global_hd, &global_kv, err);
  /* RoPE per layer type */
  const cJSON *rp = cJSON_GetObjectItemCaseSensitive(cfg, "rope_parameters");
  const cJSON *rp_full = cJSON_GetObjectItemCaseSensitive(rp, "full_attention");
  const cJSON *rp_slide = cJSON_GetObjectItemCaseSensitive(rp, "sliding_attention");
  cJSON *defaults = NULL;
  if (!rp) { /* transformers' defaults */
    defaults = cJSON_Parse("{\"sliding_attention\":{\"rope_type\":\"default\",\"rope_theta\":10000.0},"
                           "\"full_attention\":{\"rope_type\":\"proportional\",\"partial_rotary_factor\":0.25,"
                           "\"rope_theta\":1000000.0}}");
    if (!defaults) s = WGLLM_ERR_OUT_OF_MEMORY;
    rp_full = cJSON_GetObjectItemCaseSensitive(defaults, "full_attention");
    rp_slide = cJSON_GetObjectItemCaseSensitive(defaults, "sliding_attention");
  }
  if (!s && (!cJSON_IsObject(rp_full) || !cJSON_IsObject(rp_slide))) {
    s = llm_err_set(err, WGLLM_ERR_FORMAT, "config.json: rope_parameters needs full_attention and sliding_attention");
  }
  char d_full[96] = "", d_slide[96] = "";
  if (!s) s = rope_of(rp_full, "full_attention", global_hd, &hp->inv_freq, d_full, sizeof d_full, err);
  if (!s) s = rope_of(rp_slide, "sliding_attention", sliding_hd, &hp->inv_freq_local, d_slide, sizeof d_slide, err);
  cJSON_Delete(defaults);
  hp->rot_dim = global_hd;
  hp->rot_dim_local = sliding_hd;
  snprintf(hp->rope_desc, sizeof hp->rope_desc, "%s; %s", d_full, d_slide);
  uint32_t first_shared = hp->n_layer - n_shared;
  int wide = is_true(cfg, "use_double_wide_mlp");
  for (uint32_t l = 0; !s && l < hp->n_layer; l++) {
    llm_layer_hp *y = &hp->lay[l];
    y->rot_dim = y->head_dim;
    y->window = local[l] ? hp->window : 0;
    y->rope_local = local[l];
    y->v_is_k = k_eq_v && !local[l];
    if (l >= first_shared) {
      /* the last layer before the shared ones with the same attention type */
      uint32_t src = first_shared;
      for (uint32_t j = first_shared; j-- > 0;)
        if (local[j] == local[l]) {
          src = j;
          break;
        }
      if (src == first_shared) {
        s = llm_err_set(err, WGLLM_ERR_FORMAT, "config.json: KV-shared layer %u (%s) has no earlier %s layer to read",
                        l, local[l] ? "sliding" : "full", local[l] ? "sliding" : "full");
        break;
      }
      y->kv_source = src;
      y->v_is_k = hp->lay[src].v_is_k;
      if (wide) y->n_ff = 2 * hp->n_ff;
    }
  }
  /* the scalars name the widest layer (scratch, describe) */
  if (!s) hp->head_dim = llm_max_head_dim(hp);
  free(local);
  if (!s && is_true(cfg, "enable_moe_block")) {
    uint32_t e = 0, k = 0, w = 0;
    if ((s = json_opt_u32(cfg, "num_experts", &e, err)) || (s = json_opt_u32(cfg, "top_k_experts", &k, err)) ||
        (s = json_opt_u32(cfg, "moe_intermediate_size", &w, err)))
      return s;
    s = llm_moe_beside_dense(hp, e, k, w, "config.json", "num_experts", "top_k_experts", "moe_intermediate_size", err);
  }
  return s;
}

/* ---- GGUF ---- */

/* ARCH.KEY as a u32 scalar; 0 when absent or not a non-negative integer below 2^32 */
static int g_u32(const wt_store *st, const char *a, const char *key, uint32_t *out) {
  char k[128];
  snprintf(k, sizeof k, "%s.%s", a, key);
  uint64_t v;
  if (!gguf_get_u64(st, k, &v) || v > 0xffffffffu) return 0;
  *out = (uint32_t)v;
  return 1;
}

/* ARCH.KEY given once for every layer or as an array of n_layer integers (bools for the window pattern):
   out[n_layer]. 1 found, 0 absent, -1 present but not so (err set). */
static int g_layers(const wt_store *st, const char *a, const char *key, uint32_t n_layer, uint32_t *out, llm_err *err) {
  char k[128];
  snprintf(k, sizeof k, "%s.%s", a, key);
  uint32_t one;
  if (g_u32(st, a, key, &one)) {
    for (uint32_t l = 0; l < n_layer; l++)
      out[l] = one;
    return 1;
  }
  int et;
  uint64_t n;
  const void *data;
  if (!gguf_get_arr(st, k, &et, &n, &data)) {
    if (!gguf_get_str(st, k) && !gguf_get_f64(st, k, &(double){0})) return 0;
    llm_err_set(err, WGLLM_ERR_FORMAT, "GGUF: %s is not an integer or an array of integers", k);
    return -1;
  }
  int width = et == GGUF_TYPE_BOOL || et == GGUF_TYPE_UINT8 || et == GGUF_TYPE_INT8 ? 1
              : et == GGUF_TYPE_UINT32 || et == GGUF_TYPE_INT32                     ? 4
                                                                                    : 0;
  if (!width || n != n_layer || !data) {
    llm_err_set(err, WGLLM_ERR_FORMAT, "GGUF: %s must be %u integers, one a layer (is %llu of GGUF type %d)", k,
                n_layer, (unsigned long long)n, et);
    return -1;
  }
  for (uint32_t l = 0; l < n_layer; l++) {
    int64_t v;
    if (width == 1)
      v = et == GGUF_TYPE_INT8 ? ((const int8_t *)data)[l] : ((const uint8_t *)data)[l];
    else {
      int32_t w;
      memcpy(&w, (const char *)data + 4 * l, 4);
      v = et == GGUF_TYPE_INT32 ? w : (int64_t)(uint32_t)w;
    }
    if (v < 0) {
      llm_err_set(err, WGLLM_ERR_FORMAT, "GGUF: %s[%u] = %lld is negative", k, l, (long long)v);
      return -1;
    }
    out[l] = (uint32_t)v;
  }
  return 1;
}

/* theta^(-2i/n_rot) for the n_rot/2 pairs, each divided by its rope_freqs factor where the file has them (llama.cpp
   marks the pairs that do not rotate with 1e30: their frequency becomes 1e-30 / theta^(...), a rotation below
   f32 resolution at any position) */
static wgllm_status g_rope(double theta, uint32_t n_rot, const wt_tensor *factors, float **inv, llm_err *err) {
  *inv = default_inv_freq(theta, n_rot);
  if (!*inv) return WGLLM_ERR_OUT_OF_MEMORY;
  if (!factors) return WGLLM_OK;
  if (factors->dtype != WT_F32 || wt_numel(factors) != n_rot / 2) {
    return llm_err_set(err, WGLLM_ERR_FORMAT,
                       "GGUF: rope_freqs.weight must be F32 [%u] for the full layers' %u rotated dims (is %s [%lld])",
                       n_rot / 2, n_rot, wt_dtype_name(factors->dtype), (long long)wt_numel(factors));
  }
  void *tmp = NULL;
  const char *fd = wt_tensor_bytes(factors, &tmp, err);
  if (!fd) return WGLLM_ERR_IO;
  for (uint32_t i = 0; i < n_rot / 2; i++) {
    float f;
    memcpy(&f, fd + 4 * i, 4);
    if (!(f > 0) || isinf(f)) {
      llm_err_set(err, WGLLM_ERR_FORMAT, "GGUF: rope_freqs.weight[%u] = %g is not a positive finite factor", i, f);
      free(tmp);
      return WGLLM_ERR_FORMAT;
    }
    (*inv)[i] = (float)((*inv)[i] / (double)f);
  }
  free(tmp);
  return llm_rope_table_check(*inv, n_rot / 2, "GGUF: rope_freqs.weight's factors", err); /* 1e-45: inf */
}

wgllm_status llm_gemma4_gguf_hparams(const wt_store *st, const char *a, llm_hparams *hp, llm_err *err) {
  char k[128];
  if (wt_find(st, "blk.0.attn_qkv.weight") || wt_find(st, "blk.0.attn_q.bias")) {
    return llm_err_set(err, WGLLM_ERR_UNSUPPORTED,
                       "GGUF: Gemma 4 with a fused attn_qkv tensor or attention biases is not supported");
  }
  hp->norm_offset = 0.0f; /* the converter stores Gemma 4's (w) norms as they are */
  hp->embed_scale = sqrtf((float)hp->n_embd);
  hp->attn_scale = 1.0f;
  hp->sandwich_norms = 1;
  hp->qk_norm = 1;
  hp->v_norm = 1;
  hp->act = OP_ACT_GELU_TANH;
  hp->rope_mode = OP_ROPE_HALF; /* NeoX; the converter does not permute Gemma's q/k rows */
  hp->layer_scalar = wt_find(st, "blk.0.layer_output_scale.weight") != NULL;
  double cap = 0;
  snprintf(k, sizeof k, "%s.final_logit_softcapping", a);
  if (gguf_get_f64(st, k, &cap) && !(cap > 0 && isfinite(cap))) {
    return llm_err_set(err, WGLLM_ERR_FORMAT, "GGUF: %s = %g (must be positive)", k, cap);
  }
  hp->final_softcap = (float)cap;
  uint32_t L = hp->n_layer, hd_full = 0, hd_swa = 0, vd, n_shared = 0, P = 0, rot_full = 0, rot_swa = 0;
  static const char *const need[] = {"attention.key_length", "attention.key_length_swa", "attention.sliding_window"};
  uint32_t *dst[] = {&hd_full, &hd_swa, &hp->window};
  for (int i = 0; i < 3; i++)
    if (!g_u32(st, a, need[i], dst[i]) || *dst[i] == 0) {
      return llm_err_set(err, WGLLM_ERR_FORMAT, "GGUF: missing or invalid %s.%s", a, need[i]);
    }
  if ((g_u32(st, a, "attention.value_length", &vd) && vd != hd_full) ||
      (g_u32(st, a, "attention.value_length_swa", &vd) && vd != hd_swa)) {
    return llm_err_set(err, WGLLM_ERR_FORMAT, "GGUF: Gemma 4 value lengths must equal the key lengths (%u, %u)",
                       hd_full, hd_swa);
  }
  if (hd_full > 512 || hd_full % 4 || hd_swa > 512 || hd_swa % 4) {
    return llm_err_set(err, WGLLM_ERR_UNSUPPORTED,
                       "GGUF: head dims %u (full) / %u (sliding): the attention kernels take multiples of 4 up to 512",
                       hd_full, hd_swa);
  }
  g_u32(st, a, "attention.shared_kv_layers", &n_shared);
  g_u32(st, a, "embedding_length_per_layer_input", &P);
  if (!g_u32(st, a, "rope.dimension_count", &rot_full)) rot_full = hd_full;
  if (!g_u32(st, a, "rope.dimension_count_swa", &rot_swa)) rot_swa = hd_swa;
  if (!rot_full || rot_full > hd_full || rot_full % 2 || !rot_swa || rot_swa > hd_swa || rot_swa % 2) {
    return llm_err_set(err, WGLLM_ERR_FORMAT, "GGUF: rope dimension counts %u / %u invalid for head dims %u / %u",
                       rot_full, rot_swa, hd_full, hd_swa);
  }
  if (n_shared >= L) {
    return llm_err_set(err, WGLLM_ERR_FORMAT,
                       "GGUF: %s.attention.shared_kv_layers %u leaves no layer of the %u to own a cache", a, n_shared,
                       L);
  }
  wgllm_status s = llm_hparams_layers_init(hp, err);
  if (s) return s;
  /* per-layer arrays: the window pattern (1 = sliding), KV heads, MLP width */
  uint32_t *swa = calloc(L, sizeof *swa), *kv = calloc(L, sizeof *kv), *ff = calloc(L, sizeof *ff);
  if (!swa || !kv || !ff) s = WGLLM_ERR_OUT_OF_MEMORY;
  int r;
  if (!s && (r = g_layers(st, a, "attention.sliding_window_pattern", L, swa, err)) <= 0) {
    if (!r) llm_err_set(err, WGLLM_ERR_FORMAT, "GGUF: missing %s.attention.sliding_window_pattern", a);
    s = WGLLM_ERR_FORMAT;
  }
  if (!s && (r = g_layers(st, a, "attention.head_count_kv", L, kv, err)) <= 0) {
    if (!r) llm_err_set(err, WGLLM_ERR_FORMAT, "GGUF: missing %s.attention.head_count_kv", a);
    s = WGLLM_ERR_FORMAT;
  }
  if (!s && (r = g_layers(st, a, "feed_forward_length", L, ff, err)) <= 0) {
    if (!r) llm_err_set(err, WGLLM_ERR_FORMAT, "GGUF: missing %s.feed_forward_length", a);
    s = WGLLM_ERR_FORMAT;
  }
  uint32_t first_shared = L - n_shared;
  for (uint32_t l = 0; !s && l < L; l++) {
    llm_layer_hp *y = &hp->lay[l];
    int local = swa[l] != 0;
    y->head_dim = local ? hd_swa : hd_full;
    y->n_head_kv = kv[l];
    y->n_ff = ff[l];
    y->rot_dim = local ? rot_swa : rot_full;
    y->window = local ? hp->window : 0;
    y->rope_local = (uint8_t)local;
    if (!kv[l] || hp->n_head % kv[l] || !ff[l]) {
      s = llm_err_set(err, WGLLM_ERR_FORMAT, "GGUF: layer %u: %u KV heads for %u heads, MLP width %u: not supported", l,
                      kv[l], hp->n_head, ff[l]);
      break;
    }
    char name[64];
    snprintf(name, sizeof name, "blk.%u.attn_v.weight", l);
    y->v_is_k = l < first_shared && !wt_find(st, name); /* llama.cpp: no attn_v means V = K (k_eq_v) */
    if (l >= first_shared) {                            /* reads the last earlier layer of its attention type */
      uint32_t src = first_shared;
      for (uint32_t j = first_shared; j-- > 0;)
        if ((swa[j] != 0) == local) {
          src = j;
          break;
        }
      if (src == first_shared) {
        s = llm_err_set(err, WGLLM_ERR_FORMAT, "GGUF: KV-shared layer %u (%s) has no earlier layer of its type to read",
                        l, local ? "sliding" : "full");
        break;
      }
      y->kv_source = src;
      y->v_is_k = hp->lay[src].v_is_k;
    }
  }
  hp->n_ff = ff ? ff[0] : 0;
  hp->n_head_kv = kv ? kv[0] : 0;
  /* RoPE: full layers at rope.freq_base with the rope_freqs factors, sliding ones at rope.freq_base_swa */
  double theta = 1000000.0, theta_swa = 10000.0;
  snprintf(k, sizeof k, "%s.rope.freq_base", a);
  gguf_get_f64(st, k, &theta);
  int theta_bad = gguf_key_type(st, k) >= 0 && (!gguf_get_f64(st, k, &theta) || !isfinite(theta));
  snprintf(k, sizeof k, "%s.rope.freq_base_swa", a);
  gguf_get_f64(st, k, &theta_swa);
  theta_bad |= gguf_key_type(st, k) >= 0 && (!gguf_get_f64(st, k, &theta_swa) || !isfinite(theta_swa));
  if (!s && (theta_bad || !(theta > 1) || !(theta_swa > 1))) { /* a string or infinity was taken for absent */
    s = llm_err_set(err, WGLLM_ERR_FORMAT,
                    "GGUF: %s.rope.freq_base %g / freq_base_swa %g must be finite numbers over 1", a, theta, theta_swa);
  }
  snprintf(k, sizeof k, "%s.rope.scaling.type", a);
  const char *sc = gguf_get_str(st, k);
  if (!s && sc && strcmp(sc, "none")) {
    s = llm_err_set(err, WGLLM_ERR_UNSUPPORTED, "GGUF: %s \"%s\" is not supported for Gemma 4 (none)", k, sc);
  }
  const wt_tensor *rf = wt_find(st, "rope_freqs.weight");
  if (!s) s = g_rope(theta, rot_full, rf, &hp->inv_freq, err);
  if (!s) s = g_rope(theta_swa, rot_swa, NULL, &hp->inv_freq_local, err);
  hp->rot_dim = rot_full;
  hp->rot_dim_local = rot_swa;
  snprintf(hp->rope_desc, sizeof hp->rope_desc,
           "full_attention: theta %g, %u dims%s; sliding_attention: theta %g, %u dims", theta, rot_full,
           rf ? ", rope_freqs factors" : "", theta_swa, rot_swa);
  /* per-layer inputs: the table's rows give vocab_size_per_layer_input */
  if (!s && P) {
    const wt_tensor *t = wt_find(st, "per_layer_token_embd.weight");
    if (!t || t->n_dims != 2) {
      s = llm_err_set(err, WGLLM_ERR_FORMAT,
                      "GGUF: %s.embedding_length_per_layer_input is %u but per_layer_token_embd.weight is missing", a,
                      P);
    } else if (P > hp->n_embd || (uint64_t)P * L > 1u << 24 || t->shape[0] < hp->n_vocab) {
      s = llm_err_set(
          err, WGLLM_ERR_UNSUPPORTED,
          "GGUF: per-layer inputs %u wide (hidden %u, %u layers) with %lld rows for a %u-token vocabulary are not "
          "supported",
          P, hp->n_embd, L, (long long)t->shape[0], hp->n_vocab);
    } else {
      hp->ple_dim = P;
      hp->ple_vocab = (uint32_t)t->shape[0];
    }
  }
  if (!s) hp->head_dim = llm_max_head_dim(hp);
  /* the MoE block beside the dense MLP (Gemma 4 26B-A4B): llama.cpp's expert_count, expert_used_count and
     expert_feed_forward_length */
  uint32_t n_exp = 0;
  if (!s && ((g_u32(st, a, "expert_count", &n_exp) && n_exp) || wt_find(st, "blk.0.ffn_gate_inp.weight"))) {
    uint32_t k = 0, w = 0;
    char kk[128], kw[128], ke[128];
    snprintf(ke, sizeof ke, "%s.expert_count", a);
    snprintf(kk, sizeof kk, "%s.expert_used_count", a);
    snprintf(kw, sizeof kw, "%s.expert_feed_forward_length", a);
    if (!g_u32(st, a, "expert_used_count", &k) || !g_u32(st, a, "expert_feed_forward_length", &w) || !n_exp)
      s = llm_err_set(err, WGLLM_ERR_FORMAT, "GGUF: Gemma 4 with experts needs %s, %s and %s", ke, kk, kw);
    else
      s = llm_moe_beside_dense(hp, n_exp, k, w, "GGUF", ke, kk, kw, err);
  }
  free(swa);
  free(kv);
  free(ff);
  if (s == WGLLM_ERR_OUT_OF_MEMORY && !llm_err_msg(err)[0]) llm_err_set(err, s, "out of host memory");
  return s;
}
