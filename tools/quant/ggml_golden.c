/* Writes the golden vectors test_convert checks wgllm's CPU dequantizers against: for each block type, seeded
   input rows, ggml's reference quantization of them (quantize_row_<type>_ref) and ggml's dequantization
   (dequantize_row_<type>), from llama.cpp's own libggml-base.so (the npm build bench/peers/llamacpp/fetch.sh fetches).
   Not part of the build; run by hand when a type is added:
     cc -O1 -o /tmp/ggml_golden tools/quant/ggml_golden.c -ldl
     /tmp/ggml_golden bench/peers/llamacpp/lib/libggml-base.so tests/data/quant
   Each file <TYPE>.bin: u32 n, f32 input[n], u32 bytes, the blocks, f32 dequantized[n] (little-endian). */
#include <dlfcn.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

typedef void (*quant_fn)(const float *x, void *y, int64_t k);
typedef void (*dequant_fn)(const void *x, float *y, int64_t k);

static const struct {
  const char *name, *sym;
  int block, bytes;
} TYPES[] = {{"Q4_0", "q4_0", 32, 18},   {"Q4_1", "q4_1", 32, 20},     {"Q5_0", "q5_0", 32, 22},
             {"Q5_1", "q5_1", 32, 24},   {"Q8_0", "q8_0", 32, 34},     {"Q2_K", "q2_K", 256, 84},
             {"Q3_K", "q3_K", 256, 110}, {"Q4_K", "q4_K", 256, 144},   {"Q5_K", "q5_K", 256, 176},
             {"Q6_K", "q6_K", 256, 210}, {"IQ4_NL", "iq4_nl", 32, 18}, {"IQ4_XS", "iq4_xs", 256, 136},
             {"MXFP4", "mxfp4", 32, 17}};

static uint64_t rng = 0x9e3779b97f4a7c15ull;
static float uniform(void) {
  rng ^= rng >> 12;
  rng ^= rng << 25;
  rng ^= rng >> 27;
  return (float)((rng * 0x2545F4914F6CDD1Dull) >> 40) / 16777216.0f;
}

int main(int argc, char **argv) {
  if (argc != 3) {
    fprintf(stderr, "usage: %s libggml-base.so OUT_DIR\n", argv[0]);
    return 2;
  }
  void *lib = dlopen(argv[1], RTLD_NOW);
  if (!lib) {
    fprintf(stderr, "%s\n", dlerror());
    return 1;
  }
  enum { N = 3 * 256 };
  for (size_t t = 0; t < sizeof TYPES / sizeof TYPES[0]; t++) {
    char qs[64], ds[64], path[512];
    snprintf(qs, sizeof qs, "quantize_row_%s_ref", TYPES[t].sym);
    snprintf(ds, sizeof ds, "dequantize_row_%s", TYPES[t].sym);
    quant_fn q = (quant_fn)dlsym(lib, qs);
    dequant_fn d = (dequant_fn)dlsym(lib, ds);
    if (!q || !d) {
      fprintf(stderr, "%s: %s or %s missing\n", TYPES[t].name, qs, ds);
      return 1;
    }
    float x[N], y[N];
    /* magnitudes change every 16 elements (sub-block scales), signs and offsets vary (mins) */
    for (int i = 0; i < N; i++) {
      float mag = 0.01f + 2.0f * uniform() * (float)((i / 16) % 7 + 1) / 7.0f;
      float off = ((i / 64) % 3 == 1) ? 0.5f * mag : 0.0f;
      x[i] = off + mag * (2.0f * uniform() - 1.0f);
    }
    uint32_t bytes = (uint32_t)(N / TYPES[t].block * TYPES[t].bytes), n = N;
    uint8_t *blk = calloc(1, bytes);
    q(x, blk, N);
    d(blk, y, N);
    snprintf(path, sizeof path, "%s/%s.bin", argv[2], TYPES[t].name);
    FILE *f = fopen(path, "wb");
    if (!f || fwrite(&n, 4, 1, f) != 1 || fwrite(x, 4, N, f) != N || fwrite(&bytes, 4, 1, f) != 1 ||
        fwrite(blk, 1, bytes, f) != bytes || fwrite(y, 4, N, f) != N || fclose(f)) {
      fprintf(stderr, "write %s failed\n", path);
      return 1;
    }
    double err = 0;
    for (int i = 0; i < N; i++)
      err += ((double)x[i] - y[i]) * ((double)x[i] - y[i]);
    printf("%-7s %5u bytes, rms quantization error %.4f\n", TYPES[t].name, bytes, sqrt(err / N));
    free(blk);
  }
  return 0;
}
