/* Uploads a model's weights to the GPU in the kernels' layouts: f32/f16 as they are, bf16 widened to f32,
   GGUF Q4_0 repacked to q4gsw g32 and Q8_0 to the q8 layout (no requantization), and with the q4 policy
   every f32/f16/bf16 linear weight quantized to q4gsw on load. On any failure nothing stays allocated. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "model.h"
#include "weight_convert.h"

const char *llm_tensor_name(int gguf, const char *role, int layer, char *buf, size_t len);

typedef struct loader {
  llm_model *m;
  const wt_store *st;
  int gguf;
  char *err;
  size_t errlen;
} loader;

static wgllm_status upload(loader *L, const void *data, uint64_t bytes, const char *label, gpu_view *out) {
  llm_model *m = L->m;
  if (m->n_owned == m->cap_owned) {
    size_t nc = m->cap_owned ? m->cap_owned * 2 : 64;
    gpu_buffer **no = realloc(m->owned, nc * sizeof *no);
    if (!no) { snprintf(L->err, L->errlen, "out of host memory"); return WGLLM_ERR_OUT_OF_MEMORY; }
    m->owned = no;
    m->cap_owned = nc;
  }
  uint64_t padded = (bytes + 3) & ~(uint64_t)3;
  gpu_buffer *b;
  wgllm_status s = gpu_buffer_create(m->gpu, padded, label, &b, L->err, L->errlen);
  if (s) return s;
  m->owned[m->n_owned++] = b;
  if (padded != bytes) { /* the GPU wants whole words */
    uint8_t *tmp = calloc(1, padded);
    if (!tmp) { snprintf(L->err, L->errlen, "out of host memory"); return WGLLM_ERR_OUT_OF_MEMORY; }
    memcpy(tmp, data, bytes);
    gpu_write(m->gpu, b, 0, tmp, padded);
    free(tmp);
  } else {
    gpu_write(m->gpu, b, 0, data, bytes);
  }
  m->weight_bytes += padded;
  *out = gpu_whole(b);
  return WGLLM_OK;
}

static const wt_tensor *find(loader *L, const char *role, int layer) {
  char nb[96];
  return wt_find(L->st, llm_tensor_name(L->gguf, role, layer, nb, sizeof nb));
}

/* Any float tensor as f32 on the GPU (norm weights, biases). */
static wgllm_status load_f32(loader *L, const wt_tensor *t, gpu_view *out) {
  int64_t n = wt_numel(t);
  float *f = malloc((size_t)n * sizeof *f);
  if (!f) { snprintf(L->err, L->errlen, "out of host memory for %s", t->name); return WGLLM_ERR_OUT_OF_MEMORY; }
  wgllm_status s = wc_tensor_to_f32(t, f, L->err, L->errlen);
  if (!s) s = upload(L, f, (uint64_t)n * 4, t->name, out);
  free(f);
  return s;
}

static wgllm_status load_vec(loader *L, const char *role, int layer, gpu_view *out) {
  const wt_tensor *t = find(L, role, layer);
  if (!t) { /* shapes were checked, so only optional tensors get here */
    memset(out, 0, sizeof *out);
    return WGLLM_OK;
  }
  return load_f32(L, t, out);
}

/* A [N][K] matrix in the storage the policy asks for. quantize: apply the q4 policy to float weights. */
static wgllm_status load_matrix(loader *L, const wt_tensor *t, int quantize, op_weight *w) {
  int64_t N = t->shape[0], K = t->shape[1];
  memset(w, 0, sizeof *w);
  wgllm_status s = WGLLM_OK;
  if (t->dtype == WT_Q4_0) {
    uint32_t *qs = malloc(q4gsw_qs_words(N, K) * 4);
    uint16_t *sc = malloc(q4gsw_scale_count(N, K, 32) * 2);
    if (!qs || !sc) s = WGLLM_ERR_OUT_OF_MEMORY;
    if (!s) s = q4gsw_from_q4_0(t->data, N, K, qs, sc, L->err, L->errlen);
    if (!s) s = upload(L, qs, q4gsw_qs_words(N, K) * 4, t->name, &w->data);
    if (!s) s = upload(L, sc, q4gsw_scale_count(N, K, 32) * 2, t->name, &w->scales);
    free(qs);
    free(sc);
    w->type = OP_W_Q4;
    w->group = 32;
    return s;
  }
  if (t->dtype == WT_Q8_0) { /* split 34-byte blocks into int8 values and f16 scales */
    size_t nb = (size_t)(N * K / 32);
    int8_t *q = malloc((size_t)(N * K));
    uint16_t *sc = malloc(nb * 2);
    if (!q || !sc) { free(q); free(sc); snprintf(L->err, L->errlen, "out of host memory for %s", t->name); return WGLLM_ERR_OUT_OF_MEMORY; }
    const uint8_t *src = t->data;
    for (size_t b = 0; b < nb; b++) {
      memcpy(&sc[b], src + 34 * b, 2);
      memcpy(q + 32 * b, src + 34 * b + 2, 32);
    }
    s = upload(L, q, (uint64_t)(N * K), t->name, &w->data);
    if (!s) s = upload(L, sc, nb * 2, t->name, &w->scales);
    free(q);
    free(sc);
    w->type = OP_W_Q8;
    w->group = 32;
    return s;
  }
  if (quantize) { /* q4 policy: quantize = the group size */
    uint32_t G = (uint32_t)quantize;
    if (K % G) {
      snprintf(L->err, L->errlen, "tensor %s: K=%lld is not a multiple of the q4gsw group %u", t->name, (long long)K, G);
      return WGLLM_ERR_UNSUPPORTED;
    }
    float *f = malloc((size_t)(N * K) * sizeof *f);
    uint32_t *qs = malloc(q4gsw_qs_words(N, K) * 4);
    uint16_t *sc = malloc(q4gsw_scale_count(N, K, (int)G) * 2);
    if (!f || !qs || !sc) s = WGLLM_ERR_OUT_OF_MEMORY;
    if (!s) s = wc_tensor_to_f32(t, f, L->err, L->errlen);
    if (!s) s = q4gsw_quantize_f32(f, N, K, (int)G, qs, sc, L->err, L->errlen);
    if (!s) s = upload(L, qs, q4gsw_qs_words(N, K) * 4, t->name, &w->data);
    if (!s) s = upload(L, sc, q4gsw_scale_count(N, K, (int)G) * 2, t->name, &w->scales);
    if (s == WGLLM_ERR_OUT_OF_MEMORY && !L->err[0]) snprintf(L->err, L->errlen, "out of host memory for %s", t->name);
    free(f);
    free(qs);
    free(sc);
    w->type = OP_W_Q4;
    w->group = G;
    return s;
  }
  if (t->dtype == WT_F16) { /* f16 stays f16: the kernels read packed pairs */
    w->type = OP_W_F16;
    return upload(L, t->data, t->nbytes, t->name, &w->data);
  }
  if (t->dtype == WT_F32) {
    w->type = OP_W_F32;
    return upload(L, t->data, t->nbytes, t->name, &w->data);
  }
  /* bf16: widened to f32, exact */
  w->type = OP_W_F32;
  gpu_view v;
  s = load_f32(L, t, &v);
  w->data = v;
  return s;
}

static wgllm_status load_linear(loader *L, const char *role, int layer, int quantize, op_weight *w) {
  const wt_tensor *t = find(L, role, layer);
  char nb[96];
  if (!t) {
    snprintf(L->err, L->errlen, "missing tensor %s", llm_tensor_name(L->gguf, role, layer, nb, sizeof nb));
    return WGLLM_ERR_FORMAT;
  }
  return load_matrix(L, t, quantize, w);
}

wgllm_status llm_parse_weight_policy(const char *s, llm_weight_policy *p, char *err, size_t errlen) {
  memset(p, 0, sizeof *p);
  if (!s || !strcmp(s, "native")) return WGLLM_OK;
  if (!strncmp(s, "q4", 2) && (s[2] == 0 || s[2] == ':')) {
    p->q4 = 1;
    p->group = 32;
    if (s[2] == ':') {
      char *end;
      long g = strtol(s + 3, &end, 10);
      if (*end || (g != 32 && g != 64 && g != 128)) {
        snprintf(err, errlen, "--weights %s: the q4 group must be 32, 64 or 128", s);
        return WGLLM_ERR_INVALID_ARG;
      }
      p->group = (uint32_t)g;
    }
    return WGLLM_OK;
  }
  snprintf(err, errlen, "--weights %s: expected native, q4 or q4:GROUP", s);
  return WGLLM_ERR_INVALID_ARG;
}

void llm_model_free(llm_model *m) {
  if (!m) return;
  for (size_t i = 0; i < m->n_owned; i++) gpu_buffer_destroy(m->gpu, m->owned[i]);
  free(m->owned);
  free(m->layers);
  llm_hparams_free(&m->hp);
  free(m);
}

wgllm_status llm_model_load(gpu_context *gpu, const char *path, const llm_load_options *opt, llm_model **out,
                            char *err, size_t errlen) {
  *out = NULL;
  err[0] = 0;
  llm_load_options o = {0};
  if (opt) o = *opt;
  wt_store *st = NULL;
  wgllm_status s = llm_open_store(path, &st, err, errlen);
  if (s) return s;
  llm_model *m = calloc(1, sizeof *m);
  if (!m) { wt_store_free(st); snprintf(err, errlen, "out of host memory"); return WGLLM_ERR_OUT_OF_MEMORY; }
  m->gpu = gpu;
  snprintf(m->source, sizeof m->source, "%s", path);
  s = llm_read_hparams(st, &m->hp, err, errlen);
  if (s) { wt_store_free(st); free(m); return s; }
  loader L = {m, st, wt_store_format(st) == WT_FORMAT_GGUF, err, errlen};
  const llm_hparams *hp = &m->hp;
  int qz = o.weights.q4 ? (int)o.weights.group : 0;
  if (o.weights.q4) snprintf(m->weights_desc, sizeof m->weights_desc, "q4gsw g%u", o.weights.group);
  else snprintf(m->weights_desc, sizeof m->weights_desc, "native");
  m->layers = calloc(hp->n_layer, sizeof *m->layers);
  if (!m->layers) { s = WGLLM_ERR_OUT_OF_MEMORY; snprintf(err, errlen, "out of host memory"); }
  /* the embedding table keeps its file storage (a gather reads one row a token) */
  if (!s) s = load_linear(&L, "embed", -1, 0, &m->tok_embd);
  if (!s) s = load_vec(&L, "norm", -1, &m->output_norm);
  if (!s) {
    if (hp->tied_embeddings) m->output = m->tok_embd;
    else s = load_linear(&L, "output", -1, qz, &m->output);
  }
  for (uint32_t l = 0; !s && l < hp->n_layer; l++) {
    llm_layer *ly = &m->layers[l];
    int li = (int)l;
    s = load_vec(&L, "attn_norm", li, &ly->attn_norm);
    if (!s) s = load_vec(&L, "ffn_norm", li, &ly->ffn_norm);
    if (!s) s = load_linear(&L, "wq", li, qz, &ly->wq);
    if (!s) s = load_linear(&L, "wk", li, qz, &ly->wk);
    if (!s) s = load_linear(&L, "wv", li, qz, &ly->wv);
    if (!s) s = load_linear(&L, "wo", li, qz, &ly->wo);
    if (!s) s = load_linear(&L, "gate", li, qz, &ly->w_gate);
    if (!s) s = load_linear(&L, "up", li, qz, &ly->w_up);
    if (!s) s = load_linear(&L, "down", li, qz, &ly->w_down);
    if (!s && hp->qkv_bias) {
      s = load_vec(&L, "bq", li, &ly->bq);
      if (!s) s = load_vec(&L, "bk", li, &ly->bk);
      if (!s) s = load_vec(&L, "bv", li, &ly->bv);
    }
    if (!s && hp->qk_norm) {
      s = load_vec(&L, "q_norm", li, &ly->q_norm);
      if (!s) s = load_vec(&L, "k_norm", li, &ly->k_norm);
    }
  }
  if (!s) s = gpu_wait_idle(gpu, err, errlen); /* surfaces any allocation or upload error now */
  wt_store_free(st);
  if (s) {
    if (!err[0]) snprintf(err, errlen, "loading %s failed (%s)", path, wgllm_status_name(s));
    llm_model_free(m);
    return s;
  }
  *out = m;
  return WGLLM_OK;
}
