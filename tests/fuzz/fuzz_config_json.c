/* Fuzz harness: a Hugging Face config.json from untrusted bytes, through the model config parse step alone
   (cJSON, then llm_hparams_from_json: every family's fields, multimodal text_config nesting, RoPE types and
   tables, layer types and sliding windows, Gemma 4's per-layer table), with no tensors and no GPU. On success
   the hyperparameters must be usable: layer count within LLM_MAX_LAYERS, head_dim within the kernels' 512,
   rotary dims within head_dim, every RoPE table entry finite and not negative, each layer's KV source itself or
   an earlier layer. */
#include "config_json.h"
#include "fuzz_util.h"
#include <math.h>
#include <stdlib.h>

static void check_table(const float *f, uint32_t rot_dim, const char *what) {
  FUZZ_CHECK(f != NULL, "%s: no RoPE table", what);
  for (uint32_t i = 0; i < rot_dim / 2; i++)
    FUZZ_CHECK(isfinite(f[i]) && f[i] >= 0, "%s[%u] = %g", what, i, f[i]); /* 0: a pair not rotated (Gemma 4) */
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  cJSON *cfg = cJSON_ParseWithLength((const char *)data, size);
  if (!cfg) fuzz_note("not JSON");
  if (!cfg) return 0;
  llm_hparams hp;
  llm_err err = {0};
  wgllm_status s = llm_hparams_from_json(cfg, &hp, &err);
  if (s == WGLLM_OK) {
    FUZZ_CHECK(hp.n_layer <= LLM_MAX_LAYERS, "%u layers", hp.n_layer);
    FUZZ_CHECK(hp.head_dim >= 1 && hp.head_dim <= 512, "head_dim %u", hp.head_dim);
    FUZZ_CHECK(hp.rot_dim >= 2 && hp.rot_dim <= hp.head_dim, "rot_dim %u of head_dim %u", hp.rot_dim, hp.head_dim);
    check_table(hp.inv_freq, hp.rot_dim, "inv_freq");
    if (hp.inv_freq_local) check_table(hp.inv_freq_local, hp.rot_dim_local, "inv_freq_local");
    FUZZ_CHECK(hp.n_layer == 0 || hp.lay != NULL, "no per-layer table");
    for (uint32_t l = 0; l < hp.n_layer; l++) {
      FUZZ_CHECK(llm_layer_kv_source(&hp, l) <= l, "layer %u reads the KV cache of layer %u", l,
                 llm_layer_kv_source(&hp, l));
      uint32_t hd = llm_layer_head_dim(&hp, l), rd = llm_layer_rot_dim(&hp, l);
      FUZZ_CHECK(hd >= 1 && hd <= 512 && rd <= hd, "layer %u: head_dim %u, rot_dim %u", l, hd, rd);
      FUZZ_CHECK(!llm_layer_rope_local(&hp, l) || hp.inv_freq_local, "layer %u: local RoPE without a table", l);
    }
    llm_hparams_free(&hp);
  } else {
    fuzz_note("llm_hparams_from_json: %s", err.msg);
    FUZZ_CHECK(err.msg[0] || s == WGLLM_ERR_OUT_OF_MEMORY, "status %d without a message", s);
  }
  cJSON_Delete(cfg);
  return 0;
}
