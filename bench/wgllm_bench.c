/* `wgllm bench`: prefill and decode speed of a model file or a synthetic model of a real shape, after a
   warm-up, as the median of several runs; dispatches and CPU encode time per token, the CPU time of a prefill
   (recording and submitting its passes: prefill_cpu_ms); memory; per-kernel GPU
   time with --profile (of a decode step and of the prompt's last prefill chunk, or of the batched step with
   --parallel; for the replayed steps also each kernel's in-stream cost); JSON with --json. --write-gguf writes the
   synthetic model as a GGUF file. (One prefill attention kernel against another: bench_kernels' attn_prefill, which
   forces each through op_attention_forced.) */
#include "batch.h"
#include "cli_options.h"
#include "cli_progress.h"
#include "gpu.h"
#include "model.h"
#include "model_synthetic.h"
#include "session.h"
#include "speculate.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static double now_s(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return t.tv_sec + t.tv_nsec * 1e-9;
}

static int g_kv_pool, g_batched_only; /* --kv-pool, --batched-only (--parallel) */
static int g_sampled;      /* --sampling default: temperature, top-k, top-p, min-p and penalty instead of greedy */
static int g_fast;         /* the precision of the measurement at hand (--precision-list): int8 activations */
static llm_model *g_draft; /* --draft-model / --draft-synthetic: --spec's draft model, on the same device */

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
         "  --prompt 128,2048,8192, --kv-list f32,f16 and --precision-list exact,fast measure every combination\n"
         "       on one loaded model (fast: int8 activations in the quantized linear layers)\n"
         "  --prefill-runs N: timed prefills (default min(runs, 3)); decode runs rewind to the prompt\n"
         "  --sampled: sample with t 0.8, top-k 40, top-p 0.95, min-p 0.05, penalty 1.1\n"
         "  --parallel N: N sessions (2..64) decode together, batched in one step and one after another\n"
         "  --kv-pool: (--parallel) their caches on one paged KV pool; --batched-only: no one-after-another run\n"
         "       wgllm bench --synthetic NAME --write-gguf OUT.gguf [--vocab DIR]  (the Llama shapes in Q4_0;\n"
         "       the MoE shapes as llama.cpp's Q4_K_M types, random blocks)\n"
         "  --vocab DIR: embed DIR's tokenizer.json (+ tokenizer_config.json) as llama.cpp writes a Llama 3 GGUF\n"
         "       (e.g. third_party/tokenizers/llama3: the file then takes text, for wgllm run / serve)\n"
         "  synthetic NAME: llama-1b, llama-8b (Llama-3.2-1B, Llama-3.1-8B), gemma4 (Gemma 4 text, Gemma4TextConfig's\n"
         "  sizes, 10 KV-shared layers), gemma4-noshare (the same without KV sharing), qwen3-30b-a3b (Qwen3-MoE:\n"
         "  128 experts, top 8), mixtral-8x7b (8 experts, top 2), gpt-oss-20b (MXFP4 experts; GGUF only), tiny,\n"
         "  gemma4-tiny, qwen3-moe-tiny, qwen3-moe-kq, gpt-oss-tiny (tests)\n"
         "  decode is timed at a context of P tokens (the prompt), greedy sampling on the GPU, one token id\n"
         "  read back per step; defaults: --prompt 128 --gen 64 --runs 5; progress on stderr when it is a terminal\n");
}

typedef struct prof_row {
  char name[48];
  double ns;
  double in_stream_ns; /* the step's one-pass time less its time without this kernel (--profile on a replayed step) */
  int count;
} prof_row;

static int cmp_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return x < y ? -1 : x > y;
}

/* the median of PROFILE_REPS one-pass timings of step, every record named skip left out (NULL: none) */
#define PROFILE_REPS 7
static wgllm_status time_without(gpu_recorder *step, const char *skip, double *out_ns) {
  double t[PROFILE_REPS];
  for (int r = 0; r < PROFILE_REPS; r++) {
    wgllm_status st = gpu_recorder_time_without(step, skip, &t[r]);
    if (st) return st;
  }
  qsort(t, PROFILE_REPS, sizeof t[0], cmp_double);
  *out_ns = t[PROFILE_REPS / 2];
  return WGLLM_OK;
}

/* --profile: the per-kernel GPU time of a recorded step, each dispatch in its own pass, summed by kernel name
   (to stderr under --json, so the JSON lines stay parseable). in_stream (a replayable step): also each kernel's
   in-stream cost, the step run as one pass less the step run without that kernel's dispatches (medians of
   PROFILE_REPS), which counts its barriers and overlap as a replayed step has them; a pass of its own overstates
   small dispatches (a floor of about 10 us each on an H100). The difference of two timings: a few us either way,
   negative ones included, is noise. */
static wgllm_status print_profile(gpu_recorder *step, const char *what, int json, int in_stream) {
  size_t n = gpu_recorder_count(step);
  double *ns = calloc(n, sizeof *ns);
  prof_row *rows = calloc(n, sizeof *rows);
  size_t nr = 0;
  double total = 0, whole = 0;
  wgllm_status st = ns && rows ? gpu_recorder_profile(step, ns) : WGLLM_ERR_OUT_OF_MEMORY;
  if (st) fprintf(stderr, "wgllm bench: --profile: %s\n", ns && rows ? gpu_recorder_error(step) : "out of memory");
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
  if (!st && in_stream) {
    st = time_without(step, NULL, &whole);
    for (size_t j = 0; !st && j < nr; j++) {
      double without = 0;
      st = time_without(step, rows[j].name, &without);
      rows[j].in_stream_ns = whole - without;
    }
    if (st) fprintf(stderr, "wgllm bench: --profile: %s\n", gpu_recorder_error(step));
  }
  FILE *o = json ? stderr : stdout;
  if (!st) {
    fprintf(o, "per-kernel GPU time of %s (each dispatch in its own pass): %.3f ms", what, total / 1e6);
    if (in_stream) fprintf(o, "; in-stream (one pass, %.3f ms, less the pass without the kernel)", whole / 1e6);
    fprintf(o, "\n");
    for (size_t j = 0; j < nr; j++) {
      fprintf(o, "  %-24s %4d x  %9.1f us  %5.1f%%", rows[j].name, rows[j].count, rows[j].ns / 1e3,
              100 * rows[j].ns / total);
      if (in_stream)
        fprintf(o, "  in-stream %9.1f us  %5.1f%%", rows[j].in_stream_ns / 1e3, 100 * rows[j].in_stream_ns / whole);
      fprintf(o, "\n");
    }
  }
  free(ns);
  free(rows);
  return st;
}

/* --profile, prefill: the last chunk of a P-token prompt (its tokens attend to every key before them, the
   dearest chunk), recorded as the prefill records it, each dispatch timed in its own pass. It rewrites that
   chunk's keys and values with those of other ids: run it after the timings. */
static wgllm_status profile_prefill_chunk(llm_session *s, uint32_t P, int json) {
  uint32_t C = s->opt.prefill_chunk < P ? s->opt.prefill_chunk : P;
  llm_scratch sc;
  llm_err err = {0};
  wgllm_status st = llm_scratch_acquire(s->gpu, &s->m->hp, C, 1, &sc, &err);
  if (!st && s->opt.fast) {
    st = llm_scratch_add_fast(s->gpu, &s->m->hp, &sc, &err);
    if (st) llm_scratch_release(s->gpu, &sc);
  }
  if (st) {
    fprintf(stderr, "wgllm bench: --profile: %s\n", err.msg);
    return st;
  }
  uint32_t *pos = malloc(C * sizeof *pos);
  gpu_recorder *rec = pos ? gpu_recorder_create(s->gpu, 1) : NULL;
  if (!rec) st = WGLLM_ERR_OUT_OF_MEMORY;
  if (!st) {
    for (uint32_t i = 0; i < C; i++) /* ids: any below the vocabulary */
      pos[i] = (uint32_t)(((uint64_t)i * 2654435761u) % s->m->hp.n_vocab);
    gpu_write(s->gpu, sc.ids, 0, pos, (uint64_t)C * 4);
    for (uint32_t i = 0; i < C; i++)
      pos[i] = P - C + i;
    gpu_write(s->gpu, sc.pos, 0, pos, (uint64_t)C * 4);
    llm_forward_opts fo = {.attn_grid = LLM_ATTN_GRID_WORST, .fast = s->opt.fast};
    st = llm_encode_forward(rec, s->m, &s->kv, &s->rope, &sc, C, 1, &fo);
    if (st) fprintf(stderr, "wgllm bench: --profile: %s\n", gpu_recorder_error(rec));
  }
  if (!st) {
    char what[96];
    snprintf(what, sizeof what, "the prefill chunk of tokens %u..%u", P - C, P - 1);
    st = print_profile(rec, what, json, 0);
  }
  if (rec) gpu_recorder_free(rec);
  free(pos);
  llm_scratch_release(s->gpu, &sc);
  return st;
}

/* One measurement: a session of P + G tokens, prefill and decode timings, optional per-kernel profile. */
static int bench_one(const cli_common *c, gpu_context *gpu, llm_model *m, const char *synthetic, uint32_t P, uint32_t G,
                     uint32_t runs, uint32_t prefill_runs, int depth, int kv_f16, int json, int profile) {
  llm_err err = {0};
  wgllm_status st;
  llm_session_options so = {0};
  llm_kv_pool *pool = NULL;
  so.ctx = c->ctx ? c->ctx : P + G + 8;
  so.kv_f16 = kv_f16;
  so.unfused = c->unfused;
  so.attn_grid = (llm_attn_grid)c->attn_grid;
  so.prefill_chunk = c->prefill_chunk;
  so.fast = g_fast;
  llm_session *s = NULL;
  st = g_kv_pool ? llm_kv_pool_create(m, so.ctx, so.ctx, kv_f16, &pool, &err) : WGLLM_OK;
  so.pool = pool;
  if (!st) st = llm_session_create(m, &so, &s, &err);
  if (st) {
    fprintf(stderr, "wgllm bench: %s\n", err.msg);
    llm_kv_pool_free(pool);
    return 1;
  }
  if (P + G + 1 > so.ctx) {
    fprintf(stderr, "wgllm bench: --ctx %u is too small for %u + %u tokens\n", so.ctx, P, G);
    return 2;
  }
  int32_t *ids = malloc(P * sizeof *ids);
  for (uint32_t i = 0; i < P; i++)
    ids[i] = (int32_t)((i * 2654435761u) % m->hp.n_vocab);
  op_sample_params greedy = {
      .temperature = 0.0f, .top_p = 1.0f, .min_p = 0.0f, .rep_penalty = 1.0f, .top_k = 0, .ring_cap = 0, .seed = 1};
  op_sample_params sampled = {.temperature = 0.8f,
                              .top_p = 0.95f,
                              .min_p = 0.05f,
                              .rep_penalty = 1.1f,
                              .top_k = 40,
                              .ring_cap = 64,
                              .seed = 1}; /* every stage of the sampler at work */
  st = llm_session_set_sampler(s, g_sampled ? &sampled : &greedy, ids, P);
  /* the prefill's timings have prefill_runs entries, the decode's runs (--prefill-runs may exceed --runs) */
  double *pre = calloc(prefill_runs + 1, sizeof *pre), *dec = calloc(runs, sizeof *dec),
         *enc = calloc(runs, sizeof *enc);
  double *pre_cpu = calloc(prefill_runs + 1, sizeof *pre_cpu);
  int32_t tok;
  /* prefill: a warm-up, then timed runs (at most 3: long prompts are slow to redo); decode: every run rewinds to
     the prompt and decodes G tokens at context P */
  uint32_t pre_runs = prefill_runs;
  cli_progress prog; /* on a terminal: which run is going on */
  cli_progress_begin(&prog);
  for (uint32_t r = 0; !st && r <= pre_runs; r++) { /* the warm-up prefill is short: it only compiles pipelines */
    cli_progress_show(&prog, 1, "bench %u tokens, KV %s: prefill %s%u/%u", P, kv_f16 ? "f16" : "f32",
                      r ? "" : "warm-up ", r, pre_runs);
    llm_session_reset(s);
    double t0 = now_s();
    st = llm_session_prefill_sample(s, ids, r ? P : (P < 256 ? P : 256), &tok);
    if (r > 0) pre[r - 1] = now_s() - t0;
    if (r > 0) pre_cpu[r - 1] = s->prefill_cpu_us;
  }
  for (uint32_t r = 0; !st && r <= runs; r++) { /* run 0 is the warm-up */
    cli_progress_show(&prog, 1, "bench %u tokens, KV %s: decode %s%u/%u", P, kv_f16 ? "f16" : "f32",
                      r ? "" : "warm-up ", r, runs);
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
  cli_progress_end(&prog);
  if (st) {
    fprintf(stderr, "wgllm bench: %s (%s)\n", s->err.msg, wgllm_status_name(st));
    llm_session_free(s);
    llm_kv_pool_free(pool);
    return 1;
  }
  double pre_s = median(pre, (int)pre_runs), dec_s = median(dec, (int)runs), enc_us = median(enc, (int)runs);
  double pre_cpu_ms = median(pre_cpu, (int)pre_runs) / 1e3;
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
           "\"prefill_tok_s\": %.1f, \"ttft_ms\": %.2f, \"prefill_cpu_ms\": %.2f, \"prefill_chunk\": %u, "
           "\"decode_tok_s\": %.2f, "
           "\"decode_ms_per_token\": %.4f, \"gpu_us_per_step\": %.1f, \"dispatches_per_token\": %zu, "
           "\"cpu_encode_us_per_token\": %.1f, "
           "\"pipeline\": %d, "
           "\"kv_bytes\": %llu, \"weight_bytes\": %llu, \"gpu_bytes_peak\": %llu, \"precision\": \"%s\"}\n",
           gpu->adapter_name, model_name, m->weights_desc, s->kv.f16 ? "f16" : "f32", P, P, G, runs,
           s->opt.attn_grid == LLM_ATTN_GRID_INDIRECT ? "indirect" : "worst-case",
           g_sampled ? "t0.8 k40 p0.95 minp0.05 rep1.1" : "greedy", P / pre_s, pre_s * 1e3, pre_cpu_ms,
           s->opt.prefill_chunk, 1.0 / dec_s, dec_s * 1e3, gpu_ns / 1e3, dispatches, enc_us, depth,
           (unsigned long long)s->kv.bytes, (unsigned long long)m->weight_bytes, (unsigned long long)gpu->bytes_peak,
           g_fast ? "fast" : "exact");
  } else {
    printf("adapter %s, model %s (%s), KV %s, context %u, precision %s\n", gpu->adapter_name, model_name,
           m->weights_desc, s->kv.f16 ? "f16" : "f32", P, g_fast ? "fast" : "exact");
    printf("prefill %u tokens: %.3f s (%.1f tok/s) in passes of %u; time to first token %.3f s; CPU recording and "
           "submitting %.2f ms\n",
           P, pre_s, P / pre_s, s->opt.prefill_chunk, pre_s, pre_cpu_ms);
    printf("decode: %.3f ms/token (%.2f tok/s), GPU %.1f us/step, %zu dispatches/token, CPU encode %.1f us/token\n",
           dec_s * 1e3, 1.0 / dec_s, gpu_ns / 1e3, dispatches, enc_us);
    printf("memory: weights %.1f MB, KV %.1f MB, GPU peak %.1f MB\n", m->weight_bytes / 1e6, s->kv.bytes / 1e6,
           gpu->bytes_peak / 1e6);
  }
  if (!st && profile) st = print_profile(step, "one decode step", json, 1);
  if (!st && profile) st = profile_prefill_chunk(s, P, json);
  free(ids);
  free(pre);
  free(dec);
  free(enc);
  free(pre_cpu);
  llm_session_free(s);
  llm_kv_pool_free(pool);
  return st ? 1 : 0;
}

/* --spec: s from an empty cache, the sampler set, the prompt prefilled and its first token into *first. */
static wgllm_status spec_restart(llm_session *s, const op_sample_params *sp, const int32_t *ids, uint32_t P,
                                 int32_t *first, llm_err *err) {
  llm_session_reset(s);
  wgllm_status st = llm_session_set_sampler(s, sp, ids, P);
  if (!st) st = llm_session_prefill_sample(s, ids, P, first);
  if (st) *err = s->err;
  return st;
}

/* --spec K: speculative decoding (speculate.h) on one session whose prompt is a 16-token phrase repeated to P tokens:
   plain decode of G tokens (two steps in flight) as the reference; for each k = 1..K the generation whose every step
   verifies the next k tokens of the reference (all accepted: the speed at full acceptance, and the verify step's
   cost); then prompt lookup with up to K drafts (the acceptance the model's text gives). Each speculative run's
   tokens are checked against the reference. Medians of `runs` runs after a warm-up. */
static int bench_spec(const cli_common *c, gpu_context *gpu, llm_model *m, const char *synthetic, uint32_t P,
                      uint32_t G, uint32_t runs, int kv_f16, int json, uint32_t K, int profile) {
  llm_err err = {0};
  llm_session_options so = {0};
  so.ctx = c->ctx ? c->ctx : P + G + K + 8;
  so.kv_f16 = kv_f16;
  so.attn_grid = (llm_attn_grid)c->attn_grid;
  so.prefill_chunk = c->prefill_chunk;
  so.fast = g_fast;
  llm_session *s = NULL, *ds = NULL;
  llm_spec *sp = NULL;
  int32_t *ids = malloc(P * sizeof *ids), *ref = malloc((G + 1) * sizeof *ref), *got = malloc((G + K + 2) * 4);
  double *t = calloc(runs, sizeof *t);
  for (uint32_t i = 0; i < P; i++)
    ids[i] = (int32_t)(((i % 16) * 2654435761u + 7) % m->hp.n_vocab);
  op_sample_params greedy = {.top_p = 1.0f, .rep_penalty = 1.0f, .seed = 1};
  op_sample_params sampled = {
      .temperature = 0.8f, .top_p = 0.95f, .min_p = 0.05f, .rep_penalty = 1.1f, .top_k = 40, .ring_cap = 64, .seed = 1};
  const op_sample_params *sps = g_sampled ? &sampled : &greedy;
  wgllm_status st = llm_session_create(m, &so, &s, &err);
  if (!st && P + G + K + 1 > so.ctx) st = llm_err_set(&err, WGLLM_ERR_INVALID_ARG, "--ctx is too small");
  if (!st) {
    st = spec_restart(s, sps, ids, P, &ref[0], &err);
    if (!st && g_draft) st = llm_session_create(g_draft, &so, &ds, &err);
    if (!st) st = llm_spec_create(s, K, 1, ds, &sp, &err);
  }
  /* plain: two steps in flight */
  double plain = 0;
  for (uint32_t r = 0; !st && r <= runs; r++) {
    st = spec_restart(s, sps, ids, P, &ref[0], &err);
    double t0 = now_s();
    uint32_t queued = 0;
    for (uint32_t g = 1; !st && g <= G; g++) {
      for (; !st && s->in_flight < 2 && queued < G; queued++)
        st = llm_session_step_submit(s);
      if (!st) st = llm_session_step_collect(s, &ref[g]);
      if (st) err = s->err;
    }
    if (r) t[r - 1] = now_s() - t0;
  }
  if (!st) plain = median(t, (int)runs) / G;
  gpu_recorder *plain_step = st ? NULL : llm_session_step(s, s->n_past);
  double gpu_ns = 0;
  if (profile && plain_step && !gpu_recorder_time(plain_step, &gpu_ns)) /* the GPU's share of a step, alone */
    fprintf(json ? stderr : stdout, "plain step alone on the GPU: %.3f ms\n", gpu_ns / 1e6);
  if (profile && plain_step) st = print_profile(plain_step, "the plain decode step", json, 1);
  if (!st && json)
    printf("{\"adapter\": \"%s\", \"model\": \"%s\", \"weights\": \"%s\", \"precision\": \"%s\", \"sampling\": \"%s\", "
           "\"context\": %u, \"gen_tokens\": %u, \"mode\": \"plain\", \"tok_s\": %.1f, \"ms_per_step\": %.4f}\n",
           gpu->adapter_name, synthetic ? synthetic : c->model, m->weights_desc, g_fast ? "fast" : "exact",
           g_sampled ? "t0.8 k40 p0.95 minp0.05 rep1.1" : "greedy", P, G, 1.0 / plain, plain * 1e3);
  else if (!st)
    printf("plain decode, %u tokens at context %u: %.3f ms a token (%.1f tok/s)\n", G, P, plain * 1e3, 1.0 / plain);
  /* k drafts from the reference, then prompt lookup (k = K + 1 here: up to K), then the draft model (K + 2) */
  double *td = calloc(runs, sizeof *td);
  for (uint32_t k = 1; !st && k <= K + 1 + (ds != NULL); k++) {
    int lookup = k == K + 1, drafting = k == K + 2;
    sp->lookup = lookup;
    sp->draft = drafting ? ds : NULL;
    uint32_t steps = 0, drafted = 0, accepted = 0, same = 1;
    for (uint32_t r = 0; !st && r <= runs; r++) {
      st = spec_restart(s, sps, ids, P, &ref[0], &err);
      if (!st && ds) llm_session_reset(ds); /* the draft model prefills the prompt at its first step */
      steps = drafted = accepted = 0;
      sp->pre_used = 0;
      same = 1;
      double t0 = now_s(), draft_s = 0;
      for (uint32_t at = 1; !st && at <= G;) { /* ref[0..at) known */
        uint32_t room = llm_spec_room(sp), want = lookup || drafting ? K : k, n = 0;
        if (want > room) want = room;
        if (want > G - at) want = G - at;
        int32_t d[LLM_SPEC_MAX];
        double td0 = now_s();
        uint32_t nd = !want ? 0 : lookup || drafting ? llm_spec_rows_drafts(llm_spec_propose(sp, want, d)) : want;
        draft_s += now_s() - td0;
        if (sp->err.status) {
          st = sp->err.status;
          err = sp->err;
          break;
        }
        if (!lookup && !drafting) memcpy(d, ref + at, nd * sizeof *d);
        if (nd) {
          st = llm_spec_verify(sp, d, nd, got, &n);
          if (st) err = sp->err;
          steps++;
          drafted += nd;
          accepted += n - 1;
        } else {
          st = llm_session_step_sample(s, got);
          if (st) err = s->err;
          n = 1;
        }
        for (uint32_t i = 0; !st && i < n && at + i <= G; i++)
          same &= got[i] == ref[at + i];
        at += n;
      }
      if (r) {
        t[r - 1] = now_s() - t0;
        td[r - 1] = draft_s;
      }
    }
    if (st) break;
    if (profile && !lookup && !drafting && sp->rec[k]) { /* the verify step of k drafts: its GPU time, its kernels */
      if (!gpu_recorder_time(sp->rec[k], &gpu_ns))
        fprintf(json ? stderr : stdout, "verify step of %u drafts alone on the GPU: %.3f ms\n", k, gpu_ns / 1e6);
      if (k == K || k == 1 || k == 4) st = print_profile(sp->rec[k], "the verify step", json, 1);
      if (st) break;
    }
    double per = median(t, (int)runs) / G, step_ms = steps ? median(t, (int)runs) / steps * 1e3 : 0;
    double draft_ms = steps ? median(td, (int)runs) / steps * 1e3 : 0; /* proposing, a verify step's share */
    const char *mode = drafting ? "draft model" : lookup ? "lookup" : "reference drafts";
    if (json)
      printf("{\"adapter\": \"%s\", \"model\": \"%s\", \"weights\": \"%s\", \"precision\": \"%s\", \"sampling\": "
             "\"%s\", \"context\": %u, \"gen_tokens\": %u, \"mode\": \"%s\", \"drafts\": %u, \"tok_s\": %.1f, "
             "\"speedup\": %.3f, \"verify_steps\": %u, \"drafted\": %u, \"accepted\": %u, \"acceptance\": %.4f, "
             "\"tokens_per_step\": %.3f, \"ms_per_verify_step\": %.4f, \"verify_over_plain_step\": %.3f, "
             "\"ms_proposing_per_step\": %.4f, \"prepared_ahead\": %llu, \"same_tokens\": %s}\n",
             gpu->adapter_name, synthetic ? synthetic : c->model, m->weights_desc, g_fast ? "fast" : "exact",
             g_sampled ? "t0.8 k40 p0.95 minp0.05 rep1.1" : "greedy", P, G, mode, k > K ? K : k, 1.0 / per, plain / per,
             steps, drafted, accepted, drafted ? (double)accepted / drafted : 0.0,
             steps ? (double)(accepted + steps) / steps : 0.0, step_ms, step_ms / (plain * 1e3), draft_ms,
             (unsigned long long)sp->pre_used, same ? "true" : "false");
    else
      printf("%s, %u drafts: %.1f tok/s (%.2fx plain), %u steps of %.3f ms (%.2fx a plain step; proposing %.3f ms "
             "of it; %llu encoded ahead), %u of %u drafts accepted, %.2f tokens a step, tokens %s\n",
             mode, k > K ? K : k, 1.0 / per, plain / per, steps, step_ms, step_ms / (plain * 1e3), draft_ms,
             (unsigned long long)sp->pre_used, accepted, drafted, steps ? (double)(accepted + steps) / steps : 0.0,
             same ? "the plain run's" : "DIFFERENT from the plain run's");
  }
  free(td);
  if (st) fprintf(stderr, "wgllm bench: --spec %u: %s (%s)\n", K, err.msg, wgllm_status_name(st));
  llm_spec_free(sp);
  llm_session_free(s);
  llm_session_free(ds);
  free(ids);
  free(ref);
  free(got);
  free(t);
  return st ? 1 : 0;
}

/* --parallel N: N sessions of P-token prompts decoding G tokens each, all together, as a server's concurrent
   requests do: in one batched step for all (llm_batch), and one session after another with every step queued
   before any is collected (what jobs do without batching); the aggregate and per-session rates of both. */
static int bench_parallel(const cli_common *c, gpu_context *gpu, llm_model *m, const char *synthetic, uint32_t P,
                          uint32_t G, uint32_t runs, uint32_t N, int kv_f16, int json, int profile, int depth) {
  llm_err err = {0};
  wgllm_status st = WGLLM_OK;
  llm_session *ss[LLM_BATCH_MAX] = {0};
  llm_batch *b = NULL;
  llm_session_options so = {0};
  llm_kv_pool *pool = NULL;
  so.ctx = c->ctx ? c->ctx : P + G + 8;
  so.kv_f16 = kv_f16;
  so.attn_grid = (llm_attn_grid)c->attn_grid;
  so.prefill_chunk = c->prefill_chunk;
  so.fast = g_fast;
  int32_t *ids = malloc(P * sizeof *ids);
  op_sample_params greedy = {
      .temperature = 0.0f, .top_p = 1.0f, .min_p = 0.0f, .rep_penalty = 1.0f, .top_k = 0, .ring_cap = 0, .seed = 1};
  op_sample_params sampled = {
      .temperature = 0.8f, .top_p = 0.95f, .min_p = 0.05f, .rep_penalty = 1.1f, .top_k = 40, .ring_cap = 64, .seed = 1};
  if (g_kv_pool) {
    st = llm_kv_pool_create(m, N * so.ctx, so.ctx, kv_f16, &pool, &err);
    so.pool = pool;
  }
  for (uint32_t i = 0; !st && i < N; i++) {
    st = llm_session_create(m, &so, &ss[i], &err);
    for (uint32_t k = 0; !st && k < P; k++) /* a prompt of its own */
      ids[k] = (int32_t)(((k + 977u * i) * 2654435761u) % m->hp.n_vocab);
    if (!st) st = llm_session_set_sampler(ss[i], g_sampled ? &sampled : &greedy, ids, P);
    int32_t tok;
    if (!st) st = llm_session_prefill_sample(ss[i], ids, P, &tok);
    if (st && ss[i]) err = ss[i]->err;
  }
  if (!st) st = llm_batch_create(m, &b, &err);
  double t_mode[2] = {0, 0};
  for (int mode = 0; !st && mode < 2 - g_batched_only; mode++) { /* 0 batched, 1 one after another */
    double *t = calloc(runs, sizeof *t);
    for (uint32_t r = 0; !st && r <= runs; r++) { /* run 0 is the warm-up (and the recording) */
      for (uint32_t i = 0; i < N; i++)
        llm_session_rewind(ss[i], P);
      double t0 = now_s();
      int32_t toks[LLM_BATCH_MAX];
      for (uint32_t g = 0; !st && g < G; g++) {
        if (mode ==
            0) { /* depth 2: the next step queued (its ids from this one, on the GPU) before this is collected */
          if (g == 0 || depth < 2) st = llm_batch_submit(b, ss, N);
          if (!st && depth >= 2 && g + 1 < G) st = llm_batch_submit(b, ss, N);
          if (!st) st = llm_batch_collect(b, toks, NULL);
          if (st) err = b->err;
          if (st) llm_batch_drain(b, NULL);
        } else {
          for (uint32_t i = 0; !st && i < N; i++)
            st = llm_session_step_submit(ss[i]);
          for (uint32_t i = 0; !st && i < N; i++)
            st = llm_session_step_collect(ss[i], &toks[i]);
          for (uint32_t i = 0; st && i < N; i++)
            if (ss[i]->err.msg[0]) err = ss[i]->err;
        }
      }
      if (r > 0) t[r - 1] = now_s() - t0;
    }
    if (!st) t_mode[mode] = median(t, (int)runs);
    free(t);
    if (!st && mode == 0 && profile && b->rec) {
      char what[64];
      snprintf(what, sizeof what, "one batched step of %u sessions", N);
      st = print_profile(b->rec, what, json, 1);
    }
  }
  if (st) {
    fprintf(stderr, "wgllm bench: --parallel %u: %s (%s)\n", N, err.msg, wgllm_status_name(st));
  } else {
    static const char *const names[2] = {"batched", "one after another"};
    for (int mode = 0; mode < 2 - g_batched_only; mode++) {
      double agg = N * G / t_mode[mode];
      if (json)
        printf("{\"adapter\": \"%s\", \"model\": \"%s\", \"weights\": \"%s\", \"kv_dtype\": \"%s\", "
               "\"context\": %u, \"parallel\": %u, \"mode\": \"%s\", \"gen_tokens\": %u, \"runs\": %u, "
               "\"sampling\": \"%s\", \"precision\": \"%s\", \"aggregate_tok_s\": %.1f, "
               "\"per_session_tok_s\": %.2f, \"ms_per_step\": %.4f, \"batch_recordings\": %u, \"kv_pool\": %d, "
               "\"steps_in_flight\": %d}\n",
               gpu->adapter_name, synthetic ? synthetic : c->model, m->weights_desc, kv_f16 ? "f16" : "f32", P, N,
               names[mode], G, runs, g_sampled ? "t0.8 k40 p0.95 minp0.05 rep1.1" : "greedy", g_fast ? "fast" : "exact",
               agg, agg / N, t_mode[mode] / G * 1e3, b->recordings, g_kv_pool, mode == 0 && depth >= 2 ? 2 : 1);
      else
        printf("%u sessions at context %u, %s, %s%s: %.1f tok/s in all, %.2f tok/s each, %.3f ms a step\n", N, P,
               names[mode], g_fast ? "fast" : "exact", g_kv_pool ? ", KV pool" : "", agg, agg / N,
               t_mode[mode] / G * 1e3);
    }
  }
  llm_batch_free(b);
  for (uint32_t i = 0; i < N; i++)
    llm_session_free(ss[i]);
  llm_kv_pool_free(pool);
  free(ids);
  return st ? 1 : 0;
}

static int open_gpu(const cli_common *c, gpu_context **gpu) {
  llm_err err = {0};
  gpu_options o = {0};
  o.adapter_name = c->adapter ? c->adapter : getenv("WGLLM_ADAPTER");
  o.disable_f16 = c->no_f16;
  o.enable_toggles = c->toggles;
  wgllm_status s = gpu_create(&o, gpu, &err);
  if (s) {
    fprintf(stderr, "wgllm bench: %s (%s)\n", err.msg, wgllm_status_name(s));
    return 1;
  }
  return 0;
}

static cli_progress g_load;
static int show_load(float fraction, void *user) {
  (void)user;
  cli_progress_show(&g_load, 0, "loading model: %.0f%%", 100.0 * fraction);
  return 0;
}

static int load_model(const cli_common *c, gpu_context **gpu, llm_model **m) {
  llm_err err = {0};
  llm_load_options lo = {0};
  lo.progress = show_load;
  wgllm_status st = llm_parse_weight_policy(c->weights, &lo.weights, &err);
  if (st) {
    fprintf(stderr, "wgllm bench: %s\n", err.msg);
    return 2;
  }
  if (open_gpu(c, gpu)) return 1;
  cli_progress_begin(&g_load);
  st = llm_model_load(*gpu, c->model, &lo, m, &err);
  cli_progress_end(&g_load);
  if (st) {
    /* the loaders name the file themselves; the path before the message only where they did not */
    int named = !strncmp(err.msg, c->model, strlen(c->model));
    fprintf(stderr, "wgllm bench: %s%s%s (%s)\n", named ? "" : c->model, named ? "" : ": ", err.msg,
            wgllm_status_name(st));
    gpu_destroy(*gpu);
    return 1;
  }
  return 0;
}

enum {
  K_SYNTHETIC = 1024,
  K_DRAFT_MODEL,
  K_DRAFT_SYNTHETIC,
  K_WRITE_GGUF,
  K_VOCAB,
  K_PROMPT,
  K_KV_LIST,
  K_GEN,
  K_RUNS,
  K_GROUP,
  K_PIPELINE,
  K_PREFILL_RUNS,
  K_JSON,
  K_PROFILE,
  K_SAMPLED,
  K_PARALLEL,
  K_SPEC,
  K_KV_POOL,
  K_BATCHED_ONLY,
  K_PRECISION_LIST
};

static const cli_opt bench_opts[] = {
    {K_SYNTHETIC, "--synthetic", CLI_TEXT, "NAME", 0, 0, 0, CLI_CMD_BENCH, "a synthetic model of a real shape"},
    {K_WRITE_GGUF, "--write-gguf", CLI_TEXT, "OUT.gguf", 0, 0, 0, CLI_CMD_BENCH, "write the synthetic model"},
    {K_VOCAB, "--vocab", CLI_TEXT, "DIR", 0, 0, 0, CLI_CMD_BENCH,
     "Hugging Face tokenizer directory to embed in --write-gguf's file (Llama 3's kind)"},
    {K_PROMPT, "--prompt", CLI_TEXT, "P[,P...]", 0, 0, 0, CLI_CMD_BENCH, "prompt lengths, up to 8 (default 128)"},
    {K_KV_LIST, "--kv-list", CLI_TEXT, "f32,f16", 0, 0, 0, CLI_CMD_BENCH, "KV cache types to measure"},
    {K_GEN, "--gen", CLI_INT, "G", 1, 1 << 24, 0, CLI_CMD_BENCH, "tokens decoded a run (default 64)"},
    {K_RUNS, "--runs", CLI_INT, "R", 1, 1 << 20, 0, CLI_CMD_BENCH, "timed decode runs (default 5)"},
    {K_GROUP, "--group", CLI_CHOICE, "32|64|128", 0, 0, 0, CLI_CMD_BENCH, "q4 group of a synthetic model"},
    {K_PIPELINE, "--pipeline", CLI_INT, "D", 1, LLM_MAX_IN_FLIGHT, 0, CLI_CMD_BENCH,
     "decode steps in flight (--parallel: batched steps, 1 or 2; default 2)"},
    {K_PREFILL_RUNS, "--prefill-runs", CLI_INT, "N", 1, 1 << 20, 0, CLI_CMD_BENCH,
     "timed prefills (default min(runs, 3))"},
    {K_JSON, "--json", CLI_FLAG, NULL, 0, 0, 0, CLI_CMD_BENCH, "one JSON line a result"},
    {K_PROFILE, "--profile", CLI_FLAG, NULL, 0, 0, 0, CLI_CMD_BENCH,
     "per-kernel GPU time: decode step (also in-stream), last prefill chunk"},
    {K_SAMPLED, "--sampled", CLI_FLAG, NULL, 0, 0, 0, CLI_CMD_BENCH, "sample instead of greedy"},
    {K_SPEC, "--spec", CLI_INT, "K", 1, LLM_SPEC_MAX, 0, CLI_CMD_BENCH,
     "speculative decoding: verify steps of 1..K drafts from the plain run, and prompt lookup, against plain decode"},
    {K_DRAFT_MODEL, "-md --draft-model", CLI_TEXT, "PATH", 0, 0, 0, CLI_CMD_BENCH,
     "--spec: also speculate with this draft model (its greedy drafts; the same vocabulary)"},
    {K_DRAFT_SYNTHETIC, "--draft-synthetic", CLI_TEXT, "NAME", 0, 0, 0, CLI_CMD_BENCH,
     "--spec: the draft model a synthetic model of this shape (random weights: its drafts' cost, not acceptance)"},
    {K_PARALLEL, "--parallel", CLI_INT, "N", 2, LLM_BATCH_MAX, 0, CLI_CMD_BENCH,
     "decode N sessions together, batched and one after another (aggregate tok/s)"},
    {K_PRECISION_LIST, "--precision-list", CLI_TEXT, "exact,fast", 0, 0, 0, CLI_CMD_BENCH,
     "the precisions to measure (default exact)"},
    {K_KV_POOL, "--kv-pool", CLI_FLAG, NULL, 0, 0, 0, CLI_CMD_BENCH,
     "--parallel: the sessions' caches on one paged KV pool of N x context tokens (one attention pair for all)"},
    {K_BATCHED_ONLY, "--batched-only", CLI_FLAG, NULL, 0, 0, 0, CLI_CMD_BENCH,
     "--parallel: the batched step only, not the sessions one after another"},
    {0, NULL, 0, NULL, 0, 0, 0, 0, NULL}};

typedef struct bench_args {
  cli_common c;
  const char *synthetic, *write_gguf, *vocab;
  uint32_t Ps[8], nP, G, runs, group, prefill_runs;
  int kvs[2], nkv, depth, json, profile;
  int fasts[2], nfast;
  uint32_t parallel, spec;
  const char *draft_model, *draft_synthetic;
} bench_args;

static int on_opt(void *user, int key, const cli_value *v) {
  bench_args *a = user;
  int r = cli_common_set(&a->c, key, v);
  if (r != 1) return r;
  switch (key) {
  case K_SYNTHETIC:
    a->synthetic = v->text;
    break;
  case K_WRITE_GGUF:
    a->write_gguf = v->text;
    break;
  case K_VOCAB:
    a->vocab = v->text;
    break;
  case K_PROMPT: /* one length or a comma list: one result per length */
    a->nP = 0;
    for (char *q = (char *)v->text; *q && a->nP < 8;) {
      a->Ps[a->nP++] = (uint32_t)strtoul(q, &q, 10);
      if (*q == ',')
        q++;
      else if (*q) {
        fprintf(stderr, "wgllm bench: --prompt %s: expected N or N,N,...\n", v->text);
        return 2;
      }
    }
    break;
  case K_KV_LIST:
    a->nkv = 0;
    if (strstr(v->text, "f32")) a->kvs[a->nkv++] = 0;
    if (strstr(v->text, "f16")) a->kvs[a->nkv++] = 1;
    break;
  case K_GEN:
    a->G = (uint32_t)v->i;
    break;
  case K_RUNS:
    a->runs = (uint32_t)v->i;
    break;
  case K_GROUP:
    a->group = 32u << v->choice;
    break;
  case K_PIPELINE:
    a->depth = (int)v->i;
    break;
  case K_PREFILL_RUNS:
    a->prefill_runs = (uint32_t)v->i;
    break;
  case K_JSON:
    a->json = 1;
    break;
  case K_PROFILE:
    a->profile = 1;
    break;
  case K_SAMPLED:
    g_sampled = 1;
    break;
  case K_PARALLEL:
    a->parallel = (uint32_t)v->i;
    break;
  case K_SPEC:
    a->spec = (uint32_t)v->i;
    break;
  case K_DRAFT_MODEL:
    a->draft_model = v->text;
    break;
  case K_DRAFT_SYNTHETIC:
    a->draft_synthetic = v->text;
    break;
  case K_KV_POOL:
    g_kv_pool = 1;
    break;
  case K_BATCHED_ONLY:
    g_batched_only = 1;
    break;
  case K_PRECISION_LIST:
    a->nfast = 0;
    for (const char *q = v->text; *q;) {
      size_t n = strcspn(q, ",");
      if (n == 5 && !strncmp(q, "exact", 5))
        a->fasts[a->nfast++] = 0;
      else if (n == 4 && !strncmp(q, "fast", 4))
        a->fasts[a->nfast++] = 1;
      else {
        fprintf(stderr, "wgllm bench: --precision-list %s: expected exact, fast or exact,fast\n", v->text);
        return 2;
      }
      q += n + (q[n] == ',');
      if (a->nfast == 2) break;
    }
    break;
  default:
    return 2;
  }
  return 0;
}

int main(int argc, char **argv) {
  static const cli_opt *const tables[] = {cli_common_opts, bench_opts, NULL};
  bench_args a = {0};
  a.Ps[0] = 128;
  a.nP = 1;
  a.G = 64;
  a.runs = 5;
  a.group = 32;
  a.depth = 2;
  char **ops;
  int n_ops;
  int prc = cli_parse("wgllm bench", CLI_CMD_BENCH, tables, argc, argv, on_opt, &a, &ops, &n_ops);
  if (prc) return prc;
  if (n_ops && !a.c.help) fprintf(stderr, "wgllm bench: unexpected argument '%s'\n", ops[0]);
  free(ops);
  if (a.c.help) {
    usage(stdout);
    cli_print_options(stdout, CLI_CMD_BENCH, tables);
    return 0;
  }
  if (n_ops) return 2;
  cli_common c = a.c;
  const char *synthetic = a.synthetic, *write_gguf = a.write_gguf;
  uint32_t *Ps = a.Ps, nP = a.nP, G = a.G, runs = a.runs, group = a.group, prefill_runs = a.prefill_runs;
  int *kvs = a.kvs, nkv = a.nkv, depth = a.depth, json = a.json, profile = a.profile;
  llm_err err = {0};
  if (a.vocab && !write_gguf) {
    fprintf(stderr, "wgllm bench: --vocab needs --write-gguf OUT.gguf\n");
    return 2;
  }
  if (write_gguf) {
    if (!synthetic) {
      fprintf(stderr, "wgllm bench: --write-gguf needs --synthetic NAME\n");
      return 2;
    }
    llm_synthetic_gguf_opts o = {.vocab_dir = a.vocab};
    wgllm_status s = llm_synthetic_write_gguf_opts(synthetic, write_gguf, &o, &err);
    if (s) {
      fprintf(stderr, "wgllm bench: %s\n", err.msg);
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
    st = llm_model_synthetic(gpu, synthetic, group, &m, &err);
    if (st) {
      fprintf(stderr, "wgllm bench: %s (%s)\n", err.msg, wgllm_status_name(st));
      gpu_destroy(gpu);
      return 1;
    }
  } else if (load_model(&c, &gpu, &m))
    return 1;
  if ((a.draft_model || a.draft_synthetic) && (!a.spec || (a.draft_model && a.draft_synthetic))) {
    fprintf(stderr, "wgllm bench: a draft model (one of -md, --draft-synthetic) is for --spec K\n");
    st = WGLLM_ERR_INVALID_ARG;
  } else if (a.draft_synthetic) {
    st = llm_model_synthetic(gpu, a.draft_synthetic, group, &g_draft, &err);
  } else if (a.draft_model) {
    llm_load_options lo = {0};
    st = llm_parse_weight_policy(c.weights, &lo.weights, &err);
    if (!st) st = llm_model_load(gpu, a.draft_model, &lo, &g_draft, &err);
  } else
    st = WGLLM_OK;
  if (st) {
    if (err.msg[0]) fprintf(stderr, "wgllm bench: the draft model: %s (%s)\n", err.msg, wgllm_status_name(st));
    llm_model_free(m);
    gpu_destroy(gpu);
    return st == WGLLM_ERR_INVALID_ARG ? 2 : 1;
  }
  if (!nkv) {
    kvs[0] = c.kv_f16;
    nkv = 1;
  }
  if (!a.nfast) a.nfast = 1; /* exact */
  int rc = 0;
  for (int fi = 0; !rc && fi < a.nfast; fi++) {
    g_fast = a.fasts[fi];
    for (int ki = 0; !rc && ki < nkv; ki++)
      for (uint32_t pi = 0; !rc && pi < nP; pi++)
        rc = a.spec ? bench_spec(&c, gpu, m, synthetic, Ps[pi], G, runs, kvs[ki], json, a.spec, profile)
             : a.parallel
                 ? bench_parallel(&c, gpu, m, synthetic, Ps[pi], G, runs, a.parallel, kvs[ki], json, profile, depth)
                 : bench_one(&c, gpu, m, synthetic, Ps[pi], G, runs,
                             prefill_runs ? prefill_runs : (runs < 3 ? runs : 3), depth, kvs[ki], json, profile);
  }
  llm_model_free(g_draft);
  llm_model_free(m);
  gpu_destroy(gpu);
  return rc;
}
