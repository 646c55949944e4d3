/* Subcommands of the wgllm CLI, one file each, and the helpers they share. The user commands use only the
   public API (include/wgllm.h); `wgllm bench` runs the separate developer program wgllm-bench (bench/). */
#ifndef WGLLM_CLI_H
#define WGLLM_CLI_H
#include "wgllm.h"
#include <stdint.h>

typedef struct cli_common {
  const char *model;         /* -m PATH */
  const char *weights;       /* --weights native|q4[:G] */
  const char *adapter;       /* --adapter NAME */
  int kv_f16;                /* --kv f16 */
  int no_f16;                /* --no-f16: do not request shader-f16 */
  uint32_t ctx;              /* --ctx N */
  uint32_t prefill_chunk;    /* --prefill-chunk N (-ub N): tokens a prefill pass (0: the engine's choice) */
  const char *toggles;       /* --dawn-toggles a,b: Dawn device toggles (for measurements; wgllm-bench) */
  int unfused;               /* --unfused: decode through the plain per-op path (comparisons) */
  int attn_grid;             /* --attn-grid worst|indirect (1: indirect) */
  const char *chat_template; /* wgllm chat --template NAME */
  uint64_t max_binding;      /* --max-binding BYTES: split weights over it (0: the device's limit) */
} cli_common;

int cli_info(int argc, char **argv);
int cli_logits(int argc, char **argv);
int cli_run(int argc, char **argv);
int cli_chat(int argc, char **argv);
int cli_tokenize(int argc, char **argv);

int cli_parse_ids(const char *s, int32_t **out, uint32_t *n);
/* --weights native|q4[:GROUP] into the model params; prints what is wrong and returns non-zero */
int cli_parse_weights(const char *s, wgllm_model_params *mp);
int cli_common_arg(cli_common *c, int argc, char **argv, int *i);
/* The offset of the first byte of s that is not valid UTF-8 (overlong, surrogate, past U+10FFFF, cut short),
   or -1 when all of it is. */
long cli_utf8_invalid_at(const char *s);
/* The model (without its tokenizer when no_tokenizer) and a session (when s != NULL) through the public API,
   with the common options; prints the error and returns non-zero on failure. */
int cli_open(const cli_common *c, wgllm_model **m, wgllm_session **s, int no_tokenizer);
#endif
