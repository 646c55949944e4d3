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
/* the last warning logged, for the checks of what the library warns about */
static char g_last_warning[512];
static void keep_warning(wgllm_log_level level, const char *msg, void *user) {
  (void)user;
  if (level == WGLLM_LOG_WARN) snprintf(g_last_warning, sizeof g_last_warning, "%s", msg);
}
static uint32_t g_prefill_done, g_prefill_total;
static void on_prefill(uint32_t done, uint32_t total, void *user) {
  (void)user;
  CHECK(done > g_prefill_done && done <= total, "prefill progress %u of %u after %u", done, total, g_prefill_done);
  g_prefill_done = done;
  g_prefill_total = total;
}

/* on_text that appends to a buffer (and stops after stop_after calls when that is non-zero) */
typedef struct text_sink {
  char buf[4096];
  size_t len;
  int calls, stop_after;
} text_sink;
static int sink_text(const char *text, size_t len, void *user) {
  text_sink *t = user;
  if (t->len + len < sizeof t->buf) {
    memcpy(t->buf + t->len, text, len);
    t->len += len;
    t->buf[t->len] = 0;
  }
  t->calls++;
  return t->stop_after && t->calls >= t->stop_after;
}

/* Text is text (issue 27 item 5): strings carry their length (NUL bytes kept through tokenize, generate, stop
   strings and chat prompts), and special-token text inside a chat message's content is text unless the request
   asks for it to be parsed. */
static size_t count_id(const int32_t *ids, size_t n, int32_t id) {
  size_t c = 0;
  for (size_t i = 0; i < n; i++)
    c += ids[i] == id;
  return c;
}

static int has_bytes(const char *s, size_t n, const char *want, size_t wn) {
  for (size_t i = 0; i + wn <= n; i++)
    if (!memcmp(s + i, want, wn)) return 1;
  return 0;
}

static void check_text(wgllm_model *m) {
  const wgllm_vocab *v = wgllm_model_vocab(m);
  wgllm_session_params sp = wgllm_session_default_params();
  sp.context = 64;
  wgllm_session *s = NULL;
  CHECK(wgllm_session_create(m, &sp, &s) == WGLLM_OK, "text session: %s", wgllm_model_error(m));
  if (!s) return;
  static const char nul[] = "In\0 the beginning";
  const size_t nl = sizeof nul - 1;
  int32_t ids[64];
  size_t n = 0, nb = 0;
  char *back = NULL;
  size_t bl = 0;
  CHECK(wgllm_tokenize(m, nul, nl, 0, ids, 64, &n) == WGLLM_OK && n > 2 &&
            wgllm_vocab_detokenize(v, ids, n, &back, &bl) == WGLLM_OK && bl == nl && !memcmp(back, nul, nl),
        "a NUL byte is tokenized as the byte and comes back (%zu ids, %zu of %zu bytes)", n, bl, nl);
  wgllm_free(back);
  CHECK(wgllm_tokenize(m, nul, nl, 1, ids, 64, &nb) == WGLLM_OK, "tokenize with BOS: %s", wgllm_model_error(m));
  wgllm_generate_params gp = wgllm_generate_default_params();
  gp.max_tokens = 1;
  gp.temperature = 0;
  wgllm_generate_stats gs;
  wgllm_session_reset(s);
  CHECK(wgllm_generate_n(s, nul, nl, &gp, &gs) == WGLLM_OK && gs.prompt_tokens == nb,
        "wgllm_generate_n: the prompt past its NUL (%u tokens, want %zu): %s", gs.prompt_tokens, nb,
        wgllm_session_error(s));
  wgllm_session_reset(s);
  CHECK(wgllm_generate_n(s, nul, 0, &gp, &gs) == WGLLM_ERR_INVALID_ARG, "wgllm_generate_n: an empty prompt refused");

  /* a stop string holding a NUL is matched whole: its first byte alone (where strlen would cut it) stops at once */
  text_sink t = {0};
  gp.max_tokens = 4;
  gp.on_text = sink_text;
  gp.user = &t;
  wgllm_session_reset(s);
  CHECK(wgllm_generate(s, "In the beginning", &gp, &gs) == WGLLM_OK && t.len > 0, "stop reference: %s",
        wgllm_session_error(s));
  char stop[3] = {t.buf[0], 0, t.buf[0]};
  const char *stops[1] = {stop};
  size_t stop_len[1] = {3};
  gp.stop = stops;
  gp.n_stop = 1;
  gp.stop_len = stop_len;
  memset(&t, 0, sizeof t);
  wgllm_session_reset(s);
  CHECK(wgllm_generate(s, "In the beginning", &gp, &gs) == WGLLM_OK && gs.stop == WGLLM_STOP_MAX_TOKENS &&
            gs.generated_tokens == 4,
        "a stop string \"%c\\0%c\" of 3 bytes does not stop on \"%c\" (%s after %u tokens)", stop[0], stop[0], stop[0],
        gs.stop_reason, gs.generated_tokens);
  stop_len[0] = 1;
  memset(&t, 0, sizeof t);
  wgllm_session_reset(s);
  CHECK(wgllm_generate(s, "In the beginning", &gp, &gs) == WGLLM_OK && gs.stop == WGLLM_STOP_STRING,
        "the same stop string of 1 byte stops (%s)", gs.stop_reason);
  gp.stop = NULL;
  gp.n_stop = 0;
  gp.stop_len = NULL;
  gp.on_text = NULL;
  gp.user = NULL;

  /* chat prompts: "\u0000" in content is a NUL byte, kept */
  int32_t *cids = NULL;
  size_t cn = 0;
  const char *req = "{\"messages\": [{\"role\": \"user\", \"content\": \"x\\u0000y\"}], \"parse_special\": true}";
  CHECK(wgllm_chat_prompt(m, req, strlen(req), &cids, &cn, NULL) == WGLLM_OK, "chat prompt with a NUL: %s",
        wgllm_model_error(m));
  back = NULL;
  CHECK(cids && wgllm_vocab_detokenize(v, cids, cn, &back, &bl) == WGLLM_OK && has_bytes(back, bl, "x\0y", 3),
        "the chat prompt holds the content's NUL byte");
  wgllm_free(back);
  /* wgllm_chat: content_len carries it too (the same prompt as the JSON's, parsed as llama-cli's chat does) */
  wgllm_message msg = {"user", "x\0y", 3};
  wgllm_session_reset(s);
  gp.max_tokens = 1;
  char *reply = NULL;
  CHECK(wgllm_chat(s, &msg, 1, &gp, &reply, &gs) == WGLLM_OK && gs.prompt_tokens == cn,
        "wgllm_chat with content_len: %u prompt tokens, the JSON's %zu (%s)", gs.prompt_tokens, cn,
        wgllm_session_error(s));
  wgllm_free(reply);
  wgllm_free(cids);

  /* special-token text in content: text by default, its token with "parse_special": true */
  int32_t eos = wgllm_vocab_eos(v);
  size_t pl = 0;
  const char *piece = wgllm_vocab_piece(v, eos, &pl);
  CHECK(eos >= 0 && piece && pl > 0 && pl < 64, "the model's EOS text");
  wgllm_session_free(s);
  if (eos < 0 || !piece || pl >= 64) return;
  size_t cnt[2] = {0, 0}, len[2] = {0, 0};
  for (int ps = 0; ps < 2; ps++) {
    char body[256];
    snprintf(body, sizeof body, "{\"messages\": [{\"role\": \"user\", \"content\": \"a %.*s b\"}]%s}", (int)pl, piece,
             ps ? ", \"parse_special\": true" : "");
    cids = NULL;
    CHECK(wgllm_chat_prompt(m, body, strlen(body), &cids, &cn, NULL) == WGLLM_OK, "chat prompt %s: %s", body,
          wgllm_model_error(m));
    cnt[ps] = cids ? count_id(cids, cn, eos) : 0;
    len[ps] = cn;
    wgllm_free(cids);
  }
  CHECK(cnt[1] == cnt[0] + 1 && len[0] > len[1],
        "\"%.*s\" in content: text by default (%zu EOS ids in %zu), its token when parsed (%zu in %zu)", (int)pl, piece,
        cnt[0], len[0], cnt[1], len[1]);
  const char *badps = "{\"messages\": [{\"role\": \"user\", \"content\": \"x\"}], \"parse_special\": 1}";
  CHECK(wgllm_chat_prompt(m, badps, strlen(badps), &cids, &cn, NULL) == WGLLM_ERR_INVALID_ARG &&
            strstr(wgllm_model_error(m), "parse_special"),
        "'parse_special' not a bool: %s", wgllm_model_error(m));
}

/* The job API: stepped by the caller (one job, or several together) it gives wgllm_generate's text; a job
   freed before its end leaves the session usable; a repeated prompt reuses the cached prefix; chat prompts. */
/* batched: what the three jobs stepped together should report (1: batched steps, 0: none) */
static void check_jobs(wgllm_model *m, const char *label, int batched) {
  enum { NJ = 3 };
  const char *prompts[NJ] = {"In the beginning", "And God said, Let there be", "The LORD is my shepherd"};
  wgllm_session_params sp = wgllm_session_default_params();
  sp.context = 256;
  wgllm_session *ss[NJ] = {0};
  for (int i = 0; i < NJ; i++)
    CHECK(wgllm_session_create(m, &sp, &ss[i]) == WGLLM_OK, "job session %d: %s", i, wgllm_last_error());
  if (!ss[0] || !ss[1] || !ss[2]) return;
  static text_sink want[NJ], got[NJ];
  memset(want, 0, sizeof want);
  memset(got, 0, sizeof got);
  uint32_t want_n[NJ];
  int32_t ids[NJ][64];
  size_t nids[NJ];
  for (int i = 0; i < NJ; i++) {
    wgllm_generate_params gp = wgllm_generate_default_params();
    gp.max_tokens = 12 + 5 * i;
    gp.seed = 100 + i;
    gp.temperature = i == 0 ? 0.0f : 0.9f;
    gp.on_text = sink_text;
    gp.user = &want[i];
    wgllm_generate_stats gs;
    CHECK(wgllm_generate(ss[i], prompts[i], &gp, &gs) == WGLLM_OK, "reference %d: %s", i, wgllm_session_error(ss[i]));
    want_n[i] = gs.generated_tokens;
    CHECK(wgllm_tokenize(m, prompts[i], strlen(prompts[i]), 1, ids[i], 64, &nids[i]) == WGLLM_OK, "tokenize %d", i);
    wgllm_session_reset(ss[i]);
  }
  /* one job stepped alone */
  {
    wgllm_generate_params gp = wgllm_generate_default_params();
    gp.max_tokens = 12;
    gp.seed = 100;
    gp.temperature = 0.0f;
    gp.on_text = sink_text;
    gp.user = &got[0];
    wgllm_job *j = NULL;
    CHECK(wgllm_job_start(ss[0], ids[0], nids[0], &gp, &j) == WGLLM_OK && j, "job start: %s",
          wgllm_session_error(ss[0]));
    int done = 0, steps = 0;
    while (j && !done && steps < 100) {
      CHECK(wgllm_job_step(j, &done) == WGLLM_OK, "job step: %s", wgllm_job_error(j));
      steps++;
    }
    wgllm_generate_stats js;
    wgllm_job_stats(j, &js);
    size_t tl = 0;
    const char *jt = wgllm_job_text(j, &tl);
    CHECK(done && js.generated_tokens == want_n[0] && !strcmp(got[0].buf, want[0].buf) && tl == want[0].len &&
              !memcmp(jt, want[0].buf, tl),
          "a stepped job gives generate's text (%u tokens in %d steps, \"%s\" vs \"%s\")", js.generated_tokens, steps,
          got[0].buf, want[0].buf);
    CHECK(wgllm_job_step(j, &done) == WGLLM_OK && done, "a step on a done job does nothing");
    wgllm_job_free(j);
  }
  /* three jobs stepped together, started one after another (the later ones join while the first runs) */
  {
    wgllm_job *jobs[NJ] = {0};
    wgllm_generate_params gps[NJ];
    memset(got, 0, sizeof got);
    for (int i = 0; i < NJ; i++) {
      wgllm_session_reset(ss[i]);
      gps[i] = wgllm_generate_default_params();
      gps[i].max_tokens = 12 + 5 * i;
      gps[i].seed = 100 + i;
      gps[i].temperature = i == 0 ? 0.0f : 0.9f;
      gps[i].on_text = sink_text;
      gps[i].user = &got[i];
      if (batched) { /* speculating jobs take the batched step while others decode, and speculate alone */
        gps[i].spec_lookup = 3;
        if (i == NJ - 1) gps[i].draft_model = m; /* the model as its own draft: the last job ends alone */
      }
    }
    int started = 0, rounds = 0;
    for (; rounds < 200; rounds++) {
      if (started < NJ && (rounds == 0 || rounds == 2 || rounds == 3)) {
        CHECK(wgllm_job_start(ss[started], ids[started], nids[started], &gps[started], &jobs[started]) == WGLLM_OK,
              "job %d start: %s", started, wgllm_session_error(ss[started]));
        started++;
      }
      CHECK(wgllm_jobs_step(jobs, (size_t)started) == WGLLM_OK, "jobs step");
      int all = started == NJ;
      for (int i = 0; i < started; i++)
        all = all && wgllm_job_done(jobs[i]);
      if (all) break;
    }
    for (int i = 0; i < NJ; i++) {
      wgllm_generate_stats js;
      wgllm_job_stats(jobs[i], &js);
      CHECK(js.generated_tokens == want_n[i] && !strcmp(got[i].buf, want[i].buf),
            "%s: job %d stepped with others gives its own text (%u tokens, %u batched, \"%s\" vs \"%s\")", label, i,
            js.generated_tokens, js.batched_tokens, got[i].buf, want[i].buf);
      /* every job but the first's first steps (alone) and the last's last steps (the others done) is batched */
      CHECK(batched ? js.batched_tokens >= 5 : js.batched_tokens == 0, "%s: job %d had %u of %u tokens batched", label,
            i, js.batched_tokens, js.generated_tokens);
      if (batched && i == NJ - 1) /* its last tokens alone: verify steps with its drafts */
        CHECK(js.spec_steps > 0 && js.spec_accepted > 0,
              "%s: job %d speculated once alone (%u steps, %u of %u accepted)", label, i, js.spec_steps,
              js.spec_accepted, js.spec_drafted);
      wgllm_job_free(jobs[i]);
    }
    wgllm_job *mixed[2] = {NULL, NULL};
    CHECK(wgllm_jobs_step(mixed, 2) == WGLLM_ERR_INVALID_ARG, "NULL jobs are refused");
  }
  /* cancelled half-way: the session goes on, and a repeated prompt reuses the cached prefix */
  {
    wgllm_session_reset(ss[1]);
    text_sink t = {0};
    t.stop_after = 0;
    wgllm_generate_params gp = wgllm_generate_default_params();
    gp.max_tokens = 40;
    gp.temperature = 0.0f;
    gp.on_text = sink_text;
    gp.user = &t;
    wgllm_job *j = NULL;
    CHECK(wgllm_job_start(ss[1], ids[1], nids[1], &gp, &j) == WGLLM_OK, "job to cancel");
    for (int k = 0; j && k < 4; k++)
      wgllm_job_step(j, NULL);
    wgllm_job_free(j); /* not done: cancelled */
    CHECK(wgllm_session_cached_prefix(ss[1], ids[1], nids[1]) == nids[1], "the cache holds the prompt (%u of %zu)",
          wgllm_session_cached_prefix(ss[1], ids[1], nids[1]), nids[1]);
    text_sink t2 = {0};
    gp.user = &t2;
    gp.max_tokens = 12 + 5;
    gp.seed = 101;
    gp.temperature = 0.9f;
    wgllm_generate_stats js;
    int done = 0;
    CHECK(wgllm_job_start(ss[1], ids[1], nids[1], &gp, &j) == WGLLM_OK, "job after a cancel");
    while (j && !done)
      if (wgllm_job_step(j, &done)) break;
    wgllm_job_stats(j, &js);
    CHECK(done && js.cached_tokens == nids[1] - 1 && !strcmp(t2.buf, want[1].buf),
          "after a cancel: %u of %zu prompt tokens cached, the same text (\"%s\" vs \"%s\")", js.cached_tokens, nids[1],
          t2.buf, want[1].buf);
    wgllm_job_free(j);
    int32_t bad = 1 << 30;
    CHECK(wgllm_job_start(ss[1], &bad, 1, &gp, &j) == WGLLM_ERR_INVALID_ARG && !j && wgllm_session_error(ss[1])[0],
          "a job with an id outside the vocabulary is refused: %s", wgllm_session_error(ss[1]));
    CHECK(wgllm_job_start(ss[1], ids[1], 0, &gp, &j) == WGLLM_ERR_INVALID_ARG && !j, "an empty job is refused");
    wgllm_job *live = NULL, *second = NULL;
    CHECK(wgllm_job_start(ss[1], ids[1], nids[1], &gp, &live) == WGLLM_OK && wgllm_job_prefilling(live),
          "a started job is prefilling");
    CHECK(wgllm_job_start(ss[1], ids[1], nids[1], &gp, &second) == WGLLM_ERR_INVALID_ARG && !second,
          "a second job on a session whose job is not done is refused: %s", wgllm_session_error(ss[1]));
    wgllm_job_free(live);
    CHECK(wgllm_job_start(ss[1], ids[1], nids[1], &gp, &second) == WGLLM_OK, "after the free, a job starts");
    wgllm_job_free(second);
  }
  /* a long prompt prefills a chunk a wgllm_jobs_step call: the job already decoding gets a token each call
     meanwhile, and both texts are what they are alone */
  {
    wgllm_session_params cp = wgllm_session_default_params();
    cp.context = 256;
    cp.prefill_chunk = 16;
    wgllm_session *ls = NULL;
    CHECK(wgllm_session_create(m, &cp, &ls) == WGLLM_OK, "chunked session: %s", wgllm_last_error());
    const char *lp = "And God said, Let there be light: and there was light. And God saw the light, that it was "
                     "good: and God divided the light from the darkness. And God called the light Day";
    int32_t lids[128];
    size_t ln = 0;
    CHECK(wgllm_tokenize(m, lp, strlen(lp), 1, lids, 128, &ln) == WGLLM_OK && ln > 40, "long prompt of %zu tokens", ln);
    text_sink lw = {0}, lg = {0}, og = {0};
    wgllm_generate_params gp = wgllm_generate_default_params();
    gp.max_tokens = 10;
    gp.temperature = 0.0f;
    gp.on_text = sink_text;
    gp.user = &lw;
    CHECK(ls && wgllm_generate(ls, lp, &gp, NULL) == WGLLM_OK, "long reference: %s", wgllm_session_error(ls));
    wgllm_session_reset(ls);
    wgllm_session_reset(ss[0]);
    wgllm_generate_params op = gp;
    op.max_tokens = 30;
    op.user = &og;
    gp.user = &lg;
    wgllm_job *two[2] = {NULL, NULL};
    CHECK(wgllm_job_start(ss[0], ids[0], nids[0], &op, &two[0]) == WGLLM_OK, "short job");
    wgllm_jobs_step(two, 1); /* prefilled */
    wgllm_jobs_step(two, 1); /* decoding */
    CHECK(ls && wgllm_job_start(ls, lids, ln, &gp, &two[1]) == WGLLM_OK, "long job");
    int during = 0, calls = 0;
    wgllm_generate_stats a, b;
    for (; two[1] && calls < 200 && !(wgllm_job_done(two[0]) && wgllm_job_done(two[1])); calls++) {
      wgllm_job_stats(two[1], &b);
      int prefilling = b.generated_tokens == 0;
      wgllm_job_stats(two[0], &a);
      uint32_t before = a.generated_tokens;
      CHECK(wgllm_jobs_step(two, 2) == WGLLM_OK, "jobs step with a prefill");
      wgllm_job_stats(two[0], &a);
      if (prefilling && a.generated_tokens > before) during++;
    }
    uint32_t chunks = (uint32_t)((ln + 15) / 16);
    CHECK(during + 1 >= (int)chunks, "the short job decoded %d tokens during the long one's %u chunks", during, chunks);
    CHECK(!strcmp(lg.buf, lw.buf), "the long job's text is its own (\"%s\" vs \"%s\")", lg.buf, lw.buf);
    CHECK(!strncmp(og.buf, want[0].buf, strlen(want[0].buf)) || !strncmp(want[0].buf, og.buf, strlen(og.buf)),
          "the short job's text is its own (\"%s\" vs \"%s\")", og.buf, want[0].buf);
    wgllm_job_free(two[0]);
    wgllm_job_free(two[1]);
    wgllm_session_free(ls);
  }
  /* chat prompts from OpenAI JSON */
  {
    int32_t *cids = NULL;
    size_t cn = 0;
    char *text = NULL;
    const char *req = "{\"messages\": [{\"role\": \"user\", \"content\": \"Who made the light?\"}]}";
    CHECK(wgllm_chat_prompt(m, req, strlen(req), &cids, &cn, &text) == WGLLM_OK && cn > 3 && text &&
              strstr(text, "Who made the light?"),
          "chat prompt: %s", wgllm_model_error(m));
    wgllm_free(cids);
    wgllm_free(text);
    const char *bad[] = {"{\"messages\": [", "[1, 2]", "{\"messages\": []}", "{\"messages\": [{\"role\": 5}]}",
                         "{\"messages\": [{\"role\": \"user\", \"content\": \"x\"}], \"tools\": 3}"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
      cids = NULL;
      wgllm_status st = wgllm_chat_prompt(m, bad[i], strlen(bad[i]), &cids, &cn, &text);
      CHECK(st != WGLLM_OK && !cids && wgllm_model_error(m)[0], "bad chat request %zu refused: %s", i,
            wgllm_model_error(m));
    }
    /* the JSON's shape checked before it is parsed: 200 levels of nesting, 300,000 values */
    size_t dn = 200, vn = 300000;
    char *deep = malloc(dn * 2 + 128), *wide = malloc(vn * 2 + 128);
    size_t k = (size_t)sprintf(deep, "{\"messages\": [{\"role\": \"user\", \"content\": \"x\", \"a\": ");
    for (size_t i = 0; i < dn; i++)
      deep[k++] = '[';
    for (size_t i = 0; i < dn; i++)
      deep[k++] = ']';
    k += (size_t)sprintf(deep + k, "}]}");
    CHECK(wgllm_chat_prompt(m, deep, k, &cids, &cn, &text) == WGLLM_ERR_INVALID_ARG &&
              strstr(wgllm_model_error(m), "deep"),
          "a chat request nested 200 deep refused naming its depth: %s", wgllm_model_error(m));
    k = (size_t)sprintf(wide, "{\"messages\": [{\"role\": \"user\", \"content\": \"x\"}], \"a\": [0");
    for (size_t i = 1; i < vn; i++) {
      wide[k++] = ',';
      wide[k++] = '0';
    }
    k += (size_t)sprintf(wide + k, "]}");
    CHECK(wgllm_chat_prompt(m, wide, k, &cids, &cn, &text) == WGLLM_ERR_INVALID_ARG &&
              strstr(wgllm_model_error(m), "262144"),
          "a chat request of 300,000 values refused naming the bound: %s", wgllm_model_error(m));
    free(deep);
    free(wide);
  }
  for (int i = 0; i < NJ; i++)
    wgllm_session_free(ss[i]);
}

static size_t argmax(const float *v, size_t n) {
  size_t b = 0;
  for (size_t i = 1; i < n; i++)
    if (v[i] > v[b]) b = i;
  return b;
}

/* The KV pool through the public API: sessions with kv_pool set, jobs sharing a system prompt's prefix, joining at
   different calls of wgllm_jobs_step, each giving the text it gives alone on a session of its own, later prompts
   taking the shared prefix from the pool (cached_tokens); the pool's statistics; the refusals (no pool, a remake
   while sessions are on it, an unknown kv_type). */
static void check_kv_pool(wgllm_model *m) {
  enum { NJ = 5 };
  const char *system = "In the beginning God created the heaven and the earth. And the earth was without form, and "
                       "void; and darkness was upon the face of the deep. ";
  const char *tails[NJ] = {"And God said", "And the evening", "Let there be light", "And God saw", "Let the waters"};
  wgllm_session_params sp = wgllm_session_default_params();
  sp.context = 256;
  sp.kv_pool = 1;
  wgllm_session *ss[NJ] = {0};
  CHECK(wgllm_session_create(m, &sp, &ss[0]) == WGLLM_ERR_INVALID_ARG && strstr(wgllm_last_error(), "no KV pool"),
        "kv_pool without a pool is refused: %s", wgllm_last_error());
  wgllm_kv_pool_params pp = {.tokens = NJ * 256, .max_context = 256, .kv_type = WGLLM_KV_F16};
  pp.kv_type = (wgllm_kv_type)7;
  CHECK(wgllm_model_kv_pool(m, &pp) == WGLLM_ERR_INVALID_ARG, "an unknown kv_type is refused");
  pp.kv_type = WGLLM_KV_F16;
  CHECK(wgllm_model_kv_pool(m, &pp) == WGLLM_OK, "pool: %s", wgllm_model_error(m));
  wgllm_kv_pool_stats st0;
  CHECK(wgllm_model_kv_pool_stats(m, &st0) == WGLLM_OK && st0.blocks * st0.block_tokens >= NJ * 256 &&
            st0.available_blocks == st0.blocks && st0.max_context == 256 && st0.bytes > 0,
        "pool stats: %u blocks of %u, %u available", st0.blocks, st0.block_tokens, st0.available_blocks);
  int32_t ids[NJ][128];
  size_t nids[NJ];
  static text_sink want[NJ], got[NJ];
  memset(want, 0, sizeof want);
  memset(got, 0, sizeof got);
  wgllm_generate_params gps[NJ];
  for (int i = 0; i < NJ; i++) {
    char prompt[512];
    snprintf(prompt, sizeof prompt, "%s%s", system, tails[i]);
    CHECK(wgllm_tokenize(m, prompt, strlen(prompt), 1, ids[i], 128, &nids[i]) == WGLLM_OK && nids[i] < 128,
          "tokenize %d", i);
    gps[i] = wgllm_generate_default_params();
    gps[i].max_tokens = 10 + 4 * i;
    gps[i].seed = 300 + i;
    gps[i].temperature = i % 2 ? 0.9f : 0.0f;
    gps[i].ignore_eos = 1;
    gps[i].on_text = sink_text;
  }
  /* alone, each on a session with its own f16 cache */
  wgllm_session_params own = sp;
  own.kv_pool = 0;
  own.kv_type = WGLLM_KV_F16;
  for (int i = 0; i < NJ; i++) {
    wgllm_session *s = NULL;
    wgllm_job *j = NULL;
    CHECK(wgllm_session_create(m, &own, &s) == WGLLM_OK, "own session: %s", wgllm_last_error());
    gps[i].user = &want[i];
    int done = 0;
    if (s && wgllm_job_start(s, ids[i], nids[i], &gps[i], &j) == WGLLM_OK)
      while (!done && wgllm_job_step(j, &done) == WGLLM_OK) {
      }
    wgllm_job_free(j);
    wgllm_session_free(s);
  }
  /* together on the pool: job i starts at call 2 i, so later prompts find the system prompt's blocks */
  for (int i = 0; i < NJ; i++)
    CHECK(wgllm_session_create(m, &sp, &ss[i]) == WGLLM_OK, "pool session %d: %s", i, wgllm_last_error());
  CHECK(wgllm_model_kv_pool(m, &pp) == WGLLM_ERR_INVALID_ARG && strstr(wgllm_model_error(m), "sessions"),
        "a remake while sessions are on the pool is refused: %s", wgllm_model_error(m));
  wgllm_job *jobs[NJ] = {0};
  int started = 0;
  for (int call = 0; call < 300; call++) {
    if (started < NJ && call == 2 * started) {
      gps[started].user = &got[started];
      CHECK(wgllm_job_start(ss[started], ids[started], nids[started], &gps[started], &jobs[started]) == WGLLM_OK,
            "pool job %d: %s", started, wgllm_session_error(ss[started]));
      started++;
    }
    CHECK(wgllm_jobs_step(jobs, (size_t)started) == WGLLM_OK, "pool jobs step");
    int all = started == NJ;
    for (int i = 0; i < started; i++)
      all = all && wgllm_job_done(jobs[i]);
    if (all) break;
  }
  uint32_t cached = 0, batched = 0;
  for (int i = 0; i < NJ; i++) {
    wgllm_generate_stats js;
    wgllm_job_stats(jobs[i], &js);
    CHECK(wgllm_job_done(jobs[i]) && !strcmp(got[i].buf, want[i].buf) && got[i].len == want[i].len,
          "pool job %d gives its text alone (\"%s\" vs \"%s\")", i, got[i].buf, want[i].buf);
    if (i > 0) cached += js.cached_tokens;
    batched += js.batched_tokens;
    wgllm_job_free(jobs[i]);
  }
  CHECK(cached >= 16 * (NJ - 1), "later prompts took the system prompt's blocks from the pool (%u tokens)", cached);
  CHECK(batched > 0, "pool jobs were batched (%u tokens)", batched);
  wgllm_kv_pool_stats st1;
  CHECK(wgllm_model_kv_pool_stats(m, &st1) == WGLLM_OK && st1.sessions == NJ && st1.available_blocks < st1.blocks,
        "the sessions hold their blocks (%u of %u available)", st1.available_blocks, st1.blocks);
  for (int i = 0; i < NJ; i++)
    wgllm_session_free(ss[i]);
  CHECK(wgllm_model_kv_pool_stats(m, &st1) == WGLLM_OK && st1.available_blocks == st1.blocks && st1.sessions == 0 &&
            st1.cached_blocks > 0,
        "every block back after the sessions, the published prompts' cached (%u of %u, %u cached)",
        st1.available_blocks, st1.blocks, st1.cached_blocks);
  CHECK(!strcmp(wgllm_status_name(WGLLM_ERR_KV_FULL), "WGLLM_ERR_KV_FULL"), "WGLLM_ERR_KV_FULL has its name");
}

/* on_text into a buffer */
static int grab(const char *t, size_t len, void *user) {
  char *b = user;
  size_t have = strlen(b);
  if (have + len < 4096) {
    memcpy(b + have, t, len);
    b[have + len] = 0;
  }
  return 0;
}

/* Constrained decoding, logprobs and the reply parser through the public API: a JSON schema's reply is its object,
   ending with WGLLM_STOP_GRAMMAR or closed by the token limit; a GBNF reply is the sentence; a grammar that does not
   parse or a schema keyword outside the support is refused naming where; a job's logprobs, one record a generated
   token, its token the generated one, log probabilities at most 0 and the top ones in order; the reply parser turns
   a Hermes call into a tool_calls delta (the default model has no template: the named chatml's format) */
static void check_constrained(wgllm_model *m) {
  wgllm_grammar *g = NULL;
  CHECK(wgllm_grammar_create(m, WGLLM_GRAMMAR_GBNF, "root ::= (\"a\"", 14, &g) == WGLLM_ERR_INVALID_ARG && !g &&
            strstr(wgllm_last_error(), "1:"),
        "a GBNF that does not parse: %s", wgllm_last_error());
  const char *pat = "{\"type\": \"string\", \"pattern\": \"a+\"}";
  CHECK(wgllm_grammar_create(m, WGLLM_GRAMMAR_JSON_SCHEMA, pat, strlen(pat), &g) == WGLLM_ERR_UNSUPPORTED &&
            strstr(wgllm_last_error(), "/pattern"),
        "a schema's pattern: %s", wgllm_last_error());
  const char *schema = "{\"type\": \"object\", \"properties\": {\"n\": {\"type\": \"integer\", \"minimum\": 0, "
                       "\"maximum\": 9}, \"ok\": {\"type\": \"boolean\"}}, \"required\": [\"n\", \"ok\"]}";
  CHECK(wgllm_grammar_create(m, WGLLM_GRAMMAR_JSON_SCHEMA, schema, strlen(schema), &g) == WGLLM_OK && g, "schema: %s",
        wgllm_last_error());
  wgllm_session_params sp = wgllm_session_default_params();
  sp.context = 256;
  wgllm_session *s = NULL;
  CHECK(wgllm_session_create(m, &sp, &s) == WGLLM_OK, "session: %s", wgllm_last_error());
  char buf[4096] = "";
  wgllm_generate_params gp = wgllm_generate_default_params();
  gp.max_tokens = 40;
  gp.seed = 11;
  gp.grammar = g;
  gp.logprobs = 1;
  gp.top_logprobs = 3;
  gp.on_text = grab;
  gp.user = buf;
  int32_t ids[16];
  size_t n = 0;
  wgllm_tokenize(m, "The answer:", 11, 1, ids, 16, &n);
  wgllm_job *j = NULL;
  CHECK(s && wgllm_job_start(s, ids, n, &gp, &j) == WGLLM_OK, "job: %s", wgllm_session_error(s));
  int done = 0;
  while (j && !done && wgllm_job_step(j, &done) == WGLLM_OK) {
  }
  wgllm_generate_stats st;
  if (j) wgllm_job_stats(j, &st);
  const char *json = strchr(buf, '{');
  CHECK(j && json &&
            (st.stop == WGLLM_STOP_GRAMMAR || st.stop == WGLLM_STOP_END_OF_GENERATION ||
             st.stop == WGLLM_STOP_MAX_TOKENS) &&
            strstr(json, "\"n\"") && strstr(json, "\"ok\"") && strrchr(json, '}'),
        "the schema's object: '%s' (stop %s)", buf, j ? st.stop_reason : "-");
  wgllm_token_logprobs lp[64];
  size_t got = j ? wgllm_job_logprobs(j, 0, lp, 64) : 0;
  int lp_ok = got == st.generated_tokens && got > 0;
  for (size_t k = 0; lp_ok && k < got; k++) {
    lp_ok = lp[k].logprob <= 0 && lp[k].n_top == 3 && lp[k].top_logprobs[0] >= lp[k].top_logprobs[1] &&
            lp[k].top_logprobs[1] >= lp[k].top_logprobs[2] && lp[k].top_logprobs[0] <= 0;
  }
  CHECK(lp_ok, "logprobs: %zu records for %u tokens, each at most 0, the top 3 in order", got, st.generated_tokens);
  CHECK(!j || wgllm_job_logprobs(j, got, lp, 4) == 0, "no logprobs past the tokens generated");
  wgllm_job_free(j);
  /* GBNF, and a reply parser */
  wgllm_grammar *yn = NULL;
  const char *gbnf = "root ::= \" The answer is \" (\"yes\" | \"no\") \".\"";
  CHECK(wgllm_grammar_create(m, WGLLM_GRAMMAR_GBNF, gbnf, strlen(gbnf), &yn) == WGLLM_OK, "gbnf: %s",
        wgllm_last_error());
  buf[0] = 0;
  gp = wgllm_generate_default_params();
  gp.max_tokens = 20;
  gp.seed = 3;
  gp.grammar = yn;
  gp.on_text = grab;
  gp.user = buf;
  CHECK(s && wgllm_generate(s, "Is it so?", &gp, &st) == WGLLM_OK &&
            (!strcmp(buf, " The answer is yes.") || !strcmp(buf, " The answer is no.")) &&
            st.stop == WGLLM_STOP_GRAMMAR,
        "the GBNF's sentence: '%s'", buf);
  wgllm_grammar_free(yn);
  wgllm_session_free(s);
  wgllm_grammar_free(g);
  CHECK(!strcmp(wgllm_model_tool_format(m), "none") || !strcmp(wgllm_model_tool_format(m), "hermes"),
        "the default model's tool format: %s", wgllm_model_tool_format(m));
}

static void check_reply_parser(void) {
  wgllm_model_params mp = wgllm_model_default_params();
  mp.chat_template = "chatml";
  wgllm_model *m = NULL;
  CHECK(wgllm_model_create(MODEL, &mp, &m) == WGLLM_OK, "model with chatml: %s", wgllm_last_error());
  if (!m) return;
  CHECK(!strcmp(wgllm_model_tool_format(m), "hermes"), "chatml's tool format: %s", wgllm_model_tool_format(m));
  const char *names[] = {"get_weather"};
  wgllm_reply_options o = {
      .parse_tools = 1, .tool_names = names, .n_tool_names = 1, .split_reasoning = 1, .id_seed = 5};
  wgllm_reply_parser *p = NULL;
  CHECK(wgllm_reply_parser_create(m, &o, &p) == WGLLM_OK, "reply parser: %s", wgllm_last_error());
  const char *reply = "Let me check.<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\"}}\n"
                      "</tool_call>";
  char all[2048] = "", content[256] = ""; /* the deltas, and their contents joined ({"content":"..."} ones) */
  for (size_t i = 0, len = strlen(reply); p && i < len; i += 5) { /* pieces of 5 bytes */
    char *d = NULL;
    size_t k = len - i < 5 ? len - i : 5;
    CHECK(wgllm_reply_parser_push(p, reply + i, k, &d) == WGLLM_OK, "push");
    if (d && strlen(all) + strlen(d) < sizeof all) strcat(all, d);
    if (d && !strncmp(d, "{\"content\":\"", 12) && strlen(content) + strlen(d) < sizeof content)
      strncat(content, d + 12, strlen(d) - 14); /* the text between {"content":" and "} */
    wgllm_free(d);
  }
  char *d = NULL;
  CHECK(p && wgllm_reply_parser_finish(p, &d) == WGLLM_OK, "finish");
  if (d && strlen(all) + strlen(d) < sizeof all) strcat(all, d);
  wgllm_free(d);
  CHECK(!strcmp(content, "Let me check."), "the content deltas join to '%s'", content);
  /* OpenAI's stream form: the call's start once (id, type, name, arguments ""), then its arguments in fragments
     (the pieces of 5 bytes cut them), which join to the compact arguments */
  const char *start = "\"type\":\"function\",\"function\":{\"name\":\"get_weather\",\"arguments\":\"\"}}",
             *frag = "{\"index\":0,\"function\":{\"arguments\":\"";
  const char *first_start = strstr(all, start), *first_frag = strstr(all, frag);
  char args[256] = "";
  int n_frags = 0;
  for (const char *q = first_frag; q; q = strstr(q, frag), n_frags++) { /* each fragment's string, unescaped */
    q += strlen(frag);
    size_t l = strlen(args);
    for (; *q && *q != '"' && l + 1 < sizeof args; q++)
      args[l++] = *q == '\\' ? *++q : *q;
    args[l] = 0;
  }
  CHECK(first_start && !strstr(first_start + 1, start) && strstr(all, "{\"index\":0,\"id\":\"call_") &&
            first_frag > first_start && n_frags >= 2 && !strcmp(args, "{\"city\":\"Paris\"}") &&
            !strstr(all, "tool_call>"),
        "the deltas (%d fragments joined to %s): %s", n_frags, args, all);
  wgllm_reply_parser_free(p);
  char *gbnf = NULL;
  const char *tools =
      "[{\"type\": \"function\", \"function\": {\"name\": \"get_weather\", \"parameters\": "
      "{\"type\": \"object\", \"properties\": {\"city\": {\"type\": \"string\"}}, \"required\": [\"city\"]}}}]";
  CHECK(wgllm_model_tool_call_grammar(m, tools, strlen(tools), NULL, &gbnf) == WGLLM_OK && gbnf &&
            strstr(gbnf, "<tool_call>"),
        "tool_choice's grammar: %s", gbnf ? gbnf : wgllm_last_error());
  wgllm_free(gbnf);
  CHECK(wgllm_model_tool_call_grammar(m, tools, strlen(tools), "nope", &gbnf) == WGLLM_ERR_INVALID_ARG &&
            strstr(wgllm_last_error(), "nope"),
        "a function not among the tools: %s", wgllm_last_error());
  const char *reft = "[{\"type\": \"function\", \"function\": {\"name\": \"f\", \"parameters\": {\"$ref\": "
                     "\"#/$defs/a\", \"$defs\": {\"a\": {\"type\": \"object\"}}}}}]";
  CHECK(wgllm_model_tool_call_grammar(m, reft, strlen(reft), NULL, &gbnf) == WGLLM_ERR_UNSUPPORTED &&
            strstr(wgllm_last_error(), "$ref"),
        "parameters with a $ref: %s", wgllm_last_error());
  wgllm_model_free(m);
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
  int32_t fim[3];
  CHECK(wgllm_vocab_fim_tokens(v, fim) == WGLLM_ERR_UNSUPPORTED && strstr(wgllm_vocab_error(v), "fill-in-the-middle"),
        "the default model has no fill-in-the-middle tokens, said: %s", wgllm_vocab_error(v));
  wgllm_vocab_free(v);
  /* Qwen 3's tokenizer (scripts/fetch_tokenizers.sh) has Qwen2.5-Coder's markers */
  wgllm_vocab *qv = NULL;
  if (wgllm_vocab_load("../third_party/tokenizers/qwen3/tokenizer.json", &qv) == WGLLM_OK) {
    const char *markers[3] = {"<|fim_prefix|>", "<|fim_suffix|>", "<|fim_middle|>"};
    CHECK(wgllm_vocab_fim_tokens(qv, fim) == WGLLM_OK, "qwen3: fill-in-the-middle tokens: %s", wgllm_vocab_error(qv));
    for (int k = 0; k < 3; k++) {
      size_t ml = 0;
      const char *piece = wgllm_vocab_piece(qv, fim[k], &ml);
      CHECK(piece && ml == strlen(markers[k]) && !memcmp(piece, markers[k], ml), "qwen3: marker %d is %s (id %d)", k,
            markers[k], fim[k]);
    }
    wgllm_vocab_free(qv);
  } else
    CHECK(0, "qwen3's tokenizer: %s (scripts/fetch_tokenizers.sh)", wgllm_last_error());
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

  /* the defaults are the CLI's (llama.cpp's): repeat penalty off, a random seed, the model's trained context; a
     context beyond the trained length is warned about through the log */
  {
    wgllm_generate_params dp = wgllm_generate_default_params();
    CHECK(dp.repeat_penalty == 1.0f && dp.seed == WGLLM_SEED_RANDOM, "default repeat_penalty %g, seed %u",
          dp.repeat_penalty, dp.seed);
    wgllm_session *ds = NULL;
    wgllm_set_log(keep_warning, NULL);
    g_last_warning[0] = 0;
    CHECK(wgllm_session_create(m, NULL, &ds) == WGLLM_OK && wgllm_session_context(ds) == info.train_context &&
              info.train_context == 512 && !g_last_warning[0],
          "default context %u (trained %u), warning \"%s\"", wgllm_session_context(ds), info.train_context,
          g_last_warning);
    wgllm_session_free(ds);
    wgllm_session_params lp = wgllm_session_default_params();
    lp.context = 1024;
    CHECK(wgllm_session_create(m, &lp, &ds) == WGLLM_OK && wgllm_session_context(ds) == 1024 &&
              strstr(g_last_warning, "a context of 1024 tokens is more than the 512 tokens the model was trained on"),
          "a context over the trained length: warning \"%s\"", g_last_warning);
    wgllm_session_free(ds);
    wgllm_set_log(NULL, NULL);
    CHECK(wgllm_session_context(NULL) == 0, "wgllm_session_context(NULL)");
  }

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
  check_text(m);
  /* presence / frequency penalties: off by default, [-2, 2] and finite, the error naming the field */
  CHECK(gp.presence_penalty == 0 && gp.frequency_penalty == 0, "the additive penalties are off by default");
  const float pens[] = {2.5f, -2.01f, NAN, INFINITY};
  for (int i = 0; i < 8; i++) {
    wgllm_generate_params bp = gp;
    *(i < 4 ? &bp.presence_penalty : &bp.frequency_penalty) = pens[i % 4];
    const char *name = i < 4 ? "presence_penalty" : "frequency_penalty";
    CHECK(wgllm_generate(s, "In the", &bp, NULL) == WGLLM_ERR_INVALID_ARG && strstr(wgllm_session_error(s), name),
          "%s %g is refused: %s", name, pens[i % 4], wgllm_session_error(s));
  }
  /* temperature and repeat_penalty divide logits: NaN, infinities, negatives and values under 1e-6 (0 or a
     denormal as a float: a request's 1e-82 or 1e-40) would make infinities of finite logits; top_p/min_p NaN */
  {
    const struct {
      int field; /* 0 temperature, 1 repeat_penalty, 2 top_p, 3 min_p */
      float v;
      const char *name;
    } bad[] = {{0, NAN, "temperature"},
               {0, INFINITY, "temperature"},
               {0, -1, "temperature"},
               {0, 1e-40f, "temperature"},
               {0, 1e-7f, "temperature"},
               {0, 2e6f, "temperature"},
               {1, 0, "repeat_penalty"},
               {1, NAN, "repeat_penalty"},
               {1, 1e-40f, "repeat_penalty"},
               {1, 2e6f, "repeat_penalty"},
               {1, -INFINITY, "repeat_penalty"},
               {2, NAN, "top_p"},
               {3, NAN, "min_p"}};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
      wgllm_generate_params bp = gp;
      float *f[] = {&bp.temperature, &bp.repeat_penalty, &bp.top_p, &bp.min_p};
      *f[bad[i].field] = bad[i].v;
      CHECK(wgllm_generate(s, "In the", &bp, NULL) == WGLLM_ERR_INVALID_ARG &&
                strstr(wgllm_session_error(s), bad[i].name),
            "%s %g is refused: %s", bad[i].name, bad[i].v, wgllm_session_error(s));
    }
    wgllm_generate_params bp = gp;
    bp.temperature = WGLLM_SAMPLING_SCALE_MIN;
    bp.repeat_penalty = WGLLM_SAMPLING_SCALE_MIN;
    g_prefill_done = 0;
    CHECK(wgllm_generate(s, "In the beginning", &bp, &gs) == WGLLM_OK && gs.generated_tokens == 4,
          "temperature and repeat_penalty at their minimum generate: %s", wgllm_session_error(s));
  }
  gp.presence_penalty = -2;
  gp.frequency_penalty = 2;
  g_prefill_done = 0;
  CHECK(wgllm_generate(s, "In the beginning", &gp, &gs) == WGLLM_OK && gs.generated_tokens == 4,
        "presence_penalty -2, frequency_penalty 2 generate: %s", wgllm_session_error(s));
  /* the penalties' window holds the whole prompt, a cached prefix too: a prompt that follows a cached one samples
     as on an empty cache (the window was the uncached part only) */
  {
    const char *pr = "In the beginning was the Word, and the Word was with God";
    text_sink cold = {0}, warm = {0};
    wgllm_generate_params pp = wgllm_generate_default_params();
    pp.max_tokens = 12;
    pp.temperature = 0;
    pp.ignore_eos = 1;
    pp.presence_penalty = 2;
    pp.frequency_penalty = 2;
    pp.repeat_penalty = 1.3f;
    pp.on_text = sink_text;
    wgllm_session_reset(s);
    pp.user = &cold;
    g_prefill_done = 0;
    CHECK(wgllm_generate(s, pr, &pp, &gs) == WGLLM_OK && gs.cached_tokens == 0, "penalties, cold: %s",
          wgllm_session_error(s));
    pp.user = &warm;
    g_prefill_done = 0;
    CHECK(wgllm_generate(s, pr, &pp, &gs) == WGLLM_OK && gs.cached_tokens > 8, "penalties, warm: %u cached (%s)",
          gs.cached_tokens, wgllm_session_error(s));
    CHECK(!strcmp(cold.buf, warm.buf), "penalties over a cached prompt: \"%s\" vs \"%s\" on an empty cache", warm.buf,
          cold.buf);
  }
  wgllm_session_free(s);
  check_jobs(m, "f32 weights", 1); /* no fused GEMV for f32: the batched pass's projections a GEMM of the rows */
  check_constrained(m);
  check_reply_parser();
  sp.kv_type = (wgllm_kv_type)7;
  CHECK(wgllm_session_create(m, &sp, &s) == WGLLM_ERR_INVALID_ARG && !s, "a kv_type outside the enum is refused");
  sp = wgllm_session_default_params();
  sp.precision = (wgllm_precision)3;
  CHECK(wgllm_session_create(m, &sp, &s) == WGLLM_ERR_INVALID_ARG && !s && strstr(wgllm_last_error(), "precision"),
        "a precision outside the enum is refused, naming it: %s", wgllm_last_error());
  CHECK(!strcmp(wgllm_precision_name(WGLLM_PRECISION_FAST), "fast") && !wgllm_precision_name((wgllm_precision)9),
        "wgllm_precision_name");
  wgllm_model_free(m);

  /* batched decode: q4gsw weights take the fused GEMV with several tokens; no_batch steps them one by one */
  for (int nb = 0; nb < 2; nb++) {
    mp = wgllm_model_default_params();
    mp.weights = WGLLM_WEIGHTS_Q4;
    mp.no_batch = nb;
    CHECK(wgllm_model_create(MODEL, &mp, &m) == WGLLM_OK, "q4 model: %s", wgllm_last_error());
    if (m) check_jobs(m, nb ? "q4, no_batch" : "q4, batched", !nb);
    if (m && !nb) check_kv_pool(m);
    wgllm_model_free(m);
  }

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
