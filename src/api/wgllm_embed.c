/* Embeddings through the public API (wgllm_session_embed, wgllm_model_pooling): the pooling asked or the model's,
   the checks with messages that name what is wrong, and the session's cache emptied before and after. */
#include "api_internal.h"
#include "embed.h"

const char *wgllm_pooling_name(wgllm_pooling p) {
  switch (p) {
  case WGLLM_POOLING_DEFAULT:
    return "default";
  case WGLLM_POOLING_MEAN:
    return "mean";
  case WGLLM_POOLING_LAST:
    return "last";
  case WGLLM_POOLING_CLS:
    return "cls";
  }
  return NULL;
}

wgllm_pooling wgllm_model_pooling(const wgllm_model *m, int *normalize) {
  if (normalize) *normalize = m ? m->m->hp.pooling_normalize : 0;
  if (!m) return WGLLM_POOLING_DEFAULT;
  switch (m->m->hp.pooling) {
  case LLM_POOLING_MEAN:
    return WGLLM_POOLING_MEAN;
  case LLM_POOLING_LAST:
    return WGLLM_POOLING_LAST;
  case LLM_POOLING_CLS:
    return WGLLM_POOLING_CLS;
  default:
    return WGLLM_POOLING_DEFAULT;
  }
}

int wgllm_model_has_lm_head(const wgllm_model *m) { return m && !m->m->hp.no_lm_head; }

wgllm_status wgllm_session_embed(wgllm_session *s, const int32_t *ids, size_t n, wgllm_pooling pooling, int normalize,
                                 float *out) {
  if (!s) return WGLLM_ERR_INVALID_ARG;
  llm_err_clear(&s->err);
  const llm_hparams *hp = &s->model->m->hp;
  if (!ids || !out)
    return llm_err_set(&s->err, WGLLM_ERR_INVALID_ARG, "wgllm_session_embed: %s is NULL", ids ? "out" : "ids");
  if (!n) return llm_err_set(&s->err, WGLLM_ERR_INVALID_ARG, "wgllm_session_embed: no tokens (an empty input)");
  if (!wgllm_pooling_name(pooling))
    return llm_err_set(&s->err, WGLLM_ERR_INVALID_ARG,
                       "wgllm_session_embed: pooling %d is none of DEFAULT, MEAN, "
                       "LAST, CLS",
                       (int)pooling);
  if (normalize < -1 || normalize > 1)
    return llm_err_set(&s->err, WGLLM_ERR_INVALID_ARG,
                       "wgllm_session_embed: normalize %d (1: L2, 0: none, -1: the model's)", normalize);
  if (n > s->s->opt.ctx)
    return llm_err_set(&s->err, WGLLM_ERR_INVALID_ARG,
                       "wgllm_session_embed: %zu tokens exceed the session's context of %u", n, s->s->opt.ctx);
  for (size_t i = 0; i < n; i++)
    if (ids[i] < 0 || (uint32_t)ids[i] >= hp->n_vocab)
      return llm_err_set(&s->err, WGLLM_ERR_INVALID_ARG,
                         "wgllm_session_embed: token id %d at index %zu is out of range (vocabulary of %u)", ids[i], i,
                         hp->n_vocab);
  if (s->job && !s->job->job.g.done)
    return llm_err_set(&s->err, WGLLM_ERR_INVALID_ARG,
                       "wgllm_session_embed: the session has a job that is not done (free it or run it to its end "
                       "first)");
  op_pool_mode mode = OP_POOL_LAST; /* DEFAULT on a model that names no pooling: a causal LM's last token */
  if (pooling == WGLLM_POOLING_MEAN)
    mode = OP_POOL_MEAN;
  else if (pooling == WGLLM_POOLING_CLS)
    mode = OP_POOL_FIRST;
  else if (pooling == WGLLM_POOLING_DEFAULT) {
    if (hp->pooling == LLM_POOLING_NONE || hp->pooling == LLM_POOLING_RANK)
      return llm_err_set(&s->err, WGLLM_ERR_UNSUPPORTED,
                         "wgllm_session_embed: the model's pooling is \"%s\" (%s), which wgllm does not compute; ask "
                         "for MEAN, LAST or CLS",
                         llm_pooling_name(hp->pooling),
                         hp->pooling == LLM_POOLING_NONE ? "an embedding per token" : "a reranker's score");
    if (hp->pooling == LLM_POOLING_MEAN) mode = OP_POOL_MEAN;
    if (hp->pooling == LLM_POOLING_CLS) mode = OP_POOL_FIRST;
  }
  if (normalize < 0) normalize = hp->pooling_normalize;
  if (s->s->batch_queued) llm_job_stepper_settle(&s->model->stepper, NULL);
  if (s->s->has_sampler) llm_session_step_drain(s->s); /* generation may have left steps queued */
  llm_session_reset(s->s);
  wgllm_status st = llm_session_embed(s->s, ids, (uint32_t)n, mode, normalize, out);
  if (st) llm_err_set(&s->err, st, "%s", s->s->err.msg);
  llm_session_reset(s->s);
  return st;
}
