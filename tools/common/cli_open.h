/* Opening a model and a session through the public API with the common options (cli_options.h), for the
   command-line programs that make sessions (wgllm's commands, wgllm serve). */
#ifndef WGLLM_CLI_OPEN_H
#define WGLLM_CLI_OPEN_H
#include "cli_options.h"
#include "wgllm.h"
#include <signal.h>
#include <stdint.h>

/* Set by a command's SIGINT handler (chat, run: Ctrl-C); the load progress stops a load when it is set. */
extern volatile sig_atomic_t cli_interrupted;

/* The model (without its tokenizer when no_tokenizer) and a session (when s != NULL) through the public API,
   with the common options: progress of the load and of long prompts on a terminal, log messages (warnings;
   everything with -v) on stderr. The session's context: c->ctx, else default_ctx, else the library's default, the
   model's trained length (the library falls back by halves to 4096 when that does not fit the device, and warns
   about a context beyond the trained length, both through the log); *ctx (may be NULL) gets it. Prints the error
   and returns non-zero on failure (130 when interrupted). */
int cli_open(const cli_common *c, uint32_t default_ctx, wgllm_model **m, wgllm_session **s, uint32_t *ctx,
             int no_tokenizer);
/* The status of this thread's latest model load through cli_open (WGLLM_OK after one that loaded): a caller that
   can free memory tells WGLLM_ERR_OUT_OF_MEMORY from the other failures by it. */
extern _Thread_local wgllm_status cli_open_status;
/* Loads the draft model at path (-md) with the common options and checks that it can propose tokens for m
   (wgllm_model_check_draft); prints why not and returns the exit status, else 0 with *draft set. */
int cli_open_draft(const cli_common *c, const char *path, wgllm_model *m, wgllm_model **draft);
/* Session parameters with the common options applied (-ub, --kv, --unfused, --attn-grid, --precision); the
   context and the prefill callback are the caller's. */
wgllm_session_params cli_session_params(const cli_common *c);
/* The prefill progress of cli_open's sessions: "prompt: 0/N tokens" before a prompt of n tokens is evaluated
   (large ones only; the session's callback then counts the passes). */
void cli_prefill_begin(uint32_t n);
#endif
