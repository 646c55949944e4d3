/* `wgllm info --gpu`: the adapter, backend, features and limits the engine gets; `wgllm info -m PATH`: what a
   model file holds. Both through the public API (wgllm_describe_gpu / wgllm_describe_file). */
#include "cli.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { K_GPU = 512 };

static const cli_opt info_opts[] = {
    {K_GPU, "--gpu", CLI_FLAG, NULL, 0, 0, 0, CLI_CMD_INFO,
     "the adapter, backend, features and limits the engine gets (the default without -m)"},
    {0, NULL, 0, NULL, 0, 0, 0, 0, NULL}};

static const cli_opt *const info_tables[] = {info_opts, cli_common_opts, NULL};

typedef struct info_args {
  cli_common c;
  int gpu;
} info_args;

static int on_opt(void *user, int key, const cli_value *v) {
  info_args *a = user;
  int r = cli_common_set(&a->c, key, v);
  if (r != 1) return r;
  if (key == K_GPU) a->gpu = 1;
  return 0;
}

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
  info_args a = {0};
  char **ops;
  int n_ops;
  int rc = cli_parse("wgllm info", CLI_CMD_INFO, info_tables, argc, argv, on_opt, &a, &ops, &n_ops);
  if (rc) return rc;
  if (n_ops && !a.c.help) fprintf(stderr, "wgllm info: unexpected argument '%s' (see --help)\n", ops[0]);
  free(ops);
  if (a.c.help) {
    printf("usage: wgllm info [--gpu] [--no-f16] [--adapter NAME]\n"
           "       wgllm info -m PATH [--gpu]\n");
    cli_print_options(stdout, CLI_CMD_INFO, info_tables);
    return 0;
  }
  if (n_ops) return 2;
  if (a.c.model) {
    rc = info_model(a.c.model);
    if (rc || !a.gpu) return rc;
  }
  return info_gpu(a.c.no_f16, a.c.adapter);
}
