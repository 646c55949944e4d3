/* `wgllm logits`: the conformance interface. Rows 0..T-1 of the output come from one prefill over the
   prompt ids; row T+i from the decode step that fed decode-ids[i]. Output: little-endian f32 [T+N][vocab]. */
#include "cli.h"
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { K_PROMPT_IDS = 512, K_DECODE_IDS };

static const cli_opt logits_opts[] = {
    {K_PROMPT_IDS, "--prompt-ids", CLI_TEXT, "IDS", 0, 0, 0, CLI_CMD_LOGITS,
     "the prompt's token ids, comma-separated (one prefill)"},
    {K_DECODE_IDS, "--decode-ids", CLI_TEXT, "IDS", 0, 0, 0, CLI_CMD_LOGITS,
     "ids fed one by one to the recorded decode step after the prompt"},
    {'o', "-o --output", CLI_TEXT, "OUT.f32", 0, 0, 0, CLI_CMD_LOGITS, "where the logits go"},
    {0, NULL, 0, NULL, 0, 0, 0, 0, NULL}};

static const cli_opt *const logits_tables[] = {logits_opts, cli_common_opts, NULL};

typedef struct logits_args {
  cli_common c;
  const char *prompt, *decode, *out;
} logits_args;

static int on_opt(void *user, int key, const cli_value *v) {
  logits_args *a = user;
  int r = cli_common_set(&a->c, key, v);
  if (r != 1) return r;
  if (key == K_PROMPT_IDS)
    a->prompt = v->text;
  else if (key == K_DECODE_IDS)
    a->decode = v->text;
  else if (key == 'o')
    a->out = v->text;
  return 0;
}

static void usage(FILE *f) {
  fprintf(f, "usage: wgllm logits -m PATH --prompt-ids 5,9,2 [--decode-ids 7,3] -o OUT.f32 [options]\n"
             "  PATH is a Hugging Face directory (config.json + safetensors) or a .gguf file (its tokenizer is not\n"
             "  loaded). OUT.f32 is float32 [T+N][vocab]: T prefill rows, then one row per decode step.\n"
             "  The context is 4096 tokens unless -c N, whatever the model's trained length (run and chat take\n"
             "  that length when it is shorter).\n");
  cli_print_options(f, CLI_CMD_LOGITS, logits_tables);
}

int cli_logits(int argc, char **argv) {
  logits_args a = {0};
  char **ops;
  int n_ops;
  int rc = cli_parse("wgllm logits", CLI_CMD_LOGITS, logits_tables, argc, argv, on_opt, &a, &ops, &n_ops);
  if (rc) return rc;
  if (n_ops && !a.c.help) fprintf(stderr, "wgllm logits: unexpected argument '%s' (see --help)\n", ops[0]);
  free(ops);
  if (a.c.help) {
    usage(stdout);
    return 0;
  }
  if (n_ops) return 2;
  if (!a.c.model || !a.prompt || !a.out) {
    fprintf(stderr, "wgllm logits: -m PATH, --prompt-ids IDS and -o OUT.f32 are required\n");
    usage(stderr);
    return 2;
  }
  int32_t *pids = NULL, *dids = NULL;
  uint32_t T = 0, N = 0;
  if (cli_parse_ids(a.prompt, &pids, &T) || T == 0) {
    fprintf(stderr, "wgllm logits: --prompt-ids '%s' is not a non-empty comma-separated list of token ids\n", a.prompt);
    free(pids);
    return 2;
  }
  if (a.decode && cli_parse_ids(a.decode, &dids, &N)) {
    fprintf(stderr, "wgllm logits: --decode-ids '%s' is not a comma-separated list of token ids\n", a.decode);
    free(pids);
    return 2;
  }
  wgllm_model *m;
  wgllm_session *s;
  rc = cli_open(&a.c, 4096, &m, &s, NULL, 1); /* the session's default context, whatever the model's */
  if (rc) {
    free(pids);
    free(dids);
    return rc;
  }
  wgllm_model_info info;
  wgllm_model_get_info(m, &info);
  uint32_t V = info.n_vocab;
  float *logits = malloc((size_t)(T + N) * V * sizeof *logits);
  wgllm_status st = logits ? WGLLM_OK : WGLLM_ERR_OUT_OF_MEMORY;
  if (!st) st = wgllm_session_prefill(s, pids, T, logits, 1);
  for (uint32_t i = 0; !st && i < N; i++)
    st = wgllm_session_decode(s, dids[i], logits + (size_t)(T + i) * V);
  if (st) {
    fprintf(stderr, "wgllm logits: %s (%s)\n", logits ? wgllm_session_error(s) : "out of memory",
            wgllm_status_name(st));
    rc = 1;
  } else {
    cli_out o; /* written to a temporary name beside it, renamed onto it once whole */
    FILE *f = cli_out_open(&o, a.out);
    int bad = !f || fwrite(logits, sizeof *logits, (size_t)(T + N) * V, f) != (size_t)(T + N) * V;
    if (!f || cli_out_close(&o, bad)) {
      fprintf(stderr, "wgllm logits: cannot write %s: %s (the file is left as it was)\n", a.out, strerror(errno));
      rc = 1;
    }
  }
  free(logits);
  free(pids);
  free(dids);
  wgllm_session_free(s);
  wgllm_model_free(m);
  return rc;
}
