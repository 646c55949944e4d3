/* The builtins of the Jinja subset (see jinja.h): filters (Jinja 3.1's, with transformers' tojson), tests,
   attribute and item lookup as Jinja's sandbox does it (a dict's methods first for x.name, its items first for
   x['name']), Python's str and dict methods, the loop object, and the globals range, namespace, dict,
   raise_exception and strftime_now. What Jinja or Python has and this file does not is an error naming it. */
#include "jinja_internal.h"
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---------- tables ---------- */
enum {
  F_ABS,
  F_CAPITALIZE,
  F_COUNT,
  F_D,
  F_DEFAULT,
  F_DICTSORT,
  F_E,
  F_ESCAPE,
  F_FIRST,
  F_FLOAT,
  F_INDENT,
  F_INT,
  F_ITEMS,
  F_JOIN,
  F_LAST,
  F_LENGTH,
  F_LIST,
  F_LOWER,
  F_MAP,
  F_MAX,
  F_MIN,
  F_REJECT,
  F_REJECTATTR,
  F_REPLACE,
  F_REVERSE,
  F_ROUND,
  F_SAFE,
  F_SELECT,
  F_SELECTATTR,
  F_SORT,
  F_STRING,
  F_SUM,
  F_TITLE,
  F_TOJSON,
  F_TRIM,
  F_UNIQUE,
  F_UPPER,
  F_WORDCOUNT,
  F_COUNT_
};
static const char *const filter_names[F_COUNT_] = {
    "abs",    "capitalize", "count",      "d",       "default", "dictsort", "e",     "escape",   "first",      "float",
    "indent", "int",        "items",      "join",    "last",    "length",   "list",  "lower",    "map",        "max",
    "min",    "reject",     "rejectattr", "replace", "reverse", "round",    "safe",  "select",   "selectattr", "sort",
    "string", "sum",        "title",      "tojson",  "trim",    "unique",   "upper", "wordcount"};
static const char *const jinja_filters[] = {
    "attr",   "batch", "center",    "filesizeformat", "forceescape", "format", "groupby",  "pprint",
    "random", "slice", "striptags", "truncate",       "urlencode",   "urlize", "wordwrap", "xmlattr"};
enum {
  T_BOOLEAN,
  T_CALLABLE,
  T_DEFINED,
  T_DIVISIBLEBY,
  T_EQ,
  T_EQUALTO,
  T_ESCAPED,
  T_EVEN,
  T_FALSE,
  T_FILTER,
  T_FLOAT,
  T_GE,
  T_GREATERTHAN,
  T_GT,
  T_IN,
  T_INTEGER,
  T_ITERABLE,
  T_LE,
  T_LESSTHAN,
  T_LOWER,
  T_LT,
  T_MAPPING,
  T_NE,
  T_NONE,
  T_NUMBER,
  T_ODD,
  T_SAMEAS,
  T_SEQUENCE,
  T_STRING,
  T_TEST,
  T_TRUE,
  T_UNDEFINED,
  T_UPPER,
  T_COUNT_
};
static const char *const test_names[T_COUNT_] = {
    "boolean",  "callable", "defined", "divisibleby", "eq",        "equalto", "escaped", "even",     "false",
    "filter",   "float",    "ge",      "greaterthan", "gt",        "in",      "integer", "iterable", "le",
    "lessthan", "lower",    "lt",      "mapping",     "ne",        "none",    "number",  "odd",      "sameas",
    "sequence", "string",   "test",    "true",        "undefined", "upper"};

static int find_name(const char *const *tab, int n, const char *s, size_t len) {
  for (int i = 0; i < n; i++)
    if (strlen(tab[i]) == len && !memcmp(tab[i], s, len)) return i;
  return -1;
}
int jb_filter_id(const char *name, size_t n) { return find_name(filter_names, F_COUNT_, name, n); }
int jb_test_id(const char *name, size_t n) { return find_name(test_names, T_COUNT_, name, n); }
bool jb_known_filter(const char *name, size_t n) {
  return find_name(jinja_filters, (int)(sizeof jinja_filters / sizeof *jinja_filters), name, n) >= 0;
}

enum {
  M_STRIP,
  M_LSTRIP,
  M_RSTRIP,
  M_SPLIT,
  M_RSPLIT,
  M_STARTSWITH,
  M_ENDSWITH,
  M_UPPER,
  M_LOWER,
  M_REPLACE,
  M_TITLE,
  M_CAPITALIZE,
  M_FIND,
  M_RFIND,
  M_COUNT,
  M_JOIN,
  M_SPLITLINES,
  M_ISDIGIT,
  M_ISALPHA,
  M_ISALNUM,
  M_ISSPACE,
  M_ISUPPER,
  M_ISLOWER,
  M_REMOVEPREFIX,
  M_REMOVESUFFIX,
  M_STR_COUNT_,
  M_GET = M_STR_COUNT_,
  M_ITEMS,
  M_KEYS,
  M_VALUES,
  M_CYCLE
};
static const char *const str_methods[M_STR_COUNT_] = {
    "strip",   "lstrip",  "rstrip",     "split",   "rsplit",  "startswith",   "endswith",    "upper",      "lower",
    "replace", "title",   "capitalize", "find",    "rfind",   "count",        "join",        "splitlines", "isdigit",
    "isalpha", "isalnum", "isspace",    "isupper", "islower", "removeprefix", "removesuffix"};
static const char *const py_str_methods[] = {
    "casefold",  "center",       "encode",     "expandtabs",  "format",    "format_map", "index",     "isascii",
    "isdecimal", "isidentifier", "isnumeric",  "isprintable", "istitle",   "ljust",      "maketrans", "partition",
    "rindex",    "rjust",        "rpartition", "swapcase",    "translate", "zfill"};
static const char *const py_dict_methods[] = {"clear", "copy", "fromkeys", "pop", "popitem", "setdefault", "update"};
static const char *const py_list_methods[] = {"append", "clear", "copy",   "count",   "extend", "index",
                                              "insert", "pop",   "remove", "reverse", "sort"};
#define NELEM(a) (sizeof(a) / sizeof *(a))

/* ---------- helpers ---------- */
static jv S(jctx *c, jv x) { return jv_stringify(c, x); }

static jsb *scratch(jctx *c) {
  if (c->ncaps >= (int)NELEM(c->caps)) jctx_fail(c, WGLLM_ERR_INVALID_ARG, "expressions nested too deeply");
  jsb *b = &c->caps[c->ncaps++];
  b->n = 0;
  return b;
}
static jv scratch_done(jctx *c, jsb *b) {
  jv r = jv_str_from_sb(c, b);
  c->ncaps--;
  return r;
}

static noreturn void fail_undef(jctx *c, jv v, const char *how) {
  char d[160];
  jv_undef_desc(v, d, sizeof d);
  jctx_fail(c, WGLLM_ERR_INVALID_ARG, "%s (%s)", d, how);
}

static jv missing(void) {
  jv v = jv_undef(NULL, 0);
  v.sub = 1;
  return v;
}
static bool is_missing(jv v) { return v.kind == JV_UNDEF && v.sub == 1; }
static bool given(jv v) { return !is_missing(v); }

/* binds positional and keyword arguments to params; what is not given stays missing() */
static void bind(jctx *c, const char *kind, const char *name, const char *const *params, size_t np, const jv *args,
                 size_t na, const jname *kwn, const jv *kwv, size_t nkw, jv *out) {
  for (size_t i = 0; i < np; i++)
    out[i] = missing();
  if (na > np)
    jctx_fail(c, WGLLM_ERR_INVALID_ARG, "%s '%s' takes at most %zu argument(s) (%zu given)", kind, name, np, na);
  for (size_t i = 0; i < na; i++)
    out[i] = args[i];
  for (size_t k = 0; k < nkw; k++) {
    size_t i = 0;
    while (i < np && !(strlen(params[i]) == kwn[k].n && !memcmp(params[i], kwn[k].s, kwn[k].n)))
      i++;
    if (i == np)
      jctx_fail(c, WGLLM_ERR_INVALID_ARG, "%s '%s' got an unexpected keyword argument '%.*s'", kind, name,
                (int)kwn[k].n, kwn[k].s);
    if (i < na)
      jctx_fail(c, WGLLM_ERR_INVALID_ARG, "%s '%s' got multiple values for argument '%s'", kind, name, params[i]);
    out[i] = kwv[k];
  }
}

static int64_t want_int(jctx *c, jv v, const char *what) {
  if (v.kind == JV_INT || v.kind == JV_BOOL) return v.i;
  jctx_fail(c, WGLLM_ERR_INVALID_ARG, "%s must be an integer, not %s", what, jv_type_name(v));
}
static jv want_str(jctx *c, jv v, const char *what) {
  if (v.kind == JV_STR) return v;
  jctx_fail(c, WGLLM_ERR_INVALID_ARG, "%s must be a string, not %s", what, jv_type_name(v));
}

jv jb_iter_list(jctx *c, jv x) {
  switch (x.kind) {
  case JV_LIST:
    if (x.sub == JL_GEN) { /* a generator runs once */
      if (x.l->err) jctx_fail(c, WGLLM_ERR_INVALID_ARG, "%s", x.l->err);
      if (x.l->consumed) return jv_list(c, 1);
      x.l->consumed = true;
    }
    return x;
  case JV_UNDEF:
    return jv_list(c, 1);
  case JV_DICT:
    if (x.sub == JD_DICT) {
      jv l = jv_list(c, x.d->n);
      for (size_t i = 0; i < x.d->n; i++)
        jl_push(c, l.l, x.d->k[i]);
      return l;
    }
    break;
  case JV_STR: {
    jv l = jv_list(c, x.n);
    jctx_work(c, x.n);
    for (size_t i = 0; i < x.n;) {
      size_t st = i;
      utf8_next(x.s, x.n, &i);
      jl_push(c, l.l, jv_strn(x.s + st, i - st));
    }
    return l;
  }
  case JV_LOOP: {
    jv l = jv_list(c, x.lp->n);
    for (size_t i = 0; i < x.lp->n; i++)
      jl_push(c, l.l, x.lp->items[i]);
    return l;
  }
  default:
    break;
  }
  jctx_fail(c, WGLLM_ERR_INVALID_ARG, "'%s' object is not iterable", jv_type_name(x));
}

bool jb_contains(jctx *c, jv box, jv x) {
  if (box.kind == JV_STR) {
    if (x.kind != JV_STR)
      jctx_fail(c, WGLLM_ERR_INVALID_ARG, "'in <string>' requires string as left operand, not %s", jv_type_name(x));
    jctx_work(c, box.n);
    if (!x.n) return true;
    for (size_t i = 0; i + x.n <= box.n; i++)
      if (!memcmp(box.s + i, x.s, x.n)) return true;
    return false;
  }
  if (box.kind == JV_DICT && box.sub == JD_DICT) {
    if (!jv_hashable(x)) jctx_fail(c, WGLLM_ERR_INVALID_ARG, "unhashable type: '%s'", jv_type_name(x));
    return jd_get(box.d, x, NULL);
  }
  if (box.kind != JV_LIST && box.kind != JV_UNDEF)
    jctx_fail(c, WGLLM_ERR_INVALID_ARG, "argument of type '%s' is not iterable", jv_type_name(box));
  if (box.kind == JV_LIST && (box.sub == JL_KEYS || box.sub == JL_ITEMS) && !jv_hashable(x))
    jctx_fail(c, WGLLM_ERR_INVALID_ARG, "unhashable type: '%s'", jv_type_name(x));
  jv l = jb_iter_list(c, box);
  for (size_t i = 0; i < l.l->n; i++)
    if (jv_eq(l.l->v[i], x)) return true;
  return false;
}

/* byte offsets of the code points of a string: off[k] for k in [0, count], off[count] = n */
static size_t *cp_offsets(jctx *c, const char *s, size_t n, size_t *count) {
  size_t k = utf8_count(s, n);
  c->a->line = c->line;
  size_t *off = ja_alloc(c->a, (k + 1) * sizeof *off);
  size_t i = 0, j = 0;
  while (i < n) {
    off[j++] = i;
    utf8_next(s, n, &i);
  }
  off[j] = n;
  *count = k;
  return off;
}

static bool in_set(uint32_t cp, jv chars) {
  if (chars.kind != JV_STR) return uc_isspace(cp);
  for (size_t i = 0; i < chars.n;)
    if (utf8_next(chars.s, chars.n, &i) == cp) return true;
  return false;
}

/* str.strip / lstrip / rstrip; chars: a string, or anything else for whitespace */
static jv strip(jctx *c, jv s, jv chars, int left, int right) {
  jctx_work(c, s.n);
  size_t a = 0, b = s.n;
  if (left)
    while (a < b) {
      size_t j = a;
      if (!in_set(utf8_next(s.s, s.n, &j), chars)) break;
      a = j;
    }
  if (right) {
    size_t keep = a;
    for (size_t i = a; i < b;) {
      uint32_t cp = utf8_next(s.s, s.n, &i);
      if (!in_set(cp, chars)) keep = i;
    }
    b = keep;
  }
  return jv_strn(s.s + a, b - a);
}

static jv strip_chars_arg(jctx *c, jv chars, const char *what) {
  if (is_missing(chars) || chars.kind == JV_NONE) return jv_none();
  return want_str(c, chars, what);
}

static bool ws_at(const char *s, size_t n, size_t i, size_t *next) {
  size_t j = i;
  bool w = uc_isspace(utf8_next(s, n, &j));
  *next = j;
  return w;
}

static jv split(jctx *c, jv s, jv sep, int64_t maxsplit, bool from_right) {
  jv out = jv_list(c, 0);
  jctx_work(c, s.n);
  uint64_t maxc = maxsplit < 0 ? UINT64_MAX : (uint64_t)maxsplit;
  if (sep.kind == JV_NONE || is_missing(sep)) {
    if (!from_right) {
      size_t i = 0, j, nx;
      while (maxc-- > 0) {
        while (i < s.n && ws_at(s.s, s.n, i, &nx))
          i = nx;
        if (i == s.n) break;
        j = i;
        while (i < s.n && !ws_at(s.s, s.n, i, &nx))
          i = nx;
        jl_push(c, out.l, jv_strn(s.s + j, i - j));
      }
      if (i < s.n) {
        while (i < s.n && ws_at(s.s, s.n, i, &nx))
          i = nx;
        if (i != s.n) jl_push(c, out.l, jv_strn(s.s + i, s.n - i));
      }
      return out;
    }
    /* rsplit(None): the same from the right, over code points */
    size_t k;
    size_t *off = cp_offsets(c, s.s, s.n, &k);
    size_t i = k, j, nx;
    jv rev = jv_list(c, 0);
    while (maxc-- > 0) {
      while (i > 0 && ws_at(s.s, s.n, off[i - 1], &nx))
        i--;
      if (i == 0) break;
      j = i;
      while (i > 0 && !ws_at(s.s, s.n, off[i - 1], &nx))
        i--;
      jl_push(c, rev.l, jv_strn(s.s + off[i], off[j] - off[i]));
    }
    if (i > 0) {
      while (i > 0 && ws_at(s.s, s.n, off[i - 1], &nx))
        i--;
      if (i > 0) jl_push(c, rev.l, jv_strn(s.s, off[i]));
    }
    for (size_t m = rev.l->n; m-- > 0;)
      jl_push(c, out.l, rev.l->v[m]);
    return out;
  }
  sep = want_str(c, sep, "the separator");
  if (!sep.n) jctx_fail(c, WGLLM_ERR_INVALID_ARG, "empty separator");
  if (!from_right) {
    size_t i = 0, st = 0;
    while (maxc > 0 && i + sep.n <= s.n) {
      if (!memcmp(s.s + i, sep.s, sep.n)) {
        jl_push(c, out.l, jv_strn(s.s + st, i - st));
        i += sep.n;
        st = i;
        maxc--;
      } else
        i++;
    }
    jl_push(c, out.l, jv_strn(s.s + st, s.n - st));
    return out;
  }
  jv rev = jv_list(c, 0);
  size_t end = s.n, i = s.n;
  while (maxc > 0 && i >= sep.n) {
    if (!memcmp(s.s + i - sep.n, sep.s, sep.n)) {
      jl_push(c, rev.l, jv_strn(s.s + i, end - i));
      i -= sep.n;
      end = i;
      maxc--;
    } else
      i--;
  }
  jl_push(c, rev.l, jv_strn(s.s, end));
  for (size_t m = rev.l->n; m-- > 0;)
    jl_push(c, out.l, rev.l->v[m]);
  return out;
}

static jv replace(jctx *c, jv s, jv old, jv rep, int64_t count) {
  jctx_work(c, s.n);
  jsb *b = scratch(c);
  uint64_t left = count < 0 ? UINT64_MAX : (uint64_t)count;
  if (!old.n) { /* Python inserts the replacement before every character and at the end */
    for (size_t i = 0; i < s.n;) {
      if (left) {
        jsb_put(c, b, rep.s, rep.n);
        left--;
      }
      size_t st = i;
      utf8_next(s.s, s.n, &i);
      jsb_put(c, b, s.s + st, i - st);
    }
    if (left) jsb_put(c, b, rep.s, rep.n);
    return scratch_done(c, b);
  }
  size_t i = 0, st = 0;
  while (left && i + old.n <= s.n) {
    if (!memcmp(s.s + i, old.s, old.n)) {
      jsb_put(c, b, s.s + st, i - st);
      jsb_put(c, b, rep.s, rep.n);
      i += old.n;
      st = i;
      left--;
    } else
      i++;
  }
  jsb_put(c, b, s.s + st, s.n - st);
  return scratch_done(c, b);
}

static jv case_map(jctx *c, jv s, int mode) { /* 0 upper, 1 lower, 2 str.title, 3 capitalize */
  jsb *b = scratch(c);
  if (mode == 0)
    str_upper(c, s.s, s.n, b);
  else if (mode == 1)
    str_lower(c, s.s, s.n, b);
  else {
    jctx_work(c, s.n);
    bool prev_cased = false, first = true;
    for (size_t i = 0; i < s.n;) {
      size_t st = i;
      uint32_t cp = utf8_next(s.s, s.n, &i);
      bool up = mode == 2 ? !prev_cased : first;
      if (up && cp == 0xdf)
        jsb_put(c, b, "Ss", 2); /* title case, not upper case */
      else if (up)
        str_upper(c, s.s + st, i - st, b);
      else
        str_lower_range(c, s.s, s.n, st, i, b);
      prev_cased = uc_iscased(cp);
      first = false;
    }
  }
  return scratch_done(c, b);
}

/* Jinja's title filter: each piece between runs of [-\s({\[<] gets its first character upper-cased, the rest
   lower-cased */
static jv jinja_title(jctx *c, jv s) {
  jsb *b = scratch(c);
  jctx_work(c, s.n);
  for (size_t i = 0; i < s.n;) {
    size_t st = i;
    uint32_t cp = utf8_next(s.s, s.n, &i);
    bool sep = uc_isspace(cp) || cp == '-' || cp == '(' || cp == '{' || cp == '[' || cp == '<';
    if (sep) {
      jsb_put(c, b, s.s + st, i - st);
      continue;
    }
    str_upper(c, s.s + st, i - st, b); /* item[0].upper() + item[1:].lower(), each piece a string of its own */
    size_t e = i;
    while (e < s.n) {
      size_t k = e;
      uint32_t d = utf8_next(s.s, s.n, &k);
      if (uc_isspace(d) || d == '-' || d == '(' || d == '{' || d == '[' || d == '<') break;
      e = k;
    }
    str_lower(c, s.s + i, e - i, b);
    i = e;
  }
  return scratch_done(c, b);
}

static bool line_break(uint32_t cp) {
  return cp == '\n' || cp == '\r' || cp == 0x0b || cp == 0x0c || cp == 0x1c || cp == 0x1d || cp == 0x1e || cp == 0x85 ||
         cp == 0x2028 || cp == 0x2029;
}

static jv splitlines(jctx *c, jv s, bool keepends) {
  jv out = jv_list(c, 0);
  jctx_work(c, s.n);
  size_t st = 0, i = 0;
  while (i < s.n) {
    size_t at = i;
    uint32_t cp = utf8_next(s.s, s.n, &i);
    if (!line_break(cp)) continue;
    if (cp == '\r' && i < s.n && s.s[i] == '\n') i++;
    jl_push(c, out.l, jv_strn(s.s + st, (keepends ? i : at) - st));
    st = i;
  }
  if (st < s.n) jl_push(c, out.l, jv_strn(s.s + st, s.n - st));
  return out;
}

static bool str_pred(jv s, int m) {
  bool any_cased = false, ok = s.n > 0;
  for (size_t i = 0; i < s.n && ok;) {
    uint32_t cp = utf8_next(s.s, s.n, &i);
    bool digit = cp >= '0' && cp <= '9';
    bool alpha = (cp < 0x80 && ((cp | 32) >= 'a' && (cp | 32) <= 'z')) || (cp >= 0x80 && uc_iscased(cp)) ||
                 (cp >= 0x3040 && cp <= 0x30ff) || (cp >= 0x4e00 && cp <= 0x9fff) || (cp >= 0xac00 && cp <= 0xd7af);
    switch (m) {
    case M_ISDIGIT:
      ok = digit;
      break;
    case M_ISALPHA:
      ok = alpha;
      break;
    case M_ISALNUM:
      ok = alpha || digit;
      break;
    case M_ISSPACE:
      ok = uc_isspace(cp);
      break;
    case M_ISUPPER:
      if (uc_upper(cp) != cp) ok = false; /* a lowercase letter */
      if (uc_lower(cp) != cp) any_cased = true;
      break;
    case M_ISLOWER:
      if (uc_lower(cp) != cp) ok = false;
      if (uc_upper(cp) != cp) any_cased = true;
      break;
    }
  }
  if (m == M_ISUPPER || m == M_ISLOWER) return ok && any_cased;
  return ok;
}

/* code point index of a byte offset */
static int64_t cp_index(const char *s, size_t byte) { return (int64_t)utf8_count(s, byte); }

static int64_t find(jctx *c, jv s, jv sub, bool right) {
  jctx_work(c, s.n);
  if (sub.n > s.n) return -1;
  if (!right) {
    for (size_t i = 0; i + sub.n <= s.n; i++)
      if (!memcmp(s.s + i, sub.s, sub.n)) return cp_index(s.s, i);
  } else
    for (size_t i = s.n - sub.n + 1; i-- > 0;)
      if (!memcmp(s.s + i, sub.s, sub.n)) return cp_index(s.s, i);
  return -1;
}

static bool affix(jv s, jv p, bool end) {
  if (p.n > s.n) return false;
  return !memcmp(end ? s.s + s.n - p.n : s.s, p.s, p.n);
}

/* ---------- attributes, items, calls ---------- */
static jv method(jctx *c, jv self, int id, const char *name, size_t n) {
  c->a->line = c->line;
  jfunc *f = ja_alloc(c->a, sizeof *f);
  memset(f, 0, sizeof *f);
  f->kind = FN_METHOD;
  f->id = id;
  f->name = name;
  f->nlen = n;
  f->self = self;
  jv v = {JV_FUNC, 0, 0, {0}};
  v.fn = f;
  return v;
}

static bool name_is(const char *s, size_t n, const char *w) { return strlen(w) == n && !memcmp(s, w, n); }

jv jb_getattr(jctx *c, jv x, const char *name, size_t n) {
  int id;
  switch (x.kind) {
  case JV_UNDEF: {
    char how[96];
    snprintf(how, sizeof how, "its attribute '%.*s' was read", (int)(n > 60 ? 60 : n), name);
    fail_undef(c, x, how);
  }
  case JV_STR:
    if ((id = find_name(str_methods, M_STR_COUNT_, name, n)) >= 0) return method(c, x, id, name, n);
    if (find_name(py_str_methods, (int)NELEM(py_str_methods), name, n) >= 0)
      jctx_fail(c, WGLLM_ERR_UNSUPPORTED, "unsupported string method '%.*s'", (int)n, name);
    return jv_undef(name, n);
  case JV_DICT: {
    jv v;
    if (x.sub == JD_DICT) {
      static const char *const dm[] = {"get", "items", "keys", "values"};
      if ((id = find_name(dm, 4, name, n)) >= 0) return method(c, x, M_GET + id, name, n);
      if (find_name(py_dict_methods, (int)NELEM(py_dict_methods), name, n) >= 0)
        jctx_fail(c, WGLLM_ERR_UNSUPPORTED, "unsupported dict method '%.*s'", (int)n, name);
    }
    if (jd_gets(x.d, name, n, &v)) return v;
    return jv_undef(name, n);
  }
  case JV_LIST:
    if (find_name(py_list_methods, (int)NELEM(py_list_methods), name, n) >= 0)
      jctx_fail(c, WGLLM_ERR_UNSUPPORTED, "unsupported list method '%.*s'", (int)n, name);
    return jv_undef(name, n);
  case JV_LOOP: {
    const jloop *l = x.lp;
    if (name_is(name, n, "index")) return jv_int((int64_t)l->i + 1);
    if (name_is(name, n, "index0")) return jv_int((int64_t)l->i);
    if (name_is(name, n, "revindex")) return jv_int((int64_t)(l->n - l->i));
    if (name_is(name, n, "revindex0")) return jv_int((int64_t)(l->n - l->i - 1));
    if (name_is(name, n, "first")) return jv_bool(l->i == 0);
    if (name_is(name, n, "last")) return jv_bool(l->i + 1 == l->n);
    if (name_is(name, n, "length")) return jv_int((int64_t)l->n);
    if (name_is(name, n, "depth")) return jv_int(1);
    if (name_is(name, n, "depth0")) return jv_int(0);
    if (name_is(name, n, "previtem")) return l->i ? l->items[l->i - 1] : jv_undef("previtem", 8);
    if (name_is(name, n, "nextitem")) return l->i + 1 < l->n ? l->items[l->i + 1] : jv_undef("nextitem", 8);
    if (name_is(name, n, "cycle")) return method(c, x, M_CYCLE, name, n);
    if (name_is(name, n, "changed"))
      jctx_fail(c, WGLLM_ERR_UNSUPPORTED, "unsupported loop attribute '%.*s'", (int)n, name);
    return jv_undef(name, n);
  }
  default:
    return jv_undef(name, n);
  }
}

jv jb_getitem(jctx *c, jv x, jv k) {
  if (x.kind == JV_UNDEF) fail_undef(c, x, "it was subscripted");
  if ((jl_plain(x) || x.kind == JV_STR) && (k.kind == JV_INT || k.kind == JV_BOOL)) {
    int64_t i = k.i;
    if (x.kind == JV_LIST) {
      int64_t L = (int64_t)x.l->n;
      if (i < 0) i += L;
      return i >= 0 && i < L ? x.l->v[i] : jv_undef(NULL, 0);
    }
    bool ascii = true;
    for (size_t j = 0; j < x.n && ascii; j++)
      ascii = (unsigned char)x.s[j] < 0x80;
    if (ascii) {
      int64_t L = (int64_t)x.n;
      if (i < 0) i += L;
      return i >= 0 && i < L ? jv_strn(x.s + i, 1) : jv_undef(NULL, 0);
    }
    size_t cnt;
    size_t *off = cp_offsets(c, x.s, x.n, &cnt);
    if (i < 0) i += (int64_t)cnt;
    return i >= 0 && i < (int64_t)cnt ? jv_strn(x.s + off[i], off[i + 1] - off[i]) : jv_undef(NULL, 0);
  }
  if (x.kind == JV_DICT) {
    jv v;
    if (x.sub == JD_DICT && jd_get(x.d, k, &v)) return v;
    if (x.sub == JD_NAMESPACE && k.kind == JV_STR && jd_gets(x.d, k.s, k.n, &v)) return v;
  }
  if (k.kind == JV_STR && (x.kind == JV_DICT || x.kind == JV_STR || x.kind == JV_LOOP)) {
    if (x.kind == JV_DICT && x.sub == JD_NAMESPACE) return jv_undef(k.s, k.n);
    return jb_getattr(c, x, k.s, k.n); /* Jinja's getitem falls back to the attribute */
  }
  if (k.kind == JV_STR) return jv_undef(k.s, k.n);
  return jv_undef(NULL, 0);
}

static jv str_method(jctx *c, int id, jv s, const jv *args, size_t na, const jname *kwn, const jv *kwv, size_t nkw) {
  const char *mname = str_methods[id];
  jv p[3];
  static const char *const split_params[] = {"sep", "maxsplit"};
  static const char *const none_params[] = {"a", "b", "c"}; /* positional only */
  if (id == M_SPLIT || id == M_RSPLIT)
    bind(c, "method", mname, split_params, 2, args, na, kwn, kwv, nkw, p);
  else {
    if (nkw) jctx_fail(c, WGLLM_ERR_INVALID_ARG, "str.%s() takes no keyword arguments", mname);
    bind(c, "method", mname, none_params, 3, args, na, kwn, kwv, nkw, p);
  }
  size_t maxargs = id <= M_RSTRIP     ? 1
                   : id <= M_RSPLIT   ? 2
                   : id <= M_ENDSWITH ? 1
                   : id == M_REPLACE  ? 3
                   : (id == M_FIND || id == M_RFIND || id == M_COUNT || id == M_JOIN || id == M_SPLITLINES ||
                      id == M_REMOVEPREFIX || id == M_REMOVESUFFIX)
                       ? 1
                       : 0;
  if (id == M_STARTSWITH || id == M_ENDSWITH || id == M_FIND || id == M_RFIND || id == M_COUNT) {
    if (na > 1) jctx_fail(c, WGLLM_ERR_UNSUPPORTED, "unsupported start/end arguments of str.%s()", mname);
  }
  if (na + nkw > maxargs)
    jctx_fail(c, WGLLM_ERR_INVALID_ARG, "str.%s() takes at most %zu argument(s) (%zu given)", mname, maxargs, na + nkw);
  switch (id) {
  case M_STRIP:
  case M_LSTRIP:
  case M_RSTRIP:
    return strip(c, s, strip_chars_arg(c, p[0], "the characters to strip"), id != M_RSTRIP, id != M_LSTRIP);
  case M_SPLIT:
  case M_RSPLIT: {
    int64_t m = given(p[1]) ? want_int(c, p[1], "maxsplit") : -1;
    return split(c, s, given(p[0]) ? p[0] : jv_none(), m, id == M_RSPLIT);
  }
  case M_STARTSWITH:
  case M_ENDSWITH: {
    if (is_missing(p[0])) jctx_fail(c, WGLLM_ERR_INVALID_ARG, "str.%s() takes at least 1 argument", mname);
    if (p[0].kind == JV_LIST && p[0].sub == JL_TUPLE) {
      for (size_t i = 0; i < p[0].l->n; i++)
        if (affix(s, want_str(c, p[0].l->v[i], "a prefix"), id == M_ENDSWITH)) return jv_bool(true);
      return jv_bool(false);
    }
    if (p[0].kind != JV_STR)
      jctx_fail(c, WGLLM_ERR_INVALID_ARG, "%s first arg must be str or a tuple of str, not %s", mname,
                jv_type_name(p[0]));
    return jv_bool(affix(s, p[0], id == M_ENDSWITH));
  }
  case M_UPPER:
    return case_map(c, s, 0);
  case M_LOWER:
    return case_map(c, s, 1);
  case M_TITLE:
    return case_map(c, s, 2);
  case M_CAPITALIZE:
    return case_map(c, s, 3);
  case M_REPLACE:
    if (na < 2) jctx_fail(c, WGLLM_ERR_INVALID_ARG, "str.replace() takes at least 2 arguments");
    return replace(c, s, want_str(c, p[0], "the old text"), want_str(c, p[1], "the new text"),
                   given(p[2]) ? want_int(c, p[2], "count") : -1);
  case M_FIND:
  case M_RFIND:
    if (!na) jctx_fail(c, WGLLM_ERR_INVALID_ARG, "str.%s() takes at least 1 argument", mname);
    return jv_int(find(c, s, want_str(c, p[0], "the text to find"), id == M_RFIND));
  case M_COUNT: {
    if (!na) jctx_fail(c, WGLLM_ERR_INVALID_ARG, "str.count() takes at least 1 argument");
    jv sub = want_str(c, p[0], "the text to count");
    jctx_work(c, s.n);
    if (!sub.n) return jv_int((int64_t)utf8_count(s.s, s.n) + 1);
    int64_t k = 0;
    for (size_t i = 0; i + sub.n <= s.n;)
      if (!memcmp(s.s + i, sub.s, sub.n)) {
        k++;
        i += sub.n;
      } else
        i++;
    return jv_int(k);
  }
  case M_JOIN: {
    if (!na) jctx_fail(c, WGLLM_ERR_INVALID_ARG, "str.join() takes exactly one argument");
    jv items = jb_iter_list(c, p[0]);
    jsb *b = scratch(c);
    for (size_t i = 0; i < items.l->n; i++) {
      jv it = items.l->v[i];
      if (it.kind != JV_STR)
        jctx_fail(c, WGLLM_ERR_INVALID_ARG, "sequence item %zu: expected str instance, %s found", i, jv_type_name(it));
      if (i) jsb_put(c, b, s.s, s.n);
      jsb_put(c, b, it.s, it.n);
    }
    return scratch_done(c, b);
  }
  case M_SPLITLINES:
    return splitlines(c, s, given(p[0]) && jv_truthy(p[0]));
  case M_REMOVEPREFIX:
  case M_REMOVESUFFIX: {
    if (!na) jctx_fail(c, WGLLM_ERR_INVALID_ARG, "str.%s() takes exactly one argument", mname);
    jv a = want_str(c, p[0], "the affix");
    if (!affix(s, a, id == M_REMOVESUFFIX)) return s;
    return id == M_REMOVEPREFIX ? jv_strn(s.s + a.n, s.n - a.n) : jv_strn(s.s, s.n - a.n);
  }
  default:
    return jv_bool(str_pred(s, id));
  }
}

static jv dict_method(jctx *c, int id, jv d, const jv *args, size_t na, size_t nkw) {
  if (nkw) jctx_fail(c, WGLLM_ERR_INVALID_ARG, "dict methods take no keyword arguments");
  if (id == M_GET) {
    if (na < 1 || na > 2) jctx_fail(c, WGLLM_ERR_INVALID_ARG, "get expected 1 or 2 arguments, got %zu", na);
    jv v;
    if (jd_get(d.d, args[0], &v)) return v;
    return na == 2 ? args[1] : jv_none();
  }
  if (na) jctx_fail(c, WGLLM_ERR_INVALID_ARG, "dict method takes no arguments (%zu given)", na);
  jv l = jv_list(c, d.d->n);
  for (size_t i = 0; i < d.d->n; i++) {
    if (id == M_ITEMS) {
      jv t = jv_tuple(c, 2);
      jl_push(c, t.l, d.d->k[i]);
      jl_push(c, t.l, d.d->v[i]);
      jl_push(c, l.l, t);
    } else
      jl_push(c, l.l, id == M_KEYS ? d.d->k[i] : d.d->v[i]);
  }
  l.sub = id == M_ITEMS ? JL_ITEMS : id == M_KEYS ? JL_KEYS : JL_VALUES;
  return l;
}

enum { G_RANGE, G_NAMESPACE, G_DICT, G_RAISE, G_STRFTIME };
static jfunc g_funcs[] = {{FN_BUILTIN, G_RANGE, "range", 5, {0}, NULL, NULL},
                          {FN_BUILTIN, G_NAMESPACE, "namespace", 9, {0}, NULL, NULL},
                          {FN_BUILTIN, G_DICT, "dict", 4, {0}, NULL, NULL},
                          {FN_BUILTIN, G_RAISE, "raise_exception", 15, {0}, NULL, NULL},
                          {FN_BUILTIN, G_STRFTIME, "strftime_now", 12, {0}, NULL, NULL}};

bool jb_global(const char *name, size_t n, jv *out) {
  for (size_t i = 0; i < NELEM(g_funcs); i++)
    if (g_funcs[i].nlen == n && !memcmp(g_funcs[i].name, name, n)) {
      jv v = {JV_FUNC, 0, 0, {0}};
      v.fn = &g_funcs[i];
      *out = v;
      return true;
    }
  return false;
}

#define MAX_RANGE 100000 /* Jinja's sandbox refuses longer ranges */

static jv builtin(jctx *c, const jfunc *f, const jv *args, size_t na, const jname *kwn, const jv *kwv, size_t nkw) {
  switch (f->id) {
  case G_RANGE: {
    if (nkw) jctx_fail(c, WGLLM_ERR_INVALID_ARG, "range() takes no keyword arguments");
    if (na < 1 || na > 3) jctx_fail(c, WGLLM_ERR_INVALID_ARG, "range expected 1 to 3 arguments, got %zu", na);
    int64_t a = 0, b, s = 1;
    if (na == 1)
      b = want_int(c, args[0], "range()'s argument");
    else {
      a = want_int(c, args[0], "range()'s start");
      b = want_int(c, args[1], "range()'s stop");
      if (na == 3) s = want_int(c, args[2], "range()'s step");
    }
    if (s == 0) jctx_fail(c, WGLLM_ERR_INVALID_ARG, "range() arg 3 must not be zero");
    double cnt = s > 0 ? ceil(((double)b - (double)a) / (double)s) : ceil(((double)a - (double)b) / (double)-s);
    if (cnt < 0) cnt = 0;
    if (cnt > MAX_RANGE)
      jctx_fail(c, WGLLM_ERR_INVALID_ARG, "range too big: the sandbox refuses ranges over %d items", MAX_RANGE);
    jv l = jv_list(c, (size_t)cnt);
    for (int64_t i = 0; i < (int64_t)cnt; i++)
      jl_push(c, l.l, jv_int(a + i * s));
    return l;
  }
  case G_NAMESPACE:
  case G_DICT: {
    jv d = jv_dict(c, na + nkw);
    if (f->id == G_NAMESPACE) d.sub = JD_NAMESPACE;
    if (na > 1) jctx_fail(c, WGLLM_ERR_INVALID_ARG, "%s() expected at most 1 positional argument", f->name);
    if (na == 1) {
      if (args[0].kind != JV_DICT || args[0].sub != JD_DICT)
        jctx_fail(c, WGLLM_ERR_UNSUPPORTED, "unsupported %s() argument of type %s (a dict is)", f->name,
                  jv_type_name(args[0]));
      for (size_t i = 0; i < args[0].d->n; i++)
        jd_set(c, d.d, args[0].d->k[i], args[0].d->v[i]);
    }
    for (size_t k = 0; k < nkw; k++)
      jd_set(c, d.d, jv_strn(kwn[k].s, kwn[k].n), kwv[k]);
    return d;
  }
  case G_RAISE: {
    jv m = na ? S(c, args[0]) : jv_strn("", 0);
    jfail(c->e, WGLLM_ERR_INVALID_ARG, 0, "raise_exception at line %d: %.*s", c->line, (int)(m.n > 800 ? 800 : m.n),
          m.s);
  }
  case G_STRFTIME: {
    if (na != 1 || nkw) jctx_fail(c, WGLLM_ERR_INVALID_ARG, "strftime_now() takes exactly one argument");
    jv fmt = want_str(c, args[0], "strftime_now()'s format");
    char f0[256], out[512];
    if (fmt.n >= sizeof f0) jctx_fail(c, WGLLM_ERR_UNSUPPORTED, "strftime_now() format longer than 255 bytes");
    memcpy(f0, fmt.s, fmt.n);
    f0[fmt.n] = 0;
    struct tm tm;
    time_t now = c->lim.now;
    localtime_r(&now, &tm);
    size_t k = fmt.n ? strftime(out, sizeof out, f0, &tm) : 0;
    return jv_str(c, out, k);
  }
  }
  jctx_fail(c, WGLLM_ERR_INTERNAL, "unknown builtin %d", f->id);
}

jv jb_call(jctx *c, jv fn, const jv *args, size_t na, const jname *kwn, const jv *kwv, size_t nkw) {
  const jfunc *f = fn.fn;
  if (f->kind == FN_MACRO) return je_call_macro(c, f, args, na, kwn, kwv, nkw);
  if (f->kind == FN_BUILTIN) return builtin(c, f, args, na, kwn, kwv, nkw);
  if (f->id < M_STR_COUNT_) return str_method(c, f->id, f->self, args, na, kwn, kwv, nkw);
  if (f->id == M_CYCLE) {
    if (!na) jctx_fail(c, WGLLM_ERR_INVALID_ARG, "no items for cycling given");
    return args[f->self.lp->i % na];
  }
  return dict_method(c, f->id, f->self, args, na, nkw);
}

/* ---------- filters ---------- */
static bool iterable(jv x) {
  if (x.kind == JV_LIST && x.sub == JL_GEN && x.l->err) return false; /* the error stays lazy down a chain */
  return x.kind == JV_LIST || x.kind == JV_STR || x.kind == JV_UNDEF || x.kind == JV_LOOP ||
         (x.kind == JV_DICT && x.sub == JD_DICT);
}

/* what a lazy filter (map, select, reject, unique, items) returns for input it cannot iterate: a generator that
   fails only when iterated, as Jinja's do */
static jv deferred(jctx *c, const char *filter, jv x) {
  char msg[160];
  if (x.kind == JV_LIST && x.l->err)
    snprintf(msg, sizeof msg, "%s", x.l->err);
  else if (!strcmp(filter, "items"))
    snprintf(msg, sizeof msg, "can only get item pairs from a mapping (items of a %s)", jv_type_name(x));
  else
    snprintf(msg, sizeof msg, "'%s' object is not iterable (%s)", jv_type_name(x), filter);
  jv g = jv_list(c, 1);
  g.sub = JL_GEN;
  g.l->err = ja_strdup(c->a, msg, strlen(msg));
  return g;
}

/* Jinja's make_attrgetter: "a.b.0" looks up a, then b, then item 0 */
static jv get_path(jctx *c, jv x, jv attr) {
  if (attr.kind == JV_INT) return jb_getitem(c, x, attr);
  attr = want_str(c, attr, "attribute");
  size_t st = 0;
  for (size_t i = 0; i <= attr.n; i++) {
    if (i < attr.n && attr.s[i] != '.') continue;
    jv part = jv_strn(attr.s + st, i - st);
    bool digits = part.n > 0;
    int64_t v = 0;
    for (size_t k = 0; k < part.n && digits; k++) {
      digits = part.s[k] >= '0' && part.s[k] <= '9';
      /* Python's int has no bound: a part past int64 saturates, an index past any list (Jinja: undefined) */
      v = v > (INT64_MAX - 9) / 10 ? INT64_MAX : v * 10 + (part.s[k] - '0');
    }
    if (x.kind == JV_UNDEF) fail_undef(c, x, "an attribute was read");
    x = jb_getitem(c, x, digits ? jv_int(v) : part);
    st = i + 1;
  }
  return x;
}

static jv fold_case(jctx *c, jv v, bool case_sensitive) {
  if (case_sensitive || v.kind != JV_STR) return v;
  return case_map(c, v, 1);
}

/* stable merge sort of v[0..n) by keys k (compared as Python does) */
static void msort(jctx *c, jv *v, jv *k, jv *tv, jv *tk, size_t n, bool rev) {
  if (n < 2) return;
  size_t h = n / 2;
  msort(c, v, k, tv, tk, h, rev);
  msort(c, v + h, k + h, tv, tk, n - h, rev);
  size_t i = 0, j = h, o = 0;
  while (i < h && j < n) {
    /* sort's keys are one-item lists in Jinja (make_multi_attrgetter): equal ones never reach '<' */
    int r = jv_eq(k[j], k[i]) ? 0 : jv_cmp(c, k[j], k[i], "<");
    bool take_right = rev ? r > 0 : r < 0;
    if (take_right) {
      tv[o] = v[j];
      tk[o++] = k[j++];
    } else {
      tv[o] = v[i];
      tk[o++] = k[i++];
    }
  }
  while (i < h) {
    tv[o] = v[i];
    tk[o++] = k[i++];
  }
  while (j < n) {
    tv[o] = v[j];
    tk[o++] = k[j++];
  }
  memcpy(v, tv, n * sizeof *v);
  memcpy(k, tk, n * sizeof *k);
  jctx_work(c, n);
}

static jv sorted(jctx *c, jv items, jv *keys, bool rev) {
  size_t n = items.l->n;
  jv out = jv_list(c, n);
  for (size_t i = 0; i < n; i++)
    jl_push(c, out.l, items.l->v[i]);
  c->a->line = c->line;
  jv *tv = ja_alloc(c->a, (n + 1) * sizeof(jv)), *tk = ja_alloc(c->a, (n + 1) * sizeof(jv));
  msort(c, out.l->v, keys, tv, tk, n, rev);
  return out;
}

jv jb_escape(jctx *c, jv s) {
  if (s.sub == JS_MARKUP) return s;
  jsb *b = scratch(c);
  jctx_work(c, s.n);
  for (size_t i = 0; i < s.n; i++) {
    char ch = s.s[i];
    const char *r = ch == '&'    ? "&amp;"
                    : ch == '<'  ? "&lt;"
                    : ch == '>'  ? "&gt;"
                    : ch == '"'  ? "&#34;"
                    : ch == '\'' ? "&#39;"
                                 : NULL;
    if (r)
      jsb_put(c, b, r, strlen(r));
    else
      jsb_putc(c, b, ch);
  }
  jv r = scratch_done(c, b);
  r.sub = JS_MARKUP;
  return r;
}

static bool parse_py_int(jv s, int base, int64_t *out) {
  size_t i = 0, n = s.n;
  while (i < n && uc_isspace((unsigned char)s.s[i]))
    i++;
  while (n > i && uc_isspace((unsigned char)s.s[n - 1]))
    n--;
  bool neg = false;
  if (i < n && (s.s[i] == '+' || s.s[i] == '-')) neg = s.s[i++] == '-';
  if (i >= n) return false;
  if (i + 1 < n && s.s[i] == '0') { /* Python takes the prefix of the base (or, for base 0, any) */
    char p = (char)(s.s[i + 1] | 32);
    int pb = p == 'x' ? 16 : p == 'o' ? 8 : p == 'b' ? 2 : 0;
    if (pb && (base == pb || base == 0)) {
      base = pb;
      i += 2;
      if (i < n && s.s[i] == '_') i++;
    }
  }
  if (base == 0) {
    base = 10;
    if (n - i > 1 && s.s[i] == '0') { /* base 0: no leading zeros unless all zeros */
      for (size_t k = i; k < n; k++)
        if (s.s[k] != '0' && s.s[k] != '_') return false;
    }
  }
  uint64_t v = 0;
  bool prev_digit = false;
  for (; i < n; i++) {
    char ch = s.s[i];
    if (ch == '_' && prev_digit) {
      prev_digit = false;
      continue;
    }
    int d = ch >= '0' && ch <= '9' ? ch - '0' : (ch | 32) >= 'a' && (ch | 32) <= 'z' ? (ch | 32) - 'a' + 10 : 99;
    if (d >= base) return false;
    if (v > (UINT64_MAX - (uint64_t)d) / (uint64_t)base) return false;
    v = v * (uint64_t)base + (uint64_t)d;
    prev_digit = true;
  }
  if (!prev_digit || v > (uint64_t)INT64_MAX) return false;
  *out = neg ? -(int64_t)v : (int64_t)v;
  return true;
}

static bool parse_py_float(jv s, double *out) {
  char buf[128];
  size_t i = 0, n = s.n, k = 0;
  while (i < n && uc_isspace((unsigned char)s.s[i]))
    i++;
  while (n > i && uc_isspace((unsigned char)s.s[n - 1]))
    n--;
  if (n - i == 0 || n - i >= sizeof buf) return false;
  for (; i < n; i++)
    if (s.s[i] != '_') buf[k++] = s.s[i];
  buf[k] = 0;
  if (strchr(buf, 'x') || strchr(buf, 'X')) return false; /* strtod reads hex, Python does not */
  char *end;
  double d = strtod(buf, &end);
  if (*end) return false;
  *out = d;
  return true;
}

static jv py_round(jctx *c, jv x, int64_t prec, jv method) {
  if (!jv_is_num(x)) jctx_fail(c, WGLLM_ERR_INVALID_ARG, "round: '%s' is not a number", jv_type_name(x));
  const char *m = given(method) ? want_str(c, method, "round's method").s : "common";
  size_t ml = given(method) ? method.n : 6;
  if (name_is(m, ml, "common")) {
    if (x.kind != JV_FLOAT) return jv_int(x.i); /* round(int, n) is that int for n >= 0 */
    if (!isfinite(x.f)) return x;
    if (prec > 300) return x;
    if (prec < 0) {
      double p = pow(10.0, (double)-prec);
      return jv_float(nearbyint(x.f / p) * p);
    }
    char buf[400];
    snprintf(buf, sizeof buf, "%.*f", (int)prec, x.f); /* exact value, ties to even: as Python's round */
    return jv_float(strtod(buf, NULL));
  }
  bool ceil_ = name_is(m, ml, "ceil");
  if (!ceil_ && !name_is(m, ml, "floor"))
    jctx_fail(c, WGLLM_ERR_INVALID_ARG, "round: method must be common, ceil or floor");
  double p = pow(10.0, (double)prec), v = jv_num(x) * p;
  return jv_float((ceil_ ? ceil(v) : floor(v)) / p);
}

static jv indent(jctx *c, jv s, jv width, bool first, bool blank) {
  jv ind;
  if (width.kind == JV_STR)
    ind = width;
  else {
    int64_t w = given(width) ? want_int(c, width, "indent's width") : 4;
    if (w < 0) w = 0;
    if ((uint64_t)w > c->lim.max_output) jctx_fail(c, WGLLM_ERR_INVALID_ARG, "indent width past max_output");
    jsb *b = scratch(c);
    for (int64_t i = 0; i < w; i++)
      jsb_putc(c, b, ' ');
    ind = scratch_done(c, b);
  }
  /* Jinja appends a newline so that splitlines keeps a trailing empty line */
  jsb *t = scratch(c);
  jsb_put(c, t, s.s, s.n);
  jsb_putc(c, t, '\n');
  jv lines = splitlines(c, scratch_done(c, t), false);
  jsb *b = scratch(c);
  if (first) jsb_put(c, b, ind.s, ind.n);
  for (size_t i = 0; i < lines.l->n; i++) {
    jv l = lines.l->v[i];
    if (i) {
      jsb_putc(c, b, '\n');
      if (blank || l.n) jsb_put(c, b, ind.s, ind.n);
    }
    jsb_put(c, b, l.s, l.n);
  }
  return scratch_done(c, b);
}

static jv tojson(jctx *c, jv x, const jv *p) {
  jjson_opts o;
  memset(&o, 0, sizeof o);
  o.ensure_ascii = given(p[0]) && jv_truthy(p[0]);
  o.sort_keys = given(p[3]) && jv_truthy(p[3]);
  if (given(p[1]) && p[1].kind != JV_NONE) {
    if (p[1].kind == JV_STR) {
      o.indent = p[1].s;
      o.indent_n = p[1].n;
    } else {
      int64_t w = want_int(c, p[1], "tojson's indent");
      if (w < 0) w = 0;
      if (w > 4096) jctx_fail(c, WGLLM_ERR_UNSUPPORTED, "tojson indent over 4096");
      c->a->line = c->line;
      char *sp = ja_alloc(c->a, (size_t)w + 1);
      memset(sp, ' ', (size_t)w);
      o.indent = sp;
      o.indent_n = (size_t)w;
    }
  }
  /* json.dumps' defaults: ', ' between items without an indent, ',' with one; ': ' after keys */
  o.item_sep = o.indent ? "," : ", ";
  o.item_sep_n = o.indent ? 1 : 2;
  o.key_sep = ": ";
  o.key_sep_n = 2;
  if (given(p[2]) && p[2].kind != JV_NONE) {
    if (p[2].kind != JV_LIST || p[2].l->n != 2)
      jctx_fail(c, WGLLM_ERR_INVALID_ARG, "tojson's separators must be a pair of strings");
    jv a = want_str(c, p[2].l->v[0], "a separator"), b = want_str(c, p[2].l->v[1], "a separator");
    o.item_sep = a.s;
    o.item_sep_n = a.n;
    o.key_sep = b.s;
    o.key_sep_n = b.n;
  }
  jsb *b = scratch(c);
  jv_to_json(c, x, &o, b, 0);
  return scratch_done(c, b);
}

/* select / reject / selectattr / rejectattr */
static jv empty_gen(jctx *c) {
  jv g = jv_list(c, 1);
  g.sub = JL_GEN;
  return g;
}

static jv select_items(jctx *c, jv x, const jv *args, size_t na, bool attr, bool keep) {
  if (!jv_truthy(x)) return empty_gen(c); /* Jinja's "if value:" before it looks at anything */
  if (!iterable(x)) return deferred(c, keep ? (attr ? "selectattr" : "select") : (attr ? "rejectattr" : "reject"), x);
  jv items = jb_iter_list(c, x), out = jv_list(c, 0);
  size_t k = 0;
  jv a = jv_none();
  if (attr) {
    if (!na) jctx_fail(c, WGLLM_ERR_INVALID_ARG, "%s needs the attribute to test", keep ? "selectattr" : "rejectattr");
    a = args[0];
    k = 1;
  }
  int tid = -1;
  if (k < na) {
    jv t = want_str(c, args[k], "the test's name");
    tid = jb_test_id(t.s, t.n);
    if (tid < 0) jctx_fail(c, WGLLM_ERR_UNSUPPORTED, "unsupported test '%.*s'", (int)t.n, t.s);
    k++;
  }
  for (size_t i = 0; i < items.l->n; i++) {
    jv it = items.l->v[i], v = attr ? get_path(c, it, a) : it;
    bool r = tid < 0 ? jv_truthy(v) : jb_test(c, tid, v, args + k, na - k);
    if (r == keep) jl_push(c, out.l, it);
  }
  out.sub = JL_GEN;
  return out;
}

static jv aggregate(jctx *c, jv x, const jv *p, bool want_max) {
  jv items = jb_iter_list(c, x);
  bool cs = given(p[0]) && jv_truthy(p[0]);
  jv best = jv_undef(NULL, 0), bestk = best;
  for (size_t i = 0; i < items.l->n; i++) {
    jv it = items.l->v[i], k = fold_case(c, given(p[1]) ? get_path(c, it, p[1]) : it, cs);
    if (!i || (want_max ? jv_cmp(c, k, bestk, ">") > 0 : jv_cmp(c, k, bestk, "<") < 0)) {
      best = it;
      bestk = k;
    }
  }
  return best;
}

jv jb_filter(jctx *c, int id, jv x, const jv *args, size_t na, const jname *kwn, const jv *kwv, size_t nkw) {
  const char *name = filter_names[id];
  jv p[4];
#define BIND(...)                                                                                                      \
  do {                                                                                                                 \
    static const char *const params_[] = {__VA_ARGS__};                                                                \
    bind(c, "filter", name, params_, NELEM(params_), args, na, kwn, kwv, nkw, p);                                      \
  } while (0)
#define NOARGS() bind(c, "filter", name, NULL, 0, args, na, kwn, kwv, nkw, p)
  switch (id) {
  case F_ABS:
    NOARGS();
    if (x.kind == JV_FLOAT) return jv_float(fabs(x.f));
    if (x.kind == JV_INT || x.kind == JV_BOOL) {
      if (x.i == INT64_MIN) jctx_fail(c, WGLLM_ERR_UNSUPPORTED, "integer overflow in abs");
      return jv_int(x.i < 0 ? -x.i : x.i);
    }
    jctx_fail(c, WGLLM_ERR_INVALID_ARG, "bad operand type for abs(): '%s'", jv_type_name(x));
  case F_CAPITALIZE:
    NOARGS();
    return case_map(c, S(c, x), 3);
  case F_COUNT:
  case F_LENGTH:
    NOARGS();
    switch (x.kind) {
    case JV_UNDEF:
      return jv_int(0);
    case JV_STR:
      return jv_int((int64_t)utf8_count(x.s, x.n));
    case JV_LIST:
      if (x.sub == JL_GEN) break;
      return jv_int((int64_t)x.l->n);
    case JV_DICT:
      if (x.sub == JD_DICT) return jv_int((int64_t)x.d->n);
      break;
    case JV_LOOP:
      return jv_int((int64_t)x.lp->n);
    default:
      break;
    }
    jctx_fail(c, WGLLM_ERR_INVALID_ARG, "object of type '%s' has no len()", jv_type_name(x));
  case F_D:
  case F_DEFAULT:
    BIND("default_value", "boolean");
    if (x.kind == JV_UNDEF || (given(p[1]) && jv_truthy(p[1]) && !jv_truthy(x)))
      return given(p[0]) ? p[0] : jv_strn("", 0);
    return x;
  case F_DICTSORT: {
    BIND("case_sensitive", "by", "reverse");
    if (x.kind != JV_DICT || x.sub != JD_DICT)
      jctx_fail(c, WGLLM_ERR_INVALID_ARG, "dictsort: '%s' is not a mapping", jv_type_name(x));
    bool by_value = false;
    if (given(p[1])) {
      jv by = want_str(c, p[1], "dictsort's by");
      by_value = name_is(by.s, by.n, "value");
      if (!by_value && !name_is(by.s, by.n, "key"))
        jctx_fail(c, WGLLM_ERR_INVALID_ARG, "dictsort: you can only sort by either \"key\" or \"value\"");
    }
    jv items = jv_list(c, x.d->n);
    c->a->line = c->line;
    jv *keys = ja_alloc(c->a, (x.d->n + 1) * sizeof(jv));
    for (size_t i = 0; i < x.d->n; i++) {
      jv t = jv_tuple(c, 2);
      jl_push(c, t.l, x.d->k[i]);
      jl_push(c, t.l, x.d->v[i]);
      jl_push(c, items.l, t);
      keys[i] = fold_case(c, by_value ? x.d->v[i] : x.d->k[i], given(p[0]) && jv_truthy(p[0]));
    }
    return sorted(c, items, keys, given(p[2]) && jv_truthy(p[2]));
  }
  case F_E:
  case F_ESCAPE:
    NOARGS();
    return jb_escape(c, S(c, x));
  case F_FIRST:
  case F_LAST: {
    NOARGS();
    if (id == F_LAST && x.kind == JV_LIST && x.sub == JL_GEN)
      jctx_fail(c, WGLLM_ERR_INVALID_ARG, "'generator' object is not reversible (last)");
    jv items = jb_iter_list(c, x);
    if (!items.l->n) return jv_undef(NULL, 0);
    return items.l->v[id == F_FIRST ? 0 : items.l->n - 1];
  }
  case F_FLOAT: {
    BIND("default");
    jv def = given(p[0]) ? p[0] : jv_float(0.0);
    double d;
    if (x.kind == JV_UNDEF) fail_undef(c, x, "float"); /* Undefined.__float__ raises */
    if (x.kind == JV_FLOAT) return x;
    if (x.kind == JV_INT || x.kind == JV_BOOL) return jv_float((double)x.i);
    if (x.kind == JV_STR && parse_py_float(x, &d)) return jv_float(d);
    return def;
  }
  case F_INDENT: {
    BIND("width", "first", "blank");
    if (x.kind == JV_UNDEF) fail_undef(c, x, "indent");
    if (x.kind != JV_STR) jctx_fail(c, WGLLM_ERR_INVALID_ARG, "indent: expected a string, not %s", jv_type_name(x));
    return indent(c, x, p[0], given(p[1]) && jv_truthy(p[1]), given(p[2]) && jv_truthy(p[2]));
  }
  case F_INT: {
    BIND("default", "base");
    jv def = given(p[0]) ? p[0] : jv_int(0);
    int base = given(p[1]) ? (int)want_int(c, p[1], "int's base") : 10;
    int64_t v;
    double d;
    if (x.kind == JV_UNDEF) fail_undef(c, x, "int"); /* Undefined.__int__ raises */
    if (x.kind == JV_INT || x.kind == JV_BOOL) return jv_int(x.i);
    if (x.kind == JV_FLOAT) return isfinite(x.f) && fabs(x.f) < 9.2e18 ? jv_int((int64_t)x.f) : def;
    if (x.kind == JV_STR) {
      if ((base == 0 || (base >= 2 && base <= 36)) && parse_py_int(x, base, &v)) return jv_int(v);
      if (parse_py_float(x, &d) && isfinite(d) && fabs(d) < 9.2e18) return jv_int((int64_t)d);
    }
    return def;
  }
  case F_ITEMS:
    NOARGS();
    if (x.kind == JV_UNDEF) {
      jv g = jv_list(c, 1);
      g.sub = JL_GEN;
      return g;
    }
    if (x.kind != JV_DICT || x.sub != JD_DICT) return deferred(c, "items", x);
    {
      jv r = dict_method(c, M_ITEMS, x, NULL, 0, 0);
      r.sub = JL_GEN;
      return r;
    }
  case F_JOIN: {
    BIND("d", "attribute");
    jv items = jb_iter_list(c, x), sep = given(p[0]) ? S(c, p[0]) : jv_strn("", 0);
    jsb *b = scratch(c);
    for (size_t i = 0; i < items.l->n; i++) {
      jv it = given(p[1]) ? get_path(c, items.l->v[i], p[1]) : items.l->v[i];
      if (i) jsb_put(c, b, sep.s, sep.n);
      jv_to_str(c, it, b);
    }
    return scratch_done(c, b);
  }
  case F_LIST: {
    NOARGS();
    jv items = jb_iter_list(c, x), out = jv_list(c, items.l->n);
    for (size_t i = 0; i < items.l->n; i++)
      jl_push(c, out.l, items.l->v[i]);
    return out;
  }
  case F_LOWER:
    NOARGS();
    return case_map(c, S(c, x), 1);
  case F_UPPER:
    NOARGS();
    return case_map(c, S(c, x), 0);
  case F_MAP: {
    if (!jv_truthy(x)) return empty_gen(c); /* Jinja's "if value:" before it looks at anything */
    if (!iterable(x)) return deferred(c, "map", x);
    jv items = jb_iter_list(c, x), out = jv_list(c, items.l->n);
    jv attr = missing(), def = missing();
    for (size_t k = 0; k < nkw; k++) {
      if (name_is(kwn[k].s, kwn[k].n, "attribute"))
        attr = kwv[k];
      else if (name_is(kwn[k].s, kwn[k].n, "default"))
        def = kwv[k];
    }
    if (given(attr)) {
      if (na) jctx_fail(c, WGLLM_ERR_INVALID_ARG, "map: positional arguments with attribute=");
      for (size_t k = 0; k < nkw; k++)
        if (!name_is(kwn[k].s, kwn[k].n, "attribute") && !name_is(kwn[k].s, kwn[k].n, "default"))
          jctx_fail(c, WGLLM_ERR_INVALID_ARG, "map: unexpected keyword argument '%.*s'", (int)kwn[k].n, kwn[k].s);
      for (size_t i = 0; i < items.l->n; i++) {
        jv v = get_path(c, items.l->v[i], attr);
        jl_push(c, out.l, v.kind == JV_UNDEF && given(def) ? def : v);
      }
      out.sub = JL_GEN;
      return out;
    }
    if (!na) jctx_fail(c, WGLLM_ERR_INVALID_ARG, "map requires a filter argument");
    jv fn = want_str(c, args[0], "map's filter name");
    int fid = jb_filter_id(fn.s, fn.n);
    if (fid < 0) jctx_fail(c, WGLLM_ERR_UNSUPPORTED, "unsupported filter '%.*s' (in map)", (int)fn.n, fn.s);
    for (size_t i = 0; i < items.l->n; i++)
      jl_push(c, out.l, jb_filter(c, fid, items.l->v[i], args + 1, na - 1, kwn, kwv, nkw));
    out.sub = JL_GEN;
    return out;
  }
  case F_MAX:
  case F_MIN:
    BIND("case_sensitive", "attribute");
    return aggregate(c, x, p, id == F_MAX);
  case F_REJECT:
  case F_SELECT:
  case F_REJECTATTR:
  case F_SELECTATTR:
    if (nkw) jctx_fail(c, WGLLM_ERR_INVALID_ARG, "filter '%s' takes no keyword arguments", name);
    return select_items(c, x, args, na, id == F_SELECTATTR || id == F_REJECTATTR, id == F_SELECT || id == F_SELECTATTR);
  case F_REPLACE: {
    BIND("old", "new", "count");
    if (!given(p[0]) || !given(p[1])) jctx_fail(c, WGLLM_ERR_INVALID_ARG, "replace needs the old and the new text");
    int64_t cnt = given(p[2]) && p[2].kind != JV_NONE ? want_int(c, p[2], "replace's count") : -1;
    return replace(c, S(c, x), S(c, p[0]), S(c, p[1]), cnt);
  }
  case F_REVERSE: {
    NOARGS();
    if (x.kind == JV_STR) {
      size_t cnt;
      size_t *off = cp_offsets(c, x.s, x.n, &cnt);
      jsb *b = scratch(c);
      for (size_t i = cnt; i-- > 0;)
        jsb_put(c, b, x.s + off[i], off[i + 1] - off[i]);
      return scratch_done(c, b);
    }
    jv items = jb_iter_list(c, x), out = jv_list(c, items.l->n);
    for (size_t i = items.l->n; i-- > 0;)
      jl_push(c, out.l, items.l->v[i]);
    out.sub = JL_GEN; /* reversed() is an iterator */
    return out;
  }
  case F_ROUND:
    BIND("precision", "method");
    return py_round(c, x, given(p[0]) ? want_int(c, p[0], "round's precision") : 0, p[1]);
  case F_SAFE: {
    NOARGS();
    jv r = S(c, x);
    r.sub = JS_MARKUP;
    return r;
  }
  case F_SORT:
  case F_UNIQUE: {
    if (id == F_SORT)
      BIND("reverse", "case_sensitive", "attribute");
    else {
      BIND("case_sensitive", "attribute");
      p[2] = p[1];
      p[1] = p[0];
      p[0] = missing();
    }
    if (id == F_UNIQUE && !iterable(x)) return deferred(c, "unique", x);
    jv items = jb_iter_list(c, x);
    bool cs = given(p[1]) && jv_truthy(p[1]);
    c->a->line = c->line;
    jv *keys = ja_alloc(c->a, (items.l->n + 1) * sizeof(jv));
    for (size_t i = 0; i < items.l->n; i++)
      keys[i] = fold_case(c, given(p[2]) ? get_path(c, items.l->v[i], p[2]) : items.l->v[i], cs);
    if (id == F_SORT) return sorted(c, items, keys, given(p[0]) && jv_truthy(p[0]));
    jv out = jv_list(c, 0);
    for (size_t i = 0; i < items.l->n; i++) {
      if (!jv_hashable(keys[i])) { /* Python's set() fails, when the generator runs */
        jv g = deferred(c, "unique", x);
        char msg[96];
        snprintf(msg, sizeof msg, "unhashable type: '%s' (unique)", jv_type_name(keys[i]));
        g.l->err = ja_strdup(c->a, msg, strlen(msg));
        return g;
      }
      bool seen = false;
      for (size_t j = 0; j < i && !seen; j++)
        seen = jv_eq(keys[j], keys[i]);
      jctx_work(c, i);
      if (!seen) jl_push(c, out.l, items.l->v[i]);
    }
    out.sub = JL_GEN;
    return out;
  }
  case F_STRING:
    NOARGS();
    return S(c, x);
  case F_SUM: {
    BIND("attribute", "start");
    jv items = jb_iter_list(c, x), acc = given(p[1]) ? p[1] : jv_int(0);
    for (size_t i = 0; i < items.l->n; i++) {
      jv v = given(p[0]) ? get_path(c, items.l->v[i], p[0]) : items.l->v[i];
      if (!jv_is_num(acc) || !jv_is_num(v))
        jctx_fail(c, WGLLM_ERR_INVALID_ARG, "sum: unsupported operand type(s) for +: '%s' and '%s'", jv_type_name(acc),
                  jv_type_name(v));
      if (acc.kind != JV_FLOAT && v.kind != JV_FLOAT) {
        int64_t r;
        if (__builtin_add_overflow(acc.i, v.i, &r)) jctx_fail(c, WGLLM_ERR_UNSUPPORTED, "integer overflow in sum");
        acc = jv_int(r);
      } else
        acc = jv_float(jv_num(acc) + jv_num(v));
    }
    return acc;
  }
  case F_TITLE:
    NOARGS();
    return jinja_title(c, S(c, x));
  case F_TOJSON:
    BIND("ensure_ascii", "indent", "separators", "sort_keys");
    return tojson(c, x, p);
  case F_TRIM:
    BIND("chars");
    return strip(c, S(c, x), strip_chars_arg(c, p[0], "trim's characters"), 1, 1);
  case F_WORDCOUNT: {
    NOARGS();
    jv s = S(c, x);
    int64_t k = 0;
    bool in = false;
    for (size_t i = 0; i < s.n;) {
      uint32_t cp = utf8_next(s.s, s.n, &i);
      bool w = cp == '_' || (cp >= '0' && cp <= '9') || (cp < 0x80 && (cp | 32) >= 'a' && (cp | 32) <= 'z') ||
               (cp >= 0x80 && !uc_isspace(cp) && !(cp >= 0x2000 && cp <= 0x206f) && !(cp >= 0x3000 && cp <= 0x303f));
      if (w && !in) k++;
      in = w;
    }
    return jv_int(k);
  }
  }
#undef BIND
#undef NOARGS
  jctx_fail(c, WGLLM_ERR_INTERNAL, "filter %d has no implementation", id);
}

/* ---------- tests ---------- */
bool jb_test(jctx *c, int id, jv x, const jv *args, size_t na) {
  const char *tname = test_names[id];
  size_t want = id == T_DIVISIBLEBY || id == T_EQ || id == T_EQUALTO || id == T_NE || id == T_LT || id == T_LE ||
                        id == T_GT || id == T_GE || id == T_LESSTHAN || id == T_GREATERTHAN || id == T_IN ||
                        id == T_SAMEAS
                    ? 1
                    : 0;
  if (na != want) jctx_fail(c, WGLLM_ERR_INVALID_ARG, "test '%s' takes %zu argument(s) (%zu given)", tname, want, na);
  jv a = na ? args[0] : jv_none();
  switch (id) {
  case T_BOOLEAN:
    return x.kind == JV_BOOL;
  case T_CALLABLE:
    return x.kind == JV_FUNC;
  case T_DEFINED:
    return x.kind != JV_UNDEF;
  case T_UNDEFINED:
    return x.kind == JV_UNDEF;
  case T_DIVISIBLEBY: {
    if (!jv_is_num(x) || !jv_is_num(a))
      jctx_fail(c, WGLLM_ERR_INVALID_ARG, "divisibleby: unsupported operand types '%s' and '%s'", jv_type_name(x),
                jv_type_name(a));
    if (jv_num(a) == 0) jctx_fail(c, WGLLM_ERR_INVALID_ARG, "divisibleby: modulo by zero");
    if (x.kind != JV_FLOAT && a.kind != JV_FLOAT) return x.i % a.i == 0;
    return fmod(jv_num(x), jv_num(a)) == 0;
  }
  case T_EQ:
  case T_EQUALTO:
    return jv_eq(x, a);
  case T_NE:
    return !jv_eq(x, a);
  case T_LT:
  case T_LESSTHAN:
    return jv_cmp(c, x, a, "<") < 0;
  case T_LE:
    return jv_cmp(c, x, a, "<=") <= 0;
  case T_GT:
  case T_GREATERTHAN:
    return jv_cmp(c, x, a, ">") > 0;
  case T_GE:
    return jv_cmp(c, x, a, ">=") >= 0;
  case T_ESCAPED:
    return false;
  case T_EVEN:
  case T_ODD: {
    if (!jv_is_num(x)) jctx_fail(c, WGLLM_ERR_INVALID_ARG, "%s: '%s' is not a number", tname, jv_type_name(x));
    bool even = x.kind == JV_FLOAT ? fmod(x.f, 2.0) == 0 : x.i % 2 == 0;
    return id == T_EVEN ? even : !even && (x.kind != JV_FLOAT || fabs(fmod(x.f, 2.0)) == 1.0);
  }
  case T_FALSE:
    return x.kind == JV_BOOL && !x.i;
  case T_TRUE:
    return x.kind == JV_BOOL && x.i;
  case T_FILTER:
  case T_TEST: {
    if (x.kind != JV_STR) return false;
    jv s = x;
    return (id == T_FILTER ? jb_filter_id(s.s, s.n) : jb_test_id(s.s, s.n)) >= 0;
  }
  case T_FLOAT:
    return x.kind == JV_FLOAT;
  case T_INTEGER:
    return x.kind == JV_INT;
  case T_NUMBER:
    return jv_is_num(x);
  case T_IN:
    return jb_contains(c, a, x);
  case T_ITERABLE:
    return x.kind == JV_STR || x.kind == JV_LIST || x.kind == JV_UNDEF || x.kind == JV_LOOP ||
           (x.kind == JV_DICT && x.sub == JD_DICT);
  case T_SEQUENCE: /* len() and __getitem__: Undefined has both (its __getitem__ raises when called) */
    return x.kind == JV_STR || jl_plain(x) || x.kind == JV_UNDEF || (x.kind == JV_DICT && x.sub == JD_DICT);
  case T_MAPPING:
    return x.kind == JV_DICT && x.sub == JD_DICT;
  case T_LOWER:
    return str_pred(S(c, x), M_ISLOWER);
  case T_UPPER:
    return str_pred(S(c, x), M_ISUPPER);
  case T_NONE:
    return x.kind == JV_NONE;
  case T_STRING:
    return x.kind == JV_STR;
  case T_SAMEAS:
    if (x.kind != a.kind) return false;
    switch (x.kind) {
    case JV_UNDEF:
    case JV_NONE:
      return true;
    case JV_BOOL:
    case JV_INT:
      return x.i == a.i;
    case JV_FLOAT:
      return false;
    case JV_STR:
      return x.s == a.s && x.n == a.n;
    case JV_LIST:
      return x.l == a.l;
    case JV_DICT:
      return x.d == a.d;
    default:
      return jv_eq(x, a);
    }
  }
  jctx_fail(c, WGLLM_ERR_INTERNAL, "test %d has no implementation", id);
}
