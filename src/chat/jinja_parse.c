/* The Jinja subset's lexer and parser (see jinja.h): the source becomes tokens under Jinja 3.1's rules with
   trim_blocks and lstrip_blocks (what transformers sets), then a recursive-descent parser with Jinja's own
   precedence turns them into the AST of jinja_internal.h. Filters and tests are looked up here, so an unknown
   one fails the parse, as it does in Jinja. */
#include "jinja_internal.h"
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { T_EOF, T_DATA, T_VAR_BEGIN, T_VAR_END, T_BLOCK_BEGIN, T_BLOCK_END, T_NAME, T_STR, T_INT, T_FLOAT, T_OP };
enum {
  O_ADD,
  O_SUB,
  O_DIV,
  O_FLOORDIV,
  O_MUL,
  O_MOD,
  O_POW,
  O_TILDE,
  O_LBRACKET,
  O_RBRACKET,
  O_LPAREN,
  O_RPAREN,
  O_LBRACE,
  O_RBRACE,
  O_EQ,
  O_NE,
  O_GT,
  O_GE,
  O_LT,
  O_LE,
  O_ASSIGN,
  O_DOT,
  O_COLON,
  O_PIPE,
  O_COMMA,
  O_SEMI,
  O_COUNT
};
static const char *const op_text[O_COUNT] = {"+", "-",  "/",  "//", "*",  "%", "**", "~", "[", "]", "(", ")", "{",
                                             "}", "==", "!=", ">",  ">=", "<", "<=", "=", ".", ":", "|", ",", ";"};

typedef struct jtok {
  uint8_t type, op;
  int line;
  const char *s; /* name, text or decoded string */
  size_t n;
  int64_t i;
  double f;
} jtok;

typedef struct parser {
  jerr e;
  jarena *a;
  const char *src;
  size_t n;
  jtok *t; /* malloc'd; freed by jinja_parse */
  size_t nt, cap, pos;
  int depth, loop_depth, macro_depth;
} parser;

#define PFAIL(P, st, line, ...) jfail(&(P)->e, st, line, __VA_ARGS__)

/* ---------- lexer ---------- */
static void emit(parser *P, int type, int line, const char *s, size_t n) {
  if (P->nt == P->cap) {
    size_t nc = P->cap ? P->cap * 2 : 256;
    jtok *t = realloc(P->t, nc * sizeof *t);
    if (!t) PFAIL(P, WGLLM_ERR_OUT_OF_MEMORY, 0, "out of host memory (template tokens)");
    P->t = t;
    P->cap = nc;
  }
  jtok *k = &P->t[P->nt++];
  memset(k, 0, sizeof *k);
  k->type = (uint8_t)type;
  k->line = line;
  k->s = s;
  k->n = n;
}

static int count_lines(const char *s, size_t a, size_t b) {
  int k = 0;
  for (size_t i = a; i < b; i++)
    k += s[i] == '\n';
  return k;
}

/* the end of a run of Python whitespace (\s) from i */
static size_t skip_ws(const char *s, size_t n, size_t i) {
  while (i < n) {
    size_t j = i;
    if (!uc_isspace(utf8_next(s, n, &j))) break;
    i = j;
  }
  return i;
}

/* the length of text without its trailing whitespace (str.rstrip()) */
static size_t rstrip_len(const char *s, size_t n) {
  size_t keep = 0;
  for (size_t i = 0; i < n;) {
    uint32_t cp = utf8_next(s, n, &i);
    if (!uc_isspace(cp)) keep = i;
  }
  return keep;
}

/* Jinja's OptionalLStrip: what is left of the text before a tag. sign: '-', '+' or 0; lstrip: the tag is a block
   or a comment (lstrip_blocks does not touch the text before {{ ). */
static size_t strip_before(const char *s, size_t n, char sign, int lstrip, int line_starting) {
  if (sign == '-') return rstrip_len(s, n);
  if (sign == '+' || !lstrip) return n;
  size_t l = n;
  while (l > 0 && s[l - 1] != '\n')
    l--;
  if ((l > 0 || line_starting) && l < n && skip_ws(s, n, l) == n) return l;
  return n;
}

static void emit_data(parser *P, const char *s, size_t n, int line) {
  if (n) emit(P, T_DATA, line, s, n);
}

/* {%[-+]?\s*raw\s*(-%}\s*|%}) at i: returns the end, or 0 */
static size_t match_raw_begin(const char *s, size_t n, size_t i) {
  size_t j = i + 2;
  if (j < n && (s[j] == '-' || s[j] == '+')) j++;
  j = skip_ws(s, n, j);
  if (j + 3 > n || memcmp(s + j, "raw", 3)) return 0;
  j = skip_ws(s, n, j + 3);
  if (j + 3 <= n && !memcmp(s + j, "-%}", 3)) return skip_ws(s, n, j + 3);
  if (j + 2 <= n && !memcmp(s + j, "%}", 2)) return j + 2;
  return 0;
}

/* {%[-+]?\s*endraw\s*(+%}|-%}\s*|%}\n?) at i: returns the end (0: none) and the sign */
static size_t match_endraw(const char *s, size_t n, size_t i, char *sign) {
  size_t j = i + 2;
  *sign = 0;
  if (j < n && (s[j] == '-' || s[j] == '+')) *sign = s[j++];
  j = skip_ws(s, n, j);
  if (j + 6 > n || memcmp(s + j, "endraw", 6)) return 0;
  j = skip_ws(s, n, j + 6);
  if (j + 3 <= n && !memcmp(s + j, "+%}", 3)) return j + 3;
  if (j + 3 <= n && !memcmp(s + j, "-%}", 3)) return skip_ws(s, n, j + 3);
  if (j + 2 <= n && !memcmp(s + j, "%}", 2)) return j + 2 + (j + 2 < n && s[j + 2] == '\n');
  return 0;
}

static size_t digit_group(const char *s, size_t n, size_t i, int base) {
  /* d(_?d)*; returns i when there is no digit at i */
  size_t j = i;
  int first = 1;
  for (;;) {
    size_t k = j;
    if (!first && k < n && s[k] == '_') k++;
    if (k >= n) break;
    char c = s[k];
    int d = c >= '0' && c <= '9'   ? c - '0'
            : c >= 'a' && c <= 'f' ? c - 'a' + 10
            : c >= 'A' && c <= 'F' ? c - 'A' + 10
                                   : 99;
    if (d >= base) break;
    j = k + 1;
    first = 0;
  }
  return j;
}

static void lex_number(parser *P, size_t *pos, int line) {
  const char *s = P->src;
  size_t n = P->n, i = *pos;
  char buf[80];
  size_t bl = 0;
  int prev_dot = i > 0 && s[i - 1] == '.';
  size_t e1 = digit_group(s, n, i, 10), end = 0;
  int is_float = 0;
  if (!prev_dot) {
    size_t e2 = e1;
    if (e1 < n && s[e1] == '.' && digit_group(s, n, e1 + 1, 10) > e1 + 1) {
      e2 = digit_group(s, n, e1 + 1, 10);
      is_float = 1;
    }
    if (e2 < n && (s[e2] == 'e' || s[e2] == 'E')) {
      size_t k = e2 + 1;
      if (k < n && (s[k] == '+' || s[k] == '-')) k++;
      size_t e3 = digit_group(s, n, k, 10);
      if (e3 > k) {
        e2 = e3;
        is_float = 1;
      }
    }
    if (is_float) end = e2;
  }
  if (is_float) {
    for (size_t k = i; k < end && bl < sizeof buf - 1; k++)
      if (s[k] != '_') buf[bl++] = s[k];
    buf[bl] = 0;
    emit(P, T_FLOAT, line, s + i, end - i);
    P->t[P->nt - 1].f = strtod(buf, NULL);
    *pos = end;
    return;
  }
  int base = 10;
  size_t st = i;
  if (s[i] == '0' && i + 1 < n && strchr("bBoOxX", s[i + 1])) {
    base = strchr("bB", s[i + 1]) ? 2 : strchr("oO", s[i + 1]) ? 8 : 16;
    /* 0x(_?h)+ : an underscore may follow the prefix */
    size_t k = i + 2;
    if (k < n && s[k] == '_') k++;
    size_t e = digit_group(s, n, k, base);
    if (e == k) PFAIL(P, WGLLM_ERR_FORMAT, line, "invalid number literal '%.*s'", 2, s + i);
    st = k;
    end = e;
  } else if (s[i] == '0') {
    end = i + 1; /* 0(_?0)* */
    while (end < n && (s[end] == '0' || (s[end] == '_' && end + 1 < n && s[end + 1] == '0')))
      end += s[end] == '_' ? 2 : 1;
  } else
    end = e1;
  for (size_t k = st; k < end && bl < sizeof buf - 1; k++)
    if (s[k] != '_') buf[bl++] = s[k];
  buf[bl] = 0;
  errno = 0;
  unsigned long long v = strtoull(buf, NULL, base);
  if (errno || v > (unsigned long long)INT64_MAX || bl >= sizeof buf - 1)
    PFAIL(P, WGLLM_ERR_UNSUPPORTED, line, "integer literal '%.*s' is out of the 64-bit range",
          (int)(end - i > 40 ? 40 : end - i), s + i);
  emit(P, T_INT, line, s + i, end - i);
  P->t[P->nt - 1].i = (int64_t)v;
  *pos = end;
}

static int hexval(char c) {
  return c >= '0' && c <= '9'   ? c - '0'
         : c >= 'a' && c <= 'f' ? c - 'a' + 10
         : c >= 'A' && c <= 'F' ? c - 'A' + 10
                                : -1;
}

static void put_utf8(char *o, size_t *k, uint32_t cp) {
  if (cp < 0x80)
    o[(*k)++] = (char)cp;
  else if (cp < 0x800) {
    o[(*k)++] = (char)(0xc0 | (cp >> 6));
    o[(*k)++] = (char)(0x80 | (cp & 0x3f));
  } else if (cp < 0x10000) {
    o[(*k)++] = (char)(0xe0 | (cp >> 12));
    o[(*k)++] = (char)(0x80 | ((cp >> 6) & 0x3f));
    o[(*k)++] = (char)(0x80 | (cp & 0x3f));
  } else {
    o[(*k)++] = (char)(0xf0 | (cp >> 18));
    o[(*k)++] = (char)(0x80 | ((cp >> 12) & 0x3f));
    o[(*k)++] = (char)(0x80 | ((cp >> 6) & 0x3f));
    o[(*k)++] = (char)(0x80 | (cp & 0x3f));
  }
}

/* a string literal from its opening quote; Python's unicode-escape decoding, as Jinja applies */
static void lex_string(parser *P, size_t *pos, int *line) {
  const char *s = P->src;
  size_t n = P->n, i = *pos + 1;
  char q = s[*pos];
  int start_line = *line;
  size_t e = i;
  while (e < n && s[e] != q) {
    if (s[e] == '\\' && e + 1 < n) e++;
    e++;
  }
  if (e >= n) PFAIL(P, WGLLM_ERR_FORMAT, start_line, "unterminated string literal");
  P->a->line = start_line;
  char *o = ja_alloc(P->a, e - i + 1);
  size_t k = 0;
  for (size_t j = i; j < e;) {
    char c = s[j];
    if (c != '\\') {
      o[k++] = c;
      j++;
      continue;
    }
    char d = s[j + 1];
    j += 2;
    switch (d) {
    case '\n':
      break; /* a line continuation */
    case '\\':
      o[k++] = '\\';
      break;
    case '\'':
      o[k++] = '\'';
      break;
    case '"':
      o[k++] = '"';
      break;
    case 'a':
      o[k++] = '\a';
      break;
    case 'b':
      o[k++] = '\b';
      break;
    case 'f':
      o[k++] = '\f';
      break;
    case 'n':
      o[k++] = '\n';
      break;
    case 'r':
      o[k++] = '\r';
      break;
    case 't':
      o[k++] = '\t';
      break;
    case 'v':
      o[k++] = '\v';
      break;
    case 'x':
    case 'u':
    case 'U': {
      int nd = d == 'x' ? 2 : d == 'u' ? 4 : 8;
      uint32_t cp = 0;
      for (int m = 0; m < nd; m++) {
        int h = j + (size_t)m < e ? hexval(s[j + m]) : -1;
        if (h < 0) PFAIL(P, WGLLM_ERR_FORMAT, *line, "truncated \\%c escape in a string literal", d);
        cp = cp * 16 + (uint32_t)h;
      }
      j += (size_t)nd;
      if (cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff))
        PFAIL(P, WGLLM_ERR_UNSUPPORTED, *line, "string escape \\%c%.*s is not a Unicode scalar value", d, nd,
              s + j - nd);
      put_utf8(o, &k, cp); /* at most as many bytes as the escape */
      break;
    }
    case 'N':
      PFAIL(P, WGLLM_ERR_UNSUPPORTED, *line, "unsupported string escape \\N{...}");
    default:
      if (d >= '0' && d <= '7') {
        uint32_t cp = (uint32_t)(d - '0');
        for (int m = 0; m < 2 && j < e && s[j] >= '0' && s[j] <= '7'; m++)
          cp = cp * 8 + (uint32_t)(s[j++] - '0');
        put_utf8(o, &k, cp);
      } else {
        o[k++] = '\\'; /* Python keeps an unknown escape as it is */
        j--;
      }
    }
  }
  o[k] = 0;
  *line += count_lines(s, *pos, e);
  emit(P, T_STR, start_line, o, k);
  *pos = e + 1;
}

/* the tokens of one {{ }} or {% %} from just after its opener; returns the position after its end */
static size_t lex_tag(parser *P, size_t pos, int is_block, int *line, int *line_starting) {
  const char *s = P->src;
  size_t n = P->n;
  char stack[JINJA_MAX_NESTING];
  int sp = 0, open_line = *line;
  for (;;) {
    if (pos >= n)
      PFAIL(P, WGLLM_ERR_FORMAT, open_line, "unexpected end of template: the %s opened here is not closed",
            is_block ? "'{%'" : "'{{'");
    if (!sp) {
      size_t after = 0;
      if (is_block) {
        if (pos + 3 <= n && s[pos] == '+' && !memcmp(s + pos + 1, "%}", 2))
          after = pos + 3;
        else if (pos + 3 <= n && s[pos] == '-' && !memcmp(s + pos + 1, "%}", 2))
          after = skip_ws(s, n, pos + 3);
        else if (pos + 2 <= n && !memcmp(s + pos, "%}", 2))
          after = pos + 2 + (pos + 2 < n && s[pos + 2] == '\n'); /* trim_blocks */
      } else {
        if (pos + 3 <= n && s[pos] == '-' && !memcmp(s + pos + 1, "}}", 2))
          after = skip_ws(s, n, pos + 3);
        else if (pos + 2 <= n && !memcmp(s + pos, "}}", 2))
          after = pos + 2;
      }
      if (after) {
        emit(P, is_block ? T_BLOCK_END : T_VAR_END, *line, NULL, 0);
        *line += count_lines(s, pos, after);
        *line_starting = s[after - 1] == '\n';
        return after;
      }
    }
    char c = s[pos];
    size_t j = pos;
    if (uc_isspace(utf8_next(s, n, &j))) {
      *line += c == '\n';
      pos = j;
      continue;
    }
    if (c >= '0' && c <= '9') {
      lex_number(P, &pos, *line);
      continue;
    }
    if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_') {
      size_t e = pos + 1;
      while (e < n && ((s[e] >= 'a' && s[e] <= 'z') || (s[e] >= 'A' && s[e] <= 'Z') || (s[e] >= '0' && s[e] <= '9') ||
                       s[e] == '_'))
        e++;
      emit(P, T_NAME, *line, s + pos, e - pos);
      pos = e;
      continue;
    }
    if (c == '\'' || c == '"') {
      lex_string(P, &pos, line);
      continue;
    }
    int op = -1;
    for (int k = 0; k < O_COUNT; k++) {
      size_t l = strlen(op_text[k]);
      if (pos + l <= n && !memcmp(s + pos, op_text[k], l) && (op < 0 || l > strlen(op_text[op]))) op = k;
    }
    if (op < 0) {
      size_t e = pos;
      utf8_next(s, n, &e);
      PFAIL(P, WGLLM_ERR_FORMAT, *line, "unexpected character '%.*s'", (int)(e - pos), s + pos);
    }
    if (op == O_LPAREN || op == O_LBRACKET || op == O_LBRACE) {
      if (sp == JINJA_MAX_NESTING)
        PFAIL(P, WGLLM_ERR_UNSUPPORTED, *line, "brackets nested deeper than %d", JINJA_MAX_NESTING);
      stack[sp++] = op == O_LPAREN ? ')' : op == O_LBRACKET ? ']' : '}';
    } else if (op == O_RPAREN || op == O_RBRACKET || op == O_RBRACE) {
      if (!sp) PFAIL(P, WGLLM_ERR_FORMAT, *line, "unexpected '%s'", op_text[op]);
      if (stack[sp - 1] != op_text[op][0])
        PFAIL(P, WGLLM_ERR_FORMAT, *line, "unexpected '%s', expected '%c'", op_text[op], stack[sp - 1]);
      sp--;
    }
    emit(P, T_OP, *line, op_text[op], strlen(op_text[op]));
    P->t[P->nt - 1].op = (uint8_t)op;
    pos += strlen(op_text[op]);
  }
}

static void lex(parser *P) {
  const char *s = P->src;
  size_t n = P->n, pos = 0;
  int line = 1, line_starting = 1;
  while (pos < n) {
    size_t p = pos;
    int kind = 0; /* '{', '%' or '#' */
    for (; p + 1 < n; p++)
      if (s[p] == '{' && (s[p + 1] == '{' || s[p + 1] == '%' || s[p + 1] == '#')) {
        kind = s[p + 1];
        break;
      }
    if (!kind) {
      emit_data(P, s + pos, n - pos, line);
      break;
    }
    char sign = p + 2 < n && (s[p + 2] == '-' || s[p + 2] == '+') ? s[p + 2] : 0;
    size_t raw_end = kind == '%' ? match_raw_begin(s, n, p) : 0;
    size_t tl = strip_before(s + pos, p - pos, sign, kind != '{', line_starting);
    emit_data(P, s + pos, tl, line);
    line += count_lines(s, pos, p);
    int tag_line = line;
    if (raw_end) {
      line_starting = s[raw_end - 1] == '\n';
      line += count_lines(s, p, raw_end);
      size_t q = raw_end, after = 0;
      char rsign = 0;
      for (; q + 1 < n; q++)
        if (s[q] == '{' && s[q + 1] == '%' && (after = match_endraw(s, n, q, &rsign))) break;
      if (!after) PFAIL(P, WGLLM_ERR_FORMAT, tag_line, "missing end of raw directive ({%% endraw %%})");
      size_t cl = strip_before(s + raw_end, q - raw_end, rsign, 1, line_starting);
      emit_data(P, s + raw_end, cl, line);
      line += count_lines(s, raw_end, after);
      line_starting = s[after - 1] == '\n';
      pos = after;
      continue;
    }
    if (kind == '#') {
      size_t k = p + 2 + (sign ? 1 : 0), after = 0;
      for (; k + 1 < n; k++) {
        if ((s[k] == '+' || s[k] == '-') && k + 2 < n && s[k + 1] == '#' && s[k + 2] == '}') {
          after = s[k] == '-' ? skip_ws(s, n, k + 3) : k + 3;
          break;
        }
        if (s[k] == '#' && s[k + 1] == '}') {
          after = k + 2 + (k + 2 < n && s[k + 2] == '\n');
          break;
        }
      }
      if (!after) PFAIL(P, WGLLM_ERR_FORMAT, tag_line, "missing end of comment tag ('#}')");
      line += count_lines(s, p, after);
      line_starting = s[after - 1] == '\n';
      pos = after;
      continue;
    }
    emit(P, kind == '%' ? T_BLOCK_BEGIN : T_VAR_BEGIN, line, NULL, 0);
    line_starting = 0;
    pos = lex_tag(P, p + 2 + (sign ? 1 : 0), kind == '%', &line, &line_starting);
  }
  emit(P, T_EOF, line, NULL, 0);
}

/* ---------- parser ---------- */
typedef struct nvec {
  jnode **v;
  size_t n, cap;
} nvec;
typedef struct namevec {
  jname *v;
  size_t n, cap;
} namevec;

static void nv_push(parser *P, nvec *v, jnode *x) {
  if (v->n == v->cap) {
    size_t nc = v->cap ? v->cap * 2 : 4;
    jnode **nn = ja_alloc(P->a, nc * sizeof *nn);
    if (v->n) memcpy(nn, v->v, v->n * sizeof *nn);
    v->v = nn;
    v->cap = nc;
  }
  v->v[v->n++] = x;
}

static void names_push(parser *P, namevec *v, const char *s, size_t n) {
  if (v->n == v->cap) {
    size_t nc = v->cap ? v->cap * 2 : 4;
    jname *nn = ja_alloc(P->a, nc * sizeof *nn);
    if (v->n) memcpy(nn, v->v, v->n * sizeof *nn);
    v->v = nn;
    v->cap = nc;
  }
  v->v[v->n].s = s;
  v->v[v->n++].n = n;
}

static jtok *cur(parser *P) { return &P->t[P->pos]; }
static jtok *look(parser *P) { return &P->t[P->pos + 1 < P->nt ? P->pos + 1 : P->pos]; }
static void next(parser *P) {
  if (P->pos + 1 < P->nt) P->pos++;
}
static int is_op(parser *P, int op) { return cur(P)->type == T_OP && cur(P)->op == op; }
static int is_name(const jtok *t, const char *name) {
  return t->type == T_NAME && t->n == strlen(name) && !memcmp(t->s, name, t->n);
}
static int skip_name(parser *P, const char *name) {
  if (!is_name(cur(P), name)) return 0;
  next(P);
  return 1;
}

static const char *tok_desc(const jtok *t, char *buf, size_t cap) {
  switch (t->type) {
  case T_EOF:
    return "end of template";
  case T_DATA:
    return "text";
  case T_VAR_BEGIN:
    return "'{{'";
  case T_VAR_END:
    return "'}}'";
  case T_BLOCK_BEGIN:
    return "'{%'";
  case T_BLOCK_END:
    return "'%}'";
  case T_STR:
    return "a string";
  case T_INT:
  case T_FLOAT:
    return "a number";
  default:
    snprintf(buf, cap, "'%.*s'", (int)(t->n > 40 ? 40 : t->n), t->s);
    return buf;
  }
}

static noreturn void unexpected(parser *P, const char *wanted) {
  char b[64];
  if (wanted) PFAIL(P, WGLLM_ERR_FORMAT, cur(P)->line, "expected %s, got %s", wanted, tok_desc(cur(P), b, sizeof b));
  PFAIL(P, WGLLM_ERR_FORMAT, cur(P)->line, "unexpected %s", tok_desc(cur(P), b, sizeof b));
}

static void expect_op(parser *P, int op) {
  if (!is_op(P, op)) {
    char w[8];
    snprintf(w, sizeof w, "'%s'", op_text[op]);
    unexpected(P, w);
  }
  next(P);
}
static void expect_type(parser *P, int type, const char *what) {
  if (cur(P)->type != type) unexpected(P, what);
  next(P);
}
static jtok *expect_name(parser *P) {
  if (cur(P)->type != T_NAME) unexpected(P, "a name");
  jtok *t = cur(P);
  next(P);
  return t;
}

static jnode *node(parser *P, int type, int line) {
  P->a->line = line;
  jnode *x = ja_alloc(P->a, sizeof *x);
  memset(x, 0, sizeof *x);
  x->type = (uint8_t)type;
  x->line = line;
  return x;
}

static void enter(parser *P) {
  if (++P->depth > JINJA_MAX_NESTING)
    PFAIL(P, WGLLM_ERR_UNSUPPORTED, cur(P)->line, "expressions or blocks nested deeper than %d", JINJA_MAX_NESTING);
}
static void leave(parser *P) { P->depth--; }

static jnode *parse_expression(parser *P, int with_condexpr);
static jnode *parse_unary(parser *P, int with_filter);
static jnode *parse_primary(parser *P);
static jnode *parse_postfix(parser *P, jnode *n);

static const char *const end_rule_none[] = {NULL};

/* Jinja's parse_tuple: a, b, c (a tuple) or a single expression */
static jnode *parse_tuple(parser *P, int simplified, int with_condexpr, const char *extra_end, int explicit_parens) {
  int line = cur(P)->line;
  nvec args = {0};
  int is_tuple = 0;
  for (;;) {
    if (args.n) expect_op(P, O_COMMA);
    jtok *t = cur(P);
    if (t->type == T_VAR_END || t->type == T_BLOCK_END || (t->type == T_OP && t->op == O_RPAREN) ||
        (extra_end && is_name(t, extra_end)))
      break;
    nv_push(P, &args, simplified ? parse_primary(P) : parse_expression(P, with_condexpr));
    if (is_op(P, O_COMMA))
      is_tuple = 1;
    else
      break;
  }
  if (!is_tuple) {
    if (args.n) return args.v[0];
    if (!explicit_parens) unexpected(P, "an expression");
  }
  jnode *x = node(P, N_TUPLE, line);
  x->kids = args.v;
  x->nk = args.n;
  return x;
}

static void parse_call_args(parser *P, nvec *args, nvec *kwv, namevec *kwn) {
  int line = cur(P)->line;
  expect_op(P, O_LPAREN);
  int need_comma = 0;
  while (!is_op(P, O_RPAREN)) {
    if (need_comma) {
      expect_op(P, O_COMMA);
      if (is_op(P, O_RPAREN)) break;
    }
    if (is_op(P, O_MUL) || is_op(P, O_POW))
      PFAIL(P, WGLLM_ERR_UNSUPPORTED, cur(P)->line, "unsupported '%s' argument unpacking in a call",
            is_op(P, O_MUL) ? "*" : "**");
    if (cur(P)->type == T_NAME && look(P)->type == T_OP && look(P)->op == O_ASSIGN) {
      jtok *k = cur(P);
      next(P);
      next(P);
      names_push(P, kwn, k->s, k->n);
      nv_push(P, kwv, parse_expression(P, 1));
    } else {
      if (kwn->n) PFAIL(P, WGLLM_ERR_FORMAT, line, "invalid syntax for function call expression");
      nv_push(P, args, parse_expression(P, 1));
    }
    need_comma = 1;
  }
  expect_op(P, O_RPAREN);
}

static void set_args(jnode *x, nvec *args, nvec *kwv, namevec *kwn) {
  x->kids = args->v;
  x->nk = args->n;
  x->kids2 = kwv->v;
  x->nk2 = kwv->n;
  x->names = kwn->v;
  x->nn = kwn->n;
}

static jnode *parse_call(parser *P, jnode *fn) {
  jnode *x = node(P, N_CALL, cur(P)->line);
  nvec args = {0}, kwv = {0};
  namevec kwn = {0};
  parse_call_args(P, &args, &kwv, &kwn);
  x->a = fn;
  set_args(x, &args, &kwv, &kwn);
  return x;
}

static void dotted_name(parser *P, const char **s, size_t *n) {
  jtok *t = expect_name(P);
  *s = t->s;
  *n = t->n;
  while (is_op(P, O_DOT)) { /* dotted names are one token run in the source */
    next(P);
    jtok *u = expect_name(P);
    *n = (size_t)(u->s + u->n - *s);
  }
}

/* x | f(args) | g ... ; x NULL: a {% filter %} block's chain, which starts without the bar */
static jnode *parse_filter(parser *P, jnode *x, int start_inline) {
  while (is_op(P, O_PIPE) || start_inline) {
    if (!start_inline) next(P);
    start_inline = 0;
    int line = cur(P)->line;
    jnode *f = node(P, N_FILTER, line);
    dotted_name(P, &f->name, &f->nlen);
    f->id = jb_filter_id(f->name, f->nlen);
    if (f->id < 0)
      PFAIL(P, WGLLM_ERR_UNSUPPORTED, line, "%s filter '%.*s'",
            jb_known_filter(f->name, f->nlen) ? "unsupported" : "unknown", (int)f->nlen, f->name);
    nvec args = {0}, kwv = {0};
    namevec kwn = {0};
    if (is_op(P, O_LPAREN)) parse_call_args(P, &args, &kwv, &kwn);
    set_args(f, &args, &kwv, &kwn);
    f->a = x;
    x = f;
  }
  return x;
}

static jnode *parse_test(parser *P, jnode *x) {
  int line = cur(P)->line;
  next(P); /* is */
  jnode *t = node(P, N_TEST, line);
  t->neg = (uint8_t)skip_name(P, "not");
  dotted_name(P, &t->name, &t->nlen);
  t->id = jb_test_id(t->name, t->nlen);
  if (t->id < 0) PFAIL(P, WGLLM_ERR_UNSUPPORTED, line, "unsupported test '%.*s'", (int)t->nlen, t->name);
  nvec args = {0}, kwv = {0};
  namevec kwn = {0};
  jtok *c = cur(P);
  if (is_op(P, O_LPAREN))
    parse_call_args(P, &args, &kwv, &kwn);
  else if ((c->type == T_NAME || c->type == T_STR || c->type == T_INT || c->type == T_FLOAT ||
            (c->type == T_OP && (c->op == O_LPAREN || c->op == O_LBRACKET || c->op == O_LBRACE))) &&
           !is_name(c, "else") && !is_name(c, "or") && !is_name(c, "and") && !is_name(c, "if")) {
    if (is_name(c, "is")) PFAIL(P, WGLLM_ERR_FORMAT, c->line, "you cannot chain multiple tests with is");
    nv_push(P, &args, parse_postfix(P, parse_primary(P)));
  }
  if (kwn.n)
    PFAIL(P, WGLLM_ERR_UNSUPPORTED, line, "unsupported keyword arguments to test '%.*s'", (int)t->nlen, t->name);
  set_args(t, &args, &kwv, &kwn);
  t->a = x;
  return t;
}

/* x[...] : an index or a slice */
static jnode *parse_subscribed(parser *P) {
  int line = cur(P)->line;
  jnode *parts[3] = {NULL, NULL, NULL};
  if (is_op(P, O_COLON))
    next(P);
  else {
    jnode *e = parse_expression(P, 1);
    if (!is_op(P, O_COLON)) return e;
    next(P);
    parts[0] = e;
  }
  if (!is_op(P, O_COLON) && !is_op(P, O_RBRACKET) && !is_op(P, O_COMMA)) parts[1] = parse_expression(P, 1);
  if (is_op(P, O_COLON)) {
    next(P);
    if (!is_op(P, O_RBRACKET) && !is_op(P, O_COMMA)) parts[2] = parse_expression(P, 1);
  }
  jnode *s = node(P, N_SLICE, line);
  s->b = parts[0];
  s->c = parts[1];
  s->d = parts[2];
  return s;
}

static jnode *parse_subscript(parser *P, jnode *x) {
  int line = cur(P)->line;
  if (is_op(P, O_DOT)) {
    next(P);
    jtok *t = cur(P);
    if (t->type == T_NAME) {
      jnode *a = node(P, N_ATTR, line);
      a->a = x;
      a->name = t->s;
      a->nlen = t->n;
      next(P);
      return a;
    }
    if (t->type == T_INT) {
      jnode *i = node(P, N_ITEM, line), *k = node(P, N_LIT, line);
      k->lit = jv_int(t->i);
      i->a = x;
      i->b = k;
      next(P);
      return i;
    }
    unexpected(P, "a name or number after '.'");
  }
  expect_op(P, O_LBRACKET);
  nvec args = {0};
  while (!is_op(P, O_RBRACKET)) {
    if (args.n) expect_op(P, O_COMMA);
    nv_push(P, &args, parse_subscribed(P));
  }
  expect_op(P, O_RBRACKET);
  if (args.n != 1) {
    for (size_t i = 0; i < args.n; i++)
      if (args.v[i]->type == N_SLICE) PFAIL(P, WGLLM_ERR_UNSUPPORTED, line, "unsupported subscript of several slices");
    if (!args.n) PFAIL(P, WGLLM_ERR_FORMAT, line, "expected a subscript");
    jnode *t = node(P, N_TUPLE, line);
    t->kids = args.v;
    t->nk = args.n;
    args.v[0] = t;
  }
  jnode *sub = args.v[0];
  if (sub->type == N_SLICE) {
    sub->a = x;
    return sub;
  }
  jnode *i = node(P, N_ITEM, line);
  i->a = x;
  i->b = sub;
  return i;
}

static jnode *parse_postfix(parser *P, jnode *x) {
  for (;;) {
    if (is_op(P, O_DOT) || is_op(P, O_LBRACKET))
      x = parse_subscript(P, x);
    else if (is_op(P, O_LPAREN))
      x = parse_call(P, x);
    else
      return x;
  }
}

static jnode *parse_filter_expr(parser *P, jnode *x) {
  for (;;) {
    if (is_op(P, O_PIPE))
      x = parse_filter(P, x, 0);
    else if (is_name(cur(P), "is"))
      x = parse_test(P, x);
    else if (is_op(P, O_LPAREN))
      x = parse_call(P, x);
    else
      return x;
  }
}

static jnode *parse_primary(parser *P) {
  jtok *t = cur(P);
  jnode *x;
  if (t->type == T_NAME) {
    x = node(P, N_LIT, t->line);
    if (is_name(t, "true") || is_name(t, "True"))
      x->lit = jv_bool(true);
    else if (is_name(t, "false") || is_name(t, "False"))
      x->lit = jv_bool(false);
    else if (is_name(t, "none") || is_name(t, "None"))
      x->lit = jv_none();
    else {
      x->type = N_NAME;
      x->name = t->s;
      x->nlen = t->n;
      /* Jinja gives a macro that reads these its extra arguments or its {% call %} body: not in the subset */
      if (P->macro_depth && (is_name(t, "varargs") || is_name(t, "kwargs") || is_name(t, "caller")))
        PFAIL(P, WGLLM_ERR_UNSUPPORTED, t->line, "unsupported '%.*s' in a macro", (int)t->n, t->s);
    }
    next(P);
  } else if (t->type == T_STR) {
    x = node(P, N_LIT, t->line);
    size_t total = 0, k = P->pos;
    while (P->t[k].type == T_STR)
      total += P->t[k++].n;
    if (k == P->pos + 1)
      x->lit = jv_strn(t->s, t->n);
    else { /* adjacent literals concatenate */
      char *s = ja_alloc(P->a, total + 1);
      size_t o = 0;
      for (; P->pos < k; P->pos++) {
        memcpy(s + o, P->t[P->pos].s, P->t[P->pos].n);
        o += P->t[P->pos].n;
      }
      s[o] = 0;
      P->pos--;
      x->lit = jv_strn(s, total);
    }
    next(P);
  } else if (t->type == T_INT || t->type == T_FLOAT) {
    x = node(P, N_LIT, t->line);
    x->lit = t->type == T_INT ? jv_int(t->i) : jv_float(t->f);
    next(P);
  } else if (is_op(P, O_LPAREN)) {
    next(P);
    x = parse_tuple(P, 0, 1, NULL, 1);
    expect_op(P, O_RPAREN);
  } else if (is_op(P, O_LBRACKET)) {
    x = node(P, N_LIST, t->line);
    next(P);
    nvec items = {0};
    while (!is_op(P, O_RBRACKET)) {
      if (items.n) expect_op(P, O_COMMA);
      if (is_op(P, O_RBRACKET)) break;
      nv_push(P, &items, parse_expression(P, 1));
    }
    expect_op(P, O_RBRACKET);
    x->kids = items.v;
    x->nk = items.n;
  } else if (is_op(P, O_LBRACE)) {
    x = node(P, N_DICT, t->line);
    next(P);
    nvec keys = {0}, vals = {0};
    while (!is_op(P, O_RBRACE)) {
      if (keys.n) expect_op(P, O_COMMA);
      if (is_op(P, O_RBRACE)) break;
      nv_push(P, &keys, parse_expression(P, 1));
      expect_op(P, O_COLON);
      nv_push(P, &vals, parse_expression(P, 1));
    }
    expect_op(P, O_RBRACE);
    x->kids = keys.v;
    x->nk = keys.n;
    x->kids2 = vals.v;
    x->nk2 = vals.n;
  } else
    unexpected(P, NULL);
  return x;
}

/* the nesting bound counts each way back into an expression: parse_expression (brackets, arguments,
   subscripts, else branches), unary signs and not, and statements */
static jnode *parse_unary(parser *P, int with_filter) {
  int line = cur(P)->line;
  jnode *x;
  if (is_op(P, O_SUB) || is_op(P, O_ADD)) {
    int neg = is_op(P, O_SUB);
    next(P);
    x = node(P, neg ? N_NEG : N_POS, line);
    enter(P);
    x->a = parse_unary(P, 0);
    leave(P);
  } else
    x = parse_primary(P);
  x = parse_postfix(P, x);
  if (with_filter) x = parse_filter_expr(P, x);
  return x;
}

static jnode *binary(parser *P, int op, jnode *a, jnode *b, int line) {
  jnode *x = node(P, N_BIN, line);
  x->op = (uint8_t)op;
  x->a = a;
  x->b = b;
  return x;
}

static jnode *parse_pow(parser *P) {
  jnode *x = parse_unary(P, 1);
  while (is_op(P, O_POW)) {
    int line = cur(P)->line;
    next(P);
    x = binary(P, OP_POW, x, parse_unary(P, 1), line);
  }
  return x;
}

static jnode *parse_math2(parser *P) {
  jnode *x = parse_pow(P);
  for (;;) {
    int op = is_op(P, O_MUL)        ? OP_MUL
             : is_op(P, O_DIV)      ? OP_DIV
             : is_op(P, O_FLOORDIV) ? OP_FLOORDIV
             : is_op(P, O_MOD)      ? OP_MOD
                                    : -1;
    if (op < 0) return x;
    int line = cur(P)->line;
    next(P);
    x = binary(P, op, x, parse_pow(P), line);
  }
}

static jnode *parse_concat(parser *P) {
  jnode *x = parse_math2(P);
  while (is_op(P, O_TILDE)) {
    int line = cur(P)->line;
    next(P);
    x = binary(P, OP_CONCAT, x, parse_math2(P), line);
  }
  return x;
}

static jnode *parse_math1(parser *P) {
  jnode *x = parse_concat(P);
  while (is_op(P, O_ADD) || is_op(P, O_SUB)) {
    int op = is_op(P, O_ADD) ? OP_ADD : OP_SUB, line = cur(P)->line;
    next(P);
    x = binary(P, op, x, parse_concat(P), line);
  }
  return x;
}

static jnode *parse_compare(parser *P) {
  int line = cur(P)->line;
  jnode *first = parse_math1(P);
  nvec rest = {0};
  uint8_t ops[64];
  size_t nops = 0;
  for (;;) {
    int op = -1;
    jtok *t = cur(P);
    if (t->type == T_OP) {
      op = t->op == O_EQ   ? CMP_EQ
           : t->op == O_NE ? CMP_NE
           : t->op == O_LT ? CMP_LT
           : t->op == O_LE ? CMP_LE
           : t->op == O_GT ? CMP_GT
           : t->op == O_GE ? CMP_GE
                           : -1;
      if (op >= 0) next(P);
    } else if (is_name(t, "in")) {
      op = CMP_IN;
      next(P);
    } else if (is_name(t, "not") && is_name(look(P), "in")) {
      op = CMP_NOTIN;
      next(P);
      next(P);
    }
    if (op < 0) break;
    if (nops == sizeof ops) PFAIL(P, WGLLM_ERR_UNSUPPORTED, line, "more than 64 chained comparisons");
    ops[nops++] = (uint8_t)op;
    nv_push(P, &rest, parse_math1(P));
  }
  if (!nops) return first;
  jnode *x = node(P, N_CMP, line);
  x->a = first;
  x->kids = rest.v;
  x->nk = rest.n;
  x->ops = ja_alloc(P->a, nops);
  memcpy(x->ops, ops, nops);
  return x;
}

static jnode *parse_not(parser *P) {
  if (is_name(cur(P), "not")) {
    enter(P);
    jnode *x = node(P, N_NOT, cur(P)->line);
    next(P);
    x->a = parse_not(P);
    leave(P);
    return x;
  }
  return parse_compare(P);
}

static jnode *parse_and(parser *P) {
  jnode *x = parse_not(P);
  while (is_name(cur(P), "and")) {
    jnode *y = node(P, N_AND, cur(P)->line);
    next(P);
    y->a = x;
    y->b = parse_not(P);
    x = y;
  }
  return x;
}

static jnode *parse_or(parser *P) {
  jnode *x = parse_and(P);
  while (is_name(cur(P), "or")) {
    jnode *y = node(P, N_OR, cur(P)->line);
    next(P);
    y->a = x;
    y->b = parse_and(P);
    x = y;
  }
  return x;
}

static jnode *parse_expression(parser *P, int with_condexpr) {
  enter(P);
  jnode *x = parse_or(P);
  while (with_condexpr && is_name(cur(P), "if")) {
    jnode *c = node(P, N_COND, cur(P)->line);
    next(P);
    c->a = parse_or(P);
    c->b = x;
    if (skip_name(P, "else")) c->c = parse_expression(P, 1);
    x = c;
  }
  leave(P);
  return x;
}

/* ---------- statements ---------- */
static int reserved(const jtok *t) {
  static const char *const kw[] = {"true", "false", "none", "True", "False", "None", "and",
                                   "or",   "not",   "in",   "is",   "if",    "else"};
  for (size_t i = 0; i < sizeof kw / sizeof *kw; i++)
    if (is_name(t, kw[i])) return 1;
  return 0;
}

static void target_name(parser *P, namevec *v) {
  jtok *t = cur(P);
  if (t->type != T_NAME) unexpected(P, "a name to assign to");
  if (reserved(t)) PFAIL(P, WGLLM_ERR_FORMAT, t->line, "can't assign to '%.*s'", (int)t->n, t->s);
  names_push(P, v, t->s, t->n);
  next(P);
}

/* name, or a, b / (a, b): returns whether it is a tuple */
static int parse_targets(parser *P, namevec *v, const char *end_name) {
  int paren = is_op(P, O_LPAREN);
  if (paren) next(P);
  int tuple = paren;
  for (;;) {
    target_name(P, v);
    if (!is_op(P, O_COMMA)) break;
    tuple = 1;
    next(P);
    if ((paren && is_op(P, O_RPAREN)) || (end_name && is_name(cur(P), end_name)) || is_op(P, O_ASSIGN)) break;
  }
  if (paren) expect_op(P, O_RPAREN);
  if (is_op(P, O_LPAREN)) PFAIL(P, WGLLM_ERR_UNSUPPORTED, cur(P)->line, "unsupported nested assignment targets");
  return tuple;
}

static void parse_body(parser *P, nvec *out, const char *const *ends, int *which, const char *opener, int open_line);

static void end_tag(parser *P) { expect_type(P, T_BLOCK_END, "'%}'"); }

static const char *const ends_if[] = {"elif", "else", "endif", NULL};
static const char *const ends_endif[] = {"endif", NULL};
static const char *const ends_for[] = {"endfor", "else", NULL};
static const char *const ends_endfor[] = {"endfor", NULL};

static jnode *parse_if(parser *P, int line) {
  jnode *root = node(P, N_IF, line), *c = root;
  c->a = parse_tuple(P, 0, 0, NULL, 0);
  end_tag(P);
  for (;;) {
    nvec body = {0};
    int which;
    parse_body(P, &body, ends_if, &which, "if", line);
    c->kids = body.v;
    c->nk = body.n;
    if (which == 0) { /* elif */
      jnode *e = node(P, N_IF, cur(P)->line);
      e->a = parse_tuple(P, 0, 0, NULL, 0);
      end_tag(P);
      c->kids2 = ja_alloc(P->a, sizeof(jnode *));
      c->kids2[0] = e;
      c->nk2 = 1;
      c = e;
      continue;
    }
    end_tag(P);
    if (which == 1) { /* else */
      nvec eb = {0};
      parse_body(P, &eb, ends_endif, &which, "if", line);
      end_tag(P);
      c->kids2 = eb.v;
      c->nk2 = eb.n;
    }
    return root;
  }
}

static jnode *parse_for(parser *P, int line) {
  jnode *x = node(P, N_FOR, line);
  namevec tg = {0};
  x->unpack = (uint8_t)parse_targets(P, &tg, "in");
  x->names = tg.v;
  x->nn = tg.n;
  if (!skip_name(P, "in")) unexpected(P, "'in'");
  x->a = parse_tuple(P, 0, 0, "recursive", 0);
  if (skip_name(P, "if")) x->b = parse_expression(P, 1);
  if (is_name(cur(P), "recursive")) PFAIL(P, WGLLM_ERR_UNSUPPORTED, line, "unsupported recursive for loop");
  end_tag(P);
  nvec body = {0};
  int which;
  P->loop_depth++;
  parse_body(P, &body, ends_for, &which, "for", line);
  P->loop_depth--;
  end_tag(P);
  x->kids = body.v;
  x->nk = body.n;
  if (which == 1) {
    nvec eb = {0};
    parse_body(P, &eb, ends_endfor, &which, "for", line);
    end_tag(P);
    x->kids2 = eb.v;
    x->nk2 = eb.n;
  }
  return x;
}

static jnode *parse_set(parser *P, int line) {
  static const char *const ends_set[] = {"endset", NULL};
  jnode *x = node(P, N_SET, line);
  namevec tg = {0};
  if (cur(P)->type == T_NAME && look(P)->type == T_OP && look(P)->op == O_DOT) { /* ns.attr */
    x->type = N_SETATTR;
    x->name = cur(P)->s;
    x->nlen = cur(P)->n;
    next(P);
    next(P);
    jtok *attr = expect_name(P);
    names_push(P, &tg, attr->s, attr->n);
  } else
    x->unpack = (uint8_t)parse_targets(P, &tg, NULL);
  x->names = tg.v;
  x->nn = tg.n;
  if (is_op(P, O_ASSIGN)) {
    next(P);
    x->a = parse_tuple(P, 0, 1, NULL, 0);
    end_tag(P);
    return x;
  }
  /* {% set x %}...{% endset %}, optionally through filters */
  x->op = x->type == N_SETATTR; /* the target is ns.attr */
  x->type = N_SETBLOCK;
  if (is_op(P, O_PIPE)) x->a = parse_filter(P, NULL, 0);
  end_tag(P);
  nvec body = {0};
  int which;
  parse_body(P, &body, ends_set, &which, "set", line);
  end_tag(P);
  x->kids = body.v;
  x->nk = body.n;
  return x;
}

static jnode *parse_macro(parser *P, int line) {
  static const char *const ends_macro[] = {"endmacro", NULL};
  jnode *x = node(P, N_MACRO, line);
  jtok *name = expect_name(P);
  x->name = name->s;
  x->nlen = name->n;
  namevec params = {0};
  nvec defs = {0};
  expect_op(P, O_LPAREN);
  int have_default = 0;
  while (!is_op(P, O_RPAREN)) {
    if (params.n) expect_op(P, O_COMMA);
    if (is_op(P, O_RPAREN)) break;
    target_name(P, &params);
    if (is_op(P, O_ASSIGN)) {
      next(P);
      nv_push(P, &defs, parse_expression(P, 1));
      have_default = 1;
    } else {
      if (have_default) PFAIL(P, WGLLM_ERR_FORMAT, line, "non-default argument follows default argument");
      nv_push(P, &defs, NULL);
    }
  }
  expect_op(P, O_RPAREN);
  end_tag(P);
  nvec body = {0};
  int which, saved = P->loop_depth;
  P->loop_depth = 0;
  P->macro_depth++;
  parse_body(P, &body, ends_macro, &which, "macro", line);
  P->macro_depth--;
  P->loop_depth = saved;
  end_tag(P);
  x->names = params.v;
  x->nn = params.n;
  x->kids2 = defs.v;
  x->nk2 = defs.n;
  x->kids = body.v;
  x->nk = body.n;
  return x;
}

static jnode *parse_block_body(parser *P, int type, int line, const char *end, const char *opener) {
  const char *ends[] = {end, NULL};
  jnode *x = node(P, type, line);
  nvec body = {0};
  int which;
  parse_body(P, &body, ends, &which, opener, line);
  end_tag(P);
  x->kids = body.v;
  x->nk = body.n;
  return x;
}

static jnode *parse_statement(parser *P, jtok *name) {
  int line = name->line;
  enter(P);
  jnode *x;
  if (is_name(name, "if"))
    x = parse_if(P, line);
  else if (is_name(name, "for"))
    x = parse_for(P, line);
  else if (is_name(name, "set"))
    x = parse_set(P, line);
  else if (is_name(name, "macro"))
    x = parse_macro(P, line);
  else if (is_name(name, "break") || is_name(name, "continue")) {
    if (!P->loop_depth) PFAIL(P, WGLLM_ERR_FORMAT, line, "'%.*s' outside of a loop", (int)name->n, name->s);
    x = node(P, is_name(name, "break") ? N_BREAK : N_CONTINUE, line);
    end_tag(P);
  } else if (is_name(name, "filter")) {
    jnode *chain = parse_filter(P, NULL, 1);
    end_tag(P);
    x = parse_block_body(P, N_FILTERBLOCK, line, "endfilter", "filter");
    x->a = chain;
  } else if (is_name(name, "with")) {
    namevec tg = {0};
    nvec vals = {0};
    while (cur(P)->type != T_BLOCK_END) {
      if (tg.n) expect_op(P, O_COMMA);
      target_name(P, &tg);
      expect_op(P, O_ASSIGN);
      nv_push(P, &vals, parse_expression(P, 1));
    }
    end_tag(P);
    x = parse_block_body(P, N_WITH, line, "endwith", "with");
    x->names = tg.v;
    x->nn = tg.n;
    x->kids2 = vals.v;
    x->nk2 = vals.n;
  } else if (is_name(name, "generation")) { /* transformers' assistant-mask tag: renders its body */
    end_tag(P);
    x = parse_block_body(P, N_SCOPE, line, "endgeneration", "generation");
  } else {
    static const char *const jinja_tags[] = {"call",  "include",    "import", "from",  "extends", "block",
                                             "print", "autoescape", "do",     "trans", "raw"};
    for (size_t i = 0; i < sizeof jinja_tags / sizeof *jinja_tags; i++)
      if (is_name(name, jinja_tags[i]))
        PFAIL(P, WGLLM_ERR_UNSUPPORTED, line, "unsupported tag '%.*s'", (int)name->n, name->s);
    PFAIL(P, WGLLM_ERR_FORMAT, line, "unknown tag '%.*s'", (int)name->n, name->s);
  }
  leave(P);
  return x;
}

/* statements until one of ends (NULL-terminated; NULL: the end of the template); *which: the end found, with
   the stream just past its name */
static void parse_body(parser *P, nvec *out, const char *const *ends, int *which, const char *opener, int open_line) {
  for (;;) {
    jtok *t = cur(P);
    if (t->type == T_EOF) {
      if (ends && ends[0]) {
        char want[96] = "";
        for (int i = 0; ends[i]; i++)
          snprintf(want + strlen(want), sizeof want - strlen(want), "%s'%s'", i ? " or " : "", ends[i]);
        PFAIL(P, WGLLM_ERR_FORMAT, t->line,
              "unexpected end of template: the '%s' from line %d is not closed (expected %s)", opener, open_line, want);
      }
      return;
    }
    if (t->type == T_DATA) {
      jnode *x = node(P, N_TEXT, t->line);
      x->lit = jv_strn(t->s, t->n);
      nv_push(P, out, x);
      next(P);
      continue;
    }
    if (t->type == T_VAR_BEGIN) {
      next(P);
      jnode *x = node(P, N_OUT, t->line);
      x->a = parse_tuple(P, 0, 1, NULL, 0);
      expect_type(P, T_VAR_END, "'}}'");
      nv_push(P, out, x);
      continue;
    }
    if (t->type != T_BLOCK_BEGIN) unexpected(P, NULL);
    next(P);
    jtok *name = cur(P);
    if (name->type != T_NAME) unexpected(P, "a tag name");
    for (int i = 0; ends && ends[i]; i++)
      if (is_name(name, ends[i])) {
        next(P);
        *which = i;
        return;
      }
    static const char *const closers[] = {"elif",      "else",    "endif",         "endfor", "endset",  "endmacro",
                                          "endfilter", "endwith", "endgeneration", "endraw", "endcall", "endblock"};
    for (size_t i = 0; i < sizeof closers / sizeof *closers; i++)
      if (is_name(name, closers[i])) {
        if (ends && ends[0])
          PFAIL(P, WGLLM_ERR_FORMAT, name->line, "unexpected '%.*s' (the '%s' from line %d expects '%s')", (int)name->n,
                name->s, opener, open_line, ends[0]);
        PFAIL(P, WGLLM_ERR_FORMAT, name->line, "unexpected '%.*s' (no block is open)", (int)name->n, name->s);
      }
    next(P);
    nv_push(P, out, parse_statement(P, name));
  }
}

/* ---------- entry ---------- */
wgllm_status jinja_parse(const char *src, size_t len, jinja_template **out, llm_err *err) {
  llm_err_clear(err);
  if (!out) return WGLLM_ERR_INVALID_ARG;
  *out = NULL;
  if (!src) return WGLLM_ERR_INVALID_ARG;
  if (len > JINJA_MAX_SOURCE) {
    return llm_err_set(err, WGLLM_ERR_UNSUPPORTED, "the template is %zu bytes, over the %u-byte limit", len,
                       JINJA_MAX_SOURCE);
  }
  jinja_template *t = calloc(1, sizeof *t);
  parser *P = calloc(1, sizeof *P);
  if (!t || !P) {
    free(t);
    free(P);
    return llm_err_set(err, WGLLM_ERR_OUT_OF_MEMORY, "out of host memory");
  }
  P->e.err = err;
  t->arena.limit = (size_t)64 * len + (1u << 20);
  t->arena.e = &P->e;
  P->a = &t->arena;
  if (setjmp(P->e.jb)) {
    wgllm_status st = P->e.st;
    free(P->t);
    free(P);
    ja_free_all(&t->arena);
    free(t);
    return st;
  }
  /* newlines as Jinja normalizes them (\r\n and \r to \n), and one trailing newline dropped
     (keep_trailing_newline=False) */
  char *s = ja_alloc(P->a, len + 1);
  size_t n = 0;
  for (size_t i = 0; i < len; i++) {
    if (src[i] == '\r') {
      s[n++] = '\n';
      if (i + 1 < len && src[i + 1] == '\n') i++;
    } else
      s[n++] = src[i];
  }
  if (n && s[n - 1] == '\n') n--;
  s[n] = 0;
  P->src = s;
  P->n = n;
  lex(P);
  nvec body = {0};
  int which;
  parse_body(P, &body, end_rule_none, &which, NULL, 0);
  t->body = body.v;
  t->nbody = body.n;
  t->arena.e = NULL;
  free(P->t);
  free(P);
  *out = t;
  return WGLLM_OK;
}

void jinja_free(jinja_template *t) {
  if (!t) return;
  ja_free_all(&t->arena);
  free(t);
}
