/* The input ids of a batched decode step (kernels/step_ids.wgsl): each row's id given by the CPU or read from the
   previous step's sampled ids on the GPU. */
#include "ops.h"

typedef struct step_ids_params {
  uint32_t n, rows, stride, slots;
} step_ids_params;
_Static_assert(sizeof(step_ids_params) == 16, "step_ids_params mirrors the Params block of kernels/step_ids.wgsl");

wgllm_status op_step_ids(gpu_recorder *rec, gpu_view src, gpu_view prev, uint32_t stride, uint32_t slots, gpu_view ids,
                         uint32_t n, uint32_t rows) {
  if (!rows || n > rows || !stride || !slots)
    return op_fail(rec, WGLLM_ERR_INTERNAL, "step_ids: n %u, rows %u, stride %u, slots %u", n, rows, stride, slots);
  if ((src.buf && (uint64_t)(n ? n : 1) * 4 > gpu_view_bytes(src)) ||
      (prev.buf && ((uint64_t)(slots - 1) * stride + 1) * 4 > gpu_view_bytes(prev)) ||
      (ids.buf && (uint64_t)rows * 4 > gpu_view_bytes(ids)))
    return op_fail(rec, WGLLM_ERR_INTERNAL, "step_ids: a view is smaller than %u ids, %u slots of %u words or %u rows",
                   n, slots, stride, rows);
  step_ids_params p = {.n = n, .rows = rows, .stride = stride, .slots = slots};
  return op_dispatch(rec, &(op_dispatch_args){.kernel = K_STEP_IDS,
                                              .variant = V_STEP_IDS_U32,
                                              .params = &p,
                                              .params_size = sizeof p,
                                              .access = "rrw",
                                              .bind = {src, prev, ids},
                                              .groups = (rows + 63) / 64});
}
