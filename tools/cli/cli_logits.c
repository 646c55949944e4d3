/* `wgllm logits`: the conformance interface. Rows 0..T-1 of the output come from one prefill over the
   prompt ids; row T+i from the decode step that fed decode-ids[i]. Output: little-endian f32 [T+N][vocab]. */
#include "cli.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void usage(FILE *f) {
  fprintf(f,
          "usage: wgllm logits -m PATH --prompt-ids 5,9,2 [--decode-ids 7,3] -o OUT.f32\n"
          "                    [--weights native|q4[:GROUP]] [--kv f32|f16] [--ctx N] [--prefill-chunk N] [--no-f16]\n"
          "                    [--unfused] [--attn-grid worst|indirect]  (decode paths, for comparisons)\n"
          "                    [--max-binding BYTES]  (split weights over BYTES, as a small device would)\n"
          "  PATH is a Hugging Face directory (config.json + safetensors) or a .gguf file.\n"
          "  OUT.f32 is float32 [T+N][vocab]: T prefill rows, then one row per decode step.\n");
}

int cli_logits(int argc, char **argv) {
  cli_common c = {0};
  const char *prompt = NULL, *decode = NULL, *out = NULL;
  for (int i = 1; i < argc; i++) {
    int r = cli_common_arg(&c, argc, argv, &i);
    if (r < 0) return 2;
    if (r) continue;
    if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) {
      usage(stdout);
      return 0;
    }
    if (i + 1 >= argc) {
      fprintf(stderr, "wgllm logits: %s needs a value\n", argv[i]);
      return 2;
    }
    if (!strcmp(argv[i], "--prompt-ids"))
      prompt = argv[++i];
    else if (!strcmp(argv[i], "--decode-ids"))
      decode = argv[++i];
    else if (!strcmp(argv[i], "-o"))
      out = argv[++i];
    else {
      fprintf(stderr, "wgllm logits: unknown option '%s'\n", argv[i]);
      usage(stderr);
      return 2;
    }
  }
  if (!c.model || !prompt || !out) {
    usage(stderr);
    return 2;
  }
  int32_t *pids = NULL, *dids = NULL;
  uint32_t T = 0, N = 0;
  if (cli_parse_ids(prompt, &pids, &T) || T == 0) {
    fprintf(stderr, "wgllm logits: --prompt-ids '%s' is not a non-empty comma-separated list of token ids\n", prompt);
    free(pids);
    return 2;
  }
  if (decode && cli_parse_ids(decode, &dids, &N)) {
    fprintf(stderr, "wgllm logits: --decode-ids '%s' is not a comma-separated list of token ids\n", decode);
    free(pids);
    return 2;
  }
  wgllm_model *m;
  wgllm_session *s;
  int rc = cli_open(&c, &m, &s, 1);
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
    FILE *f = fopen(out, "wb");
    if (!f || fwrite(logits, sizeof *logits, (size_t)(T + N) * V, f) != (size_t)(T + N) * V) {
      fprintf(stderr, "wgllm logits: cannot write %s\n", out);
      rc = 1;
    }
    if (f && fclose(f)) rc = 1;
  }
  free(logits);
  free(pids);
  free(dids);
  wgllm_session_free(s);
  wgllm_model_free(m);
  return rc;
}
