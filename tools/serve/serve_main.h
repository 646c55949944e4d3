/* `wgllm serve`'s entry, which the CLI's command table (tools/cli/main.c) calls: serve_main.c natively; the wasm
   CLI's stand-in says it is not there (web/cli_web.c). */
#ifndef WGLLM_SERVE_MAIN_H
#define WGLLM_SERVE_MAIN_H

/* argv[0] is "serve", then its options; returns the exit status */
int serve_command(int argc, char **argv);
#endif
