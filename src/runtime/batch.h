/* Batched decode across sessions: one recorded step feeds the last sampled token of each of up to
   LLM_BATCH_MAX sessions of one model through one forward pass (each weight read once for the step: the fused
   GEMV for up to 8 rows, the small-M GEMM past them in the fast precision; float weights the tiled GEMM), each token
   attending over its own session's cache, then each session's sampler picks its next token; one readback brings every
   id back. A step can be queued behind the one in flight (llm_batch_submit twice, then llm_batch_collect): its first
   dispatch takes each row's id from the CPU or from the ids the step before sampled (op_step_ids), so the GPU never
   waits for the CPU between steps. Sessions on one KV pool (kv_pool.h) attend in one dispatch pair a layer for all of
   them, over the step's block table (row i: the i-th session's blocks, written before each step where they changed). A
   server's concurrent requests decode this way instead of one session after another. The rows are the sessions sorted
   by length bucket (each bucket's tokens one attention pair, with the chunk length a step alone gives them: the text is
   bit for bit each session's alone). The recording is kept while the same sessions (with the same length buckets and
   samplers) step together, and recorded again when they change. */
#ifndef WGLLM_BATCH_H
#define WGLLM_BATCH_H
#include "llm_err.h"
#include "session.h"

#define LLM_BATCH_MAX 64

typedef struct llm_batch_member {
  llm_session *s;
  uint32_t gen;    /* its step_gen when recorded (a new sampler re-records) */
  uint32_t bucket; /* its length bucket when recorded */
} llm_batch_member;

/* A step submitted and not yet collected: its sessions in the caller's order, and their rows. */
typedef struct llm_batch_flight {
  llm_session *ss[LLM_BATCH_MAX]; /* the caller's order */
  uint32_t row[LLM_BATCH_MAX];    /* ss[i]'s row (the rows are sorted by length bucket) */
  uint32_t n;
  uint8_t dropped[LLM_BATCH_MAX]; /* ss[i]'s token is dropped: an earlier step dropped the one this one fed */
  int slot;                       /* its readback slot */
} llm_batch_flight;

#define LLM_BATCH_IN_FLIGHT 2

typedef struct llm_batch {
  llm_model *m;
  gpu_context *gpu;
  llm_scratch sc;  /* activations of LLM_BATCH_MAX tokens; sc.ids [n] written each step */
  gpu_buffer *pos; /* [LLM_BATCH_MAX][64] u32: token i's position at i * 64 (a binding offset) */
  /* sessions on one pool: the step's rows sorted by length bucket, a group of rows a bucket, each group's
     positions, table rows and flash-decoding scratch at binding offsets; made for that pool on first use */
  llm_kv_pool *pool;
  gpu_buffer *pos_packed;   /* [LLM_MAX_BUCKETS][64] u32: group k's positions at k * 64 */
  gpu_buffer *table;        /* [LLM_BATCH_MAX][row_words] u32 */
  gpu_buffer *attn_partial; /* each group's n x partial_seq bytes, at binding offsets */
  uint32_t row_words;       /* the pool's blocks a sequence, rounded up to 64 words */
  uint64_t partial_seq;     /* one sequence's flash-decoding partials at the pool's longest context */
  uint32_t n_groups, group_row0[LLM_MAX_BUCKETS + 1]; /* the recorded step's groups: rows [row0[k], row0[k + 1]) */
  const llm_session *row_s[LLM_BATCH_MAX];            /* what table row i holds: that session's blocks at its seq_gen */
  uint32_t row_gen[LLM_BATCH_MAX];
  gpu_buffer *out;  /* [LLM_BATCH_MAX][64] u32: token i's sampled id at i * 64 */
  gpu_buffer *src;  /* [LLM_BATCH_MAX] u32: where row i's input id comes from (op_step_ids), written each step */
  gpu_readback *rb; /* of out, a slot a step in flight */
  llm_batch_flight flight[LLM_BATCH_IN_FLIGHT]; /* the steps submitted and not collected, oldest first */
  uint32_t n_flight;
  gpu_recorder *rec; /* the step for members[0..n_members) */
  llm_batch_member members[LLM_BATCH_MAX];
  uint32_t n_members;
  uint32_t recordings;  /* how many times a step was recorded */
  unsigned unsupported; /* bit r: batches of 2 << r rows cannot be recorded here (why says why); a failed
                           recording sets its row count's bit, and those batches step one session after another */
  char why[1024];
  llm_err err; /* the last failure: status and message */
} llm_batch;

/* The rows a batch of n sessions runs in: 2, 4, 8, 16, 32 or 64 (the rows past n pad the projections, so six token
   counts, six sets of pipelines, serve every batch: on lavapipe a pipeline takes seconds to compile) */
uint32_t llm_batch_rows(uint32_t n);
wgllm_status llm_batch_create(llm_model *m, llm_batch **out, llm_err *err);
void llm_batch_free(llm_batch *b); /* NULL is a no-op */
/* Drops the recording if it uses s, after collecting the steps in flight (dropping s's tokens; call before freeing
   s). */
void llm_batch_forget(llm_batch *b, const llm_session *s);
/* Whether ss[0..n) can step together now: 2..LLM_BATCH_MAX sessions of the batch's model, each with a sampler set,
   no step of its own queued, no batched step in flight but the newest (whose sessions may step again: their ids
   come from it on the GPU) and room for one more token; fewer than LLM_BATCH_IN_FLIGHT steps in flight; and a
   row count whose recording has not failed. */
int llm_batch_accepts(llm_batch *b, llm_session *const *ss, uint32_t n);
/* Whether batches of n sessions (n >= 2; more than LLM_BATCH_MAX: LLM_BATCH_MAX of them) are known not to work on
   this model or device (their recording failed once), so such sessions step one after another. */
int llm_batch_refuses(const llm_batch *b, uint32_t n);
/* Queues one step for every session of ss[0..n): it feeds the session's last sampled token, or, for a session of
   the step in flight, the token that step samples, read on the GPU (op_step_ids), so the GPU runs this step while
   the CPU collects that one (two steps in flight); each session's sampler then picks its next token. A queued step
   counts in s->batch_queued: the session's n_past and last_sampled advance when it is collected. A step that cannot
   be recorded (a shape the batched pass does not take, a pipeline that does not build, memory) is
   WGLLM_ERR_UNSUPPORTED with its row count's bit of b->unsupported set: nothing ran, and the caller steps the
   sessions one after another. Sessions on a pool reserve their next slot first: WGLLM_ERR_KV_FULL when the pool
   has no block for one of them (nothing ran; the caller frees blocks, or steps fewer). */
wgllm_status llm_batch_submit(llm_batch *b, llm_session *const *ss, uint32_t n);
/* Waits for the oldest step in flight: tokens[i] (may be NULL) is the token of its submit's ss[i], and each
   session advances as llm_session_step_collect does, except where keep (may be NULL) has keep[i] == 0: that
   token is dropped, the session does not advance and its reservation goes back (a generation that ended while the
   step ran); a later step in flight of a dropped session is dropped too. A failure drops every step in flight. */
wgllm_status llm_batch_collect(llm_batch *b, int32_t *tokens, const int *keep);
/* Collects every step in flight, keeping every token except those of `drop` (may be NULL). */
void llm_batch_drain(llm_batch *b, const llm_session *drop);
/* Whether s has a row in a step in flight. */
int llm_batch_has(const llm_batch *b, const llm_session *s);
/* llm_batch_submit, then llm_batch_collect of that step (nothing else in flight). */
wgllm_status llm_batch_step(llm_batch *b, llm_session *const *ss, uint32_t n, int32_t *tokens);
/* Batched prefill (prefill_batch.c): the next ids[i][0..counts[i]) of each of ss[0..n) (n <= LLM_BATCH_MAX
   sessions of one model and precision, none evicted, each at most its context) in one forward pass, the rows of all
   of them one GEMM (decoder.h's llm_encode_prefill_batch): a server's new prompts prefilled together instead of one
   after another. Where sample[i], the chunk ends that session's prompt: its sampler (set) picks the first token into
   tokens[i] and its step's input, as llm_session_prefill_sample does. Each session's K and V are the bits a prefill
   of its own gives them (in the exact precision). Sessions on a pool reserve their rows' blocks first:
   WGLLM_ERR_KV_FULL, nothing run, when the pool cannot hold them; a model the pass does not take is
   WGLLM_ERR_UNSUPPORTED (prefill them one by one). err: the reason. */
wgllm_status llm_prefill_batch(llm_session *const *ss, const int32_t *const *ids, const uint32_t *counts, uint32_t n,
                               const int *sample, int32_t *tokens, llm_err *err);
#endif
