/* Sliding-window layers keep only their window (plus a prefill chunk) as a ring of slots: over a sequence that
   wraps small rings (one of an odd size, so keys wrap inside kernel blocks and decode chunks), prefill rows, decode
   steps and f16 caches agree with the same model on a ring that never wraps; kv_bytes counts the ring; a rewind within
   the ring's slack keeps the cache and gives the same logits, one further back empties it. On the gemma4_kv_shared
   fixture (sliding window 8, KV sharing) and on gemma3 (window 8, local and global RoPE). A cache whose layer
   would exceed the storage binding limit is refused with the context that fits. */
#include "harness.h"
#include "session.h"
#include <math.h>
#include <stdlib.h>
#include <string.h>

/* decode positions 270..281 cross slot 276 = 2 x 138 of the odd ring, inside a flash-decoding chunk */
enum { CTX = 1024, N = 270, DEC = 12 };

static double row_err(const float *a, const float *b, uint32_t V) {
  double num = 0, den = 0;
  for (uint32_t i = 0; i < V; i++) {
    num += ((double)a[i] - b[i]) * ((double)a[i] - b[i]);
    den += (double)a[i] * a[i];
  }
  return sqrt(num / (den > 0 ? den : 1));
}

/* prefill n ids (all rows) then DEC decode steps; rows [n + DEC][V] */
static float *run(llm_model *m, const llm_session_options *so, const int32_t *ids, uint64_t *kv_bytes) {
  llm_err err = {0};
  llm_session *s = NULL;
  uint32_t V = m->hp.n_vocab;
  if (llm_session_create(m, so, &s, &err)) {
    CHECK(0, "session: %s", err.msg);
    return NULL;
  }
  *kv_bytes = s->kv.bytes;
  float *l = malloc((size_t)(N + DEC) * V * 4);
  CHECK(llm_session_prefill(s, ids, N, l, 1) == WGLLM_OK, "prefill: %s", s->err.msg);
  for (int i = 0; i < DEC; i++)
    CHECK(llm_session_decode(s, ids[N + i], l + (size_t)(N + i) * V) == WGLLM_OK, "decode: %s", s->err.msg);
  llm_session_free(s);
  return l;
}

static void one_model(const char *path) {
  llm_err err = {0};
  llm_model *m = NULL;
  CHECK(llm_model_load(th_gpu(), path, NULL, &m, &err) == WGLLM_OK, "%s: %s", path, err.msg);
  if (!m) return;
  const llm_hparams *hp = &m->hp;
  uint32_t V = hp->n_vocab;
  th_rng rng = {77};
  int32_t ids[N + DEC];
  for (int i = 0; i < N + DEC; i++)
    ids[i] = 3 + (int32_t)(th_u32(&rng) % (V - 3));
  for (int f16 = 0; f16 < 2; f16++) {
    /* small: window 8 + chunk 16 -> the 128-slot minimum; odd: 8 + 130 = 138 slots, not a multiple of any chunk
       length, so keys wrap inside blocks and chunks; big: 8 + 512 slots, never wrapped by 282 positions */
    llm_session_options small = {.ctx = CTX, .kv_f16 = f16, .prefill_chunk = 16};
    llm_session_options odd = {.ctx = CTX, .kv_f16 = f16, .prefill_chunk = 130};
    llm_session_options big = {.ctx = CTX, .kv_f16 = f16, .prefill_chunk = 512};
    uint64_t kb_small = 0, kb_odd = 0, kb_big = 0;
    float *a = run(m, &small, ids, &kb_small), *o = run(m, &odd, ids, &kb_odd), *b = run(m, &big, ids, &kb_big);
    double worst = 0;
    for (int r = 0; a && o && b && r < N + DEC; r++) {
      double e = row_err(b + (size_t)r * V, a + (size_t)r * V, V),
             e2 = row_err(b + (size_t)r * V, o + (size_t)r * V, V);
      if (!(e <= worst)) worst = e;
      if (!(e2 <= worst)) worst = e2;
    }
    /* other prefill chunkings: the same math in another order */
    CHECK(a && o && b && worst < 1e-4, "%s f16=%d: a wrapping ring differs from a linear one by %g", path, f16, worst);
    /* kv_bytes: owning layers, sliding ones at 128, 138 and 520 slots, full ones at CTX */
    uint64_t want_small = 0, want_odd = 0, want_big = 0;
    for (uint32_t l = 0; l < hp->n_layer; l++) {
      if (!llm_layer_owns_kv(hp, l)) continue;
      uint64_t per = 2ull * llm_layer_n_head_kv(hp, l) * llm_layer_head_dim(hp, l) * (f16 ? 2 : 4);
      int w = llm_layer_window(hp, l) > 0;
      want_small += per * (w ? 128 : CTX);
      want_odd += per * (w ? 138 : CTX);
      want_big += per * (w ? 8 + 512 : CTX);
    }
    CHECK(kb_small == want_small && kb_odd == want_odd && kb_big == want_big,
          "%s: kv bytes %llu / %llu / %llu, want %llu / %llu / %llu", path, (unsigned long long)kb_small,
          (unsigned long long)kb_odd, (unsigned long long)kb_big, (unsigned long long)want_small,
          (unsigned long long)want_odd, (unsigned long long)want_big);
    printf("  %-30s f16=%d rings of 128 and 138 vs 520: %.2g; kv bytes %llu / %llu / %llu\n", path, f16, worst,
           (unsigned long long)kb_small, (unsigned long long)kb_odd, (unsigned long long)kb_big);
    /* rewinds on the small ring (slack 128 - 8 = 120): back 100 keeps the cache and reproduces the rows */
    llm_session *s = NULL;
    if (!llm_session_create(m, &small, &s, &err)) {
      float *l = malloc((size_t)V * 4);
      CHECK(llm_session_prefill(s, ids, N, NULL, 0) == WGLLM_OK, "prefill: %s", s->err.msg);
      CHECK(llm_session_rewind(s, N - 100) == N - 100, "a rewind inside the ring's slack keeps the cache");
      CHECK(llm_session_prefill(s, ids + N - 100, 101, l, 0) == WGLLM_OK, "prefill again: %s", s->err.msg);
      if (a) CHECK(row_err(a + (size_t)N * V, l, V) < 1e-4, "rewound ring: row %d differs", N);
      CHECK(llm_session_rewind(s, 10) == 0 && s->n_past == 0, "a rewind past the ring's slack empties the cache");
      free(l);
      llm_session_free(s);
    }
    free(a);
    free(o);
    free(b);
  }
  llm_model_free(m);
}

/* A layer's K or V over the storage binding limit is bound in groups of KV heads (llm_kv_group); where one KV head
   alone is over it, the cache is refused when it is made, naming the layer, the sizes and the context that fits
   (bindings of 64 KiB, as a small device would have: the refusal comes before any allocation). The split caches'
   results are checked end to end by test_models (--max-binding with a long context). */
static void kv_over_binding(void) {
  llm_err err = {0};
  llm_model *m = NULL;
  CHECK(llm_model_load(th_gpu(), "data/models/gemma3", NULL, &m, &err) == WGLLM_OK, "gemma3: %s", err.msg);
  if (!m) return;
  const uint64_t bind = 65536;
  uint64_t per_pos = 0, per_pos_all = 0; /* bytes of K a position: one head, all heads (the largest layer) */
  for (uint32_t l = 0; l < m->hp.n_layer; l++) {
    uint64_t b = 4ull * llm_layer_head_dim(&m->hp, l);
    if (b > per_pos) per_pos = b;
    if (b * llm_layer_n_head_kv(&m->hp, l) > per_pos_all) per_pos_all = b * llm_layer_n_head_kv(&m->hp, l);
  }
  uint32_t fits = (uint32_t)(bind / per_pos), whole = (uint32_t)(bind / per_pos_all);
  CHECK(whole < fits, "gemma3 has more than one KV head (%u, %u)", whole, fits);
  llm_kv_cache kv;
  wgllm_status s = llm_kv_cache_create(th_gpu(), &m->hp, fits + 1, 16, 0, bind, &kv, &err);
  char want[64];
  snprintf(want, sizeof want, "a context of at most %u fits", fits);
  CHECK(s == WGLLM_ERR_UNSUPPORTED && strstr(err.msg, "one KV head is over the storage binding limit") &&
            strstr(err.msg, want),
        "a KV cache over the binding limit: %d, %s", (int)s, err.msg);
  printf("  refused: %s\n", err.msg);
  /* between the two: made, the layers over the limit in groups of one KV head */
  s = llm_kv_cache_create(th_gpu(), &m->hp, fits, 16, 0, bind, &kv, &err);
  CHECK(s == WGLLM_OK, "a KV cache of %u positions: %s", fits, err.msg);
  if (!s) {
    uint32_t split = 0;
    for (uint32_t l = 0; l < m->hp.n_layer; l++) {
      op_kv_layout lay;
      gpu_view k, v;
      uint32_t h0, n = llm_layer_owns_kv(&m->hp, l) ? llm_kv_group(&kv, l, 1, &lay, &k, &v, &h0) : 1;
      if (n > 1) {
        split++;
        CHECK(k.size <= bind && k.offset == k.size && h0 == lay.n_kv_head, "layer %u: group 1 at %llu + %llu", l,
              (unsigned long long)k.offset, (unsigned long long)k.size);
      }
    }
    CHECK(split > 0, "no layer of a %u-position cache was split at %llu-byte bindings", fits, (unsigned long long)bind);
    printf("  %u of %u layers bound in KV-head groups at %u positions\n", split, m->hp.n_layer, fits);
    llm_kv_cache_free(th_gpu(), &kv);
  }
  llm_model_free(m);
}

/* Memory the device does not have is refused before anything is allocated: the weights at load, a KV cache at
   session creation, each with the numbers (the device's memory, from its heaps, set small on the context). */
static void memory_checks(void) {
  gpu_context *g = th_gpu();
  llm_err err = {0};
  CHECK(g->device_memory > 0 && g->n_heaps > 0, "the adapter reports no memory heaps (%u heaps, %llu bytes)",
        g->n_heaps, (unsigned long long)g->device_memory);
  printf("  device memory: %.2f GB in %u heap(s)\n", g->device_memory / 1e9, g->n_heaps);
  uint64_t saved = g->device_memory, live = g->bytes_live;
  llm_model *m = NULL;
  g->device_memory = 100000; /* the gemma3 fixture's weights are about 0.8 MB */
  wgllm_status s = llm_model_load(g, "data/models/gemma3", NULL, &m, &err);
  CHECK(s == WGLLM_ERR_OUT_OF_MEMORY && strstr(err.msg, "weights need") && g->bytes_live == live,
        "a model over the device's memory: %d, %s (%llu bytes left allocated)", (int)s, err.msg,
        (unsigned long long)(g->bytes_live - live));
  printf("  refused: %s\n", err.msg);
  g->device_memory = saved;
  s = llm_model_load(g, "data/models/gemma3", NULL, &m, &err);
  CHECK(s == WGLLM_OK, "gemma3: %s", err.msg);
  if (!m) return;
  llm_kv_cache kv;
  g->device_memory = g->bytes_live + 100000;
  uint64_t before = g->bytes_live;
  s = llm_kv_cache_create(g, &m->hp, 4096, 16, 0, 0, &kv, &err);
  CHECK(s == WGLLM_ERR_OUT_OF_MEMORY && strstr(err.msg, "KV cache: 4096 positions need") && g->bytes_live == before,
        "a KV cache over the device's memory: %d, %s", (int)s, err.msg);
  printf("  refused: %s\n", err.msg);
  g->device_memory = saved;
  llm_model_free(m);
}

int main(void) {
  memory_checks();
  kv_over_binding();
  one_model("data/models/gemma4_kv_shared");
  one_model("data/models/gemma3");
  th_gpu_done();
  return th_finish("test_kv_ring");
}
