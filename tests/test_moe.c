/* Qwen3-MoE (issue 31) on models made at test time from the dense qwen3 fixture by tests/tools/make_moe_fixture.py
   (stdlib Python): with every expert a copy of the layer's dense MLP and the top-k weights renormalised, the MoE
   model computes the dense one, so the qwen3 fixture's transformers logits hold, in each form the experts come in
   (a tensor an expert, transformers 5's 3-D, GGUF stacked), with native weights, --weights q4 (against the dense
   model's own q4 run) and --kv f16; with random experts the prompt's pass (experts in tiles) and the decode step (by
   pair) agree on the same token, a batched decode of two sessions gives each its own tokens, mlp_only_layers and
   decoder_sparse_step pick the sparse layers; bad configs and tensors are refused naming the field or tensor. And a
   Mixtral made from the bundled model (its tokenizer, Mistral's template) through run, chat and serve. */
#include "batch.h"
#include "harness.h"
#include "model.h"
#include "session.h"
#include <cjson/cJSON.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static char g_bin[512], g_tmp[256], g_prompt[512], g_decode[256];
static int g_T, g_N, g_V = 320;

static int sh(const char *cmd) {
  int rc = system(cmd);
  return WIFEXITED(rc) ? WEXITSTATUS(rc) : 128;
}

/* A model under g_tmp/name from the qwen3 fixture with make_moe_fixture.py's args; returns its path (GGUF: the
   file) in out. */
static int make_model(const char *name, const char *args, char *out, size_t len) {
  char cmd[1200];
  snprintf(cmd, sizeof cmd, "python3 tools/make_moe_fixture.py data/models/qwen3 %s/%s %s", g_tmp, name, args);
  int rc = sh(cmd);
  CHECK(rc == 0, "make_moe_fixture.py %s failed (%d)", args, rc);
  snprintf(out, len, "%s/%s%s", g_tmp, name, strstr(args, "--form gguf") ? "/model.gguf" : "");
  return rc == 0;
}

static int run_cli(const char *args) {
  char cmd[4096];
  snprintf(cmd, sizeof cmd, "%s/wgllm %s 2>%s/stderr.txt", g_bin, args, g_tmp);
  return sh(cmd);
}

static char *last_stderr(void) {
  char p[300];
  snprintf(p, sizeof p, "%s/stderr.txt", g_tmp);
  char *s = th_read_file(p, NULL);
  return s ? s : calloc(1, 1);
}

/* `wgllm logits` of a model: the prompt ids, then the decode ids; rows into *rows (caller frees); 0 on failure */
static int logits(const char *model, const char *prompt, const char *decode, const char *extra, float **rows,
                  int *n_rows) {
  char args[3000], out[300];
  snprintf(out, sizeof out, "%s/out.f32", g_tmp);
  unlink(out);
  snprintf(args, sizeof args, "logits -m %s --prompt-ids %s %s%s -o %s %s", model, prompt,
           decode ? "--decode-ids " : "", decode ? decode : "", out, extra);
  int rc = run_cli(args);
  if (rc) {
    char *e = last_stderr();
    CHECK(0, "wgllm %s failed (%d): %s", args, rc, e);
    free(e);
    return 0;
  }
  size_t len;
  *rows = th_read_file(out, &len);
  *n_rows = (int)(len / (g_V * 4));
  return *rows != NULL;
}

/* relative L2 error of row b against row a */
static double row_err(const float *a, const float *b) {
  double num = 0, den = 0;
  for (int i = 0; i < g_V; i++) {
    if (!isfinite(b[i])) return INFINITY;
    num += ((double)a[i] - b[i]) * ((double)a[i] - b[i]);
    den += (double)a[i] * a[i];
  }
  return sqrt(num / den);
}

/* worst row error of a against b over n rows, and rows whose top-1 differs where a's margin is at least 0.05 */
static double worst_err(const float *a, const float *b, int n, int *top1_bad) {
  double w = 0;
  *top1_bad = 0;
  for (int r = 0; r < n; r++) {
    const float *x = a + (size_t)r * g_V, *y = b + (size_t)r * g_V;
    double e = row_err(x, y);
    if (!(e <= w)) w = e;
    int ia = 0, ib = 0, second = -1;
    for (int i = 0; i < g_V; i++) {
      if (x[i] > x[ia]) ia = i;
      if (y[i] > y[ib]) ib = i;
    }
    for (int i = 0; i < g_V; i++)
      if (i != ia && (second < 0 || x[i] > x[second])) second = i;
    if (x[ia] - x[second] >= 0.05 && ia != ib) (*top1_bad)++;
  }
  return w;
}

static float *g_ref; /* [T+N][V] the qwen3 fixture's transformers logits */

/* The MoE model's logits against the dense fixture's reference (prompt rows from the prefill, decode rows from the
   recorded step; top-1 where the bound is tight), and against `dense` (the dense model's run with the same options)
   when given. */
static void conformance(const char *what, const char *model, const char *extra, double bound, const float *dense,
                        double dense_bound) {
  float *got;
  int n;
  if (!logits(model, g_prompt, g_decode, extra, &got, &n)) return;
  CHECK(n == g_T + g_N, "%s %s: %d rows of logits, want %d", what, extra, n, g_T + g_N);
  int tb;
  double e = worst_err(g_ref, got, g_T + g_N, &tb);
  printf("  %-26s %-18s vs transformers: worst row rel L2 %.3g (bound %.2g)", what, extra[0] ? extra : "native", e,
         bound);
  CHECK(e <= bound, "%s %s: worst row relative L2 error %.3g > %.2g", what, extra, e, bound);
  if (bound <= 2e-3) CHECK(tb == 0, "%s %s: top-1 differs on %d rows with margin >= 0.05", what, extra, tb);
  if (dense) {
    double d = worst_err(dense, got, g_T + g_N, &tb);
    printf("; vs the dense model %.3g (bound %.2g)", d, dense_bound);
    CHECK(d <= dense_bound, "%s %s: differs from the dense model's run by %.3g > %.2g", what, extra, d, dense_bound);
  }
  printf("\n");
  free(got);
}

/* Whether `wgllm info --gpu` lists subgroup matrices among the device's features */
static int device_has_subgroup_matrix(void) {
  char cmd[1200], path[300];
  snprintf(path, sizeof path, "%s/gpu.txt", g_tmp);
  snprintf(cmd, sizeof cmd, "%s/wgllm info --gpu > %s 2>&1", g_bin, path);
  if (sh(cmd)) return 0;
  char *t = th_read_file(path, NULL), *f = t ? strstr(t, "features:") : NULL, *e = f ? strchr(f, '\n') : NULL;
  if (e) *e = 0;
  int yes = f && strstr(f, "subgroup-matrix") != NULL;
  free(t);
  return yes;
}

/* The prompt's rows of the MoE model against the dense model's, both run with extra: for the fast precision, whose
   experts' tiles quantize each pair's row (the dense MLP's row, every expert a copy of it) to the int8 blocks the
   dense MLP's GEMM takes, so the two differ by the summation order and the top-k weights' sum only. Not where the
   device has subgroup matrices: there the dense prompt's layers of 9 to 255 rows take the tensor cores on f16
   operands (op_linear_fast), the experts still int8. */
static void prompt_like_dense(const char *what, const char *model, const char *extra, double bound) {
  if (device_has_subgroup_matrix()) {
    printf("  %-26s %-18s prompt rows vs the dense model's: not compared (subgroup matrices: the dense MLP's GEMM "
           "takes f16 operands)\n",
           what, extra);
    return;
  }
  float *dense = NULL, *got = NULL;
  int nd = 0, n = 0, tb;
  if (logits("data/models/qwen3", g_prompt, NULL, extra, &dense, &nd) &&
      logits(model, g_prompt, NULL, extra, &got, &n)) {
    CHECK(n == g_T && nd == g_T, "%s %s: %d and %d prompt rows, want %d", what, extra, n, nd, g_T);
    double d = worst_err(dense, got, g_T, &tb);
    printf("  %-26s %-18s prompt rows vs the dense model's: worst row rel L2 %.3g (bound %.2g)\n", what, extra, d,
           bound);
    CHECK(d <= bound, "%s %s: the prompt's rows differ from the dense model's by %.3g > %.2g", what, extra, d, bound);
  }
  free(dense);
  free(got);
}

static void identical_experts(void) {
  printf("identical experts equal the dense qwen3 (the fixture's transformers logits):\n");
  float *dense_q4 = NULL, *dense_f16 = NULL;
  int n;
  if (!logits("data/models/qwen3", g_prompt, g_decode, "--weights q4", &dense_q4, &n)) return;
  if (!logits("data/models/qwen3", g_prompt, g_decode, "--kv f16", &dense_f16, &n)) return;
  static const char *const forms[3] = {"each", "3d", "gguf"};
  for (int i = 0; i < 3; i++) {
    char name[64], args[256], model[400], what[64];
    snprintf(name, sizeof name, "same_%s", forms[i]);
    /* 4 experts, top 2 (each its share of the dense MLP's output) */
    snprintf(args, sizeof args, "--form %s --identical --experts 4 --k 2 --seed %d", forms[i], 3 + i);
    if (!make_model(name, args, model, sizeof model)) continue;
    snprintf(what, sizeof what, "qwen3_moe %s", forms[i]);
    conformance(what, model, "", 1e-3, NULL, 0);
    /* the same q4gsw values as the dense model's (the experts are its rows): its run, to the summation order */
    conformance(what, model, "--weights q4", 0.9, dense_q4, 1e-4);
    conformance(what, model, "--kv f16", 1e-2, dense_f16, 1e-4);
    if (i == 0) {
      conformance(what, model, "--prefill-chunk 7", 1e-3, NULL, 0);
      conformance(what, model, "--weights q4 --unfused", 0.9, dense_q4, 1e-4);
      /* the fast precision: the attention's projections, the prompt's experts (their integer-dot tiles,
         op_moe_linear_q8) and decode's gate/up (the pairs' integer-dot GEMV) on int8 activations, decode's down
         projection exact: against the exact q4 run, the measured 0.0235 (lavapipe, before decode's gate/up took int8
         and after) with a quarter of margin */
      conformance(what, model, "--weights q4 --precision fast", 0.9, dense_q4, 0.03);
      prompt_like_dense(what, model, "--weights q4 --precision fast", 1e-5); /* measured 3.1e-7 */
    }
    /* the experts over a (simulated) small binding limit: parts of whole experts (gate/up one expert a part, down
       three), a dispatch a part; q4gsw: one expert's gate/up a part */
    conformance(what, model, "--ctx 64 --max-binding 262144", 1e-3, NULL, 0);
    conformance(what, model, "--weights q4 --ctx 64 --max-binding 32768", 0.9, dense_q4, 1e-4);
  }
  /* a qwen3moe GGUF without feed_forward_length (no dense layer needs it) */
  char model[400];
  if (make_model("same_gguf_noff", "--form gguf --identical --drop-key qwen3moe.feed_forward_length", model,
                 sizeof model))
    conformance("qwen3_moe gguf, no ffn length", model, "", 2e-3, NULL, 0);
  free(dense_q4);
  free(dense_f16);
}

/* The prompt's pass (experts in tiles) against the decode step (experts by pair) on one token: the logits of the
   prompt's last row, and those of the same token fed as a decode step after the rest of the prompt. */
static void routes_agree(const char *what, const char *model, const char *extra) {
  char head[512];
  snprintf(head, sizeof head, "%s", g_prompt);
  char *last = strrchr(head, ',');
  *last = 0;
  float *a = NULL, *b = NULL;
  int na, nb;
  if (!logits(model, g_prompt, NULL, extra, &a, &na) || !logits(model, head, last + 1, extra, &b, &nb)) {
    free(a);
    return;
  }
  CHECK(na == g_T && nb == g_T, "%s: %d and %d rows", what, na, nb);
  double e = row_err(a + (size_t)(g_T - 1) * g_V, b + (size_t)(g_T - 1) * g_V);
  /* and the MoE matters: the random experts move the logits far from the dense model's */
  double moved = row_err(g_ref + (size_t)(g_T - 1) * g_V, a + (size_t)(g_T - 1) * g_V);
  printf("  %-26s %-18s prefill vs decode on the last token: %.3g (bound 1e-5); vs dense %.3g\n", what,
         extra[0] ? extra : "native", e, moved);
  CHECK(e <= 1e-5, "%s %s: the prompt's last row and the decode step differ by %.3g", what, extra, e);
  CHECK(moved > 0.05, "%s: random experts moved the logits by only %.3g from the dense model's", what, moved);
  free(a);
  free(b);
}

/* model loaded with the weight policy (NULL: native), or NULL (the failure checked) */
static llm_model *load_with(const char *what, const char *model, const char *policy) {
  llm_err err = {0};
  llm_load_options lo = {0};
  if (policy) CHECK(llm_parse_weight_policy(policy, &lo.weights, &err) == WGLLM_OK, "%s", err.msg);
  llm_model *m = NULL;
  wgllm_status st = llm_model_load(th_gpu(), model, &lo, &m, &err);
  CHECK(st == WGLLM_OK, "%s: load: %s", what, err.msg);
  return st ? NULL : m;
}

/* Two sessions prefilled together (llm_prefill_batch: the experts in tiles over both prompts' rows) and decoded
   together (llm_batch_step: the MoE block by pair over both rows) give each the tokens it gets alone (sampled at
   temperature 0.9 with a seed and a repetition penalty, so any change of its logits shows). */
static void batched(const char *what, const char *model, const char *policy) {
  llm_err err = {0};
  llm_model *m = load_with(what, model, policy);
  if (!m) return;
  wgllm_status st = WGLLM_OK;
  enum { NS = 2, G = 12 };
  llm_session *ss[NS] = {0};
  int32_t prompt[NS][10], want[NS][G + 1], got[NS][G + 1];
  llm_session_options so = {.ctx = 128};
  llm_batch *b = NULL;
  st = llm_batch_create(m, &b, &err);
  CHECK(st == WGLLM_OK, "%s batch: %s", what, err.msg);
  op_sample_params sp[NS];
  for (int i = 0; !st && i < NS; i++) {
    for (int k = 0; k < 10; k++)
      prompt[i][k] = (int32_t)((k * 37 + i * 101 + 5) % m->hp.n_vocab);
    sp[i] = (op_sample_params){
        .temperature = 0.9f, .top_p = 0.95f, .rep_penalty = 1.2f, .ring_cap = 32, .seed = 11u + (uint32_t)i};
    st = llm_session_create(m, &so, &ss[i], &err);
    CHECK(st == WGLLM_OK, "%s session: %s", what, err.msg);
  }
  for (int pass = 0; pass < 2 && !st; pass++) { /* alone, then together */
    int32_t(*out)[G + 1] = pass ? got : want;
    for (int i = 0; !st && i < NS; i++) {
      llm_session_reset(ss[i]);
      st = llm_session_set_sampler(ss[i], &sp[i], prompt[i], 10);
      if (!st && !pass) st = llm_session_prefill_sample(ss[i], prompt[i], 10, &out[i][0]);
      for (int g = 1; !pass && !st && g <= G; g++)
        st = llm_session_step_sample(ss[i], &out[i][g]);
      CHECK(st == WGLLM_OK, "%s alone %d: %s", what, i, ss[i]->err.msg);
    }
    if (pass && !st) { /* the prompts in one batched prefill pass (the experts in tiles over both sessions' rows) */
      const int32_t *ids[NS] = {prompt[0], prompt[1]};
      uint32_t counts[NS] = {10, 10};
      int sample[NS] = {1, 1};
      int32_t first[NS];
      st = llm_prefill_batch(ss, ids, counts, NS, sample, first, &err);
      CHECK(st == WGLLM_OK, "%s batched prefill: %s", what, err.msg);
      for (int i = 0; i < NS; i++)
        out[i][0] = first[i];
    }
    for (int g = 1; pass && !st && g <= G; g++) {
      int32_t tok[NS];
      st = llm_batch_step(b, ss, NS, tok);
      CHECK(st == WGLLM_OK, "%s batch step %d: %s", what, g, b->err.msg);
      for (int i = 0; i < NS; i++)
        out[i][g] = tok[i];
    }
  }
  int same = !st && !memcmp(want, got, sizeof want);
  printf("  %-26s %-18s 2 sessions batched (prefill, decode): %s\n", what, policy ? policy : "native",
         same ? "each its own tokens" : "DIFFER");
  CHECK(same, "%s: a batched session's tokens differ from its own", what);
  llm_batch_free(b);
  for (int i = 0; i < NS; i++)
    llm_session_free(ss[i]);
  llm_model_free(m);
}

/* Batched decode in the fast precision with enough pairs an expert that the step groups the gate/up's pairs by
   expert (op_moe_group_m > 0: the integer-dot GEMV a group of pairs) against each session's own step (one token:
   the pairs' GEMV): NS sessions with prompts of their own, one greedy step alone each in the fast precision and the
   exact one on the same tokens, their logits kept; then the fast sessions reset, prefilled again and stepped
   together. A group sums each pair's rows as the pairs' GEMV does, but the batch's other projections take the
   several-token GEMV (sums in another order, activations quantized by the quantizer where the one-token GEMV may
   quantize them itself: a rounding tie then lands a step away). So th_check_batched_rows: each batched row as close
   to its exact logits as the fast steps alone are, most rows within 1e-4 of their fast step alone, which a wrong
   group, pair, row or expert (O(1) in the rows it touches) does not meet. */
static void batched_fast(const char *what, const char *model, const char *policy, uint32_t NS) {
  llm_err err = {0};
  llm_model *m = load_with(what, model, policy);
  if (!m) return;
  wgllm_status st = WGLLM_OK;
  uint32_t gm = op_moe_group_m(th_gpu(), m->hp.n_ff_exp, m->hp.n_embd, 1, NS * m->hp.n_expert_used, m->hp.n_expert),
           V = m->hp.n_vocab;
  int q8 = 1; /* the integer-dot GEMV reads every sparse layer's experts (blocks.c's condition for the groups) */
  for (uint32_t l = 0; l < m->hp.n_layer; l++)
    if (llm_layer_is_moe(&m->hp, l))
      q8 &= !m->layers[l].exp_up.data.buf &&
            op_moe_linear_q8_supports(th_gpu(), &m->layers[l].exp_gate_up, m->hp.n_embd, OP_MOE_GROUPS);
  CHECK(gm > 0 && q8, "%s: %u sessions of top %u of %u experts are not grouped (%u a group, integer-dot GEMV %d)", what,
        NS, m->hp.n_expert_used, m->hp.n_expert, gm, q8);
  llm_session *ss[LLM_BATCH_MAX] = {0};
  llm_batch *b = NULL;
  st = llm_batch_create(m, &b, &err);
  CHECK(st == WGLLM_OK, "%s batch: %s", what, err.msg);
  size_t bytes = (size_t)NS * V * 4;
  float *exact = malloc(bytes), *alone = malloc(bytes), *together = malloc(bytes);
  int32_t first[LLM_BATCH_MAX], step[LLM_BATCH_MAX], got[LLM_BATCH_MAX], prompt[LLM_BATCH_MAX][10];
  op_sample_params greedy = {.temperature = 0.0f, .top_p = 1.0f, .rep_penalty = 1.0f, .ring_cap = 32};
  /* alone: fast (sampled, kept for the batch), then exact on the same tokens (the prompt, then the fast step's
     input: the first token the fast prefill sampled) */
  for (uint32_t i = 0; !st && i < NS; i++) {
    for (int k = 0; k < 10; k++)
      prompt[i][k] = (int32_t)((k * 53 + i * 29 + 3) % V);
    llm_session_options so = {.ctx = 128, .fast = 1};
    st = llm_session_create(m, &so, &ss[i], &err);
    CHECK(st == WGLLM_OK, "%s session: %s", what, err.msg);
    if (!st) st = llm_session_set_sampler(ss[i], &greedy, prompt[i], 10);
    if (!st) st = llm_session_prefill_sample(ss[i], prompt[i], 10, &first[i]);
    if (!st) st = llm_session_step_sample(ss[i], &step[i]);
    if (!st) th_download(ss[i]->step_scratch.logits, alone + (size_t)i * V, (size_t)V * 4);
    CHECK(st == WGLLM_OK, "%s alone %u: %s", what, i, ss[i] ? ss[i]->err.msg : err.msg);
    llm_session *ex = NULL;
    so.fast = 0;
    if (!st) st = llm_session_create(m, &so, &ex, &err);
    if (!st) st = llm_session_prefill(ex, prompt[i], 10, NULL, 0);
    if (!st) st = llm_session_decode(ex, first[i], exact + (size_t)i * V);
    CHECK(st == WGLLM_OK, "%s exact %u: %s", what, i, ex ? ex->err.msg : err.msg);
    llm_session_free(ex);
  }
  for (uint32_t i = 0; !st && i < NS; i++) {
    int32_t again = -1;
    llm_session_reset(ss[i]);
    st = llm_session_set_sampler(ss[i], &greedy, prompt[i], 10);
    if (!st) st = llm_session_prefill_sample(ss[i], prompt[i], 10, &again);
    CHECK(st == WGLLM_OK && again == first[i], "%s: session %u's prefill again gives %d (first %d)", what, i, again,
          first[i]);
  }
  if (!st) {
    st = llm_batch_step(b, ss, NS, got);
    CHECK(st == WGLLM_OK, "%s: batch step of %u: %s", what, NS, b->err.msg);
  }
  if (!st) {
    th_download(b->sc.logits, together, bytes);
    th_batched_rows r = th_check_batched_rows(what, NS, V, together, alone, exact, NULL);
    printf("  %-26s %-18s %u sessions batched fast, groups of %u: rows %.2g from exact at most (alone %.2g), %u of "
           "%u within 1e-4 of alone (the farthest %.2g)\n",
           what, policy ? policy : "native", NS, gm, r.worst, r.worst_alone, r.close, NS, r.farthest);
  }
  llm_batch_free(b);
  for (uint32_t i = 0; i < NS; i++)
    llm_session_free(ss[i]);
  free(exact);
  free(alone);
  free(together);
  llm_model_free(m);
}

/* wgllm info names the experts and the sparse layers */
static void info_says(const char *what, const char *model, const char *needle) {
  char args[600];
  snprintf(args, sizeof args, "info -m %s > %s/info.txt", model, g_tmp);
  int rc = run_cli(args);
  snprintf(args, sizeof args, "%s/info.txt", g_tmp);
  char *t = th_read_file(args, NULL);
  CHECK(rc == 0 && t && strstr(t, needle), "%s: wgllm info lacks \"%s\": %s", what, needle, t ? t : "(none)");
  if (t && strstr(t, "experts:")) {
    char *e = strstr(t, "experts:"), *nl = strstr(e, "\nsession");
    printf("  %-26s info: %.*s\n", what, nl ? (int)(nl - e) : 80, e);
  }
  free(t);
}

static void random_experts(void) {
  printf("random experts: the prompt's pass (tiles) and the decode step (pairs) agree; batched decode:\n");
  char m1[400], m2[400], m3[400];
  /* layer 0 sparse, layer 1 dense by mlp_only_layers; 8 experts 64 wide, top 3 not renormalised */
  if (make_model("rand_each", "--form each --experts 8 --k 3 --width 64 --norm 0 --mlp-only 1 --seed 5", m1,
                 sizeof m1)) {
    info_says("mlp_only_layers [1]", m1, "on 1 of 2 layers (the others a dense MLP of 192)");
    routes_agree("each, mlp_only_layers [1]", m1, "");
    routes_agree("each, mlp_only_layers [1]", m1, "--weights q4");
    batched("each, mlp_only_layers [1]", m1, NULL);
  }
  /* layer 0 dense, layer 1 sparse by decoder_sparse_step 2; 6 experts, top 2 renormalised */
  if (make_model("rand_3d", "--form 3d --experts 6 --k 2 --width 96 --norm 1 --sparse-step 2 --seed 6", m2,
                 sizeof m2)) {
    info_says("decoder_sparse_step 2", m2, "on 1 of 2 layers");
    routes_agree("3d, decoder_sparse_step 2", m2, "--kv f16");
    batched("3d, decoder_sparse_step 2", m2, "q4");
  }
  /* GGUF, every layer sparse, 8 experts top 8 (the ops' largest k) */
  if (make_model("rand_gguf", "--form gguf --experts 8 --k 8 --width 64 --seed 7", m3, sizeof m3)) {
    info_says("gguf", m3, "8, 8 used a token, 64 wide, on 2 of 2 layers; top-k weights renormalised");
    routes_agree("gguf, top 8 of 8", m3, "");
    batched("gguf, top 8 of 8", m3, NULL);
    batched_fast("gguf, top 8 of 8", m3, "q4", 8);
  }
}

/* GGUF experts in ggml's Q8_0 and Q4_0 blocks (kept as q8, converted to q4gsw g32 at load, then interleaved per expert,
   scales with them) against the same values as F32 tensors in a Hugging Face form: the same logits, prompt and decode
   rows (the kernels read the same values in the same order; bound 1e-5) */
static void expert_storages(void) {
  printf("the experts' forms and storages (GGUF's Q8_0 / Q4_0 blocks, BF16) against the same values as F32:\n");
  static const char *const q[2] = {"q8_0", "q4_0"}, *const hf_form[2] = {"3d", "each"};
  for (int i = 0; i < 2; i++) {
    char a[400], b[400], args[256], name[64];
    /* random experts (of one seed: the same values in both forms), so that each expert's blocks and scales must land
       in its own rows */
    snprintf(args, sizeof args, "--form gguf --experts 6 --k 3 --width 64 --seed 9 --quant %s", q[i]);
    snprintf(name, sizeof name, "%s_gguf", q[i]);
    if (!make_model(name, args, a, sizeof a)) continue;
    /* (renormalised, as llama.cpp's qwen3moe always is) */
    snprintf(args, sizeof args, "--form %s --experts 6 --k 3 --width 64 --seed 9 --norm 1 --quant %s", hf_form[i],
             q[i]);
    snprintf(name, sizeof name, "%s_%s", q[i], hf_form[i]);
    if (!make_model(name, args, b, sizeof b)) continue;
    float *x = NULL, *y = NULL;
    int nx, ny, tb;
    if (logits(a, g_prompt, g_decode, "", &x, &nx) && logits(b, g_prompt, g_decode, "", &y, &ny)) {
      double d = nx == ny ? worst_err(y, x, nx, &tb) : INFINITY;
      double moved = worst_err(g_ref, x, nx, &tb); /* the experts matter */
      printf("  %-26s GGUF vs %s F32 of its values: worst row %.3g (bound 1e-5); vs the dense model %.3g\n", q[i],
             hf_form[i], d, moved);
      CHECK(d <= 1e-5, "%s experts in GGUF blocks differ from their values as F32 by %.3g", q[i], d);
      CHECK(moved > 0.05, "%s: random experts moved the logits by only %.3g from the dense model's", q[i], moved);
    }
    free(x);
    free(y);
  }
  /* gate in Q8_0 and up in Q4_0 (a mix of types within a layer's experts): two weights, the GLU apart */
  {
    char a[400], b[400];
    float *x = NULL, *y = NULL;
    int nx = 0, ny = 0, tb;
    if (make_model("mixed_gguf", "--form gguf --experts 6 --k 3 --width 64 --seed 9 --quant q8_0 --quant-up q4_0", a,
                   sizeof a) &&
        make_model("mixed_each",
                   "--form each --experts 6 --k 3 --width 64 --seed 9 --norm 1 --quant q8_0 --quant-up q4_0", b,
                   sizeof b) &&
        logits(a, g_prompt, g_decode, "", &x, &nx) && logits(b, g_prompt, g_decode, "", &y, &ny)) {
      double d = nx == ny ? worst_err(y, x, nx, &tb) : INFINITY;
      printf("  %-26s GGUF vs each F32 of its values: worst row %.3g (bound 1e-5)\n", "gate q8_0, up q4_0", d);
      CHECK(d <= 1e-5, "gate Q8_0 / up Q4_0 experts differ from their values as F32 by %.3g", d);
      routes_agree("gguf gate q8_0, up q4_0", a, "");
    }
    free(x);
    free(y);
  }
  /* the same random experts in the three forms (each loaded its own way: pieces an expert, the 3-D tensors as they
     are, GGUF's stacked gate and up interleaved): the same logits */
  static const char *const forms[3] = {"each", "3d", "gguf"};
  float *rows[3] = {0};
  int nr[3] = {0};
  for (int i = 0; i < 3; i++) {
    char args[256], name[64], path[400];
    snprintf(args, sizeof args, "--form %s --experts 6 --k 3 --width 64 --seed 9 --norm 1", forms[i]);
    snprintf(name, sizeof name, "forms_%s", forms[i]);
    if (make_model(name, args, path, sizeof path)) logits(path, g_prompt, g_decode, "", &rows[i], &nr[i]);
  }
  for (int i = 1; i < 3; i++) {
    int tb;
    double d = rows[0] && rows[i] && nr[0] == nr[i] ? worst_err(rows[0], rows[i], nr[0], &tb) : INFINITY;
    printf("  random experts %-11s against each (F32): worst row %.3g (bound 1e-5)\n", forms[i], d);
    CHECK(d <= 1e-5, "random experts as %s differ from the same experts a tensor each by %.3g", forms[i], d);
  }
  for (int i = 0; i < 3; i++)
    free(rows[i]);
  /* BF16 experts (the hub's checkpoints' storage: kept bf16 on the GPU) in every form, against their values as F32 */
  static const char *const bf[4] = {"--form 3d --quant bf16", "--form each --quant bf16 --bf16-hf",
                                    "--form 3d --quant bf16 --bf16-hf", "--form gguf --quant bf16"};
  float *ref = NULL;
  int nref = 0;
  for (int i = 0; i < 4; i++) {
    char args[256], name[64], path[400];
    snprintf(args, sizeof args, "%s --experts 6 --k 3 --width 64 --seed 9 --norm 1", bf[i]);
    snprintf(name, sizeof name, "bf16_%d", i);
    float *x = NULL;
    int nx = 0, tb;
    if (!make_model(name, args, path, sizeof path) || !logits(path, g_prompt, g_decode, "", &x, &nx)) continue;
    if (!i) {
      ref = x;
      nref = nx;
      continue;
    }
    double d = ref && nx == nref ? worst_err(ref, x, nx, &tb) : INFINITY;
    printf("  bf16 experts (%s): against F32 of their values: worst row %.3g (bound 1e-5)\n", bf[i], d);
    CHECK(d <= 1e-5, "bf16 experts (%s) differ from their values as F32 by %.3g", bf[i], d);
    free(x);
  }
  free(ref);
  char m[400];
  if (make_model("q4_0_rand", "--form gguf --quant q4_0 --experts 8 --k 3 --width 64 --seed 9", m, sizeof m)) {
    routes_agree("gguf Q4_0, top 3 of 8", m, "");
    batched("gguf Q4_0, top 3 of 8", m, NULL);
  }
}

static void expect_error(const char *what, const char *model, const char *extra, const char *needle) {
  char args[1200];
  snprintf(args, sizeof args, "logits -m %s --prompt-ids 3,4,5 -o %s/bad.f32 %s", model, g_tmp, extra);
  int rc = run_cli(args);
  char *e = last_stderr();
  CHECK(rc == 1 || rc == 2, "%s: exit %d (want a clean error), stderr: %s", what, rc, e);
  CHECK(strstr(e, needle) != NULL, "%s: stderr lacks \"%s\": %s", what, needle, e);
  printf("  %-34s -> %s", what, e);
  free(e);
}

static void bad_case(const char *name, const char *args, const char *extra, const char *needle) {
  char model[400], dir[64];
  snprintf(dir, sizeof dir, "bad_%s", name);
  for (char *c = dir; *c; c++)
    if (*c == ' ') *c = '_';
  if (make_model(dir, args, model, sizeof model)) expect_error(name, model, extra, needle);
}

static void bad_inputs(void) {
  printf("bad MoE inputs:\n");
  bad_case("shared expert", "--set shared_expert_intermediate_size=64", "", "shared_expert_intermediate_size 64");
  bad_case("top 9", "--experts 10 --k 2 --set num_experts_per_tok=9", "", "num_experts_per_tok 9");
  bad_case("top k over the experts", "--set num_experts_per_tok=5", "", "num_experts_per_tok 5");
  bad_case("top 0", "--set num_experts_per_tok=0", "", "num_experts_per_tok is 0");
  bad_case("300 experts", "--set num_experts=300", "", "num_experts 300");
  bad_case("sparse step 0", "--set decoder_sparse_step=0", "", "decoder_sparse_step is 0");
  bad_case("mlp_only_layers out of range", "--set mlp_only_layers=[2]", "", "mlp_only_layers");
  bad_case("moe_intermediate_size 0", "--set moe_intermediate_size=0", "", "moe_intermediate_size is 0");
  bad_case("norm_topk_prob a string", "--set 'norm_topk_prob=\"yes\"'", "", "norm_topk_prob");
  bad_case("an expert missing", "--drop model.layers.1.mlp.experts.3.up_proj.weight", "",
           "missing tensor model.layers.1.mlp.experts.3.up_proj.weight");
  bad_case("an expert misshapen", "--reshape model.layers.0.mlp.experts.2.down_proj.weight", "",
           "tensor model.layers.0.mlp.experts.2.down_proj.weight in");
  bad_case("3-D experts misshapen", "--form 3d --reshape model.layers.1.mlp.experts.gate_up_proj", "",
           "has shape [3, 384, 96], the config says [4, 384, 96]");
  bad_case("router missing", "--drop model.layers.0.mlp.gate.weight", "",
           "missing tensor model.layers.0.mlp.gate.weight");
  bad_case("GGUF experts missing", "--form gguf --drop blk.1.ffn_down_exps.weight", "",
           "missing tensor blk.1.ffn_down_exps.weight");
  bad_case("GGUF no expert count", "--form gguf --drop-key qwen3moe.expert_count", "",
           "GGUF: missing or invalid qwen3moe.expert_count");
  bad_case("GGUF top 9", "--form gguf --experts 10 --set num_experts_per_tok=9", "", "qwen3moe.expert_used_count 9");
  /* one expert over a storage binding: the experts split by whole experts, never within one */
  bad_case("an expert over one binding", "", "--ctx 64 --max-binding 65536",
           "do not fit 32 storage bindings of 65536 bytes (whole experts a binding)");
}

/* run, chat (the model's own template) and serve on models of other families made from the bundled model
   (models/default: a real tokenizer) by tests/tools/make_family_from_dense.py: Mixtral (its experts copies of each
   dense MLP) and Phi-3 (the same weights fused) against the bundled model, Qwen3-MoE (experts copies of each MLP)
   against a dense Qwen3 made alike; greedy text equal to the dense model's, chat through the family's own
   template, and the same reply from the server as from chat */
static char *cli_out(const char *args) {
  char cmd[1500], p[300];
  snprintf(p, sizeof p, "%s/stdout.txt", g_tmp);
  snprintf(cmd, sizeof cmd, "%s/wgllm %s >%s 2>%s/stderr.txt", g_bin, args, p, g_tmp);
  int rc = sh(cmd);
  char *s = th_read_file(p, NULL);
  CHECK(rc == 0 && s, "wgllm %s failed (%d)", args, rc);
  return s ? s : calloc(1, 1);
}

/* the family's model into g_tmp/<family>_default (path in dir); 0 on failure */
static int make_family(const char *family, char *dir, size_t cap) {
  char cmd[1200];
  snprintf(dir, cap, "%s/%s_default", g_tmp, family);
  snprintf(cmd, sizeof cmd,
           "python3 tools/make_family_from_dense.py ../models/default %s --family %s --experts 4 --k 2", dir, family);
  int rc = sh(cmd);
  CHECK(rc == 0, "make_family_from_dense.py --family %s failed (%d)", family, rc);
  return rc == 0;
}

static void family_end_to_end(const char *family, const char *dense_family) {
  char dir[300], dense_dir[300], cmd[1200], args[1200];
  if (!make_family(family, dir, sizeof dir)) return;
  snprintf(dense_dir, sizeof dense_dir, "../models/default");
  if (dense_family && !make_family(dense_family, dense_dir, sizeof dense_dir)) return;
  const char *prompt = "Once upon a time";
  snprintf(args, sizeof args, "run -m %s -p '%s' -n 24 --temp 0", dense_dir, prompt);
  char *dense = cli_out(args);
  snprintf(args, sizeof args, "run -m %s -p '%s' -n 24 --temp 0", dir, prompt);
  char *got = cli_out(args);
  CHECK(strlen(got) > strlen(prompt) && !strcmp(dense, got), "%s run: '%s' against the dense %s's '%s'", family, got,
        dense_family ? dense_family : "bundled model", dense);
  printf("  %s from the bundled model, run: %s\n", family, got);
  snprintf(args, sizeof args, "chat -m %s -n 16 -p 'Who made the sea?' -st --temp 0", dir);
  char *chat = cli_out(args), *err = last_stderr(), want[64];
  snprintf(want, sizeof want, "wgllm chat: %s on", family);
  CHECK(strstr(err, want) && strstr(err, "template jinja"), "%s chat: not the model's template: %s", family, err);
  char out[300];
  snprintf(out, sizeof out, "%s/serve.txt", g_tmp);
  snprintf(cmd, sizeof cmd, "python3 tools/serve_chat_once.py %s/wgllm %s %d 'Who made the sea?' 16 >%s", g_bin, dir,
           20000 + (int)(getpid() % 20000), out);
  int rc = sh(cmd);
  char *served = th_read_file(out, NULL);
  CHECK(rc == 0 && served && served[0] && strstr(chat, served), "%s serve (%d): '%s' not chat's reply '%s'", family, rc,
        served ? served : "", chat);
  printf("  %s chat and serve: '%s'\n", family, served ? served : "");
  free(dense);
  free(got);
  free(chat);
  free(err);
  free(served);
}

/* Gemma 4's MoE block through run, chat and serve: the gemma4_moe fixture given the bundled tokenizer (its embedding
   tables regrown to 2048 rows by tests/tools/retokenize_fixture.py) and Gemma 3's chat template (no Gemma 4 template
   is in the tree); the model is random, so its text is checked for run producing some and the server's reply equal to
   chat's */
static void gemma4_moe_end_to_end(void) {
  char dir[300], cmd[1200], args[1200], out[300];
  snprintf(dir, sizeof dir, "%s/gemma4_moe_chat", g_tmp);
  snprintf(cmd, sizeof cmd,
           "python3 tools/retokenize_fixture.py data/models/gemma4_moe ../models/default "
           "../third_party/tokenizers/gemma3/tokenizer_config.json %s",
           dir);
  int rc = sh(cmd);
  CHECK(rc == 0, "retokenize_fixture.py failed (%d)", rc);
  if (rc) return;
  const char *prompt = "Once upon a time";
  snprintf(args, sizeof args, "run -m %s -p '%s' -n 16 --temp 0", dir, prompt);
  char *got = cli_out(args);
  CHECK(strlen(got) > strlen(prompt) + 4, "gemma4_moe run: '%s'", got);
  printf("  gemma4_moe with the bundled tokenizer, run: %s\n", got);
  snprintf(args, sizeof args, "chat -m %s -n 12 -p 'Who made the sea?' -st --temp 0", dir);
  char *chat = cli_out(args), *err = last_stderr();
  CHECK(strstr(err, "wgllm chat: gemma4_text on") && strstr(err, "template jinja"),
        "gemma4_moe chat: not the model's template: %s", err);
  snprintf(out, sizeof out, "%s/serve.txt", g_tmp);
  snprintf(cmd, sizeof cmd, "python3 tools/serve_chat_once.py %s/wgllm %s %d 'Who made the sea?' 12 >%s", g_bin, dir,
           20000 + (int)((getpid() + 7) % 20000), out);
  rc = sh(cmd);
  char *served = th_read_file(out, NULL);
  CHECK(rc == 0 && served && served[0] && strstr(chat, served), "gemma4_moe serve (%d): '%s' not chat's reply '%s'", rc,
        served ? served : "", chat);
  printf("  gemma4_moe chat and serve agree (%zu bytes)\n", served ? strlen(served) : 0);
  free(got);
  free(chat);
  free(err);
  free(served);
}

int main(void) {
  const char *bin = getenv("WGLLM_BIN");
  snprintf(g_bin, sizeof g_bin, "%s", bin ? bin : "../build");
  snprintf(g_tmp, sizeof g_tmp, "/tmp/wgllm-test-moe-%d", (int)getpid());
  mkdir(g_tmp, 0755);
  setvbuf(stdout, NULL, _IOLBF, 0);
  char *js = th_read_file("data/models/qwen3/ref.json", NULL);
  cJSON *j = js ? cJSON_Parse(js) : NULL;
  free(js);
  const cJSON *pr = cJSON_GetObjectItem(j, "prompt_ids"), *gr = cJSON_GetObjectItem(j, "greedy_ids"), *it;
  size_t n = 0;
  cJSON_ArrayForEach(it, pr) n +=
      (size_t)snprintf(g_prompt + n, sizeof g_prompt - n, "%s%d", n ? "," : "", (int)it->valuedouble);
  n = 0;
  cJSON_ArrayForEach(it, gr) n +=
      (size_t)snprintf(g_decode + n, sizeof g_decode - n, "%s%d", n ? "," : "", (int)it->valuedouble);
  g_T = cJSON_GetArraySize(pr);
  g_N = cJSON_GetArraySize(gr);
  cJSON_Delete(j);
  size_t len;
  g_ref = th_read_file("data/models/qwen3/logits.f32", &len);
  CHECK(g_ref && len == (size_t)(g_T + g_N) * g_V * 4, "bad data/models/qwen3/logits.f32");
  if (sh("python3 -c 'import json, struct, array'") != 0) {
    printf("test_moe: skipped: no python3 to make the MoE models with (tests/tools/make_moe_fixture.py)\n");
    return 77;
  }
  if (g_ref) {
    identical_experts();
    random_experts();
    expert_storages();
    bad_inputs();
  }
  /* the families' fixtures batched in the fast precision: Mixtral's routing, gpt-oss's MXFP4 experts with biases
     and its clamped SwiGLU, Qwen3-MoE's */
  batched_fast("mixtral fixture", "data/models/mixtral", "q4", 4);
  batched_fast("gpt_oss_mxfp4 fixture", "data/models/gpt_oss_mxfp4", NULL, 8);
  batched_fast("qwen3_moe fixture", "data/models/qwen3_moe", "q4", 8);
  family_end_to_end("mixtral", NULL);
  family_end_to_end("phi3", NULL);
  family_end_to_end("qwen3_moe", "qwen3");
  gemma4_moe_end_to_end();
  free(g_ref);
  char cmd[300];
  snprintf(cmd, sizeof cmd, "rm -rf %s", g_tmp);
  if (system(cmd)) {
  }
  return th_finish("test_moe");
}
