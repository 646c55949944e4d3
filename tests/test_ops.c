/* Op conformance suite, table-driven (in the manner of ggml's test-backend-ops): every GPU kernel against its
   CPU reference (src/ref) on seeded random inputs, odd and prime sizes as well as LLM-like ones.

   Cases. build_cases() fills a table of cases; each has a name ("family/params", e.g.
   "rms_norm/n=257,rows=5,in_stride=257,out_stride=260,w_off=0"), its op family, its parameters (a union member
   per family) and a run function. A case's random data is seeded from its name (flash_decode: from the part
   that its modes share), so a filtered run sees the same inputs as the full one. A run function returns
   - PASS: every check held;
   - FAIL: a check failed (a CHECK or th_compare of the harness, counted while the case ran) or a run errored;
   - NOT_SUPPORTED: the case needs what this device lacks (the tuned GEMV kernel without subgroups of one fixed
     size) or the op refuses the shape, which the case verifies (an op accepting a shape it cannot run fails).
   Not supported is counted apart and does not fail the run; a failure does (exit status 1).

   Buffers (see the gbuf comment below): every output, in-place tensor and input lives between guard regions of
   its buffer and is given to the op as a view at an aligned offset; outputs are poisoned (NaN) before the run,
   so an unwritten element fails its comparison, and the guards must still hold their pattern afterwards.

   Command line: test_ops [-f|--filter SUBSTRING]... [--list] [--perf] [-v]
     -f S     run only the cases whose name contains S (repeatable: any of them)
     --list   print the selected case names, one a line, and exit (no GPU needed)
     --perf   time each selected case's recording (warm-up, then repeated submit + wait; GPU timestamps where
              granted) and print time and effective GB/s / GFLOP/s; nothing is compared in this mode
     -v       print every case's result, not only failures and not-supported ones
   WGLLM_TEST_NO_SUBGROUPS=1 / WGLLM_TEST_NO_F16=1 run it as on a device without those features;
   WGLLM_TEST_DAWN_TOGGLES=a,b enables Dawn device toggles (disable_robustness: out-of-bounds accesses are not
   clamped, so the guard zones see them). */
#include "gemm_f16_probe.h"
#include "gemm_i8.h"
#include "harness.h"
#include "ops.h"
#include "ref.h"
#include "tensor_store.h"
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* ---------------------------------------------------------------- per-case state */

static th_rng rng = {12345};
static int g_perf, g_verbose;
static const char *g_case = ""; /* name of the running case */
static double g_bytes, g_flops; /* effective traffic and work of the running case's timed recording (perf) */
static char g_ns[256];          /* why the running case is not supported */

typedef enum case_result { CASE_PASS, CASE_FAIL, CASE_NOT_SUPPORTED } case_result;
static int g_fail0; /* th_failures when the running case started */

/* a run function's verdict: FAIL when any check (CHECK, th_compare, a failed run) failed since the case started */
static case_result verdict(void) { return th_failures != g_fail0 ? CASE_FAIL : CASE_PASS; }

static case_result not_supported(const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(g_ns, sizeof g_ns, fmt, ap);
  va_end(ap);
  return CASE_NOT_SUPPORTED;
}

static void reseed(const char *key) { /* FNV-1a of the key */
  uint64_t h = 1469598103934665603ull;
  for (const char *p = key; *p; p++)
    h = (h ^ (uint8_t)*p) * 1099511628211ull;
  rng.s = h ^ 12345;
}

static void traffic(double bytes, double flops) {
  g_bytes = bytes;
  g_flops = flops;
}

static float *rnd(size_t n, float lo, float hi) {
  float *x = malloc(n * sizeof *x + 4);
  th_fill(&rng, x, n, lo, hi);
  return x;
}

/* Comparisons go through these so that --perf (which replays recordings over their own outputs) compares
   nothing; the strictness is the harness's (th_compare, CHECK), with the case name in the message. */
static void cmp(const char *part, const float *got, const float *want, size_t n, double atol, double rtol) {
  if (g_perf) return;
  char what[320];
  snprintf(what, sizeof what, "%s %s", g_case, part);
  th_compare(what, got, want, n, atol, rtol);
}
#define VERIFY(cond, ...)                                                                                              \
  do {                                                                                                                 \
    if (!g_perf) CHECK(cond, __VA_ARGS__);                                                                             \
  } while (0)

/* ---------------------------------------------------------------- guarded buffers

   A gbuf is one buffer laid out as [pre guard][body][inner tail][post guard]; the op gets the view
   {buf, pre, body + tail}. pre is max(256, minStorageBufferOffsetAlignment) bytes, so the view's offset is legal
   on every device; the post guard is as long. Outputs have an inner tail of TAIL bytes, inputs none.
   - Body of an output: poisoned with BODY_POISON (a NaN as f32 and as both f16 halves), so an element the
     kernel does not write fails its comparison. Inputs and in-place tensors hold their data.
   - Outer guards (pre and post: outside the binding), a position-dependent NaN pattern checked bit for bit.
     They catch the op's host code binding a wrong range (the buffer from 0 instead of the view's offset, "to
     the end" instead of the view's size, a size computed from buf->size), and out-of-bounds writes on a
     device without robust buffer access (the engine creates its devices with Dawn's disable_robustness). They
     cannot catch a kernel indexing past the end of its binding where accesses are checked anyway (Dawn with
     robustness kept, and lavapipe whatever the toggles: docs/TESTING.md): those writes vanish. On inputs
     they turn a misbound read into NaN in the output.
   - Inner guards (inside the binding): the tail past the output's last element, and where a layout leaves
     elements unwritten inside the output (padding columns of a strided RMSNorm, the first columns before an
     output offset, cache rows at other positions), those elements, which must keep the body poison. They
     catch kernel writes past the element count or into the wrong rows/columns (a missing bounds check after
     rounding the grid up, a wrong stride), which robust access does not hide because they are in bounds of
     the binding; they cannot see writes beyond the binding (the outer guards' job, above). */
#define BODY_POISON 0x7fc07fc0u
#define HALF_POISON 0x7fc0u
#define TAIL 64

static uint32_t guard_word(size_t i) { return 0x7fc00000u | (uint32_t)(((uint32_t)i * 2654435761u) >> 10); }

typedef struct gbuf {
  gpu_buffer *buf;
  gpu_view v;                     /* what the op is given: body + inner tail */
  size_t pre, bytes, tail, total; /* bytes: of the body */
  uint32_t *host;                 /* the whole buffer as last downloaded (gb_fetch) */
} gbuf;

static size_t guard_bytes(void) {
  size_t a = th_gpu()->limits.minStorageBufferOffsetAlignment;
  return a > 256 ? a : 256;
}

static gbuf gb_make(const void *data, size_t bytes, size_t tail) {
  gbuf g = {0};
  g.pre = guard_bytes();
  g.bytes = bytes;
  g.tail = tail;
  size_t body4 = (bytes + 3) & ~(size_t)3;
  g.total = (g.pre + body4 + tail + g.pre + 15) & ~(size_t)15;
  uint32_t *img = malloc(g.total);
  for (size_t i = 0; i < g.total / 4; i++)
    img[i] = guard_word(i);
  if (data) {
    memset((char *)img + g.pre, 0, body4);
    memcpy((char *)img + g.pre, data, bytes);
  } else
    for (size_t i = 0; i < body4 / 4; i++)
      img[g.pre / 4 + i] = BODY_POISON;
  g.buf = th_upload(img, g.total);
  g.v = (gpu_view){g.buf, g.pre, body4 + tail};
  free(img);
  return g;
}
static gbuf gb_in(const void *data, size_t bytes) { return gb_make(data, bytes, 0); }
static gbuf gb_io(const void *data, size_t bytes) { return gb_make(data, bytes, TAIL); } /* in-place tensor */
static gbuf gb_out(size_t bytes) { return gb_make(NULL, bytes, TAIL); }                  /* poisoned output */

/* downloads the whole buffer; returns its body */
static void *gb_fetch(gbuf *g) {
  if (!g->host) g->host = malloc(g->total);
  th_download(g->buf, g->host, g->total);
  return (char *)g->host + g->pre;
}

/* Checks that the outer guards and the inner tail still hold their pattern (on the last gb_fetch, or read here). */
static void gb_guards(gbuf *g, const char *part) {
  if (g_perf || !g->buf) return;
  if (!g->host) gb_fetch(g);
  size_t first = g->pre / 4, last = (g->pre + ((g->bytes + 3) & ~(size_t)3)) / 4, bad = 0;
  long long at = 0;
  for (size_t i = 0; i < g->total / 4; i++) {
    if (i == first) i = last;
    if (i >= g->total / 4) break;
    if (g->host[i] != guard_word(i)) {
      if (!bad) at = (long long)(i * 4) - (long long)g->pre;
      bad++;
    }
  }
  CHECK(bad == 0, "%s %s: %zu guard words overwritten, the first at byte %lld of the view (body %zu bytes)", g_case,
        part, bad, at, g->bytes);
}

static void gb_free(gbuf *g) {
  if (g->buf) gpu_buffer_destroy(th_gpu(), g->buf);
  free(g->host);
  memset(g, 0, sizeof *g);
}

/* elements [i0, i0 + n) of a body of 32-bit words that no longer hold the body poison */
static size_t unpoisoned(const void *body, size_t i0, size_t n) {
  const uint32_t *p = body;
  size_t bad = 0;
  for (size_t i = i0; i < i0 + n; i++)
    bad += p[i] != BODY_POISON;
  return bad;
}

/* ---------------------------------------------------------------- running recordings */

static gpu_recorder *rec_new(void) { return gpu_recorder_create(th_gpu(), g_perf); } /* perf: kept, replayable */

static double now_s(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

/* A recording that a comparison depends on but that is not the op under test (a path to compare against). */
static void exec_aux(gpu_recorder *r) { th_run(r); }

/* The recording of the op under test: run once; in perf mode then replayed and timed (label names it when a
   case times more than one). */
static void exec(gpu_recorder *r, const char *label) {
  if (th_run(r) || !g_perf) return;
  gpu_context *ctx = th_gpu();
  llm_err err = {0};
  if (gpu_wait_idle(ctx, &err)) {
    fprintf(stderr, "FAIL %s: wait: %s\n", g_case, err.msg);
    th_failures++;
    return;
  }
  int reps = 0;
  double t0 = now_s(), t = 0;
  do {
    if (th_run(r) || gpu_wait_idle(ctx, &err)) return;
    reps++;
    t = now_s() - t0;
  } while ((t < 0.2 || reps < 5) && reps < 1000);
  double wall_us = 1e6 * t / reps, gpu_us = -1;
  for (int i = 0; i < 3 && ctx->has_timestamps; i++) {
    double ns;
    if (gpu_recorder_time(r, &ns)) break;
    if (gpu_us < 0 || ns / 1e3 < gpu_us) gpu_us = ns / 1e3;
  }
  double us = gpu_us > 0 ? gpu_us : wall_us;
  char rate[96] = "";
  int k = 0;
  if (g_bytes > 0) k += snprintf(rate + k, sizeof rate - k, "  %8.2f GB/s", g_bytes / (us * 1e3));
  if (g_flops > 0) snprintf(rate + k, sizeof rate - k, "  %8.2f GFLOP/s", g_flops / (us * 1e3));
  char gpu[32] = "       -";
  if (gpu_us >= 0) snprintf(gpu, sizeof gpu, "%8.1f", gpu_us);
  printf("perf %-90s wall %9.1f us  gpu %s us  (%4d reps)%s\n", label ? label : g_case, wall_us, gpu, reps, rate);
  fflush(stdout);
}

/* ---------------------------------------------------------------- the case table */

typedef struct tcase tcase;
typedef case_result (*run_fn)(const tcase *c);
struct tcase {
  char name[192];
  const char *family;
  run_fn run;
  union { /* the parameters, by family */
    struct {
      uint32_t n;
      float v;
    } fill;
    struct {
      uint32_t n, rows, slots;
    } step_ids;
    struct {
      uint32_t k, words, a; /* spec_accept: a drafts made to match; copy: words */
    } spec;
    struct {
      uint32_t n, n_bias; /* logit_filter: the vocabulary; 0 bias pairs: the mask variant */
    } lf;
    struct {
      uint32_t D, rows, chunks;  /* rows split over chunks dispatches of op_pool_rows (the last takes the rest) */
      int mode, normalize, zero; /* zero: every input 0 (the norm's floor: zeros out, no NaN) */
    } pool;
    struct {
      int mul; /* run_binary: mul; run_inplace: 0 add, 1 mul, 2 add-scale, 3 softcap */
      uint32_t n, nb;
      float c;
    } bin;
    struct {
      uint32_t n, rows, is, os;
      int w_off;
    } rms;
    struct {
      uint32_t T, H, D, R, S;
      int mode;
    } rope;
    struct {
      uint32_t n, rows;
      float scale;
    } softmax;
    struct {
      uint32_t n, rows;
    } argmax;
    struct {
      op_wtype wt;
      int route; /* 0 op_matvec (the fused GEMV's storages: kernels/gemv.wgsl), 1 op_matmul, 2 op_matvec_generic,
                    3 op_matmul_rows with 128-row tiles; run_linear_mma's own: 0 op_matmul_mma, 1 op_linear_fast,
                    2 and 3 op_matmul_mma_rows 128 and 64, 4.. the f16-operand GEMM's GEMM_F16_VARIANTS[route - 4],
                    OP_ROUTE_FAST_F16 op_linear_fast with the f16 path's scratch */
      uint32_t M, N, K, group;
      int bias;
    } lin;
    struct {
      int which;
    } refuse;
    struct {
      op_wtype wt[3];
      uint32_t rows[3], M, K;
      int route;
    } parts;
    struct {
      op_wtype wt;
      uint32_t T, D, V;
      float scale;
    } emb;
    struct {
      op_act act;
      uint32_t n, rows;
      int fused;
    } glu;
    struct {
      int f16;
      uint32_t T, past, H, KVH, D, window;
      float softcap;
      uint32_t slots; /* run_attention_ring: the ring's slot count */
      int decode;     /* run_attention_ring: flash-decoding (T = 1) instead of the prefill kernel */
      int gqa;        /* run_attention: a case for the KV-head group kernel (not supported where it refuses) */
      /* run_attention: 0 the op's kernel, 1 the workgroup kernel, 2 the untiled subgroup one, 3 the one-head
         tiled one, 4 the op's kernel, then again in dispatches of other token counts (bit for bit) */
      int nosg;
    } attn;
    struct {
      int f16;
      size_t si, li;
      int mode;
    } fd;
    struct {
      op_wtype wt;
      uint32_t N, K;
      op_gemv_plan plan;
      int mode;
      uint32_t nt;    /* tokens (0: 1) */
      uint32_t group; /* run_gemv_q8: q4gsw's group (0: 32) */
    } gemv;
    struct {
      int f16, qkn; /* qkn: the per-head q/k norms folded in too (1: weight offset 0, 2: offset 1) */
      size_t ci, li;
    } fdr;
    struct {
      int f16, mode, rope; /* rope 2: with the q/k norms */
      size_t si;
    } pd;
    struct {
      int f16;
      size_t ci;
    } rkv;
    struct moe_case {
      uint32_t T, E, k, N, K;
      int mode;  /* moe_route: op_moe_norm; moe_linear: op_moe_grouping */
      int scale; /* moe_route: the per-expert scale; moe_linear: biases */
      int pat;   /* moe_route: logits random, integer ties, all equal; moe_lists / moe_linear: MOE_PATS */
      op_wtype wt;
      int glu, act, x_pair; /* moe_combine: glu is the residual add */
      int parts;            /* moe_linear: the weight in this many parts of whole experts (0: as moe_weight decides) */
      /* moe_linear, pairs in the GEMV: x RMS-normed in the kernel (fused); the pairs routed in the kernel from
         logits with op_moe_norm self_route - 1 (0: ids given) */
      int fused_norm, self_route;
      int q8;      /* moe_linear: the fast precision's integer-dot tiles or pairs' GEMV (op_moe_linear_q8 on x quantized
                      by op_quantize_q8, or op_quantize_q8_rows in the layout op_gemv_q8_supports asks for) */
      uint32_t tm; /* moe_lists: pairs a tile (0: OP_MOE_TILE_M); moe_linear, OP_MOE_GROUPS: pairs a group */
    } moe;
  } u;
};

static tcase *g_cases;
static size_t g_ncases, g_capcases;

static tcase *add_case(const char *family, run_fn run, const char *fmt, ...) {
  if (g_ncases == g_capcases) {
    g_capcases = g_capcases ? 2 * g_capcases : 256;
    g_cases = realloc(g_cases, g_capcases * sizeof *g_cases);
  }
  tcase *c = &g_cases[g_ncases++];
  memset(c, 0, sizeof *c);
  c->family = family;
  c->run = run;
  int k = snprintf(c->name, sizeof c->name, "%s/", family);
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(c->name + k, sizeof c->name - k, fmt, ap);
  va_end(ap);
  return c;
}

/* ---------------------------------------------------------------- fill */

static case_result run_fill(const tcase *c) {
  size_t n = c->u.fill.n;
  float v = c->u.fill.v;
  gbuf o = gb_out(n * 4); /* the inner tail: elements past n in the view that must stay poisoned */
  traffic(4.0 * n, 0);
  gpu_recorder *r = rec_new();
  CHECK(op_fill_f32(r, o.v, (uint32_t)n, v) == WGLLM_OK, "%s record: %s", g_case, gpu_recorder_error(r));
  exec(r, NULL);
  gpu_recorder_free(r);
  float *want = malloc(n * 4);
  for (size_t i = 0; i < n; i++)
    want[i] = v;
  cmp("value", gb_fetch(&o), want, n, 0, 0);
  gb_guards(&o, "out");
  gb_free(&o);
  free(want);
  return verdict();
}

static void cases_fill(void) {
  static const uint32_t sizes[] = {1, 7, 1000, 65537};
  static const float values[] = {3.25f, 0.0f, -1e-3f};
  for (size_t si = 0; si < 4; si++)
    for (size_t vi = 0; vi < 3; vi++) {
      tcase *c = add_case("fill", run_fill, "n=%u,v=%g", sizes[si], values[vi]);
      c->u.fill.n = sizes[si];
      c->u.fill.v = values[vi];
    }
}

/* ---------------------------------------------------------------- step_ids */

/* A batched step's input ids: rows given by the CPU (top bit set) and rows read from the previous step's sampled ids
   at a 64-word stride, the padding rows zeroed; out-of-range slots clamp to the last. */
static case_result run_step_ids(const tcase *c) {
  uint32_t n = c->u.step_ids.n, rows = c->u.step_ids.rows, slots = c->u.step_ids.slots, stride = 64;
  uint32_t *src = malloc((n + 1) * 4), *prev = malloc((size_t)slots * stride * 4), *want = malloc(rows * 4);
  for (size_t i = 0; i < (size_t)slots * stride; i++)
    prev[i] = th_u32(&rng) & 0x7fffffffu;
  for (uint32_t i = 0; i < rows; i++) {
    want[i] = 0;
    if (i >= n) continue;
    uint32_t r = th_u32(&rng);
    if (r & 1) { /* known on the CPU */
      src[i] = 0x80000000u | (r >> 2);
      want[i] = r >> 2;
    } else { /* the previous step's row, now and then one past the last slot (clamped) */
      uint32_t slot = (r >> 1) % (slots + 1);
      src[i] = slot;
      want[i] = prev[(slot < slots ? slot : slots - 1) * stride];
    }
  }
  gbuf gs = gb_in(src, (n ? n : 1) * 4), gp = gb_in(prev, (size_t)slots * stride * 4), go = gb_out(rows * 4);
  traffic(4.0 * (2 * n + rows), 0);
  gpu_recorder *r = rec_new();
  CHECK(op_step_ids(r, gs.v, gp.v, stride, slots, go.v, n, rows) == WGLLM_OK, "%s record: %s", g_case,
        gpu_recorder_error(r));
  exec(r, NULL);
  gpu_recorder_free(r);
  const uint32_t *got = gb_fetch(&go);
  uint32_t bad = 0, at = 0;
  for (uint32_t i = 0; i < rows && !g_perf; i++)
    if (got[i] != want[i] && !bad++) at = i;
  CHECK(bad == 0, "%s: %u of %u ids wrong, the first row %u: got %u, want %u", g_case, bad, rows, at, got[at],
        want[at]);
  gb_guards(&go, "ids");
  gb_free(&gs);
  gb_free(&gp);
  gb_free(&go);
  free(src);
  free(prev);
  free(want);
  return verdict();
}

static void cases_step_ids(void) {
  static const uint32_t shapes[][3] = {{1, 2, 1}, {2, 2, 2}, {3, 4, 3}, {12, 16, 16}, {33, 64, 64}, {64, 64, 64}};
  for (size_t k = 0; k < sizeof shapes / sizeof shapes[0]; k++) {
    tcase *c = add_case("step_ids", run_step_ids, "n=%u,rows=%u,slots=%u", shapes[k][0], shapes[k][1], shapes[k][2]);
    c->u.step_ids.n = shapes[k][0];
    c->u.step_ids.rows = shapes[k][1];
    c->u.step_ids.slots = shapes[k][2];
  }
}

/* ---------------------------------------------------------------- copy_u32, spec_accept */

static case_result run_copy_u32(const tcase *c) {
  uint32_t n = c->u.spec.words;
  uint32_t *src = malloc(n * 4);
  for (uint32_t i = 0; i < n; i++)
    src[i] = th_u32(&rng);
  gbuf gs = gb_in(src, n * 4), go = gb_out(n * 4);
  traffic(8.0 * n, 0);
  gpu_recorder *r = rec_new();
  CHECK(op_copy_u32(r, gs.v, go.v, n) == WGLLM_OK, "%s record: %s", g_case, gpu_recorder_error(r));
  exec(r, NULL);
  gpu_recorder_free(r);
  const uint32_t *got = gb_fetch(&go);
  uint32_t bad = 0;
  for (uint32_t i = 0; i < n && !g_perf; i++)
    bad += got[i] != src[i];
  CHECK(bad == 0, "%s: %u of %u words differ", g_case, bad, n);
  gb_guards(&go, "dst");
  gb_free(&gs);
  gb_free(&go);
  free(src);
  return verdict();
}

/* A verify step's verdict: rows' sampled ids at a 64-word stride whose first a match the drafts (the next one
   differs, unless a = k), random snapshots; the count, the tokens, the state restored from snapshot a and the next
   input id against the CPU; the outputs' guards. */
static case_result run_spec_accept(const tcase *c) {
  uint32_t k = c->u.spec.k, words = c->u.spec.words, a = c->u.spec.a, stride = 64, ss = (words + 63) / 64 * 64;
  uint32_t *ids = malloc((k + 1) * 4), *sampled = malloc((size_t)(k + 1) * stride * 4),
           *snap = malloc((size_t)(k + 1) * ss * 4), want[OP_SPEC_MAX + 2];
  for (size_t i = 0; i < (size_t)(k + 1) * stride; i++)
    sampled[i] = th_u32(&rng) % 1000;
  for (size_t i = 0; i < (size_t)(k + 1) * ss; i++) /* rows ss words apart (a binding offset each) */
    snap[i] = th_u32(&rng);
  ids[0] = th_u32(&rng) % 1000;
  for (uint32_t i = 0; i < k; i++) /* draft i + 1 matches row i's pick for i < a, then differs */
    ids[i + 1] = i < a ? sampled[i * stride] : (sampled[i * stride] + 1 + th_u32(&rng) % 7) % 1000;
  want[0] = a;
  for (uint32_t i = 0; i <= k; i++)
    want[1 + i] = sampled[i * stride];
  gbuf gi = gb_in(ids, (k + 1) * 4), gsm = gb_in(sampled, (size_t)(k + 1) * stride * 4),
       gsn = gb_in(snap, (size_t)(k + 1) * ss * 4), gr = gb_out((k + 2) * 4), gst = gb_out(words * 4), gn = gb_out(4);
  traffic(4.0 * (2 * k + 4 + 2 * words), 0);
  gpu_recorder *r = rec_new();
  CHECK(op_spec_accept(r, k, gi.v, gsm.v, stride, gsn.v, words, ss, gr.v, gst.v, gn.v) == WGLLM_OK, "%s record: %s",
        g_case, gpu_recorder_error(r));
  exec(r, NULL);
  gpu_recorder_free(r);
  if (!g_perf) {
    const uint32_t *res = gb_fetch(&gr), *st = gb_fetch(&gst), *nx = gb_fetch(&gn);
    uint32_t bad = 0;
    for (uint32_t i = 0; i < k + 2; i++)
      bad += res[i] != want[i];
    CHECK(bad == 0, "%s: %u of %u result words wrong (count %u, want %u)", g_case, bad, k + 2, res[0], a);
    bad = 0;
    for (uint32_t j = 0; j < words; j++)
      bad += st[j] != snap[(size_t)a * ss + j];
    CHECK(bad == 0, "%s: %u of %u state words are not snapshot %u's", g_case, bad, words, a);
    CHECK(nx[0] == sampled[a * stride], "%s: next id %u, want row %u's %u", g_case, nx[0], a, sampled[a * stride]);
  }
  gb_guards(&gr, "result");
  gb_guards(&gst, "state");
  gb_guards(&gn, "next");
  gbuf *all[] = {&gi, &gsm, &gsn, &gr, &gst, &gn};
  for (size_t i = 0; i < 6; i++)
    gb_free(all[i]);
  free(ids);
  free(sampled);
  free(snap);
  return verdict();
}

static void cases_spec(void) {
  static const uint32_t words[] = {1, 260, 1000};
  for (size_t i = 0; i < 3; i++) {
    tcase *c = add_case("copy_u32", run_copy_u32, "n=%u", words[i]);
    c->u.spec.words = words[i];
  }
  static const uint32_t ka[][3] = {{0, 0, 260}, {1, 0, 260}, {1, 1, 260},  {4, 2, 260},
                                   {4, 4, 7},   {7, 0, 300}, {15, 9, 260}, {63, 63, 5}};
  for (size_t i = 0; i < sizeof ka / sizeof ka[0]; i++) {
    tcase *c = add_case("spec_accept", run_spec_accept, "k=%u,a=%u,words=%u", ka[i][0], ka[i][1], ka[i][2]);
    c->u.spec.k = ka[i][0];
    c->u.spec.a = ka[i][1];
    c->u.spec.words = ka[i][2];
  }
}

/* ---------------------------------------------------------------- logit_filter */

/* Constrained decoding's mask (about a third of the bits set, whole words clear and set, the tail word partial) or a
   logit bias on distinct random ids, some past the vocabulary (skipped), in place on random logits. */
static case_result run_logit_filter(const tcase *c) {
  uint32_t n = c->u.lf.n, nb = c->u.lf.n_bias, words = (n + 31) / 32;
  float *x = rnd(n, -8, 8), *want = malloc((size_t)n * 4);
  uint32_t *mask = malloc((size_t)words * 4), *pairs = malloc((size_t)(nb ? nb : 1) * 8),
           *ids = malloc((nb ? nb : 1) * 4);
  float *bias = malloc((nb ? nb : 1) * 4);
  for (uint32_t w = 0; w < words; w++) {
    uint32_t r = th_u32(&rng);
    mask[w] = w % 7 == 3 ? 0 : w % 7 == 5 ? ~0u : (r & th_u32(&rng)) | (th_u32(&rng) & 1);
  }
  for (uint32_t k = 0; k < nb; k++) {
    /* distinct: spread over the vocabulary, every fifth (and all past n where n < n_bias) beyond it */
    ids[k] = k % 5 == 4 || (nb > n && k >= n) ? n + k : nb > n ? k : (uint32_t)(((uint64_t)k * n) / nb);
    bias[k] = k % 3 == 0 ? -100.0f : (float)(th_u32(&rng) % 2001) / 100.0f - 10.0f;
    pairs[2 * k] = ids[k];
    memcpy(&pairs[2 * k + 1], &bias[k], 4);
  }
  memcpy(want, x, (size_t)n * 4);
  ref_logit_filter(want, n, nb ? NULL : mask, ids, bias, nb);
  gbuf gx = gb_io(x, (size_t)n * 4), gm = nb ? gb_in(pairs, (size_t)nb * 8) : gb_in(mask, (size_t)words * 4);
  traffic(nb ? 12.0 * nb : 8.0 * n + words * 4.0, 0);
  gpu_recorder *r = rec_new();
  wgllm_status st = nb ? op_logit_bias(r, gx.v, gm.v, n, nb) : op_logit_mask(r, gx.v, gm.v, n);
  CHECK(st == WGLLM_OK, "%s record: %s", g_case, gpu_recorder_error(r));
  exec(r, NULL);
  gpu_recorder_free(r);
  const uint32_t *got = gb_fetch(&gx); /* bit for bit: -inf where masked */
  uint32_t bad = 0, at = 0;
  for (uint32_t i = 0; i < n && !g_perf; i++)
    if (memcmp(&got[i], &want[i], 4) && !bad++) at = i;
  CHECK(bad == 0, "%s: %u of %u logits wrong, the first %u: got %08x want %g", g_case, bad, n, at, got[at], want[at]);
  gb_guards(&gx, "logits");
  gb_free(&gx);
  gb_free(&gm);
  free(x);
  free(want);
  free(mask);
  free(pairs);
  free(ids);
  free(bias);
  return verdict();
}

/* A draw's log probabilities: random logits with ties planted among the largest (the lower id first), the drawn id
   random (now and then past n: clamped); the drawn logprob and the top_n against the CPU's, the ids exactly. */
static case_result run_logprobs(const tcase *c) {
  uint32_t n = c->u.lf.n, top = c->u.lf.n_bias, words = 3 + 2 * OP_LOGPROBS_MAX;
  float *x = rnd(n, -10, 10);
  for (uint32_t k = 0; k < 6 && n > 2; k++) /* equal pairs, one of them near the top */
    x[th_u32(&rng) % n] = x[th_u32(&rng) % n] = k ? x[th_u32(&rng) % n] : 11.0f;
  uint32_t drawn = th_u32(&rng) % (n + n / 8 + 1), want_ids[OP_LOGPROBS_MAX];
  float want_lp, want_lps[OP_LOGPROBS_MAX];
  uint32_t want_n = ref_logprobs(x, n, drawn, top, &want_lp, want_ids, want_lps);
  gbuf gx = gb_in(x, (size_t)n * 4), gi = gb_in(&drawn, 4), gw = gb_out(op_logprobs_work_bytes(n)),
       go = gb_out((size_t)words * 4);
  traffic(4.0 * n, 0);
  gpu_recorder *r = rec_new();
  CHECK(op_logprobs(r, gx.v, gi.v, gw.v, go.v, n, top) == WGLLM_OK, "%s record: %s", g_case, gpu_recorder_error(r));
  exec(r, NULL);
  gpu_recorder_free(r);
  if (!g_perf) {
    const uint32_t *o = gb_fetch(&go);
    float lp;
    memcpy(&lp, &o[1], 4);
    CHECK(o[0] == (drawn < n ? drawn : n - 1), "%s: drawn id %u, want %u", g_case, o[0], drawn < n ? drawn : n - 1);
    CHECK(fabsf(lp - want_lp) <= 1e-4f, "%s: drawn logprob %.7g, want %.7g", g_case, lp, want_lp);
    CHECK(o[2] == want_n, "%s: %u pairs, want %u", g_case, o[2], want_n);
    for (uint32_t k = 0; k < want_n && k < o[2]; k++) {
      float v;
      memcpy(&v, &o[4 + 2 * k], 4);
      CHECK(o[3 + 2 * k] == want_ids[k] && fabsf(v - want_lps[k]) <= 1e-4f, "%s: top %u is (%u, %.7g), want (%u, %.7g)",
            g_case, k, o[3 + 2 * k], v, want_ids[k], want_lps[k]);
    }
  }
  gb_guards(&go, "out");
  gb_guards(&gw, "work");
  gb_free(&gx);
  gb_free(&gi);
  gb_free(&gw);
  gb_free(&go);
  free(x);
  return verdict();
}

static void cases_logit_filter(void) {
  static const uint32_t sizes[] = {1, 31, 33, 2048, 151936, 262144 + 17};
  for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; i++) {
    tcase *c = add_case("logit_filter", run_logit_filter, "mask,n=%u", sizes[i]);
    c->u.lf.n = sizes[i];
    static const uint32_t nbs[] = {1, 7, 300};
    for (size_t k = 0; k < 3; k++) {
      c = add_case("logit_filter", run_logit_filter, "bias,n=%u,pairs=%u", sizes[i], nbs[k]);
      c->u.lf.n = sizes[i];
      c->u.lf.n_bias = nbs[k];
    }
  }
  static const uint32_t lp_sizes[] = {1, 5, 4096, 4097, 151936, 262144 + 17};
  static const uint32_t tops[] = {0, 1, 5, 20};
  for (size_t i = 0; i < sizeof lp_sizes / sizeof lp_sizes[0]; i++)
    for (size_t k = 0; k < 4; k++) {
      tcase *c = add_case("logprobs", run_logprobs, "n=%u,top=%u", lp_sizes[i], tops[k]);
      c->u.lf.n = lp_sizes[i];
      c->u.lf.n_bias = tops[k];
    }
}

/* ---------------------------------------------------------------- pool */

/* Embedding pooling: random rows in chunks (a recording each, as a session's prefill chunks), each chunk its own
   input buffer; the accumulator and the output poisoned (the first chunk must set the accumulator, the finish every
   output element), against the CPU's pooling of all the rows at once. */
static case_result run_pool(const tcase *c) {
  uint32_t D = c->u.pool.D, rows = c->u.pool.rows, chunks = c->u.pool.chunks, per = (rows + chunks - 1) / chunks;
  float *x = rnd((size_t)rows * D, -3, 3), *want = malloc((size_t)D * 4);
  if (c->u.pool.zero) memset(x, 0, (size_t)rows * D * 4);
  ref_pool(x, rows, D, c->u.pool.mode, c->u.pool.normalize, want);
  gbuf ga = gb_out((size_t)D * 4), go = gb_out((size_t)D * 4);
  traffic(4.0 * rows * D + 12.0 * D, (double)rows * D);
  for (uint32_t r0 = 0, k = 0; r0 < rows; r0 += per, k++) {
    uint32_t n = rows - r0 < per ? rows - r0 : per;
    gbuf gx = gb_in(x + (size_t)r0 * D, (size_t)n * D * 4);
    gpu_recorder *r = rec_new();
    wgllm_status st = op_pool_rows(r, gx.v, ga.v, D, n, (op_pool_mode)c->u.pool.mode, k == 0);
    if (!st && r0 + n == rows)
      st = op_pool_finish(r, ga.v, go.v, D, c->u.pool.mode ? 1.0f : 1.0f / rows, c->u.pool.normalize);
    CHECK(st == WGLLM_OK, "%s record: %s", g_case, gpu_recorder_error(r));
    exec(r, NULL);
    gpu_recorder_free(r);
    gb_free(&gx);
  }
  const float *got = gb_fetch(&go);
  cmp("pooled", got, want, D, 2e-6, 1e-5);
  gb_guards(&go, "out");
  gb_guards(&ga, "acc");
  gb_free(&ga);
  gb_free(&go);
  free(x);
  free(want);
  return verdict();
}

static void cases_pool(void) {
  static const char *modes[] = {"mean", "last", "first"};
  static const uint32_t shapes[][3] = {{1, 1, 1},    {7, 3, 1},    {96, 24, 1},   {96, 53, 4},
                                       {257, 40, 3}, {1024, 5, 5}, {4096, 17, 2}, {2560, 300, 3}};
  for (size_t i = 0; i < sizeof shapes / sizeof shapes[0]; i++)
    for (int mode = 0; mode < 3; mode++)
      for (int norm = 0; norm < 2; norm++) {
        tcase *c = add_case("pool", run_pool, "%s%s,D=%u,rows=%u,chunks=%u", modes[mode], norm ? "+norm" : "",
                            shapes[i][0], shapes[i][1], shapes[i][2]);
        c->u.pool.D = shapes[i][0];
        c->u.pool.rows = shapes[i][1];
        c->u.pool.chunks = shapes[i][2];
        c->u.pool.mode = mode;
        c->u.pool.normalize = norm;
      }
  for (int mode = 0; mode < 3; mode++) {
    tcase *c = add_case("pool", run_pool, "%s+norm,zero,D=96,rows=4,chunks=2", modes[mode]);
    c->u.pool.D = 96;
    c->u.pool.rows = 4;
    c->u.pool.chunks = 2;
    c->u.pool.mode = mode;
    c->u.pool.normalize = 1;
    c->u.pool.zero = 1;
  }
}

/* ---------------------------------------------------------------- add / mul / add_inplace */

static case_result run_binary(const tcase *c) {
  size_t n = c->u.bin.n, nb = c->u.bin.nb;
  float *a = rnd(n, -2, 2), *b = rnd(nb, -2, 2), *want = malloc(n * 4);
  gbuf ga = gb_in(a, n * 4), gb = gb_in(b, nb * 4), go = gb_out(n * 4);
  traffic(4.0 * (2 * n + nb), (double)n);
  gpu_recorder *r = rec_new();
  wgllm_status s = c->u.bin.mul ? op_mul(r, ga.v, gb.v, go.v, (uint32_t)n, (uint32_t)nb)
                                : op_add(r, ga.v, gb.v, go.v, (uint32_t)n, (uint32_t)nb);
  CHECK(s == WGLLM_OK, "%s record: %s", g_case, gpu_recorder_error(r));
  exec(r, NULL);
  gpu_recorder_free(r);
  if (c->u.bin.mul)
    ref_mul(a, b, want, n, nb);
  else
    ref_add(a, b, want, n, nb);
  cmp("out", gb_fetch(&go), want, n, 0, 1e-7);
  gb_guards(&go, "out");
  gb_free(&ga);
  gb_free(&gb);
  gb_free(&go);
  free(a);
  free(b);
  free(want);
  return verdict();
}

static case_result run_add_inplace(const tcase *c) {
  size_t n = c->u.bin.n, nb = c->u.bin.nb;
  float *a = rnd(n, -1, 1), *b = rnd(nb, -1, 1), *want = malloc(n * 4);
  ref_add(a, b, want, n, nb);
  gbuf ga = gb_io(a, n * 4), gb = gb_in(b, nb * 4);
  traffic(4.0 * (2 * n + nb), (double)n);
  gpu_recorder *r = rec_new();
  CHECK(op_add_inplace(r, ga.v, gb.v, (uint32_t)n, (uint32_t)nb) == WGLLM_OK, "%s record: %s", g_case,
        gpu_recorder_error(r));
  exec(r, NULL);
  gpu_recorder_free(r);
  cmp("a", gb_fetch(&ga), want, n, 0, 1e-7);
  gb_guards(&ga, "a");
  gb_free(&ga);
  gb_free(&gb);
  free(a);
  free(b);
  free(want);
  return verdict();
}

/* in place: a += b, a *= b, a = (a + b) * c, a = c * tanh(a / c) */
static case_result run_inplace(const tcase *c) {
  size_t n = c->u.bin.n, nb = c->u.bin.nb;
  int op = c->u.bin.mul;
  float k = c->u.bin.c;
  float *a = rnd(n, op == 3 ? -120 : -2, op == 3 ? 120 : 2), *b = rnd(nb, -2, 2), *want = malloc(n * 4);
  if (op == 0) ref_add(a, b, want, n, nb);
  if (op == 1) ref_mul(a, b, want, n, nb);
  if (op == 2) ref_add_scale(a, b, want, n, nb, k);
  if (op == 3) ref_softcap(a, want, n, k);
  gbuf ga = gb_io(a, n * 4), gb = gb_in(b, nb * 4);
  traffic(4.0 * (2 * n + (op == 3 ? 0 : nb)), (double)n);
  gpu_recorder *r = rec_new();
  wgllm_status s = op == 0   ? op_add_inplace(r, ga.v, gb.v, (uint32_t)n, (uint32_t)nb)
                   : op == 1 ? op_mul_inplace(r, ga.v, gb.v, (uint32_t)n, (uint32_t)nb)
                   : op == 2 ? op_add_scale_inplace(r, ga.v, gb.v, (uint32_t)n, (uint32_t)nb, k)
                             : op_softcap_inplace(r, ga.v, (uint32_t)n, k);
  CHECK(s == WGLLM_OK, "%s record: %s", g_case, gpu_recorder_error(r));
  exec(r, NULL);
  gpu_recorder_free(r);
  /* tanh in WGSL is an implementation's approximation: a few ulp of the cap */
  cmp("a", gb_fetch(&ga), want, n, op == 3 ? 1e-6 * k : 0, op == 3 ? 1e-6 : 1e-7);
  gb_guards(&ga, "a");
  gb_free(&ga);
  gb_free(&gb);
  free(a);
  free(b);
  free(want);
  return verdict();
}

static void cases_binary(void) {
  static const char *const names[] = {"add_inplace", "mul_inplace", "add_scale_inplace", "softcap_inplace"};
  static const uint32_t ishapes[][2] = {{1, 1}, {3003, 7}, {4096, 4096}, {70001, 1}};
  static const float consts[] = {1.0f, 1.0f, 0.70710678f, 30.0f};
  for (int op = 1; op < 4; op++)
    for (size_t i = 0; i < 4; i++) {
      tcase *c = add_case(names[op], run_inplace, "n=%u,nb=%u,c=%g", ishapes[i][0], ishapes[i][1], consts[op]);
      c->u.bin.mul = op;
      c->u.bin.n = ishapes[i][0];
      c->u.bin.nb = ishapes[i][1];
      c->u.bin.c = consts[op];
    }
  static const uint32_t shapes[][2] = {{1, 1}, {13, 13}, {1031, 1031}, {12288, 4096}, {70, 7}};
  for (int mul = 0; mul < 2; mul++)
    for (size_t i = 0; i < 5; i++) {
      tcase *c = add_case(mul ? "mul" : "add", run_binary, "n=%u,nb=%u", shapes[i][0], shapes[i][1]);
      c->u.bin.mul = mul;
      c->u.bin.n = shapes[i][0];
      c->u.bin.nb = shapes[i][1];
    }
}

/* ---------------------------------------------------------------- RMSNorm */

static case_result run_rms_norm(const tcase *c) {
  size_t n = c->u.rms.n, rows = c->u.rms.rows, is = c->u.rms.is, os = c->u.rms.os;
  float off = (float)c->u.rms.w_off;
  float *x = rnd(rows * is, -3, 3), *w = rnd(n, -1.5f, 1.5f), *want = malloc(rows * n * 4), *got = malloc(rows * n * 4);
  gbuf gx = gb_in(x, rows * is * 4), gw = gb_in(w, n * 4), go = gb_out(rows * os * 4);
  traffic(4.0 * (2 * rows * n + n), 4.0 * rows * n);
  gpu_recorder *r = rec_new();
  CHECK(op_rms_norm(r, gx.v, gw.v, go.v, (uint32_t)n, (uint32_t)rows, (uint32_t)is, (uint32_t)os, 1e-6f, off) ==
            WGLLM_OK,
        "%s record: %s", g_case, gpu_recorder_error(r));
  exec(r, NULL);
  gpu_recorder_free(r);
  float *body = gb_fetch(&go);
  ref_rms_norm(x, w, want, n, rows, is, n, 1e-6f, off); /* the reference packed: compare only the row bodies */
  size_t pad_bad = 0;
  for (size_t rr = 0; rr < rows; rr++) {
    memcpy(got + rr * n, body + rr * os, n * 4);
    pad_bad += unpoisoned(body, rr * os + n, os - n);
  }
  cmp("rows", got, want, rows * n, 1e-6, 2e-6);
  VERIFY(pad_bad == 0, "%s: %zu padding-column elements written (inner guard)", g_case, pad_bad);
  gb_guards(&go, "out");
  gb_free(&gx);
  gb_free(&gw);
  gb_free(&go);
  free(x);
  free(w);
  free(want);
  free(got);
  return verdict();
}

/* first row at an element offset (the last rows of a prefill) */
static case_result run_rms_norm_in_off(const tcase *c) {
  size_t n = 96, rows = 3, skip = 5;
  float *x = rnd((rows + skip) * n, -3, 3), *w = rnd(n, -1, 1), *want = malloc(rows * n * 4);
  gbuf gx = gb_in(x, (rows + skip) * n * 4), gw = gb_in(w, n * 4), go = gb_out(rows * n * 4);
  traffic(4.0 * (2 * rows * n + n), 4.0 * rows * n);
  gpu_recorder *r = rec_new();
  op_rms_norm_params rq = {.n = (uint32_t)n,
                           .rows = (uint32_t)rows,
                           .in = {.off = (uint32_t)(skip * n), .stride = (uint32_t)n, .group = 0, .gstride = 0},
                           .out = {.off = 0, .stride = (uint32_t)n, .group = 0, .gstride = 0},
                           .eps = 1e-5f,
                           .w_offset = 0.0f};
  CHECK(op_rms_norm_rows(r, gx.v, gw.v, go.v, &rq) == WGLLM_OK, "%s record: %s", g_case, gpu_recorder_error(r));
  exec(r, NULL);
  gpu_recorder_free(r);
  ref_rms_norm(x + skip * n, w, want, n, rows, n, n, 1e-5f, 0.0f);
  cmp("out", gb_fetch(&go), want, rows * n, 1e-6, 2e-6);
  gb_guards(&go, "out");
  gb_free(&gx);
  gb_free(&gw);
  gb_free(&go);
  free(x);
  free(w);
  free(want);
  return verdict();
}

/* grouped per-head norm: heads of 3 tokens inside rows of 100, into rows of 70 at offset 6; with w2_from
   (c->u.rms.w_off) the heads from it on take a second weight (q heads, then k heads) */
static case_result run_rms_norm_heads(const tcase *c) {
  uint32_t T = 3, Hh = 4, D = 16, IS = 100, OS = 70, w2_from = (uint32_t)c->u.rms.w_off;
  float *x = rnd(T * IS, -2, 2), *w = rnd(D, -1, 1), *w2 = rnd(D, -1, 1);
  gbuf gx = gb_in(x, T * IS * 4), gw = gb_in(w, D * 4), gw2 = gb_in(w2, D * 4), go = gb_out(T * OS * 4);
  traffic(4.0 * (2 * T * Hh * D + D), 4.0 * T * Hh * D);
  gpu_recorder *r = rec_new();
  op_rms_norm_params hq = {.n = D,
                           .rows = T * Hh,
                           .in = {.off = 5, .stride = D, .group = Hh, .gstride = IS},
                           .out = {.off = 6, .stride = D, .group = Hh, .gstride = OS},
                           .eps = 1e-6f,
                           .w_offset = 0.0f,
                           .w2_from = w2_from,
                           .w2 = gw2.v};
  CHECK(op_rms_norm_rows(r, gx.v, gw.v, go.v, &hq) == WGLLM_OK, "%s record: %s", g_case, gpu_recorder_error(r));
  exec(r, NULL);
  gpu_recorder_free(r);
  float *got = gb_fetch(&go);
  size_t bad = 0, unwritten_bad = 0;
  for (uint32_t t = 0; t < T; t++) {
    for (uint32_t h = 0; h < Hh; h++) {
      float want[16];
      ref_rms_norm(x + t * IS + 5 + h * D, w2_from && h >= w2_from ? w2 : w, want, D, 1, D, D, 1e-6f, 0.0f);
      for (uint32_t d = 0; d < D; d++)
        if (!(fabsf(got[t * OS + 6 + h * D + d] - want[d]) <= 1e-5f)) bad++;
    }
    unwritten_bad += unpoisoned(got, t * OS, 6) + unpoisoned(got, t * OS + 6 + Hh * D, OS - 6 - Hh * D);
  }
  VERIFY(bad == 0, "%s: %zu wrong", g_case, bad);
  VERIFY(unwritten_bad == 0, "%s: %zu elements outside the heads written (inner guard)", g_case, unwritten_bad);
  gb_guards(&go, "out");
  gb_free(&gx);
  gb_free(&gw);
  gb_free(&gw2);
  gb_free(&go);
  free(x);
  free(w);
  free(w2);
  return verdict();
}

static void cases_rms_norm(void) {
  static const uint32_t shapes[][4] = {{1, 1, 1, 1},          {7, 3, 9, 7},        {257, 5, 257, 260},
                                       {2048, 4, 2048, 2048}, {128, 24, 128, 128}, {4099, 2, 4099, 4099}};
  for (int off = 0; off < 2; off++)
    for (size_t i = 0; i < 6; i++) {
      tcase *c = add_case("rms_norm", run_rms_norm, "n=%u,rows=%u,in_stride=%u,out_stride=%u,w_off=%d", shapes[i][0],
                          shapes[i][1], shapes[i][2], shapes[i][3], off);
      c->u.rms.n = shapes[i][0];
      c->u.rms.rows = shapes[i][1];
      c->u.rms.is = shapes[i][2];
      c->u.rms.os = shapes[i][3];
      c->u.rms.w_off = off;
    }
  add_case("rms_norm_rows", run_rms_norm_in_off, "n=96,rows=3,in_off=480");
  add_case("rms_norm_rows", run_rms_norm_heads, "heads,n=16,rows=12,group=4,in=5+100,out=6+70");
  add_case("rms_norm_rows", run_rms_norm_heads, "heads,n=16,rows=12,group=4,in=5+100,out=6+70,w2_from=3")->u.rms.w_off =
      3;
}

/* ---------------------------------------------------------------- RoPE */

static case_result run_rope(const tcase *c) {
  size_t T = c->u.rope.T, H = c->u.rope.H, D = c->u.rope.D, R = c->u.rope.R, S = c->u.rope.S;
  int mode = c->u.rope.mode;
  size_t max_pos = 4096;
  float *inv = malloc(R / 2 * 4);
  for (size_t i = 0; i < R / 2; i++)
    inv[i] = (float)pow(10000.0, -2.0 * i / R) / (i % 3 == 0 ? 8.0f : 1.0f); /* per-pair factors */
  float *cs = malloc(max_pos * R / 2 * 8);
  op_rope_table(cs, inv, (uint32_t)R, (uint32_t)max_pos, 1.0f);
  uint32_t *pos = malloc(T * 4);
  for (size_t t = 0; t < T; t++)
    pos[t] = th_u32(&rng) % max_pos;
  float *x = rnd(T * S, -2, 2), *want = malloc(T * S * 4);
  memcpy(want, x, T * S * 4);
  ref_rope(want, pos, cs, T, H, D, R, S, mode, max_pos);
  gbuf gx = gb_io(x, T * S * 4), gp = gb_in(pos, T * 4), gc = gb_in(cs, max_pos * R / 2 * 8);
  traffic(4.0 * (2 * T * H * R + T * R), 6.0 * T * H * R / 2);
  gpu_recorder *r = rec_new();
  op_rope_params rp = {.n_tokens = (uint32_t)T,
                       .n_heads = (uint32_t)H,
                       .head_dim = (uint32_t)D,
                       .rot_dim = (uint32_t)R,
                       .x_off = 0,
                       .token_stride = (uint32_t)S,
                       .mode = (op_rope_mode)mode,
                       .max_pos = (uint32_t)max_pos};
  CHECK(op_rope(r, gx.v, gp.v, gc.v, &rp) == WGLLM_OK, "%s record: %s", g_case, gpu_recorder_error(r));
  exec(r, NULL);
  gpu_recorder_free(r);
  cmp("x", gb_fetch(&gx), want, T * S, 1e-6, 1e-6); /* includes untouched elements: they must be unchanged */
  gb_guards(&gx, "x");
  /* the table against angles computed in double for small positions (f32 angle error grows with pos) */
  float *direct = malloc(T * S * 4);
  memcpy(direct, x, T * S * 4);
  for (size_t t = 0; t < T; t++)
    pos[t] = pos[t] % 64;
  ref_rope_direct(direct, pos, inv, T, H, D, R, S, mode);
  memcpy(want, x, T * S * 4);
  ref_rope(want, pos, cs, T, H, D, R, S, mode, max_pos);
  cmp("table vs direct (CPU)", want, direct, T * S, 2e-5, 2e-5);
  gb_free(&gx);
  gb_free(&gp);
  gb_free(&gc);
  free(inv);
  free(cs);
  free(pos);
  free(x);
  free(want);
  free(direct);
  return verdict();
}

static const char *rope_mode_name(int mode) { return mode ? "adjacent" : "half"; }

static void cases_rope(void) {
  /* tokens, heads, head_dim, rot_dim, token_stride, mode */
  static const uint32_t shapes[][6] = {{1, 1, 2, 2, 2, 0},      {5, 3, 8, 8, 24, 0},       {5, 3, 8, 8, 24, 1},
                                       {7, 6, 64, 64, 640, 0},  {7, 6, 64, 64, 640, 1},    {3, 2, 128, 32, 300, 0},
                                       {3, 2, 128, 32, 300, 1}, {33, 4, 256, 256, 1024, 0}};
  for (size_t i = 0; i < 8; i++) {
    const uint32_t *s = shapes[i];
    tcase *c = add_case("rope", run_rope, "T=%u,H=%u,D=%u,R=%u,stride=%u,%s", s[0], s[1], s[2], s[3], s[4],
                        rope_mode_name((int)s[5]));
    c->u.rope.T = s[0];
    c->u.rope.H = s[1];
    c->u.rope.D = s[2];
    c->u.rope.R = s[3];
    c->u.rope.S = s[4];
    c->u.rope.mode = (int)s[5];
  }
}

/* ---------------------------------------------------------------- softmax, argmax */

static case_result run_softmax(const tcase *c) {
  size_t n = c->u.softmax.n, rows = c->u.softmax.rows;
  float scale = c->u.softmax.scale;
  float *x = rnd(n * rows, -8, 8), *want = malloc(n * rows * 4);
  gbuf gx = gb_in(x, n * rows * 4), go = gb_out(n * rows * 4);
  traffic(8.0 * n * rows, 4.0 * n * rows);
  gpu_recorder *r = rec_new();
  CHECK(op_softmax(r, gx.v, go.v, (uint32_t)n, (uint32_t)rows, scale) == WGLLM_OK, "%s record: %s", g_case,
        gpu_recorder_error(r));
  exec(r, NULL);
  gpu_recorder_free(r);
  ref_softmax(x, want, n, rows, scale);
  cmp("out", gb_fetch(&go), want, n * rows, 1e-8, 2e-5);
  gb_guards(&go, "out");
  gb_free(&gx);
  gb_free(&go);
  free(x);
  free(want);
  return verdict();
}

static case_result run_argmax(const tcase *c) {
  size_t n = c->u.argmax.n, rows = c->u.argmax.rows;
  float *x = rnd(n * rows, -10, 10);
  if (n > 2) { /* a tie: the lowest index wins */
    size_t a = th_u32(&rng) % (n / 2), b = n / 2 + th_u32(&rng) % (n / 2);
    x[a] = x[b] = 11.0f;
  }
  uint32_t *want = malloc(rows * 4);
  gbuf gx = gb_in(x, n * rows * 4), go = gb_out(rows * 4);
  traffic(4.0 * n * rows, 0);
  gpu_recorder *r = rec_new();
  CHECK(op_argmax(r, gx.v, go.v, (uint32_t)n, (uint32_t)rows) == WGLLM_OK, "%s record: %s", g_case,
        gpu_recorder_error(r));
  exec(r, NULL);
  gpu_recorder_free(r);
  const uint32_t *got = gb_fetch(&go);
  ref_argmax(x, want, n, rows);
  for (size_t i = 0; i < rows; i++)
    VERIFY(got[i] == want[i], "%s row %zu: got %u want %u", g_case, i, got[i], want[i]);
  gb_guards(&go, "out");
  gb_free(&gx);
  gb_free(&go);
  free(x);
  free(want);
  return verdict();
}

static void cases_softmax_argmax(void) {
  static const uint32_t sm[][2] = {{1, 1}, {5, 3}, {1000, 7}, {32003, 2}};
  static const float scales[] = {1.0f, 0.125f};
  for (size_t i = 0; i < 4; i++)
    for (int si = 0; si < 2; si++) {
      tcase *c = add_case("softmax", run_softmax, "n=%u,rows=%u,scale=%g", sm[i][0], sm[i][1], scales[si]);
      c->u.softmax.n = sm[i][0];
      c->u.softmax.rows = sm[i][1];
      c->u.softmax.scale = scales[si];
    }
  static const uint32_t am[][2] = {{1, 1}, {2, 3}, {257, 5}, {128256, 2}, {151936, 1}};
  for (size_t i = 0; i < 5; i++) {
    tcase *c = add_case("argmax", run_argmax, "n=%u,rows=%u", am[i][0], am[i][1]);
    c->u.argmax.n = am[i][0];
    c->u.argmax.rows = am[i][1];
  }
}

/* ---------------------------------------------------------------- weights, linear */

/* ggml's block types as GPU storages: the file dtype whose CPU dequantizer is the reference, the block, and the
   byte offsets of its f16 scale fields with the magnitudes random blocks get there (random bytes elsewhere), as
   tools/gguf/ggml_blocks.py makes them; MXFP4's e8m0 exponent (byte 0) in 2^-9 .. 2^-5. */
static const struct {
  op_wtype wt;
  wt_dtype dt;
  uint32_t qk, bytes, f16_at[2];
  float f16_mag[2]; /* 0: no second field */
  int e8m0;         /* byte 0 an e8m0 exponent */
} BLOCK_TYPES[] = {
    {OP_W_Q4_1, WT_Q4_1, 32, 20, {0, 2}, {0.1f / 8, -0.1f}},
    {OP_W_Q5_0, WT_Q5_0, 32, 22, {0, 0}, {0.1f / 8, 0}},
    {OP_W_Q5_1, WT_Q5_1, 32, 24, {0, 2}, {0.1f / 8, -0.2f}},
    {OP_W_Q2_K, WT_Q2_K, 256, 84, {80, 82}, {0.1f / 20, 0.1f / 30}},
    {OP_W_Q3_K, WT_Q3_K, 256, 110, {108, 0}, {0.1f / 64, 0}},
    {OP_W_Q4_K, WT_Q4_K, 256, 144, {0, 2}, {0.1f / 200, 0.1f / 120}},
    {OP_W_Q5_K, WT_Q5_K, 256, 176, {0, 2}, {0.1f / 200, 0.1f / 120}},
    {OP_W_Q6_K, WT_Q6_K, 256, 210, {208, 0}, {0.1f / 1000, 0}},
    {OP_W_IQ4_NL, WT_IQ4_NL, 32, 18, {0, 0}, {0.1f / 64, 0}},
    {OP_W_IQ4_XS, WT_IQ4_XS, 256, 136, {0, 0}, {0.1f / 1500, 0}},
    {OP_W_MXFP4, WT_MXFP4, 32, 17, {0, 0}, {0, 0}, 1},
};
static int block_type(op_wtype t) {
  for (size_t i = 0; i < sizeof BLOCK_TYPES / sizeof BLOCK_TYPES[0]; i++)
    if (BLOCK_TYPES[i].wt == t) return (int)i;
  return -1;
}

/* Builds a random weight of the given storage type for [N][K]; deq receives the exact values the kernel
   must use (f16-rounded, dequantized q4gsw / q8, or a block type's CPU dequantization). Buffers go to bufs (2
   entries) for cleanup. */
static op_weight make_weight(op_wtype type, size_t N, size_t K, uint32_t group, float *deq, gbuf *bufs) {
  op_weight w = {0};
  w.type = type;
  w.group = group;
  memset(bufs, 0, 2 * sizeof *bufs);
  int bt = block_type(type);
  if (bt >= 0) {
    size_t nb = N * K / BLOCK_TYPES[bt].qk, bb = BLOCK_TYPES[bt].bytes;
    uint8_t *blk = malloc(nb * bb + 4);
    for (size_t i = 0; i < nb * bb; i++)
      blk[i] = (uint8_t)th_u32(&rng);
    for (size_t b = 0; b < nb; b++)
      for (int f = 0; f < 2; f++) {
        if (BLOCK_TYPES[bt].e8m0 && f == 0) blk[b * bb] = (uint8_t)(119 + th_u32(&rng) % 5);
        if (!BLOCK_TYPES[bt].f16_mag[f]) continue;
        uint16_t h = ref_f32_to_f16(BLOCK_TYPES[bt].f16_mag[f] * th_uniform(&rng, 0.5f, 1.5f));
        memcpy(blk + b * bb + BLOCK_TYPES[bt].f16_at[f], &h, 2);
      }
    llm_err err = {0};
    CHECK(wt_traits(BLOCK_TYPES[bt].dt)->to_f32(blk, deq, (int64_t)(N * K), &err) == WGLLM_OK, "%s: %s", g_case,
          err.msg);
    size_t gbytes = (size_t)op_blocks_gpu_bytes(type, N * K), sbytes = (size_t)op_blocks_gpu_scale_bytes(type, N * K);
    uint8_t *gpu = malloc(gbytes + 4), *gsc = sbytes ? calloc(sbytes + 4, 1) : NULL;
    op_blocks_to_gpu(type, blk, N * K, gpu, gsc);
    bufs[0] = gb_in(gpu, (gbytes + 3) & ~(size_t)3);
    if (gsc) bufs[1] = gb_in(gsc, (sbytes + 3) & ~(size_t)3);
    free(gpu);
    free(gsc);
    free(blk);
  } else if (type == OP_W_F32) {
    th_fill(&rng, deq, N * K, -1, 1);
    bufs[0] = gb_in(deq, N * K * 4);
  } else if (type == OP_W_F16) {
    uint16_t *h = malloc(N * K * 2 + 4);
    for (size_t i = 0; i < N * K; i++) {
      h[i] = ref_f32_to_f16(th_uniform(&rng, -1, 1));
      deq[i] = ref_f16_to_f32(h[i]);
    }
    bufs[0] = gb_in(h, N * K * 2);
    free(h);
  } else if (type == OP_W_BF16) { /* the high 16 bits of random f32s (truncated), read back exactly */
    uint16_t *h = malloc(N * K * 2 + 4);
    for (size_t i = 0; i < N * K; i++) {
      float f = th_uniform(&rng, -1, 1);
      uint32_t u;
      memcpy(&u, &f, 4);
      h[i] = (uint16_t)(u >> 16);
      u = (uint32_t)h[i] << 16;
      memcpy(&deq[i], &u, 4);
    }
    bufs[0] = gb_in(h, N * K * 2);
    free(h);
  } else if (type == OP_W_Q4) {
    size_t ng = N * K / group;
    uint32_t *q = calloc(N * K / 8 + 1, 4);
    uint16_t *sc = malloc(ng * 2 + 4);
    for (size_t g = 0; g < ng; g++)
      sc[g] = ref_f32_to_f16(th_uniform(&rng, -0.2f, 0.2f));
    for (size_t e = 0; e < N * K; e++) {
      uint32_t nib = th_u32(&rng) & 15;
      q[e / 8] |= nib << (4 * (e % 8));
      deq[e] = ((float)nib - 8.0f) * ref_f16_to_f32(sc[e / group]);
    }
    bufs[0] = gb_in(q, N * K / 2);
    bufs[1] = gb_in(sc, ng * 2);
    free(q);
    free(sc);
  } else {
    size_t ng = N * K / 32;
    int8_t *q = malloc(N * K + 4);
    uint16_t *sc = malloc(ng * 2 + 4);
    for (size_t g = 0; g < ng; g++)
      sc[g] = ref_f32_to_f16(th_uniform(&rng, -0.02f, 0.02f));
    for (size_t e = 0; e < N * K; e++) {
      q[e] = (int8_t)((int)(th_u32(&rng) % 255) - 127);
      deq[e] = (float)q[e] * ref_f16_to_f32(sc[e / 32]);
    }
    bufs[0] = gb_in(q, N * K);
    bufs[1] = gb_in(sc, ng * 2);
    free(q);
    free(sc);
  }
  w.data = bufs[0].v;
  if (bufs[1].buf) w.scales = bufs[1].v;
  return w;
}

static void free_weight(gbuf *bufs) {
  gb_free(&bufs[0]);
  gb_free(&bufs[1]);
}

static double weight_bytes(op_wtype t, double N, double K, uint32_t group) {
  switch (t) {
  case OP_W_F32:
    return 4 * N * K;
  case OP_W_F16:
  case OP_W_BF16:
    return 2 * N * K;
  case OP_W_Q4:
    return N * K / 2 + 2 * N * K / group;
  case OP_W_Q8:
    return N * K + 2 * N * K / 32;
  default:
    if (block_type(t) >= 0)
      return (double)(op_blocks_gpu_bytes(t, (uint64_t)(N * K)) + op_blocks_gpu_scale_bytes(t, (uint64_t)(N * K)));
    return N * K + 2 * N * K / 32;
  }
}

/* tolerance for a dot product of length K: relative to sum |x w| */
static void compare_linear(const float *got, const float *want, const float *x, const float *w, size_t M, size_t N,
                           size_t K) {
  if (g_perf) return;
  size_t bad = 0;
  for (size_t m = 0; m < M; m++)
    for (size_t n = 0; n < N; n++) {
      double s = 0;
      for (size_t k = 0; k < K; k++)
        s += fabs((double)x[m * K + k] * w[n * K + k]);
      double tol = 1e-6 + 4e-6 * s;
      double d = fabs((double)got[m * N + n] - want[m * N + n]);
      if (!(d <= tol) || !isfinite(got[m * N + n])) {
        if (bad < 4)
          fprintf(stderr, "  %s[%zu,%zu] got %.9g want %.9g\n", g_case, m, n, got[m * N + n], want[m * N + n]);
        bad++;
      }
    }
  CHECK(bad == 0, "%s: %zu of %zu outputs out of tolerance", g_case, bad, M * N);
}

static case_result run_linear(const tcase *c) {
  size_t M = c->u.lin.M, N = c->u.lin.N, K = c->u.lin.K;
  op_wtype wt = c->u.lin.wt;
  int route = c->u.lin.route, has_bias = c->u.lin.bias;
  float *x = rnd(M * K, -1, 1), *w = malloc(N * K * 4 + 4), *b = rnd(N, -1, 1), *want = malloc(M * N * 4);
  gbuf wb[2];
  op_weight ow = make_weight(wt, N, K, c->u.lin.group, w, wb);
  gbuf gx = gb_in(x, M * K * 4), gb = gb_in(b, N * 4), go = gb_out(M * N * 4);
  gpu_view bias = has_bias ? gb.v : (gpu_view){0};
  traffic(weight_bytes(wt, N, K, c->u.lin.group) + 4.0 * (M * K + M * N + (has_bias ? N : 0)), 2.0 * M * N * K);
  gpu_recorder *r = rec_new();
  wgllm_status s;
  if (route == 0)
    s = op_matvec(r, gx.v, &ow, bias, go.v, (uint32_t)M, (uint32_t)N, (uint32_t)K);
  else if (route == 2)
    s = op_matvec_generic(r, gx.v, &ow, bias, go.v, (uint32_t)M, (uint32_t)N, (uint32_t)K);
  else if (route == 3)
    s = op_matmul_rows(r, gx.v, &ow, bias, go.v, (uint32_t)M, (uint32_t)N, (uint32_t)K, 8);
  else
    s = op_matmul(r, gx.v, &ow, bias, go.v, (uint32_t)M, (uint32_t)N, (uint32_t)K);
  CHECK(s == WGLLM_OK, "%s record: %s", g_case, gpu_recorder_error(r));
  exec(r, NULL);
  gpu_recorder_free(r);
  if (!g_perf) ref_linear(x, w, has_bias ? b : NULL, want, M, N, K);
  compare_linear(gb_fetch(&go), want, x, w, M, N, K);
  gb_guards(&go, "y");
  gb_free(&gx);
  gb_free(&gb);
  gb_free(&go);
  free_weight(wb);
  free(x);
  free(w);
  free(b);
  free(want);
  return verdict();
}

/* op_matvec_generic's rows are the same bits alone and together (a batched decode step's rows equal each session's
   own step): M rows in one dispatch (workgroups of 8, 4, 2 rows and a ragged last) against each row alone */
static case_result run_linear_rows(const tcase *c) {
  size_t M = c->u.lin.M, N = c->u.lin.N, K = c->u.lin.K;
  float *x = rnd(M * K, -1, 1), *w = malloc(N * K * 4 + 4), *b = rnd(N, -1, 1);
  gbuf wb[2];
  op_weight ow = make_weight(c->u.lin.wt, N, K, c->u.lin.group, w, wb);
  gbuf gx = gb_in(x, M * K * 4), gb = gb_in(b, N * 4), all = gb_out(M * N * 4), one = gb_out(M * N * 4);
  gpu_recorder *r = rec_new();
  wgllm_status s = op_matvec_generic(r, gx.v, &ow, gb.v, all.v, (uint32_t)M, (uint32_t)N, (uint32_t)K);
  for (size_t m = 0; !s && m < M; m++) {
    gpu_view xm = {gx.v.buf, gx.v.offset + m * K * 4, K * 4}, ym = {one.v.buf, one.v.offset + m * N * 4, N * 4};
    s = op_matvec_generic(r, xm, &ow, gb.v, ym, 1, (uint32_t)N, (uint32_t)K);
  }
  CHECK(s == WGLLM_OK, "%s record: %s", g_case, gpu_recorder_error(r));
  exec(r, NULL);
  gpu_recorder_free(r);
  const float *ga = gb_fetch(&all), *go = gb_fetch(&one);
  size_t differ = 0;
  for (size_t i = 0; i < M * N; i++)
    differ += memcmp(&ga[i], &go[i], 4) != 0;
  CHECK(differ == 0, "%s: %zu of %zu outputs differ between the rows together and alone", g_case, differ, M * N);
  gb_guards(&all, "y");
  gb_free(&gx);
  gb_free(&gb);
  gb_free(&all);
  gb_free(&one);
  free_weight(wb);
  free(x);
  free(w);
  free(b);
  return verdict();
}

/* refusals: q4 with K not a multiple of the group, an unsupported group */
static case_result run_linear_refuse(const tcase *c) {
  gbuf wb[2];
  float *deq = malloc(64 * 4);
  op_weight ow = make_weight(OP_W_Q4, 1, 64, 32, deq, wb);
  gpu_recorder *r = rec_new();
  if (c->u.refuse.which == 0) {
    ow.group = 64;
    VERIFY(op_matvec(r, ow.data, &ow, (gpu_view){0}, ow.data, 1, 1, 96) == WGLLM_ERR_UNSUPPORTED,
           "q4 K %% group refused");
  } else {
    ow.group = 16;
    VERIFY(op_matvec(r, ow.data, &ow, (gpu_view){0}, ow.data, 1, 1, 64) == WGLLM_ERR_UNSUPPORTED &&
               strstr(gpu_recorder_error(r), "group"),
           "q4 group 16 refused: %s", gpu_recorder_error(r));
  }
  gpu_recorder_free(r);
  free_weight(wb);
  free(deq);
  return verdict();
}

/* A weight in row parts (over the binding limit, or projections of different storages run as one): the parts
   are made like whole weights, the reference multiplies by their rows stacked. Three parts, each of the storage
   the case names. */
static case_result run_linear_parts(const tcase *c) {
  size_t M = c->u.parts.M, K = c->u.parts.K, N = 0;
  for (int i = 0; i < 3; i++)
    N += c->u.parts.rows[i];
  float *x = rnd(M * K, -1, 1), *w = malloc(N * K * 4 + 4), *b = rnd(N, -1, 1), *want = malloc(M * N * 4);
  gbuf wb[3][2];
  op_weight ow = {0};
  size_t r0 = 0;
  for (int i = 0; i < 3; i++) {
    op_weight pw = make_weight(c->u.parts.wt[i], c->u.parts.rows[i], K, 32, w + r0 * K, wb[i]);
    ow.part[i] = (struct op_weight_part){pw.data, pw.scales, c->u.parts.rows[i], pw.type, pw.group};
    r0 += c->u.parts.rows[i];
  }
  ow.n_parts = 3;
  ow.type = ow.part[0].type;
  ow.data = ow.part[0].data;
  gbuf gx = gb_in(x, M * K * 4), gb = gb_in(b, N * 4), go = gb_out(M * N * 4);
  traffic(4.0 * (M * K + M * N + N), 2.0 * M * N * K);
  gpu_recorder *r = rec_new();
  wgllm_status s = c->u.parts.route ? op_matmul(r, gx.v, &ow, gb.v, go.v, (uint32_t)M, (uint32_t)N, (uint32_t)K)
                                    : op_matvec(r, gx.v, &ow, gb.v, go.v, (uint32_t)M, (uint32_t)N, (uint32_t)K);
  CHECK(s == WGLLM_OK, "%s record: %s", g_case, gpu_recorder_error(r));
  exec(r, NULL);
  gpu_recorder_free(r);
  ref_linear(x, w, b, want, M, N, K);
  compare_linear(gb_fetch(&go), want, x, w, M, N, K);
  gb_guards(&go, "y");
  gb_free(&gx);
  gb_free(&gb);
  gb_free(&go);
  for (int i = 0; i < 3; i++)
    free_weight(wb[i]);
  free(x);
  free(w);
  free(b);
  free(want);
  return verdict();
}

static void cases_linear_parts(void) {
  static const struct {
    op_wtype wt[3];
    uint32_t rows[3], K;
  } P[] = {{{OP_W_F32, OP_W_F32, OP_W_F32}, {5, 64, 7}, 96},
           {{OP_W_Q4, OP_W_Q4, OP_W_Q4}, {32, 3, 17}, 256},
           {{OP_W_Q4_K, OP_W_Q4_K, OP_W_Q6_K}, {16, 40, 9}, 512},
           {{OP_W_F16, OP_W_Q8, OP_W_BF16}, {7, 8, 9}, 64}};
  static const uint32_t Ms[] = {1, 3, 67};
  for (size_t i = 0; i < sizeof P / sizeof P[0]; i++)
    for (size_t mi = 0; mi < 3; mi++)
      for (int route = 0; route < 2; route++) {
        if (route == 0 && Ms[mi] > 8) continue; /* the GEMV route is for a few rows */
        tcase *c = add_case(route ? "matmul" : "matvec", run_linear_parts, "parts/%s+%s+%s/M=%u,rows=%u+%u+%u,K=%u",
                            op_wtype_name(P[i].wt[0]), op_wtype_name(P[i].wt[1]), op_wtype_name(P[i].wt[2]), Ms[mi],
                            P[i].rows[0], P[i].rows[1], P[i].rows[2], P[i].K);
        for (int k = 0; k < 3; k++) {
          c->u.parts.wt[k] = P[i].wt[k];
          c->u.parts.rows[k] = P[i].rows[k];
        }
        c->u.parts.M = Ms[mi];
        c->u.parts.K = P[i].K;
        c->u.parts.route = route;
      }
}

static void cases_linear(void) {
  /* M, N, K: odd/prime shapes for dense weights; quantized ones need K % group == 0 */
  /* the last shape of each list has M >= 256: the GEMM's 128-row tiles, ragged in M and N */
  static const uint32_t dense[][3] = {{1, 1, 1},      {1, 7, 13},   {3, 31, 67},    {4, 64, 2048},
                                      {1, 1000, 256}, {5, 17, 33},  {67, 129, 257}, {128, 256, 512},
                                      {2, 3, 4097},   {64, 64, 64}, {300, 131, 67}};
  static const uint32_t quant[][3] = {{1, 1, 128},    {1, 7, 256},   {3, 31, 384},   {4, 96, 2048},
                                      {1, 1003, 512}, {5, 17, 128},  {67, 129, 256}, {128, 256, 512},
                                      {2, 3, 4096},   {64, 64, 128}, {257, 133, 256}};
  static const uint32_t kblk[][3] = {{1, 1, 256},    {1, 7, 512},   {3, 31, 768},   {4, 96, 2048},
                                     {1, 1003, 256}, {5, 17, 512},  {67, 129, 256}, {128, 256, 512},
                                     {2, 3, 4096},   {64, 64, 256}, {257, 70, 512}};
  static const uint32_t groups[] = {32, 64, 128};
  static const char *routes[] = {"matvec", "matmul", "matvec_generic", "matmul_rows8"};
  /* route 0: GEMV (q4gsw, q8, Q4_K, Q5_K, Q6_K take kernels/gemv.wgsl), 1: tiled GEMM, 2: q4 through the generic
     GEMV */
  for (int wt = 0; wt < OP_W_COUNT; wt++)
    for (int route = 0; route < 4; route++)
      for (size_t i = 0; i < 11; i++)
        for (int has_bias = 0; has_bias < 2; has_bias++) {
          const uint32_t *s = block_type((op_wtype)wt) >= 0    ? kblk[i]
                              : wt == OP_W_Q4 || wt == OP_W_Q8 ? quant[i]
                                                               : dense[i];
          uint32_t group = wt == OP_W_Q4 ? groups[i % 3] : 32;
          if ((route == 0 || route == 2) && s[0] > 67) continue; /* the GEMV route: a decode step's rows */
          if (route == 2 && wt != OP_W_Q4) continue;
          if (route == 3 && s[0] < 256) continue; /* the GEMM's 128-row tiles (the bench's alternative) */
          char ty[32];
          if (wt == OP_W_Q4)
            snprintf(ty, sizeof ty, "%s-g%u", op_wtype_name((op_wtype)wt), group);
          else
            snprintf(ty, sizeof ty, "%s", op_wtype_name((op_wtype)wt));
          tcase *c = add_case(routes[route], run_linear, "%s/M=%u,N=%u,K=%u,bias=%d", ty, s[0], s[1], s[2], has_bias);
          c->u.lin.wt = (op_wtype)wt;
          c->u.lin.route = route;
          c->u.lin.M = s[0];
          c->u.lin.N = s[1];
          c->u.lin.K = s[2];
          c->u.lin.group = group;
          c->u.lin.bias = has_bias;
        }
  /* rows together and alone: K of whole blocks of every storage (256), rows not a multiple of 8 (a row of y on a
   * binding offset) */
  for (int wt = 0; wt < OP_W_COUNT; wt++) {
    tcase *c = add_case("matvec", run_linear_rows, "rows/%s/M=13,N=64,K=512", op_wtype_name((op_wtype)wt));
    c->u.lin = (__typeof__(c->u.lin)){.wt = (op_wtype)wt, .M = 13, .N = 64, .K = 512, .group = 32};
  }
  add_case("matvec", run_linear_refuse, "refuse/q4gsw-g64,K=96")->u.refuse.which = 0;
  add_case("matvec", run_linear_refuse, "refuse/q4gsw-g16,K=64")->u.refuse.which = 1;
}

/* v clamped to f16's range and rounded to nearest even, as a float */
static float f16_round(float v) {
  if (v > 65504.0f) v = 65504.0f;
  if (v < -65504.0f) v = -65504.0f;
  return ref_f16_to_f32(ref_f32_to_f16(v));
}

/* ---------------------------------------------------------------- the fast precision: int8 activations

   matmul_q8/TYPE/...: op_quantize_q8 then op_matmul_q8 in one recording. The quantized activations are checked
   against ref_quantize_q8 (d to f32 rounding; each q equal, or one step off where x * 127 / amax lies within 1e-3
   of a tie, since the GPU's division may round differently; s = d * sum q); the GEMM against ref_linear on the
   activations the GPU quantized (dequantized exactly on the CPU), with the tolerance of the exact GEMM; and the
   result against ref_linear on the original x within the quantization's own bound, sum over blocks of
   (d / 2) * sum |w| (half a step an element). Rows of different magnitudes, a block of zeros and an outlier.
   matmul_q8/fallback/TYPE: a storage without an integer-dot kernel refused by the predicate and by op_matmul_q8,
   and op_linear_fast then computing exactly (the exact GEMM's tolerance), or where subgroup matrices exist on the
   tensor cores (the exact GEMM's tolerance on the operands rounded to f16). */
/* run_linear_q8's route for the tensor-core GEMM on int8 operands (dev_gemm_i8, src/dev/gemm_i8.c) on the same
   activations */
#define OP_ROUTE_GEMM_I8 6
static case_result run_linear_q8(const tcase *c) {
  size_t M = c->u.lin.M, N = c->u.lin.N, K = c->u.lin.K, nb = K / 32;
  op_wtype wt = c->u.lin.wt;
  int has_bias = c->u.lin.bias, fallback = c->u.lin.route == 1, mma = c->u.lin.route == OP_ROUTE_GEMM_I8;
  /* route 2..5: a forced layout (rows a thread 4 | 8, conversion | adds); 0: the default plan */
  static const op_q8mm_plan QP[] = {{4, 0}, {4, 1}, {8, 0}, {8, 1}};
  const op_q8mm_plan *plan = c->u.lin.route >= 2 && !mma ? &QP[c->u.lin.route - 2] : NULL;
  if (mma) {
    op_weight probe = {.type = wt, .group = c->u.lin.group};
    if (!dev_gemm_i8_supports(th_gpu(), &probe, (uint32_t)M, (uint32_t)N, (uint32_t)K))
      return not_supported("the device grants no i8 x i8 -> i32 subgroup matrices of 16x16x32 with subgroups of 32 "
                           "(chromium-experimental-subgroup-matrix; lavapipe and SwiftShader offer none)");
  }
  float *x = rnd(M * K, -1, 1), *w = malloc(N * K * 4 + 4), *b = rnd(N, -1, 1), *want = malloc(M * N * 4);
  for (size_t m = 0; m < M; m++) /* rows of different magnitudes */
    for (size_t k = 0; k < K; k++)
      x[m * K + k] *= (float)(1 + m % 7) * (m % 3 == 1 ? 0.01f : 1.0f);
  for (size_t k = 0; k < 32 && M > 1; k++)
    x[1 * K + k] = 0;             /* a block of zeros */
  x[(M - 1) * K + K / 2] = 40.0f; /* an outlier */
  gbuf wb[2];
  op_weight ow = make_weight(wt, N, K, c->u.lin.group, w, wb);
  gpu_context *ctx = th_gpu();
  size_t qbytes = (size_t)op_q8_act_bytes(ctx, (uint32_t)M, (uint32_t)K);
  gbuf gx = gb_in(x, M * K * 4), gb = gb_in(b, N * 4), gq = gb_out(qbytes), go = gb_out(M * N * 4);
  gpu_view bias = has_bias ? gb.v : (gpu_view){0};
  traffic(weight_bytes(wt, N, K, c->u.lin.group) + 4.0 * (M * K + M * N) + 1.25 * M * K, 2.0 * M * N * K);
  gpu_recorder *r = rec_new();
  if (fallback) {
    VERIFY(!op_matmul_q8_supports(ctx, &ow, (uint32_t)M, (uint32_t)K), "%s: the predicate accepts it", g_case);
    gpu_recorder *r2 = rec_new();
    wgllm_status rs = op_matmul_q8(r2, gq.v, &ow, bias, go.v, (uint32_t)M, (uint32_t)N, (uint32_t)K);
    VERIFY(rs == WGLLM_ERR_UNSUPPORTED, "%s: op_matmul_q8 accepted it (%s)", g_case, wgllm_status_name(rs));
    gpu_recorder_free(r2);
    wgllm_status s =
        op_linear_fast(r, gx.v, &(op_fast_scratch){.xq = gq.v}, &ow, bias, go.v, (uint32_t)M, (uint32_t)N, (uint32_t)K);
    CHECK(s == WGLLM_OK, "%s record: %s", g_case, gpu_recorder_error(r));
    exec(r, NULL);
    gpu_recorder_free(r);
    /* where subgroup matrices exist the fallback is the tensor-core GEMM on f16 operands (matmul_mma/route):
       exact on the operands as it rounds them */
    if (op_matmul_mma_supports(ctx, &ow, (uint32_t)M, (uint32_t)K)) {
      for (size_t i = 0; i < M * K; i++)
        x[i] = f16_round(x[i]);
      for (size_t i = 0; i < N * K; i++)
        w[i] = f16_round(w[i]);
    }
    ref_linear(x, w, has_bias ? b : NULL, want, M, N, K);
    compare_linear(gb_fetch(&go), want, x, w, M, N, K);
  } else {
    VERIFY(mma ? dev_gemm_i8_supports(ctx, &ow, (uint32_t)M, (uint32_t)N, (uint32_t)K)
               : op_matmul_q8_supports(ctx, &ow, (uint32_t)M, (uint32_t)K),
           "%s: the predicate refuses it", g_case);
    wgllm_status s = op_quantize_q8(r, gx.v, gq.v, (uint32_t)M, (uint32_t)K);
    if (!s && mma) s = dev_gemm_i8(r, gq.v, &ow, bias, go.v, (uint32_t)M, (uint32_t)N, (uint32_t)K);
    if (!s && !mma) s = op_matmul_q8_plan(r, gq.v, &ow, bias, go.v, (uint32_t)M, (uint32_t)N, (uint32_t)K, plan);
    CHECK(s == WGLLM_OK, "%s record: %s", g_case, gpu_recorder_error(r));
    exec(r, NULL);
    gpu_recorder_free(r);
    if (!g_perf) {
      /* the activations: the q part, then (d, s) at the next binding offset */
      const uint8_t *body = gb_fetch(&gq);
      size_t align = ctx->limits.minStorageBufferOffsetAlignment ? ctx->limits.minStorageBufferOffsetAlignment : 256;
      size_t dso = (M * K + align - 1) / align * align;
      const int8_t *gq8 = (const int8_t *)body;
      const float *gds = (const float *)(body + dso);
      int8_t *rq = malloc(M * K);
      float *rd = malloc(M * nb * 4), *rs = malloc(M * nb * 4), *xd = malloc(M * K * 4);
      ref_quantize_q8(x, M, K, rq, rd, rs);
      size_t badq = 0, badd = 0;
      for (size_t bi = 0; bi < M * nb; bi++) {
        float d = gds[2 * bi], sv = gds[2 * bi + 1];
        if (!(fabsf(d - rd[bi]) <= 2e-7f * rd[bi])) {
          if (badd++ < 4) fprintf(stderr, "  %s block %zu: d %.9g want %.9g\n", g_case, bi, d, rd[bi]);
        }
        int sum = 0;
        for (size_t i = 0; i < 32; i++) {
          size_t e = bi * 32 + i;
          float t = rd[bi] > 0 ? x[e] * (127.0f / (rd[bi] * 127.0f)) : 0; /* where x * 127 / amax lies */
          int near_tie = fabsf(fabsf(t - truncf(t)) - 0.5f) < 1e-3f;
          int diff = abs((int)gq8[e] - (int)rq[e]);
          if (diff > (near_tie ? 1 : 0)) {
            if (badq++ < 4) fprintf(stderr, "  %s x[%zu] = %.9g: q %d want %d\n", g_case, e, x[e], gq8[e], rq[e]);
          }
          sum += gq8[e];
          xd[e] = (float)gq8[e] * d;
        }
        if (!(fabsf(sv - d * (float)sum) <= 1e-6f * fabsf(d * (float)sum) + 1e-30f)) {
          if (badd++ < 4) fprintf(stderr, "  %s block %zu: s %.9g want %.9g\n", g_case, bi, sv, d * (float)sum);
        }
      }
      CHECK(badq == 0 && badd == 0, "%s: %zu quantized values and %zu block factors wrong", g_case, badq, badd);
      /* the GEMM on the GPU's own activations: as exact as the f32 GEMM */
      ref_linear(xd, w, has_bias ? b : NULL, want, M, N, K);
      const float *got = gb_fetch(&go);
      compare_linear(got, want, xd, w, M, N, K);
      /* against the original x: within half a quantization step an element */
      ref_linear(x, w, has_bias ? b : NULL, want, M, N, K);
      size_t bad = 0;
      for (size_t m = 0; m < M; m++)
        for (size_t n = 0; n < N; n++) {
          double bound = 1e-6, sa = 0;
          for (size_t bi = 0; bi < nb; bi++) {
            double sw = 0;
            for (size_t i = 0; i < 32; i++) {
              size_t k = bi * 32 + i;
              sw += fabs((double)w[n * K + k]);
              sa += fabs((double)x[m * K + k] * w[n * K + k]);
            }
            bound += 0.5 * rd[m * nb + bi] * sw;
          }
          bound += 4e-6 * sa;
          if (!(fabs((double)got[m * N + n] - want[m * N + n]) <= bound)) {
            if (bad++ < 4)
              fprintf(stderr, "  %s[%zu,%zu] got %.9g, exact %.9g, bound %.3g\n", g_case, m, n, got[m * N + n],
                      want[m * N + n], bound);
          }
        }
      CHECK(bad == 0, "%s: %zu of %zu outputs beyond the quantization bound", g_case, bad, M * N);
      free(rq);
      free(rd);
      free(rs);
      free(xd);
    }
    gb_guards(&gq, "xq");
  }
  gb_guards(&go, "y");
  gb_free(&gx);
  gb_free(&gb);
  gb_free(&gq);
  gb_free(&go);
  free_weight(wb);
  free(x);
  free(w);
  free(b);
  free(want);
  return verdict();
}

static void set_lin(tcase *c, op_wtype wt, uint32_t M, uint32_t N, uint32_t K, int bias, int route);

/* gemm_i8/refuse: Q6_K (its half blocks have their own scale) is refused by the predicate and by the op, which
   says why, where the device has the configuration at all */
static case_result run_gemm_i8_refuse(const tcase *c) {
  (void)c;
  gpu_context *ctx = th_gpu();
  op_weight q4 = {.type = OP_W_Q4, .group = 32}, q6 = {.type = OP_W_Q6_K};
  if (!dev_gemm_i8_supports(ctx, &q4, 67, 129, 512)) return not_supported("the device grants no i8 subgroup matrices");
  CHECK(!dev_gemm_i8_supports(ctx, &q6, 67, 129, 512), "Q6_K accepted");
  gbuf a = gb_out(1 << 16), y = gb_out(67 * 129 * 4);
  q6.data = a.v;
  gpu_recorder *r = rec_new();
  wgllm_status s = dev_gemm_i8(r, a.v, &q6, (gpu_view){0}, y.v, 67, 129, 512);
  CHECK(s == WGLLM_ERR_UNSUPPORTED && strstr(gpu_recorder_error(r), "Q6_K weights"), "Q6_K: status %d, '%s'", (int)s,
        gpu_recorder_error(r));
  gpu_recorder_free(r);
  gb_free(&a);
  gb_free(&y);
  return verdict();
}

static void cases_linear_q8(void) {
  static const op_wtype types[] = {OP_W_Q4,   OP_W_Q4,   OP_W_Q4,   OP_W_Q8,     OP_W_Q4_1,   OP_W_Q5_0, OP_W_Q5_1,
                                   OP_W_Q4_K, OP_W_Q5_K, OP_W_Q6_K, OP_W_IQ4_NL, OP_W_IQ4_XS, OP_W_MXFP4};
  static const uint32_t groups[] = {32, 64, 128, 32, 32, 32, 32, 32, 32, 32, 32, 32, 32};
  /* M, N, K: ragged tiles in M and N, one and several K steps; K-quants take whole 256-element blocks */
  static const uint32_t s32[][3] = {{5, 7, 128}, {67, 129, 384}, {130, 260, 256}};
  static const uint32_t s256[][3] = {{5, 7, 256}, {67, 129, 512}, {130, 260, 256}};
  for (size_t t = 0; t < sizeof types / sizeof types[0]; t++)
    for (size_t i = 0; i < 3; i++) {
      const uint32_t *sh = block_type(types[t]) >= 0 && (types[t] == OP_W_Q4_K || types[t] == OP_W_Q5_K ||
                                                         types[t] == OP_W_Q6_K || types[t] == OP_W_IQ4_XS)
                               ? s256[i]
                               : s32[i];
      char ty[32];
      if (types[t] == OP_W_Q4)
        snprintf(ty, sizeof ty, "%s-g%u", op_wtype_name(types[t]), groups[t]);
      else
        snprintf(ty, sizeof ty, "%s", op_wtype_name(types[t]));
      if (types[t] == OP_W_Q4 && sh[2] % groups[t]) continue;
      int has_bias = (int)(i % 2);
      tcase *c = add_case("matmul_q8", run_linear_q8, "%s/M=%u,N=%u,K=%u,bias=%d", ty, sh[0], sh[1], sh[2], has_bias);
      c->u.lin.wt = types[t];
      c->u.lin.M = sh[0];
      c->u.lin.N = sh[1];
      c->u.lin.K = sh[2];
      c->u.lin.group = groups[t];
      c->u.lin.bias = has_bias;
      c->u.lin.route = 0;
    }
  /* every layout on the storages that exercise each path of the kernel (plain, minimums, half-block scales) */
  static const op_wtype lt[] = {OP_W_Q4, OP_W_Q4_K, OP_W_Q6_K};
  for (size_t t = 0; t < 3; t++)
    for (int route = 2; route <= 5; route++) {
      static const char *pn[] = {"64-row/cvt", "64-row/add", "128-row/cvt", "128-row/add"};
      tcase *c = add_case("matmul_q8", run_linear_q8, "plan=%s/%s/M=130,N=260,K=512,bias=1", pn[route - 2],
                          op_wtype_name(lt[t]));
      c->u.lin.wt = lt[t];
      c->u.lin.M = 130;
      c->u.lin.N = 260;
      c->u.lin.K = 512;
      c->u.lin.group = 32;
      c->u.lin.bias = 1;
      c->u.lin.route = route;
    }
  /* gemm_i8/...: the tensor-core GEMM on int8 operands under the same checks, every storage it takes (not Q6_K or
     MXFP4), where the device offers i8 subgroup matrices */
  for (size_t t = 0; t < sizeof types / sizeof types[0]; t++)
    for (size_t i = 0; i < 3; i++) {
      if (types[t] == OP_W_Q6_K || types[t] == OP_W_MXFP4) continue;
      int kq = types[t] == OP_W_Q4_K || types[t] == OP_W_Q5_K || types[t] == OP_W_IQ4_XS;
      const uint32_t *sh = kq ? s256[i] : s32[i];
      if (types[t] == OP_W_Q4 && sh[2] % groups[t]) continue;
      char ty[32];
      snprintf(ty, sizeof ty, types[t] == OP_W_Q4 ? "%s-g%u" : "%s", op_wtype_name(types[t]), groups[t]);
      tcase *c = add_case("gemm_i8", run_linear_q8, "%s/M=%u,N=%u,K=%u,bias=%d", ty, sh[0], sh[1], sh[2], (int)(i % 2));
      set_lin(c, types[t], sh[0], sh[1], sh[2], (int)(i % 2), OP_ROUTE_GEMM_I8);
      c->u.lin.group = groups[t];
    }
  add_case("gemm_i8", run_gemm_i8_refuse, "refuse/q6_k/M=67,N=129,K=512");
  static const op_wtype none[] = {OP_W_Q2_K, OP_W_Q3_K, OP_W_F16};
  for (size_t t = 0; t < 3; t++) {
    tcase *c = add_case("matmul_q8", run_linear_q8, "fallback/%s/M=67,N=33,K=256", op_wtype_name(none[t]));
    c->u.lin.wt = none[t];
    c->u.lin.M = 67;
    c->u.lin.N = 33;
    c->u.lin.K = 256;
    c->u.lin.group = 32;
    c->u.lin.bias = 1;
    c->u.lin.route = 1;
  }
}

/* ---------------------------------------------------------------- the fast precision: tensor cores

   matmul_mma/TYPE/...: op_matmul_mma (f16 operands on subgroup matrices, f32 sums) where the device grants subgroup
   matrices (not supported elsewhere, saying why: lavapipe and SwiftShader offer none), checked twice: against
   ref_linear on the operands rounded to f16 as the kernel rounds them (x clamped to f16's range, then round to
   nearest even; the weight as dequantized), with the exact GEMM's tolerance, and against ref_linear on the
   originals within the rounding's bound, per output sum_k |x w| (2u + u^2) + 2^-25 sum_k |w| (u = 2^-11; the
   last term: x below f16's normal range), beside that tolerance. Rows of different magnitudes, an outlier past
   f16's range (clamped: its row is checked against the clamped x only). matmul_mma/rows=64|128: each tile height
   forced; matmul_mma/route: op_linear_fast takes this kernel for more than OP_GEMV_MAX_TOKENS rows where the
   predicate holds. */

/* The f16-operand GEMM's variants the cases name (route 4 + index); probes only time (--perf). */
#define OP_ROUTE_FAST_F16 100 /* run_linear_mma: op_linear_fast with x16 and w16 in its scratch */
static const struct {
  const char *name;
  int probe;
} GEMM_F16_VARIANTS[] = {{V_GEMM_F16_F16, 0},          {V_GEMM_F16_F16_K64, 0},        {V_GEMM_F16_F16_M128, 0},
                         {V_GEMM_F16_F16_K64_M128, 0}, {V_GEMM_F16_F16_NOMMA, 1},      {V_GEMM_F16_F16_K64_NOMMA, 1},
                         {V_GEMM_F16_F16_NOSTAGE, 1},  {V_GEMM_F16_F16_K64_NOSTAGE, 1}};

/* The f16-operand path: x to f16 and the weight dequantized to f16 (one recording, timed as ".../convert"), then
   the GEMM of the named variant (timed as the case; a probe through src/dev/gemm_f16_probe.c, without a bias) */
static void record_gemm_f16(gpu_view x, const op_weight *w, gpu_view bias, gpu_view y, uint32_t M, uint32_t N,
                            uint32_t K, const char *variant, int probe) {
  gbuf x16 = gb_out((size_t)op_f16_bytes(M, K)), w16 = gb_out((size_t)op_f16_bytes(N, K));
  traffic(4.0 * M * K + weight_bytes(w->type, N, K, w->group) + (double)op_f16_bytes(M, K) + (double)op_f16_bytes(N, K),
          0);
  gpu_recorder *r = rec_new();
  wgllm_status s = op_convert_f16(r, x, x16.v, M, K);
  if (!s) s = op_dequant_f16(r, w, w16.v, N, K);
  CHECK(s == WGLLM_OK, "%s record the conversions: %s", g_case, gpu_recorder_error(r));
  char label[256];
  snprintf(label, sizeof label, "%s/convert", g_case);
  exec(r, label);
  gpu_recorder_free(r);
  traffic((double)op_f16_bytes(M, K) + (double)op_f16_bytes(N, K) + 4.0 * M * N, 2.0 * M * N * K);
  r = rec_new();
  s = probe ? dev_gemm_f16_probe(r, x16.v, w16.v, y, M, N, K, variant) /* wgllm_dev's variants */
            : op_gemm_f16_variant(r, x16.v, w16.v, bias, y, M, N, K, variant);
  CHECK(s == WGLLM_OK, "%s record: %s", g_case, gpu_recorder_error(r));
  exec(r, NULL);
  gpu_recorder_free(r);
  gb_free(&x16);
  gb_free(&w16);
}

static case_result run_linear_mma(const tcase *c) {
  size_t M = c->u.lin.M, N = c->u.lin.N, K = c->u.lin.K;
  op_wtype wt = c->u.lin.wt;
  int has_bias = c->u.lin.bias, via_fast = c->u.lin.route == 1 || c->u.lin.route == OP_ROUTE_FAST_F16;
  int f16v = c->u.lin.route >= 4 && c->u.lin.route < OP_ROUTE_FAST_F16 ? c->u.lin.route - 4 : -1; /* its variant */
  gpu_context *ctx = th_gpu();
  if (!ctx->has_subgroup_matrix)
    return not_supported("the device grants no subgroup matrices (chromium-experimental-subgroup-matrix with "
                         "shader-f16)");
  if (f16v >= 0 && GEMM_F16_VARIANTS[f16v].probe && !g_perf) return not_supported("a probe of the bench (--perf)");
  float *x = rnd(M * K, -1, 1), *w = malloc(N * K * 4 + 4), *b = rnd(N, -1, 1), *want = malloc(M * N * 4);
  for (size_t m = 0; m < M; m++) /* rows of different magnitudes */
    for (size_t k = 0; k < K; k++)
      x[m * K + k] *= (float)(1 + m % 7) * (m % 3 == 1 ? 0.001f : 1.0f);
  size_t out_row = M - 1;
  x[out_row * K + K / 2] = 1e5f; /* past f16's range: the kernel clamps it */
  gbuf wb[2];
  op_weight ow = make_weight(wt, N, K, c->u.lin.group, w, wb);
  VERIFY(c->u.lin.route >= 4 ? op_gemm_f16_supports(ctx, (uint32_t)M, (uint32_t)N, (uint32_t)K)
                             : op_matmul_mma_supports(ctx, &ow, (uint32_t)M, (uint32_t)K),
         "%s: the predicate refuses it", g_case);
  gbuf gx = gb_in(x, M * K * 4), gb = gb_in(b, N * 4), go = gb_out(M * N * 4), gq = {0};
  gpu_view bias = has_bias ? gb.v : (gpu_view){0};
  traffic(weight_bytes(wt, N, K, c->u.lin.group) + 4.0 * (M * K + M * N), 2.0 * M * N * K);
  gbuf x16 = {0}, w16 = {0};
  if (f16v >= 0) {
    record_gemm_f16(gx.v, &ow, bias, go.v, (uint32_t)M, (uint32_t)N, (uint32_t)K, GEMM_F16_VARIANTS[f16v].name,
                    GEMM_F16_VARIANTS[f16v].probe);
    if (GEMM_F16_VARIANTS[f16v].probe) goto done;
  }
  gpu_recorder *r = f16v >= 0 ? NULL : rec_new();
  wgllm_status s = WGLLM_OK;
  if (f16v >= 0) {
  } else if (via_fast) {
    gq = gb_out((size_t)op_q8_act_bytes(ctx, (uint32_t)M, (uint32_t)K));
    op_fast_scratch fs = {.xq = gq.v};
    if (c->u.lin.route == OP_ROUTE_FAST_F16) {
      x16 = gb_out((size_t)op_f16_bytes((uint32_t)M, (uint32_t)K));
      w16 = gb_out((size_t)op_f16_bytes((uint32_t)N, (uint32_t)K));
      fs.x16 = x16.v;
      fs.w16 = w16.v;
    }
    s = op_linear_fast(r, gx.v, &fs, &ow, bias, go.v, (uint32_t)M, (uint32_t)N, (uint32_t)K);
  } else {
    static const uint32_t tm[] = {0, 0, 128, 64}; /* route 2, 3: the tile's rows forced */
    s = op_matmul_mma_rows(r, gx.v, &ow, bias, go.v, (uint32_t)M, (uint32_t)N, (uint32_t)K, tm[c->u.lin.route]);
  }
  if (r) {
    CHECK(s == WGLLM_OK, "%s record: %s", g_case, gpu_recorder_error(r));
    exec(r, NULL);
    gpu_recorder_free(r);
  }
  if (!g_perf) {
    float *x16 = malloc(M * K * 4), *w16 = malloc(N * K * 4);
    for (size_t i = 0; i < M * K; i++)
      x16[i] = f16_round(x[i]);
    for (size_t i = 0; i < N * K; i++)
      w16[i] = f16_round(w[i]);
    const float *got = gb_fetch(&go);
    ref_linear(x16, w16, has_bias ? b : NULL, want, M, N, K);
    compare_linear(got, want, x16, w16, M, N, K);
    ref_linear(x, w, has_bias ? b : NULL, want, M, N, K);
    size_t bad = 0;
    const double u = 1.0 / 2048;
    for (size_t m = 0; m < M - 1; m++) /* the clamped row is checked above only */
      for (size_t n = 0; n < N; n++) {
        double sa = 0, sw = 0;
        for (size_t k = 0; k < K; k++) {
          sa += fabs((double)x[m * K + k] * w[n * K + k]);
          sw += fabs((double)w[n * K + k]);
        }
        double bound = 1e-6 + 4e-6 * sa + (2 * u + u * u) * sa + sw / 33554432.0;
        if (!(fabs((double)got[m * N + n] - want[m * N + n]) <= bound)) {
          if (bad++ < 4)
            fprintf(stderr, "  %s[%zu,%zu] got %.9g, exact %.9g, bound %.3g\n", g_case, m, n, got[m * N + n],
                    want[m * N + n], bound);
        }
      }
    CHECK(bad == 0, "%s: %zu of %zu outputs beyond f16 rounding's bound", g_case, bad, M * N);
    free(x16);
    free(w16);
  }
  gb_guards(&go, "y");
  if (x16.buf && !g_perf) { /* the route: x16 and w16 written (the f16 path ran) from OP_F16_MIN_ROWS rows, else not */
    size_t wx = unpoisoned(gb_fetch(&x16), 0, M * K / 2), ww = unpoisoned(gb_fetch(&w16), 0, N * K / 2);
    if (M >= OP_F16_MIN_ROWS)
      CHECK(wx == M * K / 2 && ww == N * K / 2, "%s: op_linear_fast left x16 or w16 unwritten (not the f16 path)",
            g_case);
    else
      CHECK(wx == 0 && ww == 0, "%s: op_linear_fast took the f16 path for %zu rows", g_case, M);
    gb_guards(&x16, "x16");
    gb_guards(&w16, "w16");
  }
done:
  if (x16.buf) gb_free(&x16);
  if (w16.buf) gb_free(&w16);
  gb_free(&gx);
  gb_free(&gb);
  gb_free(&go);
  if (gq.v.buf) gb_free(&gq);
  free_weight(wb);
  free(x);
  free(w);
  free(b);
  free(want);
  return verdict();
}

static void cases_linear_mma(void) {
  /* every storage; ragged tiles in M and N, one and several K steps (K-quants: whole 256-element blocks); the
     last shape spans several workgroups both ways */
  static const uint32_t s32[][3] = {{9, 7, 32}, {67, 129, 96}, {130, 260, 512}};
  static const uint32_t s256[][3] = {{9, 7, 256}, {67, 129, 512}, {130, 260, 512}};
  for (int wt = 0; wt < OP_W_COUNT; wt++)
    for (size_t i = 0; i < 3; i++) {
      const uint32_t *sh = block_type((op_wtype)wt) >= 0 && (wt == OP_W_Q2_K || wt == OP_W_Q3_K || wt == OP_W_Q4_K ||
                                                             wt == OP_W_Q5_K || wt == OP_W_Q6_K || wt == OP_W_IQ4_XS)
                               ? s256[i]
                               : s32[i];
      uint32_t group = 32;
      int has_bias = (int)(i % 2);
      tcase *c = add_case("matmul_mma", run_linear_mma, "%s/M=%u,N=%u,K=%u,bias=%d", op_wtype_name((op_wtype)wt), sh[0],
                          sh[1], sh[2], has_bias);
      c->u.lin.wt = (op_wtype)wt;
      c->u.lin.M = sh[0];
      c->u.lin.N = sh[1];
      c->u.lin.K = sh[2];
      c->u.lin.group = group;
      c->u.lin.bias = has_bias;
      c->u.lin.route = 0;
    }
  static const op_wtype rt[] = {OP_W_Q4, OP_W_Q4_K, OP_W_F16};
  for (size_t t = 0; t < 3; t++)
    for (int route = 2; route <= 3; route++) {
      tcase *c = add_case("matmul_mma", run_linear_mma, "rows=%d/%s/M=200,N=300,K=512,bias=1", route == 2 ? 128 : 64,
                          op_wtype_name(rt[t]));
      c->u.lin.wt = rt[t];
      c->u.lin.M = 200;
      c->u.lin.N = 300;
      c->u.lin.K = 512;
      c->u.lin.group = 32;
      c->u.lin.bias = 1;
      c->u.lin.route = route;
    }
  for (size_t t = 0; t < 3; t++) {
    tcase *c = add_case("matmul_mma", run_linear_mma, "route/%s/M=200,N=300,K=512,bias=1", op_wtype_name(rt[t]));
    c->u.lin.wt = rt[t];
    c->u.lin.M = 200;
    c->u.lin.N = 300;
    c->u.lin.K = 512;
    c->u.lin.group = 32;
    c->u.lin.bias = 1;
    c->u.lin.route = 1;
  }
}

/* dequant_f16/TYPE/...: op_dequant_f16 (a weight to f16 rows for the f16-operand GEMM, every storage; in row parts
   of three storages) and convert_f16 (activations: op_convert_f16, with values past f16's range and below its normal
   range), on any device: each element must be the value (clamped to +-65504) rounded to one of its two f16
   neighbours (WGSL leaves the direction to the implementation; the CPU rounds to nearest even), or for values
   below f16's normal range also zero (flushed); the padding rows up to the 128-row tile zero; nothing written past
   the view. */
static int f16_ok(uint16_t got, float v) {
  if (v > 65504.0f) v = 65504.0f;
  if (v < -65504.0f) v = -65504.0f;
  uint16_t r = ref_f32_to_f16(v);
  if (got == r) return 1;
  float g = ref_f16_to_f32(got), n = ref_f16_to_f32(r);
  if ((got & 0x7fff) == 0 && fabsf(v) < 6.103515625e-05f) return 1; /* flushed */
  if (!((g < v && v < n) || (n < v && v < g))) return 0;            /* v between the two */
  return abs((int)(got & 0x7fff) - (int)(r & 0x7fff)) == 1 && (got & 0x8000) == (r & 0x8000);
}

static case_result run_dequant_f16(const tcase *c) {
  size_t K = c->u.parts.K, N = 0;
  int n_parts = c->u.parts.route == 2 ? 3 : 1, convert = c->u.parts.route == 1;
  for (int i = 0; i < n_parts; i++)
    N += c->u.parts.rows[i];
  float *w = malloc(N * K * 4 + 4);
  gbuf wb[3][2];
  memset(wb, 0, sizeof wb);
  op_weight ow = {0};
  gbuf gx = {0};
  if (convert) { /* activations: magnitudes from 1e-7 to past f16's range */
    for (size_t i = 0; i < N * K; i++)
      w[i] = th_uniform(&rng, -1, 1) * powf(10.0f, (float)(i % 13) - 7.0f);
    w[K / 2] = 1e5f;
    w[K + 3] = -7e4f;
    gx = gb_in(w, N * K * 4);
  } else if (n_parts == 1) {
    ow = make_weight(c->u.parts.wt[0], N, K, 32, w, wb[0]);
  } else {
    size_t r0 = 0;
    for (int i = 0; i < 3; i++) {
      op_weight pw = make_weight(c->u.parts.wt[i], c->u.parts.rows[i], K, 32, w + r0 * K, wb[i]);
      ow.part[i] = (struct op_weight_part){pw.data, pw.scales, c->u.parts.rows[i], pw.type, pw.group};
      r0 += c->u.parts.rows[i];
    }
    ow.n_parts = 3;
    ow.type = ow.part[0].type;
    ow.data = ow.part[0].data;
  }
  size_t bytes = (size_t)op_f16_bytes((uint32_t)N, (uint32_t)K);
  gbuf go = gb_out(bytes);
  traffic(bytes + (convert ? 4.0 * N * K : weight_bytes(c->u.parts.wt[0], N, K, 32)), 0);
  gpu_recorder *r = rec_new();
  wgllm_status s = convert ? op_convert_f16(r, gx.v, go.v, (uint32_t)N, (uint32_t)K)
                           : op_dequant_f16(r, &ow, go.v, (uint32_t)N, (uint32_t)K);
  CHECK(s == WGLLM_OK, "%s record: %s", g_case, gpu_recorder_error(r));
  exec(r, NULL);
  gpu_recorder_free(r);
  if (!g_perf) {
    const uint16_t *got = gb_fetch(&go);
    size_t bad = 0, pad = 0;
    for (size_t i = 0; i < N * K; i++)
      if (!f16_ok(got[i], w[i]) && bad++ < 4)
        fprintf(stderr, "  %s[%zu,%zu] got f16 %04x (%.9g) for %.9g\n", g_case, i / K, i % K, got[i],
                ref_f16_to_f32(got[i]), w[i]);
    for (size_t i = N * K; i < bytes / 2; i++)
      pad += got[i] != 0;
    CHECK(bad == 0, "%s: %zu of %zu elements not rounded to a neighbour", g_case, bad, N * K);
    CHECK(pad == 0, "%s: %zu of the padding rows' %zu halves not zero", g_case, pad, bytes / 2 - N * K);
  }
  gb_guards(&go, "out");
  gb_free(&go);
  if (gx.buf) gb_free(&gx);
  for (int i = 0; i < 3; i++)
    free_weight(wb[i]);
  free(w);
  return verdict();
}

static void cases_dequant_f16(void) {
  for (int wt = 0; wt < OP_W_COUNT; wt++) {
    tcase *c = add_case("dequant_f16", run_dequant_f16, "%s/N=130,K=256", op_wtype_name((op_wtype)wt));
    c->u.parts.wt[0] = (op_wtype)wt;
    c->u.parts.rows[0] = 130;
    c->u.parts.K = 256;
    c->u.parts.route = 0;
  }
  tcase *c = add_case("dequant_f16", run_dequant_f16, "parts/Q4_K,Q6_K,q4gsw/rows=64,40,26,K=512");
  c->u.parts.wt[0] = OP_W_Q4_K;
  c->u.parts.wt[1] = OP_W_Q6_K;
  c->u.parts.wt[2] = OP_W_Q4;
  c->u.parts.rows[0] = 64;
  c->u.parts.rows[1] = 40;
  c->u.parts.rows[2] = 26;
  c->u.parts.K = 512;
  c->u.parts.route = 2;
  c = add_case("dequant_f16", run_dequant_f16, "convert/M=67,K=96");
  c->u.parts.rows[0] = 67;
  c->u.parts.K = 96;
  c->u.parts.route = 1;
}

/* a linear case's parameters */
static void set_lin(tcase *c, op_wtype wt, uint32_t M, uint32_t N, uint32_t K, int bias, int route) {
  c->u.lin.wt = wt;
  c->u.lin.M = M;
  c->u.lin.N = N;
  c->u.lin.K = K;
  c->u.lin.group = 32;
  c->u.lin.bias = bias;
  c->u.lin.route = route;
}

/* gemm_f16/refuse: the predicate refuses an output under one 16 x 16 f32 matrix (M N < 256: the kernel stores
   whole matrices into y) and the op says so rather than recording */
static case_result run_gemm_f16_refuse(const tcase *c) {
  (void)c;
  gpu_context *ctx = th_gpu();
  if (!ctx->has_subgroup_matrix) return not_supported("the device grants no subgroup matrices");
  CHECK(!op_gemm_f16_supports(ctx, 9, 28, 32), "M N = 252 accepted");
  CHECK(op_gemm_f16_supports(ctx, 9, 29, 32), "M N = 261 refused");
  gbuf a = gb_out((size_t)op_f16_bytes(128, 32)), y = gb_out(9 * 28 * 4);
  gpu_recorder *r = rec_new();
  wgllm_status s = op_gemm_f16(r, a.v, a.v, (gpu_view){0}, y.v, 9, 28, 32);
  CHECK(s == WGLLM_ERR_UNSUPPORTED && strstr(gpu_recorder_error(r), "under 256"), "M N = 252: status %d, '%s'", (int)s,
        gpu_recorder_error(r));
  gpu_recorder_free(r);
  gb_free(&a);
  gb_free(&y);
  return verdict();
}

/* gemm_f16/...: the f16-operand path (op_convert_f16, op_dequant_f16, op_gemm_f16) under run_linear_mma's checks:
   every storage with 64-row tiles, then the other variants on three storages and the shape of several tiles */
static void cases_gemm_f16(void) {
  static const uint32_t s32[][3] = {{9, 29, 32}, {67, 129, 96}, {130, 260, 512}};
  static const uint32_t s256[][3] = {{9, 29, 256}, {67, 129, 512}, {130, 260, 512}};
  for (int wt = 0; wt < OP_W_COUNT; wt++)
    for (size_t i = 0; i < 3; i++) {
      int kq = wt == OP_W_Q2_K || wt == OP_W_Q3_K || wt == OP_W_Q4_K || wt == OP_W_Q5_K || wt == OP_W_Q6_K ||
               wt == OP_W_IQ4_XS;
      const uint32_t *sh = kq ? s256[i] : s32[i];
      tcase *c = add_case("gemm_f16", run_linear_mma, "%s/%s/M=%u,N=%u,K=%u,bias=%d", GEMM_F16_VARIANTS[0].name,
                          op_wtype_name((op_wtype)wt), sh[0], sh[1], sh[2], (int)(i % 2));
      set_lin(c, (op_wtype)wt, sh[0], sh[1], sh[2], (int)(i % 2), 4);
    }
  static const op_wtype vt[] = {OP_W_Q4, OP_W_Q4_K, OP_W_F16};
  for (int v = 1; v < 4; v++)
    for (size_t t = 0; t < 3; t++)
      for (int b = 0; b < 2; b++) {
        uint32_t M = b ? 200 : 256, N = b ? 300 : 256; /* ragged with a bias; whole tiles without (stored straight) */
        tcase *c = add_case("gemm_f16", run_linear_mma, "%s/%s/M=%u,N=%u,K=512,bias=%d", GEMM_F16_VARIANTS[v].name,
                            op_wtype_name(vt[t]), M, N, b);
        set_lin(c, vt[t], M, N, 512, b, 4 + v);
      }
  add_case("gemm_f16", run_gemm_f16_refuse, "refuse/M=9,N=28,K=32");
  for (size_t t = 0; t < 3; t++) {            /* op_linear_fast takes the f16 path where its scratch has x16 and w16 */
    for (int below = 0; below < 2; below++) { /* OP_F16_MIN_ROWS rows and more; fewer: matmul_mma */
      uint32_t M = below ? OP_F16_MIN_ROWS - 56 : OP_F16_MIN_ROWS + 4;
      tcase *c = add_case("gemm_f16", run_linear_mma, "route/%s/M=%u,N=300,K=512,bias=1", op_wtype_name(vt[t]), M);
      set_lin(c, vt[t], M, 300, 512, 1, OP_ROUTE_FAST_F16);
    }
  }
  for (size_t t = 0; t < 3; t++) { /* the default tiles stored straight too */
    tcase *c = add_case("gemm_f16", run_linear_mma, "%s/%s/M=256,N=256,K=512,bias=0", GEMM_F16_VARIANTS[0].name,
                        op_wtype_name(vt[t]));
    set_lin(c, vt[t], 256, 256, 512, 0, 4);
  }
}

/* gemm_perf/KERNEL/TYPE/...: the prefill GEMMs of the fast and exact precisions at the Llama-3.1-8B shape's
   projections and 512 tokens, for --perf on a real GPU (test_ops --perf -f gemm_perf): the same run functions and
   checks as their conformance cases, at sizes whose CPU references take minutes: a run without filters leaves them
   out, a filter naming them (-f gemm_perf) runs them. */
static void cases_gemm_perf(void) {
  static const uint32_t shapes[][3] = {{512, 6144, 4096}, {512, 4096, 4096}, {512, 28672, 4096}, {512, 4096, 14336}};
  static const char *names[] = {"qkv", "o", "gate_up", "down"};
  static const op_wtype types[] = {OP_W_Q4, OP_W_Q4_K};
  for (int kern = 0; kern < 4; kern++)
    for (size_t t = 0; t < 2; t++)
      for (size_t i = 0; i < 4; i++) {
        static const char *kn[] = {"mma64", "mma128", "q8", "f32"};
        tcase *c = add_case("gemm_perf",
                            kern <= 1   ? run_linear_mma
                            : kern == 2 ? run_linear_q8
                                        : run_linear,
                            "%s/%s/%s/M=%u,N=%u,K=%u", kn[kern], op_wtype_name(types[t]), names[i], shapes[i][0],
                            shapes[i][1], shapes[i][2]);
        c->u.lin.wt = types[t];
        c->u.lin.M = shapes[i][0];
        c->u.lin.N = shapes[i][1];
        c->u.lin.K = shapes[i][2];
        c->u.lin.group = 32;
        c->u.lin.bias = 0;
        c->u.lin.route = kern == 0 ? 3 : kern == 1 ? 2 : kern == 3 ? 1 : 0; /* run_linear's 1: the tiled GEMM */
      }
  /* the tensor-core GEMM on int8 operands, with the activations' quantization timed in the case */
  for (size_t t = 0; t < 2; t++)
    for (size_t i = 0; i < 4; i++) {
      tcase *c = add_case("gemm_perf", run_linear_q8, "i8mma/%s/%s/M=%u,N=%u,K=%u", op_wtype_name(types[t]), names[i],
                          shapes[i][0], shapes[i][1], shapes[i][2]);
      set_lin(c, types[t], shapes[i][0], shapes[i][1], shapes[i][2], 0, OP_ROUTE_GEMM_I8);
    }
  /* the f16-operand GEMM's variants and probes (the GEMM alone does not depend on the storage: q4gsw only, but
     the conversions timed beside it do: Q4_K too for the default; the probes at two shapes) */
  for (int v = 0; v < (int)(sizeof GEMM_F16_VARIANTS / sizeof GEMM_F16_VARIANTS[0]); v++)
    for (size_t t = 0; t < (v ? 1u : 2u); t++)
      for (size_t i = 0; i < 4; i++) {
        if (GEMM_F16_VARIANTS[v].probe && (i == 0 || i == 3)) continue; /* the probes: two shapes are enough */
        tcase *c = add_case("gemm_perf", run_linear_mma, "%s/%s/%s/M=%u,N=%u,K=%u", GEMM_F16_VARIANTS[v].name,
                            op_wtype_name(types[t]), names[i], shapes[i][0], shapes[i][1], shapes[i][2]);
        set_lin(c, types[t], shapes[i][0], shapes[i][1], shapes[i][2], 0, 4 + v);
      }
}

/* ---------------------------------------------------------------- embedding */

static case_result run_embedding(const tcase *c) {
  size_t T = c->u.emb.T, D = c->u.emb.D, V = c->u.emb.V;
  op_wtype wt = c->u.emb.wt;
  float scale = c->u.emb.scale;
  /* quantized rows hold whole groups or blocks: otherwise the op must refuse, and say why */
  uint32_t rowq = block_type(wt) >= 0 ? BLOCK_TYPES[block_type(wt)].qk : (wt == OP_W_Q4 || wt == OP_W_Q8) ? 32 : 1;
  if (D % rowq) {
    gbuf dummy = gb_in(NULL, 64);
    op_weight ow = {.type = wt, .data = dummy.v, .scales = dummy.v, .group = 32};
    gpu_recorder *r = rec_new();
    wgllm_status s = op_embedding(r, dummy.v, &ow, dummy.v, (uint32_t)T, (uint32_t)D, (uint32_t)V, scale);
    int ns = s == WGLLM_ERR_UNSUPPORTED;
    if (ns) not_supported("the op refuses: %s", gpu_recorder_error(r));
    CHECK(ns, "%s: a shape it cannot run was accepted (%s)", g_case, wgllm_status_name(s));
    gpu_recorder_free(r);
    gb_free(&dummy);
    return ns ? CASE_NOT_SUPPORTED : verdict();
  }
  float *table = malloc(V * D * 4 + 4);
  gbuf tb[2];
  op_weight ow = make_weight(wt, V, D, 32, table, tb);
  uint32_t *ids = malloc(T * 4);
  for (size_t t = 0; t < T; t++)
    ids[t] = t == 0 ? (uint32_t)(V - 1) : th_u32(&rng) % V;
  float *want = malloc(T * D * 4);
  gbuf gi = gb_in(ids, T * 4), go = gb_out(T * D * 4);
  traffic(weight_bytes(wt, T, D, 32) + 4.0 * T * D, 0);
  gpu_recorder *r = rec_new();
  CHECK(op_embedding(r, gi.v, &ow, go.v, (uint32_t)T, (uint32_t)D, (uint32_t)V, scale) == WGLLM_OK, "%s record: %s",
        g_case, gpu_recorder_error(r));
  exec(r, NULL);
  gpu_recorder_free(r);
  ref_embedding(ids, table, want, T, D, scale);
  cmp("out", gb_fetch(&go), want, T * D, 0, 1e-6);
  gb_guards(&go, "out");
  free_weight(tb);
  gb_free(&gi);
  gb_free(&go);
  free(table);
  free(ids);
  free(want);
  return verdict();
}

static void cases_embedding(void) {
  static const uint32_t shapes[][3] = {{1, 32, 1}, {3, 64, 11}, {5, 2048, 1000}, {17, 96, 257}, {1, 7, 3}};
  for (int wt = 0; wt < OP_W_COUNT; wt++)
    for (size_t i = 0; i < 5; i++) {
      float scale = i % 2 ? sqrtf((float)shapes[i][1]) : 1.0f;
      tcase *c = add_case("embedding", run_embedding, "%s/T=%u,D=%u,V=%u,scale=%g", op_wtype_name((op_wtype)wt),
                          shapes[i][0], shapes[i][1], shapes[i][2], scale);
      c->u.emb.wt = (op_wtype)wt;
      c->u.emb.T = shapes[i][0];
      c->u.emb.D = shapes[i][1];
      c->u.emb.V = shapes[i][2];
      c->u.emb.scale = scale;
    }
}

/* ---------------------------------------------------------------- GLU */

static case_result run_glu(const tcase *c) {
  size_t n = c->u.glu.n, rows = c->u.glu.rows;
  int fused = c->u.glu.fused, act = (int)c->u.glu.act;
  /* fused 1: gate at 0, up at n + 3 in one row; 2: up rows of their own stride (3n + 5, from 2n + 1), as a
     layer's slice of Gemma 4's per-layer inputs */
  size_t stride = fused == 1 ? 2 * n + 3 : n, ustride = fused == 2 ? 3 * n + 5 : stride;
  float *x = rnd(rows * stride, -6, 6), *u = rnd(rows * ustride, -2, 2), *want = malloc(rows * n * 4);
  gbuf gx = gb_in(x, rows * stride * 4), gu = gb_in(u, rows * ustride * 4), go = gb_out(rows * n * 4);
  traffic(12.0 * rows * n, 0);
  gpu_recorder *r = rec_new();
  uint32_t uoff = fused == 1 ? (uint32_t)n + 3 : fused == 2 ? 2 * (uint32_t)n + 1 : 0;
  wgllm_status s = fused == 2 ? op_glu_strided(r, gx.v, gu.v, go.v, (uint32_t)n, (uint32_t)rows, (uint32_t)stride, 0,
                                               (uint32_t)ustride, uoff, (op_act)act)
                              : op_glu(r, gx.v, fused ? gx.v : gu.v, go.v, (uint32_t)n, (uint32_t)rows,
                                       (uint32_t)stride, 0, uoff, (op_act)act);
  CHECK(s == WGLLM_OK, "%s record: %s", g_case, gpu_recorder_error(r));
  exec(r, NULL);
  gpu_recorder_free(r);
  ref_glu_strided(x, fused == 1 ? x : u, want, n, rows, stride, 0, ustride, uoff, act);
  cmp("out", gb_fetch(&go), want, rows * n, 1e-6, 1e-5);
  gb_guards(&go, "out");
  gb_free(&gx);
  gb_free(&gu);
  gb_free(&go);
  free(x);
  free(u);
  free(want);
  return verdict();
}

static void cases_glu(void) {
  static const uint32_t shapes[][2] = {{1, 1}, {7, 3}, {192, 24}, {8192, 2}};
  for (int act = 0; act < 2; act++)
    for (size_t i = 0; i < 4; i++)
      for (int fused = 0; fused < 3; fused++) {
        tcase *c = add_case("glu", run_glu, "%s/n=%u,rows=%u,fused=%d", act ? "gelu_tanh" : "silu", shapes[i][0],
                            shapes[i][1], fused);
        c->u.glu.act = (op_act)act;
        c->u.glu.n = shapes[i][0];
        c->u.glu.rows = shapes[i][1];
        c->u.glu.fused = fused;
      }
  tcase *c = add_case("add_inplace", run_add_inplace, "n=3003,nb=7"); /* 7 * 429 */
  c->u.bin.n = 3003;
  c->u.bin.nb = 7;
}

/* ---------------------------------------------------------------- KV caches */

/* a cache of n elements as the GPU stores it (f32, or f16 pairs in u32); f16: vals are rounded in place */
static gbuf cache_upload(float *vals, size_t n, int f16, int inplace) {
  if (!f16) return inplace ? gb_io(vals, n * 4) : gb_in(vals, n * 4);
  uint16_t *h = malloc(n * 2 + 4);
  for (size_t i = 0; i < n; i++) {
    h[i] = ref_f32_to_f16(vals[i]);
    vals[i] = ref_f16_to_f32(h[i]);
  }
  gbuf g = inplace ? gb_io(h, n * 2) : gb_in(h, n * 2);
  free(h);
  return g;
}

/* the body of a fetched cache as floats */
static void cache_values(const void *body, size_t n, int f16, float *dst) {
  for (size_t i = 0; i < n; i++)
    dst[i] = f16 ? ref_f16_to_f32(((const uint16_t *)body)[i]) : ((const float *)body)[i];
}

/* ---------------------------------------------------------------- attention (KV append, then attention) */

static case_result run_attention(const tcase *c) {
  int f16 = c->u.attn.f16;
  size_t T = c->u.attn.T, past = c->u.attn.past, H = c->u.attn.H, KVH = c->u.attn.KVH, D = c->u.attn.D;
  uint32_t window = c->u.attn.window;
  float softcap = c->u.attn.softcap;
  size_t ctx = past + T + 3, n = KVH * ctx * D;
  op_kv_layout kv = {.n_kv_head = (uint32_t)KVH, .head_dim = (uint32_t)D, .ctx = (uint32_t)ctx, .f16 = f16};
  /* cache prefilled with the past; new K/V rows come from a fused [T][q|k|v] buffer */
  size_t qkv = (H + 2 * KVH) * D;
  float *kc = rnd(n, -1, 1), *vc = rnd(n, -1, 1), *x = rnd(T * qkv, -1, 1);
  uint32_t *pos = malloc(T * 4);
  for (size_t t = 0; t < T; t++)
    pos[t] = (uint32_t)(past + t);
  gbuf gk = cache_upload(kc, n, f16, 1), gv = cache_upload(vc, n, f16, 1);
  gbuf gx = gb_in(x, T * qkv * 4), gp = gb_in(pos, T * 4), go = gb_out(T * H * D * 4);
  double keys = 0;
  for (size_t t = 0; t < T; t++)
    keys += (double)(past + t + 1);
  traffic(2.0 * KVH * (past + T) * D * (f16 ? 2 : 4) + 4.0 * T * (qkv + H * D), 4.0 * H * D * keys);
  gpu_recorder *r = rec_new();
  op_kv_write_params wp = {.n_tokens = (uint32_t)T,
                           .k_off = (uint32_t)(H * D),
                           .k_stride = (uint32_t)qkv,
                           .v_off = (uint32_t)((H + KVH) * D),
                           .v_stride = (uint32_t)qkv};
  CHECK(op_kv_write(r, &kv, &wp, gx.v, gx.v, gp.v, gk.v, gv.v) == WGLLM_OK, "%s record kv_write: %s", g_case,
        gpu_recorder_error(r));
  op_attn_params ap = {.n_tokens = (uint32_t)T,
                       .n_head = (uint32_t)H,
                       .q_stride = (uint32_t)qkv,
                       .q_off = 0,
                       .out_stride = (uint32_t)(H * D),
                       .window = window,
                       .scale = 1.0f / sqrtf((float)D),
                       .softcap = softcap};
  op_attn_kernel_opts force = {
      .no_subgroups = c->u.attn.nosg == 1, .untiled = c->u.attn.nosg == 2, .ungrouped = c->u.attn.nosg == 3};
  CHECK(op_attention_forced(r, &kv, &ap, &force, gx.v, gk.v, gv.v, gp.v, go.v) == WGLLM_OK, "%s record: %s", g_case,
        gpu_recorder_error(r));
  exec(r, NULL);
  gpu_recorder_free(r);
  /* the same tokens in dispatches of 1, 6 and the rest: a token's result does not depend on which tokens share its
     workgroup (the chunked prefill relies on it), so the rows agree bit for bit */
  size_t split_bad = 0;
  if (c->u.attn.nosg == 4 && T > 1 && !g_perf) {
    const float *whole = gb_fetch(&go);
    for (size_t t0 = 0; t0 < T;) {
      size_t n1 = t0 == 0 ? 1 : t0 == 1 ? 6 : T - t0;
      if (t0 + n1 > T) n1 = T - t0;
      gbuf px = gb_in(x + t0 * qkv, n1 * qkv * 4), pp = gb_in(pos + t0, n1 * 4), po = gb_out(n1 * H * D * 4);
      op_attn_params pa = ap;
      pa.n_tokens = (uint32_t)n1;
      gpu_recorder *r2 = rec_new();
      CHECK(op_attention_forced(r2, &kv, &pa, &force, px.v, gk.v, gv.v, pp.v, po.v) == WGLLM_OK, "%s record part: %s",
            g_case, gpu_recorder_error(r2));
      exec_aux(r2);
      gpu_recorder_free(r2);
      split_bad += memcmp(gb_fetch(&po), whole + t0 * H * D, n1 * H * D * 4) != 0;
      gb_guards(&po, "part's out");
      gb_free(&px);
      gb_free(&pp);
      gb_free(&po);
      t0 += n1;
    }
  }
  CHECK(split_bad == 0, "%s: %zu dispatches of part of the tokens differ from the whole dispatch's rows", g_case,
        split_bad);
  /* reference: write the new rows (rounded like the cache stores them), then attend */
  for (size_t t = 0; t < T; t++)
    for (size_t i = 0; i < KVH * D; i++) {
      size_t h = i / D, d = i % D, dst = (h * ctx + pos[t]) * D + d;
      float kv_k = x[t * qkv + H * D + i], kv_v = x[t * qkv + (H + KVH) * D + i];
      kc[dst] = f16 ? ref_f16_to_f32(ref_f32_to_f16(kv_k)) : kv_k;
      vc[dst] = f16 ? ref_f16_to_f32(ref_f32_to_f16(kv_v)) : kv_v;
    }
  float *want = malloc(T * H * D * 4), *cgot = malloc(n * 4);
  ref_attention(x, qkv, 0, kc, vc, pos, want, H * D, T, H, KVH, D, ctx, window, 1.0f / sqrtf((float)D), softcap, NULL);
  cmp("out", gb_fetch(&go), want, T * H * D, 2e-6, 2e-5);
  gb_guards(&go, "out");
  /* the cache rows written on the GPU match (the whole caches: other rows unchanged) */
  cache_values(gb_fetch(&gk), n, f16, cgot);
  cmp("kv_write K cache", cgot, kc, n, 0, 0);
  cache_values(gb_fetch(&gv), n, f16, cgot);
  cmp("kv_write V cache", cgot, vc, n, 0, 0);
  gb_guards(&gk, "K cache");
  gb_guards(&gv, "V cache");
  gb_free(&gk);
  gb_free(&gv);
  gb_free(&gx);
  gb_free(&gp);
  gb_free(&go);
  free(kc);
  free(vc);
  free(x);
  free(pos);
  free(want);
  free(cgot);
  /* the op's choice on a case made for the KV-head group kernel: where its predicate refuses the shape here, the
     fallback was checked, and the case says so */
  op_attn_gqa_plan plan;
  if (c->u.attn.gqa && (c->u.attn.nosg == 0 || c->u.attn.nosg == 4) && verdict() == CASE_PASS &&
      !op_attn_prefill_gqa_plan(th_gpu(), &kv, (uint32_t)H, &plan))
    return not_supported("the KV-head group kernel does not take this shape on this device (its fallback passed)");
  return verdict();
}

/* attention/mma/...: op_attention_mma (prefill attention on subgroup matrices, the fast precision) where the device
   grants them (not supported elsewhere, saying why). The reference is ref_attention over q, K and V rounded to f16
   as the kernel rounds them (clamped), so what remains is the f32 sums' order and the probabilities rounded to f16
   for P V: each output within 2e-3 of it (|v| <= 1; a probability's rounding moves an output by at most 2^-11 of
   the largest |v|, twice over with the sum of the unrounded ones dividing). The token blocks of 64 and key blocks
   of 32 are crossed by the shapes (T up to 130, past up to 300), with windows, soft-capping and GQA. */
static case_result run_attention_mma(const tcase *c) {
  int f16 = c->u.attn.f16;
  size_t T = c->u.attn.T, past = c->u.attn.past, H = c->u.attn.H, KVH = c->u.attn.KVH, D = c->u.attn.D;
  gpu_context *ctx_gpu = th_gpu();
  if (!ctx_gpu->has_subgroup_matrix)
    return not_supported("the device grants no subgroup matrices (chromium-experimental-subgroup-matrix with "
                         "shader-f16)");
  size_t ctx = past + T + 3, n = KVH * ctx * D, qkv = (H + 2 * KVH) * D;
  op_kv_layout kv = {.n_kv_head = (uint32_t)KVH, .head_dim = (uint32_t)D, .ctx = (uint32_t)ctx, .f16 = f16};
  op_attn_params ap = {.n_tokens = (uint32_t)T,
                       .n_head = (uint32_t)H,
                       .q_stride = (uint32_t)qkv,
                       .out_stride = (uint32_t)(H * D),
                       .window = c->u.attn.window,
                       .scale = 1.0f / sqrtf((float)D),
                       .softcap = c->u.attn.softcap};
  VERIFY(op_attention_mma_supports(ctx_gpu, &kv, &ap), "%s: the predicate refuses it", g_case);
  float *kc = rnd(n, -1, 1), *vc = rnd(n, -1, 1), *x = rnd(T * qkv, -1, 1);
  uint32_t *pos = malloc(T * 4);
  for (size_t t = 0; t < T; t++)
    pos[t] = (uint32_t)(past + t);
  gbuf gk = cache_upload(kc, n, f16, 1), gv = cache_upload(vc, n, f16, 1);
  gbuf gx = gb_in(x, T * qkv * 4), gp = gb_in(pos, T * 4), go = gb_out(T * H * D * 4);
  double keys = 0;
  for (size_t t = 0; t < T; t++)
    keys += (double)(past + t + 1);
  traffic(2.0 * KVH * (past + T) * D * (f16 ? 2 : 4) + 4.0 * T * (qkv + H * D), 4.0 * H * D * keys);
  gpu_recorder *r = rec_new();
  op_kv_write_params wp = {.n_tokens = (uint32_t)T,
                           .k_off = (uint32_t)(H * D),
                           .k_stride = (uint32_t)qkv,
                           .v_off = (uint32_t)((H + KVH) * D),
                           .v_stride = (uint32_t)qkv};
  CHECK(op_kv_write(r, &kv, &wp, gx.v, gx.v, gp.v, gk.v, gv.v) == WGLLM_OK, "%s record kv_write: %s", g_case,
        gpu_recorder_error(r));
  CHECK(op_attention_mma(r, &kv, &ap, gx.v, gk.v, gv.v, gp.v, go.v) == WGLLM_OK, "%s record: %s", g_case,
        gpu_recorder_error(r));
  exec(r, NULL);
  gpu_recorder_free(r);
  if (!g_perf) {
    /* the reference's operands as the kernel rounds them: the new rows into the caches, then everything to f16 */
    for (size_t t = 0; t < T; t++)
      for (size_t i = 0; i < KVH * D; i++) {
        size_t dst = ((i / D) * ctx + pos[t]) * D + i % D;
        kc[dst] = x[t * qkv + H * D + i];
        vc[dst] = x[t * qkv + (H + KVH) * D + i];
      }
    for (size_t i = 0; i < n; i++) {
      kc[i] = f16_round(kc[i]);
      vc[i] = f16_round(vc[i]);
    }
    for (size_t i = 0; i < T * qkv; i++)
      x[i] = f16_round(x[i]);
    float *want = malloc(T * H * D * 4);
    ref_attention(x, qkv, 0, kc, vc, pos, want, H * D, T, H, KVH, D, ctx, c->u.attn.window, ap.scale, ap.softcap, NULL);
    cmp("out", gb_fetch(&go), want, T * H * D, 2e-3, 0);
    free(want);
  }
  gb_guards(&go, "out");
  gb_free(&gk);
  gb_free(&gv);
  gb_free(&gx);
  gb_free(&gp);
  gb_free(&go);
  free(kc);
  free(vc);
  free(x);
  free(pos);
  return verdict();
}

/* attention/sinks/...: attention sinks (gpt-oss: a logit per head in the softmax's denominator, no value) through
   every kernel that takes them: the op's prefill choice and each fallback (workgroup, untiled, one-head tiled), each
   also on a paged pool (an identity block table), and flash-decoding (its worst-case grid, one sequence and the
   paged batch of one); against ref_attention with the sinks, a sink far above and far below the scores included. */
static case_result run_attention_sinks(const tcase *c) {
  int f16 = c->u.attn.f16;
  size_t T = c->u.attn.T, past = c->u.attn.past, H = c->u.attn.H, KVH = c->u.attn.KVH, D = c->u.attn.D;
  uint32_t window = c->u.attn.window, BS = 16;
  size_t ctx = (past + T + BS - 1) / BS * BS, n = KVH * ctx * D;
  op_kv_layout kv = {.n_kv_head = (uint32_t)KVH, .head_dim = (uint32_t)D, .ctx = (uint32_t)ctx, .f16 = f16};
  float *kc = rnd(n, -1, 1), *vc = rnd(n, -1, 1), *q = rnd(T * H * D, -1, 1), *sk = rnd(H, -1, 2);
  sk[0] = 30.0f;                   /* far above every score: the outputs shrink towards 0 */
  if (H > 1) sk[1] = -30.0f;       /* far below: as without a sink */
  for (size_t i = 0; i < n; i++) { /* the values the cache holds */
    kc[i] = f16 ? ref_f16_to_f32(ref_f32_to_f16(kc[i])) : kc[i];
    vc[i] = f16 ? ref_f16_to_f32(ref_f32_to_f16(vc[i])) : vc[i];
  }
  uint32_t *pos = malloc(T * 4), *table = malloc(ctx / BS * 4);
  for (size_t t = 0; t < T; t++)
    pos[t] = (uint32_t)(past + t);
  for (size_t b = 0; b < ctx / BS; b++)
    table[b] = (uint32_t)b;
  gbuf gk = cache_upload(kc, n, f16, 0), gv = cache_upload(vc, n, f16, 0), gq = gb_in(q, T * H * D * 4),
       gp = gb_in(pos, T * 4), gs = gb_in(sk, H * 4), gt = gb_in(table, ctx / BS * 4),
       gpart = gb_out(op_attn_partial_bytes(&kv, (uint32_t)H, 0));
  float *want = malloc(T * H * D * 4);
  ref_attention(q, H * D, 0, kc, vc, pos, want, H * D, T, H, KVH, D, ctx, window, 1.0f / sqrtf((float)D), 0.0f, sk);
  op_kv_pages pg = {.table = gt.v, .max_blocks = (uint32_t)(ctx / BS), .block = BS, .n_blocks = (uint32_t)(ctx / BS)};
  static const char *const routes[] = {"op's choice", "workgroup", "untiled", "ungrouped", "decode"};
  for (int route = 0; route < 5; route++)
    for (int paged = 0; paged < 2; paged++) {
      if (route == 4 && (T != 1 || !op_attention_decode_supports(&kv, (uint32_t)H))) continue;
      op_attn_params ap = {.n_tokens = (uint32_t)T,
                           .n_head = (uint32_t)H,
                           .q_stride = (uint32_t)(H * D),
                           .out_stride = (uint32_t)(H * D),
                           .window = window,
                           .scale = 1.0f / sqrtf((float)D),
                           .pages = paged ? &pg : NULL,
                           .sinks = gs.v};
      op_attn_kernel_opts force = {.no_subgroups = route == 1, .untiled = route == 2, .ungrouped = route == 3};
      gbuf go = gb_out(T * H * D * 4);
      gpu_recorder *r = rec_new();
      wgllm_status st = route == 4 ? op_attention_decode(r, &kv, &ap, gq.v, gk.v, gv.v, gp.v, gpart.v, NULL, go.v)
                                   : op_attention_forced(r, &kv, &ap, &force, gq.v, gk.v, gv.v, gp.v, go.v);
      CHECK(st == WGLLM_OK, "%s record (%s%s): %s", g_case, routes[route], paged ? ", paged" : "",
            gpu_recorder_error(r));
      exec(r, NULL);
      gpu_recorder_free(r);
      char part[64];
      snprintf(part, sizeof part, "out (%s%s)", routes[route], paged ? ", paged" : "");
      cmp(part, gb_fetch(&go), want, T * H * D, 2e-6, 2e-5);
      gb_guards(&go, part);
      gb_free(&go);
    }
  gb_free(&gk);
  gb_free(&gv);
  gb_free(&gq);
  gb_free(&gp);
  gb_free(&gs);
  gb_free(&gt);
  gb_free(&gpart);
  free(kc);
  free(vc);
  free(q);
  free(sk);
  free(pos);
  free(table);
  free(want);
  return verdict();
}

static void cases_attention(void) {
  /* T new tokens, past tokens already in cache, n_head, n_kv_head, head_dim, window, softcap*10 */
  static const uint32_t shapes[][7] = {
      {1, 0, 1, 1, 4, 0, 0},         {5, 0, 6, 2, 16, 0, 0},  {1, 23, 6, 2, 16, 0, 0},    {7, 130, 4, 4, 24, 0, 0},
      {3, 300, 8, 2, 64, 0, 0},      {9, 20, 4, 1, 32, 8, 0}, {1, 40, 4, 2, 32, 8, 300},  {4, 5, 2, 1, 512, 0, 0},
      {2, 257, 4, 2, 128, 100, 500}, {40, 3, 6, 2, 64, 0, 0}, {33, 100, 5, 1, 128, 16, 0}};
  for (int nosg = 0; nosg < 3; nosg++)
    for (int f16 = 0; f16 < 2; f16++)
      for (size_t i = 0; i < 11; i++) {
        const uint32_t *s = shapes[i];
        tcase *c = add_case("attention", run_attention, "%s/T=%u,past=%u,H=%u/%u,D=%u,win=%u,cap=%g%s",
                            f16 ? "f16kv" : "f32kv", s[0], s[1], s[2], s[3], s[4], s[5], s[6] / 10.0,
                            nosg == 1   ? "/workgroup"
                            : nosg == 2 ? "/untiled"
                                        : "");
        c->u.attn.nosg = nosg;
        c->u.attn.f16 = f16;
        c->u.attn.T = s[0];
        c->u.attn.past = s[1];
        c->u.attn.H = s[2];
        c->u.attn.KVH = s[3];
        c->u.attn.D = s[4];
        c->u.attn.window = s[5];
        c->u.attn.softcap = (float)s[6] / 10.0f;
      }
  /* for the KV-head group kernel (kernels/attn_prefill_gqa.wgsl): token counts and cache lengths that are not
     multiples of its token blocks or key tiles, rep = n_head / n_kv_head 1, 2, 3, 4, 7, 8, 16, head_dim 16 to 512
     (vec4s fewer than, as many as and more than the subgroup's lanes), windows and soft-capping; the op's choice,
     then in dispatches of part of the tokens, then the one-head kernels' order for comparison */
  static const uint32_t gqa[][7] = {{13, 37, 3, 3, 64, 0, 0},  {21, 50, 4, 2, 128, 0, 0}, {19, 70, 6, 2, 64, 0, 0},
                                    {11, 9, 3, 1, 128, 20, 0}, {37, 100, 8, 2, 64, 0, 0}, {23, 5, 4, 1, 128, 0, 0},
                                    {9, 30, 7, 1, 64, 10, 0},  {29, 45, 16, 2, 64, 0, 0}, {17, 60, 8, 1, 128, 33, 0},
                                    {10, 20, 16, 1, 32, 0, 0}, {6, 10, 2, 1, 512, 0, 0},  {12, 40, 4, 2, 64, 0, 300},
                                    {15, 26, 6, 2, 24, 7, 0},  {27, 3, 9, 3, 16, 0, 0},   {2, 0, 8, 2, 128, 0, 0},
                                    {70, 66, 4, 1, 64, 50, 0}, {25, 80, 14, 2, 256, 0, 0}};
  /* sinks: T, past, H/KVH, D, window (gpt-oss: 64 heads over 8 of 64 dims, a window of 128) */
  static const uint32_t sinks[][6] = {{1, 40, 8, 2, 64, 0},    {1, 200, 64, 8, 64, 128}, {9, 30, 8, 1, 64, 0},
                                      {21, 50, 4, 2, 128, 16}, {3, 0, 6, 2, 32, 0},      {33, 140, 64, 8, 64, 128}};
  for (int f16 = 0; f16 < 2; f16++)
    for (size_t i = 0; i < sizeof sinks / sizeof sinks[0]; i++) {
      const uint32_t *s = sinks[i];
      tcase *c = add_case("attention", run_attention_sinks, "sinks/%s/T=%u,past=%u,H=%u/%u,D=%u,win=%u",
                          f16 ? "f16kv" : "f32kv", s[0], s[1], s[2], s[3], s[4], s[5]);
      c->u.attn.f16 = f16;
      c->u.attn.T = s[0];
      c->u.attn.past = s[1];
      c->u.attn.H = s[2];
      c->u.attn.KVH = s[3];
      c->u.attn.D = s[4];
      c->u.attn.window = s[5];
    }
  static const int modes[] = {0, 4, 3};
  for (int mi = 0; mi < 3; mi++)
    for (int f16 = 0; f16 < 2; f16++)
      for (size_t i = 0; i < sizeof gqa / sizeof gqa[0]; i++) {
        const uint32_t *s = gqa[i];
        int nosg = modes[mi];
        tcase *c = add_case("attention", run_attention, "gqa/%s/T=%u,past=%u,H=%u/%u,D=%u,win=%u,cap=%g%s",
                            f16 ? "f16kv" : "f32kv", s[0], s[1], s[2], s[3], s[4], s[5], s[6] / 10.0,
                            nosg == 4   ? "/parts"
                            : nosg == 3 ? "/ungrouped"
                                        : "");
        c->u.attn.nosg = nosg;
        c->u.attn.gqa = 1;
        c->u.attn.f16 = f16;
        c->u.attn.T = s[0];
        c->u.attn.past = s[1];
        c->u.attn.H = s[2];
        c->u.attn.KVH = s[3];
        c->u.attn.D = s[4];
        c->u.attn.window = s[5];
        c->u.attn.softcap = (float)s[6] / 10.0f;
      }
}

static void cases_attention_mma(void) {
  /* T, past, n_head, n_kv_head, head_dim, window, softcap*10 */
  static const uint32_t sh[][7] = {{2, 0, 8, 2, 128, 0, 0},    {13, 37, 3, 3, 64, 0, 0},    {21, 50, 4, 2, 128, 0, 0},
                                   {11, 29, 3, 1, 128, 20, 0}, {37, 100, 8, 2, 64, 0, 0},   {9, 30, 7, 1, 64, 10, 0},
                                   {17, 60, 8, 1, 128, 33, 0}, {12, 40, 4, 2, 64, 0, 300},  {70, 66, 4, 1, 64, 50, 0},
                                   {130, 70, 4, 2, 128, 0, 0}, {65, 300, 2, 1, 128, 100, 0}};
  for (int f16 = 0; f16 < 2; f16++)
    for (size_t i = 0; i < sizeof sh / sizeof sh[0]; i++) {
      const uint32_t *s = sh[i];
      tcase *c = add_case("attention", run_attention_mma, "mma/%s/T=%u,past=%u,H=%u/%u,D=%u,win=%u,cap=%g",
                          f16 ? "f16kv" : "f32kv", s[0], s[1], s[2], s[3], s[4], s[5], s[6] / 10.0);
      c->u.attn.f16 = f16;
      c->u.attn.T = s[0];
      c->u.attn.past = s[1];
      c->u.attn.H = s[2];
      c->u.attn.KVH = s[3];
      c->u.attn.D = s[4];
      c->u.attn.window = s[5];
      c->u.attn.softcap = (float)s[6] / 10.0f;
    }
}

/* A sliding-window layer's ring cache (position p in slot p % slots): the T new tokens are written by kv_write
   into their slots, over older positions, then the prefill kernel or flash-decoding attends; the reference is
   ref_attention over the same keys in a linear cache. Slot counts not a multiple of any chunk length make keys
   wrap inside kernel blocks and decode chunks. */
static case_result run_attention_ring(const tcase *c) {
  int f16 = c->u.attn.f16, decode = c->u.attn.decode;
  size_t T = c->u.attn.T, past = c->u.attn.past, H = c->u.attn.H, KVH = c->u.attn.KVH, D = c->u.attn.D;
  size_t S = c->u.attn.slots, L = past + T;
  uint32_t window = c->u.attn.window;
  size_t nl = KVH * L * D, nr = KVH * S * D, qkv = (H + 2 * KVH) * D;
  float *kl = rnd(nl, -1, 1), *vl = rnd(nl, -1, 1), *x = rnd(T * qkv, -1, 1);
  float *kr = rnd(nr, -1, 1), *vr = rnd(nr, -1, 1); /* slots of positions before the ring's span: noise */
  for (size_t i = 0; f16 && i < nl; i++) {
    kl[i] = ref_f16_to_f32(ref_f32_to_f16(kl[i]));
    vl[i] = ref_f16_to_f32(ref_f32_to_f16(vl[i]));
  }
  for (size_t h = 0; h < KVH; h++) /* the ring holds the last S past positions */
    for (size_t j = past > S ? past - S : 0; j < past; j++)
      for (size_t d = 0; d < D; d++) {
        kr[(h * S + j % S) * D + d] = kl[(h * L + j) * D + d];
        vr[(h * S + j % S) * D + d] = vl[(h * L + j) * D + d];
      }
  uint32_t *pos = malloc(T * 4);
  for (size_t t = 0; t < T; t++)
    pos[t] = (uint32_t)(past + t);
  op_kv_layout kv = {.n_kv_head = (uint32_t)KVH, .head_dim = (uint32_t)D, .ctx = (uint32_t)S, .f16 = f16};
  gbuf gk = cache_upload(kr, nr, f16, 1), gv = cache_upload(vr, nr, f16, 1);
  gbuf gx = gb_in(x, T * qkv * 4), gp = gb_in(pos, T * 4), go = gb_out(T * H * D * 4);
  gbuf gpart = gb_out(op_attn_partial_bytes(&kv, (uint32_t)H, 0));
  traffic(2.0 * KVH * window * D * (f16 ? 2 : 4), 4.0 * H * D * window * T);
  gpu_recorder *r = rec_new();
  op_kv_write_params wp = {.n_tokens = (uint32_t)T,
                           .k_off = (uint32_t)(H * D),
                           .k_stride = (uint32_t)qkv,
                           .v_off = (uint32_t)((H + KVH) * D),
                           .v_stride = (uint32_t)qkv};
  CHECK(op_kv_write(r, &kv, &wp, gx.v, gx.v, gp.v, gk.v, gv.v) == WGLLM_OK, "%s record kv_write: %s", g_case,
        gpu_recorder_error(r));
  op_attn_params ap = {.n_tokens = (uint32_t)T,
                       .n_head = (uint32_t)H,
                       .q_stride = (uint32_t)qkv,
                       .q_off = 0,
                       .out_stride = (uint32_t)(H * D),
                       .window = window,
                       .scale = 1.0f / sqrtf((float)D),
                       .softcap = 0.0f};
  wgllm_status st = decode ? op_attention_decode(r, &kv, &ap, gx.v, gk.v, gv.v, gp.v, gpart.v, NULL, go.v)
                           : op_attention(r, &kv, &ap, gx.v, gk.v, gv.v, gp.v, go.v);
  CHECK(st == WGLLM_OK, "%s record: %s", g_case, gpu_recorder_error(r));
  exec(r, NULL);
  gpu_recorder_free(r);
  for (size_t t = 0; t < T; t++) /* the new rows, rounded as the cache stores them */
    for (size_t i = 0; i < KVH * D; i++) {
      size_t h = i / D, d = i % D, dst = (h * L + pos[t]) * D + d;
      float k = x[t * qkv + H * D + i], v = x[t * qkv + (H + KVH) * D + i];
      kl[dst] = f16 ? ref_f16_to_f32(ref_f32_to_f16(k)) : k;
      vl[dst] = f16 ? ref_f16_to_f32(ref_f32_to_f16(v)) : v;
    }
  float *want = malloc(T * H * D * 4);
  ref_attention(x, qkv, 0, kl, vl, pos, want, H * D, T, H, KVH, D, L, window, 1.0f / sqrtf((float)D), 0.0f, NULL);
  cmp("out", gb_fetch(&go), want, T * H * D, 2e-6, 2e-5);
  gb_guards(&go, "out");
  gb_guards(&gk, "K cache");
  gb_guards(&gv, "V cache");
  gbuf *all[] = {&gk, &gv, &gx, &gp, &go, &gpart};
  for (size_t i = 0; i < 6; i++)
    gb_free(all[i]);
  free(kl);
  free(vl);
  free(kr);
  free(vr);
  free(x);
  free(pos);
  free(want);
  return verdict();
}

static void cases_attention_ring(void) {
  /* T, past, n_head, n_kv_head, head_dim, window, slots, decode */
  static const uint32_t shapes[][8] = {
      {5, 300, 4, 2, 32, 8, 128, 0},    {16, 1000, 4, 1, 64, 100, 138, 0}, {1, 275, 4, 2, 32, 8, 138, 1},
      {1, 1000, 8, 2, 64, 100, 138, 1}, {1, 255, 4, 4, 16, 120, 128, 1},   {3, 140, 6, 2, 16, 130, 138, 0},
      {20, 300, 6, 2, 64, 40, 138, 0},  {9, 500, 8, 1, 128, 100, 138, 0},  {33, 260, 12, 4, 32, 120, 160, 0}};
  for (int f16 = 0; f16 < 2; f16++)
    for (size_t i = 0; i < sizeof shapes / sizeof shapes[0]; i++) {
      const uint32_t *s = shapes[i];
      tcase *c =
          add_case("attention_ring", run_attention_ring, "%s/%s/T=%u,past=%u,H=%u/%u,D=%u,win=%u,slots=%u",
                   f16 ? "f16kv" : "f32kv", s[7] ? "decode" : "prefill", s[0], s[1], s[2], s[3], s[4], s[5], s[6]);
      c->u.attn.f16 = f16;
      c->u.attn.T = s[0];
      c->u.attn.past = s[1];
      c->u.attn.H = s[2];
      c->u.attn.KVH = s[3];
      c->u.attn.D = s[4];
      c->u.attn.window = s[5];
      c->u.attn.slots = s[6];
      c->u.attn.decode = (int)s[7];
    }
}

/* ---------------------------------------------------------------- flash-decoding

   Split + reduce, indirect and worst-case grids, against the straightforward kernel and the CPU reference, at
   lengths around the 128-key chunk and with windows and soft-capping. One case per mode; the modes of a
   (storage, shape, length) share a fixture (data, reference, the straightforward kernel's output, the partial
   and indirect scratch), built by the first of them that runs. */
static const struct {
  uint32_t H, KVH, D, window;
  float cap;
  uint32_t ctx;
} FD_SHAPES[] = {{8, 2, 64, 0, 0, 1030},     {4, 4, 32, 0, 0, 1030},   {8, 1, 128, 100, 0, 1030},
                 {6, 2, 16, 0, 30.0f, 1030}, {16, 1, 256, 0, 0, 1030}, {32, 8, 32, 0, 0, 2100}};
static const uint32_t FD_LENS[] = {1, 2, 127, 128, 129, 300, 1000};
#define FD_MODES 10

static struct {
  int valid, f16;
  size_t si, li;
  float *want, *plain;
  gbuf k, v, q, p, part, ind;
} fd;

static void fd_free(void) {
  if (!fd.valid) return;
  gb_free(&fd.k);
  gb_free(&fd.v);
  gb_free(&fd.q);
  gb_free(&fd.p);
  gb_free(&fd.part);
  gb_free(&fd.ind);
  free(fd.want);
  free(fd.plain);
  memset(&fd, 0, sizeof fd);
}

static void fd_key(char *buf, size_t len, int f16, size_t si, size_t li) {
  snprintf(buf, len, "flash_decode/%s/H=%u/%u,D=%u,win=%u,cap=%g,ctx=%u,L=%u", f16 ? "f16kv" : "f32kv", FD_SHAPES[si].H,
           FD_SHAPES[si].KVH, FD_SHAPES[si].D, FD_SHAPES[si].window, FD_SHAPES[si].cap, FD_SHAPES[si].ctx, FD_LENS[li]);
}

static void fd_build(int f16, size_t si, size_t li) {
  char key[160];
  fd_key(key, sizeof key, f16, si, li);
  if (fd.valid && fd.f16 == f16 && fd.si == si && fd.li == li) return;
  fd_free();
  reseed(key);
  uint32_t H = FD_SHAPES[si].H, KVH = FD_SHAPES[si].KVH, D = FD_SHAPES[si].D, L = FD_LENS[li], ctx = FD_SHAPES[si].ctx;
  op_kv_layout kv = {.n_kv_head = KVH, .head_dim = D, .ctx = ctx, .f16 = f16};
  size_t n = (size_t)KVH * ctx * D;
  float *kc = rnd(n, -1, 1), *vc = rnd(n, -1, 1), *q = rnd(H * D, -1, 1);
  fd.k = cache_upload(kc, n, f16, 0);
  fd.v = cache_upload(vc, n, f16, 0);
  uint32_t pos = L - 1;
  fd.q = gb_in(q, H * D * 4);
  fd.p = gb_in(&pos, 4);
  fd.part = gb_out(op_attn_partial_bytes(&kv, H, 16));
  fd.ind = gb_out(16);
  fd.want = malloc(H * D * 4);
  fd.plain = malloc(H * D * 4);
  ref_attention(q, H * D, 0, kc, vc, &pos, fd.want, H * D, 1, H, KVH, D, ctx, FD_SHAPES[si].window,
                1.0f / sqrtf((float)D), FD_SHAPES[si].cap, NULL);
  op_attn_params ap = {.n_tokens = 1,
                       .n_head = H,
                       .q_stride = H * D,
                       .q_off = 0,
                       .out_stride = H * D,
                       .window = FD_SHAPES[si].window,
                       .scale = 1.0f / sqrtf((float)D),
                       .softcap = FD_SHAPES[si].cap};
  gbuf go2 = gb_out(H * D * 4);
  gpu_recorder *r = rec_new();
  CHECK(op_attention(r, &kv, &ap, fd.q.v, fd.k.v, fd.v.v, fd.p.v, go2.v) == WGLLM_OK, "%s record plain: %s", key,
        gpu_recorder_error(r));
  exec_aux(r);
  gpu_recorder_free(r);
  memcpy(fd.plain, gb_fetch(&go2), H * D * 4);
  gb_guards(&go2, "straightforward kernel's out");
  gb_free(&go2);
  free(kc);
  free(vc);
  free(q);
  fd.valid = 1;
  fd.f16 = f16;
  fd.si = si;
  fd.li = li;
}

/* modes: worst-case grid and indirect grid over the whole cache, then both for the smallest length bucket (a
   power of two) that holds position L - 1 (other chunk lengths and grids), then forced chunks of 16 and 128
   keys, then the workgroup-memory reductions (both sides of the subgroup variant's predicate), then attn_split on
   128 threads where it would take 256 (the length bucket's chunks, both grids) */
static uint32_t fd_bucket(uint32_t L, uint32_t ctx) {
  uint32_t bucket = 1;
  while (bucket < L)
    bucket *= 2;
  return bucket < ctx ? bucket : 0;
}

static case_result run_flash_decode(const tcase *c) {
  int f16 = c->u.fd.f16, mode = c->u.fd.mode;
  size_t si = c->u.fd.si, li = c->u.fd.li;
  fd_build(f16, si, li);
  uint32_t H = FD_SHAPES[si].H, KVH = FD_SHAPES[si].KVH, D = FD_SHAPES[si].D, L = FD_LENS[li], ctx = FD_SHAPES[si].ctx;
  op_kv_layout kv = {.n_kv_head = KVH, .head_dim = D, .ctx = ctx, .f16 = f16};
  op_attn_params ap = {.n_tokens = 1,
                       .n_head = H,
                       .q_stride = H * D,
                       .q_off = 0,
                       .out_stride = H * D,
                       .window = FD_SHAPES[si].window,
                       .scale = 1.0f / sqrtf((float)D),
                       .softcap = FD_SHAPES[si].cap,
                       .max_len = (mode == 2 || mode == 3 || mode >= 8) ? fd_bucket(L, ctx) : 0};
  op_attn_kernel_opts force = {.chunk = mode == 4   ? 16
                                        : mode == 5 ? 128
                                        : mode == 7 ? 32
                                                    : 0,
                               .no_subgroups = mode == 6 || mode == 7,
                               .narrow_split = mode >= 8};
  gbuf go = gb_out(H * D * 4);
  gpu_view ind = fd.ind.v;
  traffic(2.0 * KVH * L * D * (f16 ? 2 : 4) + 8.0 * H * D, 4.0 * H * L * D);
  gpu_recorder *r = rec_new();
  CHECK(op_attention_decode_forced(r, &kv, &ap, &force, fd.q.v, fd.k.v, fd.v.v, fd.p.v, fd.part.v,
                                   mode % 2 ? &ind : NULL, go.v) == WGLLM_OK,
        "%s record: %s", g_case, gpu_recorder_error(r));
  exec(r, NULL);
  gpu_recorder_free(r);
  float *got = gb_fetch(&go);
  cmp("vs reference", got, fd.want, H * D, 2e-6, 2e-5);
  cmp("vs straightforward kernel", got, fd.plain, H * D, 1e-6, 1e-5);
  gb_guards(&go, "out");
  gb_guards(&fd.part, "partial");
  gb_guards(&fd.ind, "indirect args");
  gb_free(&go);
  return verdict();
}

static void cases_flash_decode(void) {
  for (int f16 = 0; f16 < 2; f16++)
    for (size_t si = 0; si < sizeof FD_SHAPES / sizeof FD_SHAPES[0]; si++)
      for (size_t li = 0; li < sizeof FD_LENS / sizeof FD_LENS[0]; li++)
        for (int mode = 0; mode < FD_MODES; mode++) {
          char key[160], m[64];
          fd_key(key, sizeof key, f16, si, li);
          uint32_t b = fd_bucket(FD_LENS[li], FD_SHAPES[si].ctx);
          const char *grid = mode % 2 ? "indirect" : "worst-grid";
          if (mode < 2)
            snprintf(m, sizeof m, "%s", grid);
          else if (mode < 4)
            snprintf(m, sizeof m, "max_len=%u,%s", b, grid);
          else if (mode < 6)
            snprintf(m, sizeof m, "chunk=%u,%s", mode == 4 ? 16 : 128, grid);
          else if (mode < 8)
            snprintf(m, sizeof m, "no-subgroups%s,%s", mode == 7 ? ",chunk=32" : "", grid);
          else
            snprintf(m, sizeof m, "max_len=%u,narrow-split,%s", b, grid);
          tcase *c = add_case("flash_decode", run_flash_decode, "%s/%s", key + strlen("flash_decode/"), m);
          c->u.fd.f16 = f16;
          c->u.fd.si = si;
          c->u.fd.li = li;
          c->u.fd.mode = mode;
        }
}

/* ---------------------------------------------------------------- the fused decode GEMV

   For each storage it reads (q4gsw, q8, Q4_K, Q5_K, Q6_K): pre-norm (w and 1+w), residual accumulate, GLU (SiLU, GELU)
   and bias, row counts that do not divide the workgroup's rows, against norm -> linear -> activation on the CPU. N, K
   and the plan: {0} is the predicate's choice; the others are thread layouts of both kernels that the predicate picks
   for other shapes or devices (odd unrolls, partial last workgroups, tiny K splits). */
static const char *GEMV_MODES[] = {"plain", "norm", "norm(1+w)+bias+acc", "norm+glu-silu", "glu-gelu+bias"};

/* The decode GEMV cases' options for a mode (GEMV_MODES): the norm (its weights g, 1 + w in mode 2), the residual
   accumulated (mode 2), GLU (modes 3, 4), T tokens whose y rows are YS apart. */
static void gemv_mode_opts(op_gemv_opts *o, int mode, size_t N, size_t T, size_t YS, gpu_view g) {
  if (mode >= 1 && mode <= 3) {
    o->norm_w = g;
    o->eps = 1e-5f;
    o->norm_offset = mode == 2 ? 1.0f : 0.0f;
  }
  o->accumulate = mode == 2;
  o->n_tokens = (uint32_t)T;
  o->y_stride = (uint32_t)YS;
  if (mode >= 3) {
    o->glu_half = (uint32_t)N;
    o->act = mode == 3 ? OP_ACT_SILU : OP_ACT_GELU_TANH;
  }
}

static case_result run_gemv(const tcase *c) {
  size_t N = c->u.gemv.N, K = c->u.gemv.K, T = c->u.gemv.nt ? c->u.gemv.nt : 1;
  int mode = c->u.gemv.mode;
  /* y rows apart: padded where no later dispatch needs them aligned, and where the gaps hold what the residual
     had (accumulating; they must stay as they were) */
  size_t YS = T > 1 && N % 64 && mode == 2 ? N + 5 : N;
  const op_gemv_plan *plan = c->u.gemv.plan.tk ? &c->u.gemv.plan : NULL;
  gpu_context *ctx = th_gpu();
  if (plan && plan->tuned && !(ctx->has_subgroups && ctx->subgroup_min == ctx->subgroup_max))
    return not_supported("the tuned kernel needs subgroups of one fixed size (device: %s, %u..%u)",
                         ctx->has_subgroups ? "subgroups" : "no subgroups", ctx->subgroup_min, ctx->subgroup_max);
  if (plan && plan->tuned && (plan->tk % ctx->subgroup_min || plan->tk * plan->tr / ctx->subgroup_min > 32))
    return not_supported("a layout of %u x %u threads is not whole subgroups of %u, at most 32 (the op refuses it)",
                         plan->tk, plan->tr, ctx->subgroup_min);
  int glu = mode >= 3;
  size_t rows = glu ? 2 * N : N;
  float *w = malloc(rows * K * 4), *x = rnd(T * K, -2, 2), *g = rnd(K, -1, 1), *b = rnd(rows, -1, 1);
  float *y0 = rnd(T * YS, -1, 1);
  gbuf wb[2];
  op_wtype wt = c->u.gemv.wt;
  op_weight ow = make_weight(wt, rows, K, 32, w, wb);
  op_gemv_opts o = {0};
  int has_norm = mode >= 1 && mode <= 3, has_bias = mode == 2 || mode == 4;
  float off = mode == 2 ? 1.0f : 0.0f;
  gbuf gx = gb_in(x, T * K * 4), gg = gb_in(g, K * 4), gb = gb_in(b, rows * 4);
  gemv_mode_opts(&o, mode, N, T, YS, gg.v);
  gbuf gy = o.accumulate ? gb_io(y0, T * YS * 4) : gb_out(T * YS * 4);
  traffic(weight_bytes(wt, rows, K, 32) + 4.0 * T * (K * (has_norm ? 2 : 1) + N * (o.accumulate ? 2 : 1)),
          2.0 * T * rows * K);
  gpu_recorder *r = rec_new();
  CHECK(op_gemv_planned(r, gx.v, &ow, has_bias ? gb.v : (gpu_view){0}, gy.v, (uint32_t)rows, (uint32_t)K, &o, plan) ==
            WGLLM_OK,
        "%s record: %s", g_case, gpu_recorder_error(r));
  exec(r, NULL);
  gpu_recorder_free(r);
  float *xn = malloc(T * K * 4), *lin = malloc(T * rows * 4), *want = malloc(T * YS * 4);
  if (has_norm)
    ref_rms_norm(x, g, xn, K, T, K, K, 1e-5f, off);
  else
    memcpy(xn, x, T * K * 4);
  ref_linear(xn, w, has_bias ? b : NULL, lin, T, rows, K);
  /* token t's row at t * YS; the gaps between rows (accumulating only) keep y0 */
  const float *got = gb_fetch(&gy);
  if (o.accumulate) memcpy(want, y0, T * YS * 4);
  for (size_t t = 0; t < T; t++) {
    if (glu)
      ref_glu(lin + t * rows, lin + t * rows, want + t * YS, N, 1, rows, 0, N, mode == 3 ? 0 : 1);
    else
      for (size_t i = 0; i < N; i++)
        want[t * YS + i] = lin[t * rows + i] + (o.accumulate ? y0[t * YS + i] : 0.0f);
  }
  cmp("y", got, want, T * YS, 2e-5 * sqrt((double)K), 1e-4);
  gb_guards(&gy, "y");
  free_weight(wb);
  gb_free(&gx);
  gb_free(&gg);
  gb_free(&gb);
  gb_free(&gy);
  free(w);
  free(x);
  free(g);
  free(b);
  free(y0);
  free(xn);
  free(lin);
  free(want);
  return verdict();
}

/* The GEMV predicate on both sides (host code only): the specialised kernel for exactly the shapes and devices it
   names, the general one (whole) for anything else. */
static case_result run_gemv_predicate(const tcase *tc) {
  gpu_context c = *th_gpu();
  c.has_subgroups = 1;
  c.subgroup_min = c.subgroup_max = 32;
  c.limits.maxComputeInvocationsPerWorkgroup = 1024;
  op_gemv_plan p = op_gemv_choose_plan(&c, OP_W_Q4, 4096, 4096, 32, 0);
  VERIFY(p.tuned && p.tk == 128 && p.tr == 2 && p.r == 4, "8B O projection: tuned 128/2/4 (%d %u/%u/%u)", p.tuned, p.tk,
         p.tr, p.r);
  p = op_gemv_choose_plan(&c, OP_W_Q4, 14336, 4096, 32, 1);
  VERIFY(p.tuned && p.tk == 32 && p.tr == 8 && p.r == 2, "8B gate/up: tuned 32/8/2");
  p = op_gemv_choose_plan(&c, OP_W_Q4, 128256, 2048, 64, 0);
  VERIFY(p.tuned && p.tk == 32 && p.tr == 4 && p.r == 8, "LM head: tuned 32/4/8");
  p = op_gemv_choose_plan(&c, OP_W_Q4, 4096, 4096 + 32, 32, 0);
  VERIFY(p.tuned && p.tk == 32 && p.tr == 8, "K not a multiple of 1024: tuned, one subgroup a row (%d %u/%u)", p.tuned,
         p.tk, p.tr);
  p = op_gemv_choose_plan(&c, OP_W_Q4, 2304, 2304, 32, 0); /* Gemma 4's hidden size: 288 steps */
  VERIFY(p.tuned && p.tk == 32, "Gemma 4 hidden 2304: tuned with 32 lanes (%d %u)", p.tuned, p.tk);
  p = op_gemv_choose_plan(&c, OP_W_Q8, 5120, 2880, 32, 0); /* gpt-oss-20b's Q8_0 QKV: 360 steps */
  VERIFY(p.tuned && p.tk == 128 && p.tr == 2, "q8 K 2880: 128 uneven lanes (%d %u/%u)", p.tuned, p.tk, p.tr);
  p = op_gemv_choose_plan(&c, OP_W_Q8, 2304, 1152, 32, 0); /* 144 steps: under two a lane of 128, two of 64 */
  VERIFY(p.tuned && p.tk == 64 && p.tr == 4, "q8 K 1152: narrowed to 64 lanes (%d %u/%u)", p.tuned, p.tk, p.tr);
  p = op_gemv_choose_plan(&c, OP_W_Q4, 2304, 256, 32, 0); /* its per-layer input projection */
  VERIFY(p.tuned && p.tk == 32, "K 256: tuned with 32 lanes (%d %u)", p.tuned, p.tk);
  VERIFY(!op_gemv_choose_plan(&c, OP_W_Q4, 2304, 128, 32, 0).tuned, "K 128 (16 steps for 32 lanes): general");
  VERIFY(!op_gemv_choose_plan(&c, OP_W_Q4, 32, 4096, 32, 0).tuned, "32 rows: general");
  VERIFY(!op_gemv_choose_plan(&c, OP_W_Q4, 4096, 4096, 16, 0).tuned, "group 16: general");
  c.limits.maxComputeInvocationsPerWorkgroup = 128;
  VERIFY(!op_gemv_choose_plan(&c, OP_W_Q4, 4096, 4096, 32, 0).tuned, "128-thread workgroups: general");
  c.limits.maxComputeInvocationsPerWorkgroup = 1024;
  c.subgroup_min = 16;
  VERIFY(!op_gemv_choose_plan(&c, OP_W_Q4, 4096, 4096, 32, 0).tuned, "varying subgroup size: general");
  c.subgroup_min = 32;
  c.has_subgroups = 0;
  p = op_gemv_choose_plan(&c, OP_W_Q4, 4096, 4096, 32, 0);
  VERIFY(!p.tuned && p.tk * p.tr <= 128, "no subgroups: general (%u x %u threads)", p.tk, p.tr);
  c.has_subgroups = 1;
  p = op_gemv_choose_plan(&c, OP_W_Q4_K, 14336, 4096, 0, 1);
  VERIFY(p.tuned && p.u <= 2, "Q4_K gate/up: tuned, at most 2 steps of 32 unrolled (u=%u)", p.u);
  p = op_gemv_choose_plan(&c, OP_W_Q6_K, 128256, 4096, 0, 0);
  VERIFY(p.tuned, "Q6_K LM head: tuned");
  p = op_gemv_choose_plan(&c, OP_W_Q5_K, 4096, 256, 0, 0);
  VERIFY(!p.tuned && p.tk <= 8 && p.u <= 2, "Q5_K, K of one block: general, no more lanes than steps (tk=%u)", p.tk);
  VERIFY(!op_gemv_choose_plan(&c, OP_W_Q4_1, 4096, 4096, 0, 0).tk, "Q4_1: no plan (not a storage of the kernel)");
  return verdict();
}

static void cases_gemv(void) {
  typedef struct {
    uint32_t N, K;
    op_gemv_plan plan;
  } gshape;
  static const gshape q4[] = {
      {1, 32, {0}},
      {37, 96, {0}},
      {512, 2048, {0}},
      {1003, 128, {0}},
      {3000, 256, {0}},
      {512, 2048, {0, 128, 1, 8, 4}},
      {512, 2048, {0, 32, 4, 4, 4}},
      {512, 2048, {0, 64, 2, 8, 1}},
      {512, 2048, {1, 32, 8, 2, 4}},
      {512, 2048, {1, 128, 2, 4, 4}},
      {512, 2048, {1, 32, 4, 8, 2}},
      {512, 2048, {1, 32, 4, 4, 3}},
      {1003, 1024, {1, 32, 4, 8, 2}},
      {1003, 1024, {1, 32, 8, 2, 4}},
      {37, 96, {0, 4, 32, 4, 1}},
      {37, 96, {0, 1, 128, 1, 1}},
      {1003, 1024, {1, 128, 2, 4, 4}},
      {3000, 256, {0, 32, 4, 4, 2}},
      {100, 2304, {0}}, /* Gemma 4's hidden size: the tuned plan on a K of uneven steps */
  };
  /* the block types: K whole blocks of 256 (q8: of 32 too), unrolls of at most 2 steps for Q4_K / Q5_K */
  static const gshape blk[] = {
      {1, 256, {0}},
      {37, 768, {0}},
      {512, 2048, {0}},
      {1003, 1024, {0}},
      {3000, 256, {0}},
      {512, 2048, {0, 32, 4, 4, 2}},
      {512, 2048, {0, 64, 2, 8, 1}},
      {512, 2048, {1, 32, 8, 2, 2}},
      {512, 2048, {1, 128, 2, 4, 2}},
      {512, 2048, {1, 32, 4, 8, 1}},
      {1003, 1024, {1, 32, 4, 4, 2}},
      {1003, 1280, {1, 32, 8, 2, 2}},
      {37, 768, {0, 4, 32, 4, 1}},
      {37, 768, {0, 1, 128, 1, 1}},
      {65, 2304, {1, 64, 4, 2, 1}},
      {100, 2304, {0}},
  };
  static const op_wtype types[] = {OP_W_Q4, OP_W_Q8, OP_W_Q4_K, OP_W_Q5_K, OP_W_Q6_K, OP_W_MXFP4, OP_W_F32};
  for (size_t ti = 0; ti < sizeof types / sizeof types[0]; ti++) {
    const gshape *shapes = types[ti] == OP_W_Q4 ? q4 : blk;
    size_t n = types[ti] == OP_W_Q4 ? sizeof q4 / sizeof q4[0] : sizeof blk / sizeof blk[0];
    for (size_t i = 0; i < n; i++)
      for (int mode = 0; mode < 5; mode++) {
        /* the epilogue is shared: every mode for q4gsw, three for the other storages (lavapipe's time); MXFP4 and
           f32 (the MoE experts' and routers' storages) on the op's own plan for each shape only (each forced plan is
           pipelines of their own for lavapipe to build) */
        if (types[ti] != OP_W_Q4 && (mode == 1 || mode == 4)) continue;
        if ((types[ti] == OP_W_MXFP4 || types[ti] == OP_W_F32) && shapes[i].plan.tk) continue;
        const op_gemv_plan *p = &shapes[i].plan;
        char plan[64];
        if (p->tk)
          snprintf(plan, sizeof plan, "%s:%u/%u/%u/%u", p->tuned ? "tuned" : "general", p->tk, p->tr, p->r, p->u);
        else
          snprintf(plan, sizeof plan, "default");
        tcase *c = add_case("gemv", run_gemv, "%s/N=%u,K=%u/plan=%s/%s", op_wtype_name(types[ti]), shapes[i].N,
                            shapes[i].K, plan, GEMV_MODES[mode]);
        c->u.gemv.wt = types[ti];
        c->u.gemv.N = shapes[i].N;
        c->u.gemv.K = shapes[i].K;
        c->u.gemv.plan = *p;
        c->u.gemv.mode = mode;
      }
  }
  /* several tokens a dispatch ("_mt": batched decode), each storage once or twice (every "_mt" pipeline takes
     lavapipe tens of seconds to compile): token counts that do not divide the kernel's share (Q4_K / Q5_K take
     4 a dispatch, so 5 is two dispatches), the epilogues with per-token norms, bias, residual and GLU, rows
     that are not multiples of the workgroup's and a y row stride that is not N */
  static const struct {
    op_wtype wt;
    uint32_t N, K, nt;
    int mode;
  } mt[] = {
      {OP_W_Q4, 1003, 2048, 3, 2},  {OP_W_Q4, 1003, 1024, 8, 3},  {OP_W_Q4, 37, 96, 3, 3},
      {OP_W_Q8, 1003, 1024, 5, 3},  {OP_W_Q4_K, 512, 2048, 5, 2}, {OP_W_Q5_K, 37, 768, 2, 3},
      {OP_W_Q6_K, 512, 2048, 8, 2}, {OP_W_MXFP4, 37, 160, 3, 3},  {OP_W_F32, 67, 100, 5, 3},
  };
  for (size_t i = 0; i < sizeof mt / sizeof mt[0]; i++) {
    tcase *c = add_case("gemv", run_gemv, "%s/N=%u,K=%u/tokens=%u/plan=default/%s", op_wtype_name(mt[i].wt), mt[i].N,
                        mt[i].K, mt[i].nt, GEMV_MODES[mt[i].mode]);
    c->u.gemv.wt = mt[i].wt;
    c->u.gemv.N = mt[i].N;
    c->u.gemv.K = mt[i].K;
    c->u.gemv.mode = mt[i].mode;
    c->u.gemv.nt = mt[i].nt;
  }
  add_case("gemv_plan", run_gemv_predicate, "predicate");
}

/* ---------------------------------------------------------------- the fast precision's decode GEMV

   gemv_q8/TYPE/...: the fast precision's decode GEMV, op_gemv_fast (op_quantize_q8_rows, with the projection's
   RMSNorm when the mode has one, then op_gemv_q8) on 1..8 tokens, in the modes of the exact GEMV (norm, 1+w norm,
   bias, residual, GLU). The activations the GPU quantized are checked against ref_quantize_q8 of the normed x
   (d within 1e-5 relative, as the GPU's norm rounds differently; each q within one step, and at most 1% one step
   off; the words of q4gsw's consumers evens first); the GEMV against norm -> linear -> epilogue on the CPU from
   those activations dequantized (the exact GEMV's tolerance); and the result against the same from the unquantized
   x within half a quantization step an element. Plans: {0} the predicate's; others the layouts it picks on other
   devices. */
static case_result run_gemv_q8(const tcase *c) {
  size_t N = c->u.gemv.N, K = c->u.gemv.K, T = c->u.gemv.nt ? c->u.gemv.nt : 1, nb = K / 32;
  int mode = c->u.gemv.mode;
  uint32_t group = c->u.gemv.group ? c->u.gemv.group : 32;
  size_t YS = T > 1 && N % 64 && mode == 2 ? N + 5 : N;
  const op_gemv_plan *plan = &c->u.gemv.plan; /* tk 0: the op's layout; q8_quant: where x is quantized */
  gpu_context *ctx = th_gpu();
  if (plan->tk && plan->tuned && !(ctx->has_subgroups && ctx->subgroup_min == ctx->subgroup_max))
    return not_supported("the subgroup kernel needs subgroups of one fixed size (device: %s, %u..%u)",
                         ctx->has_subgroups ? "subgroups" : "no subgroups", ctx->subgroup_min, ctx->subgroup_max);
  if (plan->tk && plan->tuned && plan->tk % ctx->subgroup_min)
    return not_supported("%u lanes are not whole subgroups of %u", plan->tk, ctx->subgroup_min);
  if (plan->q8_quant == 1 && !op_gemv_q8_quantizes_in_workgroup(ctx, (uint32_t)T, (uint32_t)K))
    return not_supported("%zu tokens of %zu do not fit the workgroup memory (%u bytes)", T, K,
                         ctx->limits.maxComputeWorkgroupStorageSize);
  int glu = mode >= 3;
  size_t rows = glu ? 2 * N : N;
  float *w = malloc(rows * K * 4), *x = rnd(T * K, -2, 2), *g = rnd(K, -1, 1), *b = rnd(rows, -1, 1);
  float *y0 = rnd(T * YS, -1, 1);
  for (size_t k = 0; k < 32 && T > 1; k++)
    x[K + k] = 0;                 /* a block of zeros */
  x[(T - 1) * K + K / 2] = 40.0f; /* an outlier */
  gbuf wb[2];
  op_wtype wt = c->u.gemv.wt;
  op_weight ow = make_weight(wt, rows, K, group, w, wb);
  op_gemv_opts o = {0};
  int has_norm = mode >= 1 && mode <= 3, has_bias = mode == 2 || mode == 4, perm = -1;
  float off = mode == 2 ? 1.0f : 0.0f;
  /* the small-M GEMM (past 8 tokens, or forced by the plan's slices): its own predicate, words in order, partial
     sums */
  int small = T > OP_GEMV_MAX_TOKENS || plan->mm_split;
  if (small) {
    VERIFY(op_q8_small_supports(ctx, &ow, (uint32_t)T, (uint32_t)K, glu), "%s: the small-M predicate refuses it",
           g_case);
    perm = 0;
  } else {
    VERIFY(op_gemv_q8_supports(ctx, &ow, (uint32_t)T, (uint32_t)K, &perm), "%s: the predicate refuses it", g_case);
    VERIFY(perm == (wt == OP_W_Q4), "%s: words evens first %d", g_case, perm);
  }
  size_t qbytes = (size_t)op_q8_act_bytes(ctx, (uint32_t)T, (uint32_t)K);
  gbuf gx = gb_in(x, T * K * 4), gg = gb_in(g, K * 4), gb = gb_in(b, rows * 4), gq = gb_out(qbytes), gp = {0};
  gemv_mode_opts(&o, mode, N, T, YS, gg.v);
  if (small) { /* room for 4 slices (the op's most) or the plan's */
    size_t slices = plan->mm_split > 4 ? plan->mm_split : 4;
    gp = gb_out(slices * T * rows * 4);
    o.part = gp.v;
  }
  gbuf gy = o.accumulate ? gb_io(y0, T * YS * 4) : gb_out(T * YS * 4);
  traffic(weight_bytes(wt, rows, K, group) + 4.0 * T * (K * (has_norm ? 2 : 1) + N * (o.accumulate ? 2 : 1)),
          2.0 * T * rows * K);
  gpu_recorder *r = rec_new();
  /* the activations as the quantizer makes them (the "_wq" kernels make the same in their workgroup memory; the
     separate path makes them again), then the GEMV */
  op_q8_rows_opts qo = {.norm_w = o.norm_w, .eps = o.eps, .norm_offset = o.norm_offset, .perm = perm};
  CHECK(op_quantize_q8_rows(r, gx.v, gq.v, (uint32_t)T, (uint32_t)K, &qo) == WGLLM_OK, "%s record: %s", g_case,
        gpu_recorder_error(r));
  CHECK(op_gemv_fast_planned(r, gx.v, gq.v, &ow, has_bias ? gb.v : (gpu_view){0}, gy.v, (uint32_t)rows, (uint32_t)K, &o,
                             plan) == WGLLM_OK,
        "%s record: %s", g_case, gpu_recorder_error(r));
  exec(r, NULL);
  gpu_recorder_free(r);
  float *xn = malloc(T * K * 4), *xd = malloc(T * K * 4), *lin = malloc(T * rows * 4), *want = malloc(T * YS * 4);
  float *exact = malloc(T * YS * 4);
  if (has_norm)
    ref_rms_norm(x, g, xn, K, T, K, K, 1e-5f, off);
  else
    memcpy(xn, x, T * K * 4);
  if (!g_perf) {
    /* the GPU's activations, in element order (q4gsw's consumers get each 8's evens first), against the CPU's */
    const uint8_t *body = gb_fetch(&gq);
    size_t align = ctx->limits.minStorageBufferOffsetAlignment ? ctx->limits.minStorageBufferOffsetAlignment : 256;
    const int8_t *gq8 = (const int8_t *)body;
    const float *gds = (const float *)(body + (T * K + align - 1) / align * align);
    int8_t *rq = malloc(T * K);
    float *rd = malloc(T * nb * 4), *rs = malloc(T * nb * 4);
    ref_quantize_q8(xn, T, K, rq, rd, rs);
    size_t badq = 0, badd = 0, off1 = 0;
    for (size_t bi = 0; bi < T * nb; bi++) {
      float d = gds[2 * bi];
      if (!(fabsf(d - rd[bi]) <= 1e-5f * rd[bi])) {
        if (badd++ < 4) fprintf(stderr, "  %s block %zu: d %.9g want %.9g\n", g_case, bi, d, rd[bi]);
      }
      int sum = 0;
      for (size_t i = 0; i < 32; i++) {
        size_t e = bi * 32 + i, at = e; /* the byte that holds element e */
        if (perm) at = bi * 32 + (i / 8) * 8 + (i % 2) * 4 + (i % 8) / 2;
        int diff = abs((int)gq8[at] - (int)rq[e]);
        if (diff > 1) {
          if (badq++ < 4) fprintf(stderr, "  %s x[%zu]: q %d want %d\n", g_case, e, gq8[at], rq[e]);
        }
        off1 += diff == 1;
        sum += gq8[at];
        xd[e] = (float)gq8[at] * d;
      }
      float sv = gds[2 * bi + 1];
      if (!(fabsf(sv - d * (float)sum) <= 1e-6f * fabsf(d * (float)sum) + 1e-30f)) {
        if (badd++ < 4) fprintf(stderr, "  %s block %zu: s %.9g want %.9g\n", g_case, bi, sv, d * (float)sum);
      }
    }
    CHECK(badq == 0 && badd == 0 && off1 * 100 <= T * K,
          "%s: %zu quantized values (%zu one step off) and %zu block "
          "factors wrong",
          g_case, badq, off1, badd);
    /* where the GEMV quantizes in its workgroup (or may), its 1 / rms sums in another order than the quantizer's, so
       an element within 1e-3 of a rounding tie may land a step away: each such element may move an output by
       d * |w| (slack, through the GLU's product where there is one) */
    float *tie = calloc(T * K, 4), *slack = calloc(T * rows, 4);
    if (plan->q8_quant != 2 && !small)
      for (size_t e = 0; e < T * K; e++) {
        float dd = rd[e / 32], tv = dd > 0 ? fabsf(xn[e]) / dd : 0;
        if (fabsf(tv - truncf(tv) - 0.5f) < 1e-3f) tie[e] = dd;
      }
    for (size_t t = 0; t < T; t++)
      for (size_t n = 0; n < rows; n++) {
        double sl = 0;
        for (size_t k = 0; k < K; k++)
          sl += tie[t * K + k] * fabs((double)w[n * K + k]);
        slack[t * rows + n] = (float)sl;
      }
    free(rq);
    free(rd);
    free(rs);
    /* the result from the GPU's own activations (as exact as the f32 GEMV, within the slack), then from the exact
       normed x (within half a step an element) */
    for (int pass = 0; pass < 2; pass++) {
      ref_linear(pass ? xn : xd, w, has_bias ? b : NULL, lin, T, rows, K);
      float *dst = pass ? exact : want;
      if (o.accumulate) memcpy(dst, y0, T * YS * 4);
      for (size_t t = 0; t < T; t++) {
        if (glu)
          ref_glu(lin + t * rows, lin + t * rows, dst + t * YS, N, 1, rows, 0, N, mode == 3 ? 0 : 1);
        else
          for (size_t i = 0; i < N; i++)
            dst[t * YS + i] = lin[t * rows + i] + (o.accumulate ? y0[t * YS + i] : 0.0f);
      }
      if (pass) continue;
      const float *got = gb_fetch(&gy);
      size_t bad = 0;
      double atol = 2e-5 * sqrt((double)K);
      for (size_t t = 0; t < T; t++)
        for (size_t n = 0; n < N; n++) {
          double sl = slack[t * rows + n];
          if (glu) {
            double sg = sl, su = slack[t * rows + N + n];
            sl = 1.13 * sg * fabs((double)lin[t * rows + N + n]) + fabs((double)lin[t * rows + n]) * su + sg * su;
          }
          double wv = want[t * YS + n], gv = got[t * YS + n];
          if (!(fabs(gv - wv) <= atol + 1e-4 * fabs(wv) + 1.01 * sl)) {
            if (bad++ < 4)
              fprintf(stderr, "  %s y[%zu,%zu]: got %.9g want %.9g (slack %.3g)\n", g_case, t, n, gv, wv, sl);
          }
        }
      CHECK(bad == 0, "%s: %zu of %zu outputs out of tolerance (atol %.3g rtol 1e-4, tie slack)", g_case, bad, T * N,
            atol);
    }
    free(tie);
    free(slack);
    const float *got = gb_fetch(&gy);
    if (!glu) { /* the quantization's own bound (GLU's product of two rows has none this simple) */
      size_t bad = 0;
      for (size_t t = 0; t < T; t++)
        for (size_t n = 0; n < N; n++) {
          double bound = 1e-5 + 4e-6 * fabs((double)exact[t * YS + n]);
          for (size_t bi = 0; bi < nb; bi++) {
            double sw = 0;
            for (size_t i = 0; i < 32; i++)
              sw += fabs((double)w[n * K + bi * 32 + i]);
            bound += 0.5 * (gds[2 * (t * nb + bi)] * 1.00001) * sw;
          }
          if (!(fabs((double)got[t * YS + n] - exact[t * YS + n]) <= bound)) {
            if (bad++ < 4)
              fprintf(stderr, "  %s[%zu,%zu] got %.9g, exact %.9g, bound %.3g\n", g_case, t, n, got[t * YS + n],
                      exact[t * YS + n], bound);
          }
        }
      CHECK(bad == 0, "%s: %zu of %zu outputs beyond the quantization bound", g_case, bad, T * N);
    }
  }
  if (small && !g_perf) /* the small-M GEMM ran: its first slice of partial sums written whole */
    CHECK(unpoisoned(gb_fetch(&gp), 0, T * rows) == T * rows, "%s: the partial sums not written: not the small-M GEMM",
          g_case);
  gb_guards(&gq, "xq");
  gb_guards(&gy, "y");
  gb_guards(&gp, "part");
  free_weight(wb);
  gb_free(&gx);
  gb_free(&gg);
  gb_free(&gb);
  gb_free(&gq);
  gb_free(&gy);
  gb_free(&gp);
  free(w);
  free(x);
  free(g);
  free(b);
  free(y0);
  free(xn);
  free(xd);
  free(lin);
  free(want);
  free(exact);
  return verdict();
}

/* The int8 GEMV's predicate and plans (host code only). */
static case_result run_gemv_q8_predicate(const tcase *tc) {
  (void)tc;
  gpu_context c = *th_gpu();
  c.has_subgroups = 1;
  c.subgroup_min = c.subgroup_max = 32;
  c.limits.maxComputeInvocationsPerWorkgroup = 1024;
  gbuf dummy = gb_in(NULL, 64);
  op_weight q4 = {.type = OP_W_Q4, .data = dummy.v, .scales = dummy.v, .group = 32};
  op_weight q2k = {.type = OP_W_Q2_K, .data = dummy.v}, f16 = {.type = OP_W_F16, .data = dummy.v};
  int perm = -1;
  VERIFY(op_gemv_q8_supports(&c, &q4, 1, 4096, &perm) && perm == 1, "q4gsw: taken, words evens first");
  VERIFY(op_gemv_q8_supports(&c, &q4, 8, 4096, &perm), "8 tokens: taken");
  VERIFY(!op_gemv_q8_supports(&c, &q4, 9, 4096, &perm), "9 tokens: refused");
  VERIFY(!op_gemv_q8_supports(&c, &q4, 1, 4096 + 16, &perm), "K not a multiple of 32: refused");
  VERIFY(!op_gemv_q8_supports(&c, &q2k, 1, 4096, &perm), "Q2_K: refused");
  VERIFY(!op_gemv_q8_supports(&c, &f16, 1, 4096, &perm), "f16: refused");
  op_weight mixed = {.type = OP_W_Q4, .data = dummy.v, .scales = dummy.v, .group = 32, .n_parts = 2};
  mixed.part[0] = (struct op_weight_part){dummy.v, dummy.v, 64, OP_W_Q4, 32};
  mixed.part[1] = (struct op_weight_part){dummy.v, dummy.v, 64, OP_W_Q8, 32};
  VERIFY(!op_gemv_q8_supports(&c, &mixed, 1, 4096, &perm), "q4gsw parts beside q8 parts: refused");
  mixed.part[0].type = OP_W_Q6_K;
  VERIFY(op_gemv_q8_supports(&c, &mixed, 1, 4096, &perm) && perm == 0, "Q6_K and q8 parts: taken, words in order");
  op_gemv_plan p = op_gemv_q8_choose_plan(&c, OP_W_Q4, 4096, 4096, 0, 1);
  VERIFY(p.tuned && p.tk == 128 && p.tr == 2 && p.r == 4, "8B O projection: 128 lanes, 2 x 4 rows (%d %u/%u/%u)",
         p.tuned, p.tk, p.tr, p.r);
  p = op_gemv_q8_choose_plan(&c, OP_W_Q4, 2048, 2048, 0, 1);
  VERIFY(p.tuned && p.tk == 64, "K of 64 blocks: 64 lanes (%u)", p.tk);
  p = op_gemv_q8_choose_plan(&c, OP_W_Q4, 14336, 4096, 1, 1);
  VERIFY(p.tuned && p.tk == 32 && p.tr == 8 && p.r == 2, "8B gate/up: one subgroup, 8 x 2 row pairs (%u/%u/%u)", p.tk,
         p.tr, p.r);
  p = op_gemv_q8_choose_plan(&c, OP_W_Q4, 128256, 4096, 0, 1);
  VERIFY(p.tuned && p.tk == 32 && p.tr == 4 && p.r == 2, "LM head: one subgroup, 4 x 2 rows (%u/%u/%u)", p.tk, p.tr,
         p.r);
  p = op_gemv_q8_choose_plan(&c, OP_W_Q4, 14336, 4096, 1, 8);
  VERIFY(p.r * 2 * 8 <= 32 && p.r * 8 <= p.tk, "GLU, 8 tokens: the sums fit (r=%u)", p.r);
  p = op_gemv_q8_choose_plan(&c, OP_W_Q4, 4096, 14336, 0, 8);
  VERIFY(p.tk == 64 && p.r * 8 <= p.tk, "8B down, 8 tokens: 64 lanes (%u, r=%u)", p.tk, p.r);
  /* the small-M GEMM past 8 tokens */
  VERIFY(!op_q8_small_supports(&c, &q4, 3, 4096, 0) && op_q8_small_supports(&c, &q4, 4, 4096, 0) &&
             op_q8_small_supports(&c, &q4, 64, 4096, 1) && !op_q8_small_supports(&c, &q4, 65, 4096, 0),
         "small-M GEMM: 4..64 tokens");
  VERIFY(op_q8_small_choose(OP_Q8_SMALL_FROM - 1, 4096, 4096, op_q8_small_part_bytes(64, 28672)).split == 0 &&
             op_q8_small_choose(OP_Q8_SMALL_FROM, 4096, 4096, op_q8_small_part_bytes(64, 28672)).split > 0,
         "small-M GEMM: chosen from %u tokens", OP_Q8_SMALL_FROM);
  VERIFY(!op_q8_small_supports(&c, &q2k, 32, 4096, 0) && !op_q8_small_supports(&c, &q4, 32, 4096 + 16, 0),
         "small-M GEMM: Q2_K and K not a multiple of 32 refused");
  mixed.part[0].type = OP_W_Q4;
  VERIFY(op_q8_small_supports(&c, &mixed, 32, 4096, 0) && !op_q8_small_supports(&c, &mixed, 32, 4096, 1),
         "small-M GEMM: q4gsw and q8 parts taken (words in order), GLU in parts refused");
  op_q8_small_plan sp = op_q8_small_choose(32, 4096, 4096, op_q8_small_part_bytes(64, 28672));
  VERIFY(sp.rm == 2 && sp.split == 8, "8B O projection, 32 tokens: 32-row tiles, K in 8 of 16 blocks (%u, %u)", sp.rm,
         sp.split);
  sp = op_q8_small_choose(16, 28672, 4096, op_q8_small_part_bytes(64, 28672));
  VERIFY(sp.rm == 1 && sp.split == 4, "8B gate/up, 16 tokens: 16-row tiles, K in 4 (%u, %u)", sp.rm, sp.split);
  sp = op_q8_small_choose(64, 4096, 14336, op_q8_small_part_bytes(64, 28672));
  VERIFY(sp.rm == 2 && sp.split == 12, "8B down, 64 tokens: 32-row tiles, K in 12 (%u, %u)", sp.rm, sp.split);
  sp = op_q8_small_choose(64, 4096, 14336, op_q8_small_part_bytes(64, 4096) / 2);
  VERIFY(sp.split == 2, "8B down, 64 tokens, room for 2 slices: 2 (%u)", sp.split);
  sp = op_q8_small_choose(32, 128256, 4096, 32ull * 128256 * 4);
  VERIFY(sp.split == 1, "8B LM head, 32 tokens: one slice (%u)", sp.split);
  sp = op_q8_small_choose(64, 128256, 4096, 64ull * 128256 * 4 - 1);
  VERIFY(sp.split == 0, "no room for one slice: none (%u)", sp.split);
  sp = op_q8_small_choose(20, 64, 128, op_q8_small_part_bytes(20, 64));
  VERIFY(sp.split == 4, "K of 4 blocks: a slice a block (%u)", sp.split);
  sp = op_q8_small_choose(16, 3072, 2048, op_q8_small_part_bytes(64, 16384));
  VERIFY(sp.rm == 1 && sp.split == 8, "1B QKV, 16 tokens: K of 64 blocks in 8 (%u, %u)", sp.rm, sp.split);
  c.has_subgroups = 0;
  p = op_gemv_q8_choose_plan(&c, OP_W_Q4, 4096, 256, 0, 1);
  VERIFY(!p.tuned && p.tk * p.tr <= 64 && p.tk <= 8, "no subgroups, K of 8 blocks: plain, 8 lanes (%u x %u)", p.tk,
         p.tr);
  gb_free(&dummy);
  return verdict();
}

static void cases_gemv_q8(void) {
  static const op_wtype types[] = {OP_W_Q4,   OP_W_Q8,   OP_W_Q4_1,   OP_W_Q5_0,   OP_W_Q5_1, OP_W_Q4_K,
                                   OP_W_Q5_K, OP_W_Q6_K, OP_W_IQ4_NL, OP_W_IQ4_XS, OP_W_MXFP4};
  for (size_t t = 0; t < sizeof types / sizeof types[0]; t++) {
    int k256 = types[t] == OP_W_Q4_K || types[t] == OP_W_Q5_K || types[t] == OP_W_Q6_K || types[t] == OP_W_IQ4_XS;
    /* N, K, tokens, mode: a ragged few rows with everything in the epilogue, GLU over several lanes' blocks,
       8 tokens with residual and a y stride */
    const struct {
      uint32_t N, K, nt;
      int mode;
    } sh[] = {{37, k256 ? 256u : 96u, 1, 2}, {300, 1024, 1, 3}, {67, 512, 8, 2}};
    for (size_t i = 0; i < 3; i++) {
      /* the one-token cases quantize in the kernel (as decode does), the 8-token one with the quantizer first */
      uint32_t quant = sh[i].nt > 1 ? 2 : 1;
      tcase *c = add_case("gemv_q8", run_gemv_q8, "%s/N=%u,K=%u/tokens=%u/plan=default,%s/%s", op_wtype_name(types[t]),
                          sh[i].N, sh[i].K, sh[i].nt, quant == 1 ? "wq" : "quantizer", GEMV_MODES[sh[i].mode]);
      c->u.gemv.plan.q8_quant = quant;
      c->u.gemv.wt = types[t];
      c->u.gemv.N = sh[i].N;
      c->u.gemv.K = sh[i].K;
      c->u.gemv.nt = sh[i].nt;
      c->u.gemv.mode = sh[i].mode;
    }
  }
  /* q4gsw: its groups, every mode, token counts, and the layouts of other devices */
  static const struct {
    uint32_t N, K, nt, group;
    int mode;
    op_gemv_plan plan;
  } q4[] = {
      {1, 64, 1, 64, 0, {0}},
      {513, 2048, 1, 128, 1, {0}},
      {100, 2304, 3, 32, 4, {0}},
      {700, 1024, 5, 32, 3, {0}},
      {512, 2048, 1, 32, 2, {1, 64, 2, 4, 1, 2}},
      {512, 2048, 2, 32, 3, {1, 128, 1, 2, 1, 1}},
      {37, 96, 1, 32, 2, {0, 4, 16, 4, 1, 1}},
      {1003, 1024, 4, 32, 2, {0, 32, 2, 2, 1, 2}},
      {37, 96, 1, 32, 0, {0, 1, 64, 1, 1, 2}},
      {300, 1024, 8, 32, 3, {0, 0, 0, 0, 0, 1}},
      {300, 1024, 2, 32, 1, {0, 8, 8, 2, 1, 1}},
      {300, 4096, 1, 32, 2, {1, 32, 8, 2, 1, 1}},
  };
  for (size_t i = 0; i < sizeof q4 / sizeof q4[0]; i++) {
    const op_gemv_plan *p = &q4[i].plan;
    char plan[64];
    static const char *quant[] = {"", ",wq", ",quantizer"};
    if (p->tk)
      snprintf(plan, sizeof plan, "%s:%u/%u/%u%s", p->tuned ? "sg" : "plain", p->tk, p->tr, p->r, quant[p->q8_quant]);
    else
      snprintf(plan, sizeof plan, "default%s", quant[p->q8_quant]);
    tcase *c = add_case("gemv_q8", run_gemv_q8, "q4gsw-g%u/N=%u,K=%u/tokens=%u/plan=%s/%s", q4[i].group, q4[i].N,
                        q4[i].K, q4[i].nt, plan, GEMV_MODES[q4[i].mode]);
    c->u.gemv.wt = OP_W_Q4;
    c->u.gemv.N = q4[i].N;
    c->u.gemv.K = q4[i].K;
    c->u.gemv.nt = q4[i].nt;
    c->u.gemv.mode = q4[i].mode;
    c->u.gemv.group = q4[i].group;
    c->u.gemv.plan = *p;
  }
  /* the small-M GEMM past 8 tokens: every storage (a ragged shape, residual and bias), q4gsw in every mode and
     tile, K slices from one to ragged ones */
  for (size_t t = 0; t < sizeof types / sizeof types[0]; t++) {
    int k256 = types[t] == OP_W_Q4_K || types[t] == OP_W_Q5_K || types[t] == OP_W_Q6_K || types[t] == OP_W_IQ4_XS;
    tcase *c = add_case("gemv_q8", run_gemv_q8, "%s/N=%u,K=%u/tokens=%u/plan=small,default/%s", op_wtype_name(types[t]),
                        131u, k256 ? 768u : 320u, 13u, GEMV_MODES[2]);
    c->u.gemv.wt = types[t];
    c->u.gemv.N = 131;
    c->u.gemv.K = k256 ? 768 : 320;
    c->u.gemv.nt = 13;
    c->u.gemv.mode = 2;
    c->u.gemv.plan.q8_quant = 2;
  }
  static const struct {
    uint32_t N, K, nt, group;
    int mode;
    uint32_t rm, split;
  } sm[] = {
      {300, 1024, 9, 32, 0, 0, 0},   {257, 512, 16, 64, 1, 1, 3}, {200, 1024, 17, 32, 3, 2, 7},
      {129, 2048, 32, 128, 2, 2, 1}, {96, 1024, 33, 32, 4, 4, 5}, {300, 512, 64, 32, 4, 0, 0},
      {64, 4096, 40, 32, 2, 1, 64},  {513, 256, 24, 32, 3, 4, 2}, {300, 1024, 4, 32, 0, 1, 2},
      {257, 512, 8, 64, 3, 1, 3},
  };
  for (size_t i = 0; i < sizeof sm / sizeof sm[0]; i++) {
    tcase *c = add_case("gemv_q8", run_gemv_q8, "q4gsw-g%u/N=%u,K=%u/tokens=%u/plan=small,rm%u,split%u/%s", sm[i].group,
                        sm[i].N, sm[i].K, sm[i].nt, sm[i].rm, sm[i].split, GEMV_MODES[sm[i].mode]);
    c->u.gemv.wt = OP_W_Q4;
    c->u.gemv.N = sm[i].N;
    c->u.gemv.K = sm[i].K;
    c->u.gemv.nt = sm[i].nt;
    c->u.gemv.mode = sm[i].mode;
    c->u.gemv.group = sm[i].group;
    c->u.gemv.plan.q8_quant = 2;
    c->u.gemv.plan.mm_rm = sm[i].rm;
    c->u.gemv.plan.mm_split = sm[i].split;
  }
  add_case("gemv_q8", run_gemv_q8_predicate, "predicate");
}

/* ---------------------------------------------------------------- flash-decoding with RoPE folded in

   RoPE and the cache append folded into flash-decoding (op_attn_rope) against the two-dispatch path it replaces
   (rope_kv, then flash-decoding): the attention output and the cache row of the new token, both rope layouts,
   partial rotary, V in its own buffer, f32 and f16 caches, a window, positions at chunk edges. With qkn the
   per-head q and k norms are folded in too (op_attn_rope.q_norm / k_norm), the two-dispatch path taking q and k
   normed by the CPU reference (ref_rms_norm) instead. */
static const struct {
  uint32_t H, KVH, D, R, window;
  int mode, vsep;
} FDR_SHAPES[] = {{8, 2, 64, 64, 0, 0, 0},
                  {6, 2, 32, 16, 0, 1, 1},
                  {8, 1, 128, 128, 100, 1, 0},
                  {32, 8, 32, 32, 0, 0, 1},
                  {4, 4, 16, 8, 0, 0, 0},
                  /* half-split halves of 6: a vec4 straddles them */
                  {4, 2, 16, 12, 0, 0, 0}};
static const uint32_t FDR_LENS[] = {1, 32, 33, 129, 300};

static case_result run_flash_decode_rope(const tcase *tc) {
  int f16 = tc->u.fdr.f16;
  size_t c = tc->u.fdr.ci;
  uint32_t ctx = 400, max_pos = 512;
  uint32_t H = FDR_SHAPES[c].H, KVH = FDR_SHAPES[c].KVH, D = FDR_SHAPES[c].D, R = FDR_SHAPES[c].R,
           S = (H + 2 * KVH) * D, L = FDR_LENS[tc->u.fdr.li];
  int vsep = FDR_SHAPES[c].vsep;
  op_rope_mode rmode = (op_rope_mode)FDR_SHAPES[c].mode;
  op_kv_layout kv = {.n_kv_head = KVH, .head_dim = D, .ctx = ctx, .f16 = f16};
  float *inv = malloc(R / 2 * 4);
  for (uint32_t i = 0; i < R / 2; i++)
    inv[i] = (float)pow(10000.0, -2.0 * i / R);
  float *tab = malloc((size_t)max_pos * R / 2 * 8);
  op_rope_table(tab, inv, R, max_pos, 1.0f);
  size_t n = (size_t)KVH * ctx * D;
  float *x = rnd(S, -1, 1), *vs = rnd(S, -1, 1), *cache = rnd(n, -1, 1);
  int qkn = tc->u.fdr.qkn;
  float *qw = rnd(D, 0.5f, 1.5f), *kw = rnd(D, -0.5f, 0.5f), *xn = malloc(S * 4), w_off = qkn == 2 ? 1.0f : 0.0f;
  memcpy(xn, x, S * 4);
  if (qkn) { /* the reference path's q heads and k heads normed on the CPU */
    ref_rms_norm(x, qw, xn, D, H, D, D, 1e-6f, w_off);
    ref_rms_norm(x + H * D, kw, xn + H * D, D, KVH, D, D, 1e-6f, w_off);
  }
  uint32_t pos = L - 1;
  gbuf gc = gb_in(tab, (size_t)max_pos * R / 2 * 8), gp = gb_in(&pos, 4), gvs = gb_in(vs, S * 4),
       gpart = gb_out(op_attn_partial_bytes(&kv, H, 16)), gqw = gb_in(qw, D * 4), gkw = gb_in(kw, D * 4);
  gbuf gx[2], gk[2], gv[2], go[2];
  traffic(2.0 * KVH * L * D * (f16 ? 2 : 4) + 4.0 * (S + H * D), 4.0 * H * L * D);
  for (int way = 0; way < 2; way++) { /* 0: rope_kv then decode, 1: folded (the op under test) */
    gx[way] = gb_io(way ? x : xn, S * 4);
    float *tmp = malloc(n * 4);
    memcpy(tmp, cache, n * 4);
    gk[way] = cache_upload(tmp, n, f16, 1);
    memcpy(tmp, cache, n * 4);
    gv[way] = cache_upload(tmp, n, f16, 1);
    free(tmp);
    go[way] = gb_out(H * D * 4);
    gpu_recorder *r = rec_new();
    op_attn_params ap = {.n_tokens = 1,
                         .n_head = H,
                         .q_stride = S,
                         .q_off = 0,
                         .out_stride = H * D,
                         .window = FDR_SHAPES[c].window,
                         .scale = 1.0f / sqrtf((float)D),
                         .softcap = 0.0f};
    op_attn_rope ar = {.cs = gc.v,
                       .vsrc = vsep ? gvs.v : (gpu_view){0},
                       .rot_dim = R,
                       .max_pos = max_pos,
                       .k_off = H * D,
                       .v_off = (H + KVH) * D,
                       .mode = rmode};
    if (qkn) {
      ar.q_norm = gqw.v;
      ar.k_norm = gkw.v;
      ar.eps = 1e-6f;
      ar.w_offset = w_off;
    }
    if (way == 0) {
      op_rope_kv_params rp = {.n_tokens = 1,
                              .n_head = H,
                              .rot_dim = R,
                              .max_pos = max_pos,
                              .mode = rmode,
                              .q_off = 0,
                              .q_stride = S,
                              .k_off = H * D,
                              .k_stride = S,
                              .v_off = (H + KVH) * D,
                              .v_stride = S};
      CHECK(op_rope_kv(r, &kv, &rp, gx[way].v, vsep ? gvs.v : (gpu_view){0}, gp.v, gc.v, gk[way].v, gv[way].v) ==
                WGLLM_OK,
            "%s record rope_kv: %s", g_case, gpu_recorder_error(r));
    } else
      ap.rope = &ar;
    CHECK(op_attention_decode(r, &kv, &ap, gx[way].v, gk[way].v, gv[way].v, gp.v, gpart.v, NULL, go[way].v) == WGLLM_OK,
          "%s record decode: %s", g_case, gpu_recorder_error(r));
    if (way == 0)
      exec_aux(r);
    else
      exec(r, NULL);
    gpu_recorder_free(r);
  }
  float *o[2], *k[2], *v[2];
  for (int way = 0; way < 2; way++) {
    o[way] = malloc(H * D * 4);
    k[way] = malloc(n * 4);
    v[way] = malloc(n * 4);
    memcpy(o[way], gb_fetch(&go[way]), H * D * 4);
    cache_values(gb_fetch(&gk[way]), n, f16, k[way]);
    cache_values(gb_fetch(&gv[way]), n, f16, v[way]);
    const char *p = way ? "folded" : "rope_kv+decode";
    char part[64];
    snprintf(part, sizeof part, "%s out", p);
    gb_guards(&go[way], part);
    snprintf(part, sizeof part, "%s K cache", p);
    gb_guards(&gk[way], part);
    snprintf(part, sizeof part, "%s V cache", p);
    gb_guards(&gv[way], part);
    gb_fetch(&gx[way]);
    snprintf(part, sizeof part, "%s x", p);
    gb_guards(&gx[way], part);
  }
  cmp("out folded vs rope_kv+decode", o[1], o[0], H * D, 1e-6, 1e-5);
  cmp("K cache after folded RoPE", k[1], k[0], n, 1e-6, 1e-5);
  cmp("V cache after folded append", v[1], v[0], n, 0, 0);
  gb_guards(&gpart, "partial");
  for (int way = 0; way < 2; way++) {
    gb_free(&gx[way]);
    gb_free(&gk[way]);
    gb_free(&gv[way]);
    gb_free(&go[way]);
    free(o[way]);
    free(k[way]);
    free(v[way]);
  }
  gb_free(&gc);
  gb_free(&gp);
  gb_free(&gvs);
  gb_free(&gpart);
  gb_free(&gqw);
  gb_free(&gkw);
  free(inv);
  free(tab);
  free(x);
  free(xn);
  free(qw);
  free(kw);
  free(vs);
  free(cache);
  return verdict();
}

static void cases_flash_decode_rope(void) {
  for (int qkn = 0; qkn < 3; qkn++)
    for (int f16 = 0; f16 < 2; f16++)
      for (size_t c = 0; c < sizeof FDR_SHAPES / sizeof FDR_SHAPES[0]; c++)
        for (size_t li = 0; li < sizeof FDR_LENS / sizeof FDR_LENS[0]; li++) {
          /* the q/k norms: every shape at three lengths, each weight offset with one cache type */
          if (qkn && (li % 2 || f16 != qkn - 1)) continue;
          tcase *t =
              add_case("flash_decode_rope", run_flash_decode_rope, "%s/H=%u/%u,D=%u,rot=%u,%s,win=%u,vsep=%d%s/L=%u",
                       f16 ? "f16kv" : "f32kv", FDR_SHAPES[c].H, FDR_SHAPES[c].KVH, FDR_SHAPES[c].D, FDR_SHAPES[c].R,
                       rope_mode_name(FDR_SHAPES[c].mode), FDR_SHAPES[c].window, FDR_SHAPES[c].vsep,
                       qkn == 1   ? ",qk_norm"
                       : qkn == 2 ? ",qk_norm+1"
                                  : "",
                       FDR_LENS[li]);
          t->u.fdr.f16 = f16;
          t->u.fdr.qkn = qkn;
          t->u.fdr.ci = c;
          t->u.fdr.li = li;
        }
}

/* ---------------------------------------------------------------- flash-decoding over a paged pool

   Many sequences' new tokens in one dispatch pair (op_kv_pages): a pool of blocks shared by all, each sequence
   its own block table (blocks shuffled over the pool, the first blocks of sequence 1 shared with sequence 0's
   as a common prefix would be, entries no slot of the sequence uses set to 0xffffffff), its own length (1, a
   block edge, a chunk edge, the whole context, past a ring's end). Without RoPE: against the CPU reference on
   each sequence's cache gathered from the pool. With RoPE folded in: against the single-sequence op (itself
   checked against rope_kv + decode above) on each sequence's gathered cache, the out rows and the pool's
   written rows equal, every other row of the pool unchanged. Modes: worst-case grid, indirect grid, the length
   bucket of the longest sequence, the workgroup-memory reductions with chunks of 32. */
static const struct {
  uint32_t H, KVH, D, window;
  float cap;
  uint32_t ctx, block, n_seq;
} PD_SHAPES[] = {{8, 2, 64, 0, 0, 1024, 16, 5},   {4, 4, 32, 0, 0, 512, 32, 3},  {8, 1, 128, 100, 0, 128, 32, 4},
                 {6, 2, 16, 0, 30.0f, 300, 7, 4}, {32, 8, 32, 0, 0, 512, 64, 8}, {8, 2, 64, 0, 0, 256, 16, 64}};
#define PD_MODES 4

/* 0 .. n-1 shuffled (Fisher-Yates on the case's seed): a pool's blocks in the order the tables take them */
static uint32_t *shuffled(uint32_t n) {
  uint32_t *perm = malloc(n * 4);
  for (uint32_t i = 0; i < n; i++)
    perm[i] = i;
  for (uint32_t i = n - 1; i > 0; i--) {
    uint32_t j = th_u32(&rng) % (i + 1), t = perm[i];
    perm[i] = perm[j];
    perm[j] = t;
  }
  return perm;
}

/* sequence s's position: lengths spread over the edges of blocks, chunks, the context and a ring */
static uint32_t pd_pos(size_t si, uint32_t s) {
  uint32_t ctx = PD_SHAPES[si].ctx, b = PD_SHAPES[si].block;
  uint32_t L[] = {1, b, b + 1, 128, 129, ctx, ctx - 1, 33, 2 * b + 3};
  uint32_t len = L[s % (sizeof L / sizeof L[0])];
  if (PD_SHAPES[si].window && s % 3 == 2) len = ctx * 2 + 17 + s; /* a ring passed more than once */
  if (!PD_SHAPES[si].window && len > ctx) len = ctx;
  return len - 1;
}

static case_result run_paged_decode(const tcase *tc) {
  int f16 = tc->u.pd.f16, mode = tc->u.pd.mode, rope = tc->u.pd.rope, qkn = rope == 2;
  size_t si = tc->u.pd.si;
  reseed(g_case);
  uint32_t H = PD_SHAPES[si].H, KVH = PD_SHAPES[si].KVH, D = PD_SHAPES[si].D, ctx = PD_SHAPES[si].ctx,
           BS = PD_SHAPES[si].block, NS = PD_SHAPES[si].n_seq, win = PD_SHAPES[si].window;
  uint32_t MB = (ctx + BS - 1) / BS, NB = NS * MB + 3, rows = NB * BS, R = D, max_pos = 4096;
  uint32_t S = rope ? (H + 2 * KVH) * D : H * D; /* a sequence's q row (with RoPE: q, k and v heads) */
  op_kv_layout kv = {.n_kv_head = KVH, .head_dim = D, .ctx = ctx, .f16 = f16};
  size_t npool = (size_t)KVH * rows * D, nseq = (size_t)KVH * ctx * D;
  float *kp = rnd(npool, -1, 1), *vp = rnd(npool, -1, 1), *q = rnd((size_t)NS * S, -1, 1);
  gbuf gk = cache_upload(kp, npool, f16, rope), gv = cache_upload(vp, npool, f16, rope); /* kp, vp: as stored */
  /* block tables: a shuffled pool; sequence 1 starts with sequence 0's first two blocks */
  uint32_t *perm = shuffled(NB), *table = malloc((size_t)NS * MB * 4), *pos = malloc(NS * 4);
  for (uint32_t s = 0; s < NS; s++) {
    pos[s] = pd_pos(si, s);
    uint32_t used = pos[s] + 1 >= ctx ? ctx : pos[s] + 1; /* slots the sequence holds */
    for (uint32_t b = 0; b < MB; b++)
      table[s * MB + b] = b * BS < used ? perm[s * MB + b] : 0xffffffffu;
    if (s == 1 && !rope)
      for (uint32_t b = 0; b < 2 && b * BS < used && b * BS < pos[0] + 1; b++)
        table[s * MB + b] = table[b];
  }
  gbuf gt = gb_in(table, (size_t)NS * MB * 4), gp = gb_in(pos, NS * 4), gq = gb_in(q, (size_t)NS * S * 4),
       gpart = gb_out((size_t)NS * op_attn_partial_bytes(&kv, H, 16)), gind = gb_out(16),
       go = gb_out((size_t)NS * H * D * 4);
  /* each sequence's cache gathered from the pool, [KVH][ctx][D] */
  float *kc = malloc(nseq * 4 * NS), *vc = malloc(nseq * 4 * NS);
  for (uint32_t s = 0; s < NS; s++)
    for (uint32_t h = 0; h < KVH; h++)
      for (uint32_t sl = 0; sl < ctx; sl++) {
        uint32_t b = table[s * MB + sl / BS];
        b = b < NB ? b : NB - 1;
        size_t src = ((size_t)h * rows + (size_t)b * BS + sl % BS) * D, dst = s * nseq + ((size_t)h * ctx + sl) * D;
        memcpy(kc + dst, kp + src, D * 4);
        memcpy(vc + dst, vp + src, D * 4);
      }
  float inv[256], *tab = NULL;
  for (uint32_t i = 0; i < R / 2; i++)
    inv[i] = (float)pow(10000.0, -2.0 * i / R);
  gbuf gc = {0};
  if (rope) {
    tab = malloc((size_t)max_pos * R / 2 * 8);
    op_rope_table(tab, inv, R, max_pos, 1.0f);
    gc = gb_in(tab, (size_t)max_pos * R / 2 * 8);
  }
  op_attn_rope ar = {.cs = gc.v, .rot_dim = R, .max_pos = max_pos, .k_off = H * D, .v_off = (H + KVH) * D};
  /* rope 2: the per-head q/k norms folded in too (a server session's pool: the single-sequence op it is compared
     with is checked against the CPU-normed path in flash_decode_rope) */
  float *qw = rnd(D, 0.5f, 1.5f), *kw = rnd(D, -0.5f, 0.5f);
  gbuf gqw = gb_in(qw, D * 4), gkw = gb_in(kw, D * 4);
  if (qkn) {
    ar.q_norm = gqw.v;
    ar.k_norm = gkw.v;
    ar.eps = 1e-6f;
    ar.w_offset = si % 2 ? 1.0f : 0.0f;
  }
  op_attn_params ap = {.n_tokens = NS,
                       .n_head = H,
                       .q_stride = S,
                       .out_stride = H * D,
                       .window = win,
                       .scale = 1.0f / sqrtf((float)D),
                       .softcap = PD_SHAPES[si].cap,
                       .rope = rope ? &ar : NULL};
  uint32_t longest = 0;
  for (uint32_t s = 0; s < NS; s++)
    longest = pos[s] + 1 > longest ? pos[s] + 1 : longest;
  if (mode == 2) ap.max_len = win ? 0 : fd_bucket(longest, ctx);
  op_kv_pages pg = {.table = gt.v, .max_blocks = MB, .block = BS, .n_blocks = NB};
  ap.pages = &pg;
  op_attn_kernel_opts force = {.chunk = mode == 3 ? 32 : 0, .no_subgroups = mode == 3};
  gpu_view ind = gind.v;
  traffic(2.0 * KVH * (double)longest * NS * D * (f16 ? 2 : 4) + 8.0 * NS * H * D, 4.0 * H * longest * NS * D);
  gpu_recorder *r = rec_new();
  CHECK(op_attention_decode_forced(r, &kv, &ap, &force, gq.v, gk.v, gv.v, gp.v, gpart.v, mode == 1 ? &ind : NULL,
                                   go.v) == WGLLM_OK,
        "%s record: %s", g_case, gpu_recorder_error(r));
  exec(r, NULL);
  gpu_recorder_free(r);
  float *got = malloc((size_t)NS * H * D * 4);
  memcpy(got, gb_fetch(&go), (size_t)NS * H * D * 4);
  gb_guards(&go, "out");
  gb_guards(&gpart, "partial");
  gb_guards(&gind, "indirect args");
  float *want = malloc(H * D * 4);
  for (uint32_t s = 0; s < NS && !g_perf; s++) {
    char part[64];
    snprintf(part, sizeof part, "sequence %u (pos %u)", s, pos[s]);
    if (!rope) { /* the reference reads a linear cache: key j of the ring at slot j % ctx, unrolled */
      size_t lin = (size_t)pos[s] + 1;
      float *kl = calloc((size_t)KVH * lin * D, 4), *vl = calloc((size_t)KVH * lin * D, 4);
      for (uint32_t h = 0; h < KVH; h++)
        for (size_t j = lin > ctx ? lin - ctx : 0; j < lin; j++) {
          size_t src = s * nseq + ((size_t)h * ctx + j % ctx) * D;
          memcpy(kl + ((size_t)h * lin + j) * D, kc + src, D * 4);
          memcpy(vl + ((size_t)h * lin + j) * D, vc + src, D * 4);
        }
      ref_attention(q + (size_t)s * S, S, 0, kl, vl, &pos[s], want, H * D, 1, H, KVH, D, lin, win, ap.scale, ap.softcap,
                    NULL);
      free(kl);
      free(vl);
      cmp(part, got + (size_t)s * H * D, want, H * D, 2e-6, 2e-5);
      continue;
    }
    /* the single-sequence op with RoPE folded in, on this sequence's gathered cache */
    float *k1 = malloc(nseq * 4), *v1 = malloc(nseq * 4);
    memcpy(k1, kc + s * nseq, nseq * 4);
    memcpy(v1, vc + s * nseq, nseq * 4);
    gbuf sk = cache_upload(k1, nseq, f16, 1), sv = cache_upload(v1, nseq, f16, 1), sq = gb_in(q + (size_t)s * S, S * 4),
         sp = gb_in(&pos[s], 4), spart = gb_out(op_attn_partial_bytes(&kv, H, 16)), so = gb_out(H * D * 4);
    op_attn_params a1 = ap;
    a1.n_tokens = 1;
    a1.pages = NULL;
    a1.max_len = 0;
    r = rec_new();
    CHECK(op_attention_decode(r, &kv, &a1, sq.v, sk.v, sv.v, sp.v, spart.v, NULL, so.v) == WGLLM_OK,
          "%s record the single sequence: %s", g_case, gpu_recorder_error(r));
    exec_aux(r);
    gpu_recorder_free(r);
    cmp(part, got + (size_t)s * H * D, gb_fetch(&so), H * D, 1e-6, 1e-5);
    cache_values(gb_fetch(&sk), nseq, f16, k1);
    cache_values(gb_fetch(&sv), nseq, f16, v1);
    /* the token's row, now in the single cache, goes into the expected pool */
    uint32_t sl = pos[s] % ctx, b = table[s * MB + sl / BS];
    for (uint32_t h = 0; h < KVH; h++) {
      size_t src = ((size_t)h * ctx + sl) * D, dst = ((size_t)h * rows + (size_t)b * BS + sl % BS) * D;
      memcpy(kp + dst, k1 + src, D * 4);
      memcpy(vp + dst, v1 + src, D * 4);
    }
    gb_free(&sk);
    gb_free(&sv);
    gb_free(&sq);
    gb_free(&sp);
    gb_free(&spart);
    gb_free(&so);
    free(k1);
    free(v1);
  }
  if (rope && !g_perf) { /* the pool: the new rows in their blocks, nothing else touched */
    float *pk = malloc(npool * 4), *pv = malloc(npool * 4);
    cache_values(gb_fetch(&gk), npool, f16, pk);
    cache_values(gb_fetch(&gv), npool, f16, pv);
    cmp("K pool", pk, kp, npool, 1e-6, 1e-5);
    cmp("V pool", pv, vp, npool, 0, 0);
    gb_guards(&gk, "K pool");
    gb_guards(&gv, "V pool");
    free(pk);
    free(pv);
  }
  gb_free(&gk);
  gb_free(&gv);
  gb_free(&gt);
  gb_free(&gp);
  gb_free(&gq);
  gb_free(&gpart);
  gb_free(&gind);
  gb_free(&go);
  gb_free(&gqw);
  gb_free(&gkw);
  free(qw);
  free(kw);
  if (rope) gb_free(&gc);
  free(tab);
  free(kp);
  free(vp);
  free(q);
  free(perm);
  free(table);
  free(pos);
  free(kc);
  free(vc);
  free(got);
  free(want);
  return verdict();
}

static void cases_paged_decode(void) {
  static const char *const modes[PD_MODES] = {"worst-grid", "indirect", "max_len", "no-subgroups,chunk=32"};
  for (int f16 = 0; f16 < 2; f16++)
    for (int rope = 0; rope < 3; rope++)
      for (size_t si = 0; si < sizeof PD_SHAPES / sizeof PD_SHAPES[0]; si++)
        for (int mode = 0; mode < PD_MODES; mode++) {
          if (rope && mode >= 2) continue; /* the grids are the same code with RoPE folded in */
          if (rope == 2 && mode) continue; /* and with the q/k norms: the worst-case grid */
          tcase *c =
              add_case("paged_decode", run_paged_decode, "%s%s/H=%u/%u,D=%u,win=%u,cap=%g,ctx=%u,block=%u,seqs=%u/%s",
                       f16 ? "f16kv" : "f32kv",
                       rope == 2 ? ",rope,qk_norm"
                       : rope    ? ",rope"
                                 : "",
                       PD_SHAPES[si].H, PD_SHAPES[si].KVH, PD_SHAPES[si].D, PD_SHAPES[si].window, PD_SHAPES[si].cap,
                       PD_SHAPES[si].ctx, PD_SHAPES[si].block, PD_SHAPES[si].n_seq, modes[mode]);
          c->u.pd.f16 = f16;
          c->u.pd.rope = rope;
          c->u.pd.si = si;
          c->u.pd.mode = mode;
        }
}

/* ---------------------------------------------------------------- the one-sequence ops over a paged pool

   The prefill attention kernels (the op's choice and each forced: the workgroup kernel, the untiled subgroup one,
   the one-head tiled one), the KV append and RoPE + KV append, given a pool (op_kv_pages, the sequence at table
   row 1 of 3, its blocks shuffled over the pool) against the same op on the sequence's own cache: the same
   arithmetic, so outputs equal bit for bit, the pool gathered through the table equals the cache written, and
   every row of the pool outside the sequence's blocks is unchanged. Linear caches and a ring passed twice. */
static const struct {
  uint32_t T, past, H, KVH, D, window, ctx, block;
} PP_SHAPES[] = {{9, 40, 8, 2, 64, 0, 64, 16},
                 {33, 100, 4, 4, 32, 0, 160, 7},
                 {20, 300, 8, 1, 128, 100, 128, 32},
                 {5, 0, 16, 4, 16, 0, 8, 4}};
#define PP_MODES 6 /* 0-3 attention (op's choice, no-subgroups, untiled, ungrouped), 4 kv_write, 5 rope_kv */

static case_result run_paged_prefill(const tcase *tc) {
  int f16 = tc->u.pd.f16, mode = tc->u.pd.mode;
  size_t si = tc->u.pd.si;
  reseed(g_case);
  uint32_t T = PP_SHAPES[si].T, past = PP_SHAPES[si].past, H = PP_SHAPES[si].H, KVH = PP_SHAPES[si].KVH,
           D = PP_SHAPES[si].D, win = PP_SHAPES[si].window, ctx = PP_SHAPES[si].ctx, BS = PP_SHAPES[si].block;
  uint32_t MB = (ctx + BS - 1) / BS, NB = 3 * MB + 2, rows = NB * BS, S = (H + 2 * KVH) * D, max_pos = 1024;
  op_kv_layout kv = {.n_kv_head = KVH, .head_dim = D, .ctx = ctx, .f16 = f16};
  size_t nc = (size_t)KVH * ctx * D, np = (size_t)KVH * rows * D;
  float *cache_k = rnd(nc, -1, 1), *cache_v = rnd(nc, -1, 1), *pool_k = rnd(np, -1, 1), *pool_v = rnd(np, -1, 1);
  float *x = rnd((size_t)T * S, -1, 1);
  uint32_t *perm = shuffled(NB), *table = malloc(3 * MB * 4), *pos = malloc(T * 4);
  for (uint32_t i = 0; i < 3 * MB; i++)
    table[i] = perm[i];
  for (uint32_t t = 0; t < T; t++)
    pos[t] = past + t;
  /* the sequence's cache, as stored (f16 rounded), scattered into its blocks of the pool */
  gbuf ck = cache_upload(cache_k, nc, f16, 1), cv = cache_upload(cache_v, nc, f16, 1);
  for (uint32_t h = 0; h < KVH; h++)
    for (uint32_t sl = 0; sl < ctx; sl++) {
      size_t src = ((size_t)h * ctx + sl) * D,
             dst = ((size_t)h * rows + (size_t)table[MB + sl / BS] * BS + sl % BS) * D;
      memcpy(pool_k + dst, cache_k + src, D * 4);
      memcpy(pool_v + dst, cache_v + src, D * 4);
    }
  gbuf pk = cache_upload(pool_k, np, f16, 1), pv = cache_upload(pool_v, np, f16, 1); /* pool_k/v: as stored */
  gbuf gt = gb_in(table, 3 * MB * 4), gp = gb_in(pos, T * 4), x1 = gb_io(x, (size_t)T * S * 4),
       x2 = gb_io(x, (size_t)T * S * 4), o1 = gb_out((size_t)T * H * D * 4), o2 = gb_out((size_t)T * H * D * 4);
  op_kv_pages pg = {.table = gt.v, .max_blocks = MB, .block = BS, .n_blocks = NB, .seq = 1};
  float inv[256], *tab = malloc((size_t)max_pos * D / 2 * 8);
  for (uint32_t i = 0; i < D / 2; i++)
    inv[i] = (float)pow(10000.0, -2.0 * i / D);
  op_rope_table(tab, inv, D, max_pos, 1.0f);
  gbuf gc = gb_in(tab, (size_t)max_pos * D / 2 * 8);
  for (int way = 0; way < 2; way++) { /* 0: the sequence's cache, 1: the pool */
    gpu_recorder *r = rec_new();
    wgllm_status st;
    gpu_view kc = way ? pk.v : ck.v, vc = way ? pv.v : cv.v, xx = way ? x2.v : x1.v;
    if (mode < 4) {
      op_attn_params ap = {.n_tokens = T,
                           .n_head = H,
                           .q_stride = S,
                           .out_stride = H * D,
                           .window = win,
                           .scale = 1.0f / sqrtf((float)D),
                           .pages = way ? &pg : NULL};
      op_attn_kernel_opts force = {.no_subgroups = mode == 1, .untiled = mode == 2, .ungrouped = mode == 3};
      st = op_attention_forced(r, &kv, &ap, &force, xx, kc, vc, gp.v, way ? o2.v : o1.v);
    } else if (mode == 4) {
      op_kv_write_params wp = {.n_tokens = T,
                               .k_off = H * D,
                               .k_stride = S,
                               .v_off = (H + KVH) * D,
                               .v_stride = S,
                               .pages = way ? &pg : NULL};
      st = op_kv_write(r, &kv, &wp, xx, xx, gp.v, kc, vc);
    } else {
      op_rope_kv_params rp = {.n_tokens = T,
                              .n_head = H,
                              .rot_dim = D,
                              .max_pos = max_pos,
                              .mode = OP_ROPE_HALF,
                              .q_stride = S,
                              .k_off = H * D,
                              .k_stride = S,
                              .v_off = (H + KVH) * D,
                              .v_stride = S,
                              .pages = way ? &pg : NULL};
      st = op_rope_kv(r, &kv, &rp, xx, (gpu_view){0}, gp.v, gc.v, kc, vc);
    }
    CHECK(st == WGLLM_OK, "%s record (%s): %s", g_case, way ? "pool" : "cache", gpu_recorder_error(r));
    if (way)
      exec(r, NULL);
    else
      exec_aux(r);
    gpu_recorder_free(r);
  }
  if (mode < 4) {
    float *a = malloc((size_t)T * H * D * 4);
    memcpy(a, gb_fetch(&o1), (size_t)T * H * D * 4);
    cmp("out (pool vs cache)", gb_fetch(&o2), a, (size_t)T * H * D, 0, 0);
    gb_guards(&o2, "out");
    free(a);
  } else { /* the pool through the table equals the cache; every other row as it was */
    float *ek = malloc(np * 4), *ev = malloc(np * 4), *gk = malloc(nc * 4), *gv = malloc(nc * 4);
    memcpy(ek, pool_k, np * 4);
    memcpy(ev, pool_v, np * 4);
    cache_values(gb_fetch(&ck), nc, f16, gk);
    cache_values(gb_fetch(&cv), nc, f16, gv);
    for (uint32_t h = 0; h < KVH; h++)
      for (uint32_t sl = 0; sl < ctx; sl++) {
        size_t src = ((size_t)h * ctx + sl) * D,
               dst = ((size_t)h * rows + (size_t)table[MB + sl / BS] * BS + sl % BS) * D;
        memcpy(ek + dst, gk + src, D * 4);
        memcpy(ev + dst, gv + src, D * 4);
      }
    float *qk = malloc(np * 4), *qv = malloc(np * 4);
    cache_values(gb_fetch(&pk), np, f16, qk);
    cache_values(gb_fetch(&pv), np, f16, qv);
    cmp("K pool", qk, ek, np, 0, 0);
    cmp("V pool", qv, ev, np, 0, 0);
    gb_guards(&pk, "K pool");
    gb_guards(&pv, "V pool");
    float *a = malloc((size_t)T * S * 4);
    memcpy(a, gb_fetch(&x1), (size_t)T * S * 4);
    cmp("x (pool vs cache)", gb_fetch(&x2), a, (size_t)T * S, 0, 0);
    free(a);
    free(ek);
    free(ev);
    free(gk);
    free(gv);
    free(qk);
    free(qv);
  }
  gb_free(&ck);
  gb_free(&cv);
  gb_free(&pk);
  gb_free(&pv);
  gb_free(&gt);
  gb_free(&gp);
  gb_free(&x1);
  gb_free(&x2);
  gb_free(&o1);
  gb_free(&o2);
  gb_free(&gc);
  free(cache_k);
  free(cache_v);
  free(pool_k);
  free(pool_v);
  free(x);
  free(perm);
  free(table);
  free(pos);
  free(tab);
  return verdict();
}

static void cases_paged_prefill(void) {
  static const char *const modes[PP_MODES] = {
      "attention,op", "attention,no-subgroups", "attention,untiled", "attention,ungrouped", "kv_write", "rope_kv"};
  for (int f16 = 0; f16 < 2; f16++)
    for (size_t si = 0; si < sizeof PP_SHAPES / sizeof PP_SHAPES[0]; si++)
      for (int mode = 0; mode < PP_MODES; mode++) {
        tcase *c =
            add_case("paged_prefill", run_paged_prefill, "%s/%s/T=%u,past=%u,H=%u/%u,D=%u,win=%u,ctx=%u,block=%u",
                     f16 ? "f16kv" : "f32kv", modes[mode], PP_SHAPES[si].T, PP_SHAPES[si].past, PP_SHAPES[si].H,
                     PP_SHAPES[si].KVH, PP_SHAPES[si].D, PP_SHAPES[si].window, PP_SHAPES[si].ctx, PP_SHAPES[si].block);
        c->u.pd.f16 = f16;
        c->u.pd.si = si;
        c->u.pd.mode = mode;
      }
}

/* ---------------------------------------------------------------- RoPE + KV append in one dispatch

   Against ref_rope and a plain copy into the cache: both layouts, partial rotary, f32 and packed-f16 caches, V
   from the same fused row or from another buffer. */
static const struct {
  uint32_t T, H, KVH, D, R;
  int mode, vsep;
} RKV_SHAPES[] = {{1, 4, 2, 16, 16, 0, 0},
                  {5, 6, 2, 32, 32, 1, 0},
                  {3, 4, 4, 64, 32, 0, 1},
                  {7, 8, 2, 128, 128, 1, 1},
                  {2, 2, 1, 8, 4, 0, 0}};

static case_result run_rope_kv(const tcase *tc) {
  int f16 = tc->u.rkv.f16;
  size_t c = tc->u.rkv.ci;
  uint32_t max_pos = 512, ctx = 64;
  uint32_t T = RKV_SHAPES[c].T, H = RKV_SHAPES[c].H, KVH = RKV_SHAPES[c].KVH, D = RKV_SHAPES[c].D, R = RKV_SHAPES[c].R,
           S = (H + 2 * KVH) * D;
  int vsep = RKV_SHAPES[c].vsep, rmode = RKV_SHAPES[c].mode;
  op_kv_layout kv = {.n_kv_head = KVH, .head_dim = D, .ctx = ctx, .f16 = f16};
  float *inv = malloc(R / 2 * 4);
  for (uint32_t i = 0; i < R / 2; i++)
    inv[i] = (float)pow(10000.0, -2.0 * i / R);
  float *tab = malloc((size_t)max_pos * R / 2 * 8);
  op_rope_table(tab, inv, R, max_pos, 1.0f);
  float *x = rnd((size_t)T * S, -1, 1), *vs = rnd((size_t)T * S, -1, 1);
  uint32_t *pos = malloc(T * 4);
  for (uint32_t t = 0; t < T; t++)
    pos[t] = 3 + 7 * t;
  size_t n = (size_t)KVH * ctx * D, eb = f16 ? 2 : 4;
  gbuf gx = gb_io(x, (size_t)T * S * 4), gv = gb_in(vs, (size_t)T * S * 4), gp = gb_in(pos, T * 4);
  gbuf gc = gb_in(tab, (size_t)max_pos * R / 2 * 8), gk = gb_out(n * eb), gvc = gb_out(n * eb);
  traffic(4.0 * T * (2 * (H + KVH) * R + KVH * D) + 2.0 * T * KVH * D * eb, 0);
  op_rope_kv_params rp = {.n_tokens = T,
                          .n_head = H,
                          .rot_dim = R,
                          .max_pos = max_pos,
                          .mode = (op_rope_mode)rmode,
                          .q_off = 0,
                          .q_stride = S,
                          .k_off = H * D,
                          .k_stride = S,
                          .v_off = (H + KVH) * D,
                          .v_stride = S};
  gpu_recorder *r = rec_new();
  CHECK(op_rope_kv(r, &kv, &rp, gx.v, vsep ? gv.v : (gpu_view){0}, gp.v, gc.v, gk.v, gvc.v) == WGLLM_OK,
        "%s record: %s", g_case, gpu_recorder_error(r));
  exec(r, NULL);
  gpu_recorder_free(r);
  float *want = malloc((size_t)T * S * 4);
  memcpy(want, x, (size_t)T * S * 4);
  ref_rope(want, pos, tab, T, H + KVH, D, R, S, rmode, max_pos); /* q heads then k heads are contiguous */
  const float *got = gb_fetch(&gx);
  float *gq = malloc((size_t)T * H * D * 4), *wq = malloc((size_t)T * H * D * 4);
  for (uint32_t t = 0; t < T; t++) {
    memcpy(gq + (size_t)t * H * D, got + (size_t)t * S, H * D * 4);
    memcpy(wq + (size_t)t * H * D, want + (size_t)t * S, H * D * 4);
  }
  cmp("q", gq, wq, (size_t)T * H * D, 1e-6, 1e-6);
  gb_guards(&gx, "x");
  /* cache rows at the positions: rotated k, copied v (rounded to f16 when packed); every other row unwritten */
  float *kg = malloc(n * 4), *vg = malloc(n * 4);
  const void *kb = gb_fetch(&gk), *vb = gb_fetch(&gvc);
  cache_values(kb, n, f16, kg);
  cache_values(vb, n, f16, vg);
  char *written = calloc(n, 1);
  size_t bad = 0, unwritten_bad = 0;
  for (uint32_t t = 0; t < T; t++)
    for (uint32_t h = 0; h < KVH; h++)
      for (uint32_t d = 0; d < D; d++) {
        float wk = want[(size_t)t * S + (H + h) * D + d];
        float wv = (vsep ? vs : x)[(size_t)t * S + (H + KVH + h) * D + d];
        if (f16) {
          wk = ref_f16_to_f32(ref_f32_to_f16(wk));
          wv = ref_f16_to_f32(ref_f32_to_f16(wv));
        }
        size_t e = ((size_t)h * ctx + pos[t]) * D + d;
        written[e] = 1;
        /* f32 rounding of the rotation may move a value across an f16 rounding boundary: one f16 step */
        float tol = f16 ? 1e-6f + 1e-3f * fabsf(wk) : 1e-6f + 1e-6f * fabsf(wk);
        if (!(fabsf(kg[e] - wk) <= tol)) bad++;
        if (vg[e] != wv) bad++;
      }
  for (size_t e = 0; e < n; e++)
    if (!written[e]) {
      if (f16)
        unwritten_bad += (((const uint16_t *)kb)[e] != HALF_POISON) + (((const uint16_t *)vb)[e] != HALF_POISON);
      else
        unwritten_bad += unpoisoned(kb, e, 1) + unpoisoned(vb, e, 1);
    }
  VERIFY(bad == 0, "%s cache: %zu wrong", g_case, bad);
  VERIFY(unwritten_bad == 0, "%s cache: %zu elements of rows at other positions written (inner guard)", g_case,
         unwritten_bad);
  gb_guards(&gk, "K cache");
  gb_guards(&gvc, "V cache");
  gb_free(&gx);
  gb_free(&gv);
  gb_free(&gp);
  gb_free(&gc);
  gb_free(&gk);
  gb_free(&gvc);
  free(inv);
  free(tab);
  free(x);
  free(vs);
  free(pos);
  free(want);
  free(gq);
  free(wq);
  free(kg);
  free(vg);
  free(written);
  return verdict();
}

static void cases_rope_kv(void) {
  for (int f16 = 0; f16 < 2; f16++)
    for (size_t c = 0; c < sizeof RKV_SHAPES / sizeof RKV_SHAPES[0]; c++) {
      tcase *t = add_case("rope_kv", run_rope_kv, "%s/T=%u,H=%u/%u,D=%u,R=%u,%s,vsep=%d", f16 ? "f16kv" : "f32kv",
                          RKV_SHAPES[c].T, RKV_SHAPES[c].H, RKV_SHAPES[c].KVH, RKV_SHAPES[c].D, RKV_SHAPES[c].R,
                          rope_mode_name(RKV_SHAPES[c].mode), RKV_SHAPES[c].vsep);
      t->u.rkv.f16 = f16;
      t->u.rkv.ci = c;
    }
}

/* ---------------------------------------------------------------- hostile buffer contents

   The kernels that index with values read from GPU buffers (token ids, positions, the sampler's ring state) bound
   them by construction (docs/ARCHITECTURE.md, "Kernel bounds"): the engine runs without Dawn's robustness
   transform, where an index past a binding reads or writes outside it. These cases feed such values out of range
   (ids past the vocabulary, positions past the cache and the angle table, 0x7fffffff and 0xffffffff, a ring index
   past the ring) and check that the guards around every buffer stay intact (no write escapes, and a read past a
   binding would bring a guard's NaN into an output checked finite), that the dispatches end (no runaway key loop),
   and where the kernel documents its clamp, that the output equals the clamped input's, bit for bit. Meant to run
   under WGLLM_TEST_DAWN_TOGGLES=disable_robustness too (tests/tests.cmake: test_ops_unrobust). */

/* checks n floats are all finite (a read of a guard's NaN pattern, or of an unwritten poisoned element, is not) */
static void all_finite(const char *part, const float *v, size_t n) {
  size_t bad = 0;
  for (size_t i = 0; i < n; i++)
    bad += !isfinite(v[i]);
  CHECK(bad == 0, "%s %s: %zu of %zu values not finite", g_case, part, bad, n);
}

static const uint32_t HOSTILE_IDS[] = {0x7fffffffu, 0xffffffffu, 0x80000000u};

/* A cache as cache_upload makes it, with an inner tail of 256 guard bytes inside its binding: a read a few rows
   past the cache's last slot gets the tail's NaN pattern on any device (past the binding, a robust device, or
   lavapipe whatever the toggles, returns zeros or a clamped element instead: the finite checks cannot see those) */
static gbuf cache_tail(float *vals, size_t n, int f16) {
  if (!f16) return gb_make(vals, n * 4, 256);
  uint16_t *h = malloc(n * 2 + 4);
  for (size_t i = 0; i < n; i++) {
    h[i] = ref_f32_to_f16(vals[i]);
    vals[i] = ref_f16_to_f32(h[i]);
  }
  gbuf g = gb_make(h, n * 2, 256);
  free(h);
  return g;
}

static case_result run_hostile_embedding(const tcase *c) {
  op_wtype wt = c->u.emb.wt;
  size_t D = c->u.emb.D, V = c->u.emb.V, T = 6;
  float *table = malloc(V * D * 4 + 4);
  gbuf tb[2];
  op_weight ow = make_weight(wt, V, D, 32, table, tb);
  uint32_t ids[6] = {(uint32_t)V, (uint32_t)V + 1, HOSTILE_IDS[0], HOSTILE_IDS[1], HOSTILE_IDS[2], 0}, clamped[6];
  for (size_t t = 0; t < T; t++)
    clamped[t] = ids[t] < V ? ids[t] : (uint32_t)V - 1; /* the kernel's documented clamp */
  float *want = malloc(T * D * 4);
  gbuf gi = gb_in(ids, sizeof ids), go = gb_out(T * D * 4);
  gpu_recorder *r = rec_new();
  CHECK(op_embedding(r, gi.v, &ow, go.v, (uint32_t)T, (uint32_t)D, (uint32_t)V, 1.0f) == WGLLM_OK, "%s record: %s",
        g_case, gpu_recorder_error(r));
  exec(r, NULL);
  gpu_recorder_free(r);
  ref_embedding(clamped, table, want, T, D, 1.0f);
  cmp("out (ids clamped to V - 1)", gb_fetch(&go), want, T * D, 0, 1e-6);
  gb_guards(&go, "out");
  for (int i = 0; i < 2; i++)
    if (tb[i].buf) gb_guards(&tb[i], "table");
  free_weight(tb);
  gb_free(&gi);
  gb_free(&go);
  free(table);
  free(want);
  return verdict();
}

/* RoPE in place: positions past the table give what max_pos - 1 gives, bit for bit */
static case_result run_hostile_rope(const tcase *c) {
  uint32_t T = 5, H = 3, D = 16, R = 16, max_pos = 9;
  float *inv = malloc(R / 2 * 4), *tab = malloc((size_t)max_pos * R / 2 * 8), *x = rnd(T * H * D, -1, 1);
  for (uint32_t i = 0; i < R / 2; i++)
    inv[i] = (float)pow(10000.0, -2.0 * i / R);
  op_rope_table(tab, inv, R, max_pos, 1.0f);
  uint32_t pos[5] = {max_pos, max_pos + 100, HOSTILE_IDS[0], HOSTILE_IDS[1], HOSTILE_IDS[2]}, last[5];
  for (int t = 0; t < 5; t++)
    last[t] = max_pos - 1;
  gbuf gc = gb_in(tab, (size_t)max_pos * R / 2 * 8), gx[2], gp[2];
  op_rope_params rp = {.n_tokens = T,
                       .n_heads = H,
                       .head_dim = D,
                       .rot_dim = R,
                       .x_off = 0,
                       .token_stride = H * D,
                       .mode = (op_rope_mode)c->u.rope.mode,
                       .max_pos = max_pos};
  for (int way = 0; way < 2; way++) { /* 0: hostile positions, 1: max_pos - 1 */
    gx[way] = gb_io(x, T * H * D * 4);
    gp[way] = gb_in(way ? last : pos, sizeof pos);
    gpu_recorder *r = rec_new();
    CHECK(op_rope(r, gx[way].v, gp[way].v, gc.v, &rp) == WGLLM_OK, "%s record: %s", g_case, gpu_recorder_error(r));
    if (way)
      exec_aux(r);
    else
      exec(r, NULL);
    gpu_recorder_free(r);
    gb_guards(&gx[way], "x");
  }
  CHECK(memcmp(gb_fetch(&gx[0]), gb_fetch(&gx[1]), T * H * D * 4) == 0, "%s: hostile positions differ from max_pos - 1",
        g_case);
  all_finite("x", gb_fetch(&gx[0]), T * H * D);
  gb_guards(&gc, "angle table");
  for (int way = 0; way < 2; way++) {
    gb_free(&gx[way]);
    gb_free(&gp[way]);
  }
  gb_free(&gc);
  free(inv);
  free(tab);
  free(x);
  return verdict();
}

/* KV append (kv_write, or rope_kv): positions past the cache land in slot pos % ctx, as the ring's do */
static case_result run_hostile_kv(const tcase *c) {
  int f16 = c->u.attn.f16, fused = c->u.attn.nosg;
  uint32_t T = 4, H = 2, KVH = 2, D = 16, ctx = 10, max_pos = 7, S = (H + 2 * KVH) * D;
  /* distinct slots (10, 23, 2^32 - 1, 2^31 modulo 10: 0, 3, 5, 8), so the writes do not race */
  uint32_t pos[4] = {ctx, 2 * ctx + 3, HOSTILE_IDS[1], HOSTILE_IDS[2]};
  op_kv_layout kv = {.n_kv_head = KVH, .head_dim = D, .ctx = ctx, .f16 = f16};
  size_t n = (size_t)KVH * ctx * D;
  float *x = rnd(T * S, -1, 1), *kc = rnd(n, -1, 1), *vc = rnd(n, -1, 1), *got = malloc(n * 4);
  float *inv = malloc(D / 2 * 4), *tab = malloc((size_t)max_pos * D / 2 * 8);
  for (uint32_t i = 0; i < D / 2; i++)
    inv[i] = (float)pow(10000.0, -2.0 * i / D);
  op_rope_table(tab, inv, D, max_pos, 1.0f);
  gbuf gx = gb_io(x, T * S * 4), gp = gb_in(pos, sizeof pos), gc = gb_in(tab, (size_t)max_pos * D / 2 * 8);
  gbuf gk = cache_tail(kc, n, f16), gv = cache_tail(vc, n, f16);
  gpu_recorder *r = rec_new();
  wgllm_status s;
  if (fused) {
    op_rope_kv_params rp = {.n_tokens = T,
                            .n_head = H,
                            .rot_dim = D,
                            .max_pos = max_pos,
                            .mode = OP_ROPE_HALF,
                            .q_off = 0,
                            .q_stride = S,
                            .k_off = H * D,
                            .k_stride = S,
                            .v_off = (H + KVH) * D,
                            .v_stride = S};
    s = op_rope_kv(r, &kv, &rp, gx.v, (gpu_view){0}, gp.v, gc.v, gk.v, gv.v);
  } else {
    op_kv_write_params wp = {.n_tokens = T, .k_off = H * D, .k_stride = S, .v_off = (H + KVH) * D, .v_stride = S};
    s = op_kv_write(r, &kv, &wp, gx.v, gx.v, gp.v, gk.v, gv.v);
  }
  CHECK(s == WGLLM_OK, "%s record: %s", g_case, gpu_recorder_error(r));
  exec(r, NULL);
  gpu_recorder_free(r);
  /* the rows at the four slots were written (finite), every other row is as it was */
  size_t moved = 0;
  for (int which = 0; which < 2; which++) {
    cache_values(gb_fetch(which ? &gv : &gk), n, f16, got);
    const float *was = which ? vc : kc;
    all_finite(which ? "V cache" : "K cache", got, n);
    for (size_t i = 0; i < n; i++) {
      uint32_t slot = (uint32_t)(i / D % ctx);
      int written = 0;
      for (int t = 0; t < 4; t++)
        written |= pos[t] % ctx == slot;
      moved += !written && memcmp(&got[i], &was[i], 4) != 0;
    }
  }
  CHECK(moved == 0, "%s: %zu cache elements outside the slots pos %% ctx changed", g_case, moved);
  gb_guards(&gk, "K cache");
  gb_guards(&gv, "V cache");
  gb_guards(&gx, "x");
  gb_free(&gx);
  gb_free(&gp);
  gb_free(&gc);
  gb_free(&gk);
  gb_free(&gv);
  free(x);
  free(kc);
  free(vc);
  free(got);
  free(inv);
  free(tab);
  return verdict();
}

/* position patterns of the attention cases: 0 past the cache, near each other; 1 at the top of the u32 range;
   2 far apart (0x7ffffff0 and small ones in one workgroup) */
static void hostile_positions(int pat, uint32_t ctx, uint32_t *pos, size_t T) {
  for (size_t t = 0; t < T; t++)
    pos[t] = pat == 0   ? ctx + 3 * (uint32_t)t
             : pat == 1 ? 0xffffffffu - (uint32_t)t
             : t % 2    ? 0x7ffffff0u
                        : (uint32_t)t;
}

/* prefill attention (each kernel: c->u.attn.nosg as run_attention's 0..3) over a small linear cache */
static case_result run_hostile_attention(const tcase *c) {
  int f16 = c->u.attn.f16, pat = (int)c->u.attn.past;
  uint32_t T = c->u.attn.T, H = c->u.attn.H, KVH = c->u.attn.KVH, D = c->u.attn.D, ctx = 12, window = c->u.attn.window;
  op_kv_layout kv = {.n_kv_head = KVH, .head_dim = D, .ctx = ctx, .f16 = f16};
  size_t n = (size_t)KVH * ctx * D;
  float *q = rnd((size_t)T * H * D, -1, 1), *kc = rnd(n, -1, 1), *vc = rnd(n, -1, 1);
  uint32_t *pos = malloc(T * 4);
  hostile_positions(pat, ctx, pos, T);
  gbuf gq = gb_in(q, (size_t)T * H * D * 4), gp = gb_in(pos, T * 4), go = gb_out((size_t)T * H * D * 4);
  gbuf gk = cache_tail(kc, n, f16), gv = cache_tail(vc, n, f16);
  op_attn_params ap = {.n_tokens = T,
                       .n_head = H,
                       .q_stride = H * D,
                       .q_off = 0,
                       .out_stride = H * D,
                       .window = window,
                       .scale = 1.0f / sqrtf((float)D),
                       .softcap = 0};
  op_attn_kernel_opts force = {
      .no_subgroups = c->u.attn.nosg == 1, .untiled = c->u.attn.nosg == 2, .ungrouped = c->u.attn.nosg == 3};
  gpu_recorder *r = rec_new();
  CHECK(op_attention_forced(r, &kv, &ap, &force, gq.v, gk.v, gv.v, gp.v, go.v) == WGLLM_OK, "%s record: %s", g_case,
        gpu_recorder_error(r));
  exec(r, NULL);
  gpu_recorder_free(r);
  const float *got = gb_fetch(&go);
  /* far-apart positions in one workgroup: a token whose keys lie outside the capped walk gets no keys (0 / 0), so
     only "written" is checked there; otherwise every query sees at least its own key and reads finite data */
  if (pat == 2)
    CHECK(unpoisoned(got, 0, (size_t)T * H * D) == (size_t)T * H * D, "%s: outputs left unwritten", g_case);
  else
    all_finite("out", got, (size_t)T * H * D);
  gb_guards(&go, "out");
  gb_guards(&gk, "K cache");
  gb_guards(&gv, "V cache");
  gb_guards(&gq, "q");
  gb_free(&gq);
  gb_free(&gp);
  gb_free(&go);
  gb_free(&gk);
  gb_free(&gv);
  free(q);
  free(kc);
  free(vc);
  free(pos);
  return verdict();
}

/* flash-decoding (attn_grid, attn_split, attn_reduce), worst-case or indirect grid, with RoPE folded in or not,
   the partials exactly as many chunks as the op needs (a chunk past them lands in the guards) */
static case_result run_hostile_flash(const tcase *c) {
  int f16 = c->u.fd.f16, mode = c->u.fd.mode, indirect = mode & 1, rope = (mode >> 1) & 1;
  uint32_t H = 4, KVH = 2, D = 32, ctx = (uint32_t)c->u.fd.si, window = (uint32_t)c->u.fd.li, max_pos = 16;
  int pi = (mode >> 2) & 3;
  uint32_t S = (H + 2 * KVH) * D, pos = pi == 0 ? ctx : pi == 1 ? 3 * ctx + 7 : pi == 2 ? 0x7fffffffu : 0xffffffffu;
  op_kv_layout kv = {.n_kv_head = KVH, .head_dim = D, .ctx = ctx, .f16 = f16};
  size_t n = (size_t)KVH * ctx * D;
  float *x = rnd(S, -1, 1), *kc = rnd(n, -1, 1), *vc = rnd(n, -1, 1);
  float *inv = malloc(D / 2 * 4), *tab = malloc((size_t)max_pos * D / 2 * 8);
  for (uint32_t i = 0; i < D / 2; i++)
    inv[i] = (float)pow(10000.0, -2.0 * i / D);
  op_rope_table(tab, inv, D, max_pos, 1.0f);
  gbuf gx = gb_in(x, S * 4), gp = gb_in(&pos, 4), gc = gb_in(tab, (size_t)max_pos * D / 2 * 8);
  gbuf gk = cache_tail(kc, n, f16), gv = cache_tail(vc, n, f16);
  gbuf gpart = gb_out(op_attn_partial_bytes(&kv, H, 32)), gind = gb_out(16), go = gb_out(H * D * 4);
  op_attn_rope ro = {.cs = gc.v,
                     .vsrc = {0},
                     .rot_dim = D,
                     .max_pos = max_pos,
                     .k_off = H * D,
                     .v_off = (H + KVH) * D,
                     .mode = OP_ROPE_HALF};
  op_attn_params ap = {.n_tokens = 1,
                       .n_head = H,
                       .q_stride = S,
                       .q_off = 0,
                       .out_stride = H * D,
                       .window = window,
                       .scale = 1.0f / sqrtf((float)D),
                       .softcap = 0,
                       .rope = rope ? &ro : NULL};
  op_attn_kernel_opts force = {.chunk = 32};
  gpu_recorder *r = rec_new();
  CHECK(op_attention_decode_forced(r, &kv, &ap, &force, gx.v, gk.v, gv.v, gp.v, gpart.v, indirect ? &gind.v : NULL,
                                   go.v) == WGLLM_OK,
        "%s record: %s", g_case, gpu_recorder_error(r));
  exec(r, NULL);
  gpu_recorder_free(r);
  all_finite("out", gb_fetch(&go), H * D);
  gb_guards(&go, "out");
  gb_guards(&gpart, "partial");
  gb_guards(&gk, "K cache");
  gb_guards(&gv, "V cache");
  if (indirect) {
    const uint32_t *args = gb_fetch(&gind);
    CHECK(args[1] >= 1 && (uint64_t)args[1] * H * (D + 2) * 4 <= gpart.bytes,
          "%s: indirect grid of %u chunks, over the partials' %zu bytes", g_case, args[1], gpart.bytes);
    gb_guards(&gind, "indirect args");
  }
  gb_free(&gx);
  gb_free(&gp);
  gb_free(&gc);
  gb_free(&gk);
  gb_free(&gv);
  gb_free(&gpart);
  gb_free(&gind);
  gb_free(&go);
  free(x);
  free(kc);
  free(vc);
  free(inv);
  free(tab);
  return verdict();
}

/* the sampler's state: ring index past the ring, ring fill past the ring, ring tokens past the vocabulary */
static case_result run_hostile_sample(const tcase *c) {
  int sampling = c->u.fd.mode & 1;
  uint32_t V = 3000, ring = 8, w = c->u.fd.mode & 2 ? ring + 30 : 1000;
  float *logits = rnd(V, -4, 4);
  uint32_t state[12] = {0, 0xffffffffu, w, 0, V, V + 5000, 0xffffffffu, 1, 2, 2, 7, 0x80000000u};
  op_sample_params sp = {.temperature = sampling ? 0.8f : 0.0f,
                         .top_p = sampling ? 0.9f : 1.0f,
                         .min_p = 0,
                         .rep_penalty = 1.3f,
                         .top_k = sampling ? 40 : 0,
                         .ring_cap = ring,
                         .seed = 7,
                         .presence = 0.5f,
                         .frequency = 0.25f};
  gbuf gl = gb_io(logits, V * 4), gs = gb_io(state, sizeof state), go = gb_out(4), gw = gb_out(op_sample_work_bytes());
  gs.v.size = sizeof state; /* exactly the state the ring needs: a write past it lands in the tail or the guard */
  gpu_recorder *r = rec_new();
  CHECK(op_sample(r, &sp, gl.v, gs.v, go.v, gw.v, V) == WGLLM_OK, "%s record: %s", g_case, gpu_recorder_error(r));
  exec(r, NULL);
  gpu_recorder_free(r);
  uint32_t tok = *(const uint32_t *)gb_fetch(&go);
  const uint32_t *st = gb_fetch(&gs);
  CHECK(tok < V, "%s: token %u of a vocabulary of %u", g_case, tok, V);
  CHECK(st[4 + w % ring] == tok && st[2] == (w % ring + 1) % ring && st[1] == ring,
        "%s: ring not appended at index %u %% %u (index now %u, fill %u)", g_case, w, ring, st[2], st[1]);
  gb_guards(&gs, "state");
  all_finite("logits", gb_fetch(&gl), V);
  gb_guards(&gl, "logits");
  gb_guards(&go, "out");
  gb_guards(&gw, "work");
  gb_free(&gl);
  gb_free(&gs);
  gb_free(&go);
  gb_free(&gw);
  free(logits);
  return verdict();
}

static void cases_hostile(void) {
  static const op_wtype emb_types[] = {OP_W_F32, OP_W_F16, OP_W_Q4, OP_W_Q8, OP_W_Q4_K};
  for (size_t i = 0; i < sizeof emb_types / sizeof emb_types[0]; i++) {
    uint32_t D = emb_types[i] == OP_W_Q4_K ? 256 : 64;
    tcase *c = add_case("hostile", run_hostile_embedding, "embedding/%s/D=%u,V=5", op_wtype_name(emb_types[i]), D);
    c->u.emb.wt = emb_types[i];
    c->u.emb.D = D;
    c->u.emb.V = 5;
  }
  for (int mode = 0; mode < 2; mode++)
    add_case("hostile", run_hostile_rope, "rope/%s", rope_mode_name(mode))->u.rope.mode = mode;
  for (int f16 = 0; f16 < 2; f16++)
    for (int fused = 0; fused < 2; fused++) {
      tcase *c = add_case("hostile", run_hostile_kv, "%s/%s", fused ? "rope_kv" : "kv_write", f16 ? "f16kv" : "f32kv");
      c->u.attn.f16 = f16;
      c->u.attn.nosg = fused;
    }
  static const char *kernels[] = {"op", "workgroup", "untiled", "one-head-tiled"};
  static const char *pats[] = {"past-cache", "u32-top", "far-apart"};
  static const uint32_t shapes[][4] = {{7, 4, 2, 16}, {9, 8, 2, 64}}; /* T, H, KVH, D */
  for (int f16 = 0; f16 < 2; f16++)
    for (size_t si = 0; si < 2; si++)
      for (uint32_t window = 0; window <= 6; window += 6)
        for (int k = 0; k < 4; k++)
          for (int pat = 0; pat < 3; pat++) {
            tcase *c = add_case("hostile", run_hostile_attention, "attention/%s/T=%u,H=%u/%u,D=%u,win=%u/%s/%s",
                                f16 ? "f16kv" : "f32kv", shapes[si][0], shapes[si][1], shapes[si][2], shapes[si][3],
                                window, kernels[k], pats[pat]);
            c->u.attn.f16 = f16;
            c->u.attn.T = shapes[si][0];
            c->u.attn.H = shapes[si][1];
            c->u.attn.KVH = shapes[si][2];
            c->u.attn.D = shapes[si][3];
            c->u.attn.window = window;
            c->u.attn.nosg = k;
            c->u.attn.past = (uint32_t)pat;
          }
  static const uint32_t ctxs[] = {20, 200};
  static const char *fpos[] = {"pos=ctx", "pos=3ctx+7", "pos=0x7fffffff", "pos=0xffffffff"};
  for (int f16 = 0; f16 < 2; f16++)
    for (size_t ci = 0; ci < 2; ci++)
      for (uint32_t window = 0; window <= 50; window += 50)
        for (int mode = 0; mode < 16; mode++) {
          tcase *c = add_case("hostile", run_hostile_flash, "flash_decode/%s/ctx=%u,win=%u/%s/%s%s",
                              f16 ? "f16kv" : "f32kv", ctxs[ci], window, fpos[mode >> 2],
                              mode & 1 ? "indirect" : "worst-grid", mode & 2 ? ",rope" : "");
          c->u.fd.f16 = f16;
          c->u.fd.si = ctxs[ci];
          c->u.fd.li = window;
          c->u.fd.mode = mode;
        }
  for (int mode = 0; mode < 4; mode++)
    add_case("hostile", run_hostile_sample, "sample/%s/ring_index=%s", mode & 1 ? "sampled" : "greedy",
             mode & 2 ? "ring+30" : "1000")
        ->u.fd.mode = mode;
}

/* ---------------------------------------------------------------- mixture of experts

   Router top-k, per-expert lists and indirect arguments, expert linear (three routes), combine: each against its
   reference in src/ref/ref_moe.c. Routing patterns of the ids the lists and linear cases take (pat): 0 k distinct
   random experts a token (what a router gives); 1 every token to the same k experts (all to one expert at k = 1;
   the others get nothing); 2 skewed, the experts drawn from the first E / 8 + k only (many without pairs). */

static const char *MOE_PATS[] = {"random", "same-k", "skewed"};
static const char *MOE_ROUTES[] = {"pairs", "tiles", "per-expert", "groups"};
static const char *MOE_ACTS[] = {"silu", "gelu_tanh", "swiglu_oai"};
static const char *MOE_NORMS[] = {"softmax", "softmax_norm", "topk_softmax"}; /* op_moe_norm */

/* ids [T][k]: k distinct experts a token, drawn by pattern pat */
static uint32_t *moe_ids(size_t T, size_t k, size_t E, int pat) {
  uint32_t *ids = malloc(T * k * 4 + 4);
  size_t pool = pat == 2 ? E / 8 + k : E;
  if (pool > E) pool = E;
  for (size_t t = 0; t < T; t++)
    for (size_t j = 0; j < k; j++) {
      uint32_t e;
      int dup;
      do {
        e = pat == 1 ? (uint32_t)((3 + 5 * j) % E) : th_u32(&rng) % (uint32_t)pool;
        dup = 0;
        for (size_t i = 0; i < j; i++)
          dup |= ids[t * k + i] == e;
        if (pat == 1 && dup) e = (e + 1) % (uint32_t)E; /* E small: keep the set distinct */
      } while (dup && pat != 1);
      ids[t * k + j] = e;
    }
  return ids;
}

/* An expert tensor [E][rows][K] of the storage type as one weight, or in n_parts parts of whole experts, the first
   of that storage and the others q8 and Q6_K in turn (parts of mixed storages, as a Q4_K_M file's); n_parts 0: one
   piece, or as many parts of that storage as the device's storage binding limit needs (the perf_moe shapes). deq:
   [E][rows][K], the values the kernels must use; bufs: 2 * MOE_MAX_PARTS, for moe_weight_free. */
#define MOE_MAX_PARTS 8
static op_weight moe_weight(op_wtype type, size_t E, size_t rows, size_t K, int n_parts, float *deq, gbuf *bufs) {
  static const op_wtype others[] = {OP_W_Q8, OP_W_Q6_K};
  memset(bufs, 0, 2 * MOE_MAX_PARTS * sizeof *bufs);
  int mixed = n_parts > 0;
  if (!n_parts) {
    double lim = (double)th_gpu()->limits.maxStorageBufferBindingSize,
           bytes = weight_bytes(type, (double)E * rows, K, 32);
    n_parts = bytes <= lim ? 1 : (int)ceil(1.25 * bytes / lim);
    if (n_parts > MOE_MAX_PARTS) n_parts = MOE_MAX_PARTS;
  }
  if (n_parts == 1 && !mixed) return make_weight(type, E * rows, K, 32, deq, bufs);
  op_weight w = {.type = type, .group = 32, .n_parts = (uint32_t)n_parts};
  size_t e0 = 0;
  for (int i = 0; i < n_parts; i++) {
    size_t ne = (E - e0 + (size_t)(n_parts - i) - 1) / (size_t)(n_parts - i);
    op_wtype t = mixed && i ? others[(i - 1) % 2] : type;
    op_weight pw = make_weight(t, ne * rows, K, 32, deq + e0 * rows * K, bufs + 2 * i);
    w.part[i] = (struct op_weight_part){
        .data = pw.data, .scales = pw.scales, .rows = (uint32_t)(ne * rows), .type = t, .group = 32};
    e0 += ne;
  }
  w.data = w.part[0].data;
  return w;
}
static void moe_weight_free(gbuf *bufs) {
  for (int i = 0; i < 2 * MOE_MAX_PARTS; i++)
    gb_free(&bufs[i]);
}

/* |got - want| <= tol[i] (and got finite) for every element */
static void cmp_bound(const char *part, const float *got, const float *want, const double *tol, size_t n) {
  if (g_perf) return;
  size_t bad = 0;
  for (size_t i = 0; i < n; i++) {
    double d = fabs((double)got[i] - want[i]);
    if (!(d <= tol[i]) || !isfinite(got[i])) {
      if (bad < 4)
        fprintf(stderr, "  %s %s[%zu] got %.9g want %.9g (tol %.3g)\n", g_case, part, i, got[i], want[i], tol[i]);
      bad++;
    }
  }
  CHECK(bad == 0, "%s %s: %zu of %zu out of tolerance", g_case, part, bad, n);
}

static case_result run_moe_route(const tcase *c) {
  size_t T = c->u.moe.T, E = c->u.moe.E, k = c->u.moe.k;
  int pat = c->u.moe.pat;
  float *l = malloc(T * E * 4 + 4), *scale = rnd(E, 0.5f, 2.0f), *want = malloc(T * k * 4);
  uint32_t *want_ids = malloc(T * k * 4);
  for (size_t i = 0; i < T * E; i++) /* pat 1: integers in -2..2, many ties; 2: every logit equal */
    l[i] = pat == 0 ? th_uniform(&rng, -4, 4) : pat == 1 ? (float)((int)(th_u32(&rng) % 5) - 2) : 0.75f;
  gbuf gl = gb_in(l, T * E * 4), gs = gb_in(scale, E * 4), gi = gb_out(T * k * 4), gw = gb_out(T * k * 4);
  traffic(4.0 * (T * E + 2 * T * k), 0);
  gpu_recorder *r = rec_new();
  wgllm_status s = op_moe_route(r, gl.v, c->u.moe.scale ? gs.v : (gpu_view){0}, gi.v, gw.v, (uint32_t)T, (uint32_t)E,
                                (uint32_t)k, (op_moe_norm)c->u.moe.mode);
  CHECK(s == WGLLM_OK, "%s record: %s", g_case, gpu_recorder_error(r));
  exec(r, NULL);
  gpu_recorder_free(r);
  ref_moe_route(l, T, E, k, c->u.moe.mode, c->u.moe.scale ? scale : NULL, want_ids, want);
  const uint32_t *got_ids = gb_fetch(&gi);
  size_t bad = 0;
  for (size_t i = 0; i < T * k && !g_perf; i++)
    if (got_ids[i] != want_ids[i]) {
      if (bad < 4) fprintf(stderr, "  %s ids[%zu] got %u want %u\n", g_case, i, got_ids[i], want_ids[i]);
      bad++;
    }
  VERIFY(bad == 0, "%s: %zu of %zu ids differ", g_case, bad, T * k);
  /* f32 softmax against double: WGSL's exp is within 3 + 2|x| ULP (|x| <= 8 here), sums of up to 256 terms */
  cmp("weights", gb_fetch(&gw), want, T * k, 1e-7, 1e-5);
  gb_guards(&gi, "ids");
  gb_guards(&gw, "weights");
  gb_free(&gl);
  gb_free(&gs);
  gb_free(&gi);
  gb_free(&gw);
  free(l);
  free(scale);
  free(want);
  free(want_ids);
  return verdict();
}

static case_result run_moe_lists(const tcase *c) {
  size_t T = c->u.moe.T, E = c->u.moe.E, k = c->u.moe.k, np = T * k, N = c->u.moe.N;
  uint32_t *ids = moe_ids(T, k, E, c->u.moe.pat), tm = c->u.moe.tm ? c->u.moe.tm : OP_MOE_TILE_M;
  op_moe_lists_layout lay = op_moe_lists_layout_of((uint32_t)np, (uint32_t)E, tm);
  gbuf gi = gb_in(ids, np * 4), gl = gb_out((size_t)lay.words * 4), gind = gb_out(E * 12);
  traffic(4.0 * (np + lay.words + 3 * E), 0);
  gpu_recorder *r = rec_new();
  wgllm_status s = op_moe_lists(r, gi.v, gl.v, (uint32_t)T, (uint32_t)k, (uint32_t)E, tm);
  /* the indirect arguments read lists of a prompt's tiles */
  if (!s && tm == OP_MOE_TILE_M)
    s = op_moe_indirect(r, gl.v, gind.v, (uint32_t)T, (uint32_t)k, (uint32_t)E, (uint32_t)N, c->u.moe.glu);
  CHECK(s == WGLLM_OK, "%s record: %s", g_case, gpu_recorder_error(r));
  exec(r, NULL);
  gpu_recorder_free(r);
  uint32_t *cnt = malloc(E * 4), *off = malloc((E + 1) * 4), *ent = malloc(np * 4);
  ref_moe_lists(ids, T, k, E, cnt, off, ent);
  const uint32_t *L = gb_fetch(&gl);
  if (!g_perf) {
    size_t bad = 0, tiles = 0, empty = 0;
    for (size_t e = 0; e < E; e++) {
      bad += L[lay.cnt + e] != cnt[e];
      bad += L[lay.off + e] != off[e];
      empty += cnt[e] == 0;
    }
    bad += L[lay.off + E] != off[E];
    for (size_t i = 0; i < np; i++)
      bad += L[lay.ent + i] != ent[i];
    CHECK(bad == 0, "%s: %zu words of the counts, offsets and entries differ", g_case, bad);
    /* the tile table: each expert's pairs in tiles of tm, experts in order; the rest unwritten */
    bad = 0;
    for (size_t e = 0; e < E; e++)
      for (uint32_t r0 = off[e]; r0 < off[e + 1]; r0 += tm, tiles++)
        bad += tiles >= lay.max_tiles || L[lay.tile + 2 * tiles] != e || L[lay.tile + 2 * tiles + 1] != r0;
    CHECK(bad == 0 && L[0] == tiles, "%s: tile table: %zu tiles differ, %u tiles for %zu", g_case, bad, L[0], tiles);
    CHECK(unpoisoned(L, lay.tile + 2 * tiles, 2 * (lay.max_tiles - tiles)) == 0,
          "%s: tile slots past the table written", g_case);
    /* indirect arguments: (tiles across N, ceil(count / TM), 1), (1, 1, 1) without pairs, never 0 */
    const uint32_t *ind = gb_fetch(&gind);
    bad = 0;
    for (size_t e = 0; e < E && tm == OP_MOE_TILE_M; e++) {
      uint32_t per = c->u.moe.glu ? OP_MOE_TILE_N / 2 : OP_MOE_TILE_N;
      uint32_t want[3] = {cnt[e] ? (uint32_t)(N + per - 1) / per : 1,
                          cnt[e] ? (cnt[e] + OP_MOE_TILE_M - 1) / OP_MOE_TILE_M : 1, 1};
      for (int i = 0; i < 3; i++)
        bad += ind[3 * e + i] != want[i];
    }
    CHECK(bad == 0, "%s: %zu indirect words differ", g_case, bad);
    CHECK(c->u.moe.pat == 0 || empty > 0, "%s: the pattern left no expert without pairs", g_case);
  }
  gb_guards(&gl, "lists");
  gb_guards(&gind, "indirect");
  gb_free(&gi);
  gb_free(&gl);
  gb_free(&gind);
  free(ids);
  free(cnt);
  free(off);
  free(ent);
  return verdict();
}

static case_result run_moe_linear(const tcase *c) {
  size_t T = c->u.moe.T, E = c->u.moe.E, k = c->u.moe.k, np = T * k, N = c->u.moe.N, K = c->u.moe.K;
  int glu = c->u.moe.glu, act = c->u.moe.act, x_pair = c->u.moe.x_pair, has_bias = c->u.moe.scale;
  op_moe_grouping route = (op_moe_grouping)c->u.moe.mode;
  size_t rows = glu ? 2 * N : N, xr = x_pair ? np : T;
  const float alpha = 1.702f, limit = 7.0f;
  uint32_t *ids = moe_ids(T, k, E, c->u.moe.pat);
  float *x = rnd(xr * K, -1, 1), *w = malloc(E * rows * K * 4 + 4), *b = rnd(E * rows, -0.5f, 0.5f);
  /* the fused norm's weight and the kernel's routing: the reference ids and weights from the logits */
  int self_route = c->u.moe.self_route, fused = c->u.moe.fused_norm;
  float *nw = rnd(K, 0.5f, 1.5f), *lg = rnd(T * E, -3, 3), *rwant = malloc(np * 4);
  if (self_route) ref_moe_route(lg, T, E, k, self_route - 1, NULL, ids, rwant);
  gbuf gnw = gb_in(nw, K * 4), glg = gb_in(lg, T * E * 4), grw = gb_out(np * 4);
  gbuf wb[2 * MOE_MAX_PARTS];
  op_weight ow = moe_weight(c->u.moe.wt, E, rows, K, c->u.moe.parts, w, wb);
  uint32_t tm = route == OP_MOE_GROUPS ? c->u.moe.tm : OP_MOE_TILE_M;
  op_moe_lists_layout lay = op_moe_lists_layout_of((uint32_t)np, (uint32_t)E, tm);
  gbuf gx = gb_in(x, xr * K * 4), gb = gb_in(b, E * rows * 4), gy = gb_out(np * N * 4);
  gbuf gi = self_route ? gb_out(np * 4) : gb_in(ids, np * 4);
  gbuf gl = {0}, gind = {0}, gq = {0}, gqk = {0};
  int q8 = c->u.moe.q8;
  op_moe_linear_params p = {.T = (uint32_t)T,
                            .k = (uint32_t)k,
                            .E = (uint32_t)E,
                            .N = (uint32_t)N,
                            .K = (uint32_t)K,
                            .x_pair = x_pair,
                            .glu = glu,
                            .act = (op_moe_act)act,
                            .alpha = alpha,
                            .limit = limit,
                            .route = route,
                            .group_m = route == OP_MOE_GROUPS ? tm : 0,
                            .ids = gi.v};
  if (fused) {
    p.norm_w = gnw.v;
    p.eps = 1e-5f;
    p.norm_offset = 0.25f;
  }
  if (self_route) {
    p.route_logits = glg.v;
    p.route_w = grw.v;
    p.route_norm = (op_moe_norm)(self_route - 1);
  }
  if (route != OP_MOE_PAIRS) { /* the lists (and indirect arguments) the grouped routes read: not under test here */
    gl = gb_out((size_t)lay.words * 4);
    gind = gb_out(E * 12);
    gpu_recorder *ra = gpu_recorder_create(th_gpu(), 0);
    wgllm_status s = op_moe_lists(ra, gi.v, gl.v, (uint32_t)T, (uint32_t)k, (uint32_t)E, tm);
    if (!s && route == OP_MOE_PER_EXPERT)
      s = op_moe_indirect(ra, gl.v, gind.v, (uint32_t)T, (uint32_t)k, (uint32_t)E, (uint32_t)N, c->u.moe.glu);
    CHECK(s == WGLLM_OK, "%s lists: %s", g_case, gpu_recorder_error(ra));
    exec_aux(ra);
    gpu_recorder_free(ra);
    p.lists = gl.v;
    p.indirect = gind.v;
  }
  traffic(weight_bytes(c->u.moe.wt, (double)E * rows, K, 32) + 4.0 * (xr * K + np * N), 2.0 * np * rows * K);
  gpu_recorder *r = rec_new();
  wgllm_status s;
  if (q8) { /* x quantized in the same recording, then the integer-dot tiles or the pairs' GEMV */
    VERIFY(op_moe_linear_q8_supports(th_gpu(), &ow, (uint32_t)K, route), "%s: the predicate refuses it", g_case);
    gq = gb_out((size_t)op_q8_act_bytes(th_gpu(), (uint32_t)xr, (uint32_t)K));
    s = op_quantize_q8(r, gx.v, gq.v, (uint32_t)xr, (uint32_t)K);
    gpu_view xk = gq.v;
    if (route == OP_MOE_PAIRS || route == OP_MOE_GROUPS) { /* the kernel's x in the GEMV's layout (q4gsw: words
                                                              evens first); gq, the same values in order, is the
                                                              reference's */
      op_q8_rows_opts qo = {0};
      VERIFY(op_gemv_q8_supports(th_gpu(), &ow, 1, (uint32_t)K, &qo.perm), "%s: the GEMV refuses it", g_case);
      gqk = gb_out((size_t)op_q8_act_bytes(th_gpu(), (uint32_t)xr, (uint32_t)K));
      xk = gqk.v;
      if (!s) s = op_quantize_q8_rows(r, gx.v, gqk.v, (uint32_t)xr, (uint32_t)K, &qo);
    }
    if (!s) s = op_moe_linear_q8(r, xk, &ow, has_bias ? gb.v : (gpu_view){0}, gy.v, &p);
  } else
    s = op_moe_linear(r, gx.v, &ow, has_bias ? gb.v : (gpu_view){0}, gy.v, &p);
  CHECK(s == WGLLM_OK, "%s record: %s", g_case, gpu_recorder_error(r));
  exec(r, NULL);
  gpu_recorder_free(r);
  if (!g_perf && q8) { /* the reference on the activations the GPU quantized (op_quantize_q8's own test checks them) */
    const uint8_t *body = gb_fetch(&gq);
    size_t align =
        th_gpu()->limits.minStorageBufferOffsetAlignment ? th_gpu()->limits.minStorageBufferOffsetAlignment : 256;
    const int8_t *q = (const int8_t *)body;
    const float *ds = (const float *)(body + (xr * K + align - 1) / align * align);
    size_t far = 0; /* each within half a step of the original (so a quantizer gone wrong cannot hide here) */
    for (size_t i = 0; i < xr * K; i++) {
      float d = ds[2 * (i / 32)], v = (float)q[i] * d;
      if (!(fabsf(v - x[i]) <= 0.501f * d + 1e-7f)) far++;
      x[i] = v;
    }
    CHECK(far == 0, "%s: %zu quantized activations more than half a step from x", g_case, far);
  }
  if (!g_perf && self_route) { /* the kernel's routing: op_moe_route's ids exactly, its weights within rounding */
    const uint32_t *gid = gb_fetch(&gi);
    const float *gw = gb_fetch(&grw);
    size_t bad = 0;
    for (size_t q = 0; q < np; q++)
      if (gid[q] != ids[q] || !(fabsf(gw[q] - rwant[q]) <= 1e-6f + 1e-5f * fabsf(rwant[q]))) bad++;
    CHECK(bad == 0, "%s: %zu of %zu pairs routed unlike the reference", g_case, bad, np);
    gb_guards(&gi, "ids");
    gb_guards(&grw, "route_w");
  }
  if (!g_perf && fused) /* the reference on x normed first (rows of the x the pairs read) */
    ref_rms_norm(x, nw, x, K, xr, K, K, 1e-5f, 0.25f);
  if (!g_perf) {
    float *want = malloc(np * N * 4);
    double *tol = malloc(np * N * sizeof *tol);
    ref_moe_linear(x, x_pair, w, has_bias ? b : NULL, ids, T, k, E, N, K, glu, act, alpha, limit, want);
    /* each row sum within 1e-6 + 4e-6 sum |x w| (compare_linear's bound); through the GLU, |d out| <= max|act'| x
       that of the gate x |the up factor| + |act(g)| x that of the up row (max |act'| < 1.2 for all three) */
    for (size_t q = 0; q < np; q++) {
      size_t e = ids[q];
      const float *xq = x + (x_pair ? q : q / k) * K;
      for (size_t n = 0; n < N; n++) {
        const float *wg = w + (e * rows + n) * K, *wu = w + (e * rows + N + n) * K;
        double g = 0, u = 0, ag = 0, au = 0;
        for (size_t kk = 0; kk < K; kk++) {
          g += (double)xq[kk] * wg[kk];
          ag += fabs((double)xq[kk] * wg[kk]);
          if (glu) {
            u += (double)xq[kk] * wu[kk];
            au += fabs((double)xq[kk] * wu[kk]);
          }
        }
        double tg = 1e-6 + 4e-6 * ag, tu = 1e-6 + 4e-6 * au;
        if (!glu) {
          tol[q * N + n] = tg;
          continue;
        }
        if (has_bias) {
          g += b[e * rows + n];
          u += b[e * rows + N + n];
        }
        double uf = act == 2 ? fabs(u) + 1 + tu : fabs(u) + tu, af = fabs(ref_moe_act(act, g, 1.0, alpha, limit));
        if (act == 2) af = fabs(ref_moe_act(act, g, 0.0, alpha, limit));
        tol[q * N + n] = 1e-6 + 1.2 * tg * uf + (af + 1.2 * tg) * tu;
      }
    }
    cmp_bound("y", gb_fetch(&gy), want, tol, np * N);
    free(want);
    free(tol);
  }
  gb_guards(&gy, "y");
  gb_free(&gx);
  gb_free(&gb);
  gb_free(&gi);
  gb_free(&gy);
  gb_free(&gl);
  gb_free(&gind);
  gb_free(&gq);
  gb_free(&gqk);
  gb_free(&gnw);
  gb_free(&glg);
  gb_free(&grw);
  moe_weight_free(wb);
  free(ids);
  free(x);
  free(w);
  free(b);
  free(nw);
  free(lg);
  free(rwant);
  return verdict();
}

static case_result run_moe_combine(const tcase *c) {
  size_t T = c->u.moe.T, k = c->u.moe.k, D = c->u.moe.N;
  int acc = c->u.moe.glu;
  float *y = rnd(T * k * D, -2, 2), *wt = rnd(T * k, 0, 1), *res = rnd(T * D, -3, 3), *want = malloc(T * D * 4);
  double *tol = malloc(T * D * sizeof *tol);
  gbuf gy = gb_in(y, T * k * D * 4), gw = gb_in(wt, T * k * 4), go = acc ? gb_io(res, T * D * 4) : gb_out(T * D * 4);
  traffic(4.0 * (T * k * D + T * k + (acc ? 2 : 1) * T * D), 0);
  gpu_recorder *r = rec_new();
  wgllm_status s = op_moe_combine(r, gy.v, gw.v, go.v, (uint32_t)T, (uint32_t)k, (uint32_t)D, acc);
  CHECK(s == WGLLM_OK, "%s record: %s", g_case, gpu_recorder_error(r));
  exec(r, NULL);
  gpu_recorder_free(r);
  if (!g_perf) {
    memcpy(want, res, T * D * 4);
    ref_moe_combine(y, wt, want, T, k, D, acc);
    /* k + 1 f32 roundings of partial sums bounded by sum |w y| (+ |residual|) */
    for (size_t t = 0; t < T; t++)
      for (size_t n = 0; n < D; n++) {
        double m = acc ? fabs(res[t * D + n]) : 0;
        for (size_t j = 0; j < k; j++)
          m += fabs((double)wt[t * k + j] * y[(t * k + j) * D + n]);
        tol[t * D + n] = 1e-9 + (double)(k + 1) * 1.2e-7 * m;
      }
    cmp_bound("out", gb_fetch(&go), want, tol, T * D);
  }
  gb_guards(&go, "out");
  gb_free(&gy);
  gb_free(&gw);
  gb_free(&go);
  free(y);
  free(wt);
  free(res);
  free(want);
  free(tol);
  return verdict();
}

/* The down projection and the combine in one GEMV (op_moe_down_combine) against ref_moe_linear's pair rows and
   ref_moe_combine, onto a residual (glu: accumulate) or not; poisoned outputs and guard zones. The bound: each pair
   row's (compare_linear's, with the bias) times its weight, plus the combine's k + 1 roundings. */
static case_result run_moe_down_combine(const tcase *c) {
  size_t T = c->u.moe.T, E = c->u.moe.E, k = c->u.moe.k, np = T * k, N = c->u.moe.N, K = c->u.moe.K;
  int acc = c->u.moe.glu, has_bias = c->u.moe.scale;
  uint32_t *ids = moe_ids(T, k, E, c->u.moe.pat);
  float *x = rnd(np * K, -1, 1), *w = malloc(E * N * K * 4 + 4), *b = rnd(E * N, -0.5f, 0.5f);
  float *wt = rnd(np, 0, 1), *res = rnd(T * N, -3, 3);
  gbuf wb[2 * MOE_MAX_PARTS];
  op_weight ow = moe_weight(c->u.moe.wt, E, N, K, 0, w, wb);
  gbuf gx = gb_in(x, np * K * 4), gb = gb_in(b, E * N * 4), gi = gb_in(ids, np * 4), gw = gb_in(wt, np * 4);
  gbuf go = acc ? gb_io(res, T * N * 4) : gb_out(T * N * 4);
  traffic(weight_bytes(c->u.moe.wt, (double)np * N, K, 32) + 4.0 * (np * K + (acc ? 2 : 1) * T * N), 2.0 * np * N * K);
  gpu_recorder *r = rec_new();
  CHECK(op_moe_down_combine_supports(th_gpu(), &ow, (uint32_t)N, (uint32_t)K, (uint32_t)k), "%s: not taken", g_case);
  wgllm_status s = op_moe_down_combine(r, gx.v, &ow, has_bias ? gb.v : (gpu_view){0}, gi.v, gw.v, go.v, (uint32_t)T,
                                       (uint32_t)k, (uint32_t)E, (uint32_t)N, (uint32_t)K, acc);
  CHECK(s == WGLLM_OK, "%s record: %s", g_case, gpu_recorder_error(r));
  exec(r, NULL);
  gpu_recorder_free(r);
  if (!g_perf) {
    float *y = malloc(np * N * 4), *want = malloc(T * N * 4);
    double *tol = malloc(T * N * sizeof *tol);
    ref_moe_linear(x, 1, w, has_bias ? b : NULL, ids, T, k, E, N, K, 0, 0, 0, 0, y);
    memcpy(want, res, T * N * 4);
    ref_moe_combine(y, wt, want, T, k, N, acc);
    for (size_t t = 0; t < T; t++)
      for (size_t n = 0; n < N; n++) {
        double m = acc ? fabs(res[t * N + n]) : 0, row = 0;
        for (size_t j = 0; j < k; j++) {
          size_t q = t * k + j, e = ids[q] < E ? ids[q] : E - 1;
          double ax = 0;
          for (size_t kk = 0; kk < K; kk++)
            ax += fabs((double)x[q * K + kk] * w[(e * N + n) * K + kk]);
          row += wt[q] * (1e-6 + 4e-6 * ax);
          m += fabs((double)wt[q] * y[q * N + n]);
        }
        tol[t * N + n] = 1e-9 + row + (double)(k + 1) * 1.2e-7 * m;
      }
    cmp_bound("out", gb_fetch(&go), want, tol, T * N);
    free(y);
    free(want);
    free(tol);
  }
  gb_guards(&go, "out");
  gb_free(&gx);
  gb_free(&gb);
  gb_free(&gi);
  gb_free(&gw);
  gb_free(&go);
  moe_weight_free(wb);
  free(ids);
  free(x);
  free(w);
  free(b);
  free(wt);
  free(res);
  return verdict();
}

/* refusals: too many experts, k past 8 or E, a weight part that is not whole experts, a pairs grid over the device
   limit; the integer-dot tiles on a storage they do not read (f32, Q2_K) or on the pairs route, by the predicate
   and by op_moe_linear_q8 */
static case_result run_moe_refuse(const tcase *c) {
  (void)c;
  gbuf g = gb_out(1 << 20), wb[2]; /* room for every buffer of the shapes below, so only the shape is refused */
  float *deq = malloc(64 * 64 * 4);
  op_weight ow = make_weight(OP_W_F32, 64, 64, 32, deq, wb);
  gpu_view v = g.v, none = {0};
  struct {
    const char *what;
    int which;
  } cases[] = {{"E=257", 0},
               {"k=9", 1},
               {"k>E", 2},
               {"a part of 3 rows for experts of 8", 3},
               {"T*k over the grid", 4},
               {"the combined down projection over a weight in parts", 5},
               {"the combined down projection of 70000 tokens", 6},
               {"integer-dot tiles of f32 weights", 7},
               {"integer-dot tiles of Q2_K weights", 8},
               {"the integer-dot pairs' GEMV of Q2_K weights", 9},
               {"the integer-dot groups' GEMV of Q2_K weights", 10},
               {"the groups route in the exact op", 11},
               {"groups of 3 pairs", 12},
               {"lists in tiles of 0 pairs", 13}};
  /* the refusals of the groups' own guards name them (the status alone is another check's too) */
  static const char *needle[] = {[11] = "groups route", [12] = "groups of 3", [13] = "tiles of 0"};
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    gpu_recorder *r = gpu_recorder_create(th_gpu(), 0);
    wgllm_status s = WGLLM_OK;
    op_moe_linear_params p = {.T = 1, .k = 2, .E = 4, .N = 8, .K = 64, .ids = v};
    switch (cases[i].which) {
    case 0:
      s = op_moe_route(r, v, none, v, v, 1, 257, 2, OP_MOE_SOFTMAX_NORM);
      break;
    case 1:
      s = op_moe_lists(r, v, v, 1, 9, 32, OP_MOE_TILE_M);
      break;
    case 2:
      s = op_moe_route(r, v, none, v, v, 1, 4, 5, OP_MOE_TOPK_SOFTMAX);
      break;
    case 3:
      ow.n_parts = 1;
      ow.part[0] = (struct op_weight_part){.data = ow.data, .rows = 3, .type = OP_W_F32};
      s = op_moe_linear(r, v, &ow, none, v, &p);
      ow.n_parts = 0;
      break;
    case 5: /* 8 experts of 8 rows in parts of 4 experts each */
      ow.n_parts = 2;
      ow.part[0] = (struct op_weight_part){.data = ow.data, .rows = 32, .type = OP_W_F32};
      ow.part[1] = (struct op_weight_part){.data = ow.data, .rows = 32, .type = OP_W_F32};
      s = op_moe_down_combine(r, v, &ow, none, v, v, v, 1, 2, 8, 8, 64, 1);
      ow.n_parts = 0;
      break;
    case 6: /* 70000 tokens: a grid past 65535 workgroups along y */
      s = op_moe_down_combine(r, v, &ow, none, v, v, v, 70000, 1, 1, 1, 64, 0);
      break;
    case 7:
    case 8:
    case 9:
    case 10: {
      op_weight qw = ow;
      if (cases[i].which >= 8) qw.type = OP_W_Q2_K;
      p.route = cases[i].which == 9 ? OP_MOE_PAIRS : cases[i].which == 10 ? OP_MOE_GROUPS : OP_MOE_TILES;
      p.group_m = 2;
      p.lists = v;
      VERIFY(!op_moe_linear_q8_supports(th_gpu(), &qw, p.K, p.route), "%s: the predicate accepts %s", g_case,
             cases[i].what);
      s = op_moe_linear_q8(r, v, &qw, none, v, &p);
      break;
    }
    case 11:
      p.route = OP_MOE_GROUPS;
      p.group_m = 2;
      p.lists = v;
      s = op_moe_linear(r, v, &ow, none, v, &p);
      break;
    case 12: {
      gbuf qb[2];
      float *qd = malloc(4 * 8 * 64 * 4);
      op_weight qw = make_weight(OP_W_Q8, 4 * 8, 64, 32, qd, qb); /* E 4 x N 8 rows of K 64 */
      p.route = OP_MOE_GROUPS;
      p.group_m = 3;
      p.lists = v;
      VERIFY(op_moe_linear_q8_supports(th_gpu(), &qw, p.K, p.route), "%s: q8 weights refused", g_case);
      s = op_moe_linear_q8(r, v, &qw, none, v, &p);
      free_weight(qb);
      free(qd);
      break;
    }
    case 13:
      s = op_moe_lists(r, v, v, 1, 2, 8, 0);
      break;
    default:
      p.T = 70000; /* 70000 pairs: a pairs grid past 65535 workgroups along y */
      p.k = 1;
      p.N = 1;
      p.K = 1;
      s = op_moe_linear(r, v, &ow, none, v, &p);
      break;
    }
    int internal = cases[i].which == 3 || cases[i].which >= 11; /* the caller's mistakes, not the model's */
    VERIFY(s == (internal ? WGLLM_ERR_INTERNAL : WGLLM_ERR_UNSUPPORTED), "%s: %s accepted (status %d: %s)", g_case,
           cases[i].what, (int)s, gpu_recorder_error(r));
    int w = cases[i].which;
    VERIFY(w < 11 || strstr(gpu_recorder_error(r), needle[w]), "%s: %s refused for another reason: %s", g_case,
           cases[i].what, gpu_recorder_error(r));
    gpu_recorder_free(r);
  }
  free_weight(wb);
  free(deq);
  gb_free(&g);
  return verdict();
}

/* op_moe_group_m: the pairs an expert on average rounded down to a power of two, 2 to 8, none under 2, and a size the
   GEMV's layout takes on this device (with WGLLM_TEST_NO_SUBGROUPS: K's blocks bound it) */
static case_result run_moe_group_m(const tcase *c) {
  (void)c;
  static const struct {
    uint32_t np, E, want;
  } rule[] = {{16, 8, 2},  {15, 8, 0},  {31, 8, 2},   {32, 8, 4},   {64, 8, 8},    {512, 8, 8},
              {32, 32, 0}, {64, 32, 2}, {128, 32, 4}, {64, 128, 0}, {256, 128, 2}, {512, 128, 4}};
  const gpu_context *ctx = th_gpu();
  for (size_t i = 0; i < sizeof rule / sizeof rule[0]; i++) {
    uint32_t m = op_moe_group_m(ctx, 768, 2048, 1, rule[i].np, rule[i].E), want = rule[i].want;
    while (want && !op_gemv_q8_fits(ctx, 768, 2048, 1, want))
      want = want / 2 >= OP_MOE_GROUP_MIN ? want / 2 : 0;
    VERIFY(m == want, "%s: %u pairs over %u experts: groups of %u, want %u", g_case, rule[i].np, rule[i].E, m, want);
  }
  /* every size it picks runs, whatever K: down to one block of 32 a row */
  for (uint32_t K = 32; K <= 4096; K *= 2)
    for (uint32_t np = 2; np <= 512; np *= 2) {
      uint32_t m = op_moe_group_m(ctx, 64, K, 0, np, 1);
      VERIFY(!m || op_gemv_q8_fits(ctx, 64, K, 0, m), "%s: K=%u: groups of %u the GEMV does not take", g_case, K, m);
    }
  return verdict();
}

/* A whole MoE block in one recording, as a model step strings the ops (docs/MOE.md): route, (lists, indirect,)
   gate/up with the GLU, down with biases on the pairs' rows, combine into the residual; against the references
   chained the same way on the same logits. The ids must match exactly; the block's output to a relative L2 error of
   1e-5 (CONFORMANCE.md's measure; each op's own bound is checked by its cases above). */
static case_result run_moe_block(const tcase *c) {
  size_t T = c->u.moe.T, E = c->u.moe.E, k = c->u.moe.k, np = T * k, H = c->u.moe.K, I = c->u.moe.N;
  op_moe_grouping route = (op_moe_grouping)c->u.moe.mode;
  int act = c->u.moe.act;
  op_moe_norm norm = act == 2 ? OP_MOE_TOPK_SOFTMAX : OP_MOE_SOFTMAX_NORM;
  const float alpha = 1.702f, limit = 7.0f;
  float *l = rnd(T * E, -3, 3), *x = rnd(T * H, -1, 1), *res = rnd(T * H, -1, 1);
  float *wgu = malloc(E * 2 * I * H * 4 + 4), *wd = malloc(E * H * I * 4 + 4);
  float *bgu = rnd(E * 2 * I, -0.2f, 0.2f), *bd = rnd(E * H, -0.2f, 0.2f);
  gbuf wb1[2 * MOE_MAX_PARTS], wb2[2 * MOE_MAX_PARTS];
  op_weight w1 = moe_weight(c->u.moe.wt, E, 2 * I, H, 0, wgu, wb1), w2 = moe_weight(c->u.moe.wt, E, H, I, 0, wd, wb2);
  op_moe_lists_layout lay = op_moe_lists_layout_of((uint32_t)np, (uint32_t)E, OP_MOE_TILE_M);
  gbuf gl = gb_in(l, T * E * 4), gx = gb_in(x, T * H * 4), go = gb_io(res, T * H * 4), gb1 = gb_in(bgu, E * 2 * I * 4),
       gb2 = gb_in(bd, E * H * 4);
  gbuf gids = gb_out(np * 4), gw = gb_out(np * 4), glists = gb_out((size_t)lay.words * 4), gind1 = gb_out(E * 12),
       gind2 = gb_out(E * 12), gh = gb_out(np * I * 4), gy = gb_out(np * H * 4);
  gpu_recorder *r = rec_new();
  uint32_t T32 = (uint32_t)T, k32 = (uint32_t)k, E32 = (uint32_t)E;
  wgllm_status s = op_moe_route(r, gl.v, (gpu_view){0}, gids.v, gw.v, T32, E32, k32, norm);
  if (!s && route != OP_MOE_PAIRS) s = op_moe_lists(r, gids.v, glists.v, T32, k32, E32, OP_MOE_TILE_M);
  if (!s && route == OP_MOE_PER_EXPERT) s = op_moe_indirect(r, glists.v, gind1.v, T32, k32, E32, (uint32_t)I, 1);
  if (!s && route == OP_MOE_PER_EXPERT) s = op_moe_indirect(r, glists.v, gind2.v, T32, k32, E32, (uint32_t)H, 0);
  op_moe_linear_params p = {.T = T32,
                            .k = k32,
                            .E = E32,
                            .N = (uint32_t)I,
                            .K = (uint32_t)H,
                            .glu = 1,
                            .act = (op_moe_act)act,
                            .alpha = alpha,
                            .limit = limit,
                            .route = route,
                            .ids = gids.v,
                            .lists = glists.v,
                            .indirect = gind1.v};
  if (!s) s = op_moe_linear(r, gx.v, &w1, gb1.v, gh.v, &p);
  p.N = (uint32_t)H;
  p.K = (uint32_t)I;
  p.glu = 0;
  p.x_pair = 1;
  p.indirect = gind2.v;
  if (!s) s = op_moe_linear(r, gh.v, &w2, gb2.v, gy.v, &p);
  if (!s) s = op_moe_combine(r, gy.v, gw.v, go.v, T32, k32, (uint32_t)H, 1);
  CHECK(s == WGLLM_OK, "%s record: %s", g_case, gpu_recorder_error(r));
  traffic(weight_bytes(c->u.moe.wt, (double)E * 2 * I, H, 32) + weight_bytes(c->u.moe.wt, (double)E * H, I, 32), 0);
  exec(r, NULL);
  gpu_recorder_free(r);
  if (!g_perf) {
    uint32_t *ids = malloc(np * 4);
    float *wt = malloc(np * 4), *h = malloc(np * I * 4), *y = malloc(np * H * 4), *want = malloc(T * H * 4);
    ref_moe_route(l, T, E, k, (int)norm, NULL, ids, wt);
    ref_moe_linear(x, 0, wgu, bgu, ids, T, k, E, I, H, 1, act, alpha, limit, h);
    ref_moe_linear(h, 1, wd, bd, ids, T, k, E, H, I, 0, 0, alpha, limit, y);
    memcpy(want, res, T * H * 4);
    ref_moe_combine(y, wt, want, T, k, H, 1);
    const uint32_t *got_ids = gb_fetch(&gids);
    CHECK(!memcmp(got_ids, ids, np * 4), "%s: the router's ids differ", g_case);
    const float *got = gb_fetch(&go);
    double d2 = 0, r2 = 0;
    size_t nonfinite = 0;
    for (size_t i = 0; i < T * H; i++) {
      nonfinite += !isfinite(got[i]);
      d2 += ((double)got[i] - want[i]) * ((double)got[i] - want[i]);
      r2 += (double)want[i] * want[i];
    }
    CHECK(nonfinite == 0 && sqrt(d2 / r2) <= 1e-5, "%s: %zu non-finite, relative L2 error %.3g", g_case, nonfinite,
          sqrt(d2 / r2));
    free(ids);
    free(wt);
    free(h);
    free(y);
    free(want);
  }
  gb_guards(&go, "out");
  gb_guards(&gy, "y");
  gb_guards(&gh, "h");
  gbuf *all[] = {&gl, &gx, &go, &gb1, &gb2, &gids, &gw, &glists, &gind1, &gind2, &gh, &gy};
  for (size_t i = 0; i < sizeof all / sizeof all[0]; i++)
    gb_free(all[i]);
  moe_weight_free(wb1);
  moe_weight_free(wb2);
  free(l);
  free(x);
  free(res);
  free(wgu);
  free(wd);
  free(bgu);
  free(bd);
  return verdict();
}

static void cases_moe(void) {
  static const uint32_t Es[] = {8, 32, 128, 256}, ks[] = {1, 2, 4, 8};
  for (size_t ei = 0; ei < 4; ei++)
    for (size_t ki = 0; ki < 4; ki++)
      for (int mode = 0; mode < 3; mode++)
        for (int pat = 0; pat < 3; pat++) {
          int scale = mode == 1 && pat == 0; /* Gemma 4: softmax, renormalised, per-expert scale */
          for (int sc = 0; sc <= scale; sc++) {
            tcase *c = add_case("moe_route", run_moe_route, "%s%s/T=7,E=%u,k=%u/%s", MOE_NORMS[mode],
                                sc ? "+scale" : "", Es[ei], ks[ki],
                                pat == 0   ? "random"
                                : pat == 1 ? "ties"
                                           : "all-equal");
            c->u.moe = (struct moe_case){.T = 7, .E = Es[ei], .k = ks[ki], .mode = mode, .scale = sc, .pat = pat};
          }
        }
  /* expert counts that are no multiple of four (the ranking's last word partial) */
  static const uint32_t odd_E[] = {6, 61, 250};
  for (size_t ei = 0; ei < 3; ei++)
    for (int mode = 0; mode < 3; mode++)
      for (int pat = 0; pat < 3; pat++) {
        uint32_t k = ei ? 8 : 4;
        tcase *c = add_case("moe_route", run_moe_route, "%s/T=7,E=%u,k=%u/%s", MOE_NORMS[mode], odd_E[ei], k,
                            pat == 0   ? "random"
                            : pat == 1 ? "ties"
                                       : "all-equal");
        c->u.moe = (struct moe_case){.T = 7, .E = odd_E[ei], .k = k, .mode = mode, .pat = pat};
      }
  for (int mode = 0; mode < 3; mode++)
    for (uint32_t T = 1; T <= 512; T += 511)
      for (int pat = 0; pat < 2; pat++) {
        tcase *c = add_case("moe_route", run_moe_route, "%s%s/T=%u,E=128,k=8/%s", MOE_NORMS[mode],
                            mode == 1 ? "+scale" : "", T, pat ? "ties" : "random");
        c->u.moe = (struct moe_case){.T = T, .E = 128, .k = 8, .mode = mode, .scale = mode == 1, .pat = pat};
      }
  static const uint32_t ek[][2] = {{8, 1}, {8, 2}, {32, 4}, {128, 8}, {256, 8}};
  static const uint32_t Ts[] = {1, 7, 100, 512};
  for (size_t i = 0; i < 5; i++)
    for (size_t ti = 0; ti < 4; ti++)
      for (int pat = 0; pat < 3; pat++) {
        tcase *c = add_case("moe_lists", run_moe_lists, "T=%u,E=%u,k=%u/%s", Ts[ti], ek[i][0], ek[i][1], MOE_PATS[pat]);
        c->u.moe = (struct moe_case){.T = Ts[ti], .E = ek[i][0], .k = ek[i][1], .N = 100, .pat = pat};
      }
  /* batched decode's groups of 2, 4 and 8 pairs (up to 64 sessions) */
  for (uint32_t tm = 2; tm <= 8; tm *= 2)
    for (size_t i = 0; i < 5; i++)
      for (int pat = 0; pat < 3; pat++) {
        uint32_t T = i % 2 ? 64 : 8;
        tcase *c = add_case("moe_lists", run_moe_lists, "groups=%u/T=%u,E=%u,k=%u/%s", tm, T, ek[i][0], ek[i][1],
                            MOE_PATS[pat]);
        c->u.moe = (struct moe_case){.T = T, .E = ek[i][0], .k = ek[i][1], .N = 100, .pat = pat, .tm = tm};
      }
  /* the expert linear: T, k, E, N, K, glu, act, x_pair, bias, pattern; the families' shapes scaled down */
  static const struct {
    uint32_t T, k, E, N, K;
    int glu, act, x_pair, bias, pat, big;
  } lin[] = {
      {3, 2, 8, 40, 256, 1, 0, 0, 0, 0, 0},     /* gate/up, SiLU (Qwen3-MoE, Mixtral) */
      {1, 4, 32, 96, 256, 1, 2, 0, 1, 0, 0},    /* decode, gpt-oss: clamped SwiGLU, biases */
      {5, 4, 16, 72, 256, 0, 0, 1, 1, 2, 0},    /* down on the pairs' rows, biases, skewed routing */
      {9, 2, 8, 33, 256, 1, 1, 0, 0, 0, 0},     /* GELU-tanh (Gemma 4), N not a tile multiple */
      {40, 1, 8, 64, 256, 1, 0, 0, 0, 1, 0},    /* every token to one expert */
      {37, 8, 64, 48, 512, 1, 2, 0, 1, 1, 0},   /* eight experts of 64 take everything */
      {512, 8, 128, 64, 256, 1, 0, 0, 0, 0, 1}, /* a prefill chunk of Qwen3-30B-A3B's routing */
      {150, 1, 4, 200, 256, 0, 0, 1, 1, 1, 1},  /* tiles: three of one expert's (64, 64, 22 pairs), two across N */
      {140, 2, 4, 136, 256, 1, 0, 0, 0, 0, 0},  /* tiles: about two an expert, three across N with the GLU */
  };
  static const op_wtype wts[] = {OP_W_F32, OP_W_F16, OP_W_Q4, OP_W_Q8, OP_W_Q4_K, OP_W_Q6_K, OP_W_MXFP4};
  /* every other storage's two variants (the decode GEMV and the tiles) on one shape */
  static const op_wtype more[] = {OP_W_BF16, OP_W_Q4_1, OP_W_Q5_0,   OP_W_Q5_1,  OP_W_Q2_K,
                                  OP_W_Q3_K, OP_W_Q5_K, OP_W_IQ4_NL, OP_W_IQ4_XS};
  for (size_t wi = 0; wi < sizeof more / sizeof more[0]; wi++)
    for (int route = 0; route < 2; route++) {
      tcase *c = add_case("moe_linear", run_moe_linear, "%s/%s/T=3,k=2,E=8,N=40,K=256,silu,bias/random",
                          op_wtype_name(more[wi]), MOE_ROUTES[route]);
      c->u.moe = (struct moe_case){
          .T = 3, .k = 2, .E = 8, .N = 40, .K = 256, .glu = 1, .scale = 1, .mode = route, .wt = more[wi]};
    }
  /* gpt-oss's rows of 32-element blocks that are no 256 multiple (K = 2880 there; 288 here, 36 steps of 8 elements
     for both storages: the tuned layout with steps that do not divide evenly among its lanes) */
  static const op_wtype k32[] = {OP_W_Q8, OP_W_MXFP4};
  for (size_t wi = 0; wi < 2; wi++)
    for (int route = 0; route < 2; route++)
      for (int down = 0; down < 2; down++) {
        tcase *c = add_case("moe_linear", run_moe_linear, "%s/%s/T=2,k=4,E=16,N=64,K=288,%s,bias",
                            op_wtype_name(k32[wi]), MOE_ROUTES[route], down ? "plain,x=pairs" : "swiglu_oai");
        c->u.moe = (struct moe_case){.T = 2,
                                     .k = 4,
                                     .E = 16,
                                     .N = 64,
                                     .K = 288,
                                     .glu = !down,
                                     .act = 2,
                                     .x_pair = down,
                                     .scale = 1,
                                     .mode = route,
                                     .wt = k32[wi]};
      }
  /* decode's gate/up in the GEMV with the MoE norm folded in, and routing its own pairs from the router's logits
     (every normalisation; E = 40 over the general kernel's 128 threads), also over parts of mixed storages */
  static const op_wtype fw[] = {OP_W_Q4, OP_W_Q4_K, OP_W_MXFP4, OP_W_F32};
  for (size_t wi = 0; wi < 4; wi++)
    for (int sr = 0; sr <= 3; sr++) {
      tcase *c = add_case("moe_linear", run_moe_linear, "%s/pairs/T=3,k=4,E=40,N=64,K=256,swiglu_oai,bias,norm%s%s",
                          op_wtype_name(fw[wi]), sr ? ",self-routed " : "", sr ? MOE_NORMS[sr - 1] : "");
      c->u.moe = (struct moe_case){.T = 3,
                                   .k = 4,
                                   .E = 40,
                                   .N = 64,
                                   .K = 256,
                                   .glu = 1,
                                   .act = wi == 1 ? 0 : 2,
                                   .scale = 1,
                                   .mode = OP_MOE_PAIRS,
                                   .wt = fw[wi],
                                   .fused_norm = 1,
                                   .self_route = sr};
    }
  for (int sr = 1; sr <= 3; sr++) { /* self-routed over 37 experts: the ranking's last word partial */
    tcase *c = add_case("moe_linear", run_moe_linear, "Q4_K/pairs/T=3,k=4,E=37,N=64,K=256,silu,norm,self-routed %s",
                        MOE_NORMS[sr - 1]);
    c->u.moe = (struct moe_case){.T = 3,
                                 .k = 4,
                                 .E = 37,
                                 .N = 64,
                                 .K = 256,
                                 .glu = 1,
                                 .scale = 1,
                                 .mode = OP_MOE_PAIRS,
                                 .wt = OP_W_Q4_K,
                                 .fused_norm = 1,
                                 .self_route = sr};
  }
  {
    tcase *c = add_case("moe_linear", run_moe_linear,
                        "parts=3/q4gsw+q8+Q6_K/pairs/T=5,k=8,E=16,N=40,K=256,silu,norm,"
                        "self-routed softmax_norm");
    c->u.moe = (struct moe_case){.T = 5,
                                 .k = 8,
                                 .E = 16,
                                 .N = 40,
                                 .K = 256,
                                 .glu = 1,
                                 .mode = OP_MOE_PAIRS,
                                 .wt = OP_W_Q4,
                                 .parts = 3,
                                 .fused_norm = 1,
                                 .self_route = 2};
  }
  /* weights in parts of whole experts (mixed storages: the case's, then q8, then Q6_K), every route */
  for (int wi = 0; wi < 2; wi++)
    for (int route = 0; route < 3; route++)
      for (int down = 0; down < 2; down++) {
        op_wtype t = wi ? OP_W_Q4 : OP_W_F32;
        tcase *c = add_case("moe_linear", run_moe_linear, "parts=3/%s+q8+Q6_K/%s/T=5,k=4,E=16,%s", op_wtype_name(t),
                            MOE_ROUTES[route], down ? "N=72,K=256,plain,x=pairs,bias" : "N=40,K=256,swiglu_oai,bias");
        c->u.moe = (struct moe_case){.T = 5,
                                     .k = 4,
                                     .E = 16,
                                     .N = down ? 72 : 40,
                                     .K = 256,
                                     .glu = !down,
                                     .act = 2,
                                     .x_pair = down,
                                     .scale = 1,
                                     .mode = route,
                                     .wt = t,
                                     .parts = 3};
      }
  for (size_t li = 0; li < sizeof lin / sizeof lin[0]; li++)
    for (size_t wi = 0; wi < sizeof wts / sizeof wts[0]; wi++)
      for (int route = 0; route < 3; route++) {
        if (lin[li].big && wi != 0 && wi != 2) continue;
        tcase *c = add_case("moe_linear", run_moe_linear, "%s/%s/T=%u,k=%u,E=%u,N=%u,K=%u,%s%s%s/%s",
                            op_wtype_name(wts[wi]), MOE_ROUTES[route], lin[li].T, lin[li].k, lin[li].E, lin[li].N,
                            lin[li].K, lin[li].glu ? MOE_ACTS[lin[li].act] : "plain", lin[li].x_pair ? ",x=pairs" : "",
                            lin[li].bias ? ",bias" : "", MOE_PATS[lin[li].pat]);
        c->u.moe = (struct moe_case){.T = lin[li].T,
                                     .k = lin[li].k,
                                     .E = lin[li].E,
                                     .N = lin[li].N,
                                     .K = lin[li].K,
                                     .glu = lin[li].glu,
                                     .act = lin[li].act,
                                     .x_pair = lin[li].x_pair,
                                     .scale = lin[li].bias,
                                     .pat = lin[li].pat,
                                     .mode = route,
                                     .wt = wts[wi]};
      }
  /* the fast precision's integer-dot tiles (route "tiles_q8": op_quantize_q8, then op_moe_linear_q8): every storage
     they read on one shape, the tile shapes above on three, weights in parts of mixed storages, rows of 32-element
     blocks that are no 256 multiple; the storages without integer-dot tiles refused in moe_refuse */
  static const op_wtype q8w[] = {OP_W_Q4,   OP_W_Q8,   OP_W_Q4_1,   OP_W_Q5_0,   OP_W_Q5_1, OP_W_Q4_K,
                                 OP_W_Q5_K, OP_W_Q6_K, OP_W_IQ4_NL, OP_W_IQ4_XS, OP_W_MXFP4};
  for (size_t wi = 0; wi < sizeof q8w / sizeof q8w[0]; wi++) {
    tcase *c = add_case("moe_linear", run_moe_linear, "%s/tiles_q8/T=3,k=2,E=8,N=40,K=256,silu,bias/random",
                        op_wtype_name(q8w[wi]));
    c->u.moe = (struct moe_case){
        .T = 3, .k = 2, .E = 8, .N = 40, .K = 256, .glu = 1, .scale = 1, .mode = OP_MOE_TILES, .wt = q8w[wi], .q8 = 1};
  }
  static const op_wtype q8t[] = {OP_W_Q4, OP_W_Q8, OP_W_Q4_K, OP_W_Q6_K, OP_W_MXFP4};
  for (size_t li = 2; li < sizeof lin / sizeof lin[0]; li++)
    for (size_t wi = 0; wi < sizeof q8t / sizeof q8t[0]; wi++) {
      if (lin[li].big && wi != 0) continue;
      tcase *c = add_case("moe_linear", run_moe_linear, "%s/tiles_q8/T=%u,k=%u,E=%u,N=%u,K=%u,%s%s%s/%s",
                          op_wtype_name(q8t[wi]), lin[li].T, lin[li].k, lin[li].E, lin[li].N, lin[li].K,
                          lin[li].glu ? MOE_ACTS[lin[li].act] : "plain", lin[li].x_pair ? ",x=pairs" : "",
                          lin[li].bias ? ",bias" : "", MOE_PATS[lin[li].pat]);
      c->u.moe = (struct moe_case){.T = lin[li].T,
                                   .k = lin[li].k,
                                   .E = lin[li].E,
                                   .N = lin[li].N,
                                   .K = lin[li].K,
                                   .glu = lin[li].glu,
                                   .act = lin[li].act,
                                   .x_pair = lin[li].x_pair,
                                   .scale = lin[li].bias,
                                   .pat = lin[li].pat,
                                   .mode = OP_MOE_TILES,
                                   .wt = q8t[wi],
                                   .q8 = 1};
    }
  /* decode's gate/up in the fast precision (route "pairs_q8": the integer-dot GEMV a pair, op_gemv_q8_experts): every
     storage it reads on one shape; the linear shapes of a batched or one-token step (down projections too, which the
     model keeps exact) on three; a weight in parts; rows of 32-element blocks that are no 256 multiple */
  for (size_t wi = 0; wi < sizeof q8w / sizeof q8w[0]; wi++) {
    tcase *c = add_case("moe_linear", run_moe_linear, "%s/pairs_q8/T=3,k=2,E=8,N=40,K=256,silu,bias/random",
                        op_wtype_name(q8w[wi]));
    c->u.moe = (struct moe_case){
        .T = 3, .k = 2, .E = 8, .N = 40, .K = 256, .glu = 1, .scale = 1, .mode = OP_MOE_PAIRS, .wt = q8w[wi], .q8 = 1};
  }
  static const op_wtype q8p[] = {OP_W_Q4, OP_W_Q4_K, OP_W_MXFP4};
  for (size_t li = 1; li < 6; li++)
    for (size_t wi = 0; wi < sizeof q8p / sizeof q8p[0]; wi++) {
      tcase *c = add_case("moe_linear", run_moe_linear, "%s/pairs_q8/T=%u,k=%u,E=%u,N=%u,K=%u,%s%s%s/%s",
                          op_wtype_name(q8p[wi]), lin[li].T, lin[li].k, lin[li].E, lin[li].N, lin[li].K,
                          lin[li].glu ? MOE_ACTS[lin[li].act] : "plain", lin[li].x_pair ? ",x=pairs" : "",
                          lin[li].bias ? ",bias" : "", MOE_PATS[lin[li].pat]);
      c->u.moe = (struct moe_case){.T = lin[li].T,
                                   .k = lin[li].k,
                                   .E = lin[li].E,
                                   .N = lin[li].N,
                                   .K = lin[li].K,
                                   .glu = lin[li].glu,
                                   .act = lin[li].act,
                                   .x_pair = lin[li].x_pair,
                                   .scale = lin[li].bias,
                                   .pat = lin[li].pat,
                                   .mode = OP_MOE_PAIRS,
                                   .wt = q8p[wi],
                                   .q8 = 1};
    }
  for (int down = 0; down < 2; down++) {
    tcase *c = add_case("moe_linear", run_moe_linear, "parts=3/Q4_K+q8+Q6_K/pairs_q8/T=5,k=4,E=16,%s",
                        down ? "N=72,K=256,plain,x=pairs,bias" : "N=40,K=256,swiglu_oai,bias");
    c->u.moe = (struct moe_case){.T = 5,
                                 .k = 4,
                                 .E = 16,
                                 .N = down ? 72 : 40,
                                 .K = 256,
                                 .glu = !down,
                                 .act = 2,
                                 .x_pair = down,
                                 .scale = 1,
                                 .mode = OP_MOE_PAIRS,
                                 .wt = OP_W_Q4_K,
                                 .parts = 3,
                                 .q8 = 1};
    for (int wi = 0; wi < 2; wi++) {
      op_wtype t = wi ? OP_W_MXFP4 : OP_W_Q8;
      c = add_case("moe_linear", run_moe_linear, "%s/pairs_q8/T=2,k=4,E=16,N=64,K=288,%s,bias", op_wtype_name(t),
                   down ? "plain,x=pairs" : "swiglu_oai");
      c->u.moe = (struct moe_case){.T = 2,
                                   .k = 4,
                                   .E = 16,
                                   .N = 64,
                                   .K = 288,
                                   .glu = !down,
                                   .act = 2,
                                   .x_pair = down,
                                   .scale = 1,
                                   .mode = OP_MOE_PAIRS,
                                   .wt = t,
                                   .q8 = 1};
    }
  }
  /* batched decode's groups in the fast precision (route "groups_q8": the integer-dot GEMV a group of up to tm pairs
     of one expert, op_moe_lists in groups of tm): every storage it reads on one shape; each group size on a batch of
     Mixtral's routing, a down projection with skewed routing, gpt-oss's activation and biases, 64 sessions of
     Qwen3-MoE's routing and every token to one expert (full groups), on three storages; weights in parts of mixed
     storages; rows of 32-element blocks that are no 256 multiple */
  for (size_t wi = 0; wi < sizeof q8w / sizeof q8w[0]; wi++) {
    tcase *c = add_case("moe_linear", run_moe_linear, "%s/groups_q8=4/T=8,k=2,E=4,N=40,K=256,silu,bias/random",
                        op_wtype_name(q8w[wi]));
    c->u.moe = (struct moe_case){.T = 8,
                                 .k = 2,
                                 .E = 4,
                                 .N = 40,
                                 .K = 256,
                                 .glu = 1,
                                 .scale = 1,
                                 .mode = OP_MOE_GROUPS,
                                 .wt = q8w[wi],
                                 .q8 = 1,
                                 .tm = 4};
  }
  static const struct {
    uint32_t T, k, E, N, K;
    int glu, act, x_pair, bias, pat;
  } grp[] = {
      {8, 2, 8, 40, 256, 1, 0, 0, 0, 0},    /* Mixtral's 8 sessions */
      {16, 4, 16, 72, 256, 0, 0, 1, 1, 2},  /* down on the pairs' rows, skewed */
      {32, 4, 32, 96, 256, 1, 2, 0, 1, 0},  /* gpt-oss's 32 sessions */
      {64, 8, 128, 48, 256, 1, 0, 0, 0, 0}, /* Qwen3-MoE's 64 sessions */
      {40, 1, 8, 64, 256, 1, 1, 0, 0, 1},   /* every token to one expert */
  };
  for (uint32_t tm = 2; tm <= 8; tm *= 2)
    for (size_t gi = 0; gi < sizeof grp / sizeof grp[0]; gi++)
      for (size_t wi = 0; wi < sizeof q8p / sizeof q8p[0]; wi++) {
        tcase *c = add_case("moe_linear", run_moe_linear, "%s/groups_q8=%u/T=%u,k=%u,E=%u,N=%u,K=%u,%s%s%s/%s",
                            op_wtype_name(q8p[wi]), tm, grp[gi].T, grp[gi].k, grp[gi].E, grp[gi].N, grp[gi].K,
                            grp[gi].glu ? MOE_ACTS[grp[gi].act] : "plain", grp[gi].x_pair ? ",x=pairs" : "",
                            grp[gi].bias ? ",bias" : "", MOE_PATS[grp[gi].pat]);
        c->u.moe = (struct moe_case){.T = grp[gi].T,
                                     .k = grp[gi].k,
                                     .E = grp[gi].E,
                                     .N = grp[gi].N,
                                     .K = grp[gi].K,
                                     .glu = grp[gi].glu,
                                     .act = grp[gi].act,
                                     .x_pair = grp[gi].x_pair,
                                     .scale = grp[gi].bias,
                                     .pat = grp[gi].pat,
                                     .mode = OP_MOE_GROUPS,
                                     .wt = q8p[wi],
                                     .q8 = 1,
                                     .tm = tm};
      }
  for (int down = 0; down < 2; down++) {
    tcase *c = add_case("moe_linear", run_moe_linear, "parts=3/Q4_K+q8+Q6_K/groups_q8=4/T=8,k=4,E=16,%s",
                        down ? "N=72,K=256,plain,x=pairs,bias" : "N=40,K=256,swiglu_oai,bias");
    c->u.moe = (struct moe_case){.T = 8,
                                 .k = 4,
                                 .E = 16,
                                 .N = down ? 72 : 40,
                                 .K = 256,
                                 .glu = !down,
                                 .act = 2,
                                 .x_pair = down,
                                 .scale = 1,
                                 .mode = OP_MOE_GROUPS,
                                 .wt = OP_W_Q4_K,
                                 .parts = 3,
                                 .q8 = 1,
                                 .tm = 4};
    for (int wi = 0; wi < 2; wi++) {
      op_wtype t = wi ? OP_W_MXFP4 : OP_W_Q8;
      c = add_case("moe_linear", run_moe_linear, "%s/groups_q8=2/T=6,k=4,E=8,N=64,K=288,%s,bias", op_wtype_name(t),
                   down ? "plain,x=pairs" : "swiglu_oai");
      c->u.moe = (struct moe_case){.T = 6,
                                   .k = 4,
                                   .E = 8,
                                   .N = 64,
                                   .K = 288,
                                   .glu = !down,
                                   .act = 2,
                                   .x_pair = down,
                                   .scale = 1,
                                   .mode = OP_MOE_GROUPS,
                                   .wt = t,
                                   .q8 = 1,
                                   .tm = 2};
    }
  }
  for (int down = 0; down < 2; down++) {
    tcase *c = add_case("moe_linear", run_moe_linear, "parts=3/q4gsw+q8+Q6_K/tiles_q8/T=5,k=4,E=16,%s",
                        down ? "N=72,K=256,plain,x=pairs,bias" : "N=40,K=256,swiglu_oai,bias");
    c->u.moe = (struct moe_case){.T = 5,
                                 .k = 4,
                                 .E = 16,
                                 .N = down ? 72 : 40,
                                 .K = 256,
                                 .glu = !down,
                                 .act = 2,
                                 .x_pair = down,
                                 .scale = 1,
                                 .mode = OP_MOE_TILES,
                                 .wt = OP_W_Q4,
                                 .parts = 3,
                                 .q8 = 1};
    for (int wi = 0; wi < 2; wi++) { /* 9 blocks a row: K of 32-blocks no multiple of 256 */
      op_wtype t = wi ? OP_W_MXFP4 : OP_W_Q8;
      c = add_case("moe_linear", run_moe_linear, "%s/tiles_q8/T=2,k=4,E=16,N=64,K=288,%s,bias", op_wtype_name(t),
                   down ? "plain,x=pairs" : "swiglu_oai");
      c->u.moe = (struct moe_case){.T = 2,
                                   .k = 4,
                                   .E = 16,
                                   .N = 64,
                                   .K = 288,
                                   .glu = !down,
                                   .act = 2,
                                   .x_pair = down,
                                   .scale = 1,
                                   .mode = OP_MOE_TILES,
                                   .wt = t,
                                   .q8 = 1};
    }
  }
  /* the down projection with the combine: every storage the GEMV reads; one token (decode) and a batch, k 1 to 8,
     biases, a residual or none, the routing patterns */
  static const struct {
    uint32_t T, k, E, N, K;
    int bias, acc, pat;
  } dcs[] = {
      {1, 8, 16, 72, 256, 0, 1, 0}, /* Qwen3-MoE's decode, scaled down */
      {1, 4, 32, 96, 512, 1, 1, 0}, /* gpt-oss: biases */
      {5, 2, 8, 40, 768, 0, 0, 2},  /* a batch, K of 24 32-element steps, no residual */
      {3, 1, 4, 130, 256, 1, 1, 1}, /* one expert a token, rows past a workgroup's */
  };
  static const op_wtype dcw[] = {OP_W_F32, OP_W_Q4, OP_W_Q8, OP_W_Q4_K, OP_W_Q5_K, OP_W_Q6_K, OP_W_MXFP4};
  for (size_t di = 0; di < sizeof dcs / sizeof dcs[0]; di++)
    for (size_t wi = 0; wi < sizeof dcw / sizeof dcw[0]; wi++) {
      tcase *c = add_case("moe_down_combine", run_moe_down_combine, "%s/T=%u,k=%u,E=%u,N=%u,K=%u%s%s/%s",
                          op_wtype_name(dcw[wi]), dcs[di].T, dcs[di].k, dcs[di].E, dcs[di].N, dcs[di].K,
                          dcs[di].bias ? ",bias" : "", dcs[di].acc ? ",residual" : "", MOE_PATS[dcs[di].pat]);
      c->u.moe = (struct moe_case){.T = dcs[di].T,
                                   .k = dcs[di].k,
                                   .E = dcs[di].E,
                                   .N = dcs[di].N,
                                   .K = dcs[di].K,
                                   .glu = dcs[di].acc,
                                   .scale = dcs[di].bias,
                                   .pat = dcs[di].pat,
                                   .wt = dcw[wi]};
    }
  static const uint32_t cT[] = {1, 5, 512}, ck[] = {1, 2, 8}, cD[] = {7, 2880};
  for (size_t ti = 0; ti < 3; ti++)
    for (size_t ki = 0; ki < 3; ki++)
      for (size_t di = 0; di < 2; di++)
        for (int acc = 0; acc < 2; acc++) {
          tcase *c = add_case("moe_combine", run_moe_combine, "T=%u,k=%u,D=%u%s", cT[ti], ck[ki], cD[di],
                              acc ? ",residual" : "");
          c->u.moe = (struct moe_case){.T = cT[ti], .k = ck[ki], .N = cD[di], .glu = acc};
        }
  add_case("moe_refuse", run_moe_refuse, "shapes");
  add_case("moe_group_m", run_moe_group_m, "rule");
  /* perf_moe/...: the families' real shapes for --perf on a real GPU (test_ops --perf -f perf_moe; named apart from -f
     moe_); like gemm_perf, left out of a run without filters (their references take minutes). Qwen3-30B-A3B: H 2048, I
     768, E 128, k 8; gpt-oss-20b: H 2880, I 2880, E 32, k 4; a decode step (T 1) and a prefill chunk (T 512). */
  static const struct {
    const char *name;
    uint32_t k, E, I, H;
    int act;
  } fam[] = {{"qwen3-30b-a3b", 8, 128, 768, 2048, 0}, {"gpt-oss-20b", 4, 32, 2880, 2880, 2}};
  for (size_t fi = 0; fi < 2; fi++)
    for (uint32_t T = 1; T <= 512; T += 511)
      for (int route = 0; route < 3; route++) {
        static const op_wtype pw[] = {OP_W_Q4, OP_W_Q4_K};
        for (size_t wi = 0; wi < 2; wi++) {
          if (fam[fi].H % 256 && pw[wi] == OP_W_Q4_K) continue;
          tcase *c = add_case("perf_moe", run_moe_block, "block/%s/%s/%s/T=%u", fam[fi].name, op_wtype_name(pw[wi]),
                              MOE_ROUTES[route], T);
          c->u.moe = (struct moe_case){.T = T,
                                       .k = fam[fi].k,
                                       .E = fam[fi].E,
                                       .N = fam[fi].I,
                                       .K = fam[fi].H,
                                       .mode = route,
                                       .act = fam[fi].act,
                                       .wt = pw[wi]};
          c = add_case("perf_moe", run_moe_linear, "gate_up/%s/%s/%s/T=%u", fam[fi].name, op_wtype_name(pw[wi]),
                       MOE_ROUTES[route], T);
          c->u.moe = (struct moe_case){.T = T,
                                       .k = fam[fi].k,
                                       .E = fam[fi].E,
                                       .N = fam[fi].I,
                                       .K = fam[fi].H,
                                       .mode = route,
                                       .glu = 1,
                                       .act = fam[fi].act,
                                       .wt = pw[wi]};
          if (route != OP_MOE_TILES) continue;
          /* the fast precision's integer-dot tiles on the same shape */
          c = add_case("perf_moe", run_moe_linear, "gate_up/%s/%s/tiles_q8/T=%u", fam[fi].name, op_wtype_name(pw[wi]),
                       T);
          c->u.moe = (struct moe_case){.T = T,
                                       .k = fam[fi].k,
                                       .E = fam[fi].E,
                                       .N = fam[fi].I,
                                       .K = fam[fi].H,
                                       .mode = route,
                                       .glu = 1,
                                       .act = fam[fi].act,
                                       .wt = pw[wi],
                                       .q8 = 1};
        }
      }
  /* whole blocks: T, k, E, I (the experts' width), H; SiLU with Qwen3-MoE's routing, gpt-oss's SwiGLU with its own */
  static const uint32_t blk[][5] = {{1, 8, 64, 256, 256}, {3, 4, 16, 256, 512}, {100, 8, 32, 256, 256}};
  static const op_wtype bwt[] = {OP_W_F32, OP_W_Q4, OP_W_Q4_K};
  for (size_t bi = 0; bi < 3; bi++)
    for (size_t wi = 0; wi < 3; wi++)
      for (int route = 0; route < 3; route++)
        for (int act = 0; act <= 2; act += 2) {
          tcase *c =
              add_case("moe_block", run_moe_block, "%s/%s/%s/T=%u,k=%u,E=%u,I=%u,H=%u", op_wtype_name(bwt[wi]),
                       MOE_ROUTES[route], MOE_ACTS[act], blk[bi][0], blk[bi][1], blk[bi][2], blk[bi][3], blk[bi][4]);
          c->u.moe = (struct moe_case){.T = blk[bi][0],
                                       .k = blk[bi][1],
                                       .E = blk[bi][2],
                                       .N = blk[bi][3],
                                       .K = blk[bi][4],
                                       .mode = route,
                                       .act = act,
                                       .wt = bwt[wi]};
        }
}

/* ---------------------------------------------------------------- driver */

static void build_cases(void) {
  cases_fill();
  cases_step_ids();
  cases_spec();
  cases_logit_filter();
  cases_pool();
  cases_binary();
  cases_rms_norm();
  cases_rope();
  cases_softmax_argmax();
  cases_linear();
  cases_linear_parts();
  cases_linear_q8();
  cases_linear_mma();
  cases_gemm_f16();
  cases_dequant_f16();
  cases_gemm_perf();
  cases_gemv_q8();
  cases_embedding();
  cases_glu();
  cases_moe();
  cases_attention();
  cases_attention_mma();
  cases_attention_ring();
  cases_flash_decode();
  cases_gemv();
  cases_flash_decode_rope();
  cases_paged_decode();
  cases_paged_prefill();
  cases_rope_kv();
  cases_hostile();
}

static void usage(FILE *f) {
  fprintf(f, "usage: test_ops [-f|--filter SUBSTRING]... [--list] [--perf] [-v]\n"
             "  -f, --filter S  run only cases whose name contains S (repeat for any of several); without one, every\n"
             "                  case but the model-sized gemm_perf/ and perf_moe/ ones\n"
             "  --list          print the selected case names and exit\n"
             "  --perf          time each selected case's GPU run (no comparisons)\n"
             "  -v              print every case's result\n");
}

int main(int argc, char **argv) {
  const char *filters[64];
  int nf = 0, list = 0;
  for (int i = 1; i < argc; i++) {
    if ((!strcmp(argv[i], "-f") || !strcmp(argv[i], "--filter")) && i + 1 < argc && nf < 64)
      filters[nf++] = argv[++i];
    else if (!strncmp(argv[i], "--filter=", 9) && nf < 64)
      filters[nf++] = argv[i] + 9;
    else if (!strcmp(argv[i], "--list"))
      list = 1;
    else if (!strcmp(argv[i], "--perf"))
      g_perf = 1;
    else if (!strcmp(argv[i], "-v") || !strcmp(argv[i], "--verbose"))
      g_verbose = 1;
    else if (!strcmp(argv[i], "-h") || !strcmp(argv[i], "--help")) {
      usage(stdout);
      return 0;
    } else {
      fprintf(stderr, "test_ops: unknown argument '%s'\n", argv[i]);
      usage(stderr);
      return 2;
    }
  }
  build_cases();
  char *sel = calloc(g_ncases, 1);
  size_t nsel = 0;
  for (size_t i = 0; i < g_ncases; i++) {
    /* the gemm_perf and perf_moe cases (model-sized, CPU references of minutes) run only when a filter names them */
    int ok =
        nf == 0 && strncmp(g_cases[i].name, "gemm_perf/", 10) != 0 && strncmp(g_cases[i].name, "perf_moe/", 9) != 0;
    for (int j = 0; j < nf && !ok; j++)
      ok = strstr(g_cases[i].name, filters[j]) != NULL;
    sel[i] = (char)ok;
    nsel += ok;
  }
  if (list) {
    for (size_t i = 0; i < g_ncases; i++)
      if (sel[i]) printf("%s\n", g_cases[i].name);
    return 0;
  }
  if (!nsel) {
    fprintf(stderr, "test_ops: no case matches the filter (--list shows the names)\n");
    return 2;
  }
  th_gpu();
  int passed = 0, failed = 0, unsupported = 0;
  for (size_t i = 0; i < g_ncases; i++) {
    if (!sel[i]) continue;
    const tcase *c = &g_cases[i];
    g_case = c->name;
    g_ns[0] = 0;
    traffic(0, 0);
    reseed(c->name);
    g_fail0 = th_failures;
    case_result res = c->run(c);
    if (res == CASE_FAIL || th_failures != g_fail0) { /* a failed check fails the case whatever it returned */
      failed++;
      printf("FAIL          %s\n", c->name);
    } else if (res == CASE_NOT_SUPPORTED) {
      unsupported++;
      printf("NOT SUPPORTED %s: %s\n", c->name, g_ns);
    } else {
      passed++;
      if (g_verbose) printf("%s %s\n", g_perf ? "RAN          " : "PASS         ", c->name);
    }
    fflush(stdout);
  }
  fd_free();
  g_case = "";
  if (g_perf)
    printf("test_ops: %zu of %zu cases timed, nothing compared: %d ran, %d failed to run, %d not supported\n", nsel,
           g_ncases, passed, failed, unsupported);
  else
    printf("test_ops: %zu of %zu cases: %d passed, %d failed, %d not supported\n", nsel, g_ncases, passed, failed,
           unsupported);
  th_gpu_done();
  free(sel);
  free(g_cases);
  int rc = th_finish("test_ops");
  return failed || rc ? 1 : 0;
}
