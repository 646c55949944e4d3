/* The attention and MLP blocks and the LM head the families' forward passes are built from (blocks.h).
   Attention of layer l: RMSNorm, fused Q/K/V projection (+ biases), optional per-head q/k RMSNorm and
   weightless v RMSNorm, RoPE, KV append (owning layers only), causal GQA attention over the source layer's
   cache (its own, or an earlier layer's for KV-shared layers), output projection, residual add (through
   Gemma's post-attention norm). MLP: RMSNorm, fused gate/up projection, GLU, down projection, residual add.
   For one token with weights the fused GEMV reads (q4gsw, q8, Q4_K, Q5_K, Q6_K; kernels/gemv.wgsl) the decode
   path fuses further: the norms ride in the projections, the residual adds in the output and down
   projections, the GLU in the gate/up projection (when gate and up are one piece), and attention is
   flash-decoding, whose first pass also applies RoPE and appends to the KV cache. A batched decode (f->tokens:
   one token each of several sessions) is a step's path with T rows (the fused path with T tokens a GEMV, or for
   other weights the plain GEMV over the rows, llm_linear), and token by token RoPE, cache append and flash-decoding
   over each token's own session's cache (a KV-shared layer: q rotated apart, the source layer's cache read). A sparse
   layer's FFN is the mixture of experts (llm_block_moe), the same on every path. */
#include "blocks.h"

static gpu_view V(gpu_buffer *b) { return gpu_whole(b); }

wgllm_status llm_linear(const llm_fwd *f, gpu_view x, const op_weight *w, gpu_view bias, gpu_view y, uint32_t M,
                        uint32_t N, uint32_t K) {
  const gpu_context *ctx = op_ctx(f->rec);
  /* a decode step's rows (one session's token, or a batched step's): the GEMV, whose rows sum alike alone and in a
     batch, for weights the integer-dot kernels do not take; a prompt's rows the tiled GEMM, whose rows sum alike
     however passes cut the prompt */
  int decode = !f->fo->prefill && (f->tokens || f->T == 1);
  int fast = f->fo->fast && f->s->xq;
  if (decode && !(fast && (op_gemv_q8_supports(ctx, w, M, K, NULL) || op_matmul_q8_supports(ctx, w, M, K))))
    return op_matvec_generic(f->rec, x, w, bias, y, M, N, K);
  if (fast) {
    op_fast_scratch fs = {V(f->s->xq), f->s->x16 ? V(f->s->x16) : (gpu_view){0},
                          f->s->w16 ? V(f->s->w16) : (gpu_view){0}};
    return op_linear_fast(f->rec, x, &fs, w, bias, y, M, N, K);
  }
  return op_linear(f->rec, x, w, bias, y, M, N, K);
}

/* The fused decode GEMV of one token or a batch: on int8 activations when the pass is fast (op_gemv_fast: the
   quantizer takes the norm, the integer-dot GEMV the rest, or past 8 tokens the small-M GEMM where the scratch has
   its partial sums, or the exact GEMV as a whole), else exact. */
static wgllm_status llm_gemv(const llm_fwd *f, gpu_view x, const op_weight *w, gpu_view bias, gpu_view y, uint32_t N,
                             uint32_t K, const op_gemv_opts *o) {
  if (f->fo->fast && f->s->xq) {
    op_gemv_opts fo = *o;
    if (f->s->part) fo.part = V(f->s->part); /* past 8 tokens, the small-M GEMM */
    return op_gemv_fast(f->rec, x, V(f->s->xq), w, bias, y, N, K, &fo);
  }
  return op_gemv(f->rec, x, w, bias, y, N, K, o);
}

int llm_fused_decode_ok(gpu_recorder *rec, const llm_model *m, uint32_t T) {
  const llm_hparams *hp = &m->hp;
  int sg, ok = 1;
  for (uint32_t l = 0; ok && l < hp->n_layer; l++) {
    const llm_layer *ly = &m->layers[l];
    uint32_t F = llm_layer_n_ff(hp, l);
    ok = op_gemv_supports(op_ctx(rec), &ly->wqkv, T, hp->n_embd, &sg) &&
         op_gemv_supports(op_ctx(rec), &ly->wo, T, llm_layer_q_width(hp, l), &sg);
    /* a sparse layer's FFN has no fused GEMV of its own: its block (llm_block_moe) runs on any pass, so only the
       attention's projections decide */
    if (ok && !llm_layer_is_moe(hp, l))
      ok = op_gemv_supports(op_ctx(rec), &ly->w_gate_up, T, hp->n_embd, &sg) &&
           op_gemv_supports(op_ctx(rec), &ly->w_down, T, F, &sg);
  }
  return ok;
}

/* ---- the attention block: the shared projection and output, and one function a path (prefill, one-token
   decode, batched decode) for RoPE, the cache append and attention in between ---- */

/* Layer l's attention shape, and where its q, k and v lie after the projection and the per-head norms: q and k
   (and v unless vsrc says otherwise) in qk's rows of qk_stride, k at k_off, v at v_off of vb's rows of v_stride. */
typedef struct attn_layer {
  uint32_t l, head_dim, q_width, n_head_kv, rep, rot_dim, src;
  int owns_kv;
  gpu_buffer *rope_cs; /* the single-session paths' table (a batched token reads its own session's) */
  gpu_buffer *qk, *vb;
  uint32_t qk_stride, k_off, v_off, v_stride;
  gpu_view vsrc;       /* V from q's buffer (none) or from vb */
  int qk_norm_in_attn; /* the per-head q/k norms left to the flash-decoding pass (with its RoPE) */
} attn_layer;

/* One group of KV heads of the layer's (source's) cache: its layout and K/V ranges, the query heads that read it,
   and their offsets in a token's q row, k row, v row and output row. */
typedef struct attn_group {
  op_kv_layout layout;
  gpu_view k, v;
  uint32_t n_head, q_off, k_off, v_off;
} attn_group;

static uint32_t attn_group_at(const llm_kv_cache *kv, const attn_layer *L, uint32_t j, attn_group *g) {
  uint32_t h0, n = llm_kv_group(kv, L->src, j, &g->layout, &g->k, &g->v, &h0);
  g->n_head = g->layout.n_kv_head * L->rep;
  g->q_off = h0 * L->rep * L->head_dim;
  g->k_off = L->k_off + h0 * L->head_dim;
  g->v_off = L->v_off + h0 * L->head_dim;
  return n;
}

/* Whether one token's attention of the single-session path runs as flash-decoding (the group's heads fit it), not
   the prefill kernels */
static int attn_flash_decode(const llm_fwd *f, const attn_layer *L) {
  attn_group g0;
  if (f->tokens || f->seqs || f->T != 1 || !f->s->attn_partial) return 0;
  attn_group_at(f->kv, L, 0, &g0);
  return op_attention_decode_supports(&g0.layout, g0.n_head);
}

/* The shared first half: norm and fused Q/K/V projection (+ biases) into s->qkv [T][S] (q | k | v, q | k when
   V is K, q alone in a KV-shared layer), the per-head q/k norms and weightless v norm into s->qk2; L says where
   q, k and v ended up. */
static wgllm_status attn_project(const llm_fwd *f, uint32_t l, attn_layer *L) {
  gpu_recorder *rec = f->rec;
  const llm_model *m = f->m;
  const llm_hparams *hp = &m->hp;
  const llm_scratch *s = f->s;
  const llm_layer *ly = &m->layers[l];
  uint32_t T = f->T, D = hp->n_embd, S = llm_layer_qkv_rows(hp, l), nkv = llm_layer_kv_width(hp, l);
  const float no = hp->norm_offset;
  *L = (attn_layer){.l = l,
                    .head_dim = llm_layer_head_dim(hp, l),
                    .q_width = llm_layer_q_width(hp, l),
                    .n_head_kv = llm_layer_n_head_kv(hp, l),
                    .rot_dim = llm_layer_rot_dim(hp, l),
                    .src = llm_layer_kv_source(hp, l),
                    .owns_kv = llm_layer_owns_kv(hp, l),
                    .rope_cs = llm_layer_rope_local(hp, l) && f->rope->local ? f->rope->local : f->rope->global};
  L->rep = hp->n_head / L->n_head_kv;
  uint32_t hd = L->head_dim, nq = L->q_width, nkv_h = L->n_head_kv;
  gpu_view bqkv = hp->qkv_bias ? ly->bqkv : (gpu_view){0};
  wgllm_status st;
  if (f->fused) {
    op_gemv_opts o = {.norm_w = ly->attn_norm, .eps = hp->norm_eps, .norm_offset = no, .n_tokens = T};
    st = llm_gemv(f, V(s->x), &ly->wqkv, bqkv, V(s->qkv), S, D, &o);
  } else {
    st = op_rms_norm(rec, V(s->x), ly->attn_norm, V(s->xn), D, T, D, D, hp->norm_eps, no);
    if (!st) st = llm_linear(f, V(s->xn), &ly->wqkv, bqkv, V(s->qkv), T, S, D);
  }
  L->qk = L->vb = s->qkv;
  L->k_off = nq;
  L->qk_stride = L->v_stride = S;
  L->v_off = llm_layer_v_is_k(hp, l) ? nq : nq + nkv;
  /* one token's flash-decoding with RoPE folded in (attention_decode) norms q and k itself where there is no v norm */
  L->qk_norm_in_attn =
      hp->qk_norm && !hp->v_norm && L->owns_kv && L->rot_dim % 4 == 0 && !f->fo->unfused && attn_flash_decode(f, L);
  if (!st && hp->qk_norm && !L->qk_norm_in_attn) {
    /* the heads of each token: in the fused QKV row (stride S) and out into q | k | v rows (stride S2) */
    /* the q heads and then (an owning layer) the k heads, which follow them in both rows, in one dispatch */
    uint32_t S2 = L->owns_kv ? nq + 2 * nkv : nq, heads = hp->n_head + (L->owns_kv ? nkv_h : 0);
    op_rms_norm_params qn = {.n = hd,
                             .rows = T * heads,
                             .in = {.off = 0, .stride = hd, .group = heads, .gstride = S},
                             .out = {.off = 0, .stride = hd, .group = heads, .gstride = S2},
                             .eps = hp->norm_eps,
                             .w_offset = no,
                             .w2_from = L->owns_kv ? hp->n_head : 0,
                             .w2 = ly->k_norm};
    st = op_rms_norm_rows(rec, V(s->qkv), ly->q_norm, V(s->qk2), &qn);
    if (!st && L->owns_kv && hp->v_norm) { /* weightless: the weight is ones, offset 0 */
      op_rms_norm_params vn = {.n = hd,
                               .rows = T * nkv_h,
                               .in = {.off = L->v_off, .stride = hd, .group = nkv_h, .gstride = S},
                               .out = {.off = nq + nkv, .stride = hd, .group = nkv_h, .gstride = S2},
                               .eps = hp->norm_eps,
                               .w_offset = 0};
      st = op_rms_norm_rows(rec, V(s->qkv), m->ones, V(s->qk2), &vn);
      L->vb = s->qk2;
      L->v_off = nq + nkv;
      L->v_stride = S2;
    }
    L->qk = s->qk2;
    L->qk_stride = S2;
  }
  L->vsrc = L->vb == L->qk ? (gpu_view){0} : V(L->vb);
  return st;
}

/* RoPE of q (a KV-shared layer: its source layer wrote the cache) and, in an owning layer, of k, as dispatches of
   their own: where no fused kernel takes them. */
static wgllm_status attn_rope_apart(const llm_fwd *f, const attn_layer *L) {
  const llm_hparams *hp = &f->m->hp;
  op_rope_params rq = {.n_tokens = f->T,
                       .n_heads = hp->n_head,
                       .head_dim = L->head_dim,
                       .rot_dim = L->rot_dim,
                       .x_off = 0,
                       .token_stride = L->qk_stride,
                       .mode = hp->rope_mode,
                       .max_pos = f->kv->ctx};
  wgllm_status st = op_rope(f->rec, V(L->qk), V(f->s->pos), V(L->rope_cs), &rq);
  if (!st && L->owns_kv) {
    op_rope_params rk = rq;
    rk.n_heads = L->n_head_kv;
    rk.x_off = L->k_off;
    st = op_rope(f->rec, V(L->qk), V(f->s->pos), V(L->rope_cs), &rk);
  }
  return st;
}

/* RoPE of q alone for rows [row0, row0 + n) at positions pos [n] (a KV-shared layer of a batched pass: its source
   layer wrote the cache; the one-token path's attn_rope_apart, row by row the same). */
static wgllm_status attn_rope_q_rows(const llm_fwd *f, const attn_layer *L, uint32_t row0, uint32_t n, gpu_view pos,
                                     gpu_buffer *rope_cs, uint32_t max_pos) {
  const llm_hparams *hp = &f->m->hp;
  op_rope_params rq = {.n_tokens = n,
                       .n_heads = hp->n_head,
                       .head_dim = L->head_dim,
                       .rot_dim = L->rot_dim,
                       .x_off = row0 * L->qk_stride,
                       .token_stride = L->qk_stride,
                       .mode = hp->rope_mode,
                       .max_pos = max_pos};
  return op_rope(f->rec, V(L->qk), pos, V(rope_cs), &rq);
}

/* An owning layer's cache append of a group's KV heads: with RoPE of q and k in the same dispatch (rope_kv), or
   a plain write of k and v already rotated. */
static wgllm_status attn_append(const llm_fwd *f, const attn_layer *L, const attn_group *g, int rope_kv) {
  if (rope_kv) {
    op_rope_kv_params rp = {.n_tokens = f->T,
                            .n_head = g->n_head,
                            .rot_dim = L->rot_dim,
                            .max_pos = f->kv->ctx,
                            .mode = f->m->hp.rope_mode,
                            .q_off = g->q_off,
                            .q_stride = L->qk_stride,
                            .k_off = g->k_off,
                            .k_stride = L->qk_stride,
                            .v_off = g->v_off,
                            .v_stride = L->v_stride,
                            .pages = llm_kv_pages(f->kv, L->src)};
    return op_rope_kv(f->rec, &g->layout, &rp, V(L->qk), L->vsrc, V(f->s->pos), V(L->rope_cs), g->k, g->v);
  }
  op_kv_write_params wp = {.n_tokens = f->T,
                           .k_off = g->k_off,
                           .k_stride = L->qk_stride,
                           .v_off = g->v_off,
                           .v_stride = L->v_stride,
                           .pages = llm_kv_pages(f->kv, L->src)};
  return op_kv_write(f->rec, &g->layout, &wp, V(L->qk), V(L->vb), V(f->s->pos), g->k, g->v);
}

/* Layer l's attention sinks (gpt-oss), or none */
static gpu_view attn_sinks(const llm_fwd *f, const attn_layer *L) {
  return f->m->hp.sinks ? f->m->layers[L->l].sinks : (gpu_view){0};
}

/* The attention's math for a group's query heads of T tokens (q rows of qk_stride, output rows of q_width). */
static op_attn_params attn_params(const llm_fwd *f, const attn_layer *L, const attn_group *g) {
  const llm_hparams *hp = &f->m->hp;
  return (op_attn_params){.n_tokens = f->T,
                          .n_head = g->n_head,
                          .q_stride = L->qk_stride,
                          .q_off = g->q_off,
                          .out_stride = L->q_width,
                          .window = llm_layer_window(hp, L->l),
                          .scale = hp->attn_scale,
                          .softcap = 0.0f,
                          .sinks = attn_sinks(f, L),
                          .sink_head0 = g->q_off / L->head_dim,
                          .max_len = f->fo->max_len,
                          .pages = llm_kv_pages(f->kv, L->src)};
}

/* Prefill (or one token without flash-decoding): RoPE of q and k with the cache append in one dispatch where the
   rotary dimension allows (apart otherwise), then attention over the cache, a dispatch a group of KV heads. */
static wgllm_status attention_prefill(const llm_fwd *f, const attn_layer *L, uint32_t n_groups) {
  int rope_kv = L->owns_kv && L->rot_dim % 4 == 0;
  wgllm_status st = rope_kv ? WGLLM_OK : attn_rope_apart(f, L);
  for (uint32_t j = 0; !st && j < n_groups; j++) {
    attn_group g;
    attn_group_at(f->kv, L, j, &g);
    if (L->owns_kv) st = attn_append(f, L, &g, rope_kv);
    op_attn_params ap = attn_params(f, L, &g);
    gpu_view out = {.buf = f->s->attn, .offset = (uint64_t)g.q_off * 4}; /* its heads' columns of every token's row */
    if (st) break;
    if (f->fo->fast && !ap.pages && op_attention_mma_supports(op_ctx(f->rec), &g.layout, &ap)) /* tensor cores */
      st = op_attention_mma(f->rec, &g.layout, &ap, V(L->qk), g.k, g.v, V(f->s->pos), out);
    else
      st = op_attention(f->rec, &g.layout, &ap, V(L->qk), g.k, g.v, V(f->s->pos), out);
  }
  return st;
}

/* One token with flash-decoding: RoPE and the cache append ride in the attention's first pass (fused path), or
   run before it as prefill's do (the unfused comparison path, a rotary dimension the fold does not take). */
static wgllm_status attention_decode(const llm_fwd *f, const attn_layer *L, uint32_t n_groups) {
  const llm_scratch *s = f->s;
  int rope_in_attn = L->owns_kv && L->rot_dim % 4 == 0 && !f->fo->unfused;
  int rope_kv = L->owns_kv && !rope_in_attn && L->rot_dim % 4 == 0;
  wgllm_status st = rope_in_attn || rope_kv ? WGLLM_OK : attn_rope_apart(f, L);
  for (uint32_t j = 0; !st && j < n_groups; j++) {
    attn_group g;
    attn_group_at(f->kv, L, j, &g);
    if (L->owns_kv && !rope_in_attn) st = attn_append(f, L, &g, rope_kv);
    op_attn_params ap = attn_params(f, L, &g);
    op_attn_rope ar = {.cs = V(L->rope_cs),
                       .vsrc = L->vsrc,
                       .rot_dim = L->rot_dim,
                       .max_pos = f->kv->ctx,
                       .k_off = g.k_off,
                       .v_off = g.v_off,
                       .mode = f->m->hp.rope_mode};
    if (rope_in_attn) ap.rope = &ar;
    if (rope_in_attn && L->qk_norm_in_attn) {
      const llm_layer *ly = &f->m->layers[L->l];
      ar.q_norm = ly->q_norm;
      ar.k_norm = ly->k_norm;
      ar.eps = f->m->hp.norm_eps;
      ar.w_offset = f->m->hp.norm_offset;
    }
    gpu_view out = {.buf = s->attn, .offset = (uint64_t)g.q_off * 4}, args = V(s->attn_args);
    int indirect = f->fo->attn_grid == LLM_ATTN_GRID_INDIRECT;
    if (!st)
      st = op_attention_decode(f->rec, &g.layout, &ap, V(L->qk), g.k, g.v, V(s->pos), V(s->attn_partial),
                               indirect ? &args : NULL, out);
  }
  return st;
}

/* One flash-decoding pair for group gr's rows over pages (in an owning layer with RoPE and the cache append folded
   in; a KV-shared layer's q is rotated before it: attn_rope_q_rows): q of row i at q_off + i * qk_stride (the
   group's rows from row0: offsets in the parameters, not binding offsets), its output at row i of s->attn from row0
   (a binding offset: llm_batch_forward_ok). */
static wgllm_status paged_pair(const llm_fwd *f, const attn_layer *L, const attn_group *g, const op_kv_layout *lay,
                               const op_kv_pages *pages, const llm_fwd_paged_group *gr, gpu_buffer *rope_cs,
                               uint32_t max_pos) {
  const llm_hparams *hp = &f->m->hp;
  op_attn_rope ar = {.cs = V(rope_cs),
                     .vsrc = L->vsrc,
                     .rot_dim = L->rot_dim,
                     .max_pos = max_pos,
                     .k_off = gr->row0 * L->qk_stride + g->k_off,
                     .v_off = gr->row0 * (L->vsrc.buf ? L->v_stride : L->qk_stride) + g->v_off,
                     .mode = hp->rope_mode};
  op_attn_params ap = {.n_tokens = gr->n,
                       .n_head = g->n_head,
                       .q_stride = L->qk_stride,
                       .q_off = gr->row0 * L->qk_stride + g->q_off,
                       .out_stride = L->q_width,
                       .window = llm_layer_window(hp, L->l),
                       .scale = hp->attn_scale,
                       .softcap = 0.0f,
                       .sinks = attn_sinks(f, L),
                       .sink_head0 = g->q_off / L->head_dim,
                       .max_len = gr->max_len,
                       .rope = L->owns_kv ? &ar : NULL,
                       .pages = pages};
  gpu_view out = {f->s->attn, (uint64_t)gr->row0 * L->q_width * 4, 0};
  return op_attention_decode(f->rec, lay, &ap, V(L->qk), g->k, g->v, gr->pos, gr->partial, NULL, out);
}

/* Batched decode over one pool (a layer the pool holds): every token's RoPE, cache append and flash-decoding in
   one dispatch pair a group of one length bucket over the step's block table. */
static wgllm_status attention_paged(const llm_fwd *f, const attn_layer *L) {
  const llm_hparams *hp = &f->m->hp;
  const llm_fwd_paged *pg = f->paged;
  attn_group g;
  attn_group_at(f->tokens[0].kv, L, 0, &g); /* a pooled layer: one group, q_off 0 */
  if (!op_attention_decode_supports(&g.layout, g.n_head))
    return op_fail(f->rec, WGLLM_ERR_UNSUPPORTED, "batched decode: layer %u's heads have no flash-decoding", L->l);
  gpu_buffer *rope_cs = llm_layer_rope_local(hp, L->l) && pg->rope->local ? pg->rope->local : pg->rope->global;
  wgllm_status st = WGLLM_OK;
  for (uint32_t k = 0; !st && k < pg->n_groups; k++) {
    const llm_fwd_paged_group *gr = &pg->groups[k];
    op_kv_layout lay = g.layout;
    lay.ctx = gr->ctx;
    op_kv_pages pages = {.table = gr->table,
                         .max_blocks = pg->max_blocks,
                         .block = pg->block,
                         .n_blocks = pg->n_blocks,
                         .v_stride = L->v_stride};
    if (!L->owns_kv) st = attn_rope_q_rows(f, L, gr->row0, gr->n, gr->pos, rope_cs, pg->rope_max_pos);
    if (!st) st = paged_pair(f, L, &g, &lay, &pages, gr, rope_cs, pg->rope_max_pos);
  }
  return st;
}

/* Speculation's verify rows (llm_fwd_paged.one_seq): the rows of one session, over its own cache seen as a pool of
   one block, one flash-decoding pair a group of one length bucket, twice in an owning layer (the first appends the
   rows' K and V), once in a KV-shared layer (its source layer appended them; q rotated first). Returns 1 (nothing
   recorded) for a layer it does not take: caches in several binding groups, or on a pool. */
static int attention_rows(const llm_fwd *f, const attn_layer *L, wgllm_status *st) {
  const llm_hparams *hp = &f->m->hp;
  const llm_fwd_paged *pg = f->paged;
  const llm_fwd_token *tk = &f->tokens[0];
  attn_group g;
  if (attn_group_at(tk->kv, L, 0, &g) != 1 || llm_kv_pages(tk->kv, L->src) ||
      !op_attention_decode_supports(&g.layout, g.n_head))
    return 1;
  gpu_buffer *rope_cs = llm_layer_rope_local(hp, L->l) && tk->rope->local ? tk->rope->local : tk->rope->global;
  *st = WGLLM_OK;
  for (uint32_t k = 0; !*st && k < pg->n_groups; k++) {
    const llm_fwd_paged_group *gr = &pg->groups[k];
    op_kv_pages pages = {
        .table = gr->table, .max_blocks = 1, .block = g.layout.ctx, .n_blocks = 1, .v_stride = L->v_stride};
    if (!L->owns_kv) *st = attn_rope_q_rows(f, L, gr->row0, gr->n, gr->pos, rope_cs, tk->kv->ctx);
    for (int pass = L->owns_kv ? 0 : 1; !*st && pass < 2; pass++)
      *st = paged_pair(f, L, &g, &g.layout, &pages, gr, rope_cs, tk->kv->ctx);
  }
  return 0;
}

/* Batched decode: token i's RoPE, cache append and flash-decoding over its own session's cache (a dispatch set
   a token and a group of KV heads), q of row i at q_off + i * qk_stride, its output at row i of s->attn; the
   layers of one pool that every token's cache is on, one pair for all (attention_paged). */
static wgllm_status attention_batched(const llm_fwd *f, const attn_layer *L) {
  const llm_hparams *hp = &f->m->hp;
  wgllm_status st = WGLLM_OK;
  if (f->paged && f->paged->one_seq && !attention_rows(f, L, &st)) return st;
  if (f->paged && !f->paged->one_seq && llm_kv_pages(f->tokens[0].kv, L->src)) return attention_paged(f, L);
  for (uint32_t i = 0; !st && i < f->n_seq; i++) {
    const llm_fwd_token *tk = &f->tokens[i];
    gpu_buffer *rope_cs = llm_layer_rope_local(hp, L->l) && tk->rope->local ? tk->rope->local : tk->rope->global;
    attn_group g;
    uint32_t n_groups = attn_group_at(tk->kv, L, 0, &g);
    if (!L->owns_kv) st = attn_rope_q_rows(f, L, i, 1, tk->pos, rope_cs, tk->kv->ctx);
    for (uint32_t j = 0; !st && j < n_groups; j++) {
      attn_group_at(tk->kv, L, j, &g);
      if (!op_attention_decode_supports(&g.layout, g.n_head))
        return op_fail(f->rec, WGLLM_ERR_UNSUPPORTED, "batched decode: layer %u's heads have no flash-decoding", L->l);
      op_attn_params ap = {.n_tokens = 1,
                           .n_head = g.n_head,
                           .q_stride = L->qk_stride,
                           .q_off = i * L->qk_stride + g.q_off,
                           .out_stride = L->q_width,
                           .window = llm_layer_window(hp, L->l),
                           .scale = hp->attn_scale,
                           .softcap = 0.0f,
                           .sinks = attn_sinks(f, L),
                           .sink_head0 = g.q_off / L->head_dim,
                           .max_len = tk->max_len,
                           .pages = llm_kv_pages(tk->kv, L->src)};
      op_attn_rope ar = {.cs = V(rope_cs),
                         .vsrc = L->vsrc,
                         .rot_dim = L->rot_dim,
                         .max_pos = tk->kv->ctx,
                         .k_off = i * L->qk_stride + g.k_off,
                         .v_off = i * L->v_stride + g.v_off,
                         .mode = hp->rope_mode};
      if (L->owns_kv) ap.rope = &ar;
      gpu_view args = V(tk->attn_args), out = {.buf = f->s->attn, .offset = ((uint64_t)i * L->q_width + g.q_off) * 4};
      st = op_attention_decode(f->rec, &g.layout, &ap, V(L->qk), g.k, g.v, tk->pos, V(tk->attn_partial),
                               tk->attn_grid == LLM_ATTN_GRID_INDIRECT ? &args : NULL, out);
    }
  }
  return st;
}

/* Batched prefill: each session's rows (row0 .. row0 + n) through RoPE with the cache append and attention over its
   own cache, a dispatch set a session and group of KV heads, its rows' offsets in the kernels' parameters (q, k and
   v rows of qk_stride / v_stride), its output rows at a binding offset (llm_prefill_batch_ok). */
static wgllm_status attention_prefill_batch(const llm_fwd *f, const attn_layer *L) {
  const llm_hparams *hp = &f->m->hp;
  wgllm_status st = WGLLM_OK;
  for (uint32_t k = 0; !st && k < f->n_seqs; k++) {
    const llm_fwd_seq *sq = &f->seqs[k];
    gpu_buffer *rope_cs = llm_layer_rope_local(hp, L->l) && sq->rope->local ? sq->rope->local : sq->rope->global;
    const op_kv_pages *pages = llm_kv_pages(sq->kv, L->src);
    attn_group g;
    uint32_t n_groups = attn_group_at(sq->kv, L, 0, &g);
    uint32_t q_row = sq->row0 * L->qk_stride, v_row = sq->row0 * L->v_stride;
    for (uint32_t j = 0; !st && j < n_groups; j++) {
      attn_group_at(sq->kv, L, j, &g);
      op_rope_kv_params rp = {.n_tokens = sq->n,
                              .n_head = g.n_head,
                              .rot_dim = L->rot_dim,
                              .max_pos = sq->kv->ctx,
                              .mode = hp->rope_mode,
                              .q_off = q_row + g.q_off,
                              .q_stride = L->qk_stride,
                              .k_off = q_row + g.k_off,
                              .k_stride = L->qk_stride,
                              .v_off = (L->vsrc.buf ? v_row : q_row) + g.v_off,
                              .v_stride = L->vsrc.buf ? L->v_stride : L->qk_stride,
                              .pages = pages};
      st = op_rope_kv(f->rec, &g.layout, &rp, V(L->qk), L->vsrc, sq->pos, V(rope_cs), g.k, g.v);
      op_attn_params ap = {.n_tokens = sq->n,
                           .n_head = g.n_head,
                           .q_stride = L->qk_stride,
                           .q_off = q_row + g.q_off,
                           .out_stride = L->q_width,
                           .window = llm_layer_window(hp, L->l),
                           .scale = hp->attn_scale,
                           .softcap = 0.0f,
                           .sinks = attn_sinks(f, L),
                           .sink_head0 = g.q_off / L->head_dim,
                           .max_len = 0,
                           .pages = pages};
      gpu_view out = {f->s->attn, ((uint64_t)sq->row0 * L->q_width + g.q_off) * 4, 0};
      if (st) break;
      if (f->fo->fast && !pages && op_attention_mma_supports(op_ctx(f->rec), &g.layout, &ap))
        st = op_attention_mma(f->rec, &g.layout, &ap, V(L->qk), g.k, g.v, sq->pos, out);
      else
        st = op_attention(f->rec, &g.layout, &ap, V(L->qk), g.k, g.v, sq->pos, out);
    }
  }
  return st;
}

/* The shared second half: output projection and the residual add (through Gemma's post-attention norm). */
static wgllm_status attn_output(const llm_fwd *f, const attn_layer *L) {
  gpu_recorder *rec = f->rec;
  const llm_hparams *hp = &f->m->hp;
  const llm_scratch *s = f->s;
  const llm_layer *ly = &f->m->layers[L->l];
  uint32_t T = f->T, D = hp->n_embd, nq = L->q_width;
  const float no = hp->norm_offset;
  gpu_view bo = hp->out_bias ? ly->bo : (gpu_view){0}; /* gpt-oss's output bias */
  wgllm_status st;
  if (f->fused) {
    op_gemv_opts oo = {.accumulate = 1, .n_tokens = T}, op = {.n_tokens = T};
    if (hp->sandwich_norms) {
      st = llm_gemv(f, V(s->attn), &ly->wo, bo, V(s->proj), D, nq, &op);
      if (!st) st = op_rms_norm_add(rec, V(s->proj), ly->post_attn_norm, V(s->x), D, T, hp->norm_eps, no);
      return st;
    }
    return llm_gemv(f, V(s->attn), &ly->wo, bo, V(s->x), D, nq, &oo);
  }
  st = llm_linear(f, V(s->attn), &ly->wo, bo, V(s->proj), T, D, nq);
  if (!st && hp->sandwich_norms)
    return op_rms_norm_add(rec, V(s->proj), ly->post_attn_norm, V(s->x), D, T, hp->norm_eps, no);
  if (!st) st = op_add_inplace(rec, V(s->x), V(s->proj), T * D, T * D);
  return st;
}

wgllm_status llm_block_attention(const llm_fwd *f, uint32_t l) {
  attn_layer L;
  wgllm_status st = attn_project(f, l, &L);
  if (!st && f->tokens) {
    st = attention_batched(f, &L);
  } else if (!st && f->seqs) {
    st = attention_prefill_batch(f, &L);
  } else if (!st) {
    /* flash-decoding for one token where the group's heads fit it, the prefill kernels otherwise */
    attn_group g0;
    uint32_t n_groups = attn_group_at(f->kv, &L, 0, &g0);
    st = attn_flash_decode(f, &L) ? attention_decode(f, &L, n_groups) : attention_prefill(f, &L, n_groups);
  }
  if (st) return st;
  return attn_output(f, &L);
}

/* The MLP of layer l, unfused, into s->proj [T][D]: RMSNorm, gate/up projection, GLU, down projection */
static wgllm_status mlp_to_proj(const llm_fwd *f, uint32_t l) {
  const llm_hparams *hp = &f->m->hp;
  const llm_scratch *s = f->s;
  const llm_layer *ly = &f->m->layers[l];
  uint32_t T = f->T, D = hp->n_embd, F = llm_layer_n_ff(hp, l);
  gpu_view none = {0};
  wgllm_status st = op_rms_norm(f->rec, V(s->x), ly->ffn_norm, V(s->xn), D, T, D, D, hp->norm_eps, hp->norm_offset);
  if (!st) st = llm_linear(f, V(s->xn), &ly->w_gate_up, none, V(s->gu), T, 2 * F, D);
  if (!st) st = op_glu(f->rec, V(s->gu), V(s->gu), V(s->h), F, T, 2 * F, 0, F, hp->act);
  if (!st) st = llm_linear(f, V(s->h), &ly->w_down, none, V(s->proj), T, D, F);
  return st;
}

wgllm_status llm_block_mlp(const llm_fwd *f, uint32_t l) {
  gpu_recorder *rec = f->rec;
  const llm_hparams *hp = &f->m->hp;
  const llm_scratch *s = f->s;
  const llm_layer *ly = &f->m->layers[l];
  uint32_t T = f->T, D = hp->n_embd, F = llm_layer_n_ff(hp, l);
  const float no = hp->norm_offset;
  gpu_view none = {0};
  wgllm_status st;
  if (f->fused) {
    op_gemv_opts og = {
        .norm_w = ly->ffn_norm, .eps = hp->norm_eps, .norm_offset = no, .glu_half = F, .act = hp->act, .n_tokens = T};
    op_gemv_opts oo = {.accumulate = 1, .n_tokens = T}, op = {.n_tokens = T};
    if (op_gemv_fuses_glu(&ly->w_gate_up)) {
      st = llm_gemv(f, V(s->x), &ly->w_gate_up, none, V(s->h), 2 * F, D, &og);
    } else { /* gate and up in parts of different storages: the norm rides in each, the GLU is its own */
      og.glu_half = 0;
      st = llm_gemv(f, V(s->x), &ly->w_gate_up, none, V(s->gu), 2 * F, D, &og);
      if (!st) st = op_glu(rec, V(s->gu), V(s->gu), V(s->h), F, T, 2 * F, 0, F, hp->act);
    }
    if (!st && hp->sandwich_norms) {
      st = llm_gemv(f, V(s->h), &ly->w_down, none, V(s->proj), D, F, &op);
      if (!st) st = op_rms_norm_add(rec, V(s->proj), ly->post_ffn_norm, V(s->x), D, T, hp->norm_eps, no);
    } else if (!st)
      st = llm_gemv(f, V(s->h), &ly->w_down, none, V(s->x), D, F, &oo);
    return st;
  }
  st = mlp_to_proj(f, l);
  if (!st && hp->sandwich_norms)
    st = op_rms_norm_add(rec, V(s->proj), ly->post_ffn_norm, V(s->x), D, T, hp->norm_eps, no);
  else if (!st)
    st = op_add_inplace(rec, V(s->x), V(s->proj), T * D, T * D);
  return st;
}

/* The mixture-of-experts FFN of a sparse layer (docs/MOE.md, "A model step"): RMSNorm, the router's logits (a GEMV,
   its weights in the file's storage), the top k and their weights, the experts' gate/up with the GLU fused, their
   down projection, and the weighted sum of each token's k outputs added into the residual stream. A decode step
   (one token, or a batch of sessions' tokens) reads the chosen experts by pair (OP_MOE_PAIRS: fixed grids, so the
   recorded step replays as it is; the RMSNorm folded into the router's and the gate/up's GEMVs where both take it, the
   combine into the down projection's where it takes the weight: op_moe_down_combine), but for a batch of sessions
   in the fast precision with enough pairs an expert, which groups them by expert (op_moe_lists in groups of up to 8
   pairs, OP_MOE_GROUPS over the worst-case group grid); a prompt's pass groups the pairs by expert into tiles
   (op_moe_lists, then OP_MOE_TILES over the worst-case tile grid), each expert's weights read once a tile. */
/* A decode step's tokens (one, or a batch of sessions'): the experts read by pair or group */
static int moe_decode(const llm_fwd *f) { return f->tokens || (f->T == 1 && !f->fo->prefill); }

/* One expert linear (op_moe_linear) on x of x_rows rows: in the fast precision a prompt's pass takes the integer-dot
   tiles where every piece of w is a storage they read (x quantized into the scratch's xq, op_moe_linear_q8), else
   (decode, other storages, exact) the op as it is. */
static wgllm_status moe_linear(const llm_fwd *f, gpu_view x, uint32_t x_rows, const op_weight *w, gpu_view bias,
                               gpu_view y, const op_moe_linear_params *p) {
  gpu_recorder *rec = f->rec;
  if (f->fo->fast && f->s->xq && p->route == OP_MOE_TILES &&
      op_moe_linear_q8_supports(op_ctx(rec), w, p->K, p->route)) {
    /* xq holds a pass's x_rows rows of K (llm_scratch_add_fast sizes it for the experts' rows too) */
    wgllm_status st = op_quantize_q8(rec, x, V(f->s->xq), x_rows, p->K);
    return st ? st : op_moe_linear_q8(rec, V(f->s->xq), w, bias, y, p);
  }
  return op_moe_linear(rec, x, w, bias, y, p);
}

/* The experts of layer l on xin [T][D] (the router's logits from rin [T][D]): route, the per-expert lists on a
   prompt's pass, gate/up with the GLU, down, and the weighted sum into out [T][D] (added when accumulate). nrm: the
   RMSNorm (its weight, eps, offset) the router's and the gate/up's GEMVs apply to rin and xin (decode, where
   moe_fuses_norm), or NULL: both are normed already. */
static wgllm_status moe_experts(const llm_fwd *f, uint32_t l, gpu_view rin, gpu_view xin, gpu_view scale, gpu_view out,
                                int accumulate, const op_gemv_opts *nrm) {
  gpu_recorder *rec = f->rec;
  const llm_hparams *hp = &f->m->hp;
  const llm_scratch *s = f->s;
  const llm_layer *ly = &f->m->layers[l];
  uint32_t T = f->T, D = hp->n_embd, E = hp->n_expert, k = hp->n_expert_used, I = hp->n_ff_exp;
  gpu_view none = {0};
  int decode = moe_decode(f);
  /* decode in the fast precision: the gate/up on the integer-dot GEMV (op_gemv_q8_experts) where it reads every
     piece, x quantized (and normed) by the quantizer, the pairs routed by op_moe_route; the down projection stays
     exact (on the 8B's down shape the int8 GEMV with its quantizer's dispatch measured slower than the exact one;
     the down on int8 in the step is built, not measured: docs/MOE.md) */
  int q8_gu = decode && f->fo->fast && s->xq && !ly->exp_up.data.buf &&
              op_moe_linear_q8_supports(op_ctx(rec), &ly->exp_gate_up, D, OP_MOE_PAIRS);
  /* a batch of sessions with enough pairs an expert (op_moe_group_m): the gate/up's pairs grouped by expert
     (op_moe_lists in groups of gm), each group's expert read once by the integer-dot GEMV; the down projection as
     above (its grouped int8 route, with the rows quantized and the combine apart, is the one-change build gd of
     docs/perf/31-moe/mkvars40.sh: not measured yet) */
  uint32_t gm = q8_gu && T > 1 ? op_moe_group_m(op_ctx(rec), I, D, 1, T * k, E) : 0;
  /* gpt-oss: a biased router, biased experts and the clamped SwiGLU */
  gpu_view rb = hp->moe_bias ? ly->router_bias : none, gub = hp->moe_bias ? ly->exp_gate_up_bias : none,
           db = hp->moe_bias ? ly->exp_down_bias : none;
  wgllm_status st;
  if (nrm) { /* [T][E], rin normed in the GEMV */
    op_gemv_opts ro = *nrm;
    ro.n_tokens = T;
    st = op_gemv(rec, rin, &ly->router, rb, V(s->moe_logits), E, D, &ro);
  } else
    st = op_matvec(rec, rin, &ly->router, rb, V(s->moe_logits), T, E, D); /* [T][E] */
  /* decode with the norm folded in: the gate/up's GEMV ranks its own pairs where it can (op_moe_linear_routes) */
  int self_route = nrm && !scale.buf && !q8_gu && op_moe_linear_routes(op_ctx(rec), &ly->exp_gate_up, D, E, k);
  if (!st && !self_route)
    st = op_moe_route(rec, V(s->moe_logits), scale, V(s->moe_ids), V(s->moe_w), T, E, k, (op_moe_norm)hp->moe_norm);
  if (!st && (!decode || gm)) st = op_moe_lists(rec, V(s->moe_ids), V(s->moe_lists), T, k, E, gm ? gm : OP_MOE_TILE_M);
  op_moe_linear_params gu = {.T = T,
                             .k = k,
                             .E = E,
                             .N = I,
                             .K = D,
                             .x_pair = 0,
                             .glu = 1,
                             .act = hp->moe_oai_glu               ? OP_MOE_ACT_SWIGLU_OAI
                                    : hp->act == OP_ACT_GELU_TANH ? OP_MOE_ACT_GELU_TANH
                                                                  : OP_MOE_ACT_SILU,
                             .alpha = hp->moe_glu_alpha,
                             .limit = hp->moe_glu_limit,
                             .route = gm       ? OP_MOE_GROUPS
                                      : decode ? OP_MOE_PAIRS
                                               : OP_MOE_TILES,
                             .group_m = gm,
                             .ids = V(s->moe_ids),
                             .lists = decode && !gm ? none : V(s->moe_lists)};
  if (nrm) {
    gu.norm_w = nrm->norm_w;
    gu.eps = nrm->eps;
    gu.norm_offset = nrm->norm_offset;
  }
  if (self_route) {
    gu.route_logits = V(s->moe_logits);
    gu.route_w = V(s->moe_w);
    gu.route_norm = (op_moe_norm)hp->moe_norm;
  }
  op_moe_linear_params dn = gu;
  dn.norm_w = dn.route_logits = dn.route_w = none;
  dn.N = D;
  dn.K = I;
  dn.x_pair = 1;
  dn.glu = 0;
  dn.route = decode ? OP_MOE_PAIRS : OP_MOE_TILES;
  if (q8_gu) { /* [T][D] -> x_q (normed where nrm says), then [T*k][I] */
    op_q8_rows_opts qo = {
        .norm_w = nrm ? nrm->norm_w : none, .eps = nrm ? nrm->eps : 0.0f, .norm_offset = nrm ? nrm->norm_offset : 0.0f};
    op_gemv_q8_supports(op_ctx(rec), &ly->exp_gate_up, 1, D, &qo.perm);
    op_moe_linear_params g8 = gu;
    g8.norm_w = none;
    if (!st) st = op_quantize_q8_rows(rec, xin, V(s->xq), T, D, &qo);
    if (!st) st = op_moe_linear_q8(rec, V(s->xq), &ly->exp_gate_up, gub, V(s->moe_h), &g8);
  } else if (!ly->exp_up.data.buf) {
    if (!st) st = moe_linear(f, xin, T, &ly->exp_gate_up, gub, V(s->moe_h), &gu); /* [T*k][I] */
  } else if (!st && (hp->moe_oai_glu || hp->moe_bias)) {
    st = op_fail(rec, WGLLM_ERR_UNSUPPORTED,
                 "layer %u: experts' gate and up in different types with gpt-oss's biases and clamped SwiGLU", l);
  } else if (!st) { /* gate and up stored in different types: each its own linear into moe_y, the GLU apart */
    uint64_t rows = (uint64_t)T * k * I * 4, up = llm_moe_up_offset(T, k, I);
    gu.glu = 0;
    st = moe_linear(f, xin, T, &ly->exp_gate_up, none, (gpu_view){s->moe_y, 0, rows}, &gu);
    if (!st) st = moe_linear(f, xin, T, &ly->exp_up, none, (gpu_view){s->moe_y, up, rows}, &gu);
    if (!st) st = op_glu(rec, V(s->moe_y), V(s->moe_y), V(s->moe_h), I, T * k, I, 0, (uint32_t)(up / 4), hp->act);
    gu.glu = 1;
  }
  if (st) return st;
  /* decode: the down projection and the combine in one GEMV (a workgroup row a token over its k pairs) */
  if (decode && op_moe_down_combine_supports(op_ctx(rec), &ly->exp_down, D, I, k))
    return op_moe_down_combine(rec, V(s->moe_h), &ly->exp_down, db, V(s->moe_ids), V(s->moe_w), out, T, k, E, D, I,
                               accumulate);
  st = moe_linear(f, V(s->moe_h), T * k, &ly->exp_down, db, V(s->moe_y), &dn); /* [T*k][D] */
  return st ? st : op_moe_combine(rec, V(s->moe_y), V(s->moe_w), out, T, k, D, accumulate);
}

/* Whether a decode step of layer l norms the experts' input inside the router's and the gate/up's GEMVs (both read
   by the GEMV: the router's storage and every piece of the gate/up weight; gate and up in one weight) instead of
   an RMSNorm dispatch before them. One token only: with 8 sessions' tokens a step, the folded norm and routing
   measured slower on an H100 (gpt-oss-20b 450 -> 400 tok/s aggregate, docs/perf/31-moe calls 5-7), where each
   pair's workgroups norm (and rank) again what one dispatch does once for all. */
static int moe_fuses_norm(const llm_fwd *f, uint32_t l) {
  const llm_layer *ly = &f->m->layers[l];
  uint32_t D = f->m->hp.n_embd;
  return moe_decode(f) && f->T == 1 && !ly->exp_up.data.buf &&
         op_gemv_supports_router(op_ctx(f->rec), &ly->router, f->T, D) && op_moe_linear_fuses_norm(&ly->exp_gate_up, D);
}

wgllm_status llm_block_moe(const llm_fwd *f, uint32_t l) {
  const llm_hparams *hp = &f->m->hp;
  const llm_scratch *s = f->s;
  uint32_t T = f->T, D = hp->n_embd;
  if (hp->moe_dense_too) return llm_block_moe_beside_dense(f, l);
  if (moe_fuses_norm(f, l)) {
    op_gemv_opts nrm = {.norm_w = f->m->layers[l].ffn_norm, .eps = hp->norm_eps, .norm_offset = hp->norm_offset};
    return moe_experts(f, l, V(s->x), V(s->x), (gpu_view){0}, V(s->x), 1, &nrm);
  }
  wgllm_status st =
      op_rms_norm(f->rec, V(s->x), f->m->layers[l].ffn_norm, V(s->xn), D, T, D, D, hp->norm_eps, hp->norm_offset);
  return st ? st : moe_experts(f, l, V(s->xn), V(s->xn), (gpu_view){0}, V(s->x), 1, NULL);
}

wgllm_status llm_block_moe_beside_dense(const llm_fwd *f, uint32_t l) {
  gpu_recorder *rec = f->rec;
  const llm_hparams *hp = &f->m->hp;
  const llm_scratch *s = f->s;
  const llm_layer *ly = &f->m->layers[l];
  uint32_t T = f->T, D = hp->n_embd;
  const float no = hp->norm_offset, eps = hp->norm_eps;
  gpu_view h2 = {s->moe_y, 0, (uint64_t)T * D * 4}; /* moe_y's first T rows, free after the combine */
  /* the dense MLP, normed: xn [T][D] */
  wgllm_status st = mlp_to_proj(f, l);
  if (!st) st = op_rms_norm(rec, V(s->proj), ly->post_dense_norm, V(s->xn), D, T, D, D, eps, no);
  /* the router reads the residual stream through a weightless RMSNorm times router.scale * D^-1/2 (router_norm),
     the experts through their own norm; each chosen expert's weight times its per_expert_scale */
  if (!st) st = op_rms_norm(rec, V(s->x), ly->router_norm, V(s->proj), D, T, D, D, eps, 0.0f);
  if (!st) st = op_rms_norm(rec, V(s->x), ly->exp_norm, V(s->moe_x), D, T, D, D, eps, no);
  if (!st) st = moe_experts(f, l, V(s->proj), V(s->moe_x), ly->exp_scale, V(s->proj), 0, NULL);
  if (!st) st = op_rms_norm(rec, V(s->proj), ly->post_exp_norm, h2, D, T, D, D, eps, no);
  /* x += post_ffn_norm(dense + experts) */
  if (!st) st = op_add_inplace(rec, V(s->xn), h2, T * D, T * D);
  if (!st) st = op_rms_norm_add(rec, V(s->xn), ly->post_ffn_norm, V(s->x), D, T, eps, no);
  return st;
}

wgllm_status llm_block_head(const llm_fwd *f, uint32_t n_logits) {
  gpu_recorder *rec = f->rec;
  const llm_model *m = f->m;
  const llm_hparams *hp = &m->hp;
  const llm_scratch *s = f->s;
  uint32_t T = f->T, D = hp->n_embd;
  const float no = hp->norm_offset;
  gpu_view none = {0};
  int sg;
  wgllm_status st;
  if (f->fo->hidden) { /* an embedding: every row's final hidden state, pooled by the caller */
    op_rms_norm_params all = {
        .n = D, .rows = T, .in = {.stride = D}, .out = {.stride = D}, .eps = hp->norm_eps, .w_offset = no};
    return op_rms_norm_rows(rec, V(s->x), m->output_norm, V(s->xn), &all);
  }
  if (hp->no_lm_head)
    return op_fail(rec, WGLLM_ERR_UNSUPPORTED,
                   "the model has no LM head (no lm_head.weight and tie_word_embeddings false: an embedding model's "
                   "weights); it can embed (wgllm_session_embed), not generate or give logits");
  if (f->fused && (n_logits == 1 || (f->tokens && n_logits == T)) &&
      op_gemv_supports(op_ctx(rec), &m->output, n_logits, D, &sg)) {
    op_gemv_opts o = {.norm_w = m->output_norm, .eps = hp->norm_eps, .norm_offset = no, .n_tokens = n_logits};
    st = llm_gemv(f, V(s->x), &m->output, none, V(s->logits), hp->n_vocab, D, &o);
  } else if (f->seqs) { /* each session's last row, gathered (an f32 table of the T rows), then as a prefill's */
    op_weight rows = {.type = OP_W_F32, .data = V(s->x)};
    st = op_embedding(rec, f->last_rows, &rows, V(s->proj), n_logits, D, T, 1.0f);
    op_rms_norm_params last = {.n = D,
                               .rows = n_logits,
                               .in = {.off = 0, .stride = D},
                               .out = {.off = 0, .stride = D},
                               .eps = hp->norm_eps,
                               .w_offset = no};
    if (!st) st = op_rms_norm_rows(rec, V(s->proj), m->output_norm, V(s->xn), &last);
    int q8 = f->fo->fast && f->s->xq && op_gemv_q8_supports(op_ctx(rec), &m->output, n_logits, D, NULL);
    if (!st && !q8) /* the GEMV, as each row alone takes it (the several-token GEMV sums each row as one does) */
      st = op_matvec(rec, V(s->xn), &m->output, none, V(s->logits), n_logits, hp->n_vocab, D);
    else if (!st)
      st = llm_linear(f, V(s->xn), &m->output, none, V(s->logits), n_logits, hp->n_vocab, D);
  } else {
    op_rms_norm_params last = {.n = D,
                               .rows = n_logits,
                               .in = {.off = (T - n_logits) * D, .stride = D},
                               .out = {.off = 0, .stride = D},
                               .eps = hp->norm_eps,
                               .w_offset = no};
    st = op_rms_norm_rows(rec, V(s->x), m->output_norm, V(s->xn), &last);
    /* a prefill's last rows (their logits feed no other row), or the rows of a batched decode without the fused
       path: the GEMV, unless the fast precision's integer-dot GEMV takes the weight */
    int q8 = f->fo->fast && f->s->xq && op_gemv_q8_supports(op_ctx(rec), &m->output, n_logits, D, NULL);
    if (!st && (n_logits <= 4 || f->tokens) && !q8) /* a batched decode's rows: each as its step alone sums it */
      st = op_matvec(rec, V(s->xn), &m->output, none, V(s->logits), n_logits, hp->n_vocab, D);
    else if (!st)
      st = llm_linear(f, V(s->xn), &m->output, none, V(s->logits), n_logits, hp->n_vocab, D);
  }
  if (!st && hp->final_softcap > 0)
    st = op_softcap_inplace(rec, V(s->logits), n_logits * hp->n_vocab, hp->final_softcap);
  return st;
}
