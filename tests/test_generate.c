/* Generation loop on the transformers fixtures (ids only, no tokenizer): greedy sampling on the GPU reproduces
   the reference's greedy ids, a seed reproduces a sampled run, token limits and a full context stop the loop,
   the recorded step is replayed (not re-recorded) across tokens, and cached prefixes are reused; batched decode
   across sessions (llm_batch) gives each session the ids it gives alone, across windows, rings and the joins and
   leaves of members. */
#include "batch.h"
#include "generate.h"
#include "grammar.h"
#include "harness.h"
#include "kv_pool.h"
#include <cjson/cJSON.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

static int32_t *ids_from(const cJSON *arr, uint32_t *n) {
  *n = (uint32_t)cJSON_GetArraySize(arr);
  int32_t *v = malloc(*n * sizeof *v + 4);
  for (uint32_t i = 0; i < *n; i++)
    v[i] = (int32_t)cJSON_GetArrayItem(arr, (int)i)->valuedouble;
  return v;
}

/* pipeline: decode steps kept in flight (0: the default) */
static void greedy_case(const char *name, const char *model_path, int pipeline) {
  char p[300];
  llm_err err = {0};
  snprintf(p, sizeof p, "data/models/%s/ref.json", name);
  char *js = th_read_file(p, NULL);
  cJSON *j = cJSON_Parse(js);
  free(js);
  uint32_t T, N;
  int32_t *prompt = ids_from(cJSON_GetObjectItem(j, "prompt_ids"), &T),
          *greedy = ids_from(cJSON_GetObjectItem(j, "greedy_ids"), &N);
  cJSON_Delete(j);
  llm_model *m;
  wgllm_status st = llm_model_load(th_gpu(), model_path, NULL, &m, &err);
  CHECK(st == WGLLM_OK, "load %s: %s", name, err.msg);
  if (st) return;
  llm_session *s;
  llm_session_options so = {.ctx = 64};
  CHECK(llm_session_create(m, &so, &s, &err) == WGLLM_OK, "%s", err.msg);
  llm_gen_params gp = {
      .max_tokens = N, .sampling = {.temperature = 0, .top_p = 1, .rep_penalty = 1}, .pipeline = pipeline};
  llm_gen_result r;
  st = llm_generate(s, NULL, prompt, T, &gp, &r);
  CHECK(st == WGLLM_OK, "%s generate: %s", name, s->err.msg);
  CHECK(r.n_generated == N && r.stop == LLM_STOP_MAX_TOKENS, "%s: %u tokens, stop %s", name, r.n_generated,
        llm_stop_reason_name(r.stop));
  int same = r.n_generated == N && !memcmp(r.tokens, greedy, N * sizeof *greedy);
  CHECK(same, "%s: GPU greedy ids differ from the reference", name);
  printf("  %-16s greedy on the GPU: %s\n", name, same ? "matches the reference ids" : "DIFFERS");
  uint32_t recordings = s->step_recordings;
  llm_gen_result_free(&r);

  /* sampled: the same seed gives the same tokens; the step is re-recorded only when the sampler changes */
  llm_gen_params sp = {
      .max_tokens = 12,
      .sampling = {.temperature = 0.9f, .top_p = 0.95f, .top_k = 50, .rep_penalty = 1.1f, .ring_cap = 64, .seed = 42}};
  sp.pipeline = pipeline;
  int32_t first[12];
  uint32_t nfirst = 0;
  for (int pass = 0; pass < 2; pass++) {
    llm_session_reset(s);
    st = llm_generate(s, NULL, prompt, T, &sp, &r);
    CHECK(st == WGLLM_OK && r.n_generated == 12, "%s sampled generate: %s", name, s->err.msg);
    if (pass == 0) {
      memcpy(first, r.tokens, r.n_generated * 4);
      nfirst = r.n_generated;
    } else
      CHECK(nfirst == r.n_generated && !memcmp(first, r.tokens, nfirst * 4), "%s: same seed, different tokens", name);
    llm_gen_result_free(&r);
  }
  CHECK(s->step_recordings == recordings + 1, "%s: a new sampler records the step once (%u -> %u)", name, recordings,
        s->step_recordings);
  recordings = s->step_recordings;
  llm_session_reset(s);
  llm_generate(s, NULL, prompt, T, &sp, &r);
  CHECK(s->step_recordings == recordings, "%s: the same sampler must replay the recorded step, not record a new one",
        name);
  llm_gen_result_free(&r);

  /* context: generation stops when the cache is full */
  llm_session_reset(s);
  gp.max_tokens = 1000;
  st = llm_generate(s, NULL, prompt, T, &gp, &r);
  CHECK(st == WGLLM_OK && r.stop == LLM_STOP_CONTEXT && s->n_past == 63, "%s: context stop (%s, n_past %u)", name,
        llm_stop_reason_name(r.stop), s->n_past);
  llm_gen_result_free(&r);
  /* a prompt that does not fit is refused */
  llm_session_reset(s);
  int32_t *big = calloc(64, sizeof *big);
  st = llm_generate(s, NULL, big, 64, &gp, &r);
  CHECK(st == WGLLM_ERR_INVALID_ARG && strstr(s->err.msg, "context"), "%s: oversized prompt: %s", name, s->err.msg);
  llm_gen_result_free(&r);
  st = llm_generate(s, NULL, big, 0, &gp, &r);
  CHECK(st == WGLLM_ERR_INVALID_ARG && strstr(s->err.msg, "empty"), "%s: empty prompt: %s", name, s->err.msg);
  llm_gen_result_free(&r);
  free(big);
  /* prefix reuse: after a generation the cache holds the prompt; a longer prompt sharing it is recognised */
  llm_session_reset(s);
  gp.max_tokens = 3;
  llm_generate(s, NULL, prompt, T, &gp, &r);
  CHECK(llm_session_common_prefix(s, prompt, T) == T, "%s: prompt prefix in the cache", name);
  llm_gen_result_free(&r);
  llm_session_free(s);
  llm_model_free(m);
  free(prompt);
  free(greedy);
}

/* A prefill split into chunks (the cache carries over between passes) gives the logits of one pass. */
static void chunked_prefill(void) {
  llm_err err = {0};
  llm_model *m;
  CHECK(llm_model_load(th_gpu(), "data/models/qwen3", NULL, &m, &err) == WGLLM_OK, "%s", err.msg);
  int32_t ids[24];
  for (int i = 0; i < 24; i++)
    ids[i] = (i * 37 + 5) % 320;
  float *a = malloc(24 * 320 * 4), *b = malloc(24 * 320 * 4);
  for (int pass = 0; pass < 2; pass++) {
    llm_session *s;
    llm_session_options so = {.ctx = 64, .prefill_chunk = pass ? 5 : 0};
    CHECK(llm_session_create(m, &so, &s, &err) == WGLLM_OK, "%s", err.msg);
    CHECK(llm_session_prefill(s, ids, 24, pass ? b : a, 1) == WGLLM_OK, "prefill: %s", s->err.msg);
    llm_session_free(s);
  }
  th_compare("prefill in chunks of 5 vs one pass", b, a, 24 * 320, 1e-5, 1e-4);
  free(a);
  free(b);
  llm_model_free(m);
}

/* The fixture data/models/NAME with q4gsw weights (the fused GEMV's storage); NULL on failure (checked). */
/* A fixture with its weights as policy says ("q4": q4gsw, the fused GEMV's storage; NULL: as stored). */
static llm_model *load_as(const char *what, const char *name, const char *policy, llm_err *err) {
  char p[300];
  snprintf(p, sizeof p, "data/models/%s", name);
  llm_load_options lo = {0};
  if (policy) CHECK(llm_parse_weight_policy(policy, &lo.weights, err) == WGLLM_OK, "%s", err->msg);
  llm_model *m = NULL;
  wgllm_status st = llm_model_load(th_gpu(), p, &lo, &m, err);
  CHECK(st == WGLLM_OK, "%s %s: load: %s", what, name, err->msg);
  return st ? NULL : m;
}

static llm_model *load_q4(const char *what, const char *name, llm_err *err) { return load_as(what, name, "q4", err); }

/* s from an empty cache: sampler sp, the prompt prefilled, its first token into *first. */
static wgllm_status start_sampled(llm_session *s, const op_sample_params *sp, const int32_t *prompt, uint32_t n,
                                  int32_t *first) {
  llm_session_reset(s);
  wgllm_status st = llm_session_set_sampler(s, sp, prompt, n);
  return st ? st : llm_session_prefill_sample(s, prompt, n, first);
}

/* Batched decode on a fixture with q4gsw weights (the fused GEMV's storage): 3 sessions with prompts of their own,
   sampled (temperature 0.9, a seed each, a repetition penalty), decoded alone for G tokens as the reference, then
   together through llm_batch_step, with the third joining late and the first leaving early (so the members, and
   the row count, change); every session's ids must equal its reference. ctx and chunk make window layers rings
   (Gemma 3's 8-key windows: 128 slots), and G passes the ring's length. */
static void batched_case(const char *name, const char *policy, uint32_t G) {
  llm_err err = {0};
  llm_model *m = load_as("batched", name, policy, &err);
  if (!m) return;
  wgllm_status st = WGLLM_OK;
  enum { NS = 3 };
  llm_session *ss[NS] = {0};
  int32_t prompt[NS][12], *want[NS], *got[NS];
  llm_session_options so = {.ctx = 512, .prefill_chunk = 16};
  llm_batch *b = NULL;
  st = llm_batch_create(m, &b, &err);
  CHECK(st == WGLLM_OK, "batch: %s", err.msg);
  for (int i = 0; !st && i < NS; i++) {
    want[i] = calloc(G + 1, sizeof *want[i]);
    got[i] = calloc(G + 1, sizeof *got[i]);
    for (int k = 0; k < 12; k++)
      prompt[i][k] = (int32_t)((k * 37 + i * 101 + 5) % m->hp.n_vocab);
    st = llm_session_create(m, &so, &ss[i], &err);
    CHECK(st == WGLLM_OK, "session: %s", err.msg);
  }
  op_sample_params sp[NS];
  for (int i = 0; i < NS; i++)
    sp[i] = (op_sample_params){.temperature = 0.9f,
                               .top_p = 0.95f,
                               .min_p = 0.0f,
                               .rep_penalty = 1.2f,
                               .top_k = 0,
                               .ring_cap = 32,
                               .seed = 7u + (uint32_t)i};
  /* alone */
  for (int i = 0; !st && i < NS; i++) {
    st = start_sampled(ss[i], &sp[i], prompt[i], 12, &want[i][0]);
    for (uint32_t g = 1; !st && g <= G; g++)
      st = llm_session_step_sample(ss[i], &want[i][g]);
    CHECK(st == WGLLM_OK, "%s alone %d: %s", name, i, ss[i]->err.msg);
  }
  /* together: session 2 joins at step 5, session 0 leaves 10 steps early (then 1 and 2 go on as two) */
  for (int i = 0; !st && i < NS; i++) {
    st = start_sampled(ss[i], &sp[i], prompt[i], 12, &got[i][0]);
  }
  uint32_t at[NS] = {0, 0, 0};
  for (uint32_t step = 0; !st && step < G + 5; step++) {
    llm_session *mem[NS];
    uint32_t idx[NS], n = 0;
    for (int i = 0; i < NS; i++) {
      int in = at[i] < G && (i != 2 || step >= 5) && (i != 0 || at[i] < G - 10);
      if (in) {
        mem[n] = ss[i];
        idx[n++] = (uint32_t)i;
      }
    }
    if (n >= 2) {
      int32_t tok[NS];
      st = llm_batch_step(b, mem, n, tok);
      CHECK(st == WGLLM_OK, "%s batch step %u of %u: %s", name, step, n, b->err.msg);
      for (uint32_t k = 0; !st && k < n; k++)
        got[idx[k]][++at[idx[k]]] = tok[k];
    } else if (n == 1) { /* alone again: the session's own step picks up from the batched ones */
      st = llm_session_step_sample(mem[0], &got[idx[0]][at[idx[0]] + 1]);
      at[idx[0]]++;
      CHECK(st == WGLLM_OK, "%s step alone: %s", name, mem[0]->err.msg);
    }
  }
  for (int i = 0; !st && i < NS; i++) { /* session 0 finishes alone */
    while (!st && at[i] < G) {
      st = llm_session_step_sample(ss[i], &got[i][at[i] + 1]);
      at[i]++;
    }
  }
  for (int i = 0; i < NS; i++) {
    uint32_t first = G + 1;
    for (uint32_t g = 0; g <= G && first > G; g++)
      if (got[i][g] != want[i][g]) first = g;
    CHECK(first > G, "%s: session %d batched gives its own ids (first difference at token %u of %u)", name, i, first,
          G);
  }
  CHECK(b->recordings >= 3, "%s: the batch was recorded for each member set (%u recordings)", name, b->recordings);
  llm_batch_free(b);
  for (int i = 0; i < NS; i++) {
    llm_session_free(ss[i]);
    free(want[i]);
    free(got[i]);
  }
  llm_model_free(m);
}

/* Two batched steps in flight (llm_batch_submit before the step before is collected: its ids fed on the GPU), on
   a q4gsw fixture, sampled as batched_case: 3 sessions decoded alone for G tokens as the reference, then together
   with the next step always queued before the last is collected; session 2 joins at step 5 (its id from the CPU,
   the others' from the GPU), session 0's tokens from G - 9 on are dropped when collected (a generation that ended:
   the step queued after it is dropped too, and its session stays where its last kept token left it); sessions 1
   and 2 finish alone once fewer than two are left. Every kept id must equal the reference. */
static void pipelined_case(const char *name, uint32_t G) {
  llm_err err = {0};
  llm_model *m = load_q4("pipelined", name, &err);
  if (!m) return;
  wgllm_status st = WGLLM_OK;
  enum { NS = 3 };
  llm_session *ss[NS] = {0};
  int32_t prompt[NS][12], *want[NS], *got[NS];
  llm_session_options so = {.ctx = 512, .prefill_chunk = 16};
  llm_batch *b = NULL;
  st = llm_batch_create(m, &b, &err);
  CHECK(st == WGLLM_OK, "batch: %s", err.msg);
  op_sample_params sp[NS];
  for (int i = 0; !st && i < NS; i++) {
    want[i] = calloc(G + 1, sizeof *want[i]);
    got[i] = calloc(G + 1, sizeof *got[i]);
    for (int k = 0; k < 12; k++)
      prompt[i][k] = (int32_t)((k * 41 + i * 103 + 3) % m->hp.n_vocab);
    sp[i] = (op_sample_params){
        .temperature = 0.9f, .top_p = 0.95f, .rep_penalty = 1.2f, .ring_cap = 32, .seed = 11u + (uint32_t)i};
    st = llm_session_create(m, &so, &ss[i], &err);
    CHECK(st == WGLLM_OK, "session: %s", err.msg);
  }
  for (int i = 0; !st && i < NS; i++) { /* alone */
    st = start_sampled(ss[i], &sp[i], prompt[i], 12, &want[i][0]);
    for (uint32_t g = 1; !st && g <= G; g++)
      st = llm_session_step_sample(ss[i], &want[i][g]);
    CHECK(st == WGLLM_OK, "%s alone %d: %s", name, i, ss[i]->err.msg);
  }
  for (int i = 0; !st && i < NS; i++) {
    st = start_sampled(ss[i], &sp[i], prompt[i], 12, &got[i][0]);
  }
  uint32_t at[NS] = {0}, planned[NS] = {0}, idx[LLM_BATCH_IN_FLIGHT][NS], nidx[LLM_BATCH_IN_FLIGHT], nf = 0;
  uint32_t most = 0, dropped = 0;
  int stop0 = 0;
  for (uint32_t step = 0; !st; step++) {
    llm_session *mem[NS];
    uint32_t n = 0;
    for (uint32_t i = 0; i < NS; i++)
      if (planned[i] < G && (i != 2 || step >= 5) && (i != 0 || !stop0)) {
        mem[n] = ss[i];
        idx[nf][n++] = i;
      }
    if (n >= 2) {
      st = llm_batch_submit(b, mem, n);
      CHECK(st == WGLLM_OK, "%s submit at step %u of %u: %s", name, step, n, b->err.msg);
      for (uint32_t k = 0; k < n; k++)
        planned[idx[nf][k]]++;
      nidx[nf++] = n;
      if (b->n_flight > most) most = b->n_flight;
    }
    if (!st && nf && (nf == LLM_BATCH_IN_FLIGHT || n < 2)) { /* the oldest collected */
      int32_t tok[NS];
      int keep[NS];
      for (uint32_t k = 0; k < nidx[0]; k++)
        keep[k] = idx[0][k] != 0 || at[0] + 1 < G - 9;
      st = llm_batch_collect(b, tok, keep);
      CHECK(st == WGLLM_OK, "%s collect: %s", name, b->err.msg);
      for (uint32_t k = 0; !st && k < nidx[0]; k++) {
        uint32_t i = idx[0][k];
        if (tok[k] < 0) {
          dropped++;
          stop0 = 1;
          planned[i]--;
        } else
          got[i][++at[i]] = tok[k];
      }
      memmove(idx[0], idx[1], sizeof idx[0]);
      nidx[0] = nidx[1];
      nf--;
    }
    if (n < 2 && !nf) break;
  }
  CHECK(most == 2 && dropped == 2, "%s: two steps were in flight (at most %u) and two of session 0's dropped (%u)",
        name, most, dropped);
  CHECK(ss[0]->n_past == 12 + at[0] && at[0] == G - 10 && ss[0]->batch_queued == 0,
        "%s: the dropped session stays after its last kept token (%u tokens in its cache, %u kept, %d queued)", name,
        ss[0]->n_past, at[0], ss[0]->batch_queued);
  for (int i = 1; !st && i < NS; i++) /* 1 and 2 finish alone */
    while (!st && at[i] < G) {
      st = llm_session_step_sample(ss[i], &got[i][at[i] + 1]);
      at[i]++;
      CHECK(st == WGLLM_OK, "%s step alone: %s", name, ss[i]->err.msg);
    }
  for (int i = 0; i < NS; i++) {
    uint32_t first = G + 1;
    for (uint32_t g = 0; g <= at[i] && first > G; g++)
      if (got[i][g] != want[i][g]) first = g;
    CHECK(first > G, "%s: session %d pipelined gives its own ids (first difference at token %u of %u)", name, i, first,
          at[i]);
  }
  llm_batch_free(b);
  for (int i = 0; i < NS; i++) {
    llm_session_free(ss[i]);
    free(want[i]);
    free(got[i]);
  }
  llm_model_free(m);
}

/* Prompt lookup (llm_spec_lookup): the latest earlier occurrence of the last 3, then 2, then 1 tokens, the tokens
   after it up to k and up to the end. */
static void spec_lookup_case(void) {
  int32_t d[8];
  const int32_t a[] = {5, 6, 7, 8, 9, 1, 5, 6, 7, 2, 3, 5, 6, 7};
  uint32_t n = llm_spec_lookup(a, 14, 4, d); /* "5 6 7" last seen at 6: then 2 3 5 6 */
  CHECK(n == 4 && d[0] == 2 && d[1] == 3 && d[2] == 5 && d[3] == 6, "lookup: the latest 3-gram's continuation (%u)", n);
  const int32_t b[] = {1, 2, 3, 9, 4, 2, 3};
  n = llm_spec_lookup(b, 7, 8, d); /* no "4 2 3" before; "2 3" at 1: then 9 4 2 3 */
  CHECK(n == 4 && d[0] == 9 && d[3] == 3, "lookup: a 2-gram, up to the end (%u)", n);
  const int32_t c[] = {1, 2, 3, 4};
  CHECK(llm_spec_lookup(c, 4, 8, d) == 0, "lookup: nothing repeats, no drafts");
  const int32_t e[] = {7, 1, 7};
  n = llm_spec_lookup(e, 3, 2, d);
  CHECK(n == 2 && d[0] == 1 && d[1] == 7, "lookup: a 1-gram (%u)", n);
  CHECK(llm_spec_lookup(e, 1, 2, d) == 0, "lookup: one token, no drafts");
  static const uint32_t proposed[] = {0, 1, 2, 3, 6, 7, 8, 14, 15}, taken[] = {0, 1, 1, 3, 3, 7, 7, 7, 15};
  for (int i = 0; i < 9; i++)
    CHECK(llm_spec_rows_drafts(proposed[i]) == taken[i], "of %u proposed drafts, %u taken (%u)", proposed[i], taken[i],
          llm_spec_rows_drafts(proposed[i]));
}

/* Speculative decoding (speculate.h) on a q4gsw fixture, greedy and sampled (temperature 0.9, top-p 0.95, a
   repetition penalty over 32 tokens, a seed), exact precision, on the session's own cache and on a KV pool: a
   generation with prompt lookup gives the tokens of one without it; then the verify step directly with drafts from
   the reference (its continuation, one draft wrong: the two before it accepted, the row's own token given for the
   wrong one), whole correct runs (all accepted), and plain steps after: every token the reference's. */
static void spec_case(const char *name, const char *policy, uint32_t G) {
  llm_err err = {0};
  llm_model *m = load_as("spec", name, policy, &err);
  if (!m) return;
  for (int pooled = 0; pooled < 2; pooled++)
    for (int sampled = 0; sampled < 2; sampled++) {
      llm_kv_pool *pool = NULL;
      llm_session_options so = {.ctx = 256, .prefill_chunk = 16};
      if (pooled) {
        CHECK(llm_kv_pool_create(m, 512, 256, 0, &pool, &err) == WGLLM_OK, "%s: pool: %s", name, err.msg);
        so.pool = pool;
      }
      llm_session *s = NULL;
      wgllm_status st = llm_session_create(m, &so, &s, &err);
      CHECK(st == WGLLM_OK, "%s: session: %s", name, err.msg);
      int32_t prompt[24];
      for (int i = 0; i < 24; i++) /* a phrase said three times: lookup finds drafts in it */
        prompt[i] = (int32_t)(((i % 8) * 131 + 17) % m->hp.n_vocab);
      llm_gen_params gp = {.max_tokens = G, .pipeline = 1};
      gp.sampling =
          sampled
              ? (op_sample_params){.temperature = 0.9f, .top_p = 0.95f, .rep_penalty = 1.2f, .ring_cap = 32, .seed = 99}
              : (op_sample_params){.top_p = 1.0f, .rep_penalty = 1.0f};
      llm_gen_result ref = {0}, got = {0};
      if (!st) st = llm_generate(s, NULL, prompt, 24, &gp, &ref);
      CHECK(st == WGLLM_OK && ref.n_generated == G, "%s: plain: %s", name, s ? s->err.msg : "");
      char what[64];
      snprintf(what, sizeof what, "%s%s%s", name, sampled ? " sampled" : " greedy", pooled ? " pooled" : "");
      /* a generation with prompt lookup */
      llm_session_reset(s);
      gp.spec_lookup = 7;
      if (!st) st = llm_generate(s, NULL, prompt, 24, &gp, &got);
      CHECK(st == WGLLM_OK && got.n_generated == G, "%s: with lookup: %s", what, s->err.msg);
      uint32_t first = G;
      for (uint32_t i = 0; !st && i < G && first == G; i++)
        if (got.tokens[i] != ref.tokens[i]) first = i;
      CHECK(first == G, "%s: lookup gives the tokens without it (first difference at %u of %u)", what, first, G);
      CHECK(got.spec_steps > 0, "%s: lookup proposed drafts (%u steps, %u of %u accepted)", what, got.spec_steps,
            got.spec_accepted, got.spec_drafted);
      CHECK(s->n_past == 24 + G - 1, "%s: the cache as plain decoding leaves it (%u tokens)", what, s->n_past);
      /* the verify step with drafts from the reference: t[0] from the prefill, t[i] what step i samples */
      const int32_t *t = ref.tokens;
      llm_spec *sp = NULL;
      int32_t t0 = -1, out[LLM_SPEC_MAX + 1];
      if (!st) st = start_sampled(s, &gp.sampling, prompt, 24, &t0);
      if (!st) st = llm_spec_create(s, 7, 1, NULL, &sp, &err);
      CHECK(st == WGLLM_OK && t0 == t[0], "%s: verifier: %s", what, err.msg);
      uint32_t at = 1, n = 0; /* t[0..at) known */
      if (!st) {              /* drafts t1 t2 X t4: two accepted, then the row's own t3 */
        int32_t d[4] = {t[1], t[2], (t[3] + 1) % (int32_t)m->hp.n_vocab, t[4]};
        st = llm_spec_verify(sp, d, 4, out, &n);
        CHECK(st == WGLLM_OK && n == 3 && out[0] == t[1] && out[1] == t[2] && out[2] == t[3],
              "%s: one wrong draft: two accepted and the row's own token (%u tokens: %d %d %d; want %d %d %d): %s",
              what, n, out[0], out[1], out[2], t[1], t[2], t[3], sp->err.msg);
        at = 4;
      }
      for (int r = 0; !st && r < 2; r++) { /* whole runs right: all accepted, then the next */
        st = llm_spec_verify(sp, t + at, 7, out, &n);
        CHECK(st == WGLLM_OK && n == 8 && !memcmp(out, t + at, 8 * sizeof *out), "%s: 7 right drafts: all taken (%u)",
              what, n);
        at += 8;
      }
      CHECK(!st && s->n_past == 24 + at - 1 && s->last_sampled == t[at - 1],
            "%s: the session after the steps (%u tokens, last %d)", what, s->n_past, s->last_sampled);
      for (; !st && at < G; at++) { /* plain steps pick up */
        int32_t x = -1;
        st = llm_session_step_sample(s, &x);
        CHECK(st == WGLLM_OK && x == t[at], "%s: plain step %u after the verify steps: %d, want %d", what, at, x,
              t[at]);
        if (x != t[at]) break;
      }
      llm_spec_free(sp);
      llm_gen_result_free(&ref);
      llm_gen_result_free(&got);
      llm_session_free(s);
      if (pool) CHECK(llm_kv_pool_free(pool), "%s: pool freed", what);
    }
  llm_model_free(m);
}

/* A verify step the KV pool has no room for: a pool of 48 tokens (3 blocks) under a 128-token context, a 24-token
   prompt that repeats, and 40 tokens asked for, more than the pool holds. Plain decoding fills the pool and fails with
   WGLLM_ERR_KV_FULL; with prompt lookup (7 drafts a step) a verify step whose rows pass the pool (nothing run) gives
   way to plain steps, so the generation fails at the same token with the same tokens before it (rather than at the
   first verify step the pool cannot take). */
static void spec_kv_full_case(void) {
  llm_err err = {0};
  llm_model *m = load_q4("spec kv full", "qwen3", &err);
  if (!m) return;
  llm_kv_pool *pool = NULL;
  wgllm_status st = llm_kv_pool_create(m, 48, 128, 0, &pool, &err);
  CHECK(st == WGLLM_OK, "spec kv full: pool: %s", err.msg);
  llm_session_options so = {.ctx = 128, .prefill_chunk = 16, .pool = pool};
  llm_session *s = NULL;
  if (!st) st = llm_session_create(m, &so, &s, &err);
  CHECK(st == WGLLM_OK, "spec kv full: session: %s", err.msg);
  enum { P = 24, G = 40 };
  int32_t prompt[P];
  for (int i = 0; i < P; i++)
    prompt[i] = (int32_t)(((i % 8) * 131 + 17) % m->hp.n_vocab);
  llm_gen_params gp = {.max_tokens = G, .pipeline = 1};
  gp.sampling = (op_sample_params){.top_p = 1.0f, .rep_penalty = 1.0f};
  llm_gen_result ref = {0}, got = {0};
  wgllm_status plain = st ? st : llm_generate(s, NULL, prompt, P, &gp, &ref);
  CHECK(plain == WGLLM_ERR_KV_FULL && ref.n_generated > 16 && ref.n_generated < G,
        "spec kv full: plain decoding fills the pool (%s after %u tokens)", wgllm_status_name(plain), ref.n_generated);
  if (!st) {
    llm_session_reset(s);
    gp.spec_lookup = 7;
    wgllm_status spec = llm_generate(s, NULL, prompt, P, &gp, &got);
    uint32_t first = got.n_generated;
    for (uint32_t i = 0; i < got.n_generated && i < ref.n_generated && first == got.n_generated; i++)
      if (got.tokens[i] != ref.tokens[i]) first = i;
    CHECK(spec == plain && got.n_generated == ref.n_generated && first == got.n_generated && got.spec_steps > 0,
          "spec kv full: with lookup the generation ends as plain decoding does (%s after %u tokens, plain %u; first "
          "difference at %u; %u verify steps)",
          wgllm_status_name(spec), got.n_generated, ref.n_generated, first, got.spec_steps);
  }
  llm_gen_result_free(&ref);
  llm_gen_result_free(&got);
  llm_session_free(s);
  if (pool) CHECK(llm_kv_pool_free(pool), "spec kv full: pool freed");
  llm_model_free(m);
}

/* Speculation on every fixture as stored (each family, f32 / bf16 / GGUF Q4_0 / Q6_K / K-quant weights, Gemma 4's
   KV-shared layers and per-layer inputs, window rings), greedy: a generation with prompt lookup, and one with the
   model as its own draft (every draft accepted: 3, 7 then 15 a step), each give the tokens of plain decoding. */
static void spec_every_model_case(void) {
  static const char *const names[] = {"llama_gqa",
                                      "llama_mha_bf16",
                                      "qwen2",
                                      "qwen3",
                                      "gemma3",
                                      "gemma4_kv_shared",
                                      "gemma4_k_eq_v",
                                      "gemma3_gguf/model.gguf",
                                      "gemma4_kv_shared_gguf/model.gguf",
                                      "gemma4_k_eq_v_gguf/model.gguf",
                                      "llama_q4_0_gguf/model.gguf",
                                      "llama_q4_0_q6k_gguf/model.gguf",
                                      "llama_q4km_gguf/model.gguf",
                                      "llama_kquants_gguf/model.gguf"};
  enum { G = 40, P = 24 };
  for (size_t k = 0; k < sizeof names / sizeof names[0]; k++) {
    llm_err err = {0};
    llm_model *m = load_as("spec every model", names[k], NULL, &err);
    if (!m) continue;
    llm_session_options so = {.ctx = 256, .prefill_chunk = 16};
    llm_session *s = NULL, *ds = NULL;
    wgllm_status st = llm_session_create(m, &so, &s, &err);
    if (!st) st = llm_session_create(m, &so, &ds, &err);
    CHECK(st == WGLLM_OK, "%s: sessions: %s", names[k], err.msg);
    int32_t prompt[P];
    for (int i = 0; i < P; i++) /* a phrase said three times: lookup finds drafts in it */
      prompt[i] = (int32_t)(((i % 8) * 131 + 17) % m->hp.n_vocab);
    llm_gen_params gp = {.max_tokens = G, .pipeline = 1};
    gp.sampling = (op_sample_params){.top_p = 1.0f, .rep_penalty = 1.0f};
    llm_gen_result ref = {0};
    if (!st) st = llm_generate(s, NULL, prompt, P, &gp, &ref);
    CHECK(st == WGLLM_OK && ref.n_generated == G, "%s: plain: %s", names[k], s ? s->err.msg : "");
    for (int mode = 0; !st && mode < 2; mode++) { /* lookup; the model as its own draft */
      llm_gen_result got = {0};
      llm_session_reset(s);
      gp.spec_lookup = mode ? 0 : 7;
      gp.draft = mode ? ds : NULL;
      gp.draft_max = mode ? 15 : 0;
      st = llm_generate(s, NULL, prompt, P, &gp, &got);
      CHECK(st == WGLLM_OK && got.n_generated == G, "%s, %s: %s", names[k], mode ? "draft" : "lookup", s->err.msg);
      uint32_t first = G;
      for (uint32_t i = 0; !st && i < G && first == G; i++)
        if (got.tokens[i] != ref.tokens[i]) first = i;
      CHECK(first == G && got.spec_steps > 0 && (!mode || got.spec_accepted == got.spec_drafted),
            "%s, %s: the tokens without it (first difference at %u of %u; %u steps, %u of %u drafts accepted)",
            names[k], mode ? "its own draft" : "lookup", first, G, got.spec_steps, got.spec_accepted, got.spec_drafted);
      llm_gen_result_free(&got);
    }
    llm_gen_result_free(&ref);
    llm_session_free(ds);
    llm_session_free(s);
    llm_model_free(m);
  }
}

/* Speculative decoding with a draft model (llm_spec_draft) on a q4gsw qwen3 target, greedy and sampled (as
   spec_case), exact: drafts from a second copy of the target (greedy: every draft accepted, the drafts a step
   growing past 7), from gemma3 (its window layers as rings, rewound after each rejection) and from llama_gqa (another
   model of the same vocabulary: most drafts rejected), and with prompt lookup first. Each generation gives the
   tokens of plain decoding and leaves the cache as it does; a second generation continuing the first (the draft's
   cache brought along from the common prefix) too. */
static void draft_case(void) {
  llm_err err = {0};
  llm_model *m = load_q4("draft", "qwen3", &err);
  const char *drafts[] = {"qwen3", "gemma3", "llama_gqa"};
  enum { G = 40, P = 24 };
  for (int di = 0; m && di < 3; di++) {
    llm_model *dm = load_q4("draft model", drafts[di], &err);
    if (!dm) break;
    llm_session_options so = {.ctx = 256, .prefill_chunk = 16};
    llm_session *s = NULL, *ds = NULL;
    wgllm_status st = llm_session_create(m, &so, &s, &err);
    if (!st) st = llm_session_create(dm, &so, &ds, &err);
    CHECK(st == WGLLM_OK, "draft %s: sessions: %s", drafts[di], err.msg);
    for (int mode = 0; !st && mode < 3; mode++) { /* greedy, sampled, sampled with lookup first */
      int32_t prompt[P];
      for (int i = 0; i < P; i++)
        prompt[i] = (int32_t)(((i % 8) * 131 + 17 + di) % m->hp.n_vocab);
      llm_gen_params gp = {.max_tokens = G, .pipeline = 1};
      gp.sampling =
          mode ? (op_sample_params){.temperature = 0.9f, .top_p = 0.95f, .rep_penalty = 1.2f, .ring_cap = 32, .seed = 7}
               : (op_sample_params){.top_p = 1.0f, .rep_penalty = 1.0f};
      char what[80];
      snprintf(what, sizeof what, "draft %s, %s", drafts[di], mode == 0 ? "greedy" : mode == 1 ? "sampled" : "lookup");
      llm_gen_result ref[2] = {{0}}, got[2] = {{0}};
      int32_t more[3] = {5, 6, 7};
      llm_session_reset(s);
      for (int turn = 0; !st && turn < 2; turn++) /* the reference: plain, a second turn continuing the first */
        st = turn ? llm_generate(s, NULL, more, 3, &gp, &ref[1]) : llm_generate(s, NULL, prompt, P, &gp, &ref[0]);
      CHECK(st == WGLLM_OK, "%s: plain: %s", what, s->err.msg);
      uint32_t n_plain = s->n_past;
      llm_session_reset(s);
      gp.draft = ds;
      gp.draft_max = di == 0 ? 15 : 7;
      gp.spec_lookup = mode == 2 ? 3 : 0;
      for (int turn = 0; !st && turn < 2; turn++) {
        st = turn ? llm_generate(s, NULL, more, 3, &gp, &got[1]) : llm_generate(s, NULL, prompt, P, &gp, &got[0]);
        CHECK(st == WGLLM_OK && got[turn].n_generated == G, "%s turn %d: %s", what, turn, s->err.msg);
        uint32_t first = G;
        for (uint32_t i = 0; !st && i < G && first == G; i++)
          if (got[turn].tokens[i] != ref[turn].tokens[i]) first = i;
        CHECK(first == G, "%s turn %d: the draft model gives the tokens without it (first difference at %u of %u)",
              what, turn, first, G);
        CHECK(got[turn].spec_steps > 0, "%s turn %d: drafts were verified (%u steps, %u of %u accepted)", what, turn,
              got[turn].spec_steps, got[turn].spec_accepted, got[turn].spec_drafted);
        if (di == 0 && mode == 0) /* the target's own greedy tokens: all accepted, 3, 7 then 15 a step: 5 steps */
          CHECK(got[turn].spec_accepted == got[turn].spec_drafted && got[turn].spec_steps <= 5,
                "%s turn %d: the target's copy: every draft accepted, the count grown past 7 (%u of %u in %u steps; "
                "7 a step would take 6)",
                what, turn, got[turn].spec_accepted, got[turn].spec_drafted, got[turn].spec_steps);
      }
      CHECK(st || s->n_past == n_plain, "%s: the cache as plain decoding leaves it (%u tokens, plain %u)", what,
            s->n_past, n_plain);
      for (int turn = 0; turn < 2; turn++) {
        llm_gen_result_free(&ref[turn]);
        llm_gen_result_free(&got[turn]);
      }
    }
    llm_session_free(ds);
    llm_session_free(s);
    llm_model_free(dm);
  }
  llm_model_free(m);
}

/* Pearson's statistic of count[0..n) (draws in all) against probabilities p[0..n): bins whose expected count is at
   least 5, the rest merged into one bin (counted where its expectation is at least 1; the draws in it otherwise
   returned through *stray). *dof: bins - 1. */
static double chi_square(const uint32_t *count, const double *p, uint32_t n, uint32_t draws, uint32_t *dof,
                         uint32_t *stray) {
  double stat = 0, rest_e = 0;
  uint32_t rest_c = 0, bins = 0;
  for (uint32_t v = 0; v < n; v++) {
    double e = p[v] * draws;
    if (e >= 5) {
      stat += (count[v] - e) * (count[v] - e) / e;
      bins++;
    } else {
      rest_e += e;
      rest_c += count[v];
    }
  }
  *stray = 0;
  if (rest_e >= 1) {
    stat += (rest_c - rest_e) * (rest_c - rest_e) / rest_e;
    bins++;
  } else
    *stray = rest_c;
  *dof = bins ? bins - 1 : 0;
  return stat;
}

/* The chi-square bound a correct sampler exceeds with probability 0.001 (Wilson-Hilferty). */
static double chi_square_bound(uint32_t dof) {
  double v = dof ? dof : 1, a = 2.0 / (9.0 * v), z = 3.090;
  return v * pow(1.0 - a + z * sqrt(a), 3.0);
}

/* softmax(logits / temperature) in double */
static void softmax_t(const float *logits, uint32_t n, double temperature, double *p) {
  double mx = -INFINITY, sum = 0;
  for (uint32_t v = 0; v < n; v++)
    if (logits[v] > mx) mx = logits[v];
  for (uint32_t v = 0; v < n; v++)
    sum += p[v] = exp((logits[v] - mx) / temperature);
  for (uint32_t v = 0; v < n; v++)
    p[v] /= sum;
}

/* Sampled speculation keeps the model's distribution: 10,000 verify steps of one draft d (the likeliest token) from
   one position of a q4gsw qwen3 session (rewound each time, the sampler's random stream going on), temperature 0.3,
   no other filter. Row 0's draws against softmax(logits / 0.3) of the prefill's row for that position, and row 1's
   draws where row 0 drew d (the draft accepted) against the next position's: each statistic under the bound a
   correct sampler exceeds with probability 0.001. The same draws against the other row's distribution must exceed
   it (the test can tell distributions apart). */
static void spec_chi_square_case(void) {
  enum { P = 12, N = 10000 };
  const double temp = 0.3;
  llm_err err = {0};
  llm_model *m = load_q4("chi-square", "qwen3", &err);
  if (!m) return;
  uint32_t V = m->hp.n_vocab;
  llm_session_options so = {.ctx = 64};
  llm_session *s = NULL, *r = NULL;
  llm_spec *sp = NULL;
  wgllm_status st = llm_session_create(m, &so, &s, &err);
  if (!st) st = llm_session_create(m, &so, &r, &err);
  int32_t ids[P + 2];
  for (int i = 0; i < P; i++)
    ids[i] = (int32_t)((i * 37 + 11) % V);
  op_sample_params smp = {.temperature = (float)temp, .top_p = 1.0f, .rep_penalty = 1.0f, .seed = 2024};
  int32_t t0 = -1;
  if (!st) st = start_sampled(s, &smp, ids, P, &t0);
  if (!st) st = llm_spec_create(s, 1, 0, NULL, &sp, &err);
  CHECK(st == WGLLM_OK, "chi-square: sessions: %s %s", err.msg, s ? s->err.msg : "");
  float *lg = malloc((size_t)(P + 2) * V * sizeof *lg);
  double *p0 = malloc(V * sizeof *p0), *p1 = malloc(V * sizeof *p1);
  uint32_t *c0 = calloc(V, sizeof *c0), *c1 = calloc(V, sizeof *c1), n1 = 0;
  int32_t d = 0;
  if (!st) { /* the logits of t0's row, its likeliest token d, then those of d's row */
    ids[P] = t0;
    st = llm_session_prefill(r, ids, P + 1, lg, 1);
    for (uint32_t v = 1; v < V; v++)
      if (lg[(size_t)P * V + v] > lg[(size_t)P * V + d]) d = (int32_t)v;
    ids[P + 1] = d;
    llm_session_reset(r);
    if (!st) st = llm_session_prefill(r, ids, P + 2, lg, 1);
    CHECK(st == WGLLM_OK, "chi-square: reference logits: %s", r->err.msg);
  }
  for (uint32_t i = 0; !st && i < N; i++) {
    llm_session_rewind(s, P);
    s->last_sampled = t0;
    int32_t out[2];
    uint32_t n = 0;
    st = llm_spec_verify(sp, &d, 1, out, &n);
    if (st || n < 1 || (n == 2) != (out[0] == d)) { /* checked once, not 10,000 times */
      CHECK(0, "chi-square: verify %u: %s (%u tokens)", i, sp->err.msg, n);
      break;
    }
    c0[out[0]]++;
    if (n == 2) {
      c1[out[1]]++;
      n1++;
    }
  }
  if (!st) {
    softmax_t(lg + (size_t)P * V, V, temp, p0);
    softmax_t(lg + (size_t)(P + 1) * V, V, temp, p1);
    uint32_t dof0, dof1, stray0, stray1, dofx, strayx;
    double x0 = chi_square(c0, p0, V, N, &dof0, &stray0), x1 = chi_square(c1, p1, V, n1, &dof1, &stray1);
    double b0 = chi_square_bound(dof0), b1 = chi_square_bound(dof1);
    CHECK(x0 < b0 && stray0 <= 5, "chi-square: row 0's %u draws: %.1f on %u degrees of freedom (bound %.1f), %u stray",
          N, x0, dof0, b0, stray0);
    CHECK(n1 >= 1000 && x1 < b1 && stray1 <= 5,
          "chi-square: row 1's %u draws after the draft was accepted: %.1f on %u degrees of freedom (bound %.1f), %u "
          "stray",
          n1, x1, dof1, b1, stray1);
    double xx = chi_square(c0, p1, V, N, &dofx, &strayx); /* the wrong row's distribution */
    CHECK(xx > chi_square_bound(dofx) || strayx > 5,
          "chi-square: row 0's draws against row 1's distribution are told apart (%.1f, bound %.1f)", xx,
          chi_square_bound(dofx));
    printf("  qwen3            sampled speculation: row 0 chi2 %.1f (dof %u, bound %.1f), row 1 %.1f over %u draws "
           "(dof %u, bound %.1f)\n",
           x0, dof0, b0, x1, n1, dof1, b1);
  }
  free(lg);
  free(p0);
  free(p1);
  free(c0);
  free(c1);
  llm_spec_free(sp);
  llm_session_free(r);
  llm_session_free(s);
  llm_model_free(m);
}

/* Batched decode in the fast precision past 8 rows (the small-M GEMM, op_gemv_fast with the batch's partial sums)
   against each session's own step, on a q4gsw fixture: NS sessions prefilled with prompts of their own and one
   greedy step alone each, in the exact and in the fast precision (the int8 GEMV), their logits kept; then the fast
   sessions reset, prefilled again and stepped together in one batch of NS rows. A batched row's sums are in another
   order than the GEMV's, and its activations are quantized by the quantizer where the one-token GEMV may quantize
   them in its workgroups with its own sum of squares (an element at a rounding tie then lands a step away: seen on
   the H200, one row of 12 at 1.1e-2 relative L2). So: each batched row as close to its exact logits as the fast
   steps alone are (within twice the worst alone row's relative L2, + 1e-4), most rows (at least three quarters)
   within 1e-4 relative L2 of their fast step alone (a wrong tile, slice or epilogue is off by O(1) in every row):
   th_check_batched_rows; and a row's id that of its fast step alone where those logits' top two are 0.05 apart and
   the row is within 1e-4. */

static void batched_fast_case(const char *name, uint32_t NS) {
  llm_err err = {0};
  llm_model *m = load_q4("batched fast", name, &err);
  if (!m) return;
  wgllm_status st = WGLLM_OK;
  uint32_t V = m->hp.n_vocab;
  llm_session *ss[LLM_BATCH_MAX] = {0};
  llm_batch *b = NULL;
  st = llm_batch_create(m, &b, &err);
  CHECK(st == WGLLM_OK, "batch: %s", err.msg);
  size_t bytes = (size_t)NS * V * 4;
  float *exact = malloc(bytes), *alone = malloc(bytes), *together = malloc(bytes);
  int32_t first[LLM_BATCH_MAX], want[LLM_BATCH_MAX], got[LLM_BATCH_MAX], prompt[LLM_BATCH_MAX][10];
  op_sample_params greedy = {.temperature = 0.0f, .top_p = 1.0f, .rep_penalty = 1.0f, .ring_cap = 32};
  for (int fast = 0; fast < 2; fast++) { /* alone: exact (sessions freed), then fast (kept for the batch) */
    llm_session_options so = {.ctx = 128, .prefill_chunk = 16, .fast = fast};
    float *dst = fast ? alone : exact;
    for (uint32_t i = 0; !st && i < NS; i++) {
      for (int k = 0; k < 10; k++)
        prompt[i][k] = (int32_t)((k * 53 + i * 29 + 3) % V);
      st = llm_session_create(m, &so, &ss[i], &err);
      CHECK(st == WGLLM_OK, "session: %s", err.msg);
      if (!st) st = llm_session_set_sampler(ss[i], &greedy, prompt[i], 10);
      if (!st) st = llm_session_prefill_sample(ss[i], prompt[i], 10, &first[i]);
      if (!st) st = llm_session_step_sample(ss[i], &want[i]);
      if (!st) th_download(ss[i]->step_scratch.logits, dst + (size_t)i * V, (size_t)V * 4);
      CHECK(st == WGLLM_OK, "%s alone %u: %s", name, i, ss[i] ? ss[i]->err.msg : err.msg);
      if (!fast) {
        llm_session_free(ss[i]);
        ss[i] = NULL;
      }
    }
  }
  for (uint32_t i = 0; !st && i < NS; i++) {
    int32_t again = -1;
    llm_session_reset(ss[i]);
    st = llm_session_set_sampler(ss[i], &greedy, prompt[i], 10);
    if (!st) st = llm_session_prefill_sample(ss[i], prompt[i], 10, &again);
    CHECK(st == WGLLM_OK && again == first[i], "%s: session %u's prefill again gives %d (first %d)", name, i, again,
          first[i]);
  }
  if (!st) {
    st = llm_batch_step(b, ss, NS, got);
    CHECK(st == WGLLM_OK, "%s: batch step of %u: %s", name, NS, b->err.msg);
  }
  if (!st) {
    CHECK(b->sc.part != NULL, "%s: the batch has the small-M GEMM's partial sums", name);
    th_download(b->sc.logits, together, bytes);
    int near[LLM_BATCH_MAX];
    th_check_batched_rows(name, NS, V, together, alone, exact, near);
    for (uint32_t i = 0; i < NS; i++) {
      const float *a = alone + (size_t)i * V;
      double top = -1e30, second = -1e30;
      for (uint32_t v = 0; v < V; v++) {
        if (a[v] > top)
          second = top, top = a[v];
        else if (a[v] > second)
          second = a[v];
      }
      if (top - second >= 0.05 && near[i])
        CHECK(got[i] == want[i], "%s: row %u batched fast picks %d, alone %d", name, i, got[i], want[i]);
    }
  }
  llm_batch_free(b);
  for (uint32_t i = 0; i < NS; i++)
    llm_session_free(ss[i]);
  free(exact);
  free(alone);
  free(together);
  llm_model_free(m);
}

/* The logit filter and logprobs in the generation loop, against the CPU on the same logits (a second session's
   decode steps, no sampler): a grammar over a made-up vocabulary (token i spells letters: "a".."z", then pairs; the
   last id an end-of-generation token) and greedy decoding: each step's token is the argmax of the logits over the
   tokens the grammar allows (a second matcher gives the mask), the text ends where the grammar must (LLM_STOP_GRAMMAR,
   before the token limit: the grammar is bounded); a logit bias:
   the argmax of logits + bias; logprobs: the drawn token's and the top 5's log-softmax of the unfiltered logits. */
static void filter_case(const char *name) {
  llm_err err = {0};
  llm_model *m = load_as("filter", name, NULL, &err);
  if (!m) return;
  uint32_t V = m->hp.n_vocab;
  char **bytes = calloc(V, sizeof *bytes);
  uint32_t *lens = calloc(V, 4);
  uint8_t *kinds = calloc(V, 1);
  for (uint32_t i = 0; i < V; i++) {
    bytes[i] = calloc(3, 1);
    bytes[i][0] = (char)('a' + (i < 26 ? i : (i - 26) / 26 % 26));
    if (i >= 26) bytes[i][1] = (char)('a' + (i - 26) % 26);
    lens[i] = i < 26 ? 1 : 2;
  }
  kinds[V - 1] = GRAMMAR_TOK_EOG;
  grammar_vocab *gv = grammar_vocab_create(V, (const char *const *)bytes, lens, kinds, &err);
  CHECK(gv != NULL, "filter: vocabulary: %s", err.msg);
  const char *gbnf = "root ::= [a-f]{1,5} \"z\" ([g-m] [n-t]){0,6} \"q\"";
  grammar *g = NULL;
  CHECK(grammar_from_gbnf(gbnf, strlen(gbnf), &g, &err) == WGLLM_OK, "filter: grammar: %s", err.msg);
  grammar_cache *gc = gv && g ? grammar_cache_create(g, gv, 0, &err) : NULL;
  llm_session *s = NULL, *ref = NULL;
  llm_session_options so = {.ctx = 96};
  CHECK(llm_session_create(m, &so, &s, &err) == WGLLM_OK && llm_session_create(m, &so, &ref, &err) == WGLLM_OK, "%s",
        err.msg);
  int32_t prompt[5] = {3, 17, 42, 99, 7};
  int32_t bias_ids[3] = {5, 40, 77};
  float bias[3] = {6.5f, -100.0f, 9.0f};
  uint32_t words = (V + 31) / 32, *mask = malloc(words * 4);
  float *logits = malloc((size_t)V * 4);
  for (int mode = 0; gc && s && ref && mode < 2; mode++) { /* 0: the grammar and logprobs; 1: the bias */
    llm_gen_params gp = {.max_tokens = 40,
                         .sampling = {.temperature = 0, .top_p = 1, .rep_penalty = 1},
                         .gcache = mode == 0 ? gc : NULL,
                         .logprobs = mode == 0,
                         .top_logprobs = 5,
                         .bias_ids = mode ? bias_ids : NULL,
                         .bias = mode ? bias : NULL,
                         .n_bias = mode ? 3 : 0};
    llm_gen_result r;
    llm_session_reset(s);
    wgllm_status st = llm_generate(s, NULL, prompt, 5, &gp, &r);
    CHECK(st == WGLLM_OK, "filter %s mode %d: generate: %s", name, mode, s->err.msg);
    if (st) continue;
    /* the CPU's run: decode steps' logits, the mask or the bias, argmax */
    grammar_matcher *gm = grammar_matcher_create(g, gv, &err);
    llm_session_reset(ref);
    st = llm_session_prefill(ref, prompt, 5, logits, 0);
    uint32_t n = 0, bad_lp = 0, stop_ok = 0;
    for (; !st && n < gp.max_tokens; n++) {
      uint32_t allowed = mode == 0 ? grammar_matcher_mask(gm, mask) : V;
      int32_t best = -1;
      float bx = -INFINITY;
      for (uint32_t i = 0; i < V; i++) {
        if (mode == 0 && !(mask[i >> 5] >> (i & 31) & 1)) continue;
        float x = logits[i];
        for (int k = 0; mode && k < 3; k++)
          if ((uint32_t)bias_ids[k] == i) x += bias[k];
        if (best < 0 || x > bx) {
          best = (int32_t)i;
          bx = x;
        }
      }
      CHECK(allowed > 0 && best >= 0, "filter %s: the grammar allows nothing at %u", name, n);
      if (best < 0) break;
      if (mode == 0 && n < r.n_generated) { /* logprobs of the unfiltered logits */
        double mx = -INFINITY, sum = 0;
        for (uint32_t i = 0; i < V; i++)
          mx = logits[i] > mx ? logits[i] : mx;
        for (uint32_t i = 0; i < V; i++)
          sum += exp((double)logits[i] - mx);
        double lse = mx + log(sum);
        const uint32_t *w = r.logprobs[n];
        float lp, top0;
        memcpy(&lp, &w[1], 4);
        memcpy(&top0, &w[4], 4);
        int32_t amax = 0;
        for (uint32_t i = 1; i < V; i++)
          if (logits[i] > logits[amax]) amax = (int32_t)i;
        if ((int32_t)w[0] != r.tokens[n] || fabs(lp - (logits[w[0]] - lse)) > 1e-4 || w[2] != 5 ||
            (int32_t)w[3] != amax || fabs(top0 - (logits[amax] - lse)) > 1e-4)
          bad_lp++;
      }
      if (n >= r.n_generated || r.tokens[n] != best) break;
      if (mode == 0 && kinds[best] == GRAMMAR_TOK_EOG) break;
      if (mode == 0) grammar_matcher_accept(gm, best);
      if (mode == 0 && grammar_matcher_must_end(gm)) {
        stop_ok = r.stop == LLM_STOP_GRAMMAR && n + 1 == r.n_generated;
        n++;
        break;
      }
      st = llm_session_decode(ref, best, logits);
    }
    CHECK(n == r.n_generated, "filter %s mode %d: GPU and CPU agree on %u of %u tokens", name, mode, n, r.n_generated);
    if (mode == 0) {
      CHECK(stop_ok, "filter %s: stop %s after %u tokens (want: the grammar's end)", name, llm_stop_reason_name(r.stop),
            r.n_generated);
      CHECK(bad_lp == 0, "filter %s: %u tokens' logprobs differ from the CPU's", name, bad_lp);
      /* the text is a prefix of a sentence of the grammar */
      grammar_matcher *chk = grammar_matcher_create(g, gv, &err);
      uint32_t ok = 0;
      for (uint32_t i = 0; i < r.n_generated; i++)
        ok += grammar_matcher_accept(chk, r.tokens[i]);
      CHECK(ok == r.n_generated, "filter %s: the text leaves the grammar at token %u", name, ok);
      grammar_matcher_free(chk);
      printf("  %-16s grammar (%u tokens, stop: %s) and logprobs: the CPU's argmax over the mask\n", name,
             r.n_generated, llm_stop_reason_name(r.stop));
    } else {
      printf("  %-16s logit bias: the CPU's argmax of logits + bias (%u tokens)\n", name, r.n_generated);
    }
    grammar_matcher_free(gm);
    llm_gen_result_free(&r);
  }
  /* closing in time: items repeat without end unless the text closes with "z", whose tokens a -100 bias keeps from
     being drawn; 9 tokens at most: the text must still be a whole sentence at the limit (it is not, unguarded) */
  const char *loop = "root ::= \"x\" ([a-f] \"y\")* \"z\"";
  grammar *g2 = NULL;
  CHECK(grammar_from_gbnf(loop, strlen(loop), &g2, &err) == WGLLM_OK, "filter: grammar: %s", err.msg);
  grammar_cache *gc2 = g2 ? grammar_cache_create(g2, gv, 0, &err) : NULL;
  int32_t zs[64];
  float zb[64];
  uint32_t nz = 0;
  for (uint32_t i = 0; i < V && nz < 64; i++)
    if (strchr(bytes[i], 'z')) zs[nz] = (int32_t)i, zb[nz++] = -100.0f;
  for (uint32_t limit = 9; gc2 && s && limit <= 12; limit += 3) {
    llm_gen_params gp = {.max_tokens = limit,
                         .sampling = {.temperature = 0, .top_p = 1, .rep_penalty = 1},
                         .gcache = gc2,
                         .bias_ids = zs,
                         .bias = zb,
                         .n_bias = nz};
    llm_gen_result r;
    llm_session_reset(s);
    wgllm_status st = llm_generate(s, NULL, prompt, 5, &gp, &r);
    CHECK(st == WGLLM_OK, "filter %s closing: %s", name, s->err.msg);
    grammar_matcher *chk = grammar_matcher_create(g2, gv, &err);
    uint32_t ok = 0;
    for (uint32_t i = 0; !st && i < r.n_generated; i++)
      ok += grammar_matcher_accept(chk, r.tokens[i]);
    CHECK(!st && ok == r.n_generated && grammar_matcher_can_end(chk) && r.grammar_closed,
          "filter %s closing: %u tokens (limit %u, stop %s) not a whole sentence", name, r.n_generated, limit,
          llm_stop_reason_name(r.stop));
    printf("  %-16s closed in time: a whole sentence in %u tokens (limit %u)\n", name, r.n_generated, limit);
    grammar_matcher_free(chk);
    if (!st) llm_gen_result_free(&r);
  }
  grammar_cache_free(gc2);
  grammar_free(g2);
  free(mask);
  free(logits);
  llm_session_free(s);
  llm_session_free(ref);
  grammar_cache_free(gc);
  grammar_free(g);
  grammar_vocab_free(gv);
  for (uint32_t i = 0; i < V; i++)
    free(bytes[i]);
  free(bytes);
  free(lens);
  free(kinds);
  llm_model_free(m);
}

int main(void) {
  th_gpu();
  filter_case("llama_gqa");
  filter_case("qwen3");
  chunked_prefill();
  greedy_case("llama_gqa", "data/models/llama_gqa", 0);
  greedy_case("qwen2", "data/models/qwen2", 0);
  greedy_case("llama_q4_0_gguf", "data/models/llama_q4_0_gguf/model.gguf", 0);
  /* the same results with no pipelining and with the deepest queue */
  greedy_case("llama_gqa", "data/models/llama_gqa", 1);
  greedy_case("qwen2", "data/models/qwen2", 3);
  batched_case("qwen3", "q4", 40);            /* per-head q/k norms, GQA */
  batched_case("gemma4_kv_shared", "q4", 40); /* per-layer inputs, KV-shared layers, rings */
  batched_case("llama_mha_bf16", NULL, 40);   /* float weights: the unfused projections, a GEMM of the rows */
  pipelined_case("qwen3", 40);
  spec_lookup_case();
  spec_case("qwen3", "q4", 40);
  spec_case("gemma3", "q4", 40);           /* window layers as rings (their slack past the window) */
  spec_case("gemma4_kv_shared", "q4", 40); /* per-layer inputs, KV-shared layers reading the rows' keys, rings */
  spec_case("gemma4_kv_shared", NULL, 40); /* and with bf16 weights */
  spec_case("llama_gqa", NULL, 40);        /* f32 weights: the unfused projections */
  draft_case();
  spec_every_model_case();
  spec_kv_full_case();
  spec_chi_square_case();
  batched_case("gemma3", "q4", 150);  /* sandwich norms, GeGLU, window layers as 128-slot rings, local RoPE */
  batched_fast_case("qwen3", 12);     /* the small-M GEMM's 16-row tiles */
  batched_fast_case("llama_gqa", 33); /* its 64-row tiles */
  th_gpu_done();
  return th_finish("test_generate");
}
