/* The router of a sparse layer folded into one token's attention projections (docs/MOE.md, "The folded router"):
   a decode step's router logits are R (norm_w + offset) h / rms(h), linear in the residual h = x + Wo a that the
   attention's output projection writes. With R' = R (.) (norm_w + offset) (the norm's weight in its columns) and
   M = R' Wo, R' h = M a + R' x: the output projection's dispatch sums M a + R' x beside its own rows (x copied by
   the QKV's, kernels/gemv.wgsl "_xcp" / "_rtr") and the gate/up's ranking applies 1 / rms(h), so the router takes no
   dispatch of its own. This builds each foldable layer's f32 [E][Q] M then [E][D] R' at load, on the GPU: Wo^T as
   the tiled GEMM of an identity and Wo (each sum one product: the dequantized weight), then M = R' (Wo^T)^T. */
#include "model.h"
#include "weight_convert.h"
#include <stdlib.h>
#include <string.h>

int llm_router_fold_shape_ok(const llm_hparams *hp, uint32_t l) {
  /* the router sums unnormed beside a residual add of the output projection, ranked with the norm's factor in the
     gate/up: no post-attention norm, no biases (the router's would add after the factor), weights over the k */
  return l < hp->n_layer && llm_layer_is_moe(hp, l) && !hp->sandwich_norms && !hp->moe_dense_too && !hp->out_bias &&
         !hp->moe_bias && hp->moe_norm != OP_MOE_SOFTMAX && hp->n_expert <= OP_MOE_MAX_EXPERTS && hp->n_embd % 4 == 0 &&
         llm_layer_q_width(hp, l) % 4 == 0;
}

int llm_router_foldable(const llm_model *m, uint32_t l) {
  if (!llm_router_fold_shape_ok(&m->hp, l)) return 0;
  const llm_layer *ly = &m->layers[l];
  op_wtype rt = ly->router.type;
  return !ly->router.n_parts && (rt == OP_W_F32 || rt == OP_W_F16 || rt == OP_W_BF16) && ly->ffn_norm.buf;
}

uint64_t llm_router_fold_roff(uint32_t E, uint32_t Q) { return ((uint64_t)E * Q * 4 + 255) / 256 * 64; }

uint64_t llm_router_fold_bytes(const llm_hparams *hp, uint32_t l) {
  uint32_t E = hp->n_expert, Q = llm_layer_q_width(hp, l);
  return (llm_router_fold_roff(E, Q) + (uint64_t)E * hp->n_embd) * 4;
}

/* R' [E][D] on the host: the router's rows in f32 times the norm's weight (+ offset) */
static wgllm_status fold_rprime(llm_model *m, const llm_layer *ly, float *rp, llm_err *err) {
  const llm_hparams *hp = &m->hp;
  uint32_t E = hp->n_expert, D = hp->n_embd;
  uint64_t n = (uint64_t)E * D, eb = ly->router.type == OP_W_F32 ? 4 : 2;
  void *raw = malloc(n * eb);
  float *nw = malloc((size_t)D * 4);
  wgllm_status s = raw && nw ? WGLLM_OK : llm_err_set(err, WGLLM_ERR_OUT_OF_MEMORY, "out of host memory");
  if (!s) s = gpu_read(m->gpu, ly->router.data.buf, ly->router.data.offset, raw, n * eb, err);
  if (!s) s = gpu_read(m->gpu, ly->ffn_norm.buf, ly->ffn_norm.offset, nw, (uint64_t)D * 4, err);
  if (!s) {
    if (ly->router.type == OP_W_F32)
      memcpy(rp, raw, n * 4);
    else if (ly->router.type == OP_W_F16)
      wc_f16_to_f32_n(raw, rp, n);
    else
      wc_bf16_to_f32_n(raw, rp, n);
    for (uint32_t e = 0; e < E; e++)
      for (uint32_t j = 0; j < D; j++)
        rp[(size_t)e * D + j] *= nw[j] + hp->norm_offset;
  }
  free(raw);
  free(nw);
  return s;
}

/* the identity [Q][Q] (a zeroed buffer, its ones written a band of rows at a time) */
static wgllm_status fold_identity(gpu_context *gpu, uint32_t Q, gpu_buffer **out, llm_err *err) {
  wgllm_status s = gpu_buffer_create(gpu, (uint64_t)Q * Q * 4, "router_fold_identity", out, err);
  uint32_t band = Q < 64 ? Q : 64;
  float *rows = s ? NULL : calloc((size_t)band * Q, 4);
  if (!s && !rows) s = llm_err_set(err, WGLLM_ERR_OUT_OF_MEMORY, "out of host memory");
  for (uint32_t r0 = 0; !s && r0 < Q; r0 += band) {
    uint32_t nr = Q - r0 < band ? Q - r0 : band;
    memset(rows, 0, (size_t)band * Q * 4);
    for (uint32_t i = 0; i < nr; i++)
      rows[(size_t)i * Q + r0 + i] = 1.0f;
    s = gpu_write(gpu, *out, (uint64_t)r0 * Q * 4, rows, (uint64_t)nr * Q * 4);
  }
  free(rows);
  return s;
}

wgllm_status llm_router_fold_build(llm_model *m, llm_err *err) {
  const llm_hparams *hp = &m->hp;
  gpu_context *gpu = m->gpu;
  uint32_t E = hp->n_expert, D = hp->n_embd, Qi = 0;
  gpu_buffer *ident = NULL, *wot = NULL, *rpb = NULL; /* rpb: R' apart, the GEMM's input (fb is its output) */
  float *rp = NULL;
  wgllm_status s = WGLLM_OK;
  for (uint32_t l = 0; !s && l < hp->n_layer; l++) {
    if (!llm_router_foldable(m, l)) continue;
    llm_layer *ly = &m->layers[l];
    uint32_t Q = llm_layer_q_width(hp, l);
    if (Q != Qi) { /* the identity and Wo^T of this width (every foldable family's layers share one) */
      if (ident) gpu_buffer_destroy(gpu, ident);
      if (wot) gpu_buffer_destroy(gpu, wot);
      ident = wot = NULL;
      s = fold_identity(gpu, Q, &ident, err);
      if (!s) s = gpu_buffer_create(gpu, (uint64_t)Q * D * 4, "router_fold_wot", &wot, err);
      Qi = Q;
    }
    if (!s && !rp && !(rp = malloc((size_t)E * D * 4)))
      s = llm_err_set(err, WGLLM_ERR_OUT_OF_MEMORY, "out of host memory");
    if (!s && !rpb) s = gpu_buffer_create(gpu, (uint64_t)E * D * 4, "router_fold_rprime", &rpb, err);
    if (!s) s = fold_rprime(m, ly, rp, err);
    gpu_buffer *fb = NULL;
    uint64_t roff = llm_router_fold_roff(E, Q) * 4;
    if (!s) s = llm_model_own_buffer(m, llm_router_fold_bytes(hp, l), "router_fold", &fb, err);
    if (!s) s = gpu_write(gpu, fb, roff, rp, (uint64_t)E * D * 4);
    if (!s) s = gpu_write(gpu, rpb, 0, rp, (uint64_t)E * D * 4);
    if (s) break;
    gpu_recorder *rec = gpu_recorder_create(gpu, 0);
    if (!rec) {
      s = llm_err_set(err, WGLLM_ERR_OUT_OF_MEMORY, "out of host memory");
      break;
    }
    /* Wo^T [Q][D] = I [Q][Q] . Wo[D][Q]^T; M [E][Q] = R' [E][D] . (Wo^T [Q][D])^T */
    op_weight wt = {.type = OP_W_F32, .data = gpu_whole(wot)};
    s = op_matmul(rec, gpu_whole(ident), &ly->wo, (gpu_view){0}, gpu_whole(wot), Q, D, Q);
    if (!s) s = op_matmul(rec, gpu_whole(rpb), &wt, (gpu_view){0}, (gpu_view){fb, 0, (uint64_t)E * Q * 4}, E, Q, D);
    if (!s) s = gpu_recorder_run(rec);
    if (s)
      llm_err_set(err, s, "layer %u: folding the router into the output projection: %s", l, gpu_recorder_error(rec));
    gpu_recorder_free(rec);
    if (!s) s = gpu_wait_idle(gpu, err);
    if (!s) ly->router_fold = gpu_whole(fb);
  }
  free(rp);
  if (ident) gpu_buffer_destroy(gpu, ident);
  if (wot) gpu_buffer_destroy(gpu, wot);
  if (rpb) gpu_buffer_destroy(gpu, rpb);
  return s;
}
