/* Pooling of a forward pass's hidden states into one embedding (kernels/pool.wgsl): the rows of each prefill chunk
   into an accumulator, then the scale and the L2 normalisation into the vector the CPU reads. */
#include "ops.h"

typedef struct pool_params {
  uint32_t d, rows, mode, first;
  float scale;
  uint32_t normalize, _p0, _p1;
} pool_params;
_Static_assert(sizeof(pool_params) == 32, "pool_params mirrors the Params block of kernels/pool.wgsl");

wgllm_status op_pool_rows(gpu_recorder *rec, gpu_view x, gpu_view acc, uint32_t D, uint32_t rows, op_pool_mode mode,
                          int first_chunk) {
  if (!D || !rows) return op_fail(rec, WGLLM_ERR_INTERNAL, "pool: %u rows of %u", rows, D);
  if (mode != OP_POOL_MEAN && mode != OP_POOL_LAST && mode != OP_POOL_FIRST)
    return op_fail(rec, WGLLM_ERR_INVALID_ARG, "pool: mode %d is none of mean, last, first", (int)mode);
  if (x.buf && (uint64_t)rows * D * 4 > gpu_view_bytes(x))
    return op_fail(rec, WGLLM_ERR_INTERNAL, "pool: %u rows of %u do not fit the input view", rows, D);
  if (acc.buf && (uint64_t)D * 4 > gpu_view_bytes(acc))
    return op_fail(rec, WGLLM_ERR_INTERNAL, "pool: %u elements do not fit the accumulator view", D);
  pool_params p = {.d = D, .rows = rows, .mode = (uint32_t)mode, .first = first_chunk ? 1u : 0u};
  return op_dispatch(rec, &(op_dispatch_args){.kernel = K_POOL,
                                              .variant = V_POOL_ROWS,
                                              .params = &p,
                                              .params_size = sizeof p,
                                              .access = "rw",
                                              .bind = {x, acc},
                                              .groups = (D + 255) / 256});
}

wgllm_status op_pool_finish(gpu_recorder *rec, gpu_view acc, gpu_view out, uint32_t D, float scale, int normalize) {
  if (!D) return op_fail(rec, WGLLM_ERR_INTERNAL, "pool: an empty vector");
  if ((acc.buf && (uint64_t)D * 4 > gpu_view_bytes(acc)) || (out.buf && (uint64_t)D * 4 > gpu_view_bytes(out)))
    return op_fail(rec, WGLLM_ERR_INTERNAL, "pool: %u elements do not fit the accumulator or output view", D);
  pool_params p = {.d = D, .scale = scale, .normalize = normalize ? 1u : 0u};
  return op_dispatch(rec, &(op_dispatch_args){.kernel = K_POOL,
                                              .variant = V_POOL_FINISH,
                                              .params = &p,
                                              .params_size = sizeof p,
                                              .access = "rw",
                                              .bind = {acc, out},
                                              .groups = 1});
}
