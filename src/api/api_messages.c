/* The public API's messages: the thread's last error, the handles' errors, the log callback, and the helpers the
   API's files share to set them (api_internal.h). */
#include "api_internal.h"
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static _Thread_local llm_err g_last_error;

const char *wgllm_last_error(void) { return g_last_error.msg; }
llm_err *api_last_error(void) { return &g_last_error; }

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

wgllm_status api_fail_at(wgllm_status st, const char *path, const llm_err *reason) {
  if (!strncmp(reason->msg, path, strlen(path))) return llm_err_set(&g_last_error, st, "%s", reason->msg);
  return llm_err_set(&g_last_error, st, "%s: %s", path, reason->msg);
}
const char *wgllm_model_error(const wgllm_model *m) { return m ? m->err.msg : ""; }
const char *wgllm_session_error(const wgllm_session *s) { return s ? s->err.msg : ""; }
void wgllm_free(void *p) { free(p); }
