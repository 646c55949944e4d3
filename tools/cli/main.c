/* wgllm command-line tool: dispatches subcommands (run, chat, tokenize, info, logits, perplexity, bench, serve). Errors
   go to stderr with a non-zero exit: 2 for a usage error, 1 for a failure, 130 after Ctrl-C. */
#include "cli.h"
#include "wgllm.h"
#include <stdio.h>
#include <string.h>

static void usage(FILE *f) {
  fprintf(f, "usage: wgllm <command> [options]       (wgllm -m PATH -p TEXT ...: run, as llama-cli takes it)\n"
             "commands:\n"
             "  run      continue a prompt, streaming the text\n"
             "  chat     interactive chat with the model's template\n"
             "  tokenize text to token ids, or ids to text (--decode)\n"
             "  info     adapter, features and limits (--gpu), or a model file's contents (-m PATH)\n"
             "  logits   logits of prompt and decode ids, for conformance checks\n"
             "  perplexity  perplexity over a text file, as llama-perplexity computes it\n"
             "  bench    prefill and decode speed (a model file or a synthetic model), --json, --profile\n"
             "  serve    an OpenAI-compatible HTTP server (chat completions, completions, streaming)\n"
             "  version  print the version\n"
             "Run 'wgllm <command> --help' for a command's options.\n");
}

int main(int argc, char **argv) {
  if (argc < 2) {
    usage(stderr);
    return 2;
  }
  const char *cmd = argv[1];
  if (!strcmp(cmd, "--help") || !strcmp(cmd, "-h") || !strcmp(cmd, "help")) {
    usage(stdout);
    return 0;
  }
  if (!strcmp(cmd, "version") || !strcmp(cmd, "--version")) {
    printf("wgllm %s\n", wgllm_version());
    return 0;
  }
  if (cmd[0] == '-') /* options first: llama-cli's habit, a run */
    return cli_run(argc, argv);
  if (!strcmp(cmd, "info")) return cli_info(argc - 1, argv + 1);
  if (!strcmp(cmd, "logits")) return cli_logits(argc - 1, argv + 1);
  if (!strcmp(cmd, "run")) return cli_run(argc - 1, argv + 1);
  if (!strcmp(cmd, "chat")) return cli_chat(argc - 1, argv + 1);
  if (!strcmp(cmd, "tokenize")) return cli_tokenize(argc - 1, argv + 1);
  if (!strcmp(cmd, "serve")) return cli_serve(argc - 1, argv + 1);
  if (!strcmp(cmd, "perplexity")) return cli_perplexity(argc - 1, argv + 1);
  if (!strcmp(cmd, "bench")) return cli_bench(argc - 1, argv + 1, argv[0]);
  fprintf(stderr, "wgllm: unknown command '%s'\n", cmd);
  usage(stderr);
  return 2;
}
