/* Requantizes a GGUF with llama.cpp's own quantizer (llama_model_quantize from the npm build that
   bench/peers/llamacpp/fetch.sh fetches), e.g. the synthetic Q4_0 GGUF into a Q4_K_M file for speed tables.
   Developer tool, not part of the build; from the repository root, after fetch.sh:
     L=bench/peers/llamacpp
     cc -O1 -I$L/.pkg/include -o $L/lib/llc_quantize tools/quant/llc_quantize.c -L$L/lib \
        -l:libllama.vulkan.v0.5.0.so -Wl,-rpath,'$ORIGIN'
     $L/lib/llc_quantize IN.gguf OUT.gguf Q4_K_M|Q5_K_M|Q6_K|Q8_0 */
#include "llama.h"
#include <stdio.h>
#include <string.h>

int main(int argc, char **argv) {
  if (argc != 4) {
    fprintf(stderr, "usage: %s IN.gguf OUT.gguf Q4_K_M|Q5_K_M|Q6_K|Q8_0\n", argv[0]);
    return 2;
  }
  static const struct {
    const char *name;
    enum llama_ftype ftype;
  } T[] = {{"Q4_K_M", LLAMA_FTYPE_MOSTLY_Q4_K_M},
           {"Q5_K_M", LLAMA_FTYPE_MOSTLY_Q5_K_M},
           {"Q6_K", LLAMA_FTYPE_MOSTLY_Q6_K},
           {"Q8_0", LLAMA_FTYPE_MOSTLY_Q8_0}};
  llama_model_quantize_params p = llama_model_quantize_default_params();
  p.allow_requantize = 1;
  for (size_t i = 0; i < sizeof T / sizeof T[0]; i++)
    if (!strcmp(argv[3], T[i].name)) p.ftype = T[i].ftype;
  if (!p.ftype) {
    fprintf(stderr, "unknown type %s\n", argv[3]);
    return 2;
  }
  llama_backend_init();
  uint32_t rc = llama_model_quantize(argv[1], argv[2], &p);
  llama_backend_free();
  printf("llama_model_quantize: %u\n", rc);
  return rc != 0;
}
