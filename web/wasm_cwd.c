/* Linked into every program built for wasm (web/web.mk: the test programs, wgllm-cli.wasm, wgllm-bench.wasm): WASI
   starts a program at "/", so the working directory its host gives in the environment (WGLLM_CWD: ctest's tests/ in
   the browser tests, the process's on Node, node/lib/runner.mjs) is set before main, and relative paths resolve as
   natively. Standard output is line-buffered, as on a terminal: the host's own writes to the same descriptor (Dawn
   on Node prints shader-compilation warnings there) then fall between whole lines, never inside a JSON line. */
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

__attribute__((constructor)) static void wasm_cwd(void) {
  const char *d = getenv("WGLLM_CWD");
  if (d && *d) chdir(d);
  setvbuf(stdout, NULL, _IOLBF, BUFSIZ);
}
