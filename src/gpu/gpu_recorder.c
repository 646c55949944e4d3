/* The recorder: ops append dispatch records (pipeline, bindings, uniform params, grid or indirect buffer).
   On first run the uniform arena is uploaded and bind groups are created; a kept recording then replays
   by re-encoding the same records, creating no pipeline, bind group or buffer. A one-shot recording may be
   flushed while it is recorded (gpu_recorder_flush: the records so far finalized, encoded and submitted, each
   flush its own uniform buffer), so the GPU runs its first part while the CPU records the rest; its run submits
   what is left. Every buffer a recording binds is pinned (quarantined from pool reuse) until the recording is
   freed. */
#include "gpu.h"
#include "gpu_internal.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

typedef struct record {
  WGPUComputePipeline pipe;
  WGPUBindGroup bg; /* created at finalize */
  gpu_view bind[GPU_MAX_BINDINGS];
  int n_bind;
  int64_t params_off; /* -1: no uniform block */
  uint32_t params_size;
  uint32_t grid[3];
  gpu_view indirect;
  char name[48];
} record;

struct gpu_recorder {
  gpu_context *ctx;
  int keep;
  int finalized;
  int runs;
  record *recs;
  size_t n, cap;
  uint8_t *arena; /* host copy of all uniform blocks */
  size_t arena_size, arena_cap;
  WGPUBuffer *uniforms; /* one per finalized segment: the arena's bytes from its first record on */
  size_t n_uniforms;
  size_t fin_n, fin_arena; /* records [0, fin_n) have their bind groups; the next segment's arena starts here */
  size_t sent;             /* a one-shot recording: records [0, sent) were submitted */
  int flushed;             /* gpu_recorder_flush submitted a part of it */
  int scope_open;          /* finalize pushed its error scope and has not popped it yet (a flushed recording) */
  gpu_buffer **pinned;
  size_t n_pinned, cap_pinned;
  char err[GPU_ERR_LEN];
  wgllm_status failed;   /* sticky: a failed record poisons the recording */
  double last_encode_us; /* CPU time of the last run's encode + submit */
};

static double now_us(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return t.tv_sec * 1e6 + t.tv_nsec * 1e-3;
}

double gpu_recorder_last_encode_us(const gpu_recorder *rec) { return rec->last_encode_us; }

gpu_recorder *gpu_recorder_create(gpu_context *ctx, int keep) {
  gpu_recorder *r = calloc(1, sizeof *r);
  if (!r) return NULL;
  r->ctx = ctx;
  r->keep = keep;
  return r;
}

const char *gpu_recorder_error(const gpu_recorder *rec) { return rec->err; }
gpu_context *gpu_recorder_context(const gpu_recorder *rec) { return rec->ctx; }
size_t gpu_recorder_count(const gpu_recorder *rec) { return rec->n; }
const char *gpu_recorder_record_name(const gpu_recorder *rec, size_t i) { return i < rec->n ? rec->recs[i].name : ""; }

static int pin(gpu_recorder *r, gpu_buffer *b) {
  for (size_t i = 0; i < r->n_pinned; i++)
    if (r->pinned[i] == b) return 1;
  if (r->n_pinned == r->cap_pinned) {
    size_t nc = r->cap_pinned ? r->cap_pinned * 2 : 64;
    gpu_buffer **np = realloc(r->pinned, nc * sizeof *np);
    if (!np) return 0;
    r->pinned = np;
    r->cap_pinned = nc;
  }
  r->pinned[r->n_pinned++] = b;
  b->pins++;
  return 1;
}

static wgllm_status fail(gpu_recorder *r, wgllm_status s, const char *msg) {
  if (!r->failed) {
    r->failed = s;
    snprintf(r->err, sizeof r->err, "%s", msg);
  }
  return r->failed;
}

wgllm_status gpu_recorder_fail(gpu_recorder *r, wgllm_status s, const char *msg) { return fail(r, s, msg); }

/* Whether a dispatch binds what its kernel declares (kernelgen's list): the params block at binding 0 exactly when
   the kernel has a uniform there, then as many storage buffers as it declares, each with the access the caller
   states; why not into e. */
static int bindings_match(const gpu_kernel_source *ks, const gpu_dispatch_desc *d, char *e, size_t elen) {
  const char *want = ks->bindings ? ks->bindings : "";
  int uniform = want[0] == 'u', n_storage = (int)strlen(want) - uniform;
  if (uniform != (d->params_size > 0)) {
    snprintf(e, elen, "kernel %s/%s: %s a params block, its WGSL %s a uniform at binding 0", d->kernel, d->variant,
             d->params_size ? "given" : "not given", uniform ? "declares" : "has no");
    return 0;
  }
  if (d->access && (int)strlen(d->access) != d->n_bind) {
    snprintf(e, elen, "kernel %s/%s: %d bindings but an access list of %zu (\"%s\")", d->kernel, d->variant, d->n_bind,
             strlen(d->access), d->access);
    return 0;
  }
  if (d->n_bind != n_storage) {
    snprintf(e, elen, "kernel %s/%s: %d storage bindings given, its WGSL declares %d (\"%s\")", d->kernel, d->variant,
             d->n_bind, n_storage, want);
    return 0;
  }
  for (int i = 0; d->access && i < n_storage; i++)
    if (d->access[i] != want[uniform + i]) {
      snprintf(e, elen, "kernel %s/%s: binding %d (@binding(%d)) given as %s, its WGSL declares it %s", d->kernel,
               d->variant, i, uniform + i,
               d->access[i] == 'w'   ? "read_write"
               : d->access[i] == 'r' ? "read"
                                     : "?",
               want[uniform + i] == 'w'   ? "read_write"
               : want[uniform + i] == 'r' ? "read"
                                          : "a uniform");
      return 0;
    }
  return 1;
}

wgllm_status gpu_record(gpu_recorder *r, const gpu_dispatch_desc *d) {
  if (r->failed) return r->failed;
  if (r->finalized) return fail(r, WGLLM_ERR_INTERNAL, "gpu_record on a recording that already ran");
  char e[GPU_ERR_LEN];
  if (d->n_bind > GPU_MAX_BINDINGS) return fail(r, WGLLM_ERR_INTERNAL, "too many bindings");
  if (!d->indirect.buf && (d->grid[0] == 0 || d->grid[1] == 0 || d->grid[2] == 0)) {
    snprintf(e, sizeof e, "kernel %s: zero-sized grid %ux%ux%u", d->kernel, d->grid[0], d->grid[1], d->grid[2]);
    return fail(r, WGLLM_ERR_INTERNAL, e);
  }
  uint32_t maxg = r->ctx->limits.maxComputeWorkgroupsPerDimension;
  if (!d->indirect.buf && (d->grid[0] > maxg || d->grid[1] > maxg || d->grid[2] > maxg)) {
    snprintf(e, sizeof e, "kernel %s: grid %ux%ux%u exceeds the device limit %u per dimension", d->kernel, d->grid[0],
             d->grid[1], d->grid[2], maxg);
    return fail(r, WGLLM_ERR_UNSUPPORTED, e);
  }
  /* the C params struct must mirror the kernel's WGSL Params block word for word */
  const gpu_kernel_source *ks = d->source ? d->source : gpu_kernel_find(d->kernel, d->variant);
  if (ks && ks->params_bytes && d->params_size != ks->params_bytes) {
    snprintf(e, sizeof e, "kernel %s/%s: a params block of %u bytes, its WGSL Params has %u", d->kernel, d->variant,
             d->params_size, ks->params_bytes);
    return fail(r, WGLLM_ERR_INTERNAL, e);
  }
  if (ks && !bindings_match(ks, d, e, sizeof e)) return fail(r, WGLLM_ERR_INTERNAL, e);
  record rc;
  memset(&rc, 0, sizeof rc);
  llm_err pe; /* written on failure */
  wgllm_status s = d->source ? gpu_pipeline_get_source(r->ctx, d->source, d->consts, d->n_consts, &rc.pipe, &pe)
                             : gpu_pipeline_get(r->ctx, d->kernel, d->variant, d->consts, d->n_consts, &rc.pipe, &pe);
  if (s) return fail(r, s, pe.msg);
  snprintf(rc.name, sizeof rc.name, "%s/%s", d->kernel, d->variant);
  rc.params_off = -1;
  if (d->params_size) {
    size_t align =
        r->ctx->limits.minUniformBufferOffsetAlignment ? r->ctx->limits.minUniformBufferOffsetAlignment : 256;
    size_t off = (r->arena_size + align - 1) / align * align;
    size_t sz = (d->params_size + 15) & ~(size_t)15;
    if (off + sz > r->arena_cap) {
      size_t nc = r->arena_cap ? r->arena_cap * 2 : 4096;
      while (nc < off + sz)
        nc *= 2;
      uint8_t *na = realloc(r->arena, nc);
      if (!na) return fail(r, WGLLM_ERR_OUT_OF_MEMORY, "out of host memory");
      r->arena = na;
      r->arena_cap = nc;
    }
    memset(r->arena + off, 0, sz);
    memcpy(r->arena + off, d->params, d->params_size);
    rc.params_off = (int64_t)off;
    rc.params_size = (uint32_t)sz;
    r->arena_size = off + sz;
  }
  uint64_t maxbind = r->ctx->limits.maxStorageBufferBindingSize;
  for (int i = 0; i < d->n_bind; i++) {
    gpu_view v = d->bind[i];
    if (!v.buf) {
      snprintf(e, sizeof e, "kernel %s: binding %d is null", d->kernel, i);
      return fail(r, WGLLM_ERR_INTERNAL, e);
    }
    if (v.size == 0) v.size = v.buf->size - v.offset;
    if (v.offset + v.size > v.buf->size || (v.offset % r->ctx->limits.minStorageBufferOffsetAlignment)) {
      snprintf(e, sizeof e, "kernel %s: binding %d range [%llu,+%llu) invalid for buffer \"%s\" of %llu bytes",
               d->kernel, i, (unsigned long long)v.offset, (unsigned long long)v.size, v.buf->label,
               (unsigned long long)v.buf->size);
      return fail(r, WGLLM_ERR_INTERNAL, e);
    }
    if (v.size > maxbind) {
      snprintf(e, sizeof e, "kernel %s: binding %d is %llu bytes, over the device's storage binding limit %llu",
               d->kernel, i, (unsigned long long)v.size, (unsigned long long)maxbind);
      return fail(r, WGLLM_ERR_UNSUPPORTED, e);
    }
    rc.bind[i] = v;
    if (!pin(r, v.buf)) return fail(r, WGLLM_ERR_OUT_OF_MEMORY, "out of host memory");
  }
  rc.n_bind = d->n_bind;
  memcpy(rc.grid, d->grid, sizeof rc.grid);
  rc.indirect = d->indirect;
  if (rc.indirect.buf && !pin(r, rc.indirect.buf)) return fail(r, WGLLM_ERR_OUT_OF_MEMORY, "out of host memory");
  if (r->n == r->cap) {
    size_t nc = r->cap ? r->cap * 2 : 64;
    record *nr = realloc(r->recs, nc * sizeof *nr);
    if (!nr) return fail(r, WGLLM_ERR_OUT_OF_MEMORY, "out of host memory");
    r->recs = nr;
    r->cap = nc;
  }
  r->recs[r->n++] = rc;
  return WGLLM_OK;
}

/* Uploads the arena from fin_arena on into a uniform buffer of its own and creates the bind groups of records
   [fin_n, n); done: no record may be added after (a run), else more may come (a flush). One error scope spans a
   recording's finalizing, its flushes' included (and so their submits), popped when it is done: a pop waits for
   the device, which through JavaScript (the wasm build) costs a round trip through the event loop per scope. */
static wgllm_status finalize(gpu_recorder *r, int done) {
  if (r->finalized) return WGLLM_OK;
  if (done) r->finalized = 1;
  gpu_context *ctx = r->ctx;
  llm_err e;
  if (r->fin_n < r->n) {
    if (!r->scope_open) {
      gpu_scope_push(ctx);
      r->scope_open = 1;
    }
    WGPUBuffer uni = NULL;
    size_t a0 = r->fin_arena;
    if (r->arena_size > a0) {
      WGPUBuffer *nu = realloc(r->uniforms, (r->n_uniforms + 1) * sizeof *nu);
      if (!nu) return fail(r, WGLLM_ERR_OUT_OF_MEMORY, "out of host memory"); /* gpu_recorder_free pops the scope */
      r->uniforms = nu;
      WGPUBufferDescriptor bd = {0};
      bd.size = (r->arena_size - a0 + 15) & ~(size_t)15;
      bd.usage = WGPUBufferUsage_Uniform | WGPUBufferUsage_CopyDst;
      uni = r->uniforms[r->n_uniforms++] = wgpuDeviceCreateBuffer(ctx->device, &bd);
      /* a0 and arena_size are multiples of 16 */
      wgpuQueueWriteBuffer(ctx->queue, uni, 0, r->arena + a0, r->arena_size - a0);
    }
    for (size_t i = r->fin_n; i < r->n; i++) {
      record *rc = &r->recs[i];
      WGPUBindGroupEntry ent[GPU_MAX_BINDINGS + 1];
      int ne = 0, base = 0;
      memset(ent, 0, sizeof ent);
      if (rc->params_off >= 0) {
        ent[0].binding = 0;
        ent[0].buffer = uni;
        ent[0].offset = (uint64_t)rc->params_off - a0;
        ent[0].size = rc->params_size;
        ne = 1;
        base = 1;
      }
      for (int b = 0; b < rc->n_bind; b++) {
        ent[ne].binding = (uint32_t)(base + b);
        ent[ne].buffer = rc->bind[b].buf->handle;
        ent[ne].offset = rc->bind[b].offset;
        ent[ne].size = rc->bind[b].size;
        ne++;
      }
      WGPUBindGroupLayout layout = wgpuComputePipelineGetBindGroupLayout(rc->pipe, 0);
      WGPUBindGroupDescriptor bgd = {0};
      bgd.layout = layout;
      bgd.entryCount = (size_t)ne;
      bgd.entries = ent;
      rc->bg = wgpuDeviceCreateBindGroup(ctx->device, &bgd);
      wgpuBindGroupLayoutRelease(layout);
    }
    r->fin_n = r->n;
    /* the next segment's blocks start at an offset the uniform alignment allows (gpu_record aligns each block) */
    size_t align = ctx->limits.minUniformBufferOffsetAlignment ? ctx->limits.minUniformBufferOffsetAlignment : 256;
    r->fin_arena = (r->arena_size + align - 1) / align * align;
  }
  if (!done || !r->scope_open) return WGLLM_OK;
  r->scope_open = 0;
  wgllm_status s = gpu_scope_pop(ctx, &e);
  if (s) {
    char e2[GPU_ERR_LEN];
    snprintf(e2, sizeof e2, "%s failed: %.900s",
             r->flushed ? "creating bind groups or submitting the flushed parts" : "creating bind groups", e.msg);
    return fail(r, s, e2);
  }
  return WGLLM_OK;
}

static void encode_one(WGPUComputePassEncoder cp, const record *rc) {
  wgpuComputePassEncoderSetPipeline(cp, rc->pipe);
  wgpuComputePassEncoderSetBindGroup(cp, 0, rc->bg, 0, NULL);
  if (rc->indirect.buf)
    wgpuComputePassEncoderDispatchWorkgroupsIndirect(cp, rc->indirect.buf->handle, rc->indirect.offset);
  else
    wgpuComputePassEncoderDispatchWorkgroups(cp, rc->grid[0], rc->grid[1], rc->grid[2]);
}

/* records [from, n) into one compute pass of enc */
static void encode_range(gpu_recorder *r, WGPUCommandEncoder enc, size_t from) {
  if (from >= r->n) return;
  WGPUComputePassEncoder cp = wgpuCommandEncoderBeginComputePass(enc, NULL);
  for (size_t i = from; i < r->n; i++)
    encode_one(cp, &r->recs[i]);
  wgpuComputePassEncoderEnd(cp);
  wgpuComputePassEncoderRelease(cp);
}

wgllm_status gpu_recorder_encode(gpu_recorder *r, WGPUCommandEncoder enc) {
  if (r->failed) return r->failed;
  if (r->runs && !r->keep) return fail(r, WGLLM_ERR_INTERNAL, "a one-shot recording was run twice");
  r->runs++;
  wgllm_status s = finalize(r, 1);
  if (s) return s;
  encode_range(r, enc, r->keep ? 0 : r->sent); /* a one-shot recording: what no flush submitted */
  if (!r->keep) r->sent = r->n;
  return WGLLM_OK;
}

wgllm_status gpu_recorder_flush(gpu_recorder *r) {
  if (r->failed || r->keep || r->sent == r->n) return r->failed;
  if (r->finalized) return fail(r, WGLLM_ERR_INTERNAL, "gpu_recorder_flush on a recording that already ran");
  gpu_context *ctx = r->ctx;
  wgllm_status s = finalize(r, 0);
  if (s) return s;
  WGPUCommandEncoder enc = wgpuDeviceCreateCommandEncoder(ctx->device, NULL);
  encode_range(r, enc, r->sent);
  WGPUCommandBuffer cb = wgpuCommandEncoderFinish(enc, NULL);
  wgpuQueueSubmit(ctx->queue, 1, &cb);
  wgpuCommandBufferRelease(cb);
  wgpuCommandEncoderRelease(enc);
  r->sent = r->n;
  r->flushed = 1;
  return WGLLM_OK;
}

/* Encodes the records (and optionally a copy of src into dst), submits, and times the CPU side. */
static wgllm_status submit(gpu_recorder *r, gpu_view src, WGPUBuffer dst, uint64_t bytes) {
  gpu_context *ctx = r->ctx;
  double t0 = now_us();
  WGPUCommandEncoder enc = wgpuDeviceCreateCommandEncoder(ctx->device, NULL);
  wgllm_status s = gpu_recorder_encode(r, enc);
  if (s) {
    wgpuCommandEncoderRelease(enc);
    return s;
  }
  if (dst) wgpuCommandEncoderCopyBufferToBuffer(enc, src.buf->handle, src.offset, dst, 0, bytes);
  WGPUCommandBuffer cb = wgpuCommandEncoderFinish(enc, NULL);
  wgpuQueueSubmit(ctx->queue, 1, &cb);
  wgpuCommandBufferRelease(cb);
  wgpuCommandEncoderRelease(enc);
  r->last_encode_us = now_us() - t0;
  llm_err e;
  s = gpu_check(ctx, &e);
  if (s) return fail(r, s, e.msg);
  return WGLLM_OK;
}

wgllm_status gpu_recorder_run(gpu_recorder *r) { return submit(r, (gpu_view){0}, NULL, 0); }

typedef struct ts_map {
  int st;
} ts_map;
static void on_ts_map(WGPUMapAsyncStatus s, WGPUStringView m, void *u1, void *u2) {
  (void)m;
  (void)u2;
  ((ts_map *)u1)->st = s == WGPUMapAsyncStatus_Success ? 1 : -1;
}

wgllm_status gpu_recorder_profile(gpu_recorder *r, double *out_ns) {
  gpu_context *ctx = r->ctx;
  if (!ctx->has_timestamps) return fail(r, WGLLM_ERR_UNSUPPORTED, "profiling needs timestamp-query, not granted");
  if (r->flushed) return fail(r, WGLLM_ERR_INTERNAL, "a flushed recording cannot be profiled (its first part ran)");
  wgllm_status s = finalize(r, 1);
  if (s) return s;
  const size_t chunk = 1024; /* records per query set (2 queries each) */
  for (size_t base = 0; base < r->n; base += chunk) {
    size_t cnt = r->n - base < chunk ? r->n - base : chunk;
    WGPUQuerySetDescriptor qd = {0};
    qd.type = WGPUQueryType_Timestamp;
    qd.count = (uint32_t)(2 * cnt);
    WGPUQuerySet qs = wgpuDeviceCreateQuerySet(ctx->device, &qd);
    WGPUBufferDescriptor bd = {0};
    bd.size = 16 * cnt;
    bd.usage = WGPUBufferUsage_QueryResolve | WGPUBufferUsage_CopySrc;
    WGPUBuffer res = wgpuDeviceCreateBuffer(ctx->device, &bd);
    bd.usage = WGPUBufferUsage_MapRead | WGPUBufferUsage_CopyDst;
    WGPUBuffer rb = wgpuDeviceCreateBuffer(ctx->device, &bd);
    WGPUCommandEncoder enc = wgpuDeviceCreateCommandEncoder(ctx->device, NULL);
    for (size_t i = 0; i < cnt; i++) {
      WGPUPassTimestampWrites tw = {0};
      tw.querySet = qs;
      tw.beginningOfPassWriteIndex = (uint32_t)(2 * i);
      tw.endOfPassWriteIndex = (uint32_t)(2 * i + 1);
      WGPUComputePassDescriptor pd = {0};
      pd.timestampWrites = &tw;
      WGPUComputePassEncoder cp = wgpuCommandEncoderBeginComputePass(enc, &pd);
      encode_one(cp, &r->recs[base + i]);
      wgpuComputePassEncoderEnd(cp);
      wgpuComputePassEncoderRelease(cp);
    }
    wgpuCommandEncoderResolveQuerySet(enc, qs, 0, (uint32_t)(2 * cnt), res, 0);
    wgpuCommandEncoderCopyBufferToBuffer(enc, res, 0, rb, 0, bd.size);
    WGPUCommandBuffer cb = wgpuCommandEncoderFinish(enc, NULL);
    wgpuQueueSubmit(ctx->queue, 1, &cb);
    wgpuCommandBufferRelease(cb);
    wgpuCommandEncoderRelease(enc);
    ts_map m = {0};
    WGPUBufferMapCallbackInfo mi = {0};
    mi.mode = WGPUCallbackMode_WaitAnyOnly;
    mi.callback = on_ts_map;
    mi.userdata1 = &m;
    gpu_wait_future(ctx, wgpuBufferMapAsync(rb, WGPUMapMode_Read, 0, bd.size, mi));
    if (m.st == 1) {
      const uint64_t *t = wgpuBufferGetConstMappedRange(rb, 0, bd.size);
      for (size_t i = 0; t && i < cnt; i++)
        out_ns[base + i] = t[2 * i + 1] > t[2 * i] ? (double)(t[2 * i + 1] - t[2 * i]) : 0.0;
      wgpuBufferUnmap(rb);
    }
    wgpuBufferRelease(rb);
    wgpuBufferRelease(res);
    wgpuQuerySetRelease(qs);
    if (m.st != 1) return fail(r, WGLLM_ERR_GPU, "mapping timestamp results failed");
  }
  llm_err e;
  s = gpu_check(ctx, &e);
  if (s) return fail(r, s, e.msg);
  return WGLLM_OK;
}

/* Maps a 2-entry timestamp readback and returns end - begin (0 when not mapped). */
static wgllm_status read_span(gpu_recorder *r, WGPUBuffer rb, double *out_ns) {
  ts_map m = {0};
  WGPUBufferMapCallbackInfo mi = {0};
  mi.mode = WGPUCallbackMode_WaitAnyOnly;
  mi.callback = on_ts_map;
  mi.userdata1 = &m;
  gpu_wait_future(r->ctx, wgpuBufferMapAsync(rb, WGPUMapMode_Read, 0, 16, mi));
  if (m.st != 1) return fail(r, WGLLM_ERR_GPU, "mapping timestamp results failed");
  const uint64_t *t = wgpuBufferGetConstMappedRange(rb, 0, 16);
  if (t) *out_ns = t[1] > t[0] ? (double)(t[1] - t[0]) : 0.0;
  wgpuBufferUnmap(rb);
  return t ? WGLLM_OK : fail(r, WGLLM_ERR_GPU, "timestamp results unavailable (device lost?)");
}

wgllm_status gpu_recorder_time(gpu_recorder *r, double *out_ns) { return gpu_recorder_time_without(r, NULL, out_ns); }

wgllm_status gpu_recorder_time_without(gpu_recorder *r, const char *skip, double *out_ns) {
  gpu_context *ctx = r->ctx;
  if (!ctx->has_timestamps) return fail(r, WGLLM_ERR_UNSUPPORTED, "timing needs timestamp-query, not granted");
  if (r->runs && !r->keep) return fail(r, WGLLM_ERR_INTERNAL, "a one-shot recording was run twice");
  if (r->flushed) return fail(r, WGLLM_ERR_INTERNAL, "a flushed recording cannot be timed (its first part ran)");
  r->runs++;
  wgllm_status s = finalize(r, 1);
  if (s) return s;
  WGPUQuerySetDescriptor qd = {0};
  qd.type = WGPUQueryType_Timestamp;
  qd.count = 2;
  WGPUQuerySet qs = wgpuDeviceCreateQuerySet(ctx->device, &qd);
  WGPUBufferDescriptor bd = {0};
  bd.size = 16;
  bd.usage = WGPUBufferUsage_QueryResolve | WGPUBufferUsage_CopySrc;
  WGPUBuffer res = wgpuDeviceCreateBuffer(ctx->device, &bd);
  bd.usage = WGPUBufferUsage_MapRead | WGPUBufferUsage_CopyDst;
  WGPUBuffer rb = wgpuDeviceCreateBuffer(ctx->device, &bd);
  WGPUCommandEncoder enc = wgpuDeviceCreateCommandEncoder(ctx->device, NULL);
  WGPUPassTimestampWrites tw = {0};
  tw.querySet = qs;
  tw.beginningOfPassWriteIndex = 0;
  tw.endOfPassWriteIndex = 1;
  WGPUComputePassDescriptor pd = {0};
  pd.timestampWrites = &tw;
  WGPUComputePassEncoder cp = wgpuCommandEncoderBeginComputePass(enc, &pd);
  for (size_t i = 0; i < r->n; i++)
    if (!skip || strcmp(r->recs[i].name, skip)) encode_one(cp, &r->recs[i]);
  wgpuComputePassEncoderEnd(cp);
  wgpuComputePassEncoderRelease(cp);
  wgpuCommandEncoderResolveQuerySet(enc, qs, 0, 2, res, 0);
  wgpuCommandEncoderCopyBufferToBuffer(enc, res, 0, rb, 0, 16);
  WGPUCommandBuffer cb = wgpuCommandEncoderFinish(enc, NULL);
  wgpuQueueSubmit(ctx->queue, 1, &cb);
  wgpuCommandBufferRelease(cb);
  wgpuCommandEncoderRelease(enc);
  s = read_span(r, rb, out_ns);
  wgpuBufferRelease(rb);
  wgpuBufferRelease(res);
  wgpuQuerySetRelease(qs);
  llm_err e = {0};
  if (!s) s = gpu_check(ctx, &e);
  if (s && !r->failed) fail(r, s, e.msg);
  return s;
}

void gpu_recorder_free(gpu_recorder *r) {
  if (!r) return;
  if (r->scope_open) /* a flushed recording that failed or never ran: its scope off the device's stack */
    gpu_scope_pop(r->ctx, NULL);
  for (size_t i = 0; i < r->n; i++)
    if (r->recs[i].bg) wgpuBindGroupRelease(r->recs[i].bg);
  for (size_t i = 0; i < r->n_uniforms; i++)
    wgpuBufferRelease(r->uniforms[i]);
  free(r->uniforms);
  for (size_t i = 0; i < r->n_pinned; i++)
    gpu_buffer_unpin(r->ctx, r->pinned[i]);
  free(r->pinned);
  free(r->recs);
  free(r->arena);
  free(r);
}

/* ---------- readback ring ---------- */
typedef struct rb_slot {
  WGPUBuffer buf;
  WGPUFuture future;
  int busy;   /* 1: a copy and its mapping queued; 2: taken by a prepared run not yet submitted */
  int status; /* 1 mapped, -1 failed */
} rb_slot;

struct gpu_readback {
  gpu_context *ctx;
  uint32_t bytes;
  int n, next;
  rb_slot *slots;
};

static void on_rb_map(WGPUMapAsyncStatus s, WGPUStringView m, void *u1, void *u2) {
  (void)m;
  (void)u2;
  ((rb_slot *)u1)->status = s == WGPUMapAsyncStatus_Success ? 1 : -1;
}

gpu_readback *gpu_readback_create(gpu_context *ctx, uint32_t bytes, int slots, const char *label, llm_err *err) {
  if (gpu_alloc_injected(ctx, label, (uint64_t)slots * bytes, err)) return NULL;
  gpu_readback *rb = calloc(1, sizeof *rb);
  if (!rb || !(rb->slots = calloc((size_t)slots, sizeof *rb->slots))) {
    free(rb);
    llm_err_set(err, WGLLM_ERR_OUT_OF_MEMORY, "out of host memory for the readback ring \"%s\"", label);
    return NULL;
  }
  rb->ctx = ctx;
  rb->bytes = (bytes + 3) & ~3u;
  rb->n = slots;
  for (int i = 0; i < slots; i++) {
    WGPUBufferDescriptor bd = {0};
    bd.size = rb->bytes;
    bd.usage = WGPUBufferUsage_MapRead | WGPUBufferUsage_CopyDst;
    gpu_scope_push(ctx);
    rb->slots[i].buf = wgpuDeviceCreateBuffer(ctx->device, &bd);
    llm_err e2;
    wgllm_status s = gpu_scope_pop(ctx, &e2);
    if (s || !rb->slots[i].buf) {
      llm_err_set(err, s ? s : WGLLM_ERR_OUT_OF_MEMORY, "allocating readback ring \"%s\" (%d x %u bytes) failed: %s",
                  label, slots, rb->bytes, s ? e2.msg : "null handle");
      gpu_readback_free(rb);
      return NULL;
    }
  }
  return rb;
}

void gpu_readback_free(gpu_readback *rb) {
  if (!rb) return;
  for (int i = 0; i < rb->n; i++) {
    if (rb->slots[i].busy == 1) gpu_wait_future(rb->ctx, rb->slots[i].future);
    if (rb->slots[i].buf) wgpuBufferRelease(rb->slots[i].buf);
  }
  free(rb->slots);
  free(rb);
}

/* Starts mapping slot sl of rb after the submit that copies into it. */
static void map_slot(gpu_readback *rb, rb_slot *sl) {
  WGPUBufferMapCallbackInfo mi = {0};
  mi.mode = WGPUCallbackMode_WaitAnyOnly;
  mi.callback = on_rb_map;
  mi.userdata1 = sl;
  sl->status = 0;
  sl->future = wgpuBufferMapAsync(sl->buf, WGPUMapMode_Read, 0, rb->bytes, mi);
  sl->busy = 1;
}

wgllm_status gpu_recorder_prepare_readback(gpu_recorder *r, gpu_readback *rb, gpu_view src, gpu_prepared *p) {
  memset(p, 0, sizeof *p);
  if (!r->keep) return fail(r, WGLLM_ERR_INTERNAL, "only a kept recording can be prepared ahead");
  rb_slot *sl = &rb->slots[rb->next];
  if (sl->busy) return WGLLM_ERR_INTERNAL; /* no slot free: nothing prepared (the recording stays usable) */
  WGPUCommandEncoder enc = wgpuDeviceCreateCommandEncoder(r->ctx->device, NULL);
  wgllm_status s = gpu_recorder_encode(r, enc);
  if (!s) {
    wgpuCommandEncoderCopyBufferToBuffer(enc, src.buf->handle, src.offset, sl->buf, 0, rb->bytes);
    p->cb = wgpuCommandEncoderFinish(enc, NULL);
  }
  wgpuCommandEncoderRelease(enc);
  if (s) return s;
  sl->busy = 2;
  p->rec = r;
  p->rb = rb;
  p->slot = rb->next;
  rb->next = (rb->next + 1) % rb->n;
  return WGLLM_OK;
}

wgllm_status gpu_prepared_submit(gpu_prepared *p, int *slot) {
  gpu_recorder *r = p->rec;
  if (!r) return WGLLM_ERR_INTERNAL;
  wgpuQueueSubmit(r->ctx->queue, 1, &p->cb);
  wgpuCommandBufferRelease(p->cb);
  map_slot(p->rb, &p->rb->slots[p->slot]);
  *slot = p->slot;
  memset(p, 0, sizeof *p);
  llm_err e;
  wgllm_status s = gpu_check(r->ctx, &e);
  return s ? fail(r, s, e.msg) : WGLLM_OK;
}

void gpu_prepared_drop(gpu_prepared *p) {
  if (!p->rec) return;
  wgpuCommandBufferRelease(p->cb);
  p->rb->slots[p->slot].busy = 0;
  memset(p, 0, sizeof *p);
}

wgllm_status gpu_recorder_run_readback(gpu_recorder *r, gpu_readback *rb, gpu_view src, int *slot) {
  rb_slot *sl = &rb->slots[rb->next];
  if (sl->busy) return fail(r, WGLLM_ERR_INTERNAL, "readback ring full: collect results before queueing more");
  wgllm_status s = submit(r, src, sl->buf, rb->bytes);
  if (s) return s;
  map_slot(rb, sl);
  *slot = rb->next;
  rb->next = (rb->next + 1) % rb->n;
  return WGLLM_OK;
}

wgllm_status gpu_readback_wait(gpu_readback *rb, int slot, void *dst, llm_err *err) {
  rb_slot *sl = &rb->slots[slot];
  if (sl->busy != 1) {
    return llm_err_set(err, WGLLM_ERR_INTERNAL, "readback slot %d has nothing queued", slot);
  }
  gpu_wait_future(rb->ctx, sl->future);
  sl->busy = 0;
  if (sl->status != 1) {
    wgllm_status s = gpu_check(rb->ctx, err);
    if (!s) llm_err_set(err, WGLLM_ERR_GPU, "mapping a readback slot failed");
    return s ? s : WGLLM_ERR_GPU;
  }
  const void *p = wgpuBufferGetConstMappedRange(sl->buf, 0, rb->bytes);
  if (dst && p) memcpy(dst, p, rb->bytes);
  wgpuBufferUnmap(sl->buf);
  return gpu_check(rb->ctx, err);
}
