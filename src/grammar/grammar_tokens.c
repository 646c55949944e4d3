/* A tokenizer's vocabulary as grammars see it (grammar_vocab_from_tokenizer): each token's bytes mid-text and its
   kind: end of generation, never (other special tokens, empty pieces, ids past the tokenizer's: padding rows of
   the embedding), or text. */
#include "grammar_tokens.h"
#include <stdlib.h>

wgllm_status grammar_vocab_from_tokenizer(const tokenizer *tok, uint32_t n, grammar_vocab **out, llm_err *err) {
  *out = NULL;
  size_t nt = tok_vocab_size(tok);
  char **bytes = calloc(n ? n : 1, sizeof *bytes);
  uint32_t *lens = calloc(n ? n : 1, sizeof *lens);
  uint8_t *kinds = calloc(n ? n : 1, 1);
  wgllm_status st = bytes && lens && kinds ? WGLLM_OK : llm_err_set(err, WGLLM_ERR_OUT_OF_MEMORY, "out of host memory");
  for (uint32_t id = 0; !st && id < n; id++) {
    kinds[id] = GRAMMAR_TOK_NEVER;
    if (id >= nt || !tok_piece(tok, (int32_t)id, NULL)) continue;
    if (tok_is_eog(tok, (int32_t)id)) {
      kinds[id] = GRAMMAR_TOK_EOG;
      continue;
    }
    if (tok_is_special(tok, (int32_t)id)) continue;
    size_t n_b = tok_token_bytes(tok, (int32_t)id, NULL, 0);
    if (n_b && !(bytes[id] = malloc(n_b))) {
      st = llm_err_set(err, WGLLM_ERR_OUT_OF_MEMORY, "out of host memory");
      break;
    }
    if (n_b) tok_token_bytes(tok, (int32_t)id, bytes[id], n_b);
    lens[id] = (uint32_t)n_b;
    kinds[id] = n_b ? GRAMMAR_TOK_TEXT : GRAMMAR_TOK_NEVER;
  }
  if (!st && !(*out = grammar_vocab_create(n, (const char *const *)bytes, lens, kinds, err)))
    st = err ? err->status : WGLLM_ERR_OUT_OF_MEMORY;
  for (uint32_t id = 0; bytes && id < n; id++)
    free(bytes[id]);
  free(bytes);
  free(lens);
  free(kinds);
  return st;
}
