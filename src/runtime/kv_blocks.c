/* The paged KV pool's bookkeeping (kv_blocks.h): reference counts, the free list, the published blocks found
   by the hash of their token chain, and the least-recently-used list of cached blocks. Every operation is O(1)
   a block, besides the comparison of a published block's tokens when it is adopted. */
#include "kv_blocks.h"
#include <stdlib.h>
#include <string.h>

struct kv_blocks {
  uint32_t n, block;
  uint32_t *ref;      /* [n] sequences holding the block */
  uint32_t *free_ids; /* [n] a stack of free blocks */
  uint32_t n_free;
  /* published blocks: chain hash, the block before it in its chain (KV_NO_BLOCK for a first block), its tokens */
  uint8_t *published;   /* [n] */
  uint64_t *hash;       /* [n] */
  uint32_t *parent;     /* [n] */
  uint32_t *gen;        /* [n] bumped each time a block is withdrawn: a child names its parent by id and generation */
  uint32_t *parent_gen; /* [n] the parent's generation when the child was published */
  int32_t *tokens;      /* [n][block] */
  uint32_t *bucket;     /* [n_buckets] first block of each hash bucket */
  uint32_t *next;       /* [n] next block in its bucket */
  uint32_t n_buckets;   /* a power of two >= 2n */
  uint64_t hash_mask;   /* all ones; fewer bits in tests (kv_blocks_weaken_hash) */
  /* cached blocks (published, ref 0), least recently used first */
  uint32_t *lru_prev, *lru_next; /* [n] */
  uint32_t lru_head, lru_tail, n_cached;
};

static uint64_t mix(uint64_t h) { /* splitmix64's finaliser */
  h ^= h >> 30;
  h *= 0xbf58476d1ce4e5b9ull;
  h ^= h >> 27;
  h *= 0x94d049bb133111ebull;
  return h ^ (h >> 31);
}

/* the chain hash of a block of tokens after the chain hashed prev (0 for a first block) */
static uint64_t chain_hash(const kv_blocks *p, uint64_t prev, const int32_t *t) {
  uint64_t h = mix(prev + 0x9e3779b97f4a7c15ull);
  for (uint32_t i = 0; i < p->block; i++)
    h = mix(h ^ (uint32_t)t[i]);
  return h & p->hash_mask;
}

void kv_blocks_weaken_hash(kv_blocks *p, unsigned bits) { p->hash_mask = bits >= 64 ? ~0ull : (1ull << bits) - 1; }

kv_blocks *kv_blocks_create(uint32_t n_blocks, uint32_t block, llm_err *err) {
  if (!n_blocks || !block || n_blocks >= KV_NO_BLOCK / 2 || (uint64_t)n_blocks * block > (1ull << 40)) {
    llm_err_set(err, WGLLM_ERR_INVALID_ARG, "KV pool: %u blocks of %u slots", n_blocks, block);
    return NULL;
  }
  kv_blocks *p = calloc(1, sizeof *p);
  uint32_t nb = 2;
  while (nb < 2 * n_blocks)
    nb *= 2;
  if (p) {
    p->n = n_blocks;
    p->block = block;
    p->n_buckets = nb;
    p->ref = calloc(n_blocks, 4);
    p->free_ids = malloc((size_t)n_blocks * 4);
    p->published = calloc(n_blocks, 1);
    p->hash = calloc(n_blocks, 8);
    p->parent = malloc((size_t)n_blocks * 4);
    p->gen = calloc(n_blocks, 4);
    p->parent_gen = calloc(n_blocks, 4);
    p->tokens = malloc((size_t)n_blocks * block * 4);
    p->bucket = malloc((size_t)nb * 4);
    p->next = malloc((size_t)n_blocks * 4);
    p->lru_prev = malloc((size_t)n_blocks * 4);
    p->lru_next = malloc((size_t)n_blocks * 4);
  }
  if (!p || !p->ref || !p->free_ids || !p->published || !p->hash || !p->parent || !p->gen || !p->parent_gen ||
      !p->tokens || !p->bucket || !p->next || !p->lru_prev || !p->lru_next) {
    kv_blocks_destroy(p);
    llm_err_set(err, WGLLM_ERR_OUT_OF_MEMORY, "KV pool: the bookkeeping of %u blocks of %u slots", n_blocks, block);
    return NULL;
  }
  for (uint32_t i = 0; i < n_blocks; i++) /* block 0 on top: taken first */
    p->free_ids[i] = n_blocks - 1 - i;
  p->n_free = n_blocks;
  memset(p->bucket, 0xff, (size_t)nb * 4);
  p->lru_head = p->lru_tail = KV_NO_BLOCK;
  p->hash_mask = ~0ull;
  return p;
}

void kv_blocks_destroy(kv_blocks *p) {
  if (!p) return;
  free(p->ref);
  free(p->free_ids);
  free(p->published);
  free(p->hash);
  free(p->parent);
  free(p->gen);
  free(p->parent_gen);
  free(p->tokens);
  free(p->bucket);
  free(p->next);
  free(p->lru_prev);
  free(p->lru_next);
  free(p);
}

uint32_t kv_blocks_block(const kv_blocks *p) { return p->block; }
uint32_t kv_blocks_total(const kv_blocks *p) { return p->n; }
uint32_t kv_blocks_available(const kv_blocks *p) { return p->n_free + p->n_cached; }
uint32_t kv_blocks_cached(const kv_blocks *p) { return p->n_cached; }
uint32_t kv_blocks_ref(const kv_blocks *p, uint32_t b) { return b < p->n ? p->ref[b] : 0; }

static void lru_remove(kv_blocks *p, uint32_t b) {
  uint32_t pr = p->lru_prev[b], nx = p->lru_next[b];
  if (pr == KV_NO_BLOCK)
    p->lru_head = nx;
  else
    p->lru_next[pr] = nx;
  if (nx == KV_NO_BLOCK)
    p->lru_tail = pr;
  else
    p->lru_prev[nx] = pr;
  p->n_cached--;
}

static void lru_append(kv_blocks *p, uint32_t b) {
  p->lru_prev[b] = p->lru_tail;
  p->lru_next[b] = KV_NO_BLOCK;
  if (p->lru_tail == KV_NO_BLOCK)
    p->lru_head = b;
  else
    p->lru_next[p->lru_tail] = b;
  p->lru_tail = b;
  p->n_cached++;
}

static void unpublish(kv_blocks *p, uint32_t b) {
  uint32_t *at = &p->bucket[p->hash[b] & (p->n_buckets - 1)];
  while (*at != b)
    at = &p->next[*at];
  *at = p->next[b];
  p->published[b] = 0;
  p->gen[b]++; /* its children, found only through it, are unreachable from now on */
}

/* a block for new tokens: a free one, else the least recently used cached one, withdrawn; ref 1 */
static uint32_t take_block(kv_blocks *p) {
  uint32_t b;
  if (p->n_free)
    b = p->free_ids[--p->n_free];
  else {
    b = p->lru_head;
    lru_remove(p, b);
    unpublish(p, b);
  }
  p->ref[b] = 1;
  return b;
}

/* drops one reference; an unheld block goes to the cache when published, else to the free list */
static void drop_block(kv_blocks *p, uint32_t b) {
  if (--p->ref[b]) return;
  if (p->published[b])
    lru_append(p, b);
  else
    p->free_ids[p->n_free++] = b;
}

static int grow_table(kv_seq *s, uint32_t want) {
  if (want <= s->cap) return 1;
  uint32_t cap = s->cap ? s->cap : 8;
  while (cap < want)
    cap *= 2;
  uint32_t *nb = realloc(s->blocks, (size_t)cap * 4);
  if (!nb) return 0;
  s->blocks = nb;
  s->cap = cap;
  return 1;
}

/* 1 when the first of n new tokens lands in the sequence's last block and that block must be copied first */
static int needs_copy(const kv_blocks *p, const kv_seq *s, uint32_t n) {
  if (!n || s->n_tokens % p->block == 0) return 0;
  uint32_t last = s->blocks[s->n_blocks - 1];
  return p->ref[last] > 1 || p->published[last];
}

uint32_t kv_seq_blocks_needed(const kv_blocks *p, const kv_seq *s, uint32_t n) {
  uint64_t total = ((uint64_t)s->n_tokens + n + p->block - 1) / p->block;
  return (uint32_t)(total - s->n_blocks) + (uint32_t)needs_copy(p, s, n);
}

wgllm_status kv_seq_reserve(kv_blocks *p, kv_seq *s, uint32_t n, kv_copy *cow, llm_err *err) {
  if (cow) cow->src = cow->dst = KV_NO_BLOCK;
  if ((uint64_t)s->n_tokens + n > UINT32_MAX - p->block)
    return llm_err_set(err, WGLLM_ERR_INVALID_ARG, "KV pool: %u more tokens after %u", n, s->n_tokens);
  uint32_t need = kv_seq_blocks_needed(p, s, n);
  if (need > kv_blocks_available(p))
    return llm_err_set(err, WGLLM_ERR_OUT_OF_MEMORY,
                       "KV pool: %u more tokens need %u blocks of %u slots; %u of %u are available", n, need, p->block,
                       kv_blocks_available(p), p->n);
  uint32_t total = (uint32_t)(((uint64_t)s->n_tokens + n + p->block - 1) / p->block);
  if (!grow_table(s, total))
    return llm_err_set(err, WGLLM_ERR_OUT_OF_MEMORY, "KV pool: a block table of %u entries", total);
  if (needs_copy(p, s, n)) {
    if (!cow) return llm_err_set(err, WGLLM_ERR_INTERNAL, "KV pool: a shared block to copy and nowhere to say so");
    uint32_t old = s->blocks[s->n_blocks - 1];
    if (p->ref[old] == 1 && p->published[old])
      unpublish(p, old); /* held by this sequence alone: withdrawn, written in place */
    else {
      uint32_t b = take_block(p);
      cow->src = old;
      cow->dst = b;
      drop_block(p, old);
      s->blocks[s->n_blocks - 1] = b;
    }
  }
  while (s->n_blocks < total)
    s->blocks[s->n_blocks++] = take_block(p);
  s->n_tokens += n;
  return WGLLM_OK;
}

/* the published block with chain hash h after block parent (as it is now) holding tokens t, or KV_NO_BLOCK */
static uint32_t find_published(const kv_blocks *p, uint64_t h, uint32_t parent, const int32_t *t) {
  uint32_t pg = parent == KV_NO_BLOCK ? 0 : p->gen[parent];
  for (uint32_t b = p->bucket[h & (p->n_buckets - 1)]; b != KV_NO_BLOCK; b = p->next[b])
    if (p->hash[b] == h && p->parent[b] == parent && p->parent_gen[b] == pg &&
        !memcmp(p->tokens + (size_t)b * p->block, t, (size_t)p->block * 4))
      return b;
  return KV_NO_BLOCK;
}

uint32_t kv_seq_adopt(kv_blocks *p, kv_seq *s, const int32_t *tokens, uint32_t max_tokens) {
  if (s->n_tokens) return 0;
  uint32_t full = max_tokens / p->block;
  if (!grow_table(s, full ? full : 1)) return 0;
  uint64_t h = 0;
  uint32_t parent = KV_NO_BLOCK;
  for (uint32_t i = 0; i < full; i++) {
    const int32_t *t = tokens + (size_t)i * p->block;
    h = chain_hash(p, h, t);
    uint32_t b = find_published(p, h, parent, t);
    if (b == KV_NO_BLOCK) break;
    if (p->ref[b]++ == 0) lru_remove(p, b);
    s->blocks[s->n_blocks++] = b;
    parent = b;
  }
  s->n_tokens = s->n_blocks * p->block;
  return s->n_tokens;
}

uint32_t kv_blocks_published_prefix(const kv_blocks *p, const int32_t *tokens, uint32_t max_tokens) {
  uint64_t h = 0;
  uint32_t parent = KV_NO_BLOCK, i = 0;
  for (; i < max_tokens / p->block; i++) {
    const int32_t *t = tokens + (size_t)i * p->block;
    h = chain_hash(p, h, t);
    uint32_t b = find_published(p, h, parent, t);
    if (b == KV_NO_BLOCK) break;
    parent = b;
  }
  return i * p->block;
}

void kv_seq_publish(kv_blocks *p, kv_seq *s, const int32_t *tokens, uint32_t n) {
  if (n > s->n_tokens) n = s->n_tokens;
  uint64_t h = 0;
  uint32_t parent = KV_NO_BLOCK;
  for (uint32_t i = 0; i < n / p->block; i++) {
    const int32_t *t = tokens + (size_t)i * p->block;
    uint32_t b = s->blocks[i];
    h = chain_hash(p, h, t);
    if (!p->published[b]) {
      if (find_published(p, h, parent, t) != KV_NO_BLOCK) return; /* a twin serves adopters; its chain goes on */
      p->published[b] = 1;
      p->hash[b] = h;
      p->parent[b] = parent;
      p->parent_gen[b] = parent == KV_NO_BLOCK ? 0 : p->gen[parent];
      memcpy(p->tokens + (size_t)b * p->block, t, (size_t)p->block * 4);
      uint32_t *head = &p->bucket[h & (p->n_buckets - 1)];
      p->next[b] = *head;
      *head = b;
    } else if (p->hash[b] != h || p->parent[b] != parent ||
               p->parent_gen[b] != (parent == KV_NO_BLOCK ? 0 : p->gen[parent]))
      return; /* published under another chain: not this sequence's prefix (never for a consistent caller) */
    parent = b;
  }
}

wgllm_status kv_seq_fork(kv_blocks *p, const kv_seq *src, kv_seq *dst, llm_err *err) {
  if (dst->n_tokens || dst->n_blocks) return llm_err_set(err, WGLLM_ERR_INTERNAL, "KV pool: fork into a busy sequence");
  if (!grow_table(dst, src->n_blocks ? src->n_blocks : 1))
    return llm_err_set(err, WGLLM_ERR_OUT_OF_MEMORY, "KV pool: a block table of %u entries", src->n_blocks);
  for (uint32_t i = 0; i < src->n_blocks; i++) {
    uint32_t b = src->blocks[i];
    if (p->ref[b]++ == 0) lru_remove(p, b); /* never for a held block; kept for symmetry */
    dst->blocks[i] = b;
  }
  dst->n_blocks = src->n_blocks;
  dst->n_tokens = src->n_tokens;
  return WGLLM_OK;
}

void kv_seq_truncate(kv_blocks *p, kv_seq *s, uint32_t n) {
  if (n >= s->n_tokens) return;
  uint32_t keep = (n + p->block - 1) / p->block;
  while (s->n_blocks > keep)
    drop_block(p, s->blocks[--s->n_blocks]);
  s->n_tokens = n;
  if (n % p->block) { /* a partial block kept: it will be written again */
    uint32_t last = s->blocks[s->n_blocks - 1];
    if (p->ref[last] == 1 && p->published[last]) unpublish(p, last);
  }
}

void kv_seq_release(kv_blocks *p, kv_seq *s) {
  kv_seq_truncate(p, s, 0);
  free(s->blocks);
  memset(s, 0, sizeof *s);
}

int kv_blocks_check(const kv_blocks *p, const kv_seq *const *seqs, uint32_t n_seqs, llm_err *err) {
  uint32_t *held = calloc(p->n, 4);
  uint8_t *seen = calloc(p->n, 1); /* 1 free, 2 cached */
  int ok = held && seen;
  if (!ok) llm_err_set(err, WGLLM_ERR_OUT_OF_MEMORY, "KV pool check: out of memory");
  for (uint32_t i = 0; ok && i < n_seqs; i++) {
    const kv_seq *s = seqs[i];
    if (s->n_blocks != (s->n_tokens + p->block - 1) / p->block) {
      ok = 0;
      llm_err_set(err, WGLLM_ERR_INTERNAL, "sequence %u: %u blocks for %u tokens", i, s->n_blocks, s->n_tokens);
    }
    for (uint32_t j = 0; ok && j < s->n_blocks; j++) {
      if (s->blocks[j] >= p->n) {
        ok = 0;
        llm_err_set(err, WGLLM_ERR_INTERNAL, "sequence %u: block %u out of the pool", i, s->blocks[j]);
      } else
        held[s->blocks[j]]++;
    }
  }
  for (uint32_t k = 0; ok && k < p->n_free; k++) {
    uint32_t b = p->free_ids[k];
    if (b >= p->n || seen[b] || p->published[b]) {
      ok = 0;
      llm_err_set(err, WGLLM_ERR_INTERNAL, "free list entry %u: block %u twice, published or out of the pool", k, b);
    } else
      seen[b] = 1;
  }
  uint32_t n_lru = 0;
  for (uint32_t b = p->lru_head; ok && b != KV_NO_BLOCK; b = p->lru_next[b]) {
    if (b >= p->n || seen[b] || !p->published[b] || ++n_lru > p->n) {
      ok = 0;
      llm_err_set(err, WGLLM_ERR_INTERNAL, "cached block %u: listed twice, free too or not published", b);
    } else
      seen[b] = 2;
  }
  if (ok && n_lru != p->n_cached) {
    ok = 0;
    llm_err_set(err, WGLLM_ERR_INTERNAL, "%u cached blocks counted as %u", n_lru, p->n_cached);
  }
  for (uint32_t b = 0; ok && b < p->n; b++) {
    if (p->ref[b] != held[b])
      llm_err_set(err, WGLLM_ERR_INTERNAL, "block %u: reference count %u, held by %u sequences", b, p->ref[b], held[b]);
    else if (!held[b] && !seen[b])
      llm_err_set(err, WGLLM_ERR_INTERNAL, "block %u: leaked (not held, free or cached)", b);
    else if (held[b] && seen[b])
      llm_err_set(err, WGLLM_ERR_INTERNAL, "block %u: held and %s", b, seen[b] == 1 ? "free" : "cached");
    else if (p->published[b]) {
      const int32_t *t = p->tokens + (size_t)b * p->block;
      uint32_t pa = p->parent[b];
      /* a child of a withdrawn parent is unreachable (its parent's generation moved on), never found wrongly */
      if (pa != KV_NO_BLOCK && (pa >= p->n || p->parent_gen[b] != p->gen[pa])) continue;
      uint64_t ph = pa == KV_NO_BLOCK ? 0 : p->hash[pa];
      if ((pa == KV_NO_BLOCK || p->published[pa]) && find_published(p, p->hash[b], pa, t) == b &&
          p->hash[b] == chain_hash(p, ph, t))
        continue;
      llm_err_set(err, WGLLM_ERR_INTERNAL, "published block %u: not found by its chain", b);
    } else
      continue;
    ok = 0;
  }
  free(held);
  free(seen);
  return ok;
}
