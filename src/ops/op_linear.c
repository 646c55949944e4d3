/* Linear layers: the GEMV route (kernels/matvec.wgsl) for decode and the tiled GEMM route
   (kernels/matmul.wgsl) for prefill, each with f32, f16, q4gsw and q8 weight variants. */
#include "ops.h"
#include <stdlib.h>

typedef struct linear_params {
  uint32_t M, N, K, has_bias, y_stride, n_off, _p0, _p1;
} linear_params;
_Static_assert(sizeof(linear_params) == 32,
               "linear_params mirrors the Params block of kernels/matvec.wgsl and kernels/matmul.wgsl");

/* One dispatch over rows [n_off, n_off + N) of the output (y rows of y_stride), weight data and scales in wd/ws. */
static wgllm_status linear_piece(gpu_recorder *rec, const char *kernel, gpu_view x, const op_weight *w, gpu_view wd,
                                 gpu_view ws, gpu_view bias, gpu_view y, uint32_t M, uint32_t N, uint32_t K,
                                 uint32_t y_stride, uint32_t n_off, uint32_t gx, uint32_t gy) {
  uint32_t maxg = op_ctx(rec)->limits.maxComputeWorkgroupsPerDimension;
  if (gx > maxg || gy > maxg)
    return op_fail(rec, WGLLM_ERR_UNSUPPORTED, "%s: grid %ux%u over the device limit", kernel, gx, gy);
  linear_params p = {M, N, K, bias.buf ? 1u : 0u, y_stride, n_off, 0, 0};
  gpu_constant c = {"G", (double)w->group};
  gpu_dispatch_desc d = {
      .kernel = kernel, .variant = op_wtype_variant(w->type), .params = &p, .params_size = sizeof p, .n_bind = 4};
  if (w->type == OP_W_Q4) {
    d.consts = &c;
    d.n_consts = 1;
  }
  d.bind[0] = x;
  d.bind[1] = wd;
  d.bind[2] = bias.buf ? bias : x; /* unused when has_bias = 0, but the binding must exist */
  d.bind[3] = y;
  if (w->type == OP_W_Q4 || w->type == OP_W_Q8) {
    d.bind[4] = ws;
    d.n_bind = 5;
  }
  d.grid[0] = gx;
  d.grid[1] = gy;
  d.grid[2] = 1;
  return gpu_record(rec, &d);
}

/* tile: output rows a workgroup covers along N (8 for the GEMV, 64 for the GEMM); gy: the grid along M */
static wgllm_status linear(gpu_recorder *rec, const char *kernel, gpu_view x, const op_weight *w, gpu_view bias,
                           gpu_view y, uint32_t M, uint32_t N, uint32_t K, uint32_t tile, uint32_t gy) {
  if (!M || !N || !K) return op_fail(rec, WGLLM_ERR_INTERNAL, "%s: empty shape M=%u N=%u K=%u", kernel, M, N, K);
  wgllm_status s = WGLLM_OK;
  if (!w->n_parts) s = op_check_weight(rec, kernel, w, N, K);
  if (s) return s;
  if (!w->n_parts)
    return linear_piece(rec, kernel, x, w, w->data, w->scales, bias, y, M, N, K, N, 0, (N + tile - 1) / tile, gy);
  uint32_t n0 = 0;
  for (uint32_t i = 0; !s && i < w->n_parts; i++) {
    uint32_t r = w->part[i].rows;
    op_weight pw = {w->part[i].type, w->part[i].data, w->part[i].scales, w->part[i].group, 0, {{{0}}}};
    s = op_check_weight(rec, kernel, &pw, r, K);
    if (!s)
      s = linear_piece(rec, kernel, x, &pw, pw.data, pw.scales, bias, y, M, r, K, N, n0, (r + tile - 1) / tile, gy);
    n0 += r;
  }
  if (!s && n0 != N) return op_fail(rec, WGLLM_ERR_INTERNAL, "%s: parts of %u rows for N=%u", kernel, n0, N);
  return s;
}

int op_gemv_q4_supports(const gpu_context *ctx, const op_weight *w, uint32_t M, uint32_t K, int *use_subgroups) {
  if (w->type != OP_W_Q4 || M != 1 || K % 32 || w->n_parts) return 0; /* split weights take op_linear */
  *use_subgroups = ctx->has_subgroups && ctx->subgroup_min == ctx->subgroup_max;
  return 1;
}

static uint32_t pow2_at_most(uint32_t v, uint32_t cap) {
  uint32_t p = 1;
  while (p * 2 <= v && p * 2 <= cap)
    p *= 2;
  return p;
}

/* The predicate of the specialised kernel: subgroups of one fixed size of 8..64 lanes (a thread-row is whole
   subgroups), K a multiple of 1024 (32 lanes x 4 unrolled steps x 8 nibbles: no lane idles), a group of 32, 64
   or 128, at least 64 output rows, and 256-thread workgroups. Everything else takes the general kernel, whole.
   The layouts are the fastest of bench_kernels --sweep on the H200 (PERF.md): 4 row sums a lane in every case;
   the MLP's gate/up rows (GLU) and the wide LM head split K over one subgroup with several subgroups a
   workgroup; the narrower projections split K over 128 lanes. */
op_gemv_plan op_gemv_q4_plan(const gpu_context *ctx, uint32_t n_out, uint32_t K, uint32_t group, int glu) {
  op_gemv_plan p = {0};
  uint32_t words = K / 8, sgs = ctx->subgroup_min;
  int fixed_sg =
      ctx->has_subgroups && ctx->subgroup_min == ctx->subgroup_max && sgs >= 8 && sgs <= 64 && (sgs & (sgs - 1)) == 0;
  if (fixed_sg && K % 1024 == 0 && (group == 32 || group == 64 || group == 128) && n_out >= 64 &&
      ctx->limits.maxComputeInvocationsPerWorkgroup >= 256) {
    p.tuned = 1;
    uint32_t one = sgs > 32 ? sgs : 32; /* one thread-row = one subgroup (32 lanes, or the subgroup if wider) */
    if (glu) {
      p.tk = one, p.tr = 8, p.r = 2, p.u = 4;
    } else if (n_out >= 32768) {
      p.tk = one, p.tr = 4, p.r = 8, p.u = 2;
    } else {
      p.tk = 128, p.tr = 2, p.r = 4, p.u = 4;
    }
    if (p.tk * p.tr > ctx->limits.maxComputeInvocationsPerWorkgroup || p.tk * p.tr / sgs > 32) p.tr = 1;
    return p;
  }
  /* general: up to 128 threads along K (no more than there are chunks), the rest of 128 as thread-rows, at
     most 16 rows a thread-row and fewer while there would be under 512 workgroups */
  p.tk = pow2_at_most(words, 128);
  p.tr = 128 / p.tk;
  p.r = p.tk < 16 ? p.tk : 16;
  while (p.r > 1 && (n_out + p.tr * p.r - 1) / (p.tr * p.r) < 512)
    p.r /= 2;
  (void)glu;
  return p;
}

typedef struct gemv_params {
  uint32_t N, K, has_bias, accumulate, has_norm;
  float eps, w_offset;
  uint32_t glu_half, act, _p0, _p1, _p2;
} gemv_params;
_Static_assert(sizeof(gemv_params) == 48, "gemv_params mirrors the Params block of kernels/gemv_q4.wgsl");

wgllm_status op_gemv_q4(gpu_recorder *rec, gpu_view x, const op_weight *w, gpu_view bias, gpu_view y, uint32_t N,
                        uint32_t K, const op_gemv_opts *o) {
  int sg;
  op_gemv_opts none = {0};
  if (!o) o = &none;
  const gpu_context *ctx = op_ctx(rec);
  if (!op_gemv_q4_supports(ctx, w, 1, K, &sg))
    return op_fail(rec, WGLLM_ERR_UNSUPPORTED, "gemv_q4: needs q4gsw weights and K %% 32 == 0 (K=%u)", K);
  wgllm_status s = op_check_weight(rec, "gemv_q4", w, N, K);
  if (s) return s;
  if (o->glu_half && N != 2 * o->glu_half)
    return op_fail(rec, WGLLM_ERR_INTERNAL, "gemv_q4: GLU over %u rows with %u gate rows", N, o->glu_half);
  uint32_t out_rows = o->glu_half ? o->glu_half : N;
  op_gemv_plan pl = o->plan ? *o->plan : op_gemv_q4_plan(ctx, out_rows, K, w->group, o->glu_half != 0);
  uint32_t wg = pl.tk * pl.tr, rr = o->glu_half ? 2 * pl.r : pl.r, u = pl.u ? pl.u : 4;
  /* the kernel's limits: row sums in registers, one finishing thread per row, its workgroup arrays */
  int ok = pl.tk && pl.tr && pl.r && (pl.tk & (pl.tk - 1)) == 0 && rr <= 32 && pl.r <= pl.tk && u <= 4 &&
           wg <= ctx->limits.maxComputeInvocationsPerWorkgroup;
  if (ok && pl.tuned) ok = sg && pl.tk % ctx->subgroup_min == 0 && wg / ctx->subgroup_min <= 32;
  if (ok && !pl.tuned) ok = wg <= 128;
  if (!ok)
    return op_fail(rec, WGLLM_ERR_INTERNAL, "gemv_q4: plan %s tk=%u tr=%u r=%u u=%u not valid on this device",
                   pl.tuned ? "tuned" : "general", pl.tk, pl.tr, pl.r, u);
  gemv_params p = {N,
                   K,
                   bias.buf ? 1u : 0u,
                   o->accumulate ? 1u : 0u,
                   o->norm_w.buf ? 1u : 0u,
                   o->eps,
                   o->norm_offset,
                   o->glu_half,
                   (uint32_t)o->act,
                   0,
                   0,
                   0};
  gpu_constant c[8] = {{"PROBE", (double)pl.probe},
                       {"G", (double)w->group},
                       {"R", (double)pl.r},
                       {"TK", (double)pl.tk},
                       {"TR", (double)pl.tr},
                       {"U", (double)u},
                       {"GLU", o->glu_half ? 1.0 : 0.0},
                       {"SGS", (double)(pl.tuned ? ctx->subgroup_min : 32)}};
  gpu_dispatch_desc d = {.kernel = K_GEMV_Q4,
                         .variant = pl.tuned ? V_GEMV_Q4_SG : V_GEMV_Q4_WG,
                         .params = &p,
                         .params_size = sizeof p,
                         .n_bind = 6,
                         .consts = c,
                         .n_consts = 8};
  d.bind[0] = x;
  d.bind[1] = w->data;
  d.bind[2] = bias.buf ? bias : x;
  d.bind[3] = y;
  d.bind[4] = w->scales;
  d.bind[5] = o->norm_w.buf ? o->norm_w : x;
  uint32_t rows_per_wg = pl.tr * pl.r;
  op_grid_1d(rec, (out_rows + rows_per_wg - 1) / rows_per_wg, d.grid);
  return gpu_record(rec, &d);
}

wgllm_status op_matvec_generic(gpu_recorder *rec, gpu_view x, const op_weight *w, gpu_view bias, gpu_view y, uint32_t M,
                               uint32_t N, uint32_t K) {
  return linear(rec, K_MATVEC, x, w, bias, y, M, N, K, 8, M);
}

wgllm_status op_matvec(gpu_recorder *rec, gpu_view x, const op_weight *w, gpu_view bias, gpu_view y, uint32_t M,
                       uint32_t N, uint32_t K) {
  int sg;
  if (op_gemv_q4_supports(op_ctx(rec), w, M, K, &sg)) return op_gemv_q4(rec, x, w, bias, y, N, K, NULL);
  return op_matvec_generic(rec, x, w, bias, y, M, N, K);
}

wgllm_status op_matmul(gpu_recorder *rec, gpu_view x, const op_weight *w, gpu_view bias, gpu_view y, uint32_t M,
                       uint32_t N, uint32_t K) {
  return linear(rec, K_MATMUL, x, w, bias, y, M, N, K, 64, (M + 63) / 64);
}

wgllm_status op_linear(gpu_recorder *rec, gpu_view x, const op_weight *w, gpu_view bias, gpu_view y, uint32_t M,
                       uint32_t N, uint32_t K) {
  if (M <= 4) return op_matvec(rec, x, w, bias, y, M, N, K);
  return op_matmul(rec, x, w, bias, y, M, N, K);
}
