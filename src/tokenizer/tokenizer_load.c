/* Tokenizer loading for model files (see tokenizer_load.h). */
#include "tokenizer_load.h"
#include "gguf.h"
#include "json_shape.h"
#include "mapped_file.h"
#include <cjson/cJSON.h>
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

static int is_file(const char *p) {
  struct stat st;
  return stat(p, &st) == 0 && S_ISREG(st.st_mode);
}

/* chat_template in tokenizer_config.json: a string, or a list of {name, template} (take "default") */
static char *config_chat_template(const char *config_path) {
  size_t len = 0;
  char why[128], *js = mf_check_size(config_path, MF_CAP_TOKENIZER_CONFIG_JSON, NULL) ? NULL
                                                                                    : mf_read_text(config_path, &len);
  /* tok_load_hf has refused a file past these bounds already; checked again here, as every JSON text is */
  if (!js || json_shape_check(js, len, MF_VALUES_CONFIG_JSON, JSON_FILE_MAX_DEPTH, why, sizeof why)) {
    free(js);
    return NULL;
  }
  cJSON *j = cJSON_ParseWithLength(js, len);
  free(js);
  char *out = NULL;
  const cJSON *t = cJSON_GetObjectItemCaseSensitive(j, "chat_template");
  if (cJSON_IsString(t))
    out = strdup(t->valuestring);
  else if (cJSON_IsArray(t)) {
    const cJSON *it;
    cJSON_ArrayForEach(it, t) {
      const cJSON *n = cJSON_GetObjectItemCaseSensitive(it, "name"),
                  *tt = cJSON_GetObjectItemCaseSensitive(it, "template");
      if (cJSON_IsString(tt) && (!out || (cJSON_IsString(n) && !strcmp(n->valuestring, "default")))) {
        free(out);
        out = strdup(tt->valuestring);
      }
    }
  }
  cJSON_Delete(j);
  return out;
}

/* An optional flag (add_bos_token, add_eos_token, add_space_prefix): absent is def; a bool of 0 or 1 its
   value. Any other type is refused, as llama.cpp refuses it ("key ... has wrong type"): an integer taken for a flag
   read 2 or -1 as true. */
static wgllm_status opt_flag(const char *path, const wt_store *st, const char *key, int def, int *out, llm_err *err) {
  int t = gguf_key_type(st, key);
  uint64_t v = 0;
  *out = def;
  if (t < 0) return WGLLM_OK;
  if (t != GGUF_TYPE_BOOL || !gguf_get_u64(st, key, &v)) {
    return llm_err_set(err, WGLLM_ERR_FORMAT, "%s: %s is of GGUF type %d, not a bool", path, key, t);
  }
  if (v > 1) {
    return llm_err_set(err, WGLLM_ERR_FORMAT, "%s: %s is a bool of byte value %llu, not 0 or 1", path, key,
                       (unsigned long long)v);
  }
  *out = (int)v;
  return WGLLM_OK;
}

/* An optional token id: absent is -1; a u32 (what llama.cpp reads; i32 also taken) below n_vocab. Other types,
   negative values and ids outside the vocabulary are refused (llama.cpp refuses the type, and warns and keeps
   its default id for one out of range: wgllm has no default to keep). */
static wgllm_status opt_id(const char *path, const wt_store *st, const char *key, uint64_t n_vocab, int32_t *out,
                           llm_err *err) {
  int t = gguf_key_type(st, key);
  uint64_t v = 0;
  double d = 0;
  *out = -1;
  if (t < 0) return WGLLM_OK;
  if (t != GGUF_TYPE_UINT32 && t != GGUF_TYPE_INT32) {
    return llm_err_set(err, WGLLM_ERR_FORMAT, "%s: %s is of GGUF type %d, not a u32 token id", path, key, t);
  }
  if (!gguf_get_u64(st, key, &v)) {
    gguf_get_f64(st, key, &d);
    return llm_err_set(err, WGLLM_ERR_FORMAT, "%s: %s is %.0f, not a token id", path, key, d);
  }
  if (v >= n_vocab) {
    return llm_err_set(err, WGLLM_ERR_FORMAT, "%s: %s %llu is outside the %llu-token vocabulary", path, key,
                       (unsigned long long)v, (unsigned long long)n_vocab);
  }
  *out = (int32_t)v;
  return WGLLM_OK;
}

/* An optional array of one element per token (tokenizer.ggml.scores, token_type): absent is NULL; present, it
   must be an array of elem_type with n elements (llama.cpp reads n elements whatever the array holds: a shorter
   one past its end, one of another type as floats or ints). */
static wgllm_status per_token_arr(const char *path, const wt_store *st, const char *key, int elem_type,
                                  const char *elem_name, uint64_t n, const void **out, llm_err *err) {
  int t = gguf_key_type(st, key), et = -1;
  uint64_t m = 0;
  *out = NULL;
  if (t < 0) return WGLLM_OK;
  if (!gguf_get_arr(st, key, &et, &m, out) || et != elem_type) {
    *out = NULL;
    if (t == GGUF_TYPE_ARRAY)
      return llm_err_set(err, WGLLM_ERR_FORMAT, "%s: %s is an array of GGUF type %d, not of %s", path, key, et,
                         elem_name);
    else
      return llm_err_set(err, WGLLM_ERR_FORMAT, "%s: %s is of GGUF type %d, not an array of %s", path, key, t,
                         elem_name);
  }
  if (m != n) {
    *out = NULL;
    return llm_err_set(err, WGLLM_ERR_FORMAT, "%s: %s has %llu elements for %llu tokens", path, key,
                       (unsigned long long)m, (unsigned long long)n);
  }
  return WGLLM_OK;
}

/* tokenizer.ggml.scores and token_type: per token, scores finite (NaN compared false in the score-ordered merges,
   infinities outranked every real pair), types one of GGUF's 1..6 (llama.cpp reads any other as "undefined", a
   token it never decodes; wgllm took it for a normal one). */
static wgllm_status scores_types(const char *path, const wt_store *st, uint64_t n, const float **scores,
                                 const int32_t **types, llm_err *err) {
  const void *sd, *td;
  wgllm_status s = per_token_arr(path, st, "tokenizer.ggml.scores", GGUF_TYPE_FLOAT32, "float32", n, &sd, err);
  if (!s) s = per_token_arr(path, st, "tokenizer.ggml.token_type", GGUF_TYPE_INT32, "int32", n, &td, err);
  if (s) return s;
  *scores = sd;
  *types = td;
  for (uint64_t i = 0; *scores && i < n; i++)
    if (!isfinite((*scores)[i])) {
      return llm_err_set(err, WGLLM_ERR_FORMAT, "%s: tokenizer.ggml.scores[%llu] is %g, not a finite number", path,
                         (unsigned long long)i, (double)(*scores)[i]);
    }
  for (uint64_t i = 0; *types && i < n; i++)
    if ((*types)[i] < 1 || (*types)[i] > 6) {
      return llm_err_set(
          err, WGLLM_ERR_FORMAT,
          "%s: tokenizer.ggml.token_type[%llu] is %d, not a GGUF token type (1 normal, 2 unknown, 3 control, 4 "
          "user-defined, 5 unused, 6 byte)",
          path, (unsigned long long)i, (int)(*types)[i]);
    }
  return WGLLM_OK;
}

/* The tokenizer.ggml.* arrays of an opened GGUF file (st is borrowed). */
static wgllm_status load_gguf(const char *path, const wt_store *st, tokenizer **out, char **chat_template,
                              llm_err *err) {
  wgllm_status s;
  const char *model = gguf_get_str(st, "tokenizer.ggml.model");
  const char *pre = gguf_get_str(st, "tokenizer.ggml.pre");
  int et;
  uint64_t n = 0, n_merges = 0;
  const void *data;
  if (!model || !gguf_get_arr(st, "tokenizer.ggml.tokens", &et, &n, &data) || n == 0) {
    return llm_err_set(err, WGLLM_ERR_FORMAT, "%s: no tokenizer (tokenizer.ggml.model / tokenizer.ggml.tokens missing)",
                       path);
  }
  if (et != GGUF_TYPE_STRING) {
    return llm_err_set(err, WGLLM_ERR_FORMAT, "%s: tokenizer.ggml.tokens is an array of GGUF type %d, not of strings",
                       path, et);
  }
  if (strcmp(model, "llama") && strcmp(model, "gpt2") && strcmp(model, "gemma4")) {
    return llm_err_set(err, WGLLM_ERR_UNSUPPORTED,
                       "%s: tokenizer.ggml.model \"%s\" is not supported (llama, gpt2, gemma4)", path, model);
  }
  const char **tokens = malloc(n * sizeof *tokens);
  size_t *lens = malloc(n * sizeof *lens);
  const float *scores = NULL;
  const int32_t *types = NULL;
  s = (!tokens || !lens) ? WGLLM_ERR_OUT_OF_MEMORY : WGLLM_OK;
  for (uint64_t i = 0; !s && i < n; i++)
    tokens[i] = gguf_arr_str(st, "tokenizer.ggml.tokens", i, &lens[i]);
  if (!s) s = scores_types(path, st, n, &scores, &types, err);
  if (!s && !scores && !strcmp(model, "llama")) { /* llama.cpp would merge by a score of 0 for every piece */
    s = llm_err_set(err, WGLLM_ERR_FORMAT,
                    "%s: a \"llama\" (SentencePiece) tokenizer needs tokenizer.ggml.scores, and it is missing", path);
  }
  const char **merges = NULL;
  char *pool = NULL; /* the merges' NUL-terminated copies */
  const void *md;
  if (!s && gguf_get_arr(st, "tokenizer.ggml.merges", &et, &n_merges, &md) && n_merges && et != GGUF_TYPE_STRING) {
    s = llm_err_set(err, WGLLM_ERR_FORMAT, "%s: tokenizer.ggml.merges is an array of GGUF type %d, not of strings",
                    path, et);
  }
  if (!s && n_merges) {
    merges = malloc(n_merges * sizeof *merges);
    size_t total = 0;
    for (uint64_t i = 0; i < n_merges; i++) {
      size_t l = 0;
      gguf_arr_str(st, "tokenizer.ggml.merges", i, &l);
      total += l + 1;
    }
    pool = malloc(total ? total : 1);
    if (!merges || !pool) s = WGLLM_ERR_OUT_OF_MEMORY;
    size_t off = 0;
    for (uint64_t i = 0; !s && i < n_merges; i++) { /* GGUF strings are not NUL-terminated */
      size_t l = 0;
      const char *m = gguf_arr_str(st, "tokenizer.ggml.merges", i, &l);
      if (m) memcpy(pool + off, m, l);
      pool[off + l] = 0;
      merges[i] = pool + off;
      off += l + 1;
    }
  }
  if (!s && !n_merges && !strcmp(model, "gemma4")) {
    s = llm_err_set(err, WGLLM_ERR_FORMAT,
                    "%s: a \"gemma4\" tokenizer needs merges, and tokenizer.ggml.merges is missing or empty", path);
  }
  int32_t bos = -1, eos = -1;
  if (!s) s = opt_id(path, st, "tokenizer.ggml.bos_token_id", n, &bos, err);
  if (!s) s = opt_id(path, st, "tokenizer.ggml.eos_token_id", n, &eos, err);
  /* BOS by default for SentencePiece vocabularies; "gemma4" adds it even when the file says false, as llama.cpp
     does (tok_create forces it) */
  int add_bos = 0, add_eos = 0, space_prefix = 1;
  if (!s)
    s = opt_flag(path, st, "tokenizer.ggml.add_bos_token", !strcmp(model, "llama") || !strcmp(model, "gemma4"),
                 &add_bos, err);
  if (!s) s = opt_flag(path, st, "tokenizer.ggml.add_eos_token", 0, &add_eos, err);
  if (!s) s = opt_flag(path, st, "tokenizer.ggml.add_space_prefix", 1, &space_prefix, err);
  if (!s)
    s = tok_create(model, pre ? pre : "default", n, tokens, lens, scores, types, n_merges, merges, bos, eos, add_bos,
                   add_eos, out, err);
  if (!s && gguf_key_type(st, "tokenizer.ggml.add_space_prefix") >= 0) tok_set_add_space_prefix(*out, space_prefix);
  if (s == WGLLM_ERR_OUT_OF_MEMORY && !llm_err_msg(err)[0]) llm_err_set(err, s, "out of host memory");
  if (!s && chat_template) {
    const char *ct = gguf_get_str(st, "tokenizer.chat_template");
    *chat_template = ct ? strdup(ct) : NULL;
  }
  free(pool);
  free(merges);
  free(tokens);
  free(lens);
  return s;
}

/* PATH is a tokenizer.json, a directory holding one, or a GGUF file whatever its name (as llm_open_store). */
wgllm_status llm_load_tokenizer(const char *path, tokenizer **out, char **chat_template, llm_err *err) {
  size_t n = strlen(path);
  struct stat sb;
  if (stat(path, &sb) == 0 && S_ISREG(sb.st_mode) && !(n > 5 && !strcmp(path + n - 5, ".json"))) {
    *out = NULL;
    if (chat_template) *chat_template = NULL;
    wt_store *st;
    wgllm_status s = gguf_open(path, &st, err);
    if (s) return s;
    s = llm_load_tokenizer_store(path, st, out, chat_template, err);
    wt_store_free(st);
    return s;
  }
  return llm_load_tokenizer_store(path, NULL, out, chat_template, err);
}

wgllm_status llm_load_tokenizer_store(const char *path, const wt_store *st, tokenizer **out, char **chat_template,
                                      llm_err *err) {
  *out = NULL;
  if (chat_template) *chat_template = NULL;
  llm_err_clear(err);
  size_t n = strlen(path);
  if (st && wt_store_format(st) == WT_FORMAT_GGUF) return load_gguf(path, st, out, chat_template, err);
  char tj[1024], tc[1024];
  struct stat ps;
  bool dir = stat(path, &ps) == 0 && S_ISDIR(ps.st_mode); /* a model directory named x.json is a directory */
  if (n > 5 && !strcmp(path + n - 5, ".json") && !dir) {
    snprintf(tj, sizeof tj, "%s", path);
    const char *slash = strrchr(path, '/');
    int dl = slash ? (int)(slash - path) : 1;
    snprintf(tc, sizeof tc, "%.*s/tokenizer_config.json", dl, slash ? path : ".");
  } else {
    snprintf(tj, sizeof tj, "%s/tokenizer.json", path);
    snprintf(tc, sizeof tc, "%s/tokenizer_config.json", path);
  }
  if (!is_file(tj)) {
    return llm_err_set(err, WGLLM_ERR_IO, "%s: no tokenizer.json", path);
  }
  const char *cfg = is_file(tc) ? tc : NULL;
  wgllm_status s = tok_load_hf(tj, cfg, out, err);
  if (s || !chat_template) return s;
  /* chat_template.jinja beside the tokenizer files wins over tokenizer_config.json's, as in transformers */
  char cj[1100];
  size_t dl = strlen(tc) - strlen("tokenizer_config.json");
  snprintf(cj, sizeof cj, "%.*schat_template.jinja", (int)dl, tc);
  if (is_file(cj)) {
    if (!(*chat_template = mf_read_text(cj, NULL))) {
      tok_free(*out);
      *out = NULL;
      return llm_err_set(err, WGLLM_ERR_IO, "%s: cannot be read", cj);
    }
  } else if (cfg)
    *chat_template = config_chat_template(cfg);
  return s;
}
