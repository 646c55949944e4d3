/* Sessions on a paged KV pool (runtime/kv_pool.h) on the transformers fixtures: jobs joining and leaving a batch at
   any step (each batched step queued behind the one in flight, its ids fed on the GPU), with shared prompt prefixes
   (blocks taken from other sessions' prefills), prompts that start in one call prefilled together in one pass, and
   under a pool too small for all of them (the newest jobs evicted and recomputed), each give the ids they give alone on
   a cache of their own, bit for bit, sampled with a seed; the oldest job fails with WGLLM_ERR_KV_FULL only when the
   pool cannot hold it alone; and the pool's accounting holds through 10,000 random reservations, rewinds, evictions,
   prefix adoptions and resets of many sessions (kv_blocks_check over every session's table), every block back when they
   end. */
#include "harness.h"
#include "jobs.h"
#include <stdlib.h>
#include <string.h>

enum { NJ = 10, PROMPT_MAX = 48 };

typedef struct job_plan {
  int32_t prompt[PROMPT_MAX];
  uint32_t n_prompt, max_tokens, start_call; /* joins at call start_call of the shared run */
} job_plan;

static llm_model *load(const char *name) {
  char p[300];
  llm_err err = {0};
  snprintf(p, sizeof p, "data/models/%s", name);
  llm_load_options lo = {0};
  CHECK(llm_parse_weight_policy("q4", &lo.weights, &err) == WGLLM_OK, "%s", err.msg);
  llm_model *m = NULL;
  wgllm_status st = llm_model_load(th_gpu(), p, &lo, &m, &err);
  CHECK(st == WGLLM_OK, "%s: load: %s", name, err.msg);
  return st ? NULL : m;
}

static llm_gen_params params_of(uint32_t i, uint32_t max_tokens) {
  llm_gen_params gp = {0};
  gp.max_tokens = max_tokens;
  gp.ignore_eog = 1;
  gp.sampling = (op_sample_params){.temperature = 0.9f,
                                   .top_p = 0.95f,
                                   .min_p = 0.0f,
                                   .rep_penalty = 1.15f,
                                   .top_k = 0,
                                   .ring_cap = 32,
                                   .seed = 11u + i};
  return gp;
}

/* The plans: groups of jobs whose prompts start with the same 32 or 16 tokens, lengths 20 to 48, joins spread
   over the first calls, token limits that make them leave at different steps. */
static void make_plans(job_plan *pl, uint32_t n_vocab, th_rng *r) {
  for (uint32_t i = 0; i < NJ; i++) {
    job_plan *p = &pl[i];
    p->n_prompt = 20 + th_u32(r) % (PROMPT_MAX - 20 + 1);
    uint32_t group = i % 3, shared = group == 0 ? 32 : group == 1 ? 16 : 0;
    for (uint32_t k = 0; k < p->n_prompt; k++)
      p->prompt[k] = (int32_t)(k < shared ? (k * 37 + group * 101 + 5) % n_vocab : th_u32(r) % n_vocab);
    p->max_tokens = 6 + th_u32(r) % 30;
    p->start_call = i < 2 ? 0 : th_u32(r) % 12;
  }
}

/* Each plan's ids alone, on a session with its own cache. */
static int run_alone(llm_model *m, const llm_session_options *so, const job_plan *pl, int32_t **want) {
  for (uint32_t i = 0; i < NJ; i++) {
    llm_session *s = NULL;
    llm_err err = {0};
    wgllm_status st = llm_session_create(m, so, &s, &err);
    CHECK(st == WGLLM_OK, "alone %u: session: %s", i, err.msg);
    if (st) return 0;
    llm_job j;
    llm_gen_params gp = params_of(i, pl[i].max_tokens);
    st = llm_job_start(&j, s, NULL, pl[i].prompt, pl[i].n_prompt, &gp, &err);
    int done = 0;
    while (!st && !done)
      st = llm_job_step(&j, &done);
    CHECK(st == WGLLM_OK && j.g.res.n_generated == pl[i].max_tokens, "alone %u: %s (%u tokens)", i, s->err.msg,
          j.g.res.n_generated);
    want[i] = calloc(pl[i].max_tokens + 1, sizeof **want);
    memcpy(want[i], j.g.res.tokens, j.g.res.n_generated * sizeof **want);
    llm_job_release(&j);
    llm_session_free(s);
    if (st) return 0;
  }
  return 1;
}

/* The plans together on one pool of pool_tokens: jobs start at their call, all stepped by llm_jobs_step until done.
   Returns the preemptions seen; *cached the prompt tokens taken from the pool. */
static uint32_t run_pooled(llm_model *m, const llm_session_options *so0, const job_plan *pl, int32_t **want,
                           uint32_t pool_tokens, const char *what, uint32_t *cached, int batches, int together_ok) {
  llm_err err = {0};
  llm_kv_pool *pool = NULL;
  wgllm_status st = llm_kv_pool_create(m, pool_tokens, so0->ctx, so0->kv_f16, &pool, &err);
  CHECK(st == WGLLM_OK, "%s: pool: %s", what, err.msg);
  if (st) return 0;
  llm_session_options so = *so0;
  so.pool = pool;
  llm_session *ss[NJ] = {0};
  llm_job jobs[NJ];
  int started[NJ] = {0};
  memset(jobs, 0, sizeof jobs);
  llm_job_stepper stepper = {.m = m};
  for (uint32_t i = 0; !st && i < NJ; i++) {
    st = llm_session_create(m, &so, &ss[i], &err);
    CHECK(st == WGLLM_OK, "%s: session %u: %s", what, i, err.msg);
  }
  uint32_t preempted = 0, batched = 0, together = 0;
  *cached = 0;
  for (uint32_t call = 0; !st && call < 400; call++) {
    llm_job *active[NJ];
    size_t n = 0;
    for (uint32_t i = 0; i < NJ; i++) {
      if (!started[i] && pl[i].start_call <= call) {
        llm_gen_params gp = params_of(i, pl[i].max_tokens);
        st = llm_job_start(&jobs[i], ss[i], NULL, pl[i].prompt, pl[i].n_prompt, &gp, &err);
        CHECK(st == WGLLM_OK, "%s: start %u: %s", what, i, err.msg);
        started[i] = 1;
      }
      if (started[i] && !jobs[i].g.done) active[n++] = &jobs[i];
    }
    if (!n && call > 12) break;
    if (n) llm_jobs_step(&stepper, active, n);
  }
  for (uint32_t i = 0; i < NJ; i++) {
    llm_job *j = &jobs[i];
    CHECK(started[i] && j->g.done && j->g.st == WGLLM_OK && j->g.res.n_generated == pl[i].max_tokens,
          "%s: job %u finished (%s; %u of %u tokens)", what, i, ss[i] ? ss[i]->err.msg : "", j->g.res.n_generated,
          pl[i].max_tokens);
    uint32_t first = pl[i].max_tokens;
    for (uint32_t g = 0; g < j->g.res.n_generated && first == pl[i].max_tokens; g++)
      if (j->g.res.tokens[g] != want[i][g]) first = g;
    CHECK(first == pl[i].max_tokens, "%s: job %u gives its ids alone (first difference at token %u of %u)", what, i,
          first, pl[i].max_tokens);
    preempted += j->preemptions;
    batched += j->batched;
    together += j->prefilled_together;
    *cached += j->cached;
    llm_job_release(j);
  }
  if (batches) {
    CHECK(batched > 0, "%s: tokens came from batched steps (%u)", what, batched);
    if (together_ok) CHECK(together > 0, "%s: prompts were prefilled together (%u tokens)", what, together);
    CHECK(stepper.overlapped > 0, "%s: batched steps were queued behind the one in flight (%u)", what,
          stepper.overlapped);
  }
  const kv_seq *seqs[NJ];
  for (uint32_t i = 0; i < NJ; i++)
    seqs[i] = &ss[i]->seq;
  CHECK(kv_blocks_check(pool->blocks, seqs, NJ, &err), "%s: pool accounting: %s", what, err.msg);
  llm_job_stepper_free(&stepper);
  for (uint32_t i = 0; i < NJ; i++)
    llm_session_free(ss[i]);
  CHECK(kv_blocks_available(pool->blocks) == kv_blocks_total(pool->blocks),
        "%s: every block back when the sessions end (%u of %u)", what, kv_blocks_available(pool->blocks),
        kv_blocks_total(pool->blocks));
  CHECK(llm_kv_pool_free(pool), "%s: the pool is freed after its sessions", what);
  return preempted;
}

/* batches: the model takes the batched decode (every family); together: and the batched prefill (not Gemma 4) */
static void pooled_case(const char *name, int f16, uint32_t seed, int batches, int together) {
  llm_model *m = load(name);
  if (!m) return;
  th_rng r = {seed};
  job_plan pl[NJ];
  make_plans(pl, m->hp.n_vocab, &r);
  llm_session_options so = {.ctx = 128, .prefill_chunk = 16, .kv_f16 = f16};
  int32_t *want[NJ] = {0};
  char what[96];
  if (run_alone(m, &so, pl, want)) {
    uint32_t cached = 0;
    snprintf(what, sizeof what, "%s%s, a roomy pool", name, f16 ? " f16" : "");
    uint32_t pre = run_pooled(m, &so, pl, want, NJ * 128, what, &cached, batches, together);
    CHECK(pre == 0, "%s: nothing evicted (%u)", what, pre);
    CHECK(cached >= 16, "%s: prompts took shared prefixes from the pool (%u tokens)", what, cached);
    /* room for about three sequences: the newest are evicted, recomputed, and still give their ids */
    snprintf(what, sizeof what, "%s%s, a pool of 240 tokens", name, f16 ? " f16" : "");
    pre = run_pooled(m, &so, pl, want, 240, what, &cached, batches, together);
    CHECK(pre > 0, "%s: jobs were evicted under pressure (%u)", what, pre);
  }
  for (uint32_t i = 0; i < NJ; i++)
    free(want[i]);
  llm_model_free(m);
}

/* A pool that cannot hold one sequence: its job fails with WGLLM_ERR_KV_FULL, saying so; nothing else breaks. */
static void too_small(void) {
  llm_model *m = load("llama_gqa");
  if (!m) return;
  llm_err err = {0};
  llm_kv_pool *pool = NULL;
  wgllm_status st = llm_kv_pool_create(m, 32, 128, 0, &pool, &err);
  CHECK(st == WGLLM_OK, "small pool: %s", err.msg);
  llm_session_options so = {.ctx = 128, .prefill_chunk = 16, .pool = pool};
  llm_session *s = NULL;
  if (!st) st = llm_session_create(m, &so, &s, &err);
  CHECK(st == WGLLM_OK, "small pool session: %s", err.msg);
  if (!st) {
    int32_t prompt[40];
    for (int i = 0; i < 40; i++)
      prompt[i] = (i * 7 + 3) % (int32_t)m->hp.n_vocab;
    llm_job j;
    llm_gen_params gp = params_of(0, 8);
    llm_job_stepper stepper = {.m = m};
    st = llm_job_start(&j, s, NULL, prompt, 40, &gp, &err);
    CHECK(st == WGLLM_OK, "small pool start: %s", err.msg);
    llm_job *one = &j;
    for (int k = 0; k < 10 && !j.g.done; k++)
      llm_jobs_step(&stepper, &one, 1);
    CHECK(j.g.done && j.g.st == WGLLM_ERR_KV_FULL && strstr(s->err.msg, "KV pool"),
          "a sequence over the pool fails with WGLLM_ERR_KV_FULL (%s: %s)", wgllm_status_name(j.g.st), s->err.msg);
    llm_job_release(&j);
    llm_job_stepper_free(&stepper);
    /* the session is still usable: a prompt that fits */
    llm_session_reset(s);
    CHECK(llm_session_prefill(s, prompt, 20, NULL, 0) == WGLLM_OK, "a prompt that fits after: %s", s->err.msg);
  }
  llm_session_free(s);
  CHECK(llm_kv_pool_free(pool), "small pool freed");
  /* a session the pool was not made for is refused, naming both */
  llm_kv_pool *p2 = NULL;
  st = llm_kv_pool_create(m, 64, 64, 1, &p2, &err);
  llm_session_options bad = {.ctx = 128, .pool = p2, .kv_f16 = 1};
  llm_session *s2 = NULL;
  st = st ? st : llm_session_create(m, &bad, &s2, &err);
  CHECK(st == WGLLM_ERR_INVALID_ARG && strstr(err.msg, "at most 64"),
        "a session over the pool's context is refused: %s", err.msg);
  llm_kv_pool_free(p2);
  llm_model_free(m);
}

/* 10,000 random operations on 16 sessions of one pool (no forward passes: reservations, rewinds, evictions,
   restores' bookkeeping, adoptions of published prefixes, resets, frees and new sessions), the accounting checked
   every 100 and at the end. */
static void accounting_soak(void) {
  llm_model *m = load("llama_gqa");
  if (!m) return;
  llm_err err = {0};
  llm_kv_pool *pool = NULL;
  wgllm_status st = llm_kv_pool_create(m, 16 * 24, 160, 0, &pool, &err);
  CHECK(st == WGLLM_OK, "soak pool: %s", err.msg);
  enum { NS = 16 };
  llm_session *ss[NS] = {0};
  llm_session_options so = {.ctx = 160, .prefill_chunk = 16, .pool = pool};
  for (int i = 0; !st && i < NS; i++)
    st = llm_session_create(m, &so, &ss[i], &err);
  CHECK(st == WGLLM_OK, "soak sessions: %s", err.msg);
  th_rng r = {99};
  int32_t prefixes[4][160];
  for (int g = 0; g < 4; g++)
    for (int k = 0; k < 160; k++)
      prefixes[g][k] = (int32_t)((k * 13 + g * 7919) % m->hp.n_vocab);
  uint32_t full = 0, adopted = 0, bad = 0;
  for (int it = 0; !st && it < 10000; it++) {
    uint32_t idx = th_u32(&r) % NS;
    llm_session *s = ss[idx];
    switch (th_u32(&r) % 7) {
    case 0:
    case 1: { /* grows, as a prefill of the group's prompt would (its tokens recorded as prefilled) */
      if (s->evicted) break;
      uint32_t add = 1 + th_u32(&r) % 40, to = s->n_past + add;
      if (to > 160) to = 160;
      wgllm_status rs = llm_session_reserve(s, to);
      if (rs == WGLLM_ERR_KV_FULL)
        full++;
      else if (rs)
        bad++;
      else {
        const int32_t *src = prefixes[idx % 4];
        for (uint32_t k = s->n_past; k < to; k++) {
          s->fed[k] = src[k];
          s->decoded[k] = 0;
        }
        if (s->lead == s->n_past) s->lead = to;
        s->n_past = to;
        kv_seq_publish(pool->blocks, &s->seq, s->fed, s->lead);
      }
      break;
    }
    case 2:
      llm_session_rewind(s, s->n_past ? th_u32(&r) % s->n_past : 0);
      break;
    case 3:
      if (!s->in_flight) llm_session_evict(s);
      break;
    case 4:
      llm_session_reset(s);
      adopted += llm_session_adopt_prefix(s, prefixes[idx % 4], 1 + th_u32(&r) % 160);
      break;
    case 5:
      llm_session_reset(s);
      break;
    case 6: { /* a session leaves and another joins in its place */
      int k = (int)(th_u32(&r) % NS);
      llm_session_free(ss[k]);
      ss[k] = NULL;
      st = llm_session_create(m, &so, &ss[k], &err);
      CHECK(st == WGLLM_OK, "soak: a new session: %s", err.msg);
      break;
    }
    }
    if (!st && it % 100 == 99) {
      const kv_seq *seqs[NS];
      for (int i = 0; i < NS; i++)
        seqs[i] = &ss[i]->seq;
      if (!kv_blocks_check(pool->blocks, seqs, NS, &err)) {
        CHECK(0, "soak: accounting after %d operations: %s", it + 1, err.msg);
        break;
      }
    }
  }
  CHECK(bad == 0, "soak: reservations failed only for a full pool (%u other failures)", bad);
  CHECK(full > 0 && adopted > 0, "soak: the pool ran full (%u times) and prefixes were adopted (%u tokens)", full,
        adopted);
  for (int i = 0; i < NS; i++)
    llm_session_free(ss[i]);
  CHECK(kv_blocks_available(pool->blocks) == kv_blocks_total(pool->blocks), "soak: no block leaked (%u of %u back)",
        kv_blocks_available(pool->blocks), kv_blocks_total(pool->blocks));
  CHECK(llm_kv_pool_free(pool), "soak pool freed");
  llm_model_free(m);
}

int main(void) {
  th_gpu();
  accounting_soak();
  too_small();
  pooled_case("llama_gqa", 0, 1, 1, 1);
  pooled_case("qwen3", 1, 2, 1, 1);  /* per-head q/k norms, an f16 pool */
  pooled_case("gemma3", 0, 3, 1, 1); /* window layers: rings of each session's own beside the pooled global layers */
  pooled_case("gemma4_kv_shared", 0, 4, 1, 0); /* KV-shared layers read their source layer's blocks (batched too) */
  th_gpu_done();
  return th_finish("test_kv_pool");
}
