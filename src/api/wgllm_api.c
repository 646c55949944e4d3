/* The public C API (include/wgllm.h) over the internal layers: a model handle owns the GPU context, the
   weights, the tokenizer and the chat template; a session handle owns the KV cache and sampler state. */
#include "api_internal.h"
#include "batch.h"
#include "chat.h"
#include "generate.h"
#include "gpu.h"
#include "model.h"
#include "session.h"
#include "tokenizer_load.h"
#include "wgllm.h"
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* What WGLLM_PRECISION_DEFAULT resolves to: exact. Measured on the H200 against llama.cpp on the same files
   (docs/PERF.md, "Precision"): fast's logit error is llama.cpp's CPU backend's but 5-20x its Vulkan backend's, and
   the rule was fast only at or below llama.cpp's own */
#define WGLLM_DEFAULT_FAST 0

struct wgllm_vocab {
  tokenizer *tok;
  int owned; /* loaded by wgllm_vocab_load (a model's vocabulary belongs to the model) */
  char err[1024];
};

struct wgllm_model {
  gpu_context *gpu;
  llm_model *m;
  tokenizer *tok;
  wgllm_vocab vocab;   /* over tok, not owned */
  chat_renderer *chat; /* NULL when the model's own template does not parse: chat_err says why */
  char chat_err[1024];
  llm_batch *batch; /* wgllm_jobs_step's batched decode (made on first use) */
  int no_batch;     /* wgllm_model_params.no_batch, or the batch could not be made */
  char err[1024];
};

struct wgllm_session {
  wgllm_model *model;
  llm_session *s;
  struct wgllm_job *job; /* the job that last started on it (one not done keeps others off it) */
  char err[1024];
};

static _Thread_local char g_last_error[1024];

const char *wgllm_last_error(void) { return g_last_error; }

static wgllm_log_fn g_log;
static void *g_log_user;

void wgllm_set_log(wgllm_log_fn fn, void *user) {
  g_log = fn;
  g_log_user = user;
}

void api_log(wgllm_log_level level, const char *fmt, ...) {
  if (!g_log) return;
  char msg[1024];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  g_log(level, msg, g_log_user);
}

void api_set_last_error(const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(g_last_error, sizeof g_last_error, fmt, ap);
  va_end(ap);
}
wgllm_status api_fail_at(wgllm_status st, const char *path, const char *reason) {
  if (!strncmp(reason, path, strlen(path)))
    api_set_last_error("%s", reason);
  else
    api_set_last_error("%s: %s", path, reason);
  return st;
}
const char *wgllm_model_error(const wgllm_model *m) { return m ? m->err : ""; }
const char *wgllm_session_error(const wgllm_session *s) { return s ? s->err : ""; }
void wgllm_free(void *p) { free(p); }

static wgllm_status fail(char *err, wgllm_status st, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(err, 1024, fmt, ap);
  va_end(ap);
  return st;
}

wgllm_model_params wgllm_model_default_params(void) {
  wgllm_model_params p = {WGLLM_WEIGHTS_NATIVE, 32, NULL, NULL, 0, 0, NULL, NULL};
  return p;
}

wgllm_session_params wgllm_session_default_params(void) {
  wgllm_session_params p = {4096, WGLLM_KV_F32, WGLLM_DECODE_FUSED, WGLLM_ATTN_GRID_WORST, NULL, NULL};
  return p;
}

const char *wgllm_precision_name(wgllm_precision p) {
  switch (p) {
  case WGLLM_PRECISION_DEFAULT:
    return "default";
  case WGLLM_PRECISION_EXACT:
    return "exact";
  case WGLLM_PRECISION_FAST:
    return "fast";
  }
  return NULL;
}

wgllm_generate_params wgllm_generate_default_params(void) {
  wgllm_generate_params p;
  memset(&p, 0, sizeof p);
  p.max_tokens = 256;
  p.temperature = 0.8f;
  p.top_k = 40;
  p.top_p = 0.95f;
  p.min_p = 0.05f;
  p.repeat_penalty = 1.1f;
  p.repeat_last_n = 64;
  p.seed = 1;
  return p;
}

void wgllm_model_free(wgllm_model *m) {
  if (!m) return;
  llm_batch_free(m->batch);
  llm_model_free(m->m);
  chat_renderer_free(m->chat);
  tok_free(m->tok);
  gpu_destroy(m->gpu);
  free(m);
}

wgllm_status wgllm_model_create(const char *path, const wgllm_model_params *params, wgllm_model **out) {
  g_last_error[0] = 0;
  if (!out) return fail(g_last_error, WGLLM_ERR_INVALID_ARG, "wgllm_model_create: out is NULL");
  *out = NULL;
  if (!path) return fail(g_last_error, WGLLM_ERR_INVALID_ARG, "wgllm_model_create: path is NULL");
  wgllm_model_params p = params ? *params : wgllm_model_default_params();
  llm_load_options lo = {0};
  lo.progress = p.progress;
  lo.progress_user = p.progress_user;
  lo.max_binding = p.max_binding_bytes;
  char err[1024];
  if ((unsigned)p.weights > WGLLM_WEIGHTS_Q4)
    return fail(g_last_error, WGLLM_ERR_INVALID_ARG, "wgllm_model_create: weights %d is not a wgllm_weight_type",
                (int)p.weights);
  if (p.weights == WGLLM_WEIGHTS_Q4 && !p.q4_group) p.q4_group = 32;
  if (p.weights == WGLLM_WEIGHTS_Q4 && p.q4_group != 32 && p.q4_group != 64 && p.q4_group != 128)
    return fail(g_last_error, WGLLM_ERR_INVALID_ARG, "the q4 group must be 32, 64 or 128 (got %u)", p.q4_group);
  lo.weights.q4 = p.weights == WGLLM_WEIGHTS_Q4;
  lo.weights.group = lo.weights.q4 ? p.q4_group : 0;
  wgllm_status st;
  if (p.chat_template && chat_template_from_name(p.chat_template) < 0)
    return fail(g_last_error, WGLLM_ERR_INVALID_ARG,
                "chat template \"%s\" is unknown (llama3, chatml, gemma, llama2, none)", p.chat_template);
  wgllm_model *m = calloc(1, sizeof *m);
  if (!m) return fail(g_last_error, WGLLM_ERR_OUT_OF_MEMORY, "out of host memory");
  m->no_batch = p.no_batch;
  /* the model file is opened and parsed once, for its tokenizer (GGUF) and its weights */
  wt_store *store = NULL;
  st = llm_open_store(path, &store, err, sizeof err);
  if (st) {
    wgllm_model_free(m);
    return api_fail_at(st, path, err);
  }
  char *jinja = NULL;
  st = p.no_tokenizer ? WGLLM_OK : llm_load_tokenizer_store(path, store, &m->tok, &jinja, err, sizeof err);
  if (st) {
    wt_store_free(store);
    wgllm_model_free(m);
    return fail(g_last_error, st, "%s: tokenizer: %s", path, err);
  }
  m->vocab.tok = m->tok;
  /* the model's own template runs as it is; one that does not parse makes every chat call fail with why (the model
     still loads: generation from text and ids does not use it; a named template overrides it) */
  st = chat_renderer_create(p.chat_template, jinja, m->tok, &m->chat, err, sizeof err);
  free(jinja);
  if (st == WGLLM_ERR_OUT_OF_MEMORY) {
    wt_store_free(store);
    wgllm_model_free(m);
    return fail(g_last_error, st, "%s: chat template: %s", path, err);
  }
  if (st) {
    m->chat = NULL;
    snprintf(m->chat_err, sizeof m->chat_err, "%s", err);
    api_log(WGLLM_LOG_WARN,
            "%s: its chat template cannot run (%s): chat calls will fail; a named template "
            "(chat_template \"chatml\", say) overrides it",
            path, err);
  }
  gpu_options go = {0};
  go.adapter_name = p.adapter ? p.adapter : getenv("WGLLM_ADAPTER"); /* the environment is read here, at the door */
  go.disable_f16 = p.disable_f16;
  go.wait_timeout_ms = p.gpu_timeout_ms;
  const char *te = getenv("WGLLM_GPU_TIMEOUT_MS");
  if (!go.wait_timeout_ms && te && *te) {
    char *end;
    unsigned long v = strtoul(te, &end, 10);
    if (*end || v == 0 || v > 0xffffffffUL) {
      wgllm_model_free(m);
      wt_store_free(store);
      return fail(g_last_error, WGLLM_ERR_INVALID_ARG, "WGLLM_GPU_TIMEOUT_MS \"%s\" is not a positive number of ms",
                  te);
    }
    go.wait_timeout_ms = (uint32_t)v;
  }
  st = gpu_create(&go, &m->gpu, err, sizeof err);
  if (!st) st = llm_model_load_store(m->gpu, path, store, &lo, &m->m, err, sizeof err);
  wt_store_free(store);
  if (st) {
    wgllm_model_free(m);
    return api_fail_at(st, path, err);
  }
  if (tok_vocab_size(m->tok) > m->m->hp.n_vocab) {
    st = fail(g_last_error, WGLLM_ERR_FORMAT, "%s: the tokenizer has %zu tokens but the model's vocabulary is %u", path,
              tok_vocab_size(m->tok), m->m->hp.n_vocab);
    wgllm_model_free(m);
    return st;
  }
  api_log(WGLLM_LOG_INFO, "%s: %s on %s (%s, %s), weights %s, %.1f MB on the GPU", path, m->m->hp.arch_name,
          m->gpu->adapter_name, m->gpu->backend, m->gpu->adapter_type, m->m->weights_desc, m->m->weight_bytes / 1e6);
  if (m->gpu->notices[0]) api_log(WGLLM_LOG_INFO, "%s: features: %s", path, m->gpu->notices);
  *out = m;
  return WGLLM_OK;
}

wgllm_status wgllm_model_get_info(const wgllm_model *m, wgllm_model_info *info) {
  if (!m || !info) return WGLLM_ERR_INVALID_ARG;
  const llm_hparams *hp = &m->m->hp;
  info->architecture = hp->arch_name;
  info->n_vocab = hp->n_vocab;
  info->n_embd = hp->n_embd;
  info->n_layer = hp->n_layer;
  info->n_head = hp->n_head;
  info->n_head_kv = hp->n_head_kv;
  info->head_dim = hp->head_dim;
  info->n_ff = hp->n_ff;
  info->train_context = hp->train_ctx;
  info->weight_bytes = m->m->weight_bytes;
  info->weights = m->m->weights_desc;
  info->adapter = m->gpu->adapter_name;
  info->chat_template = m->chat ? chat_renderer_name(m->chat) : "unrunnable";
  info->bos = tok_bos(m->tok);
  info->eos = tok_eos(m->tok);
  return WGLLM_OK;
}

static const char no_tok[] = "the model was loaded without its tokenizer (no_tokenizer)";

wgllm_status wgllm_tokenize(wgllm_model *m, const char *text, size_t len, int add_special, int32_t *ids, size_t cap,
                            size_t *n_ids) {
  if (!m || !text || !n_ids || (cap && !ids)) return WGLLM_ERR_INVALID_ARG;
  if (!m->tok) return fail(m->err, WGLLM_ERR_INVALID_ARG, "%s", no_tok);
  int32_t *v = NULL;
  size_t n = 0;
  wgllm_status st = tok_encode(m->tok, text, len, add_special, 1, &v, &n, m->err, sizeof m->err);
  if (st) return st;
  if (cap && n) memcpy(ids, v, (n < cap ? n : cap) * sizeof *v);
  *n_ids = n;
  free(v);
  return WGLLM_OK;
}

wgllm_status wgllm_detokenize(wgllm_model *m, const int32_t *ids, size_t n, char **text) {
  if (!m || !text || (n && !ids)) return WGLLM_ERR_INVALID_ARG;
  if (!m->tok) return fail(m->err, WGLLM_ERR_INVALID_ARG, "%s", no_tok);
  size_t len;
  return tok_decode(m->tok, ids, n, 0, text, &len, m->err, sizeof m->err);
}

wgllm_status wgllm_session_create(wgllm_model *m, const wgllm_session_params *params, wgllm_session **out) {
  g_last_error[0] = 0;
  if (!m || !out) return fail(g_last_error, WGLLM_ERR_INVALID_ARG, "wgllm_session_create: model or out is NULL");
  *out = NULL;
  wgllm_session_params p = params ? *params : wgllm_session_default_params();
  wgllm_session *s = calloc(1, sizeof *s);
  if (!s) return fail(g_last_error, WGLLM_ERR_OUT_OF_MEMORY, "out of host memory");
  s->model = m;
  if ((unsigned)p.kv_type > WGLLM_KV_F16 || (unsigned)p.decode_path > WGLLM_DECODE_UNFUSED ||
      (unsigned)p.attn_grid > WGLLM_ATTN_GRID_INDIRECT || (unsigned)p.precision > WGLLM_PRECISION_FAST) {
    free(s);
    return fail(g_last_error, WGLLM_ERR_INVALID_ARG,
                "wgllm_session_create: kv_type %d, decode_path %d, attn_grid %d or precision %d "
                "is not one of the enum's values",
                (int)p.kv_type, (int)p.decode_path, (int)p.attn_grid, (int)p.precision);
  }
  llm_session_options so = {0};
  so.ctx = p.context;
  so.kv_f16 = p.kv_type == WGLLM_KV_F16;
  so.unfused = p.decode_path == WGLLM_DECODE_UNFUSED;
  so.attn_grid = p.attn_grid == WGLLM_ATTN_GRID_INDIRECT ? LLM_ATTN_GRID_INDIRECT : LLM_ATTN_GRID_WORST;
  so.on_prefill = p.on_prefill;
  so.prefill_user = p.prefill_user;
  so.prefill_chunk = p.prefill_chunk;
  so.fast = p.precision == WGLLM_PRECISION_FAST || (p.precision == WGLLM_PRECISION_DEFAULT && WGLLM_DEFAULT_FAST);
  char err[1024];
  wgllm_status st = llm_session_create(m->m, &so, &s->s, err, sizeof err);
  if (st) {
    free(s);
    return fail(g_last_error, st, "%s", err);
  }
  *out = s;
  return WGLLM_OK;
}

void wgllm_session_free(wgllm_session *s) {
  if (!s) return;
  llm_batch_forget(s->model->batch, s->s); /* its recording reads this session's buffers */
  llm_session_free(s->s);
  free(s);
}

void wgllm_session_reset(wgllm_session *s) {
  if (s) llm_session_reset(s->s);
}

uint32_t wgllm_session_n_past(const wgllm_session *s) { return s ? s->s->n_past : 0; }

uint64_t wgllm_session_kv_bytes(const wgllm_session *s) { return s ? s->s->kv.bytes : 0; }

void wgllm_session_rewind(wgllm_session *s, uint32_t n) {
  if (s) llm_session_rewind(s->s, n);
}

wgllm_status wgllm_session_prefill(wgllm_session *s, const int32_t *ids, size_t n, float *logits, int all_rows) {
  if (!s) return WGLLM_ERR_INVALID_ARG;
  s->err[0] = 0;
  if (!ids || !n || n > UINT32_MAX)
    return fail(s->err, WGLLM_ERR_INVALID_ARG, "wgllm_session_prefill: %s", ids ? "no tokens" : "ids is NULL");
  if (s->s->has_sampler) llm_session_step_drain(s->s); /* generation may have left steps queued */
  wgllm_status st = llm_session_prefill(s->s, ids, (uint32_t)n, logits, all_rows);
  if (st) fail(s->err, st, "%s", s->s->err);
  return st;
}

wgllm_status wgllm_session_decode(wgllm_session *s, int32_t id, float *logits) {
  if (!s) return WGLLM_ERR_INVALID_ARG;
  s->err[0] = 0;
  if (s->s->has_sampler)
    return fail(s->err, WGLLM_ERR_INVALID_ARG,
                "wgllm_session_decode: this session generated text (its step samples); use a new session");
  wgllm_status st = llm_session_decode(s->s, id, logits);
  if (st) fail(s->err, st, "%s", s->s->err);
  return st;
}

static wgllm_status to_gen_params(wgllm_session *s, const wgllm_generate_params *p, llm_gen_params *gp) {
  memset(gp, 0, sizeof *gp);
  /* written so that NaN fails every test; the sampler divides by temperature and repeat_penalty, so a value under
     the minimum (1e-82 from JSON is 0 as a float; 1e-40 is a denormal) would turn finite logits into infinities */
  const float lo = WGLLM_SAMPLING_SCALE_MIN, hi = WGLLM_SAMPLING_SCALE_MAX;
  if (!(p->temperature == 0 || (p->temperature >= lo && p->temperature <= hi)))
    return fail(s->err, WGLLM_ERR_INVALID_ARG, "sampling: temperature is %g; expected 0 (greedy) or from %g to %g",
                p->temperature, lo, hi);
  if (!(p->repeat_penalty >= lo && p->repeat_penalty <= hi))
    return fail(s->err, WGLLM_ERR_INVALID_ARG, "sampling: repeat_penalty is %g; expected from %g to %g (1: off)",
                p->repeat_penalty, lo, hi);
  if (!(p->top_p >= 0 && p->top_p <= 1 && p->min_p >= 0 && p->min_p <= 1))
    return fail(s->err, WGLLM_ERR_INVALID_ARG, "sampling: top_p and min_p must be in [0, 1] (got %g, %g)", p->top_p,
                p->min_p);
  const float pen[2] = {p->presence_penalty, p->frequency_penalty};
  for (int i = 0; i < 2; i++)
    if (!isfinite(pen[i]) || pen[i] < -2 || pen[i] > 2)
      return fail(s->err, WGLLM_ERR_INVALID_ARG, "sampling: %s must be in [-2, 2] (got %g)",
                  i ? "frequency_penalty" : "presence_penalty", pen[i]);
  gp->max_tokens = p->max_tokens;
  gp->sampling.temperature = p->temperature;
  gp->sampling.top_k = p->top_k;
  gp->sampling.top_p = p->top_p;
  gp->sampling.min_p = p->min_p;
  gp->sampling.rep_penalty = p->repeat_penalty;
  gp->sampling.ring_cap = p->repeat_last_n > OP_SAMPLE_RING_MAX ? OP_SAMPLE_RING_MAX : p->repeat_last_n;
  gp->sampling.seed = p->seed;
  gp->sampling.presence = p->presence_penalty;
  gp->sampling.frequency = p->frequency_penalty;
  gp->stop = p->stop;
  gp->n_stop = p->n_stop;
  gp->on_text = p->on_text;
  gp->user = p->user;
  gp->ignore_eog = p->ignore_eos;
  return WGLLM_OK;
}

/* ---------- jobs: generations stepped by the caller ---------- */
struct wgllm_job {
  wgllm_session *session;
  llm_gen g;
  uint32_t n_prompt, cached;
  uint32_t batched; /* tokens from batched steps */
  int decodes;      /* wgllm_jobs_step: this call decodes its next token (it took one, and is not prefilling) */
  char err[1024];
};

static wgllm_stop public_stop(llm_stop_reason r) {
  static const wgllm_stop stops[] = {
      [LLM_STOP_NONE] = WGLLM_STOP_NONE,         [LLM_STOP_EOG] = WGLLM_STOP_END_OF_GENERATION,
      [LLM_STOP_STRING] = WGLLM_STOP_STRING,     [LLM_STOP_MAX_TOKENS] = WGLLM_STOP_MAX_TOKENS,
      [LLM_STOP_CALLBACK] = WGLLM_STOP_CALLBACK, [LLM_STOP_CONTEXT] = WGLLM_STOP_CONTEXT};
  return (unsigned)r < sizeof stops / sizeof stops[0] ? stops[r] : WGLLM_STOP_NONE;
}

/* Copies the session's message to the job (and the session handle) once the job failed. */
static wgllm_status job_check(wgllm_job *j) {
  wgllm_status st = j->g.st;
  if (st && !j->err[0]) {
    snprintf(j->err, sizeof j->err, "%s", j->session->s->err);
    snprintf(j->session->err, sizeof j->session->err, "%s", j->err);
  }
  return st;
}

wgllm_status wgllm_job_start(wgllm_session *s, const int32_t *ids, size_t n, const wgllm_generate_params *params,
                             wgllm_job **out) {
  if (!s || !out) return WGLLM_ERR_INVALID_ARG;
  *out = NULL;
  s->err[0] = 0;
  if (!ids && n) return fail(s->err, WGLLM_ERR_INVALID_ARG, "wgllm_job_start: ids is NULL");
  wgllm_generate_params p = params ? *params : wgllm_generate_default_params();
  llm_gen_params gp;
  wgllm_status st = to_gen_params(s, &p, &gp);
  if (st) return st;
  if (n == 0) return fail(s->err, WGLLM_ERR_INVALID_ARG, "empty prompt: nothing to continue from");
  if (n >= s->s->opt.ctx)
    return fail(s->err, WGLLM_ERR_INVALID_ARG, "the prompt is %zu tokens, the context only %u", n, s->s->opt.ctx);
  uint32_t nv = s->model->m->hp.n_vocab;
  for (size_t i = 0; i < n; i++)
    if (ids[i] < 0 || (uint32_t)ids[i] >= nv)
      return fail(s->err, WGLLM_ERR_INVALID_ARG, "prompt token %zu is id %d, outside the vocabulary of %u", i, ids[i],
                  nv);
  if (s->job && !s->job->g.done)
    return fail(s->err, WGLLM_ERR_INVALID_ARG,
                "wgllm_job_start: the session has a job that is not done (free it or run it to its end first)");
  wgllm_job *j = calloc(1, sizeof *j);
  if (!j) return fail(s->err, WGLLM_ERR_OUT_OF_MEMORY, "out of host memory");
  j->session = s;
  j->n_prompt = (uint32_t)n;
  /* keep the cached prefix, but always recompute at least the last prompt token (its logits are needed) */
  uint32_t keep = llm_session_common_prefix(s->s, ids, (uint32_t)n);
  if (keep >= n) keep = (uint32_t)n - 1;
  if (s->s->in_flight) llm_session_step_drain(s->s); /* an earlier generation may have left steps queued */
  j->cached = keep = llm_session_rewind(s->s, keep);
  /* the penalties look back over the whole prompt, cached prefix included, so a cache hit samples the same */
  gp.recent = ids;
  gp.n_recent = (uint32_t)n;
  st = llm_gen_begin_deferred(&j->g, s->s, s->model->tok, ids + keep, (uint32_t)(n - keep), &gp);
  if (st) {
    fail(s->err, st, "%s", s->s->err);
    llm_gen_free(&j->g);
    free(j);
    return st;
  }
  s->job = j;
  *out = j;
  return WGLLM_OK;
}

wgllm_status wgllm_job_step(wgllm_job *j, int *done) {
  if (!j) return WGLLM_ERR_INVALID_ARG;
  if (j->g.prefilling) llm_gen_prefill(&j->g, 0); /* the whole prompt, then its first token's text */
  if (!j->g.done) {
    llm_gen_accept(&j->g, 1);
    llm_gen_collect(&j->g);
  }
  if (done) *done = j->g.done;
  return job_check(j);
}

wgllm_status wgllm_jobs_step(wgllm_job *const *jobs, size_t n) {
  if (!jobs && n) return WGLLM_ERR_INVALID_ARG;
  for (size_t i = 0; i < n; i++)
    if (!jobs[i] || jobs[i]->session->model != jobs[0]->session->model) return WGLLM_ERR_INVALID_ARG;
  if (!n) return WGLLM_OK;
  wgllm_model *m = jobs[0]->session->model;
  /* a job still prefilling takes one chunk of its prompt this call (its last samples its first token), so a long
     prompt holds the others' steps for a chunk at a time; the others take their token and step below, their next
     steps all queued before any is waited for. A job that cannot be batched this call (it decodes alone, the model
     does not batch, or batches of this many failed to record) keeps its pipeline as wgllm_job_step does: up to two
     steps queued, so the GPU runs the next step while the CPU collects this one (one served client, H200: 574 tok/s a
     stream one step at a time, 792 so; PERF.md). A queued step keeps its job out of the next call's batch, once. */
  size_t n_decoding = 0;
  for (size_t i = 0; i < n; i++)
    n_decoding += !jobs[i]->g.done && !jobs[i]->g.prefilling;
  int pipeline = n_decoding == 1 || m->no_batch || (m->batch && llm_batch_refuses(m->batch, (uint32_t)n_decoding));
  for (size_t i = 0; i < n; i++) {
    wgllm_job *j = jobs[i];
    j->decodes = 0;
    if (j->g.done) continue;
    if (j->g.prefilling)
      llm_gen_prefill(&j->g, j->session->s->opt.prefill_chunk);
    else {
      llm_gen_accept(&j->g, pipeline);
      j->decodes = !j->g.done;
    }
  }
  /* up to LLM_BATCH_MAX jobs with nothing queued decode in one batched step */
  llm_session *bs[LLM_BATCH_MAX];
  wgllm_job *bj[LLM_BATCH_MAX];
  uint32_t nb = 0;
  for (size_t i = 0; i < n && nb < LLM_BATCH_MAX; i++)
    if (jobs[i]->decodes && !jobs[i]->session->s->in_flight) {
      bj[nb] = jobs[i];
      bs[nb++] = jobs[i]->session->s;
    }
  if (nb >= 2 && !m->no_batch && !m->batch) {
    char err[1024];
    if (llm_batch_create(m->m, &m->batch, err, sizeof err)) m->no_batch = 1; /* one after another, then */
  }
  int batched = 0;
  if (nb >= 2 && !m->no_batch && llm_batch_accepts(m->batch, bs, nb)) {
    int32_t tokens[LLM_BATCH_MAX];
    wgllm_status st = llm_batch_step(m->batch, bs, nb, tokens);
    if (!st || st != WGLLM_ERR_UNSUPPORTED) { /* unsupported: the model cannot batch; one after another */
      batched = 1;
      for (uint32_t k = 0; k < nb; k++) {
        if (st) {
          snprintf(bs[k]->err, sizeof bs[k]->err, "%s", m->batch->err);
          llm_gen_fail(&bj[k]->g, st);
        } else {
          llm_gen_take(&bj[k]->g, tokens[k]);
          bj[k]->batched++;
        }
      }
    }
  }
  for (size_t i = 0; i < n; i++) { /* the others: queue a step for each that has none, then collect */
    wgllm_job *j = jobs[i];
    int in_batch = 0;
    for (uint32_t k = 0; batched && k < nb; k++)
      in_batch |= bj[k] == j;
    if (!j->decodes || in_batch || j->session->s->in_flight) continue;
    wgllm_status st = llm_session_step_submit(j->session->s);
    if (st)
      llm_gen_fail(&j->g, st);
    else
      j->g.queued++;
  }
  wgllm_status first = WGLLM_OK;
  for (size_t i = 0; i < n; i++) {
    wgllm_job *j = jobs[i];
    int in_batch = 0;
    for (uint32_t k = 0; batched && k < nb; k++)
      in_batch |= bj[k] == j;
    if (j->decodes && !in_batch && !j->g.done) llm_gen_collect(&j->g);
    wgllm_status st = job_check(j);
    if (st && !first) first = st;
  }
  return first;
}

int wgllm_job_done(const wgllm_job *j) { return !j || j->g.done; }
int wgllm_job_prefilling(const wgllm_job *j) { return j && !j->g.done && j->g.prefilling; }

const char *wgllm_job_text(const wgllm_job *j, size_t *len) {
  if (len) *len = j ? j->g.text.emitted : 0;
  return j && j->g.text.buf ? j->g.text.buf : "";
}

void wgllm_job_stats(const wgllm_job *j, wgllm_generate_stats *stats) {
  if (!stats) return;
  memset(stats, 0, sizeof *stats);
  if (!j) return;
  stats->prompt_tokens = j->n_prompt;
  stats->cached_tokens = j->cached;
  stats->generated_tokens = j->g.res.n_generated;
  stats->prefill_seconds = j->g.res.prefill_s;
  stats->decode_seconds = j->g.res.decode_s;
  stats->stop = public_stop(j->g.res.stop);
  stats->stop_reason = llm_stop_reason_name(j->g.res.stop);
  stats->batched_tokens = j->batched;
}

const char *wgllm_job_error(const wgllm_job *j) { return j ? j->err : ""; }

void wgllm_job_free(wgllm_job *j) {
  if (!j) return;
  if (j->session->job == j) j->session->job = NULL;
  llm_gen_free(&j->g);
  free(j);
}

uint32_t wgllm_session_cached_prefix(const wgllm_session *s, const int32_t *ids, size_t n) {
  if (!s || !ids || !n) return 0;
  return llm_session_common_prefix(s->s, ids, n > UINT32_MAX ? UINT32_MAX : (uint32_t)n);
}

/* Generates from ids, reusing the cached prefix: a job run to its end. */
static wgllm_status run_ids(wgllm_session *s, const int32_t *ids, size_t n, const wgllm_generate_params *params,
                            char **reply, wgllm_generate_stats *stats) {
  wgllm_job *j = NULL;
  wgllm_status st = wgllm_job_start(s, ids, n, params, &j);
  if (stats) memset(stats, 0, sizeof *stats);
  if (st) return st;
  int done = 0;
  while (!st && !done)
    st = wgllm_job_step(j, &done);
  wgllm_job_stats(j, stats);
  if (reply && !st) {
    *reply = j->g.text.buf;
    j->g.text.buf = NULL;
  }
  wgllm_job_free(j);
  return st;
}

wgllm_status wgllm_generate(wgllm_session *s, const char *prompt, const wgllm_generate_params *params,
                            wgllm_generate_stats *stats) {
  if (!s || !prompt) return WGLLM_ERR_INVALID_ARG;
  s->err[0] = 0;
  if (!prompt[0]) return fail(s->err, WGLLM_ERR_INVALID_ARG, "empty prompt: give some text to continue");
  if (!s->model->tok) return fail(s->err, WGLLM_ERR_INVALID_ARG, "%s", no_tok);
  int32_t *ids = NULL;
  size_t n = 0;
  wgllm_status st = tok_encode(s->model->tok, prompt, strlen(prompt), 1, 1, &ids, &n, s->err, sizeof s->err);
  if (!st) st = run_ids(s, ids, n, params, NULL, stats);
  free(ids);
  return st;
}

wgllm_status wgllm_chat(wgllm_session *s, const wgllm_message *messages, size_t n, const wgllm_generate_params *params,
                        char **reply, wgllm_generate_stats *stats) {
  if (!s || !messages || !n) return WGLLM_ERR_INVALID_ARG;
  s->err[0] = 0;
  if (!s->model->tok) return fail(s->err, WGLLM_ERR_INVALID_ARG, "%s", no_tok);
  if (!s->model->chat)
    return fail(s->err, WGLLM_ERR_UNSUPPORTED,
                "chat template: %s (a named template, chat_template \"chatml\" say, overrides it)", s->model->chat_err);
  for (size_t i = 0; i < n; i++)
    if (!messages[i].role || !messages[i].content)
      return fail(s->err, WGLLM_ERR_INVALID_ARG, "message %zu has no role or content", i);
  cJSON *msgs = cJSON_CreateArray();
  int ok = msgs != NULL;
  for (size_t i = 0; ok && i < n; i++) {
    cJSON *o = cJSON_CreateObject();
    ok = o && cJSON_AddItemToArray(msgs, o) && cJSON_AddStringToObject(o, "role", messages[i].role) &&
         cJSON_AddStringToObject(o, "content", messages[i].content); /* o belongs to msgs once added */
  }
  if (!ok) {
    cJSON_Delete(msgs);
    return fail(s->err, WGLLM_ERR_OUT_OF_MEMORY, "out of host memory");
  }
  chat_request q = {msgs, NULL, NULL, 1};
  char *text = NULL, err[1024];
  wgllm_status st = chat_renderer_apply(s->model->chat, &q, NULL, &text, err, sizeof err);
  cJSON_Delete(msgs);
  if (st) return fail(s->err, st, "chat template: %s", err);
  int32_t *ids = NULL;
  size_t nid = 0;
  /* templates spell BOS out as text; without a template the tokenizer adds it */
  st = tok_encode(s->model->tok, text, strlen(text), chat_renderer_adds_bos(s->model->chat), 1, &ids, &nid, s->err,
                  sizeof s->err);
  free(text);
  if (!st) st = run_ids(s, ids, nid, params, reply, stats);
  free(ids);
  return st;
}

wgllm_status wgllm_chat_prompt(wgllm_model *m, const char *request_json, size_t len, int32_t **ids, size_t *n,
                               char **text) {
  if (!m) return WGLLM_ERR_INVALID_ARG;
  m->err[0] = 0;
  if (!request_json || !ids || !n) return fail(m->err, WGLLM_ERR_INVALID_ARG, "wgllm_chat_prompt: a NULL argument");
  *ids = NULL;
  *n = 0;
  if (text) *text = NULL;
  if (!m->tok) return fail(m->err, WGLLM_ERR_INVALID_ARG, "%s", no_tok);
  if (!m->chat)
    return fail(m->err, WGLLM_ERR_UNSUPPORTED,
                "chat template: %s (a named template, chat_template \"chatml\" say, overrides it)", m->chat_err);
  cJSON *req = cJSON_ParseWithLength(request_json, len);
  if (!req) return fail(m->err, WGLLM_ERR_INVALID_ARG, "the request is not valid JSON");
  wgllm_status st = WGLLM_OK;
  const cJSON *msgs = cJSON_GetObjectItemCaseSensitive(req, "messages");
  const cJSON *tools = cJSON_GetObjectItemCaseSensitive(req, "tools");
  const cJSON *kwargs = cJSON_GetObjectItemCaseSensitive(req, "chat_template_kwargs");
  if (!cJSON_IsObject(req))
    st = fail(m->err, WGLLM_ERR_INVALID_ARG, "the request is not a JSON object");
  else if (!cJSON_IsArray(msgs) || !cJSON_GetArraySize(msgs))
    st = fail(m->err, WGLLM_ERR_INVALID_ARG, "'messages' must be a non-empty array");
  else if (tools && !cJSON_IsNull(tools) && !cJSON_IsArray(tools))
    st = fail(m->err, WGLLM_ERR_INVALID_ARG, "'tools' must be an array");
  else if (kwargs && !cJSON_IsNull(kwargs) && !cJSON_IsObject(kwargs))
    st = fail(m->err, WGLLM_ERR_INVALID_ARG, "'chat_template_kwargs' must be an object");
  char *prompt = NULL;
  if (!st) {
    chat_request q = {msgs, cJSON_IsArray(tools) ? tools : NULL, cJSON_IsObject(kwargs) ? kwargs : NULL, 1};
    char err[1024];
    st = chat_renderer_apply(m->chat, &q, NULL, &prompt, err, sizeof err);
    if (st) fail(m->err, st, "chat template: %s", err);
  }
  cJSON_Delete(req);
  if (!st)
    st = tok_encode(m->tok, prompt, strlen(prompt), chat_renderer_adds_bos(m->chat), 1, ids, n, m->err, sizeof m->err);
  if (!st && text)
    *text = prompt;
  else
    free(prompt);
  return st;
}

/* ---------- vocabularies ---------- */
wgllm_status wgllm_vocab_load(const char *path, wgllm_vocab **out) {
  g_last_error[0] = 0;
  if (!out || !path) return fail(g_last_error, WGLLM_ERR_INVALID_ARG, "wgllm_vocab_load: path or out is NULL");
  *out = NULL;
  wgllm_vocab *v = calloc(1, sizeof *v);
  if (!v) return fail(g_last_error, WGLLM_ERR_OUT_OF_MEMORY, "out of host memory");
  char err[1024];
  wgllm_status st = llm_load_tokenizer(path, &v->tok, NULL, err, sizeof err);
  if (st) {
    free(v);
    return fail(g_last_error, st, "%s", err);
  }
  v->owned = 1;
  *out = v;
  return WGLLM_OK;
}

void wgllm_vocab_free(wgllm_vocab *v) {
  if (!v || !v->owned) return;
  tok_free(v->tok);
  free(v);
}

const char *wgllm_vocab_error(const wgllm_vocab *v) { return v ? v->err : ""; }
const wgllm_vocab *wgllm_model_vocab(const wgllm_model *m) { return m ? &m->vocab : NULL; }
size_t wgllm_vocab_n_tokens(const wgllm_vocab *v) { return v ? tok_vocab_size(v->tok) : 0; }
int32_t wgllm_vocab_bos(const wgllm_vocab *v) { return v ? tok_bos(v->tok) : -1; }
int32_t wgllm_vocab_eos(const wgllm_vocab *v) { return v ? tok_eos(v->tok) : -1; }
int wgllm_vocab_is_special(const wgllm_vocab *v, int32_t id) { return v && tok_is_special(v->tok, id); }

const char *wgllm_vocab_piece(const wgllm_vocab *v, int32_t id, size_t *len) {
  if (!v || id < 0 || (size_t)id >= tok_vocab_size(v->tok)) return NULL;
  size_t l = 0;
  const char *p = tok_piece(v->tok, id, &l);
  if (len) *len = l;
  return p;
}

wgllm_status wgllm_vocab_tokenize(const wgllm_vocab *v, const char *text, size_t len, int add_special,
                                  int parse_special, int32_t *ids, size_t cap, size_t *n_ids) {
  if (!v || !text || !n_ids || (cap && !ids)) return WGLLM_ERR_INVALID_ARG;
  if (!v->tok) return fail(((wgllm_vocab *)v)->err, WGLLM_ERR_INVALID_ARG, "%s", no_tok);
  int32_t *t = NULL;
  size_t n = 0;
  wgllm_status st =
      tok_encode(v->tok, text, len, add_special, parse_special, &t, &n, ((wgllm_vocab *)v)->err, sizeof v->err);
  if (st) return st;
  if (cap && n) memcpy(ids, t, (n < cap ? n : cap) * sizeof *t);
  *n_ids = n;
  free(t);
  return WGLLM_OK;
}

wgllm_status wgllm_vocab_detokenize(const wgllm_vocab *v, const int32_t *ids, size_t n, char **text, size_t *len) {
  if (!v || !text || (n && !ids)) return WGLLM_ERR_INVALID_ARG;
  if (!v->tok) return fail(((wgllm_vocab *)v)->err, WGLLM_ERR_INVALID_ARG, "%s", no_tok);
  size_t l = 0;
  wgllm_status st = tok_decode(v->tok, ids, n, 0, text, &l, ((wgllm_vocab *)v)->err, sizeof v->err);
  if (len) *len = l;
  return st;
}
