/* GPU faults during generation, injected through Dawn's own hooks (gpu_inject_error, gpu_force_loss): an
   uncaptured validation or out-of-memory error fails the generate it happens in, with its message and status,
   and the session then works again (after wgllm_session_reset's internal twin, and without it) with the same
   greedy tokens as before; a lost device fails fast with WGLLM_ERR_DEVICE_LOST, every later call too, and tears
   down cleanly, and a new context then works; a wait past the context's timeout counts the device as lost instead of
   blocking forever; a buffer allocation that fails (the kth of a model load, of a session's creation and first
   generation, for every k) fails that call as out of memory naming the buffer and its size, leaves no buffer behind,
   and the next attempt works. */
#include "generate.h"
#include "harness.h"
#include "ops.h"
#include <cjson/cJSON.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#if defined(__SANITIZE_ADDRESS__)
#include <sanitizer/lsan_interface.h>
#define LEAKS_EXPECTED_BEGIN() __lsan_disable()
#define LEAKS_EXPECTED_END() __lsan_enable()
#else
#define LEAKS_EXPECTED_BEGIN()
#define LEAKS_EXPECTED_END()
#endif

static int32_t *ids_from(const cJSON *arr, uint32_t *n) {
  *n = (uint32_t)cJSON_GetArraySize(arr);
  int32_t *v = malloc(*n * sizeof *v + 4);
  for (uint32_t i = 0; i < *n; i++)
    v[i] = (int32_t)cJSON_GetArrayItem(arr, (int)i)->valuedouble;
  return v;
}

static double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec + ts.tv_nsec / 1e9;
}

typedef struct rig {
  gpu_context *gpu;
  llm_model *m;
  llm_session *s;
  int32_t *prompt, *greedy;
  uint32_t T, N;
} rig;

static int rig_open(rig *r) {
  memset(r, 0, sizeof *r);
  llm_err err = {0};
  char *js = th_read_file("data/models/llama_gqa/ref.json", NULL);
  cJSON *j = js ? cJSON_Parse(js) : NULL;
  free(js);
  if (!j) {
    CHECK(0, "cannot read the llama_gqa fixture");
    return 0;
  }
  r->prompt = ids_from(cJSON_GetObjectItem(j, "prompt_ids"), &r->T);
  r->greedy = ids_from(cJSON_GetObjectItem(j, "greedy_ids"), &r->N);
  cJSON_Delete(j);
  wgllm_status st = gpu_create(NULL, &r->gpu, &err);
  if (!st) st = llm_model_load(r->gpu, "data/models/llama_gqa", NULL, &r->m, &err);
  llm_session_options so = {.ctx = 64};
  if (!st) st = llm_session_create(r->m, &so, &r->s, &err);
  CHECK(!st, "rig: %s", err.msg);
  return !st;
}

static void rig_close(rig *r) {
  llm_session_free(r->s);
  llm_model_free(r->m);
  gpu_destroy(r->gpu);
  free(r->prompt);
  free(r->greedy);
}

/* greedy generation of the fixture's continuation; *same says whether it matched the reference ids */
static wgllm_status greedy(rig *r, int *same) {
  llm_gen_params gp = {.max_tokens = r->N, .sampling = {.temperature = 0, .top_p = 1, .rep_penalty = 1}};
  llm_gen_result res = {0};
  wgllm_status st = llm_generate(r->s, NULL, r->prompt, r->T, &gp, &res);
  *same = !st && res.n_generated == r->N && !memcmp(res.tokens, r->greedy, r->N * sizeof *r->greedy);
  llm_gen_result_free(&res);
  return st;
}

static void error_then_recovery(int oom) {
  const char *what = oom ? "out-of-memory" : "validation";
  rig r;
  if (!rig_open(&r)) return;
  int same = 0;
  CHECK(greedy(&r, &same) == WGLLM_OK && same, "%s: the first generate", what);
  gpu_inject_error(r.gpu, oom, "injected by test_gpu_faults");
  llm_session_reset(r.s);
  wgllm_status st = greedy(&r, &same);
  wgllm_status want = oom ? WGLLM_ERR_OUT_OF_MEMORY : WGLLM_ERR_GPU;
  CHECK(st == want, "%s: the generate after the error returned %s (want %s)", what, wgllm_status_name(st),
        wgllm_status_name(want));
  CHECK(strstr(r.s->err.msg, "injected by test_gpu_faults") != NULL, "%s: the error names what happened: \"%s\"", what,
        r.s->err.msg);
  printf("  %-13s -> %s: %s\n", what, wgllm_status_name(st), r.s->err.msg);
  /* the session works again, with and without a reset, and computes what it computed before */
  for (int reset = 1; reset >= 0; reset--) {
    if (reset) llm_session_reset(r.s);
    st = greedy(&r, &same);
    if (!reset) { /* continuing from where the last run left the cache: it must run, the ids are new */
      CHECK(st == WGLLM_OK, "%s: a generate continuing the session after recovery: %s", what, r.s->err.msg);
      continue;
    }
    CHECK(st == WGLLM_OK && same, "%s: after the error and a reset, generate gives %s%s", what, wgllm_status_name(st),
          st     ? r.s->err.msg
          : same ? ""
                 : " different tokens");
  }
  rig_close(&r);
}

static void device_loss(void) {
  rig r;
  if (!rig_open(&r)) return;
  int same = 0;
  CHECK(greedy(&r, &same) == WGLLM_OK && same, "loss: the first generate");
  gpu_force_loss(r.gpu, "forced by test_gpu_faults");
  double t0 = now_s();
  llm_session_reset(r.s);
  wgllm_status st = greedy(&r, &same);
  double dt = now_s() - t0;
  CHECK(st == WGLLM_ERR_DEVICE_LOST, "loss: generate returned %s: %s", wgllm_status_name(st), r.s->err.msg);
  printf("  device lost   -> %s in %.2f s: %s\n", wgllm_status_name(st), dt, r.s->err.msg);
  st = greedy(&r, &same);
  CHECK(st == WGLLM_ERR_DEVICE_LOST, "loss: a second generate returned %s", wgllm_status_name(st));
  llm_err err = {0};
  llm_session *s2 = NULL;
  llm_session_options so = {.ctx = 64};
  st = llm_session_create(r.m, &so, &s2, &err);
  CHECK(st != WGLLM_OK, "loss: a new session on a lost device was created");
  llm_session_free(s2);
  rig_close(&r); /* teardown of a lost device: no crash, no hang */
  /* and the process can start over: a new context, model and session generate the reference ids */
  rig again;
  if (!rig_open(&again)) return;
  CHECK(greedy(&again, &same) == WGLLM_OK && same, "loss: a new context after the loss does not generate: %s",
        again.s->err.msg);
  rig_close(&again);
}

/* seconds for reps 512 x 512 x 512 GEMMs submitted as one pass and waited for as one */
static double gemm_pass(gpu_context *g, gpu_buffer *x, gpu_buffer *w, gpu_buffer *y, int reps, wgllm_status *st,
                        llm_err *err) {
  gpu_recorder *rec = gpu_recorder_create(g, 0);
  op_weight W = {.type = OP_W_F32, .data = gpu_whole(w)};
  *st = WGLLM_OK;
  for (int i = 0; !*st && i < reps; i++)
    *st = op_matmul(rec, gpu_whole(x), &W, (gpu_view){0}, gpu_whole(y), 512, 512, 512);
  double t0 = now_s();
  if (!*st) *st = gpu_recorder_run(rec);
  if (!*st)
    *st = gpu_wait_idle(g, err);
  else
    llm_err_set(err, *st, "%s", gpu_recorder_error(rec));
  gpu_recorder_free(rec);
  return now_s() - t0;
}

/* One wait for work that takes about 50 ms on this device (sized from a first pass), with a timeout of 1 ms. A hung
   context's GPU handles are left to the process by design (gpu_wait_future), so LeakSanitizer is told not to
   count what this case allocates. */
static void wait_timeout(void) {
  llm_err err = {0};
  gpu_context *g = NULL;
  gpu_options o = {0};
  CHECK(gpu_create(&o, &g, &err) == WGLLM_OK, "timeout: %s", err.msg);
  if (!g) return;
  gpu_buffer *x = NULL, *w = NULL, *y = NULL;
  wgllm_status st = gpu_buffer_create(g, 512 * 512 * 4, "x", &x, &err);
  if (!st) st = gpu_buffer_create(g, 512 * 512 * 4, "w", &w, &err);
  if (!st) st = gpu_buffer_create(g, 512 * 512 * 4, "y", &y, &err);
  double t1 = st ? 0 : gemm_pass(g, x, w, y, 1, &st, &err);
  CHECK(!st, "timeout: a first pass: %s", err.msg);
  int reps = t1 > 0 ? (int)(0.05 / t1) + 1 : 1;
  if (reps > 4000) reps = 4000;
  g->wait_timeout_ms = 1;
  double dt = st ? 0 : gemm_pass(g, x, w, y, reps, &st, &err);
  CHECK(st == WGLLM_ERR_DEVICE_LOST && strstr(err.msg, "did not finish"), "timeout: a %d-GEMM pass returned %s: %s",
        reps, wgllm_status_name(st), err.msg);
  printf("  wait timeout  -> %s after %.3f s (%d GEMMs, one took %.4f s): %s\n", wgllm_status_name(st), dt, reps, t1,
         err.msg);
  st = gpu_check(g, &err);
  CHECK(st == WGLLM_ERR_DEVICE_LOST, "timeout: the context is not lost afterwards (%s)", wgllm_status_name(st));
  gpu_buffer_destroy(g, x);
  gpu_buffer_destroy(g, w);
  gpu_buffer_destroy(g, y);
  gpu_destroy(g); /* a hung context: host memory freed, its GPU handles left to the process */
}

/* err's message names the injected allocation: "allocating buffer "LABEL" of N bytes failed: injected failure of
   allocation k" (or the readback ring's), LABEL not empty */
static int names_allocation(const char *msg, uint64_t k) {
  char want[64];
  snprintf(want, sizeof want, "injected failure of allocation %llu", (unsigned long long)k);
  const char *q = strstr(msg, "allocating ");
  const char *l = q ? strchr(q, '"') : NULL;
  return q && l && l[1] != '"' && strstr(msg, " bytes") && strstr(msg, want);
}

/* For k = 1, 2, ...: the kth allocation of a model load fails, until a load takes fewer than k; then the same over a
   session's creation and a greedy generation on a loaded model. Each failure: WGLLM_ERR_OUT_OF_MEMORY, a message
   naming the allocation, and (the pool's free buffers dropped) as many buffers and bytes live as before the call. */
static void alloc_failures(void) {
  llm_err err = {0};
  gpu_context *g = NULL;
  CHECK(gpu_create(NULL, &g, &err) == WGLLM_OK, "alloc: %s", err.msg);
  if (!g) return;
  uint64_t bytes0 = g->bytes_live, bufs0 = g->buffers_live, k, n_load = 0, n_sess = 0;
  for (k = 1; k < 10000; k++) {
    llm_model *m = NULL;
    gpu_inject_alloc_failure(g, k);
    wgllm_status st = llm_model_load(g, "data/models/llama_gqa", NULL, &m, &err);
    uint64_t made = g->alloc_count;
    gpu_inject_alloc_failure(g, 0);
    if (!st && made < k) { /* every allocation of a load failed once */
      n_load = made;
      llm_model_free(m);
      break;
    }
    CHECK(st == WGLLM_ERR_OUT_OF_MEMORY && !m && names_allocation(err.msg, k), "alloc: load, allocation %llu: %s, %s",
          (unsigned long long)k, wgllm_status_name(st), err.msg);
    if (k == 1 || k % 8 == 0)
      printf("  load, allocation %-3llu -> %s: %s\n", (unsigned long long)k, wgllm_status_name(st), err.msg);
    llm_model_free(m);
    gpu_pool_trim(g);
    CHECK(g->bytes_live == bytes0 && g->buffers_live == bufs0,
          "alloc: a load failed at allocation %llu left %llu buffers, %llu bytes", (unsigned long long)k,
          (unsigned long long)(g->buffers_live - bufs0), (unsigned long long)(g->bytes_live - bytes0));
  }
  CHECK(n_load > 0, "alloc: the load never succeeded (%llu tries)", (unsigned long long)k);
  printf("  a load makes %llu allocations: each failed once, leaving nothing\n", (unsigned long long)n_load);
  gpu_destroy(g);

  rig r; /* a context of its own, loaded normally; its first session and generate make what is made once */
  if (!rig_open(&r)) return;
  int same = 0;
  CHECK(greedy(&r, &same) == WGLLM_OK && same, "alloc: the first generate");
  llm_session_free(r.s);
  r.s = NULL;
  gpu_pool_trim(r.gpu);
  bytes0 = r.gpu->bytes_live;
  bufs0 = r.gpu->buffers_live;
  llm_session_options so = {.ctx = 64};
  for (k = 1; k < 10000; k++) {
    gpu_inject_alloc_failure(r.gpu, k);
    wgllm_status st = llm_session_create(r.m, &so, &r.s, &err);
    const char *where = "session create", *msg = err.msg;
    if (!st) {
      where = "generate";
      st = greedy(&r, &same);
      msg = r.s->err.msg;
    }
    uint64_t made = r.gpu->alloc_count;
    gpu_inject_alloc_failure(r.gpu, 0);
    if (!st && made < k) {
      CHECK(same, "alloc: the generate with no failure gives other tokens");
      n_sess = made;
      llm_session_free(r.s);
      r.s = NULL;
      break;
    }
    CHECK(st == WGLLM_ERR_OUT_OF_MEMORY && names_allocation(msg, k), "alloc: %s, allocation %llu: %s, %s", where,
          (unsigned long long)k, wgllm_status_name(st), msg);
    if (k == 1 || k % 8 == 0)
      printf("  %s, allocation %-3llu -> %s: %s\n", where, (unsigned long long)k, wgllm_status_name(st), msg);
    if (r.s) { /* the session that failed a generate generates again, the reference ids */
      llm_session_reset(r.s);
      CHECK(greedy(&r, &same) == WGLLM_OK && same, "alloc: the generate after a failed one at allocation %llu: %s",
            (unsigned long long)k, r.s->err.msg);
    }
    llm_session_free(r.s);
    r.s = NULL;
    gpu_pool_trim(r.gpu);
    CHECK(r.gpu->bytes_live == bytes0 && r.gpu->buffers_live == bufs0,
          "alloc: a %s failed at allocation %llu left %llu buffers, %llu bytes", where, (unsigned long long)k,
          (unsigned long long)(r.gpu->buffers_live - bufs0), (unsigned long long)(r.gpu->bytes_live - bytes0));
  }
  CHECK(n_sess > 0, "alloc: the session never succeeded (%llu tries)", (unsigned long long)k);
  printf("  a session and its generate make %llu allocations: each failed once, leaving nothing\n",
         (unsigned long long)n_sess);
  /* and the same model then serves a session as before */
  CHECK(llm_session_create(r.m, &so, &r.s, &err) == WGLLM_OK, "alloc: a session after the failures: %s", err.msg);
  CHECK(r.s && greedy(&r, &same) == WGLLM_OK && same, "alloc: a generate after the failures");
  rig_close(&r);
}

int main(void) {
  printf("GPU faults during generation (llama_gqa):\n");
  error_then_recovery(0);
  error_then_recovery(1);
  device_loss();
  alloc_failures();
  LEAKS_EXPECTED_BEGIN();
  wait_timeout();
  LEAKS_EXPECTED_END();
  return th_finish("test_gpu_faults");
}
