/* Recorder, pool and platform tests: replay of a kept recording with per-step values read from GPU
   buffers, quarantine of pinned buffers, indirect dispatch, zero-grid refusal, pipeline cache reuse,
   error capture (a bad binding becomes a status, not an abort) and out-of-range allocation refusal, timing with a
   kernel left out; every kernel variant compiles, the developer ones (wgllm_dev) too. */
#include "dev_kernels.h"
#include "harness.h"
#include "ops.h"
#include <math.h>
#include <stdlib.h>
#include <string.h>

static void test_replay(void) {
  gpu_context *ctx = th_gpu();
  enum { N = 1000 };
  float a[N], b[N], got[N];
  th_rng r = {7};
  th_fill(&r, a, N, -1, 1);
  gpu_buffer *ga = th_upload(a, sizeof a), *gb = th_poisoned(sizeof b), *go = th_poisoned(sizeof got);
  gpu_recorder *rec = gpu_recorder_create(ctx, 1);
  CHECK(op_add(rec, gpu_whole(ga), gpu_whole(gb), gpu_whole(go), N, N) == WGLLM_OK, "record add");
  CHECK(op_mul(rec, gpu_whole(go), gpu_whole(gb), gpu_whole(ga), N, N) == WGLLM_OK, "record mul");
  size_t pipes_before = gpu_recorder_count(rec);
  for (int step = 0; step < 5; step++) {
    /* per-step value lives in a GPU buffer, written before each replay */
    for (int i = 0; i < N; i++)
      b[i] = (float)step + 0.5f * (float)i / N;
    gpu_write(ctx, gb, 0, b, sizeof b);
    float a_before[N];
    memcpy(a_before, a, sizeof a);
    CHECK(gpu_recorder_run(rec) == WGLLM_OK, "replay %d: %s", step, gpu_recorder_error(rec));
    th_download(ga, a, sizeof a);
    th_download(go, got, sizeof got);
    float want_o[N], want_a[N];
    for (int i = 0; i < N; i++) {
      want_o[i] = a_before[i] + b[i];
      want_a[i] = want_o[i] * b[i];
    }
    char what[32];
    snprintf(what, sizeof what, "replay %d add", step);
    th_compare(what, got, want_o, N, 0, 1e-7);
    snprintf(what, sizeof what, "replay %d mul", step);
    th_compare(what, a, want_a, N, 0, 1e-7);
  }
  CHECK(gpu_recorder_count(rec) == pipes_before, "replay must not add records");
  /* a one-shot recording refuses a second run */
  gpu_recorder *once = gpu_recorder_create(ctx, 0);
  op_fill_f32(once, gpu_whole(go), N, 1.0f);
  CHECK(gpu_recorder_run(once) == WGLLM_OK, "one-shot run");
  CHECK(gpu_recorder_run(once) != WGLLM_OK, "one-shot recording ran twice");
  gpu_recorder_free(once);
  gpu_recorder_free(rec);
  gpu_buffer_destroy(ctx, ga);
  gpu_buffer_destroy(ctx, gb);
  gpu_buffer_destroy(ctx, go);
}

/* gpu_recorder_flush: a one-shot recording submitted in parts (each with its own uniform blocks) computes what it
   computes whole; a flush with nothing new does nothing; a kept recording ignores it; a run recording refuses
   it; a flushed one cannot be timed */
static void test_flush(void) {
  gpu_context *ctx = th_gpu();
  enum { N = 1024 };
  for (int keep = 0; keep < 2; keep++) {
    gpu_buffer *a = th_poisoned(N * 4), *b = th_poisoned(N * 4), *c = th_poisoned(N * 4);
    gpu_recorder *r = gpu_recorder_create(ctx, keep);
    CHECK(op_fill_f32(r, gpu_whole(a), N, 2.0f) == WGLLM_OK, "fill a");
    CHECK(gpu_recorder_flush(r) == WGLLM_OK, "flush 1 (keep %d): %s", keep, gpu_recorder_error(r));
    CHECK(op_add(r, gpu_whole(a), gpu_whole(a), gpu_whole(c), N, N) == WGLLM_OK, "add");
    CHECK(op_fill_f32(r, gpu_whole(b), N, 5.0f) == WGLLM_OK, "fill b");
    CHECK(gpu_recorder_flush(r) == WGLLM_OK, "flush 2 (keep %d): %s", keep, gpu_recorder_error(r));
    CHECK(gpu_recorder_flush(r) == WGLLM_OK, "flush with nothing new (keep %d)", keep);
    CHECK(op_add_inplace(r, gpu_whole(c), gpu_whole(b), N, N) == WGLLM_OK, "add in place");
    CHECK(op_fill_f32(r, gpu_whole(a), N, 7.0f) == WGLLM_OK, "fill a again");
    CHECK(gpu_recorder_run(r) == WGLLM_OK, "run (keep %d): %s", keep, gpu_recorder_error(r));
    float got_c[N], got_a[N];
    th_download(c, got_c, sizeof got_c);
    th_download(a, got_a, sizeof got_a);
    int bad = 0;
    for (int i = 0; i < N; i++)
      bad += got_c[i] != 9.0f || got_a[i] != 7.0f;
    CHECK(!bad, "flushed recording (keep %d): %d of %d wrong (c[0] = %g want 9, a[0] = %g want 7)", keep, bad, N,
          got_c[0], got_a[0]);
    if (!keep) {
      gpu_recorder *r2 = gpu_recorder_create(ctx, 0);
      op_fill_f32(r2, gpu_whole(a), N, 1.0f);
      op_fill_f32(r2, gpu_whole(b), N, 1.0f);
      CHECK(gpu_recorder_flush(r2) == WGLLM_OK, "flush r2");
      op_fill_f32(r2, gpu_whole(c), N, 1.0f);
      op_add(r2, gpu_whole(a), gpu_whole(b), gpu_whole(c), N, N);
      CHECK(gpu_recorder_run(r2) == WGLLM_OK, "run r2: %s", gpu_recorder_error(r2));
      CHECK(gpu_recorder_flush(r2) == WGLLM_OK, "a flush with nothing new after the run is harmless");
      op_fill_f32(r2, gpu_whole(c), N, 3.0f);
      CHECK(gpu_recorder_flush(r2) != WGLLM_OK, "a flush of a record added after the run was accepted");
      gpu_recorder_free(r2);
      if (ctx->has_timestamps) {
        gpu_recorder *r3 = gpu_recorder_create(ctx, 0);
        op_fill_f32(r3, gpu_whole(a), N, 1.0f);
        gpu_recorder_flush(r3);
        double ns;
        CHECK(gpu_recorder_time(r3, &ns) != WGLLM_OK, "a flushed recording was timed");
        gpu_recorder_free(r3);
      }
    }
    gpu_recorder_free(r);
    gpu_buffer_destroy(ctx, a);
    gpu_buffer_destroy(ctx, b);
    gpu_buffer_destroy(ctx, c);
  }
}

/* gpu_recorder_time_without (wgllm bench --profile's in-stream column): the records of the named kernel are left out
   of the timed pass and the rest run as recorded; NULL or a name no record has leaves out nothing */
static void test_time_without(void) {
  gpu_context *ctx = th_gpu();
  if (!ctx->has_timestamps) {
    printf("test_recorder: gpu_recorder_time_without not checked: the device has no timestamp queries\n");
    return;
  }
  enum { N = 1024 };
  float ones[N], got[N];
  for (int i = 0; i < N; i++)
    ones[i] = 1.5f;
  gpu_buffer *a = th_poisoned(N * 4), *b = th_upload(ones, sizeof ones), *c = th_poisoned(N * 4);
  gpu_recorder *r = gpu_recorder_create(ctx, 1);
  CHECK(op_fill_f32(r, gpu_whole(a), N, 2.0f) == WGLLM_OK, "fill");
  CHECK(op_add(r, gpu_whole(b), gpu_whole(b), gpu_whole(c), N, N) == WGLLM_OK, "add");
  char fill_name[64];
  snprintf(fill_name, sizeof fill_name, "%s", gpu_recorder_record_name(r, 0));
  CHECK(strcmp(fill_name, gpu_recorder_record_name(r, 1)) != 0, "fill and add share the name %s", fill_name);
  double ns = -1;
  CHECK(gpu_recorder_time_without(r, fill_name, &ns) == WGLLM_OK && ns >= 0, "timed without %s: %s", fill_name,
        gpu_recorder_error(r));
  uint32_t words[N];
  th_download(a, words, sizeof words);
  int written = 0;
  for (int i = 0; i < N; i++)
    written += words[i] != 0x7fc00000u;
  CHECK(written == 0, "the left-out fill wrote %d of %d words", written, N);
  th_download(c, got, sizeof got);
  int bad = 0;
  for (int i = 0; i < N; i++)
    bad += got[i] != 3.0f;
  CHECK(bad == 0, "the add beside the left-out fill: %d of %d wrong (c[0] %g want 3)", bad, N, got[0]);
  CHECK(gpu_recorder_time_without(r, "no_such_kernel/f32", &ns) == WGLLM_OK, "timed without an unknown name");
  th_download(a, got, sizeof got);
  bad = 0;
  for (int i = 0; i < N; i++)
    bad += got[i] != 2.0f;
  CHECK(bad == 0, "nothing left out: the fill %d of %d wrong (a[0] %g want 2)", bad, N, got[0]);
  gpu_recorder_free(r);
  gpu_buffer_destroy(ctx, a);
  gpu_buffer_destroy(ctx, b);
  gpu_buffer_destroy(ctx, c);
}

static void test_quarantine(void) {
  gpu_context *ctx = th_gpu();
  llm_err err = {0};
  gpu_buffer *x, *y;
  CHECK(gpu_pool_acquire(ctx, 4096, "x", &x, &err) == WGLLM_OK, "acquire: %s", err.msg);
  /* outside a recording: released buffers are reused at once */
  gpu_pool_release(ctx, x);
  CHECK(gpu_pool_acquire(ctx, 4096, "y", &y, &err) == WGLLM_OK && y == x, "immediate reuse");
  /* while a kept recording references it: quarantined */
  gpu_recorder *rec = gpu_recorder_create(ctx, 1);
  op_fill_f32(rec, gpu_whole(y), 1024, 2.0f);
  gpu_pool_release(ctx, y);
  gpu_buffer *z;
  CHECK(gpu_pool_acquire(ctx, 4096, "z", &z, &err) == WGLLM_OK && z != y, "pinned buffer reused while recording lives");
  CHECK(gpu_recorder_run(rec) == WGLLM_OK, "run after release");
  gpu_recorder_free(rec);
  gpu_buffer *w;
  CHECK(gpu_pool_acquire(ctx, 4096, "w", &w, &err) == WGLLM_OK && w == y, "quarantined buffer back after free");
  gpu_pool_release(ctx, z);
  gpu_pool_release(ctx, w);
  /* released mid-recording and acquired again by the same recording (one-shot and kept): another buffer, and
     each op's result stands (a = 2, c = a + a, then the new buffer b = 5; c must read 4) */
  for (int keep = 0; keep < 2; keep++) {
    gpu_buffer *a, *b, *c;
    CHECK(gpu_pool_acquire(ctx, 4096, "a", &a, &err) == WGLLM_OK, "acquire a: %s", err.msg);
    CHECK(gpu_pool_acquire(ctx, 4096, "c", &c, &err) == WGLLM_OK, "acquire c: %s", err.msg);
    gpu_recorder *r2 = gpu_recorder_create(ctx, keep);
    op_fill_f32(r2, gpu_whole(a), 1024, 2.0f);
    op_add(r2, gpu_whole(a), gpu_whole(a), gpu_whole(c), 1024, 1024);
    gpu_pool_release(ctx, a);
    CHECK(gpu_pool_acquire(ctx, 4096, "b", &b, &err) == WGLLM_OK && b != a,
          "a buffer released mid-recording is handed to the same recording (keep %d)", keep);
    op_fill_f32(r2, gpu_whole(b), 1024, 5.0f);
    op_add_inplace(r2, gpu_whole(c), gpu_whole(b), 1024, 1024); /* c = 4 + 5 */
    CHECK(gpu_recorder_run(r2) == WGLLM_OK, "run: %s", gpu_recorder_error(r2));
    float got[1024];
    th_download(c, got, sizeof got);
    int bad = 0;
    for (int i = 0; i < 1024; i++)
      bad += got[i] != 9.0f;
    CHECK(!bad, "mid-recording release (keep %d): %d of 1024 wrong (c[0] = %g, want 9)", keep, bad, got[0]);
    gpu_recorder_free(r2);
    gpu_pool_release(ctx, b);
    gpu_pool_release(ctx, c);
  }
}

static void test_indirect_and_refusals(void) {
  gpu_context *ctx = th_gpu();
  enum { N = 777 };
  gpu_buffer *o = th_poisoned(N * 4);
  uint32_t args[3] = {(N + 255) / 256, 1, 1};
  gpu_buffer *ind = th_upload(args, sizeof args);
  struct {
    uint32_t n, bits, p0, p1;
  } p = {N, 0x40400000u /* 3.0f */, 0, 0};
  gpu_dispatch_desc d = {.kernel = "fill", .variant = "u32", .params = &p, .params_size = sizeof p, .n_bind = 1};
  d.bind[0] = gpu_whole(o);
  d.indirect = gpu_whole(ind);
  gpu_recorder *rec = gpu_recorder_create(ctx, 0);
  CHECK(gpu_record(rec, &d) == WGLLM_OK, "indirect record: %s", gpu_recorder_error(rec));
  th_run(rec);
  gpu_recorder_free(rec);
  float got[N], want[N];
  th_download(o, got, sizeof got);
  for (int i = 0; i < N; i++)
    want[i] = 3.0f;
  th_compare("indirect fill", got, want, N, 0, 0);

  /* zero-sized grid is refused at record time */
  d.indirect = (gpu_view){0};
  d.grid[0] = 0;
  d.grid[1] = 1;
  d.grid[2] = 1;
  rec = gpu_recorder_create(ctx, 0);
  CHECK(gpu_record(rec, &d) != WGLLM_OK && strstr(gpu_recorder_error(rec), "zero-sized"), "zero grid refused");
  gpu_recorder_free(rec);
  /* unknown kernel */
  d.kernel = "no_such_kernel";
  d.grid[0] = 1;
  rec = gpu_recorder_create(ctx, 0);
  CHECK(gpu_record(rec, &d) != WGLLM_OK && strstr(gpu_recorder_error(rec), "no_such_kernel"), "unknown kernel named");
  gpu_recorder_free(rec);
  /* a params block that does not mirror the kernel's WGSL Params is refused (sizes from kernelgen) */
  d.kernel = "fill";
  uint32_t saved = d.params_size;
  d.params_size = saved + 4;
  rec = gpu_recorder_create(ctx, 0);
  CHECK(gpu_record(rec, &d) != WGLLM_OK && strstr(gpu_recorder_error(rec), "WGSL Params"),
        "params block of the wrong size refused: %s", gpu_recorder_error(rec));
  gpu_recorder_free(rec);
  d.params_size = saved;
  CHECK(gpu_kernel_find("fill", "u32") && gpu_kernel_find("fill", "u32")->params_bytes == saved,
        "kernelgen measured the fill Params (%u bytes)", saved);
  /* bindings that do not match the kernel's WGSL declarations (kernelgen's list: "uw" for fill) are refused:
     a storage binding too many, a read_write binding stated as read-only, an access list of another length */
  CHECK(gpu_kernel_find("fill", "u32") && !strcmp(gpu_kernel_find("fill", "u32")->bindings, "uw"),
        "kernelgen listed fill's bindings as \"uw\": \"%s\"", gpu_kernel_find("fill", "u32")->bindings);
  d.bind[1] = gpu_whole(o);
  d.n_bind = 2;
  rec = gpu_recorder_create(ctx, 0);
  CHECK(gpu_record(rec, &d) != WGLLM_OK &&
            strstr(gpu_recorder_error(rec), "2 storage bindings given, its WGSL declares 1"),
        "a binding too many refused: %s", gpu_recorder_error(rec));
  gpu_recorder_free(rec);
  d.n_bind = 1;
  d.bind[1] = (gpu_view){0};
  d.access = "r";
  rec = gpu_recorder_create(ctx, 0);
  CHECK(gpu_record(rec, &d) != WGLLM_OK &&
            strstr(gpu_recorder_error(rec), "binding 0 (@binding(1)) given as read, its WGSL declares it read_write"),
        "a read_write binding stated as read refused: %s", gpu_recorder_error(rec));
  gpu_recorder_free(rec);
  d.access = "ww";
  rec = gpu_recorder_create(ctx, 0);
  CHECK(gpu_record(rec, &d) != WGLLM_OK && strstr(gpu_recorder_error(rec), "an access list of 2"),
        "an access list of the wrong length refused: %s", gpu_recorder_error(rec));
  gpu_recorder_free(rec);
  d.access = "w";
  d.grid[0] = 1; /* unchanged from above: the right list records */
  rec = gpu_recorder_create(ctx, 0);
  CHECK(gpu_record(rec, &d) == WGLLM_OK, "the declared bindings record: %s", gpu_recorder_error(rec));
  gpu_recorder_free(rec);
  /* a binding range past the buffer is refused with the buffer named */
  d.bind[0].size = o->size + 16;
  rec = gpu_recorder_create(ctx, 0);
  CHECK(gpu_record(rec, &d) != WGLLM_OK && strstr(gpu_recorder_error(rec), "binding 0"), "bad binding refused");
  gpu_recorder_free(rec);
  /* an allocation the device refuses is a status with a message */
  llm_err err = {0};
  gpu_buffer *huge;
  wgllm_status s = gpu_buffer_create(ctx, ctx->limits.maxBufferSize + 1024ull, "huge", &huge, &err);
  CHECK(s == WGLLM_ERR_OUT_OF_MEMORY && strstr(err.msg, "huge"), "huge buffer refused: %s", err.msg);
  gpu_buffer_destroy(ctx, ind);
  CHECK(gpu_check(ctx, &err) == WGLLM_OK, "no stray errors: %s", err.msg);
  /* an error Dawn reports asynchronously (uncaptured: a write past a buffer's end) becomes a status with
     Dawn's message, and the context keeps working afterwards */
  float junk[8] = {0};
  wgpuQueueWriteBuffer(ctx->queue, o->handle, o->size, junk, sizeof junk);
  s = gpu_check(ctx, &err);
  CHECK(s == WGLLM_ERR_GPU && strstr(err.msg, "validation"), "uncaptured error as a status: %s (%s)", err.msg,
        wgllm_status_name(s));
  CHECK(gpu_check(ctx, &err) == WGLLM_OK, "the error is reported once: %s", err.msg);
  gpu_buffer_destroy(ctx, o);
}

static void test_pipeline_cache(void) {
  gpu_context *ctx = th_gpu();
  llm_err err = {0};
  WGPUComputePipeline a, b, c;
  CHECK(gpu_pipeline_get(ctx, "fill", "u32", NULL, 0, &a, &err) == WGLLM_OK, "%s", err.msg);
  CHECK(gpu_pipeline_get(ctx, "fill", "u32", NULL, 0, &b, &err) == WGLLM_OK && a == b, "cached pipeline reused");
  CHECK(gpu_pipeline_get(ctx, "matvec", "f32", NULL, 0, &c, &err) == WGLLM_OK && c != a, "distinct pipeline");
  gpu_constant bogus = {"NOT_A_CONSTANT", 1.0};
  WGPUComputePipeline d;
  wgllm_status s = gpu_pipeline_get(ctx, "fill", "u32", &bogus, 1, &d, &err);
  CHECK(s == WGLLM_ERR_GPU && strstr(err.msg, "fill"), "bad override constant is an error with the kernel named: %s",
        err.msg);
  /* every generated variant compiles on this device (or is refused for a missing feature) */
  for (size_t i = 0; i < gpu_kernel_source_count; i++) {
    const gpu_kernel_source *k = &gpu_kernel_sources[i];
    WGPUComputePipeline p;
    s = gpu_pipeline_get(ctx, k->kernel, k->variant, NULL, 0, &p, &err);
    int refused_ok =
        s == WGLLM_ERR_UNSUPPORTED && (((k->requires & GPU_REQ_F16) && !ctx->has_f16) ||
                                       ((k->requires & GPU_REQ_SUBGROUP_MATRIX) && !ctx->has_subgroup_matrix));
    CHECK(s == WGLLM_OK || refused_ok, "kernel %s/%s: %s", k->kernel, k->variant, err.msg);
  }
  /* and so does every developer variant (wgllm_dev's table, through its source), none of them in the library's */
  for (size_t i = 0; i < dev_kernel_source_count; i++) {
    const gpu_kernel_source *k = &dev_kernel_sources[i];
    CHECK(!gpu_kernel_find(k->kernel, k->variant), "developer kernel %s/%s in the library's table", k->kernel,
          k->variant);
    WGPUComputePipeline p;
    s = gpu_pipeline_get_source(ctx, k, NULL, 0, &p, &err);
    int refused_ok =
        s == WGLLM_ERR_UNSUPPORTED &&
        (((k->requires & GPU_REQ_F16) && !ctx->has_f16) || ((k->requires & GPU_REQ_SUBGROUPS) && !ctx->has_subgroups) ||
         ((k->requires & GPU_REQ_SUBGROUP_MATRIX) && !ctx->has_subgroup_matrix));
    CHECK(s == WGLLM_OK || refused_ok, "developer kernel %s/%s: %s", k->kernel, k->variant, err.msg);
  }
  CHECK(dev_kernel_find(K_GEMV, V_GEMV_Q4_PROBE) != NULL, "the GEMV's probe variant in the developer table");
}

int main(void) {
  th_gpu();
  test_replay();
  test_flush();
  test_time_without();
  test_quarantine();
  test_indirect_and_refusals();
  test_pipeline_cache();
  th_gpu_done();
  return th_finish("test_recorder");
}
