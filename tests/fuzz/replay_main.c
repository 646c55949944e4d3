/* Replays inputs through a fuzz harness without libFuzzer: the main() of the fuzz_*_replay programs that the
   ordinary build (normal compiler, no fuzzer runtime) links with each harness. Each argument is a file or a
   directory whose regular files (sorted by name, dotfiles skipped) are fed one by one to
   LLVMFuzzerTestOneInput; a harness check or a sanitizer aborts the program, and the input being replayed is
   named on stderr first. Missing directories are skipped (git keeps no empty regressions/ folder), but at
   least one input must be found. Exit status 0 when every input ran. */
#define _GNU_SOURCE
#include "fuzz_util.h"
#include <dirent.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

__attribute__((weak)) int LLVMFuzzerInitialize(int *argc, char ***argv);

static char current[4096]; /* the input being replayed, for the crash handler */

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
  int total = 0;
  for (int i = 1; i < argc; i++) {
    struct stat sb;
    if (stat(argv[i], &sb) != 0) {
      printf("replay: %s: absent, skipped\n", argv[i]);
      continue;
    }
    int c = S_ISDIR(sb.st_mode) ? replay_dir(argv[i]) : replay_file(argv[i]);
    printf("replay: %s: %d inputs\n", argv[i], c);
    total += c;
  }
  printf("replay: %d inputs, 0 failed\n", total);
  return total > 0 ? 0 : 1;
}
