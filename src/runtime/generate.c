/* Generation loop (see generate.h). Text handling: every token's bytes go through a streaming detokenizer
   (holds back incomplete UTF-8); the text is only emitted once no stop string can still start in it. */
#include "generate.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

const char *llm_stop_reason_name(llm_stop_reason r) {
  switch (r) {
  case LLM_STOP_EOG:
    return "end of generation";
  case LLM_STOP_STRING:
    return "stop string";
  case LLM_STOP_MAX_TOKENS:
    return "token limit";
  case LLM_STOP_CALLBACK:
    return "stopped by callback";
  case LLM_STOP_CONTEXT:
    return "context full";
  case LLM_STOP_GRAMMAR:
    return "grammar complete";
  default:
    return "none";
  }
}

static double now_s(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return t.tv_sec + t.tv_nsec * 1e-9;
}

void llm_gen_result_free(llm_gen_result *r) {
  if (!r) return;
  free(r->tokens);
  free(r->text);
  free(r->logprobs);
  r->tokens = NULL;
  r->text = NULL;
  r->logprobs = NULL;
}

static int text_append(llm_gen_text *t, const char *s, size_t n) {
  if (t->len + n + 1 > t->cap) {
    size_t nc = t->cap ? t->cap * 2 : 256;
    while (nc < t->len + n + 1)
      nc *= 2;
    char *nb = realloc(t->buf, nc);
    if (!nb) return 0;
    t->buf = nb;
    t->cap = nc;
  }
  memcpy(t->buf + t->len, s, n);
  t->len += n;
  t->buf[t->len] = 0;
  return 1;
}

/* The length of stop string i: its stop_len, else up to its NUL. */
static size_t stop_len(const llm_gen_params *gp, size_t i) {
  return gp->stop_len ? gp->stop_len[i] : strlen(gp->stop[i]);
}

/* Finds a stop string in the unemitted text; returns its offset or -1. *safe = how far text may be emitted. */
static long find_stop(const llm_gen_text *t, const llm_gen_params *gp, size_t *safe) {
  size_t maxlen = 0;
  for (size_t i = 0; i < gp->n_stop; i++)
    if (stop_len(gp, i) > maxlen) maxlen = stop_len(gp, i);
  size_t from = t->emitted > maxlen ? t->emitted - maxlen : 0;
  long best = -1;
  for (size_t i = 0; i < gp->n_stop; i++) {
    size_t sl = stop_len(gp, i);
    if (!sl) continue;
    for (size_t p = from; p + sl <= t->len; p++)
      if (!memcmp(t->buf + p, gp->stop[i], sl)) {
        if (best < 0 || (long)p < best) best = (long)p;
        break;
      }
  }
  /* hold back the longest tail that is a prefix of a stop string */
  size_t hold = 0;
  for (size_t i = 0; i < gp->n_stop; i++) {
    size_t sl = stop_len(gp, i);
    for (size_t k = sl > 1 ? sl - 1 : 0; k > hold; k--)
      if (k <= t->len && !memcmp(t->buf + t->len - k, gp->stop[i], k)) {
        hold = k;
        break;
      }
  }
  *safe = t->len - hold;
  if (*safe < t->emitted) *safe = t->emitted;
  return best;
}

wgllm_status llm_gen_begin_deferred(llm_gen *g, llm_session *s, const tokenizer *tok, const int32_t *prompt,
                                    uint32_t n_prompt, const llm_gen_params *gp) {
  memset(g, 0, sizeof *g);
  g->s = s;
  g->tok = tok;
  g->gp = *gp;
  g->res.n_prompt = n_prompt;
  llm_err_clear(&s->err);
  if (n_prompt == 0) {
    llm_err_set(&s->err, WGLLM_ERR_INVALID_ARG, "empty prompt: give at least one token");
    return g->st = WGLLM_ERR_INVALID_ARG;
  }
  if ((uint64_t)s->n_past + n_prompt >= s->opt.ctx) {
    llm_err_set(&s->err, WGLLM_ERR_INVALID_ARG,
                "the prompt of %u tokens (after %u in the cache) does not fit the context of %u", n_prompt, s->n_past,
                s->opt.ctx);
    return g->st = WGLLM_ERR_INVALID_ARG;
  }
  g->max_tokens = gp->max_tokens ? gp->max_tokens : 256;
  g->prompt_end = s->n_past + n_prompt;
  g->res.tokens = malloc((size_t)g->max_tokens * sizeof *g->res.tokens);
  g->pending = malloc((size_t)n_prompt * sizeof *g->pending);
  if (!g->res.tokens || !g->pending) {
    llm_err_set(&s->err, WGLLM_ERR_OUT_OF_MEMORY, "out of host memory");
    return g->st = WGLLM_ERR_OUT_OF_MEMORY;
  }
  llm_logit_filter filter = {
      .masked = gp->gcache != NULL, .bias_ids = gp->bias_ids, .bias = gp->bias, .n_bias = gp->n_bias};
  wgllm_status st = llm_session_set_filter(s, &filter);
  if (st) return g->st = st;
  if (gp->gcache) {
    llm_err e = {0};
    g->gm = grammar_matcher_create_shared(gp->gcache, &e);
    g->mask = malloc(((size_t)s->m->hp.n_vocab + 31) / 32 * 4);
    if (!g->gm || !g->mask) {
      llm_err_set(&s->err, g->gm ? WGLLM_ERR_OUT_OF_MEMORY : e.status, "%s", g->gm ? "out of host memory" : e.msg);
      return g->st = s->err.status;
    }
  }
  st = llm_session_set_logprobs(s, gp->logprobs, gp->top_logprobs);
  if (st) return g->st = st;
  if (gp->logprobs && !(g->res.logprobs = malloc((size_t)g->max_tokens * sizeof *g->res.logprobs))) {
    llm_err_set(&s->err, WGLLM_ERR_OUT_OF_MEMORY, "out of host memory");
    return g->st = WGLLM_ERR_OUT_OF_MEMORY;
  }
  st = gp->recent ? llm_session_set_sampler(s, &gp->sampling, gp->recent, gp->n_recent)
                  : llm_session_set_sampler(s, &gp->sampling, prompt, n_prompt);
  if (st) return g->st = st;
  g->ts = tok ? tok_stream_create(tok) : NULL;
  if (g->ts) tok_stream_skip_special(g->ts, !gp->special);
  memcpy(g->pending, prompt, (size_t)n_prompt * sizeof *prompt);
  g->prefilling = 1;
  /* keep `depth` steps queued: the GPU feeds each sampled id to the next step itself, so the CPU only collects
     ids (and encodes the next step while the GPU runs the queued ones) */
  g->depth = gp->pipeline ? gp->pipeline : 2;
  if (g->depth < 1) g->depth = 1;
  if (g->depth > LLM_MAX_IN_FLIGHT) g->depth = LLM_MAX_IN_FLIGHT;
  if (g->gm) g->depth = 1; /* each step's mask follows from the token before */
  if (!llm_gen_solo(g) &&
      (gp->spec_lookup || gp->draft)) { /* a verify step waits for its verdict: the drafts come from the text so far */
    llm_err e = {0};
    uint32_t k = gp->spec_lookup, kd = gp->draft ? (gp->draft_max ? gp->draft_max : 7) : 0;
    if (kd > k) k = kd;
    if (k > LLM_SPEC_MAX) k = LLM_SPEC_MAX;
    g->spec_k = llm_spec_rows_drafts(k < 3 ? k : 3); /* grown while steps accept all they take: spec_next */
    st = llm_spec_create(s, k, gp->spec_lookup != 0, gp->draft, &g->spec, &e);
    if (st) {
      llm_err_set(&s->err, st, "%s", e.msg);
      return g->st = st;
    }
  }
  return WGLLM_OK;
}

/* The session's position as plain decoding would have it: a verify step fed the tokens not taken yet too. */
static uint32_t gen_n_past(const llm_gen *g) { return g->s->n_past - (g->spec_n - g->spec_at); }

int llm_gen_solo(const llm_gen *g) { return g->gm || g->gp.n_bias || g->gp.logprobs; }

/* Near the token limit (or the context's end) only the tokens after which the sentence can still be completed in the
   tokens left stay in the mask, so the text is a whole sentence when the limit comes: a token stays when the bytes
   that complete the sentence after it (grammar_matcher_min_bytes) are at most the tokens left after it (a token
   gives one byte at least, where single-byte tokens exist), and with nothing left to complete only
   end-of-generation tokens stay. Checked from LLM_GRAMMAR_GUARD tokens before the last moment it could matter (a
   token such as `,{` that opens one more object can raise the bytes left by more than it spends); n tokens allowed
   before, the count after (the mask as it was where none would do). */
#define LLM_GRAMMAR_GUARD 32
static uint32_t close_in_time(llm_gen *g, uint32_t n) {
  uint32_t left = g->max_tokens - g->res.n_generated, room = g->s->opt.ctx - gen_n_past(g);
  if (room < left && !g->gp.context_shift) left = room; /* a context shift makes room: only the token limit ends it */
  uint32_t d = grammar_matcher_min_bytes(g->gm);
  if (d == UINT32_MAX || (uint64_t)left > (uint64_t)d + LLM_GRAMMAR_GUARD) return n;
  uint32_t words = (g->s->m->hp.n_vocab + 31) / 32;
  uint32_t *keep = calloc(words, 4);
  if (!keep) return n;
  /* one walk of the vocabulary's trie: the tokens after which at most left - 1 bytes complete the sentence (a
     subset of the mask: the same walk, one more condition) */
  uint32_t kept = grammar_matcher_mask_within(g->gm, keep, left - 1);
  if (kept && kept < n) {
    memcpy(g->mask, keep, (size_t)words * 4);
    g->res.grammar_closed = 1;
  }
  free(keep);
  return kept ? kept : n;
}

/* Constrained decoding: the grammar's mask for the next draw, written for the next sampled step (0, the
   generation failed, when the grammar allows no token: a grammar the vocabulary cannot continue). */
static int write_mask(llm_gen *g) {
  if (!g->gm) return 1;
  uint32_t n = grammar_matcher_mask(g->gm, g->mask);
  if (n) n = close_in_time(g, n);
  if (!n) {
    llm_err_set(&g->s->err, WGLLM_ERR_INVALID_ARG,
                "the grammar allows no token of the vocabulary after %u generated tokens (the text so far cannot "
                "be continued with this model's tokens)",
                g->res.n_generated);
    g->st = WGLLM_ERR_INVALID_ARG;
    llm_gen_finish(g);
    return 0;
  }
  llm_session_write_mask(g->s, g->mask);
  return 1;
}

wgllm_status llm_gen_prefill(llm_gen *g, uint32_t max) {
  if (!g->prefilling || g->done || g->st) return g->st;
  llm_session *s = g->s;
  uint32_t left = g->res.n_prompt - g->prefilled, n = max && max < left ? max : left;
  if (n == left && !write_mask(g)) return g->st;
  double t0 = now_s();
  wgllm_status st = n < left ? llm_session_prefill(s, g->pending + g->prefilled, n, NULL, 0)
                             : llm_session_prefill_sample(s, g->pending + g->prefilled, n, &g->token);
  if (st) {
    g->prefilled += n;
    g->res.prefill_s += now_s() - t0;
    g->st = st;
    llm_gen_finish(g);
    return st;
  }
  if (g->gp.logprobs && n == left) memcpy(g->lp_next, s->lp_last, sizeof g->lp_next);
  llm_gen_prefilled(g, n, g->token, now_s() - t0);
  return WGLLM_OK;
}

void llm_gen_prefilled(llm_gen *g, uint32_t n, int32_t token, double seconds) {
  g->res.prefill_s += seconds;
  g->prefilled += n;
  if (g->prefilled == g->res.n_prompt) { /* the first token is sampled */
    g->token = token;
    g->has_token = 1;
    g->prefilling = 0;
    g->started = 1;
    g->t1 = now_s();
    free(g->pending);
    g->pending = NULL;
  }
}

wgllm_status llm_gen_begin(llm_gen *g, llm_session *s, const tokenizer *tok, const int32_t *prompt, uint32_t n_prompt,
                           const llm_gen_params *gp) {
  wgllm_status st = llm_gen_begin_deferred(g, s, tok, prompt, n_prompt, gp);
  return st ? st : llm_gen_prefill(g, 0);
}

/* Emits text[emitted, upto) through the callback; returns its stop request. */
static int emit(llm_gen *g, size_t upto) {
  int stop = 0;
  if (upto > g->text.emitted && g->gp.on_text)
    stop = g->gp.on_text(g->text.buf + g->text.emitted, upto - g->text.emitted, g->gp.user);
  g->text.emitted = upto;
  return stop;
}

/* Context shift (gp.context_shift), where the token to feed next (g->token, sampled, not yet fed) does not fit the
   context: the cache's first `keep` tokens stay, half of the ones after them are dropped, and the tail after those is
   prefilled again at its new positions: recomputation rather than llama.cpp's rotation of the cached keys, so it is
   exactly what a fresh session computes from the kept tokens in every cache layout (a paged pool, sliding-window
   rings, KV-shared layers, f16 KV) and costs a prefill of the tail. Where the rewind keeps less (a ring that no longer
   holds the keys position `keep` needs, a pool block shared with another sequence) more is recomputed, from 0 at
   worst. The sampler's state on the GPU (its penalty window over the text as generated), the step's input id and the
   grammar's state stay as they are: only what the model sees changes. Called with nothing in flight (the steps queued
   never reach the context's last position: llm_gen_accept, needs_next in jobs.c, llm_spec_room); a verify step's tokens
   not taken yet are dropped (they followed the unshifted cache) and speculation ends (its history and a draft model's
   cache hold the unshifted text). Returns 0 when the generation ended (a context too small to shift, a failure). */
static int shift_context(llm_gen *g) {
  llm_session *s = g->s;
  if (s->fwd_ahead && !s->in_flight) llm_session_step_drain(s); /* a forward pass ahead, at the old positions */
  if (s->in_flight || s->batch_queued) {
    llm_err_set(&s->err, WGLLM_ERR_INTERNAL, "context shift with %d steps in flight (%d batched)", s->in_flight,
                s->batch_queued);
    g->st = WGLLM_ERR_INTERNAL;
    llm_gen_finish(g);
    return 0;
  }
  uint32_t n = gen_n_past(g);
  if (n < 2) { /* nothing to drop from: the context holds at most one token */
    g->res.stop = LLM_STOP_CONTEXT;
    llm_gen_finish(g);
    return 0;
  }
  if (g->spec) {
    g->spec_n = g->spec_at = 0;
    llm_spec_free(g->spec);
    g->spec = NULL;
  }
  int32_t bos = g->tok ? tok_bos(g->tok) : s->m->hp.bos;
  uint32_t keep = g->prompt_end;
  if (g->gp.n_keep >= 0 && (uint64_t)g->gp.n_keep + (bos >= 0 && s->fed[0] == bos) < keep)
    keep = (uint32_t)g->gp.n_keep + (bos >= 0 && s->fed[0] == bos);
  if (keep > n - 2) keep = n - 2;
  uint32_t drop = (n - keep) / 2, total = n - drop;
  int32_t *kept = malloc((size_t)total * sizeof *kept); /* out of s->fed, which the prefill below writes */
  if (!kept) {
    llm_err_set(&s->err, WGLLM_ERR_OUT_OF_MEMORY, "out of host memory");
    g->st = WGLLM_ERR_OUT_OF_MEMORY;
    llm_gen_finish(g);
    return 0;
  }
  memcpy(kept, s->fed, (size_t)keep * sizeof *kept);
  memcpy(kept + keep, s->fed + keep + drop, (size_t)(total - keep) * sizeof *kept);
  uint32_t from = llm_session_rewind(s, keep);
  wgllm_status st = llm_session_prefill(s, kept + from, total - from, NULL, 0);
  free(kept);
  if (st) {
    g->st = st; /* the message is the prefill's, in s->err */
    llm_gen_finish(g);
    return 0;
  }
  s->last_sampled = g->token; /* the next step feeds it (a verify step may have left another id there) */
  s->ids_stale = 1;
  g->res.context_shifts++;
  return 1;
}

wgllm_status llm_gen_accept(llm_gen *g, int queue) {
  if (g->done || g->st || g->prefilling || !g->has_token) return g->st;
  llm_session *s = g->s;
  const llm_gen_params *gp = &g->gp;
  int32_t token = g->token;
  g->has_token = 0;
  if (g->tok && !gp->ignore_eog && tok_is_eog(g->tok, token)) {
    g->res.stop = LLM_STOP_EOG;
    llm_gen_finish(g);
    return g->st;
  }
  if (g->gm && !grammar_matcher_accept(g->gm, token)) { /* the mask allowed only what it accepts */
    llm_err_set(&s->err, WGLLM_ERR_INTERNAL, "the sampler drew token %d, which the grammar forbids", token);
    g->st = WGLLM_ERR_INTERNAL;
    llm_gen_finish(g);
    return g->st;
  }
  if (g->gm &&
      grammar_matcher_ended(g->gm)) { /* an end-of-generation token where the sentence may end (ignore_eog too) */
    g->res.stop = LLM_STOP_EOG;
    llm_gen_finish(g);
    return g->st;
  }
  if (g->res.logprobs) memcpy(g->res.logprobs[g->res.n_generated], g->lp_next, sizeof g->lp_next);
  g->res.tokens[g->res.n_generated++] = token;
  if (g->ts) {
    char piece[256];
    size_t n = tok_stream_push(g->ts, token, piece, sizeof piece);
    while (n) { /* a long token comes out in several pieces */
      if (!text_append(&g->text, piece, n)) {
        llm_err_set(&s->err, WGLLM_ERR_OUT_OF_MEMORY, "out of host memory");
        g->st = WGLLM_ERR_OUT_OF_MEMORY;
        llm_gen_finish(g);
        return g->st;
      }
      n = tok_stream_push(g->ts, -1, piece, sizeof piece);
    }
    size_t safe;
    long at = find_stop(&g->text, gp, &safe);
    if (at >= 0) {
      emit(g, (size_t)at);
      g->text.len = (size_t)at;
      g->text.buf[at] = 0;
      g->res.stop = LLM_STOP_STRING;
      llm_gen_finish(g);
      return g->st;
    }
    if (emit(g, safe)) {
      g->res.stop = LLM_STOP_CALLBACK;
      llm_gen_finish(g);
      return g->st;
    }
  }
  if (g->res.n_generated >= g->max_tokens) {
    g->res.stop = LLM_STOP_MAX_TOKENS;
    llm_gen_finish(g);
    return g->st;
  }
  if (gen_n_past(g) + 1 >= s->opt.ctx) {
    if (!gp->context_shift) {
      g->res.stop = LLM_STOP_CONTEXT;
      llm_gen_finish(g);
      return g->st;
    }
    if (!shift_context(g)) return g->st;
  }
  if (g->gm && grammar_matcher_must_end(g->gm)) {
    g->res.stop = LLM_STOP_GRAMMAR;
    llm_gen_finish(g);
    return g->st;
  }
  if (!s->in_flight && !write_mask(g)) return g->st; /* for the step queued below, or by collect */
  /* queue steps up to the pipeline depth, never past the token limit or the context */
  wgllm_status st = WGLLM_OK;
  while (!st && queue && s->in_flight < g->depth && g->res.n_generated + (uint32_t)s->in_flight < g->max_tokens &&
         s->n_past + (uint32_t)s->in_flight + 1 < s->opt.ctx &&
         (!g->spec || g->spec_pause || (uint32_t)s->in_flight < g->spec_skip)) { /* speculation: resting steps */
    st = llm_session_step_submit(s);
    g->queued++;
  }
  if (st) {
    g->st = st;
    llm_gen_finish(g);
  }
  return g->st;
}

/* Speculation's next token: one the last verify step gave, or a new verify step's first where a proposer has drafts
   (within the token limit: a step gives at most k + 1 tokens); 0 when it has none (a plain step then). The drafts a
   step asks for adapt (spec_k, one of a verify step's counts 1, 3, 7, 15, up to k_max; 3 at first): the next count
   up after a step accepted all it took, the next down after one accepted fewer than half. A verify step that accepts
   nothing costs more than the plain step it replaces (docs/PERF.md, "Speculative decoding"), so after one the proposers
   rest for 1, 2, 4 .. 64 plain steps (queued as without speculation: llm_gen_accept), doubling while their steps keep
   failing. */
static int spec_next(llm_gen *g) {
  if (g->spec_at < g->spec_n) {
    g->token = g->spec_toks[g->spec_at++];
    g->has_token = 1;
    return 1;
  }
  if (g->spec_skip || g->spec_pause) return 0;
  uint32_t k = llm_spec_room(g->spec), left = g->max_tokens - g->res.n_generated;
  if (k + 1 > left) k = left ? left - 1 : 0;
  if (k > g->spec_k) k = g->spec_k;
  int32_t drafts[LLM_SPEC_MAX];
  uint32_t nd = k ? llm_spec_propose(g->spec, k, drafts) : 0;
  if (!nd && g->spec->err.status) {
    g->st = g->spec->err.status;
    llm_err_set(&g->s->err, g->st, "%s", g->spec->err.msg);
    llm_gen_finish(g);
    return 1;
  }
  if (!nd) return 0;
  nd = llm_spec_rows_drafts(nd);
  uint32_t n = 0;
  g->spec->next_k = g->spec_k; /* the next step's guess, encoded while this one runs */
  g->st = llm_spec_verify(g->spec, drafts, nd, g->spec_toks, &n);
  if (g->st == WGLLM_ERR_KV_FULL) { /* the pool has no room for the rows (nothing ran): a plain step, then rest */
    g->st = WGLLM_OK;
    g->spec_skip = g->spec_backoff = g->spec_backoff ? (g->spec_backoff < 64 ? 2 * g->spec_backoff : 64) : 1;
    return 0;
  }
  if (g->st) {
    llm_err_set(&g->s->err, g->st, "%s", g->spec->err.msg);
    llm_gen_finish(g);
    return 1;
  }
  g->res.spec_steps++;
  g->res.spec_drafted += nd;
  g->res.spec_accepted += n - 1;
  uint32_t a = n - 1, top = llm_spec_rows_drafts(g->spec->k_max);
  if (a == nd && g->spec_k < top)
    g->spec_k = 2 * g->spec_k + 1;
  else if (2 * a < nd && g->spec_k > 1)
    g->spec_k = (g->spec_k - 1) / 2;
  if (!a) { /* nothing accepted: rest */
    g->spec_backoff = g->spec_backoff ? (g->spec_backoff < 64 ? 2 * g->spec_backoff : 64) : 1;
    g->spec_skip = g->spec_backoff;
  } else {
    g->spec_backoff = 0;
  }
  g->spec_n = n;
  g->spec_at = 1;
  g->token = g->spec_toks[0];
  g->has_token = 1;
  return 1;
}

wgllm_status llm_gen_collect(llm_gen *g) {
  if (g->done || g->st || g->prefilling) return g->st;
  if (g->spec && !g->s->in_flight && spec_next(g)) return g->st;
  if (!g->s->in_flight) { /* accepted without queueing: one step now */
    g->st = llm_session_step_submit(g->s);
    g->queued++;
  }
  if (!g->st) g->st = llm_session_step_collect(g->s, &g->token);
  if (!g->st && g->gp.logprobs) memcpy(g->lp_next, g->s->lp_last, sizeof g->lp_next);
  if (!g->st) g->has_token = 1;
  if (g->spec_skip) g->spec_skip--;
  if (g->st) llm_gen_finish(g);
  return g->st;
}

void llm_gen_take(llm_gen *g, int32_t token) {
  if (!g->done && !g->st) {
    g->token = token;
    g->has_token = 1;
  }
}

void llm_gen_fail(llm_gen *g, wgllm_status st) {
  if (g->done || g->st) return;
  g->st = st;
  llm_gen_finish(g);
}

void llm_gen_finish(llm_gen *g) {
  if (g->done) return;
  g->done = 1;
  llm_session *s = g->s;
  if (g->spec_n > g->spec_at) { /* a verify step's tokens past the end: the cache as plain decoding leaves it */
    llm_session_rewind(s, gen_n_past(g));
    s->last_sampled = g->token;
    llm_session_step_drain(s); /* the input id rewritten, the reservations back */
    g->spec_n = g->spec_at = 0;
  }
  if (g->started && llm_session_queued(s)) {
    llm_err keep = s->err;
    wgllm_status d = llm_session_step_drain(s);
    if (!g->st && d)
      g->st = d;
    else
      s->err = keep; /* the first failure's message stays */
  }
  /* the last sampled token was not fed: the cache holds the prompt and all generated tokens but the last,
     which the next turn's prompt prefix re-feeds if the caller wants it (chat appends the turn text) */
  if (g->started) g->res.decode_s = now_s() - g->t1;
  if (g->ts && !g->st && g->res.stop != LLM_STOP_STRING && g->res.stop != LLM_STOP_CALLBACK) {
    char piece[256];
    size_t n;
    while ((n = tok_stream_flush(g->ts, piece, sizeof piece)) > 0)
      text_append(&g->text, piece, n);
    emit(g, g->text.len);
  }
  tok_stream_free(g->ts);
  g->ts = NULL;
  if (!g->text.buf) g->text.buf = calloc(1, 1);
}

void llm_gen_free(llm_gen *g) {
  if (!g) return;
  if (!g->done) {
    g->res.stop = LLM_STOP_CALLBACK;
    llm_gen_finish(g);
  }
  llm_spec_free(g->spec);
  grammar_matcher_free(g->gm);
  free(g->mask);
  free(g->res.tokens);
  free(g->res.logprobs);
  free(g->text.buf);
  free(g->pending);
  memset(g, 0, sizeof *g);
}

wgllm_status llm_generate(llm_session *s, const tokenizer *tok, const int32_t *prompt, uint32_t n_prompt,
                          const llm_gen_params *gp, llm_gen_result *res) {
  llm_gen g;
  wgllm_status st = llm_gen_begin(&g, s, tok, prompt, n_prompt, gp);
  while (!st && !g.done) {
    st = llm_gen_accept(&g, 1);
    if (!st && !g.done) st = llm_gen_collect(&g);
  }
  llm_gen_finish(&g);
  *res = g.res;
  res->text = g.text.buf;
  res->text_len = g.text.len;
  g.res.tokens = NULL;
  g.res.logprobs = NULL;
  g.text.buf = NULL;
  llm_gen_free(&g);
  return g.st ? g.st : st;
}
