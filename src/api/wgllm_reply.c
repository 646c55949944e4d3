/* Chat replies (wgllm_reply_parser_*): a reply's text, whole or streamed, into OpenAI's message fields (content,
   reasoning_content, tool_calls) in the format the model's chat template taught it (src/chat/tool_calls.h); and
   tool_choice's grammar and the call's opening text the prompt ends with (wgllm_model_tool_call_grammar,
   wgllm_model_tool_call_prefix). */
#include "api_internal.h"
#include "tool_calls.h"
#include <cjson/cJSON.h>
#include <stdlib.h>
#include <string.h>

struct wgllm_reply_parser {
  chat_reply_stream *st;
  char **names; /* the tool names, copied (the stream borrows them) */
  size_t n_names;
  llm_err err;
};

const char *wgllm_model_tool_format(const wgllm_model *m) {
  return chat_tool_format_name(m ? m->tool_format : CHAT_TOOLS_NONE);
}

static void free_parser(wgllm_reply_parser *p) {
  chat_reply_stream_free(p->st);
  for (size_t i = 0; i < p->n_names; i++)
    free(p->names[i]);
  free(p->names);
  free(p);
}

wgllm_status wgllm_reply_parser_create(const wgllm_model *m, const wgllm_reply_options *o, wgllm_reply_parser **out) {
  llm_err *err = api_last_error();
  llm_err_clear(err);
  if (!m || !o || !out) return llm_err_set(err, WGLLM_ERR_INVALID_ARG, "wgllm_reply_parser_create: NULL argument");
  *out = NULL;
  wgllm_reply_parser *p = calloc(1, sizeof *p);
  if (!p) return llm_err_set(err, WGLLM_ERR_OUT_OF_MEMORY, "out of host memory");
  if (o->parse_tools && o->n_tool_names) {
    p->names = calloc(o->n_tool_names, sizeof *p->names);
    for (size_t i = 0; p->names && i < o->n_tool_names; i++, p->n_names++)
      if (!o->tool_names[i] || !(p->names[i] = strdup(o->tool_names[i]))) break;
    if (!p->names || p->n_names < o->n_tool_names) {
      free_parser(p);
      return llm_err_set(err, WGLLM_ERR_OUT_OF_MEMORY, "out of host memory (or a NULL tool name)");
    }
  }
  chat_reply_opts ro = {.split_reasoning = o->split_reasoning,
                        .thinking_open = o->thinking_open,
                        .tool_names = (const char *const *)p->names,
                        .n_tool_names = p->n_names,
                        .id_seed = o->id_seed};
  /* harmony's channels are the reply's structure (analysis, final), read with or without tools; without them an
     empty list of names makes a message to a function content */
  static const char *const no_names[1] = {NULL};
  int harmony = m->tool_format == CHAT_TOOLS_HARMONY;
  if (harmony && !o->parse_tools) ro.tool_names = no_names;
  p->st = chat_reply_stream_create(o->parse_tools || harmony ? m->tool_format : CHAT_TOOLS_NONE, &ro);
  if (!p->st) {
    free_parser(p);
    return llm_err_set(err, WGLLM_ERR_OUT_OF_MEMORY, "out of host memory");
  }
  *out = p;
  return WGLLM_OK;
}

/* a delta as JSON ({"content", "reasoning_content", "tool_calls"}, only the non-empty ones), or NULL for none; the
   calls in OpenAI's stream form: a call's first event as {"index", "id", "type": "function", "function": {"name",
   "arguments": ""}}, each fragment of its arguments as {"index", "function": {"arguments"}} */
static wgllm_status delta_json(wgllm_reply_parser *p, const chat_reply_delta *d, char **json) {
  *json = NULL;
  if (!d->content_len && !d->reasoning_len && !d->n_tool_calls) return WGLLM_OK;
  cJSON *o = cJSON_CreateObject();
  int ok = o != NULL;
  if (ok && d->content_len) ok = cJSON_AddStringToObject(o, "content", d->content) != NULL;
  if (ok && d->reasoning_len) ok = cJSON_AddStringToObject(o, "reasoning_content", d->reasoning) != NULL;
  cJSON *calls = ok && d->n_tool_calls ? cJSON_AddArrayToObject(o, "tool_calls") : NULL;
  for (size_t i = 0; ok && i < d->n_tool_calls; i++) {
    const chat_tool_call_delta *c = &d->tool_calls[i];
    if (c->id) { /* the keys in OpenAI's order: index, id, type, function */
      cJSON *e = cJSON_CreateObject(), *fn = NULL;
      ok = e && cJSON_AddNumberToObject(e, "index", c->index) && cJSON_AddStringToObject(e, "id", c->id) &&
           cJSON_AddStringToObject(e, "type", "function") && (fn = cJSON_AddObjectToObject(e, "function")) &&
           cJSON_AddStringToObject(fn, "name", c->name) && cJSON_AddStringToObject(fn, "arguments", "");
      if (e) cJSON_AddItemToArray(calls, e);
    }
    if (ok && c->arguments_len) {
      cJSON *e = cJSON_CreateObject(), *fn = NULL;
      ok = e && cJSON_AddNumberToObject(e, "index", c->index) && (fn = cJSON_AddObjectToObject(e, "function")) &&
           cJSON_AddStringToObject(fn, "arguments", c->arguments);
      if (e) cJSON_AddItemToArray(calls, e);
    }
  }
  if (ok) *json = cJSON_PrintUnformatted(o);
  cJSON_Delete(o);
  return *json ? WGLLM_OK : llm_err_set(&p->err, WGLLM_ERR_OUT_OF_MEMORY, "out of host memory");
}

wgllm_status wgllm_reply_parser_push(wgllm_reply_parser *p, const char *text, size_t len, char **json) {
  if (!p || !json || (!text && len)) return WGLLM_ERR_INVALID_ARG;
  chat_reply_delta d;
  wgllm_status st = chat_reply_stream_push(p->st, text, len, &d);
  if (st) return llm_err_set(&p->err, st, "the reply parser: %s", wgllm_status_name(st));
  return delta_json(p, &d, json);
}

wgllm_status wgllm_reply_parser_finish(wgllm_reply_parser *p, char **json) {
  if (!p || !json) return WGLLM_ERR_INVALID_ARG;
  chat_reply_delta d;
  wgllm_status st = chat_reply_stream_finish(p->st, &d);
  if (st) return llm_err_set(&p->err, st, "the reply parser: %s", wgllm_status_name(st));
  return delta_json(p, &d, json);
}

void wgllm_reply_parser_free(wgllm_reply_parser *p) {
  if (p) free_parser(p);
}

wgllm_status wgllm_model_tool_call_grammar(wgllm_model *m, const char *tools_json, size_t len,
                                           const char *function_name, char **gbnf) {
  llm_err *err = api_last_error();
  llm_err_clear(err);
  if (!m || !tools_json || !gbnf)
    return llm_err_set(err, WGLLM_ERR_INVALID_ARG, "wgllm_model_tool_call_grammar: NULL argument");
  *gbnf = NULL;
  cJSON *tools = cJSON_ParseWithLength(tools_json, len);
  if (!tools) return llm_err_set(err, WGLLM_ERR_INVALID_ARG, "tools: not valid JSON");
  char *g = NULL;
  wgllm_status st = chat_tool_call_gbnf(m->tool_format, tools, function_name, &g, err);
  cJSON_Delete(tools);
  if (st) return st;
  *gbnf = g; /* malloc'd: wgllm_free is free */
  return WGLLM_OK;
}

wgllm_status wgllm_model_tool_call_prefix(wgllm_model *m, const char *tools_json, size_t len, const char *function_name,
                                          char **prefix) {
  llm_err *err = api_last_error();
  llm_err_clear(err);
  if (!m || !tools_json || !prefix)
    return llm_err_set(err, WGLLM_ERR_INVALID_ARG, "wgllm_model_tool_call_prefix: NULL argument");
  *prefix = NULL;
  cJSON *tools = cJSON_ParseWithLength(tools_json, len);
  if (!tools) return llm_err_set(err, WGLLM_ERR_INVALID_ARG, "tools: not valid JSON");
  char *p = NULL;
  wgllm_status st = chat_tool_call_prefix(m->tool_format, tools, function_name, &p, err);
  cJSON_Delete(tools);
  if (st) return st;
  *prefix = p; /* malloc'd or NULL: wgllm_free is free */
  return WGLLM_OK;
}
