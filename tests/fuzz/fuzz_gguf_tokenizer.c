/* Fuzz harness: the tokenizer.ggml.* arrays of a GGUF file, as the model loader builds a tokenizer from them
   (llm_load_tokenizer_store -> tok_create). Raw GGUF bytes rarely keep a valid array layout under mutation, so
   the input is a compact description that the harness writes into a real GGUF file (gguf_write.h), which then
   goes the loader's whole way: gguf_open on a memfd, the arrays read back, the tokenizer built, then encoded,
   decoded and stream-decoded (fuzz_exercise_tokenizer, and the input's own text section).

   Input: byte 0 and byte 1 are flags, bytes 2 and 3 the bos and eos ids, then up to three sections separated
   by a "\n\n": tokens (one a line; "\x01" followed by a byte is that byte, so a token may hold a newline),
   merges (one a line, "left right"), and text to encode (the rest, any bytes). A section that starts with a
   newline is empty, and that one newline ends it.
     byte 0: bits 0-1 tokenizer.ggml.model (llama, gpt2, gemma4, "bert" which is refused); bits 2-4
             tokenizer.ggml.pre (absent, default, llama-bpe, qwen2, tekken, smaug-bpe, gpt-2, "bogus"); bit 5
             write tokenizer.ggml.scores; bit 6 write tokenizer.ggml.token_type; bit 7 add_space_prefix = 0.
     byte 1: bit 0 bos id present, bit 1 eos id present, bit 2 add_bos_token, bit 3 add_eos_token, bit 4 the
             scores and types arrays one element short (refused), bit 5 the types from each token's first byte b
             instead of its shape (ASCII b: 1 + b % 6; other: b % 8, and 0 or 7, outside GGUF's 1..6, is refused),
             bit 6 the merges written as an array of u32, bit 7 append the 256 byte tokens (<0xXX> for llama, the
             byte-to-unicode characters for gpt2).
   Under replay_main.c --bound (FUZZ_BOUND set) the text is encoded and decoded once, without the checks. */
#include "fuzz_util.h"
#include "gguf.h"
#include "gguf_write.h"
#include "tokenizer_load.h"
#include <stdlib.h>
#include <string.h>

typedef struct strs {
  char **s;
  size_t *len, n, cap;
} strs;

static void strs_push(strs *v, const char *s, size_t n) {
  if (v->n == v->cap) {
    v->cap = v->cap ? 2 * v->cap : 64;
    v->s = realloc(v->s, v->cap * sizeof *v->s);
    v->len = realloc(v->len, v->cap * sizeof *v->len);
    FUZZ_CHECK(v->s && v->len, "out of memory");
  }
  v->s[v->n] = malloc(n + 1);
  FUZZ_CHECK(v->s[v->n] != NULL, "out of memory");
  memcpy(v->s[v->n], s, n);
  v->s[v->n][n] = 0;
  v->len[v->n++] = n;
}

static void strs_free(strs *v) {
  for (size_t i = 0; i < v->n; i++)
    free(v->s[i]);
  free(v->s);
  free(v->len);
}

/* splits [p, end) at '\n' into v, decoding "\x01" + byte escapes; returns where the section ends ("\n\n").
   A section that starts with '\n' is empty (that newline ends it). */
static const uint8_t *read_lines(const uint8_t *p, const uint8_t *end, strs *v) {
  if (p < end && *p == '\n') return p + 1;
  char *line = malloc((size_t)(end - p) + 1);
  FUZZ_CHECK(line != NULL, "out of memory");
  size_t n = 0;
  while (p < end) {
    if (*p == '\n') {
      strs_push(v, line, n);
      n = 0;
      p++;
      if (p < end && *p == '\n') {
        p++;
        break;
      }
      continue;
    }
    if (*p == 1 && p + 1 < end) p++;
    line[n++] = (char)*p++;
  }
  if (n) strs_push(v, line, n);
  free(line);
  return p;
}

/* GGUF's token_type from a token's shape: byte, unknown, control, user-defined, unused or normal */
static int32_t type_of(const char *s, size_t n) {
  if (n == 6 && !memcmp(s, "<0x", 3) && s[5] == '>') return 6;
  if (n == 5 && !memcmp(s, "<unk>", 5)) return 2;
  if (n >= 2 && s[0] == '<' && s[n - 1] == '>') return 3;
  if (n >= 1 && s[0] == '[') return 4;
  if (n >= 1 && s[0] == '~') return 5;
  return 1;
}

/* byte 1 bit 5's token_type: from the first byte, mostly one of GGUF's 1..6 (a file with any other is refused) */
static int32_t raw_type(const char *s, size_t n) {
  uint8_t b = n ? (uint8_t)s[0] : 0;
  return b < 0x80 ? 1 + b % 6 : b % 8;
}

/* a GGUF array of strings as raw value bytes: u32 type, u64 count, then u64 length + bytes each */
static uint8_t *raw_str_array(const strs *v, size_t *out_len) {
  size_t n = 12;
  for (size_t i = 0; i < v->n; i++)
    n += 8 + v->len[i];
  uint8_t *b = malloc(n), *p = b;
  FUZZ_CHECK(b != NULL, "out of memory");
  uint32_t et = GGUF_TYPE_STRING;
  uint64_t c = v->n;
  memcpy(p, &et, 4), p += 4;
  memcpy(p, &c, 8), p += 8;
  for (size_t i = 0; i < v->n; i++) {
    uint64_t l = v->len[i];
    memcpy(p, &l, 8), p += 8;
    memcpy(p, v->s[i], v->len[i]), p += v->len[i];
  }
  *out_len = n;
  return b;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (size < 4) return 0;
  static const char *const models[4] = {"llama", "gpt2", "gemma4", "bert"};
  static const char *const pres[8] = {NULL, "default", "llama-bpe", "qwen2", "tekken", "smaug-bpe", "gpt-2", "bogus"};
  uint8_t f0 = data[0], f1 = data[1];
  const char *model = models[f0 & 3], *pre = pres[(f0 >> 2) & 7];
  const uint8_t *p = data + 4, *end = data + size;
  strs tokens = {0}, merges = {0};
  p = read_lines(p, end, &tokens);
  p = read_lines(p, end, &merges);
  const char *text = (const char *)p;
  size_t text_len = (size_t)(end - p);
  if (f1 & 0x80) /* the 256 byte tokens */
    for (int b = 0, k = 0; b < 256; b++) {
      char s[8];
      if (strcmp(model, "gpt2")) {
        snprintf(s, sizeof s, "<0x%02X>", b);
        strs_push(&tokens, s, 6);
      } else { /* GPT-2's byte-to-unicode map: printable Latin-1 stays, the rest is U+0100 + k */
        uint32_t cp = (b >= 0x21 && b <= 0x7E) || (b >= 0xA1 && b <= 0xAC) || b >= 0xAE ? (uint32_t)b : 0x100u + k++;
        size_t l = cp < 0x80 ? 1 : 2;
        if (l == 1)
          s[0] = (char)cp;
        else
          s[0] = (char)(0xC0 | cp >> 6), s[1] = (char)(0x80 | (cp & 0x3F));
        strs_push(&tokens, s, l);
      }
    }

  gguf_writer *w = gguf_writer_begin(3, 32);
  FUZZ_CHECK(w != NULL, "out of memory");
  gguf_writer_kv_str(w, "tokenizer.ggml.model", model);
  if (pre) gguf_writer_kv_str(w, "tokenizer.ggml.pre", pre);
  size_t raw_len;
  uint8_t *raw = raw_str_array(&tokens, &raw_len);
  gguf_writer_kv_raw(w, "tokenizer.ggml.tokens", GGUF_TYPE_ARRAY, raw, raw_len);
  free(raw);
  size_t n_arr = tokens.n - ((f1 & 0x10) && tokens.n ? 1 : 0);
  if (f0 & 0x20) {
    float *sc = malloc((n_arr + 1) * sizeof *sc);
    FUZZ_CHECK(sc != NULL, "out of memory");
    for (size_t i = 0; i < n_arr; i++) /* longer pieces score higher, as SentencePiece's usually do */
      sc[i] = (float)tokens.len[i] - (float)i * 1e-3f;
    gguf_writer_kv_arr(w, "tokenizer.ggml.scores", GGUF_TYPE_FLOAT32, n_arr, sc);
    free(sc);
  }
  if (f0 & 0x40) {
    int32_t *ty = malloc((n_arr + 1) * sizeof *ty);
    FUZZ_CHECK(ty != NULL, "out of memory");
    for (size_t i = 0; i < n_arr; i++)
      ty[i] = (f1 & 0x20) ? raw_type(tokens.s[i], tokens.len[i]) : type_of(tokens.s[i], tokens.len[i]);
    gguf_writer_kv_arr(w, "tokenizer.ggml.token_type", GGUF_TYPE_INT32, n_arr, ty);
    free(ty);
  }
  if (merges.n) {
    if (f1 & 0x40) {
      uint32_t *m = calloc(merges.n, sizeof *m);
      FUZZ_CHECK(m != NULL, "out of memory");
      gguf_writer_kv_arr(w, "tokenizer.ggml.merges", GGUF_TYPE_UINT32, merges.n, m);
      free(m);
    } else {
      raw = raw_str_array(&merges, &raw_len);
      gguf_writer_kv_raw(w, "tokenizer.ggml.merges", GGUF_TYPE_ARRAY, raw, raw_len);
      free(raw);
    }
  }
  if (f1 & 1) gguf_writer_kv_u32(w, "tokenizer.ggml.bos_token_id", data[2]);
  if (f1 & 2) gguf_writer_kv_u32(w, "tokenizer.ggml.eos_token_id", data[3]);
  uint8_t yes = (f1 >> 2) & 1, eos_yes = (f1 >> 3) & 1, no = 0;
  gguf_writer_kv(w, "tokenizer.ggml.add_bos_token", GGUF_TYPE_BOOL, &yes);
  gguf_writer_kv(w, "tokenizer.ggml.add_eos_token", GGUF_TYPE_BOOL, &eos_yes);
  if (f0 & 0x80) gguf_writer_kv(w, "tokenizer.ggml.add_space_prefix", GGUF_TYPE_BOOL, &no);
  uint8_t *file = NULL;
  size_t file_len = 0;
  llm_err err = {0};
  wgllm_status s = gguf_writer_finish_mem(w, &file, &file_len, &err);
  gguf_writer_free(w);
  strs_free(&tokens);
  strs_free(&merges);
  if (s != WGLLM_OK) fuzz_note("writer: %s", err.msg);
  if (s != WGLLM_OK) return 0; /* e.g. a duplicate key cannot happen; an oversized input may */

  wt_store *st = NULL;
  s = gguf_open(fuzz_memfd_path(file, file_len), &st, &err);
  free(file);
  FUZZ_CHECK(s == WGLLM_OK, "the writer's GGUF does not open: %s", err.msg);
  tokenizer *t = NULL;
  char *tmpl = NULL;
  err.msg[0] = 0;
  s = llm_load_tokenizer_store("fuzz.gguf", st, &t, &tmpl, &err);
  if (s == WGLLM_OK) {
    FUZZ_CHECK(tmpl == NULL, "a chat template that the file does not hold");
    FUZZ_CHECK(tok_vocab_size(t) >= 1, "an empty vocabulary");
    if (getenv("FUZZ_BOUND")) { /* replay_main.c --bound: the text encoded and decoded once, not the checks' passes */
      int32_t *ids = NULL;
      size_t n = 0, dl = 0;
      char *d = NULL;
      if (tok_encode(t, text, text_len, 1, 1, &ids, &n, &err) == WGLLM_OK)
        FUZZ_CHECK(tok_decode(t, ids, n, 0, &d, &dl, &err) == WGLLM_OK, "decode: %s", err.msg);
      free(d);
      free(ids);
    } else {
      fuzz_exercise_tokenizer(t);
      for (int flags = 0; flags < 4; flags++)
        fuzz_check_tokenizer(t, text, text_len, flags);
    }
    tok_free(t);
  } else {
    fuzz_note("tokenizer: %s", err.msg);
    FUZZ_CHECK(t == NULL && err.msg[0], "tokenizer load failed (status %d) without a message", s);
  }
  wt_store_free(st);
  return 0;
}
