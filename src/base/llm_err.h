/* The error record: one status and one message, set in one place (llm_err_set) and read where the error is acted
   on. Every internal call that can fail takes an llm_err * (NULL: the caller does not want the message) in place of
   a message buffer; each public handle holds one, which wgllm_model_error() and the like return. */
#ifndef LLM_ERR_H
#define LLM_ERR_H
#include "wgllm.h"

#define LLM_ERR_MSG_LEN 1024

typedef struct llm_err {
  wgllm_status status;       /* WGLLM_OK when no error is recorded */
  char msg[LLM_ERR_MSG_LEN]; /* "" when none */
} llm_err;

#if defined(__GNUC__)
#define LLM_ERR_PRINTF(f, a) __attribute__((format(printf, f, a)))
#else
#define LLM_ERR_PRINTF(f, a)
#endif

/* Records st and the message (replacing what e held) and returns st. e may be NULL. */
wgllm_status llm_err_set(llm_err *e, wgllm_status st, const char *fmt, ...) LLM_ERR_PRINTF(3, 4);
/* Puts context before the message e holds: "reason" becomes "context: reason" (the status stays). e may be NULL. */
void llm_err_prefix(llm_err *e, const char *fmt, ...) LLM_ERR_PRINTF(2, 3);
/* Copies src's status and message into e (the message of a lower object's record, read up). Returns the status. */
wgllm_status llm_err_copy(llm_err *e, const llm_err *src);
/* Empties e: WGLLM_OK and "". e may be NULL. */
void llm_err_clear(llm_err *e);
/* e's message ("" when e is NULL or holds none). */
const char *llm_err_msg(const llm_err *e);
#endif
