/* A chat: a conversation formatted by the model's chat template (or a named one), the assistant's reply streamed
   and returned, then a second turn that appends the reply and a new question: the session's cache already holds
   the first turn's prompt, so only what follows it is computed again (stats.cached_tokens).
   Usage: chat MODEL_PATH [TEMPLATE] (TEMPLATE: chatml, llama3, gemma, llama2; default: the model's own) */
#include "wgllm.h"
#include <stdio.h>

static int on_text(const char *text, size_t len, void *user) {
  (void)user;
  fwrite(text, 1, len, stdout);
  fflush(stdout);
  return 0;
}

int main(int argc, char **argv) {
  if (argc < 2) {
    fprintf(stderr, "usage: %s MODEL_PATH [TEMPLATE]\n", argv[0]);
    return 2;
  }
  wgllm_model_params mp = wgllm_model_default_params();
  mp.chat_template = argc > 2 ? argv[2] : NULL;
  wgllm_model *model;
  wgllm_session *session = NULL;
  if (wgllm_model_create(argv[1], &mp, &model) != WGLLM_OK || wgllm_session_create(model, NULL, &session) != WGLLM_OK) {
    fprintf(stderr, "cannot load %s: %s\n", argv[1], wgllm_last_error());
    wgllm_model_free(model);
    return 1;
  }
  wgllm_model_info info;
  wgllm_model_get_info(model, &info);
  printf("template: %s\n", info.chat_template);
  wgllm_generate_params gp = wgllm_generate_default_params(); /* sampled, a random seed */
  gp.max_tokens = 24;
  gp.on_text = on_text;
  wgllm_message conversation[3] = {{"system", "You answer in one short sentence."},
                                   {"user", "Who created the heaven and the earth?"}};
  char *reply = NULL, *reply2 = NULL;
  wgllm_generate_stats stats, stats2;
  printf("assistant: ");
  wgllm_status st = wgllm_chat(session, conversation, 2, &gp, &reply, &stats);
  printf("\n");
  if (st == WGLLM_OK) { /* the next turn: the whole conversation again, its shared start taken from the cache */
    wgllm_message turn2[4] = {conversation[0], conversation[1], {"assistant", reply}, {"user", "And then?"}};
    printf("assistant: ");
    st = wgllm_chat(session, turn2, 4, &gp, &reply2, &stats2);
    printf("\n");
  }
  if (st == WGLLM_OK)
    printf("turn 1: %u prompt tokens, %u generated (%s); turn 2: %u prompt tokens, %u of them cached\n",
           stats.prompt_tokens, stats.generated_tokens, stats.stop_reason, stats2.prompt_tokens, stats2.cached_tokens);
  else
    fprintf(stderr, "chat failed: %s (%s)\n", wgllm_session_error(session), wgllm_status_name(st));
  wgllm_free(reply);
  wgllm_free(reply2);
  wgllm_session_free(session);
  wgllm_model_free(model);
  return st == WGLLM_OK ? 0 : 1;
}
