/* Chat prompts (see chat.h): the renderer over the model's Jinja template or a named template, and the named
   templates themselves, each following its family's reference template for the common case (system, user and
   assistant turns, no tools). */
#include "chat.h"
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *names[] = {"none", "llama3", "chatml", "gemma", "llama2"};

int chat_template_from_name(const char *name) {
  for (int i = 0; i < 5; i++)
    if (!strcmp(name, names[i])) return i;
  return -1;
}

const char *chat_template_name(chat_template t) { return (unsigned)t < 5 ? names[t] : "none"; }

chat_template chat_template_detect(const char *jinja, const tokenizer *tok) {
  if (jinja) {
    if (strstr(jinja, "<|start_header_id|>")) return CHAT_LLAMA3;
    if (strstr(jinja, "<|im_start|>")) return CHAT_CHATML;
    if (strstr(jinja, "<start_of_turn>")) return CHAT_GEMMA;
    if (strstr(jinja, "[INST]")) return CHAT_LLAMA2;
  }
  if (tok) {
    if (tok_find(tok, "<|start_header_id|>") >= 0) return CHAT_LLAMA3;
    if (tok_find(tok, "<|im_start|>") >= 0) return CHAT_CHATML;
    if (tok_find(tok, "<start_of_turn>") >= 0) return CHAT_GEMMA;
  }
  return CHAT_NONE;
}

typedef struct sbuf {
  char *s;
  size_t len, cap;
  int oom;
} sbuf;

static void put(sbuf *b, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  int n = vsnprintf(NULL, 0, fmt, ap);
  va_end(ap);
  if (n < 0 || b->oom) return;
  if (b->len + (size_t)n + 1 > b->cap) {
    size_t nc = b->cap ? b->cap * 2 : 256;
    while (nc < b->len + (size_t)n + 1)
      nc *= 2;
    char *ns = realloc(b->s, nc);
    if (!ns) {
      b->oom = 1;
      return;
    }
    b->s = ns;
    b->cap = nc;
  }
  va_start(ap, fmt);
  vsnprintf(b->s + b->len, b->cap - b->len, fmt, ap);
  va_end(ap);
  b->len += (size_t)n;
}

char *chat_format(chat_template t, const chat_msg *msgs, size_t n, int add_generation_prompt) {
  sbuf b = {0};
  put(&b, "%s", "");
  const char *system = NULL;
  size_t first = 0;
  if (n && !strcmp(msgs[0].role, "system")) {
    system = msgs[0].content;
    first = 1;
  }
  switch (t) {
  case CHAT_LLAMA3:
    put(&b, "<|begin_of_text|>");
    for (size_t i = 0; i < n; i++)
      put(&b, "<|start_header_id|>%s<|end_header_id|>\n\n%s<|eot_id|>", msgs[i].role, msgs[i].content);
    if (add_generation_prompt) put(&b, "<|start_header_id|>assistant<|end_header_id|>\n\n");
    break;
  case CHAT_CHATML:
    for (size_t i = 0; i < n; i++)
      put(&b, "<|im_start|>%s\n%s<|im_end|>\n", msgs[i].role, msgs[i].content);
    if (add_generation_prompt) put(&b, "<|im_start|>assistant\n");
    break;
  case CHAT_GEMMA: /* no system role: it is prepended to the first user turn */
    put(&b, "<bos>");
    for (size_t i = first; i < n; i++) {
      const char *role = !strcmp(msgs[i].role, "assistant") ? "model" : msgs[i].role;
      if (i == first && system)
        put(&b, "<start_of_turn>%s\n%s\n\n%s<end_of_turn>\n", role, system, msgs[i].content);
      else
        put(&b, "<start_of_turn>%s\n%s<end_of_turn>\n", role, msgs[i].content);
    }
    if (add_generation_prompt) put(&b, "<start_of_turn>model\n");
    break;
  case CHAT_LLAMA2: /* <s>[INST] <<SYS>>\n..\n<</SYS>>\n\nuser [/INST] answer </s> ... */
    for (size_t i = first; i < n; i++) {
      if (!strcmp(msgs[i].role, "assistant")) {
        put(&b, " %s </s>", msgs[i].content);
        continue;
      }
      if (i == first && system)
        put(&b, "<s>[INST] <<SYS>>\n%s\n<</SYS>>\n\n%s [/INST]", system, msgs[i].content);
      else
        put(&b, "<s>[INST] %s [/INST]", msgs[i].content);
    }
    break;
  default: /* plain concatenation */
    for (size_t i = 0; i < n; i++)
      put(&b, "%s%s", msgs[i].content, i + 1 < n ? "\n" : "");
    break;
  }
  if (b.oom) {
    free(b.s);
    return NULL;
  }
  return b.s;
}

/* ---------- the renderer ---------- */
struct chat_renderer {
  chat_template named;  /* when tmpl is NULL */
  jinja_template *tmpl; /* the model's own template */
  char *bos, *eos;      /* token texts, or NULL */
};

static char *token_text(const tokenizer *tok, int32_t id) {
  size_t n;
  const char *p = tok && id >= 0 ? tok_piece(tok, id, &n) : NULL;
  if (!p) return NULL;
  char *s = malloc(n + 1);
  if (s) {
    memcpy(s, p, n);
    s[n] = 0;
  }
  return s;
}

wgllm_status chat_renderer_create(const char *forced, const char *jinja, const tokenizer *tok, chat_renderer **out,
                                  llm_err *err) {
  *out = NULL;
  llm_err_clear(err);
  chat_renderer *r = calloc(1, sizeof *r);
  if (!r) {
    return llm_err_set(err, WGLLM_ERR_OUT_OF_MEMORY, "out of host memory");
  }
  if (forced) {
    int t = chat_template_from_name(forced);
    if (t < 0) {
      free(r);
      return llm_err_set(err, WGLLM_ERR_INVALID_ARG,
                         "chat template \"%s\" is unknown (llama3, chatml, gemma, llama2, none)", forced);
    }
    r->named = (chat_template)t;
  } else if (jinja) {
    wgllm_status st = jinja_parse(jinja, strlen(jinja), &r->tmpl, err);
    if (st) {
      free(r);
      return st;
    }
  } else
    r->named = chat_template_detect(NULL, tok);
  r->bos = token_text(tok, tok ? tok_bos(tok) : -1);
  r->eos = token_text(tok, tok ? tok_eos(tok) : -1);
  if ((tok && tok_bos(tok) >= 0 && !r->bos) || (tok && tok_eos(tok) >= 0 && !r->eos)) {
    chat_renderer_free(r);
    return llm_err_set(err, WGLLM_ERR_OUT_OF_MEMORY, "out of host memory");
  }
  *out = r;
  return WGLLM_OK;
}

void chat_renderer_free(chat_renderer *r) {
  if (!r) return;
  jinja_free(r->tmpl);
  free(r->bos);
  free(r->eos);
  free(r);
}

const char *chat_renderer_name(const chat_renderer *r) { return r->tmpl ? "jinja" : chat_template_name(r->named); }
int chat_renderer_adds_bos(const chat_renderer *r) { return !r->tmpl && r->named == CHAT_NONE; }

static wgllm_status apply_jinja(const chat_renderer *r, const chat_request *q, const jinja_limits *lim, char **out,
                                llm_err *err) {
  static const char *const reserved[] = {"messages", "tools", "documents", "add_generation_prompt"};
  if (q->kwargs && !cJSON_IsObject(q->kwargs)) {
    return llm_err_set(err, WGLLM_ERR_INVALID_ARG, "the template arguments must be a JSON object");
  }
  for (size_t i = 0; q->kwargs && i < 4; i++)
    if (cJSON_GetObjectItemCaseSensitive(q->kwargs, reserved[i])) {
      return llm_err_set(err, WGLLM_ERR_INVALID_ARG, "the template arguments may not set '%s'", reserved[i]);
    }
  /* the variables, as transformers' render_jinja_template passes them; the request is referenced, not copied */
  cJSON *v = cJSON_CreateObject();
  int ok = v != NULL;
  if (ok && r->bos) ok = cJSON_AddStringToObject(v, "bos_token", r->bos) != NULL;
  if (ok && r->eos) ok = cJSON_AddStringToObject(v, "eos_token", r->eos) != NULL;
  const cJSON *it;
  if (q->kwargs) cJSON_ArrayForEach(it, q->kwargs) {
      if (!ok) break;
      cJSON_DeleteItemFromObjectCaseSensitive(v, it->string); /* kwargs win over the special tokens */
      ok = cJSON_AddItemReferenceToObject(v, it->string, (cJSON *)it);
    }
  if (ok) ok = cJSON_AddItemReferenceToObject(v, "messages", (cJSON *)q->messages);
  if (ok)
    ok = q->tools ? cJSON_AddItemReferenceToObject(v, "tools", (cJSON *)q->tools)
                  : cJSON_AddNullToObject(v, "tools") != NULL;
  if (ok) ok = cJSON_AddNullToObject(v, "documents") != NULL;
  if (ok) ok = cJSON_AddBoolToObject(v, "add_generation_prompt", q->add_generation_prompt) != NULL;
  if (!ok) {
    cJSON_Delete(v);
    return llm_err_set(err, WGLLM_ERR_OUT_OF_MEMORY, "out of host memory");
  }
  wgllm_status st = jinja_render(r->tmpl, v, lim, out, NULL, err);
  cJSON_Delete(v);
  return st;
}

/* the text of a message's content for a named template: a string, null, or text parts */
static char *content_text(const cJSON *c, size_t i, llm_err *err) {
  if (!c || cJSON_IsNull(c)) return strdup("");
  if (cJSON_IsString(c)) return strdup(c->valuestring);
  if (!cJSON_IsArray(c)) {
    llm_err_set(err, WGLLM_ERR_INVALID_ARG, "message %zu: content must be a string, null or a list of text parts", i);
    return NULL;
  }
  sbuf b = {0};
  put(&b, "%s", "");
  const cJSON *p;
  cJSON_ArrayForEach(p, c) {
    const cJSON *type = cJSON_GetObjectItemCaseSensitive(p, "type"),
                *text = cJSON_GetObjectItemCaseSensitive(p, "text");
    if (!cJSON_IsString(type) || strcmp(type->valuestring, "text") || !cJSON_IsString(text)) {
      free(b.s);
      llm_err_set(err, WGLLM_ERR_INVALID_ARG, "message %zu: the named template renders text parts only", i);
      return NULL;
    }
    put(&b, "%s", text->valuestring);
  }
  if (b.oom) {
    free(b.s);
    return NULL;
  }
  return b.s;
}

static wgllm_status apply_named(const chat_renderer *r, const chat_request *q, char **out, llm_err *err) {
  const char *name = chat_template_name(r->named);
  if (q->tools && cJSON_GetArraySize(q->tools) > 0) {
    return llm_err_set(err, WGLLM_ERR_UNSUPPORTED, "the named chat template \"%s\" cannot render tools", name);
  }
  size_t n = (size_t)cJSON_GetArraySize(q->messages);
  chat_msg *msgs = calloc(n ? n : 1, sizeof *msgs);
  char **texts = calloc(n ? n : 1, sizeof *texts);
  wgllm_status st = msgs && texts ? WGLLM_OK : WGLLM_ERR_OUT_OF_MEMORY;
  if (st) llm_err_set(err, st, "out of host memory");
  size_t i = 0;
  const cJSON *m;
  cJSON_ArrayForEach(m, q->messages) {
    if (st) break;
    const cJSON *role = cJSON_GetObjectItemCaseSensitive(m, "role");
    if (!cJSON_IsString(role)) {
      st = llm_err_set(err, WGLLM_ERR_INVALID_ARG, "message %zu has no role", i);
    } else if (cJSON_GetObjectItemCaseSensitive(m, "tool_calls") || !strcmp(role->valuestring, "tool")) {
      st = llm_err_set(err, WGLLM_ERR_UNSUPPORTED,
                       "the named chat template \"%s\" cannot render tool calls (message %zu)", name, i);
    } else if (!(texts[i] = content_text(cJSON_GetObjectItemCaseSensitive(m, "content"), i, err))) {
      st = llm_err_msg(err)[0] ? WGLLM_ERR_INVALID_ARG : WGLLM_ERR_OUT_OF_MEMORY;
      if (!llm_err_msg(err)[0]) llm_err_set(err, st, "out of host memory");
    } else {
      msgs[i].role = role->valuestring;
      msgs[i].content = texts[i];
    }
    i++;
  }
  if (!st) {
    *out = chat_format(r->named, msgs, n, q->add_generation_prompt);
    if (!*out) {
      st = llm_err_set(err, WGLLM_ERR_OUT_OF_MEMORY, "out of host memory");
    }
  }
  for (size_t k = 0; texts && k < n; k++)
    free(texts[k]);
  free(texts);
  free(msgs);
  return st;
}

wgllm_status chat_renderer_apply(const chat_renderer *r, const chat_request *q, const jinja_limits *lim, char **out,
                                 llm_err *err) {
  *out = NULL;
  llm_err_clear(err);
  if (!r || !q || !cJSON_IsArray(q->messages)) {
    return llm_err_set(err, WGLLM_ERR_INVALID_ARG, "the messages must be a JSON list");
  }
  if (q->tools && !cJSON_IsArray(q->tools) && !cJSON_IsNull(q->tools)) {
    return llm_err_set(err, WGLLM_ERR_INVALID_ARG, "the tools must be a JSON list");
  }
  chat_request qq = *q;
  if (qq.tools && cJSON_IsNull(qq.tools)) qq.tools = NULL;
  return r->tmpl ? apply_jinja(r, &qq, lim, out, err) : apply_named(r, &qq, out, err);
}
