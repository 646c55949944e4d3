/* Loader for a Hugging Face model directory: config.json plus model.safetensors, or the shards listed in
   model.safetensors.index.json. Tensors point into memory-mapped files (no copy). */
#ifndef WGLLM_SAFETENSORS_H
#define WGLLM_SAFETENSORS_H
#include "llm_err.h"
#include "tensor_store.h"
#include "wgllm.h"
#include <stddef.h>

/* Loads `dir`. dtypes F32, F16 and BF16; any other is WGLLM_ERR_UNSUPPORTED naming the tensor.
   A missing file (config.json, weights, a shard) is WGLLM_ERR_IO; a corrupt or inconsistent one
   (bad JSON, header past EOF, data_offsets out of bounds or not matching the shape, duplicate names
   across shards) is WGLLM_ERR_FORMAT. err names the file and, where it applies, the tensor and byte offset.
   config.json is kept in the store: wt_config(). */
wgllm_status st_open_dir(const char *dir, wt_store **out, llm_err *err);

#endif
