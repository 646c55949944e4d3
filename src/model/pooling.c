/* An embedding model's pooling, as its file says it: GGUF's {arch}.pooling_type (llama.cpp's values), or a
   sentence-transformers directory's modules.json (the Pooling module's path, whose config.json names the mode, and a
   Normalize module for L2-normalised embeddings), as Qwen3-Embedding and other sentence-transformers models ship. */
#include "gguf.h"
#include "json_shape.h"
#include "mapped_file.h"
#include "model.h"
#include <cjson/cJSON.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

const char *llm_pooling_name(llm_pooling p) {
  switch (p) {
  case LLM_POOLING_NONE:
    return "none";
  case LLM_POOLING_MEAN:
    return "mean";
  case LLM_POOLING_CLS:
    return "cls";
  case LLM_POOLING_LAST:
    return "last";
  case LLM_POOLING_RANK:
    return "rank";
  default:
    return "unspecified";
  }
}

/* A JSON file of a sentence-transformers directory (bounded as config.json is: docs/LIMITS.md); *out NULL when the
   file does not exist. */
static wgllm_status read_json(const char *path, cJSON **out, llm_err *err) {
  *out = NULL;
  struct stat sb;
  if (stat(path, &sb) != 0) return WGLLM_OK;
  mapped_file *f;
  wgllm_status st = mf_check_size(path, MF_CAP_CONFIG_JSON, err);
  if (!st) st = mf_open(path, &f, err);
  if (st) return st;
  const char *text = (const char *)f->data;
  char why[128];
  if (json_shape_check(text, (size_t)f->size, MF_VALUES_CONFIG_JSON, JSON_FILE_MAX_DEPTH, why, sizeof why))
    st = llm_err_set(err, WGLLM_ERR_FORMAT, "%s: %s (docs/LIMITS.md)", path, why);
  else if (!f->size || !(*out = cJSON_ParseWithLength(text, (size_t)f->size)))
    st = llm_err_set(err, WGLLM_ERR_FORMAT, "%s: invalid JSON", path);
  mf_close(f);
  return st;
}

static int json_true(const cJSON *o, const char *key) { return cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(o, key)); }

/* The Pooling module's config.json: exactly one mode wgllm computes */
static wgllm_status pooling_config(const char *path, llm_hparams *hp, llm_err *err) {
  cJSON *cfg;
  wgllm_status st = read_json(path, &cfg, err);
  if (st) return st;
  if (!cfg) return llm_err_set(err, WGLLM_ERR_FORMAT, "%s: missing (modules.json names a Pooling module)", path);
  static const struct {
    const char *key;
    llm_pooling pooling;
  } modes[] = {{"pooling_mode_lasttoken", LLM_POOLING_LAST},
               {"pooling_mode_mean_tokens", LLM_POOLING_MEAN},
               {"pooling_mode_cls_token", LLM_POOLING_CLS},
               {"pooling_mode_max_tokens", LLM_POOLING_UNSPECIFIED},
               {"pooling_mode_mean_sqrt_len_tokens", LLM_POOLING_UNSPECIFIED},
               {"pooling_mode_weightedmean_tokens", LLM_POOLING_UNSPECIFIED}};
  const char *chosen = NULL;
  for (size_t i = 0; !st && i < sizeof modes / sizeof modes[0]; i++) {
    if (!json_true(cfg, modes[i].key)) continue;
    if (chosen)
      st = llm_err_set(err, WGLLM_ERR_UNSUPPORTED, "%s: %s and %s both set (one pooling mode is supported)", path,
                       chosen, modes[i].key);
    else if (modes[i].pooling == LLM_POOLING_UNSPECIFIED)
      st = llm_err_set(err, WGLLM_ERR_UNSUPPORTED, "%s: %s is not supported (lasttoken, mean_tokens, cls_token)", path,
                       modes[i].key);
    chosen = modes[i].key;
    hp->pooling = modes[i].pooling;
  }
  if (!st && !chosen) st = llm_err_set(err, WGLLM_ERR_FORMAT, "%s: no pooling_mode_* is true", path);
  cJSON_Delete(cfg);
  return st;
}

static wgllm_status hf_pooling(const char *dir, llm_hparams *hp, llm_err *err) {
  char path[4096];
  snprintf(path, sizeof path, "%s/modules.json", dir);
  cJSON *mods;
  wgllm_status st = read_json(path, &mods, err);
  if (st || !mods) return st;
  if (!cJSON_IsArray(mods)) st = llm_err_set(err, WGLLM_ERR_FORMAT, "%s: not an array of modules", path);
  const cJSON *mod;
  int i = 0;
  cJSON_ArrayForEach(mod, mods) {
    if (st) break;
    const cJSON *type = cJSON_GetObjectItemCaseSensitive(mod, "type"),
                *sub = cJSON_GetObjectItemCaseSensitive(mod, "path");
    if (!cJSON_IsString(type)) {
      st = llm_err_set(err, WGLLM_ERR_FORMAT, "%s: module %d has no \"type\"", path, i);
      break;
    }
    const char *t = type->valuestring, *dot = strrchr(t, '.');
    const char *cls = dot ? dot + 1 : t;
    if (!strcmp(cls, "Pooling")) {
      if (!cJSON_IsString(sub) || strstr(sub->valuestring, "..") || sub->valuestring[0] == '/') {
        st = llm_err_set(err, WGLLM_ERR_FORMAT, "%s: module %d (Pooling) has no relative \"path\"", path, i);
        break;
      }
      char cfg[4096];
      snprintf(cfg, sizeof cfg, "%s/%s/config.json", dir, sub->valuestring);
      st = pooling_config(cfg, hp, err);
    } else if (!strcmp(cls, "Normalize"))
      hp->pooling_normalize = 1;
    i++;
  }
  cJSON_Delete(mods);
  return st;
}

wgllm_status llm_read_pooling(const char *path, const wt_store *st, llm_hparams *hp, llm_err *err) {
  hp->pooling = LLM_POOLING_UNSPECIFIED;
  hp->pooling_normalize = 0;
  if (wt_store_format(st) != WT_FORMAT_GGUF) {
    struct stat sb;
    return stat(path, &sb) == 0 && S_ISDIR(sb.st_mode) ? hf_pooling(path, hp, err) : WGLLM_OK;
  }
  char key[96];
  snprintf(key, sizeof key, "%s.pooling_type", hp->arch_name);
  if (gguf_key_type(st, key) < 0) return WGLLM_OK;
  uint64_t v;
  if (gguf_key_type(st, key) == GGUF_TYPE_BOOL || !gguf_get_u64(st, key, &v) || v > 4)
    return llm_err_set(err, WGLLM_ERR_FORMAT, "GGUF: %s is not a pooling type (0 none, 1 mean, 2 cls, 3 last, 4 rank)",
                       key);
  static const llm_pooling from_gguf[] = {LLM_POOLING_NONE, LLM_POOLING_MEAN, LLM_POOLING_CLS, LLM_POOLING_LAST,
                                          LLM_POOLING_RANK};
  hp->pooling = from_gguf[v];
  /* llama.cpp normalises embeddings (its --embd-normalize 2) unless asked otherwise */
  hp->pooling_normalize = hp->pooling != LLM_POOLING_NONE && hp->pooling != LLM_POOLING_RANK;
  return WGLLM_OK;
}
