/* `wgllm run`: continues a prompt, streaming the text, through the public C API. The options of run and chat
   (llama-cli's names as the primary or alias spellings) are parsed here for both; `run -cnv` is chat. */
#include "cli.h"
#include "wgllm.h"
#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>
#include <unistd.h>

enum {
  K_TEMP = 512,
  K_TOP_K,
  K_TOP_P,
  K_MIN_P,
  K_REPEAT_PENALTY,
  K_REPEAT_LAST_N,
  K_PRESENCE_PENALTY,
  K_FREQUENCY_PENALTY,
  K_STOP,
  K_IGNORE_EOS,
  K_STATS,
  K_SYSTEM,
  K_SYSTEM_FILE,
  K_TEMPLATE,
  K_CNV,
  K_NO_CNV,
  K_SINGLE_TURN,
  K_NO_CONTEXT_SHIFT,
  K_KEEP,
  K_NO_DISPLAY_PROMPT,
  K_SPEC_LOOKUP,
  K_DRAFT_MAX,
  K_MODEL_DRAFT,
  K_GRAMMAR,
  K_GRAMMAR_FILE,
  K_JSON_SCHEMA,
  K_JSON_SCHEMA_FILE,
  K_LOGIT_BIAS
};

static const cli_opt gen_opts[] = {
    {'p', "-p --prompt", CLI_TEXT, "TEXT", 0, 0, 0, CLI_CMD_GEN,
     "run: the text to continue (also as operands); chat: a first message"},
    {'f', "-f --file", CLI_TEXT, "FILE", 0, 0, 0, CLI_CMD_GEN,
     "the prompt from FILE (-: standard input; one final newline dropped)"},
    {'n', "-n --n-predict --max-tokens", CLI_INT, "N", -1, 1 << 24, 0, CLI_CMD_GEN,
     "tokens to generate (a reply: at most); default 256; -1: context full"},
    {'s', "-s --seed", CLI_INT, "S", -1, 4294967295.0, 0, CLI_CMD_GEN,
     "same seed, same text (default -1, as 4294967295: random, printed with -v)"},
    {K_TEMP, "--temp --temperature", CLI_FLOAT, "T", 0, WGLLM_SAMPLING_SCALE_MAX, 0, CLI_CMD_GEN,
     "temperature, 0: greedy (default 0.8)"},
    {K_TOP_K, "--top-k", CLI_INT, "K", 0, 4294967295.0, 0, CLI_CMD_GEN,
     "keep the K likeliest tokens (default 40, 0: off)"},
    {K_TOP_P, "--top-p", CLI_FLOAT, "P", 0, 1, 0, CLI_CMD_GEN, "nucleus sampling (default 0.95, 1: off)"},
    {K_MIN_P, "--min-p", CLI_FLOAT, "P", 0, 1, 0, CLI_CMD_GEN,
     "drop tokens under P x the top probability (default 0.05, 0: off)"},
    {K_REPEAT_PENALTY, "--repeat-penalty", CLI_FLOAT, "R", WGLLM_SAMPLING_SCALE_MIN, WGLLM_SAMPLING_SCALE_MAX, 0,
     CLI_CMD_GEN, "penalty of recently seen tokens (default 1: off)"},
    {K_REPEAT_LAST_N, "--repeat-last-n", CLI_INT, "N", -1, 256, 0, CLI_CMD_GEN,
     "tokens the penalty looks back (default 64; -1: 256, the most)"},
    {K_PRESENCE_PENALTY, "--presence-penalty", CLI_FLOAT, "P", -2, 2, 0, CLI_CMD_GEN,
     "minus P from the logit of each token in that window (default 0: off)"},
    {K_FREQUENCY_PENALTY, "--frequency-penalty", CLI_FLOAT, "F", -2, 2, 0, CLI_CMD_GEN,
     "minus F x its count there (default 0: off)"},
    {K_STOP, "-r --reverse-prompt --stop", CLI_TEXT, "TEXT", 0, 0, 0, CLI_CMD_GEN,
     "stop where TEXT appears (not printed); any number of them"},
    {'l', "-l --logit-bias", CLI_TEXT, "TOKEN(+|-)BIAS", 0, 0, 0, CLI_CMD_GEN,
     "add BIAS to token id TOKEN's logit before each draw (llama-cli's form: 15043+1, 15043-1.5; -100 all but bans "
     "it); any number of them"},
    {K_IGNORE_EOS, "--ignore-eos", CLI_FLAG, NULL, 0, 0, 0, CLI_CMD_GEN,
     "keep generating past end-of-generation tokens"},
    {K_STATS, "--stats", CLI_FLAG, NULL, 0, 0, 0, CLI_CMD_GEN, "a summary line (tokens, times, stop reason) on stderr"},
    {K_SPEC_LOOKUP, "--spec-lookup", CLI_FLAG, NULL, 0, 0, 0, CLI_CMD_GEN,
     "speculative decoding with prompt lookup: drafts from the text so far, checked in one pass (same text)"},
    {K_MODEL_DRAFT, "-md --model-draft", CLI_TEXT, "PATH", 0, 0, 0, CLI_CMD_GEN,
     "speculative decoding with a draft model of the same tokenizer (a smaller one: its greedy tokens are checked "
     "in one pass; same text)"},
    {K_DRAFT_MAX, "--draft-max --draft --draft-n", CLI_INT, "N", 1, WGLLM_SPEC_MAX, 0, CLI_CMD_GEN,
     "drafts a speculative step at most (default 7: eight rows, one pass of the weights)"},
    {K_GRAMMAR, "--grammar", CLI_TEXT, "GBNF", 0, 0, 0, CLI_CMD_GEN,
     "constrain the text to this GBNF grammar (llama.cpp's syntax, rule root)"},
    {K_GRAMMAR_FILE, "--grammar-file", CLI_TEXT, "FILE", 0, 0, 0, CLI_CMD_GEN, "the GBNF grammar from FILE"},
    {K_JSON_SCHEMA, "-j --json-schema", CLI_TEXT, "SCHEMA", 0, 0, 0, CLI_CMD_GEN,
     "constrain the text to JSON valid under this JSON schema ('{}': any JSON object)"},
    {K_JSON_SCHEMA_FILE, "-jf --json-schema-file", CLI_TEXT, "FILE", 0, 0, 0, CLI_CMD_GEN, "the JSON schema from FILE"},
    {K_NO_DISPLAY_PROMPT, "--no-display-prompt", CLI_FLAG, NULL, 0, 0, 0, CLI_CMD_RUN,
     "run: print the continuation only, not the prompt"},
    {K_CNV, "-cnv --conversation", CLI_FLAG, NULL, 0, 0, 0, CLI_CMD_GEN, "run: chat instead (as wgllm chat)"},
    {K_NO_CNV, "-no-cnv --no-conversation", CLI_FLAG, NULL, 0, 0, 0, CLI_CMD_GEN,
     "run: continue the prompt (run's default; chat: no effect)"},
    {K_SYSTEM, "-sys --system-prompt --system", CLI_TEXT, "TEXT", 0, 0, 0, CLI_CMD_GEN, "chat: the system message"},
    {K_SYSTEM_FILE, "-sysf --system-prompt-file", CLI_TEXT, "FILE", 0, 0, 0, CLI_CMD_GEN,
     "chat: the system message from FILE"},
    {K_TEMPLATE, "--chat-template --template", CLI_TEXT, "NAME", 0, 0, 0, CLI_CMD_GEN,
     "chat: llama3, chatml, gemma, llama2 or none (default: the model's)"},
    {K_NO_CONTEXT_SHIFT, "--no-context-shift", CLI_FLAG, NULL, 0, 0, 0, CLI_CMD_GEN,
     "a reply that reaches the context's end stops there, and in chat a conversation past the context is an error "
     "(default: the context shifts, keeping --keep tokens and dropping half of the rest, and chat's oldest messages "
     "after the system message go)"},
    {K_KEEP, "--keep", CLI_INT, "N", -1, 2147483647, 0, CLI_CMD_GEN,
     "tokens of the prompt a context shift keeps (-1: all of it; default 0: the BOS token alone)"},
    {K_SINGLE_TURN, "-st --single-turn", CLI_FLAG, NULL, 0, 0, 0, CLI_CMD_GEN,
     "chat: answer one message (-p or the first line) and leave"},
    {0, NULL, 0, NULL, 0, 0, 0, 0, NULL}};

static const cli_opt *const gen_tables[] = {gen_opts, cli_common_opts, NULL};

typedef struct parse_state {
  cli_gen *g;
  const char *prog, *file, *system_file;
  int n_prompts; /* -p, -f, operands: one of them */
  int chat_only; /* -sys, -sysf, --chat-template or -st given (run needs -cnv for those) */
} parse_state;

/* -l TOKEN(+|-)BIAS (llama-cli's --logit-bias): a token id, its sign and a finite bias; a token given twice is
   refused (the API takes distinct ids). The id's range is checked once the model is open (cli_gen_open_draft). */
static int logit_bias(parse_state *ps, const cli_value *v) {
  cli_gen *g = ps->g;
  const char *t = v->text;
  char *end;
  errno = 0;
  long id = strtol(t, &end, 10);
  if (end == t || !isdigit((unsigned char)t[0]) || (*end != '+' && *end != '-') || errno || id > INT32_MAX) {
    fprintf(stderr, "%s: %s %s: expected TOKEN+BIAS or TOKEN-BIAS (a token id, then the bias: 15043+1, 15043-1.5)\n",
            ps->prog, v->name, t);
    return 2;
  }
  const char *b = end + 1;
  double bias = strtod(b, &end);
  if (end == b || *end || !isfinite(bias) || !(isdigit((unsigned char)b[0]) || b[0] == '.')) {
    fprintf(stderr, "%s: %s %s: the bias '%s' is not a finite number without a sign of its own\n", ps->prog, v->name, t,
            b);
    return 2;
  }
  for (size_t i = 0; i < g->n_bias; i++)
    if (g->bias_ids[i] == (int32_t)id) {
      fprintf(stderr, "%s: %s %s: token %ld is given a bias twice\n", ps->prog, v->name, t, id);
      return 2;
    }
  g->bias_ids[g->n_bias] = (int32_t)id; /* room for every argument (cli_gen_parse) */
  g->bias[g->n_bias++] = (float)(*(b - 1) == '-' ? -bias : bias);
  return 0;
}

static int on_opt(void *user, int key, const cli_value *v) {
  parse_state *ps = user;
  cli_gen *g = ps->g;
  int r = cli_common_set(&g->c, key, v);
  if (r != 1) return r;
  switch (key) {
  case 'p':
    g->prompt = v->text;
    ps->n_prompts++;
    break;
  case 'f':
    ps->file = v->text;
    ps->n_prompts++;
    break;
  case 'n':
    if (v->i == 0) {
      fprintf(stderr, "%s: %s 0: nothing to generate (a count from 1, or -1: until the context is full)\n", ps->prog,
              v->name);
      return 2;
    }
    g->n_predict = v->i;
    break;
  case 's':
    g->seed_given = v->i >= 0 && v->i != WGLLM_SEED_RANDOM;
    g->gp.seed = (uint32_t)v->i;
    break;
  case K_TEMP:
    g->gp.temperature = (float)v->f;
    break;
  case K_TOP_K:
    g->gp.top_k = (uint32_t)v->i;
    break;
  case K_TOP_P:
    g->gp.top_p = (float)v->f;
    break;
  case K_MIN_P:
    g->gp.min_p = (float)v->f;
    break;
  case K_REPEAT_PENALTY:
    g->gp.repeat_penalty = (float)v->f;
    break;
  case K_REPEAT_LAST_N:
    g->gp.repeat_last_n = v->i < 0 ? 256 : (uint32_t)v->i;
    break;
  case K_PRESENCE_PENALTY:
    g->gp.presence_penalty = (float)v->f;
    break;
  case K_FREQUENCY_PENALTY:
    g->gp.frequency_penalty = (float)v->f;
    break;
  case K_STOP:
    if (!v->text[0]) {
      fprintf(stderr, "%s: %s: the stop text is empty\n", ps->prog, v->name);
      return 2;
    }
    g->stop[g->n_stop++] = v->text; /* room for every argument (cli_gen_parse) */
    break;
  case 'l':
    return logit_bias(ps, v);
  case K_IGNORE_EOS:
    g->ignore_eos = 1;
    break;
  case K_STATS:
    g->stats = 1;
    break;
  case K_SPEC_LOOKUP:
    g->spec_lookup = 1;
    break;
  case K_DRAFT_MAX:
    g->draft_max = (uint32_t)v->i;
    break;
  case K_MODEL_DRAFT:
    g->draft_path = v->text;
    break;
  case K_NO_DISPLAY_PROMPT:
    g->no_display_prompt = 1;
    break;
  case K_CNV:
    g->conversation = 1;
    break;
  case K_NO_CNV:
    g->conversation = 0;
    break;
  case K_SYSTEM:
    g->system = v->text;
    ps->system_file = NULL;
    ps->chat_only = 1;
    break;
  case K_SYSTEM_FILE:
    ps->system_file = v->text;
    g->system = NULL;
    ps->chat_only = 1;
    break;
  case K_TEMPLATE:
    g->c.chat_template = v->text;
    ps->chat_only = 1;
    break;
  case K_SINGLE_TURN:
    g->single_turn = 1;
    ps->chat_only = 1;
    break;
  case K_NO_CONTEXT_SHIFT:
    g->no_context_shift = 1;
    break;
  case K_KEEP:
    g->gp.n_keep = (int32_t)v->i;
    break;
  case K_GRAMMAR:
  case K_GRAMMAR_FILE:
  case K_JSON_SCHEMA:
  case K_JSON_SCHEMA_FILE:
    if (g->grammar_opt) {
      fprintf(stderr, "%s: %s and another of --grammar, --grammar-file, -j, -jf both constrain the text; give one\n",
              ps->prog, g->grammar_opt);
      return 2;
    }
    g->grammar_opt = key == K_GRAMMAR        ? "--grammar"
                     : key == K_GRAMMAR_FILE ? "--grammar-file"
                     : key == K_JSON_SCHEMA  ? "-j"
                                             : "-jf";
    g->grammar_kind = key == K_GRAMMAR || key == K_GRAMMAR_FILE ? WGLLM_GRAMMAR_GBNF : WGLLM_GRAMMAR_JSON_SCHEMA;
    g->grammar_text = v->text;
    g->grammar_is_file = key == K_GRAMMAR_FILE || key == K_JSON_SCHEMA_FILE;
    break;
  default:
    return 2;
  }
  return 0;
}

/* FILE as text for -f / -sysf: one final newline dropped (as llama-cli does), NUL bytes refused */
static char *read_text(const char *prog, const char *opt, const char *path) {
  size_t len;
  char *t = cli_read_file(path, &len);
  if (!t) {
    fprintf(stderr, "%s: %s %s: %s\n", prog, opt, path, strerror(errno));
    return NULL;
  }
  if (strlen(t) != len) {
    fprintf(stderr, "%s: %s %s: the file holds a NUL byte\n", prog, opt, path);
    free(t);
    return NULL;
  }
  if (len && t[len - 1] == '\n') t[--len] = 0;
  if (len && t[len - 1] == '\r') t[--len] = 0;
  return t;
}

static uint32_t random_seed(void) {
  uint32_t s;
  if (getrandom(&s, sizeof s, GRND_NONBLOCK) == (ssize_t)sizeof s) return s == WGLLM_SEED_RANDOM ? 0 : s;
  struct timespec t;
  clock_gettime(CLOCK_REALTIME, &t);
  return (uint32_t)(t.tv_nsec ^ t.tv_sec ^ ((uint32_t)getpid() << 16));
}

static void usage(FILE *f, unsigned cmd) {
  if (cmd == CLI_CMD_RUN)
    fprintf(f, "usage: wgllm run -m PATH (-p TEXT | -f FILE | [--] TEXT...) [options]\n"
               "  continues the text and streams the result (the prompt first); -cnv: chat instead\n");
  else
    fprintf(f, "usage: wgllm chat -m PATH [-sys TEXT] [--chat-template NAME] [-p FIRST-MESSAGE] [options]\n"
               "  interactive chat with the model's template. One message a line (a line ending in \\ goes on\n"
               "  on the next), of any length; Ctrl-C stops a reply and returns to the prompt, Ctrl-C at the\n"
               "  prompt or end of input leaves. Commands: /regen, /save FILE, /load FILE (the conversation as\n"
               "  JSON messages), /reset, /help, /quit; //text sends /text.\n");
  fprintf(f, "options (--x=y or --x y, -x y or -xy; -- ends the options; -sys, -sysf, -cnv, -no-cnv, -st, -ub and\n"
             "-ngl are taken with one dash, as llama-cli writes them):\n");
  cli_print_options(f, cmd, gen_tables);
  fprintf(f, "Progress (model load, long prompts) is shown on stderr when it is a terminal.\n");
}

int cli_gen_parse(unsigned cmd, int argc, char **argv, cli_gen *g) {
  memset(g, 0, sizeof *g);
  const char *prog = cmd == CLI_CMD_RUN ? "wgllm run" : "wgllm chat";
  g->gp = wgllm_generate_default_params();
  g->n_predict = g->gp.max_tokens;
  g->stop = malloc(((size_t)argc + 1) * sizeof *g->stop);
  g->bias_ids = malloc(((size_t)argc + 1) * sizeof *g->bias_ids);
  g->bias = malloc(((size_t)argc + 1) * sizeof *g->bias);
  if (!g->stop || !g->bias_ids || !g->bias) {
    fprintf(stderr, "%s: out of memory\n", prog);
    return 1;
  }
  parse_state ps = {g, prog, NULL, NULL, 0, 0};
  char **ops;
  int n_ops;
  int rc = cli_parse(prog, cmd, gen_tables, argc, argv, on_opt, &ps, &ops, &n_ops);
  if (rc) return rc;
  if (g->c.help) {
    free(ops);
    usage(stdout, cmd);
    return -1;
  }
  if (cmd == CLI_CMD_CHAT) g->conversation = 1;
  if (n_ops && g->conversation) {
    fprintf(stderr, "%s: unexpected argument '%s' (a first message is -p TEXT)\n", prog, ops[0]);
    free(ops);
    return 2;
  }
  if (n_ops) { /* run's operands are the prompt, joined by spaces */
    size_t len = 1;
    for (int i = 0; i < n_ops; i++)
      len += strlen(ops[i]) + 1;
    char *p = g->owned[0] = malloc(len);
    if (!p) {
      free(ops);
      return 1;
    }
    p[0] = 0;
    for (int i = 0; i < n_ops; i++) {
      if (i) strcat(p, " ");
      strcat(p, ops[i]);
    }
    g->prompt = p;
    ps.n_prompts++;
  }
  free(ops);
  if (ps.n_prompts > 1) {
    fprintf(stderr, "%s: give the prompt once: -p TEXT, -f FILE or the text as arguments\n", prog);
    return 2;
  }
  if (ps.chat_only && !g->conversation) {
    fprintf(stderr, "%s: -sys, -sysf, --chat-template and -st are options of chat (wgllm chat, or run -cnv)\n", prog);
    return 2;
  }
  if (ps.file && !(g->prompt = g->owned[1] = read_text(prog, "-f", ps.file))) return 2;
  if (ps.system_file && !(g->system = g->owned[2] = read_text(prog, "-sysf", ps.system_file))) return 2;
  if (g->grammar_is_file && !(g->grammar_text = g->owned[3] = read_text(prog, g->grammar_opt, g->grammar_text)))
    return 2;
  if (!g->c.model) {
    fprintf(stderr, "%s: -m PATH is required (see --help)\n", prog);
    return 2;
  }
  /* the library's default seed is random; drawn here so that -v can print it and chat's /regen can step it */
  if (g->gp.seed == WGLLM_SEED_RANDOM) g->gp.seed = random_seed();
  g->gp.stop = g->stop;
  g->gp.n_stop = g->n_stop;
  g->gp.ignore_eos = g->ignore_eos;
  g->gp.logit_bias_ids = g->bias_ids;
  g->gp.logit_bias = g->bias;
  g->gp.n_logit_bias = g->n_bias;
  if (g->draft_max && !g->spec_lookup && !g->draft_path) {
    fprintf(stderr, "%s: --draft-max sets the drafts of --spec-lookup or -md, neither of which is given\n", prog);
    return 2;
  }
  g->gp.spec_lookup = g->spec_lookup ? (g->draft_max ? g->draft_max : 7) : 0;
  g->gp.draft_max = g->draft_max; /* the draft model's (0: 7), set by cli_gen_open_draft */
  return 0;
}

int cli_gen_open_draft(cli_gen *g, wgllm_model *m) {
  wgllm_model_info info;
  wgllm_model_get_info(m, &info);
  for (size_t i = 0; i < g->n_bias; i++) /* said before any text */
    if ((uint32_t)g->bias_ids[i] >= info.n_vocab) {
      fprintf(stderr, "wgllm: --logit-bias: token %d is outside the vocabulary of %u tokens\n", g->bias_ids[i],
              info.n_vocab);
      return 2;
    }
  if (g->grammar_text) { /* compiled for m's vocabulary, before any text; a JSON schema of {} is any object */
    int any = g->grammar_kind == WGLLM_GRAMMAR_JSON_SCHEMA && !strcmp(g->grammar_text, "{}");
    wgllm_grammar_kind kind = any ? WGLLM_GRAMMAR_JSON_OBJECT : (wgllm_grammar_kind)g->grammar_kind;
    if (wgllm_grammar_create(m, kind, g->grammar_text, strlen(g->grammar_text), &g->grammar)) {
      fprintf(stderr, "wgllm: %s: %s\n", g->grammar_opt, wgllm_last_error());
      return 2;
    }
    g->gp.grammar = g->grammar;
  }
  if ((g->draft_path || g->spec_lookup) && wgllm_model_can_speculate(m)) { /* said before any text */
    fprintf(stderr, "wgllm: %s: %s\n", g->draft_path ? "-md" : "--spec-lookup", wgllm_model_error(m));
    return 2;
  }
  if (!g->draft_path) return 0;
  int rc = cli_open_draft(&g->c, g->draft_path, m, &g->draft);
  g->gp.draft_model = g->draft;
  return rc;
}

void cli_gen_free(cli_gen *g) {
  wgllm_grammar_free(g->grammar); /* before the model it was made for */
  wgllm_model_free(g->draft);     /* after the sessions, which hold sessions of it */
  free(g->stop);
  free(g->bias_ids);
  free(g->bias);
  for (int i = 0; i < 4; i++)
    free(g->owned[i]);
}

void cli_print_stats(const wgllm_generate_stats *st, const char *adapter) {
  fprintf(stderr, "[%u prompt tokens (%u cached) in %.3f s, %u generated in %.3f s (%.1f tok/s), stop: %s%s%s]\n",
          st->prompt_tokens, st->cached_tokens, st->prefill_seconds, st->generated_tokens, st->decode_seconds,
          st->decode_seconds > 0 ? st->generated_tokens / st->decode_seconds : 0.0, st->stop_reason,
          adapter ? ", on " : "", adapter ? adapter : "");
  if (st->context_shifts)
    fprintf(stderr, "[context shifted %u time%s to go past the context]\n", st->context_shifts,
            st->context_shifts == 1 ? "" : "s");
  if (st->spec_steps)
    fprintf(stderr, "[speculation: %u verify steps, %u of %u drafts accepted (%.1f%%), %.2f tokens a step]\n",
            st->spec_steps, st->spec_accepted, st->spec_drafted,
            st->spec_drafted ? 100.0 * st->spec_accepted / st->spec_drafted : 0.0,
            (double)(st->spec_accepted + st->spec_steps) / st->spec_steps);
}

/* A reply past the context shifts it (llama-cli's --context-shift) unless --no-context-shift, or -n -1, which asks
   for a reply up to the context's end. */
int cli_context_shift(const cli_gen *g) { return !g->no_context_shift && g->n_predict >= 0; }

volatile sig_atomic_t cli_busy;

static void on_sigint(int sig) {
  (void)sig;
  if (!cli_busy || cli_interrupted) { /* chat between replies, or a second Ctrl-C: leave now */
    static const char nl[] = "\n";
    ssize_t w = write(2, nl, 1);
    (void)w;
    _exit(130);
  }
  cli_interrupted = 1; /* the reply (or the load) in progress stops; the program goes on */
}

void cli_catch_sigint(void) {
  cli_busy = 1;
  struct sigaction sa;
  memset(&sa, 0, sizeof sa);
  sa.sa_handler = on_sigint;
  sigemptyset(&sa.sa_mask);
  sa.sa_flags = SA_RESTART; /* the handler does all: it sets a flag or ends the program */
  sigaction(SIGINT, &sa, NULL);
}

typedef struct run_out {
  const char *prompt;
  int echoed, display;
} run_out;

/* the prompt goes out with the first text, after the prefill's progress line is gone */
static void echo_prompt(run_out *o) {
  if (o->echoed) return;
  o->echoed = 1;
  if (o->display) fputs(o->prompt, stdout);
}

static int stream_out(const char *text, size_t len, void *user) {
  run_out *o = user;
  echo_prompt(o);
  fwrite(text, 1, len, stdout);
  fflush(stdout);
  return cli_interrupted != 0;
}

void cli_verbose_sampling(const cli_gen *g) {
  const wgllm_generate_params *p = &g->gp;
  fprintf(stderr,
          "wgllm: seed %u%s; temp %g, top-k %u, top-p %g, min-p %g, repeat-penalty %g (last %u), presence-penalty "
          "%g, frequency-penalty %g; up to %u tokens, %zu stop strings\n",
          p->seed, g->seed_given ? "" : " (random)", p->temperature, p->top_k, p->top_p, p->min_p, p->repeat_penalty,
          p->repeat_last_n, p->presence_penalty, p->frequency_penalty, p->max_tokens, g->n_stop);
}

int cli_run(int argc, char **argv) {
  cli_gen g;
  int rc = cli_gen_parse(CLI_CMD_RUN, argc, argv, &g);
  if (rc) {
    cli_gen_free(&g);
    return rc < 0 ? 0 : rc;
  }
  if (g.conversation) {
    rc = cli_chat_main(&g);
    cli_gen_free(&g);
    return rc;
  }
  if (!g.prompt) {
    fprintf(stderr, "wgllm run: -p TEXT is required (or -f FILE, or the text as arguments)\n");
    cli_gen_free(&g);
    return 2;
  }
  if (!g.prompt[0]) {
    fprintf(stderr, "wgllm run: the prompt is empty\n");
    cli_gen_free(&g);
    return 2;
  }
  long bad = cli_utf8_invalid_at(g.prompt);
  if (bad >= 0) { /* refused before anything is echoed */
    fprintf(stderr, "wgllm run: the prompt is not valid UTF-8 (byte %ld)\n", bad);
    cli_gen_free(&g);
    return 2;
  }
  cli_catch_sigint();
  wgllm_model *m;
  wgllm_session *s;
  uint32_t ctx;
  rc = cli_open(&g.c, 0, &m, &s, &ctx, 0);
  if (!rc && (rc = cli_gen_open_draft(&g, m))) {
    wgllm_session_free(s);
    wgllm_model_free(m);
  }
  if (rc) {
    cli_gen_free(&g);
    return rc;
  }
  g.gp.context_shift = cli_context_shift(&g); /* then -n may go past the context */
  g.gp.max_tokens = g.n_predict < 0 || (g.n_predict > ctx && !g.gp.context_shift) ? ctx : (uint32_t)g.n_predict;
  if (g.c.verbose) cli_verbose_sampling(&g);
  run_out out = {g.prompt, 0, !g.no_display_prompt};
  g.gp.on_text = stream_out;
  g.gp.user = &out;
  if (isatty(2)) { /* the prompt's size, for the progress line of a long one */
    size_t n = 0;
    wgllm_tokenize(m, g.prompt, strlen(g.prompt), 1, NULL, 0, &n);
    cli_prefill_begin((uint32_t)n);
  }
  wgllm_generate_stats st;
  wgllm_status r = wgllm_generate(s, g.prompt, &g.gp, &st);
  if (!r) echo_prompt(&out);
  if (out.echoed) fputc('\n', stdout);
  fflush(stdout);
  if (r)
    fprintf(stderr, "wgllm run: %s (%s)\n", wgllm_session_error(s), wgllm_status_name(r));
  else if (g.stats) {
    wgllm_model_info info;
    wgllm_model_get_info(m, &info);
    cli_print_stats(&st, info.adapter);
  }
  int interrupted = !r && cli_interrupted && st.stop == WGLLM_STOP_CALLBACK;
  if (interrupted) fprintf(stderr, "wgllm run: interrupted\n");
  wgllm_session_free(s);
  wgllm_model_free(m);
  cli_gen_free(&g);
  return r ? 1 : interrupted ? 130 : 0;
}
