/* The grammar engine (src/grammar/grammar.h): GBNF parsing, each construct accepted and refused on hand-written
   strings and each error checked for its line:column and what it names; matching over UTF-8 split across tokens,
   repetition bounds, can_end / must_end, EOG, rollback, the stack bound; masks compared bit for bit with a brute
   force reference (each token tried on a clone of the matcher) along random walks over random vocabularies, with
   shared and tiny caches and two threads on one cache; JSON schemas: every schema of tests/data/grammar/schemas
   compiled, random documents walked out of its matcher and checked by a JSON schema validator written here,
   hand-written invalid documents refused, unsupported and malformed schemas refused naming keyword and pointer.
   `test_grammar --bench` times masks over a synthetic 128K-token vocabulary along JSON documents, cold and warm, and
   the guard near a token limit (grammar_matcher_mask_within against an accept a token). */
#include "grammar.h"
#include "harness.h"
#include <cjson/cJSON.h>
#include <dirent.h>
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* ---- vocabularies ---- */

typedef struct tvocab {
  uint32_t n, cap;
  char **bytes;
  uint32_t *lens;
  uint8_t *kinds;
  grammar_vocab *v;
} tvocab;

static void tv_add(tvocab *t, const char *b, uint32_t len, uint8_t kind) {
  if (t->n == t->cap) {
    t->cap = t->cap ? 2 * t->cap : 512;
    t->bytes = realloc(t->bytes, t->cap * sizeof *t->bytes);
    t->lens = realloc(t->lens, t->cap * sizeof *t->lens);
    t->kinds = realloc(t->kinds, t->cap);
  }
  t->bytes[t->n] = malloc(len + 1);
  memcpy(t->bytes[t->n], b, len);
  t->lens[t->n] = len;
  t->kinds[t->n++] = kind;
}

static void tv_build(tvocab *t) {
  llm_err e = {0};
  t->v = grammar_vocab_create(t->n, (const char *const *)t->bytes, t->lens, t->kinds, &e);
  if (!t->v) {
    fprintf(stderr, "test_grammar: vocabulary: %s\n", e.msg);
    exit(1);
  }
}

static void tv_free(tvocab *t) {
  for (uint32_t i = 0; i < t->n; i++)
    free(t->bytes[i]);
  free(t->bytes), free(t->lens), free(t->kinds);
  grammar_vocab_free(t->v);
  memset(t, 0, sizeof *t);
}

/* every single byte (id = the byte), then one EOG token (256) */
static tvocab bytes_vocab;
#define BYTE_EOG 256

static void make_bytes_vocab(void) {
  for (int b = 0; b < 256; b++) {
    char c = (char)b;
    tv_add(&bytes_vocab, &c, 1, GRAMMAR_TOK_TEXT);
  }
  tv_add(&bytes_vocab, "", 0, GRAMMAR_TOK_EOG);
  tv_build(&bytes_vocab);
}

static grammar *gbnf(const char *text) {
  grammar *g = NULL;
  llm_err e = {0};
  if (grammar_from_gbnf(text, strlen(text), &g, &e)) {
    CHECK(0, "grammar did not compile: %s\n%s", e.msg, text);
    return NULL;
  }
  return g;
}

/* is s (n bytes) a whole sentence of g? */
static int sentence(const grammar *g, const char *s, size_t n) {
  grammar_matcher *m = grammar_matcher_create(g, bytes_vocab.v, NULL);
  int ok = m && grammar_matcher_accept_bytes(m, s, n) && grammar_matcher_can_end(m);
  grammar_matcher_free(m);
  return ok;
}
static int is_sentence(const grammar *g, const char *s) { return sentence(g, s, strlen(s)); }
/* is s a prefix of a sentence? */
static int is_prefix(const grammar *g, const char *s) {
  grammar_matcher *m = grammar_matcher_create(g, bytes_vocab.v, NULL);
  int ok = m && grammar_matcher_accept_bytes(m, s, strlen(s));
  grammar_matcher_free(m);
  return ok;
}

/* the grammar's sentences and non-sentences, one call per construct */
static void expect(const char *text, const char *const *yes, const char *const *no) {
  grammar *g = gbnf(text);
  if (!g) return;
  for (int i = 0; yes && yes[i]; i++)
    CHECK(is_sentence(g, yes[i]), "'%s' refused by:\n%s", yes[i], text);
  for (int i = 0; no && no[i]; i++)
    CHECK(!is_sentence(g, no[i]), "'%s' accepted by:\n%s", no[i], text);
  grammar_free(g);
}
#define L(...) ((const char *const[]){__VA_ARGS__, NULL})

static void test_gbnf_constructs(void) {
  expect("root ::= \"abc\"", L("abc"), L("", "ab", "abcd", "abd"));
  expect("root ::= \"a\" | \"bc\" | \"\"", L("a", "bc", ""), L("b", "abc"));
  expect("root ::= \"a\" \"b\" \"c\"", L("abc"), L("ab", "acb"));
  expect("root ::= [a-c0-9_]", L("a", "b", "c", "0", "9", "_"), L("d", "A", "", "ab"));
  expect("root ::= [^\"\\\\]", L("a", "'", "\xc3\xa9"), L("\"", "\\", ""));
  expect("root ::= . .", L("ab", "\n\t", "\xf0\x9f\x98\x80x", "\xe4\xb8\xad\xc3\xa9"), L("a", "abc"));
  expect("root ::= (\"a\" | \"b\") (\"c\" | \"d\" \"e\")", L("ac", "ade", "bc", "bde"), L("ad", "a", "c"));
  expect("root ::= \"a\"*", L("", "a", "aaaaaaaaaaaaaaaaaaaaaaaa"), L("b", "ab"));
  expect("root ::= \"ab\"+", L("ab", "abab"), L("", "a", "aba"));
  expect("root ::= \"x\"? \"y\"", L("y", "xy"), L("xxy", "x"));
  expect("root ::= [0-9]{3}", L("123", "000"), L("12", "1234", ""));
  expect("root ::= [0-9]{2,}", L("12", "123456789"), L("1", ""));
  expect("root ::= \"a\"{2,4}", L("aa", "aaa", "aaaa"), L("a", "aaaaa", ""));
  expect("root ::= \"a\"{0,2} \"b\"", L("b", "ab", "aab"), L("aaab"));
  expect("root ::= \"a\"{ 1 , 2 }", L("a", "aa"), L("", "aaa"));
  expect("root ::= (\"ab\" | \"c\"){2}", L("abab", "abc", "cc", "cab"), L("ab", "ccc"));
  /* comments, rule names with dashes and digits, references before definitions, multi-line rules */
  expect("# a comment\nroot ::= first-part part2 # trailing\n\nfirst-part ::= \"a\" # x\npart2 ::= \"b\"\n", L("ab"),
         L("a", "b"));
  expect("root ::= (\n  \"a\"\n  | \"b\"  # inside a group newlines are free\n)\n", L("a", "b"), L("", "ab"));
  expect("root ::= \"a\" |\n  \"b\" |\n  \"c\"", L("a", "b", "c"), L("d"));
  expect("root ::= \"a\"\n  | \"b\"\n  | \"c\"\nother ::= \"z\"", L("a", "b", "c"), L("z"));
  expect("root ::= x\r\nx ::= \"q\"\r\n", L("q"), L(""));
  /* escapes in strings and classes */
  expect("root ::= \"\\n\\t\\r\\\\\\\"\"", L("\n\t\r\\\""), L("n"));
  expect("root ::= \"\\x41\\u00e9\\U0001F600\"", L("A\xc3\xa9\xf0\x9f\x98\x80"), L("A"));
  expect("root ::= [\\x30-\\x32\\]\\[\\-\\^]", L("0", "2", "]", "[", "-", "^"), L("3", "\\"));
  expect("root ::= [a-]", L("a", "-"), L("b"));
  expect("root ::= \"\xc3\xa9t\xc3\xa9\"", L("\xc3\xa9t\xc3\xa9"), L("ete"));
  expect("root ::= [\xce\xb1-\xcf\x89]+", L("\xce\xb1\xce\xb2\xce\xb3", "\xcf\x89"), L("a", "\xce\x91"));
  expect("root ::= [^a]", L("b", "\xf4\x8f\xbf\xbf"), L("a"));
  /* recursion on the right and in the middle */
  expect("root ::= \"(\" root \")\" | \"\"", L("", "()", "((()))"), L("(", "())", ")("));
  expect("root ::= expr\nexpr ::= term ([-+*/] term)*\nterm ::= [0-9]+ | \"(\" expr \")\"",
         L("1", "1+2", "(1+2)*3", "((4))"), L("1+", "(1", "+1"));
  /* the layout of llama.cpp's grammars: a rule's body on the lines after ::=, comments and blank lines inside
     groups, alternatives ending a line with | */
  expect(
      "# a JSON value\n"
      "root ::= value\n"
      "value ::=\n"
      "  obj |\n"
      "  arr |\n"
      "  str |\n"
      "  [0-9]+ ws\n\n"
      "obj ::=\n"
      "  \"{\" ws (\n"
      "    str \":\" ws value # the first member\n"
      "\n"
      "    (\",\" ws str \":\" ws value)*\n"
      "  )? \"}\" ws\n"
      "arr ::= \"[\" ws (value (\",\" ws value)*)? \"]\" ws\n"
      "str ::= \"\\\"\" ( [^\"\\\\\\x7F\\x00-\\x1F] | \"\\\\\" ([\"\\\\/bfnrt] | \"u\" [0-9a-fA-F]{4}) )* \"\\\"\" ws\n"
      "ws ::= | \" \" | \"\\n\" [ \\t]{0,20}\n",
      L("{}", "{\"a\": [1, 2, {\"b\":\"\\u00e9\\n\"}]}", "[ ]", "\"x\" ", "12"),
      L("{\"a\" 1}", "[1,]", "\"\\q\"", "{,}"));
  expect("root ::= (\n"
         "    # a numbered list of moves\n"
         "    \"1. \" move \" \" move \"\\n\"\n"
         "\n"
         "    ([1-9] [0-9]? \". \" move \" \" move \"\\n\")+\n"
         ")\n"
         "move ::= (pawn | piece | castle) [+#]?\n"
         "pawn ::= ([a-h] \"x\")? [a-h] [1-8] (\"=\" [NBRQ])?\n"
         "piece ::= [NBKQR] [a-h]? [1-8]? \"x\"? [a-h] [1-8]\n"
         "castle ::= \"O-O\" (\"-O\")?\n",
         L("1. e4 e5\n2. Nf3 Nc6\n", "1. d4 d5\n2. c4 dxc4\n3. O-O-O Qxd8#\n"),
         L("1. e4 e5\n", "1. e9 e5\n2. a1 a2\n", "1. e4 e5\n2. Nf3\n"));
}

/* the error of a text that does not compile: status, and the message holding each of want */
static void expect_error(const char *text, wgllm_status st, const char *const *want) {
  grammar *g = NULL;
  llm_err e = {0};
  wgllm_status got = grammar_from_gbnf(text, strlen(text), &g, &e);
  CHECK(got == st && !g, "'%s': status %d (want %d)", text, (int)got, (int)st);
  for (int i = 0; want[i]; i++)
    CHECK(strstr(e.msg, want[i]), "'%s': message '%s' lacks '%s'", text, e.msg, want[i]);
  grammar_free(g);
}

static void test_gbnf_errors(void) {
  const wgllm_status I = WGLLM_ERR_INVALID_ARG;
  expect_error("root ::= \"abc", I, L("gbnf 1:10:", "unterminated string", "'\"'"));
  expect_error("root ::= \"ab\ncd\"", I, L("gbnf 1:13:", "newline inside the string"));
  expect_error("root ::= [a-z", I, L("gbnf 1:10:", "unterminated character class", "']'"));
  expect_error("root ::= foo", I, L("gbnf 1:10:", "undefined rule 'foo'"));
  expect_error("root ::= \"a\"\n\nx ::= y\n", I, L("gbnf 3:7:", "undefined rule 'y'"));
  expect_error("foo ::= \"x\"", I, L("no rule named 'root'"));
  expect_error("", I, L("no rule named 'root'"));
  expect_error("root ::= \"a\" )", I, L("gbnf 1:14:", "expected an item", "found ')'"));
  expect_error("root = \"a\"", I, L("gbnf 1:6:", "expected '::='", "'root'", "found '='"));
  expect_error("::= \"a\"", I, L("gbnf 1:1:", "expected a rule name", "found ':'"));
  expect_error("root ::= ( \"a\"", I, L("gbnf 1:15:", "expected ')'", "opened at 1:10", "the end of the text"));
  expect_error("root ::= (\"a\"\n\"b\"", I, L("gbnf 2:4:", "expected ')'"));
  expect_error("root ::= *", I, L("gbnf 1:10:", "'*' has nothing before it"));
  expect_error("root ::= \"a\" | +", I, L("gbnf 1:16:", "'+' has nothing before it"));
  expect_error("root ::= \"a\"{3,2}", I, L("gbnf 1:13:", "maximum is below the minimum"));
  expect_error("root ::= \"a\"{10001}", I, L("gbnf 1:14:", "over 10000"));
  expect_error("root ::= \"a\"{2,x}", I, L("gbnf 1:16:", "expected '}'", "found 'x'"));
  expect_error("root ::= \"a\"{,2}", I, L("gbnf 1:14:", "expected a number"));
  expect_error("root ::= \"\\q\"", I, L("gbnf 1:11:", "unknown escape '\\q'"));
  expect_error("root ::= \"\\x4\"", I, L("gbnf 1:11:", "2 hex digits", "'\\x'"));
  expect_error("root ::= \"\\U00110000\"", I, L("gbnf 1:11:", "beyond U+10FFFF"));
  expect_error("root ::= [z-a]", I, L("gbnf 1:11:", "ends before it starts"));
  expect_error("root ::= \"\xff\"", I, L("gbnf 1:11:", "invalid UTF-8"));
  expect_error("root ::= \"a\"\nroot ::= \"b\"", I, L("gbnf 2:1:", "rule 'root' is defined twice", "first at 1:1"));
  expect_error("root ::= expr\nexpr ::= expr \"+\" term | term\nterm ::= [0-9]", I,
               L("gbnf 2:1:", "left recursion", "rule 'expr'", "'expr' -> 'expr'"));
  expect_error("root ::= a\na ::= b \"x\"\nb ::= c | \"y\"\nc ::= \"\"? a", I,
               L("left recursion", "'a' -> 'b' -> 'c' -> 'a'"));
  expect_error("root ::= (\"a\"?)*", I, L("left recursion", "the repetition at 1:16 in rule 'root'"));
  expect_error("root ::= x\nx ::= (\"\" | \"b\")+", I, L("left recursion", "in rule 'x'"));
  /* the compiled size is bounded: 500 repetitions of 10000 optional items (4 elements each) */
  char *big = malloc(500 * 16 + 16);
  size_t n = (size_t)sprintf(big, "root ::=");
  for (int i = 0; i < 500; i++)
    n += (size_t)sprintf(big + n, " \"a\"{0,10000}");
  expect_error(big, I, L("too large", "4000000 elements"));
  /* groups nested 1000 deep compile, 1001 do not */
  big = realloc(big, 3000);
  for (int depth = 1000; depth <= 1001; depth++) {
    n = (size_t)sprintf(big, "root ::= ");
    for (int i = 0; i < depth; i++)
      big[n++] = '(';
    n += (size_t)sprintf(big + n, "\"a\"");
    for (int i = 0; i < depth; i++)
      big[n++] = ')';
    big[n] = 0;
    if (depth == 1000)
      expect(big, L("a"), L("", "aa"));
    else
      expect_error(big, I, L("gbnf 1:1010:", "nested over 1000 deep"));
  }
  free(big);
}

static int bit(const uint32_t *m, uint32_t id) { return (m[id >> 5] >> (id & 31)) & 1; }

/* ---- matching ---- */

static void test_matching(void) {
  grammar *g = gbnf("root ::= \"a\" \"b\"?");
  grammar_matcher *m = grammar_matcher_create(g, bytes_vocab.v, NULL);
  CHECK(!grammar_matcher_can_end(m) && !grammar_matcher_must_end(m), "at the start");
  CHECK(grammar_matcher_accept(m, 'a') && grammar_matcher_can_end(m) && !grammar_matcher_must_end(m), "after a");
  CHECK(!grammar_matcher_accept(m, 'c') && grammar_matcher_can_end(m), "c refused, state kept");
  CHECK(grammar_matcher_accept(m, 'b') && grammar_matcher_must_end(m), "after ab: must end");
  uint32_t mask[(BYTE_EOG + 32) / 32];
  CHECK(grammar_matcher_mask(m, mask) == 1 && (mask[BYTE_EOG >> 5] >> (BYTE_EOG & 31) & 1), "only EOG at the end");
  CHECK(grammar_matcher_accept(m, BYTE_EOG) && grammar_matcher_ended(m), "EOG accepted");
  CHECK(!grammar_matcher_accept(m, 'a') && !grammar_matcher_accept(m, BYTE_EOG), "nothing after EOG");
  CHECK(grammar_matcher_mask(m, mask) == 0, "an ended matcher allows nothing");
  CHECK(grammar_matcher_rollback(m, 2) && grammar_matcher_can_end(m) && !grammar_matcher_must_end(m),
        "rolled back to after a");
  grammar_matcher_reset(m);
  CHECK(!grammar_matcher_accept(m, BYTE_EOG), "EOG refused before the sentence can end");
  CHECK(!grammar_matcher_rollback(m, 1), "no history after reset");
  CHECK(grammar_matcher_accept(m, 'a') && grammar_matcher_rollback(m, 1) && !grammar_matcher_can_end(m), "rollback");
  CHECK(!grammar_matcher_accept(m, -1) && !grammar_matcher_accept(m, 100000), "ids outside the vocabulary");
  grammar_matcher_free(m);
  grammar_free(g);

  /* UTF-8 split across tokens; partial characters; invalid UTF-8 */
  g = gbnf("root ::= [\xce\xb1-\xcf\x89] \"\xf0\x9f\x98\x80\" .");
  m = grammar_matcher_create(g, bytes_vocab.v, NULL);
  const char *s = "\xce\xb2\xf0\x9f\x98\x80\xe4\xb8\xad";
  for (int i = 0; i < 9; i++) {
    CHECK(grammar_matcher_accept(m, (unsigned char)s[i]), "byte %d of a split text", i);
    CHECK(grammar_matcher_can_end(m) == (i == 8), "can_end after byte %d", i);
  }
  grammar_matcher_free(m);
  CHECK(!is_prefix(g, "\xce\x91"), "Alpha is outside [alpha-omega]");
  CHECK(is_prefix(g, "\xce"), "a lead byte that may complete to alpha..omega");
  CHECK(!is_prefix(g, "\xd0"), "a lead byte whose characters are all outside the class");
  CHECK(!is_prefix(g, "\xce\xb2\xf0\x9f\x98\x81"), "the wrong emoji's last byte");
  CHECK(!is_prefix(g, "\xce\xb2\xf0\x9f\x98\x80\x80"), "a continuation byte at a character boundary");
  CHECK(!is_prefix(g, "\xce\xb2\xf0\x9f\x98\x80\xc0\x80"), "an overlong form");
  CHECK(!is_prefix(g, "\xce\xb2\xf0\x9f\x98\x80\xed\xa0\x80"), "a surrogate");
  CHECK(!is_prefix(g, "\xce\xb2\xf0\x9f\x98\x80\xf4\x90"), "past U+10FFFF");
  CHECK(!is_prefix(g, "\xce\xb2\xf0\x9f\x98\x80\xff"), "byte 0xFF");
  CHECK(is_prefix(g, "\xce\xb2\xf0\x9f\x98\x80\xf4\x8f\xbf"), "U+10FFFF's start");
  CHECK(!is_sentence(g, "\xce\xb2\xf0\x9f\x98\x80\xe4\xb8"), "a sentence cannot end inside a character");
  grammar_free(g);

  /* masks on a vocabulary of multi-byte tokens: a token may end inside a character */
  tvocab tv = {0};
  tv_add(&tv, "\xc3", 1, GRAMMAR_TOK_TEXT);     /* 0: lead of e-acute */
  tv_add(&tv, "\xa9", 1, GRAMMAR_TOK_TEXT);     /* 1: its continuation */
  tv_add(&tv, "\xc3\xa9", 2, GRAMMAR_TOK_TEXT); /* 2: e-acute */
  tv_add(&tv, "x\xc3", 2, GRAMMAR_TOK_TEXT);    /* 3 */
  tv_add(&tv, "\xa9x", 2, GRAMMAR_TOK_TEXT);    /* 4 */
  tv_add(&tv, "x", 1, GRAMMAR_TOK_TEXT);        /* 5 */
  tv_add(&tv, "", 0, GRAMMAR_TOK_TEXT);         /* 6: empty: never */
  tv_add(&tv, "x", 1, GRAMMAR_TOK_NEVER);       /* 7: a control token */
  tv_add(&tv, "</s>", 4, GRAMMAR_TOK_EOG);      /* 8 */
  tv_add(&tv, "\xc3\xa8", 2, GRAMMAR_TOK_TEXT); /* 9: e-grave */
  tv_build(&tv);
  g = gbnf("root ::= (\"x\" | \"\xc3\xa9\")+");
  m = grammar_matcher_create(g, tv.v, NULL);
  uint32_t mk[1];
  CHECK(grammar_matcher_mask(m, mk) == 4 && mk[0] == (1u << 0 | 1u << 2 | 1u << 3 | 1u << 5), "start: %x", mk[0]);
  CHECK(grammar_matcher_accept(m, 3) && !grammar_matcher_can_end(m), "x + lead byte");
  CHECK(grammar_matcher_mask(m, mk) == 2 && mk[0] == (1u << 1 | 1u << 4), "inside e-acute: %x", mk[0]);
  CHECK(!grammar_matcher_accept(m, 9) && !grammar_matcher_accept(m, 6) && !grammar_matcher_accept(m, 7), "refused");
  CHECK(grammar_matcher_accept(m, 4) && grammar_matcher_can_end(m), "continuation + x");
  CHECK(grammar_matcher_mask(m, mk) == 5 && mk[0] == (1u << 0 | 1u << 2 | 1u << 3 | 1u << 5 | 1u << 8), "end: %x",
        mk[0]);
  grammar_matcher_free(m);
  grammar_free(g);
  tv_free(&tv);

  /* the stack bound: an ambiguous grammar whose stacks double with each character fails cleanly */
  g = gbnf("root ::= \"a\" root \"b\" | \"a\" root \"c\" | \"\"");
  m = grammar_matcher_create(g, bytes_vocab.v, NULL);
  int i = 0;
  while (i < 40 && grammar_matcher_accept(m, 'a'))
    i++;
  CHECK(i >= 10 && i < 14, "refused after %d characters (stacks 2^n over 4096)", i);
  CHECK(grammar_matcher_error(m)->status == WGLLM_ERR_UNSUPPORTED && strstr(grammar_matcher_error(m)->msg, "4096"),
        "the error: %s", grammar_matcher_error(m)->msg);
  CHECK(grammar_matcher_mask(m, mask) == 0 && !grammar_matcher_accept(m, 'b'), "the error state allows nothing");
  grammar_matcher_reset(m);
  CHECK(grammar_matcher_error(m)->status == WGLLM_OK && grammar_matcher_accept(m, 'a'), "reset clears it");
  grammar_matcher_free(m);
  grammar_free(g);

  /* rules entered one in another without a character: 900 deep work, 1100 are refused when the matcher starts */
  for (int depth = 900; depth <= 1100; depth += 200) {
    char *t = malloc((size_t)depth * 24 + 64);
    size_t n = (size_t)sprintf(t, "root ::= r0\n");
    for (int i = 0; i < depth; i++)
      n += (size_t)sprintf(t + n, "r%d ::= r%d | \"x\"\n", i, i + 1);
    sprintf(t + n, "r%d ::= \"y\"\n", depth);
    g = gbnf(t);
    llm_err e = {0};
    m = g ? grammar_matcher_create(g, bytes_vocab.v, &e) : NULL;
    if (depth == 900)
      CHECK(m && grammar_matcher_accept(m, 'y') && grammar_matcher_can_end(m), "900 rules deep: %s", e.msg);
    else
      CHECK(!m && e.status == WGLLM_ERR_UNSUPPORTED && strstr(e.msg, "over 1000 deep"), "1100 rules deep: %s", e.msg);
    grammar_matcher_free(m);
    grammar_free(g);
    free(t);
  }
  /* a text nested deeper than the stacks' bound fails cleanly */
  CHECK(!grammar_json_object(&g, NULL), "json object grammar");
  m = grammar_matcher_create(g, bytes_vocab.v, NULL);
  CHECK(grammar_matcher_accept_bytes(m, "{\"a\":", 5), "{\"a\":");
  for (i = 0; i < 30000 && grammar_matcher_accept(m, '['); i++) {
  }
  CHECK(i > 1000 && i < 30000 && strstr(grammar_matcher_error(m)->msg, "deep"), "nested %d deep: %s", i,
        grammar_matcher_error(m)->msg);
  grammar_matcher_free(m);
  grammar_free(g);

  /* clone: the same state, independent afterwards */
  g = gbnf("root ::= \"ab\" \"c\"*");
  m = grammar_matcher_create(g, bytes_vocab.v, NULL);
  grammar_matcher_accept(m, 'a');
  grammar_matcher *c = grammar_matcher_clone(m, NULL);
  CHECK(c && grammar_matcher_accept(c, 'b') && grammar_matcher_can_end(c) && !grammar_matcher_can_end(m), "clone");
  CHECK(grammar_matcher_accept(m, 'b') && grammar_matcher_accept(m, 'c') && !grammar_matcher_accept(m, 'b'), "orig");
  grammar_matcher_free(m); /* the clone outlives the matcher it came from */
  CHECK(grammar_matcher_mask(c, mask) == 2 && bit(mask, 'c') && bit(mask, BYTE_EOG), "the clone's mask");
  grammar_matcher_free(c);
  grammar_free(g);
}

/* ---- masks against a brute force reference ---- */

static uint32_t rnd(th_rng *r, uint32_t n) { return th_u32(r) % n; }
static double unit(th_rng *r) { return th_u32(r) / 4294967296.0; }

/* all single bytes, then random tokens of JSON-ish pieces (some cut inside a UTF-8 character), 2 EOG, a control
   token, an empty one */
static void random_vocab(tvocab *t, th_rng *r, uint32_t extra) {
  static const char *const pieces[] = {"{",
                                       "}",
                                       "[",
                                       "]",
                                       "\"",
                                       ":",
                                       ",",
                                       " ",
                                       "\n",
                                       "\t",
                                       "0",
                                       "1",
                                       "7",
                                       "9",
                                       "-",
                                       ".",
                                       "e",
                                       "E",
                                       "+",
                                       "true",
                                       "false",
                                       "null",
                                       "a",
                                       "b",
                                       "x",
                                       "name",
                                       "id",
                                       "\\",
                                       "u",
                                       "00",
                                       "AF",
                                       "\xc3\xa9",
                                       "\xce\xb1",
                                       "\xf0\x9f\x98\x80",
                                       "\xe4\xb8\xad",
                                       "(",
                                       ")",
                                       "*",
                                       "ab",
                                       "T",
                                       "Z",
                                       "@",
                                       "2024-",
                                       "12",
                                       "T10:",
                                       "  ",
                                       "\n  "};
  const uint32_t np = sizeof pieces / sizeof *pieces;
  for (int b = 0; b < 256; b++) {
    char c = (char)b;
    tv_add(t, &c, 1, GRAMMAR_TOK_TEXT);
  }
  for (uint32_t i = 0; i < extra; i++) {
    char buf[64];
    size_t n = 0;
    for (uint32_t k = 1 + rnd(r, 3); k; k--) {
      const char *p = pieces[rnd(r, np)];
      memcpy(buf + n, p, strlen(p));
      n += strlen(p);
    }
    if (n > 1 && rnd(r, 5) == 0) n = 1 + rnd(r, (uint32_t)n - 1); /* cut, maybe inside a character */
    tv_add(t, buf, (uint32_t)n, GRAMMAR_TOK_TEXT);
  }
  tv_add(t, "<eos>", 5, GRAMMAR_TOK_EOG);
  tv_add(t, "<|im_end|>", 10, GRAMMAR_TOK_EOG);
  tv_add(t, "<ctl>", 5, GRAMMAR_TOK_NEVER);
  tv_add(t, "", 0, GRAMMAR_TOK_TEXT);
  tv_build(t);
}

/* a random walk of up to steps tokens; before each, the mask against clone + accept of every token */
static uint64_t masks_compared;
static void walk_compare(const grammar *g, const tvocab *tv, grammar_cache *cache, th_rng *r, int steps,
                         const char *what) {
  llm_err e = {0};
  grammar_matcher *m = cache ? grammar_matcher_create_shared(cache, &e) : grammar_matcher_create(g, tv->v, &e);
  if (!m) {
    CHECK(0, "%s: matcher: %s", what, e.msg);
    return;
  }
  uint32_t n = tv->n, words = (n + 31) / 32;
  uint32_t *mask = malloc(words * 4), *ids = malloc(n * 4), *within = malloc(words * 4);
  for (int step = 0; step < steps; step++) {
    /* a budget near the bytes left (where a generation's guard uses it), or any */
    uint32_t d = grammar_matcher_min_bytes(m), budget = rnd(r, 4) ? (d < 8 ? 0 : d - 8) + rnd(r, 24) : rnd(r, 64);
    uint32_t within_count = grammar_matcher_mask_within(m, within, budget), within_ref = 0, within_bad = 0;
    uint32_t count = grammar_matcher_mask(m, mask), ref_count = 0, n_ids = 0, bad = 0;
    for (uint32_t id = 0; id < n; id++) {
      grammar_matcher *c = grammar_matcher_clone(m, NULL);
      int ok = grammar_matcher_accept(c, (int32_t)id);
      /* within the budget: the sentence's bytes left after the token (an EOG token: it ended, nothing left) */
      int in = ok && (grammar_matcher_ended(c) || grammar_matcher_min_bytes(c) <= budget);
      grammar_matcher_free(c);
      within_ref += in;
      if (in != bit(within, id) && within_bad++ < 3)
        CHECK(0, "%s step %d: token %u '%.*s' within %u bytes: mask %d, accept + min_bytes %d", what, step, id,
              (int)tv->lens[id], tv->bytes[id], budget, bit(within, id), in);
      ref_count += ok;
      if (ok && tv->kinds[id] == GRAMMAR_TOK_TEXT) ids[n_ids++] = id;
      if (ok != bit(mask, id) && bad++ < 3)
        CHECK(0, "%s step %d: token %u '%.*s': mask %d, accept %d", what, step, id, (int)tv->lens[id], tv->bytes[id],
              bit(mask, id), ok);
    }
    CHECK(count == ref_count, "%s step %d: mask counts %u, reference %u", what, step, count, ref_count);
    CHECK(within_count == within_ref, "%s step %d: mask within %u bytes counts %u, reference %u", what, step, budget,
          within_count, within_ref);
    masks_compared++;
    int can_end = grammar_matcher_can_end(m), eog_ok = 1;
    for (uint32_t id = 0; id < n; id++)
      if (tv->kinds[id] == GRAMMAR_TOK_EOG) eog_ok &= bit(mask, id) == can_end;
    CHECK(eog_ok, "%s step %d: EOG bits and can_end", what, step);
    if (!n_ids || (can_end && rnd(r, 8) == 0)) break;
    uint32_t id = ids[rnd(r, n_ids)];
    CHECK(grammar_matcher_accept(m, (int32_t)id), "%s step %d: an allowed token refused", what, step);
  }
  free(mask), free(ids), free(within);
  grammar_matcher_free(m);
}

static const char *const SCHEMA_FOR_MASKS =
    "{\"type\":\"object\",\"properties\":{"
    "\"id\":{\"type\":\"integer\",\"minimum\":-20,\"maximum\":1234},"
    "\"name\":{\"type\":\"string\",\"maxLength\":6},"
    "\"tags\":{\"type\":\"array\",\"items\":{\"enum\":[\"a\",\"b\",\"x\\u00e9\"]},\"maxItems\":3},"
    "\"ok\":{\"type\":[\"boolean\",\"null\"]},"
    "\"at\":{\"type\":\"string\",\"format\":\"date\"},"
    "\"score\":{\"type\":\"number\",\"minimum\":0,\"maximum\":1},"
    "\"sub\":{\"type\":\"object\",\"properties\":{\"x\":{\"type\":\"number\"}},\"required\":[\"x\"]}},"
    "\"required\":[\"name\",\"sub\"]}";

static void test_masks(void) {
  th_rng r = {20240611};
  tvocab tv = {0};
  random_vocab(&tv, &r, 160);
  cJSON *schema = cJSON_Parse(SCHEMA_FOR_MASKS);
  grammar *gs[7] = {0};
  const char *names[7] = {"arith", "json-object", "schema", "utf8", "bounded", "ambiguous", "strings"};
  gs[0] = gbnf("root ::= expr\nexpr ::= term (ws [-+*/] ws term)*\nterm ::= [0-9]+ (\".\" [0-9]+)? | \"(\" ws expr "
               "ws \")\"\nws ::= [ \\t\\n]{0,3}");
  llm_err e = {0};
  CHECK(!grammar_json_object(&gs[1], &e), "json object grammar: %s", e.msg);
  CHECK(!grammar_from_json_schema(schema, &gs[2], &e), "schema grammar: %s", e.msg);
  gs[3] = gbnf("root ::= ([\xce\xb1-\xcf\x89] | \"\xf0\x9f\x98\x80\" | [^\\x00-\\x7F\xe4\xb8\xad])+ (\"!\" | \"?\")");
  gs[4] = gbnf("root ::= (\"ab\" | \"a\" | \"b\"){2,6} [0-9]{1,3} (\",\" [ ]? [a-z]{1,4}){0,3}");
  gs[5] = gbnf("root ::= x x \"end\"?\nx ::= \"a\"* | \"b\" \"a\"* | \"ab\"");
  gs[6] = gbnf("root ::= \"[\" (str (\", \" str)*)? \"]\"\nstr ::= \"\\\"\" ([^\"\\\\] | \"\\\\\" [\"\\\\nu])* "
               "\"\\\"\"");
  for (int gi = 0; gi < 7; gi++) {
    if (!gs[gi]) continue;
    char what[64];
    grammar_cache *shared = grammar_cache_create(gs[gi], tv.v, 0, NULL);
    grammar_cache *tiny = grammar_cache_create(gs[gi], tv.v, 4096, NULL);
    for (int w = 0; w < 12; w++) {
      snprintf(what, sizeof what, "%s walk %d (%s cache)", names[gi], w, w < 4 ? "own" : w < 8 ? "shared" : "tiny");
      walk_compare(gs[gi], &tv, w < 4 ? NULL : w < 8 ? shared : tiny, &r, 60, what);
    }
    grammar_cache_stats st = grammar_cache_get_stats(shared);
    CHECK(st.exact_hits + st.cut_hits > 0, "%s: the shared cache was never hit", names[gi]);
    grammar_cache_free(shared);
    grammar_cache_free(tiny);
    grammar_free(gs[gi]);
  }
  cJSON_Delete(schema);
  tv_free(&tv);
}

static void bench_vocab(tvocab *t, th_rng *r, uint32_t n, uint32_t **set_out, uint32_t *cap_out);

/* the same on a vocabulary of words, where the walks take whole subtrees at once (the states' runs) */
static void test_masks_words(void) {
  th_rng r = {31337};
  tvocab tv = {0};
  uint32_t *set, cap;
  bench_vocab(&tv, &r, 6000, &set, &cap);
  free(set);
  tv_build(&tv);
  const char *texts[] = {"root ::= \"\\\"\" [^\"\\\\]{0,40} \"\\\"\" [ ]? \"x\"",
                         "root ::= ([a-z ]{1,6} \",\")* [a-z]*", "root ::= [^\\x00-\\x1F]+"};
  grammar *gs[5] = {0};
  for (int i = 0; i < 3; i++)
    gs[i] = gbnf(texts[i]);
  grammar_json_object(&gs[3], NULL);
  cJSON *schema = cJSON_Parse(SCHEMA_FOR_MASKS);
  grammar_from_json_schema(schema, &gs[4], NULL);
  cJSON_Delete(schema);
  for (int gi = 0; gi < 5; gi++) {
    if (!gs[gi]) continue;
    grammar_cache *c = grammar_cache_create(gs[gi], tv.v, 0, NULL);
    for (int w = 0; w < 4; w++) {
      char what[64];
      snprintf(what, sizeof what, "words grammar %d walk %d", gi, w);
      walk_compare(gs[gi], &tv, w & 1 ? c : NULL, &r, 30, what);
    }
    grammar_cache_free(c);
    grammar_free(gs[gi]);
  }
  tv_free(&tv);
}

/* two threads walking one shared cache: every mask equals a private matcher's */
typedef struct thread_arg {
  const grammar *g;
  const tvocab *tv;
  grammar_cache *cache;
  uint64_t seed;
  int bad, masks;
} thread_arg;

static void *thread_walk(void *p) {
  thread_arg *a = p;
  th_rng r = {a->seed};
  uint32_t words = (a->tv->n + 31) / 32;
  uint32_t *m1 = malloc(words * 4), *m2 = malloc(words * 4);
  for (int w = 0; w < 30; w++) {
    grammar_matcher *s = grammar_matcher_create_shared(a->cache, NULL),
                    *o = grammar_matcher_create(a->g, a->tv->v, NULL);
    for (int step = 0; step < 60 && s && o; step++) {
      grammar_matcher_mask(s, m1);
      grammar_matcher_mask(o, m2);
      a->masks++;
      if (memcmp(m1, m2, words * 4)) a->bad++;
      uint32_t ids[4096], n = 0;
      for (uint32_t id = 0; id < a->tv->n && n < 4096; id++)
        if (bit(m1, id) && a->tv->kinds[id] == GRAMMAR_TOK_TEXT) ids[n++] = id;
      if (!n) break;
      uint32_t id = ids[rnd(&r, n)];
      if (!grammar_matcher_accept(s, (int32_t)id) || !grammar_matcher_accept(o, (int32_t)id)) a->bad++;
    }
    grammar_matcher_free(s), grammar_matcher_free(o);
  }
  free(m1), free(m2);
  return NULL;
}

static void test_threads(void) {
  th_rng r = {77};
  tvocab tv = {0};
  random_vocab(&tv, &r, 300);
  grammar *g = NULL;
  grammar_json_object(&g, NULL);
  grammar_cache *c = grammar_cache_create(g, tv.v, 1 << 16, NULL);
  thread_arg a[2] = {{g, &tv, c, 1, 0, 0}, {g, &tv, c, 2, 0, 0}};
  pthread_t t[2];
  for (int i = 0; i < 2; i++)
    pthread_create(&t[i], NULL, thread_walk, &a[i]);
  for (int i = 0; i < 2; i++)
    pthread_join(t[i], NULL);
  for (int i = 0; i < 2; i++)
    CHECK(!a[i].bad && a[i].masks > 100, "thread %d: %d of %d masks differ", i, a[i].bad, a[i].masks);
  grammar_cache_free(c);
  grammar_free(g);
  tv_free(&tv);
}

/* ---- a JSON schema validator (what the generated documents are checked with) ---- */

static const cJSON *sget(const cJSON *s, const char *k) { return cJSON_GetObjectItemCaseSensitive(s, k); }

static const cJSON *v_resolve(const cJSON *root, const char *ref) {
  if (ref[0] != '#') return NULL;
  const cJSON *s = root;
  for (const char *p = ref + 1; *p == '/';) {
    char seg[256];
    size_t k = 0;
    for (p++; *p && *p != '/' && k < 255;) {
      if (p[0] == '~' && (p[1] == '0' || p[1] == '1'))
        seg[k++] = p[1] == '0' ? '~' : '/', p += 2;
      else
        seg[k++] = *p++;
    }
    seg[k] = 0;
    s = cJSON_IsArray(s) ? cJSON_GetArrayItem(s, atoi(seg)) : sget(s, seg);
    if (!s) return NULL;
  }
  return s;
}

static size_t code_points(const char *s) {
  size_t n = 0;
  for (; *s; s++)
    n += ((unsigned char)*s & 0xC0) != 0x80;
  return n;
}

static int digits(const char *s, int n) {
  for (int i = 0; i < n; i++)
    if (s[i] < '0' || s[i] > '9') return 0;
  return 1;
}
static int num(const char *s, int n) {
  int v = 0;
  for (int i = 0; i < n; i++)
    v = v * 10 + s[i] - '0';
  return v;
}

static int valid_date(const char *s) {
  if (strlen(s) != 10 || !digits(s, 4) || s[4] != '-' || !digits(s + 5, 2) || s[7] != '-' || !digits(s + 8, 2))
    return 0;
  int y = num(s, 4), m = num(s + 5, 2), d = num(s + 8, 2);
  static const int dim[] = {31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
  if (m < 1 || m > 12 || d < 1) return 0;
  int leap = (y % 4 == 0 && y % 100 != 0) || y % 400 == 0;
  return d <= dim[m - 1] + (m == 2 && leap);
}

static int valid_time(const char *s) {
  if (strlen(s) < 9 || !digits(s, 2) || s[2] != ':' || !digits(s + 3, 2) || s[5] != ':' || !digits(s + 6, 2)) return 0;
  if (num(s, 2) > 23 || num(s + 3, 2) > 59 || num(s + 6, 2) > 60) return 0;
  s += 8;
  if (*s == '.') {
    int k = 0;
    for (s++; *s >= '0' && *s <= '9'; s++)
      k++;
    if (!k) return 0;
  }
  if (!strcmp(s, "Z") || !strcmp(s, "z")) return 1;
  return (s[0] == '+' || s[0] == '-') && strlen(s) == 6 && digits(s + 1, 2) && s[3] == ':' && digits(s + 4, 2) &&
         num(s + 1, 2) <= 23 && num(s + 4, 2) <= 59;
}

static int is_alnum(char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9'); }

/* labels of letters, digits and inner hyphens (1..63 each), at least min_labels, the last all letters if tld */
static int valid_host(const char *s, int min_labels, int tld) {
  int labels = 0;
  size_t total = strlen(s);
  if (!total || total > 253) return 0;
  for (const char *p = s;;) {
    const char *e = strchr(p, '.');
    size_t n = e ? (size_t)(e - p) : strlen(p);
    if (!n || n > 63 || p[0] == '-' || p[n - 1] == '-') return 0;
    for (size_t i = 0; i < n; i++)
      if (!is_alnum(p[i]) && p[i] != '-') return 0;
    labels++;
    if (!e) {
      if (tld)
        for (size_t i = 0; i < n; i++)
          if (!((p[i] >= 'a' && p[i] <= 'z') || (p[i] >= 'A' && p[i] <= 'Z'))) return 0;
      break;
    }
    p = e + 1;
  }
  return labels >= min_labels;
}

static int valid_email(const char *s) {
  const char *at = strchr(s, '@');
  if (!at || strchr(at + 1, '@') || at == s || at - s > 64) return 0;
  for (const char *p = s; p < at; p++) {
    if (*p == '.') {
      if (p == s || p + 1 == at || p[1] == '.') return 0;
    } else if (!is_alnum(*p) && !strchr("!#$%&'*+/=?^_`{|}~-", *p))
      return 0;
  }
  return valid_host(at + 1, 2, 1);
}

static int valid_ipv4(const char *s) {
  int parts = 0;
  for (const char *p = s;;) {
    int n = 0;
    while (p[n] >= '0' && p[n] <= '9')
      n++;
    if (!n || n > 3 || (n > 1 && p[0] == '0') || num(p, n) > 255) return 0;
    parts++;
    p += n;
    if (!*p) break;
    if (*p++ != '.') return 0;
  }
  return parts == 4;
}

static int valid_uuid(const char *s) {
  static const int dash[] = {8, 13, 18, 23};
  if (strlen(s) != 36) return 0;
  for (int i = 0, d = 0; i < 36; i++) {
    if (d < 4 && i == dash[d]) {
      if (s[i] != '-') return 0;
      d++;
    } else if (!strchr("0123456789abcdefABCDEF", s[i]) || !s[i])
      return 0;
  }
  return 1;
}

static int v_type(const cJSON *v, const char *t) {
  if (!strcmp(t, "null")) return cJSON_IsNull(v);
  if (!strcmp(t, "boolean")) return cJSON_IsBool(v);
  if (!strcmp(t, "object")) return cJSON_IsObject(v);
  if (!strcmp(t, "array")) return cJSON_IsArray(v);
  if (!strcmp(t, "string")) return cJSON_IsString(v);
  if (!strcmp(t, "number")) return cJSON_IsNumber(v);
  if (!strcmp(t, "integer")) return cJSON_IsNumber(v) && v->valuedouble == floor(v->valuedouble);
  return 0;
}

#define WHY(...) (snprintf(why, 256, __VA_ARGS__), 0)

/* does v satisfy schema s (JSON Schema 2020-12 semantics for the keywords the tests use)? why: the first reason */
static int validate(const cJSON *v, const cJSON *s, const cJSON *root, char *why) {
  if (cJSON_IsTrue(s)) return 1;
  if (cJSON_IsFalse(s)) return WHY("schema false");
  const cJSON *k, *x;
  if ((k = sget(s, "$ref"))) {
    const cJSON *t = v_resolve(root, k->valuestring);
    if (!t) return WHY("unresolved %s", k->valuestring);
    if (!validate(v, t, root, why)) return 0;
  }
  if (cJSON_IsTrue(sget(s, "nullable")) && cJSON_IsNull(v)) return 1;
  if ((k = sget(s, "type"))) {
    int ok = 0;
    if (cJSON_IsString(k))
      ok = v_type(v, k->valuestring);
    else
      cJSON_ArrayForEach(x, k) ok |= v_type(v, x->valuestring);
    if (!ok) return WHY("not of the type");
  }
  if ((k = sget(s, "enum"))) {
    int ok = 0;
    cJSON_ArrayForEach(x, k) ok |= cJSON_Compare(v, x, 1);
    if (!ok) return WHY("not in the enum");
  }
  if ((k = sget(s, "const")) && !cJSON_Compare(v, k, 1)) return WHY("not the const");
  if ((k = sget(s, "anyOf"))) {
    int ok = 0;
    cJSON_ArrayForEach(x, k) ok |= validate(v, x, root, why);
    if (!ok) return WHY("no anyOf alternative");
  }
  if ((k = sget(s, "oneOf"))) {
    int n = 0;
    cJSON_ArrayForEach(x, k) n += validate(v, x, root, why);
    if (n != 1) return WHY("%d oneOf alternatives match", n);
  }
  if ((k = sget(s, "allOf"))) cJSON_ArrayForEach(x, k) if (!validate(v, x, root, why)) return 0;
  if (cJSON_IsObject(v)) {
    const cJSON *props = sget(s, "properties"), *ap = sget(s, "additionalProperties");
    cJSON_ArrayForEach(x, v) {
      const cJSON *ps = sget(props, x->string);
      if (ps && !validate(x, ps, root, why)) return 0;
      if (!ps && ap && !validate(x, ap, root, why)) return WHY("additional property '%s'", x->string);
    }
    cJSON_ArrayForEach(x, sget(s, "required")) if (!sget(v, x->valuestring)) return WHY("no '%s'", x->valuestring);
  }
  if (cJSON_IsArray(v)) {
    int n = cJSON_GetArraySize(v), i = 0;
    const cJSON *prefix = sget(s, "prefixItems"), *items = sget(s, "items"), *rest = items;
    if (cJSON_IsArray(items)) prefix = items, rest = sget(s, "additionalItems");
    int np = prefix ? cJSON_GetArraySize(prefix) : 0;
    cJSON_ArrayForEach(x, v) {
      const cJSON *is = i < np ? cJSON_GetArrayItem(prefix, i) : rest;
      if (is && !validate(x, is, root, why)) return 0;
      i++;
    }
    if ((k = sget(s, "minItems")) && n < k->valuedouble) return WHY("%d items, under minItems", n);
    if ((k = sget(s, "maxItems")) && n > k->valuedouble) return WHY("%d items, over maxItems", n);
  }
  if (cJSON_IsString(v)) {
    size_t n = code_points(v->valuestring);
    if ((k = sget(s, "minLength")) && n < k->valuedouble) return WHY("length %zu under minLength", n);
    if ((k = sget(s, "maxLength")) && n > k->valuedouble) return WHY("length %zu over maxLength", n);
    const char *f = (k = sget(s, "format")) ? k->valuestring : "";
    const char *str = v->valuestring;
    if (!strcmp(f, "date") && !valid_date(str)) return WHY("not a date");
    if (!strcmp(f, "time") && !valid_time(str)) return WHY("not a time");
    if (!strcmp(f, "date-time")) {
      char d[11];
      snprintf(d, sizeof d, "%s", str);
      if (strlen(str) < 11 || !valid_date(d) || (str[10] != 'T' && str[10] != 't') || !valid_time(str + 11))
        return WHY("not a date-time");
    }
    if (!strcmp(f, "uuid") && !valid_uuid(str)) return WHY("not a uuid");
    if (!strcmp(f, "email") && !valid_email(str)) return WHY("not an email");
    if (!strcmp(f, "ipv4") && !valid_ipv4(str)) return WHY("not an ipv4");
    if (!strcmp(f, "hostname") && !valid_host(str, 1, 0)) return WHY("not a hostname");
  }
  if (cJSON_IsNumber(v)) {
    double d = v->valuedouble;
    const cJSON *xmin = sget(s, "exclusiveMinimum"), *xmax = sget(s, "exclusiveMaximum");
    if ((k = sget(s, "minimum")) && (cJSON_IsTrue(xmin) ? d <= k->valuedouble : d < k->valuedouble))
      return WHY("%g under the minimum", d);
    if ((k = sget(s, "maximum")) && (cJSON_IsTrue(xmax) ? d >= k->valuedouble : d > k->valuedouble))
      return WHY("%g over the maximum", d);
    if (cJSON_IsNumber(xmin) && d <= xmin->valuedouble) return WHY("%g not over exclusiveMinimum", d);
    if (cJSON_IsNumber(xmax) && d >= xmax->valuedouble) return WHY("%g not under exclusiveMaximum", d);
    if ((k = sget(s, "format")) && !strcmp(k->valuestring, "int32") && (d < -2147483648.0 || d > 2147483647.0))
      return WHY("%g outside int32", d);
  }
  return 1;
}

/* ---- random documents ---- */

/* byte weights for the random walks: structure and closing characters favoured as the text grows */
static double byte_weight(int b, size_t len) {
  if (b == '"' || b == '}' || b == ']') return 8 + (double)len / 8;
  if (b == ' ' || b == '\n' || b == '\t' || b == '\r') return 0.2;
  if (b >= 0x80) return 0.4;
  if (b < 0x20) return 0.1;
  return 2;
}

/* walks a document out of m over vocabulary tv (its EOG eog) into out; 1 when complete (EOG accepted) */
static int random_doc(grammar_matcher *m, const tvocab *tv, uint32_t eog, th_rng *r, char *out, size_t cap) {
  uint32_t words = (tv->n + 31) / 32, *mask = malloc(words * 4);
  double *w = malloc(tv->n * sizeof *w);
  size_t len = 0;
  int done = 0;
  for (;;) {
    out[len] = 0;
    if (!grammar_matcher_mask(m, mask)) {
      CHECK(0, "no token allowed after '%s'", out);
      break;
    }
    if (grammar_matcher_can_end(m) && (grammar_matcher_must_end(m) || unit(r) < 0.2 + (double)len / 300)) {
      CHECK(bit(mask, eog) && grammar_matcher_accept(m, (int32_t)eog), "EOG refused where the sentence can end");
      done = 1;
      break;
    }
    double total = 0;
    for (uint32_t id = 0; id < tv->n; id++) {
      w[id] = 0;
      if (!bit(mask, id) || tv->kinds[id] != GRAMMAR_TOK_TEXT) continue;
      for (uint32_t i = 0; i < tv->lens[id]; i++)
        w[id] += byte_weight((unsigned char)tv->bytes[id][i], len);
      total += w[id];
    }
    if (total == 0) {
      CHECK(0, "only EOG allowed where the sentence cannot end, after '%s'", out);
      break;
    }
    double u = unit(r) * total;
    uint32_t id = 0;
    for (; id + 1 < tv->n && (u -= w[id]) >= 0; id++) {
    }
    while (!w[id])
      id--;
    if (len + tv->lens[id] >= cap) break; /* too long: abandoned */
    if (!grammar_matcher_accept(m, (int32_t)id)) {
      CHECK(0, "an allowed token refused after '%s'", out);
      break;
    }
    memcpy(out + len, tv->bytes[id], tv->lens[id]);
    len += tv->lens[id];
  }
  out[len] = 0;
  free(mask), free(w);
  return done;
}

/* is text (all of it) a complete document of g? */
static int doc_accepted(const grammar *g, const char *text) { return is_sentence(g, text); }

static char *read_text(const char *path) {
  size_t n;
  char *t = th_read_file(path, &n);
  if (t) {
    t = realloc(t, n + 1);
    t[n] = 0;
  }
  return t;
}

static int cmp_name(const void *a, const void *b) { return strcmp(*(char *const *)a, *(char *const *)b); }

static void test_schema_files(void) {
  const char *dir = "data/grammar/schemas";
  DIR *d = opendir(dir);
  CHECK(d, "no directory %s (run from tests/)", dir);
  if (!d) return;
  char *names[512];
  int n = 0;
  struct dirent *de;
  while ((de = readdir(d)) && n < 512)
    if (strstr(de->d_name, ".json")) names[n++] = strdup(de->d_name);
  closedir(d);
  qsort(names, (size_t)n, sizeof *names, cmp_name);
  CHECK(n >= 50, "%d schemas in %s (want 50 or more)", n, dir);
  th_rng r = {4242};
  tvocab tok = {0};
  random_vocab(&tok, &r, 400);
  int docs = 0, tried = 0;
  char *buf = malloc(8192);
  for (int i = 0; i < n; i++) {
    char path[600];
    snprintf(path, sizeof path, "%s/%s", dir, names[i]);
    char *text = read_text(path);
    cJSON *schema = text ? cJSON_Parse(text) : NULL;
    free(text);
    CHECK(schema, "%s does not parse", path);
    grammar *g = NULL;
    llm_err e = {0};
    if (!schema || grammar_from_json_schema(schema, &g, &e)) {
      CHECK(0, "%s: %s", names[i], e.msg);
      cJSON_Delete(schema);
      continue;
    }
    grammar_cache *c = grammar_cache_create(g, bytes_vocab.v, 0, NULL);
    grammar_cache *ct = grammar_cache_create(g, tok.v, 0, NULL);
    int ok = 0;
    const int N = 12;
    for (int k = 0; k < N; k++) {
      int by_tokens = k % 3 == 2;
      grammar_matcher *m = grammar_matcher_create_shared(by_tokens ? ct : c, NULL);
      tried++;
      if (!random_doc(m, by_tokens ? &tok : &bytes_vocab, by_tokens ? tok.n - 4 : BYTE_EOG, &r, buf, 8000)) {
        grammar_matcher_free(m);
        continue;
      }
      grammar_matcher_free(m);
      const char *end = NULL;
      cJSON *doc = cJSON_ParseWithOpts(buf, &end, 1);
      char why[256] = "";
      CHECK(doc, "%s: a document that is not JSON: %s", names[i], buf);
      CHECK(!doc || validate(doc, schema, schema, why), "%s: %s: %s", names[i], why, buf);
      CHECK(doc_accepted(g, buf), "%s: its own document refused when fed as bytes: %s", names[i], buf);
      cJSON_Delete(doc);
      ok++, docs++;
    }
    CHECK(ok >= N / 2, "%s: %d of %d random documents completed", names[i], ok, N);
    grammar_cache_free(c), grammar_cache_free(ct);
    grammar_free(g);
    cJSON_Delete(schema);
  }
  printf("test_grammar: %d schemas, %d of %d random documents completed and valid\n", n, docs, tried);
  free(buf);
  for (int i = 0; i < n; i++)
    free(names[i]);
  tv_free(&tok);
}

/* ---- documents accepted and refused; schemas refused ---- */

typedef struct doc_case {
  const char *schema;
  const char *const *valid, *const *invalid;
} doc_case;

static void test_schema_docs(void) {
  const doc_case cases[] = {
      {"{\"type\":\"object\",\"properties\":{\"name\":{\"type\":\"string\",\"minLength\":1},\"age\":{\"type\":"
       "\"integer\",\"minimum\":0,\"maximum\":150},\"email\":{\"type\":\"string\",\"format\":\"email\"}},\"required\":"
       "[\"name\",\"age\"],\"additionalProperties\":false}",
       L("{\"name\":\"Al\",\"age\":30}", "{\"name\": \"Al\", \"age\": 0, \"email\": \"a.b@ex.com\"}",
         "{\n  \"name\": \"\\u00e9\\\"\",\n  \"age\": 150\n}",
         "{\"name\":\"x\",\"age\":7,\"email\":\"q+1@a-b.co.uk\"}"),
       L("{\"name\":\"Al\"}", "{\"name\":\"\",\"age\":3}", "{\"name\":\"Al\",\"age\":151}",
         "{\"name\":\"Al\",\"age\":-1}", "{\"name\":\"Al\",\"age\":3.5}", "{\"name\":\"Al\",\"age\":\"3\"}",
         "{\"name\":\"Al\",\"age\":3,\"x\":1}", "{\"name\":\"Al\",\"age\":3,\"email\":\"nope\"}",
         "{\"name\":\"Al\",\"age\":30}x", "[1]")},
      {"{\"type\":\"object\",\"properties\":{\"color\":{\"enum\":[\"red\",\"green\"]},\"note\":{\"type\":[\"string\","
       "\"null\"]}},\"required\":[\"color\",\"note\"],\"additionalProperties\":false}",
       L("{\"color\":\"red\",\"note\":null}", "{\"color\":\"green\",\"note\":\"hi\"}"),
       L("{\"color\":\"blue\",\"note\":null}", "{\"color\":\"red\",\"note\":1}", "{\"color\":\"red\"}",
         "{\"color\":\"Red\",\"note\":null}")},
      {"{\"type\":\"array\",\"items\":{\"type\":\"integer\"},\"minItems\":2,\"maxItems\":3}",
       L("[1,2]", "[1, 2, -3]", "[ 10 ,\n20 ]"), L("[]", "[1]", "[1,2,3,4]", "[1,\"a\"]", "[1.5,2]", "[1,2,]")},
      {"{\"type\":\"object\",\"properties\":{\"d\":{\"type\":\"string\",\"format\":\"date\"},\"t\":{\"type\":"
       "\"string\",\"format\":\"date-time\"},\"u\":{\"type\":\"string\",\"format\":\"uuid\"},\"ip\":{\"type\":"
       "\"string\",\"format\":\"ipv4\"}},\"required\":[\"d\",\"t\",\"u\"]}",
       L("{\"d\":\"2024-02-28\",\"t\":\"2024-06-11T10:20:30Z\",\"u\":\"123e4567-e89b-12d3-a456-426614174000\"}",
         "{\"d\":\"1999-12-31\",\"t\":\"2024-06-11T23:59:59.123+05:30\",\"u\":\"123e4567-e89b-12d3-a456-"
         "426614174000\",\"ip\":\"192.168.0.255\"}"),
       L("{\"d\":\"2024-02-30\",\"t\":\"2024-06-11T10:20:30Z\",\"u\":\"123e4567-e89b-12d3-a456-426614174000\"}",
         "{\"d\":\"2024-13-01\",\"t\":\"2024-06-11T10:20:30Z\",\"u\":\"123e4567-e89b-12d3-a456-426614174000\"}",
         "{\"d\":\"2024-04-31\",\"t\":\"2024-06-11T10:20:30Z\",\"u\":\"123e4567-e89b-12d3-a456-426614174000\"}",
         "{\"d\":\"2024-02-28\",\"t\":\"2024-06-11T10:20:30\",\"u\":\"123e4567-e89b-12d3-a456-426614174000\"}",
         "{\"d\":\"2024-02-28\",\"t\":\"2024-06-11T24:00:00Z\",\"u\":\"123e4567-e89b-12d3-a456-426614174000\"}",
         "{\"d\":\"2024-02-28\",\"t\":\"2024-06-11T10:20:30Z\",\"u\":\"123e4567-e89b-12d3-a456-42661417400\"}",
         "{\"d\":\"2024-02-28\",\"t\":\"2024-06-11T10:20:30Z\",\"u\":\"123e4567-e89b-12d3-a456-426614174000\",\"ip\":"
         "\"256.1.1.1\"}")},
      {"{\"type\":\"number\",\"minimum\":0,\"maximum\":1}", L("0", "0.5", "1", "1.0", "0.999", "0.0001"),
       L("-0.1", "1.5", "2", "1.01", "-1", "1.0000001")},
      {"{\"type\":\"number\",\"exclusiveMinimum\":0,\"exclusiveMaximum\":10}", L("0.5", "9.99", "5", "0.001"),
       L("0", "0.0", "10", "10.0", "-3", "-0.5")},
      {"{\"type\":\"number\",\"minimum\":-2,\"maximum\":3}", L("-2", "-1.5", "0", "2.9", "3", "-2.0"),
       L("-2.5", "3.1", "-3", "-2.01")},
      {"{\"type\":\"integer\",\"minimum\":-40,\"maximum\":-5}", L("-40", "-5", "-17", "-10", "-39"),
       L("-41", "-4", "0", "5", "-100")},
      {"{\"type\":\"integer\",\"minimum\":17,\"maximum\":2301}", L("17", "99", "100", "999", "1000", "2301", "2299"),
       L("16", "2302", "3000", "9", "0", "10000")},
      {"{\"type\":\"array\",\"prefixItems\":[{\"type\":\"number\"},{\"type\":\"string\"}],\"items\":false}",
       L("[1,\"a\"]", "[1]", "[]"), L("[1,\"a\",2]", "[\"a\",1]")},
      {"{\"oneOf\":[{\"type\":\"object\",\"properties\":{\"kind\":{\"const\":\"cat\"},\"lives\":{\"type\":\"integer\"}}"
       ","
       "\"required\":[\"kind\",\"lives\"],\"additionalProperties\":false},{\"type\":\"object\",\"properties\":{"
       "\"kind\":"
       "{\"const\":\"dog\"},\"good\":{\"type\":\"boolean\"}},\"required\":[\"kind\",\"good\"],\"additionalProperties\":"
       "false}]}",
       L("{\"kind\":\"cat\",\"lives\":9}", "{\"kind\":\"dog\",\"good\":true}"),
       L("{\"kind\":\"cat\",\"good\":true}", "{\"kind\":\"cow\"}", "{\"kind\":\"dog\",\"lives\":1}")},
      {"{\"$defs\":{\"node\":{\"type\":\"object\",\"properties\":{\"v\":{\"type\":\"integer\"},\"kids\":{\"type\":"
       "\"array\",\"items\":{\"$ref\":\"#/$defs/node\"}}},\"required\":[\"v\",\"kids\"],\"additionalProperties\":"
       "false}},\"$ref\":\"#/$defs/node\"}",
       L("{\"v\":1,\"kids\":[{\"v\":2,\"kids\":[]}]}", "{\"v\":1,\"kids\":[]}"),
       L("{\"v\":1,\"kids\":[{\"v\":2}]}", "{\"v\":1}")},
      {"{\"type\":\"object\",\"additionalProperties\":{\"type\":\"integer\"}}", L("{}", "{\"a\":1,\"b\":2}"),
       L("{\"a\":\"x\"}", "{\"a\":1,}")},
      {"{\"type\":\"object\",\"properties\":{\"id\":{\"type\":\"string\"}},\"required\":[\"id\"],"
       "\"additionalProperties\":{\"type\":\"integer\"}}",
       L("{\"id\":\"x\",\"n\":3}", "{\"id\":\"x\"}", "{\"id\":\"x\",\"i\":1,\"idd\":2}"),
       L("{\"id\":\"x\",\"n\":\"y\"}", "{\"n\":3}")},
      {"{\"type\":\"string\",\"minLength\":2,\"maxLength\":3}",
       L("\"ab\"", "\"a\\u00e9c\"", "\"a\xc3\xa9\"", "\"a\\nb\""), L("\"a\"", "\"abcd\"", "\"\"", "\"\xc3\xa9\"")},
      {"{\"type\":\"object\",\"properties\":{\"a\":{\"type\":\"integer\"},\"b\":{\"type\":\"integer\"},\"c\":{\"type\":"
       "\"integer\"}},\"required\":[\"b\"],\"additionalProperties\":false}",
       L("{\"b\":1}", "{\"a\":1,\"b\":2}", "{\"b\":2,\"c\":3}", "{\"a\":1,\"b\":2,\"c\":3}"),
       L("{}", "{\"a\":1}", "{\"a\":1,\"c\":3}", "{\"b\":1,,\"c\":3}", "{,\"b\":1}")},
  };
  for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
    cJSON *s = cJSON_Parse(cases[i].schema);
    grammar *g = NULL;
    llm_err e = {0};
    CHECK(s && !grammar_from_json_schema(s, &g, &e), "schema %zu: %s", i, e.msg);
    for (int k = 0; g && cases[i].valid[k]; k++) {
      const char *d = cases[i].valid[k];
      cJSON *doc = cJSON_ParseWithOpts(d, NULL, 1);
      char why[256] = "";
      CHECK(doc && validate(doc, s, s, why), "schema %zu: the test's valid '%s' fails its validator: %s", i, d, why);
      CHECK(doc_accepted(g, d), "schema %zu: valid '%s' refused", i, d);
      cJSON_Delete(doc);
    }
    for (int k = 0; g && cases[i].invalid[k]; k++) {
      const char *d = cases[i].invalid[k];
      cJSON *doc = cJSON_ParseWithOpts(d, NULL, 1);
      char why[256];
      CHECK(!doc || !validate(doc, s, s, why), "schema %zu: the test's invalid '%s' passes its validator", i, d);
      CHECK(!doc_accepted(g, d), "schema %zu: invalid '%s' accepted", i, d);
      cJSON_Delete(doc);
    }
    grammar_free(g);
    cJSON_Delete(s);
  }
  /* what cJSON is lax about (leading zeros, raw control characters in strings) refused by the grammar */
  cJSON *s = cJSON_Parse(cases[0].schema);
  grammar *g = NULL;
  CHECK(!grammar_from_json_schema(s, &g, NULL), "schema 0");
  CHECK(g && !doc_accepted(g, "{\"name\":\"Al\",\"age\":030}") && !doc_accepted(g, "{\"name\":\"A\nl\",\"age\":3}") &&
            !doc_accepted(g, "{\"name\":\"A\x01\",\"age\":3}") && !doc_accepted(g, "{\"name\":\"A\\x\",\"age\":3}"),
        "leading zeros, control characters and a bad escape refused");
  grammar_free(g);
  cJSON_Delete(s);
  g = NULL;
  CHECK(!grammar_json_object(&g, NULL), "json object grammar");
  const char *yes[] = {"{}", "{\"a\":[1,{\"b\":null}],\"c\":\"\\u00e9\"}", "{ \"x\" : -0.5e10 }", NULL};
  const char *no[] = {"[]", "\"x\"", "{\"a\":}", "{a:1}", "{\"a\":1}}", "{\"a\":01}", NULL};
  for (int k = 0; yes[k]; k++)
    CHECK(doc_accepted(g, yes[k]), "json object: '%s' refused", yes[k]);
  for (int k = 0; no[k]; k++)
    CHECK(!doc_accepted(g, no[k]), "json object: '%s' accepted", no[k]);
  grammar_free(g);
}

static void schema_error(const char *json, wgllm_status st, const char *const *want) {
  cJSON *s = cJSON_Parse(json);
  grammar *g = NULL;
  llm_err e = {0};
  wgllm_status got = s ? grammar_from_json_schema(s, &g, &e) : WGLLM_ERR_INTERNAL;
  CHECK(got == st && !g, "%s: status %d (want %d): %s", json, (int)got, (int)st, e.msg);
  for (int i = 0; want[i]; i++)
    CHECK(strstr(e.msg, want[i]), "%s: message '%s' lacks '%s'", json, e.msg, want[i]);
  grammar_free(g);
  cJSON_Delete(s);
}

static void test_schema_errors(void) {
  const wgllm_status U = WGLLM_ERR_UNSUPPORTED, I = WGLLM_ERR_INVALID_ARG;
  schema_error("{\"type\":\"object\",\"properties\":{\"age\":{\"type\":\"string\",\"pattern\":\"^a\"}}}", U,
               L("'pattern'", "/properties/age/pattern", "not supported"));
  schema_error("{\"type\":\"object\",\"patternProperties\":{\"^x\":{}}}", U,
               L("'patternProperties'", "/patternProperties"));
  schema_error("{\"type\":\"array\",\"items\":{\"if\":{},\"then\":{}}}", U, L("'if'", "/items/if"));
  schema_error("{\"anyOf\":[{\"type\":\"string\"},{\"not\":{\"type\":\"null\"}}]}", U, L("'not'", "/anyOf/1/not"));
  schema_error("{\"type\":\"integer\",\"multipleOf\":5}", U, L("'multipleOf'", "/multipleOf"));
  schema_error("{\"type\":\"array\",\"uniqueItems\":true}", U, L("'uniqueItems'", "/uniqueItems"));
  schema_error("{\"$defs\":{\"a\":{\"type\":\"object\",\"dependentRequired\":{}}},\"$ref\":\"#/$defs/a\"}", U,
               L("'dependentRequired'", "/$defs/a/dependentRequired"));
  schema_error("{\"type\":\"object\",\"properties\":{\"u\":{\"type\":\"string\",\"format\":\"uri\"}}}", U,
               L("format 'uri'", "/properties/u/format"));
  schema_error("{\"type\":\"number\",\"minimum\":0.5}", U, L("minimum 0.5", "/minimum"));
  schema_error("{\"type\":\"object\",\"minProperties\":1}", U, L("'minProperties'", "/minProperties"));
  schema_error("{\"oneOf\":[{\"type\":\"string\"},{\"type\":\"string\",\"maxLength\":3}]}", U,
               L("/oneOf", "alternatives 0 and 1"));
  schema_error("{\"oneOf\":[{\"type\":\"number\"},{\"type\":\"integer\"}]}", U, L("alternatives 0 and 1"));
  schema_error("{\"$ref\":\"https://example.com/s.json\"}", U, L("'https://example.com/s.json'", "only references"));
  schema_error("{\"type\":\"string\",\"maxLength\":20000}", U, L("maxLength", "/maxLength"));
  schema_error("{\"allOf\":[{\"type\":\"string\"},{\"maxLength\":3}]}", U, L("allOf", "'type'", "/allOf/0"));
  schema_error("{\"allOf\":[{\"properties\":{\"a\":{}},\"additionalProperties\":false},{\"properties\":{\"b\":{}}}]}",
               U, L("/allOf", "schema 0", "'b'"));
  schema_error("{\"type\":\"object\",\"properties\":{\"a\":{\"$ref\":\"#/$defs/Missing\"}}}", I,
               L("'#/$defs/Missing'", "/properties/a/$ref", "names nothing"));
  schema_error("{\"type\":5}", I, L("/type", "string or a non-empty list"));
  schema_error("{\"properties\":{\"x\":{\"type\":\"strin\"}}}", I, L("unknown type 'strin'", "/properties/x/type"));
  schema_error("{\"type\":[\"string\",3]}", I, L("/type"));
  schema_error("{\"type\":\"object\",\"properties\":{},\"required\":\"a\"}", I, L("/required"));
  schema_error("{\"type\":\"object\",\"properties\":{\"a\":{}},\"required\":[\"b\"]}", I, L("'b'", "/required/0"));
  schema_error("{\"type\":\"string\",\"minLength\":-1}", I, L("'minLength'", "/minLength", "non-negative"));
  schema_error("{\"type\":\"string\",\"minLength\":5,\"maxLength\":2}", I, L("maxLength 2 below minLength 5"));
  schema_error("{\"enum\":[]}", I, L("/enum", "non-empty"));
  schema_error("{\"type\":\"object\",\"properties\":{\"a\":false},\"required\":[\"a\"]}", I,
               L("'a'", "/properties/a", "false"));
  schema_error("{\"properties\":{\"a\":5}}", I, L("/properties/a", "object or a boolean"));
  schema_error("{\"properties\":[1]}", I, L("/properties", "must be an object"));
  schema_error("{\"type\":\"integer\",\"minimum\":10,\"maximum\":3}", I, L("no integer"));
  schema_error("{\"type\":\"array\",\"minItems\":4,\"maxItems\":2}", I, L("minItems"));
  /* schemas that would have to contain themselves: the converter's text is compiled before it is returned (the
     fuzzer found {"$ref":"#"} coming back as "root ::= root") */
  schema_error("{\"$ref\":\"#\"}", I, L("the grammar made from the schema", "left recursion"));
  schema_error("{\"anyOf\":[{\"$ref\":\"#\"},{\"type\":\"string\"}]}", I, L("left recursion"));
  schema_error("{\"$defs\":{\"a\":{\"$ref\":\"#/$defs/b\"},\"b\":{\"$ref\":\"#/$defs/a\"}},\"$ref\":\"#/$defs/a\"}", I,
               L("left recursion"));
  {
    cJSON *self = cJSON_Parse("{\"$ref\":\"#\"}");
    char *t = (char *)1;
    llm_err e = {0};
    CHECK(grammar_schema_to_gbnf(self, &t, &e) == I && !t && strstr(e.msg, "left recursion"),
          "the converter refuses {\"$ref\":\"#\"} with no text: %s", e.msg);
    cJSON_Delete(self);
  }
  schema_error("false", I, L("false", "the root"));
  /* annotations are ignored */
  cJSON *s = cJSON_Parse("{\"title\":\"x\",\"description\":\"y\",\"$schema\":\"https://json-schema.org/draft/2020-12/"
                         "schema\",\"$id\":\"urn:x\",\"$comment\":\"c\",\"examples\":[1],\"default\":2,\"deprecated\":"
                         "false,\"readOnly\":true,\"type\":\"integer\"}");
  grammar *g = NULL;
  llm_err e = {0};
  CHECK(!grammar_from_json_schema(s, &g, &e), "annotations: %s", e.msg);
  CHECK(g && is_sentence(g, "42") && !is_sentence(g, "\"x\""), "annotations change nothing");
  grammar_free(g);
  cJSON_Delete(s);
  char *text = NULL;
  s = cJSON_Parse("{\"type\":\"object\",\"properties\":{\"first name\":{\"type\":\"string\"}},\"required\":[\"first "
                  "name\"]}");
  CHECK(!grammar_schema_to_gbnf(s, &text, &e) && text && strstr(text, "root ::=") && strstr(text, "first-name"),
        "the GBNF text: %s", text ? text : e.msg);
  free(text);
  cJSON_Delete(s);
}

/* ---- the benchmark ---- */

static double now_us(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return t.tv_sec * 1e6 + t.tv_nsec / 1e3;
}

typedef struct strset { /* distinct token strings */
  char **s;
  uint32_t *len, cap, n;
} strset;

static uint64_t str_hash(const char *s, uint32_t n) {
  uint64_t h = 1469598103934665603ull;
  for (uint32_t i = 0; i < n; i++)
    h = (h ^ (unsigned char)s[i]) * 1099511628211ull;
  return h;
}

/* adds piece to t unless present (set holds indices + 1 into t) */
static uint32_t piece_limit; /* the vocabulary's size less its special tokens */
static int add_piece(tvocab *t, uint32_t *set, uint32_t cap, const char *s, uint32_t n) {
  if (!n || n > 48 || t->n >= piece_limit) return 0;
  uint64_t h = str_hash(s, n);
  for (uint32_t k = (uint32_t)h & (cap - 1);; k = (k + 1) & (cap - 1)) {
    if (!set[k]) {
      set[k] = t->n + 1;
      tv_add(t, s, n, GRAMMAR_TOK_TEXT);
      return 1;
    }
    uint32_t id = set[k] - 1;
    if (t->lens[id] == n && !memcmp(t->bytes[id], s, n)) return 0;
  }
}

/* a synthetic byte-level vocabulary of n tokens: all 256 bytes, English words with and without a leading space,
   numbers, punctuation runs, JSON pieces, whitespace runs, UTF-8 characters and pieces of them, made-up words */
static void bench_vocab(tvocab *t, th_rng *r, uint32_t n, uint32_t **set_out, uint32_t *cap_out) {
  uint32_t cap = 1;
  while (cap < 2 * n)
    cap *= 2; /* at most half full */
  piece_limit = n - 8;
  uint32_t *set = calloc(cap, sizeof *set);
  for (int b = 0; b < 256; b++) {
    char c = (char)b;
    add_piece(t, set, cap, &c, 1);
  }
  static const char *const words[] = {
      "the",      "of",     "and",    "to",       "in",       "is",      "you",      "that",     "it",
      "he",       "was",    "for",    "on",       "are",      "as",      "with",     "his",      "they",
      "at",       "be",     "this",   "have",     "from",     "or",      "one",      "had",      "by",
      "word",     "but",    "not",    "what",     "all",      "were",    "we",       "when",     "your",
      "can",      "said",   "there",  "use",      "an",       "each",    "which",    "she",      "do",
      "how",      "their",  "if",     "will",     "up",       "other",   "about",    "out",      "many",
      "then",     "them",   "these",  "so",       "some",     "her",     "would",    "make",     "like",
      "him",      "into",   "time",   "has",      "look",     "two",     "more",     "write",    "go",
      "see",      "number", "no",     "way",      "could",    "people",  "my",       "than",     "first",
      "water",    "been",   "call",   "who",      "oil",      "its",     "now",      "find",     "long",
      "down",     "day",    "did",    "get",      "come",     "made",    "may",      "part",     "name",
      "id",       "type",   "value",  "status",   "data",     "user",    "email",    "address",  "city",
      "country",  "price",  "total",  "items",    "order",    "date",    "created",  "updated",  "description",
      "title",    "count",  "result", "error",    "message",  "code",    "true",     "false",    "null",
      "street",   "phone",  "amount", "currency", "quantity", "product", "customer", "shipping", "tax",
      "discount", "notes",  "tags",   "score"};
  const uint32_t nw = sizeof words / sizeof *words;
  static const char *const suffix[] = {"", "s", "ed", "ing", "er", "ly", "_id", "Id", "_at", "es"};
  for (uint32_t i = 0; i < nw; i++)
    for (int sfx = 0; sfx < 10; sfx++)
      for (int v = 0; v < 4; v++) { /* plain, leading space, capitalized, both */
        char buf[64];
        int k = snprintf(buf, sizeof buf, "%s%s%s", v & 1 ? " " : "", words[i], suffix[sfx]);
        if (v & 2) buf[v & 1] = (char)(buf[v & 1] >= 'a' && buf[v & 1] <= 'z' ? buf[v & 1] - 32 : buf[v & 1]);
        add_piece(t, set, cap, buf, (uint32_t)k);
      }
  for (int i = 0; i < 10000; i++) {
    char buf[16];
    int k = snprintf(buf, sizeof buf, "%d", i);
    add_piece(t, set, cap, buf, (uint32_t)k);
    if (i < 1000) k = snprintf(buf, sizeof buf, " %d", i), add_piece(t, set, cap, buf, (uint32_t)k);
  }
  static const char punct[] = "\"',:;{}[]().!?-_/\\=+*#@&%$<>|~`^";
  const uint32_t np = sizeof punct - 1;
  for (uint32_t a = 0; a < np; a++)
    for (uint32_t b = 0; b < np; b++) {
      char buf[4] = {punct[a], punct[b]};
      add_piece(t, set, cap, buf, 2);
      buf[2] = ' ';
      add_piece(t, set, cap, buf, 3);
    }
  for (int i = 0; i < 6000; i++) {
    char buf[4] = {punct[rnd(r, np)], punct[rnd(r, np)], punct[rnd(r, np)]};
    add_piece(t, set, cap, buf, 3);
  }
  static const char *const json[] = {"\":",  "\": ", "\":\"", "\": \"", "\",",   "\", \"", "\",\"",   "\"}",
                                     "\"},", "{\"",  "[{\"",  "}]",     "},{\"", "}, {\"", "\"]",     "[\"",
                                     " {\"", "\":[", "\": [", "\":{",   "\": {", "],",     "]}",      "}}",
                                     " \"",  "\"\n", "{\n",   "}\n",    "[]",    "{}",     "\":\"\"", "\": null"};
  for (size_t i = 0; i < sizeof json / sizeof *json; i++)
    add_piece(t, set, cap, json[i], (uint32_t)strlen(json[i]));
  for (int k = 2; k <= 32; k++) {
    char buf[40];
    memset(buf, ' ', (size_t)k);
    add_piece(t, set, cap, buf, (uint32_t)k);
    buf[0] = '\n';
    add_piece(t, set, cap, buf, (uint32_t)k);
    memset(buf, '\t', (size_t)k);
    if (k <= 8) add_piece(t, set, cap, buf, (uint32_t)k);
  }
  add_piece(t, set, cap, "\n\n", 2);
  for (uint32_t cp = 0xA0; cp < 0x800; cp++) { /* 2-byte characters and their lead bytes with a space */
    char buf[4] = {(char)(0xC0 | cp >> 6), (char)(0x80 | (cp & 0x3F))};
    add_piece(t, set, cap, buf, 2);
  }
  for (int i = 0; i < 6000; i++) { /* CJK: whole, pairs, pieces */
    uint32_t cp = 0x4E00 + rnd(r, 0x5000);
    char buf[8] = {(char)(0xE0 | cp >> 12), (char)(0x80 | ((cp >> 6) & 0x3F)), (char)(0x80 | (cp & 0x3F))};
    add_piece(t, set, cap, buf, i % 5 == 0 ? 2 : 3);
  }
  for (int i = 0; i < 500; i++) { /* emoji and their pieces */
    uint32_t cp = 0x1F300 + rnd(r, 0x300);
    char buf[4] = {(char)(0xF0 | cp >> 18), (char)(0x80 | ((cp >> 12) & 0x3F)), (char)(0x80 | ((cp >> 6) & 0x3F)),
                   (char)(0x80 | (cp & 0x3F))};
    add_piece(t, set, cap, buf, 2 + (uint32_t)(i % 3));
  }
  static const char *const cons[] = {"b", "c", "d", "f",  "g",  "h",  "k",  "l",  "m",  "n",  "p",  "r",  "s", "t",
                                     "v", "w", "z", "st", "tr", "ch", "sh", "th", "pr", "br", "gr", "pl", "cl"};
  static const char *const vow[] = {"a", "e", "i", "o", "u", "ou", "ea", "io", "ai", "y"};
  while (t->n < n - 8) { /* made-up words */
    char buf[48];
    int k = 0, sp = rnd(r, 2), syl = 1 + (int)rnd(r, 4);
    if (sp) buf[k++] = ' ';
    for (int i = 0; i < syl; i++) {
      const char *c = cons[rnd(r, 27)], *v = vow[rnd(r, 10)];
      k += snprintf(buf + k, sizeof buf - (size_t)k, "%s%s", c, v);
    }
    if (rnd(r, 3) == 0) k += snprintf(buf + k, sizeof buf - (size_t)k, "%s", cons[rnd(r, 17)]);
    if (rnd(r, 6) == 0) buf[sp] = (char)(buf[sp] - 32);
    add_piece(t, set, cap, buf, (uint32_t)k);
  }
  tv_add(t, "<|begin_of_text|>", 17, GRAMMAR_TOK_NEVER);
  tv_add(t, "<|start_header_id|>", 19, GRAMMAR_TOK_NEVER);
  tv_add(t, "<|end_header_id|>", 17, GRAMMAR_TOK_NEVER);
  tv_add(t, "<|eot_id|>", 10, GRAMMAR_TOK_EOG);
  tv_add(t, "<|end_of_text|>", 15, GRAMMAR_TOK_EOG);
  while (t->n < n)
    tv_add(t, "<|reserved|>", 12, GRAMMAR_TOK_NEVER);
  *set_out = set;
  *cap_out = cap;
}

/* greedy longest-match tokenization of text into ids */
static uint32_t tokenize(const tvocab *t, const uint32_t *set, uint32_t cap, const char *text, int32_t *ids) {
  uint32_t n = 0;
  size_t len = strlen(text);
  for (size_t i = 0; i < len;) {
    uint32_t best = UINT32_MAX, blen = 0;
    for (uint32_t l = len - i < 48 ? (uint32_t)(len - i) : 48; l >= 1 && best == UINT32_MAX; l--) {
      uint64_t h = str_hash(text + i, l);
      for (uint32_t k = (uint32_t)h & (cap - 1); set[k]; k = (k + 1) & (cap - 1)) {
        uint32_t id = set[k] - 1;
        if (t->lens[id] == l && !memcmp(t->bytes[id], text + i, l)) {
          best = id, blen = l;
          break;
        }
      }
    }
    ids[n++] = (int32_t)best;
    i += blen;
  }
  return n;
}

typedef struct bstat {
  double sum, max;
  uint32_t n;
  double *all;
} bstat;

static int cmp_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return x < y ? -1 : x > y;
}

/* masks then accepts each token of doc; times each mask */
static void bench_walk(grammar_cache *c, const tvocab *t, const int32_t *ids, uint32_t n, bstat *st) {
  grammar_matcher *m = grammar_matcher_create_shared(c, NULL);
  uint32_t *mask = malloc(((t->n + 31) / 32) * 4);
  for (uint32_t i = 0; i < n; i++) {
    double t0 = now_us();
    grammar_matcher_mask(m, mask);
    double dt = now_us() - t0;
    st->sum += dt;
    if (dt > st->max) st->max = dt;
    st->all[st->n++] = dt;
    CHECK(bit(mask, (uint32_t)ids[i]) && grammar_matcher_accept(m, ids[i]), "bench: token %u of the document refused",
          i);
  }
  CHECK(grammar_matcher_can_end(m), "bench: the document is not complete");
  free(mask);
  grammar_matcher_free(m);
}

/* the guard of a generation near its token limit along doc: the mask narrowed to the tokens after which the
   sentence ends within a budget (its bytes left + 8), by one bounded walk (st[0]) and, as generate.c did before, by
   an accept, min_bytes and rollback of every allowed token (st[1]); both must agree */
static void bench_guard(grammar_cache *c, const tvocab *t, const int32_t *ids, uint32_t n, bstat *st) {
  grammar_matcher *m = grammar_matcher_create_shared(c, NULL);
  uint32_t words = (t->n + 31) / 32, *mask = malloc(words * 4), *within = malloc(words * 4), *keep = malloc(words * 4);
  uint32_t differ = 0;
  for (uint32_t i = 0; i < n; i++) {
    grammar_matcher_mask(m, mask);
    uint32_t budget = grammar_matcher_min_bytes(m) + 8;
    double t0 = now_us();
    grammar_matcher_mask_within(m, within, budget);
    double t1 = now_us();
    memset(keep, 0, words * 4);
    for (uint32_t w = 0; w < words; w++)
      for (uint32_t bits = mask[w]; bits; bits &= bits - 1) {
        int32_t id = (int32_t)(w * 32 + (uint32_t)__builtin_ctz(bits));
        if (!grammar_matcher_accept(m, id)) continue;
        int ok = grammar_matcher_ended(m) || grammar_matcher_min_bytes(m) <= budget;
        grammar_matcher_rollback(m, 1);
        if (ok) keep[w] |= 1u << (id & 31);
      }
    double t2 = now_us();
    differ += memcmp(keep, within, words * 4) != 0;
    double d[2] = {t1 - t0, t2 - t1};
    for (int k = 0; k < 2; k++) {
      st[k].sum += d[k];
      if (d[k] > st[k].max) st[k].max = d[k];
      st[k].all[st[k].n++] = d[k];
    }
    CHECK(grammar_matcher_accept(m, ids[i]), "bench guard: token %u of the document refused", i);
  }
  CHECK(!differ, "bench guard: the bounded walk and the accept loop differ at %u of %u tokens", differ, n);
  free(mask), free(within), free(keep);
  grammar_matcher_free(m);
}

static void report(const char *what, bstat *s) {
  qsort(s->all, s->n, sizeof *s->all, cmp_double);
  printf("  %-34s %5u masks  mean %8.1f us  p50 %8.1f  p99 %8.1f  max %8.1f\n", what, s->n, s->sum / s->n,
         s->all[s->n / 2], s->all[(s->n * 99) / 100], s->max);
}

static const char *const BENCH_SCHEMA =
    "{\"type\":\"object\",\"properties\":{"
    "\"order_id\":{\"type\":\"string\",\"format\":\"uuid\"},"
    "\"created\":{\"type\":\"string\",\"format\":\"date-time\"},"
    "\"status\":{\"enum\":[\"pending\",\"paid\",\"shipped\",\"delivered\",\"cancelled\"]},"
    "\"customer\":{\"type\":\"object\",\"properties\":{\"name\":{\"type\":\"string\"},\"email\":{\"type\":\"string\","
    "\"format\":\"email\"},\"phone\":{\"type\":[\"string\",\"null\"]},\"address\":{\"type\":\"object\",\"properties\":"
    "{\"street\":{\"type\":\"string\"},\"city\":{\"type\":\"string\"},\"postal_code\":{\"type\":\"string\"},"
    "\"country\":{\"type\":\"string\",\"minLength\":2,\"maxLength\":2}},\"required\":[\"street\",\"city\",\"country\"],"
    "\"additionalProperties\":false}},\"required\":[\"name\",\"email\",\"address\"],\"additionalProperties\":false},"
    "\"items\":{\"type\":\"array\",\"minItems\":1,\"items\":{\"type\":\"object\",\"properties\":{\"sku\":{\"type\":"
    "\"string\"},\"description\":{\"type\":\"string\"},\"quantity\":{\"type\":\"integer\",\"minimum\":1,\"maximum\":"
    "1000},\"unit_price\":{\"type\":\"number\",\"minimum\":0}},\"required\":[\"sku\",\"quantity\",\"unit_price\"],"
    "\"additionalProperties\":false}},"
    "\"notes\":{\"type\":\"string\"},\"total\":{\"type\":\"number\"},\"paid\":{\"type\":\"boolean\"}},"
    "\"required\":[\"order_id\",\"created\",\"status\",\"customer\",\"items\",\"total\",\"paid\"],"
    "\"additionalProperties\":false}";

static const char *const BENCH_DOCS[] = {
    "{\n  \"order_id\": \"3f2b8c1e-9a4d-4e6f-b2a1-7c9d0e1f2a3b\",\n  \"created\": \"2024-06-11T14:32:05Z\",\n"
    "  \"status\": \"shipped\",\n  \"customer\": {\n    \"name\": \"Margaret Hamilton\",\n    \"email\": "
    "\"margaret.hamilton@example.com\",\n    \"phone\": null,\n    \"address\": {\n      \"street\": \"1 Apollo "
    "Way\",\n"
    "      \"city\": \"Cambridge\",\n      \"postal_code\": \"02139\",\n      \"country\": \"US\"\n    }\n  },\n"
    "  \"items\": [\n    {\"sku\": \"BK-1969\", \"description\": \"Guidance computer manual, first edition, with "
    "annotations from the original team and a foreword about the landing\", \"quantity\": 2, \"unit_price\": 49.95},\n"
    "    {\"sku\": \"MUG-11\", \"description\": \"Ceramic mug with the program's source code printed around it\", "
    "\"quantity\": 4, \"unit_price\": 12.5},\n    {\"sku\": \"PST-07\", \"quantity\": 1, \"unit_price\": 8}\n  ],\n"
    "  \"notes\": \"Please deliver to the front desk between nine and five. The customer asked for gift wrapping on "
    "the mugs, and for the manual to be packed separately so that it does not get damaged in transit.\",\n"
    "  \"total\": 157.9,\n  \"paid\": true\n}",
    "{\"order_id\": \"a1b2c3d4-e5f6-4789-abcd-ef0123456789\", \"created\": \"2023-12-01T08:00:00+01:00\", "
    "\"status\": \"pending\", \"customer\": {\"name\": \"Ada Lovelace\", \"email\": \"ada@analytical.org\", "
    "\"phone\": \"+44 20 7946 0958\", \"address\": {\"street\": \"12 St James's Square\", \"city\": \"London\", "
    "\"country\": \"GB\"}}, \"items\": [{\"sku\": \"ENG-1\", \"description\": \"Difference engine replica, brass, "
    "hand-cranked\", \"quantity\": 1, \"unit_price\": 1200}, {\"sku\": \"NOTE-3\", \"description\": \"Notes on the "
    "analytical engine (reprint)\", \"quantity\": 3, \"unit_price\": 19.99}], \"total\": 1259.97, \"paid\": false}",
};

static int bench(void) {
  th_rng r = {99};
  printf("test_grammar --bench: masks along JSON documents token by token (mean/p50/p99/max microseconds per mask)\n");
  const uint32_t sizes[] = {2048, 131072};
  for (int si = 0; si < 2; si++) {
    tvocab t = {0};
    uint32_t *set, cap;
    bench_vocab(&t, &r, sizes[si], &set, &cap);
    double t0 = now_us();
    tv_build(&t);
    printf("vocabulary %u tokens: trie built in %.1f ms\n", t.n, (now_us() - t0) / 1000);
    cJSON *schema = cJSON_Parse(BENCH_SCHEMA);
    grammar *gs = NULL, *gj = NULL;
    llm_err e = {0};
    if (grammar_from_json_schema(schema, &gs, &e) || grammar_json_object(&gj, &e)) {
      fprintf(stderr, "bench: %s\n", e.msg);
      return 1;
    }
    int32_t *ids[2];
    uint32_t nid[2], total = 0;
    for (int d = 0; d < 2; d++) {
      ids[d] = malloc(strlen(BENCH_DOCS[d]) * sizeof *ids[d]);
      nid[d] = tokenize(&t, set, cap, BENCH_DOCS[d], ids[d]);
      total += nid[d];
    }
    for (int gi = 0; gi < 2; gi++) {
      grammar *g = gi ? gj : gs;
      printf(" %s: documents of %u and %u tokens\n", gi ? "json_object" : "json_schema (an order)", nid[0], nid[1]);
      grammar_cache *c = grammar_cache_create(g, t.v, 0, NULL);
      bstat st[4] = {0};
      for (int k = 0; k < 4; k++)
        st[k].all = malloc(total * sizeof(double));
      bench_walk(c, &t, ids[0], nid[0], &st[0]);
      bench_walk(c, &t, ids[1], nid[1], &st[1]);
      bench_walk(c, &t, ids[0], nid[0], &st[2]);
      bench_walk(c, &t, ids[1], nid[1], &st[3]);
      report("cold: document 1, empty cache", &st[0]);
      report("document 2 after document 1", &st[1]);
      report("warm: document 1 again", &st[2]);
      report("warm: document 2 again", &st[3]);
      bstat gst[2] = {{0}, {0}};
      for (int k = 0; k < 2; k++)
        gst[k].all = malloc(total * sizeof(double));
      bench_guard(c, &t, ids[0], nid[0], gst);
      report("guard (bytes left + 8): one walk", &gst[0]);
      report("guard: an accept a token", &gst[1]);
      for (int k = 0; k < 2; k++)
        free(gst[k].all);
      grammar_cache_stats cs = grammar_cache_get_stats(c);
      printf("  cache: %llu exact hits, %llu cut hits, %llu walks, %zu entries, %.1f MiB\n",
             (unsigned long long)cs.exact_hits, (unsigned long long)cs.cut_hits, (unsigned long long)cs.walks,
             cs.entries, cs.bytes / 1048576.0);
      for (int k = 0; k < 4; k++)
        free(st[k].all);
      grammar_cache_free(c);
    }
    for (int d = 0; d < 2; d++)
      free(ids[d]);
    grammar_free(gs), grammar_free(gj);
    cJSON_Delete(schema);
    free(set);
    tv_free(&t);
  }
  return th_finish("test_grammar --bench");
}

int main(int argc, char **argv) {
  make_bytes_vocab();
  if (argc > 1 && !strcmp(argv[1], "--bench")) return bench();
  double t0 = now_us();
  test_gbnf_constructs();
  test_gbnf_errors();
  test_matching();
  test_schema_docs();
  test_schema_errors();
  test_masks();
  test_masks_words();
  printf("test_grammar: %llu masks compared with the brute force reference\n", (unsigned long long)masks_compared);
  test_threads();
  test_schema_files();
  printf("test_grammar: %.1f s\n", (now_us() - t0) / 1e6);
  tv_free(&bytes_vocab);
  return th_finish("test_grammar");
}
