/* The public descriptions (include/wgllm.h): what a model file holds (read from the file alone: as text for
   `wgllm info`, and its shape as numbers) and what the GPU wgllm would use offers. */
#include "api_internal.h"
#include "gguf.h"
#include "gpu.h"
#include "model.h"
#include "session.h"
#include "wgllm.h"
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* A growing malloc'd string. */
typedef struct text {
  char *p;
  size_t n, cap;
  int oom;
} text;

static void put(text *t, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  char line[1024];
  int k = vsnprintf(line, sizeof line, fmt, ap);
  va_end(ap);
  if (k < 0 || t->oom) return;
  size_t len = (size_t)k < sizeof line ? (size_t)k : sizeof line - 1;
  if (t->n + len + 1 > t->cap) {
    size_t nc = t->cap ? 2 * t->cap : 1024;
    while (nc < t->n + len + 1)
      nc *= 2;
    char *np = realloc(t->p, nc);
    if (!np) {
      t->oom = 1;
      return;
    }
    t->p = np;
    t->cap = nc;
  }
  memcpy(t->p + t->n, line, len);
  t->n += len;
  t->p[t->n] = 0;
}

wgllm_status wgllm_file_info_read(const char *path, wgllm_file_info *info) {
  if (!path || !info) return WGLLM_ERR_INVALID_ARG;
  memset(info, 0, sizeof *info);
  llm_err err = {0};
  wt_store *st;
  wgllm_status s = llm_open_store(path, &st, &err);
  if (s) return api_fail_at(s, path, &err);
  llm_hparams hp;
  s = llm_read_hparams(st, &hp, &err);
  if (!s) {
    snprintf(info->architecture, sizeof info->architecture, "%s", hp.arch_name);
    info->n_vocab = hp.n_vocab;
    info->n_embd = hp.n_embd;
    info->n_layer = hp.n_layer;
    info->train_context = hp.train_ctx;
    for (size_t i = 0; i < wt_count(st); i++)
      info->tensor_bytes += wt_at(st, i)->nbytes;
    llm_hparams_free(&hp);
  }
  wt_store_free(st);
  return s ? api_fail_at(s, path, &err) : WGLLM_OK;
}

static wgllm_status finish(text *t, char **out) {
  if (t->oom || !t->p) {
    free(t->p);
    return WGLLM_ERR_OUT_OF_MEMORY;
  }
  *out = t->p;
  return WGLLM_OK;
}

wgllm_status wgllm_describe_file(const char *path, char **out) {
  if (!path || !out) return WGLLM_ERR_INVALID_ARG;
  *out = NULL;
  llm_err err = {0};
  wt_store *st;
  wgllm_status s = llm_open_store(path, &st, &err);
  if (s == WGLLM_ERR_UNSUPPORTED && gguf_open_any(path, &st, &err) == WGLLM_OK)
    s = WGLLM_OK; /* a GGUF with tensor types wgllm does not read: described, not runnable */
  if (s) {
    return api_fail_at(s, path, &err); /* as the create calls: the reason is the thread's last error */
  }
  text t = {0};
  put(&t, "file:         %s (%s)\n", path, wt_store_format(st) == WT_FORMAT_GGUF ? "GGUF" : "safetensors");
  llm_hparams hp;
  uint64_t n_unsup = gguf_unsupported_count(st);
  wgllm_status hs = WGLLM_OK;
  if (n_unsup) {
    uint32_t ty;
    const char *tn, *first;
    uint64_t b;
    first = gguf_unsupported(st, 0, &ty, &tn, &b);
    const char *a = gguf_get_str(st, "general.architecture");
    llm_err_set(&err, WGLLM_ERR_UNSUPPORTED,
                "%s: %llu tensors of ggml types wgllm does not read (first: '%s', type %u %s)", a ? a : "?",
                (unsigned long long)n_unsup, first, ty, tn);
    hs = WGLLM_ERR_UNSUPPORTED;
  } else
    hs = llm_read_hparams(st, &hp, &err);
  if (hs)
    put(&t, "architecture: not runnable: %s (%s)\n", err.msg, wgllm_status_name(hs));
  else {
    put(&t, "architecture: %s\n", hp.arch_name);
    put(&t, "vocab %u, hidden %u, layers %u, heads %u, kv heads %u, head_dim %u, ffn %u\n", hp.n_vocab, hp.n_embd,
        hp.n_layer, hp.n_head, hp.n_head_kv, hp.head_dim, hp.n_ff);
    put(&t, "rms eps %g, rope %s (%s, %u dims), train context %u\n", hp.norm_eps, hp.rope_desc,
        hp.rope_mode == OP_ROPE_HALF ? "half-split" : "adjacent pairs", hp.rot_dim, hp.train_ctx);
    put(&t, "tied embeddings %s, qkv bias %s, qk norm %s, bos %d, eos %d\n", hp.tied_embeddings ? "yes" : "no",
        hp.qkv_bias ? "yes" : "no", hp.qk_norm ? "yes" : "no", hp.bos, hp.eos);
    llm_err perr = {0};
    if (llm_read_pooling(path, st, &hp, &perr))
      put(&t, "embeddings:   not computable: %s\n", perr.msg);
    else if (hp.pooling != LLM_POOLING_UNSPECIFIED || hp.no_lm_head)
      put(&t, "embeddings:   pooling %s%s%s\n", llm_pooling_name(hp.pooling),
          hp.pooling_normalize ? ", L2-normalised" : "",
          hp.no_lm_head ? "; no LM head: it embeds only (wgllm embed, /v1/embeddings)" : "");
    if (hp.arch == LLM_ARCH_GEMMA3) {
      uint32_t n_local = 0;
      for (uint32_t l = 0; l < hp.n_layer; l++)
        n_local += llm_layer_is_local(&hp, l);
      put(&t,
          "gemma: %s norms, sandwich norms, GELU-tanh GLU, embeddings x %g, attention scale %g, sliding window %u "
          "on %u of %u layers\n",
          hp.norm_offset ? "(1+w)" : "(1+w stored)", hp.embed_scale, hp.attn_scale, hp.window, n_local, hp.n_layer);
    }
    if (llm_has_moe(&hp)) {
      uint32_t n_moe = 0;
      for (uint32_t l = 0; l < hp.n_layer; l++)
        n_moe += llm_layer_is_moe(&hp, l);
      char dense[64] = "";
      if (n_moe < hp.n_layer) snprintf(dense, sizeof dense, " (the others a dense MLP of %u)", hp.n_ff);
      static const char *const weights[3] = {"the softmax's", "renormalised", "the softmax of the top k"};
      put(&t, "experts:      %u, %u used a token, %u wide, on %u of %u layers%s; top-k weights %s\n", hp.n_expert,
          hp.n_expert_used, hp.n_ff_exp, n_moe, hp.n_layer, dense, weights[hp.moe_norm % 3]);
      if (hp.moe_oai_glu) {
        uint32_t n_local = 0;
        for (uint32_t l = 0; l < hp.n_layer; l++)
          n_local += llm_layer_is_local(&hp, l);
        put(&t,
            "gpt-oss:      attention sinks, biased q/k/v/o, router and experts, clamped SwiGLU (alpha %g, limit %g), "
            "sliding window %u on %u of %u layers\n",
            hp.moe_glu_alpha, hp.moe_glu_limit, hp.window, n_local, hp.n_layer);
      }
    }
    {
      uint64_t total, active;
      llm_param_counts(&hp, &total, &active);
      if (total != active)
        put(&t, "parameters:   %.4g M, %.4g M active a token\n", total / 1e6, active / 1e6);
      else
        put(&t, "parameters:   %.4g M\n", total / 1e6);
    }
    if (hp.arch == LLM_ARCH_GEMMA4) {
      uint32_t n_local = 0, n_shared = 0;
      for (uint32_t l = 0; l < hp.n_layer; l++) {
        n_local += llm_layer_is_local(&hp, l);
        n_shared += !llm_layer_owns_kv(&hp, l);
      }
      put(&t,
          "gemma4: sliding window %u on %u of %u layers (head_dim %u; full layers %u), %u layers read an earlier "
          "layer's KV cache, per-layer inputs %u wide, logit softcap %g\n",
          hp.window, n_local, hp.n_layer, hp.inv_freq_local ? hp.rot_dim_local : hp.head_dim, hp.head_dim, n_shared,
          hp.ple_dim, hp.final_softcap);
    }
    /* a session at the default context (the trained length, at most LLM_DEFAULT_CTX; a prefill pass of 512 or 1024
       tokens): what llm_session_estimate counts, less the device's limits */
    uint32_t ctx = hp.train_ctx && hp.train_ctx < LLM_DEFAULT_CTX ? hp.train_ctx : LLM_DEFAULT_CTX;
    uint32_t chunk = llm_prefill_chunk(NULL, &hp);
    char a[32], b[32], c[32], d[32];
    put(&t, "session:      at a context of %u (the default): KV cache %s f32 (%s f16), RoPE tables %s, scratch %s\n",
        ctx, gpu_size_str(llm_kv_cache_bytes(&hp, ctx, chunk, 0), a, sizeof a),
        gpu_size_str(llm_kv_cache_bytes(&hp, ctx, chunk, 1), b, sizeof b),
        gpu_size_str(llm_rope_table_bytes(&hp, ctx, 0) + llm_rope_table_bytes(&hp, ctx, 1), c, sizeof c),
        gpu_size_str(llm_scratch_bytes(&hp, chunk, chunk) + llm_scratch_bytes(&hp, 1, 1), d, sizeof d));
    llm_hparams_free(&hp);
  }
  uint64_t bytes[WT_DTYPE_COUNT] = {0}, count[WT_DTYPE_COUNT] = {0}, total = 0;
  for (size_t i = 0; i < wt_count(st); i++) {
    const wt_tensor *w = wt_at(st, i);
    bytes[w->dtype] += w->nbytes;
    count[w->dtype]++;
    total += w->nbytes;
  }
  /* the unread types, per ggml type id */
  uint64_t ubytes[64] = {0}, ucount[64] = {0};
  const char *uname[64] = {0};
  for (uint64_t i = 0; i < n_unsup; i++) {
    uint32_t ty;
    const char *tn;
    uint64_t b;
    gguf_unsupported(st, i, &ty, &tn, &b);
    ty = ty < 63 ? ty : 63;
    ubytes[ty] += b;
    ucount[ty]++;
    uname[ty] = ty < 63 ? tn : "unknown";
    total += b;
  }
  put(&t, "tensors:      %llu, %.2f MB\n", (unsigned long long)(wt_count(st) + n_unsup), total / 1e6);
  for (int d = 0; d < WT_DTYPE_COUNT; d++)
    if (count[d])
      put(&t, "  %-7s %6llu tensors %12llu bytes\n", wt_dtype_name((wt_dtype)d), (unsigned long long)count[d],
          (unsigned long long)bytes[d]);
  for (int d = 0; d < 64; d++)
    if (ucount[d])
      put(&t, "  %-7s %6llu tensors %12llu bytes  (not read by wgllm)\n", uname[d], (unsigned long long)ucount[d],
          (unsigned long long)ubytes[d]);
  wt_store_free(st);
  s = finish(&t, out);
  return s ? s : hs;
}

wgllm_status wgllm_describe_gpu(const char *adapter, int disable_f16, char **out) {
  if (!out) return WGLLM_ERR_INVALID_ARG;
  *out = NULL;
  llm_err err = {0};
  gpu_context *ctx;
  gpu_options o = {0};
  o.adapter_name = adapter ? adapter : getenv("WGLLM_ADAPTER"); /* the environment is read here, at the door */
  o.disable_f16 = disable_f16;
  wgllm_status s = gpu_create(&o, &ctx, &err);
  if (s) {
    return llm_err_copy(api_last_error(), &err);
  }
  text t = {0};
  put(&t, "adapter:      %s\n", ctx->adapter_name);
  if (ctx->adapter_description[0]) put(&t, "description:  %s\n", ctx->adapter_description);
  put(&t, "vendor:       %s\n", ctx->adapter_vendor);
  put(&t, "backend:      %s\n", ctx->backend);
  put(&t, "type:         %s\n", ctx->adapter_type);
  if (ctx->device_memory)
    put(&t, "memory:       %.2f GiB device-local (%u heap%s)\n", ctx->device_memory / 1073741824.0, ctx->n_heaps,
        ctx->n_heaps == 1 ? "" : "s");
  else
    put(&t, "memory:       not reported by the library\n");
  char feats[256];
  put(&t, "features:     %s\n", gpu_feature_list(ctx, feats, sizeof feats));
  if (ctx->notices[0]) put(&t, "not granted:  %s\n", ctx->notices);
  put(&t, "subgroup size: %u..%u\n", ctx->subgroup_min, ctx->subgroup_max);
  put(&t, "robustness:   %s\n",
      ctx->robust ? "Dawn's bounds checks kept (WGLLM_DAWN_ROBUSTNESS)" : "off, the kernels bound their indices");
  const WGPULimits *l = &ctx->limits;
  put(&t, "limits:\n");
  put(&t, "  maxStorageBufferBindingSize       %llu\n", (unsigned long long)l->maxStorageBufferBindingSize);
  put(&t, "  maxBufferSize                     %llu\n", (unsigned long long)l->maxBufferSize);
  put(&t, "  maxUniformBufferBindingSize       %llu\n", (unsigned long long)l->maxUniformBufferBindingSize);
  put(&t, "  maxStorageBuffersPerShaderStage   %u\n", l->maxStorageBuffersPerShaderStage);
  put(&t, "  maxComputeWorkgroupStorageSize    %u\n", l->maxComputeWorkgroupStorageSize);
  put(&t, "  maxComputeInvocationsPerWorkgroup %u\n", l->maxComputeInvocationsPerWorkgroup);
  put(&t, "  maxComputeWorkgroupSize           %u x %u x %u\n", l->maxComputeWorkgroupSizeX,
      l->maxComputeWorkgroupSizeY, l->maxComputeWorkgroupSizeZ);
  put(&t, "  maxComputeWorkgroupsPerDimension  %u\n", l->maxComputeWorkgroupsPerDimension);
  put(&t, "  minStorageBufferOffsetAlignment   %u\n", l->minStorageBufferOffsetAlignment);
  put(&t, "  minUniformBufferOffsetAlignment   %u\n", l->minUniformBufferOffsetAlignment);
  put(&t, "kernels:      %zu generated variants\n", gpu_kernel_source_count);
  gpu_destroy(ctx);
  return finish(&t, out);
}
