/* Descriptions as text: what a model file holds (read from the file alone, no GPU) and the GPU wgllm would use.
   Usage: describe MODEL_PATH [ADAPTER] */
#include "wgllm.h"
#include <stdio.h>

int main(int argc, char **argv) {
  if (argc < 2) {
    fprintf(stderr, "usage: %s MODEL_PATH [ADAPTER]\n", argv[0]);
    return 2;
  }
  printf("wgllm %s\n\n", wgllm_version());
  char *text = NULL;
  /* a file that opens but cannot run still gets its text, with the reason in it: print it and free it too */
  wgllm_status file_st = wgllm_describe_file(argv[1], &text);
  if (text) printf("%s\n", text);
  if (file_st != WGLLM_OK) fprintf(stderr, "%s: %s\n", argv[1], text ? wgllm_status_name(file_st) : wgllm_last_error());
  wgllm_free(text);
  text = NULL;
  wgllm_status gpu_st = wgllm_describe_gpu(argc > 2 ? argv[2] : NULL, 0, &text);
  if (gpu_st == WGLLM_OK)
    printf("%s", text);
  else
    fprintf(stderr, "no GPU: %s (%s)\n", wgllm_last_error(), wgllm_status_name(gpu_st));
  wgllm_free(text);
  return file_st == WGLLM_OK && gpu_st == WGLLM_OK ? 0 : 1;
}
