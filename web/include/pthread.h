/* The threads seam of the browser build: wasm32-wasi here has no threads (wasi-libc ships no pthread.h), so the
   one lock the engine takes (gpu_context.lock, which guards what Dawn's callbacks write from other threads
   natively) has nothing to exclude: every callback of the browser's webgpu.h runs on the engine's own thread,
   inside wgpuInstanceProcessEvents or wgpuInstanceWaitAny (web/webgpu.js). Only the calls the engine makes, and
   those of `wgllm serve`'s scheduler (tools/serve/serve_sched.c), which the wasm server steps from JavaScript's
   event loop (serve_sched_step) and so never waits on a condition nor starts a thread. */
#ifndef WGLLM_WEB_PTHREAD_H
#define WGLLM_WEB_PTHREAD_H
typedef struct {
  int unused;
} pthread_mutex_t;
typedef struct {
  int unused;
} pthread_mutexattr_t;
static inline int pthread_mutex_init(pthread_mutex_t *m, const pthread_mutexattr_t *a) {
  (void)m;
  (void)a;
  return 0;
}
static inline int pthread_mutex_destroy(pthread_mutex_t *m) {
  (void)m;
  return 0;
}
static inline int pthread_mutex_lock(pthread_mutex_t *m) {
  (void)m;
  return 0;
}
static inline int pthread_mutex_unlock(pthread_mutex_t *m) {
  (void)m;
  return 0;
}

/* the server's scheduler: nothing waits, so signalling is a no-op and a wait returns at once; no threads */
#include <errno.h>
#include <time.h>
typedef struct {
  int unused;
} pthread_cond_t;
typedef struct {
  int unused;
} pthread_condattr_t;
typedef int pthread_t;
static inline int pthread_condattr_init(pthread_condattr_t *a) {
  (void)a;
  return 0;
}
static inline int pthread_condattr_setclock(pthread_condattr_t *a, clockid_t clock) {
  (void)a;
  (void)clock;
  return 0;
}
static inline int pthread_condattr_destroy(pthread_condattr_t *a) {
  (void)a;
  return 0;
}
static inline int pthread_cond_init(pthread_cond_t *c, const pthread_condattr_t *a) {
  (void)c;
  (void)a;
  return 0;
}
static inline int pthread_cond_destroy(pthread_cond_t *c) {
  (void)c;
  return 0;
}
static inline int pthread_cond_signal(pthread_cond_t *c) {
  (void)c;
  return 0;
}
static inline int pthread_cond_broadcast(pthread_cond_t *c) {
  (void)c;
  return 0;
}
static inline int pthread_cond_wait(pthread_cond_t *c, pthread_mutex_t *m) {
  (void)c;
  (void)m;
  return 0;
}
static inline int pthread_cond_timedwait(pthread_cond_t *c, pthread_mutex_t *m, const void *until) {
  (void)c;
  (void)m;
  (void)until;
  return ETIMEDOUT;
}
static inline int pthread_create(pthread_t *t, const void *attr, void *(*fn)(void *), void *arg) {
  (void)t;
  (void)attr;
  (void)fn;
  (void)arg;
  return ENOSYS;
}
static inline int pthread_join(pthread_t t, void **ret) {
  (void)t;
  (void)ret;
  return ENOSYS;
}
#endif
