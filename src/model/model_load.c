/* Uploads a model's weights to the GPU in the kernels' layouts: f32/f16/bf16 as they are,
   GGUF Q4_0 repacked to q4gsw g32 and Q8_0 to the q8 layout (no requantization), the other ggml block types
   (Q4_1, Q5_x, K-quants, IQ4) as the file has them (Q6_K's blocks padded to a word stride), and with the q4
   policy every f32/f16/bf16 linear weight quantized to q4gsw on load. Projections run as one (Q/K/V, gate/up)
   whose parts have different storages are joined where consecutive parts share one and otherwise stay apart
   as row parts of one weight, each in its own storage. On any failure nothing stays allocated. */
#include "model.h"
#include "weight_convert.h"
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct loader {
  llm_model *m;
  const wt_store *st;
  int gguf;
  uint32_t kept_native; /* q4 policy: projections whose K is not a multiple of the group */
  uint32_t mixed;       /* fused projections whose parts have different storages, kept as parts */
  uint64_t max_binding; /* weights over it are split by rows (split_rows) */
  uint32_t split;       /* how many were */
  llm_err *err;
} loader;

static wgllm_status upload(loader *L, const void *data, uint64_t bytes, const char *label, gpu_view *out) {
  llm_model *m = L->m;
  uint64_t padded = (bytes + 3) & ~(uint64_t)3;
  gpu_buffer *b;
  wgllm_status s = llm_model_own_buffer(m, padded, label, &b, L->err);
  if (s) return s;
  if (padded != bytes) { /* the GPU wants whole words */
    uint8_t *tmp = calloc(1, padded);
    if (!tmp) {
      return llm_err_set(L->err, WGLLM_ERR_OUT_OF_MEMORY, "out of host memory");
    }
    memcpy(tmp, data, bytes);
    gpu_write(m->gpu, b, 0, tmp, padded);
    free(tmp);
  } else {
    gpu_write(m->gpu, b, 0, data, bytes);
  }
  *out = gpu_whole(b);
  return WGLLM_OK;
}

/* A tensor's bytes as the file has them: from the mapping, or where the file is not resident (the browser build)
   streamed from the file into the buffer by mf_upload, never through host memory (WebGPU buffers start zeroed, so
   the padding to a whole word is there). */
static wgllm_status upload_tensor(loader *L, const wt_tensor *t, gpu_view *out) {
  if (t->data) return upload(L, t->data, t->nbytes, t->name, out);
  gpu_buffer *b;
  wgllm_status s = llm_model_own_buffer(L->m, (t->nbytes + 3) & ~(uint64_t)3, t->name, &b, L->err);
  if (!s) s = mf_upload(L->m->gpu, b, 0, t->file, t->file_offset, t->nbytes & ~(uint64_t)3, L->err);
  if (!s && (t->nbytes & 3)) { /* the last partial word, through memory */
    uint8_t w[4] = {0};
    s = mf_read_range(t->file, t->file_offset + (t->nbytes & ~(uint64_t)3), w, t->nbytes & 3, L->err);
    if (!s) s = gpu_write(L->m->gpu, b, t->nbytes & ~(uint64_t)3, w, 4);
  }
  if (!s) *out = gpu_whole(b);
  return s;
}

/* Any float tensor as f32 on the GPU (norm weights, biases). */
static wgllm_status load_f32(loader *L, const wt_tensor *t, float scale, gpu_view *out) {
  int64_t n = wt_numel(t);
  float *f = malloc((size_t)n * sizeof *f);
  if (!f) {
    return llm_err_set(L->err, WGLLM_ERR_OUT_OF_MEMORY, "out of host memory for %s", t->name);
  }
  wgllm_status s = wc_tensor_to_f32(t, f, L->err);
  for (int64_t i = 0; !s && scale != 1.0f && i < n; i++)
    f[i] *= scale;
  if (!s) s = upload(L, f, (uint64_t)n * 4, t->name, out);
  free(f);
  return s;
}

/* rows [E][2W] with gate and up interleaved (element 2i gate i, 2i + 1 up i) made [E][W gate][W up], in place */
static void split_pairs(float *f, uint64_t rows, uint64_t width2, float *tmp) {
  uint64_t w = width2 / 2;
  for (uint64_t r = 0; r < rows; r++) {
    float *row = f + r * width2;
    for (uint64_t i = 0; i < w; i++) {
      tmp[i] = row[2 * i];
      tmp[w + i] = row[2 * i + 1];
    }
    memcpy(row, tmp, width2 * sizeof *f);
  }
}

/* A vector role as f32 on the GPU in the layout the op reads: gpt-oss's gate_up_proj_bias [E][2I] with gate and up
   interleaved (LLM_LAYOUT_PAIRS) made per expert its gate biases, then its up biases. */
static wgllm_status load_vec(loader *L, const llm_role *r, const wt_tensor *t, float scale, gpu_view *out) {
  if (r->layout != LLM_LAYOUT_PAIRS) return load_f32(L, t, scale, out);
  int64_t n = wt_numel(t), w2 = t->shape[t->n_dims - 1];
  float *f = malloc((size_t)n * sizeof *f), *tmp = malloc((size_t)w2 * sizeof *tmp);
  wgllm_status s = f && tmp ? wc_tensor_to_f32(t, f, L->err)
                            : llm_err_set(L->err, WGLLM_ERR_OUT_OF_MEMORY, "out of host memory for %s", t->name);
  if (!s) split_pairs(f, (uint64_t)(n / w2), (uint64_t)w2, tmp);
  if (!s) s = upload(L, f, (uint64_t)n * 4, t->name, out);
  free(f);
  free(tmp);
  return s;
}

/* GGUF's expert gate and up biases [E][I] each (LLM_GROUP_EXP_BIAS) as one [E][2I]: per expert gate, then up. */
static wgllm_status load_exp_bias(loader *L, const wt_tensor *gate, const wt_tensor *up, gpu_view *out) {
  int64_t n = wt_numel(gate), I = gate->shape[gate->n_dims - 1], E = n / I;
  float *g = malloc((size_t)n * sizeof *g), *u = malloc((size_t)n * sizeof *u), *o = malloc((size_t)n * 2 * sizeof *o);
  wgllm_status s = g && u && o ? wc_tensor_to_f32(gate, g, L->err)
                               : llm_err_set(L->err, WGLLM_ERR_OUT_OF_MEMORY, "out of host memory for %s", gate->name);
  if (!s) s = wc_tensor_to_f32(up, u, L->err);
  for (int64_t e = 0; !s && e < E; e++) {
    memcpy(o + e * 2 * I, g + e * I, (size_t)I * sizeof *o);
    memcpy(o + e * 2 * I + I, u + e * I, (size_t)I * sizeof *o);
  }
  if (!s) s = upload(L, o, (uint64_t)n * 8, gate->name, out);
  free(g);
  free(u);
  free(o);
  return s;
}

/* A stacked expert tensor of a non-plain layout (gpt-oss's Hugging Face forms) rewritten in host memory as the
   [E][R][K] tensor load_matrix reads, into *out (its data in *buf, freed by the caller): transposed ([E][K][R]
   elements of any plain type, LLM_LAYOUT_T), its rows' gate/up pairs split (_PAIRS: row 2i gate i, 2i + 1 up i,
   made gate rows then up rows), or MXFP4 blocks [E][R][K/32][16] with their e8m0 scales [E][R][K/32] (LLM_LAYOUT_MX:
   OCP's nibble order, element 2j low and 2j + 1 high in byte j) made ggml's 17-byte MXFP4 blocks (the exponent, then
   element j low and j + 16 high in byte j). */
static wgllm_status relaid_experts(loader *L, const llm_role *r, const wt_tensor *t, uint32_t E, uint32_t R, uint32_t K,
                                   wt_tensor *out, void **buf) {
  int pairs = r->layout == LLM_LAYOUT_T_PAIRS || r->layout == LLM_LAYOUT_MX_PAIRS;
  int mx = r->layout == LLM_LAYOUT_MX || r->layout == LLM_LAYOUT_MX_PAIRS;
  *out = *t;
  out->n_dims = 2;
  out->shape[0] = (int64_t)E * R;
  out->shape[1] = K;
  out->file = NULL;
  *buf = NULL;
  void *tmp = NULL, *tmp_s = NULL;
  const uint8_t *src = wt_tensor_bytes(t, &tmp, L->err), *sc = NULL;
  if (!src) return WGLLM_ERR_IO;
  const wt_tensor *ts = NULL;
  if (mx) {
    char sn[128];
    ts = wt_find(L->st, llm_role_scales_name(t->name, sn, sizeof sn)); /* checked with the shapes */
    sc = ts ? wt_tensor_bytes(ts, &tmp_s, L->err) : NULL;
    if (!sc) {
      free(tmp);
      return ts ? WGLLM_ERR_IO : llm_err_set(L->err, WGLLM_ERR_FORMAT, "missing tensor %s", sn);
    }
    out->dtype = WT_MXFP4;
  }
  uint64_t es = mx ? 0 : wt_traits(t->dtype)->block_bytes, nb = K / 32;
  out->nbytes = mx ? (uint64_t)E * R * nb * 17 : (uint64_t)E * R * K * es;
  uint8_t *o = malloc(out->nbytes);
  if (!o) {
    free(tmp);
    free(tmp_s);
    return llm_err_set(L->err, WGLLM_ERR_OUT_OF_MEMORY, "out of host memory for %s", t->name);
  }
  for (uint64_t e = 0; e < E; e++)
    for (uint64_t row = 0; row < R; row++) {
      uint64_t dst = pairs ? (row % 2 ? R / 2 + row / 2 : row / 2) : row; /* the source row's place */
      if (mx) {
        for (uint64_t b = 0; b < nb; b++) {
          const uint8_t *q = src + ((e * R + row) * nb + b) * 16;
          uint8_t *d = o + ((e * R + dst) * nb + b) * 17;
          d[0] = sc[(e * R + row) * nb + b];
          for (int j = 0; j < 16; j++) { /* elements j and j + 16: bytes j / 2 and 8 + j / 2 of the OCP block */
            uint8_t lo = (uint8_t)(q[j / 2] >> (4 * (j % 2)) & 15), hi = (uint8_t)(q[8 + j / 2] >> (4 * (j % 2)) & 15);
            d[1 + j] = (uint8_t)(lo | hi << 4);
          }
        }
      } else
        for (uint64_t k = 0; k < K; k++) /* file [E][K][R] */
          memcpy(o + ((e * R + dst) * K + k) * es, src + ((e * K + k) * R + row) * es, es);
    }
  free(tmp);
  free(tmp_s);
  out->data = o;
  *buf = o;
  return WGLLM_OK;
}

/* The GPU storage of each of ggml's other block types (kept as the file has them). */
static op_wtype block_storage(wt_dtype d) {
  switch (d) {
  case WT_Q4_1:
    return OP_W_Q4_1;
  case WT_Q5_0:
    return OP_W_Q5_0;
  case WT_Q5_1:
    return OP_W_Q5_1;
  case WT_Q2_K:
    return OP_W_Q2_K;
  case WT_Q3_K:
    return OP_W_Q3_K;
  case WT_Q4_K:
    return OP_W_Q4_K;
  case WT_Q5_K:
    return OP_W_Q5_K;
  case WT_Q6_K:
    return OP_W_Q6_K;
  case WT_IQ4_NL:
    return OP_W_IQ4_NL;
  case WT_IQ4_XS:
    return OP_W_IQ4_XS;
  case WT_MXFP4:
    return OP_W_MXFP4;
  default:
    return OP_W_COUNT;
  }
}

/* The storage load_matrix gives a tensor under a policy (quantize: the q4 group for float weights, or 0). */
static void storage_of(const wt_tensor *t, int quantize, op_wtype *type, uint32_t *group) {
  *group = 0;
  if (t->dtype == WT_Q4_0) {
    *type = OP_W_Q4;
    *group = 32;
  } else if (t->dtype == WT_Q8_0) {
    *type = OP_W_Q8;
    *group = 32;
  } else if (block_storage(t->dtype) != OP_W_COUNT) {
    *type = block_storage(t->dtype);
  } else if (quantize > 0 && !wt_traits(t->dtype)->quantized && t->shape[1] % quantize == 0) {
    *type = OP_W_Q4;
    *group = (uint32_t)quantize;
  } else
    *type = t->dtype == WT_F16 ? OP_W_F16 : t->dtype == WT_BF16 ? OP_W_BF16 : OP_W_F32;
}

/* A [N][K] matrix in the storage the policy asks for. quantize: the q4 group to quantize float weights to, or 0
   to keep them. */
static wgllm_status load_matrix(loader *L, const wt_tensor *t, int quantize, op_weight *w) {
  int64_t N = t->shape[0], K = t->shape[1];
  memset(w, 0, sizeof *w);
  wgllm_status s = WGLLM_OK;
  if (t->dtype == WT_Q4_0) {
    uint32_t *qs = malloc(q4gsw_qs_words(N, K) * 4);
    uint16_t *sc = malloc(q4gsw_scale_count(N, K, 32) * 2);
    void *tmp = NULL;
    const void *src = NULL;
    if (!qs || !sc) s = WGLLM_ERR_OUT_OF_MEMORY;
    if (!s && !(src = wt_tensor_bytes(t, &tmp, L->err))) s = WGLLM_ERR_IO;
    if (!s) s = q4gsw_from_q4_0(src, N, K, qs, sc, L->err);
    free(tmp);
    if (!s) s = upload(L, qs, q4gsw_qs_words(N, K) * 4, t->name, &w->data);
    if (!s) s = upload(L, sc, q4gsw_scale_count(N, K, 32) * 2, t->name, &w->scales);
    free(qs);
    free(sc);
    w->type = OP_W_Q4;
    w->group = 32;
    return s;
  }
  if (t->dtype == WT_Q8_0) { /* split 34-byte blocks into int8 values and f16 scales */
    size_t nb = (size_t)(N * K / 32);
    int8_t *q = malloc((size_t)(N * K));
    uint16_t *sc = malloc(nb * 2);
    if (!q || !sc) {
      free(q);
      free(sc);
      return llm_err_set(L->err, WGLLM_ERR_OUT_OF_MEMORY, "out of host memory for %s", t->name);
    }
    void *tmp = NULL;
    const uint8_t *src = wt_tensor_bytes(t, &tmp, L->err);
    if (!src) {
      free(q);
      free(sc);
      return WGLLM_ERR_IO;
    }
    for (size_t b = 0; b < nb; b++) {
      memcpy(&sc[b], src + 34 * b, 2);
      memcpy(q + 32 * b, src + 34 * b + 2, 32);
    }
    free(tmp);
    s = upload(L, q, (uint64_t)(N * K), t->name, &w->data);
    if (!s) s = upload(L, sc, nb * 2, t->name, &w->scales);
    free(q);
    free(sc);
    w->type = OP_W_Q8;
    w->group = 32;
    return s;
  }
  if (block_storage(t->dtype) != OP_W_COUNT) { /* ggml's other block types: the kernels read the file's blocks
                                                  (Q6_K padded, MXFP4 split: op_blocks_to_gpu) */
    w->type = block_storage(t->dtype);
    uint64_t gb = op_blocks_gpu_bytes(w->type, (uint64_t)(N * K)),
             sb = op_blocks_gpu_scale_bytes(w->type, (uint64_t)(N * K)); /* MXFP4: its exponents apart */
    if (gb == t->nbytes && !sb) return upload_tensor(L, t, &w->data);
    uint8_t *g = malloc(gb + ((sb + 3) & ~3ull));
    if (!g) {
      return llm_err_set(L->err, WGLLM_ERR_OUT_OF_MEMORY, "out of host memory for %s", t->name);
    }
    void *tmp = NULL;
    const void *src = wt_tensor_bytes(t, &tmp, L->err);
    if (!src) {
      free(g);
      return WGLLM_ERR_IO;
    }
    memset(g + gb, 0, (sb + 3) & ~3ull);
    op_blocks_to_gpu(w->type, src, (uint64_t)(N * K), g, sb ? g + gb : NULL);
    free(tmp);
    s = upload(L, g, gb, t->name, &w->data);
    if (!s && sb) s = upload(L, g + gb, (sb + 3) & ~3ull, t->name, &w->scales);
    free(g);
    return s;
  }
  if (quantize && K % quantize) /* q4 policy, but rows that are not whole groups: kept in the file's storage */
    L->kept_native++;
  else if (quantize) { /* q4 policy: quantize float weights, group = quantize */
    uint32_t G = (uint32_t)quantize;
    float *f = malloc((size_t)(N * K) * sizeof *f);
    uint32_t *qs = malloc(q4gsw_qs_words(N, K) * 4);
    uint16_t *sc = malloc(q4gsw_scale_count(N, K, (int)G) * 2);
    if (!f || !qs || !sc) s = WGLLM_ERR_OUT_OF_MEMORY;
    if (!s) s = wc_tensor_to_f32(t, f, L->err);
    if (!s) s = q4gsw_quantize_f32(f, N, K, (int)G, qs, sc, L->err);
    if (!s) s = upload(L, qs, q4gsw_qs_words(N, K) * 4, t->name, &w->data);
    if (!s) s = upload(L, sc, q4gsw_scale_count(N, K, (int)G) * 2, t->name, &w->scales);
    if (s == WGLLM_ERR_OUT_OF_MEMORY && !llm_err_msg(L->err)[0])
      llm_err_set(L->err, s, "out of host memory for %s", t->name);
    free(f);
    free(qs);
    free(sc);
    w->type = OP_W_Q4;
    w->group = G;
    return s;
  }
  if (t->dtype == WT_F16 || t->dtype == WT_BF16) { /* 16-bit stays 16-bit: the kernels read packed pairs */
    w->type = t->dtype == WT_F16 ? OP_W_F16 : OP_W_BF16;
    return upload_tensor(L, t, &w->data);
  }
  if (t->dtype == WT_F32) {
    w->type = OP_W_F32;
    return upload_tensor(L, t, &w->data);
  }
  /* any other float storage: widened to f32, exact */
  w->type = OP_W_F32;
  gpu_view v;
  s = load_f32(L, t, 1.0f, &v);
  w->data = v;
  return s;
}

static wgllm_status split_rows(loader *L, op_weight *w, uint32_t N, uint32_t K, const char *name);
static void weight_bytes(const op_weight *w, uint64_t N, uint64_t K, uint64_t *data, uint64_t *scales);
static void release_owned(llm_model *m, gpu_buffer *b);

/* Loads the parts of a projection the decoder runs as one (Q/K/V, gate/up) and concatenates their rows. When
   the file stores them differently (Q4_K and Q6_K in a Q4_K_M file), each run of consecutive parts in one
   storage is joined and the runs stay apart as row parts of one weight, each read in its own storage (Q and K
   one part, V another). One part is loaded as it is. */
static wgllm_status load_fused(loader *L, const wt_tensor *const *t, int n, int quantize, const uint32_t *rows,
                               uint32_t K, op_weight *out) {
  op_wtype type[4];
  uint32_t grp[4];
  if (n == 1) return load_matrix(L, t[0], quantize, out);
  for (int i = 0; i < n; i++)
    storage_of(t[i], quantize, &type[i], &grp[i]);
  op_weight parts[4];
  wgllm_status s = WGLLM_OK;
  for (int i = 0; !s && i < n; i++)
    s = load_matrix(L, t[i], quantize, &parts[i]);
  if (s) return s; /* parts already loaded stay owned by the model and are freed with it */
  /* runs [i, j) of one storage; parts are joined by word copies, so a part of bytes that are not whole words
     (an odd count of 16-bit elements, a block type's odd row bytes) ends its run */
  op_weight runs[4] = {{0}};
  uint32_t run_rows[4];
  int n_runs = 0;
  for (int i = 0; !s && i < n;) {
    int j = i + 1;
    uint32_t r = rows[i];
    while (j < n && type[j] == type[i] && grp[j] == grp[i] && t[j - 1]->nbytes % 4 == 0)
      r += rows[j++];
    if (j - i == 1)
      runs[n_runs] = parts[i];
    else
      s = llm_concat_rows(L->m, &parts[i], &rows[i], j - i, K, &runs[n_runs], L->err);
    run_rows[n_runs++] = r;
    i = j;
  }
  if (s) return s;
  if (n_runs == 1) {
    *out = runs[0];
    return WGLLM_OK;
  }
  /* different storages: one weight of row parts, each read in its own storage (no widening); a run may itself be
     over the binding limit */
  for (int i = 0; !s && i < n_runs; i++)
    s = split_rows(L, &runs[i], run_rows[i], K, t[0]->name);
  if (s) return s;
  memset(out, 0, sizeof *out);
  out->type = runs[0].type;
  out->group = runs[0].group;
  for (int i = 0; i < n_runs; i++) {
    uint32_t np = runs[i].n_parts ? runs[i].n_parts : 1;
    if (out->n_parts + np > OP_W_MAX_PARTS) {
      return llm_err_set(L->err, WGLLM_ERR_UNSUPPORTED, "tensor %s: projections of mixed types need more than %d parts",
                         t[0]->name, OP_W_MAX_PARTS);
    }
    for (uint32_t k = 0; k < np; k++) {
      struct op_weight_part *p = &out->part[out->n_parts++];
      if (runs[i].n_parts)
        *p = runs[i].part[k];
      else
        *p = (struct op_weight_part){runs[i].data, runs[i].scales, run_rows[i], runs[i].type, runs[i].group};
    }
  }
  out->data = out->part[0].data;
  out->scales = out->part[0].scales;
  L->mixed++;
  return WGLLM_OK;
}

/* A layer's experts of one projection (down), or of two interleaved per expert (gate then up, the GLU's layout), as
   one [E][rows][K] weight in op_moe_linear's layout, in the storage load_matrix gives each piece (the file's, or q4
   on load). The pieces: a tensor an expert (a Hugging Face checkpoint), or one [E][rows][K] tensor a projection
   (GGUF, transformers 5) read as [E * rows][K]; a stacked tensor alone is the weight as it is, else the pieces'
   row ranges are copied on the GPU into the weight (whole rows of whole blocks: no requantizing) and released. A
   weight over the storage binding limit is row parts of whole experts, a buffer each (op_moe_linear runs a part a
   dispatch). */
static wgllm_status load_experts(loader *L, uint32_t l, const llm_role *const *rs, int n_roles, int quantize,
                                 op_weight *out) {
  const llm_hparams *hp = &L->m->hp;
  uint32_t E = hp->n_expert, rows[2], R = 0, K = (uint32_t)llm_role_size(hp, rs[0]->d1, l);
  uint32_t n_t = llm_role_tensors(hp, L->gguf, rs[0]);
  op_weight *pc = calloc((size_t)n_roles * n_t, sizeof *pc); /* [n_roles][n_t] */
  if (!pc) return llm_err_set(L->err, WGLLM_ERR_OUT_OF_MEMORY, "out of host memory");
  char name[128], first[128] = "";
  wgllm_status s = WGLLM_OK;
  for (int r = 0; !s && r < n_roles; r++) {
    rows[r] = (uint32_t)llm_role_size(hp, rs[r]->d0, l);
    R += rows[r];
    for (uint32_t i = 0; !s && i < n_t; i++) {
      const wt_tensor *t = wt_find(L->st, llm_role_name_e(hp, L->gguf, rs[r], (int)l, i, name, sizeof name));
      if (!t) { /* shapes were checked */
        s = llm_err_set(L->err, WGLLM_ERR_FORMAT, "missing tensor %s", name);
        break;
      }
      if (!first[0]) snprintf(first, sizeof first, "%s", name);
      wt_tensor tv = *t; /* as a matrix: [rows][K], or the experts stacked [E * rows][K] */
      void *relaid = NULL;
      tv.n_dims = 2;
      tv.shape[0] = n_t == 1 ? (int64_t)E * rows[r] : rows[r];
      tv.shape[1] = K;
      if (rs[r]->layout != LLM_LAYOUT_PLAIN) s = relaid_experts(L, rs[r], t, E, rows[r], K, &tv, &relaid);
      if (!s) s = load_matrix(L, &tv, quantize, &pc[(size_t)r * n_t + i]);
      free(relaid);
      if (!s && (pc[(size_t)r * n_t + i].type != pc[0].type || pc[(size_t)r * n_t + i].group != pc[0].group))
        s = llm_err_set(L->err, WGLLM_ERR_UNSUPPORTED,
                        "layer %u's experts: %s is stored as %s and %s as %s (one storage a projection needed)", l,
                        first, op_wtype_name(pc[0].type), name, op_wtype_name(pc[(size_t)r * n_t + i].type));
    }
  }
  /* an expert's bytes in the weight (data, scales), and the experts a binding holds: over the limit, the weight is
     row parts of whole experts (op_moe_linear's parts), each its own buffers */
  uint64_t db[2] = {0}, sb[2] = {0}, ed = 0, es = 0;
  uint32_t per = E, n_parts = 1;
  if (!s) {
    weight_bytes(&pc[0], R, K, &ed, &es);
    uint64_t big = ed > es ? ed : es, fit = big ? L->max_binding / big : E;
    if (fit < E) {
      per = (uint32_t)fit;
      n_parts = per ? (E + per - 1) / per : 0;
      if (!per || n_parts > OP_W_MAX_PARTS)
        s = llm_err_set(L->err, WGLLM_ERR_UNSUPPORTED,
                        "layer %u's experts (%s ...: %u experts of [%u][%u] in %s, %llu bytes an expert) do not fit "
                        "%d storage bindings of %llu bytes (whole experts a binding)",
                        l, first, E, R, K, op_wtype_name(pc[0].type), (unsigned long long)big, OP_W_MAX_PARTS,
                        (unsigned long long)L->max_binding);
    }
  }
  if (!s && n_roles == 1 && n_t == 1 && n_parts == 1) { /* stacked in the file as the op reads it */
    *out = pc[0];
    free(pc);
    return WGLLM_OK;
  }
  for (int r = 0; !s && r < n_roles; r++) {
    weight_bytes(&pc[0], rows[r], K, &db[r], &sb[r]);
    if ((db[r] & 3) || (sb[r] & 3))
      s = llm_err_set(L->err, WGLLM_ERR_UNSUPPORTED,
                      "layer %u's experts (%s): an expert's %u rows of %u are %llu bytes, not whole words", l, first,
                      rows[r], K, (unsigned long long)db[r]);
  }
  gpu_buffer *d[OP_W_MAX_PARTS] = {0}, *sc[OP_W_MAX_PARTS] = {0};
  for (uint32_t i = 0; !s && i < n_parts; i++) {
    uint32_t ne = i + 1 < n_parts ? per : E - per * (n_parts - 1);
    s = llm_model_own_buffer(L->m, ed * ne, n_parts > 1 ? "experts_part" : "experts", &d[i], L->err);
    if (!s && es) s = llm_model_own_buffer(L->m, es * ne, "experts_scales", &sc[i], L->err);
  }
  if (!s) {
    WGPUCommandEncoder enc = wgpuDeviceCreateCommandEncoder(L->m->gpu->device, NULL);
    for (uint32_t e = 0; e < E; e++) {
      uint64_t od = (uint64_t)(e % per) * ed, os = (uint64_t)(e % per) * es;
      for (int r = 0; r < n_roles; r++) {
        const op_weight *p = &pc[(size_t)r * n_t + (n_t == 1 ? 0 : e)];
        uint64_t at = n_t == 1 ? e : 0; /* a stacked piece: expert e's rows */
        if (db[r])
          wgpuCommandEncoderCopyBufferToBuffer(enc, p->data.buf->handle, p->data.offset + at * db[r],
                                               d[e / per]->handle, od, db[r]);
        if (sb[r])
          wgpuCommandEncoderCopyBufferToBuffer(enc, p->scales.buf->handle, p->scales.offset + at * sb[r],
                                               sc[e / per]->handle, os, sb[r]);
        od += db[r];
        os += sb[r];
      }
    }
    WGPUCommandBuffer cb = wgpuCommandEncoderFinish(enc, NULL);
    wgpuQueueSubmit(L->m->gpu->queue, 1, &cb);
    wgpuCommandBufferRelease(cb);
    wgpuCommandEncoderRelease(enc);
    *out = pc[0];
    out->data = gpu_whole(d[0]);
    out->scales = sc[0] ? gpu_whole(sc[0]) : (gpu_view){0};
    out->n_parts = n_parts > 1 ? n_parts : 0;
    for (uint32_t i = 0; n_parts > 1 && i < n_parts; i++) {
      uint32_t ne = i + 1 < n_parts ? per : E - per * (n_parts - 1);
      out->part[i] = (struct op_weight_part){gpu_whole(d[i]), sc[i] ? gpu_whole(sc[i]) : (gpu_view){0}, ne * R,
                                             pc[0].type, pc[0].group};
    }
    if (n_parts > 1) L->split++;
    for (size_t i = 0; i < (size_t)n_roles * n_t; i++) {
      release_owned(L->m, pc[i].data.buf);
      if (pc[i].scales.buf) release_owned(L->m, pc[i].scales.buf);
    }
  }
  free(pc); /* on failure, pieces already loaded stay owned by the model and are freed with it */
  return s;
}

/* Whether a layer's expert gate and up tensors (their first, which the others must match) get one storage. */
static int experts_share_storage(loader *L, uint32_t l, const llm_role *const *rs, int quantize) {
  op_wtype type[2];
  uint32_t group[2];
  char name[128];
  for (int r = 0; r < 2; r++) {
    const wt_tensor *t = wt_find(L->st, llm_role_name_e(&L->m->hp, L->gguf, rs[r], (int)l, 0, name, sizeof name));
    if (!t) return 1; /* load_experts names it */
    wt_tensor tv = *t;
    tv.n_dims = 2; /* storage_of reads the row length */
    tv.shape[1] = t->shape[t->n_dims - 1];
    storage_of(&tv, quantize, &type[r], &group[r]);
  }
  return type[0] == type[1] && group[0] == group[1];
}

/* The tensors of one pass over the role table (the file-level roles, or one layer's) into their slots in base
   (the model or the layer): single tensors as their kind says, groups (Q/K/V, their biases, gate/up) joined. */
/* The bytes the weights will take on the GPU (the tensors the role table loads, as stored; q4 on load: 4.5 bits a
   weight of the 2-D f32 / f16 / bf16 ones, its least), against the device's memory before anything is allocated:
   a model that cannot fit is refused here with the numbers, not at the first refused buffer. The limit is
   gpu_memory_left's: the device's heaps, the memory budget, the host's available memory on a CPU adapter. */
static wgllm_status check_fits(gpu_context *gpu, const wt_store *st, const llm_hparams *hp, int q4, llm_err *err) {
  char why[320];
  uint64_t left = gpu_memory_left(gpu, why, sizeof why);
  if (left == UINT64_MAX) return WGLLM_OK; /* nothing is known */
  size_t n;
  const llm_role *roles = llm_roles(&n);
  int gguf = wt_store_format(st) == WT_FORMAT_GGUF;
  char name[128];
  uint64_t need = 0;
  for (int pass = 0; pass < 2; pass++)
    for (uint32_t l = 0; l < (pass ? hp->n_layer : 1); l++)
      for (size_t i = 0; i < n; i++) {
        const llm_role *r = &roles[i];
        if (r->per_layer != pass || !llm_role_present(hp, r, l)) continue;
        for (uint32_t e = 0; e < llm_role_tensors(hp, gguf, r); e++) { /* the experts: each tensor */
          const wt_tensor *t = wt_find(st, llm_role_name_e(hp, gguf, r, pass ? (int)l : -1, e, name, sizeof name));
          if (!t) continue;
          int wide = t->dtype == WT_F32 || t->dtype == WT_F16 || t->dtype == WT_BF16;
          need += q4 && wide && t->n_dims >= 2 ? (uint64_t)wt_numel(t) * 9 / 16 : t->nbytes;
        }
      }
  if (need <= left) return WGLLM_OK;
  return llm_err_set(err, WGLLM_ERR_OUT_OF_MEMORY, "the model's weights need %.1f MiB of GPU memory%s, and %s",
                     need / 1048576.0, q4 ? " as q4" : "", why);
}

static wgllm_status load_roles(loader *L, int layer, void *base, int quantize) {
  const llm_hparams *hp = &L->m->hp;
  size_t n;
  const llm_role *roles = llm_roles(&n);
  struct {
    const wt_tensor *t[4];
    uint32_t rows[4];
    int n;
    size_t slot;
    uint32_t K;
  } groups[LLM_GROUP_EXP_BIAS + 1] = {0};
  uint32_t l = layer < 0 ? 0 : (uint32_t)layer;
  char name[128];
  wgllm_status s = WGLLM_OK;
  const llm_role *exp_gu[2];
  int n_exp_gu = 0;
  for (size_t i = 0; !s && i < n; i++) {
    const llm_role *r = &roles[i];
    if (r->per_layer != (layer >= 0) || !llm_role_present(hp, r, l)) continue;
    if (r->experts != LLM_EXP_NONE) { /* a layer's experts: one weight a projection (gate and up: one) */
      if (r->group == LLM_GROUP_EXP_GATE_UP && n_exp_gu < 2)
        exp_gu[n_exp_gu++] = r;
      else
        s = load_experts(L, l, &r, 1, quantize, (op_weight *)((char *)base + r->slot));
      continue;
    }
    const wt_tensor *t = wt_find(L->st, llm_role_name(hp, L->gguf, r, layer, name, sizeof name));
    if (!t) { /* shapes were checked: only a mistake in the table gets here */
      return llm_err_set(L->err, WGLLM_ERR_FORMAT, "missing tensor %s", name);
    }
    char *slot = (char *)base + r->slot;
    if (r->group != LLM_GROUP_NONE) {
      int g = (int)r->group;
      if (groups[g].n == 4) return WGLLM_ERR_INTERNAL;
      groups[g].t[groups[g].n] = t;
      groups[g].rows[groups[g].n++] = (uint32_t)t->shape[0];
      groups[g].slot = r->slot;
      groups[g].K = t->n_dims == 2 ? (uint32_t)t->shape[1] : 0;
    } else if (r->kind == LLM_ROLE_VEC || r->kind == LLM_ROLE_VEC_RSQRT_D)
      s = load_vec(L, r, t, r->kind == LLM_ROLE_VEC_RSQRT_D ? 1.0f / sqrtf((float)hp->n_embd) : 1.0f, (gpu_view *)slot);
    else {
      s = load_matrix(L, t, r->kind == LLM_ROLE_LINEAR ? quantize : 0, (op_weight *)slot);
      if (!s) s = split_rows(L, (op_weight *)slot, (uint32_t)t->shape[0], (uint32_t)t->shape[1], t->name);
    }
  }
  if (!s && n_exp_gu == 2 && !experts_share_storage(L, l, exp_gu, quantize)) {
    /* gate and up in different types (a GGUF mix): two weights, the GLU apart (llm_block_moe) */
    llm_layer *ly = base;
    s = load_experts(L, l, &exp_gu[0], 1, quantize, &ly->exp_gate_up);
    if (!s) s = load_experts(L, l, &exp_gu[1], 1, quantize, &ly->exp_up);
    if (!s) L->mixed++;
  } else if (!s && n_exp_gu)
    s = load_experts(L, l, exp_gu, n_exp_gu, quantize, (op_weight *)((char *)base + exp_gu[0]->slot));
  for (int g = 1; !s && g <= LLM_GROUP_EXP_BIAS; g++) {
    if (!groups[g].n) continue;
    char *slot = (char *)base + groups[g].slot;
    if (g == LLM_GROUP_EXP_BIAS) {
      if (groups[g].n != 2) return llm_err_set(L->err, WGLLM_ERR_INTERNAL, "experts' biases: %d parts", groups[g].n);
      s = load_exp_bias(L, groups[g].t[0], groups[g].t[1], (gpu_view *)slot);
    } else if (g == LLM_GROUP_BQKV) {
      gpu_view parts[4];
      int done = 0;
      for (; !s && done < groups[g].n; done++)
        s = load_f32(L, groups[g].t[done], 1.0f, &parts[done]);
      if (!s && groups[g].n == 1)
        *(gpu_view *)slot = parts[0];
      else if (!s)
        s = llm_concat_vecs(L->m, parts, groups[g].rows, groups[g].n, (gpu_view *)slot, L->err);
    } else {
      s = load_fused(L, groups[g].t, groups[g].n, quantize, groups[g].rows, groups[g].K, (op_weight *)slot);
      uint32_t N = 0;
      for (int k = 0; k < groups[g].n; k++)
        N += groups[g].rows[k];
      if (!s) s = split_rows(L, (op_weight *)slot, N, groups[g].K, groups[g].t[0]->name);
    }
  }
  return s;
}

/* Bytes of a [N][K] weight's data and scales in the kernels' layouts. */
static void weight_bytes(const op_weight *w, uint64_t N, uint64_t K, uint64_t *data, uint64_t *scales) {
  switch (w->type) {
  case OP_W_F32:
    *data = N * K * 4;
    *scales = 0;
    break;
  case OP_W_F16:
  case OP_W_BF16:
    *data = N * K * 2;
    *scales = 0;
    break;
  case OP_W_Q4:
    *data = N * K / 2;
    *scales = N * K / w->group * 2;
    break;
  case OP_W_Q8:
    *data = N * K;
    *scales = N * K / 32 * 2;
    break;
  default: /* a block type: the file's blocks on the GPU's stride (MXFP4: its exponents in the scales) */
    *scales = op_blocks_gpu_scale_bytes(w->type, N * K);
    *data = op_blocks_gpu_bytes(w->type, N * K);
    break;
  }
}

static void release_owned(llm_model *m, gpu_buffer *b) {
  for (size_t i = 0; i < m->n_owned; i++)
    if (m->owned[i] == b) {
      m->weight_bytes -= b->size;
      gpu_buffer_destroy(m->gpu, b);
      m->owned[i] = m->owned[--m->n_owned];
      return;
    }
}

wgllm_status llm_model_own_buffer(llm_model *m, uint64_t bytes, const char *label, gpu_buffer **b, llm_err *err) {
  if (m->n_owned == m->cap_owned) {
    size_t nc = m->cap_owned ? m->cap_owned * 2 : 64;
    gpu_buffer **no = realloc(m->owned, nc * sizeof *no);
    if (!no) {
      return llm_err_set(err, WGLLM_ERR_OUT_OF_MEMORY, "out of host memory");
    }
    m->owned = no;
    m->cap_owned = nc;
  }
  wgllm_status s = gpu_buffer_create(m->gpu, bytes, label, b, err);
  if (s) return s;
  m->owned[m->n_owned++] = *b;
  m->weight_bytes += (*b)->size;
  return WGLLM_OK;
}

/* copies [bytes] of each part back to back into dst (copy sizes and offsets must be multiples of 4) */
static void copy_parts(llm_model *m, gpu_buffer *dst, gpu_view *src, const uint64_t *bytes, int n) {
  WGPUCommandEncoder enc = wgpuDeviceCreateCommandEncoder(m->gpu->device, NULL);
  uint64_t off = 0;
  for (int i = 0; i < n; i++) {
    uint64_t nb = (bytes[i] + 3) & ~3ull;
    wgpuCommandEncoderCopyBufferToBuffer(enc, src[i].buf->handle, src[i].offset, dst->handle, off, nb);
    off += bytes[i];
  }
  WGPUCommandBuffer cb = wgpuCommandEncoderFinish(enc, NULL);
  wgpuQueueSubmit(m->gpu->queue, 1, &cb);
  wgpuCommandBufferRelease(cb);
  wgpuCommandEncoderRelease(enc);
}

wgllm_status llm_concat_rows(llm_model *m, op_weight *parts, const uint32_t *rows, int n, uint32_t K, op_weight *out,
                             llm_err *err) {
  uint64_t db[4], sb[4], dtot = 0, stot = 0;
  gpu_view dv[4], sv[4];
  if (n > 4) {
    return llm_err_set(err, WGLLM_ERR_INTERNAL, "llm_concat_rows: %d parts", n);
  }
  for (int i = 0; i < n; i++) {
    if (parts[i].type != parts[0].type || parts[i].group != parts[0].group) {
      return llm_err_set(err, WGLLM_ERR_UNSUPPORTED, "cannot fuse projections stored as %s and %s",
                         op_wtype_name(parts[0].type), op_wtype_name(parts[i].type));
    }
    weight_bytes(&parts[i], rows[i], K, &db[i], &sb[i]);
    if (i + 1 < n && ((db[i] & 3) || (sb[i] & 3))) {
      return llm_err_set(err, WGLLM_ERR_UNSUPPORTED,
                         "cannot fuse projections: a part of %llu bytes is not a whole number of words",
                         (unsigned long long)db[i]);
    }
    dv[i] = parts[i].data;
    sv[i] = parts[i].scales;
    dtot += db[i];
    stot += sb[i];
  }
  *out = parts[0];
  gpu_buffer *d, *sc = NULL;
  wgllm_status s = llm_model_own_buffer(m, dtot, "fused", &d, err);
  if (!s && stot) s = llm_model_own_buffer(m, stot, "fused_scales", &sc, err);
  if (s) return s;
  copy_parts(m, d, dv, db, n);
  if (sc) copy_parts(m, sc, sv, sb, n);
  out->data = gpu_whole(d);
  out->scales = sc ? gpu_whole(sc) : (gpu_view){0};
  for (int i = 0; i < n; i++) { /* a tied embedding may be shared: parts here never are */
    release_owned(m, parts[i].data.buf);
    if (parts[i].scales.buf) release_owned(m, parts[i].scales.buf);
  }
  return WGLLM_OK;
}

wgllm_status llm_concat_vecs(llm_model *m, gpu_view *parts, const uint32_t *lens, int n, gpu_view *out, llm_err *err) {
  uint64_t b[4] = {0}, tot = 0;
  for (int i = 0; i < n; i++) {
    b[i] = (uint64_t)lens[i] * 4;
    tot += b[i];
  }
  gpu_buffer *d;
  wgllm_status s = llm_model_own_buffer(m, tot, "fused_bias", &d, err);
  if (s) return s;
  copy_parts(m, d, parts, b, n);
  for (int i = 0; i < n; i++)
    release_owned(m, parts[i].buf);
  *out = gpu_whole(d);
  return WGLLM_OK;
}

/* A [N][K] weight whose data or scales exceed one storage binding: its rows copied (on the GPU) into parts of at
   most max_binding bytes each, every part its own buffers, the whole released. Rows a part are a multiple of a unit
   of two rows (four where two rows' bytes are not whole words: MXFP4's exponents, a byte a block), so every copy is
   whole words. */
wgllm_status llm_split_weight(llm_model *m, op_weight *w, uint32_t N, uint32_t K, uint64_t max_binding,
                              const char *name, llm_err *err) {
  uint64_t rd, rs, unit = 2;
  weight_bytes(w, 2, K, &rd, &rs); /* two rows */
  if ((rd | rs) & 3) {
    unit = 4;
    weight_bytes(w, 4, K, &rd, &rs);
  }
  if (w->n_parts || (w->data.buf->size <= max_binding && (!w->scales.buf || w->scales.buf->size <= max_binding)))
    return WGLLM_OK;
  uint64_t units = max_binding / (rd > rs ? rd : rs);
  if (units == 0 || (N + unit * units - 1) / (unit * units) > OP_W_MAX_PARTS) {
    return llm_err_set(err, WGLLM_ERR_UNSUPPORTED,
                       "tensor %s: [%u][%u] in %s does not fit %d storage bindings of %llu bytes", name, N, K,
                       op_wtype_name(w->type), OP_W_MAX_PARTS, (unsigned long long)max_binding);
  }
  uint32_t rows = (uint32_t)(unit * units), n_parts = (N + rows - 1) / rows;
  op_weight out = *w;
  out.n_parts = n_parts;
  wgllm_status s = WGLLM_OK;
  for (uint32_t i = 0; !s && i < n_parts; i++) {
    uint32_t r = i + 1 < n_parts ? rows : N - rows * (n_parts - 1);
    uint64_t db, sb, off_d, off_s;
    weight_bytes(w, r, K, &db, &sb);
    weight_bytes(w, (uint64_t)rows * i, K, &off_d, &off_s);
    gpu_buffer *bd, *bs = NULL;
    s = llm_model_own_buffer(m, (db + 3) & ~3ull, "weight_part", &bd, err);
    if (!s && sb) s = llm_model_own_buffer(m, (sb + 3) & ~3ull, "weight_part_scales", &bs, err);
    if (s) break;
    gpu_view src = {w->data.buf, w->data.offset + off_d, 0};
    copy_parts(m, bd, &src, &db, 1);
    if (bs) {
      gpu_view ss = {w->scales.buf, w->scales.offset + off_s, 0};
      copy_parts(m, bs, &ss, &sb, 1);
    }
    out.part[i].data = gpu_whole(bd);
    out.part[i].scales = bs ? gpu_whole(bs) : (gpu_view){0};
    out.part[i].rows = r;
    out.part[i].type = w->type;
    out.part[i].group = w->group;
  }
  if (s) return s;
  release_owned(m, w->data.buf);
  if (w->scales.buf) release_owned(m, w->scales.buf);
  out.data = out.part[0].data;
  out.scales = out.part[0].scales;
  *w = out;
  return WGLLM_OK;
}

static wgllm_status split_rows(loader *L, op_weight *w, uint32_t N, uint32_t K, const char *name) {
  uint32_t before = w->n_parts;
  wgllm_status s = llm_split_weight(L->m, w, N, K, L->max_binding, name, L->err);
  if (!s && w->n_parts != before) L->split++;
  return s;
}

wgllm_status llm_parse_weight_policy(const char *s, llm_weight_policy *p, llm_err *err) {
  memset(p, 0, sizeof *p);
  if (!s || !strcmp(s, "native")) return WGLLM_OK;
  if (!strncmp(s, "q4", 2) && (s[2] == 0 || s[2] == ':')) {
    p->q4 = 1;
    p->group = 32;
    if (s[2] == ':') {
      char *end;
      long g = strtol(s + 3, &end, 10);
      if (*end || (g != 32 && g != 64 && g != 128)) {
        return llm_err_set(err, WGLLM_ERR_INVALID_ARG, "--weights %s: the q4 group must be 32, 64 or 128", s);
      }
      p->group = (uint32_t)g;
    }
    return WGLLM_OK;
  }
  return llm_err_set(err, WGLLM_ERR_INVALID_ARG, "--weights %s: expected native, q4 or q4:GROUP", s);
}

void llm_model_free(llm_model *m) {
  if (!m) return;
  for (size_t i = 0; i < m->n_owned; i++)
    gpu_buffer_destroy(m->gpu, m->owned[i]);
  free(m->owned);
  free(m->layers);
  llm_hparams_free(&m->hp);
  free(m);
}

wgllm_status llm_model_load(gpu_context *gpu, const char *path, const llm_load_options *opt, llm_model **out,
                            llm_err *err) {
  *out = NULL;
  wt_store *st = NULL;
  wgllm_status s = llm_open_store(path, &st, err);
  if (s) return s;
  s = llm_model_load_store(gpu, path, st, opt, out, err);
  wt_store_free(st);
  return s;
}

wgllm_status llm_model_load_store(gpu_context *gpu, const char *path, const wt_store *st, const llm_load_options *opt,
                                  llm_model **out, llm_err *err) {
  *out = NULL;
  llm_err_clear(err);
  llm_load_options o = {0};
  if (opt) o = *opt;
  wgllm_status s;
  llm_model *m = calloc(1, sizeof *m);
  if (!m) {
    return llm_err_set(err, WGLLM_ERR_OUT_OF_MEMORY, "out of host memory");
  }
  m->gpu = gpu;
  snprintf(m->source, sizeof m->source, "%s", path);
  s = llm_read_hparams(st, &m->hp, err);
  if (!s) s = llm_read_pooling(path, st, &m->hp, err);
  if (s) {
    llm_hparams_free(&m->hp);
    free(m);
    return s;
  }
  loader L = {m, st, wt_store_format(st) == WT_FORMAT_GGUF, 0, 0, 0, 0, err};
  L.max_binding = o.max_binding ? o.max_binding : gpu->limits.maxStorageBufferBindingSize;
  m->max_binding = L.max_binding;
  const llm_hparams *hp = &m->hp;
  if (!s) s = check_fits(gpu, st, hp, o.weights.q4, err);
  if (s) {
    llm_hparams_free(&m->hp);
    free(m);
    return s;
  }
  int qz = o.weights.q4 ? (int)o.weights.group : 0;
  if (o.weights.q4)
    snprintf(m->weights_desc, sizeof m->weights_desc, "q4gsw g%u", o.weights.group);
  else
    snprintf(m->weights_desc, sizeof m->weights_desc, "native");
  m->layers = calloc(hp->n_layer, sizeof *m->layers);
  if (!m->layers) {
    s = WGLLM_ERR_OUT_OF_MEMORY;
    llm_err_set(err, s, "out of host memory");
  }
  if (!s) s = load_roles(&L, -1, m, qz);
  if (!s && hp->tied_embeddings) m->output = m->tok_embd;
  if (!s && hp->v_norm) { /* the weight of a weightless norm */
    uint32_t n = llm_max_head_dim(hp);
    float *ones = malloc(n * sizeof *ones);
    if (!ones) s = WGLLM_ERR_OUT_OF_MEMORY;
    for (uint32_t i = 0; !s && i < n; i++)
      ones[i] = 1.0f;
    if (!s) s = upload(&L, ones, n * 4ull, "ones", &m->ones);
    free(ones);
  }
  for (uint32_t l = 0; !s && l < hp->n_layer; l++) {
    s = load_roles(&L, (int)l, &m->layers[l], qz);
    if (!s && o.progress && o.progress((float)(l + 1) / (float)hp->n_layer, o.progress_user)) {
      s = llm_err_set(err, WGLLM_ERR_INVALID_ARG, "loading %s: cancelled by the progress callback after layer %u", path,
                      l);
    }
  }
  if (!s && L.mixed) {
    size_t n = strlen(m->weights_desc);
    snprintf(m->weights_desc + n, sizeof m->weights_desc - n, " (%u fused projections of mixed types in parts)",
             L.mixed);
  }
  if (!s && L.split) {
    size_t n = strlen(m->weights_desc);
    snprintf(m->weights_desc + n, sizeof m->weights_desc - n, " (%u split over bindings of %llu bytes)", L.split,
             (unsigned long long)L.max_binding);
  }
  if (!s && L.kept_native) {
    size_t n = strlen(m->weights_desc);
    snprintf(m->weights_desc + n, sizeof m->weights_desc - n, " (%u not: K not a multiple of %u)", L.kept_native,
             o.weights.group);
  }
  if (!s) s = gpu_wait_idle(gpu, err); /* surfaces any allocation or upload error now */
  const char *msg = llm_err_msg(err);
  if (s == WGLLM_ERR_OUT_OF_MEMORY && msg[0] && !strstr(msg, "host memory") && !strstr(msg, "maxBufferSize")) {
    /* the device refused memory: say how much the model wants and how much it got */
    uint64_t file = 0;
    for (size_t i = 0; i < wt_count(st); i++)
      file += wt_at(st, i)->nbytes;
    llm_err_set(
        err, s,
        "%s; the GPU ran out of memory loading %s: its tensors are %.1f MiB in the file (about what the weights "
        "take on the GPU: less with the q4 policy, more where a type is widened to f32), %.1f MiB were "
        "allocated when the device refused",
        msg, path, (double)file / (1 << 20), (double)m->weight_bytes / (1 << 20));
  }
  if (s) {
    if (!llm_err_msg(err)[0])
      llm_err_set(err, s, "loading %s failed (status %d)", path, (int)s); /* the names are the API's, a room above */
    llm_model_free(m);
    return s;
  }
  *out = m;
  return WGLLM_OK;
}
