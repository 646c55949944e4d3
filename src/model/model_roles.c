/* The tensor roles of the decoders wgllm runs (Llama family, Qwen2/3, Gemma 3/4, Qwen3-MoE), one row each: the name in
   each format, the shape in per-layer hyperparameters, when the tensor is present and where the loader puts
   it. The shape check below and the loader (model_load.c) walk this table; a new tensor is one row here. */
#include "model.h"
#include <stddef.h>
#include <stdio.h>
#include <string.h>

#define LY(f) offsetof(llm_layer, f)
#define MD(f) offsetof(llm_model, f)
static const llm_role ROLES[] = {
    /* role, Hugging Face name, GGUF name, per layer, shape, needs, kind, slot, group */
    {"embed", "model.embed_tokens.weight", "token_embd.weight", 0, LLM_DIM_VOCAB, LLM_DIM_EMBD, 0, LLM_ROLE_TABLE,
     MD(tok_embd), LLM_GROUP_NONE},
    {"norm", "model.norm.weight", "output_norm.weight", 0, LLM_DIM_EMBD, LLM_DIM_NONE, 0, LLM_ROLE_VEC, MD(output_norm),
     LLM_GROUP_NONE},
    {"output", "lm_head.weight", "output.weight", 0, LLM_DIM_VOCAB, LLM_DIM_EMBD, LLM_NEED_UNTIED, LLM_ROLE_LINEAR,
     MD(output), LLM_GROUP_NONE},
    {"ple_embed", "model.embed_tokens_per_layer.weight", "per_layer_token_embd.weight", 0, LLM_DIM_PLE_VOCAB,
     LLM_DIM_PLE_ALL, LLM_NEED_PLE, LLM_ROLE_TABLE, MD(ple_embd), LLM_GROUP_NONE},
    {"ple_model_proj", "model.per_layer_model_projection.weight", "per_layer_model_proj.weight", 0, LLM_DIM_PLE_ALL,
     LLM_DIM_EMBD, LLM_NEED_PLE, LLM_ROLE_LINEAR, MD(ple_model_proj), LLM_GROUP_NONE},
    {"ple_proj_norm", "model.per_layer_projection_norm.weight", "per_layer_proj_norm.weight", 0, LLM_DIM_PLE,
     LLM_DIM_NONE, LLM_NEED_PLE, LLM_ROLE_VEC, MD(ple_proj_norm), LLM_GROUP_NONE},
    {"attn_norm", "input_layernorm.weight", "attn_norm.weight", 1, LLM_DIM_EMBD, LLM_DIM_NONE, 0, LLM_ROLE_VEC,
     LY(attn_norm), LLM_GROUP_NONE},
    {"ffn_norm", "post_attention_layernorm.weight", "ffn_norm.weight", 1, LLM_DIM_EMBD, LLM_DIM_NONE,
     LLM_NEED_PLAIN_NORMS, LLM_ROLE_VEC, LY(ffn_norm), LLM_GROUP_NONE},
    /* Gemma's sandwich norms: its post_attention_layernorm follows attention, pre_feedforward precedes the MLP */
    {"pre_ffn_norm", "pre_feedforward_layernorm.weight", "ffn_norm.weight", 1, LLM_DIM_EMBD, LLM_DIM_NONE,
     LLM_NEED_SANDWICH, LLM_ROLE_VEC, LY(ffn_norm), LLM_GROUP_NONE},
    {"wq", "self_attn.q_proj.weight", "attn_q.weight", 1, LLM_DIM_Q, LLM_DIM_EMBD, LLM_NEED_SPLIT, LLM_ROLE_LINEAR,
     LY(wqkv), LLM_GROUP_QKV},
    {"wk", "self_attn.k_proj.weight", "attn_k.weight", 1, LLM_DIM_KV, LLM_DIM_EMBD, LLM_NEED_OWN_KV | LLM_NEED_SPLIT,
     LLM_ROLE_LINEAR, LY(wqkv), LLM_GROUP_QKV},
    {"wv", "self_attn.v_proj.weight", "attn_v.weight", 1, LLM_DIM_KV, LLM_DIM_EMBD, LLM_NEED_OWN_V | LLM_NEED_SPLIT,
     LLM_ROLE_LINEAR, LY(wqkv), LLM_GROUP_QKV},
    /* Phi-3: Q/K/V as one tensor, gate and up as one (the rows in the order the split ones concatenate to) */
    {"wqkv", "self_attn.qkv_proj.weight", "attn_qkv.weight", 1, LLM_DIM_QKV, LLM_DIM_EMBD, LLM_NEED_FUSED,
     LLM_ROLE_LINEAR, LY(wqkv), LLM_GROUP_NONE},
    {"gate_up", "mlp.gate_up_proj.weight", "ffn_up.weight", 1, LLM_DIM_FF2, LLM_DIM_EMBD,
     LLM_NEED_FUSED | LLM_NEED_DENSE, LLM_ROLE_LINEAR, LY(w_gate_up), LLM_GROUP_NONE},
    {"post_attn_norm", "post_attention_layernorm.weight", "post_attention_norm.weight", 1, LLM_DIM_EMBD, LLM_DIM_NONE,
     LLM_NEED_SANDWICH, LLM_ROLE_VEC, LY(post_attn_norm), LLM_GROUP_NONE},
    {"post_ffn_norm", "post_feedforward_layernorm.weight", "post_ffw_norm.weight", 1, LLM_DIM_EMBD, LLM_DIM_NONE,
     LLM_NEED_SANDWICH, LLM_ROLE_VEC, LY(post_ffn_norm), LLM_GROUP_NONE},
    {"wo", "self_attn.o_proj.weight", "attn_output.weight", 1, LLM_DIM_EMBD, LLM_DIM_Q, 0, LLM_ROLE_LINEAR, LY(wo),
     LLM_GROUP_NONE},
    {"gate", "mlp.gate_proj.weight", "ffn_gate.weight", 1, LLM_DIM_FF, LLM_DIM_EMBD, LLM_NEED_DENSE | LLM_NEED_SPLIT,
     LLM_ROLE_LINEAR, LY(w_gate_up), LLM_GROUP_GATE_UP},
    {"up", "mlp.up_proj.weight", "ffn_up.weight", 1, LLM_DIM_FF, LLM_DIM_EMBD, LLM_NEED_DENSE | LLM_NEED_SPLIT,
     LLM_ROLE_LINEAR, LY(w_gate_up), LLM_GROUP_GATE_UP},
    {"down", "mlp.down_proj.weight", "ffn_down.weight", 1, LLM_DIM_EMBD, LLM_DIM_FF, LLM_NEED_DENSE, LLM_ROLE_LINEAR,
     LY(w_down), LLM_GROUP_NONE},
    {"bq", "self_attn.q_proj.bias", "attn_q.bias", 1, LLM_DIM_Q, LLM_DIM_NONE, LLM_NEED_QKV_BIAS, LLM_ROLE_VEC,
     LY(bqkv), LLM_GROUP_BQKV},
    {"bk", "self_attn.k_proj.bias", "attn_k.bias", 1, LLM_DIM_KV, LLM_DIM_NONE, LLM_NEED_QKV_BIAS | LLM_NEED_OWN_KV,
     LLM_ROLE_VEC, LY(bqkv), LLM_GROUP_BQKV},
    {"bv", "self_attn.v_proj.bias", "attn_v.bias", 1, LLM_DIM_KV, LLM_DIM_NONE, LLM_NEED_QKV_BIAS | LLM_NEED_OWN_V,
     LLM_ROLE_VEC, LY(bqkv), LLM_GROUP_BQKV},
    {"q_norm", "self_attn.q_norm.weight", "attn_q_norm.weight", 1, LLM_DIM_HEAD, LLM_DIM_NONE, LLM_NEED_QK_NORM,
     LLM_ROLE_VEC, LY(q_norm), LLM_GROUP_NONE},
    {"k_norm", "self_attn.k_norm.weight", "attn_k_norm.weight", 1, LLM_DIM_HEAD, LLM_DIM_NONE,
     LLM_NEED_QK_NORM | LLM_NEED_OWN_KV, LLM_ROLE_VEC, LY(k_norm), LLM_GROUP_NONE},
    /* Gemma 4: the per-layer input's gate, projection and norm, and the layer's output scale */
    {"ple_gate", "per_layer_input_gate.weight", "inp_gate.weight", 1, LLM_DIM_PLE, LLM_DIM_EMBD, LLM_NEED_PLE,
     LLM_ROLE_LINEAR, LY(ple_gate), LLM_GROUP_NONE},
    {"ple_proj", "per_layer_projection.weight", "proj.weight", 1, LLM_DIM_EMBD, LLM_DIM_PLE, LLM_NEED_PLE,
     LLM_ROLE_LINEAR, LY(ple_proj), LLM_GROUP_NONE},
    {"ple_norm", "post_per_layer_input_norm.weight", "post_norm.weight", 1, LLM_DIM_EMBD, LLM_DIM_NONE, LLM_NEED_PLE,
     LLM_ROLE_VEC, LY(ple_norm), LLM_GROUP_NONE},
    {"layer_scalar", "layer_scalar", "layer_output_scale.weight", 1, LLM_DIM_ONE, LLM_DIM_NONE, LLM_NEED_SCALAR,
     LLM_ROLE_VEC, LY(scalar), LLM_GROUP_NONE},
    /* mixture of experts (Qwen3-MoE's sparse layers): the router, and the experts as the hub's checkpoints keep them
       (a tensor an expert, "*" its index; GGUF: stacked [E][..] per projection) or as transformers 5 saves them
       (3-D, gate and up fused); loaded into op_moe_linear's layout, one weight a projection a layer */
    {"router", "mlp.gate.weight", "ffn_gate_inp.weight", 1, LLM_DIM_EXPERTS, LLM_DIM_EMBD, LLM_NEED_MOE,
     LLM_ROLE_NATIVE, LY(router), LLM_GROUP_NONE},
    {"exp_gate", "mlp.experts.*.gate_proj.weight", "ffn_gate_exps.weight", 1, LLM_DIM_EXP_FF, LLM_DIM_EMBD,
     LLM_NEED_MOE | LLM_NEED_EXP_ONE, LLM_ROLE_LINEAR, LY(exp_gate_up), LLM_GROUP_EXP_GATE_UP, LLM_EXP_EACH},
    {"exp_up", "mlp.experts.*.up_proj.weight", "ffn_up_exps.weight", 1, LLM_DIM_EXP_FF, LLM_DIM_EMBD,
     LLM_NEED_MOE | LLM_NEED_EXP_ONE, LLM_ROLE_LINEAR, LY(exp_gate_up), LLM_GROUP_EXP_GATE_UP, LLM_EXP_EACH},
    {"exp_down", "mlp.experts.*.down_proj.weight", "ffn_down_exps.weight", 1, LLM_DIM_EMBD, LLM_DIM_EXP_FF,
     LLM_NEED_MOE | LLM_NEED_EXP_ONE, LLM_ROLE_LINEAR, LY(exp_down), LLM_GROUP_NONE, LLM_EXP_EACH},
    {"exp_gate_up", "mlp.experts.gate_up_proj", "ffn_gate_up_exps.weight", 1, LLM_DIM_EXP_FF2, LLM_DIM_EMBD,
     LLM_NEED_MOE | LLM_NEED_EXP_3D, LLM_ROLE_LINEAR, LY(exp_gate_up), LLM_GROUP_NONE, LLM_EXP_STACKED},
    {"exp_down_3d", "mlp.experts.down_proj", "ffn_down_exps.weight", 1, LLM_DIM_EMBD, LLM_DIM_EXP_FF,
     LLM_NEED_MOE | LLM_NEED_EXP_3D, LLM_ROLE_LINEAR, LY(exp_down), LLM_GROUP_NONE, LLM_EXP_STACKED},
    /* Gemma 4's MoE block beside the dense MLP: the router's input scale and per-expert scale, the experts' input
       norm and the two branches' output norms (its router and experts are the rows above, renamed: gemma4_name) */
    {"router_norm", "router.scale", "ffn_gate_inp.scale", 1, LLM_DIM_EMBD, LLM_DIM_NONE,
     LLM_NEED_MOE | LLM_NEED_MOE_DENSE, LLM_ROLE_VEC_RSQRT_D, LY(router_norm), LLM_GROUP_NONE},
    {"exp_scale", "router.per_expert_scale", "ffn_down_exps.scale", 1, LLM_DIM_EXPERTS, LLM_DIM_NONE,
     LLM_NEED_MOE | LLM_NEED_MOE_DENSE, LLM_ROLE_VEC, LY(exp_scale), LLM_GROUP_NONE},
    {"exp_norm", "pre_feedforward_layernorm_2.weight", "pre_ffw_norm_2.weight", 1, LLM_DIM_EMBD, LLM_DIM_NONE,
     LLM_NEED_MOE | LLM_NEED_MOE_DENSE, LLM_ROLE_VEC, LY(exp_norm), LLM_GROUP_NONE},
    {"post_dense_norm", "post_feedforward_layernorm_1.weight", "post_ffw_norm_1.weight", 1, LLM_DIM_EMBD, LLM_DIM_NONE,
     LLM_NEED_MOE | LLM_NEED_MOE_DENSE, LLM_ROLE_VEC, LY(post_dense_norm), LLM_GROUP_NONE},
    {"post_exp_norm", "post_feedforward_layernorm_2.weight", "post_ffw_norm_2.weight", 1, LLM_DIM_EMBD, LLM_DIM_NONE,
     LLM_NEED_MOE | LLM_NEED_MOE_DENSE, LLM_ROLE_VEC, LY(post_exp_norm), LLM_GROUP_NONE},
    /* gpt-oss: the output projection's bias, the sinks, the router's bias; its experts' biases (Hugging Face: gate and
       up in one tensor, interleaved; GGUF: apart) and its experts in a Hugging Face directory, transposed 3-D or
       MXFP4 blocks and scales (its GGUF experts are the stacked rows above, MXFP4 as a weight type) */
    {"bo", "self_attn.o_proj.bias", "attn_output.bias", 1, LLM_DIM_EMBD, LLM_DIM_NONE, LLM_NEED_OUT_BIAS, LLM_ROLE_VEC,
     LY(bo), LLM_GROUP_NONE},
    {"sinks", "self_attn.sinks", "attn_sinks.weight", 1, LLM_DIM_HEADS, LLM_DIM_NONE, LLM_NEED_SINKS, LLM_ROLE_VEC,
     LY(sinks), LLM_GROUP_NONE},
    {"router_bias", "mlp.gate.bias", "ffn_gate_inp.bias", 1, LLM_DIM_EXPERTS, LLM_DIM_NONE,
     LLM_NEED_MOE | LLM_NEED_MOE_BIAS, LLM_ROLE_VEC, LY(router_bias), LLM_GROUP_NONE},
    {"exp_gate_up_bias", "mlp.experts.gate_up_proj_bias", NULL, 1, LLM_DIM_EXPERTS, LLM_DIM_EXP_FF2,
     LLM_NEED_MOE | LLM_NEED_MOE_BIAS | LLM_NEED_EXP_OAI, LLM_ROLE_VEC, LY(exp_gate_up_bias), LLM_GROUP_NONE,
     LLM_EXP_NONE, LLM_LAYOUT_PAIRS},
    {"exp_gate_bias", NULL, "ffn_gate_exps.bias", 1, LLM_DIM_EXPERTS, LLM_DIM_EXP_FF,
     LLM_NEED_MOE | LLM_NEED_MOE_BIAS | LLM_NEED_EXP_ONE, LLM_ROLE_VEC, LY(exp_gate_up_bias), LLM_GROUP_EXP_BIAS},
    {"exp_up_bias", NULL, "ffn_up_exps.bias", 1, LLM_DIM_EXPERTS, LLM_DIM_EXP_FF,
     LLM_NEED_MOE | LLM_NEED_MOE_BIAS | LLM_NEED_EXP_ONE, LLM_ROLE_VEC, LY(exp_gate_up_bias), LLM_GROUP_EXP_BIAS},
    {"exp_down_bias", "mlp.experts.down_proj_bias", "ffn_down_exps.bias", 1, LLM_DIM_EXPERTS, LLM_DIM_EMBD,
     LLM_NEED_MOE | LLM_NEED_MOE_BIAS, LLM_ROLE_VEC, LY(exp_down_bias), LLM_GROUP_NONE},
    {"exp_gate_up_t", "mlp.experts.gate_up_proj", NULL, 1, LLM_DIM_EXP_FF2, LLM_DIM_EMBD, LLM_NEED_MOE | LLM_NEED_EXP_T,
     LLM_ROLE_LINEAR, LY(exp_gate_up), LLM_GROUP_NONE, LLM_EXP_STACKED, LLM_LAYOUT_T_PAIRS},
    {"exp_down_t", "mlp.experts.down_proj", NULL, 1, LLM_DIM_EMBD, LLM_DIM_EXP_FF, LLM_NEED_MOE | LLM_NEED_EXP_T,
     LLM_ROLE_LINEAR, LY(exp_down), LLM_GROUP_NONE, LLM_EXP_STACKED, LLM_LAYOUT_T},
    {"exp_gate_up_mx", "mlp.experts.gate_up_proj_blocks", NULL, 1, LLM_DIM_EXP_FF2, LLM_DIM_EMBD,
     LLM_NEED_MOE | LLM_NEED_EXP_MXFP4, LLM_ROLE_LINEAR, LY(exp_gate_up), LLM_GROUP_NONE, LLM_EXP_STACKED,
     LLM_LAYOUT_MX_PAIRS},
    {"exp_down_mx", "mlp.experts.down_proj_blocks", NULL, 1, LLM_DIM_EMBD, LLM_DIM_EXP_FF,
     LLM_NEED_MOE | LLM_NEED_EXP_MXFP4, LLM_ROLE_LINEAR, LY(exp_down), LLM_GROUP_NONE, LLM_EXP_STACKED, LLM_LAYOUT_MX},
};

const llm_role *llm_roles(size_t *n) {
  *n = sizeof ROLES / sizeof ROLES[0];
  return ROLES;
}

int64_t llm_role_size(const llm_hparams *hp, llm_role_dim d, uint32_t l) {
  switch (d) {
  case LLM_DIM_ONE:
    return 1;
  case LLM_DIM_EMBD:
    return hp->n_embd;
  case LLM_DIM_VOCAB:
    return hp->n_vocab;
  case LLM_DIM_Q:
    return llm_layer_q_width(hp, l);
  case LLM_DIM_KV:
    return llm_layer_kv_width(hp, l);
  case LLM_DIM_FF:
    return llm_layer_n_ff(hp, l);
  case LLM_DIM_HEAD:
    return llm_layer_head_dim(hp, l);
  case LLM_DIM_PLE:
    return hp->ple_dim;
  case LLM_DIM_PLE_ALL:
    return (int64_t)hp->n_layer * hp->ple_dim;
  case LLM_DIM_PLE_VOCAB:
    return hp->ple_vocab;
  case LLM_DIM_EXPERTS:
    return hp->n_expert;
  case LLM_DIM_EXP_FF:
    return hp->n_ff_exp;
  case LLM_DIM_EXP_FF2:
    return 2 * (int64_t)hp->n_ff_exp;
  case LLM_DIM_QKV:
    return llm_layer_q_width(hp, l) + 2 * (int64_t)llm_layer_kv_width(hp, l);
  case LLM_DIM_FF2:
    return 2 * (int64_t)llm_layer_n_ff(hp, l);
  case LLM_DIM_HEADS:
    return hp->n_head;
  default:
    return 0;
  }
}

int llm_role_present(const llm_hparams *hp, const llm_role *r, uint32_t l) {
  unsigned n = r->need;
  int own = !r->per_layer || llm_layer_owns_kv(hp, l);
  if ((n & LLM_NEED_UNTIED) && (hp->tied_embeddings || hp->no_lm_head)) return 0;
  if ((n & LLM_NEED_PLAIN_NORMS) && hp->sandwich_norms) return 0;
  if ((n & LLM_NEED_SANDWICH) && !hp->sandwich_norms) return 0;
  if ((n & LLM_NEED_QKV_BIAS) && !hp->qkv_bias) return 0;
  if ((n & LLM_NEED_QK_NORM) && !hp->qk_norm) return 0;
  if ((n & LLM_NEED_OWN_KV) && !own) return 0;
  if ((n & LLM_NEED_OWN_V) && (!own || (r->per_layer && llm_layer_v_is_k(hp, l)))) return 0;
  if ((n & LLM_NEED_PLE) && !hp->ple_dim) return 0;
  if ((n & LLM_NEED_SCALAR) && !hp->layer_scalar) return 0;
  int moe = r->per_layer && llm_layer_is_moe(hp, l);
  if ((n & LLM_NEED_DENSE) && moe && !hp->moe_dense_too) return 0;
  if ((n & LLM_NEED_MOE_DENSE) && !hp->moe_dense_too) return 0;
  if ((n & LLM_NEED_SPLIT) && hp->fused_proj) return 0;
  if ((n & LLM_NEED_FUSED) && !hp->fused_proj) return 0;
  if ((n & LLM_NEED_MOE) && !moe) return 0;
  int form = hp->moe_hf_form;
  if ((n & LLM_NEED_EXP_ONE) && form != LLM_MOE_HF_EACH) return 0;
  if ((n & LLM_NEED_EXP_3D) && form != LLM_MOE_HF_3D) return 0;
  if ((n & LLM_NEED_EXP_OAI) && form != LLM_MOE_HF_OAI && form != LLM_MOE_HF_OAI_MXFP4) return 0;
  if ((n & LLM_NEED_EXP_T) && form != LLM_MOE_HF_OAI) return 0;
  if ((n & LLM_NEED_EXP_MXFP4) && form != LLM_MOE_HF_OAI_MXFP4) return 0;
  if ((n & LLM_NEED_MOE_BIAS) && !hp->moe_bias) return 0;
  if ((n & LLM_NEED_OUT_BIAS) && !hp->out_bias) return 0;
  if ((n & LLM_NEED_SINKS) && !hp->sinks) return 0;
  return 1;
}

/* Mixtral's Hugging Face names of the MoE roles (the rows give Qwen3-MoE's): the router and the experts a tensor each
 */
static const char *mixtral_name(const char *n) {
  static const char *const map[][2] = {{"mlp.gate.weight", "block_sparse_moe.gate.weight"},
                                       {"mlp.experts.*.gate_proj.weight", "block_sparse_moe.experts.*.w1.weight"},
                                       {"mlp.experts.*.up_proj.weight", "block_sparse_moe.experts.*.w3.weight"},
                                       {"mlp.experts.*.down_proj.weight", "block_sparse_moe.experts.*.w2.weight"}};
  for (size_t i = 0; n && i < sizeof map / sizeof map[0]; i++)
    if (!strcmp(n, map[i][0])) return map[i][1];
  return n;
}

/* Gemma 4's Hugging Face names of its router and experts (layers.N.router.proj, layers.N.experts.*) */
static const char *gemma4_name(const char *n) {
  static const char *const map[][2] = {{"mlp.gate.weight", "router.proj.weight"},
                                       {"mlp.experts.gate_up_proj", "experts.gate_up_proj"},
                                       {"mlp.experts.down_proj", "experts.down_proj"}};
  for (size_t i = 0; n && i < sizeof map / sizeof map[0]; i++)
    if (!strcmp(n, map[i][0])) return map[i][1];
  return n;
}

/* gpt-oss's names of the router (Hugging Face: mlp.router) and of the MLP's norm in llama.cpp's files
   (post_attention_norm, the name its converter gives post_attention_layernorm for this architecture) */
static const char *gpt_oss_name(const char *n, int gguf) {
  static const char *const hf[][2] = {{"mlp.gate.weight", "mlp.router.weight"}, {"mlp.gate.bias", "mlp.router.bias"}};
  if (gguf) return n && !strcmp(n, "ffn_norm.weight") ? "post_attention_norm.weight" : n;
  for (size_t i = 0; n && i < sizeof hf / sizeof hf[0]; i++)
    if (!strcmp(n, hf[i][0])) return hf[i][1];
  return n;
}

const char *llm_role_name(const llm_hparams *hp, int gguf, const llm_role *r, int layer, char *buf, size_t len) {
  const char *n = hp->arch == LLM_ARCH_GPT_OSS   ? gpt_oss_name(gguf ? r->gguf : r->hf, gguf)
                  : gguf                         ? r->gguf
                  : hp->arch == LLM_ARCH_MIXTRAL ? mixtral_name(r->hf)
                  : hp->arch == LLM_ARCH_GEMMA4  ? gemma4_name(r->hf)
                                                 : r->hf;
  const char *prefix = hp->hf_bare ? "" : hp->hf_prefix[0] ? hp->hf_prefix : "model.";
  if (!n)
    snprintf(buf, len, "(%s: no GGUF name)", r->role);
  else if (gguf && layer >= 0)
    snprintf(buf, len, "blk.%d.%s", layer, n);
  else if (gguf)
    snprintf(buf, len, "%s", n);
  else if (layer >= 0)
    snprintf(buf, len, "%slayers.%d.%s", prefix, layer, n);
  else if (!strncmp(n, "model.", 6))
    snprintf(buf, len, "%s%s", prefix, n + 6);
  else
    snprintf(buf, len, "%s", n);
  return buf;
}

const char *llm_role_name_e(const llm_hparams *hp, int gguf, const llm_role *r, int layer, uint32_t e, char *buf,
                            size_t len) {
  char tmp[128];
  llm_role_name(hp, gguf, r, layer, tmp, sizeof tmp);
  const char *star = gguf ? NULL : strchr(tmp, '*');
  if (!star)
    snprintf(buf, len, "%s", tmp);
  else
    snprintf(buf, len, "%.*s%u%s", (int)(star - tmp), tmp, e, star + 1);
  return buf;
}

uint32_t llm_role_tensors(const llm_hparams *hp, int gguf, const llm_role *r) {
  return r->experts == LLM_EXP_EACH && !gguf ? hp->n_expert : 1;
}

/* The shape a role's tensor must have: [d0][d1] (or [d0]), with the experts first where one tensor stacks them, as
   its layout stores them (transposed: [d1][d0]; MXFP4 blocks: [d0][d1 / 32][16]). */
static int role_shape(const llm_hparams *hp, int gguf, const llm_role *r, uint32_t l, int64_t shape[4]) {
  int n = 0;
  if (r->experts == LLM_EXP_STACKED || (r->experts == LLM_EXP_EACH && gguf)) shape[n++] = hp->n_expert;
  int64_t d0 = llm_role_size(hp, r->d0, l), d1 = r->d1 != LLM_DIM_NONE ? llm_role_size(hp, r->d1, l) : 0;
  int t = r->layout == LLM_LAYOUT_T || r->layout == LLM_LAYOUT_T_PAIRS;
  shape[n++] = t ? d1 : d0;
  if (r->layout == LLM_LAYOUT_MX || r->layout == LLM_LAYOUT_MX_PAIRS) {
    shape[n++] = d1 / 32;
    shape[n++] = 16;
  } else if (r->d1 != LLM_DIM_NONE)
    shape[n++] = t ? d0 : d1;
  return n;
}

/* The name of an MXFP4 role's scales: its "_blocks" as "_scales" (gpt-oss's checkpoints), into buf. */
const char *llm_role_scales_name(const char *blocks_name, char *buf, size_t len) {
  const char *b = strstr(blocks_name, "_blocks");
  if (!b)
    snprintf(buf, len, "%s_scales", blocks_name);
  else
    snprintf(buf, len, "%.*s_scales%s", (int)(b - blocks_name), blocks_name, b + 7);
  return buf;
}

wgllm_status llm_check_shapes(const wt_store *st, const llm_hparams *hp, llm_err *err) {
  int gguf = wt_store_format(st) == WT_FORMAT_GGUF;
  char name[128];
  /* the file-level tensors first, then each layer's */
  for (int pass = 0; pass < 2; pass++)
    for (uint32_t l = 0; l < (pass ? hp->n_layer : 1); l++)
      for (size_t i = 0; i < sizeof ROLES / sizeof ROLES[0]; i++) {
        const llm_role *r = &ROLES[i];
        if (r->per_layer != pass || !llm_role_present(hp, r, l)) continue;
        for (uint32_t e = 0; e < llm_role_tensors(hp, gguf, r); e++) {
          llm_role_name_e(hp, gguf, r, pass ? (int)l : -1, e, name, sizeof name);
          const wt_tensor *t = wt_find(st, name);
          if (!t) return llm_err_set(err, WGLLM_ERR_FORMAT, "missing tensor %s", name);
          int64_t want[4];
          int dims = role_shape(hp, gguf, r, l, want), ok = t->n_dims == dims;
          for (int k = 0; ok && k < dims; k++)
            ok = t->shape[k] == want[k];
          int mx = r->layout == LLM_LAYOUT_MX || r->layout == LLM_LAYOUT_MX_PAIRS;
          if ((t->dtype == WT_U8) != mx) /* raw bytes are MXFP4's blocks and scales, nothing else */
            return llm_err_set(err, WGLLM_ERR_FORMAT, "tensor %s in %s is %s, %s", name, t->file,
                               wt_dtype_name(t->dtype),
                               mx ? "not the bytes (U8) of MXFP4 blocks" : "not a number type");
          if (mx && ok) {
            /* the scales beside the blocks: [E][d0][d1 / 32] bytes, d1 whole blocks */
            char sn[128];
            const wt_tensor *ts = wt_find(st, llm_role_scales_name(name, sn, sizeof sn));
            int64_t d1 = llm_role_size(hp, r->d1, l);
            if (d1 % 32)
              return llm_err_set(err, WGLLM_ERR_FORMAT, "tensor %s: rows of %lld are no whole MXFP4 blocks of 32", name,
                                 (long long)d1);
            if (!ts) return llm_err_set(err, WGLLM_ERR_FORMAT, "missing tensor %s (the scales of %s)", sn, name);
            int sok = ts->dtype == WT_U8 && ts->n_dims == dims - 1;
            for (int k = 0; sok && k < dims - 1; k++)
              sok = ts->shape[k] == want[k];
            if (!sok)
              return llm_err_set(err, WGLLM_ERR_FORMAT,
                                 "tensor %s in %s is not the U8 [%lld, %lld, %lld] scales of %s's MXFP4 blocks", sn,
                                 ts->file, (long long)want[0], (long long)want[1], (long long)want[2], name);
          }
          /* a scalar may be stored as [1] or with no dimensions */
          if (ok || (r->d0 == LLM_DIM_ONE && t->n_dims == 0)) continue;
          char got[64] = "", exp[64] = "";
          for (int k = 0; k < t->n_dims; k++)
            snprintf(got + strlen(got), sizeof got - strlen(got), "%s%lld", k ? ", " : "", (long long)t->shape[k]);
          for (int k = 0; k < dims; k++)
            snprintf(exp + strlen(exp), sizeof exp - strlen(exp), "%s%lld", k ? ", " : "", (long long)want[k]);
          return llm_err_set(err, WGLLM_ERR_FORMAT, "tensor %s in %s has shape [%s], the config says [%s]", name,
                             t->file, got, exp);
        }
      }
  return WGLLM_OK;
}
