/* POST /v1/embeddings of `wgllm serve` (OpenAI's embeddings endpoint): the request's inputs parsed (a string, an
   array of strings, an array of token ids or an array of such arrays), tokenized and checked against the model
   (serve_embed_prepare, where prompts are prepared), embedded one after another on a session the scheduler gives
   the task (serve_embed_run, on the scheduler's thread: wgllm_session_embed with the model's pooling and
   normalisation), and answered as OpenAI's list ("float" arrays or "base64" of little-endian float32). The other
   files hold only the hooks: the route (serve_handler.c), the parse and free (serve_openai.c), the prepare and the
   run (serve_sched.c). */
#ifndef WGLLM_SERVE_EMBED_H
#define WGLLM_SERVE_EMBED_H
#include "serve_sched.h"
#include <cjson/cJSON.h>

#define SERVE_EMBED_MAX_INPUTS 2048 /* inputs a request may give (OpenAI's limit) */

typedef struct serve_embed {
  size_t n;         /* inputs */
  char **text;      /* [n] an input given as text (NUL bytes kept; NULL where given as ids) */
  size_t *text_len; /* [n] */
  int32_t **ids;    /* [n] each input's tokens: given, or the text's (serve_embed_prepare) */
  size_t *n_ids;    /* [n] */
  int base64;       /* encoding_format "base64" */
  uint32_t dims;    /* "dimensions" as given (0: absent): must be the model's n_embd */
  uint32_t n_embd;  /* the model's, from serve_embed_prepare */
  float *vec;       /* [n][n_embd]: serve_embed_run's */
} serve_embed;

/* The embeddings fields of a parsed request body (o) into r->embed ("model" is read by the caller): 0, or -1 with
   err filled (400 naming the field and the input, 413 for more inputs than SERVE_EMBED_MAX_INPUTS). */
int serve_embed_fields(const cJSON *o, const serve_limits *lim, serve_request *r, serve_error *err);
void serve_embed_free(serve_embed *e); /* NULL is a no-op */
/* On the preparing thread, with the model's text calls to itself: the texts tokenized (the model's BOS and EOS
   rules), every input checked (ids in the vocabulary, not empty, within context tokens: a 400 naming the input's
   index), "dimensions" against the model's n_embd; t->ids / t->n_ids set to the longest input (what the session
   and the KV pool are sized by). 0, or -1 with t->err filled. */
int serve_embed_prepare(wgllm_model *m, uint32_t context, serve_task *t);
/* On the scheduler's thread, without its lock: every input's embedding on session s (its cache emptied before and
   after each), prompt tokens counted in t->usage. WGLLM_OK, or the failure with e filled (400 naming the input for
   what the engine refuses, 500 otherwise; WGLLM_ERR_DEVICE_LOST for the scheduler to handle). */
wgllm_status serve_embed_run(wgllm_session *s, serve_task *t, serve_error *e);
/* The warm-up of a model without an LM head (it cannot generate): one embedding on session s, which builds its
   pipelines. 0, or -1 with the reason in err. */
int serve_embed_warm_up(wgllm_model *m, wgllm_session *s, char *err, size_t errlen);
/* The answer of a done task (malloc'd JSON; NULL when out of memory). */
char *serve_embed_answer(const serve_task *t, const char *model);
#endif
