/* Fuzz harness: the encode path on arbitrary bytes, with the real tokenizers (loaded once, at
   initialization: third_party/tokenizers/{llama3,qwen3,gemma3,llama2} from scripts/fetch_tokenizers.sh and
   the bundled models/default). Byte 0 picks the tokenizer (bits 0-2, modulo 5) and the mode; the rest is
   the text:
     bit 3 parse_special, bit 4 add_special;
     bit 5 ids mode: the rest is little-endian u32 ids instead (reduced into the vocabulary), decoded whole
           and streamed (fuzz_check_ids).
   Text mode: invalid UTF-8 must be refused cleanly (WGLLM_ERR_INVALID_ARG), valid UTF-8 encoded into
   in-vocabulary ids whose whole and streamed decodes agree (fuzz_check_tokenizer), and where the tokenizer
   is lossless the text must come back: exactly for the byte-level ones without a normalizer (llama3, the
   default model), as its NFC form for qwen3 (its normalizer), and for gemma3 with U+2581 read back as a space
   (its decoder's Replace). Llama 2's Prepend + Strip pair is not a round trip for every text (HF's neither),
   so it gets no round-trip check: the rule of tests/test_tokenizer.c, which asserts a round trip only where
   Hugging Face has one. Under replay_main.c --bound (FUZZ_BOUND set) each input is encoded and decoded once,
   without the checks: the time and memory of what the library does with it. */
#define WGLLM_TOKENIZER_INTERNAL /* tok_nfc, for qwen3's expected round trip */
#include "fuzz_util.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { RT_NONE, RT_EXACT, RT_NFC, RT_METASPACE };
static const struct {
  const char *dir; /* under the repository root */
  int round_trip;
} TOKS[] = {{"third_party/tokenizers/llama3", RT_EXACT},
            {"third_party/tokenizers/qwen3", RT_NFC},
            {"third_party/tokenizers/gemma3", RT_METASPACE},
            {"third_party/tokenizers/llama2", RT_NONE},
            {"models/default", RT_EXACT}};
#define N_TOKS (sizeof TOKS / sizeof *TOKS)
static tokenizer *loaded[N_TOKS];
static int bound_mode = -1; /* FUZZ_BOUND set (replay_main.c --bound): one encode and decode an input */

int LLVMFuzzerInitialize(int *argc, char ***argv) {
  for (size_t i = 0; i < N_TOKS; i++) {
    char tj[1024], tc[1024];
    llm_err err = {0};
    snprintf(tj, sizeof tj, "%s/%s/tokenizer.json", fuzz_source_dir(), TOKS[i].dir);
    snprintf(tc, sizeof tc, "%s/%s/tokenizer_config.json", fuzz_source_dir(), TOKS[i].dir);
    wgllm_status s = tok_load_hf(tj, tc, &loaded[i], &err);
    FUZZ_CHECK(s == WGLLM_OK, "%s (run scripts/fetch_tokenizers.sh from the repository root): %s", tj, err.msg);
  }
  return 0;
}

/* the text the tokenizer's decode(encode(text)) must give back; NULL when it makes no claim */
static char *expected_round_trip(int kind, const char *s, size_t n, size_t *out_len) {
  tok_buf b = {0};
  if (kind == RT_EXACT) {
    FUZZ_CHECK(tok_buf_put(&b, s, n), "out of memory");
  } else if (kind == RT_NFC) {
    FUZZ_CHECK(tok_nfc(s, n, &b), "out of memory");
  } else if (kind == RT_METASPACE) {
    for (size_t i = 0; i < n; i++) {
      int ms = i + 3 <= n && !memcmp(s + i, "\xe2\x96\x81", 3);
      FUZZ_CHECK(tok_buf_put(&b, ms ? " " : s + i, 1), "out of memory");
      if (ms) i += 2;
    }
  } else {
    return NULL;
  }
  if (!b.p) FUZZ_CHECK(tok_buf_put(&b, "", 0) && (b.p || (b.p = malloc(1))), "out of memory");
  *out_len = b.n;
  return b.p;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (!loaded[0]) LLVMFuzzerInitialize(NULL, NULL);
  if (size < 1) return 0;
  size_t which = (data[0] & 7) % N_TOKS;
  int flags = (data[0] >> 3) & 3, ids_mode = (data[0] >> 5) & 1;
  const tokenizer *t = loaded[which];
  const char *text = (const char *)data + 1;
  size_t len = size - 1;
  if (ids_mode) {
    size_t n = len / 4;
    int32_t *ids = malloc((n ? n : 1) * sizeof *ids);
    FUZZ_CHECK(ids != NULL, "out of memory");
    memcpy(ids, text, n * 4);
    fuzz_check_ids(t, ids, n);
    free(ids);
    return 0;
  }
  if (bound_mode < 0) bound_mode = getenv("FUZZ_BOUND") != NULL;
  if (bound_mode) { /* replay_main.c --bound: what the library does with the text, once (not the checks' passes) */
    int32_t *ids = NULL;
    size_t n = 0, dl = 0;
    char *d = NULL;
    llm_err err = {0};
    if (tok_encode(t, text, len, flags >> 1, flags & 1, &ids, &n, &err) == WGLLM_OK)
      FUZZ_CHECK(tok_decode(t, ids, n, 0, &d, &dl, &err) == WGLLM_OK, "decode: %s", err.msg);
    free(d);
    free(ids);
    return 0;
  }
  fuzz_check_tokenizer(t, text, len, flags);
  size_t bad, want_len = 0;
  if ((flags & 2) || !fuzz_utf8_valid(text, len, &bad)) return 0;
  char *want = expected_round_trip(TOKS[which].round_trip, text, len, &want_len);
  if (!want) return 0;
  int32_t *ids = NULL;
  size_t n = 0, dl = 0;
  char *d = NULL;
  llm_err err = {0};
  FUZZ_CHECK(tok_encode(t, text, len, 0, flags & 1, &ids, &n, &err) == WGLLM_OK, "encode: %s", err.msg);
  FUZZ_CHECK(tok_decode(t, ids, n, 0, &d, &dl, &err) == WGLLM_OK, "decode: %s", err.msg);
  FUZZ_CHECK(dl == want_len && !memcmp(d, want, dl),
             "%s round trip: %zu bytes \"%.*s\" decode(encode()) to %zu bytes \"%.*s\", want %zu bytes \"%.*s\"",
             TOKS[which].dir, len, (int)(len < 200 ? len : 200), text, dl, (int)(dl < 200 ? dl : 200), d, want_len,
             (int)(want_len < 200 ? want_len : 200), want);
  free(d);
  free(ids);
  free(want);
  return 0;
}
