/* Minimal use of the public API: load a model, stream a continuation of a prompt, print the stats.
   Build: cc examples/generate.c -Iinclude -Lbuild -lwgllm -o generate
   Usage: generate MODEL_PATH "prompt" [max_tokens] */
#include "wgllm.h"
#include <stdio.h>
#include <stdlib.h>

static int on_text(const char *text, size_t len, void *user) {
  (void)user;
  fwrite(text, 1, len, stdout);
  fflush(stdout);
  return 0;
}

int main(int argc, char **argv) {
  if (argc < 3) {
    fprintf(stderr, "usage: %s MODEL_PATH PROMPT [MAX_TOKENS]\n", argv[0]);
    return 2;
  }
  wgllm_model *model;
  wgllm_status st = wgllm_model_create(argv[1], NULL, &model);
  if (st != WGLLM_OK) {
    fprintf(stderr, "cannot load %s: %s (%s)\n", argv[1], wgllm_last_error(), wgllm_status_name(st));
    return 1;
  }
  wgllm_session *session;
  st = wgllm_session_create(model, NULL, &session);
  if (st != WGLLM_OK) {
    fprintf(stderr, "cannot create a session: %s\n", wgllm_last_error());
    wgllm_model_free(model);
    return 1;
  }
  wgllm_generate_params gp = wgllm_generate_default_params();
  gp.max_tokens = argc > 3 ? (uint32_t)atoi(argv[3]) : 64;
  gp.temperature = 0.0f; /* greedy: the same text every run */
  gp.on_text = on_text;
  wgllm_generate_stats stats;
  fputs(argv[2], stdout);
  st = wgllm_generate(session, argv[2], &gp, &stats);
  printf("\n");
  if (st == WGLLM_OK)
    fprintf(stderr, "%u prompt tokens, %u generated (%s)\n", stats.prompt_tokens, stats.generated_tokens,
            stats.stop_reason);
  else
    fprintf(stderr, "generation failed: %s\n", wgllm_session_error(session));
  wgllm_session_free(session);
  wgllm_model_free(model);
  return st == WGLLM_OK ? 0 : 1;
}
