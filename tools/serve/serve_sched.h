/* The scheduler of `wgllm serve`: it owns the model and a pool of sessions, and is the only caller of the session
   and job functions of the API (the model's text calls, for prompts, run on the request handlers' threads through
   serve_sched_prepare): on a thread of its own (natively), or stepped by the transport's event loop
   (serve_sched_step: the Node server, on the single-threaded wasm build). Request handlers (serve_handler.c) hand
   it tasks (a parsed request each) and read what it writes into them under its lock: the text generated so far,
   the state, the usage, an error. */
#ifndef WGLLM_SERVE_SCHED_H
#define WGLLM_SERVE_SCHED_H
#include "serve_openai.h"
#include "wgllm.h"
#include <cjson/cJSON.h>
#include <pthread.h>

typedef enum serve_task_state {
  SERVE_TASK_QUEUED = 0, /* waiting for its prompt to be rendered / tokenized, then for a free session, then
                            for its prefill (a chunk a tick) */
  SERVE_TASK_RUNNING,    /* prefilled, the first token sampled: text arrives in out */
  SERVE_TASK_DONE        /* finished (finish_reason), failed (failed, err) or cancelled */
} serve_task_state;

/* One request between an HTTP thread and the scheduler. The fields below the request are written by the
   scheduler under its lock (serve_sched_lock) and read by the HTTP thread under it. */
typedef struct serve_task {
  serve_request req; /* the parsed request (owned) */
  serve_task_state state;
  char *out; /* text generated so far (out_len bytes; the task owns it) */
  size_t out_len, out_cap;
  int failed; /* with err filled (status 400 for a prompt the model refuses, 500 for a GPU failure) */
  serve_error err;
  const char *finish_reason; /* "stop" or "length" once done */
  serve_usage usage;
  uint32_t batched_tokens; /* of usage.completion_tokens, those decoded in a pass batched with other requests */
  int cancelled;           /* set by the HTTP side: the client went away */
  /* scheduler-private */
  int refs;          /* the HTTP side's and the scheduler's: freed when both let go */
  pthread_cond_t cv; /* signalled whenever the fields above change */
  int32_t *ids;      /* the prompt's tokens */
  size_t n_ids;
  int prepared; /* ids are ready */
  int session;  /* index of its session while running, else -1 */
  wgllm_job *job;
  wgllm_generate_params gp;
  /* the request's constraint (or tool_choice's) compiled (serve_sched_prepare), or NULL: shared with the requests
     that gave the same one (the scheduler's grammar cache: the masks computed for one serve the others) */
  struct shared_grammar *grammar;
  /* chat: the reply's parser (tool calls, reasoning), made by serve_sched_prepare, used by the HTTP side alone */
  wgllm_reply_parser *parser;
  int parse_tools; /* calls are parsed (tools offered, tool_choice not "none") */
  int special;     /* the reply's special tokens are text for its parser (call markers, harmony's channels) */
  /* logprobs (req.logprobs): one entry a generated token so far, chat's form ({token, logprob, bytes,
     top_logprobs}), appended by the scheduler after each step */
  cJSON *lp_items;
  size_t n_lp;
  struct serve_task *next;   /* in the scheduler's waiting list */
  struct serve_sched *sched; /* the scheduler it was submitted to (its on_text takes the lock) */
} serve_task;

typedef struct serve_sched_config {
  uint32_t parallel; /* sessions, so requests generating at once */
  /* use_pool: the sessions' caches in one paged KV pool (wgllm_model_kv_pool, made with every model the scheduler
     opens; pool.tokens 0: pool_tokens_default, or what the device holds when that does not fit): admission waits
     for the blocks a prompt needs, idle sessions' caches given back first */
  int use_pool;
  wgllm_kv_pool_params pool;
  uint32_t pool_tokens_default;
  uint32_t queue; /* requests that may wait for a session beyond those; more are refused (503) */
  wgllm_session_params session;
  int warm_up; /* build the pipelines before the first request: a short generation on 1, 2, 4 and 8 sessions */
  /* a chat whose prompt leaves less than a quarter of the context (or its max_tokens, if fewer) for the reply loses
     its oldest messages after the leading system ones, a user message and what follows it at a time, the last user
     message kept (llama.cpp's context shift, for chat); 0: such a prompt past the context is 400. And a reply that
     reaches the context's end shifts it (wgllm_generate_params.context_shift, keeping n_keep tokens: -1 the whole
     prompt, 0 the BOS alone) and goes on to its max_tokens; 0: it stops there (finish_reason "length") */
  int context_shift;
  int32_t n_keep;
  /* speculative decoding, a request's default (its "speculative.*" fields say otherwise): the draft model (where
     *draft is not NULL; its holder's, replaced by reopen, outliving the scheduler), prompt lookup, drafts a step
     at most (0: 7) */
  wgllm_model *const *draft;
  int spec_lookup;
  uint32_t draft_max;
  int (*stop_requested)(void); /* NULL, or non-zero when the warm-up should end early (SIGINT pending) */
  int own_thread;              /* run on a thread of its own; 0: the caller calls serve_sched_step */
  /* A lost device (WGLLM_ERR_DEVICE_LOST from a step): every task in fails (503 device_lost), new ones are refused
     (serve_sched_unavailable), the sessions and the model are freed and reopen makes the model again (0, or -1
     with the reason in err), its sessions made (and warmed up) as at the start. NULL, or a reopen that fails: the
     scheduler stays unavailable for good and calls fatal (on its thread, without its lock; NULL: none), after
     which the server should exit non-zero. */
  int (*reopen)(void *user, wgllm_model **m, char *err, size_t errlen);
  void (*fatal)(void *user);
  void *user;
} serve_sched_config;

typedef struct serve_sched serve_sched;

/* Creates the sessions (config->parallel of them, each config->session), warms them up if asked, and starts the
   thread (config->own_thread). The model becomes the scheduler's (freed by serve_sched_stop, or here on a
   failure; after a device loss it is replaced). Returns 0, or -1 with the reason in err. */
int serve_sched_start(wgllm_model *m, const serve_sched_config *config, serve_sched **out, char *err, size_t errlen);
/* Without a thread of its own: one tick (cancelled tasks ended, new prompts tokenized, waiting tasks started, which
   prefills them a chunk each, and one token of every running job in one batched step). Returns 1 while work remains
   (a task running or waiting: call it again), 0 when idle (call it after the next submit). Not with own_thread. */
int serve_sched_step(serve_sched *s);
/* Stops the thread (running jobs are cancelled, their tasks fail) and frees the sessions. */
void serve_sched_stop(serve_sched *s);

/* A task for the request (moved into it: *req is left empty); NULL when out of memory. */
serve_task *serve_task_new(serve_request *req);
/* Renders and tokenizes the task's prompt (the model's chat template, or the completion's text or ids) and checks it
   against the context, on the calling thread, before serve_sched_submit: 0, or -1 with t->failed and t->err set
   (answer it without submitting). The model's text calls take a mutex of their own (the model's error message is
   one buffer), never the scheduler's lock, so a long prompt holds neither the running streams nor /health. A task
   submitted without it is prepared by the scheduler's next tick. */
int serve_sched_prepare(serve_sched *s, serve_task *t);
/* Whether a task submitted now would be refused (parallel + queue tasks already in, or the scheduler stopping). */
int serve_sched_full(serve_sched *s);
/* Queues it: 0, or -1 when parallel + queue tasks are already in (the answer is then 503; the task stays the
   caller's to release). */
int serve_sched_submit(serve_sched *s, serve_task *t);
/* The HTTP side lets go of the task; when it has not finished, it is cancelled (its job freed at the scheduler's
   next tick, its session back in the pool). */
void serve_sched_release(serve_sched *s, serve_task *t);

void serve_sched_lock(serve_sched *s);
void serve_sched_unlock(serve_sched *s);
/* Under the lock: waits until the task changes or ms pass. */
void serve_sched_wait(serve_sched *s, serve_task *t, int ms);

/* fn(user) is called, under the scheduler's lock, whenever a task changes (new text, running, done): an event-loop
   transport wakes the exchanges it has parked (fn must only signal, never take the scheduler's lock). NULL: none. */
/* The format the model's chat template teaches tool calls in (wgllm_model_tool_format; /props' "tool_format"). */
const char *serve_sched_tool_format(serve_sched *s);
void serve_sched_set_notify(serve_sched *s, void (*fn)(void *user), void *user);

/* 0 while the scheduler serves; after a device loss 1 while the model is being reloaded and 2 once it could not
   be (for good), with the reason in msg (a sentence naming the loss). */
int serve_sched_unavailable(serve_sched *s, char *msg, size_t len);

/* The model's vocabulary for the transport's /tokenize and /detokenize, one caller at a time (its error message is
   one buffer): held until serve_sched_vocab_unlock (a model reload waits for it). NULL, not held, while the
   scheduler is unavailable (serve_sched_unavailable: the device lost). */
const wgllm_vocab *serve_sched_vocab_lock(serve_sched *s);
void serve_sched_vocab_unlock(serve_sched *s);

/* Counts for /health: sessions generating, idle, tasks waiting (under the lock or not). */
void serve_sched_counts(serve_sched *s, uint32_t *busy, uint32_t *idle, uint32_t *waiting);

/* What /metrics and /slots report: totals since the start, and the state now (a copy taken under the lock). */
typedef struct serve_sched_metrics {
  uint64_t requests_ok, requests_failed; /* tasks ended: answered, failed (cancelled ones among neither) */
  uint64_t requests_cancelled;
  uint64_t prompt_tokens, cached_tokens, completion_tokens, batched_tokens; /* of the tasks ended */
  uint64_t accepted_drafts, rejected_drafts;
  uint64_t grammar_compiled, grammar_reused; /* constraints compiled, and taken from the grammar cache */
  uint64_t steps;                            /* wgllm_jobs_step calls */
  double step_seconds;                       /* in them, in all */
  double last_step_ms;                       /* the latest one's */
  uint32_t busy, idle, waiting, parallel, context;
  int has_pool; /* the sessions' caches on a KV pool: its blocks (snapshot after the latest tick) */
  uint32_t pool_blocks, pool_available, pool_cached, pool_block_tokens;
} serve_sched_metrics;
void serve_sched_get_metrics(serve_sched *s, serve_sched_metrics *m);

/* A session's state for /slots. */
typedef struct serve_slot_info {
  int processing;         /* a task on it */
  int prefilling;         /* its prompt not yet prefilled (no token sampled) */
  uint32_t prompt_tokens; /* the task's prompt */
  size_t text_bytes;      /* the text it has generated so far */
} serve_slot_info;
/* info [cfg.parallel] filled; returns how many. */
uint32_t serve_sched_slots(serve_sched *s, serve_slot_info *info, uint32_t cap);
#endif
