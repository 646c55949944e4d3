/* The attention and MLP blocks and the LM head the families' forward passes are built from (decoder.h).
   Attention of layer l: RMSNorm, fused Q/K/V projection (+ biases), optional per-head q/k RMSNorm and
   weightless v RMSNorm, RoPE, KV append (owning layers only), causal GQA attention over the source layer's
   cache (its own, or an earlier layer's for KV-shared layers), output projection, residual add (through
   Gemma's post-attention norm). MLP: RMSNorm, fused gate/up projection, GLU, down projection, residual add.
   For one token with weights the fused GEMV reads (q4gsw, q8, Q4_K, Q5_K, Q6_K; kernels/gemv.wgsl) the decode
   path fuses further: the norms ride in the projections, the residual adds in the output and down
   projections, the GLU in the gate/up projection (when gate and up are one piece), and attention is
   flash-decoding, whose first pass also applies RoPE and appends to the KV cache. A batched decode (f->tokens:
   one token each of several sessions) is that fused path with T tokens a GEMV, and token by token RoPE, cache
   append and flash-decoding over each token's own session's cache. */
#include "blocks.h"

static gpu_view V(gpu_buffer *b) { return gpu_whole(b); }

wgllm_status llm_linear(const llm_fwd *f, gpu_view x, const op_weight *w, gpu_view bias, gpu_view y, uint32_t M,
                        uint32_t N, uint32_t K) {
  if (f->fo->fast && f->s->xq) return op_linear_fast(f->rec, x, V(f->s->xq), w, bias, y, M, N, K);
  return op_linear(f->rec, x, w, bias, y, M, N, K);
}

/* The fused decode GEMV of one token or a batch: on int8 activations when the pass is fast (op_gemv_fast: the
   quantizer takes the norm, the integer-dot GEMV the rest, or the exact GEMV as a whole), else exact. */
static wgllm_status llm_gemv(const llm_fwd *f, gpu_view x, const op_weight *w, gpu_view bias, gpu_view y, uint32_t N,
                             uint32_t K, const op_gemv_opts *o) {
  if (f->fo->fast && f->s->xq) return op_gemv_fast(f->rec, x, V(f->s->xq), w, bias, y, N, K, o);
  return op_gemv(f->rec, x, w, bias, y, N, K, o);
}

/* Batched decode: token i's RoPE, cache append and flash-decoding over its own session's cache (a dispatch set
   a token and a group of KV heads), q of row i at q_off + i * qk_stride, its output at row i of s->attn. */
static wgllm_status attention_tokens(const llm_fwd *f, uint32_t l, gpu_buffer *qk, uint32_t qk_stride, uint32_t k_off,
                                     gpu_view vsrc, uint32_t v_off, uint32_t v_stride) {
  const llm_hparams *hp = &f->m->hp;
  uint32_t hd = llm_layer_head_dim(hp, l), nq = llm_layer_q_width(hp, l), src = llm_layer_kv_source(hp, l);
  uint32_t rep = hp->n_head / llm_layer_n_head_kv(hp, l), rot = llm_layer_rot_dim(hp, l);
  wgllm_status st = WGLLM_OK;
  for (uint32_t i = 0; !st && i < f->n_seq; i++) {
    const llm_fwd_token *tk = &f->tokens[i];
    gpu_buffer *rope_cs = llm_layer_rope_local(hp, l) && tk->rope->local ? tk->rope->local : tk->rope->global;
    op_kv_layout gl;
    gpu_view kg, vg;
    uint32_t h0, n_groups = llm_kv_group(tk->kv, src, 0, &gl, &kg, &vg, &h0);
    for (uint32_t j = 0; !st && j < n_groups; j++) {
      llm_kv_group(tk->kv, src, j, &gl, &kg, &vg, &h0);
      uint32_t gq = gl.n_kv_head * rep, qo = h0 * rep * hd;
      if (!op_attention_decode_supports(&gl, gq))
        return op_fail(f->rec, WGLLM_ERR_UNSUPPORTED, "batched decode: layer %u's heads have no flash-decoding", l);
      op_attn_params ap = {1,    gq,         qk_stride, i * qk_stride + qo, nq, llm_layer_window(hp, l), hp->attn_scale,
                           0.0f, tk->max_len};
      op_attn_rope ar = {
          V(rope_cs),   vsrc, rot, tk->kv->ctx, i * qk_stride + k_off + h0 * hd, i * v_stride + v_off + h0 * hd,
          hp->rope_mode};
      ap.rope = &ar;
      gpu_view args = V(tk->attn_args), out = {f->s->attn, ((uint64_t)i * nq + qo) * 4, 0};
      st = op_attention_decode(f->rec, &gl, &ap, V(qk), kg, vg, tk->pos, V(tk->attn_partial),
                               tk->attn_grid == LLM_ATTN_GRID_INDIRECT ? &args : NULL, out);
    }
  }
  return st;
}

int llm_fused_decode_ok(gpu_recorder *rec, const llm_model *m, uint32_t T) {
  const llm_hparams *hp = &m->hp;
  int sg, ok = 1;
  for (uint32_t l = 0; ok && l < hp->n_layer; l++) {
    const llm_layer *ly = &m->layers[l];
    uint32_t F = llm_layer_n_ff(hp, l);
    ok = op_gemv_supports(op_ctx(rec), &ly->wqkv, T, hp->n_embd, &sg) &&
         op_gemv_supports(op_ctx(rec), &ly->wo, T, llm_layer_q_width(hp, l), &sg) &&
         op_gemv_supports(op_ctx(rec), &ly->w_gate_up, T, hp->n_embd, &sg) &&
         op_gemv_supports(op_ctx(rec), &ly->w_down, T, F, &sg);
  }
  return ok;
}

wgllm_status llm_block_attention(const llm_fwd *f, uint32_t l) {
  gpu_recorder *rec = f->rec;
  const llm_model *m = f->m;
  const llm_hparams *hp = &m->hp;
  const llm_scratch *s = f->s;
  const llm_layer *ly = &m->layers[l];
  uint32_t T = f->T, D = hp->n_embd, hd = llm_layer_head_dim(hp, l), nkv_h = llm_layer_n_head_kv(hp, l);
  uint32_t nq = llm_layer_q_width(hp, l), nkv = llm_layer_kv_width(hp, l), S = llm_layer_qkv_rows(hp, l);
  int own = llm_layer_owns_kv(hp, l), v_is_k = llm_layer_v_is_k(hp, l);
  uint32_t src = llm_layer_kv_source(hp, l), rot = llm_layer_rot_dim(hp, l);
  gpu_buffer *rope_cs = llm_layer_rope_local(hp, l) && f->rope->local ? f->rope->local : f->rope->global;
  uint32_t max_pos = f->kv->ctx;
  const float no = hp->norm_offset;
  gpu_view none = {0}, bqkv = hp->qkv_bias ? ly->bqkv : none;
  wgllm_status st;
  /* x -> qkv [T][S]: q | k | v, or q | k when V is K, or q alone in a KV-shared layer */
  if (f->fused) {
    op_gemv_opts o = {.norm_w = ly->attn_norm, .eps = hp->norm_eps, .norm_offset = no, .n_tokens = T};
    st = llm_gemv(f, V(s->x), &ly->wqkv, bqkv, V(s->qkv), S, D, &o);
  } else {
    st = op_rms_norm(rec, V(s->x), ly->attn_norm, V(s->xn), D, T, D, D, hp->norm_eps, no);
    if (!st) st = llm_linear(f, V(s->xn), &ly->wqkv, bqkv, V(s->qkv), T, S, D);
  }
  /* where q, k and v live after the optional per-head norms (buffer, element offsets, token stride) */
  gpu_buffer *qk = s->qkv, *vb = s->qkv;
  uint32_t k_off = nq, qk_stride = S, v_off = v_is_k ? nq : nq + nkv, v_stride = S;
  if (!st && hp->qk_norm) {
    /* the heads of each token: in the fused QKV row (stride S) and out into q | k | v rows (stride S2) */
    uint32_t S2 = own ? nq + 2 * nkv : nq;
    op_rms_norm_params qn = {hd, T * hp->n_head, {0, hd, hp->n_head, S}, {0, hd, hp->n_head, S2}, hp->norm_eps, no};
    st = op_rms_norm_rows(rec, V(s->qkv), ly->q_norm, V(s->qk2), &qn);
    if (!st && own) {
      op_rms_norm_params kn = {hd, T * nkv_h, {nq, hd, nkv_h, S}, {nq, hd, nkv_h, S2}, hp->norm_eps, no};
      st = op_rms_norm_rows(rec, V(s->qkv), ly->k_norm, V(s->qk2), &kn);
    }
    if (!st && own && hp->v_norm) { /* weightless: the weight is ones, offset 0 */
      op_rms_norm_params vn = {hd, T * nkv_h, {v_off, hd, nkv_h, S}, {nq + nkv, hd, nkv_h, S2}, hp->norm_eps, 0};
      st = op_rms_norm_rows(rec, V(s->qkv), m->ones, V(s->qk2), &vn);
      vb = s->qk2;
      v_off = nq + nkv;
      v_stride = S2;
    }
    qk = s->qk2;
    qk_stride = S2;
  }
  gpu_view vsrc = vb == qk ? none : V(vb); /* V from q's buffer, or from the projection output */
  if (!st && f->tokens) st = attention_tokens(f, l, qk, qk_stride, k_off, vsrc, v_off, v_stride);
  /* one token with flash-decoding: RoPE and the cache append ride in the attention's first pass */
  op_kv_layout g0;
  gpu_view kg, vg;
  uint32_t h0, n_groups = llm_kv_group(f->kv, src, 0, &g0, &kg, &vg, &h0);
  uint32_t rep = hp->n_head / nkv_h, gq = g0.n_kv_head * rep; /* query heads a group of KV heads serves */
  int decode = T == 1 && s->attn_partial && op_attention_decode_supports(&g0, gq);
  int rope_in_attn = own && decode && rot % 4 == 0 && !f->fo->unfused;
  int rope_kv = own && !rope_in_attn && rot % 4 == 0;
  if (!st && !f->tokens && (!own || (!rope_in_attn && !rope_kv))) {
    /* RoPE of q (a KV-shared layer: the source layer wrote the cache), and of k where no fused kernel takes it */
    op_rope_params rq = {T, hp->n_head, hd, rot, 0, qk_stride, hp->rope_mode, max_pos};
    st = op_rope(rec, V(qk), V(s->pos), V(rope_cs), &rq);
    if (!st && own) {
      op_rope_params rk = {T, nkv_h, hd, rot, k_off, qk_stride, hp->rope_mode, max_pos};
      st = op_rope(rec, V(qk), V(s->pos), V(rope_cs), &rk);
    }
  }
  /* the cache append and attention, a dispatch a group of KV heads (one group unless the layer's K is over the
     binding limit: llm_kv_group), over the query heads that read the group */
  for (uint32_t j = 0; !st && !f->tokens && j < n_groups; j++) {
    op_kv_layout gl;
    llm_kv_group(f->kv, src, j, &gl, &kg, &vg, &h0);
    uint32_t qo = h0 * rep * hd, ko = k_off + h0 * hd, vo = v_off + h0 * hd;
    if (rope_kv) { /* one dispatch: RoPE of q and k, the cache append */
      op_rope_kv_params rp = {T, gq, rot, max_pos, hp->rope_mode, qo, qk_stride, ko, qk_stride, vo, v_stride};
      st = op_rope_kv(rec, &gl, &rp, V(qk), vsrc, V(s->pos), V(rope_cs), kg, vg);
    } else if (own && !rope_in_attn) {
      op_kv_write_params wp = {T, ko, qk_stride, vo, v_stride};
      st = op_kv_write(rec, &gl, &wp, V(qk), vb == qk ? V(qk) : V(vb), V(s->pos), kg, vg);
    }
    op_attn_params ap = {T, gq, qk_stride, qo, nq, llm_layer_window(hp, l), hp->attn_scale, 0.0f, f->fo->max_len};
    op_attn_rope ar = {V(rope_cs), vsrc, rot, max_pos, ko, vo, hp->rope_mode};
    if (rope_in_attn) ap.rope = &ar;
    gpu_view out = {s->attn, (uint64_t)qo * 4, 0}; /* its heads' columns of every token's row */
    if (!st && decode) {
      gpu_view args = V(s->attn_args);
      int indirect = f->fo->attn_grid == LLM_ATTN_GRID_INDIRECT;
      st = op_attention_decode(rec, &gl, &ap, V(qk), kg, vg, V(s->pos), V(s->attn_partial), indirect ? &args : NULL,
                               out);
    } else if (!st)
      st = op_attention(rec, &gl, &ap, V(qk), kg, vg, V(s->pos), out);
  }
  /* output projection + residual (through Gemma's post-attention norm) */
  if (st) return st;
  if (f->fused) {
    op_gemv_opts oo = {.accumulate = 1, .n_tokens = T}, op = {.n_tokens = T};
    if (hp->sandwich_norms) {
      st = llm_gemv(f, V(s->attn), &ly->wo, none, V(s->proj), D, nq, &op);
      if (!st) st = op_rms_norm_add(rec, V(s->proj), ly->post_attn_norm, V(s->x), D, T, hp->norm_eps, no);
      return st;
    }
    return llm_gemv(f, V(s->attn), &ly->wo, none, V(s->x), D, nq, &oo);
  }
  st = llm_linear(f, V(s->attn), &ly->wo, none, V(s->proj), T, D, nq);
  if (!st && hp->sandwich_norms)
    return op_rms_norm_add(rec, V(s->proj), ly->post_attn_norm, V(s->x), D, T, hp->norm_eps, no);
  if (!st) st = op_add_inplace(rec, V(s->x), V(s->proj), T * D, T * D);
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
  st = op_rms_norm(rec, V(s->x), ly->ffn_norm, V(s->xn), D, T, D, D, hp->norm_eps, no);
  if (!st) st = llm_linear(f, V(s->xn), &ly->w_gate_up, none, V(s->gu), T, 2 * F, D);
  if (!st) st = op_glu(rec, V(s->gu), V(s->gu), V(s->h), F, T, 2 * F, 0, F, hp->act);
  if (!st) st = llm_linear(f, V(s->h), &ly->w_down, none, V(s->proj), T, D, F);
  if (!st && hp->sandwich_norms)
    st = op_rms_norm_add(rec, V(s->proj), ly->post_ffn_norm, V(s->x), D, T, hp->norm_eps, no);
  else if (!st)
    st = op_add_inplace(rec, V(s->x), V(s->proj), T * D, T * D);
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
  if (f->fused && (n_logits == 1 || (f->tokens && n_logits == T)) &&
      op_gemv_supports(op_ctx(rec), &m->output, n_logits, D, &sg)) {
    op_gemv_opts o = {.norm_w = m->output_norm, .eps = hp->norm_eps, .norm_offset = no, .n_tokens = n_logits};
    st = llm_gemv(f, V(s->x), &m->output, none, V(s->logits), hp->n_vocab, D, &o);
  } else {
    st = op_rms_norm_rows(
        rec, V(s->x), m->output_norm, V(s->xn),
        &(op_rms_norm_params){D, n_logits, {(T - n_logits) * D, D, 0, 0}, {0, D, 0, 0}, hp->norm_eps, no});
    if (!st) st = llm_linear(f, V(s->xn), &m->output, none, V(s->logits), n_logits, hp->n_vocab, D);
  }
  if (!st && hp->final_softcap > 0)
    st = op_softcap_inplace(rec, V(s->logits), n_logits * hp->n_vocab, hp->final_softcap);
  return st;
}
