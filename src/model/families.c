/* The architecture families wgllm runs, one row each: the names files give them and what they compute
   differently from the Llama baseline. The hyperparameter readers (model_config.c) and the shape check read the
   rows; the forward pass (src/arch/) reads the flags they set. Adding a family starts with a row here
   (docs/ADDING_A_MODEL.md). */
#include "model.h"
#include <stdio.h>
#include <string.h>

static const llm_family FAMILIES[] = {
    /* arch, config.json model_type, GGUF general.architecture, qkv bias, qk norm, gemma, GGUF rope adjacent */
    {LLM_ARCH_LLAMA, {"llama", "mistral"}, {"llama"}, 0, 0, 0, 1},
    {LLM_ARCH_QWEN2, {"qwen2"}, {"qwen2"}, 1, 0, 0, 0},
    {LLM_ARCH_QWEN3, {"qwen3"}, {"qwen3"}, 0, 1, 0, 0},
    {LLM_ARCH_GEMMA3, {"gemma3_text"}, {"gemma3"}, 0, 1, 1, 0},
    /* Gemma 4's readers are their own (config_gemma4.c): per-layer head_dim, KV sharing, per-layer inputs */
    {LLM_ARCH_GEMMA4, {"gemma4_text"}, {"gemma4"}, 0, 1, 0, 0},
};

static const llm_family *find(int gguf, const char *name) {
  for (size_t i = 0; name && i < sizeof FAMILIES / sizeof FAMILIES[0]; i++) {
    const char *const *names = gguf ? FAMILIES[i].gguf : FAMILIES[i].hf;
    for (int j = 0; j < LLM_FAMILY_NAMES && names[j]; j++)
      if (!strcmp(names[j], name)) return &FAMILIES[i];
  }
  return NULL;
}

const llm_family *llm_family_from_hf(const char *model_type) { return find(0, model_type); }
const llm_family *llm_family_from_gguf(const char *architecture) { return find(1, architecture); }

const char *llm_family_names(int gguf, char *buf, size_t len) {
  buf[0] = 0;
  for (size_t i = 0; i < sizeof FAMILIES / sizeof FAMILIES[0]; i++) {
    const char *const *names = gguf ? FAMILIES[i].gguf : FAMILIES[i].hf;
    for (int j = 0; j < LLM_FAMILY_NAMES && names[j]; j++)
      snprintf(buf + strlen(buf), len - strlen(buf), "%s%s", buf[0] ? ", " : "", names[j]);
  }
  return buf;
}
