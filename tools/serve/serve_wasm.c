/* `wgllm serve` in the wasm build (wgllm-serve.wasm, web/web.mk), for a JavaScript transport (node/lib/serve.mjs on
   Node's http): the native server's options, scheduler and request handler behind a few exports. JavaScript
   parses argv here (serve_parse: the native --help, flags and errors), binds its port, loads the model and warms
   up (serve_load), then turns each HTTP request into an exchange (serve_request, serve_body, serve_run), pulls its
   answer piece by piece (serve_next: a serve_out at fixed offsets) and steps the scheduler (serve_step: one
   batched GPU step) on its event loop while work remains. serve_parse (files looked at through WASI), serve_load,
   serve_step and serve_stop may suspend (the GPU's waits, file reads), so JavaScript calls them through JSPI, one at
   a time; the others never wait and may be called while a step is suspended (the scheduler's lock is released
   across every GPU call, as natively, so a request handled meanwhile sees the state a thread would). */
#include "serve_options.h"
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define EXPORT(name) __attribute__((export_name(name), visibility("default")))

/* the layout JavaScript reads serve_next's answer with (node/lib/serve.mjs) */
_Static_assert(offsetof(serve_out, kind) == 0 && offsetof(serve_out, status) == 4 && offsetof(serve_out, streamed) == 8,
               "serve_out's layout changed: update node/lib/serve.mjs");
_Static_assert(offsetof(serve_out, n_headers) == 12 && offsetof(serve_out, headers) == 16 &&
                   offsetof(serve_out, data) == 80 && offsetof(serve_out, len) == 84 && offsetof(serve_out, path) == 88,
               "serve_out's layout changed: update node/lib/serve.mjs");
_Static_assert(offsetof(serve_out, close) == 92, "serve_out's layout changed: update node/lib/serve.mjs");

static serve_options opts;
static int parsed;
static wgllm_model *model; /* as loaded, the scheduler's from then on: read by serve_banner only, before any request */
static serve_sched *sched;
static serve_handler *handler;
static serve_out out;
static volatile int stop_asked; /* SIGINT / SIGTERM during the warm-up (JavaScript's signal handler) */
static char banner[1024];
static uint32_t tokens[2];

static int stop_requested(void) { return stop_asked; }

/* argv: the options after "serve" (argv[0] the first). Returns -1 to go on, else the exit status (0 after --help). */
EXPORT("serve_parse") int wasm_serve_parse(int argc, char **argv) {
  if (parsed) serve_options_free(&opts);
  int rc = serve_options_parse(argc, argv, &opts);
  parsed = 1;
  fflush(stdout);
  fflush(stderr);
  return rc;
}

/* what the transport needs of the options */
EXPORT("serve_host") const char *wasm_serve_host(void) { return opts.host; }
EXPORT("serve_port") int wasm_serve_port(void) { return (int)opts.port; }
EXPORT("serve_timeout") int wasm_serve_timeout(void) { return (int)opts.timeout; }
EXPORT("serve_max_connections") int wasm_serve_max_connections(void) { return (int)opts.max_connections; }
EXPORT("serve_verbose") int wasm_serve_verbose(void) { return opts.c.verbose; }
EXPORT("serve_web") const char *wasm_serve_web(void) { return opts.web; }
EXPORT("serve_model") const char *wasm_serve_model(void) { return opts.c.model; }
EXPORT("serve_warm_up") int wasm_serve_warm_up(void) { return !opts.no_warmup; }

/* Loads the model, makes the sessions and warms them up (the scheduler without a thread). loopback: --host resolves
   to loopback addresses only (then Host is checked, as natively: DNS rebinding). Returns 0, or the exit status with
   the reason said on stderr (0 when serve_request_stop ended the warm-up). */
EXPORT("serve_load") int wasm_serve_load(int loopback) {
  int rc = serve_options_open(&opts, &model);
  if (!rc) rc = serve_options_configure(&opts, model);
  if (!rc) {
    if (loopback) opts.handler.check_host = 1;
    char err[512];
    opts.sched.stop_requested = stop_requested;
    opts.sched.own_thread = 0;
    if (serve_sched_start(model, &opts.sched, &sched, err, sizeof err)) { /* the model is freed */
      model = NULL;
      fprintf(stderr, "wgllm serve: %s\n", err);
      rc = stop_asked ? 0 : 1;
    } else if (!(handler = serve_handler_new(&opts.handler, sched))) {
      fprintf(stderr, "wgllm serve: out of memory\n");
      rc = 1;
    }
  }
  if (rc) {
    if (sched) model = NULL; /* the scheduler's */
    serve_sched_stop(sched);
    sched = NULL;
    wgllm_model_free(model);
    model = NULL;
  }
  fflush(stderr);
  return rc;
}

EXPORT("serve_request_stop") void wasm_serve_request_stop(void) { stop_asked = 1; }

/* the line after "wgllm serve: " once listening on port */
EXPORT("serve_banner") const char *wasm_serve_banner(unsigned port) {
  serve_options_banner(&opts, model, port, banner, sizeof banner);
  return banner;
}

/* A request's head (a header absent: NULL; Transfer-Encoding's headers joined by ", "). Node's parser refuses
   repeated Content-Length headers itself (the transport answers its 400), so there is no conflict to pass. Host,
   Origin and Content-Type are checked as natively (403, 415). */
EXPORT("serve_request")
serve_exchange *wasm_serve_request(const char *method, const char *path, const char *authorization,
                                   const char *content_length, const char *transfer_encoding, const char *host,
                                   const char *origin, const char *content_type) {
  serve_head hd = {.method = method,
                   .path = path,
                   .authorization = authorization,
                   .content_length = content_length,
                   .transfer_encoding = transfer_encoding,
                   .checks_headers = 1,
                   .host = host,
                   .origin = origin,
                   .content_type = content_type};
  return serve_exchange_begin(handler, &hd);
}
EXPORT("serve_wants_body") int wasm_serve_wants_body(serve_exchange *x) { return serve_exchange_wants_body(x); }
EXPORT("serve_body") int wasm_serve_body(serve_exchange *x, const void *data, size_t n) {
  return serve_exchange_body(x, data, n);
}
EXPORT("serve_run") void wasm_serve_run(serve_exchange *x) { serve_exchange_run(x); }
/* the next piece of x's answer, in a serve_out valid until the next call */
EXPORT("serve_next") const serve_out *wasm_serve_next(serve_exchange *x) {
  serve_exchange_next(x, &out);
  return &out;
}
EXPORT("serve_no_file") void wasm_serve_no_file(serve_exchange *x) { serve_exchange_no_file(x); }
EXPORT("serve_status") int wasm_serve_status(serve_exchange *x) { return serve_exchange_status(x); }
/* [generated, batched] tokens of x */
EXPORT("serve_tokens") const uint32_t *wasm_serve_tokens(serve_exchange *x) {
  serve_exchange_tokens(x, &tokens[0], &tokens[1]);
  return tokens;
}
EXPORT("serve_free") void wasm_serve_free(serve_exchange *x) { serve_exchange_free(x); }

/* After a device loss that the scheduler could not recover from (the model not reloaded): the reason, else NULL.
   The transport then exits non-zero. */
static char lost_why[768];
EXPORT("serve_fatal") const char *wasm_serve_fatal(void) {
  return sched && serve_sched_unavailable(sched, lost_why, sizeof lost_why) == 2 ? lost_why : NULL;
}

/* One scheduler tick (a batched GPU step when jobs run; after a device loss, the model's reload): 1 while work
   remains, 0 when idle. */
EXPORT("serve_step") int wasm_serve_step(void) { return sched ? serve_sched_step(sched) : 0; }

/* The server stops: exchanges still waiting abort, running jobs are cancelled, the sessions and model freed. */
EXPORT("serve_stop") void wasm_serve_stop(void) {
  if (handler) serve_handler_stopping(handler);
  serve_sched_stop(sched);
  sched = NULL;
  serve_handler_free(handler);
  handler = NULL;
  model = NULL; /* freed by serve_sched_stop (or, without a scheduler, after a failed load) */
  if (parsed) serve_options_free(&opts);
  parsed = 0;
}
