/* Embeddings: a session's forward pass over a text's tokens without the LM head, the final hidden states pooled on
   the GPU (the mean of every row, the last or the first) and optionally L2-normalised; only the vector comes back. */
#ifndef WGLLM_EMBED_H
#define WGLLM_EMBED_H
#include "session.h"

/* Evaluates ids[0..T) after the session's cache (a prefill, chunked as the session's prefill_chunk, the tokens then
   in the cache as a prompt's are) and writes out [n_embd]: the pooling of those T tokens' final-norm hidden states
   (the cache's earlier tokens are attended to, not pooled). Checks as llm_session_prefill's (ids, context, room). */
wgllm_status llm_session_embed(llm_session *s, const int32_t *ids, uint32_t T, op_pool_mode mode, int normalize,
                               float *out);
#endif
