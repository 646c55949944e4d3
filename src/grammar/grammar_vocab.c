/* The vocabulary as the grammar sees it (grammar.h, grammar_vocab_*): each token's bytes and kind, and the byte trie
   of the text tokens in depth-first preorder (grammar_int.h) that the mask walks, built from the tokens sorted by
   their bytes. */
#include "grammar_int.h"
#include <stdlib.h>
#include <string.h>

void grammar_vocab_free(grammar_vocab *v) {
  if (!v) return;
  free(v->kinds), free(v->off), free(v->data), free(v->byte), free(v->size), free(v->parent), free(v->tok_off);
  free(v->toks), free(v->eog), free(v->tok_node), free(v->below), free(v->depth);
  free(v);
}

uint32_t grammar_vocab_size(const grammar_vocab *v) { return v ? v->n : 0; }

/* order of tokens x and y by their bytes, then their ids */
static int tok_cmp(const grammar_vocab *v, uint32_t x, uint32_t y) {
  uint32_t lx = v->off[x + 1] - v->off[x], ly = v->off[y + 1] - v->off[y];
  int c = memcmp(v->data + v->off[x], v->data + v->off[y], lx < ly ? lx : ly);
  if (c) return c;
  if (lx != ly) return lx < ly ? -1 : 1;
  return x < y ? -1 : x > y ? 1 : 0;
}

/* merge sort of ids by their bytes (qsort has no context argument in C11) */
static void sort_ids(const grammar_vocab *v, uint32_t *a, uint32_t *tmp, size_t n) {
  if (n < 24) {
    for (size_t i = 1; i < n; i++) {
      uint32_t x = a[i];
      size_t j = i;
      for (; j > 0 && tok_cmp(v, a[j - 1], x) > 0; j--)
        a[j] = a[j - 1];
      a[j] = x;
    }
    return;
  }
  size_t h = n / 2, i = 0, j = h, k = 0;
  sort_ids(v, a, tmp, h);
  sort_ids(v, a + h, tmp, n - h);
  while (i < h && j < n)
    tmp[k++] = tok_cmp(v, a[i], a[j]) <= 0 ? a[i++] : a[j++];
  while (i < h)
    tmp[k++] = a[i++];
  while (j < n)
    tmp[k++] = a[j++];
  memcpy(a, tmp, n * sizeof *a);
}

grammar_vocab *grammar_vocab_create(uint32_t n, const char *const *bytes, const uint32_t *lens, const uint8_t *kinds,
                                    llm_err *err) {
  if (!n || n > (1u << 30) || !lens || !bytes) {
    llm_err_set(err, WGLLM_ERR_INVALID_ARG, "grammar vocabulary: %u tokens (1 to 2^30, with bytes and lengths)",
                (unsigned)n);
    return NULL;
  }
  uint64_t total = 0;
  for (uint32_t i = 0; i < n; i++)
    total += lens[i];
  if (total >= UINT32_MAX / 2) {
    llm_err_set(err, WGLLM_ERR_INVALID_ARG, "grammar vocabulary: %llu bytes of tokens (too many)",
                (unsigned long long)total);
    return NULL;
  }
  grammar_vocab *v = calloc(1, sizeof *v);
  uint32_t *ids = NULL, *tmp = NULL, *path = NULL;
  if (!v) goto oom;
  v->n = n;
  v->kinds = malloc(n);
  v->off = malloc((n + 1) * sizeof *v->off);
  v->data = malloc(total + 1);
  ids = malloc(n * sizeof *ids);
  tmp = malloc(n * sizeof *tmp);
  if (!v->kinds || !v->off || !v->data || !ids || !tmp) goto oom;
  uint32_t n_text = 0, o = 0;
  for (uint32_t i = 0; i < n; i++) {
    uint8_t k = kinds ? kinds[i] : GRAMMAR_TOK_TEXT;
    if (k > GRAMMAR_TOK_NEVER) k = GRAMMAR_TOK_NEVER;
    if (k == GRAMMAR_TOK_TEXT && (!lens[i] || !bytes[i])) k = GRAMMAR_TOK_NEVER;
    v->kinds[i] = k;
    v->off[i] = o;
    if (lens[i] && bytes[i]) memcpy(v->data + o, bytes[i], lens[i]);
    o += bytes[i] ? lens[i] : 0;
    if (k == GRAMMAR_TOK_TEXT) ids[n_text++] = i;
    if (k == GRAMMAR_TOK_EOG) v->n_eog++;
    if (lens[i] > v->max_len) v->max_len = lens[i];
  }
  v->off[n] = o;
  if (!(v->eog = malloc((v->n_eog + 1) * sizeof *v->eog))) goto oom;
  for (uint32_t i = 0, e = 0; i < n; i++)
    if (v->kinds[i] == GRAMMAR_TOK_EOG) v->eog[e++] = i;
  sort_ids(v, ids, tmp, n_text);
  size_t cap = 1;
  for (uint32_t t = 0; t < n_text; t++)
    cap += v->off[ids[t] + 1] - v->off[ids[t]];
  v->byte = malloc(cap);
  v->size = malloc(cap * sizeof *v->size);
  v->parent = malloc(cap * sizeof *v->parent);
  v->tok_off = calloc(cap + 1, sizeof *v->tok_off);
  v->toks = malloc((n_text + 1) * sizeof *v->toks);
  v->tok_node = calloc(n, sizeof *v->tok_node);
  path = malloc((v->max_len + 1) * sizeof *path);
  if (!v->byte || !v->size || !v->parent || !v->tok_off || !v->toks || !v->tok_node || !path) goto oom;
  uint32_t nn = 1, depth = 0; /* path[0..depth]: the previous token's nodes */
  v->byte[0] = 0, v->parent[0] = 0, path[0] = 0;
  const char *prev = NULL;
  uint32_t prev_len = 0;
  for (uint32_t t = 0; t < n_text; t++) {
    uint32_t id = ids[t], len = v->off[id + 1] - v->off[id];
    const char *b = v->data + v->off[id];
    uint32_t l = 0;
    while (prev && l < len && l < prev_len && b[l] == prev[l])
      l++;
    for (; depth > l; depth--)
      v->size[path[depth]] = nn - path[depth];
    for (; depth < len; depth++) {
      v->byte[nn] = (uint8_t)b[depth];
      v->parent[nn] = path[depth];
      path[depth + 1] = nn++;
    }
    v->tok_off[path[len] + 1]++; /* counts, made offsets below */
    v->toks[t] = id;
    v->tok_node[id] = path[len];
    prev = b, prev_len = len;
  }
  for (; depth > 0; depth--)
    v->size[path[depth]] = nn - path[depth];
  v->size[0] = nn;
  v->n_nodes = nn;
  for (uint32_t i = 0; i < nn; i++)
    v->tok_off[i + 1] += v->tok_off[i];
  v->below = calloc((size_t)nn * 4, sizeof *v->below);
  v->depth = calloc(nn, 1);
  if (!v->below || !v->depth) goto oom;
  for (uint32_t i = nn - 1; i > 0; i--) { /* children come after their parent */
    uint32_t p = v->parent[i], b = v->byte[i] < 0x80 ? v->byte[i] : 0;
    for (int w = 0; w < 4; w++)
      v->below[4 * p + w] |= v->below[4 * i + w];
    v->below[4 * p + (b >> 5)] |= 1u << (b & 31);
    if (v->depth[i] + 1 > v->depth[p]) v->depth[p] = v->depth[i] == 255 ? 255 : (uint8_t)(v->depth[i] + 1);
  }
  free(ids), free(tmp), free(path);
  return v;
oom:
  free(ids), free(tmp), free(path);
  grammar_vocab_free(v);
  llm_err_set(err, WGLLM_ERR_OUT_OF_MEMORY, "grammar vocabulary: out of memory for %u tokens", (unsigned)n);
  return NULL;
}
