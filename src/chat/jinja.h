/* A Jinja2 subset for the chat templates models ship (tokenizer_config.json, chat_template.jinja, GGUF
   tokenizer.chat_template), rendering what transformers' apply_chat_template renders: Jinja 3.1 with
   trim_blocks and lstrip_blocks, the loopcontrols extension, transformers' {% generation %} tag, its tojson
   (json.dumps, ensure_ascii=False, keys in order) and its raise_exception / strftime_now globals.
   docs/CHAT_TEMPLATES.md lists the statements, filters, tests and methods. A construct outside the subset is an
   error naming it and its line, at parse time (tags, filters, tests) or when reached (methods, functions);
   nothing is skipped silently. Every render is bounded by jinja_limits. */
#ifndef WGLLM_JINJA_H
#define WGLLM_JINJA_H
#include "llm_err.h"
#include "wgllm.h"
#include <cjson/cJSON.h>
#include <stddef.h>
#include <stdint.h>
#include <time.h>

typedef struct jinja_template jinja_template;

/* Bounds of one render, so that a hostile template can neither hang nor exhaust memory. Past any of them the
   render fails with WGLLM_ERR_INVALID_ARG naming the limit and the line. */
typedef struct jinja_limits {
  size_t max_output;       /* bytes of rendered text, and of any one string or captured block (16 MiB) */
  size_t max_memory;       /* bytes the render may hold for values at once (64 MiB) */
  uint64_t max_iterations; /* loop iterations over the whole render, also the longest list (1,000,000) */
  uint64_t max_steps;      /* evaluated expressions and statements, plus bytes scanned / 64 (50,000,000) */
  int max_depth;           /* nested macro calls (64) */
  time_t now;              /* the time strftime_now formats (local time); 0: the current time */
} jinja_limits;
jinja_limits jinja_default_limits(void);

/* Templates over 4 MiB and expressions or blocks nested deeper than 128 are refused (WGLLM_ERR_UNSUPPORTED). */
#define JINJA_MAX_SOURCE (4u << 20)
#define JINJA_MAX_NESTING 128

/* Parses src (len bytes, UTF-8). A syntax error is WGLLM_ERR_FORMAT, a tag, filter or test outside the subset
   WGLLM_ERR_UNSUPPORTED; err says what and at which line ("unsupported filter 'xyz' at line 3"). The template is
   immutable afterwards: one may be rendered from several threads at once. */
wgllm_status jinja_parse(const char *src, size_t len, jinja_template **out, llm_err *err);
void jinja_free(jinja_template *t); /* NULL is a no-op */

/* Renders with the members of vars (a JSON object, or NULL) as the template's variables: messages,
   add_generation_prompt, bos_token, tools, ... (JSON numbers without a fraction become ints). lim NULL: the
   defaults. *out is malloc'd and NUL-terminated, *len its length (len may be NULL). Errors: raise_exception
   (WGLLM_ERR_INVALID_ARG, its message), a type error or an undefined value used as an object
   (WGLLM_ERR_INVALID_ARG), a method or function outside the subset (WGLLM_ERR_UNSUPPORTED), a limit
   (WGLLM_ERR_INVALID_ARG), memory refused (WGLLM_ERR_OUT_OF_MEMORY); each names the line. */
wgllm_status jinja_render(const jinja_template *t, const cJSON *vars, const jinja_limits *lim, char **out, size_t *len,
                          llm_err *err);
#endif
