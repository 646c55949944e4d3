/* The webgpu.h header (react-native-webgpu 0.10.2) comes from a newer Dawn than the library
   (bun-webgpu 0.1.7). This test fails loudly if they disagree on what the engine relies on: enum values
   of features and statuses, struct sizes the library writes into (guard bytes must stay untouched),
   and the behaviour of the calls the platform layer makes. */
#include "harness.h"
#include <stdlib.h>
#include <string.h>

typedef struct guarded_limits {
  WGPULimits l;
  unsigned char guard[256];
} guarded_limits;

typedef struct guarded_info {
  WGPUAdapterInfo i;
  unsigned char guard[256];
} guarded_info;

static int guard_intact(const unsigned char *g, size_t n) {
  for (size_t i = 0; i < n; i++)
    if (g[i] != 0xA5) return 0;
  return 1;
}

enum { PROBE_F16, PROBE_SUBGROUPS, PROBE_TIMESTAMP };
static WGPUDevice g_probe_dev;
static int g_probe_err;
static void on_probe_dev(WGPURequestDeviceStatus s, WGPUDevice d, WGPUStringView m, void *u1, void *u2) {
  g_probe_dev = s == WGPURequestDeviceStatus_Success ? d : NULL;
}
static void on_probe_pop(WGPUPopErrorScopeStatus s, WGPUErrorType t, WGPUStringView m, void *u1, void *u2) {
  g_probe_err = s != WGPUPopErrorScopeStatus_Success || t != WGPUErrorType_NoError;
}

/* Creates a device with only feature f and checks that the capability it should bring works. */
static int feature_enables(gpu_context *ctx, WGPUFeatureName f, int what) {
  WGPUDeviceDescriptor dd = {0};
  dd.requiredFeatureCount = 1;
  dd.requiredFeatures = &f;
  WGPURequestDeviceCallbackInfo ci = {0};
  ci.mode = WGPUCallbackMode_WaitAnyOnly;
  ci.callback = on_probe_dev;
  WGPUFutureWaitInfo wi = {wgpuAdapterRequestDevice(ctx->adapter, &dd, ci), 0};
  wgpuInstanceWaitAny(ctx->instance, 1, &wi, UINT64_MAX);
  if (!g_probe_dev) return 0;
  WGPUDevice dev = g_probe_dev;
  wgpuDevicePushErrorScope(dev, WGPUErrorFilter_Validation);
  if (what == PROBE_TIMESTAMP) {
    WGPUQuerySetDescriptor qd = {0};
    qd.type = WGPUQueryType_Timestamp;
    qd.count = 2;
    WGPUQuerySet qs = wgpuDeviceCreateQuerySet(dev, &qd);
    if (qs) wgpuQuerySetRelease(qs);
  } else {
    const char *src =
        what == PROBE_F16
            ? "enable f16;\n@group(0) @binding(0) var<storage,read_write> a: array<f16>;\n"
              "@compute @workgroup_size(1) fn main() { a[0] = a[0] + f16(1.0); }"
            : "enable subgroups;\n@group(0) @binding(0) var<storage,read_write> a: array<u32>;\n"
              "@compute @workgroup_size(32) fn main(@builtin(subgroup_size) s: u32) { a[0] = subgroupAdd(s); }";
    WGPUShaderSourceWGSL w = {0};
    w.chain.sType = WGPUSType_ShaderSourceWGSL;
    w.code.data = src;
    w.code.length = strlen(src);
    WGPUShaderModuleDescriptor md = {0};
    md.nextInChain = &w.chain;
    WGPUShaderModule m = wgpuDeviceCreateShaderModule(dev, &md);
    if (m) wgpuShaderModuleRelease(m);
  }
  WGPUPopErrorScopeCallbackInfo pci = {0};
  pci.mode = WGPUCallbackMode_WaitAnyOnly;
  pci.callback = on_probe_pop;
  wi.future = wgpuDevicePopErrorScope(dev, pci);
  wgpuInstanceWaitAny(ctx->instance, 1, &wi, UINT64_MAX);
  wgpuDeviceDestroy(dev);
  wgpuDeviceRelease(dev);
  return !g_probe_err;
}

int main(void) {
  CHECK(WGPURequestAdapterStatus_Success == 1, "adapter Success must be 1");
  CHECK(WGPUBufferUsage_Storage == 0x80 && WGPUBufferUsage_Indirect == 0x100 && WGPUBufferUsage_Uniform == 0x40,
        "buffer usage bits");

  gpu_context *ctx = th_gpu();
  /* features: the library's list and HasFeature agree, and what we enabled is in the device's list */
  WGPUSupportedFeatures sf = {0};
  wgpuAdapterGetFeatures(ctx->adapter, &sf);
  int listed_f16 = 0, listed_sg = 0, listed_ts = 0;
  for (size_t i = 0; i < sf.featureCount; i++) {
    listed_f16 |= sf.features[i] == WGPUFeatureName_ShaderF16;
    listed_sg |= sf.features[i] == WGPUFeatureName_Subgroups;
    listed_ts |= sf.features[i] == WGPUFeatureName_TimestampQuery;
  }
  /* On the H200 this library lists 0x0A in wgpuAdapterGetFeatures but answers HasFeature(0x0A) = false and
     refuses a device with it (measured 2026-11-30): the engine trusts HasFeature plus a working probe. */
  printf("adapter feature list:");
  for (size_t i = 0; i < sf.featureCount; i++)
    printf(" 0x%x", (unsigned)sf.features[i]);
  printf("\n");
  int has_f16 = wgpuAdapterHasFeature(ctx->adapter, GPU_FEATURE_SHADER_F16);
  int has_sg = wgpuAdapterHasFeature(ctx->adapter, GPU_FEATURE_SUBGROUPS);
  int has_ts = wgpuAdapterHasFeature(ctx->adapter, GPU_FEATURE_TIMESTAMP_QUERY);
  if (listed_f16 != has_f16 || listed_sg != has_sg || listed_ts != has_ts)
    printf("note: feature list and HasFeature disagree (f16 %d/%d, subgroups %d/%d, timestamps %d/%d)\n", listed_f16,
           has_f16, listed_sg, has_sg, listed_ts, has_ts);
  CHECK(sf.featureCount > 0 && sf.featureCount < 256, "feature count %zu plausible", sf.featureCount);
  wgpuSupportedFeaturesFreeMembers(sf);
  if (ctx->has_f16) CHECK(wgpuDeviceHasFeature(ctx->device, GPU_FEATURE_SHADER_F16), "device has f16 as granted");
  /* the feature values we use really enable what they name, and the header's values do not (if this
     starts failing because they now agree, the library was updated: drop the GPU_FEATURE_* overrides) */
  if (has_f16)
    CHECK(feature_enables(ctx, GPU_FEATURE_SHADER_F16, PROBE_F16), "GPU_FEATURE_SHADER_F16 does not enable f16");
  CHECK(!feature_enables(ctx, WGPUFeatureName_ShaderF16, PROBE_F16),
        "header ShaderF16 now enables f16: library updated?");
  if (has_sg)
    CHECK(feature_enables(ctx, GPU_FEATURE_SUBGROUPS, PROBE_SUBGROUPS),
          "GPU_FEATURE_SUBGROUPS does not enable subgroups");
  if (has_ts)
    CHECK(feature_enables(ctx, GPU_FEATURE_TIMESTAMP_QUERY, PROBE_TIMESTAMP),
          "GPU_FEATURE_TIMESTAMP_QUERY does not enable timestamps");
  CHECK(ctx->has_f16 == (has_f16 && !getenv("WGLLM_TEST_NO_F16")) && ctx->has_subgroups == has_sg &&
            ctx->has_timestamps == has_ts,
        "the context's features differ from the adapter's");
  /* the context's own device really compiles f16 WGSL when it says it has f16 */
  if (ctx->has_f16) {
    WGPUComputePipeline p16;
    llm_err e16 = {0};
    CHECK(gpu_pipeline_get(ctx, "kv_write", "f16", NULL, 0, &p16, &e16) == WGLLM_OK, "f16 kernel: %s", e16.msg);
  }

  /* WGPULimits: the library writes no further than our struct, and the values are sane */
  guarded_limits gl;
  memset(&gl, 0xA5, sizeof gl);
  gl.l.nextInChain = NULL;
  CHECK(wgpuAdapterGetLimits(ctx->adapter, &gl.l) == WGPUStatus_Success, "GetLimits");
  CHECK(guard_intact(gl.guard, sizeof gl.guard), "library wrote past WGPULimits (header/library size mismatch)");
  CHECK(gl.l.maxStorageBufferBindingSize >= (128ull << 20), "maxStorageBufferBindingSize %llu",
        (unsigned long long)gl.l.maxStorageBufferBindingSize);
  CHECK(gl.l.maxComputeWorkgroupSizeX >= 256 && gl.l.maxComputeInvocationsPerWorkgroup >= 256, "workgroup limits");
  CHECK(gl.l.maxComputeWorkgroupsPerDimension >= 65535, "workgroups per dimension %u",
        gl.l.maxComputeWorkgroupsPerDimension);
  CHECK(gl.l.minStorageBufferOffsetAlignment >= 4 && gl.l.minStorageBufferOffsetAlignment <= 256, "storage alignment");
  CHECK(gl.l.maxStorageBuffersPerShaderStage >= 8, "storage buffers per stage %u",
        gl.l.maxStorageBuffersPerShaderStage);
  /* the device got the adapter's storage binding limit, not the 128 MiB default */
  CHECK(ctx->limits.maxStorageBufferBindingSize == gl.l.maxStorageBufferBindingSize,
        "device got adapter's binding limit");

  guarded_info gi;
  memset(&gi, 0xA5, sizeof gi);
  gi.i.nextInChain = NULL;
  CHECK(wgpuAdapterGetInfo(ctx->adapter, &gi.i) == WGPUStatus_Success, "GetInfo");
  CHECK(guard_intact(gi.guard, sizeof gi.guard), "library wrote past WGPUAdapterInfo");
  CHECK(gi.i.device.data != NULL && gi.i.device.length > 0 && gi.i.device.length < 1024, "adapter name view");
  CHECK(gi.i.backendType == WGPUBackendType_Vulkan, "backend %d", (int)gi.i.backendType);
  wgpuAdapterInfoFreeMembers(gi.i);

  /* a WGSL program using what our kernels use (uniform + storage, override, workgroup memory) compiles */
  WGPUComputePipeline p;
  llm_err err = {0};
  CHECK(gpu_pipeline_get(ctx, "rms_norm", "f32", NULL, 0, &p, &err) == WGLLM_OK, "%s", err.msg);
  th_gpu_done();
  return th_finish("test_abi");
}
