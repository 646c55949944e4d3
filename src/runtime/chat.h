/* Chat templates of the supported families, written out in C (no Jinja engine): Llama 3, ChatML (Qwen),
   Gemma and Llama 2. The template is picked from the model's chat_template text (or its special tokens),
   or by name. */
#ifndef WGLLM_CHAT_H
#define WGLLM_CHAT_H
#include "tokenizer.h"
#include <stddef.h>

typedef enum chat_template { CHAT_NONE = 0, CHAT_LLAMA3, CHAT_CHATML, CHAT_GEMMA, CHAT_LLAMA2 } chat_template;

typedef struct chat_msg {
  const char *role; /* "system", "user", "assistant" */
  const char *content;
} chat_msg;

/* "llama3", "chatml", "gemma", "llama2", "none"; returns -1 for an unknown name */
int chat_template_from_name(const char *name);
const char *chat_template_name(chat_template t);
/* From the model's Jinja template text when it has one, else from the special tokens in its vocabulary. */
chat_template chat_template_detect(const char *jinja, const tokenizer *tok);
/* The prompt text for the conversation (special tokens as text: encode with parse_special = 1 and
   add_special = 0). add_generation_prompt opens the assistant's turn. Returns malloc'd text. */
char *chat_format(chat_template t, const chat_msg *msgs, size_t n, int add_generation_prompt);
#endif
