/* `wgllm serve`'s HTTP server on libmicrohttpd, a thread per connection. A request's body is collected up to the
   limit (413 past it, at once when Content-Length says so), checked by serve_parse_request (400 with OpenAI's
   error object), handed to the scheduler (503 when its queue is full), and answered once the prompt has been
   prefilled: whole when it finishes, or as server-sent events (one chunk per piece of text, then "data: [DONE]")
   read from the task as the scheduler writes it. While it waits, the connection thread polls its socket: a
   client that has gone (closed, reset) cancels its task, which frees its job and session. /tokenize and
   /detokenize run here, on the model's vocabulary (CPU, read-only; its error message buffer is shared, so one
   call at a time under vocab_mu). */
#define _GNU_SOURCE
#include "serve_http.h"
#include <cjson/cJSON.h>
#include <errno.h>
#include <fcntl.h>
#include <microhttpd.h>
#include <netdb.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

struct serve_http {
  serve_http_config cfg;
  serve_sched *sched;
  const wgllm_vocab *vocab;
  pthread_mutex_t vocab_mu;
  struct MHD_Daemon *daemon;
  uint16_t port;
  long long started;
  atomic_int stopping; /* connection threads waiting on a task end their wait */
};

typedef enum route {
  ROUTE_NONE = 0,
  ROUTE_HEALTH,
  ROUTE_MODELS,
  ROUTE_CHAT,
  ROUTE_COMPLETIONS,
  ROUTE_TOKENIZE,
  ROUTE_DETOKENIZE
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
              {"/detokenize", ROUTE_DETOKENIZE, 1}};

/* where a stream is: the chunks it writes in order */
typedef enum stream_phase {
  PHASE_ROLE = 0, /* chat: the first chunk, the assistant's role */
  PHASE_TEXT,     /* a chunk per batch of new text, then the finish_reason chunk */
  PHASE_USAGE,    /* stream_options.include_usage: the usage chunk */
  PHASE_DONE,     /* data: [DONE] */
  PHASE_END
} stream_phase;

/* one request on a connection */
typedef struct conn {
  serve_http *h;
  struct MHD_Connection *mc;
  route route;
  int too_large;
  char *body;
  size_t len, cap;
  serve_task *task;
  serve_answer answer;
  char id[48];
  double t0;
  int status;    /* the answer's, for the log line */
  char what[96]; /* "POST /v1/completions", for the log line */
  /* the stream */
  stream_phase phase;
  size_t text_sent;
  char *pend; /* the bytes of the current event not yet handed to MHD */
  size_t pend_len, pend_off;
} conn;

static double now_s(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

/* ---------- answers ---------- */
static enum MHD_Result reply(conn *c, int status, char *json) {
  if (!json) {
    static const char oom[] = "{\"error\":{\"message\":\"out of memory\",\"type\":\"server_error\"}}";
    json = strdup(oom);
    status = 500;
    if (!json) return MHD_NO;
  }
  c->status = status;
  struct MHD_Response *r = MHD_create_response_from_buffer(strlen(json), json, MHD_RESPMEM_MUST_FREE);
  if (!r) {
    free(json);
    return MHD_NO;
  }
  MHD_add_response_header(r, "Content-Type", "application/json");
  if (status == 401) MHD_add_response_header(r, "WWW-Authenticate", "Bearer");
  enum MHD_Result ok = MHD_queue_response(c->mc, (unsigned)status, r);
  MHD_destroy_response(r);
  return ok;
}

static enum MHD_Result reply_error(conn *c, const serve_error *e) { return reply(c, e->status, serve_error_json(e)); }

/* A file of cfg.web_dir for GET / HEAD url ("/": index.html), or 0 when there is none (the caller answers 404).
   Paths with a ".." segment, a backslash or a dot file are never looked up. */
static enum MHD_Result web_file(conn *c, const char *web_dir, const char *url, int *found) {
  static const struct {
    const char *ext, *type;
  } types[] = {{".html", "text/html; charset=utf-8"}, {".js", "text/javascript"},    {".mjs", "text/javascript"},
               {".wasm", "application/wasm"},         {".json", "application/json"}, {".css", "text/css"},
               {".txt", "text/plain; charset=utf-8"}};
  *found = 0;
  if (url[0] != '/' || strstr(url, "/.") || strchr(url, '\\') || strlen(url) > 1024) return MHD_NO;
  char path[2048];
  snprintf(path, sizeof path, "%s%s%s", web_dir, url, url[strlen(url) - 1] == '/' ? "index.html" : "");
  int fd = open(path, O_RDONLY | O_CLOEXEC);
  struct stat st;
  if (fd < 0) return MHD_NO;
  if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    close(fd);
    return MHD_NO;
  }
  struct MHD_Response *r = MHD_create_response_from_fd((uint64_t)st.st_size, fd); /* closes fd */
  if (!r) {
    close(fd);
    return MHD_NO;
  }
  const char *type = "application/octet-stream", *dot = strrchr(path, '.');
  for (size_t i = 0; dot && i < sizeof types / sizeof types[0]; i++)
    if (!strcmp(dot, types[i].ext)) type = types[i].type;
  MHD_add_response_header(r, "Content-Type", type);
  MHD_add_response_header(r, "Cache-Control", "no-cache");
  *found = 1;
  c->status = 200;
  enum MHD_Result ok = MHD_queue_response(c->mc, 200, r);
  MHD_destroy_response(r);
  return ok;
}

static enum MHD_Result reply_fail(conn *c, int status, const char *type, const char *code, const char *fmt, ...)
    __attribute__((format(printf, 5, 6)));
static enum MHD_Result reply_fail(conn *c, int status, const char *type, const char *code, const char *fmt, ...) {
  serve_error e;
  char msg[sizeof e.message];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  serve_fail(&e, status, type, NULL, code, "%s", msg);
  return reply_error(c, &e);
}

/* ---------- the connection while a task runs ---------- */
/* The client closed or reset the connection (a request it pipelined after this one does not count). A FIN reads
   as gone: a client that only shut its sending side (shutdown(SHUT_WR), legal HTTP but rare) looks the same as
   one that closed, and closing is what leaving clients do, so such a client's request is cancelled. */
static int client_gone(struct MHD_Connection *mc) {
  const union MHD_ConnectionInfo *ci = MHD_get_connection_info(mc, MHD_CONNECTION_INFO_CONNECTION_FD);
  if (!ci) return 0;
  struct pollfd p = {.fd = ci->connect_fd, .events = POLLRDHUP};
  return poll(&p, 1, 0) > 0 && (p.revents & (POLLRDHUP | POLLHUP | POLLERR | POLLNVAL));
}

/* The connection's idle timer restarts (time spent waiting for the model is not the client's idleness):
   libmicrohttpd restarts it when a timeout is set on a connection that had none. */
static void restart_idle_timer(conn *c) {
  MHD_set_connection_option(c->mc, MHD_CONNECTION_OPTION_TIMEOUT, 0u);
  MHD_set_connection_option(c->mc, MHD_CONNECTION_OPTION_TIMEOUT, c->h->cfg.idle_timeout_s);
}

/* Waits (the scheduler's lock held, released while waiting) until the task runs (or is done when until_done) or
   the client has gone. Returns 0, or -1 when the client has gone or the server stops. */
static int wait_task(conn *c, int until_done) {
  serve_sched *s = c->h->sched;
  serve_task *t = c->task;
  int rc = 0;
  serve_sched_lock(s);
  while (t->state != SERVE_TASK_DONE && (until_done || t->state != SERVE_TASK_RUNNING)) {
    serve_sched_wait(s, t, 100);
    if (t->state == SERVE_TASK_DONE || (!until_done && t->state == SERVE_TASK_RUNNING)) break;
    serve_sched_unlock(s);
    int gone = c->h->stopping || client_gone(c->mc);
    serve_sched_lock(s);
    if (gone) {
      rc = -1;
      break;
    }
  }
  serve_sched_unlock(s);
  restart_idle_timer(c);
  return rc;
}

/* ---------- server-sent events ---------- */
static int set_event(conn *c, char *json) {
  free(c->pend);
  c->pend = NULL;
  c->pend_len = c->pend_off = 0;
  if (!json) return -1;
  size_t n = strlen(json);
  c->pend = malloc(n + 9);
  if (!c->pend) {
    free(json);
    return -1;
  }
  memcpy(c->pend, "data: ", 6);
  memcpy(c->pend + 6, json, n);
  memcpy(c->pend + 6 + n, "\n\n", 3);
  c->pend_len = n + 8;
  free(json);
  return 0;
}

/* The next event of the stream into c->pend, waiting for text when there is none yet. -1: end the stream with an
   error (the client has gone, out of memory, the server stops). */
static int next_event(conn *c) {
  serve_sched *s = c->h->sched;
  serve_task *t = c->task;
  const serve_answer *a = &c->answer;
  switch (c->phase) {
  case PHASE_ROLE:
    c->phase = PHASE_TEXT;
    return set_event(c, serve_chunk_json(a, NULL, 0, 1, NULL, NULL, t->req.include_usage));
  case PHASE_TEXT: {
    serve_sched_lock(s);
    for (;;) {
      if (t->out_len > c->text_sent) {
        size_t n = t->out_len - c->text_sent;
        char *piece = malloc(n + 1);
        if (piece) memcpy(piece, t->out + c->text_sent, n);
        c->text_sent = t->out_len;
        serve_sched_unlock(s);
        restart_idle_timer(c);
        if (!piece) return -1;
        int rc = set_event(c, serve_chunk_json(a, piece, n, 0, NULL, NULL, t->req.include_usage));
        free(piece);
        return rc;
      }
      if (t->state == SERVE_TASK_DONE) break;
      serve_sched_wait(s, t, 100);
      if (t->out_len > c->text_sent || t->state == SERVE_TASK_DONE) continue;
      serve_sched_unlock(s);
      int gone = c->h->stopping || client_gone(c->mc);
      serve_sched_lock(s);
      if (gone) {
        serve_sched_unlock(s);
        return -1;
      }
    }
    int failed = t->failed;
    serve_error e = t->err;
    const char *finish = t->finish_reason;
    serve_sched_unlock(s);
    restart_idle_timer(c);
    if (failed) { /* OpenAI's clients raise an error event as an APIError */
      c->phase = PHASE_DONE;
      c->status = e.status;
      return set_event(c, serve_error_json(&e));
    }
    c->phase = t->req.include_usage ? PHASE_USAGE : PHASE_DONE;
    return set_event(c, serve_chunk_json(a, NULL, 0, 0, finish ? finish : "stop", NULL, t->req.include_usage));
  }
  case PHASE_USAGE: {
    c->phase = PHASE_DONE;
    serve_sched_lock(s);
    serve_usage u = t->usage;
    serve_sched_unlock(s);
    return set_event(c, serve_chunk_json(a, NULL, 0, 0, NULL, &u, 0));
  }
  case PHASE_DONE:
    c->phase = PHASE_END;
    free(c->pend);
    c->pend = strdup("data: [DONE]\n\n");
    c->pend_len = c->pend ? strlen(c->pend) : 0;
    c->pend_off = 0;
    return c->pend ? 0 : -1;
  case PHASE_END:
    break;
  }
  return -1;
}

static ssize_t stream_read(void *cls, uint64_t pos, char *buf, size_t max) {
  conn *c = cls;
  (void)pos;
  while (c->pend_off >= c->pend_len) {
    if (c->phase == PHASE_END) return MHD_CONTENT_READER_END_OF_STREAM;
    if (next_event(c)) return MHD_CONTENT_READER_END_WITH_ERROR;
  }
  size_t n = c->pend_len - c->pend_off < max ? c->pend_len - c->pend_off : max;
  memcpy(buf, c->pend + c->pend_off, n);
  c->pend_off += n;
  return (ssize_t)n;
}

/* ---------- endpoints ---------- */
static void make_id(conn *c, const char *prefix) {
  unsigned char r[12] = {0};
  if (getrandom(r, sizeof r, 0) != (ssize_t)sizeof r) {
    unsigned long long x = (unsigned long long)(now_s() * 1e9);
    memcpy(r, &x, sizeof x);
  }
  int n = snprintf(c->id, sizeof c->id, "%s", prefix);
  for (size_t i = 0; i < sizeof r && n + 2 < (int)sizeof c->id; i++)
    n += snprintf(c->id + n, sizeof c->id - (size_t)n, "%02x", r[i]);
}

static enum MHD_Result generate(conn *c) {
  serve_http *h = c->h;
  serve_kind kind = c->route == ROUTE_CHAT ? SERVE_KIND_CHAT : SERVE_KIND_COMPLETION;
  serve_request req;
  serve_error e;
  if (serve_parse_request(kind, c->body ? c->body : "", c->len, &h->cfg.limits, &req, &e)) return reply_error(c, &e);
  int stream = req.stream;
  c->task = serve_task_new(&req);
  if (!c->task) {
    serve_request_free(&req);
    return reply_fail(c, 500, "server_error", NULL, "out of memory");
  }
  if (serve_sched_submit(h->sched, c->task)) {
    uint32_t busy, idle, waiting;
    serve_sched_counts(h->sched, &busy, &idle, &waiting);
    return reply_fail(c, 503, "unavailable_error", "server_busy",
                      "the server is busy: %u requests are generating and %u waiting, its limit; try again later", busy,
                      waiting);
  }
  make_id(c, kind == SERVE_KIND_CHAT ? "chatcmpl-" : "cmpl-");
  c->answer = (serve_answer){kind, c->id, (long long)time(NULL), h->cfg.model_id};
  if (wait_task(c, !stream)) return MHD_NO; /* the client has gone: its task is cancelled when released */
  serve_sched *s = h->sched;
  serve_task *t = c->task;
  serve_sched_lock(s);
  int failed = t->failed;
  serve_error te = t->err;
  serve_sched_unlock(s);
  if (failed) return reply_error(c, &te);
  if (!stream) {
    serve_sched_lock(s);
    char *json = serve_completion_json(&c->answer, t->out ? t->out : "", t->out_len, t->finish_reason, &t->usage);
    serve_sched_unlock(s);
    return reply(c, 200, json);
  }
  c->phase = kind == SERVE_KIND_CHAT ? PHASE_ROLE : PHASE_TEXT;
  c->status = 200;
  struct MHD_Response *r = MHD_create_response_from_callback(MHD_SIZE_UNKNOWN, 4096, stream_read, c, NULL);
  if (!r) return MHD_NO;
  MHD_add_response_header(r, "Content-Type", "text/event-stream");
  MHD_add_response_header(r, "Cache-Control", "no-cache");
  MHD_add_response_header(r, "X-Accel-Buffering", "no"); /* nginx: pass events on as they come */
  enum MHD_Result ok = MHD_queue_response(c->mc, 200, r);
  MHD_destroy_response(r);
  return ok;
}

/* a piece as JSON: its text when that is valid UTF-8, else its bytes (llama-server's form) */
static cJSON *piece_json(const char *p, size_t n) {
  if (serve_utf8_invalid_at(p, n) < 0 && !memchr(p, 0, n)) {
    char *d = strndup(p, n);
    cJSON *j = d ? cJSON_CreateString(d) : NULL;
    free(d);
    return j;
  }
  cJSON *a = cJSON_CreateArray();
  for (size_t i = 0; a && i < n; i++)
    cJSON_AddItemToArray(a, cJSON_CreateNumber((unsigned char)p[i]));
  return a;
}

static enum MHD_Result tokenize(conn *c) {
  serve_http *h = c->h;
  serve_tokenize_request tr;
  serve_error e;
  if (serve_parse_tokenize(c->body ? c->body : "", c->len, &tr, &e)) return reply_error(c, &e);
  size_t n = 0;
  int32_t *ids = NULL;
  pthread_mutex_lock(&h->vocab_mu);
  wgllm_status st =
      wgllm_vocab_tokenize(h->vocab, tr.content, tr.content_len, tr.add_special, tr.parse_special, NULL, 0, &n);
  if (!st && !(ids = malloc((n ? n : 1) * sizeof *ids))) st = WGLLM_ERR_OUT_OF_MEMORY;
  if (!st)
    st = wgllm_vocab_tokenize(h->vocab, tr.content, tr.content_len, tr.add_special, tr.parse_special, ids, n, &n);
  char msg[512];
  snprintf(msg, sizeof msg, "%s", st ? wgllm_vocab_error(h->vocab) : "");
  cJSON *o = cJSON_CreateObject(), *arr = cJSON_AddArrayToObject(o, "tokens");
  for (size_t i = 0; !st && i < n; i++) {
    if (!tr.with_pieces) {
      cJSON_AddItemToArray(arr, cJSON_CreateNumber(ids[i]));
      continue;
    }
    char *text = NULL;
    size_t len = 0;
    cJSON *it = cJSON_CreateObject();
    cJSON_AddNumberToObject(it, "id", ids[i]);
    if (wgllm_vocab_detokenize(h->vocab, &ids[i], 1, &text, &len) == WGLLM_OK) {
      cJSON_AddItemToObject(it, "piece", piece_json(text, len));
      wgllm_free(text);
    }
    cJSON_AddItemToArray(arr, it);
  }
  pthread_mutex_unlock(&h->vocab_mu);
  free(ids);
  free(tr.content);
  if (st) {
    cJSON_Delete(o);
    return reply_fail(c, st == WGLLM_ERR_OUT_OF_MEMORY ? 500 : 400,
                      st == WGLLM_ERR_OUT_OF_MEMORY ? "server_error" : "invalid_request_error", NULL, "%s", msg);
  }
  char *json = cJSON_PrintUnformatted(o);
  cJSON_Delete(o);
  return reply(c, 200, json);
}

static enum MHD_Result detokenize(conn *c) {
  serve_http *h = c->h;
  int32_t *ids;
  size_t n;
  serve_error e;
  if (serve_parse_detokenize(c->body ? c->body : "", c->len, h->cfg.max_body, &ids, &n, &e)) return reply_error(c, &e);
  size_t nv = wgllm_vocab_n_tokens(h->vocab);
  for (size_t i = 0; i < n; i++)
    if ((size_t)ids[i] >= nv) {
      int32_t bad_id = ids[i];
      free(ids);
      serve_fail(&e, 400, "invalid_request_error", "tokens", NULL, "token %zu is id %d, outside the vocabulary of %zu",
                 i, bad_id, nv);
      return reply_error(c, &e);
    }
  char *text = NULL;
  size_t len = 0;
  pthread_mutex_lock(&h->vocab_mu);
  wgllm_status st = wgllm_vocab_detokenize(h->vocab, ids, n, &text, &len);
  char msg[512];
  snprintf(msg, sizeof msg, "%s", st ? wgllm_vocab_error(h->vocab) : "");
  pthread_mutex_unlock(&h->vocab_mu);
  free(ids);
  if (st) return reply_fail(c, 400, "invalid_request_error", NULL, "%s", msg);
  cJSON *o = cJSON_CreateObject();
  char *d = strndup(text, len);
  cJSON_AddStringToObject(o, "content", d ? d : "");
  free(d);
  wgllm_free(text);
  char *json = cJSON_PrintUnformatted(o);
  cJSON_Delete(o);
  return reply(c, 200, json);
}

static enum MHD_Result health(conn *c) {
  uint32_t busy, idle, waiting;
  serve_sched_counts(c->h->sched, &busy, &idle, &waiting);
  cJSON *o = cJSON_CreateObject();
  cJSON_AddStringToObject(o, "status", "ok");
  cJSON_AddNumberToObject(o, "slots_idle", idle);
  cJSON_AddNumberToObject(o, "slots_processing", busy);
  cJSON_AddNumberToObject(o, "requests_waiting", waiting);
  char *json = cJSON_PrintUnformatted(o);
  cJSON_Delete(o);
  return reply(c, 200, json);
}

static enum MHD_Result models(conn *c) {
  cJSON *o = cJSON_CreateObject();
  cJSON_AddStringToObject(o, "object", "list");
  cJSON *data = cJSON_AddArrayToObject(o, "data"), *m = cJSON_CreateObject();
  cJSON_AddItemToArray(data, m);
  cJSON_AddStringToObject(m, "id", c->h->cfg.model_id);
  cJSON_AddStringToObject(m, "object", "model");
  cJSON_AddNumberToObject(m, "created", (double)c->h->started);
  cJSON_AddStringToObject(m, "owned_by", "wgllm");
  char *json = cJSON_PrintUnformatted(o);
  cJSON_Delete(o);
  return reply(c, 200, json);
}

/* ---------- libmicrohttpd's callbacks ---------- */
static int key_ok(serve_http *h, struct MHD_Connection *mc) {
  if (!h->cfg.api_key) return 1;
  const char *auth = MHD_lookup_connection_value(mc, MHD_HEADER_KIND, "Authorization");
  if (!auth || strncasecmp(auth, "Bearer ", 7)) return 0;
  const char *given = auth + 7, *want = h->cfg.api_key;
  size_t gl = strlen(given), wl = strlen(want);
  unsigned diff = gl != wl;
  for (size_t i = 0; i < wl; i++) /* the time taken does not depend on where the key differs */
    diff |= (unsigned)(unsigned char)want[i] ^ (unsigned)(unsigned char)(i < gl ? given[i] : 0);
  return diff == 0;
}

static enum MHD_Result on_request(void *cls, struct MHD_Connection *mc, const char *url, const char *method,
                                  const char *version, const char *upload, size_t *upload_size, void **con_cls) {
  serve_http *h = cls;
  conn *c = *con_cls;
  (void)version;
  if (!c) { /* the headers are in: route, key and declared size are checked before any body is read */
    c = calloc(1, sizeof *c);
    if (!c) return MHD_NO;
    *con_cls = c;
    c->h = h;
    c->mc = mc;
    c->t0 = now_s();
    snprintf(c->what, sizeof c->what, "%.8s %.80s", method, url);
    int known = 0, post = !strcmp(method, "POST");
    for (size_t i = 0; i < sizeof routes / sizeof routes[0]; i++)
      if (!strcmp(url, routes[i].path)) {
        known = 1;
        if (routes[i].post == post && (post || !strcmp(method, "GET") || !strcmp(method, "HEAD")))
          c->route = routes[i].r;
      }
    if (!known && h->cfg.web_dir && (!strcmp(method, "GET") || !strcmp(method, "HEAD"))) {
      int found;
      enum MHD_Result r = web_file(c, h->cfg.web_dir, url, &found);
      if (found) return r;
    }
    if (!known) return reply_fail(c, 404, "invalid_request_error", "not_found", "no endpoint %s %.200s", method, url);
    if (!c->route)
      return reply_fail(c, 405, "invalid_request_error", "method_not_allowed", "%s is not allowed on %.200s", method,
                        url);
    if (c->route != ROUTE_HEALTH && !key_ok(h, mc))
      return reply_fail(c, 401, "authentication_error", "invalid_api_key",
                        "a valid API key is needed: the header 'Authorization: Bearer KEY'");
    const char *cl = MHD_lookup_connection_value(mc, MHD_HEADER_KIND, "Content-Length");
    if (cl && strtoull(cl, NULL, 10) > h->cfg.max_body)
      return reply_fail(c, 413, "invalid_request_error", "request_too_large",
                        "the request body is %s bytes; this server takes at most %zu", cl, h->cfg.max_body);
    return MHD_YES;
  }
  if (*upload_size) { /* a part of the body */
    size_t n = *upload_size;
    *upload_size = 0;
    if (c->too_large) return MHD_YES; /* discarded; answered 413 once it has all come */
    if (c->len + n > h->cfg.max_body) {
      c->too_large = 1;
      free(c->body);
      c->body = NULL;
      c->len = c->cap = 0;
      return MHD_YES;
    }
    if (c->len + n + 1 > c->cap) {
      size_t cap = c->cap ? c->cap : 4096;
      while (cap < c->len + n + 1)
        cap *= 2;
      char *g = realloc(c->body, cap);
      if (!g) return MHD_NO;
      c->body = g;
      c->cap = cap;
    }
    memcpy(c->body + c->len, upload, n);
    c->len += n;
    c->body[c->len] = 0;
    return MHD_YES;
  }
  if (c->too_large)
    return reply_fail(c, 413, "invalid_request_error", "request_too_large",
                      "the request body is over the %zu bytes this server takes", h->cfg.max_body);
  switch (c->route) {
  case ROUTE_HEALTH:
    return health(c);
  case ROUTE_MODELS:
    return models(c);
  case ROUTE_CHAT:
  case ROUTE_COMPLETIONS:
    return generate(c);
  case ROUTE_TOKENIZE:
    return tokenize(c);
  case ROUTE_DETOKENIZE:
    return detokenize(c);
  case ROUTE_NONE:
    break;
  }
  return MHD_NO;
}

static void on_completed(void *cls, struct MHD_Connection *mc, void **con_cls, enum MHD_RequestTerminationCode toe) {
  serve_http *h = cls;
  conn *c = *con_cls;
  (void)mc;
  if (!c) return;
  if (h->cfg.verbose) {
    const char *how = toe == MHD_REQUEST_TERMINATED_COMPLETED_OK      ? ""
                      : toe == MHD_REQUEST_TERMINATED_TIMEOUT_REACHED ? " (idle timeout)"
                      : toe == MHD_REQUEST_TERMINATED_DAEMON_SHUTDOWN ? " (shutdown)"
                      : toe == MHD_REQUEST_TERMINATED_CLIENT_ABORT    ? " (client closed)"
                                                                      : " (connection error)";
    uint32_t gen = 0, batched = 0;
    if (c->task) {
      serve_sched_lock(h->sched);
      gen = c->task->usage.completion_tokens;
      batched = c->task->batched_tokens;
      serve_sched_unlock(h->sched);
    }
    fprintf(stderr, "wgllm serve: %s %d, %u tokens (%u batched), %.3f s%s\n", c->what, c->status, gen, batched,
            now_s() - c->t0, how);
  }
  /* a task not finished (the client went away, or the stream broke) is cancelled here */
  serve_sched_release(h->sched, c->task);
  free(c->body);
  free(c->pend);
  free(c);
  *con_cls = NULL;
}

static void on_mhd_log(void *cls, const char *fmt, va_list ap) {
  serve_http *h = cls;
  if (!h->cfg.verbose) return;
  fputs("wgllm serve: libmicrohttpd: ", stderr);
  vfprintf(stderr, fmt, ap);
}

/* host:port as serve_http_start and serve_http_check_port bind it: the first address getaddrinfo gives. */
static struct addrinfo *resolve(const char *host, uint16_t port_no, char *err, size_t errlen) {
  struct addrinfo hints = {.ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM, .ai_flags = AI_PASSIVE}, *ai = NULL;
  char port[16];
  snprintf(port, sizeof port, "%u", port_no);
  int gai = getaddrinfo(host, port, &hints, &ai);
  if (gai) {
    snprintf(err, errlen, "--host %s: %s", host, gai_strerror(gai));
    return NULL;
  }
  return ai;
}

int serve_http_check_port(const char *host, uint16_t port_no, char *err, size_t errlen) {
  if (!port_no) return 0; /* any free port */
  struct addrinfo *ai = resolve(host, port_no, err, errlen);
  if (!ai) return -1;
  /* as libmicrohttpd binds: SO_REUSEADDR (a port in TIME_WAIT is free, one with a listener is not) and, for IPv6,
     IPV6_V6ONLY (it does not use MHD_USE_DUAL_STACK, so an IPv4 listener on the port is no conflict) */
  int fd = socket(ai->ai_family, SOCK_STREAM | SOCK_CLOEXEC, 0), one = 1, rc = -1;
  if (fd >= 0 && !setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one) &&
      (ai->ai_family != AF_INET6 || !setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &one, sizeof one)) &&
      !bind(fd, ai->ai_addr, ai->ai_addrlen))
    rc = 0;
  if (rc) /* errno: EADDRINUSE, EADDRNOTAVAIL (not an address of this machine), EACCES (a port under 1024) */
    snprintf(err, errlen, "cannot listen on %s port %u: %s", host, port_no, strerror(errno));
  if (fd >= 0) close(fd);
  freeaddrinfo(ai);
  return rc;
}

int serve_http_start(const serve_http_config *cfg, serve_sched *sched, const wgllm_vocab *vocab, serve_http **out,
                     char *err, size_t errlen) {
  *out = NULL;
  struct addrinfo *ai = resolve(cfg->host, cfg->port, err, errlen);
  if (!ai) return -1;
  serve_http *h = calloc(1, sizeof *h);
  if (!h) {
    freeaddrinfo(ai);
    snprintf(err, errlen, "out of memory");
    return -1;
  }
  h->cfg = *cfg;
  h->sched = sched;
  h->vocab = vocab;
  h->started = (long long)time(NULL);
  pthread_mutex_init(&h->vocab_mu, NULL);
  unsigned flags = MHD_USE_THREAD_PER_CONNECTION | MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_ERROR_LOG;
  if (ai->ai_family == AF_INET6) flags |= MHD_USE_IPv6;
  h->daemon = MHD_start_daemon(flags, 0, NULL, NULL, on_request, h, MHD_OPTION_EXTERNAL_LOGGER, on_mhd_log, h,
                               MHD_OPTION_SOCK_ADDR, ai->ai_addr, MHD_OPTION_CONNECTION_TIMEOUT, cfg->idle_timeout_s,
                               MHD_OPTION_CONNECTION_LIMIT, cfg->max_connections, MHD_OPTION_NOTIFY_COMPLETED,
                               on_completed, h, MHD_OPTION_THREAD_STACK_SIZE, (size_t)(512 * 1024), MHD_OPTION_END);
  freeaddrinfo(ai);
  if (!h->daemon) {
    snprintf(err, errlen, "cannot listen on %s port %u (in use, or not an address of this machine?)", cfg->host,
             cfg->port);
    pthread_mutex_destroy(&h->vocab_mu);
    free(h);
    return -1;
  }
  const union MHD_DaemonInfo *di = MHD_get_daemon_info(h->daemon, MHD_DAEMON_INFO_BIND_PORT);
  h->port = di ? di->port : cfg->port;
  *out = h;
  return 0;
}

uint16_t serve_http_port(const serve_http *h) { return h->port; }

void serve_http_stop(serve_http *h) {
  if (!h) return;
  h->stopping = 1; /* connection threads waiting on a task see it within 100 ms */
  MHD_stop_daemon(h->daemon);
  pthread_mutex_destroy(&h->vocab_mu);
  free(h);
}
