/* The HTTP side of `wgllm serve` on libmicrohttpd (a thread per connection): routes, the API key, body limits,
   OpenAI's endpoints handed to the scheduler and answered whole or as server-sent events, /tokenize and
   /detokenize on the model's vocabulary, /health and /v1/models; with web_dir, static files (the demo page). */
#ifndef WGLLM_SERVE_HTTP_H
#define WGLLM_SERVE_HTTP_H
#include "serve_openai.h"
#include "serve_sched.h"
#include <stdint.h>

typedef struct serve_http_config {
  const char *host;         /* address to listen on ("127.0.0.1", "::", a name) */
  uint16_t port;            /* 0: any free port (serve_http_port says which) */
  const char *api_key;      /* NULL: none; else every endpoint but /health needs "Authorization: Bearer KEY" */
  size_t max_body;          /* bytes of a request body; more is 413 */
  unsigned idle_timeout_s;  /* a connection that sends or reads nothing for this long is closed */
  unsigned max_connections; /* open at once (each a thread); more are refused at accept */
  const char *model_id;     /* the model's name in /v1/models and in answers */
  serve_limits limits;
  int verbose; /* a line a request on stderr */
  /* NULL, or a directory whose files are answered to GET / HEAD on paths no endpoint has ("/" is its index.html),
     without the API key: the browser build's demo page (make web) */
  const char *web_dir;
} serve_http_config;

typedef struct serve_http serve_http;

/* Whether host:port can be bound now (port 0: yes), so that a port in use is reported before the warm-up rather
   than after it. Returns 0, or -1 with the reason in err (the message serve_http_start gives). */
int serve_http_check_port(const char *host, uint16_t port, char *err, size_t errlen);
/* Listens and serves until serve_http_stop. vocab: the model's (wgllm_model_vocab), used on the HTTP threads for
   /tokenize and /detokenize, one call at a time. Returns 0, or -1 with the reason in err. */
int serve_http_start(const serve_http_config *cfg, serve_sched *sched, const wgllm_vocab *vocab, serve_http **out,
                     char *err, size_t errlen);
uint16_t serve_http_port(const serve_http *h);
/* Stops listening, ends the connections (streams in progress end with an error) and frees h. */
void serve_http_stop(serve_http *h);
#endif
