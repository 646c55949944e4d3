/* The CLI and the example program end to end: run (greedy determinism, seeded sampling), chat over stdin,
   tokenize round trip, --help of every command, and the errors a user can cause (each a message and a
   non-zero exit, never a crash). */
#include "harness.h"
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static char g_bin[512], g_tmp[256];
static const char *GGUF = "data/models/llama_q4_0_gguf/model.gguf";

/* runs a shell command line, capturing stdout and stderr; returns the exit status */
static int sh(const char *cmdline, char **out, char **err) {
  char cmd[4096], po[300], pe[300];
  snprintf(po, sizeof po, "%s/out.txt", g_tmp);
  snprintf(pe, sizeof pe, "%s/err.txt", g_tmp);
  snprintf(cmd, sizeof cmd, "%s >%s 2>%s", cmdline, po, pe);
  int rc = system(cmd);
  if (out) {
    *out = th_read_file(po, NULL);
    if (!*out) *out = calloc(1, 1);
  }
  if (err) {
    *err = th_read_file(pe, NULL);
    if (!*err) *err = calloc(1, 1);
  }
  return WIFEXITED(rc) ? WEXITSTATUS(rc) : 128;
}

static void expect_fail(const char *what, const char *args, const char *needle) {
  char cmd[2048];
  snprintf(cmd, sizeof cmd, "%s/wgllm %s", g_bin, args);
  char *out, *err;
  int rc = sh(cmd, &out, &err);
  CHECK(rc == 1 || rc == 2, "%s: exit %d, want 1 or 2 (stderr: %s)", what, rc, err);
  CHECK(strstr(err, needle) != NULL, "%s: stderr lacks \"%s\": %s", what, needle, err);
  printf("  %-30s -> %s", what, err);
  free(out);
  free(err);
}

int main(void) {
  const char *bin = getenv("WGLLM_BIN");
  snprintf(g_bin, sizeof g_bin, "%s", bin ? bin : "../build");
  snprintf(g_tmp, sizeof g_tmp, "/tmp/wgllm-test-cli-%d", (int)getpid());
  char cmd[2048];
  snprintf(cmd, sizeof cmd, "mkdir -p %s", g_tmp);
  if (system(cmd)) return 1;
  char *o1, *o2, *e;

  /* greedy run is deterministic; seeded sampling reproduces and differs across seeds */
  snprintf(cmd, sizeof cmd, "%s/wgllm run -m %s -p 'a b' -n 12 --temp 0", g_bin, GGUF);
  CHECK(sh(cmd, &o1, &e) == 0, "run greedy: %s", e);
  free(e);
  CHECK(sh(cmd, &o2, &e) == 0 && !strcmp(o1, o2), "greedy run differs between runs");
  CHECK(strncmp(o1, "a b", 3) == 0 && strlen(o1) > 4, "run echoes the prompt and continues: '%s'", o1);
  free(o1);
  free(o2);
  free(e);
  snprintf(cmd, sizeof cmd, "%s/wgllm run -m %s -p 'a b' -n 16 --seed 5 --temp 1.0 --top-k 0 --top-p 1 --min-p 0",
           g_bin, GGUF);
  sh(cmd, &o1, &e);
  free(e);
  sh(cmd, &o2, &e);
  free(e);
  CHECK(!strcmp(o1, o2), "same seed, different text");
  free(o2);
  snprintf(cmd, sizeof cmd, "%s/wgllm run -m %s -p 'a b' -n 16 --seed 6 --temp 1.0 --top-k 0 --top-p 1 --min-p 0",
           g_bin, GGUF);
  sh(cmd, &o2, &e);
  free(e);
  CHECK(strcmp(o1, o2), "another seed gives the same text");
  free(o1);
  free(o2);

  /* chat over stdin: two turns, /reset, end of input */
  snprintf(cmd, sizeof cmd, "printf 'hello\\nmore\\n/reset\\nagain\\n' | %s/wgllm chat -m %s -n 8 --stats", g_bin,
           GGUF);
  int rc = sh(cmd, &o1, &e);
  CHECK(rc == 0, "chat exit %d: %s", rc, e);
  int turns = 0;
  for (const char *p = e; (p = strstr(p, "generated")); p++)
    turns++;
  CHECK(turns == 3, "chat answered %d of 3 turns: %s", turns, e);
  CHECK(strstr(e, "cached") != NULL, "chat stats: %s", e);
  free(o1);
  free(e);

  /* tokenize round trip */
  snprintf(cmd, sizeof cmd, "%s/wgllm tokenize -m %s 'aa bb cc'", g_bin, GGUF);
  CHECK(sh(cmd, &o1, &e) == 0, "tokenize: %s", e);
  free(e);
  o1[strcspn(o1, "\n")] = 0;
  snprintf(cmd, sizeof cmd, "%s/wgllm tokenize -m %s --decode %s", g_bin, GGUF, o1);
  CHECK(sh(cmd, &o2, &e) == 0 && strstr(o2, "aa bb cc"), "decode(encode(x)): '%s' -> '%s'", o1, o2);
  free(o1);
  free(o2);
  free(e);

  /* --help everywhere */
  const char *cmds[] = {"run", "chat", "tokenize", "logits", "info"};
  for (int i = 0; i < 5; i++) {
    snprintf(cmd, sizeof cmd, "%s/wgllm %s --help", g_bin, cmds[i]);
    CHECK(sh(cmd, &o1, &e) == 0 && strstr(o1, "usage"), "%s --help", cmds[i]);
    free(o1);
    free(e);
  }

  /* user errors */
  char a[1024];
  snprintf(a, sizeof a, "run -m %s -p ''", GGUF);
  expect_fail("empty prompt", a, "empty");
  snprintf(a, sizeof a, "run -m %s -p \"$(printf 'ab\\377cd')\"", GGUF);
  expect_fail("invalid UTF-8 prompt", a, "UTF-8 (byte 2)");
  { /* refused before anything is echoed (issue 13) */
    char c2[2048], *po, *pe;
    snprintf(c2, sizeof c2, "%s/wgllm %s", g_bin, a);
    sh(c2, &po, &pe);
    CHECK(po && po[0] == 0, "invalid UTF-8 prompt: stdout should be empty, is \"%s\"", po ? po : "(null)");
    free(po);
    free(pe);
  }
  snprintf(a, sizeof a, "run -m %s -p \"$(head -c 3000 /dev/zero | tr '\\0' 'a' | sed 's/a/a /g')\" --ctx 64", GGUF);
  expect_fail("prompt longer than the context", a, "context");
  snprintf(a, sizeof a, "tokenize -m %s --decode 5,99999", GGUF);
  expect_fail("unknown id in --decode", a, "99999");
  expect_fail("unsupported tokenizer.json", "tokenize -m data/tokenizers/unsupported_wordpiece.json 'x'", "WordPiece");
  expect_fail("missing -m", "run -p hi", "-m PATH");
  expect_fail("unknown option", "run -m x -p hi --bogus 1", "--bogus");
  expect_fail("bad temperature", "run -m x -p hi --temp -1", "--temp");
  expect_fail("infinite temperature", "run -m x -p hi --temp inf", "'inf' for --temp");
  expect_fail("NaN top-p", "run -m x -p hi --top-p nan", "--top-p");
  expect_fail("context with trailing junk", "run -m x -p hi --ctx 12abc", "--ctx 12abc");
  expect_fail("context too large", "run -m x -p hi --ctx 99999999", "1 to 16777216");
  expect_fail("unknown command", "frobnicate", "frobnicate");
  expect_fail("no adapter of that name", "info --gpu --adapter no-such-gpu", "no-such-gpu");
  snprintf(a, sizeof a, "run -m %s -p hi --weights q4:33", GGUF);
  expect_fail("bad weights option", a, "q4:33");
  expect_fail("model path missing", "run -m /nonexistent/model -p hi", "/nonexistent/model: No such file");

  /* the example program, built against the public header only */
  snprintf(cmd, sizeof cmd, "%s/example_generate %s 'a b' 8", g_bin, GGUF);
  rc = sh(cmd, &o1, &e);
  CHECK(rc == 0 && strstr(e, "8 generated"), "example_generate exit %d: %s", rc, e);
  free(o1);
  free(e);
  snprintf(cmd, sizeof cmd, "%s/example_generate /nonexistent 'a'", g_bin);
  rc = sh(cmd, &o1, &e);
  CHECK(rc == 1 && strstr(e, "/nonexistent"), "example with a bad path: exit %d: %s", rc, e);
  free(o1);
  free(e);

  snprintf(cmd, sizeof cmd, "rm -rf %s", g_tmp);
  if (system(cmd)) {
  }
  return th_finish("test_cli");
}
