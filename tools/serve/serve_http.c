/* `wgllm serve`'s HTTP transport on libmicrohttpd. One polling thread on epoll reads every connection: an idle or
   slow one costs its socket and a little memory, not a thread, within --max-connections in all and
   --max-connections-per-ip from one address. Each request becomes an exchange of the request handler
   (serve_handler.c, which routes, checks and answers it), fed its head and body as libmicrohttpd reads them; a POST's
   handling (parsing, rendering and tokenizing the prompt, /tokenize) runs on one of SERVE_WORKERS worker threads
   while its connection is suspended. Its answer is sent whole, as a file of --web's directory (from its descriptor),
   or as server-sent events pulled from the exchange as the scheduler writes the text; while the answer waits for
   the scheduler the connection is parked (suspended), and the waker thread resumes it when the scheduler says a
   task changed (serve_http_wake), when its client has gone (closed, reset: the exchange ends, which cancels its
   task and frees its job and session) or when the server stops. The waker also enforces the deadlines: a request's
   head within --header-timeout of its start, its body within --body-timeout of its head (libmicrohttpd's own
   --timeout is an idle timer, which a client sending a byte now and then never meets). */
#define _GNU_SOURCE
#include "serve_http.h"
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <microhttpd.h>
#include <netdb.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

/* the worker threads that run requests' handling (parsing, rendering and tokenizing the prompt, /tokenize): prompts
   are prepared one at a time (the model's text calls share its error buffer) and /tokenize's calls one at a time,
   so 4 leave two for the other requests while those two wait on each other */
#define SERVE_WORKERS 4

typedef struct conn conn;

/* one TCP connection, for its deadlines: from libmicrohttpd's connection notifications to its close */
typedef struct track {
  int fd;
  double since;     /* when the current request's head began: the connection's accept, or, on a kept connection,
                       --timeout after the last answer's end (idle until then: libmicrohttpd's idle timer's) */
  double head_done; /* 0 until the head is in; then when */
  int body_done;    /* the whole body is in */
  int cut;          /* shut down for a deadline */
  struct track *prev, *next;
} track;

struct serve_http {
  serve_http_config cfg;
  serve_handler *handler;
  struct MHD_Daemon *daemon;
  uint16_t port;
  pthread_mutex_t mu;     /* the lists below and every conn's parked / job fields */
  conn *parked;           /* suspended, waiting for their exchange's next piece */
  track *tracks;          /* every open connection */
  conn *jobs, *jobs_tail; /* waiting for a worker */
  pthread_cond_t job_cv;
  pthread_t workers[SERVE_WORKERS], waker;
  int n_workers, waker_started, stopping;
  /* the scheduler's notify: a task changed */
  pthread_mutex_t wake_mu;
  pthread_cond_t wake_cv;
  int woken;
};

typedef enum job_state { JOB_NONE = 0, JOB_QUEUED, JOB_RUNNING, JOB_DONE } job_state;

/* one request on a connection */
struct conn {
  serve_http *h;
  struct MHD_Connection *mc;
  serve_exchange *x;
  track *tr;
  double t0;
  char what[96]; /* "POST /v1/completions", for the log line */
  /* the stream: the bytes of the current event not yet handed to libmicrohttpd */
  char *pend;
  size_t pend_len, pend_off;
  /* under h->mu */
  job_state job; /* serve_exchange_run on a worker (the connection suspended meanwhile) */
  int parked;    /* suspended until the exchange is ready (in h->parked) */
  int gone;      /* the client went while it was parked */
  conn *next_park, *prev_park, *next_job, *next_resume;
};

static double now_s(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

/* The client closed or reset the connection (a request it pipelined after this one does not count). A FIN reads
   as gone: a client that only shut its sending side (shutdown(SHUT_WR), legal HTTP but rare) looks the same as
   one that closed, and closing is what leaving clients do, so such a client's request is cancelled. */
static int fd_gone(int fd) {
  struct pollfd p = {.fd = fd, .events = POLLRDHUP};
  return poll(&p, 1, 0) > 0 && (p.revents & (POLLRDHUP | POLLHUP | POLLERR | POLLNVAL));
}

/* The connection's idle timer restarts (time spent waiting for the model is not the client's idleness):
   libmicrohttpd restarts it when a timeout is set on a connection that had none. */
static void restart_idle_timer(conn *c) {
  MHD_set_connection_option(c->mc, MHD_CONNECTION_OPTION_TIMEOUT, 0u);
  MHD_set_connection_option(c->mc, MHD_CONNECTION_OPTION_TIMEOUT, c->h->cfg.idle_timeout_s);
}

/* On the polling thread: the connection waits (suspended, costing no thread) until its exchange has its next piece,
   its client goes, or the server stops; the waker thread resumes it, and libmicrohttpd calls back again. */
static void park(conn *c) {
  serve_http *h = c->h;
  MHD_suspend_connection(c->mc);
  pthread_mutex_lock(&h->mu);
  c->parked = 1;
  c->prev_park = NULL;
  c->next_park = h->parked;
  if (h->parked) h->parked->prev_park = c;
  h->parked = c;
  pthread_mutex_unlock(&h->mu);
  pthread_mutex_lock(&h->wake_mu); /* the waker looks at once: the piece may have come meanwhile */
  h->woken = 1;
  pthread_cond_signal(&h->wake_cv);
  pthread_mutex_unlock(&h->wake_mu);
}

/* under h->mu: out of the parked list (the caller resumes it once it has let go of h->mu: libmicrohttpd takes
   its own locks in MHD_resume_connection, and calls on_connection, which takes h->mu, under some of them) */
static void unpark(serve_http *h, conn *c) {
  if (c->prev_park)
    c->prev_park->next_park = c->next_park;
  else
    h->parked = c->next_park;
  if (c->next_park) c->next_park->prev_park = c->prev_park;
  c->parked = 0;
  c->next_park = c->prev_park = NULL;
}

static void add_headers(struct MHD_Response *r, const serve_out *o) {
  for (size_t i = 0; i < o->n_headers; i++)
    MHD_add_response_header(r, o->headers[i][0], o->headers[i][1]);
}

/* The stream's bytes: when the exchange has nothing new the connection is parked and 0 returned (libmicrohttpd
   allows that of a suspended connection); the waker resumes it when the scheduler writes text. */
static ssize_t stream_read(void *cls, uint64_t pos, char *buf, size_t max) {
  conn *c = cls;
  (void)pos;
  if (c->gone) return MHD_CONTENT_READER_END_WITH_ERROR;
  while (c->pend_off >= c->pend_len) {
    serve_out o;
    serve_out_kind k = serve_exchange_next(c->x, &o);
    if (k == SERVE_OUT_WAIT) {
      park(c);
      return 0;
    }
    if (k == SERVE_OUT_END) return MHD_CONTENT_READER_END_OF_STREAM;
    if (k != SERVE_OUT_DATA) return MHD_CONTENT_READER_END_WITH_ERROR;
    free(c->pend);
    c->pend_len = c->pend_off = 0;
    if (!(c->pend = malloc(o.len ? o.len : 1))) return MHD_CONTENT_READER_END_WITH_ERROR;
    memcpy(c->pend, o.data, o.len);
    c->pend_len = o.len;
    restart_idle_timer(c);
  }
  size_t n = c->pend_len - c->pend_off < max ? c->pend_len - c->pend_off : max;
  memcpy(buf, c->pend + c->pend_off, n);
  c->pend_off += n;
  return (ssize_t)n;
}

/* A file of --web's directory from its descriptor; 0 when it is not a regular file that opens. */
static struct MHD_Response *file_response(const char *path) {
  int fd = open(path, O_RDONLY | O_CLOEXEC);
  struct stat st;
  if (fd < 0) return NULL;
  if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    close(fd);
    return NULL;
  }
  struct MHD_Response *r = MHD_create_response_from_fd((uint64_t)st.st_size, fd); /* closes fd */
  if (!r) close(fd);
  return r;
}

/* The exchange's answer, queued on the connection once its head is known; the connection is parked while the
   answer waits for the scheduler (MHD_YES, nothing queued: libmicrohttpd calls on_request again once resumed). */
static enum MHD_Result respond(conn *c) {
  serve_out o;
  if (c->gone) return MHD_NO;
  serve_out_kind k = serve_exchange_next(c->x, &o);
  if (k == SERVE_OUT_WAIT) {
    park(c);
    return MHD_YES;
  }
  struct MHD_Response *r = NULL;
  while (k == SERVE_OUT_FILE) {
    if ((r = file_response(o.path))) break;
    serve_exchange_no_file(c->x);
    k = serve_exchange_next(c->x, &o);
  }
  if (k == SERVE_OUT_HEAD && o.streamed)
    r = MHD_create_response_from_callback(MHD_SIZE_UNKNOWN, 4096, stream_read, c, NULL);
  else if (k == SERVE_OUT_HEAD) {
    serve_out body;
    if (serve_exchange_next(c->x, &body) != SERVE_OUT_DATA) return MHD_NO;
    r = MHD_create_response_from_buffer(body.len, (void *)body.data, MHD_RESPMEM_MUST_COPY);
  }
  if (!r) return MHD_NO; /* the server stops, or out of memory */
  add_headers(r, &o);
  if (o.close) MHD_add_response_header(r, MHD_HTTP_HEADER_CONNECTION, "close");
  restart_idle_timer(c);
  enum MHD_Result ok = MHD_queue_response(c->mc, (unsigned)o.status, r);
  MHD_destroy_response(r);
  return ok;
}

/* ---------- the workers: a request's handling off the polling thread ---------- */
static void *worker_main(void *arg) {
  serve_http *h = arg;
  pthread_mutex_lock(&h->mu);
  for (;;) {
    while (!h->jobs && !h->stopping)
      pthread_cond_wait(&h->job_cv, &h->mu);
    if (!h->jobs) break; /* stopping, nothing left */
    conn *c = h->jobs;
    h->jobs = c->next_job;
    if (!h->jobs) h->jobs_tail = NULL;
    c->job = JOB_RUNNING;
    pthread_mutex_unlock(&h->mu);
    serve_exchange_run(c->x); /* parses, renders and tokenizes the prompt, hands the task to the scheduler */
    pthread_mutex_lock(&h->mu);
    c->job = JOB_DONE;
    pthread_mutex_unlock(&h->mu);
    MHD_resume_connection(c->mc); /* libmicrohttpd calls on_request again: the answer */
    pthread_mutex_lock(&h->mu);
  }
  pthread_mutex_unlock(&h->mu);
  return NULL;
}

/* On the polling thread: the request's handling goes to a worker; the connection waits suspended. */
static enum MHD_Result run_on_worker(conn *c) {
  serve_http *h = c->h;
  MHD_suspend_connection(c->mc);
  pthread_mutex_lock(&h->mu);
  c->job = JOB_QUEUED;
  c->next_job = NULL;
  if (h->jobs_tail)
    h->jobs_tail->next_job = c;
  else
    h->jobs = c;
  h->jobs_tail = c;
  pthread_cond_signal(&h->job_cv);
  pthread_mutex_unlock(&h->mu);
  return MHD_YES;
}

/* ---------- the waker: parked connections resumed, deadlines enforced ---------- */
void serve_http_wake(void *user) {
  serve_http *h = user;
  pthread_mutex_lock(&h->wake_mu);
  h->woken = 1;
  pthread_cond_signal(&h->wake_cv);
  pthread_mutex_unlock(&h->wake_mu);
}

static void *waker_main(void *arg) {
  serve_http *h = arg;
  double last_sweep = 0;
  for (;;) {
    pthread_mutex_lock(&h->wake_mu);
    if (!h->woken) {
      struct timespec until;
      clock_gettime(CLOCK_MONOTONIC, &until);
      until.tv_nsec += 100 * 1000000L;
      if (until.tv_nsec >= 1000000000L) {
        until.tv_sec++;
        until.tv_nsec -= 1000000000L;
      }
      pthread_cond_timedwait(&h->wake_cv, &h->wake_mu, &until);
    }
    h->woken = 0;
    pthread_mutex_unlock(&h->wake_mu);
    double now = now_s();
    int sweep = now - last_sweep >= 0.1; /* gone clients and deadlines: every 100 ms */
    if (sweep) last_sweep = now;
    pthread_mutex_lock(&h->mu);
    int stopping = h->stopping;
    conn *resume = NULL; /* resumed below, h->mu let go (a suspended connection is not freed meanwhile) */
    for (conn *c = h->parked, *next; c; c = next) {
      next = c->next_park;
      int gone = sweep && c->tr && fd_gone(c->tr->fd);
      if (gone) c->gone = 1;
      if (stopping || gone || serve_exchange_ready(c->x)) {
        unpark(h, c);
        c->next_resume = resume;
        resume = c;
      }
    }
    for (track *t = h->tracks; sweep && t; t = t->next) {
      if (t->cut) continue;
      /* the head within --header-timeout of the request's start; the body within --body-timeout of the head */
      int late = !t->head_done ? now - t->since > h->cfg.header_timeout_s
                               : !t->body_done && now - t->head_done > h->cfg.body_timeout_s;
      if (late) {
        shutdown(t->fd, SHUT_RDWR); /* libmicrohttpd sees the connection end and closes it */
        t->cut = 1;
      }
    }
    pthread_mutex_unlock(&h->mu);
    while (resume) {
      conn *c = resume;
      resume = c->next_resume;
      MHD_resume_connection(c->mc);
    }
    if (stopping) break;
  }
  return NULL;
}

/* The exchange's whole answer written to the socket directly, then the connection closed (the caller returns
   MHD_NO): libmicrohttpd queues an answer only once the body has come, and the 413 of a chunked body past
   --max-body is due before the rest is read. The socket's send buffer, empty since nothing was answered on it yet,
   takes these few hundred bytes at once. */
static void send_raw(conn *c) {
  serve_out o, body;
  const union MHD_ConnectionInfo *ci = MHD_get_connection_info(c->mc, MHD_CONNECTION_INFO_CONNECTION_FD);
  if (!ci || serve_exchange_next(c->x, &o) != SERVE_OUT_HEAD || serve_exchange_next(c->x, &body) != SERVE_OUT_DATA)
    return;
  char head[512];
  int n = snprintf(head, sizeof head, "HTTP/1.1 %d %s\r\nConnection: close\r\nContent-Length: %zu\r\n", o.status,
                   o.status == 413   ? "Content Too Large"
                   : o.status == 503 ? "Service Unavailable"
                                     : "Error",
                   body.len);
  for (size_t i = 0; i < o.n_headers && n < (int)sizeof head; i++)
    n += snprintf(head + n, sizeof head - (size_t)n, "%s: %s\r\n", o.headers[i][0], o.headers[i][1]);
  if (n + 2 >= (int)sizeof head) return;
  memcpy(head + n, "\r\n", 2);
  if (send(ci->connect_fd, head, (size_t)n + 2, MSG_NOSIGNAL) == n + 2)
    (void)!send(ci->connect_fd, body.data, body.len, MSG_NOSIGNAL);
  shutdown(ci->connect_fd, SHUT_WR);
}

/* What serve_exchange_begin needs of the request's headers beyond the first of each: libmicrohttpd keeps every
   header line, but its lookup gives the first, and it reads a body by Transfer-Encoding: chunked even beside a
   Content-Length. */
typedef struct head_scan {
  const char *content_length;
  int content_length_conflict;
  char te[256]; /* the Transfer-Encoding headers joined by ", " */
  int has_te;
} head_scan;

static enum MHD_Result scan_header(void *cls, enum MHD_ValueKind kind, const char *key, const char *value) {
  head_scan *hs = cls;
  (void)kind;
  if (!value) value = "";
  if (!strcasecmp(key, "Content-Length")) {
    if (hs->content_length && strcmp(hs->content_length, value)) hs->content_length_conflict = 1;
    if (!hs->content_length) hs->content_length = value;
  } else if (!strcasecmp(key, "Transfer-Encoding")) {
    size_t n = strlen(hs->te);
    snprintf(hs->te + n, sizeof hs->te - n, "%s%s", hs->has_te ? ", " : "", value);
    hs->has_te = 1;
  }
  return MHD_YES;
}

/* ---------- libmicrohttpd's callbacks ---------- */
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
    const union MHD_ConnectionInfo *ci = MHD_get_connection_info(mc, MHD_CONNECTION_INFO_SOCKET_CONTEXT);
    c->tr = ci ? ci->socket_context : NULL;
    if (c->tr) {
      pthread_mutex_lock(&h->mu);
      c->tr->head_done = c->t0;
      pthread_mutex_unlock(&h->mu);
    }
    snprintf(c->what, sizeof c->what, "%.8s %.80s", method, url);
    head_scan hs = {0};
    MHD_get_connection_values(mc, MHD_HEADER_KIND, scan_header, &hs);
    serve_head hd = {.method = method,
                     .path = url,
                     .model_query = MHD_lookup_connection_value(mc, MHD_GET_ARGUMENT_KIND, "model"),
                     .authorization = MHD_lookup_connection_value(mc, MHD_HEADER_KIND, "Authorization"),
                     .content_length = hs.content_length,
                     .content_length_conflict = hs.content_length_conflict,
                     .transfer_encoding = hs.has_te ? hs.te : NULL,
                     .checks_headers = 1,
                     .host = MHD_lookup_connection_value(mc, MHD_HEADER_KIND, "Host"),
                     .origin = MHD_lookup_connection_value(mc, MHD_HEADER_KIND, "Origin"),
                     .content_type = MHD_lookup_connection_value(mc, MHD_HEADER_KIND, "Content-Type")};
    c->x = serve_exchange_begin(h->handler, &hd);
    if (!c->x) return MHD_NO;
    if (!serve_exchange_wants_body(c->x)) return respond(c);
    return MHD_YES;
  }
  if (*upload_size) { /* a part of the body */
    size_t n = *upload_size;
    *upload_size = 0;
    if (serve_exchange_body(c->x, upload, n)) return MHD_NO;
    if (serve_exchange_wants_body(c->x)) return MHD_YES;
    /* past --max-body (a chunked body, or one longer than its Content-Length said): answered now, the rest unread;
       libmicrohttpd takes an answer only once the body is in, so the connection is closed when it refuses it */
    serve_exchange_run(c->x);
    send_raw(c);
    return MHD_NO;
  }
  pthread_mutex_lock(&h->mu);
  job_state job = c->job;
  if (c->tr) c->tr->body_done = 1;
  pthread_mutex_unlock(&h->mu);
  if (job == JOB_NONE) {
    if (!strcmp(method, "POST")) return run_on_worker(c); /* parsing, the prompt, /tokenize: off this thread */
    serve_exchange_run(c->x);                             /* /health, /v1/models, files: at once */
    c->job = JOB_DONE;
  }
  return respond(c);
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
    if (c->x) serve_exchange_tokens(c->x, &gen, &batched);
    fprintf(stderr, "wgllm serve: %s %d, %u tokens (%u batched), %.3f s%s\n", c->what,
            c->x ? serve_exchange_status(c->x) : 0, gen, batched, now_s() - c->t0, how);
  }
  if (c->tr) { /* a kept connection's next request: --timeout to begin (libmicrohttpd's idle timer), then its head
                  within --header-timeout */
    pthread_mutex_lock(&h->mu);
    c->tr->since = now_s() + h->cfg.idle_timeout_s;
    c->tr->head_done = 0;
    c->tr->body_done = 0;
    pthread_mutex_unlock(&h->mu);
  }
  /* a task not finished (the client went away, or the stream broke) is cancelled here */
  serve_exchange_free(c->x);
  free(c->pend);
  free(c);
  *con_cls = NULL;
}

/* Every connection is tracked from its accept to its close, for the head and body deadlines. */
static void on_connection(void *cls, struct MHD_Connection *mc, void **socket_context,
                          enum MHD_ConnectionNotificationCode code) {
  serve_http *h = cls;
  if (code == MHD_CONNECTION_NOTIFY_STARTED) {
    const union MHD_ConnectionInfo *ci = MHD_get_connection_info(mc, MHD_CONNECTION_INFO_CONNECTION_FD);
    track *t = ci ? calloc(1, sizeof *t) : NULL;
    *socket_context = t;
    if (!t) return;
    t->fd = ci->connect_fd;
    t->since = now_s();
    pthread_mutex_lock(&h->mu);
    t->next = h->tracks;
    if (h->tracks) h->tracks->prev = t;
    h->tracks = t;
    pthread_mutex_unlock(&h->mu);
    return;
  }
  track *t = *socket_context; /* MHD_CONNECTION_NOTIFY_CLOSED: before libmicrohttpd closes the socket */
  if (!t) return;
  pthread_mutex_lock(&h->mu);
  if (t->prev)
    t->prev->next = t->next;
  else
    h->tracks = t->next;
  if (t->next) t->next->prev = t->prev;
  pthread_mutex_unlock(&h->mu);
  free(t);
  *socket_context = NULL;
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

int serve_http_is_loopback(const char *host) {
  char err[256];
  struct addrinfo *ai = resolve(host, 80, err, sizeof err), *p;
  int loop = ai != NULL;
  for (p = ai; p; p = p->ai_next)
    if (p->ai_family == AF_INET)
      loop = loop && (ntohl(((struct sockaddr_in *)p->ai_addr)->sin_addr.s_addr) >> 24) == 127;
    else if (p->ai_family == AF_INET6)
      loop = loop && IN6_IS_ADDR_LOOPBACK(&((struct sockaddr_in6 *)p->ai_addr)->sin6_addr);
    else
      loop = 0;
  if (ai) freeaddrinfo(ai);
  return loop;
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

int serve_http_start(const serve_http_config *cfg, serve_handler *handler, serve_http **out, char *err, size_t errlen) {
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
  h->handler = handler;
  pthread_mutex_init(&h->mu, NULL);
  pthread_mutex_init(&h->wake_mu, NULL);
  pthread_cond_init(&h->job_cv, NULL);
  pthread_condattr_t ca;
  pthread_condattr_init(&ca);
  pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
  pthread_cond_init(&h->wake_cv, &ca);
  pthread_condattr_destroy(&ca);
  /* one polling thread on epoll: an idle or slow connection costs its socket and a little memory, not a thread;
     suspended connections (waiting for a worker or the scheduler) are not polled */
  unsigned flags = MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_EPOLL | MHD_ALLOW_SUSPEND_RESUME | MHD_USE_ERROR_LOG;
  if (ai->ai_family == AF_INET6) flags |= MHD_USE_IPv6;
  h->daemon = MHD_start_daemon(flags, 0, NULL, NULL, on_request, h, MHD_OPTION_EXTERNAL_LOGGER, on_mhd_log, h,
                               MHD_OPTION_SOCK_ADDR, ai->ai_addr, MHD_OPTION_CONNECTION_TIMEOUT, cfg->idle_timeout_s,
                               MHD_OPTION_CONNECTION_LIMIT, cfg->max_connections, MHD_OPTION_PER_IP_CONNECTION_LIMIT,
                               cfg->max_connections_per_ip, MHD_OPTION_NOTIFY_COMPLETED, on_completed, h,
                               MHD_OPTION_NOTIFY_CONNECTION, on_connection, h, MHD_OPTION_END);
  freeaddrinfo(ai);
  if (!h->daemon) {
    snprintf(err, errlen, "cannot listen on %s port %u (in use, or not an address of this machine?)", cfg->host,
             cfg->port);
    serve_http_stop(h);
    return -1;
  }
  for (int i = 0; i < SERVE_WORKERS; i++)
    if (!pthread_create(&h->workers[i], NULL, worker_main, h)) h->n_workers++;
  if (!pthread_create(&h->waker, NULL, waker_main, h)) h->waker_started = 1;
  if (h->n_workers < 1 || !h->waker_started) {
    snprintf(err, errlen, "cannot start the server's threads");
    serve_http_stop(h);
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
  if (h->daemon) serve_handler_stopping(h->handler); /* exchanges answer SERVE_OUT_ABORT from now on */
  pthread_mutex_lock(&h->mu);
  h->stopping = 1; /* the workers finish the requests queued, then end */
  pthread_cond_broadcast(&h->job_cv);
  pthread_mutex_unlock(&h->mu);
  for (int i = 0; i < h->n_workers; i++)
    pthread_join(h->workers[i], NULL);
  serve_http_wake(h); /* the waker resumes every parked connection, then ends */
  if (h->waker_started) pthread_join(h->waker, NULL);
  if (h->daemon) MHD_stop_daemon(h->daemon);
  pthread_cond_destroy(&h->job_cv);
  pthread_cond_destroy(&h->wake_cv);
  pthread_mutex_destroy(&h->wake_mu);
  pthread_mutex_destroy(&h->mu);
  free(h);
}
