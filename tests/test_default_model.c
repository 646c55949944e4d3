/* The bundled default model (models/default and models/default.gguf, trained by tools/train_default): its
   tokenizer, loaded from the HF directory and from the GGUF, gives the ids Hugging Face tokenizers gives on
   every text of the training run's check list; greedy generation through the public API continues a prompt
   with the text transformers' generate produced; and `make run`'s command prints readable text. */
#include "harness.h"
#include "tokenizer_load.h"
#include "wgllm.h"
#include <cjson/cJSON.h>
#include <stdlib.h>
#include <string.h>

static void tokenizer_cases(const char *path) {
  llm_err err = {0};
  tokenizer *tok;
  wgllm_status st = llm_load_tokenizer(path, &tok, NULL, &err);
  CHECK(st == WGLLM_OK, "%s: %s", path, err.msg);
  if (st) return;
  char *js = th_read_file("data/tokenizers/default_check.json", NULL);
  cJSON *j = cJSON_Parse(js);
  free(js);
  const cJSON *c;
  int n = 0, bad = 0;
  cJSON_ArrayForEach(c, cJSON_GetObjectItem(j, "cases")) {
    const char *text = cJSON_GetObjectItem(c, "text")->valuestring;
    const cJSON *ids = cJSON_GetObjectItem(c, "ids");
    int32_t *got;
    size_t ng;
    st = tok_encode(tok, text, strlen(text), 1, 1, &got, &ng, &err);
    int same = !st && ng == (size_t)cJSON_GetArraySize(ids);
    for (size_t i = 0; same && i < ng; i++)
      same = got[i] == (int32_t)cJSON_GetArrayItem(ids, (int)i)->valuedouble;
    if (!same && bad++ < 3) fprintf(stderr, "  %s: ids differ for \"%.60s\"\n", path, text);
    if (!st) free(got);
    n++;
  }
  CHECK(n > 50 && bad == 0, "%s: %d of %d texts tokenize differently from HF", path, bad, n);
  printf("  %s: %d texts, %d differ from HF tokenizers\n", path, n, bad);
  cJSON_Delete(j);
  tok_free(tok);
}

typedef struct sink {
  char buf[4096];
  size_t len;
} sink;

static int collect(const char *text, size_t len, void *user) {
  sink *s = user;
  if (s->len + len < sizeof s->buf) {
    memcpy(s->buf + s->len, text, len);
    s->len += len;
    s->buf[s->len] = 0;
  }
  return 0;
}

static void greedy_text(const char *path) {
  wgllm_model *m;
  wgllm_status st = wgllm_model_create(path, NULL, &m);
  CHECK(st == WGLLM_OK, "%s: %s", path, wgllm_last_error());
  if (st) return;
  wgllm_session *s;
  CHECK(wgllm_session_create(m, NULL, &s) == WGLLM_OK, "%s", wgllm_last_error());
  wgllm_generate_params gp = wgllm_generate_default_params();
  gp.temperature = 0;
  gp.max_tokens = 40;
  sink out = {{0}, 0};
  gp.on_text = collect;
  gp.user = &out;
  /* transformers' greedy continuation of this prompt (tools/train_default samples.txt) */
  const char *want =
      " I shall not want.\nHe maketh me to lie down in green pastures: he leadeth me beside the still waters.";
  st = wgllm_generate(s, "The LORD is my shepherd;", &gp, NULL);
  CHECK(st == WGLLM_OK, "generate: %s", wgllm_session_error(s));
  CHECK(strncmp(out.buf, want, strlen(want)) == 0, "%s greedy text:\n%s", path, out.buf);
  printf("  %s greedy: %.70s...\n", path, out.buf);
  wgllm_session_free(s);
  wgllm_model_free(m);
}

int main(void) {
  tokenizer_cases("../models/default");
  tokenizer_cases("../models/default.gguf");
  greedy_text("../models/default");
  greedy_text("../models/default.gguf");
  /* the main job: `make run` prints generated text after the prompt */
  const char *bin = getenv("WGLLM_BIN");
  char cmd[512];
  snprintf(cmd, sizeof cmd, "../scripts/run_main.sh %s > /tmp/wgllm-run-main-%d.txt 2>&1", bin ? bin : "../build", 0);
  CHECK(system(cmd) == 0, "run_main.sh failed");
  char *o = th_read_file("/tmp/wgllm-run-main-0.txt", NULL);
  CHECK(o && strstr(o, "In the beginning") && strstr(o, "120 generated"), "run_main output: %s", o ? o : "(none)");
  free(o);
  return th_finish("test_default_model");
}
