/* Glue between the public C API and web/wgllm.js: the callbacks the API takes as C function pointers (log,
   load progress, streamed text) forwarded to JavaScript imports (module "wgllm_host"), so JavaScript never adds
   functions to the wasm table, and small constructors for the params structs JavaScript fills by field. */
#include "wgllm.h"
#include <stdlib.h>
#include <string.h>

#define HOST(name) __attribute__((import_module("wgllm_host"), import_name(name)))
HOST("log") void host_log(int level, const char *msg);
HOST("progress") int host_progress(float fraction, void *user);
HOST("text") int host_text(const char *text, size_t len, void *user);

#define EXPORT(name) __attribute__((export_name(name), visibility("default")))

static void on_log(wgllm_log_level level, const char *msg, void *user) {
  (void)user;
  host_log((int)level, msg);
}
EXPORT("wgllm_web_init") void wgllm_web_init(void) { wgllm_set_log(on_log, NULL); }

static int on_progress(float fraction, void *user) { return host_progress(fraction, user); }
static int on_text(const char *text, size_t len, void *user) { return host_text(text, len, user); }

/* model params with the load's progress forwarded to JavaScript (user: a number JavaScript chose); no_tokenizer:
   weights only (logits of given ids); chat_template: a named override ("chatml", ...) or NULL (JavaScript keeps the
   string until the load returns) */
EXPORT("wgllm_web_model_params")
wgllm_model_params *wgllm_web_model_params(int weights_q4, uint32_t user, int no_tokenizer, const char *chat_template) {
  wgllm_model_params *p = malloc(sizeof *p);
  if (!p) return NULL;
  *p = wgllm_model_default_params();
  p->weights = weights_q4 ? WGLLM_WEIGHTS_Q4 : WGLLM_WEIGHTS_NATIVE;
  p->progress = on_progress;
  p->progress_user = (void *)(uintptr_t)user;
  p->no_tokenizer = no_tokenizer;
  p->chat_template = chat_template;
  return p;
}

EXPORT("wgllm_web_session_params") wgllm_session_params *wgllm_web_session_params(uint32_t context) {
  wgllm_session_params *p = malloc(sizeof *p);
  if (!p) return NULL;
  *p = wgllm_session_default_params();
  if (context) p->context = context;
  return p;
}

/* generation params, text streamed to JavaScript (user: a number JavaScript chose); temperature 0 is greedy */
EXPORT("wgllm_web_generate_params")
wgllm_generate_params *wgllm_web_generate_params(uint32_t max_tokens, float temperature, uint32_t top_k, float top_p,
                                                 float min_p, float repeat_penalty, uint32_t seed, uint32_t user) {
  wgllm_generate_params *p = malloc(sizeof *p);
  if (!p) return NULL;
  *p = wgllm_generate_default_params();
  p->max_tokens = max_tokens;
  p->temperature = temperature;
  p->top_k = top_k;
  p->top_p = top_p;
  p->min_p = min_p;
  p->repeat_penalty = repeat_penalty;
  p->seed = seed;
  p->on_text = on_text;
  p->user = (void *)(uintptr_t)user;
  return p;
}

/* wgllm_generate_stats as numbers JavaScript reads: [prompt, cached, generated, stop] u32 then [prefill s, decode s]
   f64 */
EXPORT("wgllm_web_stats") wgllm_generate_stats *wgllm_web_stats(void) {
  return calloc(1, sizeof(wgllm_generate_stats));
}
