/* Loading a model's tokenizer from where the model keeps it: tokenizer.json (+ tokenizer_config.json) in a
   Hugging Face directory, the tokenizer.ggml.* arrays of a GGUF file, or a tokenizer.json given directly.
   Also returns the chat template text the files carry (the model's own template, run by chat/chat.h). */
#ifndef WGLLM_TOKENIZER_LOAD_H
#define WGLLM_TOKENIZER_LOAD_H
#include "llm_err.h"
#include "tensor_store.h"
#include "tokenizer.h"

/* *chat_template: malloc'd Jinja text or NULL when the files carry none (may pass NULL to skip): GGUF
   tokenizer.chat_template; for Hugging Face files chat_template.jinja beside them, else tokenizer_config.json's
   chat_template (a string, or the "default" of a list of {name, template}). A GGUF tokenizer's fields are checked
   before use (WGLLM_ERR_FORMAT naming the key): scores (f32, finite) and token_type (i32, 1..6) absent or one per
   token, bos/eos ids u32 or i32 below the token count, add_bos_token / add_eos_token / add_space_prefix bools. */
wgllm_status llm_load_tokenizer(const char *path, tokenizer **out, char **chat_template, llm_err *err);
/* The same from a model file already opened (st, borrowed): a GGUF store holds its tokenizer; for a safetensors
   store (or NULL) the tokenizer.json beside path is read. */
wgllm_status llm_load_tokenizer_store(const char *path, const wt_store *st, tokenizer **out, char **chat_template,
                                      llm_err *err);
#endif
