/* The forward pass of Gemma 4 text (Gemma4ForCausalLM): scaled embeddings and, with per-layer inputs, each
   token's per-layer input vectors (its row of the per-layer embedding table, scaled, plus the RMS-normed
   projection of its embedding, times 1/sqrt(2)); per layer the shared attention block (q/k norms, the
   weightless v norm, attention scale 1, per-layer head_dim and RoPE, KV-shared layers reading an earlier
   layer's cache) and MLP block, then the per-layer input (gate, GELU, times the layer's input vector, projection,
   norm, residual add) and the layer scalar; the LM head with final logit soft-capping (blocks.c). */
#include "blocks.h"
#include <math.h>

static gpu_view V(gpu_buffer *b) { return gpu_whole(b); }

/* s->ple [T][n_layer*P] = (norm(proj(x) / sqrt(D)) + embed_per_layer(ids) * sqrt(P)) / sqrt(2) */
static wgllm_status per_layer_inputs(const llm_fwd *f) {
  gpu_recorder *rec = f->rec;
  const llm_model *m = f->m;
  const llm_hparams *hp = &m->hp;
  const llm_scratch *s = f->s;
  uint32_t T = f->T, D = hp->n_embd, P = hp->ple_dim, LP = hp->n_layer * P;
  wgllm_status st = op_embedding(rec, V(s->ids), &m->ple_embd, V(s->ple_tok), T, LP, hp->ple_vocab, sqrtf((float)P));
  if (!st) st = llm_linear(f, V(s->x), &m->ple_model_proj, (gpu_view){0}, V(s->ple_ctx), T, LP, D);
  /* RMSNorm(c * y) = y / sqrt(mean(y^2) + eps / c^2): the projection's scale c = 1/sqrt(D) rides in eps */
  op_rms_norm_params pn = {.n = P,
                           .rows = T * hp->n_layer,
                           .in = {.off = 0, .stride = P},
                           .out = {.off = 0, .stride = P},
                           .eps = hp->norm_eps * (float)D,
                           .w_offset = 0.0f};
  if (!st) st = op_rms_norm_rows(rec, V(s->ple_ctx), m->ple_proj_norm, V(s->ple), &pn);
  if (!st) st = op_add_scale_inplace(rec, V(s->ple), V(s->ple_tok), T * LP, T * LP, (float)(1.0 / sqrt(2.0)));
  return st;
}

/* x += norm(proj(gelu(gate(x)) * ple[:, l])); x *= layer_scalar */
static wgllm_status per_layer_input_block(const llm_fwd *f, uint32_t l) {
  gpu_recorder *rec = f->rec;
  const llm_hparams *hp = &f->m->hp;
  const llm_layer *ly = &f->m->layers[l];
  const llm_scratch *s = f->s;
  uint32_t T = f->T, D = hp->n_embd, P = hp->ple_dim;
  gpu_view none = {0};
  wgllm_status st = WGLLM_OK;
  if (P) {
    st = llm_linear(f, V(s->x), &ly->ple_gate, none, V(s->ple_h), T, P, D);
    /* xn [T][P] (P <= n_embd, checked at load) */
    if (!st) st = op_glu_strided(rec, V(s->ple_h), V(s->ple), V(s->xn), P, T, P, 0, hp->n_layer * P, l * P, hp->act);
    if (!st) st = llm_linear(f, V(s->xn), &ly->ple_proj, none, V(s->proj), T, D, P);
    if (!st) st = op_rms_norm_add(rec, V(s->proj), ly->ple_norm, V(s->x), D, T, hp->norm_eps, 0.0f);
  }
  if (!st && hp->layer_scalar) st = op_mul_inplace(rec, V(s->x), ly->scalar, T * D, 1);
  return st;
}

wgllm_status llm_forward_gemma4(const llm_fwd *f, uint32_t n_logits) {
  const llm_hparams *hp = &f->m->hp;
  const llm_scratch *s = f->s;
  wgllm_status st =
      op_embedding(f->rec, V(s->ids), &f->m->tok_embd, V(s->x), f->T, hp->n_embd, hp->n_vocab, hp->embed_scale);
  if (!st && hp->ple_dim) st = per_layer_inputs(f);
  for (uint32_t l = 0; !st && l < hp->n_layer; l++) {
    st = llm_block_attention(f, l);
    if (!st) st = llm_layer_is_moe(hp, l) ? llm_block_moe(f, l) : llm_block_mlp(f, l);
    if (!st) st = per_layer_input_block(f, l);
    if (!st) st = gpu_recorder_flush(f->rec); /* a prefill pass: the GPU starts on this layer */
  }
  if (!st) st = llm_block_head(f, n_logits);
  return st;
}
