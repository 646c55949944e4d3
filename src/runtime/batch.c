/* Batched decode across sessions (see batch.h): the recording of one step for a set of sessions, its inputs
   (ids and positions written each step: the CPU knows them, having read the last ids back), and the sessions'
   bookkeeping afterwards. */
#include "batch.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define SLOT_WORDS 64 /* u32 words between tokens in pos / out: 256 bytes, a binding offset on every device */

uint32_t llm_batch_rows(uint32_t n) {
  uint32_t t = 2;
  while (t < n)
    t *= 2;
  return t;
}

wgllm_status llm_batch_create(llm_model *m, llm_batch **out, llm_err *err) {
  *out = NULL;
  llm_batch *b = calloc(1, sizeof *b);
  if (!b) {
    return llm_err_set(err, WGLLM_ERR_OUT_OF_MEMORY, "out of host memory");
  }
  b->m = m;
  b->gpu = m->gpu;
  uint64_t slots = (uint64_t)LLM_BATCH_MAX * SLOT_WORDS * 4;
  wgllm_status st = llm_scratch_acquire(b->gpu, &m->hp, LLM_BATCH_MAX, LLM_BATCH_MAX, &b->sc, err);
  if (!st) st = gpu_buffer_create(b->gpu, slots, "batch_pos", &b->pos, err);
  if (!st) st = gpu_buffer_create(b->gpu, slots, "batch_out", &b->out, err);
  if (!st) st = gpu_buffer_create(b->gpu, LLM_BATCH_MAX * 4, "batch_src", &b->src, err);
  if (!st && !(b->rb = gpu_readback_create(b->gpu, (uint32_t)slots, 2, "batch readback", err)))
    st = err && err->status ? err->status : WGLLM_ERR_OUT_OF_MEMORY;
  if (st) {
    llm_batch_free(b);
    return st;
  }
  *out = b;
  return WGLLM_OK;
}

void llm_batch_free(llm_batch *b) {
  if (!b) return;
  llm_batch_drain(b, NULL);
  gpu_recorder_free(b->rec);
  gpu_readback_free(b->rb);
  gpu_buffer_destroy(b->gpu, b->pos);
  gpu_buffer_destroy(b->gpu, b->pos_packed);
  gpu_buffer_destroy(b->gpu, b->table);
  gpu_buffer_destroy(b->gpu, b->attn_partial);
  gpu_buffer_destroy(b->gpu, b->out);
  gpu_buffer_destroy(b->gpu, b->src);
  llm_scratch_release(b->gpu, &b->sc);
  free(b);
}

static void drop_recording(llm_batch *b) {
  gpu_recorder_free(b->rec);
  b->rec = NULL;
  b->n_members = 0;
}

int llm_batch_has(const llm_batch *b, const llm_session *s) {
  for (uint32_t k = 0; b && k < b->n_flight; k++)
    for (uint32_t i = 0; i < b->flight[k].n; i++)
      if (b->flight[k].ss[i] == s) return 1;
  return 0;
}

void llm_batch_forget(llm_batch *b, const llm_session *s) {
  if (!b) return;
  if (llm_batch_has(b, s)) llm_batch_drain(b, s);
  for (uint32_t i = 0; i < LLM_BATCH_MAX; i++) /* a later session at the same address is another */
    if (b->row_s[i] == s) b->row_s[i] = NULL;
  for (uint32_t i = 0; i < b->n_members; i++)
    if (b->members[i].s == s) {
      drop_recording(b);
      return;
    }
}

/* the bit of b->unsupported for batches of n sessions */
static unsigned rows_bit(uint32_t n) {
  unsigned r = 0;
  while ((2u << r) < llm_batch_rows(n))
    r++;
  return 1u << r;
}

int llm_batch_refuses(const llm_batch *b, uint32_t n) {
  if (n > LLM_BATCH_MAX) n = LLM_BATCH_MAX;
  return n >= 2 && (b->unsupported & rows_bit(n));
}

/* The row of s in the newest step in flight, or -1. */
static int newest_row(const llm_batch *b, const llm_session *s) {
  if (!b->n_flight) return -1;
  const llm_batch_flight *f = &b->flight[b->n_flight - 1];
  for (uint32_t i = 0; i < f->n; i++)
    if (f->ss[i] == s) return f->dropped[i] ? -1 : (int)f->row[i];
  return -1;
}

int llm_batch_accepts(llm_batch *b, llm_session *const *ss, uint32_t n) {
  if (n < 2 || n > LLM_BATCH_MAX || (b->unsupported & rows_bit(n)) || b->n_flight >= LLM_BATCH_IN_FLIGHT) return 0;
  for (uint32_t i = 0; i < n; i++) {
    const llm_session *s = ss[i];
    if (!s || s->m != b->m || !s->has_sampler || llm_session_queued(s) || s->opt.unfused || s->evicted ||
        s->n_past + (uint32_t)s->batch_queued + 1 >= s->opt.ctx)
      return 0;
    if (s->batch_queued && (s->batch_queued > 1 || newest_row(b, s) < 0)) return 0;
    if (s->opt.fast != ss[0]->opt.fast) return 0; /* one precision a batch */
    for (uint32_t j = 0; j < i; j++)
      if (ss[j] == s) return 0;
  }
  return 1;
}

/* Whether ss[0..n) are all on one pool (their pooled layers then attend in one pair for all). */
static llm_kv_pool *one_pool(llm_session *const *ss, uint32_t n) {
  for (uint32_t i = 1; i < n; i++)
    if (ss[i]->opt.pool != ss[0]->opt.pool) return NULL;
  return ss[0]->opt.pool;
}

#define ROW_WORDS 64 /* u32: table rows and groups' positions start on 256-byte binding offsets */

/* The step's positions, table and flash-decoding scratch for pool p (made once; a model has one pool). */
static wgllm_status paged_buffers(llm_batch *b, llm_kv_pool *p) {
  if (b->pool == p) return WGLLM_OK;
  if (b->pool)
    return llm_err_set(&b->err, WGLLM_ERR_UNSUPPORTED, "batched decode: sessions of two KV pools of one model");
  const llm_hparams *hp = &b->m->hp;
  uint64_t partial = 0;
  for (uint32_t l = 0; l < hp->n_layer; l++) {
    if (!p->g.pooled[l]) continue;
    op_kv_layout lay = {.n_kv_head = llm_layer_n_head_kv(hp, l),
                        .head_dim = llm_layer_head_dim(hp, l),
                        .ctx = p->g.max_ctx,
                        .f16 = p->g.f16};
    uint64_t one = op_attn_partial_bytes(&lay, hp->n_head, 0);
    if (one > partial) partial = one;
  }
  uint32_t words = (p->g.max_blocks + ROW_WORDS - 1) / ROW_WORDS * ROW_WORDS;
  uint64_t partial_all = LLM_BATCH_MAX * partial + LLM_MAX_BUCKETS * 256ull;
  wgllm_status st =
      gpu_buffer_create(b->gpu, (uint64_t)LLM_BATCH_MAX * words * 4, "batch_block_table", &b->table, &b->err);
  if (!st) st = gpu_buffer_create(b->gpu, partial_all, "batch_attn_partial", &b->attn_partial, &b->err);
  if (!st) st = gpu_buffer_create(b->gpu, LLM_MAX_BUCKETS * ROW_WORDS * 4, "batch_pos_packed", &b->pos_packed, &b->err);
  if (st) {
    gpu_buffer_destroy(b->gpu, b->table);
    gpu_buffer_destroy(b->gpu, b->attn_partial);
    b->table = b->attn_partial = NULL;
    return st;
  }
  b->pool = p;
  b->row_words = words;
  b->partial_seq = partial;
  memset((void *)b->row_s, 0, sizeof b->row_s);
  return WGLLM_OK;
}

/* The paged step's groups for ss[0..n) (sorted by length bucket): a group per run of one bucket length. */
static void paged_groups(llm_batch *b, llm_session *const *ss, uint32_t n, const llm_batch_member *now,
                         llm_fwd_paged *pg) {
  llm_kv_pool *pool = b->pool;
  uint32_t widest = 0;
  for (uint32_t i = 0; i < n; i++)
    if (ss[i]->opt.ctx > ss[widest]->opt.ctx) widest = i;
  *pg = (llm_fwd_paged){.max_blocks = b->row_words,
                        .block = pool->g.block,
                        .n_blocks = pool->g.n_blocks,
                        .rope = &ss[widest]->rope,
                        .rope_max_pos = ss[widest]->opt.ctx};
  uint64_t part_off = 0;
  b->n_groups = 0;
  for (uint32_t i = 0; i < n;) {
    uint32_t len = llm_bucket_len(ss[i], now[i].bucket), j = i, ctx = 0;
    while (j < n && llm_bucket_len(ss[j], now[j].bucket) == len) {
      if (ss[j]->opt.ctx > ctx) ctx = ss[j]->opt.ctx;
      j++;
    }
    /* the bucket as a step alone records it: len, or the whole context where len is the session's context */
    uint32_t k = pg->n_groups++;
    uint64_t part = (j - i) * b->partial_seq;
    pg->groups[k] =
        (llm_fwd_paged_group){.row0 = i,
                              .n = j - i,
                              .ctx = ctx,
                              .max_len = len >= ctx ? 0 : len,
                              .pos = {b->pos_packed, (uint64_t)k * ROW_WORDS * 4, (uint64_t)(j - i) * 4},
                              .table = {b->table, (uint64_t)i * b->row_words * 4, (uint64_t)(j - i) * b->row_words * 4},
                              .partial = {b->attn_partial, part_off, part}};
    part_off += (part + 255) / 256 * 256;
    b->group_row0[k] = i;
    i = j;
  }
  b->n_groups = pg->n_groups;
  b->group_row0[b->n_groups] = n;
}

/* Records the step for ss[0..n) as members: the batched forward, then each session's sampler on its row. */
static wgllm_status record(llm_batch *b, llm_session *const *ss, uint32_t n, const llm_batch_member *now) {
  drop_recording(b);
  const llm_hparams *hp = &b->m->hp;
  llm_fwd_token tk[LLM_BATCH_MAX];
  wgllm_status st = WGLLM_OK;
  if (ss[0]->opt.fast) st = llm_scratch_add_fast(b->gpu, hp, &b->sc, &b->err);
  if (ss[0]->opt.fast && !st) llm_scratch_add_small_gemm(b->gpu, hp, &b->sc);
  llm_kv_pool *pool = st ? NULL : one_pool(ss, n);
  llm_fwd_paged paged;
  if (pool) st = paged_buffers(b, pool);
  if (pool && !st) paged_groups(b, ss, n, now, &paged);
  if (st) snprintf(b->why, sizeof b->why, "%s", b->err.msg);
  for (uint32_t i = 0; !st && i < n; i++) {
    llm_session *s = ss[i];
    st = llm_scratch_add_decode(b->gpu, hp, &s->kv, &s->step_scratch, &b->err);
    if (st) snprintf(b->why, sizeof b->why, "%s", b->err.msg);
    uint32_t len = llm_bucket_len(s, now[i].bucket);
    tk[i] = (llm_fwd_token){&s->kv,
                            &s->rope,
                            {b->pos, (uint64_t)i * SLOT_WORDS * 4, 4},
                            s->step_scratch.attn_partial,
                            s->step_scratch.attn_args,
                            len >= s->opt.ctx ? 0 : len,
                            s->opt.attn_grid};
  }
  if (st) {
    b->unsupported |= rows_bit(n);
    return WGLLM_ERR_UNSUPPORTED;
  }
  gpu_recorder *rec = gpu_recorder_create(b->gpu, 1);
  if (!rec) {
    llm_err_set(&b->err, WGLLM_ERR_UNSUPPORTED, "out of host memory");
    snprintf(b->why, sizeof b->why, "%s", b->err.msg);
    b->unsupported |= rows_bit(n);
    return WGLLM_ERR_UNSUPPORTED;
  }
  /* the rows' input ids first: given by the CPU, or sampled by the step before (still on the GPU) */
  st = op_step_ids(rec, (gpu_view){b->src, 0, (uint64_t)n * 4}, gpu_whole(b->out), SLOT_WORDS, LLM_BATCH_MAX,
                   (gpu_view){b->sc.ids, 0, (uint64_t)llm_batch_rows(n) * 4}, n, llm_batch_rows(n));
  if (!st)
    st = llm_encode_forward_batch(rec, b->m, tk, n, llm_batch_rows(n), &b->sc, ss[0]->opt.fast, pool ? &paged : NULL);
  uint64_t row = (uint64_t)hp->n_vocab * 4;
  for (uint32_t i = 0; !st && i < n; i++) {
    llm_session *s = ss[i];
    st = op_sample(rec, &s->sampler, (gpu_view){b->sc.logits, i * row, row}, gpu_whole(s->sampler_state),
                   (gpu_view){b->out, (uint64_t)i * SLOT_WORDS * 4, 4}, gpu_whole(s->sampler_work), hp->n_vocab);
  }
  if (st) { /* nothing ran: these batches step one session after another from now on */
    llm_err_set(&b->err, WGLLM_ERR_UNSUPPORTED, "recording the batched step: %s", gpu_recorder_error(rec));
    snprintf(b->why, sizeof b->why, "%s", gpu_recorder_error(rec));
    b->unsupported |= rows_bit(n);
    gpu_recorder_free(rec);
    return WGLLM_ERR_UNSUPPORTED;
  }
  b->rec = rec;
  memcpy(b->members, now, n * sizeof *now);
  b->n_members = n;
  b->recordings++;
  return WGLLM_OK;
}

wgllm_status llm_batch_submit(llm_batch *b, llm_session *const *in, uint32_t n) {
  llm_err_clear(&b->err);
  if (!llm_batch_accepts(b, in, n)) {
    int no = n >= 2 && n <= LLM_BATCH_MAX && (b->unsupported & rows_bit(n));
    llm_err_set(&b->err, WGLLM_ERR_INVALID_ARG, "batched decode: %.900s",
                no ? b->why : "these sessions cannot step together (sampler, queued steps or context)");
    return no ? WGLLM_ERR_UNSUPPORTED : WGLLM_ERR_INVALID_ARG;
  }
  /* the rows: the sessions sorted by their bucket's length (stable), row k is in[order[k]]; a session of the step
     in flight is one position further on */
  uint32_t order[LLM_BATCH_MAX], len[LLM_BATCH_MAX], at[LLM_BATCH_MAX];
  llm_session *ss[LLM_BATCH_MAX];
  llm_batch_member now[LLM_BATCH_MAX];
  memset(now, 0, sizeof now);
  for (uint32_t i = 0; i < n; i++) {
    uint32_t p = in[i]->n_past + (uint32_t)in[i]->batch_queued;
    uint32_t bucket = llm_bucket_of(in[i], p), l = llm_bucket_len(in[i], bucket), k = i;
    for (; k > 0 && len[k - 1] > l; k--) {
      order[k] = order[k - 1];
      len[k] = len[k - 1];
      at[k] = at[k - 1];
      now[k] = now[k - 1];
    }
    order[k] = i;
    len[k] = l;
    at[k] = p;
    now[k] = (llm_batch_member){in[i], in[i]->step_gen, bucket};
  }
  for (uint32_t k = 0; k < n; k++)
    ss[k] = in[order[k]];
  wgllm_status st = WGLLM_OK;
  /* a slot for each token on a pool first: a full pool stops the step before anything is recorded or runs */
  for (uint32_t i = 0; !st && i < n; i++) {
    st = llm_session_reserve(ss[i], at[i] + 1);
    if (st) llm_err_set(&b->err, st, "%s", ss[i]->err.msg);
  }
  if (st) return st;
  if (!b->rec || n != b->n_members || memcmp(now, b->members, n * sizeof now[0])) st = record(b, ss, n, now);
  if (st) return st;
  uint32_t pos[LLM_BATCH_MAX * SLOT_WORDS], src[LLM_BATCH_MAX];
  memset(pos, 0, (size_t)n * SLOT_WORDS * 4);
  for (uint32_t i = 0; i < n; i++) {
    int r = ss[i]->batch_queued ? newest_row(b, ss[i]) : -1;
    src[i] = r >= 0 ? (uint32_t)r : 0x80000000u | (uint32_t)ss[i]->last_sampled;
    pos[i * SLOT_WORDS] = at[i];
  }
  /* queue-ordered writes: the step in flight has read its own already */
  gpu_write(b->gpu, b->src, 0, src, (uint64_t)n * 4);
  gpu_write(b->gpu, b->pos, 0, pos, (uint64_t)n * SLOT_WORDS * 4);
  if (b->pool && one_pool(ss, n) == b->pool) {
    uint32_t packed[LLM_MAX_BUCKETS * ROW_WORDS];
    for (uint32_t k = 0; k < b->n_groups; k++) /* group k's positions at k * ROW_WORDS */
      for (uint32_t i = b->group_row0[k]; i < b->group_row0[k + 1]; i++)
        packed[k * ROW_WORDS + i - b->group_row0[k]] = at[i];
    gpu_write(b->gpu, b->pos_packed, 0, packed, (uint64_t)b->n_groups * ROW_WORDS * 4);
    for (uint32_t i = 0; i < n; i++) /* the rows whose session or blocks changed */
      if (b->row_s[i] != ss[i] || b->row_gen[i] != ss[i]->seq_gen) {
        gpu_write(b->gpu, b->table, (uint64_t)i * b->row_words * 4, ss[i]->seq.blocks,
                  (uint64_t)ss[i]->seq.n_blocks * 4);
        b->row_s[i] = ss[i];
        b->row_gen[i] = ss[i]->seq_gen;
      }
  }
  llm_batch_flight *f = &b->flight[b->n_flight];
  st = gpu_recorder_run_readback(b->rec, b->rb, gpu_whole(b->out), &f->slot);
  if (st) {
    return llm_err_set(&b->err, st, "batched decode step: %s", gpu_recorder_error(b->rec));
  }
  f->n = n;
  for (uint32_t k = 0; k < n; k++) {
    f->ss[order[k]] = ss[k];
    f->row[order[k]] = k;
    f->dropped[order[k]] = 0;
    ss[k]->batch_queued++;
  }
  b->n_flight++;
  return WGLLM_OK;
}

/* Takes the oldest step in flight off the list: its sessions' counts come down. */
static void pop_flight(llm_batch *b) {
  llm_batch_flight *f = &b->flight[0];
  for (uint32_t i = 0; i < f->n; i++)
    f->ss[i]->batch_queued--;
  memmove(b->flight, b->flight + 1, (size_t)(--b->n_flight) * sizeof b->flight[0]);
}

wgllm_status llm_batch_collect(llm_batch *b, int32_t *tokens, const int *keep) {
  if (!b->n_flight) return llm_err_set(&b->err, WGLLM_ERR_INVALID_ARG, "batched decode: no step in flight");
  const llm_batch_flight f0 = b->flight[0], *f = &f0;
  uint32_t mine[LLM_BATCH_MAX * SLOT_WORDS];
  wgllm_status st = gpu_readback_wait(b->rb, f->slot, mine, &b->err);
  for (uint32_t i = 0; !st && i < f->n; i++) {
    uint32_t t = mine[f->row[i] * SLOT_WORDS];
    if (t >= b->m->hp.n_vocab)
      st = llm_err_set(&b->err, WGLLM_ERR_INTERNAL, "sampler returned token %u outside the vocabulary of %u", t,
                       b->m->hp.n_vocab);
  }
  if (st) { /* every step in flight goes: their sessions stay where they were collected last */
    llm_err first = b->err;
    for (int waited = 1;; waited = 0) {
      llm_batch_flight g = b->flight[0];
      if (!waited) gpu_readback_wait(b->rb, g.slot, mine, &b->err);
      pop_flight(b);
      for (uint32_t i = 0; i < g.n; i++)
        if (!g.ss[i]->batch_queued) llm_session_step_drain(g.ss[i]); /* reservations back, the id rewritten */
      if (!b->n_flight) break;
    }
    b->err = first;
    return st;
  }
  pop_flight(b);
  for (uint32_t i = 0; i < f->n; i++) {
    llm_session *s = f->ss[i];
    int32_t t = (int32_t)mine[f->row[i] * SLOT_WORDS];
    if (tokens) tokens[i] = t;
    if (f->dropped[i] || (keep && !keep[i])) {
      if (tokens) tokens[i] = -1;
      for (uint32_t k = 0; k < b->n_flight; k++) /* a later step fed this token: its own goes too */
        for (uint32_t j = 0; j < b->flight[k].n; j++)
          if (b->flight[k].ss[j] == s) b->flight[k].dropped[j] = 1;
      if (!s->batch_queued) llm_session_step_drain(s); /* its reservations back, its step's id rewritten */
      continue;
    }
    llm_session_fed_decoded(s, s->last_sampled); /* the step fed the previous token */
    s->last_sampled = t;
    s->ids_stale = 1;
  }
  return WGLLM_OK;
}

void llm_batch_drain(llm_batch *b, const llm_session *drop) {
  while (b && b->n_flight) {
    int keep[LLM_BATCH_MAX];
    for (uint32_t i = 0; i < b->flight[0].n; i++)
      keep[i] = b->flight[0].ss[i] != drop;
    llm_batch_collect(b, NULL, keep);
  }
}

wgllm_status llm_batch_step(llm_batch *b, llm_session *const *ss, uint32_t n, int32_t *tokens) {
  if (b->n_flight) return llm_err_set(&b->err, WGLLM_ERR_INVALID_ARG, "batched decode: a step is in flight");
  wgllm_status st = llm_batch_submit(b, ss, n);
  return st ? st : llm_batch_collect(b, tokens, NULL);
}
