/* Linear layers: the fused decode GEMV (kernels/gemv.wgsl: q4gsw, q8, Q4_K, Q5_K, Q6_K, MXFP4, f32; and the experts of
   MoE decode), the general GEMV (kernels/matvec.wgsl) for the other storages and a few rows, the tiled GEMM
   (kernels/matmul.wgsl) for prefill, and its tensor-core twin on subgroup matrices (kernels/matmul_mma.wgsl, the fast
   precision); the last three read every weight storage. */
#include "ops.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct linear_params {
  uint32_t M, N, K, has_bias, y_stride, n_off, _p0, _p1;
} linear_params;
_Static_assert(sizeof(linear_params) == 32,
               "linear_params mirrors the Params block of kernels/matvec.wgsl and kernels/matmul.wgsl");

/* One dispatch over rows [n_off, n_off + N) of the output (y rows of y_stride), weight data and scales in wd/ws. */
static wgllm_status linear_piece(gpu_recorder *rec, const char *kernel, const char *suffix, gpu_view x,
                                 const op_weight *w, gpu_view wd, gpu_view ws, gpu_view bias, gpu_view y, uint32_t M,
                                 uint32_t N, uint32_t K, uint32_t y_stride, uint32_t n_off, uint32_t gx, uint32_t gy,
                                 uint32_t rm) {
  uint32_t maxg = op_ctx(rec)->limits.maxComputeWorkgroupsPerDimension;
  if (gx > maxg || gy > maxg)
    return op_fail(rec, WGLLM_ERR_UNSUPPORTED, "%s: grid %ux%u over the device limit", kernel, gx, gy);
  linear_params p = {.M = M, .N = N, .K = K, .has_bias = bias.buf ? 1u : 0u, .y_stride = y_stride, .n_off = n_off};
  gpu_constant c[2];
  int nc = 0;
  if (w->type == OP_W_Q4) c[nc++] = (gpu_constant){"G", (double)w->group};
  /* the GEMM's rows a thread (RM), or the GEMV's rows of x a workgroup (MB) */
  if (rm) c[nc++] = (gpu_constant){strcmp(kernel, K_MATVEC) ? "RM" : "MB", (double)rm};
  char variant[48];
  snprintf(variant, sizeof variant, "%s%s", op_wtype_variant(w->type), suffix);
  int scales = op_wtype_has_scales(w->type);
  return op_dispatch(rec, &(op_dispatch_args){.kernel = kernel,
                                              .variant = variant,
                                              .params = &p,
                                              .params_size = sizeof p,
                                              .consts = nc ? c : NULL,
                                              .n_consts = nc,
                                              .access = scales ? "rrrwr" : "rrrw",
                                              /* bias unused when has_bias = 0, but the binding must exist */
                                              .bind = {x, wd, bias.buf ? bias : x, y, scales ? ws : (gpu_view){0}},
                                              .grid = {gx, gy}});
}

/* tile: output rows a workgroup covers along N (8 for the GEMV, 128 for the GEMM); gy: the grid along M; rm: the
   GEMM's rows a thread (0 for the GEMV); suffix: what follows the storage in the variant's name ("" or a layout) */
static wgllm_status linear(gpu_recorder *rec, const char *kernel, const char *suffix, gpu_view x, const op_weight *w,
                           gpu_view bias, gpu_view y, uint32_t M, uint32_t N, uint32_t K, uint32_t tile, uint32_t gy,
                           uint32_t rm) {
  if (!M || !N || !K) return op_fail(rec, WGLLM_ERR_INTERNAL, "%s: empty shape M=%u N=%u K=%u", kernel, M, N, K);
  wgllm_status s = WGLLM_OK;
  if (!w->n_parts) s = op_check_weight(rec, kernel, w, N, K);
  if (s) return s;
  if (!w->n_parts)
    return linear_piece(rec, kernel, suffix, x, w, w->data, w->scales, bias, y, M, N, K, N, 0, (N + tile - 1) / tile,
                        gy, rm);
  uint32_t n0 = 0;
  for (uint32_t i = 0; !s && i < w->n_parts; i++) {
    uint32_t r = w->part[i].rows;
    op_weight pw = {w->part[i].type, w->part[i].data, w->part[i].scales, w->part[i].group, 0, {{{0}}}};
    s = op_check_weight(rec, kernel, &pw, r, K);
    if (!s)
      s = linear_piece(rec, kernel, suffix, x, &pw, pw.data, pw.scales, bias, y, M, r, K, N, n0, (r + tile - 1) / tile,
                       gy, rm);
    n0 += r;
  }
  if (!s && n0 != N) return op_fail(rec, WGLLM_ERR_INTERNAL, "%s: parts of %u rows for N=%u", kernel, n0, N);
  return s;
}

/* The storages kernels/gemv.wgsl reads (its variants), with the x vec4s of one lane step (XV; XV * U <= 16) */
static uint32_t gemv_xv(op_wtype t) {
  switch (t) {
  case OP_W_F32:
    return 1;
  case OP_W_Q4:
  case OP_W_Q8:
  case OP_W_MXFP4:
    return 2;
  case OP_W_Q4_K:
  case OP_W_Q5_K:
    return 8;
  case OP_W_Q6_K:
    return 4;
  default:
    return 0;
  }
}

uint32_t op_gemv_step(op_wtype t) { return 4 * gemv_xv(t); }

static int gemv_piece_ok(op_wtype t, uint32_t group, uint32_t K) {
  if (!gemv_xv(t)) return 0;
  if (t == OP_W_Q4) return (group == 32 || group == 64 || group == 128) && K % group == 0 && K % 32 == 0;
  if (t == OP_W_F32) return K % 4 == 0;
  return K % (t == OP_W_Q8 || t == OP_W_MXFP4 ? 32u : 256u) == 0;
}

/* Tokens one "_mt" dispatch takes for a storage: NT x XV x-vec4s in the kernel's 32 slots, at most 8 */
static uint32_t gemv_max_tokens(op_wtype t) {
  uint32_t xv = gemv_xv(t);
  return xv ? (32 / xv < OP_GEMV_MAX_TOKENS ? 32 / xv : OP_GEMV_MAX_TOKENS) : 0;
}

/* op_gemv_supports' test, f32 weights taken only where f32 says (the MoE routers): dense f32 layers keep the general
   kernels (the GEMV's f32 layouts are unswept for them, and every f32 model would build new pipelines) */
static int gemv_supports(const gpu_context *ctx, const op_weight *w, uint32_t M, uint32_t K, int *use_subgroups,
                         int f32) {
  if (M < 1 || M > OP_GEMV_MAX_BATCH) return 0;
  if (!f32 && !w->n_parts && w->type == OP_W_F32) return 0;
  for (uint32_t i = 0; !f32 && i < w->n_parts; i++)
    if (w->part[i].type == OP_W_F32) return 0;
  if (!w->n_parts && !gemv_piece_ok(w->type, w->group, K)) return 0;
  for (uint32_t i = 0; i < w->n_parts; i++)
    if (!gemv_piece_ok(w->part[i].type, w->part[i].group, K)) return 0;
  if (M > 1) {
    /* the "_mt" variants' workgroup arrays (20 KiB without subgroups); tokens past one dispatch's share start
       a new dispatch at x row t0, which must be a binding offset */
    uint64_t align = ctx->limits.minStorageBufferOffsetAlignment ? ctx->limits.minStorageBufferOffsetAlignment : 256;
    if (ctx->limits.maxComputeWorkgroupStorageSize < 20480) return 0;
    uint32_t most = w->n_parts ? OP_GEMV_MAX_TOKENS : gemv_max_tokens(w->type);
    for (uint32_t i = 0; i < w->n_parts; i++)
      if (gemv_max_tokens(w->part[i].type) < most) most = gemv_max_tokens(w->part[i].type);
    if (M > most && ((uint64_t)K * 4 * most) % align) return 0;
  }
  *use_subgroups = ctx->has_subgroups && ctx->subgroup_min == ctx->subgroup_max;
  return 1;
}

int op_gemv_supports(const gpu_context *ctx, const op_weight *w, uint32_t M, uint32_t K, int *use_subgroups) {
  return gemv_supports(ctx, w, M, K, use_subgroups, 0);
}

int op_gemv_supports_router(const gpu_context *ctx, const op_weight *w, uint32_t M, uint32_t K) {
  int sg;
  return gemv_supports(ctx, w, M, K, &sg, 1);
}

int op_gemv_fuses_glu(const op_weight *w) { return w->n_parts == 0; }

static uint32_t pow2_at_most(uint32_t v, uint32_t cap) {
  uint32_t p = 1;
  while (p * 2 <= v && p * 2 <= cap)
    p *= 2;
  return p;
}

/* The predicate of the specialised kernel: subgroups of one fixed size of 8..64 lanes (a thread-row is whole
   subgroups), steps along K for at least three quarters of a subgroup's lanes (q4gsw: 8 nibbles a step, so K >= 192
   with 32 lanes; Q4_K: 32 elements a step, so Qwen3-30B-A3B's experts' down projection, K = 768, keeps 24 of 32
   lanes busy; the block types: whole blocks), a q4gsw group of 32, 64 or 128, at least 64 output rows, and 256-thread
   workgroups. Everything else takes the general kernel, whole. The layouts are the fastest of bench_kernels
   --sweep on the H200 (PERF.md): 4 row sums a lane (2 with GLU, whose lanes keep gate and up); the MLP's gate/up
   rows and the wide LM head split K over one subgroup with several subgroups a workgroup; the narrower
   projections split K over 128 lanes (64 for Q4_K / Q5_K, whose steps are 4 times longer); the block types
   unroll less. MXFP4 (a word a step, as q4gsw) takes q4gsw's layouts but 128 lanes for its GLU rows (4 rows a lane,
   8 sums) and one thread-row for the others below the LM head's width: measured in gpt-oss's MoE step (docs/perf/31-moe
   calls 22-23; a dense MXFP4 gate/up as wide as the 8B's, which no model has, swept slower so); f32 (the routers) one
   row a workgroup on 256 lanes, f32 with GLU q4gsw's layouts, unswept. Where K's steps do not divide evenly among those
   lanes (K not a multiple of 1024: Gemma's 2304 and 256, Qwen's 3584, ...), the thread-row narrows, down to one
   subgroup, until they do or it is one subgroup (the last lanes then take a step fewer); q8 and MXFP4 keep their lanes
   from two steps a lane on (gpt-oss's 2880: q8 measured twice as fast). */
op_gemv_plan op_gemv_choose_plan(const gpu_context *ctx, op_wtype type, uint32_t n_out, uint32_t K, uint32_t group,
                                 int glu) {
  op_gemv_plan p = {0};
  uint32_t xv = gemv_xv(type), step = xv * 4, sgs = ctx->subgroup_min; /* elements a lane step */
  if (!xv) return p;
  uint32_t steps = K / step;
  int fixed_sg =
      ctx->has_subgroups && ctx->subgroup_min == ctx->subgroup_max && sgs >= 8 && sgs <= 64 && (sgs & (sgs - 1)) == 0;
  int shape_ok = type == OP_W_Q4 ? (group == 32 || group == 64 || group == 128) : 1;
  if (fixed_sg && 4 * steps >= 3 * sgs && shape_ok && n_out >= 64 &&
      ctx->limits.maxComputeInvocationsPerWorkgroup >= 256) {
    p.tuned = 1;
    uint32_t one = sgs > 32 ? sgs : 32; /* one thread-row = one subgroup (32 lanes, or the subgroup if wider) */
    if (type == OP_W_Q4_K || type == OP_W_Q5_K) { /* 32-element steps, one unrolled */
      if (glu)
        p.tk = one, p.tr = 8, p.r = 2, p.u = 2;
      else if (n_out >= 32768)
        p.tk = one, p.tr = 4, p.r = 4, p.u = 1;
      else
        p.tk = 2 * one, p.tr = 4, p.r = 4, p.u = 1;
    } else if (type == OP_W_Q6_K) {
      if (glu)
        p.tk = one, p.tr = 8, p.r = 2, p.u = 2;
      else if (n_out >= 32768)
        p.tk = one, p.tr = 4, p.r = 4, p.u = 1;
      else
        p.tk = 128, p.tr = 2, p.r = 4, p.u = 1;
    } else if (type == OP_W_MXFP4 && n_out < 32768) {
      /* gpt-oss's experts: 128 lanes along K (2.8 of K=2880's 360 steps a lane), 2 thread-rows with GLU, one
         without: its decode step 3,264 -> 2,854 us (docs/perf/31-moe call 23, from call 22's sweep) */
      p.tk = 128, p.tr = glu ? 2 : 1, p.r = 4, p.u = 4;
    } else if (type == OP_W_F32 && !glu) {
      /* the MoE routers (dense f32 layers keep the general kernels, gemv_supports; f32 experts' down projections,
         which downloaded models do not have, take it too): 256 lanes along K, one row a workgroup, so that
         Qwen3-30B-A3B's 128 router rows take 128 workgroups, not 16: its decode at 128 233.1 / 234.2 -> 243.6 tok/s
         (docs/perf/31-moe call 27, H100; 64 workgroups gave 241.2) */
      p.tk = 256, p.tr = 1, p.r = 1, p.u = 2;
    } else if (glu) {
      p.tk = one, p.tr = 8, p.r = 2, p.u = 4;
    } else if (n_out >= 32768) {
      p.tk = one, p.tr = 4, p.r = type == OP_W_Q8 ? 4 : 8, p.u = type == OP_W_Q8 ? 4 : 2;
    } else {
      p.tk = 128, p.tr = 2, p.r = 4, p.u = 4;
    }
    /* narrower thread-rows (keeping the workgroup's threads) until the steps divide evenly; q8 only while a lane
       would take under two steps: gpt-oss-20b's Q8_0 QKV (K 2880, 360 steps) took 12.3 us over 128 uneven lanes
       against 25.5 narrowed to 32 (bench_kernels --shapes goss --sweep, H100, docs/perf/31-moe call 10). MXFP4's
       steps are q8's length and gpt-oss's K the same, so it keeps its lanes alike (its 128 lanes measured in call
       23, above); the other storages' uneven lanes are unmeasured */
    int keep_lanes = type == OP_W_Q8 || type == OP_W_MXFP4;
    while (p.tk > one && steps % p.tk && (!keep_lanes || steps < 2 * p.tk)) {
      p.tk /= 2;
      p.tr *= 2;
    }
    if (p.tk * p.tr > ctx->limits.maxComputeInvocationsPerWorkgroup || p.tk * p.tr / sgs > 32) p.tr = 1;
    return p;
  }
  /* general: up to 128 threads along K (no more than there are steps), the rest of 128 as thread-rows, at
     most 16 rows a thread-row and fewer while there would be under 512 workgroups */
  p.tk = pow2_at_most(steps, 128);
  p.tr = 128 / p.tk;
  p.r = p.tk < 16 ? p.tk : 16;
  p.u = 16 / xv < 4 ? 16 / xv : 4;
  while (p.r > 1 && (n_out + p.tr * p.r - 1) / (p.tr * p.r) < 512)
    p.r /= 2;
  return p;
}

typedef struct gemv_params {
  uint32_t N, K, has_bias, accumulate, has_norm;
  float eps, w_offset;
  uint32_t glu_half, act, n_off, y_stride;
  op_gemv_experts_fields moe; /* k .. limit */
  uint32_t route_mode;
} gemv_params;
_Static_assert(sizeof(gemv_params) == 80, "gemv_params mirrors the Params block of kernels/gemv.wgsl");

/* One dispatch of the GEMV over the N rows of one piece (the whole weight or one part), landing at n_off..; with
   moe, the expert GEMV over the pairs whose experts this piece holds (N: rows an expert, rows_w) */
static wgllm_status gemv_piece(gpu_recorder *rec, gpu_view x, op_wtype type, uint32_t group, gpu_view data,
                               gpu_view scales, gpu_view bias, gpu_view y, uint32_t N, uint32_t K, uint32_t n_off,
                               uint32_t nt, uint32_t y_stride, const op_gemv_opts *o, const op_gemv_plan *plan,
                               const op_gemv_experts_args *moe, gpu_view route) {
  const gpu_context *ctx = op_ctx(rec);
  int sg = ctx->has_subgroups && ctx->subgroup_min == ctx->subgroup_max;
  uint32_t out_rows = o->glu_half ? o->glu_half : N, xv = gemv_xv(type);
  /* the combined down projection's row is its token's k pairs' rows one after the other */
  int combine = moe && moe->combine_w.buf;
  uint32_t row_k = combine ? K * moe->k : K, n_rows = combine ? moe->np / moe->k : moe ? moe->np : 1;
  op_gemv_plan pl = plan ? *plan : op_gemv_choose_plan(ctx, type, out_rows, row_k, group, o->glu_half != 0);
  /* fewer rows a workgroup while the grid would leave an H100's or H200's SMs under two workgroups each (the
     combined down projection: a workgroup row a token, not a pair) */
  while (combine && !plan && pl.r > 1 && (out_rows + pl.tr * pl.r - 1) / (pl.tr * pl.r) * n_rows < 256)
    pl.r /= 2;
  uint32_t u = pl.u ? pl.u : 4;
  if (nt > 1) { /* NT tokens: the R * NT sums (twice with GLU) and NT * U x slots within 32 */
    while (pl.r > 1 && ((o->glu_half ? 2 : 1) * pl.r * nt > 32 || pl.r * nt > pl.tk))
      pl.r /= 2;
    while (u > 1 && nt * u * xv > 32)
      u /= 2;
    /* from 4 tokens on, one step at a time: the x slots of more steps cost more than their loads in flight save
       (bench_kernels --tokens on the H200: the q4gsw 1B and 8B projections 3-28% faster than with u = 2 or 4 at
       4 and 8 tokens; PERF.md) */
    if (nt >= 4 && !plan) u = 1;
  }
  uint32_t wg = pl.tk * pl.tr, rr = o->glu_half ? 2 * pl.r : pl.r;
  /* the kernel's limits: row sums in registers, one finishing thread per (row, token), its workgroup arrays,
     the x of the unrolled steps in 16 vec4s (32 with tokens) */
  int ok = pl.tk && pl.tr && pl.r && (pl.tk & (pl.tk - 1)) == 0 && rr * nt <= 32 && pl.r * nt <= pl.tk && u <= 4 &&
           xv * u * nt <= (nt > 1 ? 32u : 16u) && wg <= ctx->limits.maxComputeInvocationsPerWorkgroup;
  if (ok && pl.tuned) ok = sg && pl.tk % ctx->subgroup_min == 0 && wg / ctx->subgroup_min <= 32;
  if (ok && !pl.tuned) ok = wg <= 128;
  if (!ok)
    return op_fail(rec, WGLLM_ERR_INTERNAL, "gemv %s: plan %s tk=%u tr=%u r=%u u=%u not valid on this device",
                   op_wtype_name(type), pl.tuned ? "tuned" : "general", pl.tk, pl.tr, pl.r, u);
  gemv_params p = {.N = N,
                   .K = K,
                   .has_bias = bias.buf ? 1u : 0u,
                   .accumulate = o->accumulate ? 1u : 0u,
                   .has_norm = o->norm_w.buf ? 1u : 0u,
                   .eps = o->eps,
                   .w_offset = o->norm_offset,
                   .glu_half = o->glu_half,
                   .act = (uint32_t)o->act,
                   .n_off = n_off,
                   .y_stride = y_stride};
  if (moe) {
    p.accumulate = moe->accumulate ? 1u : 0u;
    p.moe = op_gemv_experts_fields_of(moe, N);
    p.route_mode = (uint32_t)moe->route_mode;
  }
  gpu_constant c[8] = {{"G", (double)(type == OP_W_Q4 ? group : 32)},
                       {"R", (double)pl.r},
                       {"TK", (double)pl.tk},
                       {"TR", (double)pl.tr},
                       {"U", (double)u},
                       {"GLU", o->glu_half ? 1.0 : 0.0},
                       {"SGS", (double)(pl.tuned ? ctx->subgroup_min : 32)},
                       {"NT", (double)nt}};
  char variant[32];
  const char *kind = !moe ? (nt > 1 ? "_mt" : "") : moe->logits.buf ? "_moer" : combine ? "_moec" : "_moe";
  snprintf(variant, sizeof variant, "%s%s%s", op_wtype_variant(type), pl.tuned ? "_sg" : "", kind);
  int has_scales = op_wtype_has_scales(type);
  uint32_t rows_per_wg = pl.tr * pl.r, groups = (out_rows + rows_per_wg - 1) / rows_per_wg;
  op_dispatch_args a = {
      .kernel = K_GEMV,
      .variant = variant,
      .params = &p,
      .params_size = sizeof p,
      .consts = c,
      .n_consts = nt > 1 ? 8 : 7,
      .access = has_scales ? "rrrwrr" : "rrrwr",
      .bind = {x, data, bias.buf ? bias : x, y, o->norm_w.buf ? o->norm_w : x, has_scales ? scales : (gpu_view){0}},
      .groups = groups};
  if (moe) { /* the pairs' ids (or the logits, then ids and weights written; or ids and weights read) after the
                other bindings; a workgroup row a pair (a token: combined) */
    int b = has_scales ? 6 : 5;
    if (combine) {
      a.access = has_scales ? "rrrwrrrr" : "rrrwrrr";
      a.bind[b] = route;
      a.bind[b + 1] = moe->combine_w;
    } else if (moe->logits.buf) {
      a.access = has_scales ? "rrrwrrrww" : "rrrwrrww";
      a.bind[b] = moe->logits;
      a.bind[b + 1] = route;
      a.bind[b + 2] = moe->weights;
    } else {
      a.access = has_scales ? "rrrwrrr" : "rrrwrr";
      a.bind[b] = route;
    }
    a.groups = 0;
    a.grid[0] = groups;
    a.grid[1] = n_rows;
    a.grid[2] = 1;
  }
  return op_dispatch(rec, &a);
}

wgllm_status op_gemv(gpu_recorder *rec, gpu_view x, const op_weight *w, gpu_view bias, gpu_view y, uint32_t N,
                     uint32_t K, const op_gemv_opts *o) {
  return op_gemv_planned(rec, x, w, bias, y, N, K, o, NULL);
}

wgllm_status op_gemv_planned(gpu_recorder *rec, gpu_view x, const op_weight *w, gpu_view bias, gpu_view y, uint32_t N,
                             uint32_t K, const op_gemv_opts *o, const op_gemv_plan *plan) {
  int sg;
  op_gemv_opts none = {0};
  if (!o) o = &none;
  if (!gemv_supports(op_ctx(rec), w, o->n_tokens ? o->n_tokens : 1, K, &sg, 1))
    return op_fail(rec, WGLLM_ERR_UNSUPPORTED,
                   "gemv: needs q4gsw, q8, Q4_K, Q5_K, Q6_K or MXFP4 weights of whole groups or blocks (%s, K=%u)",
                   op_wtype_name(w->type), K);
  if (o->glu_half && N != 2 * o->glu_half)
    return op_fail(rec, WGLLM_ERR_INTERNAL, "gemv: GLU over %u rows with %u gate rows", N, o->glu_half);
  if (o->glu_half && !op_gemv_fuses_glu(w))
    return op_fail(rec, WGLLM_ERR_INTERNAL, "gemv: GLU needs the gate and up rows in one piece (%u parts)", w->n_parts);
  uint32_t T = o->n_tokens ? o->n_tokens : 1, ys = o->y_stride ? o->y_stride : (o->glu_half ? o->glu_half : N);
  uint64_t align = op_ctx(rec)->limits.minStorageBufferOffsetAlignment;
  if (!align) align = 256;
  wgllm_status s = WGLLM_OK;
  uint32_t n0 = 0;
  for (uint32_t i = 0; !s && i < (w->n_parts ? w->n_parts : 1); i++) {
    op_weight pw = *w;
    uint32_t rows = N;
    if (w->n_parts) {
      const struct op_weight_part *pt = &w->part[i];
      pw = (op_weight){pt->type, pt->data, pt->scales, pt->group, 0, {{{0}}}};
      rows = pt->rows;
    }
    s = op_check_weight(rec, "gemv", &pw, rows, K);
    /* the tokens in dispatches of at most what one takes, each from its x and y rows on */
    uint32_t most = T > 1 ? gemv_max_tokens(pw.type) : 1;
    for (uint32_t t0 = 0; !s && t0 < T; t0 += most) {
      uint32_t nt = T - t0 < most ? T - t0 : most;
      uint64_t xo = (uint64_t)t0 * K * 4, yo = (uint64_t)t0 * ys * 4;
      if (t0 && (xo % align || yo % align))
        return op_fail(rec, WGLLM_ERR_UNSUPPORTED,
                       "gemv: token %u's rows (K=%u, y stride %u) do not start on a binding offset", t0, K, ys);
      gpu_view xt = {x.buf, x.offset + xo, 0}, yt = {y.buf, y.offset + yo, 0};
      s = gemv_piece(rec, xt, pw.type, pw.group, pw.data, pw.scales, bias, yt, rows, K, n0, nt, ys, o, plan, NULL,
                     (gpu_view){0});
    }
    n0 += rows;
  }
  if (!s && n0 != N) return op_fail(rec, WGLLM_ERR_INTERNAL, "gemv: parts of %u rows for N=%u", n0, N);
  return s;
}

int op_gemv_experts_supports(op_wtype type, uint32_t group, uint32_t K) { return gemv_piece_ok(type, group, K); }

op_gemv_experts_fields op_gemv_experts_fields_of(const op_gemv_experts_args *a, uint32_t rows_w) {
  return (op_gemv_experts_fields){.k = a->k,
                                  .x_pair = a->x_pair ? 1u : 0u,
                                  .rows_w = rows_w,
                                  .e_base = a->e_base,
                                  .e_count = a->e_count,
                                  .E = a->E,
                                  .alpha = a->alpha,
                                  .limit = a->limit};
}

wgllm_status op_gemv_experts(gpu_recorder *rec, gpu_view x, const op_weight *piece, gpu_view bias, gpu_view ids,
                             gpu_view y, const op_gemv_experts_args *a) {
  const gpu_context *ctx = op_ctx(rec);
  if (!op_gemv_experts_supports(piece->type, piece->group, a->K))
    return op_fail(rec, WGLLM_ERR_INTERNAL, "gemv experts: %s weights with K=%u", op_wtype_name(piece->type), a->K);
  uint32_t rows_w = a->glu ? 2 * a->N : a->N, maxg = ctx->limits.maxComputeWorkgroupsPerDimension;
  if (a->np > maxg) return op_fail(rec, WGLLM_ERR_UNSUPPORTED, "gemv experts: %u pairs over the grid limit", a->np);
  if (a->combine_w.buf &&
      (a->glu || !a->x_pair || a->logits.buf || !a->k || a->np % a->k || a->e_base || a->e_count != a->E))
    return op_fail(rec, WGLLM_ERR_INTERNAL,
                   "gemv experts: the combine takes a down projection of whole tokens' pairs "
                   "over one piece of all experts");
  op_gemv_opts o = {.glu_half = a->glu ? a->N : 0,
                    .act = (op_act)a->act,
                    .norm_w = a->norm_w,
                    .eps = a->eps,
                    .norm_offset = a->norm_offset};
  return gemv_piece(rec, x, piece->type, piece->group, piece->data, piece->scales, bias, y, rows_w, a->K, 0, 1, 0, &o,
                    NULL, a, ids);
}

wgllm_status op_matvec_generic(gpu_recorder *rec, gpu_view x, const op_weight *w, gpu_view bias, gpu_view y, uint32_t M,
                               uint32_t N, uint32_t K) {
  /* each weight element read once for up to 8 rows; a row's sums the same whatever MB (kernels/matvec.wgsl) */
  uint32_t mb = M >= 8 ? 8 : M >= 4 ? 4 : M >= 2 ? 2 : 1;
  return linear(rec, K_MATVEC, "", x, w, bias, y, M, N, K, 8, (M + mb - 1) / mb, mb);
}

wgllm_status op_matvec(gpu_recorder *rec, gpu_view x, const op_weight *w, gpu_view bias, gpu_view y, uint32_t M,
                       uint32_t N, uint32_t K) {
  int sg;
  if (op_gemv_supports(op_ctx(rec), w, M, K, &sg)) {
    op_gemv_opts o = {.n_tokens = M};
    return op_gemv(rec, x, w, bias, y, N, K, &o);
  }
  return op_matvec_generic(rec, x, w, bias, y, M, N, K);
}

wgllm_status op_matmul_rows(gpu_recorder *rec, gpu_view x, const op_weight *w, gpu_view bias, gpu_view y, uint32_t M,
                            uint32_t N, uint32_t K, uint32_t rm) {
  /* 64-row tiles (4 rows a thread): with the next step prefetched into registers they were the faster on the H200
     for every 1B and 8B projection and M from 128 to 2048 (bench_kernels --gemm, PERF.md); 128-row tiles stay
     selectable for the bench */
  if (!rm) rm = 4;
  if (rm != 4 && rm != 8) return op_fail(rec, WGLLM_ERR_INTERNAL, "matmul: %u rows a thread (4 or 8)", rm);
  uint32_t tm = 16 * rm;
  return linear(rec, K_MATMUL, "", x, w, bias, y, M, N, K, 128, (M + tm - 1) / tm, rm);
}

wgllm_status op_matmul(gpu_recorder *rec, gpu_view x, const op_weight *w, gpu_view bias, gpu_view y, uint32_t M,
                       uint32_t N, uint32_t K) {
  return op_matmul_rows(rec, x, w, bias, y, M, N, K, 0);
}

wgllm_status op_linear(gpu_recorder *rec, gpu_view x, const op_weight *w, gpu_view bias, gpu_view y, uint32_t M,
                       uint32_t N, uint32_t K) {
  return op_matmul(rec, x, w, bias, y, M, N, K);
}

int op_matmul_mma_supports(const gpu_context *ctx, const op_weight *w, uint32_t M, uint32_t K) {
  /* every storage: the kernel stages any weight through lib/weight_load.wgsli (q4gsw 16 elements of one group) */
  if (!ctx->has_subgroup_matrix || M < 1 || K % 32) return 0;
  if (!w->n_parts && w->type == OP_W_Q4 && w->group % 16) return 0;
  for (uint32_t i = 0; i < w->n_parts; i++)
    if (w->part[i].type == OP_W_Q4 && w->part[i].group % 16) return 0;
  return op_smat_f16_ready(ctx, OP_MMA_WORKGROUP_BYTES, 256);
}

wgllm_status op_matmul_mma_rows(gpu_recorder *rec, gpu_view x, const op_weight *w, gpu_view bias, gpu_view y,
                                uint32_t M, uint32_t N, uint32_t K, uint32_t tm) {
  /* 64-row tiles: measured on the H200 with exact timestamps (docs/perf/18-mma call 4, gemm_perf at 512 tokens)
     they were as fast as or faster than 128-row tiles on every 8B projection but the output one (4% slower), where
     128-row tiles make too few workgroups for its 132 SMs; 128 stays selectable for the bench */
  if (!tm) tm = 64;
  if (tm != 64 && tm != 128) return op_fail(rec, WGLLM_ERR_INTERNAL, "matmul_mma: %u-row tiles (64 or 128)", tm);
  if (!op_matmul_mma_supports(op_ctx(rec), w, M, K))
    return op_fail(rec, WGLLM_ERR_UNSUPPORTED,
                   "matmul_mma: the device offers no f16 subgroup matrices of 16x16x16 "
                   "with subgroups of 32, or K=%u is not a multiple of 32",
                   K);
  return linear(rec, K_MATMUL_MMA, tm == 128 ? "_m128" : "", x, w, bias, y, M, N, K, 128, (M + tm - 1) / tm, 0);
}

wgllm_status op_matmul_mma(gpu_recorder *rec, gpu_view x, const op_weight *w, gpu_view bias, gpu_view y, uint32_t M,
                           uint32_t N, uint32_t K) {
  return op_matmul_mma_rows(rec, x, w, bias, y, M, N, K, 0);
}
