/* The common in-memory description of a model file's tensors, whatever the format (safetensors, GGUF):
   names, dtypes, shapes (outermost first, PyTorch order) and pointers into the memory-mapped files the store
   owns, plus the format's metadata (config.json for safetensors, key/values for GGUF). */
#ifndef WGLLM_TENSOR_STORE_H
#define WGLLM_TENSOR_STORE_H
#include "llm_err.h"
#include "mapped_file.h"
#include "wgllm.h"
#include <cjson/cJSON.h>
#include <stddef.h>
#include <stdint.h>

typedef enum wt_dtype {
  WT_F32,
  WT_F16,
  WT_BF16,
  WT_Q8_0,
  WT_Q4_0,
  /* ggml's other block types: on the GPU in their own layouts (op_wtype), dequantized on the CPU for references */
  WT_Q4_1,
  WT_Q5_0,
  WT_Q5_1,
  WT_Q2_K,
  WT_Q3_K,
  WT_Q4_K,
  WT_Q5_K,
  WT_Q6_K,
  WT_IQ4_NL,
  WT_IQ4_XS,
  WT_MXFP4, /* OCP microscaling FP4: 32 e2m1 values and one e8m0 exponent (gpt-oss's experts) */
  WT_U8,    /* raw bytes (safetensors U8: gpt-oss's MXFP4 blocks and scales, which only their roles read) */
  WT_DTYPE_COUNT
} wt_dtype;

/* One row per dtype (src/format/dtype.c). Quantized dtypes come in blocks along the innermost dimension, as ggml
   defines them: e.g. Q8_0 = f16 d + 32 x int8 (34 bytes), Q4_0 = f16 d + 16 bytes of nibbles (18 bytes), Q6_K =
   256 elements in 210 bytes (src/format/dequant.c). */
typedef struct wt_dtype_traits {
  const char *name;     /* "F32", "Q4_0", ...: as GGUF names it */
  uint32_t block;       /* elements a block (1 for plain types) */
  uint32_t block_bytes; /* bytes a block */
  int quantized;
  int ggml_type;           /* the GGUF tensor type id, -1 when GGUF cannot hold it */
  const char *safetensors; /* the safetensors dtype string, NULL when safetensors cannot hold it */
  /* dst[n] floats from n elements (n a multiple of block; otherwise WGLLM_ERR_INVALID_ARG) */
  wgllm_status (*to_f32)(const void *src, float *dst, int64_t n, llm_err *err);
} wt_dtype_traits;
const wt_dtype_traits *wt_traits(wt_dtype d);            /* NULL for a value outside the enum */
int wt_dtype_from_gguf(uint32_t ggml_type, wt_dtype *d); /* 1 if GGUF's type is one wgllm reads */
int wt_dtype_from_safetensors(const char *name, wt_dtype *d);

typedef struct wt_tensor {
  char *name; /* owned by the store */
  wt_dtype dtype;
  int n_dims;       /* 0..4; 0 is a scalar */
  int64_t shape[4]; /* [n_dims], outermost first (PyTorch order): a Linear weight is [out, in]; unused = 1 */
  const void *data; /* [nbytes] inside the mapped file; not necessarily aligned beyond 1 byte; NULL where the file
                       is not resident (the browser build: wt_tensor_bytes) */
  uint64_t nbytes;
  const char *file;     /* path of the file holding the data (owned by the store) */
  uint64_t file_offset; /* absolute byte offset of data in that file */
} wt_tensor;

typedef enum wt_format { WT_FORMAT_SAFETENSORS, WT_FORMAT_GGUF } wt_format;

typedef struct wt_store wt_store;

/* ---- reading ---- */
const wt_tensor *wt_find(const wt_store *s, const char *name); /* NULL if absent */
size_t wt_count(const wt_store *s);
const wt_tensor *wt_at(const wt_store *s, size_t i); /* in file order; NULL if i >= count */
int64_t wt_numel(const wt_tensor *t);
wt_format wt_store_format(const wt_store *s);
/* config.json of a safetensors directory; NULL for GGUF */
const cJSON *wt_config(const wt_store *s);
void wt_store_free(wt_store *s); /* NULL is a no-op */

/* t's bytes in host memory: t->data, or where the file is not resident (the browser build) a copy read from it, also
   returned in *tmp (malloc'd: free it after use; NULL otherwise). NULL on failure, with the reason in err. */
const void *wt_tensor_bytes(const wt_tensor *t, void **tmp, llm_err *err);

const char *wt_dtype_name(wt_dtype d); /* as GGUF names it: "F32", "Q4_0", "Q6_K", ... */
/* Bytes of n elements; for block types n must be a multiple of the block (returns 0 otherwise, and for n < 0). */
uint64_t wt_nbytes(wt_dtype d, int64_t n_elements);

/* ---- building (used by the format loaders) ---- */
wt_store *wt_store_create(wt_format fmt); /* NULL when out of memory */
/* Takes ownership of f (also on failure); f->path stays valid for tensors' `file` while the store lives. */
wgllm_status wt_store_add_file(wt_store *s, mapped_file *f, llm_err *err);
/* Copies t (and its name). A name already present is WGLLM_ERR_FORMAT naming both files. */
wgllm_status wt_store_add(wt_store *s, const wt_tensor *t, llm_err *err);
void wt_store_set_config(wt_store *s, cJSON *config); /* takes ownership */
/* Format-private metadata (GGUF key/values), freed with free_fn when the store is freed. */
void wt_store_set_meta(wt_store *s, void *meta, void (*free_fn)(void *));
void *wt_store_meta(const wt_store *s);

#endif
