/* `wgllm info --gpu`: the adapter, backend, features and the limits the engine got. */
#include <stdio.h>
#include <string.h>
#include "cli.h"
#include "gpu.h"

static int info_gpu(int no_f16) {
  char err[1024];
  gpu_context *ctx;
  gpu_options o = {0};
  o.disable_f16 = no_f16;
  wgllm_status s = gpu_create(&o, &ctx, err, sizeof err);
  if (s) { fprintf(stderr, "wgllm info: %s (%s)\n", err, wgllm_status_name(s)); return 1; }
  char feats[128];
  printf("adapter:      %s\n", ctx->adapter_name);
  if (ctx->adapter_description[0]) printf("description:  %s\n", ctx->adapter_description);
  printf("vendor:       %s\n", ctx->adapter_vendor);
  printf("backend:      %s\n", ctx->backend);
  printf("type:         %s\n", ctx->adapter_type);
  printf("features:     %s\n", gpu_feature_list(ctx, feats, sizeof feats));
  if (ctx->notices[0]) printf("not granted:  %s\n", ctx->notices);
  printf("subgroup size: %u..%u\n", ctx->subgroup_min, ctx->subgroup_max);
  const WGPULimits *l = &ctx->limits;
  printf("limits:\n");
  printf("  maxStorageBufferBindingSize       %llu\n", (unsigned long long)l->maxStorageBufferBindingSize);
  printf("  maxBufferSize                     %llu\n", (unsigned long long)l->maxBufferSize);
  printf("  maxUniformBufferBindingSize       %llu\n", (unsigned long long)l->maxUniformBufferBindingSize);
  printf("  maxStorageBuffersPerShaderStage   %u\n", l->maxStorageBuffersPerShaderStage);
  printf("  maxComputeWorkgroupStorageSize    %u\n", l->maxComputeWorkgroupStorageSize);
  printf("  maxComputeInvocationsPerWorkgroup %u\n", l->maxComputeInvocationsPerWorkgroup);
  printf("  maxComputeWorkgroupSize           %u x %u x %u\n", l->maxComputeWorkgroupSizeX, l->maxComputeWorkgroupSizeY,
         l->maxComputeWorkgroupSizeZ);
  printf("  maxComputeWorkgroupsPerDimension  %u\n", l->maxComputeWorkgroupsPerDimension);
  printf("  minStorageBufferOffsetAlignment   %u\n", l->minStorageBufferOffsetAlignment);
  printf("  minUniformBufferOffsetAlignment   %u\n", l->minUniformBufferOffsetAlignment);
  printf("kernels:      %zu generated variants\n", gpu_kernel_source_count);
  gpu_destroy(ctx);
  return 0;
}

int cli_info(int argc, char **argv) {
  int gpu = 0, no_f16 = 0;
  for (int i = 1; i < argc; i++) {
    if (!strcmp(argv[i], "--gpu")) gpu = 1;
    else if (!strcmp(argv[i], "--no-f16")) no_f16 = 1;
    else if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) {
      printf("usage: wgllm info --gpu [--no-f16]\n"
             "  --gpu      print the adapter, backend, features and limits the engine gets\n"
             "  --no-f16   do not request shader-f16 (simulates a device without it)\n"
             "  WGLLM_ADAPTER=NAME picks an adapter by (part of) its name\n");
      return 0;
    } else { fprintf(stderr, "wgllm info: unknown option '%s'\n", argv[i]); return 2; }
  }
  if (!gpu) gpu = 1;
  return info_gpu(no_f16);
}
