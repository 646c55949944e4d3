/* Synthetic random-weight models of real shapes for benchmarks (Llama-3.2-1B, Llama-3.1-8B, Gemma 4 text,
   Qwen3-30B-A3B) in
   q4gsw, built straight on the GPU from a deterministic generator, and the Llama ones written as a GGUF (Q4_0)
   file so other engines can run identical weights. */
#ifndef WGLLM_MODEL_SYNTHETIC_H
#define WGLLM_MODEL_SYNTHETIC_H
#include "gguf_write.h"
#include "llm_err.h"
#include "model.h"

/* name: "llama-1b" or "llama-8b" (or "tiny" for tests); "gemma4" (Gemma4TextConfig's default sizes with the
   last 10 layers KV-shared), "gemma4-noshare" (the same, every layer with its own K/V) or "gemma4-tiny" (the
   same structure, small, for tests). group: 32, 64 or 128 (a Gemma 4 shape's rows must be whole groups:
   gemma4-tiny takes 32 only); "qwen3-30b-a3b" (Qwen3-30B-A3B: 128 experts top 8 on every layer), "qwen3-moe-tiny"
   (8 experts top 2, small, for tests) or "qwen3-moe-kq" (the same with rows of whole K-quant super-blocks), their
   experts in parts of whole experts over the binding limit. Every vector (norms, layer scalars) is ones. */
wgllm_status llm_synthetic_hparams(const char *name, llm_hparams *hp, llm_err *err);
wgllm_status llm_model_synthetic(gpu_context *gpu, const char *name, uint32_t group, llm_model **out, llm_err *err);
/* Writes the synthetic model (group 32) as GGUF v3 with Q4_0 linears and embedding, F32 norms (the Llama shapes; the
   MoE shapes as llm_synthetic_write_roles_gguf); a Gemma 4 shape has no GGUF form (WGLLM_ERR_UNSUPPORTED). */
wgllm_status llm_synthetic_write_gguf(const char *name, const char *path, llm_err *err);
/* The MoE shapes (qwen3-30b-a3b, qwen3-moe-tiny, qwen3-moe-kq, mixtral-8x7b, gpt-oss-20b, gpt-oss-tiny) as GGUF (what
   llm_synthetic_write_gguf does for them): llama.cpp's layout (qwen3moe; Mixtral as llama with expert_count; gpt-oss),
   every tensor in the type llama.cpp's Q4_K_M gives it (gpt-oss: MXFP4 experts, Q8_0 otherwise), random blocks
   (synthetic_gguf_roles.c). Other role-table shapes: WGLLM_ERR_UNSUPPORTED. The gpt-oss shapes have no in-memory
   form (llm_model_synthetic refuses them: their biases and sinks). */
wgllm_status llm_synthetic_write_roles_gguf(const llm_hparams *hp, const char *name, const char *path, llm_err *err);
/* What llm_synthetic_write_gguf_opts adds. vocab_dir: a Hugging Face tokenizer directory (tokenizer.json, and
   tokenizer_config.json when there is one) whose tokenizer the file embeds (llm_synthetic_vocab_kv); NULL for none.
   n_vocab: the embedding's and LM head's rows instead of the shape's (tests: a small shape with a real vocabulary);
   0 for the shape's. */
typedef struct llm_synthetic_gguf_opts {
  const char *vocab_dir;
  uint32_t n_vocab;
} llm_synthetic_gguf_opts;
wgllm_status llm_synthetic_write_gguf_opts(const char *name, const char *path, const llm_synthetic_gguf_opts *o,
                                           llm_err *err);
/* Adds dir's tokenizer as llama.cpp's converter writes a Llama 3 GGUF (synthetic_vocab.c): tokenizer.ggml.model
   "gpt2", pre "llama-bpe", tokens by id (added tokens included; ids the files lack, up to n_vocab, are "[PAD<id>]"
   of type 5 unused), token_type (1 normal, 3 control for special added tokens, 4 user-defined for the others),
   merges as "a b" (tokenizer.json's strings or [a, b] pairs), bos/eos ids of tokenizer_config.json's bos_token /
   eos_token (strings or {"content": ...}), add_bos_token (the config's, else true) and tokenizer.chat_template
   (chat_template.jinja, else the config's chat_template) when there is one. Refused: a vocabulary of more than
   n_vocab tokens (WGLLM_ERR_INVALID_ARG naming both), a tokenizer that is not Llama 3's kind (byte-level BPE with
   its pre-tokenizer regex, no normalizer: WGLLM_ERR_UNSUPPORTED). */
wgllm_status llm_synthetic_vocab_kv(gguf_writer *w, const char *dir, uint32_t n_vocab, llm_err *err);
#endif
