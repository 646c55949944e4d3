/* The architecture families wgllm runs, one row each: the names files give them and what they compute
   differently from the Llama baseline. The hyperparameter readers (model_config.c) and the shape check read the
   rows; the forward pass (src/arch/) reads the flags they set. Adding a family starts with a row here
   (docs/ADDING_A_MODEL.md). */
#include "config_json.h"
#include "model.h"
#include <stdio.h>
#include <string.h>

static const llm_family FAMILIES[] = {
    {.arch = LLM_ARCH_LLAMA, .hf = {"llama", "mistral"}, .gguf = {"llama"}, .gguf_rope_adjacent = 1},
    {.arch = LLM_ARCH_QWEN2, .hf = {"qwen2"}, .gguf = {"qwen2"}, .qkv_bias = 1},
    {.arch = LLM_ARCH_QWEN3, .hf = {"qwen3"}, .gguf = {"qwen3"}, .qk_norm = 1},
    /* Qwen3 with a mixture of experts on its sparse layers (config_moe.c; llama.cpp's converter: qwen3moe) */
    {.arch = LLM_ARCH_QWEN3_MOE, .hf = {"qwen3_moe"}, .gguf = {"qwen3moe"}, .qk_norm = 1, .moe = 1},
    /* Mistral with a mixture of experts on every layer (config_moe.c; its tensors block_sparse_moe.*, model_roles.c;
       llama.cpp writes it as a llama GGUF with expert_count, model_config.c) */
    {.arch = LLM_ARCH_MIXTRAL, .hf = {"mixtral"}, .moe = 1},
    /* Phi-3 and Phi-4-mini: the Llama block with Q/K/V and gate/up each one tensor (model_roles.c), partial rotary
       and longrope (model_config.c) */
    {.arch = LLM_ARCH_PHI3, .hf = {"phi3"}, .gguf = {"phi3"}, .fused_proj = 1},
    /* gpt-oss: the Llama block with biases on every attention projection, attention sinks, alternating sliding and
       full layers, and a mixture of experts with biases, the clamped SwiGLU and the top k softmaxed (config_moe.c);
       its experts' Hugging Face forms (transposed 3-D, MXFP4 blocks) are role layouts (model_roles.c) */
    {.arch = LLM_ARCH_GPT_OSS, .hf = {"gpt_oss"}, .gguf = {"gpt-oss"}, .moe = 1, .oai = 1, .window_pattern = 2},
    {.arch = LLM_ARCH_GEMMA3, .hf = {"gemma3_text"}, .gguf = {"gemma3"}, .qk_norm = 1, .gemma = 1},
    /* Gemma 4's readers are their own (config_gemma4.c): per-layer head_dim, KV sharing, per-layer inputs */
    {.arch = LLM_ARCH_GEMMA4,
     .hf = {"gemma4_text"},
     .gguf = {"gemma4"},
     .qk_norm = 1,
     .tied_by_default = 1,
     .default_act = OP_ACT_GELU_TANH, /* Gemma4TextConfig's default */
     .read_hf = llm_gemma4_hparams,
     .read_gguf = llm_gemma4_gguf_hparams},
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
