/* RMSNorm (kernels/rms_norm.wgsl): one workgroup per row. */
#include "ops.h"

typedef struct rms_params {
  uint32_t n, rows, in_stride, out_stride;
  float eps, w_offset;
  uint32_t in_off, group, in_gstride, out_off, out_gstride, _p;
} rms_params;
_Static_assert(sizeof(rms_params) == 48, "rms_params mirrors the Params block of kernels/rms_norm.wgsl");

static wgllm_status rms_norm(gpu_recorder *rec, int add, gpu_view x, uint32_t in_off, uint32_t group,
                             uint32_t in_gstride, gpu_view w, gpu_view out, uint32_t out_off, uint32_t out_gstride,
                             uint32_t n, uint32_t rows, uint32_t in_stride, uint32_t out_stride, float eps,
                             float w_offset);

wgllm_status op_rms_norm_add(gpu_recorder *rec, gpu_view x, gpu_view w, gpu_view out, uint32_t n, uint32_t rows,
                             float eps, float w_offset) {
  return rms_norm(rec, 1, x, 0, 0, 0, w, out, 0, 0, n, rows, n, n, eps, w_offset);
}

wgllm_status op_rms_norm(gpu_recorder *rec, gpu_view x, gpu_view w, gpu_view out, uint32_t n, uint32_t rows,
                         uint32_t in_stride, uint32_t out_stride, float eps, float w_offset) {
  return op_rms_norm_from(rec, x, 0, w, out, n, rows, in_stride, out_stride, eps, w_offset);
}

wgllm_status op_rms_norm_from(gpu_recorder *rec, gpu_view x, uint32_t in_off, gpu_view w, gpu_view out, uint32_t n,
                              uint32_t rows, uint32_t in_stride, uint32_t out_stride, float eps, float w_offset) {
  return op_rms_norm_heads(rec, x, in_off, 0, 0, w, out, 0, 0, n, rows, in_stride, out_stride, eps, w_offset);
}

wgllm_status op_rms_norm_heads(gpu_recorder *rec, gpu_view x, uint32_t in_off, uint32_t group, uint32_t in_gstride,
                               gpu_view w, gpu_view out, uint32_t out_off, uint32_t out_gstride, uint32_t n,
                               uint32_t rows, uint32_t in_stride, uint32_t out_stride, float eps, float w_offset) {
  return rms_norm(rec, 0, x, in_off, group, in_gstride, w, out, out_off, out_gstride, n, rows, in_stride, out_stride,
                  eps, w_offset);
}

static wgllm_status rms_norm(gpu_recorder *rec, int add, gpu_view x, uint32_t in_off, uint32_t group,
                             uint32_t in_gstride, gpu_view w, gpu_view out, uint32_t out_off, uint32_t out_gstride,
                             uint32_t n, uint32_t rows, uint32_t in_stride, uint32_t out_stride, float eps,
                             float w_offset) {
  if (n == 0 || rows == 0 || (!group && (in_stride < n || out_stride < n)))
    return op_fail(rec, WGLLM_ERR_INTERNAL, "rms_norm: bad shape n=%u rows=%u strides %u/%u", n, rows, in_stride,
                   out_stride);
  rms_params p = {n, rows, in_stride, out_stride, eps, w_offset, in_off, group, in_gstride, out_off, out_gstride, 0};
  gpu_dispatch_desc d = {
      .kernel = "rms_norm", .variant = add ? "add" : "f32", .params = &p, .params_size = sizeof p, .n_bind = 3};
  d.bind[0] = x;
  d.bind[1] = w;
  d.bind[2] = out;
  op_grid_1d(rec, rows, d.grid);
  return gpu_record(rec, &d);
}
