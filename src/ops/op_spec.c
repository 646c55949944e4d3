/* Speculative decoding's GPU side: word copies (kernels/copy_u32.wgsl) for the sampler's state between a verify
   step's rows, and the verdict (kernels/spec_accept.wgsl): how many drafts the rows' samplers confirmed, the
   sampler's state restored to the last accepted row's, the next step's input id. */
#include "ops.h"

typedef struct copy_params {
  uint32_t n, _p0, _p1, _p2;
} copy_params;
_Static_assert(sizeof(copy_params) == 16, "copy_params mirrors the Params block of kernels/copy_u32.wgsl");

typedef struct accept_params {
  uint32_t k, stride, words, snap_stride;
} accept_params;
_Static_assert(sizeof(accept_params) == 16, "accept_params mirrors the Params block of kernels/spec_accept.wgsl");

wgllm_status op_copy_u32(gpu_recorder *rec, gpu_view src, gpu_view dst, uint32_t n) {
  if (!n) return op_fail(rec, WGLLM_ERR_INTERNAL, "copy: no words");
  if ((src.buf && (uint64_t)n * 4 > gpu_view_bytes(src)) || (dst.buf && (uint64_t)n * 4 > gpu_view_bytes(dst)))
    return op_fail(rec, WGLLM_ERR_INTERNAL, "copy: %u words do not fit the views", n);
  copy_params p = {.n = n};
  uint32_t groups = (n + 255) / 256;
  return op_dispatch(rec, &(op_dispatch_args){.kernel = K_COPY_U32,
                                              .variant = V_COPY_U32_U32,
                                              .params = &p,
                                              .params_size = sizeof p,
                                              .access = "rw",
                                              .bind = {src, dst},
                                              .groups = groups < 1024 ? groups : 1024});
}

wgllm_status op_spec_accept(gpu_recorder *rec, uint32_t k, gpu_view ids, gpu_view sampled, uint32_t stride,
                            gpu_view snap, uint32_t words, uint32_t snap_stride, gpu_view result, gpu_view state,
                            gpu_view next) {
  if (k > OP_SPEC_MAX || !stride || !words || snap_stride < words)
    return op_fail(rec, WGLLM_ERR_INTERNAL, "spec_accept: k %u (at most %u), stride %u, %u state words", k, OP_SPEC_MAX,
                   stride, words);
  const struct {
    gpu_view v;
    uint64_t need;
  } views[] = {{ids, (k + 1ull) * 4},
               {sampled, ((uint64_t)k * stride + 1) * 4},
               {snap, ((uint64_t)k * snap_stride + words) * 4},
               {result, (k + 2ull) * 4},
               {state, (uint64_t)words * 4},
               {next, 4}};
  for (size_t i = 0; i < sizeof views / sizeof views[0]; i++)
    if (views[i].v.buf && views[i].need > gpu_view_bytes(views[i].v))
      return op_fail(rec, WGLLM_ERR_INTERNAL, "spec_accept: view %zu is smaller than %llu bytes", i,
                     (unsigned long long)views[i].need);
  accept_params p = {.k = k, .stride = stride, .words = words, .snap_stride = snap_stride};
  return op_dispatch(rec, &(op_dispatch_args){.kernel = K_SPEC_ACCEPT,
                                              .variant = V_SPEC_ACCEPT_U32,
                                              .params = &p,
                                              .params_size = sizeof p,
                                              .access = "rrrwww",
                                              .bind = {ids, sampled, snap, result, state, next},
                                              .groups = 1});
}
