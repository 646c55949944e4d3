/* Pipeline cache: one shader module per generated kernel variant, one compute pipeline per
   (kernel, variant, override constants), created on first use and kept for the context's life. */
#include "gpu.h"
#include "gpu_internal.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct pipe_entry {
  char *key;
  WGPUComputePipeline pipe;
} pipe_entry;

typedef struct module_entry {
  const gpu_kernel_source *src;
  WGPUShaderModule module;
} module_entry;

struct gpu_pipeline_cache {
  pipe_entry *pipes;
  size_t n_pipes, cap_pipes;
  module_entry *mods;
  size_t n_mods, cap_mods;
};

gpu_pipeline_cache *gpu_pipeline_cache_create(void) { return calloc(1, sizeof(gpu_pipeline_cache)); }

void gpu_pipeline_cache_destroy(gpu_pipeline_cache *c) {
  for (size_t i = 0; i < c->n_pipes; i++) {
    wgpuComputePipelineRelease(c->pipes[i].pipe);
    free(c->pipes[i].key);
  }
  for (size_t i = 0; i < c->n_mods; i++)
    wgpuShaderModuleRelease(c->mods[i].module);
  free(c->pipes);
  free(c->mods);
  free(c);
}

const gpu_kernel_source *gpu_kernel_find(const char *kernel, const char *variant) {
  for (size_t i = 0; i < gpu_kernel_source_count; i++)
    if (!strcmp(gpu_kernel_sources[i].kernel, kernel) && !strcmp(gpu_kernel_sources[i].variant, variant))
      return &gpu_kernel_sources[i];
  return NULL;
}

static wgllm_status get_module(gpu_context *ctx, const gpu_kernel_source *src, WGPUShaderModule *out, llm_err *err) {
  gpu_pipeline_cache *c = ctx->pipes;
  for (size_t i = 0; i < c->n_mods; i++)
    if (c->mods[i].src == src) {
      *out = c->mods[i].module;
      return WGLLM_OK;
    }
  WGPUShaderSourceWGSL w = {0};
  w.chain.sType = WGPUSType_ShaderSourceWGSL;
  w.code.data = src->source;
  w.code.length = strlen(src->source);
  WGPUShaderModuleDescriptor md = {0};
  md.nextInChain = &w.chain;
  gpu_scope_push(ctx);
  WGPUShaderModule m = wgpuDeviceCreateShaderModule(ctx->device, &md);
  llm_err e2;
  wgllm_status s = gpu_scope_pop(ctx, &e2);
  if (s || !m) {
    /* Tint lists its warnings first (a deprecated builtin, each with its source line): start at the first error
       so that it fits the message */
    const char *why = s ? e2.msg : "null module", *first = strstr(why, " error: ");
    if (first && first != why) {
      while (first > why && first[-1] != '\n')
        first--;
      why = first;
    }
    if (!s) s = WGLLM_ERR_GPU;
    llm_err_set(err, s, "compiling kernel %s/%s failed: %s", src->kernel, src->variant, why);
    if (m) wgpuShaderModuleRelease(m);
    return s;
  }
  if (c->n_mods == c->cap_mods) {
    size_t nc = c->cap_mods ? c->cap_mods * 2 : 32;
    module_entry *nm = realloc(c->mods, nc * sizeof *nm);
    if (!nm) {
      wgpuShaderModuleRelease(m);
      return WGLLM_ERR_OUT_OF_MEMORY;
    }
    c->mods = nm;
    c->cap_mods = nc;
  }
  c->mods[c->n_mods].src = src;
  c->mods[c->n_mods++].module = m;
  *out = m;
  return WGLLM_OK;
}

/* src: the kernel's source, or NULL to find kernel/variant in gpu_kernel_sources (after the cache missed) */
static wgllm_status pipeline_get(gpu_context *ctx, const char *kernel, const char *variant,
                                 const gpu_kernel_source *src, const gpu_constant *consts, int n_consts,
                                 WGPUComputePipeline *out, llm_err *err) {
  char key[512];
  int k = snprintf(key, sizeof key, "%s/%s", kernel, variant);
  for (int i = 0; i < n_consts && k < (int)sizeof key; i++)
    k += snprintf(key + k, sizeof key - k, "|%s=%.17g", consts[i].name, consts[i].value);
  gpu_pipeline_cache *c = ctx->pipes;
  for (size_t i = 0; i < c->n_pipes; i++)
    if (!strcmp(c->pipes[i].key, key)) {
      *out = c->pipes[i].pipe;
      return WGLLM_OK;
    }

  if (!src) src = gpu_kernel_find(kernel, variant);
  if (!src) {
    return llm_err_set(err, WGLLM_ERR_INTERNAL, "no kernel %s with variant %s in the kernel registry", kernel, variant);
  }
  if ((src->requires & GPU_REQ_F16) && !ctx->has_f16) {
    return llm_err_set(err, WGLLM_ERR_UNSUPPORTED, "kernel %s/%s needs shader-f16, which the device did not grant",
                       kernel, variant);
  }
  if ((src->requires & GPU_REQ_SUBGROUPS) && !ctx->has_subgroups) {
    return llm_err_set(err, WGLLM_ERR_UNSUPPORTED, "kernel %s/%s needs subgroups, which the device did not grant",
                       kernel, variant);
  }
  if ((src->requires & GPU_REQ_SUBGROUP_MATRIX) && !ctx->has_subgroup_matrix) {
    return llm_err_set(err, WGLLM_ERR_UNSUPPORTED,
                       "kernel %s/%s needs subgroup matrices, which the device did not grant", kernel, variant);
  }
  WGPUShaderModule m;
  wgllm_status s = get_module(ctx, src, &m, err);
  if (s) return s;
  WGPUConstantEntry ce[16];
  if (n_consts > 16) {
    return llm_err_set(err, WGLLM_ERR_INTERNAL, "too many override constants for %s", kernel);
  }
  for (int i = 0; i < n_consts; i++) {
    memset(&ce[i], 0, sizeof ce[i]);
    ce[i].key.data = consts[i].name;
    ce[i].key.length = strlen(consts[i].name);
    ce[i].value = consts[i].value;
  }
  WGPUComputePipelineDescriptor pd = {0};
  pd.label.data = key;
  pd.label.length = strlen(key);
  pd.compute.module = m;
  pd.compute.entryPoint.data = "main";
  pd.compute.entryPoint.length = 4;
  pd.compute.constantCount = (size_t)n_consts;
  pd.compute.constants = ce;
  gpu_scope_push(ctx);
  WGPUComputePipeline p = wgpuDeviceCreateComputePipeline(ctx->device, &pd);
  llm_err e2;
  s = gpu_scope_pop(ctx, &e2);
  if (s || !p) {
    llm_err_set(err, s ? s : WGLLM_ERR_GPU, "creating pipeline %s failed: %s", key, s ? e2.msg : "null pipeline");
    if (p) wgpuComputePipelineRelease(p);
    return s ? s : WGLLM_ERR_GPU;
  }
  if (c->n_pipes == c->cap_pipes) {
    size_t nc = c->cap_pipes ? c->cap_pipes * 2 : 64;
    pipe_entry *np = realloc(c->pipes, nc * sizeof *np);
    if (!np) {
      wgpuComputePipelineRelease(p);
      return WGLLM_ERR_OUT_OF_MEMORY;
    }
    c->pipes = np;
    c->cap_pipes = nc;
  }
  c->pipes[c->n_pipes].key = strdup(key);
  c->pipes[c->n_pipes++].pipe = p;
  *out = p;
  return WGLLM_OK;
}

wgllm_status gpu_pipeline_get(gpu_context *ctx, const char *kernel, const char *variant, const gpu_constant *consts,
                              int n_consts, WGPUComputePipeline *out, llm_err *err) {
  return pipeline_get(ctx, kernel, variant, NULL, consts, n_consts, out, err);
}

wgllm_status gpu_pipeline_get_source(gpu_context *ctx, const gpu_kernel_source *src, const gpu_constant *consts,
                                     int n_consts, WGPUComputePipeline *out, llm_err *err) {
  return pipeline_get(ctx, src->kernel, src->variant, src, consts, n_consts, out, err);
}
