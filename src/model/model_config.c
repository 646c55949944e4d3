/* Hyperparameters of the families in families.c (Llama 2/3.x, Mistral, Qwen2, Qwen3, Gemma 3) from a Hugging
   Face config.json or GGUF metadata, the RoPE inverse frequencies (default, linear, llama3 scaling, GGUF
   rope_freqs factors), and the check of every expected tensor's shape against them. */
#include "config_json.h"
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
wgllm_status llm_open_store(const char *path, wt_store **out, llm_err *err) {
  struct stat sb;
  *out = NULL;
  if (stat(path, &sb) != 0) {
    return llm_err_set(err, WGLLM_ERR_IO, "%s: %s", path, strerror(errno));
  }
  if (S_ISDIR(sb.st_mode)) return st_open_dir(path, out, err);
  size_t n = strlen(path);
  if (n > 12 && !strcmp(path + n - 12, ".safetensors")) {
    return llm_err_set(err, WGLLM_ERR_INVALID_ARG,
                       "%s: a safetensors file; pass the directory that holds it with config.json", path);
  }
  return gguf_open(path, out, err);
}

void llm_hparams_free(llm_hparams *hp) {
  free(hp->inv_freq);
  free(hp->inv_freq_local);
  free(hp->inv_freq_long);
  free(hp->lay);
  hp->inv_freq = hp->inv_freq_local = hp->inv_freq_long = NULL;
  hp->lay = NULL;
}

wgllm_status llm_hparams_layers_init(llm_hparams *hp, llm_err *err) {
  free(hp->lay);
  hp->lay = calloc(hp->n_layer ? hp->n_layer : 1, sizeof *hp->lay);
  if (!hp->lay) {
    return llm_err_set(err, WGLLM_ERR_OUT_OF_MEMORY, "out of host memory");
  }
  for (uint32_t l = 0; l < hp->n_layer; l++)
    hp->lay[l] = (llm_layer_hp){hp->head_dim, hp->n_head_kv, hp->rot_dim, hp->n_ff, 0, l, 0, 0};
  return WGLLM_OK;
}

uint32_t llm_max_head_dim(const llm_hparams *hp) {
  uint32_t m = 0;
  for (uint32_t l = 0; l < hp->n_layer; l++)
    if (llm_layer_head_dim(hp, l) > m) m = llm_layer_head_dim(hp, l);
  return m;
}
uint32_t llm_max_qkv_rows(const llm_hparams *hp) {
  uint32_t m = 0;
  for (uint32_t l = 0; l < hp->n_layer; l++) {
    uint32_t r = llm_layer_q_width(hp, l) + 2 * llm_layer_kv_width(hp, l); /* room for q | k | v */
    if (r > m) m = r;
  }
  return m;
}
int llm_has_moe(const llm_hparams *hp) {
  for (uint32_t l = 0; l < hp->n_layer; l++)
    if (llm_layer_is_moe(hp, l)) return 1;
  return 0;
}

void llm_param_counts(const llm_hparams *hp, uint64_t *total, uint64_t *active) {
  uint64_t D = hp->n_embd, emb = (uint64_t)hp->n_vocab * D;
  *total = *active = emb * (hp->tied_embeddings || hp->no_lm_head ? 1 : 2) + D;
  if (hp->ple_dim) { /* Gemma 4's per-layer embedding table, its projection and norm */
    uint64_t all = (uint64_t)hp->n_layer * hp->ple_dim;
    *total += (uint64_t)hp->ple_vocab * all + all * D + hp->ple_dim;
    *active = *total;
  }
  for (uint32_t l = 0; l < hp->n_layer; l++) {
    uint64_t hd = llm_layer_head_dim(hp, l), attn = D * llm_layer_qkv_rows(hp, l) + llm_layer_q_width(hp, l) * D;
    attn +=
        (hp->sandwich_norms ? 4 : 2) * D + (hp->qk_norm ? 2 * hd : 0) + (hp->qkv_bias ? llm_layer_qkv_rows(hp, l) : 0);
    attn += hp->ple_dim ? 2 * (uint64_t)hp->ple_dim * D + D : 0; /* Gemma 4's per-layer input gate, projection, norm */
    attn += hp->layer_scalar;
    attn += (hp->out_bias ? D : 0) + (hp->sinks ? hp->n_head : 0); /* gpt-oss's output bias and sinks */
    *total += attn;
    *active += attn;
    if (llm_layer_is_moe(hp, l)) {
      uint64_t expert = 3 * D * hp->n_ff_exp, router = (uint64_t)hp->n_expert * D;
      if (hp->moe_bias) { /* gpt-oss: the router's bias, each expert's gate, up and down biases */
        router += hp->n_expert;
        expert += 2 * (uint64_t)hp->n_ff_exp + D;
      }
      *total += router + expert * hp->n_expert;
      *active += router + expert * hp->n_expert_used;
      if (hp->moe_dense_too) { /* Gemma 4: the dense MLP beside, the router's two scales, three more norms */
        uint64_t dense = 3 * D * llm_layer_n_ff(hp, l) + D + hp->n_expert + 3 * D;
        *total += dense;
        *active += dense;
      }
    } else {
      *total += 3 * D * llm_layer_n_ff(hp, l);
      *active += 3 * D * llm_layer_n_ff(hp, l);
    }
  }
}

uint32_t llm_max_n_ff(const llm_hparams *hp) {
  uint32_t m = 0;
  for (uint32_t l = 0; l < hp->n_layer; l++)
    if (llm_layer_n_ff(hp, l) > m) m = llm_layer_n_ff(hp, l);
  return m;
}

int json_num(const cJSON *o, const char *key, double *out) {
  const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);
  if (!cJSON_IsNumber(v)) return 0;
  *out = v->valuedouble;
  return 1;
}

int json_u32(const cJSON *o, const char *key, uint32_t *out) {
  double d;
  if (!json_num(o, key, &d) || d < 0 || d > 4294967295.0 || d != floor(d)) return 0;
  *out = (uint32_t)d;
  return 1;
}

/* the value as the file writes it, for messages ("-1.5", "\"8\"", "[]"), cut to fit */
static void json_text(const cJSON *v, char *buf, size_t cap) {
  if (cJSON_IsNumber(v) && !isfinite(v->valuedouble)) { /* cJSON would print null */
    snprintf(buf, cap, "%g (1e999 and the like)", v->valuedouble);
    return;
  }
  char *t = cJSON_PrintUnformatted(v);
  snprintf(buf, cap, "%s", t ? t : "?");
  if (t && strlen(t) >= cap && cap > 4) memcpy(buf + cap - 4, "...", 4);
  free(t);
}

wgllm_status json_opt_u32(const cJSON *o, const char *key, uint32_t *out, llm_err *err) {
  const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);
  if (!v || cJSON_IsNull(v)) return WGLLM_OK;
  if (json_u32(o, key, out)) return WGLLM_OK;
  char t[48];
  json_text(v, t, sizeof t);
  return llm_err_set(err, WGLLM_ERR_FORMAT, "config.json: %s is %s, not an integer from 0 to 4294967295", key, t);
}

wgllm_status json_opt_num(const cJSON *o, const char *key, double *out, llm_err *err) {
  const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);
  if (!v || cJSON_IsNull(v)) return WGLLM_OK;
  if (cJSON_IsNumber(v) && isfinite(v->valuedouble)) { /* cJSON reads 1e999 as infinity */
    *out = v->valuedouble;
    return WGLLM_OK;
  }
  char t[48];
  json_text(v, t, sizeof t);
  return llm_err_set(err, WGLLM_ERR_FORMAT, "config.json: %s is %s, not a finite number", key, t);
}

wgllm_status json_opt_bool(const cJSON *o, const char *key, int *out, llm_err *err) {
  const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);
  if (!v || cJSON_IsNull(v)) return WGLLM_OK;
  if (cJSON_IsBool(v)) {
    *out = cJSON_IsTrue(v);
    return WGLLM_OK;
  }
  char t[48];
  json_text(v, t, sizeof t);
  return llm_err_set(err, WGLLM_ERR_FORMAT, "config.json: %s is %s, not true or false", key, t);
}

int32_t json_token(const cJSON *o, const char *key) {
  const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);
  if (cJSON_IsArray(v)) v = cJSON_GetArrayItem(v, 0);
  if (!cJSON_IsNumber(v)) return -1;
  double d = v->valuedouble; /* converted only when it is a token id: 1e20 or 2.5 is not (no undefined cast) */
  if (d == -1.0) return -1;  /* some configs say "none" so */
  return d >= 0 && d <= 2147483647.0 && d == floor(d) ? (int32_t)d : JSON_TOKEN_INVALID;
}

wgllm_status json_bos_eos(const cJSON *cfg, int32_t *bos, int32_t *eos, llm_err *err) {
  *bos = json_token(cfg, "bos_token_id");
  *eos = json_token(cfg, "eos_token_id");
  if (*bos != JSON_TOKEN_INVALID && *eos != JSON_TOKEN_INVALID) return WGLLM_OK;
  return llm_err_set(err, WGLLM_ERR_FORMAT, "config.json: %s is not a token id (an integer from 0 to 2147483647)",
                     *bos == JSON_TOKEN_INVALID ? "bos_token_id" : "eos_token_id");
}

/* inv_freq[i] = theta^(-2i/dim) (f32, as transformers computes it) */
float *default_inv_freq(double theta, uint32_t dim) {
  float *f = malloc(dim / 2 * sizeof *f);
  if (!f) return NULL;
  for (uint32_t i = 0; i < dim / 2; i++)
    f[i] = (float)(1.0 / pow(theta, (double)(2 * i) / dim));
  return f;
}

wgllm_status llm_rope_table_check(const float *inv, uint32_t half, const char *what, llm_err *err) {
  for (uint32_t i = 0; i < half; i++)
    if (!isfinite(inv[i]) || inv[i] < 0) {
      return llm_err_set(err, WGLLM_ERR_FORMAT,
                         "%s give the inverse frequency %g at pair %u (finite and not negative needed)", what, inv[i],
                         i);
    }
  return WGLLM_OK;
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

static wgllm_status hf_rope_params(const cJSON *cfg, const cJSON *rp, llm_hparams *hp, llm_err *err);

/* RoPE of the global layers into inv_freq and, for Gemma 3's local layers (local_layers), of the local ones into
   inv_freq_local: from rope_parameters per layer type (transformers 5), or from rope_theta/rope_scaling (global)
   and rope_local_base_freq (local, plain RoPE; 10000 when absent, as transformers 4 has it). */
static wgllm_status hf_rope(const cJSON *cfg, llm_hparams *hp, int local_layers, llm_err *err) {
  const cJSON *rp = cJSON_GetObjectItemCaseSensitive(cfg, "rope_parameters");
  const cJSON *full = cJSON_GetObjectItemCaseSensitive(rp, "full_attention");
  const cJSON *local = cJSON_GetObjectItemCaseSensitive(rp, "sliding_attention");
  if (!cJSON_IsObject(full) && !local_layers) return hf_rope_params(cfg, rp, hp, err);
  wgllm_status s;
  if (cJSON_IsObject(full) && !cJSON_IsObject(local)) {
    return llm_err_set(err, WGLLM_ERR_FORMAT,
                       "config.json: rope_parameters has full_attention but no sliding_attention");
  }
  if (cJSON_IsObject(full)) { /* per layer type */
    s = hf_rope_params(cfg, local, hp, err);
  } else { /* the transformers 4 layout */
    double theta = 10000.0;
    if ((s = json_opt_num(cfg, "rope_local_base_freq", &theta, err))) return s;
    cJSON *plain = cJSON_CreateObject();
    if (!plain || !cJSON_AddNumberToObject(plain, "rope_theta", theta) ||
        !cJSON_AddStringToObject(plain, "rope_type", "default")) {
      cJSON_Delete(plain);
      return WGLLM_ERR_OUT_OF_MEMORY;
    }
    s = hf_rope_params(cfg, plain, hp, err);
    cJSON_Delete(plain);
    full = rp; /* NULL, or a rope_parameters of the old single kind */
  }
  if (s) return s;
  hp->inv_freq_local = hp->inv_freq;
  hp->rot_dim_local = hp->rot_dim;
  hp->inv_freq = NULL;
  char local_desc[160];
  snprintf(local_desc, sizeof local_desc, "%s", hp->rope_desc);
  s = hf_rope_params(cfg, full, hp, err);
  if (!s) {
    size_t l = strlen(hp->rope_desc);
    snprintf(hp->rope_desc + l, sizeof hp->rope_desc - l, "; local: %s", local_desc);
  }
  return s;
}

/* A longrope factor list of sc (short_factor or long_factor): rot_dim/2 positive numbers, into inv (theta^(-2i/d) /
   factor[i], as transformers' _compute_longrope_parameters) */
static wgllm_status longrope_factors(const cJSON *sc, const char *key, double theta, llm_hparams *hp, float *inv,
                                     llm_err *err) {
  const cJSON *a = cJSON_GetObjectItemCaseSensitive(sc, key);
  uint32_t half = hp->rot_dim / 2;
  if (!cJSON_IsArray(a) || (uint32_t)cJSON_GetArraySize(a) != half)
    return llm_err_set(err, WGLLM_ERR_FORMAT, "config.json: longrope %s must be a list of %u numbers (rotary dims / 2)",
                       key, half);
  uint32_t i = 0;
  const cJSON *it;
  cJSON_ArrayForEach(it, a) {
    double f = cJSON_IsNumber(it) ? it->valuedouble : NAN;
    if (!(f > 0) || !isfinite(f))
      return llm_err_set(err, WGLLM_ERR_FORMAT, "config.json: longrope %s[%u] is not a positive number", key, i);
    inv[i] = (float)(1.0 / (f * pow(theta, (double)(2 * i) / hp->rot_dim)));
    i++;
  }
  return WGLLM_OK;
}

/* longrope (Phi-3, Phi-4-mini): short_factor and long_factor per pair, original_max_position_embeddings, and the
   cos/sin scale attention_factor (default sqrt(1 + ln(factor) / ln(original)), factor = max_position_embeddings /
   original when not given). The long factors serve a session whose context passes the original length (as
   llama.cpp chooses; transformers switches per forward pass by the sequence so far, the same numbers up to that
   length). */
static wgllm_status longrope(const cJSON *cfg, const cJSON *sc, double theta, llm_hparams *hp, llm_err *err) {
  double orig = NAN, factor = NAN, attn = NAN, max_pos = 4096;
  wgllm_status s;
  const cJSON *orig_at = cJSON_GetObjectItemCaseSensitive(sc, "original_max_position_embeddings") ? sc : cfg;
  if ((s = json_opt_num(orig_at, "original_max_position_embeddings", &orig, err)) ||
      (s = json_opt_num(sc, "factor", &factor, err)) || (s = json_opt_num(sc, "attention_factor", &attn, err)) ||
      (s = json_opt_num(cfg, "max_position_embeddings", &max_pos, err)))
    return s;
  if (!(orig >= 1 && orig <= 16777216 && orig == (double)(uint32_t)orig))
    return llm_err_set(err, WGLLM_ERR_FORMAT,
                       "config.json: longrope needs original_max_position_embeddings (a positive integer), not %g",
                       orig);
  if (isnan(factor)) factor = max_pos / orig;
  if (isnan(attn)) attn = factor <= 1.0 ? 1.0 : sqrt(1.0 + log(factor) / log(orig));
  if (!(attn > 0) || !isfinite(attn))
    return llm_err_set(err, WGLLM_ERR_FORMAT, "config.json: longrope attention_factor %g (positive and finite)", attn);
  hp->inv_freq_long = malloc(hp->rot_dim / 2 * sizeof *hp->inv_freq_long);
  if (!hp->inv_freq_long) return WGLLM_ERR_OUT_OF_MEMORY;
  if ((s = longrope_factors(sc, "short_factor", theta, hp, hp->inv_freq, err)) ||
      (s = longrope_factors(sc, "long_factor", theta, hp, hp->inv_freq_long, err)) ||
      (s = llm_rope_table_check(hp->inv_freq_long, hp->rot_dim / 2, "config.json: the long RoPE factors", err)))
    return s;
  hp->rope_orig_ctx = (uint32_t)orig;
  hp->rope_attn_factor = (float)attn;
  snprintf(hp->rope_desc, sizeof hp->rope_desc, "longrope theta %g, long past %u tokens, attention factor %g", theta,
           hp->rope_orig_ctx, attn);
  return WGLLM_OK;
}

/* transformers' get_mscale: 0.1 * mscale * ln(scale) + 1 above a scale of 1 */
double llm_yarn_mscale(double scale, double mscale) { return scale <= 1 ? 1.0 : 0.1 * mscale * log(scale) + 1.0; }

/* YaRN as transformers' _compute_yarn_parameters: factor (or max_position_embeddings / original when null),
   original_max_position_embeddings, beta_fast / beta_slow (32 / 1), truncate (true), the attention factor on cos and
   sin (attention_factor, or get_mscale(factor, mscale) / get_mscale(factor, mscale_all_dim), or get_mscale(factor));
   each pair's frequency between the interpolated (divided by factor) and the original one by the linear ramp over
   the correction range. */
static wgllm_status yarn(const cJSON *cfg, const cJSON *sc, double theta, llm_hparams *hp, llm_err *err) {
  double factor = NAN, orig = NAN, attn = NAN, ms = NAN, ms_all = NAN, fast = 0, slow = 0, max_pos = 4096;
  int truncate = 1;
  wgllm_status s;
  if ((s = json_opt_num(sc, "factor", &factor, err)) ||
      (s = json_opt_num(sc, "original_max_position_embeddings", &orig, err)) ||
      (s = json_opt_num(sc, "attention_factor", &attn, err)) || (s = json_opt_num(sc, "mscale", &ms, err)) ||
      (s = json_opt_num(sc, "mscale_all_dim", &ms_all, err)) || (s = json_opt_num(sc, "beta_fast", &fast, err)) ||
      (s = json_opt_num(sc, "beta_slow", &slow, err)) || (s = json_opt_bool(sc, "truncate", &truncate, err)) ||
      (s = json_opt_num(cfg, "max_position_embeddings", &max_pos, err)))
    return s;
  if (!(orig >= 1) || !isfinite(orig))
    return llm_err_set(err, WGLLM_ERR_FORMAT,
                       "config.json: yarn rope scaling needs original_max_position_embeddings (positive), not %g",
                       orig);
  if (isnan(factor)) factor = max_pos / orig;
  if (!(factor > 0) || !isfinite(factor))
    return llm_err_set(err, WGLLM_ERR_FORMAT, "config.json: yarn rope scaling factor %g (finite and positive)", factor);
  if (isnan(attn))
    attn = !isnan(ms) && ms != 0 && !isnan(ms_all) && ms_all != 0
               ? llm_yarn_mscale(factor, ms) / llm_yarn_mscale(factor, ms_all)
               : llm_yarn_mscale(factor, 1.0);
  if (fast == 0) fast = 32; /* transformers: `or 32`, `or 1` */
  if (slow == 0) slow = 1;
  return llm_yarn(hp, theta, factor, orig, fast, slow, truncate, attn, "config.json", err);
}

wgllm_status llm_yarn(llm_hparams *hp, double theta, double factor, double orig, double fast, double slow, int truncate,
                      double attn, const char *where, llm_err *err) {
  if (!(attn > 0) || !isfinite(attn) || !(fast > 0) || !(slow > 0) || !isfinite(fast) || !isfinite(slow))
    return llm_err_set(err, WGLLM_ERR_FORMAT,
                       "%s: yarn attention factor %g, beta_fast %g, beta_slow %g (finite and positive)", where, attn,
                       fast, slow);
  double dim = hp->rot_dim;
  /* find_correction_dim: the dimension at which a wavelength makes num_rotations turns over the original length */
  double low = dim * log(orig / (fast * 2 * M_PI)) / (2 * log(theta));
  double high = dim * log(orig / (slow * 2 * M_PI)) / (2 * log(theta));
  if (truncate) {
    low = floor(low);
    high = ceil(high);
  }
  if (low < 0) low = 0;
  if (high > dim - 1) high = dim - 1;
  if (low == high) high += 0.001; /* transformers' guard against a zero-width ramp */
  for (uint32_t i = 0; i < hp->rot_dim / 2; i++) {
    double pos = pow(theta, 2.0 * i / dim), ramp = (i - low) / (high - low);
    double extrapolate = 1 - (ramp < 0 ? 0 : ramp > 1 ? 1 : ramp);
    hp->inv_freq[i] = (float)(1.0 / (factor * pos) * (1 - extrapolate) + 1.0 / pos * extrapolate);
  }
  hp->rope_attn_factor = (float)attn;
  snprintf(hp->rope_desc, sizeof hp->rope_desc, "yarn theta %g factor %g from %g, attention factor %g%s", theta, factor,
           orig, attn, truncate ? "" : ", untruncated");
  return WGLLM_OK;
}

static wgllm_status hf_rope_params(const cJSON *cfg, const cJSON *rp, llm_hparams *hp, llm_err *err) {
  /* transformers 5 keeps everything in rope_parameters; older configs use rope_theta + rope_scaling */
  const cJSON *rs = cJSON_GetObjectItemCaseSensitive(cfg, "rope_scaling");
  double theta = 10000.0, partial = 1.0;
  /* every number is checked for its type and finiteness here, its range below, before anything is sized from it */
  wgllm_status s = WGLLM_OK;
  const cJSON *theta_at = cJSON_GetObjectItemCaseSensitive(rp, "rope_theta") ? rp : cfg;
  const cJSON *partial_at = cJSON_GetObjectItemCaseSensitive(rp, "partial_rotary_factor") ? rp : cfg;
  if ((s = json_opt_num(theta_at, "rope_theta", &theta, err)) ||
      (s = json_opt_num(partial_at, "partial_rotary_factor", &partial, err)))
    return s;
  const cJSON *sc = cJSON_IsObject(rp) ? rp : rs;
  const char *type = "default";
  if (cJSON_IsObject(sc)) {
    const cJSON *t = cJSON_GetObjectItemCaseSensitive(sc, "rope_type");
    if (!cJSON_IsString(t)) t = cJSON_GetObjectItemCaseSensitive(sc, "type");
    if (cJSON_IsString(t)) type = t->valuestring;
  }
  /* checked before anything is sized from them (a huge head_dim or factor once built a RoPE table of gigabytes
     before the head_dim check refused it; a negative factor was an undefined conversion) */
  if (hp->head_dim == 0 || hp->head_dim > 512) {
    return llm_err_set(err, WGLLM_ERR_UNSUPPORTED,
                       "config.json: head_dim %u (1 to 512 supported: the attention kernels' limit)", hp->head_dim);
  }
  if (!(partial > 0.0 && partial <= 1.0)) {
    return llm_err_set(err, WGLLM_ERR_FORMAT,
                       "config.json: partial_rotary_factor %g (a fraction of head_dim in (0, 1])", partial);
  }
  if (!(theta > 1 && theta < 1e300)) { /* as the GGUF reader: 0 gave an infinite RoPE table, a negative one NaN */
    return llm_err_set(err, WGLLM_ERR_FORMAT, "config.json: rope_theta %g (must be over 1)", theta);
  }
  hp->rot_dim = (uint32_t)(hp->head_dim * partial);
  hp->rot_dim &= ~1u;
  if (hp->rot_dim == 0) {
    return llm_err_set(err, WGLLM_ERR_FORMAT, "config.json: rotary dimension is 0");
  }
  hp->inv_freq = default_inv_freq(theta, hp->rot_dim);
  if (!hp->inv_freq) return WGLLM_ERR_OUT_OF_MEMORY;
  if (!strcmp(type, "default")) {
    snprintf(hp->rope_desc, sizeof hp->rope_desc, "default theta %g", theta);
  } else if (!strcmp(type, "linear")) {
    double factor = 1;
    if ((s = json_opt_num(sc, "factor", &factor, err))) return s;
    if (!(factor > 0 && factor < 1e300)) { /* 0 divided the table into infinities */
      return llm_err_set(err, WGLLM_ERR_FORMAT, "config.json: linear rope scaling factor %g (must be positive)",
                         factor);
    }
    for (uint32_t i = 0; i < hp->rot_dim / 2; i++)
      hp->inv_freq[i] = (float)(hp->inv_freq[i] / factor);
    snprintf(hp->rope_desc, sizeof hp->rope_desc, "linear theta %g factor %g", theta, factor);
  } else if (!strcmp(type, "llama3")) {
    double factor = NAN, lo = NAN, hi = NAN, old = NAN;
    if ((s = json_opt_num(sc, "factor", &factor, err)) || (s = json_opt_num(sc, "low_freq_factor", &lo, err)) ||
        (s = json_opt_num(sc, "high_freq_factor", &hi, err)) ||
        (s = json_opt_num(sc, "original_max_position_embeddings", &old, err)))
      return s;
    if (!json_num(sc, "factor", &factor) || !json_num(sc, "low_freq_factor", &lo) ||
        !json_num(sc, "high_freq_factor", &hi) || !json_num(sc, "original_max_position_embeddings", &old)) {
      return llm_err_set(err, WGLLM_ERR_FORMAT,
                         "config.json: llama3 rope scaling needs factor, low_freq_factor, high_freq_factor, "
                         "original_max_position_embeddings");
    }
    if (!(factor > 0 && lo > 0 && hi > 0 && old > 0) || hi == lo || !isfinite(factor) || !isfinite(lo) ||
        !isfinite(hi) || !isfinite(old)) {
      /* a factor of 0 gave infinite frequencies, a negative factor or high_freq_factor negative ones, high == low
         a division by zero */
      return llm_err_set(err, WGLLM_ERR_FORMAT,
                         "config.json: llama3 rope scaling factor %g, low_freq_factor %g, high_freq_factor %g, "
                         "original_max_position_embeddings %g (finite and positive, high and low apart)",
                         factor, lo, hi, old);
    }
    llama3_scale(hp->inv_freq, hp->rot_dim / 2, factor, lo, hi, old);
    snprintf(hp->rope_desc, sizeof hp->rope_desc, "llama3 theta %g factor %g", theta, factor);
  } else if (!strcmp(type, "longrope")) {
    if ((s = longrope(cfg, sc, theta, hp, err))) return s;
  } else if (!strcmp(type, "yarn")) {
    if ((s = yarn(cfg, sc, theta, hp, err))) return s;
  } else {
    return llm_err_set(err, WGLLM_ERR_UNSUPPORTED,
                       "config.json: rope type \"%s\" is not supported (default, linear, llama3, longrope, yarn)",
                       type);
  }
  hp->rope_mode = OP_ROPE_HALF; /* transformers' rotate_half layout */
  /* finite parameters can still overflow the f32 table (a llama3 factor of 1e-300 divided it into infinities) */
  return llm_rope_table_check(hp->inv_freq, hp->rot_dim / 2, "config.json: the RoPE parameters", err);
}

wgllm_status llm_json_layer_types(const cJSON *cfg, uint32_t n_layer, uint32_t pattern, uint8_t **local, llm_err *err) {
  const cJSON *lt = cJSON_GetObjectItemCaseSensitive(cfg, "layer_types");
  *local = calloc(n_layer + 1u, 1);
  if (!*local) return WGLLM_ERR_OUT_OF_MEMORY;
  if (cJSON_IsArray(lt)) {
    if (cJSON_GetArraySize(lt) != (int)n_layer) {
      llm_err_set(err, WGLLM_ERR_FORMAT, "config.json: layer_types lists %d layers, not %u", cJSON_GetArraySize(lt),
                  n_layer);
      goto fail;
    }
    for (uint32_t l = 0; l < n_layer; l++) {
      const cJSON *e = cJSON_GetArrayItem(lt, (int)l);
      if (!cJSON_IsString(e) ||
          (strcmp(e->valuestring, "sliding_attention") && strcmp(e->valuestring, "full_attention"))) {
        llm_err_set(err, WGLLM_ERR_FORMAT, "config.json: layer_types[%u] is not sliding_attention or full_attention",
                    l);
        goto fail;
      }
      (*local)[l] = !strcmp(e->valuestring, "sliding_attention");
    }
    return WGLLM_OK;
  }
  if (cJSON_GetObjectItemCaseSensitive(cfg, "sliding_window_pattern") &&
      (!json_u32(cfg, "sliding_window_pattern", &pattern) || pattern == 0)) {
    llm_err_set(err, WGLLM_ERR_FORMAT, "config.json: sliding_window_pattern must be a positive integer");
    goto fail;
  }
  for (uint32_t l = 0; l < n_layer; l++)
    (*local)[l] = (l + 1) % pattern != 0;
  return WGLLM_OK;
fail:
  free(*local);
  *local = NULL;
  return WGLLM_ERR_FORMAT;
}

static wgllm_status hf_hparams(const cJSON *cfg, llm_hparams *hp, llm_err *err) {
  const cJSON *mt = cJSON_GetObjectItemCaseSensitive(cfg, "model_type");
  if (!cJSON_IsString(mt)) {
    return llm_err_set(err, WGLLM_ERR_FORMAT, "config.json: no model_type");
  }
  const char *t = mt->valuestring;
  const cJSON *text = cJSON_GetObjectItemCaseSensitive(cfg, "text_config");
  if ((!strcmp(t, "gemma3") || !strcmp(t, "gemma4")) && cJSON_IsObject(text)) {
    /* a multimodal checkpoint: the text decoder's config nests, its tensors are under model.language_model.
       (the vision and audio towers beside it are not read) */
    cJSON *inner = cJSON_Duplicate(text, 1);
    if (!inner) return WGLLM_ERR_OUT_OF_MEMORY;
    char mtype[32];
    snprintf(mtype, sizeof mtype, "%s_text", t);
    if (!cJSON_GetObjectItemCaseSensitive(inner, "model_type")) cJSON_AddStringToObject(inner, "model_type", mtype);
    const cJSON *tie = cJSON_GetObjectItemCaseSensitive(cfg, "tie_word_embeddings");
    if (tie && !cJSON_GetObjectItemCaseSensitive(inner, "tie_word_embeddings"))
      cJSON_AddItemToObject(inner, "tie_word_embeddings", cJSON_Duplicate(tie, 0));
    wgllm_status s = hf_hparams(inner, hp, err);
    cJSON_Delete(inner);
    snprintf(hp->hf_prefix, sizeof hp->hf_prefix, "model.language_model.");
    return s;
  }
  const llm_family *fam = llm_family_from_hf(t);
  if (!fam) {
    char names[256];
    return llm_err_set(err, WGLLM_ERR_UNSUPPORTED, "config.json: architecture \"%s\" is not supported (%s)", t,
                       llm_family_names(0, names, sizeof names));
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
    return llm_err_set(err, WGLLM_ERR_FORMAT, "config.json: missing or invalid \"%s\"", missing);
  }
  /* optional fields: absent or null gets the default, any other value must be valid (a "head_dim": -1 or 2.5 or
     "64" was taken for absent) */
  wgllm_status s = WGLLM_OK;
  hp->n_head_kv = hp->n_head;
  if ((s = json_opt_u32(cfg, "num_key_value_heads", &hp->n_head_kv, err))) return s;
  if (!hp->n_head || !hp->n_head_kv || hp->n_head % hp->n_head_kv) {
    return llm_err_set(err, WGLLM_ERR_FORMAT, "config.json: %u attention heads not a multiple of %u KV heads",
                       hp->n_head, hp->n_head_kv);
  }
  hp->head_dim = hp->n_embd / hp->n_head;
  if ((s = json_opt_u32(cfg, "head_dim", &hp->head_dim, err))) return s;
  if (hp->n_layer > LLM_MAX_LAYERS) {
    return llm_err_set(err, WGLLM_ERR_FORMAT, "config.json: %u layers", hp->n_layer);
  }
  double qs = 0, eps = 1e-6;
  if ((s = json_opt_num(cfg, "query_pre_attn_scalar", &qs, err)) || (s = json_opt_num(cfg, "rms_norm_eps", &eps, err)))
    return s;
  if (qs < 0 || (qs > 0 && qs < 1e-30)) { /* 0 leaves the default, as before; tiny values gave an infinite scale */
    return llm_err_set(err, WGLLM_ERR_FORMAT, "config.json: query_pre_attn_scalar %g (must be positive)", qs);
  }
  if (!(eps > 0 && eps < 1)) { /* a negative epsilon took the root of negative numbers, 0 divides by 0 on zeros */
    return llm_err_set(err, WGLLM_ERR_FORMAT, "config.json: rms_norm_eps %g (must be above 0 and below 1)", eps);
  }
  hp->attn_scale = 1.0f / sqrtf((float)hp->head_dim);
  if (qs > 0) hp->attn_scale = (float)(1.0 / sqrt(qs));
  hp->norm_eps = (float)eps;
  int tied = fam->tied_by_default, attn_bias = 0, mlp_bias = 0, use_sw = -1;
  if ((s = json_opt_bool(cfg, "tie_word_embeddings", &tied, err)) ||
      (s = json_opt_bool(cfg, "attention_bias", &attn_bias, err)) ||
      (s = json_opt_bool(cfg, "mlp_bias", &mlp_bias, err)) ||
      (s = json_opt_bool(cfg, "use_sliding_window", &use_sw, err)))
    return s;
  hp->tied_embeddings = tied;
  hp->qkv_bias = fam->qkv_bias || attn_bias;
  hp->qk_norm = fam->qk_norm;
  hp->fused_proj = fam->fused_proj;
  hp->embed_scale = 1.0f;
  hp->act = OP_ACT_SILU;
  const cJSON *act = cJSON_GetObjectItemCaseSensitive(cfg, "hidden_act");
  if (!cJSON_IsString(act)) act = cJSON_GetObjectItemCaseSensitive(cfg, "hidden_activation");
  if (cJSON_IsString(act)) {
    if (!strcmp(act->valuestring, "gelu_pytorch_tanh"))
      hp->act = OP_ACT_GELU_TANH;
    else if (strcmp(act->valuestring, "silu")) {
      return llm_err_set(err, WGLLM_ERR_UNSUPPORTED,
                         "config.json: activation \"%s\" is not supported (silu, gelu_pytorch_tanh)", act->valuestring);
    }
  }
  if (!cJSON_IsString(act)) hp->act = fam->default_act;
  if (fam->read_hf) return fam->read_hf(cfg, hp, err);
  if (mlp_bias) {
    return llm_err_set(err, WGLLM_ERR_UNSUPPORTED,
                       "config.json: mlp_bias true (biases on the MLP projections) is not supported");
  }
  uint8_t *local = NULL; /* [n_layer] sliding-window layers */
  uint32_t window = 0;
  hp->train_ctx = 4096;
  if ((s = json_opt_u32(cfg, "sliding_window", &window, err)) ||
      (s = json_opt_u32(cfg, "max_position_embeddings", &hp->train_ctx, err)))
    return s;
  if (hp->train_ctx == 0) {
    return llm_err_set(err, WGLLM_ERR_FORMAT, "config.json: max_position_embeddings is 0");
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
      return llm_err_set(err, WGLLM_ERR_UNSUPPORTED, "config.json: %s is not supported for Gemma 3 yet", capped);
    }
    hp->window = window;
    if (hp->window) s = llm_json_layer_types(cfg, hp->n_layer, 6, &local, err);
  } else if (fam->window_pattern) { /* gpt-oss: layer_types, by default sliding and full alternating */
    hp->window = window;
    if (hp->window) s = llm_json_layer_types(cfg, hp->n_layer, fam->window_pattern, &local, err);
  } else {
    /* Qwen2/3 name a sliding_window they apply only with use_sliding_window (and then below max_window_layers);
       Mistral v0.1 applies its sliding_window to every layer, as Gemma's local layers do */
    if (use_sw == 1) {
      return llm_err_set(err, WGLLM_ERR_UNSUPPORTED,
                         "config.json: use_sliding_window true (Qwen's per-layer windows) is not supported");
    }
    if (use_sw == -1 && window) {
      hp->window = window;
      local = malloc(hp->n_layer + 1u);
      if (!local) return WGLLM_ERR_OUT_OF_MEMORY;
      memset(local, 1, hp->n_layer);
    }
  }
  if (!s) s = json_bos_eos(cfg, &hp->bos, &hp->eos, err);
  if (!s) s = hf_rope(cfg, hp, fam->gemma && local, err);
  if (!s) s = llm_hparams_layers_init(hp, err);
  for (uint32_t l = 0; !s && local && l < hp->n_layer; l++) {
    hp->lay[l].window = local[l] ? hp->window : 0;
    hp->lay[l].rope_local = local[l] && hp->inv_freq_local;
  }
  free(local);
  if (!s && fam->moe) s = llm_moe_hparams(cfg, hp, err);
  return s;
}

static int gguf_u32(const wt_store *st, const char *arch, const char *key, uint32_t *out) {
  char k[128];
  snprintf(k, sizeof k, "%s.%s", arch, key);
  uint64_t v;
  if (!gguf_get_u64(st, k, &v) || v > 0xffffffffu) return 0;
  *out = (uint32_t)v;
  return 1;
}

/* Optional GGUF scalars: absent leaves *out (the default) and is WGLLM_OK; present, the value must be an integer
   from 0 to 2^32-1 (gguf_opt_u32) or a finite number (gguf_opt_f64), else WGLLM_ERR_FORMAT naming the key (a
   "head_count_kv" written as a string or as -1 was taken for absent). key is the full key. */
static wgllm_status gguf_opt_u32(const wt_store *st, const char *key, uint32_t *out, llm_err *err) {
  int t = gguf_key_type(st, key);
  if (t < 0) return WGLLM_OK;
  uint64_t v;
  if (t != GGUF_TYPE_BOOL && gguf_get_u64(st, key, &v) && v <= 0xffffffffu) {
    *out = (uint32_t)v;
    return WGLLM_OK;
  }
  return llm_err_set(err, WGLLM_ERR_FORMAT, "GGUF: %s (GGUF type %d) is not an integer from 0 to 4294967295", key, t);
}
static wgllm_status gguf_opt_f64(const wt_store *st, const char *key, double *out, llm_err *err) {
  int t = gguf_key_type(st, key);
  if (t < 0) return WGLLM_OK;
  double v;
  if (t != GGUF_TYPE_BOOL && gguf_get_f64(st, key, &v) && isfinite(v)) {
    *out = v;
    return WGLLM_OK;
  }
  return llm_err_set(err, WGLLM_ERR_FORMAT, "GGUF: %s (GGUF type %d) is not a finite number", key, t);
}
/* ARCH.KEY through gguf_opt_u32 */
static wgllm_status gguf_opt_arch_u32(const wt_store *st, const char *arch, const char *key, uint32_t *out,
                                      llm_err *err) {
  char k[128];
  snprintf(k, sizeof k, "%s.%s", arch, key);
  return gguf_opt_u32(st, k, out, err);
}

/* Gemma 3 as llama.cpp's converter writes it: norm weights stored as 1 + w (so plain RMSNorm), NeoX RoPE, every
   6th layer global unless the file gives another pattern, local layers at RoPE base 10000 without scaling, the
   query scale of llama.cpp (1/sqrt(head_dim); the 62-layer 27B model: 1/sqrt(hidden / heads)). */
static wgllm_status gguf_gemma3(const wt_store *st, const char *a, llm_hparams *hp, llm_err *err) {
  char k[128];
  hp->norm_offset = 0.0f;
  hp->embed_scale = sqrtf((float)hp->n_embd);
  hp->sandwich_norms = 1;
  hp->act = OP_ACT_GELU_TANH;
  if (hp->n_layer == 62) hp->attn_scale = 1.0f / sqrtf((float)(hp->n_embd / hp->n_head));
  uint32_t pattern = 6;
  wgllm_status s = gguf_opt_arch_u32(st, a, "attention.sliding_window_pattern", &pattern, err);
  if (s) return s;
  if (pattern == 0) {
    return llm_err_set(err, WGLLM_ERR_FORMAT, "GGUF: %s.attention.sliding_window_pattern is 0", a);
  }
  snprintf(k, sizeof k, "%s.attention.sliding_window", a);
  if (!gguf_u32(st, a, "attention.sliding_window", &hp->window) || !hp->window) {
    return llm_err_set(err, WGLLM_ERR_FORMAT, "GGUF: missing %s", k);
  }
  hp->inv_freq_local = default_inv_freq(10000.0, hp->rot_dim);
  if (!hp->inv_freq_local) return WGLLM_ERR_OUT_OF_MEMORY;
  hp->rot_dim_local = hp->rot_dim;
  for (uint32_t l = 0; l < hp->n_layer; l++)
    if ((l + 1) % pattern) {
      hp->lay[l].window = hp->window;
      hp->lay[l].rope_local = 1;
    }
  size_t n = strlen(hp->rope_desc);
  snprintf(hp->rope_desc + n, sizeof hp->rope_desc - n, "; local: theta 10000");
  return WGLLM_OK;
}

/* YaRN from llama.cpp's keys: rope.scaling.factor and .original_context_length, .yarn_beta_fast / _slow (32 / 1
   when absent), .yarn_attn_factor (1) times get_mscale(factor) on cos and sin, as llama.cpp's rope_yarn; its
   .yarn_ext_factor other than 1 and a .yarn_log_multiplier (DeepSeek's) change the math and are refused. The
   correction range is floored / ceiled as llama.cpp does, except for gpt-oss, whose reference implementation and
   transformers' GptOssConfig (truncate false) keep it exact. */
static wgllm_status gguf_yarn(const wt_store *st, const char *a, const llm_family *fam, double theta, llm_hparams *hp,
                              llm_err *err) {
  char k[6][128];
  static const char *const keys[6] = {"factor",         "original_context_length", "yarn_beta_fast",
                                      "yarn_beta_slow", "yarn_attn_factor",        "yarn_ext_factor"};
  double v[6] = {NAN, NAN, 32, 1, 1, 1}, mul = 0;
  wgllm_status s;
  for (int i = 0; i < 6; i++) {
    snprintf(k[i], sizeof k[i], "%s.rope.scaling.%s", a, keys[i]);
    if ((s = gguf_opt_f64(st, k[i], &v[i], err))) return s;
  }
  char km[128];
  snprintf(km, sizeof km, "%s.rope.scaling.yarn_log_multiplier", a);
  if ((s = gguf_opt_f64(st, km, &mul, err))) return s;
  if (mul != 0)
    return llm_err_set(err, WGLLM_ERR_UNSUPPORTED, "GGUF: %s %g (DeepSeek's YaRN magnitude scaling) is not supported",
                       km, mul);
  if (v[5] != 1)
    return llm_err_set(err, WGLLM_ERR_UNSUPPORTED, "GGUF: %s %g is not supported (1: YaRN as defined)", k[5], v[5]);
  if (!(v[0] > 0) || !isfinite(v[0]) || !(v[1] >= 1) || !isfinite(v[1]))
    return llm_err_set(err, WGLLM_ERR_FORMAT, "GGUF: yarn rope scaling needs %s and %s (finite and positive)", k[0],
                       k[1]);
  return llm_yarn(hp, theta, v[0], v[1], v[2], v[3], fam->arch != LLM_ARCH_GPT_OSS, v[4] * llm_yarn_mscale(v[0], 1.0),
                  "GGUF", err);
}

/* A per-pair RoPE factor tensor (F32 [rot_dim/2], every value finite and positive): inv[i] = base[i] / factor[i] */
static wgllm_status gguf_rope_factors(const wt_tensor *t, const llm_hparams *hp, const float *base, float *inv,
                                      llm_err *err) {
  if (t->dtype != WT_F32 || wt_numel(t) != hp->rot_dim / 2) {
    return llm_err_set(err, WGLLM_ERR_FORMAT, "GGUF: %s must be F32 [%u] (is %s with %lld elements)", t->name,
                       hp->rot_dim / 2, wt_dtype_name(t->dtype), (long long)wt_numel(t));
  }
  void *tmp = NULL;
  const char *d = wt_tensor_bytes(t, &tmp, err);
  if (!d) return WGLLM_ERR_IO;
  wgllm_status s = WGLLM_OK;
  for (uint32_t i = 0; !s && i < hp->rot_dim / 2; i++) {
    float f;
    memcpy(&f, d + 4 * i, 4);
    if (!(f > 0) || !isfinite(f))
      s = llm_err_set(err, WGLLM_ERR_FORMAT, "GGUF: %s[%u] = %g is not a finite positive number", t->name, i, f);
    else
      inv[i] = base[i] / f;
  }
  free(tmp);
  return s;
}

/* Phi-3 as llama.cpp's converter writes it (phi3): longrope as the tensors rope_factors_short / rope_factors_long
   with rope.scaling.original_context_length and rope.scaling.attn_factor, and attention.sliding_window on every
   layer; Q/K/V fused in attn_qkv and gate/up in ffn_up (the roles' fused rows), NeoX RoPE. */
static wgllm_status gguf_phi3(const wt_store *st, const char *a, llm_hparams *hp, llm_err *err) {
  const wt_tensor *sf = wt_find(st, "rope_factors_short.weight"), *lf = wt_find(st, "rope_factors_long.weight");
  wgllm_status s = WGLLM_OK;
  char k[128];
  if (!sf != !lf)
    return llm_err_set(err, WGLLM_ERR_FORMAT, "GGUF: one of rope_factors_short / _long without the other");
  if (sf) {
    float *base = hp->inv_freq;
    hp->inv_freq = malloc(hp->rot_dim / 2 * sizeof *hp->inv_freq);
    hp->inv_freq_long = malloc(hp->rot_dim / 2 * sizeof *hp->inv_freq_long);
    if (!hp->inv_freq || !hp->inv_freq_long) s = WGLLM_ERR_OUT_OF_MEMORY;
    if (!s) s = gguf_rope_factors(sf, hp, base, hp->inv_freq, err);
    if (!s) s = gguf_rope_factors(lf, hp, base, hp->inv_freq_long, err);
    free(base);
    if (s) return s;
    snprintf(k, sizeof k, "%s.rope.scaling.original_context_length", a);
    if (!gguf_u32(st, a, "rope.scaling.original_context_length", &hp->rope_orig_ctx) || !hp->rope_orig_ctx)
      return llm_err_set(err, WGLLM_ERR_FORMAT, "GGUF: longrope factors need %s", k);
    double attn = 1.0;
    snprintf(k, sizeof k, "%s.rope.scaling.attn_factor", a);
    if ((s = gguf_opt_f64(st, k, &attn, err))) return s;
    if (!(attn > 0) || !isfinite(attn))
      return llm_err_set(err, WGLLM_ERR_FORMAT, "GGUF: %s = %g (positive and finite)", k, attn);
    hp->rope_attn_factor = (float)attn;
    size_t n = strlen(hp->rope_desc);
    snprintf(hp->rope_desc + n, sizeof hp->rope_desc - n, ", longrope: long past %u tokens, attention factor %g",
             hp->rope_orig_ctx, attn);
  }
  uint32_t window = 0;
  if (gguf_u32(st, a, "attention.sliding_window", &window) && window) {
    hp->window = window;
    for (uint32_t l = 0; l < hp->n_layer; l++)
      hp->lay[l].window = window;
  }
  return WGLLM_OK;
}

static wgllm_status gguf_hparams(const wt_store *st, llm_hparams *hp, llm_err *err) {
  const char *a = gguf_get_str(st, "general.architecture");
  if (!a) {
    return llm_err_set(err, WGLLM_ERR_FORMAT, "GGUF: no general.architecture");
  }
  const llm_family *fam = llm_family_from_gguf(a);
  if (!fam) {
    char names[256];
    return llm_err_set(err, WGLLM_ERR_UNSUPPORTED, "GGUF: architecture \"%s\" is not supported (%s)", a,
                       llm_family_names(1, names, sizeof names));
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
  else if (!fam->read_gguf && !gguf_u32(st, a, "feed_forward_length", &hp->n_ff) && !fam->moe)
    missing = "feed_forward_length"; /* a family reader's (Gemma 4's may be per layer); a MoE file's every layer is
                                        sparse (config_moe.c gives its width) */
  if (missing) {
    return llm_err_set(err, WGLLM_ERR_FORMAT, "GGUF: missing or invalid %s.%s", a, missing);
  }
  if (hp->n_layer == 0 || hp->n_layer > LLM_MAX_LAYERS) {
    return llm_err_set(err, WGLLM_ERR_UNSUPPORTED, "GGUF: %s.block_count %u (1 to %u supported)", a, hp->n_layer,
                       LLM_MAX_LAYERS);
  }
  const wt_tensor *emb = wt_find(st, "token_embd.weight");
  if (!emb || emb->n_dims != 2) {
    return llm_err_set(err, WGLLM_ERR_FORMAT, "GGUF: missing tensor token_embd.weight");
  }
  hp->n_vocab = (uint32_t)emb->shape[0];
  char k[128];
  double eps = 1e-5, theta = 10000.0;
  snprintf(k, sizeof k, "%s.attention.layer_norm_rms_epsilon", a);
  wgllm_status s = gguf_opt_f64(st, k, &eps, err);
  if (s) return s;
  if (!(eps > 0 && eps < 1)) {
    return llm_err_set(err, WGLLM_ERR_FORMAT, "GGUF: %s = %g (a positive number below 1)", k, eps);
  }
  hp->norm_eps = (float)eps;
  hp->train_ctx = 4096;
  if ((s = gguf_opt_arch_u32(st, a, "context_length", &hp->train_ctx, err))) return s;
  if (hp->train_ctx == 0) {
    return llm_err_set(err, WGLLM_ERR_FORMAT, "GGUF: %s.context_length is 0", a);
  }
  hp->tied_embeddings = wt_find(st, "output.weight") == NULL;
  uint64_t v;
  static const char *const ids[2] = {"tokenizer.ggml.bos_token_id", "tokenizer.ggml.eos_token_id"};
  int32_t *dst[2] = {&hp->bos, &hp->eos};
  for (int i = 0; i < 2; i++) {
    *dst[i] = -1;
    if (gguf_key_type(st, ids[i]) < 0) continue;
    if (gguf_key_type(st, ids[i]) == GGUF_TYPE_BOOL || !gguf_get_u64(st, ids[i], &v)) {
      return llm_err_set(err, WGLLM_ERR_FORMAT, "GGUF: %s (GGUF type %d) is not a token id", ids[i],
                         gguf_key_type(st, ids[i]));
    }
    if (v >= hp->n_vocab) {
      return llm_err_set(err, WGLLM_ERR_FORMAT, "GGUF: %s %llu is outside the %u-token vocabulary", ids[i],
                         (unsigned long long)v, hp->n_vocab);
    }
    *dst[i] = (int32_t)v;
  }
  if (fam->read_gguf) return fam->read_gguf(st, a, hp, err);
  hp->n_head_kv = hp->n_head;
  if ((s = gguf_opt_arch_u32(st, a, "attention.head_count_kv", &hp->n_head_kv, err))) return s;
  if (!hp->n_head || !hp->n_head_kv || hp->n_head % hp->n_head_kv) {
    return llm_err_set(err, WGLLM_ERR_FORMAT, "GGUF: %u attention heads not a multiple of %u KV heads", hp->n_head,
                       hp->n_head_kv);
  }
  hp->head_dim = hp->n_embd / hp->n_head;
  if ((s = gguf_opt_arch_u32(st, a, "attention.key_length", &hp->head_dim, err))) return s;
  snprintf(k, sizeof k, "%s.rope.freq_base", a);
  if ((s = gguf_opt_f64(st, k, &theta, err))) return s;
  if (!(theta > 1)) {
    return llm_err_set(err, WGLLM_ERR_FORMAT, "GGUF: %s = %g (must be over 1)", k, theta);
  }
  hp->rot_dim = hp->head_dim;
  if ((s = gguf_opt_arch_u32(st, a, "rope.dimension_count", &hp->rot_dim, err))) return s;
  hp->qkv_bias = wt_find(st, "blk.0.attn_q.bias") != NULL;
  hp->qk_norm = fam->qk_norm;
  hp->fused_proj = fam->fused_proj;
  hp->embed_scale = 1.0f;
  hp->act = OP_ACT_SILU;
  hp->attn_scale = 1.0f / sqrtf((float)hp->head_dim);
  /* llama.cpp permutes Llama's q/k rows for adjacent-pair RoPE; Qwen keeps the NeoX (half-split) layout */
  hp->rope_mode = fam->gguf_rope_adjacent ? OP_ROPE_ADJACENT : OP_ROPE_HALF;
  if (hp->head_dim == 0 || hp->head_dim > 512) { /* before anything is sized from it */
    return llm_err_set(err, WGLLM_ERR_UNSUPPORTED,
                       "GGUF: head_dim %u (1 to 512 supported: the attention kernels' limit)", hp->head_dim);
  }
  if (hp->rot_dim == 0 || hp->rot_dim > hp->head_dim || hp->rot_dim % 2) {
    return llm_err_set(err, WGLLM_ERR_FORMAT, "GGUF: rope.dimension_count %u invalid for head_dim %u", hp->rot_dim,
                       hp->head_dim);
  }
  hp->inv_freq = default_inv_freq(theta, hp->rot_dim);
  if (!hp->inv_freq) return WGLLM_ERR_OUT_OF_MEMORY;
  snprintf(hp->rope_desc, sizeof hp->rope_desc, "theta %g", theta);
  const wt_tensor *rf = wt_find(st, "rope_freqs.weight");
  if (rf) { /* per-pair frequency factors (llama3 scaling as llama.cpp stores it) */
    if ((s = gguf_rope_factors(rf, hp, hp->inv_freq, hp->inv_freq, err))) return s;
    strncat(hp->rope_desc, ", rope_freqs factors", sizeof hp->rope_desc - strlen(hp->rope_desc) - 1);
  }
  /* rope.scaling as llama.cpp's converter writes it: linear divides every frequency (of the global layers only in
     Gemma 3), yarn as gguf_yarn reads it; any other type changes the math in ways not implemented */
  snprintf(k, sizeof k, "%s.rope.scaling.type", a);
  const char *sc_type = gguf_get_str(st, k);
  if (sc_type && strcmp(sc_type, "none") && strcmp(sc_type, "linear") && strcmp(sc_type, "yarn")) {
    return llm_err_set(err, WGLLM_ERR_UNSUPPORTED, "GGUF: %s \"%s\" is not supported (none, linear, yarn)", k, sc_type);
  }
  if (sc_type && !strcmp(sc_type, "yarn") && (s = gguf_yarn(st, a, fam, theta, hp, err))) return s;
  double factor = 1.0;
  snprintf(k, sizeof k, "%s.rope.scaling.factor", a);
  if (sc_type && !strcmp(sc_type, "linear")) {
    if (!gguf_get_f64(st, k, &factor) || !(factor > 0) || !isfinite(factor)) {
      return llm_err_set(err, WGLLM_ERR_FORMAT, "GGUF: %s must be a finite positive number with linear rope scaling",
                         k);
    }
    for (uint32_t i = 0; i < hp->rot_dim / 2; i++)
      hp->inv_freq[i] = (float)(hp->inv_freq[i] / factor);
    size_t n = strlen(hp->rope_desc);
    snprintf(hp->rope_desc + n, sizeof hp->rope_desc - n, ", linear factor %g", factor);
  }
  if ((s = llm_rope_table_check(hp->inv_freq, hp->rot_dim / 2, "GGUF: the RoPE parameters", err))) return s;
  s = llm_hparams_layers_init(hp, err);
  if (!s && fam->gemma) s = gguf_gemma3(st, a, hp, err);
  if (!s && fam->arch == LLM_ARCH_PHI3) s = gguf_phi3(st, a, hp, err);
  if (!s && fam->window_pattern) { /* gpt-oss: llama.cpp's sliding-window pattern, every other layer */
    uint32_t window = 0;
    if (!gguf_u32(st, a, "attention.sliding_window", &window) || !window) {
      snprintf(k, sizeof k, "%s.attention.sliding_window", a);
      return llm_err_set(err, WGLLM_ERR_FORMAT, "GGUF: missing %s", k);
    }
    hp->window = window;
    for (uint32_t l = 0; l < hp->n_layer; l++)
      hp->lay[l].window = (l + 1) % fam->window_pattern ? window : 0;
  }
  /* llama.cpp writes Mixtral as a llama GGUF with an expert count */
  uint32_t experts = 0;
  if (!s && (fam->moe || (fam->arch == LLM_ARCH_LLAMA && gguf_u32(st, a, "expert_count", &experts) && experts)))
    s = llm_moe_gguf_hparams(st, a, hp, err);
  if (!s && fam->oai) s = llm_gpt_oss_hparams(NULL, hp, err);
  return s;
}

/* What every family's hyperparameters must give before anything is sized from them; each layer's head_dim too
   (a Gemma 4 config with "head_dim": 0 gave its sliding layers head_dim 0 past the scalar check). */
static wgllm_status hparams_usable(const llm_hparams *hp, llm_err *err) {
  if (!hp->n_vocab || !hp->n_embd || !hp->n_layer || !hp->head_dim || !hp->n_ff) {
    return llm_err_set(err, WGLLM_ERR_FORMAT,
                       "hyperparameters incomplete (vocab %u, hidden %u, layers %u, head_dim %u, ffn %u)", hp->n_vocab,
                       hp->n_embd, hp->n_layer, hp->head_dim, hp->n_ff);
  }
  if (hp->head_dim > 512) {
    return llm_err_set(err, WGLLM_ERR_UNSUPPORTED, "head_dim %u is over the attention kernel's 512", hp->head_dim);
  }
  for (uint32_t l = 0; l < hp->n_layer; l++) {
    uint32_t hd = llm_layer_head_dim(hp, l);
    if (hd == 0 || hd > 512) {
      llm_err_set(err, WGLLM_ERR_FORMAT, "layer %u: head_dim %u (1 to 512 supported: the attention kernels' limit)", l,
                  hd);
      return hd ? WGLLM_ERR_UNSUPPORTED : WGLLM_ERR_FORMAT;
    }
  }
  return WGLLM_OK;
}

wgllm_status llm_hparams_from_json(const cJSON *cfg, llm_hparams *hp, llm_err *err) {
  memset(hp, 0, sizeof *hp);
  wgllm_status s = hf_hparams(cfg, hp, err);
  if (!s) s = hparams_usable(hp, err);
  if (s) llm_hparams_free(hp);
  return s;
}

wgllm_status llm_read_hparams(const wt_store *st, llm_hparams *hp, llm_err *err) {
  memset(hp, 0, sizeof *hp);
  wgllm_status s;
  if (wt_store_format(st) == WT_FORMAT_GGUF)
    s = gguf_hparams(st, hp, err);
  else {
    const cJSON *cfg = wt_config(st);
    if (!cfg) {
      return llm_err_set(err, WGLLM_ERR_FORMAT, "no config.json");
    }
    s = hf_hparams(cfg, hp, err);
    /* a base model saved alone (Qwen3-Embedding: Qwen3Model's weights): names without "model.", and where untied no
       LM head (such a model embeds; generating with it fails naming the missing head) */
    if (!s && !hp->hf_prefix[0] && !wt_find(st, "model.embed_tokens.weight") && wt_find(st, "embed_tokens.weight"))
      hp->hf_bare = 1;
    if (!s && !hp->tied_embeddings && !wt_find(st, "lm_head.weight") && hp->hf_bare) hp->no_lm_head = 1;
    /* the experts as transformers 5 saves them (3-D, gate and up fused) when the first sparse layer has them so;
       gpt-oss's 3-D or MXFP4 blocks (llm_moe_hf_form) */
    for (uint32_t l = 0; !s && !hp->moe_dense_too && l < hp->n_layer; l++)
      if (llm_layer_is_moe(hp, l)) {
        char name[160];
        const char *pre = hp->hf_bare ? "" : hp->hf_prefix[0] ? hp->hf_prefix : "model.";
        snprintf(name, sizeof name, "%slayers.%u.mlp.experts.gate_up_proj", pre, l);
        int fused = wt_find(st, name) != NULL;
        snprintf(name, sizeof name, "%slayers.%u.mlp.experts.gate_up_proj_blocks", pre, l);
        if (hp->arch == LLM_ARCH_GPT_OSS)
          hp->moe_hf_form = wt_find(st, name) ? LLM_MOE_HF_OAI_MXFP4 : LLM_MOE_HF_OAI;
        else
          hp->moe_hf_form = fused ? LLM_MOE_HF_3D : LLM_MOE_HF_EACH;
        break;
      }
  }
  if (!s) s = hparams_usable(hp, err);
  if (!s) s = llm_check_shapes(st, hp, err);
  if (s) llm_hparams_free(hp);
  return s;
}
