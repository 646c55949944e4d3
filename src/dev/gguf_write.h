/* A small GGUF builder (v2 and v3, little-endian, the layout gguf.h reads): key/values of every GGUF type,
   tensor infos with their ggml type and shape, and the data section at the chosen alignment, written to
   memory, a FILE or a path. Keys and values are copied when added; tensor data is borrowed until the
   finish call, or streamed then through a fill callback (for files larger than memory).

   Errors stick: the first failing call records its status and message, later adds do nothing and return
   that status, and every finish returns it. Checked: duplicate keys and tensor names, value types,
   general.alignment (a u32 equal to the layout's alignment), tensor names of 1..63 bytes (llama.cpp's
   limit), 1..4 dimensions, rows (ne[0]) a whole number of blocks, size overflow, and that a fill writes each
   tensor's exact byte count. gguf_writer_kv_raw is the one unchecked way in: nested arrays, and tests that
   write broken files on purpose. */
#ifndef WGLLM_GGUF_WRITE_H
#define WGLLM_GGUF_WRITE_H
#include "gguf.h"
#include "llm_err.h"
#include "tensor_store.h"
#include "wgllm.h"
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

typedef struct gguf_writer gguf_writer;

/* version 2 or 3; alignment a power of two up to 2^30 (GGUF's default is 32; general.alignment is written
   only if added as a key). NULL only when out of memory; bad arguments are the writer's first error. */
gguf_writer *gguf_writer_begin(uint32_t version, uint32_t alignment);
void gguf_writer_free(gguf_writer *w); /* NULL is a no-op */
wgllm_status gguf_writer_status(const gguf_writer *w);
const char *gguf_writer_error(const gguf_writer *w); /* "" while the status is WGLLM_OK */

/* ---- key/values, in file order ---- */
/* A fixed-size scalar (every gguf_type but STRING and ARRAY): value points to it in host order; a bool is a
   uint8_t 0 or 1. */
wgllm_status gguf_writer_kv(gguf_writer *w, const char *key, gguf_type type, const void *value);
wgllm_status gguf_writer_kv_u32(gguf_writer *w, const char *key, uint32_t v);
wgllm_status gguf_writer_kv_f32(gguf_writer *w, const char *key, float v);
wgllm_status gguf_writer_kv_str(gguf_writer *w, const char *key, const char *v);
/* n elements of a fixed-size type, packed in host order (elems may be NULL when n is 0) */
wgllm_status gguf_writer_kv_arr(gguf_writer *w, const char *key, gguf_type elem, uint64_t n, const void *elems);
wgllm_status gguf_writer_kv_arr_str(gguf_writer *w, const char *key, uint64_t n, const char *const *strs);
/* The value type and the value's bytes exactly as given: no check at all, not even for a duplicate key. */
wgllm_status gguf_writer_kv_raw(gguf_writer *w, const char *key, uint32_t type, const void *value, size_t n);

/* ---- tensors, in file order ---- */
/* ne: n_dims sizes, innermost first as GGUF stores them (a [rows, cols] matrix is ne = {cols, rows}).
   data: wt_nbytes(dtype, product of ne) bytes, read at finish; NULL to have the fill callback write them. */
wgllm_status gguf_writer_tensor(gguf_writer *w, const char *name, wt_dtype dtype, uint32_t n_dims, const uint64_t *ne,
                                const void *data);
size_t gguf_writer_tensor_count(const gguf_writer *w);
/* Where tensor i's info record (its name's u64 length, then the name, u32 n_dims, u64 ne[], u32 ggml type,
   u64 offset) starts in the file; final once the last key is added. For tests that patch bytes. */
uint64_t gguf_writer_tensor_info_pos(const gguf_writer *w, size_t i);

/* Streamed data: at finish, fill(user, i, sink) is called for each tensor i (the writer's index, counting
   every tensor) added with data NULL, and must pass its bytes, in order, to gguf_sink_write. */
typedef struct gguf_sink gguf_sink;
wgllm_status gguf_sink_write(gguf_sink *sink, const void *data, size_t n);
typedef wgllm_status (*gguf_fill_fn)(void *user, size_t i, gguf_sink *sink);
void gguf_writer_set_fill(gguf_writer *w, gguf_fill_fn fill, void *user);

/* ---- finishing: header, padding to the alignment, each tensor's data at its aligned offset (the file ends
   with the last tensor's data). The writer is unchanged and may be finished again. ---- */
/* *out is malloc'd (free it), *len its size */
wgllm_status gguf_writer_finish_mem(gguf_writer *w, uint8_t **out, size_t *len, llm_err *err);
wgllm_status gguf_writer_finish_file(gguf_writer *w, FILE *f, llm_err *err);
/* creates or replaces path, through PATH.tmp.PID renamed onto it once whole: a failed write removes the temporary
   file and leaves path as it was */
wgllm_status gguf_writer_finish_path(gguf_writer *w, const char *path, llm_err *err);
#endif
