/* Chat prompts: the model's own chat template (tokenizer_config.json, chat_template.jinja or GGUF
   tokenizer.chat_template) run by the Jinja subset of jinja.h, giving the prompt transformers'
   apply_chat_template gives; and four templates written out in C (Llama 3, ChatML, Gemma, Llama 2), which are
   the named overrides (chat_template "llama3" ...) and what a model with no template at all gets (picked from
   its special tokens). A model template that does not parse is an error, never a fallback to a named one. */
#ifndef WGLLM_CHAT_H
#define WGLLM_CHAT_H
#include "jinja.h"
#include "llm_err.h"
#include "tokenizer.h"
#include <cjson/cJSON.h>
#include <stddef.h>

typedef enum chat_template { CHAT_NONE = 0, CHAT_LLAMA3, CHAT_CHATML, CHAT_GEMMA, CHAT_LLAMA2 } chat_template;

typedef struct chat_msg {
  const char *role; /* "system", "user", "assistant" */
  const char *content;
} chat_msg;

/* "llama3", "chatml", "gemma", "llama2", "none"; returns -1 for an unknown name */
int chat_template_from_name(const char *name);
const char *chat_template_name(chat_template t);
/* From the model's Jinja template text when it has one, else from the special tokens in its vocabulary. */
chat_template chat_template_detect(const char *jinja, const tokenizer *tok);
/* The prompt text for the conversation (special tokens as text: encode with parse_special = 1 and
   add_special = 0). add_generation_prompt opens the assistant's turn. Returns malloc'd text. */
char *chat_format(chat_template t, const chat_msg *msgs, size_t n, int add_generation_prompt);

/* ---- the renderer a model holds ---- */
typedef struct chat_renderer chat_renderer;
/* forced: a template name (chat_template_from_name; unknown names are WGLLM_ERR_INVALID_ARG) that overrides the
   model's, or NULL. jinja: the model's template text, or NULL. With jinja and no forced name the template is
   parsed here; a template outside the subset fails (WGLLM_ERR_UNSUPPORTED, or WGLLM_ERR_FORMAT for a syntax
   error) naming the construct and its line. With neither, the named template comes from the special tokens
   (chat_template_detect). bos_token and eos_token for the template are the texts of the tokenizer's BOS and EOS
   (tok may be NULL: then they are undefined). */
wgllm_status chat_renderer_create(const char *forced, const char *jinja, const tokenizer *tok, chat_renderer **out,
                                  llm_err *err);
void chat_renderer_free(chat_renderer *r);              /* NULL is a no-op */
const char *chat_renderer_name(const chat_renderer *r); /* "jinja" (the model's own) or the named template's */
int chat_renderer_adds_bos(const chat_renderer *r);     /* no template writes BOS: the tokenizer must add it */

/* A conversation as a server receives it (OpenAI-style JSON, borrowed). */
typedef struct chat_request {
  /* [{role, content, ...}]: content a string, null or a list of {"type": "text", "text": ...} parts; the model's
     template also reads tool_calls, name, tool_call_id, reasoning_content as it wishes */
  const cJSON *messages;
  const cJSON *tools;  /* a list of JSON function schemas, or NULL */
  const cJSON *kwargs; /* more template variables as an object (enable_thinking, date_string, ...), or NULL */
  int add_generation_prompt;
} chat_request;
/* The prompt text (*out malloc'd; special tokens as text: encode with parse_special = 1 and add_special =
   chat_renderer_adds_bos). The model's template sees messages, tools (None when not given), documents (None),
   add_generation_prompt, bos_token, eos_token and the kwargs, as transformers passes them; kwargs may not set
   the first four. A named template takes string (or text-part) contents only; llama3, chatml and gemma render
   tools, tool calls and tool results in their family's tool format (docs/CHAT_TEMPLATES.md, "Tools"), llama2 and
   none refuse them.
   lim NULL: jinja_default_limits(). Errors name what failed (raise_exception's message, the construct). */
wgllm_status chat_renderer_apply(const chat_renderer *r, const chat_request *q, const jinja_limits *lim, char **out,
                                 llm_err *err);
#endif
