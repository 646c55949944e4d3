/* The public API as a user sees it: this test includes only include/wgllm.h and links the shared library.
   Vocabulary loading without a GPU (pieces, specials, round trip), model loading with progress and log
   callbacks, sessions that evaluate tokens (prefill rows against one-token decode steps, rewind), weights-only
   loads, the descriptions, and refusals of bad arguments. On the bundled default model. */
#include "wgllm.h"
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static int g_checks, g_failed;
#define CHECK(cond, ...)                                                                                               \
  do {                                                                                                                 \
    g_checks++;                                                                                                        \
    if (!(cond)) {                                                                                                     \
      g_failed++;                                                                                                      \
      fprintf(stderr, "FAIL %s:%d: ", __FILE__, __LINE__);                                                             \
      fprintf(stderr, __VA_ARGS__);                                                                                    \
      fprintf(stderr, "\n");                                                                                           \
    }                                                                                                                  \
  } while (0)

static const char *MODEL = "../models/default";
static int g_progress_calls;
static float g_progress_last;
static int g_logs;

static int on_progress(float f, void *user) {
  (void)user;
  CHECK(f > g_progress_last && f <= 1.0f, "progress goes up to 1 (%g after %g)", f, g_progress_last);
  g_progress_last = f;
  g_progress_calls++;
  return 0;
}
static int cancel_at_half(float f, void *user) {
  (void)user;
  return f >= 0.5f;
}
static void on_log(wgllm_log_level level, const char *msg, void *user) {
  (void)level;
  (void)user;
  CHECK(msg && msg[0], "a log message has text");
  g_logs++;
}
static uint32_t g_prefill_done, g_prefill_total;
static void on_prefill(uint32_t done, uint32_t total, void *user) {
  (void)user;
  CHECK(done > g_prefill_done && done <= total, "prefill progress %u of %u after %u", done, total, g_prefill_done);
  g_prefill_done = done;
  g_prefill_total = total;
}

static size_t argmax(const float *v, size_t n) {
  size_t b = 0;
  for (size_t i = 1; i < n; i++)
    if (v[i] > v[b]) b = i;
  return b;
}

int main(void) {
  /* vocabulary alone */
  wgllm_vocab *v;
  CHECK(wgllm_vocab_load(MODEL, &v) == WGLLM_OK, "vocab: %s", wgllm_last_error());
  size_t nt = wgllm_vocab_n_tokens(v);
  CHECK(nt == 2048, "vocabulary of %zu tokens", nt);
  const char *text = "In the beginning God created the heaven and the earth.";
  int32_t ids[64];
  size_t n = 0;
  CHECK(wgllm_vocab_tokenize(v, text, strlen(text), 1, 1, ids, 64, &n) == WGLLM_OK && n > 3 && n < 64,
        "tokenize: %zu ids", n);
  CHECK(ids[0] == wgllm_vocab_bos(v), "BOS first (%d, bos %d)", ids[0], wgllm_vocab_bos(v));
  CHECK(wgllm_vocab_is_special(v, wgllm_vocab_bos(v)), "BOS is special");
  size_t plen = 0;
  CHECK(wgllm_vocab_piece(v, ids[1], &plen) && plen > 0, "a piece for id %d", ids[1]);
  CHECK(!wgllm_vocab_piece(v, (int32_t)nt, &plen) && !wgllm_vocab_piece(v, -1, &plen), "no piece out of range");
  char *back = NULL;
  size_t blen = 0;
  CHECK(wgllm_vocab_detokenize(v, ids + 1, n - 1, &back, &blen) == WGLLM_OK && back && !strcmp(back, text) &&
            blen == strlen(text),
        "round trip: '%s'", back ? back : "(null)");
  wgllm_free(back);
  size_t count = 0;
  CHECK(wgllm_vocab_tokenize(v, text, strlen(text), 1, 1, NULL, 0, &count) == WGLLM_OK && count == n,
        "counting only: %zu", count);
  int32_t bad = (int32_t)nt;
  CHECK(wgllm_vocab_detokenize(v, &bad, 1, &back, NULL) != WGLLM_OK && wgllm_vocab_error(v)[0],
        "an id out of range is refused with a message");
  wgllm_vocab_free(v);
  CHECK(wgllm_vocab_load("/nonexistent/model", &v) != WGLLM_OK && !v && wgllm_last_error()[0],
        "a missing path is refused: %s", wgllm_last_error());

  /* model with callbacks */
  wgllm_set_log(on_log, NULL);
  wgllm_model_params mp = wgllm_model_default_params();
  mp.progress = on_progress;
  wgllm_model *m;
  CHECK(wgllm_model_create(MODEL, &mp, &m) == WGLLM_OK, "model: %s", wgllm_last_error());
  CHECK(g_progress_calls >= 2 && g_progress_last == 1.0f, "progress called %d times, last %g", g_progress_calls,
        g_progress_last);
  CHECK(g_logs >= 1, "the load was logged (%d messages)", g_logs);
  wgllm_set_log(NULL, NULL);
  wgllm_model_info info;
  CHECK(wgllm_model_get_info(m, &info) == WGLLM_OK && info.n_vocab == 2048, "model info");
  CHECK(wgllm_vocab_n_tokens(wgllm_model_vocab(m)) == nt, "the model's vocabulary");

  /* evaluating tokens: the prefill's rows against the recorded decode step fed the same tokens */
  wgllm_session_params sp = wgllm_session_default_params();
  sp.context = 128;
  sp.on_prefill = on_prefill;
  wgllm_session *s;
  CHECK(wgllm_session_create(m, &sp, &s) == WGLLM_OK, "session: %s", wgllm_last_error());
  uint32_t V = info.n_vocab, T = (uint32_t)n;
  float *all = malloc((size_t)T * V * 4), *last = malloc((size_t)V * 4), *step = malloc((size_t)V * 4);
  CHECK(wgllm_session_prefill(s, ids, T, all, 1) == WGLLM_OK, "prefill: %s", wgllm_session_error(s));
  CHECK(g_prefill_total == T && g_prefill_done == T, "prefill progress reached %u of %u", g_prefill_done, T);
  CHECK(wgllm_session_n_past(s) == T, "n_past %u after %u tokens", wgllm_session_n_past(s), T);
  wgllm_session_rewind(s, 3);
  CHECK(wgllm_session_n_past(s) == 3, "rewound to 3");
  double worst = 0;
  for (uint32_t t = 3; t < T; t++) {
    CHECK(wgllm_session_decode(s, ids[t], step) == WGLLM_OK, "decode %u: %s", t, wgllm_session_error(s));
    double num = 0, den = 0;
    for (uint32_t i = 0; i < V; i++) {
      double d = (double)step[i] - all[(size_t)t * V + i];
      num += d * d;
      den += (double)all[(size_t)t * V + i] * all[(size_t)t * V + i];
    }
    if (sqrt(num / den) > worst) worst = sqrt(num / den);
    CHECK(argmax(step, V) == argmax(all + (size_t)t * V, V), "decode %u picks what prefill row %u does", t, t);
  }
  CHECK(worst < 1e-4, "decode steps match the prefill rows (worst relative L2 %.3g)", worst);
  wgllm_session_reset(s);
  g_prefill_done = 0;
  CHECK(wgllm_session_prefill(s, ids, T, last, 0) == WGLLM_OK, "prefill of the last row only");
  /* the last row alone goes through the GEMV, all rows through the tiled GEMM: equal up to f32 rounding */
  double num = 0, den = 0;
  for (uint32_t i = 0; i < V; i++) {
    double d = (double)last[i] - all[(size_t)(T - 1) * V + i];
    num += d * d;
    den += (double)last[i] * last[i];
  }
  CHECK(sqrt(num / den) < 1e-5, "the last row alone equals the last of all rows (relative L2 %.3g)", sqrt(num / den));
  int32_t oor = (int32_t)V;
  CHECK(wgllm_session_decode(s, oor, step) == WGLLM_ERR_INVALID_ARG && wgllm_session_error(s)[0],
        "an id out of range: %s", wgllm_session_error(s));
  int32_t *many = calloc(200, sizeof *many);
  CHECK(wgllm_session_prefill(s, many, 200, NULL, 0) == WGLLM_ERR_INVALID_ARG, "more tokens than the context");
  free(many);
  /* generation reports why it stopped, as a value */
  wgllm_session_reset(s);
  g_prefill_done = 0;
  wgllm_generate_params gp = wgllm_generate_default_params();
  gp.max_tokens = 4;
  gp.temperature = 0;
  wgllm_generate_stats gs;
  CHECK(wgllm_generate(s, "In the beginning", &gp, &gs) == WGLLM_OK && gs.generated_tokens == 4 &&
            gs.stop == WGLLM_STOP_MAX_TOKENS,
        "generate: %u tokens, stop %d (%s)", gs.generated_tokens, (int)gs.stop, gs.stop_reason);
  wgllm_session_free(s);
  sp.kv_type = (wgllm_kv_type)7;
  CHECK(wgllm_session_create(m, &sp, &s) == WGLLM_ERR_INVALID_ARG && !s, "a kv_type outside the enum is refused");
  wgllm_model_free(m);

  /* typed weight storage: q4 with a group it does not have is refused before anything loads */
  mp = wgllm_model_default_params();
  mp.weights = WGLLM_WEIGHTS_Q4;
  mp.q4_group = 48;
  CHECK(wgllm_model_create(MODEL, &mp, &m) == WGLLM_ERR_INVALID_ARG && !m && strstr(wgllm_last_error(), "group"),
        "q4 group 48 refused: %s", wgllm_last_error());
  /* a weights-only load computes logits but refuses text */
  mp = wgllm_model_default_params();
  mp.no_tokenizer = 1;
  CHECK(wgllm_model_create(MODEL, &mp, &m) == WGLLM_OK, "weights only: %s", wgllm_last_error());
  size_t k;
  CHECK(wgllm_tokenize(m, "x", 1, 1, ids, 64, &k) == WGLLM_ERR_INVALID_ARG && wgllm_model_error(m)[0],
        "text refused without a tokenizer");
  wgllm_model_free(m);
  /* a cancelled load leaves nothing */
  mp = wgllm_model_default_params();
  mp.progress = cancel_at_half;
  CHECK(wgllm_model_create(MODEL, &mp, &m) != WGLLM_OK && !m && strstr(wgllm_last_error(), "cancelled"),
        "cancelled load: %s", wgllm_last_error());

  /* Gemma 4 with KV sharing: the cache holds only the owning layers (0, 1 sliding with head_dim 32; 2 full with
     head_dim 512; 3-5 read 1, 1, 2), and the replayed decode step gives what one-token prefills give */
  mp = wgllm_model_default_params();
  mp.no_tokenizer = 1;
  CHECK(wgllm_model_create("data/models/gemma4_kv_shared", &mp, &m) == WGLLM_OK, "gemma4: %s", wgllm_last_error());
  if (m) {
    wgllm_session_params gp = wgllm_session_default_params();
    gp.context = 64;
    wgllm_session *a = NULL, *b = NULL;
    CHECK(wgllm_session_create(m, &gp, &a) == WGLLM_OK && wgllm_session_create(m, &gp, &b) == WGLLM_OK,
          "gemma4 sessions");
    uint64_t want = 2 * (2ull * 1 * 64 * 32 * 4) + 2ull * 1 * 64 * 512 * 4;
    CHECK(a && wgllm_session_kv_bytes(a) == want, "gemma4 kv bytes %llu, want %llu (owning layers only)",
          a ? (unsigned long long)wgllm_session_kv_bytes(a) : 0ull, (unsigned long long)want);
    int32_t g4[12] = {28, 230, 13, 202, 90, 123, 182, 202, 305, 282, 20, 215};
    float la[320], lb[320];
    double worst = 0;
    int ok = a && b && wgllm_session_prefill(a, g4, 2, NULL, 0) == WGLLM_OK &&
             wgllm_session_prefill(b, g4, 2, NULL, 0) == WGLLM_OK;
    for (int i = 2; ok && i < 12; i++) { /* past the sliding window of 8 */
      ok = wgllm_session_decode(a, g4[i], la) == WGLLM_OK && wgllm_session_prefill(b, &g4[i], 1, lb, 0) == WGLLM_OK;
      for (int v = 0; ok && v < 320; v++)
        if (fabs(la[v] - lb[v]) > worst) worst = fabs(la[v] - lb[v]);
    }
    CHECK(ok && worst < 1e-4, "gemma4: replayed step vs one-token prefill differ by %g", worst);
    wgllm_session_free(a);
    wgllm_session_free(b);
    wgllm_model_free(m);
  }

  /* descriptions */
  char *d = NULL;
  CHECK(wgllm_describe_file(MODEL, &d) == WGLLM_OK && d && strstr(d, "architecture: llama"), "describe file");
  wgllm_free(d);
  CHECK(wgllm_describe_gpu(NULL, 0, &d) == WGLLM_OK && d && strstr(d, "adapter:"), "describe gpu");
  wgllm_free(d);
  CHECK(wgllm_describe_file("/nonexistent", &d) != WGLLM_OK && !d, "describe a missing file");
  /* a file that is not GGUF: the error names the file once and says what is wrong, create and describe alike */
  char badf[64];
  snprintf(badf, sizeof badf, "/tmp/wgllm-test-api-%d.gguf", (int)getpid());
  FILE *bf = fopen(badf, "wb");
  CHECK(bf != NULL, "write %s", badf);
  if (bf) {
    fputs("garbage, not a model", bf);
    fclose(bf);
    mp = wgllm_model_default_params();
    CHECK(wgllm_model_create(badf, &mp, &m) == WGLLM_ERR_FORMAT && !m, "garbage file refused");
    const char *e = wgllm_last_error(), *first = strstr(e, badf);
    CHECK(first && !strstr(first + 1, badf) && strstr(e, "not a GGUF file"), "garbage file error: %s", e);
    CHECK(wgllm_describe_file(badf, &d) == WGLLM_ERR_FORMAT && !d, "describe a garbage file");
    e = wgllm_last_error(), first = strstr(e, badf);
    CHECK(first && !strstr(first + 1, badf) && strstr(e, "not a GGUF file"), "describe error: %s", e);
    remove(badf);
  }
  CHECK(!strcmp(wgllm_version(), "0.1.0") || wgllm_version()[0], "version %s", wgllm_version());
  free(all);
  free(last);
  free(step);
  printf("test_api: %d checks, %d failed\n", g_checks, g_failed);
  return g_failed ? 1 : 0;
}
