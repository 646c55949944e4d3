/* Fuzz harness: a chat template and a conversation from untrusted bytes, through the chat renderer a model holds
   (chat_renderer_create parses the template with the Jinja subset; chat_renderer_apply renders it, or runs a
   named template) under tight jinja_limits, so that no input can take long or hold much memory.
   Input: byte 0 = flags, then the template text up to the first NUL byte, then (optionally) a JSON request:
     flags bit 0      add_generation_prompt
     flags bits 1-3   1..4: the named template llama3 / chatml / gemma / llama2 overrides the text; else the text
     flags bits 4-5   which built-in conversation to use when the JSON gives no "messages" list
     flags bit 6      pass bos_token / eos_token ("<s>", "</s>") as template arguments
   The JSON part: {"messages": [...], "tools": [...], "kwargs": {...}} (each optional), or a bare list of messages.
   Checks (with the limits of fuzz_limits): a failure has a non-empty message and no output; a render has output within
   max_output, is the same when rendered again (nothing depends on earlier state), and is valid UTF-8 whenever the
   template and the JSON are (strings are indexed by code point, as Python's). */
#include "chat.h"
#include "fuzz_util.h"
#include <stdlib.h>
#include <string.h>

/* the bounds of every render here: small enough that one input stays far inside 1 s and 100 MB; under
   replay_main.c --bound (FUZZ_BOUND set) the defaults, which are what the CLI and the API render with, and one
   render an input */
static jinja_limits fuzz_limits(void) {
  jinja_limits l = jinja_default_limits();
  l.now = 1767225600; /* 2026-01-01, so that strftime_now gives the same text each time */
  if (getenv("FUZZ_BOUND")) return l;
  l.max_output = 64u << 10;
  l.max_memory = 8u << 20;
  l.max_iterations = 20000;
  l.max_steps = 400000;
  l.max_depth = 16;
  return l;
}

static const char *const conversations[4] = {
    "[{\"role\":\"system\",\"content\":\"Be brief.\"},{\"role\":\"user\",\"content\":\"Hi\"},"
    "{\"role\":\"assistant\",\"content\":\"Hello.\"},{\"role\":\"user\",\"content\":\"And now?\"}]",
    "[{\"role\":\"user\",\"content\":[{\"type\":\"text\",\"text\":\"Weather in Paris?\"}]},"
    "{\"role\":\"assistant\",\"content\":null,\"tool_calls\":[{\"type\":\"function\",\"function\":{\"name\":"
    "\"get_weather\",\"arguments\":{\"city\":\"Paris\"}}}]},{\"role\":\"tool\",\"name\":\"get_weather\","
    "\"content\":\"22 C\"},{\"role\":\"assistant\",\"reasoning_content\":\"easy\",\"content\":\"22 C.\"}]",
    "[]",
    "[{\"role\":\"user\",\"content\":\"caf\xc3\xa9 \xe6\x97\xa5\xe6\x9c\xac \xf0\x9f\x98\x80 <|im_end|> {{ x }}\"}]",
};
static const char *const named[5] = {NULL, "llama3", "chatml", "gemma", "llama2"};

/* renders once; returns the status, *out the text (or NULL) */
static wgllm_status render(const chat_renderer *r, const chat_request *q, char **out, llm_err *err) {
  jinja_limits lim = fuzz_limits();
  llm_err_clear(err);
  wgllm_status s = chat_renderer_apply(r, q, &lim, out, err);
  if (s != WGLLM_OK) {
    FUZZ_CHECK(*out == NULL, "chat_renderer_apply failed (status %d) but left output", s);
    FUZZ_CHECK(err->msg[0], "chat_renderer_apply failed (status %d) without a message", s);
    FUZZ_CHECK(s == WGLLM_ERR_INVALID_ARG || s == WGLLM_ERR_UNSUPPORTED || s == WGLLM_ERR_FORMAT ||
                   s == WGLLM_ERR_OUT_OF_MEMORY,
               "unexpected status %d: %s", s, err->msg);
    fuzz_note("chat_renderer_apply: %s", err->msg);
  } else {
    FUZZ_CHECK(*out != NULL, "chat_renderer_apply succeeded without output");
  }
  return s;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (size < 1) return 0;
  uint8_t flags = data[0];
  const char *text = (const char *)data + 1;
  size_t rest = size - 1;
  const char *nul = memchr(text, 0, rest);
  size_t tlen = nul ? (size_t)(nul - text) : rest;
  const char *json = nul ? nul + 1 : NULL;
  size_t jlen = nul ? rest - tlen - 1 : 0;
  size_t bad;
  int inputs_utf8 = fuzz_utf8_valid(text, tlen, &bad) && (!json || fuzz_utf8_valid(json, jlen, &bad));

  char *tmpl = malloc(tlen + 1); /* the renderer reads a NUL-terminated text */
  FUZZ_CHECK(tmpl != NULL, "out of memory");
  memcpy(tmpl, text, tlen);
  tmpl[tlen] = 0;
  unsigned pick = (flags >> 1) & 7;
  const char *forced = pick >= 1 && pick <= 4 ? named[pick] : NULL;
  chat_renderer *r = NULL;
  llm_err err = {0};
  wgllm_status s = chat_renderer_create(forced, tmpl, NULL, &r, &err);
  free(tmpl);
  if (s != WGLLM_OK) {
    fuzz_note("chat_renderer_create: %s", err.msg);
    FUZZ_CHECK(r == NULL && err.msg[0], "chat_renderer_create failed (status %d) without a message or left a renderer",
               s);
    FUZZ_CHECK(s == WGLLM_ERR_FORMAT || s == WGLLM_ERR_UNSUPPORTED || s == WGLLM_ERR_INVALID_ARG ||
                   s == WGLLM_ERR_OUT_OF_MEMORY,
               "unexpected status %d: %s", s, err.msg);
    return 0;
  }
  FUZZ_CHECK(r != NULL, "chat_renderer_create succeeded without a renderer");

  cJSON *req = json ? cJSON_ParseWithLength(json, jlen) : NULL;
  if (json && !req) fuzz_note("the request is not JSON");
  const cJSON *msgs = cJSON_IsArray(req) ? req : cJSON_GetObjectItemCaseSensitive(req, "messages");
  cJSON *fixed = NULL;
  if (!cJSON_IsArray(msgs)) msgs = fixed = cJSON_Parse(conversations[(flags >> 4) & 3]);
  FUZZ_CHECK(msgs != NULL, "built-in conversation %d is not JSON", (flags >> 4) & 3);
  cJSON *kwargs = NULL;
  if (cJSON_IsObject(req)) {
    const cJSON *k = cJSON_GetObjectItemCaseSensitive(req, "kwargs");
    if (k) kwargs = cJSON_Duplicate(k, 1);
  }
  if (flags & 0x40) {
    if (!kwargs) kwargs = cJSON_CreateObject();
    if (cJSON_IsObject(kwargs) && !cJSON_GetObjectItemCaseSensitive(kwargs, "bos_token")) {
      cJSON_AddStringToObject(kwargs, "bos_token", "<s>");
      cJSON_AddStringToObject(kwargs, "eos_token", "</s>");
    }
  }
  chat_request q = {.messages = msgs,
                    .tools = cJSON_IsObject(req) ? cJSON_GetObjectItemCaseSensitive(req, "tools") : NULL,
                    .kwargs = kwargs,
                    .add_generation_prompt = flags & 1};

  char *out = NULL, *again = NULL;
  s = render(r, &q, &out, &err);
  if (getenv("FUZZ_BOUND")) { /* replay_main.c --bound: one render, the library's work alone */
  } else if (s == WGLLM_OK) {
    jinja_limits lim = fuzz_limits();
    size_t n = strlen(out);
    FUZZ_CHECK(n <= lim.max_output, "output of %zu bytes past max_output %zu", n, lim.max_output);
    FUZZ_CHECK(!inputs_utf8 || fuzz_utf8_valid(out, n, &bad),
               "UTF-8 template and request gave invalid UTF-8 at "
               "byte %zu of the output",
               bad);
    llm_err err2 = {0};
    wgllm_status s2 = render(r, &q, &again, &err2);
    FUZZ_CHECK(s2 == WGLLM_OK && strcmp(out, again) == 0, "a second render differs (status %d: %s)", s2,
               s2 ? err2.msg : "other text");
  } else {
    /* the same failure again, with the same message */
    llm_err err2 = {0};
    wgllm_status s2 = render(r, &q, &again, &err2);
    FUZZ_CHECK(s2 == s && strcmp(err.msg, err2.msg) == 0, "a second render fails differently: %d '%s', then %d '%s'", s,
               err.msg, s2, err2.msg);
  }
  free(out);
  free(again);
  cJSON_Delete(kwargs);
  cJSON_Delete(fixed);
  cJSON_Delete(req);
  chat_renderer_free(r);
  return 0;
}
