/* `wgllm tokenize`: text to comma-separated ids (or one id and piece a line), or ids back to text (--decode),
   with the tokenizer of a model directory, a .gguf file or a tokenizer.json. Needs no GPU. */
#include "cli.h"
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

enum { K_PIECES = 512, K_IDS, K_NO_BOS, K_PARSE_SPECIAL, K_NO_PARSE_SPECIAL, K_NO_SPECIAL, K_DECODE };

static const cli_opt tok_opts[] = {
    {'p', "-p --prompt", CLI_TEXT, "TEXT", 0, 0, 0, CLI_CMD_TOKENIZE, "the text (also as the one operand)"},
    {'f', "-f --file", CLI_TEXT, "FILE", 0, 0, 0, CLI_CMD_TOKENIZE,
     "the text of FILE, every byte (- : standard input, also read when no text is given)"},
    {K_IDS, "--ids", CLI_FLAG, NULL, 0, 0, 0, CLI_CMD_TOKENIZE, "print the ids as one comma-separated line (default)"},
    {K_PIECES, "--pieces", CLI_FLAG, NULL, 0, 0, 0, CLI_CMD_TOKENIZE,
     "print each token as its id, a tab and its piece (as the tokenizer stores it, \\n \\t \\\\ \\xNN escaped)"},
    {K_NO_BOS, "--no-bos", CLI_FLAG, NULL, 0, 0, 0, CLI_CMD_TOKENIZE,
     "do not add the BOS/EOS tokens the tokenizer adds (transformers' add_special_tokens=False)"},
    {K_PARSE_SPECIAL, "--parse-special", CLI_FLAG, NULL, 0, 0, 0, CLI_CMD_TOKENIZE,
     "special-token text (\"<|eot_id|>\") becomes its token (default)"},
    {K_NO_PARSE_SPECIAL, "--no-parse-special", CLI_FLAG, NULL, 0, 0, 0, CLI_CMD_TOKENIZE,
     "special-token text is tokenized as plain text"},
    {K_NO_SPECIAL, "--no-special", CLI_FLAG, NULL, 0, 0, 0, CLI_CMD_TOKENIZE,
     "both of --no-bos and --no-parse-special (the older spelling)"},
    {K_DECODE, "--decode", CLI_TEXT, "IDS", 0, 0, 0, CLI_CMD_TOKENIZE,
     "ids (comma-separated) back to text; with --pieces one id and piece a line"},
    {0, NULL, 0, NULL, 0, 0, 0, 0, NULL}};

static const cli_opt *const tok_tables[] = {tok_opts, cli_common_opts, NULL};

typedef struct tok_args {
  cli_common c;
  const char *text, *file, *decode;
  int pieces, add_bos, parse_special, n_sources;
} tok_args;

static int on_opt(void *user, int key, const cli_value *v) {
  tok_args *a = user;
  int r = cli_common_set(&a->c, key, v);
  if (r != 1) return r;
  switch (key) {
  case 'p':
    a->text = v->text;
    a->n_sources++;
    return 0;
  case 'f':
    a->file = v->text;
    a->n_sources++;
    return 0;
  case K_IDS:
    a->pieces = 0;
    return 0;
  case K_PIECES:
    a->pieces = 1;
    return 0;
  case K_NO_BOS:
    a->add_bos = 0;
    return 0;
  case K_PARSE_SPECIAL:
    a->parse_special = 1;
    return 0;
  case K_NO_PARSE_SPECIAL:
    a->parse_special = 0;
    return 0;
  case K_NO_SPECIAL:
    a->add_bos = a->parse_special = 0;
    return 0;
  case K_DECODE:
    a->decode = v->text;
    return 0;
  }
  return 2;
}

static void usage(FILE *f) {
  fprintf(
      f, "usage: wgllm tokenize -m PATH [options] [--] [TEXT]      (no TEXT, -p or -f: standard input)\n"
         "       wgllm tokenize -m PATH --decode 1,2,3 [--pieces]\n"
         "  PATH: a model directory, a .gguf file or a tokenizer.json. The text is taken byte for byte (a final\n"
         "  newline of a file or of standard input is part of it). Defaults as transformers: BOS added, special-token\n"
         "  text parsed.\n");
  cli_print_options(f, CLI_CMD_TOKENIZE, tok_tables);
}

static void print_piece(const wgllm_vocab *v, int32_t id) {
  size_t len = 0;
  const char *p = wgllm_vocab_piece(v, id, &len);
  printf("%d\t", id);
  for (size_t i = 0; p && i < len; i++) {
    unsigned char c = (unsigned char)p[i];
    if (c == '\n')
      fputs("\\n", stdout);
    else if (c == '\t')
      fputs("\\t", stdout);
    else if (c == '\\')
      fputs("\\\\", stdout);
    else if (c < 0x20 || c == 0x7f)
      printf("\\x%02x", c);
    else
      putchar(c);
  }
  putchar('\n');
}

static int print_ids(const wgllm_vocab *v, const int32_t *ids, size_t n, int pieces) {
  for (size_t i = 0; i < n; i++) {
    if (pieces)
      print_piece(v, ids[i]);
    else
      printf("%s%d", i ? "," : "", ids[i]);
  }
  if (!pieces) printf("\n");
  return 0;
}

int cli_tokenize(int argc, char **argv) {
  tok_args a = {0};
  a.add_bos = a.parse_special = 1;
  char **ops;
  int n_ops;
  int rc = cli_parse("wgllm tokenize", CLI_CMD_TOKENIZE, tok_tables, argc, argv, on_opt, &a, &ops, &n_ops);
  if (rc) return rc;
  if (a.c.help) {
    free(ops);
    usage(stdout);
    return 0;
  }
  if (n_ops > 1) {
    fprintf(stderr, "wgllm tokenize: give the text as one argument (quote it)\n");
    free(ops);
    return 2;
  }
  if (n_ops) {
    a.text = ops[0];
    a.n_sources++;
  }
  free(ops);
  if (a.n_sources > 1 || (a.decode && a.n_sources)) {
    fprintf(stderr, "wgllm tokenize: give one text (TEXT, -p or -f) or --decode IDS\n");
    return 2;
  }
  if (!a.c.model) {
    fprintf(stderr, "wgllm tokenize: -m PATH is required (see --help)\n");
    return 2;
  }
  int32_t *dec = NULL;
  uint32_t n_dec = 0;
  if (a.decode && cli_parse_ids(a.decode, &dec, &n_dec)) {
    fprintf(stderr, "wgllm tokenize: --decode '%s' is not a comma-separated list of token ids\n", a.decode);
    return 2;
  }
  wgllm_vocab *v;
  wgllm_status st = wgllm_vocab_load(a.c.model, &v);
  if (st) {
    fprintf(stderr, "wgllm tokenize: %s (%s)\n", wgllm_last_error(), wgllm_status_name(st));
    free(dec);
    return 1;
  }
  rc = 0;
  if (a.decode) {
    if (a.pieces) {
      for (uint32_t i = 0; i < n_dec && !rc; i++)
        if (!wgllm_vocab_piece(v, dec[i], NULL)) {
          fprintf(stderr, "wgllm tokenize: id %d is outside the vocabulary (%zu tokens)\n", dec[i],
                  wgllm_vocab_n_tokens(v));
          rc = 1;
        }
      if (!rc) print_ids(v, dec, n_dec, 1);
    } else {
      char *out;
      size_t len;
      st = wgllm_vocab_detokenize(v, dec, n_dec, &out, &len);
      if (st) {
        fprintf(stderr, "wgllm tokenize: %s (%s)\n", wgllm_vocab_error(v), wgllm_status_name(st));
        rc = 1;
      } else {
        fwrite(out, 1, len, stdout);
        fputc('\n', stdout);
        wgllm_free(out);
      }
    }
    free(dec);
    wgllm_vocab_free(v);
    return rc;
  }
  char *owned = NULL;
  size_t len = 0;
  if (a.text) {
    len = strlen(a.text);
  } else {
    const char *path = a.file ? a.file : "-";
    if (!a.file && isatty(0)) fprintf(stderr, "wgllm tokenize: reading the text from standard input (end: Ctrl-D)\n");
    owned = cli_read_file(path, &len);
    if (!owned) {
      fprintf(stderr, "wgllm tokenize: %s: %s\n", a.file ? a.file : "standard input", strerror(errno));
      wgllm_vocab_free(v);
      return 1;
    }
    a.text = owned;
  }
  size_t n = 0;
  st = wgllm_vocab_tokenize(v, a.text, len, a.add_bos, a.parse_special, NULL, 0, &n);
  int32_t *ids = st ? NULL : malloc((n ? n : 1) * sizeof *ids);
  if (!st && !ids) st = WGLLM_ERR_OUT_OF_MEMORY;
  if (!st) st = wgllm_vocab_tokenize(v, a.text, len, a.add_bos, a.parse_special, ids, n, &n);
  if (st) {
    fprintf(stderr, "wgllm tokenize: %s (%s)\n",
            ids || st != WGLLM_ERR_OUT_OF_MEMORY ? wgllm_vocab_error(v) : "out of memory", wgllm_status_name(st));
    rc = 1;
  } else {
    print_ids(v, ids, n, a.pieces);
  }
  free(ids);
  free(owned);
  wgllm_vocab_free(v);
  return rc;
}
