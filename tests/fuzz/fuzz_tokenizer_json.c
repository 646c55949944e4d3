/* Fuzz harness: a Hugging Face tokenizer.json from untrusted bytes (a memfd, since tok_load_hf reads a path):
   the BPE model (vocab, merges in both forms, unk/byte_fallback flags), added tokens, the normalizer,
   pre-tokenizer (Split regexes compiled from the file, ByteLevel, Metaspace, Digits), post-processor template
   and decoder chains. A tokenizer that loads is then used: fixed texts encoded with every flag combination,
   every id decoded, and the streaming decoder compared with the whole decode (fuzz_exercise_tokenizer). */
#include "fuzz_util.h"
#include <stdlib.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  const char *path = fuzz_memfd_path(data, size);
  tokenizer *t = NULL;
  llm_err err = {0};
  wgllm_status s = tok_load_hf(path, NULL, &t, &err);
  if (s != WGLLM_OK) {
    fuzz_note("tok_load_hf: %s", err.msg);
    FUZZ_CHECK(t == NULL && err.msg[0], "tok_load_hf failed (status %d) without a message or left a tokenizer", s);
    return 0;
  }
  fuzz_exercise_tokenizer(t);
  tok_free(t);
  return 0;
}
