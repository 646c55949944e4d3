/* Synthetic random-weight models of real shapes for benchmarks (Llama-3.2-1B, Llama-3.1-8B, Gemma 4 text) in
   q4gsw, built straight on the GPU from a deterministic generator, and the Llama ones written as a GGUF (Q4_0)
   file so other engines can run identical weights. */
#ifndef WGLLM_MODEL_SYNTHETIC_H
#define WGLLM_MODEL_SYNTHETIC_H
#include "model.h"

/* name: "llama-1b" or "llama-8b" (or "tiny" for tests); "gemma4" (Gemma4TextConfig's default sizes with the
   last 10 layers KV-shared), "gemma4-noshare" (the same, every layer with its own K/V) or "gemma4-tiny" (the
   same structure, small, for tests). group: 32, 64 or 128 (a Gemma 4 shape's rows must be whole groups:
   gemma4-tiny takes 32 only). Every vector (norms, layer scalars) is ones. */
wgllm_status llm_synthetic_hparams(const char *name, llm_hparams *hp, char *err, size_t errlen);
wgllm_status llm_model_synthetic(gpu_context *gpu, const char *name, uint32_t group, llm_model **out, char *err,
                                 size_t errlen);
/* Writes the synthetic model (group 32) as GGUF v3 with Q4_0 linears and embedding, F32 norms; a Gemma 4 shape
   has no GGUF form (WGLLM_ERR_UNSUPPORTED). */
wgllm_status llm_synthetic_write_gguf(const char *name, const char *path, char *err, size_t errlen);
#endif
