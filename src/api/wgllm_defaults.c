/* The public API's defaults, in one place (each documented in include/wgllm.h beside its field). They are the
   CLI's too: wgllm run, chat and serve start from these and change only what their options set. */
#include "wgllm.h"
#include <string.h>

wgllm_model_params wgllm_model_default_params(void) {
  wgllm_model_params p = {.weights = WGLLM_WEIGHTS_NATIVE, .q4_group = 32};
  return p;
}

wgllm_session_params wgllm_session_default_params(void) {
  wgllm_session_params p = {
      .context = 0, .kv_type = WGLLM_KV_F32, .decode_path = WGLLM_DECODE_FUSED, .attn_grid = WGLLM_ATTN_GRID_WORST};
  return p;
}

wgllm_generate_params wgllm_generate_default_params(void) {
  wgllm_generate_params p;
  memset(&p, 0, sizeof p);
  p.max_tokens = 256;
  p.temperature = 0.8f;
  p.top_k = 40;
  p.top_p = 0.95f;
  p.min_p = 0.05f;
  p.repeat_penalty = 1.0f;
  p.repeat_last_n = 64;
  p.seed = WGLLM_SEED_RANDOM;
  return p;
}
