/* Token sampling on the GPU (kernels/sample.wgsl): penalty, temperature, top-k/top-p/min-p, seeded draw. */
#include "ops.h"

typedef struct sample_gpu_params {
  uint32_t V, top_k, ring_cap, seed;
  float temp, top_p, min_p, rep_penalty;
} sample_gpu_params;

wgllm_status op_sample(gpu_recorder *rec, const op_sample_params *sp, gpu_view logits, gpu_view state, gpu_view out,
                       uint32_t V) {
  if (!V) return op_fail(rec, WGLLM_ERR_INTERNAL, "sample: empty vocabulary");
  if (sp->ring_cap > OP_SAMPLE_RING_MAX)
    return op_fail(rec, WGLLM_ERR_INVALID_ARG, "sample: repetition window %u over %u", sp->ring_cap, OP_SAMPLE_RING_MAX);
  if (sp->top_p < 0 || sp->top_p > 1 || sp->min_p < 0 || sp->min_p > 1 || sp->rep_penalty <= 0)
    return op_fail(rec, WGLLM_ERR_INVALID_ARG, "sample: top_p/min_p must be in [0, 1] and the penalty positive");
  sample_gpu_params p = {V, sp->top_k, sp->ring_cap, sp->seed, sp->temperature, sp->top_p, sp->min_p, sp->rep_penalty};
  gpu_dispatch_desc d = {.kernel = "sample", .variant = "f32", .params = &p, .params_size = sizeof p, .n_bind = 3};
  d.bind[0] = logits;
  d.bind[1] = state;
  d.bind[2] = out;
  d.grid[0] = d.grid[1] = d.grid[2] = 1;
  return gpu_record(rec, &d);
}
