/* Linear layers: the GEMV route (kernels/matvec.wgsl) for decode and the tiled GEMM route
   (kernels/matmul.wgsl) for prefill, each with f32, f16, q4gsw and q8 weight variants. */
#include "ops.h"
#include <stdlib.h>

typedef struct linear_params {
  uint32_t M, N, K, has_bias;
} linear_params;

/* Checks a weight's shape constraints; shared by the linear and embedding ops. */
wgllm_status op_check_weight(gpu_recorder *rec, const char *who, const op_weight *w, uint32_t N, uint32_t K) {
  if (!w->data.buf) return op_fail(rec, WGLLM_ERR_INTERNAL, "%s: weight has no data", who);
  if (w->type == OP_W_Q4) {
    if (w->group != 32 && w->group != 64 && w->group != 128)
      return op_fail(rec, WGLLM_ERR_UNSUPPORTED, "%s: q4gsw group %u (32, 64 or 128 supported)", who, w->group);
    if (K % w->group)
      return op_fail(rec, WGLLM_ERR_UNSUPPORTED, "%s: K=%u not a multiple of the q4gsw group %u", who, K, w->group);
    if (!w->scales.buf) return op_fail(rec, WGLLM_ERR_INTERNAL, "%s: q4gsw weight without scales", who);
  }
  if (w->type == OP_W_Q8) {
    if (K % 32) return op_fail(rec, WGLLM_ERR_UNSUPPORTED, "%s: K=%u not a multiple of 32 for q8", who, K);
    if (!w->scales.buf) return op_fail(rec, WGLLM_ERR_INTERNAL, "%s: q8 weight without scales", who);
  }
  (void)N;
  return WGLLM_OK;
}

static wgllm_status linear(gpu_recorder *rec, const char *kernel, gpu_view x, const op_weight *w, gpu_view bias,
                           gpu_view y, uint32_t M, uint32_t N, uint32_t K, uint32_t gx, uint32_t gy) {
  if (!M || !N || !K) return op_fail(rec, WGLLM_ERR_INTERNAL, "%s: empty shape M=%u N=%u K=%u", kernel, M, N, K);
  wgllm_status s = op_check_weight(rec, kernel, w, N, K);
  if (s) return s;
  uint32_t maxg = op_ctx(rec)->limits.maxComputeWorkgroupsPerDimension;
  if (gx > maxg || gy > maxg)
    return op_fail(rec, WGLLM_ERR_UNSUPPORTED, "%s: grid %ux%u over the device limit", kernel, gx, gy);
  linear_params p = {M, N, K, bias.buf ? 1u : 0u};
  gpu_constant c = {"G", (double)w->group};
  gpu_dispatch_desc d = {
      .kernel = kernel, .variant = op_wtype_variant(w->type), .params = &p, .params_size = sizeof p, .n_bind = 4};
  if (w->type == OP_W_Q4) {
    d.consts = &c;
    d.n_consts = 1;
  }
  d.bind[0] = x;
  d.bind[1] = w->data;
  d.bind[2] = bias.buf ? bias : x; /* unused when has_bias = 0, but the binding must exist */
  d.bind[3] = y;
  if (w->type == OP_W_Q4 || w->type == OP_W_Q8) {
    d.bind[4] = w->scales;
    d.n_bind = 5;
  }
  d.grid[0] = gx;
  d.grid[1] = gy;
  d.grid[2] = 1;
  return gpu_record(rec, &d);
}

int op_gemv_q4_supports(const gpu_context *ctx, const op_weight *w, uint32_t M, uint32_t K, int *use_subgroups) {
  if (w->type != OP_W_Q4 || M != 1 || K % 32) return 0;
  *use_subgroups = ctx->has_subgroups && ctx->subgroup_min == 32 && ctx->subgroup_max == 32;
  return 1;
}

typedef struct gemv_params {
  uint32_t N, K, has_bias, accumulate, has_norm;
  float eps, w_offset;
  uint32_t glu_half, act, _p0, _p1, _p2;
} gemv_params;

wgllm_status op_gemv_q4(gpu_recorder *rec, gpu_view x, const op_weight *w, gpu_view bias, gpu_view y, uint32_t N,
                        uint32_t K, const op_gemv_opts *o) {
  int sg;
  op_gemv_opts none = {0};
  if (!o) o = &none;
  if (!op_gemv_q4_supports(op_ctx(rec), w, 1, K, &sg))
    return op_fail(rec, WGLLM_ERR_UNSUPPORTED, "gemv_q4: needs q4gsw weights and K %% 32 == 0 (K=%u)", K);
  wgllm_status s = op_check_weight(rec, "gemv_q4", w, N, K);
  if (s) return s;
  if (o->glu_half && N != 2 * o->glu_half)
    return op_fail(rec, WGLLM_ERR_INTERNAL, "gemv_q4: GLU over %u rows with %u gate rows", N, o->glu_half);
  uint32_t out_rows = o->glu_half ? o->glu_half : N;
  /* rows per workgroup: enough workgroups to fill the GPU, at most 16 (GLU keeps 2 x 16 accumulators) */
  uint32_t rows = 16;
  while (rows > 2 && (out_rows + rows - 1) / rows < 512)
    rows /= 2;
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
  gpu_constant c[3] = {{"G", (double)w->group}, {"ROWS", (double)rows}, {"GLU", o->glu_half ? 1.0 : 0.0}};
  gpu_dispatch_desc d = {.kernel = "gemv_q4",
                         .variant = sg ? "sg" : "wg",
                         .params = &p,
                         .params_size = sizeof p,
                         .n_bind = 6,
                         .consts = c,
                         .n_consts = 3};
  d.bind[0] = x;
  d.bind[1] = w->data;
  d.bind[2] = bias.buf ? bias : x;
  d.bind[3] = y;
  d.bind[4] = w->scales;
  d.bind[5] = o->norm_w.buf ? o->norm_w : x;
  op_grid_1d(rec, (out_rows + rows - 1) / rows, d.grid);
  return gpu_record(rec, &d);
}

wgllm_status op_matvec(gpu_recorder *rec, gpu_view x, const op_weight *w, gpu_view bias, gpu_view y, uint32_t M,
                       uint32_t N, uint32_t K) {
  int sg;
  if (op_gemv_q4_supports(op_ctx(rec), w, M, K, &sg) && !getenv("WGLLM_NO_GEMV_Q4"))
    return op_gemv_q4(rec, x, w, bias, y, N, K, NULL);
  return linear(rec, "matvec", x, w, bias, y, M, N, K, (N + 7) / 8, M);
}

wgllm_status op_matmul(gpu_recorder *rec, gpu_view x, const op_weight *w, gpu_view bias, gpu_view y, uint32_t M,
                       uint32_t N, uint32_t K) {
  return linear(rec, "matmul", x, w, bias, y, M, N, K, (N + 63) / 64, (M + 63) / 64);
}

wgllm_status op_linear(gpu_recorder *rec, gpu_view x, const op_weight *w, gpu_view bias, gpu_view y, uint32_t M,
                       uint32_t N, uint32_t K) {
  if (M <= 4) return op_matvec(rec, x, w, bias, y, M, N, K);
  return op_matmul(rec, x, w, bias, y, M, N, K);
}
