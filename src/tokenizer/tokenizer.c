/* Tokenizer core: construction (shared by the tokenizer.json loader and tok_create for GGUF vocabularies),
   encoding (added-token split, normalizers, pre-tokenizers, BPE), decoding through the decoder chain, the
   streaming decoder, and the accessors. The pipeline follows Hugging Face `tokenizers` step by step so that
   ids match it exactly; comments name the HF behaviour each odd-looking rule reproduces. */
#define WGLLM_TOKENIZER_INTERNAL
#include "tokenizer.h"
#define PCRE2_CODE_UNIT_WIDTH 8
#include <pcre2.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define OOM(what) llm_err_set(err, WGLLM_ERR_OUT_OF_MEMORY, "tokenizer: out of memory (%s)", what)

static const char METASPACE[] = "\xe2\x96\x81"; /* U+2581 */

/* ---- construction ---- */

tokenizer *tok_alloc(void) {
  tokenizer *t = calloc(1, sizeof *t);
  if (!t) return NULL;
  t->unk_id = t->bos = t->eos = -1;
  for (int i = 0; i < 256; i++)
    t->byte_id[i] = -1;
  t->has_decoder = true;
  return t;
}

static void trie_free(tok_trie *tr) {
  tok_u64_free(&tr->edge);
  free(tr->term);
  memset(tr, 0, sizeof *tr);
}

void tok_free(tokenizer *t) {
  if (!t) return;
  free(t->arena.p);
  free(t->piece_off);
  free(t->piece_len);
  free(t->attr);
  free(t->scores);
  tok_smap_free(&t->vocab);
  tok_u64_free(&t->merges);
  free(t->added);
  tok_smap_free(&t->added_map);
  trie_free(&t->trie_raw);
  trie_free(&t->trie_norm);
  for (size_t i = 0; i < t->n_norm; i++) {
    free(t->norm[i].pat);
    free(t->norm[i].rep);
  }
  free(t->norm);
  for (size_t i = 0; i < t->n_pre; i++) {
    pcre2_code_free(t->pre[i].re);
    free(t->pre[i].re_src);
  }
  free(t->pre);
  for (size_t i = 0; i < t->n_dec; i++) {
    free(t->dec[i].pat);
    free(t->dec[i].rep);
  }
  free(t->dec);
  pcre2_code_free(t->word_re);
  free(t->prefix);
  free(t->suffix);
  free(t);
}

uint32_t tok_arena_put(tokenizer *t, const char *s, size_t n) {
  size_t off = t->arena.n;
  if (off + n >= UINT32_MAX || !tok_buf_put(&t->arena, s, n)) return UINT32_MAX;
  return (uint32_t)off;
}

bool tok_add_vocab(tokenizer *t, const char *s, size_t n, int32_t id, bool *dup) {
  *dup = false;
  uint32_t off = tok_arena_put(t, s, n);
  if (off == UINT32_MAX) return false;
  int r = tok_smap_put(&t->vocab, t->arena.p, off, (uint32_t)n, id, NULL);
  if (r == 0) {
    t->arena.n = off;
    *dup = true;
    return false;
  }
  if (r < 0) return false;
  if ((size_t)id + 1 > t->n_vocab) t->n_vocab = (size_t)id + 1;
  return true;
}

int32_t tok_vocab_lookup(const tokenizer *t, const char *s, size_t n) {
  return tok_smap_get(&t->vocab, t->arena.p, s, n);
}

bool tok_add_merge(tokenizer *t, int32_t a, int32_t b, uint32_t rank, int32_t merged) {
  return tok_u64_put(&t->merges, ((uint64_t)(uint32_t)a << 32) | (uint32_t)b,
                     ((uint64_t)rank << 32) | (uint32_t)merged);
}

bool tok_add_added(tokenizer *t, const char *s, size_t n, int32_t id, bool special, bool lstrip, bool rstrip,
                   bool single_word, bool normalized) {
  if (t->n_added == t->cap_added) {
    size_t cap = t->cap_added ? t->cap_added * 2 : 64;
    tok_added *p = realloc(t->added, cap * sizeof *p);
    if (!p) return false;
    t->added = p;
    t->cap_added = cap;
  }
  if (tok_smap_get(&t->added_map, t->arena.p, s, n) >= 0) return true; /* repeated content: the first stays, as in HF */
  uint32_t off = tok_arena_put(t, s, n);
  if (off == UINT32_MAX) return false;
  tok_added a = {id, off, (uint32_t)n, special, lstrip, rstrip, single_word, normalized};
  if (tok_smap_put(&t->added_map, t->arena.p, off, (uint32_t)n, (int32_t)t->n_added, NULL) < 0) return false;
  t->added[t->n_added++] = a;
  if ((size_t)id + 1 > t->n_vocab) t->n_vocab = (size_t)id + 1;
  return true;
}

/* Oniguruma's Unicode \s is White_Space; PCRE2's UCP \s also takes U+180E, so spell the class out. */
#define WS_CLASS "\\t-\\r\\x{20}\\x{85}\\x{A0}\\x{1680}\\x{2000}-\\x{200A}\\x{2028}\\x{2029}\\x{202F}\\x{205F}\\x{3000}"

void tok_regex_free(void *re) { pcre2_code_free(re); }

void *tok_match_context(void) {
  pcre2_match_context *mc = pcre2_match_context_create(NULL);
  if (!mc) return NULL;
  pcre2_set_match_limit(mc, TOK_RE_MATCH_LIMIT);
  pcre2_set_depth_limit(mc, TOK_RE_DEPTH_LIMIT);
  return mc;
}

/* a short sample every pattern is run over at load: one that errors on it (e.g. (?R)?a, recursing forever)
   would fail every prompt, so it is refused at load */
static const char RE_SAMPLE[] = "Hello, world! It's 2024: 3.14 caf\xc3\xa9 a  b\n\t\xe4\xb8\xad\xe6\x96\x87 aaaa";

static bool regex_try(pcre2_code *re, const char *pattern, size_t len, llm_err *err) {
  pcre2_match_context *mc = tok_match_context();
  pcre2_match_data *md = pcre2_match_data_create(4, NULL);
  int rc = 0;
  if (mc && md) {
    size_t n = sizeof RE_SAMPLE - 1, at = 0;
    while (at <= n) {
      rc = pcre2_match(re, (PCRE2_SPTR)RE_SAMPLE, n, at, 0, md, mc);
      if (rc < 0) break;
      PCRE2_SIZE *ov = pcre2_get_ovector_pointer(md);
      if (ov[1] > ov[0]) {
        at = ov[1];
      } else {
        at = ov[0] + 1;
        while (at < n && ((uint8_t)RE_SAMPLE[at] & 0xC0) == 0x80)
          at++;
      }
    }
  }
  pcre2_match_data_free(md);
  pcre2_match_context_free(mc);
  if (!mc || !md) return llm_err_set(err, WGLLM_ERR_OUT_OF_MEMORY, "tokenizer: out of memory (regex test)"), false;
  if (rc >= 0 || rc == PCRE2_ERROR_NOMATCH) return true;
  char msg[160];
  pcre2_get_error_message(rc, (PCRE2_UCHAR *)msg, sizeof msg);
  llm_err_set(err, WGLLM_ERR_FORMAT, "regex /%.*s/ fails on a short sample text: %s", (int)len, pattern, msg);
  return false;
}

void *tok_compile_regex(const char *pattern, size_t len, bool literal, llm_err *err) {
  tok_buf b = {0};
  uint32_t opts = PCRE2_UTF | PCRE2_UCP;
  if (literal) {
    opts = PCRE2_UTF | PCRE2_LITERAL; /* UCP is not allowed with LITERAL (and not needed) */
    if (!tok_buf_put(&b, pattern, len)) return NULL;
  } else {
    bool in_class = false;
    bool ok = true;
    for (size_t i = 0; i < len && ok; i++) {
      char c = pattern[i];
      if (c == '\\' && i + 1 < len) {
        char d = pattern[i + 1];
        if (d == 's')
          ok = tok_buf_put(&b, in_class ? WS_CLASS : "[" WS_CLASS "]", strlen(in_class ? WS_CLASS : "[" WS_CLASS "]"));
        else if (d == 'S' && !in_class)
          ok = tok_buf_put(&b, "[^" WS_CLASS "]", strlen("[^" WS_CLASS "]"));
        else
          ok = tok_buf_put(&b, pattern + i, 2);
        i++;
        continue;
      }
      if (!in_class && c == '[') {
        in_class = true;
        ok = tok_buf_put(&b, &c, 1);
        if (i + 1 < len && pattern[i + 1] == '^') {
          ok = ok && tok_buf_put(&b, "^", 1);
          i++;
        }
        if (i + 1 < len && pattern[i + 1] == ']') {
          ok = ok && tok_buf_put(&b, "]", 1);
          i++;
        }
        continue;
      }
      if (in_class && c == '[' && i + 1 < len && pattern[i + 1] == ':') { /* POSIX class: copy through ":]" */
        const char *e = strstr(pattern + i, ":]");
        size_t l = e && (size_t)(e - pattern) < len ? (size_t)(e - (pattern + i)) + 2 : 1;
        ok = tok_buf_put(&b, pattern + i, l);
        i += l - 1;
        continue;
      }
      if (in_class && c == ']') in_class = false;
      ok = tok_buf_put(&b, &c, 1);
    }
    if (!ok) {
      free(b.p);
      return NULL;
    }
  }
  int ec;
  PCRE2_SIZE eo;
  pcre2_code *re = pcre2_compile((PCRE2_SPTR)b.p, b.n, opts, &ec, &eo, NULL);
  if (!re) {
    char msg[160];
    pcre2_get_error_message(ec, (PCRE2_UCHAR *)msg, sizeof msg);
    llm_err_set(err, WGLLM_ERR_INTERNAL, "regex /%.*s/ does not compile at offset %zu: %s", (int)len, pattern,
                (size_t)eo, msg);
  } else {
    pcre2_jit_compile(re, PCRE2_JIT_COMPLETE); /* optional: falls back to the interpreter */
    if (!regex_try(re, pattern, len, err)) {
      pcre2_code_free(re);
      re = NULL;
    }
  }
  free(b.p);
  return re;
}

static bool trie_build(tokenizer *t, tok_trie *tr, bool normalized) {
  tr->cap_nodes = 64;
  tr->n_nodes = 1;
  tr->term = malloc(tr->cap_nodes * sizeof *tr->term);
  if (!tr->term) return false;
  tr->term[0] = -1;
  for (size_t k = 0; k < t->n_added; k++) {
    const tok_added *a = &t->added[k];
    if (a->normalized != normalized || a->len == 0) continue;
    uint64_t node = 0;
    for (uint32_t i = 0; i < a->len; i++) {
      uint64_t key = (node << 8) | (uint8_t)t->arena.p[a->off + i], child;
      if (!tok_u64_get(&tr->edge, key, &child)) {
        if (tr->n_nodes == tr->cap_nodes) {
          int32_t *p = realloc(tr->term, tr->cap_nodes * 2 * sizeof *p);
          if (!p) return false;
          tr->term = p;
          tr->cap_nodes *= 2;
        }
        child = tr->n_nodes++;
        tr->term[child] = -1;
        if (!tok_u64_put(&tr->edge, key, child)) return false;
      }
      node = child;
    }
    tr->term[node] = (int32_t)k;
  }
  return true;
}

static const char *const EOG_NAMES[] = {"<|eot_id|>",    "<|eom_id|>", "<|im_end|>", "<end_of_turn>", "<|end_of_text|>",
                                        "<|endoftext|>", "<|end|>",    "<eos>",      "</s>",          "<EOT>",
                                        "<|EOT|>",       "<|return|>", "<|call|>",   "<|eos|>",       "<|end_of_turn|>",
                                        "<turn|>"};

wgllm_status tok_finish(tokenizer *t, const char *what, llm_err *err) {
  size_t n = t->n_vocab;
  if (!n) {
    return llm_err_set(err, WGLLM_ERR_FORMAT, "%s: empty vocabulary", what);
  }
  if (!t->piece_off) { /* pieces from the model vocabulary; tok_create fills them itself */
    t->piece_off = calloc(n, sizeof *t->piece_off);
    t->piece_len = calloc(n, sizeof *t->piece_len);
    t->attr = calloc(n, 1);
    if (!t->piece_off || !t->piece_len || !t->attr) return OOM("piece table");
    for (size_t j = 0; j < t->vocab.cap; j++) {
      int32_t id = t->vocab.slot[j].val;
      if (id == INT32_MIN) continue;
      t->piece_off[id] = t->vocab.slot[j].koff;
      t->piece_len[id] = t->vocab.slot[j].klen;
      t->attr[id] |= TOK_ATTR_PRESENT;
    }
  }
  for (size_t k = 0; k < t->n_added; k++) {
    const tok_added *a = &t->added[k];
    t->piece_off[a->id] = a->off;
    t->piece_len[a->id] = a->len;
    t->attr[a->id] |= TOK_ATTR_PRESENT | TOK_ATTR_ADDED | (a->special ? TOK_ATTR_SPECIAL : 0);
    if (a->normalized) t->has_norm_added = true;
    if (a->single_word && !t->word_re) {
      t->word_re = tok_compile_regex("[\\p{L}\\p{N}_]", 14, false, err);
      if (!t->word_re) return WGLLM_ERR_INTERNAL;
    }
  }
  for (int b = 0; b < 256; b++) {
    if (t->byte_id[b] < 0) {
      char s[8];
      snprintf(s, sizeof s, "<0x%02X>", b);
      t->byte_id[b] = tok_vocab_lookup(t, s, 6);
    }
    if (t->byte_id[b] >= 0) t->attr[t->byte_id[b]] |= TOK_ATTR_BYTE;
  }
  if (t->unk_id >= (int32_t)n) {
    return llm_err_set(err, WGLLM_ERR_FORMAT, "%s: unknown token id %d outside the vocabulary (%zu)", what, t->unk_id,
                       n);
  }
  if (t->unk_id >= 0) t->attr[t->unk_id] |= TOK_ATTR_UNKNOWN;
  if (!trie_build(t, &t->trie_raw, false) || !trie_build(t, &t->trie_norm, true)) return OOM("added-token trie");
  if (t->bos >= (int32_t)n || t->eos >= (int32_t)n) {
    return llm_err_set(err, WGLLM_ERR_FORMAT, "%s: bos %d / eos %d outside the vocabulary (%zu)", what, t->bos, t->eos,
                       n);
  }
  /* template ids must be tokens, not holes between the ids of a vocabulary (encode would return them) */
  for (size_t i = 0; i < t->n_prefix; i++)
    if (t->prefix[i] < 0 || t->prefix[i] >= (int32_t)n || !(t->attr[t->prefix[i]] & TOK_ATTR_PRESENT)) {
      return llm_err_set(err, WGLLM_ERR_FORMAT, "%s: template token %d outside the vocabulary", what, t->prefix[i]);
    }
  for (size_t i = 0; i < t->n_suffix; i++)
    if (t->suffix[i] < 0 || t->suffix[i] >= (int32_t)n || !(t->attr[t->suffix[i]] & TOK_ATTR_PRESENT)) {
      return llm_err_set(err, WGLLM_ERR_FORMAT, "%s: template token %d outside the vocabulary", what, t->suffix[i]);
    }
  if (t->eos >= 0) t->attr[t->eos] |= TOK_ATTR_EOG;
  for (size_t i = 0; i < sizeof EOG_NAMES / sizeof *EOG_NAMES; i++) {
    int32_t id = tok_find(t, EOG_NAMES[i]);
    if (id >= 0 && (t->attr[id] & TOK_ATTR_SPECIAL)) t->attr[id] |= TOK_ATTR_EOG;
  }
  /* harmony (gpt-oss): <|end|> ends a message, not the reply (after its analysis the model goes on with
     <|start|>assistant and the final answer); <|return|> and <|call|> end it. Phi-3's <|end|> stays an end: its
     vocabulary has no <|return|>. llama.cpp drops <|end|> the same way, even where it is the EOS. */
  int32_t ret = tok_find(t, "<|return|>"), end = tok_find(t, "<|end|>");
  if (ret >= 0 && (t->attr[ret] & TOK_ATTR_SPECIAL) && end >= 0) t->attr[end] &= (uint8_t)~TOK_ATTR_EOG;
  return WGLLM_OK;
}

/* ---- encoding ---- */

typedef struct seg {
  size_t start, end;
  int32_t added; /* index into t->added, or -1 for text */
} seg;

typedef struct seg_vec {
  seg *v;
  size_t n, cap;
} seg_vec;

static bool seg_push(seg_vec *s, size_t start, size_t end, int32_t added) {
  if (s->n == s->cap) {
    size_t cap = s->cap ? s->cap * 2 : 16;
    seg *p = realloc(s->v, cap * sizeof *p);
    if (!p) return false;
    s->v = p;
    s->cap = cap;
  }
  s->v[s->n++] = (seg){start, end, added};
  return true;
}

/* pieces of pre-tokenization: byte ranges of buf; first = starts at offset 0 of the original text */
typedef struct plist {
  tok_buf buf;
  size_t *off, *len;
  uint8_t *first;
  size_t n, cap;
} plist;

static bool plist_add_any(plist *p, size_t off, size_t len, bool first) {
  if (p->n == p->cap) {
    size_t cap = p->cap ? p->cap * 2 : 32;
    size_t *o = realloc(p->off, cap * sizeof *o);
    if (o) p->off = o;
    size_t *l = realloc(p->len, cap * sizeof *l);
    if (l) p->len = l;
    uint8_t *f = realloc(p->first, cap);
    if (f) p->first = f;
    if (!o || !l || !f) return false;
    p->cap = cap;
  }
  p->off[p->n] = off;
  p->len[p->n] = len;
  p->first[p->n] = first;
  p->n++;
  return true;
}

static bool plist_add(plist *p, size_t off, size_t len, bool first) {
  return len == 0 || plist_add_any(p, off, len, first); /* HF drops empty splits */
}

static void plist_reset(plist *p) {
  p->buf.n = 0;
  p->n = 0;
}

static void plist_free(plist *p) {
  free(p->buf.p);
  free(p->off);
  free(p->len);
  free(p->first);
}

typedef struct enc_ctx {
  const tokenizer *t;
  int32_t *ids;
  size_t n_ids, cap_ids;
  tok_buf na, nb; /* normalization ping-pong */
  plist pa, pb;   /* pre-tokenization ping-pong */
  seg_vec segs, sub;
  tok_bpe_scratch bpe;
  pcre2_match_data *md;
  pcre2_match_context *mc; /* the TOK_RE_* limits */
  size_t budget;           /* the most bytes the pipeline may make of the current segment */
  size_t *mt;              /* matches: triples (start, end, is_match) */
  size_t n_mt, cap_mt;
  llm_err *err;
} enc_ctx;

static bool ctx_push_id(enc_ctx *c, int32_t id) {
  if (c->n_ids == c->cap_ids) {
    size_t cap = c->cap_ids ? c->cap_ids * 2 : 64;
    int32_t *p = realloc(c->ids, cap * sizeof *p);
    if (!p) return false;
    c->ids = p;
    c->cap_ids = cap;
  }
  c->ids[c->n_ids++] = id;
  return true;
}

static uint32_t cp_before(const char *s, size_t pos, size_t *start) {
  size_t i = pos - 1;
  while (i > 0 && ((uint8_t)s[i] & 0xC0) == 0x80)
    i--;
  size_t adv;
  *start = i;
  return tok_utf8_decode(s + i, &adv);
}

static bool is_word_char(const tokenizer *t, enc_ctx *c, const char *s, size_t n) {
  return pcre2_match(t->word_re, (PCRE2_SPTR)s, n, 0, PCRE2_ANCHORED | PCRE2_NO_UTF_CHECK, c->md, c->mc) >= 0;
}

/* HF AddedVocabulary::find_matches: leftmost-longest matches of the added tokens, honoring
   encode_special_tokens (our !parse_special), single_word, lstrip and rstrip;
   plain (may be NULL): per byte of s, 1 where a special token's text starting there is plain text (tok_encode_marked).
 */
static bool split_added(enc_ctx *c, const tok_trie *tr, const char *s, size_t n, bool parse_special,
                        const uint8_t *plain, seg_vec *out) {
  const tokenizer *t = c->t;
  size_t start_offset = 0, pos = 0;
  out->n = 0;
  while (tr->n_nodes > 1 && pos < n) {
    uint64_t node = 0;
    int32_t best = -1;
    size_t best_end = 0;
    for (size_t k = pos; k < n; k++) {
      uint64_t child;
      if (!tok_u64_get(&tr->edge, (node << 8) | (uint8_t)s[k], &child)) break;
      node = child;
      if (tr->term[node] >= 0) {
        best = tr->term[node];
        best_end = k + 1;
      }
    }
    if (best < 0) {
      pos++;
      continue;
    }
    const tok_added *a = &t->added[best];
    size_t st = pos, en = best_end;
    pos = best_end;
    if (a->special && (!parse_special || (plain && plain[st]))) continue;
    if (a->single_word) {
      size_t cs;
      bool start_ok = st == 0 || (cp_before(s, st, &cs), !is_word_char(t, c, s + cs, st - cs));
      bool stop_ok = en == n || !is_word_char(t, c, s + en, tok_utf8_valid_prefix(s, n, en));
      if (!start_ok || !stop_ok) continue;
    }
    if (a->lstrip) {
      size_t ns = st;
      while (ns > 0) {
        size_t cs;
        if (!tok_is_white_space(cp_before(s, ns, &cs))) break;
        ns = cs;
      }
      st = ns > start_offset ? ns : start_offset;
    }
    if (a->rstrip) {
      while (en < n) {
        size_t adv;
        if (!tok_is_white_space(tok_utf8_decode(s + en, &adv))) break;
        en += adv;
      }
      pos = en;
    }
    if (start_offset < st && !seg_push(out, start_offset, st, -1)) return false;
    if (!seg_push(out, st, en, best)) return false;
    start_offset = en;
  }
  if (start_offset < n && !seg_push(out, start_offset, n, -1)) return false;
  return true;
}

static bool replace_all(tok_buf *out, const char *s, size_t n, const char *pat, size_t pl, const char *rep, size_t rl) {
  out->n = 0;
  if (!tok_buf_put(out, "", 0)) return false;
  size_t i = 0;
  while (i < n) {
    if (pl && i + pl <= n && memcmp(s + i, pat, pl) == 0) {
      if (!tok_buf_put(out, rep, rl)) return false;
      i += pl;
    } else {
      size_t j = i + 1;
      while (j < n && !(pl && j + pl <= n && memcmp(s + j, pat, pl) == 0))
        j++;
      if (!tok_buf_put(out, s + i, j - i)) return false;
      i = j;
    }
  }
  return true;
}

/* runs the normalizers; returns the normalized text in c->na or c->nb */
static const char *norm_name(int kind) {
  return kind == TOK_NORM_NFC ? "NFC" : kind == TOK_NORM_PREPEND ? "Prepend" : "Replace";
}

/* a step made `out` bytes of `in`: refused past TOK_STEP_GROWTH x or past the pipeline's budget */
static bool grown(enc_ctx *c, const char *what, size_t k, const char *name, size_t in, size_t out) {
  if (out > in * TOK_STEP_GROWTH + TOK_GROWTH_SLACK) {
    llm_err_set(c->err, WGLLM_ERR_INVALID_ARG, "tokenizer: %s %zu (%s): the text grew past %dx (%zu -> %zu bytes)",
                what, k, name, TOK_STEP_GROWTH, in, out);
    return true;
  }
  if (out > c->budget) {
    llm_err_set(c->err, WGLLM_ERR_INVALID_ARG,
                "tokenizer: %s %zu (%s): the pipeline grew the text past %dx (%zu bytes, at most %zu)", what, k, name,
                TOK_PIPE_GROWTH, out, c->budget);
    return true;
  }
  return false;
}

/* runs the normalizers; returns the normalized text in c->na or c->nb; -1: a step grew it too much */
static int normalize(enc_ctx *c, const char *s, size_t n, const char **ns, size_t *nn) {
  const tokenizer *t = c->t;
  const char *cur = s;
  size_t cn = n;
  int which = 0;
  for (size_t k = 0; k < t->n_norm; k++) {
    const tok_norm *m = &t->norm[k];
    tok_buf *o = which ? &c->nb : &c->na;
    o->n = 0;
    switch (m->kind) {
    case TOK_NORM_NFC:
      if (!tok_nfc(cur, cn, o)) return 0;
      break;
    case TOK_NORM_PREPEND:
      if (cn == 0) continue; /* HF prepends only to non-empty text */
      if (!tok_buf_put(o, m->rep, m->rep_len) || !tok_buf_put(o, cur, cn)) return 0;
      break;
    case TOK_NORM_REPLACE:
      if (!replace_all(o, cur, cn, m->pat, m->pat_len, m->rep, m->rep_len)) return 0;
      break;
    }
    if (grown(c, "normalizer", k, norm_name(m->kind), cn, o->n)) return -1;
    cur = o->p ? o->p : "";
    cn = o->n;
    which ^= 1;
  }
  *ns = cur;
  *nn = cn;
  return 1;
}

static const char *pre_name(const tok_pre *p) {
  if (!p) return "?";
  switch (p->kind) {
  case TOK_PRE_SPLIT:
    return "Split";
  case TOK_PRE_DIGITS:
    return "Digits";
  case TOK_PRE_BYTE_LEVEL:
    return "ByteLevel";
  case TOK_PRE_METASPACE:
    return "Metaspace";
  }
  return "?";
}

static bool mt_push(enc_ctx *c, size_t s, size_t e, size_t m) {
  if (c->n_mt + 3 > c->cap_mt) {
    size_t cap = c->cap_mt ? c->cap_mt * 2 : 96;
    size_t *p = realloc(c->mt, cap * sizeof *p);
    if (!p) return false;
    c->mt = p;
    c->cap_mt = cap;
  }
  c->mt[c->n_mt++] = s;
  c->mt[c->n_mt++] = e;
  c->mt[c->n_mt++] = m;
  return true;
}

/* HF Pattern::find_matches: alternating (gap, match) pieces covering s; -1 on a regex failure */
static int find_matches(enc_ctx *c, const tok_pre *p, const pcre2_code *re, const char *s, size_t n) {
  c->n_mt = 0;
  size_t prev = 0, at = 0;
  while (at <= n) {
    int rc = pcre2_match(re, (PCRE2_SPTR)s, n, at, PCRE2_NO_UTF_CHECK, c->md, c->mc);
    if (rc == PCRE2_ERROR_NOMATCH) break;
    if (rc < 0) {
      char msg[120];
      pcre2_get_error_message(rc, (PCRE2_UCHAR *)msg, sizeof msg);
      const char *src = p && p->re_src ? p->re_src : "(built-in)";
      llm_err_set(c->err, WGLLM_ERR_INVALID_ARG, "tokenizer: pre-tokenizer %zu (%s) regex /%s/ failed at byte %zu: %s",
                  p ? (size_t)(p - c->t->pre) : 0, pre_name(p), src, at, msg);
      return -1;
    }
    PCRE2_SIZE *ov = pcre2_get_ovector_pointer(c->md);
    size_t ms = ov[0], me = ov[1];
    if (me == ms) { /* empty match: an empty piece, dropped later; step one character */
      if (ms >= n) break;
      size_t l = tok_utf8_valid_prefix(s, n, ms);
      at = ms + (l ? l : 1);
      continue;
    }
    if (prev != ms && !mt_push(c, prev, ms, 0)) return 0;
    if (!mt_push(c, ms, me, 1)) return 0;
    prev = at = me;
  }
  if (prev != n && !mt_push(c, prev, n, 0)) return 0;
  return 1;
}

/* HF NormalizedString::split with a SplitDelimiterBehavior, on one piece; appends to out */
static int split_piece(enc_ctx *c, const tok_pre *p, const pcre2_code *re, int behavior, bool invert, const plist *in,
                       size_t i, plist *out) {
  const char *s = in->buf.p + in->off[i];
  size_t n = in->len[i];
  int r = find_matches(c, p, re, s, n);
  if (r <= 0) return r;
  size_t base = in->off[i];
  size_t *m = c->mt, cnt = c->n_mt / 3;
  if (invert)
    for (size_t k = 0; k < cnt; k++)
      m[3 * k + 2] ^= 1;
  /* compute (start, end, remove) ranges into the same array, then emit */
  size_t w = 0;
  switch (behavior) {
  case TOK_SPLIT_ISOLATED:
    for (size_t k = 0; k < cnt; k++)
      m[3 * k + 2] = 0;
    w = cnt;
    break;
  case TOK_SPLIT_REMOVED:
    w = cnt;
    break;
  case TOK_SPLIT_CONTIGUOUS: {
    int prev = -1;
    for (size_t k = 0; k < cnt; k++) {
      int im = (int)m[3 * k + 2];
      if (im == prev && w)
        m[3 * (w - 1) + 1] = m[3 * k + 1];
      else {
        m[3 * w] = m[3 * k];
        m[3 * w + 1] = m[3 * k + 1];
        m[3 * w + 2] = 0;
        w++;
      }
      prev = im;
    }
    break;
  }
  case TOK_SPLIT_MERGED_PREV: {
    bool prev = false;
    for (size_t k = 0; k < cnt; k++) {
      bool im = m[3 * k + 2];
      if (im && !prev && w)
        m[3 * (w - 1) + 1] = m[3 * k + 1];
      else {
        m[3 * w] = m[3 * k];
        m[3 * w + 1] = m[3 * k + 1];
        m[3 * w + 2] = 0;
        w++;
      }
      prev = im;
    }
    break;
  }
  case TOK_SPLIT_MERGED_NEXT: { /* HF folds from the right */
    bool prev = false;
    size_t wr = cnt; /* write from the end backwards */
    for (size_t k = cnt; k-- > 0;) {
      bool im = m[3 * k + 2];
      size_t ks = m[3 * k], ke = m[3 * k + 1];
      if (im && !prev && wr < cnt)
        m[3 * wr] = ks;
      else {
        wr--;
        m[3 * wr] = ks;
        m[3 * wr + 1] = ke;
        m[3 * wr + 2] = 0;
      }
      prev = im;
    }
    memmove(m, m + 3 * wr, (cnt - wr) * 3 * sizeof *m);
    w = cnt - wr;
    break;
  }
  }
  for (size_t k = 0; k < w; k++) {
    if (m[3 * k + 2]) continue;
    if (!plist_add(out, base + m[3 * k], m[3 * k + 1] - m[3 * k], in->first[i] && m[3 * k] == 0)) return 0;
  }
  return 1;
}

/* one pre-tokenizer over all pieces: in -> out (out's buffer is rebuilt when the step rewrites text) */
static int pre_step(enc_ctx *c, const tok_pre *p, plist *in, plist *out) {
  plist_reset(out);
  switch (p->kind) {
  case TOK_PRE_SPLIT:
  case TOK_PRE_DIGITS: {
    if (!tok_buf_put(&out->buf, in->buf.p ? in->buf.p : "", in->buf.n)) return 0;
    for (size_t i = 0; i < in->n; i++) {
      int r = split_piece(c, p, p->re, p->behavior, p->invert, in, i, out);
      if (r <= 0) return r;
    }
    return 1;
  }
  case TOK_PRE_BYTE_LEVEL: {
    /* optional prefix space and GPT-2 regex split, then every byte to its stand-in character */
    plist *src = in;
    plist tmp = {0};
    if (p->add_prefix_space || p->use_regex) {
      for (size_t i = 0; i < in->n; i++) {
        size_t off = tmp.buf.n;
        if (p->add_prefix_space && in->buf.p[in->off[i]] != ' ' && !tok_buf_put(&tmp.buf, " ", 1)) goto oom;
        if (!tok_buf_put(&tmp.buf, in->buf.p + in->off[i], in->len[i])) goto oom;
        if (!plist_add(&tmp, off, tmp.buf.n - off, in->first[i])) goto oom;
      }
      src = &tmp;
      if (p->use_regex) {
        plist tmp2 = {0};
        if (!tok_buf_put(&tmp2.buf, tmp.buf.p, tmp.buf.n)) {
          plist_free(&tmp2);
          goto oom;
        }
        for (size_t i = 0; i < tmp.n; i++) {
          int r = split_piece(c, p, p->re, TOK_SPLIT_ISOLATED, false, &tmp, i, &tmp2);
          if (r <= 0) {
            plist_free(&tmp2);
            plist_free(&tmp);
            return r;
          }
        }
        plist_free(&tmp);
        tmp = tmp2;
        src = &tmp;
      }
    }
    for (size_t i = 0; i < src->n; i++) {
      size_t off = out->buf.n;
      for (size_t k = 0; k < src->len[i]; k++) {
        char u[4];
        size_t l = tok_utf8_encode(tok_byte_to_cp((uint8_t)src->buf.p[src->off[i] + k]), u);
        if (!tok_buf_put(&out->buf, u, l)) goto oom;
      }
      if (!plist_add(out, off, out->buf.n - off, src->first[i])) goto oom;
    }
    plist_free(&tmp);
    return 1;
  oom:
    plist_free(&tmp);
    return 0;
  }
  case TOK_PRE_METASPACE: {
    plist tmp = {0};
    for (size_t i = 0; i < in->n; i++) {
      size_t off = tmp.buf.n;
      const char *s = in->buf.p + in->off[i];
      size_t n = in->len[i];
      bool pre = false;
      tok_buf r = {0};
      if (!replace_all(&r, s, n, " ", 1, p->rep, p->rep_len)) {
        free(r.p);
        plist_free(&tmp);
        return 0;
      }
      bool starts = r.n >= p->rep_len && memcmp(r.p, p->rep, p->rep_len) == 0;
      if (p->prepend_scheme == TOK_PREPEND_ALWAYS)
        pre = !starts;
      else if (p->prepend_scheme == TOK_PREPEND_FIRST)
        pre = !starts && in->first[i];
      bool ok = (!pre || tok_buf_put(&tmp.buf, p->rep, p->rep_len)) && tok_buf_put(&tmp.buf, r.p, r.n) &&
                plist_add(&tmp, off, tmp.buf.n - off, in->first[i]);
      free(r.p);
      if (!ok) {
        plist_free(&tmp);
        return 0;
      }
    }
    if (!p->split) {
      plist_free(out);
      *out = tmp;
      return 1;
    }
    if (!tok_buf_put(&out->buf, tmp.buf.p ? tmp.buf.p : "", tmp.buf.n)) {
      plist_free(&tmp);
      return 0;
    }
    for (size_t i = 0; i < tmp.n; i++) {
      int r = split_piece(c, p, p->re, TOK_SPLIT_MERGED_NEXT, false, &tmp, i, out);
      if (r <= 0) {
        plist_free(&tmp);
        return r;
      }
    }
    plist_free(&tmp);
    return 1;
  }
  }
  return 1;
}

/* normalized text of one segment -> pre-tokenize -> BPE; errors are set by the caller on false */
static wgllm_status encode_text(enc_ctx *c, const char *s, size_t n, bool first) {
  const tokenizer *t = c->t;
  plist *in = &c->pa, *out = &c->pb;
  plist_reset(in);
  if (!tok_buf_put(&in->buf, s, n) || !plist_add(in, 0, n, first)) return WGLLM_ERR_OUT_OF_MEMORY;
  for (size_t k = 0; k < t->n_pre; k++) {
    int r = pre_step(c, &t->pre[k], in, out);
    if (r < 0) return WGLLM_ERR_INVALID_ARG;
    if (r == 0) return WGLLM_ERR_OUT_OF_MEMORY;
    if (grown(c, "pre-tokenizer", k, pre_name(&t->pre[k]), in->buf.n, out->buf.n)) return WGLLM_ERR_INVALID_ARG;
    plist *x = in;
    in = out;
    out = x;
  }
  for (size_t i = 0; i < in->n; i++)
    if (!tok_bpe_word(t, in->buf.p + in->off[i], in->len[i], &c->bpe, &c->ids, &c->n_ids, &c->cap_ids))
      return WGLLM_ERR_OUT_OF_MEMORY;
  return WGLLM_OK;
}

wgllm_status tok_encode(const tokenizer *t, const char *text, size_t len, int add_special, int parse_special,
                        int32_t **ids, size_t *n_ids, llm_err *err) {
  return tok_encode_marked(t, text, len, add_special, parse_special, NULL, ids, n_ids, err);
}

size_t tok_special_at(const tokenizer *t, const char *s, size_t n) {
  size_t best = 0;
  const tok_trie *tries[2] = {&t->trie_raw, &t->trie_norm}; /* the text as given (normalized tokens too: close) */
  for (int i = 0; i < 2; i++) {
    const tok_trie *tr = tries[i];
    uint64_t node = 0;
    for (size_t k = 0; k < n && tr->n_nodes > 1; k++) {
      uint64_t child;
      if (!tok_u64_get(&tr->edge, (node << 8) | (uint8_t)s[k], &child)) break;
      node = child;
      if (tr->term[node] >= 0 && t->added[tr->term[node]].special && k + 1 > best) best = k + 1;
    }
  }
  return best;
}

wgllm_status tok_encode_marked(const tokenizer *t, const char *text, size_t len, int add_special, int parse_special,
                               const uint8_t *plain, int32_t **ids, size_t *n_ids, llm_err *err) {
  if (!t || !ids || !n_ids || (!text && len)) {
    return llm_err_set(err, WGLLM_ERR_INVALID_ARG, "tok_encode: NULL argument");
  }
  *ids = NULL;
  *n_ids = 0;
  if (!text) text = "";
  size_t bad;
  if (!tok_utf8_validate(text, len, &bad)) {
    return llm_err_set(err, WGLLM_ERR_INVALID_ARG, "tok_encode: invalid UTF-8 at byte %zu of %zu (0x%02X)", bad, len,
                       (uint8_t)text[bad]);
  }
  enc_ctx c = {0};
  c.t = t;
  c.err = err;
  wgllm_status st = WGLLM_OK;
  c.md = pcre2_match_data_create(4, NULL);
  c.mc = tok_match_context();
  if (!c.md || !c.mc) {
    st = OOM("match data");
    goto done;
  }
  if (add_special)
    for (size_t i = 0; i < t->n_prefix; i++)
      if (!ctx_push_id(&c, t->prefix[i])) {
        st = OOM("ids");
        goto done;
      }
  if (!split_added(&c, &t->trie_raw, text, len, parse_special != 0, plain, &c.segs)) {
    st = OOM("segments");
    goto done;
  }
  for (size_t k = 0; k < c.segs.n; k++) {
    seg g = c.segs.v[k];
    if (g.added >= 0) {
      if (!ctx_push_id(&c, t->added[g.added].id)) {
        st = OOM("ids");
        goto done;
      }
      continue;
    }
    const char *ns;
    size_t nn;
    size_t gn = g.end - g.start;
    c.budget =
        gn > (SIZE_MAX - TOK_GROWTH_SLACK) / TOK_PIPE_GROWTH ? SIZE_MAX : gn * TOK_PIPE_GROWTH + TOK_GROWTH_SLACK;
    int nr = normalize(&c, text + g.start, gn, &ns, &nn);
    if (nr <= 0) {
      st = nr < 0 ? WGLLM_ERR_INVALID_ARG : OOM("normalizer");
      goto done;
    }
    if (!t->has_norm_added) {
      st = encode_text(&c, ns, nn, g.start == 0);
    } else { /* tokens matched on normalized text (HF split_normalized_trie) */
      char *copy = malloc(nn + 1);
      if (!copy) {
        st = OOM("normalized copy");
        goto done;
      }
      memcpy(copy, ns, nn);
      /* offsets moved with the normalization: a segment holding a plain byte matches no special token here */
      int seg_parse = parse_special && !(plain && memchr(plain + g.start, 1, gn));
      if (!split_added(&c, &t->trie_norm, copy, nn, seg_parse, NULL, &c.sub)) {
        free(copy);
        st = OOM("segments");
        goto done;
      }
      for (size_t j = 0; j < c.sub.n && st == WGLLM_OK; j++) {
        seg h = c.sub.v[j];
        if (h.added >= 0)
          st = ctx_push_id(&c, t->added[h.added].id) ? WGLLM_OK : WGLLM_ERR_OUT_OF_MEMORY;
        else
          st = encode_text(&c, copy + h.start, h.end - h.start, g.start == 0 && h.start == 0);
      }
      free(copy);
    }
    if (st == WGLLM_ERR_OUT_OF_MEMORY) {
      (void)OOM("encode");
      goto done;
    }
    if (st) goto done;
  }
  if (add_special)
    for (size_t i = 0; i < t->n_suffix; i++)
      if (!ctx_push_id(&c, t->suffix[i])) {
        st = OOM("ids");
        goto done;
      }
done:
  if (st == WGLLM_OK) {
    *ids = c.ids ? c.ids : malloc(sizeof(int32_t));
    *n_ids = c.n_ids;
    if (!*ids) st = OOM("ids");
  } else {
    free(c.ids);
  }
  free(c.na.p);
  free(c.nb.p);
  plist_free(&c.pa);
  plist_free(&c.pb);
  free(c.segs.v);
  free(c.sub.v);
  free(c.mt);
  tok_bpe_scratch_free(&c.bpe);
  pcre2_match_data_free(c.md);
  pcre2_match_context_free(c.mc);
  return st;
}

/* ---- decoding ---- */

static bool is_byte_token(const char *s, size_t n, uint8_t *b) {
  /* HF ByteFallback: "<0x" two hex digits ">" */
  if (n != 6 || memcmp(s, "<0x", 3) != 0 || s[5] != '>') return false;
  int v = 0;
  for (int i = 3; i < 5; i++) {
    char ch = s[i];
    int d = ch >= '0' && ch <= '9'   ? ch - '0'
            : ch >= 'a' && ch <= 'f' ? ch - 'a' + 10
            : ch >= 'A' && ch <= 'F' ? ch - 'A' + 10
                                     : -1;
    if (d < 0) return false;
    v = v * 16 + d;
  }
  *b = (uint8_t)v;
  return true;
}

/* appends s as UTF-8 with each maximal invalid subpart replaced by U+FFFD (Rust from_utf8_lossy) */
static bool put_lossy(tok_buf *o, const char *s, size_t n) {
  size_t i = 0;
  while (i < n) {
    size_t l = tok_utf8_valid_prefix(s, n, i);
    if (l) {
      size_t j = i + l;
      while (j < n && (l = tok_utf8_valid_prefix(s, n, j)))
        j += l;
      if (!tok_buf_put(o, s + i, j - i)) return false;
      i = j;
      continue;
    }
    bool more;
    i += tok_utf8_partial(s, n, i, &more);
    if (!tok_buf_put(o, "\xef\xbf\xbd", 3)) return false;
  }
  return true;
}

static bool put_byte_level(tok_buf *o, const char *s, size_t n) {
  /* HF ByteLevel decoder: a token whose characters are all in the byte map becomes those bytes,
     any other token contributes its own UTF-8 */
  size_t start = o->n;
  for (size_t i = 0; i < n;) {
    size_t adv;
    int b = tok_cp_to_byte(tok_utf8_decode(s + i, &adv));
    if (b < 0) {
      o->n = start;
      return tok_buf_put(o, s, n);
    }
    char ch = (char)b;
    if (!tok_buf_put(o, &ch, 1)) return false;
    i += adv;
  }
  return true;
}

static bool piece_ok(const tokenizer *t, int32_t id) {
  return id >= 0 && (size_t)id < t->n_vocab && (t->attr[id] & TOK_ATTR_PRESENT);
}

wgllm_status tok_decode(const tokenizer *t, const int32_t *ids, size_t n, int skip_special, char **text, size_t *len,
                        llm_err *err) {
  if (!t || !text || (!ids && n)) {
    return llm_err_set(err, WGLLM_ERR_INVALID_ARG, "tok_decode: NULL argument");
  }
  *text = NULL;
  if (len) *len = 0;
  for (size_t i = 0; i < n; i++)
    if (!piece_ok(t, ids[i])) {
      return llm_err_set(err, WGLLM_ERR_INVALID_ARG,
                         "tok_decode: id %d at position %zu is not in the vocabulary (size %zu)", ids[i], i,
                         t->n_vocab);
    }
  /* the token list, then each decoder in turn over the whole list (HF Decoder::decode_chain) */
  plist a = {0}, b = {0};
  plist *cur = &a, *nxt = &b;
  wgllm_status st = WGLLM_OK;
  for (size_t i = 0; i < n; i++) {
    int32_t id = ids[i];
    if (skip_special && (t->attr[id] & TOK_ATTR_SPECIAL)) continue;
    size_t off = cur->buf.n;
    if (!tok_buf_put(&cur->buf, t->arena.p + t->piece_off[id], t->piece_len[id])) goto oom;
    if (!plist_add_any(cur, off, t->piece_len[id], false)) goto oom; /* an empty token is still a token */
  }
  for (size_t k = 0; k < t->n_dec; k++) {
    const tok_dec *d = &t->dec[k];
    plist_reset(nxt);
    if (!tok_buf_put(&nxt->buf, "", 0)) goto oom;
#define EMIT_BEGIN size_t o0 = nxt->buf.n
#define EMIT_END                                                                                                       \
  if (!plist_add_any(nxt, o0, nxt->buf.n - o0, false)) goto oom
    switch (d->kind) {
    case TOK_DEC_REPLACE:
      for (size_t i = 0; i < cur->n; i++) {
        tok_buf r = {0};
        if (!replace_all(&r, cur->buf.p + cur->off[i], cur->len[i], d->pat, d->pat_len, d->rep, d->rep_len)) {
          free(r.p);
          goto oom;
        }
        EMIT_BEGIN;
        bool ok = tok_buf_put(&nxt->buf, r.p, r.n);
        free(r.p);
        if (!ok) goto oom;
        EMIT_END;
      }
      break;
    case TOK_DEC_BYTE_FALLBACK: {
      tok_buf bytes = {0};
      size_t n_bytes = 0;
      for (size_t i = 0; i <= cur->n; i++) {
        uint8_t bv;
        if (i < cur->n && is_byte_token(cur->buf.p + cur->off[i], cur->len[i], &bv)) {
          if (!tok_buf_put(&bytes, &bv, 1)) {
            free(bytes.p);
            goto oom;
          }
          n_bytes++;
          continue;
        }
        if (n_bytes) { /* a run of byte tokens: valid UTF-8 -> one string, else U+FFFD per byte token */
          size_t bad;
          if (tok_utf8_validate(bytes.p, bytes.n, &bad)) {
            EMIT_BEGIN;
            if (!tok_buf_put(&nxt->buf, bytes.p, bytes.n)) {
              free(bytes.p);
              goto oom;
            }
            EMIT_END;
          } else {
            for (size_t q = 0; q < n_bytes; q++) {
              EMIT_BEGIN;
              if (!tok_buf_put(&nxt->buf, "\xef\xbf\xbd", 3)) {
                free(bytes.p);
                goto oom;
              }
              EMIT_END;
            }
          }
          bytes.n = 0;
          n_bytes = 0;
        }
        if (i < cur->n) {
          EMIT_BEGIN;
          if (!tok_buf_put(&nxt->buf, cur->buf.p + cur->off[i], cur->len[i])) {
            free(bytes.p);
            goto oom;
          }
          EMIT_END;
        }
      }
      free(bytes.p);
      break;
    }
    case TOK_DEC_FUSE:
    case TOK_DEC_BYTE_LEVEL: {
      EMIT_BEGIN;
      if (d->kind == TOK_DEC_FUSE) {
        for (size_t i = 0; i < cur->n; i++)
          if (!tok_buf_put(&nxt->buf, cur->buf.p + cur->off[i], cur->len[i])) goto oom;
      } else {
        tok_buf raw = {0};
        for (size_t i = 0; i < cur->n; i++)
          if (!put_byte_level(&raw, cur->buf.p + cur->off[i], cur->len[i])) {
            free(raw.p);
            goto oom;
          }
        bool ok = put_lossy(&nxt->buf, raw.p ? raw.p : "", raw.n);
        free(raw.p);
        if (!ok) goto oom;
      }
      EMIT_END;
      break;
    }
    case TOK_DEC_STRIP:
      for (size_t i = 0; i < cur->n; i++) {
        const char *s = cur->buf.p + cur->off[i];
        size_t l = cur->len[i], a0 = 0, b0 = l, adv;
        for (size_t q = 0; q < d->start && a0 < l; q++) {
          if (tok_utf8_decode(s + a0, &adv) != d->cp) break;
          a0 += adv;
        }
        for (size_t q = 0; q < d->stop && b0 > a0; q++) {
          size_t cs;
          if (cp_before(s, b0, &cs) != d->cp) break;
          b0 = cs;
        }
        EMIT_BEGIN;
        if (!tok_buf_put(&nxt->buf, s + a0, b0 - a0)) goto oom;
        EMIT_END;
      }
      break;
    case TOK_DEC_METASPACE:
      for (size_t i = 0; i < cur->n; i++) {
        const char *s = cur->buf.p + cur->off[i];
        size_t l = cur->len[i];
        EMIT_BEGIN;
        for (size_t q = 0; q < l;) {
          size_t adv;
          uint32_t cp = tok_utf8_decode(s + q, &adv);
          if (cp == d->cp) {
            if (!(i == 0 && d->prepend_scheme != TOK_PREPEND_NEVER) && !tok_buf_put(&nxt->buf, " ", 1)) goto oom;
          } else if (!tok_buf_put(&nxt->buf, s + q, adv)) {
            goto oom;
          }
          q += adv;
        }
        EMIT_END;
      }
      break;
    }
#undef EMIT_BEGIN
#undef EMIT_END
    plist *x = cur;
    cur = nxt;
    nxt = x;
  }
  {
    tok_buf o = {0};
    if (!tok_buf_put(&o, "", 0)) goto oom;
    for (size_t i = 0; i < cur->n; i++) {
      if (!t->has_decoder && i && !tok_buf_put(&o, " ", 1)) {
        free(o.p);
        goto oom;
      }
      if (!tok_buf_put(&o, cur->buf.p + cur->off[i], cur->len[i])) {
        free(o.p);
        goto oom;
      }
    }
    *text = o.p;
    if (len) *len = o.n;
  }
  plist_free(&a);
  plist_free(&b);
  return st;
oom:
  plist_free(&a);
  plist_free(&b);
  return OOM("decode");
}

/* ---- streaming decode ---- */

struct tok_stream {
  const tokenizer *t;
  bool skip_special;
  size_t n_tokens;    /* tokens rendered so far (after skipping) */
  size_t strip_left;  /* leading characters a fused Strip may still remove */
  size_t strip_right; /* trailing ones it removes at the end of the text (its stop) */
  size_t n_held;      /* strip_cp characters at the end so far, held back until more text or the flush */
  uint32_t strip_cp;
  tok_buf pending; /* bytes not yet emitted (an incomplete UTF-8 sequence) */
  tok_buf ready;   /* emitted bytes that did not fit the caller's buffer */
  /* group_bytes: a ByteFallback (step k_bf) with steps after it that see each string of the list before any Fuse,
     so a run of byte tokens must reach them as one string (stream_end_run) */
  bool group_bytes;
  size_t k_bf;
  tok_buf run;    /* the bytes of the run of byte tokens so far */
  size_t n_run;   /* its tokens */
  size_t n_units; /* strings past ByteFallback so far (a run is one) */
};

tok_stream *tok_stream_create(const tokenizer *t) {
  if (!t) return NULL;
  tok_stream *s = calloc(1, sizeof *s);
  if (!s) return NULL;
  s->t = t;
  bool fused = false;
  for (size_t k = 0; k < t->n_dec; k++) {
    const tok_dec *d = &t->dec[k];
    if (d->kind == TOK_DEC_FUSE || d->kind == TOK_DEC_BYTE_LEVEL) fused = true;
    if (d->kind == TOK_DEC_STRIP && fused) {
      s->strip_left = d->start;
      s->strip_right = d->stop;
      s->strip_cp = d->cp;
    }
    if (d->kind == TOK_DEC_BYTE_FALLBACK && !fused && !s->group_bytes) {
      s->k_bf = k;
      /* a step after it before any Fuse / ByteLevel sees the run's string */
      s->group_bytes =
          k + 1 < t->n_dec && t->dec[k + 1].kind != TOK_DEC_FUSE && t->dec[k + 1].kind != TOK_DEC_BYTE_LEVEL;
    }
  }
  return s;
}

void tok_stream_skip_special(tok_stream *s, int skip) {
  if (s) s->skip_special = skip != 0;
}

void tok_stream_free(tok_stream *s) {
  if (!s) return;
  free(s->pending.p);
  free(s->ready.p);
  free(s->run.p);
  free(s);
}

/* One decoder step of the stream on a into b (a fused Strip passes through: it applies to the stream's start and
   end, stream_emit). first: this string is the first of the list the step sees (Metaspace drops its U+2581s). */
static bool stream_step(const tok_dec *d, bool *fused, bool first, const tok_buf *a, tok_buf *b) {
  bool ok = true;
  b->n = 0;
  switch (d->kind) {
  case TOK_DEC_REPLACE:
    ok = replace_all(b, a->p, a->n, d->pat, d->pat_len, d->rep, d->rep_len);
    break;
  case TOK_DEC_BYTE_FALLBACK: {
    uint8_t bv;
    if (is_byte_token(a->p, a->n, &bv))
      ok = tok_buf_put(b, &bv, 1);
    else
      ok = tok_buf_put(b, a->p, a->n);
    break;
  }
  case TOK_DEC_FUSE:
    *fused = true;
    ok = tok_buf_put(b, a->p, a->n);
    break;
  case TOK_DEC_BYTE_LEVEL:
    *fused = true;
    ok = put_byte_level(b, a->p, a->n);
    break;
  case TOK_DEC_STRIP:
    if (*fused) {
      ok = tok_buf_put(b, a->p, a->n);
      break;
    } /* applied to the stream start instead */
    {
      size_t a0 = 0, b0 = a->n, adv;
      for (size_t q = 0; q < d->start && a0 < a->n; q++) {
        if (tok_utf8_valid_prefix(a->p, a->n, a0) == 0 || tok_utf8_decode(a->p + a0, &adv) != d->cp) break;
        a0 += adv;
      }
      for (size_t q = 0; q < d->stop && b0 > a0; q++) {
        size_t cs;
        if (cp_before(a->p, b0, &cs) != d->cp) break;
        b0 = cs;
      }
      ok = tok_buf_put(b, a->p + a0, b0 - a0);
    }
    break;
  case TOK_DEC_METASPACE:
    for (size_t q = 0; q < a->n && ok;) {
      size_t l = tok_utf8_valid_prefix(a->p, a->n, q), adv = 1;
      uint32_t cp = l ? tok_utf8_decode(a->p + q, &adv) : 0xFFFFFFFFu;
      if (cp == d->cp) {
        if (!(first && d->prepend_scheme != TOK_PREPEND_NEVER)) ok = tok_buf_put(b, " ", 1);
      } else {
        ok = tok_buf_put(b, a->p + q, adv);
      }
      q += adv;
    }
    break;
  }
  return ok;
}

/* decoder steps k0..k1 on *a in place (b: scratch) */
static bool stream_steps(const tokenizer *t, size_t k0, size_t k1, bool *fused, bool first, tok_buf *a, tok_buf *b) {
  bool ok = true;
  for (size_t k = k0; k < k1 && ok; k++) {
    ok = stream_step(&t->dec[k], fused, first, a, b);
    tok_buf x = *a;
    *a = *b;
    *b = x;
  }
  return ok;
}

size_t tok_token_bytes(const tokenizer *t, int32_t id, char *out, size_t cap) {
  if (!t || !piece_ok(t, id)) return 0;
  tok_buf a = {0}, b = {0};
  bool fused = false;
  bool ok = tok_buf_put(&a, t->arena.p + t->piece_off[id], t->piece_len[id]);
  if (ok) ok = stream_steps(t, 0, t->n_dec, &fused, false, &a, &b);
  size_t lead = !t->has_decoder, n = ok ? lead + a.n : 0; /* no decoder: tokens joined with spaces */
  if (n && out && cap) {
    if (lead) out[0] = ' ';
    if (cap > lead && a.n) memcpy(out + lead, a.p, a.n < cap - lead ? a.n : cap - lead);
  }
  free(a.p);
  free(b.p);
  return n;
}

/* the token's contribution to the byte stream, per decoder step (everything but a fused Strip) */
static bool stream_token(tok_stream *s, int32_t id, tok_buf *o) {
  const tokenizer *t = s->t;
  tok_buf a = {0}, b = {0};
  bool fused = false;
  bool ok = tok_buf_put(&a, t->arena.p + t->piece_off[id], t->piece_len[id]);
  if (ok) ok = stream_steps(t, 0, t->n_dec, &fused, s->n_tokens == 0, &a, &b);
  if (ok && !t->has_decoder && s->n_tokens) ok = tok_buf_put(o, " ", 1);
  if (ok) ok = tok_buf_put(o, a.p ? a.p : "", a.n);
  free(a.p);
  free(b.p);
  return ok;
}

/* Byte runs (group_bytes): the whole decode's ByteFallback turns a run of byte tokens into one string (valid UTF-8)
   or one U+FFFD a byte, and the steps after it (a Strip, Replace or Metaspace before any Fuse) see that string, not
   each byte: the run's bytes wait in s->run until a token that is not a byte, or the flush, ends it. */
static bool stream_end_run(tok_stream *s) {
  if (!s->n_run) return true;
  const tokenizer *t = s->t;
  tok_buf a = {0}, b = {0};
  size_t bad;
  bool ok = true, valid = tok_utf8_validate(s->run.p, s->run.n, &bad);
  for (size_t q = 0; q < (valid ? 1 : s->n_run) && ok; q++) { /* the run, or each of its U+FFFDs, one string */
    bool fused = false;
    a.n = 0;
    ok = valid ? tok_buf_put(&a, s->run.p, s->run.n) : tok_buf_put(&a, "\xef\xbf\xbd", 3);
    if (ok) ok = stream_steps(t, s->k_bf + 1, t->n_dec, &fused, s->n_units == 0, &a, &b);
    if (ok) ok = tok_buf_put(&s->pending, a.p ? a.p : "", a.n);
    s->n_units++;
  }
  free(a.p);
  free(b.p);
  s->run.n = 0;
  s->n_run = 0;
  return ok;
}

/* a token in group_bytes mode: the steps before ByteFallback, then either a byte joining the run or the run ended
   and the token's own string through the rest of the steps */
static bool stream_token_grouped(tok_stream *s, int32_t id) {
  const tokenizer *t = s->t;
  tok_buf a = {0}, b = {0};
  bool fused = false;
  uint8_t bv;
  bool ok = tok_buf_put(&a, t->arena.p + t->piece_off[id], t->piece_len[id]);
  if (ok) ok = stream_steps(t, 0, s->k_bf, &fused, s->n_tokens == 0, &a, &b);
  if (ok && is_byte_token(a.p, a.n, &bv)) {
    ok = tok_buf_put(&s->run, &bv, 1);
    if (ok) s->n_run++;
  } else if (ok) {
    ok = stream_end_run(s);
    if (ok) ok = stream_steps(t, s->k_bf, t->n_dec, &fused, s->n_units == 0, &a, &b);
    if (ok) ok = tok_buf_put(&s->pending, a.p ? a.p : "", a.n);
    if (ok) s->n_units++;
  }
  free(a.p);
  free(b.p);
  return ok;
}

/* k of the held strip_cp characters into ready; none stay held */
static bool put_held(tok_stream *s, size_t k) {
  char enc[4];
  size_t el = tok_utf8_encode(s->strip_cp, enc);
  for (size_t q = 0; q < k; q++)
    if (!tok_buf_put(&s->ready, enc, el)) return false;
  s->n_held = 0;
  return true;
}

/* moves the decodable prefix of pending into ready (lossy, holding back a sequence that may complete, and a fused
   Strip's trailing characters until it is known whether the text ends there) */
static bool stream_emit(tok_stream *s, bool final) {
  const char *p = s->pending.p;
  size_t n = s->pending.n, i = 0;
  while (i < n) {
    size_t l = tok_utf8_valid_prefix(p, n, i);
    const char *piece = p + i;
    size_t pl = l;
    if (!l) {
      bool more;
      size_t k = tok_utf8_partial(p, n, i, &more);
      if (more && !final) break;
      piece = "\xef\xbf\xbd";
      pl = 3;
      l = k;
    }
    if (s->strip_left) {
      size_t adv;
      if (tok_utf8_decode(piece, &adv) == s->strip_cp) {
        s->strip_left--;
        i += l;
        continue;
      }
      s->strip_left = 0;
    }
    if (s->strip_right) { /* a run of strip_cp waits: the Strip removes the last of them at the end of the text */
      size_t adv;
      if (tok_utf8_decode(piece, &adv) == s->strip_cp) {
        s->n_held++;
        i += l;
        continue;
      }
      if (!put_held(s, s->n_held)) return false;
    }
    if (!tok_buf_put(&s->ready, piece, pl)) return false;
    i += l;
  }
  if (i && n > i) memmove(s->pending.p, p + i, n - i);
  s->pending.n = n - i;
  /* the end of the text: the held run less what the Strip removes */
  if (final && s->n_held) return put_held(s, s->n_held > s->strip_right ? s->n_held - s->strip_right : 0);
  return true;
}

/* hands out at most cap bytes, ending on a character boundary; the rest stays queued */
static size_t stream_out(tok_stream *s, char *out, size_t cap) {
  size_t n = s->ready.n;
  if (n > cap) {
    n = cap;
    while (n > 0 && ((uint8_t)s->ready.p[n] & 0xC0) == 0x80)
      n--;
  }
  if (!out) n = 0;
  if (n) {
    memcpy(out, s->ready.p, n);
    memmove(s->ready.p, s->ready.p + n, s->ready.n - n);
    s->ready.n -= n;
  }
  return n;
}

size_t tok_stream_push(tok_stream *s, int32_t id, char *out, size_t cap) {
  if (!s) return 0;
  const tokenizer *t = s->t;
  if (id >= 0 && piece_ok(t, id) && !(s->skip_special && (t->attr[id] & TOK_ATTR_SPECIAL))) {
    if (s->group_bytes ? stream_token_grouped(s, id) : stream_token(s, id, &s->pending)) {
      s->n_tokens++;
      stream_emit(s, false);
    }
  }
  return stream_out(s, out, cap);
}

size_t tok_stream_flush(tok_stream *s, char *out, size_t cap) {
  if (!s) return 0;
  stream_end_run(s);
  stream_emit(s, true);
  return stream_out(s, out, cap);
}

/* ---- GGUF-style construction ---- */

static const char RE_GPT2[] = "'s|'t|'re|'ve|'m|'ll|'d| ?\\p{L}+| ?\\p{N}+| ?[^\\s\\p{L}\\p{N}]+|\\s+(?!\\S)|\\s+";
static const char RE_LLAMA3[] = "(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}{1,3}| "
                                "?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+";
/* Mistral's Tekken (tokenizer.json of Mistral Nemo / Small 3; llama.cpp's "tekken"): a word is upper-case letters
   then lower-case ones (so camel case splits), digits one at a time */
static const char RE_TEKKEN[] =
    "[^\\r\\n\\p{L}\\p{N}]?[\\p{Lu}\\p{Lt}\\p{Lm}\\p{Lo}\\p{M}]*[\\p{Ll}\\p{Lm}\\p{Lo}\\p{M}]+|"
    "[^\\r\\n\\p{L}\\p{N}]?[\\p{Lu}\\p{Lt}\\p{Lm}\\p{Lo}\\p{M}]+[\\p{Ll}\\p{Lm}\\p{Lo}\\p{M}]*|"
    "\\p{N}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n/]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+";
/* OpenAI's o200k (gpt-oss's o200k_harmony; llama.cpp's "gpt-4o"): Tekken's words with their contractions attached,
   digits in threes */
static const char RE_GPT4O[] = "[^\\r\\n\\p{L}\\p{N}]?[\\p{Lu}\\p{Lt}\\p{Lm}\\p{Lo}\\p{M}]*[\\p{Ll}\\p{Lm}\\p{Lo}\\p{M}"
                               "]+(?i:'s|'t|'re|'ve|'m|'ll|'d)?|"
                               "[^\\r\\n\\p{L}\\p{N}]?[\\p{Lu}\\p{Lt}\\p{Lm}\\p{Lo}\\p{M}]+[\\p{Ll}\\p{Lm}\\p{Lo}\\p{M}"
                               "]*(?i:'s|'t|'re|'ve|'m|'ll|'d)?|"
                               "\\p{N}{1,3}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n/]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+";
static const char RE_QWEN2[] = "(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}| "
                               "?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+";

/* llama.cpp's Gemma 4 pre-tokenizer: runs of newlines apart from everything else */
static const char RE_GEMMA4[] = "[^\\n]+|[\\n]+";

const char *tok_gpt2_regex(void) { return RE_GPT2; }

static bool spm_setup(tokenizer *t, bool prefix) {
  /* SentencePiece as HF converts it (legacy Llama): Prepend U+2581, spaces -> U+2581; decoder
     U+2581 -> space, byte fallback, fuse, strip one leading space when a prefix was added */
  for (size_t i = 0; i < t->n_norm; i++) {
    free(t->norm[i].pat);
    free(t->norm[i].rep);
  }
  for (size_t i = 0; i < t->n_dec; i++) {
    free(t->dec[i].pat);
    free(t->dec[i].rep);
  }
  t->n_norm = t->n_dec = 0;
  if (!t->norm) t->norm = calloc(2, sizeof *t->norm);
  if (!t->dec) t->dec = calloc(4, sizeof *t->dec);
  if (!t->norm || !t->dec) return false;
  if (prefix) t->norm[t->n_norm++] = (tok_norm){TOK_NORM_PREPEND, NULL, strdup(METASPACE), 0, 3};
  t->norm[t->n_norm++] = (tok_norm){TOK_NORM_REPLACE, strdup(" "), strdup(METASPACE), 1, 3};
  t->dec[t->n_dec++] = (tok_dec){TOK_DEC_REPLACE, strdup(METASPACE), strdup(" "), 3, 1, 0, 0, 0, 0};
  t->dec[t->n_dec++] = (tok_dec){.kind = TOK_DEC_BYTE_FALLBACK};
  t->dec[t->n_dec++] = (tok_dec){.kind = TOK_DEC_FUSE};
  if (prefix) t->dec[t->n_dec++] = (tok_dec){.kind = TOK_DEC_STRIP, .cp = ' ', .start = 1, .stop = 0};
  for (size_t i = 0; i < t->n_norm; i++)
    if ((t->norm[i].kind == TOK_NORM_REPLACE && !t->norm[i].pat) || !t->norm[i].rep) return false;
  return t->dec[0].pat && t->dec[0].rep;
}

void tok_set_add_space_prefix(tokenizer *t, int on) {
  if (!t || !t->gguf_spm) return;
  if (spm_setup(t, on != 0)) t->gguf_spm = 1 + (on != 0);
}

wgllm_status tok_create(const char *type, const char *pre, size_t n_vocab, const char *const *tokens,
                        const size_t *token_lens, const float *scores, const int32_t *token_types, size_t n_merges,
                        const char *const *merges, int32_t bos, int32_t eos, int add_bos, int add_eos, tokenizer **out,
                        llm_err *err) {
  if (!out || !type || !tokens || !n_vocab || n_vocab > INT32_MAX || (n_merges && !merges)) {
    return llm_err_set(err, WGLLM_ERR_INVALID_ARG, "tok_create: missing type, tokens or merges");
  }
  *out = NULL;
  bool spm = strcmp(type, "llama") == 0, gpt2 = strcmp(type, "gpt2") == 0, g4 = strcmp(type, "gemma4") == 0;
  if (!spm && !gpt2 && !g4) {
    return llm_err_set(err, WGLLM_ERR_UNSUPPORTED,
                       "tok_create: tokenizer type \"%s\" is not supported (llama, gpt2, gemma4)", type);
  }
  if (spm && !scores) {
    return llm_err_set(err, WGLLM_ERR_INVALID_ARG,
                       "tok_create: a \"llama\" tokenizer needs scores (tokenizer.ggml.scores)");
  }
  if (g4 && !n_merges) { /* llama.cpp: "cannot find tokenizer merges in model file" */
    return llm_err_set(err, WGLLM_ERR_FORMAT,
                       "tok_create: a \"gemma4\" tokenizer needs merges (tokenizer.ggml.merges)");
  }
  if (g4) add_bos = 1; /* llama.cpp overrides add_bos_token false to true for Gemma 4 */
  const char *re = NULL;
  bool nfc = false, ignore_merges = false;
  if (gpt2) {
    const char *p = pre ? pre : "default";
    if (!strcmp(p, "default") || !strcmp(p, "gpt-2") || !strcmp(p, "gpt2") || !strcmp(p, "smollm") ||
        !strcmp(p, "olmo"))
      re = RE_GPT2;
    else if (!strcmp(p, "llama-bpe") || !strcmp(p, "llama3") || !strcmp(p, "llama-v3"))
      re = RE_LLAMA3, ignore_merges = true;
    else if (!strcmp(p, "qwen2") || !strcmp(p, "deepseek-r1-qwen") || !strcmp(p, "qwen"))
      re = RE_QWEN2, nfc = true;
    else if (!strcmp(p, "smaug-bpe")) /* Llama 3 fine-tunes (Smaug): Llama 3's regex, merges applied */
      re = RE_LLAMA3;
    else if (!strcmp(p, "tekken"))
      re = RE_TEKKEN, ignore_merges = true;
    else if (!strcmp(p, "gpt-4o"))
      re = RE_GPT4O;
    else {
      return llm_err_set(
          err, WGLLM_ERR_UNSUPPORTED,
          "tok_create: pre-tokenizer \"%s\" is not supported (default, gpt-2, llama-bpe, smaug-bpe, qwen2, "
          "tekken, gpt-4o)",
          p);
    }
  }
  tokenizer *t = tok_alloc();
  if (!t) return OOM("tokenizer");
  wgllm_status st = WGLLM_OK;
  t->model = spm ? TOK_MODEL_BPE_SCORE : TOK_MODEL_BPE_RANK;
  t->n_vocab = n_vocab;
  t->byte_fallback = spm || g4;
  t->ignore_merges = ignore_merges;
  t->piece_off = calloc(n_vocab, sizeof *t->piece_off);
  t->piece_len = calloc(n_vocab, sizeof *t->piece_len);
  t->attr = calloc(n_vocab, 1);
  if (spm) t->scores = malloc(n_vocab * sizeof *t->scores);
  if (!t->piece_off || !t->piece_len || !t->attr || (spm && !t->scores)) {
    st = OOM("vocabulary");
    goto fail;
  }
  for (size_t i = 0; i < n_vocab; i++) {
    if (!tokens[i]) {
      st = llm_err_set(err, WGLLM_ERR_INVALID_ARG, "tok_create: token %zu is NULL", i);
      goto fail;
    }
    size_t len = token_lens ? token_lens[i] : strlen(tokens[i]), bad;
    if (!tok_utf8_validate(tokens[i], len, &bad)) { /* the decoders walk the pieces as UTF-8 characters */
      st = llm_err_set(err, WGLLM_ERR_FORMAT, "tok_create: token %zu is not valid UTF-8 (byte %zu)", i, bad);
      goto fail;
    }
    int32_t ty = token_types ? token_types[i] : 1;
    uint8_t bv;
    if (!token_types && (spm || g4) && is_byte_token(tokens[i], len, &bv)) ty = 6;
    if (!token_types && (spm || g4) && len == 5 && !memcmp(tokens[i], "<unk>", 5)) ty = 2;
    uint32_t off = tok_arena_put(t, tokens[i], len);
    if (off == UINT32_MAX) {
      st = OOM("vocabulary");
      goto fail;
    }
    t->piece_off[i] = off;
    t->piece_len[i] = (uint32_t)len;
    t->attr[i] = TOK_ATTR_PRESENT;
    if (spm) t->scores[i] = scores[i];
    int32_t id = (int32_t)i;
    switch (ty) {
    case 2: /* unknown */
      if (t->unk_id < 0) t->unk_id = id;
      /* fallthrough */
    case 3: /* control */
      t->attr[i] |= TOK_ATTR_SPECIAL;
      if (len && !tok_add_added(t, tokens[i], len, id, true, false, false, false, false)) {
        st = OOM("added");
        goto fail;
      }
      break;
    case 4: /* user-defined: matched in the text, and (like Gemma's runs of U+2581) reachable by merging */
      if (len && !tok_add_added(t, tokens[i], len, id, false, false, false, false, false)) {
        st = OOM("added");
        goto fail;
      }
      if (tok_smap_put(&t->vocab, t->arena.p, off, (uint32_t)len, id, NULL) < 0) {
        st = OOM("vocabulary map");
        goto fail;
      }
      break;
    case 5: /* unused: never produced from text */
      t->attr[i] |= TOK_ATTR_SPECIAL;
      break;
    case 6: /* byte */
      if (is_byte_token(tokens[i], len, &bv)) t->byte_id[bv] = id;
      break;
    default: {
      int r = tok_smap_put(&t->vocab, t->arena.p, off, (uint32_t)len, id, NULL);
      if (r < 0) {
        st = OOM("vocabulary map");
        goto fail;
      }
      /* a duplicate piece keeps its first id (llama.cpp keeps the last; pieces are unique in practice) */
    }
    }
  }
  if (!tok_u64_reserve(&t->merges, n_merges)) {
    st = OOM("merges");
    goto fail;
  }
  for (size_t r = 0; r < n_merges; r++) {
    const char *m = merges[r];
    const char *sp = m ? strchr(m, ' ') : NULL;
    if (!sp || strchr(sp + 1, ' ')) {
      st =
          llm_err_set(err, WGLLM_ERR_FORMAT, "tok_create: merge %zu \"%s\" is not \"left right\"", r, m ? m : "(null)");
      goto fail;
    }
    size_t ll = (size_t)(sp - m), rl = strlen(sp + 1);
    int32_t a = tok_vocab_lookup(t, m, ll), b = tok_vocab_lookup(t, sp + 1, rl);
    char *cat = malloc(ll + rl + 1);
    if (!cat) {
      st = OOM("merges");
      goto fail;
    }
    memcpy(cat, m, ll);
    memcpy(cat + ll, sp + 1, rl);
    int32_t c = tok_vocab_lookup(t, cat, ll + rl);
    free(cat);
    if (a < 0 || b < 0 || c < 0) {
      st = llm_err_set(err, WGLLM_ERR_FORMAT, "tok_create: merge %zu \"%s\" uses a token outside the vocabulary", r, m);
      goto fail;
    }
    if (!tok_add_merge(t, a, b, (uint32_t)r, c)) {
      st = OOM("merges");
      goto fail;
    }
  }
  t->gguf_scan = spm || g4;
  if (spm) {
    t->gguf_spm = 2;
    if (!spm_setup(t, true)) {
      st = OOM("normalizer");
      goto fail;
    }
  } else if (g4) {
    /* spaces -> U+2581 (nothing prepended), newline runs apart from the rest; decoder U+2581 -> space,
       byte fallback, fuse */
    if (!spm_setup(t, false)) {
      st = OOM("normalizer");
      goto fail;
    }
    t->pre = calloc(1, sizeof *t->pre);
    if (!t->pre) {
      st = OOM("pipeline");
      goto fail;
    }
    t->pre[0].kind = TOK_PRE_SPLIT;
    t->pre[0].behavior = TOK_SPLIT_ISOLATED;
    t->pre[0].re = tok_compile_regex(RE_GEMMA4, strlen(RE_GEMMA4), false, err);
    if (!t->pre[0].re) {
      st = WGLLM_ERR_INTERNAL;
      goto fail;
    }
    t->n_pre = 1;
    t->newline_whole = true;
  } else {
    t->norm = calloc(1, sizeof *t->norm);
    t->pre = calloc(2, sizeof *t->pre);
    t->dec = calloc(1, sizeof *t->dec);
    if (!t->norm || !t->pre || !t->dec) {
      st = OOM("pipeline");
      goto fail;
    }
    if (nfc) t->norm[t->n_norm++] = (tok_norm){.kind = TOK_NORM_NFC};
    t->pre[0].kind = TOK_PRE_SPLIT;
    t->pre[0].behavior = TOK_SPLIT_ISOLATED;
    t->pre[0].re = tok_compile_regex(re, strlen(re), false, err);
    if (!t->pre[0].re) {
      st = WGLLM_ERR_INTERNAL;
      goto fail;
    }
    t->n_pre = 1;
    t->pre[t->n_pre++] = (tok_pre){.kind = TOK_PRE_BYTE_LEVEL};
    t->dec[t->n_dec++] = (tok_dec){.kind = TOK_DEC_BYTE_LEVEL};
  }
  t->bos = bos;
  t->eos = eos;
  if (add_bos && bos >= 0) {
    t->prefix = malloc(sizeof(int32_t));
    if (!t->prefix) {
      st = OOM("template");
      goto fail;
    }
    t->prefix[t->n_prefix++] = bos;
  }
  if (add_eos && eos >= 0) {
    t->suffix = malloc(sizeof(int32_t));
    if (!t->suffix) {
      st = OOM("template");
      goto fail;
    }
    t->suffix[t->n_suffix++] = eos;
  }
  st = tok_finish(t, "tok_create", err);
  if (st) goto fail;
  *out = t;
  return WGLLM_OK;
fail:
  tok_free(t);
  return st;
}

/* ---- accessors ---- */

size_t tok_vocab_size(const tokenizer *t) { return t ? t->n_vocab : 0; }
int32_t tok_bos(const tokenizer *t) { return t ? t->bos : -1; }
int32_t tok_eos(const tokenizer *t) { return t ? t->eos : -1; }
int tok_is_eog(const tokenizer *t, int32_t id) { return t && piece_ok(t, id) && (t->attr[id] & TOK_ATTR_EOG); }
int tok_is_special(const tokenizer *t, int32_t id) { return t && piece_ok(t, id) && (t->attr[id] & TOK_ATTR_SPECIAL); }

const char *tok_piece(const tokenizer *t, int32_t id, size_t *len) {
  if (!t || !piece_ok(t, id)) return NULL;
  if (len) *len = t->piece_len[id];
  return t->arena.p + t->piece_off[id];
}

int tok_same(const tokenizer *a, const tokenizer *b, char *why, size_t whylen) {
  size_t n = a->n_vocab < b->n_vocab ? a->n_vocab : b->n_vocab, d = a->n_vocab - n + b->n_vocab - n;
  if (a->model != b->model || a->gguf_spm != b->gguf_spm) {
    snprintf(why, whylen, "the tokenizers are of different kinds");
    return 0;
  }
  if (d > TOK_SAME_PAD) {
    snprintf(why, whylen, "the vocabularies hold %zu and %zu tokens (at most %d apart)", a->n_vocab, b->n_vocab,
             TOK_SAME_PAD);
    return 0;
  }
  if (a->bos != b->bos || a->eos != b->eos) {
    snprintf(why, whylen, "BOS is %d and %d, EOS %d and %d", a->bos, b->bos, a->eos, b->eos);
    return 0;
  }
  for (size_t i = 0; i < n; i++) {
    int32_t id = (int32_t)i;
    size_t la = 0, lb = 0;
    const char *pa = tok_piece(a, id, &la), *pb = tok_piece(b, id, &lb);
    if (!pa != !pb || la != lb || (la && memcmp(pa, pb, la)) || tok_is_special(a, id) != tok_is_special(b, id)) {
      snprintf(why, whylen, "token %d is \"%.*s\"%s in one and \"%.*s\"%s in the other", id, (int)(la < 40 ? la : 40),
               pa ? pa : "", tok_is_special(a, id) ? " (special)" : "", (int)(lb < 40 ? lb : 40), pb ? pb : "",
               tok_is_special(b, id) ? " (special)" : "");
      return 0;
    }
  }
  return 1;
}

int32_t tok_find(const tokenizer *t, const char *piece) {
  if (!t || !piece) return -1;
  size_t n = strlen(piece);
  int32_t k = tok_smap_get(&t->added_map, t->arena.p, piece, n);
  if (k >= 0) return t->added[k].id;
  int32_t id = tok_vocab_lookup(t, piece, n);
  if (id >= 0) return id;
  if (t->gguf_scan) /* control/byte pieces of a GGUF vocabulary are kept out of the merge map */
    for (size_t i = 0; i < t->n_vocab; i++)
      if (t->piece_len[i] == n && memcmp(t->arena.p + t->piece_off[i], piece, n) == 0) return (int32_t)i;
  return -1;
}
