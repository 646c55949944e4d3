/* Embedding row gather (kernels/embedding.wgsl). */
#include "ops.h"

typedef struct embedding_params { uint32_t n_tokens, D, V; float scale; } embedding_params;

wgllm_status op_embedding(gpu_recorder *rec, gpu_view ids, gpu_view table, op_wtype wt, gpu_view out,
                          uint32_t n_tokens, uint32_t D, uint32_t V, float scale) {
  if (!n_tokens || !D || !V) return op_fail(rec, WGLLM_ERR_INTERNAL, "embedding: empty shape");
  if (n_tokens > op_ctx(rec)->limits.maxComputeWorkgroupsPerDimension)
    return op_fail(rec, WGLLM_ERR_UNSUPPORTED, "embedding: %u tokens exceed the grid limit", n_tokens);
  embedding_params p = {n_tokens, D, V, scale};
  gpu_dispatch_desc d = {.kernel = "embedding", .variant = op_wtype_variant(wt), .params = &p, .params_size = sizeof p, .n_bind = 3};
  d.bind[0] = ids;
  d.bind[1] = table;
  d.bind[2] = out;
  d.grid[0] = (D + 255) / 256;
  d.grid[1] = n_tokens;
  d.grid[2] = 1;
  return gpu_record(rec, &d);
}
