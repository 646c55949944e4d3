/* The paged KV pool's bookkeeping on the CPU (issue 28): which block of the pool holds which tokens of which
   sequence. The pool is n_blocks blocks of `block` token slots (the GPU side: op_kv_pages, one pool buffer per
   layer, every layer indexed by the same block ids). Each block has a reference count; a sequence holds an
   ordered list of blocks, its block table (block i holds its tokens [i * block, (i + 1) * block)).
   - Prefix sharing: a sequence's full blocks are published under the hash of their tokens and of every token
     before them (a chain), with the tokens kept to compare, so a later sequence whose prompt starts the same
     adopts them (references taken, nothing computed) instead of computing them again.
   - Caching: a published block that no sequence holds any more stays in the pool, on a least-recently-used
     list; a block is taken from the free list first, else the least recently used cached block is evicted.
   - Copy-on-write: a sequence about to write into a block that another sequence shares (a fork, or a rewind
     into a shared block) gets a fresh block first; the caller copies the rows on the GPU before writing.
   Linear sequences only (a sliding window's ring keeps its own cache). Not thread-safe: one owner (the
   scheduler) calls it. */
#ifndef WGLLM_KV_BLOCKS_H
#define WGLLM_KV_BLOCKS_H
#include "llm_err.h"
#include <stdint.h>

#define KV_NO_BLOCK UINT32_MAX

typedef struct kv_blocks kv_blocks;

/* A sequence's block table. Zero-initialised is an empty sequence. */
typedef struct kv_seq {
  uint32_t *blocks;  /* [cap] block ids: blocks[i] holds tokens [i * block, (i + 1) * block) */
  uint32_t n_blocks; /* blocks held */
  uint32_t cap;
  uint32_t n_tokens; /* tokens whose slots are reserved (n_blocks == ceil(n_tokens / block)) */
} kv_seq;

/* A block to copy on the GPU (copy-on-write) before the sequence writes into dst; src == KV_NO_BLOCK: none */
typedef struct kv_copy {
  uint32_t src, dst;
} kv_copy;

/* A pool of n_blocks blocks of block slots (both at least 1). NULL with err filled on a refused allocation. */
kv_blocks *kv_blocks_create(uint32_t n_blocks, uint32_t block, llm_err *err);
void kv_blocks_destroy(kv_blocks *p);
uint32_t kv_blocks_block(const kv_blocks *p); /* slots a block */
uint32_t kv_blocks_total(const kv_blocks *p);
/* blocks a reservation can take now: free ones and cached ones no sequence holds */
uint32_t kv_blocks_available(const kv_blocks *p);
uint32_t kv_blocks_cached(const kv_blocks *p); /* published blocks no sequence holds (evictable) */
uint32_t kv_blocks_ref(const kv_blocks *p, uint32_t b); /* sequences holding block b */

/* Blocks kv_seq_reserve(s, n) would take from the pool (new blocks, and one for a copy-on-write). */
uint32_t kv_seq_blocks_needed(const kv_blocks *p, const kv_seq *s, uint32_t n);
/* Reserves slots for n more tokens: blocks appended to the table (free ones first, else the least recently used
   cached block evicted). When the first new token lands in the last block and that block is shared (its
   reference count above 1) or published, it is replaced by a fresh block and *cow says which to copy into it
   (cow may be NULL only when the caller knows there is none). WGLLM_ERR_OUT_OF_MEMORY, nothing changed, when
   the pool cannot hold them. */
wgllm_status kv_seq_reserve(kv_blocks *p, kv_seq *s, uint32_t n, kv_copy *cow, llm_err *err);
/* For an empty sequence: adopts the longest run of published full blocks equal to tokens[0 .. max_tokens)
   (max_tokens <= n: a caller that must compute at least one token's logits passes n - 1). Returns the tokens
   covered (a multiple of the block; s->n_tokens becomes that). Tokens compared, not only hashes. */
uint32_t kv_seq_adopt(kv_blocks *p, kv_seq *s, const int32_t *tokens, uint32_t max_tokens);
/* How many tokens kv_seq_adopt would take for tokens[0 .. max_tokens) now (nothing taken). */
uint32_t kv_blocks_published_prefix(const kv_blocks *p, const int32_t *tokens, uint32_t max_tokens);
/* Publishes the full blocks of tokens[0 .. n) (n <= s->n_tokens; the tokens whose K and V the sequence's
   blocks now hold): each not yet published is registered for later sequences to adopt. A block whose chain is
   already published by another block stays private (its twin serves adopters). */
void kv_seq_publish(kv_blocks *p, kv_seq *s, const int32_t *tokens, uint32_t n);
/* dst (empty) shares every block of src: a fork. WGLLM_ERR_OUT_OF_MEMORY when dst's table cannot grow. */
wgllm_status kv_seq_fork(kv_blocks *p, const kv_seq *src, kv_seq *dst, llm_err *err);
/* Keeps the first n tokens (n <= s->n_tokens; a rewind): blocks past them released; a kept partial block that
   is published is withdrawn when this sequence holds it alone (it will be written again). */
void kv_seq_truncate(kv_blocks *p, kv_seq *s, uint32_t n);
/* Releases every block and the table (s empty again). */
void kv_seq_release(kv_blocks *p, kv_seq *s);

/* The accounting, for tests: each block's reference count equals the references held by seqs[0 .. n_seqs)
   (every live sequence), every block is exactly one of free, cached or held, the published table finds every
   published block by its chain, and cached blocks are exactly the published unheld ones. 1 when it holds; 0
   with err naming the first discrepancy. */
int kv_blocks_check(const kv_blocks *p, const kv_seq *const *seqs, uint32_t n_seqs, llm_err *err);
/* For tests: chain hashes cut to `bits` bits (64: whole), so that different chains collide and only the
   comparison of tokens and parents tells them apart. Call on an empty pool. */
void kv_blocks_weaken_hash(kv_blocks *p, unsigned bits);
#endif
