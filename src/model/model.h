/* A loaded model: hyperparameters read from config.json or GGUF metadata, and its weights on the GPU in the
   kernels' layouts (converted or packed once at load). Architecture code (arch_*.c) turns it into ops. */
#ifndef WGLLM_MODEL_H
#define WGLLM_MODEL_H
#include "gpu.h"
#include "llm_err.h"
#include "ops.h"
#include "tensor_store.h"
#include <stdint.h>

typedef enum llm_arch {
  LLM_ARCH_LLAMA = 0,
  LLM_ARCH_QWEN2,
  LLM_ARCH_QWEN3,
  LLM_ARCH_GEMMA3,
  LLM_ARCH_GEMMA4,
  LLM_ARCH_QWEN3_MOE,
  LLM_ARCH_MIXTRAL,
  LLM_ARCH_PHI3,
  LLM_ARCH_GPT_OSS
} llm_arch;

/* One architecture family (src/model/families.c): the names files give it and what it computes differently. */
#define LLM_FAMILY_NAMES 4
struct cJSON;
struct llm_hparams;
typedef struct llm_family {
  llm_arch arch;
  const char *hf[LLM_FAMILY_NAMES];   /* config.json model_type values */
  const char *gguf[LLM_FAMILY_NAMES]; /* GGUF general.architecture values (none: not read from GGUF yet) */
  int qkv_bias;                       /* always q/k/v biases (Qwen2) */
  int qk_norm;                        /* per-head RMSNorm of q and k (Qwen3, Gemma 3) */
  int gemma;                          /* Gemma 3: (1+w) norms, sandwich norms, scaled embeddings, local/global */
  int gguf_rope_adjacent;             /* llama.cpp's converter permuted q/k rows for adjacent-pair RoPE */
  int tied_by_default;                /* tie_word_embeddings when config.json does not say */
  op_act default_act;                 /* the activation when config.json names none */
  int moe;                            /* mixture-of-experts FFN on the sparse layers (Qwen3-MoE: config_moe.c) */
  int fused_proj; /* Q/K/V in one tensor (qkv_proj) and gate/up in one (gate_up_proj), as Phi-3 stores them */
  int oai;        /* gpt-oss: attention sinks, an output-projection bias, biased router and experts, the clamped
                     SwiGLU, the top k softmaxed (config_moe.c) */
  uint32_t window_pattern; /* local layers from layer_types / the GGUF window, every window_pattern-th global (gpt-oss:
                              2); 0: none beyond the common readers' */
  /* a family whose config differs much has its own readers, which take over after the common fields (Gemma 4:
     config_gemma4.c); NULL: the common readers go on */
  wgllm_status (*read_hf)(const struct cJSON *cfg, struct llm_hparams *hp, llm_err *err);
  wgllm_status (*read_gguf)(const wt_store *st, const char *arch, struct llm_hparams *hp, llm_err *err);
} llm_family;
const llm_family *llm_family_from_hf(const char *model_type); /* NULL: not a family wgllm runs */
const llm_family *llm_family_from_gguf(const char *architecture);
/* The names one format accepts, comma-separated, into buf (for error messages). */
const char *llm_family_names(int gguf, char *buf, size_t len);

#define LLM_MAX_LAYERS 512

/* How an embedding model pools its final hidden states: llama.cpp's pooling types (GGUF {arch}.pooling_type 0 none,
   1 mean, 2 cls, 3 last, 4 rank) and sentence-transformers' pooling modes; 0 where the file says nothing. */
typedef enum llm_pooling {
  LLM_POOLING_UNSPECIFIED = 0,
  LLM_POOLING_NONE,
  LLM_POOLING_MEAN,
  LLM_POOLING_CLS,
  LLM_POOLING_LAST,
  LLM_POOLING_RANK
} llm_pooling;

typedef struct llm_hparams {
  llm_arch arch;
  char arch_name[32]; /* as the file names it: "llama", "mistral", "qwen2", "qwen3", "gemma3_text" */
  char hf_prefix[32]; /* Hugging Face names of the decoder's tensors start with this: "model." or, in a
                         multimodal checkpoint, "model.language_model." ("" until read) */
  uint32_t n_vocab, n_embd, n_layer, n_head, n_head_kv, head_dim, n_ff;
  float norm_eps;
  int tied_embeddings; /* lm head reads the embedding table */
  int qkv_bias;        /* Qwen2 */
  int qk_norm;         /* Qwen3: per-head RMSNorm of q and k */
  int fused_proj;      /* Phi-3: the file holds Q/K/V as one tensor and gate/up as one (llm_family.fused_proj) */
  op_rope_mode rope_mode;
  uint32_t rot_dim;    /* rotated dims per head (partial rotary < head_dim) */
  float *inv_freq;     /* [rot_dim/2], scaling and per-pair factors applied (longrope: the short factors) */
  float *inv_freq_long;   /* [rot_dim/2] longrope's long factors: a context past rope_orig_ctx uses them; else NULL */
  uint32_t rope_orig_ctx; /* longrope's original_max_position_embeddings */
  float rope_attn_factor; /* cos and sin times this (longrope's attention factor); 0: 1 */
  char rope_desc[160]; /* e.g. "llama3 factor 32" */
  uint32_t train_ctx;  /* max_position_embeddings / context_length */
  int32_t bos, eos;    /* -1 if unknown */
  /* a base model's directory (Qwen3-Embedding's, saved from Qwen3Model): tensor names without the "model." prefix */
  int hf_bare;
  int no_lm_head; /* untied and no lm_head.weight (an embedding model's weights): it embeds, it cannot generate */
  /* an embedding model's pooling (pooling.c; LLM_POOLING_UNSPECIFIED where the file names none) and whether its
     embeddings are L2-normalised (a sentence-transformers Normalize module) */
  llm_pooling pooling;
  int pooling_normalize;
  /* Gemma 3 and 4 */
  float norm_offset;      /* RMSNorm weight offset: 1 for Gemma 3's (1 + w), else 0 */
  float embed_scale;      /* embeddings multiplied by this (sqrt(hidden) for Gemma), else 1 */
  float attn_scale;       /* query scale (1/sqrt(head_dim), 1/sqrt(query_pre_attn_scalar), 1 for Gemma 4) */
  op_act act;             /* MLP activation: SiLU, or GELU-tanh for Gemma */
  int sandwich_norms;     /* norms after attention and after the MLP, before the residual adds */
  uint32_t window;        /* sliding window of the local layers (0: none) */
  float *inv_freq_local;  /* [rot_dim_local/2] RoPE of the local layers when it differs; else NULL */
  uint32_t rot_dim_local; /* rotated dims of the local layers' table (inv_freq_local) */
  /* Gemma 4 */
  int v_norm;          /* weightless RMSNorm of each V head */
  int layer_scalar;    /* each layer's output is multiplied by its layer_scalar tensor */
  float final_softcap; /* logits = cap * tanh(logits / cap); 0: none */
  uint32_t ple_dim;    /* per-layer input embeddings: width per layer (hidden_size_per_layer_input), 0: none */
  uint32_t ple_vocab;  /* rows of the per-layer embedding table (vocab_size_per_layer_input) */
  /* mixture of experts (Qwen3-MoE; config_moe.c): the sparse layers' FFN is n_expert experts of width n_ff_exp, of
     which each token takes n_expert_used, weighted by the router's softmax (renormalised over the chosen with
     moe_norm); which layers are sparse is hp->lay[l].moe */
  uint32_t n_expert, n_expert_used, n_ff_exp;
  int moe_norm; /* op_moe_norm: OP_MOE_SOFTMAX, _SOFTMAX_NORM (the top k renormalised), _TOPK_SOFTMAX (gpt-oss) */
  int moe_oai_glu;                /* the experts' GLU is gpt-oss's clamped SwiGLU (OP_MOE_ACT_SWIGLU_OAI) */
  float moe_glu_alpha, moe_glu_limit; /* its sigmoid gain and clamp (swiglu_alpha 1.702, swiglu_limit 7) */
  int moe_bias;                   /* the router and the experts' projections have biases (gpt-oss) */
  int out_bias;                   /* the attention's output projection has a bias (gpt-oss) */
  int sinks;                      /* attention sinks: a learned logit per head in the softmax (gpt-oss) */
  int moe_dense_too; /* Gemma 4's MoE block: a sparse layer keeps its dense MLP beside the experts (their outputs
                        normed and summed; llm_block_moe_beside_dense) */
  int moe_hf_form; /* how a Hugging Face directory holds the experts (llm_moe_hf_form); GGUF: 0 */
  /* per-layer facts; NULL when every layer is as the scalars above say (read them through llm_layer_*) */
  struct llm_layer_hp *lay; /* [n_layer] */
} llm_hparams;

/* How a Hugging Face directory holds a layer's experts (hp->moe_hf_form; detected from the first sparse layer's
   tensors): a tensor an expert (the hub's Qwen3-MoE and Mixtral), 3-D as transformers 5 saves them (gate_up_proj
   [E][2I][H], down_proj [E][H][I]), gpt-oss's transposed 3-D (gate_up_proj [E][H][2I] with gate and up interleaved,
   down_proj [E][I][H]) or gpt-oss's MXFP4 blocks and scales (gate_up_proj_blocks [E][2I][H/32][16], rows
   interleaved; down_proj_blocks [E][H][I/32][16]). */
enum llm_moe_hf_form { LLM_MOE_HF_EACH = 0, LLM_MOE_HF_3D, LLM_MOE_HF_OAI, LLM_MOE_HF_OAI_MXFP4 };

/* What one layer computes where layers differ (Gemma 3/4, Mistral's window): head_dim, KV heads, rotary dims
   and MLP width per layer, the window, which RoPE table, and whose KV cache it reads. */
typedef struct llm_layer_hp {
  uint32_t head_dim, n_head_kv, rot_dim, n_ff;
  uint32_t window;    /* sliding window of its attention, 0: full */
  uint32_t kv_source; /* the layer whose cache it reads: itself, or an earlier one (KV sharing, Gemma 4) */
  uint8_t rope_local; /* RoPE from the local table (inv_freq_local) */
  uint8_t v_is_k;     /* no V projection: V is the K projection's output (attention_k_eq_v) */
  uint8_t moe;        /* the FFN is the mixture of experts (hp->n_expert ...), not the dense MLP of width n_ff */
} llm_layer_hp;

/* Per-layer facts, as functions of the layer: the forward pass, the loader and the session ask these, never the
   scalars above, so a family whose layers differ changes the answers here and not the callers. */
static inline uint32_t llm_layer_head_dim(const llm_hparams *hp, uint32_t l) {
  return hp->lay ? hp->lay[l].head_dim : hp->head_dim;
}
static inline uint32_t llm_layer_n_head_kv(const llm_hparams *hp, uint32_t l) {
  return hp->lay ? hp->lay[l].n_head_kv : hp->n_head_kv;
}
static inline uint32_t llm_layer_rot_dim(const llm_hparams *hp, uint32_t l) {
  return hp->lay ? hp->lay[l].rot_dim : hp->rot_dim;
}
static inline uint32_t llm_layer_n_ff(const llm_hparams *hp, uint32_t l) {
  return hp->lay ? hp->lay[l].n_ff : hp->n_ff;
}
/* the sliding window of layer l's attention, 0 for full attention */
static inline uint32_t llm_layer_window(const llm_hparams *hp, uint32_t l) { return hp->lay ? hp->lay[l].window : 0; }
static inline int llm_layer_is_local(const llm_hparams *hp, uint32_t l) { return llm_layer_window(hp, l) > 0; }
static inline int llm_layer_rope_local(const llm_hparams *hp, uint32_t l) { return hp->lay && hp->lay[l].rope_local; }
/* the layer whose KV cache layer l reads (and writes when it is l itself) */
static inline uint32_t llm_layer_kv_source(const llm_hparams *hp, uint32_t l) {
  return hp->lay ? hp->lay[l].kv_source : l;
}
static inline int llm_layer_owns_kv(const llm_hparams *hp, uint32_t l) { return llm_layer_kv_source(hp, l) == l; }
static inline int llm_layer_v_is_k(const llm_hparams *hp, uint32_t l) { return hp->lay && hp->lay[l].v_is_k; }
/* layer l's FFN is the mixture of experts */
static inline int llm_layer_is_moe(const llm_hparams *hp, uint32_t l) { return hp->lay && hp->lay[l].moe; }
/* widths of a layer's q, k (= v) and fused q|k|v rows */
static inline uint32_t llm_layer_q_width(const llm_hparams *hp, uint32_t l) {
  return hp->n_head * llm_layer_head_dim(hp, l);
}
static inline uint32_t llm_layer_kv_width(const llm_hparams *hp, uint32_t l) {
  return llm_layer_n_head_kv(hp, l) * llm_layer_head_dim(hp, l);
}
/* rows of a layer's fused projection: q, then k and v where it computes them (v not when it is k) */
static inline uint32_t llm_layer_qkv_rows(const llm_hparams *hp, uint32_t l) {
  if (!llm_layer_owns_kv(hp, l)) return llm_layer_q_width(hp, l);
  return llm_layer_q_width(hp, l) + (llm_layer_v_is_k(hp, l) ? 1u : 2u) * llm_layer_kv_width(hp, l);
}
/* The largest of a per-layer width over the layers (scratch sizing). */
uint32_t llm_max_head_dim(const llm_hparams *hp);
uint32_t llm_max_qkv_rows(const llm_hparams *hp);
uint32_t llm_max_n_ff(const llm_hparams *hp);
int llm_has_moe(const llm_hparams *hp); /* some layer is sparse */
/* Parameters of the decoder's weights (embedding, every layer, LM head when untied): all of them, and those one token
   computes with (the sparse layers' chosen experts only; the router counted) (wgllm info). */
void llm_param_counts(const llm_hparams *hp, uint64_t *total, uint64_t *active);
/* Fills hp->lay from the scalars (every layer alike, its own cache, no window): families then change rows. */
wgllm_status llm_hparams_layers_init(llm_hparams *hp, llm_err *err);

/* How to store linear weights on the GPU. */
typedef struct llm_weight_policy {
  int q4;         /* quantize f32/f16/bf16 linear weights to q4gsw on load */
  uint32_t group; /* q4gsw group: 32, 64 or 128 */
} llm_weight_policy;

typedef struct llm_layer {
  gpu_view attn_norm, ffn_norm;           /* [n_embd] f32 */
  gpu_view post_attn_norm, post_ffn_norm; /* [n_embd] f32, Gemma's sandwich norms */
  gpu_view q_norm, k_norm;                /* [head_dim] f32, Qwen3 and Gemma */
  op_weight wqkv;                         /* [llm_layer_qkv_rows][n_embd]: Q, K, V rows concatenated at load */
  gpu_view bqkv;                          /* [llm_layer_qkv_rows] Qwen2 biases, concatenated likewise */
  op_weight wo;                           /* [n_embd][n_head*hd] */
  op_weight w_gate_up;                    /* [2*n_ff][n_embd]: gate rows, then up rows */
  op_weight w_down;                       /* [n_embd][n_ff] */
  /* Gemma 4 */
  op_weight ple_gate; /* [ple_dim][n_embd] per_layer_input_gate */
  op_weight ple_proj; /* [n_embd][ple_dim] per_layer_projection */
  gpu_view ple_norm;  /* [n_embd] post_per_layer_input_norm */
  gpu_view scalar;    /* [1] layer_scalar */
  /* mixture of experts (the sparse layers; w_gate_up and w_down then unused) */
  op_weight router;      /* [n_expert][n_embd] mlp.gate, in the file's storage (routing is not quantized) */
  op_weight exp_gate_up; /* [n_expert][2 * n_ff_exp][n_embd]: per expert its gate rows, then its up rows; where the
                            file stores gate and up in different types, the gate rows alone [n_expert][n_ff_exp]
                            [n_embd] and the up rows in exp_up */
  op_weight exp_up;      /* [n_expert][n_ff_exp][n_embd] the up rows kept apart (no data: one fused weight) */
  op_weight exp_down;    /* [n_expert][n_embd][n_ff_exp] */
  /* Gemma 4's MoE block beside the dense MLP (ffn_norm, w_gate_up, w_down, post_ffn_norm stay the dense MLP's) */
  gpu_view router_norm;     /* [n_embd] router.scale * n_embd^-1/2: the router's RMSNorm weight */
  gpu_view exp_scale;       /* [n_expert] router.per_expert_scale: each chosen expert's weight times it */
  gpu_view exp_norm;        /* [n_embd] pre_feedforward_layernorm_2: the experts' input norm */
  gpu_view post_dense_norm; /* [n_embd] post_feedforward_layernorm_1: the dense MLP's output norm */
  gpu_view post_exp_norm;   /* [n_embd] post_feedforward_layernorm_2: the experts' output norm */
  /* gpt-oss */
  gpu_view bo;               /* [n_embd] the output projection's bias */
  gpu_view sinks;            /* [n_head] attention sinks */
  gpu_view router_bias;      /* [n_expert] */
  gpu_view exp_gate_up_bias; /* [n_expert][2 * n_ff_exp]: per expert its gate biases, then its up biases */
  gpu_view exp_down_bias;    /* [n_expert][n_embd] */
} llm_layer;

typedef struct llm_model {
  gpu_context *gpu;
  llm_hparams hp;
  op_weight tok_embd; /* [n_vocab][n_embd] */
  op_weight output;   /* [n_vocab][n_embd]; the embedding table when tied */
  gpu_view output_norm;
  /* Gemma 4's per-layer inputs */
  op_weight ple_embd;       /* [ple_vocab][n_layer*ple_dim] embed_tokens_per_layer */
  op_weight ple_model_proj; /* [n_layer*ple_dim][n_embd] per_layer_model_projection */
  gpu_view ple_proj_norm;   /* [ple_dim] per_layer_projection_norm */
  gpu_view ones;            /* [max head_dim] of 1.0: the weight of weightless norms (Gemma 4's v norm) */
  llm_layer *layers;        /* [n_layer] */
  gpu_buffer **owned;       /* every buffer the model created */
  size_t n_owned, cap_owned;
  uint64_t weight_bytes;
  uint64_t max_binding;   /* the storage binding limit its weights were split for; its sessions' KV caches too */
  char weights_desc[128]; /* "native", "q4gsw g32", ... */
  char source[512];       /* path */
} llm_model;

/* The tensor roles of a decoder (src/model/model_roles.c), one row each: the name in each format, the shape
   in (per-layer) hyperparameters, when the tensor is present, and where the loader puts it. The shape check and
   the loader walk the same table. */
typedef enum llm_role_dim {
  LLM_DIM_NONE,
  LLM_DIM_ONE,
  LLM_DIM_EMBD,
  LLM_DIM_VOCAB,
  LLM_DIM_Q,
  LLM_DIM_KV,
  LLM_DIM_FF,
  LLM_DIM_HEAD,
  LLM_DIM_PLE,       /* ple_dim */
  LLM_DIM_PLE_ALL,   /* n_layer * ple_dim */
  LLM_DIM_PLE_VOCAB, /* ple_vocab */
  LLM_DIM_EXPERTS,   /* n_expert */
  LLM_DIM_EXP_FF,    /* n_ff_exp */
  LLM_DIM_EXP_FF2,   /* 2 * n_ff_exp (gate and up of one expert) */
  LLM_DIM_QKV,       /* q, k and v rows of one fused projection (Phi-3's qkv_proj) */
  LLM_DIM_FF2,       /* 2 * the layer's n_ff (Phi-3's gate_up_proj) */
  LLM_DIM_HEADS,     /* n_head (gpt-oss's sinks) */
} llm_role_dim;
/* what a role needs to be present (all bits must hold) */
enum {
  LLM_NEED_UNTIED = 1 << 0,      /* a separate LM head */
  LLM_NEED_PLAIN_NORMS = 1 << 1, /* one norm before the MLP (not Gemma's sandwich) */
  LLM_NEED_SANDWICH = 1 << 2,
  LLM_NEED_QKV_BIAS = 1 << 3,
  LLM_NEED_QK_NORM = 1 << 4,
  LLM_NEED_OWN_KV = 1 << 5,   /* the layer computes its own K/V (not a KV-shared layer) */
  LLM_NEED_OWN_V = 1 << 6,    /* ... and its own V projection (not attention_k_eq_v) */
  LLM_NEED_PLE = 1 << 7,      /* per-layer inputs */
  LLM_NEED_SCALAR = 1 << 8,   /* layer_scalar */
  LLM_NEED_DENSE = 1 << 9,    /* the layer's FFN is the dense MLP */
  LLM_NEED_MOE = 1 << 10,     /* the layer's FFN is the mixture of experts */
  LLM_NEED_EXP_ONE = 1 << 11, /* ... with a tensor an expert (HF) or stacked per projection (GGUF) */
  LLM_NEED_EXP_3D = 1 << 12,  /* ... with transformers 5's fused 3-D experts (HF; Gemma 4's in GGUF too) */
  LLM_NEED_MOE_DENSE = 1 << 13, /* ... beside the dense MLP (Gemma 4's MoE block: its router scales and norms) */
  LLM_NEED_SPLIT = 1 << 14,     /* Q, K, V (gate, up) each a tensor of its own */
  LLM_NEED_FUSED = 1 << 15,     /* ... all in one tensor (hp->fused_proj: Phi-3) */
  LLM_NEED_EXP_OAI = 1 << 16,   /* gpt-oss's experts in a Hugging Face directory, in either form */
  LLM_NEED_EXP_T = 1 << 17,     /* ... transposed 3-D (LLM_MOE_HF_OAI) */
  LLM_NEED_EXP_MXFP4 = 1 << 18, /* ... MXFP4 blocks and scales (LLM_MOE_HF_OAI_MXFP4) */
  LLM_NEED_MOE_BIAS = 1 << 19,  /* the router's and experts' biases (hp->moe_bias) */
  LLM_NEED_OUT_BIAS = 1 << 20,  /* the output projection's bias (hp->out_bias) */
  LLM_NEED_SINKS = 1 << 21,     /* attention sinks (hp->sinks) */
};
typedef enum llm_role_kind {
  LLM_ROLE_VEC,    /* any float dtype, to f32 (norms, biases, scalars) */
  LLM_ROLE_VEC_RSQRT_D, /* the same times n_embd^-1/2 (Gemma 4's router scale with its hidden_size^-0.5) */
  LLM_ROLE_TABLE,  /* an embedding table: kept in its file storage (a gather reads a row a token) */
  LLM_ROLE_LINEAR, /* a projection: stored as the weight policy says */
  LLM_ROLE_NATIVE, /* a projection kept in the file's storage (the router: its top-k is not to move with q4) */
} llm_role_kind;
/* Projections the decoder runs as one: their parts are concatenated by rows into one slot. */
typedef enum llm_role_group {
  LLM_GROUP_NONE,
  LLM_GROUP_QKV,
  LLM_GROUP_BQKV,
  LLM_GROUP_GATE_UP,
  LLM_GROUP_EXP_GATE_UP, /* experts' gate and up: interleaved per expert into one [E][2I][H] weight */
  LLM_GROUP_EXP_BIAS     /* experts' gate and up biases [E][I] each: into one [E][2I] (per expert gate, then up) */
} llm_role_group;
/* How a role's tensor holds experts: none; one [d0][d1] tensor an expert in a Hugging Face directory (its name's "*"
   the expert) and one [E][d0][d1] in GGUF (stacked); or [E][d0][d1] in every format. */
typedef enum llm_role_experts { LLM_EXP_NONE, LLM_EXP_EACH, LLM_EXP_STACKED } llm_role_experts;
/* How the file lays a role's tensor out against the [d0][d1] the loader makes of it (per expert where it holds
   experts): as it is; transposed ([d1][d0]); transposed with its d0 rows in gate/up pairs (row 2i gate i, 2i + 1 up
   i: made gate rows, then up rows); d1 in gate/up pairs (a bias vector [E][2I]); MXFP4 blocks [d0][d1/32][16] (OCP
   nibble order: element 2j low, 2j + 1 high) with a sibling "_scales" [d0][d1/32] of e8m0 bytes ("_blocks" in the
   name replaced), made ggml's MXFP4 blocks; the same with d0 rows in gate/up pairs (gpt-oss's checkpoints). */
typedef enum llm_role_layout {
  LLM_LAYOUT_PLAIN,
  LLM_LAYOUT_T,
  LLM_LAYOUT_T_PAIRS,
  LLM_LAYOUT_PAIRS,
  LLM_LAYOUT_MX,
  LLM_LAYOUT_MX_PAIRS
} llm_role_layout;
typedef struct llm_role {
  const char *role, *hf, *gguf; /* per-layer names get the layer prefix; gguf NULL: not read from GGUF */
  int per_layer;
  llm_role_dim d0, d1; /* d1 LLM_DIM_NONE: a vector */
  unsigned need;
  llm_role_kind kind;
  size_t slot; /* offsetof into llm_layer (per layer) or llm_model: an op_weight, or a gpu_view for VEC */
  llm_role_group group;
  llm_role_experts experts;
  llm_role_layout layout;
} llm_role;
const llm_role *llm_roles(size_t *n);
int llm_role_present(const llm_hparams *hp, const llm_role *r, uint32_t layer);
int64_t llm_role_size(const llm_hparams *hp, llm_role_dim d, uint32_t layer);
/* The file's name of a role for a layer (-1: a file-level role) in the store's naming, into buf. */
const char *llm_role_name(const llm_hparams *hp, int gguf, const llm_role *r, int layer, char *buf, size_t len);
/* The same for a role of one tensor an expert (LLM_EXP_EACH in a Hugging Face directory): expert e's name. */
const char *llm_role_name_e(const llm_hparams *hp, int gguf, const llm_role *r, int layer, uint32_t e, char *buf,
                            size_t len);
/* The name of the scales beside an MXFP4 role's blocks (LLM_LAYOUT_MX*): "_blocks" becomes "_scales". */
const char *llm_role_scales_name(const char *blocks_name, char *buf, size_t len);
/* How many tensors hold a role in this format (n_expert for LLM_EXP_EACH in a Hugging Face directory, else 1). */
uint32_t llm_role_tensors(const llm_hparams *hp, int gguf, const llm_role *r);
/* Checks every present role's tensor exists with its shape. */
wgllm_status llm_check_shapes(const wt_store *st, const llm_hparams *hp, llm_err *err);

typedef struct llm_load_options {
  llm_weight_policy weights;
  /* called after each layer's weights are uploaded, with the fraction done; non-zero cancels the load */
  int (*progress)(float fraction, void *user);
  void *progress_user;
  /* the largest storage binding a weight may take (0: the device's maxStorageBufferBindingSize); larger weights
     are split by rows into parts (tests set it small to exercise the split path) */
  uint64_t max_binding;
} llm_load_options;

/* Opens a Hugging Face directory or a .gguf file. PATH errors name the file, tensor and byte offset. */
wgllm_status llm_open_store(const char *path, wt_store **out, llm_err *err);
/* Reads hyperparameters (from config.json or GGUF metadata) and checks tensor shapes against them. */
wgllm_status llm_read_hparams(const wt_store *st, llm_hparams *hp, llm_err *err);
/* An embedding model's pooling into hp (pooling, pooling_normalize): GGUF {arch}.pooling_type, or in a Hugging Face
   directory PATH sentence-transformers' modules.json with its Pooling module's config.json (pooling_mode_lasttoken,
   _mean_tokens, _cls_token) and a Normalize module. Nothing said leaves LLM_POOLING_UNSPECIFIED; a malformed file or
   a pooling wgllm does not compute (max, weighted mean) is an error naming it. */
wgllm_status llm_read_pooling(const char *path, const wt_store *st, llm_hparams *hp, llm_err *err);
const char *llm_pooling_name(llm_pooling p); /* "mean", "cls", "last", "none", "rank", "unspecified" */
void llm_hparams_free(llm_hparams *hp);
/* Loads weights to the GPU. On failure nothing stays allocated. */
wgllm_status llm_model_load(gpu_context *gpu, const char *path, const llm_load_options *opt, llm_model **out,
                            llm_err *err);
/* The same from a model file already opened (st, borrowed; path only names it in messages). */
wgllm_status llm_model_load_store(gpu_context *gpu, const char *path, const wt_store *st, const llm_load_options *opt,
                                  llm_model **out, llm_err *err);
void llm_model_free(llm_model *m);
/* Creates a device buffer the model owns (freed with it) and counts it in weight_bytes. */
wgllm_status llm_model_own_buffer(llm_model *m, uint64_t bytes, const char *label, gpu_buffer **b, llm_err *err);
/* Concatenates weights of the same storage along rows (N) into one new buffer pair (GPU copies), releasing
   the parts. Used to fuse Q/K/V and gate/up into single projections. */
wgllm_status llm_concat_rows(llm_model *m, op_weight *parts, const uint32_t *rows, int n, uint32_t K, op_weight *out,
                             llm_err *err);
wgllm_status llm_concat_vecs(llm_model *m, gpu_view *parts, const uint32_t *lens, int n, gpu_view *out, llm_err *err);
/* Splits a [N][K] weight whose data or scales exceed max_binding bytes into row parts of their own buffers
   (GPU copies; the whole is released); a weight that fits is left as it is. name: for the error. */
wgllm_status llm_split_weight(llm_model *m, op_weight *w, uint32_t N, uint32_t K, uint64_t max_binding,
                              const char *name, llm_err *err);
/* Parses "native", "q4", "q4:64" into a policy. */
wgllm_status llm_parse_weight_policy(const char *s, llm_weight_policy *p, llm_err *err);
#endif
