/* POST /v1/embeddings (serve_embed.h): parse, prepare, run and answer; the scheduler and the handler call in. */
#include "serve_embed.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void serve_embed_free(serve_embed *e) {
  if (!e) return;
  for (size_t i = 0; i < e->n; i++) {
    if (e->text) free(e->text[i]);
    if (e->ids) free(e->ids[i]);
  }
  free(e->text);
  free(e->text_len);
  free(e->ids);
  free(e->n_ids);
  free(e->vec);
  free(e);
}

/* a string input's bytes, "\u0000" (SERVE_NUL as parsed) back to NUL: 0, or -1 */
static int take_text(serve_embed *e, size_t i, const char *s) {
  size_t n = strlen(s);
  if (!(e->text[i] = malloc(n + 1))) return -1;
  for (size_t k = 0; k <= n; k++)
    e->text[i][k] = (unsigned char)s[k] == SERVE_NUL ? 0 : s[k];
  e->text_len[i] = n;
  return 0;
}

/* an array of token ids: 0, or -1 with err filled */
static int take_ids(serve_embed *e, size_t i, const cJSON *arr, const serve_limits *lim, serve_error *err) {
  size_t n = (size_t)cJSON_GetArraySize(arr);
  if (n > lim->max_prompt_ids)
    return serve_fail(err, 400, "invalid_request_error", "input", "context_length_exceeded",
                      "'input' %zu has %zu token ids; at most %zu are accepted (the context)", i, n,
                      lim->max_prompt_ids);
  if (!(e->ids[i] = malloc((n ? n : 1) * sizeof *e->ids[i])))
    return serve_fail(err, 500, "server_error", NULL, NULL, "out of memory");
  const cJSON *it;
  cJSON_ArrayForEach(it, arr) {
    double v = it->valuedouble;
    if (!cJSON_IsNumber(it) || v < 0 || v > 2147483647.0 || v != (double)(int32_t)v)
      return serve_fail(err, 400, "invalid_request_error", "input", NULL,
                        "'input' %zu: token ids must be whole numbers from 0", i);
    e->ids[i][e->n_ids[i]++] = (int32_t)v;
  }
  return 0;
}

int serve_embed_fields(const cJSON *o, const serve_limits *lim, serve_request *r, serve_error *err) {
  r->n_choices = 1;
  const cJSON *in = cJSON_GetObjectItemCaseSensitive(o, "input");
  if (!in) return serve_fail(err, 400, "invalid_request_error", "input", NULL, "'input' is required");
  for (const cJSON *f = o->child; f; f = f->next) /* the fields OpenAI's endpoint has, and nothing else */
    if (strcmp(f->string, "input") && strcmp(f->string, "model") && strcmp(f->string, "encoding_format") &&
        strcmp(f->string, "dimensions") && strcmp(f->string, "user"))
      return serve_fail(err, 400, "invalid_request_error", f->string, NULL,
                        "'%.60s' is not a field of an embeddings request (input, model, encoding_format, dimensions, "
                        "user)",
                        f->string);
  serve_embed *e = calloc(1, sizeof *e);
  if (!e) return serve_fail(err, 500, "server_error", NULL, NULL, "out of memory");
  r->embed = e;
  const cJSON *fmt = cJSON_GetObjectItemCaseSensitive(o, "encoding_format"),
              *dims = cJSON_GetObjectItemCaseSensitive(o, "dimensions");
  if (fmt && !cJSON_IsNull(fmt)) {
    if (!cJSON_IsString(fmt) || (strcmp(fmt->valuestring, "float") && strcmp(fmt->valuestring, "base64")))
      return serve_fail(err, 400, "invalid_request_error", "encoding_format", NULL,
                        "'encoding_format' must be \"float\" or \"base64\"");
    e->base64 = !strcmp(fmt->valuestring, "base64");
  }
  if (dims && !cJSON_IsNull(dims)) {
    if (!cJSON_IsNumber(dims) || dims->valuedouble < 1 || dims->valuedouble > 1048576 ||
        dims->valuedouble != (double)(uint32_t)dims->valuedouble)
      return serve_fail(err, 400, "invalid_request_error", "dimensions", NULL,
                        "'dimensions' must be a whole number from 1");
    e->dims = (uint32_t)dims->valuedouble;
  }
  /* one input (a string, or an array of ids), or an array of inputs */
  if (cJSON_IsArray(in) && !in->child)
    return serve_fail(err, 400, "invalid_request_error", "input", NULL, "'input' is an empty array");
  int one = cJSON_IsString(in) || (cJSON_IsArray(in) && cJSON_IsNumber(in->child));
  if (!one && !cJSON_IsArray(in))
    return serve_fail(err, 400, "invalid_request_error", "input", NULL,
                      "'input' must be a string, an array of strings, an array of token ids or an array of arrays of "
                      "token ids");
  size_t n = one ? 1 : (size_t)cJSON_GetArraySize(in);
  if (n > SERVE_EMBED_MAX_INPUTS)
    return serve_fail(err, 413, "invalid_request_error", "input", "request_too_large",
                      "'input' has %zu inputs; at most %d are accepted", n, SERVE_EMBED_MAX_INPUTS);
  e->text = calloc(n, sizeof *e->text);
  e->text_len = calloc(n, sizeof *e->text_len);
  e->ids = calloc(n, sizeof *e->ids);
  e->n_ids = calloc(n, sizeof *e->n_ids);
  if (!e->text || !e->text_len || !e->ids || !e->n_ids)
    return serve_fail(err, 500, "server_error", NULL, NULL, "out of memory");
  e->n = n;
  const cJSON *it = one ? in : in->child;
  for (size_t i = 0; i < n; i++, it = it->next) {
    int rc;
    if (cJSON_IsString(it))
      rc = take_text(e, i, it->valuestring) ? serve_fail(err, 500, "server_error", NULL, NULL, "out of memory") : 0;
    else if (cJSON_IsArray(it))
      rc = take_ids(e, i, it, lim, err);
    else
      rc = serve_fail(err, 400, "invalid_request_error", "input", NULL,
                      "'input' %zu is neither a string nor an array of token ids", i);
    if (rc) return rc;
  }
  return 0;
}

int serve_embed_prepare(wgllm_model *m, uint32_t context, serve_task *t) {
  serve_embed *e = t->req.embed;
  wgllm_model_info info;
  wgllm_model_get_info(m, &info);
  e->n_embd = info.n_embd;
  if (e->dims && e->dims != info.n_embd)
    return serve_fail(&t->err, 400, "invalid_request_error", "dimensions", NULL,
                      "'dimensions' %u: this model's embeddings have %u (they are not shortened)", e->dims,
                      info.n_embd);
  size_t longest = 0;
  for (size_t i = 0; i < e->n; i++) {
    if (e->text[i]) {
      size_t n = 0;
      wgllm_status st = wgllm_tokenize(m, e->text[i], e->text_len[i], 1, NULL, 0, &n);
      if (!st && !(e->ids[i] = malloc((n ? n : 1) * sizeof *e->ids[i]))) st = WGLLM_ERR_OUT_OF_MEMORY;
      if (!st) st = wgllm_tokenize(m, e->text[i], e->text_len[i], 1, e->ids[i], n, &n);
      if (st)
        return serve_fail(&t->err, st == WGLLM_ERR_OUT_OF_MEMORY ? 500 : 400,
                          st == WGLLM_ERR_OUT_OF_MEMORY ? "server_error" : "invalid_request_error", "input", NULL,
                          "'input' %zu: %s", i, wgllm_model_error(m));
      e->n_ids[i] = n;
    }
    if (!e->n_ids[i])
      return serve_fail(&t->err, 400, "invalid_request_error", "input", NULL, "'input' %zu has no tokens", i);
    if (e->n_ids[i] > context)
      return serve_fail(&t->err, 400, "invalid_request_error", "input", "context_length_exceeded",
                        "'input' %zu has %zu tokens, over the context of %u", i, e->n_ids[i], context);
    for (size_t k = 0; k < e->n_ids[i]; k++)
      if (e->ids[i][k] < 0 || (uint32_t)e->ids[i][k] >= info.n_vocab)
        return serve_fail(&t->err, 400, "invalid_request_error", "input", NULL,
                          "'input' %zu: token %zu is id %d, outside the vocabulary of %u", i, k, e->ids[i][k],
                          info.n_vocab);
    if (e->n_ids[i] > e->n_ids[longest]) longest = i;
  }
  free(t->ids);
  if (!(t->ids = malloc(e->n_ids[longest] * sizeof *t->ids)))
    return serve_fail(&t->err, 500, "server_error", NULL, NULL, "out of memory");
  memcpy(t->ids, e->ids[longest], e->n_ids[longest] * sizeof *t->ids);
  t->n_ids = e->n_ids[longest];
  return 0;
}

wgllm_status serve_embed_run(wgllm_session *s, serve_task *t, serve_error *err) {
  serve_embed *e = t->req.embed;
  e->vec = malloc(e->n * e->n_embd * sizeof *e->vec);
  if (!e->vec) {
    serve_fail(err, 500, "server_error", NULL, NULL, "out of memory");
    return WGLLM_ERR_OUT_OF_MEMORY;
  }
  uint32_t tokens = 0;
  for (size_t i = 0; i < e->n; i++) {
    wgllm_status st = wgllm_session_embed(s, e->ids[i], e->n_ids[i], WGLLM_POOLING_DEFAULT, -1, e->vec + i * e->n_embd);
    if (st) {
      if (st == WGLLM_ERR_INVALID_ARG || st == WGLLM_ERR_UNSUPPORTED)
        serve_fail(err, 400, "invalid_request_error", "input", NULL, "'input' %zu: %s", i, wgllm_session_error(s));
      else
        serve_fail(err, st == WGLLM_ERR_DEVICE_LOST ? 503 : 500, "server_error", NULL, NULL,
                   "the embedding of 'input' %zu failed: %s (%s)", i, wgllm_session_error(s), wgllm_status_name(st));
      return st;
    }
    tokens += (uint32_t)e->n_ids[i];
  }
  t->usage.prompt_tokens = tokens;
  return WGLLM_OK;
}

int serve_embed_warm_up(wgllm_model *m, wgllm_session *s, char *err, size_t errlen) {
  wgllm_model_info info;
  wgllm_model_get_info(m, &info);
  int32_t ids[8];
  for (int i = 0; i < 8; i++)
    ids[i] = (int32_t)(((uint32_t)i * 7919u + 3u) % info.n_vocab);
  float *vec = malloc(info.n_embd * sizeof *vec);
  wgllm_status st = vec ? wgllm_session_embed(s, ids, 8, WGLLM_POOLING_DEFAULT, -1, vec) : WGLLM_ERR_OUT_OF_MEMORY;
  free(vec);
  if (st) snprintf(err, errlen, "warm-up (an embedding): %s (%s)", wgllm_session_error(s), wgllm_status_name(st));
  return st ? -1 : 0;
}

/* n floats as little-endian float32 bytes in base64 (OpenAI's encoding_format "base64") */
static char *base64_floats(const float *v, size_t n) {
  static const char A[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  size_t bytes = n * 4, o = 0;
  unsigned char *b = malloc(bytes ? bytes : 1);
  char *out = malloc((bytes + 2) / 3 * 4 + 3);
  if (!b || !out) {
    free(b);
    free(out);
    return NULL;
  }
  for (size_t i = 0; i < n; i++) {
    uint32_t u;
    memcpy(&u, &v[i], 4);
    for (int k = 0; k < 4; k++)
      b[4 * i + (size_t)k] = (unsigned char)(u >> (8 * k));
  }
  out[o++] = '"';
  for (size_t i = 0; i < bytes; i += 3) {
    uint32_t w = (uint32_t)b[i] << 16 | (i + 1 < bytes ? (uint32_t)b[i + 1] << 8 : 0) | (i + 2 < bytes ? b[i + 2] : 0);
    out[o++] = A[w >> 18 & 63];
    out[o++] = A[w >> 12 & 63];
    out[o++] = i + 1 < bytes ? A[w >> 6 & 63] : '=';
    out[o++] = i + 2 < bytes ? A[w & 63] : '=';
  }
  out[o++] = '"';
  out[o] = 0;
  free(b);
  return out;
}

/* n floats as a JSON array, each as %.9g (a float's value exactly; non-finite ones, which a model should not give,
   as null: JSON has no NaN) */
static char *float_array(const float *v, size_t n) {
  char *out = malloc(n * 18 + 3), *p = out;
  if (!out) return NULL;
  *p++ = '[';
  for (size_t i = 0; i < n; i++) {
    if (i) *p++ = ',';
    p += v[i] == v[i] && v[i] - v[i] == 0 ? sprintf(p, "%.9g", (double)v[i]) : sprintf(p, "null");
  }
  *p++ = ']';
  *p = 0;
  return out;
}

char *serve_embed_answer(const serve_task *t, const char *model) {
  const serve_embed *e = t->req.embed;
  cJSON *o = cJSON_CreateObject(), *usage;
  cJSON *data = o && cJSON_AddStringToObject(o, "object", "list") ? cJSON_AddArrayToObject(o, "data") : NULL;
  int ok = data != NULL;
  for (size_t i = 0; ok && i < e->n; i++) {
    cJSON *item = cJSON_CreateObject();
    char *vec =
        e->base64 ? base64_floats(e->vec + i * e->n_embd, e->n_embd) : float_array(e->vec + i * e->n_embd, e->n_embd);
    ok = item && vec && cJSON_AddStringToObject(item, "object", "embedding") &&
         cJSON_AddNumberToObject(item, "index", (double)i) && cJSON_AddRawToObject(item, "embedding", vec);
    free(vec);
    if (item) cJSON_AddItemToArray(data, item);
  }
  ok = ok && cJSON_AddStringToObject(o, "model", model ? model : "") && (usage = cJSON_AddObjectToObject(o, "usage")) &&
       cJSON_AddNumberToObject(usage, "prompt_tokens", t->usage.prompt_tokens) &&
       cJSON_AddNumberToObject(usage, "total_tokens", t->usage.prompt_tokens);
  char *json = ok ? cJSON_PrintUnformatted(o) : NULL;
  cJSON_Delete(o);
  return json;
}
