/* OpenAI tool calls in a model's reply: which format a model was taught (from its chat template or the named
   template), the parser that turns a reply's text into content, reasoning (a leading <think> block) and tool calls
   {id, name, arguments} (gpt-oss's harmony: its channels into reasoning and content, its to=functions.NAME messages
   into calls), whole or streamed piece by piece with the same result (a call's arguments in fragments, as OpenAI
   streams them), and the text that opens a call in each format (for tool_choice "required" or a named function).
   docs/CHAT_TEMPLATES.md, "Tools", describes the formats, the trimming and what a malformed call becomes. */
#ifndef WGLLM_TOOL_CALLS_H
#define WGLLM_TOOL_CALLS_H
#include "llm_err.h"
#include <stddef.h>
#include <stdint.h>

typedef enum chat_tool_format {
  CHAT_TOOLS_NONE = 0,    /* no tool calls: the reply is content (and reasoning) */
  CHAT_TOOLS_LLAMA3_JSON, /* Llama 3.1-3.3: the reply is {"name": ..., "parameters": {...}} (after <|python_tag|>) */
  CHAT_TOOLS_HERMES,      /* Qwen 2.5 / 3, Hermes: <tool_call>\n{"name": ..., "arguments": {...}}\n</tool_call> */
  CHAT_TOOLS_MISTRAL,     /* Mistral: [TOOL_CALLS] [{"name": ..., "arguments": {...}}] or [TOOL_CALLS]name[ARGS]{...} */
  CHAT_TOOLS_GEMMA,       /* Gemma 1-3 by prompt: ```tool_code\nname(a=1, b="x")\n``` */
  CHAT_TOOLS_GEMMA4,      /* Gemma 4: <|tool_call>call:name{a:1,b:<|"|>x<|"|>}<tool_call|> */
  /* gpt-oss's harmony: <|channel|>analysis<|message|>...<|end|><|start|>assistant<|channel|>final<|message|>...,
     a call <|channel|>commentary to=functions.name <|constrain|>json<|message|>{...}<|call|> */
  CHAT_TOOLS_HARMONY,
} chat_tool_format;

/* "none", "llama3_json", "hermes", "mistral", "gemma", "gemma4", "harmony" */
const char *chat_tool_format_name(chat_tool_format f);

/* The format a model writes its calls in. named: the chat_template enum value of the named template the renderer
   uses (a forced name, or a model without a template), which decides; -1 when the model's own Jinja template
   renders the prompt: then from its text (jinja_template, may be NULL): <|channel|> harmony, <|tool_call> Gemma 4,
   <tool_call> Hermes, [TOOL_CALLS] Mistral, <|python_tag|> or ipython / "parameters" beside <|start_header_id|> Llama
   3, tool_code Gemma; a template with none of them (Llama 3.0, Gemma 3's own) did not teach a format: NONE. Named:
   llama3 LLAMA3_JSON, chatml HERMES, gemma GEMMA, llama2 and none NONE (they refuse tools). */
chat_tool_format chat_tool_format_detect(const char *jinja_template, int named);

typedef struct chat_reply_opts {
  int split_reasoning; /* a leading <think>...</think> goes to reasoning, not content (Qwen 3, DeepSeek R1); harmony's
                          analysis channel is reasoning whatever this says (its markers are never content) */
  int thinking_open;   /* the prompt ended inside <think>: the reply starts in reasoning (needs split_reasoning) */
  /* the names of the request's functions: a call naming another stays content. NULL: any name is a call */
  const char *const *tool_names;
  size_t n_tool_names;
  uint64_t id_seed; /* 0: call ids from a random source; else deterministic ids from this seed (tests) */
} chat_reply_opts;

typedef struct chat_tool_call {
  int index;       /* 0, 1, ... in the order of the reply */
  char *id;        /* "call_" + 24 random letters and digits (Mistral: 9, as its templates require), unique */
  char *name;      /* the function's name (UTF-8) */
  char *arguments; /* a JSON object, compact: the model's text without the whitespace between tokens */
} chat_tool_call;

/* The parse of a whole reply: every string is malloc'd and NUL-terminated, "" when empty (never NULL). */
typedef struct chat_reply {
  char *content;
  size_t content_len;
  char *reasoning;
  size_t reasoning_len;
  chat_tool_call *tool_calls;
  size_t n_tool_calls;
} chat_reply;

/* Parses a whole reply (text, len bytes; o NULL: defaults, all zero): the stream fed the text in one piece, each
   call's arguments the concatenation of its fragments. Never fails on the text: a call whose header is not a
   well-formed call of a known name (bad JSON, an unknown function, a block left open before its arguments) stays in
   content as written; a call committed by its header keeps what its arguments were (docs/CHAT_TEMPLATES.md). Fails only
   for memory (WGLLM_ERR_OUT_OF_MEMORY) or a NULL text with len > 0 (WGLLM_ERR_INVALID_ARG). Free *out with
   chat_reply_free (also after a failure). */
wgllm_status chat_reply_parse(chat_tool_format f, const char *text, size_t len, const chat_reply_opts *o,
                              chat_reply *out, llm_err *err);
void chat_reply_free(chat_reply *r); /* frees the members and zeroes *r; NULL is a no-op */

/* ---- streaming: pieces in, what became final out ---- */
typedef struct chat_reply_stream chat_reply_stream;

/* One event of a tool call in a delta, as OpenAI streams calls: a call's first event carries its id and name (and
   maybe the first fragment of its arguments), the later ones more of its arguments. A call's arguments are the
   concatenation of its events' fragments, in order. */
typedef struct chat_tool_call_delta {
  int index;             /* the call's index in the reply (0, 1, ...) */
  const char *id;        /* the call's id on its first event, else NULL */
  const char *name;      /* the function's name on the call's first event, else NULL */
  const char *arguments; /* this event's fragment of the arguments (compact JSON text), NUL-terminated, maybe "" */
  size_t arguments_len;
} chat_tool_call_delta;

/* What became final with one push or the finish. The members belong to the stream and stay valid until its next
   push, finish or free. Text that may still start a call marker or <think>/</think>, whitespace that may still
   turn out to border a call or end the reasoning, and a call whose header (marker, name, the start of its
   arguments) is not yet complete are held back; a committed call's arguments come out as they arrive. The
   concatenation of every delta's content (reasoning, each call's arguments) equals chat_reply_parse's on the whole
   text, whatever the pieces. */
typedef struct chat_reply_delta {
  const char *content; /* NUL-terminated, "" when nothing */
  size_t content_len;
  const char *reasoning;
  size_t reasoning_len;
  const chat_tool_call_delta *tool_calls; /* call events in reply order (at most one per call in a delta) */
  size_t n_tool_calls;
} chat_reply_delta;

/* o is copied (tool_names are borrowed: they must outlive the stream). NULL when out of memory. */
chat_reply_stream *chat_reply_stream_create(chat_tool_format f, const chat_reply_opts *o);
/* Adds piece (n bytes) of the reply. WGLLM_OK, or WGLLM_ERR_OUT_OF_MEMORY (the stream is then spent: every later
   call fails). d is always filled (empty on failure). */
wgllm_status chat_reply_stream_push(chat_reply_stream *st, const char *piece, size_t n, chat_reply_delta *d);
/* The reply ended: releases what was held back (a call whose header never completed stays content; a committed
   call cut off keeps the arguments written). Later pushes fail with WGLLM_ERR_INVALID_ARG. */
wgllm_status chat_reply_stream_finish(chat_reply_stream *st, chat_reply_delta *d);
void chat_reply_stream_free(chat_reply_stream *st); /* NULL is a no-op */

/* The text that opens a call in format f, for tool_choice where a grammar cannot write it (harmony: the server ends
   the prompt with it and feeds it to the parser before the generated text; chat_tool_call_prefix). function_name NULL:
   any function (the text up to the name); else the call to that function up to its arguments (the JSON ones end with ":
   ", a space): LLAMA3_JSON  {"name": "            {"name": "get_weather", "parameters": HERMES <tool_call>\n{"name": "
   <tool_call>\n{"name": "get_weather", "arguments": MISTRAL      [TOOL_CALLS] [{"name": "  [TOOL_CALLS] [{"name":
   "get_weather", "arguments": GEMMA        ```tool_code\n        ```tool_code\nget_weather( GEMMA4 <|tool_call>call:
   <|tool_call>call:get_weather{ HARMONY      <|channel|>commentary to=functions.
                  <|channel|>commentary to=functions.get_weather <|constrain|>json<|message|>
   (harmony's after a prompt that ends with <|start|>assistant, as gpt-oss's generation prompt does)
   A name must be 1-64 letters, digits, '_', '-' or '.' (Gemma: a Python identifier); NONE has no prefix
   (WGLLM_ERR_UNSUPPORTED). *out malloc'd. */
wgllm_status chat_tool_prefix(chat_tool_format f, const char *function_name, char **out, llm_err *err);

/* The Gemma call line for a call: name(key=value, ...), the JSON object arguments_json written as Python
   keyword arguments (strings in double quotes, True/False/None, lists, dicts), which the GEMMA parser reads back
   to the same JSON. The named gemma template writes assistant calls with it. A key that is not a Python
   identifier, or arguments that are not a JSON object, are WGLLM_ERR_INVALID_ARG. *out malloc'd. */
wgllm_status chat_tool_python_call(const char *name, const char *arguments_json, char **out, llm_err *err);
/* tool_choice "required" (function_name NULL) or a named function as GBNF (malloc'd), of what the model writes
   after chat_tool_call_prefix's text: a reply that is one call in format f (LLAMA3_JSON, HERMES or MISTRAL: the whole
   JSON call, its marker as text) of one of tools' functions ([{"type": "function", "function": {"name",
   "parameters"}}]), its arguments valid under the function's parameters schema (src/grammar's JSON schema support:
   what it refuses is refused, naming it); HARMONY: the arguments object alone, of the named function or of the only
   tool ("required" with several tools is WGLLM_ERR_UNSUPPORTED, saying why: the header that names the function ends
   with the special token <|message|>, which no grammar writes). The others WGLLM_ERR_UNSUPPORTED. */
struct cJSON;
wgllm_status chat_tool_call_gbnf(chat_tool_format f, const struct cJSON *tools, const char *function_name, char **out,
                                 llm_err *err);
/* The text the prompt ends with for chat_tool_call_gbnf's grammar to follow, fed to the reply parser before the
   generated text: *out NULL for the JSON formats (their grammar writes the whole call); HARMONY: chat_tool_prefix of
   the forced function (function_name, or the only tool), the call's header up to <|message|>, special-token text to
   be tokenized with special tokens parsed. Errors as chat_tool_call_gbnf's for harmony. *out malloc'd. */
wgllm_status chat_tool_call_prefix(chat_tool_format f, const struct cJSON *tools, const char *function_name, char **out,
                                   llm_err *err);
#endif
