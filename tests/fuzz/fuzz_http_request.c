/* Fuzz harness: the request bodies `wgllm serve` takes from the network, through its pure parsers
   (tools/serve/serve_openai.c, serve_embed.c). The first byte picks the endpoint (chat completions, completions,
   tokenize, detokenize, embeddings), the rest is the body. An accepted request must hold what the scheduler relies on:
   max_tokens within [1, the limit], sampling values in their ranges, at most the limit of non-empty stop strings (NUL
   bytes kept: their lengths carried), a completion prompt as valid UTF-8 text or ids from 0 (never both), a chat JSON
   that parses back with a messages array; its answers (the completion object, a stream chunk) must be JSON that parses
   back. A refused one must come with a 4xx/5xx status and a message, and serve_error_json must give an error object. */
#include "fuzz_util.h"
#include "serve_embed.h"
#include "serve_openai.h"
#include "wgllm.h"
#include <cjson/cJSON.h>
#include <stdlib.h>
#include <string.h>

static void check_json(char *text, const char *what) {
  FUZZ_CHECK(text != NULL, "%s: no JSON written", what);
  cJSON *j = cJSON_Parse(text);
  FUZZ_CHECK(j != NULL, "%s does not parse back: %.200s", what, text);
  cJSON_Delete(j);
  cJSON_free(text);
}

static void check_refusal(const serve_error *e) {
  FUZZ_CHECK(e->status >= 400 && e->status < 600, "status %d", e->status);
  FUZZ_CHECK(e->message[0] != 0, "a refusal without a message");
  char *j = serve_error_json(e);
  FUZZ_CHECK(j && strstr(j, "\"error\":{\"message\":"), "error JSON %s", j ? j : "(none)");
  check_json(j, "the error object");
}

static void check_request(const serve_request *r, const serve_limits *lim) {
  FUZZ_CHECK(r->max_tokens >= 1 && r->max_tokens <= lim->max_tokens, "max_tokens %u", r->max_tokens);
  FUZZ_CHECK(r->temperature == 0 || (r->temperature >= WGLLM_SAMPLING_SCALE_MIN && r->temperature <= 2),
             "temperature %g", r->temperature);
  FUZZ_CHECK(r->top_p >= 0 && r->top_p <= 1 && r->min_p >= 0 && r->min_p <= 1, "top_p %g min_p %g", r->top_p, r->min_p);
  FUZZ_CHECK(r->repeat_penalty >= WGLLM_SAMPLING_SCALE_MIN && r->repeat_penalty <= 100 && r->repeat_last_n <= 256,
             "repeat %g / %u", r->repeat_penalty, r->repeat_last_n);
  FUZZ_CHECK(r->presence_penalty >= -2 && r->presence_penalty <= 2 && r->frequency_penalty >= -2 &&
                 r->frequency_penalty <= 2,
             "presence %g frequency %g", r->presence_penalty, r->frequency_penalty);
  FUZZ_CHECK(r->n_stop <= lim->max_stop, "%zu stop strings", r->n_stop);
  for (size_t i = 0; i < r->n_stop; i++) {
    size_t n = r->stop_len[i]; /* NUL bytes kept: stop[i] is stop_len[i] bytes */
    FUZZ_CHECK(n >= 1 && n <= lim->max_stop_bytes && strlen(r->stop[i]) <= n, "stop string %zu of %zu bytes", i, n);
  }
  FUZZ_CHECK(r->model != NULL, "no model string");
  if (r->kind == SERVE_KIND_CHAT) {
    FUZZ_CHECK(r->chat_json && strlen(r->chat_json) == r->chat_json_len, "chat JSON length");
    cJSON *j = cJSON_Parse(r->chat_json);
    FUZZ_CHECK(j && cJSON_IsArray(cJSON_GetObjectItemCaseSensitive(j, "messages")), "chat JSON %.200s", r->chat_json);
    FUZZ_CHECK(cJSON_GetArraySize(cJSON_GetObjectItemCaseSensitive(j, "messages")) > 0, "no messages");
    cJSON_Delete(j);
  } else {
    FUZZ_CHECK((r->prompt != NULL) != (r->prompt_ids != NULL), "prompt text %p, ids %p", (void *)r->prompt,
               (void *)r->prompt_ids);
    if (r->prompt) {
      FUZZ_CHECK(serve_utf8_invalid_at(r->prompt, r->prompt_len) < 0, "the prompt text is not valid UTF-8");
    } else {
      FUZZ_CHECK(r->n_prompt_ids >= 1 && r->n_prompt_ids <= lim->max_prompt_ids, "%zu prompt ids", r->n_prompt_ids);
      for (size_t i = 0; i < r->n_prompt_ids; i++)
        FUZZ_CHECK(r->prompt_ids[i] >= 0, "prompt id %zu is %d", i, r->prompt_ids[i]);
    }
  }
  /* the answers this request would get, with its own text as the generated text */
  const char *text = r->prompt ? r->prompt : r->chat_json;
  size_t len = r->prompt ? r->prompt_len : r->chat_json_len;
  serve_answer a = {r->kind, "cmpl-fuzz", 1, r->model};
  serve_usage u = {3, r->max_tokens, 1};
  check_json(serve_completion_json(&a, text, len, "stop", &u, NULL), "the completion");
  check_json(serve_chunk_json(&a, text, len, 1, NULL, NULL, 1, NULL, NULL), "a chunk");
  check_json(serve_chunk_json(&a, NULL, 0, 0, NULL, &u, 0, &u, NULL), "the usage chunk");
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (size < 1) return 0;
  const char *body = (const char *)data + 1;
  size_t len = size - 1;
  serve_limits lim = {.max_tokens = 512, .max_stop = 4, .max_stop_bytes = 256, .max_prompt_ids = 512};
  serve_error e;
  memset(&e, 0, sizeof e);
  switch (data[0] % 5) {
  case 0:
  case 1: {
    serve_request r;
    serve_kind kind = data[0] % 4 == 0 ? SERVE_KIND_CHAT : SERVE_KIND_COMPLETION;
    if (serve_parse_request(kind, body, len, &lim, &r, &e) == 0) {
      check_request(&r, &lim);
      serve_request_free(&r);
    } else {
      fuzz_note("refused: %s", e.message);
      check_refusal(&e);
      FUZZ_CHECK(!r.model && !r.chat_json && !r.prompt && !r.prompt_ids && !r.stop, "a refusal left allocations");
    }
    break;
  }
  case 2: {
    serve_tokenize_request t;
    if (serve_parse_tokenize(body, len, &t, &e) == 0) {
      FUZZ_CHECK(t.content && strlen(t.content) <= t.content_len && !t.content[t.content_len], "content length");
      FUZZ_CHECK(serve_utf8_invalid_at(t.content, t.content_len) < 0, "content is not valid UTF-8");
      FUZZ_CHECK(strlen(t.model) < sizeof t.model, "model");
      free(t.content);
    } else {
      check_refusal(&e);
      free(t.content);
    }
    break;
  }
  case 3: {
    int32_t *ids;
    size_t n;
    char model[SERVE_MODEL_NAME_MAX];
    if (serve_parse_detokenize(body, len, 4096, &ids, &n, model, &e) == 0) {
      FUZZ_CHECK(n <= 4096 && (n == 0 || ids), "%zu ids", n);
      for (size_t i = 0; i < n; i++)
        FUZZ_CHECK(ids[i] >= 0, "id %zu is %d", i, ids[i]);
      free(ids);
    } else {
      check_refusal(&e);
      FUZZ_CHECK(!ids, "a refusal left ids");
    }
    break;
  }
  case 4: { /* POST /v1/embeddings: every input text (valid UTF-8, its length carried) or ids from 0, 1 to 2048 */
    serve_request r;
    if (serve_parse_request(SERVE_KIND_EMBEDDING, body, len, &lim, &r, &e) == 0) {
      const serve_embed *em = r.embed;
      FUZZ_CHECK(r.model && em && em->n >= 1 && em->n <= SERVE_EMBED_MAX_INPUTS, "%zu inputs", em ? em->n : 0);
      for (size_t i = 0; i < em->n; i++) {
        FUZZ_CHECK((em->text[i] != NULL) != (em->ids[i] != NULL), "input %zu: text %p, ids %p", i, (void *)em->text[i],
                   (void *)em->ids[i]);
        if (em->text[i])
          FUZZ_CHECK(serve_utf8_invalid_at(em->text[i], em->text_len[i]) < 0, "input %zu is not valid UTF-8", i);
        for (size_t k = 0; em->ids[i] && k < em->n_ids[i]; k++)
          FUZZ_CHECK(em->ids[i][k] >= 0, "input %zu id %zu is %d", i, k, em->ids[i][k]);
      }
      serve_request_free(&r);
    } else {
      fuzz_note("refused: %s", e.message);
      check_refusal(&e);
      FUZZ_CHECK(!r.model && !r.embed, "a refusal left allocations");
    }
    break;
  }
  }
  return 0;
}
