/* `wgllm info --gpu`: the adapter, backend, features and limits the engine gets; `wgllm info -m PATH`: what a
   model file holds. Both through the public API (wgllm_describe_gpu / wgllm_describe_file). */
#include "cli.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int info_gpu(int no_f16, const char *adapter) {
  char *text = NULL;
  wgllm_status s = wgllm_describe_gpu(adapter, no_f16, &text);
  if (s) {
    fprintf(stderr, "wgllm info: %s (%s)\n", wgllm_last_error(), wgllm_status_name(s));
    return 1;
  }
  fputs(text, stdout);
  wgllm_free(text);
  return 0;
}

/* Architecture, hyperparameters, tensor count and types, and bytes by type of a model file. No GPU needed. */
static int info_model(const char *path) {
  char *text = NULL;
  wgllm_status s = wgllm_describe_file(path, &text);
  if (!text) {
    fprintf(stderr, "wgllm info: %s (%s)\n", wgllm_last_error(), wgllm_status_name(s));
    return 1;
  }
  fputs(text, stdout); /* a file that cannot run is still described, with the reason */
  wgllm_free(text);
  return s ? 1 : 0;
}

int cli_info(int argc, char **argv) {
  int gpu = 0, no_f16 = 0;
  const char *model = NULL, *adapter = NULL;
  for (int i = 1; i < argc; i++) {
    if (!strcmp(argv[i], "--gpu"))
      gpu = 1;
    else if (!strcmp(argv[i], "--no-f16"))
      no_f16 = 1;
    else if ((!strcmp(argv[i], "-m") || !strcmp(argv[i], "--model")) && i + 1 < argc)
      model = argv[++i];
    else if (!strcmp(argv[i], "--adapter") && i + 1 < argc)
      adapter = argv[++i];
    else if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) {
      printf("usage: wgllm info --gpu [--no-f16] [--adapter NAME]\n"
             "       wgllm info -m PATH\n"
             "  -m PATH    architecture, hyperparameters, tensors and bytes by type of a model\n"
             "  --gpu      print the adapter, backend, features and limits the engine gets\n"
             "  --no-f16   do not request shader-f16 (simulates a device without it)\n"
             "  --adapter NAME (or WGLLM_ADAPTER=NAME) picks an adapter by (part of) its name\n");
      return 0;
    } else {
      fprintf(stderr, "wgllm info: unknown option '%s'\n", argv[i]);
      return 2;
    }
  }
  if (model) {
    int rc = info_model(model);
    if (rc || !gpu) return rc;
  }
  return info_gpu(no_f16, adapter);
}
