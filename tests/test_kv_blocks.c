/* Tests of the paged KV pool's bookkeeping (src/runtime/kv_blocks.h), on the CPU: reservations block by block and
   the pool running out (refused with nothing changed), publishing and adopting a prefix (tokens compared, the
   longest run of full blocks, a prompt that differs in a block stopping there), the cache of released prefixes
   evicted least recently used first, copy-on-write after a fork and after a rewind into a shared block; then
   10,000 random joins, adoptions, growths, forks, rewinds and leaves over a simulated GPU pool (each slot holds
   the token whose K and V it would hold, copies done as the GPU would): after every step each live sequence's
   slots hold its own tokens (nothing shared was overwritten, every adopted block holds the prompt's tokens),
   and kv_blocks_check's accounting holds; at the end, every sequence released, no block is leaked. The soak runs
   again with hashes cut to 2 bits, where only the comparison of tokens and parents keeps adoption exact. Run from
   tests/. */
#include "harness.h"
#include "kv_blocks.h"
#include <stdlib.h>
#include <string.h>

static int32_t *seq_tokens(uint32_t n, uint32_t seed) {
  int32_t *t = malloc((n ? n : 1) * sizeof *t);
  for (uint32_t i = 0; i < n; i++)
    t[i] = (int32_t)((seed * 7919u + i * 104729u) % 50000u);
  return t;
}

static void test_reserve(void) {
  llm_err e = {0};
  CHECK(!kv_blocks_create(0, 16, &e) && e.status == WGLLM_ERR_INVALID_ARG, "an empty pool refused: %s", e.msg);
  kv_blocks *p = kv_blocks_create(10, 16, &e);
  CHECK(p && kv_blocks_available(p) == 10 && kv_blocks_block(p) == 16, "a pool of 10 blocks of 16");
  kv_seq a = {0}, b = {0};
  kv_copy cow;
  CHECK(kv_seq_blocks_needed(p, &a, 33) == 3, "33 tokens need 3 blocks");
  CHECK(kv_seq_reserve(p, &a, 33, &cow, &e) == WGLLM_OK && a.n_blocks == 3 && a.n_tokens == 33, "33 reserved");
  CHECK(cow.src == KV_NO_BLOCK, "nothing to copy for a private block");
  CHECK(kv_seq_reserve(p, &a, 15, &cow, &e) == WGLLM_OK && a.n_blocks == 3 && a.n_tokens == 48, "15 more fit");
  CHECK(kv_seq_reserve(p, &a, 1, &cow, &e) == WGLLM_OK && a.n_blocks == 4, "the 49th token takes a 4th block");
  CHECK(kv_blocks_available(p) == 6, "6 left (%u)", kv_blocks_available(p));
  CHECK(kv_seq_reserve(p, &b, 97, &cow, &e) == WGLLM_ERR_OUT_OF_MEMORY && b.n_blocks == 0 && b.n_tokens == 0 &&
            kv_blocks_available(p) == 6,
        "97 tokens (7 blocks) refused with nothing changed");
  CHECK(strstr(e.msg, "7 blocks") && strstr(e.msg, "6 of 10"), "the refusal says what is needed and left: %s", e.msg);
  CHECK(kv_seq_reserve(p, &b, 96, &cow, &e) == WGLLM_OK && kv_blocks_available(p) == 0, "96 take the rest");
  const kv_seq *all[] = {&a, &b};
  CHECK(kv_blocks_check(p, all, 2, &e), "accounting: %s", e.msg);
  kv_seq_truncate(p, &a, 20);
  CHECK(a.n_blocks == 2 && a.n_tokens == 20 && kv_blocks_available(p) == 2, "a rewind to 20 frees 2 blocks");
  kv_seq_release(p, &a);
  kv_seq_release(p, &b);
  CHECK(kv_blocks_available(p) == 10 && kv_blocks_check(p, NULL, 0, &e), "all back: %s", e.msg);
  kv_blocks_destroy(p);
}

static void test_prefix(void) {
  llm_err e = {0};
  kv_blocks *p = kv_blocks_create(12, 16, &e);
  int32_t *t = seq_tokens(100, 1);
  kv_seq a = {0}, b = {0}, c = {0};
  kv_copy cow;
  CHECK(kv_seq_adopt(p, &a, t, 99) == 0, "nothing published yet");
  kv_seq_reserve(p, &a, 100, &cow, &e);
  kv_seq_publish(p, &a, t, 100);
  uint32_t a_blocks[7];
  memcpy(a_blocks, a.blocks, sizeof a_blocks);
  CHECK(kv_seq_adopt(p, &b, t, 99) == 96 && b.n_blocks == 6, "a second sequence adopts 6 full blocks (%u)", b.n_tokens);
  CHECK(!memcmp(b.blocks, a_blocks, 6 * 4), "the same blocks");
  CHECK(kv_seq_reserve(p, &b, 4, &cow, &e) == WGLLM_OK && cow.src == KV_NO_BLOCK && b.blocks[6] != a_blocks[6],
        "its own block for the rest");
  int32_t *u = seq_tokens(100, 1);
  u[50] = 49999; /* block 3 differs */
  CHECK(kv_seq_adopt(p, &c, u, 100) == 48, "a prompt differing in block 3 adopts 3 blocks (%u)", c.n_tokens);
  const kv_seq *all[] = {&a, &b, &c};
  CHECK(kv_blocks_check(p, all, 3, &e), "accounting: %s", e.msg);
  kv_seq_release(p, &c);
  kv_seq_release(p, &b);
  kv_seq_release(p, &a);
  CHECK(kv_blocks_cached(p) == 6 && kv_blocks_available(p) == 12, "6 published blocks cached, all available (%u)",
        kv_blocks_cached(p));
  CHECK(kv_blocks_check(p, NULL, 0, &e), "accounting: %s", e.msg);
  /* free blocks are taken before cached ones; then the least recently used cached block is evicted */
  kv_seq d = {0};
  CHECK(kv_seq_reserve(p, &d, 6 * 16, &cow, &e) == WGLLM_OK && kv_blocks_cached(p) == 6, "free blocks taken first");
  CHECK(kv_seq_reserve(p, &d, 16, &cow, &e) == WGLLM_OK && kv_blocks_cached(p) == 5, "then one cached block evicted");
  kv_seq f = {0};
  uint32_t got = kv_seq_adopt(p, &f, t, 99);
  CHECK(got < 96, "the prefix is shorter after an eviction (%u)", got);
  const kv_seq *all2[] = {&d, &f};
  CHECK(kv_blocks_check(p, all2, 2, &e), "accounting: %s", e.msg);
  kv_seq_release(p, &f);
  kv_seq_release(p, &d);
  kv_blocks_destroy(p);
  free(t);
  free(u);
}

static void test_copy_on_write(void) {
  llm_err e = {0};
  kv_blocks *p = kv_blocks_create(8, 16, &e);
  kv_seq a = {0}, b = {0};
  kv_copy cow;
  kv_seq_reserve(p, &a, 40, &cow, &e);
  CHECK(kv_seq_fork(p, &a, &b, &e) == WGLLM_OK && b.n_tokens == 40 && !memcmp(a.blocks, b.blocks, 12),
        "a fork shares the 3 blocks");
  CHECK(kv_seq_blocks_needed(p, &b, 1) == 1, "the shared partial block needs a copy");
  uint32_t shared = a.blocks[2];
  CHECK(kv_seq_reserve(p, &b, 1, &cow, &e) == WGLLM_OK && cow.src == shared && cow.dst == b.blocks[2] &&
            cow.dst != shared,
        "writing into it copies it first");
  CHECK(kv_seq_reserve(p, &a, 1, &cow, &e) == WGLLM_OK && cow.src == KV_NO_BLOCK && a.blocks[2] == shared,
        "the other keeps it, now alone");
  /* a rewind into a published, shared block */
  int32_t *t = seq_tokens(41, 3);
  kv_seq_publish(p, &a, t, 41);
  kv_seq c = {0};
  CHECK(kv_seq_adopt(p, &c, t, 40) == 32, "32 adopted");
  kv_seq_truncate(p, &a, 20);
  CHECK(kv_seq_reserve(p, &a, 1, &cow, &e) == WGLLM_OK && cow.src == c.blocks[1] && a.blocks[1] != c.blocks[1],
        "a rewind into a shared published block copies it before the write");
  kv_seq_release(p, &c);
  kv_seq_truncate(p, &a, 10);
  CHECK(kv_seq_reserve(p, &a, 1, &cow, &e) == WGLLM_OK, "reserve after a rewind");
  const kv_seq *all[] = {&a, &b};
  CHECK(kv_blocks_check(p, all, 2, &e), "accounting: %s", e.msg);
  kv_seq_release(p, &a);
  kv_seq_release(p, &b);
  CHECK(kv_blocks_check(p, NULL, 0, &e) && kv_blocks_available(p) == 8, "all back: %s", e.msg);
  kv_blocks_destroy(p);
  free(t);
}

/* a child published under a parent that was later withdrawn and rewritten is never adopted after the new
   parent, even where everything else matches (hashes cut to 0 bits: all equal) */
static void test_stale_parent(void) {
  llm_err e = {0};
  kv_blocks *p = kv_blocks_create(6, 4, &e);
  kv_blocks_weaken_hash(p, 0);
  int32_t xy[8] = {1, 2, 3, 4, 5, 6, 7, 8}, zy[8] = {1, 2, 9, 9, 5, 6, 7, 8};
  kv_seq a = {0}, b = {0};
  kv_copy cow;
  kv_seq_reserve(p, &a, 8, &cow, &e);
  kv_seq_publish(p, &a, xy, 8);
  uint32_t x = a.blocks[0];
  kv_seq_truncate(p, &a, 2); /* X held alone: withdrawn, to be written again; Y cached */
  CHECK(kv_seq_reserve(p, &a, 2, &cow, &e) == WGLLM_OK && a.blocks[0] == x && cow.src == KV_NO_BLOCK,
        "X written in place");
  kv_seq_publish(p, &a, zy, 4); /* X now holds Z, published under Z's chain */
  CHECK(kv_seq_adopt(p, &b, zy, 8) == 4, "Z adopted, and not Y after it (%u tokens)", b.n_tokens);
  const kv_seq *all[] = {&a, &b};
  CHECK(kv_blocks_check(p, all, 2, &e), "accounting: %s", e.msg);
  kv_seq_release(p, &b);
  kv_seq_release(p, &a);
  kv_blocks_destroy(p);
}

/* ---- the random soak over a simulated pool */
#define SOAK_SEQS 24
#define SOAK_BLOCK 8
#define SOAK_BLOCKS 80
typedef struct sim_seq {
  kv_seq s;
  int live;
  int32_t *tok; /* [cap] the sequence's tokens */
  uint32_t cap;
} sim_seq;

static int32_t sim_pool[SOAK_BLOCKS][SOAK_BLOCK]; /* the token each slot holds the K and V of */

/* 1 when every slot of every live sequence holds its token */
static int sim_consistent(const sim_seq *ss, uint32_t *bad_seq, uint32_t *bad_tok) {
  for (uint32_t i = 0; i < SOAK_SEQS; i++) {
    if (!ss[i].live) continue;
    for (uint32_t k = 0; k < ss[i].s.n_tokens; k++)
      if (sim_pool[ss[i].s.blocks[k / SOAK_BLOCK]][k % SOAK_BLOCK] != ss[i].tok[k]) {
        *bad_seq = i;
        *bad_tok = k;
        return 0;
      }
  }
  return 1;
}

/* the GPU's part of a reservation: the copy, then the new tokens written */
static void sim_write(sim_seq *q, uint32_t from, const kv_copy *cow) {
  if (cow->src != KV_NO_BLOCK) memcpy(sim_pool[cow->dst], sim_pool[cow->src], sizeof sim_pool[0]);
  for (uint32_t k = from; k < q->s.n_tokens; k++)
    sim_pool[q->s.blocks[k / SOAK_BLOCK]][k % SOAK_BLOCK] = q->tok[k];
}

static void sim_need(sim_seq *q, uint32_t n) {
  if (n <= q->cap) return;
  q->cap = n * 2;
  q->tok = realloc(q->tok, q->cap * sizeof *q->tok);
}

static void test_soak(unsigned hash_bits) {
  llm_err e = {0};
  kv_blocks *p = kv_blocks_create(SOAK_BLOCKS, SOAK_BLOCK, &e);
  kv_blocks_weaken_hash(p, hash_bits);
  sim_seq ss[SOAK_SEQS];
  memset(ss, 0, sizeof ss);
  memset(sim_pool, 0xff, sizeof sim_pool);
  th_rng r = {0x5eed};
  int32_t *prefixes[4];
  for (int i = 0; i < 4; i++)
    prefixes[i] = seq_tokens(64, 100 + i);
  uint32_t adopted = 0, copies = 0, refused = 0, evictions_seen = 0, steps = 10000, failures0 = (uint32_t)th_failures;
  for (uint32_t step = 0; step < steps && (uint32_t)th_failures == failures0; step++) {
    uint32_t i = th_u32(&r) % SOAK_SEQS, op = th_u32(&r) % 10;
    sim_seq *q = &ss[i];
    kv_copy cow;
    if (!q->live) { /* join: a prompt of a shared prefix (some of it) and its own tokens, adopting what it can */
      uint32_t pre = th_u32(&r) % 4, keep = th_u32(&r) % 65, own = 1 + th_u32(&r) % 40, n = keep + own;
      sim_need(q, n);
      memcpy(q->tok, prefixes[pre], keep * 4);
      for (uint32_t k = keep; k < n; k++)
        q->tok[k] = (int32_t)(th_u32(&r) % 50000);
      uint32_t got = kv_seq_adopt(p, &q->s, q->tok, n - 1);
      adopted += got;
      uint32_t bs, bt;
      q->live = 1; /* its adopted slots must hold its tokens */
      if (!sim_consistent(ss, &bs, &bt)) {
        CHECK(0, "step %u: an adopted block of sequence %u holds another token at %u", step, bs, bt);
        break;
      }
      if (kv_seq_reserve(p, &q->s, n - got, &cow, &e) != WGLLM_OK) {
        refused++;
        CHECK(e.status == WGLLM_ERR_OUT_OF_MEMORY, "step %u: %s", step, e.msg);
        kv_seq_release(p, &q->s);
        q->live = 0;
        continue;
      }
      copies += cow.src != KV_NO_BLOCK;
      sim_write(q, got, &cow);
      if (th_u32(&r) % 2) kv_seq_publish(p, &q->s, q->tok, q->s.n_tokens);
    } else if (op < 5) { /* decode a few tokens */
      uint32_t n = 1 + th_u32(&r) % 6, from = q->s.n_tokens;
      sim_need(q, from + n);
      for (uint32_t k = from; k < from + n; k++)
        q->tok[k] = (int32_t)(th_u32(&r) % 50000);
      uint32_t before = kv_blocks_cached(p);
      if (kv_seq_reserve(p, &q->s, n, &cow, &e) != WGLLM_OK) {
        refused++;
        CHECK(q->s.n_tokens == from, "step %u: a refused reservation changed the sequence", step);
        continue;
      }
      evictions_seen += kv_blocks_cached(p) < before;
      copies += cow.src != KV_NO_BLOCK;
      sim_write(q, from, &cow);
      if (th_u32(&r) % 4 == 0) kv_seq_publish(p, &q->s, q->tok, q->s.n_tokens);
    } else if (op < 7) { /* fork into a free slot */
      uint32_t j = th_u32(&r) % SOAK_SEQS;
      if (ss[j].live) continue;
      CHECK(kv_seq_fork(p, &q->s, &ss[j].s, &e) == WGLLM_OK, "step %u: fork: %s", step, e.msg);
      sim_need(&ss[j], q->s.n_tokens + 1);
      memcpy(ss[j].tok, q->tok, q->s.n_tokens * 4);
      ss[j].live = 1;
    } else if (op < 8) { /* rewind */
      kv_seq_truncate(p, &q->s, th_u32(&r) % (q->s.n_tokens + 1));
    } else { /* leave */
      kv_seq_release(p, &q->s);
      q->live = 0;
    }
    uint32_t bs, bt;
    if (!sim_consistent(ss, &bs, &bt)) {
      CHECK(0, "step %u: sequence %u's slot %u holds another sequence's token (a shared block written)", step, bs, bt);
      break;
    }
    const kv_seq *live[SOAK_SEQS];
    uint32_t nl = 0;
    for (uint32_t k = 0; k < SOAK_SEQS; k++)
      if (ss[k].live) live[nl++] = &ss[k].s;
    if (!kv_blocks_check(p, live, nl, &e)) CHECK(0, "step %u: accounting: %s", step, e.msg);
  }
  printf("soak (%u-bit hashes): %u steps, %u tokens adopted, %u copies on write, %u refusals, %u steps evicting\n",
         hash_bits, steps, adopted, copies, refused, evictions_seen);
  CHECK(adopted > 1000 && copies > 10 && refused > 0 && evictions_seen > 10,
        "the soak reached adoption, copies, a full pool and evictions");
  for (uint32_t k = 0; k < SOAK_SEQS; k++) {
    kv_seq_release(p, &ss[k].s);
    free(ss[k].tok);
  }
  CHECK(kv_blocks_check(p, NULL, 0, &e) && kv_blocks_available(p) == SOAK_BLOCKS, "no block leaked: %s (%u of %u)",
        e.msg, kv_blocks_available(p), SOAK_BLOCKS);
  for (int i = 0; i < 4; i++)
    free(prefixes[i]);
  kv_blocks_destroy(p);
}

int main(void) {
  test_reserve();
  test_prefix();
  test_copy_on_write();
  test_stale_parent();
  test_soak(64);
  test_soak(2); /* every chain collides with others: the tokens and parents compared keep it exact */
  return th_finish("test_kv_blocks");
}
