/* Progress lines on a terminal for the command-line programs. */
#ifndef WGLLM_CLI_PROGRESS_H
#define WGLLM_CLI_PROGRESS_H

/* A progress line on stderr, only when stderr is a terminal: "\rloading model: 40% (1.2 s)", rewritten in
   place at most every 0.1 s and cleared by cli_progress_end. */
typedef struct cli_progress {
  int on, shown;
  double t0, last;
} cli_progress;
void cli_progress_begin(cli_progress *p);
void cli_progress_show(cli_progress *p, int force, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
void cli_progress_end(cli_progress *p);
double cli_now(void); /* monotonic seconds */
#endif
