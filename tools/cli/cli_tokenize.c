/* `wgllm tokenize`: text to comma-separated ids, or ids back to text (--decode), with the tokenizer of a model
   directory, a .gguf file or a tokenizer.json. Needs no GPU. */
#include "cli.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void usage(FILE *f) {
  fprintf(f, "usage: wgllm tokenize -m PATH [--no-special] TEXT\n"
             "       wgllm tokenize -m PATH --decode 1,2,3\n"
             "  PATH: a model directory, a .gguf file or a tokenizer.json\n"
             "  --no-special  do not add BOS/EOS and treat special-token text as plain text\n");
}

int cli_tokenize(int argc, char **argv) {
  const char *path = NULL, *text = NULL, *decode = NULL;
  int special = 1;
  for (int i = 1; i < argc; i++) {
    if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) {
      usage(stdout);
      return 0;
    }
    if (!strcmp(argv[i], "--no-special"))
      special = 0;
    else if ((!strcmp(argv[i], "-m") || !strcmp(argv[i], "--model")) && i + 1 < argc)
      path = argv[++i];
    else if (!strcmp(argv[i], "--decode") && i + 1 < argc)
      decode = argv[++i];
    else if (argv[i][0] == '-' && argv[i][1] && !text) {
      fprintf(stderr, "wgllm tokenize: unknown option '%s'\n", argv[i]);
      return 2;
    } else if (!text)
      text = argv[i];
    else {
      fprintf(stderr, "wgllm tokenize: give the text as one argument (quote it)\n");
      return 2;
    }
  }
  if (!path || (!text && !decode)) {
    usage(stderr);
    return 2;
  }
  wgllm_vocab *v;
  wgllm_status st = wgllm_vocab_load(path, &v);
  if (st) {
    fprintf(stderr, "wgllm tokenize: %s (%s)\n", wgllm_last_error(), wgllm_status_name(st));
    return 1;
  }
  int rc = 0;
  if (decode) {
    int32_t *ids;
    uint32_t n;
    if (cli_parse_ids(decode, &ids, &n)) {
      fprintf(stderr, "wgllm tokenize: --decode '%s' is not a comma-separated list of token ids\n", decode);
      wgllm_vocab_free(v);
      return 2;
    }
    char *out;
    size_t len;
    st = wgllm_vocab_detokenize(v, ids, n, &out, &len);
    if (st) {
      fprintf(stderr, "wgllm tokenize: %s (%s)\n", wgllm_vocab_error(v), wgllm_status_name(st));
      rc = 1;
    } else {
      fwrite(out, 1, len, stdout);
      fputc('\n', stdout);
      wgllm_free(out);
    }
    free(ids);
  } else {
    size_t n = 0, len = strlen(text);
    st = wgllm_vocab_tokenize(v, text, len, special, special, NULL, 0, &n);
    int32_t *ids = st ? NULL : malloc((n ? n : 1) * sizeof *ids);
    if (!st && !ids) st = WGLLM_ERR_OUT_OF_MEMORY;
    if (!st) st = wgllm_vocab_tokenize(v, text, len, special, special, ids, n, &n);
    if (st) {
      fprintf(stderr, "wgllm tokenize: %s (%s)\n",
              ids || st != WGLLM_ERR_OUT_OF_MEMORY ? wgllm_vocab_error(v) : "out of memory", wgllm_status_name(st));
      rc = 1;
    } else {
      for (size_t i = 0; i < n; i++)
        printf("%s%d", i ? "," : "", ids[i]);
      printf("\n");
    }
    free(ids);
  }
  wgllm_vocab_free(v);
  return rc;
}
