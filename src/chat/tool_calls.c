/* Tool calls in a model's reply (see tool_calls.h): the format from the template, the reply parser as one state
   machine over a pending buffer (the whole-text parse is the stream fed the text in one piece, so the two agree by
   construction; the tests check every split) in which a JSON call commits at its header and its arguments stream
   out as they arrive, an incremental JSON validator (each byte read once, however the text arrives), the converters of
   Gemma's Python calls and Gemma 4's call syntax to JSON, harmony's messages (gpt-oss: a header naming the channel
   and maybe a recipient, then the body up to an end marker), the call ids and the call prefixes for tool_choice. */
#include "tool_calls.h"
#include <cjson/cJSON.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* ---------- text buffers ---------- */
typedef struct tb {
  char *s;
  size_t len, cap;
  int oom;
} tb;

static void tb_put(tb *b, const char *s, size_t n) {
  if (b->oom) return;
  if (b->len + n + 1 > b->cap) {
    size_t nc = b->cap ? b->cap : 64;
    while (nc < b->len + n + 1)
      nc *= 2;
    char *ns = realloc(b->s, nc);
    if (!ns) {
      b->oom = 1;
      return;
    }
    b->s = ns;
    b->cap = nc;
  }
  if (n) memcpy(b->s + b->len, s, n);
  b->len += n;
  b->s[b->len] = 0;
}
static void tb_str(tb *b, const char *s) { tb_put(b, s, strlen(s)); }
static void tb_chr(tb *b, char c) { tb_put(b, &c, 1); }
/* the buffer's text as a malloc'd string ("" when empty); NULL when out of memory */
static char *tb_take(tb *b) {
  if (!b->oom && !b->s) tb_put(b, "", 0);
  if (b->oom) {
    free(b->s);
    *b = (tb){0};
    return NULL;
  }
  char *s = b->s;
  *b = (tb){0};
  return s;
}

static int is_ws(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\v' || c == '\f'; }
static int is_digit(char c) { return c >= '0' && c <= '9'; }
static int is_alpha(char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z'); }
static int is_ident(char c) { return is_alpha(c) || is_digit(c) || c == '_'; }
static int is_name(char c) { return is_ident(c) || c == '-' || c == '.'; }
static size_t skip_ws(const char *s, size_t i, size_t n) {
  while (i < n && is_ws(s[i]))
    i++;
  return i;
}
#define NPOS ((size_t)-1)
static size_t find(const char *p, size_t n, const char *mk) {
  size_t ml = strlen(mk);
  for (size_t i = 0; i + ml <= n; i++)
    if (p[i] == mk[0] && !memcmp(p + i, mk, ml)) return i;
  return NPOS;
}
static int starts(const char *p, size_t n, const char *mk) {
  size_t ml = strlen(mk);
  return n >= ml && !memcmp(p, mk, ml);
}
/* p[0..n) is a proper prefix of mk (possibly empty): more text could still make mk */
static int is_prefix(const char *p, size_t n, const char *mk) { return n < strlen(mk) && !memcmp(p, mk, n); }
/* where the longest suffix of p[0..n) that is a proper prefix of mk starts (n when none) */
static size_t partial_at(const char *p, size_t n, const char *mk) {
  size_t ml = strlen(mk);
  for (size_t k = n > ml - 1 ? n - (ml - 1) : 0; k < n; k++)
    if (!memcmp(p + k, mk, n - k)) return k;
  return n;
}

/* ---------- incremental JSON validation (RFC 8259; the top-level value an object or a list) ---------- */
enum { JS_MORE, JS_DONE, JS_BAD };
enum { J_VALUE, J_ARR_FIRST, J_OBJ_FIRST, J_OBJ_KEY, J_COLON, J_AFTER, J_STR, J_ESC, J_HEX, J_NUM, J_LIT };
enum { N_MINUS, N_ZERO, N_INT, N_DOT, N_FRAC, N_E, N_ESIGN, N_EXP };
#define JS_MAX_DEPTH 128

typedef struct jscan {
  size_t pos; /* bytes of the value read */
  int depth;
  char stack[JS_MAX_DEPTH];
  unsigned char st, num, hex, in_key;
  const char *lit;
} jscan;

static void jscan_init(jscan *j) { memset(j, 0, sizeof *j); }

/* Reads one more byte of the value (its first must be '{' or '['). JS_DONE: the value ends with c. */
static int jscan_byte(jscan *j, char c) {
  if (j->pos == 0 && c != '{' && c != '[') return JS_BAD;
  int closing = 0;
again:
  switch (j->st) {
  case J_ARR_FIRST:
    if (is_ws(c)) break;
    if (c != ']') {
      j->st = J_VALUE;
      goto again;
    }
    closing = 1;
    break;
  case J_AFTER: {
    if (is_ws(c)) break;
    char top = j->stack[j->depth - 1];
    if (c == ',')
      j->st = top == '{' ? J_OBJ_KEY : J_VALUE;
    else if (c == (top == '{' ? '}' : ']'))
      closing = 1;
    else
      return JS_BAD;
    break;
  }
  case J_OBJ_FIRST:
  case J_OBJ_KEY:
    if (is_ws(c)) break;
    if (c == '}' && j->st == J_OBJ_FIRST) {
      closing = 1;
      break;
    }
    if (c != '"') return JS_BAD;
    j->st = J_STR;
    j->in_key = 1;
    break;
  case J_COLON:
    if (is_ws(c)) break;
    if (c != ':') return JS_BAD;
    j->st = J_VALUE;
    break;
  case J_VALUE:
    if (is_ws(c)) break;
    if (c == '{' || c == '[') {
      if (j->depth >= JS_MAX_DEPTH) return JS_BAD;
      j->stack[j->depth++] = c;
      j->st = c == '{' ? J_OBJ_FIRST : J_ARR_FIRST;
    } else if (c == '"') {
      j->st = J_STR;
      j->in_key = 0;
    } else if (c == '-' || is_digit(c)) {
      j->st = J_NUM;
      j->num = c == '-' ? N_MINUS : c == '0' ? N_ZERO : N_INT;
    } else if (c == 't' || c == 'f' || c == 'n') {
      j->st = J_LIT;
      j->lit = c == 't' ? "rue" : c == 'f' ? "alse" : "ull";
    } else
      return JS_BAD;
    break;
  case J_STR:
    if (c == '"')
      j->st = j->in_key ? J_COLON : J_AFTER;
    else if (c == '\\')
      j->st = J_ESC;
    else if ((unsigned char)c < 0x20)
      return JS_BAD;
    break;
  case J_ESC:
    if (c == 'u') {
      j->st = J_HEX;
      j->hex = 4;
    } else if (c && strchr("\"\\/bfnrt", c))
      j->st = J_STR;
    else
      return JS_BAD;
    break;
  case J_HEX:
    if (!(is_digit(c) || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F'))) return JS_BAD;
    if (--j->hex == 0) j->st = J_STR;
    break;
  case J_NUM: {
    int end = 0;
    switch (j->num) {
    case N_MINUS:
      if (!is_digit(c)) return JS_BAD;
      j->num = c == '0' ? N_ZERO : N_INT;
      break;
    case N_ZERO:
    case N_INT:
    case N_FRAC:
      if (is_digit(c) && j->num != N_ZERO)
        ;
      else if (c == '.' && j->num != N_FRAC)
        j->num = N_DOT;
      else if (c == 'e' || c == 'E')
        j->num = N_E;
      else if (is_digit(c))
        return JS_BAD; /* a leading zero */
      else
        end = 1;
      break;
    case N_DOT:
      if (!is_digit(c)) return JS_BAD;
      j->num = N_FRAC;
      break;
    case N_E:
      if (c == '+' || c == '-')
        j->num = N_ESIGN;
      else if (is_digit(c))
        j->num = N_EXP;
      else
        return JS_BAD;
      break;
    case N_ESIGN:
      if (!is_digit(c)) return JS_BAD;
      j->num = N_EXP;
      break;
    default: /* N_EXP */
      if (!is_digit(c)) end = 1;
      break;
    }
    if (end) { /* the number ended before c: read c after the value */
      j->st = J_AFTER;
      goto again;
    }
    break;
  }
  default: /* J_LIT */
    if (c != *j->lit) return JS_BAD;
    if (!*++j->lit) j->st = J_AFTER;
    break;
  }
  j->pos++;
  if (closing) {
    if (--j->depth == 0) return JS_DONE;
    j->st = J_AFTER;
  }
  return JS_MORE;
}

/* Reads s[j->pos..n) (s: the value's first byte). JS_DONE: the value ends at j->pos. */
static int jscan_run(jscan *j, const char *s, size_t n) {
  while (j->pos < n) {
    int r = jscan_byte(j, s[j->pos]);
    if (r != JS_MORE) return r;
  }
  return JS_MORE;
}

/* inside a string (its closing quote included): whitespace there is text */
static int jscan_in_string(const jscan *j) { return j->st == J_STR || j->st == J_ESC || j->st == J_HEX; }

/* s[0..n) is exactly one object or list, maybe with whitespace around it */
static int json_is_container(const char *s, size_t n) {
  size_t i = skip_ws(s, 0, n);
  jscan j;
  jscan_init(&j);
  if (i == n || jscan_run(&j, s + i, n - i) != JS_DONE) return 0;
  return skip_ws(s, i + j.pos, n) == n;
}

/* ---------- reading validated JSON text ---------- */
static size_t json_skip(const char *s, size_t i, size_t n) { /* i at a value's first byte: its end */
  if (s[i] == '"') {
    for (i++; i < n && s[i] != '"'; i++)
      if (s[i] == '\\') i++;
    return i + 1;
  }
  if (s[i] == '{' || s[i] == '[') {
    int depth = 0;
    for (; i < n; i++) {
      if (s[i] == '"')
        i = json_skip(s, i, n) - 1;
      else if (s[i] == '{' || s[i] == '[')
        depth++;
      else if ((s[i] == '}' || s[i] == ']') && --depth == 0)
        return i + 1;
    }
    return n;
  }
  while (i < n && !is_ws(s[i]) && s[i] != ',' && s[i] != '}' && s[i] != ']')
    i++;
  return i;
}

/* The members of a validated object text in turn: *i starts at 0; returns 0 after the last. Key and value spans
   (the key with its quotes). */
static int json_next_member(const char *s, size_t n, size_t *i, size_t *ks, size_t *ke, size_t *vs, size_t *ve) {
  size_t p = *i;
  p = skip_ws(s, p == 0 ? skip_ws(s, 0, n) + 1 : p, n); /* past '{' the first time */
  if (p >= n || s[p] == '}') return 0;
  if (s[p] == ',') p = skip_ws(s, p + 1, n);
  *ks = p;
  *ke = json_skip(s, p, n);
  p = skip_ws(s, *ke, n) + 1; /* ':' */
  *vs = skip_ws(s, p, n);
  *ve = json_skip(s, *vs, n);
  *i = *ve;
  return 1;
}

/* the value of key (compared with the key's text as written, no escapes) in a validated object */
static int json_member(const char *s, size_t n, const char *key, size_t *vs, size_t *ve) {
  size_t i = 0, ks, ke, kl = strlen(key);
  while (json_next_member(s, n, &i, &ks, &ke, vs, ve))
    if (ke - ks == kl + 2 && !memcmp(s + ks + 1, key, kl)) return 1;
  return 0;
}

/* a validated JSON string's value (malloc'd UTF-8), or NULL */
static char *json_string(const char *s, size_t n) {
  cJSON *v = cJSON_ParseWithLength(s, n);
  char *r = cJSON_IsString(v) ? strdup(v->valuestring) : NULL;
  cJSON_Delete(v);
  return r;
}

/* validated JSON text without the whitespace between tokens */
static void json_minify(const char *s, size_t n, tb *out) {
  size_t i = 0;
  while (i < n) {
    if (s[i] == '"') {
      size_t e = json_skip(s, i, n);
      tb_put(out, s + i, e - i);
      i = e;
    } else {
      if (!is_ws(s[i])) tb_chr(out, s[i]);
      i++;
    }
  }
}

/* a JSON string literal holding s[0..n) (UTF-8 as is; quotes, backslashes and control characters escaped) */
static void json_quote(const char *s, size_t n, tb *out) {
  tb_chr(out, '"');
  for (size_t i = 0; i < n; i++) {
    unsigned char c = (unsigned char)s[i];
    const char *e = c == '"'    ? "\\\""
                    : c == '\\' ? "\\\\"
                    : c == '\n' ? "\\n"
                    : c == '\r' ? "\\r"
                    : c == '\t' ? "\\t"
                    : c == '\b' ? "\\b"
                    : c == '\f' ? "\\f"
                                : NULL;
    if (e)
      tb_str(out, e);
    else if (c < 0x20) {
      static const char hx[] = "0123456789abcdef";
      char u[7] = {'\\', 'u', '0', '0', hx[c >> 4], hx[c & 15], 0};
      tb_str(out, u);
    } else
      tb_chr(out, (char)c);
  }
  tb_chr(out, '"');
}

/* ---------- calls found in a reply, before they are committed ---------- */
typedef struct found {
  char *name, *args;
} found;

typedef struct found_list {
  found *v;
  size_t n, cap;
  int oom;
} found_list;

static void found_clear(found_list *l) {
  for (size_t i = 0; i < l->n; i++) {
    free(l->v[i].name);
    free(l->v[i].args);
  }
  l->n = 0;
}

/* takes name and args (malloc'd; NULL means out of memory) */
static void found_add(found_list *l, char *name, char *args) {
  if (!name || !args) {
    free(name);
    free(args);
    l->oom = 1;
    return;
  }
  if (l->n == l->cap) {
    size_t nc = l->cap ? l->cap * 2 : 4;
    found *nv = realloc(l->v, nc * sizeof *nv);
    if (!nv) {
      free(name);
      free(args);
      l->oom = 1;
      return;
    }
    l->v = nv;
    l->cap = nc;
  }
  l->v[l->n++] = (found){name, args};
}

/* arguments given as a JSON object, or as a string holding one: the compact object (malloc'd), else NULL */
static char *args_from_json(const char *s, size_t n, int *oom) {
  tb out = {0};
  if (n && s[0] == '{') {
    json_minify(s, n, &out);
  } else if (n && s[0] == '"') {
    char *inner = json_string(s, n);
    if (!inner) return NULL;
    size_t il = strlen(inner), i = skip_ws(inner, 0, il);
    if (i < il && inner[i] == '{' && json_is_container(inner, il)) json_minify(inner, il, &out);
    free(inner);
    if (!out.s && !out.oom) return NULL;
  } else
    return NULL;
  char *r = tb_take(&out);
  if (!r) *oom = 1;
  return r;
}

/* a call object {"name": ..., "arguments" | "parameters": ...} (validated text) into l; 0 when not a call */
static int call_from_object(const char *s, size_t n, found_list *l) {
  size_t vs, ve, as, ae;
  if (s[0] != '{' || !json_member(s, n, "name", &vs, &ve) || s[vs] != '"') return 0;
  if (!json_member(s, n, "arguments", &as, &ae) && !json_member(s, n, "parameters", &as, &ae)) return 0;
  int oom = 0;
  char *args = args_from_json(s + as, ae - as, &oom);
  char *name = args || oom ? json_string(s + vs, ve - vs) : NULL;
  if (!oom && (!args || !name || !name[0])) {
    free(args);
    free(name);
    return 0;
  }
  found_add(l, name, args);
  return 1;
}

/* ---------- Gemma's Python calls: name(key=value, ...) to JSON ---------- */
typedef struct pyp {
  const char *s;
  size_t i, n;
  int depth;
} pyp;

static void py_ws(pyp *p) { p->i = skip_ws(p->s, p->i, p->n); }

static void put_utf8(tb *b, unsigned long cp) {
  char u[4];
  int k = cp < 0x80 ? 1 : cp < 0x800 ? 2 : cp < 0x10000 ? 3 : 4;
  if (k == 1)
    u[0] = (char)cp;
  else {
    for (int m = k - 1; m > 0; m--, cp >>= 6)
      u[m] = (char)(0x80 | (cp & 0x3f));
    u[0] = (char)((k == 2 ? 0xc0 : k == 3 ? 0xe0 : 0xf0) | cp);
  }
  tb_put(b, u, (size_t)k);
}

static int hexval(char c) {
  return is_digit(c) ? c - '0' : (c >= 'a' && c <= 'f') ? c - 'a' + 10 : (c >= 'A' && c <= 'F') ? c - 'A' + 10 : -1;
}

/* a Python string literal ('...' or "...", one line, the usual escapes) as a JSON string */
static int py_string(pyp *p, tb *out) {
  char q = p->s[p->i];
  if (p->i + 2 < p->n && p->s[p->i + 1] == q && p->s[p->i + 2] == q) return 0; /* triple quotes: not read */
  tb raw = {0};
  int ok = 0;
  for (p->i++; p->i < p->n; p->i++) {
    char c = p->s[p->i];
    if (c == q) {
      p->i++;
      ok = 1;
      break;
    }
    if (c == '\n') break;
    if (c != '\\') {
      tb_chr(&raw, c);
      continue;
    }
    if (++p->i >= p->n) break;
    char e = p->s[p->i];
    const char *simple = "\\\\''\"\"n\nt\tr\rb\bf\fv\va\a";
    const char *m = NULL;
    for (const char *t = simple; *t; t += 2)
      if (*t == e) m = t;
    if (m) {
      tb_chr(&raw, m[1]);
    } else if (e == '\n') {
      /* a line continuation: nothing */
    } else if (e >= '0' && e <= '7') {
      unsigned long cp = 0;
      for (int k = 0; k < 3 && p->i < p->n && p->s[p->i] >= '0' && p->s[p->i] <= '7'; k++, p->i++)
        cp = cp * 8 + (unsigned long)(p->s[p->i] - '0');
      p->i--;
      put_utf8(&raw, cp);
    } else if (e == 'x' || e == 'u' || e == 'U') {
      int k = e == 'x' ? 2 : e == 'u' ? 4 : 8;
      unsigned long cp = 0;
      for (int t = 0; t < k; t++) {
        int h = p->i + 1 < p->n ? hexval(p->s[++p->i]) : -1;
        if (h < 0) {
          free(raw.s);
          return 0;
        }
        cp = cp * 16 + (unsigned long)h;
      }
      if (cp > 0x10ffff || (cp >= 0xd800 && cp < 0xe000)) { /* a surrogate JSON cannot carry alone */
        free(raw.s);
        return 0;
      }
      put_utf8(&raw, cp);
    } else { /* an unknown escape keeps its backslash, as in Python */
      tb_chr(&raw, '\\');
      tb_chr(&raw, e);
    }
  }
  if (ok) json_quote(raw.s ? raw.s : "", raw.len, out);
  free(raw.s);
  return ok && !raw.oom;
}

/* a Python number (int or float, '_' between digits) as a JSON number */
static int py_number(pyp *p, tb *out) {
  size_t i = p->i, is;
  tb d = {0}, digits = {0};
  if (p->s[i] == '-' || p->s[i] == '+') {
    if (p->s[i] == '-') tb_chr(&d, '-');
    i++;
  }
  for (is = i; i < p->n && (is_digit(p->s[i]) || (p->s[i] == '_' && i > is)); i++)
    if (p->s[i] != '_') tb_chr(&digits, p->s[i]);
  size_t z = 0; /* JSON has no leading zeros */
  while (z + 1 < digits.len && digits.s[z] == '0')
    z++;
  int ok = 1, have_int = digits.len > 0;
  if (have_int)
    tb_put(&d, digits.s + z, digits.len - z);
  else
    tb_chr(&d, '0');
  free(digits.s);
  if (i < p->n && p->s[i] == '.') {
    tb_chr(&d, '.');
    int frac = 0;
    for (i++; i < p->n && is_digit(p->s[i]); i++, frac++)
      tb_chr(&d, p->s[i]);
    if (!frac) tb_chr(&d, '0');
    ok = frac || have_int;
  } else
    ok = have_int;
  if (ok && i < p->n && (p->s[i] == 'e' || p->s[i] == 'E')) {
    tb_chr(&d, 'e');
    i++;
    if (i < p->n && (p->s[i] == '+' || p->s[i] == '-')) tb_chr(&d, p->s[i++]);
    ok = i < p->n && is_digit(p->s[i]);
    for (; i < p->n && is_digit(p->s[i]); i++)
      tb_chr(&d, p->s[i]);
  }
  if (i < p->n && (is_ident(p->s[i]) || p->s[i] == '.')) ok = 0; /* 0x10, 1j, 1.2.3 */
  if (ok) {
    p->i = i;
    tb_put(out, d.s, d.len);
  }
  ok = ok && !d.oom;
  free(d.s);
  return ok;
}

static int py_value(pyp *p, tb *out);

/* [a, b], (a, b) or {k: v}: items up to the closing bracket, a trailing comma allowed */
static int py_items(pyp *p, tb *out, char close, int dict) {
  tb_chr(out, dict ? '{' : '[');
  p->i++;
  for (int first = 1;; first = 0) {
    py_ws(p);
    if (p->i < p->n && p->s[p->i] == close) break;
    if (!first) {
      if (p->i >= p->n || p->s[p->i] != ',') return 0;
      p->i++;
      py_ws(p);
      if (p->i < p->n && p->s[p->i] == close) break;
      tb_chr(out, ',');
    }
    if (dict) {
      if (p->i >= p->n || (p->s[p->i] != '"' && p->s[p->i] != '\'') || !py_string(p, out)) return 0;
      py_ws(p);
      if (p->i >= p->n || p->s[p->i] != ':') return 0;
      p->i++;
      tb_chr(out, ':');
    }
    if (!py_value(p, out)) return 0;
  }
  p->i++;
  tb_chr(out, dict ? '}' : ']');
  return 1;
}

static int py_value(pyp *p, tb *out) {
  py_ws(p);
  if (p->i >= p->n || ++p->depth > JS_MAX_DEPTH) return 0;
  char c = p->s[p->i];
  int ok;
  if (c == '"' || c == '\'')
    ok = py_string(p, out);
  else if (c == '[')
    ok = py_items(p, out, ']', 0);
  else if (c == '(')
    ok = py_items(p, out, ')', 0);
  else if (c == '{')
    ok = py_items(p, out, '}', 1);
  else if (c == '-' || c == '+' || c == '.' || is_digit(c))
    ok = py_number(p, out);
  else {
    static const char *const lit[3][2] = {{"True", "true"}, {"False", "false"}, {"None", "null"}};
    ok = 0;
    for (int k = 0; k < 3 && !ok; k++)
      if (starts(p->s + p->i, p->n - p->i, lit[k][0]) &&
          (p->i + strlen(lit[k][0]) >= p->n || !is_ident(p->s[p->i + strlen(lit[k][0])]))) {
        p->i += strlen(lit[k][0]);
        tb_str(out, lit[k][1]);
        ok = 1;
      }
  }
  p->depth--;
  return ok;
}

/* one call name(key=value, ...), maybe inside print(...), into l */
static int py_call(pyp *p, found_list *l) {
  py_ws(p);
  size_t ns = p->i;
  if (p->i >= p->n || !(is_alpha(p->s[p->i]) || p->s[p->i] == '_')) return 0;
  while (p->i < p->n && (is_ident(p->s[p->i]) || p->s[p->i] == '.'))
    p->i++;
  size_t ne = p->i;
  py_ws(p);
  if (p->i >= p->n || p->s[p->i] != '(') return 0;
  p->i++;
  if (ne - ns == 5 && !memcmp(p->s + ns, "print", 5)) { /* print(name(...)) */
    size_t save = p->i;
    py_ws(p);
    size_t k = p->i;
    while (k < p->n && (is_ident(p->s[k]) || p->s[k] == '.'))
      k++;
    k = skip_ws(p->s, k, p->n);
    if (k > p->i && k < p->n && p->s[k] == '(') {
      if (!py_call(p, l)) return 0;
      py_ws(p);
      if (p->i >= p->n || p->s[p->i] != ')') return 0;
      p->i++;
      return 1;
    }
    p->i = save;
  }
  tb args = {0};
  tb_chr(&args, '{');
  for (int first = 1;; first = 0) {
    py_ws(p);
    if (p->i < p->n && p->s[p->i] == ')') break;
    if (!first) {
      if (p->i >= p->n || p->s[p->i] != ',') goto bad;
      p->i++;
      py_ws(p);
      if (p->i < p->n && p->s[p->i] == ')') break;
      tb_chr(&args, ',');
    }
    size_t ks = p->i;
    if (p->i >= p->n || !(is_alpha(p->s[p->i]) || p->s[p->i] == '_')) goto bad; /* a positional argument */
    while (p->i < p->n && is_ident(p->s[p->i]))
      p->i++;
    size_t ke = p->i;
    py_ws(p);
    if (p->i + 1 >= p->n || p->s[p->i] != '=' || p->s[p->i + 1] == '=') goto bad;
    p->i++;
    json_quote(p->s + ks, ke - ks, &args);
    tb_chr(&args, ':');
    if (!py_value(p, &args)) goto bad;
  }
  p->i++;
  tb_chr(&args, '}');
  char *name = malloc(ne - ns + 1);
  if (name) {
    memcpy(name, p->s + ns, ne - ns);
    name[ne - ns] = 0;
  }
  found_add(l, name, tb_take(&args));
  return 1;
bad:
  free(args.s);
  return 0;
}

/* a ```tool_code block's text: one or more calls, separated by newlines (or ';') */
static int py_block(const char *s, size_t n, found_list *l) {
  pyp p = {s, 0, n, 0};
  int calls = 0;
  for (;;) {
    while (p.i < p.n && (is_ws(p.s[p.i]) || p.s[p.i] == ';'))
      p.i++;
    if (p.i >= p.n) return calls > 0;
    if (!py_call(&p, l)) return 0;
    calls++;
    while (p.i < p.n && (p.s[p.i] == ' ' || p.s[p.i] == '\t'))
      p.i++;
    if (p.i < p.n && p.s[p.i] != '\n' && p.s[p.i] != '\r' && p.s[p.i] != ';') return 0;
  }
}

/* ---------- Gemma 4's call syntax: call:name{key:value,...}, strings between <|"|> ---------- */
#define G4_Q "<|\"|>"

static int g4_value(pyp *p, tb *out);

static int g4_string(pyp *p, tb *out) { /* at <|"|>: up to the next one, as written */
  p->i += 5;
  size_t e = find(p->s + p->i, p->n - p->i, G4_Q);
  if (e == NPOS) return 0;
  json_quote(p->s + p->i, e, out);
  p->i += e + 5;
  return 1;
}

static int g4_items(pyp *p, tb *out, int dict) {
  char close = dict ? '}' : ']';
  tb_chr(out, dict ? '{' : '[');
  p->i++;
  for (int first = 1;; first = 0) {
    py_ws(p);
    if (p->i < p->n && p->s[p->i] == close) break;
    if (!first) {
      if (p->i >= p->n || p->s[p->i] != ',') return 0;
      p->i++;
      py_ws(p);
      tb_chr(out, ',');
    }
    if (dict) {
      if (starts(p->s + p->i, p->n - p->i, G4_Q)) {
        if (!g4_string(p, out)) return 0;
      } else {
        size_t ks = p->i;
        while (p->i < p->n && p->s[p->i] != ':' && p->s[p->i] != ',' && p->s[p->i] != close && p->s[p->i] != '"')
          p->i++;
        size_t ke = p->i;
        while (ke > ks && is_ws(p->s[ke - 1]))
          ke--;
        if (ke == ks) return 0;
        json_quote(p->s + ks, ke - ks, out);
      }
      py_ws(p);
      if (p->i >= p->n || p->s[p->i] != ':') return 0;
      p->i++;
      tb_chr(out, ':');
    }
    if (!g4_value(p, out)) return 0;
  }
  p->i++;
  tb_chr(out, close);
  return 1;
}

static int g4_value(pyp *p, tb *out) {
  py_ws(p);
  if (p->i >= p->n || ++p->depth > JS_MAX_DEPTH) return 0;
  char c = p->s[p->i];
  int ok = 0;
  if (starts(p->s + p->i, p->n - p->i, G4_Q))
    ok = g4_string(p, out);
  else if (c == '{' || c == '[')
    ok = g4_items(p, out, c == '{');
  else if (c == '"') { /* a JSON string */
    size_t e = p->i + 1;
    while (e < p->n && p->s[e] != '"')
      e += p->s[e] == '\\' ? 2 : 1;
    if (e < p->n) {
      tb_put(out, p->s + p->i, e + 1 - p->i);
      p->i = e + 1;
      ok = 1;
    }
  } else if (c == '-' || c == '+' || c == '.' || is_digit(c))
    ok = py_number(p, out);
  else {
    static const char *const lit[3] = {"true", "false", "null"};
    for (int k = 0; k < 3 && !ok; k++)
      if (starts(p->s + p->i, p->n - p->i, lit[k]) &&
          (p->i + strlen(lit[k]) >= p->n || !is_ident(p->s[p->i + strlen(lit[k])]))) {
        p->i += strlen(lit[k]);
        tb_str(out, lit[k]);
        ok = 1;
      }
  }
  p->depth--;
  return ok;
}

/* the text between <|tool_call> and <tool_call|> */
static int g4_call(const char *s, size_t n, found_list *l) {
  pyp p = {s, 0, n, 0};
  py_ws(&p);
  if (!starts(s + p.i, n - p.i, "call:")) return 0;
  p.i += 5;
  size_t ns = p.i;
  while (p.i < n && is_name(s[p.i]))
    p.i++;
  size_t ne = p.i;
  py_ws(&p);
  if (ne == ns || p.i >= n || s[p.i] != '{') return 0;
  tb args = {0};
  if (!g4_items(&p, &args, 1) || skip_ws(s, p.i, n) != n || args.oom || !json_is_container(args.s, args.len)) {
    int oom = args.oom;
    free(args.s);
    if (oom) l->oom = 1;
    return oom;
  }
  char *name = malloc(ne - ns + 1);
  if (name) {
    memcpy(name, s + ns, ne - ns);
    name[ne - ns] = 0;
  }
  found_add(l, name, tb_take(&args));
  return 1;
}

/* ---------- formats ---------- */
static const char *const format_names[] = {"none", "llama3_json", "hermes", "mistral", "gemma", "gemma4", "harmony"};
#define N_FORMATS (sizeof format_names / sizeof *format_names)

const char *chat_tool_format_name(chat_tool_format f) { return (unsigned)f < N_FORMATS ? format_names[f] : "none"; }

chat_tool_format chat_tool_format_detect(const char *t, int named) {
  if (named >= 0) /* chat.h's chat_template: none, llama3, chatml, gemma, llama2 */
    return named == 1   ? CHAT_TOOLS_LLAMA3_JSON
           : named == 2 ? CHAT_TOOLS_HERMES
           : named == 3 ? CHAT_TOOLS_GEMMA
                        : CHAT_TOOLS_NONE;
  if (!t) return CHAT_TOOLS_NONE;
  if (strstr(t, "<|channel|>")) return CHAT_TOOLS_HARMONY;
  if (strstr(t, "<|tool_call>")) return CHAT_TOOLS_GEMMA4;
  if (strstr(t, "<tool_call>")) return CHAT_TOOLS_HERMES;
  if (strstr(t, "[TOOL_CALLS]")) return CHAT_TOOLS_MISTRAL;
  if (strstr(t, "<|python_tag|>") ||
      (strstr(t, "<|start_header_id|>") && (strstr(t, "ipython") || strstr(t, "\"parameters\""))))
    return CHAT_TOOLS_LLAMA3_JSON;
  if (strstr(t, "tool_code")) return CHAT_TOOLS_GEMMA;
  return CHAT_TOOLS_NONE;
}

static const char *call_marker(chat_tool_format f) {
  switch (f) {
  case CHAT_TOOLS_HERMES:
    return "<tool_call>";
  case CHAT_TOOLS_MISTRAL:
    return "[TOOL_CALLS]";
  case CHAT_TOOLS_GEMMA:
    return "```tool_code";
  case CHAT_TOOLS_GEMMA4:
    return "<|tool_call>";
  default:
    return NULL;
  }
}

/* ---------- call ids ---------- */
static uint64_t splitmix(uint64_t *s) {
  uint64_t z = (*s += 0x9e3779b97f4a7c15ull);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

static uint64_t random_seed(const void *where) {
  static atomic_uint_fast64_t counter;
  uint64_t s = (uint64_t)time(NULL) * 0x100000001b3ull ^ (uint64_t)(uintptr_t)where;
  s ^= (uint64_t)atomic_fetch_add(&counter, 1) * 0xd1b54a32d192ed03ull;
  struct timespec ts;
  if (timespec_get(&ts, TIME_UTC)) s ^= (uint64_t)ts.tv_nsec << 20 ^ (uint64_t)ts.tv_sec;
  splitmix(&s);
  return s;
}

/* ---------- the stream ---------- */
enum { S_START, S_REASON, S_CONTENT_START, S_L3_BEGIN, S_PLAIN, S_TEXT, S_CALL, S_JCALL, S_AFTER_CALL };
/* harmony's states: a message's start (reply start, or after an end marker), its header up to <|message|>, its
   body, a call's body before its arguments commit */
enum { S_H_START = S_AFTER_CALL + 1, S_H_HEAD, S_H_BODY, S_H_CALL };
/* where a harmony body goes */
enum { H_CONTENT, H_REASONING };
enum { C_MORE, C_OK, C_FAIL };
/* the phases of a JSON call (S_JCALL): its header up to the arguments' '{' (or the whole object, when the name
   comes after the arguments); its arguments, streamed; the rest of the call object; between the objects of
   Mistral's list; Hermes' closing tag */
enum { JP_HEAD, JP_ARGS, JP_TAIL, JP_LIST, JP_CLOSE };

/* a call event of the delta being built (chat_tool_call_delta, owning its strings) */
typedef struct call_event {
  int index;
  char *id, *name; /* NULL but on the call's first event */
  tb args;         /* the fragment */
} call_event;

struct chat_reply_stream {
  chat_tool_format f;
  chat_reply_opts o;
  int state, finished, oom;
  tb buf; /* the text not yet consumed starts at head */
  size_t head;
  int r_started, skip_ws; /* reasoning has begun; drop whitespace at the start of content (after </think>) */
  int seam;               /* a call just ended: the whitespace after it is dropped unless text follows it */
  size_t content_total;   /* content bytes given over the reply */
  /* the call being read: offsets from head (nothing is consumed before a call commits) */
  size_t body_off, scan; /* past the marker; where Gemma's searches resume */
  int inq;               /* Gemma 4's scan is inside <|"|>...<|"|> */
  jscan js;
  found_list fl;
  /* a JSON call (S_JCALL), read a byte at a time by js: offsets from head */
  int jph;        /* JP_* */
  int cd;         /* js's depth inside the call object: 1 (an object), 2 (in Mistral's list), 0 (tekken) */
  size_t fed;     /* the next byte for js */
  size_t obj_off; /* the call object's '{' (while its header is read) */
  size_t key_s, key_e, val_s, name_s, name_e; /* the last key of the call object, its value, the "name" string */
  int name_keyed, name_str, have_name;        /* the first "name" member's value began, is a string, was read */
  int args_keyed;                             /* the first "arguments" / "parameters" member's value began */
  int block_calls;                            /* calls committed from this marker (or Llama's object) */
  /* harmony: the message being read */
  int h_role;   /* its header follows <|start|>: a role word ("assistant") opens it */
  int h_dest;   /* H_CONTENT or H_REASONING: where its body goes */
  int h_trim;   /* a call's arguments just ended: the whitespace after them is dropped */
  char *h_name; /* the recipient's function (S_H_CALL), malloc'd */
  /* this delta */
  tb content, reasoning;
  call_event *ev;
  size_t n_ev, cap_ev;
  chat_tool_call_delta *out; /* ev as the delta gives it */
  size_t cap_out;
  /* every id given so far, for uniqueness */
  char **ids;
  size_t n_ids, cap_ids;
  int next_index;
  uint64_t rng;
};

#define PEND(st) ((st)->buf.s ? (st)->buf.s + (st)->head : "")
#define PLEN(st) ((st)->buf.len - (st)->head)

static void consume(chat_reply_stream *st, size_t k) { st->head += k; }

static void emit_content(chat_reply_stream *st, const char *s, size_t n) {
  tb_put(&st->content, s, n);
  st->content_total += n;
}

static void emit_reasoning(chat_reply_stream *st, const char *s, size_t n) {
  size_t i = 0;
  if (!st->r_started) {
    i = skip_ws(s, 0, n);
    if (i < n) st->r_started = 1;
  }
  tb_put(&st->reasoning, s + i, n - i);
}

static char *new_id(chat_reply_stream *st) {
  static const char al[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789";
  char id[30];
  for (;;) { /* Mistral's templates take ids of exactly 9 letters and digits (its API's); OpenAI's "call_" + 24 */
    int mistral = st->f == CHAT_TOOLS_MISTRAL, head = mistral ? 0 : 5, len = mistral ? 9 : 24;
    memcpy(id, "call_", 5);
    for (int k = 0; k < len; k++)
      id[head + k] = al[splitmix(&st->rng) % 62];
    id[head + len] = 0;
    size_t i = 0;
    while (i < st->n_ids && strcmp(st->ids[i], id))
      i++;
    if (i == st->n_ids) break;
  }
  if (st->n_ids == st->cap_ids) {
    size_t nc = st->cap_ids ? st->cap_ids * 2 : 4;
    char **nv = realloc(st->ids, nc * sizeof *nv);
    if (!nv) return NULL;
    st->ids = nv;
    st->cap_ids = nc;
  }
  if (!(st->ids[st->n_ids] = strdup(id))) return NULL;
  st->n_ids++;
  return strdup(id);
}

static int name_allowed(const chat_reply_stream *st, const char *name) {
  if (!name[0]) return 0;
  if (!st->o.tool_names) return 1;
  for (size_t i = 0; i < st->o.n_tool_names; i++)
    if (st->o.tool_names[i] && !strcmp(st->o.tool_names[i], name)) return 1;
  return 0;
}

/* a new event in this delta (NULL when out of memory: st->oom set) */
static call_event *event_add(chat_reply_stream *st, int index) {
  if (st->n_ev == st->cap_ev) {
    size_t nc = st->cap_ev ? st->cap_ev * 2 : 4;
    call_event *nv = realloc(st->ev, nc * sizeof *nv);
    if (!nv) {
      st->oom = 1;
      return NULL;
    }
    st->ev = nv;
    st->cap_ev = nc;
  }
  call_event *e = &st->ev[st->n_ev++];
  *e = (call_event){index, NULL, NULL, {0}};
  return e;
}

/* A call committed: its first event, with id and name (takes name, malloc'd) and the arguments so far. 0 when out
   of memory. */
static int start_call(chat_reply_stream *st, char *name, const char *args, size_t n) {
  char *id = name ? new_id(st) : NULL;
  call_event *e = id ? event_add(st, st->next_index) : NULL;
  if (!e) {
    free(name);
    free(id);
    st->oom = 1;
    return 0;
  }
  st->next_index++;
  e->id = id;
  e->name = name;
  tb_put(&e->args, "", 0);
  tb_put(&e->args, args, n);
  return 1;
}

/* more of the last committed call's arguments: into its event of this delta (a new one when it has none) */
static tb *args_out(chat_reply_stream *st) {
  call_event *e = st->n_ev && st->ev[st->n_ev - 1].index == st->next_index - 1 ? &st->ev[st->n_ev - 1] : NULL;
  if (!e && (e = event_add(st, st->next_index - 1))) tb_put(&e->args, "", 0);
  return e ? &e->args : NULL;
}

/* the calls found whole (Gemma's, Gemma 4's, a JSON call naming its function after its arguments) are well-formed:
   commit them if every name is known (1), else drop them (0) */
static int commit_calls(chat_reply_stream *st) {
  found_list *l = &st->fl;
  if (l->oom) {
    st->oom = 1;
    found_clear(l);
    return 0;
  }
  for (size_t i = 0; i < l->n; i++)
    if (!name_allowed(st, l->v[i].name)) {
      found_clear(l);
      return 0;
    }
  for (size_t i = 0; i < l->n; i++) {
    char *name = l->v[i].name;
    l->v[i].name = NULL;
    if (!start_call(st, name, l->v[i].args, strlen(l->v[i].args))) {
      found_clear(l);
      return 0;
    }
  }
  found_clear(l);
  return 1;
}

/* Reads the Gemma or Gemma 4 call that starts at body_off (past the marker), whole. C_OK: the calls are in st->fl
   and the call text ends at *end. */
static int read_call(chat_reply_stream *st, const char *p, size_t n, int final, size_t *end) {
  switch (st->f) {
  case CHAT_TOOLS_GEMMA: { /* ```tool_code ... ``` */
    if (st->body_off == n) return C_MORE;
    if (!is_ws(p[st->body_off])) return C_FAIL; /* ```tool_codes */
    size_t from = st->scan > st->body_off ? st->scan : st->body_off;
    size_t c = find(p + from, n - from, "```");
    if (c == NPOS) {
      st->scan = n > st->body_off + 2 ? n - 2 : st->body_off;
      if (!final) return C_MORE;
      if (!py_block(p + st->body_off, n - st->body_off, &st->fl)) return C_FAIL; /* the closing fence is forgiven */
      *end = n;
      return C_OK;
    }
    c += from;
    if (!py_block(p + st->body_off, c - st->body_off, &st->fl)) return C_FAIL;
    *end = c + 3;
    return C_OK;
  }
  case CHAT_TOOLS_GEMMA4: { /* <|tool_call>call:name{...}<tool_call|>, <tool_call|> inside <|"|>...<|"|> is text */
    if (st->scan < st->body_off) st->scan = st->body_off;
    while (st->scan < n) {
      const char *q = p + st->scan;
      size_t left = n - st->scan;
      if (starts(q, left, G4_Q)) {
        st->inq = !st->inq;
        st->scan += 5;
        continue;
      }
      if (!st->inq && starts(q, left, "<tool_call|>")) {
        if (!g4_call(p + st->body_off, st->scan - st->body_off, &st->fl)) {
          found_clear(&st->fl);
          return C_FAIL;
        }
        *end = st->scan + 12;
        return C_OK;
      }
      if (!final && (is_prefix(q, left, G4_Q) || (!st->inq && is_prefix(q, left, "<tool_call|>")))) return C_MORE;
      st->scan++;
    }
    return final ? C_FAIL : C_MORE;
  }
  default:
    return C_FAIL;
  }
}

static void call_reset(chat_reply_stream *st) {
  st->scan = 0;
  st->inq = 0;
  found_clear(&st->fl);
}

/* ---------- JSON calls (LLAMA3_JSON, HERMES, MISTRAL), committed at their header and streamed ---------- */

/* starts reading a JSON call at p[at] ('{', or Mistral's '['; tekken's name[ARGS] is read by jcall_begin) */
static void jcall_setup(chat_reply_stream *st, size_t at, int cd, int phase) {
  jscan_init(&st->js);
  st->cd = cd;
  st->jph = phase;
  st->fed = st->obj_off = at;
  st->name_keyed = st->name_str = st->have_name = st->args_keyed = 0;
  st->block_calls = 0;
  st->state = S_JCALL;
}

/* What is not a call: with no call committed from this block, the marker is content and the text after it is read
   on (Llama: the rest of the reply is content); after one, the call has ended and the text from at is read after
   it. Always 1 (a step). */
static int jcall_fail(chat_reply_stream *st, size_t at) {
  if (st->block_calls) {
    consume(st, at);
    st->state = S_AFTER_CALL;
  } else if (st->f == CHAT_TOOLS_LLAMA3_JSON) {
    st->state = S_PLAIN;
  } else {
    emit_content(st, PEND(st), st->body_off);
    consume(st, st->body_off);
    st->state = S_TEXT;
  }
  return 1;
}

/* the JSON string p[s..e) (quotes included) as written is key */
static int key_is(const char *p, size_t s, size_t e, const char *key) {
  size_t kl = strlen(key);
  return e - s == kl + 2 && !memcmp(p + s + 1, key, kl);
}

/* the byte count of p[0..n) up to an incomplete UTF-8 character at its end (held back while more may come) */
static size_t utf8_whole(const char *p, size_t n) {
  size_t i = n, k = 0;
  while (i > 0 && k < 3 && ((unsigned char)p[i - 1] & 0xc0) == 0x80) {
    i--;
    k++;
  }
  if (i == 0) return n;
  unsigned char c = (unsigned char)p[i - 1];
  size_t need = c >= 0xf0 ? 4 : c >= 0xe0 ? 3 : c >= 0xc0 ? 2 : 1;
  return need > k + 1 ? i - 1 : n;
}

/* the call object's header, a byte at a time: commits the call at its arguments' '{' when "name" came before them
   (a non-empty string naming a known function), else reads the object whole and commits it at its end */
static int jcall_head(chat_reply_stream *st, const char *p, size_t n, int final) {
  int cd = st->cd;
  while (st->fed < n) {
    size_t off = st->fed;
    unsigned char pst = st->js.st, pkey = st->js.in_key;
    int pd = st->js.depth, r = jscan_byte(&st->js, p[off]);
    st->fed++;
    if (r == JS_BAD) return jcall_fail(st, st->obj_off);
    int d = st->js.depth, s = st->js.st;
    if (pd == cd && d == cd) { /* the call object's keys and string values */
      if (s == J_STR && pst != J_STR && pst != J_ESC && pst != J_HEX) {
        if (st->js.in_key)
          st->key_s = off;
        else
          st->val_s = off;
      } else if (pst == J_STR && pkey && s == J_COLON)
        st->key_e = off + 1;
      else if (pst == J_STR && !pkey && s == J_AFTER && st->name_str && !st->have_name) { /* the name's string */
        st->name_s = st->val_s;
        st->name_e = off + 1;
        st->have_name = 1;
      }
    }
    if (pd == cd && pst == J_VALUE && (s != J_VALUE || d != pd)) { /* a member's value begins */
      if (!st->name_keyed && key_is(p, st->key_s, st->key_e, "name")) {
        st->name_keyed = 1;
        st->name_str = p[off] == '"';
      } else if (!st->args_keyed &&
                 (key_is(p, st->key_s, st->key_e, "arguments") || key_is(p, st->key_s, st->key_e, "parameters"))) {
        st->args_keyed = 1; /* an object after the name commits the call */
        if (p[off] == '{' && st->have_name) {
          char *name = json_string(p + st->name_s, st->name_e - st->name_s);
          if (!name) { /* the string is valid: out of memory */
            st->oom = 1;
            return 0;
          }
          if (!name_allowed(st, name)) {
            free(name);
            return jcall_fail(st, st->obj_off);
          }
          if (!start_call(st, name, "{", 1)) return 0;
          consume(st, off + 1);
          st->fed = 0;
          st->block_calls++;
          st->jph = JP_ARGS;
          return 1;
        }
      }
    }
    if (d == cd - 1) { /* the object ended before it could commit: a call whole, or not one */
      size_t e = off + 1;
      if (!call_from_object(p + st->obj_off, e - st->obj_off, &st->fl) || !commit_calls(st)) {
        found_clear(&st->fl);
        return st->oom ? 0 : jcall_fail(st, st->obj_off);
      }
      consume(st, e);
      st->fed = 0;
      st->block_calls++;
      st->jph = cd == 2 ? JP_LIST : JP_CLOSE;
      if (st->f == CHAT_TOOLS_LLAMA3_JSON) st->state = S_AFTER_CALL;
      return 1;
    }
  }
  return final ? jcall_fail(st, st->obj_off) : 0;
}

/* the committed call's arguments as they arrive, without the whitespace between tokens; they end where their braces
   balance, before a byte that is not JSON (which is read after the call), or with the reply */
static int jcall_args(chat_reply_stream *st, const char *p, size_t n, int final) {
  size_t lim = final ? n : utf8_whole(p, n), i = 0;
  tb *out = lim ? args_out(st) : NULL;
  if (lim && !out) return 0;
  for (; i < lim; i++) {
    int in_str = jscan_in_string(&st->js), r = jscan_byte(&st->js, p[i]);
    if (r == JS_BAD) { /* malformed: the call ends here */
      consume(st, i);
      st->state = S_AFTER_CALL;
      return 1;
    }
    if (in_str || !is_ws(p[i])) tb_chr(out, p[i]);
    if (st->js.depth == st->cd) { /* the arguments' closing brace */
      consume(st, i + 1);
      if (st->cd == 0)
        st->state = S_AFTER_CALL;
      else
        st->jph = JP_TAIL;
      return 1;
    }
  }
  consume(st, lim);
  if (final) st->state = S_AFTER_CALL; /* cut off: the arguments are what was written */
  return lim > 0 || final;
}

/* One move over a JSON call (S_JCALL); 0 when it must wait for more text. */
static int jcall_step(chat_reply_stream *st, const char *p, size_t n, int final) {
  size_t i;
  switch (st->jph) {
  case JP_HEAD:
    return jcall_head(st, p, n, final);
  case JP_ARGS:
    return jcall_args(st, p, n, final);
  case JP_TAIL: /* the call object's other members (Mistral's "id") up to its '}': dropped */
    for (i = 0; i < n; i++) {
      int r = jscan_byte(&st->js, p[i]);
      if (r == JS_BAD) { /* the object breaks: the call has ended, the text from here is read after it */
        consume(st, i);
        st->state = S_AFTER_CALL;
        return 1;
      }
      if (st->js.depth == st->cd - 1) {
        consume(st, i + 1);
        st->jph = st->cd == 2 ? JP_LIST : JP_CLOSE;
        if (st->f == CHAT_TOOLS_LLAMA3_JSON) st->state = S_AFTER_CALL;
        return 1;
      }
    }
    consume(st, n);
    if (final) st->state = S_AFTER_CALL;
    return 1;
  case JP_LIST: /* Mistral's [...]: ',' and whitespace up to the next call object, or the ']' */
    while (st->fed < n) {
      size_t off = st->fed;
      unsigned char pst = st->js.st;
      int pd = st->js.depth, r = jscan_byte(&st->js, p[off]);
      char c = p[off];
      st->fed++;
      if (r == JS_BAD) return jcall_fail(st, off);
      if (pd == 1 && (pst == J_VALUE || pst == J_ARR_FIRST) && !is_ws(c) && c != ']') {
        if (c != '{') return jcall_fail(st, off); /* an item that is not an object */
        st->obj_off = off;
        st->name_keyed = st->name_str = st->have_name = st->args_keyed = 0;
        st->jph = JP_HEAD;
        return 1;
      }
      if (r == JS_DONE) { /* the list's ']' (an empty list is not a call) */
        if (!st->block_calls) return jcall_fail(st, 0);
        consume(st, off + 1);
        st->state = S_AFTER_CALL;
        return 1;
      }
    }
    if (st->block_calls) { /* after a call the list's punctuation is dropped as it comes */
      consume(st, st->fed);
      st->fed = 0;
    }
    return final ? jcall_fail(st, st->fed) : 0;
  default: /* JP_CLOSE: Hermes' </tool_call> (forgiven at the very end); else the call ended at its object */
    i = skip_ws(p, 0, n);
    if (starts(p + i, n - i, "</tool_call>")) {
      consume(st, i + 12);
      st->state = S_AFTER_CALL;
      return 1;
    }
    if (!final && (i == n || is_prefix(p + i, n - i, "</tool_call>"))) return 0;
    st->state = S_AFTER_CALL;
    return 1;
  }
}

/* S_CALL for HERMES and MISTRAL: the text after the marker up to a call object, Mistral's list, or tekken's
   name[CALL_ID]id[ARGS]{ (which commits the call) */
static int jcall_begin(chat_reply_stream *st, const char *p, size_t n, int final) {
  size_t i = skip_ws(p, st->body_off, n);
  st->block_calls = 0;
  if (i == n) return final ? jcall_fail(st, 0) : 0;
  if (st->f == CHAT_TOOLS_HERMES || p[i] == '[') { /* Hermes: an object; Mistral: a list of them */
    if (p[i] != (st->f == CHAT_TOOLS_HERMES ? '{' : '[')) return jcall_fail(st, 0);
    int list = p[i] == '[';
    jcall_setup(st, i, list ? 2 : 1, list ? JP_LIST : JP_HEAD);
    return 1;
  }
  size_t ns = i; /* name[ARGS]{...}, maybe name[CALL_ID]id[ARGS]{...} */
  while (i < n && is_name(p[i]))
    i++;
  if (i == ns) return jcall_fail(st, 0);
  size_t ne = i;
  if (i == n) return final ? jcall_fail(st, 0) : 0;
  if (starts(p + i, n - i, "[CALL_ID]")) {
    i += 9;
    while (i < n && is_name(p[i]))
      i++;
  } else if (is_prefix(p + i, n - i, "[CALL_ID]") && !is_prefix(p + i, n - i, "[ARGS]"))
    return final ? jcall_fail(st, 0) : 0;
  if (!starts(p + i, n - i, "[ARGS]")) return !final && is_prefix(p + i, n - i, "[ARGS]") ? 0 : jcall_fail(st, 0);
  i = skip_ws(p, i + 6, n);
  if (i == n) return final ? jcall_fail(st, 0) : 0;
  if (p[i] != '{') return jcall_fail(st, 0);
  char *name = malloc(ne - ns + 1);
  if (!name) {
    st->oom = 1;
    return 0;
  }
  memcpy(name, p + ns, ne - ns);
  name[ne - ns] = 0;
  if (!name_allowed(st, name)) {
    free(name);
    return jcall_fail(st, 0);
  }
  if (!start_call(st, name, "", 0)) return 0;
  consume(st, i);
  jcall_setup(st, 0, 0, JP_ARGS);
  st->block_calls = 1;
  return 1;
}

/* ---------- harmony (gpt-oss): messages of a header, <|message|> and a body ---------- */
#define H_MSG "<|message|>"
#define H_CHAN "<|channel|>"
#define H_CONSTRAIN "<|constrain|>"
#define H_HEAD_MAX 256 /* a header is <|channel|>NAME, maybe " to=RECIPIENT" and a content type: not longer */

/* what ends a body (the message's end, a call's, the reply's, or the next message's start; the last two, markers
   of a header, are dropped where they stray into a body); and a header */
static const char *const h_body_ends[] = {"<|end|>", "<|return|>", "<|call|>", "<|start|>", H_CHAN, H_MSG, H_CONSTRAIN};
static const char *const h_head_ends[] = {H_MSG, "<|end|>", "<|return|>", "<|call|>", "<|start|>"};
#define H_NENDS 5      /* the ends of a body and of a header */
#define H_NBODY_MARK 7 /* the ends of a body and the header's markers that stray into one */

/* the first of the markers mk[0..H_NENDS) complete in p[0..n) (each starts with "<|" and holds no other): its
   offset, or NPOS */
static size_t find_any(const char *p, size_t n, const char *const *mk, size_t *which) {
  size_t nm = mk == h_body_ends ? H_NBODY_MARK : H_NENDS;
  for (size_t i = 0; i + 1 < n; i++)
    if (p[i] == '<' && p[i + 1] == '|')
      for (size_t k = 0; k < nm; k++)
        if (starts(p + i, n - i, mk[k])) {
          *which = k;
          return i;
        }
  return NPOS;
}

/* where text at the end of p[0..n) that may still become one of the markers starts (n when none) */
static size_t partial_any(const char *p, size_t n, const char *const *mk) {
  size_t h = n, nm = mk == h_body_ends ? H_NBODY_MARK : H_NENDS;
  for (size_t k = 0; k < nm; k++) {
    size_t a = partial_at(p, n, mk[k]);
    if (a < h) h = a;
  }
  return h;
}

/* a word of a header: up to whitespace or a marker */
static size_t h_word(const char *p, size_t i, size_t m) {
  while (i < m && !is_ws(p[i]) && p[i] != '<')
    i++;
  return i;
}

/* A message's header p[0..m) (the text before <|message|>): the analysis channel sends its body to reasoning, any
   other (final, commentary, none) to content; a recipient (" to=functions.NAME", before or after the channel) makes
   the body a call of NAME (S_H_CALL; a body that is not one goes by the channel). 0 when out of memory. */
static int h_header(chat_reply_stream *st, const char *p, size_t m) {
  size_t i = st->h_role ? h_word(p, 0, m) : 0; /* the role: "assistant" */
  size_t c = find(p + i, m - i, H_CHAN), cs = 0, ce = 0, ts = 0, te = 0;
  if (c != NPOS) {
    cs = i + c + strlen(H_CHAN);
    ce = h_word(p, cs, m);
  }
  for (size_t k = i; k + 3 <= m; k++)
    if (!memcmp(p + k, "to=", 3) && (k == 0 || is_ws(p[k - 1]) || p[k - 1] == '>')) {
      ts = k + 3;
      te = h_word(p, ts, m);
      break;
    }
  free(st->h_name);
  st->h_name = NULL;
  if (te > ts) {
    if (te - ts > 10 && !memcmp(p + ts, "functions.", 10)) ts += 10;
    if (!(st->h_name = malloc(te - ts + 1))) {
      st->oom = 1;
      return 0;
    }
    memcpy(st->h_name, p + ts, te - ts);
    st->h_name[te - ts] = 0;
    st->scan = 0;
  }
  st->h_dest = ce - cs == 8 && !memcmp(p + cs, "analysis", 8) ? H_REASONING : H_CONTENT;
  st->state = st->h_name ? S_H_CALL : S_H_BODY;
  return 1;
}

/* arguments given as one JSON string holding an object (what gpt-oss's template writes for string arguments):
   the compact object (malloc'd), else NULL (*oom set when out of memory) */
static char *h_string_args(const char *s, size_t n, int *oom) {
  const char *end = NULL;
  cJSON *v = cJSON_ParseWithLengthOpts(s, n, &end, 0);
  char *r = NULL;
  if (cJSON_IsString(v) && end == s + n) {
    const char *in = v->valuestring;
    size_t il = strlen(in), i = skip_ws(in, 0, il);
    if (i < il && in[i] == '{' && json_is_container(in, il)) {
      tb out = {0};
      json_minify(in, il, &out);
      if (!(r = tb_take(&out))) *oom = 1;
    }
  }
  cJSON_Delete(v);
  return r;
}

/* One move over a harmony reply; 0 when it must wait for more text. */
static int harmony_step(chat_reply_stream *st, const char *p, size_t n, int final) {
  size_t e, h, k, i;
  switch (st->state) {
  case S_H_START: { /* a message starts: <|start|>ROLE..., a header, a stray end marker, or text without a header */
    static const char *const open[] = {
        "<|start|>", H_CHAN, H_CONSTRAIN, " to=", "to=", H_MSG, "<|end|>", "<|return|>", "<|call|>"};
    for (k = 0; k < sizeof open / sizeof *open; k++)
      if (starts(p, n, open[k])) {
        if (k == 0 || k >= 5) consume(st, strlen(open[k])); /* <|start|>, <|message|>, an end: dropped */
        st->h_role = k == 0;
        st->h_dest = H_CONTENT;
        st->state = k <= 4 ? S_H_HEAD : k == 5 ? S_H_BODY : S_H_START;
        return 1;
      }
    if (!final)
      for (k = 0; k < sizeof open / sizeof *open; k++)
        if (is_prefix(p, n, open[k])) return 0;
    st->h_dest = H_CONTENT; /* no header: content */
    st->state = S_H_BODY;
    return 1;
  }
  case S_H_HEAD: { /* up to <|message|>, within H_HEAD_MAX bytes */
    size_t w = n < H_HEAD_MAX + strlen(H_MSG) ? n : H_HEAD_MAX + strlen(H_MSG);
    e = find_any(p, w, h_head_ends, &k);
    if (e != NPOS && e <= H_HEAD_MAX) {
      if (k) { /* an end before <|message|>: the header had no body, dropped */
        consume(st, e);
        st->state = S_H_START;
        return 1;
      }
      if (!h_header(st, p, e)) return 0;
      consume(st, e + strlen(H_MSG));
      return 1;
    }
    if (e != NPOS || n >= H_HEAD_MAX + strlen(H_MSG)) { /* not a header: content, without its opening marker */
      consume(st, starts(p, n, H_CHAN) ? strlen(H_CHAN) : starts(p, n, H_CONSTRAIN) ? strlen(H_CONSTRAIN) : 0);
      st->h_dest = H_CONTENT;
      st->state = S_H_BODY;
      return 1;
    }
    if (!final) return 0;
    consume(st, n); /* the reply ended inside a header */
    return 1;
  }
  case S_H_BODY: /* up to an end marker: content or reasoning as it comes */
    if (st->h_trim) {
      i = skip_ws(p, 0, n);
      consume(st, i);
      if (i == n) return 0;
      st->h_trim = 0;
      return 1;
    }
    e = find_any(p, n, h_body_ends, &k);
    h = e != NPOS ? e : final ? n : partial_any(p, n, h_body_ends);
    if (st->h_dest == H_REASONING)
      tb_put(&st->reasoning, p, h);
    else
      emit_content(st, p, h);
    consume(st, h);
    if (e != NPOS && k >= H_NENDS) /* a header's marker astray: dropped, the body goes on */
      consume(st, strlen(h_body_ends[k]));
    else if (e != NPOS)
      st->state = S_H_START; /* which reads the marker */
    return h > 0 || e != NPOS;
  default: { /* S_H_CALL: a message to a function: its body a JSON object (committed at its '{'), or a string */
    i = skip_ws(p, 0, n);
    if (i == n && !final) return 0;
    int known = name_allowed(st, st->h_name);
    if (i < n && p[i] == '{' && known) {
      char *name = st->h_name;
      st->h_name = NULL;
      if (!start_call(st, name, "", 0)) return 0;
      consume(st, i);
      jcall_setup(st, 0, 0, JP_ARGS);
      st->block_calls = 1;
      return 1;
    }
    if (i < n && p[i] == '"' && known) { /* taken whole at the body's end */
      size_t from = st->scan > i ? st->scan : i;
      e = find_any(p + from, n - from, h_body_ends, &k);
      if (e == NPOS && !final) {
        st->scan = partial_any(p, n, h_body_ends);
        return 0;
      }
      size_t end = e == NPOS ? n : from + e, te = end;
      while (te > i && is_ws(p[te - 1]))
        te--;
      int oom = 0;
      char *args = h_string_args(p + i, te - i, &oom);
      if (oom) {
        st->oom = 1;
        return 0;
      }
      if (args) {
        found_add(&st->fl, st->h_name, args);
        st->h_name = NULL;
        if (!commit_calls(st)) return 0; /* the name is known: only out of memory */
        consume(st, end);
        st->state = S_H_BODY;
        return 1;
      }
    }
    free(st->h_name); /* not a call: the body goes by its channel, as written */
    st->h_name = NULL;
    st->state = S_H_BODY;
    return 1;
  }
  }
}

/* One move of the state machine over the pending text; 0 when it must wait for more text (or, at the end, when
   everything is consumed). */
static int step(chat_reply_stream *st, int final) {
  const char *p = PEND(st);
  size_t n = PLEN(st), i, h, e;
  if (n == 0) return 0;
  switch (st->state) {
  case S_START:
    if (st->f == CHAT_TOOLS_HARMONY) { /* channels, not <think>: split whatever split_reasoning says */
      st->state = S_H_START;
      return 1;
    }
    if (!st->o.split_reasoning) {
      st->state = S_CONTENT_START;
      return 1;
    }
    i = skip_ws(p, 0, n);
    if (i == n && !final) return 0;
    if (starts(p + i, n - i, "<think>")) {
      consume(st, i + 7);
      st->state = S_REASON;
      return 1;
    }
    if (!final && is_prefix(p + i, n - i, "<think>")) return 0;
    st->state = st->o.thinking_open ? S_REASON : S_CONTENT_START;
    return 1;
  case S_REASON:
    if ((e = find(p, n, "</think>")) != NPOS) {
      h = e;
      while (h > 0 && is_ws(p[h - 1]))
        h--;
      emit_reasoning(st, p, h);
      consume(st, e + 8);
      st->state = S_CONTENT_START;
      st->skip_ws = 1;
      return 1;
    }
    h = final ? n : partial_at(p, n, "</think>");
    while (h > 0 && is_ws(p[h - 1]))
      h--;
    if (final) {
      emit_reasoning(st, p, h);
      consume(st, n);
      return 1;
    }
    if (h == 0) return 0;
    emit_reasoning(st, p, h);
    consume(st, h);
    return 1;
  case S_CONTENT_START:
    if (st->skip_ws) {
      i = skip_ws(p, 0, n);
      consume(st, i);
      if (i == n) return 0;
      st->skip_ws = 0;
    }
    st->state = st->f == CHAT_TOOLS_LLAMA3_JSON ? S_L3_BEGIN : S_TEXT;
    return 1;
  case S_L3_BEGIN: /* [ws][<|python_tag|>][ws]{ : maybe a call; anything else: the rest is content */
    i = skip_ws(p, 0, n);
    if (i < n && p[i] == '<') {
      if (starts(p + i, n - i, "<|python_tag|>"))
        i = skip_ws(p, i + 14, n);
      else if (is_prefix(p + i, n - i, "<|python_tag|>") && !final)
        return 0;
    }
    if (i == n && !final) return 0;
    if (i < n && p[i] == '{')
      jcall_setup(st, i, 1, JP_HEAD);
    else
      st->state = S_PLAIN;
    return 1;
  case S_JCALL:
    return jcall_step(st, p, n, final);
  case S_H_START:
  case S_H_HEAD:
  case S_H_BODY:
  case S_H_CALL:
    return harmony_step(st, p, n, final);
  case S_PLAIN:
    emit_content(st, p, n);
    consume(st, n);
    return 1;
  case S_AFTER_CALL:                   /* Llama: the whitespace and ';' after a call are dropped */
    if (st->f == CHAT_TOOLS_HARMONY) { /* the rest of the call's body goes by its channel, whitespace first dropped */
      st->h_trim = 1;
      st->state = S_H_BODY;
      return 1;
    }
    if (st->f != CHAT_TOOLS_LLAMA3_JSON) {
      st->seam = 1;
      st->state = S_TEXT;
      return 1;
    }
    for (i = 0; i < n && (is_ws(p[i]) || p[i] == ';'); i++)
      ;
    consume(st, i);
    if (i == n) return 0;
    st->state = S_L3_BEGIN;
    return 1;
  case S_TEXT: {
    const char *mk = call_marker(st->f);
    if (st->seam) { /* the whitespace after a call: dropped before the end or a call, kept between texts */
      i = skip_ws(p, 0, n);
      if (!final && (i == n || is_prefix(p + i, n - i, mk))) return 0;
      st->seam = 0;
      if (i == n || !st->content_total) consume(st, i); /* else it stays: dropped with a call, kept before text */
      return 1;
    }
    if (!mk) {
      emit_content(st, p, n);
      consume(st, n);
      return 1;
    }
    size_t m = find(p, n, mk);
    if (m != NPOS) { /* the whitespace before it is held with the call: dropped if it is one */
      h = m;
      while (h > 0 && is_ws(p[h - 1]))
        h--;
      emit_content(st, p, h);
      consume(st, h);
      call_reset(st);
      st->body_off = m - h + strlen(mk);
      st->state = S_CALL;
      return 1;
    }
    h = final ? n : partial_at(p, n, mk);
    if (!final)
      while (h > 0 && is_ws(p[h - 1]))
        h--;
    if (h == 0) return 0;
    emit_content(st, p, h);
    consume(st, h);
    return 1;
  }
  default: { /* S_CALL */
    if (st->f == CHAT_TOOLS_HERMES || st->f == CHAT_TOOLS_MISTRAL) return jcall_begin(st, p, n, final);
    int r = read_call(st, p, n, final, &e);
    if (r == C_MORE && !final) return 0;
    int ok = r == C_OK && commit_calls(st);
    call_reset(st);
    if (st->oom) return 0;
    if (ok) {
      consume(st, e);
      st->state = S_AFTER_CALL;
    } else { /* not a call: the marker (and the whitespace before it) is content, read on after it */
      emit_content(st, p, st->body_off);
      consume(st, st->body_off);
      st->state = S_TEXT;
    }
    return 1;
  }
  }
}

static void delta_reset(chat_reply_stream *st) {
  for (size_t i = 0; i < st->n_ev; i++) {
    free(st->ev[i].id);
    free(st->ev[i].name);
    free(st->ev[i].args.s);
  }
  st->n_ev = 0;
  st->content.len = st->reasoning.len = 0;
  if (st->content.s) st->content.s[0] = 0;
  if (st->reasoning.s) st->reasoning.s[0] = 0;
}

static wgllm_status delta_fill(chat_reply_stream *st, chat_reply_delta *d) {
  if (st->content.oom || st->reasoning.oom || st->buf.oom || st->fl.oom) st->oom = 1;
  for (size_t i = 0; i < st->n_ev; i++)
    if (st->ev[i].args.oom) st->oom = 1;
  if (!st->oom && st->n_ev > st->cap_out) {
    chat_tool_call_delta *nv = realloc(st->out, st->n_ev * sizeof *nv);
    if (nv) {
      st->out = nv;
      st->cap_out = st->n_ev;
    } else
      st->oom = 1;
  }
  if (st->oom) {
    delta_reset(st);
    *d = (chat_reply_delta){"", 0, "", 0, NULL, 0};
    return WGLLM_ERR_OUT_OF_MEMORY;
  }
  size_t k = 0;
  for (size_t i = 0; i < st->n_ev; i++) {
    const call_event *e = &st->ev[i];
    if (!e->id && !e->args.len) continue; /* only whitespace came */
    st->out[k++] = (chat_tool_call_delta){e->index, e->id, e->name, e->args.s ? e->args.s : "", e->args.len};
  }
  *d = (chat_reply_delta){st->content.s ? st->content.s : "",
                          st->content.len,
                          st->reasoning.s ? st->reasoning.s : "",
                          st->reasoning.len,
                          k ? st->out : NULL,
                          k};
  return WGLLM_OK;
}

chat_reply_stream *chat_reply_stream_create(chat_tool_format f, const chat_reply_opts *o) {
  chat_reply_stream *st = calloc(1, sizeof *st);
  if (!st) return NULL;
  st->f = (unsigned)f < N_FORMATS ? f : CHAT_TOOLS_NONE;
  if (o) st->o = *o;
  st->rng = st->o.id_seed ? st->o.id_seed : random_seed(st);
  return st;
}

static void run(chat_reply_stream *st, int final) {
  while (!st->oom && step(st, final))
    ;
  if (st->head > 4096 && st->head * 2 > st->buf.len) { /* keep the buffer to what is pending */
    memmove(st->buf.s, st->buf.s + st->head, st->buf.len - st->head + 1);
    st->buf.len -= st->head;
    st->head = 0;
  }
}

wgllm_status chat_reply_stream_push(chat_reply_stream *st, const char *piece, size_t n, chat_reply_delta *d) {
  if (!st || st->finished || (!piece && n)) {
    *d = (chat_reply_delta){"", 0, "", 0, NULL, 0};
    return st && st->oom ? WGLLM_ERR_OUT_OF_MEMORY : WGLLM_ERR_INVALID_ARG;
  }
  delta_reset(st);
  if (!st->oom) {
    tb_put(&st->buf, piece ? piece : "", n);
    if (st->buf.oom) st->oom = 1;
  }
  if (!st->oom) run(st, 0);
  return delta_fill(st, d);
}

wgllm_status chat_reply_stream_finish(chat_reply_stream *st, chat_reply_delta *d) {
  if (!st || st->finished) {
    *d = (chat_reply_delta){"", 0, "", 0, NULL, 0};
    return WGLLM_ERR_INVALID_ARG;
  }
  delta_reset(st);
  st->finished = 1;
  if (!st->oom) run(st, 1);
  if (!st->oom && PLEN(st)) { /* cannot happen: every state consumes its text at the end */
    tb_put(&st->content, PEND(st), PLEN(st));
    consume(st, PLEN(st));
  }
  return delta_fill(st, d);
}

void chat_reply_stream_free(chat_reply_stream *st) {
  if (!st) return;
  delta_reset(st);
  found_clear(&st->fl);
  free(st->fl.v);
  free(st->h_name);
  free(st->ev);
  free(st->out);
  for (size_t i = 0; i < st->n_ids; i++)
    free(st->ids[i]);
  free(st->ids);
  free(st->buf.s);
  free(st->content.s);
  free(st->reasoning.s);
  free(st);
}

/* ---------- the whole reply ---------- */
static int gather(chat_reply *r, tb *content, tb *reasoning, const chat_reply_delta *d) {
  tb_put(content, d->content, d->content_len);
  tb_put(reasoning, d->reasoning, d->reasoning_len);
  for (size_t i = 0; i < d->n_tool_calls; i++) {
    const chat_tool_call_delta *c = &d->tool_calls[i];
    if (c->id) { /* a call's first event */
      chat_tool_call *nv = realloc(r->tool_calls, (r->n_tool_calls + 1) * sizeof *nv);
      if (!nv) return 0;
      r->tool_calls = nv;
      chat_tool_call t = {c->index, strdup(c->id), strdup(c->name), strdup(c->arguments)};
      r->tool_calls[r->n_tool_calls++] = t;
      if (!t.id || !t.name || !t.arguments) return 0;
    } else if ((size_t)c->index < r->n_tool_calls) { /* more of its arguments */
      chat_tool_call *t = &r->tool_calls[c->index];
      size_t have = strlen(t->arguments);
      char *na = realloc(t->arguments, have + c->arguments_len + 1);
      if (!na) return 0;
      memcpy(na + have, c->arguments, c->arguments_len + 1);
      t->arguments = na;
    }
  }
  return 1;
}

wgllm_status chat_reply_parse(chat_tool_format f, const char *text, size_t len, const chat_reply_opts *o,
                              chat_reply *out, llm_err *err) {
  memset(out, 0, sizeof *out);
  llm_err_clear(err);
  if (!text && len) return llm_err_set(err, WGLLM_ERR_INVALID_ARG, "chat_reply_parse: no text for %zu bytes", len);
  chat_reply_stream *st = chat_reply_stream_create(f, o);
  tb content = {0}, reasoning = {0};
  chat_reply_delta d;
  int ok = st && !chat_reply_stream_push(st, text, len, &d) && gather(out, &content, &reasoning, &d) &&
           !chat_reply_stream_finish(st, &d) && gather(out, &content, &reasoning, &d);
  chat_reply_stream_free(st);
  out->content_len = content.len;
  out->reasoning_len = reasoning.len;
  out->content = tb_take(&content);
  out->reasoning = tb_take(&reasoning);
  if (!ok || !out->content || !out->reasoning) {
    chat_reply_free(out);
    return llm_err_set(err, WGLLM_ERR_OUT_OF_MEMORY, "out of host memory parsing a reply of %zu bytes", len);
  }
  return WGLLM_OK;
}

void chat_reply_free(chat_reply *r) {
  if (!r) return;
  for (size_t i = 0; i < r->n_tool_calls; i++) {
    free(r->tool_calls[i].id);
    free(r->tool_calls[i].name);
    free(r->tool_calls[i].arguments);
  }
  free(r->tool_calls);
  free(r->content);
  free(r->reasoning);
  memset(r, 0, sizeof *r);
}

/* ---------- prefixes and Python calls ---------- */
static int valid_name(const char *s, int python) {
  size_t n = strlen(s);
  if (n == 0 || n > 64 || (python && is_digit(s[0]))) return 0;
  for (size_t i = 0; i < n; i++)
    if (!(python ? is_ident(s[i]) : is_name(s[i]))) return 0;
  return 1;
}

wgllm_status chat_tool_prefix(chat_tool_format f, const char *name, char **out, llm_err *err) {
  static const char *const open[N_FORMATS][3] = {
      /* any function, before the name, after the name */
      {NULL, NULL, NULL},
      {"{\"name\": \"", "{\"name\": \"", "\", \"parameters\": "},
      {"<tool_call>\n{\"name\": \"", "<tool_call>\n{\"name\": \"", "\", \"arguments\": "},
      {"[TOOL_CALLS] [{\"name\": \"", "[TOOL_CALLS] [{\"name\": \"", "\", \"arguments\": "},
      {"```tool_code\n", "```tool_code\n", "("},
      {"<|tool_call>call:", "<|tool_call>call:", "{"},
      /* harmony: the prompt ends with <|start|>assistant; the recipient after the channel, the JSON constraint */
      {H_CHAN "commentary to=functions.", H_CHAN "commentary to=functions.", " " H_CONSTRAIN "json" H_MSG},
  };
  *out = NULL;
  llm_err_clear(err);
  if ((unsigned)f >= N_FORMATS || !open[f][0])
    return llm_err_set(err, WGLLM_ERR_UNSUPPORTED, "the tool-call format \"%s\" has no call to open",
                       chat_tool_format_name(f));
  if (name && !valid_name(name, f == CHAT_TOOLS_GEMMA))
    return llm_err_set(err, WGLLM_ERR_INVALID_ARG, "function name \"%.80s\" cannot open a %s call (1-64 of %s)", name,
                       chat_tool_format_name(f),
                       f == CHAT_TOOLS_GEMMA ? "letters, digits and '_', a Python identifier"
                                             : "letters, digits, '_', '-' and '.'");
  tb b = {0};
  if (name) {
    tb_str(&b, open[f][1]);
    tb_str(&b, name);
    tb_str(&b, open[f][2]);
  } else
    tb_str(&b, open[f][0]);
  if (!(*out = tb_take(&b))) return llm_err_set(err, WGLLM_ERR_OUT_OF_MEMORY, "out of host memory");
  return WGLLM_OK;
}

/* a validated JSON value as a Python literal */
static int json_to_python(const char *s, size_t n, tb *out) {
  size_t i = skip_ws(s, 0, n);
  if (i >= n) return 0;
  char c = s[i];
  if (c == '"') {
    char *v = json_string(s + i, n - i);
    if (!v) return 0;
    tb_chr(out, '"');
    for (const unsigned char *q = (const unsigned char *)v; *q; q++) {
      if (*q == '"' || *q == '\\') {
        tb_chr(out, '\\');
        tb_chr(out, (char)*q);
      } else if (*q == '\n')
        tb_str(out, "\\n");
      else if (*q == '\r')
        tb_str(out, "\\r");
      else if (*q == '\t')
        tb_str(out, "\\t");
      else if (*q < 0x20 || *q == 0x7f) {
        static const char hx[] = "0123456789abcdef";
        char e[5] = {'\\', 'x', hx[*q >> 4], hx[*q & 15], 0};
        tb_str(out, e);
      } else
        tb_chr(out, (char)*q);
    }
    tb_chr(out, '"');
    free(v);
    return 1;
  }
  if (c == '{' || c == '[') {
    size_t end = json_skip(s, i, n), k = skip_ws(s, i + 1, end);
    tb_chr(out, c);
    for (int first = 1; k < end && s[k] != '}' && s[k] != ']'; first = 0) {
      if (!first) tb_str(out, ", ");
      if (c == '{') {
        size_t ke = json_skip(s, k, end);
        if (!json_to_python(s + k, ke - k, out)) return 0;
        tb_str(out, ": ");
        k = skip_ws(s, skip_ws(s, ke, end) + 1, end);
      }
      size_t ve = json_skip(s, k, end);
      if (!json_to_python(s + k, ve - k, out)) return 0;
      k = skip_ws(s, ve, end);
      if (s[k] == ',') k = skip_ws(s, k + 1, end);
    }
    tb_chr(out, c == '{' ? '}' : ']');
    return 1;
  }
  size_t e = json_skip(s, i, n);
  if (e - i == 4 && !memcmp(s + i, "true", 4))
    tb_str(out, "True");
  else if (e - i == 5 && !memcmp(s + i, "false", 5))
    tb_str(out, "False");
  else if (e - i == 4 && !memcmp(s + i, "null", 4))
    tb_str(out, "None");
  else
    tb_put(out, s + i, e - i);
  return 1;
}

wgllm_status chat_tool_python_call(const char *name, const char *args, char **out, llm_err *err) {
  *out = NULL;
  llm_err_clear(err);
  size_t n = args ? strlen(args) : 0, i = args ? skip_ws(args, 0, n) : 0;
  if (!name || !valid_name(name, 1))
    return llm_err_set(err, WGLLM_ERR_INVALID_ARG, "function name \"%.80s\" is not a Python identifier",
                       name ? name : "(null)");
  if (!args || i == n || args[i] != '{' || !json_is_container(args, n))
    return llm_err_set(err, WGLLM_ERR_INVALID_ARG, "the arguments of %s are not a JSON object: %.80s", name,
                       args ? args : "(null)");
  tb b = {0};
  tb_str(&b, name);
  tb_chr(&b, '(');
  const char *o = args + i;
  size_t on = json_skip(args, i, n) - i, it = 0, ks, ke, vs, ve;
  for (int first = 1; json_next_member(o, on, &it, &ks, &ke, &vs, &ve); first = 0) {
    char *key = json_string(o + ks, ke - ks);
    if (!key || !valid_name(key, 1)) {
      free(b.s);
      wgllm_status st =
          llm_err_set(err, key ? WGLLM_ERR_INVALID_ARG : WGLLM_ERR_OUT_OF_MEMORY,
                      "argument \"%.80s\" of %s is not a Python identifier (a keyword argument)", key ? key : "", name);
      free(key);
      return st;
    }
    if (!first) tb_str(&b, ", ");
    tb_str(&b, key);
    tb_chr(&b, '=');
    free(key);
    if (!json_to_python(o + vs, ve - vs, &b)) b.oom = 1;
  }
  tb_chr(&b, ')');
  if (!(*out = tb_take(&b))) return llm_err_set(err, WGLLM_ERR_OUT_OF_MEMORY, "out of host memory");
  return WGLLM_OK;
}
