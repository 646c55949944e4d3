/* Token sampling on the GPU: passes over the vocabulary spread across 2048-token blocks (kernels/sample_prep.wgsl:
   penalty and block maxima, the radix-select levels of top-k and top-p, the kept mass per block), then the draw in
   one workgroup (kernels/sample.wgsl) whose work does not depend on the vocabulary. Which passes are recorded
   depends only on the settings, never on the logits, so a recorded step replays for any distribution. */
#include "ops.h"
#include <math.h>

typedef struct sample_gpu_params {
  uint32_t V, top_k, ring_cap, seed;
  float temp, top_p, min_p;
  uint32_t n_blocks;
} sample_gpu_params;
_Static_assert(sizeof(sample_gpu_params) == 32, "sample_gpu_params mirrors the Params block of kernels/sample.wgsl");
typedef struct prep_params {
  uint32_t V, n_blocks, ring_cap, top_k;
  float temp, rep_penalty, cut, top_p;
  float log_min_p;
  uint32_t stage, flags;
  float presence, frequency;
  uint32_t _p[3];
} prep_params;
_Static_assert(sizeof(prep_params) == 64, "prep_params mirrors the Params block of kernels/sample_prep.wgsl");

#define PREP_BLOCK 2048 /* tokens per workgroup in sample_prep.wgsl */
#define PREP_MAX_BLOCKS 256
/* flags, as in sample_prep.wgsl */
enum { F_PENALTY = 1, F_SAMPLE = 2, F_TOPK = 4, F_TOPP = 8, F_MINP = 16 };
/* sample_prep.wgsl's W_PRE (the end of the fixed part of work) plus 256 chunk sums for each of 256 blocks */
#define WORK_WORDS (15936 + PREP_MAX_BLOCKS * 256)

int op_sample_penalises(const op_sample_params *sp) {
  return sp->ring_cap && (sp->rep_penalty != 1.0f || sp->presence != 0 || sp->frequency != 0);
}

uint64_t op_sample_work_bytes(void) { return (uint64_t)WORK_WORDS * 4; }

uint32_t op_sample_dispatches(const op_sample_params *sp, uint32_t V) {
  if (sp->temperature <= 0) return 2;
  uint32_t n = 3;
  if (sp->top_k > 0 && sp->top_k < V) n += 3;
  if (sp->top_p > 0 && sp->top_p < 1) n += 3;
  return n;
}

wgllm_status op_sample(gpu_recorder *rec, const op_sample_params *sp, gpu_view logits, gpu_view state, gpu_view out,
                       gpu_view work, uint32_t V) {
  if (!V) return op_fail(rec, WGLLM_ERR_INTERNAL, "sample: empty vocabulary");
  if (sp->ring_cap > OP_SAMPLE_RING_MAX)
    return op_fail(rec, WGLLM_ERR_INVALID_ARG, "sample: repetition window %u over %u", sp->ring_cap,
                   OP_SAMPLE_RING_MAX);
  if (sp->top_p < 0 || sp->top_p > 1 || sp->min_p < 0 || sp->min_p > 1 || sp->rep_penalty <= 0)
    return op_fail(rec, WGLLM_ERR_INVALID_ARG, "sample: top_p/min_p must be in [0, 1] and the penalty positive");
  if (!isfinite(sp->presence) || !isfinite(sp->frequency))
    return op_fail(rec, WGLLM_ERR_INVALID_ARG, "sample: presence/frequency penalties must be finite (got %g, %g)",
                   sp->presence, sp->frequency);
  uint32_t n_blocks = (V + PREP_BLOCK - 1) / PREP_BLOCK;
  if (n_blocks > PREP_MAX_BLOCKS)
    return op_fail(rec, WGLLM_ERR_UNSUPPORTED, "sample: vocabulary of %u over %u", V, PREP_MAX_BLOCKS * PREP_BLOCK);
  /* the kernels read and write state words below 4 + ring_cap (the ring index wrapped at ring_cap in the kernel) */
  if (state.size && state.size < (4ull + sp->ring_cap) * 4)
    return op_fail(rec, WGLLM_ERR_INTERNAL, "sample: state of %llu bytes under %llu", (unsigned long long)state.size,
                   (4ull + sp->ring_cap) * 4);
  if (work.size && work.size < op_sample_work_bytes())
    return op_fail(rec, WGLLM_ERR_INTERNAL, "sample: work of %llu bytes under %llu", (unsigned long long)work.size,
                   (unsigned long long)op_sample_work_bytes());
  int sampling = sp->temperature > 0;
  uint32_t flags = 0;
  if (op_sample_penalises(sp)) flags |= F_PENALTY;
  if (sampling) flags |= F_SAMPLE;
  if (sampling && sp->top_k > 0 && sp->top_k < V) flags |= F_TOPK; /* k >= V keeps everything */
  if (sampling && sp->top_p > 0 && sp->top_p < 1) flags |= F_TOPP;
  if (sampling && sp->min_p > 0) flags |= F_MINP;
  /* log(min_p) in f32 on the CPU, as the reference computes it, so the threshold key matches it exactly */
  prep_params pp = {.V = V,
                    .n_blocks = n_blocks,
                    .ring_cap = sp->ring_cap,
                    .top_k = sp->top_k,
                    .temp = sp->temperature,
                    .rep_penalty = sp->rep_penalty,
                    .cut = 30.0f,
                    .top_p = sp->top_p,
                    .log_min_p = sp->min_p > 0 ? logf(sp->min_p) : 0.0f,
                    .flags = flags,
                    .presence = sp->presence,
                    .frequency = sp->frequency};
  op_dispatch_args prep = {.kernel = K_SAMPLE_PREP,
                           .variant = V_SAMPLE_PREP_MAX,
                           .params = &pp,
                           .params_size = sizeof pp,
                           .access = "wwr",
                           .bind = {logits, work, state},
                           .grid = {n_blocks}};
  wgllm_status s = op_dispatch(rec, &prep);
  if (s) return s;
  if (sampling) {
    /* radix-select levels: stages 0-2 top-k, 3-5 top-p (each level's pass also finishes the previous select) */
    prep.variant = V_SAMPLE_PREP_LEVEL;
    prep.access = "rw";
    prep.bind[2] = (gpu_view){0};
    for (uint32_t st = 0; st < 6; st++) {
      if (!(flags & (st < 3 ? F_TOPK : F_TOPP))) continue;
      pp.stage = st;
      s = op_dispatch(rec, &prep);
      if (s) return s;
    }
    prep.variant = V_SAMPLE_PREP_MASS;
    s = op_dispatch(rec, &prep);
    if (s) return s;
  }
  sample_gpu_params p = {.V = V,
                         .top_k = sp->top_k,
                         .ring_cap = sp->ring_cap,
                         .seed = sp->seed,
                         .temp = sp->temperature,
                         .top_p = sp->top_p,
                         .min_p = sp->min_p,
                         .n_blocks = n_blocks};
  return op_dispatch(rec, &(op_dispatch_args){.kernel = K_SAMPLE,
                                              .variant = V_SAMPLE_F32,
                                              .params = &p,
                                              .params_size = sizeof p,
                                              .access = "rwwr",
                                              .bind = {logits, state, out, work},
                                              .grid = {1}});
}
