/* Values of the Jinja subset (see jinja_internal.h): the arena they live in, constructors, conversion from cJSON,
   and Python's semantics where a chat template can see them: str(), repr(), json.dumps() as transformers'
   tojson calls it, truthiness, ==, ordering, code points, case mapping. */
#include "jinja_internal.h"
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---------- errors ---------- */
static noreturn void jvfail(jerr *e, wgllm_status st, int line, const char *fmt, va_list ap) {
  if (e->err) {
    char msg[LLM_ERR_MSG_LEN];
    vsnprintf(msg, sizeof msg, fmt, ap);
    if (line > 0)
      llm_err_set(e->err, st, "%s at line %d", msg, line);
    else
      llm_err_set(e->err, st, "%s", msg);
  }
  e->st = st;
  longjmp(e->jb, 1);
}

noreturn void jfail(jerr *e, wgllm_status st, int line, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  jvfail(e, st, line, fmt, ap);
}

noreturn void jctx_fail(jctx *c, wgllm_status st, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  jvfail(c->e, st, c->line, fmt, ap);
}

/* ---------- arena ---------- */
#define JA_HDR 32 /* the block header, rounded up so that data stays 16-aligned */
#define JA_BLOCK (64u << 10)

void *ja_alloc(jarena *a, size_t n) {
  if ((uint64_t)n > ((uint64_t)1 << 40))
    jfail(a->e, WGLLM_ERR_OUT_OF_MEMORY, a->line, "allocation of %zu bytes refused", n);
  n = (n + 15) & ~(size_t)15;
  jarena_block *b = a->head;
  if (!b || b->cap - b->used < n) {
    size_t cap = n > JA_BLOCK / 4 ? n : JA_BLOCK;
    if (a->total + cap + (a->extra ? *a->extra : 0) > a->limit)
      jfail(a->e, WGLLM_ERR_INVALID_ARG, a->line, "the template needs more than %zu bytes of memory (max_memory)",
            a->limit);
    b = malloc(JA_HDR + cap);
    if (!b) jfail(a->e, WGLLM_ERR_OUT_OF_MEMORY, a->line, "out of host memory (%zu bytes)", cap);
    b->next = a->head;
    b->used = 0;
    b->cap = cap;
    a->head = b;
    a->total += cap;
  }
  void *p = (char *)b + JA_HDR + b->used;
  b->used += n;
  return p;
}

void ja_free_all(jarena *a) {
  while (a->head) {
    jarena_block *n = a->head->next;
    free(a->head);
    a->head = n;
  }
  a->total = 0;
}

jarena_mark ja_mark(const jarena *a) {
  jarena_mark m = {a->head, a->head ? a->head->used : 0, a->total};
  return m;
}

void ja_release(jarena *a, jarena_mark m) {
  while (a->head && a->head != m.head) {
    jarena_block *n = a->head->next;
    free(a->head);
    a->head = n;
  }
  if (a->head) a->head->used = m.used;
  a->total = m.total;
}

char *ja_strdup(jarena *a, const char *s, size_t n) {
  char *p = ja_alloc(a, n + 1);
  if (n) memcpy(p, s, n);
  p[n] = 0;
  return p;
}

/* ---------- byte buffers and work ---------- */
void jsb_put(jctx *c, jsb *b, const char *s, size_t n) {
  if (!n) return;
  if (n > c->lim.max_output || b->n > c->lim.max_output - n)
    jctx_fail(c, WGLLM_ERR_INVALID_ARG, "the rendered text exceeds %zu bytes (max_output)", c->lim.max_output);
  if (b->n + n + 1 > b->cap) {
    size_t nc = b->cap ? b->cap : 256;
    while (nc < b->n + n + 1)
      nc *= 2;
    if (c->a->total + c->text_bytes + (nc - b->cap) > c->lim.max_memory)
      jctx_fail(c, WGLLM_ERR_INVALID_ARG, "the template needs more than %zu bytes of memory (max_memory)",
                c->lim.max_memory);
    char *p = realloc(b->p, nc);
    if (!p) jctx_fail(c, WGLLM_ERR_OUT_OF_MEMORY, "out of host memory (%zu bytes of text)", nc);
    c->text_bytes += nc - b->cap;
    b->p = p;
    b->cap = nc;
  }
  memcpy(b->p + b->n, s, n);
  b->n += n;
  b->p[b->n] = 0;
}

void jsb_putc(jctx *c, jsb *b, char ch) { jsb_put(c, b, &ch, 1); }

void jsb_printf(jctx *c, jsb *b, const char *fmt, ...) {
  char tmp[128];
  va_list ap;
  va_start(ap, fmt);
  int k = vsnprintf(tmp, sizeof tmp, fmt, ap);
  va_end(ap);
  if (k > 0) jsb_put(c, b, tmp, (size_t)k < sizeof tmp ? (size_t)k : sizeof tmp - 1);
}

void jctx_work(jctx *c, size_t bytes) {
  c->steps += 1 + bytes / 64;
  if (c->steps > c->lim.max_steps)
    jctx_fail(c, WGLLM_ERR_INVALID_ARG, "the template ran more than %llu steps (max_steps)",
              (unsigned long long)c->lim.max_steps);
}

/* ---------- constructors ---------- */
jv jv_str(jctx *c, const char *s, size_t n) {
  if (n > c->lim.max_output)
    jctx_fail(c, WGLLM_ERR_INVALID_ARG, "a string of %zu bytes exceeds max_output (%zu)", n, c->lim.max_output);
  c->a->line = c->line;
  return jv_strn(ja_strdup(c->a, s, n), n);
}

jv jv_str_from_sb(jctx *c, const jsb *b) { return jv_str(c, b->p ? b->p : "", b->n); }

static jv list_new(jctx *c, size_t cap, int sub) {
  c->a->line = c->line;
  jlist *l = ja_alloc(c->a, sizeof *l);
  l->n = 0;
  l->consumed = false;
  l->err = NULL;
  l->cap = cap ? cap : 4;
  if (l->cap > c->lim.max_iterations + 1) l->cap = c->lim.max_iterations + 1;
  l->v = ja_alloc(c->a, l->cap * sizeof(jv));
  jv v = {JV_LIST, (uint8_t)sub, 0, {0}};
  v.l = l;
  return v;
}
jv jv_list(jctx *c, size_t cap) { return list_new(c, cap, JL_LIST); }
jv jv_tuple(jctx *c, size_t cap) { return list_new(c, cap, JL_TUPLE); }

void jl_push(jctx *c, jlist *l, jv v) {
  if (l->n == l->cap) {
    if (l->n >= c->lim.max_iterations)
      jctx_fail(c, WGLLM_ERR_INVALID_ARG, "a list longer than %llu items (max_iterations)",
                (unsigned long long)c->lim.max_iterations);
    size_t nc = l->cap * 2;
    c->a->line = c->line;
    jv *nv = ja_alloc(c->a, nc * sizeof(jv));
    memcpy(nv, l->v, l->n * sizeof(jv));
    l->v = nv;
    l->cap = nc;
  }
  l->v[l->n++] = v;
}

jv jv_dict(jctx *c, size_t cap) {
  c->a->line = c->line;
  jdict *d = ja_alloc(c->a, sizeof *d);
  d->n = 0;
  d->cap = cap ? cap : 4;
  d->k = ja_alloc(c->a, d->cap * sizeof(jv));
  d->v = ja_alloc(c->a, d->cap * sizeof(jv));
  jv v = {JV_DICT, JD_DICT, 0, {0}};
  v.d = d;
  return v;
}

bool jd_get(const jdict *d, jv k, jv *v) {
  for (size_t i = 0; i < d->n; i++)
    if (jv_eq(d->k[i], k)) {
      if (v) *v = d->v[i];
      return true;
    }
  return false;
}

bool jd_gets(const jdict *d, const char *k, size_t n, jv *v) {
  for (size_t i = 0; i < d->n; i++)
    if (d->k[i].kind == JV_STR && d->k[i].n == n && !memcmp(d->k[i].s, k, n)) {
      if (v) *v = d->v[i];
      return true;
    }
  return false;
}

void jd_set(jctx *c, jdict *d, jv k, jv v) {
  for (size_t i = 0; i < d->n; i++)
    if (jv_eq(d->k[i], k)) {
      d->v[i] = v;
      return;
    }
  jctx_work(c, d->n);
  if (d->n == d->cap) {
    if (d->n >= c->lim.max_iterations)
      jctx_fail(c, WGLLM_ERR_INVALID_ARG, "a dict larger than %llu items (max_iterations)",
                (unsigned long long)c->lim.max_iterations);
    size_t nc = d->cap * 2;
    c->a->line = c->line;
    jv *nk = ja_alloc(c->a, nc * sizeof(jv)), *nv = ja_alloc(c->a, nc * sizeof(jv));
    memcpy(nk, d->k, d->n * sizeof(jv));
    memcpy(nv, d->v, d->n * sizeof(jv));
    d->k = nk;
    d->v = nv;
    d->cap = nc;
  }
  d->k[d->n] = k;
  d->v[d->n++] = v;
}

jv jv_from_cjson(jctx *c, const cJSON *j, int depth) {
  if (depth > 200) jctx_fail(c, WGLLM_ERR_INVALID_ARG, "the template's input is nested deeper than 200 levels");
  if (!j || cJSON_IsNull(j)) return jv_none();
  if (cJSON_IsFalse(j)) return jv_bool(false);
  if (cJSON_IsTrue(j)) return jv_bool(true);
  if (cJSON_IsNumber(j)) {
    double d = j->valuedouble;
    if (d == floor(d) && fabs(d) < 9.0e15) return jv_int((int64_t)d); /* JSON keeps no int/float distinction */
    return jv_float(d);
  }
  if (cJSON_IsString(j)) return jv_strn(j->valuestring, strlen(j->valuestring));
  if (cJSON_IsArray(j)) {
    jv l = jv_list(c, (size_t)cJSON_GetArraySize(j));
    const cJSON *it;
    cJSON_ArrayForEach(it, j) jl_push(c, l.l, jv_from_cjson(c, it, depth + 1));
    return l;
  }
  if (cJSON_IsObject(j)) {
    jv d = jv_dict(c, (size_t)cJSON_GetArraySize(j));
    const cJSON *it;
    cJSON_ArrayForEach(it, j) {
      const char *k = it->string ? it->string : "";
      jd_set(c, d.d, jv_strn(k, strlen(k)), jv_from_cjson(c, it, depth + 1));
    }
    return d;
  }
  jctx_fail(c, WGLLM_ERR_INVALID_ARG, "the template's input holds a JSON value of an unknown type");
}

/* ---------- Python semantics ---------- */
const char *jv_type_name(jv v) {
  switch (v.kind) {
  case JV_UNDEF:
    return "Undefined";
  case JV_NONE:
    return "NoneType";
  case JV_BOOL:
    return "bool";
  case JV_INT:
    return "int";
  case JV_FLOAT:
    return "float";
  case JV_STR:
    return "str";
  case JV_LIST: {
    static const char *const t[] = {"list", "tuple", "generator", "dict_items", "dict_keys", "dict_values"};
    return t[v.sub];
  }
  case JV_DICT:
    return v.sub == JD_NAMESPACE ? "Namespace" : "dict";
  case JV_FUNC:
    return v.fn->kind == FN_MACRO ? "Macro" : "function";
  default:
    return "LoopContext";
  }
}

bool jv_hashable(jv v) {
  if (v.kind == JV_DICT) return v.sub == JD_NAMESPACE;
  if (v.kind != JV_LIST) return true;
  if (v.sub == JL_LIST || v.sub == JL_KEYS || v.sub == JL_ITEMS) return false;
  if (v.sub == JL_TUPLE)
    for (size_t i = 0; i < v.l->n; i++)
      if (!jv_hashable(v.l->v[i])) return false;
  return true;
}

bool jv_truthy(jv v) {
  switch (v.kind) {
  case JV_UNDEF:
  case JV_NONE:
    return false;
  case JV_BOOL:
  case JV_INT:
    return v.i != 0;
  case JV_FLOAT:
    return v.f != 0;
  case JV_STR:
    return v.n > 0;
  case JV_LIST:
    return v.sub == JL_GEN || v.l->n > 0;
  case JV_DICT:
    return v.sub == JD_NAMESPACE || v.d->n > 0;
  default:
    return true;
  }
}

bool jv_eq(jv a, jv b) {
  if (jv_is_num(a) && jv_is_num(b)) {
    if (a.kind != JV_FLOAT && b.kind != JV_FLOAT) return a.i == b.i;
    return jv_num(a) == jv_num(b);
  }
  if (a.kind != b.kind) return false;
  switch (a.kind) {
  case JV_UNDEF:
  case JV_NONE:
    return true;
  case JV_STR:
    return a.n == b.n && (a.s == b.s || !memcmp(a.s, b.s, a.n));
  case JV_LIST:
    if (a.sub == JL_GEN || b.sub == JL_GEN) return a.l == b.l;
    if (a.sub != b.sub || a.l->n != b.l->n) return false;
    for (size_t i = 0; i < a.l->n; i++)
      if (!jv_eq(a.l->v[i], b.l->v[i])) return false;
    return true;
  case JV_DICT:
    if (a.sub == JD_NAMESPACE || b.sub == JD_NAMESPACE) return a.d == b.d;
    if (a.d->n != b.d->n) return false;
    for (size_t i = 0; i < a.d->n; i++) {
      jv bv;
      if (!jd_get(b.d, a.d->k[i], &bv) || !jv_eq(a.d->v[i], bv)) return false;
    }
    return true;
  case JV_FUNC:
    return a.fn == b.fn;
  case JV_LOOP:
    return a.lp == b.lp;
  default:
    return false;
  }
}

int jv_cmp(jctx *c, jv a, jv b, const char *op) {
  if (jv_is_num(a) && jv_is_num(b)) {
    if (a.kind != JV_FLOAT && b.kind != JV_FLOAT) return (a.i > b.i) - (a.i < b.i);
    double x = jv_num(a), y = jv_num(b);
    return (x > y) - (x < y); /* NaN compares as equal: every ordering is false in Python */
  }
  if (a.kind == JV_STR && b.kind == JV_STR) {
    size_t n = a.n < b.n ? a.n : b.n;
    int r = n ? memcmp(a.s, b.s, n) : 0; /* UTF-8 byte order is code point order */
    jctx_work(c, n);
    if (r) return r;
    return (a.n > b.n) - (a.n < b.n);
  }
  if (jl_plain(a) && jl_plain(b) && a.sub == b.sub) {
    size_t n = a.l->n < b.l->n ? a.l->n : b.l->n;
    for (size_t i = 0; i < n; i++)
      if (!jv_eq(a.l->v[i], b.l->v[i])) return jv_cmp(c, a.l->v[i], b.l->v[i], op);
    return (a.l->n > b.l->n) - (a.l->n < b.l->n);
  }
  if (a.kind == JV_UNDEF || b.kind == JV_UNDEF) {
    char d[160];
    jv_undef_desc(a.kind == JV_UNDEF ? a : b, d, sizeof d);
    jctx_fail(c, WGLLM_ERR_INVALID_ARG, "%s (compared with '%s')", d, op);
  }
  jctx_fail(c, WGLLM_ERR_INVALID_ARG, "'%s' not supported between instances of '%s' and '%s'", op, jv_type_name(a),
            jv_type_name(b));
}

void jv_undef_desc(jv v, char *buf, size_t cap) {
  if (v.s && v.n)
    snprintf(buf, cap, "'%.*s' is undefined", (int)(v.n > 100 ? 100 : v.n), v.s);
  else
    snprintf(buf, cap, "an undefined value was used");
}

/* Python's repr(float): the shortest digits that read back to the same double; exponent form when the
   decimal point would sit more than 16 places right or 4 places left of the first digit. */
void py_float_repr(double d, char out[32]) {
  if (isnan(d)) {
    strcpy(out, "nan");
    return;
  }
  if (isinf(d)) {
    strcpy(out, d < 0 ? "-inf" : "inf");
    return;
  }
  char tmp[40];
  for (int p = 1; p <= 17; p++) {
    snprintf(tmp, sizeof tmp, "%.*e", p - 1, d);
    if (strtod(tmp, NULL) == d) break;
  }
  /* tmp: [-]D[.DDD]e[+-]XX */
  char digits[24];
  int nd = 0, neg = 0;
  const char *q = tmp;
  if (*q == '-') {
    neg = 1;
    q++;
  }
  for (; *q && *q != 'e'; q++)
    if (*q >= '0' && *q <= '9' && nd < 20) digits[nd++] = *q;
  int exp = atoi(q + 1);
  while (nd > 1 && digits[nd - 1] == '0')
    nd--;
  char *o = out;
  if (neg) *o++ = '-';
  int decpt = exp + 1;
  if (decpt > 16 || decpt <= -4) {
    *o++ = digits[0];
    if (nd > 1) {
      *o++ = '.';
      for (int i = 1; i < nd; i++)
        *o++ = digits[i];
    }
    char e[16];
    snprintf(e, sizeof e, "e%c%02d", exp < 0 ? '-' : '+', exp < 0 ? -exp : exp);
    strcpy(o, e);
    return;
  }
  if (decpt <= 0) {
    *o++ = '0';
    *o++ = '.';
    for (int i = 0; i < -decpt; i++)
      *o++ = '0';
    for (int i = 0; i < nd; i++)
      *o++ = digits[i];
  } else {
    for (int i = 0; i < decpt; i++)
      *o++ = i < nd ? digits[i] : '0';
    *o++ = '.';
    if (nd > decpt)
      for (int i = decpt; i < nd; i++)
        *o++ = digits[i];
    else
      *o++ = '0';
  }
  *o = 0;
}

static bool py_printable(uint32_t cp) {
  if (cp < 0x20 || cp == 0x7f) return false;
  if (cp < 0x7f) return true;
  if (cp <= 0xa0 || cp == 0xad) return false;
  if ((cp >= 0x600 && cp <= 0x605) || cp == 0x61c || cp == 0x6dd || cp == 0x70f || cp == 0x1680 || cp == 0x180e)
    return false;
  if ((cp >= 0x2000 && cp <= 0x200f) || (cp >= 0x2028 && cp <= 0x202f) || (cp >= 0x205f && cp <= 0x206f)) return false;
  if (cp == 0x3000 || (cp >= 0xd800 && cp <= 0xf8ff) || cp == 0xfeff || (cp >= 0xfff9 && cp <= 0xfffb)) return false;
  if (cp >= 0xe0000) return false;
  return true;
}

static void repr_str(jctx *c, const char *s, size_t n, jsb *b) {
  bool sq = memchr(s, '\'', n) != NULL, dq = memchr(s, '"', n) != NULL;
  char quote = sq && !dq ? '"' : '\'';
  jsb_putc(c, b, quote);
  jctx_work(c, n);
  for (size_t i = 0; i < n;) {
    size_t st = i;
    uint32_t cp = utf8_next(s, n, &i);
    if (cp == (uint32_t)quote || cp == '\\') {
      jsb_putc(c, b, '\\');
      jsb_putc(c, b, (char)cp);
    } else if (cp == '\n')
      jsb_put(c, b, "\\n", 2);
    else if (cp == '\r')
      jsb_put(c, b, "\\r", 2);
    else if (cp == '\t')
      jsb_put(c, b, "\\t", 2);
    else if (cp >= 0xdc80 && cp <= 0xdcff && i - st == 1) /* an invalid byte */
      jsb_printf(c, b, "\\udc%02x", (unsigned)(cp & 0xff));
    else if (py_printable(cp))
      jsb_put(c, b, s + st, i - st);
    else if (cp < 0x100)
      jsb_printf(c, b, "\\x%02x", (unsigned)cp);
    else if (cp < 0x10000)
      jsb_printf(c, b, "\\u%04x", (unsigned)cp);
    else
      jsb_printf(c, b, "\\U%08x", (unsigned)cp);
  }
  jsb_putc(c, b, quote);
}

static void str_or_repr(jctx *c, jv v, jsb *b, bool repr) {
  char num[32];
  switch (v.kind) {
  case JV_UNDEF:
    if (repr) jsb_put(c, b, "Undefined", 9);
    return;
  case JV_NONE:
    jsb_put(c, b, "None", 4);
    return;
  case JV_BOOL:
    jsb_put(c, b, v.i ? "True" : "False", v.i ? 4 : 5);
    return;
  case JV_INT:
    jsb_printf(c, b, "%lld", (long long)v.i);
    return;
  case JV_FLOAT:
    py_float_repr(v.f, num);
    jsb_put(c, b, num, strlen(num));
    return;
  case JV_STR:
    if (repr)
      repr_str(c, v.s, v.n, b);
    else
      jsb_put(c, b, v.s, v.n);
    return;
  case JV_LIST: {
    bool t = v.sub == JL_TUPLE;
    if (v.sub == JL_GEN)
      jctx_fail(c, WGLLM_ERR_UNSUPPORTED,
                "unsupported: printing a generator (what map, select, reject, unique, items and reverse return; "
                "Jinja prints its address: add |list)");
    if (v.sub >= JL_ITEMS) {
      jsb_put(c, b, jv_type_name(v), strlen(jv_type_name(v)));
      jsb_putc(c, b, '(');
    }
    jsb_putc(c, b, t ? '(' : '[');
    for (size_t i = 0; i < v.l->n; i++) {
      if (i) jsb_put(c, b, ", ", 2);
      jctx_work(c, 0);
      str_or_repr(c, v.l->v[i], b, true);
    }
    if (t && v.l->n == 1) jsb_putc(c, b, ',');
    jsb_putc(c, b, t ? ')' : ']');
    if (v.sub >= JL_ITEMS) jsb_putc(c, b, ')');
    return;
  }
  case JV_DICT:
    if (v.sub == JD_NAMESPACE) jsb_put(c, b, "<Namespace ", 11);
    jsb_putc(c, b, '{');
    for (size_t i = 0; i < v.d->n; i++) {
      if (i) jsb_put(c, b, ", ", 2);
      jctx_work(c, 0);
      str_or_repr(c, v.d->k[i], b, true);
      jsb_put(c, b, ": ", 2);
      str_or_repr(c, v.d->v[i], b, true);
    }
    jsb_putc(c, b, '}');
    if (v.sub == JD_NAMESPACE) jsb_putc(c, b, '>');
    return;
  case JV_FUNC:
    if (v.fn->kind == FN_MACRO)
      jsb_printf(c, b, "<Macro '%.*s'>", (int)v.fn->nlen, v.fn->name);
    else
      jsb_printf(c, b, "<built-in method %.*s>", (int)v.fn->nlen, v.fn->name);
    return;
  case JV_LOOP:
    jsb_printf(c, b, "<LoopContext %zu/%zu>", v.lp->i + 1, v.lp->n);
    return;
  }
}

void jv_to_str(jctx *c, jv v, jsb *b) { str_or_repr(c, v, b, false); }
void jv_to_repr(jctx *c, jv v, jsb *b) { str_or_repr(c, v, b, true); }

jv jv_stringify(jctx *c, jv v) {
  if (v.kind == JV_STR) return v;
  if (v.kind == JV_UNDEF) return jv_strn("", 0);
  if (v.kind == JV_NONE) return jv_strn("None", 4);
  if (v.kind == JV_BOOL) return v.i ? jv_strn("True", 4) : jv_strn("False", 5);
  /* a scratch buffer from the capture stack, which jinja_render frees even on error */
  if (c->ncaps >= (int)(sizeof c->caps / sizeof c->caps[0]))
    jctx_fail(c, WGLLM_ERR_INVALID_ARG, "blocks nested too deeply");
  jsb *sb = &c->caps[c->ncaps++];
  sb->n = 0;
  jv_to_str(c, v, sb);
  jv r = jv_str_from_sb(c, sb);
  c->ncaps--;
  return r;
}

/* json.dumps(v, ensure_ascii=..., indent=..., separators=..., sort_keys=...) */
static void json_str(jctx *c, const char *s, size_t n, bool ascii, jsb *b) {
  jsb_putc(c, b, '"');
  jctx_work(c, n);
  size_t run = 0; /* bytes copied as they are, flushed at each escape */
  for (size_t i = 0; i < n;) {
    size_t st = i;
    uint32_t cp = utf8_next(s, n, &i);
    const char *esc = NULL;
    char tmp[16];
    if (cp == '"')
      esc = "\\\"";
    else if (cp == '\\')
      esc = "\\\\";
    else if (cp == '\n')
      esc = "\\n";
    else if (cp == '\r')
      esc = "\\r";
    else if (cp == '\t')
      esc = "\\t";
    else if (cp == '\b')
      esc = "\\b";
    else if (cp == '\f')
      esc = "\\f";
    else if (cp < 0x20 || (ascii && cp >= 0x7f)) {
      if (cp < 0x10000)
        snprintf(tmp, sizeof tmp, "\\u%04x", (unsigned)cp);
      else {
        uint32_t v = cp - 0x10000;
        snprintf(tmp, sizeof tmp, "\\u%04x\\u%04x", (unsigned)(0xd800 + (v >> 10)), (unsigned)(0xdc00 + (v & 0x3ff)));
      }
      esc = tmp;
    }
    if (esc) {
      jsb_put(c, b, s + st - run, run);
      run = 0;
      jsb_put(c, b, esc, strlen(esc));
    } else
      run += i - st;
  }
  jsb_put(c, b, s + n - run, run);
  jsb_putc(c, b, '"');
}

static void json_newline(jctx *c, const jjson_opts *o, jsb *b, int level) {
  jsb_putc(c, b, '\n');
  for (int i = 0; i < level; i++)
    jsb_put(c, b, o->indent, o->indent_n);
}

static int key_cmp(const void *x, const void *y) {
  const jv *a = *(const jv *const *)x, *b = *(const jv *const *)y;
  size_t n = a->n < b->n ? a->n : b->n;
  int r = n ? memcmp(a->s, b->s, n) : 0;
  return r ? r : (a->n > b->n) - (a->n < b->n);
}

void jv_to_json(jctx *c, jv v, const jjson_opts *o, jsb *b, int level) {
  char num[32];
  if (level > 200) jctx_fail(c, WGLLM_ERR_INVALID_ARG, "tojson: a value nested deeper than 200 levels");
  jctx_work(c, 0);
  switch (v.kind) {
  case JV_NONE:
    jsb_put(c, b, "null", 4);
    return;
  case JV_BOOL:
    jsb_put(c, b, v.i ? "true" : "false", v.i ? 4 : 5);
    return;
  case JV_INT:
    jsb_printf(c, b, "%lld", (long long)v.i);
    return;
  case JV_FLOAT:
    if (isnan(v.f))
      strcpy(num, "NaN");
    else if (isinf(v.f))
      strcpy(num, v.f < 0 ? "-Infinity" : "Infinity");
    else
      py_float_repr(v.f, num);
    jsb_put(c, b, num, strlen(num));
    return;
  case JV_STR:
    json_str(c, v.s, v.n, o->ensure_ascii, b);
    return;
  case JV_LIST:
    if (!jl_plain(v)) break;
    if (!v.l->n) {
      jsb_put(c, b, "[]", 2);
      return;
    }
    jsb_putc(c, b, '[');
    for (size_t i = 0; i < v.l->n; i++) {
      if (i) jsb_put(c, b, o->item_sep, o->item_sep_n);
      if (o->indent) json_newline(c, o, b, level + 1);
      jv_to_json(c, v.l->v[i], o, b, level + 1);
    }
    if (o->indent) json_newline(c, o, b, level);
    jsb_putc(c, b, ']');
    return;
  case JV_DICT: {
    if (v.sub == JD_NAMESPACE) break;
    if (!v.d->n) {
      jsb_put(c, b, "{}", 2);
      return;
    }
    /* keys: str as they are; int, float, bool and None as json.dumps converts them */
    jv *keys = ja_alloc(c->a, v.d->n * sizeof(jv));
    const jv **order = ja_alloc(c->a, v.d->n * sizeof(jv *));
    for (size_t i = 0; i < v.d->n; i++) {
      jv k = v.d->k[i];
      if (k.kind == JV_STR)
        keys[i] = k;
      else if (k.kind == JV_INT || k.kind == JV_FLOAT || k.kind == JV_NONE || k.kind == JV_BOOL) {
        jsb *sb = &c->caps[c->ncaps];
        if (c->ncaps >= (int)(sizeof c->caps / sizeof c->caps[0]))
          jctx_fail(c, WGLLM_ERR_INVALID_ARG, "blocks nested too deeply");
        c->ncaps++;
        sb->n = 0;
        if (k.kind == JV_BOOL || k.kind == JV_NONE)
          jsb_put(c, sb, k.kind == JV_NONE ? "null" : k.i ? "true" : "false", k.kind == JV_NONE ? 4 : k.i ? 4 : 5);
        else
          jv_to_json(c, k, o, sb, level);
        keys[i] = jv_str_from_sb(c, sb);
        c->ncaps--;
      } else
        jctx_fail(c, WGLLM_ERR_INVALID_ARG, "tojson: keys must be str, int, float, bool or None, not %s",
                  jv_type_name(k));
      order[i] = &keys[i];
    }
    if (o->sort_keys) qsort(order, v.d->n, sizeof *order, key_cmp);
    jsb_putc(c, b, '{');
    for (size_t j = 0; j < v.d->n; j++) {
      size_t i = (size_t)(order[j] - keys);
      if (j) jsb_put(c, b, o->item_sep, o->item_sep_n);
      if (o->indent) json_newline(c, o, b, level + 1);
      json_str(c, keys[i].s, keys[i].n, o->ensure_ascii, b);
      jsb_put(c, b, o->key_sep, o->key_sep_n);
      jv_to_json(c, v.d->v[i], o, b, level + 1);
    }
    if (o->indent) json_newline(c, o, b, level);
    jsb_putc(c, b, '}');
    return;
  }
  default:
    break;
  }
  if (v.kind == JV_UNDEF) {
    char d[160];
    jv_undef_desc(v, d, sizeof d);
    jctx_fail(c, WGLLM_ERR_INVALID_ARG, "tojson: %s", d);
  }
  jctx_fail(c, WGLLM_ERR_INVALID_ARG, "tojson: Object of type %s is not JSON serializable", jv_type_name(v));
}

/* ---------- code points ---------- */
uint32_t utf8_next(const char *s, size_t n, size_t *i) {
  const unsigned char *p = (const unsigned char *)s + *i;
  size_t left = n - *i;
  unsigned c0 = p[0];
  if (c0 < 0x80) {
    (*i)++;
    return c0;
  }
  int len = c0 >= 0xf0 && c0 <= 0xf4 ? 4 : c0 >= 0xe0 ? 3 : c0 >= 0xc2 && c0 < 0xe0 ? 2 : 0;
  if (len && (size_t)len <= left) {
    uint32_t cp = c0 & (len == 2 ? 0x1f : len == 3 ? 0x0f : 0x07);
    int ok = 1;
    for (int k = 1; k < len; k++) {
      if ((p[k] & 0xc0) != 0x80) ok = 0;
      cp = (cp << 6) | (p[k] & 0x3f);
    }
    if (ok && !(len == 3 && (cp < 0x800 || (cp >= 0xd800 && cp <= 0xdfff))) &&
        !(len == 4 && (cp < 0x10000 || cp > 0x10ffff))) {
      *i += (size_t)len;
      return cp;
    }
  }
  (*i)++;
  return 0xdc00 + c0; /* as Python's surrogateescape: the byte stays itself */
}

void utf8_put(jctx *c, jsb *b, uint32_t cp) {
  char t[4];
  size_t n;
  if (cp < 0x80) {
    t[0] = (char)cp;
    n = 1;
  } else if (cp < 0x800) {
    t[0] = (char)(0xc0 | (cp >> 6));
    t[1] = (char)(0x80 | (cp & 0x3f));
    n = 2;
  } else if (cp >= 0xdc80 && cp <= 0xdcff) { /* an escaped invalid byte */
    t[0] = (char)(cp & 0xff);
    n = 1;
  } else if (cp < 0x10000) {
    t[0] = (char)(0xe0 | (cp >> 12));
    t[1] = (char)(0x80 | ((cp >> 6) & 0x3f));
    t[2] = (char)(0x80 | (cp & 0x3f));
    n = 3;
  } else {
    t[0] = (char)(0xf0 | (cp >> 18));
    t[1] = (char)(0x80 | ((cp >> 12) & 0x3f));
    t[2] = (char)(0x80 | ((cp >> 6) & 0x3f));
    t[3] = (char)(0x80 | (cp & 0x3f));
    n = 4;
  }
  jsb_put(c, b, t, n);
}

size_t utf8_count(const char *s, size_t n) {
  size_t k = 0;
  for (size_t i = 0; i < n; k++)
    utf8_next(s, n, &i);
  return k;
}

bool uc_isspace(uint32_t cp) {
  return (cp >= 0x09 && cp <= 0x0d) || (cp >= 0x1c && cp <= 0x20) || cp == 0x85 || cp == 0xa0 || cp == 0x1680 ||
         (cp >= 0x2000 && cp <= 0x200a) || cp == 0x2028 || cp == 0x2029 || cp == 0x202f || cp == 0x205f || cp == 0x3000;
}

uint32_t uc_upper(uint32_t cp) {
  if (cp < 0x80) return cp >= 'a' && cp <= 'z' ? cp - 32 : cp;
  if ((cp >= 0xe0 && cp <= 0xfe && cp != 0xf7)) return cp - 32;
  if (cp == 0xff) return 0x178;
  if (cp == 0xb5) return 0x39c;
  if (cp == 0x131) return 'I';
  if (cp == 0x17f) return 'S';
  if ((cp >= 0x100 && cp <= 0x12f) || (cp >= 0x132 && cp <= 0x137) || (cp >= 0x14a && cp <= 0x177) ||
      (cp >= 0x460 && cp <= 0x481) || (cp >= 0x48a && cp <= 0x4bf) || (cp >= 0x4d0 && cp <= 0x52f) ||
      (cp >= 0x1e00 && cp <= 0x1e95) || (cp >= 0x1ea0 && cp <= 0x1eff))
    return (cp & 1) ? cp - 1 : cp;
  if ((cp >= 0x139 && cp <= 0x148) || (cp >= 0x179 && cp <= 0x17e) || (cp >= 0x4c1 && cp <= 0x4ce))
    return (cp & 1) ? cp : cp - 1;
  if (cp >= 0x3b1 && cp <= 0x3c9 && cp != 0x3c2) return cp - 32;
  if (cp == 0x3c2) return 0x3a3;
  if (cp == 0x3ac) return 0x386;
  if (cp >= 0x3ad && cp <= 0x3af) return cp - 37;
  if (cp == 0x3cc) return 0x38c;
  if (cp == 0x3cd || cp == 0x3ce) return cp - 63;
  if (cp >= 0x430 && cp <= 0x44f) return cp - 32;
  if (cp >= 0x450 && cp <= 0x45f) return cp - 80;
  if (cp == 0x4cf) return 0x4c0;
  if (cp >= 0x561 && cp <= 0x586) return cp - 48;
  if (cp >= 0xff41 && cp <= 0xff5a) return cp - 32;
  return cp;
}

uint32_t uc_lower(uint32_t cp) {
  if (cp < 0x80) return cp >= 'A' && cp <= 'Z' ? cp + 32 : cp;
  if (cp >= 0xc0 && cp <= 0xde && cp != 0xd7) return cp + 32;
  if (cp == 0x178) return 0xff;
  if (cp == 0x130) return 'i';
  if ((cp >= 0x100 && cp <= 0x12f) || (cp >= 0x132 && cp <= 0x137) || (cp >= 0x14a && cp <= 0x177) ||
      (cp >= 0x460 && cp <= 0x481) || (cp >= 0x48a && cp <= 0x4bf) || (cp >= 0x4d0 && cp <= 0x52f) ||
      (cp >= 0x1e00 && cp <= 0x1e95) || (cp >= 0x1ea0 && cp <= 0x1eff))
    return (cp & 1) ? cp : cp + 1;
  if ((cp >= 0x139 && cp <= 0x148) || (cp >= 0x179 && cp <= 0x17e) || (cp >= 0x4c1 && cp <= 0x4ce))
    return (cp & 1) ? cp + 1 : cp;
  if (cp >= 0x391 && cp <= 0x3a9 && cp != 0x3a2) return cp + 32;
  if (cp == 0x386) return 0x3ac;
  if (cp >= 0x388 && cp <= 0x38a) return cp + 37;
  if (cp == 0x38c) return 0x3cc;
  if (cp == 0x38e || cp == 0x38f) return cp + 63;
  if (cp >= 0x410 && cp <= 0x42f) return cp + 32;
  if (cp >= 0x400 && cp <= 0x40f) return cp + 80;
  if (cp == 0x4c0) return 0x4cf;
  if (cp >= 0x531 && cp <= 0x556) return cp + 48;
  if (cp >= 0xff21 && cp <= 0xff3a) return cp + 32;
  return cp;
}

bool uc_iscased(uint32_t cp) {
  return uc_upper(cp) != cp || uc_lower(cp) != cp || cp == 0xdf || cp == 0x138 || cp == 0x149;
}

void str_upper(jctx *c, const char *s, size_t n, jsb *b) {
  jctx_work(c, n);
  for (size_t i = 0; i < n;) {
    size_t st = i;
    uint32_t cp = utf8_next(s, n, &i);
    uint32_t u = uc_upper(cp);
    if (cp == 0xdf)
      jsb_put(c, b, "SS", 2);
    else if (u == cp)
      jsb_put(c, b, s + st, i - st);
    else
      utf8_put(c, b, u);
  }
}

static bool case_ignorable(uint32_t cp) {
  return cp == '\'' || cp == '.' || cp == ':' || cp == '^' || cp == '`' || cp == 0xad || cp == 0xb7 || cp == 0x2019 ||
         (cp >= 0x300 && cp <= 0x36f);
}

/* Python's lower() of a capital sigma at [st, end) of s: final (U+03C2) after a cased letter and not before one,
   case-ignorable characters skipped on both sides */
static uint32_t sigma_lower(const char *s, size_t n, size_t st, size_t end) {
  size_t j = st;
  uint32_t cp = 0;
  bool before = false;
  while (j > 0) {
    size_t k = j;
    do
      k--;
    while (k > 0 && ((unsigned char)s[k] & 0xc0) == 0x80);
    size_t q = k;
    cp = utf8_next(s, j, &q);
    j = k;
    if (!case_ignorable(cp)) {
      before = uc_iscased(cp);
      break;
    }
  }
  if (!before) return 0x3c3;
  for (size_t i = end; i < n;) {
    cp = utf8_next(s, n, &i);
    if (!case_ignorable(cp)) return uc_iscased(cp) ? 0x3c3 : 0x3c2;
  }
  return 0x3c2;
}

void str_lower_range(jctx *c, const char *s, size_t n, size_t a, size_t e, jsb *b) {
  jctx_work(c, e - a);
  for (size_t i = a; i < e;) {
    size_t st = i;
    uint32_t cp = utf8_next(s, e, &i);
    uint32_t l = uc_lower(cp);
    if (cp == 0x130)
      jsb_put(c, b, "i\xcc\x87", 3); /* i + combining dot above, as Python */
    else if (cp == 0x3a3)
      utf8_put(c, b, sigma_lower(s, n, st, i));
    else if (l == cp)
      jsb_put(c, b, s + st, i - st);
    else
      utf8_put(c, b, l);
  }
}

void str_lower(jctx *c, const char *s, size_t n, jsb *b) { str_lower_range(c, s, n, 0, n, b); }
