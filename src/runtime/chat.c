/* Chat templates (see chat.h). Each follows its family's reference template for the common case:
   system, user and assistant turns, no tools. */
#include "chat.h"
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *names[] = {"none", "llama3", "chatml", "gemma", "llama2"};

int chat_template_from_name(const char *name) {
  for (int i = 0; i < 5; i++)
    if (!strcmp(name, names[i])) return i;
  return -1;
}

const char *chat_template_name(chat_template t) { return (unsigned)t < 5 ? names[t] : "none"; }

chat_template chat_template_detect(const char *jinja, const tokenizer *tok) {
  if (jinja) {
    if (strstr(jinja, "<|start_header_id|>")) return CHAT_LLAMA3;
    if (strstr(jinja, "<|im_start|>")) return CHAT_CHATML;
    if (strstr(jinja, "<start_of_turn>")) return CHAT_GEMMA;
    if (strstr(jinja, "[INST]")) return CHAT_LLAMA2;
  }
  if (tok) {
    if (tok_find(tok, "<|start_header_id|>") >= 0) return CHAT_LLAMA3;
    if (tok_find(tok, "<|im_start|>") >= 0) return CHAT_CHATML;
    if (tok_find(tok, "<start_of_turn>") >= 0) return CHAT_GEMMA;
  }
  return CHAT_NONE;
}

typedef struct sbuf {
  char *s;
  size_t len, cap;
  int oom;
} sbuf;

static void put(sbuf *b, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  int n = vsnprintf(NULL, 0, fmt, ap);
  va_end(ap);
  if (n < 0 || b->oom) return;
  if (b->len + (size_t)n + 1 > b->cap) {
    size_t nc = b->cap ? b->cap * 2 : 256;
    while (nc < b->len + (size_t)n + 1)
      nc *= 2;
    char *ns = realloc(b->s, nc);
    if (!ns) {
      b->oom = 1;
      return;
    }
    b->s = ns;
    b->cap = nc;
  }
  va_start(ap, fmt);
  vsnprintf(b->s + b->len, b->cap - b->len, fmt, ap);
  va_end(ap);
  b->len += (size_t)n;
}

char *chat_format(chat_template t, const chat_msg *msgs, size_t n, int add_generation_prompt) {
  sbuf b = {0};
  put(&b, "%s", "");
  const char *system = NULL;
  size_t first = 0;
  if (n && !strcmp(msgs[0].role, "system")) {
    system = msgs[0].content;
    first = 1;
  }
  switch (t) {
  case CHAT_LLAMA3:
    put(&b, "<|begin_of_text|>");
    for (size_t i = 0; i < n; i++)
      put(&b, "<|start_header_id|>%s<|end_header_id|>\n\n%s<|eot_id|>", msgs[i].role, msgs[i].content);
    if (add_generation_prompt) put(&b, "<|start_header_id|>assistant<|end_header_id|>\n\n");
    break;
  case CHAT_CHATML:
    for (size_t i = 0; i < n; i++)
      put(&b, "<|im_start|>%s\n%s<|im_end|>\n", msgs[i].role, msgs[i].content);
    if (add_generation_prompt) put(&b, "<|im_start|>assistant\n");
    break;
  case CHAT_GEMMA: /* no system role: it is prepended to the first user turn */
    put(&b, "<bos>");
    for (size_t i = first; i < n; i++) {
      const char *role = !strcmp(msgs[i].role, "assistant") ? "model" : msgs[i].role;
      if (i == first && system)
        put(&b, "<start_of_turn>%s\n%s\n\n%s<end_of_turn>\n", role, system, msgs[i].content);
      else
        put(&b, "<start_of_turn>%s\n%s<end_of_turn>\n", role, msgs[i].content);
    }
    if (add_generation_prompt) put(&b, "<start_of_turn>model\n");
    break;
  case CHAT_LLAMA2: /* <s>[INST] <<SYS>>\n..\n<</SYS>>\n\nuser [/INST] answer </s> ... */
    for (size_t i = first; i < n; i++) {
      if (!strcmp(msgs[i].role, "assistant")) {
        put(&b, " %s </s>", msgs[i].content);
        continue;
      }
      if (i == first && system)
        put(&b, "<s>[INST] <<SYS>>\n%s\n<</SYS>>\n\n%s [/INST]", system, msgs[i].content);
      else
        put(&b, "<s>[INST] %s [/INST]", msgs[i].content);
    }
    break;
  default: /* plain concatenation */
    for (size_t i = 0; i < n; i++)
      put(&b, "%s%s", msgs[i].content, i + 1 < n ? "\n" : "");
    break;
  }
  if (b.oom) {
    free(b.s);
    return NULL;
  }
  return b.s;
}
