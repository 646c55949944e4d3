/* Batched prefill (batch.h's llm_prefill_batch): several sessions' prompt chunks in one pass, each session's
   positions and its last row's index in buffers of the pass, the samplers of the sessions whose prompts end, and
   each session's bookkeeping after it. */
#include "batch.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define POS_ALIGN 64 /* u32: each session's positions start on a 256-byte binding offset */

wgllm_status llm_prefill_batch(llm_session *const *ss, const int32_t *const *ids, const uint32_t *counts, uint32_t n,
                               const int *sample, int32_t *tokens, llm_err *err) {
  if (!n || n > LLM_BATCH_MAX) return llm_err_set(err, WGLLM_ERR_INVALID_ARG, "batched prefill of %u sessions", n);
  llm_model *m = ss[0]->m;
  gpu_context *gpu = ss[0]->gpu;
  const llm_hparams *hp = &m->hp;
  uint64_t rows = 0, pos_words = 0;
  for (uint32_t i = 0; i < n; i++) {
    llm_session *s = ss[i];
    if (s->m != m || s->opt.fast != ss[0]->opt.fast || s->evicted || !counts[i] || (sample[i] && !s->has_sampler))
      return llm_err_set(err, WGLLM_ERR_INVALID_ARG,
                         "batched prefill: session %u is of another model or precision, evicted, empty or without a "
                         "sampler to sample with",
                         i);
    for (uint32_t j = 0; j < i; j++)
      if (ss[j] == s) return llm_err_set(err, WGLLM_ERR_INVALID_ARG, "batched prefill: session %u twice", i);
    wgllm_status st = llm_session_check_ids(s, ids[i], counts[i]);
    if (st) return llm_err_set(err, st, "%s", s->err.msg);
    rows += counts[i];
    pos_words += (counts[i] + POS_ALIGN - 1) / POS_ALIGN * POS_ALIGN;
  }
  if (rows > UINT32_MAX / 4) return llm_err_set(err, WGLLM_ERR_INVALID_ARG, "batched prefill of %llu rows", (unsigned long long)rows);
  uint32_t T = (uint32_t)rows;
  for (uint32_t i = 0; i < n; i++) { /* blocks first: a full pool runs nothing */
    wgllm_status st = llm_session_reserve(ss[i], ss[i]->n_past + counts[i]);
    if (st) return llm_err_set(err, st, "%s", ss[i]->err.msg);
  }
  llm_scratch sc;
  wgllm_status st = llm_scratch_acquire(gpu, hp, T, n, &sc, err);
  if (!st && ss[0]->opt.fast) {
    st = llm_scratch_add_fast(gpu, hp, &sc, err);
    if (st) llm_scratch_release(gpu, &sc);
  }
  if (st) return st;
  gpu_buffer *pos = NULL, *last = NULL;
  int32_t *all = malloc((size_t)T * 4);
  uint32_t *pw = calloc(pos_words, 4), *lr = malloc((size_t)n * 4);
  llm_fwd_seq *seqs = malloc((size_t)n * sizeof *seqs);
  st = all && pw && lr && seqs ? WGLLM_OK : llm_err_set(err, WGLLM_ERR_OUT_OF_MEMORY, "out of host memory");
  if (!st) st = gpu_pool_acquire(gpu, pos_words * 4, "prefill_batch_pos", &pos, err);
  if (!st) st = gpu_pool_acquire(gpu, (uint64_t)n * 4, "prefill_batch_last", &last, err);
  gpu_recorder *rec = NULL;
  if (!st) {
    uint32_t row = 0, word = 0;
    for (uint32_t i = 0; i < n; i++) {
      memcpy(all + row, ids[i], (size_t)counts[i] * 4);
      for (uint32_t t = 0; t < counts[i]; t++)
        pw[word + t] = ss[i]->n_past + t;
      seqs[i] = (llm_fwd_seq){&ss[i]->kv, &ss[i]->rope, row, counts[i], {pos, (uint64_t)word * 4, (uint64_t)counts[i] * 4}};
      lr[i] = row + counts[i] - 1;
      row += counts[i];
      word += (counts[i] + POS_ALIGN - 1) / POS_ALIGN * POS_ALIGN;
    }
    gpu_write(gpu, sc.ids, 0, all, (uint64_t)T * 4);
    gpu_write(gpu, pos, 0, pw, pos_words * 4);
    gpu_write(gpu, last, 0, lr, (uint64_t)n * 4);
    if (!(rec = gpu_recorder_create(gpu, 0))) st = llm_err_set(err, WGLLM_ERR_OUT_OF_MEMORY, "out of host memory");
  }
  if (!st) {
    st = llm_encode_prefill_batch(rec, m, seqs, n, T, gpu_whole(last), &sc, ss[0]->opt.fast);
    uint64_t row_bytes = (uint64_t)hp->n_vocab * 4;
    for (uint32_t i = 0; !st && i < n; i++)
      if (sample[i]) /* the first generated token lands in the step's input id */
        st = op_sample(rec, &ss[i]->sampler, (gpu_view){sc.logits, i * row_bytes, row_bytes},
                       gpu_whole(ss[i]->sampler_state), gpu_whole(ss[i]->step_scratch.ids),
                       gpu_whole(ss[i]->sampler_work), hp->n_vocab);
    if (!st) st = gpu_recorder_run(rec);
    if (st) llm_err_set(err, st, "batched prefill: %s", gpu_recorder_error(rec));
  }
  gpu_recorder_free(rec);
  for (uint32_t i = 0; !st && i < n; i++) {
    llm_session *s = ss[i];
    if (sample[i]) {
      uint32_t t = 0;
      st = gpu_read(gpu, s->step_scratch.ids, 0, &t, 4, err);
      if (!st && t >= hp->n_vocab)
        st = llm_err_set(err, WGLLM_ERR_INTERNAL, "sampler returned token %u outside the vocabulary of %u", t,
                         hp->n_vocab);
      if (!st) {
        tokens[i] = s->last_sampled = (int32_t)t;
        s->ids_stale = 0;
      }
    }
  }
  if (!st)
    for (uint32_t i = 0; i < n; i++) {
      llm_session_prefilled(ss[i], ids[i], counts[i]);
      if (ss[i]->opt.on_prefill) ss[i]->opt.on_prefill(counts[i], counts[i], ss[i]->opt.prefill_user);
    }
  if (pos) gpu_pool_release(gpu, pos);
  if (last) gpu_pool_release(gpu, last);
  llm_scratch_release(gpu, &sc);
  free(all);
  free(pw);
  free(lr);
  free(seqs);
  return st;
}
