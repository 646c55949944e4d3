/* Synthetic benchmark models: the in-memory q4gsw model and the GGUF file written from the same generator
   compute the same logits (so other engines can be measured on identical weights), and `wgllm bench` runs and
   reports every JSON field. */
#include "harness.h"
#include "model_synthetic.h"
#include "session.h"
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static float *logits_of(llm_model *m, const int32_t *ids, uint32_t n) {
  char err[1024];
  llm_session *s;
  llm_session_options so = {.ctx = 64};
  if (llm_session_create(m, &so, &s, err, sizeof err)) {
    CHECK(0, "%s", err);
    return NULL;
  }
  float *l = malloc((size_t)n * m->hp.n_vocab * 4);
  CHECK(llm_session_prefill(s, ids, n - 1, l, 1) == WGLLM_OK, "prefill: %s", s->err);
  CHECK(llm_session_decode(s, ids[n - 1], l + (size_t)(n - 1) * m->hp.n_vocab) == WGLLM_OK, "decode: %s", s->err);
  llm_session_free(s);
  return l;
}

int main(void) {
  gpu_context *gpu = th_gpu();
  char err[1024], path[256];
  snprintf(path, sizeof path, "/tmp/wgllm-synth-%d.gguf", (int)getpid());
  llm_model *a, *b;
  CHECK(llm_model_synthetic(gpu, "tiny", 32, &a, err, sizeof err) == WGLLM_OK, "%s", err);
  CHECK(llm_synthetic_write_gguf("tiny", path, err, sizeof err) == WGLLM_OK, "%s", err);
  CHECK(llm_model_load(gpu, path, NULL, &b, err, sizeof err) == WGLLM_OK, "load %s: %s", path, err);
  int32_t ids[] = {1, 50, 7, 300, 511, 2, 99};
  uint32_t n = 7, V = a->hp.n_vocab;
  float *la = logits_of(a, ids, n), *lb = logits_of(b, ids, n);
  double num = 0, den = 0;
  for (size_t i = 0; i < (size_t)n * V; i++) {
    num += ((double)la[i] - lb[i]) * ((double)la[i] - lb[i]);
    den += (double)la[i] * la[i];
  }
  CHECK(den > 0 && sqrt(num / den) < 1e-6, "synthetic vs its GGUF: rel L2 %.3g", sqrt(num / den));
  printf("synthetic tiny vs its GGUF: relative L2 %.3g\n", sqrt(num / den));
  CHECK(llm_model_synthetic(gpu, "nope", 32, &b, err, sizeof err) == WGLLM_ERR_INVALID_ARG && strstr(err, "nope"),
        "unknown name: %s", err);
  free(la);
  free(lb);
  llm_model_free(a);
  llm_model_free(b);
  unlink(path);
  th_gpu_done();

  /* the bench command and its JSON fields */
  const char *bin = getenv("WGLLM_BIN");
  char cmd[1024];
  snprintf(cmd, sizeof cmd,
           "%s/wgllm bench --synthetic tiny --prompt 16 --gen 8 --runs 2 --json > /tmp/wgllm-bench-%d.json",
           bin ? bin : "../build", (int)getpid());
  CHECK(system(cmd) == 0, "bench failed");
  snprintf(path, sizeof path, "/tmp/wgllm-bench-%d.json", (int)getpid());
  char *js = th_read_file(path, NULL);
  const char *fields[] = {"adapter",
                          "model",
                          "weights",
                          "kv_dtype",
                          "context",
                          "prefill_tok_s",
                          "decode_tok_s",
                          "decode_ms_per_token",
                          "dispatches_per_token",
                          "cpu_encode_us_per_token",
                          "kv_bytes",
                          "weight_bytes",
                          "gpu_bytes_peak"};
  for (size_t i = 0; i < sizeof fields / sizeof fields[0]; i++) {
    char k[64];
    snprintf(k, sizeof k, "\"%s\":", fields[i]);
    CHECK(js && strstr(js, k), "bench JSON lacks %s", fields[i]);
  }
  free(js);
  unlink(path);
  return th_finish("test_synthetic");
}
