/* The signals seam of the wasm build: wasi-libc's emulated signal.h (signal() and raise(), no delivery from outside)
   lacks sigaction, which the CLI installs its Ctrl-C handler with (tools/cli/cli_run.c). A handler set here is
   signal()'s; the host sends no signals (Ctrl-C ends the Node process), so it only ever runs through raise(). The
   names are macros over wgllm_ ones, so they cannot clash with what wasi-libc declares under other feature macros. */
#ifndef WGLLM_WEB_SIGNAL_H
#define WGLLM_WEB_SIGNAL_H
#include_next <signal.h>
#define SA_RESTART 0x10000000
typedef struct {
  unsigned long bits;
} wgllm_sigset;
struct wgllm_sigaction {
  void (*sa_handler)(int);
  wgllm_sigset sa_mask;
  int sa_flags;
};
#define sigaction wgllm_sigaction
#define sigemptyset wgllm_sigemptyset
static inline int wgllm_sigemptyset(wgllm_sigset *s) {
  s->bits = 0;
  return 0;
}
static inline int wgllm_sigaction(int sig, const struct wgllm_sigaction *sa, struct wgllm_sigaction *old) {
  void (*prev)(int) = sa ? signal(sig, sa->sa_handler) : SIG_DFL;
  if (old) *old = (struct wgllm_sigaction){prev, {0}, 0};
  return prev == SIG_ERR ? -1 : 0;
}
#endif
