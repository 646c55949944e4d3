/* Sessions (see session.h): KV cache allocation, chunked prefill through one-shot recordings, and the decode
   step recorded once and replayed. */
#include "session.h"
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

wgllm_status llm_session_create_fitting(llm_model *m, const llm_session_options *opt, llm_session **out,
                                        void (*log)(int warning, const char *msg), llm_err *err) {
  llm_session_options o = *opt;
  uint32_t trained = m->hp.train_ctx;
  char msg[1400];
  if (!o.ctx) { /* the trained length, at most LLM_DEFAULT_CTX (a 128K cache is gigabytes few runs need) */
    o.ctx = trained && trained < LLM_DEFAULT_CTX ? trained : LLM_DEFAULT_CTX;
    if (trained > LLM_DEFAULT_CTX && log) {
      snprintf(msg, sizeof msg, "context %u tokens by default (the model was trained on %u; set the context for more)",
               o.ctx, trained);
      log(0, msg);
    }
  } else if (trained && o.ctx > trained && log) {
    snprintf(msg, sizeof msg,
             "a context of %u tokens is more than the %u tokens the model was trained on; text past them is likely "
             "to be poor",
             o.ctx, trained);
    log(1, msg);
  }
  wgllm_status st = llm_session_create(m, &o, out, err);
  if (!st && log) {
    llm_mem_estimate e;
    char a[32], b[32], c[32], d[32], w[32];
    if (!llm_session_estimate(m, &o, &e, NULL)) {
      snprintf(msg, sizeof msg,
               "session: %u positions, an estimated %s on the device (KV cache %s, RoPE tables %s, "
               "scratch %s) beside the weights' %s",
               o.ctx, gpu_size_str(e.total, a, sizeof a), gpu_size_str(e.kv, b, sizeof b),
               gpu_size_str(e.rope, c, sizeof c), gpu_size_str(e.scratch, d, sizeof d),
               gpu_size_str(m->weight_bytes, w, sizeof w));
      log(0, msg);
    }
  }
  return st;
}

wgllm_status llm_session_estimate(llm_model *m, const llm_session_options *opt, llm_mem_estimate *e, llm_err *err) {
  memset(e, 0, sizeof *e);
  uint32_t ctx = opt->ctx ? opt->ctx : LLM_DEFAULT_CTX;
  uint32_t chunk = opt->prefill_chunk ? opt->prefill_chunk : llm_prefill_chunk(m->gpu, &m->hp);
  if (chunk > ctx) chunk = ctx;
  if (opt->pool) { /* its own layers only: the pool's memory is the pool's */
    e->kv = llm_kv_cache_bytes_pooled(&m->hp, ctx, chunk, &opt->pool->g);
  } else {
    llm_kv_cache kv;
    wgllm_status st = llm_kv_cache_plan(m->gpu, &m->hp, ctx, chunk, opt->kv_f16, m->max_binding, &kv, err);
    if (st) return st;
    e->kv = kv.bytes;
    llm_kv_cache_free(m->gpu, &kv);
  }
  e->rope = llm_rope_table_bytes(&m->hp, ctx, 0) + llm_rope_table_bytes(&m->hp, ctx, 1);
  /* a prefill pass's activations (every row's logits at most) and the decode step's */
  e->scratch = llm_scratch_bytes(&m->hp, chunk, chunk) + llm_scratch_bytes(&m->hp, 1, 1);
  e->total = e->kv + e->rope + e->scratch;
  return WGLLM_OK;
}

/* The estimate of a session of o->ctx positions against the device's limits and the memory it has left, before
   anything is allocated: refused naming the estimate, the limit and the largest context that fits. */
static wgllm_status check_session_memory(llm_model *m, const llm_session_options *o, llm_err *err) {
  llm_mem_estimate e;
  wgllm_status st = llm_session_estimate(m, o, &e, err);
  if (st) return st;
  char a[32], b[32], c[32], d[32], why[320];
  uint64_t bind = m->gpu->limits.maxStorageBufferBindingSize;
  for (int local = 0; local < 2; local++) { /* one binding holds a whole table */
    uint64_t rope = llm_rope_table_bytes(&m->hp, o->ctx, local);
    if (rope > bind)
      return llm_err_set(err, WGLLM_ERR_UNSUPPORTED,
                         "RoPE table%s: %u positions take %s, over the storage binding limit of %s: a context of at "
                         "most %llu fits",
                         local ? " (local layers)" : "", o->ctx, gpu_size_str(rope, a, sizeof a),
                         gpu_size_str(bind, b, sizeof b), (unsigned long long)(bind / (rope / o->ctx)));
  }
  uint64_t left = gpu_memory_left(m->gpu, why, sizeof why);
  if (e.total <= left) return WGLLM_OK;
  /* the largest context that fits: the estimate grows with the context */
  uint32_t lo = 0, hi = o->ctx;
  while (lo + 1 < hi) {
    llm_session_options t = *o;
    llm_mem_estimate et;
    t.ctx = lo + (hi - lo) / 2;
    if (!llm_session_estimate(m, &t, &et, NULL) && et.total <= left)
      lo = t.ctx;
    else
      hi = t.ctx;
  }
  char fits[96] = "";
  if (lo) snprintf(fits, sizeof fits, "a context of at most %u fits", lo);
  return llm_err_set(err, WGLLM_ERR_OUT_OF_MEMORY,
                     "a session of %u positions needs an estimated %s (KV cache %s %s, RoPE tables %s, scratch %s), "
                     "and %s: %s%s",
                     o->ctx, gpu_size_str(e.total, a, sizeof a), gpu_size_str(e.kv, b, sizeof b),
                     o->kv_f16 ? "f16" : "f32", gpu_size_str(e.rope, c, sizeof c), gpu_size_str(e.scratch, d, sizeof d),
                     why, lo ? fits : "not even a short context fits",
                     lo && !o->kv_f16 ? " (about twice that with an f16 KV cache)" : "");
}

void llm_session_free(llm_session *s) {
  if (!s) return;
  if (llm_session_queued(s)) llm_session_step_drain(s);
  gpu_readback_free(s->readback);
  for (uint32_t b = 0; b < LLM_MAX_BUCKETS; b++) {
    gpu_recorder_free(s->steps[b]);
    gpu_recorder_free(s->plain[b]);
  }
  gpu_recorder_free(s->sample_only);
  llm_scratch_release(s->gpu, &s->step_scratch);
  gpu_buffer_destroy(s->gpu, s->sampler_state);
  gpu_buffer_destroy(s->gpu, s->sampler_work);
  gpu_buffer_destroy(s->gpu, s->logit_mask);
  gpu_buffer_destroy(s->gpu, s->logit_bias);
  gpu_buffer_destroy(s->gpu, s->lp_raw);
  gpu_buffer_destroy(s->gpu, s->lp_work);
  gpu_buffer_destroy(s->gpu, s->lp_out);
  gpu_readback_free(s->lp_readback);
  llm_kv_cache_free(s->gpu, &s->kv);
  if (s->opt.pool) {
    llm_kv_pool *p = s->opt.pool;
    kv_seq_release(p->blocks, &s->seq);
    p->sessions--;
    *(s->pool_prev ? &s->pool_prev->pool_next : &p->first) = s->pool_next;
    *(s->pool_next ? &s->pool_next->pool_prev : &p->last) = s->pool_prev;
  }
  gpu_buffer_destroy(s->gpu, s->table);
  llm_rope_tables_free(s->gpu, &s->rope);
  free(s->fed);
  free(s->decoded);
  free(s);
}

/* On a pool: the blocks past the first n tokens go back (published ones to the pool's cache) */
static void pool_truncate(llm_session *s, uint32_t n) {
  if (!s->opt.pool) return;
  if (n >= s->seq.n_tokens) return;
  kv_seq_truncate(s->opt.pool->blocks, &s->seq, n);
  if (s->table_n > s->seq.n_blocks) s->table_n = s->seq.n_blocks;
  s->seq_gen++;
}

void llm_session_reset(llm_session *s) {
  if (llm_session_queued(s)) llm_session_step_drain(s);
  s->n_past = s->kv_hi = s->lead = s->evicted = 0;
  pool_truncate(s, 0);
}

void llm_session_touch(llm_session *s) {
  llm_kv_pool *p = s->opt.pool;
  if (!p || p->last == s) return;
  *(s->pool_prev ? &s->pool_prev->pool_next : &p->first) = s->pool_next;
  s->pool_next->pool_prev = s->pool_prev; /* not the last: it has a next */
  s->pool_prev = p->last;
  s->pool_next = NULL;
  p->last->pool_next = s;
  p->last = s;
}

uint32_t llm_session_blocks_for(const llm_session *s, uint32_t upto) {
  if (!s->opt.pool || upto <= s->seq.n_tokens) return 0;
  return kv_seq_blocks_needed(s->opt.pool->blocks, &s->seq, upto - s->seq.n_tokens);
}

void llm_session_fed_decoded(llm_session *s, int32_t token) {
  s->fed[s->n_past] = token;
  s->decoded[s->n_past++] = 1;
}

wgllm_status llm_session_reserve(llm_session *s, uint32_t upto) {
  llm_kv_pool *p = s->opt.pool;
  if (!p || upto <= s->seq.n_tokens) return WGLLM_OK;
  kv_copy cow;
  llm_err e = {0};
  wgllm_status st = kv_seq_reserve(p->blocks, &s->seq, upto - s->seq.n_tokens, &cow, &e);
  if (st == WGLLM_ERR_OUT_OF_MEMORY &&
      kv_seq_blocks_needed(p->blocks, &s->seq, upto - s->seq.n_tokens) > kv_blocks_available(p->blocks))
    return llm_err_set(&s->err, WGLLM_ERR_KV_FULL, "KV pool full: %s", e.msg);
  if (st) return llm_err_set(&s->err, st, "%s", e.msg);
  uint32_t from = s->table_n;
  if (cow.src != KV_NO_BLOCK) { /* never: a rewind stops at a block another sequence shares (llm_session_rewind) */
    return llm_err_set(&s->err, WGLLM_ERR_INTERNAL, "KV pool: a shared block %u to copy into %u", cow.src, cow.dst);
  }
  if (s->seq.n_blocks > from)
    gpu_write(s->gpu, s->table, (uint64_t)from * 4, s->seq.blocks + from, (uint64_t)(s->seq.n_blocks - from) * 4);
  s->table_n = s->seq.n_blocks;
  s->seq_gen++;
  return WGLLM_OK;
}

uint32_t llm_session_adopt_prefix(llm_session *s, const int32_t *ids, uint32_t n) {
  llm_kv_pool *p = s->opt.pool;
  if (!p || s->n_past || s->seq.n_tokens || n < 2) return 0;
  uint32_t got = kv_seq_adopt(p->blocks, &s->seq, ids, n - 1);
  if (!got) return 0;
  gpu_write(s->gpu, s->table, 0, s->seq.blocks, (uint64_t)s->seq.n_blocks * 4);
  s->table_n = s->seq.n_blocks;
  s->seq_gen++;
  memcpy(s->fed, ids, (size_t)got * sizeof *ids);
  memset(s->decoded, 0, got);
  s->n_past = s->kv_hi = s->lead = got;
  return got;
}

uint32_t llm_session_rewind(llm_session *s, uint32_t n) {
  if (s->evicted) { /* its cache is gone: nothing of it is kept */
    llm_session_reset(s);
    return 0;
  }
  if (n >= s->n_past) return s->n_past;
  if (s->n_past > s->kv_hi) s->kv_hi = s->n_past;
  /* a sliding-window ring holds the last slots positions written: going back further than its slack would
     read keys that later tokens overwrote, so the whole cache goes (the next prefill recomputes it) */
  if (s->kv_hi - n > s->kv.ring_slack) n = 0;
  /* on a pool, a block another sequence shares is only read: keep its whole blocks, recompute the rest */
  if (s->opt.pool && n % LLM_KV_BLOCK && n < s->seq.n_tokens &&
      kv_blocks_ref(s->opt.pool->blocks, s->seq.blocks[n / LLM_KV_BLOCK]) > 1)
    n -= n % LLM_KV_BLOCK;
  s->n_past = n;
  if (n == 0) s->kv_hi = 0;
  if (s->lead > n) s->lead = n;
  pool_truncate(s, n);
  return n;
}

uint32_t llm_session_common_prefix(const llm_session *s, const int32_t *ids, uint32_t n) {
  uint32_t i = 0;
  while (i < n && i < s->n_past && s->fed[i] == ids[i])
    i++;
  return i;
}

wgllm_status llm_session_create(llm_model *m, const llm_session_options *opt, llm_session **out, llm_err *err) {
  *out = NULL;
  llm_session *s = calloc(1, sizeof *s);
  if (!s) {
    return llm_err_set(err, WGLLM_ERR_OUT_OF_MEMORY, "out of host memory");
  }
  s->m = m;
  s->gpu = m->gpu;
  if (opt) s->opt = *opt;
  if (!s->opt.ctx) s->opt.ctx = LLM_DEFAULT_CTX;
  s->n_buckets = 1;
  while (s->n_buckets < LLM_MAX_BUCKETS && llm_bucket_len(s, s->n_buckets - 1) < s->opt.ctx)
    s->n_buckets++;
  if (!s->opt.prefill_chunk) s->opt.prefill_chunk = llm_prefill_chunk(s->gpu, &m->hp);
  if (s->opt.prefill_chunk > llm_prefill_chunk_max(s->gpu, &m->hp)) {
    llm_err_set(err, WGLLM_ERR_INVALID_ARG,
                "a prefill chunk of %u tokens does not fit the device's storage bindings (at most %u tokens for "
                "this model)",
                s->opt.prefill_chunk, llm_prefill_chunk_max(s->gpu, &m->hp));
    free(s);
    return WGLLM_ERR_INVALID_ARG;
  }
  const llm_hparams *hp = &m->hp;
  llm_kv_pool *pl = s->opt.pool;
  if (pl && (pl->m != m || s->opt.ctx > pl->g.max_ctx || !s->opt.kv_f16 != !pl->g.f16)) {
    llm_err_set(err, WGLLM_ERR_INVALID_ARG,
                "a session of %u positions with an %s cache on a KV pool %sfor sessions of at most %u positions with "
                "%s caches",
                s->opt.ctx, s->opt.kv_f16 ? "f16" : "f32", pl->m != m ? "of another model, " : "", pl->g.max_ctx,
                pl->g.f16 ? "f16" : "f32");
    free(s);
    return WGLLM_ERR_INVALID_ARG;
  }
  /* f16 KV is stored as packed pairs in u32 words and widened with unpack2x16float: it needs no shader-f16,
     so it is available on every device (the H200 through this Dawn does not grant shader-f16) */
  wgllm_status st = check_session_memory(m, &s->opt, err);
  if (st) {
    free(s);
    return st;
  }
  s->fed = malloc(s->opt.ctx * sizeof *s->fed);
  s->decoded = malloc(s->opt.ctx);
  st = s->fed && s->decoded ? WGLLM_OK : WGLLM_ERR_OUT_OF_MEMORY;
  if (st) llm_err_set(err, st, "out of host memory for the context's %u token ids", s->opt.ctx);
  llm_kv_pool *pool = s->opt.pool;
  if (!st && pool) {
    pool->sessions++; /* from here llm_session_free gives it back */
    s->pool_prev = pool->last;
    *(pool->last ? &pool->last->pool_next : &pool->first) = s;
    pool->last = s;
    st = gpu_buffer_create(s->gpu, (uint64_t)pool->g.max_blocks * 4, "kv_block_table", &s->table, err);
    if (!st)
      st = llm_kv_cache_create_pooled(s->gpu, hp, s->opt.ctx, s->opt.prefill_chunk, m->max_binding, &pool->g,
                                      gpu_whole(s->table), &s->kv, err);
  } else if (!st)
    st = llm_kv_cache_create(s->gpu, hp, s->opt.ctx, s->opt.prefill_chunk, s->opt.kv_f16, m->max_binding, &s->kv, err);
  if (!st) st = llm_rope_tables_create(s->gpu, hp, s->opt.ctx, &s->rope, err);
  if (st) {
    llm_session_free(s);
    return st;
  }
  *out = s;
  return WGLLM_OK;
}

/* A batched step in flight (batch.h) holds the session's next token: nothing else may feed it until it is collected
   (its owner settles it first: jobs.h). */
static wgllm_status check_no_batch(llm_session *s, const char *who) {
  if (!s->batch_queued) return WGLLM_OK;
  return llm_err_set(&s->err, WGLLM_ERR_INTERNAL,
                     "%s: %d batched steps of this session are in flight (collect them first)", who, s->batch_queued);
}

static wgllm_status check_ids(llm_session *s, const int32_t *ids, uint32_t T) {
  wgllm_status b = check_no_batch(s, "feeding tokens");
  if (b) return b;
  for (uint32_t i = 0; i < T; i++)
    if (ids[i] < 0 || (uint32_t)ids[i] >= s->m->hp.n_vocab) {
      return llm_err_set(&s->err, WGLLM_ERR_INVALID_ARG, "token id %d at index %u is out of range (vocabulary of %u)",
                         ids[i], i, s->m->hp.n_vocab);
    }
  if ((uint64_t)s->n_past + T > s->opt.ctx) {
    return llm_err_set(&s->err, WGLLM_ERR_INVALID_ARG,
                       "%u tokens after %u already in the cache exceed the context of %u", T, s->n_past, s->opt.ctx);
  }
  return WGLLM_OK;
}

static wgllm_status prefill(llm_session *s, const int32_t *ids, uint32_t T, float *logits, int all_rows, int sample);
/* before the sampler's draw: the logits kept for logprobs, then the logit filter (llm_session_set_filter) */
static wgllm_status record_filter(llm_session *s, gpu_recorder *rec, gpu_view logits) {
  uint32_t V = s->m->hp.n_vocab;
  wgllm_status st = s->lp_on ? op_copy_u32(rec, logits, gpu_whole(s->lp_raw), V) : WGLLM_OK;
  if (!st && s->masked) st = op_logit_mask(rec, logits, gpu_whole(s->logit_mask), V);
  if (st) return st;
  if (s->n_bias) st = op_logit_bias(rec, logits, gpu_whole(s->logit_bias), V, s->n_bias);
  return st;
}

/* after the draw (its id in ids): the drawn token's and the top logprobs (llm_session_set_logprobs) */
static wgllm_status record_logprobs(llm_session *s, gpu_recorder *rec, gpu_view ids) {
  return s->lp_on ? op_logprobs(rec, gpu_whole(s->lp_raw), ids, gpu_whole(s->lp_work), gpu_whole(s->lp_out),
                                s->m->hp.n_vocab, s->lp_top)
                  : WGLLM_OK;
}

wgllm_status llm_session_prefill(llm_session *s, const int32_t *ids, uint32_t T, float *logits, int all_rows) {
  return prefill(s, ids, T, logits, all_rows, 0);
}

static wgllm_status ensure_step(llm_session *s, uint32_t b);

uint32_t llm_bucket_len(const llm_session *s, uint32_t b) {
  uint64_t len = (uint64_t)LLM_MIN_BUCKET << b;
  return b + 1 >= LLM_MAX_BUCKETS || len >= s->opt.ctx ? s->opt.ctx : (uint32_t)len;
}

uint32_t llm_bucket_of(const llm_session *s, uint32_t pos) {
  uint32_t b = 0;
  while (b + 1 < s->n_buckets && llm_bucket_len(s, b) <= pos)
    b++;
  return b;
}

gpu_recorder *llm_session_step(llm_session *s, uint32_t pos) {
  uint32_t b = llm_bucket_of(s, pos);
  return ensure_step(s, b) ? NULL : s->steps[b];
}

static wgllm_status prefill(llm_session *s, const int32_t *ids, uint32_t T, float *logits, int all_rows, int sample) {
  llm_err_clear(&s->err);
  if (T == 0) {
    return llm_err_set(&s->err, WGLLM_ERR_INVALID_ARG, "empty prompt: nothing to prefill");
  }
  if (s->evicted) {
    return llm_err_set(&s->err, WGLLM_ERR_INVALID_ARG, "prefill: the session is evicted (restore or reset it)");
  }
  if (s->fwd_ahead && !s->in_flight) llm_session_step_drain(s); /* a generation's forward pass ahead, unused */
  wgllm_status st = check_ids(s, ids, T);
  if (!st) st = llm_session_reserve(s, s->n_past + T);
  if (st) return st;
  const llm_hparams *hp = &s->m->hp;
  uint32_t chunk = s->opt.prefill_chunk < T ? s->opt.prefill_chunk : T;
  s->prefill_cpu_us = 0;
  /* every row's logits must fit one storage binding (128 MiB on many devices): fewer rows a pass if not */
  uint64_t max_bind = s->gpu->limits.maxStorageBufferBindingSize;
  if (all_rows && (uint64_t)chunk * hp->n_vocab * 4 > max_bind)
    chunk = (uint32_t)(max_bind / ((uint64_t)hp->n_vocab * 4));
  if (chunk == 0) {
    return llm_err_set(&s->err, WGLLM_ERR_UNSUPPORTED,
                       "one row of %u logits does not fit the device's storage binding limit", hp->n_vocab);
  }
  llm_scratch sc;
  st = llm_scratch_acquire(s->gpu, hp, chunk, all_rows ? chunk : 1, &sc, &s->err);
  if (!st && s->opt.fast) {
    st = llm_scratch_add_fast(s->gpu, hp, &sc, &s->err);
    if (st) llm_scratch_release(s->gpu, &sc);
  }
  if (st) return st;
  uint32_t *pos = malloc(chunk * sizeof *pos);
  if (!pos) {
    llm_scratch_release(s->gpu, &sc);
    return llm_err_set(&s->err, WGLLM_ERR_OUT_OF_MEMORY, "out of host memory");
  }
  for (uint32_t done = 0; !st && done < T; done += chunk) {
    uint32_t n = T - done < chunk ? T - done : chunk;
    for (uint32_t i = 0; i < n; i++)
      pos[i] = s->n_past + i;
    gpu_write(s->gpu, sc.ids, 0, ids + done, (uint64_t)n * 4);
    gpu_write(s->gpu, sc.pos, 0, pos, (uint64_t)n * 4);
    int want = logits && (all_rows || done + n == T);
    uint32_t n_logits = all_rows ? n : 1;
    gpu_recorder *rec = gpu_recorder_create(s->gpu, 0);
    if (!rec) {
      st = WGLLM_ERR_OUT_OF_MEMORY;
      llm_err_set(&s->err, st, "out of host memory");
      break;
    }
    llm_forward_opts pfo = {.attn_grid = LLM_ATTN_GRID_WORST, .fast = s->opt.fast, .prefill = 1};
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    st = llm_encode_forward(rec, s->m, &s->kv, &s->rope, &sc, n, n_logits, &pfo);
    if (!st && sample && done + n == T) st = record_filter(s, rec, gpu_whole(sc.logits));
    if (!st && sample && done + n == T) /* the first generated token lands in the step's input id */
      st = op_sample(rec, &s->sampler, gpu_whole(sc.logits), gpu_whole(s->sampler_state),
                     gpu_whole(s->step_scratch.ids), gpu_whole(s->sampler_work), hp->n_vocab);
    if (!st && sample && done + n == T) st = record_logprobs(s, rec, gpu_whole(s->step_scratch.ids));
    if (!st) st = gpu_recorder_run(rec);
    clock_gettime(CLOCK_MONOTONIC, &t1);
    s->prefill_cpu_us += (t1.tv_sec - t0.tv_sec) * 1e6 + (t1.tv_nsec - t0.tv_nsec) * 1e-3;
    if (st) llm_err_set(&s->err, st, "prefill: %s", gpu_recorder_error(rec));
    gpu_recorder_free(rec);
    if (!st && want) {
      float *dst = all_rows ? logits + (uint64_t)done * hp->n_vocab : logits;
      st = gpu_read(s->gpu, sc.logits, 0, dst, (uint64_t)n_logits * hp->n_vocab * 4, &s->err);
    }
    if (!st) llm_session_prefilled(s, ids + done, n);
    if (!st && s->opt.on_prefill) s->opt.on_prefill(done + n, T, s->opt.prefill_user);
  }
  free(pos);
  llm_scratch_release(s->gpu, &sc);
  return st;
}

void llm_session_prefilled(llm_session *s, const int32_t *ids, uint32_t n) {
  if (s->fed + s->n_past != ids) memcpy(s->fed + s->n_past, ids, (size_t)n * sizeof *ids);
  memset(s->decoded + s->n_past, 0, n);
  if (s->lead == s->n_past) s->lead += n;
  s->n_past += n;
  /* a pool's later sessions may take the prompt's full blocks (prefilled tokens only: a decoded token's K and V come
     from the decode path's kernels, whose sums may round differently, so they are not offered as a prompt's) */
  if (s->opt.pool) kv_seq_publish(s->opt.pool->blocks, &s->seq, s->fed, s->lead);
}

wgllm_status llm_session_check_ids(llm_session *s, const int32_t *ids, uint32_t T) { return check_ids(s, ids, T); }

wgllm_status llm_session_decode(llm_session *s, int32_t id, float *logits) {
  llm_err_clear(&s->err);
  wgllm_status st = check_ids(s, &id, 1);
  if (st) return st;
  const llm_hparams *hp = &s->m->hp;
  if (s->has_sampler) {
    return llm_err_set(&s->err, WGLLM_ERR_INVALID_ARG,
                       "llm_session_decode: a sampler is set; use llm_session_step_sample");
  }
  st = llm_session_reserve(s, s->n_past + 1);
  if (st) return st;
  gpu_recorder *step = llm_session_step(s, s->n_past);
  if (!step) return s->step_status;
  uint32_t u = (uint32_t)id, p = s->n_past;
  gpu_write(s->gpu, s->step_scratch.ids, 0, &u, 4);
  gpu_write(s->gpu, s->step_scratch.pos, 0, &p, 4);
  s->last_step = step;
  st = gpu_recorder_run(step);
  if (st) {
    return llm_err_set(&s->err, st, "decode step: %s", gpu_recorder_error(step));
  }
  if (logits) st = gpu_read(s->gpu, s->step_scratch.logits, 0, logits, (uint64_t)hp->n_vocab * 4, &s->err);
  if (!st) llm_session_fed_decoded(s, id);
  return st;
}

/* Records bucket b's decode step into *out once (the forward pass, then the sampler when one is set and `sample`);
   afterwards only GPU-side values change. */
static wgllm_status record_step(llm_session *s, uint32_t b, int sample, gpu_recorder **out) {
  s->step_status = WGLLM_OK;
  if (*out) return WGLLM_OK;
  const llm_hparams *hp = &s->m->hp;
  wgllm_status st;
  if (!s->step_scratch.ids) {
    st = llm_scratch_acquire(s->gpu, hp, 1, 1, &s->step_scratch, &s->err);
    if (st) return s->step_status = st;
  }
  st = llm_scratch_add_decode(s->gpu, hp, &s->kv, &s->step_scratch, &s->err);
  if (!st && s->opt.fast) st = llm_scratch_add_fast(s->gpu, hp, &s->step_scratch, &s->err);
  if (st) return s->step_status = st;
  gpu_recorder *rec = gpu_recorder_create(s->gpu, 1);
  if (!rec) {
    llm_err_set(&s->err, WGLLM_ERR_OUT_OF_MEMORY, "out of host memory");
    return s->step_status = WGLLM_ERR_OUT_OF_MEMORY;
  }
  s->step_recordings++;
  uint32_t len = llm_bucket_len(s, b);
  llm_forward_opts fo = {.max_len = len >= s->opt.ctx ? 0 : len,
                         .unfused = s->opt.unfused,
                         .attn_grid = s->opt.attn_grid,
                         .fast = s->opt.fast};
  st = llm_encode_forward(rec, s->m, &s->kv, &s->rope, &s->step_scratch, 1, 1, &fo);
  if (!st && sample && s->has_sampler) st = record_filter(s, rec, gpu_whole(s->step_scratch.logits));
  if (!st && sample && s->has_sampler)
    st = op_sample(rec, &s->sampler, gpu_whole(s->step_scratch.logits), gpu_whole(s->sampler_state),
                   gpu_whole(s->step_scratch.ids), gpu_whole(s->sampler_work), hp->n_vocab);
  if (!st && sample && s->has_sampler) st = record_logprobs(s, rec, gpu_whole(s->step_scratch.ids));
  if (st) {
    llm_err_set(&s->err, st, "recording the decode step: %s", gpu_recorder_error(rec));
    gpu_recorder_free(rec);
    return s->step_status = st;
  }
  *out = rec;
  return WGLLM_OK;
}

static wgllm_status ensure_step(llm_session *s, uint32_t b) { return record_step(s, b, 1, &s->steps[b]); }

wgllm_status llm_session_evict(llm_session *s) {
  if (!s->opt.pool || s->evicted) return WGLLM_OK;
  if (check_no_batch(s, "evicting")) return s->err.status;
  wgllm_status st = llm_session_queued(s) ? llm_session_step_drain(s) : WGLLM_OK;
  s->evicted = s->n_past ? s->n_past : UINT32_MAX; /* UINT32_MAX: evicted with nothing to recompute */
  s->n_past = s->kv_hi = 0;
  pool_truncate(s, 0);
  return st;
}

uint32_t llm_session_restore_blocks(const llm_session *s) {
  if (!s->evicted || s->evicted == UINT32_MAX) return 0;
  return (s->evicted + s->opt.pool->g.block - 1) / s->opt.pool->g.block;
}

wgllm_status llm_session_restore(llm_session *s) {
  if (!s->evicted) return WGLLM_OK;
  llm_err_clear(&s->err);
  uint32_t n = s->evicted == UINT32_MAX ? 0 : s->evicted, lead = s->lead < n ? s->lead : n;
  kv_blocks *pb = s->opt.pool->blocks;
  /* its own published prefix back from the pool's cache (a prefill's blocks: the bits it computed), then room for
     the rest */
  uint32_t got = lead ? kv_seq_adopt(pb, &s->seq, s->fed, lead) : 0;
  if (got) gpu_write(s->gpu, s->table, 0, s->seq.blocks, (uint64_t)s->seq.n_blocks * 4);
  s->table_n = s->seq.n_blocks;
  s->seq_gen++;
  wgllm_status st = llm_session_reserve(s, n);
  if (st) {
    pool_truncate(s, 0);
    return st;
  }
  s->evicted = 0;
  s->n_past = s->kv_hi = got;
  /* the rest, run by run as it was computed */
  while (!st && s->n_past < n) {
    uint32_t i = s->n_past, j = i;
    while (j < n && s->decoded[j] == s->decoded[i])
      j++;
    if (!s->decoded[i]) {
      st = prefill(s, s->fed + i, j - i, NULL, 0, 0);
      continue;
    }
    for (; !st && i < j; i++) {
      uint32_t b = llm_bucket_of(s, i);
      st = record_step(s, b, 0, &s->plain[b]);
      if (st) break;
      uint32_t u = (uint32_t)s->fed[i];
      gpu_write(s->gpu, s->step_scratch.ids, 0, &u, 4);
      gpu_write(s->gpu, s->step_scratch.pos, 0, &i, 4);
      st = gpu_recorder_run(s->plain[b]);
      if (st) llm_err_set(&s->err, st, "recomputing an evicted cache: %s", gpu_recorder_error(s->plain[b]));
      if (!st) s->n_past++;
    }
  }
  if (st) { /* a failure (device, memory) leaves an empty cache: the next prefill starts over */
    llm_session_reset(s);
    return st;
  }
  s->kv_hi = n;
  s->ids_stale = 1; /* the step's input id was overwritten: the next step writes last_sampled again */
  return WGLLM_OK;
}

static void free_steps(llm_session *s) {
  s->step_gen++;
  for (uint32_t b = 0; b < LLM_MAX_BUCKETS; b++) {
    gpu_recorder_free(s->steps[b]);
    s->steps[b] = NULL;
  }
  gpu_recorder_free(s->sample_only);
  s->sample_only = NULL;
  s->last_step = NULL;
}

wgllm_status llm_session_set_sampler(llm_session *s, const op_sample_params *sp, const int32_t *recent,
                                     uint32_t n_recent) {
  llm_err_clear(&s->err);
  if (llm_session_queued(s)) llm_session_step_drain(s); /* queued steps use the recordings freed below */
  wgllm_status st;
  if (!s->sampler_work) { /* made together: a failure frees the one made (a later call tries both again) */
    st = gpu_buffer_create(s->gpu, (4 + OP_SAMPLE_RING_MAX) * 4, "sampler_state", &s->sampler_state, &s->err);
    if (!st) st = gpu_buffer_create(s->gpu, op_sample_work_bytes(), "sampler_work", &s->sampler_work, &s->err);
    if (st) {
      gpu_buffer_destroy(s->gpu, s->sampler_state);
      s->sampler_state = NULL;
      return st;
    }
  }
  if (!s->step_scratch.ids) {
    st = llm_scratch_acquire(s->gpu, &s->m->hp, 1, 1, &s->step_scratch, &s->err);
    if (st) return st;
  }
  op_sample_params p = *sp;
  if (p.ring_cap > OP_SAMPLE_RING_MAX) p.ring_cap = OP_SAMPLE_RING_MAX;
  if (!op_sample_penalises(&p)) p.ring_cap = 0;
  uint32_t state[4 + OP_SAMPLE_RING_MAX] = {0};
  uint32_t n = n_recent < p.ring_cap ? n_recent : p.ring_cap;
  for (uint32_t i = 0; i < n; i++)
    state[4 + i] = (uint32_t)recent[n_recent - n + i];
  state[1] = n;
  state[2] = p.ring_cap ? n % p.ring_cap : 0;
  gpu_write(s->gpu, s->sampler_state, 0, state, sizeof state);
  /* the steps bake the sampler's parameters in: re-record them when they change */
  if (!s->has_sampler || memcmp(&p, &s->sampler, sizeof p)) free_steps(s);
  s->sampler = p;
  s->has_sampler = 1;
  return ensure_step(s, llm_bucket_of(s, s->n_past));
}

wgllm_status llm_session_set_filter(llm_session *s, const llm_logit_filter *f) {
  llm_err_clear(&s->err);
  uint32_t V = s->m->hp.n_vocab, n_bias = f ? f->n_bias : 0;
  int masked = f && f->masked;
  for (uint32_t k = 0; k < n_bias; k++)
    if (f->bias_ids[k] < 0 || (uint32_t)f->bias_ids[k] >= V || !isfinite(f->bias[k]))
      return llm_err_set(&s->err, WGLLM_ERR_INVALID_ARG,
                         "logit bias %u: token %d (bias %g) outside the vocabulary of %u", k, f->bias_ids[k],
                         f->bias[k], V);
  if (llm_session_queued(s)) llm_session_step_drain(s); /* queued steps use the recordings freed below */
  wgllm_status st = WGLLM_OK;
  if (masked && !s->logit_mask) {
    st = gpu_buffer_create(s->gpu, (uint64_t)(V + 31) / 32 * 4, "logit_mask", &s->logit_mask, &s->err);
    if (st) return st;
  }
  if (n_bias) { /* a buffer of this request's size: the recording binds it whole */
    gpu_buffer_destroy(s->gpu, s->logit_bias);
    s->logit_bias = NULL;
    uint32_t *pairs = malloc((size_t)n_bias * 8);
    if (!pairs) return llm_err_set(&s->err, WGLLM_ERR_OUT_OF_MEMORY, "out of host memory");
    for (uint32_t k = 0; k < n_bias; k++) {
      pairs[2 * k] = (uint32_t)f->bias_ids[k];
      memcpy(&pairs[2 * k + 1], &f->bias[k], 4);
    }
    st = gpu_buffer_create(s->gpu, (uint64_t)n_bias * 8, "logit_bias", &s->logit_bias, &s->err);
    if (!st) gpu_write(s->gpu, s->logit_bias, 0, pairs, (uint64_t)n_bias * 8);
    free(pairs);
    if (st) return st;
  }
  if (masked != s->masked || n_bias || s->n_bias) free_steps(s); /* a bias buffer is new each time */
  s->masked = masked;
  s->n_bias = n_bias;
  return WGLLM_OK;
}

wgllm_status llm_session_set_logprobs(llm_session *s, int on, uint32_t top) {
  llm_err_clear(&s->err);
  if (top > OP_LOGPROBS_MAX)
    return llm_err_set(&s->err, WGLLM_ERR_INVALID_ARG, "top_logprobs is %u; at most %u", top, OP_LOGPROBS_MAX);
  on = on != 0;
  if (!on) top = 0;
  if (on == s->lp_on && top == s->lp_top) return WGLLM_OK;
  if (llm_session_queued(s))
    llm_session_step_drain(s); /* queued steps read back what the recordings freed below wrote */
  uint32_t V = s->m->hp.n_vocab;
  wgllm_status st = WGLLM_OK;
  if (on && !s->lp_readback) { /* made together: a failure frees those made (a later call tries again) */
    st = gpu_buffer_create(s->gpu, (uint64_t)V * 4, "logprobs logits", &s->lp_raw, &s->err);
    if (!st) st = gpu_buffer_create(s->gpu, op_logprobs_work_bytes(V), "logprobs work", &s->lp_work, &s->err);
    if (!st) st = gpu_buffer_create(s->gpu, LLM_LP_WORDS * 4, "logprobs", &s->lp_out, &s->err);
    if (!st && !(s->lp_readback = gpu_readback_create(s->gpu, LLM_LP_WORDS * 4, LLM_MAX_IN_FLIGHT + 1,
                                                      "logprobs readback", &s->err)))
      st = s->err.status;
    if (st) {
      gpu_buffer_destroy(s->gpu, s->lp_raw);
      gpu_buffer_destroy(s->gpu, s->lp_work);
      gpu_buffer_destroy(s->gpu, s->lp_out);
      s->lp_raw = s->lp_work = s->lp_out = NULL;
      return st;
    }
  }
  free_steps(s);
  s->lp_on = on;
  s->lp_top = top;
  return WGLLM_OK;
}

void llm_session_write_mask(llm_session *s, const uint32_t *words) {
  if (s->logit_mask) gpu_write(s->gpu, s->logit_mask, 0, words, (uint64_t)(s->m->hp.n_vocab + 31) / 32 * 4);
}

static wgllm_status read_token(llm_session *s, int32_t *token) {
  uint32_t t;
  wgllm_status st = gpu_read(s->gpu, s->step_scratch.ids, 0, &t, 4, &s->err);
  if (!st && t >= s->m->hp.n_vocab) {
    st = llm_err_set(&s->err, WGLLM_ERR_INTERNAL, "sampler returned token %u outside the vocabulary of %u", t,
                     s->m->hp.n_vocab);
  }
  if (!st) *token = (int32_t)t;
  return st;
}

wgllm_status llm_session_prefill_sample(llm_session *s, const int32_t *ids, uint32_t T, int32_t *token) {
  if (!s->has_sampler) {
    return llm_err_set(&s->err, WGLLM_ERR_INVALID_ARG, "llm_session_prefill_sample: no sampler set");
  }
  wgllm_status st = prefill(s, ids, T, NULL, 0, 1);
  if (!st) st = read_token(s, token);
  if (!st && s->lp_on) st = gpu_read(s->gpu, s->lp_out, 0, s->lp_last, sizeof s->lp_last, &s->err);
  if (!st) {
    s->last_sampled = *token;
    s->ids_stale = 0; /* the prefill's sampler wrote it into the step's input */
  }
  return st;
}

/* The sampling pass alone over the step's logits (a masked session's: llm_session_step_submit), recorded once. */
static wgllm_status ensure_sample_only(llm_session *s) {
  if (s->sample_only) return WGLLM_OK;
  gpu_recorder *rec = gpu_recorder_create(s->gpu, 1);
  if (!rec) return llm_err_set(&s->err, WGLLM_ERR_OUT_OF_MEMORY, "out of host memory");
  s->step_recordings++;
  gpu_view logits = gpu_whole(s->step_scratch.logits);
  wgllm_status st = record_filter(s, rec, logits);
  if (!st)
    st = op_sample(rec, &s->sampler, logits, gpu_whole(s->sampler_state), gpu_whole(s->step_scratch.ids),
                   gpu_whole(s->sampler_work), s->m->hp.n_vocab);
  if (!st) st = record_logprobs(s, rec, gpu_whole(s->step_scratch.ids));
  if (st) {
    llm_err_set(&s->err, st, "recording the sampling pass: %s", gpu_recorder_error(rec));
    gpu_recorder_free(rec);
    return st;
  }
  s->sample_only = rec;
  return WGLLM_OK;
}

/* The forward pass of the step at position p (its input id the one sampled last, on the GPU), without the sampler:
   a masked session's, queued ahead of its mask (fwd_ahead). */
static wgllm_status submit_forward(llm_session *s, uint32_t p) {
  wgllm_status st = llm_session_reserve(s, p + 1);
  if (st) return st;
  uint32_t b = llm_bucket_of(s, p);
  st = record_step(s, b, 0, &s->plain[b]);
  if (st) return st;
  gpu_write(s->gpu, s->step_scratch.pos, 0, &p, 4); /* queue-ordered: each submit sees its own position */
  if (s->ids_stale) { /* the last token came from a batched step, which samples into its own buffer */
    uint32_t u = (uint32_t)s->last_sampled;
    gpu_write(s->gpu, s->step_scratch.ids, 0, &u, 4);
    s->ids_stale = 0;
  }
  st = gpu_recorder_run(s->plain[b]);
  if (st) return llm_err_set(&s->err, st, "decode step: %s", gpu_recorder_error(s->plain[b]));
  s->last_step = s->plain[b];
  s->fwd_ahead = 1;
  return WGLLM_OK;
}

wgllm_status llm_session_step_submit(llm_session *s) {
  llm_err_clear(&s->err);
  if (!s->has_sampler) {
    return llm_err_set(&s->err, WGLLM_ERR_INVALID_ARG, "llm_session_step_submit: no sampler set");
  }
  if (s->evicted) {
    return llm_err_set(&s->err, WGLLM_ERR_INVALID_ARG, "llm_session_step_submit: the session is evicted (restore it)");
  }
  if (check_no_batch(s, "llm_session_step_submit")) return s->err.status;
  if (s->in_flight >= LLM_MAX_IN_FLIGHT) {
    return llm_err_set(&s->err, WGLLM_ERR_INVALID_ARG, "llm_session_step_submit: %d steps already queued",
                       s->in_flight);
  }
  uint32_t p = s->n_past + (uint32_t)s->in_flight;
  if (p + 1 > s->opt.ctx) {
    return llm_err_set(&s->err, WGLLM_ERR_INVALID_ARG, "the context of %u tokens is full", s->opt.ctx);
  }
  if (!s->readback) {
    s->readback = gpu_readback_create(s->gpu, 4, LLM_MAX_IN_FLIGHT + 1, "token readback", &s->err);
    if (!s->readback) return s->err.status;
  }
  int slot;
  wgllm_status st;
  gpu_recorder *step;
  if (s->masked) { /* the forward pass (unless queued ahead), the sampling pass, the next forward pass ahead */
    if (!s->fwd_ahead && (st = submit_forward(s, p))) return st;
    if ((st = ensure_sample_only(s))) return st;
    step = s->sample_only;
  } else {
    st = llm_session_reserve(s, p + 1);
    if (st) return st;
    step = llm_session_step(s, p);
    if (!step) return s->step_status;
    gpu_write(s->gpu, s->step_scratch.pos, 0, &p, 4); /* queue-ordered: each submit sees its own position */
    if (s->ids_stale) { /* the last token came from a batched step, which samples into its own buffer */
      uint32_t u = (uint32_t)s->last_sampled;
      gpu_write(s->gpu, s->step_scratch.ids, 0, &u, 4);
      s->ids_stale = 0;
    }
  }
  s->fwd_ahead = 0;
  s->last_step = step;
  st = s->lp_on ? gpu_recorder_run_readback(step, s->lp_readback, gpu_whole(s->lp_out), &slot)
                : gpu_recorder_run_readback(step, s->readback, gpu_whole(s->step_scratch.ids), &slot);
  if (st) {
    return llm_err_set(&s->err, st, "decode step: %s", gpu_recorder_error(step));
  }
  s->slots[s->in_flight++] = slot;
  /* the next step's forward pass now, while the CPU reads this token back and computes the next mask (dropped by
     llm_session_step_drain where the generation ends here) */
  if (s->masked && p + 2 <= s->opt.ctx && (st = submit_forward(s, p + 1))) {
    llm_session_step_drain(s); /* this step's token is lost with it: the caller fails */
    return st;
  }
  return WGLLM_OK;
}

wgllm_status llm_session_step_collect(llm_session *s, int32_t *token) {
  if (!s->in_flight) {
    return llm_err_set(&s->err, WGLLM_ERR_INVALID_ARG, "llm_session_step_collect: nothing queued");
  }
  uint32_t t = 0;
  wgllm_status st = s->lp_on ? gpu_readback_wait(s->lp_readback, s->slots[0], s->lp_last, &s->err)
                             : gpu_readback_wait(s->readback, s->slots[0], &t, &s->err);
  if (s->lp_on) t = s->lp_last[0];
  memmove(s->slots, s->slots + 1, (size_t)(--s->in_flight) * sizeof s->slots[0]);
  if (!st && t >= s->m->hp.n_vocab) {
    st = llm_err_set(&s->err, WGLLM_ERR_INTERNAL, "sampler returned token %u outside the vocabulary of %u", t,
                     s->m->hp.n_vocab);
  }
  if (st) return st;
  llm_session_fed_decoded(s, s->last_sampled); /* the step fed the previous token */
  s->last_sampled = (int32_t)t;
  *token = (int32_t)t;
  return WGLLM_OK;
}

wgllm_status llm_session_step_drain(llm_session *s) {
  wgllm_status st = WGLLM_OK;
  while (s->in_flight) {
    uint32_t t[LLM_LP_WORDS];
    wgllm_status w = gpu_readback_wait(s->lp_on ? s->lp_readback : s->readback, s->slots[0], t, &s->err);
    if (w && !st) st = w;
    memmove(s->slots, s->slots + 1, (size_t)(--s->in_flight) * sizeof s->slots[0]);
  }
  s->fwd_ahead = 0; /* a forward pass queued ahead: its cache row is past n_past, its reservation dropped below */
  /* the dropped steps advanced the GPU-side input id: put back the last collected token */
  uint32_t u = (uint32_t)s->last_sampled;
  if (s->step_scratch.ids) gpu_write(s->gpu, s->step_scratch.ids, 0, &u, 4);
  s->ids_stale = 0;
  pool_truncate(s, s->n_past); /* the dropped steps' reservations */
  return st;
}

wgllm_status llm_session_step_sample(llm_session *s, int32_t *token) {
  wgllm_status st = llm_session_step_submit(s);
  if (!st) st = llm_session_step_collect(s, token);
  return st;
}
