/* The public chat calls (include/wgllm.h): messages or an OpenAI-style request through the model's chat template
   (src/chat/) into prompt ids, and a chat turn generated from them.
   Text is text: the template renders C strings (cJSON's), so a message's content goes in escaped with two bytes
   UTF-8 never holds: CHAT_NUL (0xFF) for each NUL byte, and CHAT_PLAIN (0xFE) before each special token's text
   that is to stay plain text. The rendered prompt is unescaped (NULs back, CHAT_PLAIN dropped and its next byte
   flagged) and tokenized with tok_encode_marked: the template's own special tokens parsed, the flagged ones text. */
#include "api_internal.h"
#include "json_shape.h"
#include <stdlib.h>
#include <string.h>

#define CHAT_NUL 0xFF
#define CHAT_PLAIN 0xFE

/* s[0..n) (UTF-8, NUL bytes or CHAT_NUL for NULs) escaped for the template: malloc'd, NUL-terminated. */
static char *content_escape(const tokenizer *tok, const char *s, size_t n, int parse_special) {
  char *o = malloc(2 * n + 1); /* at most a CHAT_PLAIN before every byte */
  if (!o) return NULL;
  size_t k = 0;
  for (size_t i = 0; i < n; i++) {
    unsigned char c = (unsigned char)s[i];
    if (!parse_special && c != 0 && c != CHAT_NUL && tok_special_at(tok, s + i, n - i)) o[k++] = (char)CHAT_PLAIN;
    o[k++] = c == 0 ? (char)CHAT_NUL : (char)c;
  }
  o[k] = 0;
  return o;
}

/* Replaces j's string (a cJSON string node's) with its escaped form. 0, or -1 when out of memory. */
static int escape_string(const tokenizer *tok, cJSON *j, int parse_special) {
  char *e = content_escape(tok, j->valuestring, strlen(j->valuestring), parse_special);
  if (!e) return -1;
  free(j->valuestring); /* cJSON's allocator is the default malloc here */
  j->valuestring = e;
  return 0;
}

/* Every message's content (a string or its text parts) escaped. */
static int escape_messages(const tokenizer *tok, cJSON *msgs, int parse_special) {
  for (cJSON *m = msgs->child; m; m = m->next) {
    cJSON *c = cJSON_GetObjectItemCaseSensitive(m, "content");
    if (cJSON_IsString(c) && escape_string(tok, c, parse_special)) return -1;
    if (cJSON_IsArray(c))
      for (cJSON *p = c->child; p; p = p->next) {
        cJSON *t = cJSON_GetObjectItemCaseSensitive(p, "text");
        if (cJSON_IsString(t) && escape_string(tok, t, parse_special)) return -1;
      }
  }
  return 0;
}

/* Renders q and tokenizes the prompt (see the top of the file); *text (may be NULL) gets the unescaped prompt. */
static wgllm_status render_encode(const tokenizer *tok, const chat_renderer *chat, const chat_request *q, int32_t **ids,
                                  size_t *n, char **text, llm_err *err) {
  char *r = NULL;
  wgllm_status st = chat_renderer_apply(chat, q, NULL, &r, err);
  if (st) {
    llm_err_prefix(err, "chat template");
    return st;
  }
  size_t rn = strlen(r), dn = 0;
  uint8_t *plain = calloc(rn + 1, 1);
  if (!plain) {
    free(r);
    return llm_err_set(err, WGLLM_ERR_OUT_OF_MEMORY, "out of host memory");
  }
  int flag = 0;
  for (size_t i = 0; i < rn; i++) { /* in place: the text only shrinks */
    unsigned char c = (unsigned char)r[i];
    if (c == CHAT_PLAIN) {
      flag = 1;
      continue;
    }
    plain[dn] = (uint8_t)flag;
    flag = 0;
    r[dn++] = c == CHAT_NUL ? 0 : (char)c;
  }
  r[dn] = 0;
  /* templates spell BOS out as text; without a template the tokenizer adds it */
  st = tok_encode_marked(tok, r, dn, chat_renderer_adds_bos(chat), 1, plain, ids, n, err);
  free(plain);
  if (!st && text)
    *text = r;
  else
    free(r);
  return st;
}

wgllm_status wgllm_chat(wgllm_session *s, const wgllm_message *messages, size_t n, const wgllm_generate_params *params,
                        char **reply, wgllm_generate_stats *stats) {
  if (!s || !messages || !n) return WGLLM_ERR_INVALID_ARG;
  llm_err_clear(&s->err);
  if (!s->model->tok) return llm_err_set(&s->err, WGLLM_ERR_INVALID_ARG, "%s", api_no_tokenizer);
  if (!s->model->chat)
    return llm_err_set(&s->err, WGLLM_ERR_UNSUPPORTED,
                       "chat template: %s (a named template, chat_template \"chatml\" say, overrides it)",
                       s->model->chat_err.msg);
  for (size_t i = 0; i < n; i++) {
    if (!messages[i].role || !messages[i].content)
      return llm_err_set(&s->err, WGLLM_ERR_INVALID_ARG, "message %zu has no role or content", i);
    size_t len = messages[i].content_len ? messages[i].content_len : strlen(messages[i].content), bad;
    if (!tok_utf8_validate(messages[i].content, len, &bad))
      return llm_err_set(&s->err, WGLLM_ERR_INVALID_ARG, "message %zu: its content is not UTF-8 at byte %zu of %zu", i,
                         bad, len);
  }
  cJSON *msgs = cJSON_CreateArray();
  int ok = msgs != NULL;
  for (size_t i = 0; ok && i < n; i++) {
    const wgllm_message *m = &messages[i];
    char *e = content_escape(s->model->tok, m->content, m->content_len ? m->content_len : strlen(m->content), 1);
    cJSON *o = e ? cJSON_CreateObject() : NULL;
    ok = o && cJSON_AddItemToArray(msgs, o) && cJSON_AddStringToObject(o, "role", m->role) &&
         cJSON_AddStringToObject(o, "content", e); /* o belongs to msgs once added */
    free(e);
  }
  if (!ok) {
    cJSON_Delete(msgs);
    return llm_err_set(&s->err, WGLLM_ERR_OUT_OF_MEMORY, "out of host memory");
  }
  chat_request q = {msgs, NULL, NULL, 1};
  int32_t *ids = NULL;
  size_t nid = 0;
  wgllm_status st = render_encode(s->model->tok, s->model->chat, &q, &ids, &nid, NULL, &s->err);
  cJSON_Delete(msgs);
  if (!st) st = api_run_ids(s, ids, nid, params, reply, stats);
  free(ids);
  return st;
}

/* The request JSON's bounds, checked before cJSON builds it: the server's (tools/serve/serve_openai.h), a request of
   some 260,000 values (a long conversation with tools) nested 128 deep */
#define API_CHAT_MAX_VALUES 262144
#define API_CHAT_MAX_DEPTH 128

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
  size_t bad, jn = 0;
  if (!tok_utf8_validate(request_json, len, &bad))
    return llm_err_set(&m->err, WGLLM_ERR_INVALID_ARG, "the request is not UTF-8 at byte %zu of %zu", bad, len);
  char why[128]; /* the pre-check of every JSON text (src/base/json_shape.h), the server's bounds */
  if (json_shape_check(request_json, len, API_CHAT_MAX_VALUES, API_CHAT_MAX_DEPTH, why, sizeof why))
    return llm_err_set(&m->err, WGLLM_ERR_INVALID_ARG, "the request's %s", why);
  char *json = json_mark_nul_escapes(request_json, len, CHAT_NUL, &jn);
  if (!json) return llm_err_set(&m->err, WGLLM_ERR_OUT_OF_MEMORY, "out of host memory");
  cJSON *req = cJSON_ParseWithLength(json, jn);
  free(json);
  if (!req) return llm_err_set(&m->err, WGLLM_ERR_INVALID_ARG, "the request is not valid JSON");
  wgllm_status st = WGLLM_OK;
  cJSON *msgs = cJSON_GetObjectItemCaseSensitive(req, "messages");
  const cJSON *tools = cJSON_GetObjectItemCaseSensitive(req, "tools");
  const cJSON *kwargs = cJSON_GetObjectItemCaseSensitive(req, "chat_template_kwargs");
  const cJSON *ps = cJSON_GetObjectItemCaseSensitive(req, "parse_special");
  if (!cJSON_IsObject(req))
    st = llm_err_set(&m->err, WGLLM_ERR_INVALID_ARG, "the request is not a JSON object");
  else if (!cJSON_IsArray(msgs) || !cJSON_GetArraySize(msgs))
    st = llm_err_set(&m->err, WGLLM_ERR_INVALID_ARG, "'messages' must be a non-empty array");
  else if (tools && !cJSON_IsNull(tools) && !cJSON_IsArray(tools))
    st = llm_err_set(&m->err, WGLLM_ERR_INVALID_ARG, "'tools' must be an array");
  else if (kwargs && !cJSON_IsNull(kwargs) && !cJSON_IsObject(kwargs))
    st = llm_err_set(&m->err, WGLLM_ERR_INVALID_ARG, "'chat_template_kwargs' must be an object");
  else if (ps && !cJSON_IsNull(ps) && !cJSON_IsBool(ps))
    st = llm_err_set(&m->err, WGLLM_ERR_INVALID_ARG, "'parse_special' must be true or false");
  else if (escape_messages(m->tok, msgs, cJSON_IsTrue(ps)))
    st = llm_err_set(&m->err, WGLLM_ERR_OUT_OF_MEMORY, "out of host memory");
  if (!st) {
    chat_request q = {msgs, cJSON_IsArray(tools) ? tools : NULL, cJSON_IsObject(kwargs) ? kwargs : NULL, 1};
    st = render_encode(m->tok, m->chat, &q, ids, n, text, &m->err);
  }
  cJSON_Delete(req);
  return st;
}
