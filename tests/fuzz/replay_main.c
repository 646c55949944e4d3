/* Replays inputs through a fuzz harness without libFuzzer: the main() of the fuzz_*_replay programs that the
   ordinary build (normal compiler, no fuzzer runtime) links with each harness. Each argument is a file or a
   directory whose regular files (sorted by name, dotfiles skipped) are fed one by one to
   LLVMFuzzerTestOneInput; a harness check or a sanitizer aborts the program, and the input being replayed is
   named on stderr first. Missing directories are skipped (git keeps no empty regressions/ folder), but at
   least one input must be found. Exit status 0 when every input ran.

   --bound MS MB (the fuzz_bound_<harness> ctest entries; refused in sanitizer builds, whose memory and time say
   nothing about the library's): each input runs in a forked child, after the harness has run once in the parent
   on an empty input (so what it loads once, such as the encode harness's tokenizers, is in the baseline); the
   child's CPU time (user + system, from wait4) and peak RSS (ru_maxrss) are measured, and the run fails when an
   input takes over MS milliseconds or its peak RSS is over MB megabytes above the baseline (the peak of a child
   that runs an empty input), or when the child does not exit normally. Wall time is printed beside (this
   machine's load makes it noisy). FUZZ_BOUND=1 is set, for harnesses whose limits depend on it. --crafted NAME
   adds the generated worst cases of crafted.c for harness NAME (each under 1 MB). Prints each input's figures
   with FUZZ_VERBOSE=1, and the worst input by time and by memory last. */
#define _GNU_SOURCE
#include "fuzz_util.h"
#include <dirent.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

__attribute__((weak)) int LLVMFuzzerInitialize(int *argc, char ***argv);

#if defined(__SANITIZE_ADDRESS__)
#define REPLAY_SANITIZED 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define REPLAY_SANITIZED 1
#endif
#endif

static char current[4096]; /* the input being replayed, for the crash handler */

int fuzz_crafted(const char *h, int i, uint8_t **data, size_t *size, char name[64]); /* crafted.c */

/* --bound: the limits, the baseline, the worst inputs and the count of inputs past a limit */
static struct {
  int on;
  double max_ms, max_mb, base_mb;
  double worst_ms, worst_mb, worst_wall;
  char worst_ms_name[256], worst_mb_name[256];
  int over;
} bound;

static double now_ms(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return t.tv_sec * 1e3 + t.tv_nsec / 1e6;
}

/* runs data[n] in a forked child: its CPU milliseconds and peak RSS in MB; -1 when it did not exit normally */
static int run_child(const uint8_t *data, size_t n, double *cpu_ms, double *rss_mb, double *wall_ms) {
  fflush(NULL);
  double t0 = now_ms();
  pid_t pid = fork();
  if (pid < 0) {
    perror("replay: fork");
    exit(2);
  }
  if (pid == 0) {
    alarm(60); /* a hang still ends */
    LLVMFuzzerTestOneInput(data, n);
    _exit(0);
  }
  int st = 0;
  struct rusage ru;
  memset(&ru, 0, sizeof ru);
  if (wait4(pid, &st, 0, &ru) != pid) {
    perror("replay: wait4");
    exit(2);
  }
  *wall_ms = now_ms() - t0;
  *cpu_ms = (ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) * 1e3 + (ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) / 1e3;
  *rss_mb = ru.ru_maxrss / 1024.0; /* kilobytes on Linux */
  return WIFEXITED(st) && WEXITSTATUS(st) == 0 ? 0 : -1;
}

static void bound_input(const char *name, const uint8_t *data, size_t n) {
  double ms, mb, wall;
  int ok = run_child(data, n, &ms, &mb, &wall) == 0;
  double over_base = mb - bound.base_mb;
  if (getenv("FUZZ_VERBOSE"))
    printf("bound: %s: %zu bytes, %.1f ms CPU (%.1f ms wall), peak RSS %.1f MB (+%.1f)\n", name, n, ms, wall, mb,
           over_base);
  if (ms > bound.worst_ms) {
    bound.worst_ms = ms;
    bound.worst_wall = wall;
    snprintf(bound.worst_ms_name, sizeof bound.worst_ms_name, "%s", name);
  }
  if (over_base > bound.worst_mb) {
    bound.worst_mb = over_base;
    snprintf(bound.worst_mb_name, sizeof bound.worst_mb_name, "%s", name);
  }
  if (!ok || ms > bound.max_ms || over_base > bound.max_mb) {
    printf("bound: FAILED: %s (%zu bytes): %s%.1f ms CPU (limit %.0f), %.1f MB over the baseline (limit %.0f)\n", name,
           n, ok ? "" : "the child crashed or failed a check; ", ms, bound.max_ms, over_base, bound.max_mb);
    bound.over++;
  }
}

static void on_crash(int sig) {
  static const char msg[] = "\nreplay: crashed on input ";
  ssize_t r = write(2, msg, sizeof msg - 1);
  r = write(2, current, strlen(current));
  r = write(2, "\n", 1);
  (void)r;
  signal(sig, SIG_DFL);
  raise(sig);
}

static int replay_file(const char *path) {
  FILE *f = fopen(path, "rb");
  if (!f) {
    fprintf(stderr, "replay: cannot open %s\n", path);
    exit(2);
  }
  size_t cap = 1 << 16, n = 0;
  uint8_t *buf = malloc(cap);
  for (size_t r; buf && (r = fread(buf + n, 1, cap - n, f)) > 0;) {
    n += r;
    if (n == cap) buf = realloc(buf, cap *= 2);
  }
  fclose(f);
  if (!buf) {
    fprintf(stderr, "replay: out of memory reading %s\n", path);
    exit(2);
  }
  snprintf(current, sizeof current, "%s", path);
  /* an exact-size copy, so ASan sees reads past the input's end */
  uint8_t *exact = malloc(n ? n : 1);
  memcpy(exact, buf, n);
  free(buf);
  if (bound.on)
    bound_input(path, exact, n);
  else
    LLVMFuzzerTestOneInput(exact, n);
  free(exact);
  return 1;
}

static int cmp_names(const void *a, const void *b) { return strcmp(*(char *const *)a, *(char *const *)b); }

static int replay_dir(const char *dir) {
  DIR *d = opendir(dir);
  if (!d) return 0;
  char **names = NULL;
  size_t n = 0;
  for (struct dirent *e; (e = readdir(d));) {
    if (e->d_name[0] == '.') continue;
    names = realloc(names, (n + 1) * sizeof *names);
    names[n++] = strdup(e->d_name);
  }
  closedir(d);
  qsort(names, n, sizeof *names, cmp_names);
  int count = 0;
  for (size_t i = 0; i < n; i++) {
    char p[4096];
    struct stat sb;
    snprintf(p, sizeof p, "%s/%s", dir, names[i]);
    if (stat(p, &sb) == 0 && S_ISREG(sb.st_mode)) count += replay_file(p);
    free(names[i]);
  }
  free(names);
  return count;
}

int main(int argc, char **argv) {
  signal(SIGABRT, on_crash);
  signal(SIGSEGV, on_crash);
  signal(SIGBUS, on_crash);
  signal(SIGFPE, on_crash);
  if (LLVMFuzzerInitialize) LLVMFuzzerInitialize(&argc, &argv);
  int total = 0, first = 1;
  const char *crafted = NULL;
  if (argc > 3 && !strcmp(argv[1], "--bound")) {
#ifdef REPLAY_SANITIZED
    fprintf(stderr, "replay: --bound needs a build without sanitizers (their memory and time are not wgllm's)\n");
    return 2;
#endif
    bound.on = 1;
    bound.max_ms = atof(argv[2]);
    bound.max_mb = atof(argv[3]);
    first = 4;
    if (argc > 5 && !strcmp(argv[4], "--crafted")) {
      crafted = argv[5];
      first = 6;
    }
    setenv("FUZZ_BOUND", "1", 1);
    LLVMFuzzerTestOneInput((const uint8_t *)"", 0); /* what the harness loads once, before the baseline */
    double ms, wall;
    if (run_child((const uint8_t *)"", 0, &ms, &bound.base_mb, &wall)) {
      fprintf(stderr, "replay: the empty input failed in a child\n");
      return 2;
    }
    printf("bound: limits %.0f ms CPU and %.0f MB over the baseline peak RSS of %.1f MB\n", bound.max_ms, bound.max_mb,
           bound.base_mb);
  }
  for (int i = 0; crafted; i++) {
    uint8_t *data;
    size_t n;
    char name[64], label[128];
    if (!fuzz_crafted(crafted, i, &data, &n, name)) {
      printf("replay: crafted %s: %d inputs\n", crafted, i);
      total += i;
      break;
    }
    if (n >= 1u << 20) {
      fprintf(stderr, "replay: crafted input %s is %zu bytes, not under 1 MB\n", name, n);
      return 2;
    }
    snprintf(label, sizeof label, "crafted:%s", name);
    snprintf(current, sizeof current, "%s", label);
    bound_input(label, data, n);
    free(data);
  }
  for (int i = first; i < argc; i++) {
    struct stat sb;
    if (stat(argv[i], &sb) != 0) {
      printf("replay: %s: absent, skipped\n", argv[i]);
      continue;
    }
    int c = S_ISDIR(sb.st_mode) ? replay_dir(argv[i]) : replay_file(argv[i]);
    printf("replay: %s: %d inputs\n", argv[i], c);
    total += c;
  }
  if (bound.on) {
    printf("bound: worst time %.1f ms CPU (%.1f ms wall): %s\n", bound.worst_ms, bound.worst_wall, bound.worst_ms_name);
    printf("bound: worst memory +%.1f MB peak RSS: %s\n", bound.worst_mb, bound.worst_mb_name);
    printf("bound: %d inputs, %d over a limit\n", total, bound.over);
    return total > 0 && !bound.over ? 0 : 1;
  }
  printf("replay: %d inputs, 0 failed\n", total);
  return total > 0 ? 0 : 1;
}
