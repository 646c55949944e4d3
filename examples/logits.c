/* Evaluating tokens by hand: prefill a prompt and read its last token's logits, decode a few tokens greedily (the
   highest logit each time), then rewind the cache to the prompt and decode the first of them again: the same
   logits come back, since the cache holds exactly the prompt again.
   Usage: logits MODEL_PATH [PROMPT] */
#include "wgllm.h"
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int32_t argmax(const float *v, uint32_t n) {
  uint32_t best = 0;
  for (uint32_t i = 1; i < n; i++)
    if (v[i] > v[best]) best = i;
  return (int32_t)best;
}

int main(int argc, char **argv) {
  if (argc < 2) {
    fprintf(stderr, "usage: %s MODEL_PATH [PROMPT]\n", argv[0]);
    return 2;
  }
  const char *prompt = argc > 2 ? argv[2] : "In the beginning";
  wgllm_model *model;
  if (wgllm_model_create(argv[1], NULL, &model) != WGLLM_OK) {
    fprintf(stderr, "cannot load %s: %s\n", argv[1], wgllm_last_error());
    return 1;
  }
  wgllm_model_info info;
  wgllm_model_get_info(model, &info);
  wgllm_session *session;
  if (wgllm_session_create(model, NULL, &session) != WGLLM_OK) {
    fprintf(stderr, "cannot create a session: %s\n", wgllm_last_error());
    wgllm_model_free(model);
    return 1;
  }
  enum { MAX_PROMPT = 64, STEPS = 4 };
  int32_t ids[MAX_PROMPT];
  size_t n = 0;
  float *logits = malloc(info.n_vocab * sizeof *logits), *first = malloc(info.n_vocab * sizeof *first);
  int ok = logits && first && wgllm_tokenize(model, prompt, strlen(prompt), 1, ids, MAX_PROMPT, &n) == WGLLM_OK &&
           n > 0 && n <= MAX_PROMPT;
  /* the prompt: logits of its last token only (all_rows 0) */
  ok = ok && wgllm_session_prefill(session, ids, n, logits, 0) == WGLLM_OK;
  printf("prompt: %zu tokens, %u in the cache\n", n, wgllm_session_n_past(session));
  int32_t next = ok ? argmax(logits, info.n_vocab) : 0, first_token = next;
  for (int step = 0; ok && step < STEPS; step++) {
    char *piece = NULL;
    wgllm_detokenize(model, &next, 1, &piece);
    printf("token %d: %d \"%s\" (logit %.3f)\n", step, next, piece ? piece : "", logits[next]);
    wgllm_free(piece);
    ok = wgllm_session_decode(session, next, logits) == WGLLM_OK;
    if (step == 0 && ok) memcpy(first, logits, info.n_vocab * sizeof *first);
    next = argmax(logits, info.n_vocab);
  }
  if (ok) { /* back to the prompt alone, then the first generated token again */
    wgllm_session_rewind(session, (uint32_t)n);
    printf("rewound to %u tokens\n", wgllm_session_n_past(session));
    ok = wgllm_session_decode(session, first_token, logits) == WGLLM_OK;
    float diff = 0;
    for (uint32_t i = 0; ok && i < info.n_vocab; i++)
      diff = fmaxf(diff, fabsf(logits[i] - first[i]));
    printf("after the rewind, the same token's logits differ by at most %g\n", diff);
    ok = ok && diff == 0;
  }
  if (!ok) fprintf(stderr, "failed: %s\n", wgllm_session_error(session));
  free(logits);
  free(first);
  wgllm_session_free(session);
  wgllm_model_free(model);
  return ok ? 0 : 1;
}
