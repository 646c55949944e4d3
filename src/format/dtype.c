/* The file dtypes wgllm reads, one row each: what loading, size computation and conversion need to know.
   Adding a type is a row here (with its to-f32 conversion) and, for the GPU, its repack and kernels. */
#include "tensor_store.h"
#include "weight_convert.h"
#include <string.h>

static wgllm_status f32_to_f32(const void *src, float *dst, int64_t n, llm_err *err) {
  (void)err;
  memcpy(dst, src, (size_t)n * 4);
  return WGLLM_OK;
}
static wgllm_status f16_to_f32(const void *src, float *dst, int64_t n, llm_err *err) {
  (void)err;
  wc_f16_to_f32_n(src, dst, (size_t)n);
  return WGLLM_OK;
}
static wgllm_status u8_to_f32(const void *src, float *dst, int64_t n, llm_err *err) {
  (void)err;
  for (int64_t i = 0; i < n; i++)
    dst[i] = ((const uint8_t *)src)[i];
  return WGLLM_OK;
}
static wgllm_status bf16_to_f32(const void *src, float *dst, int64_t n, llm_err *err) {
  (void)err;
  wc_bf16_to_f32_n(src, dst, (size_t)n);
  return WGLLM_OK;
}

/* indexed by wt_dtype */
static const wt_dtype_traits TRAITS[] = {
    [WT_F32] = {"F32", 1, 4, 0, 0, "F32", f32_to_f32},
    [WT_F16] = {"F16", 1, 2, 0, 1, "F16", f16_to_f32},
    [WT_BF16] = {"BF16", 1, 2, 0, 30, "BF16", bf16_to_f32},
    [WT_Q8_0] = {"Q8_0", 32, 34, 1, 8, NULL, wc_q8_0_dequant},
    [WT_Q4_0] = {"Q4_0", 32, 18, 1, 2, NULL, wc_q4_0_dequant},
    [WT_Q4_1] = {"Q4_1", 32, 20, 1, 3, NULL, wc_q4_1_dequant},
    [WT_Q5_0] = {"Q5_0", 32, 22, 1, 6, NULL, wc_q5_0_dequant},
    [WT_Q5_1] = {"Q5_1", 32, 24, 1, 7, NULL, wc_q5_1_dequant},
    [WT_Q2_K] = {"Q2_K", 256, 84, 1, 10, NULL, wc_q2_k_dequant},
    [WT_Q3_K] = {"Q3_K", 256, 110, 1, 11, NULL, wc_q3_k_dequant},
    [WT_Q4_K] = {"Q4_K", 256, 144, 1, 12, NULL, wc_q4_k_dequant},
    [WT_Q5_K] = {"Q5_K", 256, 176, 1, 13, NULL, wc_q5_k_dequant},
    [WT_Q6_K] = {"Q6_K", 256, 210, 1, 14, NULL, wc_q6_k_dequant},
    [WT_IQ4_NL] = {"IQ4_NL", 32, 18, 1, 20, NULL, wc_iq4_nl_dequant},
    [WT_IQ4_XS] = {"IQ4_XS", 256, 136, 1, 23, NULL, wc_iq4_xs_dequant},
    [WT_MXFP4] = {"MXFP4", 32, 17, 1, 39, NULL, wc_mxfp4_dequant},
    [WT_U8] = {"U8", 1, 1, 0, -1, "U8", u8_to_f32},
};
_Static_assert(sizeof TRAITS / sizeof TRAITS[0] == WT_DTYPE_COUNT, "one traits row per wt_dtype");

const wt_dtype_traits *wt_traits(wt_dtype d) { return (unsigned)d < WT_DTYPE_COUNT ? &TRAITS[d] : NULL; }

int wt_dtype_from_gguf(uint32_t ggml_type, wt_dtype *d) {
  for (int i = 0; i < WT_DTYPE_COUNT; i++)
    if (TRAITS[i].ggml_type >= 0 && (uint32_t)TRAITS[i].ggml_type == ggml_type) {
      *d = (wt_dtype)i;
      return 1;
    }
  return 0;
}

int wt_dtype_from_safetensors(const char *name, wt_dtype *d) {
  for (int i = 0; i < WT_DTYPE_COUNT; i++)
    if (TRAITS[i].safetensors && !strcmp(TRAITS[i].safetensors, name)) {
      *d = (wt_dtype)i;
      return 1;
    }
  return 0;
}

const char *wt_dtype_name(wt_dtype d) { return (unsigned)d < WT_DTYPE_COUNT ? TRAITS[d].name : "?"; }

uint64_t wt_nbytes(wt_dtype d, int64_t n) {
  const wt_dtype_traits *t = wt_traits(d);
  if (n < 0 || !t) return 0;
  uint64_t u = (uint64_t)n;
  return u % t->block ? 0 : u / t->block * t->block_bytes;
}
