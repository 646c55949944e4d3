/* Embeddings (embed.h): the prefill's chunk loop with an embedding's forward pass (llm_forward_opts.hidden: the final
   norm of every row, no LM head), each chunk's rows pooled into an accumulator on the GPU, the last chunk's recording
   finishing the vector (mean's scale, L2 normalisation); one read of n_embd floats at the end. */
#include "embed.h"
#include <stdlib.h>

wgllm_status llm_session_embed(llm_session *s, const int32_t *ids, uint32_t T, op_pool_mode mode, int normalize,
                               float *out) {
  llm_err_clear(&s->err);
  if (T == 0) return llm_err_set(&s->err, WGLLM_ERR_INVALID_ARG, "embed: no tokens");
  if (s->evicted)
    return llm_err_set(&s->err, WGLLM_ERR_INVALID_ARG, "embed: the session is evicted (restore or reset it)");
  wgllm_status st = llm_session_check_ids(s, ids, T);
  if (!st) st = llm_session_reserve(s, s->n_past + T);
  if (st) return st;
  const llm_hparams *hp = &s->m->hp;
  uint32_t D = hp->n_embd, chunk = s->opt.prefill_chunk < T ? s->opt.prefill_chunk : T;
  llm_scratch sc;
  st = llm_scratch_acquire(s->gpu, hp, chunk, 1, &sc, &s->err);
  if (!st && s->opt.fast) {
    st = llm_scratch_add_fast(s->gpu, hp, &sc, &s->err);
    if (st) llm_scratch_release(s->gpu, &sc);
  }
  if (st) return st;
  gpu_buffer *acc = NULL, *vec = NULL; /* [D] f32 each: the pooling so far, the finished vector */
  st = gpu_pool_acquire(s->gpu, (uint64_t)D * 4, "embed_acc", &acc, &s->err);
  if (!st) st = gpu_pool_acquire(s->gpu, (uint64_t)D * 4, "embed_out", &vec, &s->err);
  uint32_t *pos = st ? NULL : malloc(chunk * sizeof *pos);
  if (!st && !pos) st = llm_err_set(&s->err, WGLLM_ERR_OUT_OF_MEMORY, "out of host memory");
  for (uint32_t done = 0; !st && done < T; done += chunk) {
    uint32_t n = T - done < chunk ? T - done : chunk;
    int last = done + n == T;
    for (uint32_t i = 0; i < n; i++)
      pos[i] = s->n_past + i;
    gpu_write(s->gpu, sc.ids, 0, ids + done, (uint64_t)n * 4);
    gpu_write(s->gpu, sc.pos, 0, pos, (uint64_t)n * 4);
    gpu_recorder *rec = gpu_recorder_create(s->gpu, 0);
    if (!rec) {
      st = llm_err_set(&s->err, WGLLM_ERR_OUT_OF_MEMORY, "out of host memory");
      break;
    }
    llm_forward_opts fo = {.attn_grid = LLM_ATTN_GRID_WORST, .fast = s->opt.fast, .prefill = 1, .hidden = 1};
    st = llm_encode_forward(rec, s->m, &s->kv, &s->rope, &sc, n, 1, &fo);
    /* LAST needs only the last chunk's rows, FIRST only the first's */
    if (!st && (mode == OP_POOL_MEAN || (mode == OP_POOL_LAST && last) || (mode == OP_POOL_FIRST && !done)))
      st = op_pool_rows(rec, gpu_whole(sc.xn), gpu_whole(acc), D, n, mode, done == 0);
    if (!st && last)
      st = op_pool_finish(rec, gpu_whole(acc), gpu_whole(vec), D, mode == OP_POOL_MEAN ? 1.0f / (float)T : 1.0f,
                          normalize);
    if (!st) st = gpu_recorder_run(rec);
    if (st) llm_err_set(&s->err, st, "embed: %s", gpu_recorder_error(rec));
    gpu_recorder_free(rec);
    if (!st) llm_session_prefilled(s, ids + done, n);
    if (!st && s->opt.on_prefill) s->opt.on_prefill(done + n, T, s->opt.prefill_user);
  }
  if (!st) st = gpu_read(s->gpu, vec, 0, out, (uint64_t)D * 4, &s->err);
  free(pos);
  if (acc) gpu_pool_release(s->gpu, acc);
  if (vec) gpu_pool_release(s->gpu, vec);
  llm_scratch_release(s->gpu, &sc);
  return st;
}
