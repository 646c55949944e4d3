/* The matcher (grammar.h, grammar_matcher_*): a pushdown recognizer over the compiled grammar, with the stacks
   hash-consed into nodes (a node is a position and the node below it, so stacks share their bottoms and a state
   is a small set of node ids), each node's closure (the positions it reaches before the next character) and each
   leaf's successors computed once and kept, the bytes of a UTF-8 character that a token ended inside kept in the
   state as the range of code points they allow; and the mask: one walk of the vocabulary's byte trie from the state
   (a subtree left as soon as the grammar refuses its prefix, or taken whole when every string of its bytes keeps
   the state alive), stepping an automaton whose states are sets of nodes, made as the walks need them; cached in
   the grammar_cache by the exact state and by the state cut at its stacks' common context (the cut walk keeps the
   tokens that reach below the cut for a check against the real state). */
#include "grammar_int.h"
#include <stdlib.h>
#include <string.h>

#define POS_EMPTY 0xFFFFFFFFu /* node 0: the empty stack: the sentence is complete */
#define POS_CUT 0xFFFFFFFEu   /* node 1: the cut: what lies below a cut state's common context */
#define NODE_EMPTY 0u
#define NODE_CUT 1u
#define MEMO_NONE 0xFFFFFFFFu
#define MEMO_BUSY 0xFFFFFFFEu
#define GM_MAX_NODES (1u << 20) /* nodes a matcher keeps before its error state */
#define GM_MAX_DEPTH 20000      /* frames of a stack */
#define GM_MAX_RECURSION 1000   /* rules entered one in another without a character between them */
#define GM_CHECK_MAX 4096       /* tokens a cut walk may leave to check; more: walk the exact state */

typedef struct gm_node {
  uint32_t pos, parent, depth;
  uint32_t memo, memo_n; /* a leaf's successors, another node's closure: memo_n ids at memo in m->memo */
} gm_node;

typedef struct gm_part { /* a UTF-8 character begun: need more bytes, cp the bits so far, [lo, hi] still possible */
  uint32_t need, cp, lo, hi;
} gm_part;

typedef struct gm_saved {
  gr_u32 ids;
  gm_part part;
  int ended;
} gm_saved;

typedef struct gm_frame { /* a trie node in the walk, with the state after its bytes */
  uint32_t child, end, state;
  int x; /* the cut was open below this node's path: tokens refused under it are to check */
} gm_frame;

/* The walks' automaton, made as it is used: a state is a set of stack nodes (sorted) and a partial character, its
   transitions by byte computed once (DFA_DEAD: refused). Dropped whole when it grows past GM_DFA_BYTES. */
#define DFA_DEAD 0u
#define DFA_UNKNOWN 0xFFFFFFFFu
#define GM_DFA_BYTES ((size_t)16 << 20)
typedef struct gm_dstate {
  uint32_t off, n; /* the set: m->dsets.v[off .. off + n) */
  gm_part part;
  uint32_t *next; /* [256] or NULL until used */
  uint64_t hash;
  int cut; /* the cut is in the set at a character boundary */
  /* runs (dfa_run): every string of up to run_depth bytes of run (ASCII bytes, a bit each) keeps the state alive
     (RUN_FOREVER: any length); run_done 0 until known, 1 while computed */
  uint32_t run[4];
  uint16_t run_depth;
  uint8_t run_done;
  uint8_t run_self; /* every byte of run leads back to this state (a string's content): a run ends where it began */
  uint8_t has_alive;
  uint32_t alive[4]; /* the ASCII bytes 1..127 that keep it alive, once has_alive */
  uint32_t visits;   /* subtrees the walks met it at: its run is computed from GM_RUN_VISITS on */
  uint32_t min;      /* its sentence's fewest bytes left (set_min), once has_min */
  uint8_t has_min;
} gm_dstate;
#define RUN_FOREVER 0xFFFFu
#define GM_SKIP_MIN 8    /* a subtree of fewer nodes is walked, not tested whole */
#define GM_RUN_VISITS 32 /* a state's run is worth its 127 transitions when the walks meet it this often */
#define GM_RUN_DEPTH 12  /* states a run follows: past them a run is taken to end (it may be longer) */

struct grammar_matcher {
  const grammar *g;
  const grammar_vocab *v;
  grammar_cache *cache;
  const uint32_t *canon; /* gr_cache_canon */
  int own_cache;
  gm_node *nodes;
  uint32_t n_nodes, cap_nodes;
  uint32_t *htab; /* (pos, parent) -> node id + 1, open addressing */
  uint32_t hcap;
  gr_u32 memo;
  uint32_t *stamp; /* [cap_nodes] dedupe marks */
  uint32_t epoch;
  gr_u32 cur; /* the state: node ids */
  gm_part part;
  int ended, failed;
  llm_err err;
  gm_saved hist[GRAMMAR_MAX_ROLLBACK];
  uint32_t hist_head, hist_n;
  gr_u32 sa, sb, key, tmp, check, path, sort_tmp;
  gm_frame *frames;
  gm_dstate *ds;
  uint32_t n_ds, cap_ds;
  uint32_t *dtab; /* state hash -> id + 1 */
  uint32_t dcap;
  gr_u32 dsets, dout;
  size_t dfa_bytes;
  gr_u32 targets; /* the trie nodes of the tokens a cut state leaves to check, ascending */
  uint32_t words;
};

static int fail(grammar_matcher *m, wgllm_status st, const char *what) {
  if (!m->failed) llm_err_set(&m->err, st, "grammar matcher: %s", what);
  m->failed = 1;
  return -1;
}

static uint32_t hslot(uint32_t pos, uint32_t parent, uint32_t cap) {
  uint64_t h = ((uint64_t)pos << 32 | parent) * 0x9E3779B97F4A7C15ull;
  return (uint32_t)(h >> 32) & (cap - 1);
}

static int grow_nodes(grammar_matcher *m) {
  uint32_t cap = m->cap_nodes ? 2 * m->cap_nodes : 1024;
  gm_node *n = realloc(m->nodes, cap * sizeof *n);
  if (!n) return fail(m, WGLLM_ERR_OUT_OF_MEMORY, "out of memory for parse stacks");
  m->nodes = n;
  uint32_t *s = realloc(m->stamp, cap * sizeof *s);
  if (!s) return fail(m, WGLLM_ERR_OUT_OF_MEMORY, "out of memory for parse stacks");
  memset(s + m->cap_nodes, 0, (cap - m->cap_nodes) * sizeof *s);
  m->stamp = s;
  m->cap_nodes = cap;
  uint32_t hcap = 2 * cap;
  uint32_t *t = calloc(hcap, sizeof *t);
  if (!t) return fail(m, WGLLM_ERR_OUT_OF_MEMORY, "out of memory for parse stacks");
  for (uint32_t i = 2; i < m->n_nodes; i++) {
    uint32_t k = hslot(m->nodes[i].pos, m->nodes[i].parent, hcap);
    while (t[k])
      k = (k + 1) & (hcap - 1);
    t[k] = i + 1;
  }
  free(m->htab);
  m->htab = t;
  m->hcap = hcap;
  return 0;
}

/* the node (pos, parent), made on first use; UINT32_MAX in the error state */
static uint32_t intern(grammar_matcher *m, uint32_t pos, uint32_t parent) {
  uint32_t k = hslot(pos, parent, m->hcap);
  for (; m->htab[k]; k = (k + 1) & (m->hcap - 1)) {
    const gm_node *n = &m->nodes[m->htab[k] - 1];
    if (n->pos == pos && n->parent == parent) return m->htab[k] - 1;
  }
  if (m->n_nodes >= GM_MAX_NODES) {
    fail(m, WGLLM_ERR_UNSUPPORTED, "over 1M parse stack nodes (a grammar too ambiguous, or a text too deep)");
    return UINT32_MAX;
  }
  if (m->nodes[parent].depth >= GM_MAX_DEPTH) {
    fail(m, WGLLM_ERR_UNSUPPORTED, "parse stacks over 20000 rules deep");
    return UINT32_MAX;
  }
  if (m->n_nodes == m->cap_nodes) {
    if (grow_nodes(m)) return UINT32_MAX;
    k = hslot(pos, parent, m->hcap);
    while (m->htab[k])
      k = (k + 1) & (m->hcap - 1);
  }
  uint32_t id = m->n_nodes++;
  m->nodes[id] = (gm_node){pos, parent, m->nodes[parent].depth + 1, MEMO_NONE, 0};
  m->htab[k] = id + 1;
  return id;
}

/* a fresh mark for the dedupe stamps */
static uint32_t next_epoch(grammar_matcher *m) {
  if (++m->epoch == 0) {
    memset(m->stamp, 0, m->cap_nodes * sizeof *m->stamp);
    m->epoch = 1;
  }
  return m->epoch;
}

static int is_leaf(const grammar_matcher *m, uint32_t id) {
  uint32_t pos = m->nodes[id].pos;
  return pos < POS_CUT && GE_KIND(m->g->elems[pos]) == GE_CHAR;
}

static int closure(grammar_matcher *m, uint32_t id, uint32_t depth);

/* the node that continues at pos over parent (an END pops to parent); UINT32_MAX on failure */
static uint32_t at_pos(grammar_matcher *m, uint32_t pos, uint32_t parent) {
  if (GE_KIND(m->g->elems[pos]) == GE_END) return parent;
  return intern(m, pos, parent);
}

/* makes sure node id's closure is known (leaves, the empty stack and the cut are their own) */
static int ensure(grammar_matcher *m, uint32_t id, uint32_t depth) {
  if (id < 2 || is_leaf(m, id) || m->nodes[id].memo < MEMO_BUSY) return 0;
  return closure(m, id, depth);
}

/* appends node id's closure to out (stamped against duplicates); ensure(id) first */
static int add_closure(grammar_matcher *m, uint32_t id, gr_u32 *out) {
  if (id < 2 || is_leaf(m, id)) {
    if (m->stamp[id] != m->epoch) {
      m->stamp[id] = m->epoch;
      if (!gr_u32_push(out, id)) return fail(m, WGLLM_ERR_OUT_OF_MEMORY, "out of memory");
    }
    return 0;
  }
  const gm_node *n = &m->nodes[id];
  if (!gr_u32_reserve(out, n->memo_n)) return fail(m, WGLLM_ERR_OUT_OF_MEMORY, "out of memory");
  const uint32_t *l = m->memo.v + n->memo;
  for (uint32_t i = 0; i < n->memo_n; i++)
    if (m->stamp[l[i]] != m->epoch) m->stamp[l[i]] = m->epoch, out->v[out->n++] = l[i];
  return 0;
}

/* the closure of a node at a rule reference: each alternative of the rule, over the continuation */
static int closure(grammar_matcher *m, uint32_t id, uint32_t depth) {
  if (m->nodes[id].memo == MEMO_BUSY) return fail(m, WGLLM_ERR_INTERNAL, "a rule reaches itself without a character");
  if (depth > GM_MAX_RECURSION)
    return fail(m, WGLLM_ERR_UNSUPPORTED, "rules nested over 1000 deep without a character between them");
  m->nodes[id].memo = MEMO_BUSY;
  const grammar *g = m->g;
  uint32_t pos = m->nodes[id].pos, parent = m->nodes[id].parent, r = GE_VAL(g->elems[pos]);
  uint32_t cont = at_pos(m, pos + 1, parent);
  if (cont == UINT32_MAX) return -1;
  uint32_t na = g->alt_off[r + 1] - g->alt_off[r];
  uint32_t kids_small[16], *kids = na <= 16 ? kids_small : malloc(na * sizeof *kids);
  if (!kids) return fail(m, WGLLM_ERR_OUT_OF_MEMORY, "out of memory");
  int rc = 0;
  for (uint32_t a = 0; a < na && !rc; a++) {
    kids[a] = at_pos(m, g->alts[g->alt_off[r] + a], cont);
    if (kids[a] == UINT32_MAX || ensure(m, kids[a], depth + 1)) rc = -1;
  }
  if (!rc) {
    gr_u32 *out = &m->tmp;
    out->n = 0;
    next_epoch(m);
    for (uint32_t a = 0; a < na && !rc; a++)
      rc = add_closure(m, kids[a], out);
    if (!rc && out->n > GRAMMAR_MAX_STACKS)
      rc = fail(m, WGLLM_ERR_UNSUPPORTED, "over 4096 parse stacks at once (an ambiguous grammar)");
    if (!rc && !gr_u32_reserve(&m->memo, out->n)) rc = fail(m, WGLLM_ERR_OUT_OF_MEMORY, "out of memory");
    if (!rc) {
      m->nodes[id].memo = (uint32_t)m->memo.n;
      m->nodes[id].memo_n = (uint32_t)out->n;
      memcpy(m->memo.v + m->memo.n, out->v, out->n * sizeof *out->v);
      m->memo.n += out->n;
    }
  }
  if (kids != kids_small) free(kids);
  if (rc) m->nodes[id].memo = MEMO_NONE; /* unknown again (after a reset, computed anew) */
  return rc;
}

/* makes sure leaf id's successors (the closure after its character) are known */
static int successors(grammar_matcher *m, uint32_t id) {
  gm_node *n = &m->nodes[id];
  if (n->memo != MEMO_NONE) return 0;
  uint32_t next = at_pos(m, n->pos + 1, n->parent);
  if (next == UINT32_MAX || ensure(m, next, 0)) return -1;
  n = &m->nodes[id];
  if (next >= 2 && !is_leaf(m, next)) { /* share the list */
    n->memo = m->nodes[next].memo;
    n->memo_n = m->nodes[next].memo_n;
    return 0;
  }
  if (!gr_u32_push(&m->memo, next)) return fail(m, WGLLM_ERR_OUT_OF_MEMORY, "out of memory");
  n->memo = (uint32_t)m->memo.n - 1;
  n->memo_n = 1;
  return 0;
}

/* the state after code point c: at most GRAMMAR_MAX_STACKS ids to out; the count, or -1 (error state) */
static int step_cp(grammar_matcher *m, const uint32_t *s, uint32_t n, uint32_t c, uint32_t *out) {
  const grammar *g = m->g;
  uint32_t k = 0;
  for (uint32_t i = 0; i < n; i++) { /* successors first: their closures mark nodes too */
    uint32_t id = s[i], pos = m->nodes[id].pos;
    if (pos < POS_CUT && m->nodes[id].memo == MEMO_NONE && gr_class_has(g, GE_VAL(g->elems[pos]), c) &&
        successors(m, id))
      return -1;
  }
  uint32_t ep = next_epoch(m);
  for (uint32_t i = 0; i < n; i++) {
    uint32_t id = s[i], pos = m->nodes[id].pos;
    if (pos >= POS_CUT || !gr_class_has(g, GE_VAL(g->elems[pos]), c)) continue;
    const gm_node *nd = &m->nodes[id];
    const uint32_t *l = m->memo.v + nd->memo;
    for (uint32_t j = 0; j < nd->memo_n; j++)
      if (m->stamp[l[j]] != ep) {
        if (k == GRAMMAR_MAX_STACKS) return fail(m, WGLLM_ERR_UNSUPPORTED, "over 4096 parse stacks at once");
        m->stamp[l[j]] = ep;
        out[k++] = l[j];
      }
  }
  return (int)k;
}

/* the leaves of s whose class meets [lo, hi] */
static int filter(grammar_matcher *m, const uint32_t *s, uint32_t n, uint32_t lo, uint32_t hi, uint32_t *out) {
  const grammar *g = m->g;
  uint32_t k = 0;
  for (uint32_t i = 0; i < n; i++) {
    uint32_t pos = m->nodes[s[i]].pos;
    if (pos < POS_CUT && gr_class_meets(g, GE_VAL(g->elems[pos]), lo, hi)) out[k++] = s[i];
  }
  return (int)k;
}

/* the state after byte b: the count of ids written to out (0: refused), -1 in the error state */
static int step_byte(grammar_matcher *m, const uint32_t *s, uint32_t n, const gm_part *p, uint8_t b, uint32_t *out,
                     gm_part *np) {
  uint32_t cp, need, lo, hi;
  if (!p->need) {
    if (b < 0x80) {
      *np = *p;
      return step_cp(m, s, n, b, out);
    }
    if (b >= 0xC2 && b <= 0xDF)
      need = 1, cp = b & 0x1F, lo = 0x80, hi = 0x7FF;
    else if (b >= 0xE0 && b <= 0xEF)
      need = 2, cp = b & 0x0F, lo = 0x800, hi = b == 0xED ? 0xD7FF : 0xFFFF;
    else if (b >= 0xF0 && b <= 0xF4)
      need = 3, cp = b & 0x07, lo = 0x10000, hi = GRAMMAR_MAX_CP;
    else
      return 0;
  } else {
    if ((b & 0xC0) != 0x80) return 0;
    need = p->need - 1, cp = p->cp << 6 | (b & 0x3F), lo = p->lo, hi = p->hi;
  }
  uint32_t rlo = cp << (6 * need), rhi = rlo | ((1u << (6 * need)) - 1);
  if (rlo > lo) lo = rlo;
  if (rhi < hi) hi = rhi;
  if (lo > hi) return 0;
  if (!need) {
    *np = (gm_part){0, 0, 0, 0};
    return step_cp(m, s, n, cp, out);
  }
  *np = (gm_part){need, cp, lo, hi};
  return filter(m, s, n, lo, hi, out);
}

/* ---- the state ---- */

static int start_state(grammar_matcher *m) {
  const grammar *g = m->g;
  m->cur.n = 0;
  m->part = (gm_part){0, 0, 0, 0};
  uint32_t r = g->root, na = g->alt_off[r + 1] - g->alt_off[r];
  for (uint32_t a = 0; a < na; a++) {
    uint32_t id = at_pos(m, g->alts[g->alt_off[r] + a], NODE_EMPTY);
    if (id == UINT32_MAX || ensure(m, id, 0)) return -1;
  }
  next_epoch(m);
  for (uint32_t a = 0; a < na; a++)
    if (add_closure(m, at_pos(m, g->alts[g->alt_off[r] + a], NODE_EMPTY), &m->cur)) return -1;
  return 0;
}

static grammar_matcher *make(grammar_cache *c, int own, llm_err *err) {
  grammar_matcher *m = calloc(1, sizeof *m);
  if (!m) {
    if (own) grammar_cache_free(c);
    llm_err_set(err, WGLLM_ERR_OUT_OF_MEMORY, "grammar matcher: out of memory");
    return NULL;
  }
  m->cache = c;
  m->own_cache = own;
  m->g = gr_cache_grammar(c);
  m->v = gr_cache_vocab(c);
  m->canon = gr_cache_canon(c);
  m->words = (m->v->n + 31) / 32;
  m->frames = malloc((m->v->max_len + 2) * sizeof *m->frames);
  if (!m->frames || grow_nodes(m)) {
    grammar_matcher_free(m);
    llm_err_set(err, WGLLM_ERR_OUT_OF_MEMORY, "grammar matcher: out of memory");
    return NULL;
  }
  m->nodes[NODE_EMPTY] = (gm_node){POS_EMPTY, 0, 0, MEMO_NONE, 0};
  m->nodes[NODE_CUT] = (gm_node){POS_CUT, 1, 0, MEMO_NONE, 0};
  m->n_nodes = 2;
  if (start_state(m)) {
    llm_err_copy(err, &m->err);
    grammar_matcher_free(m);
    return NULL;
  }
  return m;
}

grammar_matcher *grammar_matcher_create(const grammar *g, const grammar_vocab *v, llm_err *err) {
  grammar_cache *c = grammar_cache_create(g, v, 0, err);
  return c ? make(c, 1, err) : NULL;
}

grammar_matcher *grammar_matcher_create_shared(grammar_cache *c, llm_err *err) {
  if (!c) {
    llm_err_set(err, WGLLM_ERR_INVALID_ARG, "grammar matcher: no cache");
    return NULL;
  }
  return make(c, 0, err);
}

void grammar_matcher_free(grammar_matcher *m) {
  if (!m) return;
  if (m->own_cache) grammar_cache_free(m->cache);
  for (uint32_t i = 0; i < GRAMMAR_MAX_ROLLBACK; i++)
    free(m->hist[i].ids.v);
  free(m->nodes), free(m->htab), free(m->memo.v), free(m->stamp), free(m->cur.v), free(m->sa.v), free(m->sb.v);
  free(m->key.v), free(m->tmp.v), free(m->check.v), free(m->frames), free(m->targets.v), free(m->path.v);
  free(m->sort_tmp.v);
  for (uint32_t i = 0; i < m->n_ds; i++)
    free(m->ds[i].next);
  free(m->ds), free(m->dtab), free(m->dsets.v), free(m->dout.v);
  free(m);
}

/* the frames of m's stack id above node stop, rebuilt in d (which may be m) over bottom; UINT32_MAX on failure */
static uint32_t rebuild(grammar_matcher *d, const grammar_matcher *m, uint32_t id, uint32_t stop, uint32_t bottom) {
  gr_u32 *f = &d->path;
  f->n = 0;
  uint32_t x = id;
  for (; x != stop && x >= 2; x = m->nodes[x].parent)
    if (!gr_u32_push(f, m->nodes[x].pos)) return fail(d, WGLLM_ERR_OUT_OF_MEMORY, "out of memory"), UINT32_MAX;
  if (x != stop) return fail(d, WGLLM_ERR_INTERNAL, "a stack without its context"), UINT32_MAX;
  for (size_t i = f->n; i-- > 0 && bottom != UINT32_MAX;)
    bottom = intern(d, f->v[i], bottom);
  return bottom;
}

grammar_matcher *grammar_matcher_clone(const grammar_matcher *m, llm_err *err) {
  /* m's cache goes with m: a matcher over a cache of its own gets a new one */
  grammar_cache *c = m->own_cache ? grammar_cache_create(m->g, m->v, 0, err) : m->cache;
  grammar_matcher *d = c ? make(c, m->own_cache, err) : NULL;
  if (!d) return NULL;
  d->cur.n = 0;
  for (size_t i = 0; i < m->cur.n; i++) {
    uint32_t id = rebuild(d, m, m->cur.v[i], NODE_EMPTY, NODE_EMPTY);
    if (id == UINT32_MAX || !gr_u32_push(&d->cur, id)) {
      llm_err_set(err, WGLLM_ERR_OUT_OF_MEMORY, "grammar matcher: out of memory");
      grammar_matcher_free(d);
      return NULL;
    }
  }
  d->part = m->part;
  d->ended = m->ended;
  d->failed = m->failed;
  d->err = m->err;
  return d;
}

void grammar_matcher_reset(grammar_matcher *m) {
  m->failed = 0;
  m->ended = 0;
  m->hist_n = 0;
  llm_err_clear(&m->err);
  start_state(m);
}

const llm_err *grammar_matcher_error(const grammar_matcher *m) { return &m->err; }

int grammar_matcher_can_end(const grammar_matcher *m) {
  if (m->failed || m->ended || m->part.need) return 0;
  for (size_t i = 0; i < m->cur.n; i++)
    if (m->cur.v[i] == NODE_EMPTY) return 1;
  return 0;
}

/* the fewest bytes from node id (a stack: its position, then what its parents continue with) to the end */
static uint32_t node_min(const grammar_matcher *m, uint32_t id) {
  uint64_t t = 0;
  for (; id >= 2; id = m->nodes[id].parent) {
    uint32_t pos = m->nodes[id].pos;
    if (pos >= POS_CUT) return GR_FAR;
    t += m->g->tail_min[pos];
  }
  return id == NODE_EMPTY && t < GR_FAR ? (uint32_t)t : GR_FAR;
}

/* the fewest bytes that complete the sentence from the state of stacks s (n of them) and partial character p
   (UINT32_MAX where none does) */
static uint32_t set_min(const grammar_matcher *m, const uint32_t *s, size_t n, const gm_part *p) {
  uint32_t best = GR_FAR;
  for (size_t i = 0; i < n; i++) {
    uint32_t id = s[i], t;
    if (p->need && id >= 2) /* a character begun: its missing bytes, then what follows it */
      t = p->need + node_min(m, id) - m->g->tail_min[m->nodes[id].pos] + m->g->tail_min[m->nodes[id].pos + 1];
    else
      t = node_min(m, id);
    if (t < best) best = t;
  }
  return best >= GR_FAR ? UINT32_MAX : best;
}

uint32_t grammar_matcher_min_bytes(const grammar_matcher *m) {
  if (m->failed || m->ended) return UINT32_MAX;
  return set_min(m, m->cur.v, m->cur.n, &m->part);
}

int grammar_matcher_must_end(const grammar_matcher *m) { return grammar_matcher_can_end(m) && m->cur.n == 1; }

int grammar_matcher_ended(const grammar_matcher *m) { return m->ended; }

/* keeps the state before an accept for rollback */
static void save(grammar_matcher *m) {
  gm_saved *s = &m->hist[m->hist_head];
  s->ids.n = 0;
  if (!gr_u32_reserve(&s->ids, m->cur.n)) { /* no history from here back */
    m->hist_n = 0;
    return;
  }
  memcpy(s->ids.v, m->cur.v, m->cur.n * sizeof *m->cur.v);
  s->ids.n = m->cur.n;
  s->part = m->part;
  s->ended = m->ended;
  m->hist_head = (m->hist_head + 1) % GRAMMAR_MAX_ROLLBACK;
  if (m->hist_n < GRAMMAR_MAX_ROLLBACK) m->hist_n++;
}

int grammar_matcher_rollback(grammar_matcher *m, uint32_t n) {
  if (n > m->hist_n || m->failed) return 0;
  if (!n) return 1;
  uint32_t k = (m->hist_head + GRAMMAR_MAX_ROLLBACK - n) % GRAMMAR_MAX_ROLLBACK;
  gm_saved *s = &m->hist[k];
  gr_u32 t = m->cur;
  m->cur = s->ids;
  s->ids = t;
  m->part = s->part;
  m->ended = s->ended;
  m->hist_head = k;
  m->hist_n -= n;
  return 1;
}

int grammar_matcher_accept_bytes(grammar_matcher *m, const char *s, size_t n) {
  if (m->failed || m->ended) return 0;
  if (!gr_u32_reserve(&m->sa, GRAMMAR_MAX_STACKS) || !gr_u32_reserve(&m->sb, GRAMMAR_MAX_STACKS) ||
      !gr_u32_reserve(&m->sa, m->cur.n))
    return fail(m, WGLLM_ERR_OUT_OF_MEMORY, "out of memory"), 0;
  const uint32_t *from = m->cur.v;
  uint32_t k = (uint32_t)m->cur.n;
  gm_part p = m->part;
  gr_u32 *bufs[2] = {&m->sa, &m->sb};
  for (size_t i = 0; i < n; i++) {
    uint32_t *to = bufs[i & 1]->v;
    gm_part np;
    int r = step_byte(m, from, k, &p, (uint8_t)s[i], to, &np);
    if (r <= 0) return 0;
    from = to, k = (uint32_t)r, p = np;
  }
  save(m);
  if (!n) return 1;
  gr_u32 *last = bufs[(n - 1) & 1];
  last->n = k;
  gr_u32 t = m->cur;
  m->cur = *last;
  *last = t;
  m->part = p;
  return 1;
}

int grammar_matcher_accept(grammar_matcher *m, int32_t id) {
  const grammar_vocab *v = m->v;
  if (m->failed || m->ended || id < 0 || (uint32_t)id >= v->n) return 0;
  if (v->kinds[id] == GRAMMAR_TOK_EOG) {
    if (!grammar_matcher_can_end(m)) return 0;
    save(m);
    m->ended = 1;
    return 1;
  }
  if (v->kinds[id] != GRAMMAR_TOK_TEXT) return 0;
  return grammar_matcher_accept_bytes(m, v->data + v->off[id], v->off[id + 1] - v->off[id]);
}

/* ---- the walks' automaton ---- */

static void dfa_clear(grammar_matcher *m) {
  for (uint32_t i = 0; i < m->n_ds; i++)
    free(m->ds[i].next);
  m->n_ds = 0;
  m->dsets.n = 0;
  m->dfa_bytes = 0;
  if (m->dtab) memset(m->dtab, 0, m->dcap * sizeof *m->dtab);
}

static uint64_t dfa_hash(const uint32_t *s, uint32_t n, const gm_part *p) {
  uint64_t h = 0x9E3779B97F4A7C15ull ^ ((uint64_t)p->need << 32 | p->cp);
  for (uint32_t i = 0; i < n; i++)
    h = (h ^ s[i]) * 0xBF58476D1CE4E5B9ull, h ^= h >> 29;
  return h ^ ((uint64_t)p->lo << 32 | p->hi);
}

typedef int (*gm_cmp)(const grammar_matcher *m, uint32_t a, uint32_t b);

static int cmp_id(const grammar_matcher *m, uint32_t a, uint32_t b) { return a < b ? -1 : a > b; }

/* merge sort of n ids (tmp: room for n), stable; insertion sort below 32 */
static void msort(const grammar_matcher *m, uint32_t *a, uint32_t *tmp, uint32_t n, gm_cmp cmp) {
  if (n < 32) {
    for (uint32_t i = 1; i < n; i++) {
      uint32_t x = a[i], j = i;
      for (; j > 0 && cmp(m, a[j - 1], x) > 0; j--)
        a[j] = a[j - 1];
      a[j] = x;
    }
    return;
  }
  uint32_t h = n / 2, i = 0, j = h, k = 0;
  msort(m, a, tmp, h, cmp);
  msort(m, a + h, tmp, n - h, cmp);
  while (i < h && j < n)
    tmp[k++] = cmp(m, a[i], a[j]) <= 0 ? a[i++] : a[j++];
  while (i < h)
    tmp[k++] = a[i++];
  while (j < n)
    tmp[k++] = a[j++];
  memcpy(a, tmp, n * sizeof *a);
}

static int sort_by(grammar_matcher *m, uint32_t *s, uint32_t n, gm_cmp cmp) {
  if (n >= 32 && !gr_u32_reserve(&m->sort_tmp, n)) return fail(m, WGLLM_ERR_OUT_OF_MEMORY, "out of memory");
  msort(m, s, m->sort_tmp.v, n, cmp);
  return 0;
}

/* the automaton's state of set s (n ids, sorted; empty: DFA_DEAD) and p; UINT32_MAX in the error state */
static uint32_t dfa_state(grammar_matcher *m, const uint32_t *s, uint32_t n, const gm_part *p) {
  if (!n) return DFA_DEAD;
  if (2 * (m->n_ds + 1) > m->dcap) { /* grow the table (and make the dead state) */
    uint32_t cap = m->dcap ? 2 * m->dcap : 1024;
    uint32_t *t = calloc(cap, sizeof *t);
    if (!t) return fail(m, WGLLM_ERR_OUT_OF_MEMORY, "out of memory"), UINT32_MAX;
    for (uint32_t i = 1; i < m->n_ds; i++) {
      uint32_t k = (uint32_t)m->ds[i].hash & (cap - 1);
      while (t[k])
        k = (k + 1) & (cap - 1);
      t[k] = i + 1;
    }
    free(m->dtab);
    m->dtab = t;
    m->dcap = cap;
  }
  if (!m->n_ds) { /* state 0: dead */
    if (!m->cap_ds && !(m->ds = calloc(m->cap_ds = 64, sizeof *m->ds)))
      return fail(m, WGLLM_ERR_OUT_OF_MEMORY, "out of memory"), UINT32_MAX;
    m->ds[0] = (gm_dstate){0};
    m->n_ds = 1;
  }
  uint64_t h = dfa_hash(s, n, p);
  uint32_t k = (uint32_t)h & (m->dcap - 1);
  for (; m->dtab[k]; k = (k + 1) & (m->dcap - 1)) {
    const gm_dstate *d = &m->ds[m->dtab[k] - 1];
    if (d->hash == h && d->n == n && !memcmp(&d->part, p, sizeof *p) && !memcmp(m->dsets.v + d->off, s, n * sizeof *s))
      return m->dtab[k] - 1;
  }
  if (m->n_ds == m->cap_ds) {
    gm_dstate *d = realloc(m->ds, 2 * m->cap_ds * sizeof *d);
    if (!d) return fail(m, WGLLM_ERR_OUT_OF_MEMORY, "out of memory"), UINT32_MAX;
    m->ds = d;
    m->cap_ds *= 2;
  }
  if (!gr_u32_reserve(&m->dsets, n)) return fail(m, WGLLM_ERR_OUT_OF_MEMORY, "out of memory"), UINT32_MAX;
  uint32_t id = m->n_ds++;
  int cut = 0;
  for (uint32_t i = 0; i < n && !p->need; i++)
    cut |= s[i] == NODE_CUT;
  m->ds[id] = (gm_dstate){(uint32_t)m->dsets.n, n, *p, NULL, h, cut};
  memcpy(m->dsets.v + m->dsets.n, s, n * sizeof *s);
  m->dsets.n += n;
  m->dfa_bytes += sizeof(gm_dstate) + n * sizeof *s + 8;
  m->dtab[k] = id + 1;
  return id;
}

/* the state after byte b from state d; UINT32_MAX in the error state */
static uint32_t dfa_next(grammar_matcher *m, uint32_t d, uint8_t b) {
  uint32_t *next = m->ds[d].next;
  if (next && next[b] != DFA_UNKNOWN) return next[b];
  if (!next) {
    if (!(next = malloc(256 * sizeof *next))) return fail(m, WGLLM_ERR_OUT_OF_MEMORY, "out of memory"), UINT32_MAX;
    memset(next, 0xFF, 256 * sizeof *next);
    m->ds[d].next = next;
    m->dfa_bytes += 256 * sizeof *next;
  }
  if (!gr_u32_reserve(&m->dout, GRAMMAR_MAX_STACKS))
    return fail(m, WGLLM_ERR_OUT_OF_MEMORY, "out of memory"), UINT32_MAX;
  gm_part np, p = m->ds[d].part;
  int k = step_byte(m, m->dsets.v + m->ds[d].off, m->ds[d].n, &p, b, m->dout.v, &np);
  if (k < 0) return UINT32_MAX;
  if (sort_by(m, m->dout.v, (uint32_t)k, cmp_id)) return UINT32_MAX;
  uint32_t t = dfa_state(m, m->dout.v, (uint32_t)k, &np);
  if (t != UINT32_MAX) next[b] = t;
  return t;
}

/* the bytes 1..127 that keep state d alive (all its ASCII transitions made) into b; -1 in the error state */
static int alive_bytes(grammar_matcher *m, uint32_t d, uint32_t b[4]) {
  if (!m->ds[d].has_alive) {
    uint32_t a[4] = {0};
    for (uint32_t c = 1; c < 128; c++) {
      uint32_t t = dfa_next(m, d, (uint8_t)c);
      if (t == UINT32_MAX) return -1;
      if (t != DFA_DEAD) a[c >> 5] |= 1u << (c & 31);
    }
    memcpy(m->ds[d].alive, a, sizeof a);
    m->ds[d].has_alive = 1;
  }
  memcpy(b, m->ds[d].alive, 4 * sizeof *b);
  return 0;
}

static int subset(const uint32_t *a, const uint32_t *b) {
  return !(a[0] & ~b[0]) && !(a[1] & ~b[1]) && !(a[2] & ~b[2]) && !(a[3] & ~b[3]);
}

/* state d's run: the largest byte set U of its live ASCII bytes after each of which all of U is still live, and
   how far strings of U stay live (following the states they lead to; a loop back to a state being computed
   counts as forever). Lets a walk take a whole subtree of such bytes at once. 0, or -1 in the error state. */
static int dfa_run(grammar_matcher *m, uint32_t d, int depth) {
  if (m->ds[d].run_done) return 0;
  m->ds[d].run_done = 1;
  uint32_t u[4], bb[4];
  if (alive_bytes(m, d, u)) return -1;
  for (int changed = 1; changed;) { /* U = {b in U : U live after b} */
    changed = 0;
    for (uint32_t c = 1; c < 128; c++) {
      if (!(u[c >> 5] >> (c & 31) & 1)) continue;
      uint32_t t = m->ds[d].next[c];
      if (t == d) continue;
      if (alive_bytes(m, t, bb)) return -1;
      if (!subset(u, bb)) u[c >> 5] &= ~(1u << (c & 31)), changed = 1;
    }
  }
  uint32_t run_depth = RUN_FOREVER;
  for (uint32_t c = 1; c < 128 && run_depth > 2; c++) { /* 1 + the least depth after a byte of U */
    if (!(u[c >> 5] >> (c & 31) & 1)) continue;
    uint32_t t = m->ds[d].next[c], after = 1;       /* U is live after c: strings of 2 */
    if (t == d || m->ds[t].run_done == 1) continue; /* a loop */
    if (depth < GM_RUN_DEPTH && dfa_run(m, t, depth + 1)) return -1;
    if (m->ds[t].run_done == 2 && subset(u, m->ds[t].run)) after = m->ds[t].run_depth;
    if (after != RUN_FOREVER && 1 + after < run_depth) run_depth = 1 + after;
  }
  gm_dstate *s = &m->ds[d];
  memcpy(s->run, u, sizeof u);
  s->run_depth = (uint16_t)run_depth;
  s->run_self = 1;
  for (uint32_t c = 1; c < 128; c++)
    if ((u[c >> 5] >> (c & 31) & 1) && s->next[c] != d) s->run_self = 0;
  s->run_done = 2;
  return 0;
}

/* state d's fewest bytes to the sentence's end (set_min of its set), computed once */
static uint32_t dfa_min(grammar_matcher *m, uint32_t d) {
  gm_dstate *s = &m->ds[d];
  if (!s->has_min) {
    s->min = set_min(m, m->dsets.v + s->off, s->n, &s->part);
    s->has_min = 1;
  }
  return s->min;
}

/* ---- masks ---- */

/* the walk of the trie from state s (n ids, partial p): sets in mask the tokens the state accepts; with check
   (a cut state), appends the tokens under a path where the cut was open and that the state alone does not accept
   (stops at GM_CHECK_MAX: returns 1); with targeted, walks only the subtrees that hold a node of m->targets; with a
   budget (not UINT32_MAX), sets only the tokens after which the sentence can end within budget bytes (a subtree is
   taken whole only where its bytes loop in one state: a string's content). 0 done, 1 too many to check, -1 error state.
 */
static int walk(grammar_matcher *m, const uint32_t *s, uint32_t n, gm_part p, uint32_t *mask, gr_u32 *check,
                int targeted, uint32_t budget) {
  const grammar_vocab *v = m->v;
  const uint32_t *tg = m->targets.v;
  size_t next_tg = 0, n_tg = m->targets.n; /* the walk meets nodes in preorder: the targets in turn */
  if (m->dfa_bytes > GM_DFA_BYTES) dfa_clear(m);
  if (!gr_u32_reserve(&m->dout, n)) return fail(m, WGLLM_ERR_OUT_OF_MEMORY, "out of memory");
  memcpy(m->dout.v, s, n * sizeof *s);
  if (sort_by(m, m->dout.v, n, cmp_id)) return -1;
  uint32_t root = dfa_state(m, m->dout.v, n, &p);
  if (root == UINT32_MAX) return -1;
  gm_frame *f = m->frames;
  f[0] = (gm_frame){1, v->size[0], root, m->ds[root].cut};
  const uint8_t *byte = v->byte;
  const uint32_t *size = v->size, *tok_off = v->tok_off, *toks = v->toks;
  int d = 0;
  while (d >= 0) {
    gm_frame *F = &f[d];
    if (F->child >= F->end) {
      d--;
      continue;
    }
    uint32_t c = F->child;
    F->child += size[c];
    if (targeted) {
      while (next_tg < n_tg && tg[next_tg] < c)
        next_tg++;
      if (next_tg == n_tg || tg[next_tg] >= c + size[c]) continue; /* no target in c's subtree */
    }
    const uint32_t *next = m->ds[F->state].next;
    uint32_t t = next && next[byte[c]] != DFA_UNKNOWN ? next[byte[c]] : dfa_next(m, F->state, byte[c]);
    if (t == UINT32_MAX) return -1;
    if (t == DFA_DEAD) {
      if (F->x && check) {
        uint32_t a = tok_off[c], b = tok_off[c + size[c]];
        if (check->n + (b - a) > GM_CHECK_MAX) return 1;
        if (!gr_u32_reserve(check, b - a)) return fail(m, WGLLM_ERR_OUT_OF_MEMORY, "out of memory");
        memcpy(check->v + check->n, toks + a, (b - a) * sizeof *toks);
        check->n += b - a;
      }
      continue;
    }
    if (budget == UINT32_MAX || (tok_off[c] < tok_off[c + 1] && dfa_min(m, t) <= budget))
      for (uint32_t k = tok_off[c]; k < tok_off[c + 1]; k++)
        mask[toks[k] >> 5] |= 1u << (toks[k] & 31);
    if (size[c] == 1) continue;
    if (size[c] >= GM_SKIP_MIN && !(v->below[4 * c] & 1)) { /* all of the subtree live? */
      if (!m->ds[t].run_done && ++m->ds[t].visits >= GM_RUN_VISITS && dfa_run(m, t, 0)) return -1;
      const gm_dstate *ds = &m->ds[t];
      if (ds->run_done == 2 && subset(v->below + 4 * c, ds->run) && v->depth[c] < 255 && v->depth[c] <= ds->run_depth &&
          (budget == UINT32_MAX || ds->run_self)) {
        /* with a budget, every token below ends in t itself (its run loops back to it): all in, or all out */
        if (budget == UINT32_MAX || dfa_min(m, t) <= budget)
          for (uint32_t k = tok_off[c + 1]; k < tok_off[c + size[c]]; k++)
            mask[toks[k] >> 5] |= 1u << (toks[k] & 31);
        continue;
      }
    }
    f[d + 1] = (gm_frame){c + 1, c + size[c], t, F->x || m->ds[t].cut};
    d++;
  }
  return 0;
}

/* a position as keys name it */
static uint32_t canon(const grammar_matcher *m, uint32_t pos) { return pos < POS_CUT ? m->canon[pos] : pos; }

/* the order of two stacks by their positions (as keys name them) from the top down */
static int cmp_stack(const grammar_matcher *m, uint32_t a, uint32_t b) {
  while (a != b) {
    uint32_t pa = canon(m, m->nodes[a].pos), pb = canon(m, m->nodes[b].pos);
    if (pa != pb) return pa < pb ? -1 : 1;
    if (a < 2 || b < 2) return a < b ? -1 : 1;
    a = m->nodes[a].parent, b = m->nodes[b].parent;
  }
  return 0;
}

/* key words of state s (sorted canonically in place): each stack's positions top-down and its bottom, then p */
static int make_key(grammar_matcher *m, uint32_t *s, uint32_t n, const gm_part *p) {
  if (sort_by(m, s, n, cmp_stack)) return -1;
  m->key.n = 0;
  for (uint32_t i = 0; i < n; i++) {
    uint32_t id = s[i];
    for (;;) {
      if (!gr_u32_push(&m->key, canon(m, m->nodes[id].pos))) return fail(m, WGLLM_ERR_OUT_OF_MEMORY, "out of memory");
      if (id < 2) break;
      id = m->nodes[id].parent;
    }
  }
  if (!gr_u32_push(&m->key, p->need) || !gr_u32_push(&m->key, p->cp) || !gr_u32_push(&m->key, p->lo) ||
      !gr_u32_push(&m->key, p->hi))
    return fail(m, WGLLM_ERR_OUT_OF_MEMORY, "out of memory");
  return 0;
}

/* the deepest node below every stack of the state (NODE_EMPTY when none is, or the sentence may end) */
static uint32_t common_below(const grammar_matcher *m) {
  uint32_t c = UINT32_MAX;
  for (size_t i = 0; i < m->cur.n; i++) {
    uint32_t x = m->cur.v[i];
    if (x < 2) return NODE_EMPTY;
    x = m->nodes[x].parent;
    if (c == UINT32_MAX) {
      c = x;
      continue;
    }
    while (m->nodes[c].depth > m->nodes[x].depth)
      c = m->nodes[c].parent;
    while (m->nodes[x].depth > m->nodes[c].depth)
      x = m->nodes[x].parent;
    while (c != x)
      c = m->nodes[c].parent, x = m->nodes[x].parent;
  }
  return c == UINT32_MAX ? NODE_EMPTY : c;
}

static uint32_t popcount_mask(const uint32_t *mask, uint32_t words) {
  uint32_t k = 0;
  for (uint32_t i = 0; i < words; i++) { /* bit counts in parallel (no popcnt instruction assumed) */
    uint32_t x = mask[i];
    x = x - ((x >> 1) & 0x55555555u);
    x = (x & 0x33333333u) + ((x >> 2) & 0x33333333u);
    k += (((x + (x >> 4)) & 0x0F0F0F0Fu) * 0x01010101u) >> 24;
  }
  return k;
}

/* the mask from the cut state's entry (walked and stored when new): 1 done, 0 not possible, -1 error */
static int mask_by_cut(grammar_matcher *m, uint32_t *mask) {
  uint32_t c = common_below(m);
  if (c == NODE_EMPTY) return 0;
  gr_u32 *cut = &m->sa;
  cut->n = 0;
  if (!gr_u32_reserve(cut, m->cur.n)) return fail(m, WGLLM_ERR_OUT_OF_MEMORY, "out of memory");
  for (size_t i = 0; i < m->cur.n; i++) {
    uint32_t id = rebuild(m, m, m->cur.v[i], c, NODE_CUT); /* the part below c replaced by the cut */
    if (id == UINT32_MAX) return -1;
    cut->v[cut->n++] = id;
  }
  gm_part none = {0, 0, 0, 0};
  if (make_key(m, cut->v, (uint32_t)cut->n, &none)) return -1;
  uint32_t *check = NULL, n_check = 0;
  int too_many = 0;
  if (gr_cache_get(m->cache, GR_KEY_CUT, m->key.v, (uint32_t)m->key.n, mask, NULL, &check, &n_check, &too_many)) {
    if (too_many) return 0;
  } else {
    memset(mask, 0, m->words * sizeof *mask);
    m->check.n = 0;
    gr_cache_count_walk(m->cache);
    int r = walk(m, cut->v, (uint32_t)cut->n, none, mask, &m->check, 0, UINT32_MAX);
    if (r < 0) return -1;
    gr_cache_put(m->cache, GR_KEY_CUT, m->key.v, (uint32_t)m->key.n, r ? NULL : mask, 0, m->check.v,
                 r ? 0 : (uint32_t)m->check.n, r);
    if (r) return 0;
    if (m->check.n && !(check = malloc(m->check.n * sizeof *check)))
      return fail(m, WGLLM_ERR_OUT_OF_MEMORY, "out of memory");
    if (m->check.n) memcpy(check, m->check.v, m->check.n * sizeof *check);
    n_check = (uint32_t)m->check.n;
  }
  /* the tokens to check: walk the real state down to their nodes only */
  m->targets.n = 0;
  if (!gr_u32_reserve(&m->targets, n_check)) {
    free(check);
    return fail(m, WGLLM_ERR_OUT_OF_MEMORY, "out of memory");
  }
  for (uint32_t i = 0; i < n_check; i++)
    if (!((mask[check[i] >> 5] >> (check[i] & 31)) & 1)) m->targets.v[m->targets.n++] = m->v->tok_node[check[i]];
  free(check);
  if (sort_by(m, m->targets.v, (uint32_t)m->targets.n, cmp_id)) return -1;
  if (m->targets.n && walk(m, m->cur.v, (uint32_t)m->cur.n, m->part, mask, NULL, 1, UINT32_MAX) < 0) return -1;
  return 1;
}

uint32_t grammar_matcher_mask(grammar_matcher *m, uint32_t *mask) {
  size_t bytes = m->words * sizeof *mask;
  /* the exact state's key (sorting the state in place is harmless: it is a set) */
  if (m->failed || m->ended || make_key(m, m->cur.v, (uint32_t)m->cur.n, &m->part)) return memset(mask, 0, bytes), 0;
  uint32_t count;
  if (gr_cache_get(m->cache, GR_KEY_EXACT, m->key.v, (uint32_t)m->key.n, mask, &count, NULL, NULL, NULL)) return count;
  int r = m->part.need ? 0 : mask_by_cut(m, mask);
  if (r < 0) return memset(mask, 0, bytes), 0;
  if (!r) {
    memset(mask, 0, bytes);
    gr_cache_count_walk(m->cache);
    if (walk(m, m->cur.v, (uint32_t)m->cur.n, m->part, mask, NULL, 0, UINT32_MAX) < 0) return memset(mask, 0, bytes), 0;
  }
  if (grammar_matcher_can_end(m))
    for (uint32_t i = 0; i < m->v->n_eog; i++)
      mask[m->v->eog[i] >> 5] |= 1u << (m->v->eog[i] & 31);
  count = popcount_mask(mask, m->words);
  if (!make_key(m, m->cur.v, (uint32_t)m->cur.n, &m->part))
    gr_cache_put(m->cache, GR_KEY_EXACT, m->key.v, (uint32_t)m->key.n, mask, count, NULL, 0, 0);
  return count;
}

uint32_t grammar_matcher_mask_within(grammar_matcher *m, uint32_t *mask, uint32_t budget) {
  size_t bytes = m->words * sizeof *mask;
  memset(mask, 0, bytes);
  if (m->failed || m->ended) return 0;
  gr_cache_count_walk(m->cache);
  if (walk(m, m->cur.v, (uint32_t)m->cur.n, m->part, mask, NULL, 0, budget) < 0) return memset(mask, 0, bytes), 0;
  if (grammar_matcher_can_end(m)) /* the end: no byte left, within any budget */
    for (uint32_t i = 0; i < m->v->n_eog; i++)
      mask[m->v->eog[i] >> 5] |= 1u << (m->v->eog[i] & 31);
  return popcount_mask(mask, m->words);
}
