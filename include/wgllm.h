/* wgllm public C API: status codes, version, models, vocabularies, sessions (evaluate tokens, read logits,
   generate, chat), and descriptions of files and GPUs. All handles are opaque; every fallible call returns a
   wgllm_status and leaves a message on its handle (or in wgllm_last_error for the create calls).
   Threads: handles are not thread-safe. Use a model and its sessions from one thread at a time (a model's
   sessions share its GPU queue); different models may be used from different threads. wgllm_last_error is per
   thread. The library never prints and never exits. */
#ifndef WGLLM_H
#define WGLLM_H
#include <stddef.h>
#include <stdint.h>
#ifdef __cplusplus
extern "C" {
#endif

/* Marks the library's exported functions; everything else in libwgllm is hidden. */
#if defined(_WIN32) && !defined(WGLLM_STATIC)
#ifdef WGLLM_BUILD
#define WGLLM_API __declspec(dllexport)
#else
#define WGLLM_API __declspec(dllimport)
#endif
#elif defined(__GNUC__) && !defined(WGLLM_STATIC)
#define WGLLM_API __attribute__((visibility("default")))
#else
#define WGLLM_API
#endif

#define WGLLM_VERSION_MAJOR 0
#define WGLLM_VERSION_MINOR 1
#define WGLLM_VERSION_PATCH 0

typedef enum wgllm_status {
  WGLLM_OK = 0,
  WGLLM_ERR_INVALID_ARG = 1,   /* a caller-supplied value is out of range or malformed */
  WGLLM_ERR_IO = 2,            /* a file could not be opened, read or mapped */
  WGLLM_ERR_FORMAT = 3,        /* a file is corrupt, truncated or inconsistent */
  WGLLM_ERR_UNSUPPORTED = 4,   /* valid input the engine does not handle (architecture, dtype, shape) */
  WGLLM_ERR_OUT_OF_MEMORY = 5, /* host or device memory was refused */
  WGLLM_ERR_NO_ADAPTER = 6,    /* no WebGPU adapter / device could be created */
  WGLLM_ERR_GPU = 7,           /* a WebGPU validation or internal error */
  WGLLM_ERR_DEVICE_LOST = 8,   /* the device was lost; the handle must be recreated */
  WGLLM_ERR_INTERNAL = 9,      /* a bug in wgllm */
  WGLLM_ERR_KV_FULL = 10       /* the model's KV pool has no free block for a session's next tokens (nothing ran:
                                  retry once other sessions shrink or end, or reset idle ones) */
} wgllm_status;

/* "MAJOR.MINOR.PATCH", from the macros above */
WGLLM_API const char *wgllm_version(void);

/* Log messages (the library never prints): what a model load chose (the adapter, features it did not get, the
   weights) and warnings. One callback for the process; NULL (the default) drops them. The callback may be
   called from any thread that calls into wgllm. */
typedef enum wgllm_log_level { WGLLM_LOG_INFO = 0, WGLLM_LOG_WARN = 1 } wgllm_log_level;
typedef void (*wgllm_log_fn)(wgllm_log_level level, const char *msg, void *user);
WGLLM_API void wgllm_set_log(wgllm_log_fn fn, void *user);
/* Short constant name of a status ("WGLLM_ERR_FORMAT"). */
WGLLM_API const char *wgllm_status_name(wgllm_status s);

/* ---------- models ---------- */
typedef struct wgllm_model wgllm_model;
typedef struct wgllm_session wgllm_session;

/* How linear weights are stored on the GPU: as the file has them (f32, f16, bf16, GGUF Q4_0 and Q8_0 repacked,
   the other ggml block types as they are), or float weights quantized on load to 4-bit group-symmetric q4gsw
   (GGUF Q4_0 stays exact; block types are never requantized). */
typedef enum wgllm_weight_type { WGLLM_WEIGHTS_NATIVE = 0, WGLLM_WEIGHTS_Q4 = 1 } wgllm_weight_type;

typedef struct wgllm_model_params {
  wgllm_weight_type weights; /* WGLLM_WEIGHTS_NATIVE (default) or WGLLM_WEIGHTS_Q4 */
  uint32_t q4_group;         /* q4gsw group: 32 (default; 0 means 32), 64 or 128 */
  const char *adapter;       /* part of the adapter's name to prefer; NULL: WGLLM_ADAPTER or the best GPU */
  const char *chat_template; /* "llama3", "chatml", "gemma", "llama2", "none"; NULL: from the model */
  int disable_f16;           /* do not request shader-f16 (as on a device without it) */
  int no_tokenizer;          /* weights only (e.g. for logits of given ids): text calls then fail */
  /* called as the weights reach the GPU, with the fraction done (0..1]; return non-zero to cancel the load
     (wgllm_model_create then returns WGLLM_ERR_INVALID_ARG, "cancelled", with nothing left allocated) */
  int (*progress)(float fraction, void *user);
  void *progress_user;
  /* the largest storage binding one weight, or one layer's K or V cache of its sessions, may take, in bytes; 0: the
     device's limit. Weights over it (an embedding table or LM head over a browser's 128 MiB, say) are split by
     rows and run a dispatch a part; caches over it are bound a group of KV heads at a time */
  uint64_t max_binding_bytes;
  /* the longest wait for the GPU to finish submitted work, in ms, before the device counts as lost (every later
     call then fails with WGLLM_ERR_DEVICE_LOST instead of blocking on a hung device); 0: WGLLM_GPU_TIMEOUT_MS from
     the environment, else 600000 (10 minutes: a large prompt on a CPU rasterizer takes minutes a pass) */
  uint32_t gpu_timeout_ms;
  /* wgllm_jobs_step steps its jobs one session after another instead of in one batched pass (comparisons) */
  int no_batch;
  /* a Jinja chat template (transformers' form, as a tokenizer_config.json holds it) run instead of the model's own
     (llama.cpp's --chat-template-file); NULL: the model's. chat_template (a name) still wins over it. One that does
     not parse fails wgllm_model_create naming why. */
  const char *chat_template_text;
} wgllm_model_params;
WGLLM_API wgllm_model_params wgllm_model_default_params(void);

/* PATH: a Hugging Face directory (config.json, *.safetensors, tokenizer.json) or a .gguf file.
   On failure *out is NULL and wgllm_last_error() says what and where. */
WGLLM_API wgllm_status wgllm_model_create(const char *path, const wgllm_model_params *params, wgllm_model **out);
WGLLM_API void wgllm_model_free(wgllm_model *m); /* NULL is a no-op */
/* Message of the last failed wgllm_*_create call on this thread ("" if none). */
WGLLM_API const char *wgllm_last_error(void);
/* Message of the last failed call on a handle ("" if none). */
WGLLM_API const char *wgllm_model_error(const wgllm_model *m);

typedef struct wgllm_model_info {
  const char *architecture; /* the file's own name: "llama", "mistral", "qwen2", "qwen3", "gemma3_text",
                               "gemma4_text", "qwen3_moe" (GGUF: "qwen3moe"), "mixtral", "phi3", "gpt_oss" (GGUF:
                               "gpt-oss"), ... */
  uint32_t n_vocab, n_embd, n_layer, n_head, n_head_kv, head_dim, n_ff, train_context;
  uint64_t weight_bytes; /* on the GPU */
  const char *weights;   /* "native", "q4gsw g32", ... */
  const char *adapter;   /* the GPU it runs on */
  const char *chat_template;
  int32_t bos, eos;
} wgllm_model_info;
WGLLM_API wgllm_status wgllm_model_get_info(const wgllm_model *m, wgllm_model_info *info);
/* Whether draft can propose tokens for m (wgllm_generate_params.draft_model): both have a tokenizer of the same
   kind and the same tokens (the text of every id both have, the special ones among them, BOS and EOS; their
   vocabularies may differ in size by at most 128 padding ids, as llama.cpp allows; drafts past m's vocabulary end a
   proposal). WGLLM_ERR_INVALID_ARG otherwise, the first difference in wgllm_model_error(m). */
WGLLM_API wgllm_status wgllm_model_check_draft(wgllm_model *m, const wgllm_model *draft);
/* Whether m's generations can speculate (spec_lookup, draft_model): its batched decode pass records on this device
   (every family and weight storage, where its rows start on binding offsets). WGLLM_ERR_UNSUPPORTED otherwise, the
   reason in wgllm_model_error(m); a session on the unfused decode path refuses it too. */
WGLLM_API wgllm_status wgllm_model_can_speculate(wgllm_model *m);

/* Text to ids: len bytes of UTF-8 (a NUL byte among them is tokenized as the byte it is). add_special: BOS/EOS as
   the model's tokenizer adds them; special-token text (e.g. "<|eot_id|>") becomes its token. *n_ids gets the count;
   when it exceeds cap, ids holds the first cap. */
WGLLM_API wgllm_status wgllm_tokenize(wgllm_model *m, const char *text, size_t len, int add_special, int32_t *ids,
                                      size_t cap, size_t *n_ids);
/* Ids to text (malloc'd, NUL-terminated; free with wgllm_free). An id outside the vocabulary is an error. */
WGLLM_API wgllm_status wgllm_detokenize(wgllm_model *m, const int32_t *ids, size_t n, char **text);
WGLLM_API void wgllm_free(void *p);

/* ---------- vocabularies (no GPU needed) ---------- */
typedef struct wgllm_vocab wgllm_vocab;
/* The tokenizer of a model file alone: a Hugging Face directory (tokenizer.json), a .gguf file, or a
   tokenizer.json path. On failure *out is NULL and wgllm_last_error() says why. */
WGLLM_API wgllm_status wgllm_vocab_load(const char *path, wgllm_vocab **out);
WGLLM_API void wgllm_vocab_free(wgllm_vocab *v); /* NULL is a no-op; not for wgllm_model_vocab's */
WGLLM_API const char *wgllm_vocab_error(const wgllm_vocab *v);
/* The vocabulary a model uses (owned by the model). */
WGLLM_API const wgllm_vocab *wgllm_model_vocab(const wgllm_model *m);
WGLLM_API size_t wgllm_vocab_n_tokens(const wgllm_vocab *v); /* highest id + 1, added tokens included */
WGLLM_API int32_t wgllm_vocab_bos(const wgllm_vocab *v);     /* -1 when none */
WGLLM_API int32_t wgllm_vocab_eos(const wgllm_vocab *v);     /* -1 when none */
WGLLM_API int wgllm_vocab_is_special(const wgllm_vocab *v, int32_t id);
/* The token's stored text (its piece as the tokenizer keeps it, e.g. "Ġthe"), *len bytes, not NUL-terminated;
   NULL for an id outside the vocabulary. */
WGLLM_API const char *wgllm_vocab_piece(const wgllm_vocab *v, int32_t id, size_t *len);
/* The bytes token id adds in the middle of a text (its piece decoded: "Ġthe" is " the", a byte token its byte, which
   may be part of a UTF-8 character), up to cap of them into out; returns how many it has (0 for an id outside the
   vocabulary). */
WGLLM_API size_t wgllm_vocab_token_bytes(const wgllm_vocab *v, int32_t id, char *out, size_t cap);
/* A code model's fill-in-the-middle tokens (the prompt is prefix-marker, the text before, suffix-marker, the text
   after, middle-marker; the model writes the middle): ids[0..3) the prefix, suffix and middle markers, each a token
   of its own whose text is Qwen2.5-Coder's, StarCoder's, CodeLlama's or DeepSeek-Coder's marker. WGLLM_ERR_UNSUPPORTED
   where the vocabulary has none (the reason in wgllm_vocab_error). */
WGLLM_API wgllm_status wgllm_vocab_fim_tokens(const wgllm_vocab *v, int32_t ids[3]);
/* As wgllm_tokenize / wgllm_detokenize, on a vocabulary. parse_special: special-token text becomes its token.
   Detokenizing: *len (may be NULL) gets the byte count (the text may hold a NUL byte if the ids spell one). */
WGLLM_API wgllm_status wgllm_vocab_tokenize(const wgllm_vocab *v, const char *text, size_t len, int add_special,
                                            int parse_special, int32_t *ids, size_t cap, size_t *n_ids);
WGLLM_API wgllm_status wgllm_vocab_detokenize(const wgllm_vocab *v, const int32_t *ids, size_t n, char **text,
                                              size_t *len);

/* ---------- sessions ---------- */
typedef enum wgllm_kv_type {
  WGLLM_KV_F32 = 0, /* f32 KV cache (default) */
  WGLLM_KV_F16 = 1  /* half the memory, f32 math; stored as packed u32 pairs, so on any device */
} wgllm_kv_type;
/* How a one-token step runs. The fused kernels are the default; the unfused path (one kernel per op, as
   prefill) is there to compare against. */
typedef enum wgllm_decode_path { WGLLM_DECODE_FUSED = 0, WGLLM_DECODE_UNFUSED = 1 } wgllm_decode_path;
/* How flash-decoding sizes its grid: the worst case of the length bucket (default, faster) or GPU-written
   indirect arguments (for comparison). */
typedef enum wgllm_attn_grid { WGLLM_ATTN_GRID_WORST = 0, WGLLM_ATTN_GRID_INDIRECT = 1 } wgllm_attn_grid;
/* How the linear layers of block-quantized weights (Q4_0, Q8_0, K-quants, q4gsw, MXFP4, ...) multiply, in prefill and
   in decode (one session or a batch): EXACT: f32 activations times the weights' own values, f32 arithmetic (bit for bit
   what earlier versions computed); FAST: activations quantized on the GPU to int8 in blocks of 32 (a scale each),
   packed int8 dot products (dot4I8Packed), f32 sums of the blocks (what llama.cpp's MMQ / MMVQ kernels do). Float
   weights are always exact. DEFAULT resolves to the measured choice (docs/PERF.md, "Precision"). */
typedef enum wgllm_precision {
  WGLLM_PRECISION_DEFAULT = 0,
  WGLLM_PRECISION_EXACT = 1,
  WGLLM_PRECISION_FAST = 2
} wgllm_precision;
/* "default", "exact", "fast"; NULL for a value outside the enum */
WGLLM_API const char *wgllm_precision_name(wgllm_precision p);
typedef struct wgllm_session_params {
  /* tokens; 0 (the default): the model's trained length, at most 4096 (4096 where the model does not say). More
     than the trained length is allowed, with a warning through wgllm_set_log's callback. A session whose memory
     (KV cache, RoPE tables, scratch) the device cannot hold is refused before anything is allocated. */
  uint32_t context;
  wgllm_kv_type kv_type; /* WGLLM_KV_F32 (default) or WGLLM_KV_F16 */
  wgllm_decode_path decode_path;
  wgllm_attn_grid attn_grid;
  /* called after each prefill pass (the GPU works through a prompt in chunks) with the tokens done and the
     total; NULL for none */
  void (*on_prefill)(uint32_t done, uint32_t total, void *user);
  void *prefill_user;
  /* tokens a prefill pass takes (0, the default: 1024, 512 for models with sliding-window layers, halved while a
     pass's activations would not fit one of the device's storage bindings); sliding-window layers keep window +
     this many keys */
  uint32_t prefill_chunk;
  wgllm_precision precision; /* WGLLM_PRECISION_DEFAULT unless set */
  /* 1: the cache draws its blocks from the model's KV pool (wgllm_model_kv_pool, made first): its kv_type is the
     pool's, its context at most the pool's max_context (0: that), and it takes memory for the tokens it holds only */
  int kv_pool;
} wgllm_session_params;
WGLLM_API wgllm_session_params wgllm_session_default_params(void);

/* ---------- a paged KV pool: many sessions' caches in one (serving) ----------
   The model's sessions made with kv_pool set keep their K and V in blocks of 16 tokens of one pool, taken as they
   grow and given back as they shrink or end, so memory follows the tokens held, not each session's longest
   context. Sessions whose prompts start with the same tokens share the blocks of that prefix (a system prompt,
   a few-shot block): a job's prompt takes the longest prefix other sessions prefilled (wgllm_generate_stats'
   cached_tokens counts it) and computes the rest. Blocks no session holds stay cached, least recently used given
   back first. Layers of a sliding window shorter than max_context keep a ring of their own in each session.
   wgllm_jobs_step on jobs whose sessions share the pool attends for all of them in one dispatch pair a layer and
   length bucket, makes room under pressure (idle sessions' caches first, then the newest jobs are evicted and
   later recomputed bit for bit: the text is the same) and makes a job wait rather than fail, except the oldest
   when the pool cannot hold it alone (WGLLM_ERR_KV_FULL). A session stepped on its own gets WGLLM_ERR_KV_FULL
   when no block is left. */
typedef struct wgllm_kv_pool_params {
  uint32_t tokens;      /* token slots in all (rounded up to blocks); 0: as many as `bytes` holds */
  uint64_t bytes;       /* with tokens 0: the device memory it may take; 0 as well: 70% of what the device has
                           left, at most 64 sessions of max_context and what one storage binding holds */
  uint32_t max_context; /* the longest context of a session on it (0: the model's trained length, at most 4096) */
  wgllm_kv_type kv_type;
} wgllm_kv_pool_params;
/* Makes (or remakes: refused while sessions are on it) the model's pool. Errors name the limit: device memory,
   the storage binding (its largest pool), a model whose every layer is a window ring (nothing to pool). */
WGLLM_API wgllm_status wgllm_model_kv_pool(wgllm_model *m, const wgllm_kv_pool_params *params);
typedef struct wgllm_kv_pool_stats {
  uint32_t block_tokens;     /* slots a block */
  uint32_t blocks;           /* in all */
  uint32_t available_blocks; /* free, and cached ones no session holds */
  uint32_t cached_blocks;    /* of those, published prefixes kept for later prompts */
  uint32_t max_context, sessions;
  uint64_t bytes; /* on the device */
} wgllm_kv_pool_stats;
/* WGLLM_ERR_INVALID_ARG when the model has no pool. Not while another thread steps the model's sessions. */
WGLLM_API wgllm_status wgllm_model_kv_pool_stats(const wgllm_model *m, wgllm_kv_pool_stats *stats);
WGLLM_API wgllm_status wgllm_session_create(wgllm_model *m, const wgllm_session_params *params, wgllm_session **out);
WGLLM_API void wgllm_session_free(wgllm_session *s);
WGLLM_API const char *wgllm_session_error(const wgllm_session *s);
/* Empties the cache (the next tokens start at position 0). */
WGLLM_API void wgllm_session_reset(wgllm_session *s);
/* Tokens in the cache, and keeping only the first n of them (n above the count changes nothing). A model with
   sliding-window layers keeps only the last window + prefill-chunk keys of those layers (a ring): a rewind
   further back than that empties the cache (wgllm_session_n_past says 0; the next prefill recomputes). */
WGLLM_API uint32_t wgllm_session_n_past(const wgllm_session *s);
WGLLM_API void wgllm_session_rewind(wgllm_session *s, uint32_t n);
/* Bytes of the session's KV cache on the GPU (layers that read another layer's cache add none; window layers
   count their ring). */
WGLLM_API uint64_t wgllm_session_kv_bytes(const wgllm_session *s);
/* The context the session holds, in tokens (what wgllm_session_params.context 0 resolved to). */
WGLLM_API uint32_t wgllm_session_context(const wgllm_session *s);
/* Evaluates n tokens after the cache (a prompt, in chunks on the GPU). logits: [n][n_vocab] floats when
   all_rows, else [n_vocab] for the last token; may be NULL. Ids out of range or more tokens than the context
   holds are WGLLM_ERR_INVALID_ARG, with nothing evaluated. */
WGLLM_API wgllm_status wgllm_session_prefill(wgllm_session *s, const int32_t *ids, size_t n, float *logits,
                                             int all_rows);
/* Evaluates one token through the recorded decode step (what generation replays each token). logits: [n_vocab]
   or NULL. Not on a session that has generated (its step samples on the GPU): use a new session for that. */
WGLLM_API wgllm_status wgllm_session_decode(wgllm_session *s, int32_t id, float *logits);

/* ---------- embeddings ---------- */
/* How an embedding pools the final hidden states (after the model's final norm; no LM head runs). */
typedef enum wgllm_pooling {
  WGLLM_POOLING_DEFAULT = 0, /* the model's own (wgllm_model_pooling); LAST where the model names none (a causal LM) */
  WGLLM_POOLING_MEAN = 1,    /* the mean of every token's hidden state */
  WGLLM_POOLING_LAST = 2,    /* the last token's (Qwen3-Embedding and other decoder embedders) */
  WGLLM_POOLING_CLS = 3      /* the first token's */
} wgllm_pooling;
/* "default", "mean", "last", "cls"; NULL for a value outside the enum */
WGLLM_API const char *wgllm_pooling_name(wgllm_pooling p);
/* The pooling the model's file names: GGUF's {arch}.pooling_type (1 mean, 2 cls, 3 last), or a sentence-transformers
   directory's modules.json and its Pooling module's config.json (pooling_mode_mean_tokens, _cls_token, _lasttoken);
   WGLLM_POOLING_DEFAULT where it names none of those. *normalize (may be NULL): 1 where its embeddings are
   L2-normalised (a sentence-transformers Normalize module; a GGUF that names a pooling, as llama.cpp normalises by
   default), else 0. */
WGLLM_API wgllm_pooling wgllm_model_pooling(const wgllm_model *m, int *normalize);
/* 1 where the model has an LM head (it generates and gives logits: its own, or the embedding table when tied), 0 for an
   embedding model's weights without one (a Qwen3-Embedding directory of Qwen3Model's untied weights): such a model
   embeds, and its generations and wgllm_session_prefill fail naming the missing head. */
WGLLM_API int wgllm_model_has_lm_head(const wgllm_model *m);
/* The embedding of ids[0..n): the model's final hidden states of the n tokens (a prefill without the LM head, in
   prefill_chunk passes), pooled on the GPU into out [n_embd] floats (wgllm_model_info.n_embd), then divided by their
   L2 norm when normalize is 1 (0: not; -1: as the model says, wgllm_model_pooling). The tokens are the text's whole
   input: the session's cache is emptied first, and emptied again after (wgllm_session_n_past is 0 when it returns,
   whatever the outcome), so a session may embed between generations but keeps no cached prefix across it.
   Errors (WGLLM_ERR_INVALID_ARG, nothing evaluated): no tokens, an id outside the vocabulary, more tokens than the
   session's context, a session with a job that is not done, a pooling outside the enum; DEFAULT on a model whose file
   names a pooling wgllm does not compute (none: per-token embeddings; rank: a reranker) is WGLLM_ERR_UNSUPPORTED.
   A model without an LM head (an embedding model's weights, wgllm_session_prefill refuses it) embeds. */
WGLLM_API wgllm_status wgllm_session_embed(wgllm_session *s, const int32_t *ids, size_t n, wgllm_pooling pooling,
                                           int normalize, float *out);

/* Receives generated text as it becomes final (whole UTF-8 characters); return non-zero to stop. */
typedef int (*wgllm_stream_fn)(const char *text, size_t len, void *user);

/* The smallest temperature above 0 and the smallest repeat_penalty, and the largest of either: the sampler divides
   logits by the penalty and then by the temperature, and within these bounds a logit under 3e26 in magnitude stays
   finite through both (a value under the minimum, such as a denormal, would make infinities of ordinary logits). */
#define WGLLM_SAMPLING_SCALE_MIN 1e-6f
#define WGLLM_SAMPLING_SCALE_MAX 1e6f
/* The seed that asks for a random one (llama.cpp's LLAMA_DEFAULT_SEED, and its -1) */
#define WGLLM_SEED_RANDOM 0xFFFFFFFFu

typedef struct wgllm_generate_params {
  uint32_t max_tokens;     /* default 256 */
  float temperature;       /* 0: greedy (default 0.8); else in [WGLLM_SAMPLING_SCALE_MIN, _MAX] */
  uint32_t top_k;          /* 0: off (default 40) */
  float top_p;             /* 1: off (default 0.95) */
  float min_p;             /* 0: off (default 0.05) */
  float repeat_penalty;    /* 1: off (default 1, as llama.cpp's); in [WGLLM_SAMPLING_SCALE_MIN, _MAX] */
  uint32_t repeat_last_n;  /* window of the penalty (default 64, at most 256) */
  uint32_t seed;           /* same seed, same text; WGLLM_SEED_RANDOM (the default): drawn for each generation */
  const char *const *stop; /* stop strings (not part of the output) */
  size_t n_stop;
  wgllm_stream_fn on_text;
  void *user;
  int ignore_eos; /* keep generating past end-of-generation tokens (default 0: they end the text) */
  /* OpenAI's additive penalties over the same window as repeat_penalty (repeat_last_n tokens, the prompt's tail
     then the generated ones), after it as llama.cpp applies them: a token seen count times there loses
     frequency_penalty * count + presence_penalty from its logit. Each in [-2, 2] (negative favours repeats),
     0: off (default 0). */
  float presence_penalty, frequency_penalty;
  /* the lengths in bytes of stop[0..n_stop), NUL bytes then part of them; NULL (the default): each stop string
     ends at its NUL */
  const size_t *stop_len;
  /* speculative decoding with prompt lookup: each step proposes up to this many tokens (1..WGLLM_SPEC_MAX) that
     continue the latest earlier occurrence of the text's last few tokens (in the prompt or the reply), and one
     forward pass checks them all; the text is the one decoding gives without it (token for token in the exact
     precision, with every sampler setting and seed). Pays where replies repeat their input (extraction, editing,
     summaries, code). 0: off (the default). A job with it runs its verify steps while it is the only one decoding
     in a wgllm_jobs_step call and takes the batched step among several (speculation trades arithmetic, which a
     batch already uses, for fewer steps); a model whose batched decode pass does not record on the device
     (wgllm_model_can_speculate) or a session on the unfused decode path refuses it at wgllm_job_start, naming why. */
  uint32_t spec_lookup;
  /* speculative decoding with a draft model: a smaller model of the same vocabulary (wgllm_model_check_draft, which
     wgllm_job_start runs) proposes draft_max tokens a step (1..WGLLM_SPEC_MAX; 0: 7) by its own greedy decoding, and
     one forward pass of this model checks them; the text is the one decoding gives without it, as with
     spec_lookup (with both, lookup proposes first and the draft model where lookup finds nothing). The session keeps
     a session of the draft model (its own cache, the session's context and precision) while it lives: the draft
     model must outlive it. How many drafts a step takes adapts (more after a step accepted all, fewer after one
     accepted under half). NULL: off (the default). As with spec_lookup, a job with it steps alone while it is the
     only one decoding in a wgllm_jobs_step call, and takes the batched step among several. */
  wgllm_model *draft_model;
  uint32_t draft_max;
  /* constrained decoding: the text is always a prefix of a sentence of this grammar (wgllm_grammar_create, for this
     job's model), and ends (WGLLM_STOP_GRAMMAR) where nothing may follow it; end-of-generation tokens are drawn only
     where the sentence may end. Each step's mask is computed on the CPU from the token before and applied to the
     logits on the GPU, so the job keeps one step in flight (the next step's forward pass is queued ahead of its mask,
     the CPU's turn hidden behind it), steps alone (never batched) and does not speculate.
     A token limit can still cut the sentence short (WGLLM_STOP_MAX_TOKENS). NULL: off (the default). */
  const struct wgllm_grammar *grammar;
  /* OpenAI's logit_bias: logit_bias[k] added to token logit_bias_ids[k]'s logit before the draw (k < n_logit_bias;
     ids distinct and in the vocabulary, biases finite; -100 all but bans a token). A job with a bias steps alone.
     0: none (the default). */
  const int32_t *logit_bias_ids;
  const float *logit_bias;
  size_t n_logit_bias;
  /* OpenAI's logprobs: each generated token's log probability under the model (from its logits as the model gave
     them: before temperature, penalties, the grammar and the bias), and at each step the top_logprobs most likely
     tokens' (0..WGLLM_TOP_LOGPROBS_MAX), computed on the GPU beside the draw, only those values read back; read them
     with wgllm_job_logprobs. A job with logprobs steps alone and does not speculate. 0: off (the default). */
  int logprobs;
  uint32_t top_logprobs;
  /* special tokens' text kept in the generated text (llama-cli's --special): tool-call markers that are special
     tokens ([TOOL_CALLS], <|python_tag|>) reach a reply parser this way; end-of-generation tokens still end it.
     0: dropped (the default). */
  int special;
  /* context shift (llama.cpp's --context-shift and --keep): where the next token would not fit the session's
     context, the first n_keep tokens stay, half of the tokens after them are dropped, and the rest is computed again
     at its new positions (exactly what a fresh session computes from the tokens kept, at the cost of a prefill of
     them), so the reply goes on past the context instead of stopping with WGLLM_STOP_CONTEXT; the text returned is
     the text as generated (the penalties' window, stop strings and a grammar continue over it), only what the model
     sees is shorter. n_keep: -1 the whole prompt (what the session's cache held before it, and the prompt), else that
     many tokens and a leading BOS token (0: the BOS alone), at most the prompt and the context's tokens but two (a
     keep near the context shifts at nearly every token). A shifting job steps on in a batch with the others; its
     speculation (spec_lookup, draft_model) ends at its first shift. Counted in wgllm_generate_stats.context_shifts.
     0: off (the default: the reply stops at the context's end). */
  int context_shift;
  int32_t n_keep;
} wgllm_generate_params;
#define WGLLM_SPEC_MAX 15
/* The defaults noted above; they are the CLI's (wgllm run and chat start from them) and llama.cpp's. */
WGLLM_API wgllm_generate_params wgllm_generate_default_params(void);

/* ---------- chat replies: tool calls and reasoning ---------- */
/* The format the model's chat template teaches its tool calls in: "llama3_json", "hermes" (Qwen), "mistral",
   "gemma" (tool_code by prompt), "gemma4", "harmony" (gpt-oss: the reply is messages on channels; generate with
   special tokens kept, wgllm_generate_params.special, and read it with a reply parser), or "none"
   (docs/CHAT_TEMPLATES.md, "Tools"). */
WGLLM_API const char *wgllm_model_tool_format(const wgllm_model *m);
typedef struct wgllm_reply_options {
  int parse_tools; /* tool calls in the model's format become tool_calls (0: all is content; harmony: a message to a
                      function is content, its markers dropped) */
  const char *const *tool_names; /* the request's functions: a call naming another stays content (NULL: any) */
  size_t n_tool_names;
  int split_reasoning; /* a leading <think>...</think> is reasoning_content, not content (harmony: its analysis channel
                          is reasoning_content whatever this says) */
  int thinking_open;   /* the prompt ended inside <think>: the reply starts as reasoning */
  uint64_t id_seed;    /* 0: call ids "call_" + 24 random characters; else drawn from this seed */
} wgllm_reply_options;
/* A reply's text, whole or pushed piece by piece, into OpenAI's message fields (harmony's always parsed, tools or not:
   its analysis reasoning_content, its final and other channels content, no marker ever content). Each push and the
   finish give what became final as JSON ({"content": ..., "reasoning_content": ..., "tool_calls": [...]}, the
   non-empty ones; *json NULL when nothing did; free with wgllm_free); text that may still start a call or a think
   tag (a harmony marker) is held back.
   tool_calls is in OpenAI's stream form: a call starts, once its header is complete (its marker, a known name and
   the start of its arguments object), with {"index": i, "id": "call_...", "type": "function", "function": {"name":
   ..., "arguments": ""}}, and its arguments follow as they are generated, as {"index": i, "function": {"arguments":
   fragment}} (compact JSON: the whitespace between tokens dropped); a call's arguments are its fragments joined
   (a call whose name follows its arguments comes at its end: the start and one fragment). Whatever the pieces, the
   deltas add up to the whole text's parse. A call whose header is malformed, or that names a function not listed,
   stays content as written; a started call stays a call, its arguments what was written (cut off by the end of the
   reply, or ended by the first byte that is not JSON, which is content); docs/CHAT_TEMPLATES.md, "Tools". */
typedef struct wgllm_reply_parser wgllm_reply_parser;
WGLLM_API wgllm_status wgllm_reply_parser_create(const wgllm_model *m, const wgllm_reply_options *o,
                                                 wgllm_reply_parser **out);
WGLLM_API wgllm_status wgllm_reply_parser_push(wgllm_reply_parser *p, const char *text, size_t len, char **json);
WGLLM_API wgllm_status wgllm_reply_parser_finish(wgllm_reply_parser *p, char **json);
WGLLM_API void wgllm_reply_parser_free(wgllm_reply_parser *p); /* NULL is a no-op */
/* tool_choice "required" (function_name NULL) or a named function: the GBNF of a reply that is one call, in the
   model's format, of one of tools_json's functions ([{"type": "function", "function": {"name", "parameters"}}]),
   its arguments valid under the function's parameters schema (*gbnf malloc'd; free with wgllm_free). It constrains
   what follows wgllm_model_tool_call_prefix's text. llama3_json, hermes, mistral: the whole call (its marker written
   as text), parameters that use "$ref" refused; harmony: the arguments alone, after the prefix's header, of the
   named function or the only tool ("required" with several tools refused: the header naming the function ends with
   the special token <|message|>, which no grammar writes). gemma, gemma4 (calls that are not JSON) and none are
   WGLLM_ERR_UNSUPPORTED. */
WGLLM_API wgllm_status wgllm_model_tool_call_grammar(wgllm_model *m, const char *tools_json, size_t len,
                                                     const char *function_name, char **gbnf);
/* The text a forced call opens with where the grammar cannot write it, for the same arguments: *prefix NULL where
   wgllm_model_tool_call_grammar's grammar writes the whole call (llama3_json, hermes, mistral); harmony: the call's
   header, "<|channel|>commentary to=functions.NAME <|constrain|>json<|message|>" (NAME the named function or the only
   tool). The caller appends it to the prompt's tokens (tokenized with special-token text parsed, wgllm_tokenize),
   generates under the grammar, and pushes it to the reply parser before the generated text. Errors (several tools
   for "required", an unknown name) as the grammar's; *prefix malloc'd, free with wgllm_free. */
WGLLM_API wgllm_status wgllm_model_tool_call_prefix(wgllm_model *m, const char *tools_json, size_t len,
                                                    const char *function_name, char **prefix);

/* Grammars for constrained decoding (wgllm_generate_params.grammar), compiled once for a model's vocabulary and
   shared by any number of jobs of that model at once; free it after the jobs that use it, and before the model. */
typedef struct wgllm_grammar wgllm_grammar;
typedef enum wgllm_grammar_kind {
  WGLLM_GRAMMAR_GBNF = 0,    /* llama.cpp's GBNF, rule "root" the sentence (docs/SERVING.md, "Structured output") */
  WGLLM_GRAMMAR_JSON_SCHEMA, /* a JSON schema (OpenAI's strict structured outputs: what it does not support refused) */
  WGLLM_GRAMMAR_JSON_OBJECT  /* any JSON object (OpenAI's json_object; text and len ignored) */
} wgllm_grammar_kind;
/* Errors name where: a GBNF line:column and what was expected, a schema keyword and its JSON pointer
   (WGLLM_ERR_INVALID_ARG for a malformed grammar or schema, WGLLM_ERR_UNSUPPORTED for a valid one outside what is
   supported); the message is in wgllm_last_error(). */
WGLLM_API wgllm_status wgllm_grammar_create(wgllm_model *m, wgllm_grammar_kind kind, const char *text, size_t len,
                                            wgllm_grammar **out);
WGLLM_API void wgllm_grammar_free(wgllm_grammar *g); /* NULL is a no-op */

typedef enum wgllm_stop {
  WGLLM_STOP_NONE = 0,
  WGLLM_STOP_END_OF_GENERATION, /* the model produced an end-of-generation token */
  WGLLM_STOP_STRING,            /* a stop string appeared in the text */
  WGLLM_STOP_MAX_TOKENS,
  WGLLM_STOP_CALLBACK, /* on_text asked to stop */
  WGLLM_STOP_CONTEXT,  /* the context is full */
  WGLLM_STOP_GRAMMAR   /* the grammar's sentence is complete and nothing may follow it (wgllm_generate_params) */
} wgllm_stop;

typedef struct wgllm_generate_stats {
  uint32_t prompt_tokens, cached_tokens, generated_tokens;
  double prefill_seconds, decode_seconds;
  wgllm_stop stop;
  const char *stop_reason; /* the same in words: "end of generation", "stop string", "token limit", ... */
  uint32_t batched_tokens; /* of the generated tokens, those decoded in a step batched with other sessions */
  uint32_t preemptions;    /* times a KV pool under pressure evicted the job's cache (recomputed after) */
  /* prefill_seconds of a prompt prefilled a chunk a wgllm_jobs_step call is the time of those calls: the GPU
     may finish an earlier chunk's work during a later call (and count in that job's or another's times) */
  /* speculative decoding (spec_lookup): verify steps, the tokens they checked, those accepted (each step also gives
     one token of its own: generated tokens per step = (accepted + steps) / steps where every token came from one) */
  uint32_t spec_steps, spec_drafted, spec_accepted;
  uint32_t context_shifts; /* times the context was shifted to go on (wgllm_generate_params.context_shift) */
} wgllm_generate_stats;

/* Continues the text: the prompt is tokenized with the model's BOS rules (special-token text becomes its token, as
   in wgllm_tokenize); tokens already in the session's cache (a common prefix) are not computed again. stats may be
   NULL. The prompt ends at its NUL; wgllm_generate_n takes len bytes, NUL bytes tokenized as the byte they are. */
WGLLM_API wgllm_status wgllm_generate(wgllm_session *s, const char *prompt, const wgllm_generate_params *params,
                                      wgllm_generate_stats *stats);
WGLLM_API wgllm_status wgllm_generate_n(wgllm_session *s, const char *prompt, size_t len,
                                        const wgllm_generate_params *params, wgllm_generate_stats *stats);

typedef struct wgllm_message {
  const char *role; /* "system", "user", "assistant" */
  const char *content;
  size_t content_len; /* bytes of content, NUL bytes kept; 0 (a zeroed initializer): content ends at its NUL */
} wgllm_message;
/* Formats the conversation with the model's chat template, generates the assistant's reply (streamed through
   params->on_text) and returns it in *reply (malloc'd; free with wgllm_free). Special-token text in a message's
   content ("<|eot_id|>") becomes its token, as llama-cli's chat parses it (wgllm_chat_prompt's default is the
   other way). Content must be UTF-8. */
WGLLM_API wgllm_status wgllm_chat(wgllm_session *s, const wgllm_message *messages, size_t n,
                                  const wgllm_generate_params *params, char **reply, wgllm_generate_stats *stats);

/* ---------- generations stepped by the caller (servers) ----------
   A job is one generation on a session, driven a token at a time: wgllm_job_start checks the prompt and sets the
   job up (the session's cached common prefix is reused); the prompt is prefilled by the first wgllm_job_step
   (all of it, then the first token's text in the same call) or by wgllm_jobs_step a chunk (the session's
   prefill_chunk tokens) a call, so a long prompt does not hold the other jobs' tokens for all its length; each
   later step emits one token's text through params->on_text (stop strings held back as in wgllm_generate) and
   samples the next; the job is done at end of generation, a stop string, max_tokens, a full context or on_text
   returning non-zero. A session runs one job at a time; freeing a job that is not done cancels it (the session
   stays usable). The params' stop strings (and stop_len) and user pointer must outlive the job. */
typedef struct wgllm_job wgllm_job;
/* ids: the prompt's tokens (wgllm_tokenize, wgllm_chat_prompt). A session with a job that is not done is
   refused (WGLLM_ERR_INVALID_ARG): free or finish that one first. */
WGLLM_API wgllm_status wgllm_job_start(wgllm_session *s, const int32_t *ids, size_t n,
                                       const wgllm_generate_params *params, wgllm_job **out);
/* One token (the first call also prefills the prompt): *done (may be NULL) is set to 1 once the job has ended
   (then wgllm_job_stats is final). A step on a done job does nothing. */
WGLLM_API wgllm_status wgllm_job_step(wgllm_job *j, int *done);
/* Steps every job of jobs[0..n) that is not done by one token, or, for a job still prefilling, one chunk of its
   prompt (the last chunk samples its first token, whose text the next call emits). The jobs' sessions must
   belong to one model.
   Up to 64 of them decode in one batched forward pass (each weight read once for every 8 of them, and in the fast
   precision past 8 once for all; in the exact precision the text is the same as stepped alone), where the model's
   weights and shapes allow (Llama-family models with the fused decode GEMV's weight storages: q4gsw, Q4_0, Q8_0,
   Q4_K, Q5_K, Q6_K); the rest run one session after another, queued together (a job with spec_lookup or
   draft_model runs its verify steps while it is the only one decoding, and takes the batched step among others). The
   batched step is left running when the call returns (the next call queues its successor behind it, then takes
   its tokens), so the GPU works while the caller does; the other calls on those jobs and sessions collect it
   first. Jobs still prefilling take their next chunks in one pass together (up to one prefill chunk's tokens
   in all, oldest first; the others wait for the next call). Sessions on the model's KV pool attend in one dispatch
   pair a layer and length bucket, and under pressure on the pool a job may wait or be evicted and recomputed (see
   "a paged KV pool" above). A job that fails is done with its error (wgllm_job_error); the others go on. Returns the
   first failure's status. */
WGLLM_API wgllm_status wgllm_jobs_step(wgllm_job *const *jobs, size_t n);
WGLLM_API int wgllm_job_done(const wgllm_job *j);
/* 1 while the job's prompt is still being prefilled (no token sampled yet; wgllm_jobs_step takes a chunk a call) */
WGLLM_API int wgllm_job_prefilling(const wgllm_job *j);
/* The text emitted so far: its first *len bytes (owned by the job; what follows them is not final yet). */
WGLLM_API const char *wgllm_job_text(const wgllm_job *j, size_t *len);
WGLLM_API void wgllm_job_stats(const wgllm_job *j, wgllm_generate_stats *stats);
WGLLM_API const char *wgllm_job_error(const wgllm_job *j); /* "" when it has not failed */
/* A generated token's logprobs (wgllm_generate_params.logprobs): the token and its log probability, and the n_top
   most likely tokens of that step with theirs, most likely first (the lower id first on ties). */
#define WGLLM_TOP_LOGPROBS_MAX 20
typedef struct wgllm_token_logprobs {
  int32_t token;
  float logprob;
  uint32_t n_top;
  int32_t top_tokens[WGLLM_TOP_LOGPROBS_MAX];
  float top_logprobs[WGLLM_TOP_LOGPROBS_MAX];
} wgllm_token_logprobs;
/* Copies the logprobs of generated tokens first, first + 1, ... (at most n; the tokens generated so far) into out;
   returns how many it copied (0 when the job did not ask for logprobs). */
WGLLM_API size_t wgllm_job_logprobs(const wgllm_job *j, size_t first, wgllm_token_logprobs *out, size_t n);
WGLLM_API void wgllm_job_free(wgllm_job *j); /* NULL is a no-op */
/* How many leading ids of ids[0..n) the session's cache already holds (what a job on it would not recompute). */
WGLLM_API uint32_t wgllm_session_cached_prefix(const wgllm_session *s, const int32_t *ids, size_t n);

/* The prompt of a chat request in OpenAI's JSON ({"messages": [...], "tools": [...], and template variables
   such as "chat_template_kwargs": {"enable_thinking": false}}) rendered by the model's chat template and
   tokenized: *ids (malloc'd, free with wgllm_free) and, when text is not NULL, the prompt text (malloc'd).
   Text is text: special-token text inside a message's content (a content string or its text parts: "<|eot_id|>"
   typed by a user) is tokenized as the plain text it is, while the template's own markup is special; a request
   field "parse_special": true makes content's special-token text its token (what transformers' apply_chat_template
   followed by tokenizing the rendered text gives). A string's "\u0000" is a NUL byte, kept (tokenized as that
   byte; *text then holds it, so its strlen stops there). The JSON must be UTF-8, of at most 262,144 values nested
   at most 128 deep (checked before it is parsed, as the server's request bodies are: docs/LIMITS.md).
   Errors (malformed JSON, a message the template refuses) are WGLLM_ERR_INVALID_ARG or _UNSUPPORTED with the
   reason in wgllm_model_error. */
WGLLM_API wgllm_status wgllm_chat_prompt(wgllm_model *m, const char *request_json, size_t len, int32_t **ids, size_t *n,
                                         char **text);

/* ---------- descriptions ---------- */
/* What a model file holds, as text (malloc'd; free with wgllm_free): format, architecture and hyperparameters
   (or why it cannot run), tensors and bytes by type. Reads the file; needs no GPU. A file that opens but cannot
   run returns that status with *text set (the reason is in the text): free it in that case too. */
WGLLM_API wgllm_status wgllm_describe_file(const char *path, char **text);
/* What a model file is, read from the file alone (no GPU; a server lists models it has not loaded with it):
   architecture (the file's own name, NUL-terminated, cut to fit), sizes, the trained context (0: not said) and the
   bytes of its tensors in the file. Errors as wgllm_model_create's (the reason in wgllm_last_error()), a file that
   opens but cannot run among them. */
typedef struct wgllm_file_info {
  char architecture[64];
  uint32_t n_vocab, n_embd, n_layer, train_context;
  uint64_t tensor_bytes;
} wgllm_file_info;
WGLLM_API wgllm_status wgllm_file_info_read(const char *path, wgllm_file_info *info);
/* The adapter wgllm would use (adapter: part of its name, NULL: WGLLM_ADAPTER or the best), its backend,
   features, subgroup sizes, limits and the number of kernel variants, as text (malloc'd; free with wgllm_free). */
WGLLM_API wgllm_status wgllm_describe_gpu(const char *adapter, int disable_f16, char **text);

#ifdef __cplusplus
}
#endif
#endif
