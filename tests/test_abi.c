/* The webgpu.h header (react-native-webgpu 0.10.2) comes from a newer Dawn than the library
   (bun-webgpu 0.1.7). This test fails loudly if they disagree on what the engine relies on: enum values
   of features and statuses, struct sizes the library writes into (guard bytes must stay untouched),
   and the behaviour of the calls the platform layer makes. */
#include <stdlib.h>
#include <string.h>
#include "harness.h"

typedef struct guarded_limits {
  WGPULimits l;
  unsigned char guard[256];
} guarded_limits;

typedef struct guarded_info {
  WGPUAdapterInfo i;
  unsigned char guard[256];
} guarded_info;

static int guard_intact(const unsigned char *g, size_t n) {
  for (size_t i = 0; i < n; i++) if (g[i] != 0xA5) return 0;
  return 1;
}

int main(void) {
  /* enum values the platform layer and kernels rely on (from the WebGPU standard header) */
  CHECK(WGPUFeatureName_ShaderF16 == 0x0B, "ShaderF16 enum %x", (unsigned)WGPUFeatureName_ShaderF16);
  CHECK(WGPUFeatureName_Subgroups == 0x12, "Subgroups enum %x", (unsigned)WGPUFeatureName_Subgroups);
  CHECK(WGPUFeatureName_TimestampQuery == 0x09, "TimestampQuery enum %x", (unsigned)WGPUFeatureName_TimestampQuery);
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
  CHECK(listed_f16 == (int)wgpuAdapterHasFeature(ctx->adapter, WGPUFeatureName_ShaderF16), "f16 list vs HasFeature");
  CHECK(listed_sg == (int)wgpuAdapterHasFeature(ctx->adapter, WGPUFeatureName_Subgroups), "subgroups list vs HasFeature");
  CHECK(listed_ts == (int)wgpuAdapterHasFeature(ctx->adapter, WGPUFeatureName_TimestampQuery), "timestamps list vs HasFeature");
  CHECK(sf.featureCount > 0 && sf.featureCount < 256, "feature count %zu plausible", sf.featureCount);
  wgpuSupportedFeaturesFreeMembers(sf);
  if (ctx->has_f16) CHECK(wgpuDeviceHasFeature(ctx->device, WGPUFeatureName_ShaderF16), "device has f16 as granted");

  /* WGPULimits: the library writes no further than our struct, and the values are sane */
  guarded_limits gl;
  memset(&gl, 0xA5, sizeof gl);
  gl.l.nextInChain = NULL;
  CHECK(wgpuAdapterGetLimits(ctx->adapter, &gl.l) == WGPUStatus_Success, "GetLimits");
  CHECK(guard_intact(gl.guard, sizeof gl.guard), "library wrote past WGPULimits (header/library size mismatch)");
  CHECK(gl.l.maxStorageBufferBindingSize >= (128ull << 20), "maxStorageBufferBindingSize %llu",
        (unsigned long long)gl.l.maxStorageBufferBindingSize);
  CHECK(gl.l.maxComputeWorkgroupSizeX >= 256 && gl.l.maxComputeInvocationsPerWorkgroup >= 256, "workgroup limits");
  CHECK(gl.l.maxComputeWorkgroupsPerDimension >= 65535, "workgroups per dimension %u", gl.l.maxComputeWorkgroupsPerDimension);
  CHECK(gl.l.minStorageBufferOffsetAlignment >= 4 && gl.l.minStorageBufferOffsetAlignment <= 256, "storage alignment");
  CHECK(gl.l.maxStorageBuffersPerShaderStage >= 8, "storage buffers per stage %u", gl.l.maxStorageBuffersPerShaderStage);
  /* the device got the adapter's storage binding limit, not the 128 MiB default */
  CHECK(ctx->limits.maxStorageBufferBindingSize == gl.l.maxStorageBufferBindingSize, "device got adapter's binding limit");

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
  char err[512];
  CHECK(gpu_pipeline_get(ctx, "rms_norm", "f32", NULL, 0, &p, err, sizeof err) == WGLLM_OK, "%s", err);
  th_gpu_done();
  return th_finish("test_abi");
}
