/* Sessions (see session.h): KV cache allocation, chunked prefill through one-shot recordings, and the decode
   step recorded once and replayed. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "session.h"

static void kv_free(gpu_context *gpu, llm_kv_cache *kv) {
  for (uint32_t l = 0; l < kv->n_layer; l++) {
    if (kv->k) gpu_buffer_destroy(gpu, kv->k[l]);
    if (kv->v) gpu_buffer_destroy(gpu, kv->v[l]);
  }
  free(kv->k);
  free(kv->v);
  memset(kv, 0, sizeof *kv);
}

void llm_session_free(llm_session *s) {
  if (!s) return;
  gpu_recorder_free(s->step);
  llm_scratch_release(s->gpu, &s->step_scratch);
  kv_free(s->gpu, &s->kv);
  gpu_buffer_destroy(s->gpu, s->rope_cs);
  free(s);
}

void llm_session_reset(llm_session *s) { s->n_past = 0; }

wgllm_status llm_session_create(llm_model *m, const llm_session_options *opt, llm_session **out, char *err,
                                size_t errlen) {
  *out = NULL;
  llm_session *s = calloc(1, sizeof *s);
  if (!s) { snprintf(err, errlen, "out of host memory"); return WGLLM_ERR_OUT_OF_MEMORY; }
  s->m = m;
  s->gpu = m->gpu;
  if (opt) s->opt = *opt;
  if (!s->opt.ctx) s->opt.ctx = 4096;
  if (!s->opt.prefill_chunk) s->opt.prefill_chunk = 256;
  const llm_hparams *hp = &m->hp;
  int f16 = s->opt.kv_f16;
  if (f16 && hp->head_dim % 4) {
    snprintf(err, errlen, "--kv f16 needs head_dim %% 4 == 0; this model's head_dim is %u", hp->head_dim);
    free(s);
    return WGLLM_ERR_UNSUPPORTED;
  }
  if (f16 && !s->gpu->has_f16) {
    snprintf(s->notice, sizeof s->notice, "notice: f16 KV cache needs shader-f16, which %s did not grant: using f32",
             s->gpu->adapter_name);
    f16 = 0;
  }
  llm_kv_cache *kv = &s->kv;
  kv->layout.n_kv_head = hp->n_head_kv;
  kv->layout.head_dim = hp->head_dim;
  kv->layout.ctx = s->opt.ctx;
  kv->layout.f16 = f16;
  kv->n_layer = hp->n_layer;
  kv->k = calloc(hp->n_layer, sizeof *kv->k);
  kv->v = calloc(hp->n_layer, sizeof *kv->v);
  wgllm_status st = (!kv->k || !kv->v) ? WGLLM_ERR_OUT_OF_MEMORY : WGLLM_OK;
  if (st) snprintf(err, errlen, "out of host memory");
  uint64_t per = (uint64_t)hp->n_head_kv * s->opt.ctx * hp->head_dim * (f16 ? 2 : 4);
  for (uint32_t l = 0; !st && l < hp->n_layer; l++) {
    st = gpu_buffer_create(s->gpu, per, "kv_k", &kv->k[l], err, errlen);
    if (!st) st = gpu_buffer_create(s->gpu, per, "kv_v", &kv->v[l], err, errlen);
    kv->bytes += 2 * per;
  }
  if (!st) st = llm_rope_table(s->gpu, hp, s->opt.ctx, &s->rope_cs, err, errlen);
  if (st) { llm_session_free(s); return st; }
  *out = s;
  return WGLLM_OK;
}

static wgllm_status check_ids(llm_session *s, const int32_t *ids, uint32_t T) {
  for (uint32_t i = 0; i < T; i++)
    if (ids[i] < 0 || (uint32_t)ids[i] >= s->m->hp.n_vocab) {
      snprintf(s->err, sizeof s->err, "token id %d at index %u is out of range (vocabulary of %u)", ids[i], i,
               s->m->hp.n_vocab);
      return WGLLM_ERR_INVALID_ARG;
    }
  if ((uint64_t)s->n_past + T > s->opt.ctx) {
    snprintf(s->err, sizeof s->err, "%u tokens after %u already in the cache exceed the context of %u", T, s->n_past,
             s->opt.ctx);
    return WGLLM_ERR_INVALID_ARG;
  }
  return WGLLM_OK;
}

wgllm_status llm_session_prefill(llm_session *s, const int32_t *ids, uint32_t T, float *logits, int all_rows) {
  s->err[0] = 0;
  if (T == 0) { snprintf(s->err, sizeof s->err, "empty prompt: nothing to prefill"); return WGLLM_ERR_INVALID_ARG; }
  wgllm_status st = check_ids(s, ids, T);
  if (st) return st;
  const llm_hparams *hp = &s->m->hp;
  uint32_t chunk = s->opt.prefill_chunk < T ? s->opt.prefill_chunk : T;
  llm_scratch sc;
  st = llm_scratch_acquire(s->gpu, hp, chunk, all_rows ? chunk : 1, &sc, s->err, sizeof s->err);
  if (st) return st;
  uint32_t *pos = malloc(chunk * sizeof *pos);
  if (!pos) { llm_scratch_release(s->gpu, &sc); snprintf(s->err, sizeof s->err, "out of host memory"); return WGLLM_ERR_OUT_OF_MEMORY; }
  for (uint32_t done = 0; !st && done < T; done += chunk) {
    uint32_t n = T - done < chunk ? T - done : chunk;
    for (uint32_t i = 0; i < n; i++) pos[i] = s->n_past + i;
    gpu_write(s->gpu, sc.ids, 0, ids + done, (uint64_t)n * 4);
    gpu_write(s->gpu, sc.pos, 0, pos, (uint64_t)n * 4);
    int want = logits && (all_rows || done + n == T);
    uint32_t n_logits = all_rows ? n : 1;
    gpu_recorder *rec = gpu_recorder_create(s->gpu, 0);
    if (!rec) { st = WGLLM_ERR_OUT_OF_MEMORY; snprintf(s->err, sizeof s->err, "out of host memory"); break; }
    st = llm_encode_forward(rec, s->m, &s->kv, s->rope_cs, &sc, n, n_logits);
    if (!st) st = gpu_recorder_run(rec);
    if (st) snprintf(s->err, sizeof s->err, "prefill: %s", gpu_recorder_error(rec));
    gpu_recorder_free(rec);
    if (!st && want) {
      float *dst = all_rows ? logits + (uint64_t)done * hp->n_vocab : logits;
      st = gpu_read(s->gpu, sc.logits, 0, dst, (uint64_t)n_logits * hp->n_vocab * 4, s->err, sizeof s->err);
    }
    if (!st) s->n_past += n;
  }
  free(pos);
  llm_scratch_release(s->gpu, &sc);
  return st;
}

wgllm_status llm_session_decode(llm_session *s, int32_t id, float *logits) {
  s->err[0] = 0;
  wgllm_status st = check_ids(s, &id, 1);
  if (st) return st;
  const llm_hparams *hp = &s->m->hp;
  if (!s->step) { /* record the step once; afterwards only the token id and position change */
    st = llm_scratch_acquire(s->gpu, hp, 1, 1, &s->step_scratch, s->err, sizeof s->err);
    if (st) return st;
    s->step = gpu_recorder_create(s->gpu, 1);
    if (!s->step) { snprintf(s->err, sizeof s->err, "out of host memory"); return WGLLM_ERR_OUT_OF_MEMORY; }
    st = llm_encode_forward(s->step, s->m, &s->kv, s->rope_cs, &s->step_scratch, 1, 1);
    if (st) {
      snprintf(s->err, sizeof s->err, "recording the decode step: %s", gpu_recorder_error(s->step));
      gpu_recorder_free(s->step);
      s->step = NULL;
      return st;
    }
  }
  uint32_t u = (uint32_t)id, p = s->n_past;
  gpu_write(s->gpu, s->step_scratch.ids, 0, &u, 4);
  gpu_write(s->gpu, s->step_scratch.pos, 0, &p, 4);
  st = gpu_recorder_run(s->step);
  if (st) { snprintf(s->err, sizeof s->err, "decode step: %s", gpu_recorder_error(s->step)); return st; }
  if (logits) st = gpu_read(s->gpu, s->step_scratch.logits, 0, logits, (uint64_t)hp->n_vocab * 4, s->err, sizeof s->err);
  if (!st) s->n_past++;
  return st;
}
