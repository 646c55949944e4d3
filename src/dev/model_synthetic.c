/* Synthetic models (see model_synthetic.h). Every q4gsw tensor comes from one generator keyed by the tensor's
   index, so the GPU model and the GGUF file hold the same numbers. The Llama shapes list their tensors by hand
   (GGUF names, the file's order); the Gemma 4 shapes take theirs from the role table, so they have exactly the
   tensors a checkpoint of that config would. */
#include "model_synthetic.h"
#include "config_json.h"
#include "gguf_write.h"
#include "weight_convert.h"
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Gemma 4 text shapes as Gemma4TextConfig fields; their hyperparameters are what config_gemma4.c reads from a
   config.json of them (defaults elsewhere: RoPE plain on sliding layers, proportional on full ones, tied
   embeddings, no soft-capping, no double-wide MLP, attention_k_eq_v false). */
typedef struct gemma4_shape {
  const char *name;
  uint32_t vocab, embd, ff, layers, heads, kv_heads, head_dim, global_head_dim, window;
  uint32_t pattern; /* sliding_window_pattern: layer l is sliding iff (l + 1) % pattern != 0 (the last is full) */
  uint32_t ple, ple_vocab, n_shared;
} gemma4_shape;

static const gemma4_shape GEMMA4_SHAPES[] = {
    /* transformers' Gemma4TextConfig defaults, with 10 KV-shared layers */
    {"gemma4", 262144, 2304, 9216, 30, 8, 4, 256, 512, 512, 6, 256, 262144, 10},
    /* the same, every layer with its own K/V */
    {"gemma4-noshare", 262144, 2304, 9216, 30, 8, 4, 256, 512, 512, 6, 256, 262144, 0},
    /* small, for tests: layers s,s,f,s,s,f; layers 3 and 4 read layer 1's cache, layer 5 layer 2's */
    {"gemma4-tiny", 512, 128, 512, 6, 4, 2, 32, 64, 8, 3, 32, 512, 3},
};

static wgllm_status gemma4_hparams(const gemma4_shape *g, llm_hparams *hp, llm_err *err) {
  char js[1024];
  snprintf(js, sizeof js,
           "{\"model_type\": \"gemma4_text\", \"vocab_size\": %u, \"hidden_size\": %u, \"intermediate_size\": %u, "
           "\"num_hidden_layers\": %u, \"num_attention_heads\": %u, \"num_key_value_heads\": %u, \"head_dim\": %u, "
           "\"global_head_dim\": %u, \"sliding_window\": %u, \"sliding_window_pattern\": %u, "
           "\"hidden_size_per_layer_input\": %u, \"vocab_size_per_layer_input\": %u, \"num_kv_shared_layers\": %u, "
           "\"rms_norm_eps\": 1e-6, \"max_position_embeddings\": 131072, \"tie_word_embeddings\": true}",
           g->vocab, g->embd, g->ff, g->layers, g->heads, g->kv_heads, g->head_dim, g->global_head_dim, g->window,
           g->pattern, g->ple, g->ple_vocab, g->n_shared);
  cJSON *cfg = cJSON_Parse(js);
  if (!cfg) {
    return llm_err_set(err, WGLLM_ERR_OUT_OF_MEMORY, "out of host memory");
  }
  wgllm_status s = llm_hparams_from_json(cfg, hp, err);
  cJSON_Delete(cfg);
  return s;
}

/* Qwen3-MoE shapes as Qwen3MoeConfig fields (every layer sparse, the top k renormalised), read through
   config_moe.c as a config.json of them would be */
typedef struct qwen3_moe_shape {
  const char *name;
  uint32_t vocab, embd, ff, layers, heads, kv_heads, head_dim, experts, k, expert_ff;
} qwen3_moe_shape;

static const qwen3_moe_shape QWEN3_MOE_SHAPES[] = {
    /* Qwen3-30B-A3B */
    {"qwen3-30b-a3b", 151936, 2048, 6144, 48, 32, 4, 128, 128, 8, 768},
    /* small, for tests: 8 experts top 2 */
    {"qwen3-moe-tiny", 512, 128, 256, 2, 4, 2, 32, 8, 2, 64},
    /* small with rows of whole 256-element super-blocks, so its GGUF takes Q4_K_M's K-quants (tests) */
    {"qwen3-moe-kq", 512, 256, 512, 2, 4, 2, 64, 8, 2, 256},
};

static wgllm_status qwen3_moe_hparams(const qwen3_moe_shape *q, llm_hparams *hp, llm_err *err) {
  char js[1024];
  snprintf(js, sizeof js,
           "{\"model_type\": \"qwen3_moe\", \"vocab_size\": %u, \"hidden_size\": %u, \"intermediate_size\": %u, "
           "\"num_hidden_layers\": %u, \"num_attention_heads\": %u, \"num_key_value_heads\": %u, \"head_dim\": %u, "
           "\"num_experts\": %u, \"num_experts_per_tok\": %u, \"moe_intermediate_size\": %u, "
           "\"norm_topk_prob\": true, \"rope_theta\": 1000000.0, \"rms_norm_eps\": 1e-6, "
           "\"max_position_embeddings\": 40960, \"tie_word_embeddings\": false}",
           q->vocab, q->embd, q->ff, q->layers, q->heads, q->kv_heads, q->head_dim, q->experts, q->k, q->expert_ff);
  cJSON *cfg = cJSON_Parse(js);
  if (!cfg) {
    return llm_err_set(err, WGLLM_ERR_OUT_OF_MEMORY, "out of host memory");
  }
  wgllm_status s = llm_hparams_from_json(cfg, hp, err);
  cJSON_Delete(cfg);
  return s;
}

/* Mixtral-8x7B as MixtralConfig fields (8 experts top 2 on every layer, no sliding window) */
static wgllm_status mixtral_hparams(llm_hparams *hp, llm_err *err) {
  cJSON *cfg = cJSON_Parse("{\"model_type\": \"mixtral\", \"vocab_size\": 32000, \"hidden_size\": 4096, "
                           "\"intermediate_size\": 14336, \"num_hidden_layers\": 32, \"num_attention_heads\": 32, "
                           "\"num_key_value_heads\": 8, \"num_local_experts\": 8, \"num_experts_per_tok\": 2, "
                           "\"rope_theta\": 1000000.0, \"rms_norm_eps\": 1e-5, \"max_position_embeddings\": 32768, "
                           "\"tie_word_embeddings\": false}");
  if (!cfg) return llm_err_set(err, WGLLM_ERR_OUT_OF_MEMORY, "out of host memory");
  wgllm_status s = llm_hparams_from_json(cfg, hp, err);
  cJSON_Delete(cfg);
  return s;
}

/* gpt-oss as GptOssConfig fields: gpt-oss-20b (32 experts top 4, sliding window 128 on every other layer, YaRN
   factor 32 from 4096), and a small one for tests */
static wgllm_status gpt_oss_hparams(const char *name, llm_hparams *hp, llm_err *err) {
  int tiny = !strcmp(name, "gpt-oss-tiny");
  char js[1024];
  snprintf(js, sizeof js,
           "{\"model_type\": \"gpt_oss\", \"vocab_size\": %u, \"hidden_size\": %u, \"intermediate_size\": %u, "
           "\"num_hidden_layers\": %u, \"num_attention_heads\": %u, \"num_key_value_heads\": %u, \"head_dim\": %u, "
           "\"num_local_experts\": %u, \"num_experts_per_tok\": %u, \"sliding_window\": %u, "
           "\"rope_parameters\": {\"rope_type\": \"yarn\", \"rope_theta\": 150000.0, \"factor\": 32.0, "
           "\"beta_fast\": 32.0, \"beta_slow\": 1.0, \"truncate\": false, \"original_max_position_embeddings\": 4096}, "
           "\"rms_norm_eps\": 1e-5, \"max_position_embeddings\": 131072, \"tie_word_embeddings\": false}",
           tiny ? 512 : 201088, tiny ? 128 : 2880, tiny ? 64 : 2880, tiny ? 2 : 24, tiny ? 4 : 64, tiny ? 2 : 8,
           tiny ? 32 : 64, tiny ? 8 : 32, tiny ? 2 : 4, tiny ? 8 : 128);
  cJSON *cfg = cJSON_Parse(js);
  if (!cfg) return llm_err_set(err, WGLLM_ERR_OUT_OF_MEMORY, "out of host memory");
  wgllm_status s = llm_hparams_from_json(cfg, hp, err);
  cJSON_Delete(cfg);
  return s;
}

wgllm_status llm_synthetic_hparams(const char *name, llm_hparams *hp, llm_err *err) {
  memset(hp, 0, sizeof *hp);
  if (!strcmp(name, "mixtral-8x7b")) {
    wgllm_status s = mixtral_hparams(hp, err);
    if (s) llm_hparams_free(hp);
    return s;
  }
  if (!strcmp(name, "gpt-oss-20b") || !strcmp(name, "gpt-oss-tiny")) {
    wgllm_status s = gpt_oss_hparams(name, hp, err);
    if (s) llm_hparams_free(hp);
    return s;
  }
  for (size_t i = 0; i < sizeof QWEN3_MOE_SHAPES / sizeof QWEN3_MOE_SHAPES[0]; i++)
    if (!strcmp(name, QWEN3_MOE_SHAPES[i].name)) {
      wgllm_status s = qwen3_moe_hparams(&QWEN3_MOE_SHAPES[i], hp, err);
      if (s) llm_hparams_free(hp);
      return s;
    }
  for (size_t i = 0; i < sizeof GEMMA4_SHAPES / sizeof GEMMA4_SHAPES[0]; i++)
    if (!strcmp(name, GEMMA4_SHAPES[i].name)) {
      wgllm_status s = gemma4_hparams(&GEMMA4_SHAPES[i], hp, err);
      if (s) llm_hparams_free(hp);
      return s;
    }
  hp->arch = LLM_ARCH_LLAMA;
  snprintf(hp->arch_name, sizeof hp->arch_name, "llama");
  double theta = 500000.0;
  if (!strcmp(name, "llama-1b")) { /* Llama-3.2-1B */
    hp->n_vocab = 128256;
    hp->n_embd = 2048;
    hp->n_layer = 16;
    hp->n_head = 32;
    hp->n_head_kv = 8;
    hp->head_dim = 64;
    hp->n_ff = 8192;
    hp->tied_embeddings = 1;
  } else if (!strcmp(name, "llama-8b")) { /* Llama-3.1-8B */
    hp->n_vocab = 128256;
    hp->n_embd = 4096;
    hp->n_layer = 32;
    hp->n_head = 32;
    hp->n_head_kv = 8;
    hp->head_dim = 128;
    hp->n_ff = 14336;
    hp->tied_embeddings = 0;
  } else if (!strcmp(name, "tiny")) {
    hp->n_vocab = 512;
    hp->n_embd = 128;
    hp->n_layer = 2;
    hp->n_head = 4;
    hp->n_head_kv = 2;
    hp->head_dim = 32;
    hp->n_ff = 256;
    hp->tied_embeddings = 0;
  } else {
    return llm_err_set(err, WGLLM_ERR_INVALID_ARG,
                       "unknown synthetic model \"%s\" (llama-1b, llama-8b, tiny, gemma4, gemma4-noshare, gemma4-tiny, "
                       "qwen3-30b-a3b, qwen3-moe-tiny, qwen3-moe-kq, mixtral-8x7b, gpt-oss-20b, gpt-oss-tiny)",
                       name);
  }
  hp->norm_eps = 1e-5f;
  hp->embed_scale = 1.0f;
  hp->act = OP_ACT_SILU;
  hp->attn_scale = 1.0f / sqrtf((float)hp->head_dim);
  /* the layout and frequencies a GGUF of it gets when loaded (adjacent pairs, plain theta), so the file and
     the in-memory model compute the same logits; llama3 frequency scaling does not change speed */
  hp->rope_mode = OP_ROPE_ADJACENT;
  hp->rot_dim = hp->head_dim;
  hp->train_ctx = 131072;
  hp->bos = hp->eos = -1;
  hp->inv_freq = malloc(hp->rot_dim / 2 * sizeof *hp->inv_freq);
  if (!hp->inv_freq) {
    return llm_err_set(err, WGLLM_ERR_OUT_OF_MEMORY, "out of host memory");
  }
  for (uint32_t i = 0; i < hp->rot_dim / 2; i++)
    hp->inv_freq[i] = (float)(1.0 / pow(theta, (double)(2 * i) / hp->rot_dim));
  snprintf(hp->rope_desc, sizeof hp->rope_desc, "theta %g", theta);
  return WGLLM_OK;
}

/* xorshift64* stream per tensor */
static uint64_t mix(uint64_t x) {
  x ^= x >> 33;
  x *= 0xff51afd7ed558ccdull;
  x ^= x >> 33;
  x *= 0xc4ceb9fe1a85ec53ull;
  x ^= x >> 33;
  return x;
}

/* q4gsw data of tensor `id` [N][K]: random nibbles, scales in [0.004, 0.02) (keeps activations bounded) */
static void gen_q4(uint64_t id, uint64_t N, uint64_t K, uint32_t G, uint32_t *qs, uint16_t *scales) {
  uint64_t s = mix(id + 1);
  for (uint64_t i = 0; i < N * K / 8; i++) {
    s ^= s >> 12;
    s ^= s << 25;
    s ^= s >> 27;
    qs[i] = (uint32_t)((s * 0x2545F4914F6CDD1Dull) >> 32);
  }
  for (uint64_t i = 0; i < N * K / G; i++) {
    s ^= s >> 12;
    s ^= s << 25;
    s ^= s >> 27;
    float v = 0.004f + 0.016f * (float)((s * 0x2545F4914F6CDD1Dull) >> 40) / 16777216.0f;
    scales[i] = wc_f32_to_f16(v);
  }
}

typedef struct synth_tensor {
  char name[64];
  uint64_t N, K; /* K = 0: a norm vector of N */
  uint32_t E;    /* a layer's experts [E][N / E][K] (split by whole experts), 0: a plain weight */
  op_weight *w;
  gpu_view *v;
} synth_tensor;

/* the separate projections of a layer before they are fused (as a file stores them), with their rows */
typedef struct synth_parts {
  op_weight qkv[3], gu[2];
  uint32_t qkv_rows[3], gu_rows[2];
  int n_qkv, n_gu;
} synth_parts;

/* the next part of a layer's fused Q/K/V (gu 0) or gate/up (gu 1) projection */
static op_weight *part(synth_parts *pt, int gu, uint64_t rows) {
  if (!pt) return NULL;
  if (gu) {
    pt->gu_rows[pt->n_gu] = (uint32_t)rows;
    return &pt->gu[pt->n_gu++];
  }
  pt->qkv_rows[pt->n_qkv] = (uint32_t)rows;
  return &pt->qkv[pt->n_qkv++];
}

static size_t list_tensors(const llm_hparams *hp, llm_model *m, synth_parts *parts, synth_tensor *t) {
  size_t n = 0;
  uint64_t D = hp->n_embd, q = (uint64_t)hp->n_head * hp->head_dim, kv = (uint64_t)hp->n_head_kv * hp->head_dim;
#define ADD(nm, n_, k_, wp, vp)                                                                                        \
  do {                                                                                                                 \
    snprintf(t[n].name, 64, "%s", nm);                                                                                 \
    t[n].N = n_;                                                                                                       \
    t[n].K = k_;                                                                                                       \
    t[n].w = wp;                                                                                                       \
    t[n].v = vp;                                                                                                       \
    n++;                                                                                                               \
  } while (0)
  ADD("token_embd.weight", hp->n_vocab, D, m ? &m->tok_embd : NULL, NULL);
  ADD("output_norm.weight", D, 0, NULL, m ? &m->output_norm : NULL);
  if (!hp->tied_embeddings) ADD("output.weight", hp->n_vocab, D, m ? &m->output : NULL, NULL);
  for (uint32_t l = 0; l < hp->n_layer; l++) {
    llm_layer *ly = m ? &m->layers[l] : NULL;
    synth_parts *pt = parts ? &parts[l] : NULL;
    char nm[64];
#define L(suffix, n_, k_, wp, vp)                                                                                      \
  snprintf(nm, sizeof nm, "blk.%u." suffix, l);                                                                        \
  ADD(nm, n_, k_, wp, vp)
    L("attn_norm.weight", D, 0, NULL, ly ? &ly->attn_norm : NULL);
    L("attn_q.weight", q, D, part(pt, 0, q), NULL);
    L("attn_k.weight", kv, D, part(pt, 0, kv), NULL);
    L("attn_v.weight", kv, D, part(pt, 0, kv), NULL);
    L("attn_output.weight", D, q, ly ? &ly->wo : NULL, NULL);
    L("ffn_norm.weight", D, 0, NULL, ly ? &ly->ffn_norm : NULL);
    L("ffn_gate.weight", hp->n_ff, D, part(pt, 1, hp->n_ff), NULL);
    L("ffn_up.weight", hp->n_ff, D, part(pt, 1, hp->n_ff), NULL);
    L("ffn_down.weight", D, hp->n_ff, ly ? &ly->w_down : NULL, NULL);
#undef L
  }
#undef ADD
  return n;
}

/* Gemma 4 and Qwen3-MoE: the tensors the role table (model_roles.c) says the hyperparameters have, in its order (the
   file-level ones, then each layer's), under their Hugging Face names, and the weight of the weightless v norm. Vectors
   (norms, the layer scalars) are ones; linears and embedding tables q4gsw. */
static size_t list_roles(const llm_hparams *hp, llm_model *m, synth_parts *parts, synth_tensor *t) {
  size_t n = 0, nr;
  const llm_role *roles = llm_roles(&nr);
  for (int pass = 0; pass < 2; pass++)
    for (uint32_t l = 0; l < (pass ? hp->n_layer : 1); l++)
      for (size_t i = 0; i < nr; i++) {
        const llm_role *r = &roles[i];
        if (r->per_layer != pass || !llm_role_present(hp, r, l)) continue;
        /* a layer's experts: one random [E * rows][K] weight a projection (gate and up one, rows 2I: random rows
           need no interleaving), made in parts of whole experts over the binding limit (expert_parts) */
        if (r->group == LLM_GROUP_EXP_GATE_UP && r->slot == roles[i - 1].slot && roles[i - 1].experts) continue;
        synth_tensor *x = &t[n++];
        llm_role_name(hp, 0, r, pass ? (int)l : -1, x->name, sizeof x->name);
        x->N = (uint64_t)llm_role_size(hp, r->d0, l);
        x->E = r->experts ? hp->n_expert : 0;
        if (x->E) x->N *= (uint64_t)hp->n_expert * (r->group == LLM_GROUP_EXP_GATE_UP ? 2 : 1);
        x->K = r->d1 == LLM_DIM_NONE ? 0 : (uint64_t)llm_role_size(hp, r->d1, l);
        x->w = NULL;
        x->v = NULL;
        if (!m) continue;
        char *base = pass ? (char *)&m->layers[l] : (char *)m;
        if (x->E)
          x->w = (op_weight *)(base + r->slot);
        else if (r->group == LLM_GROUP_QKV || r->group == LLM_GROUP_GATE_UP)
          x->w = part(&parts[l], r->group == LLM_GROUP_GATE_UP, x->N);
        else if (r->group != LLM_GROUP_NONE) /* biases: no Gemma 4 has them (left NULL, refused at build) */
          continue;
        else if (r->kind == LLM_ROLE_VEC || r->kind == LLM_ROLE_VEC_RSQRT_D)
          x->v = (gpu_view *)(base + r->slot);
        else
          x->w = (op_weight *)(base + r->slot);
      }
  if (hp->v_norm) {
    synth_tensor *x = &t[n++];
    snprintf(x->name, sizeof x->name, "ones");
    x->N = llm_max_head_dim(hp);
    x->K = 0;
    x->w = NULL;
    x->v = m ? &m->ones : NULL;
  }
  return n;
}

/* A layer's experts t [E][N / E][K] as q4gsw weight parts of whole experts, each at most max_binding bytes (one part
   when it fits), random from tensor id's generator a part (id and the part's index). */
static wgllm_status expert_parts(llm_model *m, const synth_tensor *t, size_t id, uint32_t group, uint64_t max_binding,
                                 llm_err *err) {
  uint64_t rows = t->N / t->E, K = t->K, per_expert = rows * K / 2;
  uint32_t per = (uint32_t)(max_binding / per_expert), n_parts;
  if (per > t->E) per = t->E;
  n_parts = per ? (t->E + per - 1) / per : 0;
  if (!per || n_parts > OP_W_MAX_PARTS)
    return llm_err_set(err, WGLLM_ERR_UNSUPPORTED, "synthetic %s: an expert of %llu bytes, bindings of %llu", t->name,
                       (unsigned long long)per_expert, (unsigned long long)max_binding);
  op_weight *w = t->w;
  memset(w, 0, sizeof *w);
  w->type = OP_W_Q4;
  w->group = group;
  wgllm_status s = WGLLM_OK;
  for (uint32_t p = 0; !s && p < n_parts; p++) {
    uint64_t N = (uint64_t)(p + 1 < n_parts ? per : t->E - per * (n_parts - 1)) * rows;
    uint32_t *qs = malloc(N * K / 2);
    uint16_t *sc = malloc(N * K / group * 2);
    gpu_buffer *bq = NULL, *bs = NULL;
    if (!qs || !sc) s = llm_err_set(err, WGLLM_ERR_OUT_OF_MEMORY, "out of host memory");
    if (!s) gen_q4(((uint64_t)id << 8) + p, N, K, group, qs, sc);
    if (!s) s = llm_model_own_buffer(m, N * K / 2, t->name, &bq, err);
    if (!s) s = llm_model_own_buffer(m, (N * K / group * 2 + 3) & ~3ull, t->name, &bs, err);
    if (!s) {
      gpu_write(m->gpu, bq, 0, qs, N * K / 2);
      gpu_write(m->gpu, bs, 0, sc, N * K / group * 2);
      w->part[p] = (struct op_weight_part){gpu_whole(bq), gpu_whole(bs), (uint32_t)N, OP_W_Q4, group};
      s = gpu_wait_idle(m->gpu, err);
    }
    free(qs);
    free(sc);
  }
  if (s) return s;
  w->data = w->part[0].data;
  w->scales = w->part[0].scales;
  w->n_parts = n_parts > 1 ? n_parts : 0;
  return WGLLM_OK;
}

wgllm_status llm_model_synthetic(gpu_context *gpu, const char *name, uint32_t group, llm_model **out, llm_err *err) {
  *out = NULL;
  if (group != 32 && group != 64 && group != 128) {
    return llm_err_set(err, WGLLM_ERR_INVALID_ARG, "q4gsw group %u (32, 64 or 128)", group);
  }
  llm_model *m = calloc(1, sizeof *m);
  if (!m) {
    return llm_err_set(err, WGLLM_ERR_OUT_OF_MEMORY, "out of host memory");
  }
  m->gpu = gpu;
  wgllm_status s = llm_synthetic_hparams(name, &m->hp, err);
  if (!s && (m->hp.qkv_bias || m->hp.moe_bias || m->hp.sinks)) { /* biases and sinks have no synthetic values here */
    llm_hparams_free(&m->hp);
    s = llm_err_set(err, WGLLM_ERR_UNSUPPORTED, "synthetic %s: no in-memory form; write it with --write-gguf", name);
  }
  if (s) {
    free(m);
    return s;
  }
  snprintf(m->source, sizeof m->source, "synthetic:%s", name);
  snprintf(m->weights_desc, sizeof m->weights_desc, "q4gsw g%u", group);
  m->layers = calloc(m->hp.n_layer, sizeof *m->layers);
  size_t n_roles;
  llm_roles(&n_roles);
  int gemma4 = m->hp.arch != LLM_ARCH_LLAMA; /* the shapes whose tensors come from the role table */
  size_t cap = gemma4 ? (n_roles + 1) * ((size_t)m->hp.n_layer + 1) : 3 + 9 * (size_t)m->hp.n_layer;
  synth_tensor *t = calloc(cap, sizeof *t);
  synth_parts *parts = calloc(m->hp.n_layer, sizeof *parts);
  if (!m->layers || !t || !parts) {
    free(t);
    free(parts);
    llm_model_free(m);
    return llm_err_set(err, WGLLM_ERR_OUT_OF_MEMORY, "out of host memory");
  }
  size_t nt = gemma4 ? list_roles(&m->hp, m, parts, t) : list_tensors(&m->hp, m, parts, t);
  for (size_t i = 0; !s && i < nt; i++) {
    if (t[i].K ? !t[i].w : !t[i].v) {
      s = llm_err_set(err, WGLLM_ERR_INTERNAL, "synthetic %s: no place for tensor %s", name, t[i].name);
      break;
    }
    if (t[i].K % group) {
      s = llm_err_set(err, WGLLM_ERR_INVALID_ARG,
                      "synthetic %s: tensor %s has rows of %llu, not a multiple of the q4gsw group %u", name, t[i].name,
                      (unsigned long long)t[i].K, group);
      break;
    }
    if (!t[i].K) {
      float *ones = malloc(t[i].N * sizeof *ones);
      if (!ones) {
        s = WGLLM_ERR_OUT_OF_MEMORY;
        break;
      }
      for (uint64_t j = 0; j < t[i].N; j++)
        ones[j] = 1.0f;
      gpu_buffer *b;
      s = llm_model_own_buffer(m, t[i].N * 4, t[i].name, &b, err);
      if (!s) {
        gpu_write(gpu, b, 0, ones, t[i].N * 4);
        *t[i].v = gpu_whole(b);
      }
      free(ones);
      continue;
    }
    if (t[i].E) {
      s = expert_parts(m, &t[i], i, group, gpu->limits.maxStorageBufferBindingSize, err);
      continue;
    }
    uint64_t N = t[i].N, K = t[i].K;
    uint32_t *qs = malloc(N * K / 2);
    uint16_t *sc = malloc(N * K / group * 2);
    if (!qs || !sc) {
      free(qs);
      free(sc);
      s = WGLLM_ERR_OUT_OF_MEMORY;
      llm_err_set(err, s, "out of host memory");
      break;
    }
    gen_q4(i, N, K, group, qs, sc);
    gpu_buffer *bq, *bs;
    s = llm_model_own_buffer(m, N * K / 2, t[i].name, &bq, err);
    if (!s) s = llm_model_own_buffer(m, N * K / group * 2, t[i].name, &bs, err);
    if (!s) {
      gpu_write(gpu, bq, 0, qs, N * K / 2);
      gpu_write(gpu, bs, 0, sc, (N * K / group * 2 + 3) & ~3ull);
      op_weight *w = t[i].w;
      w->type = OP_W_Q4;
      w->group = group;
      w->data = gpu_whole(bq);
      w->scales = gpu_whole(bs);
      s = gpu_wait_idle(gpu, err); /* bounds host staging memory to one tensor */
    }
    free(qs);
    free(sc);
  }
  const llm_hparams *hp = &m->hp;
  for (uint32_t l = 0; !s && l < hp->n_layer; l++) { /* q | k | v (q alone in a KV-shared layer), gate | up */
    synth_parts *pt = &parts[l];
    if (pt->n_qkv == 1)
      m->layers[l].wqkv = pt->qkv[0];
    else
      s = llm_concat_rows(m, pt->qkv, pt->qkv_rows, pt->n_qkv, hp->n_embd, &m->layers[l].wqkv, err);
    if (!s && pt->n_gu) /* a sparse layer has none */
      s = llm_concat_rows(m, pt->gu, pt->gu_rows, pt->n_gu, hp->n_embd, &m->layers[l].w_gate_up, err);
  }
  /* weights over the device's storage binding limit (the LM head of the 8B shape under 128 MiB) are split */
  uint64_t mb = gpu->limits.maxStorageBufferBindingSize;
  const llm_hparams *hq = &m->hp;
  if (!s) s = llm_split_weight(m, &m->tok_embd, hq->n_vocab, hq->n_embd, mb, "token_embd", err);
  if (!s && !hq->tied_embeddings) s = llm_split_weight(m, &m->output, hq->n_vocab, hq->n_embd, mb, "output", err);
  for (uint32_t l = 0; !s && l < hq->n_layer; l++) {
    llm_layer *ly = &m->layers[l];
    uint32_t F = llm_layer_n_ff(hq, l);
    s = llm_split_weight(m, &ly->wqkv, llm_layer_qkv_rows(hq, l), hq->n_embd, mb, "attn_qkv", err);
    if (!s) s = llm_split_weight(m, &ly->wo, hq->n_embd, llm_layer_q_width(hq, l), mb, "attn_output", err);
    if (!s && !llm_layer_is_moe(hq, l))
      s = llm_split_weight(m, &ly->w_gate_up, 2 * F, hq->n_embd, mb, "ffn_gate_up", err);
    if (!s && !llm_layer_is_moe(hq, l)) s = llm_split_weight(m, &ly->w_down, hq->n_embd, F, mb, "ffn_down", err);
    if (!s && llm_layer_is_moe(hq, l))
      s = llm_split_weight(m, &ly->router, hq->n_expert, hq->n_embd, mb, "router", err);
  }
  if (!s && m->hp.tied_embeddings) m->output = m->tok_embd;
  free(t);
  free(parts);
  if (s) {
    llm_model_free(m);
    return s;
  }
  *out = m;
  return WGLLM_OK;
}

/* ---- the synthetic model as a GGUF file ---- */

/* Streams tensor i's data: ones for a norm, else its q4gsw g32 numbers as Q4_0 blocks, a row at a time. */
static wgllm_status fill_tensor(void *user, size_t i, gguf_sink *sink) {
  const synth_tensor *t = (const synth_tensor *)user + i;
  uint64_t N = t->N, K = t->K;
  if (!K) {
    float ones[256];
    for (int j = 0; j < 256; j++)
      ones[j] = 1.0f;
    wgllm_status s = WGLLM_OK;
    for (uint64_t j = 0; !s && j < N; j += 256)
      s = gguf_sink_write(sink, ones, (size_t)(N - j < 256 ? N - j : 256) * 4);
    return s;
  }
  uint32_t *qs = malloc(N * K / 2);
  uint16_t *sc = malloc(N * K / 32 * 2);
  uint8_t *blk = malloc(K / 32 * 18);
  wgllm_status s = qs && sc && blk ? WGLLM_OK : WGLLM_ERR_OUT_OF_MEMORY;
  if (!s) gen_q4(i, N, K, 32, qs, sc);
  for (uint64_t r = 0; !s && r < N; r++) { /* Q4_0 block: d, then bytes j holding elements j (low) and j+16 (high) */
    for (uint64_t b = 0; b < K / 32; b++) {
      uint8_t *o = blk + b * 18;
      memcpy(o, &sc[r * (K / 32) + b], 2);
      const uint32_t *w = qs + (r * K + b * 32) / 8;
      for (int j = 0; j < 16; j++) {
        uint32_t lo = (w[j / 8] >> (4 * (j % 8))) & 15, hi = (w[(j + 16) / 8] >> (4 * ((j + 16) % 8))) & 15;
        o[2 + j] = (uint8_t)(lo | (hi << 4));
      }
    }
    s = gguf_sink_write(sink, blk, K / 32 * 18);
  }
  free(qs);
  free(sc);
  free(blk);
  return s;
}

wgllm_status llm_synthetic_write_gguf(const char *name, const char *path, llm_err *err) {
  return llm_synthetic_write_gguf_opts(name, path, NULL, err);
}

wgllm_status llm_synthetic_write_gguf_opts(const char *name, const char *path, const llm_synthetic_gguf_opts *o,
                                           llm_err *err) {
  llm_hparams hp;
  wgllm_status s = llm_synthetic_hparams(name, &hp, err);
  if (s) return s;
  if (o && o->n_vocab) hp.n_vocab = o->n_vocab;
  if (hp.arch != LLM_ARCH_LLAMA) { /* the MoE shapes in Q4_K_M's types (synthetic_gguf_roles.c); Gemma 4's none */
    if (o && o->vocab_dir)
      s = llm_err_set(err, WGLLM_ERR_UNSUPPORTED, "synthetic %s: --vocab is for the Llama shapes' files", name);
    else
      s = llm_synthetic_write_roles_gguf(&hp, name, path, err);
    llm_hparams_free(&hp);
    return s;
  }
  synth_tensor *t = calloc(3 + 9 * (size_t)hp.n_layer, sizeof *t);
  gguf_writer *w = gguf_writer_begin(3, 32);
  if (!t || !w) {
    llm_err_set(err, WGLLM_ERR_OUT_OF_MEMORY, "out of host memory");
    free(t);
    gguf_writer_free(w);
    llm_hparams_free(&hp);
    return WGLLM_ERR_OUT_OF_MEMORY;
  }
  gguf_writer_kv_str(w, "general.architecture", "llama");
  gguf_writer_kv_str(w, "general.name", name);
  gguf_writer_kv_u32(w, "general.alignment", 32);
  gguf_writer_kv_u32(w, "llama.context_length", hp.train_ctx);
  gguf_writer_kv_u32(w, "llama.embedding_length", hp.n_embd);
  gguf_writer_kv_u32(w, "llama.block_count", hp.n_layer);
  gguf_writer_kv_u32(w, "llama.feed_forward_length", hp.n_ff);
  gguf_writer_kv_u32(w, "llama.rope.dimension_count", hp.rot_dim);
  gguf_writer_kv_u32(w, "llama.attention.head_count", hp.n_head);
  gguf_writer_kv_u32(w, "llama.attention.head_count_kv", hp.n_head_kv);
  gguf_writer_kv_f32(w, "llama.attention.layer_norm_rms_epsilon", hp.norm_eps);
  gguf_writer_kv_f32(w, "llama.rope.freq_base", 500000.0f);
  gguf_writer_kv_u32(w, "llama.vocab_size", hp.n_vocab);
  if (o && o->vocab_dir) s = llm_synthetic_vocab_kv(w, o->vocab_dir, hp.n_vocab, err);
  if (s) {
    gguf_writer_free(w);
    free(t);
    llm_hparams_free(&hp);
    return s;
  }
  size_t nt = list_tensors(&hp, NULL, NULL, t);
  for (size_t i = 0; i < nt; i++) {
    uint64_t ne[2] = {t[i].K ? t[i].K : t[i].N, t[i].N}; /* innermost first: [N][K] is ne = {K, N} */
    gguf_writer_tensor(w, t[i].name, t[i].K ? WT_Q4_0 : WT_F32, t[i].K ? 2 : 1, ne, NULL);
  }
  gguf_writer_set_fill(w, fill_tensor, t);
  s = gguf_writer_finish_path(w, path, err);
  gguf_writer_free(w);
  free(t);
  llm_hparams_free(&hp);
  return s;
}
