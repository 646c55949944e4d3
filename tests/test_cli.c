/* The CLI and the example program end to end: run (greedy determinism, seeds, llama-cli's command lines),
   the one option parser (--x=y, --x y, -- , unknown and ambiguous options, ranges, single-dash long names,
   any number of stop strings), the defaults (random seed, repeat penalty 1, the model's trained context at most 4096, a
   config trained on 1,000,000 positions run in 4096 and refused with -c 1000000 past a memory budget before
   allocating), chat over stdin (multi-line input, lines of any length, /regen, /save, /load, /reset), tokenize
   (--pieces, standard input, --no-bos apart from --no-parse-special), on a pseudo-terminal: Ctrl-C in chat and run and
   the progress lines (model load, long prompts, bench), and quiet when not a terminal; --precision on every command
   that makes a session (and the server's listening line); perplexity against sums computed here from `wgllm logits`
   and its refusals; `make run`'s output;
   the errors a user can cause (each a message and a non-zero exit, never a crash). */
#include "harness.h"
#include <cjson/cJSON.h>
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <poll.h>
#include <pty.h>
#include <signal.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#if defined(__SANITIZE_ADDRESS__)
#define SANITIZED 1
#else
#define SANITIZED 0
#endif

static char g_bin[512], g_tmp[256];
static const char *GGUF = "data/models/llama_q4_0_gguf/model.gguf";
static const char *DEFAULT = "../models/default"; /* trained context 512; greedy text runs to the context's end */

/* runs a shell command line, capturing stdout and stderr; returns the exit status */
static int sh(const char *cmdline, char **out, char **err) {
  char cmd[16384], po[300], pe[300];
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

/* `wgllm ARGS` (a format), its stdout in *out and stderr in *err; returns the exit status */
static int wg(char **out, char **err, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static int wg(char **out, char **err, const char *fmt, ...) {
  char args[12000], cmd[12600];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(args, sizeof args, fmt, ap);
  va_end(ap);
  snprintf(cmd, sizeof cmd, "%s/wgllm %s </dev/null", g_bin, args);
  char *o, *e;
  int rc = sh(cmd, &o, &e);
  if (out)
    *out = o;
  else
    free(o);
  if (err)
    *err = e;
  else
    free(e);
  return rc;
}

static void expect_fail(const char *what, const char *args, const char *needle) {
  char *out, *err;
  int rc = wg(&out, &err, "%s", args);
  CHECK(rc == 1 || rc == 2, "%s: exit %d, want 1 or 2 (stderr: %s)", what, rc, err);
  CHECK(strstr(err, needle) != NULL, "%s: stderr lacks \"%s\": %s", what, needle, err);
  printf("  %-34s -> %s", what, err);
  free(out);
  free(err);
}

static int count(const char *s, const char *needle) {
  int n = 0;
  for (const char *p = s; (p = strstr(p, needle)); p++)
    n++;
  return n;
}

static double now_s(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

/* ---------- a program on a pseudo-terminal ---------- */
typedef struct pty_proc {
  pid_t pid;
  int fd;
  char *buf; /* everything it wrote (stdout and stderr), NUL-terminated */
  size_t len, cap;
} pty_proc;

static int pty_spawn(pty_proc *p, const char *cmdline) {
  memset(p, 0, sizeof *p);
  p->cap = 1 << 16;
  p->buf = calloc(1, p->cap);
  struct winsize ws = {24, 120, 0, 0};
  p->pid = forkpty(&p->fd, NULL, NULL, &ws);
  if (p->pid < 0) return -1;
  if (p->pid == 0) {
    execl("/bin/sh", "sh", "-c", cmdline, (char *)NULL);
    _exit(127);
  }
  return 0;
}

/* reads what comes within secs; returns -1 at the end of its output */
static int pty_read(pty_proc *p, double secs) {
  struct pollfd pf = {p->fd, POLLIN, 0};
  int r = poll(&pf, 1, secs > 0 ? (int)(secs * 1000) : 0);
  if (r <= 0) return 0;
  if (p->len + 4096 + 1 > p->cap) {
    p->cap *= 2;
    p->buf = realloc(p->buf, p->cap);
  }
  ssize_t n = read(p->fd, p->buf + p->len, 4096);
  if (n <= 0) return -1; /* EIO once the terminal's last user is gone */
  p->len += (size_t)n;
  p->buf[p->len] = 0;
  return 1;
}

/* waits for needle at or after offset from; returns the offset after it, or -1 */
static long pty_expect(pty_proc *p, const char *needle, size_t from, double secs) {
  double end = now_s() + secs;
  for (;;) {
    const char *hit = from <= p->len ? strstr(p->buf + from, needle) : NULL;
    if (hit) return (long)(hit - p->buf) + (long)strlen(needle);
    double left = end - now_s();
    if (left <= 0 || pty_read(p, left) < 0) {
      hit = from <= p->len ? strstr(p->buf + from, needle) : NULL;
      return hit ? (long)(hit - p->buf) + (long)strlen(needle) : -1;
    }
  }
}

/* waits until n more bytes came after offset from */
static int pty_expect_bytes(pty_proc *p, size_t from, size_t n, double secs) {
  double end = now_s() + secs;
  while (p->len < from + n) {
    double left = end - now_s();
    if (left <= 0 || pty_read(p, left) < 0) break;
  }
  return p->len >= from + n;
}

static void pty_send(pty_proc *p, const char *s) {
  ssize_t w = write(p->fd, s, strlen(s));
  (void)w;
}

/* reads to the end (killing it after secs) and returns its exit status (128 + signal) */
static int pty_finish(pty_proc *p, double secs) {
  double end = now_s() + secs;
  while (now_s() < end && pty_read(p, end - now_s()) >= 0) {
  }
  int st = 0;
  pid_t w;
  while ((w = waitpid(p->pid, &st, WNOHANG)) == 0 && now_s() < end + 5) /* its output ends as it exits */
    usleep(10000);
  if (w == 0) {
    kill(p->pid, SIGKILL);
    waitpid(p->pid, &st, 0);
    close(p->fd);
    return -1;
  }
  close(p->fd);
  return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

/* the last "[speculation: N verify steps, A of D drafts accepted" line of s: 1 with *steps, *acc and *drafts set, 0
   when there is none */
static int spec_line(const char *s, long *steps, long *acc, long *drafts) {
  const char *p = NULL;
  for (const char *q = s; (q = strstr(q, "[speculation: ")); q++)
    p = q;
  return p && sscanf(p, "[speculation: %ld verify steps, %ld of %ld drafts accepted", steps, acc, drafts) == 3;
}

/* a number before `what` in s ("120 generated"), or -1 */
static long number_before(const char *s, const char *what) {
  const char *p = strstr(s, what);
  if (!p) return -1;
  while (p > s && p[-1] == ' ')
    p--;
  while (p > s && p[-1] >= '0' && p[-1] <= '9')
    p--;
  return strtol(p, NULL, 10);
}

static void runs_and_defaults(void) {
  char *o1, *o2, *e;
  /* greedy run is deterministic */
  CHECK(wg(&o1, &e, "run -m %s -p 'a b' -n 12 --temp 0", GGUF) == 0, "run greedy: %s", e);
  free(e);
  CHECK(wg(&o2, NULL, "run -m %s -p 'a b' -n 12 --temp 0", GGUF) == 0 && !strcmp(o1, o2),
        "greedy run differs between runs");
  CHECK(strncmp(o1, "a b", 3) == 0 && strlen(o1) > 4, "run echoes the prompt and continues: '%s'", o1);
  free(o2);
  /* the same options spelled --x=y, as llama-cli's names, options after the text, the text as operands */
  const char *spellings[] = {"run -m %s -p 'a b' --n-predict=12 --temp=0",
                             "run --model=%s --prompt='a b' -n12 --temp 0", "run -m %s 'a b' -n 12 --temperature 0",
                             "run -m %s a b -n 12 --temp 0", "-m %s -p 'a b' -n 12 --temp 0"};
  for (int i = 0; i < 5; i++) {
    int rc = wg(&o2, &e, spellings[i], GGUF);
    CHECK(rc == 0 && !strcmp(o1, o2), "'%s' gives other text: '%s' vs '%s' (%s)", spellings[i], o2, o1, e);
    free(o2);
    free(e);
  }
  free(o1);

  /* speculative decoding with prompt lookup: the text of the run without it, greedy and sampled with a penalty;
     its summary line with --stats; --draft-max only with it, and in range */
  const char *spec_runs[] = {"run -m %s -p 'a b c a b c a b c a b' -n 40 --temp 0 --stats",
                             "run -m %s -p 'a b c a b c a b c a b' -n 40 --temp 0.8 -s 5 --repeat-penalty 1.1 --stats"};
  for (int i = 0; i < 2; i++) {
    char cmd[300];
    CHECK(wg(&o1, &e, spec_runs[i], GGUF) == 0, "%s: %s", spec_runs[i], e);
    free(e);
    snprintf(cmd, sizeof cmd, "%s --spec-lookup --draft-max 5", spec_runs[i]);
    int rc = wg(&o2, &e, cmd, GGUF);
    CHECK(rc == 0 && !strcmp(o1, o2) && strstr(e, "[speculation: "), "%s: the text without it ('%s' vs '%s'): %s", cmd,
          o2, o1, e);
    free(o1);
    free(o2);
    free(e);
  }
  CHECK(wg(&o1, &e, "run -m %s -p 'a b' -n 4 --draft-max 4", GGUF) == 2 &&
            strstr(e, "--draft-max sets the drafts of --spec-lookup or -md, neither of which is given"),
        "--draft-max without --spec-lookup or -md: a usage error naming both (%s)", e);
  free(o1);
  free(e);
  CHECK(wg(&o1, &e, "run -m %s -p 'a b' -n 4 --spec-lookup --draft-max 16", GGUF) == 2,
        "--draft-max past 15: a usage error (%s)", e);
  free(o1);
  free(e);

  /* llama-cli's command line from the issue, as written */
  int rc = wg(&o1, &e, "run -m %s -p \"Hello\" -n 32 -c 512 -s 7 --temp 0.7 --top-k 40 --repeat-penalty 1.0 --stats",
              DEFAULT);
  CHECK(rc == 0 && !strncmp(o1, "Hello", 5) && strstr(e, "32 generated"), "llama-cli command line: %d %s / %s", rc, o1,
        e);
  free(o1);
  free(e);
  rc = wg(&o1, &e, "run -m %s -p \"Hello\" -n 32 -c 512 -s 7 --temp 0.7 --top-k 40 --repeat-penalty 1.0 --ignore-eos",
          DEFAULT);
  {
    CHECK(rc == 0 && !strncmp(o1, "Hello", 5), "llama-cli command line with --ignore-eos: %d %s", rc, e);
    /* seed 6 ends at an end-of-generation token after 21 tokens; with --ignore-eos it goes on to -n */
    free(o1);
    free(e);
    rc = wg(&o1, &e, "run -m %s -p 'a b' -n 60 --temp 1 -s 6 --stats", GGUF);
    CHECK(rc == 0 && strstr(e, "end of generation") && number_before(e, "generated") < 60, "seed 6 ends early: %s", e);
    free(o1);
    free(e);
    rc = wg(&o1, &e, "run -m %s -p 'a b' -n 60 --temp 1 -s 6 --stats --ignore-eos", GGUF);
    CHECK(rc == 0 && strstr(e, "60 generated"), "--ignore-eos goes past the end of generation: %s", e);
  }
  free(o1);
  free(e);

  /* seeds: the same seed reproduces, another differs; no -s is a random seed, printed with -v */
  const char *sampled = "run -m %s -p 'a b' -n 16 --temp 1.0 --top-k 0 --top-p 1 --min-p 0";
  char fmt[512];
  snprintf(fmt, sizeof fmt, "%s --seed 5", sampled);
  wg(&o1, NULL, fmt, GGUF);
  wg(&o2, NULL, fmt, GGUF);
  CHECK(!strcmp(o1, o2), "same seed, different text");
  free(o2);
  snprintf(fmt, sizeof fmt, "%s -s 6", sampled);
  wg(&o2, NULL, fmt, GGUF);
  CHECK(strcmp(o1, o2), "another seed gives the same text");
  free(o1);
  free(o2);
  snprintf(fmt, sizeof fmt, "%s -v", sampled);
  char *e1, *e2;
  wg(&o1, &e1, fmt, GGUF);
  wg(&o2, &e2, fmt, GGUF);
  CHECK(strcmp(o1, o2), "two runs without -s gave the same text (the seed is not random): %s", o1);
  long seed = number_before(e1, " (random)");
  CHECK(seed >= 0 && strstr(e1, "(random)") && number_before(e2, " (random)") != seed, "-v prints the random seed: %s",
        e1);
  free(o2);
  snprintf(fmt, sizeof fmt, "%s -s %ld", sampled, seed);
  wg(&o2, NULL, fmt, GGUF);
  CHECK(!strcmp(o1, o2), "-s with the printed seed does not reproduce the text: '%s' vs '%s'", o1, o2);
  CHECK(strstr(e1, "repeat-penalty 1 "), "the repeat penalty is not 1 by default: %s", e1);
  free(o1);
  free(o2);
  free(e1);
  free(e2);
  snprintf(fmt, sizeof fmt, "%s -s 9", sampled);
  wg(&o1, NULL, fmt, GGUF);
  snprintf(fmt, sizeof fmt, "%s -s 9 --repeat-penalty 1.0", sampled);
  wg(&o2, NULL, fmt, GGUF);
  CHECK(!strcmp(o1, o2), "no --repeat-penalty differs from --repeat-penalty 1.0");
  free(o2);
  snprintf(fmt, sizeof fmt, "%s -s 9 --presence-penalty 0 --frequency-penalty 0", sampled);
  wg(&o2, NULL, fmt, GGUF);
  CHECK(!strcmp(o1, o2), "no --presence-penalty / --frequency-penalty differs from both 0");
  free(o1);
  free(o2);
  /* the additive penalties reach the sampler: a greedy text that repeats tokens changes under them */
  const char *greedy = "run -m %s -p 'a b' -n 24 --temp 0";
  wg(&o1, NULL, greedy, GGUF);
  snprintf(fmt, sizeof fmt, "%s --presence-penalty 1.5 --frequency-penalty 0.5 -v", greedy);
  wg(&o2, &e, fmt, GGUF);
  CHECK(strcmp(o1, o2), "--presence-penalty 1.5 --frequency-penalty 0.5 leave the greedy text as it was: %s", o1);
  CHECK(strstr(e, "presence-penalty 1.5, frequency-penalty 0.5"), "-v does not print the penalties: %s", e);
  free(o1);
  free(o2);
  free(e);

  /* the context: the model's trained length (at most 4096: long_trained_context) unless -c; more than it is warned
     about; logits keeps 4096 */
  wg(NULL, &e, "run -m %s -p 'In the' -n 2 -v", DEFAULT);
  CHECK(strstr(e, "context 512 tokens (the model's trained length)"), "default context: %s", e);
  CHECK(!strstr(e, "warning"), "a warning without -c: %s", e);
  free(e);
  wg(NULL, &e, "run -m %s -p 'In the' -n 2 -c 1024 -v", DEFAULT);
  CHECK(strstr(e, "warning: a context of 1024 tokens is more than the 512 tokens the model was trained on") &&
            strstr(e, "context 1024 tokens"),
        "-c over the trained length: %s", e);
  free(e);
  snprintf(fmt, sizeof fmt, "logits -m %s --prompt-ids 1,2 -o %s/l.f32 -v", DEFAULT, g_tmp);
  wg(NULL, &e, "%s", fmt);
  CHECK(strstr(e, "context 4096 tokens"), "logits context: %s", e);
  free(e);
  /* -n -1: until the context is full */
  rc = wg(NULL, &e, "run -m %s -p 'a b' -n -1 -c 40 --temp 0 --stats", GGUF);
  CHECK(rc == 0 && strstr(e, "context full"), "-n -1: %s", e);
  free(e);
  /* context shift mid-reply: -n 100 on a context of 48 goes past the context (shifted, said with --stats), the text
     starting with the one --no-context-shift stops with at the context's end; chat's replies too; --keep N and -1
     keep that much, -2 is refused */
  {
    char *o_shift = NULL, *o_stop = NULL, *e_stop = NULL;
    rc = wg(&o_shift, &e, "run -m %s -p 'In the beginning' -c 48 -n 100 --temp 0 --stats", DEFAULT);
    int rc_stop = wg(&o_stop, &e_stop,
                     "run -m %s -p 'In the beginning' -c 48 -n 100 --temp 0 --stats --no-context-shift", DEFAULT);
    const char *said = strstr(e, "[context shifted ");
    long shifts = said ? strtol(said + strlen("[context shifted "), NULL, 10) : 0;
    CHECK(rc == 0 && strstr(e, "100 generated") && strstr(e, "stop: token limit") && shifts >= 2,
          "run past its context: 100 tokens, shifted (exit %d): %s", rc, e);
    CHECK(rc_stop == 0 && strstr(e_stop, "stop: context full") && !strstr(e_stop, "context shifted"),
          "--no-context-shift: the reply stops at the context's end (exit %d): %s", rc_stop, e_stop);
    size_t n_stop = o_stop ? strlen(o_stop) : 0;
    if (n_stop && o_stop[n_stop - 1] == '\n') n_stop--; /* the newline run ends its output with */
    CHECK(o_shift && n_stop > 40 && strlen(o_shift) > n_stop + 1 && !strncmp(o_shift, o_stop, n_stop),
          "the shifted text starts with the text up to the context's end: '%s' / '%s'", o_shift ? o_shift : "",
          o_stop ? o_stop : "");
    printf("  run -c 48 -n 100: %ld context shifts; --no-context-shift stops at the context (%zu bytes, a prefix)\n",
           shifts, n_stop);
    free(o_shift);
    free(o_stop);
    free(e_stop);
    free(e);
    for (int k = 0; k < 2; k++) {
      rc = wg(NULL, &e, "%s -m %s -p 'In the beginning' -c 48 -n 70 --temp 0 --ignore-eos --stats --keep %s",
              k ? "chat -st" : "run", DEFAULT, k ? "6" : "-1");
      CHECK(rc == 0 && strstr(e, "70 generated") && strstr(e, "[context shifted "), "%s --keep past the context: %s",
            k ? "chat" : "run", e);
      free(e);
    }
    rc = wg(NULL, &e, "run -m %s -p 'a b' -n 2 --keep -2", GGUF);
    CHECK(rc == 2 && strstr(e, "--keep"), "--keep -2: exit %d: %s", rc, e);
    free(e);
  }
  /* -t and -ngl: accepted, ignored, said with -v */
  rc = wg(NULL, &e, "run -m %s -p 'a b' -n 2 -t 8 -ngl 99 -v", GGUF);
  CHECK(rc == 0 && strstr(e, "-t 8 is accepted for llama.cpp compatibility and ignored") && strstr(e, "-ngl 99"),
        "-t: %s", e);
  free(e);
}

/* speculative decoding with a draft model (-md): the default model as its own draft (q4 weights: the verify step is
   the batched decode pass) gives the text of the run without it, greedy and sampled with a seed and a repetition
   penalty, in run and over two chat turns; --stats says how the drafts went (greedy, every draft accepted);
   --draft-max with -md alone bounds the drafts a step; a draft model of another tokenizer refused; on the f32
   weights as stored (the batched pass's unfused projections) -md and --spec-lookup give the text without them */
static void draft_model(void) {
  static const char *runs[] = {
      "run -m %s --weights q4 -p 'In the beginning' -n 32 --temp 0 --stats",
      "run -m %s --weights q4 -p 'In the beginning' -n 32 --temp 0.8 -s 5 --repeat-penalty 1.2 --stats"};
  char *greedy = NULL, *o1, *o2, *e1, *e2, cmd[1200];
  long steps, acc, drafts;
  for (int i = 0; i < 2; i++) {
    int rc = wg(&o1, &e1, runs[i], DEFAULT);
    CHECK(rc == 0 && strlen(o1) > 20 && !strstr(e1, "[speculation: "), "%s: exit %d: %s", runs[i], rc, e1);
    snprintf(cmd, sizeof cmd, "%s -md %s", runs[i], DEFAULT);
    rc = wg(&o2, &e2, cmd, DEFAULT);
    CHECK(rc == 0 && !strcmp(o1, o2) && number_before(e1, "generated") == number_before(e2, "generated"),
          "%s: exit %d, the text without it? ('%s' vs '%s'): %s", cmd, rc, o2, o1, e2);
    int spec = spec_line(e2, &steps, &acc, &drafts);
    CHECK(spec && steps > 0 && drafts > 0 && acc <= drafts, "%s: --stats shows the speculation: %s", cmd, e2);
    if (i == 0) {
      CHECK(spec && acc == drafts, "greedy with the model as its own draft accepts every draft: %s", e2);
      greedy = o1;
    } else {
      printf("  -md sampled: %ld of %ld drafts accepted in %ld steps\n", acc, drafts, steps);
      free(o1);
    }
    free(o2);
    free(e1);
    free(e2);
  }
  /* --draft-max with -md alone: at most 3 drafts a step, the same text */
  snprintf(cmd, sizeof cmd, "%s --draft-max 3 -md %s", runs[0], DEFAULT);
  int rc = wg(&o1, &e1, cmd, DEFAULT);
  int spec = spec_line(e1, &steps, &acc, &drafts);
  CHECK(rc == 0 && greedy && !strcmp(o1, greedy) && spec && drafts > 0 && drafts <= 3 * steps && acc == drafts,
        "%s: exit %d, the greedy text with at most 3 drafts a step ('%s' vs '%s'): %s", cmd, rc, o1, greedy, e1);
  free(o1);
  free(e1);
  free(greedy);
  CHECK(wg(&o1, &e1, "run -m %s --weights q4 -p 'a b' -n 4 -md %s --draft-max 16", DEFAULT, DEFAULT) == 2 &&
            strstr(e1, "--draft-max 16"),
        "-md --draft-max 16: a usage error (%s)", e1);
  free(o1);
  free(e1);
  /* another tokenizer (gemma3's): exit 2, saying so */
  const char *gemma = "data/models/gemma3_gguf/model.gguf";
  rc = wg(&o1, &e1, "run -m %s --weights q4 -p 'a b' -n 4 -md %s", DEFAULT, gemma);
  char want[200];
  snprintf(want, sizeof want, "wgllm: -md %s: the draft model's tokenizer is not the model's (", gemma);
  CHECK(rc == 2 && !*o1 && strstr(e1, want) && strstr(e1, "): it cannot propose tokens for it"),
        "-md of another tokenizer: exit %d, stdout '%s': %s", rc, o1, e1);
  free(o1);
  free(e1);
  /* the weights as stored (the unfused projections: the verify step's rows a GEMM): -md and --spec-lookup give the
     text without them */
  rc = wg(&o1, &e1, "run -m %s -p 'In the beginning' -n 24 --temp 0", DEFAULT);
  CHECK(rc == 0 && strlen(o1) > 20, "run as stored: exit %d: %s", rc, e1);
  static const char *spec_opts[] = {"-md ../models/default --stats", "--spec-lookup --stats"};
  for (int i = 0; i < 2; i++) {
    snprintf(cmd, sizeof cmd, "run -m %%s -p 'In the beginning' -n 24 --temp 0 %s", spec_opts[i]);
    rc = wg(&o2, &e2, cmd, DEFAULT);
    CHECK(rc == 0 && !strcmp(o1, o2) && spec_line(e2, &steps, &acc, &drafts) && (i || (steps > 0 && acc == drafts)),
          "%s as stored: exit %d, the text without it? ('%s' vs '%s'): %s", spec_opts[i], rc, o2, o1, e2);
    free(o2);
    free(e2);
  }
  free(o1);
  free(e1);
  /* chat: two turns over stdin (the draft's session kept from one to the next), the replies of the chat without it */
  int rcs[2];
  for (int i = 0; i < 2; i++) {
    snprintf(cmd, sizeof cmd,
             "printf 'hello\\nmore\\n' | %s/wgllm chat -m %s --weights q4 -n 24 --temp 0 --ignore-eos --stats%s%s",
             g_bin, DEFAULT, i ? " -md " : "", i ? DEFAULT : "");
    rcs[i] = sh(cmd, i ? &o2 : &o1, i ? &e2 : &e1);
  }
  rc = rcs[0] ? rcs[0] : rcs[1];
  CHECK(rc == 0 && strlen(o1) > 20 && !strcmp(o1, o2) && count(e2, "generated") == 2 &&
            count(e2, "[speculation: ") == 2 && !strstr(e1, "[speculation: "),
        "chat -md: exit %d, the replies without it? ('%s' vs '%s'): %s", rc, o2, o1, e2);
  free(o1);
  free(o2);
  free(e1);
  free(e2);
}

/* llama-cli's habits: command lines from its docs, with -fa (ignored), -ngl, -t, --jinja, -hf (refused: no
   downloads) and --chat-template-file; -fa is never read as -f a, even beside a file named "a". */
static void llama_cli_lines(void) {
  char *o1, *o2, *e1, *e2, path[512], cmd[1024];
  int rc = wg(&o1, &e1, "run -m %s -p 'In the beginning' -n 8 --temp 0", DEFAULT);
  CHECK(rc == 0 && strlen(o1) > 16, "run: exit %d: %s", rc, e1);
  snprintf(path, sizeof path, "a"); /* a file named "a" where the command runs */
  FILE *fa = fopen(path, "w");
  if (fa) {
    fputs("not the prompt", fa);
    fclose(fa);
  }
  static const char *const lines[] = {"run -m %s -p 'In the beginning' -n 8 --temp 0 -fa on",
                                      "run -m %s -fa off -ngl 99 -t 8 -c 512 -n 8 --temp 0 -p 'In the beginning'",
                                      "run -m %s --flash-attn auto --jinja -n 8 --temp 0 -p 'In the beginning'",
                                      "run -m %s -fa=on -n 8 --temp 0 --prompt 'In the beginning'"};
  for (size_t i = 0; i < sizeof lines / sizeof lines[0]; i++) {
    rc = wg(&o2, &e2, lines[i], DEFAULT);
    CHECK(rc == 0 && !strcmp(o1, o2), "'%s': exit %d, the text without the ignored options? ('%s' vs '%s'): %s",
          lines[i], rc, o2, o1, e2);
    free(o2);
    free(e2);
  }
  remove(path);
  free(o1);
  free(e1);
  rc = wg(&o1, &e1, "run -m %s -fa sometimes -p x -n 2", DEFAULT);
  CHECK(rc == 2 && strstr(e1, "-fa sometimes: expected one of on|off|auto"), "-fa sometimes: exit %d: %s", rc, e1);
  free(o1);
  free(e1);
  rc = wg(&o1, &e1, "run -hf ggml-org/gemma-3-1b-it-GGUF -p x");
  CHECK(rc == 2 && !*o1 && strstr(e1, "-hf ggml-org/gemma-3-1b-it-GGUF: wgllm does not download models") &&
            strstr(e1, "-m PATH"),
        "-hf: exit %d, saying to pass a file: %s", rc, e1);
  free(o1);
  free(e1);
  /* --chat-template-file: the file's Jinja runs instead of the model's; two templates of one text reply alike */
  static const char *const templates[] = {"In the beginning", "{{ 'In the ' + 'beginning' }}", "And God said",
                                          "{% if %}"};
  char *reply[4] = {0};
  for (int i = 0; i < 4; i++) {
    snprintf(path, sizeof path, "%s/t%d.jinja", g_tmp, i);
    FILE *f = fopen(path, "w");
    if (f) {
      fputs(templates[i], f);
      fclose(f);
    }
    snprintf(cmd, sizeof cmd, "chat -m %%s --chat-template-file %s -p hi -n 8 --temp 0 -no-cnv", path);
    rc = wg(&reply[i], &e1, cmd, DEFAULT);
    if (i < 3)
      CHECK(rc == 0 && strlen(reply[i]) > 8, "--chat-template-file '%s': exit %d: %s", templates[i], rc, e1);
    else
      CHECK(rc == 1 && strstr(e1, "the chat template given") && strstr(e1, "expected an expression"),
            "--chat-template-file of a template that does not parse: exit %d naming why: %s", rc, e1);
    free(e1);
  }
  rc = wg(&o2, &e2, "chat -m %s -p hi -n 8 --temp 0 -no-cnv", DEFAULT);
  CHECK(rc == 0 && reply[0] && reply[1] && reply[2] && !strcmp(reply[0], reply[1]) && strcmp(reply[0], reply[2]) &&
            strcmp(reply[0], o2),
        "--chat-template-file: one text, one reply ('%s' = '%s'); another text ('%s') and the model's own ('%s') "
        "differ",
        reply[0], reply[1], reply[2], o2);
  for (int i = 0; i < 4; i++)
    free(reply[i]);
  free(o2);
  free(e2);
  /* context shift: five messages through a context of 64 tokens, the oldest turns dropped (said); without it the
     prompts past the context fail */
  static const char five[] =
      "printf 'In the beginning God created the heaven and the earth\\nAnd the earth was without "
      "form, and void\\nAnd darkness was upon the face of the deep\\nAnd the Spirit of God "
      "moved upon the face of the waters\\nAnd God said, Let there be light\\n' | %s/wgllm chat "
      "-m %s -c 64 -n 8 --temp 0 --ignore-eos%s";
  for (int shift = 1; shift >= 0; shift--) {
    snprintf(cmd, sizeof cmd, five, g_bin, DEFAULT, shift ? "" : " --no-context-shift");
    rc = sh(cmd, &o1, &e1);
    if (shift)
      CHECK(rc == 0 && count(o1, "> ") == 6 &&
                strstr(e1, "[context: the 2 oldest messages dropped to fit the context "
                           "of 64 tokens") &&
                !strstr(e1, "the context only"),
            "chat past its context: the oldest turns dropped, every message answered (exit %d): %s", rc, e1);
    else
      CHECK(rc == 0 && strstr(e1, "the context only 64") && !strstr(e1, "[context:"),
            "--no-context-shift: the prompts past the context fail, saying so (exit %d): %s", rc, e1);
    free(o1);
    free(e1);
  }
  rc = wg(&o1, &e1, "chat -m %s --chat-template-file %s/none.jinja -p hi -n 2 -no-cnv", DEFAULT, g_tmp);
  CHECK(rc == 2 && strstr(e1, "none.jinja: No such file"), "--chat-template-file of no file: exit %d: %s", rc, e1);
  free(o1);
  free(e1);
}

static void parser(void) {
  char *o1, *o2, *e;
  /* -- ends the options: a text starting with '-' */
  int rc = wg(&o1, &e, "tokenize -m %s -- -x", GGUF);
  CHECK(rc == 0 && o1[0] >= '0' && o1[0] <= '9', "tokenize -- -x: %d %s %s", rc, o1, e);
  free(o1);
  free(e);
  rc = wg(&o1, &e, "run -m %s -n 4 --temp 0 -- -5 a", GGUF);
  CHECK(rc == 0 && !strncmp(o1, "-5 a", 4), "run -- -5 a: %d '%s' %s", rc, o1, e);
  free(o1);
  free(e);
  /* a value that starts with '-' is a value, also after a single-dash long name */
  rc = wg(&o1, &e, "run -m %s -p -sys -n 4 --temp 0", GGUF);
  CHECK(rc == 0 && !strncmp(o1, "-sys", 4), "-p -sys: %d '%s' %s", rc, o1, e);
  free(o1);
  free(e);
  /* -sys=TEXT, as llama-cli also takes it; -no-cnv is no option of chat, but taken there */
  rc = wg(&o1, &e, "chat -m %s -n 2 -sys='be brief' -no-cnv -p hi -st -v", GGUF);
  CHECK(rc == 0 && strstr(e, "wgllm chat:"), "-sys=TEXT: %d %s", rc, e);
  free(o1);
  free(e);
  /* a prompt from a file, as -p */
  char path[400], cmd[1200];
  snprintf(path, sizeof path, "%s/prompt.txt", g_tmp);
  FILE *f = fopen(path, "w");
  fputs("a b\n", f);
  fclose(f);
  wg(&o1, NULL, "run -m %s -p 'a b' -n 8 --temp 0", GGUF);
  wg(&o2, &e, "run -m %s -f %s -n 8 --temp 0", GGUF, path);
  CHECK(!strcmp(o1, o2), "-f FILE differs from -p: '%s' vs '%s' (%s)", o2, o1, e);
  free(o2);
  free(e);
  snprintf(cmd, sizeof cmd, "printf 'a b' | %s/wgllm run -m %s -f - -n 8 --temp 0", g_bin, GGUF);
  CHECK(sh(cmd, &o2, &e) == 0 && !strcmp(o1, o2), "-f - differs from -p: '%s' (%s)", o2, e);
  free(o2);
  free(e);
  free(o1);
  /* any number of stop strings: the 9th still counts */
  wg(&o1, NULL, "run -m %s -p 'In the' -n 16 --temp 0", DEFAULT);
  char stop[8] = "";
  for (size_t x = 14; x + 4 < strlen(o1) && !stop[0]; x++) { /* 4 letters first seen there */
    snprintf(stop, sizeof stop, "%.4s", o1 + x);
    if (strspn(stop, "abcdefghijklmnopqrstuvwxyz") != 4 || strstr(o1, stop) != o1 + x) stop[0] = 0;
  }
  CHECK(stop[0], "no stop string to pick in '%s'", o1);
  if (stop[0]) {
    wg(&o2, &e,
       "run -m %s -p 'In the' -n 16 --temp 0 -r Q1 -r Q2 --stop Q3 --stop Q4 -r Q5 -r Q6 -r Q7 --reverse-prompt=Q8 "
       "--stop %s",
       DEFAULT, stop);
    CHECK(strlen(o2) < strlen(o1) && !strncmp(o1, o2, strlen(o2) - 1) && !strstr(o2, stop),
          "the 9th stop string was dropped: '%s' (stop '%s' in '%s')", o2, stop, o1);
    free(o2);
    free(e);
  }
  free(o1);

  /* errors of the parser, the same in every command */
  expect_fail("unknown option", "run -m x -p hi --bogus 1", "unknown option '--bogus'");
  expect_fail("unknown short option", "run -m x -p hi -z", "unknown option '-z'");
  expect_fail("option of another command", "logits -m x --temp 1", "unknown option '--temp'");
  expect_fail("abbreviated name", "logits -m x --prompt 1 -o y",
              "unknown option '--prompt' (did you mean --prompt-ids?)");
  expect_fail("run option in tokenize", "tokenize -m x -n 3 hi", "unknown option '-n'");
  expect_fail("ambiguous prefix", "run -m x -p hi --top 5", "unknown option '--top' (did you mean --top-k, --top-p?)");
  expect_fail("abbreviated flag", "run -m x -p hi --ignore", "unknown option '--ignore' (did you mean --ignore-eos?)");
  expect_fail("flag with a value", "run -m x -p hi --ignore-eos=1", "--ignore-eos takes no value");
  expect_fail("missing value", "run -m x -p", "-p needs a value");
  expect_fail("missing long value", "run -m x -p hi --ctx-size", "--ctx-size needs a value");
  expect_fail("bad temperature", "run -m x -p hi --temp -1", "--temp -1: expected a number from 0 to 1e+06");
  expect_fail("infinite temperature", "run -m x -p hi --temp inf", "--temp inf: expected a number");
  expect_fail("NaN top-p", "run -m x -p hi --top-p nan", "--top-p nan: expected a number from 0 to 1");
  expect_fail("zero repeat penalty", "run -m x -p hi --repeat-penalty 0", "from 1e-06 to 1e+06");
  expect_fail("repeat-last-n over 256", "run -m x -p hi --repeat-last-n 257", "from -1 to 256");
  expect_fail("presence penalty over 2", "run -m x -p hi --presence-penalty 2.5",
              "--presence-penalty 2.5: expected a number from -2 to 2");
  expect_fail("frequency penalty under -2", "run -m x -p hi --frequency-penalty -3",
              "--frequency-penalty -3: expected a number from -2 to 2");
  expect_fail("run context with trailing junk", "run -m x -p hi --ctx 12abc", "--ctx 12abc: expected a whole number");
  expect_fail("logits context with trailing junk", "logits -m x --prompt-ids 1 -o y -c 12abc",
              "-c 12abc: expected a whole number from 0 to 16777216");
  expect_fail("context too large", "run -m x -p hi --ctx 99999999", "from 0 to 16777216");
  expect_fail("seed out of range", "run -m x -p hi -s 4294967296", "from -1 to 4294967295");
  expect_fail("-n 0", "run -m x -p hi -n 0", "nothing to generate");
  expect_fail("kv choice", "run -m x -p hi --kv f8", "--kv f8: expected one of f32|f16");
  expect_fail("chat option in run", "run -m x -p hi -sys be", "options of chat");
  expect_fail("two prompts", "run -m x -p hi there", "give the prompt once");
  expect_fail("prompt file missing", "run -m x -f /nonexistent/p.txt", "/nonexistent/p.txt: No such file");
  expect_fail("operand in chat", "chat -m x hello", "unexpected argument 'hello'");
  expect_fail("operand in logits", "logits -m x --prompt-ids 1 -o y extra", "unexpected argument 'extra'");
  expect_fail("bench unknown option", "bench --synthetic tiny --bogus", "unknown option '--bogus'");
  expect_fail("bench bad --gen", "bench --synthetic tiny --gen 0", "--gen 0: expected a whole number from 1");

  /* --help: every command, and every numeric option with its range */
  const char *cmds[] = {"run", "chat", "tokenize", "logits", "info", "bench", "perplexity", "serve"};
  for (int i = 0; i < 8; i++) {
    char args[64];
    snprintf(args, sizeof args, "%s --help", cmds[i]);
    rc = wg(&o1, &e, "%s", args);
    CHECK(rc == 0 && strstr(o1, "usage"), "%s --help", cmds[i]);
    free(o1);
    free(e);
  }
  wg(&o1, NULL, "run --help");
  const char *ranges[] = {"-c, --ctx-size, --ctx N",
                          "[0..16777216]",
                          "-n, --n-predict, --max-tokens N",
                          "[-1..16777216]",
                          "-s, --seed S",
                          "[-1..4294967295]",
                          "--temp, --temperature T",
                          "[0..1e+06]",
                          "--top-p P",
                          "[0..1]",
                          "--repeat-penalty R",
                          "[1e-06..1e+06]",
                          "--repeat-last-n N",
                          "[-1..256]",
                          "-ub, --ubatch-size, --prefill-chunk N",
                          "[1..65535]",
                          "-r, --reverse-prompt, --stop TEXT",
                          "any number",
                          "-t, --threads N",
                          "ignored",
                          "-sys, --system-prompt",
                          "-cnv, --conversation",
                          "--chat-template",
                          "--ignore-eos",
                          "-f, --file FILE",
                          "--min-p P",
                          "--top-k K"};
  for (size_t i = 0; i < sizeof ranges / sizeof *ranges; i++)
    CHECK(strstr(o1, ranges[i]), "run --help lacks \"%s\"", ranges[i]);
  /* each numeric option's line (or the line after it) states its range */
  const char *numeric[][2] = {{"--top-k K", "[0..4294967295]"},     {"--min-p P", "[0..1]"},
                              {"-t, --threads N", "[-1..1048576]"}, {"-ngl, --n-gpu-layers", "[-1..1048576]"},
                              {"--max-binding BYTES", "[>= 1024]"}, {"-c, --ctx-size", "[0..16777216]"},
                              {"-ub, --ubatch-size", "[1..65535]"}, {"--repeat-penalty R", "[1e-06..1e+06]"},
                              {"--presence-penalty P", "[-2..2]"},  {"--frequency-penalty F", "[-2..2]"}};
  for (size_t i = 0; i < sizeof numeric / sizeof *numeric; i++) {
    const char *at = strstr(o1, numeric[i][0]), *nl = at ? strchr(at, '\n') : NULL;
    const char *nl2 = nl ? strchr(nl + 1, '\n') : NULL;
    const char *r = at ? strstr(at, numeric[i][1]) : NULL;
    CHECK(r && (r < nl || (nl2 && r < nl2 && nl[1 + strspn(nl + 1, " ")] != '-')), "run --help: %s without %s",
          numeric[i][0], numeric[i][1]);
  }
  free(o1);
  wg(&o1, NULL, "bench --help");
  CHECK(strstr(o1, "--gen G") && strstr(o1, "[1..16777216]") && strstr(o1, "--pipeline D") && strstr(o1, "[1..3]"),
        "bench --help: %s", o1);
  free(o1);
}

static void chat_stdin(void) {
  char *o1, *e, cmd[4000], save[300], save2[300];
  snprintf(save, sizeof save, "%s/conv.json", g_tmp);
  snprintf(save2, sizeof save2, "%s/conv2.json", g_tmp);
  /* two turns (the first over two lines), /regen, /save, an unknown command, /reset, a third turn */
  snprintf(cmd, sizeof cmd,
           "printf 'hello\\\\\\nworld\\nmore\\n/regen\\n/save %s\\n/bogus\\n/reset\\nagain\\n' | %s/wgllm chat -m %s "
           "-n 8 --stats -sys 'be brief' --temp 1.5 --top-k 0",
           save, g_bin, GGUF);
  int rc = sh(cmd, &o1, &e);
  CHECK(rc == 0, "chat exit %d: %s", rc, e);
  CHECK(count(e, "generated") == 4, "chat answered %d of 4 (3 turns and /regen): %s", count(e, "generated"), e);
  CHECK(strstr(e, "cached") != NULL, "chat stats: %s", e);
  CHECK(strstr(e, "saved 5 messages") && strstr(e, "unknown command '/bogus'"), "chat commands: %s", e);
  free(o1);
  free(e);
  char *j = th_read_file(save, NULL);
  CHECK(j && strstr(j, "{\"role\": \"system\", \"content\": \"be brief\"}") &&
            strstr(j, "{\"role\": \"user\", \"content\": \"hello\\nworld\"}") && count(j, "\"assistant\"") == 2 &&
            strstr(j, "{\"role\": \"user\", \"content\": \"more\"}"),
        "saved conversation (one message over two lines, /regen replacing the reply): %s", j ? j : "(none)");
  /* /load then /save gives the same file; /load of a broken file is refused and the chat goes on */
  snprintf(
      cmd, sizeof cmd,
      "printf '/load %s\\n/save %s\\n/load %s/nonexistent.json\\n/load %s/prompt.txt\\n' | %s/wgllm chat -m %s -n 4",
      save, save2, g_tmp, g_tmp, g_bin, GGUF);
  rc = sh(cmd, &o1, &e);
  char *j2 = th_read_file(save2, NULL);
  CHECK(rc == 0 && strstr(e, "loaded 5 messages") && j && j2 && !strcmp(j, j2), "/load + /save round trip: %d %s", rc,
        e);
  CHECK(strstr(e, "nonexistent.json: No such file") && strstr(e, "prompt.txt: byte 0: expected an array"),
        "/load errors: %s", e);
  free(j);
  free(j2);
  free(o1);
  free(e);
  /* JSON escapes in, UTF-8 out; {"messages": [...]} too; a bad role refused */
  FILE *f = fopen(save, "w");
  fputs("{\"model\": \"x\", \"n\": [1, 2.5e3, true, null], \"messages\": [{\"role\":\"user\",\"content\":"
        "\"caf\\u00e9 \\ud83d\\ude00 \\\"q\\\" \\t\\/\",\"name\":{\"a\":[]}}]}",
        f);
  fclose(f);
  snprintf(cmd, sizeof cmd, "printf '/load %s\\n/save %s\\n' | %s/wgllm chat -m %s -n 4", save, save2, g_bin, GGUF);
  rc = sh(cmd, &o1, &e);
  j2 = th_read_file(save2, NULL);
  CHECK(rc == 0 && j2 &&
            strstr(j2, "{\"role\": \"user\", \"content\": \"caf\xc3\xa9 \xf0\x9f\x98\x80 \\\"q\\\" \\t/\"}"),
        "JSON escapes: %s %s", e, j2 ? j2 : "");
  free(j2);
  free(o1);
  free(e);
  f = fopen(save, "w");
  fputs("[{\"role\": \"robot\", \"content\": \"x\"}]", f);
  fclose(f);
  snprintf(cmd, sizeof cmd, "printf '/load %s\\n' | %s/wgllm chat -m %s -n 4", save, g_bin, GGUF);
  sh(cmd, &o1, &e);
  CHECK(strstr(e, "role \"robot\" is not system, user or assistant"), "bad role: %s", e);
  free(o1);
  free(e);
  /* a NUL byte (\u0000) in a message is refused naming its offset, never cut there */
  f = fopen(save, "w");
  fputs("[{\"role\": \"user\", \"content\": \"a\\\\u0000 is text\"}, {\"role\": \"user\", \"content\": \"x\\u0000y\"}]",
        f);
  fclose(f);
  snprintf(cmd, sizeof cmd, "printf '/load %s\\n' | %s/wgllm chat -m %s -n 4", save, g_bin, GGUF);
  sh(cmd, &o1, &e);
  CHECK(strstr(e, "byte 80: a string holds \\u0000"), "a NUL in a loaded message: %s", e);
  free(o1);
  free(e);
  /* a line over 8191 bytes is one message (refused whole: more tokens than the context) */
  snprintf(cmd, sizeof cmd, "{ printf 'ab %%.0s' $(seq 3000); echo; } | %s/wgllm chat -m %s -n 4 -c 1024 --stats",
           g_bin, GGUF);
  rc = sh(cmd, &o1, &e);
  long n = number_before(e, "tokens, the context only");
  CHECK(rc == 0 && count(e, "the context only") == 1 && n > 5000, "a 9000-byte line: %ld tokens, %s", n, e);
  free(o1);
  free(e);
  /* -p and -st: one turn and leave; run -cnv is chat */
  rc = wg(&o1, &e, "chat -m %s -n 4 -p 'hi there' -st --stats", GGUF);
  CHECK(rc == 0 && count(e, "generated") == 1 && strstr(o1, "> hi there"), "-p -st: %d %s", rc, e);
  free(o1);
  free(e);
  rc = wg(&o1, &e, "run -m %s -cnv -n 4 -sys 'be brief' -p 'hi there' -st --stats", GGUF);
  CHECK(rc == 0 && strstr(e, "wgllm chat:") && count(e, "generated") == 1, "run -cnv: %d %s", rc, e);
  free(o1);
  free(e);
  rc = wg(&o1, &e, "chat -m %s -n 4 -sysf %s/nonexistent -st", GGUF, g_tmp);
  CHECK(rc == 2 && strstr(e, "-sysf"), "-sysf missing: %s", e);
  free(o1);
  free(e);
}

/* the harmony markers a gpt-oss reply may hold, found in s (NULL: none) */
static const char *harmony_marker(const char *s) {
  static const char *const m[] = {"<|start|>",  "<|end|>",  "<|message|>",  "<|channel|>",
                                  "<|return|>", "<|call|>", "<|constrain|>"};
  for (size_t i = 0; s && i < sizeof m / sizeof *m; i++)
    if (strstr(s, m[i])) return m[i];
  return NULL;
}

/* chat on a harmony model (tests/data/models/gpt_oss_gguf: random weights, gpt-oss's template and tokenizer of 320
   tokens). --logit-bias makes its markers <|start|> <|end|> <|message|> <|channel|> (ids 315-318) likely, so each
   reply holds headers, bodies and stray markers (some 20 of its 64 tokens at these seeds); none of them reaches
   stdout or the conversation /save writes, and each reply the history keeps is what was printed. The second turn
   renders the first reply back through gpt-oss's template, which refuses content holding its channel markers. -v
   streams the reasoning (analysis) to stderr, also without markers. --logit-bias's own refusals. */
static void chat_harmony(void) {
  const char *model = "data/models/gpt_oss_gguf/model.gguf", *bias = "-l 315+2 -l 316+2 -l 317+2 --logit-bias=318+2";
  char *o, *e, cmd[4000], save[300];
  snprintf(save, sizeof save, "%s/harmony.json", g_tmp);
  for (int seed = 1; seed <= 3; seed++) {
    snprintf(cmd, sizeof cmd, "printf 'hi\\nmore\\n/save %s\\n' | %s/wgllm chat -m %s -n 64 -s %d %s --stats", save,
             g_bin, model, seed, bias);
    int rc = sh(cmd, &o, &e);
    CHECK(rc == 0 && count(e, "generated") == 2 && strstr(e, "saved 4 messages"),
          "harmony chat (seed %d): exit %d, two replies, saved: %s", seed, rc, e);
    CHECK(!harmony_marker(o), "harmony chat (seed %d): %s on stdout: %s", seed, harmony_marker(o), o);
    char *j = th_read_file(save, NULL);
    cJSON *conv = j ? cJSON_Parse(j) : NULL;
    int replies = 0;
    const cJSON *msg;
    cJSON_ArrayForEach(msg, conv) {
      const char *role = cJSON_GetStringValue(cJSON_GetObjectItem(msg, "role"));
      const char *content = cJSON_GetStringValue(cJSON_GetObjectItem(msg, "content"));
      if (!role || !content || strcmp(role, "assistant")) continue;
      replies++;
      CHECK(!harmony_marker(content), "harmony chat (seed %d): %s in the saved reply: %s", seed,
            harmony_marker(content), j);
      CHECK(strstr(o, content) != NULL, "harmony chat (seed %d): the saved reply [%s] is not what was printed: %s",
            seed, content, o);
    }
    CHECK(replies == 2, "harmony chat (seed %d): %d replies saved: %s", seed, replies, j ? j : "(none)");
    printf("  harmony chat, seed %d: replies of %zu bytes printed, no marker\n", seed, strlen(o));
    cJSON_Delete(conv);
    free(j);
    free(o);
    free(e);
  }
  int rc = wg(&o, &e, "chat -m %s -n 64 -s 5 %s -p hi -st -v", model, bias);
  CHECK(rc == 0 && !harmony_marker(o) && !harmony_marker(e), "harmony chat -v: exit %d, a marker (%s) out: %s %s", rc,
        harmony_marker(o) ? harmony_marker(o) : harmony_marker(e), o, e);
  free(o);
  free(e);
  char a[600];
  snprintf(a, sizeof a, "run -m %s -p hi -l 999999+1", GGUF);
  expect_fail("--logit-bias outside the vocabulary", a, "token 999999 is outside the vocabulary of");
  expect_fail("--logit-bias without a sign", "run -m x -p hi -l 15", "expected TOKEN+BIAS or TOKEN-BIAS");
  expect_fail("--logit-bias of no number", "run -m x -p hi -l 15+x", "the bias 'x' is not a finite number");
  expect_fail("--logit-bias given twice", "run -m x -p hi -l 15+1 -l 15-2", "token 15 is given a bias twice");
}

static void tokenize(void) {
  char *o1, *o2, *e, cmd[2000];
  /* round trip */
  CHECK(wg(&o1, &e, "tokenize -m %s 'aa bb cc'", GGUF) == 0, "tokenize: %s", e);
  free(e);
  o1[strcspn(o1, "\n")] = 0;
  CHECK(wg(&o2, &e, "tokenize -m %s --decode %s", GGUF, o1) == 0 && strstr(o2, "aa bb cc"),
        "decode(encode(x)): '%s' -> '%s'", o1, o2);
  free(o2);
  free(e);
  /* BOS added by default (id 1 here), --ids the same list, --no-bos without it */
  CHECK(!strncmp(o1, "1,", 2), "no BOS by default: %s", o1);
  wg(&o2, NULL, "tokenize -m %s --ids 'aa bb cc'", GGUF);
  CHECK(!strncmp(o2, o1, strlen(o1)), "--ids differs: %s", o2);
  free(o2);
  wg(&o2, NULL, "tokenize -m %s --no-bos 'aa bb cc'", GGUF);
  CHECK(!strncmp(o2, o1 + 2, strlen(o1) - 2), "--no-bos: %s (with: %s)", o2, o1);
  free(o2);
  free(o1);
  /* special-token text: parsed by default and with --no-bos; plain text with --no-parse-special */
  wg(&o1, NULL, "tokenize -m %s --no-bos 'aa</s>'", GGUF);
  CHECK(strstr(o1, ",2\n") != NULL, "--no-bos still parses </s> (id 2): %s", o1);
  free(o1);
  wg(&o1, NULL, "tokenize -m %s --no-parse-special 'aa</s>'", GGUF);
  CHECK(!strncmp(o1, "1,", 2) && !strstr(o1, ",2\n"), "--no-parse-special keeps BOS, </s> as text: %s", o1);
  free(o1);
  wg(&o1, NULL, "tokenize -m %s --no-special 'aa</s>'", GGUF);
  CHECK(strncmp(o1, "1,", 2) && !strstr(o1, ",2\n"), "--no-special: both: %s", o1);
  free(o1);
  /* --pieces: an id, a tab and its piece a line */
  CHECK(wg(&o1, &e, "tokenize -m %s --pieces 'aa bb'", GGUF) == 0, "--pieces: %s", e);
  CHECK(!strcmp(o1, "1\t<s>\n285\t\xe2\x96\x81"
                    "aa\n286\t\xe2\x96\x81"
                    "bb\n"),
        "--pieces: '%s'", o1);
  free(o1);
  free(e);
  wg(&o1, NULL, "tokenize -m %s --decode 1,3 --pieces", GGUF);
  CHECK(!strcmp(o1, "1\t<s>\n3\t<0x00>\n"), "--decode --pieces: '%s'", o1);
  free(o1);
  wg(&o1, NULL, "tokenize -m %s --pieces \"$(printf 'a\\nb')\"", DEFAULT);
  CHECK(strstr(o1, "\t\xc4\x8a\n"), "the newline's piece: '%s'", o1);
  free(o1);
  /* standard input when no text is given: the same ids */
  wg(&o1, NULL, "tokenize -m %s 'aa bb'", GGUF);
  snprintf(cmd, sizeof cmd, "printf 'aa bb' | %s/wgllm tokenize -m %s > %s/tok.txt", g_bin, GGUF, g_tmp);
  CHECK(system(cmd) == 0, "tokenize from stdin");
  snprintf(cmd, sizeof cmd, "%s/tok.txt", g_tmp);
  o2 = th_read_file(cmd, NULL);
  CHECK(o2 && !strcmp(o1, o2), "stdin: '%s' vs '%s'", o2 ? o2 : "", o1);
  free(o1);
  free(o2);
  expect_fail("unknown id in --decode", "tokenize -m data/models/llama_q4_0_gguf/model.gguf --decode 5,99999", "99999");
  expect_fail("unknown id in --pieces", "tokenize -m data/models/llama_q4_0_gguf/model.gguf --decode 5,999 --pieces",
              "999 is outside");
  expect_fail("unsupported tokenizer.json", "tokenize -m data/tokenizers/unsupported_wordpiece.json 'x'", "WordPiece");
  expect_fail("two texts", "tokenize -m x a b", "one argument");
}

/* Ctrl-C and progress lines on a pseudo-terminal */
static void terminal(void) {
  pty_proc p;
  char cmd[4000], conv[300];
  snprintf(conv, sizeof conv, "%s/interrupted.json", g_tmp);
  /* chat: Ctrl-C stops the reply (the greedy text would run to the context's end, 508 tokens), the prompt comes
     back and the conversation is there; Ctrl-C at the prompt leaves */
  snprintf(cmd, sizeof cmd, "exec %s/wgllm chat -m %s -n -1 --temp 0 --stats", g_bin, DEFAULT);
  CHECK(pty_spawn(&p, cmd) == 0, "forkpty");
  long at = pty_expect(&p, "> ", 0, 60);
  CHECK(at > 0, "chat prompt: %s", p.buf);
  CHECK(strstr(p.buf, "loading model") != NULL, "no load progress on a terminal: %s", p.buf);
  pty_send(&p, "In the beginning\n");
  CHECK(pty_expect_bytes(&p, (size_t)at, 80, 30), "no reply: %s", p.buf);
  double t0 = now_s();
  pty_send(&p, "\003");
  long k = pty_expect(&p, "[interrupted]", (size_t)at, 30);
  CHECK(k > 0, "Ctrl-C did not interrupt the reply: %s", p.buf + at);
  long gen =
      k > 0 && pty_expect(&p, "stopped by callback", (size_t)k, 10) > 0 ? number_before(p.buf + k, "generated") : -1;
  CHECK(gen > 0 && gen < 400 && strstr(p.buf + k, "stopped by callback"), "interrupted after %ld tokens (%.1f s): %s",
        gen, now_s() - t0, p.buf + at);
  long back = k > 0 ? pty_expect(&p, "> ", (size_t)k, 10) : -1;
  CHECK(back > 0, "no prompt after Ctrl-C: %s", p.buf + at);
  char line[400];
  snprintf(line, sizeof line, "/save %s\n", conv);
  pty_send(&p, line);
  CHECK(pty_expect(&p, "saved 2 messages", (size_t)(back > 0 ? back : 0), 10) > 0, "/save after Ctrl-C: %s",
        p.buf + at);
  pty_send(&p, "\003");
  int rc = pty_finish(&p, 20);
  CHECK(rc == 130, "Ctrl-C at the prompt: exit %d: %s", rc, p.buf + at);
  printf("  chat: Ctrl-C stopped the reply after %ld tokens; Ctrl-C at the prompt: exit %d\n", gen, rc);
  free(p.buf);
  char *j = th_read_file(conv, NULL);
  CHECK(j && strstr(j, "\"content\": \"In the beginning\"") && strstr(j, "\"assistant\", \"content\": \""),
        "the interrupted reply is kept: %s", j ? j : "");
  free(j);

  /* run: Ctrl-C stops the text and exits 130 */
  snprintf(cmd, sizeof cmd, "exec %s/wgllm run -m %s -p 'In the beginning' -n -1 --temp 0 --stats", g_bin, DEFAULT);
  CHECK(pty_spawn(&p, cmd) == 0, "forkpty");
  at = pty_expect(&p, "In the beginning", 0, 60);
  CHECK(at > 0 && pty_expect_bytes(&p, (size_t)at, 60, 30), "run on a terminal: %s", p.buf);
  pty_send(&p, "\003");
  rc = pty_finish(&p, 30);
  gen = number_before(p.buf, "generated");
  CHECK(rc == 130 && strstr(p.buf, "interrupted") && gen > 0 && gen < 400, "run Ctrl-C: exit %d, %ld tokens: %s", rc,
        gen, p.buf);
  free(p.buf);

  /* progress of a long prompt (passes of 64 tokens) and of the load on a terminal; nothing of it in a pipe */
  char prompt[3000];
  size_t n = 0;
  for (int i = 0; i < 700; i++)
    n += (size_t)snprintf(prompt + n, sizeof prompt - n, "a ");
  prompt[n - 1] = 0;
  snprintf(cmd, sizeof cmd, "exec %s/wgllm run -m %s -p '%s' -n 2 -ub 64 --temp 0", g_bin, GGUF, prompt);
  CHECK(pty_spawn(&p, cmd) == 0, "forkpty");
  rc = pty_finish(&p, 120);
  CHECK(rc == 0, "long prompt on a terminal: exit %d", rc);
  CHECK(strstr(p.buf, "loading model: ") && strstr(p.buf, "prompt: 0/701 tokens") && strstr(p.buf, "prompt: 64/701"),
        "no prefill progress on a terminal: %.300s", p.buf);
  const char *text = strstr(p.buf, "a a a");
  CHECK(text && text > p.buf && strstr(p.buf, "\r\033[K") && strstr(p.buf, "\r\033[Ka a a"),
        "the progress line is not cleared before the text: %.200s", p.buf);
  free(p.buf);
  char *o1, *e;
  snprintf(cmd, sizeof cmd, "%s/wgllm run -m %s -p '%s' -n 2 -ub 64 --temp 0", g_bin, GGUF, prompt);
  rc = sh(cmd, &o1, &e);
  CHECK(rc == 0 && !strstr(e, "prompt:") && !strstr(e, "loading") && !strchr(o1, '\r') && !strchr(e, '\033'),
        "progress when not a terminal: %s", e);
  free(o1);
  free(e);
  /* bench */
  snprintf(cmd, sizeof cmd, "exec %s/wgllm bench --synthetic tiny --prompt 16 --gen 8 --runs 2", g_bin);
  CHECK(pty_spawn(&p, cmd) == 0, "forkpty");
  rc = pty_finish(&p, 120);
  CHECK(rc == 0 && strstr(p.buf, "bench 16 tokens, KV f32: decode 2/2") && strstr(p.buf, "decode:"),
        "bench progress on a terminal: %d %.300s", rc, p.buf);
  free(p.buf);
  snprintf(cmd, sizeof cmd, "%s/wgllm bench --synthetic tiny --prompt 16 --gen 8 --runs 2", g_bin);
  rc = sh(cmd, &o1, &e);
  CHECK(rc == 0 && !strstr(e, "bench 16") && strstr(o1, "decode:"), "bench when not a terminal: %s", e);
  free(o1);
  free(e);
}

/* --precision on every command that makes a session: each accepted value reaches the session (-v says which), a
   bad one is refused naming the option and the choices; the server's listening line names it */
static void precision(void) {
  const char *vals[] = {"exact", "fast", "default"};
  char *o, *e, want[64];
  for (int i = 0; i < 3; i++) {
    snprintf(want, sizeof want, "precision %s", vals[i]);
    int rc = wg(&o, &e, "run -m %s -p 'a b' -n 4 --temp 0 -v --precision %s", GGUF, vals[i]);
    CHECK(rc == 0 && !strncmp(o, "a b", 3) && strstr(e, want), "run --precision %s: %d '%s' %s", vals[i], rc, o, e);
    free(o);
    free(e);
    rc = wg(&o, &e, "logits -m %s --prompt-ids 1,2,3 -o %s/p.f32 -v --precision=%s", GGUF, g_tmp, vals[i]);
    CHECK(rc == 0 && strstr(e, want), "logits --precision %s: %d %s", vals[i], rc, e);
    free(o);
    free(e);
  }
  int rc = wg(&o, &e, "chat -m %s -p hi -n 2 -st -v --precision fast", GGUF);
  CHECK(rc == 0 && strstr(e, "precision fast"), "chat --precision fast: %d %s", rc, e);
  free(o);
  free(e);
  rc = wg(&o, &e, "run -m %s -p 'a b' -n 2 --temp 0 -v", GGUF);
  CHECK(rc == 0 && strstr(e, "precision default"), "run without --precision: %d %s", rc, e);
  free(o);
  free(e);
  const char *cmds[] = {"run -m x -p hi", "chat -m x", "logits -m x --prompt-ids 1 -o y", "perplexity -m x -f y",
                        "serve -m x"};
  for (int i = 0; i < 5; i++) {
    char args[200], what[80];
    snprintf(args, sizeof args, "%s --precision turbo", cmds[i]);
    snprintf(what, sizeof what, "bad --precision (%.10s)", cmds[i]);
    expect_fail(what, args, "--precision turbo: expected one of exact|fast|default");
  }
  for (int i = 0; i < 5; i++) { /* in the help of each */
    char c[16];
    snprintf(c, sizeof c, "%.*s", (int)strcspn(cmds[i], " "), cmds[i]);
    wg(&o, NULL, "%s --help", c);
    CHECK(strstr(o, "--precision exact|fast|default"), "%s --help lacks --precision: %s", c, o);
    free(o);
  }
  expect_fail("empty --precision", "run -m x -p hi --precision=", "--precision : expected one of exact|fast|default");
  expect_fail("--precision in tokenize", "tokenize -m x --precision fast hi", "unknown option '--precision'");
  /* the server: its listening line says which is in use */
  char cmd[2000];
  snprintf(cmd, sizeof cmd,
           "%s/wgllm serve -m %s --port 0 --no-warmup -np 1 --precision fast >%s/serve.out 2>%s/serve.err & pid=$!; "
           "for i in $(seq 1200); do grep -q listening %s/serve.out && break; sleep 0.1; done; kill $pid; wait $pid; "
           "cat %s/serve.out",
           g_bin, DEFAULT, g_tmp, g_tmp, g_tmp, g_tmp);
  rc = sh(cmd, &o, &e);
  CHECK(rc == 0 && strstr(o, "wgllm serve: listening on http://127.0.0.1:") && strstr(o, ", precision fast, on "),
        "serve --precision fast: %d '%s' %s", rc, o, e);
  printf("  %s", o);
  free(o);
  free(e);
}

/* wgllm perplexity against the same sums computed here from `wgllm logits` of each chunk (one prefill over the whole
   chunk, its first token BOS; -log softmax in double): the running values after each chunk and the final estimate
   with llama-perplexity's uncertainty, to 1e-4 relative; then its refusals */
static void perplexity(void) {
  const char *text = "data/text/kjv_revelation.txt";
  const uint32_t n_ctx = 64, n_chunk = 3;
  char *o, *e, cmd[2000];
  double t0 = now_s();
  int rc = wg(&o, &e, "perplexity -m %s -f %s -c %u --chunks %u", DEFAULT, text, n_ctx, n_chunk);
  CHECK(rc == 0, "perplexity: exit %d: %s", rc, e);
  printf("  perplexity -c %u --chunks %u (%.1f s): %s", n_ctx, n_chunk, now_s() - t0, o);
  /* the tokens as the command takes them: BOS added, the final newline dropped, special-token text kept as text */
  snprintf(cmd, sizeof cmd, "head -c -1 %s | %s/wgllm tokenize -m %s --no-parse-special", text, g_bin, DEFAULT);
  char *ids_text, *te;
  CHECK(sh(cmd, &ids_text, &te) == 0, "tokenize the text: %s", te);
  free(te);
  int32_t *ids = malloc((strlen(ids_text) / 2 + 2) * sizeof *ids);
  size_t n = 0;
  for (char *p = ids_text; *p;) {
    char *end;
    long x = strtol(p, &end, 10);
    if (end == p) break;
    ids[n++] = (int32_t)x;
    p = *end == ',' ? end + 1 : end;
  }
  CHECK(n >= 2 * n_ctx * n_chunk && ids[0] == 2046, "the text's tokens: %zu, first %d", n, n ? ids[0] : -1);
  double nll = 0, nll2 = 0;
  long count = 0;
  const char *at = o;
  for (uint32_t i = 0; i < n_chunk && n >= (i + 1) * n_ctx; i++) {
    char list[n_ctx * 8], path[400];
    size_t k = 0;
    for (uint32_t j = 0; j < n_ctx; j++)
      k += (size_t)snprintf(list + k, sizeof list - k, "%s%d", j ? "," : "", j ? ids[i * n_ctx + j] : ids[0]);
    snprintf(path, sizeof path, "%s/ppl.f32", g_tmp);
    rc = wg(NULL, &te, "logits -m %s --prompt-ids %s -o %s", DEFAULT, list, path);
    size_t bytes = 0;
    float *lg = rc == 0 ? th_read_file(path, &bytes) : NULL;
    CHECK(lg && bytes % (n_ctx * sizeof(float)) == 0, "logits of chunk %u: %d %s", i + 1, rc, te);
    free(te);
    if (!lg) break;
    size_t V = bytes / (n_ctx * sizeof(float));
    for (uint32_t j = n_ctx / 2; j < n_ctx - 1; j++) {
      const float *row = lg + j * V;
      double mx = row[0], sum = 0;
      for (size_t t = 1; t < V; t++)
        mx = row[t] > mx ? row[t] : mx;
      for (size_t t = 0; t < V; t++)
        sum += exp((double)row[t] - mx);
      double x = mx + log(sum) - row[ids[i * n_ctx + j + 1]];
      nll += x;
      nll2 += x * x;
      count++;
    }
    free(lg);
    char tag[16];
    snprintf(tag, sizeof tag, "[%u]", i + 1);
    const char *p = strstr(at, tag);
    double got = p ? strtod(p + strlen(tag), NULL) : -1, want = exp(nll / count);
    CHECK(p && fabs(got - want) <= 1e-4 * want, "chunk %u: printed %.6f, computed %.6f", i + 1, got, want);
    if (p) at = p;
  }
  double mean = nll / count, ppl = exp(mean), unc = ppl * sqrt((nll2 / count - mean * mean) / (count - 1));
  double got_ppl = -1, got_unc = -1;
  const char *fin = strstr(o, "Final estimate: PPL = ");
  CHECK(fin && sscanf(fin, "Final estimate: PPL = %lf +/- %lf", &got_ppl, &got_unc) == 2, "no final estimate: %s", o);
  CHECK(fabs(got_ppl - ppl) <= 1e-4 * ppl && fabs(got_unc - unc) <= 1e-4 * unc,
        "final estimate %.6f +/- %.6f, computed %.6f +/- %.6f", got_ppl, got_unc, ppl, unc);
  CHECK(count == (long)(n_chunk * (n_ctx - 1 - n_ctx / 2)), "scored %ld tokens", count);
  printf("  computed from wgllm logits: PPL = %.4f +/- %.5f over %ld tokens\n", ppl, unc, count);
  free(o);
  free(e);
  free(ids);
  free(ids_text);
  /* the same text from standard input, -b and --kv f16 accepted; the GGUF copy of the model */
  snprintf(cmd, sizeof cmd, "%s/wgllm perplexity -m %s -f - -c %u --chunks 1 -b 2048 --kv f16 < %s", g_bin,
           "../models/default.gguf", n_ctx, text);
  rc = sh(cmd, &o, &e);
  CHECK(rc == 0 && !strncmp(o, "[1]", 3) && strstr(o, "\nFinal estimate: PPL = "), "perplexity -f -: %d %s %s", rc, o,
        e);
  CHECK(!strstr(e, "chunk") && !strchr(e, '\033'), "perplexity progress when not a terminal: %s", e);
  free(o);
  free(e);

  /* refusals: a missing file, a text under two chunks, a context over the model's, bad counts */
  char a[600];
  expect_fail("perplexity: missing file", "perplexity -m ../models/default -f /nonexistent/t.txt",
              "-f /nonexistent/t.txt: No such file");
  expect_fail("perplexity: no -f", "perplexity -m ../models/default", "-f FILE are required");
  char shortf[300];
  snprintf(shortf, sizeof shortf, "%s/short.txt", g_tmp);
  FILE *f = fopen(shortf, "w");
  fputs("In the beginning God created the heaven and the earth.\n", f); /* BOS + 14 tokens */
  fclose(f);
  snprintf(a, sizeof a, "perplexity -m %s -f %s -c 8", DEFAULT, shortf);
  expect_fail("perplexity: text too short", a, "is 15 tokens; a context of 8 needs at least 16");
  snprintf(a, sizeof a, "perplexity -m %s -f %s -c 1024", DEFAULT, text);
  expect_fail("perplexity: context over the model's", a,
              "1024 tokens (-c) is more than the 512 the model was trained on");
  snprintf(a, sizeof a, "perplexity -m %s -f %s -c 3", DEFAULT, text);
  expect_fail("perplexity: -c 3", a, "-c 3: expected a whole number from 4");
  snprintf(a, sizeof a, "perplexity -m %s -f %s --chunks 0", DEFAULT, text);
  expect_fail("perplexity: --chunks 0", a, "--chunks 0: expected -1 (all)");
  snprintf(a, sizeof a, "perplexity -m %s -f %s extra", DEFAULT, text);
  expect_fail("perplexity: operand", a, "unexpected argument 'extra'");
}

/* `make run`: the text and one summary line; the build's output only when it fails (run as at a shell prompt: not as a
 * sub-make of the `make test` that may have started this test, which would print its directory) */
static void make_run(void) {
  if (getenv("WGLLM_TEST_NO_MAKE")) {
    printf("  make run: skipped (WGLLM_TEST_NO_MAKE)\n");
    return;
  }
  char build[600], cmd[2000], *o1, *e;
  if (!realpath(g_bin, build)) return;
  snprintf(cmd, sizeof cmd, "cd .. && env -u MAKEFLAGS -u MAKELEVEL -u MFLAGS make run BUILD=%s", build);
  int rc = sh(cmd, &o1, &e);
  CHECK(rc == 0 && !strncmp(o1, "In the beginning", 16) && strlen(o1) > 100, "make run: exit %d, '%s' / %s", rc, o1, e);
  CHECK(count(e, "\n") == 1 && strstr(e, "120 generated") && strstr(e, ", on "), "make run's stderr: '%s'", e);
  CHECK(!strstr(o1, "Built target") && !strstr(e, "Built target") && !strstr(o1, "adapter"), "build output: %s", o1);
  free(o1);
  free(e);
  /* a cache newer than its rule's prerequisites: make goes straight to cmake --build, which fails at once */
  snprintf(cmd, sizeof cmd,
           "mkdir -p %s/bad && echo garbage > %s/bad/CMakeCache.txt && touch -d '+1 hour' %s/bad/CMakeCache.txt && "
           "cd .. && env -u MAKEFLAGS -u MAKELEVEL -u MFLAGS make run BUILD=%s/bad",
           g_tmp, g_tmp, g_tmp, g_tmp);
  rc = sh(cmd, &o1, &e);
  CHECK(rc != 0 && strstr(e, "Parse error in cache file") && strstr(e, "make run: the build failed"),
        "make run with a broken build: exit %d: %s", rc, e);
  free(o1);
  free(e);
}

/* `env [ENV] wgllm ARGS...` (argv, no shell), stderr in *err; its wall time and peak resident memory (its own,
   from wait4) in *secs and *rss_mb; returns the exit status */
static int wg_measured(const char *env, char *const args[], char **err, double *secs, double *rss_mb) {
  char exe[600], pe[300];
  snprintf(exe, sizeof exe, "%s/wgllm", g_bin);
  snprintf(pe, sizeof pe, "%s/err.txt", g_tmp);
  char *argv[32] = {exe};
  for (int i = 0; args[i] && i < 30; i++)
    argv[i + 1] = args[i];
  double t0 = now_s();
  pid_t pid = fork();
  if (pid == 0) {
    int fd = open(pe, O_WRONLY | O_CREAT | O_TRUNC, 0644), nul = open("/dev/null", O_RDWR);
    dup2(nul, 0);
    dup2(nul, 1);
    dup2(fd, 2);
    if (env) putenv((char *)env);
    execv(exe, argv);
    _exit(127);
  }
  int status = 0;
  struct rusage ru = {0};
  wait4(pid, &status, 0, &ru);
  *secs = now_s() - t0;
  *rss_mb = ru.ru_maxrss / 1024.0;
  *err = th_read_file(pe, NULL);
  if (!*err) *err = calloc(1, 1);
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128;
}

/* A config trained on 1,000,000 positions (the default model otherwise): without -c the session takes 4096 (noted
   under -v), in a couple of seconds and far less than the 4 GB the whole trained context's cache would take; -c
   1000000 past a memory budget, or past a storage binding limit, is refused before anything is allocated, naming
   the estimate (computed here from the config), the limit and what to pass. */
static void long_trained_context(void) {
  char d[400], cmd[2400], ctxarg[] = "1000000";
  snprintf(d, sizeof d, "%s/long", g_tmp);
  snprintf(
      cmd, sizeof cmd,
      "mkdir -p %s && for f in model.safetensors tokenizer.json tokenizer_config.json; do "
      "ln -sf \"$(realpath ../models/default/$f)\" %s/$f; done && "
      "sed 's/\"max_position_embeddings\": 512/\"max_position_embeddings\": 1000000/' ../models/default/config.json "
      "> %s/config.json && grep -q '\"max_position_embeddings\": 1000000' %s/config.json",
      d, d, d, d);
  CHECK(system(cmd) == 0, "long context: %s", cmd);
  char *e, *e0;
  double t, rss, t0, rss0;
  /* the same run on the default model (trained on 512) first: how long this machine takes now for a small run */
  char *base[] = {"run", "-m", "../models/default", "-p", "In the", "-n", "2", "-s", "1", NULL};
  wg_measured(NULL, base, &e0, &t0, &rss0);
  free(e0);
  char *plain[] = {"run", "-m", d, "-p", "In the", "-n", "2", "-s", "1", "-v", NULL};
  int rc = wg_measured(NULL, plain, &e, &t, &rss);
  printf("  trained on 1000000, no -c    -> exit %d in %.2f s, %.0f MB (the default model: %.2f s, %.0f MB)\n", rc, t,
         rss, t0, rss0);
  CHECK(rc == 0 && strstr(e, "context 4096 tokens (the default: the trained length, at most 4096)") &&
            strstr(e, "context 4096 tokens by default (the model was trained on 1000000; set the context for more)") &&
            !strstr(e, "warning"),
        "a model trained on 1000000 positions, no -c: exit %d: %s", rc, e);
  /* 2 s, or at most twice the small run plus a second (a machine loaded at the time: a build beside the tests made
     the small run 1.76 s and this one 2.44 s; test-san's sanitizers slow every host step). The whole trained
     context takes a minute either way. */
  CHECK(t <= 2.0 || t <= 2.0 * t0 + 1.0, "no -c: %.2f s (the default model %.2f s)", t, t0);
  /* 200 MB; a sanitized build (test-san: shadow memory, quarantine) at most 50 MB more than the small run */
  CHECK(rss <= 200 || (SANITIZED && rss <= rss0 + 50), "no -c: %.0f MB resident (the default model %.0f MB)", rss,
        rss0);
  free(e);
  /* the estimate: K and V of 4 layers x 4 KV heads x 32 x f32 for each of 1000000 positions */
  char want[96], budget[] = "WGLLM_MEMORY_BUDGET=1G";
  snprintf(want, sizeof want, "KV cache %.2f GiB f32", 2.0 * 4 * 1000000 * 4 * 32 * 4 / 1073741824.0);
  char *big[] = {"run", "-m", d, "-p", "In the", "-n", "2", "-c", ctxarg, NULL};
  rc = wg_measured(budget, big, &e, &t, &rss);
  printf("  -c 1000000, budget 1G        -> exit %d in %.2f s, %.0f MB: %s", rc, t, rss, e);
  CHECK(rc == 1 && strstr(e, "a session of 1000000 positions needs an estimated") && strstr(e, want) &&
            strstr(e, "the memory budget WGLLM_MEMORY_BUDGET of 1.00 GiB") && strstr(e, "a context of at most") &&
            strstr(e, "-c N (--ctx-size N) sets a smaller context"),
        "-c 1000000 over a budget of 1G: exit %d: %s (want \"%s\")", rc, e, want);
  CHECK(rss <= 200 || (SANITIZED && rss <= rss0 + 50), "-c 1000000 refused: %.0f MB resident (allocated first?)", rss);
  free(e);
  char *bind[] = {"run", "-m", d, "-p", "In the", "-n", "2", "-c", ctxarg, "--max-binding", "65536", NULL};
  rc = wg_measured(NULL, bind, &e, &t, &rss);
  printf("  -c 1000000, binding 64 KiB   -> exit %d: %s", rc, e);
  CHECK(rc == 1 && strstr(e, "KV cache: layer 0 keeps 1000000 positions") &&
            strstr(e, "over the storage binding limit of 64.0 KiB") && strstr(e, "-c N (--ctx-size N)") &&
            (rss <= 200 || (SANITIZED && rss <= rss0 + 50)),
        "-c 1000000 over a binding of 64 KiB: exit %d, %.0f MB: %s", rc, rss, e);
  free(e);
}

/* 1 when dir holds a file whose name starts with name.tmp. (a temporary file left behind) */
static int tmp_left(const char *dir, const char *name) {
  char cmd[1200];
  snprintf(cmd, sizeof cmd, "ls -a %s | grep -q '^%s\\.tmp\\.'", dir, name);
  return system(cmd) == 0;
}

/* The files the CLI writes (logits -o, chat /save) go to a temporary name beside them (NAME.tmp.PID), renamed onto them
   once whole. A write that fails part way, on a full disk (the temporary name made a link to /dev/full before the
   shell execs wgllm, keeping its PID), leaves the file as it was and nothing beside it; one that succeeds replaces
   it whole. */
static void writes_whole(void) {
  char dir[400], cmd[4000], ids[200] = "", *o, *e;
  snprintf(dir, sizeof dir, "%s/whole", g_tmp);
  snprintf(
      cmd, sizeof cmd,
      "mkdir -p %s && cd %s && echo old > out.f32 && echo '[]' > chat.json && printf '/save chat.json\\n' > in.txt",
      dir, dir);
  CHECK(system(cmd) == 0, "%s", cmd);
  for (int i = 1; i <= 20; i++) /* 20 rows of 2048 logits: 160 KiB */
    snprintf(ids + strlen(ids), sizeof ids - strlen(ids), "%s%d", i > 1 ? "," : "", i);
  char model[600], bin[600];
  CHECK(realpath(DEFAULT, model) && realpath(g_bin, bin), "realpath");
  snprintf(cmd, sizeof cmd,
           "cd %s && ln -s /dev/full out.f32.tmp.$$ && exec %s/wgllm logits -m %s --prompt-ids %s -o out.f32", dir, bin,
           model, ids);
  int rc = sh(cmd, &o, &e);
  char path[600], *back;
  snprintf(path, sizeof path, "%s/out.f32", dir);
  back = th_read_file(path, NULL);
  printf("  logits -o on a full disk        -> exit %d: %s", rc, e);
  CHECK(rc == 1 && strstr(e, "cannot write out.f32: No space left on device (the file is left as it was)") && back &&
            !strcmp(back, "old\n") && !tmp_left(dir, "out.f32"),
        "logits -o on a full disk: exit %d, the file holds \"%.8s\", temporary file left %d: %s", rc,
        back ? back : "(none)", tmp_left(dir, "out.f32"), e);
  free(back);
  free(o);
  free(e);
  size_t len = 0;
  rc = wg(NULL, &e, "logits -m %s --prompt-ids %s -o %s", DEFAULT, ids, path);
  back = th_read_file(path, &len);
  CHECK(rc == 0 && back && len == 20 * 2048 * 4 && !tmp_left(dir, "out.f32"), "logits -o: exit %d, %zu bytes: %s", rc,
        len, e);
  free(back);
  free(e);
  snprintf(cmd, sizeof cmd,
           "cd %s && ln -s /dev/full chat.json.tmp.$$ && exec %s/wgllm chat -m %s -n 2 -sys 'Be brief.' < in.txt", dir,
           bin, model);
  rc = sh(cmd, &o, &e);
  snprintf(path, sizeof path, "%s/chat.json", dir);
  back = th_read_file(path, NULL);
  const char *said = strstr(e, "wgllm chat: /save");
  printf("  chat /save on a full disk       -> %s", said ? said : e);
  CHECK(said && strstr(said, "/save chat.json: No space left on device (the file is left as it was)") && back &&
            !strcmp(back, "[]\n") && !tmp_left(dir, "chat.json"),
        "chat /save on a full disk: exit %d, the file holds \"%.8s\": %s", rc, back ? back : "(none)", e);
  free(back);
  free(o);
  free(e);
  snprintf(cmd, sizeof cmd, "cd %s && exec %s/wgllm chat -m %s -n 2 -sys 'Be brief.' < in.txt", dir, bin, model);
  rc = sh(cmd, &o, &e);
  back = th_read_file(path, NULL);
  CHECK(rc == 0 && back && strstr(back, "Be brief.") && !tmp_left(dir, "chat.json"), "chat /save: exit %d: %s", rc, e);
  free(back);
  free(o);
  free(e);
}

/* A model whose own chat template the interpreter cannot run still generates from text; chat names the construct
   and a named template overrides it */
static void unrunnable_template(void) {
  char d[400], cmd[2400], *o1, *e;
  snprintf(d, sizeof d, "%s/badtmpl", g_tmp);
  snprintf(cmd, sizeof cmd,
           "mkdir -p %s && for f in config.json model.safetensors tokenizer.json tokenizer_config.json; do "
           "ln -sf \"$(realpath ../models/default/$f)\" %s/$f; done && "
           "printf \"{{ messages|groupby('role') }}\" > %s/chat_template.jinja",
           d, d, d);
  CHECK(system(cmd) == 0, "unrunnable template: %s", cmd);
  int rc = wg(&o1, &e, "run -m %s -p 'In the beginning' -n 4 --temp 0", d);
  CHECK(rc == 0 && !strncmp(o1, "In the beginning", 16), "run with an unrunnable chat template: %d %s", rc, e);
  free(o1);
  free(e);
  rc = wg(&o1, &e, "chat -m %s -p hi -n 2 -st", d);
  CHECK(rc != 0 && strstr(e, "groupby"), "chat with an unrunnable template names the construct: %d %s", rc, e);
  printf("  unrunnable chat template -> %s", e ? e : "(nothing)\n");
  free(o1);
  free(e);
  rc = wg(&o1, &e, "chat -m %s -p hi -n 2 -st --chat-template chatml", d);
  CHECK(rc == 0, "a named template overrides an unrunnable one: %d %s", rc, e);
  free(o1);
  free(e);
}

/* --grammar, --grammar-file, -j, -jf: the text is a sentence of the grammar (the prompt echoed first), a JSON
   schema's output parses and has its fields, closed before the token limit; errors exit 2 naming where */
static void constrained(void) {
  char *out = NULL, *err = NULL;
  int rc = wg(&out, &err,
              "run -m ../models/default -p 'Answer:' -n 20 -s 5 --temp 1 --no-display-prompt "
              "--grammar 'root ::= \" The answer is \" (\"yes\" | \"no\") \".\"'");
  CHECK(rc == 0 && (!strcmp(out, " The answer is yes.\n") || !strcmp(out, " The answer is no.\n")),
        "--grammar: exit %d, text '%s' (%s)", rc, out, err);
  free(out);
  free(err);
  char path[600];
  snprintf(path, sizeof path, "%s/person.json", g_tmp);
  FILE *f = fopen(path, "w");
  fputs("{\"type\": \"object\", \"properties\": {\"name\": {\"type\": \"string\"}, \"age\": {\"type\": "
        "\"integer\", \"minimum\": 0, \"maximum\": 150}}, \"required\": [\"name\", \"age\"]}\n",
        f);
  fclose(f);
  rc = wg(&out, &err, "run -m ../models/default -p 'A person:' -n 48 -s 7 --temp 0.8 --no-display-prompt -jf %s", path);
  cJSON *j = rc == 0 ? cJSON_Parse(out) : NULL;
  const cJSON *name = cJSON_GetObjectItemCaseSensitive(j, "name"), *age = cJSON_GetObjectItemCaseSensitive(j, "age");
  CHECK(cJSON_IsString(name) && cJSON_IsNumber(age) && age->valuedouble >= 0 && age->valuedouble <= 150 &&
            age->valuedouble == (int)age->valuedouble && cJSON_GetArraySize(j) == 2,
        "-jf: exit %d, the output is not the schema's object: '%s' (%s)", rc, out, err);
  printf("  %-34s -> %s", "-jf person.json -n 48", out);
  cJSON_Delete(j);
  free(out);
  free(err);
  expect_fail("--grammar that does not parse", "run -m ../models/default -p x --grammar 'root ::= (\"a\"'", "gbnf 1:");
  expect_fail("-j with pattern", "run -m ../models/default -p x -j '{\"type\": \"string\", \"pattern\": \"a+\"}'",
              "/pattern");
  expect_fail("--grammar and -j", "run -m ../models/default -p x --grammar 'root ::= \"a\"' -j '{}'", "give one");
}

int main(void) {
  const char *bin = getenv("WGLLM_BIN");
  snprintf(g_bin, sizeof g_bin, "%s", bin ? bin : "../build");
  snprintf(g_tmp, sizeof g_tmp, "/tmp/wgllm-test-cli-%d", (int)getpid());
  char cmd[2048];
  snprintf(cmd, sizeof cmd, "mkdir -p %s", g_tmp);
  if (system(cmd)) return 1;
  char *o1, *e;

  long_trained_context();
  writes_whole();
  runs_and_defaults();
  draft_model();
  llama_cli_lines();
  parser();
  chat_stdin();
  chat_harmony();
  tokenize();
  terminal();
  precision();
  perplexity();
  make_run();
  unrunnable_template();
  constrained();

  /* user errors */
  char a[1024];
  snprintf(a, sizeof a, "run -m %s -p ''", GGUF);
  expect_fail("empty prompt", a, "empty");
  snprintf(a, sizeof a, "run -m %s -p \"$(printf 'ab\\377cd')\"", GGUF);
  expect_fail("invalid UTF-8 prompt", a, "UTF-8 (byte 2)");
  { /* refused before anything is echoed (issue 13) */
    char *po, *pe;
    wg(&po, &pe, "%s", a);
    CHECK(po && po[0] == 0, "invalid UTF-8 prompt: stdout should be empty, is \"%s\"", po ? po : "(null)");
    free(po);
    free(pe);
  }
  snprintf(a, sizeof a, "run -m %s -p \"$(head -c 3000 /dev/zero | tr '\\0' 'a' | sed 's/a/a /g')\" --ctx 64", GGUF);
  expect_fail("prompt longer than the context", a, "context");
  expect_fail("missing -m", "run -p hi", "-m PATH");
  expect_fail("unknown command", "frobnicate", "frobnicate");
  expect_fail("no adapter of that name", "info --gpu --adapter no-such-gpu", "no-such-gpu");
  snprintf(a, sizeof a, "run -m %s -p hi --weights q4:33", GGUF);
  expect_fail("bad weights option", a, "q4:33");
  expect_fail("model path missing", "run -m /nonexistent/model -p hi", "/nonexistent/model: No such file");

  /* the example program, built against the public header only */
  snprintf(cmd, sizeof cmd, "%s/example_generate %s 'a b' 8", g_bin, GGUF);
  int rc = sh(cmd, &o1, &e);
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
