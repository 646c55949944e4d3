/* Forward pass of the Llama family as ops (see arch_llama.h). Per layer: RMSNorm, fused Q/K/V projection
   (+ biases), optional per-head q/k RMSNorm, RoPE, KV append, causal GQA attention, output projection,
   residual add, RMSNorm, fused gate/up projection, SiLU-GLU, down projection, residual add.
   For one token with q4gsw weights the decode path fuses further (kernels/gemv_q4.wgsl): the norms ride in
   the projections, the residual adds in the output and down projections, the GLU in the gate/up projection,
   and attention is flash-decoding, whose first pass also applies RoPE and appends to the KV cache:
   6 dispatches a layer instead of 13. */
#include "arch_llama.h"
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

wgllm_status llm_scratch_acquire(gpu_context *gpu, const llm_hparams *hp, uint32_t cap, uint32_t logit_rows,
                                 llm_scratch *s, char *err, size_t errlen) {
  memset(s, 0, sizeof *s);
  s->cap = cap;
  s->logit_rows = logit_rows;
  uint64_t T = cap, q = (uint64_t)hp->n_head * hp->head_dim, kv = (uint64_t)hp->n_head_kv * hp->head_dim;
  struct {
    gpu_buffer **b;
    uint64_t bytes;
    const char *name;
  } want[] = {
      {&s->ids, T * 4, "ids"},
      {&s->pos, T * 4, "pos"},
      {&s->x, T * hp->n_embd * 4, "x"},
      {&s->xn, T * hp->n_embd * 4, "xn"},
      {&s->qkv, T * (q + 2 * kv) * 4, "qkv"},
      {&s->qk2, T * (q + kv) * 4, "qk2"},
      {&s->attn, T * q * 4, "attn"},
      {&s->proj, T * hp->n_embd * 4, "proj"},
      {&s->gu, T * 2 * hp->n_ff * 4, "gu"},
      {&s->h, T * hp->n_ff * 4, "h"},
      {&s->logits, (uint64_t)logit_rows * hp->n_vocab * 4, "logits"},
  };
  for (size_t i = 0; i < sizeof want / sizeof want[0]; i++) {
    wgllm_status st = gpu_pool_acquire(gpu, want[i].bytes, want[i].name, want[i].b, err, errlen);
    if (st) {
      llm_scratch_release(gpu, s);
      return st;
    }
  }
  return WGLLM_OK;
}

wgllm_status llm_scratch_add_decode(gpu_context *gpu, const llm_hparams *hp, const op_kv_layout *kv, llm_scratch *s,
                                    char *err, size_t errlen) {
  wgllm_status st = WGLLM_OK;
  if (!s->attn_partial)
    st = gpu_pool_acquire(gpu, op_attn_partial_bytes(kv, hp->n_head, 0), "attn_partial", &s->attn_partial, err, errlen);
  if (!st && !s->attn_args) st = gpu_pool_acquire(gpu, 16, "attn_args", &s->attn_args, err, errlen);
  return st;
}

void llm_scratch_release(gpu_context *gpu, llm_scratch *s) {
  gpu_buffer **all[] = {&s->ids,  &s->pos, &s->x, &s->xn,     &s->qkv,          &s->qk2,      &s->attn,
                        &s->proj, &s->gu,  &s->h, &s->logits, &s->attn_partial, &s->attn_args};
  for (size_t i = 0; i < sizeof all / sizeof all[0]; i++) {
    if (*all[i]) gpu_pool_release(gpu, *all[i]);
    *all[i] = NULL;
  }
}

static wgllm_status rope_table(gpu_context *gpu, const float *inv_freq, uint32_t rot_dim, uint32_t max_pos,
                               gpu_buffer **out, char *err, size_t errlen) {
  uint64_t n = (uint64_t)max_pos * (rot_dim / 2) * 2;
  float *cs = malloc(n * sizeof *cs);
  if (!cs) {
    snprintf(err, errlen, "out of host memory for the RoPE table");
    return WGLLM_ERR_OUT_OF_MEMORY;
  }
  op_rope_table(cs, inv_freq, rot_dim, max_pos, 1.0f);
  wgllm_status s = gpu_buffer_create(gpu, n * 4, "rope_cs", out, err, errlen);
  if (!s) gpu_write(gpu, *out, 0, cs, n * 4);
  free(cs);
  return s;
}

wgllm_status llm_rope_tables_create(gpu_context *gpu, const llm_hparams *hp, uint32_t max_pos, llm_rope_tables *out,
                                    char *err, size_t errlen) {
  memset(out, 0, sizeof *out);
  wgllm_status s = rope_table(gpu, hp->inv_freq, hp->rot_dim, max_pos, &out->global, err, errlen);
  if (!s && hp->inv_freq_local) s = rope_table(gpu, hp->inv_freq_local, hp->rot_dim, max_pos, &out->local, err, errlen);
  if (s) llm_rope_tables_free(gpu, out);
  return s;
}

void llm_rope_tables_free(gpu_context *gpu, llm_rope_tables *t) {
  gpu_buffer_destroy(gpu, t->global);
  gpu_buffer_destroy(gpu, t->local);
  t->global = t->local = NULL;
}

static gpu_view V(gpu_buffer *b) { return gpu_whole(b); }

wgllm_status llm_encode_forward(gpu_recorder *rec, const llm_model *m, const llm_kv_cache *kv,
                                const llm_rope_tables *rope, const llm_scratch *s, uint32_t T, uint32_t n_logits,
                                const llm_forward_opts *fo) {
  llm_forward_opts defaults = {0};
  if (!fo) fo = &defaults;
  uint32_t max_len = fo->max_len;
  const llm_hparams *hp = &m->hp;
  uint32_t D = hp->n_embd, hd = hp->head_dim, nq = hp->n_head * hd, nkv = hp->n_head_kv * hd, F = hp->n_ff;
  uint32_t S = nq + 2 * nkv; /* fused QKV row: q | k | v */
  uint32_t max_pos = kv->layout.ctx;
  if (T == 0 || T > s->cap || n_logits == 0 || n_logits > T || n_logits > s->logit_rows)
    return op_fail(rec, WGLLM_ERR_INTERNAL, "forward: T=%u n_logits=%u over scratch %u/%u", T, n_logits, s->cap,
                   s->logit_rows);
  gpu_view none = {0};
  int sg;
  /* the fused decode path: one token, every projection in q4gsw */
  int fused = T == 1 && !fo->unfused;
  for (uint32_t l = 0; fused && l < hp->n_layer; l++) {
    const llm_layer *ly = &m->layers[l];
    fused = op_gemv_q4_supports(op_ctx(rec), &ly->wqkv, 1, D, &sg) &&
            op_gemv_q4_supports(op_ctx(rec), &ly->wo, 1, nq, &sg) &&
            op_gemv_q4_supports(op_ctx(rec), &ly->w_gate_up, 1, D, &sg) &&
            op_gemv_q4_supports(op_ctx(rec), &ly->w_down, 1, F, &sg);
  }
  const float no = hp->norm_offset; /* 1 for Gemma's (1 + w) norms */
  wgllm_status st = op_embedding(rec, V(s->ids), &m->tok_embd, V(s->x), T, D, hp->n_vocab, hp->embed_scale);
  for (uint32_t l = 0; !st && l < hp->n_layer; l++) {
    const llm_layer *ly = &m->layers[l];
    gpu_view bqkv = hp->qkv_bias ? ly->bqkv : none;
    int local = llm_layer_is_local(hp, l);
    gpu_buffer *rope_cs = local && rope->local ? rope->local : rope->global;
    uint32_t src = llm_layer_kv_source(hp, l); /* the cache this layer's attention reads */
    uint32_t rot = llm_layer_rot_dim(hp, l);
    gpu_buffer *kc = kv->k[src], *vc = kv->v[src];
    /* attention block: x -> qkv */
    if (fused) {
      op_gemv_opts o = {.norm_w = ly->attn_norm, .eps = hp->norm_eps, .norm_offset = no};
      st = op_gemv_q4(rec, V(s->x), &ly->wqkv, bqkv, V(s->qkv), S, D, &o);
    } else {
      st = op_rms_norm(rec, V(s->x), ly->attn_norm, V(s->xn), D, T, D, D, hp->norm_eps, no);
      if (!st) st = op_linear(rec, V(s->xn), &ly->wqkv, bqkv, V(s->qkv), T, S, D);
    }
    /* q and k: where they live after the optional per-head norm (buffer, element offsets, token stride) */
    gpu_buffer *qk = s->qkv;
    uint32_t q_off = 0, k_off = nq, qk_stride = S;
    if (!st && hp->qk_norm) {
      uint32_t S2 = nq + nkv;
      /* the heads of each token: in the fused QKV row (stride S) and out into q | k rows (stride S2) */
      op_rms_norm_params qn = {hd, T * hp->n_head, {0, hd, hp->n_head, S}, {0, hd, hp->n_head, S2}, hp->norm_eps, no};
      op_rms_norm_params kn = {
          hd, T * hp->n_head_kv, {nq, hd, hp->n_head_kv, S}, {nq, hd, hp->n_head_kv, S2}, hp->norm_eps, no};
      st = op_rms_norm_rows(rec, V(s->qkv), ly->q_norm, V(s->qk2), &qn);
      if (!st) st = op_rms_norm_rows(rec, V(s->qkv), ly->k_norm, V(s->qk2), &kn);
      qk = s->qk2;
      qk_stride = S2;
    }
    /* one token with flash-decoding: RoPE and the cache append ride in the attention's first pass */
    int decode = T == 1 && s->attn_partial && op_attention_decode_supports(&kv->layout, hp->n_head) && q_off == 0;
    op_attn_rope ar = {V(rope_cs), qk == s->qkv ? none : V(s->qkv), rot, max_pos, k_off, nq + nkv, hp->rope_mode};
    int rope_in_attn = decode && rot % 4 == 0 && !fo->unfused;
    if (!st && !rope_in_attn && rot % 4 == 0) { /* one dispatch: RoPE of q and k, the cache append */
      op_rope_kv_params rp = {T,     hp->n_head, rot,      max_pos, hp->rope_mode, q_off, qk_stride,
                              k_off, qk_stride,  nq + nkv, S};
      st = op_rope_kv(rec, &kv->layout, &rp, V(qk), qk == s->qkv ? none : V(s->qkv), V(s->pos), V(rope_cs), V(kc),
                      V(vc));
    } else if (!st && !rope_in_attn) {
      op_rope_params rq = {T, hp->n_head, hd, rot, q_off, qk_stride, hp->rope_mode, max_pos};
      op_rope_params rk = {T, hp->n_head_kv, hd, rot, k_off, qk_stride, hp->rope_mode, max_pos};
      op_kv_write_params wp = {T, k_off, qk_stride, nq + nkv, S};
      st = op_rope(rec, V(qk), V(s->pos), V(rope_cs), &rq);
      if (!st) st = op_rope(rec, V(qk), V(s->pos), V(rope_cs), &rk);
      if (!st) st = op_kv_write(rec, &kv->layout, &wp, V(qk), V(s->qkv), V(s->pos), V(kc), V(vc));
    }
    gpu_buffer *qb = qk;
    uint32_t q_stride = qk_stride;
    op_attn_params ap = {T, hp->n_head, q_stride, q_off, nq, llm_layer_window(hp, l), hp->attn_scale, 0.0f, max_len};
    if (rope_in_attn) ap.rope = &ar;
    if (!st && decode) {
      gpu_view args = V(s->attn_args);
      int indirect = fo->attn_grid == LLM_ATTN_GRID_INDIRECT;
      st = op_attention_decode(rec, &kv->layout, &ap, V(qb), V(kc), V(vc), V(s->pos), V(s->attn_partial),
                               indirect ? &args : NULL, V(s->attn));
    } else if (!st)
      st = op_attention(rec, &kv->layout, &ap, V(qb), V(kc), V(vc), V(s->pos), V(s->attn));
    /* output projection + residual (through Gemma's post-attention norm), then the MLP likewise */
    if (fused) {
      op_gemv_opts oo = {.accumulate = 1};
      if (!st && hp->sandwich_norms) {
        st = op_gemv_q4(rec, V(s->attn), &ly->wo, none, V(s->proj), D, nq, NULL);
        if (!st) st = op_rms_norm_add(rec, V(s->proj), ly->post_attn_norm, V(s->x), D, 1, hp->norm_eps, no);
      } else if (!st)
        st = op_gemv_q4(rec, V(s->attn), &ly->wo, none, V(s->x), D, nq, &oo);
      op_gemv_opts og = {.norm_w = ly->ffn_norm, .eps = hp->norm_eps, .norm_offset = no, .glu_half = F, .act = hp->act};
      if (!st) st = op_gemv_q4(rec, V(s->x), &ly->w_gate_up, none, V(s->h), 2 * F, D, &og);
      if (!st && hp->sandwich_norms) {
        st = op_gemv_q4(rec, V(s->h), &ly->w_down, none, V(s->proj), D, F, NULL);
        if (!st) st = op_rms_norm_add(rec, V(s->proj), ly->post_ffn_norm, V(s->x), D, 1, hp->norm_eps, no);
      } else if (!st)
        st = op_gemv_q4(rec, V(s->h), &ly->w_down, none, V(s->x), D, F, &oo);
    } else {
      if (!st) st = op_linear(rec, V(s->attn), &ly->wo, none, V(s->proj), T, D, nq);
      if (!st && hp->sandwich_norms)
        st = op_rms_norm_add(rec, V(s->proj), ly->post_attn_norm, V(s->x), D, T, hp->norm_eps, no);
      else if (!st)
        st = op_add_inplace(rec, V(s->x), V(s->proj), T * D, T * D);
      if (!st) st = op_rms_norm(rec, V(s->x), ly->ffn_norm, V(s->xn), D, T, D, D, hp->norm_eps, no);
      if (!st) st = op_linear(rec, V(s->xn), &ly->w_gate_up, none, V(s->gu), T, 2 * F, D);
      if (!st) st = op_glu(rec, V(s->gu), V(s->gu), V(s->h), F, T, 2 * F, 0, F, hp->act);
      if (!st) st = op_linear(rec, V(s->h), &ly->w_down, none, V(s->proj), T, D, F);
      if (!st && hp->sandwich_norms)
        st = op_rms_norm_add(rec, V(s->proj), ly->post_ffn_norm, V(s->x), D, T, hp->norm_eps, no);
      else if (!st)
        st = op_add_inplace(rec, V(s->x), V(s->proj), T * D, T * D);
    }
  }
  /* final norm of the last n_logits rows, then the LM head */
  if (!st && fused && n_logits == 1 && op_gemv_q4_supports(op_ctx(rec), &m->output, 1, D, &sg)) {
    op_gemv_opts o = {.norm_w = m->output_norm, .eps = hp->norm_eps, .norm_offset = no};
    st = op_gemv_q4(rec, V(s->x), &m->output, none, V(s->logits), hp->n_vocab, D, &o);
  } else {
    if (!st)
      st = op_rms_norm_rows(
          rec, V(s->x), m->output_norm, V(s->xn),
          &(op_rms_norm_params){D, n_logits, {(T - n_logits) * D, D, 0, 0}, {0, D, 0, 0}, hp->norm_eps, no});
    if (!st) st = op_linear(rec, V(s->xn), &m->output, none, V(s->logits), n_logits, hp->n_vocab, D);
  }
  return st;
}
