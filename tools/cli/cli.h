/* Subcommands of the wgllm CLI, one file each, and the helpers they share. */
#ifndef WGLLM_CLI_H
#define WGLLM_CLI_H
#include "gpu.h"
#include "model.h"
#include "session.h"
#include <stdint.h>

typedef struct cli_common {
  const char *model;   /* -m PATH */
  const char *weights; /* --weights native|q4[:G] */
  const char *adapter; /* --adapter NAME */
  int kv_f16;          /* --kv f16 */
  int no_f16;          /* --no-f16: do not request shader-f16 */
  uint32_t ctx;        /* --ctx N */
  const char *toggles; /* --dawn-toggles a,b: Dawn device toggles (for measurements) */
  int unfused;         /* --unfused: decode through the plain per-op path (comparisons) */
  int attn_grid;       /* --attn-grid worst|indirect (llm_attn_grid) */
} cli_common;

int cli_info(int argc, char **argv);
int cli_logits(int argc, char **argv);
int cli_run(int argc, char **argv);
int cli_chat(int argc, char **argv);
int cli_tokenize(int argc, char **argv);
int cli_bench(int argc, char **argv);

int cli_parse_ids(const char *s, int32_t **out, uint32_t *n);
int cli_common_arg(cli_common *c, int argc, char **argv, int *i);
int cli_open_gpu(const cli_common *c, gpu_context **gpu);
/* GPU + model (+ session when s != NULL); prints the error and returns non-zero on failure */
int cli_load(const cli_common *c, gpu_context **gpu, llm_model **m, llm_session **s);
#endif
