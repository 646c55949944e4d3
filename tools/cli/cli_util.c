/* Small helpers shared by CLI subcommands: id-list parsing, the common options, and opening a model and a
   session through the public API with readable errors. */
#include "cli.h"
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

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

/* "prompt: 1024/4096 tokens" on stderr while a prompt longer than one prefill pass is evaluated */
static void show_prefill(uint32_t done, uint32_t total, void *user) {
  static int shown; /* a line is open (the CLI evaluates one prompt at a time) */
  (void)user;
  if (done == total && !shown) return; /* one pass: nothing to watch */
  fprintf(stderr, "\rprompt: %u/%u tokens%s", done, total, done == total ? "\n" : "");
  fflush(stderr);
  shown = done != total;
}

long cli_utf8_invalid_at(const char *s) {
  const unsigned char *p = (const unsigned char *)s;
  for (long i = 0; p[i];) {
    unsigned c = p[i], n = c < 0x80 ? 0 : (c & 0xE0) == 0xC0 ? 1 : (c & 0xF0) == 0xE0 ? 2 : (c & 0xF8) == 0xF0 ? 3 : 9;
    if (n == 9) return i;
    uint32_t cp = n == 0 ? c : n == 1 ? c & 0x1F : n == 2 ? c & 0x0F : c & 0x07;
    for (unsigned k = 1; k <= n; k++) {
      if ((p[i + k] & 0xC0) != 0x80) return i; /* also the terminating NUL: cut short */
      cp = cp << 6 | (p[i + k] & 0x3F);
    }
    static const uint32_t min[] = {0, 0x80, 0x800, 0x10000};
    if (cp < min[n] || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) return i;
    i += (long)n + 1;
  }
  return -1;
}

/* Parses an option shared by the model commands; returns 1 if consumed (advancing *i), 0 if not, -1 on error. */
int cli_common_arg(cli_common *c, int argc, char **argv, int *i) {
  const char *a = argv[*i];
  int has_val = *i + 1 < argc;
  if (!strcmp(a, "-m") || !strcmp(a, "--model")) {
    if (!has_val) goto missing;
    c->model = argv[++*i];
    return 1;
  }
  if (!strcmp(a, "--weights")) {
    if (!has_val) goto missing;
    c->weights = argv[++*i];
    return 1;
  }
  if (!strcmp(a, "--kv")) {
    if (!has_val) goto missing;
    const char *v = argv[++*i];
    if (!strcmp(v, "f16"))
      c->kv_f16 = 1;
    else if (!strcmp(v, "f32"))
      c->kv_f16 = 0;
    else {
      fprintf(stderr, "wgllm: --kv %s: expected f32 or f16\n", v);
      return -1;
    }
    return 1;
  }
  if (!strcmp(a, "--ctx")) {
    if (!has_val) goto missing;
    char *end;
    long v = strtol(argv[++*i], &end, 10);
    if (*end || v <= 0 || v > (1 << 24)) {
      fprintf(stderr, "wgllm: --ctx %s: expected a token count from 1 to %d\n", argv[*i], 1 << 24);
      return -1;
    }
    c->ctx = (uint32_t)v;
    return 1;
  }
  if (!strcmp(a, "--prefill-chunk") || !strcmp(a, "-ub") || !strcmp(a, "--ubatch-size")) {
    if (!has_val) goto missing;
    char *end;
    long v = strtol(argv[++*i], &end, 10);
    if (*end || v <= 0 || v > 65535) {
      fprintf(stderr, "wgllm: %s %s: expected a token count from 1 to 65535\n", a, argv[*i]);
      return -1;
    }
    c->prefill_chunk = (uint32_t)v;
    return 1;
  }
  if (!strcmp(a, "--adapter")) {
    if (!has_val) goto missing;
    c->adapter = argv[++*i];
    return 1;
  }
  if (!strcmp(a, "--unfused")) {
    c->unfused = 1;
    return 1;
  }
  if (!strcmp(a, "--attn-grid")) {
    if (!has_val) goto missing;
    const char *v = argv[++*i];
    if (!strcmp(v, "worst"))
      c->attn_grid = 0;
    else if (!strcmp(v, "indirect"))
      c->attn_grid = 1;
    else {
      fprintf(stderr, "wgllm: --attn-grid %s: expected worst or indirect\n", v);
      return -1;
    }
    return 1;
  }
  if (!strcmp(a, "--dawn-toggles")) {
    if (!has_val) goto missing;
    c->toggles = argv[++*i];
    return 1;
  }
  if (!strcmp(a, "--no-f16")) {
    c->no_f16 = 1;
    return 1;
  }
  if (!strcmp(a, "--max-binding")) {
    if (!has_val) goto missing;
    char *end;
    unsigned long long v = strtoull(argv[++*i], &end, 10);
    if (*end || v < 1024) {
      fprintf(stderr, "wgllm: --max-binding %s: expected a byte count of at least 1024\n", argv[*i]);
      return -1;
    }
    c->max_binding = v;
    return 1;
  }
  return 0;
missing:
  fprintf(stderr, "wgllm: %s needs a value\n", a);
  return -1;
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

int cli_open(const cli_common *c, wgllm_model **m, wgllm_session **s, int no_tokenizer) {
  *m = NULL;
  if (s) *s = NULL;
  if (!c->model) {
    fprintf(stderr, "wgllm: -m PATH is required\n");
    return 2;
  }
  if (c->toggles) {
    fprintf(stderr, "wgllm: --dawn-toggles is an option of wgllm bench (measurements), not of this command\n");
    return 2;
  }
  struct stat sb;
  if (stat(c->model, &sb) != 0) { /* said as such, not as a missing tokenizer.json inside it */
    fprintf(stderr, "wgllm: -m %s: %s\n", c->model, strerror(errno));
    return 2;
  }
  wgllm_model_params mp = wgllm_model_default_params();
  if (cli_parse_weights(c->weights, &mp)) return 2;
  mp.adapter = c->adapter;
  mp.disable_f16 = c->no_f16;
  mp.no_tokenizer = no_tokenizer;
  mp.chat_template = c->chat_template;
  mp.max_binding_bytes = c->max_binding;
  wgllm_status st = wgllm_model_create(c->model, &mp, m);
  if (st) {
    fprintf(stderr, "wgllm: %s (%s)\n", wgllm_last_error(), wgllm_status_name(st));
    return st == WGLLM_ERR_INVALID_ARG ? 2 : 1;
  }
  if (!s) return 0;
  wgllm_session_params sp = wgllm_session_default_params();
  if (c->ctx) sp.context = c->ctx;
  sp.prefill_chunk = c->prefill_chunk;
  if (isatty(2)) sp.on_prefill = show_prefill; /* long prompts: progress on a terminal, as llama.cpp shows it */
  sp.kv_type = c->kv_f16 ? WGLLM_KV_F16 : WGLLM_KV_F32;
  sp.decode_path = c->unfused ? WGLLM_DECODE_UNFUSED : WGLLM_DECODE_FUSED;
  sp.attn_grid = c->attn_grid ? WGLLM_ATTN_GRID_INDIRECT : WGLLM_ATTN_GRID_WORST;
  st = wgllm_session_create(*m, &sp, s);
  if (st) {
    fprintf(stderr, "wgllm: %s (%s)\n", wgllm_last_error(), wgllm_status_name(st));
    wgllm_model_free(*m);
    *m = NULL;
    return 1;
  }
  return 0;
}
