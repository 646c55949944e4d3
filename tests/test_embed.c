/* Embeddings through the public API against transformers (tests/data/models/qwen3_embed, made by
   tools/refs/make_refs.py --only qwen3_embed): a Qwen3-Embedding directory (Qwen3Model weights without "model." and
   without an LM head, sentence-transformers last-token pooling and Normalize) and the same weights as a GGUF with
   qwen3.pooling_type; last-token normalised and mean unnormalised vectors for inputs of 1 to 53 tokens, in prefill
   chunks of 16 and in one pass; the model's pooling as its file names it; the cache emptied before and after; the
   errors (empty input, ids out of range, over the context, no LM head for generation, malformed pooling files). */
#include "harness.h"
#include "wgllm.h"
#include <cjson/cJSON.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#define BOUND 1e-4 /* relative L2 error of an embedding (float32 weights; test_models' logits take 1e-3) */

static double rel_l2(const float *got, const cJSON *want, uint32_t n) {
  double e = 0, r = 0;
  if ((uint32_t)cJSON_GetArraySize(want) != n) return INFINITY;
  for (uint32_t i = 0; i < n; i++) {
    double w = cJSON_GetArrayItem(want, (int)i)->valuedouble, d = got[i] - w;
    if (!isfinite(got[i])) return INFINITY;
    e += d * d;
    r += w * w;
  }
  return sqrt(e / (r > 0 ? r : 1));
}

static int32_t *ids_of(const cJSON *arr, size_t *n) {
  *n = (size_t)cJSON_GetArraySize(arr);
  int32_t *v = malloc(*n * sizeof *v + 4);
  for (size_t i = 0; i < *n; i++)
    v[i] = (int32_t)cJSON_GetArrayItem(arr, (int)i)->valuedouble;
  return v;
}

static wgllm_model *load(const char *path) {
  wgllm_model_params mp = wgllm_model_default_params();
  mp.no_tokenizer = 1;
  wgllm_model *m = NULL;
  wgllm_status st = wgllm_model_create(path, &mp, &m);
  CHECK(st == WGLLM_OK, "load %s: %s", path, wgllm_last_error());
  return m;
}

static wgllm_session *session(wgllm_model *m, uint32_t chunk, uint32_t ctx) {
  wgllm_session_params sp = wgllm_session_default_params();
  sp.prefill_chunk = chunk;
  sp.context = ctx;
  wgllm_session *s = NULL;
  CHECK(wgllm_session_create(m, &sp, &s) == WGLLM_OK, "session: %s", wgllm_model_error(m));
  return s;
}

/* every input of emb_ref.json: the model's own pooling (last, normalised) and the mean unnormalised, in chunks of 16
   (53 tokens: four passes) and in one pass */
static void conformance(const char *name, const char *path) {
  char p[256];
  snprintf(p, sizeof p, "data/models/%s/emb_ref.json", name);
  char *js = th_read_file(p, NULL);
  CHECK(js, "%s missing", p);
  if (!js) return;
  cJSON *ref = cJSON_Parse(js);
  free(js);
  wgllm_model *m = load(path);
  if (!m) {
    cJSON_Delete(ref);
    return;
  }
  wgllm_model_info info;
  wgllm_model_get_info(m, &info);
  uint32_t D = (uint32_t)cJSON_GetObjectItem(ref, "n_embd")->valueint;
  CHECK(info.n_embd == D, "%s: n_embd %u, want %u", name, info.n_embd, D);
  int norm = -1;
  wgllm_pooling pool = wgllm_model_pooling(m, &norm);
  CHECK(pool == WGLLM_POOLING_LAST && norm == 1, "%s: the model's pooling %s, normalize %d (want last, 1)", name,
        wgllm_pooling_name(pool), norm);
  int gguf = strstr(path, ".gguf") != NULL; /* tied (no output.weight): it has the table as its LM head */
  CHECK(wgllm_model_has_lm_head(m) == gguf, "%s: has_lm_head %d", name, wgllm_model_has_lm_head(m));
  wgllm_session *chunked = session(m, 16, 0), *whole = session(m, 0, 0);
  float *got = malloc(D * sizeof *got), *got1 = malloc(D * sizeof *got1);
  const cJSON *in;
  double worst = 0;
  cJSON_ArrayForEach(in, cJSON_GetObjectItem(ref, "inputs")) {
    size_t n;
    int32_t *ids = ids_of(cJSON_GetObjectItem(in, "ids"), &n);
    for (int k = 0; k < 2 && chunked && whole; k++) {
      wgllm_session *s = k ? whole : chunked;
      wgllm_status st = wgllm_session_embed(s, ids, n, WGLLM_POOLING_DEFAULT, -1, got);
      CHECK(st == WGLLM_OK, "%s: embed %zu tokens: %s", name, n, wgllm_session_error(s));
      double e = rel_l2(got, cJSON_GetObjectItem(in, "last_normalized"), D);
      worst = e > worst ? e : worst;
      CHECK(e <= BOUND, "%s: %zu tokens, last+normalize (%s): relative L2 error %.3g > %.0e", name, n,
            k ? "one pass" : "chunks of 16", e, BOUND);
      double ss = 0;
      for (uint32_t i = 0; i < D; i++)
        ss += (double)got[i] * got[i];
      CHECK(fabs(sqrt(ss) - 1) < 1e-5, "%s: %zu tokens: the normalised vector's norm is %.7g", name, n, sqrt(ss));
      st = wgllm_session_embed(s, ids, n, WGLLM_POOLING_MEAN, 0, got);
      CHECK(st == WGLLM_OK, "%s: embed (mean) %zu tokens: %s", name, n, wgllm_session_error(s));
      e = rel_l2(got, cJSON_GetObjectItem(in, "mean"), D);
      worst = e > worst ? e : worst;
      CHECK(e <= BOUND, "%s: %zu tokens, mean (%s): relative L2 error %.3g > %.0e", name, n,
            k ? "one pass" : "chunks of 16", e, BOUND);
      CHECK(wgllm_session_n_past(s) == 0, "%s: %u tokens left in the cache after an embedding", name,
            wgllm_session_n_past(s));
      /* explicit LAST with the model's normalisation is DEFAULT; CLS is the first token's (one token: the last's) */
      st = wgllm_session_embed(s, ids, n, WGLLM_POOLING_LAST, 1, got1);
      CHECK(st == WGLLM_OK && rel_l2(got1, cJSON_GetObjectItem(in, "last_normalized"), D) <= BOUND,
            "%s: LAST explicitly: %s", name, wgllm_session_error(s));
      if (n == 1) {
        st = wgllm_session_embed(s, ids, n, WGLLM_POOLING_CLS, 1, got1);
        CHECK(st == WGLLM_OK && rel_l2(got1, cJSON_GetObjectItem(in, "last_normalized"), D) <= BOUND,
              "%s: CLS of one token: %s", name, wgllm_session_error(s));
      }
    }
    free(ids);
  }
  printf("  %-18s worst relative L2 error %.3g (bound %.0e)\n", name, worst, BOUND);

  /* the errors: each names what is wrong, and nothing is left in the cache */
  int32_t one = 5, bad[3] = {5, 320, 7};
  if (chunked) {
    wgllm_status st = wgllm_session_embed(chunked, &one, 0, WGLLM_POOLING_DEFAULT, -1, got);
    CHECK(st == WGLLM_ERR_INVALID_ARG && strstr(wgllm_session_error(chunked), "no tokens"), "empty input: %d %s", st,
          wgllm_session_error(chunked));
    st = wgllm_session_embed(chunked, bad, 3, WGLLM_POOLING_DEFAULT, -1, got);
    CHECK(st == WGLLM_ERR_INVALID_ARG && strstr(wgllm_session_error(chunked), "320 at index 1"),
          "id out of range: %d %s", st, wgllm_session_error(chunked));
    st = wgllm_session_embed(chunked, &one, 1, (wgllm_pooling)9, -1, got);
    CHECK(st == WGLLM_ERR_INVALID_ARG && strstr(wgllm_session_error(chunked), "pooling 9"), "pooling 9: %d %s", st,
          wgllm_session_error(chunked));
    /* generating needs the LM head the directory's model does not have (the GGUF's is its embedding table) */
    float *logits = malloc(info.n_vocab * sizeof *logits);
    st = wgllm_session_prefill(chunked, &one, 1, logits, 0);
    CHECK(gguf ? st == WGLLM_OK : st == WGLLM_ERR_UNSUPPORTED && strstr(wgllm_session_error(chunked), "no LM head"),
          "%s: prefill: %d %s", name, st, wgllm_session_error(chunked));
    free(logits);
    wgllm_session_reset(chunked);
  }
  wgllm_session *small = session(m, 0, 32);
  if (small) {
    int32_t ids[40];
    for (int i = 0; i < 40; i++)
      ids[i] = 3 + i;
    wgllm_status st = wgllm_session_embed(small, ids, 40, WGLLM_POOLING_MEAN, 0, got);
    CHECK(st == WGLLM_ERR_INVALID_ARG && strstr(wgllm_session_error(small), "context of 32"), "over the context: %d %s",
          st, wgllm_session_error(small));
    st = wgllm_session_embed(small, ids, 32, WGLLM_POOLING_MEAN, 0, got); /* exactly the context */
    CHECK(st == WGLLM_OK, "32 tokens in a context of 32: %s", wgllm_session_error(small));
  }
  wgllm_session_free(small);
  wgllm_session_free(chunked);
  wgllm_session_free(whole);
  wgllm_model_free(m);
  free(got);
  free(got1);
  cJSON_Delete(ref);
}

/* A causal LM names no pooling: DEFAULT is the last token's, unnormalised by default; a session that generated keeps
   working after it (the cache emptied) */
static void causal_default(void) {
  wgllm_model *m = load("data/models/qwen3");
  if (!m) return;
  int norm = 7;
  CHECK(wgllm_model_pooling(m, &norm) == WGLLM_POOLING_DEFAULT && norm == 0, "qwen3 (causal LM): pooling %s, norm %d",
        wgllm_pooling_name(wgllm_model_pooling(m, NULL)), norm);
  wgllm_session *s = session(m, 0, 0);
  wgllm_model_info info;
  wgllm_model_get_info(m, &info);
  float *a = malloc(info.n_embd * 4), *b = malloc(info.n_embd * 4), *logits = malloc(info.n_vocab * 4);
  int32_t ids[5] = {11, 12, 13, 14, 15};
  CHECK(wgllm_session_prefill(s, ids, 3, logits, 0) == WGLLM_OK, "prefill: %s", wgllm_session_error(s));
  CHECK(wgllm_session_embed(s, ids, 5, WGLLM_POOLING_DEFAULT, -1, a) == WGLLM_OK, "embed: %s", wgllm_session_error(s));
  CHECK(wgllm_session_n_past(s) == 0, "the cache holds %u tokens after embedding", wgllm_session_n_past(s));
  CHECK(wgllm_session_embed(s, ids, 5, WGLLM_POOLING_LAST, 0, b) == WGLLM_OK, "embed: %s", wgllm_session_error(s));
  CHECK(!memcmp(a, b, info.n_embd * 4), "DEFAULT on a causal LM is not LAST unnormalised");
  CHECK(wgllm_session_prefill(s, ids, 3, logits, 0) == WGLLM_OK, "prefill after embedding: %s", wgllm_session_error(s));
  wgllm_session_free(s);
  wgllm_model_free(m);
  free(a);
  free(b);
  free(logits);
}

/* A sentence-transformers directory of the fixture's files with its pooling files replaced: what it must say */
static void pooling_file(const char *modules, const char *pool_cfg, wgllm_status want, const char *says) {
  char dir[] = "/tmp/wgllm_embed_XXXXXX", p[512], src[512];
  if (!mkdtemp(dir)) return;
  const char *files[] = {"config.json", "model.safetensors"};
  for (int i = 0; i < 2; i++) {
    snprintf(p, sizeof p, "%s/%s", dir, files[i]);
    CHECK(realpath("data/models/qwen3_embed", src) != NULL, "realpath");
    strcat(src, "/");
    strcat(src, files[i]);
    CHECK(symlink(src, p) == 0, "symlink %s", p);
  }
  snprintf(p, sizeof p, "%s/modules.json", dir);
  FILE *f = fopen(p, "w");
  fputs(modules, f);
  fclose(f);
  snprintf(p, sizeof p, "%s/1_Pooling", dir);
  mkdir(p, 0700);
  snprintf(p, sizeof p, "%s/1_Pooling/config.json", dir);
  if (pool_cfg) {
    f = fopen(p, "w");
    fputs(pool_cfg, f);
    fclose(f);
  }
  wgllm_model_params mp = wgllm_model_default_params();
  mp.no_tokenizer = 1;
  wgllm_model *m = NULL;
  wgllm_status st = wgllm_model_create(dir, &mp, &m);
  CHECK(st == want && (!says || strstr(wgllm_last_error(), says)), "modules %s, pooling %s: %s (%d), want %d \"%s\"",
        modules, pool_cfg ? pool_cfg : "(none)", wgllm_last_error(), st, want, says ? says : "");
  if (m && !says) {
    int norm;
    CHECK(wgllm_model_pooling(m, &norm) == WGLLM_POOLING_MEAN && norm == 0, "mean without Normalize: %s %d",
          wgllm_pooling_name(wgllm_model_pooling(m, NULL)), norm);
  }
  wgllm_model_free(m);
  unlink(p);
  snprintf(p, sizeof p, "%s/1_Pooling", dir);
  rmdir(p);
  const char *rm[] = {"config.json", "model.safetensors", "modules.json"};
  for (int i = 0; i < 3; i++) {
    snprintf(p, sizeof p, "%s/%s", dir, rm[i]);
    unlink(p);
  }
  rmdir(dir);
}

/* `wgllm embed` (WGLLM_BIN, as ctest sets it; else ../build) on the GGUF fixture: each --ids input's line is the
   vector transformers gave, within the bound (printed with 7 digits); a token past the vocabulary is exit 2 naming
   the input */
static void cli(void) {
  const char *bin = getenv("WGLLM_BIN");
  char *js = th_read_file("data/models/qwen3_embed_gguf/emb_ref.json", NULL);
  if (!js) return;
  cJSON *ref = cJSON_Parse(js);
  free(js);
  char cmd[8192];
  int k =
      snprintf(cmd, sizeof cmd, "%s/wgllm embed -m data/models/qwen3_embed_gguf/model.gguf", bin ? bin : "../build");
  const cJSON *in;
  cJSON_ArrayForEach(in, cJSON_GetObjectItem(ref, "inputs")) {
    k += snprintf(cmd + k, sizeof cmd - (size_t)k, " --ids ");
    const cJSON *id;
    cJSON_ArrayForEach(id, cJSON_GetObjectItem(in, "ids")) k += snprintf(
        cmd + k, sizeof cmd - (size_t)k, "%s%d", id == cJSON_GetObjectItem(in, "ids")->child ? "" : ",", id->valueint);
  }
  snprintf(cmd + k, sizeof cmd - (size_t)k, " 2>/dev/null");
  FILE *p = popen(cmd, "r");
  CHECK(p != NULL, "popen %s", cmd);
  if (!p) return;
  uint32_t D = (uint32_t)cJSON_GetObjectItem(ref, "n_embd")->valueint;
  float *v = malloc(D * sizeof *v);
  int lines = 0;
  cJSON_ArrayForEach(in, cJSON_GetObjectItem(ref, "inputs")) {
    uint32_t got = 0;
    while (got < D && fscanf(p, "%f", &v[got]) == 1)
      got++;
    double e = got == D ? rel_l2(v, cJSON_GetObjectItem(in, "last_normalized"), D) : INFINITY;
    CHECK(e <= BOUND, "wgllm embed: input %d: %u numbers, relative L2 error %.3g", lines, got, e);
    lines++;
  }
  CHECK(pclose(p) == 0, "wgllm embed exited non-zero: %s", cmd);
  snprintf(cmd, sizeof cmd, "%s/wgllm embed -m data/models/qwen3_embed_gguf/model.gguf --ids 5 --ids 5,320 2>&1",
           bin ? bin : "../build");
  p = popen(cmd, "r");
  char out[1024] = "";
  size_t n = p ? fread(out, 1, sizeof out - 1, p) : 0;
  out[n] = 0;
  int rc = p ? pclose(p) : -1;
  CHECK(WIFEXITED(rc) && WEXITSTATUS(rc) == 2 && strstr(out, "input 1") && strstr(out, "320 at index 1"),
        "wgllm embed with id 320: exit %d, %s", rc, out);
  free(v);
  cJSON_Delete(ref);
}

/* wgllm_describe_file (wgllm info) says an embedding model's pooling, and that one without an LM head embeds only */
static void describe(void) {
  const char *paths[] = {"data/models/qwen3_embed", "data/models/qwen3_embed_gguf/model.gguf", "data/models/qwen3"};
  const char *want[] = {"embeddings:   pooling last, L2-normalised; no LM head: it embeds only",
                        "embeddings:   pooling last, L2-normalised\n", NULL};
  for (int i = 0; i < 3; i++) {
    char *text = NULL;
    CHECK(wgllm_describe_file(paths[i], &text) == WGLLM_OK && text, "describe %s: %s", paths[i], wgllm_last_error());
    if (!text) continue;
    if (want[i])
      CHECK(strstr(text, want[i]) != NULL, "describe %s says '%s':\n%s", paths[i], want[i], text);
    else
      CHECK(!strstr(text, "embeddings:"), "describe %s (a causal LM) says nothing of embeddings:\n%s", paths[i], text);
    wgllm_free(text);
  }
}

int main(void) {
  describe();
  conformance("qwen3_embed", "data/models/qwen3_embed");
  conformance("qwen3_embed_gguf", "data/models/qwen3_embed_gguf/model.gguf");
  causal_default();
  cli();
  const char *mods = "[{\"idx\": 0, \"path\": \"\", \"type\": \"sentence_transformers.models.Transformer\"},"
                     " {\"idx\": 1, \"path\": \"1_Pooling\", \"type\": \"sentence_transformers.models.Pooling\"}]";
  pooling_file(mods, "{\"pooling_mode_mean_tokens\": true}", WGLLM_OK, NULL);
  pooling_file(mods, "{\"pooling_mode_max_tokens\": true}", WGLLM_ERR_UNSUPPORTED, "pooling_mode_max_tokens");
  pooling_file(mods, "{\"pooling_mode_mean_tokens\": true, \"pooling_mode_lasttoken\": true}", WGLLM_ERR_UNSUPPORTED,
               "both set");
  pooling_file(mods, "{}", WGLLM_ERR_FORMAT, "no pooling_mode_");
  pooling_file(mods, NULL, WGLLM_ERR_FORMAT, "1_Pooling/config.json: missing");
  pooling_file("{\"type\": 1}", NULL, WGLLM_ERR_FORMAT, "not an array");
  pooling_file("[{\"path\": \"../x\", \"type\": \"sentence_transformers.models.Pooling\"}]", NULL, WGLLM_ERR_FORMAT,
               "no relative \"path\"");
  return th_finish("test_embed");
}
