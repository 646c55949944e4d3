/* Subcommands of the wgllm CLI, one file each. Each takes argv starting at the subcommand name. */
#ifndef WGLLM_CLI_H
#define WGLLM_CLI_H
int cli_info(int argc, char **argv);
#endif
