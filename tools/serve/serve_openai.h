/* The OpenAI side of `wgllm serve`: request bodies (chat completions, completions, tokenize, detokenize) parsed
   and checked into plain C structs by pure functions (no model, no I/O: tests/fuzz/fuzz_http_request.c fuzzes
   them), and the JSON the server answers with (completions, stream chunks, usage, OpenAI's error object). */
#ifndef WGLLM_SERVE_OPENAI_H
#define WGLLM_SERVE_OPENAI_H
#include <stddef.h>
#include <stdint.h>

/* What a request body's JSON may hold, checked in one pass over its bytes before cJSON builds anything (a body of
   --max-body bytes whose unknown field is a long array would otherwise cost some 30 times its size in nodes): the
   depth of nested arrays and objects (more is 400), and the values in all (every number, string, member, array and
   object; more is 413: at most some 20 MB of nodes). */
#define SERVE_JSON_MAX_DEPTH 128
#define SERVE_JSON_MAX_VALUES 262144

/* A string's "\u0000" as parsed (cJSON's strings end at a NUL): a byte UTF-8 never holds, turned back into the NUL
   byte in every string the server reads (prompt, stop, /tokenize's content; "\u0000" again in chat_json), so that
   NUL bytes are kept with their strings' lengths, never cut. */
#define SERVE_NUL 0xFF

typedef enum serve_kind { SERVE_KIND_CHAT = 0, SERVE_KIND_COMPLETION = 1, SERVE_KIND_EMBEDDING = 2 } serve_kind;

/* What a request may ask for. */
typedef struct serve_limits {
  uint32_t max_tokens;   /* a request's max_tokens at most (more is clamped to it); chat's default when none is given */
  uint32_t max_stop;     /* stop strings a request may give (OpenAI: 4) */
  size_t max_stop_bytes; /* bytes of one stop string */
  size_t max_prompt_ids; /* token ids of a completion prompt given as ids */
  /* chat: special-token text in messages' content becomes its token (--parse-special-in-content) unless a request
     says "parse_special": false; 0 (the default): it is text unless the request says true */
  int parse_special;
} serve_limits;

/* An error answer: HTTP status and OpenAI's {"error": {"message", "type", "param", "code"}}. */
/* n: the most choices a request may ask for */
#define SERVE_MAX_CHOICES 16

typedef struct serve_error {
  int status;       /* 400, 401, 404, 413, 500, 503 */
  const char *type; /* "invalid_request_error", "authentication_error", "server_error", "unavailable_error" */
  char param[64];   /* the field at fault ("" when none) */
  char code[48];    /* OpenAI's code ("context_length_exceeded", ...; "" when none) */
  char message[512];
} serve_error;

/* Fills e (status, type, param, code may be NULL) and returns -1, for `return serve_fail(...)`. */
int serve_fail(serve_error *e, int status, const char *type, const char *param, const char *code, const char *fmt, ...)
    __attribute__((format(printf, 6, 7)));

typedef enum serve_constrain {
  SERVE_CONSTRAIN_NONE = 0,
  SERVE_CONSTRAIN_GBNF,
  SERVE_CONSTRAIN_JSON_SCHEMA,
  SERVE_CONSTRAIN_JSON_OBJECT
} serve_constrain;
#define SERVE_MAX_LOGIT_BIAS 1024 /* entries of a request's logit_bias */
typedef enum serve_tool_choice {
  SERVE_TOOLS_AUTO = 0, /* calls parsed where the model makes them */
  SERVE_TOOLS_NONE,     /* the tools are not offered: the reply is text */
  SERVE_TOOLS_REQUIRED, /* the reply is one call (a grammar of the model's format over the tools) */
  SERVE_TOOLS_NAMED     /* the reply is one call of tool_name */
} serve_tool_choice;

/* A chat completion or completion request, every field checked and defaulted. */
typedef struct serve_request {
  serve_kind kind;
  /* embeddings: the inputs and their vectors (serve_embed.h), else NULL */
  struct serve_embed *embed;
  char *model; /* as given ("" when absent): the server has one model and answers with its own id */
  /* chat: {"messages": [...], "tools": [...], "chat_template_kwargs": {...}, "parse_special": B} for wgllm_chat_prompt
   */
  char *chat_json;
  size_t chat_json_len;
  char *prompt; /* completion: the text, NUL bytes kept (NULL when given as token ids) */
  size_t prompt_len;
  int32_t *prompt_ids; /* completion: the prompt as token ids */
  size_t n_prompt_ids;
  char *suffix; /* completion: the text after the one to write (fill in the middle), NULL when none or "" */
  size_t suffix_len;
  uint32_t max_tokens;     /* max_completion_tokens, else max_tokens, else the default (chat: limits, completion 16) */
  int max_tokens_given;    /* one of them was given */
  uint32_t n_choices;      /* n: 1..SERVE_MAX_CHOICES choices, each its own sequence (not with stream) */
  float temperature;       /* [0, 2], default 0.8 (0: greedy) */
  float top_p;             /* [0, 1], default 0.95 */
  uint32_t top_k;          /* default 40 (0: off) */
  float min_p;             /* [0, 1], default 0.05 */
  float repeat_penalty;    /* (0, 100], default 1 (off); llama.cpp's multiplicative penalty */
  uint32_t repeat_last_n;  /* [0, 256] (-1 given: 256), default 64 */
  float presence_penalty;  /* [-2, 2], default 0 (off); OpenAI's, over the same window */
  float frequency_penalty; /* [-2, 2], default 0 (off) */
  uint32_t seed;
  int seed_given;   /* a seed other than -1 */
  char **stop;      /* stop strings (a string or an array of them), NUL bytes kept */
  size_t *stop_len; /* their lengths */
  size_t n_stop;
  int stream;        /* server-sent events */
  int include_usage; /* stream_options.include_usage: a last chunk with usage */
  int ignore_eos;    /* llama-server's extension: generate past end-of-generation tokens */
  int echo;          /* completions: the answer's text starts with the prompt's */
  /* speculative decoding (-1 each: the server's default): "speculative.n_max" (llama-server's: drafts a step at
     most, 0..15, 0: none), "speculative.lookup" and "speculative.draft" (wgllm's: prompt lookup, the server's draft
     model) */
  int spec_n_max, spec_lookup, spec_draft;
  /* constrained decoding (docs/SERVING.md, "Structured output"): response_format {"type": "json_object"} (any
     object, or llama-server's "schema" beside it), {"type": "json_schema", "json_schema": {"schema": ...}}, or
     llama-server's "json_schema" (a schema) and "grammar" (GBNF) fields; constraint holds the schema's JSON text or
     the grammar (malloc'd), constraint_param the field it came from (for errors) */
  serve_constrain constrain;
  char *constraint;
  size_t constraint_len;
  const char *constraint_param;
  /* chat: tools (the array as given, for tool_choice's grammar) and the names of their functions (calls of others
     stay content); tool_choice; tool_name: the named function of SERVE_TOOLS_NAMED */
  char *tools_json;
  char **tool_names;
  size_t n_tools;
  serve_tool_choice tool_choice;
  char *tool_name;
  int reasoning_inline; /* "reasoning_format": "none": a <think> block stays in content (else reasoning_content) */
  /* logprobs: chat's "logprobs": true and "top_logprobs" (0..20), completions' "logprobs": N (0..5: the top N) */
  int logprobs;
  uint32_t top_logprobs;
  /* logit_bias: {"id": bias} with bias in [-100, 100], ids distinct (checked against the vocabulary at start) */
  int32_t *bias_ids;
  float *bias;
  size_t n_bias;
} serve_request;

/* Parses a POST body of /v1/chat/completions (kind CHAT) or /v1/completions (COMPLETION) into *out. The body must
   be valid UTF-8 and a JSON object; unknown fields are ignored, fields the engine cannot honour (n > 1,
   logprobs, logit_bias, non-text content parts, ...) are refused by name.
   Returns 0, or -1 with *err filled (status 400) and *out left empty. */
int serve_parse_request(serve_kind kind, const char *body, size_t len, const serve_limits *lim, serve_request *out,
                        serve_error *err);
void serve_request_free(serve_request *r); /* frees what the parse allocated; the struct may be parsed into again */
/* A request parsed under a server's limits fitted to one model's (lim: its context): max_tokens clamped to its
   limit, and a chat's default (none given) its limit. */
void serve_request_fit(serve_request *r, const serve_limits *lim);

/* POST /tokenize: {"content": "...", "add_special": false, "parse_special": true, "with_pieces": false}
   (llama-server's fields and defaults). content is malloc'd. */
#define SERVE_MODEL_NAME_MAX 256 /* bytes of a model's name in /tokenize and /detokenize, with its NUL */
typedef struct serve_tokenize_request {
  char *content;
  size_t content_len;
  int add_special, parse_special, with_pieces;
  char model[SERVE_MODEL_NAME_MAX]; /* "model": whose vocabulary ("" the default; a server of several models) */
} serve_tokenize_request;
int serve_parse_tokenize(const char *body, size_t len, serve_tokenize_request *out, serve_error *err);
/* POST /detokenize: {"tokens": [ids], "model": name}; *ids malloc'd (NULL when none), each in [0, 2^31); model ""
   when not given. */
int serve_parse_detokenize(const char *body, size_t len, size_t max_ids, int32_t **ids, size_t *n,
                           char model[SERVE_MODEL_NAME_MAX], serve_error *err);

/* The offset of the first byte of s[0..n) that is not valid UTF-8, or -1 when all of it is. */
long serve_utf8_invalid_at(const char *s, size_t n);

/* ---------- answers (malloc'd JSON text, NULL when out of memory) ---------- */
typedef struct cJSON cJSON;
/* A JSON string of s[0..n), NUL bytes kept (as SERVE_NUL until serve_print_json writes them "\u0000"). */
cJSON *serve_string_n(const char *s, size_t n);
/* j printed (unformatted), SERVE_NUL in its strings written "\u0000", and j deleted. */
char *serve_print_json(cJSON *j);
char *serve_error_json(const serve_error *e);

typedef struct serve_usage {
  uint32_t prompt_tokens, completion_tokens, cached_tokens;
  /* speculative decoding's drafts, accepted and rejected (OpenAI's completion_tokens_details names; written where
     drafts were checked) */
  uint32_t accepted_drafts, rejected_drafts;
  uint32_t dropped_messages;      /* a chat's oldest messages the context shift left out (prompt_tokens_details) */
  double prompt_ms, predicted_ms; /* the prefill's and the decode's time (llama-server's "timings") */
} serve_usage;

/* The id, creation time and model every answer of one request carries. */
typedef struct serve_answer {
  serve_kind kind;
  const char *id; /* "chatcmpl-..." / "cmpl-..." */
  long long created;
  const char *model;
} serve_answer;

/* What a choice carries beside its text: a chat message's reasoning_content and tool_calls (the reply parser's), and
   the choice's logprobs. Each NULL when absent. */
typedef struct serve_extras {
  const char *reasoning; /* NUL-terminated */
  cJSON *tool_calls;     /* borrowed: whole calls [{id, type, function: {name, arguments}}], or a chunk's entries
                            (a call's start {index, id, type, function: {name, arguments: ""}}, a fragment {index,
                            function: {arguments}}) */
  cJSON *logprobs;       /* borrowed: the choice's logprobs object (chat's {"content": [...]}, completions' form) */
  uint32_t index;        /* a stream chunk's choice (n > 1) */
} serve_extras;

/* The whole (non-streamed) chat.completion or text_completion object (x: NULL or the extras; a chat message with
   tool calls and no text has content null), with the usage and llama-server's "timings"
   (prompt_n, prompt_ms, prompt_per_token_ms, prompt_per_second, predicted_n, predicted_ms, predicted_per_token_ms,
   predicted_per_second, cache_n). */
char *serve_completion_json(const serve_answer *a, const char *text, size_t len, const char *finish_reason,
                            const serve_usage *u, const serve_extras *x);
/* One stream chunk (chat.completion.chunk / text_completion): text (may be NULL) as the delta, with x's reasoning and
   tool calls beside it (x may be NULL), x's logprobs in the choice; role set in the
   first chat chunk; finish_reason NULL but in the last; usage: the include_usage chunk (no choices), else NULL
   ("usage": null is written when with_usage_null); timings: NULL, or the "timings" the chunk carries (the last
   text chunk's and the usage chunk's, as llama-server sends them). */
char *serve_chunk_json(const serve_answer *a, const char *text, size_t len, int with_role, const char *finish_reason,
                       const serve_usage *usage, int with_usage_null, const serve_usage *timings,
                       const serve_extras *x);
#endif
