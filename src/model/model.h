/* A loaded model: hyperparameters read from config.json or GGUF metadata, and its weights on the GPU in the
   kernels' layouts (converted or packed once at load). Architecture code (arch_*.c) turns it into ops. */
#ifndef WGLLM_MODEL_H
#define WGLLM_MODEL_H
#include "gpu.h"
#include "ops.h"
#include "tensor_store.h"
#include <stdint.h>

typedef enum llm_arch { LLM_ARCH_LLAMA = 0, LLM_ARCH_QWEN2, LLM_ARCH_QWEN3, LLM_ARCH_GEMMA3 } llm_arch;

/* One architecture family (src/model/families.c): the names files give it and what it computes differently. */
#define LLM_FAMILY_NAMES 4
typedef struct llm_family {
  llm_arch arch;
  const char *hf[LLM_FAMILY_NAMES];   /* config.json model_type values */
  const char *gguf[LLM_FAMILY_NAMES]; /* GGUF general.architecture values (none: not read from GGUF yet) */
  int qkv_bias;                       /* always q/k/v biases (Qwen2) */
  int qk_norm;                        /* per-head RMSNorm of q and k (Qwen3, Gemma 3) */
  int gemma;                          /* (1+w) norms, sandwich norms, scaled embeddings, local/global layers */
  int gguf_rope_adjacent;             /* llama.cpp's converter permuted q/k rows for adjacent-pair RoPE */
} llm_family;
const llm_family *llm_family_from_hf(const char *model_type); /* NULL: not a family wgllm runs */
const llm_family *llm_family_from_gguf(const char *architecture);
/* The names one format accepts, comma-separated, into buf (for error messages). */
const char *llm_family_names(int gguf, char *buf, size_t len);

#define LLM_MAX_LAYERS 512

typedef struct llm_hparams {
  llm_arch arch;
  char arch_name[32]; /* as the file names it: "llama", "mistral", "qwen2", "qwen3", "gemma3_text" */
  uint32_t n_vocab, n_embd, n_layer, n_head, n_head_kv, head_dim, n_ff;
  float norm_eps;
  int tied_embeddings; /* lm head reads the embedding table */
  int qkv_bias;        /* Qwen2 */
  int qk_norm;         /* Qwen3: per-head RMSNorm of q and k */
  op_rope_mode rope_mode;
  uint32_t rot_dim;   /* rotated dims per head (partial rotary < head_dim) */
  float *inv_freq;    /* [rot_dim/2], scaling and per-pair factors applied */
  char rope_desc[96]; /* e.g. "llama3 factor 32" */
  uint32_t train_ctx; /* max_position_embeddings / context_length */
  int32_t bos, eos;   /* -1 if unknown */
  /* Gemma 3 */
  float norm_offset;     /* RMSNorm weight offset: 1 for Gemma's (1 + w), else 0 */
  float embed_scale;     /* embeddings multiplied by this (sqrt(hidden) for Gemma), else 1 */
  float attn_scale;      /* query scale (1/sqrt(head_dim), or 1/sqrt(query_pre_attn_scalar)) */
  op_act act;            /* MLP activation: SiLU, or GELU-tanh for Gemma */
  int sandwich_norms;    /* norms after attention and after the MLP, before the residual adds */
  uint32_t window;       /* sliding window of the local layers (0: none) */
  uint8_t *layer_local;  /* [n_layer] 1 for sliding-window layers; NULL when all are global */
  float *inv_freq_local; /* [rot_dim/2] RoPE of the local layers when its base differs; else NULL */
} llm_hparams;

/* Per-layer facts, as functions of the layer: the forward pass asks these, never the scalars above, so a family
   whose layers differ (head_dim, rotary dims, sliding or not, a KV cache shared with an earlier layer) changes
   the answers here and not the callers. Today every layer has the model's head_dim and rotary dims and its own
   cache. */
static inline uint32_t llm_layer_head_dim(const llm_hparams *hp, uint32_t l) {
  (void)l;
  return hp->head_dim;
}
static inline uint32_t llm_layer_rot_dim(const llm_hparams *hp, uint32_t l) {
  (void)l;
  return hp->rot_dim;
}
static inline int llm_layer_is_local(const llm_hparams *hp, uint32_t l) {
  return hp->layer_local && hp->layer_local[l];
}
/* the sliding window of layer l's attention, 0 for full attention */
static inline uint32_t llm_layer_window(const llm_hparams *hp, uint32_t l) {
  return llm_layer_is_local(hp, l) ? hp->window : 0;
}
/* the layer whose KV cache layer l reads (and writes when it is l itself) */
static inline uint32_t llm_layer_kv_source(const llm_hparams *hp, uint32_t l) {
  (void)hp;
  return l;
}

/* How to store linear weights on the GPU. */
typedef struct llm_weight_policy {
  int q4;         /* quantize f32/f16/bf16 linear weights to q4gsw on load */
  uint32_t group; /* q4gsw group: 32, 64 or 128 */
} llm_weight_policy;

typedef struct llm_layer {
  gpu_view attn_norm, ffn_norm;           /* [n_embd] f32 */
  gpu_view post_attn_norm, post_ffn_norm; /* [n_embd] f32, Gemma's sandwich norms */
  gpu_view q_norm, k_norm;                /* [head_dim] f32, Qwen3 */
  op_weight wqkv;                         /* [n_head*hd + 2*n_kv*hd][n_embd]: Q, K, V rows concatenated at load */
  gpu_view bqkv;                          /* [n_head*hd + 2*n_kv*hd] Qwen2 biases, concatenated likewise */
  op_weight wo;                           /* [n_embd][n_head*hd] */
  op_weight w_gate_up;                    /* [2*n_ff][n_embd]: gate rows, then up rows */
  op_weight w_down;                       /* [n_embd][n_ff] */
} llm_layer;

typedef struct llm_model {
  gpu_context *gpu;
  llm_hparams hp;
  op_weight tok_embd; /* [n_vocab][n_embd] */
  op_weight output;   /* [n_vocab][n_embd]; the embedding table when tied */
  gpu_view output_norm;
  llm_layer *layers;  /* [n_layer] */
  gpu_buffer **owned; /* every buffer the model created */
  size_t n_owned, cap_owned;
  uint64_t weight_bytes;
  char weights_desc[64]; /* "native", "q4gsw g32", ... */
  char source[512];      /* path */
} llm_model;

typedef struct llm_load_options {
  llm_weight_policy weights;
  /* called after each layer's weights are uploaded, with the fraction done; non-zero cancels the load */
  int (*progress)(float fraction, void *user);
  void *progress_user;
} llm_load_options;

/* Opens a Hugging Face directory or a .gguf file. PATH errors name the file, tensor and byte offset. */
wgllm_status llm_open_store(const char *path, wt_store **out, char *err, size_t errlen);
/* Reads hyperparameters (from config.json or GGUF metadata) and checks tensor shapes against them. */
wgllm_status llm_read_hparams(const wt_store *st, llm_hparams *hp, char *err, size_t errlen);
/* The file's name of a tensor role ("embed", "norm", "output", "attn_norm", ...) of a layer (-1: none), in
   Hugging Face (gguf 0) or GGUF (gguf 1) naming, written into buf. */
const char *llm_tensor_name(int gguf, const char *role, int layer, char *buf, size_t len);
void llm_hparams_free(llm_hparams *hp);
/* Loads weights to the GPU. On failure nothing stays allocated. */
wgllm_status llm_model_load(gpu_context *gpu, const char *path, const llm_load_options *opt, llm_model **out, char *err,
                            size_t errlen);
/* The same from a model file already opened (st, borrowed; path only names it in messages). */
wgllm_status llm_model_load_store(gpu_context *gpu, const char *path, const wt_store *st, const llm_load_options *opt,
                                  llm_model **out, char *err, size_t errlen);
void llm_model_free(llm_model *m);
/* Creates a device buffer the model owns (freed with it) and counts it in weight_bytes. */
wgllm_status llm_model_own_buffer(llm_model *m, uint64_t bytes, const char *label, gpu_buffer **b, char *err,
                                  size_t errlen);
/* Concatenates weights of the same storage along rows (N) into one new buffer pair (GPU copies), releasing
   the parts. Used to fuse Q/K/V and gate/up into single projections. */
wgllm_status llm_concat_rows(llm_model *m, op_weight *parts, const uint32_t *rows, int n, uint32_t K, op_weight *out,
                             char *err, size_t errlen);
wgllm_status llm_concat_vecs(llm_model *m, gpu_view *parts, const uint32_t *lens, int n, gpu_view *out, char *err,
                             size_t errlen);
/* Parses "native", "q4", "q4:64" into a policy. */
wgllm_status llm_parse_weight_policy(const char *s, llm_weight_policy *p, char *err, size_t errlen);
#endif
