/* Jobs: generations stepped by the caller (jobs.h), the public generation parameters checked and converted, and
   the step policy for several jobs of one model: batched decode where it works, pipelined steps elsewhere. */
#include "jobs.h"
#include "kv_blocks.h"
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static uint64_t job_order; /* llm_job.order: jobs started so far, of every model */

static double now_seconds(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return t.tv_sec + t.tv_nsec * 1e-9;
}

static uint32_t random_seed(void) {
  uint32_t x = 0;
  if (getentropy(&x, sizeof x) != 0) { /* no entropy source: the clock's nanoseconds */
    struct timespec t;
    clock_gettime(CLOCK_REALTIME, &t);
    x = (uint32_t)t.tv_sec ^ (uint32_t)t.tv_nsec;
  }
  return x;
}

wgllm_status llm_gen_params_from_public(const wgllm_generate_params *p, llm_gen_params *gp, llm_err *err) {
  memset(gp, 0, sizeof *gp);
  /* written so that NaN fails every test; the sampler divides by temperature and repeat_penalty, so a value under
     the minimum (1e-82 from JSON is 0 as a float; 1e-40 is a denormal) would turn finite logits into infinities */
  const float lo = WGLLM_SAMPLING_SCALE_MIN, hi = WGLLM_SAMPLING_SCALE_MAX;
  if (!(p->temperature == 0 || (p->temperature >= lo && p->temperature <= hi)))
    return llm_err_set(err, WGLLM_ERR_INVALID_ARG, "sampling: temperature is %g; expected 0 (greedy) or from %g to %g",
                       p->temperature, lo, hi);
  if (!(p->repeat_penalty >= lo && p->repeat_penalty <= hi))
    return llm_err_set(err, WGLLM_ERR_INVALID_ARG, "sampling: repeat_penalty is %g; expected from %g to %g (1: off)",
                       p->repeat_penalty, lo, hi);
  if (!(p->top_p >= 0 && p->top_p <= 1 && p->min_p >= 0 && p->min_p <= 1))
    return llm_err_set(err, WGLLM_ERR_INVALID_ARG, "sampling: top_p and min_p must be in [0, 1] (got %g, %g)", p->top_p,
                       p->min_p);
  const float pen[2] = {p->presence_penalty, p->frequency_penalty};
  for (int i = 0; i < 2; i++)
    if (!isfinite(pen[i]) || pen[i] < -2 || pen[i] > 2)
      return llm_err_set(err, WGLLM_ERR_INVALID_ARG, "sampling: %s must be in [-2, 2] (got %g)",
                         i ? "frequency_penalty" : "presence_penalty", pen[i]);
  gp->max_tokens = p->max_tokens;
  gp->sampling.temperature = p->temperature;
  gp->sampling.top_k = p->top_k;
  gp->sampling.top_p = p->top_p;
  gp->sampling.min_p = p->min_p;
  gp->sampling.rep_penalty = p->repeat_penalty;
  gp->sampling.ring_cap = p->repeat_last_n > OP_SAMPLE_RING_MAX ? OP_SAMPLE_RING_MAX : p->repeat_last_n;
  gp->sampling.seed = p->seed == WGLLM_SEED_RANDOM ? random_seed() : p->seed;
  gp->sampling.presence = p->presence_penalty;
  gp->sampling.frequency = p->frequency_penalty;
  gp->stop = p->stop;
  gp->stop_len = p->stop_len;
  gp->n_stop = p->n_stop;
  gp->on_text = p->on_text;
  gp->user = p->user;
  gp->ignore_eog = p->ignore_eos;
  if (p->spec_lookup > WGLLM_SPEC_MAX || p->draft_max > WGLLM_SPEC_MAX)
    return llm_err_set(err, WGLLM_ERR_INVALID_ARG, "%s is %u drafts a step; at most %u",
                       p->spec_lookup > WGLLM_SPEC_MAX ? "spec_lookup" : "draft_max",
                       p->spec_lookup > WGLLM_SPEC_MAX ? p->spec_lookup : p->draft_max, WGLLM_SPEC_MAX);
  if (p->n_logit_bias > LLM_MAX_LOGIT_BIAS)
    return llm_err_set(err, WGLLM_ERR_INVALID_ARG, "logit_bias: %zu tokens; at most %u", p->n_logit_bias,
                       LLM_MAX_LOGIT_BIAS);
  if (p->n_logit_bias && (!p->logit_bias_ids || !p->logit_bias))
    return llm_err_set(err, WGLLM_ERR_INVALID_ARG, "logit_bias: %zu entries but no ids or biases", p->n_logit_bias);
  for (size_t k = 0; k < p->n_logit_bias; k++) {
    if (!isfinite(p->logit_bias[k]))
      return llm_err_set(err, WGLLM_ERR_INVALID_ARG, "logit_bias: token %d's bias is not finite", p->logit_bias_ids[k]);
    for (size_t q = 0; q < k; q++)
      if (p->logit_bias_ids[q] == p->logit_bias_ids[k])
        return llm_err_set(err, WGLLM_ERR_INVALID_ARG, "logit_bias: token %d appears twice", p->logit_bias_ids[k]);
  }
  if (p->top_logprobs > WGLLM_TOP_LOGPROBS_MAX)
    return llm_err_set(err, WGLLM_ERR_INVALID_ARG, "top_logprobs is %u; at most %u", p->top_logprobs,
                       WGLLM_TOP_LOGPROBS_MAX);
  gp->logprobs = p->logprobs != 0;
  gp->top_logprobs = p->logprobs ? p->top_logprobs : 0;
  gp->special = p->special != 0;
  gp->bias_ids = p->logit_bias_ids;
  gp->bias = p->logit_bias;
  gp->n_bias = (uint32_t)p->n_logit_bias;
  gp->spec_lookup = p->spec_lookup;
  gp->draft_max = p->draft_max; /* the draft model's session: the caller's (the API's session holds it) */
  if (p->n_keep < -1)
    return llm_err_set(err, WGLLM_ERR_INVALID_ARG, "n_keep is %d; expected -1 (the whole prompt) or a count of tokens",
                       p->n_keep);
  gp->context_shift = p->context_shift != 0;
  gp->n_keep = p->n_keep;
  return WGLLM_OK;
}

wgllm_status llm_job_start(llm_job *j, llm_session *s, const tokenizer *tok, const int32_t *ids, size_t n,
                           const llm_gen_params *gp, llm_err *err) {
  memset(j, 0, sizeof *j);
  if (n == 0) return llm_err_set(err, WGLLM_ERR_INVALID_ARG, "empty prompt: nothing to continue from");
  if (n >= s->opt.ctx)
    return llm_err_set(err, WGLLM_ERR_INVALID_ARG, "the prompt is %zu tokens, the context only %u", n, s->opt.ctx);
  uint32_t nv = s->m->hp.n_vocab;
  for (size_t i = 0; i < n; i++)
    if (ids[i] < 0 || (uint32_t)ids[i] >= nv)
      return llm_err_set(err, WGLLM_ERR_INVALID_ARG, "prompt token %zu is id %d, outside the vocabulary of %u", i,
                         ids[i], nv);
  j->s = s;
  j->n_prompt = (uint32_t)n;
  j->order = __atomic_add_fetch(&job_order, 1, __ATOMIC_RELAXED);
  /* keep the cached prefix, but always recompute at least the last prompt token (its logits are needed) */
  uint32_t keep = llm_session_common_prefix(s, ids, (uint32_t)n);
  if (keep >= n) keep = (uint32_t)n - 1;
  if (llm_session_queued(s)) llm_session_step_drain(s); /* an earlier generation may have left steps queued */
  keep = llm_session_rewind(s, keep);
  llm_kv_pool *pool = s->opt.pool;
  if (pool) { /* a longer prefix that sessions on the pool prefilled: taken instead of the session's own */
    llm_session_touch(s);
    if (kv_blocks_published_prefix(pool->blocks, ids, (uint32_t)n - 1) > keep) {
      llm_session_reset(s);
      keep = llm_session_adopt_prefix(s, ids, (uint32_t)n);
    }
  }
  j->cached = keep;
  /* the penalties look back over the whole prompt, cached prefix included, so a cache hit samples the same */
  llm_gen_params p = *gp;
  p.recent = ids;
  p.n_recent = (uint32_t)n;
  wgllm_status st = llm_gen_begin_deferred(&j->g, s, tok, ids + keep, (uint32_t)(n - keep), &p);
  if (st) {
    llm_err_set(err, st, "%s", s->err.msg);
    llm_gen_free(&j->g);
    memset(j, 0, sizeof *j);
  }
  return st;
}

/* The batched step in flight's jobs: each still going accepts the token it holds (the one that step fed), then takes
   the step's token; one that ended, failed or runs on `drop` drops it. */
static void collect_flying(llm_job_stepper *stepper, const llm_session *drop) {
  uint32_t n = stepper->n_flying;
  if (!n) return;
  llm_job *fj[LLM_BATCH_MAX];
  int keep[LLM_BATCH_MAX];
  int32_t tokens[LLM_BATCH_MAX];
  memcpy(fj, stepper->flying, n * sizeof *fj);
  stepper->n_flying = 0;
  for (uint32_t k = 0; k < n; k++) {
    llm_job *j = fj[k];
    j->flying = NULL;
    if (j->s != drop) llm_gen_accept(&j->g, 0);
    keep[k] = j->s != drop && !j->g.done && !j->g.st;
  }
  wgllm_status st = llm_batch_collect(stepper->batch, tokens, keep);
  for (uint32_t k = 0; k < n; k++) {
    if (!keep[k]) continue;
    if (st) {
      llm_err_set(&fj[k]->s->err, st, "%s", stepper->batch->err.msg);
      llm_gen_fail(&fj[k]->g, st);
    } else {
      llm_gen_take(&fj[k]->g, tokens[k]);
      fj[k]->batched++;
    }
  }
}

void llm_job_stepper_settle(llm_job_stepper *stepper, const llm_session *drop) {
  collect_flying(stepper, drop);
  llm_batch_drain(stepper->batch, drop); /* none: every step in flight is the stepper's */
}

wgllm_status llm_job_step(llm_job *j, int *done) {
  if (j->flying) llm_job_stepper_settle(j->flying, NULL);
  if (j->s->evicted && !j->g.done) { /* preempted by another call: recomputed first */
    wgllm_status st = llm_session_restore(j->s);
    if (st) llm_gen_fail(&j->g, st);
  }
  if (j->g.prefilling) llm_gen_prefill(&j->g, 0); /* the whole prompt, then its first token's text */
  j->g.spec_pause = 0;                            /* alone: it speculates if it was asked to */
  if (!j->g.done) {
    llm_gen_accept(&j->g, 1);
    llm_gen_collect(&j->g);
  }
  if (done) *done = j->g.done;
  return j->g.st;
}

static int in_batch(llm_job *const *batch, uint32_t n, const llm_job *j) {
  for (uint32_t k = 0; k < n; k++)
    if (batch[k] == j) return 1;
  return 0;
}

/* Blocks job j takes from its pool this call: its prompt's next chunk, or its next token and the steps it may
   queue. */
static uint32_t job_need(const llm_job *j) {
  const llm_session *s = j->s;
  if (s->evicted) return llm_session_restore_blocks(s) + 1;
  if (j->g.prefilling) {
    uint32_t left = j->g.res.n_prompt - j->g.prefilled, chunk = s->opt.prefill_chunk;
    return llm_session_blocks_for(s, s->n_past + (left < chunk ? left : chunk));
  }
  uint32_t upto = s->n_past + (uint32_t)s->in_flight + (uint32_t)s->batch_queued + 1 + LLM_MAX_IN_FLIGHT;
  return llm_session_blocks_for(s, upto < s->opt.ctx ? upto : s->opt.ctx); /* steps never go past the context */
}

/* Brings a job's queued steps in, their tokens accepted as the steps of a call would (text emitted, stops seen),
   so that its session has none queued and can be evicted without dropping draws of its sampler. */
static void settle(llm_job *j) {
  if (j->flying) llm_job_stepper_settle(j->flying, NULL);
  while (j->s->in_flight && !j->g.done && !j->g.st) {
    llm_gen_accept(&j->g, 0);
    if (!j->g.done) llm_gen_collect(&j->g);
  }
  if (j->g.done) j->s->stamp = 0; /* no job of this call runs on it now: its cache may go (evict_idle) */
}

/* Evicts sessions on the pool with no job in this call (stamp) and nothing queued, least recently started first,
   until `want` blocks are available or none is left. */
static void evict_idle(llm_kv_pool *pool, uint64_t stamp, uint32_t want) {
  for (llm_session *o = pool->first; o && want > kv_blocks_available(pool->blocks); o = o->pool_next)
    if (o->stamp != stamp && !llm_session_queued(o) && !o->batch_queued && o->seq.n_blocks) llm_session_evict(o);
}

/* The pool's side of a call (see jobs.h): which jobs wait, which sessions are evicted, which jobs are restored. */
static void pool_pressure(llm_job *const *jobs, size_t n) {
  static uint64_t calls;
  llm_kv_pool *pool = NULL;
  uint64_t stamp = __atomic_add_fetch(&calls, 1, __ATOMIC_RELAXED);
  for (size_t i = 0; i < n; i++) {
    jobs[i]->waits = 0;
    jobs[i]->s->stamp = stamp;
    if (!jobs[i]->g.done && jobs[i]->s->opt.pool) pool = jobs[i]->s->opt.pool;
  }
  if (!pool) return;
  /* the jobs on it, oldest first */
  llm_job *by_age[LLM_BATCH_MAX * 4];
  size_t m = 0;
  for (size_t i = 0; i < n && m < sizeof by_age / sizeof by_age[0]; i++) {
    llm_job *j = jobs[i];
    if (j->g.done || j->s->opt.pool != pool) continue;
    size_t k = m++;
    for (; k > 0 && by_age[k - 1]->order > j->order; k--)
      by_age[k] = by_age[k - 1];
    by_age[k] = j;
  }
  kv_blocks *pb = pool->blocks;
  uint32_t used = 0;
  int blocked = 0; /* a running job waits: no evicted one comes back before it */
  for (size_t k = 0; k < m; k++) {
    llm_job *j = by_age[k];
    if (j->s->evicted) continue;
    uint32_t need = job_need(j);
    /* idle sessions first, least recently started first; then the newest jobs */
    evict_idle(pool, stamp, used + need);
    for (size_t v = m; v-- > k + 1 && used + need > kv_blocks_available(pb);) {
      llm_job *victim = by_age[v];
      if (victim->s->evicted) continue;
      settle(victim);
      if (victim->g.done) continue; /* it ended there: its blocks are the idle sessions' now */
      llm_session_evict(victim->s);
      victim->preemptions++;
    }
    evict_idle(pool, stamp, used + need); /* the sessions of jobs that ended while settling */
    if (used + need <= kv_blocks_available(pb)) {
      used += need;
    } else if (k == 0 && !blocked) { /* the oldest, alone with its blocks: the pool cannot hold it */
      llm_err_set(&j->s->err, WGLLM_ERR_KV_FULL,
                  "the KV pool of %u blocks of %u tokens cannot hold this sequence's next tokens (%u blocks more, %u "
                  "available)",
                  kv_blocks_total(pb), kv_blocks_block(pb), need, kv_blocks_available(pb));
      llm_gen_fail(&j->g, WGLLM_ERR_KV_FULL);
    } else {
      j->waits = blocked = 1;
    }
  }
  /* evicted jobs back, oldest first, while there is room for them and a block more for each running job (restored
     into a pool that the running jobs fill at their next token, a job would be evicted again at once) */
  uint32_t running = 0;
  for (size_t k = 0; k < m; k++)
    running += !by_age[k]->g.done && !by_age[k]->s->evicted && !by_age[k]->waits;
  for (size_t k = 0; k < m; k++) {
    llm_job *j = by_age[k];
    if (j->g.done || !j->s->evicted) continue;
    uint32_t need = job_need(j) + running;
    if (!blocked) evict_idle(pool, stamp, used + need);
    if (blocked || used + need > kv_blocks_available(pb)) {
      j->waits = blocked = 1;
      continue;
    }
    wgllm_status st = llm_session_restore(j->s);
    if (st == WGLLM_ERR_KV_FULL) {
      j->waits = blocked = 1;
    } else if (st) {
      llm_gen_fail(&j->g, st);
    } else {
      used += job_need(j);
      running++;
      j->waits = 1; /* it steps from the next call */
    }
  }
}

/* The prefilling jobs' next chunks in one batched prefill (batch.h) where two or more prefill: in the order given,
   each its next chunk's tokens while the pass has room (the first job's prefill_chunk rows in all; a job the pass
   has no room for waits for the next call). Returns 1 when it took care of the prefilling jobs (they ran, or
   failed), 0 when they prefill one by one (fewer than two, no batching, or a model the pass does not take). */
static int prefill_together(llm_job_stepper *stepper, llm_job *const *jobs, size_t n) {
  llm_job *pj[LLM_BATCH_MAX];
  llm_session *ps[LLM_BATCH_MAX];
  const int32_t *pids[LLM_BATCH_MAX];
  uint32_t counts[LLM_BATCH_MAX];
  int sample[LLM_BATCH_MAX];
  int32_t tokens[LLM_BATCH_MAX];
  uint32_t np = 0, room = 0, waiting = 0;
  for (size_t i = 0; i < n; i++) {
    llm_job *j = jobs[i];
    if (j->g.done || j->waits || !j->g.prefilling || llm_gen_solo(&j->g)) continue; /* a solo job prefills alone */
    if (!np) room = j->s->opt.prefill_chunk;
    uint32_t left = j->g.res.n_prompt - j->g.prefilled, take = left < room ? left : room;
    if (np == LLM_BATCH_MAX || !take || j->s->opt.fast != jobs[0]->s->opt.fast) {
      waiting++;
      continue;
    }
    pj[np] = j;
    ps[np] = j->s;
    pids[np] = j->g.pending + j->g.prefilled;
    counts[np] = take;
    sample[np] = take == left;
    tokens[np] = 0;
    room -= take;
    np++;
  }
  if (np + waiting < 2 || stepper->no_batch || stepper->no_prefill_batch) return 0;
  llm_err err = {0};
  double t0 = now_seconds();
  wgllm_status st = llm_prefill_batch(ps, pids, counts, np, sample, tokens, &err);
  if (st == WGLLM_ERR_UNSUPPORTED) {
    stepper->no_prefill_batch = 1;
    return 0;
  }
  double dt = now_seconds() - t0;
  for (uint32_t k = 0; k < np; k++) {
    if (st) {
      llm_err_set(&ps[k]->err, st, "%s", err.msg);
      llm_gen_fail(&pj[k]->g, st);
    } else {
      llm_gen_prefilled(&pj[k]->g, counts[k], tokens[k], dt);
      if (np > 1) pj[k]->prefilled_together += counts[k];
    }
  }
  return 1;
}

/* Whether the job runs its own verify steps this call: it speculates and decodes alone, or still has tokens of its
   last verify step to give (a speculating job among other decoding ones takes the batched step: spec_pause). */
static int speculates(const llm_job *j) { return j->g.spec && (!j->g.spec_pause || j->g.spec_at < j->g.spec_n); }

/* Whether every job of the step in flight is among jobs[0..n). */
static int flying_all_in(const llm_job_stepper *stepper, llm_job *const *jobs, size_t n) {
  for (uint32_t k = 0; k < stepper->n_flying; k++) {
    size_t i = 0;
    while (i < n && jobs[i] != stepper->flying[k])
      i++;
    if (i == n) return 0;
  }
  return 1;
}

/* Whether a job of the step in flight still needs the token after it: the one in flight will not end it by the
   token limit or the context. */
static int needs_next(const llm_job *j) {
  const llm_session *s = j->s;
  return j->g.res.n_generated + 1 < j->g.max_tokens && s->n_past + (uint32_t)s->batch_queued + 1 < s->opt.ctx;
}

/* A job still prefilling takes one chunk of its prompt this call (its last samples its first token), so a long
   prompt holds the others' steps for a chunk at a time; the others accept their token and step below. The jobs that
   decode together take one batched step, queued behind the batched step the last call left in flight (the jobs of
   both get their ids from it on the GPU; a job that joins gets its id from the CPU); then that step is collected
   (its jobs take their tokens: the one each accepts next call) and this one is left in flight, so the GPU runs it
   while the caller does its work between calls and the next call queues the step after it (two batched steps in
   flight). A job of the step in flight joins the next only while the token in flight cannot end it by the token
   limit or the context; one that ended otherwise (an end-of-generation token, a stop string) drops the token the
   next step sampled for it. A job that joined gets no token in its first call (its step is still in flight). The
   step in flight is collected first when a call does not step all of its jobs, or steps them one by one. A job
   that cannot be batched this call (it decodes alone, the model does not batch, or batches of this many failed to
   record) keeps its pipeline as llm_job_step does: up to two steps queued, so the GPU runs the next step while the
   CPU collects this one (one served client, H200: 574 tok/s a stream one step at a time, 792 so; PERF.md). A queued
   step keeps its job out of the next call's batch, once. */
wgllm_status llm_jobs_step(llm_job_stepper *stepper, llm_job *const *jobs, size_t n) {
  /* the step in flight is collected up front when one of its jobs is not stepped by this call */
  if (stepper->n_flying && !flying_all_in(stepper, jobs, n)) collect_flying(stepper, NULL);
  pool_pressure(jobs, n);
  size_t n_decoding = 0;
  for (size_t i = 0; i < n; i++)
    n_decoding += !jobs[i]->g.done && !jobs[i]->g.prefilling && !jobs[i]->waits;
  for (size_t i = 0; i < n; i++)
    jobs[i]->g.spec_pause = n_decoding > 1; /* several decode: the batched step serves them better than speculation */
  int pipeline = n_decoding == 1 || stepper->no_batch ||
                 (stepper->batch && llm_batch_refuses(stepper->batch, (uint32_t)n_decoding));
  if (pipeline) collect_flying(stepper, NULL); /* the jobs step one by one from here */
  int batched_prefill = prefill_together(stepper, jobs, n);
  for (size_t i = 0; i < n; i++) {
    llm_job *j = jobs[i];
    j->decodes = 0;
    if (j->g.done || j->waits) continue;
    if (j->g.prefilling) {
      if (!batched_prefill || llm_gen_solo(&j->g)) llm_gen_prefill(&j->g, j->s->opt.prefill_chunk);
    } else {
      llm_gen_accept(&j->g, pipeline);
      j->decodes = !j->g.done;
    }
  }
  /* up to LLM_BATCH_MAX jobs with nothing queued of their own decode in one batched step: queued behind the step in
     flight (which feeds its jobs' ids on the GPU), then that one is collected, and this one left in flight */
  llm_job *qj[LLM_BATCH_MAX]; /* the step in flight's jobs: they take its tokens this call */
  uint32_t nq = stepper->n_flying;
  memcpy(qj, stepper->flying, nq * sizeof *qj);
  llm_session *bs[LLM_BATCH_MAX];
  llm_job *bj[LLM_BATCH_MAX];
  uint32_t nb = 0;
  for (size_t i = 0; i < n && nb < LLM_BATCH_MAX; i++) {
    llm_job *j = jobs[i];
    if (j->decodes && !j->s->in_flight && !j->g.st && !speculates(j) && !llm_gen_solo(&j->g) &&
        (!j->flying || needs_next(j))) {
      bj[nb] = j;
      bs[nb++] = j->s;
    }
  }
  if (nb >= 2 && !stepper->no_batch && !stepper->batch) {
    if (llm_batch_create(stepper->m, &stepper->batch, NULL)) stepper->no_batch = 1; /* one by one, then */
  }
  uint32_t n_batched = 0; /* bj[0..n_batched) took the batched step */
  if (nb >= 2 && !stepper->no_batch && llm_batch_accepts(stepper->batch, bs, nb)) {
    wgllm_status st = llm_batch_submit(stepper->batch, bs, nb);
    if (!st && nq) stepper->overlapped++;
    if (st != WGLLM_ERR_UNSUPPORTED) { /* unsupported: the model cannot batch; one after another */
      n_batched = nb;
      for (uint32_t k = 0; st && k < nb; k++) {
        llm_err_set(&bs[k]->err, st, "%s", stepper->batch->err.msg);
        llm_gen_fail(&bj[k]->g, st);
      }
      if (st) n_batched = 0;
    }
  }
  for (size_t i = 0; i < n; i++) { /* the others: queue a step for each that has none, then collect */
    llm_job *j = jobs[i];
    if (!j->decodes || in_batch(bj, n_batched, j) || in_batch(qj, nq, j) || j->s->in_flight || j->g.done ||
        speculates(j)) /* speculation steps in its collect */
      continue;
    wgllm_status st = llm_session_step_submit(j->s);
    if (st)
      llm_gen_fail(&j->g, st);
    else
      j->g.queued++;
  }
  collect_flying(stepper, NULL); /* the step before this one: its jobs take their tokens */
  for (uint32_t k = 0; k < n_batched; k++) {
    bj[k]->flying = stepper;
    stepper->flying[k] = bj[k];
  }
  stepper->n_flying = n_batched;
  wgllm_status first = WGLLM_OK;
  for (size_t i = 0; i < n; i++) {
    llm_job *j = jobs[i];
    if (j->decodes && !in_batch(bj, n_batched, j) && !in_batch(qj, nq, j) && !j->g.done) llm_gen_collect(&j->g);
    if (j->g.st && !first) first = j->g.st;
  }
  return first;
}

char *llm_job_take_text(llm_job *j) {
  char *text = j->g.text.buf;
  j->g.text.buf = NULL;
  j->g.text.len = j->g.text.cap = j->g.text.emitted = 0;
  return text;
}

void llm_job_release(llm_job *j) {
  if (j->flying) llm_job_stepper_settle(j->flying, j->s); /* its token in flight is dropped */
  if (j->s) llm_gen_free(&j->g);
  memset(j, 0, sizeof *j);
}

void llm_job_stepper_forget(llm_job_stepper *stepper, const llm_session *s) {
  llm_job_stepper_settle(stepper, s);
  llm_batch_forget(stepper->batch, s);
}

void llm_job_stepper_free(llm_job_stepper *stepper) {
  llm_job_stepper_settle(stepper, NULL);
  llm_batch_free(stepper->batch);
  stepper->batch = NULL;
}
