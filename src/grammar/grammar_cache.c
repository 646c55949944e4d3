/* The masks of one grammar over one vocabulary (grammar.h, grammar_cache_*), shared by matchers on any threads: a
   hash table of entries keyed by a matcher state's words (grammar_match.c makes the keys), under one mutex, bounded
   in bytes, the least recently used entry evicted first. */
#include "grammar_int.h"
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

typedef struct gc_entry {
  struct gc_entry *next; /* the bucket's chain */
  uint64_t hash, tick;
  int kind, too_many;
  uint32_t key_len, n_check, count;
  uint32_t *key, *mask, *check;
  size_t bytes;
} gc_entry;

struct grammar_cache {
  const grammar *g;
  const grammar_vocab *v;
  size_t max_bytes, bytes, words;
  pthread_mutex_t mu;
  gc_entry **buckets;
  uint32_t *canon;           /* gr_cache_canon */
  uint32_t n_buckets, count; /* n_buckets a power of 2 */
  uint64_t tick, exact_hits, cut_hits, walks;
};

const grammar *gr_cache_grammar(const grammar_cache *c) { return c->g; }
const uint32_t *gr_cache_canon(const grammar_cache *c) { return c->canon; }

/* positions folded: a link of an optional chain deeper than the longest token (R) is named as the link R deep;
   links are made shallowest first, so a rule's fold is known from the link below it */
static int make_canon(grammar_cache *c) {
  const grammar *g = c->g;
  uint32_t R = c->v->max_len < 2 ? 2 : c->v->max_len;
  uint32_t *to = malloc((g->n_rules + 1) * sizeof *to);
  if (!(c->canon = malloc((g->n_elems + 1) * sizeof *c->canon)) || !to) return free(to), -1;
  for (uint32_t i = 0; i < g->n_elems; i++)
    c->canon[i] = i;
  for (uint32_t r = 0; r < g->n_rules; r++) {
    to[r] = g->chain_k[r] > R ? to[g->chain_next[r]] : r;
    if (to[r] == r) continue;
    for (uint32_t a = 0; a < g->alt_off[r + 1] - g->alt_off[r]; a++) {
      uint32_t from = g->alts[g->alt_off[r] + a], dst = g->alts[g->alt_off[to[r]] + a];
      for (uint32_t k = 0; GE_KIND(g->elems[from + k]) != GE_END; k++)
        c->canon[from + k] = dst + k;
    }
  }
  free(to);
  return 0;
}
const grammar_vocab *gr_cache_vocab(const grammar_cache *c) { return c->v; }

grammar_cache *grammar_cache_create(const grammar *g, const grammar_vocab *v, size_t max_bytes, llm_err *err) {
  if (!g || !v) {
    llm_err_set(err, WGLLM_ERR_INVALID_ARG, "grammar cache: no %s", g ? "vocabulary" : "grammar");
    return NULL;
  }
  grammar_cache *c = calloc(1, sizeof *c);
  if (c) c->buckets = calloc(1024, sizeof *c->buckets);
  if (c) c->g = g, c->v = v;
  if (!c || !c->buckets || make_canon(c) || pthread_mutex_init(&c->mu, NULL)) {
    if (c) free(c->buckets), free(c->canon);
    free(c);
    llm_err_set(err, WGLLM_ERR_OUT_OF_MEMORY, "grammar cache: out of memory");
    return NULL;
  }
  c->g = g;
  c->v = v;
  c->n_buckets = 1024;
  c->words = (v->n + 31) / 32;
  c->max_bytes = max_bytes ? max_bytes : (size_t)64 << 20;
  return c;
}

static void entry_free(gc_entry *e) {
  free(e->key), free(e->mask), free(e->check);
  free(e);
}

void grammar_cache_free(grammar_cache *c) {
  if (!c) return;
  for (uint32_t b = 0; b < c->n_buckets; b++)
    for (gc_entry *e = c->buckets[b], *n; e; e = n) {
      n = e->next;
      entry_free(e);
    }
  free(c->buckets), free(c->canon);
  pthread_mutex_destroy(&c->mu);
  free(c);
}

grammar_cache_stats grammar_cache_get_stats(grammar_cache *c) {
  pthread_mutex_lock(&c->mu);
  grammar_cache_stats s = {c->exact_hits, c->cut_hits, c->walks, c->bytes, c->count};
  pthread_mutex_unlock(&c->mu);
  return s;
}

void gr_cache_count_walk(grammar_cache *c) {
  pthread_mutex_lock(&c->mu);
  c->walks++;
  pthread_mutex_unlock(&c->mu);
}

static uint64_t key_hash(int kind, const uint32_t *key, uint32_t n) {
  uint64_t h = 0x9E3779B97F4A7C15ull ^ (uint64_t)kind;
  for (uint32_t i = 0; i < n; i++) {
    h ^= key[i];
    h *= 0xBF58476D1CE4E5B9ull;
    h ^= h >> 31;
  }
  return h ^ n;
}

static gc_entry **find(grammar_cache *c, uint64_t h, int kind, const uint32_t *key, uint32_t n) {
  gc_entry **p = &c->buckets[h & (c->n_buckets - 1)];
  for (; *p; p = &(*p)->next) {
    gc_entry *e = *p;
    if (e->hash == h && e->kind == kind && e->key_len == n && !memcmp(e->key, key, n * sizeof *key)) return p;
  }
  return p;
}

int gr_cache_get(grammar_cache *c, int kind, const uint32_t *key, uint32_t key_len, uint32_t *mask, uint32_t *count,
                 uint32_t **check, uint32_t *n_check, int *too_many) {
  uint64_t h = key_hash(kind, key, key_len);
  pthread_mutex_lock(&c->mu);
  gc_entry *e = *find(c, h, kind, key, key_len);
  int hit = e != NULL;
  if (e) {
    e->tick = ++c->tick;
    if (too_many) *too_many = e->too_many;
    if (e->mask) memcpy(mask, e->mask, c->words * sizeof *mask);
    if (count) *count = e->count;
    if (check) {
      *check = NULL;
      *n_check = e->n_check;
      if (e->n_check && (*check = malloc(e->n_check * sizeof **check)))
        memcpy(*check, e->check, e->n_check * sizeof **check);
      else if (e->n_check)
        hit = 0; /* out of memory: as a miss */
    }
    if (hit && kind == GR_KEY_EXACT) c->exact_hits++;
    if (hit && kind == GR_KEY_CUT && !e->too_many) c->cut_hits++;
  }
  pthread_mutex_unlock(&c->mu);
  return hit;
}

/* drops the least recently used entries until bytes fit */
static void evict(grammar_cache *c, size_t need) {
  while (c->count && c->bytes + need > c->max_bytes) {
    gc_entry **old = NULL;
    for (uint32_t b = 0; b < c->n_buckets; b++)
      for (gc_entry **p = &c->buckets[b]; *p; p = &(*p)->next)
        if (!old || (*p)->tick < (*old)->tick) old = p;
    gc_entry *e = *old;
    *old = e->next;
    c->bytes -= e->bytes;
    c->count--;
    entry_free(e);
  }
}

static void grow(grammar_cache *c) {
  uint32_t nb = c->n_buckets * 2;
  gc_entry **b = calloc(nb, sizeof *b);
  if (!b) return; /* longer chains, still correct */
  for (uint32_t i = 0; i < c->n_buckets; i++)
    for (gc_entry *e = c->buckets[i], *n; e; e = n) {
      n = e->next;
      e->next = b[e->hash & (nb - 1)];
      b[e->hash & (nb - 1)] = e;
    }
  free(c->buckets);
  c->buckets = b;
  c->n_buckets = nb;
}

int gr_cache_put(grammar_cache *c, int kind, const uint32_t *key, uint32_t key_len, const uint32_t *mask,
                 uint32_t count, const uint32_t *check, uint32_t n_check, int too_many) {
  size_t bytes = sizeof(gc_entry) + (key_len + n_check + (mask ? c->words : 0)) * sizeof(uint32_t);
  if (bytes > c->max_bytes / 4) return 0; /* one entry never takes a quarter of the cache */
  gc_entry *e = calloc(1, sizeof *e);
  if (!e) return 0;
  e->key = malloc((key_len + 1) * sizeof *key);
  e->mask = mask ? malloc(c->words * sizeof *mask) : NULL;
  e->check = n_check ? malloc(n_check * sizeof *check) : NULL;
  if (!e->key || (mask && !e->mask) || (n_check && !e->check)) {
    entry_free(e);
    return 0;
  }
  memcpy(e->key, key, key_len * sizeof *key);
  if (mask) memcpy(e->mask, mask, c->words * sizeof *mask);
  if (n_check) memcpy(e->check, check, n_check * sizeof *check);
  e->key_len = key_len, e->n_check = n_check, e->kind = kind, e->too_many = too_many, e->bytes = bytes;
  e->count = count;
  e->hash = key_hash(kind, key, key_len);
  pthread_mutex_lock(&c->mu);
  gc_entry **p = find(c, e->hash, kind, key, key_len);
  if (*p) { /* another matcher stored it first */
    pthread_mutex_unlock(&c->mu);
    entry_free(e);
    return 1;
  }
  evict(c, bytes);
  if (c->count >= 2 * c->n_buckets) grow(c);
  p = &c->buckets[e->hash & (c->n_buckets - 1)];
  e->next = *p;
  *p = e;
  e->tick = ++c->tick;
  c->bytes += bytes;
  c->count++;
  pthread_mutex_unlock(&c->mu);
  return 1;
}
