/* Tokenizer golden tests: the four reference tokenizers (Llama 2-style SentencePiece BPE, Llama 3, Qwen 3,
   Gemma 3; fetched by scripts/fetch_tokenizers.sh into ../third_party/tokenizers) encode every string of
   data/tokenizers/strings.json to exactly the ids in data/tokenizers/expected.json (with and without
   special tokens), decode back to the expected text, round-trip, and stream-decode to the whole decode.
   Also: error paths (invalid UTF-8, unknown ids, unsupported tokenizer.json types), parse_special=0,
   EOG/BOS/EOS, tiny synthetic tok_create tokenizers of each type, and load/encode timings. "gemma4" (llama.cpp's
   GGUF tokenizer for Gemma 4) is checked with the Gemma 3 vocabulary against the HF Gemma 3 tokenizer. */
#include "gguf_write.h"
#include "harness.h"
#include "tokenizer.h"
#include "tokenizer_load.h"
#include <cjson/cJSON.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define TOK_DIR "../third_party/tokenizers"
static double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

/* load times are printed (wall and CPU), not asserted: speed belongs to benchmarks (docs/PERF.md) */
static double cpu_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
  return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

static const cJSON *jget(const cJSON *o, const char *key) {
  for (const cJSON *c = o ? o->child : NULL; c; c = c->next)
    if (c->string && !strcmp(c->string, key)) return c;
  return NULL;
}

static int ids_from_json(const cJSON *a, int32_t **out, size_t *n) {
  *n = 0;
  *out = NULL;
  if (!a || a->type != cJSON_Array) return 0;
  size_t cnt = 0;
  for (const cJSON *c = a->child; c; c = c->next)
    cnt++;
  *out = malloc((cnt ? cnt : 1) * sizeof **out);
  for (const cJSON *c = a->child; c; c = c->next)
    (*out)[(*n)++] = (int32_t)c->valuedouble;
  return 1;
}

static void fmt_ids(char *buf, size_t cap, const int32_t *ids, size_t n) {
  size_t o = 0;
  buf[0] = 0;
  for (size_t i = 0; i < n && o + 16 < cap; i++)
    o += (size_t)snprintf(buf + o, cap - o, "%s%d", i ? "," : "", ids[i]);
  if (n && o + 16 >= cap) snprintf(buf + o, cap - o, ",...");
}

/* first differing position of two id lists, for the failure message */
static size_t first_diff(const int32_t *a, size_t na, const int32_t *b, size_t nb) {
  size_t i = 0;
  while (i < na && i < nb && a[i] == b[i])
    i++;
  return i;
}

static int check_ids(const char *tname, const char *sname, const char *what, const int32_t *got, size_t ng,
                     const cJSON *exp) {
  int32_t *want;
  size_t nw;
  if (!ids_from_json(exp, &want, &nw)) {
    free(want);
    CHECK(0, "%s/%s: expected.json has no %s", tname, sname, what);
    return 0;
  }
  int same = ng == nw && (nw == 0 || memcmp(got, want, nw * sizeof *got) == 0);
  if (!same) {
    char a[600], b[600];
    size_t d = first_diff(got, ng, want, nw);
    fmt_ids(a, sizeof a, got + d, ng - d);
    fmt_ids(b, sizeof b, want + d, nw - d);
    CHECK(same, "%s/%s %s: differ from id #%zu: got [%s] (%zu ids), want [%s] (%zu ids)", tname, sname, what, d, a, ng,
          b, nw);
  } else {
    CHECK(same, "%s", "");
  }
  free(want);
  return same;
}

static char *decode_str(const tokenizer *t, const int32_t *ids, size_t n, int skip, size_t *len) {
  char *text = NULL;
  llm_err err = {0};
  wgllm_status st = tok_decode(t, ids, n, skip, &text, len, &err);
  CHECK(st == WGLLM_OK, "tok_decode: %s", err.msg);
  return st == WGLLM_OK ? text : NULL;
}

static void check_text(const char *tname, const char *sname, const char *what, const char *got, size_t glen,
                       const cJSON *exp) {
  CHECK(exp && exp->type == cJSON_String, "%s/%s: expected.json has no %s", tname, sname, what);
  if (!exp || exp->type != cJSON_String) return;
  const char *want = exp->valuestring;
  int same = got && glen == strlen(want) && memcmp(got, want, glen) == 0;
  CHECK(same, "%s/%s %s: got \"%.*s\" want \"%s\"", tname, sname, what, got ? (int)glen : 6, got ? got : "(null)",
        want);
}

/* streaming decode of ids equals the whole decode; a 4-byte buffer exercises the queue-and-drain path */
static void check_stream(const tokenizer *t, const char *tname, const char *sname, const int32_t *ids, size_t n) {
  size_t wl;
  char *whole = decode_str(t, ids, n, 0, &wl);
  if (!whole) return;
  for (int tiny = 0; tiny < 2; tiny++) {
    tok_stream *s = tok_stream_create(t);
    char *acc = malloc(wl + 64), buf[256];
    size_t al = 0, cap = tiny ? 4 : sizeof buf;
    int ok = 1;
    for (size_t i = 0; i <= n && ok; i++) {
      size_t r = i < n ? tok_stream_push(s, ids[i], buf, cap) : tok_stream_flush(s, buf, cap);
      for (;;) {
        if (r > cap || al + r > wl + 32) {
          ok = 0;
          break;
        }
        memcpy(acc + al, buf, r);
        al += r;
        if (!tiny || r == 0) break;
        r = i < n ? tok_stream_push(s, -1, buf, cap) : tok_stream_flush(s, buf, cap); /* drain the queue */
      }
    }
    CHECK(ok && al == wl && memcmp(acc, whole, wl) == 0, "%s/%s stream%s: got \"%.*s\" want \"%s\"", tname, sname,
          tiny ? " (4-byte buffer)" : "", (int)al, acc, whole);
    free(acc);
    tok_stream_free(s);
  }
  free(whole);
}

static void golden(const char *tname, const cJSON *strings, const cJSON *expected) {
  char path[256], cfg[256];
  llm_err err = {0};
  snprintf(path, sizeof path, TOK_DIR "/%s/tokenizer.json", tname);
  snprintf(cfg, sizeof cfg, TOK_DIR "/%s/tokenizer_config.json", tname);
  FILE *f = fopen(path, "rb");
  CHECK(f != NULL, "%s is missing: run scripts/fetch_tokenizers.sh (from the repository root) first", path);
  if (!f) return;
  fclose(f);
  tokenizer *t = NULL;
  double t0 = now_s(), c0 = cpu_s();
  wgllm_status st = tok_load_hf(path, cfg, &t, &err);
  double dt = now_s() - t0, dc = cpu_s() - c0;
  CHECK(st == WGLLM_OK, "tok_load_hf(%s): %s", path, err.msg);
  if (st) return;
  printf("%-7s load %.3f s (%.3f s CPU; vocab %zu, bos %d, eos %d)\n", tname, dt, dc, tok_vocab_size(t), tok_bos(t),
         tok_eos(t));
  const cJSON *cases = jget(jget(jget(expected, "tokenizers"), tname), "cases");
  CHECK(cases != NULL, "expected.json has no cases for %s", tname);
  int n_str = 0, n_ok = 0;
  for (const cJSON *s = jget(strings, "strings") ? jget(strings, "strings")->child : NULL; s; s = s->next) {
    const char *sname = jget(s, "name")->valuestring, *text = jget(s, "text")->valuestring;
    size_t tl = strlen(text);
    const cJSON *c = jget(cases, sname);
    CHECK(c != NULL, "expected.json lacks %s/%s", tname, sname);
    if (!c) continue;
    n_str++;
    int fails0 = th_failures;
    int32_t *ids = NULL, *ids_sp = NULL;
    size_t n = 0, n_sp = 0;
    st = tok_encode(t, text, tl, 0, 1, &ids, &n, &err);
    CHECK(st == WGLLM_OK, "%s/%s encode: %s", tname, sname, err.msg);
    st = tok_encode(t, text, tl, 1, 1, &ids_sp, &n_sp, &err);
    CHECK(st == WGLLM_OK, "%s/%s encode(add_special): %s", tname, sname, err.msg);
    check_ids(tname, sname, "ids", ids, n, jget(c, "ids"));
    check_ids(tname, sname, "ids_special", ids_sp, n_sp, jget(c, "ids_special"));
    size_t l;
    char *d = decode_str(t, ids, n, 0, &l);
    check_text(tname, sname, "decoded", d, l, jget(c, "decoded"));
    const cJSON *dexp = jget(c, "decoded");
    if (d && dexp && !strcmp(dexp->valuestring, text)) /* HF round-trips this string: so must we */
      CHECK(l == tl && memcmp(d, text, tl) == 0, "%s/%s round trip: \"%.*s\"", tname, sname, (int)l, d);
    free(d);
    d = decode_str(t, ids_sp, n_sp, 0, &l);
    check_text(tname, sname, "decoded_special", d, l, jget(c, "decoded_special"));
    free(d);
    d = decode_str(t, ids_sp, n_sp, 1, &l);
    check_text(tname, sname, "decoded_special_skip", d, l, jget(c, "decoded_special_skip"));
    free(d);
    check_stream(t, tname, sname, ids_sp, n_sp);
    free(ids);
    free(ids_sp);
    if (th_failures == fails0) n_ok++;
  }
  printf("%-7s %d/%d strings match\n", tname, n_ok, n_str);

  /* throughput on a long mixed text */
  {
    size_t big_len = 0;
    char *big = malloc(1 << 20);
    for (const cJSON *s = jget(strings, "strings")->child; s && big_len < 400000;
         s = s->next ? s->next : jget(strings, "strings")->child) {
      const char *x = jget(s, "text")->valuestring;
      size_t xl = strlen(x);
      memcpy(big + big_len, x, xl);
      big_len += xl;
    }
    int32_t *ids = NULL;
    size_t n = 0;
    t0 = now_s();
    st = tok_encode(t, big, big_len, 1, 1, &ids, &n, &err);
    dt = now_s() - t0;
    CHECK(st == WGLLM_OK, "%s: long encode: %s", tname, err.msg);
    printf("%-7s encode %zu bytes -> %zu ids in %.3f s (%.1f MB/s)\n", tname, big_len, n, dt, big_len / dt / 1e6);
    free(ids);
    free(big);
  }
  tok_free(t);
}

static tokenizer *load(const char *name) {
  char path[256], cfg[256];
  llm_err err = {0};
  snprintf(path, sizeof path, TOK_DIR "/%s/tokenizer.json", name);
  snprintf(cfg, sizeof cfg, TOK_DIR "/%s/tokenizer_config.json", name);
  tokenizer *t = NULL;
  if (tok_load_hf(path, cfg, &t, &err) != WGLLM_OK) return NULL;
  return t;
}

static void enc(const tokenizer *t, const char *s, int add, int parse, int32_t **ids, size_t *n) {
  llm_err err = {0};
  wgllm_status st = tok_encode(t, s, strlen(s), add, parse, ids, n, &err);
  CHECK(st == WGLLM_OK, "encode \"%s\": %s", s, err.msg);
}

static int contains(const int32_t *ids, size_t n, int32_t id) {
  for (size_t i = 0; i < n; i++)
    if (ids[i] == id) return 1;
  return 0;
}

static void special_behaviour(void) {
  llm_err err = {0};
  tokenizer *q = load("qwen3"), *l3 = load("llama3"), *g = load("gemma3"), *l2 = load("llama2");
  if (!q || !l3 || !g || !l2) {
    CHECK(0, "reference tokenizers missing: run scripts/fetch_tokenizers.sh");
    tok_free(q);
    tok_free(l3);
    tok_free(g);
    tok_free(l2);
    return;
  }
  int32_t *ids;
  size_t n;
  /* parse_special: recognized by default, literal text when 0; non-special added tokens always */
  int32_t im_start = tok_find(q, "<|im_start|>"), think = tok_find(q, "<think>");
  CHECK(im_start == 151644 && think == 151667, "qwen3 ids %d %d", im_start, think);
  enc(q, "<|im_start|>user<think>", 0, 1, &ids, &n);
  CHECK(n >= 2 && ids[0] == im_start && ids[n - 1] == think, "qwen3 parse_special=1");
  free(ids);
  enc(q, "<|im_start|>user<think>", 0, 0, &ids, &n);
  CHECK(!contains(ids, n, im_start) && n > 2 && ids[n - 1] == think,
        "qwen3 parse_special=0 keeps <think> (non-special)");
  {
    size_t l;
    char *d = decode_str(q, ids, n, 0, &l);
    CHECK(d && !strcmp(d, "<|im_start|>user<think>"), "qwen3 literal round trip: %s", d ? d : "");
    free(d);
  }
  free(ids);
  enc(l3, "<|begin_of_text|>hi", 1, 0, &ids, &n);
  CHECK(!contains(ids, n, 128000), "llama3 parse_special=0 must not produce <|begin_of_text|>");
  free(ids);
  /* tok_encode_marked: a special token's text starting at a flagged byte is text, the others special; the text
     between two real special tokens is tokenized whole, as parse_special=0 would (one gap, not two); NUL bytes
     are bytes (Llama 3's byte-level, Llama 2's <0x00>); tok_special_at finds special texts only (<think> is not) */
  {
    const char *mt = "a<|eot_id|>b<|eot_id|>";
    uint8_t plain[22] = {0};
    plain[1] = 1;
    int32_t *want, *tail, *got = NULL;
    size_t nw, nt, ng = 0;
    enc(l3, "a<|eot_id|>b", 0, 0, &want, &nw);
    enc(l3, "<|eot_id|>", 0, 1, &tail, &nt);
    wgllm_status st = tok_encode_marked(l3, mt, strlen(mt), 0, 1, plain, &got, &ng, &err);
    CHECK(st == WGLLM_OK && nt == 1 && ng == nw + 1 && !memcmp(got, want, nw * sizeof *got) && got[nw] == tail[0],
          "tok_encode_marked: the flagged <|eot_id|> text, the other its token (%zu ids, want %zu + 1)", ng, nw);
    free(want);
    free(tail);
    free(got);
    CHECK(tok_special_at(l3, "<|eot_id|>x", 11) == 10 && tok_special_at(l3, "x<|eot_id|>", 11) == 0 &&
              tok_special_at(l3, "<|eot_id", 8) == 0 && tok_special_at(q, "<think>", 7) == 0 &&
              tok_special_at(q, "<|im_start|>", 12) == 12,
          "tok_special_at");
    const tokenizer *byte_tok[2] = {l3, l2};
    for (int k = 0; k < 2; k++) {
      got = NULL;
      st = tok_encode(byte_tok[k], "a\0b", 3, 0, 0, &got, &ng, &err);
      size_t dl = 0;
      char *d = st ? NULL : decode_str(byte_tok[k], got, ng, 0, &dl);
      CHECK(d && dl == 3 && !memcmp(d, "a\0b", 3), "%s: a NUL byte encoded and decoded back (%zu bytes)",
            k ? "llama2" : "llama3", dl);
      free(d);
      free(got);
    }
  }
  /* BOS/EOS/EOG */
  CHECK(tok_bos(l3) == 128000 && tok_eos(l3) == 128001, "llama3 bos %d eos %d", tok_bos(l3), tok_eos(l3));
  CHECK(tok_is_eog(l3, 128009) && tok_is_eog(l3, 128001) && !tok_is_eog(l3, 128000), "llama3 eog");
  CHECK(tok_bos(q) == -1 && tok_eos(q) == 151645, "qwen3 bos %d eos %d", tok_bos(q), tok_eos(q));
  CHECK(tok_is_eog(q, 151645) && tok_is_eog(q, 151643) && !tok_is_eog(q, im_start), "qwen3 eog");
  CHECK(tok_bos(g) == 2 && tok_eos(g) == 106, "gemma3 bos %d eos %d", tok_bos(g), tok_eos(g));
  CHECK(tok_is_eog(g, 106) && tok_is_eog(g, 1) && !tok_is_eog(g, tok_find(g, "</s>")), "gemma3 eog (</s> is HTML)");
  CHECK(tok_bos(l2) == 1 && tok_eos(l2) == 2 && tok_is_eog(l2, 2), "llama2 bos/eos");
  CHECK(tok_is_special(g, 105) && !tok_is_special(g, tok_find(g, "<s>")), "gemma3 special flags");
  {
    size_t pl;
    const char *p = tok_piece(l3, 128009, &pl);
    CHECK(p && pl == 10 && !memcmp(p, "<|eot_id|>", 10), "tok_piece");
    CHECK(tok_piece(l3, -1, &pl) == NULL && tok_piece(l3, 1 << 30, &pl) == NULL, "tok_piece bad id");
    CHECK(tok_find(l3, "Hello") == 9906 && tok_find(l3, "no-such-piece-xyz") == -1, "tok_find %d",
          tok_find(l3, "Hello"));
  }
  /* errors: invalid UTF-8 input, unknown ids */
  const char *bad[] = {"abc\xff", "\xc3", "\xe2\x82", "\xed\xa0\x80", "\xc0\xaf", "\xf4\x90\x80\x80"};
  for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
    ids = NULL;
    wgllm_status st = tok_encode(l3, bad[i], strlen(bad[i]), 0, 1, &ids, &n, &err);
    CHECK(st == WGLLM_ERR_INVALID_ARG && strstr(err.msg, "UTF-8"), "invalid UTF-8 #%zu: %d %s", i, st, err.msg);
    free(ids);
  }
  {
    int32_t bad_ids[] = {9906, 999999};
    char *text = NULL;
    size_t tl;
    wgllm_status st = tok_decode(l3, bad_ids, 2, 0, &text, &tl, &err);
    CHECK(st == WGLLM_ERR_INVALID_ARG && strstr(err.msg, "999999") && strstr(err.msg, "position 1"), "unknown id: %s",
          err.msg);
    free(text);
    int32_t neg = -5;
    st = tok_decode(g, &neg, 1, 0, &text, &tl, &err);
    CHECK(st == WGLLM_ERR_INVALID_ARG && strstr(err.msg, "-5"), "negative id: %s", err.msg);
  }
  /* streaming with an incomplete UTF-8 sequence at the end: held back, then U+FFFD on flush */
  {
    int32_t e_ids[] = {tok_find(l2, "<0xE4>"), tok_find(l2, "<0xBD>")};
    tok_stream *s = tok_stream_create(l2);
    char buf[32];
    size_t r1 = tok_stream_push(s, e_ids[0], buf, sizeof buf);
    size_t r2 = tok_stream_push(s, e_ids[1], buf, sizeof buf);
    size_t r3 = tok_stream_flush(s, buf, sizeof buf);
    CHECK(r1 == 0 && r2 == 0 && r3 == 3 && !memcmp(buf, "\xef\xbf\xbd", 3), "held-back stream %zu %zu %zu", r1, r2, r3);
    tok_stream_free(s);
  }
  tok_free(q);
  tok_free(l3);
  tok_free(g);
  tok_free(l2);
}

static void unsupported(void) {
  static const struct {
    const char *file, *needle;
    wgllm_status want;
  } cases[] = {
      {"data/tokenizers/unsupported_wordpiece.json", "WordPiece", WGLLM_ERR_UNSUPPORTED},
      {"data/tokenizers/unsupported_unigram.json", "Unigram", WGLLM_ERR_UNSUPPORTED},
      {"data/tokenizers/unsupported_pretokenizer.json", "BertPreTokenizer", WGLLM_ERR_UNSUPPORTED},
      {"data/tokenizers/no_such_file.json", "cannot read", WGLLM_ERR_IO},
  };
  for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
    llm_err err = {0};
    tokenizer *t = (tokenizer *)1;
    wgllm_status st = tok_load_hf(cases[i].file, NULL, &t, &err);
    CHECK(st == cases[i].want && t == NULL && strstr(err.msg, cases[i].needle) && strstr(err.msg, cases[i].file),
          "%s: status %d, message \"%s\"", cases[i].file, st, err.msg);
  }
}

/* Tiny vocabularies through tok_create, as the GGUF loader will call it. */
static void synthetic(void) {
  llm_err err = {0};
  /* SentencePiece BPE by score: pieces with U+2581, <0xXX> byte fallback, control tokens */
  {
    const char *tok[300];
    float score[300];
    int32_t type[300];
    char bytes[256][8];
    size_t n = 0;
    const char *base[] = {"<unk>", "<s>", "</s>"};
    for (int i = 0; i < 3; i++) {
      tok[n] = base[i];
      score[n] = 0;
      type[n] = i == 0 ? 2 : 3;
      n++;
    }
    for (int b = 0; b < 256; b++) {
      snprintf(bytes[b], sizeof bytes[b], "<0x%02X>", b);
      tok[n] = bytes[b];
      score[n] = 0;
      type[n] = 6;
      n++;
    }
    const char *pieces[] = {"\xe2\x96\x81",
                            "h",
                            "e",
                            "l",
                            "o",
                            "w",
                            "r",
                            "d",
                            "\xe2\x96\x81h",
                            "he",
                            "ll",
                            "llo",
                            "\xe2\x96\x81he",
                            "\xe2\x96\x81hello",
                            "\xe2\x96\x81w",
                            "or",
                            "\xe2\x96\x81wor",
                            "ld",
                            "\xe2\x96\x81world",
                            "hell"};
    const float sc[] = {-1, -2, -2, -2, -2, -2, -2, -2, -3, -4, -5, -6, -7, -8, -9, -10, -11, -12, -13, -20};
    size_t first = n;
    for (size_t i = 0; i < sizeof pieces / sizeof *pieces; i++) {
      tok[n] = pieces[i];
      score[n] = sc[i];
      type[n] = 1;
      n++;
    }
    tokenizer *t = NULL;
    wgllm_status st = tok_create("llama", NULL, n, tok, NULL, score, type, 0, NULL, 1, 2, 1, 0, &t, &err);
    CHECK(st == WGLLM_OK, "tok_create llama: %s", err.msg);
    if (t) {
      int32_t *ids;
      size_t m;
      enc(t, "hello world\xc3\xa9", 1, 1, &ids, &m);
      /* <s> ▁hello ▁world <0xC3> <0xA9> */
      int32_t want[] = {1, (int32_t)first + 13, (int32_t)first + 18, 3 + 0xC3, 3 + 0xA9};
      CHECK(m == 5 && !memcmp(ids, want, sizeof want), "llama synthetic ids (%zu)", m);
      size_t l;
      char *d = decode_str(t, ids, m, 1, &l);
      CHECK(d && !strcmp(d, "hello world\xc3\xa9"), "llama synthetic decode \"%s\"", d ? d : "");
      free(d);
      d = decode_str(t, ids, m, 0, &l);
      CHECK(d && !strcmp(d, "<s> hello world\xc3\xa9"), "llama synthetic decode with <s>: \"%s\"", d ? d : "");
      free(d);
      free(ids);
      enc(t, "</s>x", 0, 1, &ids, &m);
      CHECK(m >= 1 && ids[0] == 2, "llama synthetic control token split");
      free(ids);
      tok_set_add_space_prefix(t, 0);
      enc(t, "hello", 0, 1, &ids, &m);
      /* no leading ▁: h e l l o -> "he" "llo" by score order */
      CHECK(m == 2 && ids[0] == (int32_t)first + 9 && ids[1] == (int32_t)first + 11, "llama no-prefix ids (%zu)", m);
      free(ids);
      CHECK(tok_is_eog(t, 2) && tok_bos(t) == 1, "llama synthetic eog");
      tok_free(t);
    }
  }
  /* byte-level BPE by rank */
  {
    /* all 256 byte characters, then merged pieces */
    static char chars[256][4];
    const char *tok[300];
    size_t n = 0;
    int32_t type[300];
    for (int b = 0; b < 256; b++) {
      uint32_t cp;
      if ((b >= 0x21 && b <= 0x7E) || (b >= 0xA1 && b <= 0xAC) || b >= 0xAE)
        cp = (uint32_t)b;
      else if (b <= 0x20)
        cp = 256u + (uint32_t)b;
      else if (b <= 0xA0)
        cp = 256u + 33 + (uint32_t)(b - 0x7F);
      else
        cp = 256u + 67;
      if (cp < 0x80) {
        chars[b][0] = (char)cp;
        chars[b][1] = 0;
      } else {
        chars[b][0] = (char)(0xC0 | (cp >> 6));
        chars[b][1] = (char)(0x80 | (cp & 0x3F));
        chars[b][2] = 0;
      }
      tok[n] = chars[b];
      type[n] = 1;
      n++;
    }
    const char *pieces[] = {"he", "ll", "hell", "hello", "\xc4\xa0w", "or", "\xc4\xa0wor", "ld", "\xc4\xa0world"};
    const char *merges[] = {"h e", "l l",          "he ll", "hell o",        "\xc4\xa0 w",
                            "o r", "\xc4\xa0w or", "l d",   "\xc4\xa0wor ld"};
    size_t first = n;
    for (size_t i = 0; i < 9; i++) {
      tok[n] = pieces[i];
      type[n] = 1;
      n++;
    }
    tok[n] = "<|endoftext|>";
    type[n] = 3;
    n++;
    tokenizer *t = NULL;
    wgllm_status st =
        tok_create("gpt2", "gpt-2", n, tok, NULL, NULL, type, 9, merges, -1, (int32_t)n - 1, 0, 0, &t, &err);
    CHECK(st == WGLLM_OK, "tok_create gpt2: %s", err.msg);
    if (t) {
      int32_t *ids;
      size_t m;
      enc(t, "hello world<|endoftext|>\n", 1, 1, &ids, &m);
      int32_t want[] = {(int32_t)first + 3, (int32_t)first + 8, (int32_t)n - 1, '\n' + 256 - 256 + 0};
      want[3] = 10; /* '\n' is byte 10 -> id 10 in this vocabulary */
      CHECK(m == 4 && !memcmp(ids, want, sizeof want), "gpt2 synthetic ids (%zu)", m);
      size_t l;
      char *d = decode_str(t, ids, m, 0, &l);
      CHECK(d && !strcmp(d, "hello world<|endoftext|>\n"), "gpt2 synthetic decode \"%s\"", d ? d : "");
      free(d);
      d = decode_str(t, ids, m, 1, &l);
      CHECK(d && !strcmp(d, "hello world\n"), "gpt2 synthetic decode skip \"%s\"", d ? d : "");
      free(d);
      free(ids);
      CHECK(tok_is_eog(t, (int32_t)n - 1), "gpt2 synthetic eog");
      tok_free(t);
    }
    tokenizer *u = NULL;
    st = tok_create("gpt2", "no-such-pre", n, tok, NULL, NULL, type, 9, merges, -1, -1, 0, 0, &u, &err);
    CHECK(st == WGLLM_ERR_UNSUPPORTED && u == NULL && strstr(err.msg, "no-such-pre"), "unknown pre: %s", err.msg);
    st = tok_create("bert", NULL, n, tok, NULL, NULL, type, 0, NULL, -1, -1, 0, 0, &u, &err);
    CHECK(st == WGLLM_ERR_UNSUPPORTED && strstr(err.msg, "bert"), "unknown type: %s", err.msg);
    /* tokenizer.ggml.pre picks the pre-tokenizer: with a piece "oH" in the vocabulary, Llama 3's (letters in one
       run, merges ignored when the run is a token) gives one token for "oH 2024", Tekken's (Mistral Nemo: a word
       is caps then lower case, digits one at a time) splits "o" from "H" and the digits */
    {
      size_t n2 = n;
      tok[n2] = "oH";
      type[n2] = 1;
      n2++;
      const char *oh_merge[] = {"o H"};
      static const char *P[] = {"llama-bpe", "tekken"};
      for (int k = 0; k < 2; k++) {
        tokenizer *tp = NULL;
        st = tok_create("gpt2", P[k], n2, tok, NULL, NULL, type, 1, oh_merge, -1, -1, 0, 0, &tp, &err);
        CHECK(st == WGLLM_OK, "tok_create pre %s: %s", P[k], err.msg);
        if (!tp) continue;
        int32_t *ids;
        size_t m;
        enc(tp, "oH 2024", 0, 0, &ids, &m);
        size_t l;
        char *d = decode_str(tp, ids, m, 0, &l);
        CHECK(d && !strcmp(d, "oH 2024"), "pre %s round trip \"%s\"", P[k], d ? d : "");
        free(d);
        if (k == 0) /* "oH" one token, then " 2024" in Llama 3's digit groups of up to three */
          CHECK(m >= 2 && ids[0] == (int32_t)n2 - 1, "pre llama-bpe: \"oH\" is one token (%zu ids, first %d)", m,
                m ? ids[0] : -1);
        else {
          /* "o", "H", " ", "2", "0", "2", "4" */
          int ok = m == 7;
          for (size_t i = 0; ok && i < m; i++)
            ok = ids[i] != (int32_t)n2 - 1;
          CHECK(ok, "pre tekken: \"o\" and \"H\" apart, digits one a token (%zu ids)", m);
        }
        free(ids);
        tok_free(tp);
      }
    }
    const char *bad_merge[] = {"h q"};
    st = tok_create("gpt2", "gpt-2", n, tok, NULL, NULL, type, 1, bad_merge, -1, -1, 0, 0, &u, &err);
    CHECK(st == WGLLM_ERR_FORMAT && strstr(err.msg, "merge 0"), "bad merge: %s", err.msg);
  }
}

/* The GGUF path: rebuild a real vocabulary as a GGUF stores it (token strings by id, token types, merges
   as "left right", or SentencePiece scores) through tok_create, and require HF's ids for every string. */
static void gguf_equivalence(const char *tname, const char *type, const char *pre, int space_prefix,
                             const cJSON *strings, const cJSON *expected) {
  char path[256];
  llm_err err = {0};
  snprintf(path, sizeof path, TOK_DIR "/%s/tokenizer.json", tname);
  size_t len;
  char *text = th_read_file(path, &len);
  tokenizer *hf = load(tname);
  if (!text || !hf) {
    CHECK(0, "%s missing: run scripts/fetch_tokenizers.sh", path);
    free(text);
    tok_free(hf);
    return;
  }
  cJSON *root = cJSON_ParseWithLength(text, len);
  free(text);
  size_t n = tok_vocab_size(hf);
  const char **toks = calloc(n, sizeof *toks);
  int32_t *types = calloc(n, sizeof *types);
  float *scores = calloc(n, sizeof *scores);
  const cJSON *model = jget(root, "model");
  for (const cJSON *v = jget(model, "vocab")->child; v; v = v->next) {
    int32_t id = (int32_t)v->valuedouble;
    toks[id] = v->string;
    types[id] = 1;
    scores[id] = -1e9f; /* pieces no merge makes (characters, bytes) */
    if (strlen(v->string) == 6 && !strncmp(v->string, "<0x", 3)) types[id] = 6;
  }
  for (const cJSON *a = jget(root, "added_tokens")->child; a; a = a->next) {
    int32_t id = (int32_t)jget(a, "id")->valuedouble;
    toks[id] = jget(a, "content")->valuestring;
    types[id] = jget(a, "special")->type == cJSON_True ? 3 : 4;
  }
  const cJSON *unk_name = jget(model, "unk_token");
  int32_t unk = unk_name && unk_name->type == cJSON_String ? tok_find(hf, unk_name->valuestring) : -1;
  if (unk >= 0) types[unk] = 2;
  size_t n_merges = 0;
  const cJSON *mj = jget(model, "merges");
  for (const cJSON *m = mj->child; m; m = m->next)
    n_merges++;
  char **merges = calloc(n_merges ? n_merges : 1, sizeof *merges);
  size_t k = 0;
  for (const cJSON *m = mj->child; m; m = m->next, k++) {
    if (m->type == cJSON_String) {
      merges[k] = strdup(m->valuestring);
    } else {
      const char *l = m->child->valuestring, *r = m->child->next->valuestring;
      merges[k] = malloc(strlen(l) + strlen(r) + 2);
      sprintf(merges[k], "%s %s", l, r);
    }
    /* a GGUF SentencePiece vocabulary has scores, not merges: a piece scores by its first merge's rank */
    char *cat = strdup(merges[k]), *sp = strchr(cat, ' ');
    memmove(sp, sp + 1, strlen(sp + 1) + 1);
    int32_t id = tok_find(hf, cat);
    if (id >= 0 && scores[id] == -1e9f) scores[id] = -(float)k;
    free(cat);
  }
  for (size_t i = 0; i < n; i++)
    if (!toks[i]) toks[i] = "";
  int32_t *pre_ids;
  size_t n_pre;
  enc(hf, "", 1, 1, &pre_ids, &n_pre);
  int add_bos = n_pre > 0 && pre_ids[0] == tok_bos(hf);
  free(pre_ids);
  int spm = !strcmp(type, "llama");
  tokenizer *t = NULL;
  double t0 = now_s();
  wgllm_status st = tok_create(type, pre, n, toks, NULL, spm ? scores : NULL, types, spm ? 0 : n_merges,
                               (const char *const *)merges, tok_bos(hf), tok_eos(hf), add_bos, 0, &t, &err);
  double dt = now_s() - t0;
  CHECK(st == WGLLM_OK, "tok_create(%s as %s/%s): %s", tname, type, pre ? pre : "-", err.msg);
  if (t) {
    if (!space_prefix) tok_set_add_space_prefix(t, 0);
    const cJSON *cases = jget(jget(jget(expected, "tokenizers"), tname), "cases");
    int ok = 0, total = 0;
    for (const cJSON *s = jget(strings, "strings")->child; s; s = s->next) {
      const char *sname = jget(s, "name")->valuestring, *tx = jget(s, "text")->valuestring;
      const cJSON *c = jget(cases, sname);
      if (!c) continue;
      int32_t *ids;
      size_t m;
      enc(t, tx, 1, 1, &ids, &m);
      total++;
      char what[64];
      snprintf(what, sizeof what, "tok_create(%s) ids_special", type);
      ok += check_ids(tname, sname, what, ids, m, jget(c, "ids_special"));
      free(ids);
    }
    printf("%-7s as tok_create(\"%s\", %s%s): built in %.3f s, %d/%d strings match HF\n", tname, type, pre ? pre : "-",
           spm ? ", scores from merge ranks" : "", dt, ok, total);
    tok_free(t);
  }
  for (size_t i = 0; i < n_merges; i++)
    free(merges[i]);
  free(merges);
  free(toks);
  free(types);
  free(scores);
  cJSON_Delete(root);
  tok_free(hf);
}

/* GGUF tokenizer arrays of the wrong element type (issue 13's crash: non-string merges segfaulted `wgllm run`)
   are refused by name, as files: tokens as integers, merges as integers, merges as floats. */
static void gguf_bad_arrays(void) {
  static const char *toks[] = {"a", "b", "ab"};
  static const int32_t ints[] = {1, 2, 3};
  static const float floats[] = {1, 2, 3};
  for (int k = 0; k < 3; k++) {
    gguf_writer *w = gguf_writer_begin(3, 32);
    gguf_writer_kv_str(w, "general.architecture", "llama");
    gguf_writer_kv_str(w, "tokenizer.ggml.model", "gpt2");
    if (k == 0)
      gguf_writer_kv_arr(w, "tokenizer.ggml.tokens", GGUF_TYPE_INT32, 3, ints);
    else
      gguf_writer_kv_arr_str(w, "tokenizer.ggml.tokens", 3, toks);
    if (k == 1) gguf_writer_kv_arr(w, "tokenizer.ggml.merges", GGUF_TYPE_INT32, 3, ints);
    if (k == 2) gguf_writer_kv_arr(w, "tokenizer.ggml.merges", GGUF_TYPE_FLOAT32, 3, floats);
    char path[64];
    llm_err err = {0};
    snprintf(path, sizeof path, "/tmp/wgllm-test-tok-%d-%d.gguf", (int)getpid(), k);
    wgllm_status st = gguf_writer_finish_path(w, path, &err);
    gguf_writer_free(w);
    CHECK(st == WGLLM_OK, "writing %s: %s", path, err.msg);
    tokenizer *t = NULL;
    st = llm_load_tokenizer(path, &t, NULL, &err);
    const char *what = k == 0 ? "tokenizer.ggml.tokens" : "tokenizer.ggml.merges";
    CHECK(st == WGLLM_ERR_FORMAT && !t && strstr(err.msg, what) && strstr(err.msg, "not of strings"),
          "GGUF %s of numbers: %d, %s", what, (int)st, err.msg);
    tok_free(t);
    unlink(path);
  }
}

/* Issue 13's numeric fields of a GGUF tokenizer: scores / token_type of another type or length, scores not
   finite, token types outside 1..6, flags that are not bools of 0 or 1, token ids of another type, negative or
   outside the vocabulary, and a "llama" vocabulary without scores: each refused naming the key and what is
   wrong. The same file with the fields right loads, an i32 id and absent token types included. */
enum {
  NF_OK,
  NF_I32_EOS,
  NF_NO_TYPES,
  NF_NO_SCORES,
  NF_SCORES_I32,
  NF_SCORES_SCALAR,
  NF_SCORES_SHORT,
  NF_SCORES_F64,
  NF_TYPES_U32,
  NF_TYPES_LONG,
  NF_SCORE_NAN,
  NF_SCORE_INF,
  NF_SCORE_NEG_INF,
  NF_TYPE_0,
  NF_TYPE_7,
  NF_TYPE_NEG,
  NF_ADD_BOS_U32,
  NF_ADD_EOS_I8,
  NF_SPACE_PREFIX_U8,
  NF_ADD_BOS_BYTE_2,
  NF_BOS_U64,
  NF_BOS_BOOL,
  NF_BOS_F32,
  NF_BOS_STR,
  NF_EOS_NEG,
  NF_EOS_OUT,
  NF_N
};

static void gguf_numeric_write(gguf_writer *w, int v) {
  static const char *toks[] = {"<unk>", "<s>", "</s>", "a", "b", "ab"};
  int32_t types[7] = {2, 3, 3, 1, 1, 1, 1};
  float scores[7] = {0, 0, 0, -1, -2, -0.5f, 0};
  double scores64[6] = {0};
  uint32_t types_u[6] = {2, 3, 3, 1, 1, 1};
  uint8_t yes = 1, no = 0, two = 2;
  if (v == NF_SCORE_NAN) scores[4] = NAN;
  if (v == NF_SCORE_INF) scores[4] = INFINITY;
  if (v == NF_SCORE_NEG_INF) scores[4] = -INFINITY;
  if (v == NF_TYPE_0) types[3] = 0;
  if (v == NF_TYPE_7) types[3] = 7;
  if (v == NF_TYPE_NEG) types[3] = -1;
  gguf_writer_kv_str(w, "general.architecture", "llama");
  gguf_writer_kv_str(w, "tokenizer.ggml.model", "llama");
  gguf_writer_kv_arr_str(w, "tokenizer.ggml.tokens", 6, toks);
  if (v == NF_SCORES_I32)
    gguf_writer_kv_arr(w, "tokenizer.ggml.scores", GGUF_TYPE_INT32, 6, types);
  else if (v == NF_SCORES_SCALAR)
    gguf_writer_kv_f32(w, "tokenizer.ggml.scores", 0);
  else if (v == NF_SCORES_F64)
    gguf_writer_kv_arr(w, "tokenizer.ggml.scores", GGUF_TYPE_FLOAT64, 6, scores64);
  else if (v != NF_NO_SCORES)
    gguf_writer_kv_arr(w, "tokenizer.ggml.scores", GGUF_TYPE_FLOAT32, v == NF_SCORES_SHORT ? 5 : 6, scores);
  if (v == NF_TYPES_U32)
    gguf_writer_kv_arr(w, "tokenizer.ggml.token_type", GGUF_TYPE_UINT32, 6, types_u);
  else if (v != NF_NO_TYPES)
    gguf_writer_kv_arr(w, "tokenizer.ggml.token_type", GGUF_TYPE_INT32, v == NF_TYPES_LONG ? 7 : 6, types);
  if (v == NF_BOS_U64) {
    uint64_t one = 1;
    gguf_writer_kv(w, "tokenizer.ggml.bos_token_id", GGUF_TYPE_UINT64, &one);
  } else if (v == NF_BOS_BOOL)
    gguf_writer_kv(w, "tokenizer.ggml.bos_token_id", GGUF_TYPE_BOOL, &yes);
  else if (v == NF_BOS_F32)
    gguf_writer_kv_f32(w, "tokenizer.ggml.bos_token_id", 1);
  else if (v == NF_BOS_STR)
    gguf_writer_kv_str(w, "tokenizer.ggml.bos_token_id", "1");
  else
    gguf_writer_kv_u32(w, "tokenizer.ggml.bos_token_id", 1);
  if (v == NF_I32_EOS || v == NF_EOS_NEG) {
    int32_t id = v == NF_EOS_NEG ? -1 : 2;
    gguf_writer_kv(w, "tokenizer.ggml.eos_token_id", GGUF_TYPE_INT32, &id);
  } else
    gguf_writer_kv_u32(w, "tokenizer.ggml.eos_token_id", v == NF_EOS_OUT ? 6 : 2);
  if (v == NF_ADD_BOS_U32)
    gguf_writer_kv_u32(w, "tokenizer.ggml.add_bos_token", 1);
  else if (v == NF_ADD_BOS_BYTE_2) /* the writer takes bools of 0 or 1 only */
    gguf_writer_kv_raw(w, "tokenizer.ggml.add_bos_token", GGUF_TYPE_BOOL, &two, 1);
  else
    gguf_writer_kv(w, "tokenizer.ggml.add_bos_token", GGUF_TYPE_BOOL, &yes);
  if (v == NF_ADD_EOS_I8) {
    int8_t one = 1;
    gguf_writer_kv(w, "tokenizer.ggml.add_eos_token", GGUF_TYPE_INT8, &one);
  } else
    gguf_writer_kv(w, "tokenizer.ggml.add_eos_token", GGUF_TYPE_BOOL, &yes);
  if (v == NF_SPACE_PREFIX_U8)
    gguf_writer_kv(w, "tokenizer.ggml.add_space_prefix", GGUF_TYPE_UINT8, &no);
  else
    gguf_writer_kv(w, "tokenizer.ggml.add_space_prefix", GGUF_TYPE_BOOL, &no);
}

static void gguf_numeric_fields(void) {
  /* what each refusal's message holds: the key, then what is wrong */
  static const char *const want[NF_N][2] = {
      [NF_SCORES_I32] = {"tokenizer.ggml.scores", "array of GGUF type 5, not of float32"},
      [NF_SCORES_SCALAR] = {"tokenizer.ggml.scores", "type 6, not an array of float32"},
      [NF_SCORES_SHORT] = {"tokenizer.ggml.scores", "has 5 elements for 6 tokens"},
      [NF_SCORES_F64] = {"tokenizer.ggml.scores", "array of GGUF type 12, not of float32"},
      [NF_NO_SCORES] = {"tokenizer.ggml.scores", "needs"},
      [NF_TYPES_U32] = {"tokenizer.ggml.token_type", "array of GGUF type 4, not of int32"},
      [NF_TYPES_LONG] = {"tokenizer.ggml.token_type", "has 7 elements for 6 tokens"},
      [NF_SCORE_NAN] = {"tokenizer.ggml.scores[4]", "not a finite number"},
      [NF_SCORE_INF] = {"tokenizer.ggml.scores[4]", "is inf, not a finite number"},
      [NF_SCORE_NEG_INF] = {"tokenizer.ggml.scores[4]", "is -inf, not a finite number"},
      [NF_TYPE_0] = {"tokenizer.ggml.token_type[3]", "is 0, not a GGUF token type"},
      [NF_TYPE_7] = {"tokenizer.ggml.token_type[3]", "is 7, not a GGUF token type"},
      [NF_TYPE_NEG] = {"tokenizer.ggml.token_type[3]", "is -1, not a GGUF token type"},
      [NF_ADD_BOS_U32] = {"tokenizer.ggml.add_bos_token", "GGUF type 4, not a bool"},
      [NF_ADD_EOS_I8] = {"tokenizer.ggml.add_eos_token", "GGUF type 1, not a bool"},
      [NF_SPACE_PREFIX_U8] = {"tokenizer.ggml.add_space_prefix", "GGUF type 0, not a bool"},
      [NF_ADD_BOS_BYTE_2] = {"tokenizer.ggml.add_bos_token", "byte value 2, not 0 or 1"},
      [NF_BOS_U64] = {"tokenizer.ggml.bos_token_id", "GGUF type 10, not a u32 token id"},
      [NF_BOS_BOOL] = {"tokenizer.ggml.bos_token_id", "GGUF type 7, not a u32 token id"},
      [NF_BOS_F32] = {"tokenizer.ggml.bos_token_id", "GGUF type 6, not a u32 token id"},
      [NF_BOS_STR] = {"tokenizer.ggml.bos_token_id", "GGUF type 8, not a u32 token id"},
      [NF_EOS_NEG] = {"tokenizer.ggml.eos_token_id", "is -1, not a token id"},
      [NF_EOS_OUT] = {"tokenizer.ggml.eos_token_id", "6 is outside the 6-token vocabulary"},
  };
  char path[64];
  llm_err err = {0};
  snprintf(path, sizeof path, "/tmp/wgllm-test-tok-%d-nf.gguf", (int)getpid());
  for (int v = 0; v < NF_N; v++) {
    gguf_writer *w = gguf_writer_begin(3, 32);
    gguf_numeric_write(w, v);
    wgllm_status st = gguf_writer_finish_path(w, path, &err);
    gguf_writer_free(w);
    CHECK(st == WGLLM_OK, "writing %s (case %d): %s", path, v, err.msg);
    tokenizer *t = NULL;
    err.msg[0] = 0;
    st = llm_load_tokenizer(path, &t, NULL, &err);
    if (!want[v][0]) { /* loads: BOS and EOS added, no space prefix ("ab" -> <s> ab </s>) */
      CHECK(st == WGLLM_OK && t, "GGUF tokenizer case %d: %d, %s", v, (int)st, err.msg);
      if (t) {
        int32_t *ids;
        size_t m;
        enc(t, "ab", 1, 0, &ids, &m);
        CHECK(m == 3 && ids[0] == 1 && ids[1] == 5 && ids[2] == 2 && tok_eos(t) == 2,
              "GGUF tokenizer case %d: ids (%zu)", v, m);
        free(ids);
      }
    } else
      CHECK(st == WGLLM_ERR_FORMAT && !t && strstr(err.msg, want[v][0]) && strstr(err.msg, want[v][1]) &&
                strstr(err.msg, path),
            "GGUF tokenizer case %d (%s %s): %d, %s", v, want[v][0], want[v][1], (int)st, err.msg);
    tok_free(t);
  }
  unlink(path);
}

/* A tokenizer.json whose vocabulary names an id far past its entries (2^31 - 2 once asked for 19 GB) or a
   fractional one is refused by name before anything is sized from it. */
static void hf_bad_ids(void) {
  static const char *ids[] = {"2147483646", "1.5"};
  for (int k = 0; k < 2; k++) {
    char path[64], js[512];
    llm_err err = {0};
    snprintf(path, sizeof path, "/tmp/wgllm-test-tok-%d-hf%d.json", (int)getpid(), k);
    snprintf(js, sizeof js,
             "{\"model\": {\"type\": \"BPE\", \"vocab\": {\"a\": 0, \"b\": %s}, \"merges\": []}, "
             "\"added_tokens\": []}",
             ids[k]);
    FILE *f = fopen(path, "w");
    CHECK(f != NULL, "cannot write %s", path);
    if (!f) continue;
    fputs(js, f);
    fclose(f);
    tokenizer *t = NULL;
    wgllm_status st = tok_load_hf(path, NULL, &t, &err);
    CHECK(st == WGLLM_ERR_FORMAT && !t && strstr(err.msg, "\"b\" has no valid id"), "vocab id %s: %d, %s", ids[k],
          (int)st, err.msg);
    tok_free(t);
    unlink(path);
  }
}

/* issue 27 item 2: the pipeline bounded. Hostile tokenizer.json files (written to /tmp) that once took tens of
   seconds and gigabytes are refused fast with the step or the pattern named. */
static tokenizer *bounded_load(int k, const char *norm, const char *pre, llm_err *err) {
  char path[64];
  snprintf(path, sizeof path, "/tmp/wgllm-test-tok-%d-bd%d.json", (int)getpid(), k);
  FILE *f = fopen(path, "w");
  CHECK(f != NULL, "cannot write %s", path);
  if (!f) return NULL;
  fprintf(f,
          "{\"model\": {\"type\": \"BPE\", \"vocab\": {\"a\": 0, \"b\": 1}, \"merges\": []}, \"added_tokens\": [], "
          "\"normalizer\": %s, \"pre_tokenizer\": %s}",
          norm, pre);
  fclose(f);
  tokenizer *t = NULL;
  wgllm_status st = tok_load_hf(path, NULL, &t, err);
  unlink(path);
  if (st != WGLLM_OK) return NULL;
  return t;
}

static char *repeat_json(const char *head, const char *item, int n, const char *tail) {
  size_t cap = strlen(head) + (size_t)n * (strlen(item) + 1) + strlen(tail) + 1;
  char *s = malloc(cap);
  strcpy(s, head);
  for (int i = 0; i < n; i++) {
    if (i) strcat(s, ",");
    strcat(s, item);
  }
  strcat(s, tail);
  return s;
}

/* a model directory named x.json is a directory: its tokenizer.json is read (issue 27; it was taken for the
   tokenizer file itself and reported as having no tokenizer.json) */
static void dir_named_json(void) {
  char dir[64], path[96];
  llm_err err = {0};
  snprintf(dir, sizeof dir, "/tmp/wgllm-test-tok-%d-x.json", (int)getpid());
  CHECK(mkdir(dir, 0700) == 0, "mkdir %s", dir);
  snprintf(path, sizeof path, "%s/tokenizer.json", dir);
  FILE *f = fopen(path, "w");
  if (f) {
    fputs("{\"model\": {\"type\": \"BPE\", \"vocab\": {\"a\": 0, \"b\": 1}, \"merges\": []}, \"added_tokens\": []}", f);
    fclose(f);
  }
  tokenizer *t = NULL;
  wgllm_status st = llm_load_tokenizer(dir, &t, NULL, &err);
  CHECK(st == WGLLM_OK && t && tok_vocab_size(t) == 2, "directory %s: %d, %s", dir, (int)st, err.msg);
  tok_free(t);
  unlink(path);
  rmdir(dir);
}

static void hf_bounded(void) {
  llm_err err = {0};
  /* 28 chained Replace a -> aa on "a" (40 s, 7 GB before): refused at the step that grows past the budget */
  char *norm = repeat_json("{\"type\": \"Sequence\", \"normalizers\": [",
                           "{\"type\": \"Replace\", \"pattern\": {\"String\": \"a\"}, \"content\": \"aa\"}", 28, "]}");
  tokenizer *t = bounded_load(0, norm, "null", &err);
  free(norm);
  CHECK(t != NULL, "28 Replace normalizers: load: %s", err.msg);
  if (t) {
    int32_t *ids = NULL;
    size_t n = 0;
    double t0 = now_s();
    char text[2048];
    memset(text, 'a', sizeof text - 1);
    text[sizeof text - 1] = 0;
    wgllm_status st = tok_encode(t, text, strlen(text), 0, 0, &ids, &n, &err);
    double dt = now_s() - t0;
    CHECK(st == WGLLM_ERR_INVALID_ARG && strstr(err.msg, "normalizer") && strstr(err.msg, "(Replace)") &&
              strstr(err.msg, "past 16x") && dt < 2.0,
          "28 Replace normalizers: %d, %.2f s, %s", (int)st, dt, err.msg);
    free(ids);
    tok_free(t);
  }
  /* 16 ByteLevel pre-tokenizers (15.8 GB before): each doubles non-ASCII text, the pipeline's 16x stops it */
  char *pre = repeat_json("{\"type\": \"Sequence\", \"pretokenizers\": [",
                          "{\"type\": \"ByteLevel\", \"add_prefix_space\": false, \"use_regex\": false}", 16, "]}");
  t = bounded_load(1, "null", pre, &err);
  free(pre);
  CHECK(t != NULL, "16 ByteLevel: load: %s", err.msg);
  if (t) {
    int32_t *ids = NULL;
    size_t n = 0;
    double t0 = now_s();
    const char *text = "\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9";
    wgllm_status st = tok_encode(t, text, strlen(text), 0, 0, &ids, &n, &err);
    double dt = now_s() - t0;
    CHECK(st == WGLLM_ERR_INVALID_ARG && strstr(err.msg, "pre-tokenizer") && strstr(err.msg, "(ByteLevel)") &&
              strstr(err.msg, "16x") && dt < 2.0,
          "16 ByteLevel: %d, %.2f s, %s", (int)st, dt, err.msg);
    free(ids);
    tok_free(t);
  }
  /* more chained steps than TOK_MAX_STEPS: refused at load naming the count */
  norm = repeat_json("{\"type\": \"Sequence\", \"normalizers\": [", "{\"type\": \"NFC\"}", 65, "]}");
  t = bounded_load(2, norm, "null", &err);
  free(norm);
  CHECK(!t && strstr(err.msg, "more than 64 normalizers"), "65 normalizers: %s", err.msg);
  tok_free(t);
  pre = repeat_json("{\"type\": \"Sequence\", \"pretokenizers\": [", "{\"type\": \"Digits\"}", 65, "]}");
  t = bounded_load(3, "null", pre, &err);
  free(pre);
  CHECK(!t && strstr(err.msg, "more than 64 pre-tokenizers"), "65 pre-tokenizers: %s", err.msg);
  tok_free(t);
  /* a backtracking Split regex (6 s on 5 KB, minutes on 100 KB before): fails fast, the pattern named */
  t = bounded_load(4, "null",
                   "{\"type\": \"Split\", \"pattern\": {\"Regex\": \"a{0,100}a{0,100}a{0,100}b|a\"}, "
                   "\"behavior\": \"Isolated\", \"invert\": false}",
                   &err);
  CHECK(t != NULL, "backtracking Split: load: %s", err.msg);
  if (t) {
    size_t len = 100000;
    char *text = malloc(len + 1);
    memset(text, 'a', len);
    text[len] = 0;
    int32_t *ids = NULL;
    size_t n = 0;
    double t0 = now_s();
    wgllm_status st = tok_encode(t, text, len, 0, 0, &ids, &n, &err);
    double dt = now_s() - t0;
    CHECK(st == WGLLM_ERR_INVALID_ARG && strstr(err.msg, "a{0,100}a{0,100}a{0,100}b|a") && strstr(err.msg, "(Split)") &&
              dt < 2.0,
          "backtracking Split: %d, %.2f s, %s", (int)st, dt, err.msg);
    free(ids);
    free(text);
    tok_free(t);
  }
  /* a tokenizer.json past its 64 MiB cap (a sparse file): refused naming the size and the cap, before reading */
  {
    char path[64];
    snprintf(path, sizeof path, "/tmp/wgllm-test-tok-%d-big.json", (int)getpid());
    FILE *f = fopen(path, "w");
    if (f) fclose(f);
    CHECK(f && truncate(path, (64 << 20) + 1) == 0, "cannot make %s", path);
    t = NULL;
    wgllm_status st = tok_load_hf(path, NULL, &t, &err);
    CHECK(st == WGLLM_ERR_FORMAT && !t && strstr(err.msg, "67108865 bytes") && strstr(err.msg, "cap of 67108864"),
          "big tokenizer.json: %d, %s", (int)st, err.msg);
    tok_free(t);
    unlink(path);
  }
  /* (?R)?a recurses forever on any text: refused at load, the pattern named */
  t = bounded_load(5, "null",
                   "{\"type\": \"Split\", \"pattern\": {\"Regex\": \"(?R)?a\"}, \"behavior\": \"Isolated\", "
                   "\"invert\": false}",
                   &err);
  CHECK(!t && strstr(err.msg, "(?R)?a") && strstr(err.msg, "sample"), "(?R)?a: %s", err.msg);
  tok_free(t);
}

/* ---- "gemma4": llama.cpp's GGUF tokenizer for Gemma 4 (BPE by rank over raw UTF-8, spaces as U+2581, the
   text split by [^\n]+|[\n]+, a newline run that is a token kept whole, <0xXX> byte fallback, BOS forced) ---- */

typedef struct textset {
  char **s;
  size_t n, cap;
} textset;

static void ts_add(textset *t, const char *s, size_t n) {
  if (t->n == t->cap) {
    t->cap = t->cap ? 2 * t->cap : 64;
    t->s = realloc(t->s, t->cap * sizeof *t->s);
  }
  char *c = malloc(n + 1);
  memcpy(c, s, n);
  c[n] = 0;
  t->s[t->n++] = c;
}

static void ts_free(textset *t) {
  for (size_t i = 0; i < t->n; i++)
    free(t->s[i]);
  free(t->s);
  memset(t, 0, sizeof *t);
}

/* start of the UTF-8 character holding byte i */
static size_t utf8_start(const char *s, size_t i) {
  while (i > 0 && ((unsigned char)s[i] & 0xC0) == 0x80)
    i--;
  return i;
}

/* strings.json's texts with '\n' -> ' ' */
static char *no_newlines(const char *s) {
  char *c = strdup(s);
  for (char *p = c; *p; p++)
    if (*p == '\n') *p = ' ';
  return c;
}

/* Texts without newlines: every string of strings.json (newlines as spaces), pairs of them, hand-written
   ones (byte fallback, user-defined and special tokens, literal U+2581, space runs) and random slices of
   all of them on character boundaries. */
static void g4_flat_texts(const cJSON *strings, textset *out) {
  const cJSON *list = jget(strings, "strings");
  size_t nb = 0;
  for (const cJSON *s = list->child; s; s = s->next)
    nb++;
  char **base = calloc(nb, sizeof *base);
  size_t k = 0;
  for (const cJSON *s = list->child; s; s = s->next)
    base[k++] = no_newlines(jget(s, "text")->valuestring);
  for (size_t i = 0; i < nb; i++)
    ts_add(out, base[i], strlen(base[i]));
  for (size_t i = 0; i < nb; i++) {
    const char *a = base[i], *b = base[(i + 1) % nb], *c = base[(i + 5) % nb];
    size_t la = strlen(a), lb = strlen(b), lc = strlen(c);
    char *j = malloc(la + lb + lc + 8);
    sprintf(j, "%s %s", a, b);
    ts_add(out, j, la + 1 + lb);
    sprintf(j, "%s   %s", a, c);
    ts_add(out, j, la + 3 + lc);
    free(j);
  }
  static const char *extra[] = {
      "\xee\x80\x80 private use \xef\xa3\xbf",            /* U+E000, U+F8FF */
      "\xf4\x8f\xbf\xbf end of Unicode \xf3\xa0\x80\x81", /* U+10FFFF, U+E0001 */
      "\xf0\xa0\x9c\x8e\xf0\xa0\x9c\xb1 CJK extension B",
      "a\xcc\x81\xcc\x81\xcc\x81 stacked combining marks",
      "\xe2\x96\x81\xe2\x96\x81 literal U+2581 \xe2\x96\x81",
      "      six spaces      then six",
      "\t\ttabs\t and \x01\x02\x7f controls",
      "<table><tr>cell</tr></table> <unused5>x",
      "<start_of_turn>user hi<end_of_turn> <bos><eos><pad>",
      "\xef\xbd\x86\xef\xbd\x95\xef\xbd\x8c\xef\xbd\x8c width \xef\xbf\xbd",
      "\r carriage \r\r returns \r",
      " ",
      "x",
  };
  for (size_t i = 0; i < sizeof extra / sizeof *extra; i++)
    ts_add(out, extra[i], strlen(extra[i]));
  size_t total = 0;
  for (size_t i = 0; i < out->n; i++)
    total += strlen(out->s[i]);
  char *all = malloc(total + 1);
  size_t o = 0;
  for (size_t i = 0; i < out->n; i++) {
    size_t l = strlen(out->s[i]);
    memcpy(all + o, out->s[i], l);
    o += l;
  }
  th_rng rng = {4242};
  for (int r = 0; r < 150; r++) {
    size_t a = utf8_start(all, th_u32(&rng) % total), len = 1 + th_u32(&rng) % 160;
    size_t b = a + len >= total ? total : utf8_start(all, a + len);
    if (b <= a) b = total;
    ts_add(out, all + a, b - a);
  }
  free(all);
  for (size_t i = 0; i < nb; i++)
    free(base[i]);
  free(base);
}

/* the longest run of newlines in s[0..n) */
static size_t longest_newline_run(const char *s, size_t n) {
  size_t best = 0, run = 0;
  for (size_t i = 0; i < n; i++) {
    run = s[i] == '\n' ? run + 1 : 0;
    if (run > best) best = run;
  }
  return best;
}

/* Texts with newlines: strings.json's that have them, hand-written ones, and texts of the flat set with one
   to four newline runs put in at character boundaries; none has a run of more than max_run newlines. */
static void g4_newline_texts(const cJSON *strings, const textset *flat, size_t max_run, textset *out) {
  for (const cJSON *s = jget(strings, "strings")->child; s; s = s->next) {
    const char *x = jget(s, "text")->valuestring;
    if (strchr(x, '\n') && longest_newline_run(x, strlen(x)) <= max_run) ts_add(out, x, strlen(x));
  }
  static const char *extra[] = {"\n",
                                "\n\n",
                                "a\nb",
                                " \n ",
                                "\n a",
                                "a \n\n b",
                                "\r\n\r\n",
                                "\xe2\x96\x81\n\xe2\x96\x81",
                                "x\n\n\ny\n",
                                "<start_of_turn>user\nhi<end_of_turn>\n<start_of_turn>model\n",
                                "<table>\n<tr>\n\n</tr>",
                                "\xee\x80\x80\n\xee\x80\x80"};
  for (size_t i = 0; i < sizeof extra / sizeof *extra; i++)
    ts_add(out, extra[i], strlen(extra[i]));
  static const size_t runs[] = {1, 1, 1, 2, 2, 3, 4, 5, 8, 17, 30, 31, 32, 40, 63};
  char nl[64];
  memset(nl, '\n', sizeof nl);
  for (size_t k = 0; k < sizeof runs / sizeof *runs; k++)
    if (runs[k] <= max_run) ts_add(out, nl, runs[k]);
  th_rng rng = {777};
  for (int r = 0; r < 200; r++) {
    const char *x = flat->s[th_u32(&rng) % flat->n];
    size_t xl = strlen(x), cap = xl + 4 * 64 + 1, n = 0;
    char *b = malloc(cap);
    size_t cut[4];
    int nc = 1 + (int)(th_u32(&rng) % 4);
    for (int c = 0; c < nc; c++)
      cut[c] = xl ? utf8_start(x, th_u32(&rng) % (xl + 1) == xl ? xl - 1 : th_u32(&rng) % xl) : 0;
    if (r % 7 == 0) cut[0] = 0;        /* newlines first */
    if (r % 11 == 0) cut[nc - 1] = xl; /* or last */
    size_t prev = 0;
    for (int c = 0; c < nc; c++) { /* cuts in order */
      for (int d = c + 1; d < nc; d++)
        if (cut[d] < cut[c]) {
          size_t t = cut[c];
          cut[c] = cut[d];
          cut[d] = t;
        }
      memcpy(b + n, x + prev, cut[c] - prev);
      n += cut[c] - prev;
      prev = cut[c];
      size_t run;
      do
        run = runs[th_u32(&rng) % (sizeof runs / sizeof *runs)];
      while (run > max_run);
      memcpy(b + n, nl, run);
      n += run;
    }
    memcpy(b + n, x + prev, xl - prev);
    n += xl - prev;
    if (longest_newline_run(b, n) <= max_run) ts_add(out, b, n); /* runs put side by side may join */
    free(b);
  }
}

static int ids_equal(const int32_t *a, size_t na, const int32_t *b, size_t nb) {
  return na == nb && (na == 0 || memcmp(a, b, na * sizeof *a) == 0);
}

static void ids_append(int32_t **v, size_t *n, const int32_t *x, size_t m) {
  *v = realloc(*v, (*n + m + 1) * sizeof **v);
  if (m) memcpy(*v + *n, x, m * sizeof *x);
  *n += m;
}

/* what llama.cpp's gemma4 tokenizer makes of x, from the HF tokenizer: each piece of [^\n]+|[\n]+ encoded
   alone, except that a newline run that is a token is that token */
static int32_t *g4_expect(const tokenizer *hf, const char *x, size_t n, int add, int parse, size_t *ne) {
  int32_t *out = malloc(sizeof *out);
  *ne = 0;
  if (add) {
    int32_t b = tok_bos(hf);
    ids_append(&out, ne, &b, 1);
  }
  llm_err err = {0};
  for (size_t i = 0; i < n;) {
    size_t j = i;
    int nl = x[i] == '\n';
    while (j < n && (x[j] == '\n') == nl)
      j++;
    int32_t id = -1;
    if (nl) {
      char *p = malloc(j - i + 1);
      memcpy(p, x + i, j - i);
      p[j - i] = 0;
      id = tok_find(hf, p);
      free(p);
    }
    if (id >= 0) {
      ids_append(&out, ne, &id, 1);
    } else {
      int32_t *ids = NULL;
      size_t m = 0;
      wgllm_status st = tok_encode(hf, x + i, j - i, 0, parse, &ids, &m, &err);
      CHECK(st == WGLLM_OK, "gemma3 piece encode: %s", err.msg);
      ids_append(&out, ne, ids, m);
      free(ids);
    }
    i = j;
  }
  return out;
}

static int has_byte_token(const tokenizer *t, const int32_t *ids, size_t n) {
  for (size_t i = 0; i < n; i++) {
    size_t l;
    const char *p = tok_piece(t, ids[i], &l);
    if (p && l == 6 && !memcmp(p, "<0x", 3)) return 1;
  }
  return 0;
}

/* checks (1)-(4) of one gemma4 tokenizer g against the HF Gemma 3 tokenizer hf */
static void g4_compare(const char *what, const tokenizer *g, const tokenizer *hf, const textset *flat,
                       const textset *lines) {
  llm_err err = {0};
  int n_flat = 0, n_lines = 0, n_rt = 0, n_stream = 0, n_bytes = 0, n_unlike_whole = 0, n_bos = 0, total_rt = 0,
      n_lit = 0;
  for (int set = 0; set < 2; set++) {
    const textset *ts = set ? lines : flat;
    for (size_t i = 0; i < ts->n; i++) {
      const char *x = ts->s[i];
      size_t xl = strlen(x);
      int ok = 1;
      for (int mode = 0; mode < 2; mode++) { /* add_special and parse_special both off, then both on */
        int32_t *got = NULL, *want = NULL;
        size_t ng = 0, nw = 0;
        wgllm_status st = tok_encode(g, x, xl, mode, mode, &got, &ng, &err);
        CHECK(st == WGLLM_OK, "%s encode: %s", what, err.msg);
        if (set == 0) {
          st = tok_encode(hf, x, xl, mode, mode, &want, &nw, &err);
          CHECK(st == WGLLM_OK, "gemma3 encode: %s", err.msg);
          if (mode) n_bytes += has_byte_token(hf, want, nw);
        } else {
          want = g4_expect(hf, x, xl, mode, mode, &nw);
          int32_t *whole = NULL;
          size_t nh = 0;
          st = tok_encode(hf, x, xl, mode, mode, &whole, &nh, &err);
          n_unlike_whole += st == WGLLM_OK && !ids_equal(whole, nh, want, nw);
          free(whole);
        }
        int same = ids_equal(got, ng, want, nw);
        if (!same) {
          char a[400], b[400];
          size_t d = first_diff(got, ng, want, nw);
          fmt_ids(a, sizeof a, got + d, ng - d);
          fmt_ids(b, sizeof b, want + d, nw - d);
          CHECK(same, "%s %s text %zu (add/parse %d) \"%s\": differ from id #%zu: got [%s], want [%s]", what,
                set ? "newline" : "flat", i, mode, x, d, a, b);
        }
        ok = ok && same;
        /* (3) decode(encode(x)) == x (after "<bos>" with special tokens on), except for a literal U+2581 in the
           text, which decodes as a space (as in HF): then the decode is HF's of the same ids */
        size_t l, hl;
        char *dec = decode_str(g, got, ng, 0, &l), *hdec = decode_str(hf, got, ng, 0, &hl);
        int lit = strstr(x, "\xe2\x96\x81") != NULL, rt;
        if (lit)
          rt = dec && hdec && l == hl && !memcmp(dec, hdec, l);
        else if (mode)
          rt = dec && l == xl + 5 && !memcmp(dec, "<bos>", 5) && !memcmp(dec + 5, x, xl);
        else
          rt = dec && l == xl && !memcmp(dec, x, xl);
        CHECK(rt, "%s round trip (add/parse %d) of \"%s\": \"%s\"", what, mode, x, dec ? dec : "(null)");
        free(dec);
        free(hdec);
        n_rt += rt;
        n_lit += lit;
        total_rt++;
        if (mode) {
          n_bos += ng > 0 && got[0] == tok_bos(hf);
          /* (4) the stream decoder agrees with the whole decode */
          int f0 = th_failures;
          check_stream(g, what, "stream", got, ng);
          n_stream += th_failures == f0;
        }
        free(got);
        free(want);
      }
      if (set == 0)
        n_flat += ok;
      else
        n_lines += ok;
    }
  }
  CHECK(n_bytes > 0, "%s: no flat text needed byte fallback", what);
  CHECK(n_bos == (int)(flat->n + lines->n), "%s: BOS first in %d of %zu encodings", what, n_bos, flat->n + lines->n);
  printf("%s: %d/%zu flat texts equal HF (both modes; %d use byte fallback), %d/%zu newline texts equal the "
         "per-piece HF encoding (%d differ from HF's whole-text encoding), %d/%d round trips (%d with a literal "
         "U+2581: HF's decode), %d/%zu streams\n",
         what, n_flat, flat->n, n_bytes, n_lines, lines->n, n_unlike_whole, n_rt, total_rt, n_lit, n_stream,
         flat->n + lines->n);
}

static char *g4_tmp_path(const char *tag) {
  static char path[128];
  snprintf(path, sizeof path, "/tmp/wgllm-test-tok-%d-%s.gguf", (int)getpid(), tag);
  return path;
}

/* a GGUF file with a gemma4 tokenizer (merges/add_bos_token optional: n_merges 0 or add_bos < 0 leave them out) */
static wgllm_status g4_write(const char *path, const char *model, size_t n, const char *const *toks,
                             const int32_t *types, size_t n_merges, const char *const *merges, int32_t bos, int32_t eos,
                             int add_bos, llm_err *err) {
  gguf_writer *w = gguf_writer_begin(3, 32);
  gguf_writer_kv_str(w, "general.architecture", "gemma4");
  gguf_writer_kv_str(w, "tokenizer.ggml.model", model);
  gguf_writer_kv_arr_str(w, "tokenizer.ggml.tokens", n, toks);
  float *scores = calloc(n, sizeof *scores); /* the converter writes scores; gemma4 does not read them */
  gguf_writer_kv_arr(w, "tokenizer.ggml.scores", GGUF_TYPE_FLOAT32, n, scores);
  free(scores);
  gguf_writer_kv_arr(w, "tokenizer.ggml.token_type", GGUF_TYPE_INT32, n, types);
  if (n_merges) gguf_writer_kv_arr_str(w, "tokenizer.ggml.merges", n_merges, merges);
  gguf_writer_kv_u32(w, "tokenizer.ggml.bos_token_id", (uint32_t)bos);
  gguf_writer_kv_u32(w, "tokenizer.ggml.eos_token_id", (uint32_t)eos);
  uint8_t f = 0;
  gguf_writer_kv(w, "tokenizer.ggml.add_space_prefix", GGUF_TYPE_BOOL, &f);
  if (add_bos >= 0) {
    uint8_t b = (uint8_t)add_bos;
    gguf_writer_kv(w, "tokenizer.ggml.add_bos_token", GGUF_TYPE_BOOL, &b);
  }
  wgllm_status st = gguf_writer_finish_path(w, path, err);
  gguf_writer_free(w);
  return st;
}

/* Tiny gemma4 vocabularies: what the newline rule, the newline split, U+2581 without a prefix, byte
   fallback, user-defined tokens and the BOS override each do; the GGUF loader's acceptance and refusals. */
static void gemma4_synthetic(void) {
  char bytes[256][8];
  llm_err err = {0};
  const char *tok[300];
  int32_t type[300];
  size_t n = 0;
  const char *ctl[] = {"<pad>", "<eos>", "<bos>", "<unk>"};
  for (int i = 0; i < 4; i++) {
    tok[n] = ctl[i];
    type[n++] = 3;
  }
  for (int b = 0; b < 256; b++) {
    snprintf(bytes[b], sizeof bytes[b], "<0x%02X>", b);
    tok[n] = bytes[b];
    type[n++] = 6;
  }
  const char *pieces[] = {"a",
                          "b",
                          "\n",
                          "\n\n",
                          "\xe2\x96\x81",
                          "ab",
                          "a\n",
                          "\xe2\x96\x81"
                          "a",
                          "\xe2\x96\x81\xe2\x96\x81"};
  size_t first = n;
  for (size_t i = 0; i < sizeof pieces / sizeof *pieces; i++) {
    tok[n] = pieces[i];
    type[n++] = 1;
  }
  tok[n] = "<tool>";
  type[n++] = 4;
  enum { A = 0, B, NL, NL2, SP, AB, ANL, SPA, SPSP };
  const int32_t tool = (int32_t)n - 1;
  /* no "\n \n": "\n\n" is reachable only as a whole newline run; "a \n" would join across the split */
  const char *merges[] = {"a b", "a \n", "\xe2\x96\x81 a", "\xe2\x96\x81 \xe2\x96\x81"};
  tokenizer *t = NULL;
  wgllm_status st = tok_create("gemma4", NULL, n, tok, NULL, NULL, type, 4, merges, 2, 1, 0, 0, &t, &err);
  CHECK(st == WGLLM_OK, "tok_create gemma4: %s", err.msg);
  if (t) {
    struct {
      const char *text;
      int32_t want[8];
      size_t n;
    } cases[] = {
        /* the newline run "\n\n" is a token: whole, though no merge makes it */
        {"ab\n\nab", {first + AB, first + NL2, first + AB}, 3},
        /* "a\n" is a token and "a \n" a merge, but the newline is a piece of its own */
        {"a\nb", {first + A, first + NL, first + B}, 3},
        /* "\n\n\n" is no token: merged as usual (nothing merges newlines here) */
        {"\n\n\n", {first + NL, first + NL, first + NL}, 3},
        /* spaces are U+2581, none prepended; merges by rank, leftmost first */
        {"a", {first + A}, 1},
        {" a  a", {first + SPA, first + SP, first + SPA}, 3},
        /* byte fallback for characters outside the vocabulary; user-defined tokens matched in the text */
        {"x<tool>\xc3\xa9", {4 + 'x', tool, 4 + 0xC3, 4 + 0xA9}, 4},
        /* control tokens are special: parsed only with parse_special */
        {"<eos>b", {1, first + B}, 2},
    };
    for (size_t c = 0; c < sizeof cases / sizeof *cases; c++) {
      int32_t *ids;
      size_t m;
      enc(t, cases[c].text, 0, 1, &ids, &m);
      char a[200], b[200];
      fmt_ids(a, sizeof a, ids, m);
      fmt_ids(b, sizeof b, cases[c].want, cases[c].n);
      CHECK(ids_equal(ids, m, cases[c].want, cases[c].n), "gemma4 synthetic \"%s\": got [%s] want [%s]", cases[c].text,
            a, b);
      size_t l;
      char *d = decode_str(t, ids, m, 0, &l);
      CHECK(d && l == strlen(cases[c].text) && !memcmp(d, cases[c].text, l), "gemma4 synthetic decode \"%s\": \"%s\"",
            cases[c].text, d ? d : "(null)");
      free(d);
      check_stream(t, "gemma4", cases[c].text, ids, m);
      free(ids);
    }
    int32_t *ids;
    size_t m;
    enc(t, "a", 1, 1, &ids, &m); /* add_bos 0 was passed: BOS anyway */
    CHECK(m == 2 && ids[0] == 2 && ids[1] == (int32_t)first + A, "gemma4 synthetic: BOS forced (%zu ids)", m);
    free(ids);
    tok_set_add_space_prefix(t, 1); /* no effect on gemma4 */
    enc(t, "a", 0, 1, &ids, &m);
    CHECK(m == 1 && ids[0] == (int32_t)first + A, "gemma4: add_space_prefix has no effect (%zu ids)", m);
    free(ids);
    CHECK(tok_find(t, "<0x0A>") == 4 + 10 && tok_find(t, "<bos>") == 2 && tok_find(t, "\n\n") == (int32_t)first + NL2,
          "gemma4 tok_find %d %d %d", tok_find(t, "<0x0A>"), tok_find(t, "<bos>"), tok_find(t, "\n\n"));
    CHECK(tok_bos(t) == 2 && tok_eos(t) == 1 && tok_is_eog(t, 1) && tok_is_special(t, 2) && !tok_is_special(t, tool),
          "gemma4 synthetic bos/eos/special");
    tok_free(t);
  }
  /* (5) merges are required */
  t = NULL;
  st = tok_create("gemma4", NULL, n, tok, NULL, NULL, type, 0, NULL, 2, 1, 1, 0, &t, &err);
  CHECK(st == WGLLM_ERR_FORMAT && !t && strstr(err.msg, "tokenizer.ggml.merges"), "gemma4 without merges: %d %s",
        (int)st, err.msg);
  /* the same through GGUF files: add_bos_token false still adds BOS; no merges is refused by name; an unknown
     model lists gemma4 among the supported ones */
  const char *path = g4_tmp_path("g4");
  st = g4_write(path, "gemma4", n, tok, type, 4, merges, 2, 1, 0, &err);
  CHECK(st == WGLLM_OK, "writing %s: %s", path, err.msg);
  st = llm_load_tokenizer(path, &t, NULL, &err);
  CHECK(st == WGLLM_OK, "gemma4 GGUF: %s", err.msg);
  if (t) {
    int32_t *ids;
    size_t m;
    enc(t, "ab\n\nab", 1, 1, &ids, &m);
    int32_t want[] = {2, (int32_t)first + AB, (int32_t)first + NL2, (int32_t)first + AB};
    CHECK(ids_equal(ids, m, want, 4), "gemma4 GGUF (add_bos_token false): BOS and ids (%zu ids)", m);
    free(ids);
    tok_free(t);
    t = NULL;
  }
  st = g4_write(path, "gemma4", n, tok, type, 4, merges, 2, 1, -1, &err);
  CHECK(st == WGLLM_OK, "writing %s: %s", path, err.msg);
  st = llm_load_tokenizer(path, &t, NULL, &err);
  CHECK(st == WGLLM_OK, "gemma4 GGUF without add_bos_token: %s", err.msg);
  if (t) {
    int32_t *ids;
    size_t m;
    enc(t, "b", 1, 1, &ids, &m);
    CHECK(m == 2 && ids[0] == 2, "gemma4 GGUF without add_bos_token: BOS (%zu ids)", m);
    free(ids);
    tok_free(t);
    t = NULL;
  }
  st = g4_write(path, "gemma4", n, tok, type, 0, NULL, 2, 1, 1, &err);
  CHECK(st == WGLLM_OK, "writing %s: %s", path, err.msg);
  st = llm_load_tokenizer(path, &t, NULL, &err);
  CHECK(st == WGLLM_ERR_FORMAT && !t && strstr(err.msg, "tokenizer.ggml.merges") && strstr(err.msg, path),
        "gemma4 GGUF without merges: %d %s", (int)st, err.msg);
  tok_free(t);
  t = NULL;
  st = g4_write(path, "bert", n, tok, type, 4, merges, 2, 1, 1, &err);
  CHECK(st == WGLLM_OK, "writing %s: %s", path, err.msg);
  st = llm_load_tokenizer(path, &t, NULL, &err);
  CHECK(st == WGLLM_ERR_UNSUPPORTED && !t && strstr(err.msg, "\"bert\"") && strstr(err.msg, "gemma4"),
        "GGUF model bert: %d %s", (int)st, err.msg);
  tok_free(t);
  unlink(path);
}

/* The Gemma 3 vocabulary as llama.cpp's gemma4 tokenizer: tokens by id, types (control for special added
   tokens, user-defined for the other added ones, byte for <0xXX>, normal otherwise), merges as "left
   right". A: written to a GGUF file (add_bos_token false) and loaded by llm_load_tokenizer. B: through
   tok_create with the newline runs typed normal (as llama.cpp's converter types an added token that is in the
   base vocabulary) and the merges that make newline runs dropped, so only the newline rule makes "\n\n". */
static void gemma4_vs_gemma3(const cJSON *strings) {
  char path[256];
  llm_err err = {0};
  snprintf(path, sizeof path, TOK_DIR "/gemma3/tokenizer.json");
  size_t len;
  char *text = th_read_file(path, &len);
  tokenizer *hf = load("gemma3");
  if (!text || !hf) {
    CHECK(0, "%s missing: run scripts/fetch_tokenizers.sh", path);
    free(text);
    tok_free(hf);
    return;
  }
  double t0 = now_s();
  cJSON *root = cJSON_ParseWithLength(text, len);
  free(text);
  size_t n = tok_vocab_size(hf);
  const char **toks = calloc(n, sizeof *toks);
  int32_t *types = calloc(n, sizeof *types);
  char **owned = calloc(n, sizeof *owned);
  size_t bad_pieces = 0, bad_added = 0;
  for (int32_t id = 0; id < (int32_t)n; id++) { /* pieces from the HF tokenizer (added contents win) */
    size_t l = 0;
    const char *p = tok_piece(hf, id, &l); /* not NUL-terminated */
    bad_pieces += p == NULL || memchr(p, 0, l) != NULL;
    owned[id] = malloc(l + 1);
    if (p) memcpy(owned[id], p, l);
    owned[id][p ? l : 0] = 0;
    toks[id] = owned[id];
    types[id] = l == 6 && !strncmp(toks[id], "<0x", 3) ? 6 : 1;
  }
  size_t n_added = 0;
  for (const cJSON *a = jget(root, "added_tokens")->child; a; a = a->next, n_added++) {
    int32_t id = (int32_t)jget(a, "id")->valuedouble;
    types[id] = jget(a, "special")->type == cJSON_True ? 3 : 4;
    bad_added += strcmp(toks[id], jget(a, "content")->valuestring) != 0;
  }
  CHECK(bad_pieces == 0 && bad_added == 0, "gemma3 pieces: %zu missing or with a NUL, %zu added unlike the file",
        bad_pieces, bad_added);
  const cJSON *mj = jget(jget(root, "model"), "merges");
  size_t n_merges = 0;
  for (const cJSON *m = mj->child; m; m = m->next)
    n_merges++;
  char **merges = calloc(n_merges, sizeof *merges);
  const char **merges_b = calloc(n_merges, sizeof *merges_b);
  size_t k = 0, nb = 0;
  for (const cJSON *m = mj->child; m; m = m->next, k++) {
    const char *l = m->child->valuestring, *r = m->child->next->valuestring;
    merges[k] = malloc(strlen(l) + strlen(r) + 2);
    sprintf(merges[k], "%s %s", l, r);
    if (strspn(l, "\n") != strlen(l) || strspn(r, "\n") != strlen(r)) merges_b[nb++] = merges[k];
  }
  /* Gemma 3's newline runs: which are tokens, and as what */
  int n_nl = 0, n_nl_all = 0, max_nl = 0;
  int32_t *types_b = malloc(n * sizeof *types_b);
  memcpy(types_b, types, n * sizeof *types);
  for (size_t i = 0; i < n; i++) {
    size_t l = strlen(toks[i]);
    if (l && strspn(toks[i], "\n") == l) {
      n_nl += types[i] == 4; /* each an added (user-defined) token */
      n_nl_all++;
      if ((int)l > max_nl) max_nl = (int)l;
      types_b[i] = 1;
    }
  }
  CHECK(n_nl == 31 && max_nl == 31 && n_nl_all == 31 && tok_find(hf, "\n") == 107 && tok_find(hf, "\n\n") == 108,
        "gemma3 newline tokens: %d, up to %d newlines", n_nl, max_nl);
  printf("gemma3 arrays: %zu tokens (%zu added), %zu merges (%zu without newline-run merges), newline runs of 1..%d "
         "are tokens (%d), read in %.3f s\n",
         n, n_added, n_merges, nb, max_nl, n_nl, now_s() - t0);

  textset flat = {0}, lines_a = {0}, lines_b = {0};
  g4_flat_texts(strings, &flat);
  g4_newline_texts(strings, &flat, 63, &lines_a);
  g4_newline_texts(strings, &flat, (size_t)max_nl, &lines_b);

  /* A: through a GGUF file */
  const char *gpath = g4_tmp_path("gemma3-as-g4");
  t0 = now_s();
  wgllm_status st = g4_write(gpath, "gemma4", n, toks, types, n_merges, (const char *const *)merges, tok_bos(hf),
                             tok_eos(hf), 0, &err);
  CHECK(st == WGLLM_OK, "writing %s: %s", gpath, err.msg);
  tokenizer *ga = NULL;
  if (!st) st = llm_load_tokenizer(gpath, &ga, NULL, &err);
  CHECK(st == WGLLM_OK && ga, "gemma3 as gemma4 GGUF: %s", err.msg);
  unlink(gpath);
  printf("gemma3 as GGUF gemma4: written and loaded in %.3f s\n", now_s() - t0);
  if (ga) {
    g4_compare("gemma3 as gemma4 (A: GGUF, add_bos_token false)", ga, hf, &flat, &lines_a);
    tok_free(ga);
  }
  /* B: newline runs normal, their merges gone */
  tokenizer *gb = NULL;
  st =
      tok_create("gemma4", NULL, n, toks, NULL, NULL, types_b, nb, merges_b, tok_bos(hf), tok_eos(hf), 0, 0, &gb, &err);
  CHECK(st == WGLLM_OK, "tok_create(gemma3 as gemma4, B): %s", err.msg);
  if (gb) {
    g4_compare("gemma3 as gemma4 (B: newline runs normal, unmerged)", gb, hf, &flat, &lines_b);
    tok_free(gb);
  }
  ts_free(&flat);
  ts_free(&lines_a);
  ts_free(&lines_b);
  for (size_t i = 0; i < n_merges; i++)
    free(merges[i]);
  free(merges);
  free(merges_b);
  for (size_t i = 0; i < n; i++)
    free(owned[i]);
  free(owned);
  free(toks);
  free(types);
  free(types_b);
  cJSON_Delete(root);
  tok_free(hf);
}

int main(void) {
  gguf_bad_arrays();
  gguf_numeric_fields();
  hf_bad_ids();
  hf_bounded();
  dir_named_json();
  size_t sl = 0, el = 0;
  /* TOK_STRINGS / TOK_EXPECTED point the golden test at other files (e.g. a differential fuzz set) */
  const char *spath = getenv("TOK_STRINGS") ? getenv("TOK_STRINGS") : "data/tokenizers/strings.json";
  const char *epath = getenv("TOK_EXPECTED") ? getenv("TOK_EXPECTED") : "data/tokenizers/expected.json";
  char *stext = th_read_file(spath, &sl);
  char *etext = th_read_file(epath, &el);
  CHECK(stext && etext, "%s and %s must exist (run from tests/)", spath, epath);
  cJSON *strings = stext ? cJSON_ParseWithLength(stext, sl) : NULL;
  cJSON *expected = etext ? cJSON_ParseWithLength(etext, el) : NULL;
  CHECK(strings && expected, "cannot parse strings.json / expected.json");
  if (strings && expected) {
    /* the authority is Hugging Face tokenizers; a file from any other implementation is not accepted */
    const cJSON *gen = jget(expected, "generator");
    CHECK(gen && gen->type == cJSON_String && !strcmp(gen->valuestring, "hf-tokenizers"),
          "%s was not made by Hugging Face tokenizers (generator: %s)", epath,
          gen && gen->type == cJSON_String ? gen->valuestring : "(none)");
    const char *names[] = {"llama2", "llama3", "qwen3", "gemma3"};
    for (int i = 0; i < 4; i++)
      golden(names[i], strings, expected);
  }
  if (strings && expected) {
    gguf_equivalence("llama3", "gpt2", "llama-bpe", 1, strings, expected);
    gguf_equivalence("qwen3", "gpt2", "qwen2", 1, strings, expected);
    gguf_equivalence("llama2", "llama", NULL, 1, strings, expected);
    gguf_equivalence("gemma3", "llama", NULL, 0, strings, expected);
    gemma4_vs_gemma3(strings);
  }
  special_behaviour();
  unsupported();
  synthetic();
  gemma4_synthetic();
  cJSON_Delete(strings);
  cJSON_Delete(expected);
  free(stext);
  free(etext);
  return th_finish("test_tokenizer");
}
