/* wgllm public C API: status codes, version, models, tokenization, sessions, generation and chat.
   All handles are opaque; every fallible call returns a wgllm_status and leaves a message on its handle. */
#ifndef WGLLM_H
#define WGLLM_H
#include <stddef.h>
#include <stdint.h>
#ifdef __cplusplus
extern "C" {
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
  WGLLM_ERR_INTERNAL = 9       /* a bug in wgllm */
} wgllm_status;

/* "0.1.0" */
const char *wgllm_version(void);
/* Short constant name of a status ("WGLLM_ERR_FORMAT"). */
const char *wgllm_status_name(wgllm_status s);

/* ---------- models ---------- */
typedef struct wgllm_model wgllm_model;
typedef struct wgllm_session wgllm_session;

typedef struct wgllm_model_params {
  const char *weights;       /* "native" (default), "q4" (q4gsw group 32), "q4:64", "q4:128" */
  const char *adapter;       /* part of the adapter's name to prefer; NULL: WGLLM_ADAPTER or the best GPU */
  const char *chat_template; /* "llama3", "chatml", "gemma", "llama2", "none"; NULL: from the model */
  int disable_f16;           /* do not request shader-f16 (as on a device without it) */
} wgllm_model_params;
wgllm_model_params wgllm_model_default_params(void);

/* PATH: a Hugging Face directory (config.json, *.safetensors, tokenizer.json) or a .gguf file.
   On failure *out is NULL and wgllm_last_error() says what and where. */
wgllm_status wgllm_model_create(const char *path, const wgllm_model_params *params, wgllm_model **out);
void wgllm_model_free(wgllm_model *m); /* NULL is a no-op */
/* Message of the last failed wgllm_*_create call on this thread ("" if none). */
const char *wgllm_last_error(void);
/* Message of the last failed call on a handle ("" if none). */
const char *wgllm_model_error(const wgllm_model *m);

typedef struct wgllm_model_info {
  const char *architecture; /* the file's own name: "llama", "mistral", "qwen2", "qwen3" or "gemma3_text" */
  uint32_t n_vocab, n_embd, n_layer, n_head, n_head_kv, head_dim, n_ff, train_context;
  uint64_t weight_bytes; /* on the GPU */
  const char *weights;   /* "native", "q4gsw g32", ... */
  const char *adapter;   /* the GPU it runs on */
  const char *chat_template;
  int32_t bos, eos;
} wgllm_model_info;
wgllm_status wgllm_model_get_info(const wgllm_model *m, wgllm_model_info *info);

/* Text to ids. add_special: BOS/EOS as the model's tokenizer adds them; special-token text (e.g.
   "<|eot_id|>") becomes its token. *n_ids gets the count; when it exceeds cap, ids holds the first cap. */
wgllm_status wgllm_tokenize(wgllm_model *m, const char *text, size_t len, int add_special, int32_t *ids, size_t cap,
                            size_t *n_ids);
/* Ids to text (malloc'd, NUL-terminated; free with wgllm_free). An id outside the vocabulary is an error. */
wgllm_status wgllm_detokenize(wgllm_model *m, const int32_t *ids, size_t n, char **text);
void wgllm_free(void *p);

/* ---------- sessions ---------- */
typedef struct wgllm_session_params {
  uint32_t context; /* tokens (default 4096) */
  int kv_f16;       /* f16 KV cache: half the memory, f32 math; stored as packed u32 pairs, so any device */
} wgllm_session_params;
wgllm_session_params wgllm_session_default_params(void);
wgllm_status wgllm_session_create(wgllm_model *m, const wgllm_session_params *params, wgllm_session **out);
void wgllm_session_free(wgllm_session *s);
const char *wgllm_session_error(const wgllm_session *s);
void wgllm_session_reset(wgllm_session *s);

/* Receives generated text as it becomes final (whole UTF-8 characters); return non-zero to stop. */
typedef int (*wgllm_stream_fn)(const char *text, size_t len, void *user);

typedef struct wgllm_generate_params {
  uint32_t max_tokens;     /* default 256 */
  float temperature;       /* 0: greedy (default 0.8) */
  uint32_t top_k;          /* 0: off (default 40) */
  float top_p;             /* 1: off (default 0.95) */
  float min_p;             /* 0: off (default 0.05) */
  float repeat_penalty;    /* 1: off (default 1.1) */
  uint32_t repeat_last_n;  /* window of the penalty (default 64, at most 256) */
  uint32_t seed;           /* same seed, same text */
  const char *const *stop; /* stop strings (not part of the output) */
  size_t n_stop;
  wgllm_stream_fn on_text;
  void *user;
} wgllm_generate_params;
wgllm_generate_params wgllm_generate_default_params(void);

typedef struct wgllm_generate_stats {
  uint32_t prompt_tokens, cached_tokens, generated_tokens;
  double prefill_seconds, decode_seconds;
  const char *stop_reason; /* "end of generation", "stop string", "token limit", ... */
} wgllm_generate_stats;

/* Continues the text: the prompt is tokenized with the model's BOS rules; tokens already in the session's cache
   (a common prefix) are not computed again. stats may be NULL. */
wgllm_status wgllm_generate(wgllm_session *s, const char *prompt, const wgllm_generate_params *params,
                            wgllm_generate_stats *stats);

typedef struct wgllm_message {
  const char *role; /* "system", "user", "assistant" */
  const char *content;
} wgllm_message;
/* Formats the conversation with the model's chat template, generates the assistant's reply (streamed through
   params->on_text) and returns it in *reply (malloc'd; free with wgllm_free). */
wgllm_status wgllm_chat(wgllm_session *s, const wgllm_message *messages, size_t n, const wgllm_generate_params *params,
                        char **reply, wgllm_generate_stats *stats);

#ifdef __cplusplus
}
#endif
#endif
