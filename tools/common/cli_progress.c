/* Progress lines on a terminal for the command-line programs (see cli_progress.h). */
#include "cli_progress.h"
#include <stdarg.h>
#include <stdio.h>
#include <time.h>
#include <unistd.h>

double cli_now(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

void cli_progress_begin(cli_progress *p) {
  p->on = isatty(2);
  p->shown = 0;
  p->t0 = cli_now();
  p->last = -1;
}

void cli_progress_show(cli_progress *p, int force, const char *fmt, ...) {
  if (!p->on) return;
  double t = cli_now();
  if (!force && p->shown && t - p->last < 0.1) return;
  char line[256];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(line, sizeof line, fmt, ap);
  va_end(ap);
  fprintf(stderr, "\r%s (%.1f s)\033[K", line, t - p->t0);
  fflush(stderr);
  p->shown = 1;
  p->last = t;
}

void cli_progress_end(cli_progress *p) {
  if (p->on && p->shown) {
    fputs("\r\033[K", stderr);
    fflush(stderr);
  }
  p->shown = 0;
}
