/* The generation loop: prefill a prompt, then sample token after token on the GPU (only ids come back),
   stream text through a callback, stop on end-of-generation tokens, stop strings, a token limit or a full
   context. */
#ifndef WGLLM_GENERATE_H
#define WGLLM_GENERATE_H
#include "grammar.h"
#include "session.h"
#include "speculate.h"
#include "tokenizer.h"

typedef enum llm_stop_reason {
  LLM_STOP_NONE = 0,
  LLM_STOP_EOG,    /* an end-of-generation token */
  LLM_STOP_STRING, /* a stop string appeared in the text */
  LLM_STOP_MAX_TOKENS,
  LLM_STOP_CALLBACK, /* the callback asked to stop */
  LLM_STOP_CONTEXT,  /* the context is full */
  LLM_STOP_GRAMMAR   /* the grammar's sentence is complete and nothing may follow it */
} llm_stop_reason;

typedef struct llm_gen_params {
  uint32_t max_tokens;
  op_sample_params sampling; /* temperature <= 0: greedy */
  const char *const *stop;   /* stop strings (not emitted) */
  const size_t *stop_len;    /* their lengths in bytes (NUL bytes kept); NULL: each is NUL-terminated */
  size_t n_stop;
  int ignore_eog; /* keep going past end-of-generation tokens */
  int pipeline;   /* decode steps kept in flight, 1..LLM_MAX_IN_FLIGHT (0: 2, measured best: PERF.md) */
  /* receives UTF-8 text as it becomes final; return non-zero to stop */
  int (*on_text)(const char *text, size_t len, void *user);
  void *user;
  /* the tokens the penalties' window starts from, ending with the prompt (the cached prefix the prompt follows,
     then the prompt), read when the generation begins; NULL: the prompt */
  const int32_t *recent;
  uint32_t n_recent;
  /* speculative decoding (speculate.h), the same tokens as without it in the exact precision: prompt lookup, at most
     spec_lookup drafts a verify step (0: off); a draft model's session (NULL: none), at most draft_max drafts a
     step (0: 7). Either at most LLM_SPEC_MAX. */
  uint32_t spec_lookup;
  llm_session *draft;
  uint32_t draft_max;
  /* constrained decoding: every generated token keeps the text a prefix of a sentence of a grammar, the mask applied on
     the GPU before each draw; end-of-generation tokens only where the sentence may end, and the generation stops where
     nothing may follow. gcache: the grammar's masks over the tokenizer's vocabulary (grammar.h), shared with other
     generations of it. One step in flight at a time (each mask follows from the token before) and no speculation. NULL:
     off. */
  grammar_cache *gcache;
  /* a logit bias added before the draw: n_bias (id, bias) pairs, ids distinct. 0: none. */
  const int32_t *bias_ids;
  const float *bias;
  uint32_t n_bias;
  /* each token's logprobs record (llm_session_set_logprobs, top_logprobs of them), kept in res.logprobs; the
     generation steps alone and does not speculate. 0: off. */
  int logprobs;
  uint32_t top_logprobs;
  int special; /* special tokens' text kept in the text (end-of-generation tokens still end it) */
  /* context shift (llama.cpp's, by recomputation): where the next token would not fit the context, the first n_keep
     tokens stay, half of the tokens after them are dropped, and the rest is computed again at its new positions
     (llm_gen_accept); the model sees less, the text goes on as generated (the sampler's penalty window, stop strings
     and a grammar continue over it). n_keep: -1 the whole prompt (the tokens the cache held when the generation
     began and the prompt), else that many tokens and a leading BOS token, at most the prompt, and at most the
     context's tokens but two (half of two is one to drop). Speculation ends at the first shift. 0: off (the
     generation stops, LLM_STOP_CONTEXT). */
  int context_shift;
  int32_t n_keep;
} llm_gen_params;

typedef struct llm_gen_result {
  llm_stop_reason stop;
  uint32_t n_prompt, n_generated;
  double prefill_s, decode_s;                       /* wall time */
  uint32_t spec_steps, spec_drafted, spec_accepted; /* speculation: verify steps, drafts they took, accepted */
  int grammar_closed;      /* a grammar's text was steered to its end as the token limit (or the context) neared */
  uint32_t context_shifts; /* times gp.context_shift dropped tokens from the cache to go on */
  int32_t *tokens;         /* [n_generated], malloc'd; free with free() */
  uint32_t (*logprobs)[LLM_LP_WORDS]; /* gp.logprobs: [n_generated] op_logprobs records, malloc'd; else NULL */
  char *text;                         /* the generated text (stop string cut), NUL-terminated, malloc'd */
  size_t text_len;
} llm_gen_result;

/* The generated text: buf[0, len) so far, of which [0, emitted) went to on_text (the rest may still turn out to
   start a stop string). */
typedef struct llm_gen_text {
  char *buf;
  size_t len, cap, emitted;
} llm_gen_text;

/* A generation in progress, stepped by the caller (llm_generate runs one to its end; a server interleaves
   several): begin prefills and samples the first token into `token`; accept takes `token` (end of generation,
   text, stop strings, limits: done is set once the generation ended) and, with queue, queues the next steps up
   to the pipeline depth; collect waits for the next sampled token (queueing its step first when none is
   queued); a caller that ran the step itself (a batched step over several sessions) hands the token over with
   take, or the failure with fail. finish (called by accept and collect when the generation ends or fails, and by
   free) drops queued steps and flushes the text. begin_deferred leaves the prompt to prefill, which prefill then
   does up to max tokens a call (0: all), the last call sampling the first token (a server interleaves a long
   prompt's chunks with the other generations' steps); accept and collect do nothing while it prefills, and accept
   nothing until a token came (has_token: a batched step still in flight has not handed one over). */
typedef struct llm_gen {
  llm_session *s;
  const tokenizer *tok;
  llm_gen_params gp;
  llm_gen_result res; /* stop, counts, times, tokens (text: in `text`) */
  tok_stream *ts;
  llm_gen_text text;
  llm_spec *spec;                      /* speculative decoding (gp.spec_lookup), or NULL */
  int32_t spec_toks[LLM_SPEC_MAX + 1]; /* the last verify step's tokens: [spec_at, spec_n) not taken yet */
  uint32_t spec_n, spec_at;
  uint32_t spec_skip, spec_backoff; /* plain steps before lookup is tried again, after a step accepted nothing */
  uint32_t spec_k;                  /* drafts the next verify step asks for (adaptive: spec_next) */
  int spec_pause;                   /* a caller batching this generation with others: no verify steps meanwhile */
  uint32_t lp_next[LLM_LP_WORDS];   /* gp.logprobs: the record of `token` (read back with it) */
  grammar_matcher *gm;              /* constrained decoding (gp.gcache): the text's state, and the next step's mask */
  uint32_t *mask;
  int32_t token;      /* sampled; not yet accepted while has_token */
  int has_token;      /* token holds a token accept has not taken yet (accept without one does nothing) */
  int32_t *pending;   /* the prompt while it is prefilled (begin_deferred) */
  uint32_t prefilled; /* of its tokens */
  int prefilling;
  uint32_t max_tokens;
  uint32_t prompt_end; /* tokens in the cache once the prompt is prefilled (gp.n_keep -1 keeps them) */
  uint32_t queued;     /* steps queued so far (a count; the token limit bounds queueing by n_generated + in flight) */
  int depth;           /* steps kept in flight */
  int started;         /* the prefill ran */
  int done;
  wgllm_status st; /* the first failure (message in s->err) */
  double t1;       /* when decoding began */
} llm_gen;

wgllm_status llm_gen_begin(llm_gen *g, llm_session *s, const tokenizer *tok, const int32_t *prompt, uint32_t n_prompt,
                           const llm_gen_params *gp);
wgllm_status llm_gen_begin_deferred(llm_gen *g, llm_session *s, const tokenizer *tok, const int32_t *prompt,
                                    uint32_t n_prompt, const llm_gen_params *gp);
wgllm_status llm_gen_prefill(llm_gen *g, uint32_t max);
wgllm_status llm_gen_accept(llm_gen *g, int queue);
wgllm_status llm_gen_collect(llm_gen *g);
void llm_gen_take(llm_gen *g, int32_t token);
/* A caller prefilled the next n tokens of the pending prompt itself (a batched prefill over several sessions, in
   `seconds`), sampling `token` when they ended it. */
void llm_gen_prefilled(llm_gen *g, uint32_t n, int32_t token, double seconds);
void llm_gen_fail(llm_gen *g, wgllm_status st); /* message already in g->s->err */
/* The generation must step alone (a grammar's mask, a logit bias, logprobs): never in a batched step or batched
   prefill. */
int llm_gen_solo(const llm_gen *g);
void llm_gen_finish(llm_gen *g);
/* Frees what the generation holds; a generation not done is stopped first (LLM_STOP_CALLBACK). */
void llm_gen_free(llm_gen *g);

const char *llm_stop_reason_name(llm_stop_reason r);
/* Runs a generation to its end. The session continues from its current position (n_past), so a chat can
   append turns. */
wgllm_status llm_generate(llm_session *s, const tokenizer *tok, const int32_t *prompt, uint32_t n_prompt,
                          const llm_gen_params *gp, llm_gen_result *res);
void llm_gen_result_free(llm_gen_result *r);
#endif
