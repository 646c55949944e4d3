/* A session: one model's KV cache and position, prefill of prompt tokens (chunked) and the decode step,
   which is recorded once and replayed each token with the token id and position in GPU buffers. */
#ifndef WGLLM_SESSION_H
#define WGLLM_SESSION_H
#include "arch_llama.h"
#include "model.h"

typedef struct llm_session_options {
  uint32_t ctx;           /* context length (default 4096) */
  int kv_f16;             /* request an f16 KV cache (falls back to f32 with a notice without shader-f16) */
  uint32_t prefill_chunk; /* tokens per prefill pass (default 256) */
} llm_session_options;

typedef struct llm_session {
  llm_model *m;
  gpu_context *gpu;
  llm_session_options opt;
  llm_kv_cache kv;
  gpu_buffer *rope_cs; /* [ctx][rot/2] cos/sin */
  uint32_t n_past;
  gpu_recorder *step;  /* the recorded decode step (kept) */
  llm_scratch step_scratch;
  char notice[256];    /* e.g. the f16 KV fallback */
  char err[1024];
} llm_session;

wgllm_status llm_session_create(llm_model *m, const llm_session_options *opt, llm_session **out, char *err,
                                size_t errlen);
void llm_session_free(llm_session *s);
/* Clears the cache position (the next prefill starts at 0). */
void llm_session_reset(llm_session *s);
/* Feeds T prompt tokens. logits: [T][n_vocab] when all_rows, else [n_vocab] for the last token; may be NULL. */
wgllm_status llm_session_prefill(llm_session *s, const int32_t *ids, uint32_t T, float *logits, int all_rows);
/* Feeds one token through the recorded step; logits [n_vocab] (may be NULL). */
wgllm_status llm_session_decode(llm_session *s, int32_t id, float *logits);
#endif
