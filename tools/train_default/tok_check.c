/* Checks wgllm's tokenizer against the ids that Hugging Face tokenizers gave at training time
   (OUTDIR/tokenizer_check.json, written by train.py): each case's text is encoded with special tokens
   added and recognized in the text (as HF does) and must give exactly its ids; decoding the ids without
   special tokens must give the text back. MODEL is what llm_load_tokenizer takes: a Hugging Face directory
   (tokenizer.json + tokenizer_config.json), a tokenizer.json, or a .gguf (tokenizer.ggml.* arrays).

     tok_check MODEL OUTDIR/tokenizer_check.json

   Built and run by check_outputs.py (links the engine's libwgllm.so). Ends with "N passed, N failed". */
#include "model_tokenizer.h"
#include <cjson/cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static char *slurp(const char *path) {
  FILE *f = fopen(path, "rb");
  if (!f) return NULL;
  fseek(f, 0, SEEK_END);
  long n = ftell(f);
  fseek(f, 0, SEEK_SET);
  char *b = malloc((size_t)n + 1);
  if (b && fread(b, 1, (size_t)n, f) != (size_t)n) {
    free(b);
    b = NULL;
  }
  if (b) b[n] = 0;
  fclose(f);
  return b;
}

static void print_ids(const char *label, const int32_t *ids, size_t n) {
  printf("      %s (%zu):", label, n);
  for (size_t i = 0; i < n && i < 40; i++)
    printf(" %d", ids[i]);
  printf("%s\n", n > 40 ? " ..." : "");
}

int main(int argc, char **argv) {
  if (argc != 3) {
    fprintf(stderr, "usage: tok_check MODEL tokenizer_check.json\n");
    return 2;
  }
  char err[1024];
  tokenizer *t = NULL;
  wgllm_status s = llm_load_tokenizer(argv[1], &t, NULL, err, sizeof err);
  if (s) {
    printf("FAIL  load %s: %s (%s)\n0 passed, 1 failed\n", argv[1], err, wgllm_status_name(s));
    return 1;
  }
  char *js = slurp(argv[2]);
  cJSON *root = js ? cJSON_Parse(js) : NULL;
  const cJSON *cases = root ? cJSON_GetObjectItemCaseSensitive(root, "cases") : NULL;
  if (!cJSON_IsArray(cases)) {
    printf("FAIL  cannot read cases from %s\n0 passed, 1 failed\n", argv[2]);
    return 1;
  }
  int passed = 0, failed = 0;
  printf("%s: vocab %zu, bos %d, eos %d\n", argv[1], tok_vocab_size(t), tok_bos(t), tok_eos(t));
  const cJSON *c;
  cJSON_ArrayForEach(c, cases) {
    const char *text = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(c, "text"));
    const cJSON *ja = cJSON_GetObjectItemCaseSensitive(c, "ids");
    size_t nw = (size_t)cJSON_GetArraySize(ja);
    int32_t *want = malloc((nw + 1) * sizeof *want);
    size_t k = 0;
    const cJSON *x;
    cJSON_ArrayForEach(x, ja) want[k++] = (int32_t)x->valuedouble;
    int32_t *ids = NULL;
    size_t n = 0;
    s = tok_encode(t, text, strlen(text), 1, 1, &ids, &n, err, sizeof err);
    int ok = !s && n == nw && !memcmp(ids, want, n * sizeof *ids);
    char *back = NULL;
    size_t blen = 0;
    /* skip_special drops bos; a case whose text spells a special token decodes without it, so compare
       only when the text has none */
    int has_special = strstr(text, "<|") != NULL;
    if (ok && !has_special) {
      s = tok_decode(t, ids, n, 1, &back, &blen, err, sizeof err);
      ok = !s && blen == strlen(text) && !memcmp(back, text, blen);
    }
    if (ok)
      passed++;
    else {
      failed++;
      printf("FAIL  %.60s%s\n", text, strlen(text) > 60 ? "..." : "");
      if (s) printf("      %s (%s)\n", err, wgllm_status_name(s));
      print_ids("want", want, nw);
      print_ids("got ", ids, n);
      if (back) printf("      decoded: %.80s\n", back);
    }
    free(back);
    free(ids);
    free(want);
  }
  printf("%d passed, %d failed\n", passed, failed);
  cJSON_Delete(root);
  free(js);
  tok_free(t);
  return failed ? 1 : 0;
}
