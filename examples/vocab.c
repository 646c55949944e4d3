/* A vocabulary alone (no GPU): load a model file's tokenizer, tokenize a text, print each id with its piece, and
   turn the ids back into the same text.
   Usage: vocab MODEL_PATH [TEXT] */
#include "wgllm.h"
#include <stdio.h>
#include <string.h>

int main(int argc, char **argv) {
  if (argc < 2) {
    fprintf(stderr, "usage: %s MODEL_PATH [TEXT]\n", argv[0]);
    return 2;
  }
  const char *text = argc > 2 ? argv[2] : "In the beginning God created the heaven and the earth.";
  wgllm_vocab *vocab;
  wgllm_status st = wgllm_vocab_load(argv[1], &vocab);
  if (st != WGLLM_OK) {
    fprintf(stderr, "cannot load the vocabulary of %s: %s\n", argv[1], wgllm_last_error());
    return 1;
  }
  printf("%zu tokens, BOS %d, EOS %d\n", wgllm_vocab_n_tokens(vocab), wgllm_vocab_bos(vocab), wgllm_vocab_eos(vocab));
  int32_t ids[256];
  size_t n = 0;
  /* add_special: the BOS the model expects; parse_special: special-token text in the input becomes its token */
  st = wgllm_vocab_tokenize(vocab, text, strlen(text), 1, 1, ids, 256, &n);
  if (st != WGLLM_OK || n > 256) {
    fprintf(stderr, "tokenize: %s\n", n > 256 ? "more than 256 tokens" : wgllm_vocab_error(vocab));
    wgllm_vocab_free(vocab);
    return 1;
  }
  for (size_t i = 0; i < n; i++) {
    size_t len = 0;
    const char *piece = wgllm_vocab_piece(vocab, ids[i], &len);
    printf("%6d  %.*s%s\n", ids[i], (int)len, piece, wgllm_vocab_is_special(vocab, ids[i]) ? "  (special)" : "");
  }
  /* back to text, without the BOS (detokenizing keeps special tokens' text) */
  size_t first = n && ids[0] == wgllm_vocab_bos(vocab) ? 1 : 0;
  char *back = NULL;
  size_t back_len = 0;
  st = wgllm_vocab_detokenize(vocab, ids + first, n - first, &back, &back_len);
  int same = st == WGLLM_OK && back_len == strlen(text) && !memcmp(back, text, back_len);
  printf("%zu ids; back to text: \"%s\" (%s)\n", n, st == WGLLM_OK ? back : wgllm_vocab_error(vocab),
         same ? "the same" : "DIFFERENT");
  wgllm_free(back);
  wgllm_vocab_free(vocab);
  return same ? 0 : 1;
}
