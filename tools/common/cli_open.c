/* Opening a model and a session through the public API with the common options, for the command-line programs:
   load and prompt progress on a terminal, the library's log on stderr, readable errors, the context's choice. */
#include "cli_open.h"
#include "cli_file.h"
#include "cli_progress.h"
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

volatile sig_atomic_t cli_interrupted;

static cli_progress g_load, g_prefill; /* the CLI loads one model and evaluates one prompt at a time */

static int show_load(float fraction, void *user) {
  (void)user;
  cli_progress_show(&g_load, 0, "loading model: %.0f%%", 100.0 * fraction);
  return cli_interrupted != 0; /* Ctrl-C cancels the load */
}

void cli_prefill_begin(uint32_t n) {
  cli_progress_begin(&g_prefill);
  if (n >= 128) cli_progress_show(&g_prefill, 1, "prompt: 0/%u tokens", n);
}

/* "prompt: 1024/4096 tokens (12.0 s)" while a prompt longer than one pass is evaluated; cleared at its end */
static void show_prefill(uint32_t done, uint32_t total, void *user) {
  (void)user;
  if (!g_prefill.t0) cli_progress_begin(&g_prefill);
  if (done >= total) {
    cli_progress_end(&g_prefill);
    g_prefill.t0 = 0; /* the next prompt starts its own clock */
    return;
  }
  double t = cli_now() - g_prefill.t0;
  if (t > 0.2)
    cli_progress_show(&g_prefill, 1, "prompt: %u/%u tokens, %.0f tok/s", done, total, done / t);
  else
    cli_progress_show(&g_prefill, 1, "prompt: %u/%u tokens", done, total);
}

static void on_log(wgllm_log_level level, const char *msg, void *user) {
  const cli_common *c = user;
  if (level == WGLLM_LOG_WARN)
    fprintf(stderr, "wgllm: warning: %s\n", msg);
  else if (c->verbose)
    fprintf(stderr, "wgllm: %s\n", msg);
}

wgllm_session_params cli_session_params(const cli_common *c) {
  wgllm_session_params sp = wgllm_session_default_params();
  sp.prefill_chunk = c->prefill_chunk;
  sp.kv_type = c->kv_f16 ? WGLLM_KV_F16 : WGLLM_KV_F32;
  sp.decode_path = c->unfused ? WGLLM_DECODE_UNFUSED : WGLLM_DECODE_FUSED;
  sp.attn_grid = c->attn_grid ? WGLLM_ATTN_GRID_INDIRECT : WGLLM_ATTN_GRID_WORST;
  sp.precision = c->precision;
  return sp;
}

_Thread_local wgllm_status cli_open_status;

/* Loads path with the common options (progress on a terminal); prints why not and returns the exit status. */
static int load_model(const cli_common *c, const char *path, int no_tokenizer, wgllm_model **m) {
  wgllm_model_params mp = wgllm_model_default_params();
  if (cli_parse_weights(c->weights, &mp)) return 2;
  mp.adapter = c->adapter;
  mp.disable_f16 = c->no_f16;
  mp.no_tokenizer = no_tokenizer;
  mp.chat_template = c->chat_template;
  mp.max_binding_bytes = c->max_binding;
  mp.no_batch = c->no_batch;
  mp.progress = show_load;
  char *template_text = NULL; /* --chat-template-file */
  if (c->chat_template_file && !(template_text = cli_read_file(c->chat_template_file, NULL))) {
    fprintf(stderr, "wgllm: --chat-template-file %s: %s\n", c->chat_template_file, strerror(errno));
    return 2;
  }
  mp.chat_template_text = template_text;
  cli_progress_begin(&g_load);
  wgllm_status st = wgllm_model_create(path, &mp, m);
  cli_progress_end(&g_load);
  free(template_text);
  cli_open_status = st;
  if (st) {
    if (cli_interrupted) {
      fprintf(stderr, "wgllm: interrupted\n");
      return 130;
    }
    fprintf(stderr, "wgllm: %s (%s)\n", wgllm_last_error(), wgllm_status_name(st));
    return st == WGLLM_ERR_INVALID_ARG ? 2 : 1;
  }
  return 0;
}

int cli_open_draft(const cli_common *c, const char *path, wgllm_model *m, wgllm_model **draft) {
  *draft = NULL;
  struct stat sb;
  if (stat(path, &sb) != 0) {
    fprintf(stderr, "wgllm: -md %s: %s\n", path, strerror(errno));
    return 2;
  }
  int rc = load_model(c, path, 0, draft);
  if (rc) return rc;
  if (wgllm_model_check_draft(m, *draft)) {
    fprintf(stderr, "wgllm: -md %s: %s\n", path, wgllm_model_error(m));
    wgllm_model_free(*draft);
    *draft = NULL;
    return 2;
  }
  return 0;
}

int cli_open(const cli_common *c, uint32_t default_ctx, wgllm_model **m, wgllm_session **s, uint32_t *ctx,
             int no_tokenizer) {
  *m = NULL;
  if (s) *s = NULL;
  if (!c->model) {
    fprintf(stderr, "wgllm: -m PATH is required (see --help)\n");
    return 2;
  }
  struct stat sb;
  if (stat(c->model, &sb) != 0) { /* said as such, not as a missing tokenizer.json inside it */
    fprintf(stderr, "wgllm: -m %s: %s\n", c->model, strerror(errno));
    return 2;
  }
  if (c->verbose)
    for (int i = 0; i < c->n_ignored; i++)
      fprintf(stderr, "wgllm: %s is accepted for llama.cpp compatibility and ignored (every op runs on the GPU)\n",
              c->ignored[i]);
  wgllm_set_log(on_log, (void *)c);
  double t0 = cli_now();
  int rc = load_model(c, c->model, no_tokenizer, m);
  if (rc) return rc;
  wgllm_model_info info;
  wgllm_model_get_info(*m, &info);
  if (c->verbose) fprintf(stderr, "wgllm: loaded in %.2f s, trained context %u\n", cli_now() - t0, info.train_context);
  if (!s) return 0;
  wgllm_session_params sp = cli_session_params(c);
  /* 0: the library's default, the model's trained length at most 4096 (a note through on_log where it was trained
     on more; it warns there about a context beyond the trained length) */
  sp.context = c->ctx ? c->ctx : default_ctx;
  sp.on_prefill = c->no_prefill_progress ? NULL : show_prefill; /* long prompts: progress on a terminal */
  wgllm_status st = wgllm_session_create(*m, &sp, s);
  if (st) {
    fprintf(stderr, "wgllm: %s (%s)\n", wgllm_last_error(), wgllm_status_name(st));
    if (st == WGLLM_ERR_OUT_OF_MEMORY || st == WGLLM_ERR_UNSUPPORTED)
      fprintf(stderr, "wgllm: -c N (--ctx-size N) sets a smaller context%s\n",
              c->kv_f16 ? "" : "; --kv f16 halves the KV cache");
    wgllm_model_free(*m);
    *m = NULL;
    return 1;
  }
  if (c->verbose)
    fprintf(stderr, "wgllm: context %u tokens%s, KV cache %s, %.1f MB, precision %s\n", wgllm_session_context(*s),
            c->ctx                                            ? ""
            : default_ctx                                     ? " (this command's default)"
            : info.train_context == wgllm_session_context(*s) ? " (the model's trained length)"
                                                              : " (the default: the trained length, at most 4096)",
            c->kv_f16 ? "f16" : "f32", wgllm_session_kv_bytes(*s) / 1e6, wgllm_precision_name(sp.precision));
  if (ctx) *ctx = wgllm_session_context(*s);
  return 0;
}
