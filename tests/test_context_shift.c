/* Context shift in the middle of a reply (llm_gen_params.context_shift, issue 30 item 8) on the transformers
   fixtures: without it a reply stops at the context's end (LLM_STOP_CONTEXT); with it the reply goes on past the
   context several times over, and after every shift the tokens are the ones a fresh session gives from exactly the
   tokens kept (the shifts replayed on the CPU from the prompt and the reply, greedy with a repetition penalty whose
   window runs over the text as generated); the cache holds the kept tokens at the end; on a paged KV pool with two
   jobs stepped together (batched) each job gives the tokens it gives alone; a model with sliding-window layers as
   rings (a shift's rewind empties the cache: recomputed from 0); prompt lookup speculation gives the text without it
   (it ends at the first shift). */
#include "generate.h"
#include "harness.h"
#include "jobs.h"
#include "kv_pool.h"
#include <stdlib.h>
#include <string.h>

enum { NP = 12, MAX_EVENTS = 64 };

static llm_gen_params shift_params(uint32_t max_tokens, int shift, int32_t n_keep) {
  llm_gen_params gp = {.max_tokens = max_tokens,
                       .sampling = {.temperature = 0, .top_p = 1, .rep_penalty = 1.3f, .ring_cap = 24},
                       .context_shift = shift,
                       .n_keep = n_keep};
  return gp;
}

static void make_prompt(const llm_model *m, uint32_t salt, int32_t *prompt) {
  for (uint32_t k = 0; k < NP; k++)
    prompt[k] = (int32_t)((k * 37 + salt * 101 + 5) % m->hp.n_vocab);
}

/* The shifts of a generation (prompt, then tokens[0..n)) on a context of ctx replayed on the CPU as the spec says:
   token i accepted, and not the last, with the cache's len tokens leaving no room (len + 1 >= ctx), the first keep
   stay (n_keep and a leading BOS, the whole prompt for -1, at most len - 2), half of the rest after them goes; then
   token i is fed. seen[e]: what the model saw after shift e, with token at[e] (its reference's prompt); seq: the
   cache at the end. Returns the number of shifts. */
typedef struct replay {
  uint32_t n_events, at[MAX_EVENTS], n_seen[MAX_EVENTS];
  int32_t *seen[MAX_EVENTS];
  int32_t *seq;
  uint32_t len;
} replay;

static void replay_shifts(const llm_model *m, const int32_t *prompt, const int32_t *tokens, uint32_t n, uint32_t ctx,
                          int32_t n_keep, replay *r) {
  memset(r, 0, sizeof *r);
  r->seq = malloc((size_t)(ctx + 1) * sizeof *r->seq);
  memcpy(r->seq, prompt, NP * sizeof *prompt);
  r->len = NP;
  int32_t bos = m->hp.bos;
  for (uint32_t i = 0; i + 1 < n; i++) {
    if (r->len + 1 >= ctx && r->n_events < MAX_EVENTS) {
      uint32_t keep = NP, lead = bos >= 0 && r->seq[0] == bos;
      if (n_keep >= 0 && (uint32_t)n_keep + lead < keep) keep = (uint32_t)n_keep + lead;
      if (keep > r->len - 2) keep = r->len - 2;
      uint32_t drop = (r->len - keep) / 2;
      memmove(r->seq + keep, r->seq + keep + drop, (r->len - keep - drop) * sizeof *r->seq);
      r->len -= drop;
      uint32_t e = r->n_events++;
      r->at[e] = i;
      r->n_seen[e] = r->len + 1;
      r->seen[e] = malloc((r->len + 1) * sizeof *r->seen[e]);
      memcpy(r->seen[e], r->seq, r->len * sizeof *r->seq);
      r->seen[e][r->len] = tokens[i];
    }
    r->seq[r->len++] = tokens[i];
  }
}

static void replay_free(replay *r) {
  for (uint32_t e = 0; e < r->n_events; e++)
    free(r->seen[e]);
  free(r->seq);
}

/* After each shift of a generation, a fresh session (options so, no pool) prefilled with exactly what the model saw
   gives the tokens up to the next shift (the penalty window: the text as generated up to there). Also checks the
   shifts counted and the cache s holds at the end against the replay. */
static void check_shifts(const char *name, llm_model *m, const llm_session_options *so, const int32_t *prompt,
                         const int32_t *tokens, uint32_t n, int32_t n_keep, uint32_t shifts, const llm_session *s) {
  replay r;
  replay_shifts(m, prompt, tokens, n, so->ctx, n_keep, &r);
  CHECK(r.n_events == shifts, "%s: %u shifts counted, %u replayed", name, shifts, r.n_events);
  CHECK(s->n_past == r.len && !memcmp(s->fed, r.seq, r.len * sizeof *r.seq),
        "%s: the cache at the end (%u tokens) is not the replay's kept tokens (%u)", name, s->n_past, r.len);
  llm_session_options ro = *so;
  ro.pool = NULL;
  llm_session *ref;
  llm_err err = {0};
  if (llm_session_create(m, &ro, &ref, &err)) {
    CHECK(0, "%s: reference session: %s", name, err.msg);
    replay_free(&r);
    return;
  }
  int32_t *history = malloc((NP + n) * sizeof *history); /* the text as generated: the penalty window's tokens */
  memcpy(history, prompt, NP * sizeof *prompt);
  memcpy(history + NP, tokens, n * sizeof *tokens);
  uint32_t same = 0;
  for (uint32_t e = 0; e < r.n_events; e++) {
    uint32_t i = r.at[e], upto = e + 1 < r.n_events ? r.at[e + 1] : n - 1; /* tokens i+1 .. upto follow shift e */
    llm_gen_params gp = shift_params(upto - i, 0, 0);
    gp.recent = history;
    gp.n_recent = NP + i + 1;
    llm_gen_result res;
    llm_session_reset(ref);
    wgllm_status st = llm_generate(ref, NULL, r.seen[e], r.n_seen[e], &gp, &res);
    int ok = st == WGLLM_OK && res.n_generated == upto - i &&
             !memcmp(res.tokens, tokens + i + 1, (upto - i) * sizeof *tokens);
    CHECK(ok, "%s: after shift %u (token %u, %u tokens seen) a fresh session gives other tokens (%s, %u of %u)", name,
          e, i, r.n_seen[e], st ? ref->err.msg : "ok", res.n_generated, upto - i);
    same += ok;
    llm_gen_result_free(&res);
  }
  printf("  %-18s %u shifts in %u tokens on a context of %u, keep %d: %u of them continue as a fresh session does\n",
         name, r.n_events, n, so->ctx, n_keep, same);
  free(history);
  llm_session_free(ref);
  replay_free(&r);
}

/* One session: stops at the context without the shift, goes on past it with it (shifts checked); returns the tokens
   (malloc'd) for the jobs' comparison. */
static int32_t *session_case(const char *name, llm_model *m, const llm_session_options *so, uint32_t salt,
                             uint32_t n_gen, int32_t n_keep, uint32_t spec_lookup) {
  llm_err err = {0};
  llm_session *s;
  if (llm_session_create(m, so, &s, &err)) {
    CHECK(0, "%s: session: %s", name, err.msg);
    return NULL;
  }
  int32_t prompt[NP];
  make_prompt(m, salt, prompt);
  llm_gen_params gp = shift_params(n_gen, 0, n_keep);
  llm_gen_result r;
  wgllm_status st = llm_generate(s, NULL, prompt, NP, &gp, &r);
  CHECK(st == WGLLM_OK && r.stop == LLM_STOP_CONTEXT && r.n_generated == so->ctx - NP && r.context_shifts == 0,
        "%s: without the shift the reply stops at the context (%s, %s, %u tokens)", name, st ? s->err.msg : "ok",
        llm_stop_reason_name(r.stop), r.n_generated);
  llm_gen_result_free(&r);
  llm_session_reset(s);
  gp.context_shift = 1;
  gp.spec_lookup = spec_lookup;
  st = llm_generate(s, NULL, prompt, NP, &gp, &r);
  CHECK(st == WGLLM_OK && r.stop == LLM_STOP_MAX_TOKENS && r.n_generated == n_gen && r.context_shifts >= 3,
        "%s: with the shift the reply goes on past the context (%s, %s, %u tokens, %u shifts)", name,
        st ? s->err.msg : "ok", llm_stop_reason_name(r.stop), r.n_generated, r.context_shifts);
  int32_t *tokens = NULL;
  if (!st && r.n_generated == n_gen) {
    tokens = malloc(n_gen * sizeof *tokens);
    memcpy(tokens, r.tokens, n_gen * sizeof *tokens);
    check_shifts(name, m, so, prompt, tokens, n_gen, n_keep, r.context_shifts, s);
  }
  llm_gen_result_free(&r);
  llm_session_free(s);
  return tokens;
}

/* Two jobs on sessions of a paged KV pool, stepped together (the batched step where both decode), each with the
   shift: each gives the tokens its prompt gives alone on a session of its own (want[i]), and the cache of each holds
   its replay's kept tokens. */
static void pool_jobs_case(const char *name, llm_model *m, uint32_t ctx, uint32_t n_gen, int32_t n_keep,
                           int32_t *const want[2]) {
  llm_err err = {0};
  llm_kv_pool *pool = NULL;
  if (llm_kv_pool_create(m, 4 * ctx, ctx, 0, &pool, &err)) {
    CHECK(0, "%s: pool: %s", name, err.msg);
    return;
  }
  llm_session_options so = {.ctx = ctx, .pool = pool};
  llm_session *s[2] = {0};
  llm_job jobs[2];
  llm_job *jp[2] = {&jobs[0], &jobs[1]};
  int32_t prompt[2][NP];
  wgllm_status st = WGLLM_OK;
  llm_gen_params gp = shift_params(n_gen, 1, n_keep);
  for (uint32_t i = 0; !st && i < 2; i++) {
    make_prompt(m, i, prompt[i]);
    st = llm_session_create(m, &so, &s[i], &err);
    if (!st) st = llm_job_start(&jobs[i], s[i], NULL, prompt[i], NP, &gp, &err);
    CHECK(st == WGLLM_OK, "%s: job %u: %s", name, i, err.msg);
  }
  llm_job_stepper stepper = {.m = m};
  for (int calls = 0; !st && !(jobs[0].g.done && jobs[1].g.done) && calls < 4 * (int)n_gen; calls++)
    st = llm_jobs_step(&stepper, jp, 2);
  CHECK(st == WGLLM_OK, "%s: jobs: %s", name, jobs[0].g.st ? s[0]->err.msg : s[1] ? s[1]->err.msg : "");
  llm_job_stepper_free(&stepper);
  for (uint32_t i = 0; !st && i < 2; i++) {
    llm_gen_result *r = &jobs[i].g.res;
    CHECK(jobs[i].g.done && r->n_generated == n_gen && r->context_shifts >= 3 && jobs[i].batched > 0,
          "%s: job %u: %u tokens, %u shifts, %u batched", name, i, r->n_generated, r->context_shifts, jobs[i].batched);
    CHECK(want[i] && r->n_generated == n_gen && !memcmp(r->tokens, want[i], n_gen * sizeof *want[i]),
          "%s: job %u on the pool, batched, gives other tokens than alone", name, i);
    char what[64];
    snprintf(what, sizeof what, "%s pool job %u", name, i);
    if (r->n_generated == n_gen)
      check_shifts(what, m, &so, prompt[i], r->tokens, n_gen, n_keep, r->context_shifts, s[i]);
    printf("  %-18s job %u: %u tokens (%u batched), %u shifts: the tokens it gives alone\n", name, i, r->n_generated,
           jobs[i].batched, r->context_shifts);
  }
  for (uint32_t i = 0; i < 2; i++) {
    if (jobs[i].s) llm_job_release(&jobs[i]);
    llm_session_free(s[i]);
  }
  llm_kv_pool_free(pool);
}

static llm_model *load(const char *name, const char *policy) {
  char p[300];
  snprintf(p, sizeof p, "data/models/%s", name);
  llm_load_options lo = {0};
  llm_err err = {0};
  if (policy) CHECK(llm_parse_weight_policy(policy, &lo.weights, &err) == WGLLM_OK, "%s", err.msg);
  llm_model *m = NULL;
  CHECK(llm_model_load(th_gpu(), p, &lo, &m, &err) == WGLLM_OK, "load %s: %s", name, err.msg);
  return m;
}

int main(void) {
  th_gpu();
  llm_model *m = load("qwen3", "q4");
  if (m) {
    llm_session_options so = {.ctx = 48};
    int32_t *alone[2] = {session_case("qwen3", m, &so, 0, 120, 4, 0), NULL};
    /* the second prompt alone, for the pool's second job */
    alone[1] = session_case("qwen3 (2nd prompt)", m, &so, 1, 120, 4, 0);
    pool_jobs_case("qwen3", m, 48, 120, 4, alone);
    /* prompt lookup: the same text (speculation ends at the first shift) */
    int32_t *spec = session_case("qwen3 spec_lookup", m, &so, 0, 120, 4, 4);
    CHECK(spec && alone[0] && !memcmp(spec, alone[0], 120 * sizeof *spec),
          "qwen3: with prompt lookup the shifted reply differs from the one without");
    free(spec);
    free(alone[0]);
    free(alone[1]);
    llm_model_free(m);
  }
  m = load("llama_gqa", NULL); /* f32 weights; -1 keeps the whole prompt */
  if (m) {
    llm_session_options so = {.ctx = 40};
    free(session_case("llama_gqa", m, &so, 2, 100, -1, 0));
    llm_model_free(m);
  }
  /* Gemma 3's 8-key windows as 128-slot rings (a context of 160, chunks of 16): a shift's rewind to the kept
     tokens leaves the ring's slack, so the cache is recomputed from 0 */
  m = load("gemma3", "q4");
  if (m) {
    llm_session_options so = {.ctx = 160, .prefill_chunk = 16};
    free(session_case("gemma3 (rings)", m, &so, 3, 330, 4, 0));
    llm_model_free(m);
  }
  th_gpu_done();
  return th_finish("test_context_shift");
}
