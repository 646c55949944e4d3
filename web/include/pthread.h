/* The threads seam of the browser build: wasm32-wasi here has no threads (wasi-libc ships no pthread.h), so the
   one lock the engine takes (gpu_context.lock, which guards what Dawn's callbacks write from other threads
   natively) has nothing to exclude: every callback of the browser's webgpu.h runs on the engine's own thread,
   inside wgpuInstanceProcessEvents or wgpuInstanceWaitAny (web/webgpu.js). Only the calls the engine makes. */
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
#endif
