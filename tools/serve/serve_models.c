/* Several models in one `wgllm serve` (serve_models.h): the registry of the models served, their loads on a thread of
   its own, least-recently-used unloading under --models-max and --models-memory, and the router the request handler
   calls (which model a request names, whether it is loaded, /v1/models). */
#include "serve_models.h"
#include "cli_open.h"
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

typedef enum model_state {
  MODEL_UNLOADED = 0,
  MODEL_LOADING, /* queued for the loader, or being loaded */
  MODEL_LOADED,
  MODEL_FAILED /* the latest load failed (err); the next request naming it tries again */
} model_state;

typedef struct model_entry {
  serve_models *reg;
  const char *name, *path; /* the options' */
  int is_default;          /* loaded at the start, never unloaded */
  model_state state;
  unsigned attempt;   /* loads begun: a request waits for the one it saw begin */
  serve_sched *sched; /* while loaded */
  serve_sched_config cfg;
  serve_limits lim;
  uint32_t ctx;   /* once loaded: its context; before: -c, else the file's trained length at most 4096 (0: unknown) */
  uint64_t bytes; /* on the GPU once loaded (weights and KV pool), before: the file's tensor bytes */
  uint64_t last_used; /* the registry's clock when a request last took it */
  int refs;           /* requests holding it (acquired, not released) */
  int loads;          /* times loaded, for /v1/models */
  serve_error err;    /* MODEL_FAILED: why */
} model_entry;

/* a request's hold on a model: the load it waits for */
typedef struct model_hold {
  model_entry *e;
  unsigned attempt;
} model_hold;

struct serve_models {
  serve_options *o;
  model_entry *e;
  size_t n;
  pthread_mutex_t mu;
  pthread_cond_t work; /* the loader waits on it for a model in MODEL_LOADING */
  pthread_t loader;
  int loader_started, stop;
  uint64_t clock;
  long long created;
  void (*notify)(void *user);
  void *notify_user;
};

uint64_t serve_models_bytes(wgllm_model *m) {
  wgllm_model_info info;
  wgllm_kv_pool_stats ps;
  uint64_t b = wgllm_model_get_info(m, &info) ? 0 : info.weight_bytes;
  if (!wgllm_model_kv_pool_stats(m, &ps)) b += ps.bytes;
  return b;
}

/* the scheduler's reopen after a device loss (user: the entry): the model opened again as at its load */
static int entry_reopen(void *user, wgllm_model **m, char *err, size_t errlen) {
  model_entry *e = user;
  cli_common c = e->reg->o->c;
  c.model = e->path;
  if (!cli_open(&c, 0, m, NULL, NULL, 0)) return 0;
  snprintf(err, errlen, "%s: %s", e->path, wgllm_last_error()[0] ? wgllm_last_error() : "it did not open");
  return -1;
}

/* under the lock: the least recently used model no request holds, not the default (NULL: none) */
static model_entry *idle_victim(serve_models *r) {
  model_entry *v = NULL;
  for (size_t i = 0; i < r->n; i++) {
    model_entry *e = &r->e[i];
    if (e->state == MODEL_LOADED && !e->is_default && !e->refs && (!v || e->last_used < v->last_used)) v = e;
  }
  return v;
}

/* under the lock, which it lets go of while the scheduler stops: v unloaded (why: for the log) */
static void unload(serve_models *r, model_entry *v, const char *why) {
  serve_sched *s = v->sched;
  v->sched = NULL;
  v->state = MODEL_UNLOADED;
  pthread_mutex_unlock(&r->mu);
  fprintf(stderr, "wgllm serve: unloading '%s' (%s)\n", v->name, why);
  serve_sched_stop(s); /* its model with it */
  pthread_mutex_lock(&r->mu);
}

/* under the lock: room for e (its estimated bytes) within --models-max and --models-memory, idle models unloaded.
   0, or -1 when the models in the way are all held by requests. */
static int make_room(serve_models *r, model_entry *e) {
  for (;;) {
    size_t loaded = 0;
    uint64_t bytes = 0;
    for (size_t i = 0; i < r->n; i++)
      if (r->e[i].state == MODEL_LOADED) {
        loaded++;
        bytes += r->e[i].bytes;
      }
    int over = loaded + 1 > (size_t)r->o->models_max ||
               (r->o->models_memory && bytes + e->bytes > r->o->models_memory && loaded);
    if (!over) return 0;
    model_entry *v = idle_victim(r);
    if (!v) {
      serve_fail(&e->err, 503, "unavailable_error", "model", "model_unavailable",
                 "the model '%s' cannot be loaded now: %zu models are loaded (%.0f MiB; --models-max %lld%s) and "
                 "each is in use by a request; try again later",
                 e->name, loaded, (double)bytes / (1 << 20), r->o->models_max,
                 r->o->models_memory ? ", --models-memory" : "");
      return -1;
    }
    unload(r, v, "least recently used");
  }
}

/* on the loader: e loaded (MODEL_LOADED) or failed (MODEL_FAILED, e->err); the lock held on entry and exit */
static void load(serve_models *r, model_entry *e) {
  if (make_room(r, e)) {
    e->state = MODEL_FAILED;
    return;
  }
  for (;;) {
    pthread_mutex_unlock(&r->mu);
    fprintf(stderr, "wgllm serve: loading '%s' (%s)\n", e->name, e->path);
    cli_common c = r->o->c;
    c.model = e->path;
    wgllm_model *m = NULL;
    char err[768] = "";
    int oom = 0, rc = cli_open(&c, 0, &m, NULL, NULL, 0);
    if (rc) {
      oom = cli_open_status == WGLLM_ERR_OUT_OF_MEMORY;
      snprintf(err, sizeof err, "%s", wgllm_last_error()[0] ? wgllm_last_error() : "it did not open");
    } else if (serve_options_model_config(r->o, m, 0, &e->cfg, &e->lim, &e->ctx, err, sizeof err)) {
      wgllm_model_free(m);
      rc = 1;
    } else {
      e->cfg.own_thread = 1;
      e->cfg.reopen = entry_reopen;
      e->cfg.user = e;
      e->cfg.stop_requested = NULL;
      e->cfg.fatal = NULL; /* a model that cannot be reloaded after a device loss fails its requests (503) */
      if (serve_sched_start(m, &e->cfg, &e->sched, err, sizeof err)) /* m is freed */
        rc = oom = 1; /* its sessions or KV pool: device memory, most likely */
      else
        e->bytes = serve_models_bytes(m); /* its pool made; no request on it yet */
    }
    pthread_mutex_lock(&r->mu);
    if (!rc) {
      e->state = MODEL_LOADED;
      e->loads++;
      if (r->notify) serve_sched_set_notify(e->sched, r->notify, r->notify_user);
      fprintf(stderr, "wgllm serve: loaded '%s' (%.0f MiB on the GPU, a context of %u tokens)\n", e->name,
              (double)e->bytes / (1 << 20), e->ctx);
      return;
    }
    model_entry *v = oom ? idle_victim(r) : NULL;
    if (v) {
      unload(r, v, "least recently used"); /* the device's memory: one more idle model unloaded, and again */
      continue;
    }
    fprintf(stderr, "wgllm serve: loading '%s' failed: %s\n", e->name, err);
    serve_fail(&e->err, oom ? 503 : 500, oom ? "unavailable_error" : "server_error", "model",
               oom ? "model_unavailable" : "model_load_failed", "the model '%s' did not load: %s", e->name, err);
    e->state = MODEL_FAILED;
    return;
  }
}

static void *loader_main(void *arg) {
  serve_models *r = arg;
  pthread_mutex_lock(&r->mu);
  while (!r->stop) {
    model_entry *e = NULL;
    for (size_t i = 0; i < r->n && !e; i++)
      if (r->e[i].state == MODEL_LOADING) e = &r->e[i];
    if (!e) {
      pthread_cond_wait(&r->work, &r->mu);
      continue;
    }
    load(r, e);
    if (r->notify) r->notify(r->notify_user); /* the requests waiting for it go on */
  }
  pthread_mutex_unlock(&r->mu);
  return NULL;
}

/* under the lock: e is loaded but its scheduler gave up on it (a device loss after which the model did not open
   again): it answers every request 503 until it is unloaded */
static int dead(const model_entry *e) {
  return e->state == MODEL_LOADED && e->sched && serve_sched_unavailable(e->sched, NULL, 0) == 2;
}

static int acquire(void *user, const char *name, void **ref, serve_error *err) {
  serve_models *r = user;
  model_entry *e = NULL;
  for (size_t i = 0; i < r->n && !e; i++)
    if (name && name[0] ? !strcmp(r->e[i].name, name) : r->e[i].is_default) e = &r->e[i];
  if (!e) {
    char names[512];
    size_t k = 0;
    for (size_t i = 0; i < r->n && k + 8 < sizeof names; i++)
      k += (size_t)snprintf(names + k, sizeof names - k, "%s'%s'", i ? ", " : "", r->e[i].name);
    if (k >= sizeof names) snprintf(names + sizeof names - 5, 5, "...");
    return serve_fail(err, 404, "invalid_request_error", "model", "model_not_found",
                      "the model '%.200s' does not exist: this server serves %s (GET /v1/models)", name, names);
  }
  model_hold *h = malloc(sizeof *h);
  if (!h) return serve_fail(err, 500, "server_error", NULL, NULL, "out of memory");
  pthread_mutex_lock(&r->mu);
  /* lost with the device and not reloaded: unloaded once no request holds it, and loaded again for this one (the
     default's loss ends the server instead) */
  if (!e->is_default && !e->refs && dead(e)) unload(r, e, "its device was lost and it did not reload");
  e->refs++;
  e->last_used = ++r->clock;
  if (e->state == MODEL_UNLOADED || e->state == MODEL_FAILED) {
    e->state = MODEL_LOADING;
    e->attempt++;
    pthread_cond_signal(&r->work);
  }
  *h = (model_hold){e, e->attempt};
  pthread_mutex_unlock(&r->mu);
  *ref = h;
  return 0;
}

static int ready(void *user, void *ref, serve_sched **sched, const char **id, const serve_limits **lim,
                 serve_error *err) {
  serve_models *r = user;
  model_hold *h = ref;
  model_entry *e = h->e;
  pthread_mutex_lock(&r->mu);
  int st = 1;
  if (e->state == MODEL_LOADED) {
    *sched = e->sched;
    *id = e->name;
    *lim = &e->lim;
    st = 0;
  } else if (e->state == MODEL_FAILED && e->attempt == h->attempt) {
    *err = e->err;
    st = -1;
  } else if (e->state != MODEL_LOADING) { /* failed, and a later request's load began meanwhile: wait for it */
    e->state = MODEL_LOADING;
    h->attempt = ++e->attempt;
    pthread_cond_signal(&r->work);
  }
  pthread_mutex_unlock(&r->mu);
  return st;
}

static void release(void *user, void *ref) {
  serve_models *r = user;
  model_hold *h = ref;
  pthread_mutex_lock(&r->mu);
  h->e->refs--;
  pthread_mutex_unlock(&r->mu);
  free(h);
}

/* /v1/models: every model served, loaded or not, with its context (llama-server's "status", vLLM's max_model_len) */
static void list(void *user, cJSON *data) {
  serve_models *r = user;
  pthread_mutex_lock(&r->mu);
  for (size_t i = 0; i < r->n; i++) {
    model_entry *e = &r->e[i];
    cJSON *m = cJSON_CreateObject();
    cJSON_AddItemToArray(data, m);
    cJSON_AddStringToObject(m, "id", e->name);
    cJSON_AddStringToObject(m, "object", "model");
    cJSON_AddNumberToObject(m, "created", (double)r->created);
    cJSON_AddStringToObject(m, "owned_by", "wgllm");
    if (e->ctx) {
      cJSON_AddNumberToObject(m, "max_model_len", e->ctx);
      cJSON_AddNumberToObject(m, "context_length", e->ctx);
    }
    static const char *const states[] = {"unloaded", "loading", "loaded", "failed"};
    cJSON *status = cJSON_AddObjectToObject(m, "status");
    cJSON_AddStringToObject(status, "value", dead(e) ? "failed" : states[e->state]);
    cJSON_AddBoolToObject(m, "default", e->is_default);
  }
  pthread_mutex_unlock(&r->mu);
}

/* /metrics: each model loaded */
static void each(void *user, void (*fn)(void *ud, serve_sched *s, const char *name), void *ud) {
  serve_models *r = user;
  pthread_mutex_lock(&r->mu);
  for (size_t i = 0; i < r->n; i++)
    if (r->e[i].state == MODEL_LOADED) fn(ud, r->e[i].sched, r->e[i].name);
  pthread_mutex_unlock(&r->mu);
}

serve_models *serve_models_new(serve_options *o, serve_sched *default_sched, uint64_t default_bytes) {
  serve_models *r = calloc(1, sizeof *r);
  size_t n = o->n_models ? o->n_models : 1;
  if (!r || !(r->e = calloc(n, sizeof *r->e))) {
    free(r);
    serve_sched_stop(default_sched);
    return NULL;
  }
  r->o = o;
  r->n = n;
  r->created = (long long)time(NULL);
  pthread_mutex_init(&r->mu, NULL);
  pthread_cond_init(&r->work, NULL);
  for (size_t i = 0; i < n; i++) {
    model_entry *e = &r->e[i];
    e->reg = r;
    e->name = i ? o->model_names[i] : o->model_id;
    e->path = o->n_models ? o->model_paths[i] : o->c.model;
    if (i) { /* the context it will get, and its bytes for the budget, from the file alone */
      wgllm_file_info fi;
      if (!wgllm_file_info_read(e->path, &fi)) {
        e->bytes = fi.tensor_bytes;
        e->ctx = o->c.ctx ? o->c.ctx : fi.train_context && fi.train_context < 4096 ? fi.train_context : 4096;
      }
      continue;
    }
    e->is_default = 1;
    e->state = MODEL_LOADED;
    e->sched = default_sched;
    e->ctx = o->ctx;
    e->loads = 1;
    e->bytes = default_bytes;
    e->lim = o->limits;
  }
  if (n > 1) {
    if (pthread_create(&r->loader, NULL, loader_main, r)) {
      r->e[0].sched = default_sched;
      serve_models_free(r);
      return NULL;
    }
    r->loader_started = 1;
  }
  return r;
}

serve_router serve_models_router(serve_models *r) {
  return (serve_router){acquire, ready, release, list, each, r->n, r};
}

void serve_models_set_notify(serve_models *r, void (*fn)(void *user), void *user) {
  pthread_mutex_lock(&r->mu);
  r->notify = fn;
  r->notify_user = user;
  for (size_t i = 0; i < r->n; i++)
    if (r->e[i].sched) serve_sched_set_notify(r->e[i].sched, fn, user);
  pthread_mutex_unlock(&r->mu);
}

void serve_models_free(serve_models *r) {
  if (!r) return;
  pthread_mutex_lock(&r->mu);
  r->stop = 1;
  pthread_cond_signal(&r->work);
  pthread_mutex_unlock(&r->mu);
  if (r->loader_started) pthread_join(r->loader, NULL);
  for (size_t i = 0; i < r->n; i++)
    serve_sched_stop(r->e[i].sched); /* NULL for the models not loaded */
  pthread_mutex_destroy(&r->mu);
  pthread_cond_destroy(&r->work);
  free(r->e);
  free(r);
}
