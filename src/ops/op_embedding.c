/* Embedding row gather (kernels/embedding.wgsl), for any weight storage. */
#include "ops.h"

typedef struct embedding_params {
  uint32_t n_tokens, D, V;
  float scale;
  uint32_t v0, rows, _p0, _p1;
} embedding_params;
_Static_assert(sizeof(embedding_params) == 32, "embedding_params mirrors the Params block of kernels/embedding.wgsl");

wgllm_status op_embedding(gpu_recorder *rec, gpu_view ids, const op_weight *table, gpu_view out, uint32_t n_tokens,
                          uint32_t D, uint32_t V, float scale) {
  if (!n_tokens || !D || !V) return op_fail(rec, WGLLM_ERR_INTERNAL, "embedding: empty shape");
  wgllm_status s = op_check_weight(rec, "embedding", table, V, D);
  if (s) return s;
  if (n_tokens > op_ctx(rec)->limits.maxComputeWorkgroupsPerDimension)
    return op_fail(rec, WGLLM_ERR_UNSUPPORTED, "embedding: %u tokens exceed the grid limit", n_tokens);
  uint32_t n_parts = table->n_parts ? table->n_parts : 1, v0 = 0;
  for (uint32_t k = 0; !s && k < n_parts; k++) {
    uint32_t rows = table->n_parts ? table->part[k].rows : V;
    embedding_params p = {.n_tokens = n_tokens, .D = D, .V = V, .scale = scale, .v0 = v0, .rows = rows};
    gpu_constant c = {"G", (double)table->group};
    int scales = op_wtype_has_scales(table->type);
    s = op_dispatch(rec, &(op_dispatch_args){.kernel = K_EMBEDDING,
                                             .variant = op_wtype_variant(table->type),
                                             .params = &p,
                                             .params_size = sizeof p,
                                             .consts = &c,
                                             .n_consts = table->type == OP_W_Q4,
                                             .access = scales ? "rrwr" : "rrw",
                                             /* a table's parts share its storage */
                                             .bind = {ids, table->n_parts ? table->part[k].data : table->data, out,
                                                      !scales          ? (gpu_view){0}
                                                      : table->n_parts ? table->part[k].scales
                                                                       : table->scales},
                                             .grid = {(D + 255) / 256, n_tokens}});
    v0 += rows;
  }
  if (!s && v0 != V) return op_fail(rec, WGLLM_ERR_INTERNAL, "embedding: parts of %u rows for V=%u", v0, V);
  return s;
}
