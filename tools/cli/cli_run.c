/* `wgllm run` (continue a prompt, streaming) and `wgllm chat` (interactive chat with history), both through the
   public C API. */
#include "cli.h"
#include "wgllm.h"
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct gen_opts {
  cli_common c; /* the model and session options every command shares (cli_common_arg) */
  const char *prompt, *system;
  const char *stop[8];
  size_t n_stop;
  wgllm_generate_params gp;
  int stats;
} gen_opts;

static int parse_float(const char *s, float *out) {
  char *end;
  *out = strtof(s, &end);
  return *s && !*end && isfinite(*out); /* inf and nan are not settings */
}

static int parse_u32(const char *s, uint32_t *out) {
  char *end;
  unsigned long v = strtoul(s, &end, 10);
  if (!*s || *end || v > 0xffffffffu || s[0] == '-') return 0;
  *out = (uint32_t)v;
  return 1;
}

/* returns 0 ok, 1 handled (help), 2 error */
static int parse(int argc, char **argv, gen_opts *o, int chat, void (*usage)(FILE *)) {
  memset(o, 0, sizeof *o);
  o->gp = wgllm_generate_default_params();
  for (int i = 1; i < argc; i++) {
    const char *a = argv[i];
    if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
      usage(stdout);
      return 1;
    }
    int r = cli_common_arg(&o->c, argc, argv, &i);
    if (r < 0) return 2;
    if (r) continue;
    if (!strcmp(a, "--stats")) {
      o->stats = 1;
      continue;
    }
    if (i + 1 >= argc) {
      fprintf(stderr, "wgllm: %s needs a value (see --help)\n", a);
      return 2;
    }
    const char *v = argv[++i];
    int ok = 1;
    if (!chat && (!strcmp(a, "-p") || !strcmp(a, "--prompt")))
      o->prompt = v;
    else if (!strcmp(a, "-n") || !strcmp(a, "--max-tokens"))
      ok = parse_u32(v, &o->gp.max_tokens) && o->gp.max_tokens > 0;
    else if (!strcmp(a, "--temp"))
      ok = parse_float(v, &o->gp.temperature) && o->gp.temperature >= 0;
    else if (!strcmp(a, "--top-k"))
      ok = parse_u32(v, &o->gp.top_k);
    else if (!strcmp(a, "--top-p"))
      ok = parse_float(v, &o->gp.top_p) && o->gp.top_p >= 0 && o->gp.top_p <= 1;
    else if (!strcmp(a, "--min-p"))
      ok = parse_float(v, &o->gp.min_p) && o->gp.min_p >= 0 && o->gp.min_p <= 1;
    else if (!strcmp(a, "--repeat-penalty"))
      ok = parse_float(v, &o->gp.repeat_penalty) && o->gp.repeat_penalty > 0;
    else if (!strcmp(a, "--repeat-last-n"))
      ok = parse_u32(v, &o->gp.repeat_last_n) && o->gp.repeat_last_n <= 256;
    else if (!strcmp(a, "--seed"))
      ok = parse_u32(v, &o->gp.seed);
    else if (!strcmp(a, "--stop")) {
      if (o->n_stop < 8) o->stop[o->n_stop++] = v;
    } else if (chat && !strcmp(a, "--template"))
      o->c.chat_template = v;
    else if (chat && !strcmp(a, "--system"))
      o->system = v;
    else {
      fprintf(stderr, "wgllm: unknown option '%s' (see --help)\n", a);
      return 2;
    }
    if (!ok) {
      fprintf(stderr, "wgllm: invalid value '%s' for %s\n", v, a);
      return 2;
    }
  }
  if (!o->c.model) {
    fprintf(stderr, "wgllm: -m PATH is required (see --help)\n");
    return 2;
  }
  o->gp.stop = o->stop;
  o->gp.n_stop = o->n_stop;
  return 0;
}

static int stream_out(const char *text, size_t len, void *user) {
  (void)user;
  fwrite(text, 1, len, stdout);
  fflush(stdout);
  return 0;
}

static int open_model(const gen_opts *o, wgllm_model **m, wgllm_session **s) { return cli_open(&o->c, m, s, 0); }

static void print_stats(const wgllm_generate_stats *st) {
  fprintf(stderr, "[%u prompt tokens (%u cached) in %.3f s, %u generated in %.3f s (%.1f tok/s), stop: %s]\n",
          st->prompt_tokens, st->cached_tokens, st->prefill_seconds, st->generated_tokens, st->decode_seconds,
          st->decode_seconds > 0 ? st->generated_tokens / st->decode_seconds : 0.0, st->stop_reason);
}

static void common_help(FILE *f) {
  fprintf(f, "  -n, --max-tokens N   tokens to generate (default 256)\n"
             "  --temp T             temperature, 0 = greedy (default 0.8)\n"
             "  --top-k K            (default 40, 0 = off)   --top-p P (default 0.95)   --min-p P (default 0.05)\n"
             "  --repeat-penalty R   (default 1.1)   --repeat-last-n N (default 64)\n"
             "  --seed S             same seed, same output (default 1)\n"
             "  --stop TEXT          stop when TEXT appears (repeatable, up to 8)\n"
             "  --ctx N              context length (default 4096)   --kv f32|f16   KV cache storage\n"
             "  --prefill-chunk N, -ub N   tokens a prefill pass (default 512)\n"
             "  --weights native|q4[:GROUP]   --adapter NAME   --no-f16   --stats (timings to stderr)\n");
}

static void run_usage(FILE *f) {
  fprintf(f, "usage: wgllm run -m PATH -p TEXT [options]\n  continues TEXT and streams the result\n");
  common_help(f);
}

int cli_run(int argc, char **argv) {
  gen_opts o;
  int rc = parse(argc, argv, &o, 0, run_usage);
  if (rc) return rc == 1 ? 0 : 2;
  if (!o.prompt) {
    fprintf(stderr, "wgllm run: -p TEXT is required\n");
    return 2;
  }
  if (!o.prompt[0]) {
    fprintf(stderr, "wgllm run: the prompt is empty\n");
    return 2;
  }
  long bad = cli_utf8_invalid_at(o.prompt);
  if (bad >= 0) { /* refused before anything is echoed */
    fprintf(stderr, "wgllm run: the prompt is not valid UTF-8 (byte %ld)\n", bad);
    return 2;
  }
  wgllm_model *m;
  wgllm_session *s;
  if (open_model(&o, &m, &s)) return 1;
  o.gp.on_text = stream_out;
  wgllm_generate_stats st;
  fputs(o.prompt, stdout);
  wgllm_status r = wgllm_generate(s, o.prompt, &o.gp, &st);
  fputc('\n', stdout);
  fflush(stdout);
  if (r)
    fprintf(stderr, "wgllm run: %s (%s)\n", wgllm_session_error(s), wgllm_status_name(r));
  else if (o.stats)
    print_stats(&st);
  wgllm_session_free(s);
  wgllm_model_free(m);
  return r ? 1 : 0;
}

static void chat_usage(FILE *f) {
  fprintf(f, "usage: wgllm chat -m PATH [--system TEXT] [--template llama3|chatml|gemma|llama2|none] [options]\n"
             "  interactive chat; one message per line, /reset clears the history, /quit or end of input leaves\n");
  common_help(f);
}

int cli_chat(int argc, char **argv) {
  gen_opts o;
  int rc = parse(argc, argv, &o, 1, chat_usage);
  if (rc) return rc == 1 ? 0 : 2;
  wgllm_model *m;
  wgllm_session *s;
  if (open_model(&o, &m, &s)) return 1;
  wgllm_model_info info;
  wgllm_model_get_info(m, &info);
  fprintf(stderr, "wgllm chat: %s on %s, template %s. /reset clears the history, /quit leaves.\n", info.architecture,
          info.adapter, info.chat_template);
  size_t cap = 16, n = 0;
  wgllm_message *msgs = malloc(cap * sizeof *msgs);
  char *sys = o.system ? strdup(o.system) : NULL;
  if (!msgs || (o.system && !sys)) {
    fprintf(stderr, "wgllm chat: out of memory\n");
    free(msgs);
    free(sys);
    wgllm_session_free(s);
    wgllm_model_free(m);
    return 1;
  }
  if (sys) msgs[n++] = (wgllm_message){"system", sys};
  size_t n_fixed = n;
  o.gp.on_text = stream_out;
  char line[8192];
  int status = 0;
  for (;;) {
    fputs("> ", stdout);
    fflush(stdout);
    if (!fgets(line, sizeof line, stdin)) break;
    line[strcspn(line, "\r\n")] = 0;
    if (!strcmp(line, "/quit")) break;
    if (!strcmp(line, "/reset")) {
      while (n > n_fixed)
        free((void *)msgs[--n].content);
      wgllm_session_reset(s);
      continue;
    }
    if (!line[0]) continue;
    if (n + 2 > cap) {
      wgllm_message *grown = realloc(msgs, 2 * cap * sizeof *msgs);
      if (!grown) {
        fprintf(stderr, "wgllm chat: out of memory\n");
        status = 1;
        break;
      }
      msgs = grown;
      cap *= 2;
    }
    char *user = strdup(line);
    if (!user) {
      fprintf(stderr, "wgllm chat: out of memory\n");
      status = 1;
      break;
    }
    msgs[n++] = (wgllm_message){"user", user};
    char *reply = NULL;
    wgllm_generate_stats st;
    wgllm_status r = wgllm_chat(s, msgs, n, &o.gp, &reply, &st);
    fputc('\n', stdout);
    fflush(stdout);
    if (r) {
      fprintf(stderr, "wgllm chat: %s (%s)\n", wgllm_session_error(s), wgllm_status_name(r));
      free((void *)msgs[--n].content);
      status = 1;
      if (r != WGLLM_ERR_INVALID_ARG) break;
      continue;
    }
    if (o.stats) print_stats(&st);
    msgs[n++] = (wgllm_message){"assistant", reply};
  }
  for (size_t i = 0; i < n; i++)
    free((void *)msgs[i].content);
  free(msgs);
  wgllm_session_free(s);
  wgllm_model_free(m);
  return status;
}
