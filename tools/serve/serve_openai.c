/* OpenAI request bodies to plain C structs (every field type- and range-checked, the error naming the field) and
   the JSON answers of `wgllm serve`, on cJSON. Pure functions: no model, no I/O, no globals (fuzzed by
   tests/fuzz/fuzz_http_request.c). */
#include "serve_openai.h"
#include "json_shape.h"
#include "serve_embed.h"
#include "wgllm.h"
#include <cjson/cJSON.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int serve_fail(serve_error *e, int status, const char *type, const char *param, const char *code, const char *fmt,
               ...) {
  e->status = status;
  e->type = type ? type : "invalid_request_error";
  snprintf(e->param, sizeof e->param, "%s", param ? param : "");
  snprintf(e->code, sizeof e->code, "%s", code ? code : "");
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(e->message, sizeof e->message, fmt, ap);
  va_end(ap);
  return -1;
}

static int bad(serve_error *e, const char *param, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static int bad(serve_error *e, const char *param, const char *fmt, ...) {
  char msg[sizeof e->message];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  return serve_fail(e, 400, "invalid_request_error", param, NULL, "%s", msg);
}

long serve_utf8_invalid_at(const char *s, size_t n) {
  const unsigned char *p = (const unsigned char *)s;
  for (size_t i = 0; i < n;) {
    unsigned c = p[i], k = c < 0x80 ? 0 : (c & 0xE0) == 0xC0 ? 1 : (c & 0xF0) == 0xE0 ? 2 : (c & 0xF8) == 0xF0 ? 3 : 9;
    if (k == 9) return (long)i;
    uint32_t cp = k == 0 ? c : k == 1 ? c & 0x1F : k == 2 ? c & 0x0F : c & 0x07;
    for (unsigned j = 1; j <= k; j++) {
      if (i + j >= n || (p[i + j] & 0xC0) != 0x80) return (long)i; /* cut short or not a continuation */
      cp = cp << 6 | (p[i + j] & 0x3F);
    }
    static const uint32_t min[] = {0, 0x80, 0x800, 0x10000};
    if (cp < min[k] || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) return (long)i;
    i += k + 1;
  }
  return -1;
}

static int oom(serve_error *err) { return serve_fail(err, 500, "server_error", NULL, NULL, "out of memory"); }

/* The body as a JSON object; NULL with *err filled. */
static cJSON *parse_object(const char *body, size_t len, serve_error *err) {
  long at = serve_utf8_invalid_at(body, len);
  if (at >= 0) {
    bad(err, NULL, "the request body is not valid UTF-8 (byte %ld of %zu)", at, len);
    return NULL;
  }
  char why[128]; /* the shared pre-check of every JSON text (src/base/json_shape.h) */
  int shape = json_shape_check(body, len, SERVE_JSON_MAX_VALUES, SERVE_JSON_MAX_DEPTH, why, sizeof why);
  if (shape == JSON_TOO_DEEP) {
    bad(err, NULL, "the request body's %s", why);
    return NULL;
  }
  if (shape == JSON_TOO_MANY) {
    serve_fail(err, 413, "invalid_request_error", NULL, "request_too_large", "the request body's %s", why);
    return NULL;
  }
  /* cJSON's strings end at a NUL: a "\u0000" escape is parsed as SERVE_NUL, a byte UTF-8 never holds, and the
     strings read are unescaped with their length (take_string); the byte offsets said are the copy's */
  char *nulled = json_mark_nul_escapes(body, len, SERVE_NUL, &len);
  if (!nulled) {
    oom(err);
    return NULL;
  }
  body = nulled;
  const char *end = NULL;
  cJSON *j = cJSON_ParseWithLengthOpts(body, len, &end, 0);
  if (!j) {
    size_t off = end && end >= body ? (size_t)(end - body) : 0;
    bad(err, NULL, "the request body is not valid JSON (at byte %zu of %zu)", off, len);
    free(nulled);
    return NULL;
  }
  const char *rest = end;
  while (rest && rest < body + len && strchr(" \t\r\n", *rest) && *rest)
    rest++;
  if (rest && rest < body + len) {
    bad(err, NULL, "the request body has more after its JSON value (at byte %zu of %zu)", (size_t)(rest - body), len);
    cJSON_Delete(j);
    free(nulled);
    return NULL;
  }
  free(nulled);
  if (!cJSON_IsObject(j)) {
    bad(err, NULL, "the request body must be a JSON object");
    cJSON_Delete(j);
    return NULL;
  }
  return j;
}

/* A field that is absent or null counts as not given. */
static const cJSON *field(const cJSON *o, const char *name) {
  const cJSON *f = cJSON_GetObjectItemCaseSensitive(o, name);
  return f && !cJSON_IsNull(f) ? f : NULL;
}

static int get_bool(const cJSON *o, const char *name, int *out, serve_error *err) {
  const cJSON *f = field(o, name);
  if (!f) return 0;
  if (!cJSON_IsBool(f)) return bad(err, name, "'%s' must be true or false", name);
  *out = cJSON_IsTrue(f);
  return 0;
}

static int get_number(const cJSON *o, const char *name, double lo, double hi, int lo_open, double *out,
                      serve_error *err) {
  const cJSON *f = field(o, name);
  if (!f) return 0;
  if (!cJSON_IsNumber(f)) return bad(err, name, "'%s' must be a number", name);
  double x = f->valuedouble;
  if (!isfinite(x) || x < lo || (lo_open && x == lo) || x > hi)
    return bad(err, name, "'%s' is %g; expected a number %s %g and at most %g", name, x,
               lo_open ? "greater than" : "of at least", lo, hi);
  *out = x;
  return 1;
}

/* An integer within [lo, hi]; returns 1 when given, 0 when absent, -1 on error. */
static int get_int(const cJSON *o, const char *name, double lo, double hi, long long *out, serve_error *err) {
  const cJSON *f = field(o, name);
  if (!f) return 0;
  if (!cJSON_IsNumber(f) || !isfinite(f->valuedouble) || floor(f->valuedouble) != f->valuedouble)
    return bad(err, name, "'%s' must be a whole number", name);
  double x = f->valuedouble;
  /* 2^63 itself is not a long long (and hi = 2^63 - 1 rounds to it as a double) */
  if (x < lo || x > hi || x >= 9223372036854775808.0)
    return bad(err, name, "'%s' is %.0f; expected a whole number from %.0f to %.0f", name, x, lo, hi);
  *out = (long long)x;
  return 1;
}

static char *dup_n(const char *s, size_t n) {
  char *d = malloc(n + 1);
  if (d) {
    memcpy(d, s, n);
    d[n] = 0;
  }
  return d;
}

/* A string value's bytes with its NULs (SERVE_NUL as parsed) back: malloc'd, NUL-terminated, *len its length. */
static char *take_string(const cJSON *j, size_t *len) {
  *len = strlen(j->valuestring);
  char *d = dup_n(j->valuestring, *len);
  for (size_t i = 0; d && i < *len; i++)
    if ((unsigned char)d[i] == SERVE_NUL) d[i] = 0;
  return d;
}

/* stop: a string or an array of strings, none empty */
static int get_stop(const cJSON *o, const serve_limits *lim, serve_request *r, serve_error *err) {
  const cJSON *f = field(o, "stop");
  if (!f) return 0;
  size_t n = cJSON_IsString(f) ? 1 : cJSON_IsArray(f) ? (size_t)cJSON_GetArraySize(f) : 0;
  if (!cJSON_IsString(f) && !cJSON_IsArray(f))
    return bad(err, "stop", "'stop' must be a string or an array of strings");
  if (n > lim->max_stop) return bad(err, "stop", "'stop' has %zu strings; at most %u are accepted", n, lim->max_stop);
  if (!n) return 0;
  r->stop = calloc(n, sizeof *r->stop);
  r->stop_len = calloc(n, sizeof *r->stop_len);
  if (!r->stop || !r->stop_len) return oom(err);
  const cJSON *it = cJSON_IsString(f) ? f : f->child;
  for (size_t i = 0; i < n; i++, it = it->next) {
    if (!cJSON_IsString(it)) return bad(err, "stop", "'stop' must be a string or an array of strings");
    size_t l = strlen(it->valuestring); /* NULs are SERVE_NUL here: one byte each, as they will be */
    if (!l) return bad(err, "stop", "'stop' holds an empty string");
    if (l > lim->max_stop_bytes)
      return bad(err, "stop", "a stop string is %zu bytes; at most %zu are accepted", l, lim->max_stop_bytes);
    if (!(r->stop[r->n_stop] = take_string(it, &r->stop_len[r->n_stop]))) return oom(err);
    r->n_stop++;
  }
  return 0;
}

/* Fields of OpenAI's API the engine cannot honour: accepted only at their neutral value. */
static int refuse_unsupported(const cJSON *o, serve_kind kind, serve_error *err) {
  long long n = 1;
  if (get_int(o, "n", 1, 1e9, &n, err) < 0) return -1;
  if (n > SERVE_MAX_CHOICES)
    return bad(err, "n", "'n' is %lld; at most %d choices a request are generated", n, SERVE_MAX_CHOICES);
  n = 1;
  if (get_int(o, "best_of", 1, 1e9, &n, err) < 0) return -1;
  if (n != 1) return bad(err, "best_of", "'best_of' is %lld; only 1 is supported", n);
  const cJSON *f;
  /* llama-server's and vLLM's fields that would change the output: refused rather than ignored (a request that asks
     for a regex must not get free text) */
  static const char *const not_here[] = {"guided_regex", "guided_choice", "guided_grammar",   "mirostat",
                                         "typical_p",    "tfs_z",         "dry_multiplier",   "xtc_probability",
                                         "n_probs",      "samplers",      "logit_bias_tokens"};
  for (size_t i = 0; i < sizeof not_here / sizeof not_here[0]; i++) {
    f = field(o, not_here[i]);
    if (f && !(cJSON_IsNumber(f) && f->valuedouble == 0) && !cJSON_IsFalse(f))
      return bad(err, not_here[i], "'%s' is not supported by this server", not_here[i]);
  }
  if (kind == SERVE_KIND_CHAT) { /* chat fields whose request the server cannot honour */
    static const char *const chat_not_here[] = {"functions", "function_call", "audio", "web_search_options"};
    for (size_t i = 0; i < sizeof chat_not_here / sizeof chat_not_here[0]; i++)
      if (field(o, chat_not_here[i]))
        return bad(err, chat_not_here[i], "'%s' is not supported by this server", chat_not_here[i]);
    f = field(o, "modalities");
    if (f) {
      int text_only = cJSON_IsArray(f) && cJSON_GetArraySize(f) == 1 && cJSON_IsString(f->child) &&
                      !strcmp(f->child->valuestring, "text");
      if (!text_only) return bad(err, "modalities", "'modalities' other than [\"text\"] is not supported");
    }
  }
  return 0;
}

/* messages: an array of {role, content, ...}; content a string, null (an assistant's tool calls) or text parts.
   Written into the chat JSON as given, with role "developer" as "system" (templates know the latter). */
static int check_messages(const cJSON *msgs, cJSON *out_msgs, serve_error *err) {
  if (!msgs) return bad(err, "messages", "'messages' is required");
  if (!cJSON_IsArray(msgs)) return bad(err, "messages", "'messages' must be an array");
  if (!msgs->child) return bad(err, "messages", "'messages' is empty");
  int i = 0;
  for (const cJSON *m = msgs->child; m; m = m->next, i++) {
    char param[48];
    snprintf(param, sizeof param, "messages[%d]", i);
    if (!cJSON_IsObject(m)) return bad(err, param, "'%s' must be an object", param);
    const cJSON *role = cJSON_GetObjectItemCaseSensitive(m, "role");
    if (!cJSON_IsString(role)) return bad(err, param, "'%s.role' must be a string", param);
    static const char *const roles[] = {"system", "developer", "user", "assistant", "tool"};
    int known = 0;
    for (size_t k = 0; k < sizeof roles / sizeof *roles; k++)
      known |= !strcmp(role->valuestring, roles[k]);
    if (!known)
      return bad(err, param, "'%s.role' is '%.40s'; expected system, developer, user, assistant or tool", param,
                 role->valuestring);
    const cJSON *content = cJSON_GetObjectItemCaseSensitive(m, "content");
    int is_assistant = !strcmp(role->valuestring, "assistant");
    if (!content || cJSON_IsNull(content)) {
      if (!is_assistant || !cJSON_GetObjectItemCaseSensitive(m, "tool_calls"))
        return bad(err, param, "'%s.content' is required", param);
    } else if (cJSON_IsArray(content)) {
      int k = 0;
      for (const cJSON *part = content->child; part; part = part->next, k++) {
        const cJSON *type = cJSON_IsObject(part) ? cJSON_GetObjectItemCaseSensitive(part, "type") : NULL;
        if (!cJSON_IsString(type) || strcmp(type->valuestring, "text"))
          return bad(err, param, "'%s.content[%d]': only {\"type\": \"text\", \"text\": ...} parts are supported",
                     param, k);
        if (!cJSON_IsString(cJSON_GetObjectItemCaseSensitive(part, "text")))
          return bad(err, param, "'%s.content[%d].text' must be a string", param, k);
      }
    } else if (!cJSON_IsString(content)) {
      return bad(err, param, "'%s.content' must be a string, an array of text parts or null", param);
    }
    cJSON *copy = cJSON_Duplicate(m, 1);
    if (!copy) return oom(err);
    if (!strcmp(role->valuestring, "developer"))
      cJSON_ReplaceItemInObjectCaseSensitive(copy, "role", cJSON_CreateString("system"));
    /* an assistant's calls as templates written for transformers take them (llama-server does the same): content
       "" for null, and each call's arguments an object where OpenAI sends its JSON text */
    if (!content || cJSON_IsNull(content)) {
      cJSON_DeleteItemFromObjectCaseSensitive(copy, "content");
      cJSON_AddStringToObject(copy, "content", "");
    }
    /* the reasoning of an assistant turn with calls, where gpt-oss's template reads it ("thinking": the analysis
       written before the call; llama-server copies it so too); not beside content, which that template refuses */
    const cJSON *rc = cJSON_GetObjectItemCaseSensitive(m, "reasoning_content");
    if (is_assistant && cJSON_IsString(rc) && rc->valuestring[0] && cJSON_GetObjectItemCaseSensitive(m, "tool_calls") &&
        !cJSON_GetObjectItemCaseSensitive(m, "thinking") && (!cJSON_IsString(content) || !content->valuestring[0]) &&
        !cJSON_AddStringToObject(copy, "thinking", rc->valuestring)) {
      cJSON_Delete(copy);
      return oom(err);
    }
    cJSON *call;
    cJSON_ArrayForEach(call, cJSON_GetObjectItemCaseSensitive(copy, "tool_calls")) {
      cJSON *fn = cJSON_GetObjectItemCaseSensitive(call, "function");
      cJSON *args = cJSON_GetObjectItemCaseSensitive(fn, "arguments");
      cJSON *obj = cJSON_IsString(args) ? cJSON_Parse(args->valuestring) : NULL;
      if (cJSON_IsObject(obj))
        cJSON_ReplaceItemInObjectCaseSensitive(fn, "arguments", obj);
      else
        cJSON_Delete(obj);
    }
    cJSON_AddItemToArray(out_msgs, copy);
  }
  return 0;
}

/* tools' function names, tool_choice, reasoning_format */
static int tool_fields(const cJSON *o, const cJSON *tools, serve_request *r, serve_error *err) {
  size_t n = tools ? (size_t)cJSON_GetArraySize(tools) : 0;
  if (n) {
    if (!(r->tools_json = cJSON_PrintUnformatted(tools)) || !(r->tool_names = calloc(n, sizeof *r->tool_names)))
      return oom(err);
    const cJSON *t;
    cJSON_ArrayForEach(t, tools) {
      const cJSON *fn = field(t, "function");
      const cJSON *name = fn && cJSON_IsObject(fn) ? field(fn, "name") : field(t, "name");
      if (!name || !cJSON_IsString(name) || !name->valuestring[0])
        return bad(err, "tools",
                   "tools[%zu] has no function name ({\"type\": \"function\", \"function\": "
                   "{\"name\": ...}})",
                   r->n_tools);
      if (!(r->tool_names[r->n_tools++] = strdup(name->valuestring))) return oom(err);
    }
  }
  const cJSON *f = field(o, "tool_choice");
  if (f) {
    if (cJSON_IsString(f) && !strcmp(f->valuestring, "auto")) {
      r->tool_choice = SERVE_TOOLS_AUTO;
    } else if (cJSON_IsString(f) && !strcmp(f->valuestring, "none")) {
      r->tool_choice = SERVE_TOOLS_NONE;
    } else if (cJSON_IsString(f) && !strcmp(f->valuestring, "required")) {
      r->tool_choice = SERVE_TOOLS_REQUIRED;
    } else if (cJSON_IsObject(f)) { /* {"type": "function", "function": {"name": N}} */
      const cJSON *fn = field(f, "function"), *name = fn && cJSON_IsObject(fn) ? field(fn, "name") : NULL;
      if (!name || !cJSON_IsString(name))
        return bad(err, "tool_choice",
                   "'tool_choice' object must be {\"type\": \"function\", \"function\": "
                   "{\"name\": ...}}");
      size_t k = 0;
      while (k < r->n_tools && strcmp(r->tool_names[k], name->valuestring))
        k++;
      if (k == r->n_tools)
        return bad(err, "tool_choice", "'tool_choice' names the function '%.64s', which is not among 'tools'",
                   name->valuestring);
      r->tool_choice = SERVE_TOOLS_NAMED;
      if (!(r->tool_name = strdup(name->valuestring))) return oom(err);
    } else {
      return bad(err, "tool_choice", "'tool_choice' must be \"auto\", \"none\", \"required\" or a function");
    }
    if ((r->tool_choice == SERVE_TOOLS_REQUIRED || r->tool_choice == SERVE_TOOLS_NAMED) && !n)
      return bad(err, "tool_choice", "'tool_choice' asks for a call but the request has no 'tools'");
  }
  f = field(o, "reasoning_format");
  if (f) {
    if (!cJSON_IsString(f) ||
        (strcmp(f->valuestring, "none") && strcmp(f->valuestring, "deepseek") && strcmp(f->valuestring, "auto")))
      return bad(err, "reasoning_format", "'reasoning_format' must be \"none\", \"auto\" or \"deepseek\"");
    r->reasoning_inline = !strcmp(f->valuestring, "none");
  }
  return 0;
}

static int chat_fields(const cJSON *o, const serve_limits *lim, serve_request *r, serve_error *err) {
  cJSON *chat = cJSON_CreateObject(), *msgs = cJSON_CreateArray();
  if (!chat || !msgs) {
    cJSON_Delete(chat);
    cJSON_Delete(msgs);
    return oom(err);
  }
  cJSON_AddItemToObject(chat, "messages", msgs);
  int rc = check_messages(cJSON_GetObjectItemCaseSensitive(o, "messages"), msgs, err);
  const cJSON *tools = field(o, "tools");
  if (!rc && tools) {
    if (!cJSON_IsArray(tools)) rc = bad(err, "tools", "'tools' must be an array");
    for (const cJSON *t = rc ? NULL : tools->child; t && !rc; t = t->next)
      if (!cJSON_IsObject(t)) rc = bad(err, "tools", "each of 'tools' must be an object");
  }
  if (!rc) rc = tool_fields(o, tools, r, err);
  if (!rc && tools && cJSON_GetArraySize(tools) && r->tool_choice != SERVE_TOOLS_NONE)
    cJSON_AddItemToObject(chat, "tools", cJSON_Duplicate(tools, 1)); /* "none": not offered */
  const cJSON *kw = field(o, "chat_template_kwargs");
  if (!rc && kw) {
    if (!cJSON_IsObject(kw))
      rc = bad(err, "chat_template_kwargs", "'chat_template_kwargs' must be an object");
    else
      cJSON_AddItemToObject(chat, "chat_template_kwargs", cJSON_Duplicate(kw, 1));
  }
  int parse_special = lim->parse_special;
  if (!rc) rc = get_bool(o, "parse_special", &parse_special, err);
  if (!rc && !cJSON_AddBoolToObject(chat, "parse_special", parse_special)) rc = oom(err);
  if (!rc) { /* SERVE_NUL back to "\u0000" */
    r->chat_json = serve_print_json(chat);
    chat = NULL;
    if (!r->chat_json)
      rc = oom(err);
    else
      r->chat_json_len = strlen(r->chat_json);
  }
  cJSON_Delete(chat);
  return rc;
}

/* prompt: a string, an array of one string, or an array of token ids */
static int completion_prompt(const cJSON *o, const serve_limits *lim, serve_request *r, serve_error *err) {
  const cJSON *p = field(o, "prompt");
  if (!p) return bad(err, "prompt", "'prompt' is required");
  if (cJSON_IsArray(p) && p->child && cJSON_IsString(p->child)) {
    if (p->child->next) return bad(err, "prompt", "'prompt' holds several prompts; send one a request");
    p = p->child;
  }
  if (cJSON_IsString(p)) {
    r->prompt = take_string(p, &r->prompt_len);
    return r->prompt ? 0 : oom(err);
  }
  if (!cJSON_IsArray(p)) return bad(err, "prompt", "'prompt' must be a string or an array of token ids");
  size_t n = (size_t)cJSON_GetArraySize(p);
  if (!n) return bad(err, "prompt", "'prompt' is an empty array");
  if (n > lim->max_prompt_ids)
    return bad(err, "prompt", "'prompt' has %zu token ids; at most %zu are accepted", n, lim->max_prompt_ids);
  r->prompt_ids = malloc(n * sizeof *r->prompt_ids);
  if (!r->prompt_ids) return oom(err);
  for (const cJSON *it = p->child; it; it = it->next) {
    if (cJSON_IsArray(it)) return bad(err, "prompt", "'prompt' holds several prompts; send one a request");
    if (!cJSON_IsNumber(it) || !isfinite(it->valuedouble) || floor(it->valuedouble) != it->valuedouble ||
        it->valuedouble < 0 || it->valuedouble > 2147483647.0)
      return bad(err, "prompt", "'prompt' must be a string or an array of token ids (whole numbers from 0)");
    r->prompt_ids[r->n_prompt_ids++] = (int32_t)it->valuedouble;
  }
  return 0;
}

static int sampling_fields(const cJSON *o, const serve_limits *lim, serve_request *r, serve_error *err) {
  double x;
  long long i;
  int g;
  /* temperature and repeat_penalty divide logits: above 0 each is at least the API's minimum (a smaller one would
     be 0 or a denormal as a float and make infinities of finite logits) */
  if ((g = get_number(o, "temperature", 0, 2, 0, &x, err)) < 0) return -1;
  if (g && x > 0 && x < WGLLM_SAMPLING_SCALE_MIN)
    return bad(err, "temperature", "'temperature' is %g; expected 0 (greedy) or at least %g", x,
               WGLLM_SAMPLING_SCALE_MIN);
  if (g) r->temperature = (float)x;
  if ((g = get_number(o, "top_p", 0, 1, 0, &x, err)) < 0) return -1;
  if (g) r->top_p = (float)x;
  if ((g = get_number(o, "min_p", 0, 1, 0, &x, err)) < 0) return -1;
  if (g) r->min_p = (float)x;
  /* top_k 0 or below is off (vLLM's -1, llama-server's 0) */
  if ((g = get_int(o, "top_k", -2147483648.0, 2147483647.0, &i, err)) < 0) return -1;
  if (g) r->top_k = i > 0 ? (uint32_t)i : 0;
  if ((g = get_number(o, "repeat_penalty", WGLLM_SAMPLING_SCALE_MIN, 100, 0, &x, err)) < 0) return -1;
  if (g) r->repeat_penalty = (float)x;
  if ((g = get_int(o, "repeat_last_n", -1, 256, &i, err)) < 0) return -1;
  if (g) r->repeat_last_n = i < 0 ? 256 : (uint32_t)i;
  /* OpenAI's additive penalties, over repeat_last_n tokens as llama-server applies them */
  if ((g = get_number(o, "presence_penalty", -2, 2, 0, &x, err)) < 0) return -1;
  if (g) r->presence_penalty = (float)x;
  if ((g = get_number(o, "frequency_penalty", -2, 2, 0, &x, err)) < 0) return -1;
  if (g) r->frequency_penalty = (float)x;
  /* OpenAI's seed is any 64-bit integer: the low 32 bits seed the sampler; -1 (llama.cpp's) is a random seed */
  if ((g = get_int(o, "seed", -9223372036854775808.0, 9223372036854775807.0, &i, err)) < 0) return -1;
  if (g && i != -1) {
    r->seed = (uint32_t)(unsigned long long)i;
    r->seed_given = 1;
  }
  /* max_completion_tokens (chat's current name) wins over max_tokens (its older one, and completions') */
  const char *names[] = {"max_completion_tokens", "max_tokens"};
  for (int k = r->kind == SERVE_KIND_CHAT ? 0 : 1; k < 2; k++) {
    if ((g = get_int(o, names[k], -1e18, 1e18, &i, err)) < 0) return -1;
    if (!g) continue;
    if (i < 1) return bad(err, names[k], "'%s' is %lld; it must be at least 1", names[k], i);
    /* more than the server's limit is clamped to it (the answer then ends with finish_reason "length", as one
       that fills the context does) */
    r->max_tokens = i > lim->max_tokens ? lim->max_tokens : (uint32_t)i;
    r->max_tokens_given = 1;
    break;
  }
  if ((g = get_int(o, "n", 1, SERVE_MAX_CHOICES, &i, err)) < 0) return -1;
  r->n_choices = g ? (uint32_t)i : 1;
  if (get_bool(o, "ignore_eos", &r->ignore_eos, err)) return -1;
  if (r->kind == SERVE_KIND_COMPLETION && get_bool(o, "echo", &r->echo, err)) return -1;
  const cJSON *suffix = r->kind == SERVE_KIND_COMPLETION ? field(o, "suffix") : NULL;
  if (suffix && !cJSON_IsNull(suffix) && !cJSON_IsString(suffix))
    return bad(err, "suffix", "'suffix' must be a string");
  if (cJSON_IsString(suffix) && suffix->valuestring[0] && !(r->suffix = take_string(suffix, &r->suffix_len)))
    return oom(err);
  if ((g = get_int(o, "speculative.n_max", 0, WGLLM_SPEC_MAX, &i, err)) < 0) return -1;
  if (g) r->spec_n_max = (int)i;
  if (get_bool(o, "speculative.lookup", &r->spec_lookup, err)) return -1;
  if (get_bool(o, "speculative.draft", &r->spec_draft, err)) return -1;
  if (get_bool(o, "stream", &r->stream, err)) return -1;
  const cJSON *so = field(o, "stream_options");
  if (so) {
    if (!cJSON_IsObject(so)) return bad(err, "stream_options", "'stream_options' must be an object");
    if (get_bool(so, "include_usage", &r->include_usage, err)) {
      snprintf(err->param, sizeof err->param, "stream_options.include_usage");
      return -1;
    }
  }
  return get_stop(o, lim, r, err);
}

/* A constraint's text: a string as given (GBNF), a schema object printed */
static int set_constraint(serve_request *r, serve_constrain c, const char *param, const cJSON *v, serve_error *err) {
  if (r->constrain)
    return bad(err, param, "'%s' and '%s' both constrain the output; give one", r->constraint_param, param);
  r->constrain = c;
  r->constraint_param = param;
  if (!v) return 0;
  if (c == SERVE_CONSTRAIN_GBNF) {
    if (!cJSON_IsString(v)) return bad(err, param, "'%s' must be a string (a GBNF grammar)", param);
    if (!(r->constraint = take_string(v, &r->constraint_len))) return oom(err);
    return 0;
  }
  if (cJSON_IsString(v)) { /* vLLM's guided_json may be the schema's text */
    cJSON *parsed = cJSON_Parse(v->valuestring);
    int ok = cJSON_IsObject(parsed);
    cJSON_Delete(parsed);
    if (!ok) return bad(err, param, "'%s' is a string that is not a JSON schema object", param);
    if (!(r->constraint = take_string(v, &r->constraint_len))) return oom(err);
    return 0;
  }
  if (!cJSON_IsObject(v)) return bad(err, param, "'%s' must be a JSON schema (an object)", param);
  if (!(r->constraint = cJSON_PrintUnformatted(v))) return oom(err);
  r->constraint_len = strlen(r->constraint);
  return 0;
}

/* response_format, llama-server's grammar and json_schema, vLLM's guided_json; logit_bias */
static int output_fields(const cJSON *o, serve_request *r, serve_error *err) {
  const cJSON *f = field(o, "response_format");
  if (f) {
    const cJSON *t = cJSON_IsObject(f) ? field(f, "type") : NULL;
    if (!t || !cJSON_IsString(t))
      return bad(err, "response_format", "'response_format' must be an object with a 'type'");
    if (!strcmp(t->valuestring, "json_object")) {
      const cJSON *schema = field(f, "schema"); /* llama-server's: a schema beside json_object */
      if (set_constraint(r, schema ? SERVE_CONSTRAIN_JSON_SCHEMA : SERVE_CONSTRAIN_JSON_OBJECT, "response_format",
                         schema, err))
        return -1;
    } else if (!strcmp(t->valuestring, "json_schema")) {
      const cJSON *js = field(f, "json_schema");
      const cJSON *schema = js && cJSON_IsObject(js) ? field(js, "schema") : NULL;
      if (!schema)
        return bad(err, "response_format",
                   "'response_format' json_schema needs {\"json_schema\": {\"schema\": {...}}}");
      if (set_constraint(r, SERVE_CONSTRAIN_JSON_SCHEMA, "response_format", schema, err)) return -1;
    } else if (strcmp(t->valuestring, "text")) {
      return bad(err, "response_format",
                 "'response_format' type is '%.40s'; expected \"text\", \"json_object\" or \"json_schema\"",
                 t->valuestring);
    }
  }
  static const struct {
    const char *name;
    serve_constrain c;
  } fields[] = {{"grammar", SERVE_CONSTRAIN_GBNF},
                {"json_schema", SERVE_CONSTRAIN_JSON_SCHEMA},
                {"guided_json", SERVE_CONSTRAIN_JSON_SCHEMA}};
  for (size_t i = 0; i < sizeof fields / sizeof fields[0]; i++) {
    f = field(o, fields[i].name);
    if (f && !(cJSON_IsString(f) && !f->valuestring[0]) && set_constraint(r, fields[i].c, fields[i].name, f, err))
      return -1;
  }
  f = field(o, "logprobs");
  long long top = 0;
  if (f && r->kind == SERVE_KIND_CHAT) { /* true / false, and top_logprobs 0..20 */
    if (!cJSON_IsBool(f)) return bad(err, "logprobs", "'logprobs' must be true or false");
    r->logprobs = cJSON_IsTrue(f);
  } else if (f) { /* completions: an integer 0..5, the alternatives a token */
    if (get_int(o, "logprobs", 0, 5, &top, err) < 0) return -1;
    r->logprobs = 1;
    r->top_logprobs = (uint32_t)top;
  }
  if (r->kind == SERVE_KIND_CHAT) {
    int g = get_int(o, "top_logprobs", 0, 20, &top, err);
    if (g < 0) return -1;
    if (g && top && !r->logprobs) return bad(err, "top_logprobs", "'top_logprobs' needs 'logprobs': true");
    if (g) r->top_logprobs = (uint32_t)top;
  }
  f = field(o, "logit_bias");
  if (f) {
    if (!cJSON_IsObject(f)) return bad(err, "logit_bias", "'logit_bias' must be an object of token ids to biases");
    size_t n = (size_t)cJSON_GetArraySize(f);
    if (n > SERVE_MAX_LOGIT_BIAS)
      return bad(err, "logit_bias", "'logit_bias' has %zu tokens; at most %d", n, SERVE_MAX_LOGIT_BIAS);
    if (n) {
      r->bias_ids = malloc(n * sizeof *r->bias_ids);
      r->bias = malloc(n * sizeof *r->bias);
      if (!r->bias_ids || !r->bias) return oom(err);
    }
    const cJSON *e;
    cJSON_ArrayForEach(e, f) {
      char *end = NULL;
      long id = strtol(e->string, &end, 10);
      if (!e->string[0] || *end || id < 0 || id > 2147483647L)
        return bad(err, "logit_bias", "'logit_bias' key '%.40s' is not a token id", e->string);
      if (!cJSON_IsNumber(e) || !isfinite(e->valuedouble) || e->valuedouble < -100 || e->valuedouble > 100)
        return bad(err, "logit_bias", "'logit_bias' of token %ld must be a number from -100 to 100", id);
      for (size_t k = 0; k < r->n_bias; k++)
        if (r->bias_ids[k] == (int32_t)id) return bad(err, "logit_bias", "'logit_bias' names token %ld twice", id);
      r->bias_ids[r->n_bias] = (int32_t)id;
      r->bias[r->n_bias++] = (float)e->valuedouble;
    }
  }
  return 0;
}

int serve_parse_request(serve_kind kind, const char *body, size_t len, const serve_limits *lim, serve_request *out,
                        serve_error *err) {
  memset(out, 0, sizeof *out);
  out->kind = kind;
  out->temperature = 0.8f;
  out->top_p = 0.95f;
  out->top_k = 40;
  out->min_p = 0.05f;
  out->repeat_penalty = 1.0f;
  out->repeat_last_n = 64;
  out->spec_n_max = out->spec_lookup = out->spec_draft = -1;
  out->max_tokens = kind == SERVE_KIND_CHAT ? lim->max_tokens : (lim->max_tokens < 16 ? lim->max_tokens : 16);
  cJSON *o = parse_object(body, len, err);
  if (!o) return -1;
  int rc = 0;
  const cJSON *model = field(o, "model");
  if (model && !cJSON_IsString(model)) rc = bad(err, "model", "'model' must be a string");
  if (!rc && !(out->model = dup_n(model ? model->valuestring : "", model ? strlen(model->valuestring) : 0)))
    rc = oom(err);
  if (!rc && kind == SERVE_KIND_EMBEDDING) { /* POST /v1/embeddings: its own fields (serve_embed.c) */
    rc = serve_embed_fields(o, lim, out, err);
    cJSON_Delete(o);
    if (rc) serve_request_free(out);
    return rc;
  }
  if (!rc) rc = refuse_unsupported(o, kind, err);
  if (!rc) rc = kind == SERVE_KIND_CHAT ? chat_fields(o, lim, out, err) : completion_prompt(o, lim, out, err);
  if (!rc) rc = sampling_fields(o, lim, out, err);
  if (!rc) rc = output_fields(o, out, err);
  cJSON_Delete(o);
  if (rc) serve_request_free(out);
  return rc;
}

void serve_request_fit(serve_request *r, const serve_limits *lim) {
  if (!r->max_tokens_given && r->kind == SERVE_KIND_CHAT) r->max_tokens = lim->max_tokens;
  if (r->max_tokens > lim->max_tokens) r->max_tokens = lim->max_tokens;
}

void serve_request_free(serve_request *r) {
  serve_embed_free(r->embed);
  r->embed = NULL;
  free(r->model);
  free(r->chat_json);
  free(r->prompt);
  free(r->suffix);
  free(r->prompt_ids);
  for (size_t i = 0; i < r->n_stop; i++)
    free(r->stop[i]);
  free(r->stop);
  free(r->stop_len);
  free(r->constraint);
  free(r->tools_json);
  for (size_t i = 0; i < r->n_tools; i++)
    free(r->tool_names[i]);
  free(r->tool_names);
  free(r->tool_name);
  free(r->bias_ids);
  free(r->bias);
  serve_kind k = r->kind;
  memset(r, 0, sizeof *r);
  r->kind = k;
}

/* the optional "model" of /tokenize and /detokenize (a name of /v1/models: shorter than SERVE_MODEL_NAME_MAX) */
static int get_model(const cJSON *o, char model[SERVE_MODEL_NAME_MAX], serve_error *err) {
  const cJSON *m = cJSON_GetObjectItemCaseSensitive(o, "model");
  model[0] = 0;
  if (!m || cJSON_IsNull(m)) return 0;
  if (!cJSON_IsString(m)) return bad(err, "model", "'model' must be a string");
  if (strlen(m->valuestring) >= SERVE_MODEL_NAME_MAX)
    return serve_fail(err, 404, "invalid_request_error", "model", "model_not_found",
                      "the model '%.64s...' does not exist: no model served has a name that long (GET /v1/models)",
                      m->valuestring);
  snprintf(model, SERVE_MODEL_NAME_MAX, "%s", m->valuestring);
  return 0;
}

int serve_parse_tokenize(const char *body, size_t len, serve_tokenize_request *out, serve_error *err) {
  memset(out, 0, sizeof *out);
  out->parse_special = 1;
  cJSON *o = parse_object(body, len, err);
  if (!o) return -1;
  int rc = 0;
  const cJSON *c = cJSON_GetObjectItemCaseSensitive(o, "content");
  if (!cJSON_IsString(c)) rc = bad(err, "content", "'content' must be a string");
  if (!rc) rc = get_bool(o, "add_special", &out->add_special, err);
  if (!rc) rc = get_bool(o, "parse_special", &out->parse_special, err);
  if (!rc) rc = get_bool(o, "with_pieces", &out->with_pieces, err);
  if (!rc) rc = get_model(o, out->model, err);
  if (!rc) {
    if (!(out->content = take_string(c, &out->content_len))) rc = oom(err);
  }
  cJSON_Delete(o);
  return rc;
}

int serve_parse_detokenize(const char *body, size_t len, size_t max_ids, int32_t **ids, size_t *n,
                           char model[SERVE_MODEL_NAME_MAX], serve_error *err) {
  *ids = NULL;
  *n = 0;
  model[0] = 0;
  cJSON *o = parse_object(body, len, err);
  if (!o) return -1;
  int rc = get_model(o, model, err);
  const cJSON *t = cJSON_GetObjectItemCaseSensitive(o, "tokens");
  size_t cnt = cJSON_IsArray(t) ? (size_t)cJSON_GetArraySize(t) : 0;
  if (rc)
    ;
  else if (!cJSON_IsArray(t))
    rc = bad(err, "tokens", "'tokens' must be an array of token ids");
  else if (cnt > max_ids)
    rc = bad(err, "tokens", "'tokens' has %zu ids; at most %zu are accepted", cnt, max_ids);
  else if (cnt && !(*ids = malloc(cnt * sizeof **ids)))
    rc = oom(err);
  for (const cJSON *it = rc ? NULL : t->child; it && !rc; it = it->next) {
    if (!cJSON_IsNumber(it) || !isfinite(it->valuedouble) || floor(it->valuedouble) != it->valuedouble ||
        it->valuedouble < 0 || it->valuedouble > 2147483647.0)
      rc = bad(err, "tokens", "'tokens' must hold whole numbers from 0 (token ids)");
    else
      (*ids)[(*n)++] = (int32_t)it->valuedouble;
  }
  cJSON_Delete(o);
  if (rc) {
    free(*ids);
    *ids = NULL;
    *n = 0;
  }
  return rc;
}

/* ---------- answers ---------- */
char *serve_print_json(cJSON *j) {
  char *s = j ? cJSON_PrintUnformatted(j) : NULL;
  cJSON_Delete(j);
  if (!s) return NULL;
  size_t n = strlen(s), nuls = 0, k = 0;
  for (size_t i = 0; i < n; i++)
    nuls += (unsigned char)s[i] == SERVE_NUL;
  if (!nuls) return s;
  char *o = malloc(n + 5 * nuls + 1);
  for (size_t i = 0; o && i < n; i++)
    if ((unsigned char)s[i] == SERVE_NUL) {
      memcpy(o + k, "\\u0000", 6);
      k += 6;
    } else
      o[k++] = s[i];
  if (o) o[k] = 0;
  cJSON_free(s);
  return o;
}
static char *print_and_free(cJSON *j) { return serve_print_json(j); }

cJSON *serve_string_n(const char *s, size_t n) {
  char *d = malloc(n + 1);
  if (!d) return NULL;
  for (size_t i = 0; i < n; i++)
    d[i] = s[i] ? s[i] : (char)SERVE_NUL;
  d[n] = 0;
  cJSON *j = cJSON_CreateString(d);
  free(d);
  return j;
}
static cJSON *string_n(const char *s, size_t n) { return serve_string_n(s, n); }

char *serve_error_json(const serve_error *e) {
  cJSON *o = cJSON_CreateObject(), *err = cJSON_AddObjectToObject(o, "error");
  if (!err) {
    cJSON_Delete(o);
    return NULL;
  }
  cJSON_AddStringToObject(err, "message", e->message);
  cJSON_AddStringToObject(err, "type", e->type ? e->type : "invalid_request_error");
  if (e->param[0])
    cJSON_AddStringToObject(err, "param", e->param);
  else
    cJSON_AddNullToObject(err, "param");
  if (e->code[0])
    cJSON_AddStringToObject(err, "code", e->code);
  else
    cJSON_AddNullToObject(err, "code");
  return print_and_free(o);
}

static cJSON *usage_json(const serve_usage *u) {
  cJSON *o = cJSON_CreateObject();
  cJSON_AddNumberToObject(o, "prompt_tokens", u->prompt_tokens);
  cJSON_AddNumberToObject(o, "completion_tokens", u->completion_tokens);
  cJSON_AddNumberToObject(o, "total_tokens", (double)u->prompt_tokens + u->completion_tokens);
  cJSON *d = cJSON_AddObjectToObject(o, "prompt_tokens_details");
  if (d) cJSON_AddNumberToObject(d, "cached_tokens", u->cached_tokens);
  if (d && u->dropped_messages) cJSON_AddNumberToObject(d, "dropped_messages", u->dropped_messages);
  if (u->accepted_drafts + u->rejected_drafts) {
    cJSON *c = cJSON_AddObjectToObject(o, "completion_tokens_details");
    if (c) cJSON_AddNumberToObject(c, "accepted_prediction_tokens", u->accepted_drafts);
    if (c) cJSON_AddNumberToObject(c, "rejected_prediction_tokens", u->rejected_drafts);
  }
  return o;
}

static cJSON *timings_json(const serve_usage *u) {
  cJSON *o = cJSON_CreateObject();
  uint32_t pn = u->prompt_tokens > u->cached_tokens ? u->prompt_tokens - u->cached_tokens : 0;
  cJSON_AddNumberToObject(o, "prompt_n", pn);
  cJSON_AddNumberToObject(o, "prompt_ms", u->prompt_ms);
  cJSON_AddNumberToObject(o, "prompt_per_token_ms", pn ? u->prompt_ms / pn : 0.0);
  cJSON_AddNumberToObject(o, "prompt_per_second", u->prompt_ms > 0 ? pn * 1e3 / u->prompt_ms : 0.0);
  cJSON_AddNumberToObject(o, "predicted_n", u->completion_tokens);
  cJSON_AddNumberToObject(o, "predicted_ms", u->predicted_ms);
  cJSON_AddNumberToObject(o, "predicted_per_token_ms",
                          u->completion_tokens ? u->predicted_ms / u->completion_tokens : 0.0);
  cJSON_AddNumberToObject(o, "predicted_per_second",
                          u->predicted_ms > 0 ? u->completion_tokens * 1e3 / u->predicted_ms : 0.0);
  cJSON_AddNumberToObject(o, "cache_n", u->cached_tokens);
  return o;
}

static cJSON *answer_head(const serve_answer *a, const char *object) {
  cJSON *o = cJSON_CreateObject();
  cJSON_AddStringToObject(o, "id", a->id);
  cJSON_AddStringToObject(o, "object", object);
  cJSON_AddNumberToObject(o, "created", (double)a->created);
  cJSON_AddStringToObject(o, "model", a->model);
  cJSON_AddStringToObject(o, "system_fingerprint", "wgllm");
  return o;
}

static void add_finish(cJSON *choice, const char *finish_reason) {
  if (finish_reason)
    cJSON_AddStringToObject(choice, "finish_reason", finish_reason);
  else
    cJSON_AddNullToObject(choice, "finish_reason");
}

char *serve_completion_json(const serve_answer *a, const char *text, size_t len, const char *finish_reason,
                            const serve_usage *u, const serve_extras *x) {
  int chat = a->kind == SERVE_KIND_CHAT;
  cJSON *o = answer_head(a, chat ? "chat.completion" : "text_completion");
  cJSON *choices = cJSON_AddArrayToObject(o, "choices"), *c = cJSON_CreateObject();
  cJSON_AddItemToArray(choices, c);
  cJSON_AddNumberToObject(c, "index", 0);
  if (chat) {
    cJSON *m = cJSON_AddObjectToObject(c, "message");
    cJSON_AddStringToObject(m, "role", "assistant");
    if (!len && x && x->tool_calls)
      cJSON_AddNullToObject(m, "content");
    else
      cJSON_AddItemToObject(m, "content", string_n(text, len));
    if (x && x->reasoning) cJSON_AddStringToObject(m, "reasoning_content", x->reasoning);
    if (x && x->tool_calls) cJSON_AddItemToObject(m, "tool_calls", cJSON_Duplicate(x->tool_calls, 1));
    cJSON_AddNullToObject(m, "refusal");
  } else {
    cJSON_AddItemToObject(c, "text", string_n(text, len));
  }
  if (x && x->logprobs)
    cJSON_AddItemToObject(c, "logprobs", cJSON_Duplicate(x->logprobs, 1));
  else
    cJSON_AddNullToObject(c, "logprobs");
  add_finish(c, finish_reason);
  cJSON_AddItemToObject(o, "usage", usage_json(u));
  cJSON_AddItemToObject(o, "timings", timings_json(u));
  return print_and_free(o);
}

char *serve_chunk_json(const serve_answer *a, const char *text, size_t len, int with_role, const char *finish_reason,
                       const serve_usage *usage, int with_usage_null, const serve_usage *timings,
                       const serve_extras *x) {
  int chat = a->kind == SERVE_KIND_CHAT;
  cJSON *o = answer_head(a, chat ? "chat.completion.chunk" : "text_completion");
  cJSON *choices = cJSON_AddArrayToObject(o, "choices");
  if (!usage) {
    cJSON *c = cJSON_CreateObject();
    cJSON_AddItemToArray(choices, c);
    cJSON_AddNumberToObject(c, "index", x ? x->index : 0);
    if (chat) {
      cJSON *d = cJSON_AddObjectToObject(c, "delta");
      if (with_role) cJSON_AddStringToObject(d, "role", "assistant");
      if (text || with_role) cJSON_AddItemToObject(d, "content", string_n(text, len));
      if (x && x->reasoning) cJSON_AddStringToObject(d, "reasoning_content", x->reasoning);
      if (x && x->tool_calls) cJSON_AddItemToObject(d, "tool_calls", cJSON_Duplicate(x->tool_calls, 1));
    } else {
      cJSON_AddItemToObject(c, "text", string_n(text, len));
    }
    if (x && x->logprobs)
      cJSON_AddItemToObject(c, "logprobs", cJSON_Duplicate(x->logprobs, 1));
    else
      cJSON_AddNullToObject(c, "logprobs");
    add_finish(c, finish_reason);
    if (with_usage_null) cJSON_AddNullToObject(o, "usage");
  } else {
    cJSON_AddItemToObject(o, "usage", usage_json(usage));
  }
  if (timings) cJSON_AddItemToObject(o, "timings", timings_json(timings));
  return print_and_free(o);
}
