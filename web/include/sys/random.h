/* The randomness seam of the wasm build: WASI has getentropy (its random_get), not Linux's getrandom, which the CLI
   draws its default seed from (tools/cli/cli_run.c). getentropy takes at most 256 bytes a call. */
#ifndef WGLLM_WEB_SYS_RANDOM_H
#define WGLLM_WEB_SYS_RANDOM_H
#include_next <sys/random.h>
#include <sys/types.h>
#include <unistd.h>
#define GRND_NONBLOCK 0x0001
static inline ssize_t getrandom(void *buf, size_t n, unsigned flags) {
  (void)flags;
  return n <= 256 && getentropy(buf, n) == 0 ? (ssize_t)n : -1;
}
#endif
