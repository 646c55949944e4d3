/* The error record of llm_err.h: the one place a message is written. */
#include "llm_err.h"
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

wgllm_status llm_err_set(llm_err *e, wgllm_status st, const char *fmt, ...) {
  if (!e) return st;
  char msg[LLM_ERR_MSG_LEN]; /* the arguments may point into e->msg */
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  memcpy(e->msg, msg, sizeof msg);
  e->status = st;
  return st;
}

/* appends s to msg (n bytes used of LLM_ERR_MSG_LEN), truncating as snprintf would */
static void append(char *msg, size_t *n, const char *s) {
  size_t k = strlen(s), room = LLM_ERR_MSG_LEN - 1 - *n;
  if (k > room) k = room;
  memcpy(msg + *n, s, k);
  *n += k;
  msg[*n] = 0;
}

void llm_err_prefix(llm_err *e, const char *fmt, ...) {
  if (!e) return;
  char msg[LLM_ERR_MSG_LEN];
  va_list ap;
  va_start(ap, fmt);
  int k = vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  size_t n = k < 0 ? 0 : (size_t)k < sizeof msg ? (size_t)k : sizeof msg - 1;
  msg[n] = 0;
  append(msg, &n, ": ");
  append(msg, &n, e->msg);
  memcpy(e->msg, msg, sizeof msg);
}

wgllm_status llm_err_copy(llm_err *e, const llm_err *src) {
  if (!src) return WGLLM_OK;
  if (e && e != src) *e = *src;
  return src->status;
}

void llm_err_clear(llm_err *e) {
  if (!e) return;
  e->status = WGLLM_OK;
  e->msg[0] = 0;
}

const char *llm_err_msg(const llm_err *e) { return e ? e->msg : ""; }
