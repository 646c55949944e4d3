/* Dawn instance, adapter choice, device creation with features and limits, and conversion of Dawn's
   uncaptured errors and device loss into status codes. */
#include "gpu.h"
#include "gpu_internal.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static void sv_copy(char *dst, size_t len, WGPUStringView s) {
  size_t n = 0;
  if (s.data) n = (s.length == WGPU_STRLEN) ? strlen(s.data) : s.length;
  if (n >= len) n = len - 1;
  if (n) memcpy(dst, s.data, n);
  dst[n] = 0;
}

typedef struct adapter_list {
  WGPUAdapter a[16];
  int n;
} adapter_list;

static void on_adapter(WGPURequestAdapterStatus s, WGPUAdapter a, WGPUStringView m, void *u1, void *u2) {
  (void)m;
  (void)u2;
  adapter_list *l = u1;
  if (s == WGPURequestAdapterStatus_Success && a && l->n < 16) l->a[l->n++] = a;
}

typedef struct device_req {
  WGPUDevice dev;
  char msg[GPU_ERR_LEN];
} device_req;

static void on_device(WGPURequestDeviceStatus s, WGPUDevice d, WGPUStringView m, void *u1, void *u2) {
  (void)u2;
  device_req *r = u1;
  if (s == WGPURequestDeviceStatus_Success)
    r->dev = d;
  else
    sv_copy(r->msg, sizeof r->msg, m);
}

static void on_uncaptured(WGPUDevice const *d, WGPUErrorType t, WGPUStringView m, void *u1, void *u2) {
  (void)d;
  (void)u2;
  gpu_context *ctx = u1;
  const char *kind = t == WGPUErrorType_Validation    ? "validation"
                     : t == WGPUErrorType_OutOfMemory ? "out of memory"
                     : t == WGPUErrorType_Internal    ? "internal"
                                                      : "unknown";
  char m2[GPU_ERR_LEN - 64];
  sv_copy(m2, sizeof m2, m);
  pthread_mutex_lock(&ctx->lock);
  if (!ctx->error_pending && !ctx->lost) { /* keep the first: later ones are usually consequences */
    snprintf(ctx->err, sizeof ctx->err, "WebGPU %s error: %s", kind, m2);
    ctx->error_pending = t == WGPUErrorType_OutOfMemory ? 2 : 1;
  }
  pthread_mutex_unlock(&ctx->lock);
}

static void on_lost(WGPUDevice const *d, WGPUDeviceLostReason r, WGPUStringView m, void *u1, void *u2) {
  (void)d;
  (void)u2;
  gpu_context *ctx = u1;
  if (!ctx || r == WGPUDeviceLostReason_Destroyed || r == WGPUDeviceLostReason_CallbackCancelled) return;
  char m2[GPU_ERR_LEN - 64];
  sv_copy(m2, sizeof m2, m);
  pthread_mutex_lock(&ctx->lock);
  if (!ctx->lost) snprintf(ctx->err, sizeof ctx->err, "WebGPU device lost (reason %d): %s", (int)r, m2);
  ctx->lost = 1;
  pthread_mutex_unlock(&ctx->lock);
}

static double now_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

/* Waits for f in slices of 100 ms (or the timeout, when shorter; the instance was created with timed waits) up to
   ctx->wait_timeout_ms. Past that the device counts as hung: lost for every later call, its pending callbacks never run
   (gpu_destroy then leaks the instance rather than have them write into memory that is gone). Returns 1 when f
   completed. */
int gpu_wait_future(gpu_context *ctx, WGPUFuture f) {
  WGPUFutureWaitInfo wi = {f, 0};
  if (ctx->hung) return 0;
  double start = now_ms();
  uint64_t slice_ns = ctx->wait_timeout_ms < 100 ? ctx->wait_timeout_ms * 1000000ull : 100000000ull;
  for (;;) {
    WGPUWaitStatus st = wgpuInstanceWaitAny(ctx->instance, 1, &wi, slice_ns);
    if (st == WGPUWaitStatus_Success) return 1;
    if (st != WGPUWaitStatus_TimedOut) {
      pthread_mutex_lock(&ctx->lock);
      if (!ctx->lost)
        snprintf(ctx->err, sizeof ctx->err, "waiting for the GPU failed (wgpuInstanceWaitAny status %d)", (int)st);
      ctx->lost = 1;
      pthread_mutex_unlock(&ctx->lock);
      return 0;
    }
    if (ctx->wait_timeout_ms && now_ms() - start > ctx->wait_timeout_ms) {
      pthread_mutex_lock(&ctx->lock);
      snprintf(ctx->err, sizeof ctx->err,
               "the GPU did not finish submitted work within %u ms (device hung?); it counts as lost now",
               ctx->wait_timeout_ms);
      ctx->lost = ctx->hung = 1;
      pthread_mutex_unlock(&ctx->lock);
      return 0;
    }
  }
}

/* Dawn's test hooks, exported by the library but not declared in this webgpu.h */
void wgpuDeviceInjectError(WGPUDevice device, WGPUErrorType type, WGPUStringView message);
void wgpuDeviceForceLoss(WGPUDevice device, WGPUDeviceLostReason type, WGPUStringView message);

void gpu_inject_error(gpu_context *ctx, int out_of_memory, const char *msg) {
  wgpuDeviceInjectError(ctx->device, out_of_memory ? WGPUErrorType_OutOfMemory : WGPUErrorType_Validation,
                        (WGPUStringView){msg, WGPU_STRLEN});
}

void gpu_force_loss(gpu_context *ctx, const char *msg) {
  wgpuDeviceForceLoss(ctx->device, WGPUDeviceLostReason_Unknown, (WGPUStringView){msg, WGPU_STRLEN});
  wgpuInstanceProcessEvents(ctx->instance);
}

/* ctx->device_memory: the device-local heaps' bytes, for refusing at load what cannot fit */
static void adapter_memory(gpu_context *ctx) {
  WGPUAdapterPropertiesMemoryHeaps h = {0};
  h.chain.sType = GPU_STYPE_MEMORY_HEAPS;
  WGPUAdapterInfo info = {0};
  info.nextInChain = &h.chain;
  if (wgpuAdapterGetInfo(ctx->adapter, &info) == WGPUStatus_Success && h.heapInfo && h.heapCount < 64) {
    for (size_t i = 0; i < h.heapCount; i++)
      if (h.heapInfo[i].properties & WGPUHeapProperty_DeviceLocal) ctx->device_memory += h.heapInfo[i].size;
    ctx->n_heaps = (uint32_t)h.heapCount;
  }
  if (h.heapInfo) wgpuAdapterPropertiesMemoryHeapsFreeMembers(h);
  info.nextInChain = NULL;
  wgpuAdapterInfoFreeMembers(info);
}

static const char *backend_name(WGPUBackendType b) {
  switch (b) {
  case WGPUBackendType_Vulkan:
    return "Vulkan";
  case WGPUBackendType_Metal:
    return "Metal";
  case WGPUBackendType_D3D12:
    return "D3D12";
  case WGPUBackendType_OpenGL:
    return "OpenGL";
  case WGPUBackendType_Null:
    return "Null";
  default:
    return "other";
  }
}

static const char *adapter_type_name(WGPUAdapterType t) {
  switch (t) {
  case WGPUAdapterType_DiscreteGPU:
    return "discrete GPU";
  case WGPUAdapterType_IntegratedGPU:
    return "integrated GPU";
  case WGPUAdapterType_CPU:
    return "CPU";
  default:
    return "unknown";
  }
}

static int type_rank(WGPUAdapterType t) {
  return t == WGPUAdapterType_DiscreteGPU     ? 3
         : t == WGPUAdapterType_IntegratedGPU ? 2
         : t == WGPUAdapterType_CPU           ? 1
                                              : 0;
}

static int contains_ci(const char *hay, const char *needle) {
  size_t n = strlen(needle);
  for (const char *p = hay; *p; p++) {
    size_t i = 0;
    while (i < n && p[i] && ((p[i] | 32) == (needle[i] | 32)))
      i++;
    if (i == n) return 1;
  }
  return n == 0;
}

/* "4096", "512M", "1.5G": bytes (K, M, G, T powers of 1024); 0 on success, -1 when it is not a size above 0 */
static int parse_budget(const char *v, uint64_t *out) {
  char *end;
  double x = strtod(v, &end);
  static const char units[] = "KMGT";
  if (*end) { /* a unit letter, then nothing, "B" or "iB" */
    const char *u = end[0] & ~0x20 ? strchr(units, end[0] & ~0x20) : NULL, *rest = end + 1;
    if (!u || (*rest && strcmp(rest, "B") && strcmp(rest, "iB"))) return -1;
    for (long i = 0; i <= u - units; i++)
      x *= 1024;
  }
  if (!(x >= 1) || x > 1.8e19) return -1;
  *out = (uint64_t)x;
  return 0;
}

wgllm_status gpu_create(const gpu_options *opt, gpu_context **out, llm_err *err) {
  gpu_options o = {0};
  if (opt) o = *opt;
  *out = NULL;
  gpu_context *ctx = calloc(1, sizeof *ctx);
  if (!ctx) {
    return llm_err_set(err, WGLLM_ERR_OUT_OF_MEMORY, "out of host memory");
  }
  pthread_mutex_init(&ctx->lock, NULL);
  ctx->wait_timeout_ms = o.wait_timeout_ms ? o.wait_timeout_ms : 600000u;

  WGPUInstanceDescriptor idesc = {0};
  WGPUInstanceFeatureName ifeat[] = {WGPUInstanceFeatureName_TimedWaitAny};
  idesc.requiredFeatureCount = 1;
  idesc.requiredFeatures = ifeat;
  ctx->instance = wgpuCreateInstance(&idesc);
  if (!ctx->instance) {
    llm_err_set(err, WGLLM_ERR_NO_ADAPTER, "wgpuCreateInstance failed");
    free(ctx);
    return WGLLM_ERR_NO_ADAPTER;
  }

  /* Ask for each power preference (and the CPU fallback) and pick the best match among the answers. */
  adapter_list list = {0};
  WGPUPowerPreference prefs[] = {WGPUPowerPreference_HighPerformance, WGPUPowerPreference_LowPower};
  for (int i = 0; i < 3; i++) {
    WGPURequestAdapterOptions ao = {0};
    ao.backendType = WGPUBackendType_Vulkan;
    if (i < 2)
      ao.powerPreference = prefs[i];
    else
      ao.forceFallbackAdapter = 1;
    WGPURequestAdapterCallbackInfo ci = {0};
    ci.mode = WGPUCallbackMode_WaitAnyOnly;
    ci.callback = on_adapter;
    ci.userdata1 = &list;
    gpu_wait_future(ctx, wgpuInstanceRequestAdapter(ctx->instance, &ao, ci));
  }
  int best = -1, best_score = -1;
  char names[1024] = "";
  for (int i = 0; i < list.n; i++) {
    WGPUAdapterInfo info = {0};
    wgpuAdapterGetInfo(list.a[i], &info);
    char name[256];
    sv_copy(name, sizeof name, info.device);
    if (!strstr(names, name) && strlen(names) + strlen(name) + 4 < sizeof names) {
      if (names[0]) strcat(names, ", ");
      strcat(names, name);
    }
    int score = type_rank(info.adapterType);
    if (o.adapter_name && o.adapter_name[0]) score = contains_ci(name, o.adapter_name) ? 100 + score : -1;
    if (score > best_score) {
      best_score = score;
      best = i;
    }
    wgpuAdapterInfoFreeMembers(info);
  }
  if (best < 0) {
    if (o.adapter_name && o.adapter_name[0] && list.n)
      llm_err_set(err, WGLLM_ERR_NO_ADAPTER, "no WebGPU adapter matches \"%s\" (found: %s)", o.adapter_name, names);
    else
      llm_err_set(err, WGLLM_ERR_NO_ADAPTER,
                  "no WebGPU adapter found (Vulkan backend; is a Vulkan driver such as Mesa lavapipe installed?)");
    for (int i = 0; i < list.n; i++)
      wgpuAdapterRelease(list.a[i]);
    wgpuInstanceRelease(ctx->instance);
    free(ctx);
    return WGLLM_ERR_NO_ADAPTER;
  }
  for (int i = 0; i < list.n; i++)
    if (i != best) wgpuAdapterRelease(list.a[i]);
  ctx->adapter = list.a[best];

  WGPUAdapterInfo info = {0};
  wgpuAdapterGetInfo(ctx->adapter, &info);
  sv_copy(ctx->adapter_name, sizeof ctx->adapter_name, info.device);
  sv_copy(ctx->adapter_vendor, sizeof ctx->adapter_vendor, info.vendor);
  sv_copy(ctx->adapter_description, sizeof ctx->adapter_description, info.description);
  ctx->backend = backend_name(info.backendType);
  ctx->adapter_type = adapter_type_name(info.adapterType);
  ctx->subgroup_min = info.subgroupMinSize;
  ctx->subgroup_max = info.subgroupMaxSize;
  wgpuAdapterInfoFreeMembers(info);
  adapter_memory(ctx);

  /* Subgroup matrices are asked for only with shader-f16 beside them (every configuration the kernels use is f16),
     and their configurations read once offered (asking for them otherwise is an error in Dawn). */
  int smat_offered = GPU_FEATURE_SUBGROUP_MATRIX && !o.disable_subgroups && !o.disable_f16 &&
                     wgpuAdapterHasFeature(ctx->adapter, GPU_FEATURE_SUBGROUP_MATRIX) &&
                     wgpuAdapterHasFeature(ctx->adapter, GPU_FEATURE_SHADER_F16);
  if (smat_offered) {
    WGPUAdapterInfo si = {0};
    gpu_smat_configs_chain sc = {0};
    sc.chain.sType = GPU_STYPE_SUBGROUP_MATRIX_CONFIGS;
    si.nextInChain = &sc.chain;
    if (wgpuAdapterGetInfo(ctx->adapter, &si) == WGPUStatus_Success)
      for (size_t i = 0; i < sc.count && ctx->n_smat < (int)(sizeof ctx->smat / sizeof ctx->smat[0]); i++)
        ctx->smat[ctx->n_smat++] = sc.configs[i];
    wgpuAdapterInfoFreeMembers(si);
  }

  /* Features: request what we use when offered; note what is missing. */
  WGPUFeatureName feats[5];
  int nf = 0;
  struct {
    WGPUFeatureName f;
    int disabled;
    const char *name;
    int *flag;
  } want[] = {
      {GPU_FEATURE_SHADER_F16, o.disable_f16, "shader-f16", &ctx->has_f16},
      {GPU_FEATURE_SUBGROUPS, o.disable_subgroups, "subgroups", &ctx->has_subgroups},
      {GPU_FEATURE_TIMESTAMP_QUERY, o.disable_timestamps, "timestamp-query", &ctx->has_timestamps},
  };
  if (smat_offered && ctx->n_smat) feats[nf++] = GPU_FEATURE_SUBGROUP_MATRIX;
  for (size_t i = 0; i < sizeof want / sizeof want[0]; i++) {
    int offered = wgpuAdapterHasFeature(ctx->adapter, want[i].f);
    if (offered && !want[i].disabled)
      feats[nf++] = want[i].f;
    else {
      size_t l = strlen(ctx->notices);
      snprintf(ctx->notices + l, sizeof ctx->notices - l, "%s%s %s", l ? "; " : "", want[i].name,
               offered ? "offered but not requested" : "not offered by the adapter");
    }
  }

  /* Limits: ask for everything the adapter offers (the defaults cap storage bindings at 128 MiB). */
  WGPULimits al = WGPU_LIMITS_INIT;
  if (wgpuAdapterGetLimits(ctx->adapter, &al) != WGPUStatus_Success) {
    llm_err_set(err, WGLLM_ERR_NO_ADAPTER, "wgpuAdapterGetLimits failed on %s", ctx->adapter_name);
    gpu_destroy(ctx);
    return WGLLM_ERR_NO_ADAPTER;
  }
  WGPUDeviceDescriptor dd = {0};
  dd.requiredFeatureCount = (size_t)nf;
  dd.requiredFeatures = feats;
  dd.requiredLimits = &al;
  dd.uncapturedErrorCallbackInfo.callback = on_uncaptured;
  dd.uncapturedErrorCallbackInfo.userdata1 = ctx;
  dd.deviceLostCallbackInfo.mode = WGPUCallbackMode_AllowSpontaneous;
  dd.deviceLostCallbackInfo.callback = on_lost;
  dd.deviceLostCallbackInfo.userdata1 = ctx;
  /* Dawn quantizes timestamps (to ~65 us here) unless told not to: per-kernel profiles need the real values.
     The descriptor's sType is the same number in this library (checked: profiles stop being multiples of
     65.536 us). */
  static const char *disabled[] = {"timestamp_quantization"};
  WGPUDawnTogglesDescriptor toggles = {0};
  toggles.chain.sType = WGPUSType_DawnTogglesDescriptor;
  toggles.disabledToggleCount = 1;
  toggles.disabledToggles = disabled;
  char tog_buf[512];
  const char *enabled[17];
  size_t n_enabled = 0;
  /* Dawn's robustness transform clamps every buffer index in every shader; the kernels bound theirs by
     construction (ARCHITECTURE.md, "Kernel bounds"; test_ops' hostile cases), and without the transform the exact
     prefill runs 6-10% faster and decode 3-6% on the H200 (PERF.md). WGLLM_DAWN_ROBUSTNESS=1 keeps it: read here
     rather than at each door so that a safety switch reaches every device the process creates. */
  const char *mb = getenv("WGLLM_MEMORY_BUDGET");
  if (mb && *mb && parse_budget(mb, &ctx->memory_budget)) {
    llm_err_set(err, WGLLM_ERR_INVALID_ARG,
                "WGLLM_MEMORY_BUDGET=%s: not a size (bytes, or a number with K, M, G or T: 512M, 1.5G)", mb);
    gpu_destroy(ctx);
    return WGLLM_ERR_INVALID_ARG;
  }
  const char *re = getenv("WGLLM_DAWN_ROBUSTNESS");
  ctx->robust = o.robust || (re && *re && strcmp(re, "0") != 0);
  if (!ctx->robust) enabled[n_enabled++] = "disable_robustness";
  if (o.enable_toggles && o.enable_toggles[0]) {
    snprintf(tog_buf, sizeof tog_buf, "%s", o.enable_toggles);
    for (char *t = strtok(tog_buf, ","); t && n_enabled < 17; t = strtok(NULL, ","))
      enabled[n_enabled++] = t;
  }
  toggles.enabledToggleCount = n_enabled;
  toggles.enabledToggles = n_enabled ? enabled : NULL;
  dd.nextInChain = &toggles.chain;
  device_req req = {0};
  WGPURequestDeviceCallbackInfo dci = {0};
  dci.mode = WGPUCallbackMode_WaitAnyOnly;
  dci.callback = on_device;
  dci.userdata1 = &req;
  gpu_wait_future(ctx, wgpuAdapterRequestDevice(ctx->adapter, &dd, dci));
  if (!req.dev) {
    llm_err_set(err, WGLLM_ERR_NO_ADAPTER, "device request on %s failed: %s", ctx->adapter_name, req.msg);
    gpu_destroy(ctx);
    return WGLLM_ERR_NO_ADAPTER;
  }
  ctx->device = req.dev;
  ctx->queue = wgpuDeviceGetQueue(ctx->device);
  ctx->has_f16 = !o.disable_f16 && wgpuDeviceHasFeature(ctx->device, GPU_FEATURE_SHADER_F16);
  ctx->has_subgroups = !o.disable_subgroups && wgpuDeviceHasFeature(ctx->device, GPU_FEATURE_SUBGROUPS);
  ctx->has_timestamps = !o.disable_timestamps && wgpuDeviceHasFeature(ctx->device, GPU_FEATURE_TIMESTAMP_QUERY);
  ctx->has_subgroup_matrix = smat_offered && ctx->n_smat && ctx->has_f16 && ctx->has_subgroups &&
                             wgpuDeviceHasFeature(ctx->device, GPU_FEATURE_SUBGROUP_MATRIX);
  if (!ctx->has_subgroup_matrix) ctx->n_smat = 0;
  WGPULimits dl = WGPU_LIMITS_INIT;
  wgpuDeviceGetLimits(ctx->device, &dl);
  ctx->limits = dl;
  ctx->pipes = gpu_pipeline_cache_create();
  ctx->pool = gpu_pool_create();
  if (!ctx->pipes || !ctx->pool) {
    llm_err_set(err, WGLLM_ERR_OUT_OF_MEMORY, "out of host memory");
    gpu_destroy(ctx);
    return WGLLM_ERR_OUT_OF_MEMORY;
  }
  *out = ctx;
  return WGLLM_OK;
}

void gpu_destroy(gpu_context *ctx) {
  if (!ctx) return;
  if (ctx->hung) { /* see gpu_wait_future: the handles are left to the process, only host memory is freed */
    pthread_mutex_destroy(&ctx->lock);
    free(ctx);
    return;
  }
  if (ctx->pool) gpu_pool_destroy(ctx, ctx->pool);
  if (ctx->pipes) gpu_pipeline_cache_destroy(ctx->pipes);
  if (ctx->queue) wgpuQueueRelease(ctx->queue);
  if (ctx->device) {
    wgpuDeviceDestroy(ctx->device);
    wgpuDeviceRelease(ctx->device);
  }
  if (ctx->adapter) wgpuAdapterRelease(ctx->adapter);
  if (ctx->instance) {
    wgpuInstanceProcessEvents(ctx->instance);
    wgpuInstanceRelease(ctx->instance);
  }
  pthread_mutex_destroy(&ctx->lock);
  free(ctx);
}

wgllm_status gpu_lost(gpu_context *ctx, llm_err *err) {
  pthread_mutex_lock(&ctx->lock);
  int lost = ctx->lost;
  if (lost && err) llm_err_set(err, WGLLM_OK, "%s", ctx->err);
  pthread_mutex_unlock(&ctx->lock);
  return lost ? WGLLM_ERR_DEVICE_LOST : WGLLM_OK;
}

wgllm_status gpu_check(gpu_context *ctx, llm_err *err) {
  if (!ctx->hung) wgpuInstanceProcessEvents(ctx->instance);
  wgllm_status s = WGLLM_OK;
  pthread_mutex_lock(&ctx->lock);
  if (ctx->lost) {
    s = llm_err_set(err, WGLLM_ERR_DEVICE_LOST, "%s", ctx->err);
  } else if (ctx->error_pending) {
    s = ctx->error_pending == 2 ? WGLLM_ERR_OUT_OF_MEMORY : WGLLM_ERR_GPU;
    llm_err_set(err, s, "%s", ctx->err);
    ctx->error_pending = 0;
    ctx->err[0] = 0;
  }
  pthread_mutex_unlock(&ctx->lock);
  return s;
}

static void on_done(WGPUQueueWorkDoneStatus s, WGPUStringView m, void *u1, void *u2) {
  (void)m;
  (void)u2;
  *(int *)u1 = s == WGPUQueueWorkDoneStatus_Success ? 1 : -1;
}

wgllm_status gpu_wait_idle(gpu_context *ctx, llm_err *err) {
  int done = 0;
  WGPUQueueWorkDoneCallbackInfo ci = {0};
  ci.mode = WGPUCallbackMode_WaitAnyOnly;
  ci.callback = on_done;
  ci.userdata1 = &done;
  gpu_wait_future(ctx, wgpuQueueOnSubmittedWorkDone(ctx->queue, ci));
  wgllm_status s = gpu_check(ctx, err); /* a wait past the timeout left the device lost */
  if (s) return s;
  if (done != 1) {
    return llm_err_set(err, WGLLM_ERR_GPU, "queue work did not complete");
  }
  return WGLLM_OK;
}

const char *gpu_feature_list(const gpu_context *ctx, char *buf, size_t len) {
  snprintf(buf, len, "%s%s%s%s", ctx->has_f16 ? "shader-f16 " : "", ctx->has_subgroups ? "subgroups " : "",
           ctx->has_timestamps ? "timestamp-query " : "", ctx->has_subgroup_matrix ? "subgroup-matrix " : "");
  size_t n = strlen(buf);
  if (n && buf[n - 1] == ' ') buf[n - 1] = 0;
  return buf;
}
