/* Tests of the tensor store and the CPU weight conversions: the dtype table, the store's name lookup, f16 and
   bf16 against independent decoders (every bit pattern, rounding at every f16 midpoint), Q8_0/Q4_0 block
   dequantization, and the q4gsw quantizer against its error bound. Run from tests/. */
#define _XOPEN_SOURCE 700
#include "harness.h"
#include "loader_util.h"
#include "tensor_store.h"
#include "weight_convert.h"
#include <math.h>
#include <stdlib.h>
#include <string.h>

static llm_err err;

static uint32_t f2u(float f) {
  uint32_t u;
  memcpy(&u, &f, 4);
  return u;
}
static float u2f(uint32_t u) {
  float f;
  memcpy(&f, &u, 4);
  return f;
}

static void test_half(void) {
  int bad_dec = 0, bad_rt = 0;
  for (uint32_t h = 0; h < 65536; h++) {
    float f = wc_f16_to_f32((uint16_t)h);
    double r = f16_ref((uint16_t)h);
    if (isnan(r) ? !isnan(f) : (double)f != r || !signbit(f) != !signbit(r)) bad_dec++;
    if (!isnan(r) && wc_f32_to_f16(f) != h) bad_rt++;
    if (isnan(r) && !isnan(wc_f16_to_f32(wc_f32_to_f16(f)))) bad_rt++;
  }
  CHECK(bad_dec == 0 && bad_rt == 0, "f16 decode %d wrong, round trip %d wrong", bad_dec, bad_rt);
  /* rounding: every midpoint between consecutive finite f16 values ties to even; just off it goes the near way */
  int bad_mid = 0;
  for (uint32_t h = 0; h < 0x7bff; h++) {
    double lo = f16_ref((uint16_t)h), hi = f16_ref((uint16_t)(h + 1)), mid = (lo + hi) / 2;
    float m = (float)mid; /* exact: f16 midpoints need 12 significant bits */
    uint16_t even = (h & 1) ? (uint16_t)(h + 1) : (uint16_t)h;
    if (wc_f32_to_f16(m) != even || wc_f32_to_f16(-m) != (even | 0x8000)) bad_mid++;
    if (wc_f32_to_f16(u2f(f2u(m) - 1)) != h || wc_f32_to_f16(u2f(f2u(m) + 1)) != h + 1) bad_mid++;
  }
  CHECK(bad_mid == 0, "f16 midpoints: %d wrong", bad_mid);
  CHECK(wc_f32_to_f16(65504.0f) == 0x7bff && wc_f32_to_f16(65519.99f) == 0x7bff && wc_f32_to_f16(65520.0f) == 0x7c00 &&
            wc_f32_to_f16(1e10f) == 0x7c00 && wc_f32_to_f16(-INFINITY) == 0xfc00 && wc_f32_to_f16(-0.0f) == 0x8000,
        "overflow / inf / -0");
  CHECK(wc_f32_to_f16(0x1p-24f) == 1 && wc_f32_to_f16(0x1p-25f) == 0 && wc_f32_to_f16(0x1.8p-25f) == 1 &&
            wc_f32_to_f16(0x1p-30f) == 0 && wc_f32_to_f16(0x1.ff8p-15f) == 0x3ff &&
            wc_f32_to_f16(0x1.ffap-15f) == 0x3ff && wc_f32_to_f16(0x1.ffcp-15f) == 0x400,
        "subnormals");
  uint16_t nan = wc_f32_to_f16(NAN);
  CHECK((nan & 0x7c00) == 0x7c00 && (nan & 0x3ff), "NaN stays NaN");
#ifdef __FLT16_MAX__
  /* random floats of every magnitude against the compiler's own conversion */
  th_rng rng = {99};
  int bad_rand = 0;
  for (int i = 0; i < 2000000; i++) {
    uint32_t u = th_u32(&rng);
    float f = u2f(u);
    if (isnan(f)) continue;
    _Float16 c = (_Float16)f;
    uint16_t cb;
    memcpy(&cb, &c, 2);
    if (wc_f32_to_f16(f) != cb && bad_rand++ < 3) CHECK(0, "f32 %a -> %04x, compiler %04x", f, wc_f32_to_f16(f), cb);
  }
  CHECK(bad_rand == 0, "random f32->f16: %d differ from _Float16", bad_rand);
#endif
  int bad_bf = 0;
  for (uint32_t b = 0; b < 65536; b++) {
    float f = wc_bf16_to_f32((uint16_t)b);
    double r = bf16_ref((uint16_t)b);
    if (isnan(r) ? !isnan(f) : (double)f != r) bad_bf++;
  }
  CHECK(bad_bf == 0, "bf16: %d wrong", bad_bf);
  uint16_t hs[3];
  float fs[3] = {1.0f, -2.5f, 0.1f}, back[3];
  wc_f32_to_f16_n(fs, hs, 3);
  wc_f16_to_f32_n(hs, back, 3);
  CHECK(hs[0] == 0x3c00 && hs[1] == 0xc100 && hs[2] == 0x2e66 && back[1] == -2.5f, "array forms");
}

static void test_block_dequant(void) {
  uint8_t q8[2 * 34], q4[2 * 18];
  th_rng rng = {5};
  for (size_t i = 0; i < sizeof q8; i++)
    q8[i] = (uint8_t)th_u32(&rng);
  for (size_t i = 0; i < sizeof q4; i++)
    q4[i] = (uint8_t)th_u32(&rng);
  q8[0] = 0x00, q8[1] = 0x3c;   /* d = 1 */
  q8[34] = 0x00, q8[35] = 0xb8; /* d = -0.5 */
  q4[0] = 0x00, q4[1] = 0x40;   /* d = 2 */
  q4[18] = 0x66, q4[19] = 0x2e; /* d = f16(0.1) */
  float f8[64], f4[64];
  CHECK(wc_q8_0_dequant(q8, f8, 64, &err) == WGLLM_OK, "%s", err.msg);
  CHECK(wc_q4_0_dequant(q4, f4, 64, &err) == WGLLM_OK, "%s", err.msg);
  int bad = 0;
  for (int i = 0; i < 32; i++) {
    bad += f8[i] != (float)(int8_t)q8[2 + i] || f8[32 + i] != -0.5f * (float)(int8_t)q8[36 + i];
    int lo = i < 16 ? q4[2 + i] & 15 : q4[2 + i - 16] >> 4, hi = i < 16 ? q4[20 + i] & 15 : q4[20 + i - 16] >> 4;
    bad += f4[i] != 2.0f * (float)(lo - 8) || f4[32 + i] != (float)((double)(hi - 8) * f16_ref(0x2e66));
  }
  CHECK(bad == 0, "block dequant: %d wrong", bad);
  wgllm_status st = wc_q8_0_dequant(q8, f8, 40, &err);
  EXPECT_ERR(st, WGLLM_ERR_INVALID_ARG, "Q8_0", "40", NULL);
  st = wc_q4_0_dequant(q4, f4, 33, &err);
  EXPECT_ERR(st, WGLLM_ERR_INVALID_ARG, "Q4_0", "33", NULL);
}

/* Counts elements whose q4gsw round-trip error exceeds the bound of the rule: half a step (plus the f16
   rounding of the scale, at most 8 * 2^-11 of a step) unless the element was clamped at q = 15, which
   happens only for x / d > 7.5 and then costs at most one step. */
static int q4_violations(const float *w, const float *deq, const uint16_t *sc, int64_t N, int64_t K, int G,
                         double *max_rel) {
  int bad = 0;
  *max_rel = 0;
  for (int64_t r = 0; r < N; r++)
    for (int64_t c = 0; c < K; c++) {
      double d = fabs(f16_ref(sc[r * (K / G) + c / G])), e = fabs((double)w[r * K + c] - deq[r * K + c]);
      double ratio = d > 0 ? w[r * K + c] / -f16_ref(sc[r * (K / G) + c / G]) : 0; /* x/d in [-8, 8] */
      int clamped = -ratio > 7.5 - 1e-3;
      double bound = d * ((clamped ? 1.0 : 0.5) + 8.0 / 2048) + 1e-30;
      if (e > bound) bad++;
      if (d > 0 && !clamped && e / d > *max_rel) *max_rel = e / d;
    }
  return bad;
}

/* ggml's block types against ggml itself: tests/data/quant/<TYPE>.bin holds seeded rows, ggml's reference
   quantization of them and ggml's dequantization (tools/quant/ggml_golden.c, llama.cpp's libggml-base.so);
   wgllm's to-f32 of the blocks must give the same floats, bit for bit. */
static void test_ggml_golden(void) {
  static const wt_dtype types[] = {WT_Q4_0, WT_Q8_0, WT_Q4_1, WT_Q5_0,   WT_Q5_1,   WT_Q2_K, WT_Q3_K,
                                   WT_Q4_K, WT_Q5_K, WT_Q6_K, WT_IQ4_NL, WT_IQ4_XS, WT_MXFP4};
  for (size_t t = 0; t < sizeof types / sizeof types[0]; t++) {
    const wt_dtype_traits *tr = wt_traits(types[t]);
    char path[128];
    snprintf(path, sizeof path, "data/quant/%s.bin", tr->name);
    size_t len;
    uint8_t *f = th_read_file(path, &len);
    CHECK(f != NULL, "%s missing", path);
    if (!f) continue;
    uint32_t n, bytes;
    memcpy(&n, f, 4);
    memcpy(&bytes, f + 4 + 4 * (size_t)n, 4);
    const uint8_t *blocks = f + 8 + 4 * (size_t)n;
    const float *want = (const float *)(blocks + bytes);
    CHECK(len == 8 + 8 * (size_t)n + bytes && wt_nbytes(types[t], n) == bytes, "%s: %u elements in %u bytes", path, n,
          bytes);
    float *got = malloc((size_t)n * 4);
    llm_err err = {0};
    CHECK(tr->to_f32(blocks, got, n, &err) == WGLLM_OK, "%s to_f32: %s", tr->name, err.msg);
    size_t bad = 0, first = 0;
    for (uint32_t i = 0; i < n; i++)
      if (memcmp(&got[i], &want[i], 4) && !bad++) first = i;
    CHECK(!bad, "%s: %zu of %u elements differ from ggml's (first %zu: %g, ggml %g)", tr->name, bad, n, first,
          got[first], want[first]);
    /* a count that is not whole blocks is refused */
    CHECK(tr->to_f32(blocks, got, (int64_t)tr->block - 1 + (tr->block == 1), &err) ==
              (tr->block == 1 ? WGLLM_OK : WGLLM_ERR_INVALID_ARG),
          "%s: a partial block", tr->name);
    free(got);
    free(f);
  }
}

static void test_q4gsw(void) {
  th_rng rng = {42};
  const int64_t N = 7, K = 384;
  float *w = malloc(N * K * sizeof *w), *deq = malloc(N * K * sizeof *deq);
  uint32_t *qs = malloc(q4gsw_qs_words(N, K) * 4);
  uint16_t *sc = malloc(q4gsw_scale_count(N, K, 32) * 2);
  for (int gi = 0; gi < 3; gi++) {
    int G = 32 << gi;
    for (int64_t i = 0; i < N * K; i++)
      w[i] = th_uniform(&rng, -1.0f, 1.0f) * (1.0f + (float)(i / G % 5));
    CHECK(q4gsw_quantize_f32(w, N, K, G, qs, sc, &err) == WGLLM_OK, "%s", err.msg);
    CHECK(q4gsw_dequant(qs, sc, N, K, G, deq, &err) == WGLLM_OK, "%s", err.msg);
    double rel;
    int bad = q4_violations(w, deq, sc, N, K, G, &rel);
    CHECK(bad == 0, "G=%d: %d elements beyond the bound", G, bad);
    CHECK(rel <= 0.5 + 8.0 / 2048 && rel > 0.45, "G=%d: max unclamped error %.4f steps", G, rel);
    /* the element of largest |x| in each group is reproduced up to the f16 rounding of the scale */
    int bad_max = 0, bad_code = 0;
    for (int64_t r = 0; r < N; r++)
      for (int64_t g = 0; g < K / G; g++) {
        int64_t im = r * K + g * G;
        for (int64_t j = 1; j < G; j++)
          if (fabsf(w[r * K + g * G + j]) > fabsf(w[im])) im = r * K + g * G + j;
        if (fabs(deq[im] - w[im]) > fabs(w[im]) * 1.0 / 2048 || (qs[im / 8] >> (4 * (im % 8)) & 15) != 0) bad_max++;
        /* codes against round(x / d) + 8 in double, away from ties */
        double d = w[im] / -8.0;
        for (int64_t j = 0; j < G; j++) {
          int64_t e = r * K + g * G + j;
          double t = w[e] / d + 8;
          if (fabs(t - floor(t) - 0.5) < 1e-4) continue;
          int want = (int)floor(t + 0.5);
          want = want > 15 ? 15 : want;
          bad_code += (int)(qs[e / 8] >> (4 * (e % 8)) & 15) != want;
        }
      }
    CHECK(bad_max == 0 && bad_code == 0, "G=%d: %d group maxima, %d codes wrong", G, bad_max, bad_code);
    /* the check catches broken quantizers: a code off by one, and a scale off by a factor of two */
    uint32_t save = qs[5];
    qs[5] ^= 1u << (4 * 3 + 1); /* element 43: its code changes by +-2 */
    q4gsw_dequant(qs, sc, N, K, G, deq, &err);
    CHECK(q4_violations(w, deq, sc, N, K, G, &rel) > 0, "G=%d: broken code not caught", G);
    qs[5] = save;
    uint16_t s0 = sc[1];
    sc[1] = wc_f32_to_f16(2.0f * wc_f16_to_f32(sc[1]));
    q4gsw_dequant(qs, sc, N, K, G, deq, &err);
    sc[1] = s0; /* the check is against the true scale */
    CHECK(q4_violations(w, deq, sc, N, K, G, &rel) > 0, "G=%d: broken scale not caught", G);
  }
  /* llama.cpp's example: a group with both extremes; a zero group */
  float g[64] = {0};
  for (int i = 0; i < 32; i++)
    g[i] = (float)(i - 16) / 4.0f; /* -4 .. 3.75: m = -4, d = 0.5 */
  q4gsw_quantize_f32(g, 1, 64, 32, qs, sc, &err);
  q4gsw_dequant(qs, sc, 1, 64, 32, deq, &err);
  CHECK(wc_f16_to_f32(sc[0]) == 0.5f && (qs[0] & 15) == 0 && deq[0] == -4.0f && deq[31] == 3.5f, "extremes: %g %g",
        deq[0], deq[31]);
  CHECK(wc_f16_to_f32(sc[1]) == 0.0f && qs[4] == 0x88888888u && deq[40] == 0.0f, "zero group");
  /* errors */
  wgllm_status st = q4gsw_quantize_f32(w, N, K, 48, qs, sc, &err);
  EXPECT_ERR(st, WGLLM_ERR_INVALID_ARG, "group size 48", NULL, NULL);
  st = q4gsw_quantize_f32(w, 3, 100, 32, qs, sc, &err);
  EXPECT_ERR(st, WGLLM_ERR_INVALID_ARG, "[3, 100]", "32", NULL);
  st = q4gsw_quantize_f32(w, 3, 192, 128, qs, sc, &err);
  EXPECT_ERR(st, WGLLM_ERR_INVALID_ARG, "[3, 192]", "128", NULL);
  st = q4gsw_from_q4_0(w, 2, 48, qs, sc, &err);
  EXPECT_ERR(st, WGLLM_ERR_INVALID_ARG, "[2, 48]", NULL, NULL);
  st = q4gsw_dequant(qs, sc, 0, 64, 32, deq, &err);
  EXPECT_ERR(st, WGLLM_ERR_INVALID_ARG, "[0, 64]", NULL, NULL);
  w[70] = NAN;
  st = q4gsw_quantize_f32(w, 2, 64, 64, qs, sc, &err);
  EXPECT_ERR(st, WGLLM_ERR_INVALID_ARG, "W[1][6]", "finite", NULL);
  free(w), free(deq), free(qs), free(sc);
}

static void test_store_misc(void) {
  CHECK(!strcmp(wt_dtype_name(WT_BF16), "BF16") && !strcmp(wt_dtype_name(WT_Q4_0), "Q4_0"), "dtype names");
  CHECK(wt_nbytes(WT_F32, 5) == 20 && wt_nbytes(WT_BF16, 5) == 10 && wt_nbytes(WT_Q8_0, 64) == 68 &&
            wt_nbytes(WT_Q4_0, 64) == 36 && wt_nbytes(WT_Q4_0, 33) == 0 && wt_nbytes(WT_F16, -1) == 0,
        "nbytes");
  /* many names: the hash table grows and still finds everything */
  wt_store *s = wt_store_create(WT_FORMAT_SAFETENSORS);
  char name[32];
  int bad = 0;
  for (int i = 0; i < 5000; i++) {
    snprintf(name, sizeof name, "t.%d.w", i);
    wt_tensor t = {.name = name, .dtype = WT_F32, .n_dims = 1, .shape = {i, 1, 1, 1}, .file = "mem"};
    bad += wt_store_add(s, &t, &err) != WGLLM_OK;
  }
  for (int i = 0; i < 5000; i++) {
    snprintf(name, sizeof name, "t.%d.w", i);
    const wt_tensor *t = wt_find(s, name);
    bad += !t || t->shape[0] != i || wt_at(s, (size_t)i) != t;
  }
  wt_tensor t = {.name = "t.77.w", .file = "other"};
  wgllm_status st = wt_store_add(s, &t, &err);
  EXPECT_ERR(st, WGLLM_ERR_FORMAT, "other", "'t.77.w'", "mem");
  CHECK(bad == 0 && wt_count(s) == 5000 && !wt_find(s, "t.5000.w"), "hash table: %d wrong", bad);
  wt_store_free(s);
}

int main(void) {
  test_ggml_golden();
  verbose = getenv("WGLLM_TEST_VERBOSE") != NULL;
  test_store_misc();
  test_half();
  test_block_dequant();
  test_q4gsw();
  return th_finish("test_convert");
}
