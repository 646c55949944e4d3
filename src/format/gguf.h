/* Loader for llama.cpp GGUF files (v2 and v3, little-endian): key/value metadata of every GGUF value type,
   tensor infos, and tensors pointing into the memory-mapped data section. Shapes are reported outermost
   first like PyTorch (GGUF's ne[] is innermost first), so blk.0.attn_q.weight is [n_out, n_in]. */
#ifndef WGLLM_GGUF_H
#define WGLLM_GGUF_H
#include "llm_err.h"
#include "tensor_store.h"
#include "wgllm.h"
#include <stddef.h>
#include <stdint.h>

typedef enum gguf_type {
  GGUF_TYPE_UINT8 = 0,
  GGUF_TYPE_INT8 = 1,
  GGUF_TYPE_UINT16 = 2,
  GGUF_TYPE_INT16 = 3,
  GGUF_TYPE_UINT32 = 4,
  GGUF_TYPE_INT32 = 5,
  GGUF_TYPE_FLOAT32 = 6,
  GGUF_TYPE_BOOL = 7,
  GGUF_TYPE_STRING = 8,
  GGUF_TYPE_ARRAY = 9,
  GGUF_TYPE_UINT64 = 10,
  GGUF_TYPE_INT64 = 11,
  GGUF_TYPE_FLOAT64 = 12
} gguf_type;

/* Opens and validates `path`. Tensor types: those of src/format/dtype.c (F32, F16, BF16, Q4_0, Q8_0, Q4_1, Q5_0,
   Q5_1, Q2_K..Q6_K, IQ4_NL, IQ4_XS); any other is WGLLM_ERR_UNSUPPORTED naming the tensor and the ggml type. A
   truncated or corrupt file is WGLLM_ERR_FORMAT with the byte offset in err; every count, length and offset is checked
   against the file size before use. */
wgllm_status gguf_open(const char *path, wt_store **out, llm_err *err);
/* The same, but tensors of ggml types wgllm does not read are kept aside (not in the store) instead of refusing
   the file: for describing any GGUF. */
wgllm_status gguf_open_any(const char *path, wt_store **out, llm_err *err);
/* The tensors kept aside: name, ggml type id and name, bytes (to the next tensor's data). NULL past the end. */
uint64_t gguf_unsupported_count(const wt_store *s);
const char *gguf_unsupported(const wt_store *s, uint64_t i, uint32_t *ggml_type, const char **type_name,
                             uint64_t *bytes);

/* Metadata. Each returns 1 when `key` exists with a fitting type, else 0 (and for a non-GGUF store). */
int gguf_key_type(const wt_store *s, const char *key);               /* its gguf_type; -1 if absent */
int gguf_get_u64(const wt_store *s, const char *key, uint64_t *out); /* any integer type (>= 0) or bool */
int gguf_get_f64(const wt_store *s, const char *key, double *out);   /* float or integer types */
const char *gguf_get_str(const wt_store *s, const char *key);        /* NUL-terminated; NULL if absent */
/* Arrays: elem_type is a gguf_type. data points to n packed, aligned elements for fixed-size types;
   it is NULL for string arrays (use gguf_arr_str) and for arrays of arrays (validated, not exposed). */
int gguf_get_arr(const wt_store *s, const char *key, int *elem_type, uint64_t *n, const void **data);
/* Element i of a string array: *len bytes, not NUL-terminated. O(1) (indexed at load). NULL if absent. */
const char *gguf_arr_str(const wt_store *s, const char *key, uint64_t i, size_t *len);

/* Enumeration, for dumps and tests. */
uint32_t gguf_version(const wt_store *s);
uint64_t gguf_kv_count(const wt_store *s);
const char *gguf_kv_key(const wt_store *s, uint64_t i); /* NULL if out of range */
int gguf_kv_type(const wt_store *s, uint64_t i);        /* gguf_type, -1 if out of range */

#endif
