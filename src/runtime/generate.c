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
  r->tokens = NULL;
  r->text = NULL;
}

typedef struct text_state {
  char *buf;
  size_t len, cap, emitted;
} text_state;

static int text_append(text_state *t, const char *s, size_t n) {
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

/* Finds a stop string in the unemitted text; returns its offset or -1. *safe = how far text may be emitted. */
static long find_stop(const text_state *t, const llm_gen_params *gp, size_t *safe) {
  size_t maxlen = 0;
  for (size_t i = 0; i < gp->n_stop; i++)
    if (strlen(gp->stop[i]) > maxlen) maxlen = strlen(gp->stop[i]);
  size_t from = t->emitted > maxlen ? t->emitted - maxlen : 0;
  long best = -1;
  for (size_t i = 0; i < gp->n_stop; i++) {
    size_t sl = strlen(gp->stop[i]);
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
    size_t sl = strlen(gp->stop[i]);
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

wgllm_status llm_generate(llm_session *s, const tokenizer *tok, const int32_t *prompt, uint32_t n_prompt,
                          const llm_gen_params *gp, llm_gen_result *res) {
  memset(res, 0, sizeof *res);
  res->n_prompt = n_prompt;
  s->err[0] = 0;
  if (n_prompt == 0) {
    snprintf(s->err, sizeof s->err, "empty prompt: give at least one token");
    return WGLLM_ERR_INVALID_ARG;
  }
  if ((uint64_t)s->n_past + n_prompt >= s->opt.ctx) {
    snprintf(s->err, sizeof s->err, "the prompt of %u tokens (after %u in the cache) does not fit the context of %u",
             n_prompt, s->n_past, s->opt.ctx);
    return WGLLM_ERR_INVALID_ARG;
  }
  uint32_t max_tokens = gp->max_tokens ? gp->max_tokens : 256;
  res->tokens = malloc((size_t)max_tokens * sizeof *res->tokens);
  if (!res->tokens) {
    snprintf(s->err, sizeof s->err, "out of host memory");
    return WGLLM_ERR_OUT_OF_MEMORY;
  }
  wgllm_status st = llm_session_set_sampler(s, &gp->sampling, prompt, n_prompt);
  if (st) return st;
  tok_stream *ts = tok ? tok_stream_create(tok) : NULL;
  if (ts) tok_stream_skip_special(ts, 1);
  text_state text = {0};
  double t0 = now_s();
  int32_t token;
  st = llm_session_prefill_sample(s, prompt, n_prompt, &token);
  res->prefill_s = now_s() - t0;
  double t1 = now_s();
  char piece[256];
  /* keep `depth` steps queued: the GPU feeds each sampled id to the next step itself, so the CPU only collects
     ids (and encodes the next step while the GPU runs the queued ones) */
  int depth = gp->pipeline ? gp->pipeline : 2;
  if (depth < 1) depth = 1;
  if (depth > LLM_MAX_IN_FLIGHT) depth = LLM_MAX_IN_FLIGHT;
  uint32_t queued = 0; /* steps queued so far (each yields one more token) */
  while (!st) {
    if (tok && !gp->ignore_eog && tok_is_eog(tok, token)) {
      res->stop = LLM_STOP_EOG;
      break;
    }
    res->tokens[res->n_generated++] = token;
    if (ts) {
      size_t n = tok_stream_push(ts, token, piece, sizeof piece);
      while (n) { /* a long token comes out in several pieces */
        if (!text_append(&text, piece, n)) {
          st = WGLLM_ERR_OUT_OF_MEMORY;
          break;
        }
        n = tok_stream_push(ts, -1, piece, sizeof piece);
      }
      if (st) break;
      size_t safe;
      long at = find_stop(&text, gp, &safe);
      if (at >= 0) {
        if (gp->on_text && (size_t)at > text.emitted)
          gp->on_text(text.buf + text.emitted, (size_t)at - text.emitted, gp->user);
        text.emitted = text.len = (size_t)at;
        res->stop = LLM_STOP_STRING;
        break;
      }
      if (safe > text.emitted && gp->on_text) {
        int stop = gp->on_text(text.buf + text.emitted, safe - text.emitted, gp->user);
        text.emitted = safe;
        if (stop) {
          res->stop = LLM_STOP_CALLBACK;
          break;
        }
      }
      text.emitted = safe;
    }
    if (res->n_generated >= max_tokens) {
      res->stop = LLM_STOP_MAX_TOKENS;
      break;
    }
    if (s->n_past + 1 >= s->opt.ctx) {
      res->stop = LLM_STOP_CONTEXT;
      break;
    }
    /* queue steps up to the pipeline depth, never past the token limit or the context */
    while (!st && s->in_flight < depth && queued + 1 < max_tokens &&
           s->n_past + (uint32_t)s->in_flight + 1 < s->opt.ctx) {
      st = llm_session_step_submit(s);
      queued++;
    }
    if (!st) st = llm_session_step_collect(s, &token);
  }
  if (s->in_flight) {
    wgllm_status d = llm_session_step_drain(s);
    if (!st) st = d;
  }
  /* the last sampled token was not fed: the cache holds the prompt and all generated tokens but the last,
     which the next turn's prompt prefix re-feeds if the caller wants it (chat appends the turn text) */
  res->decode_s = now_s() - t1;
  if (ts && !st && res->stop != LLM_STOP_STRING) {
    size_t n;
    while ((n = tok_stream_flush(ts, piece, sizeof piece)) > 0)
      text_append(&text, piece, n);
    if (text.len > text.emitted && gp->on_text) gp->on_text(text.buf + text.emitted, text.len - text.emitted, gp->user);
    text.emitted = text.len;
  }
  tok_stream_free(ts);
  res->text = text.buf ? text.buf : calloc(1, 1);
  res->text_len = text.len;
  return st;
}
