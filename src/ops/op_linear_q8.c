/* The fast precision's linear layers: activations quantized to int8 blocks on the GPU (kernels/quantize_q8.wgsl)
   and multiplied with packed int8 dot products by a block-quantized weight in its own storage: the GEMM of prefill
   (kernels/matmul_q8.wgsl, op_matmul_q8), the GEMV of decode, one to eight tokens (kernels/gemv_q8.wgsl,
   op_gemv_q8, its quantizer carrying the projection's RMSNorm), and the small-M GEMM of batched decode past eight
   (the same matmul_q8 in 16-64-row tiles with K split, then kernels/matmul_q8_sum.wgsl). The predicates
   op_matmul_q8_supports, op_gemv_q8_supports and op_q8_small_supports name what the kernels take; op_linear_fast
   and op_gemv_fast run them or, as a whole, the exact op_linear / op_gemv. */
#include "ops.h"
#include <stdio.h>

typedef struct quant_params {
  uint32_t M, K, has_norm, perm;
  float eps, w_offset;
  uint32_t _p0, _p1;
} quant_params;
_Static_assert(sizeof(quant_params) == 32, "quant_params mirrors the Params block of kernels/quantize_q8.wgsl");

typedef struct q8mm_params {
  uint32_t M, N, K, has_bias, y_stride, n_off, k_split, part_stride;
  /* the experts' tiles ("_moe") only */
  uint32_t k, np, E, rows_w, glu, act, x_pair, e_base, e_count, off_off, off_ent, off_tile;
  float alpha, limit;
  uint32_t _p0, _p1;
} q8mm_params;
_Static_assert(sizeof(q8mm_params) == 96, "q8mm_params mirrors the Params block of kernels/matmul_q8.wgsl");

/* the two parts of an activation buffer: q [M][K/4] u32 from the view's start, ds [M][K/32] vec2 after it (its
   offset rounded up to the binding alignment) */
static uint64_t q_part_bytes(const gpu_context *ctx, uint32_t M, uint32_t K) {
  uint64_t align = ctx->limits.minStorageBufferOffsetAlignment ? ctx->limits.minStorageBufferOffsetAlignment : 256;
  return ((uint64_t)M * K + align - 1) / align * align;
}

void op_q8_act_views(const gpu_recorder *rec, gpu_view xq, uint32_t M, uint32_t K, gpu_view *q, gpu_view *ds) {
  uint64_t qb = (uint64_t)M * K, off = q_part_bytes(op_ctx(rec), M, K);
  *q = (gpu_view){xq.buf, xq.offset, qb};
  *ds = (gpu_view){xq.buf, xq.offset + off, (uint64_t)M * (K / 32) * 8};
}

uint64_t op_q8_act_bytes(const gpu_context *ctx, uint32_t M, uint32_t K) {
  return q_part_bytes(ctx, M, K) + (uint64_t)M * (K / 32) * 8;
}

wgllm_status op_quantize_q8(gpu_recorder *rec, gpu_view x, gpu_view xq, uint32_t M, uint32_t K) {
  if (!M || !K || K % 32) return op_fail(rec, WGLLM_ERR_INTERNAL, "quantize_q8: M=%u K=%u (K a multiple of 32)", M, K);
  if (xq.size && xq.size < op_q8_act_bytes(op_ctx(rec), M, K))
    return op_fail(rec, WGLLM_ERR_INTERNAL, "quantize_q8: %llu bytes for M=%u K=%u", (unsigned long long)xq.size, M, K);
  gpu_view q, ds;
  op_q8_act_views(rec, xq, M, K, &q, &ds);
  quant_params p = {.M = M, .K = K};
  return op_dispatch(rec, &(op_dispatch_args){.kernel = K_QUANTIZE_Q8,
                                              .variant = V_QUANTIZE_Q8_F32,
                                              .params = &p,
                                              .params_size = sizeof p,
                                              .access = "rww",
                                              .bind = {{x.buf, x.offset, (uint64_t)M * K * 4}, q, ds},
                                              .groups = (uint32_t)(((uint64_t)M * (K / 32) + 63) / 64)});
}

wgllm_status op_quantize_q8_rows(gpu_recorder *rec, gpu_view x, gpu_view xq, uint32_t M, uint32_t K,
                                 const op_q8_rows_opts *o) {
  if (!M || M > OP_GEMV_MAX_BATCH || !K || K % 32)
    return op_fail(rec, WGLLM_ERR_INTERNAL, "quantize_q8 rows: M=%u K=%u (M 1..%d, K a multiple of 32)", M, K,
                   OP_GEMV_MAX_BATCH);
  if (xq.size && xq.size < op_q8_act_bytes(op_ctx(rec), M, K))
    return op_fail(rec, WGLLM_ERR_INTERNAL, "quantize_q8 rows: %llu bytes for M=%u K=%u", (unsigned long long)xq.size,
                   M, K);
  op_q8_rows_opts none = {0};
  if (!o) o = &none;
  gpu_view q, ds;
  op_q8_act_views(rec, xq, M, K, &q, &ds);
  quant_params p = {.M = M,
                    .K = K,
                    .has_norm = o->norm_w.buf ? 1u : 0u,
                    .perm = o->perm ? 1u : 0u,
                    .eps = o->eps,
                    .w_offset = o->norm_offset};
  gpu_view xs = {x.buf, x.offset, (uint64_t)M * K * 4};
  return op_dispatch(rec, &(op_dispatch_args){.kernel = K_QUANTIZE_Q8,
                                              .variant = V_QUANTIZE_Q8_ROW,
                                              .params = &p,
                                              .params_size = sizeof p,
                                              .access = "rwwr",
                                              /* norm_w unused without the norm, but the binding must exist */
                                              .bind = {xs, q, ds, o->norm_w.buf ? o->norm_w : xs},
                                              .grid = {M}});
}

/* 64-row tiles (4 rows a thread) and block sums to floats by adds: the fastest of bench_kernels --gemm on the H200
   for the 8B's projections at M = 512 and 2048 but the 4096 x 4096 one (128-row tiles 6-25% slower elsewhere, the
   conversion 1-3% slower everywhere: PERF.md, "Precision") */
op_q8mm_plan op_q8mm_default_plan(void) { return (op_q8mm_plan){4, 1}; }

/* the storages kernels/matmul_q8.wgsl reads (its variants; moe: the experts' tiles); Q2_K, Q3_K and the float types
   have none */
static const char *q8mm_variant(op_wtype t, int moe) {
  switch (t) {
  case OP_W_Q4:
    return moe ? V_MATMUL_Q8_Q4_MOE : V_MATMUL_Q8_Q4;
  case OP_W_Q8:
    return moe ? V_MATMUL_Q8_Q8_MOE : V_MATMUL_Q8_Q8;
  case OP_W_Q4_1:
    return moe ? V_MATMUL_Q8_Q4_1_MOE : V_MATMUL_Q8_Q4_1;
  case OP_W_Q5_0:
    return moe ? V_MATMUL_Q8_Q5_0_MOE : V_MATMUL_Q8_Q5_0;
  case OP_W_Q5_1:
    return moe ? V_MATMUL_Q8_Q5_1_MOE : V_MATMUL_Q8_Q5_1;
  case OP_W_Q4_K:
    return moe ? V_MATMUL_Q8_Q4K_MOE : V_MATMUL_Q8_Q4K;
  case OP_W_Q5_K:
    return moe ? V_MATMUL_Q8_Q5K_MOE : V_MATMUL_Q8_Q5K;
  case OP_W_Q6_K:
    return moe ? V_MATMUL_Q8_Q6K_MOE : V_MATMUL_Q8_Q6K;
  case OP_W_IQ4_NL:
    return moe ? V_MATMUL_Q8_IQ4NL_MOE : V_MATMUL_Q8_IQ4NL;
  case OP_W_IQ4_XS:
    return moe ? V_MATMUL_Q8_IQ4XS_MOE : V_MATMUL_Q8_IQ4XS;
  case OP_W_MXFP4:
    return moe ? V_MATMUL_Q8_MXFP4_MOE : V_MATMUL_Q8_MXFP4;
  default:
    return NULL;
  }
}

static int q8mm_piece_ok(op_wtype t, uint32_t group) {
  if (!q8mm_variant(t, 0)) return 0;
  return t != OP_W_Q4 || group == 32 || group == 64 || group == 128;
}

int op_matmul_q8_supports(const gpu_context *ctx, const op_weight *w, uint32_t M, uint32_t K) {
  (void)ctx;
  if (M < OP_Q8_MIN_ROWS || K % 32) return 0;
  if (!w->n_parts) return q8mm_piece_ok(w->type, w->group);
  for (uint32_t i = 0; i < w->n_parts; i++)
    if (!q8mm_piece_ok(w->part[i].type, w->part[i].group)) return 0;
  return 1;
}

/* One dispatch over a piece's N rows; k_split > 1: K in that many slices (the grid's z), each writing its raw sums
   part_stride elements after the previous one's (y is then the partial sums, bias unused) */
static wgllm_status q8mm_piece(gpu_recorder *rec, gpu_view q, gpu_view ds, op_wtype type, uint32_t group, gpu_view data,
                               gpu_view scales, gpu_view bias, gpu_view y, uint32_t M, uint32_t N, uint32_t K,
                               uint32_t y_stride, uint32_t n_off, const op_q8mm_plan *pl, uint32_t k_split,
                               uint32_t part_stride) {
  uint32_t tm = 16 * pl->rm;
  uint32_t maxg = op_ctx(rec)->limits.maxComputeWorkgroupsPerDimension, gx = (N + 127) / 128, gy = (M + tm - 1) / tm;
  if (gx > maxg || gy > maxg || k_split > maxg)
    return op_fail(rec, WGLLM_ERR_UNSUPPORTED, "matmul_q8: grid %ux%ux%u over the device limit", gx, gy, k_split);
  q8mm_params p = {.M = M,
                   .N = N,
                   .K = K,
                   .has_bias = bias.buf ? 1u : 0u,
                   .y_stride = y_stride,
                   .n_off = n_off,
                   .k_split = k_split,
                   .part_stride = part_stride};
  gpu_constant c[3] = {{"RM", (double)pl->rm}, {"CVT_ADD", pl->cvt_add ? 1.0 : 0.0}, {"G", (double)group}};
  int has_scales = op_wtype_has_scales(type);
  return op_dispatch(
      rec, &(op_dispatch_args){.kernel = K_MATMUL_Q8,
                               .variant = q8mm_variant(type, 0),
                               .params = &p,
                               .params_size = sizeof p,
                               .consts = c,
                               .n_consts = type == OP_W_Q4 ? 3 : 2,
                               .access = has_scales ? "rrrrwr" : "rrrrw",
                               /* bias unused when has_bias = 0, but the binding must exist */
                               .bind = {q, ds, data, bias.buf ? bias : q, y, has_scales ? scales : (gpu_view){0}},
                               .grid = {gx, gy, k_split}});
}

wgllm_status op_matmul_q8_experts(gpu_recorder *rec, gpu_view xq, const op_weight *piece, gpu_view bias, gpu_view lists,
                                  gpu_view y, const op_q8_experts_args *a) {
  uint32_t rows_w = a->glu ? 2 * a->N : a->N, M = a->xq_rows;
  if (!M || !a->N || !a->K || a->K % 32 || !a->np || !a->k || !a->E || !a->e_count || a->e_base + a->e_count > a->E)
    return op_fail(rec, WGLLM_ERR_INTERNAL, "matmul_q8 experts: shape M=%u N=%u K=%u np=%u k=%u E=%u experts %u+%u", M,
                   a->N, a->K, a->np, a->k, a->E, a->e_base, a->e_count);
  if (piece->n_parts || !q8mm_piece_ok(piece->type, piece->group))
    return op_fail(rec, WGLLM_ERR_UNSUPPORTED, "matmul_q8 experts: no integer-dot kernel for %s weights",
                   op_wtype_name(piece->type));
  wgllm_status s = op_check_weight(rec, "matmul_q8 experts", piece, a->e_count * rows_w, a->K);
  if (s) return s;
  op_moe_lists_layout l = op_moe_lists_layout_of(a->np, a->E, OP_MOE_TILE_M);
  uint32_t maxg = op_ctx(rec)->limits.maxComputeWorkgroupsPerDimension, gx = op_moe_tile_cols(a->N, a->glu);
  if (gx > maxg || l.max_tiles > maxg)
    return op_fail(rec, WGLLM_ERR_UNSUPPORTED, "matmul_q8 experts: grid %ux%u over the device limit %u", gx,
                   l.max_tiles, maxg);
  gpu_view q, ds;
  op_q8_act_views(rec, xq, M, a->K, &q, &ds);
  q8mm_params p = {.M = M,
                   .N = a->N,
                   .K = a->K,
                   .has_bias = bias.buf ? 1u : 0u,
                   .k_split = 1,
                   .k = a->k,
                   .np = a->np,
                   .E = a->E,
                   .rows_w = rows_w,
                   .glu = a->glu ? 1u : 0u,
                   .act = a->glu ? (uint32_t)a->act : 0u,
                   .x_pair = a->x_pair ? 1u : 0u,
                   .e_base = a->e_base,
                   .e_count = a->e_count,
                   .off_off = l.off,
                   .off_ent = l.ent,
                   .off_tile = l.tile,
                   .alpha = a->alpha,
                   .limit = a->limit};
  /* 64-row tiles (RM 4): the lists' tiles of OP_MOE_TILE_M pairs (the kernel's rowx holds 64) */
  _Static_assert(OP_MOE_TILE_M == 64, "matmul_q8's experts' tiles are 64 pairs (RM 4)");
  op_q8mm_plan pl = op_q8mm_default_plan();
  gpu_constant c[3] = {{"RM", 4.0}, {"CVT_ADD", pl.cvt_add ? 1.0 : 0.0}, {"G", (double)piece->group}};
  int has_scales = op_wtype_has_scales(piece->type);
  return op_dispatch(rec, &(op_dispatch_args){.kernel = K_MATMUL_Q8,
                                              .variant = q8mm_variant(piece->type, 1),
                                              .params = &p,
                                              .params_size = sizeof p,
                                              .consts = c,
                                              .n_consts = piece->type == OP_W_Q4 ? 3 : 2,
                                              .access = has_scales ? "rrrrwrr" : "rrrrwr",
                                              /* bias unread without has_bias, but the binding must exist; the
                                                 lists at binding 6, the scales after them */
                                              .bind = {q, ds, piece->data, bias.buf ? bias : q, y, lists,
                                                       has_scales ? piece->scales : (gpu_view){0}},
                                              .grid = {gx, l.max_tiles}});
}

wgllm_status op_matmul_q8(gpu_recorder *rec, gpu_view xq, const op_weight *w, gpu_view bias, gpu_view y, uint32_t M,
                          uint32_t N, uint32_t K) {
  return op_matmul_q8_plan(rec, xq, w, bias, y, M, N, K, NULL);
}

wgllm_status op_matmul_q8_plan(gpu_recorder *rec, gpu_view xq, const op_weight *w, gpu_view bias, gpu_view y,
                               uint32_t M, uint32_t N, uint32_t K, const op_q8mm_plan *plan) {
  op_q8mm_plan pl = plan ? *plan : op_q8mm_default_plan();
  if (pl.rm != 4 && pl.rm != 8) return op_fail(rec, WGLLM_ERR_INTERNAL, "matmul_q8: %u rows a thread (4 or 8)", pl.rm);
  if (!M || !N || !K) return op_fail(rec, WGLLM_ERR_INTERNAL, "matmul_q8: empty shape M=%u N=%u K=%u", M, N, K);
  if (K % 32 || (!w->n_parts && !q8mm_piece_ok(w->type, w->group)))
    return op_fail(rec, WGLLM_ERR_UNSUPPORTED, "matmul_q8: no integer-dot kernel for %s weights with K=%u",
                   op_wtype_name(w->type), K);
  gpu_view q, ds;
  op_q8_act_views(rec, xq, M, K, &q, &ds);
  wgllm_status s = WGLLM_OK;
  if (!w->n_parts) {
    s = op_check_weight(rec, "matmul_q8", w, N, K);
    return s ? s : q8mm_piece(rec, q, ds, w->type, w->group, w->data, w->scales, bias, y, M, N, K, N, 0, &pl, 1, 0);
  }
  uint32_t n0 = 0;
  for (uint32_t i = 0; !s && i < w->n_parts; i++) {
    const struct op_weight_part *pt = &w->part[i];
    op_weight pw = {pt->type, pt->data, pt->scales, pt->group, 0, {{{0}}}};
    if (!q8mm_piece_ok(pt->type, pt->group))
      return op_fail(rec, WGLLM_ERR_UNSUPPORTED, "matmul_q8: no integer-dot kernel for part %u (%s)", i,
                     op_wtype_name(pt->type));
    s = op_check_weight(rec, "matmul_q8", &pw, pt->rows, K);
    if (!s)
      s = q8mm_piece(rec, q, ds, pt->type, pt->group, pt->data, pt->scales, bias, y, M, pt->rows, K, N, n0, &pl, 1, 0);
    n0 += pt->rows;
  }
  if (!s && n0 != N) return op_fail(rec, WGLLM_ERR_INTERNAL, "matmul_q8: parts of %u rows for N=%u", n0, N);
  return s;
}

wgllm_status op_linear_fast(gpu_recorder *rec, gpu_view x, const op_fast_scratch *fs, const op_weight *w, gpu_view bias,
                            gpu_view y, uint32_t M, uint32_t N, uint32_t K) {
  gpu_view xq = fs->xq;
  if (xq.buf && M <= OP_GEMV_MAX_TOKENS && op_gemv_q8_supports(op_ctx(rec), w, M, K, NULL)) {
    op_gemv_opts go = {.n_tokens = M};
    return op_gemv_fast(rec, x, xq, w, bias, y, N, K, &go);
  }
  if (M >= OP_F16_MIN_ROWS && fs->x16.buf && fs->w16.buf && op_gemm_f16_supports(op_ctx(rec), M, N, K) &&
      gpu_view_bytes(fs->x16) >= op_f16_bytes(M, K) && gpu_view_bytes(fs->w16) >= op_f16_bytes(N, K)) {
    wgllm_status s = op_convert_f16(rec, x, fs->x16, M, K);
    if (!s) s = op_dequant_f16(rec, w, fs->w16, N, K);
    return s ? s : op_gemm_f16(rec, fs->x16, fs->w16, bias, y, M, N, K);
  }
  if (M > OP_GEMV_MAX_TOKENS && op_matmul_mma_supports(op_ctx(rec), w, M, K))
    return op_matmul_mma(rec, x, w, bias, y, M, N, K);
  if (!xq.buf || !op_matmul_q8_supports(op_ctx(rec), w, M, K)) return op_linear(rec, x, w, bias, y, M, N, K);
  wgllm_status s = op_quantize_q8(rec, x, xq, M, K);
  return s ? s : op_matmul_q8(rec, xq, w, bias, y, M, N, K);
}

/* ---- The integer-dot decode GEMV (kernels/gemv_q8.wgsl): 1..OP_GEMV_MAX_TOKENS tokens ---- */

typedef struct gemv_q8_params {
  uint32_t N, K, has_bias, accumulate, glu_half, act, n_off, y_stride, has_norm;
  float eps, w_offset;
  op_gemv_experts_fields moe;                    /* the experts' ("_moe") */
  uint32_t off_off, off_ent, off_tile, _p0, _p1; /* the lists' sections ("_moeg") */
} gemv_q8_params;
_Static_assert(sizeof(gemv_q8_params) == 96, "gemv_q8_params mirrors the Params block of kernels/gemv_q8.wgsl");

int op_gemv_q8_supports(const gpu_context *ctx, const op_weight *w, uint32_t M, uint32_t K, int *perm) {
  (void)ctx;
  if (M < 1 || M > OP_GEMV_MAX_TOKENS || K % 32) return 0;
  int q4 = 0, other = 0;
  for (uint32_t i = 0; i < (w->n_parts ? w->n_parts : 1); i++) {
    op_wtype t = w->n_parts ? w->part[i].type : w->type;
    uint32_t g = w->n_parts ? w->part[i].group : w->group;
    if (!q8mm_piece_ok(t, g)) return 0;
    if (t == OP_W_Q4)
      q4 = 1;
    else
      other = 1;
  }
  if (q4 && other) return 0; /* one x for every part: q4gsw wants its words evens first, the others in order */
  if (perm) *perm = q4;
  return 1;
}

/* The layouts, from bench_kernels --int8-sweep on the H200 (PERF.md): one token: a thread-row is one subgroup
   (32 lanes, or the subgroup if wider) with 8 thread-rows of 2 row pairs for GLU and 4 thread-rows of 2 rows for
   the wide LM head; the narrower projections split K over 128 lanes (as many as there are blocks, at least a
   subgroup), 2 thread-rows of 4 rows. Several tokens: GLU 2 thread-rows of 2 row pairs, the LM head 2 of 4, the
   others 64 lanes, 2 thread-rows of 4 rows; rows fewer while the R * NT sums would not fit. Without subgroups of
   one fixed size, the workgroup-memory reduction over up to 32 lanes, 64 threads. */
op_gemv_plan op_gemv_q8_choose_plan(const gpu_context *ctx, op_wtype type, uint32_t n_out, uint32_t K, int glu,
                                    uint32_t nt) {
  (void)type;
  op_gemv_plan p = {0};
  uint32_t sgs = ctx->subgroup_min, nkb = K / 32;
  if (!nt) nt = 1;
  int fixed_sg =
      ctx->has_subgroups && ctx->subgroup_min == ctx->subgroup_max && sgs >= 4 && sgs <= 64 && (sgs & (sgs - 1)) == 0;
  p.u = 1;
  if (fixed_sg) {
    uint32_t one = sgs > 32 ? sgs : 32, wide = 1;
    while (wide * 2 <= nkb && wide * 2 <= (nt > 1 ? 64u : 128u))
      wide *= 2;
    if (wide < one) wide = one;
    p.tuned = 1;
    if (glu)
      p.tk = one, p.tr = nt > 1 ? 2 : 8, p.r = 2;
    else if (n_out >= 32768)
      p.tk = one, p.tr = nt > 1 ? 2 : 4, p.r = nt > 1 ? 4 : 2;
    else
      p.tk = wide, p.tr = 2, p.r = 4;
    if (p.tk * p.tr > ctx->limits.maxComputeInvocationsPerWorkgroup || p.tk * p.tr / sgs > 32) p.tr = 1;
  } else {
    p.tk = 1;
    while (p.tk * 2 <= nkb && p.tk * 2 <= 32)
      p.tk *= 2;
    p.tr = 64 / p.tk;
    p.r = glu ? 2 : 4;
  }
  while (p.r > 1 && ((glu ? 2 : 1) * p.r * nt > 32 || p.r * nt > p.tk))
    p.r /= 2;
  return p;
}

/* whether plan pl runs nt tokens on this device (the kernel's sums, lanes and workgroup bounds) */
static int gemv_q8_plan_ok(const gpu_context *ctx, const op_gemv_plan *pl, int glu, uint32_t nt) {
  int sg = ctx->has_subgroups && ctx->subgroup_min == ctx->subgroup_max;
  uint32_t wg = pl->tk * pl->tr, rr = glu ? 2 * pl->r : pl->r;
  int ok = pl->tk && pl->tr && pl->r && (pl->tk & (pl->tk - 1)) == 0 && rr * nt <= 32 && pl->r * nt <= pl->tk &&
           wg <= ctx->limits.maxComputeInvocationsPerWorkgroup;
  if (ok && pl->tuned) ok = sg && pl->tk % ctx->subgroup_min == 0 && wg / ctx->subgroup_min <= 32;
  if (ok && !pl->tuned) ok = wg <= 64 && (pl->tr & (pl->tr - 1)) == 0;
  return ok;
}

int op_gemv_q8_fits(const gpu_context *ctx, uint32_t n_out, uint32_t K, int glu, uint32_t nt) {
  op_gemv_plan pl = op_gemv_q8_choose_plan(ctx, OP_W_Q8, n_out, K, glu, nt);
  return nt >= 1 && nt <= OP_GEMV_MAX_TOKENS && K % 32 == 0 && gemv_q8_plan_ok(ctx, &pl, glu, nt);
}

/* workgroup memory of the "_wq" variant for nt tokens of K: its x_q and factors, 1 / rms, the reduction array */
static uint64_t wq_bytes(int sg, uint32_t nt, uint32_t K) {
  return (uint64_t)nt * (K / 32) * 40 + 32 + (sg ? 4096 : 8192);
}

/* One dispatch over the N rows of a piece. wq: the kernel quantizes x itself (a: x f32, b: the norm's weight or x);
   else a: x_q, b: its factors. */
static wgllm_status gemv_q8_piece(gpu_recorder *rec, int wq, gpu_view a, gpu_view b, op_wtype type, uint32_t group,
                                  gpu_view data, gpu_view scales, gpu_view bias, gpu_view y, uint32_t N, uint32_t K,
                                  uint32_t n_off, uint32_t nt, uint32_t y_stride, const op_gemv_opts *o,
                                  const op_gemv_plan *plan, const op_gemv_experts_args *moe, gpu_view ids) {
  const gpu_context *ctx = op_ctx(rec);
  uint32_t out_rows = o->glu_half ? o->glu_half : N;
  op_gemv_plan pl = plan && plan->tk ? *plan : op_gemv_q8_choose_plan(ctx, type, out_rows, K, o->glu_half != 0, nt);
  int ok = gemv_q8_plan_ok(ctx, &pl, o->glu_half != 0, nt);
  if (ok && wq) ok = wq_bytes(pl.tuned, nt, K) <= ctx->limits.maxComputeWorkgroupStorageSize;
  if (!ok)
    return op_fail(rec, WGLLM_ERR_INTERNAL, "gemv_q8 %s: plan %s tk=%u tr=%u r=%u for %u tokens%s not valid here",
                   op_wtype_name(type), pl.tuned ? "tuned" : "general", pl.tk, pl.tr, pl.r, nt,
                   wq ? " quantizing in the workgroup" : "");
  gemv_q8_params p = {.N = N,
                      .K = K,
                      .has_bias = bias.buf ? 1u : 0u,
                      .accumulate = o->accumulate ? 1u : 0u,
                      .glu_half = o->glu_half,
                      .act = (uint32_t)o->act,
                      .n_off = n_off,
                      .y_stride = y_stride,
                      .has_norm = wq && o->norm_w.buf ? 1u : 0u,
                      .eps = o->eps,
                      .w_offset = o->norm_offset};
  op_moe_lists_layout lay = {0};
  if (moe) p.moe = op_gemv_experts_fields_of(moe, N);
  if (moe && moe->group_m) {
    lay = op_moe_lists_layout_of(moe->np, moe->E, moe->group_m);
    p.off_off = lay.off;
    p.off_ent = lay.ent;
    p.off_tile = lay.tile;
  }
  uint32_t nb = nt * (K / 32);
  gpu_constant c[9] = {{"R", (double)pl.r},
                       {"TK", (double)pl.tk},
                       {"TR", (double)pl.tr},
                       {"GLU", o->glu_half ? 1.0 : 0.0},
                       {"SGS", (double)(pl.tuned ? ctx->subgroup_min : 32)},
                       {"NT", (double)nt},
                       {"WQB", (double)nb},
                       {"WQW", (double)(2 * nb)},
                       {"G", (double)group}};
  gpu_constant cc[9];
  int nc = 0;
  for (int i = 0; i < 9; i++) {
    if (!wq && (i == 6 || i == 7)) continue;
    if (type != OP_W_Q4 && i == 8) continue;
    cc[nc++] = c[i];
  }
  char variant[32];
  snprintf(variant, sizeof variant, "%s%s%s", op_wtype_variant(type), pl.tuned ? "_sg" : "",
           moe && moe->group_m ? "_moeg"
           : moe               ? "_moe"
           : wq                ? "_wq"
                               : "");
  int has_scales = op_wtype_has_scales(type);
  uint32_t rows_per_wg = pl.tr * pl.r;
  op_dispatch_args d = {.kernel = K_GEMV_Q8,
                        .variant = variant,
                        .params = &p,
                        .params_size = sizeof p,
                        .consts = cc,
                        .n_consts = nc,
                        .access = has_scales ? "rrrrwr" : "rrrrw",
                        /* bias unused when has_bias = 0, but the binding must exist */
                        .bind = {a, b, data, bias.buf ? bias : a, y, has_scales ? scales : (gpu_view){0}},
                        .groups = (out_rows + rows_per_wg - 1) / rows_per_wg};
  if (moe) { /* a workgroup row a pair (or a group: the lists' worst case); the ids (or lists) at binding 6, the
                scales after them */
    d.access = has_scales ? "rrrrwrr" : "rrrrwr";
    d.bind[5] = ids;
    d.bind[6] = has_scales ? scales : (gpu_view){0};
    d.groups = 0;
    d.grid[0] = (out_rows + rows_per_wg - 1) / rows_per_wg;
    d.grid[1] = moe->group_m ? lay.max_tiles : moe->np;
    d.grid[2] = 1;
  }
  return op_dispatch(rec, &d);
}

/* the pieces of w, each its dispatch (a, b as gemv_q8_piece takes them) */
static wgllm_status gemv_q8_run(gpu_recorder *rec, int wq, gpu_view a, gpu_view b, const op_weight *w, gpu_view bias,
                                gpu_view y, uint32_t N, uint32_t K, const op_gemv_opts *o, const op_gemv_plan *plan) {
  uint32_t T = o->n_tokens ? o->n_tokens : 1, ys = o->y_stride ? o->y_stride : (o->glu_half ? o->glu_half : N);
  if (!op_gemv_q8_supports(op_ctx(rec), w, T, K, NULL))
    return op_fail(rec, WGLLM_ERR_UNSUPPORTED, "gemv_q8: no integer-dot GEMV for %s weights with K=%u and %u tokens",
                   op_wtype_name(w->type), K, T);
  if (o->glu_half && (N != 2 * o->glu_half || w->n_parts))
    return op_fail(rec, WGLLM_ERR_INTERNAL, "gemv_q8: GLU over %u rows with %u gate rows in %u parts", N, o->glu_half,
                   w->n_parts);
  wgllm_status s = WGLLM_OK;
  if (!w->n_parts) {
    s = op_check_weight(rec, "gemv_q8", w, N, K);
    return s ? s
             : gemv_q8_piece(rec, wq, a, b, w->type, w->group, w->data, w->scales, bias, y, N, K, 0, T, ys, o, plan,
                             NULL, (gpu_view){0});
  }
  uint32_t n0 = 0;
  for (uint32_t i = 0; !s && i < w->n_parts; i++) {
    const struct op_weight_part *pt = &w->part[i];
    op_weight pw = {pt->type, pt->data, pt->scales, pt->group, 0, {{{0}}}};
    s = op_check_weight(rec, "gemv_q8", &pw, pt->rows, K);
    if (!s)
      s = gemv_q8_piece(rec, wq, a, b, pt->type, pt->group, pt->data, pt->scales, bias, y, pt->rows, K, n0, T, ys, o,
                        plan, NULL, (gpu_view){0});
    n0 += pt->rows;
  }
  if (!s && n0 != N) return op_fail(rec, WGLLM_ERR_INTERNAL, "gemv_q8: parts of %u rows for N=%u", n0, N);
  return s;
}

wgllm_status op_gemv_q8(gpu_recorder *rec, gpu_view xq, const op_weight *w, gpu_view bias, gpu_view y, uint32_t N,
                        uint32_t K, const op_gemv_opts *o) {
  return op_gemv_q8_planned(rec, xq, w, bias, y, N, K, o, NULL);
}

wgllm_status op_gemv_q8_planned(gpu_recorder *rec, gpu_view xq, const op_weight *w, gpu_view bias, gpu_view y,
                                uint32_t N, uint32_t K, const op_gemv_opts *o, const op_gemv_plan *plan) {
  op_gemv_opts none = {0};
  if (!o) o = &none;
  if (o->norm_w.buf)
    return op_fail(rec, WGLLM_ERR_INTERNAL, "gemv_q8: the norm belongs to the quantization (op_quantize_q8_rows)");
  gpu_view q, ds;
  op_q8_act_views(rec, xq, o->n_tokens ? o->n_tokens : 1, K, &q, &ds);
  return gemv_q8_run(rec, 0, q, ds, w, bias, y, N, K, o, plan);
}

wgllm_status op_gemv_q8_experts(gpu_recorder *rec, gpu_view xq, const op_weight *piece, gpu_view bias, gpu_view ids,
                                gpu_view y, const op_gemv_experts_args *a) {
  const gpu_context *ctx = op_ctx(rec);
  uint32_t nt = a->group_m ? a->group_m : 1;
  if (!op_gemv_q8_supports(ctx, piece, nt, a->K, NULL) || piece->n_parts)
    return op_fail(rec, WGLLM_ERR_INTERNAL, "gemv_q8 experts: %s weights with K=%u, %u pairs a row",
                   op_wtype_name(piece->type), a->K, nt);
  op_moe_lists_layout lay = op_moe_lists_layout_of(a->np, a->E, a->group_m);
  uint32_t rows = a->group_m ? lay.max_tiles : a->np;
  if (rows > ctx->limits.maxComputeWorkgroupsPerDimension)
    return op_fail(rec, WGLLM_ERR_UNSUPPORTED, "gemv_q8 experts: %u %s over the grid limit", rows,
                   a->group_m ? "groups" : "pairs");
  uint64_t want = a->group_m ? (uint64_t)lay.words * 4 : (uint64_t)a->np * 4;
  if (gpu_view_bytes(ids) < want)
    return op_fail(rec, WGLLM_ERR_INTERNAL, "gemv_q8 experts: %s of %llu bytes, %llu wanted",
                   a->group_m ? "lists" : "ids", (unsigned long long)gpu_view_bytes(ids), (unsigned long long)want);
  if (a->norm_w.buf || a->logits.buf || a->combine_w.buf || !a->k || a->np % a->k)
    return op_fail(rec, WGLLM_ERR_INTERNAL,
                   "gemv_q8 experts: the norm is the quantizer's, the routing and the combine the exact GEMV's "
                   "(%u pairs of %u)",
                   a->np, a->k);
  op_gemv_opts o = {.glu_half = a->glu ? a->N : 0, .act = (op_act)a->act};
  gpu_view q, ds;
  op_q8_act_views(rec, xq, a->x_pair ? a->np : a->np / a->k, a->K, &q, &ds);
  return gemv_q8_piece(rec, 0, q, ds, piece->type, piece->group, piece->data, piece->scales, bias, y,
                       a->glu ? 2 * a->N : a->N, a->K, 0, nt, 0, &o, NULL, a, ids);
}

int op_gemv_q8_quantizes_in_workgroup(const gpu_context *ctx, uint32_t M, uint32_t K) {
  int sg = ctx->has_subgroups && ctx->subgroup_min == ctx->subgroup_max;
  return wq_bytes(sg, M, K) <= ctx->limits.maxComputeWorkgroupStorageSize;
}

/* ---- The small-M GEMM of batched decode: split-K kernels/matmul_q8.wgsl, then kernels/matmul_q8_sum.wgsl ---- */

typedef struct q8sum_params {
  uint32_t M, N, S, part_stride, glu_half, act, has_bias, accumulate, y_stride, _p0, _p1, _p2;
} q8sum_params;
_Static_assert(sizeof(q8sum_params) == 48, "q8sum_params mirrors the Params block of kernels/matmul_q8_sum.wgsl");

int op_q8_small_supports(const gpu_context *ctx, const op_weight *w, uint32_t M, uint32_t K, int glu) {
  (void)ctx;
  if (M < OP_Q8_SMALL_MIN || M > OP_GEMV_MAX_BATCH || K % 32 || (glu && w->n_parts)) return 0;
  for (uint32_t i = 0; i < (w->n_parts ? w->n_parts : 1); i++)
    if (!q8mm_piece_ok(w->n_parts ? w->part[i].type : w->type, w->n_parts ? w->part[i].group : w->group)) return 0;
  return 1;
}

uint64_t op_q8_small_part_bytes(uint32_t M, uint32_t N) { return 4ull * M * N * 4; }

op_q8_small_plan op_q8_small_choose(uint32_t M, uint32_t N, uint32_t K, uint64_t part_bytes) {
  /* the H200's sweep (docs/perf/24-inflight): 32-row tiles beat 64-row ones at 64 tokens on every projection; the
     best slices keep about 256-1024 workgroups, slices of 16 blocks where K has 128 or more (the 8B's) and up to 8
     slices where it has fewer (the 1B's 64 blocks: 8 slices of 8) */
  op_q8_small_plan p = {M <= 16 ? 1u : 2u, 0};
  if (M < OP_Q8_SMALL_FROM) return p;
  uint64_t tiles = (uint64_t)((N + 127) / 128) * ((M + 16 * p.rm - 1) / (16 * p.rm));
  uint64_t blocks = K / 32, most = blocks / 16 > 8 ? blocks / 16 : 8, room = part_bytes / ((uint64_t)M * N * 4);
  uint64_t want = (768 + tiles - 1) / tiles;
  if (most > blocks) most = blocks;
  if (most < 1) most = 1;
  if (want > most) want = most;
  if (want > room) want = room;
  if (want > 16) want = 16;
  p.split = (uint32_t)want;
  return p;
}

static wgllm_status q8_small(gpu_recorder *rec, gpu_view x, gpu_view xq, const op_weight *w, gpu_view bias, gpu_view y,
                             uint32_t N, uint32_t K, const op_gemv_opts *o, const op_gemv_plan *plan) {
  uint32_t T = o->n_tokens, ys = o->y_stride ? o->y_stride : (o->glu_half ? o->glu_half : N);
  op_q8_small_plan pl = op_q8_small_choose(T, N, K, gpu_view_bytes(o->part));
  if (plan && plan->mm_rm) pl.rm = plan->mm_rm;
  if (plan && plan->mm_split) pl.split = plan->mm_split;
  if (pl.rm != 1 && pl.rm != 2 && pl.rm != 4)
    return op_fail(rec, WGLLM_ERR_INTERNAL, "gemm_q8_small: %u rows a thread (1, 2 or 4)", pl.rm);
  if (!pl.split || (uint64_t)pl.split * T * N * 4 > gpu_view_bytes(o->part) || pl.split > K / 32)
    return op_fail(rec, WGLLM_ERR_INTERNAL, "gemm_q8_small: %u K slices of %u x %u in %llu bytes (K=%u)", pl.split, T,
                   N, (unsigned long long)gpu_view_bytes(o->part), K);
  if (o->glu_half && (N != 2 * o->glu_half || w->n_parts))
    return op_fail(rec, WGLLM_ERR_INTERNAL, "gemm_q8_small: GLU over %u rows with %u gate rows in %u parts", N,
                   o->glu_half, w->n_parts);
  op_q8_rows_opts qo = {o->norm_w, o->eps, o->norm_offset, 0};
  wgllm_status s = op_quantize_q8_rows(rec, x, xq, T, K, &qo);
  if (s) return s;
  gpu_view q, ds;
  op_q8_act_views(rec, xq, T, K, &q, &ds);
  op_q8mm_plan mp = {pl.rm, 1};
  uint32_t stride = T * N;
  if (!w->n_parts) {
    s = op_check_weight(rec, "gemm_q8_small", w, N, K);
    if (!s)
      s = q8mm_piece(rec, q, ds, w->type, w->group, w->data, w->scales, (gpu_view){0}, o->part, T, N, K, N, 0, &mp,
                     pl.split, stride);
  } else {
    uint32_t n0 = 0;
    for (uint32_t i = 0; !s && i < w->n_parts; i++) {
      const struct op_weight_part *pt = &w->part[i];
      op_weight pw = {pt->type, pt->data, pt->scales, pt->group, 0, {{{0}}}};
      s = op_check_weight(rec, "gemm_q8_small", &pw, pt->rows, K);
      if (!s)
        s = q8mm_piece(rec, q, ds, pt->type, pt->group, pt->data, pt->scales, (gpu_view){0}, o->part, T, pt->rows, K, N,
                       n0, &mp, pl.split, stride);
      n0 += pt->rows;
    }
    if (!s && n0 != N) return op_fail(rec, WGLLM_ERR_INTERNAL, "gemm_q8_small: parts of %u rows for N=%u", n0, N);
  }
  if (s) return s;
  uint32_t n_out = o->glu_half ? o->glu_half : N;
  q8sum_params p = {.M = T,
                    .N = N,
                    .S = pl.split,
                    .part_stride = stride,
                    .glu_half = o->glu_half,
                    .act = (uint32_t)o->act,
                    .has_bias = bias.buf ? 1u : 0u,
                    .accumulate = o->accumulate ? 1u : 0u,
                    .y_stride = ys};
  gpu_view pv = {o->part.buf, o->part.offset, (uint64_t)pl.split * stride * 4};
  return op_dispatch(
      rec,
      &(op_dispatch_args){.kernel = K_MATMUL_Q8_SUM,
                          .variant = V_MATMUL_Q8_SUM_F32,
                          .params = &p,
                          .params_size = sizeof p,
                          .access = "rrw",
                          /* bias unused when has_bias = 0, but the binding must exist */
                          .bind = {pv, bias.buf ? bias : pv, {y.buf, y.offset, ((uint64_t)(T - 1) * ys + n_out) * 4}},
                          .grid = {(n_out + 255) / 256, T}});
}

wgllm_status op_gemv_fast(gpu_recorder *rec, gpu_view x, gpu_view xq, const op_weight *w, gpu_view bias, gpu_view y,
                          uint32_t N, uint32_t K, const op_gemv_opts *o) {
  return op_gemv_fast_planned(rec, x, xq, w, bias, y, N, K, o, NULL);
}

wgllm_status op_gemv_fast_planned(gpu_recorder *rec, gpu_view x, gpu_view xq, const op_weight *w, gpu_view bias,
                                  gpu_view y, uint32_t N, uint32_t K, const op_gemv_opts *o, const op_gemv_plan *plan) {
  op_gemv_opts none = {0};
  if (!o) o = &none;
  uint32_t T = o->n_tokens ? o->n_tokens : 1;
  int perm = 0;
  /* a plan that only chose the quantization is not one for the exact kernel */
  const op_gemv_plan *exact_plan = plan && plan->tk ? plan : NULL;
  if (o->part.buf && xq.buf && op_q8_small_supports(op_ctx(rec), w, T, K, o->glu_half != 0) &&
      (op_q8_small_choose(T, N, K, gpu_view_bytes(o->part)).split || (plan && plan->mm_split)))
    return q8_small(rec, x, xq, w, bias, y, N, K, o, plan);
  if (T > OP_GEMV_MAX_TOKENS && T <= OP_GEMV_MAX_BATCH &&
      op_gemv_q8_supports(op_ctx(rec), w, OP_GEMV_MAX_TOKENS, K, &perm)) {
    /* more tokens than a dispatch takes: OP_GEMV_MAX_TOKENS at a time, each its own rows of x and y (quantized
       into xq in turn: the dispatches run in order), each reading the weights again (without o->part: the small-M
       GEMM above reads them once) */
    uint32_t ys = o->y_stride ? o->y_stride : (o->glu_half ? o->glu_half : N);
    uint64_t align =
        op_ctx(rec)->limits.minStorageBufferOffsetAlignment ? op_ctx(rec)->limits.minStorageBufferOffsetAlignment : 256;
    wgllm_status s = WGLLM_OK;
    for (uint32_t t0 = 0; !s && t0 < T; t0 += OP_GEMV_MAX_TOKENS) {
      uint64_t xo = (uint64_t)t0 * K * 4, yo = (uint64_t)t0 * ys * 4;
      if (xo % align || yo % align)
        return op_fail(rec, WGLLM_ERR_UNSUPPORTED,
                       "gemv_fast: token %u's rows (K=%u, y stride %u) do not start on a binding offset", t0, K, ys);
      op_gemv_opts oc = *o;
      oc.n_tokens = T - t0 < OP_GEMV_MAX_TOKENS ? T - t0 : OP_GEMV_MAX_TOKENS;
      oc.y_stride = ys;
      s = op_gemv_fast_planned(rec, (gpu_view){x.buf, x.offset + xo, 0}, xq, w, bias,
                               (gpu_view){y.buf, y.offset + yo, 0}, N, K, &oc, plan);
    }
    return s;
  }
  if (!op_gemv_q8_supports(op_ctx(rec), w, T, K, &perm))
    return op_gemv_planned(rec, x, w, bias, y, N, K, o, exact_plan);
  /* the kernel quantizes x itself (one dispatch) where that fits its workgroup memory and costs less than the
     quantizer's dispatch: every workgroup quantizes all of x, about 3.2 us of the H200's time a million elements so
     quantized (workgroups x tokens x K) against 4-8 us for the quantizer, so up to 2.5 million (bench_kernels
     --int8, PERF.md: the 1B's projections and the 8B's output projection, not the 8B's others, LM heads or
     batches); else the quantizer runs first into xq */
  uint32_t how = plan ? plan->q8_quant : 0;
  int wq = how == 1;
  if (how == 0 && op_gemv_q8_quantizes_in_workgroup(op_ctx(rec), T, K)) {
    uint32_t out = o->glu_half ? o->glu_half : N;
    op_gemv_plan pl =
        plan && plan->tk ? *plan : op_gemv_q8_choose_plan(op_ctx(rec), w->type, out, K, o->glu_half != 0, T);
    uint64_t wgs = (out + pl.tr * pl.r - 1) / (pl.tr * pl.r);
    wq = wgs * T * K <= 2500000;
  }
  if (wq) {
    gpu_view xv = {x.buf, x.offset, (uint64_t)T * K * 4};
    return gemv_q8_run(rec, 1, xv, o->norm_w.buf ? o->norm_w : xv, w, bias, y, N, K, o, plan);
  }
  if (!xq.buf) return op_gemv_planned(rec, x, w, bias, y, N, K, o, exact_plan);
  op_q8_rows_opts qo = {o->norm_w, o->eps, o->norm_offset, perm};
  wgllm_status s = op_quantize_q8_rows(rec, x, xq, T, K, &qo);
  if (s) return s;
  op_gemv_opts go = *o;
  go.norm_w = (gpu_view){0};
  return op_gemv_q8_planned(rec, xq, w, bias, y, N, K, &go, plan);
}
