/* Mixture-of-experts ops: the router's top-k (kernels/moe_route.wgsl), the per-expert pair lists and indirect
   arguments (kernels/moe_lists.wgsl), the expert linear on routed rows with the gate/up GLU fused
   (decode: kernels/gemv.wgsl's expert variants for the storages it reads, kernels/moe_linear.wgsl's GEMV a pair for
   the others; prefill: moe_linear's tiles grouped by expert) and the weighted
   combine (kernels/moe_combine.wgsl). docs/MOE.md shows how a model step strings them together. */
#include "ops.h"
#include <stdio.h>

#define NONE 0xffffffffu

typedef struct route_params {
  uint32_t T, E, k, mode, has_scale, _p0, _p1, _p2;
} route_params;
_Static_assert(sizeof(route_params) == 32, "route_params mirrors the Params block of kernels/moe_route.wgsl");
typedef struct lists_params {
  uint32_t np, E, TM, gx, off_cnt, off_off, off_ent, off_tile;
} lists_params;
_Static_assert(sizeof(lists_params) == 32, "lists_params mirrors the Params block of kernels/moe_lists.wgsl");
typedef struct linear_params {
  uint32_t N, K, k, np, E, rows_w, glu, act, x_pair, has_bias;
  float alpha, limit;
  uint32_t expert, off_off, off_ent, off_tile;
  uint32_t e_base, e_count, _p0, _p1;
} linear_params;
_Static_assert(sizeof(linear_params) == 80, "linear_params mirrors the Params block of kernels/moe_linear.wgsl");
typedef struct combine_params {
  uint32_t D, T, k, accumulate;
} combine_params;
_Static_assert(sizeof(combine_params) == 16, "combine_params mirrors the Params block of kernels/moe_combine.wgsl");

/* a piece of an expert weight: the whole tensor, or one of its parts (a range of whole experts) */
typedef struct moe_piece {
  op_wtype type;
  gpu_view data, scales;
  uint32_t group, e_count, e_base;
} moe_piece;

/* the shapes every MoE op shares: E experts, k of them a token, T * k pairs */
static wgllm_status check_shape(gpu_recorder *rec, const char *who, uint32_t T, uint32_t k, uint32_t E) {
  if (!T || !k || !E) return op_fail(rec, WGLLM_ERR_INTERNAL, "%s: empty shape T=%u k=%u E=%u", who, T, k, E);
  if (E > OP_MOE_MAX_EXPERTS)
    return op_fail(rec, WGLLM_ERR_UNSUPPORTED, "%s: %u experts (at most %u)", who, E, OP_MOE_MAX_EXPERTS);
  if (k > OP_MOE_MAX_K || k > E)
    return op_fail(rec, WGLLM_ERR_UNSUPPORTED, "%s: top-%u of %u experts (k at most %u and E)", who, k, E,
                   OP_MOE_MAX_K);
  if ((uint64_t)T * k > 0x7fffffffu) return op_fail(rec, WGLLM_ERR_UNSUPPORTED, "%s: %u x %u pairs", who, T, k);
  return WGLLM_OK;
}

static wgllm_status check_bytes(gpu_recorder *rec, const char *who, const char *what, gpu_view v, uint64_t bytes) {
  if (!v.buf) return op_fail(rec, WGLLM_ERR_INTERNAL, "%s: no %s buffer", who, what);
  if (gpu_view_bytes(v) < bytes)
    return op_fail(rec, WGLLM_ERR_INTERNAL, "%s: %s holds %llu bytes, %llu needed", who, what,
                   (unsigned long long)gpu_view_bytes(v), (unsigned long long)bytes);
  return WGLLM_OK;
}

/* The pieces of an expert weight [E][rows_w][K] into pc (*n of them): the whole weight, or its parts in expert order,
   each checked to be whole experts within u32 indices, in a storage op_check_weight takes, E experts in all */
static wgllm_status moe_pieces(gpu_recorder *rec, const char *who, const op_weight *w, uint32_t E, uint32_t rows_w,
                               uint32_t K, moe_piece pc[OP_W_MAX_PARTS], uint32_t *n) {
  uint32_t n_pieces = w->n_parts ? w->n_parts : 1, e0 = 0;
  for (uint32_t i = 0; i < n_pieces; i++) {
    pc[i] = w->n_parts ? (moe_piece){w->part[i].type,  w->part[i].data,          w->part[i].scales,
                                     w->part[i].group, w->part[i].rows / rows_w, e0}
                       : (moe_piece){w->type, w->data, w->scales, w->group, E, 0};
    uint32_t rows = w->n_parts ? w->part[i].rows : E * rows_w;
    if (!rows || rows % rows_w)
      return op_fail(rec, WGLLM_ERR_INTERNAL, "%s: part %u of %u rows is not whole experts of %u rows", who, i, rows,
                     rows_w);
    if ((uint64_t)rows * K > 0xffffffffull)
      return op_fail(rec, WGLLM_ERR_UNSUPPORTED, "%s: %u x %u weight elements past a u32 index", who, rows, K);
    op_weight pw = {.type = pc[i].type, .data = pc[i].data, .scales = pc[i].scales, .group = pc[i].group};
    wgllm_status s = op_check_weight(rec, who, &pw, rows, K);
    if (s) return s;
    e0 += pc[i].e_count;
  }
  if (e0 != E) return op_fail(rec, WGLLM_ERR_INTERNAL, "%s: parts of %u experts for E=%u", who, e0, E);
  *n = n_pieces;
  return WGLLM_OK;
}

wgllm_status op_moe_route(gpu_recorder *rec, gpu_view logits, gpu_view scale, gpu_view ids, gpu_view weights,
                          uint32_t T, uint32_t E, uint32_t k, op_moe_norm norm) {
  wgllm_status s = check_shape(rec, "moe_route", T, k, E);
  if (!s && (unsigned)norm > OP_MOE_TOPK_SOFTMAX)
    s = op_fail(rec, WGLLM_ERR_INTERNAL, "moe_route: normalisation %d unknown", (int)norm);
  if (!s) s = check_bytes(rec, "moe_route", "logits", logits, (uint64_t)T * E * 4);
  if (!s && scale.buf) s = check_bytes(rec, "moe_route", "scale", scale, (uint64_t)E * 4);
  if (!s) s = check_bytes(rec, "moe_route", "ids", ids, (uint64_t)T * k * 4);
  if (!s) s = check_bytes(rec, "moe_route", "weights", weights, (uint64_t)T * k * 4);
  if (s) return s;
  route_params p = {.T = T, .E = E, .k = k, .mode = (uint32_t)norm, .has_scale = scale.buf ? 1u : 0u};
  return op_dispatch(rec, &(op_dispatch_args){.kernel = K_MOE_ROUTE,
                                              .variant = V_MOE_ROUTE_F32,
                                              .params = &p,
                                              .params_size = sizeof p,
                                              .access = "rrww",
                                              /* scale unread without has_scale, but the binding must exist */
                                              .bind = {logits, scale.buf ? scale : logits, ids, weights},
                                              .groups = T});
}

op_moe_lists_layout op_moe_lists_layout_of(uint32_t n_pairs, uint32_t E, uint32_t tm) {
  op_moe_lists_layout l;
  l.cnt = 4;
  l.off = l.cnt + E;
  l.ent = l.off + E + 1;
  l.tile = l.ent + n_pairs;
  /* sum_e ceil(c_e / TM) <= floor(sum_e c_e / TM) + (experts with a partial tile, at most min(E, pairs)) */
  l.max_tiles = (tm ? n_pairs / tm : n_pairs) + (E < n_pairs ? E : n_pairs);
  l.words = l.tile + 2 * l.max_tiles;
  return l;
}

uint64_t op_moe_lists_words(uint32_t n_pairs, uint32_t E, uint32_t tm) {
  return op_moe_lists_layout_of(n_pairs, E, tm).words;
}

static lists_params lists_params_of(uint32_t np, uint32_t E, uint32_t gx, uint32_t tm) {
  op_moe_lists_layout l = op_moe_lists_layout_of(np, E, tm);
  return (lists_params){
      .np = np, .E = E, .TM = tm, .gx = gx, .off_cnt = l.cnt, .off_off = l.off, .off_ent = l.ent, .off_tile = l.tile};
}

wgllm_status op_moe_lists(gpu_recorder *rec, gpu_view ids, gpu_view lists, uint32_t T, uint32_t k, uint32_t E,
                          uint32_t tm) {
  wgllm_status s = check_shape(rec, "moe_lists", T, k, E);
  if (!s && (tm < 1 || tm > OP_MOE_TILE_M)) s = op_fail(rec, WGLLM_ERR_INTERNAL, "moe_lists: tiles of %u pairs", tm);
  if (!s) s = check_bytes(rec, "moe_lists", "ids", ids, (uint64_t)T * k * 4);
  if (!s) s = check_bytes(rec, "moe_lists", "lists", lists, op_moe_lists_words(T * k, E, tm) * 4);
  if (s) return s;
  lists_params p = lists_params_of(T * k, E, 0, tm);
  return op_dispatch(rec, &(op_dispatch_args){.kernel = K_MOE_LISTS,
                                              .variant = V_MOE_LISTS_LISTS,
                                              .params = &p,
                                              .params_size = sizeof p,
                                              .access = "rw",
                                              .bind = {ids, lists},
                                              .groups = 1});
}

uint32_t op_moe_tile_cols(uint32_t N, int glu) {
  uint32_t per = glu ? OP_MOE_TILE_N / 2 : OP_MOE_TILE_N;
  return (N + per - 1) / per;
}

wgllm_status op_moe_indirect(gpu_recorder *rec, gpu_view lists, gpu_view indirect, uint32_t T, uint32_t k, uint32_t E,
                             uint32_t N, int glu) {
  wgllm_status s = check_shape(rec, "moe_indirect", T, k, E);
  if (!s && !N) s = op_fail(rec, WGLLM_ERR_INTERNAL, "moe_indirect: N=0");
  if (!s) s = check_bytes(rec, "moe_indirect", "lists", lists, op_moe_lists_words(T * k, E, OP_MOE_TILE_M) * 4);
  if (!s) s = check_bytes(rec, "moe_indirect", "indirect", indirect, (uint64_t)E * 12);
  if (s) return s;
  lists_params p = lists_params_of(T * k, E, op_moe_tile_cols(N, glu), OP_MOE_TILE_M);
  return op_dispatch(rec, &(op_dispatch_args){.kernel = K_MOE_LISTS,
                                              .variant = V_MOE_LISTS_INDIRECT,
                                              .params = &p,
                                              .params_size = sizeof p,
                                              .access = "rw",
                                              .bind = {lists, indirect},
                                              .groups = (E + 255) / 256});
}

int op_moe_linear_fuses_norm(const op_weight *w, uint32_t K) {
  if (!w->n_parts) return op_gemv_experts_supports(w->type, w->group, K);
  for (uint32_t i = 0; i < w->n_parts; i++)
    if (!op_gemv_experts_supports(w->part[i].type, w->part[i].group, K)) return 0;
  return 1;
}

int op_moe_linear_routes(const gpu_context *ctx, const op_weight *w, uint32_t K, uint32_t E, uint32_t k) {
  /* the GEMV's largest workgroup arrays (16.5 KiB: the general kernel's reduction) and the ranking's 2.1 KiB */
  return op_moe_linear_fuses_norm(w, K) && E <= OP_MOE_MAX_EXPERTS && k >= 1 && k <= OP_MOE_MAX_K && k <= E &&
         ctx->limits.maxComputeWorkgroupStorageSize >= 20480;
}

wgllm_status op_moe_linear(gpu_recorder *rec, gpu_view x, const op_weight *w, gpu_view bias, gpu_view y,
                           const op_moe_linear_params *mp) {
  const char *who = "moe_linear";
  uint32_t T = mp->T, k = mp->k, E = mp->E, N = mp->N, K = mp->K, np = T * k;
  wgllm_status s = check_shape(rec, who, T, k, E);
  if (s) return s;
  if (!N || !K) return op_fail(rec, WGLLM_ERR_INTERNAL, "%s: empty shape N=%u K=%u", who, N, K);
  if (mp->route == OP_MOE_GROUPS)
    return op_fail(rec, WGLLM_ERR_INTERNAL, "%s: the groups route is the integer-dot GEMV's (op_moe_linear_q8)", who);
  if ((unsigned)mp->route > OP_MOE_PER_EXPERT || (mp->glu && (unsigned)mp->act > OP_MOE_ACT_SWIGLU_OAI))
    return op_fail(rec, WGLLM_ERR_INTERNAL, "%s: route %d / activation %d unknown", who, (int)mp->route, (int)mp->act);
  uint32_t rows_w = mp->glu ? 2 * N : N;
  if ((s = check_bytes(rec, who, "x", x, (uint64_t)(mp->x_pair ? np : T) * K * 4))) return s;
  if ((s = check_bytes(rec, who, "y", y, (uint64_t)np * N * 4))) return s;
  if (bias.buf && (s = check_bytes(rec, who, "bias", bias, (uint64_t)E * rows_w * 4))) return s;
  if (mp->norm_w.buf && (mp->route != OP_MOE_PAIRS || !op_moe_linear_fuses_norm(w, K)))
    return op_fail(rec, WGLLM_ERR_INTERNAL, "%s: a fused norm needs the pairs route in the GEMV", who);
  if (mp->norm_w.buf && (s = check_bytes(rec, who, "norm_w", mp->norm_w, (uint64_t)K * 4))) return s;
  if (mp->route_logits.buf) {
    if (mp->route != OP_MOE_PAIRS || !op_moe_linear_routes(op_ctx(rec), w, K, E, k) ||
        (unsigned)mp->route_norm > OP_MOE_TOPK_SOFTMAX)
      return op_fail(rec, WGLLM_ERR_INTERNAL, "%s: routing in the kernel needs the pairs route in the GEMV", who);
    if ((s = check_bytes(rec, who, "route_logits", mp->route_logits, (uint64_t)T * E * 4))) return s;
    if ((s = check_bytes(rec, who, "route_w", mp->route_w, (uint64_t)np * 4))) return s;
  }
  op_moe_lists_layout l = op_moe_lists_layout_of(np, E, OP_MOE_TILE_M);
  gpu_view route = mp->route == OP_MOE_PAIRS ? mp->ids : mp->lists;
  if (mp->route == OP_MOE_PAIRS)
    s = check_bytes(rec, who, "ids", route, (uint64_t)np * 4);
  else
    s = check_bytes(rec, who, "lists", route, (uint64_t)l.words * 4);
  if (!s && mp->route == OP_MOE_PER_EXPERT) s = check_bytes(rec, who, "indirect", mp->indirect, (uint64_t)E * 12);
  if (s) return s;
  moe_piece pc[OP_W_MAX_PARTS];
  uint32_t n_pieces = 0;
  if ((s = moe_pieces(rec, who, w, E, rows_w, K, pc, &n_pieces))) return s;
  linear_params p = {.N = N,
                     .K = K,
                     .k = k,
                     .np = np,
                     .E = E,
                     .rows_w = rows_w,
                     .glu = mp->glu ? 1u : 0u,
                     .act = mp->glu ? (uint32_t)mp->act : 0u,
                     .x_pair = mp->x_pair ? 1u : 0u,
                     .has_bias = bias.buf ? 1u : 0u,
                     .alpha = mp->alpha,
                     .limit = mp->limit,
                     .expert = NONE,
                     .off_off = l.off,
                     .off_ent = l.ent,
                     .off_tile = l.tile};
  uint32_t maxg = op_ctx(rec)->limits.maxComputeWorkgroupsPerDimension;
  uint32_t gx = mp->route == OP_MOE_PAIRS ? (N + 7) / 8 : op_moe_tile_cols(N, mp->glu);
  uint32_t gy = mp->route == OP_MOE_PAIRS ? np : l.max_tiles;
  if (gx > maxg || gy > maxg)
    return op_fail(rec, WGLLM_ERR_UNSUPPORTED, "%s: grid %ux%u over the device limit %u", who, gx, gy, maxg);
  for (uint32_t i = 0; !s && i < n_pieces; i++) {
    if (mp->route == OP_MOE_PAIRS && op_gemv_experts_supports(pc[i].type, pc[i].group, K)) {
      /* decode's pairs in the tuned GEMV's layouts (kernels/gemv.wgsl "_moe") */
      op_weight pw = {.type = pc[i].type, .data = pc[i].data, .scales = pc[i].scales, .group = pc[i].group};
      op_gemv_experts_args ga = {.N = N,
                                 .K = K,
                                 .np = np,
                                 .k = k,
                                 .E = E,
                                 .e_base = pc[i].e_base,
                                 .e_count = pc[i].e_count,
                                 .glu = mp->glu,
                                 .x_pair = mp->x_pair,
                                 .act = (int)p.act,
                                 .alpha = mp->alpha,
                                 .limit = mp->limit,
                                 .norm_w = mp->norm_w,
                                 .eps = mp->eps,
                                 .norm_offset = mp->norm_offset,
                                 .logits = mp->route_logits,
                                 .weights = mp->route_w,
                                 .route_mode = (int)mp->route_norm};
      s = op_gemv_experts(rec, x, &pw, bias, route, y, &ga);
      continue;
    }
    gpu_constant c[1];
    int nc = 0;
    if (pc[i].type == OP_W_Q4) c[nc++] = (gpu_constant){"G", (double)pc[i].group};
    char variant[48];
    snprintf(variant, sizeof variant, "%s%s", op_wtype_variant(pc[i].type), mp->route == OP_MOE_PAIRS ? "" : "_tile");
    int scales = op_wtype_has_scales(pc[i].type);
    p.e_base = pc[i].e_base;
    p.e_count = pc[i].e_count;
    op_dispatch_args a = {.kernel = K_MOE_LINEAR,
                          .variant = variant,
                          .params = &p,
                          .params_size = sizeof p,
                          .consts = nc ? c : NULL,
                          .n_consts = nc,
                          .access = scales ? "rrrrwr" : "rrrrw",
                          /* bias unread without has_bias, but the binding must exist */
                          .bind = {x, pc[i].data, bias.buf ? bias : x, route, y, scales ? pc[i].scales : (gpu_view){0}},
                          .grid = {gx, gy}};
    if (mp->route != OP_MOE_PER_EXPERT) {
      s = op_dispatch(rec, &a);
      continue;
    }
    for (uint32_t e = pc[i].e_base; !s && e < pc[i].e_base + pc[i].e_count; e++) {
      p.expert = e;
      gpu_view ind = {mp->indirect.buf, mp->indirect.offset + (uint64_t)e * 12, 12};
      a.indirect = &ind;
      s = op_dispatch(rec, &a);
    }
  }
  return s;
}

int op_moe_linear_q8_supports(const gpu_context *ctx, const op_weight *w, uint32_t K, op_moe_grouping route) {
  /* tiles: op_matmul_q8's storages for every piece (its predicate's row count: a tile is many pairs); pairs and
     groups: the integer-dot GEMV's, one token a pair, up to OP_GEMV_MAX_TOKENS a group */
  if (route == OP_MOE_PAIRS) return op_gemv_q8_supports(ctx, w, 1, K, NULL);
  if (route == OP_MOE_GROUPS) return op_gemv_q8_supports(ctx, w, OP_GEMV_MAX_TOKENS, K, NULL);
  return route == OP_MOE_TILES && op_matmul_q8_supports(ctx, w, OP_Q8_MIN_ROWS, K);
}

uint32_t op_moe_group_m(const gpu_context *ctx, uint32_t N, uint32_t K, int glu, uint32_t n_pairs, uint32_t E) {
  /* the pairs an expert on average, rounded down to a power of two, at most the GEMV's tokens and what its layout
     takes */
  uint32_t a = E ? n_pairs / E : 0, m = OP_MOE_GROUP_MIN;
  if (a < OP_MOE_GROUP_MIN) return 0;
  while (m * 2 <= a && m * 2 <= OP_GEMV_MAX_TOKENS)
    m *= 2;
  while (m >= OP_MOE_GROUP_MIN && !op_gemv_q8_fits(ctx, N, K, glu, m))
    m /= 2;
  return m >= OP_MOE_GROUP_MIN ? m : 0;
}

wgllm_status op_moe_linear_q8(gpu_recorder *rec, gpu_view xq, const op_weight *w, gpu_view bias, gpu_view y,
                              const op_moe_linear_params *mp) {
  const char *who = "moe_linear_q8";
  uint32_t T = mp->T, k = mp->k, E = mp->E, N = mp->N, K = mp->K, np = T * k;
  wgllm_status s = check_shape(rec, who, T, k, E);
  if (s) return s;
  if (!N || !K) return op_fail(rec, WGLLM_ERR_INTERNAL, "%s: empty shape N=%u K=%u", who, N, K);
  if (mp->glu && (unsigned)mp->act > OP_MOE_ACT_SWIGLU_OAI)
    return op_fail(rec, WGLLM_ERR_INTERNAL, "%s: activation %d unknown", who, (int)mp->act);
  if (mp->norm_w.buf || mp->route_logits.buf)
    return op_fail(rec, WGLLM_ERR_INTERNAL, "%s: a fused norm or routing is the pairs route's", who);
  if (!op_moe_linear_q8_supports(op_ctx(rec), w, K, mp->route))
    return op_fail(rec, WGLLM_ERR_UNSUPPORTED, "%s: no integer-dot tiles for %s weights (%u parts), K=%u, route %d",
                   who, op_wtype_name(w->type), w->n_parts, K, (int)mp->route);
  uint32_t rows_w = mp->glu ? 2 * N : N, xr = mp->x_pair ? np : T;
  if ((s = check_bytes(rec, who, "xq", xq, op_q8_act_bytes(op_ctx(rec), xr, K)))) return s;
  if ((s = check_bytes(rec, who, "y", y, (uint64_t)np * N * 4))) return s;
  if (bias.buf && (s = check_bytes(rec, who, "bias", bias, (uint64_t)E * rows_w * 4))) return s;
  /* decode: a pair (or a group of pairs) a workgroup row of the integer-dot GEMV */
  int pairs = mp->route == OP_MOE_PAIRS, groups = mp->route == OP_MOE_GROUPS;
  uint32_t tm = groups ? mp->group_m : OP_MOE_TILE_M;
  if (groups && tm != 2 && tm != 4 && tm != 8)
    return op_fail(rec, WGLLM_ERR_INTERNAL, "%s: groups of %u pairs (2, 4 or 8)", who, tm);
  if (pairs && (s = check_bytes(rec, who, "ids", mp->ids, (uint64_t)np * 4))) return s;
  if (pairs && np > op_ctx(rec)->limits.maxComputeWorkgroupsPerDimension)
    return op_fail(rec, WGLLM_ERR_UNSUPPORTED, "%s: %u pairs over the grid limit", who, np);
  if (!pairs && (s = check_bytes(rec, who, "lists", mp->lists, op_moe_lists_words(np, E, tm) * 4))) return s;
  op_q8_experts_args a = {.xq_rows = xr,
                          .N = N,
                          .K = K,
                          .np = np,
                          .k = k,
                          .E = E,
                          .glu = mp->glu,
                          .x_pair = mp->x_pair,
                          .act = (int)mp->act,
                          .alpha = mp->alpha,
                          .limit = mp->limit};
  op_gemv_experts_args g = {.N = N,
                            .K = K,
                            .np = np,
                            .k = k,
                            .E = E,
                            .glu = mp->glu,
                            .x_pair = mp->x_pair,
                            .act = (int)mp->act,
                            .alpha = mp->alpha,
                            .limit = mp->limit,
                            .group_m = groups ? tm : 0};
  moe_piece pc[OP_W_MAX_PARTS];
  uint32_t n_pieces = 0;
  if ((s = moe_pieces(rec, who, w, E, rows_w, K, pc, &n_pieces))) return s;
  for (uint32_t i = 0; !s && i < n_pieces; i++) {
    op_weight pw = {.type = pc[i].type, .data = pc[i].data, .scales = pc[i].scales, .group = pc[i].group};
    a.e_base = g.e_base = pc[i].e_base;
    a.e_count = g.e_count = pc[i].e_count;
    s = pairs || groups ? op_gemv_q8_experts(rec, xq, &pw, bias, pairs ? mp->ids : mp->lists, y, &g)
                        : op_matmul_q8_experts(rec, xq, &pw, bias, mp->lists, y, &a);
  }
  return s;
}

int op_moe_down_combine_supports(const gpu_context *ctx, const op_weight *w, uint32_t N, uint32_t K, uint32_t k) {
  if (w->n_parts || !k || !op_gemv_experts_supports(w->type, w->group, K)) return 0;
  /* a token's k pairs make one row of k * K: its steps a lane (the plan's) at most 8, where the H100 measured the
     combined GEMV faster (Qwen3-30B-A3B: 192 Q4_K steps over 64 lanes, 3 each); gpt-oss-20b's row (4 x 2880, 360 MXFP4
     blocks over 32 lanes then) ran 56 us a layer against 40 for the pairs' GEMV and the combine (docs/perf/31-moe call
     9); its 1,440 word steps now are 12 a lane over 128, still refused */
  op_gemv_plan pl = op_gemv_choose_plan(ctx, w->type, N, k * K, w->group, 0);
  uint32_t steps = k * K / (op_gemv_step(w->type) ? op_gemv_step(w->type) : 1);
  return pl.tk && (steps + pl.tk - 1) / pl.tk <= 8;
}

wgllm_status op_moe_down_combine(gpu_recorder *rec, gpu_view x, const op_weight *w, gpu_view bias, gpu_view ids,
                                 gpu_view weights, gpu_view out, uint32_t T, uint32_t k, uint32_t E, uint32_t N,
                                 uint32_t K, int accumulate) {
  const char *who = "moe_down_combine";
  wgllm_status s = check_shape(rec, who, T, k, E);
  if (s) return s;
  if (!N || !K) return op_fail(rec, WGLLM_ERR_INTERNAL, "%s: empty shape N=%u K=%u", who, N, K);
  if (!op_moe_down_combine_supports(op_ctx(rec), w, N, K, k))
    return op_fail(rec, WGLLM_ERR_UNSUPPORTED, "%s: %s weights in %u parts with K=%u, k=%u", who,
                   op_wtype_name(w->type), w->n_parts, K, k);
  if (T > op_ctx(rec)->limits.maxComputeWorkgroupsPerDimension)
    return op_fail(rec, WGLLM_ERR_UNSUPPORTED, "%s: %u tokens over the grid limit", who, T);
  if ((uint64_t)E * N * K > 0xffffffffull)
    return op_fail(rec, WGLLM_ERR_UNSUPPORTED, "%s: %u x %u x %u weight elements past a u32 index", who, E, N, K);
  if ((s = check_bytes(rec, who, "x", x, (uint64_t)T * k * K * 4))) return s;
  if ((s = check_bytes(rec, who, "ids", ids, (uint64_t)T * k * 4))) return s;
  if ((s = check_bytes(rec, who, "weights", weights, (uint64_t)T * k * 4))) return s;
  if ((s = check_bytes(rec, who, "out", out, (uint64_t)T * N * 4))) return s;
  if (bias.buf && (s = check_bytes(rec, who, "bias", bias, (uint64_t)E * N * 4))) return s;
  if ((s = op_check_weight(rec, who, w, E * N, K))) return s; /* E * N below 2^32: checked above */
  op_gemv_experts_args ga = {.N = N,
                             .K = K,
                             .np = T * k,
                             .k = k,
                             .E = E,
                             .e_base = 0,
                             .e_count = E,
                             .x_pair = 1,
                             .combine_w = weights,
                             .accumulate = accumulate};
  return op_gemv_experts(rec, x, w, bias, ids, out, &ga);
}

wgllm_status op_moe_combine(gpu_recorder *rec, gpu_view y, gpu_view weights, gpu_view out, uint32_t T, uint32_t k,
                            uint32_t D, int accumulate) {
  wgllm_status s = check_shape(rec, "moe_combine", T, k, k);
  if (!s && !D) s = op_fail(rec, WGLLM_ERR_INTERNAL, "moe_combine: D=0");
  if (!s && T > op_ctx(rec)->limits.maxComputeWorkgroupsPerDimension)
    s = op_fail(rec, WGLLM_ERR_UNSUPPORTED, "moe_combine: %u tokens exceed the grid limit", T);
  if (!s) s = check_bytes(rec, "moe_combine", "y", y, (uint64_t)T * k * D * 4);
  if (!s) s = check_bytes(rec, "moe_combine", "weights", weights, (uint64_t)T * k * 4);
  if (!s) s = check_bytes(rec, "moe_combine", "out", out, (uint64_t)T * D * 4);
  if (s) return s;
  combine_params p = {.D = D, .T = T, .k = k, .accumulate = accumulate ? 1u : 0u};
  return op_dispatch(rec, &(op_dispatch_args){.kernel = K_MOE_COMBINE,
                                              .variant = V_MOE_COMBINE_F32,
                                              .params = &p,
                                              .params_size = sizeof p,
                                              .access = "rrw",
                                              .bind = {y, weights, out},
                                              .grid = {(D + 255) / 256, T}});
}
