/* The tensor-core GEMM on f16 operands (kernels/gemm_f16.wgsl) and the conversions that feed it
   (kernels/dequant_f16.wgsl): x rounded to f16 once, the weight dequantized to f16 once per GEMM (every storage),
   then a GEMM whose tiles are plain copies, where kernels/matmul_mma.wgsl dequantizes each weight tile again for
   every tile of rows. */
#include "ops.h"
#include <string.h>

typedef struct dequant_params {
  uint32_t rows, K, rows_total, out_row0;
} dequant_params;
_Static_assert(sizeof(dequant_params) == 16, "dequant_params mirrors the Params block of kernels/dequant_f16.wgsl");

typedef struct gemm_f16_params {
  uint32_t M, N, K, has_bias, y_stride, n_off, _p0, _p1;
} gemm_f16_params;
_Static_assert(sizeof(gemm_f16_params) == 32, "gemm_f16_params mirrors the Params block of kernels/gemm_f16.wgsl");

uint32_t op_f16_rows(uint32_t rows) { return (rows + OP_F16_ROW_TILE - 1) / OP_F16_ROW_TILE * OP_F16_ROW_TILE; }

uint64_t op_f16_bytes(uint32_t rows, uint32_t K) { return (uint64_t)op_f16_rows(rows) * K * 2; }

/* rows [0, rows) of one piece of storage (data and scales in w) to out rows out_row0.., zeros after them up to
   rows_total */
static wgllm_status dequant_piece(gpu_recorder *rec, const op_weight *w, gpu_view out, uint32_t rows, uint32_t K,
                                  uint32_t rows_total, uint32_t out_row0) {
  wgllm_status s = op_check_weight(rec, "dequant_f16", w, rows, K);
  if (s) return s;
  dequant_params p = {.rows = rows, .K = K, .rows_total = rows_total, .out_row0 = out_row0};
  gpu_constant c = {"G", (double)w->group};
  uint64_t threads = (uint64_t)rows_total * (K / 8);
  if (threads / 256 >= UINT32_MAX)
    return op_fail(rec, WGLLM_ERR_UNSUPPORTED, "dequant_f16: %u rows of %u too many", rows_total, K);
  int scaled = op_wtype_has_scales(w->type);
  return op_dispatch(rec, &(op_dispatch_args){.kernel = K_DEQUANT_F16,
                                              .variant = op_wtype_variant(w->type),
                                              .params = &p,
                                              .params_size = sizeof p,
                                              .consts = &c,
                                              .n_consts = w->type == OP_W_Q4,
                                              .access = scaled ? "rwr" : "rw",
                                              .bind = {w->data, out, w->scales},
                                              .groups = (uint32_t)((threads + 255) / 256)});
}

wgllm_status op_convert_f16(gpu_recorder *rec, gpu_view x, gpu_view x16, uint32_t M, uint32_t K) {
  if (!M || !K || K % 32)
    return op_fail(rec, WGLLM_ERR_INTERNAL, "convert_f16: shape M=%u K=%u (K a multiple of 32)", M, K);
  if (gpu_view_bytes(x16) < op_f16_bytes(M, K))
    return op_fail(rec, WGLLM_ERR_INTERNAL, "convert_f16: %llu bytes for x16, %llu needed",
                   (unsigned long long)gpu_view_bytes(x16), (unsigned long long)op_f16_bytes(M, K));
  op_weight xw = {.type = OP_W_F32, .data = x};
  return dequant_piece(rec, &xw, x16, M, K, op_f16_rows(M), 0);
}

wgllm_status op_dequant_f16(gpu_recorder *rec, const op_weight *w, gpu_view w16, uint32_t N, uint32_t K) {
  if (!N || !K || K % 32)
    return op_fail(rec, WGLLM_ERR_INTERNAL, "dequant_f16: shape N=%u K=%u (K a multiple of 32)", N, K);
  if (gpu_view_bytes(w16) < op_f16_bytes(N, K))
    return op_fail(rec, WGLLM_ERR_INTERNAL, "dequant_f16: %llu bytes for w16, %llu needed",
                   (unsigned long long)gpu_view_bytes(w16), (unsigned long long)op_f16_bytes(N, K));
  uint32_t pad = op_f16_rows(N) - N;
  if (!w->n_parts) return dequant_piece(rec, w, w16, N, K, N + pad, 0);
  uint32_t n0 = 0;
  wgllm_status s = WGLLM_OK;
  for (uint32_t i = 0; !s && i < w->n_parts; i++) {
    const struct op_weight_part *pt = &w->part[i];
    op_weight pw = {pt->type, pt->data, pt->scales, pt->group, 0, {{{0}}}};
    uint32_t last = i + 1 == w->n_parts;
    s = dequant_piece(rec, &pw, w16, pt->rows, K, pt->rows + (last ? pad : 0), n0);
    n0 += pt->rows;
  }
  if (!s && n0 != N) return op_fail(rec, WGLLM_ERR_INTERNAL, "dequant_f16: parts of %u rows for N=%u", n0, N);
  return s;
}

/* workgroup memory of a variant: X [TM][TK + 8] and W [128][TK + 8] f16, the 8 KiB of results on their way out */
static uint32_t gemm_f16_workgroup_bytes(uint32_t tm, uint32_t tk) { return (tm + 128) * (tk + 8) * 2 + 8192; }

int op_gemm_f16_supports(const gpu_context *ctx, uint32_t M, uint32_t N, uint32_t K) {
  /* M N >= 256: the kernel stores whole 16 x 16 f32 matrices into y, so Dawn wants y's binding that large */
  if (M < 1 || K % 32 || (uint64_t)M * N < 256) return 0;
  return op_smat_f16_ready(ctx, gemm_f16_workgroup_bytes(64, 32), 256);
}

wgllm_status op_gemm_f16_variant(gpu_recorder *rec, gpu_view x16, gpu_view w16, gpu_view bias, gpu_view y, uint32_t M,
                                 uint32_t N, uint32_t K, const char *variant) {
  const gpu_context *ctx = op_ctx(rec);
  if (!variant) {
    /* 128-row tiles and 64-wide steps where M, K and the workgroup memory allow: the fastest at every 8B
       projection in docs/perf/19-f16gemm call 7 (158-229 TFLOP/s against 118-158 for 64 x 32) */
    uint32_t wgm = ctx->limits.maxComputeWorkgroupStorageSize;
    int k64 = K % 64 == 0, m128 = M > 64;
    if (k64 && m128 && wgm >= gemm_f16_workgroup_bytes(128, 64))
      variant = V_GEMM_F16_F16_K64_M128;
    else if (k64 && wgm >= gemm_f16_workgroup_bytes(64, 64))
      variant = V_GEMM_F16_F16_K64;
    else if (m128 && wgm >= gemm_f16_workgroup_bytes(128, 32))
      variant = V_GEMM_F16_F16_M128;
    else
      variant = V_GEMM_F16_F16;
  }
  uint32_t tk = strstr(variant, "_k64") ? 64 : 32, tm = strstr(variant, "_m128") ? 128 : 64;
  if (!M || !N || !K) return op_fail(rec, WGLLM_ERR_INTERNAL, "gemm_f16: empty shape M=%u N=%u K=%u", M, N, K);
  if (!op_gemm_f16_supports(ctx, M, N, K) || K % tk ||
      ctx->limits.maxComputeWorkgroupStorageSize < gemm_f16_workgroup_bytes(tm, tk))
    return op_fail(rec, WGLLM_ERR_UNSUPPORTED,
                   "gemm_f16: the device offers no f16 subgroup matrices of 16x16x16 with subgroups of 32 and %u "
                   "bytes of workgroup memory, or K=%u is not a multiple of %u, or M N = %u x %u is under 256",
                   gemm_f16_workgroup_bytes(tm, tk), K, tk, M, N);
  if (gpu_view_bytes(x16) < op_f16_bytes(M, K) || gpu_view_bytes(w16) < op_f16_bytes(N, K))
    return op_fail(rec, WGLLM_ERR_INTERNAL, "gemm_f16: x16 or w16 smaller than its rows rounded up to %u",
                   OP_F16_ROW_TILE);
  /* along M first (the kernel's header) */
  uint32_t gx = (M + tm - 1) / tm, gy = (N + 127) / 128, maxg = ctx->limits.maxComputeWorkgroupsPerDimension;
  if (gx > maxg || gy > maxg)
    return op_fail(rec, WGLLM_ERR_UNSUPPORTED, "gemm_f16: grid %ux%u over the device limit", gx, gy);
  gemm_f16_params p = {.M = M, .N = N, .K = K, .has_bias = bias.buf ? 1u : 0u, .y_stride = N};
  return op_dispatch(rec, &(op_dispatch_args){.kernel = K_GEMM_F16,
                                              .variant = variant,
                                              .params = &p,
                                              .params_size = sizeof p,
                                              .access = "rrrw",
                                              /* the bias binding must exist: x16 stands in without one */
                                              .bind = {x16, w16, bias.buf ? bias : x16, y},
                                              .grid = {gx, gy}});
}

wgllm_status op_gemm_f16(gpu_recorder *rec, gpu_view x16, gpu_view w16, gpu_view bias, gpu_view y, uint32_t M,
                         uint32_t N, uint32_t K) {
  return op_gemm_f16_variant(rec, x16, w16, bias, y, M, N, K, NULL);
}
