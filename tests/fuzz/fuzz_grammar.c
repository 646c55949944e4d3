/* Fuzz harness: a grammar from untrusted bytes (GBNF, or a JSON schema turned into GBNF) compiled by src/grammar, then
   a walk of its matcher over a small built-in vocabulary steered by the rest of the input.
   Input: byte 0 = flags (bit 0: the text is a JSON schema, else GBNF), then the text up to the first NUL byte, then
   the walk: each byte picks one of the tokens the mask allows (byte % count).
   Checks: a refusal has a message and no grammar; a schema's GBNF compiles (what the converter writes, the parser
   reads); along the walk: the mask's count equals its bits, the picked token is accepted (the mask allows only what
   accept takes), a token outside the mask is refused with the state unchanged (its mask the same after), can_end
   means the fewest bytes to the end are 0 and must_end that only end-of-generation tokens are allowed, and a
   rollback of the last accept gives back the mask before it. */
#include "fuzz_util.h"
#include "grammar.h"
#include <cjson/cJSON.h>
#include <stdlib.h>
#include <string.h>

#define NV 96 /* the vocabulary: single bytes, JSON pieces, words; the last an end-of-generation token */
static grammar_vocab *vocab(void) {
  static grammar_vocab *v;
  if (v) return v;
  static const char *const pieces[] = {"{",
                                       "}",
                                       "[",
                                       "]",
                                       ",",
                                       ":",
                                       "\"",
                                       " ",
                                       "\n",
                                       "\t",
                                       "\\",
                                       "-",
                                       ".",
                                       "0",
                                       "1",
                                       "5",
                                       "9",
                                       "e",
                                       "E",
                                       "+",
                                       "a",
                                       "b",
                                       "z",
                                       "A",
                                       "Z",
                                       "_",
                                       "x",
                                       "y",
                                       "t",
                                       "f",
                                       "n",
                                       "u",
                                       "true",
                                       "false",
                                       "null",
                                       "\":",
                                       "\",",
                                       "{\"",
                                       "\"}",
                                       "\"]",
                                       "[\"",
                                       "12",
                                       "3.5",
                                       "-7",
                                       "1e5",
                                       "  ",
                                       "\n  ",
                                       "name",
                                       "\"name\"",
                                       "age",
                                       "id",
                                       "\\n",
                                       "\\u00e9",
                                       "\xc3\xa9",
                                       "\xe6\x97\xa5",
                                       "\xf0\x9f\x98\x80",
                                       "\xc3",
                                       "\xa9",
                                       "\xe6",
                                       "\x97",
                                       "\xa5",
                                       "@",
                                       "http",
                                       "://",
                                       "T",
                                       "Z\"",
                                       "2024",
                                       "-01",
                                       ":00",
                                       "ab",
                                       "abc",
                                       "hello",
                                       " world",
                                       "yes",
                                       "no",
                                       "=",
                                       "(",
                                       ")",
                                       "|",
                                       "*",
                                       "?",
                                       "#",
                                       "<",
                                       ">",
                                       "/",
                                       "ok\"",
                                       "1,",
                                       "0}",
                                       "]}",
                                       "}]",
                                       "},",
                                       "],",
                                       "\"\"",
                                       "''"};
  const char *bytes[NV];
  uint32_t lens[NV];
  uint8_t kinds[NV];
  for (int i = 0; i < NV; i++) {
    bytes[i] = i < (int)(sizeof pieces / sizeof pieces[0]) ? pieces[i] : "q";
    lens[i] = (uint32_t)strlen(bytes[i]);
    kinds[i] = i == NV - 1 ? GRAMMAR_TOK_EOG : GRAMMAR_TOK_TEXT;
  }
  llm_err err = {0};
  v = grammar_vocab_create(NV, bytes, lens, kinds, &err);
  FUZZ_CHECK(v != NULL, "the vocabulary: %s", err.msg);
  return v;
}

static uint32_t bits(const uint32_t *m) {
  uint32_t n = 0;
  for (int w = 0; w < (NV + 31) / 32; w++)
    n += (uint32_t)__builtin_popcount(m[w]);
  return n;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (size < 1) return 0;
  int schema = data[0] & 1;
  const char *text = (const char *)data + 1;
  size_t n = strnlen(text, size - 1), walk_at = 1 + n + (1 + n < size);
  llm_err err = {0};
  grammar *g = NULL;
  wgllm_status st;
  if (schema) {
    char *t = malloc(n + 1);
    memcpy(t, text, n);
    t[n] = 0;
    cJSON *j = cJSON_ParseWithLength(t, n);
    free(t);
    if (!j) return 0;
    char *gbnf = NULL;
    st = grammar_schema_to_gbnf(j, &gbnf, &err);
    FUZZ_CHECK(st ? err.msg[0] && !gbnf : gbnf != NULL, "the schema's conversion: status %d, '%s'", st, err.msg);
    /* the converter compiles its text: the one refusal that may come from there is a schema that would have to
       contain itself (left recursion); any other means the converter wrote bad GBNF */
    static const char compiled[] = "json schema: the grammar made from the schema: gbnf ";
    FUZZ_CHECK(!st || strncmp(err.msg, compiled, sizeof compiled - 1) || strstr(err.msg, ": left recursion: rule "),
               "the converter's GBNF does not parse: %s", err.msg);
    if (!st) {
      llm_err e2 = {0};
      grammar *g2 = NULL;
      wgllm_status s2 = grammar_from_gbnf(gbnf, strlen(gbnf), &g2, &e2);
      FUZZ_CHECK(!s2 || s2 == WGLLM_ERR_UNSUPPORTED, "the converter's GBNF does not parse: %s\n%s", e2.msg, gbnf);
      grammar_free(g2);
      free(gbnf);
      st = grammar_from_json_schema(j, &g, &err);
    }
    cJSON_Delete(j);
  } else {
    st = grammar_from_gbnf(text, n, &g, &err);
  }
  if (st) {
    FUZZ_CHECK(!g && err.msg[0], "a refusal (status %d) without a message, or with a grammar", st);
    fuzz_note("refused: %s", err.msg);
    return 0;
  }
  grammar_matcher *m = grammar_matcher_create(g, vocab(), &err);
  FUZZ_CHECK(m != NULL, "a matcher: %s", err.msg);
  uint32_t mask[(NV + 31) / 32], again[(NV + 31) / 32];
  for (size_t i = walk_at; i < size && i < walk_at + 256; i++) {
    uint32_t c = grammar_matcher_mask(m, mask);
    FUZZ_CHECK(c == bits(mask), "the mask's count %u, its bits %u", c, bits(mask));
    if (grammar_matcher_error(m)->status || grammar_matcher_ended(m)) break;
    if (grammar_matcher_can_end(m)) FUZZ_CHECK(grammar_matcher_min_bytes(m) == 0, "can end, min bytes not 0");
    if (grammar_matcher_must_end(m))
      for (int t = 0; t < NV - 1; t++)
        FUZZ_CHECK(!(mask[t >> 5] >> (t & 31) & 1), "must end, yet text token %d allowed", t);
    if (!c) break;
    /* a token outside the mask: refused, the state as it was */
    for (int t = 0; t < NV; t++)
      if (!(mask[t >> 5] >> (t & 31) & 1)) {
        FUZZ_CHECK(!grammar_matcher_accept(m, t), "token %d outside the mask accepted", t);
        if (grammar_matcher_error(m)->status) break;
        grammar_matcher_mask(m, again);
        FUZZ_CHECK(!memcmp(mask, again, sizeof mask), "a refused token changed the state");
        break;
      }
    if (grammar_matcher_error(m)->status) break;
    uint32_t pick = data[i] % c, id = 0;
    for (int t = 0; t < NV; t++)
      if (mask[t >> 5] >> (t & 31) & 1 && pick-- == 0) {
        id = (uint32_t)t;
        break;
      }
    FUZZ_CHECK(grammar_matcher_accept(m, (int32_t)id) || grammar_matcher_error(m)->status, "allowed token %u refused",
               id);
    if (grammar_matcher_error(m)->status) break;
    if (i % 7 == 3 && grammar_matcher_rollback(m, 1)) { /* undo and redo */
      grammar_matcher_mask(m, again);
      FUZZ_CHECK(!memcmp(mask, again, sizeof mask), "a rollback did not give the mask before the accept back");
      FUZZ_CHECK(grammar_matcher_accept(m, (int32_t)id), "the same token refused after a rollback");
    }
  }
  grammar_matcher_free(m);
  grammar_free(g);
  return 0;
}
