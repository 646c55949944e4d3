/* Subcommands of the wgllm CLI, one file each, on the public API (include/wgllm.h) and tools/common/ (the option
   parser, opening a model, progress lines, files). `wgllm bench` runs the separate developer program wgllm-bench
   (bench/); `wgllm serve` is tools/serve/'s. main.c's command table joins them. */
#ifndef WGLLM_CLI_H
#define WGLLM_CLI_H
#include "cli_file.h"
#include "cli_open.h"
#include "cli_options.h"
#include "cli_progress.h"
#include "wgllm.h"
#include <signal.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

/* ---------- run and chat (cli_run.c, cli_chat.c) ---------- */
typedef struct cli_gen {
  cli_common c;
  const char *prompt; /* -p TEXT, -f FILE or the operands (run); the first message (chat) */
  const char *system; /* -sys TEXT or -sysf FILE */
  const char **stop;  /* --stop / -r, as many as given */
  size_t n_stop;
  int32_t *bias_ids; /* -l / --logit-bias TOKEN(+|-)BIAS, as many as given (gp.logit_bias_ids, gp.logit_bias) */
  float *bias;
  size_t n_bias;
  wgllm_generate_params gp; /* the CLI's defaults (repeat penalty 1) and the options */
  long long n_predict;      /* -n (-1: until the context is full) */
  int seed_given;           /* -s other than -1; else a random seed */
  int stats, ignore_eos, no_display_prompt, conversation, single_turn;
  int no_context_shift;   /* --no-context-shift: a reply stops at the context's end, chat keeps every message (a
                             conversation past the context fails); --keep N is gp.n_keep */
  int spec_lookup;        /* --spec-lookup */
  uint32_t draft_max;     /* --draft-max N (0: not given) */
  const char *draft_path; /* -md PATH */
  wgllm_model *draft;     /* loaded from it (cli_gen_open_draft), freed by cli_gen_free */
  /* --grammar, --grammar-file, -j, -jf: the option given, the grammar's kind (wgllm_grammar_kind) and text, compiled
     by cli_gen_open_draft into grammar (gp.grammar), freed by cli_gen_free */
  const char *grammar_opt, *grammar_text;
  int grammar_kind, grammar_is_file;
  wgllm_grammar *grammar;
  char *owned[4]; /* what -f, -sysf and the operands read or joined */
} cli_gen;
/* Whether replies shift the context (gp.context_shift): on unless --no-context-shift, or -n -1 (a reply up to the
   context's end). */
int cli_context_shift(const cli_gen *g);
/* wgllm chat, or wgllm run -cnv, with the parsed options; returns the exit status */
int cli_chat_main(cli_gen *g);
/* the summary line on stderr: "[5 prompt tokens (0 cached) in ..., 120 generated in ..., stop: ...]", with
   "on ADAPTER" before the "]" when adapter is not NULL */
void cli_print_stats(const wgllm_generate_stats *st, const char *adapter);
/* Parses the options of run (cmd CLI_CMD_RUN) or chat (CLI_CMD_CHAT) into g: returns 0, or -1 after --help was
   printed, or the exit status of a usage error. The seed is random unless -s S. */
int cli_gen_parse(unsigned cmd, int argc, char **argv, cli_gen *g);
void cli_gen_free(cli_gen *g);
/* The options that need the model: the grammar of --grammar/-j compiled for m (gp.grammar); -md PATH: loads the
   draft model for m into g (gp.draft_model); with it or --spec-lookup, checks that m can speculate
   (wgllm_model_can_speculate: exit 2 naming why, before any text). 0, or the exit status after saying why. */
int cli_gen_open_draft(cli_gen *g, wgllm_model *m);
/* -v: the seed and the sampling settings on stderr */
void cli_verbose_sampling(const cli_gen *g);
/* Ctrl-C while cli_busy (a load, a reply): sets cli_interrupted, which stops it; a second one, or one while not
   busy (chat between replies), ends the program (exit 130). cli_catch_sigint sets cli_busy. */
void cli_catch_sigint(void);
extern volatile sig_atomic_t cli_busy;

/* ---------- subcommands ---------- */
int cli_info(int argc, char **argv);
int cli_logits(int argc, char **argv);
int cli_run(int argc, char **argv);
int cli_chat(int argc, char **argv);
int cli_tokenize(int argc, char **argv);
int cli_perplexity(int argc, char **argv);
int cli_embed(int argc, char **argv);
/* `wgllm bench ARGS`: runs wgllm-bench ARGS, the developer program beside this one (it works on the internal layers,
   which this program does not link): cli_bench.c execs it; in the wasm build web/cli_web.c asks the host to run
   wgllm-bench.wasm. self: this program's argv[0]. */
int cli_bench(int argc, char **argv, const char *self);

#endif
