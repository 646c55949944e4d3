/* bench_kernels --probe: the decode GEMV (kernels/gemv.wgsl) on q4gsw weights for one token with one stage of the
   kernel left out, to see which stage limits it. It runs the kernel's developer variants ("q4_probe",
   "q4_sg_probe": dev_kernels.h), so the library's GEMV carries no such switch. */
#ifndef WGLLM_DEV_GEMV_PROBE_H
#define WGLLM_DEV_GEMV_PROBE_H
#include "ops.h"

/* The stage left out (the kernel's LEAVE_OUT) */
typedef enum dev_gemv_stage {
  DEV_GEMV_NO_DECODE = 1,     /* no nibble decode */
  DEV_GEMV_NO_X_LOADS,        /* no loads of x */
  DEV_GEMV_NO_SCALES,         /* no loads of the group scales */
  DEV_GEMV_NO_DECODE_SCALES,  /* neither decode nor scales */
  DEV_GEMV_WEIGHT_LOADS_ONLY, /* the weight loads alone */
  DEV_GEMV_STAGES = DEV_GEMV_WEIGHT_LOADS_ONLY
} dev_gemv_stage;
const char *dev_gemv_stage_name(dev_gemv_stage stage);

/* As op_gemv with o (norm, residual, GLU; one token, no bias) on a q4gsw weight in one piece, with plan's layout
   (the tuned plan needs subgroups of one fixed size), one stage left out: the output is not the product. */
wgllm_status dev_gemv_probe(gpu_recorder *rec, gpu_view x, const op_weight *w, gpu_view y, uint32_t N, uint32_t K,
                            const op_gemv_opts *o, const op_gemv_plan *plan, dev_gemv_stage stage);
#endif
