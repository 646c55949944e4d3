/* `wgllm perplexity`: perplexity over a text file as llama.cpp's llama-perplexity computes it (its perplexity(), the
   default mode): the whole text tokenized with the model's BOS (special-token text stays text), split into chunks of
   -c tokens (default 512); each chunk evaluated from an empty cache with its first token replaced by BOS when the
   model adds one; the tokens of the chunk's second half scored: positions j = c/2 .. c-2 add
   -log softmax(logits[j])[token j+1] (a log-sum-exp in double) to the sum. After each chunk the running perplexity
   "[i]X," on stdout; at the end "Final estimate: PPL = X +/- U" with U = PPL * sqrt((mean of nll^2 - mean^2) /
   (count - 1)), llama-perplexity's uncertainty. Public API only. */
#include "cli.h"
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

enum { K_CHUNKS = 512, K_BATCH };

static const cli_opt ppl_opts[] = {
    {'f', "-f --file", CLI_TEXT, "FILE", 0, 0, 0, CLI_CMD_PERPLEXITY,
     "the text (-: standard input), one final newline dropped as llama.cpp does"},
    {K_CHUNKS, "--chunks", CLI_INT, "N", -1, 2147483647, 0, CLI_CMD_PERPLEXITY,
     "evaluate at most N chunks (default -1: all)"},
    {K_BATCH, "-b --batch-size", CLI_INT, "N", 1, 2147483647, 0, CLI_CMD_PERPLEXITY,
     "accepted for llama-perplexity compatibility, ignored (changes nothing in the result)"},
    {0, NULL, 0, NULL, 0, 0, 0, 0, NULL}};

static const cli_opt *const ppl_tables[] = {ppl_opts, cli_common_opts, NULL};

typedef struct ppl_args {
  cli_common c;
  const char *file;
  const char *batch; /* -b N as given */
  long long chunks;
} ppl_args;

static int on_opt(void *user, int key, const cli_value *v) {
  ppl_args *a = user;
  int r = cli_common_set(&a->c, key, v);
  if (r != 1) return r;
  switch (key) {
  case 'f':
    a->file = v->text;
    return 0;
  case K_CHUNKS:
    if (v->i == 0) {
      fprintf(stderr, "wgllm perplexity: %s 0: expected -1 (all) or a number of chunks from 1\n", v->name);
      return 2;
    }
    a->chunks = v->i;
    return 0;
  case K_BATCH:
    a->batch = v->text;
    return 0;
  }
  return 2;
}

static void usage(FILE *f) {
  fprintf(f, "usage: wgllm perplexity -m PATH -f TEXT.txt [-c 512] [--chunks N] [options]\n"
             "  Perplexity of the model over the text, as llama.cpp's llama-perplexity computes it: chunks of -c\n"
             "  tokens, each from an empty cache (its first token BOS when the model adds one), the second half of\n"
             "  each scored. Prints the running perplexity after each chunk ([1]X,[2]Y,...) and\n"
             "  'Final estimate: PPL = X +/- U'. The text needs at least 2 x -c tokens.\n");
  cli_print_options(f, CLI_CMD_PERPLEXITY, ppl_tables);
}

/* -log softmax(row)[tok], as llama-perplexity's log_softmax: the maximum in float, the sum of expf in double */
static double token_nll(const float *row, uint32_t n_vocab, int32_t tok) {
  float mx = row[0];
  for (uint32_t i = 1; i < n_vocab; i++)
    mx = row[i] > mx ? row[i] : mx;
  double sum = 0.0;
  for (uint32_t i = 0; i < n_vocab; i++)
    sum += expf(row[i] - mx);
  return -((double)(row[tok] - mx) - log(sum));
}

/* Whether the model's tokenizer adds BOS (first) and EOS (last) to a text, seen on a probe text. */
static int special_added(const wgllm_vocab *v, int *add_bos, int *add_eos) {
  int32_t with[16], without[16];
  size_t nw = 0, nwo = 0;
  if (wgllm_vocab_tokenize(v, "a", 1, 1, 0, with, 16, &nw) || wgllm_vocab_tokenize(v, "a", 1, 0, 0, without, 16, &nwo))
    return -1;
  int32_t bos = wgllm_vocab_bos(v), eos = wgllm_vocab_eos(v);
  *add_bos = bos >= 0 && nw > nwo && nw <= 16 && with[0] == bos;
  *add_eos = eos >= 0 && nw > nwo + (size_t)*add_bos && nw <= 16 && with[nw - 1] == eos;
  return 0;
}

int cli_perplexity(int argc, char **argv) {
  ppl_args a = {0};
  a.chunks = -1;
  char **ops;
  int n_ops;
  int rc = cli_parse("wgllm perplexity", CLI_CMD_PERPLEXITY, ppl_tables, argc, argv, on_opt, &a, &ops, &n_ops);
  if (rc) return rc;
  if (n_ops && !a.c.help) fprintf(stderr, "wgllm perplexity: unexpected argument '%s' (see --help)\n", ops[0]);
  free(ops);
  if (a.c.help) {
    usage(stdout);
    return 0;
  }
  if (n_ops) return 2;
  if (!a.c.model || !a.file) {
    fprintf(stderr, "wgllm perplexity: -m PATH and -f FILE are required\n");
    usage(stderr);
    return 2;
  }
  size_t len = 0;
  char *text = cli_read_file(a.file, &len);
  if (!text) {
    fprintf(stderr, "wgllm perplexity: -f %s: %s\n", a.file, strerror(errno));
    return 2;
  }
  if (len && text[len - 1] == '\n') text[--len] = 0; /* llama.cpp's -f drops one final newline */
  long bad = cli_utf8_invalid_at(text);
  if (bad >= 0 || strlen(text) != len) {
    fprintf(stderr, "wgllm perplexity: -f %s: %s at byte %ld\n", a.file, bad >= 0 ? "not valid UTF-8" : "a NUL byte",
            bad >= 0 ? bad : (long)strlen(text));
    free(text);
    return 2;
  }
  uint32_t n_ctx = a.c.ctx ? a.c.ctx : 512; /* llama-perplexity's default */
  if (a.batch && a.c.verbose)
    fprintf(stderr,
            "wgllm perplexity: -b %s is accepted for llama-perplexity compatibility and ignored (it changes "
            "nothing in the result)\n",
            a.batch);

  wgllm_model *m = NULL;
  a.c.no_prefill_progress = 1; /* this command shows its chunks instead */
  rc = cli_open(&a.c, 0, &m, NULL, NULL, 0);
  if (rc) {
    free(text);
    return rc;
  }
  wgllm_model_info info;
  wgllm_model_get_info(m, &info);
  wgllm_session *s = NULL;
  int32_t *ids = NULL, *chunk = NULL;
  float *logits = NULL;
  rc = 2;
  if (info.train_context && n_ctx > info.train_context) {
    fprintf(stderr,
            "wgllm perplexity: a context of %u tokens (%s) is more than the %u the model was trained on; set -c N\n",
            n_ctx, a.c.ctx ? "-c" : "the default, as llama-perplexity's", info.train_context);
    goto done;
  }
  const wgllm_vocab *v = wgllm_model_vocab(m);
  int add_bos = 0, add_eos = 0;
  if (special_added(v, &add_bos, &add_eos)) {
    fprintf(stderr, "wgllm perplexity: %s\n", wgllm_vocab_error(v));
    rc = 1;
    goto done;
  }
  if (add_eos) { /* llama-perplexity asserts the same */
    fprintf(stderr, "wgllm perplexity: the model's tokenizer adds EOS to a text; llama-perplexity refuses such models "
                    "too\n");
    goto done;
  }
  /* the whole text: BOS as the tokenizer adds it, special-token text kept as text (llama-perplexity's tokenize) */
  size_t cap = len + 16, n = 0;
  ids = malloc(cap * sizeof *ids);
  wgllm_status st = ids ? wgllm_vocab_tokenize(v, text, len, 1, 0, ids, cap, &n) : WGLLM_ERR_OUT_OF_MEMORY;
  if (!st && n > cap) {
    free(ids);
    cap = n;
    ids = malloc(cap * sizeof *ids);
    st = ids ? wgllm_vocab_tokenize(v, text, len, 1, 0, ids, cap, &n) : WGLLM_ERR_OUT_OF_MEMORY;
  }
  if (st) {
    fprintf(stderr, "wgllm perplexity: -f %s: %s (%s)\n", a.file, ids ? wgllm_vocab_error(v) : "out of memory",
            wgllm_status_name(st));
    rc = 1;
    goto done;
  }
  if (n < 2 * (size_t)n_ctx) { /* llama-perplexity's rule: at least two chunks' worth */
    fprintf(stderr,
            "wgllm perplexity: -f %s is %zu tokens; a context of %u needs at least %u (2 x -c, as llama-perplexity)\n",
            a.file, n, n_ctx, 2 * n_ctx);
    goto done;
  }
  uint32_t n_chunk = (uint32_t)(n / n_ctx);
  if (a.chunks > 0 && (uint64_t)a.chunks < n_chunk) n_chunk = (uint32_t)a.chunks;
  uint32_t first = n_ctx / 2, scored = n_ctx - 1 - first;

  wgllm_session_params sp = cli_session_params(&a.c);
  sp.context = n_ctx;
  st = wgllm_session_create(m, &sp, &s);
  if (st) {
    fprintf(stderr, "wgllm perplexity: %s (%s)\n", wgllm_last_error(), wgllm_status_name(st));
    rc = 1;
    goto done;
  }
  /* the scored rows come back in groups of at most 256 MiB of logits */
  uint32_t V = info.n_vocab;
  size_t group = ((size_t)256 << 20) / ((size_t)V * sizeof(float));
  if (group < 1) group = 1;
  if (group > scored) group = scored;
  logits = malloc(group * V * sizeof *logits);
  chunk = malloc(n_ctx * sizeof *chunk);
  if (!logits || !chunk) {
    fprintf(stderr, "wgllm perplexity: out of memory\n");
    rc = 1;
    goto done;
  }
  if (a.c.verbose)
    fprintf(stderr,
            "wgllm perplexity: %zu tokens (%s), %u chunks of %u tokens, %u scored a chunk, precision %s, KV %s\n", n,
            add_bos ? "BOS added" : "no BOS", n_chunk, n_ctx, scored, wgllm_precision_name(sp.precision),
            a.c.kv_f16 ? "f16" : "f32");

  /* progress on a terminal, while stdout (where the results grow on one line) is not that terminal too */
  int tty_out = isatty(1);
  cli_progress prog;
  cli_progress_begin(&prog);
  double nll = 0.0, nll2 = 0.0;
  uint64_t count = 0;
  double t0 = cli_now();
  rc = 0;
  for (uint32_t i = 0; i < n_chunk; i++) {
    if (i == 0 || !tty_out) {
      double t = cli_now() - t0;
      if (i == 0)
        cli_progress_show(&prog, 1, "perplexity: chunk 1/%u", n_chunk);
      else
        cli_progress_show(&prog, 1, "perplexity: chunk %u/%u, %.0f tok/s, ETA %.0f s", i + 1, n_chunk,
                          (double)i * n_ctx / t, t / i * (n_chunk - i));
    }
    memcpy(chunk, ids + (size_t)i * n_ctx, n_ctx * sizeof *chunk);
    if (add_bos) chunk[0] = wgllm_vocab_bos(v);
    wgllm_session_reset(s);
    /* the unscored first half without logits, then the scored rows (the last token predicts nothing scored) */
    st = wgllm_session_prefill(s, chunk, first, NULL, 0);
    for (uint32_t j0 = first; !st && j0 < n_ctx - 1; j0 += (uint32_t)group) {
      uint32_t rows = n_ctx - 1 - j0 < group ? n_ctx - 1 - j0 : (uint32_t)group;
      st = wgllm_session_prefill(s, chunk + j0, rows, logits, 1);
      for (uint32_t r = 0; !st && r < rows; r++) {
        double x = token_nll(logits + (size_t)r * V, V, ids[(size_t)i * n_ctx + j0 + r + 1]);
        nll += x;
        nll2 += x * x;
      }
    }
    if (st) {
      cli_progress_end(&prog);
      if (i && tty_out) fputc('\n', stdout);
      fprintf(stderr, "wgllm perplexity: chunk %u: %s (%s)\n", i + 1, wgllm_session_error(s), wgllm_status_name(st));
      rc = 1;
      goto done;
    }
    count += scored;
    if (i == 0) {
      cli_progress_end(&prog);
      double t = cli_now() - t0;
      if (prog.on || a.c.verbose)
        fprintf(stderr, "wgllm perplexity: %.2f s a chunk, ETA %.2f minutes\n", t, t * n_chunk / 60.0);
    }
    if (!tty_out) cli_progress_end(&prog);
    printf("[%u]%.4f,", i + 1, exp(nll / (double)count));
    fflush(stdout);
  }
  cli_progress_end(&prog);
  printf("\n");
  double mean = nll / (double)count, ppl = exp(mean), var = nll2 / (double)count - mean * mean;
  if (count > 1 && var > 0)
    printf("Final estimate: PPL = %.4f +/- %.5f\n", ppl, sqrt(var / (double)(count - 1)) * ppl);
  else
    printf("Final estimate: PPL = %.4f (no uncertainty: %s)\n", ppl,
           count > 1 ? "the tokens' log-probabilities do not vary" : "one token scored");
  fflush(stdout);
  if (a.c.verbose)
    fprintf(stderr, "wgllm perplexity: %u chunks, %llu tokens scored in %.2f s\n", n_chunk, (unsigned long long)count,
            cli_now() - t0);
done:
  free(logits);
  free(chunk);
  free(ids);
  free(text);
  wgllm_session_free(s);
  wgllm_model_free(m);
  return rc;
}
