/* Helpers the config.json readers share (model_config.c, config_gemma4.c). */
#ifndef WGLLM_CONFIG_JSON_H
#define WGLLM_CONFIG_JSON_H
#include "llm_err.h"
#include "model.h"
#include <cjson/cJSON.h>

int json_num(const cJSON *o, const char *key, double *out);
int json_u32(const cJSON *o, const char *key, uint32_t *out); /* a non-negative integer below 2^32 */
/* a token id, the first of a list; -1 if absent, JSON_TOKEN_INVALID if not an integer in 0..2^31-1 */
int32_t json_token(const cJSON *o, const char *key);
/* Optional fields: absent or null leaves *out (the caller's default) and is WGLLM_OK; any other value must be of
   the type (an integer from 0 to 2^32-1; a finite number; true or false), else WGLLM_ERR_FORMAT with err naming
   the field and the value as the file has it. */
wgllm_status json_opt_u32(const cJSON *o, const char *key, uint32_t *out, llm_err *err);
wgllm_status json_opt_num(const cJSON *o, const char *key, double *out, llm_err *err);
wgllm_status json_opt_bool(const cJSON *o, const char *key, int *out, llm_err *err);
#define JSON_TOKEN_INVALID INT32_MIN
/* bos_token_id and eos_token_id (-1 when absent); an error naming the field when one is not a token id */
wgllm_status json_bos_eos(const cJSON *cfg, int32_t *bos, int32_t *eos, llm_err *err);
/* WGLLM_ERR_FORMAT unless inv[0..half) are finite and not negative; err starts with what ("config.json: the RoPE
   parameters") */
wgllm_status llm_rope_table_check(const float *inv, uint32_t half, const char *what, llm_err *err);
/* inv_freq[i] = theta^(-2i/dim), i < dim/2 (f32, as transformers computes it); NULL when out of memory */
float *default_inv_freq(double theta, uint32_t dim);
/* Sliding (1) or full (0) per layer, from layer_types, else sliding_window_pattern (default: pattern, the family's
   transformers default, 6 for Gemma): *local gets [n_layer] flags, freed by the caller. */
wgllm_status llm_json_layer_types(const cJSON *cfg, uint32_t n_layer, uint32_t pattern, uint8_t **local,
                                  llm_err *err);
/* YaRN's frequencies into hp->inv_freq [rot_dim/2] (each pair's between the interpolated one, divided by factor, and
   the original, by the linear ramp over the correction range of beta_fast / beta_slow turns in orig positions, its
   ends floored / ceiled when truncate) and the attention factor on cos and sin, as transformers'
   _compute_yarn_parameters; where names the source in errors. */
wgllm_status llm_yarn(llm_hparams *hp, double theta, double factor, double orig, double fast, double slow, int truncate,
                      double attn, const char *where, llm_err *err);
double llm_yarn_mscale(double scale, double mscale); /* transformers' get_mscale */
/* Hyperparameters from a config.json object alone (no tensors to check; the synthetic models use it). */
wgllm_status llm_hparams_from_json(const cJSON *cfg, llm_hparams *hp, llm_err *err);
/* Gemma 4 text (config_gemma4.c): everything after the common fields, per-layer table included. */
wgllm_status llm_gemma4_hparams(const cJSON *cfg, llm_hparams *hp, llm_err *err);
/* Gemma 4 from GGUF metadata as llama.cpp's converter writes it (arch "gemma4"), after the common fields (hidden,
   layers, heads, vocabulary, eps, context, BOS/EOS) that model_config.c has read. */
wgllm_status llm_gemma4_gguf_hparams(const wt_store *st, const char *arch, llm_hparams *hp, llm_err *err);
/* Mixture of experts (config_moe.c), after the common fields and the per-layer table: Qwen3-MoE's num_experts,
   num_experts_per_tok, moe_intermediate_size, norm_topk_prob, decoder_sparse_step and mlp_only_layers (the sparse
   layers as transformers' Qwen3MoeDecoderLayer picks them); what changes the math and is not built is refused by
   name. */
wgllm_status llm_moe_hparams(const cJSON *cfg, llm_hparams *hp, llm_err *err);
/* Gemma 4's MoE block (enable_moe_block): on every layer, n_expert experts of width beside the dense MLP (which keeps
   its width), the top k renormalised; the keys name the fields in errors. */
wgllm_status llm_moe_beside_dense(llm_hparams *hp, uint32_t n_expert, uint32_t k, uint32_t width, const char *where,
                                  const char *n_key, const char *k_key, const char *w_key, llm_err *err);
/* The same from GGUF metadata as llama.cpp writes qwen3moe: ARCH.expert_count, .expert_used_count,
   .expert_feed_forward_length; every layer sparse and the top k renormalised (llama.cpp's qwen3moe graph). */
wgllm_status llm_moe_gguf_hparams(const wt_store *st, const char *arch, llm_hparams *hp, llm_err *err);
/* gpt-oss from config.json (GptOssConfig: num_local_experts, num_experts_per_tok, intermediate_size the experts'
   width, attention_bias, swiglu_alpha / swiglu_limit) or after llm_moe_gguf_hparams from GGUF (llama.cpp's fixed
   alpha 1.702 and limit 7): every layer sparse, the top k softmaxed, biases, sinks, the clamped SwiGLU. */
wgllm_status llm_gpt_oss_hparams(const cJSON *cfg, llm_hparams *hp, llm_err *err);
#endif
