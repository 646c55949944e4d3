/* `wgllm embed`: the embedding of each input (llama-embedding's job): every -p TEXT (tokenized with the model's BOS
   and EOS rules) and every --ids list is one input, embedded on its own (wgllm_session_embed) and printed as one
   line of n_embd numbers, or as OpenAI's JSON list with --json. The pooling and normalisation are the model's unless
   --pooling / --embd-normalize say otherwise. */
#include "cli.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { K_IDS = 512, K_POOLING, K_NORMALIZE, K_JSON };

static const cli_opt embed_opts[] = {
    {'p', "-p --prompt", CLI_TEXT, "TEXT", 0, 0, 0, CLI_CMD_EMBED, "a text to embed (repeat for several)"},
    {K_IDS, "--ids", CLI_TEXT, "IDS", 0, 0, 0, CLI_CMD_EMBED,
     "token ids to embed, comma-separated (repeat for several; no tokenizer is needed)"},
    {K_POOLING, "--pooling", CLI_CHOICE, "mean|last|cls", 0, 0, 0, CLI_CMD_EMBED,
     "pool the final hidden states by the mean, the last token or the first (default: the model's; last where it "
     "names none)"},
    {K_NORMALIZE, "--embd-normalize", CLI_INT, "N", -1, 2, 0, CLI_CMD_EMBED,
     "-1: none, 2: Euclidean (L2) norm, as llama-embedding's (default: the model's; 0 and 1 are not supported)"},
    {K_JSON, "--json", CLI_FLAG, NULL, 0, 0, 0, CLI_CMD_EMBED,
     "print OpenAI's embeddings JSON ({\"object\": \"list\", \"data\": [...]}) instead of a line an input"},
    {0, NULL, 0, NULL, 0, 0, 0, 0, NULL}};

static const cli_opt *const embed_tables[] = {embed_opts, cli_common_opts, NULL};

typedef struct embed_input {
  const char *text; /* -p TEXT, or NULL for --ids */
  const char *ids;
} embed_input;

typedef struct embed_args {
  cli_common c;
  embed_input *in;
  size_t n_in;
  wgllm_pooling pooling;
  int normalize; /* as wgllm_session_embed takes it: -1 the model's */
  int json, bad;
} embed_args;

static int on_opt(void *user, int key, const cli_value *v) {
  embed_args *a = user;
  int r = cli_common_set(&a->c, key, v);
  if (r != 1) return r;
  if (key == 'p' || key == K_IDS) {
    embed_input *grown = realloc(a->in, (a->n_in + 1) * sizeof *grown);
    if (!grown) return 1;
    a->in = grown;
    a->in[a->n_in++] = (embed_input){.text = key == 'p' ? v->text : NULL, .ids = key == K_IDS ? v->text : NULL};
  } else if (key == K_POOLING) {
    static const wgllm_pooling by_choice[] = {WGLLM_POOLING_MEAN, WGLLM_POOLING_LAST, WGLLM_POOLING_CLS};
    a->pooling = by_choice[v->choice];
  } else if (key == K_NORMALIZE) {
    if (v->i == 0 || v->i == 1) {
      fprintf(stderr, "wgllm embed: %s %lld (max-absolute or taxicab) is not supported: -1 (none) or 2 (L2)\n", v->name,
              v->i);
      return 2;
    }
    a->normalize = v->i == 2 ? 1 : 0;
  } else if (key == K_JSON)
    a->json = 1;
  return 0;
}

static void usage(FILE *f) {
  fprintf(f, "usage: wgllm embed -m PATH -p TEXT [-p TEXT ...] [--ids 5,9,2 ...] [options]\n"
             "  Each input's embedding: the model's final hidden states (no LM head) pooled and, as the model says or\n"
             "  --embd-normalize asks, L2-normalised; one line of numbers an input, in the order given.\n");
  cli_print_options(f, CLI_CMD_EMBED, embed_tables);
}

/* one input's ids (malloc'd): the text tokenized with the model's special tokens, or the list given */
static int input_ids(wgllm_model *m, const embed_input *in, int32_t **ids, uint32_t *n) {
  if (in->ids) {
    if (cli_parse_ids(in->ids, ids, n) || !*n) {
      fprintf(stderr, "wgllm embed: --ids '%s' is not a non-empty comma-separated list of token ids\n", in->ids);
      return 2;
    }
    return 0;
  }
  size_t len = strlen(in->text), cap = len + 8, got = 0;
  *ids = malloc(cap * sizeof **ids);
  wgllm_status st = *ids ? wgllm_tokenize(m, in->text, len, 1, *ids, cap, &got) : WGLLM_ERR_OUT_OF_MEMORY;
  if (!st && got > cap) { /* more ids than bytes + 8: take them all */
    free(*ids);
    cap = got;
    *ids = malloc(cap * sizeof **ids);
    st = *ids ? wgllm_tokenize(m, in->text, len, 1, *ids, cap, &got) : WGLLM_ERR_OUT_OF_MEMORY;
  }
  if (st) {
    fprintf(stderr, "wgllm embed: tokenizing -p: %s (%s)\n", wgllm_model_error(m), wgllm_status_name(st));
    return 1;
  }
  *n = (uint32_t)got;
  return 0;
}

int cli_embed(int argc, char **argv) {
  embed_args a = {.normalize = -1};
  char **ops;
  int n_ops;
  int rc = cli_parse("wgllm embed", CLI_CMD_EMBED, embed_tables, argc, argv, on_opt, &a, &ops, &n_ops);
  if (rc) {
    free(a.in);
    return rc;
  }
  if (n_ops && !a.c.help) fprintf(stderr, "wgllm embed: unexpected argument '%s' (see --help)\n", ops[0]);
  free(ops);
  if (a.c.help || n_ops || !a.c.model || !a.n_in) {
    if (!a.c.help && !n_ops) fprintf(stderr, "wgllm embed: -m PATH and at least one -p TEXT or --ids IDS are needed\n");
    usage(a.c.help ? stdout : stderr);
    free(a.in);
    return a.c.help ? 0 : 2;
  }
  int need_tok = 0;
  for (size_t i = 0; i < a.n_in; i++)
    need_tok |= a.in[i].text != NULL;
  wgllm_model *m;
  wgllm_session *s;
  a.c.no_prefill_progress = 1;
  rc = cli_open(&a.c, 0, &m, &s, NULL, !need_tok);
  if (rc) {
    free(a.in);
    return rc;
  }
  wgllm_model_info info;
  wgllm_model_get_info(m, &info);
  float *vec = malloc((size_t)info.n_embd * sizeof *vec);
  uint64_t tokens = 0;
  if (a.json) printf("{\"object\": \"list\", \"data\": [");
  for (size_t i = 0; !rc && i < a.n_in; i++) {
    int32_t *ids = NULL;
    uint32_t n = 0;
    rc = vec ? input_ids(m, &a.in[i], &ids, &n) : 1;
    wgllm_status st = rc ? WGLLM_OK : wgllm_session_embed(s, ids, n, a.pooling, a.normalize, vec);
    if (st) {
      fprintf(stderr, "wgllm embed: input %zu: %s (%s)\n", i, wgllm_session_error(s), wgllm_status_name(st));
      rc = st == WGLLM_ERR_INVALID_ARG ? 2 : 1;
    }
    free(ids);
    if (rc) break;
    tokens += n;
    if (a.json) printf("%s{\"object\": \"embedding\", \"index\": %zu, \"embedding\": [", i ? ", " : "", i);
    for (uint32_t d = 0; d < info.n_embd; d++)
      printf(a.json ? "%s%.9g" : "%s%.7g", d ? (a.json ? ", " : " ") : "", vec[d]);
    printf(a.json ? "]}" : "\n");
  }
  if (a.json && !rc)
    printf("], \"usage\": {\"prompt_tokens\": %llu, \"total_tokens\": %llu}}\n", (unsigned long long)tokens,
           (unsigned long long)tokens);
  else if (a.json)
    printf("\n");
  free(vec);
  free(a.in);
  wgllm_session_free(s);
  wgllm_model_free(m);
  return rc;
}
