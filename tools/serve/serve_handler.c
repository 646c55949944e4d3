/* `wgllm serve`'s request handling, whatever carries the bytes. A request's head is routed and checked (404, 405,
   401, 413 when Content-Length says so) before its body is read; the body is collected up to the limit (413 past
   it), checked by serve_parse_request (400 with OpenAI's error object), handed to the scheduler (503 when its queue
   is full), and answered once the prompt has been prefilled: whole when it finishes, or as server-sent events (one
   chunk per piece of text, then "data: [DONE]") read from the task as the scheduler writes it. The transport pulls
   each piece with serve_exchange_next; a transport whose client has gone frees the exchange, which cancels its task
   (its job and session freed). /tokenize and /detokenize run on the model's vocabulary (CPU, read-only; its error
   message buffer is shared, so one call at a time: serve_sched_vocab_lock, which a model reload waits for). */
#include "serve_handler.h"
#include "serve_embed.h"
#include <cjson/cJSON.h>
#include <math.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>
#include <unistd.h>

/* /tokenize with_pieces: the most tokens it answers (about 30 bytes and more each) */
#define SERVE_MAX_PIECES 65536

struct serve_handler {
  serve_handler_config cfg;
  serve_sched *sched;
  long long started;
  atomic_int stopping;      /* exchanges waiting on a task end their wait */
  atomic_size_t body_bytes; /* the buffers of the bodies being received or parsed, in all (cfg.max_body_total) */
};

typedef enum route {
  ROUTE_NONE = 0,
  ROUTE_HEALTH,
  ROUTE_MODELS,
  ROUTE_CHAT,
  ROUTE_COMPLETIONS,
  ROUTE_TOKENIZE,
  ROUTE_DETOKENIZE,
  ROUTE_PROPS,
  ROUTE_SLOTS,
  ROUTE_METRICS,
  ROUTE_EMBEDDINGS
} route;

static const struct {
  const char *path;
  route r;
  int post; /* POST, else GET */
} routes[] = {{"/health", ROUTE_HEALTH, 0},
              {"/v1/health", ROUTE_HEALTH, 0},
              {"/v1/models", ROUTE_MODELS, 0},
              {"/models", ROUTE_MODELS, 0},
              {"/v1/chat/completions", ROUTE_CHAT, 1},
              {"/chat/completions", ROUTE_CHAT, 1},
              {"/v1/completions", ROUTE_COMPLETIONS, 1},
              {"/completions", ROUTE_COMPLETIONS, 1},
              {"/tokenize", ROUTE_TOKENIZE, 1},
              {"/detokenize", ROUTE_DETOKENIZE, 1},
              {"/props", ROUTE_PROPS, 0},
              {"/slots", ROUTE_SLOTS, 0},
              {"/metrics", ROUTE_METRICS, 0},
              {"/v1/embeddings", ROUTE_EMBEDDINGS, 1},
              {"/embeddings", ROUTE_EMBEDDINGS, 1}};

/* where an exchange is */
typedef enum xstate {
  X_BODY = 0, /* routed: collecting the body */
  X_WHOLE,    /* a whole answer (json): its head, its bytes, the end */
  X_FILE,     /* a file of web_dir (path): given to the transport, then the end */
  X_LOADING,  /* its model is being loaded (serve_router): the request waits in pending */
  X_TASK,     /* handed to the scheduler: waiting for its prefill (a stream) or its end */
  X_STREAM,   /* server-sent events, phase by phase */
  X_END,      /* answered */
  X_ABORT     /* cannot go on */
} xstate;

/* a streamed choice: its task and what of it was sent */
typedef struct stream_choice {
  serve_task *t;
  uint32_t index;
  size_t text_sent;
  size_t lp_sent; /* logprobs entries sent */
  int parsed_end; /* the reply parser's finish was sent */
  int tool_calls; /* calls sent: the finish_reason is "tool_calls" */
  int role_sent;  /* chat: its first chunk (the assistant's role) */
  int finished;   /* its finish_reason chunk (or the stream's error) was sent */
} stream_choice;

/* where a stream is: the events it writes in order */
typedef enum stream_phase {
  PHASE_ROLE = 0, /* chat: the first chunk, the assistant's role */
  PHASE_TEXT,     /* a chunk per batch of new text, then the finish_reason chunk */
  PHASE_USAGE,    /* stream_options.include_usage: the usage chunk */
  PHASE_DONE,     /* data: [DONE] */
  PHASE_END
} stream_phase;

struct serve_exchange {
  serve_handler *h;
  route route;
  xstate state;
  int step;        /* X_WHOLE / X_FILE: 0 head (or file), 1 bytes, 2 end */
  int too_large;   /* 1: over max_body (413); 2: over max_body_total (503) */
  size_t declared; /* Content-Length, when given and within max_body */
  char *body;
  size_t len, cap;
  int status;               /* the answer's, for the log line */
  char *json;               /* X_WHOLE's body */
  int www_auth;             /* X_WHOLE: a 401 names its scheme */
  const char *content_type; /* X_WHOLE: NULL for application/json */
  int preflight;            /* X_WHOLE: the answer to a CORS preflight (OPTIONS) */
  char cors_origin[256];    /* a cross-origin request's Origin that --cors allows: echoed in the answer */
  int close;                /* the answer closes the connection (bad framing, a body not read) */
  char method[8], url[201]; /* for the 404 of a file that is not there */
  char path[2048];          /* X_FILE */
  const char *type;         /* X_FILE's content type */
  serve_sched *sched;       /* the scheduler of the request's model (the handler's, or the router's) */
  void *model_ref;          /* the router's hold on it, or NULL */
  serve_request pending;    /* X_LOADING: the parsed request, handed to the scheduler once its model is loaded */
  int pending_set;
  serve_tokenize_request tok; /* X_LOADING on /tokenize: the parsed request (tok_set) */
  int tok_set;
  int32_t *detok_ids; /* X_LOADING on /detokenize: the ids (detok_n) */
  size_t detok_n;
  char model_query[SERVE_MODEL_NAME_MAX]; /* GET /props, /slots: the query's model=NAME ("": the default) */
  int model_query_long;                   /* ... cut short: it was longer than any model's name */
  serve_task *task;
  serve_task **siblings; /* n > 1: the other choices' tasks (n_siblings; answered whole, with task's) */
  uint32_t n_siblings;
  int stream;
  serve_answer answer;
  char id[48];
  stream_phase phase;
  stream_choice *sc;  /* X_STREAM: a choice's stream a task (task's first, then the siblings'), n_sc of them */
  uint32_t n_sc, cur; /* cur: the choice whose news the stream looks at first (round robin) */
  char *event;        /* the stream's last event (its bytes handed out until the next call) */
};

serve_handler *serve_handler_new(const serve_handler_config *cfg, serve_sched *sched) {
  serve_handler *h = calloc(1, sizeof *h);
  if (!h) return NULL;
  h->cfg = *cfg;
  h->sched = sched;
  h->started = (long long)time(NULL);
  return h;
}

void serve_handler_stopping(serve_handler *h) { h->stopping = 1; }

void serve_handler_free(serve_handler *h) {
  if (!h) return;
  free(h);
}

/* ---------- whole answers ---------- */
static void answer(serve_exchange *x, int status, char *json) {
  free(x->json);
  if (!json) {
    static const char oom[] = "{\"error\":{\"message\":\"out of memory\",\"type\":\"server_error\"}}";
    json = strdup(oom);
    status = 500;
  }
  x->json = json;
  x->status = status;
  x->www_auth = status == 401;
  x->state = json ? X_WHOLE : X_ABORT;
  x->step = 0;
}

static void answer_error(serve_exchange *x, const serve_error *e) { answer(x, e->status, serve_error_json(e)); }

static void answer_fail(serve_exchange *x, int status, const char *type, const char *code, const char *fmt, ...)
    __attribute__((format(printf, 5, 6)));
static void answer_fail(serve_exchange *x, int status, const char *type, const char *code, const char *fmt, ...) {
  serve_error e;
  char msg[sizeof e.message];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  serve_fail(&e, status, type, NULL, code, "%s", msg);
  answer_error(x, &e);
}

static char *print_json(cJSON *o) {
  char *json = o ? cJSON_PrintUnformatted(o) : NULL;
  cJSON_Delete(o);
  return json;
}

/* A file of web_dir for GET / HEAD path ("/": index.html), or 0 when the path may not name one. Paths with a ".."
   segment, a backslash or a dot file are never looked up. */
static int web_file(serve_exchange *x, const char *web_dir, const char *url) {
  static const struct {
    const char *ext, *type;
  } types[] = {{".html", "text/html; charset=utf-8"}, {".js", "text/javascript"},    {".mjs", "text/javascript"},
               {".wasm", "application/wasm"},         {".json", "application/json"}, {".css", "text/css"},
               {".txt", "text/plain; charset=utf-8"}};
  if (url[0] != '/' || strstr(url, "/.") || strchr(url, '\\') || strlen(url) > 1024) return 0;
  snprintf(x->path, sizeof x->path, "%s%s%s", web_dir, url, url[strlen(url) - 1] == '/' ? "index.html" : "");
  const char *dot = strrchr(x->path, '.'), *slash = strrchr(x->path, '/');
  if (dot && slash && dot < slash) dot = NULL;
  x->type = "application/octet-stream";
  for (size_t i = 0; dot && i < sizeof types / sizeof types[0]; i++)
    if (!strcmp(dot, types[i].ext)) x->type = types[i].type;
  x->state = X_FILE;
  x->status = 200;
  x->step = 0;
  return 1;
}

/* ---------- the request ---------- */
static int key_ok(serve_handler *h, const char *auth) {
  if (!h->cfg.api_key) return 1;
  if (!auth || strncasecmp(auth, "Bearer ", 7)) return 0;
  const char *given = auth + 7, *want = h->cfg.api_key;
  size_t gl = strlen(given), wl = strlen(want);
  unsigned diff = gl != wl;
  for (size_t i = 0; i < wl; i++) /* the time taken does not depend on where the key differs */
    diff |= (unsigned)(unsigned char)want[i] ^ (unsigned)(unsigned char)(i < gl ? given[i] : 0);
  return diff == 0;
}

/* Whether a Content-Type value is application/json (parameters such as "; charset=utf-8" allowed). */
static int media_is_json(const char *ct) {
  if (!ct) return 0;
  ct += strspn(ct, " \t");
  if (strncasecmp(ct, "application/json", 16)) return 0;
  char c = ct[16];
  return c == 0 || c == ';' || c == ' ' || c == '\t';
}

/* The host of a Host value or an origin's authority ("name", "name:port", "[v6]", "[v6]:port"): its length from
   v (brackets kept), or 0 when what follows it is not nothing or ":digits". */
static size_t host_len(const char *v) {
  size_t n = v[0] == '[' ? strcspn(v, "]") + 1 : strcspn(v, ":");
  if (v[0] == '[' && v[n - 1] != ']') return 0;
  if (v[n] == ':' && strspn(v + n + 1, "0123456789") == strlen(v + n + 1)) return n;
  return v[n] ? 0 : n;
}

static int host_allowed(const serve_handler *h, const char *host) {
  static const char *const loopback[] = {"localhost", "127.0.0.1", "[::1]"};
  size_t n = host_len(host);
  if (!n) return 0;
  for (size_t i = 0; i < 3 + h->cfg.n_allowed_hosts; i++) {
    const char *a = i < 3 ? loopback[i] : h->cfg.allowed_hosts[i - 3];
    if (strlen(a) == n && !strncasecmp(a, host, n)) return 1;
  }
  return 0;
}

static int own_origin(const char *origin, const char *host) {
  return host && !strncasecmp(origin, "http://", 7) && !strcasecmp(origin + 7, host);
}

/* The request's own origin ("http://" + its Host), or one of allowed_origins (--cors; "*" is any). */
static int origin_allowed(const serve_handler *h, const char *origin, const char *host) {
  if (own_origin(origin, host)) return 1;
  for (size_t i = 0; i < h->cfg.n_allowed_origins; i++)
    if (!strcmp(h->cfg.allowed_origins[i], "*") || !strcasecmp(origin, h->cfg.allowed_origins[i])) return 1;
  return 0;
}

/* Transfer-Encoding's codings: 1 when they are exactly "chunked" (the one this server reads) */
static int te_is_chunked(const char *te) {
  te += strspn(te, " \t");
  if (strncasecmp(te, "chunked", 7)) return 0;
  te += 7;
  return te[strspn(te, " \t")] == 0;
}

serve_exchange *serve_exchange_begin(serve_handler *h, const serve_head *hd) {
  serve_exchange *x = calloc(1, sizeof *x);
  if (!x) return NULL;
  x->h = h;
  x->sched = h->sched;
  const char *method = hd->method, *url = hd->path, *content_length = hd->content_length;
  if (hd->model_query) {
    snprintf(x->model_query, sizeof x->model_query, "%s", hd->model_query);
    x->model_query_long = strlen(hd->model_query) >= sizeof x->model_query; /* names no model (404) */
  }
  snprintf(x->method, sizeof x->method, "%s", method);
  snprintf(x->url, sizeof x->url, "%s", url);
  int known = 0, post = !strcmp(method, "POST"), post_route = 0;
  for (size_t i = 0; i < sizeof routes / sizeof routes[0]; i++)
    if (!strcmp(url, routes[i].path)) {
      known = 1;
      post_route = routes[i].post;
      if (routes[i].post == post && (post || !strcmp(method, "GET") || !strcmp(method, "HEAD"))) x->route = routes[i].r;
    }
  /* framing first: a request whose body's length is ambiguous cannot be answered on a kept connection */
  if (hd->content_length_conflict) {
    answer_fail(x, 400, "invalid_request_error", "bad_framing", "the request has Content-Length headers that disagree");
    x->close = 1;
    return x;
  }
  if (hd->transfer_encoding && content_length) {
    answer_fail(x, 400, "invalid_request_error", "bad_framing",
                "the request has both Content-Length and Transfer-Encoding");
    x->close = 1;
    return x;
  }
  if (hd->transfer_encoding && !te_is_chunked(hd->transfer_encoding)) {
    answer_fail(x, 501, "invalid_request_error", "unsupported_transfer_encoding",
                "Transfer-Encoding '%.100s' is not supported: only chunked", hd->transfer_encoding);
    x->close = 1;
    return x;
  }
  if (hd->checks_headers && h->cfg.check_host && hd->host && !host_allowed(h, hd->host)) {
    answer_fail(x, 403, "permission_error", "host_not_allowed",
                "Host '%.100s' is not allowed: this server listens on loopback and answers localhost, 127.0.0.1 and "
                "[::1] (--allowed-hosts H1,H2 adds names)",
                hd->host);
    return x;
  }
  if (hd->checks_headers && hd->origin && !origin_allowed(h, hd->origin, hd->host)) {
    answer_fail(x, 403, "permission_error", "origin_not_allowed",
                "requests from Origin '%.100s' are not allowed: only this server's own origin%s", hd->origin,
                h->cfg.n_allowed_origins ? " and those of --cors" : " (--cors ORIGINS allows others)");
    return x;
  }
  if (hd->checks_headers && hd->origin && !own_origin(hd->origin, hd->host) &&
      strlen(hd->origin) < sizeof x->cors_origin)
    snprintf(x->cors_origin, sizeof x->cors_origin, "%s", hd->origin); /* allowed by --cors: said in the answer */
  if (!strcmp(method, "OPTIONS") && (known || h->cfg.web_dir)) {       /* a preflight, answered before any key */
    answer(x, 204, strdup(""));
    x->preflight = 1;
    return x;
  }
  if (!known && h->cfg.web_dir && (!strcmp(method, "GET") || !strcmp(method, "HEAD")) &&
      web_file(x, h->cfg.web_dir, url))
    return x;
  if (!known && !h->cfg.web_dir && h->cfg.chat_page && (!strcmp(url, "/") || !strcmp(url, "/index.html")) &&
      (!strcmp(method, "GET") || !strcmp(method, "HEAD"))) { /* the chat page, without the key (it asks for it) */
    char *page = malloc(h->cfg.chat_page_len + 1);
    if (page) {
      memcpy(page, h->cfg.chat_page, h->cfg.chat_page_len);
      page[h->cfg.chat_page_len] = 0;
    }
    answer(x, 200, page);
    x->content_type = "text/html; charset=utf-8";
    return x;
  }
  if (!known)
    answer_fail(x, 404, "invalid_request_error", "not_found", "no endpoint %s %.200s", method, url);
  else if (!x->route)
    answer_fail(x, 405, "invalid_request_error", "method_not_allowed", "%s is not allowed on %.200s", method, url);
  else if (x->route != ROUTE_HEALTH && !key_ok(h, hd->authorization))
    answer_fail(x, 401, "authentication_error", "invalid_api_key",
                "a valid API key is needed: the header 'Authorization: Bearer KEY'");
  else if (hd->checks_headers && post_route && !media_is_json(hd->content_type)) {
    answer_fail(x, 415, "invalid_request_error", "unsupported_media_type",
                "the request's Content-Type is %s%.100s%s; it must be application/json", hd->content_type ? "'" : "",
                hd->content_type ? hd->content_type : "missing", hd->content_type ? "'" : "");
    x->close = 1; /* its body is not read */
  } else if (content_length && strtoull(content_length, NULL, 10) <= h->cfg.max_body)
    x->declared = (size_t)strtoull(content_length, NULL, 10);
  else if (content_length) {
    answer_fail(x, 413, "invalid_request_error", "request_too_large",
                "the request body is %s bytes; this server takes at most %zu", content_length, h->cfg.max_body);
    x->close = 1;
  }
  return x;
}

int serve_exchange_wants_body(const serve_exchange *x) { return x->state == X_BODY && !x->too_large; }

/* the body's buffer freed, and its bytes taken off the bodies' total */
static void body_free(serve_exchange *x) {
  atomic_fetch_sub(&x->h->body_bytes, x->cap);
  free(x->body);
  x->body = NULL;
  x->len = x->cap = 0;
}

int serve_exchange_body(serve_exchange *x, const void *data, size_t n) {
  if (x->state != X_BODY || x->too_large || !n) return 0; /* discarded; answered 413 */
  serve_handler *h = x->h;
  if (x->len + n > h->cfg.max_body) {
    x->too_large = 1;
    body_free(x);
    return 0;
  }
  if (x->len + n + 1 > x->cap) {
    /* the size Content-Length declared at once (it is within max_body), else doubling */
    size_t cap = x->cap ? x->cap : x->declared > x->len + n ? x->declared + 1 : 4096;
    while (cap < x->len + n + 1)
      cap *= 2;
    if (cap > h->cfg.max_body + 1) cap = h->cfg.max_body + 1;
    size_t total = atomic_fetch_add(&h->body_bytes, cap - x->cap) + (cap - x->cap);
    if (h->cfg.max_body_total && total > h->cfg.max_body_total) {
      atomic_fetch_sub(&h->body_bytes, cap - x->cap);
      x->too_large = 2; /* the server's bodies in all: 503 */
      body_free(x);
      return 0;
    }
    char *g = realloc(x->body, cap);
    if (!g) {
      atomic_fetch_sub(&h->body_bytes, cap - x->cap);
      return -1;
    }
    x->body = g;
    x->cap = cap;
  }
  memcpy(x->body + x->len, data, n);
  x->len += n;
  x->body[x->len] = 0;
  return 0;
}

/* ---------- endpoints ---------- */
static void make_id(serve_exchange *x, const char *prefix) {
  unsigned char r[12] = {0};
  if (getentropy(r, sizeof r) != 0) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    unsigned long long v = (unsigned long long)t.tv_sec * 1000000000ull + (unsigned long long)t.tv_nsec;
    memcpy(r, &v, sizeof v);
  }
  int n = snprintf(x->id, sizeof x->id, "%s", prefix);
  for (size_t i = 0; i < sizeof r && n + 2 < (int)sizeof x->id; i++)
    n += snprintf(x->id + n, sizeof x->id - (size_t)n, "%02x", r[i]);
}

/* n > 1: the other choices' tasks, each from the body parsed again (its own request, seed + k where one is given),
   prepared; the body is let go of. 0, or -1 answered. */
static int make_siblings(serve_exchange *x, const serve_request *req, const serve_limits *lim) {
  uint32_t n = req->n_choices - 1;
  if (!(x->siblings = calloc(n, sizeof *x->siblings))) {
    answer_fail(x, 500, "server_error", NULL, "out of memory");
    return -1;
  }
  for (uint32_t k = 0; k < n; k++) {
    serve_request r;
    serve_error e;
    if (serve_parse_request(req->kind, x->body, x->len, &x->h->cfg.limits, &r, &e)) { /* parsed once already */
      answer_error(x, &e);
      return -1;
    }
    if (lim) serve_request_fit(&r, lim);
    if (r.seed_given) r.seed += k + 1;
    serve_task *t = serve_task_new(&r);
    if (!t) {
      serve_request_free(&r);
      answer_fail(x, 500, "server_error", NULL, "out of memory");
      return -1;
    }
    x->siblings[x->n_siblings++] = t;
    if (serve_sched_prepare(x->sched, t)) {
      answer_error(x, &t->err);
      return -1;
    }
  }
  body_free(x);
  return 0;
}

/* The parsed request to the scheduler of its model (x->sched; id: the model's name in the answer; lim: the model's
   limits where they are not the handler's, or NULL). */
static void submit(serve_exchange *x, serve_request *req, const char *id, const serve_limits *lim) {
  serve_kind kind = req->kind;
  x->stream = req->stream;
  if (req->n_choices > 1 && make_siblings(x, req, lim)) {
    serve_request_free(req);
    return;
  }
  body_free(x);
  x->task = serve_task_new(req);
  if (!x->task) {
    serve_request_free(req);
    answer_fail(x, 500, "server_error", NULL, "out of memory");
    return;
  }
  /* the prompt rendered and tokenized here, on the transport's worker, not on the scheduler's thread (a full
     server answers 503 first, without that work; submit checks again) */
  if (!serve_sched_full(x->sched) && serve_sched_prepare(x->sched, x->task)) {
    answer_error(x, &x->task->err);
    return;
  }
  int full = serve_sched_full(x->sched) || serve_sched_submit(x->sched, x->task);
  for (uint32_t k = 0; k < x->n_siblings && !full; k++) /* n > 1: every choice in, or none (they are released) */
    full = serve_sched_full(x->sched) || serve_sched_submit(x->sched, x->siblings[k]);
  if (full) {
    char why[768];
    if (serve_sched_unavailable(x->sched, why, sizeof why)) {
      answer_fail(x, 503, "unavailable_error", "device_lost", "%s", why);
      return;
    }
    uint32_t busy, idle, waiting;
    serve_sched_counts(x->sched, &busy, &idle, &waiting);
    answer_fail(x, 503, "unavailable_error", "server_busy",
                "the server is busy: %u requests are generating and %u waiting, its limit; try again later", busy,
                waiting);
    return;
  }
  make_id(x, kind == SERVE_KIND_CHAT ? "chatcmpl-" : "cmpl-");
  x->answer = (serve_answer){kind, x->id, (long long)time(NULL), id};
  x->state = X_TASK;
}

/* The model a request names (NULL or "": the default) for x->sched: 0 it is there (one model: x->sched is the
   handler's), 1 it is being loaded (X_LOADING: loaded() goes on), -1 answered (404 for a name not served). */
static int use_model(serve_exchange *x, const char *name) {
  serve_handler *h = x->h;
  serve_error e;
  if (h->cfg.router.acquire) { /* several models: the one it names, loaded first if it is not */
    if (h->cfg.router.acquire(h->cfg.router.user, name, &x->model_ref, &e)) {
      answer_error(x, &e);
      return -1;
    }
    x->state = X_LOADING;
    return 1;
  }
  if (name && name[0] && strcmp(name, h->cfg.model_id)) { /* vLLM's and OpenAI's 404 for a model not served */
    serve_fail(&e, 404, "invalid_request_error", "model", "model_not_found",
               "the model '%.200s' does not exist: this server serves '%s' (GET /v1/models)", name, h->cfg.model_id);
    answer_error(x, &e);
    return -1;
  }
  x->sched = h->sched;
  return 0;
}

static void tokenize_on(serve_exchange *x);
static void detokenize_on(serve_exchange *x);
static void props_on(serve_exchange *x, const char *id, const serve_limits *lim);
static void slots_on(serve_exchange *x);

/* The request goes on on x->sched, its model's (id: the model's name in answers; lim: its limits where they are not
   the handler's, or NULL) */
static void go_on(serve_exchange *x, const char *id, const serve_limits *lim) {
  switch (x->route) {
  case ROUTE_TOKENIZE:
    tokenize_on(x);
    return;
  case ROUTE_DETOKENIZE:
    detokenize_on(x);
    return;
  case ROUTE_PROPS:
    props_on(x, id, lim);
    return;
  case ROUTE_SLOTS:
    slots_on(x);
    return;
  default:
    x->pending_set = 0;
    if (lim) serve_request_fit(&x->pending, lim); /* max_tokens to the model's limit (its context) */
    submit(x, &x->pending, id, lim);
  }
}

/* X_LOADING: the request's model is loaded (or failed to): the request goes on, or is answered */
static void loaded(serve_exchange *x) {
  const serve_router *r = &x->h->cfg.router;
  serve_sched *sched = NULL;
  const char *id = NULL;
  const serve_limits *lim = NULL;
  serve_error e;
  int st = r->ready(r->user, x->model_ref, &sched, &id, &lim, &e);
  if (st > 0) return; /* still loading */
  if (st < 0) {
    answer_error(x, &e); /* what it waited with is freed with the exchange */
    return;
  }
  x->sched = sched;
  go_on(x, id, lim);
}

static void generate(serve_exchange *x) {
  serve_handler *h = x->h;
  serve_kind kind = x->route == ROUTE_CHAT         ? SERVE_KIND_CHAT
                    : x->route == ROUTE_EMBEDDINGS ? SERVE_KIND_EMBEDDING
                                                   : SERVE_KIND_COMPLETION;
  serve_request req;
  serve_error e;
  int bad = serve_parse_request(kind, x->body ? x->body : "", x->len, &h->cfg.limits, &req, &e);
  /* the request is in req: the body is not kept while the task waits and runs (n > 1: until the other choices'
     requests are parsed from it, in submit) */
  if (bad || req.n_choices < 2) body_free(x);
  if (bad) {
    answer_error(x, &e);
    return;
  }
  x->pending = req;
  x->pending_set = 1;
  int rc = use_model(x, req.model);
  if (rc > 0)
    loaded(x);
  else if (!rc)
    go_on(x, h->cfg.model_id, NULL);
}

/* a growing JSON text (the answer of /tokenize, written without a cJSON node per token) */
typedef struct jbuf {
  char *p;
  size_t n, cap;
  int oom;
} jbuf;

static void jb_put(jbuf *b, const char *s, size_t n) {
  if (b->oom) return;
  if (b->n + n + 1 > b->cap) {
    size_t cap = b->cap ? b->cap : 4096;
    while (cap < b->n + n + 1)
      cap *= 2;
    char *g = realloc(b->p, cap);
    if (!g) {
      b->oom = 1;
      return;
    }
    b->p = g;
    b->cap = cap;
  }
  memcpy(b->p + b->n, s, n);
  b->n += n;
  b->p[b->n] = 0;
}

static void jb_printf(jbuf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void jb_printf(jbuf *b, const char *fmt, ...) {
  char t[128];
  va_list ap;
  va_start(ap, fmt);
  int n = vsnprintf(t, sizeof t, fmt, ap);
  va_end(ap);
  if (n <= 0) return;
  if ((size_t)n < sizeof t) {
    jb_put(b, t, (size_t)n);
    return;
  }
  char *big = malloc((size_t)n + 1); /* a longer text (a /metrics line with its help and label) */
  if (!big) {
    b->oom = 1;
    return;
  }
  va_start(ap, fmt);
  vsnprintf(big, (size_t)n + 1, fmt, ap);
  va_end(ap);
  jb_put(b, big, (size_t)n);
  free(big);
}

/* a piece as JSON: its text when that is valid UTF-8 (escaped), else its bytes (llama-server's form) */
static void jb_piece(jbuf *b, const char *p, size_t n) {
  if (serve_utf8_invalid_at(p, n) < 0 && !memchr(p, 0, n)) {
    jb_put(b, "\"", 1);
    for (size_t i = 0; i < n; i++) {
      unsigned char c = (unsigned char)p[i];
      if (c == '"' || c == '\\')
        jb_printf(b, "\\%c", c);
      else if (c < 0x20)
        jb_printf(b, "\\u%04x", c);
      else
        jb_put(b, &p[i], 1);
    }
    jb_put(b, "\"", 1);
    return;
  }
  jb_put(b, "[", 1);
  for (size_t i = 0; i < n; i++)
    jb_printf(b, "%s%u", i ? "," : "", (unsigned char)p[i]);
  jb_put(b, "]", 1);
}

/* The model's vocabulary (serve_sched_vocab_lock), or NULL with the answer a 503 naming the device loss */
static const wgllm_vocab *vocab_lock(serve_exchange *x) {
  const wgllm_vocab *v = serve_sched_vocab_lock(x->sched);
  char why[768] = "the model is not loaded";
  if (!v) {
    serve_sched_unavailable(x->sched, why, sizeof why);
    answer_fail(x, 503, "unavailable_error", "device_lost", "%s", why);
  }
  return v;
}

/* On the transport's worker (never the scheduler's thread); the vocabulary's calls one at a time
   (serve_sched_vocab_lock: its error message is one buffer). The answer is written as text, a few bytes a token;
   with_pieces answers at most SERVE_MAX_PIECES tokens (413 past it). */
static void tokenize(serve_exchange *x) {
  serve_error e;
  if (serve_parse_tokenize(x->body ? x->body : "", x->len, &x->tok, &e)) {
    answer_error(x, &e);
    return;
  }
  x->tok_set = 1;
  body_free(x); /* not needed any more: a large one is freed before the ids and the answer are made */
  int rc = use_model(x, x->tok.model);
  if (rc > 0)
    loaded(x);
  else if (!rc)
    tokenize_on(x);
}

/* /tokenize on its model's vocabulary (x->sched) */
static void tokenize_on(serve_exchange *x) {
  serve_tokenize_request tr = x->tok;
  x->tok_set = 0;
  size_t n = 0;
  int32_t *ids = NULL;
  const wgllm_vocab *v = vocab_lock(x);
  if (!v) {
    free(tr.content);
    return;
  }
  wgllm_status st = wgllm_vocab_tokenize(v, tr.content, tr.content_len, tr.add_special, tr.parse_special, NULL, 0, &n);
  if (!st && !(ids = malloc((n ? n : 1) * sizeof *ids))) st = WGLLM_ERR_OUT_OF_MEMORY;
  if (!st) st = wgllm_vocab_tokenize(v, tr.content, tr.content_len, tr.add_special, tr.parse_special, ids, n, &n);
  char msg[512];
  snprintf(msg, sizeof msg, "%s", st ? wgllm_vocab_error(v) : "");
  serve_sched_vocab_unlock(x->sched);
  free(tr.content);
  if (!st && tr.with_pieces && n > SERVE_MAX_PIECES) {
    free(ids);
    answer_fail(x, 413, "invalid_request_error", "request_too_large",
                "the text is %zu tokens; with_pieces answers at most %d (without pieces the ids alone have no limit "
                "but the body's)",
                n, SERVE_MAX_PIECES);
    return;
  }
  jbuf b = {0};
  jb_put(&b, "{\"tokens\":[", 11);
  for (size_t i = 0; !st && i < n && !b.oom; i++) {
    if (!tr.with_pieces) {
      jb_printf(&b, "%s%d", i ? "," : "", ids[i]);
      continue;
    }
    size_t len = 0;
    const char *text = NULL;
    char *dec = NULL;
    const wgllm_vocab *pv = serve_sched_vocab_lock(x->sched); /* NULL: the device lost meanwhile (no piece) */
    if (pv && wgllm_vocab_detokenize(pv, &ids[i], 1, &dec, &len) == WGLLM_OK) text = dec;
    if (pv) serve_sched_vocab_unlock(x->sched);
    jb_printf(&b, "%s{\"id\":%d", i ? "," : "", ids[i]);
    if (text) {
      jb_put(&b, ",\"piece\":", 9);
      jb_piece(&b, text, len);
    }
    jb_put(&b, "}", 1);
    wgllm_free(dec);
  }
  jb_put(&b, "]}", 2);
  free(ids);
  if (st || b.oom) {
    free(b.p);
    if (!st) st = WGLLM_ERR_OUT_OF_MEMORY, snprintf(msg, sizeof msg, "out of memory");
    answer_fail(x, st == WGLLM_ERR_OUT_OF_MEMORY ? 500 : 400,
                st == WGLLM_ERR_OUT_OF_MEMORY ? "server_error" : "invalid_request_error", NULL, "%s", msg);
    return;
  }
  answer(x, 200, b.p);
}

static void detokenize(serve_exchange *x) {
  serve_error e;
  char model[SERVE_MODEL_NAME_MAX];
  int bad =
      serve_parse_detokenize(x->body ? x->body : "", x->len, x->h->cfg.max_body, &x->detok_ids, &x->detok_n, model, &e);
  body_free(x);
  if (bad) {
    answer_error(x, &e);
    return;
  }
  int rc = use_model(x, model);
  if (rc > 0)
    loaded(x);
  else if (!rc)
    detokenize_on(x);
}

/* /detokenize on its model's vocabulary (x->sched) */
static void detokenize_on(serve_exchange *x) {
  serve_error e;
  int32_t *ids = x->detok_ids;
  size_t n = x->detok_n;
  x->detok_ids = NULL;
  const wgllm_vocab *v = vocab_lock(x);
  if (!v) {
    free(ids);
    return;
  }
  size_t nv = wgllm_vocab_n_tokens(v);
  for (size_t i = 0; i < n; i++)
    if ((size_t)ids[i] >= nv) {
      int32_t bad_id = ids[i];
      serve_sched_vocab_unlock(x->sched);
      free(ids);
      serve_fail(&e, 400, "invalid_request_error", "tokens", NULL, "token %zu is id %d, outside the vocabulary of %zu",
                 i, bad_id, nv);
      answer_error(x, &e);
      return;
    }
  char *text = NULL;
  size_t len = 0;
  wgllm_status st = wgllm_vocab_detokenize(v, ids, n, &text, &len);
  char msg[512];
  snprintf(msg, sizeof msg, "%s", st ? wgllm_vocab_error(v) : "");
  serve_sched_vocab_unlock(x->sched);
  free(ids);
  if (st) {
    answer_fail(x, 400, "invalid_request_error", NULL, "%s", msg);
    return;
  }
  cJSON *o = cJSON_CreateObject();
  cJSON_AddItemToObject(o, "content", serve_string_n(text, len)); /* NUL bytes kept, as "\u0000" */
  wgllm_free(text);
  answer(x, 200, serve_print_json(o));
}

static void health(serve_exchange *x) {
  char why[768];
  int u = serve_sched_unavailable(x->h->sched, why, sizeof why);
  if (u) { /* after a device loss: reloading (1), or failed for good (2: the server exits) */
    answer_fail(x, 503, "unavailable_error", "device_lost", "%s", why);
    return;
  }
  uint32_t busy, idle, waiting;
  serve_sched_counts(x->h->sched, &busy, &idle, &waiting);
  cJSON *o = cJSON_CreateObject();
  cJSON_AddStringToObject(o, "status", "ok");
  cJSON_AddNumberToObject(o, "slots_idle", idle);
  cJSON_AddNumberToObject(o, "slots_processing", busy);
  cJSON_AddNumberToObject(o, "requests_waiting", waiting);
  answer(x, 200, print_json(o));
}

static void models(serve_exchange *x) {
  cJSON *o = cJSON_CreateObject();
  cJSON_AddStringToObject(o, "object", "list");
  cJSON *data = cJSON_AddArrayToObject(o, "data");
  if (x->h->cfg.router.list) {
    x->h->cfg.router.list(x->h->cfg.router.user, data);
    answer(x, 200, print_json(o));
    return;
  }
  cJSON *m = cJSON_CreateObject();
  cJSON_AddItemToArray(data, m);
  cJSON_AddStringToObject(m, "id", x->h->cfg.model_id);
  cJSON_AddStringToObject(m, "object", "model");
  cJSON_AddNumberToObject(m, "created", (double)x->h->started);
  cJSON_AddStringToObject(m, "owned_by", "wgllm");
  answer(x, 200, print_json(o));
}

static const char defaults_body[] = "{\"messages\":[{\"role\":\"user\",\"content\":\"\"}]}";

/* llama-server's /props: the model (?model=NAME, else the default), the context, the sessions, a request's defaults */
static void props_on(serve_exchange *x, const char *id, const serve_limits *lim) {
  const serve_handler_config *c = &x->h->cfg;
  serve_sched_metrics m;
  serve_sched_get_metrics(x->sched, &m);
  cJSON *o = cJSON_CreateObject(), *d = cJSON_CreateObject(), *p = cJSON_CreateObject();
  cJSON_AddStringToObject(o, "model_alias", id);
  cJSON_AddNumberToObject(o, "n_ctx", m.context);
  cJSON_AddNumberToObject(o, "total_slots", m.parallel);
  cJSON_AddStringToObject(o, "build_info", wgllm_version());
  cJSON_AddStringToObject(o, "tool_format", serve_sched_tool_format(x->sched));
  cJSON_AddItemToObject(o, "default_generation_settings", d);
  cJSON_AddNumberToObject(d, "n_ctx", m.context);
  cJSON_AddItemToObject(d, "params", p);
  serve_request def; /* the defaults serve_parse_request gives a request that sets nothing */
  serve_error e;
  if (!serve_parse_request(SERVE_KIND_CHAT, defaults_body, strlen(defaults_body), lim ? lim : &c->limits, &def, &e)) {
    /* the floats as written (0.8, not 0.800000011920929) */
    cJSON_AddNumberToObject(p, "temperature", round(def.temperature * 1e6) / 1e6);
    cJSON_AddNumberToObject(p, "top_k", def.top_k);
    cJSON_AddNumberToObject(p, "top_p", round(def.top_p * 1e6) / 1e6);
    cJSON_AddNumberToObject(p, "min_p", round(def.min_p * 1e6) / 1e6);
    cJSON_AddNumberToObject(p, "repeat_penalty", round(def.repeat_penalty * 1e6) / 1e6);
    cJSON_AddNumberToObject(p, "repeat_last_n", def.repeat_last_n);
    cJSON_AddNumberToObject(p, "n_predict", def.max_tokens);
    serve_request_free(&def);
  }
  answer(x, 200, print_json(o));
}

/* llama-server's /slots: a session each of the model (?model=NAME, else the default), idle or processing */
static void slots_on(serve_exchange *x) {
  serve_sched_metrics m;
  serve_sched_get_metrics(x->sched, &m);
  serve_slot_info *info = calloc(m.parallel ? m.parallel : 1, sizeof *info);
  uint32_t n = info ? serve_sched_slots(x->sched, info, m.parallel) : 0;
  cJSON *a = cJSON_CreateArray();
  for (uint32_t k = 0; info && a && k < n; k++) {
    cJSON *s = cJSON_CreateObject();
    cJSON_AddNumberToObject(s, "id", k);
    cJSON_AddNumberToObject(s, "n_ctx", m.context);
    cJSON_AddBoolToObject(s, "is_processing", info[k].processing);
    cJSON_AddStringToObject(s, "state",
                            !info[k].processing  ? "idle"
                            : info[k].prefilling ? "prefilling"
                                                 : "generating");
    if (info[k].processing) {
      cJSON_AddNumberToObject(s, "n_prompt_tokens", info[k].prompt_tokens);
      cJSON_AddNumberToObject(s, "text_bytes", (double)info[k].text_bytes);
    }
    cJSON_AddItemToArray(a, s);
  }
  free(info);
  answer(x, 200, info || !m.parallel ? print_json(a) : (cJSON_Delete(a), NULL));
}

/* a Prometheus label set {model="NAME"} (backslash, quote and newline escaped), or "" for name NULL */
static void prom_label(char *out, size_t cap, const char *name) {
  size_t k = 0;
  out[0] = 0;
  if (!name) return;
  k += (size_t)snprintf(out, cap, "{model=\"");
  for (const char *p = name; *p && k + 4 < cap; p++) {
    if (*p == '\\' || *p == '"')
      out[k++] = '\\', out[k++] = *p;
    else if (*p == '\n')
      out[k++] = '\\', out[k++] = 'n';
    else
      out[k++] = *p;
  }
  snprintf(out + k, cap - k, "\"}");
}

/* /metrics' view of one model */
typedef struct model_metrics {
  char name[SERVE_MODEL_NAME_MAX];
  serve_sched_metrics m;
} model_metrics;
typedef struct metrics_list {
  model_metrics *a;
  size_t n, cap;
  int oom;
} metrics_list;

static void add_model_metrics(void *ud, serve_sched *s, const char *name) {
  metrics_list *l = ud;
  if (l->n == l->cap) {
    size_t cap = l->cap ? 2 * l->cap : 8;
    model_metrics *a = realloc(l->a, cap * sizeof *a);
    if (!a) {
      l->oom = 1;
      return;
    }
    l->a = a, l->cap = cap;
  }
  snprintf(l->a[l->n].name, sizeof l->a[l->n].name, "%s", name);
  serve_sched_get_metrics(s, &l->a[l->n++].m);
}

/* Prometheus' text format: counters since the start, gauges now; a server of several models gives a series for each
   model loaded, labelled model="NAME" */
static void metrics(serve_exchange *x) {
  const serve_router *r = &x->h->cfg.router;
  metrics_list l = {0};
  if (r->each)
    r->each(r->user, add_model_metrics, &l);
  else
    add_model_metrics(&l, x->h->sched, x->h->cfg.model_id);
  if (l.oom) {
    free(l.a);
    answer_fail(x, 500, "server_error", NULL, "out of memory");
    return;
  }
  jbuf b = {0};
  struct {
    const char *name, *type, *help;
    size_t at; /* the offset of its value in serve_sched_metrics */
    int kind;  /* 0 uint64_t, 1 uint32_t, 2 double */
  } rows[] = {
#define ROW(name, type, help, field, kind) {name, type, help, offsetof(serve_sched_metrics, field), kind}
      ROW("requests_total", "counter", "requests answered whole", requests_ok, 0),
      ROW("requests_failed_total", "counter", "requests that ended with an error", requests_failed, 0),
      ROW("requests_cancelled_total", "counter", "requests whose client went away", requests_cancelled, 0),
      ROW("prompt_tokens_total", "counter", "prompt tokens of the requests ended", prompt_tokens, 0),
      ROW("prompt_tokens_cached_total", "counter", "of them, taken from the cache", cached_tokens, 0),
      ROW("tokens_predicted_total", "counter", "tokens generated by the requests ended", completion_tokens, 0),
      ROW("tokens_batched_total", "counter", "of them, decoded in a step batched with other requests", batched_tokens,
          0),
      ROW("draft_tokens_accepted_total", "counter", "speculative drafts accepted", accepted_drafts, 0),
      ROW("draft_tokens_rejected_total", "counter", "speculative drafts rejected", rejected_drafts, 0),
      ROW("grammars_compiled_total", "counter", "constraints (grammars, schemas, tool_choice) compiled",
          grammar_compiled, 0),
      ROW("grammars_reused_total", "counter",
          "constraints taken from the cache of compiled ones (their masks with them)", grammar_reused, 0),
      ROW("steps_total", "counter", "scheduler steps (prefill chunks and one token of every running request)", steps,
          0),
      ROW("step_seconds_total", "counter", "time in those steps", step_seconds, 2),
      ROW("step_last_ms", "gauge", "the latest step's time", last_step_ms, 2),
      ROW("requests_processing", "gauge", "requests on a session", busy, 1),
      ROW("requests_deferred", "gauge", "requests waiting for a session", waiting, 1),
      ROW("slots_idle", "gauge", "sessions without a request", idle, 1),
      ROW("n_ctx", "gauge", "a session's context in tokens", context, 1),
#undef ROW
  };
  char label[SERVE_MODEL_NAME_MAX + 16];
  for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++) {
    jb_printf(&b, "# HELP wgllm:%s %s\n# TYPE wgllm:%s %s\n", rows[i].name, rows[i].help, rows[i].name, rows[i].type);
    for (size_t k = 0; k < l.n; k++) {
      const char *f = (const char *)&l.a[k].m + rows[i].at;
      double v = rows[i].kind == 0   ? (double)*(const uint64_t *)f
                 : rows[i].kind == 1 ? (double)*(const uint32_t *)f
                                     : *(const double *)f;
      prom_label(label, sizeof label, r->n_models > 1 ? l.a[k].name : NULL);
      jb_printf(&b, "wgllm:%s%s %.17g\n", rows[i].name, label, v);
    }
  }
  for (int pass = 0; pass < 2; pass++) {
    int head = 0;
    for (size_t k = 0; k < l.n; k++) {
      const serve_sched_metrics *m = &l.a[k].m;
      if (!m->has_pool) continue;
      if (!head++)
        jb_printf(&b,
                  pass ? "# HELP wgllm:kv_cache_tokens tokens the KV pool holds\n# TYPE wgllm:kv_cache_tokens gauge\n"
                       : "# HELP wgllm:kv_cache_usage_ratio blocks of the KV pool held by sessions\n"
                         "# TYPE wgllm:kv_cache_usage_ratio gauge\n");
      prom_label(label, sizeof label, r->n_models > 1 ? l.a[k].name : NULL);
      if (pass)
        jb_printf(&b, "wgllm:kv_cache_tokens%s %llu\n", label,
                  (unsigned long long)m->pool_blocks * m->pool_block_tokens);
      else
        jb_printf(&b, "wgllm:kv_cache_usage_ratio%s %.6f\n", label,
                  m->pool_blocks ? 1.0 - (double)m->pool_available / m->pool_blocks : 0.0);
    }
  }
  free(l.a);
  if (b.oom) {
    free(b.p);
    b.p = NULL;
  }
  answer(x, 200, b.p ? b.p : NULL);
  x->content_type = "text/plain; version=0.0.4; charset=utf-8";
}

void serve_exchange_run(serve_exchange *x) {
  if (x->state != X_BODY) return;
  if (x->too_large == 2) {
    answer_fail(x, 503, "unavailable_error", "server_busy",
                "the server holds %zu bytes of request bodies being received, its limit (--max-body-total); try again "
                "later",
                x->h->cfg.max_body_total);
    x->close = 1; /* the rest of it is not read */
    return;
  }
  if (x->too_large) {
    answer_fail(x, 413, "invalid_request_error", "request_too_large",
                "the request body is over the %zu bytes this server takes", x->h->cfg.max_body);
    x->close = 1; /* the rest of it is not read */
    return;
  }
  switch (x->route) {
  case ROUTE_HEALTH:
    health(x);
    return;
  case ROUTE_MODELS:
    models(x);
    return;
  case ROUTE_CHAT:
  case ROUTE_COMPLETIONS:
  case ROUTE_EMBEDDINGS:
    generate(x);
    return;
  case ROUTE_TOKENIZE:
    tokenize(x);
    return;
  case ROUTE_DETOKENIZE:
    detokenize(x);
    return;
  case ROUTE_PROPS:
  case ROUTE_SLOTS: {
    if (x->model_query_long) {
      answer_fail(x, 404, "invalid_request_error", "model_not_found",
                  "the model '%.64s...' does not exist: no model served has a name that long (GET /v1/models)",
                  x->model_query);
      return;
    }
    int rc = use_model(x, x->model_query);
    if (rc > 0)
      loaded(x);
    else if (!rc)
      go_on(x, x->h->cfg.model_id, NULL);
    return;
  }
  case ROUTE_METRICS:
    metrics(x);
    return;
  case ROUTE_NONE:
    break;
  }
  x->state = X_ABORT;
}

/* ---------- the answer, piece by piece ---------- */
static serve_out_kind out_head(serve_exchange *x, serve_out *o, int streamed) {
  o->kind = SERVE_OUT_HEAD;
  o->status = x->status;
  o->streamed = streamed;
  o->close = x->close;
  if (streamed) {
    o->n_headers = 3;
    o->headers[0][0] = "Content-Type", o->headers[0][1] = "text/event-stream";
    o->headers[1][0] = "Cache-Control", o->headers[1][1] = "no-cache";
    o->headers[2][0] = "X-Accel-Buffering", o->headers[2][1] = "no"; /* nginx: pass events on as they come */
  } else if (x->status != 204) {
    o->n_headers = 1;
    o->headers[0][0] = "Content-Type", o->headers[0][1] = x->content_type ? x->content_type : "application/json";
    if (x->www_auth) {
      o->headers[1][0] = "WWW-Authenticate", o->headers[1][1] = "Bearer";
      o->n_headers = 2;
    }
    if (x->status == 503) { /* busy, stopping or reloading after a lost device: a client may come back */
      o->headers[o->n_headers][0] = "Retry-After", o->headers[o->n_headers][1] = "1";
      o->n_headers++;
    }
  }
  if (x->cors_origin[0]) { /* CORS (--cors): the origin allowed, and for a preflight what it may send */
    o->headers[o->n_headers][0] = "Access-Control-Allow-Origin", o->headers[o->n_headers++][1] = x->cors_origin;
    o->headers[o->n_headers][0] = "Vary", o->headers[o->n_headers++][1] = "Origin";
    if (x->preflight) {
      o->headers[o->n_headers][0] = "Access-Control-Allow-Methods",
      o->headers[o->n_headers++][1] = "GET, POST, OPTIONS";
      o->headers[o->n_headers][0] = "Access-Control-Allow-Headers",
      o->headers[o->n_headers++][1] = "Authorization, Content-Type";
      o->headers[o->n_headers][0] = "Access-Control-Max-Age", o->headers[o->n_headers++][1] = "600";
    }
  } else if (x->preflight) {
    o->headers[o->n_headers][0] = "Allow", o->headers[o->n_headers++][1] = "GET, POST, OPTIONS";
  }
  return o->kind;
}

/* the next event of the stream into x->event: 0, 1 when there is none yet, -1 when out of memory */
static int set_event(serve_exchange *x, char *json) {
  free(x->event);
  x->event = NULL;
  if (!json) return -1;
  size_t n = strlen(json);
  x->event = malloc(n + 9);
  if (x->event) {
    memcpy(x->event, "data: ", 6);
    memcpy(x->event + 6, json, n);
    memcpy(x->event + 6 + n, "\n\n", 3);
  }
  free(json);
  return x->event ? 0 : -1;
}

/* under the lock: the task's logprobs entries [from, n_lp) as the choice's logprobs object (chat: {"content": [...]},
   completions: {"tokens", "token_logprobs", "top_logprobs", "text_offset"}, offsets from *offset on), or NULL */
static cJSON *logprobs_json(const serve_task *t, size_t from, size_t *offset) {
  if (!t->req.logprobs || !t->lp_items) return NULL;
  cJSON *o = cJSON_CreateObject();
  if (t->req.kind == SERVE_KIND_CHAT) {
    cJSON *content = cJSON_AddArrayToObject(o, "content");
    for (size_t i = from; i < t->n_lp; i++)
      cJSON_AddItemToArray(content, cJSON_Duplicate(cJSON_GetArrayItem(t->lp_items, (int)i), 1));
    return o;
  }
  cJSON *toks = cJSON_AddArrayToObject(o, "tokens"), *lps = cJSON_AddArrayToObject(o, "token_logprobs"),
        *tops = cJSON_AddArrayToObject(o, "top_logprobs"), *offs = cJSON_AddArrayToObject(o, "text_offset");
  for (size_t i = from; i < t->n_lp; i++) {
    const cJSON *e = cJSON_GetArrayItem(t->lp_items, (int)i), *tok = cJSON_GetObjectItemCaseSensitive(e, "token");
    cJSON_AddItemToArray(toks, cJSON_Duplicate(tok, 1));
    cJSON_AddItemToArray(lps, cJSON_Duplicate(cJSON_GetObjectItemCaseSensitive(e, "logprob"), 1));
    cJSON *top = cJSON_CreateObject();
    const cJSON *alt;
    cJSON_ArrayForEach(alt, cJSON_GetObjectItemCaseSensitive(e, "top_logprobs")) {
      const cJSON *at = cJSON_GetObjectItemCaseSensitive(alt, "token");
      if (!cJSON_GetObjectItemCaseSensitive(top, at->valuestring)) /* two ids of one text: the likelier */
        cJSON_AddNumberToObject(top, at->valuestring, cJSON_GetObjectItemCaseSensitive(alt, "logprob")->valuedouble);
    }
    cJSON_AddItemToArray(tops, top);
    cJSON_AddItemToArray(offs, cJSON_CreateNumber((double)*offset));
    *offset += cJSON_GetArraySize(cJSON_GetObjectItemCaseSensitive(e, "bytes"));
  }
  return o;
}

/* A reply parser's delta JSON (wgllm_reply_parser_push) into the chunk's content (*text, malloc'd) and extras */
static void parse_delta(char *json, char **text, size_t *len, cJSON **delta, serve_extras *e) {
  *delta = json ? cJSON_Parse(json) : NULL;
  wgllm_free(json);
  const cJSON *c = cJSON_GetObjectItemCaseSensitive(*delta, "content"),
              *r = cJSON_GetObjectItemCaseSensitive(*delta, "reasoning_content");
  *text = cJSON_IsString(c) ? c->valuestring : NULL;
  *len = *text ? strlen(*text) : 0;
  e->reasoning = cJSON_IsString(r) ? r->valuestring : NULL;
  e->tool_calls = cJSON_GetObjectItemCaseSensitive(*delta, "tool_calls");
}

/* the SSE event of json (taken) after x->event's: 0, or -1 when out of memory (x->event is then NULL) */
static int add_event(serve_exchange *x, char *json) {
  if (!json) {
    free(x->event);
    x->event = NULL;
    return -1;
  }
  size_t have = x->event ? strlen(x->event) : 0, n = strlen(json);
  char *ev = realloc(x->event, have + n + 9);
  if (!ev) {
    free(json);
    free(x->event);
    x->event = NULL;
    return -1;
  }
  memcpy(ev + have, "data: ", 6);
  memcpy(ev + have + 6, json, n);
  memcpy(ev + have + 6 + n, "\n\n", 3);
  x->event = ev;
  free(json);
  return 0;
}

/* PHASE_TEXT with the task's new text (and logprobs) in hand, unlocked: a chunk, or 1 when the parser held it all.
   The parser's tool_calls entries (a call's start, the fragments of its arguments) go one a chunk, as OpenAI streams
   them: the first chunk carries the text, reasoning and logprobs with the first entry, each further entry has its
   own chunk (the events joined in x->event). */
static int text_event(serve_exchange *x, stream_choice *c, const char *text, size_t n, cJSON *lp, int end) {
  serve_task *t = c->t;
  serve_extras e = {.logprobs = lp, .index = c->index};
  cJSON *delta = NULL;
  const char *out = text;
  size_t out_len = n;
  if (t->parser) { /* the HTTP side alone uses it */
    char *json = NULL, *ctext = NULL;
    if (end)
      wgllm_reply_parser_finish(t->parser, &json);
    else if (n)
      wgllm_reply_parser_push(t->parser, text, n, &json);
    parse_delta(json, &ctext, &out_len, &delta, &e);
    out = ctext;
    const cJSON *entry;
    cJSON_ArrayForEach(entry, e.tool_calls) c->tool_calls += cJSON_HasObjectItem(entry, "id"); /* calls started */
  }
  int none = !out_len && !e.reasoning && !e.tool_calls && !lp;
  int n_entries = e.tool_calls ? cJSON_GetArraySize(e.tool_calls) : 0, rc = 0;
  cJSON *calls = e.tool_calls;
  free(x->event);
  x->event = NULL;
  for (int k = 0; !none && !rc && k < (n_entries > 1 ? n_entries : 1); k++) {
    serve_extras ek = e;
    cJSON *one = NULL;
    if (n_entries > 1) { /* the k-th entry alone */
      one = cJSON_CreateArray();
      if (one) cJSON_AddItemToArray(one, cJSON_Duplicate(cJSON_GetArrayItem(calls, k), 1));
      ek.tool_calls = one;
    }
    if (k) ek.reasoning = NULL, ek.logprobs = NULL;
    rc = add_event(x, one || n_entries <= 1 ? serve_chunk_json(&x->answer, k ? NULL : out, k ? 0 : out_len, 0, NULL,
                                                               NULL, t->req.include_usage, NULL, &ek)
                                            : NULL);
    cJSON_Delete(one);
  }
  cJSON_Delete(delta);
  cJSON_Delete(lp);
  return none ? 1 : rc;
}

/* under the lock: the choice has something to send (text, logprobs, or its end) */
static int choice_news(const stream_choice *c) {
  return !c->finished && (c->t->out_len > c->text_sent || c->t->n_lp > c->lp_sent || c->t->state == SERVE_TASK_DONE);
}

/* The choice's next event: 0 set, 1 nothing now (its text held back by the parser, or nothing new), -1 out of memory.
   The scheduler's lock is not held. */
static int choice_event(serve_exchange *x, stream_choice *c) {
  serve_sched *s = x->sched;
  serve_task *t = c->t;
  serve_sched_lock(s);
  while (t->out_len > c->text_sent || t->n_lp > c->lp_sent) {
    size_t n = t->out_len - c->text_sent, off = 0;
    char *text = malloc(n + 1);
    if (text) memcpy(text, t->out + c->text_sent, n);
    cJSON *lp = t->n_lp > c->lp_sent ? logprobs_json(t, c->lp_sent, &off) : NULL;
    c->text_sent = t->out_len;
    c->lp_sent = t->n_lp;
    serve_sched_unlock(s);
    if (!text) return -1;
    int rc = text_event(x, c, text, n, lp, 0);
    free(text);
    if (rc != 1) return rc;
    serve_sched_lock(s); /* the parser held it back: more may have come meanwhile */
  }
  if (t->state != SERVE_TASK_DONE) {
    serve_sched_unlock(s);
    return 1;
  }
  if (t->parser && !c->parsed_end && !t->failed) { /* what the parser held back, before the finish */
    serve_sched_unlock(s);
    c->parsed_end = 1;
    int rc = text_event(x, c, NULL, 0, NULL, 1);
    if (rc != 1) return rc;
    serve_sched_lock(s);
  }
  int failed = t->failed;
  serve_error e = t->err;
  const char *finish = t->finish_reason;
  serve_usage u = t->usage;
  serve_sched_unlock(s);
  c->finished = 1;
  if (failed) { /* OpenAI's clients raise an error event as an APIError; the stream ends with it */
    x->phase = PHASE_DONE;
    x->status = e.status;
    return set_event(x, serve_error_json(&e));
  }
  if (c->tool_calls && (!finish || !strcmp(finish, "stop"))) finish = "tool_calls";
  serve_extras ex = {.index = c->index};
  return set_event(
      x, serve_chunk_json(&x->answer, NULL, 0, 0, finish ? finish : "stop", NULL, t->req.include_usage, &u, &ex));
}

/* the stream's usage: the prompt once (every choice's is the same), the choices' generated tokens added */
static serve_usage stream_usage(serve_exchange *x) {
  serve_sched_lock(x->sched);
  serve_usage u = x->sc[0].t->usage;
  for (uint32_t k = 1; k < x->n_sc; k++)
    u.completion_tokens += x->sc[k].t->usage.completion_tokens;
  serve_sched_unlock(x->sched);
  return u;
}

static int next_event(serve_exchange *x) {
  const serve_answer *a = &x->answer;
  switch (x->phase) {
  case PHASE_ROLE: { /* chat: each choice's first chunk, its role */
    stream_choice *c = &x->sc[x->cur];
    serve_extras ex = {.index = c->index};
    c->role_sent = 1;
    if (++x->cur == x->n_sc) {
      x->cur = 0;
      x->phase = PHASE_TEXT;
    }
    return set_event(x, serve_chunk_json(a, NULL, 0, 1, NULL, NULL, c->t->req.include_usage, NULL, &ex));
  }
  case PHASE_TEXT: {
    /* the choices in turn from cur: the first with news gives the event, the next one is looked at first after */
    uint32_t finished = 0;
    for (uint32_t i = 0; i < x->n_sc; i++) {
      stream_choice *c = &x->sc[(x->cur + i) % x->n_sc];
      finished += c->finished;
      serve_sched_lock(x->sched);
      int news = choice_news(c);
      serve_sched_unlock(x->sched);
      if (!news) continue;
      int rc = choice_event(x, c);
      if (rc != 1) {
        x->cur = (uint32_t)((c - x->sc) + 1) % x->n_sc;
        return rc;
      }
      finished += c->finished;
    }
    if (finished < x->n_sc) return 1;
    x->phase = x->sc[0].t->req.include_usage ? PHASE_USAGE : PHASE_DONE;
    return next_event(x);
  }
  case PHASE_USAGE: {
    x->phase = PHASE_DONE;
    serve_usage u = stream_usage(x);
    return set_event(x, serve_chunk_json(a, NULL, 0, 0, NULL, &u, 0, &u, NULL));
  }
  case PHASE_DONE:
    x->phase = PHASE_END;
    free(x->event);
    x->event = strdup("data: [DONE]\n\n");
    return x->event ? 0 : -1;
  case PHASE_END:
    break;
  }
  return -1;
}

/* a parser's tool_calls entry into the whole message's calls: a call's start (it has an "id") is added, a fragment
   {"index", "function": {"arguments"}} joins the arguments of the call of its index */
static void whole_call_add(cJSON *calls, const cJSON *entry) {
  if (cJSON_HasObjectItem(entry, "id")) {
    cJSON_AddItemToArray(calls, cJSON_Duplicate(entry, 1));
    return;
  }
  const cJSON *idx = cJSON_GetObjectItemCaseSensitive(entry, "index"),
              *frag =
                  cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(entry, "function"), "arguments");
  cJSON *call = NULL, *q;
  if (!cJSON_IsNumber(idx)) return;
  for (q = calls->child; q; q = q->next) /* every start carries its index */
    if (cJSON_GetObjectItemCaseSensitive(q, "index")->valuedouble == idx->valuedouble) call = q;
  cJSON *fn = cJSON_GetObjectItemCaseSensitive(call, "function");
  const cJSON *have = cJSON_GetObjectItemCaseSensitive(fn, "arguments");
  if (!cJSON_IsString(have) || !cJSON_IsString(frag)) return;
  size_t a = strlen(have->valuestring), b = strlen(frag->valuestring);
  char *joined = malloc(a + b + 1);
  if (!joined) return;
  memcpy(joined, have->valuestring, a);
  memcpy(joined + a, frag->valuestring, b + 1);
  cJSON_ReplaceItemInObjectCaseSensitive(fn, "arguments", cJSON_CreateString(joined));
  free(joined);
}

/* under the lock: a done task's whole answer: the reply parsed (content, reasoning_content, tool_calls; finish_reason
   "tool_calls" where it called), its logprobs */
static char *task_whole_answer(serve_exchange *x, serve_task *t) {
  if (t->req.kind == SERVE_KIND_EMBEDDING) return serve_embed_answer(t, x->answer.model);
  size_t off = 0;
  serve_extras e = {.logprobs = logprobs_json(t, 0, &off)};
  const char *finish = t->finish_reason;
  char *text = NULL, *json = NULL;
  size_t len = 0;
  cJSON *calls = NULL;
  if (t->parser) { /* the deltas of the whole text and the finish, joined */
    char *d1 = NULL, *d2 = NULL, *c1, *c2;
    size_t l1, l2;
    cJSON *j1, *j2;
    serve_extras e1 = {0}, e2 = {0};
    wgllm_reply_parser_push(t->parser, t->out ? t->out : "", t->out_len, &d1);
    wgllm_reply_parser_finish(t->parser, &d2);
    parse_delta(d1, &c1, &l1, &j1, &e1);
    parse_delta(d2, &c2, &l2, &j2, &e2);
    text = malloc(l1 + l2 + 1);
    size_t rl = (e1.reasoning ? strlen(e1.reasoning) : 0) + (e2.reasoning ? strlen(e2.reasoning) : 0);
    char *reasoning = rl ? malloc(rl + 1) : NULL;
    if (text) {
      memcpy(text, c1 ? c1 : "", l1);
      memcpy(text + l1, c2 ? c2 : "", l2);
      len = l1 + l2;
    }
    if (reasoning) {
      snprintf(reasoning, rl + 1, "%s%s", e1.reasoning ? e1.reasoning : "", e2.reasoning ? e2.reasoning : "");
      e.reasoning = reasoning;
    }
    if (e1.tool_calls || e2.tool_calls) { /* whole calls: each start with its fragments' arguments joined */
      calls = cJSON_CreateArray();
      const cJSON *c;
      cJSON_ArrayForEach(c, e1.tool_calls) whole_call_add(calls, c);
      cJSON_ArrayForEach(c, e2.tool_calls) whole_call_add(calls, c);
      for (cJSON *q = calls->child; q; q = q->next) /* a whole message's calls carry no index */
        cJSON_DeleteItemFromObjectCaseSensitive(q, "index");
      e.tool_calls = calls;
      if (!finish || !strcmp(finish, "stop")) finish = "tool_calls";
    }
    if (text) json = serve_completion_json(&x->answer, text, len, finish, &t->usage, &e);
    free(reasoning);
    cJSON_Delete(j1);
    cJSON_Delete(j2);
  } else {
    json = serve_completion_json(&x->answer, t->out ? t->out : "", t->out_len, finish, &t->usage, &e);
  }
  free(text);
  cJSON_Delete(calls);
  cJSON_Delete(e.logprobs);
  return json;
}

/* under the scheduler's lock: the whole answer, n > 1's choices (each task's answer's choice, in order, its index
   set) in one, the prompt's tokens counted once and the choices' completion tokens added */
static char *whole_answer(serve_exchange *x) {
  char *json = task_whole_answer(x, x->task);
  if (!x->n_siblings || !json) return json;
  cJSON *o = cJSON_Parse(json);
  free(json);
  cJSON *choices = cJSON_GetObjectItemCaseSensitive(o, "choices");
  cJSON *usage = cJSON_GetObjectItemCaseSensitive(o, "usage");
  double completion = 0;
  for (uint32_t k = 0; o && choices && k < x->n_siblings; k++) {
    char *sj = task_whole_answer(x, x->siblings[k]);
    cJSON *so = sj ? cJSON_Parse(sj) : NULL;
    free(sj);
    cJSON *c = so ? cJSON_DetachItemFromArray(cJSON_GetObjectItemCaseSensitive(so, "choices"), 0) : NULL;
    if (!c) {
      cJSON_Delete(so);
      cJSON_Delete(o);
      return NULL;
    }
    cJSON_ReplaceItemInObjectCaseSensitive(c, "index", cJSON_CreateNumber(k + 1));
    cJSON_AddItemToArray(choices, c);
    completion += x->siblings[k]->usage.completion_tokens;
    cJSON_Delete(so);
  }
  if (usage) {
    cJSON *ct = cJSON_GetObjectItemCaseSensitive(usage, "completion_tokens");
    cJSON *tt = cJSON_GetObjectItemCaseSensitive(usage, "total_tokens");
    if (ct) cJSON_SetNumberValue(ct, ct->valuedouble + completion);
    if (tt) cJSON_SetNumberValue(tt, tt->valuedouble + completion);
  }
  json = o ? cJSON_PrintUnformatted(o) : NULL;
  cJSON_Delete(o);
  return json;
}

/* under the scheduler's lock: every task of the exchange is done (n > 1: the other choices' too) */
static int all_done(const serve_exchange *x) {
  if (x->task->state != SERVE_TASK_DONE) return 0;
  for (uint32_t k = 0; k < x->n_siblings; k++)
    if (x->siblings[k]->state != SERVE_TASK_DONE) return 0;
  return 1;
}

/* under the scheduler's lock: the first failed task of the exchange, or NULL */
static const serve_task *failed_task(const serve_exchange *x) {
  if (x->task->failed) return x->task;
  for (uint32_t k = 0; k < x->n_siblings; k++)
    if (x->siblings[k]->failed) return x->siblings[k];
  return NULL;
}

/* X_TASK: the task has run far enough to answer (a stream: prefilled; else: done) */
static serve_out_kind task_answer(serve_exchange *x, serve_out *o) {
  serve_sched *s = x->sched;
  serve_task *t = x->task;
  serve_sched_lock(s);
  int ready = all_done(x) || (x->stream && t->state == SERVE_TASK_RUNNING);
  if (!ready) {
    serve_sched_unlock(s);
    if (x->h->stopping) {
      x->state = X_ABORT;
      return o->kind = SERVE_OUT_ABORT;
    }
    return o->kind = SERVE_OUT_WAIT;
  }
  const serve_task *ft = failed_task(x);
  int failed = ft != NULL;
  serve_error te = failed ? ft->err : t->err;
  char *json = NULL;
  if (!failed && !x->stream) json = whole_answer(x);
  serve_sched_unlock(s);
  if (failed)
    answer_error(x, &te);
  else if (!x->stream)
    answer(x, 200, json);
  else {
    x->n_sc = 1 + x->n_siblings;
    if (!(x->sc = calloc(x->n_sc, sizeof *x->sc))) {
      answer_fail(x, 500, "server_error", NULL, "out of memory");
      return serve_exchange_next(x, o);
    }
    for (uint32_t k = 0; k < x->n_sc; k++) {
      x->sc[k].t = k ? x->siblings[k - 1] : t;
      x->sc[k].index = k;
    }
    x->state = X_STREAM;
    x->status = 200;
    x->phase = x->answer.kind == SERVE_KIND_CHAT ? PHASE_ROLE : PHASE_TEXT;
    return out_head(x, o, 1);
  }
  return serve_exchange_next(x, o);
}

serve_out_kind serve_exchange_next(serve_exchange *x, serve_out *o) {
  memset(o, 0, sizeof *o);
  switch (x->state) {
  case X_BODY:
    return o->kind = SERVE_OUT_WAIT; /* serve_exchange_run has not been called */
  case X_WHOLE:
    if (x->step == 0) {
      x->step = 1;
      return out_head(x, o, 0);
    }
    if (x->step == 1) {
      x->step = 2;
      o->data = x->json;
      o->len = strlen(x->json);
      return o->kind = SERVE_OUT_DATA;
    }
    x->state = X_END;
    return o->kind = SERVE_OUT_END;
  case X_FILE:
    if (x->step == 0) {
      x->step = 1;
      o->status = 200;
      o->n_headers = 2;
      o->headers[0][0] = "Content-Type", o->headers[0][1] = x->type;
      o->headers[1][0] = "Cache-Control", o->headers[1][1] = "no-cache";
      o->path = x->path;
      return o->kind = SERVE_OUT_FILE;
    }
    x->state = X_END;
    return o->kind = SERVE_OUT_END;
  case X_LOADING:
    loaded(x);
    if (x->state != X_LOADING) return serve_exchange_next(x, o);
    if (x->h->stopping) {
      x->state = X_ABORT;
      return o->kind = SERVE_OUT_ABORT;
    }
    return o->kind = SERVE_OUT_WAIT;
  case X_TASK:
    return task_answer(x, o);
  case X_STREAM: {
    if (x->phase == PHASE_END) {
      x->state = X_END;
      return o->kind = SERVE_OUT_END;
    }
    int rc = next_event(x);
    if (rc < 0) {
      x->state = X_ABORT;
      return o->kind = SERVE_OUT_ABORT;
    }
    if (rc > 0) {
      if (x->h->stopping) {
        x->state = X_ABORT;
        return o->kind = SERVE_OUT_ABORT;
      }
      return o->kind = SERVE_OUT_WAIT;
    }
    o->data = x->event;
    o->len = strlen(x->event);
    return o->kind = SERVE_OUT_DATA;
  }
  case X_END:
    return o->kind = SERVE_OUT_END;
  case X_ABORT:
    break;
  }
  return o->kind = SERVE_OUT_ABORT;
}

/* under the scheduler's lock: a streamed choice has something to send */
static int stream_news(const serve_exchange *x) {
  for (uint32_t k = 0; k < x->n_sc; k++)
    if (choice_news(&x->sc[k])) return 1;
  return 0;
}

/* under the scheduler's lock: the task has something for the exchange */
static int task_news(const serve_exchange *x) {
  const serve_task *t = x->task;
  return all_done(x) || (x->state == X_TASK && x->stream && t->state == SERVE_TASK_RUNNING) ||
         (x->state == X_STREAM && (x->phase != PHASE_TEXT || stream_news(x)));
}

int serve_exchange_ready(serve_exchange *x) {
  if (x->state == X_BODY) return 0;
  if (x->state == X_LOADING) {
    const serve_router *r = &x->h->cfg.router;
    serve_sched *sched;
    const char *id;
    const serve_limits *lim;
    serve_error e;
    return x->h->stopping || r->ready(r->user, x->model_ref, &sched, &id, &lim, &e) <= 0;
  }
  if (!x->task || x->h->stopping || (x->state != X_TASK && x->state != X_STREAM)) return 1;
  serve_sched_lock(x->sched);
  int news = task_news(x);
  serve_sched_unlock(x->sched);
  return news;
}

void serve_exchange_wait(serve_exchange *x, int ms) {
  if (x->state == X_LOADING && !serve_exchange_ready(x)) { /* a load ends with no signal to wait on: a short nap */
    struct timespec ts = {0, (ms < 20 ? ms : 20) * 1000000L};
    nanosleep(&ts, NULL);
    return;
  }
  serve_task *t = x->task;
  if (!t || x->h->stopping || (x->state != X_TASK && x->state != X_STREAM)) return;
  serve_sched *s = x->sched;
  serve_sched_lock(s);
  if (!task_news(x)) serve_sched_wait(s, t, ms);
  serve_sched_unlock(s);
}

void serve_exchange_no_file(serve_exchange *x) {
  if (x->state == X_FILE || x->state == X_END)
    answer_fail(x, 404, "invalid_request_error", "not_found", "no endpoint %s %s", x->method, x->url);
}

int serve_exchange_status(const serve_exchange *x) { return x->status; }

void serve_exchange_tokens(serve_exchange *x, uint32_t *generated, uint32_t *batched) {
  *generated = *batched = 0;
  if (!x->task) return;
  serve_sched_lock(x->sched);
  *generated = x->task->usage.completion_tokens;
  *batched = x->task->batched_tokens;
  serve_sched_unlock(x->sched);
}

void serve_exchange_free(serve_exchange *x) {
  if (!x) return;
  if (x->task) serve_sched_release(x->sched, x->task); /* a task not finished is cancelled */
  for (uint32_t k = 0; k < x->n_siblings; k++)
    serve_sched_release(x->sched, x->siblings[k]);
  free(x->siblings);
  free(x->sc);
  if (x->model_ref) x->h->cfg.router.release(x->h->cfg.router.user, x->model_ref);
  if (x->pending_set) serve_request_free(&x->pending);
  if (x->tok_set) free(x->tok.content);
  free(x->detok_ids);
  body_free(x);
  free(x->json);
  free(x->event);
  free(x);
}
