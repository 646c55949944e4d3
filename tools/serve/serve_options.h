/* `wgllm serve`'s options, shared by its transports (serve_main.c natively, serve_wasm.c for the Node server): the
   option table and its parser (tools/common/'s, as the CLI's, so --help, the flags and their errors are the same
   everywhere), the
   model's opening, and the scheduler's and request handler's configurations that follow from them. */
#ifndef WGLLM_SERVE_OPTIONS_H
#define WGLLM_SERVE_OPTIONS_H
#include "cli_options.h"
#include "serve_handler.h"

typedef struct serve_options {
  cli_common c;
  const char *host, *api_key, *api_key_file, *alias, *web;
  long long port, parallel, queue, max_body, max_tokens, timeout, max_connections;
  long long header_timeout, body_timeout, max_connections_per_ip, max_body_total;
  int no_warmup;
  int no_context_shift;                             /* --no-context-shift */
  int32_t keep;                                     /* --keep N: a reply's context shift keeps N prompt tokens */
  int parse_special_in_content;                     /* --parse-special-in-content */
  int kv_pool_off;                                  /* --kv-pool off: each session its own cache */
  unsigned long long kv_pool_tokens, kv_pool_bytes; /* --kv-pool N or N{MiB,GiB} (0: the default) */
  const char *draft_path;                           /* -md PATH: the draft model */
  int spec_lookup;      /* --spec-lookup: requests speculate with prompt lookup by default */
  long long draft_max;  /* --draft-max N (0: not given) */
  wgllm_model *draft;   /* opened from draft_path by serve_options_open (and again by its reopen), freed by _free */
  char *key_owned;      /* --api-key-file's key */
  char *hosts_text;     /* --allowed-hosts, cut into allowed_hosts */
  char **allowed_hosts; /* n_allowed_hosts names */
  size_t n_allowed_hosts;
  char *origins_text;     /* --cors, cut into allowed_origins */
  char **allowed_origins; /* n_allowed_origins origins, or "*" */
  size_t n_allowed_origins;
  /* the models served (-m repeated, --models-dir): paths[0] the default (c.model), names their aliases (--alias in
     -m's order, else the file or directory name without .gguf), n_models of them */
  char **model_paths, **model_names;
  size_t n_models, n_aliases;
  size_t n_cli_models; /* of them, those -m gave (the paths after them, --models-dir's, and every name are owned) */
  char **aliases;      /* --alias values given, in order */
  const char *models_dir;
  long long models_max;             /* --models-max: models loaded at once (default 4) */
  unsigned long long models_memory; /* --models-memory: bytes of the loaded models on the GPU (0: no budget) */
  /* after serve_options_configure */
  uint32_t ctx;
  char model_id[256];
  serve_sched_config sched;
  serve_limits limits; /* the default model's requests' (handler.limits are wider where several models are served) */
  serve_handler_config handler;
} serve_options;

/* Parses argv (argv[0] is the first option, as serve_command gets them) into *o: the defaults, then the options,
   checked (--web a directory, --api-key-file read). Returns -1 to go on, else the exit status: 0 after --help
   (printed on stdout), 2 after a usage error (said on stderr). */
int serve_options_parse(int argc, char **argv, serve_options *o);
/* Opens the model (-m and the common options) and the draft model (-md, checked against it; o->draft), and checks
   that a default of speculation (-md, --spec-lookup) is one the model can run; returns the exit status (0: open),
   the reason said. */
int serve_options_open(serve_options *o, wgllm_model **m);
/* After the model opened: the context, the model's id, o->sched and o->handler. Returns 0, or the exit status
   (2: --max-tokens past the context, said on stderr). */
int serve_options_configure(serve_options *o, wgllm_model *m);
/* A model's scheduler configuration and limits under the options (the default model's with its draft; another's
   without: -md is checked against the default model alone), its context in *ctx. 0, or -1 with the reason in err
   (--max-tokens past the context, --kv-pool under one context). */
int serve_options_model_config(serve_options *o, wgllm_model *m, int is_default, serve_sched_config *sc,
                               serve_limits *lim, uint32_t *ctx, char *err, size_t errlen);
/* The scheduler's reopen (serve_sched_config.reopen, user: the options): the model opened again as at the start,
   after a device loss. 0, or -1 with the reason in err. */
int serve_options_reopen(void *user, wgllm_model **m, char *err, size_t errlen);
/* "listening on http://HOST:PORT (model ID, N sessions of C tokens, precision P, on ADAPTER)" */
void serve_options_banner(const serve_options *o, wgllm_model *m, unsigned port, char *out, size_t cap);
void serve_options_free(serve_options *o);
#endif
