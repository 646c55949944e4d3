/* GPU platform layer: Dawn instance/adapter/device, features and limits, error capture, buffers and the
   buffer pool (with recording quarantine), the pipeline cache over the generated kernel registry, and the
   recorder: a list of dispatch records that runs once or is kept and replayed. Everything above src/gpu
   talks to WebGPU only through this header. */
#ifndef WGLLM_GPU_H
#define WGLLM_GPU_H
#include "llm_err.h"
#include "wgllm.h"
#include <pthread.h>
#include <stddef.h>
#include <stdint.h>
#include <webgpu/webgpu.h>

#define GPU_ERR_LEN 1024

/* Feature values of the library we link (Dawn in bun-webgpu 0.1.7). Its webgpu.h predates the header we
   compile against (react-native-webgpu 0.10.2), whose enum was renumbered: the header's ShaderF16 (0x0B)
   and Subgroups (0x12) name other features in this library. Measured by requesting each feature alone and
   compiling `enable f16;` / `enable subgroups;` / creating a timestamp query set; tests/test_abi.c keeps
   checking it. The browser build (web/web.mk), whose webgpu.h implementation (web/webgpu.js) follows the header,
   defines them as the header's values. */
#ifndef GPU_FEATURE_TIMESTAMP_QUERY
#define GPU_FEATURE_TIMESTAMP_QUERY ((WGPUFeatureName)0x03)
#define GPU_FEATURE_SHADER_F16 ((WGPUFeatureName)0x0A)
#define GPU_FEATURE_SUBGROUPS ((WGPUFeatureName)0x11)
#endif
/* Subgroup matrices (Dawn's chromium-experimental-subgroup-matrix: tensor cores). The library we link offers them
   on NVIDIA only with f16 configurations, and blocks shader-f16 there: unusable, so native builds never ask
   (value 0). The wasm build (web/web.mk) defines the feature as newer Dawn numbers it (0x50037), which
   web/webgpu.js maps to the WebGPU name, and reads the configurations through Dawn's
   AdapterPropertiesSubgroupMatrixConfigs chained on wgpuAdapterGetInfo (newer than our header: mirrored here). */
#ifndef GPU_FEATURE_SUBGROUP_MATRIX
#define GPU_FEATURE_SUBGROUP_MATRIX ((WGPUFeatureName)0)
#endif
#define GPU_STYPE_SUBGROUP_MATRIX_CONFIGS ((WGPUSType)0x0005003B)
enum { GPU_SMAT_F32 = 1, GPU_SMAT_F16 = 2, GPU_SMAT_U32 = 3, GPU_SMAT_I32 = 4, GPU_SMAT_U8 = 5, GPU_SMAT_I8 = 6 };
typedef struct gpu_smat_config {
  uint32_t component, result; /* GPU_SMAT_*: the operands' and the result's component types */
  uint32_t M, N, K;           /* left M x K, right K x N, result M x N */
} gpu_smat_config;
typedef struct gpu_smat_configs_chain { /* Dawn's WGPUAdapterPropertiesSubgroupMatrixConfigs */
  WGPUChainedStruct chain;
  size_t count;
  const gpu_smat_config *configs;
} gpu_smat_configs_chain;
/* The adapter's memory heaps (AdapterPropertiesMemoryHeaps chained on wgpuAdapterGetInfo): the header's sType
   value is the library's too, checked by chaining every value and reading back a heap list (lavapipe: 1 heap,
   device-local | host-visible, the machine's RAM); test_kv_ring checks that heaps are read. */
#define GPU_STYPE_MEMORY_HEAPS ((WGPUSType)0x00050013)

/* ---------- context ---------- */
typedef struct gpu_options {
  const char *adapter_name; /* substring of the adapter name to prefer; NULL: the best (the edges read WGLLM_ADAPTER) */
  int disable_f16;          /* do not request shader-f16 even if offered (simulates a device without it) */
  int disable_subgroups;
  int disable_timestamps;
  const char *enable_toggles; /* comma-separated Dawn device toggles to enable (measurements: PERF.md) */
  /* keep Dawn's robustness transform (every buffer access bounds-checked in the shader). By default the device is
     created with Dawn's disable_robustness: every kernel bounds its indices itself (ARCHITECTURE.md, "Kernel
     bounds"). The environment variable WGLLM_DAWN_ROBUSTNESS=1 (read by gpu_create, so that it reaches every entry
     point: library, CLI, server, bench, tests) does the same. */
  int robust;
  uint32_t wait_timeout_ms; /* longest wait for submitted work before the device counts as lost; 0: 600000 */
} gpu_options;

typedef struct gpu_pipeline_cache gpu_pipeline_cache;
typedef struct gpu_pool gpu_pool;

typedef struct gpu_context {
  WGPUInstance instance;
  WGPUAdapter adapter;
  WGPUDevice device;
  WGPUQueue queue;
  char adapter_name[256];
  char adapter_vendor[128];
  char adapter_description[256];
  const char *backend;      /* "Vulkan", ... */
  const char *adapter_type; /* "discrete GPU", "integrated GPU", "CPU" */
  uint32_t subgroup_min, subgroup_max;
  int has_f16, has_subgroups, has_timestamps; /* features granted on the device */
  int has_subgroup_matrix;                    /* granted, with shader-f16 and subgroups (configurations below) */
  gpu_smat_config smat[16];                   /* the adapter's subgroup-matrix configurations */
  int n_smat;
  int robust;        /* Dawn's robustness transform kept (gpu_options.robust) */
  char notices[512]; /* features offered-not-requested or not offered */
  WGPULimits limits; /* limits the device got */
  /* err, error_pending and lost are written by Dawn's callbacks (the loss callback from any thread): read and
     written under lock */
  pthread_mutex_t lock;
  char err[GPU_ERR_LEN]; /* first uncaptured error / loss message */
  int error_pending;     /* 1 an error, 2 out of memory: reported (and cleared) by the next gpu_check */
  int lost;              /* lost, or hung (a wait ran past wait_timeout_ms): every later call fails */
  int hung;
  uint32_t wait_timeout_ms;
  gpu_pipeline_cache *pipes;
  gpu_pool *pool;
  uint64_t bytes_live, bytes_peak; /* device bytes in buffers created through this layer */
  uint64_t buffers_live;           /* and their count (pooled ones included) */
  /* the most device bytes this context may hold (WGLLM_MEMORY_BUDGET, read by gpu_create: bytes, or with a K, M,
     G or T suffix, powers of 1024); 0: no budget of its own (gpu_memory_left) */
  uint64_t memory_budget;
  /* for tests: allocations (buffers and readback rings) counted from 0 when set; the one numbered alloc_fail_at
     (1-based) fails as out of memory, naming itself; 0: none fails */
  uint64_t alloc_count, alloc_fail_at;
  uint64_t device_memory; /* bytes of the adapter's device-local heaps; 0 when the library does not say */
  uint32_t n_heaps;
} gpu_context;

wgllm_status gpu_create(const gpu_options *opt, gpu_context **out, llm_err *err);
void gpu_destroy(gpu_context *ctx);
/* Returns and clears a pending uncaptured error (message copied to err); WGLLM_ERR_DEVICE_LOST if lost. */
wgllm_status gpu_check(gpu_context *ctx, llm_err *err);
/* WGLLM_ERR_DEVICE_LOST (message in err) if the device is lost or hung, else WGLLM_OK; clears nothing. */
wgllm_status gpu_lost(gpu_context *ctx, llm_err *err);
/* For tests: Dawn's InjectError (an uncaptured validation or out-of-memory error, as a failing command would
   raise) and ForceLoss (the device lost, as a driver reset would). */
void gpu_inject_error(gpu_context *ctx, int out_of_memory, const char *msg);
void gpu_force_loss(gpu_context *ctx, const char *msg);
/* For tests: the nth allocation from now fails (gpu_context.alloc_fail_at); 0 stops failing. */
void gpu_inject_alloc_failure(gpu_context *ctx, uint64_t nth);
/* The device bytes this context may still allocate, the least of: the adapter's device-local heaps less what it
   holds, memory_budget less what it holds, and on a CPU adapter (lavapipe, SwiftShader: its buffers are the host's
   memory) the host's MemAvailable (/proc/meminfo). UINT64_MAX when none of them is known. `why` (may be NULL)
   gets which one it is, in words with its numbers, for messages. */
uint64_t gpu_memory_left(gpu_context *ctx, char *why, size_t why_len);
/* "488.3 MiB", "1.50 GiB": a size for messages */
const char *gpu_size_str(uint64_t bytes, char *buf, size_t n);
/* Blocks until all submitted work has finished (or wait_timeout_ms passed: then the device counts as lost). */
wgllm_status gpu_wait_idle(gpu_context *ctx, llm_err *err);
const char *gpu_feature_list(const gpu_context *ctx, char *buf, size_t len);

/* ---------- buffers ---------- */
typedef struct gpu_buffer {
  WGPUBuffer handle;
  uint64_t size;
  int pins;     /* live recordings that reference it */
  int released; /* owner released it while pinned: goes back to the pool when the last pin drops */
  int pooled;   /* came from the pool */
  char label[48];
} gpu_buffer;

/* A bound range of a buffer. size 0 means "to the end". */
typedef struct gpu_view {
  gpu_buffer *buf;
  uint64_t offset;
  uint64_t size;
} gpu_view;

static inline gpu_view gpu_whole(gpu_buffer *b) {
  gpu_view v = {b, 0, b ? b->size : 0};
  return v;
}

/* a view's bytes: its size, or to the end of its buffer when the size is 0 */
static inline uint64_t gpu_view_bytes(gpu_view v) { return v.size ? v.size : (v.buf ? v.buf->size - v.offset : 0); }

/* Storage | CopySrc | CopyDst | Indirect buffer of at least `size` bytes (rounded up to 16). */
wgllm_status gpu_buffer_create(gpu_context *ctx, uint64_t size, const char *label, gpu_buffer **out, llm_err *err);
void gpu_buffer_destroy(gpu_context *ctx, gpu_buffer *b);
wgllm_status gpu_write(gpu_context *ctx, gpu_buffer *b, uint64_t offset, const void *src, uint64_t bytes);
wgllm_status gpu_read(gpu_context *ctx, gpu_buffer *b, uint64_t offset, void *dst, uint64_t bytes, llm_err *err);

/* Pool: reuse freed buffers of a matching size class. Releasing a buffer that a live recording pins
   quarantines it until that recording is freed. */
wgllm_status gpu_pool_acquire(gpu_context *ctx, uint64_t size, const char *label, gpu_buffer **out, llm_err *err);
void gpu_pool_release(gpu_context *ctx, gpu_buffer *b);
/* Destroys the pool's free buffers (a test's leak count, or memory handed back). */
void gpu_pool_trim(gpu_context *ctx);

/* ---------- kernels and pipelines ---------- */
enum { GPU_REQ_F16 = 1, GPU_REQ_SUBGROUPS = 2, GPU_REQ_SUBGROUP_MATRIX = 4 };
typedef struct gpu_kernel_source {
  const char *kernel;    /* template name, e.g. "rms_norm" */
  const char *variant;   /* e.g. "f32", "f16" */
  const char *source;    /* generated WGSL */
  unsigned requires;     /* GPU_REQ_* */
  unsigned params_bytes; /* size of its WGSL `Params` block (all 4-byte scalars), 0 if none: checked at record */
  const char *bindings;  /* group 0's bindings by number, a letter each: 'u' uniform, 'r' read-only storage, 'w'
                            read_write storage ("urrw"); a dispatch's are checked against it at record */
} gpu_kernel_source;
extern const gpu_kernel_source gpu_kernel_sources[];
extern const size_t gpu_kernel_source_count;
const gpu_kernel_source *gpu_kernel_find(const char *kernel, const char *variant);

typedef struct gpu_constant {
  const char *name;
  double value;
} gpu_constant;

/* Pipeline for kernel/variant with override constants, created once and cached. */
wgllm_status gpu_pipeline_get(gpu_context *ctx, const char *kernel, const char *variant, const gpu_constant *consts,
                              int n_consts, WGPUComputePipeline *out, llm_err *err);
/* The same for a source outside gpu_kernel_sources (the developer variants of wgllm_dev), cached by its kernel and
   variant names like the others. */
wgllm_status gpu_pipeline_get_source(gpu_context *ctx, const gpu_kernel_source *src, const gpu_constant *consts,
                                     int n_consts, WGPUComputePipeline *out, llm_err *err);

/* ---------- recorder ---------- */
#define GPU_MAX_BINDINGS 12
typedef struct gpu_recorder gpu_recorder;

typedef struct gpu_dispatch_desc {
  const char *kernel, *variant;
  const gpu_kernel_source *source; /* NULL: kernel/variant of gpu_kernel_sources; else this source (wgllm_dev's) */
  const gpu_constant *consts;
  int n_consts;
  const void *params; /* uniform block bound at @binding(0) when params_size > 0 */
  uint32_t params_size;
  gpu_view bind[GPU_MAX_BINDINGS]; /* storage buffers at @binding(1..n) (or 0..n-1 without params) */
  int n_bind;
  /* how the caller means each of bind[0..n_bind) to be used, a letter each: 'r' read, 'w' read_write (as the
     kernel declares it: gpu_kernel_source.bindings); NULL: not stated (the count is checked all the same) */
  const char *access;
  uint32_t grid[3];  /* workgroups; ignored when indirect.buf is set */
  gpu_view indirect; /* 3 x u32 written on the GPU */
} gpu_dispatch_desc;

/* keep = 1: the recording is kept for replay; its buffers are pinned (quarantined) until freed. */
gpu_recorder *gpu_recorder_create(gpu_context *ctx, int keep);
wgllm_status gpu_record(gpu_recorder *rec, const gpu_dispatch_desc *d);
/* Encodes every record into one compute pass and submits. A kept recording can be run again (replay):
   this creates no pipeline, bind group or buffer. */
wgllm_status gpu_recorder_run(gpu_recorder *rec);
/* A one-shot recording (keep = 0): finalizes, encodes and submits the records so far, so that the GPU runs them
   while the caller records the rest; the run then submits only what came after. More records may follow. A kept
   recording ignores it (it replays whole). Such a recording can no longer be profiled or timed. */
wgllm_status gpu_recorder_flush(gpu_recorder *rec);
/* Encodes records into a command encoder the caller owns (e.g. to append a copy before submitting). */
wgllm_status gpu_recorder_encode(gpu_recorder *rec, WGPUCommandEncoder enc);
size_t gpu_recorder_count(const gpu_recorder *rec);
/* CPU microseconds the last gpu_recorder_run spent encoding and submitting. */
double gpu_recorder_last_encode_us(const gpu_recorder *rec);
const char *gpu_recorder_error(const gpu_recorder *rec);
gpu_context *gpu_recorder_context(const gpu_recorder *rec);
/* Marks the recording failed (sticky) with a message; returns s. Ops use it for shape refusals. */
wgllm_status gpu_recorder_fail(gpu_recorder *rec, wgllm_status s, const char *msg);
void gpu_recorder_free(gpu_recorder *rec);
/* Readback ring: small mappable buffers so a step's result (a token id) can be copied out in the step's own
   command buffer and collected later, while the next step is already queued. */
typedef struct gpu_readback gpu_readback;
/* NULL on failure, err saying which allocation (label) failed and why */
gpu_readback *gpu_readback_create(gpu_context *ctx, uint32_t bytes, int slots, const char *label, llm_err *err);
void gpu_readback_free(gpu_readback *rb);
/* Runs the recording, then copies bytes of src into the next slot and starts mapping it. *slot: its index. */
wgllm_status gpu_recorder_run_readback(gpu_recorder *rec, gpu_readback *rb, gpu_view src, int *slot);
/* Waits for slot's mapping, copies its bytes to dst and frees the slot. */
wgllm_status gpu_readback_wait(gpu_readback *rb, int slot, void *dst, llm_err *err);
/* A kept recording's replay and its readback copy encoded ahead into a command buffer (prepare), submitted later
   (submit): the CPU encodes it while the GPU still works on what was submitted before, and queue writes made in
   between (its inputs) are ordered before it, as for gpu_recorder_run_readback. The slot it copies into is taken
   at prepare; drop releases a prepared run that is not submitted. The recording must outlive it. */
typedef struct gpu_prepared {
  gpu_recorder *rec; /* NULL: nothing prepared */
  gpu_readback *rb;
  WGPUCommandBuffer cb;
  int slot;
} gpu_prepared;
wgllm_status gpu_recorder_prepare_readback(gpu_recorder *rec, gpu_readback *rb, gpu_view src, gpu_prepared *p);
wgllm_status gpu_prepared_submit(gpu_prepared *p, int *slot);
void gpu_prepared_drop(gpu_prepared *p); /* nothing prepared: a no-op */

/* Per-record GPU time in nanoseconds (one pass per record with timestamp writes); needs timestamp-query.
   out_ns has gpu_recorder_count() entries. */
wgllm_status gpu_recorder_profile(gpu_recorder *rec, double *out_ns);
const char *gpu_recorder_record_name(const gpu_recorder *rec, size_t i);
/* GPU time of the whole recording run once as one pass (timestamps at its start and end), in nanoseconds:
   dependent dispatches with their barriers, as a replayed step runs. Needs timestamp-query. */
wgllm_status gpu_recorder_time(gpu_recorder *rec, double *out_ns);
/* The same with every record named skip left out (the rest as recorded, one pass): a step's time minus this is the
   in-stream cost of skip's dispatches, barriers and overlap included (what its own pass in the profile overstates).
   The skipped dispatches' outputs keep what an earlier run wrote: for timing only. */
wgllm_status gpu_recorder_time_without(gpu_recorder *rec, const char *skip, double *out_ns);

#endif
