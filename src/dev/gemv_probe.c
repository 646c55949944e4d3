/* bench_kernels --probe (see gemv_probe.h): one dispatch of a "_probe" variant of kernels/gemv.wgsl, set up as
   src/ops/op_linear.c's gemv_piece sets up the q4gsw GEMV for one token (its Params, bindings, constants and grid),
   plus the stage to leave out. */
#include "gemv_probe.h"
#include "dev_kernels.h"
#include <stdio.h>

/* the kernel's Params block (kernels/gemv.wgsl), as op_linear.c's gemv_params; the recorder checks its size */
typedef struct gemv_probe_params {
  uint32_t N, K, has_bias, accumulate, has_norm;
  float eps, w_offset;
  uint32_t glu_half, act, n_off, y_stride, moe[6]; /* the expert variants' fields, unused here */
  float alpha, limit;
  uint32_t _pad;
} gemv_probe_params;

const char *dev_gemv_stage_name(dev_gemv_stage stage) {
  static const char *names[] = {
      "", "no nibble decode", "no x loads", "no scale loads", "no decode, no scales", "weight loads alone"};
  return stage >= 1 && stage <= DEV_GEMV_STAGES ? names[stage] : "?";
}

wgllm_status dev_gemv_probe(gpu_recorder *rec, gpu_view x, const op_weight *w, gpu_view y, uint32_t N, uint32_t K,
                            const op_gemv_opts *o, const op_gemv_plan *plan, dev_gemv_stage stage) {
  const gpu_context *ctx = op_ctx(rec);
  char msg[256];
  if (w->type != OP_W_Q4 || w->n_parts || (o->n_tokens && o->n_tokens != 1) || stage < 1 || stage > DEV_GEMV_STAGES) {
    snprintf(msg, sizeof msg, "gemv probe: q4gsw in one piece, one token, stage 1..%d (%s, %u parts, stage %d)",
             DEV_GEMV_STAGES, op_wtype_name(w->type), w->n_parts, (int)stage);
    return gpu_recorder_fail(rec, WGLLM_ERR_UNSUPPORTED, msg);
  }
  int sg = ctx->has_subgroups && ctx->subgroup_min == ctx->subgroup_max;
  if (plan->tuned && !sg)
    return gpu_recorder_fail(rec, WGLLM_ERR_UNSUPPORTED, "gemv probe: the tuned plan needs subgroups");
  const gpu_kernel_source *src = dev_kernel_find(K_GEMV, plan->tuned ? V_GEMV_Q4_SG_PROBE : V_GEMV_Q4_PROBE);
  if (!src) return gpu_recorder_fail(rec, WGLLM_ERR_INTERNAL, "gemv probe: no _probe variant in dev_kernel_sources");
  uint32_t out_rows = o->glu_half ? o->glu_half : N;
  gemv_probe_params p = {.N = N,
                         .K = K,
                         .accumulate = o->accumulate ? 1u : 0u,
                         .has_norm = o->norm_w.buf ? 1u : 0u,
                         .eps = o->eps,
                         .w_offset = o->norm_offset,
                         .glu_half = o->glu_half,
                         .act = (uint32_t)o->act,
                         .y_stride = out_rows};
  gpu_constant c[8] = {{"LEAVE_OUT", (double)stage},     {"G", (double)w->group},
                       {"R", (double)plan->r},           {"TK", (double)plan->tk},
                       {"TR", (double)plan->tr},         {"U", (double)(plan->u ? plan->u : 4)},
                       {"GLU", o->glu_half ? 1.0 : 0.0}, {"SGS", (double)(plan->tuned ? ctx->subgroup_min : 32)}};
  gpu_dispatch_desc d = {.kernel = src->kernel,
                         .variant = src->variant,
                         .source = src,
                         .params = &p,
                         .params_size = sizeof p,
                         .n_bind = 6,
                         .consts = c,
                         .n_consts = 8};
  d.bind[0] = x;
  d.bind[1] = w->data;
  d.bind[2] = x; /* no bias */
  d.bind[3] = y;
  d.bind[4] = o->norm_w.buf ? o->norm_w : x;
  d.bind[5] = w->scales;
  uint32_t rows_per_wg = plan->tr * plan->r;
  if (!rows_per_wg) return gpu_recorder_fail(rec, WGLLM_ERR_INVALID_ARG, "gemv probe: an empty plan");
  op_grid_1d(rec, (out_rows + rows_per_wg - 1) / rows_per_wg, d.grid);
  return gpu_record(rec, &d);
}
