/* A measurement for the browser build (tests/web/run.mjs, case "regex"): the spans PCRE2 matches, with each pattern
   compiled as the tokenizer compiles it (tok_compile_regex: UTF, UCP, \s as Oniguruma's White_Space), in every text
   of the tokenizer tests (data/tokenizers/strings.json, default_check.json). The runner compares them with what the
   browser's own RegExp matches, to decide which regex engine the browser build uses. Arguments: the patterns.
   Prints one line a (pattern, text): "P T start-end start-end ..." in UTF-8 byte offsets. */
#define WGLLM_TOKENIZER_INTERNAL /* tok_compile_regex */
#include "harness.h"
#include "tokenizer.h"
#include <cjson/cJSON.h>
#define PCRE2_CODE_UNIT_WIDTH 8
#include <pcre2.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int add_texts(const char *path, const char *list, const char **texts, int n) {
  char *js = th_read_file(path, NULL);
  cJSON *j = js ? cJSON_Parse(js) : NULL;
  free(js);
  const cJSON *it;
  cJSON_ArrayForEach(it, cJSON_GetObjectItem(j, list)) {
    const cJSON *t = cJSON_GetObjectItem(it, "text");
    if (cJSON_IsString(t) && n < 4096) texts[n++] = strdup(t->valuestring);
  }
  cJSON_Delete(j);
  return n;
}

int main(int argc, char **argv) {
  static const char *texts[4096];
  int n = add_texts("data/tokenizers/strings.json", "strings", texts, 0);
  n = add_texts("data/tokenizers/default_check.json", "cases", texts, n);
  if (n < 100) {
    fprintf(stderr, "regex_spans: only %d texts read\n", n);
    return 1;
  }
  printf("texts %d\n", n);
  for (int p = 1; p < argc; p++) {
    llm_err err = {0};
    pcre2_code *re = tok_compile_regex(argv[p], strlen(argv[p]), false, &err);
    if (!re) {
      printf("error %d %s\n", p - 1, err.msg);
      continue;
    }
    pcre2_match_data *md = pcre2_match_data_create_from_pattern(re, NULL);
    for (int t = 0; t < n; t++) {
      const char *s = texts[t];
      size_t len = strlen(s), at = 0;
      printf("%d %d", p - 1, t);
      while (at <= len && pcre2_match(re, (PCRE2_SPTR)s, len, at, 0, md, NULL) >= 0) {
        PCRE2_SIZE *ov = pcre2_get_ovector_pointer(md);
        printf(" %zu-%zu", (size_t)ov[0], (size_t)ov[1]);
        if (ov[1] > ov[0])
          at = ov[1];
        else { /* an empty match: on past one character */
          at = ov[1] + 1;
          while (at < len && ((unsigned char)s[at] & 0xC0) == 0x80)
            at++;
        }
      }
      printf("\n");
    }
    pcre2_match_data_free(md);
    pcre2_code_free(re);
  }
  return 0;
}
