/* The JSON schema converter's text and leaves (json_schema_int.h): the GBNF text and its rule names, the shared
   rules (space, string, number, the formats: written once, when first used), the keywords (annotations ignored,
   unsupported ones refused with their pointer), and the expressions of strings (lengths, formats), integers and
   numbers (ranges written digit by digit) and enums. */
#include "json_schema_int.h"
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

char *js_dup(const char *s) {
  size_t n = strlen(s) + 1;
  char *d = malloc(n);
  return d ? memcpy(d, s, n) : NULL;
}

void js_put(jb *b, const char *s, size_t n) {
  if (b->oom || !n) return;
  if (b->n + n + 1 > b->cap) {
    size_t cap = b->cap ? b->cap : 256;
    while (cap < b->n + n + 1)
      cap *= 2;
    char *t = realloc(b->s, cap);
    if (!t) {
      b->oom = 1;
      return;
    }
    b->s = t;
    b->cap = cap;
  }
  memcpy(b->s + b->n, s, n);
  b->n += n;
  b->s[b->n] = 0;
}
void js_puts(jb *b, const char *s) { js_put(b, s, strlen(s)); }
void js_printf(jb *b, const char *fmt, ...) {
  char buf[512];
  va_list ap;
  va_start(ap, fmt);
  int k = vsnprintf(buf, sizeof buf, fmt, ap);
  va_end(ap);
  if (k >= 0) js_put(b, buf, (size_t)k < sizeof buf ? (size_t)k : sizeof buf - 1);
}

static const struct {
  const char *name, *body;
  uint32_t deps; /* bits of P_* */
} prims[P_COUNT] = {
    [P_SPACE] = {"space", "| \" \" | \"\\n\"{1,2} [ \\t]{0,20}", 0},
    [P_CHAR] = {"char",
                "[^\"\\\\\\x7F\\x00-\\x1F] | [\\\\] ([\"\\\\/bfnrt] | \"u\" ([0-9a-cA-CefEF] [0-9a-fA-F]{3} | [dD] "
                "[0-7] [0-9a-fA-F]{2}))",
                0},
    [P_STRING] = {"string", "\"\\\"\" char* \"\\\"\" space", 1u << P_CHAR | 1u << P_SPACE},
    [P_INTEGRAL] = {"integral-part", "[0] | [1-9] [0-9]{0,15}", 0},
    [P_NUMBER] = {"number", "\"-\"? integral-part (\".\" [0-9]{1,16})? ([eE] [-+]? [0-9]{1,2})? space",
                  1u << P_INTEGRAL | 1u << P_SPACE},
    [P_INTEGER] = {"integer", "\"-\"? integral-part space", 1u << P_INTEGRAL | 1u << P_SPACE},
    [P_BOOLEAN] = {"boolean", "(\"true\" | \"false\") space", 1u << P_SPACE},
    [P_NULL] = {"null", "\"null\" space", 1u << P_SPACE},
    [P_VALUE] = {"value", "object | array | string | number | boolean | null",
                 1u << P_OBJECT | 1u << P_ARRAY | 1u << P_STRING | 1u << P_NUMBER | 1u << P_BOOLEAN | 1u << P_NULL},
    [P_OBJECT] = {"object",
                  "\"{\" space (string \":\" space value (\",\" space string \":\" space value)*)? \"}\" space",
                  1u << P_SPACE | 1u << P_STRING | 1u << P_VALUE},
    [P_ARRAY] = {"array", "\"[\" space (value (\",\" space value)*)? \"]\" space", 1u << P_SPACE | 1u << P_VALUE},
    [P_DATE] = {"date",
                "[1-9] [0-9]{3} \"-\" ((\"0\" [13578] | \"1\" [02]) \"-\" (\"0\" [1-9] | [12] [0-9] | \"3\" [01]) | "
                "(\"0\" [469] | \"11\") \"-\" (\"0\" [1-9] | [12] [0-9] | \"30\") | \"02-\" (\"0\" [1-9] | \"1\" [0-9] "
                "| \"2\" [0-8]))",
                0},
    [P_TIME] = {"time",
                "([01] [0-9] | \"2\" [0-3]) \":\" [0-5] [0-9] \":\" [0-5] [0-9] (\".\" [0-9]{1,9})? (\"Z\" | [+-] "
                "([01] [0-9] | \"2\" [0-3]) \":\" [0-5] [0-9])",
                0},
    [P_DATE_STRING] = {"date-string", "\"\\\"\" date \"\\\"\" space", 1u << P_DATE | 1u << P_SPACE},
    [P_TIME_STRING] = {"time-string", "\"\\\"\" time \"\\\"\" space", 1u << P_TIME | 1u << P_SPACE},
    [P_DATE_TIME_STRING] = {"date-time-string", "\"\\\"\" date \"T\" time \"\\\"\" space",
                            1u << P_DATE | 1u << P_TIME | 1u << P_SPACE},
    [P_UUID_STRING] = {"uuid-string",
                       "\"\\\"\" [0-9a-fA-F]{8} \"-\" [0-9a-fA-F]{4} \"-\" [0-9a-fA-F]{4} \"-\" [0-9a-fA-F]{4} \"-\" "
                       "[0-9a-fA-F]{12} \"\\\"\" space",
                       1u << P_SPACE},
    [P_EMAIL_STRING] = {"email-string",
                        "\"\\\"\" [a-zA-Z0-9_+-]{1,16} (\".\" [a-zA-Z0-9_+-]{1,15}){0,3} \"@\" (host-label \".\"){1,4} "
                        "[a-zA-Z]{2,12} \"\\\"\" space",
                        1u << P_HOST_LABEL | 1u << P_SPACE},
    [P_IPV4_STRING] = {"ipv4-string",
                       "\"\\\"\" ipv4-octet (\".\" ipv4-octet){3} \"\\\"\" space\n"
                       "ipv4-octet ::= \"25\" [0-5] | \"2\" [0-4] [0-9] | \"1\" [0-9] [0-9] | [1-9] [0-9] | [0-9]",
                       1u << P_SPACE},
    [P_HOST_LABEL] = {"host-label", "[a-zA-Z0-9] ([a-zA-Z0-9-]{0,30} [a-zA-Z0-9])?", 0},
    [P_HOSTNAME_STRING] = {"hostname-string", "\"\\\"\" (host-label \".\"){0,4} host-label \"\\\"\" space",
                           1u << P_HOST_LABEL | 1u << P_SPACE},
    [P_FREE_CHAR] = {"free-char", "[^\"\\\\\\x7F\\x00-\\x1F]", 0},
};

void *js_err(jctx *c, wgllm_status st, const char *fmt, ...) {
  if (c->st) return NULL;
  char msg[LLM_ERR_MSG_LEN];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  llm_err_set(c->err, st, "json schema: %s", msg);
  c->st = st;
  return NULL;
}
void *js_oom(jctx *c) { return js_err(c, WGLLM_ERR_OUT_OF_MEMORY, "out of memory"); }

/* ptr + "/" + key, the key escaped as JSON pointers do (malloc'd) */
char *js_ptr_join(const char *ptr, const char *key) {
  size_t n = strlen(ptr), k = strlen(key), e = 0;
  for (size_t i = 0; i < k; i++)
    e += key[i] == '~' || key[i] == '/';
  char *s = malloc(n + k + e + 2);
  if (!s) return NULL;
  memcpy(s, ptr, n);
  s[n++] = '/';
  for (size_t i = 0; i < k; i++) {
    if (key[i] == '~')
      s[n++] = '~', s[n++] = '0';
    else if (key[i] == '/')
      s[n++] = '~', s[n++] = '1';
    else
      s[n++] = key[i];
  }
  s[n] = 0;
  return s;
}
char *js_ptr_index(const char *ptr, int i) {
  char k[16];
  snprintf(k, sizeof k, "%d", i);
  return js_ptr_join(ptr, k);
}

const char *js_prim(jctx *c, int p) {
  c->prims_used |= 1u << p;
  return prims[p].name;
}

static int name_taken(const jctx *c, const char *s) {
  for (uint32_t i = 0; i < c->n_names; i++)
    if (!strcmp(c->names[i], s)) return 1;
  for (int p = 0; p < P_COUNT; p++)
    if (!strcmp(prims[p].name, s)) return 1;
  return !strcmp(s, "root") || !strcmp(s, "ipv4-octet");
}

/* a new rule name from hint (characters other than letters, digits and '-' become '-'), unique */
const char *js_new_name(jctx *c, const char *hint, int is_root) {
  char base[72], name[96];
  size_t k = 0;
  for (const char *h = hint; *h && k < 64; h++) {
    char ch = *h;
    base[k++] = (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || (ch >= '0' && ch <= '9') ? ch : '-';
  }
  if (!k) base[k++] = 'x';
  base[k] = 0;
  if (is_root)
    snprintf(name, sizeof name, "root");
  else {
    snprintf(name, sizeof name, "%s", base);
    for (unsigned i = 2; name_taken(c, name); i++)
      snprintf(name, sizeof name, "%s-%u", base, i);
  }
  if (c->n_names == c->cap_names) {
    uint32_t cap = c->cap_names ? 2 * c->cap_names : 64;
    char **t = realloc(c->names, cap * sizeof *t);
    if (!t) return js_oom(c);
    c->names = t;
    c->cap_names = cap;
  }
  char *s = js_dup(name);
  if (!s) return js_oom(c);
  c->names[c->n_names++] = s;
  return s;
}

int js_define(jctx *c, const char *name, const jb *body) {
  if (body->oom) return js_oom(c), -1;
  jb *d = !strcmp(name, "root") ? &c->root_def : &c->defs;
  js_printf(d, "%s ::= ", name);
  js_put(d, body->s, body->n);
  js_puts(d, "\n");
  if (d->oom) return js_oom(c), -1;
  if (c->defs.n + c->root_def.n > JS_MAX_TEXT)
    return js_err(c, WGLLM_ERR_UNSUPPORTED, "the schema's grammar is over %u bytes", JS_MAX_TEXT), -1;
  return 0;
}

/* a GBNF string literal of n bytes of UTF-8 */
void js_lit(jb *b, const char *s, size_t n) {
  js_puts(b, "\"");
  for (size_t i = 0; i < n; i++) {
    unsigned char ch = (unsigned char)s[i];
    if (ch == '"')
      js_puts(b, "\\\"");
    else if (ch == '\\')
      js_puts(b, "\\\\");
    else if (ch == '\n')
      js_puts(b, "\\n");
    else if (ch == '\r')
      js_puts(b, "\\r");
    else if (ch == '\t')
      js_puts(b, "\\t");
    else if (ch < 0x20 || ch == 0x7F)
      js_printf(b, "\\x%02X", ch);
    else
      js_put(b, (const char *)&ch, 1);
  }
  js_puts(b, "\"");
}

/* a value as compact JSON text, as a GBNF literal */
int js_json_lit(jctx *c, jb *b, const cJSON *v) {
  char *t = cJSON_PrintUnformatted(v);
  if (!t) return js_oom(c), -1;
  js_lit(b, t, strlen(t));
  free(t);
  return 0;
}

/* ---- keywords ---- */

static int is_annotation(const char *k) {
  static const char *const a[] = {"title",           "description",
                                  "examples",        "default",
                                  "$schema",         "$id",
                                  "$comment",        "deprecated",
                                  "readOnly",        "writeOnly",
                                  "$defs",           "definitions",
                                  "contentEncoding", "contentMediaType",
                                  "$anchor",         "discriminator",
                                  "contentSchema",   "example",
                                  "externalDocs",    "xml",
                                  "$vocabulary",     NULL};
  for (int i = 0; a[i]; i++)
    if (!strcmp(a[i], k)) return 1;
  return !strncmp(k, "x-", 2);
}

/* keywords that constrain a value and are not supported anywhere */
static int is_unsupported(const char *k) {
  static const char *const u[] = {"pattern",
                                  "patternProperties",
                                  "propertyNames",
                                  "if",
                                  "then",
                                  "else",
                                  "not",
                                  "dependentSchemas",
                                  "dependentRequired",
                                  "dependencies",
                                  "unevaluatedProperties",
                                  "unevaluatedItems",
                                  "contains",
                                  "minContains",
                                  "maxContains",
                                  "multipleOf",
                                  "minProperties",
                                  "maxProperties",
                                  "$dynamicRef",
                                  "$recursiveRef",
                                  "$dynamicAnchor",
                                  "$recursiveAnchor",
                                  NULL};
  for (int i = 0; u[i]; i++)
    if (!strcmp(u[i], k)) return 1;
  return 0;
}

/* refuses the unsupported keywords of schema object s */
int js_check_keywords(jctx *c, const cJSON *s, const char *ptr) {
  const cJSON *k;
  cJSON_ArrayForEach(k, s) {
    int bad = is_unsupported(k->string) || (!strcmp(k->string, "uniqueItems") && !cJSON_IsFalse(k));
    if (bad) {
      char *p = js_ptr_join(ptr, k->string);
      js_err(c, WGLLM_ERR_UNSUPPORTED, "keyword '%s' at %s is not supported", k->string, p ? p : ptr);
      free(p);
      return -1;
    }
  }
  return 0;
}

/* does s hold a key other than annotations and the allowed ones (NULL-terminated)? the first such, or NULL */
const char *js_other_key(const cJSON *s, const char *const *allowed) {
  const cJSON *k;
  cJSON_ArrayForEach(k, s) {
    if (is_annotation(k->string)) continue;
    int ok = 0;
    for (int i = 0; allowed[i] && !ok; i++)
      ok = !strcmp(allowed[i], k->string);
    if (!ok) return k->string;
  }
  return NULL;
}

/* ---- strings ---- */

int js_count_kw(jctx *c, const cJSON *s, const char *k, const char *ptr, long *v) {
  const cJSON *x = js_get(s, k);
  if (!x) return 0;
  if (!cJSON_IsNumber(x) || x->valuedouble < 0 || x->valuedouble != floor(x->valuedouble)) {
    char *p = js_ptr_join(ptr, k);
    js_err(c, WGLLM_ERR_INVALID_ARG, "'%s' at %s must be a non-negative integer", k, p ? p : ptr);
    free(p);
    return -1;
  }
  if (x->valuedouble > JS_MAX_COUNT && !strncmp(k, "min", 3)) {
    char *p = js_ptr_join(ptr, k);
    js_err(c, WGLLM_ERR_UNSUPPORTED, "'%s' at %s: over %u is not supported", k, p ? p : ptr, JS_MAX_COUNT);
    free(p);
    return -1;
  }
  *v = x->valuedouble > JS_MAX_COUNT ? JS_MAX_COUNT + 1 : (long)x->valuedouble;
  return 1;
}

/* 1: a string format written here, 2: a number format (int32 bounds integers; int64, float and double add nothing
   to a number's 16 digits), 0: not supported */
int js_format_kind(const char *f) {
  static const char *const str[] = {"date", "time", "date-time", "uuid", "email", "ipv4", "hostname", NULL};
  static const char *const num[] = {"int32", "int64", "float", "double", NULL};
  for (int i = 0; str[i]; i++)
    if (!strcmp(str[i], f)) return 1;
  for (int i = 0; num[i]; i++)
    if (!strcmp(num[i], f)) return 2;
  return 0;
}

int js_string_body(jctx *c, const cJSON *s, const char *ptr, jb *out) {
  long mn = 0, mx = -1;
  int has_mn = js_count_kw(c, s, "minLength", ptr, &mn), has_mx = js_count_kw(c, s, "maxLength", ptr, &mx);
  if (has_mn < 0 || has_mx < 0) return -1;
  if (has_mx && mx > JS_MAX_COUNT)
    return js_err(c, WGLLM_ERR_UNSUPPORTED, "maxLength at %s/maxLength: over %u is not supported", ptr, JS_MAX_COUNT),
           -1;
  const cJSON *f = js_get(s, "format");
  if (f && cJSON_IsString(f) && js_format_kind(f->valuestring) == 2) f = NULL; /* a number's format */
  if (f) {
    if (!cJSON_IsString(f)) return js_err(c, WGLLM_ERR_INVALID_ARG, "'format' at %s/format must be a string", ptr), -1;
    static const struct {
      const char *fmt;
      int prim;
    } known[] = {{"date", P_DATE_STRING},        {"time", P_TIME_STRING},   {"date-time", P_DATE_TIME_STRING},
                 {"uuid", P_UUID_STRING},        {"email", P_EMAIL_STRING}, {"ipv4", P_IPV4_STRING},
                 {"hostname", P_HOSTNAME_STRING}};
    for (size_t i = 0; i < sizeof known / sizeof *known; i++)
      if (!strcmp(known[i].fmt, f->valuestring)) {
        if (has_mn || has_mx)
          return js_err(c, WGLLM_ERR_UNSUPPORTED, "minLength or maxLength with format '%s' at %s is not supported",
                        f->valuestring, js_where(ptr)),
                 -1;
        js_puts(out, js_prim(c, known[i].prim));
        return 0;
      }
    return js_err(c, WGLLM_ERR_UNSUPPORTED,
                  "format '%s' at %s/format is not supported (date, time, date-time, uuid, email, ipv4, hostname are)",
                  f->valuestring, ptr),
           -1;
  }
  if (has_mx && mx < mn)
    return js_err(c, WGLLM_ERR_INVALID_ARG, "maxLength %ld below minLength %ld at %s: no string fits", mx, mn,
                  js_where(ptr)),
           -1;
  if (!has_mn && !has_mx) {
    js_puts(out, js_prim(c, P_STRING));
    return 0;
  }
  js_prim(c, P_CHAR), js_prim(c, P_SPACE);
  if (has_mx)
    js_printf(out, "\"\\\"\" char{%ld,%ld} \"\\\"\" space", mn, mx);
  else
    js_printf(out, "\"\\\"\" char{%ld,} \"\\\"\" space", mn);
  return 0;
}

/* ---- numbers ---- */

int js_read_bounds(jctx *c, const cJSON *s, const char *ptr, jbounds *b) {
  memset(b, 0, sizeof *b);
  static const char *const kw[] = {"minimum", "exclusiveMinimum", "maximum", "exclusiveMaximum"};
  for (int i = 0; i < 4; i++) {
    const cJSON *x = js_get(s, kw[i]);
    if (!x) continue;
    int excl = i & 1, upper = i >= 2;
    if (excl && cJSON_IsBool(x)) { /* draft 4: makes minimum / maximum exclusive */
      if (cJSON_IsTrue(x)) {
        if (upper)
          b->hi_x = 1;
        else
          b->lo_x = 1;
      }
      continue;
    }
    if (!cJSON_IsNumber(x) || !isfinite(x->valuedouble))
      return js_err(c, WGLLM_ERR_INVALID_ARG, "'%s' at %s/%s must be a number", kw[i], ptr, kw[i]), -1;
    double v = x->valuedouble;
    if (!upper && (!b->has_lo || v > b->lo || (v == b->lo && excl)))
      b->has_lo = 1, b->lo = v, b->lo_x = excl, b->lo_kw = kw[i];
    if (upper && (!b->has_hi || v < b->hi || (v == b->hi && excl)))
      b->has_hi = 1, b->hi = v, b->hi_x = excl, b->hi_kw = kw[i];
  }
  const cJSON *f = js_get(s, "format");
  if (cJSON_IsString(f) && !strcmp(f->valuestring, "int32")) {
    if (!b->has_lo || b->lo < -2147483648.0) b->has_lo = 1, b->lo = -2147483648.0, b->lo_x = 0, b->lo_kw = "int32";
    if (!b->has_hi || b->hi > 2147483647.0) b->has_hi = 1, b->hi = 2147483647.0, b->hi_x = 0, b->hi_kw = "int32";
  }
  if ((b->lo_x && !b->has_lo) || (b->hi_x && !b->has_hi))
    return js_err(c, WGLLM_ERR_INVALID_ARG, "exclusiveMinimum/exclusiveMaximum true at %s without its bound",
                  js_where(ptr)),
           -1;
  return 0;
}

static void digits_of(long long x, int len, char *out) { /* len digits, leading zeros */
  for (int i = len - 1; i >= 0; i--)
    out[i] = (char)('0' + x % 10), x /= 10;
  out[len] = 0;
}

/* the strings of exactly len digits from lo to hi (same length, lo <= hi) */
static void same_len(jb *o, const char *lo, const char *hi, int len) {
  if (len == 1) {
    if (lo[0] == hi[0])
      js_printf(o, "\"%c\"", lo[0]);
    else
      js_printf(o, "[%c-%c]", lo[0], hi[0]);
    return;
  }
  if (lo[0] == hi[0]) {
    js_printf(o, "\"%c\" ", lo[0]);
    same_len(o, lo + 1, hi + 1, len - 1);
    return;
  }
  int lo_zero = 1, hi_nine = 1;
  for (int i = 1; i < len; i++)
    lo_zero &= lo[i] == '0', hi_nine &= hi[i] == '9';
  char start = (char)(lo[0] + !lo_zero), end = (char)(hi[0] - !hi_nine);
  char nines[24], zeros[24];
  memset(nines, '9', (size_t)len - 1), memset(zeros, '0', (size_t)len - 1);
  nines[len - 1] = zeros[len - 1] = 0;
  int alts = 0;
  js_puts(o, "(");
  if (!lo_zero) {
    js_printf(o, "\"%c\" ", lo[0]);
    same_len(o, lo + 1, nines, len - 1);
    alts++;
  }
  if (start <= end) {
    if (alts++) js_puts(o, " | ");
    if (start == end)
      js_printf(o, "\"%c\" [0-9]{%d}", start, len - 1);
    else
      js_printf(o, "[%c-%c] [0-9]{%d}", start, end, len - 1);
  }
  if (!hi_nine) {
    if (alts++) js_puts(o, " | ");
    js_printf(o, "\"%c\" ", hi[0]);
    same_len(o, zeros, hi + 1, len - 1);
  }
  js_puts(o, ")");
}

static int ndigits(long long x) {
  int d = 1;
  while (x >= 10)
    x /= 10, d++;
  return d;
}

/* the canonical decimals of a..b (0 <= a <= b <= JS_MAX_MAG) as one expression */
static void int_range(jb *o, long long a, long long b) {
  int da = ndigits(a), db = ndigits(b);
  js_puts(o, "(");
  long long p = 1;
  for (int i = 1; i < da; i++)
    p *= 10;
  for (int len = da; len <= db; len++, p *= 10) {
    long long lo = len == da ? a : p, hi = len == db ? b : p * 10 - 1;
    char sl[24], sh[24];
    digits_of(lo, len, sl), digits_of(hi, len, sh);
    if (len > da) js_puts(o, " | ");
    same_len(o, sl, sh, len);
  }
  js_puts(o, ")");
}

int js_integer_body(jctx *c, const cJSON *s, const char *ptr, const jbounds *b, jb *out) {
  long long lo = 0, hi = 0;
  if (b->has_lo) {
    double v = b->lo_x ? floor(b->lo) + 1 : ceil(b->lo);
    if (v > (double)JS_MAX_MAG)
      return js_err(c, WGLLM_ERR_UNSUPPORTED, "%s %.17g at %s: integers past 16 digits are not supported", b->lo_kw,
                    b->lo, js_where(ptr)),
             -1;
    lo = v < -(double)JS_MAX_MAG ? -JS_MAX_MAG : (long long)v;
  }
  if (b->has_hi) {
    double v = b->hi_x ? ceil(b->hi) - 1 : floor(b->hi);
    if (v < -(double)JS_MAX_MAG)
      return js_err(c, WGLLM_ERR_UNSUPPORTED, "%s %.17g at %s: integers past 16 digits are not supported", b->hi_kw,
                    b->hi, js_where(ptr)),
             -1;
    hi = v > (double)JS_MAX_MAG ? JS_MAX_MAG : (long long)v;
  }
  int has_lo = b->has_lo && lo > -JS_MAX_MAG, has_hi = b->has_hi && hi < JS_MAX_MAG;
  if (has_lo && has_hi && lo > hi)
    return js_err(c, WGLLM_ERR_INVALID_ARG, "no integer lies between the bounds at %s", js_where(ptr)), -1;
  if (!has_lo && !has_hi) {
    js_puts(out, js_prim(c, P_INTEGER));
    return 0;
  }
  js_prim(c, P_SPACE);
  js_puts(out, "(");
  int alts = 0;
  if (!has_lo || lo < 0) { /* negative: magnitudes max(1, -hi) .. -lo */
    long long a = has_hi && hi < 0 ? -hi : 1, z = has_lo ? -lo : JS_MAX_MAG;
    js_puts(out, "\"-\" ");
    int_range(out, a, z);
    alts++;
  }
  if (!has_hi || hi >= 0) {
    if (alts++) js_puts(out, " | ");
    int_range(out, has_lo && lo > 0 ? lo : 0, has_hi ? hi : JS_MAX_MAG);
  }
  js_puts(out, ") space");
  return 0;
}

#define FRAC_ANY "(\".\" [0-9]{1,16})?"
#define FRAC_ZERO "(\".\" \"0\"{1,16})?"
#define FRAC_NZ "\".\" \"0\"{0,15} [1-9] [0-9]{0,15}"

/* decimals I(.F) of values in [l, h] (l_x, h_x: exclusive; has_h 0: no bound), l and h integers >= 0, as
   alternatives appended to o (each after " | " when *alts); the count added */
static int mag_num(jb *o, long long l, int l_x, int has_h, long long h, int h_x, int *alts) {
  int before = *alts;
#define ALT() (void)((*alts)++ ? js_puts(o, " | ") : (void)0)
  if (!has_h) {
    ALT();
    if (!l_x) {
      int_range(o, l, JS_MAX_MAG);
      js_puts(o, " " FRAC_ANY);
    } else {
      js_printf(o, "\"%lld\" " FRAC_NZ, l);
      if (l < JS_MAX_MAG) {
        js_puts(o, " | ");
        int_range(o, l + 1, JS_MAX_MAG);
        js_puts(o, " " FRAC_ANY);
      }
    }
  } else if (h == l) {
    if (!l_x && !h_x) ALT(), js_printf(o, "\"%lld\" " FRAC_ZERO, l);
  } else if (h > l) {
    ALT();
    js_printf(o, "\"%lld\" %s", l, l_x ? FRAC_NZ : FRAC_ANY);
    if (l + 1 <= h - 1) {
      js_puts(o, " | ");
      int_range(o, l + 1, h - 1);
      js_puts(o, " " FRAC_ANY);
    }
    if (!h_x) js_printf(o, " | \"%lld\" " FRAC_ZERO, h);
  }
#undef ALT
  return *alts - before;
}

int js_number_body(jctx *c, const cJSON *s, const char *ptr, const jbounds *b, jb *out) {
  if (!b->has_lo && !b->has_hi) {
    js_puts(out, js_prim(c, P_NUMBER));
    return 0;
  }
  for (int i = 0; i < 2; i++) {
    int has = i ? b->has_hi : b->has_lo;
    double v = i ? b->hi : b->lo;
    const char *kw = i ? b->hi_kw : b->lo_kw;
    if (has && (v != floor(v) || fabs(v) > (double)JS_MAX_MAG))
      return js_err(c, WGLLM_ERR_UNSUPPORTED,
                    "%s %.17g at %s/%s: number bounds other than integers of up to 16 digits are not supported", kw, v,
                    ptr, kw),
             -1;
  }
  long long lo = (long long)b->lo, hi = (long long)b->hi;
  js_prim(c, P_SPACE);
  jb part = {0};
  int alts = 0;
  js_puts(&part, "(");
  if (!b->has_hi || hi > 0 || (hi == 0 && !b->hi_x)) /* x >= 0 */
    mag_num(&part, b->has_lo && lo >= 0 ? lo : 0, b->has_lo && lo >= 0 && b->lo_x, b->has_hi, hi, b->hi_x, &alts);
  if (!b->has_lo || lo < 0) { /* x < 0: -y with y in (max(0, -hi), -lo] */
    jb neg = {0};
    int n_alts = 0;
    int a_x = !b->has_hi || hi >= 0 ? 1 : b->hi_x;
    long long a = !b->has_hi || hi >= 0 ? 0 : -hi;
    if (mag_num(&neg, a, a_x, b->has_lo, -lo, b->lo_x, &n_alts)) {
      if (alts++) js_puts(&part, " | ");
      js_puts(&part, "\"-\" (");
      js_put(&part, neg.s, neg.n);
      js_puts(&part, ")");
    }
    if (neg.oom) part.oom = 1;
    free(neg.s);
  }
  js_puts(&part, ") space");
  if (!alts) {
    free(part.s);
    return js_err(c, WGLLM_ERR_INVALID_ARG, "no number lies between the bounds at %s", js_where(ptr)), -1;
  }
  if (part.oom) return free(part.s), js_oom(c), -1;
  js_put(out, part.s, part.n);
  free(part.s);
  return 0;
}

/* ---- enum and const ---- */

int js_value_types(const cJSON *v) {
  if (cJSON_IsNull(v)) return T_NULL;
  if (cJSON_IsBool(v)) return T_BOOL;
  if (cJSON_IsObject(v)) return T_OBJECT;
  if (cJSON_IsArray(v)) return T_ARRAY;
  if (cJSON_IsString(v)) return T_STRING;
  return v->valuedouble == floor(v->valuedouble) ? T_INT : T_FRAC;
}

int js_type_bits(const char *t) {
  static const struct {
    const char *name;
    int bits;
  } tt[] = {{"null", T_NULL},     {"boolean", T_BOOL}, {"object", T_OBJECT},      {"array", T_ARRAY},
            {"string", T_STRING}, {"integer", T_INT},  {"number", T_INT | T_FRAC}};
  for (size_t i = 0; i < sizeof tt / sizeof *tt; i++)
    if (!strcmp(tt[i].name, t)) return tt[i].bits;
  return 0;
}

/* the "type" keyword's bits (T_ALL when absent; "nullable": true adds null); -1 on a malformed one */
int js_declared_types(jctx *c, const cJSON *s, const char *ptr) {
  const cJSON *t = js_get(s, "type");
  int bits = 0;
  if (!t)
    bits = T_ALL;
  else if (cJSON_IsString(t)) {
    if (!(bits = js_type_bits(t->valuestring)))
      return js_err(c, WGLLM_ERR_INVALID_ARG, "unknown type '%s' at %s/type", t->valuestring, ptr), -1;
  } else if (cJSON_IsArray(t) && cJSON_GetArraySize(t)) {
    const cJSON *x;
    cJSON_ArrayForEach(x, t) {
      int b = cJSON_IsString(x) ? js_type_bits(x->valuestring) : 0;
      if (!b)
        return js_err(c, WGLLM_ERR_INVALID_ARG, "type at %s/type: each entry must be a type name (\"string\", ...)",
                      ptr),
               -1;
      bits |= b;
    }
  } else
    return js_err(c, WGLLM_ERR_INVALID_ARG, "type at %s/type must be a string or a non-empty list of strings", ptr), -1;
  if (cJSON_IsTrue(js_get(s, "nullable"))) bits |= T_NULL;
  return bits;
}

int js_enum_body(jctx *c, const cJSON *s, const char *ptr, jb *out) {
  static const char *const beside[] = {"enum", "const", "type", "nullable", NULL};
  const char *o = js_other_key(s, beside);
  if (o)
    return js_err(c, WGLLM_ERR_UNSUPPORTED, "'%s' beside enum or const at %s is not supported", o, js_where(ptr)), -1;
  const cJSON *e = js_get(s, "enum"), *k = js_get(s, "const");
  if (e && k)
    return js_err(c, WGLLM_ERR_UNSUPPORTED, "enum and const together at %s are not supported", js_where(ptr)), -1;
  if (e && (!cJSON_IsArray(e) || !cJSON_GetArraySize(e)))
    return js_err(c, WGLLM_ERR_INVALID_ARG, "enum at %s/enum must be a non-empty list", ptr), -1;
  int types = js_declared_types(c, s, ptr);
  if (types < 0) return -1;
  int n = 0;
  js_puts(out, "(");
  const cJSON *v = k;
  for (const cJSON *x = e ? e->child : k; x; x = e ? x->next : NULL) {
    v = x;
    int vt = js_value_types(v);
    if (!(vt & types)) continue;
    if (n++) js_puts(out, " | ");
    if (js_json_lit(c, out, v)) return -1;
  }
  if (cJSON_IsTrue(js_get(s, "nullable"))) {
    int has_null = 0;
    for (const cJSON *x = e ? e->child : k; x; x = e ? x->next : NULL)
      has_null |= cJSON_IsNull(x);
    if (!has_null) js_puts(out, n++ ? " | \"null\"" : "\"null\"");
  }
  if (!n)
    return js_err(c, WGLLM_ERR_INVALID_ARG, "%s at %s: no value has the schema's type", e ? "enum" : "const",
                  js_where(ptr)),
           -1;
  js_printf(out, ") %s", js_prim(c, P_SPACE));
  return 0;
}

void js_ctx_free(jctx *c) {
  for (uint32_t i = 0; i < c->n_names; i++)
    free(c->names[i]);
  for (uint32_t i = 0; i < c->n_refs; i++)
    free(c->ref_keys[i]);
  free(c->names), free(c->ref_keys), free(c->ref_names), free(c->defs.s), free(c->root_def.s);
}

/* the text: root, the rules, then the shared rules used (and what they use) */
char *js_assemble(jctx *c) {
  for (int changed = 1; changed;) {
    changed = 0;
    for (int p = 0; p < P_COUNT; p++)
      if ((c->prims_used >> p & 1) && (c->prims_used | prims[p].deps) != c->prims_used)
        c->prims_used |= prims[p].deps, changed = 1;
  }
  jb out = {0};
  js_put(&out, c->root_def.s, c->root_def.n);
  js_put(&out, c->defs.s, c->defs.n);
  for (int p = 0; p < P_COUNT; p++)
    if (c->prims_used >> p & 1) js_printf(&out, "%s ::= %s\n", prims[p].name, prims[p].body);
  if (out.oom) {
    free(out.s);
    return js_oom(c);
  }
  return out.s;
}
