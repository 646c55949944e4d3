/* Tokenizer building blocks: growable buffers, the string and integer hash maps that make a 260k-vocab,
   500k-merge tokenizer load fast, strict UTF-8 helpers, the GPT-2 byte<->unicode map, and the BPE merge
   of one pre-tokenized word (by merge rank, as HF `tokenizers` does, or by piece score, as SentencePiece
   and llama.cpp do for GGUF "llama" vocabularies). */
#define WGLLM_TOKENIZER_INTERNAL
#include "tokenizer.h"
#include <limits.h>
#include <stdlib.h>
#include <string.h>

bool tok_buf_put(tok_buf *b, const void *s, size_t n) {
  if (b->n + n + 1 > b->cap) {
    size_t cap = b->cap ? b->cap : 256;
    while (cap < b->n + n + 1)
      cap *= 2;
    char *p = realloc(b->p, cap);
    if (!p) return false;
    b->p = p;
    b->cap = cap;
  }
  if (n) memcpy(b->p + b->n, s, n);
  b->n += n;
  b->p[b->n] = 0;
  return true;
}

/* ---- hashing ---- */

static uint64_t hash_bytes(const char *s, size_t n) { /* FNV-1a 64, folded with a final mix */
  uint64_t h = 1469598103934665603ull;
  for (size_t i = 0; i < n; i++)
    h = (h ^ (uint8_t)s[i]) * 1099511628211ull;
  h ^= h >> 29;
  return h;
}

static uint64_t mix64(uint64_t x) {
  x ^= x >> 33;
  x *= 0xff51afd7ed558ccdull;
  x ^= x >> 33;
  x *= 0xc4ceb9fe1a85ec53ull;
  x ^= x >> 33;
  return x;
}

static bool smap_rehash(tok_smap *m, size_t cap) {
  tok_sslot *n = malloc(cap * sizeof *n);
  if (!n) return false;
  for (size_t i = 0; i < cap; i++)
    n[i].val = INT32_MIN;
  for (size_t i = 0; i < m->cap; i++) {
    if (m->slot[i].val == INT32_MIN) continue;
    size_t j = m->slot[i].hash & (cap - 1);
    while (n[j].val != INT32_MIN)
      j = (j + 1) & (cap - 1);
    n[j] = m->slot[i];
  }
  free(m->slot);
  m->slot = n;
  m->cap = cap;
  return true;
}

bool tok_smap_reserve(tok_smap *m, size_t n) {
  size_t cap = m->cap ? m->cap : 1024;
  while ((n + 1) * 4 > cap * 3)
    cap *= 2;
  return cap == m->cap || smap_rehash(m, cap);
}

void tok_smap_free(tok_smap *m) {
  free(m->slot);
  memset(m, 0, sizeof *m);
}

int tok_smap_put(tok_smap *m, const char *base, uint32_t off, uint32_t len, int32_t val, int32_t *old) {
  if ((m->count + 1) * 4 > m->cap * 3 && !smap_rehash(m, m->cap ? m->cap * 2 : 1024)) return -1;
  uint32_t h = (uint32_t)hash_bytes(base + off, len);
  size_t j = h & (m->cap - 1);
  tok_sslot *sl = m->slot;
  while (sl[j].val != INT32_MIN) {
    if (sl[j].hash == h && sl[j].klen == len && memcmp(base + sl[j].koff, base + off, len) == 0) {
      if (old) *old = sl[j].val;
      return 0; /* present: left unchanged */
    }
    j = (j + 1) & (m->cap - 1);
  }
  sl[j] = (tok_sslot){h, off, len, val};
  m->count++;
  return 1;
}

int32_t tok_smap_get(const tok_smap *m, const char *base, const char *s, size_t n) {
  if (!m->cap) return -1;
  uint32_t h = (uint32_t)hash_bytes(s, n);
  size_t j = h & (m->cap - 1);
  const tok_sslot *sl = m->slot;
  while (sl[j].val != INT32_MIN) {
    if (sl[j].hash == h && sl[j].klen == n && memcmp(base + sl[j].koff, s, n) == 0) return sl[j].val;
    j = (j + 1) & (m->cap - 1);
  }
  return -1;
}

static bool u64_rehash(tok_u64map *m, size_t cap) {
  tok_u64slot *n = malloc(cap * sizeof *n);
  if (!n) return false;
  for (size_t i = 0; i < cap; i++)
    n[i].key = UINT64_MAX;
  for (size_t i = 0; i < m->cap; i++) {
    if (m->slot[i].key == UINT64_MAX) continue;
    size_t j = mix64(m->slot[i].key) & (cap - 1);
    while (n[j].key != UINT64_MAX)
      j = (j + 1) & (cap - 1);
    n[j] = m->slot[i];
  }
  free(m->slot);
  m->slot = n;
  m->cap = cap;
  return true;
}

bool tok_u64_reserve(tok_u64map *m, size_t n) {
  size_t cap = m->cap ? m->cap : 1024;
  while ((n + 1) * 4 > cap * 3)
    cap *= 2;
  return cap == m->cap || u64_rehash(m, cap);
}

bool tok_u64_put(tok_u64map *m, uint64_t key, uint64_t val) {
  if ((m->count + 1) * 4 > m->cap * 3 && !u64_rehash(m, m->cap ? m->cap * 2 : 1024)) return false;
  size_t j = mix64(key) & (m->cap - 1);
  tok_u64slot *sl = m->slot;
  while (sl[j].key != UINT64_MAX && sl[j].key != key)
    j = (j + 1) & (m->cap - 1);
  if (sl[j].key == UINT64_MAX) m->count++;
  sl[j].key = key;
  sl[j].val = val; /* a repeated key overwrites, as a Rust HashMap collect does */
  return true;
}

bool tok_u64_get(const tok_u64map *m, uint64_t key, uint64_t *val) {
  if (!m->cap) return false;
  size_t j = mix64(key) & (m->cap - 1);
  const tok_u64slot *sl = m->slot;
  while (sl[j].key != UINT64_MAX) {
    if (sl[j].key == key) {
      *val = sl[j].val;
      return true;
    }
    j = (j + 1) & (m->cap - 1);
  }
  return false;
}

void tok_u64_free(tok_u64map *m) {
  free(m->slot);
  memset(m, 0, sizeof *m);
}

/* ---- UTF-8 ---- */

size_t tok_utf8_valid_prefix(const char *s, size_t n, size_t i) {
  /* length of the valid sequence starting at s[i], 0 if invalid or truncated */
  const uint8_t *p = (const uint8_t *)s + i;
  size_t rem = n - i;
  uint8_t c = p[0];
  if (c < 0x80) return 1;
  if (c < 0xC2) return 0;
  if (c < 0xE0) return (rem >= 2 && (p[1] & 0xC0) == 0x80) ? 2 : 0;
  if (c < 0xF0) {
    if (rem < 3 || (p[1] & 0xC0) != 0x80 || (p[2] & 0xC0) != 0x80) return 0;
    if (c == 0xE0 && p[1] < 0xA0) return 0;  /* overlong */
    if (c == 0xED && p[1] >= 0xA0) return 0; /* surrogate */
    return 3;
  }
  if (c < 0xF5) {
    if (rem < 4 || (p[1] & 0xC0) != 0x80 || (p[2] & 0xC0) != 0x80 || (p[3] & 0xC0) != 0x80) return 0;
    if (c == 0xF0 && p[1] < 0x90) return 0;
    if (c == 0xF4 && p[1] >= 0x90) return 0;
    return 4;
  }
  return 0;
}

bool tok_utf8_validate(const char *s, size_t n, size_t *bad) {
  size_t i = 0;
  while (i < n) {
    if ((uint8_t)s[i] < 0x80) {
      i++;
      continue;
    }
    size_t l = tok_utf8_valid_prefix(s, n, i);
    if (!l) {
      *bad = i;
      return false;
    }
    i += l;
  }
  return true;
}

/* For lossy decoding: how many bytes from s[i] form a maximal prefix of a valid sequence (1..3), and whether
   the bytes that follow make it definitely invalid (*done) or it may still complete (more input). */
size_t tok_utf8_partial(const char *s, size_t n, size_t i, bool *may_complete) {
  const uint8_t *p = (const uint8_t *)s + i;
  size_t rem = n - i, need;
  uint8_t c = p[0];
  uint8_t lo = 0x80, hi = 0xBF;
  *may_complete = false;
  if (c >= 0xC2 && c < 0xE0)
    need = 2;
  else if (c >= 0xE0 && c < 0xF0) {
    need = 3;
    if (c == 0xE0) lo = 0xA0;
    if (c == 0xED) hi = 0x9F;
  } else if (c >= 0xF0 && c < 0xF5) {
    need = 4;
    if (c == 0xF0) lo = 0x90;
    if (c == 0xF4) hi = 0x8F;
  } else
    return 1;
  size_t k = 1;
  while (k < need && k < rem) {
    uint8_t b = p[k];
    if (k == 1 ? (b < lo || b > hi) : (b & 0xC0) != 0x80) return k;
    k++;
  }
  if (k < need) *may_complete = true; /* ran out of input inside a valid prefix */
  return k;
}

uint32_t tok_utf8_decode(const char *s, size_t *adv) {
  const uint8_t *p = (const uint8_t *)s;
  if (p[0] < 0x80) {
    *adv = 1;
    return p[0];
  }
  if (p[0] < 0xE0) {
    *adv = 2;
    return ((uint32_t)(p[0] & 0x1F) << 6) | (p[1] & 0x3F);
  }
  if (p[0] < 0xF0) {
    *adv = 3;
    return ((uint32_t)(p[0] & 0x0F) << 12) | ((uint32_t)(p[1] & 0x3F) << 6) | (p[2] & 0x3F);
  }
  *adv = 4;
  return ((uint32_t)(p[0] & 0x07) << 18) | ((uint32_t)(p[1] & 0x3F) << 12) | ((uint32_t)(p[2] & 0x3F) << 6) |
         (p[3] & 0x3F);
}

size_t tok_utf8_encode(uint32_t cp, char *o) {
  if (cp < 0x80) {
    o[0] = (char)cp;
    return 1;
  }
  if (cp < 0x800) {
    o[0] = (char)(0xC0 | (cp >> 6));
    o[1] = (char)(0x80 | (cp & 0x3F));
    return 2;
  }
  if (cp < 0x10000) {
    o[0] = (char)(0xE0 | (cp >> 12));
    o[1] = (char)(0x80 | ((cp >> 6) & 0x3F));
    o[2] = (char)(0x80 | (cp & 0x3F));
    return 3;
  }
  o[0] = (char)(0xF0 | (cp >> 18));
  o[1] = (char)(0x80 | ((cp >> 12) & 0x3F));
  o[2] = (char)(0x80 | ((cp >> 6) & 0x3F));
  o[3] = (char)(0x80 | (cp & 0x3F));
  return 4;
}

/* Unicode White_Space (what Rust's char::is_whitespace and Oniguruma's Unicode \s accept) */
bool tok_is_white_space(uint32_t c) {
  return (c >= 9 && c <= 13) || c == 0x20 || c == 0x85 || c == 0xA0 || c == 0x1680 || (c >= 0x2000 && c <= 0x200A) ||
         c == 0x2028 || c == 0x2029 || c == 0x202F || c == 0x205F || c == 0x3000;
}

/* GPT-2 bytes_to_unicode: printable Latin-1 bytes map to themselves, the other 68 to U+0100.. in order */
uint32_t tok_byte_to_cp(uint8_t b) {
  if ((b >= 0x21 && b <= 0x7E) || (b >= 0xA1 && b <= 0xAC) || b >= 0xAE) return b;
  if (b <= 0x20) return 256u + b;
  if (b <= 0xA0) return 256u + 33 + (b - 0x7F);
  return 256u + 67; /* 0xAD */
}

int tok_cp_to_byte(uint32_t cp) {
  if (cp < 256) {
    uint8_t b = (uint8_t)cp;
    return ((b >= 0x21 && b <= 0x7E) || (b >= 0xA1 && b <= 0xAC) || b >= 0xAE) ? b : -1;
  }
  if (cp > 256 + 67) return -1;
  uint32_t n = cp - 256;
  if (n <= 32) return (int)n;
  if (n <= 66) return (int)(0x7F + n - 33);
  return 0xAD;
}

/* ---- BPE on one word ---- */

typedef struct bpe_sym {
  int32_t id;
  int32_t prev, next;
  uint32_t start, len; /* bytes of the word; len 0 = merged away */
} bpe_sym;

typedef struct bpe_cand {
  double key; /* rank, or -score: lower merges first */
  int32_t pos, new_id;
  uint32_t size;
} bpe_cand;

static bool cand_less(const bpe_cand *a, const bpe_cand *b) {
  return a->key < b->key || (a->key == b->key && a->pos < b->pos);
}

static bool heap_push(tok_bpe_scratch *s, bpe_cand c) {
  if (s->n_heap == s->cap_heap) {
    size_t cap = s->cap_heap ? s->cap_heap * 2 : 64;
    void *p = realloc(s->heap, cap * sizeof(bpe_cand));
    if (!p) return false;
    s->heap = p;
    s->cap_heap = cap;
  }
  bpe_cand *h = s->heap;
  size_t i = s->n_heap++;
  while (i > 0) {
    size_t up = (i - 1) / 2;
    if (!cand_less(&c, &h[up])) break;
    h[i] = h[up];
    i = up;
  }
  h[i] = c;
  return true;
}

static bpe_cand heap_pop(tok_bpe_scratch *s) {
  bpe_cand *h = s->heap;
  bpe_cand top = h[0], last = h[--s->n_heap];
  size_t i = 0, n = s->n_heap;
  for (;;) {
    size_t l = 2 * i + 1, r = l + 1, m = i;
    const bpe_cand *best = &last;
    if (l < n && cand_less(&h[l], best)) {
      m = l;
      best = &h[l];
    }
    if (r < n && cand_less(&h[r], best)) m = r;
    if (m == i) break;
    h[i] = h[m];
    i = m;
  }
  if (n) h[i] = last;
  return top;
}

static bool sym_push(tok_bpe_scratch *s, int32_t id, uint32_t start, uint32_t len) {
  if (s->n_sym == s->cap_sym) {
    size_t cap = s->cap_sym ? s->cap_sym * 2 : 64;
    void *p = realloc(s->sym, cap * sizeof(bpe_sym));
    if (!p) return false;
    s->sym = p;
    s->cap_sym = cap;
  }
  bpe_sym *y = s->sym;
  int32_t i = (int32_t)s->n_sym++;
  y[i] = (bpe_sym){id, i - 1, -1, start, len};
  if (i > 0) y[i - 1].next = i;
  return true;
}

static bool ids_push(int32_t **ids, size_t *n, size_t *cap, int32_t id) {
  if (*n == *cap) {
    size_t c = *cap ? *cap * 2 : 64;
    int32_t *p = realloc(*ids, c * sizeof *p);
    if (!p) return false;
    *ids = p;
    *cap = c;
  }
  (*ids)[(*n)++] = id;
  return true;
}

/* a candidate merge of symbols p and its successor, if the vocabulary allows it */
static bool try_pair(const tokenizer *t, const char *w, tok_bpe_scratch *s, int32_t p) {
  if (p < 0) return true;
  bpe_sym *y = s->sym;
  int32_t q = y[p].next;
  if (q < 0) return true;
  if (t->model == TOK_MODEL_BPE_RANK) {
    uint64_t v;
    if (y[p].id < 0 || y[q].id < 0) return true;
    if (!tok_u64_get(&t->merges, ((uint64_t)(uint32_t)y[p].id << 32) | (uint32_t)y[q].id, &v)) return true;
    return heap_push(s, (bpe_cand){(double)(v >> 32), p, (int32_t)(uint32_t)v, 0});
  }
  uint32_t size = y[p].len + y[q].len;
  int32_t id = tok_smap_get(&t->vocab, t->arena.p, w + y[p].start, size);
  if (id < 0) return true;
  return heap_push(s, (bpe_cand){-(double)t->scores[id], p, id, size});
}

void tok_bpe_scratch_free(tok_bpe_scratch *s) {
  free(s->sym);
  free(s->heap);
  memset(s, 0, sizeof *s);
}

bool tok_bpe_word(const tokenizer *t, const char *w, size_t n, tok_bpe_scratch *s, int32_t **ids, size_t *n_ids,
                  size_t *cap_ids) {
  if (n == 0) return true;
  if (t->ignore_merges) {
    int32_t id = tok_smap_get(&t->vocab, t->arena.p, w, n);
    if (id >= 0) return ids_push(ids, n_ids, cap_ids, id);
  }
  if (t->newline_whole && w[0] == '\n') { /* llama.cpp's Gemma 4: a newline run that is a token, unmerged */
    size_t k = 1;
    while (k < n && w[k] == '\n')
      k++;
    int32_t id = k == n ? tok_smap_get(&t->vocab, t->arena.p, w, n) : -1;
    if (id >= 0) return ids_push(ids, n_ids, cap_ids, id);
  }
  s->n_sym = 0;
  s->n_heap = 0;
  /* initial symbols: one per character, as HF BPE::merge_word does */
  int32_t unk_id = -1;
  uint32_t unk_start = 0, unk_len = 0;
  size_t i = 0;
  while (i < n) {
    size_t cl = tok_utf8_valid_prefix(w, n, i);
    if (!cl) cl = 1; /* cannot happen: input is validated */
    int32_t id = tok_smap_get(&t->vocab, t->arena.p, w + i, cl);
    if (t->model == TOK_MODEL_BPE_SCORE) { /* resolved after merging */
      if (!sym_push(s, id, (uint32_t)i, (uint32_t)cl)) return false;
      i += cl;
      continue;
    }
    if (id >= 0) {
      if (unk_id >= 0 && !sym_push(s, unk_id, unk_start, unk_len)) return false;
      unk_id = -1;
      if (!sym_push(s, id, (uint32_t)i, (uint32_t)cl)) return false;
      i += cl;
      continue;
    }
    if (t->byte_fallback) {
      bool all = true;
      for (size_t k = 0; k < cl; k++)
        all = all && t->byte_id[(uint8_t)w[i + k]] >= 0;
      if (all) { /* like HF, a pending unknown is not flushed before byte tokens */
        for (size_t k = 0; k < cl; k++)
          if (!sym_push(s, t->byte_id[(uint8_t)w[i + k]], (uint32_t)(i + k), 1)) return false;
        i += cl;
        continue;
      }
    }
    if (t->unk_id >= 0) {
      if (unk_id >= 0 && t->fuse_unk)
        unk_len += (uint32_t)cl;
      else {
        if (unk_id >= 0 && !sym_push(s, unk_id, unk_start, unk_len)) return false;
        unk_id = t->unk_id;
        unk_start = (uint32_t)i;
        unk_len = (uint32_t)cl;
      }
    } /* without an unknown token HF drops the character */
    i += cl;
  }
  if (unk_id >= 0 && !sym_push(s, unk_id, unk_start, unk_len)) return false;

  for (int32_t p = 0; p + 1 < (int32_t)s->n_sym; p++)
    if (!try_pair(t, w, s, p)) return false;
  while (s->n_heap) {
    bpe_cand c = heap_pop(s);
    bpe_sym *y = s->sym;
    if (y[c.pos].len == 0 || y[c.pos].next < 0) continue;
    int32_t q = y[c.pos].next;
    if (t->model == TOK_MODEL_BPE_RANK) {
      uint64_t v;
      if (y[c.pos].id < 0 || y[q].id < 0 ||
          !tok_u64_get(&t->merges, ((uint64_t)(uint32_t)y[c.pos].id << 32) | (uint32_t)y[q].id, &v) ||
          (int32_t)(uint32_t)v != c.new_id)
        continue;
    } else if (y[c.pos].len + y[q].len != c.size) {
      continue;
    }
    y[c.pos].id = c.new_id;
    y[c.pos].len += y[q].len;
    y[c.pos].next = y[q].next;
    if (y[q].next >= 0) y[y[q].next].prev = c.pos;
    y[q].len = 0;
    if (!try_pair(t, w, s, y[c.pos].prev) || !try_pair(t, w, s, c.pos)) return false;
  }

  const bpe_sym *ys = s->sym;
  for (int32_t p = s->n_sym ? 0 : -1; p >= 0; p = ys[p].next) {
    bpe_sym y = ys[p];
    if (y.id >= 0) {
      if (!ids_push(ids, n_ids, cap_ids, y.id)) return false;
      continue;
    }
    /* score model: a single character outside the vocabulary -> bytes, else unknown */
    bool all = true;
    for (uint32_t k = 0; k < y.len; k++)
      all = all && t->byte_id[(uint8_t)w[y.start + k]] >= 0;
    if (all) {
      for (uint32_t k = 0; k < y.len; k++)
        if (!ids_push(ids, n_ids, cap_ids, t->byte_id[(uint8_t)w[y.start + k]])) return false;
    } else if (t->unk_id >= 0 && !ids_push(ids, n_ids, cap_ids, t->unk_id)) {
      return false;
    }
  }
  return true;
}
