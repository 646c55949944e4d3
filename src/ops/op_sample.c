/* Token sampling on the GPU: the passes over the vocabulary spread across workgroups (kernels/sample_prep.wgsl:
   penalty, block maxima, candidates), then the draw in one workgroup (kernels/sample.wgsl). */
#include "ops.h"

typedef struct sample_gpu_params {
  uint32_t V, top_k, ring_cap, seed;
  float temp, top_p, min_p;
  uint32_t n_blocks;
} sample_gpu_params;
typedef struct prep_params {
  uint32_t V, n_blocks, ring_cap, _p;
  float temp, rep_penalty, cut, _q;
} prep_params;

#define PREP_BLOCK 2048 /* tokens per workgroup in sample_prep.wgsl */

uint64_t op_sample_work_bytes(void) { return (514 + 2 * 2048) * 4; }

wgllm_status op_sample(gpu_recorder *rec, const op_sample_params *sp, gpu_view logits, gpu_view state, gpu_view out,
                       gpu_view work, uint32_t V) {
  if (!V) return op_fail(rec, WGLLM_ERR_INTERNAL, "sample: empty vocabulary");
  if (sp->ring_cap > OP_SAMPLE_RING_MAX)
    return op_fail(rec, WGLLM_ERR_INVALID_ARG, "sample: repetition window %u over %u", sp->ring_cap,
                   OP_SAMPLE_RING_MAX);
  if (sp->top_p < 0 || sp->top_p > 1 || sp->min_p < 0 || sp->min_p > 1 || sp->rep_penalty <= 0)
    return op_fail(rec, WGLLM_ERR_INVALID_ARG, "sample: top_p/min_p must be in [0, 1] and the penalty positive");
  uint32_t n_blocks = (V + PREP_BLOCK - 1) / PREP_BLOCK;
  if (n_blocks > 256)
    return op_fail(rec, WGLLM_ERR_UNSUPPORTED, "sample: vocabulary of %u over %u", V, 256 * PREP_BLOCK);
  prep_params pp = {V, n_blocks, sp->ring_cap, 0, sp->temperature, sp->rep_penalty, 30.0f, 0};
  wgllm_status s;
  if (sp->rep_penalty != 1.0f && sp->ring_cap) {
    gpu_dispatch_desc d = {
        .kernel = "sample_prep", .variant = "penalty", .params = &pp, .params_size = sizeof pp, .n_bind = 2};
    d.bind[0] = logits;
    d.bind[1] = state;
    d.grid[0] = d.grid[1] = d.grid[2] = 1;
    s = gpu_record(rec, &d);
    if (s) return s;
  }
  gpu_dispatch_desc dm = {
      .kernel = "sample_prep", .variant = "max", .params = &pp, .params_size = sizeof pp, .n_bind = 2};
  dm.bind[0] = logits;
  dm.bind[1] = work;
  dm.grid[0] = n_blocks;
  dm.grid[1] = dm.grid[2] = 1;
  s = gpu_record(rec, &dm);
  if (s) return s;
  if (sp->temperature > 0) {
    gpu_dispatch_desc dc = dm;
    dc.variant = "collect";
    s = gpu_record(rec, &dc);
    if (s) return s;
  }
  sample_gpu_params p = {V, sp->top_k, sp->ring_cap, sp->seed, sp->temperature, sp->top_p, sp->min_p, n_blocks};
  gpu_dispatch_desc d = {.kernel = "sample", .variant = "f32", .params = &p, .params_size = sizeof p, .n_bind = 4};
  d.bind[0] = logits;
  d.bind[1] = state;
  d.bind[2] = out;
  d.bind[3] = work;
  d.grid[0] = d.grid[1] = d.grid[2] = 1;
  return gpu_record(rec, &d);
}
