/* Sampler conformance: the GPU sampler against its CPU reference (same thresholds and RNG) for greedy,
   temperature, top-k, top-p, min-p and the repetition, presence and frequency penalties on several vocabulary
   sizes; every GPU draw must lie in the reference's allowed set, nearly all must equal the reference's draw (sums
   differ in rounding only at boundaries), the GPU's threshold must keep the same tokens as the reference's
   (exactly, or up to the boundary key's ties with top-p), the empirical distribution must match the softmax, and
   a seed must reproduce its sequence. Flat logits (all equal, a few distinct values ulps apart, every token within 30
   nats of the best) over a Llama-3-sized vocabulary check that the exact multi-workgroup selects need no
   whole-vocabulary fallback: the recorded passes depend only on the settings. */
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

static uint32_t key_of(float f) {
  uint32_t u;
  memcpy(&u, &f, 4);
  return (u & 0x80000000u) ? ~u : (u | 0x80000000u);
}

/* tokens the GPU's last threshold keeps, against the reference's allowed set within the 30-nat cut (the GPU
   never keeps tokens below it): returns how many tokens differ */
static uint32_t kept_mismatch(sampler_rig *r, const float *logits, const op_sample_params *sp, const uint8_t *allowed,
                              uint32_t *n_gpu, uint32_t *n_ref) {
  uint32_t V = r->V, thr, kmax = 0, bad = 0;
  gpu_buffer *w = r->work;
  uint32_t words[OP_SAMPLE_WORK_THRESHOLD + 1];
  th_download(w, words, sizeof words);
  thr = words[OP_SAMPLE_WORK_THRESHOLD];
  for (uint32_t i = 0; i < V; i++) {
    uint32_t k = key_of(logits[i] / sp->temperature);
    if (k > kmax) kmax = k;
  }
  uint32_t mb = (kmax & 0x80000000u) ? (kmax & 0x7fffffffu) : ~kmax;
  float m;
  memcpy(&m, &mb, 4);
  uint32_t cut = key_of(m - 30.0f);
  *n_gpu = *n_ref = 0;
  for (uint32_t i = 0; i < V; i++) {
    uint32_t k = key_of(logits[i] / sp->temperature);
    int g = k >= thr, want = allowed[i] && k >= cut;
    *n_gpu += g;
    *n_ref += want;
    bad += g != want;
  }
  return bad;
}

/* at most this many tokens may differ between the GPU's kept set and the reference's: none, except that with
   top-p a sum rounded differently may move the boundary by a key (the tokens that share it) */
static uint32_t kept_tolerance(const op_sample_params *sp, uint32_t n_ref) {
  return sp->top_p > 0 && sp->top_p < 1 ? n_ref / 20 + 2 : 0;
}

/* draws n times from one recording (the counter advances on the GPU) and checks each against the reference, the
   recorded passes (only the settings choose them) and the tokens the GPU's threshold keeps */
static void check_draws(const char *what, const float *logits, uint32_t V, const op_sample_params *sp, int n) {
  sampler_rig r;
  rig_init(&r, logits, V, sp, NULL, 0, 1000);
  size_t nd = gpu_recorder_count(r.rec);
  CHECK(nd == op_sample_dispatches(sp, V) && nd <= 9, "%s: %zu dispatches recorded, %u expected", what, nd,
        op_sample_dispatches(sp, V));
  for (size_t i = 0; i < nd; i++) {
    const char *nm = gpu_recorder_record_name(r.rec, i);
    CHECK(!strcmp(nm, i + 1 == nd   ? "sample/f32"
                      : i == 0      ? "sample_prep/max"
                      : i + 2 == nd ? "sample_prep/mass"
                                    : "sample_prep/level"),
          "%s: dispatch %zu is %s", what, i, nm);
  }
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
  uint32_t ng, nr, bad = kept_mismatch(&r, logits, sp, allowed, &ng, &nr);
  CHECK(bad <= kept_tolerance(sp, nr), "%s: the GPU keeps %u tokens, the reference %u: %u differ", what, ng, nr, bad);
  printf("  %-52s %d/%d equal to the reference, %d outside, kept %u/%u (%u differ)\n", what, same, n, outside, ng, nr,
         bad);
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
    op_sample_params g = {
        .temperature = 0, .top_p = 1, .min_p = 0, .rep_penalty = 1, .top_k = 0, .ring_cap = 0, .seed = 7};
    sampler_rig r;
    rig_init(&r, x, V, &g, NULL, 0, 0);
    uint32_t got = rig_draw(&r), want = ref_sample(x, V, 0, 0, 1, 0, 1, NULL, 0, 7, 0, NULL);
    CHECK(got == want, "greedy V=%u: got %u want %u", V, got, want);
    rig_free(&r);
    op_sample_params cases[] = {
        {.temperature = 1.0f, .top_p = 1.0f, .min_p = 0.0f, .rep_penalty = 1.0f, .top_k = 0, .ring_cap = 0, .seed = 11},
        {.temperature = 0.7f,
         .top_p = 1.0f,
         .min_p = 0.0f,
         .rep_penalty = 1.0f,
         .top_k = 40,
         .ring_cap = 0,
         .seed = 12},
        {.temperature = 1.0f, .top_p = 0.9f, .min_p = 0.0f, .rep_penalty = 1.0f, .top_k = 0, .ring_cap = 0, .seed = 13},
        {.temperature = 1.3f,
         .top_p = 1.0f,
         .min_p = 0.05f,
         .rep_penalty = 1.0f,
         .top_k = 0,
         .ring_cap = 0,
         .seed = 14},
        {.temperature = 0.8f,
         .top_p = 0.95f,
         .min_p = 0.02f,
         .rep_penalty = 1.0f,
         .top_k = 50,
         .ring_cap = 0,
         .seed = 15},
        {.temperature = 1.0f,
         .top_p = 1.0f,
         .min_p = 0.0f,
         .rep_penalty = 1.0f,
         .top_k = 1,
         .ring_cap = 0,
         .seed = 16}};
    for (int c = 0; c < 6; c++) {
      snprintf(what, sizeof what, "V=%u t=%.2g k=%u p=%.2g minp=%.2g", V, cases[c].temperature, cases[c].top_k,
               cases[c].top_p, cases[c].min_p);
      check_draws(what, x, V, &cases[c], n);
    }
    free(x);
  }

  /* LLM-like logits over a large vocabulary: a few hundred plausible tokens, the rest far below the 30-nat cut */
  {
    uint32_t V = 128256;
    float *x = malloc(V * 4);
    for (uint32_t i = 0; i < V; i++)
      x[i] = (th_u32(&rng) % 300 == 0) ? th_uniform(&rng, -4, 6) : th_uniform(&rng, -60, -40);
    op_sample_params cs2[] = {
        {.temperature = 1.0f, .top_p = 1.0f, .min_p = 0.0f, .rep_penalty = 1.0f, .top_k = 0, .ring_cap = 0, .seed = 31},
        {.temperature = 0.8f,
         .top_p = 0.9f,
         .min_p = 0.0f,
         .rep_penalty = 1.0f,
         .top_k = 40,
         .ring_cap = 0,
         .seed = 32},
        {.temperature = 1.2f,
         .top_p = 1.0f,
         .min_p = 0.05f,
         .rep_penalty = 1.0f,
         .top_k = 0,
         .ring_cap = 0,
         .seed = 33}};
    for (int c = 0; c < 3; c++) {
      char what[96];
      snprintf(what, sizeof what, "LLM-like V=%u t=%.2g k=%u p=%.2g minp=%.2g", V, cs2[c].temperature, cs2[c].top_k,
               cs2[c].top_p, cs2[c].min_p);
      check_draws(what, x, V, &cs2[c], 40);
    }
    free(x);
  }

  /* a flat distribution over a vocabulary that is not a whole number of blocks: 5000 tokens within 30 nats */
  {
    uint32_t V = 5000;
    float *x = malloc(V * 4);
    for (uint32_t i = 0; i < V; i++)
      x[i] = th_uniform(&rng, -1, 1);
    op_sample_params sp = {.temperature = 1.0f,
                           .top_p = 0.9f,
                           .min_p = 0.0f,
                           .rep_penalty = 1.0f,
                           .top_k = 100,
                           .ring_cap = 0,
                           .seed = 21};
    check_draws("flat V=5000 k=100 p=0.9", x, V, &sp, 30);
    free(x);
  }

  /* flat logits over a Llama-3-sized vocabulary, every token within 30 nats of the best (the old sampler fell
     back to one workgroup over the whole vocabulary here): all equal (one key, ties everywhere), 48 distinct
     values one ulp apart (thousands of tokens per key; temperatures 1 and 0.5 divide exactly on any GPU, so the
     keys match the reference's), and continuous draws in [-1, 1] and [-8, 8]. Each setting: top-k only (also
     k over 2048), min-p only, top-p only, the CLI defaults (with min-p) and none. */
  {
    uint32_t V = 128256;
    float *x = malloc(V * 4);
    const char *kinds[] = {"equal", "ulps", "[-1,1]", "[-8,8]"};
    for (int kind = 0; kind < 4; kind++) {
      for (uint32_t i = 0; i < V; i++) {
        if (kind == 0)
          x[i] = 0.37f;
        else if (kind == 1)
          x[i] = 1.0f + (float)(th_u32(&rng) % 48) * 0x1p-23f;
        else
          x[i] = kind == 2 ? th_uniform(&rng, -1, 1) : th_uniform(&rng, -8, 8);
      }
      float t = kind == 1 ? 1.0f : 0.8f, t2 = kind == 1 ? 0.5f : 1.0f;
      op_sample_params cs[] = {
          {.temperature = t, .top_p = 1.0f, .min_p = 0.0f, .rep_penalty = 1.0f, .top_k = 40, .ring_cap = 0, .seed = 41},
          {.temperature = t2,
           .top_p = 1.0f,
           .min_p = 0.0f,
           .rep_penalty = 1.0f,
           .top_k = 3000,
           .ring_cap = 0,
           .seed = 42},
          {.temperature = t, .top_p = 1.0f, .min_p = 0.05f, .rep_penalty = 1.0f, .top_k = 0, .ring_cap = 0, .seed = 43},
          {.temperature = t2, .top_p = 1.0f, .min_p = 0.5f, .rep_penalty = 1.0f, .top_k = 0, .ring_cap = 0, .seed = 44},
          {.temperature = t, .top_p = 0.9f, .min_p = 0.0f, .rep_penalty = 1.0f, .top_k = 0, .ring_cap = 0, .seed = 45},
          {.temperature = t2, .top_p = 0.5f, .min_p = 0.0f, .rep_penalty = 1.0f, .top_k = 0, .ring_cap = 0, .seed = 46},
          {.temperature = t,
           .top_p = 0.95f,
           .min_p = 0.05f,
           .rep_penalty = 1.0f,
           .top_k = 40,
           .ring_cap = 0,
           .seed = 47},
          {.temperature = t2,
           .top_p = 0.9f,
           .min_p = 0.0f,
           .rep_penalty = 1.0f,
           .top_k = V - 1,
           .ring_cap = 0,
           .seed = 48},
          {.temperature = t, .top_p = 1.0f, .min_p = 0.0f, .rep_penalty = 1.0f, .top_k = 0, .ring_cap = 0, .seed = 49}};
      for (int c = 0; c < 9; c++) {
        char what[96];
        snprintf(what, sizeof what, "flat %s V=%u t=%.2g k=%u p=%.2g minp=%.2g", kinds[kind], V, cs[c].temperature,
                 cs[c].top_k, cs[c].top_p, cs[c].min_p);
        check_draws(what, x, V, &cs[c], 10);
      }
    }
    free(x);
  }

  /* one recording replayed while the distribution changes under it (as decode steps do): flat, peaked, all equal
     and flat again; then the repetition penalty with sampling on flat logits, against the reference with the
     same ring. Every draw in the allowed set, the kept set exact (up to the top-p boundary key) */
  {
    uint32_t V = 128256;
    float *x[3], *w = malloc(V * 4);
    uint8_t *allowed = malloc(V);
    for (int d = 0; d < 3; d++) {
      x[d] = malloc(V * 4);
      for (uint32_t i = 0; i < V; i++)
        x[d][i] = d == 0   ? th_uniform(&rng, -1, 1)
                  : d == 1 ? ((th_u32(&rng) % 500 == 0) ? th_uniform(&rng, -2, 7) : th_uniform(&rng, -50, -35))
                           : -1.25f;
    }
    op_sample_params sp = {.temperature = 0.8f,
                           .top_p = 0.95f,
                           .min_p = 0.05f,
                           .rep_penalty = 1.0f,
                           .top_k = 40,
                           .ring_cap = 0,
                           .seed = 51};
    sampler_rig r;
    rig_init(&r, x[0], V, &sp, NULL, 0, 500);
    int order[] = {0, 1, 2, 0, 1, 2, 1, 0}, same = 0, outside = 0;
    uint32_t bad = 0, tol = 0;
    for (int n = 0; n < 8; n++) {
      const float *xs = x[order[n]];
      gpu_write(th_gpu(), r.logits, 0, xs, (uint64_t)V * 4);
      uint32_t got = rig_draw(&r);
      memcpy(w, xs, V * 4);
      uint32_t want = ref_sample(w, V, sp.temperature, sp.top_k, sp.top_p, sp.min_p, 1.0f, NULL, 0, sp.seed,
                                 500 + (uint32_t)n, allowed);
      uint32_t ng, nr;
      bad += kept_mismatch(&r, xs, &sp, allowed, &ng, &nr);
      tol += kept_tolerance(&sp, nr);
      outside += got >= V || !allowed[got];
      same += got == want;
    }
    CHECK(outside == 0 && same >= 7 && bad <= tol, "replayed over changing logits: %d outside, %d/8 equal, %u differ",
          outside, same, bad);
    printf("  one recording over flat/peaked/equal logits: %d/8 equal to the reference, %d outside, %u kept differ\n",
           same, outside, bad);
    rig_free(&r);

    uint32_t ring[64];
    for (int i = 0; i < 64; i++)
      ring[i] = i % 5 == 0 ? 17u : th_u32(&rng) % V; /* duplicates: penalised once */
    same = outside = 0;
    bad = tol = 0;
    for (int n = 0; n < 8; n++) {
      op_sample_params pp = {.temperature = n % 2 ? 1.0f : 0.8f,
                             .top_p = n % 3 ? 0.95f : 1.0f,
                             .min_p = n % 4 ? 0.05f : 0.0f,
                             .rep_penalty = 1.3f,
                             .top_k = n % 2 ? 0 : 40,
                             .ring_cap = 64,
                             .seed = 60 + (uint32_t)n};
      rig_init(&r, x[0], V, &pp, ring, 64, (uint32_t)n);
      uint32_t got = rig_draw(&r);
      memcpy(w, x[0], V * 4);
      uint32_t want = ref_sample(w, V, pp.temperature, pp.top_k, pp.top_p, pp.min_p, pp.rep_penalty, ring, 64, pp.seed,
                                 (uint32_t)n, allowed);
      uint32_t ng, nr;
      bad += kept_mismatch(&r, w, &pp, allowed, &ng, &nr); /* w: the reference's penalised logits */
      tol += kept_tolerance(&pp, nr);
      outside += got >= V || !allowed[got];
      same += got == want;
      rig_free(&r);
    }
    CHECK(outside == 0 && same >= 7 && bad <= tol, "penalty + sampling: %d outside, %d/8 equal, %u differ", outside,
          same, bad);
    printf("  penalty + sampling on flat logits: %d/8 equal to the reference, %d outside, %u kept differ\n", same,
           outside, bad);
    for (int d = 0; d < 3; d++)
      free(x[d]);
    free(w);
    free(allowed);
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
    op_sample_params sp = {
        .temperature = 0.0f, .top_p = 1.0f, .min_p = 0.0f, .rep_penalty = 1.5f, .top_k = 0, .ring_cap = 64, .seed = 3};
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

  /* presence and frequency penalties (OpenAI's; llama.cpp's order: the repetition penalty, then minus frequency
     * count + presence, once per distinct token of the ring). Greedy over 5000 tokens (three blocks, the last
     partial) with rings that hold duplicates and tokens at the blocks' edges: the GPU's penalised logits equal
     the reference's bit for bit (penalties and repetition penalties chosen so every product is exact), and
     the first six cases move the greedy token off the unpenalised argmax, so a penalty applied per occurrence,
     without the count or by the wrong block changes the token too; in the seventh the order decides it (the
     frequency penalty before the repetition penalty of 0.5 would pick 4999). */
  {
    uint32_t V = 5000;
    float *x = malloc(V * 4), *w = malloc(V * 4), *gl = malloc(V * 4);
    for (uint32_t i = 0; i < V; i++)
      x[i] = th_uniform(&rng, -3, 3);
    /* ring tokens near the top (count in the ring of 16): 2047 x3, 4999 x1, 4095 x4, 2048 x2, 0 x1; 3000 is not
       in the ring; 17 (x1) is negative */
    x[2047] = 10.0f;
    x[4999] = 9.5f;
    x[4095] = 9.4f;
    x[2048] = 9.2f;
    x[3000] = 9.0f;
    x[0] = 8.9f;
    x[4096] = 7.8f;
    x[17] = -1.5f;
    uint32_t ring16[] = {2047, 2048, 4095, 2047, 4999, 4095, 0, 2048, 4095, 2047, 4096, 4095, 3001, 17, 3001, 2049};
    uint32_t ring256[256];
    const uint32_t hot[] = {0, 2047, 2048, 4095, 4096, 4999, 3000, 2049};
    for (int i = 0; i < 256; i++)
      ring256[i] = i % 3 ? hot[th_u32(&rng) % 8] : th_u32(&rng) % V;
    struct {
      float rep, presence, frequency;
      int full, changes; /* the 256-token ring; the token moves off the unpenalised argmax */
    } cs[] = {{1.0f, 0.0f, 0.375f, 0, 1},  {1.0f, 1.5f, 0.0f, 0, 1},    {1.0f, -0.5f, -1.0f, 0, 1},
              {2.0f, 0.25f, 0.125f, 0, 1}, {0.5f, -2.0f, 2.0f, 0, 1},   {1.0f, 2.0f, -2.0f, 0, 1},
              {0.5f, 0.0f, 0.375f, 0, 0},  {1.0f, 0.5f, 0.0625f, 1, 0}, {2.0f, -0.75f, -0.03125f, 1, 0}};
    uint32_t plain = ref_sample(memcpy(w, x, V * 4), V, 0, 0, 1, 0, 1, NULL, 0, 5, 0, NULL);
    for (int c = 0; c < 9; c++) {
      const uint32_t *ring = cs[c].full ? ring256 : ring16;
      uint32_t n_ring = cs[c].full ? 256 : 16;
      op_sample_params sp = {.temperature = 0.0f,
                             .top_p = 1.0f,
                             .min_p = 0.0f,
                             .rep_penalty = cs[c].rep,
                             .top_k = 0,
                             .ring_cap = n_ring == 256 ? 256 : 64,
                             .seed = 5};
      sp.presence = cs[c].presence;
      sp.frequency = cs[c].frequency;
      sampler_rig r;
      rig_init(&r, x, V, &sp, ring, n_ring, 0);
      uint32_t got = rig_draw(&r);
      memcpy(w, x, V * 4);
      ref_penalties(w, V, cs[c].rep, cs[c].presence, cs[c].frequency, ring, n_ring);
      uint32_t want = ref_sample(w, V, 0, 0, 1, 0, 1, NULL, 0, 5, 0, NULL);
      th_download(r.logits, gl, (size_t)V * 4);
      uint32_t differ = 0;
      for (uint32_t i = 0; i < V; i++)
        differ += memcmp(&gl[i], &w[i], 4) != 0;
      CHECK(got == want && differ == 0 && (!cs[c].changes || want != plain),
            "presence %g frequency %g repeat %g (ring %u): got %u want %u (unpenalised %u), %u logits differ",
            cs[c].presence, cs[c].frequency, cs[c].rep, n_ring, got, want, plain, differ);
      printf("  presence %-5g frequency %-8g repeat %-3g ring %3u + greedy: token %u (unpenalised %u), %u logits "
             "differ\n",
             cs[c].presence, cs[c].frequency, cs[c].rep, n_ring, got, plain, differ);
      rig_free(&r);
    }
    free(x);
    free(w);
    free(gl);
  }

  /* presence and frequency penalties with sampling on flat logits over a Llama-3-sized vocabulary, with and without
     the repetition penalty, negative ones too (they make the ring's tokens likely): a ring of 64 with duplicates
     and tokens at the blocks' edges, against the reference with the same ring */
  {
    uint32_t V = 128256;
    float *x = malloc(V * 4), *w = malloc(V * 4);
    uint8_t *allowed = malloc(V);
    for (uint32_t i = 0; i < V; i++)
      x[i] = th_uniform(&rng, -1, 1);
    const uint32_t edges[] = {0, 2047, 2048, 4095, 63487, 63488, 126975, 126976, 128255};
    uint32_t ring[64];
    for (int i = 0; i < 64; i++)
      ring[i] = i % 4 == 0 ? edges[th_u32(&rng) % 9] : i % 7 == 1 ? 17u : th_u32(&rng) % V;
    /* the top-k draws (even n) boost the ring's tokens, so they are drawn from the ring's penalised logits */
    const float pres[] = {-1.0f, 0.5f, -0.25f, 1.5f, -2.0f, 2.0f, 0.0f, 0.75f};
    const float freq[] = {-0.5f, 0.25f, -0.125f, 1.0f, 0.5f, -0.125f, -1.5f, 0.0f};
    int same = 0, outside = 0, in_ring = 0;
    uint32_t bad = 0, tol = 0;
    for (int n = 0; n < 8; n++) {
      op_sample_params pp = {.temperature = n % 2 ? 1.0f : 0.8f,
                             .top_p = n % 3 ? 0.95f : 1.0f,
                             .min_p = n % 4 ? 0.05f : 0.0f,
                             .rep_penalty = n % 3 == 2 ? 1.3f : 1.0f,
                             .top_k = n % 2 ? 0 : 40,
                             .ring_cap = 64,
                             .seed = 80 + (uint32_t)n};
      pp.presence = pres[n];
      pp.frequency = freq[n];
      sampler_rig r;
      rig_init(&r, x, V, &pp, ring, 64, (uint32_t)n);
      uint32_t got = rig_draw(&r);
      memcpy(w, x, V * 4);
      ref_penalties(w, V, pp.rep_penalty, pp.presence, pp.frequency, ring, 64);
      uint32_t want =
          ref_sample(w, V, pp.temperature, pp.top_k, pp.top_p, pp.min_p, 1.0f, NULL, 0, pp.seed, (uint32_t)n, allowed);
      uint32_t ng, nr;
      bad += kept_mismatch(&r, w, &pp, allowed, &ng, &nr); /* w: the reference's penalised logits */
      tol += kept_tolerance(&pp, nr);
      outside += got >= V || !allowed[got];
      same += got == want;
      for (int i = 0; i < 64; i++)
        if (ring[i] == got) {
          in_ring++;
          break;
        }
      rig_free(&r);
    }
    CHECK(outside == 0 && same >= 7 && bad <= tol && in_ring >= 3,
          "presence/frequency + sampling: %d outside, %d/8 equal (%d from the ring), %u differ", outside, same, in_ring,
          bad);
    printf("  presence/frequency + sampling on flat logits: %d/8 equal to the reference (%d from the ring), %d "
           "outside, %u kept differ\n",
           same, in_ring, outside, bad);
    free(x);
    free(w);
    free(allowed);
  }

  /* distribution: 5 tokens, temperature 1, many draws */
  {
    float x[5] = {1.0f, 0.5f, 0.0f, -1.0f, 2.0f};
    double z = 0, pr[5];
    for (int i = 0; i < 5; i++)
      z += exp(x[i]);
    for (int i = 0; i < 5; i++)
      pr[i] = exp(x[i]) / z;
    op_sample_params sp = {.temperature = 1.0f,
                           .top_p = 1.0f,
                           .min_p = 0.0f,
                           .rep_penalty = 1.0f,
                           .top_k = 0,
                           .ring_cap = 0,
                           .seed = 2024};
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
