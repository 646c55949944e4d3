/* The one option parser of the command-line programs (wgllm's commands, wgllm serve, wgllm-bench: getopt_long over
   tables of options), the options every model command shares, and the parsing of option values. */
#ifndef WGLLM_CLI_OPTIONS_H
#define WGLLM_CLI_OPTIONS_H
#include "wgllm.h"
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

/* ---------- the option parser ---------- */
/* The commands an option belongs to (cli_opt.cmds): an option outside the command's set is unknown there. */
enum {
  CLI_CMD_RUN = 1u << 0,
  CLI_CMD_CHAT = 1u << 1,
  CLI_CMD_TOKENIZE = 1u << 2,
  CLI_CMD_LOGITS = 1u << 3,
  CLI_CMD_INFO = 1u << 4,
  CLI_CMD_BENCH = 1u << 5,
  CLI_CMD_SERVE = 1u << 6,
  CLI_CMD_PERPLEXITY = 1u << 7,
  CLI_CMD_EMBED = 1u << 8,
  CLI_CMD_GEN = CLI_CMD_RUN | CLI_CMD_CHAT,
  /* the commands that make sessions through the public API (wgllm-bench works on the internal layers) */
  CLI_CMD_SESSION = CLI_CMD_RUN | CLI_CMD_CHAT | CLI_CMD_LOGITS | CLI_CMD_SERVE | CLI_CMD_PERPLEXITY | CLI_CMD_EMBED,
  CLI_CMD_MODEL = CLI_CMD_SESSION | CLI_CMD_BENCH, /* load weights */
  CLI_CMD_ALL = 0x1ff
};

/* What an option takes: nothing, text, an integer or a number within [lo, hi], or one of the choices in meta. */
typedef enum cli_type { CLI_FLAG, CLI_TEXT, CLI_INT, CLI_FLOAT, CLI_CHOICE } cli_type;

typedef struct cli_opt {
  int key;           /* handed to the command's handler: the short letter, or 256..511 (cli_common_opts), 512 up (a
                        command's own); unique over the tables a command parses */
  const char *names; /* spellings, space separated: "-c --ctx-size --ctx"; a single-dash name of more than one
                        letter ("-sys") is a long name the parser also takes with one dash (see cli_parse) */
  cli_type type;
  const char *meta; /* the value in --help ("N", "PATH"); for CLI_CHOICE the choices, "f32|f16" */
  double lo, hi;    /* CLI_INT / CLI_FLOAT: the accepted range, stated in --help */
  int lo_open;      /* CLI_FLOAT: lo itself is refused (a value greater than lo) */
  unsigned cmds;    /* CLI_CMD_* bits */
  const char *help; /* one line for --help (the range is appended) */
} cli_opt;          /* a key may have entries for different commands (another help line): a command takes one of them */

typedef struct cli_value {
  const char *text; /* the value as given (NULL for a flag) */
  long long i;      /* CLI_INT */
  double f;         /* CLI_FLOAT */
  int choice;       /* CLI_CHOICE: index into the choices */
  const char *name; /* the spelling the user gave ("--ctx-size", "-c"), for messages */
} cli_value;

/* Called for each option in command-line order; returns 0, or an exit status that ends the parse. */
typedef int (*cli_opt_fn)(void *user, int key, const cli_value *v);

/* Parses argv[1..argc) with glibc getopt_long: "--name value", "--name=value", "-x value", "-xvalue",
   options and operands in any order, "--" ends the options; long names are taken whole (getopt_long's
   abbreviations are refused, with the names they could mean: "--prompt" is not --prompt-ids). The
   single-dash long names of the tables ("-sys", "-cnv", "-ub", ...: llama.cpp's spellings) are mapped to their
   "--" form before getopt_long sees them, when an argument is exactly that name (so "-sys" is never "-s ys");
   option values are never mapped. tables: NULL-terminated list of tables, each ended by an entry with
   names == NULL; only the entries whose cmds include `cmd` are options. Values are checked against their type
   and range before fn sees them. Returns 0 with the operands (in order) in *operands (malloc'd, free it;
   the strings are argv's), or the exit status: 2 for a usage error (said on stderr as "PROG: ..."), or fn's. */
int cli_parse(const char *prog, unsigned cmd, const cli_opt *const *tables, int argc, char **argv, cli_opt_fn fn,
              void *user, char ***operands, int *n_operands);
/* The options of `cmd` in the tables, one or two lines each, with their ranges. */
void cli_print_options(FILE *f, unsigned cmd, const cli_opt *const *tables);

/* ---------- options every model command shares ---------- */
typedef struct cli_common {
  const char *model;              /* -m PATH */
  const char *weights;            /* --weights native|q4[:G] */
  const char *adapter;            /* --adapter NAME */
  int kv_f16;                     /* --kv f16 */
  int no_f16;                     /* --no-f16: do not request shader-f16 */
  uint32_t ctx;                   /* -c N (0: the command's default) */
  uint32_t prefill_chunk;         /* -ub N: tokens a prefill pass (0: the engine's choice) */
  const char *toggles;            /* --dawn-toggles a,b: Dawn device toggles (for measurements; wgllm-bench) */
  int unfused;                    /* --unfused: decode through the plain per-op path (comparisons) */
  int attn_grid;                  /* --attn-grid worst|indirect (1: indirect) */
  const char *chat_template;      /* --chat-template NAME */
  const char *chat_template_file; /* --chat-template-file FILE: read when the model is opened */
  uint64_t max_binding;           /* --max-binding BYTES: split weights over it (0: the device's limit) */
  int no_batch;                   /* --no-batch (serve): running requests decoded one after another, not batched */
  wgllm_precision precision;      /* --precision default|exact|fast (not bench) */
  int no_prefill_progress; /* cli_open's sessions show no "prompt: N/M tokens" line (the command shows its own) */
  int verbose;             /* -v */
  int help;                /* -h: the command prints its usage */
  char ignored[4][40];     /* -t / -ngl / -fa as given: accepted for llama.cpp compatibility, noted with -v */
  int n_ignored;
} cli_common;

/* The options above (wgllm_cli_common_opts: -m, --weights, --kv, -c, -ub, --adapter, --no-f16, --unfused,
   --attn-grid, --max-binding, --precision (not bench), --dawn-toggles (bench only), -t, -ngl, -fa (ignored), -hf
   (refused: no downloads), --jinja (accepted), --chat-template-file, -v, -h), and their
   handler: returns 1 when the key is not one of them, else 0 or an exit status. */
extern const cli_opt cli_common_opts[];
int cli_common_set(cli_common *c, int key, const cli_value *v);

/* ---------- option values ---------- */
/* "1,2,3" into *out (malloc'd) and *n; -1 when it is not a list of non-negative ids */
int cli_parse_ids(const char *s, int32_t **out, uint32_t *n);
/* --weights native|q4[:GROUP] into the model params; prints what is wrong and returns non-zero */
int cli_parse_weights(const char *s, wgllm_model_params *mp);
#endif
