/* The forward pass of the Llama family (Llama 2/3.x, Mistral, Qwen2 with q/k/v biases, Qwen3 with per-head q/k
   norms) and of Gemma 3 (the same decoder with (1+w) norms, sandwich norms, GeGLU, scaled embeddings and
   sliding windows on local layers with their own RoPE), Qwen3-MoE (Qwen3 with the mixture of experts on its
   sparse layers), Mixtral, Phi-3 and gpt-oss (biases on the attention's projections, sinks, sliding and full layers
   alternating, biased experts with the clamped SwiGLU): embedding, per layer the attention and MLP blocks
   (blocks.c), the LM head. */
#include "blocks.h"

wgllm_status llm_forward_llama(const llm_fwd *f, uint32_t n_logits) {
  const llm_hparams *hp = &f->m->hp;
  const llm_scratch *s = f->s;
  wgllm_status st = op_embedding(f->rec, gpu_whole(s->ids), &f->m->tok_embd, gpu_whole(s->x), f->T, hp->n_embd,
                                 hp->n_vocab, hp->embed_scale);
  for (uint32_t l = 0; !st && l < hp->n_layer; l++) {
    st = llm_block_attention(f, l);
    if (!st) st = llm_layer_is_moe(hp, l) ? llm_block_moe(f, l) : llm_block_mlp(f, l);
    if (!st) st = gpu_recorder_flush(f->rec); /* a prefill pass: the GPU starts on this layer */
  }
  if (!st) st = llm_block_head(f, n_logits);
  return st;
}
