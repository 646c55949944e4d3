/* `wgllm serve`: an OpenAI-compatible HTTP server for one model or several (serve_models.c). Parses the options
   (serve_options.c: the CLI's tables and parser), loads the model, starts the scheduler on its own thread
   (serve_sched.c: --parallel sessions), the request handler (serve_handler.c) and its libmicrohttpd transport
   (serve_http.c), prints the address it listens on, and runs until SIGINT or SIGTERM, or until the device is lost and
   the model cannot be reloaded (exit 1). docs/SERVING.md describes it. */
#include "serve_main.h"
#include "serve_http.h"
#include "serve_models.h"
#include "serve_options.h"
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

/* the chat page at / (web/chat/index.html as tools/embed_file.cmake writes it) */
extern const unsigned char serve_chat_page[];
extern const size_t serve_chat_page_len;

/* the warm-up's stop_requested: SIGINT or SIGTERM pending (they are blocked: sigwait takes them later) */
static int stop_signal_pending(void) {
  sigset_t p;
  return !sigpending(&p) && (sigismember(&p, SIGINT) == 1 || sigismember(&p, SIGTERM) == 1);
}

/* the scheduler's fatal: the device was lost and the model could not be reloaded. SIGTERM to the process ends the
   sigwait below, which then sees the scheduler unavailable for good and exits 1. */
static void sched_fatal(void *user) {
  (void)user;
  kill(getpid(), SIGTERM);
}

int serve_command(int argc, char **argv) {
  serve_options a;
  int rc = serve_options_parse(argc, argv, &a);
  if (rc >= 0) {
    serve_options_free(&a);
    return rc;
  }
  /* every thread started from here on (the scheduler, libmicrohttpd's) leaves SIGINT/SIGTERM to sigwait below */
  sigset_t stop_signals;
  sigemptyset(&stop_signals);
  sigaddset(&stop_signals, SIGINT);
  sigaddset(&stop_signals, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &stop_signals, NULL);
  signal(SIGPIPE, SIG_IGN);

  wgllm_model *m = NULL;
  rc = serve_options_open(&a, &m);
  if (!rc) rc = serve_options_configure(&a, m);
  if (rc) {
    wgllm_model_free(m);
    serve_options_free(&a);
    return rc;
  }
  a.sched.stop_requested = stop_signal_pending;
  a.sched.own_thread = 1;
  a.sched.fatal = sched_fatal;
  char err[768];
  if (serve_http_check_port(a.host, (uint16_t)a.port, err, sizeof err)) {
    fprintf(stderr, "wgllm serve: %s\n", err);
    wgllm_model_free(m);
    serve_options_free(&a);
    return 1;
  }
  serve_sched *sched = NULL;
  struct timespec w0, w1;
  clock_gettime(CLOCK_MONOTONIC, &w0);
  if (serve_sched_start(m, &a.sched, &sched, err, sizeof err)) { /* m is freed */
    int asked = stop_signal_pending(); /* SIGINT/SIGTERM ended the warm-up: a stop, as after sigwait below */
    fprintf(stderr, "wgllm serve: %s\n", err);
    serve_options_free(&a);
    return asked ? 0 : 1;
  }
  clock_gettime(CLOCK_MONOTONIC, &w1);
  if (a.sched.warm_up)
    fprintf(stderr, "wgllm serve: warmed up in %.2f s (sessions made and pipelines built; --no-warmup skips it)\n",
            (double)(w1.tv_sec - w0.tv_sec) + (double)(w1.tv_nsec - w0.tv_nsec) * 1e-9);
  if (serve_http_is_loopback(a.host)) a.handler.check_host = 1; /* DNS rebinding: Host is checked */
  a.handler.chat_page = (const char *)serve_chat_page;          /* web/chat/index.html, embedded by the build */
  a.handler.chat_page_len = serve_chat_page_len;
  /* the models served (the default, loaded; -m's others and --models-dir's when a request names one) */
  serve_models *models = serve_models_new(&a, sched, serve_models_bytes(m));
  if (!models) { /* sched is stopped */
    fprintf(stderr, "wgllm serve: out of memory\n");
    serve_options_free(&a);
    return 1;
  }
  a.handler.router = serve_models_router(models);
  serve_handler *handler = serve_handler_new(&a.handler, sched);
  serve_http_config hc = {0};
  hc.host = a.host;
  hc.port = (uint16_t)a.port;
  hc.idle_timeout_s = (unsigned)a.timeout;
  hc.header_timeout_s = (unsigned)a.header_timeout;
  hc.body_timeout_s = (unsigned)a.body_timeout;
  hc.max_connections = (unsigned)a.max_connections;
  hc.max_connections_per_ip = (unsigned)a.max_connections_per_ip;
  hc.verbose = a.c.verbose;
  serve_http *http = NULL;
  if (!handler) snprintf(err, sizeof err, "out of memory");
  if (!handler || serve_http_start(&hc, handler, &http, err, sizeof err)) {
    fprintf(stderr, "wgllm serve: %s\n", err);
    serve_handler_free(handler);
    serve_models_free(models);
    serve_options_free(&a);
    return 1;
  }
  serve_models_set_notify(models, serve_http_wake, http); /* new text, a model loaded: the waiting ones wake */
  char banner[1024];
  serve_options_banner(&a, m, serve_http_port(http), banner, sizeof banner); /* m: the scheduler's, not yet reloaded */
  printf("wgllm serve: %s\n", banner);
  fflush(stdout);
  int sig = 0;
  sigwait(&stop_signals, &sig);
  int lost = serve_sched_unavailable(sched, err, sizeof err) == 2; /* sched_fatal's SIGTERM */
  if (lost)
    fprintf(stderr, "wgllm serve: exiting: %s\n", err);
  else
    fprintf(stderr, "wgllm serve: %s: stopping\n", sig == SIGINT ? "SIGINT" : "SIGTERM");
  serve_http_stop(http); /* ends every connection (the notify is only signalled meanwhile) */
  serve_models_set_notify(models, NULL, NULL);
  serve_handler_free(handler);
  serve_models_free(models); /* every scheduler, the default's too */
  serve_options_free(&a);
  return lost ? 1 : 0;
}
