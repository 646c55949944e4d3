/* The scheduler of `wgllm serve`: the only caller of the session and job functions, on a thread of its own
   (natively) or stepped by its caller's event loop (serve_sched_step: the Node server on the wasm build). A task's
   prompt is rendered and tokenized before it is submitted, by serve_sched_prepare on the submitter's thread (the
   model's text calls under text_mu, never the scheduler's lock), so a long prompt never holds a tick. Each tick it
   frees the jobs of cancelled tasks, prepares the prompts of tasks submitted unprepared, starts waiting tasks on idle
   sessions (the one whose cache shares the longest prefix with the prompt, else the least recently used;
   wgllm_job_start prefills and samples the first token), and steps every running job by one token with one
   wgllm_jobs_step call, appending the text each emits to its task. A step that finds the device lost fails every
   task with it and makes the model and its sessions again (device_lost; docs/SERVING.md, "A lost device"). */
#include "serve_sched.h"
#include "json_shape.h"
#include "serve_embed.h"
#include <cjson/cJSON.h>
#include <errno.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

typedef struct sched_slot {
  wgllm_session *session;
  serve_task *task; /* running on it, or NULL when idle */
  uint64_t last_used;
} sched_slot;

/* A compiled constraint, shared by the requests that give the same text (and kind) and by the scheduler's cache;
   freed when the last of them lets go (atomic: a task may be freed after its scheduler). Its masks are cached in
   it (wgllm_grammar), so a schema requests repeat is compiled once and its masks computed once. */
typedef struct shared_grammar {
  wgllm_grammar *g;
  atomic_int refs;
  int kind;
  char *key; /* the grammar's text (GBNF or JSON schema), key_len bytes */
  size_t key_len;
  uint64_t used; /* the cache's clock when a request last took it */
} shared_grammar;

/* compiled constraints kept for later requests (least recently used replaced) */
#define SERVE_GRAMMAR_CACHE 32

static void grammar_release(shared_grammar *sg) {
  if (!sg || atomic_fetch_sub(&sg->refs, 1) != 1) return;
  wgllm_grammar_free(sg->g);
  free(sg->key);
  free(sg);
}

struct serve_sched {
  wgllm_model *model;
  serve_sched_config cfg;
  uint32_t n_vocab;
  int thinks;  /* the model writes <think> blocks: chat replies are parsed for reasoning_content */
  int harmony; /* the model's replies are harmony (gpt-oss): chat replies always parsed, special tokens kept */
  sched_slot *slots;
  pthread_mutex_t mu;
  /* the model's text calls (wgllm_chat_prompt, wgllm_tokenize), one at a time: they read the tokenizer and the
     chat template (read-only after load) but write the model's error message. The scheduler never takes it. */
  pthread_mutex_t text_mu;
  pthread_mutex_t vocab_mu; /* the transport's vocabulary calls (serve_sched_vocab_lock) */
  pthread_cond_t work;      /* a task was submitted or cancelled, or the thread must stop */
  pthread_t thread;
  int thread_started, stopping, drained;
  wgllm_job **jobs; /* the batch of one tick, and the slot of each */
  int *job_slot;
  serve_task *waiting, *waiting_tail; /* submitted, not yet on a session (FIFO) */
  uint32_t n_waiting, n_running;
  uint64_t tick;
  /* a lost device: lost_msg is the engine's message, set by the step that saw it; unavailable 1 while the model is
     reloaded, 2 for good (why says so) */
  char lost_msg[256];
  int unavailable;
  char why[768];
  void (*notify)(void *user); /* serve_sched_set_notify's */
  void *notify_user;
  serve_sched_metrics met;    /* totals and the pool's snapshot (serve_sched_get_metrics) */
  pthread_mutex_t grammar_mu; /* the grammar cache (prepare, on the submitters' threads) */
  shared_grammar *grammars[SERVE_GRAMMAR_CACHE];
  uint64_t grammar_clock;
  uint64_t grammar_compiled, grammar_reused; /* under grammar_mu */
};

/* Drops the grammar cache's hold on every grammar (a model reload or the end: the grammars are the old model's). */
static void grammar_cache_clear(serve_sched *s) {
  pthread_mutex_lock(&s->grammar_mu);
  for (int i = 0; i < SERVE_GRAMMAR_CACHE; i++) {
    grammar_release(s->grammars[i]);
    s->grammars[i] = NULL;
  }
  pthread_mutex_unlock(&s->grammar_mu);
}

/* The compiled grammar of (kind, text): the cache's, or compiled now and kept (the least recently used one given
   up for it when the cache is full). The caller holds text_mu (the model's text calls). WGLLM_OK with *out (a
   reference: grammar_release it), or the compile's status (the reason in wgllm_last_error()). */
static wgllm_status grammar_get(serve_sched *s, wgllm_grammar_kind kind, const char *text, size_t len,
                                shared_grammar **out) {
  *out = NULL;
  pthread_mutex_lock(&s->grammar_mu);
  for (int i = 0; i < SERVE_GRAMMAR_CACHE; i++) {
    shared_grammar *c = s->grammars[i];
    if (c && c->kind == (int)kind && c->key_len == len && (!len || !memcmp(c->key, text, len))) {
      atomic_fetch_add(&c->refs, 1);
      c->used = ++s->grammar_clock;
      s->grammar_reused++;
      pthread_mutex_unlock(&s->grammar_mu);
      *out = c;
      return WGLLM_OK;
    }
  }
  pthread_mutex_unlock(&s->grammar_mu);
  shared_grammar *sg = calloc(1, sizeof *sg);
  if (!sg || !(sg->key = malloc(len ? len : 1))) {
    free(sg);
    return WGLLM_ERR_OUT_OF_MEMORY;
  }
  if (len) memcpy(sg->key, text, len); /* json_object's text is NULL, len 0 */
  sg->key_len = len;
  sg->kind = (int)kind;
  wgllm_status st = wgllm_grammar_create(s->model, kind, text, len, &sg->g);
  if (st) {
    free(sg->key);
    free(sg);
    return st;
  }
  atomic_init(&sg->refs, 2); /* the caller's and the cache's */
  pthread_mutex_lock(&s->grammar_mu);
  int slot = 0;
  for (int i = 0; i < SERVE_GRAMMAR_CACHE; i++) {
    if (!s->grammars[i]) {
      slot = i;
      break;
    }
    if (s->grammars[i]->used < s->grammars[slot]->used) slot = i;
  }
  grammar_release(s->grammars[slot]);
  s->grammars[slot] = sg;
  sg->used = ++s->grammar_clock;
  s->grammar_compiled++;
  pthread_mutex_unlock(&s->grammar_mu);
  *out = sg;
  return WGLLM_OK;
}

const char *serve_sched_tool_format(serve_sched *s) {
  pthread_mutex_lock(&s->mu); /* a reload replaces the model */
  const char *f = wgllm_model_tool_format(s->model);
  pthread_mutex_unlock(&s->mu);
  return f;
}

void serve_sched_set_notify(serve_sched *s, void (*fn)(void *user), void *user) {
  pthread_mutex_lock(&s->mu);
  s->notify = fn;
  s->notify_user = user;
  pthread_mutex_unlock(&s->mu);
}

/* under the lock: the task's readers are woken (its waiting thread, and the transport's notify) */
static void task_changed(serve_sched *s, serve_task *t) {
  pthread_cond_broadcast(&t->cv);
  if (s->notify) s->notify(s->notify_user);
}

void serve_sched_lock(serve_sched *s) { pthread_mutex_lock(&s->mu); }
void serve_sched_unlock(serve_sched *s) { pthread_mutex_unlock(&s->mu); }

void serve_sched_wait(serve_sched *s, serve_task *t, int ms) {
  struct timespec until;
  clock_gettime(CLOCK_MONOTONIC, &until);
  until.tv_sec += ms / 1000;
  until.tv_nsec += (long)(ms % 1000) * 1000000L;
  if (until.tv_nsec >= 1000000000L) {
    until.tv_sec++;
    until.tv_nsec -= 1000000000L;
  }
  pthread_cond_timedwait(&t->cv, &s->mu, &until);
}

void serve_sched_get_metrics(serve_sched *s, serve_sched_metrics *m) {
  pthread_mutex_lock(&s->mu);
  *m = s->met;
  m->busy = s->n_running;
  m->idle = s->cfg.parallel - s->n_running;
  m->waiting = s->n_waiting;
  m->parallel = s->cfg.parallel;
  m->context = s->cfg.session.context;
  pthread_mutex_unlock(&s->mu);
  pthread_mutex_lock(&s->grammar_mu);
  m->grammar_compiled = s->grammar_compiled;
  m->grammar_reused = s->grammar_reused;
  pthread_mutex_unlock(&s->grammar_mu);
}

uint32_t serve_sched_slots(serve_sched *s, serve_slot_info *info, uint32_t cap) {
  pthread_mutex_lock(&s->mu);
  uint32_t n = s->cfg.parallel < cap ? s->cfg.parallel : cap;
  for (uint32_t k = 0; k < n; k++) {
    const serve_task *t = s->slots[k].task;
    info[k] = (serve_slot_info){.processing = t != NULL};
    if (t) {
      info[k].prefilling = t->state == SERVE_TASK_QUEUED;
      info[k].prompt_tokens = (uint32_t)t->n_ids;
      info[k].text_bytes = t->out_len;
    }
  }
  pthread_mutex_unlock(&s->mu);
  return n;
}

void serve_sched_counts(serve_sched *s, uint32_t *busy, uint32_t *idle, uint32_t *waiting) {
  pthread_mutex_lock(&s->mu);
  *busy = s->n_running;
  *idle = s->cfg.parallel - s->n_running;
  *waiting = s->n_waiting;
  pthread_mutex_unlock(&s->mu);
}

serve_task *serve_task_new(serve_request *req) {
  serve_task *t = calloc(1, sizeof *t);
  if (!t) return NULL;
  pthread_condattr_t ca;
  pthread_condattr_init(&ca);
  pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
  pthread_cond_init(&t->cv, &ca);
  pthread_condattr_destroy(&ca);
  t->req = *req;
  memset(req, 0, sizeof *req);
  t->refs = 1; /* the HTTP side's; submit adds the scheduler's */
  t->session = -1;
  return t;
}

static void task_free(serve_task *t) {
  grammar_release(t->grammar);
  wgllm_reply_parser_free(t->parser);
  cJSON_Delete(t->lp_items);
  serve_request_free(&t->req);
  free(t->out);
  free(t->ids);
  pthread_cond_destroy(&t->cv);
  free(t);
}

/* under the lock */
static void task_unref(serve_task *t) {
  if (--t->refs == 0) task_free(t);
}

/* under the lock */
static int full(const serve_sched *s) {
  return s->stopping || s->unavailable || s->n_waiting >= s->cfg.queue + (s->cfg.parallel - s->n_running);
}

int serve_sched_full(serve_sched *s) {
  pthread_mutex_lock(&s->mu);
  int f = full(s);
  pthread_mutex_unlock(&s->mu);
  return f;
}

int serve_sched_submit(serve_sched *s, serve_task *t) {
  pthread_mutex_lock(&s->mu);
  if (full(s)) {
    pthread_mutex_unlock(&s->mu);
    return -1;
  }
  t->refs++;
  t->sched = s;
  t->next = NULL;
  if (s->waiting_tail)
    s->waiting_tail->next = t;
  else
    s->waiting = t;
  s->waiting_tail = t;
  s->n_waiting++;
  pthread_cond_signal(&s->work);
  pthread_mutex_unlock(&s->mu);
  return 0;
}

void serve_sched_release(serve_sched *s, serve_task *t) {
  if (!t) return;
  pthread_mutex_lock(&s->mu);
  if (t->state != SERVE_TASK_DONE) {
    t->cancelled = 1;
    pthread_cond_signal(&s->work);
  }
  task_unref(t);
  pthread_mutex_unlock(&s->mu);
}

/* under the lock: the task ends (its scheduler reference goes) */
static void task_finish(serve_sched *s, serve_task *t) {
  serve_sched_metrics *m = &s->met;
  if (t->cancelled)
    m->requests_cancelled++;
  else if (t->failed)
    m->requests_failed++;
  else
    m->requests_ok++;
  m->prompt_tokens += t->usage.prompt_tokens;
  m->cached_tokens += t->usage.cached_tokens;
  m->completion_tokens += t->usage.completion_tokens;
  m->batched_tokens += t->batched_tokens;
  m->accepted_drafts += t->usage.accepted_drafts;
  m->rejected_drafts += t->usage.rejected_drafts;
  t->state = SERVE_TASK_DONE;
  task_changed(s, t);
  task_unref(t);
}

static void task_fail(serve_task *t, int status, const char *type, const char *code, const char *msg) {
  t->failed = 1;
  serve_fail(&t->err, status, type, NULL, code, "%s", msg);
}

/* on_text of every job: the piece goes into the task (under the lock); non-zero stops a cancelled task's job */
static int on_text(const char *text, size_t len, void *user) {
  serve_task *t = user;
  serve_sched *s = t->sched;
  pthread_mutex_lock(&s->mu);
  int stop = t->cancelled;
  if (!stop && len) {
    if (t->out_len + len + 1 > t->out_cap) {
      size_t cap = t->out_cap ? t->out_cap * 2 : 256;
      while (cap < t->out_len + len + 1)
        cap *= 2;
      char *g = realloc(t->out, cap);
      if (!g) {
        task_fail(t, 500, "server_error", NULL, "out of memory");
        stop = 1;
      } else {
        t->out = g;
        t->out_cap = cap;
      }
    }
    if (!stop) {
      memcpy(t->out + t->out_len, text, len);
      t->out_len += len;
      t->out[t->out_len] = 0;
      task_changed(s, t);
    }
  }
  pthread_mutex_unlock(&s->mu);
  return stop;
}

/* The prompt's ids (the model's chat template, or the completion text / ids), without the scheduler's lock (the
   task is not yet visible to anyone but its HTTP side, which only reads it under the lock) and under text_mu (the
   model's error message is one buffer). Returns 0, or fills t->err. */
static int prepare_task_locked(serve_sched *s, serve_task *t);
static int prepare_task(serve_sched *s, serve_task *t) {
  pthread_mutex_lock(&s->text_mu);
  int rc = prepare_task_locked(s, t);
  pthread_mutex_unlock(&s->text_mu);
  return rc;
}

int serve_sched_prepare(serve_sched *s, serve_task *t) {
  int rc = prepare_task(s, t);
  t->prepared = 1;
  if (rc) t->failed = 1;
  return rc;
}

/* The text's tokens (no BOS or EOS), appended to *ids (*n of them, room for cap; grown): 0, or -1 (t->err). */
static int append_text(serve_sched *s, serve_task *t, const char *text, size_t len, int32_t **ids, size_t *n,
                       size_t *cap) {
  size_t k = 0;
  wgllm_status st = wgllm_tokenize(s->model, text, len, 0, NULL, 0, &k);
  if (!st && *n + k > *cap) {
    int32_t *g = realloc(*ids, (*n + k) * sizeof **ids);
    if (!g) return serve_fail(&t->err, 500, "server_error", NULL, NULL, "out of memory");
    *ids = g;
    *cap = *n + k;
  }
  if (!st) st = wgllm_tokenize(s->model, text, len, 0, *ids + *n, k, &k);
  if (st) return serve_fail(&t->err, 400, "invalid_request_error", "suffix", NULL, "%s", wgllm_model_error(s->model));
  *n += k;
  return 0;
}

/* completions' suffix: the prompt becomes the model's fill-in-the-middle form, [BOS] <prefix> prompt <suffix> suffix
   <middle> (the prompt's ids as given, or its text's tokens; the model writes what goes between), as llama-server's
   /infill does; a model whose vocabulary has no such tokens is 400. t->ids holds the prompt's ids (with the BOS the
   tokenizer adds, for a text). */
static int fill_in_the_middle(serve_sched *s, serve_task *t) {
  const serve_request *r = &t->req;
  int32_t fim[3];
  if (wgllm_vocab_fim_tokens(wgllm_model_vocab(s->model), fim))
    return serve_fail(&t->err, 400, "invalid_request_error", "suffix", NULL,
                      "'suffix' needs a code model's fill-in-the-middle tokens: %s",
                      wgllm_vocab_error(wgllm_model_vocab(s->model)));
  size_t n_bos = 0, n = 0, cap = t->n_ids + r->suffix_len + 8;
  wgllm_tokenize(s->model, "", 0, 1, NULL, 0, &n_bos); /* what the tokenizer adds before a text (a BOS, or nothing) */
  int32_t *ids = malloc(cap * sizeof *ids);
  if (!ids) return serve_fail(&t->err, 500, "server_error", NULL, NULL, "out of memory");
  size_t skip = r->prompt_ids ? 0 : n_bos; /* a text's ids start with what the tokenizer added */
  if (n_bos) wgllm_tokenize(s->model, "", 0, 1, ids, 1, &n);
  if (n > 1) n = 1;
  ids[n++] = fim[0];
  memcpy(ids + n, t->ids + skip, (t->n_ids - skip) * sizeof *ids);
  n += t->n_ids - skip;
  ids[n++] = fim[1];
  if (append_text(s, t, r->suffix, r->suffix_len, &ids, &n, &cap)) {
    free(ids);
    return -1;
  }
  if (n + 1 > cap) {
    int32_t *g = realloc(ids, (n + 1) * sizeof *ids);
    if (!g) {
      free(ids);
      return serve_fail(&t->err, 500, "server_error", NULL, NULL, "out of memory");
    }
    ids = g;
  }
  ids[n++] = fim[2];
  free(t->ids);
  t->ids = ids;
  t->n_ids = n;
  return 0;
}

/* Context shift of a chat (cfg.context_shift): while its n prompt tokens leave less than room for the reply, its
   oldest turn after the leading system messages goes (a user message and what follows it up to the next user
   message) and the prompt is rendered again into *ids / *n; the last user message stays. The request's chat JSON is
   replaced by what was rendered. Returns the messages dropped. */
static size_t shift_chat(serve_sched *s, serve_task *t, uint32_t room, int32_t **ids, size_t *n) {
  serve_request *r = &t->req;
  uint32_t ctx = s->cfg.session.context;
  if (*n + room <= ctx) return 0;
  size_t len = 0, dropped = 0;
  char *marked = json_mark_nul_escapes(r->chat_json, r->chat_json_len, SERVE_NUL, &len); /* "\u0000" kept */
  cJSON *o = marked ? cJSON_ParseWithLength(marked, len) : NULL;
  free(marked);
  cJSON *msgs = o ? cJSON_GetObjectItemCaseSensitive(o, "messages") : NULL;
  while (cJSON_IsArray(msgs) && *n + room > ctx) {
    int first = 0, total = cJSON_GetArraySize(msgs);
    while (first < total &&
           !strcmp(cJSON_GetStringValue(cJSON_GetObjectItem(cJSON_GetArrayItem(msgs, first), "role")) ?: "", "system"))
      first++;
    int end = first + 1;
    while (end < total &&
           strcmp(cJSON_GetStringValue(cJSON_GetObjectItem(cJSON_GetArrayItem(msgs, end), "role")) ?: "", "user"))
      end++;
    if (end >= total) break; /* the last user message and its replies alone */
    for (int k = first; k < end; k++)
      cJSON_DeleteItemFromArray(msgs, first);
    dropped += (size_t)(end - first);
    char *json = serve_print_json(cJSON_Duplicate(o, 1));
    int32_t *shorter = NULL;
    size_t m = 0;
    if (!json || wgllm_chat_prompt(s->model, json, strlen(json), &shorter, &m, NULL)) {
      free(json);
      break; /* rendered as it was: the context check says what is wrong */
    }
    wgllm_free(*ids);
    *ids = shorter;
    *n = m;
    free(r->chat_json);
    r->chat_json = json;
    r->chat_json_len = strlen(json);
  }
  cJSON_Delete(o);
  return dropped;
}

/* A chat's reply parser: calls in the model's format where tools are offered, a leading <think> block as
   reasoning_content unless "reasoning_format": "none"; the reply starts as reasoning where the prompt ended in
   <think> (a template that opens the block itself). A harmony reply is always parsed: its analysis channel is
   reasoning_content, its final channel content, and none of its markers is content. */
static int reply_parser(serve_sched *s, serve_task *t) {
  const serve_request *r = &t->req;
  int thinking_open = 0;
  if (!r->reasoning_inline && t->n_ids) {
    size_t k = t->n_ids < 4 ? t->n_ids : 4;
    char *tail = NULL;
    if (!wgllm_detokenize(s->model, t->ids + t->n_ids - k, k, &tail) && tail) {
      size_t n = strlen(tail);
      while (n && (tail[n - 1] == '\n' || tail[n - 1] == ' '))
        n--;
      thinking_open = n >= 7 && !memcmp(tail + n - 7, "<think>", 7);
    }
    wgllm_free(tail);
  }
  t->parse_tools = r->n_tools && r->tool_choice != SERVE_TOOLS_NONE;
  t->special = t->parse_tools || s->harmony;
  if (!t->parse_tools && !s->harmony && (r->reasoning_inline || !s->thinks))
    return 0; /* the reply is content as generated */
  wgllm_reply_options o = {.parse_tools = t->parse_tools,
                           .tool_names = (const char *const *)r->tool_names,
                           .n_tool_names = r->n_tools,
                           .split_reasoning = !r->reasoning_inline,
                           .thinking_open = thinking_open};
  if (wgllm_reply_parser_create(s->model, &o, &t->parser))
    return serve_fail(&t->err, 500, "server_error", NULL, NULL, "the reply parser: %s", wgllm_last_error());
  return 0;
}

/* A forced call whose opening a grammar cannot write (harmony's header, up to its special token <|message|>;
   wgllm_model_tool_call_prefix): the prompt ends with it (its special-token text parsed) and the reply parser reads
   it before the generated text, which the grammar makes the call's arguments. The parser gives nothing for it (a
   harmony header is held until its message's body starts): anything it gave would be lost, so that is an error. */
static int call_prefix(serve_sched *s, serve_task *t, const char *prefix) {
  size_t n = 0, len = strlen(prefix);
  wgllm_status st = wgllm_tokenize(s->model, prefix, len, 0, NULL, 0, &n);
  int32_t *ids = st ? NULL : realloc(t->ids, (t->n_ids + n) * sizeof *ids);
  if (ids) {
    t->ids = ids;
    st = wgllm_tokenize(s->model, prefix, len, 0, ids + t->n_ids, n, &n);
  }
  if (st || !ids)
    return serve_fail(&t->err, 500, "server_error", "tool_choice", NULL, "tokenizing the call's opening %s: %s", prefix,
                      ids ? wgllm_model_error(s->model) : "out of memory");
  t->n_ids += n;
  if (t->n_ids >= s->cfg.session.context)
    return serve_fail(&t->err, 400, "invalid_request_error", "messages", "context_length_exceeded",
                      "the prompt and the call's opening (tool_choice) are %zu tokens; this server's context holds %u "
                      "(the prompt and at least one token to generate)",
                      t->n_ids, s->cfg.session.context);
  char *json = NULL;
  if (!t->parser || wgllm_reply_parser_push(t->parser, prefix, len, &json) || json) {
    wgllm_free(json);
    return serve_fail(&t->err, 500, "server_error", "tool_choice", NULL, "the reply parser %s the call's opening %s",
                      t->parser ? "gave text for" : "is missing for", prefix);
  }
  return 0;
}

static int prepare_task_locked(serve_sched *s, serve_task *t) {
  const serve_request *r = &t->req;
  wgllm_status st = WGLLM_OK;
  if (r->kind == SERVE_KIND_EMBEDDING) return serve_embed_prepare(s->model, s->cfg.session.context, t);
  if (!wgllm_model_has_lm_head(s->model))
    return serve_fail(&t->err, 400, "invalid_request_error", NULL, NULL,
                      "this model has no LM head (an embedding model's weights): it answers /v1/embeddings only");
  if (r->kind == SERVE_KIND_CHAT) {
    int32_t *ids = NULL;
    size_t n = 0;
    st = wgllm_chat_prompt(s->model, r->chat_json, r->chat_json_len, &ids, &n, NULL);
    uint32_t room = s->cfg.session.context / 4;
    if (r->max_tokens < room) room = r->max_tokens;
    if (!st && s->cfg.context_shift) t->usage.dropped_messages = (uint32_t)shift_chat(s, t, room, &ids, &n);
    if (st) {
      char msg[512];
      snprintf(msg, sizeof msg, "%s", wgllm_model_error(s->model)); /* "chat template: ..." */
      serve_fail(&t->err, st == WGLLM_ERR_INVALID_ARG || st == WGLLM_ERR_UNSUPPORTED ? 400 : 500,
                 st == WGLLM_ERR_INVALID_ARG || st == WGLLM_ERR_UNSUPPORTED ? "invalid_request_error" : "server_error",
                 "messages", NULL, "%s", msg);
      return -1;
    }
    t->ids = malloc((n ? n : 1) * sizeof *t->ids);
    if (t->ids) memcpy(t->ids, ids, n * sizeof *ids);
    wgllm_free(ids);
    t->n_ids = n;
  } else if (r->prompt_ids) {
    for (size_t i = 0; i < r->n_prompt_ids; i++)
      if ((uint32_t)r->prompt_ids[i] >= s->n_vocab)
        return serve_fail(&t->err, 400, "invalid_request_error", "prompt", NULL,
                          "prompt token %zu is id %d, outside the vocabulary of %u", i, r->prompt_ids[i], s->n_vocab);
    t->ids = malloc(r->n_prompt_ids * sizeof *t->ids);
    if (t->ids) memcpy(t->ids, r->prompt_ids, r->n_prompt_ids * sizeof *t->ids);
    t->n_ids = r->n_prompt_ids;
  } else {
    size_t n = 0;
    st = wgllm_tokenize(s->model, r->prompt, r->prompt_len, 1, NULL, 0, &n);
    if (!st) {
      t->ids = malloc((n ? n : 1) * sizeof *t->ids);
      if (t->ids) st = wgllm_tokenize(s->model, r->prompt, r->prompt_len, 1, t->ids, n, &n);
    }
    if (st)
      return serve_fail(&t->err, 400, "invalid_request_error", "prompt", NULL, "the prompt: %s",
                        wgllm_model_error(s->model));
    t->n_ids = n;
  }
  if (!t->ids) return serve_fail(&t->err, 500, "server_error", NULL, NULL, "out of memory");
  if (r->suffix && fill_in_the_middle(s, t)) return -1;
  uint32_t ctx = s->cfg.session.context;
  if (t->n_ids == 0)
    return serve_fail(&t->err, 400, "invalid_request_error", "prompt", NULL, "the prompt has no tokens");
  if (t->n_ids >= ctx)
    return serve_fail(&t->err, 400, "invalid_request_error", r->kind == SERVE_KIND_CHAT ? "messages" : "prompt",
                      "context_length_exceeded",
                      "the prompt is %zu tokens; this server's context holds %u (the prompt and at least one token "
                      "to generate)",
                      t->n_ids, ctx);
  if (r->kind == SERVE_KIND_CHAT && reply_parser(s, t)) return -1;
  if (r->kind == SERVE_KIND_CHAT && (r->tool_choice == SERVE_TOOLS_REQUIRED || r->tool_choice == SERVE_TOOLS_NAMED)) {
    if (r->constrain)
      return serve_fail(&t->err, 400, "invalid_request_error", "tool_choice", NULL,
                        "'tool_choice' asks for a call and '%s' constrains the reply too; give one",
                        r->constraint_param);
    char *gbnf = NULL, *prefix = NULL;
    const char *fn = r->tool_choice == SERVE_TOOLS_NAMED ? r->tool_name : NULL;
    st = wgllm_model_tool_call_prefix(s->model, r->tools_json, strlen(r->tools_json), fn, &prefix);
    if (!st) st = wgllm_model_tool_call_grammar(s->model, r->tools_json, strlen(r->tools_json), fn, &gbnf);
    if (!st) st = grammar_get(s, WGLLM_GRAMMAR_GBNF, gbnf, strlen(gbnf), &t->grammar);
    wgllm_free(gbnf);
    if (st) {
      wgllm_free(prefix);
      return serve_fail(&t->err, st == WGLLM_ERR_INVALID_ARG || st == WGLLM_ERR_UNSUPPORTED ? 400 : 500,
                        st == WGLLM_ERR_INVALID_ARG || st == WGLLM_ERR_UNSUPPORTED ? "invalid_request_error"
                                                                                   : "server_error",
                        "tool_choice", NULL, "%s", wgllm_last_error());
    }
    int rc = prefix ? call_prefix(s, t, prefix) : 0;
    wgllm_free(prefix);
    if (rc) return -1;
  }
  if (r->constrain) { /* compiled here, on the submitter's thread: a bad grammar or schema is the request's 400 */
    static const wgllm_grammar_kind kinds[] = {[SERVE_CONSTRAIN_GBNF] = WGLLM_GRAMMAR_GBNF,
                                               [SERVE_CONSTRAIN_JSON_SCHEMA] = WGLLM_GRAMMAR_JSON_SCHEMA,
                                               [SERVE_CONSTRAIN_JSON_OBJECT] = WGLLM_GRAMMAR_JSON_OBJECT};
    st = grammar_get(s, kinds[r->constrain], r->constraint, r->constraint_len, &t->grammar);
    if (st == WGLLM_ERR_INVALID_ARG || st == WGLLM_ERR_UNSUPPORTED)
      return serve_fail(&t->err, 400, "invalid_request_error", r->constraint_param, NULL, "%s", wgllm_last_error());
    if (st)
      return serve_fail(&t->err, 500, "server_error", r->constraint_param, NULL, "compiling the constraint: %s",
                        wgllm_last_error());
  }
  if (r->echo) { /* completions' echo: the prompt's text starts the answer (ids: their text) */
    char *text = NULL;
    size_t len = r->prompt_len;
    if (r->prompt_ids && wgllm_detokenize(s->model, t->ids, t->n_ids, &text))
      return serve_fail(&t->err, 400, "invalid_request_error", "prompt", NULL, "the prompt's ids: %s",
                        wgllm_model_error(s->model));
    if (text) len = strlen(text);
    const char *src = r->prompt_ids ? text : r->prompt;
    char *out = malloc(len + 1);
    if (out) {
      memcpy(out, src, len);
      out[len] = 0;
    }
    wgllm_free(text);
    if (!out) return serve_fail(&t->err, 500, "server_error", NULL, NULL, "out of memory");
    pthread_mutex_lock(&s->mu);
    free(t->out);
    t->out = out;
    t->out_len = len;
    t->out_cap = len + 1;
    pthread_mutex_unlock(&s->mu);
  }
  return 0;
}

static uint32_t random_seed(void) {
  uint32_t x = 0;
  if (getentropy(&x, sizeof x) != 0) x = (uint32_t)time(NULL) ^ (uint32_t)clock();
  return x;
}

/* The idle session for the ids: the longest cached prefix, else the least recently used. -1 when none is idle. */
static int pick_slot(serve_sched *s, const serve_task *t) {
  int best = -1;
  uint32_t best_prefix = 0;
  for (uint32_t i = 0; i < s->cfg.parallel; i++) {
    if (s->slots[i].task) continue;
    uint32_t p = wgllm_session_cached_prefix(s->slots[i].session, t->ids, t->n_ids);
    if (best < 0 || p > best_prefix || (p == best_prefix && s->slots[i].last_used < s->slots[best].last_used)) {
      best = (int)i;
      best_prefix = p;
    }
  }
  return best;
}

/* under the lock: whether the pool has the blocks task t's prompt needs, one more for each running job (its next
   tokens), giving back idle sessions' caches (least recently used first) to make them; 1 when it has */
static int pool_admits(serve_sched *s, const serve_task *t) {
  wgllm_kv_pool_stats ps;
  if (wgllm_model_kv_pool_stats(s->model, &ps)) return 1;
  uint32_t need = (uint32_t)((t->n_ids + ps.block_tokens) / ps.block_tokens) + s->n_running;
  while (ps.available_blocks < need) {
    int lru = -1;
    for (uint32_t i = 0; i < s->cfg.parallel; i++)
      if (!s->slots[i].task && wgllm_session_n_past(s->slots[i].session) &&
          (lru < 0 || s->slots[i].last_used < s->slots[lru].last_used))
        lru = (int)i;
    if (lru < 0) return 0;
    wgllm_session_reset(s->slots[lru].session); /* its published prompt blocks stay cached in the pool */
    wgllm_model_kv_pool_stats(s->model, &ps);
  }
  return 1;
}

/* Prefills the task on slot k and samples its first token (unlocked: the GPU works). */
static void start_task(serve_sched *s, serve_task *t, int k) {
  const serve_request *r = &t->req;
  if (r->kind == SERVE_KIND_EMBEDDING) { /* every input embedded now, the session's cache emptied (serve_embed.c) */
    serve_error e;
    wgllm_status st = serve_embed_run(s->slots[k].session, t, &e);
    pthread_mutex_lock(&s->mu);
    if (st == WGLLM_ERR_DEVICE_LOST) { /* the task stays on its slot: device_lost fails it with the others */
      if (!s->lost_msg[0]) snprintf(s->lost_msg, sizeof s->lost_msg, "%s", wgllm_session_error(s->slots[k].session));
    } else {
      if (st) {
        t->err = e;
        t->failed = 1;
      }
      s->slots[k].task = NULL;
      s->slots[k].last_used = ++s->tick;
      s->n_running--;
      task_finish(s, t);
    }
    pthread_mutex_unlock(&s->mu);
    return;
  }
  wgllm_generate_params gp = wgllm_generate_default_params();
  gp.max_tokens = r->max_tokens;
  gp.context_shift = s->cfg.context_shift; /* a reply past the context goes on */
  gp.n_keep = s->cfg.n_keep;
  gp.temperature = r->temperature;
  gp.top_k = r->top_k;
  gp.top_p = r->top_p;
  gp.min_p = r->min_p;
  gp.repeat_penalty = r->repeat_penalty;
  gp.repeat_last_n = r->repeat_last_n;
  gp.presence_penalty = r->presence_penalty;
  gp.frequency_penalty = r->frequency_penalty;
  gp.seed = r->seed_given ? r->seed : random_seed();
  gp.stop = (const char *const *)r->stop;
  gp.stop_len = r->stop_len;
  gp.n_stop = r->n_stop;
  gp.ignore_eos = r->ignore_eos;
  gp.grammar = t->grammar ? t->grammar->g : NULL;
  /* call markers that are special tokens ([TOOL_CALLS]) reach the parser, and so do harmony's (a chat's) */
  gp.special = t->special;
  gp.logprobs = r->logprobs;
  gp.top_logprobs = r->top_logprobs;
  gp.logit_bias_ids = r->bias_ids;
  gp.logit_bias = r->bias;
  gp.n_logit_bias = r->n_bias;
  gp.on_text = on_text;
  gp.user = t;
  /* speculation: the request's fields, else the server's defaults */
  wgllm_model *draft = s->cfg.draft ? *s->cfg.draft : NULL;
  uint32_t n_max = r->spec_n_max >= 0 ? (uint32_t)r->spec_n_max : s->cfg.draft_max ? s->cfg.draft_max : 7;
  int lookup = r->spec_lookup >= 0 ? r->spec_lookup : s->cfg.spec_lookup;
  int drafts = r->spec_draft >= 0 ? r->spec_draft : draft != NULL;
  gp.spec_lookup = lookup ? n_max : 0;
  gp.draft_model = drafts && n_max ? draft : NULL;
  gp.draft_max = n_max;
  t->gp = gp;
  wgllm_job *job = NULL;
  int no_draft = drafts && n_max && !draft; /* asked for, and the server has none */
  wgllm_status st =
      no_draft ? WGLLM_ERR_INVALID_ARG : wgllm_job_start(s->slots[k].session, t->ids, t->n_ids, &t->gp, &job);
  pthread_mutex_lock(&s->mu);
  if (st == WGLLM_ERR_DEVICE_LOST) { /* the task stays on its slot: device_lost fails it with the others */
    if (!s->lost_msg[0]) snprintf(s->lost_msg, sizeof s->lost_msg, "%s", wgllm_session_error(s->slots[k].session));
  } else if (st) {
    const char *msg = no_draft ? "\"speculative.draft\": this server has no draft model (wgllm serve -md PATH)"
                               : wgllm_session_error(s->slots[k].session);
    if (st == WGLLM_ERR_INVALID_ARG || st == WGLLM_ERR_UNSUPPORTED) /* UNSUPPORTED: speculation on this model */
      serve_fail(&t->err, 400, "invalid_request_error", NULL, NULL, "%s", msg);
    else
      serve_fail(&t->err, 500, "server_error", NULL, NULL, "the generation failed: %s (%s)", msg,
                 wgllm_status_name(st));
    t->failed = 1;
    s->slots[k].task = NULL;
    s->n_running--;
    task_finish(s, t);
  } else
    t->job = job; /* RUNNING once its prompt is prefilled (step 4), so a failed prefill is still a whole error */
  pthread_mutex_unlock(&s->mu);
}

/* under the lock: a finished or cancelled job's task ends and its session goes back to the pool. The job is freed
   with the lock released (freeing one that is not done waits for its queued GPU steps). */
static void end_job(serve_sched *s, int k) {
  serve_task *t = s->slots[k].task;
  wgllm_job *job = t->job;
  t->job = NULL;
  if (job) {
    wgllm_generate_stats st;
    wgllm_job_stats(job, &st);
    t->usage.prompt_tokens = st.prompt_tokens;
    t->usage.cached_tokens = st.cached_tokens;
    t->usage.completion_tokens = st.generated_tokens;
    t->usage.accepted_drafts = st.spec_accepted;
    t->usage.rejected_drafts = st.spec_drafted - st.spec_accepted;
    t->batched_tokens = st.batched_tokens;
    t->usage.prompt_ms = st.prefill_seconds * 1e3;
    t->usage.predicted_ms = st.decode_seconds * 1e3;
    t->finish_reason = st.stop == WGLLM_STOP_MAX_TOKENS || st.stop == WGLLM_STOP_CONTEXT ? "length" : "stop";
    const char *e = wgllm_job_error(job);
    if (e[0] && !t->failed) task_fail(t, 500, "server_error", NULL, e);
    pthread_mutex_unlock(&s->mu);
    wgllm_job_free(job); /* cancels a job that is not done; the session stays usable */
    pthread_mutex_lock(&s->mu);
  }
  s->slots[k].task = NULL;
  s->slots[k].last_used = ++s->tick;
  s->n_running--;
  task_finish(s, t);
}

/* a token's {token, logprob, bytes} (OpenAI's logprobs entry): its text as UTF-8 (a byte that is not: U+FFFD) */
static cJSON *lp_entry(serve_sched *s, int32_t id, float lp) {
  char buf[256];
  size_t n = wgllm_vocab_token_bytes(wgllm_model_vocab(s->model), id, buf, sizeof buf);
  if (n > sizeof buf) n = sizeof buf;
  char text[3 * sizeof buf + 1];
  size_t tl = 0;
  cJSON *e = cJSON_CreateObject(), *bytes = cJSON_CreateArray();
  for (size_t i = 0; i < n;) {
    size_t k = i;
    long bad = serve_utf8_invalid_at(buf + i, n - i);
    size_t good = bad < 0 ? n - i : (size_t)bad;
    memcpy(text + tl, buf + i, good);
    tl += good;
    i += good;
    if (i < n) { /* one invalid byte */
      memcpy(text + tl, "\xef\xbf\xbd", 3);
      tl += 3;
      i++;
    }
    for (; k < i; k++)
      cJSON_AddItemToArray(bytes, cJSON_CreateNumber((unsigned char)buf[k]));
  }
  text[tl] = 0;
  cJSON_AddStringToObject(e, "token", text);
  cJSON_AddNumberToObject(e, "logprob", lp);
  cJSON_AddItemToObject(e, "bytes", bytes);
  return e;
}

/* under the lock: the job's logprobs of the tokens generated since the last call, onto the task's entries */
static void collect_logprobs(serve_sched *s, serve_task *t, wgllm_job *job) {
  if (!t->lp_items && !(t->lp_items = cJSON_CreateArray())) return;
  wgllm_token_logprobs lp[8];
  size_t got;
  while ((got = wgllm_job_logprobs(job, t->n_lp, lp, 8)) > 0) {
    for (size_t k = 0; k < got; k++) {
      cJSON *e = lp_entry(s, lp[k].token, lp[k].logprob), *top = cJSON_AddArrayToObject(e, "top_logprobs");
      for (uint32_t q = 0; q < lp[k].n_top; q++)
        cJSON_AddItemToArray(top, lp_entry(s, lp[k].top_tokens[q], lp[k].top_logprobs[q]));
      cJSON_AddItemToArray(t->lp_items, e);
    }
    t->n_lp += got;
  }
  task_changed(s, t);
}

/* under the lock: takes the task *link points at (s->waiting or a task's next) out of the waiting list */
static serve_task *unlink_waiting(serve_sched *s, serve_task **link) {
  serve_task *t = *link;
  *link = t->next;
  if (s->waiting_tail == t)
    s->waiting_tail = link == &s->waiting ? NULL : (serve_task *)((char *)link - offsetof(serve_task, next));
  t->next = NULL;
  s->n_waiting--;
  return t;
}

/* under the lock: one tick (cancelled tasks ended, new prompts prepared, waiting tasks started, one token of every
   running job). Returns the number of jobs stepped. */
static size_t tick_jobs(serve_sched *s) {
  wgllm_job **jobs = s->jobs;
  int *job_slot = s->job_slot;
  /* 1. cancelled tasks: their jobs freed, their sessions back */
  for (uint32_t k = 0; k < s->cfg.parallel; k++)
    if (s->slots[k].task && s->slots[k].task->cancelled) end_job(s, (int)k);
  for (serve_task **p = &s->waiting; *p;) {
    if ((*p)->cancelled)
      task_finish(s, unlink_waiting(s, p));
    else
      p = &(*p)->next;
  }
  /* 2. prompts of new tasks not prepared by their submitter (serve_sched_prepare, which the request handler calls
     first, off this thread), so a refused one is answered at once even when every session is busy (tasks
     submitted meanwhile join the end of the list, and are prepared in this pass or the next) */
  for (serve_task **p = &s->waiting; *p;) {
    serve_task *t = *p;
    if (t->prepared) {
      p = &t->next;
      continue;
    }
    pthread_mutex_unlock(&s->mu);
    int rc = prepare_task(s, t);
    pthread_mutex_lock(&s->mu);
    t->prepared = 1;
    if (rc) {
      t->failed = 1;
      task_finish(s, unlink_waiting(s, p));
      continue;
    }
    p = &t->next;
  }
  /* 3. prepared tasks onto idle sessions, in order */
  while (s->waiting && s->waiting->prepared && s->n_running < s->cfg.parallel && !s->stopping && !s->lost_msg[0]) {
    if (s->waiting->cancelled) {
      task_finish(s, unlink_waiting(s, &s->waiting));
      continue;
    }
    if (s->cfg.use_pool && !pool_admits(s, s->waiting)) break; /* it waits for blocks (FIFO: those behind too) */
    int k = pick_slot(s, s->waiting);
    serve_task *t = unlink_waiting(s, &s->waiting);
    s->slots[k].task = t;
    t->session = k;
    s->n_running++;
    pthread_mutex_unlock(&s->mu);
    start_task(s, t, k);
    pthread_mutex_lock(&s->mu);
  }
  if (s->lost_msg[0]) return 0;
  /* 4. one token of every running job, in one call */
  size_t n = 0;
  for (uint32_t k = 0; k < s->cfg.parallel; k++)
    if (s->slots[k].task && s->slots[k].task->job) {
      job_slot[n] = (int)k;
      jobs[n++] = s->slots[k].task->job;
    }
  if (!n) return 0;
  pthread_mutex_unlock(&s->mu);
  struct timespec t0, t1;
  clock_gettime(CLOCK_MONOTONIC, &t0);
  wgllm_status st = wgllm_jobs_step(jobs, n); /* a job that fails is done with its error: end_job reports it */
  clock_gettime(CLOCK_MONOTONIC, &t1);
  wgllm_kv_pool_stats ps;
  int pooled = s->cfg.use_pool && st != WGLLM_ERR_DEVICE_LOST && !wgllm_model_kv_pool_stats(s->model, &ps);
  pthread_mutex_lock(&s->mu);
  double secs = (double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) * 1e-9;
  s->met.steps++;
  s->met.step_seconds += secs;
  s->met.last_step_ms = secs * 1e3;
  s->met.has_pool = pooled;
  if (pooled) {
    s->met.pool_blocks = ps.blocks;
    s->met.pool_available = ps.available_blocks;
    s->met.pool_cached = ps.cached_blocks;
    s->met.pool_block_tokens = ps.block_tokens;
  }
  if (st == WGLLM_ERR_DEVICE_LOST && !s->lost_msg[0])
    for (size_t i = 0; i < n && !s->lost_msg[0]; i++)
      snprintf(s->lost_msg, sizeof s->lost_msg, "%s", wgllm_job_error(jobs[i]));
  if (s->lost_msg[0]) return n; /* every task fails with the loss (device_lost) */
  for (size_t i = 0; i < n; i++) {
    serve_task *t = s->slots[job_slot[i]].task;
    if (t->req.logprobs) collect_logprobs(s, t, jobs[i]);
    if (wgllm_job_done(jobs[i]))
      end_job(s, job_slot[i]);
    else if (t->state == SERVE_TASK_QUEUED && !wgllm_job_prefilling(jobs[i])) {
      t->state = SERVE_TASK_RUNNING; /* prefilled, its first token sampled */
      task_changed(s, t);
    }
  }
  return n;
}

static int make_sessions(serve_sched *s, char *err, size_t errlen);

/* under the lock, after a step saw the device lost (lost_msg): every task in fails with it, and new ones are
   refused until the next tick has made the model again (reload) */
static void device_lost(serve_sched *s) {
  s->unavailable = 1;
  s->lost_msg[strcspn(s->lost_msg, "\n")] = 0; /* Dawn's message goes on with where in Dawn it was raised */
  snprintf(s->why, sizeof s->why, "the GPU device was lost (%s); the server is reloading the model", s->lost_msg);
  fprintf(stderr, "wgllm serve: %s\n", s->why);
  for (uint32_t k = 0; k < s->cfg.parallel; k++)
    if (s->slots[k].task) {
      task_fail(s->slots[k].task, 503, "unavailable_error", "device_lost", s->why);
      end_job(s, (int)k);
    }
  while (s->waiting) {
    serve_task *t = unlink_waiting(s, &s->waiting);
    task_fail(t, 503, "unavailable_error", "device_lost", s->why);
    task_finish(s, t);
  }
}

/* under the lock, the tick after device_lost: the sessions and the model are freed and the model is reopened with
   its sessions (cfg.reopen; the lock released meanwhile, text_mu and vocab_mu held, so no prompt or vocabulary call
   sees a freed model). When that fails the scheduler stays unavailable and cfg.fatal is called. */
static void reload(serve_sched *s) {
  struct timespec t0, t1;
  clock_gettime(CLOCK_MONOTONIC, &t0);
  pthread_mutex_unlock(&s->mu);
  pthread_mutex_lock(&s->text_mu);
  pthread_mutex_lock(&s->vocab_mu);
  for (uint32_t i = 0; i < s->cfg.parallel; i++) {
    wgllm_session_free(s->slots[i].session);
    s->slots[i].session = NULL;
    s->slots[i].last_used = 0;
  }
  grammar_cache_clear(s); /* the old model's */
  wgllm_model_free(s->model);
  s->model = NULL;
  char err[512] = "the server has no way to reload it";
  int rc = s->cfg.reopen ? s->cfg.reopen(s->cfg.user, &s->model, err, sizeof err) : -1;
  if (!rc) rc = make_sessions(s, err, sizeof err);
  pthread_mutex_unlock(&s->vocab_mu);
  pthread_mutex_unlock(&s->text_mu);
  pthread_mutex_lock(&s->mu);
  clock_gettime(CLOCK_MONOTONIC, &t1);
  double secs = (double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) * 1e-9;
  if (!rc) {
    s->unavailable = 0;
    fprintf(stderr, "wgllm serve: the model and its sessions are made again after the device loss (%.2f s)\n", secs);
  } else {
    s->unavailable = 2;
    snprintf(s->why, sizeof s->why, "the GPU device was lost (%s) and the model could not be reloaded: %s", s->lost_msg,
             err);
    fprintf(stderr, "wgllm serve: %s\n", s->why);
  }
  s->lost_msg[0] = 0;
  if (rc && s->cfg.fatal) {
    pthread_mutex_unlock(&s->mu);
    s->cfg.fatal(s->cfg.user);
    pthread_mutex_lock(&s->mu);
  }
}

/* under the lock: a tick, and the tasks failed when its step saw the device lost; the tick after that reloads (so
   the failed tasks' answers go out first: the wasm build pumps them between steps) */
static size_t tick(serve_sched *s) {
  if (s->unavailable == 1) {
    reload(s);
    return 0;
  }
  size_t n = tick_jobs(s);
  if (s->lost_msg[0]) device_lost(s);
  return n;
}

int serve_sched_unavailable(serve_sched *s, char *msg, size_t len) {
  pthread_mutex_lock(&s->mu);
  int u = s->unavailable;
  if (u && msg) snprintf(msg, len, "%s", s->why);
  pthread_mutex_unlock(&s->mu);
  return u;
}

const wgllm_vocab *serve_sched_vocab_lock(serve_sched *s) {
  /* not while a reload holds vocab_mu: the wasm build's reload suspends holding it, and its mutexes cannot wait */
  if (serve_sched_unavailable(s, NULL, 0)) return NULL;
  pthread_mutex_lock(&s->vocab_mu);
  if (s->model) return wgllm_model_vocab(s->model);
  pthread_mutex_unlock(&s->vocab_mu); /* a reload that failed */
  return NULL;
}

void serve_sched_vocab_unlock(serve_sched *s) { pthread_mutex_unlock(&s->vocab_mu); }

/* under the lock, stopping: every task still in ends, failed */
static void drain(serve_sched *s) {
  if (s->drained) return;
  s->drained = 1;
  for (uint32_t k = 0; k < s->cfg.parallel; k++)
    if (s->slots[k].task) {
      task_fail(s->slots[k].task, 503, "unavailable_error", NULL, "the server is shutting down");
      end_job(s, (int)k);
    }
  while (s->waiting) {
    serve_task *t = unlink_waiting(s, &s->waiting);
    task_fail(t, 503, "unavailable_error", NULL, "the server is shutting down");
    task_finish(s, t);
  }
}

int serve_sched_step(serve_sched *s) {
  pthread_mutex_lock(&s->mu);
  if (!s->stopping && s->unavailable != 2) tick(s);
  int more = !s->stopping && (s->unavailable == 1 || (s->unavailable != 2 && (s->n_running > 0 || s->waiting != NULL)));
  pthread_mutex_unlock(&s->mu);
  return more;
}

static void *sched_main(void *arg) {
  serve_sched *s = arg;
  pthread_mutex_lock(&s->mu);
  while (!s->stopping)
    if ((s->unavailable == 2 || (!tick(s) && !s->waiting && s->unavailable != 1)) && !s->stopping)
      pthread_cond_wait(&s->work, &s->mu);
  drain(s);
  pthread_mutex_unlock(&s->mu);
  return NULL;
}

/* Builds the GPU pipelines the first requests would otherwise wait for: a short generation (a prompt of about 20
   tokens, 3 tokens sampled with the server's default sampling) on one session, then on 2, 4 and 8 sessions
   together (as many as there are: the batched step's three row counts), each session reset afterwards. On the
   H200 the first round of 8 requests waited 2.0 s for its first token without it, 0.17 s after its 3.95 s
   (docs/perf/16-served-pipeline/callQ_h200).
   Skipped for a context under 4 tokens. Between steps it ends early when config->stop_requested says so.
   Returns 0, or -1 with the reason in err: a server whose sessions cannot generate does not start. */
static int warm_up(serve_sched *s, char *err, size_t errlen) {
  static const char text[] = "The quick brown fox jumps over the lazy dog, and the dog sleeps on in the sun.";
  int32_t ids[256];
  size_t n = 0;
  uint32_t ctx = s->cfg.session.context;
  if (ctx < 4) return 0;
  if (!wgllm_model_has_lm_head(s->model)) return serve_embed_warm_up(s->model, s->slots[0].session, err, errlen);
  wgllm_status st = wgllm_tokenize(s->model, text, sizeof text - 1, 1, ids, 256, &n);
  if (!st && n > 256) n = 256;
  if (!st && n + 4 > ctx) n = ctx / 2; /* a tiny context: a shorter prompt */
  wgllm_kv_pool_stats ps; /* on a pool, less than a block: the warm-up leaves no prompt in its prefix cache */
  if (!st && s->cfg.use_pool && !wgllm_model_kv_pool_stats(s->model, &ps) && n >= ps.block_tokens)
    n = ps.block_tokens - 1;
  if (st || !n) {
    snprintf(err, errlen, "warm-up: tokenizing its prompt failed: %s", wgllm_model_error(s->model));
    return -1;
  }
  wgllm_generate_params gp = wgllm_generate_default_params();
  gp.max_tokens = 3;
  gp.ignore_eos = 1;
  const uint32_t sizes[] = {1, 2, 4, 8};
  uint32_t last = 0;
  int rc = 0;
  for (size_t k = 0; k < sizeof sizes / sizeof sizes[0] && !rc; k++) {
    uint32_t c = sizes[k] < s->cfg.parallel ? sizes[k] : s->cfg.parallel;
    if (c == last) break;
    last = c;
    wgllm_job *jobs[8] = {0};
    for (uint32_t i = 0; i < c && !rc; i++)
      if ((st = wgllm_job_start(s->slots[i].session, ids, n, &gp, &jobs[i]))) {
        snprintf(err, errlen, "warm-up on %u sessions: %s (%s)", c, wgllm_session_error(s->slots[i].session),
                 wgllm_status_name(st));
        rc = -1;
      }
    for (int step = 0; !rc && step < 64; step++) {
      if (s->cfg.stop_requested && s->cfg.stop_requested()) {
        snprintf(err, errlen, "stopped during the warm-up");
        rc = -1;
        break;
      }
      int all = 1;
      for (uint32_t i = 0; i < c; i++)
        all = all && wgllm_job_done(jobs[i]);
      if (all) break;
      wgllm_jobs_step(jobs, c);
    }
    for (uint32_t i = 0; i < c; i++) {
      if (jobs[i] && !rc && (wgllm_job_error(jobs[i])[0] || !wgllm_job_done(jobs[i]))) {
        snprintf(err, errlen, "warm-up on %u sessions: %s", c,
                 wgllm_job_error(jobs[i])[0] ? wgllm_job_error(jobs[i]) : "the jobs did not finish");
        rc = -1;
      }
      wgllm_job_free(jobs[i]);
      wgllm_session_reset(s->slots[i].session);
    }
  }
  return rc;
}

/* The sessions of s->model (at the start, and after a reload), warmed up if asked: 0, or -1 with the reason */
static int make_sessions(serve_sched *s, char *err, size_t errlen) {
  wgllm_model_info info;
  wgllm_model_get_info(s->model, &info);
  s->n_vocab = info.n_vocab;
  int32_t think[2];
  size_t nt = 0; /* a model that thinks has "<think>" as one token (Qwen 3, DeepSeek R1) */
  s->thinks = !wgllm_vocab_tokenize(wgllm_model_vocab(s->model), "<think>", 7, 0, 1, think, 2, &nt) && nt == 1;
  s->harmony = !strcmp(wgllm_model_tool_format(s->model), "harmony");
  if (s->cfg.use_pool) { /* the pool first: the sessions draw from it */
    wgllm_kv_pool_params pp = s->cfg.pool;
    int dflt = !pp.tokens && !pp.bytes;
    if (dflt) pp.tokens = s->cfg.pool_tokens_default;
    wgllm_status st = wgllm_model_kv_pool(s->model, &pp);
    if (st && dflt && st != WGLLM_ERR_INVALID_ARG) { /* that much does not fit: what the device holds */
      pp.tokens = 0;
      st = wgllm_model_kv_pool(s->model, &pp);
    }
    wgllm_kv_pool_stats ps;
    if (!st && !wgllm_model_kv_pool_stats(s->model, &ps) && ps.blocks * ps.block_tokens < pp.max_context) {
      snprintf(err, errlen, "the KV pool holds %u tokens, less than one context of %u (--kv-pool, -c)",
               ps.blocks * ps.block_tokens, pp.max_context);
      return -1;
    }
    if (st == WGLLM_ERR_UNSUPPORTED && dflt) { /* nothing it could hold (every layer a window ring): own caches */
      fprintf(stderr, "wgllm serve: no KV pool (%s); each session keeps a cache of its own\n",
              wgllm_model_error(s->model));
      s->cfg.use_pool = 0;
      s->cfg.session.kv_pool = 0;
    } else if (st) {
      snprintf(err, errlen, "the KV pool: %s (%s)", wgllm_model_error(s->model), wgllm_status_name(st));
      return -1;
    }
  }
  for (uint32_t i = 0; i < s->cfg.parallel; i++) {
    wgllm_status st = wgllm_session_create(s->model, &s->cfg.session, &s->slots[i].session);
    if (st) {
      snprintf(err, errlen, "session %u of %u (a context of %u tokens): %s (%s)", i + 1, s->cfg.parallel,
               s->cfg.session.context, wgllm_last_error(), wgllm_status_name(st));
      return -1;
    }
  }
  return s->cfg.warm_up ? warm_up(s, err, errlen) : 0;
}

int serve_sched_start(wgllm_model *m, const serve_sched_config *config, serve_sched **out, char *err, size_t errlen) {
  *out = NULL;
  serve_sched *s = calloc(1, sizeof *s);
  if (!s || !(s->slots = calloc(config->parallel, sizeof *s->slots)) ||
      !(s->jobs = calloc(config->parallel, sizeof *s->jobs)) ||
      !(s->job_slot = calloc(config->parallel, sizeof *s->job_slot))) {
    if (s) {
      free(s->slots);
      free(s->jobs);
    }
    free(s);
    wgllm_model_free(m);
    snprintf(err, errlen, "out of memory");
    return -1;
  }
  s->model = m;
  s->cfg = *config;
  pthread_mutex_init(&s->mu, NULL);
  pthread_mutex_init(&s->text_mu, NULL);
  pthread_mutex_init(&s->grammar_mu, NULL);
  pthread_mutex_init(&s->vocab_mu, NULL);
  pthread_cond_init(&s->work, NULL);
  if (make_sessions(s, err, errlen)) {
    serve_sched_stop(s);
    return -1;
  }
  if (config->own_thread) {
    int rc = pthread_create(&s->thread, NULL, sched_main, s);
    if (rc) {
      snprintf(err, errlen, "cannot start the scheduler thread: %s", strerror(rc));
      serve_sched_stop(s);
      return -1;
    }
    s->thread_started = 1;
  }
  *out = s;
  return 0;
}

void serve_sched_stop(serve_sched *s) {
  if (!s) return;
  pthread_mutex_lock(&s->mu);
  s->stopping = 1;
  pthread_cond_signal(&s->work);
  pthread_mutex_unlock(&s->mu);
  if (s->thread_started) pthread_join(s->thread, NULL);
  pthread_mutex_lock(&s->mu);
  drain(s); /* stepped by its caller (or the thread never started): the tasks still in end here */
  pthread_mutex_unlock(&s->mu);
  for (uint32_t i = 0; i < s->cfg.parallel; i++)
    wgllm_session_free(s->slots[i].session);
  grammar_cache_clear(s);
  wgllm_model_free(s->model);
  free(s->slots);
  free(s->jobs);
  free(s->job_slot);
  pthread_cond_destroy(&s->work);
  pthread_mutex_destroy(&s->vocab_mu);
  pthread_mutex_destroy(&s->text_mu);
  pthread_mutex_destroy(&s->grammar_mu);
  pthread_mutex_destroy(&s->mu);
  free(s);
}
