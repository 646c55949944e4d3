/* KV-cache append (kernels/kv_write.wgsl) and causal GQA attention over the cache (kernels/attention.wgsl, the
   prefill kernels attn_prefill*.wgsl, flash-decoding attn_split / attn_reduce, and on subgroup matrices
   attn_prefill_mma.wgsl). */
#include "ops.h"
#include <stdio.h>
#include <string.h>

typedef struct kv_write_params {
  uint32_t n_tokens, n_kv_head, head_dim, ctx, k_stride, k_off, v_stride, v_off;
  uint32_t seq, max_blocks, block, n_blocks;
} kv_write_params;
_Static_assert(sizeof(kv_write_params) == 48, "kv_write_params mirrors the Params block of kernels/kv_write.wgsl");
typedef struct attn_gpu_params {
  uint32_t n_tokens, n_head, n_kv_head, head_dim, q_stride, q_off, out_stride, ctx, window;
  float scale, softcap;
  uint32_t seq, max_blocks, block, n_blocks, sinks;
} attn_gpu_params;
_Static_assert(sizeof(attn_gpu_params) == 64, "attn_gpu_params mirrors the Params block of kernels/attention.wgsl");

/* the Params block of the prefill kernels (attention, attn_prefill*, attn_prefill_mma) */
static attn_gpu_params attn_params_of(const op_kv_layout *kv, const op_attn_params *a) {
  return (attn_gpu_params){.n_tokens = a->n_tokens,
                           .n_head = a->n_head,
                           .n_kv_head = kv->n_kv_head,
                           .head_dim = kv->head_dim,
                           .q_stride = a->q_stride,
                           .q_off = a->q_off,
                           .out_stride = a->out_stride,
                           .ctx = kv->ctx,
                           .window = a->window,
                           .scale = a->scale,
                           .softcap = a->softcap,
                           .seq = a->pages ? a->pages->seq : 0,
                           .max_blocks = a->pages ? a->pages->max_blocks : 0,
                           .block = a->pages ? a->pages->block : 0,
                           .n_blocks = a->pages ? a->pages->n_blocks : 0,
                           .sinks = a->sinks.buf ? 1 + a->sink_head0 : 0};
}

wgllm_status op_check_pages(gpu_recorder *rec, const char *who, const op_kv_layout *kv, const op_kv_pages *pg,
                            uint32_t n_seq, gpu_view kcache, gpu_view vcache) {
  if (!pg->block || !pg->n_blocks || !pg->max_blocks || !pg->table.buf ||
      (uint64_t)pg->max_blocks * pg->block < kv->ctx ||
      (uint64_t)n_seq * pg->max_blocks * 4 > gpu_view_bytes(pg->table))
    return op_fail(rec, WGLLM_ERR_INTERNAL,
                   "%s: a paged pool of %u blocks of %u slots, %u blocks a sequence for %u slots, table of %llu bytes "
                   "for %u sequences",
                   who, pg->n_blocks, pg->block, pg->max_blocks, kv->ctx, (unsigned long long)gpu_view_bytes(pg->table),
                   n_seq);
  /* every element index of the pool fits a u32, and the pool's buffers hold it */
  uint64_t elems = (uint64_t)kv->n_kv_head * pg->n_blocks * pg->block * kv->head_dim;
  uint64_t bytes = elems * (kv->f16 ? 2 : 4);
  if (elems > UINT32_MAX - 3 || gpu_view_bytes(kcache) < bytes || gpu_view_bytes(vcache) < bytes)
    return op_fail(rec, WGLLM_ERR_INTERNAL, "%s: a pool of %llu bytes in K and V views of %llu and %llu", who,
                   (unsigned long long)bytes, (unsigned long long)gpu_view_bytes(kcache),
                   (unsigned long long)gpu_view_bytes(vcache));
  return WGLLM_OK;
}

static wgllm_status check_kv(gpu_recorder *rec, const op_kv_layout *kv) {
  if (!kv->n_kv_head || !kv->head_dim || !kv->ctx) return op_fail(rec, WGLLM_ERR_INTERNAL, "kv: empty layout");
  if (kv->head_dim % 4)
    return op_fail(rec, WGLLM_ERR_UNSUPPORTED, "the attention kernels need head_dim %% 4 == 0 (head_dim %u)",
                   kv->head_dim);
  return WGLLM_OK;
}

wgllm_status op_kv_write(gpu_recorder *rec, const op_kv_layout *kv, const op_kv_write_params *q, gpu_view k, gpu_view v,
                         gpu_view pos, gpu_view kcache, gpu_view vcache) {
  wgllm_status s = check_kv(rec, kv);
  if (s) return s;
  uint32_t n_tokens = q->n_tokens;
  if (!n_tokens) return op_fail(rec, WGLLM_ERR_INTERNAL, "kv_write: no tokens");
  const op_kv_pages *pg = q->pages;
  if (pg && (s = op_check_pages(rec, "kv_write", kv, pg, pg->seq + 1, kcache, vcache))) return s;
  kv_write_params p = {.n_tokens = n_tokens,
                       .n_kv_head = kv->n_kv_head,
                       .head_dim = kv->head_dim,
                       .ctx = kv->ctx,
                       .k_stride = q->k_stride,
                       .k_off = q->k_off,
                       .v_stride = q->v_stride,
                       .v_off = q->v_off,
                       .seq = pg ? pg->seq : 0,
                       .max_blocks = pg ? pg->max_blocks : 0,
                       .block = pg ? pg->block : 0,
                       .n_blocks = pg ? pg->n_blocks : 0};
  static const char *const variants[2][2] = {{V_KV_WRITE_F32, V_KV_WRITE_F32PAGED},
                                             {V_KV_WRITE_F16, V_KV_WRITE_F16PAGED}};
  return op_dispatch(rec, &(op_dispatch_args){.kernel = K_KV_WRITE,
                                              .variant = variants[kv->f16 != 0][pg != NULL],
                                              .params = &p,
                                              .params_size = sizeof p,
                                              .access = pg ? "rrrwwr" : "rrrww",
                                              .bind = {k, v, pos, kcache, vcache, pg ? pg->table : (gpu_view){0}},
                                              .grid = {(kv->n_kv_head * kv->head_dim / 4 + 63) / 64, n_tokens}});
}

int op_attn_prefill_gqa_plan(const gpu_context *ctx, const op_kv_layout *kv, uint32_t n_head, op_attn_gqa_plan *plan) {
  memset(plan, 0, sizeof *plan);
  uint32_t sgs = ctx->subgroup_min, hd = kv->head_dim, nc = hd / 4;
  if (!ctx->has_subgroups || ctx->subgroup_min != ctx->subgroup_max || sgs < 4 || sgs > 128) return 0;
  if (!kv->n_kv_head || !n_head || n_head % kv->n_kv_head || !hd || hd % 4 || nc > 16 * sgs) return 0;
  uint32_t rep = n_head / kv->n_kv_head, nv = (nc + sgs - 1) / sgs, heads = 1;
  for (uint32_t d = 1; d <= 8 && d <= rep; d++)
    if (rep % d == 0 && d * nv <= 16) heads = d;
  uint32_t gr = nc < sgs && (nc & (nc - 1)) == 0 && sgs % nc == 0 ? sgs / nc : 1;
  uint32_t rowv = nc % 2 ? nc : nc + 1; /* odd: a lane's row at an odd stride of vec4s, no bank conflicts */
  /* bytes: the key tile, a token's q rows, and lo_hi, range, the unused V tile, alignment */
  uint64_t tile = (uint64_t)sgs * rowv * 16, row = (uint64_t)heads * nc * 16, fixed = 64;
  uint64_t mem = ctx->limits.maxComputeWorkgroupStorageSize;
  uint32_t most = ctx->limits.maxComputeInvocationsPerWorkgroup / sgs;
  if (most > 8) most = 8;
  uint32_t shared = mem > tile + fixed ? (uint32_t)((mem - tile - fixed) / row) : 0;
  uint32_t sep = mem > 2 * tile + fixed ? (uint32_t)((mem - 2 * tile - fixed) / row) : 0;
  if (shared > most) shared = most;
  if (sep > most) sep = most;
  if (!shared || shared * heads < 2) return 0;
  plan->heads = heads;
  plan->tokens = shared;
  plan->nv = nv;
  plan->gr = gr;
  plan->rowv = rowv;
  plan->sep_v = sep == shared;
  plan->smem = (uint32_t)(tile * (plan->sep_v ? 2 : 1) + row * shared + fixed);
  return 1;
}

static const op_attn_kernel_opts unforced = {0};

wgllm_status op_attention(gpu_recorder *rec, const op_kv_layout *kv, const op_attn_params *a, gpu_view q,
                          gpu_view kcache, gpu_view vcache, gpu_view pos, gpu_view out) {
  return op_attention_forced(rec, kv, a, NULL, q, kcache, vcache, pos, out);
}

wgllm_status op_attention_forced(gpu_recorder *rec, const op_kv_layout *kv, const op_attn_params *a,
                                 const op_attn_kernel_opts *force, gpu_view q, gpu_view kcache, gpu_view vcache,
                                 gpu_view pos, gpu_view out) {
  if (!force) force = &unforced;
  wgllm_status s = check_kv(rec, kv);
  if (s) return s;
  if (!a->n_tokens || !a->n_head || a->n_head % kv->n_kv_head)
    return op_fail(rec, WGLLM_ERR_INTERNAL, "attention: %u heads not a multiple of %u KV heads", a->n_head,
                   kv->n_kv_head);
  if (kv->head_dim > 512) return op_fail(rec, WGLLM_ERR_UNSUPPORTED, "attention: head_dim %u > 512", kv->head_dim);
  const op_kv_pages *pg = a->pages;
  if (pg && (s = op_check_pages(rec, "attention", kv, pg, pg->seq + 1, kcache, vcache))) return s;
  attn_gpu_params p = attn_params_of(kv, a);
  op_dispatch_args d = {.kernel = K_ATTENTION,
                        .variant = kv->f16 ? V_ATTENTION_F16 : V_ATTENTION_F32,
                        .params = &p,
                        .params_size = sizeof p,
                        .access = "rrrrwr",
                        .bind = {q, kcache, vcache, pos, out, a->sinks.buf ? a->sinks : pos},
                        .grid = {a->n_head, a->n_tokens}};
  /* the first kernel of ops.h's order that accepts (force starts the order later) */
  const gpu_context *ctx = op_ctx(rec);
  int from = 1;
  if (force->ungrouped && from < 2) from = 2;
  if (force->untiled && from < 3) from = 3;
  uint32_t sgs = ctx->subgroup_min, nc = kv->head_dim / 4, nsg = 4, tok = 8;
  /* lanes past a head's vec4s share out the keys of P.V when the vec4s are a power of two dividing the lanes */
  uint32_t gr = nc < sgs && (nc & (nc - 1)) == 0 && sgs % nc == 0 ? sgs / nc : 1;
  gpu_constant c[9] = {{"SGS", (double)sgs}, {"GR", (double)gr}, {"NSG", 0}, {"NV", 0}};
  int fixed_sg = !force->no_subgroups && ctx->has_subgroups && ctx->subgroup_min == ctx->subgroup_max;
  op_attn_gqa_plan gp;
  if (!force->no_subgroups && from <= 1 && op_attn_prefill_gqa_plan(ctx, kv, a->n_head, &gp) &&
      (a->n_tokens + gp.tokens - 1) / gp.tokens <= ctx->limits.maxComputeWorkgroupsPerDimension) {
    c[1].value = gp.gr;
    c[2].value = gp.tokens;
    c[3].value = gp.nv;
    c[4] = (gpu_constant){"HG", gp.heads};
    c[5] = (gpu_constant){"ROWV", gp.rowv};
    c[6] = (gpu_constant){"QN", (double)gp.tokens * gp.heads * nc};
    c[7] = (gpu_constant){"SEPV", gp.sep_v};
    c[8] = (gpu_constant){"VT", gp.sep_v ? (double)sgs * gp.rowv : 1};
    d.kernel = K_ATTN_PREFILL_GQA;
    d.variant = kv->f16 ? V_ATTN_PREFILL_GQA_F16 : V_ATTN_PREFILL_GQA_F32;
    d.consts = c;
    d.n_consts = 9;
    d.grid[0] = a->n_head / gp.heads;
    d.grid[1] = (a->n_tokens + gp.tokens - 1) / gp.tokens;
  } else if (fixed_sg && from <= 2 && sgs >= 4 && sgs <= 32 && nc <= sgs && kv->head_dim <= 128 &&
             ctx->limits.maxComputeWorkgroupStorageSize >= (1056 + 256) * 16 + 64 &&
             sgs * tok <= ctx->limits.maxComputeInvocationsPerWorkgroup) {
    c[2].value = tok;
    d.kernel = K_ATTN_PREFILL_TILED;
    d.variant = kv->f16 ? V_ATTN_PREFILL_TILED_F16 : V_ATTN_PREFILL_TILED_F32;
    d.consts = c;
    d.n_consts = 3;
    d.grid[1] = (a->n_tokens + tok - 1) / tok;
  } else if (fixed_sg && from <= 3 && sgs >= 4 && sgs <= 128 && (nc + sgs - 1) / sgs <= 16 &&
             sgs * nsg <= ctx->limits.maxComputeInvocationsPerWorkgroup) {
    c[2].value = nsg;
    c[3].value = (nc + sgs - 1) / sgs;
    d.kernel = K_ATTN_PREFILL;
    d.variant = kv->f16 ? V_ATTN_PREFILL_F16 : V_ATTN_PREFILL_F32;
    d.consts = c;
    d.n_consts = 4;
    d.grid[0] = (a->n_head + nsg - 1) / nsg;
  }
  if (pg) { /* the chosen kernel's paged twin, the block table after its bindings */
    static const char *const twins[][3] = {
        {K_ATTENTION, V_ATTENTION_F32, V_ATTENTION_F32PAGED},
        {K_ATTENTION, V_ATTENTION_F16, V_ATTENTION_F16PAGED},
        {K_ATTN_PREFILL, V_ATTN_PREFILL_F32, V_ATTN_PREFILL_F32PAGED},
        {K_ATTN_PREFILL, V_ATTN_PREFILL_F16, V_ATTN_PREFILL_F16PAGED},
        {K_ATTN_PREFILL_TILED, V_ATTN_PREFILL_TILED_F32, V_ATTN_PREFILL_TILED_F32PAGED},
        {K_ATTN_PREFILL_TILED, V_ATTN_PREFILL_TILED_F16, V_ATTN_PREFILL_TILED_F16PAGED},
        {K_ATTN_PREFILL_GQA, V_ATTN_PREFILL_GQA_F32, V_ATTN_PREFILL_GQA_F32PAGED},
        {K_ATTN_PREFILL_GQA, V_ATTN_PREFILL_GQA_F16, V_ATTN_PREFILL_GQA_F16PAGED},
    };
    const char *twin = NULL;
    for (size_t i = 0; i < sizeof twins / sizeof twins[0]; i++)
      if (!strcmp(d.kernel, twins[i][0]) && !strcmp(d.variant, twins[i][1])) twin = twins[i][2];
    if (!twin)
      return op_fail(rec, WGLLM_ERR_INTERNAL, "attention: kernel %s/%s has no paged twin", d.kernel, d.variant);
    d.variant = twin;
    d.access = "rrrrwrr"; /* the block table, then the sinks */
    d.bind[6] = d.bind[5];
    d.bind[5] = pg->table;
  }
  return op_dispatch(rec, &d);
}

typedef struct attn_split_params {
  uint32_t n_head, n_kv_head, head_dim, ctx, q_stride, q_off, window, max_chunks;
  float scale, softcap;
  uint32_t rot_dim, mode, max_pos, k_off, v_off, v_in_q;
  uint32_t max_blocks, block, n_blocks, v_stride;
  float eps, w_offset;
  uint32_t pad0, pad1;
} attn_split_params;
_Static_assert(sizeof(attn_split_params) == 96,
               "attn_split_params mirrors the Params block of kernels/attn_split.wgsl");
typedef struct attn_reduce_params {
  uint32_t n_head, n_kv_head, head_dim, ctx, window, max_chunks, out_stride, sinks;
} attn_reduce_params;
_Static_assert(sizeof(attn_reduce_params) == 32,
               "attn_reduce_params mirrors the Params block of kernels/attn_reduce.wgsl");
typedef struct attn_grid_params {
  uint32_t n_kv_head, ctx, window, max_chunks, n_seq, _a, _b, _c;
} attn_grid_params;
_Static_assert(sizeof(attn_grid_params) == 32, "attn_grid_params mirrors the Params block of kernels/attn_grid.wgsl");

/* Chunk length and worst-case chunk count of a decode recording that serves positions < len: chunks of 32 to
   128 keys, short enough that a short context still gives about 128 workgroups (n_kv_head of them per chunk). */
static void decode_chunks(const op_kv_layout *kv, uint32_t len, uint32_t window, uint32_t forced, uint32_t *chunk,
                          uint32_t *n) {
  if (!len || len > kv->ctx) len = kv->ctx;
  uint32_t want = (uint32_t)((uint64_t)len * kv->n_kv_head / 128), B = 32;
  while (B < 128 && B * 2 <= want)
    B *= 2;
  if (forced) B = forced;
  uint32_t c = (len + B - 1) / B;
  if (window && window / B + 2 < c) c = window / B + 2; /* the window's span starts at a chunk boundary */
  *chunk = B;
  *n = c;
}

int op_attention_decode_supports(const op_kv_layout *kv, uint32_t n_head) {
  if (!kv->n_kv_head || n_head % kv->n_kv_head || kv->head_dim % 4) return 0;
  uint32_t n_rep = n_head / kv->n_kv_head;
  return n_rep <= 16 && n_rep * kv->head_dim <= 4096;
}

uint64_t op_attn_partial_bytes(const op_kv_layout *kv, uint32_t n_head, uint32_t chunk) {
  /* the most chunks any recording length needs (lengths are powers of two or the whole context) */
  uint32_t most = 1, B, n;
  for (uint64_t len = 1; len < 2ull * kv->ctx; len *= 2) {
    decode_chunks(kv, len > kv->ctx ? kv->ctx : (uint32_t)len, 0, chunk, &B, &n);
    if (n > most) most = n;
  }
  decode_chunks(kv, kv->ctx, 0, chunk, &B, &n);
  if (n > most) most = n;
  return (uint64_t)most * n_head * (kv->head_dim + 2) * 4;
}

wgllm_status op_attention_decode(gpu_recorder *rec, const op_kv_layout *kv, const op_attn_params *a, gpu_view q,
                                 gpu_view kcache, gpu_view vcache, gpu_view pos, gpu_view partial,
                                 const gpu_view *indirect, gpu_view out) {
  return op_attention_decode_forced(rec, kv, a, NULL, q, kcache, vcache, pos, partial, indirect, out);
}

wgllm_status op_attention_decode_forced(gpu_recorder *rec, const op_kv_layout *kv, const op_attn_params *a,
                                        const op_attn_kernel_opts *force, gpu_view q, gpu_view kcache, gpu_view vcache,
                                        gpu_view pos, gpu_view partial, const gpu_view *indirect, gpu_view out) {
  if (!force) force = &unforced;
  wgllm_status s = check_kv(rec, kv);
  if (s) return s;
  const op_kv_pages *pg = a->pages;
  uint32_t n_seq = pg ? a->n_tokens : 1;
  if (!pg && a->n_tokens != 1)
    return op_fail(rec, WGLLM_ERR_INTERNAL, "attention_decode: %u tokens (one expected)", a->n_tokens);
  if (pg) {
    if (!n_seq || n_seq > op_ctx(rec)->limits.maxComputeWorkgroupsPerDimension)
      return op_fail(rec, WGLLM_ERR_INTERNAL, "attention_decode: %u sequences", n_seq);
    if ((s = op_check_pages(rec, "attention_decode", kv, pg, n_seq, kcache, vcache))) return s;
  }
  if (!op_attention_decode_supports(kv, a->n_head))
    return op_fail(rec, WGLLM_ERR_UNSUPPORTED, "attention_decode: %u heads over %u KV heads of %u dims not supported",
                   a->n_head, kv->n_kv_head, kv->head_dim);
  uint32_t B, mc;
  uint32_t chunk = force->chunk;
  if (chunk && (chunk < 16 || chunk > 128 || (chunk & (chunk - 1))))
    return op_fail(rec, WGLLM_ERR_INTERNAL, "attention_decode: chunk of %u keys (16..128, a power of two)", chunk);
  decode_chunks(kv, a->max_len, a->window, chunk, &B, &mc);
  if (a->max_len && a->max_len < kv->ctx && (a->max_len & (a->max_len - 1)))
    return op_fail(rec, WGLLM_ERR_INTERNAL, "attention_decode: length bucket %u is not a power of two", a->max_len);
  if (mc > op_ctx(rec)->limits.maxComputeWorkgroupsPerDimension)
    return op_fail(rec, WGLLM_ERR_UNSUPPORTED, "attention_decode: context %u too long for the grid", kv->ctx);
  uint64_t partial_room = gpu_view_bytes(partial);
  if ((uint64_t)n_seq * mc * a->n_head * (kv->head_dim + 2) * 4 > partial_room)
    return op_fail(rec, WGLLM_ERR_INTERNAL, "attention_decode: partial buffer too small for %u chunks", mc);
  /* attn_split's threads: 256 where a phase has that many items (the group's scores or its outputs' vec4s), so
     that each takes one round, else 128; the subgroup variant when a head's threads (WG / n_rep rounded up to a
     power of two) are exactly one subgroup of a fixed size */
  const gpu_context *ctx = op_ctx(rec);
  uint32_t n_rep = a->n_head / kv->n_kv_head, rp2 = 1;
  while (rp2 < n_rep)
    rp2 *= 2;
  uint32_t wg = (n_rep * B >= 256 || n_rep * kv->head_dim / 4 >= 256) &&
                        ctx->limits.maxComputeInvocationsPerWorkgroup >= 256 && !force->narrow_split
                    ? 256
                    : 128;
  int sg = !force->no_subgroups && ctx->has_subgroups && ctx->subgroup_min == ctx->subgroup_max &&
           ctx->subgroup_min == wg / rp2;
  const op_attn_rope *ro = a->rope;
  if (ro && (ro->rot_dim % 4 || ro->rot_dim > kv->head_dim || !ro->max_pos || !ro->cs.buf))
    return op_fail(rec, WGLLM_ERR_INTERNAL, "attention_decode: RoPE of %u dims (a multiple of 4 up to %u)", ro->rot_dim,
                   kv->head_dim);
  int qkn = ro && ro->q_norm.buf;
  if (qkn && (!ro->k_norm.buf || gpu_view_bytes(ro->q_norm) < (uint64_t)kv->head_dim * 4 ||
              gpu_view_bytes(ro->k_norm) < (uint64_t)kv->head_dim * 4))
    return op_fail(rec, WGLLM_ERR_INTERNAL, "attention_decode: q and k norm weights of %u elements each", kv->head_dim);
  /* [f16][subgroups][rope: none, rope, rope with the q/k norms][paged] */
  static const char *const variants[2][2][3][2] = {{{{V_ATTN_SPLIT_F32, V_ATTN_SPLIT_F32PAGED},
                                                     {V_ATTN_SPLIT_F32ROPE, V_ATTN_SPLIT_F32ROPEPAGED},
                                                     {V_ATTN_SPLIT_F32ROPEQKN, V_ATTN_SPLIT_F32ROPEQKNPAGED}},
                                                    {{V_ATTN_SPLIT_F32SG, V_ATTN_SPLIT_F32SGPAGED},
                                                     {V_ATTN_SPLIT_F32SGROPE, V_ATTN_SPLIT_F32SGROPEPAGED},
                                                     {V_ATTN_SPLIT_F32SGROPEQKN, V_ATTN_SPLIT_F32SGROPEQKNPAGED}}},
                                                   {{{V_ATTN_SPLIT_F16, V_ATTN_SPLIT_F16PAGED},
                                                     {V_ATTN_SPLIT_F16ROPE, V_ATTN_SPLIT_F16ROPEPAGED},
                                                     {V_ATTN_SPLIT_F16ROPEQKN, V_ATTN_SPLIT_F16ROPEQKNPAGED}},
                                                    {{V_ATTN_SPLIT_F16SG, V_ATTN_SPLIT_F16SGPAGED},
                                                     {V_ATTN_SPLIT_F16SGROPE, V_ATTN_SPLIT_F16SGROPEPAGED},
                                                     {V_ATTN_SPLIT_F16SGROPEQKN, V_ATTN_SPLIT_F16SGROPEQKNPAGED}}}};
  const char *var = variants[kv->f16 != 0][sg != 0][qkn ? 2 : ro != NULL][pg != NULL];
  gpu_constant cb = {"B", (double)B}, cbw[2] = {{"B", (double)B}, {"WG", (double)wg}};
  if (indirect) {
    attn_grid_params gp = {
        .n_kv_head = kv->n_kv_head, .ctx = kv->ctx, .window = a->window, .max_chunks = mc, .n_seq = n_seq};
    s = op_dispatch(rec, &(op_dispatch_args){.kernel = K_ATTN_GRID,
                                             .variant = V_ATTN_GRID_U32,
                                             .params = &gp,
                                             .params_size = sizeof gp,
                                             .consts = &cb,
                                             .n_consts = 1,
                                             .access = "rw",
                                             .bind = {pos, *indirect},
                                             .grid = {1}});
    if (s) return s;
  }
  attn_split_params sp = {.n_head = a->n_head,
                          .n_kv_head = kv->n_kv_head,
                          .head_dim = kv->head_dim,
                          .ctx = kv->ctx,
                          .q_stride = a->q_stride,
                          .q_off = a->q_off,
                          .window = a->window,
                          .max_chunks = mc,
                          .scale = a->scale,
                          .softcap = a->softcap,
                          .rot_dim = ro ? ro->rot_dim : 0,
                          .mode = ro ? (uint32_t)ro->mode : 0,
                          .max_pos = ro ? ro->max_pos : 0,
                          .k_off = ro ? ro->k_off : 0,
                          .v_off = ro ? ro->v_off : 0,
                          .v_in_q = ro && !ro->vsrc.buf,
                          .max_blocks = pg ? pg->max_blocks : 0,
                          .block = pg ? pg->block : 0,
                          .n_blocks = pg ? pg->n_blocks : 0,
                          .v_stride = pg ? pg->v_stride : 0,
                          .eps = qkn ? ro->eps : 0.0f,
                          .w_offset = qkn ? ro->w_offset : 0.0f};
  /* with RoPE folded in, the pass also appends the token's K and V to the caches; a paged pass's block table
     follows the bindings of its unpaged twin */
  op_dispatch_args sd = {.kernel = K_ATTN_SPLIT,
                         .variant = var,
                         .params = &sp,
                         .params_size = sizeof sp,
                         .consts = cbw,
                         .n_consts = 2,
                         .access = qkn  ? (pg ? "rwwrwrrrrr" : "rwwrwrrrr")
                                   : ro ? (pg ? "rwwrwrrr" : "rwwrwrr")
                                        : (pg ? "rrrrwr" : "rrrrw"),
                         .bind = {q, kcache, vcache, pos, partial},
                         .grid = {kv->n_kv_head, mc, n_seq},
                         .indirect = indirect};
  int nb = 5;
  if (ro) {
    sd.bind[nb++] = ro->cs;
    sd.bind[nb++] = ro->vsrc.buf ? ro->vsrc : q;
  }
  if (pg) sd.bind[nb++] = pg->table;
  if (qkn) {
    sd.bind[nb++] = ro->q_norm;
    sd.bind[nb++] = ro->k_norm;
  }
  s = op_dispatch(rec, &sd);
  if (s) return s;
  attn_reduce_params rp = {.n_head = a->n_head,
                           .n_kv_head = kv->n_kv_head,
                           .head_dim = kv->head_dim,
                           .ctx = kv->ctx,
                           .window = a->window,
                           .max_chunks = mc,
                           .out_stride = a->out_stride,
                           .sinks = a->sinks.buf ? 1 + a->sink_head0 : 0};
  return op_dispatch(rec, &(op_dispatch_args){.kernel = K_ATTN_REDUCE,
                                              .variant = pg ? V_ATTN_REDUCE_PAGED : V_ATTN_REDUCE_F32,
                                              .params = &rp,
                                              .params_size = sizeof rp,
                                              .consts = &cb,
                                              .n_consts = 1,
                                              .access = "rrwr",
                                              .bind = {partial, pos, out, a->sinks.buf ? a->sinks : pos},
                                              .grid = {a->n_head, n_seq}});
}

/* ---- Prefill attention on subgroup matrices (kernels/attn_prefill_mma.wgsl; the fast precision) ---- */

/* workgroup memory: K and V tiles of 32 keys (q's 64 rows before the walk), 4 subgroups' scores and
   probabilities, the key range */
static uint32_t attn_mma_workgroup_bytes(uint32_t hd) {
  return 2 * 32 * (hd + 8) * 2 + 4 * 16 * 32 * 4 + 4 * 16 * 40 * 2 + 16;
}

int op_attention_mma_supports(const gpu_context *ctx, const op_kv_layout *kv, const op_attn_params *a) {
  if (a->pages || (kv->head_dim != 64 && kv->head_dim != 128)) return 0; /* no paged twin */
  if (a->sinks.buf) return 0;                                            /* no sinks */
  if (!kv->n_kv_head || !a->n_head || a->n_head % kv->n_kv_head || a->n_tokens < 2) return 0;
  /* a ring (a sliding window's cache) of fewer slots than a 32-key block could wrap twice in one block; a cache
     without a window is linear and never wraps */
  if (a->window && kv->ctx < 32) return 0;
  if ((a->n_tokens + 63) / 64 > ctx->limits.maxComputeWorkgroupsPerDimension) return 0;
  return op_smat_f16_ready(ctx, attn_mma_workgroup_bytes(kv->head_dim), 128);
}

wgllm_status op_attention_mma(gpu_recorder *rec, const op_kv_layout *kv, const op_attn_params *a, gpu_view q,
                              gpu_view kcache, gpu_view vcache, gpu_view pos, gpu_view out) {
  if (!op_attention_mma_supports(op_ctx(rec), kv, a))
    return op_fail(rec, WGLLM_ERR_UNSUPPORTED,
                   "attn_prefill_mma: needs f16 subgroup matrices, subgroups of 32, head_dim 64 or 128 (%u), at least "
                   "2 tokens (%u) and n_head a multiple of n_kv_head (%u, %u)",
                   kv->head_dim, a->n_tokens, a->n_head, kv->n_kv_head);
  attn_gpu_params p = attn_params_of(kv, a);
  const char *variant = kv->head_dim == 64 ? (kv->f16 ? V_ATTN_PREFILL_MMA_F16_D64 : V_ATTN_PREFILL_MMA_F32_D64)
                                           : (kv->f16 ? V_ATTN_PREFILL_MMA_F16_D128 : V_ATTN_PREFILL_MMA_F32_D128);
  return op_dispatch(rec, &(op_dispatch_args){.kernel = K_ATTN_PREFILL_MMA,
                                              .variant = variant,
                                              .params = &p,
                                              .params_size = sizeof p,
                                              .access = "rrrrw",
                                              .bind = {q, kcache, vcache, pos, out},
                                              .grid = {a->n_head, (a->n_tokens + 63) / 64}});
}
