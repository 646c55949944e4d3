/* The tensor-core GEMM on int8 operands (gemm_i8.h): a dispatch of a developer variant of kernels/gemm_i8.wgsl per
   piece of weight (all of it, or each row part at its columns of y), its grid along M first. */
#include "gemm_i8.h"
#include "dev_kernels.h"
#include <stdio.h>

/* the kernel's Params block (kernels/gemm_i8.wgsl, matmul_q8's); the recorder checks its size */
typedef struct gemm_i8_params {
  uint32_t M, N, K, has_bias, y_stride, n_off, _p0, _p1;
} gemm_i8_params;

/* its workgroup memory: X [64][12] and W [128][12] words, the rows' and columns' factors, 8 x 4 result matrices of
   16 x 16 i32 */
#define GEMM_I8_WORKGROUP_BYTES ((64 + 128) * 12 * 4 + (64 + 128) * 8 + 8 * 4 * 256 * 4)

/* the storages it reads (its variants); NULL: none */
static const char *variant_of(op_wtype t, uint32_t group) {
  switch (t) {
  case OP_W_Q4:
    return group == 32 || group == 64 || group == 128 ? V_GEMM_I8_Q4 : NULL;
  case OP_W_Q8:
    return V_GEMM_I8_Q8;
  case OP_W_Q4_1:
    return V_GEMM_I8_Q4_1;
  case OP_W_Q5_0:
    return V_GEMM_I8_Q5_0;
  case OP_W_Q5_1:
    return V_GEMM_I8_Q5_1;
  case OP_W_Q4_K:
    return V_GEMM_I8_Q4K;
  case OP_W_Q5_K:
    return V_GEMM_I8_Q5K;
  case OP_W_IQ4_NL:
    return V_GEMM_I8_IQ4NL;
  case OP_W_IQ4_XS:
    return V_GEMM_I8_IQ4XS;
  default:
    return NULL;
  }
}

int dev_gemm_i8_supports(const gpu_context *ctx, const op_weight *w, uint32_t M, uint32_t N, uint32_t K) {
  if (M < 1 || N < 1 || K % 32) return 0;
  if (!ctx->has_subgroup_matrix || ctx->subgroup_min != 32 || ctx->subgroup_max != 32) return 0;
  if (ctx->limits.maxComputeWorkgroupStorageSize < GEMM_I8_WORKGROUP_BYTES ||
      ctx->limits.maxComputeInvocationsPerWorkgroup < 256)
    return 0;
  int cfg = 0;
  for (int i = 0; i < ctx->n_smat; i++) {
    const gpu_smat_config *c = &ctx->smat[i];
    cfg |= c->component == GPU_SMAT_I8 && c->result == GPU_SMAT_I32 && c->M == 16 && c->N == 16 && c->K == 32;
  }
  if (!cfg) return 0;
  if (!w->n_parts) return variant_of(w->type, w->group) != NULL;
  for (uint32_t i = 0; i < w->n_parts; i++)
    if (!variant_of(w->part[i].type, w->part[i].group)) return 0;
  return 1;
}

/* one piece of weight: rows [0, N) of its storage to columns n_off.. of y (rows y_stride apart) */
static wgllm_status piece(gpu_recorder *rec, gpu_view q, gpu_view ds, const op_weight *pw, gpu_view bias, gpu_view y,
                          uint32_t M, uint32_t N, uint32_t K, uint32_t y_stride, uint32_t n_off) {
  char msg[256];
  const gpu_kernel_source *src = dev_kernel_find(K_GEMM_I8, variant_of(pw->type, pw->group));
  if (!src) {
    snprintf(msg, sizeof msg, "gemm_i8: no developer variant for %s weights", op_wtype_name(pw->type));
    return gpu_recorder_fail(rec, WGLLM_ERR_UNSUPPORTED, msg);
  }
  wgllm_status s = op_check_weight(rec, "gemm_i8", pw, N, K);
  if (s) return s;
  uint32_t gx = (M + 63) / 64, gy = (N + 127) / 128, maxg = op_ctx(rec)->limits.maxComputeWorkgroupsPerDimension;
  if (gx > maxg || gy > maxg) {
    snprintf(msg, sizeof msg, "gemm_i8: grid %ux%u over the device limit", gx, gy);
    return gpu_recorder_fail(rec, WGLLM_ERR_UNSUPPORTED, msg);
  }
  gemm_i8_params p = {.M = M, .N = N, .K = K, .has_bias = bias.buf ? 1u : 0u, .y_stride = y_stride, .n_off = n_off};
  gpu_constant c = {"G", (double)pw->group};
  int has_scales = op_wtype_has_scales(pw->type);
  gpu_dispatch_desc d = {.kernel = src->kernel,
                         .variant = src->variant,
                         .source = src,
                         .params = &p,
                         .params_size = sizeof p,
                         .consts = &c,
                         .n_consts = pw->type == OP_W_Q4,
                         .access = has_scales ? "rrrrwr" : "rrrrw",
                         .n_bind = has_scales ? 6 : 5,
                         .grid = {gx, gy, 1}}; /* along M first: the workgroups in flight share their W tiles */
  d.bind[0] = q;
  d.bind[1] = ds;
  d.bind[2] = pw->data;
  d.bind[3] = bias.buf ? bias : q; /* unused without a bias, but the binding must exist */
  d.bind[4] = y;
  d.bind[5] = pw->scales;
  return gpu_record(rec, &d);
}

wgllm_status dev_gemm_i8(gpu_recorder *rec, gpu_view xq, const op_weight *w, gpu_view bias, gpu_view y, uint32_t M,
                         uint32_t N, uint32_t K) {
  char msg[320];
  if (!dev_gemm_i8_supports(op_ctx(rec), w, M, N, K)) {
    snprintf(msg, sizeof msg,
             "gemm_i8: the device offers no i8 subgroup matrices of 16x16x32 with subgroups of 32 and %d bytes of "
             "workgroup memory, or %s weights have no variant (Q6_K's half-block scales), or K=%u is not a "
             "multiple of 32",
             GEMM_I8_WORKGROUP_BYTES, op_wtype_name(w->n_parts ? w->part[0].type : w->type), K);
    return gpu_recorder_fail(rec, WGLLM_ERR_UNSUPPORTED, msg);
  }
  gpu_view q, ds;
  op_q8_act_views(rec, xq, M, K, &q, &ds);
  if (!w->n_parts) return piece(rec, q, ds, w, bias, y, M, N, K, N, 0);
  uint32_t n0 = 0;
  wgllm_status s = WGLLM_OK;
  for (uint32_t i = 0; !s && i < w->n_parts; i++) {
    const struct op_weight_part *pt = &w->part[i];
    op_weight pw = {pt->type, pt->data, pt->scales, pt->group, 0, {{{0}}}};
    s = piece(rec, q, ds, &pw, bias, y, M, pt->rows, K, N, n0);
    n0 += pt->rows;
  }
  if (!s && n0 != N) {
    snprintf(msg, sizeof msg, "gemm_i8: parts of %u rows for N=%u", n0, N);
    return gpu_recorder_fail(rec, WGLLM_ERR_INTERNAL, msg);
  }
  return s;
}
