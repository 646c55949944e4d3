/* The logit filter before the sampler (kernels/logit_filter.wgsl): constrained decoding's token mask (forbidden
   tokens to -inf) and a request's logit bias (a sparse list added in place). */
#include "ops.h"

typedef struct logit_filter_params {
  uint32_t n, n_bias, neg_inf, _p1;
} logit_filter_params;
_Static_assert(sizeof(logit_filter_params) == 16,
               "logit_filter_params mirrors the Params block of kernels/logit_filter.wgsl");

wgllm_status op_logit_mask(gpu_recorder *rec, gpu_view logits, gpu_view mask, uint32_t n) {
  if (!n) return op_fail(rec, WGLLM_ERR_INTERNAL, "logit_mask: empty vocabulary");
  if (logits.buf && (uint64_t)n * 4 > gpu_view_bytes(logits))
    return op_fail(rec, WGLLM_ERR_INTERNAL, "logit_mask: %u logits do not fit the view", n);
  if (mask.buf && (uint64_t)(n + 31) / 32 * 4 > gpu_view_bytes(mask))
    return op_fail(rec, WGLLM_ERR_INTERNAL, "logit_mask: the mask of %u bits does not fit its view", n);
  logit_filter_params p = {.n = n, .neg_inf = 0xff800000u};
  uint32_t groups = (n + 255) / 256;
  return op_dispatch(rec, &(op_dispatch_args){.kernel = K_LOGIT_FILTER,
                                              .variant = V_LOGIT_FILTER_MASK,
                                              .params = &p,
                                              .params_size = sizeof p,
                                              .access = "wr",
                                              .bind = {logits, mask},
                                              .groups = groups < 1024 ? groups : 1024});
}

wgllm_status op_logit_bias(gpu_recorder *rec, gpu_view logits, gpu_view pairs, uint32_t n, uint32_t n_bias) {
  if (!n || !n_bias) return op_fail(rec, WGLLM_ERR_INTERNAL, "logit_bias: empty vocabulary or bias list");
  if (logits.buf && (uint64_t)n * 4 > gpu_view_bytes(logits))
    return op_fail(rec, WGLLM_ERR_INTERNAL, "logit_bias: %u logits do not fit the view", n);
  if (pairs.buf && (uint64_t)n_bias * 8 > gpu_view_bytes(pairs))
    return op_fail(rec, WGLLM_ERR_INTERNAL, "logit_bias: %u pairs do not fit their view", n_bias);
  logit_filter_params p = {.n = n, .n_bias = n_bias};
  return op_dispatch(rec, &(op_dispatch_args){.kernel = K_LOGIT_FILTER,
                                              .variant = V_LOGIT_FILTER_BIAS,
                                              .params = &p,
                                              .params_size = sizeof p,
                                              .access = "wr",
                                              .bind = {logits, pairs},
                                              .groups = (n_bias + 255) / 256});
}

typedef struct logprobs_params {
  uint32_t n, n_blocks, top_n, _p0;
} logprobs_params;
_Static_assert(sizeof(logprobs_params) == 16, "logprobs_params mirrors the Params block of kernels/logprobs.wgsl");

#define LP_BLOCK 4096 /* logits a workgroup of the blocks pass (kernels/logprobs.wgsl) */
#define LP_STRIDE 42  /* words a block's record */

uint64_t op_logprobs_work_bytes(uint32_t n) { return (uint64_t)(n + LP_BLOCK - 1) / LP_BLOCK * LP_STRIDE * 4; }

wgllm_status op_logprobs(gpu_recorder *rec, gpu_view logits, gpu_view ids, gpu_view work, gpu_view out, uint32_t n,
                         uint32_t top_n) {
  uint32_t n_blocks = (n + LP_BLOCK - 1) / LP_BLOCK;
  if (!n) return op_fail(rec, WGLLM_ERR_INTERNAL, "logprobs: empty vocabulary");
  if (top_n > OP_LOGPROBS_MAX)
    return op_fail(rec, WGLLM_ERR_INVALID_ARG, "logprobs: top %u over %u", top_n, OP_LOGPROBS_MAX);
  if (n_blocks > 256)
    return op_fail(rec, WGLLM_ERR_UNSUPPORTED, "logprobs: vocabulary of %u over %u", n, 256 * LP_BLOCK);
  if (logits.buf && (uint64_t)n * 4 > gpu_view_bytes(logits))
    return op_fail(rec, WGLLM_ERR_INTERNAL, "logprobs: %u logits do not fit the view", n);
  if (work.buf && op_logprobs_work_bytes(n) > gpu_view_bytes(work))
    return op_fail(rec, WGLLM_ERR_INTERNAL, "logprobs: work of %llu bytes needed",
                   (unsigned long long)op_logprobs_work_bytes(n));
  if (out.buf && (3 + 2 * (uint64_t)OP_LOGPROBS_MAX) * 4 > gpu_view_bytes(out))
    return op_fail(rec, WGLLM_ERR_INTERNAL, "logprobs: the output holds under %u words", 3 + 2 * OP_LOGPROBS_MAX);
  logprobs_params p = {.n = n, .n_blocks = n_blocks, .top_n = top_n};
  wgllm_status st = op_dispatch(rec, &(op_dispatch_args){.kernel = K_LOGPROBS,
                                                         .variant = V_LOGPROBS_BLOCKS,
                                                         .params = &p,
                                                         .params_size = sizeof p,
                                                         .access = "rw",
                                                         .bind = {logits, work},
                                                         .groups = n_blocks});
  if (st) return st;
  return op_dispatch(rec, &(op_dispatch_args){.kernel = K_LOGPROBS,
                                              .variant = V_LOGPROBS_MERGE,
                                              .params = &p,
                                              .params_size = sizeof p,
                                              .access = "rrrw",
                                              .bind = {logits, work, ids, out},
                                              .groups = 1});
}
