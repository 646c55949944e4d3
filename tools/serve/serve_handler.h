/* The request handling of `wgllm serve`, apart from any transport: routes, the API key, body limits, OpenAI's
   endpoints handed to the scheduler and answered whole or as server-sent events, /tokenize and /detokenize on the
   model's vocabulary, /health and /v1/models, and the files of web_dir. A transport (serve_http.c on libmicrohttpd,
   node/lib/serve.mjs on Node's http through the wasm build's exports, serve_wasm.c) turns each request into an
   exchange: its head, its body bytes, then the answer pulled piece by piece (status and headers, body bytes, end)
   as the scheduler produces it. Nothing here blocks except serve_exchange_wait, for transports with a thread per
   connection. */
#ifndef WGLLM_SERVE_HANDLER_H
#define WGLLM_SERVE_HANDLER_H
#include "serve_openai.h"
#include "serve_sched.h"
#include <stdint.h>

/* The models a handler serves where there are several (serve_models.c); acquire NULL: the one scheduler given to
   serve_handler_new, named cfg.model_id. */
typedef struct serve_router {
  /* The model a request names (NULL or "": the default), held for the request until release (not unloaded
     meanwhile; a load begun if it is not loaded): 0 with *ref set, or -1 with e filled (404 for a name not served). */
  int (*acquire)(void *user, const char *name, void **ref, serve_error *e);
  /* Where the held model is: 1 still loading (the notify is called when the load ends), 0 loaded (*sched, *id: its
     name in answers, *lim: its requests' limits), -1 its load failed (e filled: 503, or 500 for a file that does not
     load). */
  int (*ready)(void *user, void *ref, serve_sched **sched, const char **id, const serve_limits **lim, serve_error *e);
  void (*release)(void *user, void *ref);
  void (*list)(void *user, cJSON *data); /* /v1/models: an object a model added to data (an array) */
  /* /metrics: fn called for each model loaded (its scheduler and name), which stays loaded meanwhile */
  void (*each)(void *user, void (*fn)(void *ud, serve_sched *s, const char *name), void *ud);
  size_t n_models; /* the models served, loaded or not: /metrics labels its series with the model's name past 1 */
  void *user;
} serve_router;

typedef struct serve_handler_config {
  const char *api_key;   /* NULL: none; else every endpoint but /health needs "Authorization: Bearer KEY" */
  size_t max_body;       /* bytes of a request body; more is 413 */
  size_t max_body_total; /* bytes of the bodies being received or parsed at once, in all; more is 503 (0: none) */
  const char *model_id;  /* the model's name in /v1/models and in answers (one model: router.acquire NULL) */
  serve_router router;   /* several models: requests go to the scheduler of the model they name */
  serve_limits limits;
  /* NULL, or a directory whose files are answered to GET / HEAD on paths no endpoint has ("/" is its index.html),
     without the API key: the browser build's demo page (make web) */
  const char *web_dir;
  /* DNS rebinding: when check_host is set (the server listens on loopback, or --allowed-hosts was given), a request
     whose Host is not localhost, 127.0.0.1, [::1] or one of allowed_hosts (any port) is refused (403) */
  int check_host;
  const char *const *allowed_hosts;
  size_t n_allowed_hosts;
  /* Origins besides the request's own ("http://" + its Host) whose requests are served (--cors; "*": any), their
     answers carrying Access-Control-Allow-Origin, their preflights (OPTIONS) answered 204 before any key check; a
     request with another Origin is refused (403). */
  const char *const *allowed_origins;
  size_t n_allowed_origins;
  /* NULL, or the chat page answered to GET / HEAD of / without the key, where no web_dir is given (the native
     server's web/chat/index.html; the Node server has none) */
  const char *chat_page;
  size_t chat_page_len;
} serve_handler_config;

typedef struct serve_handler serve_handler;

/* The strings of cfg are the caller's, kept until serve_handler_free; /tokenize and /detokenize use the scheduler's
   model's vocabulary (serve_sched_vocab_lock). NULL when out of memory. */
serve_handler *serve_handler_new(const serve_handler_config *cfg, serve_sched *sched);
/* Ends the waits of serve_exchange_wait (they then give SERVE_OUT_ABORT): the server stops. */
void serve_handler_stopping(serve_handler *h);
void serve_handler_free(serve_handler *h);

typedef struct serve_exchange serve_exchange;

typedef enum serve_out_kind {
  SERVE_OUT_WAIT = 0, /* nothing to send yet: the request waits for a session, its prefill or its next text */
  SERVE_OUT_HEAD,     /* the answer's status and headers (first, once) */
  SERVE_OUT_DATA,     /* body bytes (data, len: valid until the next call on the exchange) */
  SERVE_OUT_FILE,     /* the whole answer is web_dir's file at path, with status and headers as a HEAD's: the
                         transport sends it, or, when it cannot open it as a regular file, calls
                         serve_exchange_no_file and goes on (a 404 follows) */
  SERVE_OUT_END,      /* the answer is complete */
  SERVE_OUT_ABORT     /* the answer cannot go on (out of memory, the server stops): close the connection */
} serve_out_kind;

#define SERVE_OUT_MAX_HEADERS 8

typedef struct serve_out {
  serve_out_kind kind;
  /* HEAD (and FILE) */
  int status;
  int streamed; /* the body's length is not known ahead (server-sent events) */
  size_t n_headers;
  const char *headers[SERVE_OUT_MAX_HEADERS][2]; /* name, value */
  /* DATA */
  const char *data;
  size_t len;
  /* FILE */
  const char *path;
  /* HEAD: close the connection after this answer (the request's framing is refused, or its body is not read) */
  int close;
} serve_out;

/* A request's head as the transport read it (a header absent: NULL). */
typedef struct serve_head {
  const char *method, *path; /* path without the query */
  const char *model_query;   /* the query's model=NAME (GET /props, /slots), NULL when none */
  const char *authorization, *content_length;
  /* framing, from every header of the request: Content-Length headers that disagree, and Transfer-Encoding's
     value (its headers joined by ", ") */
  int content_length_conflict;
  const char *transfer_encoding;
  /* the transport passes Host, Origin and Content-Type (checks_headers): they are checked (403, 415) */
  int checks_headers;
  const char *host, *origin, *content_type;
} serve_head;

/* A request whose head has come. Framing (400 for Content-Length headers that disagree or Content-Length with
   Transfer-Encoding, 501 for a transfer coding other than chunked), Host and Origin (403), route, key, Content-Type
   (415 for a POST that is not application/json) and declared size (413) are checked here, so a refusal is answered
   before any body is read (serve_exchange_wants_body says whether to read it). NULL when out of memory. */
serve_exchange *serve_exchange_begin(serve_handler *h, const serve_head *head);
/* Whether the request's body is wanted (an endpoint taking one, not already refused). */
int serve_exchange_wants_body(const serve_exchange *x);
/* Bytes of the body as they come (past max_body they are dropped, and the answer is 413: serve_exchange_wants_body
   turns 0 at once, so a transport may answer without reading the rest). -1: out of memory. */
int serve_exchange_body(serve_exchange *x, const void *data, size_t n);
/* The whole request is in: it is handled (parsed and handed to the scheduler, or answered). */
void serve_exchange_run(serve_exchange *x);
/* The next piece of the answer into *o; SERVE_OUT_WAIT while there is none yet (call again after the scheduler's
   next step, or after serve_exchange_wait). */
serve_out_kind serve_exchange_next(serve_exchange *x, serve_out *o);
/* Whether serve_exchange_next would give something other than SERVE_OUT_WAIT now (an event-loop transport wakes
   the exchanges it parked when it turns 1). */
int serve_exchange_ready(serve_exchange *x);
/* Transports with a thread per connection: waits until the next piece may be ready or ms pass. */
void serve_exchange_wait(serve_exchange *x, int ms);
/* The file of SERVE_OUT_FILE could not be sent: the answer becomes a 404 (call serve_exchange_next again). */
void serve_exchange_no_file(serve_exchange *x);
/* For a log line: the answer's status (0 before its head), the tokens generated and those of them batched. */
int serve_exchange_status(const serve_exchange *x);
void serve_exchange_tokens(serve_exchange *x, uint32_t *generated, uint32_t *batched);
/* The transport is done with the request (answered, or the client has gone): a task that has not finished is
   cancelled, which frees its job and session at the scheduler's next tick. NULL is a no-op. */
void serve_exchange_free(serve_exchange *x);
#endif
