/* Files read from disk: a read-only memory mapping of a whole model file (loaders point tensors straight into
   the mapping, so weights are never copied or read twice; the mapping lives as long as the wt_store that owns
   it), and small text files (configs, tokenizers, templates) read whole. */
#ifndef WGLLM_MAPPED_FILE_H
#define WGLLM_MAPPED_FILE_H
#include "llm_err.h"
#include "wgllm.h"
#include <stddef.h>
#include <stdint.h>

typedef struct mapped_file {
  char *path;          /* as given to mf_open, owned */
  const uint8_t *data; /* [resident] bytes; NULL when size == 0 */
  uint64_t size;
  /* bytes at data: the whole file where it is mapped (here); the browser build (web/mapped_file_web.c) keeps only
     the header in memory, and tensors past it have no data pointer (their bytes come through mf_read_range and
     mf_upload) */
  uint64_t resident;
} mapped_file;

/* Maps `path` read-only. On failure returns WGLLM_ERR_IO (open/stat/mmap, or not a regular file) or
   WGLLM_ERR_OUT_OF_MEMORY, with a message naming the path in err. */
wgllm_status mf_open(const char *path, mapped_file **out, llm_err *err);
/* Unmaps and frees; NULL is a no-op. */
void mf_close(mapped_file *f);
/* A small text file (config.json, tokenizer.json, a template) read whole into a NUL-terminated malloc'd buffer,
   its length in *len (may be NULL); NULL when it cannot be opened or read. */
char *mf_read_text(const char *path, size_t *len);

/* Size caps of the JSON files the engine reads (docs/LIMITS.md): far above any real file, so that a huge one is
   refused by name before it is read. */
#define MF_CAP_CONFIG_JSON (16ull << 20)           /* config.json, model.safetensors.index.json */
#define MF_CAP_TOKENIZER_JSON (64ull << 20)        /* tokenizer.json */
#define MF_CAP_TOKENIZER_CONFIG_JSON (16ull << 20) /* tokenizer_config.json */
/* The values (json_shape.h) each may hold, checked in one pass before cJSON builds a node and up to two strings,
   ~150 bytes of heap, for each: so parsing costs at most ~75 MB (~450 MB for tokenizer.json; tests/test_bounds.sh
   reads a file at each bound within 200 MB and 600 MB) whatever the file's shape. Real files hold far fewer: a
   config.json under 100, an index one a tensor (DeepSeek-V3's about 92,000), Gemma 3's tokenizer_config.json 44,929
   and its 33 MB tokenizer.json 1,858,256, the largest there is (a vocabulary of 262,144 and 514,906 merges: room
   for one of ~420,000). Depth: JSON_FILE_MAX_DEPTH. */
#define MF_VALUES_CONFIG_JSON 500000u     /* config.json, model.safetensors.index.json, tokenizer_config.json */
#define MF_VALUES_TOKENIZER_JSON 3000000u /* tokenizer.json */

/* WGLLM_ERR_FORMAT naming the file, its size and the cap when `path` is larger than `cap` bytes; a file that
   cannot be stat'ed passes (its reader reports it) */
wgllm_status mf_check_size(const char *path, uint64_t cap, llm_err *err);
/* Bytes [offset, offset + n) of the file at path into dst: for data that is not resident. WGLLM_ERR_IO naming the
   path and the range on failure. */
wgllm_status mf_read_range(const char *path, uint64_t offset, void *dst, uint64_t n, llm_err *err);
/* Bytes [offset, offset + n) of the file at path into buffer b at dst_offset (n a multiple of 4): the browser build
   streams them from the file into the GPU without passing them through wasm memory; here they are read a chunk at a
   time and written. */
struct gpu_context;
struct gpu_buffer;
wgllm_status mf_upload(struct gpu_context *gpu, struct gpu_buffer *b, uint64_t dst_offset, const char *path,
                       uint64_t offset, uint64_t n, llm_err *err);

#endif
