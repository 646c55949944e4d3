/* Synthetic benchmark models: the in-memory q4gsw model and the GGUF file written from the same generator
   compute the same logits (so other engines can be measured on identical weights), the small Gemma 4 shape runs
   (finite logits, decode as prefill, a KV cache of the owning layers only), and `wgllm bench` runs and reports
   every JSON field; a synthetic GGUF with an embedded Hugging Face tokenizer encodes as that tokenizer.json; the MoE
   shapes' GGUFs (Q4_K_M's types, gpt-oss's MXFP4) load and decode as they prefill. */
#include "harness.h"
#include "model_synthetic.h"
#include "session.h"
#include "tokenizer_load.h"
#include <cjson/cJSON.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static float *logits_of(llm_model *m, const int32_t *ids, uint32_t n) {
  llm_err err = {0};
  llm_session *s;
  llm_session_options so = {.ctx = 64};
  if (llm_session_create(m, &so, &s, &err)) {
    CHECK(0, "%s", err.msg);
    return NULL;
  }
  float *l = malloc((size_t)n * m->hp.n_vocab * 4);
  CHECK(llm_session_prefill(s, ids, n - 1, l, 1) == WGLLM_OK, "prefill: %s", s->err.msg);
  CHECK(llm_session_decode(s, ids[n - 1], l + (size_t)(n - 1) * m->hp.n_vocab) == WGLLM_OK, "decode: %s", s->err.msg);
  llm_session_free(s);
  return l;
}

/* The small Gemma 4 shape: it builds and runs through the session (prefill, then decode steps past the sliding
   window) with finite logits that match a prefill of the same tokens; its KV cache holds the owning layers only;
   it has no GGUF form. */
static void gemma4_tiny(gpu_context *gpu) {
  llm_err err = {0};
  llm_model *m = NULL;
  CHECK(llm_model_synthetic(gpu, "gemma4-tiny", 32, &m, &err) == WGLLM_OK, "gemma4-tiny: %s", err.msg);
  if (!m) return;
  const llm_hparams *hp = &m->hp;
  CHECK(hp->arch == LLM_ARCH_GEMMA4 && hp->lay && hp->ple_dim && hp->window, "gemma4-tiny is not Gemma 4 shaped");
  enum { N = 20, DEC = 6, CTX = 64 }; /* N > window: the sliding layers drop early tokens */
  uint32_t V = hp->n_vocab;
  int32_t ids[N];
  for (uint32_t i = 0; i < N; i++)
    ids[i] = (int32_t)((i * 2654435761u + 7) % V);
  llm_session *s;
  llm_session_options so = {.ctx = CTX};
  CHECK(llm_session_create(m, &so, &s, &err) == WGLLM_OK, "gemma4-tiny session: %s", err.msg);
  float *all = malloc((size_t)N * V * 4), *step = malloc((size_t)V * 4);
  /* every position's logits from one prefill, then the last DEC positions again as decode steps */
  CHECK(llm_session_prefill(s, ids, N, all, 1) == WGLLM_OK, "gemma4-tiny prefill: %s", s->err.msg);
  size_t bad = 0;
  for (size_t i = 0; i < (size_t)N * V; i++)
    bad += !isfinite(all[i]);
  CHECK(bad == 0, "gemma4-tiny prefill: %zu logits not finite", bad);
  llm_session_reset(s);
  CHECK(llm_session_prefill(s, ids, N - DEC, step, 0) == WGLLM_OK, "gemma4-tiny prefill: %s", s->err.msg);
  double worst = 0;
  for (uint32_t p = N - DEC; p < N; p++) {
    CHECK(llm_session_decode(s, ids[p], step) == WGLLM_OK, "gemma4-tiny decode at %u: %s", p, s->err.msg);
    double num = 0, den = 0;
    size_t nf = 0;
    for (uint32_t v = 0; v < V; v++) {
      nf += !isfinite(step[v]);
      double d = (double)step[v] - all[(size_t)p * V + v];
      num += d * d;
      den += (double)all[(size_t)p * V + v] * all[(size_t)p * V + v];
    }
    CHECK(nf == 0 && den > 0, "gemma4-tiny decode at %u: %zu logits not finite", p, nf);
    if (den > 0 && sqrt(num / den) > worst) worst = sqrt(num / den);
  }
  CHECK(worst < 1e-3, "gemma4-tiny decode vs prefill logits: rel L2 %.3g", worst);
  printf("synthetic gemma4-tiny: decode vs prefill relative L2 %.3g (worst of %d steps)\n", worst, DEC);
  /* f32 KV of the layers that own a cache; every layer's would be more */
  uint64_t own = 0, every = 0;
  uint32_t owners = 0;
  for (uint32_t l = 0; l < hp->n_layer; l++) {
    uint64_t b = 2ull * llm_layer_n_head_kv(hp, l) * CTX * llm_layer_head_dim(hp, l) * 4;
    every += b;
    if (llm_layer_owns_kv(hp, l)) {
      own += b;
      owners++;
    }
  }
  CHECK(owners > 0 && owners < hp->n_layer, "gemma4-tiny: %u of %u layers own a cache", owners, hp->n_layer);
  CHECK(s->kv.bytes == own && own < every, "gemma4-tiny kv bytes %llu, owning layers %llu, all layers %llu",
        (unsigned long long)s->kv.bytes, (unsigned long long)own, (unsigned long long)every);
  printf("synthetic gemma4-tiny: kv bytes %llu (%u owning layers; all %u would take %llu)\n",
         (unsigned long long)s->kv.bytes, owners, hp->n_layer, (unsigned long long)every);
  free(all);
  free(step);
  llm_session_free(s);
  llm_model_free(m);
  char path[256];
  snprintf(path, sizeof path, "/tmp/wgllm-synth-g4-%d.gguf", (int)getpid());
  CHECK(llm_synthetic_write_gguf("gemma4-tiny", path, &err) == WGLLM_ERR_UNSUPPORTED &&
            strstr(err.msg, "no GGUF form") && access(path, F_OK) != 0,
        "gemma4-tiny GGUF: %s", err.msg);
}

/* the ids of text from both tokenizers (BOS added, special tokens parsed) are the same */
static void same_ids(const tokenizer *a, const tokenizer *b, const char *text) {
  llm_err err = {0};
  int32_t *ia = NULL, *ib = NULL;
  size_t na = 0, nb = 0;
  CHECK(tok_encode(a, text, strlen(text), 1, 1, &ia, &na, &err) == WGLLM_OK, "%s", err.msg);
  CHECK(tok_encode(b, text, strlen(text), 1, 1, &ib, &nb, &err) == WGLLM_OK, "%s", err.msg);
  CHECK(na == nb && na > 1 && ia && ib && !memcmp(ia, ib, na * sizeof *ia),
        "\"%s\": %zu ids from the GGUF, %zu from tokenizer.json (first %d vs %d)", text, na, nb, na ? ia[0] : -1,
        nb ? ib[0] : -1);
  free(ia);
  free(ib);
}

/* --vocab: the tiny shape with the default model's 2048-token vocabulary written into its GGUF (the embedding
   widened to 2100 rows, so the ids past the vocabulary's are padding) loads a GGUF tokenizer that encodes like the
   tokenizer.json it came from; the vocabulary as given (merges as [a, b] pairs) and rewritten (merges as "a b" strings,
   a non-special added token at the next id, as tokenizers would give it whatever the file said, bos_token as
   {"content": ...}, a chat template); a vocabulary over the shape's 512 is refused. */
static void vocab_gguf(void) {
  char path[256], dir[256], f[300];
  llm_err err = {0};
  snprintf(path, sizeof path, "/tmp/wgllm-synth-vocab-%d.gguf", (int)getpid());
  snprintf(dir, sizeof dir, "/tmp/wgllm-synth-vocab-%d", (int)getpid());
  /* the rewritten copy */
  char *js = th_read_file("../models/default/tokenizer.json", NULL);
  cJSON *tj = js ? cJSON_Parse(js) : NULL;
  free(js);
  CHECK(tj != NULL, "../models/default/tokenizer.json");
  if (!tj) return;
  cJSON *merges = cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(tj, "model"), "merges"), *it;
  cJSON *strs = cJSON_CreateArray();
  cJSON_ArrayForEach(it, merges) {
    char m[256];
    snprintf(m, sizeof m, "%s %s", cJSON_GetArrayItem(it, 0)->valuestring, cJSON_GetArrayItem(it, 1)->valuestring);
    cJSON_AddItemToArray(strs, cJSON_CreateString(m));
  }
  cJSON_ReplaceItemInObjectCaseSensitive(cJSON_GetObjectItemCaseSensitive(tj, "model"), "merges", strs);
  cJSON *extra = cJSON_Parse("{\"id\": 2048, \"content\": \"<tool>\", \"single_word\": false, \"lstrip\": false, "
                             "\"rstrip\": false, \"normalized\": false, \"special\": false}");
  cJSON_AddItemToArray(cJSON_GetObjectItemCaseSensitive(tj, "added_tokens"), extra);
  char *out = cJSON_PrintUnformatted(tj);
  cJSON_Delete(tj);
  const char *cfg = "{\"bos_token\": {\"content\": \"<|begin_of_text|>\"}, \"eos_token\": \"<|end_of_text|>\", "
                    "\"chat_template\": \"{{ bos_token }}{% for m in messages %}{{ m['content'] }}{% endfor %}\"}";
  snprintf(f, sizeof f, "mkdir -p %s", dir);
  CHECK(system(f) == 0, "%s", f);
  FILE *fp;
  snprintf(f, sizeof f, "%s/tokenizer.json", dir);
  CHECK((fp = fopen(f, "wb")) && fputs(out, fp) >= 0 && !fclose(fp), "%s", f);
  snprintf(f, sizeof f, "%s/tokenizer_config.json", dir);
  CHECK((fp = fopen(f, "wb")) && fputs(cfg, fp) >= 0 && !fclose(fp), "%s", f);
  free(out);
  const char *texts[] = {"Hello world", "The quick brown fox's 12345 jumps\n\n  over   the lazy dog.",
                         "<|begin_of_text|>hi<|end_of_text|> there",
                         "na\xc3\xafve caf\xc3\xa9 \xe6\x97\xa5\xe6\x9c\xac\xe8\xaa\x9e <tool>x"};
  const char *dirs[] = {"../models/default", dir};
  for (int d = 0; d < 2; d++) {
    llm_synthetic_gguf_opts o = {.vocab_dir = dirs[d], .n_vocab = 2100};
    CHECK(llm_synthetic_write_gguf_opts("tiny", path, &o, &err) == WGLLM_OK, "%s: %s", dirs[d], err.msg);
    tokenizer *g = NULL, *h = NULL;
    char *ctg = NULL, *cth = NULL;
    CHECK(llm_load_tokenizer(path, &g, &ctg, &err) == WGLLM_OK, "%s's GGUF tokenizer: %s", dirs[d], err.msg);
    CHECK(llm_load_tokenizer(dirs[d], &h, &cth, &err) == WGLLM_OK, "%s: %s", dirs[d], err.msg);
    if (g && h) {
      for (size_t i = 0; i < sizeof texts / sizeof texts[0]; i++)
        same_ids(g, h, texts[i]);
      size_t len = 0;
      const char *pad = tok_piece(g, 2050, &len);
      CHECK(tok_vocab_size(g) == 2100 && pad && len == 9 && !memcmp(pad, "[PAD2050]", 9) && tok_is_special(g, 2050),
            "%s: vocab %zu, piece 2050 %.*s", dirs[d], tok_vocab_size(g), pad ? (int)len : 0, pad ? pad : "");
      CHECK(tok_bos(g) == tok_bos(h) && tok_bos(g) == 2046 && tok_eos(g) == tok_eos(h) && tok_eos(g) == 2047,
            "%s: bos %d/%d eos %d/%d", dirs[d], tok_bos(g), tok_bos(h), tok_eos(g), tok_eos(h));
      CHECK(d ? (ctg && cth && !strcmp(ctg, cth) && !tok_is_special(g, 2048)) : !ctg && !cth,
            "%s: chat template %s vs %s", dirs[d], ctg ? ctg : "(none)", cth ? cth : "(none)");
    }
    tok_free(g);
    tok_free(h);
    free(ctg);
    free(cth);
    unlink(path);
  }
  printf("synthetic tiny with a 2048-token vocabulary: GGUF tokenizer ids = tokenizer.json ids\n");
  llm_synthetic_gguf_opts o = {.vocab_dir = "../models/default"};
  CHECK(llm_synthetic_write_gguf_opts("tiny", path, &o, &err) == WGLLM_ERR_INVALID_ARG && strstr(err.msg, "2048") &&
            strstr(err.msg, "512") && access(path, F_OK) != 0,
        "a vocabulary over n_vocab: %s", err.msg);
  snprintf(f, sizeof f, "rm -r %s", dir);
  CHECK(system(f) == 0, "%s", f);
}

/* The small Qwen3-MoE shape: it builds (its experts in parts of whole experts here, the binding limit lowered, as
   Qwen3-30B-A3B's gate/up go over lavapipe's 128 MiB) and runs through the session: the decode steps (experts by
   pair) give the logits a prefill of the same tokens (experts in tiles) gives. */
/* The worst relative L2 between a decode step's logits and the prefill's row of the same position, over the last DEC
   of N tokens (decode runs the experts by pair, prefill in tiles); +inf where a logit is not finite or a call fails. */
static double decode_vs_prefill(llm_model *m, const char *name) {
  enum { N = 14, DEC = 5 };
  llm_err err = {0};
  uint32_t V = m->hp.n_vocab;
  int32_t ids[N];
  for (uint32_t i = 0; i < N; i++)
    ids[i] = (int32_t)((i * 2654435761u + 7) % V);
  llm_session *s = NULL;
  llm_session_options so = {.ctx = 32};
  if (llm_session_create(m, &so, &s, &err)) {
    CHECK(0, "%s session: %s", name, err.msg);
    return INFINITY;
  }
  float *all = malloc((size_t)N * V * 4), *step = malloc((size_t)V * 4);
  double worst = 0;
  int ok = llm_session_prefill(s, ids, N, all, 1) == WGLLM_OK;
  for (size_t i = 0; ok && i < (size_t)N * V; i++)
    if (!isfinite(all[i])) worst = INFINITY;
  llm_session_reset(s);
  ok = ok && llm_session_prefill(s, ids, N - DEC, step, 0) == WGLLM_OK;
  for (uint32_t p = N - DEC; ok && p < N; p++) {
    ok = llm_session_decode(s, ids[p], step) == WGLLM_OK;
    double num = 0, den = 0;
    for (uint32_t v = 0; ok && v < V; v++) {
      double d = (double)step[v] - all[(size_t)p * V + v];
      num += isfinite(step[v]) ? d * d : INFINITY;
      den += (double)all[(size_t)p * V + v] * all[(size_t)p * V + v];
    }
    double e = den > 0 ? sqrt(num / den) : INFINITY;
    if (!(e <= worst)) worst = e;
  }
  CHECK(ok, "%s prefill / decode: %s", name, s->err.msg);
  free(all);
  free(step);
  llm_session_free(s);
  return ok ? worst : INFINITY;
}

static void qwen3_moe_tiny(gpu_context *gpu) {
  llm_err err = {0};
  llm_model *m = NULL;
  uint64_t keep = gpu->limits.maxStorageBufferBindingSize;
  gpu->limits.maxStorageBufferBindingSize = 16384; /* 2 experts' gate/up a part */
  wgllm_status st = llm_model_synthetic(gpu, "qwen3-moe-tiny", 32, &m, &err);
  gpu->limits.maxStorageBufferBindingSize = keep;
  CHECK(st == WGLLM_OK, "qwen3-moe-tiny: %s", err.msg);
  if (!m) return;
  const llm_hparams *hp = &m->hp;
  CHECK(hp->arch == LLM_ARCH_QWEN3_MOE && llm_layer_is_moe(hp, 0) && hp->n_expert == 8 && hp->n_expert_used == 2,
        "qwen3-moe-tiny is not Qwen3-MoE shaped");
  CHECK(m->layers[0].exp_gate_up.n_parts == 4, "qwen3-moe-tiny: gate/up in %u parts, want 4",
        m->layers[0].exp_gate_up.n_parts);
  double worst = decode_vs_prefill(m, "qwen3-moe-tiny");
  CHECK(worst < 1e-4, "qwen3-moe-tiny decode vs prefill logits: rel L2 %.3g", worst);
  printf("synthetic qwen3-moe-tiny: decode vs prefill relative L2 %.3g\n", worst);
  llm_model_free(m);
}

/* The MoE shapes' GGUF files (synthetic_gguf_roles.c, what the benches give both engines): each loads with the types
   a Q4_K_M file (gpt-oss: its MXFP4 files) gives its tensors, and runs: finite logits, the decode steps (experts by
   pair) equal to a prefill of the same tokens (experts in tiles). qwen3-moe-kq takes Q4_K and Q6_K experts,
   gpt-oss-tiny MXFP4 ones with its biases and sinks. */
static void moe_gguf_files(gpu_context *gpu) {
  static const struct {
    const char *name, *expert_tensor;
    wt_dtype want;
  } files[] = {{"qwen3-moe-kq", "blk.0.ffn_gate_exps.weight", WT_Q4_K},
               {"qwen3-moe-kq", "blk.1.ffn_down_exps.weight", WT_Q6_K},
               {"qwen3-moe-tiny", "blk.0.ffn_gate_exps.weight", WT_Q8_0},
               {"gpt-oss-tiny", "blk.1.ffn_up_exps.weight", WT_MXFP4}};
  for (size_t f = 0; f < sizeof files / sizeof files[0]; f++) {
    char path[256];
    llm_err err = {0};
    snprintf(path, sizeof path, "/tmp/wgllm-synth-moe-%d.gguf", (int)getpid());
    CHECK(llm_synthetic_write_gguf(files[f].name, path, &err) == WGLLM_OK, "%s: %s", files[f].name, err.msg);
    wt_store *st = NULL;
    CHECK(llm_open_store(path, &st, &err) == WGLLM_OK, "%s: %s", files[f].name, err.msg);
    const wt_tensor *t = st ? wt_find(st, files[f].expert_tensor) : NULL;
    CHECK(t && t->dtype == files[f].want, "%s: %s is %s, want %s", files[f].name, files[f].expert_tensor,
          t ? wt_dtype_name(t->dtype) : "missing", wt_dtype_name(files[f].want));
    wt_store_free(st);
    llm_model *m = NULL;
    CHECK(llm_model_load(gpu, path, NULL, &m, &err) == WGLLM_OK, "load %s: %s", files[f].name, err.msg);
    unlink(path);
    if (!m) continue;
    double worst = decode_vs_prefill(m, files[f].name);
    CHECK(worst < 1e-4, "%s: decode vs prefill rel L2 %.3g (finite logits and every step run)", files[f].name, worst);
    printf("synthetic %s GGUF (%s %s): decode vs prefill relative L2 %.3g\n", files[f].name, files[f].expert_tensor,
           wt_dtype_name(files[f].want), worst);
    llm_model_free(m);
  }
}

int main(void) {
  vocab_gguf();
  gpu_context *gpu = th_gpu();
  char path[256];
  llm_err err = {0};
  snprintf(path, sizeof path, "/tmp/wgllm-synth-%d.gguf", (int)getpid());
  llm_model *a, *b;
  CHECK(llm_model_synthetic(gpu, "tiny", 32, &a, &err) == WGLLM_OK, "%s", err.msg);
  CHECK(llm_synthetic_write_gguf("tiny", path, &err) == WGLLM_OK, "%s", err.msg);
  CHECK(llm_model_load(gpu, path, NULL, &b, &err) == WGLLM_OK, "load %s: %s", path, err.msg);
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
  llm_model *none = NULL; /* its own variable: the failing call sets it to NULL (reusing b leaked the model) */
  CHECK(llm_model_synthetic(gpu, "nope", 32, &none, &err) == WGLLM_ERR_INVALID_ARG && strstr(err.msg, "nope") && !none,
        "unknown name: %s", err.msg);
  free(la);
  free(lb);
  llm_model_free(a);
  llm_model_free(b);
  unlink(path);
  gemma4_tiny(gpu);
  qwen3_moe_tiny(gpu);
  moe_gguf_files(gpu);
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
