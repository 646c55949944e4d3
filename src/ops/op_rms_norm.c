/* RMSNorm (kernels/rms_norm.wgsl): one workgroup per row. */
#include "ops.h"

typedef struct rms_params {
  uint32_t n, rows, in_stride, out_stride;
  float eps, w_offset;
  uint32_t in_off, group, in_gstride, out_off, out_gstride, w2_from;
} rms_params;
_Static_assert(sizeof(rms_params) == 48, "rms_params mirrors the Params block of kernels/rms_norm.wgsl");

static wgllm_status rms_norm(gpu_recorder *rec, int add, gpu_view x, gpu_view w, gpu_view out,
                             const op_rms_norm_params *q) {
  if (q->n == 0 || q->rows == 0 || (!q->in.group && q->in.stride < q->n) || (!q->out.group && q->out.stride < q->n))
    return op_fail(rec, WGLLM_ERR_INTERNAL, "rms_norm: bad shape n=%u rows=%u strides %u/%u", q->n, q->rows,
                   q->in.stride, q->out.stride);
  if (q->w2_from && (!q->w2.buf || !q->in.group || q->w2_from >= q->in.group))
    return op_fail(rec, WGLLM_ERR_INTERNAL, "rms_norm: a second weight from row %u of groups of %u", q->w2_from,
                   q->in.group);
  if (q->in.group != q->out.group)
    return op_fail(rec, WGLLM_ERR_INTERNAL, "rms_norm: input groups of %u rows, output groups of %u", q->in.group,
                   q->out.group);
  rms_params p = {.n = q->n,
                  .rows = q->rows,
                  .in_stride = q->in.stride,
                  .out_stride = q->out.stride,
                  .eps = q->eps,
                  .w_offset = q->w_offset,
                  .in_off = q->in.off,
                  .group = q->in.group,
                  .in_gstride = q->in.gstride,
                  .out_off = q->out.off,
                  .out_gstride = q->out.gstride,
                  .w2_from = q->w2_from};
  return op_dispatch(rec, &(op_dispatch_args){.kernel = K_RMS_NORM,
                                              .variant = add ? V_RMS_NORM_ADD : V_RMS_NORM_F32,
                                              .params = &p,
                                              .params_size = sizeof p,
                                              .access = "rrwr",
                                              /* w2 unread without w2_from, but the binding must exist */
                                              .bind = {x, w, out, q->w2_from ? q->w2 : w},
                                              .groups = q->rows});
}

wgllm_status op_rms_norm_add(gpu_recorder *rec, gpu_view x, gpu_view w, gpu_view out, uint32_t n, uint32_t rows,
                             float eps, float w_offset) {
  op_rms_norm_params q = {
      .n = n, .rows = rows, .in = {.stride = n}, .out = {.stride = n}, .eps = eps, .w_offset = w_offset};
  return rms_norm(rec, 1, x, w, out, &q);
}

wgllm_status op_rms_norm(gpu_recorder *rec, gpu_view x, gpu_view w, gpu_view out, uint32_t n, uint32_t rows,
                         uint32_t in_stride, uint32_t out_stride, float eps, float w_offset) {
  op_rms_norm_params q = {.n = n,
                          .rows = rows,
                          .in = {.stride = in_stride},
                          .out = {.stride = out_stride},
                          .eps = eps,
                          .w_offset = w_offset};
  return rms_norm(rec, 0, x, w, out, &q);
}

wgllm_status op_rms_norm_rows(gpu_recorder *rec, gpu_view x, gpu_view w, gpu_view out, const op_rms_norm_params *p) {
  return rms_norm(rec, 0, x, w, out, p);
}
