/* Tokenizer golden tests: the four reference tokenizers (Llama 2-style SentencePiece BPE, Llama 3, Qwen 3,
   Gemma 3; fetched by scripts/fetch_tokenizers.sh into ../third_party/tokenizers) encode every string of
   data/tokenizers/strings.json to exactly the ids in data/tokenizers/expected.json (with and without
   special tokens), decode back to the expected text, round-trip, and stream-decode to the whole decode.
   Also: error paths (invalid UTF-8, unknown ids, unsupported tokenizer.json types), parse_special=0,
   EOG/BOS/EOS, tiny synthetic tok_create tokenizers of both types, and load/encode timings. */
#include "gguf_write.h"
#include "harness.h"
#include "tokenizer.h"
#include "tokenizer_load.h"
#include <cjson/cJSON.h>
#include <stdlib.h>
#include <string.h>
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
  char *text = NULL, err[256];
  wgllm_status st = tok_decode(t, ids, n, skip, &text, len, err, sizeof err);
  CHECK(st == WGLLM_OK, "tok_decode: %s", err);
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
  char path[256], cfg[256], err[512];
  snprintf(path, sizeof path, TOK_DIR "/%s/tokenizer.json", tname);
  snprintf(cfg, sizeof cfg, TOK_DIR "/%s/tokenizer_config.json", tname);
  FILE *f = fopen(path, "rb");
  CHECK(f != NULL, "%s is missing: run scripts/fetch_tokenizers.sh (from the repository root) first", path);
  if (!f) return;
  fclose(f);
  tokenizer *t = NULL;
  double t0 = now_s(), c0 = cpu_s();
  wgllm_status st = tok_load_hf(path, cfg, &t, err, sizeof err);
  double dt = now_s() - t0, dc = cpu_s() - c0;
  CHECK(st == WGLLM_OK, "tok_load_hf(%s): %s", path, err);
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
    st = tok_encode(t, text, tl, 0, 1, &ids, &n, err, sizeof err);
    CHECK(st == WGLLM_OK, "%s/%s encode: %s", tname, sname, err);
    st = tok_encode(t, text, tl, 1, 1, &ids_sp, &n_sp, err, sizeof err);
    CHECK(st == WGLLM_OK, "%s/%s encode(add_special): %s", tname, sname, err);
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
    st = tok_encode(t, big, big_len, 1, 1, &ids, &n, err, sizeof err);
    dt = now_s() - t0;
    CHECK(st == WGLLM_OK, "%s: long encode: %s", tname, err);
    printf("%-7s encode %zu bytes -> %zu ids in %.3f s (%.1f MB/s)\n", tname, big_len, n, dt, big_len / dt / 1e6);
    free(ids);
    free(big);
  }
  tok_free(t);
}

static tokenizer *load(const char *name) {
  char path[256], cfg[256], err[512];
  snprintf(path, sizeof path, TOK_DIR "/%s/tokenizer.json", name);
  snprintf(cfg, sizeof cfg, TOK_DIR "/%s/tokenizer_config.json", name);
  tokenizer *t = NULL;
  if (tok_load_hf(path, cfg, &t, err, sizeof err) != WGLLM_OK) return NULL;
  return t;
}

static void enc(const tokenizer *t, const char *s, int add, int parse, int32_t **ids, size_t *n) {
  char err[256];
  wgllm_status st = tok_encode(t, s, strlen(s), add, parse, ids, n, err, sizeof err);
  CHECK(st == WGLLM_OK, "encode \"%s\": %s", s, err);
}

static int contains(const int32_t *ids, size_t n, int32_t id) {
  for (size_t i = 0; i < n; i++)
    if (ids[i] == id) return 1;
  return 0;
}

static void special_behaviour(void) {
  char err[256];
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
    wgllm_status st = tok_encode(l3, bad[i], strlen(bad[i]), 0, 1, &ids, &n, err, sizeof err);
    CHECK(st == WGLLM_ERR_INVALID_ARG && strstr(err, "UTF-8"), "invalid UTF-8 #%zu: %d %s", i, st, err);
    free(ids);
  }
  {
    int32_t bad_ids[] = {9906, 999999};
    char *text = NULL;
    size_t tl;
    wgllm_status st = tok_decode(l3, bad_ids, 2, 0, &text, &tl, err, sizeof err);
    CHECK(st == WGLLM_ERR_INVALID_ARG && strstr(err, "999999") && strstr(err, "position 1"), "unknown id: %s", err);
    free(text);
    int32_t neg = -5;
    st = tok_decode(g, &neg, 1, 0, &text, &tl, err, sizeof err);
    CHECK(st == WGLLM_ERR_INVALID_ARG && strstr(err, "-5"), "negative id: %s", err);
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
    char err[512] = "";
    tokenizer *t = (tokenizer *)1;
    wgllm_status st = tok_load_hf(cases[i].file, NULL, &t, err, sizeof err);
    CHECK(st == cases[i].want && t == NULL && strstr(err, cases[i].needle) && strstr(err, cases[i].file),
          "%s: status %d, message \"%s\"", cases[i].file, st, err);
  }
}

/* Tiny vocabularies through tok_create, as the GGUF loader will call it. */
static void synthetic(void) {
  char err[256];
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
    wgllm_status st = tok_create("llama", NULL, n, tok, NULL, score, type, 0, NULL, 1, 2, 1, 0, &t, err, sizeof err);
    CHECK(st == WGLLM_OK, "tok_create llama: %s", err);
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
        tok_create("gpt2", "gpt-2", n, tok, NULL, NULL, type, 9, merges, -1, (int32_t)n - 1, 0, 0, &t, err, sizeof err);
    CHECK(st == WGLLM_OK, "tok_create gpt2: %s", err);
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
    st = tok_create("gpt2", "no-such-pre", n, tok, NULL, NULL, type, 9, merges, -1, -1, 0, 0, &u, err, sizeof err);
    CHECK(st == WGLLM_ERR_UNSUPPORTED && u == NULL && strstr(err, "no-such-pre"), "unknown pre: %s", err);
    st = tok_create("bert", NULL, n, tok, NULL, NULL, type, 0, NULL, -1, -1, 0, 0, &u, err, sizeof err);
    CHECK(st == WGLLM_ERR_UNSUPPORTED && strstr(err, "bert"), "unknown type: %s", err);
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
        st = tok_create("gpt2", P[k], n2, tok, NULL, NULL, type, 1, oh_merge, -1, -1, 0, 0, &tp, err, sizeof err);
        CHECK(st == WGLLM_OK, "tok_create pre %s: %s", P[k], err);
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
    st = tok_create("gpt2", "gpt-2", n, tok, NULL, NULL, type, 1, bad_merge, -1, -1, 0, 0, &u, err, sizeof err);
    CHECK(st == WGLLM_ERR_FORMAT && strstr(err, "merge 0"), "bad merge: %s", err);
  }
}

/* The GGUF path: rebuild a real vocabulary as a GGUF stores it (token strings by id, token types, merges
   as "left right", or SentencePiece scores) through tok_create, and require HF's ids for every string. */
static void gguf_equivalence(const char *tname, const char *type, const char *pre, int space_prefix,
                             const cJSON *strings, const cJSON *expected) {
  char path[256], err[512];
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
                               (const char *const *)merges, tok_bos(hf), tok_eos(hf), add_bos, 0, &t, err, sizeof err);
  double dt = now_s() - t0;
  CHECK(st == WGLLM_OK, "tok_create(%s as %s/%s): %s", tname, type, pre ? pre : "-", err);
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
    char path[64], err[512];
    snprintf(path, sizeof path, "/tmp/wgllm-test-tok-%d-%d.gguf", (int)getpid(), k);
    wgllm_status st = gguf_writer_finish_path(w, path, err, sizeof err);
    gguf_writer_free(w);
    CHECK(st == WGLLM_OK, "writing %s: %s", path, err);
    tokenizer *t = NULL;
    st = llm_load_tokenizer(path, &t, NULL, err, sizeof err);
    const char *what = k == 0 ? "tokenizer.ggml.tokens" : "tokenizer.ggml.merges";
    CHECK(st == WGLLM_ERR_FORMAT && !t && strstr(err, what) && strstr(err, "not of strings"),
          "GGUF %s of numbers: %d, %s", what, (int)st, err);
    tok_free(t);
    unlink(path);
  }
}

/* A tokenizer.json whose vocabulary names an id far past its entries (2^31 - 2 once asked for 19 GB) or a
   fractional one is refused by name before anything is sized from it. */
static void hf_bad_ids(void) {
  static const char *ids[] = {"2147483646", "1.5"};
  for (int k = 0; k < 2; k++) {
    char path[64], err[512], js[512];
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
    wgllm_status st = tok_load_hf(path, NULL, &t, err, sizeof err);
    CHECK(st == WGLLM_ERR_FORMAT && !t && strstr(err, "\"b\" has no valid id"), "vocab id %s: %d, %s", ids[k], (int)st,
          err);
    tok_free(t);
    unlink(path);
  }
}

int main(void) {
  gguf_bad_arrays();
  hf_bad_ids();
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
  }
  special_behaviour();
  unsupported();
  synthetic();
  cJSON_Delete(strings);
  cJSON_Delete(expected);
  free(stext);
  free(etext);
  return th_finish("test_tokenizer");
}
