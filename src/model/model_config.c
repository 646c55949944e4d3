/* Hyperparameters of the families in families.c (Llama 2/3.x, Mistral, Qwen2, Qwen3, Gemma 3) from a Hugging
   Face config.json or GGUF metadata, the RoPE inverse frequencies (default, linear, llama3 scaling, GGUF
   rope_freqs factors), and the check of every expected tensor's shape against them. */
#include "gguf.h"
#include "model.h"
#include "safetensors.h"
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

/* A directory is a Hugging Face model; a file is GGUF whatever its name (the reader checks the magic). */
wgllm_status llm_open_store(const char *path, wt_store **out, char *err, size_t errlen) {
  struct stat sb;
  *out = NULL;
  if (stat(path, &sb) != 0) {
    snprintf(err, errlen, "%s: %s", path, strerror(errno));
    return WGLLM_ERR_IO;
  }
  if (S_ISDIR(sb.st_mode)) return st_open_dir(path, out, err, errlen);
  size_t n = strlen(path);
  if (n > 12 && !strcmp(path + n - 12, ".safetensors")) {
    snprintf(err, errlen, "%s: a safetensors file; pass the directory that holds it with config.json", path);
    return WGLLM_ERR_INVALID_ARG;
  }
  return gguf_open(path, out, err, errlen);
}

void llm_hparams_free(llm_hparams *hp) {
  free(hp->inv_freq);
  free(hp->inv_freq_local);
  free(hp->layer_local);
  hp->inv_freq = hp->inv_freq_local = NULL;
  hp->layer_local = NULL;
}

static int json_num(const cJSON *o, const char *key, double *out) {
  const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);
  if (!cJSON_IsNumber(v)) return 0;
  *out = v->valuedouble;
  return 1;
}

static int json_u32(const cJSON *o, const char *key, uint32_t *out) {
  double d;
  if (!json_num(o, key, &d) || d < 0 || d > 4294967295.0 || d != floor(d)) return 0;
  *out = (uint32_t)d;
  return 1;
}

static int32_t json_token(const cJSON *o, const char *key) {
  const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);
  if (cJSON_IsArray(v)) v = cJSON_GetArrayItem(v, 0);
  return cJSON_IsNumber(v) ? (int32_t)v->valuedouble : -1;
}

/* inv_freq[i] = theta^(-2i/dim) (f32, as transformers computes it) */
static float *default_inv_freq(double theta, uint32_t dim) {
  float *f = malloc(dim / 2 * sizeof *f);
  if (!f) return NULL;
  for (uint32_t i = 0; i < dim / 2; i++)
    f[i] = (float)(1.0 / pow(theta, (double)(2 * i) / dim));
  return f;
}

/* transformers' _compute_llama3_parameters */
static void llama3_scale(float *inv, uint32_t half, double factor, double lo, double hi, double old_ctx) {
  double low_wl = old_ctx / lo, high_wl = old_ctx / hi;
  for (uint32_t i = 0; i < half; i++) {
    double f = inv[i], wl = 2 * M_PI / f, r = f;
    if (wl > low_wl) r = f / factor;
    if (!(wl < high_wl) && !(wl > low_wl)) {
      double smooth = (old_ctx / wl - lo) / (hi - lo);
      r = (1 - smooth) * f / factor + smooth * f;
    }
    inv[i] = (float)r;
  }
}

static wgllm_status hf_rope_params(const cJSON *cfg, const cJSON *rp, llm_hparams *hp, char *err, size_t errlen);

static wgllm_status hf_rope(const cJSON *cfg, llm_hparams *hp, char *err, size_t errlen) {
  const cJSON *rp = cJSON_GetObjectItemCaseSensitive(cfg, "rope_parameters");
  const cJSON *full = cJSON_GetObjectItemCaseSensitive(rp, "full_attention");
  if (!cJSON_IsObject(full)) return hf_rope_params(cfg, rp, hp, err, errlen);
  /* per layer type (Gemma 3): the global layers' set is the main one, the sliding layers' the local one */
  const cJSON *local = cJSON_GetObjectItemCaseSensitive(rp, "sliding_attention");
  if (cJSON_IsObject(local)) {
    wgllm_status s = hf_rope_params(cfg, local, hp, err, errlen);
    if (s) return s;
    hp->inv_freq_local = hp->inv_freq;
    hp->inv_freq = NULL;
  }
  char local_desc[96];
  snprintf(local_desc, sizeof local_desc, "%s", hp->rope_desc);
  wgllm_status s = hf_rope_params(cfg, full, hp, err, errlen);
  if (!s && hp->inv_freq_local) {
    size_t l = strlen(hp->rope_desc);
    snprintf(hp->rope_desc + l, sizeof hp->rope_desc - l, "; local: %s", local_desc);
  }
  return s;
}

static wgllm_status hf_rope_params(const cJSON *cfg, const cJSON *rp, llm_hparams *hp, char *err, size_t errlen) {
  /* transformers 5 keeps everything in rope_parameters; older configs use rope_theta + rope_scaling */
  const cJSON *rs = cJSON_GetObjectItemCaseSensitive(cfg, "rope_scaling");
  double theta = 10000.0, partial = 1.0;
  if (!json_num(rp, "rope_theta", &theta)) json_num(cfg, "rope_theta", &theta);
  if (!json_num(rp, "partial_rotary_factor", &partial)) json_num(cfg, "partial_rotary_factor", &partial);
  const cJSON *sc = cJSON_IsObject(rp) ? rp : rs;
  const char *type = "default";
  if (cJSON_IsObject(sc)) {
    const cJSON *t = cJSON_GetObjectItemCaseSensitive(sc, "rope_type");
    if (!cJSON_IsString(t)) t = cJSON_GetObjectItemCaseSensitive(sc, "type");
    if (cJSON_IsString(t)) type = t->valuestring;
  }
  hp->rot_dim = (uint32_t)(hp->head_dim * partial);
  hp->rot_dim &= ~1u;
  if (hp->rot_dim == 0) {
    snprintf(err, errlen, "config.json: rotary dimension is 0");
    return WGLLM_ERR_FORMAT;
  }
  hp->inv_freq = default_inv_freq(theta, hp->rot_dim);
  if (!hp->inv_freq) return WGLLM_ERR_OUT_OF_MEMORY;
  if (!strcmp(type, "default")) {
    snprintf(hp->rope_desc, sizeof hp->rope_desc, "default theta %g", theta);
  } else if (!strcmp(type, "linear")) {
    double factor = 1;
    json_num(sc, "factor", &factor);
    for (uint32_t i = 0; i < hp->rot_dim / 2; i++)
      hp->inv_freq[i] = (float)(hp->inv_freq[i] / factor);
    snprintf(hp->rope_desc, sizeof hp->rope_desc, "linear theta %g factor %g", theta, factor);
  } else if (!strcmp(type, "llama3")) {
    double factor, lo, hi, old;
    if (!json_num(sc, "factor", &factor) || !json_num(sc, "low_freq_factor", &lo) ||
        !json_num(sc, "high_freq_factor", &hi) || !json_num(sc, "original_max_position_embeddings", &old)) {
      snprintf(err, errlen,
               "config.json: llama3 rope scaling needs factor, low_freq_factor, high_freq_factor, "
               "original_max_position_embeddings");
      return WGLLM_ERR_FORMAT;
    }
    llama3_scale(hp->inv_freq, hp->rot_dim / 2, factor, lo, hi, old);
    snprintf(hp->rope_desc, sizeof hp->rope_desc, "llama3 theta %g factor %g", theta, factor);
  } else {
    snprintf(err, errlen, "config.json: rope type \"%s\" is not supported (default, linear, llama3)", type);
    return WGLLM_ERR_UNSUPPORTED;
  }
  hp->rope_mode = OP_ROPE_HALF; /* transformers' rotate_half layout */
  return WGLLM_OK;
}

static wgllm_status hf_hparams(const cJSON *cfg, llm_hparams *hp, char *err, size_t errlen) {
  const cJSON *mt = cJSON_GetObjectItemCaseSensitive(cfg, "model_type");
  if (!cJSON_IsString(mt)) {
    snprintf(err, errlen, "config.json: no model_type");
    return WGLLM_ERR_FORMAT;
  }
  const char *t = mt->valuestring;
  const llm_family *fam = llm_family_from_hf(t);
  if (!fam) {
    char names[256];
    snprintf(err, errlen, "config.json: architecture \"%s\" is not supported (%s)", t,
             llm_family_names(0, names, sizeof names));
    return WGLLM_ERR_UNSUPPORTED;
  }
  hp->arch = fam->arch;
  snprintf(hp->arch_name, sizeof hp->arch_name, "%s", t);
  const char *missing = NULL;
  if (!json_u32(cfg, "vocab_size", &hp->n_vocab))
    missing = "vocab_size";
  else if (!json_u32(cfg, "hidden_size", &hp->n_embd))
    missing = "hidden_size";
  else if (!json_u32(cfg, "num_hidden_layers", &hp->n_layer))
    missing = "num_hidden_layers";
  else if (!json_u32(cfg, "num_attention_heads", &hp->n_head))
    missing = "num_attention_heads";
  else if (!json_u32(cfg, "intermediate_size", &hp->n_ff))
    missing = "intermediate_size";
  if (missing) {
    snprintf(err, errlen, "config.json: missing or invalid \"%s\"", missing);
    return WGLLM_ERR_FORMAT;
  }
  if (!json_u32(cfg, "num_key_value_heads", &hp->n_head_kv)) hp->n_head_kv = hp->n_head;
  if (!hp->n_head || !hp->n_head_kv || hp->n_head % hp->n_head_kv) {
    snprintf(err, errlen, "config.json: %u attention heads not a multiple of %u KV heads", hp->n_head, hp->n_head_kv);
    return WGLLM_ERR_FORMAT;
  }
  if (!json_u32(cfg, "head_dim", &hp->head_dim)) hp->head_dim = hp->n_embd / hp->n_head;
  if (hp->n_layer > LLM_MAX_LAYERS) {
    snprintf(err, errlen, "config.json: %u layers", hp->n_layer);
    return WGLLM_ERR_FORMAT;
  }
  double qs;
  hp->attn_scale = 1.0f / sqrtf((float)hp->head_dim);
  if (json_num(cfg, "query_pre_attn_scalar", &qs) && qs > 0) hp->attn_scale = (float)(1.0 / sqrt(qs));
  double eps = 1e-6;
  json_num(cfg, "rms_norm_eps", &eps);
  hp->norm_eps = (float)eps;
  const cJSON *tie = cJSON_GetObjectItemCaseSensitive(cfg, "tie_word_embeddings");
  hp->tied_embeddings = cJSON_IsBool(tie) ? cJSON_IsTrue(tie) : 0;
  const cJSON *ab = cJSON_GetObjectItemCaseSensitive(cfg, "attention_bias");
  hp->qkv_bias = fam->qkv_bias || (cJSON_IsBool(ab) && cJSON_IsTrue(ab));
  hp->qk_norm = fam->qk_norm;
  hp->embed_scale = 1.0f;
  hp->act = OP_ACT_SILU;
  const cJSON *act = cJSON_GetObjectItemCaseSensitive(cfg, "hidden_act");
  if (!cJSON_IsString(act)) act = cJSON_GetObjectItemCaseSensitive(cfg, "hidden_activation");
  if (cJSON_IsString(act)) {
    if (!strcmp(act->valuestring, "gelu_pytorch_tanh"))
      hp->act = OP_ACT_GELU_TANH;
    else if (strcmp(act->valuestring, "silu")) {
      snprintf(err, errlen, "config.json: activation \"%s\" is not supported (silu, gelu_pytorch_tanh)",
               act->valuestring);
      return WGLLM_ERR_UNSUPPORTED;
    }
  }
  if (fam->gemma) {
    hp->norm_offset = 1.0f;
    hp->embed_scale = sqrtf((float)hp->n_embd);
    hp->sandwich_norms = 1;
    double v;
    const char *capped = json_num(cfg, "final_logit_softcapping", &v)  ? "final_logit_softcapping"
                         : json_num(cfg, "attn_logit_softcapping", &v) ? "attn_logit_softcapping"
                                                                       : NULL;
    if (capped) {
      snprintf(err, errlen, "config.json: %s is not supported yet", capped);
      return WGLLM_ERR_UNSUPPORTED;
    }
    if (json_u32(cfg, "sliding_window", &hp->window) && hp->window) {
      const cJSON *lt = cJSON_GetObjectItemCaseSensitive(cfg, "layer_types");
      if (!cJSON_IsArray(lt) || cJSON_GetArraySize(lt) != (int)hp->n_layer) {
        snprintf(err, errlen, "config.json: layer_types must list the %u layers", hp->n_layer);
        return WGLLM_ERR_FORMAT;
      }
      hp->layer_local = calloc(hp->n_layer, 1);
      if (!hp->layer_local) return WGLLM_ERR_OUT_OF_MEMORY;
      for (uint32_t l = 0; l < hp->n_layer; l++) {
        const cJSON *e = cJSON_GetArrayItem(lt, (int)l);
        if (!cJSON_IsString(e) ||
            (strcmp(e->valuestring, "sliding_attention") && strcmp(e->valuestring, "full_attention"))) {
          snprintf(err, errlen, "config.json: layer_types[%u] is not sliding_attention or full_attention", l);
          return WGLLM_ERR_FORMAT;
        }
        hp->layer_local[l] = !strcmp(e->valuestring, "sliding_attention");
      }
    }
  }
  const cJSON *mlp_bias = cJSON_GetObjectItemCaseSensitive(cfg, "mlp_bias");
  if (cJSON_IsTrue(mlp_bias)) {
    snprintf(err, errlen, "config.json: mlp_bias true (biases on the MLP projections) is not supported");
    return WGLLM_ERR_UNSUPPORTED;
  }
  if (!fam->gemma) {
    /* Qwen2/3 name a sliding_window they apply only with use_sliding_window (and then below max_window_layers);
       Mistral v0.1 applies its sliding_window to every layer, as Gemma's local layers do */
    const cJSON *use_sw = cJSON_GetObjectItemCaseSensitive(cfg, "use_sliding_window");
    uint32_t w = 0;
    if (cJSON_IsTrue(use_sw)) {
      snprintf(err, errlen, "config.json: use_sliding_window true (Qwen's per-layer windows) is not supported");
      return WGLLM_ERR_UNSUPPORTED;
    }
    if (!cJSON_IsBool(use_sw) && json_u32(cfg, "sliding_window", &w) && w) {
      hp->window = w;
      hp->layer_local = malloc(hp->n_layer + 1u);
      if (!hp->layer_local) return WGLLM_ERR_OUT_OF_MEMORY;
      memset(hp->layer_local, 1, hp->n_layer);
    }
  }
  if (!json_u32(cfg, "max_position_embeddings", &hp->train_ctx)) hp->train_ctx = 4096;
  hp->bos = json_token(cfg, "bos_token_id");
  hp->eos = json_token(cfg, "eos_token_id");
  return hf_rope(cfg, hp, err, errlen);
}

static int gguf_u32(const wt_store *st, const char *arch, const char *key, uint32_t *out) {
  char k[128];
  snprintf(k, sizeof k, "%s.%s", arch, key);
  uint64_t v;
  if (!gguf_get_u64(st, k, &v) || v > 0xffffffffu) return 0;
  *out = (uint32_t)v;
  return 1;
}

static wgllm_status gguf_hparams(const wt_store *st, llm_hparams *hp, char *err, size_t errlen) {
  const char *a = gguf_get_str(st, "general.architecture");
  if (!a) {
    snprintf(err, errlen, "GGUF: no general.architecture");
    return WGLLM_ERR_FORMAT;
  }
  const llm_family *fam = llm_family_from_gguf(a);
  if (!fam) {
    char names[256];
    snprintf(err, errlen, "GGUF: architecture \"%s\" is not supported (%s)", a,
             llm_family_names(1, names, sizeof names));
    return WGLLM_ERR_UNSUPPORTED;
  }
  hp->arch = fam->arch;
  snprintf(hp->arch_name, sizeof hp->arch_name, "%s", a);
  const char *missing = NULL;
  if (!gguf_u32(st, a, "embedding_length", &hp->n_embd))
    missing = "embedding_length";
  else if (!gguf_u32(st, a, "block_count", &hp->n_layer))
    missing = "block_count";
  else if (!gguf_u32(st, a, "attention.head_count", &hp->n_head))
    missing = "attention.head_count";
  else if (!gguf_u32(st, a, "feed_forward_length", &hp->n_ff))
    missing = "feed_forward_length";
  if (missing) {
    snprintf(err, errlen, "GGUF: missing or invalid %s.%s", a, missing);
    return WGLLM_ERR_FORMAT;
  }
  if (!gguf_u32(st, a, "attention.head_count_kv", &hp->n_head_kv)) hp->n_head_kv = hp->n_head;
  if (!hp->n_head || !hp->n_head_kv || hp->n_head % hp->n_head_kv) {
    snprintf(err, errlen, "GGUF: %u attention heads not a multiple of %u KV heads", hp->n_head, hp->n_head_kv);
    return WGLLM_ERR_FORMAT;
  }
  if (!gguf_u32(st, a, "attention.key_length", &hp->head_dim)) hp->head_dim = hp->n_embd / hp->n_head;
  const wt_tensor *emb = wt_find(st, "token_embd.weight");
  if (!emb || emb->n_dims != 2) {
    snprintf(err, errlen, "GGUF: missing tensor token_embd.weight");
    return WGLLM_ERR_FORMAT;
  }
  hp->n_vocab = (uint32_t)emb->shape[0];
  char k[128];
  double eps = 1e-5, theta = 10000.0;
  snprintf(k, sizeof k, "%s.attention.layer_norm_rms_epsilon", a);
  gguf_get_f64(st, k, &eps);
  hp->norm_eps = (float)eps;
  snprintf(k, sizeof k, "%s.rope.freq_base", a);
  gguf_get_f64(st, k, &theta);
  if (!gguf_u32(st, a, "rope.dimension_count", &hp->rot_dim)) hp->rot_dim = hp->head_dim;
  if (!gguf_u32(st, a, "context_length", &hp->train_ctx)) hp->train_ctx = 4096;
  hp->tied_embeddings = wt_find(st, "output.weight") == NULL;
  hp->qkv_bias = wt_find(st, "blk.0.attn_q.bias") != NULL;
  hp->qk_norm = fam->qk_norm;
  hp->embed_scale = 1.0f;
  hp->act = OP_ACT_SILU;
  hp->attn_scale = 1.0f / sqrtf((float)hp->head_dim);
  /* llama.cpp permutes Llama's q/k rows for adjacent-pair RoPE; Qwen keeps the NeoX (half-split) layout */
  hp->rope_mode = fam->gguf_rope_adjacent ? OP_ROPE_ADJACENT : OP_ROPE_HALF;
  uint64_t v;
  hp->bos = gguf_get_u64(st, "tokenizer.ggml.bos_token_id", &v) ? (int32_t)v : -1;
  hp->eos = gguf_get_u64(st, "tokenizer.ggml.eos_token_id", &v) ? (int32_t)v : -1;
  if (hp->rot_dim == 0 || hp->rot_dim > hp->head_dim || hp->rot_dim % 2) {
    snprintf(err, errlen, "GGUF: rope.dimension_count %u invalid for head_dim %u", hp->rot_dim, hp->head_dim);
    return WGLLM_ERR_FORMAT;
  }
  hp->inv_freq = default_inv_freq(theta, hp->rot_dim);
  if (!hp->inv_freq) return WGLLM_ERR_OUT_OF_MEMORY;
  snprintf(hp->rope_desc, sizeof hp->rope_desc, "theta %g", theta);
  const wt_tensor *rf = wt_find(st, "rope_freqs.weight");
  if (rf) { /* per-pair frequency factors (llama3 scaling as llama.cpp stores it) */
    if (rf->dtype != WT_F32 || wt_numel(rf) != hp->rot_dim / 2) {
      snprintf(err, errlen, "GGUF: rope_freqs.weight must be F32 [%u] (is %s with %lld elements)", hp->rot_dim / 2,
               wt_dtype_name(rf->dtype), (long long)wt_numel(rf));
      return WGLLM_ERR_FORMAT;
    }
    for (uint32_t i = 0; i < hp->rot_dim / 2; i++) {
      float f;
      memcpy(&f, (const char *)rf->data + 4 * i, 4);
      if (!(f > 0)) {
        snprintf(err, errlen, "GGUF: rope_freqs.weight[%u] = %g is not positive", i, f);
        return WGLLM_ERR_FORMAT;
      }
      hp->inv_freq[i] /= f;
    }
    strncat(hp->rope_desc, ", rope_freqs factors", sizeof hp->rope_desc - strlen(hp->rope_desc) - 1);
  }
  return WGLLM_OK;
}

/* Expected tensors and their shapes, in each format's names. */
typedef struct expect {
  char name[96];
  int64_t d0, d1; /* d1 = 0: a vector */
} expect;

static wgllm_status check_one(const wt_store *st, const expect *e, char *err, size_t errlen) {
  const wt_tensor *t = wt_find(st, e->name);
  if (!t) {
    snprintf(err, errlen, "missing tensor %s", e->name);
    return WGLLM_ERR_FORMAT;
  }
  int dims = e->d1 ? 2 : 1;
  if (t->n_dims != dims || t->shape[0] != e->d0 || (dims == 2 && t->shape[1] != e->d1)) {
    char got[64] = "";
    for (int i = 0; i < t->n_dims; i++)
      snprintf(got + strlen(got), sizeof got - strlen(got), "%s%lld", i ? ", " : "", (long long)t->shape[i]);
    if (dims == 2)
      snprintf(err, errlen, "tensor %s in %s has shape [%s], the config says [%lld, %lld]", e->name, t->file, got,
               (long long)e->d0, (long long)e->d1);
    else
      snprintf(err, errlen, "tensor %s in %s has shape [%s], the config says [%lld]", e->name, t->file, got,
               (long long)e->d0);
    return WGLLM_ERR_FORMAT;
  }
  return WGLLM_OK;
}

/* The tensor roles of the Llama-family decoder, one row each, in the order they are checked: the name in each
   format (per-layer names get the layer prefix), the shape in hyperparameters, and when the tensor is present.
   The shape check walks this table; llm_tensor_name reads the names from it. */
typedef enum role_dim { DIM_NONE, DIM_EMBD, DIM_VOCAB, DIM_Q, DIM_KV, DIM_FF, DIM_HEAD } role_dim;
typedef enum role_when {
  WHEN_ALWAYS,
  WHEN_UNTIED,
  WHEN_PLAIN_NORMS,
  WHEN_SANDWICH,
  WHEN_QKV_BIAS,
  WHEN_QK_NORM
} role_when;
static const struct role {
  const char *role, *hf, *gguf;
  int per_layer;
  role_dim d0, d1; /* d1 DIM_NONE: a vector */
  role_when when;
} ROLES[] = {
    {"embed", "model.embed_tokens.weight", "token_embd.weight", 0, DIM_VOCAB, DIM_EMBD, WHEN_ALWAYS},
    {"norm", "model.norm.weight", "output_norm.weight", 0, DIM_EMBD, DIM_NONE, WHEN_ALWAYS},
    {"output", "lm_head.weight", "output.weight", 0, DIM_VOCAB, DIM_EMBD, WHEN_UNTIED},
    {"attn_norm", "input_layernorm.weight", "attn_norm.weight", 1, DIM_EMBD, DIM_NONE, WHEN_ALWAYS},
    {"ffn_norm", "post_attention_layernorm.weight", "ffn_norm.weight", 1, DIM_EMBD, DIM_NONE, WHEN_PLAIN_NORMS},
    /* Gemma's sandwich norms: its post_attention_layernorm follows attention, pre_feedforward precedes the MLP */
    {"pre_ffn_norm", "pre_feedforward_layernorm.weight", "ffn_norm.weight", 1, DIM_EMBD, DIM_NONE, WHEN_SANDWICH},
    {"wq", "self_attn.q_proj.weight", "attn_q.weight", 1, DIM_Q, DIM_EMBD, WHEN_ALWAYS},
    {"wk", "self_attn.k_proj.weight", "attn_k.weight", 1, DIM_KV, DIM_EMBD, WHEN_ALWAYS},
    {"post_attn_norm", "post_attention_layernorm.weight", "post_attention_norm.weight", 1, DIM_EMBD, DIM_NONE,
     WHEN_SANDWICH},
    {"post_ffn_norm", "post_feedforward_layernorm.weight", "post_ffw_norm.weight", 1, DIM_EMBD, DIM_NONE,
     WHEN_SANDWICH},
    {"wv", "self_attn.v_proj.weight", "attn_v.weight", 1, DIM_KV, DIM_EMBD, WHEN_ALWAYS},
    {"wo", "self_attn.o_proj.weight", "attn_output.weight", 1, DIM_EMBD, DIM_Q, WHEN_ALWAYS},
    {"gate", "mlp.gate_proj.weight", "ffn_gate.weight", 1, DIM_FF, DIM_EMBD, WHEN_ALWAYS},
    {"up", "mlp.up_proj.weight", "ffn_up.weight", 1, DIM_FF, DIM_EMBD, WHEN_ALWAYS},
    {"down", "mlp.down_proj.weight", "ffn_down.weight", 1, DIM_EMBD, DIM_FF, WHEN_ALWAYS},
    {"bq", "self_attn.q_proj.bias", "attn_q.bias", 1, DIM_Q, DIM_NONE, WHEN_QKV_BIAS},
    {"bk", "self_attn.k_proj.bias", "attn_k.bias", 1, DIM_KV, DIM_NONE, WHEN_QKV_BIAS},
    {"bv", "self_attn.v_proj.bias", "attn_v.bias", 1, DIM_KV, DIM_NONE, WHEN_QKV_BIAS},
    {"q_norm", "self_attn.q_norm.weight", "attn_q_norm.weight", 1, DIM_HEAD, DIM_NONE, WHEN_QK_NORM},
    {"k_norm", "self_attn.k_norm.weight", "attn_k_norm.weight", 1, DIM_HEAD, DIM_NONE, WHEN_QK_NORM},
};

static int64_t role_dim_of(const llm_hparams *hp, role_dim d) {
  switch (d) {
  case DIM_EMBD:
    return hp->n_embd;
  case DIM_VOCAB:
    return hp->n_vocab;
  case DIM_Q:
    return (int64_t)hp->n_head * hp->head_dim;
  case DIM_KV:
    return (int64_t)hp->n_head_kv * hp->head_dim;
  case DIM_FF:
    return hp->n_ff;
  case DIM_HEAD:
    return hp->head_dim;
  default:
    return 0;
  }
}

static int role_present(const llm_hparams *hp, role_when w) {
  switch (w) {
  case WHEN_UNTIED:
    return !hp->tied_embeddings;
  case WHEN_PLAIN_NORMS:
    return !hp->sandwich_norms;
  case WHEN_SANDWICH:
    return hp->sandwich_norms;
  case WHEN_QKV_BIAS:
    return hp->qkv_bias;
  case WHEN_QK_NORM:
    return hp->qk_norm;
  default:
    return 1;
  }
}

static wgllm_status check_shapes(const wt_store *st, const llm_hparams *hp, char *err, size_t errlen) {
  int gguf = wt_store_format(st) == WT_FORMAT_GGUF;
  char nb[96];
  /* the file-level tensors first, then each layer's */
  for (int pass = 0; pass < 2; pass++)
    for (uint32_t l = 0; l < (pass ? hp->n_layer : 1); l++)
      for (size_t i = 0; i < sizeof ROLES / sizeof ROLES[0]; i++) {
        const struct role *r = &ROLES[i];
        if (r->per_layer != pass || !role_present(hp, r->when)) continue;
        expect e = {"", role_dim_of(hp, r->d0), role_dim_of(hp, r->d1)};
        snprintf(e.name, sizeof e.name, "%s", llm_tensor_name(gguf, r->role, pass ? (int)l : -1, nb, sizeof nb));
        wgllm_status s = check_one(st, &e, err, errlen);
        if (s) return s;
      }
  return WGLLM_OK;
}

const char *llm_tensor_name(int gguf, const char *role, int layer, char *buf, size_t len) {
  for (size_t i = 0; i < sizeof ROLES / sizeof ROLES[0]; i++) {
    if (strcmp(ROLES[i].role, role)) continue;
    const char *n = gguf ? ROLES[i].gguf : ROLES[i].hf;
    if (layer < 0)
      snprintf(buf, len, "%s", n);
    else if (gguf)
      snprintf(buf, len, "blk.%d.%s", layer, n);
    else
      snprintf(buf, len, "model.layers.%d.%s", layer, n);
    return buf;
  }
  snprintf(buf, len, "?%s", role);
  return buf;
}

wgllm_status llm_read_hparams(const wt_store *st, llm_hparams *hp, char *err, size_t errlen) {
  memset(hp, 0, sizeof *hp);
  wgllm_status s;
  if (wt_store_format(st) == WT_FORMAT_GGUF)
    s = gguf_hparams(st, hp, err, errlen);
  else {
    const cJSON *cfg = wt_config(st);
    if (!cfg) {
      snprintf(err, errlen, "no config.json");
      return WGLLM_ERR_FORMAT;
    }
    s = hf_hparams(cfg, hp, err, errlen);
  }
  if (!s && (!hp->n_vocab || !hp->n_embd || !hp->n_layer || !hp->head_dim || !hp->n_ff)) {
    snprintf(err, errlen, "hyperparameters incomplete (vocab %u, hidden %u, layers %u, head_dim %u, ffn %u)",
             hp->n_vocab, hp->n_embd, hp->n_layer, hp->head_dim, hp->n_ff);
    s = WGLLM_ERR_FORMAT;
  }
  if (!s && hp->head_dim > 512) {
    snprintf(err, errlen, "head_dim %u is over the attention kernel's 512", hp->head_dim);
    s = WGLLM_ERR_UNSUPPORTED;
  }
  if (!s) s = check_shapes(st, hp, err, errlen);
  if (s) llm_hparams_free(hp);
  return s;
}
