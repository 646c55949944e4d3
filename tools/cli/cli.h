/* Subcommands of the wgllm CLI, one file each, and the helpers they share: one option parser for every
   command (getopt_long over tables of options), the model and session options, progress lines on a terminal.
   The user commands use only the public API (include/wgllm.h); `wgllm bench` runs the separate developer
   program wgllm-bench (bench/), which parses its options with the same tables and parser (cli_util.c). */
#ifndef WGLLM_CLI_H
#define WGLLM_CLI_H
#include "wgllm.h"
#include <signal.h>
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
  CLI_CMD_GEN = CLI_CMD_RUN | CLI_CMD_CHAT,
  /* the commands that make sessions through the public API (wgllm-bench works on the internal layers) */
  CLI_CMD_SESSION = CLI_CMD_RUN | CLI_CMD_CHAT | CLI_CMD_LOGITS | CLI_CMD_SERVE | CLI_CMD_PERPLEXITY,
  CLI_CMD_MODEL = CLI_CMD_SESSION | CLI_CMD_BENCH, /* load weights */
  CLI_CMD_ALL = 0xff
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
  const char *model;         /* -m PATH */
  const char *weights;       /* --weights native|q4[:G] */
  const char *adapter;       /* --adapter NAME */
  int kv_f16;                /* --kv f16 */
  int no_f16;                /* --no-f16: do not request shader-f16 */
  uint32_t ctx;              /* -c N (0: the command's default) */
  uint32_t prefill_chunk;    /* -ub N: tokens a prefill pass (0: the engine's choice) */
  const char *toggles;       /* --dawn-toggles a,b: Dawn device toggles (for measurements; wgllm-bench) */
  int unfused;               /* --unfused: decode through the plain per-op path (comparisons) */
  int attn_grid;             /* --attn-grid worst|indirect (1: indirect) */
  const char *chat_template; /* --chat-template NAME */
  uint64_t max_binding;      /* --max-binding BYTES: split weights over it (0: the device's limit) */
  int no_batch;              /* --no-batch (serve): running requests decoded one after another, not batched */
  wgllm_precision precision; /* --precision default|exact|fast (not bench) */
  int no_prefill_progress;   /* cli_open's sessions show no "prompt: N/M tokens" line (the command shows its own) */
  int verbose;               /* -v */
  int help;                  /* -h: the command prints its usage */
  char ignored[4][40];       /* -t / -ngl as given: accepted for llama.cpp compatibility, noted with -v */
  int n_ignored;
} cli_common;

/* The options above (wgllm_cli_common_opts: -m, --weights, --kv, -c, -ub, --adapter, --no-f16, --unfused,
   --attn-grid, --max-binding, --precision (not bench), --dawn-toggles (bench only), -t, -ngl, -v, -h), and their
   handler: returns 1 when the key is not one of them, else 0 or an exit status. */
extern const cli_opt cli_common_opts[];
int cli_common_set(cli_common *c, int key, const cli_value *v);

/* ---------- helpers ---------- */
int cli_parse_ids(const char *s, int32_t **out, uint32_t *n);
/* --weights native|q4[:GROUP] into the model params; prints what is wrong and returns non-zero */
int cli_parse_weights(const char *s, wgllm_model_params *mp);
/* The offset of the first byte of s that is not valid UTF-8 (overlong, surrogate, past U+10FFFF, cut short),
   or -1 when all of it is. */
long cli_utf8_invalid_at(const char *s);
/* A whole file ("-": standard input) as a NUL-terminated string (malloc'd), its length in *len (may be NULL);
   NULL with errno set on failure. */
char *cli_read_file(const char *path, size_t *len);

/* A progress line on stderr, only when stderr is a terminal: "\rloading model: 40% (1.2 s)", rewritten in
   place at most every 0.1 s and cleared by cli_progress_end. */
typedef struct cli_progress {
  int on, shown;
  double t0, last;
} cli_progress;
void cli_progress_begin(cli_progress *p);
void cli_progress_show(cli_progress *p, int force, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
void cli_progress_end(cli_progress *p);
double cli_now(void); /* monotonic seconds */

/* Set by a command's SIGINT handler (chat, run: Ctrl-C); the load progress stops a load when it is set. */
extern volatile sig_atomic_t cli_interrupted;

/* The model (without its tokenizer when no_tokenizer) and a session (when s != NULL) through the public API,
   with the common options: progress of the load and of long prompts on a terminal, log messages (warnings;
   everything with -v) on stderr. The session's context: c->ctx, else default_ctx, else the library's default, the
   model's trained length (the library falls back by halves to 4096 when that does not fit the device, and warns
   about a context beyond the trained length, both through the log); *ctx (may be NULL) gets it. Prints the error
   and returns non-zero on failure (130 when interrupted). */
int cli_open(const cli_common *c, uint32_t default_ctx, wgllm_model **m, wgllm_session **s, uint32_t *ctx,
             int no_tokenizer);
/* Session parameters with the common options applied (-ub, --kv, --unfused, --attn-grid, --precision); the
   context and the prefill callback are the caller's. */
wgllm_session_params cli_session_params(const cli_common *c);
/* The prefill progress of cli_open's sessions: "prompt: 0/N tokens" before a prompt of n tokens is evaluated
   (large ones only; the session's callback then counts the passes). */
void cli_prefill_begin(uint32_t n);

/* ---------- run and chat (cli_run.c, cli_chat.c) ---------- */
typedef struct cli_gen {
  cli_common c;
  const char *prompt; /* -p TEXT, -f FILE or the operands (run); the first message (chat) */
  const char *system; /* -sys TEXT or -sysf FILE */
  const char **stop;  /* --stop / -r, as many as given */
  size_t n_stop;
  wgllm_generate_params gp; /* the CLI's defaults (repeat penalty 1) and the options */
  long long n_predict;      /* -n (-1: until the context is full) */
  int seed_given;           /* -s other than -1; else a random seed */
  int stats, ignore_eos, no_display_prompt, conversation, single_turn;
  char *owned[4]; /* what -f, -sysf and the operands read or joined */
} cli_gen;
/* wgllm chat, or wgllm run -cnv, with the parsed options; returns the exit status */
int cli_chat_main(cli_gen *g);
/* the summary line on stderr: "[5 prompt tokens (0 cached) in ..., 120 generated in ..., stop: ...]", with
   "on ADAPTER" before the "]" when adapter is not NULL */
void cli_print_stats(const wgllm_generate_stats *st, const char *adapter);
/* Parses the options of run (cmd CLI_CMD_RUN) or chat (CLI_CMD_CHAT) into g: returns 0, or -1 after --help was
   printed, or the exit status of a usage error. The seed is random unless -s S. */
int cli_gen_parse(unsigned cmd, int argc, char **argv, cli_gen *g);
void cli_gen_free(cli_gen *g);
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
int cli_serve(int argc, char **argv); /* tools/serve/serve_main.c (the wasm build: web/cli_web.c) */
/* `wgllm bench ARGS`: runs wgllm-bench ARGS, the developer program beside this one (it works on the internal layers,
   which this program does not link): cli_bench.c execs it; in the wasm build web/cli_web.c asks the host to run
   wgllm-bench.wasm. self: this program's argv[0]. */
int cli_bench(int argc, char **argv, const char *self);

/* ---------- chat history as JSON (cli_json.c) ---------- */
/* Writes the messages as a JSON array of {"role": ..., "content": ...} objects (transformers' and OpenAI's
   "messages"); returns 0, or -1 with errno set. */
int cli_json_save(const char *path, const wgllm_message *msgs, size_t n);
/* Reads such an array (or an object with a "messages" array; other keys are skipped); roles must be system,
   user or assistant. *msgs and each role and content are malloc'd (cli_json_free). Returns 0, or -1 with the
   reason in err. */
int cli_json_load(const char *path, wgllm_message **msgs, size_t *n, char *err, size_t errlen);
void cli_json_free(wgllm_message *msgs, size_t n);
#endif
