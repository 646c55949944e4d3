/* The public vocabularies (include/wgllm.h): a model's tokenizer, or one loaded alone from a model file, as ids,
   pieces and text. */
#include "api_internal.h"
#include "tokenizer_load.h"
#include <stdlib.h>
#include <string.h>

wgllm_status wgllm_vocab_load(const char *path, wgllm_vocab **out) {
  llm_err_clear(api_last_error());
  if (!out || !path)
    return llm_err_set(api_last_error(), WGLLM_ERR_INVALID_ARG, "wgllm_vocab_load: path or out is NULL");
  *out = NULL;
  wgllm_vocab *v = calloc(1, sizeof *v);
  if (!v) return llm_err_set(api_last_error(), WGLLM_ERR_OUT_OF_MEMORY, "out of host memory");
  wgllm_status st = llm_load_tokenizer(path, &v->tok, NULL, api_last_error());
  if (st) {
    free(v);
    return st;
  }
  v->owned = 1;
  llm_err_clear(api_last_error()); /* a call that succeeds leaves no last error */
  *out = v;
  return WGLLM_OK;
}

void wgllm_vocab_free(wgllm_vocab *v) {
  if (!v || !v->owned) return;
  tok_free(v->tok);
  free(v);
}

const char *wgllm_vocab_error(const wgllm_vocab *v) { return v ? v->err.msg : ""; }
const wgllm_vocab *wgllm_model_vocab(const wgllm_model *m) { return m ? &m->vocab : NULL; }
size_t wgllm_vocab_n_tokens(const wgllm_vocab *v) { return v ? tok_vocab_size(v->tok) : 0; }
int32_t wgllm_vocab_bos(const wgllm_vocab *v) { return v ? tok_bos(v->tok) : -1; }
int32_t wgllm_vocab_eos(const wgllm_vocab *v) { return v ? tok_eos(v->tok) : -1; }
int wgllm_vocab_is_special(const wgllm_vocab *v, int32_t id) { return v && tok_is_special(v->tok, id); }

const char *wgllm_vocab_piece(const wgllm_vocab *v, int32_t id, size_t *len) {
  if (!v || id < 0 || (size_t)id >= tok_vocab_size(v->tok)) return NULL;
  size_t l = 0;
  const char *p = tok_piece(v->tok, id, &l);
  if (len) *len = l;
  return p;
}

size_t wgllm_vocab_token_bytes(const wgllm_vocab *v, int32_t id, char *out, size_t cap) {
  return v && v->tok ? tok_token_bytes(v->tok, id, out, cap) : 0;
}

wgllm_status wgllm_vocab_tokenize(const wgllm_vocab *v, const char *text, size_t len, int add_special,
                                  int parse_special, int32_t *ids, size_t cap, size_t *n_ids) {
  if (!v || !text || !n_ids || (cap && !ids)) return WGLLM_ERR_INVALID_ARG;
  if (!v->tok) return llm_err_set(&((wgllm_vocab *)v)->err, WGLLM_ERR_INVALID_ARG, "%s", api_no_tokenizer);
  int32_t *t = NULL;
  size_t n = 0;
  wgllm_status st = tok_encode(v->tok, text, len, add_special, parse_special, &t, &n, &((wgllm_vocab *)v)->err);
  if (st) return st;
  if (cap && n) memcpy(ids, t, (n < cap ? n : cap) * sizeof *t);
  *n_ids = n;
  free(t);
  return WGLLM_OK;
}

wgllm_status wgllm_vocab_detokenize(const wgllm_vocab *v, const int32_t *ids, size_t n, char **text, size_t *len) {
  if (!v || !text || (n && !ids)) return WGLLM_ERR_INVALID_ARG;
  if (!v->tok) return llm_err_set(&((wgllm_vocab *)v)->err, WGLLM_ERR_INVALID_ARG, "%s", api_no_tokenizer);
  size_t l = 0;
  wgllm_status st = tok_decode(v->tok, ids, n, 0, text, &l, &((wgllm_vocab *)v)->err);
  if (len) *len = l;
  return st;
}

/* the fill-in-the-middle markers of the code models' tokenizers: prefix, suffix, middle (Qwen2.5-Coder's, StarCoder's,
   CodeLlama's, DeepSeek-Coder's) */
static const char *const fim_markers[][3] = {{"<|fim_prefix|>", "<|fim_suffix|>", "<|fim_middle|>"},
                                             {"<fim_prefix>", "<fim_suffix>", "<fim_middle>"},
                                             {"\xe2\x96\x81<PRE>", "\xe2\x96\x81<SUF>", "\xe2\x96\x81<MID>"},
                                             {"<PRE>", "<SUF>", "<MID>"},
                                             {"<\xef\xbd\x9c"
                                              "fim\xe2\x96\x81"
                                              "begin\xef\xbd\x9c>",
                                              "<\xef\xbd\x9c"
                                              "fim\xe2\x96\x81"
                                              "hole\xef\xbd\x9c>",
                                              "<\xef\xbd\x9c"
                                              "fim\xe2\x96\x81"
                                              "end\xef\xbd\x9c>"}};

/* the id of the token whose whole text is marker (an added token: Qwen's FIM markers are not flagged special), or -1 */
static int32_t special_id(const wgllm_vocab *v, const char *marker) {
  int32_t *t = NULL;
  size_t n = 0;
  llm_err err = {0};
  int32_t id = -1;
  if (!tok_encode(v->tok, marker, strlen(marker), 0, 1, &t, &n, &err) && n == 1) id = t[0];
  free(t);
  return id;
}

wgllm_status wgllm_vocab_fim_tokens(const wgllm_vocab *v, int32_t ids[3]) {
  if (!v || !ids) return WGLLM_ERR_INVALID_ARG;
  if (!v->tok) return llm_err_set(&((wgllm_vocab *)v)->err, WGLLM_ERR_INVALID_ARG, "%s", api_no_tokenizer);
  for (size_t k = 0; k < sizeof fim_markers / sizeof fim_markers[0]; k++) {
    int32_t pre = special_id(v, fim_markers[k][0]), suf = special_id(v, fim_markers[k][1]),
            mid = special_id(v, fim_markers[k][2]);
    if (pre >= 0 && suf >= 0 && mid >= 0) {
      ids[0] = pre, ids[1] = suf, ids[2] = mid;
      return WGLLM_OK;
    }
  }
  return llm_err_set(&((wgllm_vocab *)v)->err, WGLLM_ERR_UNSUPPORTED,
                     "the vocabulary has no fill-in-the-middle tokens (<|fim_prefix|> <|fim_suffix|> <|fim_middle|>, "
                     "<fim_prefix> ..., CodeLlama's <PRE> <SUF> <MID> or DeepSeek-Coder's fim begin, hole, end)");
}
