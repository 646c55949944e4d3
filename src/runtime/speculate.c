/* Speculative decoding (speculate.h): the verify step of k drafts as a batched decode of one session in k + 1
   rows, its verdict on the GPU, the session's bookkeeping after it, and prompt lookup. */
#include "speculate.h"
#include "batch.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define ROW_WORDS 64                         /* u32 between rows' positions and ids: 256 bytes, a binding offset */
#define STATE_WORDS (4 + OP_SAMPLE_RING_MAX) /* the sampler's state */
#define SNAP_WORDS 320                       /* a saved state's stride: a binding offset */

/* the parts of sp->io for R rows: the rows' positions from 0, then each length-bucket group's positions (one
   attention pair a group: llm_fwd_paged.one_seq; both written in one queue write a step), then the rows' sampled
   ids, then the saved sampler states, then a zero block table of R rows */
static uint64_t gpos_off(uint32_t R) { return (uint64_t)R * ROW_WORDS * 4; }
static uint64_t out_off(uint32_t R) { return 2ull * R * ROW_WORDS * 4; }
static uint64_t snap_off(uint32_t R) { return 3ull * R * ROW_WORDS * 4; }
static uint64_t table_off(uint32_t R) { return snap_off(R) + (uint64_t)R * SNAP_WORDS * 4; }
static uint64_t io_bytes(uint32_t R) { return table_off(R) + (uint64_t)R * ROW_WORDS * 4; }
static uint64_t partial_row(const llm_session *s) { return (s->step_scratch.attn_partial->size + 255) & ~255ull; }

/* The rows' groups of one length bucket (consecutive rows: their buckets never decrease): first[g], their count. */
static uint32_t bucket_groups(const uint8_t *bucket, uint32_t rows, uint32_t *first) {
  uint32_t ng = 0;
  for (uint32_t i = 0; i < rows; i++)
    if (!i || bucket[i] != bucket[i - 1]) first[ng++] = i;
  first[ng] = rows;
  return ng;
}

int llm_spec_supported(llm_session *s, char *why, size_t whylen) {
  if (!s->has_sampler || s->opt.unfused) { /* unfused: the verify step's rows would not be its steps bit for bit */
    snprintf(why, whylen, "%s",
             s->opt.unfused ? "the unfused comparison path (its steps are not the verify step's rows bit for bit)"
                            : "no sampler is set");
    return 0;
  }
  gpu_recorder *rec = gpu_recorder_create(s->gpu, 0);
  if (!rec) {
    snprintf(why, whylen, "out of host memory");
    return 0;
  }
  int ok = llm_batch_forward_ok(rec, s->m, llm_batch_rows(2), why, whylen);
  gpu_recorder_free(rec);
  return ok;
}

void llm_spec_free(llm_spec *sp) {
  if (!sp) return;
  gpu_prepared_drop(&sp->pre);
  for (uint32_t k = 0; k <= LLM_SPEC_MAX; k++)
    gpu_recorder_free(sp->rec[k]);
  gpu_readback_free(sp->rb);
  gpu_buffer_destroy(sp->s->gpu, sp->io);
  gpu_buffer_destroy(sp->s->gpu, sp->res);
  llm_scratch_release(sp->s->gpu, &sp->sc);
  gpu_buffer_destroy(sp->s->gpu, sp->partial);
  free(sp->hist);
  free(sp);
}

wgllm_status llm_spec_create(llm_session *s, uint32_t k_max, int lookup, llm_session *draft, llm_spec **out,
                             llm_err *err) {
  *out = NULL;
  char why[256];
  if (k_max < 1 || k_max > LLM_SPEC_MAX)
    return llm_err_set(err, WGLLM_ERR_INVALID_ARG, "speculative decoding: %u drafts a step (1 to %u)", k_max,
                       LLM_SPEC_MAX);
  if (!llm_spec_supported(s, why, sizeof why))
    return llm_err_set(err, WGLLM_ERR_UNSUPPORTED, "speculative decoding needs the batched decode pass: %s", why);
  if (draft && (draft->in_flight || draft->batch_queued || draft->opt.pool))
    return llm_err_set(err, WGLLM_ERR_INVALID_ARG, "speculative decoding: the draft session is busy or on a KV pool");
  if (draft) { /* greedy drafts: the draft model's most likely tokens */
    op_sample_params greedy = {.top_p = 1.0f, .rep_penalty = 1.0f};
    wgllm_status st = llm_session_set_sampler(draft, &greedy, NULL, 0);
    if (st) return llm_err_set(err, st, "the draft model's session: %s", draft->err.msg);
  }
  llm_spec *sp = calloc(1, sizeof *sp);
  if (!sp || !(sp->hist = malloc(((size_t)s->opt.ctx + 1) * sizeof *sp->hist))) {
    free(sp);
    return llm_err_set(err, WGLLM_ERR_OUT_OF_MEMORY, "out of host memory");
  }
  sp->s = s;
  sp->k_max = k_max;
  sp->lookup = lookup;
  sp->draft = draft;
  const llm_hparams *hp = &s->m->hp;
  uint32_t R = llm_batch_rows(k_max + 1);
  wgllm_status st = llm_scratch_acquire(s->gpu, hp, R, R, &sp->sc, err);
  if (!st && s->opt.fast) st = llm_scratch_add_fast(s->gpu, hp, &sp->sc, err);
  if (!st) st = gpu_buffer_create(s->gpu, io_bytes(R), "spec_io", &sp->io, err);
  if (!st) st = gpu_buffer_create(s->gpu, R * partial_row(s), "spec_attn_partial", &sp->partial, err);
  if (!st) { /* the block table of the rows' attention: every row the cache's one block */
    uint32_t zero[LLM_SPEC_MAX + 1] = {0};
    gpu_write(s->gpu, sp->io, table_off(R), zero, (uint64_t)R * 4);
  }
  if (!st) st = gpu_buffer_create(s->gpu, (LLM_SPEC_MAX + 2) * 4, "spec_result", &sp->res, err);
  if (!st && !(sp->rb = gpu_readback_create(s->gpu, (LLM_SPEC_MAX + 2) * 4, 2, "spec readback", err)))
    st = err && err->status ? err->status : WGLLM_ERR_OUT_OF_MEMORY;
  if (st) {
    llm_spec_free(sp);
    return st;
  }
  *out = sp;
  return WGLLM_OK;
}

uint32_t llm_spec_room(const llm_spec *sp) {
  const llm_session *s = sp->s;
  uint64_t k = sp->k_max;
  if (s->n_past + 1 >= s->opt.ctx) return 0;
  if (k > s->opt.ctx - 1 - s->n_past) k = s->opt.ctx - 1 - s->n_past; /* rows n_past .. n_past + k */
  if (k > s->kv.ring_slack) k = s->kv.ring_slack;
  return (uint32_t)k;
}

/* Records the verify step of k drafts for rows at s->n_past + i in their length buckets. */
static wgllm_status record(llm_spec *sp, uint32_t k, const uint8_t *bucket) {
  llm_session *s = sp->s;
  const llm_hparams *hp = &s->m->hp;
  if (sp->pre.rec && sp->pre.rec == sp->rec[k]) gpu_prepared_drop(&sp->pre); /* it replays the recording freed */
  gpu_recorder_free(sp->rec[k]);
  sp->rec[k] = NULL;
  uint32_t R = k + 1, R_io = llm_batch_rows(sp->k_max + 1); /* k + 1 rows, none padding: a GEMV's tokens cost */
  llm_fwd_token tk[LLM_SPEC_MAX + 1];
  for (uint32_t i = 0; i <= k; i++) {
    uint32_t len = llm_bucket_len(s, bucket[i]);
    tk[i] = (llm_fwd_token){&s->kv,
                            &s->rope,
                            {sp->io, (uint64_t)i * ROW_WORDS * 4, 4},
                            s->step_scratch.attn_partial,
                            s->step_scratch.attn_args,
                            len >= s->opt.ctx ? 0 : len,
                            s->opt.attn_grid};
  }
  gpu_recorder *rec = gpu_recorder_create(s->gpu, 1);
  if (!rec) return llm_err_set(&sp->err, WGLLM_ERR_OUT_OF_MEMORY, "out of host memory");
  /* attention: the rows of a length bucket in one pair (twice: the first appends every row's K and V, so that each
     row then reads the keys of the rows before it) over the session's own cache; a layer on a pool or in several
     binding groups a row at a time over its cache (llm_fwd_paged.one_seq) */
  llm_fwd_paged pg = {.one_seq = 1, .rope = &s->rope, .rope_max_pos = s->opt.ctx};
  uint32_t first[LLM_SPEC_MAX + 2];
  pg.n_groups = bucket_groups(bucket, k + 1, first);
  for (uint32_t g = 0; g < pg.n_groups; g++) {
    uint32_t n = first[g + 1] - first[g], len = llm_bucket_len(s, bucket[first[g]]);
    pg.groups[g] = (llm_fwd_paged_group){.row0 = first[g],
                                         .n = n,
                                         .ctx = s->opt.ctx,
                                         .max_len = len >= s->opt.ctx ? 0 : len,
                                         .pos = {sp->io, gpos_off(R_io) + (uint64_t)g * ROW_WORDS * 4, n * 4ull},
                                         .table = {sp->io, table_off(R_io), n * 4ull},
                                         .partial = {sp->partial, first[g] * partial_row(s), n * partial_row(s)}};
  }
  wgllm_status st = llm_encode_forward_batch(rec, s->m, tk, k + 1, R, &sp->sc, s->opt.fast, &pg);
  uint64_t row = (uint64_t)hp->n_vocab * 4;
  for (uint32_t i = 0; !st && i <= k; i++) {
    st = op_sample(rec, &s->sampler, (gpu_view){sp->sc.logits, i * row, row}, gpu_whole(s->sampler_state),
                   (gpu_view){sp->io, out_off(R_io) + (uint64_t)i * ROW_WORDS * 4, 4}, gpu_whole(s->sampler_work),
                   hp->n_vocab);
    if (!st)
      st = op_copy_u32(rec, gpu_whole(s->sampler_state),
                       (gpu_view){sp->io, snap_off(R_io) + (uint64_t)i * SNAP_WORDS * 4, STATE_WORDS * 4}, STATE_WORDS);
  }
  if (!st)
    st = op_spec_accept(rec, k, (gpu_view){sp->sc.ids, 0, (k + 1ull) * 4},
                        (gpu_view){sp->io, out_off(R_io), (uint64_t)(k + 1) * ROW_WORDS * 4}, ROW_WORDS,
                        (gpu_view){sp->io, snap_off(R_io), (uint64_t)(k + 1) * SNAP_WORDS * 4}, STATE_WORDS, SNAP_WORDS,
                        (gpu_view){sp->res, 0, (k + 2ull) * 4}, gpu_whole(s->sampler_state),
                        (gpu_view){s->step_scratch.ids, 0, 4});
  if (st) {
    llm_err_set(&sp->err, st, "recording the verify step of %u drafts: %s", k, gpu_recorder_error(rec));
    gpu_recorder_free(rec);
    return st;
  }
  sp->rec[k] = rec;
  sp->rec_gen[k] = s->step_gen;
  memcpy(sp->rec_bucket[k], bucket, k + 1);
  return WGLLM_OK;
}

/* While the step of k drafts runs: the next step encoded ahead, for next_k drafts (k when not set) at the buckets
   its rows have where this step accepts all (its recording as it is: none is made here, since a recording freed
   now might be the one running). */
static void prepare_next(llm_spec *sp, uint32_t k) {
  llm_session *s = sp->s;
  uint32_t nk = sp->next_k ? sp->next_k : k, n = s->n_past + k + 1;
  if (nk > sp->k_max || n + nk + 1 > s->opt.ctx || !sp->rec[nk] || sp->rec_gen[nk] != s->step_gen) return;
  for (uint32_t i = 0; i <= nk; i++)
    if (sp->rec_bucket[nk][i] != llm_bucket_of(s, n + i)) return;
  uint32_t R_res = nk + 2;
  if (gpu_recorder_prepare_readback(sp->rec[nk], sp->rb, (gpu_view){sp->res, 0, R_res * 4ull}, &sp->pre)) return;
  sp->pre_k = nk;
  memcpy(sp->pre_bucket, sp->rec_bucket[nk], nk + 1);
  sp->prepared++;
}

wgllm_status llm_spec_verify(llm_spec *sp, const int32_t *drafts, uint32_t k, int32_t *out, uint32_t *n_out) {
  llm_session *s = sp->s;
  const llm_hparams *hp = &s->m->hp;
  llm_err_clear(&sp->err);
  *n_out = 0;
  if (k < 1 || k > llm_spec_room(sp))
    return llm_err_set(&sp->err, WGLLM_ERR_INVALID_ARG, "verify: %u drafts (room for %u)", k, llm_spec_room(sp));
  if (!s->has_sampler || llm_session_queued(s) || s->batch_queued || s->evicted)
    return llm_err_set(&sp->err, WGLLM_ERR_INVALID_ARG,
                       "verify: the session has no sampler, steps queued or no cache (evicted)");
  for (uint32_t i = 0; i < k; i++)
    if (drafts[i] < 0 || (uint32_t)drafts[i] >= hp->n_vocab)
      return llm_err_set(&sp->err, WGLLM_ERR_INVALID_ARG, "verify: draft %u is id %d, outside the vocabulary of %u", i,
                         drafts[i], hp->n_vocab);
  uint32_t n = s->n_past;
  wgllm_status st = llm_session_reserve(s, n + k + 1);
  if (st) return llm_err_set(&sp->err, st, "%s", s->err.msg);
  uint8_t bucket[LLM_SPEC_MAX + 1];
  for (uint32_t i = 0; i <= k; i++)
    bucket[i] = (uint8_t)llm_bucket_of(s, n + i);
  if (!sp->rec[k] || sp->rec_gen[k] != s->step_gen || memcmp(sp->rec_bucket[k], bucket, k + 1)) {
    st = record(sp, k, bucket);
    if (st) return st;
  }
  int use_pre = sp->pre.rec == sp->rec[k] && sp->pre_k == k && !memcmp(sp->pre_bucket, bucket, k + 1);
  if (!use_pre) gpu_prepared_drop(&sp->pre);
  uint32_t ids[LLM_SPEC_MAX + 1] = {0};
  ids[0] = (uint32_t)s->last_sampled;
  for (uint32_t i = 0; i < k; i++)
    ids[1 + i] = (uint32_t)drafts[i];
  gpu_write(s->gpu, sp->sc.ids, 0, ids, (k + 1ull) * 4);
  /* each row's position (a binding of its own), then each length-bucket group's (contiguous): one write */
  uint32_t R_io = llm_batch_rows(sp->k_max + 1), first[LLM_SPEC_MAX + 2], ng = bucket_groups(bucket, k + 1, first);
  uint32_t pos[2 * (LLM_SPEC_MAX + 1) * ROW_WORDS] = {0}; /* R_io <= LLM_SPEC_MAX + 1 rows */
  for (uint32_t i = 0; i <= k; i++)
    pos[i * ROW_WORDS] = n + i;
  for (uint32_t g = 0; g < ng; g++)
    for (uint32_t i = first[g]; i < first[g + 1]; i++)
      pos[R_io * ROW_WORDS + g * ROW_WORDS + i - first[g]] = n + i;
  gpu_write(s->gpu, sp->io, 0, pos, gpos_off(R_io) + (uint64_t)ng * ROW_WORDS * 4);
  int slot;
  if (use_pre) {
    st = gpu_prepared_submit(&sp->pre, &slot);
    sp->pre_used++;
  } else
    st = gpu_recorder_run_readback(sp->rec[k], sp->rb, (gpu_view){sp->res, 0, (k + 2ull) * 4}, &slot);
  if (!st) prepare_next(sp, k);
  uint32_t res[LLM_SPEC_MAX + 2] = {0};
  if (!st)
    st = gpu_readback_wait(sp->rb, slot, res, &sp->err);
  else
    llm_err_set(&sp->err, st, "verify step: %s", gpu_recorder_error(sp->rec[k]));
  uint32_t a = res[0];
  if (!st && a > k) st = llm_err_set(&sp->err, WGLLM_ERR_INTERNAL, "verify: %u drafts accepted of %u", a, k);
  for (uint32_t i = 0; !st && i <= a; i++)
    if (res[1 + i] >= hp->n_vocab)
      st = llm_err_set(&sp->err, WGLLM_ERR_INTERNAL, "sampler returned token %u outside the vocabulary of %u",
                       res[1 + i], hp->n_vocab);
  if (st) {
    llm_session_step_drain(s); /* the reservations back, the step's input id rewritten */
    return st;
  }
  /* rows 0..a fed the last token and the accepted drafts; rows past them wrote keys a later step rewrites */
  if (n + k + 1 > s->kv_hi) s->kv_hi = n + k + 1;
  llm_session_fed_decoded(s, s->last_sampled);
  for (uint32_t i = 0; i < a; i++)
    llm_session_fed_decoded(s, drafts[i]);
  for (uint32_t i = 0; i <= a; i++)
    out[i] = (int32_t)res[1 + i];
  s->last_sampled = out[a];
  llm_session_step_drain(s); /* the reservations past n_past back (the id: op_spec_accept wrote the same) */
  *n_out = a + 1;
  sp->steps++;
  sp->drafted += k;
  sp->accepted += a;
  return WGLLM_OK;
}

uint32_t llm_spec_rows_drafts(uint32_t n) {
  uint32_t rows = 2;
  while (rows * 2 <= n + 1)
    rows *= 2;
  return n ? rows - 1 : 0;
}

uint32_t llm_spec_lookup(const int32_t *hist, uint32_t n, uint32_t k, int32_t *drafts) {
  for (uint32_t g = LLM_SPEC_NGRAM; g >= 1; g--) {
    if (n < g + 1) continue;
    const int32_t *tail = hist + n - g;
    for (uint32_t j = n - g; j-- > 0;) { /* the latest earlier occurrence first */
      if (memcmp(hist + j, tail, g * sizeof *hist)) continue;
      uint32_t c = 0;
      for (; c < k && j + g + c < n; c++)
        drafts[c] = hist[j + g + c];
      if (c) return c;
    }
  }
  return 0;
}

/* The draft session brought to s's text: the common prefix of their caches kept (all of it, after a verify step
   that rejected a draft: the draft fed the accepted ones), s's other fed tokens prefilled, s's last sampled token
   its next step's input. A ring rewound past its slack keeps nothing (llm_session_rewind): all is prefilled. */
static wgllm_status draft_sync(llm_spec *sp) {
  llm_session *d = sp->draft, *s = sp->s;
  if (d->in_flight) llm_session_step_drain(d);
  uint32_t c = llm_session_common_prefix(d, s->fed, s->n_past);
  if (c < d->n_past) c = llm_session_rewind(d, c);
  wgllm_status st = c < s->n_past ? llm_session_prefill(d, s->fed + c, s->n_past - c, NULL, 0) : WGLLM_OK;
  if (st) return llm_err_set(&sp->err, st, "the draft model's prefill: %s", d->err.msg);
  d->last_sampled = s->last_sampled;
  llm_session_step_drain(d); /* writes it into the step's input */
  return WGLLM_OK;
}

uint32_t llm_spec_draft(llm_spec *sp, uint32_t k, int32_t *drafts) {
  llm_session *d = sp->draft;
  llm_err_clear(&sp->err);
  if (!d || !k) return 0;
  wgllm_status st = draft_sync(sp);
  if (st) return 0;
  if (d->n_past + 1 >= d->opt.ctx) return 0;
  if (k > d->opt.ctx - 1 - d->n_past) k = d->opt.ctx - 1 - d->n_past; /* the draft's context may be shorter */
  uint32_t n = 0, queued = 0, nv = sp->s->m->hp.n_vocab;
  while (!st && n < k) { /* up to LLM_MAX_IN_FLIGHT steps queued: the GPU feeds each its input */
    while (!st && queued < k && d->in_flight < LLM_MAX_IN_FLIGHT) {
      st = llm_session_step_submit(d);
      queued++;
    }
    int32_t t = -1;
    if (!st) st = llm_session_step_collect(d, &t);
    if (st || t < 0 || (uint32_t)t >= nv) break; /* an id s does not have ends the drafts */
    drafts[n++] = t;
  }
  if (d->in_flight) llm_session_step_drain(d);
  if (st) {
    llm_err_set(&sp->err, st, "the draft model's step: %s", d->err.msg);
    return 0;
  }
  return n;
}

uint32_t llm_spec_propose(llm_spec *sp, uint32_t k, int32_t *drafts) {
  const llm_session *s = sp->s;
  llm_err_clear(&sp->err);
  uint32_t n = 0;
  if (sp->lookup) {
    memcpy(sp->hist, s->fed, (size_t)s->n_past * sizeof *sp->hist);
    sp->hist[s->n_past] = s->last_sampled;
    n = llm_spec_lookup(sp->hist, s->n_past + 1, k, drafts);
  }
  if (!n && sp->draft) n = llm_spec_draft(sp, llm_spec_rows_drafts(k), drafts);
  return n;
}
