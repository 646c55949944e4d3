/* Grammars for constrained decoding (wgllm_grammar_*): compiled from GBNF, a JSON schema or "any JSON object" by
   src/grammar, over the model's vocabulary as the grammar sees it (each token's bytes mid-text, made once per model
   on first use). */
#include "api_internal.h"
#include <stdlib.h>
#include <string.h>

/* The model's vocabulary for grammars, made by the first grammar */
static wgllm_status model_gvocab(wgllm_model *m, llm_err *err) {
  pthread_mutex_lock(&m->gvocab_lock);
  wgllm_status st = m->gvocab ? WGLLM_OK : grammar_vocab_from_tokenizer(m->tok, m->m->hp.n_vocab, &m->gvocab, err);
  pthread_mutex_unlock(&m->gvocab_lock);
  return st;
}

wgllm_status wgllm_grammar_create(wgllm_model *m, wgllm_grammar_kind kind, const char *text, size_t len,
                                  wgllm_grammar **out) {
  llm_err *err = api_last_error();
  llm_err_clear(err);
  if (!out) return llm_err_set(err, WGLLM_ERR_INVALID_ARG, "wgllm_grammar_create: out is NULL");
  *out = NULL;
  if (!m) return llm_err_set(err, WGLLM_ERR_INVALID_ARG, "wgllm_grammar_create: model is NULL");
  if (!m->tok) return llm_err_set(err, WGLLM_ERR_INVALID_ARG, "wgllm_grammar_create: the model has no tokenizer");
  if (kind != WGLLM_GRAMMAR_JSON_OBJECT && !text)
    return llm_err_set(err, WGLLM_ERR_INVALID_ARG, "wgllm_grammar_create: text is NULL");
  wgllm_status st = model_gvocab(m, err);
  if (st) return st;
  grammar *g = NULL;
  switch (kind) {
  case WGLLM_GRAMMAR_GBNF:
    st = grammar_from_gbnf(text, len, &g, err);
    if (st) llm_err_prefix(err, "grammar");
    break;
  case WGLLM_GRAMMAR_JSON_SCHEMA: {
    cJSON *schema = cJSON_ParseWithLength(text, len);
    if (!schema) return llm_err_set(err, WGLLM_ERR_INVALID_ARG, "json schema: not valid JSON");
    st = grammar_from_json_schema(schema, &g, err); /* its messages begin "json schema" */
    cJSON_Delete(schema);
    break;
  }
  case WGLLM_GRAMMAR_JSON_OBJECT:
    st = grammar_json_object(&g, err);
    break;
  default:
    return llm_err_set(err, WGLLM_ERR_INVALID_ARG, "wgllm_grammar_create: unknown kind %d", (int)kind);
  }
  if (st) return st;
  wgllm_grammar *h = calloc(1, sizeof *h);
  if (!h) {
    grammar_free(g);
    return llm_err_set(err, WGLLM_ERR_OUT_OF_MEMORY, "out of host memory");
  }
  h->model = m;
  h->g = g;
  h->cache = grammar_cache_create(g, m->gvocab, 0, err);
  if (!h->cache) {
    wgllm_grammar_free(h);
    return err->status ? err->status : llm_err_set(err, WGLLM_ERR_OUT_OF_MEMORY, "out of host memory");
  }
  *out = h;
  return WGLLM_OK;
}

void wgllm_grammar_free(wgllm_grammar *g) {
  if (!g) return;
  grammar_cache_free(g->cache);
  grammar_free(g->g);
  free(g);
}
