/* The public chat calls (include/wgllm.h): messages or an OpenAI-style request through the model's chat template
   (src/chat/) into prompt ids, and a chat turn generated from them. */
#include "api_internal.h"
#include <stdlib.h>
#include <string.h>

wgllm_status wgllm_chat(wgllm_session *s, const wgllm_message *messages, size_t n, const wgllm_generate_params *params,
                        char **reply, wgllm_generate_stats *stats) {
  if (!s || !messages || !n) return WGLLM_ERR_INVALID_ARG;
  llm_err_clear(&s->err);
  if (!s->model->tok) return llm_err_set(&s->err, WGLLM_ERR_INVALID_ARG, "%s", api_no_tokenizer);
  if (!s->model->chat)
    return llm_err_set(&s->err, WGLLM_ERR_UNSUPPORTED,
                       "chat template: %s (a named template, chat_template \"chatml\" say, overrides it)",
                       s->model->chat_err.msg);
  for (size_t i = 0; i < n; i++)
    if (!messages[i].role || !messages[i].content)
      return llm_err_set(&s->err, WGLLM_ERR_INVALID_ARG, "message %zu has no role or content", i);
  cJSON *msgs = cJSON_CreateArray();
  int ok = msgs != NULL;
  for (size_t i = 0; ok && i < n; i++) {
    cJSON *o = cJSON_CreateObject();
    ok = o && cJSON_AddItemToArray(msgs, o) && cJSON_AddStringToObject(o, "role", messages[i].role) &&
         cJSON_AddStringToObject(o, "content", messages[i].content); /* o belongs to msgs once added */
  }
  if (!ok) {
    cJSON_Delete(msgs);
    return llm_err_set(&s->err, WGLLM_ERR_OUT_OF_MEMORY, "out of host memory");
  }
  chat_request q = {msgs, NULL, NULL, 1};
  char *text = NULL;
  wgllm_status st = chat_renderer_apply(s->model->chat, &q, NULL, &text, &s->err);
  cJSON_Delete(msgs);
  if (st) {
    llm_err_prefix(&s->err, "chat template");
    return st;
  }
  int32_t *ids = NULL;
  size_t nid = 0;
  /* templates spell BOS out as text; without a template the tokenizer adds it */
  st = tok_encode(s->model->tok, text, strlen(text), chat_renderer_adds_bos(s->model->chat), 1, &ids, &nid, &s->err);
  free(text);
  if (!st) st = api_run_ids(s, ids, nid, params, reply, stats);
  free(ids);
  return st;
}

wgllm_status wgllm_chat_prompt(wgllm_model *m, const char *request_json, size_t len, int32_t **ids, size_t *n,
                               char **text) {
  if (!m) return WGLLM_ERR_INVALID_ARG;
  llm_err_clear(&m->err);
  if (!request_json || !ids || !n)
    return llm_err_set(&m->err, WGLLM_ERR_INVALID_ARG, "wgllm_chat_prompt: a NULL argument");
  *ids = NULL;
  *n = 0;
  if (text) *text = NULL;
  if (!m->tok) return llm_err_set(&m->err, WGLLM_ERR_INVALID_ARG, "%s", api_no_tokenizer);
  if (!m->chat)
    return llm_err_set(&m->err, WGLLM_ERR_UNSUPPORTED,
                       "chat template: %s (a named template, chat_template \"chatml\" say, overrides it)",
                       m->chat_err.msg);
  cJSON *req = cJSON_ParseWithLength(request_json, len);
  if (!req) return llm_err_set(&m->err, WGLLM_ERR_INVALID_ARG, "the request is not valid JSON");
  wgllm_status st = WGLLM_OK;
  const cJSON *msgs = cJSON_GetObjectItemCaseSensitive(req, "messages");
  const cJSON *tools = cJSON_GetObjectItemCaseSensitive(req, "tools");
  const cJSON *kwargs = cJSON_GetObjectItemCaseSensitive(req, "chat_template_kwargs");
  if (!cJSON_IsObject(req))
    st = llm_err_set(&m->err, WGLLM_ERR_INVALID_ARG, "the request is not a JSON object");
  else if (!cJSON_IsArray(msgs) || !cJSON_GetArraySize(msgs))
    st = llm_err_set(&m->err, WGLLM_ERR_INVALID_ARG, "'messages' must be a non-empty array");
  else if (tools && !cJSON_IsNull(tools) && !cJSON_IsArray(tools))
    st = llm_err_set(&m->err, WGLLM_ERR_INVALID_ARG, "'tools' must be an array");
  else if (kwargs && !cJSON_IsNull(kwargs) && !cJSON_IsObject(kwargs))
    st = llm_err_set(&m->err, WGLLM_ERR_INVALID_ARG, "'chat_template_kwargs' must be an object");
  char *prompt = NULL;
  if (!st) {
    chat_request q = {msgs, cJSON_IsArray(tools) ? tools : NULL, cJSON_IsObject(kwargs) ? kwargs : NULL, 1};
    st = chat_renderer_apply(m->chat, &q, NULL, &prompt, &m->err);
    if (st) llm_err_prefix(&m->err, "chat template");
  }
  cJSON_Delete(req);
  if (!st) st = tok_encode(m->tok, prompt, strlen(prompt), chat_renderer_adds_bos(m->chat), 1, ids, n, &m->err);
  if (!st && text)
    *text = prompt;
  else
    free(prompt);
  return st;
}
