/* A session: one model's KV cache and position, prefill of prompt tokens (chunked) and the decode step,
   which is recorded once and replayed each token with the token id and position in GPU buffers. */
#ifndef WGLLM_SESSION_H
#define WGLLM_SESSION_H
#include "decoder.h"
#include "kv_pool.h"
#include "llm_err.h"
#include "model.h"

typedef struct llm_session_options {
  uint32_t ctx;            /* context length (0: LLM_DEFAULT_CTX) */
  int kv_f16;              /* f16 KV cache: packed pairs in u32 words, f32 math; needs no shader-f16 */
  uint32_t prefill_chunk;  /* tokens per prefill pass (0: llm_prefill_chunk's, 1024 or 512) */
  int unfused;             /* decode through the plain per-op path (comparisons; the fused kernels by default) */
  llm_attn_grid attn_grid; /* flash-decoding's grid (worst case for the length bucket by default) */
  int fast;                /* int8 activations for the block-quantized linear layers (llm_forward_opts) */
  /* called after each prefill pass with the tokens done and the total of the call */
  void (*on_prefill)(uint32_t done, uint32_t total, void *user);
  void *prefill_user;
  /* NULL: the session's own cache; else the pool its cache draws blocks from (kv_pool.h: ctx at most its max_ctx,
     kv_f16 its type), a block table of its own, blocks reserved before each write (WGLLM_ERR_KV_FULL when the
     pool has none left: nothing ran) */
  llm_kv_pool *pool;
} llm_session_options;

#define LLM_MAX_BUCKETS 24
/* a token's logprobs record (op_logprobs' output): id, its logprob's bits, the count, then (id, logprob) pairs */
#define LLM_LP_WORDS (3 + 2 * OP_LOGPROBS_MAX)
#define LLM_MIN_BUCKET 256

typedef struct llm_session {
  llm_model *m;
  gpu_context *gpu;
  llm_session_options opt;
  llm_kv_cache kv;
  kv_seq seq;           /* on a pool: the blocks its cache holds (seq.n_tokens >= n_past: reserved ahead of steps) */
  gpu_buffer *table;    /* on a pool: its block table [pool max_blocks] u32 */
  uint32_t table_n;     /* entries of table written since the blocks last changed */
  uint32_t seq_gen;     /* bumped whenever seq's blocks change (a batch's copy of its table row notices) */
  llm_rope_tables rope; /* [ctx][rot/2] cos/sin (global layers, and local ones when their base differs) */
  uint32_t n_past;
  uint32_t kv_hi;   /* the most tokens the cache held since the last reset (what a ring's slots hold) */
  int32_t *fed;     /* [ctx] the tokens in the cache, in order (for prefix reuse across turns) */
  uint8_t *decoded; /* [ctx] 1 where fed[i]'s K and V came from a decode step, 0 from a prefill */
  uint32_t lead;    /* fed[0..lead) all came from prefills (what a pool may offer other sessions) */
  uint32_t evicted; /* llm_session_evict: the tokens to recompute (0: not evicted) */
  struct llm_session *pool_prev, *pool_next; /* on a pool: its list of sessions */
  uint64_t stamp;                            /* llm_jobs_step's: the call that last stepped a job on it */
  gpu_recorder *plain[LLM_MAX_BUCKETS];      /* the decode step without the sampler (a restore's replay) */
  int32_t last_sampled;                      /* sitting in the step's input id, not yet fed */
  /* the recorded decode step (kept), one per length bucket: steps[b] serves positions < llm_bucket_len(s, b)
     (256 doubling up to the context), so attention launches a grid sized for the bucket, not the whole cache;
     each is the forward pass, then the sampler when one is set; recorded on first use */
  gpu_recorder *steps[LLM_MAX_BUCKETS];
  uint32_t n_buckets;
  gpu_recorder *last_step;  /* the recording the last submitted step replayed */
  wgllm_status step_status; /* why llm_session_step returned NULL */
  llm_scratch step_scratch;
  gpu_buffer *sampler_state; /* u32 [4 + OP_SAMPLE_RING_MAX] (see op_sample) */
  gpu_buffer *sampler_work;  /* block maxima and candidates (op_sample_work_bytes) */
  int has_sampler;
  op_sample_params sampler;
  /* the logit filter the sampler's steps apply first (llm_session_set_filter): a token mask written before each step
     (logit_mask: [ceil(n_vocab / 32)] u32) and a logit bias (logit_bias: [n_bias][2] u32 pairs) */
  int masked;
  uint32_t n_bias;
  gpu_buffer *logit_mask, *logit_bias;
  /* logprobs (llm_session_set_logprobs): the logits copied before the filter and the sampler (lp_raw), the op's work,
     its output (lp_out, read back with each token instead of the id alone), and the last token's record */
  int lp_on;
  uint32_t lp_top;
  gpu_buffer *lp_raw, *lp_work, *lp_out;
  gpu_readback *lp_readback;
  uint32_t lp_last[LLM_LP_WORDS];
  uint32_t step_recordings; /* how many times a step was recorded (replays create nothing) */
  uint32_t step_gen;        /* bumped whenever the recorded steps are dropped (a batch's recording notices) */
  int ids_stale;            /* a batched step sampled last_sampled: the step's input id must be written again */
  gpu_readback *readback;   /* token ids of queued steps */
  int in_flight;            /* steps queued but not collected */
  /* a masked session (a grammar's: its next mask needs the token before) submits the next step's forward pass right
     after a step's sampling pass, ahead of its mask (llm_session_step_submit), so the GPU computes it while the CPU
     reads the token back and computes the mask; the sampling pass (sample_only: the filter, the sampler, logprobs)
     follows the mask's write. fwd_ahead: that forward pass is queued (at position n_past + in_flight). */
  int fwd_ahead;
  gpu_recorder *sample_only;
  int batch_queued;      /* batched steps (batch.h) queued with it and not collected: its n_past lags by these */
  double prefill_cpu_us; /* the last prefill's CPU time recording and submitting its passes (the GPU starts each
                            pass at its submit): what the host costs a prefill */
  int slots[4];          /* their readback slots, oldest first */
  llm_err err;           /* the last failure: status and message */
} llm_session;

wgllm_status llm_session_create(llm_model *m, const llm_session_options *opt, llm_session **out, llm_err *err);
/* The context a session gets by default: the model's trained length, at most this (the server's default too). */
#define LLM_DEFAULT_CTX 4096
/* As llm_session_create, except that opt->ctx 0 asks for the model's trained length, at most LLM_DEFAULT_CTX (said
   through log as a note where the model was trained on more). A context asked for beyond the trained length is
   warned about through log (warning 1), and the session's memory estimate is noted (warning 0). log may be NULL. */
wgllm_status llm_session_create_fitting(llm_model *m, const llm_session_options *opt, llm_session **out,
                                        void (*log)(int warning, const char *msg), llm_err *err);
/* What a session will take on the device, estimated before anything is allocated (the weights are the model's,
   m->weight_bytes, already allocated). llm_session_create checks it against the device's binding limits and
   gpu_memory_left and refuses a session that does not fit, naming the estimate, the limit and the context that
   fits. */
typedef struct llm_mem_estimate {
  uint64_t kv;      /* the KV cache at the context, its type, KV-shared layers and sliding-window rings */
  uint64_t rope;    /* the RoPE cos/sin tables */
  uint64_t scratch; /* a prefill pass's activations and the decode step's (fast precision's extras not counted) */
  uint64_t total;
} llm_mem_estimate;
/* err may be NULL; fails only where the cache's layout is refused (llm_kv_cache_plan) */
wgllm_status llm_session_estimate(llm_model *m, const llm_session_options *opt, llm_mem_estimate *e, llm_err *err);
void llm_session_free(llm_session *s);
/* Clears the cache position (the next prefill starts at 0). */
void llm_session_reset(llm_session *s);
/* Keeps only the first n cached tokens (n <= n_past) and returns how many it kept: 0 when a sliding-window
   layer's ring no longer holds the keys position n needs (rewound further back than the ring's slack). */
uint32_t llm_session_rewind(llm_session *s, uint32_t n);
/* How many leading ids equal the tokens already in the cache. */
uint32_t llm_session_common_prefix(const llm_session *s, const int32_t *ids, uint32_t n);
/* On a pool: reserves blocks for positions below upto (WGLLM_ERR_KV_FULL, nothing changed, when the pool has too
   few) and writes the new entries of its block table (queue-ordered before the next submit). Without: WGLLM_OK. */
wgllm_status llm_session_reserve(llm_session *s, uint32_t upto);
/* On a pool, for an empty cache: takes the published blocks of the longest prefix of ids[0..n-1) (the last token
   is always computed: its logits are needed) that sessions on the pool prefilled before, instead of computing
   them; returns the tokens taken (a multiple of the block; the session's position). 0 off a pool. */
uint32_t llm_session_adopt_prefix(llm_session *s, const int32_t *ids, uint32_t n);
/* Preemption on a pool: evict gives back every block the session holds (its published ones stay in the pool's
   cache, where a restore may take them back) and keeps its tokens; it cannot step until restore, which recomputes
   its cache: the runs its prefills computed by a prefill again, the tokens decode steps fed through the decode step
   without the sampler, so K and V are the bits they were and the text goes on as if never evicted (the sampler's
   state is the GPU's, untouched). Steps queued when evicted are dropped (call it with none queued to keep a sampled
   generation's draws). restore: WGLLM_ERR_KV_FULL, still evicted, when the pool cannot hold it yet. Off a pool or
   not evicted: nothing to do. */
wgllm_status llm_session_evict(llm_session *s);
wgllm_status llm_session_restore(llm_session *s);
/* Blocks a restore of s needs now (0 when not evicted). */
uint32_t llm_session_restore_blocks(const llm_session *s);
/* Blocks reserving positions below upto would take from the pool now (0 off a pool). */
uint32_t llm_session_blocks_for(const llm_session *s, uint32_t upto);
/* On a pool: moves s to the back of the pool's list (the most recently started: evicted last). */
void llm_session_touch(llm_session *s);
/* A prefill pass fed ids[0..n) at n_past: the bookkeeping after it (the tokens, their provenance, the pool's
   published prompt blocks). */
void llm_session_prefilled(llm_session *s, const int32_t *ids, uint32_t n);
/* WGLLM_ERR_INVALID_ARG (in s->err) for an id outside the vocabulary or T tokens past the context. */
wgllm_status llm_session_check_ids(llm_session *s, const int32_t *ids, uint32_t T);
/* The step fed `token` at n_past through a decode step (batched or not): the bookkeeping after it. */
void llm_session_fed_decoded(llm_session *s, int32_t token);
/* Feeds T prompt tokens. logits: [T][n_vocab] when all_rows, else [n_vocab] for the last token; may be NULL. */
wgllm_status llm_session_prefill(llm_session *s, const int32_t *ids, uint32_t T, float *logits, int all_rows);
/* Feeds one token through the recorded step; logits [n_vocab] (may be NULL). Not with a sampler set. */
wgllm_status llm_session_decode(llm_session *s, int32_t id, float *logits);

/* Sampling on the GPU: the step is re-recorded with the sampler appended, so a generation step feeds the token
   the previous step sampled without it passing through the CPU (only its id is read back). recent: the last
   tokens for the repetition-penalty window (the prompt tail). */
wgllm_status llm_session_set_sampler(llm_session *s, const op_sample_params *sp, const int32_t *recent,
                                     uint32_t n_recent);
/* The logit filter of the sampler's steps, applied before the draw (the steps are re-recorded when it changes):
   masked, a token mask the caller writes before each step with llm_session_write_mask (constrained decoding: one
   step in flight at a time, since each mask depends on the token before); a logit bias of n_bias (id, bias) pairs,
   ids distinct and in the vocabulary. NULL: none. */
typedef struct llm_logit_filter {
  int masked;
  const int32_t *bias_ids;
  const float *bias;
  uint32_t n_bias;
} llm_logit_filter;
wgllm_status llm_session_set_filter(llm_session *s, const llm_logit_filter *f);
/* Logprobs of each sampled token (on: the drawn token's, and the top most likely, at most OP_LOGPROBS_MAX), computed
   on the GPU from the model's logits before the filter and the sampler, read back with the token (lp_last: the
   last token's record, after llm_session_prefill_sample and each llm_session_step_collect). Re-records the steps when
   it changes. */
wgllm_status llm_session_set_logprobs(llm_session *s, int on, uint32_t top);
/* The mask the next sampled step applies: bit (id & 31) of words[id >> 5] set where id may be drawn
   ([ceil(n_vocab / 32)] words; queue-ordered before the next submit). */
void llm_session_write_mask(llm_session *s, const uint32_t *words);
/* Prefills the prompt and samples the first token. */
wgllm_status llm_session_prefill_sample(llm_session *s, const int32_t *ids, uint32_t T, int32_t *token);
/* Feeds the last sampled token and samples the next (queue one step and collect it). */
wgllm_status llm_session_step_sample(llm_session *s, int32_t *token);
/* The positions bucket b serves (< this), and the bucket of a position. */
uint32_t llm_bucket_len(const llm_session *s, uint32_t b);
uint32_t llm_bucket_of(const llm_session *s, uint32_t pos);
/* The recorded step that serves a token at position pos (recording it if needed; NULL on failure, s->err). */
gpu_recorder *llm_session_step(llm_session *s, uint32_t pos);
/* Pipelined decoding: queue a step without waiting (the sampled id feeds the next step on the GPU, so up to
   LLM_MAX_IN_FLIGHT steps can be queued), then collect the oldest's token. A step queued past a stop is
   dropped by llm_session_step_drain, which also restores the input id. */
#define LLM_MAX_IN_FLIGHT 3
wgllm_status llm_session_step_submit(llm_session *s);
wgllm_status llm_session_step_collect(llm_session *s, int32_t *token);
wgllm_status llm_session_step_drain(llm_session *s);
/* Steps queued or a masked session's forward pass ahead (fwd_ahead): what llm_session_step_drain drops. */
static inline int llm_session_queued(const llm_session *s) { return s->in_flight || s->fwd_ahead; }
#endif
