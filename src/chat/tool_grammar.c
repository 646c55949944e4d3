/* tool_choice "required" and a named function as a grammar (chat_tool_call_gbnf): the reply must be one call in the
   model's format, of one of the request's functions (or the named one), its arguments valid under the function's
   parameters schema. The call object is a JSON schema of its own ({"name": const, "arguments": parameters} for each
   function, any of them) compiled by src/grammar, wrapped in the format's markers. Harmony's call opens with special
   tokens a grammar cannot write: the prompt ends with the call's header instead (chat_tool_call_prefix) and the
   grammar is the arguments alone. */
#include "grammar.h"
#include "tool_calls.h"
#include <cjson/cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* the function object of a tool ({"type": "function", "function": {...}}, or the function itself) */
static const cJSON *tool_function(const cJSON *t) {
  const cJSON *f = cJSON_GetObjectItemCaseSensitive(t, "function");
  return cJSON_IsObject(f) ? f : t;
}

/* whether j holds a "$ref" anywhere (a function's parameters nested in the calls' schema would resolve it against
   that schema's root, not their own) */
static int has_ref(const cJSON *j) {
  for (const cJSON *c = j ? j->child : NULL; c; c = c->next)
    if ((c->string && !strcmp(c->string, "$ref")) || has_ref(c)) return 1;
  return 0;
}

/* {"anyOf": [{"type": "object", "properties": {"name": {"const": N}, ARGS: P}, "required": ["name", ARGS],
   "additionalProperties": false}, ...]} over the functions (only `only` where given) */
static cJSON *calls_schema(const cJSON *tools, const char *only, const char *args_key, llm_err *err) {
  cJSON *any = cJSON_CreateArray();
  const cJSON *t;
  size_t i = 0;
  cJSON_ArrayForEach(t, tools) {
    const cJSON *f = tool_function(t), *name = cJSON_GetObjectItemCaseSensitive(f, "name"),
                *params = cJSON_GetObjectItemCaseSensitive(f, "parameters");
    if (!cJSON_IsString(name)) {
      cJSON_Delete(any);
      llm_err_set(err, WGLLM_ERR_INVALID_ARG, "tools[%zu]: the function has no name", i);
      return NULL;
    }
    i++;
    if (only && strcmp(only, name->valuestring)) continue;
    if (has_ref(params)) {
      cJSON_Delete(any);
      llm_err_set(err, WGLLM_ERR_UNSUPPORTED,
                  "tool_choice: the parameters of function \"%s\" use $ref, which the call's grammar does not resolve "
                  "(tool_choice \"auto\" takes them)",
                  name->valuestring);
      return NULL;
    }
    cJSON *o = cJSON_CreateObject(), *props = cJSON_AddObjectToObject(o, "properties");
    cJSON_AddStringToObject(o, "type", "object");
    cJSON *n = cJSON_AddObjectToObject(props, "name");
    cJSON_AddStringToObject(n, "const", name->valuestring);
    cJSON_AddItemToObject(props, args_key,
                          params && cJSON_IsObject(params) ? cJSON_Duplicate(params, 1)
                                                           : cJSON_CreateObject()); /* {}: any object */
    cJSON *req = cJSON_AddArrayToObject(o, "required");
    cJSON_AddItemToArray(req, cJSON_CreateString("name"));
    cJSON_AddItemToArray(req, cJSON_CreateString(args_key));
    cJSON_AddFalseToObject(o, "additionalProperties");
    cJSON_AddItemToArray(any, o);
  }
  if (!cJSON_GetArraySize(any)) {
    cJSON_Delete(any);
    llm_err_set(err, WGLLM_ERR_INVALID_ARG,
                only ? "tool_choice names the function \"%s\", which is not among the tools" : "%s: no tools",
                only ? only : "tool_choice");
    return NULL;
  }
  cJSON *s = cJSON_CreateObject();
  if (cJSON_GetArraySize(any) == 1) {
    cJSON *one = cJSON_DetachItemFromArray(any, 0);
    cJSON_Delete(s);
    cJSON_Delete(any);
    return one;
  }
  cJSON_AddItemToObject(s, "anyOf", any);
  return s;
}

/* harmony: the one function a forced call may name: function_name if given (it must be among the tools), else the
   only tool. Several tools and "required" are refused: the call's header names its function and ends with the
   special token <|message|>, so the name would have to be drawn under a grammar that then writes <|message|>, which
   no grammar writes (it allows no special token), and the header cannot go into the prompt without choosing the
   function. On success *fn is that function's object (borrowed from tools). */
static wgllm_status harmony_function(const cJSON *tools, const char *function_name, const cJSON **fn, llm_err *err) {
  *fn = NULL;
  if (!cJSON_IsArray(tools) || !cJSON_GetArraySize(tools))
    return llm_err_set(err, WGLLM_ERR_INVALID_ARG, "tool_choice other than \"auto\" or \"none\" needs tools");
  const cJSON *t;
  size_t i = 0;
  cJSON_ArrayForEach(t, tools) {
    const cJSON *f = tool_function(t), *name = cJSON_GetObjectItemCaseSensitive(f, "name");
    if (!cJSON_IsString(name))
      return llm_err_set(err, WGLLM_ERR_INVALID_ARG, "tools[%zu]: the function has no name", i);
    i++;
    if (!function_name || !strcmp(function_name, name->valuestring)) {
      if (*fn && !function_name) /* a second tool */
        return llm_err_set(
            err, WGLLM_ERR_UNSUPPORTED,
            "tool_choice \"required\" with %d tools: a harmony call names its function in a header that ends with "
            "the special token <|message|>, which a grammar cannot write, so the choice among the functions cannot "
            "be constrained; name the function (tool_choice {\"type\": \"function\", \"function\": {\"name\": ...}}), "
            "offer one tool, or use \"auto\"",
            cJSON_GetArraySize(tools));
      if (!*fn) *fn = f;
    }
  }
  if (!*fn)
    return llm_err_set(err, WGLLM_ERR_INVALID_ARG,
                       "tool_choice names the function \"%s\", which is not among the tools", function_name);
  return WGLLM_OK;
}

/* harmony: the arguments of the forced call, the function's parameters as a schema of its own (its "$ref"s resolve
   against its own root); none: any object */
static wgllm_status harmony_arguments_gbnf(const cJSON *fn, char **out, llm_err *err) {
  const cJSON *params = cJSON_GetObjectItemCaseSensitive(fn, "parameters");
  cJSON *any = NULL;
  if (!cJSON_IsObject(params)) {
    any = cJSON_CreateObject();
    if (!any || !cJSON_AddStringToObject(any, "type", "object")) {
      cJSON_Delete(any);
      return llm_err_set(err, WGLLM_ERR_OUT_OF_MEMORY, "out of host memory");
    }
  }
  wgllm_status st = grammar_schema_to_gbnf(any ? any : params, out, err);
  cJSON_Delete(any);
  return st;
}

wgllm_status chat_tool_call_prefix(chat_tool_format f, const cJSON *tools, const char *function_name, char **out,
                                   llm_err *err) {
  *out = NULL;
  if (f != CHAT_TOOLS_HARMONY) return WGLLM_OK; /* the grammar writes the whole call, or refuses */
  const cJSON *fn;
  wgllm_status st = harmony_function(tools, function_name, &fn, err);
  if (st) return st;
  return chat_tool_prefix(f, cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(fn, "name")), out, err);
}

wgllm_status chat_tool_call_gbnf(chat_tool_format f, const cJSON *tools, const char *function_name, char **out,
                                 llm_err *err) {
  *out = NULL;
  const char *open, *close, *args_key = "arguments";
  switch (f) {
  case CHAT_TOOLS_LLAMA3_JSON:
    open = "", close = "", args_key = "parameters";
    break;
  case CHAT_TOOLS_HERMES:
    open = "\"<tool_call>\\n\" ", close = " \"\\n</tool_call>\"";
    break;
  case CHAT_TOOLS_MISTRAL:
    open = "\"[TOOL_CALLS] [\" ", close = " \"]\"";
    break;
  case CHAT_TOOLS_HARMONY: { /* after chat_tool_call_prefix's header: the arguments */
    const cJSON *fn;
    wgllm_status st = harmony_function(tools, function_name, &fn, err);
    return st ? st : harmony_arguments_gbnf(fn, out, err);
  }
  default:
    return llm_err_set(err, WGLLM_ERR_UNSUPPORTED,
                       "tool_choice \"required\" or a named function: the %s tool format has no JSON call to "
                       "constrain",
                       chat_tool_format_name(f));
  }
  if (!cJSON_IsArray(tools) || !cJSON_GetArraySize(tools))
    return llm_err_set(err, WGLLM_ERR_INVALID_ARG, "tool_choice other than \"auto\" or \"none\" needs tools");
  cJSON *schema = calls_schema(tools, function_name, args_key, err);
  if (!schema) return err ? err->status : WGLLM_ERR_INVALID_ARG;
  char *calls = NULL;
  wgllm_status st = grammar_schema_to_gbnf(schema, &calls, err);
  cJSON_Delete(schema);
  if (st) return st;
  /* the schema's rule "root" becomes "call", the reply's root the call in its markers (no rule names root: the
     parameters hold no "$ref", refused above) */
  char *def = strncmp(calls, "root ::=", 8) ? strstr(calls, "\nroot ::=") : calls;
  size_t n = strlen(calls);
  char *g = def ? malloc(n + strlen(open) + strlen(close) + 64) : NULL;
  if (!def || !g) {
    free(calls);
    free(g);
    return llm_err_set(err, def ? WGLLM_ERR_OUT_OF_MEMORY : WGLLM_ERR_INTERNAL,
                       def ? "out of host memory" : "the calls' grammar has no root rule");
  }
  if (def != calls) def++;
  memcpy(def, "call", 4); /* "root" -> "call" (same length) */
  sprintf(g, "root ::= %scall%s\n%s", open, close, calls);
  free(calls);
  *out = g;
  return WGLLM_OK;
}
