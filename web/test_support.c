/* Linked into the test programs built for the browser (web/web.mk, tests/web/run.mjs), for what they take from the
   C library that WASI lacks: mkdtemp (a directory in web/wasi.js's memory, or the machine's on Node). Their working
   directory (they open their data by paths relative to tests/, as ctest runs them) is web/wasm_cwd.c's. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* the template's trailing XXXXXX replaced by a counter until mkdir succeeds */
char *mkdtemp(char *tmpl) {
  static unsigned n;
  size_t len = strlen(tmpl);
  if (len < 6 || strcmp(tmpl + len - 6, "XXXXXX")) {
    errno = EINVAL;
    return NULL;
  }
  for (int tries = 0; tries < 1000; tries++) {
    snprintf(tmpl + len - 6, 7, "%06u", ++n % 1000000);
    if (mkdir(tmpl, 0700) == 0) return tmpl;
    if (errno != EEXIST) return NULL;
  }
  return NULL;
}
