/* Linked into the test programs built for the browser (web/web.mk, tests/web/run.mjs): they open their data by
   paths relative to tests/, as ctest runs them; WASI has no working directory of its own, so this one is set from
   the environment (WGLLM_CWD) before main. */
#include <stdlib.h>
#include <unistd.h>

__attribute__((constructor)) static void web_test_cwd(void) {
  const char *d = getenv("WGLLM_CWD");
  if (d && *d) chdir(d);
}
