/* Rotary position embedding (kernels/rope.wgsl) and the CPU-built cos/sin table it reads. */
#include <math.h>
#include "ops.h"

typedef struct rope_params { uint32_t n_tokens, n_heads, head_dim, rot_dim, token_stride, mode, max_pos, _p; } rope_params;

wgllm_status op_rope(gpu_recorder *rec, gpu_view x, gpu_view pos, gpu_view cs, uint32_t n_tokens,
                     uint32_t n_heads, uint32_t head_dim, uint32_t rot_dim, uint32_t token_stride,
                     op_rope_mode mode, uint32_t max_pos) {
  if (rot_dim == 0 || rot_dim % 2 || rot_dim > head_dim || token_stride < n_heads * head_dim || max_pos == 0)
    return op_fail(rec, WGLLM_ERR_INTERNAL, "rope: bad shape rot_dim=%u head_dim=%u heads=%u stride=%u", rot_dim,
                   head_dim, n_heads, token_stride);
  rope_params p = {n_tokens, n_heads, head_dim, rot_dim, token_stride, (uint32_t)mode, max_pos, 0};
  gpu_dispatch_desc d = {.kernel = "rope", .variant = "f32", .params = &p, .params_size = sizeof p, .n_bind = 3};
  d.bind[0] = x;
  d.bind[1] = pos;
  d.bind[2] = cs;
  uint32_t rows = n_tokens * n_heads;
  uint32_t maxg = op_ctx(rec)->limits.maxComputeWorkgroupsPerDimension;
  d.grid[0] = (rot_dim / 2 + 63) / 64;
  d.grid[1] = rows < maxg ? rows : maxg;
  d.grid[2] = (rows + d.grid[1] - 1) / d.grid[1];
  return gpu_record(rec, &d);
}

void op_rope_table(float *cs, const float *inv_freq, uint32_t rot_dim, uint32_t max_pos, float attn_scale) {
  uint32_t half = rot_dim / 2;
  for (uint32_t p = 0; p < max_pos; p++)
    for (uint32_t i = 0; i < half; i++) {
      float ang = (float)p * inv_freq[i]; /* f32 product, as transformers computes it */
      cs[(p * half + i) * 2 + 0] = (float)(cos((double)ang) * attn_scale);
      cs[(p * half + i) * 2 + 1] = (float)(sin((double)ang) * attn_scale);
    }
}
