/* `wgllm serve`'s options: the table (the CLI's format, printed by --help), their parsing with tools/common/'s
   parser, the checks that need no model, and what follows once the model is open (the context, the model's id, the
   scheduler's and handler's configurations). serve_main.c (native) and serve_wasm.c (the Node server) share it. */
#include "serve_options.h"
#include "cli_file.h"
#include "cli_open.h"
#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

enum {
  K_HOST = 512,
  K_PORT,
  K_PARALLEL,
  K_QUEUE,
  K_API_KEY,
  K_API_KEY_FILE,
  K_ALIAS,
  K_MAX_BODY,
  K_MAX_TOKENS,
  K_TIMEOUT,
  K_MAX_CONNECTIONS,
  K_TEMPLATE,
  K_NO_WARMUP,
  K_WEB,
  K_ALLOWED_HOSTS,
  K_HEADER_TIMEOUT,
  K_BODY_TIMEOUT,
  K_MAX_PER_IP,
  K_PARSE_SPECIAL_IN_CONTENT,
  K_MAX_BODY_TOTAL,
  K_KV_POOL,
  K_MODEL_DRAFT,
  K_SPEC_LOOKUP,
  K_DRAFT_MAX,
  K_CORS,
  K_NO_CONTEXT_SHIFT,
  K_MODELS_DIR,
  K_MODELS_MAX,
  K_MODELS_MEMORY,
  K_KEEP
};

static const cli_opt serve_opts[] = {
    {K_HOST, "--host", CLI_TEXT, "ADDR", 0, 0, 0, CLI_CMD_SERVE,
     "address to listen on (default 127.0.0.1; 0.0.0.0 or :: for all)"},
    {K_PORT, "--port", CLI_INT, "N", 0, 65535, 0, CLI_CMD_SERVE, "TCP port (default 8080; 0: any free port, printed)"},
    {K_PARALLEL, "-np --parallel", CLI_INT, "N", 1, 256, 0, CLI_CMD_SERVE,
     "requests generating at once, each on its own session (default 4)"},
    {K_QUEUE, "--queue", CLI_INT, "N", 0, 65536, 0, CLI_CMD_SERVE,
     "requests that may wait for a session; more are answered 503 (default 64)"},
    {K_API_KEY, "--api-key", CLI_TEXT, "KEY", 0, 0, 0, CLI_CMD_SERVE,
     "require 'Authorization: Bearer KEY' (every endpoint but /health)"},
    {K_API_KEY_FILE, "--api-key-file", CLI_TEXT, "FILE", 0, 0, 0, CLI_CMD_SERVE,
     "the API key from FILE (its first line), kept out of the process list"},
    {K_ALIAS, "-a --alias", CLI_TEXT, "NAME", 0, 0, 0, CLI_CMD_SERVE,
     "the model's id in /v1/models and answers (default: the file or directory name); with -m given more than "
     "once, the k-th --alias names the k-th model"},
    {K_MODELS_DIR, "--models-dir", CLI_TEXT, "DIR", 0, 0, 0, CLI_CMD_SERVE,
     "also serve every model in DIR (.gguf files, Hugging Face directories), named by file name without .gguf; "
     "loaded when a request names one (without -m, the first by name is the default)"},
    {K_MODELS_MAX, "--models-max", CLI_INT, "N", 1, 256, 0, CLI_CMD_SERVE,
     "models loaded at once; loading another unloads the least recently used idle one (default 4)"},
    {K_MODELS_MEMORY, "--models-memory", CLI_TEXT, "NMiB|NGiB", 0, 0, 0, CLI_CMD_SERVE,
     "GPU memory the loaded models may take in all (weights and KV pools); loading past it unloads the least "
     "recently used idle ones (default: no budget, but a load the device refuses still unloads one and retries)"},
    {K_MAX_BODY, "--max-body", CLI_INT, "BYTES", 1024, 1 << 30, 0, CLI_CMD_SERVE,
     "largest request body; more is answered 413 (default 8388608)"},
    {K_MAX_BODY_TOTAL, "--max-body-total", CLI_INT, "BYTES", 1024, 1LL << 40, 0, CLI_CMD_SERVE,
     "request bodies being received or parsed at once, in all; more is answered 503 (default 268435456)"},
    {K_MAX_TOKENS, "-n --n-predict --max-tokens", CLI_INT, "N", 1, 1 << 24, 0, CLI_CMD_SERVE,
     "most tokens a request may generate, and chat's default (default: the context)"},
    {K_TIMEOUT, "--timeout", CLI_INT, "S", 1, 86400, 0, CLI_CMD_SERVE,
     "close a connection idle this many seconds (default 60)"},
    {K_HEADER_TIMEOUT, "--header-timeout", CLI_INT, "S", 1, 86400, 0, CLI_CMD_SERVE,
     "close a connection whose request head has not all come S seconds after it began (default 10)"},
    {K_BODY_TIMEOUT, "--body-timeout", CLI_INT, "S", 1, 86400, 0, CLI_CMD_SERVE,
     "close a connection whose request body has not all come S seconds after its head (default 60)"},
    {K_MAX_CONNECTIONS, "--max-connections", CLI_INT, "N", 1, 65536, 0, CLI_CMD_SERVE,
     "connections open at once; more are closed at accept (default 1024)"},
    {K_MAX_PER_IP, "--max-connections-per-ip", CLI_INT, "N", 1, 65536, 0, CLI_CMD_SERVE,
     "connections open at once from one address; more are closed at accept (default 128)"},
    {K_TEMPLATE, "--chat-template --template", CLI_TEXT, "NAME", 0, 0, 0, CLI_CMD_SERVE,
     "llama3, chatml, gemma, llama2 or none (default: the model's)"},
    {K_PARSE_SPECIAL_IN_CONTENT, "--parse-special-in-content", CLI_FLAG, NULL, 0, 0, 0, CLI_CMD_SERVE,
     "chat: special-token text (\"<|eot_id|>\") in messages' content becomes its token (default: it is text; a "
     "request's \"parse_special\" says either)"},
    {K_KV_POOL, "--kv-pool", CLI_TEXT, "TOKENS|NMiB|NGiB|off", 0, 0, 0, CLI_CMD_SERVE,
     "the sessions' KV caches in one paged pool of this size, blocks taken as requests grow, prompt prefixes shared "
     "(default: every session's whole context, at most 70% of the device memory left; off: a cache a session)"},
    {K_MODEL_DRAFT, "-md --model-draft", CLI_TEXT, "PATH", 0, 0, 0, CLI_CMD_SERVE,
     "speculative decoding with this draft model (same tokenizer), loaded once; requests use it unless they say "
     "\"speculative.draft\": false (it runs while one request decodes; several share the batched step)"},
    {K_SPEC_LOOKUP, "--spec-lookup", CLI_FLAG, NULL, 0, 0, 0, CLI_CMD_SERVE,
     "speculative decoding with prompt lookup by default (a request's \"speculative.lookup\" says either)"},
    {K_DRAFT_MAX, "--draft-max --draft --draft-n", CLI_INT, "N", 1, 15, 0, CLI_CMD_SERVE,
     "drafts a speculative step at most by default (default 7; a request's \"speculative.n_max\", 0 for none)"},
    {K_NO_WARMUP, "--no-warmup", CLI_FLAG, NULL, 0, 0, 0, CLI_CMD_SERVE,
     "listen at once, without first building the GPU pipelines (the first requests then wait for them)"},
    {K_WEB, "--web", CLI_TEXT, "DIR", 0, 0, 0, CLI_CMD_SERVE,
     "also serve DIR's files at / (make web's build-web: the demo page running the engine in the browser)"},
    {K_ALLOWED_HOSTS, "--allowed-hosts", CLI_TEXT, "H1,H2", 0, 0, 0, CLI_CMD_SERVE,
     "Host names answered besides localhost, 127.0.0.1 and [::1] (others are 403 while listening on loopback; "
     "given, the check holds on any address)"},
    {K_NO_CONTEXT_SHIFT, "--no-context-shift", CLI_FLAG, NULL, 0, 0, 0, CLI_CMD_SERVE,
     "a chat past the context is 400 (default: its oldest messages after the system ones are dropped to fit)"},
    {K_KEEP, "--keep", CLI_INT, "N", -1, 2147483647, 0, CLI_CMD_SERVE,
     "a reply that reaches the context's end keeps the first N tokens of its prompt (-1: all of it; default 0: the "
     "BOS alone), drops half of the rest and goes on (--no-context-shift: it stops there, finish_reason \"length\")"},
    {K_CORS, "--cors", CLI_TEXT, "ORIGINS", 0, 0, 0, CLI_CMD_SERVE,
     "web pages of these origins (scheme://host[:port], comma-separated; * for any) may call the API from a browser: "
     "preflights answered, Access-Control-Allow-Origin given (default: only the server's own origin)"},
    {0, NULL, 0, NULL, 0, 0, 0, 0, NULL}};

static const cli_opt *const serve_tables[] = {serve_opts, cli_common_opts, NULL};

/* A comma-separated list of option name's value into *buf (a copy, cut) and *items (*n of them, spaces around each
   trimmed, empty ones skipped), each checked by ok (NULL: it is not one, saying what one is: `what`). Returns 0, or
   2 after saying what is wrong. */
static int split_list(const char *name, const char *text, int (*ok)(const char *item), const char *what, char **buf,
                      char ***items, size_t *n) {
  free(*buf);
  free(*items);
  *n = 0;
  *buf = strdup(text);
  *items = calloc(strlen(text) / 2 + 2, sizeof **items);
  if (!*buf || !*items) {
    fprintf(stderr, "wgllm serve: out of memory\n");
    return 2;
  }
  for (char *save = NULL, *t = strtok_r(*buf, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
    t += strspn(t, " ");
    t[strcspn(t, " ")] = 0;
    if (!t[0]) continue;
    if (!ok(t)) {
      fprintf(stderr, "wgllm serve: %s: '%s' is not %s\n", name, t, what);
      return 2;
    }
    (*items)[(*n)++] = t;
  }
  if (!*n) {
    fprintf(stderr, "wgllm serve: %s: none given\n", name);
    return 2;
  }
  return 0;
}

/* --allowed-hosts: a name without scheme, path or port ("[::1]" with its brackets) */
static int host_name(const char *t) { return !strchr(t, '/') && (t[0] == '[' || !strchr(t, ':')); }

/* --cors: an origin as a browser sends it (scheme://host[:port], no path), or * */
static int origin(const char *t) {
  const char *host = strstr(t, "://");
  return !strcmp(t, "*") || (host && host != t && host[3] && !strchr(host + 3, '/'));
}

/* appends text to a growing array of strings (they are argv's or a dirent's copy) */
static int push(char ***list, size_t *n, char *text) {
  char **nl = realloc(*list, (*n + 1) * sizeof *nl);
  if (!nl) {
    fprintf(stderr, "wgllm serve: out of memory\n");
    return 2;
  }
  nl[(*n)++] = text;
  *list = nl;
  return 0;
}

/* "N", "NMiB" or "NGiB" (N a positive decimal): *n and the shift of the unit (0, 20 or 30), -1 when malformed or
   the amount passes 1 PiB */
static int parse_amount(const char *t, unsigned long long *n) {
  char *end = NULL;
  errno = 0;
  *n = strtoull(t, &end, 10);
  int shift = !strcmp(end, "MiB") ? 20 : !strcmp(end, "GiB") ? 30 : *end ? -1 : 0;
  if (errno || end == t || !isdigit((unsigned char)t[0]) || !*n || shift < 0 || *n > (1ull << 50) >> shift) return -1;
  return shift;
}

static int on_opt(void *user, int key, const cli_value *v) {
  serve_options *a = user;
  if (key == 'm') {
    if (push(&a->model_paths, &a->n_models, (char *)v->text)) return 2;
    a->n_cli_models = a->n_models;
  }
  int r = cli_common_set(&a->c, key, v);
  if (r != 1) return r;
  switch (key) {
  case K_HOST:
    a->host = v->text;
    return 0;
  case K_PORT:
    a->port = v->i;
    return 0;
  case K_MODEL_DRAFT:
    a->draft_path = v->text;
    return 0;
  case K_SPEC_LOOKUP:
    a->spec_lookup = 1;
    return 0;
  case K_DRAFT_MAX:
    a->draft_max = v->i;
    return 0;
  case K_PARALLEL:
    a->parallel = v->i;
    return 0;
  case K_QUEUE:
    a->queue = v->i;
    return 0;
  case K_API_KEY:
    if (!v->text[0]) {
      fprintf(stderr, "wgllm serve: %s: the key is empty\n", v->name);
      return 2;
    }
    a->api_key = v->text;
    return 0;
  case K_API_KEY_FILE:
    a->api_key_file = v->text;
    return 0;
  case K_ALIAS:
    if (!v->text[0]) {
      fprintf(stderr, "wgllm serve: %s: the name is empty\n", v->name);
      return 2;
    }
    a->alias = v->text;
    return push(&a->aliases, &a->n_aliases, (char *)v->text);
  case K_MODELS_DIR:
    a->models_dir = v->text;
    return 0;
  case K_MODELS_MAX:
    a->models_max = v->i;
    return 0;
  case K_MODELS_MEMORY: {
    unsigned long long n;
    int shift = parse_amount(v->text, &n);
    if (shift != 20 && shift != 30) {
      fprintf(stderr, "wgllm serve: %s %s: expected NMiB or NGiB (at most 1 PiB)\n", v->name, v->text);
      return 2;
    }
    a->models_memory = n << shift;
    return 0;
  }
  case K_MAX_BODY:
    a->max_body = v->i;
    return 0;
  case K_MAX_TOKENS:
    a->max_tokens = v->i;
    return 0;
  case K_TIMEOUT:
    a->timeout = v->i;
    return 0;
  case K_MAX_CONNECTIONS:
    a->max_connections = v->i;
    return 0;
  case K_HEADER_TIMEOUT:
    a->header_timeout = v->i;
    return 0;
  case K_BODY_TIMEOUT:
    a->body_timeout = v->i;
    return 0;
  case K_MAX_BODY_TOTAL:
    a->max_body_total = v->i;
    return 0;
  case K_MAX_PER_IP:
    a->max_connections_per_ip = v->i;
    return 0;
  case K_TEMPLATE:
    a->c.chat_template = v->text;
    return 0;
  case K_NO_WARMUP:
    a->no_warmup = 1;
    return 0;
  case K_NO_CONTEXT_SHIFT:
    a->no_context_shift = 1;
    return 0;
  case K_KEEP:
    a->keep = (int32_t)v->i;
    return 0;
  case K_KV_POOL: {
    if (!strcmp(v->text, "off")) {
      a->kv_pool_off = 1;
      return 0;
    }
    unsigned long long n;
    int shift = parse_amount(v->text, &n);
    if (shift < 0 || (!shift && n > UINT32_MAX / 2)) {
      fprintf(stderr,
              "wgllm serve: %s %s: expected a number of tokens (at most %u), NMiB, NGiB (at most 1 PiB) or off\n",
              v->name, v->text, UINT32_MAX / 2);
      return 2;
    }
    a->kv_pool_off = 0;
    a->kv_pool_tokens = shift ? 0 : n;
    a->kv_pool_bytes = shift ? n << shift : 0;
    return 0;
  }
  case K_PARSE_SPECIAL_IN_CONTENT:
    a->parse_special_in_content = 1;
    return 0;
  case K_WEB:
    a->web = v->text;
    return 0;
  case K_ALLOWED_HOSTS:
    return split_list(v->name, v->text, host_name, "a host name (no scheme, path or port)", &a->hosts_text,
                      &a->allowed_hosts, &a->n_allowed_hosts);
  case K_CORS:
    return split_list(v->name, v->text, origin, "an origin (scheme://host[:port], no path; or *)", &a->origins_text,
                      &a->allowed_origins, &a->n_allowed_origins);
  }
  return 2;
}

static void usage(FILE *f) {
  fprintf(f, "usage: wgllm serve -m PATH [--host 127.0.0.1] [--port 8080] [--parallel N] [-c N] [--api-key KEY]\n"
             "  An OpenAI-compatible server: POST /v1/chat/completions, /v1/completions (streaming or not),\n"
             "  /tokenize, /detokenize; GET /v1/models, /health, /props, /slots, /metrics; with --web DIR, DIR's files "
             "(the browser demo page).\n"
             "  Runs until SIGINT or SIGTERM. docs/SERVING.md\n");
  cli_print_options(f, CLI_CMD_SERVE, serve_tables);
}

/* the model's id: the last part of its path, without a .gguf suffix */
static void model_id(const char *path, char *out, size_t cap) {
  size_t n = strlen(path);
  while (n > 1 && path[n - 1] == '/')
    n--;
  size_t start = n;
  while (start > 0 && path[start - 1] != '/')
    start--;
  size_t len = n - start;
  if (len > 5 && !strncmp(path + start + len - 5, ".gguf", 5)) len -= 5;
  snprintf(out, cap, "%.*s", (int)len, path + start);
}

static int by_name(const void *x, const void *y) { return strcmp(*(char *const *)x, *(char *const *)y); }

/* --models-dir's models: its .gguf files and the directories holding a config.json, by name */
static int scan_models_dir(serve_options *a) {
  DIR *d = opendir(a->models_dir);
  if (!d) {
    fprintf(stderr, "wgllm serve: --models-dir %s: %s\n", a->models_dir, strerror(errno));
    return 2;
  }
  char **found = NULL;
  size_t n = 0;
  int rc = 0;
  for (struct dirent *e; !rc && (e = readdir(d));) {
    size_t len = strlen(e->d_name);
    if (e->d_name[0] == '.') continue;
    char *path = malloc(strlen(a->models_dir) + len + 16);
    if (!path) {
      rc = push(&found, &n, NULL);
      break;
    }
    sprintf(path, "%s/%s", a->models_dir, e->d_name);
    struct stat st;
    int keep = 0;
    if (!stat(path, &st) && S_ISREG(st.st_mode) && len > 5 && !strcmp(e->d_name + len - 5, ".gguf")) keep = 1;
    if (!keep && !stat(path, &st) && S_ISDIR(st.st_mode)) {
      sprintf(path, "%s/%s/config.json", a->models_dir, e->d_name);
      keep = !stat(path, &st) && S_ISREG(st.st_mode);
      sprintf(path, "%s/%s", a->models_dir, e->d_name);
    }
    if (keep)
      rc = push(&found, &n, path);
    else
      free(path);
  }
  closedir(d);
  if (!rc && !n) {
    fprintf(stderr, "wgllm serve: --models-dir %s: no .gguf file or Hugging Face directory (config.json) in it\n",
            a->models_dir);
    rc = 2;
  }
  if (n) qsort(found, n, sizeof *found, by_name);
  for (size_t i = 0; i < n; i++)
    if (rc || push(&a->model_paths, &a->n_models, found[i])) {
      free(found[i]);
      rc = 2;
    }
  free(found);
  return rc;
}

/* The models served: -m's, then --models-dir's; their names (--alias in order, else the path's), distinct. */
static int list_models(serve_options *a) {
  if (a->models_dir && scan_models_dir(a)) return 2;
  if (!a->n_models) return 0; /* opening says a model is needed */
  if (a->n_aliases > a->n_cli_models && (a->n_aliases > 1 || a->n_cli_models)) {
    fprintf(stderr, "wgllm serve: --alias is given %zu times for %zu models of -m (the k-th names the k-th)\n",
            a->n_aliases, a->n_cli_models);
    return 2;
  }
  if (!(a->model_names = calloc(a->n_models, sizeof *a->model_names))) {
    fprintf(stderr, "wgllm serve: out of memory\n");
    return 2;
  }
  for (size_t i = 0; i < a->n_models; i++) {
    char name[256];
    if (i < a->n_aliases)
      snprintf(name, sizeof name, "%s", a->aliases[i]);
    else
      model_id(a->model_paths[i], name, sizeof name);
    if (!(a->model_names[i] = strdup(name))) {
      fprintf(stderr, "wgllm serve: out of memory\n");
      return 2;
    }
    for (size_t k = 0; k < i; k++)
      if (!strcmp(a->model_names[k], name)) {
        fprintf(stderr, "wgllm serve: two models are named '%s' (%s and %s): name them with --alias\n", name,
                a->model_paths[k], a->model_paths[i]);
        return 2;
      }
  }
  a->c.model = a->model_paths[0]; /* the default */
  if (a->n_models > 1 && a->models_max < 2) {
    fprintf(stderr, "wgllm serve: --models-max %lld leaves no room for a model besides the default (%zu are served)\n",
            a->models_max, a->n_models);
    return 2;
  }
  return 0;
}

static char *read_key_file(const char *path) {
  char *text = cli_read_file(path, NULL);
  if (!text) {
    fprintf(stderr, "wgllm serve: --api-key-file %s: %s\n", path, strerror(errno));
    return NULL;
  }
  text[strcspn(text, "\r\n")] = 0;
  if (!text[0]) {
    fprintf(stderr, "wgllm serve: --api-key-file %s: the first line is empty\n", path);
    free(text);
    return NULL;
  }
  return text;
}

int serve_options_parse(int argc, char **argv, serve_options *a) {
  memset(a, 0, sizeof *a);
  a->host = "127.0.0.1";
  a->port = 8080;
  a->parallel = 4;
  a->queue = 64;
  a->max_body = 8 << 20;
  a->timeout = 60;
  a->max_connections = 1024;
  a->max_connections_per_ip = 128;
  a->max_body_total = 256 << 20;
  a->header_timeout = 10;
  a->body_timeout = 60;
  a->models_max = 4;
  char **ops;
  int n_ops;
  int rc = cli_parse("wgllm serve", CLI_CMD_SERVE, serve_tables, argc, argv, on_opt, a, &ops, &n_ops);
  if (rc) return rc;
  if (n_ops && !a->c.help) {
    fprintf(stderr, "wgllm serve: unexpected argument '%s' (see --help)\n", ops[0]);
    free(ops);
    return 2;
  }
  free(ops);
  if (a->c.help) {
    usage(stdout);
    return 0;
  }
  if (a->max_body_total < a->max_body) {
    fprintf(stderr, "wgllm serve: --max-body-total %lld is less than --max-body %lld\n", a->max_body_total,
            a->max_body);
    return 2;
  }
  if (list_models(a)) return 2;
  if (a->api_key && a->api_key_file) {
    fprintf(stderr, "wgllm serve: give --api-key or --api-key-file, not both\n");
    return 2;
  }
  struct stat web_st;
  if (a->web && (stat(a->web, &web_st) != 0 || !S_ISDIR(web_st.st_mode))) {
    fprintf(stderr, "wgllm serve: --web %s: not a directory (make web builds build-web)\n", a->web);
    return 2;
  }
  if (a->api_key_file && !(a->key_owned = read_key_file(a->api_key_file))) return 2;
  if (a->key_owned) a->api_key = a->key_owned;
  return -1;
}

int serve_options_open(serve_options *o, wgllm_model **m) {
  wgllm_model_free(o->draft); /* a reopen's: its sessions were freed with the model's */
  o->draft = NULL;
  int rc = cli_open(&o->c, 0, m, NULL, NULL, 0);
  if (!rc && o->draft_path) rc = cli_open_draft(&o->c, o->draft_path, *m, &o->draft);
  if (!rc && (o->draft || o->spec_lookup) && wgllm_model_can_speculate(*m)) {
    fprintf(stderr, "wgllm serve: %s: %s\n", o->draft ? "-md" : "--spec-lookup", wgllm_model_error(*m));
    rc = 2;
  }
  if (rc) {
    wgllm_model_free(o->draft);
    o->draft = NULL;
    wgllm_model_free(*m);
    *m = NULL;
  }
  return rc;
}

int serve_options_reopen(void *user, wgllm_model **m, char *err, size_t errlen) {
  serve_options *o = user;
  struct stat sb;
  if (stat(o->c.model, &sb) != 0) {
    snprintf(err, errlen, "-m %s: %s", o->c.model, strerror(errno));
    return -1;
  }
  if (!serve_options_open(o, m)) return 0;
  snprintf(err, errlen, "-m %s: %s", o->c.model, wgllm_last_error()[0] ? wgllm_last_error() : "it did not open");
  return -1;
}

int serve_options_model_config(serve_options *a, wgllm_model *m, int is_default, serve_sched_config *sc,
                               serve_limits *lim, uint32_t *ctx_out, char *err, size_t errlen) {
  wgllm_model_info info;
  wgllm_model_get_info(m, &info);
  uint32_t ctx = a->c.ctx ? a->c.ctx : info.train_context && info.train_context < 4096 ? info.train_context : 4096;
  if (a->c.ctx && info.train_context && a->c.ctx > info.train_context)
    fprintf(stderr, "wgllm serve: warning: -c %u is more than the %u tokens the model was trained on\n", a->c.ctx,
            info.train_context);
  if (a->max_tokens > ctx) {
    snprintf(err, errlen, "--max-tokens %lld is more than the context (%u tokens; -c N)", a->max_tokens, ctx);
    return -1;
  }
  *ctx_out = ctx;
  memset(sc, 0, sizeof *sc);
  sc->parallel = (uint32_t)a->parallel;
  sc->queue = (uint32_t)a->queue;
  sc->session = cli_session_params(&a->c); /* --kv, --unfused, --attn-grid, -ub, --precision */
  sc->session.context = ctx;
  sc->warm_up = is_default && !a->no_warmup; /* a model loaded on a request's demand: that request waits anyway */
  sc->context_shift = !a->no_context_shift;
  sc->n_keep = a->keep;
  sc->draft = is_default ? &a->draft : NULL;
  sc->spec_lookup = a->spec_lookup && (is_default || !wgllm_model_can_speculate(m));
  sc->draft_max = (uint32_t)a->draft_max;
  if (!a->kv_pool_off) {
    sc->use_pool = 1;
    sc->session.kv_pool = 1;
    sc->pool.tokens = (uint32_t)a->kv_pool_tokens;
    sc->pool.bytes = a->kv_pool_bytes;
    sc->pool.max_context = ctx;
    sc->pool.kv_type = sc->session.kv_type;
    uint64_t all = (uint64_t)ctx * sc->parallel; /* every session's whole context */
    sc->pool_tokens_default = all > UINT32_MAX / 2 ? UINT32_MAX / 2 : (uint32_t)all;
    if (a->kv_pool_tokens && a->kv_pool_tokens < ctx) {
      snprintf(err, errlen, "--kv-pool %llu holds less than one context (%u tokens; -c N)", a->kv_pool_tokens, ctx);
      return -1;
    }
  }
  sc->reopen = serve_options_reopen; /* after a device loss (serve_models.c gives the others their own) */
  sc->user = a;
  memset(lim, 0, sizeof *lim);
  lim->max_tokens = a->max_tokens ? (uint32_t)a->max_tokens : ctx;
  lim->max_stop = 4;
  lim->max_stop_bytes = 256;
  lim->max_prompt_ids = ctx;
  lim->parse_special = a->parse_special_in_content;
  return 0;
}

int serve_options_configure(serve_options *a, wgllm_model *m) {
  char err[512];
  serve_limits lim;
  if (serve_options_model_config(a, m, 1, &a->sched, &lim, &a->ctx, err, sizeof err)) {
    fprintf(stderr, "wgllm serve: %s\n", err);
    return 2;
  }
  snprintf(a->model_id, sizeof a->model_id, "%s", a->n_models ? a->model_names[0] : "");
  if (!a->n_models) model_id(a->c.model, a->model_id, sizeof a->model_id);
  serve_handler_config *hc = &a->handler;
  memset(hc, 0, sizeof *hc);
  hc->api_key = a->api_key;
  hc->web_dir = a->web;
  hc->allowed_hosts = (const char *const *)a->allowed_hosts;
  hc->n_allowed_hosts = a->n_allowed_hosts;
  hc->check_host = a->n_allowed_hosts > 0; /* the transport sets it too when it listens on loopback */
  hc->allowed_origins = (const char *const *)a->allowed_origins;
  hc->n_allowed_origins = a->n_allowed_origins;
  hc->max_body = (size_t)a->max_body;
  hc->max_body_total = (size_t)a->max_body_total;
  hc->model_id = a->model_id;
  hc->limits = a->limits = lim;
  if (a->n_models > 1) { /* parsed before the model is known: the widest limits, fitted to the model's after */
    hc->limits.max_tokens = a->max_tokens ? (uint32_t)a->max_tokens : 1u << 24;
    hc->limits.max_prompt_ids = 1u << 20;
  }
  return 0;
}

void serve_options_banner(const serve_options *o, wgllm_model *m, unsigned port, char *out, size_t cap) {
  wgllm_model_info info;
  wgllm_model_get_info(m, &info);
  int ipv6 = strchr(o->host, ':') != NULL;
  char pool[96] = "";
  wgllm_kv_pool_stats ps;
  if (o->sched.use_pool && !wgllm_model_kv_pool_stats(m, &ps))
    snprintf(pool, sizeof pool, ", a KV pool of %u tokens", ps.blocks * ps.block_tokens);
  snprintf(out, cap, "listening on http://%s%s%s:%u (model %s, %u sessions of %u tokens%s, precision %s, on %s)",
           ipv6 ? "[" : "", o->host, ipv6 ? "]" : "", port, o->model_id, o->sched.parallel, o->ctx, pool,
           wgllm_precision_name(o->sched.session.precision), info.adapter);
}

void serve_options_free(serve_options *o) {
  for (size_t i = 0; i < o->n_models; i++) {
    if (i >= o->n_cli_models) free(o->model_paths[i]);
    if (o->model_names) free(o->model_names[i]);
  }
  free(o->model_paths);
  free(o->model_names);
  free(o->aliases);
  o->model_paths = o->model_names = o->aliases = NULL;
  o->n_models = o->n_aliases = 0;
  wgllm_model_free(o->draft); /* after the scheduler, whose sessions hold sessions of it */
  o->draft = NULL;
  free(o->hosts_text);
  free(o->allowed_hosts);
  o->hosts_text = NULL;
  o->allowed_hosts = NULL;
  free(o->origins_text);
  free(o->allowed_origins);
  o->origins_text = NULL;
  o->allowed_origins = NULL;
  free(o->key_owned);
  o->key_owned = NULL;
}
