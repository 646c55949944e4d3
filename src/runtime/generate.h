/* The generation loop: prefill a prompt, then sample token after token on the GPU (only ids come back),
   stream text through a callback, stop on end-of-generation tokens, stop strings, a token limit or a full
   context. */
#ifndef WGLLM_GENERATE_H
#define WGLLM_GENERATE_H
#include "session.h"
#include "tokenizer.h"

typedef enum llm_stop_reason {
  LLM_STOP_NONE = 0,
  LLM_STOP_EOG,    /* an end-of-generation token */
  LLM_STOP_STRING, /* a stop string appeared in the text */
  LLM_STOP_MAX_TOKENS,
  LLM_STOP_CALLBACK, /* the callback asked to stop */
  LLM_STOP_CONTEXT   /* the context is full */
} llm_stop_reason;

typedef struct llm_gen_params {
  uint32_t max_tokens;
  op_sample_params sampling; /* temperature <= 0: greedy */
  const char *const *stop;   /* stop strings (not emitted) */
  size_t n_stop;
  int ignore_eog; /* keep going past end-of-generation tokens */
  int pipeline;   /* decode steps kept in flight, 1..LLM_MAX_IN_FLIGHT (0: 2, measured best: PERF.md) */
  /* receives UTF-8 text as it becomes final; return non-zero to stop */
  int (*on_text)(const char *text, size_t len, void *user);
  void *user;
} llm_gen_params;

typedef struct llm_gen_result {
  llm_stop_reason stop;
  uint32_t n_prompt, n_generated;
  double prefill_s, decode_s; /* wall time */
  int32_t *tokens;            /* [n_generated], malloc'd; free with free() */
  char *text;                 /* the generated text (stop string cut), NUL-terminated, malloc'd */
  size_t text_len;
} llm_gen_result;

const char *llm_stop_reason_name(llm_stop_reason r);
/* The session continues from its current position (n_past), so a chat can append turns. */
wgllm_status llm_generate(llm_session *s, const tokenizer *tok, const int32_t *prompt, uint32_t n_prompt,
                          const llm_gen_params *gp, llm_gen_result *res);
void llm_gen_result_free(llm_gen_result *r);
#endif
