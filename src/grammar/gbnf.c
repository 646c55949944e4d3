/* GBNF text -> compiled grammar (grammar.h describes the language). A recursive-descent parser writes each rule's
   alternatives as runs of elements (a character class per character, a rule reference per name), a group and each
   repetition becoming rules of their own (x* as R ::= x R | "", x{0,n} as nested optional rules), classes
   normalized to sorted ranges and shared; then undefined rules, the missing root and left recursion are refused
   and the rules are flattened into the element array the matchers walk. */
#include "grammar_int.h"
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define GBNF_MAX_NESTING 1000 /* groups in groups (the parser recurses into each) */

bool gr_u32_reserve(gr_u32 *a, size_t k) {
  if (a->n + k <= a->cap) return true;
  size_t cap = a->cap ? a->cap : 16;
  while (cap < a->n + k)
    cap *= 2;
  uint32_t *v = realloc(a->v, cap * sizeof *v);
  if (!v) return false;
  a->v = v;
  a->cap = cap;
  return true;
}

bool gr_u32_push(gr_u32 *a, uint32_t x) {
  if (a->n == a->cap && !gr_u32_reserve(a, 1)) return false;
  a->v[a->n++] = x;
  return true;
}

typedef struct p_rule {
  char *name;
  gr_u32 body; /* the alternatives, each closed by GE_END */
  int defined, generated;
  size_t def_at, use_at; /* text offsets: where defined (or, generated, the group / repetition), first used */
  int used;
  uint32_t origin;              /* the user rule a generated one was made in */
  uint32_t chain_k, chain_next; /* a link of a repetition's optional chain (grammar_int.h) */
  const char *what;             /* a generated rule's construct: "group", "repetition" */
} p_rule;

typedef struct gp {
  const char *s;
  size_t n, i;
  llm_err *err;
  p_rule *rules;
  uint32_t n_rules, cap_rules, n_gen;
  size_t n_elems;
  gr_u32 ranges;  /* pairs */
  gr_u32 cls_off; /* class k's ranges start at pair cls_off[k]; cls_off[n] the end */
  uint32_t *ctab; /* class dedupe: open addressing, class id + 1 */
  uint32_t ccap;  /* power of 2 */
  uint32_t cur;   /* the user rule being defined */
  uint32_t any;   /* class id of '.' (UINT32_MAX until made) */
  gr_u32 scratch; /* a class's ranges while parsed */
  int failed;
  wgllm_status st; /* the failure's status */
  int nesting;     /* groups open */
} gp;

static void line_col(const gp *p, size_t at, unsigned *line, unsigned *col) {
  unsigned l = 1, c = 1;
  for (size_t k = 0; k < at && k < p->n; k++) {
    if (p->s[k] == '\n')
      l++, c = 1;
    else if (((unsigned char)p->s[k] & 0xC0) != 0x80)
      c++;
  }
  *line = l;
  *col = c;
}

static int perr(gp *p, size_t at, const char *fmt, ...) LLM_ERR_PRINTF(3, 4);
static int perr(gp *p, size_t at, const char *fmt, ...) {
  if (p->failed) return -1;
  char msg[LLM_ERR_MSG_LEN];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  unsigned l, c;
  line_col(p, at, &l, &c);
  llm_err_set(p->err, WGLLM_ERR_INVALID_ARG, "gbnf %u:%u: %s", l, c, msg);
  p->failed = 1;
  p->st = WGLLM_ERR_INVALID_ARG;
  return -1;
}

static int oom(gp *p) {
  if (!p->failed) llm_err_set(p->err, WGLLM_ERR_OUT_OF_MEMORY, "gbnf: out of memory compiling the grammar");
  if (!p->failed) p->st = WGLLM_ERR_OUT_OF_MEMORY;
  p->failed = 1;
  return -1;
}

/* what is at i, for messages */
static const char *found(const gp *p, size_t i, char *buf, size_t cap) {
  if (i >= p->n) return "the end of the text";
  unsigned char c = (unsigned char)p->s[i];
  if (c == '\n' || c == '\r') return "a newline";
  if (c >= 0x20 && c < 0x7F)
    snprintf(buf, cap, "'%c'", c);
  else
    snprintf(buf, cap, "byte 0x%02X", c);
  return buf;
}

static int is_word(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '-';
}

/* skips spaces, tabs, comments and, when nl, newlines */
static void ws(gp *p, int nl) {
  while (p->i < p->n) {
    char c = p->s[p->i];
    if (c == ' ' || c == '\t' || (nl && (c == '\n' || c == '\r')))
      p->i++;
    else if (c == '#')
      while (p->i < p->n && p->s[p->i] != '\n' && p->s[p->i] != '\r')
        p->i++;
    else
      break;
  }
}

/* one UTF-8 character at s[i..n): its length (0: invalid) and *cp */
static size_t utf8_at(const char *s, size_t i, size_t n, uint32_t *cp) {
  unsigned char b = (unsigned char)s[i];
  if (b < 0x80) return *cp = b, 1;
  size_t k;
  uint32_t v, lo;
  if (b >= 0xC2 && b <= 0xDF)
    k = 2, v = b & 0x1F, lo = 0x80;
  else if (b >= 0xE0 && b <= 0xEF)
    k = 3, v = b & 0x0F, lo = 0x800;
  else if (b >= 0xF0 && b <= 0xF4)
    k = 4, v = b & 0x07, lo = 0x10000;
  else
    return 0;
  if (i + k > n) return 0;
  for (size_t j = 1; j < k; j++) {
    unsigned char c = (unsigned char)s[i + j];
    if ((c & 0xC0) != 0x80) return 0;
    v = v << 6 | (c & 0x3F);
  }
  if (v < lo || v > GRAMMAR_MAX_CP || (v >= 0xD800 && v <= 0xDFFF)) return 0;
  *cp = v;
  return k;
}

static int hexval(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

/* a character of a string literal or a class (an escape or a UTF-8 character) into *cp; in: "string" or "class" */
static int parse_char(gp *p, uint32_t *cp, const char *in) {
  size_t at = p->i;
  if (p->s[p->i] != '\\') {
    size_t k = utf8_at(p->s, p->i, p->n, cp);
    if (!k) return perr(p, at, "invalid UTF-8 in a %s", in);
    p->i += k;
    return 0;
  }
  if (p->i + 1 >= p->n) return perr(p, at, "'\\' at the end of the text (expected an escape)");
  char e = p->s[p->i + 1];
  p->i += 2;
  int digits = e == 'x' ? 2 : e == 'u' ? 4 : e == 'U' ? 8 : 0;
  if (digits) {
    uint32_t v = 0;
    for (int k = 0; k < digits; k++) {
      int h = p->i < p->n ? hexval(p->s[p->i]) : -1;
      if (h < 0) return perr(p, at, "expected %d hex digits after '\\%c'", digits, e);
      v = v << 4 | (uint32_t)h;
      p->i++;
    }
    if (v > GRAMMAR_MAX_CP) return perr(p, at, "'\\%c' escape 0x%X is beyond U+10FFFF", e, (unsigned)v);
    *cp = v;
    return 0;
  }
  switch (e) {
  case 'n':
    *cp = '\n';
    return 0;
  case 't':
    *cp = '\t';
    return 0;
  case 'r':
    *cp = '\r';
    return 0;
  case '\\':
  case '"':
  case '[':
  case ']':
  case '-':
  case '^':
  case '/':
    *cp = (uint32_t)e;
    return 0;
  default:
    if (e > 0x20 && e < 0x7F)
      return perr(
          p, at,
          "unknown escape '\\%c' in a %s (expected \\n \\t \\r \\\\ \\\" \\[ \\] \\- \\xHH \\uHHHH or \\UHHHHHHHH)", e,
          in);
    return perr(p, at, "unknown escape (byte 0x%02X after '\\') in a %s", (unsigned char)e, in);
  }
}

static uint32_t hash_ranges(const uint32_t *r, size_t n2) {
  uint32_t h = 2166136261u;
  for (size_t k = 0; k < n2; k++)
    h = (h ^ r[k]) * 16777619u;
  return h ^ (uint32_t)n2;
}

static int cmp_range(const void *a, const void *b) {
  const uint32_t *x = a, *y = b;
  return x[0] < y[0] ? -1 : x[0] > y[0] ? 1 : 0;
}

/* the class of the ranges in p->scratch (pairs, any order; neg: their complement) -> its id, shared */
static int make_class(gp *p, int neg, uint32_t *id) {
  uint32_t *r = p->scratch.v;
  size_t n = p->scratch.n / 2, m = 0;
  if (n) qsort(r, n, 2 * sizeof *r, cmp_range);
  for (size_t k = 0; k < n; k++) { /* merge overlapping and adjacent */
    if (m && r[2 * k] <= r[2 * (m - 1) + 1] + 1) {
      if (r[2 * k + 1] > r[2 * (m - 1) + 1]) r[2 * (m - 1) + 1] = r[2 * k + 1];
    } else {
      r[2 * m] = r[2 * k], r[2 * m + 1] = r[2 * k + 1];
      m++;
    }
  }
  p->scratch.n = 2 * m;
  if (neg) { /* complement over [0, U+10FFFF] */
    gr_u32 c = {0};
    uint32_t next = 0;
    for (size_t k = 0; k < m; k++) {
      if (r[2 * k] > next && (!gr_u32_push(&c, next) || !gr_u32_push(&c, r[2 * k] - 1))) return free(c.v), oom(p);
      next = r[2 * k + 1] + 1;
    }
    if (next <= GRAMMAR_MAX_CP && (!gr_u32_push(&c, next) || !gr_u32_push(&c, GRAMMAR_MAX_CP)))
      return free(c.v), oom(p);
    free(p->scratch.v);
    p->scratch = c;
    r = c.v;
    m = c.n / 2;
  }
  uint32_t h = hash_ranges(r, 2 * m);
  uint32_t n_cls = (uint32_t)(p->cls_off.n - 1);
  if (2 * (n_cls + 1) > p->ccap) { /* grow the table */
    uint32_t cap = p->ccap ? 2 * p->ccap : 256;
    uint32_t *t = calloc(cap, sizeof *t);
    if (!t) return oom(p);
    for (uint32_t k = 0; k < n_cls; k++) {
      uint32_t o = p->cls_off.v[k], e = p->cls_off.v[k + 1];
      uint32_t s = hash_ranges(p->ranges.v + 2 * o, 2 * (e - o)) & (cap - 1);
      while (t[s])
        s = (s + 1) & (cap - 1);
      t[s] = k + 1;
    }
    free(p->ctab);
    p->ctab = t;
    p->ccap = cap;
  }
  uint32_t s = h & (p->ccap - 1);
  for (; p->ctab[s]; s = (s + 1) & (p->ccap - 1)) {
    uint32_t k = p->ctab[s] - 1, o = p->cls_off.v[k], e = p->cls_off.v[k + 1];
    if (e - o == m && (!m || !memcmp(p->ranges.v + 2 * o, r, 2 * m * sizeof *r))) return *id = k, 0;
  }
  if (!gr_u32_reserve(&p->ranges, 2 * m) || !gr_u32_push(&p->cls_off, 0)) return oom(p);
  if (m) memcpy(p->ranges.v + p->ranges.n, r, 2 * m * sizeof *r); /* m 0: an empty class, "[]" */
  p->ranges.n += 2 * m;
  p->cls_off.v[n_cls + 1] = (uint32_t)(p->ranges.n / 2);
  p->ctab[s] = n_cls + 1;
  *id = n_cls;
  return 0;
}

static int single_class(gp *p, uint32_t cp, uint32_t *id) {
  p->scratch.n = 0;
  if (!gr_u32_push(&p->scratch, cp) || !gr_u32_push(&p->scratch, cp)) return oom(p);
  return make_class(p, 0, id);
}

static int new_rule(gp *p, const char *name, size_t len, uint32_t *id) {
  if (p->n_rules == p->cap_rules) {
    uint32_t cap = p->cap_rules ? 2 * p->cap_rules : 64;
    p_rule *r = realloc(p->rules, cap * sizeof *r);
    if (!r) return oom(p);
    p->rules = r;
    p->cap_rules = cap;
  }
  p_rule *r = &p->rules[p->n_rules];
  memset(r, 0, sizeof *r);
  if (!(r->name = malloc(len + 1))) return oom(p);
  memcpy(r->name, name, len);
  r->name[len] = 0;
  r->origin = p->n_rules;
  *id = p->n_rules++;
  return 0;
}

/* a rule of a group or repetition, named after the user rule being defined */
static int new_generated(gp *p, const char *what, size_t at, uint32_t *id) {
  char name[300];
  int k = snprintf(name, sizeof name, "%.256s_%u", p->rules[p->cur].name, ++p->n_gen);
  if (new_rule(p, name, (size_t)k, id)) return -1;
  p_rule *r = &p->rules[*id];
  r->generated = r->defined = 1;
  r->origin = p->cur;
  r->what = what;
  r->def_at = at;
  return 0;
}

/* the user rule of that name (made on first mention) */
static int user_rule(gp *p, const char *name, size_t len, uint32_t *id) {
  for (uint32_t k = 0; k < p->n_rules; k++)
    if (!p->rules[k].generated && strlen(p->rules[k].name) == len && !memcmp(p->rules[k].name, name, len))
      return *id = k, 0;
  return new_rule(p, name, len, id);
}

static int emit(gp *p, uint32_t rule, uint32_t e) {
  if (++p->n_elems > GRAMMAR_MAX_ELEMENTS)
    return perr(p, p->i, "the grammar is too large: over %u elements once repetitions are expanded",
                (unsigned)GRAMMAR_MAX_ELEMENTS);
  return gr_u32_push(&p->rules[rule].body, e) ? 0 : oom(p);
}

/* the item at body[start..] repeated mn to mx times (UINT32_MAX: no bound) */
static int repeat(gp *p, uint32_t rule, size_t start, uint32_t mn, uint32_t mx, size_t at) {
  size_t k = p->rules[rule].body.n - start;
  uint64_t cost = (uint64_t)mn + (mx == UINT32_MAX ? 4 : 4ull * (mx - mn)) + k;
  if (p->n_elems + cost > GRAMMAR_MAX_ELEMENTS)
    return perr(p, at, "the grammar is too large: over %u elements once repetitions are expanded",
                (unsigned)GRAMMAR_MAX_ELEMENTS);
  uint32_t item;
  if (k == 1)
    item = p->rules[rule].body.v[start];
  else { /* a literal of several characters: the whole literal repeats */
    uint32_t sub;
    if (new_generated(p, "repetition", at, &sub)) return -1;
    for (size_t j = 0; j < k; j++)
      if (emit(p, sub, p->rules[rule].body.v[start + j])) return -1;
    if (emit(p, sub, GE_END)) return -1;
    item = GE_MAKE(GE_REF, sub);
  }
  p->n_elems -= k;
  p->rules[rule].body.n = start;
  for (uint32_t j = 0; j < mn; j++)
    if (emit(p, rule, item)) return -1;
  if (mx == UINT32_MAX) { /* R ::= item R | "" */
    uint32_t r;
    if (new_generated(p, "repetition", at, &r) || emit(p, r, item) || emit(p, r, GE_MAKE(GE_REF, r)) ||
        emit(p, r, GE_END) || emit(p, r, GE_END))
      return -1;
    return emit(p, rule, GE_MAKE(GE_REF, r));
  }
  uint32_t prev = UINT32_MAX; /* O_j ::= item O_{j-1} | "" */
  for (uint32_t j = mn; j < mx; j++) {
    uint32_t o;
    if (new_generated(p, "repetition", at, &o) || emit(p, o, item) ||
        (prev != UINT32_MAX && emit(p, o, GE_MAKE(GE_REF, prev))) || emit(p, o, GE_END) || emit(p, o, GE_END))
      return -1;
    p->rules[o].chain_k = j - mn + 1;
    p->rules[o].chain_next = prev;
    prev = o;
  }
  return prev == UINT32_MAX ? 0 : emit(p, rule, GE_MAKE(GE_REF, prev));
}

static int parse_uint(gp *p, uint32_t *v) {
  size_t at = p->i;
  uint64_t x = 0;
  if (p->i >= p->n || p->s[p->i] < '0' || p->s[p->i] > '9') {
    char buf[16];
    return perr(p, at, "expected a number in the repetition { }, found %s", found(p, p->i, buf, sizeof buf));
  }
  while (p->i < p->n && p->s[p->i] >= '0' && p->s[p->i] <= '9') {
    x = x * 10 + (uint64_t)(p->s[p->i++] - '0');
    if (x > GRAMMAR_MAX_REPEAT)
      return perr(p, at, "repetition count over %u (the largest allowed)", (unsigned)GRAMMAR_MAX_REPEAT);
  }
  *v = (uint32_t)x;
  return 0;
}

static int parse_alternates(gp *p, uint32_t rule, int nested);

static int parse_sequence(gp *p, uint32_t rule, int nested) {
  size_t last = SIZE_MAX; /* where the last item's elements start in the rule's body */
  char buf[16];
  while (p->i < p->n) {
    char c = p->s[p->i];
    size_t at = p->i;
    if (c == '"') {
      last = p->rules[rule].body.n;
      p->i++;
      while (p->i < p->n && p->s[p->i] != '"') {
        if (p->s[p->i] == '\n' || p->s[p->i] == '\r')
          return perr(p, p->i, "newline inside the string that starts at this line (expected '\"')");
        uint32_t cp, id;
        if (parse_char(p, &cp, "string") || single_class(p, cp, &id) || emit(p, rule, GE_MAKE(GE_CHAR, id))) return -1;
      }
      if (p->i >= p->n) return perr(p, at, "unterminated string (expected a closing '\"')");
      p->i++;
    } else if (c == '[') {
      last = p->rules[rule].body.n;
      p->i++;
      int neg = p->i < p->n && p->s[p->i] == '^';
      if (neg) p->i++;
      p->scratch.n = 0;
      while (p->i < p->n && p->s[p->i] != ']') {
        if (p->s[p->i] == '\n' || p->s[p->i] == '\r')
          return perr(p, p->i, "newline inside the character class (expected ']')");
        uint32_t a, b;
        size_t at_a = p->i;
        if (parse_char(p, &a, "class")) return -1;
        b = a;
        if (p->i + 1 < p->n && p->s[p->i] == '-' && p->s[p->i + 1] != ']') {
          p->i++;
          if (p->s[p->i] == '\n' || p->s[p->i] == '\r')
            return perr(p, p->i, "newline inside the character class (expected ']')");
          if (parse_char(p, &b, "class")) return -1;
          if (b < a) return perr(p, at_a, "character range U+%04X-U+%04X ends before it starts", a, b);
        }
        if (!gr_u32_push(&p->scratch, a) || !gr_u32_push(&p->scratch, b)) return oom(p);
      }
      if (p->i >= p->n) return perr(p, at, "unterminated character class (expected ']')");
      p->i++;
      uint32_t id;
      if (make_class(p, neg, &id) || emit(p, rule, GE_MAKE(GE_CHAR, id))) return -1;
    } else if (c == '.') {
      last = p->rules[rule].body.n;
      p->i++;
      if (p->any == UINT32_MAX) {
        p->scratch.n = 0;
        if (!gr_u32_push(&p->scratch, 0) || !gr_u32_push(&p->scratch, GRAMMAR_MAX_CP)) return oom(p);
        if (make_class(p, 0, &p->any)) return -1;
      }
      if (emit(p, rule, GE_MAKE(GE_CHAR, p->any))) return -1;
    } else if (is_word(c)) {
      last = p->rules[rule].body.n;
      size_t e = p->i;
      while (e < p->n && is_word(p->s[e]))
        e++;
      uint32_t id;
      if (user_rule(p, p->s + p->i, e - p->i, &id)) return -1;
      if (!p->rules[id].used) p->rules[id].used = 1, p->rules[id].use_at = at;
      p->i = e;
      if (emit(p, rule, GE_MAKE(GE_REF, id))) return -1;
    } else if (c == '(') {
      last = p->rules[rule].body.n;
      if (++p->nesting > GBNF_MAX_NESTING) return perr(p, at, "groups nested over %d deep", GBNF_MAX_NESTING);
      p->i++;
      ws(p, 1);
      uint32_t sub;
      if (new_generated(p, "group", at, &sub) || parse_alternates(p, sub, 1)) return -1;
      if (p->i >= p->n || p->s[p->i] != ')') {
        unsigned l, col;
        line_col(p, at, &l, &col);
        return perr(p, p->i, "expected ')' to close the group opened at %u:%u, found %s", l, col,
                    found(p, p->i, buf, sizeof buf));
      }
      p->i++;
      p->nesting--;
      if (emit(p, rule, GE_MAKE(GE_REF, sub))) return -1;
    } else if (c == '*' || c == '+' || c == '?' || c == '{') {
      if (last == SIZE_MAX) return perr(p, at, "'%c' has nothing before it to repeat (expected an item first)", c);
      uint32_t mn = c == '+' ? 1 : 0, mx = c == '?' ? 1 : UINT32_MAX;
      p->i++;
      if (c == '{') {
        ws(p, nested);
        if (parse_uint(p, &mn)) return -1;
        ws(p, nested);
        mx = mn;
        if (p->i < p->n && p->s[p->i] == ',') {
          p->i++;
          ws(p, nested);
          mx = UINT32_MAX;
          if (p->i < p->n && p->s[p->i] >= '0' && p->s[p->i] <= '9') {
            if (parse_uint(p, &mx)) return -1;
            ws(p, nested);
          }
        }
        if (p->i >= p->n || p->s[p->i] != '}')
          return perr(p, p->i, "expected '}' or ',' to close the repetition opened at this item, found %s",
                      found(p, p->i, buf, sizeof buf));
        p->i++;
        if (mx < mn) return perr(p, at, "repetition {%u,%u}: the maximum is below the minimum", mn, mx);
      }
      if (repeat(p, rule, last, mn, mx, at)) return -1;
    } else
      break;
    ws(p, nested);
  }
  return 0;
}

static int parse_alternates(gp *p, uint32_t rule, int nested) {
  if (parse_sequence(p, rule, nested) || emit(p, rule, GE_END)) return -1;
  while (p->i < p->n && p->s[p->i] == '|') {
    p->i++;
    ws(p, 1);
    if (parse_sequence(p, rule, nested) || emit(p, rule, GE_END)) return -1;
  }
  return 0;
}

static int parse_rule(gp *p) {
  char buf[16];
  size_t at = p->i, e = p->i;
  while (e < p->n && is_word(p->s[e]))
    e++;
  if (e == at)
    return perr(p, at, "expected a rule name (letters, digits, '-') to start a rule, found %s",
                found(p, at, buf, sizeof buf));
  uint32_t id;
  if (user_rule(p, p->s + at, e - at, &id)) return -1;
  p->i = e;
  ws(p, 0);
  if (p->i + 3 > p->n || memcmp(p->s + p->i, "::=", 3))
    return perr(p, p->i, "expected '::=' after the rule name '%s', found %s", p->rules[id].name,
                found(p, p->i, buf, sizeof buf));
  if (p->rules[id].defined) {
    unsigned l, c;
    line_col(p, p->rules[id].def_at, &l, &c);
    return perr(p, at, "rule '%s' is defined twice (first at %u:%u)", p->rules[id].name, l, c);
  }
  p->rules[id].defined = 1;
  p->rules[id].def_at = at;
  p->cur = id;
  p->i += 3;
  ws(p, 1);
  if (parse_alternates(p, id, 0)) return -1;
  for (;;) { /* a line that starts with '|' continues the rule */
    size_t save = p->i;
    ws(p, 1);
    if (p->i < p->n && p->s[p->i] == '|') {
      p->i++;
      ws(p, 1);
      if (parse_sequence(p, id, 0) || emit(p, id, GE_END)) return -1;
      while (p->i < p->n && p->s[p->i] == '|') {
        p->i++;
        ws(p, 1);
        if (parse_sequence(p, id, 0) || emit(p, id, GE_END)) return -1;
      }
      continue;
    }
    p->i = save;
    break;
  }
  if (p->i < p->n && p->s[p->i] != '\n' && p->s[p->i] != '\r')
    return perr(p, p->i,
                "expected an item (a \"string\", a [class], a rule name, '.' or '('), a repetition, '|' or the end "
                "of the line, found %s",
                found(p, p->i, buf, sizeof buf));
  ws(p, 1);
  return 0;
}

/* a rule for messages: 'name', or the construct a generated one came from */
static void rule_label(const gp *p, uint32_t r, char *buf, size_t cap) {
  const p_rule *x = &p->rules[r];
  if (!x->generated) {
    snprintf(buf, cap, "'%s'", x->name);
    return;
  }
  unsigned l, c;
  line_col(p, x->def_at, &l, &c);
  snprintf(buf, cap, "the %s at %u:%u in rule '%s'", x->what, l, c, p->rules[x->origin].name);
}

/* refuses a rule that can reach itself before matching a character */
static int check_left_recursion(gp *p) {
  uint32_t n = p->n_rules;
  uint8_t *nullable = calloc(n, 1), *color = calloc(n, 1);
  uint32_t *eoff = calloc(n + 1, sizeof *eoff);
  uint32_t *stack = malloc(n * sizeof *stack), *iter = malloc(n * sizeof *iter);
  gr_u32 edges = {0};
  int rc = 0;
  if (!nullable || !color || !eoff || !stack || !iter) {
    rc = oom(p);
    goto done;
  }
  for (int changed = 1; changed;) {
    changed = 0;
    for (uint32_t r = 0; r < n; r++) {
      if (nullable[r]) continue;
      const gr_u32 *b = &p->rules[r].body;
      int ok = 1; /* the current alternative so far */
      for (size_t k = 0; k < b->n && !nullable[r]; k++) {
        uint32_t e = b->v[k];
        if (GE_KIND(e) == GE_END) {
          if (ok) nullable[r] = 1, changed = 1;
          ok = 1;
        } else if (GE_KIND(e) == GE_CHAR || !nullable[GE_VAL(e)])
          ok = 0;
      }
    }
  }
  for (uint32_t r = 0; r < n; r++) { /* edges r -> s: s at a position r reaches without a character */
    eoff[r] = (uint32_t)edges.n;
    const gr_u32 *b = &p->rules[r].body;
    int live = 1;
    for (size_t k = 0; k < b->n; k++) {
      uint32_t e = b->v[k];
      if (GE_KIND(e) == GE_END)
        live = 1;
      else if (!live)
        continue;
      else if (GE_KIND(e) == GE_CHAR)
        live = 0;
      else {
        if (!gr_u32_push(&edges, GE_VAL(e))) {
          rc = oom(p);
          goto done;
        }
        if (!nullable[GE_VAL(e)]) live = 0;
      }
    }
  }
  eoff[n] = (uint32_t)edges.n;
  for (uint32_t s0 = 0; s0 < n && !rc; s0++) {
    if (color[s0]) continue;
    uint32_t sp = 0;
    stack[sp] = s0, iter[sp] = eoff[s0], color[s0] = 1, sp++;
    while (sp) {
      uint32_t r = stack[sp - 1];
      if (iter[sp - 1] == eoff[r + 1]) {
        color[r] = 2;
        sp--;
        continue;
      }
      uint32_t s = edges.v[iter[sp - 1]++];
      if (color[s] == 2) continue;
      if (color[s] == 0) {
        color[s] = 1, stack[sp] = s, iter[sp] = eoff[s], sp++;
        continue;
      }
      /* a cycle: stack[j..sp) with stack[j] == s; name it from a user rule */
      uint32_t j = 0;
      while (stack[j] != s)
        j++;
      uint32_t len = sp - j, first = 0;
      for (uint32_t q = 0; q < len; q++)
        if (!p->rules[stack[j + q]].generated) {
          first = q;
          break;
        }
      char path[600] = "", lab[300];
      size_t pl = 0;
      for (uint32_t q = 0; q <= len && pl < sizeof path - 1; q++) {
        rule_label(p, stack[j + (first + q) % len], lab, sizeof lab);
        pl += (size_t)snprintf(path + pl, sizeof path - pl, "%s%s", q ? " -> " : "", lab);
      }
      uint32_t head = stack[j + first];
      rule_label(p, head, lab, sizeof lab);
      rc = perr(p, p->rules[head].def_at,
                "left recursion: rule %s can reach itself before matching a character (%s), which would loop "
                "forever",
                lab, path);
      break;
    }
  }
done:
  free(nullable), free(color), free(eoff), free(stack), free(iter), free(edges.v);
  return rc;
}

void grammar_free(grammar *g) {
  if (!g) return;
  for (uint32_t r = 0; g->names && r < g->n_rules; r++)
    free(g->names[r]);
  free(g->names), free(g->elems), free(g->alt_off), free(g->alts), free(g->classes), free(g->ranges);
  free(g->chain_k), free(g->chain_next), free(g->tail_min);
  free(g);
}

uint32_t grammar_n_rules(const grammar *g) { return g ? g->n_rules : 0; }

static uint32_t utf8_len(uint32_t cp) { return cp < 0x80 ? 1 : cp < 0x800 ? 2 : cp < 0x10000 ? 3 : 4; }

/* g->tail_min: each rule's shortest sentence to a fixed point (a rule starts GR_FAR; a pass over every alternative
   from its end back lowers it; at most n_rules + 1 passes, as each settles one more rule), then the positions */
static int tail_min(grammar *g) {
  uint32_t *rmin = malloc((g->n_rules + 1) * sizeof *rmin);
  g->tail_min = malloc((g->n_elems + 1) * sizeof *g->tail_min);
  if (!rmin || !g->tail_min) {
    free(rmin);
    return -1;
  }
  for (uint32_t r = 0; r < g->n_rules; r++)
    rmin[r] = GR_FAR;
  for (int changed = 1; changed;) {
    changed = 0;
    for (uint32_t r = 0; r < g->n_rules; r++)
      for (uint32_t a = g->alt_off[r]; a < g->alt_off[r + 1]; a++) {
        uint32_t end = g->alts[a];
        while (GE_KIND(g->elems[end]) != GE_END)
          end++;
        uint32_t t = 0;
        g->tail_min[end] = 0;
        for (uint32_t q = end; q-- > g->alts[a];) {
          uint32_t e = g->elems[q],
                   m = GE_KIND(e) == GE_CHAR
                           ? utf8_len(g->classes[GE_VAL(e)].n ? g->ranges[2 * g->classes[GE_VAL(e)].off] : 0)
                           : rmin[GE_VAL(e)];
          t = t + m < GR_FAR ? t + m : GR_FAR;
          g->tail_min[q] = t;
        }
        if (t < rmin[r]) rmin[r] = t, changed = 1;
      }
  }
  free(rmin);
  return 0;
}

static int build(gp *p, grammar **out) {
  grammar *g = calloc(1, sizeof *g);
  if (!g) return oom(p);
  uint32_t n_alts = 0;
  for (uint32_t r = 0; r < p->n_rules; r++)
    for (size_t k = 0; k < p->rules[r].body.n; k++)
      n_alts += GE_KIND(p->rules[r].body.v[k]) == GE_END;
  g->n_rules = p->n_rules;
  g->n_elems = (uint32_t)p->n_elems;
  g->n_classes = (uint32_t)(p->cls_off.n - 1);
  g->elems = malloc((p->n_elems + 1) * sizeof *g->elems);
  g->alt_off = malloc((p->n_rules + 1) * sizeof *g->alt_off);
  g->alts = malloc((n_alts + 1) * sizeof *g->alts);
  g->names = calloc(p->n_rules, sizeof *g->names);
  g->classes = calloc(g->n_classes + 1, sizeof *g->classes);
  g->ranges = malloc((p->ranges.n + 1) * sizeof *g->ranges);
  g->chain_k = malloc(p->n_rules * sizeof *g->chain_k);
  g->chain_next = malloc(p->n_rules * sizeof *g->chain_next);
  if (!g->elems || !g->alt_off || !g->alts || !g->names || !g->classes || !g->ranges || !g->chain_k || !g->chain_next) {
    grammar_free(g);
    return oom(p);
  }
  uint32_t pos = 0, a = 0;
  for (uint32_t r = 0; r < p->n_rules; r++) {
    g->alt_off[r] = a;
    const gr_u32 *b = &p->rules[r].body;
    int start = 1;
    for (size_t k = 0; k < b->n; k++) {
      if (start) g->alts[a++] = pos, start = 0;
      g->elems[pos++] = b->v[k];
      if (GE_KIND(b->v[k]) == GE_END) start = 1;
    }
    g->names[r] = p->rules[r].name;
    p->rules[r].name = NULL;
    g->chain_k[r] = p->rules[r].chain_k;
    g->chain_next[r] = p->rules[r].chain_next;
  }
  g->alt_off[p->n_rules] = a;
  if (p->ranges.n) memcpy(g->ranges, p->ranges.v, p->ranges.n * sizeof *g->ranges);
  for (uint32_t k = 0; k < g->n_classes; k++) {
    gr_class *c = &g->classes[k];
    c->off = p->cls_off.v[k];
    c->n = p->cls_off.v[k + 1] - c->off;
    for (uint32_t q = 0; q < c->n; q++)
      for (uint32_t x = g->ranges[2 * (c->off + q)]; x <= g->ranges[2 * (c->off + q) + 1] && x < 128; x++)
        c->ascii[x >> 5] |= 1u << (x & 31);
  }
  if (tail_min(g)) {
    grammar_free(g);
    return oom(p);
  }
  *out = g;
  return 0;
}

wgllm_status grammar_from_gbnf(const char *text, size_t len, grammar **out, llm_err *err) {
  *out = NULL;
  if (!text && len) return llm_err_set(err, WGLLM_ERR_INVALID_ARG, "gbnf: no text");
  gp p = {.s = text, .n = len, .err = err, .any = UINT32_MAX};
  if (!gr_u32_push(&p.cls_off, 0)) return oom(&p), p.st;
  ws(&p, 1);
  while (p.i < p.n && !p.failed)
    parse_rule(&p);
  uint32_t root = UINT32_MAX;
  for (uint32_t r = 0; r < p.n_rules && !p.failed; r++) {
    if (!p.rules[r].defined) {
      perr(&p, p.rules[r].use_at, "undefined rule '%s'", p.rules[r].name);
      break;
    }
    if (!p.rules[r].generated && !strcmp(p.rules[r].name, "root")) root = r;
  }
  if (!p.failed && root == UINT32_MAX) {
    llm_err_set(err, WGLLM_ERR_INVALID_ARG, "gbnf: no rule named 'root' (the rule of the whole text)");
    p.failed = 1;
    p.st = WGLLM_ERR_INVALID_ARG;
  }
  if (!p.failed) check_left_recursion(&p);
  grammar *g = NULL;
  if (!p.failed && !build(&p, &g)) g->root = root;
  for (uint32_t r = 0; r < p.n_rules; r++)
    free(p.rules[r].name), free(p.rules[r].body.v);
  free(p.rules), free(p.ranges.v), free(p.cls_off.v), free(p.ctab), free(p.scratch.v);
  if (!g) return p.st ? p.st : WGLLM_ERR_INTERNAL;
  *out = g;
  return WGLLM_OK;
}
