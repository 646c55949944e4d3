/* What the files of src/grammar share and nothing else may use: the compiled grammar (elements, rules, character
   classes), the vocabulary's byte trie, the shared mask cache's calls, and the small growable arrays. */
#ifndef WGLLM_GRAMMAR_INT_H
#define WGLLM_GRAMMAR_INT_H
#include "grammar.h"
#include <stdbool.h>

/* An element of the compiled grammar: its kind in the top 2 bits, a class or rule id below. Each alternative of a
   rule is a run of CHAR and REF elements closed by an END; a position is an element's index. */
#define GE_END 0u
#define GE_CHAR 1u
#define GE_REF 2u
#define GE_KIND(e) ((e) >> 30)
#define GE_VAL(e) ((e)&0x3FFFFFFFu)
#define GE_MAKE(k, v) (((uint32_t)(k) << 30) | (uint32_t)(v))
#define GRAMMAR_MAX_CP 0x10FFFFu

/* A character class: the code points it accepts as n sorted, disjoint, non-adjacent [lo, hi] ranges (ranges[2 * off
   ...]), and the ASCII ones as a bitmap. */
typedef struct gr_class {
  uint32_t off, n;
  uint32_t ascii[4];
} gr_class;

struct grammar {
  uint32_t n_elems;
  uint32_t *elems;    /* [n_elems] */
  uint32_t n_rules;   /* user rules, then the groups' and repetitions' */
  uint32_t *alt_off;  /* [n_rules + 1]: rule r's alternatives are alts[alt_off[r] .. alt_off[r + 1]) */
  uint32_t *alts;     /* each alternative's first position */
  char **names;       /* [n_rules] */
  uint32_t n_classes; /* distinct classes */
  gr_class *classes;
  uint32_t *ranges; /* [2 * total ranges] */
  uint32_t root;
  /* x{m,n}'s optional part is a chain O_k ::= x O_{k-1} | "" (k = n - m down to 1): rule r's k (0 when r is no
     such link) and the link below it; a state k links deep accepts the same tokens as one R links deep when both
     are at least the longest token (R), so mask keys name the link min(k, R) (grammar_cache_create) */
  uint32_t *chain_k, *chain_next; /* [n_rules] */
  /* the fewest bytes that finish an alternative from each position (its element's, then the rest's: a character the
     UTF-8 length of its class's smallest code point, a rule its shortest sentence), GR_FAR where none does */
  uint32_t *tail_min; /* [n_elems] */
};
#define GR_FAR 0x3FFFFFFFu

static inline bool gr_class_has(const grammar *g, uint32_t cls, uint32_t c) {
  const gr_class *k = &g->classes[cls];
  if (c < 128) return (k->ascii[c >> 5] >> (c & 31)) & 1;
  const uint32_t *r = g->ranges + 2 * k->off;
  uint32_t lo = 0, hi = k->n; /* the first range whose hi >= c */
  while (lo < hi) {
    uint32_t mid = (lo + hi) / 2;
    if (r[2 * mid + 1] < c)
      lo = mid + 1;
    else
      hi = mid;
  }
  return lo < k->n && r[2 * lo] <= c;
}
/* does class cls accept any code point of [a, b]? */
static inline bool gr_class_meets(const grammar *g, uint32_t cls, uint32_t a, uint32_t b) {
  const gr_class *k = &g->classes[cls];
  const uint32_t *r = g->ranges + 2 * k->off;
  uint32_t lo = 0, hi = k->n;
  while (lo < hi) {
    uint32_t mid = (lo + hi) / 2;
    if (r[2 * mid + 1] < a)
      lo = mid + 1;
    else
      hi = mid;
  }
  return lo < k->n && r[2 * lo] <= b;
}

/* The vocabulary. The text tokens' bytes in a byte trie numbered in depth-first preorder (node 0 the empty
   prefix): a node's first child is the next node, its next sibling the node size[] later, and the tokens that end
   in its subtree are toks[tok_off[i] .. tok_off[i + size[i]]) (those that end at it first). */
struct grammar_vocab {
  uint32_t n;         /* token ids */
  uint8_t *kinds;     /* [n] GRAMMAR_TOK_* (an empty text token is NEVER) */
  uint32_t *off;      /* [n + 1] token id's bytes are data[off[id] .. off[id + 1]) */
  char *data;         /* the bytes of every token */
  uint32_t n_nodes;   /* trie nodes */
  uint8_t *byte;      /* [n_nodes] the byte into the node */
  uint32_t *size;     /* [n_nodes] nodes in its subtree, itself included */
  uint32_t *parent;   /* [n_nodes] */
  uint32_t *tok_off;  /* [n_nodes + 1] */
  uint32_t *toks;     /* text token ids in preorder */
  uint32_t *tok_node; /* [n] the node a text token ends at (0 for the others) */
  /* what lies below each node: the bytes on its subtree's edges ([n_nodes][4] words, a bit per ASCII byte; bit 0
     also stands for any byte >= 0x80) and how many bytes deep it goes (capped at 255) */
  uint32_t *below;
  uint8_t *depth;
  uint32_t *eog; /* the EOG token ids */
  uint32_t n_eog, max_len;
};

/* growable u32 arrays */
typedef struct gr_u32 {
  uint32_t *v;
  size_t n, cap;
} gr_u32;
bool gr_u32_push(gr_u32 *a, uint32_t x);
bool gr_u32_reserve(gr_u32 *a, size_t n); /* room for n more */

/* The shared cache (grammar_cache.c). An entry is a key (u32 words) and a mask ([ceil(n / 32)] words) with, for a
   cut state, the tokens it leaves to check (ids); a cut entry with too many of those is kept as "walk exactly"
   (too_many). The calls copy under the cache's lock. */
enum { GR_KEY_EXACT = 1, GR_KEY_CUT = 2 };
const grammar *gr_cache_grammar(const grammar_cache *c);
/* [n_elems] each position as mask keys name it (the chains' links past the longest token folded) */
const uint32_t *gr_cache_canon(const grammar_cache *c);
const grammar_vocab *gr_cache_vocab(const grammar_cache *c);
/* 1 and the mask copied to mask with its count of tokens (and for a cut entry, the ids to check to *check as a
   malloc'd array of *n_check or *too_many set) when present; 0 when not. check may be NULL for exact keys. */
int gr_cache_get(grammar_cache *c, int kind, const uint32_t *key, uint32_t key_len, uint32_t *mask, uint32_t *count,
                 uint32_t **check, uint32_t *n_check, int *too_many);
/* stores a copy (mask may be NULL for a too_many cut entry); 0 when out of memory (nothing stored, no harm) */
int gr_cache_put(grammar_cache *c, int kind, const uint32_t *key, uint32_t key_len, const uint32_t *mask,
                 uint32_t count, const uint32_t *check, uint32_t n_check, int too_many);
void gr_cache_count_walk(grammar_cache *c);
#endif
