/* What the files of the public API share and nothing else may call: the handles' structs, the thread's
   last-error message, the log. */
#ifndef WGLLM_API_INTERNAL_H
#define WGLLM_API_INTERNAL_H
#include "chat.h"
#include "gpu.h"
#include "grammar_tokens.h"
#include "jobs.h"
#include "model.h"
#include "tokenizer.h"
#include "tool_calls.h"
#include "wgllm.h"
#include <pthread.h>

struct wgllm_vocab {
  tokenizer *tok;
  int owned;   /* loaded by wgllm_vocab_load (a model's vocabulary belongs to the model) */
  llm_err err; /* the last failure of a call on the handle */
};

struct wgllm_model {
  gpu_context *gpu;
  llm_model *m;
  tokenizer *tok;
  wgllm_vocab vocab;   /* over tok, not owned */
  chat_renderer *chat; /* NULL when the model's own template does not parse: chat_err says why */
  llm_err chat_err;
  llm_job_stepper stepper; /* wgllm_jobs_step's batched decode */
  llm_kv_pool *pool;       /* wgllm_model_kv_pool's, or NULL */
  grammar_vocab *gvocab;   /* the vocabulary as grammars see it (made by the first wgllm_grammar_create), or NULL */
  chat_tool_format tool_format; /* the format its chat template teaches tool calls in (wgllm_model_tool_format) */
  pthread_mutex_t gvocab_lock;
  llm_err err; /* the last failure of a call on the handle */
  /* for tests (WGLLM_TEST_DEVICE_LOSS_STEP, read at load): the device is lost at the model's lose_at_step-th call of
     wgllm_job_step / wgllm_jobs_step (steps counts them); 0: never */
  uint64_t steps, lose_at_step;
};

struct wgllm_grammar {
  const wgllm_model *model; /* the model whose vocabulary it was made for */
  grammar *g;
  grammar_cache *cache; /* its masks over the model's vocabulary, shared by the jobs that use it */
};

struct wgllm_session {
  wgllm_model *model;
  llm_session *s;
  /* speculative decoding's draft model (wgllm_generate_params.draft_model): a session of it following this one's
     text (made by the first job that asks for it, replaced when a job names another model), or NULL */
  llm_session *draft;
  const wgllm_model *draft_model;
  struct wgllm_job *job; /* the job that last started on it (one not done keeps others off it) */
  llm_err err;           /* the last failure of a call on the handle */
};

struct wgllm_job {
  wgllm_session *session;
  llm_job job;
  llm_err err; /* the last failure of a call on the handle */
};

/* The message of a model loaded without its tokenizer, when a text call is made on it. */
extern const char api_no_tokenizer[];
/* The thread's error record, whose message wgllm_last_error() returns: the create calls' (and a describe call's)
   failures, set with llm_err_set. */
llm_err *api_last_error(void);
/* Sets the thread's record to st and "PATH: REASON", or REASON alone where the reason already begins with the path
   (the GGUF reader and the config parser name the file themselves); reason may be the thread's record. Returns st. */
wgllm_status api_fail_at(wgllm_status st, const char *path, const llm_err *reason);
/* Sends a message to the log callback (wgllm_set_log), if any. */
void api_log(wgllm_log_level level, const char *fmt, ...);
/* Generates from the prompt ids on s, reusing the cached prefix: a job run to its end (reply and stats may be
   NULL). */
wgllm_status api_run_ids(wgllm_session *s, const int32_t *ids, size_t n, const wgllm_generate_params *params,
                         char **reply, wgllm_generate_stats *stats);
#endif
