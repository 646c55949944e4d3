/* Helpers shared by the op files: the dispatch helper, grid splitting, failure reporting, weight-type variant
   names. */
#include "ops.h"
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

gpu_context *op_ctx(const gpu_recorder *rec) { return gpu_recorder_context(rec); }

/* The GPU storages of a weight, one row each (indexed by op_wtype): the kernel variant that reads it (the names
   of kernelgen's `//! axis storage`), its name, and what a [N][K] weight of it must satisfy; for ggml's block
   types the block's elements, its bytes in the file and its stride on the GPU (Q6_K's 210-byte blocks padded
   to 212, so the kernels read every field as whole words; MXFP4's 17-byte blocks split into their 16 bytes of
   quants, a vec4 on the GPU, and their exponent byte in the scales). */
static const struct {
  const char *variant, *name;
  uint32_t k_multiple; /* K must be a multiple of it (0: the q4gsw group) */
  int has_scales;      /* a second buffer: q4gsw's and q8's f16 scales, MXFP4's e8m0 exponents (a byte a block) */
  uint32_t qk, file_bytes, gpu_bytes; /* block types only */
} WTYPES[] = {
    [OP_W_F32] = {"f32", "f32", 1, 0, 0, 0, 0},
    [OP_W_F16] = {"f16", "f16", 1, 0, 0, 0, 0},
    [OP_W_Q4] = {"q4", "q4gsw", 0, 1, 0, 0, 0},
    [OP_W_Q8] = {"q8", "q8", 32, 1, 0, 0, 0},
    [OP_W_BF16] = {"bf16", "bf16", 1, 0, 0, 0, 0},
    [OP_W_Q4_1] = {"q4_1", "Q4_1", 32, 0, 32, 20, 20},
    [OP_W_Q5_0] = {"q5_0", "Q5_0", 32, 0, 32, 22, 22},
    [OP_W_Q5_1] = {"q5_1", "Q5_1", 32, 0, 32, 24, 24},
    [OP_W_Q2_K] = {"q2k", "Q2_K", 256, 0, 256, 84, 84},
    [OP_W_Q3_K] = {"q3k", "Q3_K", 256, 0, 256, 110, 110},
    [OP_W_Q4_K] = {"q4k", "Q4_K", 256, 0, 256, 144, 144},
    [OP_W_Q5_K] = {"q5k", "Q5_K", 256, 0, 256, 176, 176},
    [OP_W_Q6_K] = {"q6k", "Q6_K", 256, 0, 256, 210, 212},
    [OP_W_IQ4_NL] = {"iq4nl", "IQ4_NL", 32, 0, 32, 18, 18},
    [OP_W_IQ4_XS] = {"iq4xs", "IQ4_XS", 256, 0, 256, 136, 136},
    [OP_W_MXFP4] = {"mxfp4", "MXFP4", 32, 1, 32, 17, 16},
};
_Static_assert(sizeof WTYPES / sizeof WTYPES[0] == OP_W_COUNT, "one row per op_wtype");

const char *op_wtype_variant(op_wtype t) { return (unsigned)t < OP_W_COUNT ? WTYPES[t].variant : "f32"; }
const char *op_wtype_name(op_wtype t) { return (unsigned)t < OP_W_COUNT ? WTYPES[t].name : "?"; }

int op_wtype_is_block(op_wtype t) { return (unsigned)t < OP_W_COUNT && WTYPES[t].qk; }

int op_wtype_has_scales(op_wtype t) { return (unsigned)t < OP_W_COUNT && WTYPES[t].has_scales; }

uint64_t op_blocks_gpu_bytes(op_wtype t, uint64_t elements) {
  if (!op_wtype_is_block(t)) return 0;
  return elements / WTYPES[t].qk * WTYPES[t].gpu_bytes;
}

uint64_t op_blocks_gpu_scale_bytes(op_wtype t, uint64_t elements) {
  return op_wtype_is_block(t) && WTYPES[t].has_scales ? elements / WTYPES[t].qk : 0;
}

void op_blocks_to_gpu(op_wtype t, const void *src, uint64_t elements, void *dst, void *dst_scales) {
  uint64_t nb = elements / WTYPES[t].qk, fb = WTYPES[t].file_bytes, gb = WTYPES[t].gpu_bytes;
  const uint8_t *s = src;
  uint8_t *d = dst;
  if (t == OP_W_MXFP4) { /* the exponent byte apart, the 16 quant bytes as they are */
    uint8_t *e = dst_scales;
    for (uint64_t b = 0; b < nb; b++) {
      e[b] = s[b * fb];
      memcpy(d + b * gb, s + b * fb + 1, gb);
    }
    return;
  }
  if (fb == gb) {
    memcpy(d, s, nb * fb);
    return;
  }
  for (uint64_t b = 0; b < nb; b++) {
    memcpy(d + b * gb, s + b * fb, fb);
    memset(d + b * gb + fb, 0, gb - fb);
  }
}

wgllm_status op_check_weight(gpu_recorder *rec, const char *who, const op_weight *w, uint32_t N, uint32_t K) {
  (void)N;
  if (!w->data.buf) return op_fail(rec, WGLLM_ERR_INTERNAL, "%s: weight has no data", who);
  if ((unsigned)w->type >= OP_W_COUNT)
    return op_fail(rec, WGLLM_ERR_INTERNAL, "%s: weight storage %d unknown", who, (int)w->type);
  uint32_t km = WTYPES[w->type].k_multiple;
  if (!km) { /* q4gsw: the group */
    if (w->group != 32 && w->group != 64 && w->group != 128)
      return op_fail(rec, WGLLM_ERR_UNSUPPORTED, "%s: q4gsw group %u (32, 64 or 128 supported)", who, w->group);
    km = w->group;
  }
  if (K % km)
    return op_fail(rec, WGLLM_ERR_UNSUPPORTED, "%s: K=%u not a multiple of %u for %s", who, K, km,
                   WTYPES[w->type].name);
  if (WTYPES[w->type].has_scales && !w->scales.buf)
    return op_fail(rec, WGLLM_ERR_INTERNAL, "%s: %s weight without scales", who, WTYPES[w->type].name);
  return WGLLM_OK;
}

void op_grid_1d(const gpu_recorder *rec, uint32_t groups, uint32_t grid[3]) {
  uint32_t maxg = op_ctx(rec)->limits.maxComputeWorkgroupsPerDimension;
  if (groups == 0) groups = 1;
  if (groups <= maxg) {
    grid[0] = groups;
    grid[1] = 1;
  } else {
    grid[1] = (groups + maxg - 1) / maxg;
    grid[0] = (groups + grid[1] - 1) / grid[1];
  }
  grid[2] = 1;
}

wgllm_status op_fail(gpu_recorder *rec, wgllm_status s, const char *fmt, ...) {
  char msg[512];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  return gpu_recorder_fail(rec, s, msg);
}

wgllm_status op_dispatch(gpu_recorder *rec, const op_dispatch_args *a) {
  gpu_dispatch_desc d = {.kernel = a->kernel,
                         .variant = a->variant,
                         .consts = a->consts,
                         .n_consts = a->n_consts,
                         .params = a->params,
                         .params_size = a->params ? a->params_size : 0,
                         .access = a->access,
                         .n_bind = a->access ? (int)strlen(a->access) : 0};
  if (d.n_bind > GPU_MAX_BINDINGS)
    return op_fail(rec, WGLLM_ERR_INTERNAL, "kernel %s: %d bindings", a->kernel, d.n_bind);
  memcpy(d.bind, a->bind, sizeof d.bind);
  if (a->indirect)
    d.indirect = *a->indirect;
  else if (!a->grid[0])
    op_grid_1d(rec, a->groups, d.grid);
  else
    for (int i = 0; i < 3; i++)
      d.grid[i] = i && !a->grid[i] ? 1 : a->grid[i];
  return gpu_record(rec, &d);
}

int op_smat_f16_ready(const gpu_context *ctx, uint32_t workgroup_bytes, uint32_t threads) {
  if (!ctx->has_subgroup_matrix || ctx->subgroup_min != 32 || ctx->subgroup_max != 32) return 0;
  if (ctx->limits.maxComputeWorkgroupStorageSize < workgroup_bytes ||
      ctx->limits.maxComputeInvocationsPerWorkgroup < threads)
    return 0;
  for (int i = 0; i < ctx->n_smat; i++) {
    const gpu_smat_config *c = &ctx->smat[i];
    if (c->component == GPU_SMAT_F16 && c->result == GPU_SMAT_F32 && c->M == 16 && c->N == 16 && c->K == 16) return 1;
  }
  return 0;
}
