/* The one option parser of the command-line programs (wgllm's commands, wgllm serve, wgllm-bench): getopt_long
   over tables of options, values checked against their type and range, the options every model command shares,
   and the parsing of option values (--weights, id lists). */
#include "cli_options.h"
#include <errno.h>
#include <getopt.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---------- the option parser ---------- */
enum { SPELL_BASE = 0x10000 }; /* getopt_long's val for long spelling i: SPELL_BASE + i */

typedef struct spelling {
  const cli_opt *opt;
  const char *name; /* without dashes, NUL-terminated copy */
  int dashes;       /* 1: "-sys" (also taken as "--sys"), 2: "--ctx-size" */
} spelling;

typedef struct opt_set {
  const cli_opt *shorts[128]; /* by letter */
  spelling *sp;
  size_t n_sp;
} opt_set;

static void set_free(opt_set *s) {
  for (size_t i = 0; i < s->n_sp; i++)
    free((void *)s->sp[i].name);
  free(s->sp);
}

/* The options of cmd in the tables, by letter and by long spelling; returns 0 or -1 (out of memory). */
static int set_build(opt_set *s, unsigned cmd, const cli_opt *const *tables) {
  memset(s, 0, sizeof *s);
  size_t cap = 0;
  for (const cli_opt *const *t = tables; *t; t++)
    for (const cli_opt *o = *t; o->names; o++) {
      if (!(o->cmds & cmd)) continue;
      for (const char *p = o->names; *p;) {
        size_t len = strcspn(p, " ");
        if (len == 2 && p[0] == '-' && p[1] != '-') {
          s->shorts[(unsigned char)p[1] & 127] = o;
        } else if (len > 1 && p[0] == '-') {
          int dashes = p[1] == '-' ? 2 : 1;
          if (s->n_sp == cap) {
            cap = cap ? 2 * cap : 64;
            spelling *g = realloc(s->sp, cap * sizeof *g);
            if (!g) return -1;
            s->sp = g;
          }
          char *name = strndup(p + dashes, len - (size_t)dashes);
          if (!name) return -1;
          s->sp[s->n_sp++] = (spelling){o, name, dashes};
        }
        p += len;
        while (*p == ' ')
          p++;
      }
    }
  return 0;
}

/* The option a "--name[=v]" argument names, as getopt_long matches it (exact, else a unique prefix); NULL when
   none or several (*n_match says how many). */
static const spelling *match_long(const opt_set *s, const char *arg, size_t *n_match) {
  size_t len = strcspn(arg, "=");
  const spelling *hit = NULL;
  *n_match = 0;
  for (size_t i = 0; i < s->n_sp; i++) {
    if (strncmp(s->sp[i].name, arg, len)) continue;
    if (strlen(s->sp[i].name) == len) { /* exact */
      *n_match = 1;
      return &s->sp[i];
    }
    if (!hit || hit->opt != s->sp[i].opt) (*n_match)++;
    hit = &s->sp[i];
  }
  return *n_match == 1 ? hit : NULL;
}

static int takes_value(const cli_opt *o) { return o->type != CLI_FLAG; }

/* Copies argv, writing llama.cpp's single-dash long names as "--name" (an argument exactly "-sys", not one that
   is an option's value); returns NULL when out of memory. The mapped strings are allocated in *owned. */
static char **premap(const opt_set *s, int argc, char **argv, char ***owned, int *n_owned) {
  char **a = malloc(((size_t)argc + 1) * sizeof *a);
  *owned = calloc((size_t)argc + 1, sizeof **owned);
  *n_owned = 0;
  if (!a || !*owned) {
    free(a);
    free(*owned);
    return NULL;
  }
  memcpy(a, argv, (size_t)argc * sizeof *a);
  a[argc] = NULL;
  for (int i = 1; i < argc; i++) {
    const char *x = a[i];
    if (!strcmp(x, "--")) break;
    if (x[0] != '-' || !x[1]) continue; /* an operand, or "-" */
    if (x[1] == '-') {                  /* --name or --name=value */
      size_t nm;
      const spelling *sp = match_long(s, x + 2, &nm);
      if (sp && takes_value(sp->opt) && !strchr(x, '=')) i++;
      continue;
    }
    const spelling *one = NULL; /* "-sys" or "-sys=TEXT" */
    size_t nlen = strcspn(x + 1, "=");
    for (size_t k = 0; k < s->n_sp && !one; k++)
      if (s->sp[k].dashes == 1 && strlen(s->sp[k].name) == nlen && !strncmp(s->sp[k].name, x + 1, nlen))
        one = &s->sp[k];
    if (one) {
      char *m = malloc(strlen(x) + 2);
      if (!m) {
        free(a);
        return NULL;
      }
      m[0] = '-';
      strcpy(m + 1, x);
      a[i] = (*owned)[(*n_owned)++] = m;
      if (takes_value(one->opt) && !x[1 + nlen]) i++;
      continue;
    }
    for (const char *c = x + 1; *c; c++) { /* a cluster of letters: -vn 5, -n5 */
      const cli_opt *o = s->shorts[(unsigned char)*c & 127];
      if (!o) break;
      if (takes_value(o)) {
        if (!c[1]) i++;
        break;
      }
    }
  }
  return a;
}

static void print_range(FILE *f, const cli_opt *o) {
  if (o->type == CLI_INT) {
    if (isinf(o->hi))
      fprintf(f, " [>= %.0f]", o->lo);
    else
      fprintf(f, " [%.0f..%.0f]", o->lo, o->hi);
  } else if (o->type == CLI_FLOAT) {
    if (isinf(o->hi))
      fprintf(f, o->lo_open ? " [> %g]" : " [>= %g]", o->lo);
    else
      fprintf(f, o->lo_open ? " [> %g, <= %g]" : " [%g..%g]", o->lo, o->hi);
  }
}

/* Checks and converts a value; prints what is wrong and returns 2, or 0. */
static int convert(const char *prog, const cli_opt *o, const char *name, const char *text, cli_value *v) {
  v->text = text;
  char *end = NULL;
  errno = 0;
  switch (o->type) {
  case CLI_FLAG:
  case CLI_TEXT:
    return 0;
  case CLI_INT: {
    long long x =
        *text && (text[0] == '-' || text[0] == '+' || (text[0] >= '0' && text[0] <= '9')) ? strtoll(text, &end, 10) : 0;
    if (!end || end == text || *end || errno || (double)x < o->lo || (double)x > o->hi) {
      if (isinf(o->hi))
        fprintf(stderr, "%s: %s %s: expected a whole number of at least %.0f\n", prog, name, text, o->lo);
      else
        fprintf(stderr, "%s: %s %s: expected a whole number from %.0f to %.0f\n", prog, name, text, o->lo, o->hi);
      return 2;
    }
    v->i = x;
    return 0;
  }
  case CLI_FLOAT: {
    double x = *text && !strchr(" \t\n", text[0]) ? strtod(text, &end) : 0;
    if (!end || end == text || *end || !isfinite(x) || x < o->lo || (o->lo_open && x == o->lo) || x > o->hi) {
      fprintf(stderr, "%s: %s %s: expected a number", prog, name, text);
      if (isinf(o->hi))
        fprintf(stderr, o->lo_open ? " greater than %g\n" : " of at least %g\n", o->lo);
      else
        fprintf(stderr, o->lo_open ? " greater than %g and at most %g\n" : " from %g to %g\n", o->lo, o->hi);
      return 2;
    }
    v->f = x;
    return 0;
  }
  case CLI_CHOICE: {
    int k = 0;
    for (const char *p = o->meta; *p; k++) {
      size_t len = strcspn(p, "|");
      if (strlen(text) == len && !strncmp(p, text, len)) {
        v->choice = k;
        return 0;
      }
      p += len;
      if (*p) p++;
    }
    fprintf(stderr, "%s: %s %s: expected one of %s\n", prog, name, text, o->meta);
    return 2;
  }
  }
  return 2;
}

/* "unknown option '--to' (did you mean --top-k, --top-p?)": long names are taken whole, not abbreviated */
static void unknown_long(const char *prog, const opt_set *s, const char *arg) {
  const char *name = arg + strspn(arg, "-");
  size_t len = strcspn(name, "=");
  fprintf(stderr, "%s: unknown option '--%.*s'", prog, (int)len, name);
  const cli_opt *prev = NULL;
  size_t k = 0;
  for (size_t i = 0; i < s->n_sp && len; i++)
    if (!strncmp(s->sp[i].name, name, len) && s->sp[i].opt != prev) {
      fprintf(stderr, "%s--%s", k++ ? ", " : " (did you mean ", s->sp[i].name);
      prev = s->sp[i].opt;
    }
  fprintf(stderr, k ? "?)\n" : " (see %s --help)\n", prog);
}

/* Says why getopt_long refused argument `arg` (optopt: its val, 0 for an unknown long name). */
static void refused(const char *prog, const opt_set *s, const char *arg, int optopt_v) {
  if (optopt_v >= SPELL_BASE && (size_t)(optopt_v - SPELL_BASE) < s->n_sp) {
    fprintf(stderr, "%s: --%s takes no value (see %s --help)\n", prog, s->sp[optopt_v - SPELL_BASE].name, prog);
    return;
  }
  if (optopt_v > 0 && optopt_v < 128) {
    fprintf(stderr, "%s: unknown option '-%c' (see %s --help)\n", prog, optopt_v, prog);
    return;
  }
  unknown_long(prog, s, arg ? arg : "?");
}

/* The rewritten arguments ("-sys=TEXT" becomes "--sys=TEXT") hold the values the option callbacks keep (optarg
   points into them), so they live until the program ends. */
static char **g_kept;
static int g_n_kept;
static void free_kept(void) {
  for (int i = 0; i < g_n_kept; i++)
    free(g_kept[i]);
  free(g_kept);
  g_kept = NULL;
  g_n_kept = 0;
}
static void keep_strings(char **owned, int n) {
  if (!n) return;
  char **k = realloc(g_kept, (size_t)(g_n_kept + n) * sizeof *k);
  if (!k) return; /* then they are freed by the caller: only an out-of-memory run gets here */
  if (!g_kept) atexit(free_kept);
  g_kept = k;
  for (int i = 0; i < n; i++) {
    g_kept[g_n_kept++] = owned[i];
    owned[i] = NULL;
  }
}

int cli_parse(const char *prog, unsigned cmd, const cli_opt *const *tables, int argc, char **argv, cli_opt_fn fn,
              void *user, char ***operands, int *n_operands) {
  *operands = NULL;
  *n_operands = 0;
  opt_set s;
  char **owned = NULL, **a = NULL;
  int n_owned = 0, rc = 0;
  struct option *lo = NULL;
  char shortstr[3 * 128 + 2];
  if (set_build(&s, cmd, tables) || !(a = premap(&s, argc, argv, &owned, &n_owned)) ||
      !(lo = calloc(s.n_sp + 1, sizeof *lo)) || !(*operands = calloc((size_t)argc + 1, sizeof **operands))) {
    fprintf(stderr, "%s: out of memory\n", prog);
    rc = 1;
    goto done;
  }
  for (size_t i = 0; i < s.n_sp; i++)
    lo[i] = (struct option){s.sp[i].name, takes_value(s.sp[i].opt) ? required_argument : no_argument, NULL,
                            SPELL_BASE + (int)i};
  size_t k = 0;
  shortstr[k++] = ':'; /* a missing value is ':', not '?' */
  for (int c = 1; c < 128; c++)
    if (s.shorts[c]) {
      shortstr[k++] = (char)c;
      if (takes_value(s.shorts[c])) shortstr[k++] = ':';
    }
  shortstr[k] = 0;
  opterr = 0;
  optind = 0; /* glibc: start afresh */
  for (;;) {
    int c = getopt_long(argc, a, shortstr, lo, NULL);
    if (c == -1) break;
    const cli_opt *o = NULL;
    char name[96];
    if (c == '?') {
      refused(prog, &s, optind > 0 && optind <= argc ? a[optind - 1] : NULL, optopt);
      rc = 2;
      break;
    }
    if (c == ':') {
      if (optopt >= SPELL_BASE)
        fprintf(stderr, "%s: --%s needs a value (see %s --help)\n", prog, s.sp[optopt - SPELL_BASE].name, prog);
      else
        fprintf(stderr, "%s: -%c needs a value (see %s --help)\n", prog, optopt, prog);
      rc = 2;
      break;
    }
    if (c >= SPELL_BASE) {
      const spelling *sp = &s.sp[c - SPELL_BASE];
      o = sp->opt;
      /* getopt_long also takes unambiguous prefixes ("--prompt" for --prompt-ids): refused, names are whole */
      const char *given = takes_value(o) && optind >= 2 && optarg == a[optind - 1] ? a[optind - 2] : a[optind - 1];
      const char *gname = given + strspn(given, "-");
      if (strcspn(gname, "=") != strlen(sp->name)) {
        unknown_long(prog, &s, given);
        rc = 2;
        break;
      }
      snprintf(name, sizeof name, "%s%s", sp->dashes == 1 ? "-" : "--", sp->name);
    } else {
      o = s.shorts[c & 127];
      snprintf(name, sizeof name, "-%c", c);
    }
    cli_value v = {0};
    v.name = name;
    rc = convert(prog, o, name, takes_value(o) ? optarg : NULL, &v);
    if (!rc) rc = fn(user, o->key, &v);
    if (rc) break;
  }
  if (!rc)
    for (int i = optind; i < argc; i++)
      (*operands)[(*n_operands)++] = a[i];
done:
  if (rc) {
    free(*operands);
    *operands = NULL;
    *n_operands = 0;
  }
  keep_strings(owned, n_owned);
  for (int i = 0; i < n_owned; i++)
    free(owned[i]);
  free(owned);
  free(a);
  free(lo);
  set_free(&s);
  return rc;
}

void cli_print_options(FILE *f, unsigned cmd, const cli_opt *const *tables) {
  for (const cli_opt *const *t = tables; *t; t++)
    for (const cli_opt *o = *t; o->names; o++) {
      if (!(o->cmds & cmd)) continue;
      char col[160];
      size_t n = 0;
      n += (size_t)snprintf(col + n, sizeof col - n, "  ");
      for (const char *p = o->names; *p;) {
        size_t len = strcspn(p, " ");
        n += (size_t)snprintf(col + n, sizeof col - n, "%s%.*s", p == o->names ? "" : ", ", (int)len, p);
        p += len;
        while (*p == ' ')
          p++;
      }
      if (o->meta) snprintf(col + n, sizeof col - n, " %s", o->meta);
      if (strlen(col) <= 29)
        fprintf(f, "%-30s%s", col, o->help);
      else
        fprintf(f, "%s\n%-30s%s", col, "", o->help);
      print_range(f, o);
      fputc('\n', f);
    }
}

/* ---------- the model and session options ---------- */
enum {
  K_WEIGHTS = 256,
  K_KV,
  K_UBATCH,
  K_ADAPTER,
  K_NO_F16,
  K_UNFUSED,
  K_ATTN_GRID,
  K_MAX_BINDING,
  K_TOGGLES,
  K_NGL,
  K_NO_BATCH,
  K_PRECISION,
  K_FLASH_ATTN,
  K_HF,
  K_JINJA,
  K_TEMPLATE_FILE
};

const cli_opt cli_common_opts[] = {
    {'m', "-m --model", CLI_TEXT, "PATH", 0, 0, 0, CLI_CMD_ALL, "a Hugging Face directory or a .gguf file"},
    {'c', "-c --ctx-size --ctx", CLI_INT, "N", 0, 1 << 24, 0, CLI_CMD_GEN,
     "context in tokens (default 0: the model's trained length, at most 4096; -c N for more)"},
    {'c', "-c --ctx-size --ctx", CLI_INT, "N", 0, 1 << 24, 0, CLI_CMD_LOGITS, "context in tokens (default 0: 4096)"},
    {'c', "-c --ctx-size --ctx", CLI_INT, "N", 0, 1 << 24, 0, CLI_CMD_BENCH,
     "context in tokens (default 0: the prompt + the tokens generated + 8)"},
    {'c', "-c --ctx-size --ctx", CLI_INT, "N", 0, 1 << 24, 0, CLI_CMD_SERVE,
     "context of each session in tokens (default 0: the trained length, at most 4096)"},
    {'c', "-c --ctx-size --ctx", CLI_INT, "N", 4, 1 << 24, 0, CLI_CMD_PERPLEXITY,
     "tokens a chunk (default 512, as llama-perplexity; at most the trained length)"},
    {'c', "-c --ctx-size --ctx", CLI_INT, "N", 0, 1 << 24, 0, CLI_CMD_EMBED,
     "context in tokens, the longest input (default 0: the model's trained length, at most 4096)"},
    {K_KV, "--kv", CLI_CHOICE, "f32|f16", 0, 0, 0, CLI_CMD_MODEL, "KV cache storage (default f32)"},
    {K_WEIGHTS, "--weights", CLI_TEXT, "native|q4[:G]", 0, 0, 0, CLI_CMD_MODEL,
     "as the file has them (default), or q4gsw made on load (G: 32, 64, 128)"},
    {K_UBATCH, "-ub --ubatch-size --prefill-chunk", CLI_INT, "N", 1, 65535, 0, CLI_CMD_MODEL,
     "tokens a prefill pass (default 1024, 512 with sliding windows, fewer where the device needs)"},
    {K_ADAPTER, "--adapter", CLI_TEXT, "NAME", 0, 0, 0, CLI_CMD_MODEL | CLI_CMD_INFO,
     "the GPU whose name has NAME in it (default: WGLLM_ADAPTER, or the best)"},
    {K_NO_F16, "--no-f16", CLI_FLAG, NULL, 0, 0, 0, CLI_CMD_MODEL | CLI_CMD_INFO,
     "do not request shader-f16 (as on a device without it)"},
    {K_UNFUSED, "--unfused", CLI_FLAG, NULL, 0, 0, 0, CLI_CMD_MODEL,
     "decode through the plain per-op path (for comparisons)"},
    {K_ATTN_GRID, "--attn-grid", CLI_CHOICE, "worst|indirect", 0, 0, 0, CLI_CMD_MODEL,
     "flash-decoding grid (default worst; for comparisons)"},
    {K_PRECISION, "--precision", CLI_CHOICE, "exact|fast|default", 0, 0, 0, CLI_CMD_SESSION,
     "linear layers of quantized weights: f32 activations, int8 ones, or the library's choice (default)"},
    {K_MAX_BINDING, "--max-binding", CLI_INT, "BYTES", 1024, INFINITY, 0, CLI_CMD_MODEL,
     "split weights over BYTES, as a small device would (default: its limit)"},
    {K_TOGGLES, "--dawn-toggles", CLI_TEXT, "A,B", 0, 0, 0, CLI_CMD_BENCH, "Dawn device toggles (measurements)"},
    {K_NO_BATCH, "--no-batch", CLI_FLAG, NULL, 0, 0, 0, CLI_CMD_SERVE,
     "decode the running requests one after another, not in one batched pass (comparisons)"},
    {'t', "-t --threads", CLI_INT, "N", -1, 1 << 20, 0, CLI_CMD_GEN | CLI_CMD_PERPLEXITY,
     "accepted for llama.cpp compatibility, ignored (all runs on the GPU)"},
    {K_NGL, "-ngl --n-gpu-layers --gpu-layers", CLI_INT, "N", -1, 1 << 20, 0, CLI_CMD_GEN | CLI_CMD_PERPLEXITY,
     "accepted for llama.cpp compatibility, ignored (all layers on the GPU)"},
    {K_FLASH_ATTN, "-fa --flash-attn", CLI_CHOICE, "on|off|auto", 0, 0, 0, CLI_CMD_MODEL,
     "accepted for llama.cpp compatibility, ignored (attention is always the fused flash kernels)"},
    {K_HF, "-hf -hfr --hf-repo", CLI_TEXT, "REPO", 0, 0, 0, CLI_CMD_MODEL,
     "refused: wgllm does not download models; pass the downloaded file or directory with -m"},
    {K_JINJA, "--jinja", CLI_FLAG, NULL, 0, 0, 0, CLI_CMD_GEN | CLI_CMD_SERVE,
     "accepted for llama.cpp compatibility (the model's Jinja chat template always runs)"},
    {K_TEMPLATE_FILE, "--chat-template-file", CLI_TEXT, "FILE", 0, 0, 0, CLI_CMD_GEN | CLI_CMD_SERVE,
     "a Jinja chat template to run instead of the model's (as tokenizer_config.json's chat_template)"},
    {'v', "-v --verbose", CLI_FLAG, NULL, 0, 0, 0, CLI_CMD_ALL,
     "more on stderr: the model, the GPU, the context, the seed"},
    {'h', "-h --help", CLI_FLAG, NULL, 0, 0, 0, CLI_CMD_ALL, "this help"},
    {0, NULL, 0, NULL, 0, 0, 0, 0, NULL}};

int cli_common_set(cli_common *c, int key, const cli_value *v) {
  switch (key) {
  case 'm':
    c->model = v->text;
    return 0;
  case 'c':
    c->ctx = (uint32_t)v->i;
    return 0;
  case K_KV:
    c->kv_f16 = v->choice == 1;
    return 0;
  case K_WEIGHTS: {
    wgllm_model_params mp = wgllm_model_default_params();
    if (cli_parse_weights(v->text, &mp)) return 2; /* refused here, before a model loads */
    c->weights = v->text;
    return 0;
  }
  case K_UBATCH:
    c->prefill_chunk = (uint32_t)v->i;
    return 0;
  case K_ADAPTER:
    c->adapter = v->text;
    return 0;
  case K_NO_F16:
    c->no_f16 = 1;
    return 0;
  case K_UNFUSED:
    c->unfused = 1;
    return 0;
  case K_ATTN_GRID:
    c->attn_grid = v->choice;
    return 0;
  case K_MAX_BINDING:
    c->max_binding = (uint64_t)v->i;
    return 0;
  case K_TOGGLES:
    c->toggles = v->text;
    return 0;
  case K_NO_BATCH:
    c->no_batch = 1;
    return 0;
  case K_PRECISION: { /* in the order of the option's choices */
    static const wgllm_precision by_choice[] = {WGLLM_PRECISION_EXACT, WGLLM_PRECISION_FAST, WGLLM_PRECISION_DEFAULT};
    c->precision = by_choice[v->choice];
    return 0;
  }
  case K_HF:
    fprintf(stderr,
            "wgllm: %s %s: wgllm does not download models; download the file (a .gguf, or a Hugging Face directory "
            "with config.json, *.safetensors and tokenizer.json) and pass it with -m PATH\n",
            v->name, v->text);
    return 2;
  case K_JINJA:
    return 0;
  case K_TEMPLATE_FILE:
    c->chat_template_file = v->text;
    return 0;
  case 't':
  case K_NGL:
  case K_FLASH_ATTN:
    if (c->n_ignored < 4) snprintf(c->ignored[c->n_ignored++], sizeof c->ignored[0], "%s %s", v->name, v->text);
    return 0;
  case 'v':
    c->verbose = 1;
    return 0;
  case 'h':
    c->help = 1;
    return 0;
  }
  return 1;
}

/* ---------- option values ---------- */
int cli_parse_ids(const char *s, int32_t **out, uint32_t *n) {
  *out = NULL;
  *n = 0;
  size_t cap = 16, cnt = 0;
  int32_t *v = malloc(cap * sizeof *v);
  if (!v) return -1;
  const char *p = s;
  while (*p) {
    char *end;
    errno = 0;
    long x = strtol(p, &end, 10);
    if (end == p || errno || x < 0 || x > 0x7fffffff || (*end && *end != ',')) {
      free(v);
      return -1;
    }
    if (cnt == cap) {
      cap *= 2;
      int32_t *nv = realloc(v, cap * sizeof *nv);
      if (!nv) {
        free(v);
        return -1;
      }
      v = nv;
    }
    v[cnt++] = (int32_t)x;
    p = *end ? end + 1 : end;
  }
  *out = v;
  *n = (uint32_t)cnt;
  return 0;
}

int cli_parse_weights(const char *s, wgllm_model_params *mp) {
  if (!s || !strcmp(s, "native")) {
    mp->weights = WGLLM_WEIGHTS_NATIVE;
    return 0;
  }
  if (!strncmp(s, "q4", 2) && (s[2] == 0 || s[2] == ':')) {
    mp->weights = WGLLM_WEIGHTS_Q4;
    mp->q4_group = 32;
    if (s[2] == ':') {
      char *end;
      long g = strtol(s + 3, &end, 10);
      if (*end || (g != 32 && g != 64 && g != 128)) {
        fprintf(stderr, "wgllm: --weights %s: the q4 group must be 32, 64 or 128\n", s);
        return 1;
      }
      mp->q4_group = (uint32_t)g;
    }
    return 0;
  }
  fprintf(stderr, "wgllm: --weights %s: expected native, q4 or q4:GROUP\n", s);
  return 1;
}
