/* The callbacks: the library's log (what a load chose, and warnings), the progress of a model load, of a prompt's
   prefill and the generated text as it becomes final, where returning non-zero stops the generation (here: at the
   first full stop).
   Usage: callbacks MODEL_PATH [PROMPT] */
#include "wgllm.h"
#include <stdio.h>
#include <string.h>

static void on_log(wgllm_log_level level, const char *msg, void *user) {
  (void)user;
  fprintf(stderr, "[log %s] %s\n", level == WGLLM_LOG_WARN ? "warning" : "info", msg);
}

static int on_load(float fraction, void *user) {
  int *calls = user;
  if ((*calls)++ == 0 || fraction >= 1) fprintf(stderr, "[load] %3.0f%%\n", fraction * 100);
  return 0; /* non-zero would cancel the load */
}

static void on_prefill(uint32_t done, uint32_t total, void *user) {
  int *calls = user;
  (*calls)++;
  fprintf(stderr, "[prefill] %u of %u tokens\n", done, total);
}

static int on_text(const char *text, size_t len, void *user) {
  int *pieces = user;
  (*pieces)++;
  fwrite(text, 1, len, stdout);
  fflush(stdout);
  return memchr(text, '.', len) != NULL; /* stop after the first sentence */
}

int main(int argc, char **argv) {
  if (argc < 2) {
    fprintf(stderr, "usage: %s MODEL_PATH [PROMPT]\n", argv[0]);
    return 2;
  }
  const char *prompt = argc > 2 ? argv[2] : "And God said, Let there be light:";
  wgllm_set_log(on_log, NULL);
  int load_calls = 0, prefill_calls = 0, pieces = 0;
  wgllm_model_params mp = wgllm_model_default_params();
  mp.progress = on_load;
  mp.progress_user = &load_calls;
  wgllm_model *model;
  if (wgllm_model_create(argv[1], &mp, &model) != WGLLM_OK) {
    fprintf(stderr, "cannot load %s: %s\n", argv[1], wgllm_last_error());
    return 1;
  }
  wgllm_session_params sp = wgllm_session_default_params();
  sp.on_prefill = on_prefill;
  sp.prefill_user = &prefill_calls;
  wgllm_session *session;
  if (wgllm_session_create(model, &sp, &session) != WGLLM_OK) {
    fprintf(stderr, "cannot create a session: %s\n", wgllm_last_error());
    wgllm_model_free(model);
    return 1;
  }
  wgllm_generate_params gp = wgllm_generate_default_params();
  gp.max_tokens = 200;
  gp.temperature = 0; /* greedy */
  gp.on_text = on_text;
  gp.user = &pieces;
  wgllm_generate_stats stats;
  fputs(prompt, stdout);
  wgllm_status st = wgllm_generate(session, prompt, &gp, &stats);
  printf("\n");
  if (st == WGLLM_OK)
    fprintf(stderr, "%u tokens in %d pieces of text, stop: %s\n", stats.generated_tokens, pieces, stats.stop_reason);
  else
    fprintf(stderr, "generation failed: %s\n", wgllm_session_error(session));
  wgllm_session_free(session);
  wgllm_model_free(model);
  wgllm_set_log(NULL, NULL);
  return st == WGLLM_OK && load_calls > 0 && prefill_calls > 0 ? 0 : 1;
}
