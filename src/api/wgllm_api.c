/* The public C API (include/wgllm.h) over the internal layers: a model handle owns the GPU context, the
   weights, the tokenizer and the chat template; a session handle owns the KV cache and sampler state; a job handle
   one generation (src/runtime/jobs.h). These calls check their arguments, convert handles and report statuses and
   messages; the work is the runtime's. The chat calls are in wgllm_chat.c, the vocabularies in wgllm_vocab.c. */
#include "api_internal.h"
#include "tokenizer_load.h"
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* What WGLLM_PRECISION_DEFAULT resolves to: exact. Measured on the H200 against llama.cpp on the same files
   (docs/PERF.md, "Precision"): fast's logit error is llama.cpp's CPU backend's but 5-20x its Vulkan backend's, and
   the rule was fast only at or below llama.cpp's own */
#define WGLLM_DEFAULT_FAST 0

void wgllm_model_free(wgllm_model *m) {
  if (!m) return;
  llm_job_stepper_free(&m->stepper);
  if (!llm_kv_pool_free(m->pool)) api_log(WGLLM_LOG_WARN, "wgllm_model_free: sessions still on the KV pool");
  llm_model_free(m->m);
  grammar_vocab_free(m->gvocab);
  pthread_mutex_destroy(&m->gvocab_lock);
  chat_renderer_free(m->chat);
  tok_free(m->tok);
  gpu_destroy(m->gpu);
  free(m);
}

wgllm_status wgllm_model_create(const char *path, const wgllm_model_params *params, wgllm_model **out) {
  llm_err_clear(api_last_error());
  if (!out) return llm_err_set(api_last_error(), WGLLM_ERR_INVALID_ARG, "wgllm_model_create: out is NULL");
  *out = NULL;
  if (!path) return llm_err_set(api_last_error(), WGLLM_ERR_INVALID_ARG, "wgllm_model_create: path is NULL");
  wgllm_model_params p = params ? *params : wgllm_model_default_params();
  llm_load_options lo = {0};
  lo.progress = p.progress;
  lo.progress_user = p.progress_user;
  lo.max_binding = p.max_binding_bytes;
  llm_err *err = api_last_error();
  if ((unsigned)p.weights > WGLLM_WEIGHTS_Q4)
    return llm_err_set(api_last_error(), WGLLM_ERR_INVALID_ARG,
                       "wgllm_model_create: weights %d is not a wgllm_weight_type", (int)p.weights);
  if (p.weights == WGLLM_WEIGHTS_Q4 && !p.q4_group) p.q4_group = 32;
  if (p.weights == WGLLM_WEIGHTS_Q4 && p.q4_group != 32 && p.q4_group != 64 && p.q4_group != 128)
    return llm_err_set(api_last_error(), WGLLM_ERR_INVALID_ARG, "the q4 group must be 32, 64 or 128 (got %u)",
                       p.q4_group);
  lo.weights.q4 = p.weights == WGLLM_WEIGHTS_Q4;
  lo.weights.group = lo.weights.q4 ? p.q4_group : 0;
  wgllm_status st;
  if (p.chat_template && chat_template_from_name(p.chat_template) < 0)
    return llm_err_set(api_last_error(), WGLLM_ERR_INVALID_ARG,
                       "chat template \"%s\" is unknown (llama3, chatml, gemma, llama2, none)", p.chat_template);
  wgllm_model *m = calloc(1, sizeof *m);
  if (!m) return llm_err_set(api_last_error(), WGLLM_ERR_OUT_OF_MEMORY, "out of host memory");
  pthread_mutex_init(&m->gvocab_lock, NULL);
  m->stepper.no_batch = p.no_batch;
  /* the model file is opened and parsed once, for its tokenizer (GGUF) and its weights */
  wt_store *store = NULL;
  st = llm_open_store(path, &store, err);
  if (st) {
    wgllm_model_free(m);
    return api_fail_at(st, path, err);
  }
  char *jinja = NULL;
  st = p.no_tokenizer ? WGLLM_OK : llm_load_tokenizer_store(path, store, &m->tok, &jinja, err);
  if (st) {
    wt_store_free(store);
    wgllm_model_free(m);
    llm_err_prefix(err, "%s: tokenizer", path);
    return st;
  }
  m->vocab.tok = m->tok;
  /* the model's own template runs as it is; one that does not parse makes every chat call fail with why (the model
     still loads: generation from text and ids does not use it; a named template overrides it) */
  if (!st && p.chat_template_text && !p.chat_template) { /* the caller's template instead of the model's */
    free(jinja);
    if (!(jinja = strdup(p.chat_template_text))) st = llm_err_set(err, WGLLM_ERR_OUT_OF_MEMORY, "out of host memory");
    if (st) {
      wt_store_free(store);
      wgllm_model_free(m);
      return st;
    }
  }
  st = chat_renderer_create(p.chat_template, jinja, m->tok, &m->chat, err);
  if (!st) { /* the format of tool calls: the named template's, or what the model's own template teaches */
    const char *rn = chat_renderer_name(m->chat);
    int own = !strcmp(rn, "jinja");
    m->tool_format = chat_tool_format_detect(own ? jinja : NULL, own ? -1 : chat_template_from_name(rn));
  }
  free(jinja);
  if (st && st != WGLLM_ERR_OUT_OF_MEMORY && p.chat_template_text && !p.chat_template) { /* the caller's: refused */
    wt_store_free(store);
    wgllm_model_free(m);
    llm_err_prefix(err, "the chat template given (chat_template_text)");
    return st;
  }
  if (st == WGLLM_ERR_OUT_OF_MEMORY) {
    wt_store_free(store);
    wgllm_model_free(m);
    llm_err_prefix(err, "%s: chat template", path);
    return st;
  }
  if (st) { /* the model loads without it: the message moves to the model, the thread's record is emptied */
    m->chat = NULL;
    m->chat_err = *err;
    llm_err_clear(err);
    api_log(WGLLM_LOG_WARN,
            "%s: its chat template cannot run (%s): chat calls will fail; a named template "
            "(chat_template \"chatml\", say) overrides it",
            path, m->chat_err.msg);
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
      return llm_err_set(api_last_error(), WGLLM_ERR_INVALID_ARG,
                         "WGLLM_GPU_TIMEOUT_MS \"%s\" is not a positive number of ms", te);
    }
    go.wait_timeout_ms = (uint32_t)v;
  }
  /* for tests only (docs/TESTING.md): WGLLM_TEST_DEVICE_LOSS_STEP=N loses the device at the Nth job step, as a
     driver reset would (the server's device-loss handling is tested through it) */
  const char *tl = getenv("WGLLM_TEST_DEVICE_LOSS_STEP");
  if (tl && *tl) {
    char *end;
    unsigned long long v = strtoull(tl, &end, 10);
    if (*end || v == 0) {
      wgllm_model_free(m);
      wt_store_free(store);
      return llm_err_set(api_last_error(), WGLLM_ERR_INVALID_ARG,
                         "WGLLM_TEST_DEVICE_LOSS_STEP \"%s\" is not a positive number of steps", tl);
    }
    m->lose_at_step = v;
  }
  st = gpu_create(&go, &m->gpu, err);
  if (!st) st = llm_model_load_store(m->gpu, path, store, &lo, &m->m, err);
  wt_store_free(store);
  if (st) {
    wgllm_model_free(m);
    return api_fail_at(st, path, err);
  }
  m->stepper.m = m->m;
  if (tok_vocab_size(m->tok) > m->m->hp.n_vocab) {
    st = llm_err_set(api_last_error(), WGLLM_ERR_FORMAT,
                     "%s: the tokenizer has %zu tokens but the model's vocabulary is %u", path, tok_vocab_size(m->tok),
                     m->m->hp.n_vocab);
    wgllm_model_free(m);
    return st;
  }
  api_log(WGLLM_LOG_INFO, "%s: %s on %s (%s, %s), weights %s, %.1f MB on the GPU", path, m->m->hp.arch_name,
          m->gpu->adapter_name, m->gpu->backend, m->gpu->adapter_type, m->m->weights_desc, m->m->weight_bytes / 1e6);
  if (m->gpu->notices[0]) api_log(WGLLM_LOG_INFO, "%s: features: %s", path, m->gpu->notices);
  llm_err_clear(err); /* what a step that went on anyway wrote (a call that succeeds leaves no last error) */
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

wgllm_status wgllm_model_check_draft(wgllm_model *m, const wgllm_model *draft) {
  if (!m || !draft) return WGLLM_ERR_INVALID_ARG;
  llm_err_clear(&m->err);
  char why[200];
  if (!m->tok || !draft->tok)
    return llm_err_set(&m->err, WGLLM_ERR_INVALID_ARG,
                       "the draft model cannot propose tokens: %s was loaded without its tokenizer",
                       m->tok ? "the draft model" : "the model");
  if (!tok_same(m->tok, draft->tok, why, sizeof why))
    return llm_err_set(&m->err, WGLLM_ERR_INVALID_ARG,
                       "the draft model's tokenizer is not the model's (%s): it cannot propose tokens for it", why);
  return WGLLM_OK;
}

wgllm_status wgllm_model_can_speculate(wgllm_model *m) {
  if (!m) return WGLLM_ERR_INVALID_ARG;
  llm_err_clear(&m->err);
  char why[200];
  gpu_recorder *rec = gpu_recorder_create(m->gpu, 0);
  if (!rec) return llm_err_set(&m->err, WGLLM_ERR_OUT_OF_MEMORY, "out of host memory");
  int ok = llm_batch_forward_ok(rec, m->m, llm_batch_rows(2), why, sizeof why);
  gpu_recorder_free(rec);
  return ok ? WGLLM_OK
            : llm_err_set(&m->err, WGLLM_ERR_UNSUPPORTED, "speculative decoding needs the batched decode pass: %s",
                          why);
}

const char api_no_tokenizer[] = "the model was loaded without its tokenizer (no_tokenizer)";

wgllm_status wgllm_tokenize(wgllm_model *m, const char *text, size_t len, int add_special, int32_t *ids, size_t cap,
                            size_t *n_ids) {
  if (!m || !text || !n_ids || (cap && !ids)) return WGLLM_ERR_INVALID_ARG;
  if (!m->tok) return llm_err_set(&m->err, WGLLM_ERR_INVALID_ARG, "%s", api_no_tokenizer);
  int32_t *v = NULL;
  size_t n = 0;
  wgllm_status st = tok_encode(m->tok, text, len, add_special, 1, &v, &n, &m->err);
  if (st) return st;
  if (cap && n) memcpy(ids, v, (n < cap ? n : cap) * sizeof *v);
  *n_ids = n;
  free(v);
  return WGLLM_OK;
}

wgllm_status wgllm_detokenize(wgllm_model *m, const int32_t *ids, size_t n, char **text) {
  if (!m || !text || (n && !ids)) return WGLLM_ERR_INVALID_ARG;
  if (!m->tok) return llm_err_set(&m->err, WGLLM_ERR_INVALID_ARG, "%s", api_no_tokenizer);
  size_t len;
  return tok_decode(m->tok, ids, n, 0, text, &len, &m->err);
}

static void log_session(int warning, const char *msg) { api_log(warning ? WGLLM_LOG_WARN : WGLLM_LOG_INFO, "%s", msg); }

wgllm_status wgllm_session_create(wgllm_model *m, const wgllm_session_params *params, wgllm_session **out) {
  llm_err_clear(api_last_error());
  if (!m || !out)
    return llm_err_set(api_last_error(), WGLLM_ERR_INVALID_ARG, "wgllm_session_create: model or out is NULL");
  *out = NULL;
  wgllm_session_params p = params ? *params : wgllm_session_default_params();
  wgllm_session *s = calloc(1, sizeof *s);
  if (!s) return llm_err_set(api_last_error(), WGLLM_ERR_OUT_OF_MEMORY, "out of host memory");
  s->model = m;
  if ((unsigned)p.kv_type > WGLLM_KV_F16 || (unsigned)p.decode_path > WGLLM_DECODE_UNFUSED ||
      (unsigned)p.attn_grid > WGLLM_ATTN_GRID_INDIRECT || (unsigned)p.precision > WGLLM_PRECISION_FAST) {
    free(s);
    return llm_err_set(api_last_error(), WGLLM_ERR_INVALID_ARG,
                       "wgllm_session_create: kv_type %d, decode_path %d, attn_grid %d or precision %d "
                       "is not one of the enum's values",
                       (int)p.kv_type, (int)p.decode_path, (int)p.attn_grid, (int)p.precision);
  }
  llm_session_options so = {0};
  so.ctx = p.context;
  so.kv_f16 = p.kv_type == WGLLM_KV_F16;
  if (p.kv_pool) {
    if (!m->pool) {
      free(s);
      return llm_err_set(api_last_error(), WGLLM_ERR_INVALID_ARG,
                         "wgllm_session_create: kv_pool is set and the model has no KV pool (wgllm_model_kv_pool)");
    }
    so.pool = m->pool;
    so.kv_f16 = m->pool->g.f16;
    if (!so.ctx) so.ctx = m->pool->g.max_ctx;
  }
  so.unfused = p.decode_path == WGLLM_DECODE_UNFUSED;
  so.attn_grid = p.attn_grid == WGLLM_ATTN_GRID_INDIRECT ? LLM_ATTN_GRID_INDIRECT : LLM_ATTN_GRID_WORST;
  so.on_prefill = p.on_prefill;
  so.prefill_user = p.prefill_user;
  so.prefill_chunk = p.prefill_chunk;
  so.fast = p.precision == WGLLM_PRECISION_FAST || (p.precision == WGLLM_PRECISION_DEFAULT && WGLLM_DEFAULT_FAST);
  wgllm_status st = llm_session_create_fitting(m->m, &so, &s->s, log_session, api_last_error());
  if (st) {
    free(s);
    return st;
  }
  *out = s;
  return WGLLM_OK;
}

void wgllm_session_free(wgllm_session *s) {
  if (!s) return;
  llm_job_stepper_forget(&s->model->stepper, s->s); /* its recording reads this session's buffers */
  llm_session_free(s->s);
  llm_session_free(s->draft);
  free(s);
}

/* A batched step in flight holds the session's next token: collected before the session is fed, rewound or reset. */
static void settle(wgllm_session *s) {
  if (s->s->batch_queued) llm_job_stepper_settle(&s->model->stepper, NULL);
}

void wgllm_session_reset(wgllm_session *s) {
  if (!s) return;
  settle(s);
  llm_session_reset(s->s);
}

uint32_t wgllm_session_n_past(const wgllm_session *s) { return s ? s->s->n_past : 0; }

uint32_t wgllm_session_context(const wgllm_session *s) { return s ? s->s->opt.ctx : 0; }

uint64_t wgllm_session_kv_bytes(const wgllm_session *s) { return s ? s->s->kv.bytes : 0; }

void wgllm_session_rewind(wgllm_session *s, uint32_t n) {
  if (!s) return;
  settle(s);
  llm_session_rewind(s->s, n);
}

wgllm_status wgllm_session_prefill(wgllm_session *s, const int32_t *ids, size_t n, float *logits, int all_rows) {
  if (!s) return WGLLM_ERR_INVALID_ARG;
  llm_err_clear(&s->err);
  if (!ids || !n || n > UINT32_MAX)
    return llm_err_set(&s->err, WGLLM_ERR_INVALID_ARG, "wgllm_session_prefill: %s", ids ? "no tokens" : "ids is NULL");
  settle(s);
  if (s->s->has_sampler) llm_session_step_drain(s->s); /* generation may have left steps queued */
  wgllm_status st = llm_session_prefill(s->s, ids, (uint32_t)n, logits, all_rows);
  if (st) llm_err_set(&s->err, st, "%s", s->s->err.msg);
  return st;
}

wgllm_status wgllm_session_decode(wgllm_session *s, int32_t id, float *logits) {
  if (!s) return WGLLM_ERR_INVALID_ARG;
  llm_err_clear(&s->err);
  if (s->s->has_sampler)
    return llm_err_set(&s->err, WGLLM_ERR_INVALID_ARG,
                       "wgllm_session_decode: this session generated text (its step samples); use a new session");
  wgllm_status st = llm_session_decode(s->s, id, logits);
  if (st) llm_err_set(&s->err, st, "%s", s->s->err.msg);
  return st;
}

/* ---------- jobs: generations stepped by the caller ---------- */
static wgllm_stop public_stop(llm_stop_reason r) {
  static const wgllm_stop stops[] = {
      [LLM_STOP_NONE] = WGLLM_STOP_NONE,         [LLM_STOP_EOG] = WGLLM_STOP_END_OF_GENERATION,
      [LLM_STOP_STRING] = WGLLM_STOP_STRING,     [LLM_STOP_MAX_TOKENS] = WGLLM_STOP_MAX_TOKENS,
      [LLM_STOP_CALLBACK] = WGLLM_STOP_CALLBACK, [LLM_STOP_CONTEXT] = WGLLM_STOP_CONTEXT,
      [LLM_STOP_GRAMMAR] = WGLLM_STOP_GRAMMAR};
  return (unsigned)r < sizeof stops / sizeof stops[0] ? stops[r] : WGLLM_STOP_NONE;
}

/* Copies the session's message to the job (and the session handle) once the job failed. */
static wgllm_status job_check(wgllm_job *j) {
  wgllm_status st = j->job.g.st;
  if (st && !j->err.msg[0]) {
    llm_err_set(&j->err, st, "%s", j->session->s->err.msg);
    j->session->err = j->err;
  }
  return st;
}

/* s's session of the draft model dm (checked against s's model, made on first use, with s's context, KV type and
   precision, its own cache): kept while jobs name the same draft model. */
static wgllm_status draft_session(wgllm_session *s, wgllm_model *dm) {
  if (s->draft && s->draft_model == dm) return WGLLM_OK;
  llm_session_free(s->draft);
  s->draft = NULL;
  s->draft_model = NULL;
  wgllm_status st = wgllm_model_check_draft(s->model, dm);
  if (st) return llm_err_set(&s->err, st, "%s", s->model->err.msg);
  llm_session_options so = {.ctx = s->s->opt.ctx, .kv_f16 = s->s->opt.kv_f16, .fast = s->s->opt.fast};
  llm_err e = {0};
  st = llm_session_create(dm->m, &so, &s->draft, &e);
  if (st) return llm_err_set(&s->err, st, "the draft model's session: %s", e.msg);
  s->draft_model = dm;
  return WGLLM_OK;
}

wgllm_status wgllm_job_start(wgllm_session *s, const int32_t *ids, size_t n, const wgllm_generate_params *params,
                             wgllm_job **out) {
  if (!s || !out) return WGLLM_ERR_INVALID_ARG;
  *out = NULL;
  llm_err_clear(&s->err);
  if (!ids && n) return llm_err_set(&s->err, WGLLM_ERR_INVALID_ARG, "wgllm_job_start: ids is NULL");
  wgllm_generate_params p = params ? *params : wgllm_generate_default_params();
  llm_gen_params gp;
  wgllm_status st = llm_gen_params_from_public(&p, &gp, &s->err);
  if (st) return st;
  if (s->job && !s->job->job.g.done)
    return llm_err_set(&s->err, WGLLM_ERR_INVALID_ARG,
                       "wgllm_job_start: the session has a job that is not done (free it or run it to its end first)");
  settle(s);
  if (p.grammar) {
    if (p.grammar->model != s->model)
      return llm_err_set(&s->err, WGLLM_ERR_INVALID_ARG, "wgllm_job_start: the grammar was made for another model");
    gp.gcache = p.grammar->cache;
  }
  if (p.draft_model) {
    st = draft_session(s, p.draft_model);
    if (st) return st;
    gp.draft = s->draft;
  }
  wgllm_job *j = calloc(1, sizeof *j);
  if (!j) return llm_err_set(&s->err, WGLLM_ERR_OUT_OF_MEMORY, "out of host memory");
  j->session = s;
  st = llm_job_start(&j->job, s->s, s->model->tok, ids, n, &gp, &s->err);
  if (st) {
    free(j);
    return st;
  }
  s->job = j;
  *out = j;
  return WGLLM_OK;
}

_Static_assert(WGLLM_TOP_LOGPROBS_MAX == OP_LOGPROBS_MAX, "the API's top logprobs are op_logprobs'");

size_t wgllm_job_logprobs(const wgllm_job *j, size_t first, wgllm_token_logprobs *out, size_t n) {
  const llm_gen_result *r = j ? &j->job.g.res : NULL;
  if (!r || !r->logprobs || !out || first >= r->n_generated) return 0;
  size_t k = 0;
  for (; k < n && first + k < r->n_generated; k++) {
    const uint32_t *w = r->logprobs[first + k];
    wgllm_token_logprobs *o = &out[k];
    o->token = (int32_t)w[0];
    memcpy(&o->logprob, &w[1], 4);
    o->n_top = w[2] < WGLLM_TOP_LOGPROBS_MAX ? w[2] : WGLLM_TOP_LOGPROBS_MAX;
    for (uint32_t q = 0; q < o->n_top; q++) {
      o->top_tokens[q] = (int32_t)w[3 + 2 * q];
      memcpy(&o->top_logprobs[q], &w[4 + 2 * q], 4);
    }
  }
  return k;
}

/* WGLLM_TEST_DEVICE_LOSS_STEP's loss, at the step it names */
static void test_device_loss(wgllm_model *m) {
  if (m->lose_at_step && ++m->steps == m->lose_at_step)
    gpu_force_loss(m->gpu, "forced by WGLLM_TEST_DEVICE_LOSS_STEP (a test)");
}

wgllm_status wgllm_job_step(wgllm_job *j, int *done) {
  if (!j) return WGLLM_ERR_INVALID_ARG;
  test_device_loss(j->session->model);
  llm_job_step(&j->job, done);
  return job_check(j);
}

wgllm_status wgllm_jobs_step(wgllm_job *const *jobs, size_t n) {
  if (!jobs && n) return WGLLM_ERR_INVALID_ARG;
  for (size_t i = 0; i < n; i++)
    if (!jobs[i] || jobs[i]->session->model != jobs[0]->session->model) return WGLLM_ERR_INVALID_ARG;
  if (!n) return WGLLM_OK;
  test_device_loss(jobs[0]->session->model);
  llm_job *on_stack[64], **js = n <= 64 ? on_stack : malloc(n * sizeof *js); /* the handles' runtime jobs */
  if (!js) return WGLLM_ERR_OUT_OF_MEMORY;
  for (size_t i = 0; i < n; i++)
    js[i] = &jobs[i]->job;
  llm_jobs_step(&jobs[0]->session->model->stepper, js, n);
  if (js != on_stack) free(js);
  wgllm_status first = WGLLM_OK;
  for (size_t i = 0; i < n; i++) {
    wgllm_status st = job_check(jobs[i]);
    if (st && !first) first = st;
  }
  return first;
}

int wgllm_job_done(const wgllm_job *j) { return !j || j->job.g.done; }
int wgllm_job_prefilling(const wgllm_job *j) { return j && !j->job.g.done && j->job.g.prefilling; }

const char *wgllm_job_text(const wgllm_job *j, size_t *len) {
  if (len) *len = j ? j->job.g.text.emitted : 0;
  return j && j->job.g.text.buf ? j->job.g.text.buf : "";
}

void wgllm_job_stats(const wgllm_job *j, wgllm_generate_stats *stats) {
  if (!stats) return;
  memset(stats, 0, sizeof *stats);
  if (!j) return;
  const llm_job *job = &j->job;
  stats->prompt_tokens = job->n_prompt;
  stats->cached_tokens = job->cached;
  stats->preemptions = job->preemptions;
  stats->generated_tokens = job->g.res.n_generated;
  stats->prefill_seconds = job->g.res.prefill_s;
  stats->decode_seconds = job->g.res.decode_s;
  stats->stop = public_stop(job->g.res.stop);
  stats->stop_reason = llm_stop_reason_name(job->g.res.stop);
  stats->batched_tokens = job->batched;
  stats->spec_steps = job->g.res.spec_steps;
  stats->spec_drafted = job->g.res.spec_drafted;
  stats->spec_accepted = job->g.res.spec_accepted;
  stats->context_shifts = job->g.res.context_shifts;
}

const char *wgllm_job_error(const wgllm_job *j) { return j ? j->err.msg : ""; }

void wgllm_job_free(wgllm_job *j) {
  if (!j) return;
  if (j->session->job == j) j->session->job = NULL;
  llm_job_release(&j->job);
  free(j);
}

uint32_t wgllm_session_cached_prefix(const wgllm_session *s, const int32_t *ids, size_t n) {
  if (!s || !ids || !n) return 0;
  return llm_session_common_prefix(s->s, ids, n > UINT32_MAX ? UINT32_MAX : (uint32_t)n);
}

wgllm_status api_run_ids(wgllm_session *s, const int32_t *ids, size_t n, const wgllm_generate_params *params,
                         char **reply, wgllm_generate_stats *stats) {
  wgllm_job *j = NULL;
  wgllm_status st = wgllm_job_start(s, ids, n, params, &j);
  if (stats) memset(stats, 0, sizeof *stats);
  if (st) return st;
  int done = 0;
  while (!st && !done)
    st = wgllm_job_step(j, &done);
  wgllm_job_stats(j, stats);
  if (reply && !st) *reply = llm_job_take_text(&j->job);
  wgllm_job_free(j);
  return st;
}

wgllm_status wgllm_generate(wgllm_session *s, const char *prompt, const wgllm_generate_params *params,
                            wgllm_generate_stats *stats) {
  return wgllm_generate_n(s, prompt, prompt ? strlen(prompt) : 0, params, stats);
}

wgllm_status wgllm_generate_n(wgllm_session *s, const char *prompt, size_t len, const wgllm_generate_params *params,
                              wgllm_generate_stats *stats) {
  if (!s || !prompt) return WGLLM_ERR_INVALID_ARG;
  llm_err_clear(&s->err);
  if (!len) return llm_err_set(&s->err, WGLLM_ERR_INVALID_ARG, "empty prompt: give some text to continue");
  if (!s->model->tok) return llm_err_set(&s->err, WGLLM_ERR_INVALID_ARG, "%s", api_no_tokenizer);
  int32_t *ids = NULL;
  size_t n = 0;
  wgllm_status st = tok_encode(s->model->tok, prompt, len, 1, 1, &ids, &n, &s->err);
  if (!st) st = api_run_ids(s, ids, n, params, NULL, stats);
  free(ids);
  return st;
}

wgllm_status wgllm_model_kv_pool(wgllm_model *m, const wgllm_kv_pool_params *params) {
  llm_err_clear(api_last_error());
  if (!m || !params) return llm_err_set(api_last_error(), WGLLM_ERR_INVALID_ARG, "wgllm_model_kv_pool: NULL argument");
  llm_err_clear(&m->err);
  if ((unsigned)params->kv_type > WGLLM_KV_F16)
    return llm_err_set(&m->err, WGLLM_ERR_INVALID_ARG, "wgllm_model_kv_pool: kv_type %d is not a wgllm_kv_type",
                       (int)params->kv_type);
  if (m->pool && m->pool->sessions)
    return llm_err_set(&m->err, WGLLM_ERR_INVALID_ARG, "wgllm_model_kv_pool: %u sessions are on the model's pool",
                       m->pool->sessions);
  const llm_hparams *hp = &m->m->hp;
  uint32_t ctx = params->max_context;
  if (!ctx) ctx = hp->train_ctx && hp->train_ctx < LLM_DEFAULT_CTX ? hp->train_ctx : LLM_DEFAULT_CTX;
  int f16 = params->kv_type == WGLLM_KV_F16;
  uint32_t tokens = params->tokens;
  if (!tokens) {
    uint64_t bytes = params->bytes;
    if (!bytes) {
      char why[320];
      bytes = gpu_memory_left(m->gpu, why, sizeof why) / 10 * 7;
      /* at most 64 contexts, and what one layer's pool in one storage binding holds */
      uint64_t cap = (uint64_t)ctx * 64, bind = m->gpu->limits.maxStorageBufferBindingSize;
      if (m->m->max_binding && m->m->max_binding < bind) bind = m->m->max_binding;
      for (uint32_t l = 0; l < hp->n_layer; l++) {
        uint64_t per = (uint64_t)llm_layer_n_head_kv(hp, l) * llm_layer_head_dim(hp, l) * (f16 ? 2 : 4);
        if (llm_layer_owns_kv(hp, l) && per && bind / per < cap) cap = bind / per / LLM_KV_BLOCK * LLM_KV_BLOCK;
      }
      uint32_t fit = llm_kv_pool_tokens_in(m->m, bytes, ctx, f16);
      tokens = fit < cap ? fit : (uint32_t)cap;
    } else
      tokens = llm_kv_pool_tokens_in(m->m, bytes, ctx, f16);
    if (!tokens)
      return llm_err_set(&m->err, WGLLM_ERR_OUT_OF_MEMORY, "wgllm_model_kv_pool: %llu bytes hold no block",
                         (unsigned long long)bytes);
  }
  llm_kv_pool *pool = NULL;
  wgllm_status st = llm_kv_pool_create(m->m, tokens, ctx, f16, &pool, &m->err);
  if (st) return st;
  llm_job_stepper_free(&m->stepper); /* its step's table was made for the old pool */
  llm_kv_pool_free(m->pool);
  m->pool = pool;
  char a[32];
  api_log(WGLLM_LOG_INFO, "KV pool: %u tokens (%u blocks of %u) for sessions of up to %u positions, %s %s",
          pool->g.n_blocks * pool->g.block, pool->g.n_blocks, pool->g.block, ctx,
          gpu_size_str(pool->g.bytes, a, sizeof a), f16 ? "f16" : "f32");
  return WGLLM_OK;
}

wgllm_status wgllm_model_kv_pool_stats(const wgllm_model *m, wgllm_kv_pool_stats *stats) {
  if (!m || !stats) return WGLLM_ERR_INVALID_ARG;
  memset(stats, 0, sizeof *stats);
  if (!m->pool) return WGLLM_ERR_INVALID_ARG;
  const llm_kv_pool *p = m->pool;
  stats->block_tokens = p->g.block;
  stats->blocks = p->g.n_blocks;
  stats->available_blocks = kv_blocks_available(p->blocks);
  stats->cached_blocks = kv_blocks_cached(p->blocks);
  stats->max_context = p->g.max_ctx;
  stats->sessions = p->sessions;
  stats->bytes = p->g.bytes;
  return WGLLM_OK;
}
