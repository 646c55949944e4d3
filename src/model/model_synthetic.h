/* Synthetic random-weight models of real shapes for benchmarks (Llama-3.2-1B, Llama-3.1-8B) in q4gsw, built
   straight on the GPU from a deterministic generator, and the same model written as a GGUF (Q4_0) file so
   other engines can run identical weights. */
#ifndef WGLLM_MODEL_SYNTHETIC_H
#define WGLLM_MODEL_SYNTHETIC_H
#include "model.h"

/* name: "llama-1b" or "llama-8b" (or "tiny" for tests). group: 32, 64 or 128. */
wgllm_status llm_synthetic_hparams(const char *name, llm_hparams *hp, char *err, size_t errlen);
wgllm_status llm_model_synthetic(gpu_context *gpu, const char *name, uint32_t group, llm_model **out, char *err,
                                 size_t errlen);
/* Writes the synthetic model (group 32) as GGUF v3 with Q4_0 linears and embedding, F32 norms. */
wgllm_status llm_synthetic_write_gguf(const char *name, const char *path, char *err, size_t errlen);
#endif
