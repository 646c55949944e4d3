/* A Hugging Face byte-level BPE tokenizer (tokenizer.json + tokenizer_config.json) as the tokenizer.ggml.* keys
   of a synthetic model's GGUF, the way llama.cpp's converter writes a Llama 3 file (see model_synthetic.h). */
#include "mapped_file.h"
#include "model_synthetic.h"
#include <cjson/cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

enum { TT_NORMAL = 1, TT_CONTROL = 3, TT_USER_DEFINED = 4, TT_UNUSED = 5 }; /* GGUF token types */

/* NULL with no message when an optional file is missing */
static cJSON *read_json(const char *path, int required, llm_err *err) {
  struct stat sb;
  if (!required && stat(path, &sb) != 0) return NULL;
  char *b = mf_read_text(path, NULL);
  if (!b) {
    llm_err_set(err, WGLLM_ERR_IO, "%s: cannot be read", path);
    return NULL;
  }
  cJSON *j = cJSON_Parse(b);
  free(b);
  if (!j) llm_err_set(err, WGLLM_ERR_FORMAT, "%s: not valid JSON", path);
  return j;
}

/* Llama 3's pre-tokenizer regex, which tokenizer.ggml.pre "llama-bpe" stands for */
static const char LLAMA3_REGEX[] = "(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}{1,3}| "
                                   "?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+";

/* whether a "Regex" value somewhere under node is want */
static int has_regex(const cJSON *node, const char *want) {
  const cJSON *it;
  cJSON_ArrayForEach(it, node) {
    if (it->string && !strcmp(it->string, "Regex") && cJSON_IsString(it) && !strcmp(it->valuestring, want)) return 1;
    if ((cJSON_IsObject(it) || cJSON_IsArray(it)) && has_regex(it, want)) return 1;
  }
  return 0;
}

/* bos_token / eos_token of tokenizer_config.json: a string or {"content": ...}; NULL when absent or null */
static const char *config_token(const cJSON *cfg, const char *key) {
  const cJSON *t = cJSON_GetObjectItemCaseSensitive(cfg, key);
  if (cJSON_IsObject(t)) t = cJSON_GetObjectItemCaseSensitive(t, "content");
  return cJSON_IsString(t) ? t->valuestring : NULL;
}

/* the id of a piece: the added tokens first, then the model's vocabulary; -1 when neither has it */
static int64_t find_piece(const cJSON *added, const cJSON *vocab, const char *piece) {
  const cJSON *it;
  cJSON_ArrayForEach(it, added) {
    const cJSON *c = cJSON_GetObjectItemCaseSensitive(it, "content"), *id = cJSON_GetObjectItemCaseSensitive(it, "id");
    if (cJSON_IsString(c) && cJSON_IsNumber(id) && !strcmp(c->valuestring, piece)) return (int64_t)id->valuedouble;
  }
  const cJSON *v = cJSON_GetObjectItemCaseSensitive(vocab, piece);
  return cJSON_IsNumber(v) ? (int64_t)v->valuedouble : -1;
}

/* chat_template.jinja beside the files wins over tokenizer_config.json's chat_template (a string, or a list of
   {name, template}: "default", else the first), as transformers and the engine's loader take it */
static char *chat_template(const char *dir, const cJSON *cfg) {
  char p[1100];
  snprintf(p, sizeof p, "%s/chat_template.jinja", dir);
  struct stat sb;
  if (stat(p, &sb) == 0 && S_ISREG(sb.st_mode)) return mf_read_text(p, NULL);
  const cJSON *t = cJSON_GetObjectItemCaseSensitive(cfg, "chat_template"), *it;
  if (cJSON_IsString(t)) return strdup(t->valuestring);
  const char *pick = NULL;
  cJSON_ArrayForEach(it, t) {
    const cJSON *n = cJSON_GetObjectItemCaseSensitive(it, "name"),
                *tt = cJSON_GetObjectItemCaseSensitive(it, "template");
    if (cJSON_IsString(tt) && (!pick || (cJSON_IsString(n) && !strcmp(n->valuestring, "default"))))
      pick = tt->valuestring;
  }
  return pick ? strdup(pick) : NULL;
}

wgllm_status llm_synthetic_vocab_kv(gguf_writer *w, const char *dir, uint32_t n_vocab, llm_err *err) {
  char tj[1024], tc[1024];
  snprintf(tj, sizeof tj, "%s/tokenizer.json", dir);
  snprintf(tc, sizeof tc, "%s/tokenizer_config.json", dir);
  cJSON *tok = read_json(tj, 1, err);
  if (!tok) return WGLLM_ERR_IO;
  llm_err_clear(err);
  cJSON *cfg = read_json(tc, 0, err); /* optional; a broken one is an error */
  if (!cfg && llm_err_msg(err)[0]) {
    cJSON_Delete(tok);
    return WGLLM_ERR_FORMAT;
  }
  wgllm_status s = WGLLM_OK;
  const cJSON *model = cJSON_GetObjectItemCaseSensitive(tok, "model");
  const cJSON *type = cJSON_GetObjectItemCaseSensitive(model, "type");
  const cJSON *vocab = cJSON_GetObjectItemCaseSensitive(model, "vocab");
  const cJSON *merges = cJSON_GetObjectItemCaseSensitive(model, "merges");
  const cJSON *added = cJSON_GetObjectItemCaseSensitive(tok, "added_tokens");
  const cJSON *dec = cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(tok, "decoder"), "type");
  /* "gpt2" + "llama-bpe" is byte-level BPE split by Llama 3's regex, no normalizer: anything else (Llama 2's or
     Gemma's SentencePiece-style BPE, Qwen's regex and NFC) would be written as a different tokenizer */
  const cJSON *norm = cJSON_GetObjectItemCaseSensitive(tok, "normalizer");
  if (!cJSON_IsString(type) || strcmp(type->valuestring, "BPE") || !cJSON_IsObject(vocab) || !cJSON_IsString(dec) ||
      strcmp(dec->valuestring, "ByteLevel") || (norm && !cJSON_IsNull(norm)) ||
      !has_regex(cJSON_GetObjectItemCaseSensitive(tok, "pre_tokenizer"), LLAMA3_REGEX)) {
    s = llm_err_set(
        err, WGLLM_ERR_UNSUPPORTED,
        "%s: not Llama 3's kind of tokenizer (byte-level BPE, its pre-tokenizer regex, no normalizer), which "
        "tokenizer.ggml.pre \"llama-bpe\" names",
        tj);
  }
  /* the vocabulary's size: its highest id + 1, added tokens included */
  int64_t top = -1;
  const cJSON *it;
  if (!s) cJSON_ArrayForEach(it, vocab) {
      if (!cJSON_IsNumber(it) || it->valuedouble < 0 || it->valuedouble > INT32_MAX) {
        s = llm_err_set(err, WGLLM_ERR_FORMAT, "%s: model.vocab \"%s\" has no valid id", tj, it->string);
        break;
      }
      if ((int64_t)it->valuedouble > top) top = (int64_t)it->valuedouble;
    }
  if (!s) cJSON_ArrayForEach(it, added) {
      const cJSON *id = cJSON_GetObjectItemCaseSensitive(it, "id"),
                  *c = cJSON_GetObjectItemCaseSensitive(it, "content");
      if (!cJSON_IsNumber(id) || id->valuedouble < 0 || id->valuedouble > INT32_MAX || !cJSON_IsString(c)) {
        s = llm_err_set(err, WGLLM_ERR_FORMAT, "%s: an added token without a valid id and content", tj);
        break;
      }
      if ((int64_t)id->valuedouble > top) top = (int64_t)id->valuedouble;
    }
  if (!s && top + 1 > (int64_t)n_vocab) {
    s = llm_err_set(err, WGLLM_ERR_INVALID_ARG, "%s: the vocabulary has %lld tokens, more than the model's n_vocab %u",
                    tj, (long long)(top + 1), n_vocab);
  }
  const char **tokens = s ? NULL : calloc(n_vocab, sizeof *tokens);
  int32_t *types = s ? NULL : calloc(n_vocab, sizeof *types);
  char *pads = s ? NULL : malloc((size_t)n_vocab * 20); /* "[PAD<id>]" of the ids the file lacks */
  if (!s && (!tokens || !types || !pads)) s = WGLLM_ERR_OUT_OF_MEMORY;
  if (!s) {
    cJSON_ArrayForEach(it, vocab) {
      tokens[(size_t)it->valuedouble] = it->string;
      types[(size_t)it->valuedouble] = TT_NORMAL;
    }
    cJSON_ArrayForEach(it, added) { /* an added token overrides a vocabulary entry of its id */
      size_t id = (size_t)cJSON_GetObjectItemCaseSensitive(it, "id")->valuedouble;
      tokens[id] = cJSON_GetObjectItemCaseSensitive(it, "content")->valuestring;
      types[id] = cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(it, "special")) ? TT_CONTROL : TT_USER_DEFINED;
    }
    for (uint32_t i = 0; i < n_vocab; i++) /* as llama.cpp's converter pads a vocabulary to the model's size */
      if (!tokens[i]) {
        snprintf(pads + (size_t)i * 20, 20, "[PAD%u]", i);
        tokens[i] = pads + (size_t)i * 20;
        types[i] = TT_UNUSED;
      }
  }
  /* merges: "a b" strings, or [a, b] pairs (newer tokenizers) joined by a space */
  size_t n_merges = cJSON_IsArray(merges) ? (size_t)cJSON_GetArraySize(merges) : 0;
  const char **mstr = s || !n_merges ? NULL : calloc(n_merges, sizeof *mstr);
  char **owned = s || !n_merges ? NULL : calloc(n_merges, sizeof *owned);
  if (!s && n_merges && (!mstr || !owned)) s = WGLLM_ERR_OUT_OF_MEMORY;
  size_t r = 0;
  if (!s) cJSON_ArrayForEach(it, merges) {
      const cJSON *a = cJSON_GetArrayItem(it, 0), *b = cJSON_GetArrayItem(it, 1);
      if (cJSON_IsString(it) && strchr(it->valuestring, ' ')) {
        mstr[r++] = it->valuestring;
        continue;
      }
      if (!cJSON_IsArray(it) || cJSON_GetArraySize(it) != 2 || !cJSON_IsString(a) || !cJSON_IsString(b) ||
          strchr(a->valuestring, ' ') || strchr(b->valuestring, ' ')) {
        s = llm_err_set(err, WGLLM_ERR_FORMAT, "%s: merge %zu is neither \"a b\" nor a pair of pieces without spaces",
                        tj, r);
        break;
      }
      size_t la = strlen(a->valuestring), lb = strlen(b->valuestring);
      if (!(owned[r] = malloc(la + lb + 2))) {
        s = WGLLM_ERR_OUT_OF_MEMORY;
        break;
      }
      memcpy(owned[r], a->valuestring, la);
      owned[r][la] = ' ';
      memcpy(owned[r] + la + 1, b->valuestring, lb + 1);
      mstr[r] = owned[r];
      r++;
    }
  if (!s) {
    gguf_writer_kv_str(w, "tokenizer.ggml.model", "gpt2");
    gguf_writer_kv_str(w, "tokenizer.ggml.pre", "llama-bpe");
    gguf_writer_kv_arr_str(w, "tokenizer.ggml.tokens", n_vocab, tokens);
    gguf_writer_kv_arr(w, "tokenizer.ggml.token_type", GGUF_TYPE_INT32, n_vocab, types);
    gguf_writer_kv_arr_str(w, "tokenizer.ggml.merges", n_merges, mstr);
    const char *names[2] = {"bos_token", "eos_token"},
               *keys[2] = {"tokenizer.ggml.bos_token_id", "tokenizer.ggml.eos_token_id"};
    for (int k = 0; k < 2; k++) {
      const char *piece = config_token(cfg, names[k]);
      int64_t id = piece ? find_piece(added, vocab, piece) : -1;
      if (piece && id < 0) {
        s = llm_err_set(err, WGLLM_ERR_FORMAT, "%s: %s \"%s\" is not in %s", tc, names[k], piece, tj);
        break;
      }
      if (id >= 0) gguf_writer_kv_u32(w, keys[k], (uint32_t)id);
    }
  }
  if (!s) {
    const cJSON *ab = cJSON_GetObjectItemCaseSensitive(cfg, "add_bos_token"); /* true unless the config says */
    uint8_t add_bos = cJSON_IsBool(ab) ? (uint8_t)cJSON_IsTrue(ab) : 1;
    gguf_writer_kv(w, "tokenizer.ggml.add_bos_token", GGUF_TYPE_BOOL, &add_bos);
    char *ct = chat_template(dir, cfg);
    if (ct) gguf_writer_kv_str(w, "tokenizer.chat_template", ct);
    free(ct);
    s = gguf_writer_status(w);
    if (s) llm_err_set(err, s, "%s", gguf_writer_error(w));
  }
  if (s == WGLLM_ERR_OUT_OF_MEMORY && !llm_err_msg(err)[0]) llm_err_set(err, s, "out of host memory");
  for (size_t i = 0; owned && i < n_merges; i++)
    free(owned[i]);
  free(owned);
  free(mstr);
  free(tokens);
  free(types);
  free(pads);
  cJSON_Delete(cfg);
  cJSON_Delete(tok);
  return s;
}
