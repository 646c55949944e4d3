/* What the files of the public API share and nothing else may call: the handles' structs, the thread's
   last-error message, the log. */
#ifndef WGLLM_API_INTERNAL_H
#define WGLLM_API_INTERNAL_H
#include "chat.h"
#include "gpu.h"
#include "jobs.h"
#include "model.h"
#include "tokenizer.h"
#include "wgllm.h"

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
  llm_job_stepper stepper; /* wgllm_jobs_step's batched decode */
  char err[1024];
};

struct wgllm_session {
  wgllm_model *model;
  llm_session *s;
  struct wgllm_job *job; /* the job that last started on it (one not done keeps others off it) */
  char err[1024];
};

struct wgllm_job {
  wgllm_session *session;
  llm_job job;
  char err[1024];
};

/* The message of a model loaded without its tokenizer, when a text call is made on it. */
extern const char api_no_tokenizer[];
/* Writes the message into err (a handle's 1024 bytes, or the thread's) and returns st. */
wgllm_status api_fail(char *err, wgllm_status st, const char *fmt, ...);
/* The thread's message buffer (1024 bytes) that wgllm_last_error() returns, for api_fail. */
char *api_last_error(void);
/* Sets the message wgllm_last_error() returns on this thread. */
void api_set_last_error(const char *fmt, ...);
/* Sets it to "PATH: REASON", or to REASON alone where the reason already begins with the path (the GGUF reader
   and the config parser name the file themselves). Returns st. */
wgllm_status api_fail_at(wgllm_status st, const char *path, const char *reason);
/* Sends a message to the log callback (wgllm_set_log), if any. */
void api_log(wgllm_log_level level, const char *fmt, ...);
/* Generates from the prompt ids on s, reusing the cached prefix: a job run to its end (reply and stats may be
   NULL). */
wgllm_status api_run_ids(wgllm_session *s, const int32_t *ids, size_t n, const wgllm_generate_params *params,
                         char **reply, wgllm_generate_stats *stats);
#endif
