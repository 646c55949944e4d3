/* Speculative decoding (issue 29): drafts proposed cheaply and checked in one forward pass of the model.
   The verify step of k drafts is a batched decode of one session in k + 1 rows (decoder.h's
   llm_encode_forward_batch): row 0 feeds the session's last sampled token at n_past, row i the draft d_i at
   n_past + i, each row's token attending over the cache the rows before it appended (one flash-decoding pair a
   length bucket for the rows, run twice so that the first appends every row's K and V: llm_fwd_paged.one_seq; each
   row sums as a single step does, so in the exact precision each row's logits are bit for bit the step's that
   would feed the same tokens one after another). Each row's sampler then draws with the session's sampler state as the
   rows before it left it (kernels/copy_u32.wgsl saves it after each row), and op_spec_accept finds on the GPU how many
   drafts those draws confirm (a: draft i + 1 equals what row i drew), puts back the state row a left, and feeds
   row a's token to the next step. The output is the a + 1 tokens rows 0..a drew: the tokens plain decoding draws
   with the same sampler and seed, for every sampler setting (a draft is a proposal of probability one, so
   accepting it when the row's own draw equals it is the rejection rule's min(1, p/q) = p, and a rejected row's
   draw is a draw from p without the draft: the rule's residual). The cache keeps rows 0..a (positions past them are
   rewritten later; a ring needs k slots of slack past its window: llm_kv_cache.ring_slack); the CPU reads back
   the count and the tokens only. A recording a draft count (for the rows' length buckets), kept; while a step runs
   the next one is encoded ahead (the CPU's encoding of a step's few hundred dispatches then overlaps the GPU's
   work, as plain decoding's two steps in flight overlap it).
   Proposers: prompt lookup (llm_spec_lookup), the continuation of the latest earlier occurrence of the text's last
   n-gram (3, 2, then 1 tokens), in the prompt and the generated text; and a draft model (llm_spec_draft): a session
   of a smaller model of the same vocabulary, brought to the text (the common prefix of the two caches kept, the rest
   prefilled) and stepped greedily k times, its steps queued as plain decoding queues them. Greedy drafts are
   proposals of probability one, so the rule above holds for them too. With both, lookup proposes first and the
   draft model where lookup finds nothing. */
#ifndef WGLLM_SPECULATE_H
#define WGLLM_SPECULATE_H
#include "session.h"

#define LLM_SPEC_MAX 15  /* drafts a verify step takes at most (16 rows; wgllm.h's WGLLM_SPEC_MAX) */
#define LLM_SPEC_NGRAM 3 /* the longest n-gram prompt lookup matches */

typedef struct llm_spec {
  llm_session *s;
  uint32_t k_max;
  llm_scratch sc;      /* k_max + 1 rows of activations (padded to llm_batch_rows) and their logits */
  gpu_buffer *io;      /* [rows][64] u32 positions | [rows][64] sampled ids | [rows][320] sampler states | [groups][64]
                          the length-bucket groups' positions | [rows] zero block table */
  gpu_buffer *partial; /* [rows] flash-decoding partials (256-byte aligned rows): the rows' attention at once */
  gpu_buffer *res;     /* [k_max + 2] u32: the verdict (the count, then the rows' tokens) */
  gpu_readback *rb;    /* of res, two slots: a step's and the next one's prepared ahead */
  /* the next verify step encoded while this one runs (gpu_prepared): for next_k drafts (the caller's guess, 0: the
     same as this step's) at the rows' buckets after this step accepts all; used when the next step matches, else
     dropped and encoded then */
  gpu_prepared pre;
  uint32_t pre_k, next_k;
  uint8_t pre_bucket[LLM_SPEC_MAX + 1];
  uint64_t prepared, pre_used;                            /* steps prepared ahead, of them submitted */
  gpu_recorder *rec[LLM_SPEC_MAX + 1];                    /* the verify step of k drafts */
  uint32_t rec_gen[LLM_SPEC_MAX + 1];                     /* the session's step_gen when recorded */
  uint8_t rec_bucket[LLM_SPEC_MAX + 1][LLM_SPEC_MAX + 1]; /* and each row's length bucket */
  int32_t *hist;                                          /* [ctx + 1] the text so far, for lookup */
  int lookup;                                             /* prompt lookup proposes */
  llm_session *draft; /* the draft model's session (the caller's, greedy sampler set by create), or NULL */
  uint64_t steps, drafted, accepted; /* verify steps, drafts they took, drafts accepted */
  llm_err err;
} llm_spec;

/* Whether s can verify drafts: the model's batched pass records on this device, a sampler is set, the session
   does not decode on the unfused comparison path (opt.unfused: its steps, RoPE and the cache append dispatches of
   their own, are not the verify step's rows bit for bit). why: the reason when not. */
int llm_spec_supported(llm_session *s, char *why, size_t whylen);
/* A verifier of up to k_max (1..LLM_SPEC_MAX) drafts a step for s (which outlives it), proposing with prompt lookup
   (lookup non-zero) and/or the draft model's session draft (NULL: none; it outlives the verifier and is used by
   nothing else meanwhile: its cache follows s's text, its sampler is set greedy here). */
wgllm_status llm_spec_create(llm_session *s, uint32_t k_max, int lookup, llm_session *draft, llm_spec **out,
                             llm_err *err);
void llm_spec_free(llm_spec *sp); /* NULL is a no-op */
/* The most drafts a step of s can take now: k_max, within the context (rows up to n_past + k) and a ring's slack. */
uint32_t llm_spec_room(const llm_spec *sp);
/* One verify step of drafts[0..k) (1 <= k <= llm_spec_room, each in the vocabulary) after s's last sampled token:
   out[0..*n_out) the tokens it gives (the accepted drafts then the next token: 1..k + 1 of them, out has room for
   k + 1); the session advances past the accepted drafts (n_past by *n_out, last_sampled the last of out, its
   step's input id written on the GPU), its reservations past them given back. Nothing queued on s. On a KV pool
   without room for the k + 1 rows: WGLLM_ERR_KV_FULL with nothing run (the generation takes a plain step). */
wgllm_status llm_spec_verify(llm_spec *sp, const int32_t *drafts, uint32_t k, int32_t *out, uint32_t *n_out);
/* The drafts a step takes of n proposed: 1, 3, 7 or 15 (2, 4, 8 or 16 rows, the batched decode's row counts), the
   most not above n, so that a generation compiles at most four sets of verify pipelines. */
uint32_t llm_spec_rows_drafts(uint32_t n);
/* Prompt lookup over hist[0..n): the tokens after the latest earlier occurrence of its last LLM_SPEC_NGRAM (then
   fewer, down to 1) tokens, at most k of them into drafts; returns how many (0: no match). */
uint32_t llm_spec_lookup(const int32_t *hist, uint32_t n, uint32_t k, int32_t *drafts);
/* The draft model's k greedy tokens after s's text (its fed tokens and its last sampled one) into drafts; returns
   how many (fewer than k where the draft model gives an id outside s's vocabulary: the drafts end before it). A
   failure (0 returned) is in sp->err. */
uint32_t llm_spec_draft(llm_spec *sp, uint32_t k, int32_t *drafts);
/* The proposal for s's text, at most k drafts: the lookup's where it finds some, else the draft model's (k rounded
   down to a verify step's count first: llm_spec_rows_drafts). 0: none, or a failure (sp->err.status set). */
uint32_t llm_spec_propose(llm_spec *sp, uint32_t k, int32_t *drafts);
#endif
