/* The libmicrohttpd transport of `wgllm serve` on its request handler (serve_handler.h): one polling thread on epoll
   for every connection, a few workers for the requests' handling, and a waker for the connections that wait;
   listening, reading requests into exchanges, sending their answers whole, as files or as server-sent events, the
   idle, head and body deadlines, the connection limits (in all and per address), and noticing clients that have
   gone. */
#ifndef WGLLM_SERVE_HTTP_H
#define WGLLM_SERVE_HTTP_H
#include "serve_handler.h"
#include <stdint.h>

typedef struct serve_http_config {
  const char *host;                /* address to listen on ("127.0.0.1", "::", a name) */
  uint16_t port;                   /* 0: any free port (serve_http_port says which) */
  unsigned idle_timeout_s;         /* a connection that sends or reads nothing for this long is closed */
  unsigned header_timeout_s;       /* a request's head must have come this long after it began */
  unsigned body_timeout_s;         /* a request's body must have come this long after its head */
  unsigned max_connections;        /* open at once; more are refused at accept */
  unsigned max_connections_per_ip; /* open at once from one address; more are refused at accept */
  int verbose;                     /* a line a request on stderr */
} serve_http_config;

typedef struct serve_http serve_http;

/* Whether host:port can be bound now (port 0: yes), so that a port in use is reported before the warm-up rather
   than after it. Returns 0, or -1 with the reason in err (the message serve_http_start gives). */
int serve_http_check_port(const char *host, uint16_t port, char *err, size_t errlen);
/* Whether every address host resolves to is a loopback one (127.0.0.0/8, ::1): the Host check's default. */
int serve_http_is_loopback(const char *host);
/* Listens and serves every request through handler until serve_http_stop. Returns 0, or -1 with the reason in err. */
int serve_http_start(const serve_http_config *cfg, serve_handler *handler, serve_http **out, char *err, size_t errlen);
uint16_t serve_http_port(const serve_http *h);
/* The scheduler's notify (serve_sched_set_notify(sched, serve_http_wake, h)): a task changed, so the connections
   parked on their exchanges are looked at. */
void serve_http_wake(void *h);
/* Stops listening, ends the connections (streams in progress end with an error) and frees h. */
void serve_http_stop(serve_http *h);
#endif
