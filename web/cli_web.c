/* The CLI's seams in the wasm build (web/web.mk's wgllm-cli.wasm, in place of tools/cli/cli_bench.c and
   tools/serve/): `wgllm bench` asks the host to run wgllm-bench.wasm with the same arguments (node/lib/runner.mjs runs
   it beside this program, on the same GPU), and `wgllm serve`, whose HTTP server is libmicrohttpd's and threads, is
   not in the wasm: on Node.js the package's bin (node/bin/wgllm.mjs) serves. */
#include "cli.h"
#include "serve_main.h"
#include <stdio.h>

/* the host (node/lib/runner.mjs): runs wgllm-bench.wasm with argv[0..argc), suspending this program until it ends;
   its exit status, or -1 when the host cannot run it */
__attribute__((import_module("wgllm_host"), import_name("run_bench"))) int host_run_bench(int argc, char **argv);

int cli_bench(int argc, char **argv, const char *self) {
  (void)self;
  argv[0] = "wgllm-bench";
  int code = host_run_bench(argc, argv);
  if (code < 0) fprintf(stderr, "wgllm: cannot run wgllm-bench.wasm here (node/lib/runner.mjs runs it on Node)\n");
  return code < 0 ? 1 : code;
}

int serve_command(int argc, char **argv) {
  (void)argc;
  (void)argv;
  fprintf(stderr, "wgllm serve: not in the wasm build of the CLI (the native one is libmicrohttpd's); on Node.js "
                  "`wgllm serve` is the npm package's (node/bin/wgllm.mjs)\n");
  return 2;
}
