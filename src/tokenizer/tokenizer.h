/* Tokenizers that reproduce Hugging Face `tokenizers` exactly: SentencePiece-style BPE (Llama 2, Gemma:
   metaspace normalizer, merges by rank or by score, byte fallback) and byte-level BPE (GPT-2 style: Llama 3,
   Qwen: regex pre-tokenizer via PCRE2, byte-to-unicode map). Loaded from a tokenizer.json (+ optional
   tokenizer_config.json) or built from GGUF metadata arrays by tok_create. Encoding splits added/special
   tokens first (leftmost-longest), then normalizes, pre-tokenizes and merges; decoding runs the decoder
   chain of the file (ByteLevel, or Replace/ByteFallback/Fuse/Strip) back to exact bytes.
   A tokenizer is immutable after loading, so one may be shared by threads; a tok_stream is per caller. */
#ifndef WGLLM_TOKENIZER_H
#define WGLLM_TOKENIZER_H
#include "llm_err.h"
#include "wgllm.h"
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef struct tokenizer tokenizer;

/* Loads a Hugging Face tokenizer.json. tokenizer_config_json may be NULL; when given, its bos_token/eos_token
   name BOS/EOS and an explicit add_bos_token/add_eos_token overrides the post_processor template (as
   transformers' Llama/Gemma tokenizers do). Unsupported model/normalizer/pre-tokenizer/decoder types give
   WGLLM_ERR_UNSUPPORTED naming the file and the type. */
wgllm_status tok_load_hf(const char *tokenizer_json, const char *tokenizer_config_json, tokenizer **out, llm_err *err);

/* Builds a tokenizer from GGUF-style arrays (what the GGUF loader reads from tokenizer.ggml.*).
   type: "llama" (SentencePiece BPE: pieces use U+2581 for spaces, merged by score, <0xXX> byte fallback,
   a leading U+2581 prepended unless tok_set_add_space_prefix(t, 0)), "gpt2" (byte-level BPE, merges by
   rank as "left right" strings) or "gemma4" (llama.cpp's Gemma 4 vocabulary: BPE merged by rank over raw
   UTF-8 characters, not byte-level; spaces replaced by U+2581 with none prepended; the text split only by
   [^\n]+|[\n]+, and a run of newlines that is itself a vocabulary token is that token, unmerged; <0xXX>
   byte fallback; decoded U+2581 -> space, bytes, fused; merges are required (WGLLM_ERR_FORMAT naming
   tokenizer.ggml.merges), scores and pre are ignored, and add_bos is taken as 1, as llama.cpp
   forces it). token_types per GGUF: 1 normal, 2 unknown, 3 control, 4 user-defined,
   5 unused, 6 byte; control and unknown tokens are special, user-defined ones are added non-special tokens.
   User-defined and normal tokens are what merges may produce. pre: tokenizer.ggml.pre, for "gpt2" only:
   "llama-bpe"/"llama3"/"llama-v3" (Llama 3 regex, ignore_merges), "qwen2"/"qwen"/"deepseek-r1-qwen"
   (Qwen regex and NFC, as its tokenizer.json has), "tekken" (Mistral Nemo's regex, ignore_merges), "smaug-bpe" (Llama
   3's regex, merges applied), "gpt-2"/"gpt2"/"default"/"smollm"/"olmo" (GPT-2 regex); other names are
   WGLLM_ERR_UNSUPPORTED. bos/eos may be -1. Token strings are copied. */
wgllm_status tok_create(const char *type, const char *pre, size_t n_vocab, const char *const *tokens,
                        const size_t *token_lens, const float *scores, const int32_t *token_types, size_t n_merges,
                        const char *const *merges, int32_t bos, int32_t eos, int add_bos, int add_eos, tokenizer **out,
                        llm_err *err);
/* GGUF tokenizer.ggml.add_space_prefix for "llama" tokenizers (default 1); Gemma GGUFs set 0. No effect on
   other types ("gemma4" never prepends). */
void tok_set_add_space_prefix(tokenizer *t, int on);
void tok_free(tokenizer *t);

/* Encodes len bytes of UTF-8 text (invalid UTF-8 is WGLLM_ERR_INVALID_ARG naming the byte offset).
   add_special: add the BOS/EOS the tokenizer's template asks for. parse_special: recognize special tokens
   written in the text (otherwise they are tokenized as plain text; non-special added tokens are always
   recognized, as in HF). *ids is malloc'd (free it); *n_ids its length. */
wgllm_status tok_encode(const tokenizer *t, const char *text, size_t len, int add_special, int parse_special,
                        int32_t **ids, size_t *n_ids, llm_err *err);
/* As tok_encode, with plain (may be NULL): len flags, one a byte of text; a special token whose text starts at a
   byte flagged 1 is tokenized as plain text there even with parse_special (the chat prompt's content: the
   template's own markup stays special). */
wgllm_status tok_encode_marked(const tokenizer *t, const char *text, size_t len, int add_special, int parse_special,
                               const uint8_t *plain, int32_t **ids, size_t *n_ids, llm_err *err);
/* true when s[0..n) is valid UTF-8; else false with *bad the offset of the first byte that is not */
bool tok_utf8_validate(const char *s, size_t n, size_t *bad);
/* The length of the longest special token's text that s[0..n) starts with; 0 when none does. */
size_t tok_special_at(const tokenizer *t, const char *s, size_t n);
/* Decodes ids to bytes (*text malloc'd and NUL-terminated, *len without the NUL). skip_special drops
   special tokens. An id outside the vocabulary is WGLLM_ERR_INVALID_ARG naming it and its position. */
wgllm_status tok_decode(const tokenizer *t, const int32_t *ids, size_t n, int skip_special, char **text, size_t *len,
                        llm_err *err);

/* Streaming decode: push one id at a time; writes the bytes the token completes to out and returns how many.
   At most cap bytes are written, always ending on a character boundary (so cap must be at least 4); what
   does not fit stays queued and comes out first on the next call: tok_stream_push(s, -1, out, cap) only
   drains the queue, and returns 0 when it is empty. Incomplete UTF-8 sequences are held back until
   completed; invalid bytes become U+FFFD as in the whole decode. Unknown ids produce nothing.
   tok_stream_flush emits what is held back (U+FFFD for a truncated sequence); call it until it returns 0.
   For valid UTF-8 output, the concatenation of all pushes and flushes equals tok_decode of the same ids
   (for a run of byte-fallback tokens that is invalid UTF-8, the whole decode follows HF and gives one
   U+FFFD per byte token, while the stream has already emitted the valid characters of the run).
   Special tokens are rendered unless tok_stream_skip_special(s, 1). */
typedef struct tok_stream tok_stream;
tok_stream *tok_stream_create(const tokenizer *t);
void tok_stream_skip_special(tok_stream *s, int skip);
size_t tok_stream_push(tok_stream *s, int32_t id, char *out, size_t cap);
size_t tok_stream_flush(tok_stream *s, char *out, size_t cap);
void tok_stream_free(tok_stream *s);

size_t tok_vocab_size(const tokenizer *t); /* highest id + 1, added tokens included */
int32_t tok_bos(const tokenizer *t);       /* -1 when none */
int32_t tok_eos(const tokenizer *t);       /* -1 when none */
/* end of generation: eos, eot, <|im_end|>, <end_of_turn>, <|eot_id|>, <|endoftext|>, ... */
int tok_is_eog(const tokenizer *t, int32_t id);
int tok_is_special(const tokenizer *t, int32_t id);
/* the token's stored string (byte-level/metaspace form, or the added token's content); NULL for a bad id */
const char *tok_piece(const tokenizer *t, int32_t id, size_t *len);
/* The bytes token id adds in the middle of a text (its piece through the decoders: the byte-level map, a byte-fallback
   token's byte, U+2581 as a space; a special token its content): up to cap of them into out; returns how many it
   has (0 for a bad id, or out of memory). */
size_t tok_token_bytes(const tokenizer *t, int32_t id, char *out, size_t cap);
/* id of a piece (added tokens first, then the model vocabulary); -1 when absent */
int32_t tok_find(const tokenizer *t, const char *piece);
/* Whether b encodes and decodes as a does (a draft model's tokenizer against its target's): the same kind of
   model, BOS and EOS, and for every id both have the same piece and special flag; the sizes may differ by at most
   TOK_SAME_PAD ids (padding). 0: why gets the first difference. */
#define TOK_SAME_PAD 128
int tok_same(const tokenizer *a, const tokenizer *b, char *why, size_t whylen);

#ifdef WGLLM_TOKENIZER_INTERNAL
/* ---- Internal: shared by tokenizer.c (core), tokenizer_bpe.c (maps, UTF-8, BPE) and tokenizer_hf.c
   (tokenizer.json loader, NFC). ---- */
#include <stdbool.h>

typedef struct tok_buf { /* growable byte buffer */
  char *p;
  size_t n, cap;
} tok_buf;
bool tok_buf_put(tok_buf *b, const void *s, size_t n);

/* open-addressing map from byte strings (stored in the tokenizer's arena, by offset) to int32 */
typedef struct tok_sslot {
  uint32_t hash, koff, klen;
  int32_t val; /* INT32_MIN = empty slot */
} tok_sslot;
typedef struct tok_smap {
  tok_sslot *slot; /* [cap]: one cache line holds four probes */
  size_t cap, count;
} tok_smap;
/* open-addressing map from uint64 keys to uint64 values (UINT64_MAX keys are not allowed) */
typedef struct tok_u64slot {
  uint64_t key, val;
} tok_u64slot;
typedef struct tok_u64map {
  tok_u64slot *slot; /* [cap] */
  size_t cap, count;
} tok_u64map;

enum {
  TOK_ATTR_PRESENT = 1,
  TOK_ATTR_SPECIAL = 2,
  TOK_ATTR_ADDED = 4,
  TOK_ATTR_BYTE = 8,
  TOK_ATTR_UNKNOWN = 16,
  TOK_ATTR_EOG = 32
};
enum { TOK_MODEL_BPE_RANK = 0, TOK_MODEL_BPE_SCORE = 1 };
enum { TOK_NORM_NFC, TOK_NORM_PREPEND, TOK_NORM_REPLACE };
enum { TOK_PRE_SPLIT, TOK_PRE_BYTE_LEVEL, TOK_PRE_METASPACE, TOK_PRE_DIGITS };
enum { TOK_SPLIT_REMOVED, TOK_SPLIT_ISOLATED, TOK_SPLIT_MERGED_PREV, TOK_SPLIT_MERGED_NEXT, TOK_SPLIT_CONTIGUOUS };
enum { TOK_PREPEND_ALWAYS, TOK_PREPEND_FIRST, TOK_PREPEND_NEVER };
enum { TOK_DEC_REPLACE, TOK_DEC_BYTE_FALLBACK, TOK_DEC_FUSE, TOK_DEC_STRIP, TOK_DEC_BYTE_LEVEL, TOK_DEC_METASPACE };

/* Budgets of the pipeline (docs/LIMITS.md): at most TOK_MAX_STEPS normalizers and as many pre-tokenizers
   (refused at load); each step may grow its text to TOK_STEP_GROWTH x its input + TOK_GROWTH_SLACK bytes, the
   whole pipeline to TOK_PIPE_GROWTH x the segment + TOK_GROWTH_SLACK (refused at encode, naming the step); every
   regex runs with PCRE2's match and depth limits below (a pathological pattern fails fast, naming it). */
#define TOK_MAX_STEPS 64
#define TOK_STEP_GROWTH 4
#define TOK_PIPE_GROWTH 16
#define TOK_GROWTH_SLACK 64
#define TOK_RE_MATCH_LIMIT 10000u /* backtracking steps at one start position */
#define TOK_RE_DEPTH_LIMIT 10000u /* nested backtracking frames (interpreter; JIT: its 32 KiB default stack) */

typedef struct tok_norm {
  int kind;
  char *pat, *rep; /* Prepend: rep; Replace: pat -> rep */
  size_t pat_len, rep_len;
} tok_norm;

typedef struct tok_pre {
  int kind;
  void *re;     /* pcre2_code*: Split pattern (literal or regex), GPT-2 regex, Metaspace char, \p{N} */
  char *re_src; /* the pattern as written (for errors); NULL for built-in ones */
  int behavior, invert;
  int add_prefix_space, use_regex; /* ByteLevel */
  char rep[8];                     /* Metaspace replacement (UTF-8) */
  size_t rep_len;
  int prepend_scheme, split; /* Metaspace */
  int individual_digits;
} tok_pre;

typedef struct tok_dec {
  int kind;
  char *pat, *rep; /* Replace */
  size_t pat_len, rep_len;
  uint32_t cp; /* Strip content / Metaspace replacement code point */
  size_t start, stop;
  int prepend_scheme;
} tok_dec;

typedef struct tok_added {
  int32_t id;
  uint32_t off, len; /* content in the arena */
  bool special, lstrip, rstrip, single_word, normalized;
} tok_added;

typedef struct tok_trie { /* byte trie over added-token contents: node 0 is the root */
  tok_u64map edge;        /* (node << 8 | byte) -> child */
  int32_t *term;          /* [n_nodes]: added index or -1 */
  size_t n_nodes, cap_nodes;
} tok_trie;

struct tokenizer {
  int model;                       /* TOK_MODEL_* */
  size_t n_vocab;                  /* highest id + 1 */
  tok_buf arena;                   /* every string the tokenizer stores */
  uint32_t *piece_off, *piece_len; /* [n_vocab]: what decoding renders (added content wins) */
  uint8_t *attr;                   /* [n_vocab] TOK_ATTR_* */
  float *scores;                   /* [n_vocab] for TOK_MODEL_BPE_SCORE */
  tok_smap vocab;                  /* model vocabulary: piece -> id */
  tok_u64map merges;               /* (left id << 32 | right id) -> (rank << 32 | merged id) */
  int32_t unk_id;
  bool byte_fallback, fuse_unk, ignore_merges;
  int32_t byte_id[256]; /* <0xXX> tokens, -1 when absent */
  tok_added *added;
  size_t n_added, cap_added;
  tok_smap added_map; /* content -> added index */
  tok_trie trie_raw, trie_norm;
  bool has_norm_added;
  tok_norm *norm;
  size_t n_norm;
  tok_pre *pre;
  size_t n_pre;
  tok_dec *dec;
  size_t n_dec;
  bool has_decoder;   /* false: tokens are joined with spaces, as HF does without a decoder */
  int gguf_spm;       /* tok_create("llama"): 1 + add_space_prefix, else 0 */
  bool gguf_scan;     /* tok_create("llama", "gemma4"): control/byte/unused pieces are in no map, tok_find scans */
  bool newline_whole; /* "gemma4": a word of only '\n' that is a vocabulary token is that token, unmerged */
  int32_t *prefix, *suffix;
  size_t n_prefix, n_suffix; /* post-processor template for add_special */
  void *word_re;             /* pcre2_code* for single_word boundaries, when any token needs it */
  int32_t bos, eos;
};

tokenizer *tok_alloc(void);
/* stores a string in the arena; returns its offset or UINT32_MAX when out of memory */
uint32_t tok_arena_put(tokenizer *t, const char *s, size_t n);
/* model vocabulary entry (id may leave holes); false on OOM or a duplicate piece (then *dup is set) */
bool tok_add_vocab(tokenizer *t, const char *s, size_t n, int32_t id, bool *dup);
bool tok_add_merge(tokenizer *t, int32_t a, int32_t b, uint32_t rank, int32_t merged);
int32_t tok_vocab_lookup(const tokenizer *t, const char *s, size_t n);
bool tok_add_added(tokenizer *t, const char *s, size_t n, int32_t id, bool special, bool lstrip, bool rstrip,
                   bool single_word, bool normalized);
/* compiles a Split regex (HF/Oniguruma syntax, \s rewritten to Unicode White_Space) */
void *tok_compile_regex(const char *pattern, size_t len, bool literal, llm_err *err);
/* a match context with the TOK_RE_* limits (pcre2_match_context*), NULL when out of memory */
void *tok_match_context(void);
void tok_regex_free(void *re);
/* sizes per-id tables, fills pieces/attrs, builds the tries, byte ids, EOG flags; call after all adds */
wgllm_status tok_finish(tokenizer *t, const char *what, llm_err *err);
/* tokenizer_bpe.c: maps, UTF-8, byte map, BPE */
int tok_smap_put(tok_smap *m, const char *base, uint32_t off, uint32_t len, int32_t val,
                 int32_t *old);                                                     /* 1 new, 0 dup, -1 OOM */
int32_t tok_smap_get(const tok_smap *m, const char *base, const char *s, size_t n); /* -1 when absent */
void tok_smap_free(tok_smap *m);
bool tok_u64_reserve(tok_u64map *m, size_t n);
bool tok_smap_reserve(tok_smap *m, size_t n);
bool tok_u64_put(tok_u64map *m, uint64_t key, uint64_t val);
bool tok_u64_get(const tok_u64map *m, uint64_t key, uint64_t *val);
void tok_u64_free(tok_u64map *m);
size_t tok_utf8_valid_prefix(const char *s, size_t n, size_t i); /* length of the valid char at s[i], 0 if none */
size_t tok_utf8_partial(const char *s, size_t n, size_t i, bool *may_complete);
uint32_t tok_utf8_decode(const char *s, size_t *adv); /* s must hold a valid char */
size_t tok_utf8_encode(uint32_t cp, char *out);
bool tok_is_white_space(uint32_t cp);
uint32_t tok_byte_to_cp(uint8_t b);
int tok_cp_to_byte(uint32_t cp); /* -1 when cp is not in the byte map */
typedef struct tok_bpe_scratch {
  void *sym, *heap;
  size_t n_sym, cap_sym, n_heap, cap_heap;
} tok_bpe_scratch;
/* appends the ids of one pre-tokenized word (model-vocabulary form) to *ids; false on OOM */
bool tok_bpe_word(const tokenizer *t, const char *w, size_t n, tok_bpe_scratch *s, int32_t **ids, size_t *n_ids,
                  size_t *cap_ids);
void tok_bpe_scratch_free(tok_bpe_scratch *s);
/* the GPT-2 split regex (ByteLevel use_regex) */
const char *tok_gpt2_regex(void);
/* NFC normalization of valid UTF-8 (tokenizer_hf.c); false on OOM */
bool tok_nfc(const char *s, size_t n, tok_buf *out);
#endif

#endif
