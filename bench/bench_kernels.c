/* Kernel benchmark (developer tool, not part of the public API): GPU time and achieved bandwidth of the fused
   decode GEMV (kernels/gemv.wgsl) in each storage --types names (q4 = q4gsw g32, q8, q4k, q5k, q6k, mxfp4; random
   bytes, MXFP4's exponents in 118..133 as real weights': random ones (up to 2^127) varied up to 5x between repeats of
   one plan on an H100, docs/perf/31-moe call 12) on the projections of real model shapes, for the plan the predicate
   picks and for a sweep of other thread layouts. Each timing is one pass of `reps` dependent dispatches (as a decode
   step runs them), cycling through enough copies of the weights that they do not sit in the L2 cache.
   --probe times the default plan of q4gsw with one stage left out (no nibble decode, no x loads, no scale loads),
   to see which stage limits it (src/dev/gemv_probe.c: the kernel's developer variants, in wgllm_dev).
   --gemm times the prefill GEMM instead (op_matmul_rows: 64- and 128-row tiles, M = 128..2048 tokens).
   --attn times flash-decoding (split + reduce, f16 KV, context 8192) at several positions, for the chunk the op
   picks and forced ones, with and without the subgroup reductions.
   --attn-prefill times prefill attention (op_attention, f16 KV) for prompts of 512, 2048 and 8192 tokens, as the
   prefill runs it (chunks of 512 tokens over the keys before them: the default chunk of models with sliding-window
   layers; the others' is 1024, llm_prefill_chunk), for each kernel of the op's order: the GPU time
   of one layer's attention over the whole prompt ("from K": the order started at K through op_attention_forced's
   op_attn_kernel_opts, so the first kernel from there that takes the shape ran).
   --attn-paged times decode attention of 1 to 64 sequences (f16 KV): a split + reduce pair a sequence over its own
   cache, as the batched decode runs it, against one pair for all over a paged pool (issue 28).
   --tokens 1,2,4,8 times the GEMV against that many tokens' x at once (the "_mt" variants of batched decode).
   --int8 adds the fast precision's decode GEMV beside each (op_gemv_fast: the GEMV of kernels/gemv_q8.wgsl
   quantizing x with its norm in its workgroups; the quantizer dispatch with the norm, then the GEMV; the GEMV alone
   on activations quantized once), for its default
   plan, and with --sweep or --int8-sweep (the int8 layouts only) for other layouts, at every token count --tokens
   names; past 8 tokens (up to 64; from 4 with --int8-sweep) the small-M GEMM of batched fast decode in the op's
   tile and K slices against the GEMV 8 tokens a dispatch, and with --int8-sweep each tile (16, 32, 64 rows) with
   1-16 slices.
   usage: bench_kernels [--shapes 1b,8b,tiny,goss,q3moe] [--types q4,q4k,...] [--sweep] [--probe] [--tokens T,..]
                        [--int8|--int8-sweep] [--attn] [--attn-prefill] [--attn-paged] [--reps N]
                        [--toggles a,b] */
#include "gemv_probe.h"
#include "gpu.h"
#include "ops.h"
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct shape {
  const char *model, *name;
  uint32_t n_out, K;
  int glu, norm, acc;
} shape;

static const shape SHAPES[] = {
    {"1b", "qkv", 3072, 2048, 0, 1, 0},
    {"1b", "o", 2048, 2048, 0, 0, 1},
    {"1b", "gate_up", 8192, 2048, 1, 1, 0},
    {"1b", "down", 2048, 8192, 0, 0, 1},
    {"1b", "lm_head", 128256, 2048, 0, 1, 0},
    {"8b", "qkv", 6144, 4096, 0, 1, 0},
    {"8b", "o", 4096, 4096, 0, 0, 1},
    {"8b", "gate_up", 14336, 4096, 1, 1, 0},
    {"8b", "down", 4096, 14336, 0, 0, 1},
    {"8b", "lm_head", 128256, 4096, 0, 1, 0},
    {"tiny", "qkv", 384, 1024, 0, 1, 0},
    {"tiny", "gate_up", 512, 1024, 1, 1, 0},
    /* the attention projections and LM heads of the MoE shapes (issue 31): K of 2880 and 2048 steps */
    {"goss", "qkv", 5120, 2880, 0, 1, 0},
    {"goss", "o", 2880, 4096, 0, 0, 1},
    {"goss", "lm_head", 201088, 2880, 0, 1, 0},
    {"goss", "exp_gu", 2880, 2880, 1, 1, 0}, /* one expert's gate/up and down (--types mxfp4: as a dense GEMV) */
    {"goss", "exp_down", 2880, 2880, 0, 0, 0},
    {"q3moe", "qkv", 5120, 2048, 0, 1, 0},
    {"q3moe", "o", 2048, 4096, 0, 0, 1},
    {"q3moe", "lm_head", 151936, 2048, 0, 1, 0},
};

/* tuned, tk, tr, r, u */
static const op_gemv_plan SWEEP[] = {
    {0, 128, 1, 8, 4},
    {0, 64, 2, 8, 4},
    {0, 32, 4, 4, 4},
    {1, 32, 1, 4, 4},
    {1, 32, 2, 4, 4},
    {1, 32, 4, 4, 4},
    {1, 32, 8, 4, 4},
    {1, 32, 4, 2, 4},
    {1, 32, 8, 2, 4},
    {1, 32, 4, 8, 4},
    {1, 32, 2, 8, 4},
    {1, 32, 8, 1, 4},
    {1, 32, 16, 1, 4},
    {1, 32, 4, 4, 2},
    {1, 32, 4, 4, 1},
    {1, 32, 4, 8, 2},
    {1, 32, 8, 4, 2},
    {1, 32, 8, 2, 2},
    {1, 64, 2, 4, 4},
    {1, 64, 4, 4, 4},
    {1, 64, 2, 8, 4},
    {1, 128, 1, 4, 4},
    {1, 128, 2, 4, 4},
    {1, 128, 1, 8, 4},
    {1, 32, 4, 16, 1},
    {1, 32, 2, 16, 1},
    {1, 32, 16, 2, 4},
    {1, 32, 16, 4, 2},
    /* for the block types (at most 2 steps of 32 unrolled) */
    {1, 32, 8, 2, 2},
    {1, 32, 8, 2, 1},
    {1, 32, 8, 4, 1},
    {1, 32, 4, 4, 1},
    {1, 32, 4, 8, 1},
    {1, 64, 4, 4, 1},
    {1, 64, 2, 4, 2},
    {1, 128, 2, 4, 1},
    {1, 128, 2, 4, 2},
    {1, 128, 1, 8, 1},
    {1, 32, 16, 2, 2},
    {1, 32, 8, 1, 2},
};

static uint64_t rng = 88172645463325252ull;
static uint32_t next_u32(void) {
  rng ^= rng << 13;
  rng ^= rng >> 7;
  rng ^= rng << 17;
  return (uint32_t)(rng >> 16);
}

static gpu_buffer *upload_random(gpu_context *g, uint64_t bytes, int kind) {
  uint32_t *h = malloc(bytes + 4);
  if (!h) {
    fprintf(stderr, "bench_kernels: out of host memory for %llu bytes\n", (unsigned long long)bytes);
    exit(1);
  }
  for (uint64_t i = 0; i < bytes / 4; i++) {
    if (kind == 0)
      h[i] = next_u32();  /* nibbles */
    else if (kind == 1) { /* two f16 scales in [-0.03, 0.03) (0x2000..0x27ff magnitudes), random signs */
      uint32_t a = 0x2000 | (next_u32() & 0x7ff) | ((next_u32() & 1) << 15);
      uint32_t b = 0x2000 | (next_u32() & 0x7ff) | ((next_u32() & 1) << 15);
      h[i] = a | b << 16;
    } else if (kind == 3) { /* four MXFP4 exponents (e8m0 bytes) in 118..133: scales 2^-10..2^5, as real weights' */
      h[i] = 0;
      for (int j = 0; j < 4; j++)
        h[i] |= (118u + (next_u32() & 15u)) << (8 * j);
    } else {
      float f = (float)(next_u32() % 2001) / 1000.0f - 1.0f;
      memcpy(&h[i], &f, 4);
    }
  }
  gpu_buffer *b = NULL;
  if (gpu_buffer_create(g, bytes, "bench", &b, NULL) == WGLLM_OK) gpu_write(g, b, 0, h, bytes);
  free(h);
  return b;
}

static int cmp_d(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return x < y ? -1 : x > y;
}

static uint32_t g_tokens = 1; /* tokens a GEMV takes (--tokens), x [T][K] and y [T][n_out] */

/* Median GPU ns per dispatch of `plan` on shape s (NULL plan: the predicate's) for g_tokens tokens; stage > 0:
   through dev_gemv_probe with that stage left out (one token, q4gsw). Returns < 0 when refused. */
static double time_gemv_stage(gpu_context *g, const shape *s, op_weight *ws, int copies, gpu_view x, gpu_view nw,
                              gpu_view y, const op_gemv_plan *plan, dev_gemv_stage stage, int reps) {
  double t[5];
  for (int run = 0; run < 5; run++) {
    gpu_recorder *r = gpu_recorder_create(g, 1);
    op_gemv_opts o = {0};
    if (s->norm) {
      o.norm_w = nw;
      o.eps = 1e-5f;
    }
    o.accumulate = s->acc;
    o.glu_half = s->glu ? s->n_out : 0;
    o.n_tokens = g_tokens;
    wgllm_status st = WGLLM_OK;
    uint32_t N = s->glu ? 2 * s->n_out : s->n_out;
    for (int i = 0; !st && i < reps; i++)
      st = stage ? dev_gemv_probe(r, x, &ws[i % copies], y, N, s->K, &o, plan, stage)
                 : op_gemv_planned(r, x, &ws[i % copies], (gpu_view){0}, y, N, s->K, &o, plan);
    double ns = 0;
    if (!st) st = gpu_recorder_time(r, &ns);
    if (st) {
      if (run == 0 && plan) fprintf(stderr, "  refused: %s\n", gpu_recorder_error(r));
      gpu_recorder_free(r);
      return -1;
    }
    gpu_recorder_free(r);
    t[run] = ns / reps;
  }
  qsort(t, 5, sizeof t[0], cmp_d);
  return t[2];
}

static double time_gemv(gpu_context *g, const shape *s, op_weight *ws, int copies, gpu_view x, gpu_view nw, gpu_view y,
                        const op_gemv_plan *plan, int reps) {
  return time_gemv_stage(g, s, ws, copies, x, nw, y, plan, 0, reps);
}

/* tuned, tk, tr, r: the int8 GEMV's layouts for --int8 --sweep */
static const op_gemv_plan Q8SWEEP[] = {
    {1, 32, 4, 4, 1}, {1, 32, 8, 2, 1},  {1, 32, 2, 8, 1},  {1, 32, 4, 8, 1},  {1, 32, 8, 4, 1}, {1, 64, 2, 4, 1},
    {1, 64, 4, 4, 1}, {1, 128, 1, 4, 1}, {1, 128, 2, 4, 1}, {1, 32, 16, 2, 1}, {1, 32, 4, 2, 1}, {1, 32, 2, 4, 1},
};

/* Median GPU ns a dispatch pair of the fast precision's GEMV (the quantizer, then the integer-dot GEMV; alone: the
   GEMV only, on activations quantized once before) for g_tokens tokens; past 8 tokens with part set, the small-M
   GEMM (quantizer, split-K GEMM, slice sum) in plan's mm_rm / mm_split (0: the op's). < 0 when refused. */
static double time_gemv_q8(gpu_context *g, const shape *s, op_weight *ws, int copies, gpu_view x, gpu_view nw,
                           gpu_view y, gpu_view xq, gpu_view part, const op_gemv_plan *plan, int alone, int reps) {
  op_gemv_plan none = {0};
  if (!plan) plan = &none;
  double t[5];
  for (int run = 0; run < 5; run++) {
    gpu_recorder *r = gpu_recorder_create(g, 1);
    op_gemv_opts o = {0};
    if (s->norm && !alone) {
      o.norm_w = nw;
      o.eps = 1e-5f;
    }
    o.accumulate = s->acc;
    o.glu_half = s->glu ? s->n_out : 0;
    o.n_tokens = g_tokens;
    o.part = part;
    wgllm_status st = WGLLM_OK;
    uint32_t N = s->glu ? 2 * s->n_out : s->n_out;
    for (int i = 0; !st && i < reps; i++)
      st = alone ? op_gemv_q8_planned(r, xq, &ws[i % copies], (gpu_view){0}, y, N, s->K, &o, plan)
                 : op_gemv_fast_planned(r, x, xq, &ws[i % copies], (gpu_view){0}, y, N, s->K, &o, plan);
    double ns = 0;
    if (!st) st = gpu_recorder_time(r, &ns);
    if (st) {
      if (run == 0) fprintf(stderr, "  refused: %s\n", gpu_recorder_error(r));
      gpu_recorder_free(r);
      return -1;
    }
    gpu_recorder_free(r);
    t[run] = ns / reps;
  }
  qsort(t, 5, sizeof t[0], cmp_d);
  return t[2];
}

/* The prefill GEMM (op_matmul_rows) on the projections of a model shape: M tokens against each weight (gate and
   up as one 2 x n_out product), for 64- and 128-row tiles, in the storages `types` names: GPU time a dispatch and
   TFLOP/s (2 M N K flops). */
static void bench_gemm(gpu_context *g, const char *model, const char *types, int reps) {
  static const uint32_t Ms[] = {128, 256, 512, 2048};
  static const struct {
    const char *name;
    op_wtype t;
  } GT[] = {{"q4", OP_W_Q4}, {"q8", OP_W_Q8}, {"q4k", OP_W_Q4_K}, {"q6k", OP_W_Q6_K}, {"f16", OP_W_F16}};
  char tl[64];
  snprintf(tl, sizeof tl, ",%s,", types);
  for (size_t ti = 0; ti < sizeof GT / sizeof GT[0]; ti++) {
    char tn[16];
    snprintf(tn, sizeof tn, ",%s,", GT[ti].name);
    if (!strstr(tl, tn)) continue;
    for (size_t si = 0; si < sizeof SHAPES / sizeof SHAPES[0]; si++) {
      const shape *s = &SHAPES[si];
      if (strcmp(s->model, model) || !strcmp(s->name, "lm_head")) continue;
      uint32_t N = s->glu ? 2 * s->n_out : s->n_out, K = s->K;
      uint64_t el = (uint64_t)N * K;
      op_weight w = {0};
      w.type = GT[ti].t;
      w.group = 32;
      uint64_t wb = w.type == OP_W_Q4    ? el / 2
                    : w.type == OP_W_Q8  ? el
                    : w.type == OP_W_F16 ? el * 2
                                         : op_blocks_gpu_bytes(w.type, el);
      gpu_buffer *bw = upload_random(g, wb, w.type == OP_W_F16 ? 1 : 0), *bs = NULL;
      if (w.type == OP_W_Q4 || w.type == OP_W_Q8) bs = upload_random(g, el / 32 * 2, 1);
      w.data = gpu_whole(bw);
      if (bs) w.scales = gpu_whole(bs);
      gpu_buffer *bx = upload_random(g, (uint64_t)2048 * K * 4, 2), *by = upload_random(g, (uint64_t)2048 * N * 4, 2);
      gpu_buffer *bq = upload_random(g, op_q8_act_bytes(g, 2048, K), 0);
      /* rm 4, 8: the exact GEMM's tiles; 12: the fast path (int8 activations, op_quantize_q8 + op_matmul_q8 in
         its default plan); 16..28: op_matmul_q8 alone in each plan (rows a thread 4 | 8, conversion | adds) */
      static const op_q8mm_plan QP[] = {{4, 0}, {4, 1}, {8, 0}, {8, 1}};
      for (size_t mi = 0; mi < sizeof Ms / sizeof Ms[0]; mi++)
        for (uint32_t rm = 4; rm <= 28; rm += 4) {
          if (rm > 8 && !op_matmul_q8_supports(g, &w, Ms[mi], K)) continue;
          const op_q8mm_plan *qp = rm >= 16 ? &QP[(rm - 16) / 4] : NULL;
          double t[5];
          int ok = 1;
          for (int run = 0; ok && run < 5; run++) {
            gpu_recorder *r = gpu_recorder_create(g, 1);
            for (int i = 0; ok && i < reps; i++) {
              if (rm == 12) ok = op_quantize_q8(r, gpu_whole(bx), gpu_whole(bq), Ms[mi], K) == WGLLM_OK;
              if (ok && rm > 8)
                ok =
                    op_matmul_q8_plan(r, gpu_whole(bq), &w, (gpu_view){0}, gpu_whole(by), Ms[mi], N, K, qp) == WGLLM_OK;
              else if (ok)
                ok = op_matmul_rows(r, gpu_whole(bx), &w, (gpu_view){0}, gpu_whole(by), Ms[mi], N, K, rm) == WGLLM_OK;
            }
            if (ok) ok = gpu_recorder_time(r, &t[run]) == WGLLM_OK;
            if (!ok) fprintf(stderr, "  gemm refused: %s\n", gpu_recorder_error(r));
            gpu_recorder_free(r);
          }
          if (!ok) continue;
          qsort(t, 5, sizeof t[0], cmp_d);
          double ns = t[2] / reps;
          char how[32];
          if (rm <= 12)
            snprintf(how, sizeof how, "%s", rm == 4 ? "f32 64-row" : rm == 8 ? "f32 128-row" : "int8 +quant");
          else
            snprintf(how, sizeof how, "int8 %u-row %s", 16 * qp->rm, qp->cvt_add ? "add" : "cvt");
          printf("gemm %-3s %-4s %-8s M=%-5u N=%-6u K=%-5u %-11s  %9.2f us  %6.2f TFLOP/s\n", model, GT[ti].name,
                 s->name, Ms[mi], N, K, how, ns / 1e3, 2.0 * Ms[mi] * N * K / ns / 1e3);
          fflush(stdout);
        }
      gpu_buffer_destroy(g, bw);
      if (bs) gpu_buffer_destroy(g, bs);
      gpu_buffer_destroy(g, bx);
      gpu_buffer_destroy(g, by);
      gpu_buffer_destroy(g, bq);
    }
  }
}

/* Flash-decoding of one token at position pos over a KV cache of ctx (f16), for a recording of length bucket
   max_len, as a chain of reps dependent (split + reduce) pairs. */
static void bench_attn(gpu_context *g, const char *model, uint32_t H, uint32_t KVH, uint32_t D, int reps) {
  const uint32_t ctx = 8192;
  op_kv_layout kv = {.n_kv_head = KVH, .head_dim = D, .ctx = ctx, .f16 = 1};
  uint64_t cache = (uint64_t)KVH * ctx * D * 2;
  gpu_buffer *kc = upload_random(g, cache, 1), *vc = upload_random(g, cache, 1),
             *q = upload_random(g, (uint64_t)H * D * 4, 2), *out = upload_random(g, (uint64_t)H * D * 4, 2),
             *part = upload_random(g, op_attn_partial_bytes(&kv, H, 16), 2), *posb = upload_random(g, 16, 2);
  uint32_t positions[] = {150, 1000, 4000, 8000}, chunks[] = {0, 16, 32, 64, 128};
  for (size_t pi = 0; pi < 4; pi++) {
    uint32_t pos = positions[pi], bucket = 256;
    while (bucket <= pos)
      bucket *= 2;
    gpu_write(g, posb, 0, &pos, 4);
    for (size_t ci = 0; ci < 5; ci++)
      for (int way = 0; way < 3; way++) { /* subgroups where they fit, workgroup memory, 128 threads a split */
        double t[5];
        int ok = 1;
        for (int run = 0; ok && run < 5; run++) {
          gpu_recorder *r = gpu_recorder_create(g, 1);
          op_attn_params ap = {.n_tokens = 1,
                               .n_head = H,
                               .q_stride = H * D,
                               .q_off = 0,
                               .out_stride = H * D,
                               .window = 0,
                               .scale = 1.0f / sqrtf((float)D),
                               .softcap = 0.0f,
                               .max_len = bucket < ctx ? bucket : 0};
          op_attn_kernel_opts force = {.chunk = chunks[ci], .no_subgroups = way == 1, .narrow_split = way == 2};
          for (int i = 0; ok && i < reps; i++)
            ok = op_attention_decode_forced(r, &kv, &ap, &force, gpu_whole(q), gpu_whole(kc), gpu_whole(vc),
                                            gpu_whole(posb), gpu_whole(part), NULL, gpu_whole(out)) == WGLLM_OK;
          if (ok) ok = gpu_recorder_time(r, &t[run]) == WGLLM_OK;
          if (!ok) fprintf(stderr, "  attention refused: %s\n", gpu_recorder_error(r));
          gpu_recorder_free(r);
        }
        if (!ok) continue;
        qsort(t, 5, sizeof t[0], cmp_d);
        printf("attn %-3s pos %-5u bucket %-5u chunk %-4s %-13s %7.2f us (split + reduce)\n", model, pos, bucket,
               chunks[ci] ? (chunks[ci] == 16   ? "16"
                             : chunks[ci] == 32 ? "32"
                             : chunks[ci] == 64 ? "64"
                                                : "128")
                          : "auto",
               way == 1   ? "workgroup"
               : way == 2 ? "narrow"
                          : "subgroups?",
               t[2] / reps / 1e3);
      }
  }
  gpu_buffer *all[] = {kc, vc, q, out, part, posb};
  for (size_t i = 0; i < 6; i++)
    gpu_buffer_destroy(g, all[i]);
}

/* Decode attention of N sequences, one new token each at position L - 1, f16 KV (issue 28): one layer's step as
   today's batched decode runs it (one split + reduce pair a sequence over its own cache of ctx slots) against one
   pair for all N over a paged pool (op_kv_pages, blocks of 16 slots, the sequences' blocks interleaved over the
   pool), for N = 1, 8, 32, 64 and L = 128, 512, 2048. Median GPU time of the layer's attention. */
static void bench_attn_paged(gpu_context *g, const char *model, uint32_t H, uint32_t KVH, uint32_t D) {
  const uint32_t ctx = 2048, block = 16, max_blocks = ctx / block;
  static const uint32_t NS[] = {1, 8, 32, 64}, LS[] = {128, 512, 2048};
  op_kv_layout kv = {.n_kv_head = KVH, .head_dim = D, .ctx = ctx, .f16 = 1};
  uint64_t per_seq = (uint64_t)KVH * ctx * D * 2, part1 = op_attn_partial_bytes(&kv, H, 16);
  gpu_buffer *kc = upload_random(g, per_seq * 64, 1), *vc = upload_random(g, per_seq * 64, 1),
             *q = upload_random(g, (uint64_t)H * D * 4 * 64, 2), *out = upload_random(g, (uint64_t)H * D * 4 * 64, 2),
             *part = upload_random(g, part1 * 64, 2), *posb = upload_random(g, 64 * 256, 2),
             *table = upload_random(g, (uint64_t)64 * max_blocks * 4, 2);
  uint32_t *tab = malloc((size_t)64 * max_blocks * 4);
  for (uint32_t s = 0; s < 64; s++) /* block b of sequence s: pool block b * 64 + s (interleaved) */
    for (uint32_t b = 0; b < max_blocks; b++)
      tab[s * max_blocks + b] = b * 64 + s;
  gpu_write(g, table, 0, tab, (uint64_t)64 * max_blocks * 4);
  free(tab);
  uint32_t align = g->limits.minStorageBufferOffsetAlignment;
  for (size_t li = 0; li < 3; li++) {
    uint32_t L = LS[li], pos[64 * 64];
    for (uint32_t i = 0; i < 64 * 64; i++)
      pos[i] = L - 1;
    gpu_write(g, posb, 0, pos, 64 * 256);
    for (size_t ni = 0; ni < 4; ni++) {
      uint32_t N = NS[ni];
      double t[2][5];
      int ok = 1;
      for (int way = 0; ok && way < 2; way++)
        for (int run = 0; ok && run < 5; run++) {
          gpu_recorder *r = gpu_recorder_create(g, 1);
          op_attn_params ap = {.n_tokens = way ? N : 1,
                               .n_head = H,
                               .q_stride = H * D,
                               .out_stride = H * D,
                               .scale = 1.0f / sqrtf((float)D),
                               .max_len = L < ctx ? L : 0};
          if (way) { /* one pair for all N over the pool */
            op_kv_pages pg = {
                .table = gpu_whole(table), .max_blocks = max_blocks, .block = block, .n_blocks = 64 * max_blocks};
            ap.pages = &pg;
            ok = op_attention_decode(r, &kv, &ap, gpu_whole(q), gpu_whole(kc), gpu_whole(vc), gpu_whole(posb),
                                     gpu_whole(part), NULL, gpu_whole(out)) == WGLLM_OK;
          } else /* a pair a sequence over its own cache (a slice of the same buffers) */
            for (uint32_t s = 0; ok && s < N; s++) {
              gpu_view ks = {kc, s * per_seq, per_seq}, vs = {vc, s * per_seq, per_seq},
                       qs = {q, (uint64_t)s * ((H * D * 4 + align - 1) / align * align), H * D * 4},
                       ps = {posb, (uint64_t)s * 256, 4}, pt = {part, s * ((part1 + align - 1) / align * align), part1},
                       os = {out, (uint64_t)s * ((H * D * 4 + align - 1) / align * align), H * D * 4};
              ok = op_attention_decode(r, &kv, &ap, qs, ks, vs, ps, pt, NULL, os) == WGLLM_OK;
            }
          if (ok) ok = gpu_recorder_time(r, &t[way][run]) == WGLLM_OK;
          if (!ok) fprintf(stderr, "  attention refused: %s\n", gpu_recorder_error(r));
          gpu_recorder_free(r);
        }
      if (!ok) continue;
      qsort(t[0], 5, sizeof t[0][0], cmp_d);
      qsort(t[1], 5, sizeof t[1][0], cmp_d);
      printf("attn_paged %-3s seqs %-3u len %-5u  per-sequence pairs %8.2f us  one paged pair %8.2f us  (%.2fx)\n",
             model, N, L, t[0][2] / 1e3, t[1][2] / 1e3, t[0][2] / t[1][2]);
      fflush(stdout);
    }
  }
  gpu_buffer *all[] = {kc, vc, q, out, part, posb, table};
  for (size_t i = 0; i < 7; i++)
    gpu_buffer_destroy(g, all[i]);
}

/* One layer's prefill attention over a prompt of P tokens in chunks of 512 (chunk c: tokens c * 512.. at those
   positions, over the keys 0..their position in a linear f16 cache of P positions), for each kernel of
   op_attention's order (forced through op_attention_forced's op_attn_kernel_opts): median GPU time of the whole
   prompt's dispatches. */
static void bench_attn_prefill(gpu_context *g, const char *model, uint32_t H, uint32_t KVH, uint32_t D) {
  static const uint32_t prompts[] = {512, 2048, 8192};
  static const char *const kernels[] = {"gqa", "tiled", "untiled", "workgroup"};
  /* each kernel of the order, forced: the ones before it skipped */
  static const op_attn_kernel_opts forces[] = {{0}, {.ungrouped = 1}, {.untiled = 1}, {.no_subgroups = 1}};
  const uint32_t C = 512, qs = (H + 2 * KVH) * D;
  printf("attn_prefill %s: %u heads over %u KV heads of %u dims; maxComputeWorkgroupStorageSize %u, subgroups %u..%u\n",
         model, H, KVH, D, g->limits.maxComputeWorkgroupStorageSize, g->subgroup_min, g->subgroup_max);
  for (size_t pi = 0; pi < 3; pi++) {
    uint32_t P = prompts[pi];
    op_kv_layout kv = {.n_kv_head = KVH, .head_dim = D, .ctx = P, .f16 = 1};
    uint64_t cache = (uint64_t)KVH * P * D * 2;
    gpu_buffer *kc = upload_random(g, cache, 1), *vc = upload_random(g, cache, 1),
               *q = upload_random(g, (uint64_t)C * qs * 4, 2), *out = upload_random(g, (uint64_t)C * H * D * 4, 2),
               *posb = NULL;
    uint32_t *pos = malloc((size_t)P * 4);
    for (uint32_t i = 0; i < P; i++)
      pos[i] = i;
    if (gpu_buffer_create(g, (uint64_t)P * 4, "bench pos", &posb, NULL) == WGLLM_OK)
      gpu_write(g, posb, 0, pos, (uint64_t)P * 4);
    free(pos);
    op_attn_gqa_plan plan;
    int gqa = op_attn_prefill_gqa_plan(g, &kv, H, &plan);
    for (int k = 0; k < 4; k++) {
      if (k == 0 && !gqa) {
        printf("attn_prefill %-3s prompt %-5u from %-9s refused by its predicate\n", model, P, kernels[k]);
        continue;
      }
      double t[5];
      int ok = 1, runs = P >= 8192 && k >= 2 ? 3 : 5;
      for (int run = 0; ok && run < runs; run++) {
        gpu_recorder *r = gpu_recorder_create(g, 1);
        for (uint32_t c0 = 0; ok && c0 < P; c0 += C) {
          op_attn_params ap = {.n_tokens = C,
                               .n_head = H,
                               .q_stride = qs,
                               .q_off = 0,
                               .out_stride = H * D,
                               .window = 0,
                               .scale = 1.0f / sqrtf((float)D),
                               .softcap = 0.0f};
          gpu_view pv = {posb, (uint64_t)c0 * 4, (uint64_t)C * 4};
          ok = op_attention_forced(r, &kv, &ap, &forces[k], gpu_whole(q), gpu_whole(kc), gpu_whole(vc), pv,
                                   gpu_whole(out)) == WGLLM_OK;
        }
        if (ok) ok = gpu_recorder_time(r, &t[run]) == WGLLM_OK;
        if (!ok) fprintf(stderr, "  attention refused: %s\n", gpu_recorder_error(r));
        gpu_recorder_free(r);
      }
      if (!ok) continue;
      qsort(t, (size_t)runs, sizeof t[0], cmp_d);
      double ns = t[runs / 2];
      /* causal work: 2 x (QK and PV) x head_dim FMAs for each of H x P(P+1)/2 (token, key) pairs */
      double flops = 4.0 * D * H * (double)P * (P + 1) / 2;
      char desc[96] = "";
      if (k == 0)
        snprintf(desc, sizeof desc, " (heads %u, tokens %u, %s, %u B)", plan.heads, plan.tokens,
                 plan.sep_v ? "K and V tiles" : "V over K", plan.smem);
      printf("attn_prefill %-3s prompt %-5u from %-9s %9.1f us a layer (%u chunks of %u), %6.2f TFLOP/s%s\n", model, P,
             kernels[k], ns / 1e3, P / C, C, flops / ns / 1e3, desc);
      fflush(stdout);
    }
    gpu_buffer *all[] = {kc, vc, q, out, posb};
    for (size_t i = 0; i < 5; i++)
      if (all[i]) gpu_buffer_destroy(g, all[i]);
  }
}

int main(int argc, char **argv) {
  const char *models = "1b,8b", *types = "q4", *tokens = NULL;
  int sweep = 0, reps = 64, probe = 0, attn = 0, gemm = 0, attn_prefill = 0, attn_paged = 0, int8 = 0;
  gpu_options go = {0};
  for (int i = 1; i < argc; i++) {
    if (!strcmp(argv[i], "--shapes") && i + 1 < argc)
      models = argv[++i];
    else if (!strcmp(argv[i], "--sweep"))
      sweep = 1;
    else if (!strcmp(argv[i], "--int8"))
      int8 = 1;
    else if (!strcmp(argv[i], "--int8-sweep"))
      int8 = 2;
    else if (!strcmp(argv[i], "--probe"))
      probe = 1;
    else if (!strcmp(argv[i], "--attn"))
      attn = 1;
    else if (!strcmp(argv[i], "--gemm"))
      gemm = 1;
    else if (!strcmp(argv[i], "--attn-prefill"))
      attn_prefill = 1;
    else if (!strcmp(argv[i], "--attn-paged"))
      attn_paged = 1;
    else if (!strcmp(argv[i], "--types") && i + 1 < argc)
      types = argv[++i];
    else if (!strcmp(argv[i], "--tokens") && i + 1 < argc)
      tokens = argv[++i];
    else if (!strcmp(argv[i], "--reps") && i + 1 < argc)
      reps = atoi(argv[++i]);
    else if (!strcmp(argv[i], "--toggles") && i + 1 < argc)
      go.enable_toggles = argv[++i];
    else {
      fprintf(
          stderr,
          "usage: bench_kernels [--shapes 1b,8b,tiny,goss,q3moe] [--types q4,q8,q4k,q5k,q6k,f16] [--sweep] [--probe] "
          "[--tokens 1,2,4,8] [--int8|--int8-sweep] [--attn] [--attn-prefill] [--attn-paged] [--gemm] "
          "[--reps N] [--toggles a,b]\n");
      return 2;
    }
  }
  if (reps < 1) {
    fprintf(stderr, "bench_kernels: --reps must be at least 1\n");
    return 2;
  }
  llm_err err = {0};
  gpu_context *g;
  if (gpu_create(&go, &g, &err)) {
    fprintf(stderr, "bench_kernels: %s\n", err.msg);
    return 1;
  }
  printf("adapter %s, subgroups %u..%u\n", g->adapter_name, g->subgroup_min, g->subgroup_max);
  /* the fixed cost of a dependent dispatch: a chain of tiny fills of one buffer (GPU) and its encode (CPU) */
  {
    gpu_buffer *b = upload_random(g, 256, 2);
    double t[5], enc[5];
    for (int run = 0; run < 5; run++) {
      gpu_recorder *r = gpu_recorder_create(g, 1);
      for (int i = 0; i < 256; i++)
        op_fill(r, gpu_whole(b), 64, (uint32_t)i);
      gpu_recorder_time(r, &t[run]);
      gpu_recorder_run(r);
      enc[run] = gpu_recorder_last_encode_us(r);
      gpu_wait_idle(g, &err);
      gpu_recorder_free(r);
    }
    qsort(t, 5, sizeof t[0], cmp_d);
    qsort(enc, 5, sizeof enc[0], cmp_d);
    printf("dependent tiny dispatch: %.2f us GPU each, %.2f us CPU encode each (chain of 256)\n", t[2] / 256e3,
           enc[2] / 256);
    gpu_buffer_destroy(g, b);
  }
  if (gemm) { /* the prefill GEMM alone, then done */
    if (strstr(models, "1b")) bench_gemm(g, "1b", types, reps);
    if (strstr(models, "8b")) bench_gemm(g, "8b", types, reps);
    gpu_destroy(g);
    return 0;
  }
  if (attn_paged) { /* decode attention of many sequences alone, then done */
    if (strstr(models, "1b")) bench_attn_paged(g, "1b", 32, 8, 64);
    if (strstr(models, "8b")) bench_attn_paged(g, "8b", 32, 8, 128);
    gpu_destroy(g);
    return 0;
  }
  if (attn_prefill) { /* prefill attention alone, then done */
    if (strstr(models, "1b")) bench_attn_prefill(g, "1b", 32, 8, 64);
    if (strstr(models, "8b")) bench_attn_prefill(g, "8b", 32, 8, 128);
    gpu_destroy(g);
    return 0;
  }
  if (attn) {
    if (strstr(models, "1b")) bench_attn(g, "1b", 32, 8, 64, reps);
    if (strstr(models, "8b")) bench_attn(g, "8b", 32, 8, 128, reps);
    if (strstr(models, "q3moe")) bench_attn(g, "q3moe", 32, 4, 128, reps); /* Qwen3-30B-A3B: 8 heads a KV head */
  }
  static const struct {
    const char *name;
    op_wtype t;
  } TYPES[] = {{"q4", OP_W_Q4},    {"q8", OP_W_Q8},    {"q4k", OP_W_Q4_K},
               {"q5k", OP_W_Q5_K}, {"q6k", OP_W_Q6_K}, {"mxfp4", OP_W_MXFP4}};
  int warm = 0;
  for (size_t ti = 0; ti < sizeof TYPES / sizeof TYPES[0]; ti++)
    for (size_t si = 0; si < sizeof SHAPES / sizeof SHAPES[0]; si++) {
      const shape *s = &SHAPES[si];
      char tl[64];
      snprintf(tl, sizeof tl, ",%s,", types);
      char tn[16];
      snprintf(tn, sizeof tn, ",%s,", TYPES[ti].name);
      if (!strstr(models, s->model) || !strstr(tl, tn)) continue;
      op_wtype wt = TYPES[ti].t;
      uint32_t N = s->glu ? 2 * s->n_out : s->n_out, G = 32;
      uint64_t elems = (uint64_t)N * s->K;
      uint64_t wbytes = wt == OP_W_Q4 ? elems / 2 : wt == OP_W_Q8 ? elems : op_blocks_gpu_bytes(wt, elems);
      uint64_t sbytes = wt == OP_W_Q4   ? elems / G * 2
                        : wt == OP_W_Q8 ? elems / 32 * 2
                                        : op_blocks_gpu_scale_bytes(wt, elems); /* MXFP4's exponents */
      uint64_t total = wbytes + sbytes;
      int copies = (int)((256ull << 20) / total) + 1; /* > 5x the 50 MB L2 of an H200 */
      if (!strcmp(s->model, "tiny")) copies = 1;
      if (copies > reps) copies = reps;
      op_weight *ws = calloc((size_t)copies, sizeof *ws);
      gpu_buffer **bufs = calloc((size_t)copies * 2, sizeof *bufs);
      for (int c = 0; c < copies; c++) {
        bufs[2 * c] = upload_random(g, wbytes, 0);
        if (sbytes) bufs[2 * c + 1] = upload_random(g, (sbytes + 3) & ~3ull, wt == OP_W_MXFP4 ? 3 : 1);
        ws[c].type = wt;
        ws[c].group = G;
        ws[c].data = gpu_whole(bufs[2 * c]);
        if (sbytes) ws[c].scales = gpu_whole(bufs[2 * c + 1]);
      }
      gpu_buffer *xb = upload_random(g, (uint64_t)s->K * 4 * OP_GEMV_MAX_BATCH, 2),
                 *nb = upload_random(g, (uint64_t)s->K * 4, 2),
                 *yb = upload_random(g, (uint64_t)s->n_out * 4 * OP_GEMV_MAX_BATCH, 2);
      /* bytes a dispatch must move: weights, scales, x (+ norm weights), y (read too when accumulating) */
      double bytes = (double)total + s->K * 4.0 * (s->norm ? 2 : 1) + s->n_out * 4.0 * (s->acc ? 2 : 1);
      op_gemv_plan def = op_gemv_choose_plan(g, wt, s->n_out, s->K, G, s->glu);
      /* the GPU's clocks ramp up under sustained load: keep it busy for a while before the first timing, and
         touch every new shape's weights before it is timed (the first passes over fresh buffers are slower) */
      for (int wu = 0; wu < (warm ? 10 : 40); wu++)
        time_gemv(g, s, ws, copies, gpu_whole(xb), gpu_whole(nb), gpu_whole(yb), &def, reps);
      warm = 1;
      double ns = time_gemv(g, s, ws, copies, gpu_whole(xb), gpu_whole(nb), gpu_whole(yb), &def, reps);
      printf("%-4s %-3s %-8s N=%-6u K=%-5u  default %-7s tk=%-3u tr=%-2u r=%-2u u=%u  %8.2f us  %7.1f GB/s  (%d weight "
             "copies)\n",
             s->model, TYPES[ti].name, s->name, s->n_out, s->K, def.tuned ? "tuned" : "general", def.tk, def.tr, def.r,
             def.u, ns / 1e3, bytes / ns, copies);
      for (int stage = 1; probe && wt == OP_W_Q4 && stage <= DEV_GEMV_STAGES; stage++) {
        double t = time_gemv_stage(g, s, ws, copies, gpu_whole(xb), gpu_whole(nb), gpu_whole(yb), &def,
                                   (dev_gemv_stage)stage, reps);
        printf("     %-8s probe: %-17s %8.2f us  %7.1f GB/s\n", s->name, dev_gemv_stage_name((dev_gemv_stage)stage),
               t / 1e3, bytes / t);
      }
      double best = ns;
      op_gemv_plan bestp = def;
      for (size_t pi = 0; sweep && pi < sizeof SWEEP / sizeof SWEEP[0]; pi++) {
        op_gemv_plan sp = SWEEP[pi];
        double t = time_gemv(g, s, ws, copies, gpu_whole(xb), gpu_whole(nb), gpu_whole(yb), &sp, reps);
        if (t < 0) continue;
        printf("     %-8s %-7s tk=%-3u tr=%-2u r=%-2u u=%u  %8.2f us  %7.1f GB/s\n", s->name,
               SWEEP[pi].tuned ? "tuned" : "general", SWEEP[pi].tk, SWEEP[pi].tr, SWEEP[pi].r, SWEEP[pi].u, t / 1e3,
               bytes / t);
        if (t < best) {
          best = t;
          bestp = sp;
        }
      }
      /* --tokens: the same weights against several tokens' x at once (the "_mt" variants of batched decode), for
         the op's plan and for fewer unrolled steps or row sums a lane */
      for (const char *tp = tokens; tp && *tp;) {
        uint32_t nt = (uint32_t)strtoul(tp, NULL, 10);
        tp = strchr(tp, ',');
        tp = tp ? tp + 1 : NULL;
        if (nt < 1 || nt > OP_GEMV_MAX_TOKENS) continue;
        g_tokens = nt;
        for (int v = 0; v < (nt > 1 ? 4 : 1); v++) {
          op_gemv_plan tp2 = def;
          if (v == 1) tp2.u = 1;
          if (v == 2) tp2.u = 2;
          if (v == 3) tp2.r = def.r > 1 ? def.r / 2 : 1, tp2.u = 1;
          if (v > 0 && tp2.u == def.u && tp2.r == def.r) continue;
          double t = time_gemv(g, s, ws, copies, gpu_whole(xb), gpu_whole(nb), gpu_whole(yb), &tp2, reps);
          if (t < 0) continue;
          printf("     %-8s tokens %u %s r=%-2u u=%u (before the op's token limits)  %8.2f us  %6.2f us a token  "
                 "%7.1f GB/s of weights\n",
                 s->name, nt, v ? "variant" : "op plan", tp2.r, tp2.u, t / 1e3, t / 1e3 / nt, total / t);
        }
        g_tokens = 1;
      }
      /* --int8: the fast precision's GEMV on the same weights, for each token count (1 when --tokens is not given) */
      for (const char *tp = int8 ? (tokens ? tokens : "1") : NULL; tp && *tp;) {
        uint32_t nt = (uint32_t)strtoul(tp, NULL, 10);
        tp = strchr(tp, ',');
        tp = tp ? tp + 1 : NULL;
        if (nt < 1 || nt > OP_GEMV_MAX_BATCH) continue;
        g_tokens = nt;
        gpu_buffer *qb = NULL;
        if (gpu_buffer_create(g, op_q8_act_bytes(g, nt, s->K), "bench_xq", &qb, &err)) {
          fprintf(stderr, "bench_kernels: %s\n", err.msg);
          break;
        }
        /* the small-M GEMM against the GEMV 8 tokens a dispatch (from 4 tokens with --int8-sweep) */
        if (nt > OP_GEMV_MAX_TOKENS || ((sweep || int8 == 2) && nt >= OP_Q8_SMALL_MIN)) {
          uint32_t N = s->glu ? 2 * s->n_out : s->n_out;
          uint64_t pb = 16ull * nt * N * 4;
          if (pb > g->limits.maxStorageBufferBindingSize) pb = g->limits.maxStorageBufferBindingSize;
          gpu_buffer *part = NULL;
          if (gpu_buffer_create(g, pb, "bench_part", &part, &err)) {
            fprintf(stderr, "bench_kernels: %s\n", err.msg);
            gpu_buffer_destroy(g, qb);
            break;
          }
          double ops = 2.0 * nt * N * s->K;
          op_q8_small_plan dp = op_q8_small_choose(nt, N, s->K, op_q8_small_part_bytes(OP_GEMV_MAX_BATCH, N));
          op_gemv_plan mine = {0};
          mine.mm_rm = dp.rm;
          mine.mm_split = dp.split;
          double tg = time_gemv_q8(g, s, ws, copies, gpu_whole(xb), gpu_whole(nb), gpu_whole(yb), gpu_whole(qb),
                                   (gpu_view){0}, NULL, 0, reps);
          double tm = time_gemv_q8(g, s, ws, copies, gpu_whole(xb), gpu_whole(nb), gpu_whole(yb), gpu_whole(qb),
                                   gpu_whole(part), &mine, 0, reps);
          printf(
              "     %-8s int8 tokens %u  GEMV 8 a dispatch %8.2f us  small-M GEMM rm=%u split=%-2u %8.2f us  %6.2f T "
              "int8 ops/s\n",
              s->name, nt, tg / 1e3, dp.rm, dp.split, tm / 1e3, tm > 0 ? ops / tm / 1e3 : 0.0);
          static const uint32_t RMS[] = {1, 2, 4}, SPLITS[] = {1, 2, 4, 8, 16};
          for (size_t a = 0; (sweep || int8 == 2) && a < 3; a++)
            for (size_t b2 = 0; b2 < 5; b2++) {
              op_gemv_plan sp = {0};
              sp.mm_rm = RMS[a];
              sp.mm_split = SPLITS[b2];
              if ((uint64_t)sp.mm_split * nt * N * 4 > pb || sp.mm_split > s->K / 32) continue;
              double t = time_gemv_q8(g, s, ws, copies, gpu_whole(xb), gpu_whole(nb), gpu_whole(yb), gpu_whole(qb),
                                      gpu_whole(part), &sp, 0, reps);
              if (t < 0) continue;
              printf("     %-8s int8 tokens %u sweep   small-M rm=%u split=%-2u %8.2f us  %6.2f T int8 ops/s\n",
                     s->name, nt, sp.mm_rm, sp.mm_split, t / 1e3, ops / t / 1e3);
            }
          gpu_buffer_destroy(g, part);
          gpu_buffer_destroy(g, qb);
          g_tokens = 1;
          continue;
        }
        { /* quantized once, for the GEMV alone */
          gpu_recorder *r = gpu_recorder_create(g, 0);
          int perm = 0;
          op_gemv_q8_supports(g, &ws[0], nt, s->K, &perm);
          op_q8_rows_opts qo = {.perm = perm};
          if (op_quantize_q8_rows(r, gpu_whole(xb), gpu_whole(qb), nt, s->K, &qo) == WGLLM_OK) gpu_recorder_run(r);
          gpu_recorder_free(r);
        }
        op_gemv_plan q8def = op_gemv_q8_choose_plan(g, wt, s->n_out, s->K, s->glu, nt);
        op_gemv_plan viaq = {0}, inwg = {0};
        viaq.q8_quant = 2;
        inwg.q8_quant = 1;
        double tf = time_gemv_q8(g, s, ws, copies, gpu_whole(xb), gpu_whole(nb), gpu_whole(yb), gpu_whole(qb),
                                 (gpu_view){0}, &viaq, 0, reps);
        double tw = op_gemv_q8_quantizes_in_workgroup(g, nt, s->K)
                        ? time_gemv_q8(g, s, ws, copies, gpu_whole(xb), gpu_whole(nb), gpu_whole(yb), gpu_whole(qb),
                                       (gpu_view){0}, &inwg, 0, reps)
                        : -1;
        double ta = time_gemv_q8(g, s, ws, copies, gpu_whole(xb), gpu_whole(nb), gpu_whole(yb), gpu_whole(qb),
                                 (gpu_view){0}, NULL, 1, reps);
        printf(
            "     %-8s int8 tokens %u default tk=%-3u tr=%-2u r=%-2u  quantizing in the GEMV %8.2f us  quantizer+gemv "
            "%8.2f us  gemv alone %8.2f us  %7.1f GB/s of weights (in the GEMV)\n",
            s->name, nt, q8def.tk, q8def.tr, q8def.r, tw / 1e3, tf / 1e3, ta / 1e3, tw > 0 ? total / tw : 0.0);
        for (size_t pi = 0; (sweep || int8 == 2) && pi < sizeof Q8SWEEP / sizeof Q8SWEEP[0]; pi++) {
          op_gemv_plan sp = Q8SWEEP[pi];
          while (sp.r > 1 && ((s->glu ? 2 : 1) * sp.r * nt > 32 || sp.r * nt > sp.tk))
            sp.r /= 2;
          double t = time_gemv_q8(g, s, ws, copies, gpu_whole(xb), gpu_whole(nb), gpu_whole(yb), gpu_whole(qb),
                                  (gpu_view){0}, &sp, 1, reps);
          if (t < 0) continue;
          printf("     %-8s int8 tokens %u sweep   tk=%-3u tr=%-2u r=%-2u  gemv alone %8.2f us  %7.1f GB/s\n", s->name,
                 nt, sp.tk, sp.tr, sp.r, t / 1e3, total / t);
        }
        gpu_buffer_destroy(g, qb);
        g_tokens = 1;
      }
      if (sweep) { /* the default again after the sweep: how far timings drift within a shape */
        double again = time_gemv(g, s, ws, copies, gpu_whole(xb), gpu_whole(nb), gpu_whole(yb), &def, reps);
        printf("     %-8s default again                %8.2f us  %7.1f GB/s\n", s->name, again / 1e3, bytes / again);
        printf("BEST %-4s %-3s %-8s %-7s tk=%u tr=%u r=%u u=%u  %.2f us  %.1f GB/s\n", s->model, TYPES[ti].name,
               s->name, bestp.tuned ? "tuned" : "general", bestp.tk, bestp.tr, bestp.r, bestp.u, best / 1e3,
               bytes / best);
      }
      fflush(stdout);
      for (int c = 0; c < 2 * copies; c++)
        if (bufs[c]) gpu_buffer_destroy(g, bufs[c]);
      gpu_buffer_destroy(g, xb);
      gpu_buffer_destroy(g, nb);
      gpu_buffer_destroy(g, yb);
      free(ws);
      free(bufs);
    }
  gpu_destroy(g);
  return 0;
}
