/* `wgllm bench ARGS` runs wgllm-bench ARGS, the developer program that sits beside this one (it works on the
   internal layers, which this program does not link). The wasm build replaces this file (web/cli_web.c). */
#include "cli.h"
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

int cli_bench(int argc, char **argv, const char *self) {
  char path[4096];
  const char *slash = strrchr(self, '/');
  if (slash)
    snprintf(path, sizeof path, "%.*s/wgllm-bench", (int)(slash - self), self);
  else
    snprintf(path, sizeof path, "wgllm-bench");
  argv[0] = path;
  if (slash)
    execv(path, argv);
  else
    execvp(path, argv);
  fprintf(stderr, "wgllm: cannot run %s: %s\n", path, strerror(errno));
  (void)argc;
  return 1;
}
