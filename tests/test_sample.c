/* Sampler conformance: the GPU sampler against its CPU reference (same thresholds and RNG) for greedy,
   temperature, top-k, top-p, min-p and repetition penalty on several vocabulary sizes; every GPU draw must lie
   in the reference's allowed set, nearly all must equal the reference's draw (sums differ in rounding only at
   boundaries), the empirical distribution must match the softmax, and a seed must reproduce its sequence. */
#include "harness.h"
#include "ops.h"
#include "ref.h"
#include <math.h>
#include <stdlib.h>
#include <string.h>

static th_rng rng = {99};

typedef struct sampler_rig {
  gpu_buffer *logits, *state, *out, *work;
  gpu_recorder *rec;
  uint32_t V;
} sampler_rig;

static void rig_init(sampler_rig *r, const float *logits, uint32_t V, const op_sample_params *sp, const uint32_t *ring,
                     uint32_t n_ring, uint32_t counter) {
  r->V = V;
  r->logits = th_upload(logits, V * 4);
  uint32_t st[4 + OP_SAMPLE_RING_MAX] = {0};
  st[0] = counter;
  st[1] = n_ring;
  st[2] = sp->ring_cap ? n_ring % sp->ring_cap : 0;
  for (uint32_t i = 0; i < n_ring; i++)
    st[4 + i] = ring[i];
  r->state = th_upload(st, sizeof st);
  r->out = th_poisoned(4);
  r->work = th_poisoned(op_sample_work_bytes());
  r->rec = gpu_recorder_create(th_gpu(), 1);
  CHECK(op_sample(r->rec, sp, gpu_whole(r->logits), gpu_whole(r->state), gpu_whole(r->out), gpu_whole(r->work), V) ==
            WGLLM_OK,
        "record: %s", gpu_recorder_error(r->rec));
}

static uint32_t rig_draw(sampler_rig *r) {
  CHECK(gpu_recorder_run(r->rec) == WGLLM_OK, "run: %s", gpu_recorder_error(r->rec));
  uint32_t t;
  th_download(r->out, &t, 4);
  return t;
}

static void rig_free(sampler_rig *r) {
  gpu_recorder_free(r->rec);
  gpu_buffer_destroy(th_gpu(), r->logits);
  gpu_buffer_destroy(th_gpu(), r->state);
  gpu_buffer_destroy(th_gpu(), r->out);
  gpu_buffer_destroy(th_gpu(), r->work);
}

/* draws n times from one recording (the counter advances on the GPU) and checks each against the reference */
static void check_draws(const char *what, const float *logits, uint32_t V, const op_sample_params *sp, int n) {
  sampler_rig r;
  rig_init(&r, logits, V, sp, NULL, 0, 1000);
  float *work = malloc(V * 4);
  uint8_t *allowed = malloc(V);
  int same = 0, outside = 0;
  for (int i = 0; i < n; i++) {
    uint32_t got = rig_draw(&r);
    memcpy(work, logits, V * 4);
    uint32_t want = ref_sample(work, V, sp->temperature, sp->top_k, sp->top_p, sp->min_p, 1.0f, NULL, 0, sp->seed,
                               1000 + (uint32_t)i, allowed);
    if (got >= V || !allowed[got]) outside++;
    same += got == want;
  }
  int need = n - (n + 49) / 50; /* >= 98% identical */
  CHECK(outside == 0, "%s: %d draws outside the allowed set", what, outside);
  CHECK(same >= need, "%s: only %d of %d draws equal the reference", what, same, n);
  printf("  %-44s %d/%d equal to the reference, %d outside\n", what, same, n, outside);
  rig_free(&r);
  free(work);
  free(allowed);
}

int main(void) {
  th_gpu();
  uint32_t sizes[] = {1, 5, 320, 1000, 32003, 128256};
  for (int si = 0; si < 6; si++) {
    uint32_t V = sizes[si];
    float *x = malloc(V * 4);
    for (uint32_t i = 0; i < V; i++)
      x[i] = th_uniform(&rng, -6, 6) + (th_u32(&rng) % 50 == 0 ? 6.0f : 0.0f);
    if (V > 3) x[V / 3] = x[V / 2] = 14.0f; /* a tie at the top: greedy takes the lower index */
    int n = V > 30000 ? 12 : 60;
    char what[96];
    op_sample_params g = {0, 1, 0, 1, 0, 0, 7};
    sampler_rig r;
    rig_init(&r, x, V, &g, NULL, 0, 0);
    uint32_t got = rig_draw(&r), want = ref_sample(x, V, 0, 0, 1, 0, 1, NULL, 0, 7, 0, NULL);
    CHECK(got == want, "greedy V=%u: got %u want %u", V, got, want);
    rig_free(&r);
    op_sample_params cases[] = {{1.0f, 1.0f, 0.0f, 1.0f, 0, 0, 11},    {0.7f, 1.0f, 0.0f, 1.0f, 40, 0, 12},
                                {1.0f, 0.9f, 0.0f, 1.0f, 0, 0, 13},    {1.3f, 1.0f, 0.05f, 1.0f, 0, 0, 14},
                                {0.8f, 0.95f, 0.02f, 1.0f, 50, 0, 15}, {1.0f, 1.0f, 0.0f, 1.0f, 1, 0, 16}};
    for (int c = 0; c < 6; c++) {
      snprintf(what, sizeof what, "V=%u t=%.2g k=%u p=%.2g minp=%.2g", V, cases[c].temperature, cases[c].top_k,
               cases[c].top_p, cases[c].min_p);
      check_draws(what, x, V, &cases[c], n);
    }
    free(x);
  }

  /* LLM-like logits over a large vocabulary: a few hundred plausible tokens, the rest far below, so the draw
     runs over the collected candidates (sorted by token) instead of the whole vocabulary */
  {
    uint32_t V = 128256;
    float *x = malloc(V * 4);
    for (uint32_t i = 0; i < V; i++)
      x[i] = (th_u32(&rng) % 300 == 0) ? th_uniform(&rng, -4, 6) : th_uniform(&rng, -60, -40);
    op_sample_params cs2[] = {
        {1.0f, 1.0f, 0.0f, 1.0f, 0, 0, 31}, {0.8f, 0.9f, 0.0f, 1.0f, 40, 0, 32}, {1.2f, 1.0f, 0.05f, 1.0f, 0, 0, 33}};
    for (int c = 0; c < 3; c++) {
      char what[96];
      snprintf(what, sizeof what, "LLM-like V=%u t=%.2g k=%u p=%.2g minp=%.2g", V, cs2[c].temperature, cs2[c].top_k,
               cs2[c].top_p, cs2[c].min_p);
      check_draws(what, x, V, &cs2[c], 40);
    }
    free(x);
  }

  /* a flat distribution: more than 2048 candidates within 30 nats, so the draw falls back to the whole vocabulary */
  {
    uint32_t V = 5000;
    float *x = malloc(V * 4);
    for (uint32_t i = 0; i < V; i++)
      x[i] = th_uniform(&rng, -1, 1);
    op_sample_params sp = {1.0f, 0.9f, 0.0f, 1.0f, 100, 0, 21};
    check_draws("flat V=5000 (candidate overflow) k=100 p=0.9", x, V, &sp, 30);
    free(x);
  }

  /* repetition penalty over a GPU ring, then greedy: exact */
  {
    uint32_t V = 1000;
    float *x = malloc(V * 4), *w = malloc(V * 4);
    for (uint32_t i = 0; i < V; i++)
      x[i] = th_uniform(&rng, -3, 3);
    x[10] = 5.0f;
    x[20] = 4.9f;
    x[30] = -0.5f;
    uint32_t ring[] = {10, 30, 10, 77};
    op_sample_params sp = {0.0f, 1.0f, 0.0f, 1.5f, 0, 64, 3};
    sampler_rig r;
    rig_init(&r, x, V, &sp, ring, 4, 0);
    uint32_t got = rig_draw(&r);
    memcpy(w, x, V * 4);
    uint32_t want = ref_sample(w, V, 0, 0, 1, 0, 1.5f, ring, 4, 3, 0, NULL);
    CHECK(got == want && got == 20, "penalty + greedy: got %u want %u (20)", got, want);
    float pen[1000];
    th_download(r.logits, pen, sizeof pen);
    CHECK(fabsf(pen[10] - 5.0f / 1.5f) < 1e-6f && fabsf(pen[30] - (-0.75f)) < 1e-6f,
          "penalised once per distinct token: %g %g", pen[10], pen[30]);
    uint32_t st[12];
    th_download(r.state, st, sizeof st);
    CHECK(st[0] == 1 && st[1] == 5 && st[3] == 20 && st[4 + 4] == 20,
          "state after a draw: counter %u fill %u last %u ring[4] %u", st[0], st[1], st[3], st[8]);
    rig_free(&r);
    free(x);
    free(w);
  }

  /* distribution: 5 tokens, temperature 1, many draws */
  {
    float x[5] = {1.0f, 0.5f, 0.0f, -1.0f, 2.0f};
    double z = 0, pr[5];
    for (int i = 0; i < 5; i++)
      z += exp(x[i]);
    for (int i = 0; i < 5; i++)
      pr[i] = exp(x[i]) / z;
    op_sample_params sp = {1.0f, 1.0f, 0.0f, 1.0f, 0, 0, 2024};
    sampler_rig r;
    rig_init(&r, x, 5, &sp, NULL, 0, 0);
    int cnt[5] = {0}, N = 1500;
    for (int i = 0; i < N; i++) {
      uint32_t t = rig_draw(&r);
      if (t < 5) cnt[t]++;
    }
    for (int i = 0; i < 5; i++)
      CHECK(fabs(cnt[i] / (double)N - pr[i]) < 0.035, "token %d drawn %.3f, softmax %.3f", i, cnt[i] / (double)N,
            pr[i]);
    printf("  distribution over 5 tokens: %.3f %.3f %.3f %.3f %.3f vs %.3f %.3f %.3f %.3f %.3f\n", cnt[0] / (double)N,
           cnt[1] / (double)N, cnt[2] / (double)N, cnt[3] / (double)N, cnt[4] / (double)N, pr[0], pr[1], pr[2], pr[3],
           pr[4]);
    rig_free(&r);
    /* the same seed and counter reproduce the sequence; another seed does not */
    uint32_t a[20], b[20], c[20];
    for (int pass = 0; pass < 3; pass++) {
      op_sample_params s2 = sp;
      if (pass == 2) s2.seed = 2025;
      rig_init(&r, x, 5, &s2, NULL, 0, 0);
      for (int i = 0; i < 20; i++)
        (pass == 0 ? a : pass == 1 ? b : c)[i] = rig_draw(&r);
      rig_free(&r);
    }
    CHECK(!memcmp(a, b, sizeof a), "same seed reproduces");
    CHECK(memcmp(a, c, sizeof a), "another seed differs");
  }
  th_gpu_done();
  return th_finish("test_sample");
}
