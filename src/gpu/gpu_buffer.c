/* Device buffers: creation under an error scope (so a refused allocation is a status, not an abort),
   upload, readback, and the pool that reuses freed buffers by size class. A buffer a live recording pins
   is quarantined on release and only returns to the pool when the last pin drops. */
#include "gpu.h"
#include "gpu_internal.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct scope_res {
  int done;
  WGPUErrorType type;
  char msg[GPU_ERR_LEN - 128];
} scope_res;

static void on_pop(WGPUPopErrorScopeStatus s, WGPUErrorType t, WGPUStringView m, void *u1, void *u2) {
  (void)u2;
  scope_res *r = u1;
  r->done = 1;
  r->type = s == WGPUPopErrorScopeStatus_Success ? t : WGPUErrorType_Unknown;
  size_t n = m.data ? (m.length == WGPU_STRLEN ? strlen(m.data) : m.length) : 0;
  if (n >= sizeof r->msg) n = sizeof r->msg - 1;
  if (n) memcpy(r->msg, m.data, n);
  r->msg[n] = 0;
}

void gpu_scope_push(gpu_context *ctx) {
  wgpuDevicePushErrorScope(ctx->device, WGPUErrorFilter_OutOfMemory);
  wgpuDevicePushErrorScope(ctx->device, WGPUErrorFilter_Validation);
}

wgllm_status gpu_scope_pop(gpu_context *ctx, llm_err *err) {
  scope_res r[2];
  memset(r, 0, sizeof r);
  for (int i = 0; i < 2; i++) {
    WGPUPopErrorScopeCallbackInfo ci = {0};
    ci.mode = WGPUCallbackMode_WaitAnyOnly;
    ci.callback = on_pop;
    ci.userdata1 = &r[i];
    gpu_wait_future(ctx, wgpuDevicePopErrorScope(ctx->device, ci));
  }
  wgllm_status lost = gpu_lost(ctx, err); /* a lost or hung device: that, not what its scopes say */
  if (lost) return lost;
  for (int i = 0; i < 2; i++) {
    if (r[i].type != WGPUErrorType_NoError) {
      return llm_err_set(err, r[i].type == WGPUErrorType_OutOfMemory ? WGLLM_ERR_OUT_OF_MEMORY : WGLLM_ERR_GPU, "%s",
                         r[i].msg[0] ? r[i].msg : "unknown WebGPU error");
    }
  }
  return WGLLM_OK;
}

wgllm_status gpu_buffer_create(gpu_context *ctx, uint64_t size, const char *label, gpu_buffer **out, llm_err *err) {
  *out = NULL;
  if (size == 0) size = 16;
  size = (size + 15) & ~(uint64_t)15;
  if (size > ctx->limits.maxBufferSize) {
    return llm_err_set(err, WGLLM_ERR_OUT_OF_MEMORY,
                       "buffer \"%s\" of %llu bytes exceeds the device's maxBufferSize %llu", label ? label : "",
                       (unsigned long long)size, (unsigned long long)ctx->limits.maxBufferSize);
  }
  if (gpu_alloc_injected(ctx, label, size, err)) return WGLLM_ERR_OUT_OF_MEMORY;
  gpu_buffer *b = calloc(1, sizeof *b);
  if (!b) {
    return llm_err_set(err, WGLLM_ERR_OUT_OF_MEMORY, "out of host memory for buffer \"%s\"", label ? label : "");
  }
  snprintf(b->label, sizeof b->label, "%s", label ? label : "");
  WGPUBufferDescriptor bd = {0};
  bd.size = size;
  bd.usage = WGPUBufferUsage_Storage | WGPUBufferUsage_CopySrc | WGPUBufferUsage_CopyDst | WGPUBufferUsage_Indirect;
  bd.label.data = b->label;
  bd.label.length = strlen(b->label);
  gpu_scope_push(ctx);
  b->handle = wgpuDeviceCreateBuffer(ctx->device, &bd);
  llm_err e2;
  wgllm_status s = gpu_scope_pop(ctx, &e2);
  if (s || !b->handle) {
    llm_err_set(err, s ? s : WGLLM_ERR_OUT_OF_MEMORY, "allocating buffer \"%s\" of %llu bytes failed: %s", b->label,
                (unsigned long long)size, s ? e2.msg : "null handle");
    if (b->handle) wgpuBufferRelease(b->handle);
    free(b);
    return s ? s : WGLLM_ERR_OUT_OF_MEMORY;
  }
  b->size = size;
  ctx->buffers_live++;
  ctx->bytes_live += size;
  if (ctx->bytes_live > ctx->bytes_peak) ctx->bytes_peak = ctx->bytes_live;
  *out = b;
  return WGLLM_OK;
}

void gpu_buffer_destroy(gpu_context *ctx, gpu_buffer *b) {
  if (!b) return;
  if (b->pins > 0) { /* a live recording still uses it: defer */
    b->released = 2;
    return;
  }
  ctx->bytes_live -= b->size;
  ctx->buffers_live--;
  wgpuBufferDestroy(b->handle);
  wgpuBufferRelease(b->handle);
  free(b);
}

wgllm_status gpu_write(gpu_context *ctx, gpu_buffer *b, uint64_t offset, const void *src, uint64_t bytes) {
  if (offset + bytes > b->size || (offset & 3) || (bytes & 3)) return WGLLM_ERR_INVALID_ARG;
  if (bytes) wgpuQueueWriteBuffer(ctx->queue, b->handle, offset, src, bytes);
  return WGLLM_OK;
}

typedef struct map_res {
  int status;
  char msg[256];
} map_res;

static void on_map(WGPUMapAsyncStatus s, WGPUStringView m, void *u1, void *u2) {
  (void)u2;
  map_res *r = u1;
  r->status = s == WGPUMapAsyncStatus_Success ? 1 : -1;
  size_t n = m.data ? (m.length == WGPU_STRLEN ? strlen(m.data) : m.length) : 0;
  if (n >= sizeof r->msg) n = sizeof r->msg - 1;
  if (n) memcpy(r->msg, m.data, n);
  r->msg[n] = 0;
}

wgllm_status gpu_read(gpu_context *ctx, gpu_buffer *b, uint64_t offset, void *dst, uint64_t bytes, llm_err *err) {
  if (offset + bytes > b->size || (offset & 3)) {
    return llm_err_set(err, WGLLM_ERR_INVALID_ARG, "read of %llu bytes at %llu past buffer \"%s\" (%llu bytes)",
                       (unsigned long long)bytes, (unsigned long long)offset, b->label, (unsigned long long)b->size);
  }
  if (!bytes) return WGLLM_OK;
  uint64_t padded = (bytes + 3) & ~(uint64_t)3;
  if (offset + padded > b->size) padded = b->size - offset;
  WGPUBufferDescriptor bd = {0};
  bd.size = (padded + 3) & ~(uint64_t)3;
  bd.usage = WGPUBufferUsage_MapRead | WGPUBufferUsage_CopyDst;
  gpu_scope_push(ctx);
  WGPUBuffer st = wgpuDeviceCreateBuffer(ctx->device, &bd);
  WGPUCommandEncoder enc = wgpuDeviceCreateCommandEncoder(ctx->device, NULL);
  wgpuCommandEncoderCopyBufferToBuffer(enc, b->handle, offset, st, 0, (padded + 3) & ~(uint64_t)3);
  WGPUCommandBuffer cb = wgpuCommandEncoderFinish(enc, NULL);
  wgpuQueueSubmit(ctx->queue, 1, &cb);
  wgpuCommandBufferRelease(cb);
  wgpuCommandEncoderRelease(enc);
  wgllm_status s = gpu_scope_pop(ctx, err);
  if (s) {
    wgpuBufferRelease(st);
    return s;
  }
  map_res r = {0};
  WGPUBufferMapCallbackInfo mi = {0};
  mi.mode = WGPUCallbackMode_WaitAnyOnly;
  mi.callback = on_map;
  mi.userdata1 = &r;
  gpu_wait_future(ctx, wgpuBufferMapAsync(st, WGPUMapMode_Read, 0, bd.size, mi));
  if (r.status != 1) { /* the device's own state (lost, hung, an error) says more than the map's status */
    wgpuBufferRelease(st);
    s = gpu_check(ctx, err);
    if (!s) llm_err_set(err, WGLLM_ERR_GPU, "mapping readback of \"%s\" failed: %s", b->label, r.msg);
    return s ? s : WGLLM_ERR_GPU;
  }
  const void *p = wgpuBufferGetConstMappedRange(st, 0, bd.size);
  if (!p) { /* a lost device maps nothing */
    wgpuBufferUnmap(st);
    wgpuBufferDestroy(st);
    wgpuBufferRelease(st);
    s = gpu_check(ctx, err);
    if (!s) llm_err_set(err, WGLLM_ERR_GPU, "reading \"%s\": the mapped range is unavailable (device lost?)", b->label);
    return s ? s : WGLLM_ERR_GPU;
  }
  memcpy(dst, p, bytes);
  wgpuBufferUnmap(st);
  wgpuBufferDestroy(st);
  wgpuBufferRelease(st);
  return gpu_check(ctx, err);
}

void gpu_inject_alloc_failure(gpu_context *ctx, uint64_t nth) {
  ctx->alloc_count = 0;
  ctx->alloc_fail_at = nth;
}

int gpu_alloc_injected(gpu_context *ctx, const char *what, uint64_t size, llm_err *err) {
  if (!ctx->alloc_fail_at || ++ctx->alloc_count != ctx->alloc_fail_at) return 0;
  llm_err_set(err, WGLLM_ERR_OUT_OF_MEMORY,
              "allocating buffer \"%s\" of %llu bytes failed: injected failure of allocation %llu", what ? what : "",
              (unsigned long long)size, (unsigned long long)ctx->alloc_count);
  return 1;
}

const char *gpu_size_str(uint64_t b, char *buf, size_t n) {
  if (b >= (1ull << 30))
    snprintf(buf, n, "%.2f GiB", (double)b / (1 << 30));
  else if (b >= (1ull << 20))
    snprintf(buf, n, "%.1f MiB", (double)b / (1 << 20));
  else if (b >= 1024)
    snprintf(buf, n, "%.1f KiB", (double)b / 1024);
  else
    snprintf(buf, n, "%llu bytes", (unsigned long long)b);
  return buf;
}

/* the host's MemAvailable in bytes; 0 where /proc/meminfo does not say (another system, the browser) */
static uint64_t host_available(void) {
  FILE *f = fopen("/proc/meminfo", "r");
  if (!f) return 0;
  char line[256];
  unsigned long long kb = 0;
  while (fgets(line, sizeof line, f))
    if (sscanf(line, "MemAvailable: %llu kB", &kb) == 1) break;
  fclose(f);
  return (uint64_t)kb * 1024;
}

uint64_t gpu_memory_left(gpu_context *ctx, char *why, size_t why_len) {
  uint64_t left = UINT64_MAX, live = ctx->bytes_live;
  char a[32], b[32], c[32], w[640] = "";
  if (ctx->device_memory) {
    left = ctx->device_memory > live ? ctx->device_memory - live : 0;
    snprintf(w, sizeof w, "%s has %s of its %s device-local memory left (this context holds %s)", ctx->adapter_name,
             gpu_size_str(left, a, sizeof a), gpu_size_str(ctx->device_memory, b, sizeof b),
             gpu_size_str(live, c, sizeof c));
  }
  if (ctx->memory_budget) {
    uint64_t l = ctx->memory_budget > live ? ctx->memory_budget - live : 0;
    if (l < left) {
      left = l;
      snprintf(w, sizeof w, "the memory budget WGLLM_MEMORY_BUDGET of %s has %s left (this context holds %s)",
               gpu_size_str(ctx->memory_budget, b, sizeof b), gpu_size_str(l, a, sizeof a),
               gpu_size_str(live, c, sizeof c));
    }
  }
  if (ctx->adapter_type && !strcmp(ctx->adapter_type, "CPU")) {
    uint64_t l = host_available();
    if (l && l < left) {
      left = l;
      snprintf(w, sizeof w,
               "the host has %s available (MemAvailable; %s is a CPU adapter, its buffers are host memory)",
               gpu_size_str(l, a, sizeof a), ctx->adapter_name);
    }
  }
  if (why) snprintf(why, why_len, "%s", w[0] ? w : "no limit is known");
  return left;
}

/* ---------- pool ---------- */
struct gpu_pool {
  gpu_buffer **free_list;
  size_t n, cap;
};

gpu_pool *gpu_pool_create(void) { return calloc(1, sizeof(gpu_pool)); }

void gpu_pool_destroy(gpu_context *ctx, gpu_pool *p) {
  for (size_t i = 0; i < p->n; i++)
    gpu_buffer_destroy(ctx, p->free_list[i]);
  free(p->free_list);
  free(p);
}

void gpu_pool_trim(gpu_context *ctx) {
  gpu_pool *p = ctx->pool;
  for (size_t i = 0; i < p->n; i++)
    gpu_buffer_destroy(ctx, p->free_list[i]);
  p->n = 0;
}

/* size classes: multiples of 256 up to 64 KiB, then quarter-powers of two, so reuse wastes < 25% */
static uint64_t size_class(uint64_t size) {
  if (size <= 65536) return (size + 255) & ~(uint64_t)255;
  uint64_t p = 65536;
  while (p < size)
    p <<= 1;
  uint64_t q = p >> 2;
  return ((size + q - 1) / q) * q;
}

wgllm_status gpu_pool_acquire(gpu_context *ctx, uint64_t size, const char *label, gpu_buffer **out, llm_err *err) {
  gpu_pool *p = ctx->pool;
  uint64_t cls = size_class(size ? size : 16);
  for (size_t i = 0; i < p->n; i++) {
    if (p->free_list[i]->size == cls) {
      gpu_buffer *b = p->free_list[i];
      p->free_list[i] = p->free_list[--p->n];
      b->released = 0;
      if (label) snprintf(b->label, sizeof b->label, "%s", label);
      *out = b;
      return WGLLM_OK;
    }
  }
  wgllm_status s = gpu_buffer_create(ctx, cls, label, out, err);
  if (s == WGLLM_OK) (*out)->pooled = 1;
  return s;
}

static void pool_put(gpu_context *ctx, gpu_buffer *b) {
  gpu_pool *p = ctx->pool;
  if (p->n == p->cap) {
    size_t nc = p->cap ? p->cap * 2 : 32;
    gpu_buffer **nl = realloc(p->free_list, nc * sizeof *nl);
    if (!nl) {
      gpu_buffer_destroy(ctx, b);
      return;
    }
    p->free_list = nl;
    p->cap = nc;
  }
  b->released = 0;
  p->free_list[p->n++] = b;
}

void gpu_pool_release(gpu_context *ctx, gpu_buffer *b) {
  if (!b) return;
  if (b->pins > 0) { /* quarantined while a recording lives */
    b->released = 1;
    return;
  }
  pool_put(ctx, b);
}

void gpu_buffer_unpin(gpu_context *ctx, gpu_buffer *b) {
  if (--b->pins > 0) return;
  if (b->released == 1)
    pool_put(ctx, b);
  else if (b->released == 2)
    gpu_buffer_destroy(ctx, b);
}
