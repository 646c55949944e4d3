/* `wgllm info --gpu`: the adapter, backend, features and the limits the engine got. */
#include "cli.h"
#include "gpu.h"
#include "model.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int info_gpu(int no_f16, const char *adapter) {
  char err[1024];
  gpu_context *ctx;
  gpu_options o = {0};
  o.disable_f16 = no_f16;
  o.adapter_name = adapter ? adapter : getenv("WGLLM_ADAPTER");
  wgllm_status s = gpu_create(&o, &ctx, err, sizeof err);
  if (s) {
    fprintf(stderr, "wgllm info: %s (%s)\n", err, wgllm_status_name(s));
    return 1;
  }
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

/* Architecture, hyperparameters, tensor count and types, and bytes by type of a model file. No GPU needed. */
static int info_model(const char *path) {
  char err[1024];
  wt_store *st;
  wgllm_status s = llm_open_store(path, &st, err, sizeof err);
  if (s) {
    fprintf(stderr, "wgllm info: %s: %s (%s)\n", path, err, wgllm_status_name(s));
    return 1;
  }
  printf("file:         %s (%s)\n", path, wt_store_format(st) == WT_FORMAT_GGUF ? "GGUF" : "safetensors");
  llm_hparams hp;
  s = llm_read_hparams(st, &hp, err, sizeof err);
  if (s)
    printf("architecture: not runnable: %s (%s)\n", err, wgllm_status_name(s));
  else {
    printf("architecture: %s\n", hp.arch_name);
    printf("vocab %u, hidden %u, layers %u, heads %u, kv heads %u, head_dim %u, ffn %u\n", hp.n_vocab, hp.n_embd,
           hp.n_layer, hp.n_head, hp.n_head_kv, hp.head_dim, hp.n_ff);
    printf("rms eps %g, rope %s (%s, %u dims), train context %u\n", hp.norm_eps, hp.rope_desc,
           hp.rope_mode == OP_ROPE_HALF ? "half-split" : "adjacent pairs", hp.rot_dim, hp.train_ctx);
    printf("tied embeddings %s, qkv bias %s, qk norm %s, bos %d, eos %d\n", hp.tied_embeddings ? "yes" : "no",
           hp.qkv_bias ? "yes" : "no", hp.qk_norm ? "yes" : "no", hp.bos, hp.eos);
    if (hp.arch == LLM_ARCH_GEMMA3) {
      uint32_t n_local = 0;
      for (uint32_t l = 0; hp.layer_local && l < hp.n_layer; l++)
        n_local += hp.layer_local[l];
      printf("gemma: (1+w) norms, sandwich norms, GELU-tanh GLU, embeddings x %g, attention scale %g, "
             "sliding window %u on %u of %u layers\n",
             hp.embed_scale, hp.attn_scale, hp.window, n_local, hp.n_layer);
    }
    llm_hparams_free(&hp);
  }
  uint64_t bytes[5] = {0}, count[5] = {0}, total = 0;
  for (size_t i = 0; i < wt_count(st); i++) {
    const wt_tensor *t = wt_at(st, i);
    bytes[t->dtype] += t->nbytes;
    count[t->dtype]++;
    total += t->nbytes;
  }
  printf("tensors:      %zu, %.2f MB\n", wt_count(st), total / 1e6);
  for (int d = 0; d < 5; d++)
    if (count[d])
      printf("  %-5s %6llu tensors %12llu bytes\n", wt_dtype_name((wt_dtype)d), (unsigned long long)count[d],
             (unsigned long long)bytes[d]);
  wt_store_free(st);
  return s ? 1 : 0;
}

int cli_info(int argc, char **argv) {
  int gpu = 0, no_f16 = 0;
  const char *model = NULL, *adapter = NULL;
  for (int i = 1; i < argc; i++) {
    if (!strcmp(argv[i], "--gpu"))
      gpu = 1;
    else if (!strcmp(argv[i], "--no-f16"))
      no_f16 = 1;
    else if ((!strcmp(argv[i], "-m") || !strcmp(argv[i], "--model")) && i + 1 < argc)
      model = argv[++i];
    else if (!strcmp(argv[i], "--adapter") && i + 1 < argc)
      adapter = argv[++i];
    else if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) {
      printf("usage: wgllm info --gpu [--no-f16] [--adapter NAME]\n"
             "       wgllm info -m PATH\n"
             "  -m PATH    architecture, hyperparameters, tensors and bytes by type of a model\n"
             "  --gpu      print the adapter, backend, features and limits the engine gets\n"
             "  --no-f16   do not request shader-f16 (simulates a device without it)\n"
             "  --adapter NAME (or WGLLM_ADAPTER=NAME) picks an adapter by (part of) its name\n");
      return 0;
    } else {
      fprintf(stderr, "wgllm info: unknown option '%s'\n", argv[i]);
      return 2;
    }
  }
  if (model) {
    int rc = info_model(model);
    if (rc || !gpu) return rc;
  }
  return info_gpu(no_f16, adapter);
}
