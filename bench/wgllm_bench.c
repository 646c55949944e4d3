/* `wgllm bench`: prefill and decode speed of a model file or a synthetic model of a real shape, after a
   warm-up, as the median of several runs; dispatches and CPU encode time per token; memory; per-kernel GPU
   time with --profile; JSON with --json. --write-gguf writes the synthetic model as a GGUF file. */
#include "cli.h"
#include "gpu.h"
#include "model.h"
#include "model_synthetic.h"
#include "session.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static double now_s(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return t.tv_sec + t.tv_nsec * 1e-9;
}

static int g_sampled; /* --sampling default: temperature, top-k, top-p, min-p and penalty instead of greedy */

static int cmp_d(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return x < y ? -1 : x > y;
}

static double median(double *v, int n) {
  qsort(v, (size_t)n, sizeof *v, cmp_d);
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

static void usage(FILE *f) {
  fprintf(
      f, "usage: wgllm bench (-m PATH | --synthetic NAME) [--prompt P] [--gen G] [--runs R]\n"
         "                   [--kv f32|f16] [--ctx N] [--prefill-chunk N] [--group 32|64|128] [--weights "
         "native|q4[:G]] [--json] [--profile]\n"
         "                   [--pipeline 1..3]  (decode steps kept in flight, default 2)\n"
         "                   [--unfused] [--attn-grid worst|indirect] [--dawn-toggles a,b]  (comparisons)\n"
         "  --prompt 128,2048,8192 and --kv-list f32,f16 measure every combination on one loaded model\n"
         "  --prefill-runs N: timed prefills (default min(runs, 3)); decode runs rewind to the prompt\n"
         "  --sampled: sample with the CLI defaults (t 0.8, top-k 40, top-p 0.95, min-p 0.05, penalty 1.1)\n"
         "       wgllm bench --synthetic NAME --write-gguf OUT.gguf  (the Llama shapes)\n"
         "  synthetic NAME: llama-1b, llama-8b (Llama-3.2-1B, Llama-3.1-8B), gemma4 (Gemma 4 text, Gemma4TextConfig's\n"
         "  sizes, 10 KV-shared layers), gemma4-noshare (the same without KV sharing), tiny, gemma4-tiny (tests)\n"
         "  decode is timed at a context of P tokens (the prompt), greedy sampling on the GPU, one token id\n"
         "  read back per step; defaults: --prompt 128 --gen 64 --runs 5\n");
}

typedef struct prof_row {
  char name[48];
  double ns;
  int count;
} prof_row;

/* One measurement: a session of P + G tokens, prefill and decode timings, optional per-kernel profile. */
static int bench_one(const cli_common *c, gpu_context *gpu, llm_model *m, const char *synthetic, uint32_t P, uint32_t G,
                     uint32_t runs, uint32_t prefill_runs, int depth, int kv_f16, int json, int profile) {
  char err[1024];
  wgllm_status st;
  llm_session_options so = {0};
  so.ctx = c->ctx ? c->ctx : P + G + 8;
  so.kv_f16 = kv_f16;
  so.unfused = c->unfused;
  so.attn_grid = (llm_attn_grid)c->attn_grid;
  so.prefill_chunk = c->prefill_chunk;
  llm_session *s;
  st = llm_session_create(m, &so, &s, err, sizeof err);
  if (st) {
    fprintf(stderr, "wgllm bench: %s\n", err);
    return 1;
  }
  if (P + G + 1 > so.ctx) {
    fprintf(stderr, "wgllm bench: --ctx %u is too small for %u + %u tokens\n", so.ctx, P, G);
    return 2;
  }
  int32_t *ids = malloc(P * sizeof *ids);
  for (uint32_t i = 0; i < P; i++)
    ids[i] = (int32_t)((i * 2654435761u) % m->hp.n_vocab);
  op_sample_params greedy = {0.0f, 1.0f, 0.0f, 1.0f, 0, 0, 1};
  op_sample_params sampled = {0.8f, 0.95f, 0.05f, 1.1f, 40, 64, 1}; /* the CLI's defaults */
  st = llm_session_set_sampler(s, g_sampled ? &sampled : &greedy, ids, P);
  double *pre = calloc(runs, sizeof *pre), *dec = calloc(runs, sizeof *dec), *enc = calloc(runs, sizeof *enc);
  int32_t tok;
  /* prefill: a warm-up, then timed runs (at most 3: long prompts are slow to redo); decode: every run rewinds to
     the prompt and decodes G tokens at context P */
  uint32_t pre_runs = prefill_runs;
  for (uint32_t r = 0; !st && r <= pre_runs; r++) { /* the warm-up prefill is short: it only compiles pipelines */
    llm_session_reset(s);
    double t0 = now_s();
    st = llm_session_prefill_sample(s, ids, r ? P : (P < 256 ? P : 256), &tok);
    if (r > 0) pre[r - 1] = now_s() - t0;
  }
  for (uint32_t r = 0; !st && r <= runs; r++) { /* run 0 is the warm-up */
    llm_session_rewind(s, P);
    double t1 = now_s(), enc_sum = 0;
    uint32_t queued = 0;
    for (uint32_t g = 0; !st && g < G; g++) { /* as the generation loop does: `depth` steps in flight */
      while (!st && s->in_flight < depth && queued < G) {
        st = llm_session_step_submit(s);
        enc_sum += gpu_recorder_last_encode_us(s->last_step);
        queued++;
      }
      if (!st) st = llm_session_step_collect(s, &tok);
    }
    double t2 = now_s();
    if (r > 0) {
      dec[r - 1] = (t2 - t1) / G;
      enc[r - 1] = enc_sum / G;
    }
  }
  if (st) {
    fprintf(stderr, "wgllm bench: %s (%s)\n", s->err, wgllm_status_name(st));
    llm_session_free(s);
    return 1;
  }
  double pre_s = median(pre, (int)pre_runs), dec_s = median(dec, (int)runs), enc_us = median(enc, (int)runs);
  /* GPU time of one replayed step alone (one pass, dispatches back to back): what the step costs the GPU,
     against the wall time per token above, which adds whatever the GPU waits for */
  double gpu_ns = 0;
  gpu_recorder *step = llm_session_step(s, P); /* the length bucket the timed steps replayed */
  if (!step) st = s->step_status;
  if (!st && gpu->has_timestamps) {
    double t[3];
    for (int i = 0; !st && i < 3; i++)
      st = gpu_recorder_time(step, &t[i]);
    if (!st) gpu_ns = median(t, 3);
  }
  size_t dispatches = st ? 0 : gpu_recorder_count(step);
  const char *model_name = synthetic ? synthetic : c->model;
  if (json) {
    printf("{\"adapter\": \"%s\", \"model\": \"%s\", \"weights\": \"%s\", \"kv_dtype\": \"%s\", \"context\": %u, "
           "\"prompt_tokens\": %u, \"gen_tokens\": %u, \"runs\": %u, \"attn_grid\": \"%s\", \"sampling\": \"%s\", "
           "\"prefill_tok_s\": %.1f, \"ttft_ms\": %.2f, \"prefill_chunk\": %u, \"decode_tok_s\": %.2f, "
           "\"decode_ms_per_token\": %.4f, \"gpu_us_per_step\": %.1f, \"dispatches_per_token\": %zu, "
           "\"cpu_encode_us_per_token\": %.1f, "
           "\"pipeline\": %d, "
           "\"kv_bytes\": %llu, \"weight_bytes\": %llu, \"gpu_bytes_peak\": %llu}\n",
           gpu->adapter_name, model_name, m->weights_desc, s->kv.f16 ? "f16" : "f32", P, P, G, runs,
           s->opt.attn_grid == LLM_ATTN_GRID_INDIRECT ? "indirect" : "worst-case",
           g_sampled ? "t0.8 k40 p0.95 minp0.05 rep1.1" : "greedy", P / pre_s, pre_s * 1e3, s->opt.prefill_chunk,
           1.0 / dec_s, dec_s * 1e3, gpu_ns / 1e3, dispatches, enc_us, depth, (unsigned long long)s->kv.bytes,
           (unsigned long long)m->weight_bytes, (unsigned long long)gpu->bytes_peak);
  } else {
    printf("adapter %s, model %s (%s), KV %s, context %u\n", gpu->adapter_name, model_name, m->weights_desc,
           s->kv.f16 ? "f16" : "f32", P);
    printf("prefill %u tokens: %.3f s (%.1f tok/s) in passes of %u; time to first token %.3f s\n", P, pre_s, P / pre_s,
           s->opt.prefill_chunk, pre_s);
    printf("decode: %.3f ms/token (%.2f tok/s), GPU %.1f us/step, %zu dispatches/token, CPU encode %.1f us/token\n",
           dec_s * 1e3, 1.0 / dec_s, gpu_ns / 1e3, dispatches, enc_us);
    printf("memory: weights %.1f MB, KV %.1f MB, GPU peak %.1f MB\n", m->weight_bytes / 1e6, s->kv.bytes / 1e6,
           gpu->bytes_peak / 1e6);
  }
  if (!st && profile) {
    size_t n = gpu_recorder_count(step);
    double *ns = calloc(n, sizeof *ns);
    prof_row *rows = calloc(n, sizeof *rows);
    size_t nr = 0;
    double total = 0;
    st = gpu_recorder_profile(step, ns);
    if (st) fprintf(stderr, "wgllm bench: --profile: %s\n", gpu_recorder_error(step));
    for (size_t i = 0; !st && i < n; i++) {
      const char *name = gpu_recorder_record_name(step, i);
      size_t j = 0;
      while (j < nr && strcmp(rows[j].name, name))
        j++;
      if (j == nr) snprintf(rows[nr++].name, sizeof rows[0].name, "%s", name);
      rows[j].ns += ns[i];
      rows[j].count++;
      total += ns[i];
    }
    if (!st) {
      fprintf(json ? stderr : stdout,
              "per-kernel GPU time of one decode step (each dispatch in its own pass): %.3f ms\n", total / 1e6);
      for (size_t j = 0; j < nr; j++)
        fprintf(json ? stderr : stdout, "  %-24s %4d x  %9.1f us  %5.1f%%\n", rows[j].name, rows[j].count,
                rows[j].ns / 1e3, 100 * rows[j].ns / total);
    }
    free(ns);
    free(rows);
  }
  free(ids);
  free(pre);
  free(dec);
  free(enc);
  llm_session_free(s);
  return st ? 1 : 0;
}

static int open_gpu(const cli_common *c, gpu_context **gpu) {
  char err[1024];
  gpu_options o = {0};
  o.adapter_name = c->adapter ? c->adapter : getenv("WGLLM_ADAPTER");
  o.disable_f16 = c->no_f16;
  o.enable_toggles = c->toggles;
  wgllm_status s = gpu_create(&o, gpu, err, sizeof err);
  if (s) {
    fprintf(stderr, "wgllm bench: %s (%s)\n", err, wgllm_status_name(s));
    return 1;
  }
  return 0;
}

static int load_model(const cli_common *c, gpu_context **gpu, llm_model **m) {
  char err[1024];
  llm_load_options lo = {0};
  wgllm_status st = llm_parse_weight_policy(c->weights, &lo.weights, err, sizeof err);
  if (st) {
    fprintf(stderr, "wgllm bench: %s\n", err);
    return 2;
  }
  if (open_gpu(c, gpu)) return 1;
  st = llm_model_load(*gpu, c->model, &lo, m, err, sizeof err);
  if (st) {
    fprintf(stderr, "wgllm bench: %s: %s (%s)\n", c->model, err, wgllm_status_name(st));
    gpu_destroy(*gpu);
    return 1;
  }
  return 0;
}

int main(int argc, char **argv) {
  cli_common c = {0};
  const char *synthetic = NULL, *write_gguf = NULL;
  uint32_t Ps[8] = {128}, nP = 1, G = 64, runs = 5, group = 32;
  int kvs[2] = {0}, nkv = 0;
  uint32_t prefill_runs = 0;
  int depth = 2;
  int json = 0, profile = 0;
  for (int i = 1; i < argc; i++) {
    int r = cli_common_arg(&c, argc, argv, &i);
    if (r < 0) return 2;
    if (r) continue;
    const char *a = argv[i];
    if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
      usage(stdout);
      return 0;
    }
    if (!strcmp(a, "--json")) {
      json = 1;
      continue;
    }
    if (!strcmp(a, "--profile")) {
      profile = 1;
      continue;
    }
    if (!strcmp(a, "--sampled")) {
      g_sampled = 1;
      continue;
    }
    if (i + 1 >= argc) {
      fprintf(stderr, "wgllm bench: %s needs a value\n", a);
      return 2;
    }
    const char *v = argv[++i];
    if (!strcmp(a, "--synthetic"))
      synthetic = v;
    else if (!strcmp(a, "--write-gguf"))
      write_gguf = v;
    else if (!strcmp(a, "--prompt")) { /* one length or a comma list: one result per length */
      nP = 0;
      for (char *q = (char *)v; *q && nP < 8;) {
        Ps[nP++] = (uint32_t)strtoul(q, &q, 10);
        if (*q == ',')
          q++;
        else if (*q) {
          fprintf(stderr, "wgllm bench: --prompt %s: expected N or N,N,...\n", v);
          return 2;
        }
      }
    } else if (!strcmp(a, "--kv-list")) {
      nkv = 0;
      if (strstr(v, "f32")) kvs[nkv++] = 0;
      if (strstr(v, "f16")) kvs[nkv++] = 1;
    } else if (!strcmp(a, "--gen"))
      G = (uint32_t)strtoul(v, NULL, 10);
    else if (!strcmp(a, "--runs"))
      runs = (uint32_t)strtoul(v, NULL, 10);
    else if (!strcmp(a, "--group"))
      group = (uint32_t)strtoul(v, NULL, 10);
    else if (!strcmp(a, "--pipeline"))
      depth = atoi(v);
    else if (!strcmp(a, "--prefill-runs"))
      prefill_runs = (uint32_t)strtoul(v, NULL, 10);
    else {
      fprintf(stderr, "wgllm bench: unknown option '%s'\n", a);
      usage(stderr);
      return 2;
    }
  }
  char err[1024];
  if (write_gguf) {
    if (!synthetic) {
      fprintf(stderr, "wgllm bench: --write-gguf needs --synthetic NAME\n");
      return 2;
    }
    wgllm_status s = llm_synthetic_write_gguf(synthetic, write_gguf, err, sizeof err);
    if (s) {
      fprintf(stderr, "wgllm bench: %s\n", err);
      return 1;
    }
    printf("wrote %s\n", write_gguf);
    return 0;
  }
  if (!!synthetic == !!c.model) {
    fprintf(stderr, "wgllm bench: give either -m PATH or --synthetic NAME\n");
    return 2;
  }
  if (depth < 1 || depth > LLM_MAX_IN_FLIGHT) {
    fprintf(stderr, "wgllm bench: --pipeline 1..%d\n", LLM_MAX_IN_FLIGHT);
    return 2;
  }
  for (uint32_t i = 0; i < nP; i++)
    if (!Ps[i]) {
      fprintf(stderr, "wgllm bench: prompt lengths must be positive\n");
      return 2;
    }
  if (!G || !runs) {
    fprintf(stderr, "wgllm bench: --prompt, --gen and --runs must be positive\n");
    return 2;
  }
  gpu_context *gpu;
  llm_model *m;
  wgllm_status st;
  if (synthetic) {
    if (open_gpu(&c, &gpu)) return 1;
    st = llm_model_synthetic(gpu, synthetic, group, &m, err, sizeof err);
    if (st) {
      fprintf(stderr, "wgllm bench: %s (%s)\n", err, wgllm_status_name(st));
      gpu_destroy(gpu);
      return 1;
    }
  } else if (load_model(&c, &gpu, &m))
    return 1;
  if (!nkv) {
    kvs[0] = c.kv_f16;
    nkv = 1;
  }
  int rc = 0;
  for (int ki = 0; !rc && ki < nkv; ki++)
    for (uint32_t pi = 0; !rc && pi < nP; pi++)
      rc = bench_one(&c, gpu, m, synthetic, Ps[pi], G, runs, prefill_runs ? prefill_runs : (runs < 3 ? runs : 3), depth,
                     kvs[ki], json, profile);
  llm_model_free(m);
  gpu_destroy(gpu);
  return rc;
}
