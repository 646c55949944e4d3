/* Chat prompts (see chat.h): the renderer over the model's Jinja template or a named template, and the named
   templates themselves, each following its family's reference template: system, user and assistant turns
   (chat_format), and with tools, tool calls or tool results its family's tool format (Llama 3.1/3.2's, Qwen's,
   Gemma's tool_code by prompt; llama2 and none refuse them). docs/CHAT_TEMPLATES.md, "Tools". */
#include "chat.h"
#include "tool_calls.h"
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

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

/* ---------- the named templates with tools (docs/CHAT_TEMPLATES.md, "Tools") ---------- */
/* A message as the named templates read it: its role, its content's text, its tool calls (NULL when it has none:
   tool_calls absent, null or empty). */
typedef struct nmsg {
  const char *role;
  char *text;
  const cJSON *calls;
} nmsg;

typedef struct named_ctx {
  sbuf b;
  const chat_request *q;
  const char *name;   /* the template's name, for messages */
  const cJSON *tools; /* NULL when none (absent, null or empty) */
  nmsg *m;
  size_t n;
  jinja_template *js[3]; /* tojson, tojson(indent=2), tojson(indent=4), parsed when first used */
  llm_err *err;
} named_ctx;

/* v as transformers' tojson writes it (json.dumps: ensure_ascii=False, keys in order; indent 0, 2 or 4), through
   the Jinja subset itself, so that a named template writes the JSON a model's template writes. */
static wgllm_status put_json(named_ctx *c, const cJSON *v, int indent) {
  static const char *const src[3] = {"{{ v|tojson }}", "{{ v|tojson(indent=2) }}", "{{ v|tojson(indent=4) }}"};
  int k = indent == 4 ? 2 : indent == 2 ? 1 : 0;
  wgllm_status st = WGLLM_OK;
  if (!c->js[k]) st = jinja_parse(src[k], strlen(src[k]), &c->js[k], c->err);
  cJSON *vars = st ? NULL : cJSON_CreateObject();
  if (!st && (!vars || !cJSON_AddItemReferenceToObject(vars, "v", (cJSON *)v)))
    st = llm_err_set(c->err, WGLLM_ERR_OUT_OF_MEMORY, "out of host memory");
  char *text = NULL;
  if (!st) st = jinja_render(c->js[k], vars, NULL, &text, NULL, c->err);
  if (!st) put(&c->b, "%s", text);
  free(text);
  cJSON_Delete(vars);
  return st;
}

/* Python's str.strip(): the whitespace of str.isspace(), ASCII and Unicode, as Jinja's trim filter strips it */
static size_t space_at(const char *s, size_t i, size_t n) { /* the length of the space character at s[i], or 0 */
  unsigned char c = (unsigned char)s[i];
  if (c == ' ' || (c >= 0x09 && c <= 0x0d) || (c >= 0x1c && c <= 0x1f)) return 1;
  unsigned long cp = 0;
  size_t k = c >= 0xf0 ? 4 : c >= 0xe0 ? 3 : c >= 0xc0 ? 2 : 0;
  if (!k || i + k > n) return 0;
  cp = c & (0x3f >> (k - 1));
  for (size_t j = 1; j < k; j++)
    cp = cp << 6 | ((unsigned char)s[i + j] & 0x3f);
  int sp = cp == 0x85 || cp == 0xa0 || cp == 0x1680 || (cp >= 0x2000 && cp <= 0x200a) || cp == 0x2028 || cp == 0x2029 ||
           cp == 0x202f || cp == 0x205f || cp == 0x3000;
  return sp ? k : 0;
}
static void put_trimmed(sbuf *b, const char *s) {
  size_t n = strlen(s), a = 0, e = n, k;
  while (a < n && (k = space_at(s, a, n)))
    a += k;
  for (;;) { /* back over the last character while it is a space */
    size_t j = e;
    while (j > a && ((unsigned char)s[j - 1] & 0xc0) == 0x80)
      j--;
    if (j == a || j == 0) break;
    j--;
    if (space_at(s, j, e) != e - j) break;
    e = j;
  }
  put(b, "%.*s", (int)(e - a), s + a);
}

static int truthy(const cJSON *v) {
  if (!v || cJSON_IsNull(v) || cJSON_IsFalse(v)) return 0;
  if (cJSON_IsNumber(v)) return v->valuedouble != 0;
  if (cJSON_IsString(v)) return v->valuestring[0] != 0;
  if (cJSON_IsArray(v) || cJSON_IsObject(v)) return v->child != NULL;
  return 1;
}

/* message i's tool call k: its function's name and arguments (the call itself when it has no "function") */
static wgllm_status call_parts(named_ctx *c, size_t i, int k, const char **name, const cJSON **args) {
  const cJSON *tc = cJSON_GetArrayItem(c->m[i].calls, k);
  const cJSON *fn = cJSON_GetObjectItemCaseSensitive(tc, "function");
  if (!cJSON_IsObject(fn)) fn = tc;
  const cJSON *nm = cJSON_GetObjectItemCaseSensitive(fn, "name");
  *args = cJSON_GetObjectItemCaseSensitive(fn, "arguments");
  if (!cJSON_IsString(nm) || !nm->valuestring[0])
    return llm_err_set(c->err, WGLLM_ERR_INVALID_ARG, "message %zu: tool call %d has no function name", i, k);
  if (!*args)
    return llm_err_set(c->err, WGLLM_ERR_INVALID_ARG, "message %zu: tool call %d (%s) has no arguments", i, k,
                       nm->valuestring);
  *name = nm->valuestring;
  return WGLLM_OK;
}

static const cJSON *kwarg(const chat_request *q, const char *k) {
  return cJSON_IsObject(q->kwargs) ? cJSON_GetObjectItemCaseSensitive(q->kwargs, k) : NULL;
}

static int is_role(const nmsg *m, const char *r) { return !strcmp(m->role, r); }

/* Llama 3.1 / 3.2's tool format, as Llama 3.2's template writes it: the system header with "Environment: ipython"
   (with tools) and the dates, the tools as JSON (indent 4) in the first user message (tools_in_user_message, the
   default) or the system message, a call as {"name": ..., "parameters": ...} (one per message), results in the
   ipython role; contents trimmed. */
static wgllm_status llama3_tools(named_ctx *c, const jinja_limits *lim) {
  static const char format[] =
      "Respond in the format {\"name\": function name, \"parameters\": dictionary of argument name and its value}."
      "Do not use variables.\n\n";
  char date[64];
  const cJSON *ds = kwarg(c->q, "date_string"), *tium = kwarg(c->q, "tools_in_user_message");
  if (cJSON_IsString(ds))
    snprintf(date, sizeof date, "%.60s", ds->valuestring);
  else {
    time_t now = lim && lim->now ? lim->now : time(NULL);
    struct tm tm;
    localtime_r(&now, &tm);
    if (!strftime(date, sizeof date, "%d %b %Y", &tm)) date[0] = 0;
  }
  int in_user = !tium || truthy(tium);
  size_t i = 0;
  wgllm_status st = WGLLM_OK;
  put(&c->b, "<|begin_of_text|><|start_header_id|>system<|end_header_id|>\n\n");
  if (c->tools) put(&c->b, "Environment: ipython\n");
  put(&c->b, "Cutting Knowledge Date: December 2023\nToday Date: %s\n\n", date);
  const cJSON *t;
  if (c->tools && !in_user) {
    put(&c->b,
        "You have access to the following functions. To call a function, please respond with JSON for a "
        "function call.%s",
        format);
    cJSON_ArrayForEach(t, c->tools) {
      if (!st) st = put_json(c, t, 4);
      put(&c->b, "\n\n");
    }
  }
  if (c->n && is_role(&c->m[0], "system")) put_trimmed(&c->b, c->m[i++].text);
  put(&c->b, "<|eot_id|>");
  if (c->tools && in_user) {
    if (i >= c->n)
      return llm_err_set(c->err, WGLLM_ERR_INVALID_ARG,
                         "the named chat template \"llama3\" puts the tools in the first user message, and there is "
                         "none (tools_in_user_message false puts them in the system message)");
    put(&c->b,
        "<|start_header_id|>user<|end_header_id|>\n\nGiven the following functions, please respond with a JSON "
        "for a function call with its proper arguments that best answers the given prompt.\n\n%s",
        format);
    cJSON_ArrayForEach(t, c->tools) {
      if (!st) st = put_json(c, t, 4);
      put(&c->b, "\n\n");
    }
    put_trimmed(&c->b, c->m[i++].text);
    put(&c->b, "<|eot_id|>");
  }
  for (; i < c->n && !st; i++) {
    const nmsg *m = &c->m[i];
    if (m->calls) {
      int k = cJSON_GetArraySize(m->calls);
      if (k != 1)
        return llm_err_set(c->err, WGLLM_ERR_UNSUPPORTED,
                           "message %zu has %d tool calls: Llama 3's tool format takes one call per assistant "
                           "message (its template refuses more)",
                           i, k);
      const char *name;
      const cJSON *args;
      if ((st = call_parts(c, i, 0, &name, &args))) return st;
      put(&c->b, "<|start_header_id|>assistant<|end_header_id|>\n\n{\"name\": \"%s\", \"parameters\": ", name);
      st = put_json(c, args, 0);
      put(&c->b, "}<|eot_id|>");
    } else if (is_role(m, "tool") || is_role(m, "ipython")) { /* the template writes a string result as JSON */
      put(&c->b, "<|start_header_id|>ipython<|end_header_id|>\n\n");
      const cJSON *content = cJSON_GetObjectItemCaseSensitive(cJSON_GetArrayItem(c->q->messages, (int)i), "content");
      if (cJSON_IsString(content) || cJSON_IsArray(content))
        st = put_json(c, content, 0);
      else
        put(&c->b, "%s", m->text);
      put(&c->b, "<|eot_id|>");
    } else {
      put(&c->b, "<|start_header_id|>%s<|end_header_id|>\n\n", m->role);
      put_trimmed(&c->b, m->text);
      put(&c->b, "<|eot_id|>");
    }
  }
  if (!st && c->q->add_generation_prompt) put(&c->b, "<|start_header_id|>assistant<|end_header_id|>\n\n");
  return st;
}

/* Qwen's tool format as Qwen 3's template writes it (Qwen 2.5's but for its default system prompt and its
   string arguments): the tools in the system message under "# Tools", calls in <tool_call> blocks, the results
   of consecutive tool messages in one user turn of <tool_response> blocks. */
static wgllm_status chatml_tools(named_ctx *c) {
  wgllm_status st = WGLLM_OK;
  int sys = c->n && is_role(&c->m[0], "system");
  if (c->tools) {
    put(&c->b, "<|im_start|>system\n");
    if (sys) put(&c->b, "%s\n\n", c->m[0].text);
    put(&c->b, "# Tools\n\nYou may call one or more functions to assist with the user query.\n\nYou are provided with "
               "function signatures within <tools></tools> XML tags:\n<tools>");
    const cJSON *t;
    cJSON_ArrayForEach(t, c->tools) {
      put(&c->b, "\n");
      if (!st) st = put_json(c, t, 0);
    }
    put(&c->b, "\n</tools>\n\nFor each function call, return a json object with function name and arguments within "
               "<tool_call></tool_call> XML tags:\n<tool_call>\n{\"name\": <function-name>, \"arguments\": "
               "<args-json-object>}\n</tool_call><|im_end|>\n");
  } else if (sys)
    put(&c->b, "<|im_start|>system\n%s<|im_end|>\n", c->m[0].text);
  for (size_t i = sys; i < c->n && !st; i++) {
    const nmsg *m = &c->m[i];
    if (is_role(m, "tool")) {
      if (i == 0 || !is_role(&c->m[i - 1], "tool")) put(&c->b, "<|im_start|>user");
      put(&c->b, "\n<tool_response>\n%s\n</tool_response>", m->text);
      if (i + 1 == c->n || !is_role(&c->m[i + 1], "tool")) put(&c->b, "<|im_end|>\n");
      continue;
    }
    put(&c->b, "<|im_start|>%s\n%s", m->role, m->text);
    for (int k = 0; m->calls && k < cJSON_GetArraySize(m->calls) && !st; k++) {
      const char *name;
      const cJSON *args;
      if ((st = call_parts(c, i, k, &name, &args))) return st;
      put(&c->b, "%s<tool_call>\n{\"name\": \"%s\", \"arguments\": ", k || m->text[0] ? "\n" : "", name);
      if (cJSON_IsString(args))
        put(&c->b, "%s", args->valuestring);
      else
        st = put_json(c, args, 0);
      put(&c->b, "}\n</tool_call>");
    }
    put(&c->b, "<|im_end|>\n");
  }
  if (!st && c->q->add_generation_prompt) put(&c->b, "<|im_start|>assistant\n");
  return st;
}

/* Gemma's function calling by prompt (Gemma has no tool tokens): the tools described in the first turn (after the
   system text), calls as a ```tool_code block of Python calls, the results of consecutive tool messages in one
   user turn of ```tool_output blocks. The wording is this engine's; docs/CHAT_TEMPLATES.md shows it whole. */
static wgllm_status gemma_tools(named_ctx *c) {
  wgllm_status st = WGLLM_OK;
  size_t first = c->n && is_role(&c->m[0], "system");
  if (c->tools && first >= c->n)
    return llm_err_set(c->err, WGLLM_ERR_INVALID_ARG,
                       "the named chat template \"gemma\" puts the tools in the first turn, and there is none");
  put(&c->b, "<bos>");
  for (size_t i = first; i < c->n && !st; i++) {
    const nmsg *m = &c->m[i];
    if (is_role(m, "tool")) {
      if (i == first && (first || c->tools))
        return llm_err_set(c->err, WGLLM_ERR_INVALID_ARG,
                           "message %zu: a tool result cannot open the conversation (the named chat template "
                           "\"gemma\" puts the system text and the tools in the first turn)",
                           i);
      if (i == first || !is_role(&c->m[i - 1], "tool"))
        put(&c->b, "<start_of_turn>user\n");
      else
        put(&c->b, "\n");
      put(&c->b, "```tool_output\n%s\n```", m->text);
      if (i + 1 == c->n || !is_role(&c->m[i + 1], "tool")) put(&c->b, "<end_of_turn>\n");
      continue;
    }
    put(&c->b, "<start_of_turn>%s\n", is_role(m, "assistant") ? "model" : m->role);
    if (i == first && first) put(&c->b, "%s\n\n", c->m[0].text);
    if (i == first && c->tools) {
      put(&c->b, "You can call the functions below, given as JSON schemas. To call one or more of them, answer with "
                 "only a ```tool_code block holding one Python call per line, with keyword arguments:\n```tool_code\n"
                 "function_name(argument=\"value\", number=1)\n```\nEach result comes back in a ```tool_output "
                 "block.\n\n");
      const cJSON *t;
      cJSON_ArrayForEach(t, c->tools) {
        const cJSON *fn = cJSON_GetObjectItemCaseSensitive(t, "function");
        if (!st) st = put_json(c, cJSON_IsObject(fn) ? fn : t, 2);
        put(&c->b, "\n\n");
      }
    }
    put(&c->b, "%s", m->text);
    if (m->calls) {
      put(&c->b, "%s```tool_code\n", m->text[0] ? "\n" : "");
      for (int k = 0; k < cJSON_GetArraySize(m->calls) && !st; k++) {
        const char *name;
        const cJSON *args;
        char *line = NULL;
        if ((st = call_parts(c, i, k, &name, &args))) return st;
        if (cJSON_IsString(args)) {
          st = chat_tool_python_call(name, args->valuestring, &line, c->err);
        } else {
          size_t at = c->b.len;
          if (!(st = put_json(c, args, 0))) { /* the arguments' JSON, read back off the end of the buffer */
            char *js = c->b.oom ? NULL : strdup(c->b.s + at);
            c->b.len = at;
            if (c->b.s) c->b.s[at] = 0;
            st = js ? chat_tool_python_call(name, js, &line, c->err)
                    : llm_err_set(c->err, WGLLM_ERR_OUT_OF_MEMORY, "out of host memory");
            free(js);
          }
        }
        if (st) {
          llm_err_prefix(c->err, "message %zu, tool call %d", i, k);
          return st;
        }
        put(&c->b, "%s%s", k ? "\n" : "", line);
        free(line);
      }
      put(&c->b, "\n```");
    }
    put(&c->b, "<end_of_turn>\n");
  }
  if (!st && c->q->add_generation_prompt) put(&c->b, "<start_of_turn>model\n");
  return st;
}

static wgllm_status apply_named(const chat_renderer *r, const chat_request *q, const jinja_limits *lim, char **out,
                                llm_err *err) {
  named_ctx c = {.q = q, .name = chat_template_name(r->named), .err = err};
  c.n = (size_t)cJSON_GetArraySize(q->messages);
  c.tools = q->tools && cJSON_GetArraySize(q->tools) > 0 ? q->tools : NULL;
  c.m = calloc(c.n ? c.n : 1, sizeof *c.m);
  wgllm_status st = c.m ? WGLLM_OK : llm_err_set(err, WGLLM_ERR_OUT_OF_MEMORY, "out of host memory");
  int tool_mode = c.tools != NULL;
  size_t i = 0;
  const cJSON *m;
  cJSON_ArrayForEach(m, q->messages) {
    if (st) break;
    const cJSON *role = cJSON_GetObjectItemCaseSensitive(m, "role");
    const cJSON *calls = cJSON_GetObjectItemCaseSensitive(m, "tool_calls");
    if (!cJSON_IsString(role)) {
      st = llm_err_set(err, WGLLM_ERR_INVALID_ARG, "message %zu has no role", i);
    } else if (calls && !cJSON_IsNull(calls) && !cJSON_IsArray(calls)) {
      st = llm_err_set(err, WGLLM_ERR_INVALID_ARG, "message %zu: tool_calls must be a list", i);
    } else if (!(c.m[i].text = content_text(cJSON_GetObjectItemCaseSensitive(m, "content"), i, err))) {
      st = llm_err_msg(err)[0] ? WGLLM_ERR_INVALID_ARG : WGLLM_ERR_OUT_OF_MEMORY;
      if (!llm_err_msg(err)[0]) llm_err_set(err, st, "out of host memory");
    } else {
      c.m[i].role = role->valuestring;
      c.m[i].calls = cJSON_GetArraySize(calls) > 0 ? calls : NULL;
      if (c.m[i].calls || !strcmp(role->valuestring, "tool") ||
          (r->named == CHAT_LLAMA3 && !strcmp(role->valuestring, "ipython")))
        tool_mode = 1;
    }
    i++;
  }
  if (!st && !tool_mode) { /* no tools: the templates of chat_format */
    chat_msg *msgs = calloc(c.n ? c.n : 1, sizeof *msgs);
    for (size_t k = 0; msgs && k < c.n; k++)
      msgs[k] = (chat_msg){c.m[k].role, c.m[k].text};
    *out = msgs ? chat_format(r->named, msgs, c.n, q->add_generation_prompt) : NULL;
    free(msgs);
    if (!*out) st = llm_err_set(err, WGLLM_ERR_OUT_OF_MEMORY, "out of host memory");
  } else if (!st) {
    put(&c.b, "%s", "");
    switch (r->named) {
    case CHAT_LLAMA3:
      st = llama3_tools(&c, lim);
      break;
    case CHAT_CHATML:
      st = chatml_tools(&c);
      break;
    case CHAT_GEMMA:
      st = gemma_tools(&c);
      break;
    default: {
      size_t k = 0;
      while (k < c.n && !c.m[k].calls && strcmp(c.m[k].role, "tool"))
        k++;
      char what[64];
      if (c.tools)
        snprintf(what, sizeof what, "tools");
      else
        snprintf(what, sizeof what, "tool calls (message %zu)", k);
      st = llm_err_set(err, WGLLM_ERR_UNSUPPORTED,
                       "the named chat template \"%s\" cannot render %s: %s; use the "
                       "model's own chat template",
                       c.name, what,
                       r->named == CHAT_LLAMA2
                           ? "Llama 2's format has no tool calls, and Mistral's ([AVAILABLE_TOOLS], [TOOL_CALLS], "
                             "[TOOL_RESULTS]) belongs to another format than Llama 2's (system prompt, spacing)"
                           : "plain concatenation has no tool format");
    }
    }
    if (!st && c.b.oom) st = llm_err_set(err, WGLLM_ERR_OUT_OF_MEMORY, "out of host memory");
    if (!st) {
      *out = c.b.s;
      c.b.s = NULL;
    }
  }
  free(c.b.s);
  for (int k = 0; k < 3; k++)
    jinja_free(c.js[k]);
  for (size_t k = 0; c.m && k < c.n; k++)
    free(c.m[k].text);
  free(c.m);
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
  return r->tmpl ? apply_jinja(r, &qq, lim, out, err) : apply_named(r, &qq, lim, out, err);
}
