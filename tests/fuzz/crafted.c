/* Crafted worst-case inputs for the resource bound of the fuzz harnesses (replay_main.c --bound --crafted NAME):
   files under 1 MB built to cost the most for each parser: GGUF headers with huge counts, 50,000 keys, 12,000
   tensors, 31,000-token vocabularies; tokenizer.json files nested to cJSON's limit, with 25,000 merges or 15,000
   added tokens; config.json files of huge numbers; safetensors headers of 12,000 tensors; texts of one unbroken word
   (512 KB) for each real tokenizer; chat templates of nested loops, string doubling, deep recursion and
   large lists. Built in memory at run time (not committed: several MB). */
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MB (1u << 20)

typedef struct buf {
  uint8_t *p;
  size_t n, cap;
} buf;

static void put(buf *b, const void *s, size_t n) {
  if (b->n + n > b->cap) {
    b->cap = (b->n + n) * 2 + 4096;
    b->p = realloc(b->p, b->cap);
    if (!b->p) abort();
  }
  memcpy(b->p + b->n, s, n);
  b->n += n;
}
static void puts_(buf *b, const char *s) { put(b, s, strlen(s)); }
static void printf_(buf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void printf_(buf *b, const char *fmt, ...) {
  char t[512];
  va_list ap;
  va_start(ap, fmt);
  int n = vsnprintf(t, sizeof t, fmt, ap);
  va_end(ap);
  put(b, t, (size_t)n);
}
static void u32(buf *b, uint32_t v) { put(b, &v, 4); }
static void u64(buf *b, uint64_t v) { put(b, &v, 8); }
static void rep(buf *b, const char *s, size_t times) {
  for (size_t i = 0; i < times; i++)
    puts_(b, s);
}

/* A vocabulary whose merges are all valid: the 26 letters, the numbers 0..N-1 as strings, then every letter
   followed by a number; merge k joins letter k % 26 and number k / 26 into their concatenation. */
#define VOC_NUMS 1200
static size_t voc_size(size_t n_pairs) { return 26 + VOC_NUMS + n_pairs; }
static void voc_token(size_t i, char *out, size_t cap) {
  if (i < 26)
    snprintf(out, cap, "%c", (char)('a' + i));
  else if (i < 26 + VOC_NUMS)
    snprintf(out, cap, "%zu", i - 26);
  else
    snprintf(out, cap, "%c%zu", (char)('a' + (i - 26 - VOC_NUMS) % 26), (i - 26 - VOC_NUMS) / 26);
}
static void voc_merge(size_t k, char *out, size_t cap) { snprintf(out, cap, "%c %zu", (char)('a' + k % 26), k / 26); }

/* ---- GGUF ---- */
enum { G_U8 = 0, G_U32 = 4, G_I32 = 5, G_F32 = 6, G_STR = 8, G_ARR = 9 };
static void gstr(buf *b, const char *s) {
  u64(b, strlen(s));
  puts_(b, s);
}
static void ghead(buf *b, uint64_t n_tensors, uint64_t n_kv) {
  puts_(b, "GGUF");
  u32(b, 3);
  u64(b, n_tensors);
  u64(b, n_kv);
}
static void gkv_str(buf *b, const char *k, const char *v) {
  gstr(b, k);
  u32(b, G_STR);
  gstr(b, v);
}
static void gkv_u32(buf *b, const char *k, uint32_t v) {
  gstr(b, k);
  u32(b, G_U32);
  u32(b, v);
}

static void gguf_case(int i, buf *b, char *name) {
  switch (i) {
  case 0: /* a header promising 2^62 keys, then a few */
    strcpy(name, "gguf_kv_count_huge");
    ghead(b, 0, 1ull << 62);
    gkv_u32(b, "a", 1);
    gkv_u32(b, "b", 2);
    return;
  case 1: /* a string array of 2^50 elements in a 1 MB file */
    strcpy(name, "gguf_str_array_count_huge");
    ghead(b, 0, 1);
    gstr(b, "a");
    u32(b, G_ARR);
    u32(b, G_STR);
    u64(b, 1ull << 50);
    while (b->n < MB - 64)
      gstr(b, "xy");
    return;
  case 2: /* 50,000 keys (each looked up by every getter of the harness) */
    strcpy(name, "gguf_50k_keys");
    ghead(b, 0, 50000);
    for (int k = 0; k < 50000; k++) {
      char key[16];
      snprintf(key, sizeof key, "k%05d", k);
      gstr(b, key);
      u32(b, G_U8);
      put(b, "\1", 1);
    }
    return;
  case 3: { /* one u32 array of 250,000 elements */
    strcpy(name, "gguf_u32_array_250k");
    ghead(b, 0, 1);
    gstr(b, "a");
    u32(b, G_ARR);
    u32(b, G_U32);
    u64(b, 250000);
    for (uint32_t k = 0; k < 250000; k++)
      u32(b, k);
    return;
  }
  case 4: { /* 12,000 tensors F32 [8] */
    strcpy(name, "gguf_12k_tensors");
    ghead(b, 12000, 1);
    gkv_str(b, "general.architecture", "llama");
    for (int t = 0; t < 12000; t++) {
      char tn[16];
      snprintf(tn, sizeof tn, "t%05d", t);
      gstr(b, tn);
      u32(b, 1);
      u64(b, 8);
      u32(b, 0);
      u64(b, (uint64_t)t * 32);
    }
    while (b->n % 32)
      put(b, "", 1);
    for (int t = 0; t < 12000 * 8; t++)
      u32(b, 0x3f800000u);
    return;
  }
  case 5: { /* a gpt2 vocabulary of 31,000 tokens and 29,800 merges, with a model's hyperparameters */
    strcpy(name, "gguf_31k_tokens_30k_merges");
    size_t np = 29800, nt = voc_size(np);
    ghead(b, 0, 8);
    gkv_str(b, "general.architecture", "llama");
    gkv_u32(b, "llama.embedding_length", 64);
    gkv_u32(b, "llama.block_count", 1);
    gkv_u32(b, "llama.attention.head_count", 4);
    gkv_u32(b, "llama.feed_forward_length", 128);
    gkv_str(b, "tokenizer.ggml.model", "gpt2");
    gstr(b, "tokenizer.ggml.tokens");
    u32(b, G_ARR);
    u32(b, G_STR);
    u64(b, nt);
    for (size_t t = 0; t < nt; t++) {
      char tk[24];
      voc_token(t, tk, sizeof tk);
      gstr(b, tk);
    }
    gstr(b, "tokenizer.ggml.merges");
    u32(b, G_ARR);
    u32(b, G_STR);
    u64(b, np);
    for (size_t t = 0; t < np; t++) {
      char m[24];
      voc_merge(t, m, sizeof m);
      gstr(b, m);
    }
    return;
  }
  default:
    name[0] = 0;
  }
}

/* ---- tokenizer.json ---- */
static void tj_case(int i, buf *b, char *name) {
  switch (i) {
  case 0:
    strcpy(name, "tokenizer_json_deep_nesting");
    puts_(b, "{\"model\": ");
    rep(b, "[", 500000);
    rep(b, "]", 500000);
    puts_(b, "}");
    return;
  case 1: { /* BPE: 27,000 vocabulary entries and 25,000 merges, a text of every merge */
    strcpy(name, "tokenizer_json_25k_merges");
    size_t np = 25000, nt = voc_size(np);
    puts_(b, "{\"version\": \"1.0\", \"added_tokens\": [], \"normalizer\": null, \"pre_tokenizer\": null, "
             "\"post_processor\": null, \"decoder\": null, \"model\": {\"type\": \"BPE\", \"vocab\": {");
    for (size_t t = 0; t < nt; t++) {
      char tk[24];
      voc_token(t, tk, sizeof tk);
      printf_(b, "%s\"%s\": %zu", t ? ", " : "", tk, t);
    }
    puts_(b, "}, \"merges\": [");
    for (size_t t = 0; t < np; t++) {
      char m[24];
      voc_merge(t, m, sizeof m);
      printf_(b, "%s\"%s\"", t ? ", " : "", m);
    }
    puts_(b, "]}}");
    return;
  }
  case 2: /* 15,000 added special tokens */
    strcpy(name, "tokenizer_json_15k_added");
    puts_(b, "{\"added_tokens\": [");
    for (int t = 0; t < 15000; t++)
      printf_(b, "%s{\"id\": %d, \"content\": \"<|s%d|>\", \"special\": true}", t ? ", " : "", 256 + t, t);
    puts_(b, "], \"pre_tokenizer\": {\"type\": \"ByteLevel\", \"add_prefix_space\": false, \"use_regex\": true}, "
             "\"decoder\": {\"type\": \"ByteLevel\"}, \"model\": {\"type\": \"BPE\", \"vocab\": {");
    for (int t = 0; t < 256; t++)
      printf_(b, "%s\"\\u%04x\": %d", t ? ", " : "", 0x100 + t, t);
    puts_(b, "}, \"merges\": []}}");
    return;
  case 3: /* a Split pre-tokenizer regex of 900 KB */
    strcpy(name, "tokenizer_json_huge_regex");
    puts_(b, "{\"pre_tokenizer\": {\"type\": \"Split\", \"pattern\": {\"Regex\": \"(");
    for (int t = 0; t < 100000; t++)
      printf_(b, "%sa%d", t ? "|" : "", t);
    puts_(b, ")+\"}, \"behavior\": \"Isolated\", \"invert\": false}, \"model\": {\"type\": \"BPE\", \"vocab\": "
             "{\"a\": 0}, \"merges\": []}}");
    return;
  default:
    name[0] = 0;
  }
}

/* ---- config.json ---- */
static void cfg_case(int i, buf *b, char *name) {
  static const char *const base = "\"model_type\": \"llama\", \"vocab_size\": 32000, \"hidden_size\": 4096, "
                                  "\"intermediate_size\": 11008, \"num_attention_heads\": 32";
  switch (i) {
  case 0:
    strcpy(name, "config_json_huge_numbers");
    printf_(
        b, "{\"model_type\": \"llama\", \"vocab_size\": 4294967295, \"hidden_size\": 4294967295, "
           "\"intermediate_size\": 4294967295, \"num_attention_heads\": 4294967295, \"num_hidden_layers\": 4294967295, "
           "\"head_dim\": 4294967295, \"max_position_embeddings\": 4294967295, \"rope_theta\": 1e308, "
           "\"rms_norm_eps\": 1e-308}");
    return;
  case 1:
    strcpy(name, "config_json_512_layers_theta_max");
    printf_(b,
            "{%s, \"num_hidden_layers\": 512, \"num_key_value_heads\": 1, \"head_dim\": 512, \"rope_theta\": "
            "1e299, \"rope_scaling\": {\"rope_type\": \"llama3\", \"factor\": 1e-300, \"low_freq_factor\": 1e-300, "
            "\"high_freq_factor\": 1e300, \"original_max_position_embeddings\": 1e300}}",
            base);
    return;
  case 2: /* Gemma 4 with a per_layer_config of 40,000 entries */
    strcpy(name, "config_json_gemma4_40k_per_layer");
    puts_(b, "{\"model_type\": \"gemma4_text\", \"vocab_size\": 262144, \"hidden_size\": 1536, \"intermediate_size\": "
             "6144, \"num_attention_heads\": 8, \"num_key_value_heads\": 1, \"num_hidden_layers\": 35, \"head_dim\": "
             "256, \"per_layer_config\": {");
    for (int t = 0; t < 40000; t++)
      printf_(b, "%s\"%d\": {\"head_dim\": 256}", t ? ", " : "", t % 35);
    puts_(b, "}}");
    return;
  case 3:
    strcpy(name, "config_json_deep_nesting");
    rep(b, "{\"text_config\": ", 60000);
    rep(b, "}", 60000);
    return;
  default:
    name[0] = 0;
  }
}

/* ---- safetensors ---- */
static void st_case(int i, buf *b, char *name) {
  switch (i) {
  case 0: { /* 12,000 tensors F32 [2] */
    strcpy(name, "safetensors_12k_tensors");
    buf h = {0};
    puts_(&h, "{");
    for (int t = 0; t < 12000; t++)
      printf_(&h, "%s\"t%05d\": {\"dtype\": \"F32\", \"shape\": [2], \"data_offsets\": [%d, %d]}", t ? ", " : "", t,
              8 * t, 8 * t + 8);
    puts_(&h, "}");
    u64(b, h.n);
    put(b, h.p, h.n);
    free(h.p);
    for (int t = 0; t < 12000 * 2; t++)
      u32(b, 0);
    return;
  }
  case 1:
    strcpy(name, "safetensors_header_len_huge");
    u64(b, 1ull << 60);
    puts_(b, "{}");
    return;
  case 2: {
    strcpy(name, "safetensors_deep_nesting");
    buf h = {0};
    rep(&h, "[", 400000);
    rep(&h, "]", 400000);
    u64(b, h.n);
    put(b, h.p, h.n);
    free(h.p);
    return;
  }
  default:
    name[0] = 0;
  }
}

/* ---- encode: byte 0 picks the tokenizer (0 llama3, 1 qwen3, 2 gemma3, 3 llama2, 4 the default model) ---- */
static void enc_case(int i, buf *b, char *name) {
  static const char *const what[4] = {"one_word", "digits", "emoji", "spaces"};
  static const char *const unit[4] = {"ab", "7", "\xf0\x9f\x98\x80", " "};
  if (i >= 20) {
    name[0] = 0;
    return;
  }
  int tok = i % 5, kind = i / 5;
  snprintf(name, 64, "encode_512kb_%s_tok%d", what[kind], tok);
  uint8_t f = (uint8_t)tok;
  put(b, &f, 1);
  while (b->n < MB / 2 - 8) /* a text is no file: 1 MB of spaces takes 0.85-1.0 s of BPE (docs/TESTING.md) */
    puts_(b, unit[kind]);
}

/* ---- gguf_tokenizer: flags, bos, eos, then token lines, merge lines, text (fuzz_gguf_tokenizer.c) ---- */
static void gt_case(int i, buf *b, char *name) {
  if (i > 1) {
    name[0] = 0;
    return;
  }
  strcpy(name, i ? "gguf_tokenizer_llama_24k_merges" : "gguf_tokenizer_gpt2_24k_merges");
  uint8_t head[4] = {(uint8_t)(i ? 0x20 : 0x01), 0x03, 1, 2};
  put(b, head, 4);
  size_t np = 24000, nt = voc_size(np);
  for (size_t t = 0; t < nt; t++) {
    char tk[24];
    voc_token(t, tk, sizeof tk);
    printf_(b, "%s\n", tk);
  }
  puts_(b, "\n");
  for (size_t t = 0; t < np; t++) {
    char m[24];
    voc_merge(t, m, sizeof m);
    printf_(b, "%s\n", m);
  }
  puts_(b, "\n");
  while (b->n < MB - 8)
    puts_(b, "a17b3z9");
}

/* ---- chat_template: flags byte, template (rendered with the default limits under --bound) ---- */
static void ct_case(int i, buf *b, char *name) {
  static const char *const t[][2] = {
      {"nested_loops", "{% for a in range(100000) %}{% for b in range(100000) %}{{ a * b }}{% endfor %}{% endfor %}"},
      {"string_doubling", "{% set ns = namespace(s='x') %}{% for i in range(64) %}{% set ns.s = ns.s ~ ns.s %}"
                          "{% endfor %}{{ ns.s }}"},
      {"list_doubling", "{% set ns = namespace(l=[1]) %}{% for i in range(64) %}{% set ns.l = ns.l + ns.l %}"
                        "{% endfor %}{{ ns.l|length }}"},
      {"big_list_tojson", "{{ range(1000000)|list|tojson }}"},
      {"macro_recursion", "{% macro f(n) %}{{ f(n + 1) }}{{ f(n + 1) }}{% endmacro %}{{ f(0) }}"},
      {"steps", "{% for i in range(1000000) %}{% if (i * 7 // 3) % 5 == 1 and i is odd %}{% endif %}{% endfor %}"},
      {"output_flood", "{% for i in range(1000000) %}{{ 'abcdefghijklmnopqrstuvwxyz' * 40 }}{% endfor %}"},
      {"many_big_strings", "{% set ns = namespace(l=[]) %}{% for i in range(40) %}{% set ns.l = ns.l + [('x' * "
                           "16000000) ~ i] %}{% endfor %}{{ ns.l|length }}"},
      {"dict_growth", "{% set ns = namespace(d={}) %}{% for i in range(1000000) %}{% set ns.d = dict(ns.d, **{"
                      "i|string: i}) %}{% endfor %}"},
  };
  size_t n = sizeof t / sizeof t[0];
  if ((size_t)i < n) {
    snprintf(name, 64, "chat_template_%s", t[i][0]);
    put(b, "\1", 1);
    puts_(b, t[i][1]);
    return;
  }
  if ((size_t)i == n) { /* 1 MB of template: 60,000 expressions */
    strcpy(name, "chat_template_1mb_of_expressions");
    put(b, "\1", 1);
    while (b->n < MB - 64)
      puts_(b, "{{ messages[0].content|upper }}{% if x %}y{% endif %}");
    return;
  }
  if ((size_t)i == n + 1) { /* nesting to the parser's limit, and past it */
    strcpy(name, "chat_template_deep_parens");
    put(b, "\1", 1);
    puts_(b, "{{ ");
    rep(b, "(", 200000);
    puts_(b, "1");
    rep(b, ")", 200000);
    puts_(b, " }}");
    return;
  }
  name[0] = 0;
}

/* The i-th crafted input of harness h into *data (malloc'd) and name; 0 past the last. */
int fuzz_crafted(const char *h, int i, uint8_t **data, size_t *size, char name[64]) {
  buf b = {0};
  name[0] = 0;
  if (!strcmp(h, "gguf"))
    gguf_case(i, &b, name);
  else if (!strcmp(h, "tokenizer_json"))
    tj_case(i, &b, name);
  else if (!strcmp(h, "config_json"))
    cfg_case(i, &b, name);
  else if (!strcmp(h, "safetensors"))
    st_case(i, &b, name);
  else if (!strcmp(h, "encode"))
    enc_case(i, &b, name);
  else if (!strcmp(h, "gguf_tokenizer"))
    gt_case(i, &b, name);
  else if (!strcmp(h, "chat_template"))
    ct_case(i, &b, name);
  if (!name[0]) {
    free(b.p);
    return 0;
  }
  if (!b.p) put(&b, "", 0), b.p = b.p ? b.p : malloc(1);
  *data = b.p;
  *size = b.n;
  return 1;
}
