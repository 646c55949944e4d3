/* Several models in one `wgllm serve` (-m repeated, --models-dir DIR), each under an alias: the first is the default
   (a request that names no model gets it), loaded at the start and kept; the others are loaded when a request first
   names one, on a loader thread of their own (the transport's thread never waits for a load: the request waits in
   its exchange), each with a scheduler of its own (its sessions, its KV pool). Before a load, the least recently
   used models that no request holds are unloaded while the new one would pass --models-max loaded models or the
   --models-memory budget (the bytes each takes on the GPU: weights and KV pool, measured once loaded; the file's
   tensor bytes before), and when the device refuses a load's memory another idle one is unloaded and the load
   retried. The handler reaches it through serve_router (serve_handler.h). Native only (threads). */
#ifndef WGLLM_SERVE_MODELS_H
#define WGLLM_SERVE_MODELS_H
#include "serve_handler.h"
#include "serve_options.h"

typedef struct serve_models serve_models;

/* The models of o (o->model_paths: the default first; o outlives the registry), the default one already open with its
   scheduler (started by the caller: it becomes the registry's, stopped by serve_models_free), default_bytes its GPU
   bytes (serve_models_bytes before the start). Returns NULL when out of memory (the scheduler is stopped then). */
serve_models *serve_models_new(serve_options *o, serve_sched *default_sched, uint64_t default_bytes);
/* A model's bytes on the GPU: its weights and its KV pool. */
uint64_t serve_models_bytes(wgllm_model *m);
/* The router for serve_handler_config.router (user: the registry). */
serve_router serve_models_router(serve_models *r);
/* fn(user) is set as every scheduler's notify (those loaded later too), and called when a load ends. */
void serve_models_set_notify(serve_models *r, void (*fn)(void *user), void *user);
/* Stops the loader and every scheduler (the default's too) and frees the registry. NULL is a no-op. */
void serve_models_free(serve_models *r);
#endif
