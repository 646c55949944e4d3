/* Op conformance suite: every GPU kernel against its CPU reference (src/ref) on seeded random inputs,
   odd and prime sizes as well as LLM-like ones. Outputs are poisoned (NaN) before each run, so an
   unwritten element fails; each op has its own tolerance. */
#include "harness.h"
#include "ops.h"
#include "ref.h"
#include <math.h>
#include <stdlib.h>
#include <string.h>

static th_rng rng = {12345};

static float *rnd(size_t n, float lo, float hi) {
  float *x = malloc(n * sizeof *x + 4);
  th_fill(&rng, x, n, lo, hi);
  return x;
}

static gpu_recorder *rec_new(void) { return gpu_recorder_create(th_gpu(), 0); }

static void test_fill(void) {
  size_t sizes[] = {1, 7, 1000, 65537};
  float values[] = {3.25f, 0.0f, -1e-3f};
  for (size_t si = 0; si < 4; si++)
    for (size_t vi = 0; vi < 3; vi++) {
      size_t n = sizes[si];
      gpu_buffer *o = th_poisoned(n * 4 + 8); /* 2 guard elements past n must stay poisoned */
      gpu_recorder *r = rec_new();
      op_fill_f32(r, gpu_whole(o), (uint32_t)n, values[vi]);
      th_run(r);
      float *got = malloc(n * 4 + 8), *want = malloc(n * 4);
      th_download(o, got, n * 4 + 8);
      for (size_t i = 0; i < n; i++)
        want[i] = values[vi];
      char what[64];
      snprintf(what, sizeof what, "fill n=%zu v=%g", n, values[vi]);
      th_compare(what, got, want, n, 0, 0);
      CHECK(isnan(got[n]) && isnan(got[n + 1]), "%s wrote past n", what);
      gpu_recorder_free(r);
      gpu_buffer_destroy(th_gpu(), o);
      free(got);
      free(want);
    }
}

static void test_binary(void) {
  size_t cases[][2] = {{1, 1}, {13, 13}, {1031, 1031}, {12288, 4096}, {70, 7}};
  for (int op = 0; op < 2; op++)
    for (size_t c = 0; c < 5; c++) {
      size_t n = cases[c][0], nb = cases[c][1];
      float *a = rnd(n, -2, 2), *b = rnd(nb, -2, 2), *want = malloc(n * 4), *got = malloc(n * 4);
      gpu_buffer *ga = th_upload(a, n * 4), *gb = th_upload(b, nb * 4), *go = th_poisoned(n * 4);
      gpu_recorder *r = rec_new();
      if (op == 0) {
        op_add(r, gpu_whole(ga), gpu_whole(gb), gpu_whole(go), (uint32_t)n, (uint32_t)nb);
        ref_add(a, b, want, n, nb);
      } else {
        op_mul(r, gpu_whole(ga), gpu_whole(gb), gpu_whole(go), (uint32_t)n, (uint32_t)nb);
        ref_mul(a, b, want, n, nb);
      }
      th_run(r);
      th_download(go, got, n * 4);
      char what[64];
      snprintf(what, sizeof what, "%s n=%zu nb=%zu", op ? "mul" : "add", n, nb);
      th_compare(what, got, want, n, 0, 1e-7);
      gpu_recorder_free(r);
      gpu_buffer_destroy(th_gpu(), ga);
      gpu_buffer_destroy(th_gpu(), gb);
      gpu_buffer_destroy(th_gpu(), go);
      free(a);
      free(b);
      free(want);
      free(got);
    }
}

static void test_rms_norm(void) {
  size_t cases[][4] = {{1, 1, 1, 1},          {7, 3, 9, 7},        {257, 5, 257, 260},
                       {2048, 4, 2048, 2048}, {128, 24, 128, 128}, {4099, 2, 4099, 4099}};
  for (int off = 0; off < 2; off++)
    for (size_t c = 0; c < 6; c++) {
      size_t n = cases[c][0], rows = cases[c][1], is = cases[c][2], os = cases[c][3];
      float *x = rnd(rows * is, -3, 3), *w = rnd(n, -1.5f, 1.5f), *want = malloc(rows * os * 4),
            *got = malloc(rows * os * 4);
      gpu_buffer *gx = th_upload(x, rows * is * 4), *gw = th_upload(w, n * 4), *go = th_poisoned(rows * os * 4);
      gpu_recorder *r = rec_new();
      op_rms_norm(r, gpu_whole(gx), gpu_whole(gw), gpu_whole(go), (uint32_t)n, (uint32_t)rows, (uint32_t)is,
                  (uint32_t)os, 1e-6f, (float)off);
      th_run(r);
      th_download(go, got, rows * os * 4);
      for (size_t i = 0; i < rows * os; i++)
        want[i] = got[i]; /* padding columns: compare only the row bodies */
      ref_rms_norm(x, w, want, n, rows, is, os, 1e-6f, (float)off);
      char what[80];
      snprintf(what, sizeof what, "rms_norm n=%zu rows=%zu off=%d", n, rows, off);
      float *gb = malloc(rows * n * 4), *wb = malloc(rows * n * 4);
      for (size_t rr = 0; rr < rows; rr++) {
        memcpy(gb + rr * n, got + rr * os, n * 4);
        memcpy(wb + rr * n, want + rr * os, n * 4);
      }
      th_compare(what, gb, wb, rows * n, 1e-6, 2e-6);
      gpu_recorder_free(r);
      gpu_buffer_destroy(th_gpu(), gx);
      gpu_buffer_destroy(th_gpu(), gw);
      gpu_buffer_destroy(th_gpu(), go);
      free(x);
      free(w);
      free(want);
      free(got);
      free(gb);
      free(wb);
    }
  /* first row at an element offset (the last rows of a prefill) */
  size_t n = 96, rows = 3, skip = 5;
  float *x = rnd((rows + skip) * n, -3, 3), *w = rnd(n, -1, 1), *want = malloc(rows * n * 4),
        *got = malloc(rows * n * 4);
  gpu_buffer *gx = th_upload(x, (rows + skip) * n * 4), *gw = th_upload(w, n * 4), *go = th_poisoned(rows * n * 4);
  gpu_recorder *r = rec_new();
  op_rms_norm_params rq = {
      (uint32_t)n, (uint32_t)rows, {(uint32_t)(skip * n), (uint32_t)n, 0, 0}, {0, (uint32_t)n, 0, 0}, 1e-5f, 0.0f};
  op_rms_norm_rows(r, gpu_whole(gx), gpu_whole(gw), gpu_whole(go), &rq);
  th_run(r);
  th_download(go, got, rows * n * 4);
  ref_rms_norm(x + skip * n, w, want, n, rows, n, n, 1e-5f, 0.0f);
  th_compare("rms_norm in_off", got, want, rows * n, 1e-6, 2e-6);
  gpu_recorder_free(r);
  gpu_buffer_destroy(th_gpu(), gx);
  gpu_buffer_destroy(th_gpu(), gw);
  gpu_buffer_destroy(th_gpu(), go);
  free(x);
  free(w);
  free(want);
  free(got);
}

static void test_rope(void) {
  /* tokens, heads, head_dim, rot_dim, token_stride, mode */
  size_t cases[][6] = {{1, 1, 2, 2, 2, 0},      {5, 3, 8, 8, 24, 0},       {5, 3, 8, 8, 24, 1},
                       {7, 6, 64, 64, 640, 0},  {7, 6, 64, 64, 640, 1},    {3, 2, 128, 32, 300, 0},
                       {3, 2, 128, 32, 300, 1}, {33, 4, 256, 256, 1024, 0}};
  size_t max_pos = 4096;
  for (size_t c = 0; c < 8; c++) {
    size_t T = cases[c][0], H = cases[c][1], D = cases[c][2], R = cases[c][3], S = cases[c][4];
    int mode = (int)cases[c][5];
    float *inv = malloc(R / 2 * 4);
    for (size_t i = 0; i < R / 2; i++)
      inv[i] = (float)pow(10000.0, -2.0 * i / R) / (i % 3 == 0 ? 8.0f : 1.0f); /* per-pair factors */
    float *cs = malloc(max_pos * R / 2 * 8);
    op_rope_table(cs, inv, (uint32_t)R, (uint32_t)max_pos, 1.0f);
    uint32_t *pos = malloc(T * 4);
    for (size_t t = 0; t < T; t++)
      pos[t] = th_u32(&rng) % max_pos;
    float *x = rnd(T * S, -2, 2), *want = malloc(T * S * 4), *got = malloc(T * S * 4);
    memcpy(want, x, T * S * 4);
    ref_rope(want, pos, cs, T, H, D, R, S, mode, max_pos);
    gpu_buffer *gx = th_upload(x, T * S * 4), *gp = th_upload(pos, T * 4), *gc = th_upload(cs, max_pos * R / 2 * 8);
    gpu_recorder *r = rec_new();
    op_rope_params rp = {(uint32_t)T, (uint32_t)H, (uint32_t)D,        (uint32_t)R,
                         0,           (uint32_t)S, (op_rope_mode)mode, (uint32_t)max_pos};
    op_rope(r, gpu_whole(gx), gpu_whole(gp), gpu_whole(gc), &rp);
    th_run(r);
    th_download(gx, got, T * S * 4);
    char what[80];
    snprintf(what, sizeof what, "rope T=%zu H=%zu D=%zu R=%zu mode=%d", T, H, D, R, mode);
    th_compare(what, got, want, T * S, 1e-6, 1e-6); /* includes untouched elements: they must be unchanged */
    /* table against angles computed in double for small positions (f32 angle error grows with pos) */
    float *direct = malloc(T * S * 4);
    memcpy(direct, x, T * S * 4);
    for (size_t t = 0; t < T; t++)
      pos[t] = pos[t] % 64;
    ref_rope_direct(direct, pos, inv, T, H, D, R, S, mode);
    memcpy(want, x, T * S * 4);
    ref_rope(want, pos, cs, T, H, D, R, S, mode, max_pos);
    snprintf(what, sizeof what, "rope table vs direct R=%zu", R);
    th_compare(what, want, direct, T * S, 2e-5, 2e-5);
    gpu_recorder_free(r);
    gpu_buffer_destroy(th_gpu(), gx);
    gpu_buffer_destroy(th_gpu(), gp);
    gpu_buffer_destroy(th_gpu(), gc);
    free(inv);
    free(cs);
    free(pos);
    free(x);
    free(want);
    free(got);
    free(direct);
  }
}

static void test_softmax(void) {
  size_t cases[][2] = {{1, 1}, {5, 3}, {1000, 7}, {32003, 2}};
  float scales[] = {1.0f, 0.125f};
  for (size_t c = 0; c < 4; c++)
    for (int si = 0; si < 2; si++) {
      size_t n = cases[c][0], rows = cases[c][1];
      float *x = rnd(n * rows, -8, 8), *want = malloc(n * rows * 4), *got = malloc(n * rows * 4);
      gpu_buffer *gx = th_upload(x, n * rows * 4), *go = th_poisoned(n * rows * 4);
      gpu_recorder *r = rec_new();
      op_softmax(r, gpu_whole(gx), gpu_whole(go), (uint32_t)n, (uint32_t)rows, scales[si]);
      th_run(r);
      th_download(go, got, n * rows * 4);
      ref_softmax(x, want, n, rows, scales[si]);
      char what[64];
      snprintf(what, sizeof what, "softmax n=%zu rows=%zu s=%g", n, rows, scales[si]);
      th_compare(what, got, want, n * rows, 1e-8, 2e-5);
      gpu_recorder_free(r);
      gpu_buffer_destroy(th_gpu(), gx);
      gpu_buffer_destroy(th_gpu(), go);
      free(x);
      free(want);
      free(got);
    }
}

static void test_argmax(void) {
  size_t cases[][2] = {{1, 1}, {2, 3}, {257, 5}, {128256, 2}, {151936, 1}};
  for (size_t c = 0; c < 5; c++) {
    size_t n = cases[c][0], rows = cases[c][1];
    float *x = rnd(n * rows, -10, 10);
    if (n > 2) { /* a tie: the lowest index wins */
      size_t a = th_u32(&rng) % (n / 2), b = n / 2 + th_u32(&rng) % (n / 2);
      x[a] = x[b] = 11.0f;
    }
    uint32_t *want = malloc(rows * 4), *got = malloc(rows * 4);
    gpu_buffer *gx = th_upload(x, n * rows * 4), *go = th_poisoned(rows * 4);
    gpu_recorder *r = rec_new();
    op_argmax(r, gpu_whole(gx), gpu_whole(go), (uint32_t)n, (uint32_t)rows);
    th_run(r);
    th_download(go, got, rows * 4);
    ref_argmax(x, want, n, rows);
    for (size_t i = 0; i < rows; i++)
      CHECK(got[i] == want[i], "argmax n=%zu row %zu: got %u want %u", n, i, got[i], want[i]);
    gpu_recorder_free(r);
    gpu_buffer_destroy(th_gpu(), gx);
    gpu_buffer_destroy(th_gpu(), go);
    free(x);
    free(want);
    free(got);
  }
}

/* tolerance for a dot product of length K: relative to sum |x w| */
static void compare_linear(const char *what, const float *got, const float *want, const float *x, const float *w,
                           size_t M, size_t N, size_t K) {
  size_t bad = 0;
  for (size_t m = 0; m < M; m++)
    for (size_t n = 0; n < N; n++) {
      double s = 0;
      for (size_t k = 0; k < K; k++)
        s += fabs((double)x[m * K + k] * w[n * K + k]);
      double tol = 1e-6 + 4e-6 * s;
      double d = fabs((double)got[m * N + n] - want[m * N + n]);
      if (!(d <= tol) || !isfinite(got[m * N + n])) {
        if (bad < 4) fprintf(stderr, "  %s[%zu,%zu] got %.9g want %.9g\n", what, m, n, got[m * N + n], want[m * N + n]);
        bad++;
      }
    }
  CHECK(bad == 0, "%s: %zu of %zu outputs out of tolerance", what, bad, M * N);
}

/* Builds a random weight of the given storage type for [N][K]; deq receives the exact values the kernel
   must use (f16-rounded, or dequantized q4gsw / q8). Buffers go to *bufs (2 entries) for cleanup. */
static op_weight make_weight(op_wtype type, size_t N, size_t K, uint32_t group, float *deq, gpu_buffer **bufs) {
  op_weight w = {0};
  w.type = type;
  w.group = group;
  bufs[0] = bufs[1] = NULL;
  if (type == OP_W_F32) {
    th_fill(&rng, deq, N * K, -1, 1);
    bufs[0] = th_upload(deq, N * K * 4);
  } else if (type == OP_W_F16) {
    uint16_t *h = malloc(N * K * 2 + 4);
    for (size_t i = 0; i < N * K; i++) {
      h[i] = ref_f32_to_f16(th_uniform(&rng, -1, 1));
      deq[i] = ref_f16_to_f32(h[i]);
    }
    bufs[0] = th_upload(h, N * K * 2);
    free(h);
  } else if (type == OP_W_Q4) {
    size_t ng = N * K / group;
    uint32_t *q = calloc(N * K / 8 + 1, 4);
    uint16_t *sc = malloc(ng * 2 + 4);
    for (size_t g = 0; g < ng; g++)
      sc[g] = ref_f32_to_f16(th_uniform(&rng, -0.2f, 0.2f));
    for (size_t e = 0; e < N * K; e++) {
      uint32_t nib = th_u32(&rng) & 15;
      q[e / 8] |= nib << (4 * (e % 8));
      deq[e] = ((float)nib - 8.0f) * ref_f16_to_f32(sc[e / group]);
    }
    bufs[0] = th_upload(q, N * K / 2);
    bufs[1] = th_upload(sc, ng * 2);
    free(q);
    free(sc);
  } else {
    size_t ng = N * K / 32;
    int8_t *q = malloc(N * K + 4);
    uint16_t *sc = malloc(ng * 2 + 4);
    for (size_t g = 0; g < ng; g++)
      sc[g] = ref_f32_to_f16(th_uniform(&rng, -0.02f, 0.02f));
    for (size_t e = 0; e < N * K; e++) {
      q[e] = (int8_t)((int)(th_u32(&rng) % 255) - 127);
      deq[e] = (float)q[e] * ref_f16_to_f32(sc[e / 32]);
    }
    bufs[0] = th_upload(q, N * K);
    bufs[1] = th_upload(sc, ng * 2);
    free(q);
    free(sc);
  }
  w.data = gpu_whole(bufs[0]);
  if (bufs[1]) w.scales = gpu_whole(bufs[1]);
  return w;
}

static void free_weight(gpu_buffer **bufs) {
  gpu_buffer_destroy(th_gpu(), bufs[0]);
  gpu_buffer_destroy(th_gpu(), bufs[1]);
}

static void test_linear(void) {
  /* M, N, K: odd/prime shapes for dense weights; quantized ones need K % group == 0 */
  size_t dense[][3] = {{1, 1, 1},   {1, 7, 13},     {3, 31, 67},     {4, 64, 2048}, {1, 1000, 256},
                       {5, 17, 33}, {67, 129, 257}, {128, 256, 512}, {2, 3, 4097},  {64, 64, 64}};
  size_t quant[][3] = {{1, 1, 128},  {1, 7, 256},    {3, 31, 384},    {4, 96, 2048}, {1, 1003, 512},
                       {5, 17, 128}, {67, 129, 256}, {128, 256, 512}, {2, 3, 4096},  {64, 64, 128}};
  uint32_t groups[] = {32, 64, 128};
  /* route 0: GEMV (q4 weights take the tuned gemv_q4 kernel), 1: tiled GEMM, 2: q4 through the generic GEMV */
  for (int wt = 0; wt < 4; wt++)
    for (int route = 0; route < 3; route++)
      for (size_t c = 0; c < 10; c++)
        for (int has_bias = 0; has_bias < 2; has_bias++) {
          size_t M = wt < 2 ? dense[c][0] : quant[c][0], N = wt < 2 ? dense[c][1] : quant[c][1],
                 K = wt < 2 ? dense[c][2] : quant[c][2];
          uint32_t group = wt == OP_W_Q4 ? groups[c % 3] : 32;
          if (route != 1 && M > 8) continue; /* the GEMV route is for a few rows */
          if (route == 2 && wt != OP_W_Q4) continue;
          float *x = rnd(M * K, -1, 1), *w = malloc(N * K * 4 + 4), *b = rnd(N, -1, 1);
          float *want = malloc(M * N * 4), *got = malloc(M * N * 4);
          gpu_buffer *wb[2];
          op_weight ow = make_weight((op_wtype)wt, N, K, group, w, wb);
          gpu_buffer *gx = th_upload(x, M * K * 4), *gb = th_upload(b, N * 4), *go = th_poisoned(M * N * 4);
          gpu_view bias = has_bias ? gpu_whole(gb) : (gpu_view){0};
          gpu_recorder *r = rec_new();
          if (route == 0)
            op_matvec(r, gpu_whole(gx), &ow, bias, gpu_whole(go), (uint32_t)M, (uint32_t)N, (uint32_t)K);
          else if (route == 2)
            op_matvec_generic(r, gpu_whole(gx), &ow, bias, gpu_whole(go), (uint32_t)M, (uint32_t)N, (uint32_t)K);
          else
            op_matmul(r, gpu_whole(gx), &ow, bias, gpu_whole(go), (uint32_t)M, (uint32_t)N, (uint32_t)K);
          th_run(r);
          th_download(go, got, M * N * 4);
          ref_linear(x, w, has_bias ? b : NULL, want, M, N, K);
          char what[112];
          snprintf(what, sizeof what, "%s %s g%u M=%zu N=%zu K=%zu bias=%d",
                   route == 1 ? "matmul"
                   : route    ? "matvec-generic"
                              : "matvec",
                   op_wtype_name((op_wtype)wt), group, M, N, K, has_bias);
          compare_linear(what, got, want, x, w, M, N, K);
          gpu_recorder_free(r);
          gpu_buffer_destroy(th_gpu(), gx);
          gpu_buffer_destroy(th_gpu(), gb);
          gpu_buffer_destroy(th_gpu(), go);
          free_weight(wb);
          free(x);
          free(w);
          free(b);
          free(want);
          free(got);
        }
  /* refusals: q4 with K not a multiple of the group, unsupported group */
  gpu_buffer *wb[2];
  float *deq = malloc(64 * 4);
  op_weight ow = make_weight(OP_W_Q4, 1, 64, 32, deq, wb);
  gpu_recorder *r = rec_new();
  ow.group = 64;
  CHECK(op_matvec(r, ow.data, &ow, (gpu_view){0}, ow.data, 1, 1, 96) == WGLLM_ERR_UNSUPPORTED, "q4 K %% group refused");
  gpu_recorder_free(r);
  r = rec_new();
  ow.group = 16;
  CHECK(op_matvec(r, ow.data, &ow, (gpu_view){0}, ow.data, 1, 1, 64) == WGLLM_ERR_UNSUPPORTED &&
            strstr(gpu_recorder_error(r), "group"),
        "q4 group 16 refused: %s", gpu_recorder_error(r));
  gpu_recorder_free(r);
  free_weight(wb);
  free(deq);
}

static void test_embedding(void) {
  size_t cases[][3] = {{1, 32, 1}, {3, 64, 11}, {5, 2048, 1000}, {17, 96, 257}, {1, 7, 3}};
  for (int wt = 0; wt < 4; wt++)
    for (size_t c = 0; c < 5; c++) {
      size_t T = cases[c][0], D = cases[c][1], V = cases[c][2];
      if (wt >= 2 && D % 32) continue;
      float scale = c % 2 ? sqrtf((float)D) : 1.0f;
      float *table = malloc(V * D * 4 + 4);
      gpu_buffer *tb[2];
      op_weight ow = make_weight((op_wtype)wt, V, D, 32, table, tb);
      uint32_t *ids = malloc(T * 4);
      for (size_t t = 0; t < T; t++)
        ids[t] = t == 0 ? (uint32_t)(V - 1) : th_u32(&rng) % V;
      float *want = malloc(T * D * 4), *got = malloc(T * D * 4);
      gpu_buffer *gi = th_upload(ids, T * 4), *go = th_poisoned(T * D * 4);
      gpu_recorder *r = rec_new();
      op_embedding(r, gpu_whole(gi), &ow, gpu_whole(go), (uint32_t)T, (uint32_t)D, (uint32_t)V, scale);
      th_run(r);
      th_download(go, got, T * D * 4);
      ref_embedding(ids, table, want, T, D, scale);
      char what[64];
      snprintf(what, sizeof what, "embedding %s T=%zu D=%zu V=%zu", op_wtype_name((op_wtype)wt), T, D, V);
      th_compare(what, got, want, T * D, 0, 1e-6);
      gpu_recorder_free(r);
      free_weight(tb);
      gpu_buffer_destroy(th_gpu(), gi);
      gpu_buffer_destroy(th_gpu(), go);
      free(table);
      free(ids);
      free(want);
      free(got);
    }
}

static void test_glu(void) {
  size_t cases[][2] = {{1, 1}, {7, 3}, {192, 24}, {8192, 2}};
  for (int act = 0; act < 2; act++)
    for (size_t c = 0; c < 4; c++)
      for (int fused = 0; fused < 2; fused++) {
        size_t n = cases[c][0], rows = cases[c][1];
        size_t stride = fused ? 2 * n + 3 : n; /* fused: gate at 0, up at n + 3 in one row */
        float *x = rnd(rows * stride, -6, 6), *u = rnd(rows * stride, -2, 2);
        float *want = malloc(rows * n * 4), *got = malloc(rows * n * 4);
        gpu_buffer *gx = th_upload(x, rows * stride * 4), *gu = th_upload(u, rows * stride * 4),
                   *go = th_poisoned(rows * n * 4);
        gpu_recorder *r = rec_new();
        uint32_t uoff = fused ? (uint32_t)n + 3 : 0;
        op_glu(r, gpu_whole(gx), fused ? gpu_whole(gx) : gpu_whole(gu), gpu_whole(go), (uint32_t)n, (uint32_t)rows,
               (uint32_t)stride, 0, uoff, (op_act)act);
        th_run(r);
        th_download(go, got, rows * n * 4);
        ref_glu(x, fused ? x : u, want, n, rows, stride, 0, uoff, act);
        char what[64];
        snprintf(what, sizeof what, "glu act=%d n=%zu rows=%zu fused=%d", act, n, rows, fused);
        th_compare(what, got, want, rows * n, 1e-6, 1e-5);
        gpu_recorder_free(r);
        gpu_buffer_destroy(th_gpu(), gx);
        gpu_buffer_destroy(th_gpu(), gu);
        gpu_buffer_destroy(th_gpu(), go);
        free(x);
        free(u);
        free(want);
        free(got);
      }
  /* in-place residual add */
  size_t n = 3003; /* 7 * 429 */
  float *a = rnd(n, -1, 1), *b = rnd(7, -1, 1), *want = malloc(n * 4), *got = malloc(n * 4);
  ref_add(a, b, want, n, 7);
  gpu_buffer *ga = th_upload(a, n * 4), *gb = th_upload(b, 28);
  gpu_recorder *r = rec_new();
  op_add_inplace(r, gpu_whole(ga), gpu_whole(gb), (uint32_t)n, 7);
  th_run(r);
  th_download(ga, got, n * 4);
  th_compare("add_inplace", got, want, n, 0, 1e-7);
  gpu_recorder_free(r);
  gpu_buffer_destroy(th_gpu(), ga);
  gpu_buffer_destroy(th_gpu(), gb);
  free(a);
  free(b);
  free(want);
  free(got);
}

/* KV append then attention, against the CPU reference; f32 and (where granted) f16 storage. */
static void test_attention(void) {
  /* T new tokens, past tokens already in cache, n_head, n_kv_head, head_dim, window, softcap*10 */
  size_t cases[][7] = {{1, 0, 1, 1, 4, 0, 0},     {5, 0, 6, 2, 16, 0, 0},   {1, 23, 6, 2, 16, 0, 0},
                       {7, 130, 4, 4, 24, 0, 0},  {3, 300, 8, 2, 64, 0, 0}, {9, 20, 4, 1, 32, 8, 0},
                       {1, 40, 4, 2, 32, 8, 300}, {4, 5, 2, 1, 512, 0, 0},  {2, 257, 4, 2, 128, 100, 500}};
  for (int f16 = 0; f16 < 2; f16++) {
    for (size_t c = 0; c < 9; c++) {
      size_t T = cases[c][0], past = cases[c][1], H = cases[c][2], KVH = cases[c][3], D = cases[c][4];
      uint32_t window = (uint32_t)cases[c][5];
      float softcap = (float)cases[c][6] / 10.0f;
      size_t ctx = past + T + 3;
      op_kv_layout kv = {(uint32_t)KVH, (uint32_t)D, (uint32_t)ctx, f16};
      /* cache prefilled with the past; new K/V rows come from a fused [T][q|k|v] buffer */
      size_t qkv = (H + 2 * KVH) * D;
      float *kc = rnd(KVH * ctx * D, -1, 1), *vc = rnd(KVH * ctx * D, -1, 1), *x = rnd(T * qkv, -1, 1);
      if (f16)
        for (size_t i = 0; i < KVH * ctx * D; i++) {
          kc[i] = ref_f16_to_f32(ref_f32_to_f16(kc[i]));
          vc[i] = ref_f16_to_f32(ref_f32_to_f16(vc[i]));
        }
      uint32_t *pos = malloc(T * 4);
      for (size_t t = 0; t < T; t++)
        pos[t] = (uint32_t)(past + t);
      gpu_buffer *gk, *gv;
      if (f16) {
        uint16_t *hk = malloc(KVH * ctx * D * 2), *hv = malloc(KVH * ctx * D * 2);
        for (size_t i = 0; i < KVH * ctx * D; i++) {
          hk[i] = ref_f32_to_f16(kc[i]);
          hv[i] = ref_f32_to_f16(vc[i]);
        }
        gk = th_upload(hk, KVH * ctx * D * 2);
        gv = th_upload(hv, KVH * ctx * D * 2);
        free(hk);
        free(hv);
      } else {
        gk = th_upload(kc, KVH * ctx * D * 4);
        gv = th_upload(vc, KVH * ctx * D * 4);
      }
      gpu_buffer *gx = th_upload(x, T * qkv * 4), *gp = th_upload(pos, T * 4), *go = th_poisoned(T * H * D * 4);
      gpu_recorder *r = rec_new();
      op_kv_write_params wp = {(uint32_t)T, (uint32_t)(H * D), (uint32_t)qkv, (uint32_t)((H + KVH) * D), (uint32_t)qkv};
      op_kv_write(r, &kv, &wp, gpu_whole(gx), gpu_whole(gx), gpu_whole(gp), gpu_whole(gk), gpu_whole(gv));
      op_attn_params ap = {(uint32_t)T,       (uint32_t)H, (uint32_t)qkv,          0,
                           (uint32_t)(H * D), window,      1.0f / sqrtf((float)D), softcap};
      op_attention(r, &kv, &ap, gpu_whole(gx), gpu_whole(gk), gpu_whole(gv), gpu_whole(gp), gpu_whole(go));
      th_run(r);
      /* reference: write the new rows (rounded like the cache stores them), then attend */
      for (size_t t = 0; t < T; t++)
        for (size_t i = 0; i < KVH * D; i++) {
          size_t h = i / D, d = i % D, dst = (h * ctx + pos[t]) * D + d;
          float kv_k = x[t * qkv + H * D + i], kv_v = x[t * qkv + (H + KVH) * D + i];
          kc[dst] = f16 ? ref_f16_to_f32(ref_f32_to_f16(kv_k)) : kv_k;
          vc[dst] = f16 ? ref_f16_to_f32(ref_f32_to_f16(kv_v)) : kv_v;
        }
      float *want = malloc(T * H * D * 4), *got = malloc(T * H * D * 4);
      ref_attention(x, qkv, 0, kc, vc, pos, want, H * D, T, H, KVH, D, ctx, window, 1.0f / sqrtf((float)D), softcap);
      th_download(go, got, T * H * D * 4);
      char what[96];
      snprintf(what, sizeof what, "attention %s T=%zu past=%zu H=%zu/%zu D=%zu win=%u cap=%g", f16 ? "f16kv" : "f32kv",
               T, past, H, KVH, D, window, softcap);
      th_compare(what, got, want, T * H * D, 2e-6, 2e-5);
      /* the cache rows written on the GPU match */
      float *kgot = malloc(KVH * ctx * D * 4);
      if (f16) {
        uint16_t *hk = malloc(KVH * ctx * D * 2);
        th_download(gk, hk, KVH * ctx * D * 2);
        for (size_t i = 0; i < KVH * ctx * D; i++)
          kgot[i] = ref_f16_to_f32(hk[i]);
        free(hk);
      } else
        th_download(gk, kgot, KVH * ctx * D * 4);
      snprintf(what, sizeof what, "kv_write %s T=%zu past=%zu", f16 ? "f16" : "f32", T, past);
      th_compare(what, kgot, kc, KVH * ctx * D, 0, 0);
      gpu_recorder_free(r);
      gpu_buffer_destroy(th_gpu(), gk);
      gpu_buffer_destroy(th_gpu(), gv);
      gpu_buffer_destroy(th_gpu(), gx);
      gpu_buffer_destroy(th_gpu(), gp);
      gpu_buffer_destroy(th_gpu(), go);
      free(kc);
      free(vc);
      free(x);
      free(pos);
      free(want);
      free(got);
      free(kgot);
    }
  }
}

/* RoPE + KV append in one dispatch against ref_rope and a plain copy into the cache: both layouts, partial
   rotary, f32 and packed-f16 caches, V from the same fused row or from another buffer; plus grouped per-head
   RMSNorm writing into a fused q|k row. */
static void test_rope_kv(void) {
  struct {
    uint32_t T, H, KVH, D, R;
    int mode, vsep;
  } cs_[] = {{1, 4, 2, 16, 16, 0, 0},
             {5, 6, 2, 32, 32, 1, 0},
             {3, 4, 4, 64, 32, 0, 1},
             {7, 8, 2, 128, 128, 1, 1},
             {2, 2, 1, 8, 4, 0, 0}};
  uint32_t max_pos = 512, ctx = 64;
  for (int f16 = 0; f16 < 2; f16++)
    for (size_t c = 0; c < 5; c++) {
      uint32_t T = cs_[c].T, H = cs_[c].H, KVH = cs_[c].KVH, D = cs_[c].D, R = cs_[c].R, S = (H + 2 * KVH) * D;
      op_kv_layout kv = {KVH, D, ctx, f16};
      float *inv = malloc(R / 2 * 4);
      for (uint32_t i = 0; i < R / 2; i++)
        inv[i] = (float)pow(10000.0, -2.0 * i / R);
      float *tab = malloc((size_t)max_pos * R / 2 * 8);
      op_rope_table(tab, inv, R, max_pos, 1.0f);
      float *x = rnd((size_t)T * S, -1, 1), *vs = rnd((size_t)T * S, -1, 1);
      uint32_t *pos = malloc(T * 4);
      for (uint32_t t = 0; t < T; t++)
        pos[t] = 3 + 7 * t;
      size_t n = (size_t)KVH * ctx * D;
      gpu_buffer *gx = th_upload(x, (size_t)T * S * 4), *gv = th_upload(vs, (size_t)T * S * 4),
                 *gp = th_upload(pos, T * 4);
      gpu_buffer *gc = th_upload(tab, (size_t)max_pos * R / 2 * 8), *gk = th_poisoned(n * (f16 ? 2 : 4)),
                 *gvc = th_poisoned(n * (f16 ? 2 : 4));
      op_rope_kv_params rp = {T, H, R, max_pos, (op_rope_mode)cs_[c].mode, 0, S, H * D, S, (H + KVH) * D, S};
      gpu_recorder *r = rec_new();
      CHECK(op_rope_kv(r, &kv, &rp, gpu_whole(gx), cs_[c].vsep ? gpu_whole(gv) : (gpu_view){0}, gpu_whole(gp),
                       gpu_whole(gc), gpu_whole(gk), gpu_whole(gvc)) == WGLLM_OK,
            "record: %s", gpu_recorder_error(r));
      th_run(r);
      gpu_recorder_free(r);
      float *want = malloc((size_t)T * S * 4), *got = malloc((size_t)T * S * 4);
      memcpy(want, x, (size_t)T * S * 4);
      ref_rope(want, pos, tab, T, H + KVH, D, R, S, cs_[c].mode, max_pos); /* q heads then k heads are contiguous */
      th_download(gx, got, (size_t)T * S * 4);
      float *gq = malloc((size_t)T * H * D * 4), *wq = malloc((size_t)T * H * D * 4);
      for (uint32_t t = 0; t < T; t++) {
        memcpy(gq + (size_t)t * H * D, got + (size_t)t * S, H * D * 4);
        memcpy(wq + (size_t)t * H * D, want + (size_t)t * S, H * D * 4);
      }
      char what[96];
      snprintf(what, sizeof what, "rope_kv q T=%u H=%u D=%u R=%u mode=%d", T, H, D, R, cs_[c].mode);
      th_compare(what, gq, wq, (size_t)T * H * D, 1e-6, 1e-6);
      /* cache rows at the positions: rotated k, copied v (rounded to f16 when packed) */
      float *kg = malloc(n * 4), *vg = malloc(n * 4);
      if (f16) {
        uint16_t *h = malloc(n * 2);
        th_download(gk, h, n * 2);
        for (size_t i = 0; i < n; i++)
          kg[i] = ref_f16_to_f32(h[i]);
        th_download(gvc, h, n * 2);
        for (size_t i = 0; i < n; i++)
          vg[i] = ref_f16_to_f32(h[i]);
        free(h);
      } else {
        th_download(gk, kg, n * 4);
        th_download(gvc, vg, n * 4);
      }
      size_t bad = 0;
      for (uint32_t t = 0; t < T; t++)
        for (uint32_t h = 0; h < KVH; h++)
          for (uint32_t d = 0; d < D; d++) {
            float wk = want[(size_t)t * S + (H + h) * D + d];
            float wv = (cs_[c].vsep ? vs : x)[(size_t)t * S + (H + KVH + h) * D + d];
            if (f16) {
              wk = ref_f16_to_f32(ref_f32_to_f16(wk));
              wv = ref_f16_to_f32(ref_f32_to_f16(wv));
            }
            size_t e = ((size_t)h * ctx + pos[t]) * D + d;
            /* f32 rounding of the rotation may move a value across an f16 rounding boundary: one f16 step */
            float tol = f16 ? 1e-6f + 1e-3f * fabsf(wk) : 1e-6f + 1e-6f * fabsf(wk);
            if (!(fabsf(kg[e] - wk) <= tol)) bad++;
            if (vg[e] != wv) bad++;
          }
      CHECK(bad == 0, "rope_kv cache %s T=%u D=%u R=%u mode=%d: %zu wrong", f16 ? "f16" : "f32", T, D, R, cs_[c].mode,
            bad);
      gpu_buffer_destroy(th_gpu(), gx);
      gpu_buffer_destroy(th_gpu(), gv);
      gpu_buffer_destroy(th_gpu(), gp);
      gpu_buffer_destroy(th_gpu(), gc);
      gpu_buffer_destroy(th_gpu(), gk);
      gpu_buffer_destroy(th_gpu(), gvc);
      free(inv);
      free(tab);
      free(x);
      free(vs);
      free(pos);
      free(want);
      free(got);
      free(gq);
      free(wq);
      free(kg);
      free(vg);
    }
  /* grouped per-head norm: heads of 3 tokens inside rows of 100, into rows of 70 at offset 6 */
  uint32_t T = 3, Hh = 4, D = 16, IS = 100, OS = 70;
  float *x = rnd(T * IS, -2, 2), *w = rnd(D, -1, 1);
  gpu_buffer *gx = th_upload(x, T * IS * 4), *gw = th_upload(w, D * 4), *go = th_poisoned(T * OS * 4);
  gpu_recorder *r = rec_new();
  op_rms_norm_params hq = {D, T * Hh, {5, D, Hh, IS}, {6, D, Hh, OS}, 1e-6f, 0.0f};
  op_rms_norm_rows(r, gpu_whole(gx), gpu_whole(gw), gpu_whole(go), &hq);
  th_run(r);
  gpu_recorder_free(r);
  float *got = malloc(T * OS * 4);
  th_download(go, got, T * OS * 4);
  size_t bad = 0;
  for (uint32_t t = 0; t < T; t++)
    for (uint32_t h = 0; h < Hh; h++) {
      float want[16];
      ref_rms_norm(x + t * IS + 5 + h * D, w, want, D, 1, D, D, 1e-6f, 0.0f);
      for (uint32_t d = 0; d < D; d++)
        if (!(fabsf(got[t * OS + 6 + h * D + d] - want[d]) <= 1e-5f)) bad++;
    }
  CHECK(bad == 0, "rms_norm_heads: %zu wrong", bad);
  gpu_buffer_destroy(th_gpu(), gx);
  gpu_buffer_destroy(th_gpu(), gw);
  gpu_buffer_destroy(th_gpu(), go);
  free(x);
  free(w);
  free(got);
}

/* The fused q4 decode GEMV: pre-norm (w and 1+w), residual accumulate, GLU (SiLU, GELU) and bias, row counts
   that do not divide the workgroup's rows, against norm -> linear -> activation on the CPU. */
static void test_gemv_fused(void) {
  /* N, K and the plan: {0} is the predicate's choice; the others are thread layouts of both kernels that the
     predicate picks for other shapes or devices (odd unrolls, partial last workgroups, tiny K splits) */
  struct {
    size_t N, K;
    op_gemv_plan plan;
  } cases[] = {
      {1, 32, {0}},
      {37, 96, {0}},
      {512, 2048, {0}},
      {1003, 128, {0}},
      {3000, 256, {0}},
      {512, 2048, {0, 128, 1, 8, 4}},
      {512, 2048, {0, 32, 4, 4, 4}},
      {512, 2048, {0, 64, 2, 8, 1}},
      {512, 2048, {1, 32, 8, 2, 4}},
      {512, 2048, {1, 128, 2, 4, 4}},
      {512, 2048, {1, 32, 4, 8, 2}},
      {512, 2048, {1, 32, 4, 4, 3}},
      {1003, 1024, {1, 32, 4, 8, 2}},
      {1003, 1024, {1, 32, 8, 2, 4}},
      {37, 96, {0, 4, 32, 4, 1}},
      {37, 96, {0, 1, 128, 1, 1}},
      {1003, 1024, {1, 128, 2, 4, 4}},
      {3000, 256, {0, 32, 4, 4, 2}},
  };
  for (size_t si = 0; si < sizeof cases / sizeof cases[0]; si++)
    for (int mode = 0; mode < 5;
         mode++) { /* 0 plain, 1 norm, 2 norm(1+w)+bias+accumulate, 3 norm+glu silu, 4 glu gelu+bias */
      size_t N = cases[si].N, K = cases[si].K;
      const op_gemv_plan *plan = cases[si].plan.tk ? &cases[si].plan : NULL;
      if (plan && plan->tuned && !(th_gpu()->has_subgroups && th_gpu()->subgroup_min == th_gpu()->subgroup_max))
        continue; /* the subgroup kernel needs a fixed subgroup size */
      int glu = mode >= 3;
      size_t rows = glu ? 2 * N : N;
      float *w = malloc(rows * K * 4), *x = rnd(K, -2, 2), *g = rnd(K, -1, 1), *b = rnd(rows, -1, 1),
            *y0 = rnd(N, -1, 1);
      gpu_buffer *wb[2];
      op_weight ow = make_weight(OP_W_Q4, rows, K, 32, w, wb);
      op_gemv_opts o = {0};
      int has_norm = mode >= 1 && mode <= 3, has_bias = mode == 2 || mode == 4;
      float off = mode == 2 ? 1.0f : 0.0f;
      gpu_buffer *gx = th_upload(x, K * 4), *gg = th_upload(g, K * 4), *gb = th_upload(b, rows * 4),
                 *gy = th_upload(y0, N * 4);
      if (has_norm) {
        o.norm_w = gpu_whole(gg);
        o.eps = 1e-5f;
        o.norm_offset = off;
      }
      o.accumulate = mode == 2;
      o.plan = plan;
      if (glu) {
        o.glu_half = (uint32_t)N;
        o.act = mode == 3 ? OP_ACT_SILU : OP_ACT_GELU_TANH;
      }
      if (!o.accumulate) {
        gpu_buffer_destroy(th_gpu(), gy);
        gy = th_poisoned(N * 4);
      }
      gpu_recorder *r = rec_new();
      CHECK(op_gemv_q4(r, gpu_whole(gx), &ow, has_bias ? gpu_whole(gb) : (gpu_view){0}, gpu_whole(gy), (uint32_t)rows,
                       (uint32_t)K, &o) == WGLLM_OK,
            "record: %s", gpu_recorder_error(r));
      th_run(r);
      float *got = malloc(N * 4), *xn = malloc(K * 4), *lin = malloc(rows * 4), *want = malloc(N * 4);
      th_download(gy, got, N * 4);
      if (has_norm)
        ref_rms_norm(x, g, xn, K, 1, K, K, 1e-5f, off);
      else
        memcpy(xn, x, K * 4);
      ref_linear(xn, w, has_bias ? b : NULL, lin, 1, rows, K);
      if (glu)
        ref_glu(lin, lin, want, N, 1, rows, 0, N, mode == 3 ? 0 : 1);
      else
        for (size_t i = 0; i < N; i++)
          want[i] = lin[i] + (o.accumulate ? y0[i] : 0.0f);
      char what[96];
      snprintf(what, sizeof what, "gemv_q4 fused mode %d N=%zu K=%zu plan %s/%u/%u/%u/%u", mode, N, K,
               plan ? (plan->tuned ? "tuned" : "general") : "default", plan ? plan->tk : 0, plan ? plan->tr : 0,
               plan ? plan->r : 0, plan ? plan->u : 0);
      th_compare(what, got, want, N, 2e-5 * sqrt((double)K), 1e-4);
      gpu_recorder_free(r);
      free_weight(wb);
      gpu_buffer_destroy(th_gpu(), gx);
      gpu_buffer_destroy(th_gpu(), gg);
      gpu_buffer_destroy(th_gpu(), gb);
      gpu_buffer_destroy(th_gpu(), gy);
      free(w);
      free(x);
      free(g);
      free(b);
      free(y0);
      free(got);
      free(xn);
      free(lin);
      free(want);
    }
}

/* RoPE and the cache append folded into flash-decoding (op_attn_rope) against the two-dispatch path it
   replaces (rope_kv, then flash-decoding): the attention output and the cache row of the new token, both rope
   layouts, partial rotary, V in its own buffer, f32 and f16 caches, a window, positions at chunk edges. */
static void test_attention_decode_rope(void) {
  struct {
    uint32_t H, KVH, D, R, window;
    int mode, vsep;
  } cs_[] = {{8, 2, 64, 64, 0, 0, 0},
             {6, 2, 32, 16, 0, 1, 1},
             {8, 1, 128, 128, 100, 1, 0},
             {32, 8, 32, 32, 0, 0, 1},
             {4, 4, 16, 8, 0, 0, 0}};
  uint32_t lens[] = {1, 32, 33, 129, 300}, ctx = 400, max_pos = 512;
  for (int f16 = 0; f16 < 2; f16++)
    for (size_t c = 0; c < sizeof cs_ / sizeof cs_[0]; c++)
      for (size_t li = 0; li < 5; li++) {
        uint32_t H = cs_[c].H, KVH = cs_[c].KVH, D = cs_[c].D, R = cs_[c].R, S = (H + 2 * KVH) * D, L = lens[li];
        op_kv_layout kv = {KVH, D, ctx, f16};
        float *inv = malloc(R / 2 * 4);
        for (uint32_t i = 0; i < R / 2; i++)
          inv[i] = (float)pow(10000.0, -2.0 * i / R);
        float *tab = malloc((size_t)max_pos * R / 2 * 8);
        op_rope_table(tab, inv, R, max_pos, 1.0f);
        size_t n = (size_t)KVH * ctx * D, eb = f16 ? 2 : 4;
        float *x = rnd(S, -1, 1), *vs = rnd(S, -1, 1), *cache = rnd(n, -1, 1);
        void *cbytes = malloc(n * eb);
        for (size_t i = 0; i < n; i++) {
          if (f16)
            ((uint16_t *)cbytes)[i] = ref_f32_to_f16(cache[i]);
          else
            ((float *)cbytes)[i] = cache[i];
        }
        uint32_t pos = L - 1;
        gpu_buffer *gc = th_upload(tab, (size_t)max_pos * R / 2 * 8), *gp = th_upload(&pos, 4),
                   *gvs = th_upload(vs, S * 4), *gpart = th_poisoned(op_attn_partial_bytes(&kv, H, 16));
        gpu_buffer *gx[2], *gk[2], *gv[2], *go[2];
        for (int way = 0; way < 2; way++) { /* 0: rope_kv then decode, 1: folded */
          gx[way] = th_upload(x, S * 4);
          gk[way] = th_upload(cbytes, n * eb);
          gv[way] = th_upload(cbytes, n * eb);
          go[way] = th_poisoned(H * D * 4);
          gpu_recorder *r = rec_new();
          op_attn_params ap = {1, H, S, 0, H * D, cs_[c].window, 1.0f / sqrtf((float)D), 0.0f};
          op_attn_rope ar = {gpu_whole(gc),
                             cs_[c].vsep ? gpu_whole(gvs) : (gpu_view){0},
                             R,
                             max_pos,
                             H * D,
                             (H + KVH) * D,
                             (op_rope_mode)cs_[c].mode};
          if (way == 0) {
            op_rope_kv_params rp = {1, H, R, max_pos, (op_rope_mode)cs_[c].mode, 0, S, H * D, S, (H + KVH) * D, S};
            CHECK(op_rope_kv(r, &kv, &rp, gpu_whole(gx[way]), cs_[c].vsep ? gpu_whole(gvs) : (gpu_view){0},
                             gpu_whole(gp), gpu_whole(gc), gpu_whole(gk[way]), gpu_whole(gv[way])) == WGLLM_OK,
                  "record rope_kv: %s", gpu_recorder_error(r));
          } else
            ap.rope = &ar;
          CHECK(op_attention_decode(r, &kv, &ap, gpu_whole(gx[way]), gpu_whole(gk[way]), gpu_whole(gv[way]),
                                    gpu_whole(gp), gpu_whole(gpart), NULL, gpu_whole(go[way])) == WGLLM_OK,
                "record decode: %s", gpu_recorder_error(r));
          th_run(r);
          gpu_recorder_free(r);
        }
        float *o0 = malloc(H * D * 4), *o1 = malloc(H * D * 4), *k0 = malloc(n * 4), *k1 = malloc(n * 4),
              *v0 = malloc(n * 4), *v1 = malloc(n * 4);
        th_download(go[0], o0, H * D * 4);
        th_download(go[1], o1, H * D * 4);
        gpu_buffer *bufs[4] = {gk[0], gk[1], gv[0], gv[1]};
        float *dst[4] = {k0, k1, v0, v1};
        for (int b = 0; b < 4; b++) {
          th_download(bufs[b], cbytes, n * eb);
          for (size_t i = 0; i < n; i++)
            dst[b][i] = f16 ? ref_f16_to_f32(((uint16_t *)cbytes)[i]) : ((float *)cbytes)[i];
        }
        char what[160];
        snprintf(what, sizeof what, "decode with RoPE folded in, %s L=%u H=%u/%u D=%u rot=%u mode=%d win=%u vsep=%d",
                 f16 ? "f16kv" : "f32kv", L, H, KVH, D, R, cs_[c].mode, cs_[c].window, cs_[c].vsep);
        th_compare(what, o1, o0, H * D, 1e-6, 1e-5);
        snprintf(what, sizeof what, "K cache after folded RoPE, %s L=%u D=%u rot=%u mode=%d", f16 ? "f16kv" : "f32kv",
                 L, D, R, cs_[c].mode);
        th_compare(what, k1, k0, n, 1e-6, 1e-5);
        snprintf(what, sizeof what, "V cache after folded append, %s L=%u D=%u", f16 ? "f16kv" : "f32kv", L, D);
        th_compare(what, v1, v0, n, 0, 0);
        for (int way = 0; way < 2; way++) {
          gpu_buffer_destroy(th_gpu(), gx[way]);
          gpu_buffer_destroy(th_gpu(), gk[way]);
          gpu_buffer_destroy(th_gpu(), gv[way]);
          gpu_buffer_destroy(th_gpu(), go[way]);
        }
        gpu_buffer_destroy(th_gpu(), gc);
        gpu_buffer_destroy(th_gpu(), gp);
        gpu_buffer_destroy(th_gpu(), gvs);
        gpu_buffer_destroy(th_gpu(), gpart);
        free(inv);
        free(tab);
        free(x);
        free(vs);
        free(cache);
        free(cbytes);
        free(o0);
        free(o1);
        free(k0);
        free(k1);
        free(v0);
        free(v1);
      }
}

/* The GEMV predicate on both sides: the specialised kernel for exactly the shapes and devices it names, the
   general one (whole) for anything else. */
static void test_gemv_predicate(void) {
  gpu_context c = *th_gpu();
  c.has_subgroups = 1;
  c.subgroup_min = c.subgroup_max = 32;
  c.limits.maxComputeInvocationsPerWorkgroup = 1024;
  op_gemv_plan p = op_gemv_q4_plan(&c, 4096, 4096, 32, 0);
  CHECK(p.tuned && p.tk == 128 && p.tr == 2 && p.r == 4, "8B O projection: tuned 128/2/4 (%d %u/%u/%u)", p.tuned, p.tk,
        p.tr, p.r);
  p = op_gemv_q4_plan(&c, 14336, 4096, 32, 1);
  CHECK(p.tuned && p.tk == 32 && p.tr == 8 && p.r == 2, "8B gate/up: tuned 32/8/2");
  p = op_gemv_q4_plan(&c, 128256, 2048, 64, 0);
  CHECK(p.tuned && p.tk == 32 && p.tr == 4 && p.r == 8, "LM head: tuned 32/4/8");
  CHECK(!op_gemv_q4_plan(&c, 4096, 4096 + 32, 32, 0).tuned, "K not a multiple of 1024: general");
  CHECK(!op_gemv_q4_plan(&c, 32, 4096, 32, 0).tuned, "32 rows: general");
  CHECK(!op_gemv_q4_plan(&c, 4096, 4096, 16, 0).tuned, "group 16: general");
  c.limits.maxComputeInvocationsPerWorkgroup = 128;
  CHECK(!op_gemv_q4_plan(&c, 4096, 4096, 32, 0).tuned, "128-thread workgroups: general");
  c.limits.maxComputeInvocationsPerWorkgroup = 1024;
  c.subgroup_min = 16;
  CHECK(!op_gemv_q4_plan(&c, 4096, 4096, 32, 0).tuned, "varying subgroup size: general");
  c.subgroup_min = 32;
  c.has_subgroups = 0;
  p = op_gemv_q4_plan(&c, 4096, 4096, 32, 0);
  CHECK(!p.tuned && p.tk * p.tr <= 128, "no subgroups: general (%u x %u threads)", p.tk, p.tr);
}

/* Flash-decoding (split + reduce, indirect and worst-case grids) against the straightforward kernel and the
   CPU reference, at lengths around the 128-key chunk and with windows and soft-capping. */
static void test_attention_decode(void) {
  uint32_t lens[] = {1, 2, 127, 128, 129, 300, 1000};
  struct {
    uint32_t H, KVH, D, window;
    float cap;
    uint32_t ctx;
  } shapes[] = {{8, 2, 64, 0, 0, 1030},     {4, 4, 32, 0, 0, 1030},   {8, 1, 128, 100, 0, 1030},
                {6, 2, 16, 0, 30.0f, 1030}, {16, 1, 256, 0, 0, 1030}, {32, 8, 32, 0, 0, 2100}};
  for (int f16 = 0; f16 < 2; f16++)
    for (size_t si = 0; si < sizeof shapes / sizeof shapes[0]; si++)
      for (size_t li = 0; li < 7; li++) {
        uint32_t H = shapes[si].H, KVH = shapes[si].KVH, D = shapes[si].D, L = lens[li], ctx = shapes[si].ctx;
        op_kv_layout kv = {KVH, D, ctx, f16};
        size_t n = (size_t)KVH * ctx * D;
        float *kc = rnd(n, -1, 1), *vc = rnd(n, -1, 1), *q = rnd(H * D, -1, 1);
        gpu_buffer *gk, *gv;
        if (f16) {
          uint16_t *hk = malloc(n * 2), *hv = malloc(n * 2);
          for (size_t i = 0; i < n; i++) {
            hk[i] = ref_f32_to_f16(kc[i]);
            kc[i] = ref_f16_to_f32(hk[i]);
            hv[i] = ref_f32_to_f16(vc[i]);
            vc[i] = ref_f16_to_f32(hv[i]);
          }
          gk = th_upload(hk, n * 2);
          gv = th_upload(hv, n * 2);
          free(hk);
          free(hv);
        } else {
          gk = th_upload(kc, n * 4);
          gv = th_upload(vc, n * 4);
        }
        uint32_t pos = L - 1;
        gpu_buffer *gq = th_upload(q, H * D * 4), *gp = th_upload(&pos, 4),
                   *gpart = th_poisoned(op_attn_partial_bytes(&kv, H, 16));
        gpu_buffer *gind = th_poisoned(16);
        float *want = malloc(H * D * 4), *got = malloc(H * D * 4), *plain = malloc(H * D * 4);
        ref_attention(q, H * D, 0, kc, vc, &pos, want, H * D, 1, H, KVH, D, ctx, shapes[si].window,
                      1.0f / sqrtf((float)D), shapes[si].cap);
        op_attn_params ap = {1, H, H * D, 0, H * D, shapes[si].window, 1.0f / sqrtf((float)D), shapes[si].cap};
        gpu_buffer *go2 = th_poisoned(H * D * 4);
        gpu_recorder *r = rec_new();
        op_attention(r, &kv, &ap, gpu_whole(gq), gpu_whole(gk), gpu_whole(gv), gpu_whole(gp), gpu_whole(go2));
        th_run(r);
        gpu_recorder_free(r);
        th_download(go2, plain, H * D * 4);
        /* modes: worst-case grid and indirect grid over the whole cache, then both for the smallest length
           bucket (a power of two) that holds position L - 1 (other chunk lengths and grids), then forced
           chunks of 16 and 128 keys */
        uint32_t bucket = 1;
        while (bucket < L)
          bucket *= 2;
        for (int mode = 0; mode < 8; mode++) {
          gpu_buffer *go = th_poisoned(H * D * 4);
          gpu_view ind = gpu_whole(gind);
          ap.max_len = (mode == 2 || mode == 3) && bucket < ctx ? bucket : 0;
          ap.chunk = mode == 4 ? 16 : mode == 5 ? 128 : mode == 7 ? 32 : 0;
          ap.no_subgroups = mode >= 6; /* both sides of the subgroup variant's predicate */
          r = rec_new();
          CHECK(op_attention_decode(r, &kv, &ap, gpu_whole(gq), gpu_whole(gk), gpu_whole(gv), gpu_whole(gp),
                                    gpu_whole(gpart), mode % 2 ? &ind : NULL, gpu_whole(go)) == WGLLM_OK,
                "record: %s", gpu_recorder_error(r));
          th_run(r);
          gpu_recorder_free(r);
          th_download(go, got, H * D * 4);
          char what[128];
          snprintf(what, sizeof what,
                   "flash-decode %s %s L=%u max_len=%u chunk=%u%s H=%u/%u D=%u win=%u cap=%g vs reference",
                   mode % 2 ? "indirect" : "worst-grid", f16 ? "f16kv" : "f32kv", L, ap.max_len, ap.chunk,
                   ap.no_subgroups ? " no-subgroups" : "", H, KVH, D, shapes[si].window, shapes[si].cap);
          th_compare(what, got, want, H * D, 2e-6, 2e-5);
          snprintf(what, sizeof what, "flash-decode %s L=%u max_len=%u vs straightforward kernel",
                   mode % 2 ? "indirect" : "worst-grid", L, ap.max_len);
          th_compare(what, got, plain, H * D, 1e-6, 1e-5);
          gpu_buffer_destroy(th_gpu(), go);
        }
        gpu_buffer_destroy(th_gpu(), gk);
        gpu_buffer_destroy(th_gpu(), gv);
        gpu_buffer_destroy(th_gpu(), gq);
        gpu_buffer_destroy(th_gpu(), gp);
        gpu_buffer_destroy(th_gpu(), gpart);
        gpu_buffer_destroy(th_gpu(), gind);
        gpu_buffer_destroy(th_gpu(), go2);
        free(kc);
        free(vc);
        free(q);
        free(want);
        free(got);
        free(plain);
      }
}

int main(void) {
  th_gpu();
  test_fill();
  test_binary();
  test_rms_norm();
  test_rope();
  test_softmax();
  test_argmax();
  test_linear();
  test_embedding();
  test_glu();
  test_attention();
  test_attention_decode();
  test_gemv_fused();
  test_gemv_predicate();
  test_attention_decode_rope();
  test_rope_kv();
  th_gpu_done();
  return th_finish("test_ops");
}
