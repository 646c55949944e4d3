/* A tokenizer's vocabulary as grammars see it (grammar.h's grammar_vocab over the tokenizer's tokens). */
#ifndef WGLLM_GRAMMAR_TOKENS_H
#define WGLLM_GRAMMAR_TOKENS_H
#include "grammar.h"
#include "tokenizer.h"

/* The first n ids of tok (n: the model's vocabulary, which may pad past the tokenizer's): each token's bytes
   mid-text (tok_token_bytes), end-of-generation tokens GRAMMAR_TOK_EOG, other special tokens, empty pieces and ids
   past the tokenizer's GRAMMAR_TOK_NEVER, the rest text. */
wgllm_status grammar_vocab_from_tokenizer(const tokenizer *tok, uint32_t n, grammar_vocab **out, llm_err *err);
#endif
