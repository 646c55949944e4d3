/* wgllm command-line tool: dispatches subcommands (run, chat, tokenize, info, logits, perplexity, embed, bench, serve)
   through one table of name, function and help line. Errors go to stderr with a non-zero exit: 2 for a usage error,
   1 for a failure, 130 after Ctrl-C. */
#include "cli.h"
#include "serve_main.h"
#include "wgllm.h"
#include <stdio.h>
#include <string.h>

static int version_command(int argc, char **argv, const char *self) {
  (void)argc;
  (void)argv;
  (void)self;
  printf("wgllm %s\n", wgllm_version());
  return 0;
}

/* the commands that take only their arguments (argv[0] is the command's name) */
static int run_command(int argc, char **argv, const char *self) { return cli_run(argc, argv); }
static int chat_command(int argc, char **argv, const char *self) { return cli_chat(argc, argv); }
static int tokenize_command(int argc, char **argv, const char *self) { return cli_tokenize(argc, argv); }
static int info_command(int argc, char **argv, const char *self) { return cli_info(argc, argv); }
static int logits_command(int argc, char **argv, const char *self) { return cli_logits(argc, argv); }
static int perplexity_command(int argc, char **argv, const char *self) { return cli_perplexity(argc, argv); }
static int embed_command(int argc, char **argv, const char *self) { return cli_embed(argc, argv); }
static int serve_entry(int argc, char **argv, const char *self) { return serve_command(argc, argv); }

typedef struct cli_command {
  const char *name;
  int (*run)(int argc, char **argv, const char *self); /* self: this program's argv[0] */
  const char *help;                                    /* one line for the usage */
} cli_command;

static const cli_command COMMANDS[] = {
    {"run", run_command, "continue a prompt, streaming the text"},
    {"chat", chat_command, "interactive chat with the model's template"},
    {"tokenize", tokenize_command, "text to token ids, or ids to text (--decode)"},
    {"info", info_command, "adapter, features and limits (--gpu), or a model file's contents (-m PATH)"},
    {"logits", logits_command, "logits of prompt and decode ids, for conformance checks"},
    {"perplexity", perplexity_command, "perplexity over a text file, as llama-perplexity computes it"},
    {"embed", embed_command, "embeddings of texts or ids (the model's pooling and normalisation), as llama-embedding"},
    {"bench", cli_bench, "prefill and decode speed (a model file or a synthetic model), --json, --profile"},
    {"serve", serve_entry, "an OpenAI-compatible HTTP server (chat completions, completions, streaming)"},
    {"version", version_command, "print the version"},
};
enum { N_COMMANDS = sizeof COMMANDS / sizeof COMMANDS[0] };

static void usage(FILE *f) {
  fprintf(f, "usage: wgllm <command> [options]       (wgllm -m PATH -p TEXT ...: run, as llama-cli takes it)\n"
             "commands:\n");
  for (int i = 0; i < N_COMMANDS; i++) { /* the help lines start at column 11, or two spaces past a longer name */
    int name_len = (int)strlen(COMMANDS[i].name);
    fprintf(f, "  %-*s %s\n", name_len > 8 ? name_len + 1 : 8, COMMANDS[i].name, COMMANDS[i].help);
  }
  fprintf(f, "Run 'wgllm <command> --help' for a command's options.\n");
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
  if (!strcmp(cmd, "--version")) return version_command(argc - 1, argv + 1, argv[0]);
  if (cmd[0] == '-') /* options first: llama-cli's habit, a run */
    return cli_run(argc, argv);
  for (int i = 0; i < N_COMMANDS; i++)
    if (!strcmp(cmd, COMMANDS[i].name)) return COMMANDS[i].run(argc - 1, argv + 1, argv[0]);
  fprintf(stderr, "wgllm: unknown command '%s'\n", cmd);
  usage(stderr);
  return 2;
}
