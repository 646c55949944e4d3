/* JSON schema -> GBNF text (grammar.h describes what is accepted, refused and why), and the JSON object grammar:
   the schema's structure. Each schema becomes a rule (named after its place: root-address-city; a $ref target
   after its name, once, so recursion is a rule naming itself); objects are chains of rules over the properties in
   order (first_i: nothing written yet, rest_i: after a property, so commas come only between properties), arrays
   and tuples sequences with their counts, and oneOf is accepted only where its alternatives provably cannot both
   match. The leaves (strings, numbers, enums) and the text are json_schema_values.c's. */
#include "json_schema_int.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- $ref ---- */

/* the schema a local reference names, or NULL */
static const cJSON *resolve(const jctx *c, const char *ref) {
  if (ref[0] != '#') return NULL;
  const cJSON *s = c->root;
  const char *p = ref + 1;
  while (*p == '/') {
    p++;
    char seg[256];
    size_t k = 0;
    while (*p && *p != '/' && k < sizeof seg - 1) {
      if (p[0] == '~' && p[1] == '0')
        seg[k++] = '~', p += 2;
      else if (p[0] == '~' && p[1] == '1')
        seg[k++] = '/', p += 2;
      else
        seg[k++] = *p++;
    }
    seg[k] = 0;
    if (cJSON_IsArray(s)) {
      char *e;
      long i = strtol(seg, &e, 10);
      s = *e || !k ? NULL : cJSON_GetArrayItem(s, (int)i);
    } else
      s = cJSON_IsObject(s) ? js_get(s, seg) : NULL;
    if (!s) return NULL;
  }
  return *p ? NULL : s;
}

/* follows $ref chains (for the checks that compare schemas): the schema, or s when it is no reference */
static const cJSON *deref(const jctx *c, const cJSON *s) {
  for (int i = 0; i < 32 && cJSON_IsObject(s); i++) {
    const cJSON *r = js_get(s, "$ref");
    if (!cJSON_IsString(r)) break;
    const cJSON *t = resolve(c, r->valuestring);
    if (!t) break;
    s = t;
  }
  return s;
}

static const char *rule_for(jctx *c, const cJSON *s, const char *ptr, const char *hint);
static int body_for(jctx *c, const cJSON *s, const char *ptr, const char *name, jb *out);

static const char *ref_rule(jctx *c, const cJSON *r, const char *ptr) {
  if (!cJSON_IsString(r)) return js_err(c, WGLLM_ERR_INVALID_ARG, "$ref at %s must be a string", ptr);
  const char *ref = r->valuestring;
  for (uint32_t i = 0; i < c->n_refs; i++)
    if (!strcmp(c->ref_keys[i], ref)) return c->ref_names[i];
  if (ref[0] != '#')
    return js_err(c, WGLLM_ERR_UNSUPPORTED, "$ref '%s' at %s: only references inside the schema (#/...) are supported",
                  ref, ptr);
  const cJSON *t = resolve(c, ref);
  if (!t) return js_err(c, WGLLM_ERR_INVALID_ARG, "$ref '%s' at %s names nothing in the schema", ref, ptr);
  const char *last = strrchr(ref, '/');
  const char *name = t == c->root ? "root" : js_new_name(c, last && last[1] ? last + 1 : "ref", 0);
  if (!name) return NULL;
  if (c->n_refs == c->cap_refs) {
    uint32_t cap = c->cap_refs ? 2 * c->cap_refs : 16;
    char **a = realloc(c->ref_keys, cap * sizeof *a), **b = a ? realloc(c->ref_names, cap * sizeof *b) : NULL;
    if (a) c->ref_keys = a;
    if (!a || !b) return js_oom(c);
    c->ref_names = b;
    c->cap_refs = cap;
  }
  char *key = js_dup(ref);
  if (!key) return js_oom(c);
  c->ref_keys[c->n_refs] = key;
  c->ref_names[c->n_refs++] = (char *)name;
  if (t == c->root) return name; /* root's rule is the whole schema's, written by the caller */
  jb body = {0};
  int rc = body_for(c, t, ref + 1, name, &body);
  if (!rc) rc = js_define(c, name, &body);
  free(body.s);
  return rc ? NULL : name;
}

/* ---- objects ---- */

static const cJSON any_value = {.type = cJSON_True}; /* an absent additionalProperties that allows any */

typedef struct jprop {
  const char *key;
  const cJSON *schema;
  char *ptr;
  int required;
} jprop;

typedef struct jobj {
  jprop *p;
  uint32_t n, cap;
  const cJSON *addl; /* NULL: no other properties; else true or a schema */
  char *addl_ptr;
  const char *name;
  char **first, **rest; /* [n + 1] the chain's rule names, made when used */
  const char *kvx;      /* the rule of an other property */
} jobj;

static void jobj_free(jobj *o) {
  for (uint32_t i = 0; i < o->n; i++)
    free(o->p[i].ptr);
  free(o->p), free(o->addl_ptr), free(o->first), free(o->rest);
}

static int jobj_add(jctx *c, jobj *o, const char *key, const cJSON *schema, const char *ptr) {
  for (uint32_t i = 0; i < o->n; i++)
    if (!strcmp(o->p[i].key, key)) {
      if (!schema) return 0; /* named by required only */
      if (!o->p[i].schema) { /* was named by required only */
        char *p = js_dup(ptr);
        if (!p) return js_oom(c), -1;
        free(o->p[i].ptr);
        o->p[i].ptr = p;
        o->p[i].schema = schema;
        return 0;
      }
      if (cJSON_Compare(o->p[i].schema, schema, 1)) return 0;
      return js_err(c, WGLLM_ERR_UNSUPPORTED, "property '%s' at %s and %s: two different schemas are not merged", key,
                    o->p[i].ptr, ptr),
             -1;
    }
  if (o->n == o->cap) {
    uint32_t cap = o->cap ? 2 * o->cap : 8;
    jprop *t = realloc(o->p, cap * sizeof *t);
    if (!t) return js_oom(c), -1;
    o->p = t;
    o->cap = cap;
  }
  char *p = js_dup(ptr);
  if (!p) return js_oom(c), -1;
  o->p[o->n++] = (jprop){key, schema, p, 0};
  return 0;
}

/* properties, required and additionalProperties of object schema s into o */
static int jobj_read(jctx *c, jobj *o, const cJSON *s, const char *ptr, int merging) {
  const cJSON *props = js_get(s, "properties"), *req = js_get(s, "required"), *x;
  if (props && !cJSON_IsObject(props))
    return js_err(c, WGLLM_ERR_INVALID_ARG, "properties at %s/properties must be an object", ptr), -1;
  char *pp = js_ptr_join(ptr, "properties");
  if (!pp) return js_oom(c), -1;
  cJSON_ArrayForEach(x, props) {
    char *p = js_ptr_join(pp, x->string);
    int rc = p ? jobj_add(c, o, x->string, x, p) : (js_oom(c), -1);
    free(p);
    if (rc) return free(pp), -1;
  }
  free(pp);
  const cJSON *a = js_get(s, "additionalProperties");
  if (a && !cJSON_IsBool(a) && !cJSON_IsObject(a))
    return js_err(c, WGLLM_ERR_INVALID_ARG, "additionalProperties at %s/additionalProperties must be a schema", ptr),
           -1;
  if (merging && a && !cJSON_IsFalse(a))
    return js_err(c, WGLLM_ERR_UNSUPPORTED, "allOf: additionalProperties other than false at %s/additionalProperties",
                  ptr),
           -1;
  if (!merging) { /* absent: none when properties are declared, any when none are */
    if (!a)
      o->addl = props && cJSON_GetArraySize(props) ? NULL : &any_value;
    else
      o->addl = cJSON_IsFalse(a) ? NULL : a;
    if (o->addl && !(o->addl_ptr = js_ptr_join(ptr, "additionalProperties"))) return js_oom(c), -1;
  }
  if (req && !cJSON_IsArray(req))
    return js_err(c, WGLLM_ERR_INVALID_ARG, "required at %s/required must be a list of names", ptr), -1;
  int i = 0;
  cJSON_ArrayForEach(x, req) {
    if (!cJSON_IsString(x))
      return js_err(c, WGLLM_ERR_INVALID_ARG, "required at %s/required/%d must be a property name", ptr, i), -1;
    uint32_t k = 0;
    while (k < o->n && strcmp(o->p[k].key, x->valuestring))
      k++;
    if (k == o->n) {
      if (!merging && !o->addl)
        return js_err(c, WGLLM_ERR_INVALID_ARG,
                      "required property '%s' at %s/required/%d is not among the properties, and no others are allowed",
                      x->valuestring, ptr, i),
               -1;
      if (!merging)
        return js_err(c, WGLLM_ERR_UNSUPPORTED,
                      "required property '%s' at %s/required/%d is not among the properties (not supported)",
                      x->valuestring, ptr, i),
               -1;
      /* merging: the property may come from another allOf schema: checked after the merge */
      char *p = js_ptr_index(ptr, i);
      int rc = p ? jobj_add(c, o, x->valuestring, NULL, p) : (js_oom(c), -1);
      free(p);
      if (rc) return -1;
      k = o->n - 1;
    }
    o->p[k].required = 1;
    i++;
  }
  return 0;
}

/* an expression for the JSON string of a key not among o's (unescaped characters only), after the opening quote:
   keys[0..n) share their first d bytes */
static int not_keys(jctx *c, jb *out, const char **keys, uint32_t n, size_t d) {
  js_puts(out, "(");
  int alts = 0, ends = 0;
  for (uint32_t i = 0; i < n; i++)
    ends |= keys[i][d] == 0;
  if (!ends) js_puts(out, "\"\\\"\""), alts++;
  jb cls = {0};
  js_puts(&cls, "[^\"\\\\\\x7F\\x00-\\x1F");
  for (uint32_t i = 0; i < n;) { /* keys sorted: groups of the same next character */
    if (!keys[i][d]) {
      i++;
      continue;
    }
    uint32_t cp;
    unsigned char b = (unsigned char)keys[i][d];
    size_t len = b < 0x80 ? 1 : b < 0xE0 ? 2 : b < 0xF0 ? 3 : 4;
    uint32_t j = i + 1;
    while (j < n && !strncmp(keys[j] + d, keys[i] + d, len))
      j++;
    cp = 0;
    for (size_t q = 0; q < len; q++)
      cp = cp << 6 | ((unsigned char)keys[i][d + q] & (q ? 0x3F : 0xFF >> (len + 1)));
    if (len == 1) cp = b;
    js_printf(&cls, "\\U%08X", (unsigned)cp);
    if (alts++) js_puts(out, " | ");
    js_lit(out, keys[i] + d, len);
    js_puts(out, " ");
    if (not_keys(c, out, keys + i, j - i, d + len)) return free(cls.s), -1;
    i = j;
  }
  js_puts(&cls, "]");
  if (alts++) js_puts(out, " | ");
  js_put(out, cls.s, cls.n);
  js_printf(out, " %s* \"\\\"\"", js_prim(c, P_FREE_CHAR));
  free(cls.s);
  js_puts(out, ")");
  return 0;
}

static int cmp_str(const void *a, const void *b) { return strcmp(*(const char *const *)a, *(const char *const *)b); }

/* the rule of one property written beyond the declared ones */
static const char *extra_kv(jctx *c, jobj *o) {
  if (o->kvx) return o->kvx;
  char hint[128];
  snprintf(hint, sizeof hint, "%s-additional", o->name);
  const char *val = rule_for(c, o->addl, o->addl_ptr, hint);
  if (!val) return NULL;
  char h2[160];
  snprintf(h2, sizeof h2, "%s-kv", hint);
  const char *name = js_new_name(c, h2, 0);
  if (!name) return NULL;
  jb body = {0};
  if (!o->n)
    js_puts(&body, js_prim(c, P_STRING));
  else {
    const char **keys = malloc(o->n * sizeof *keys);
    if (!keys) return js_oom(c);
    uint32_t nk = 0; /* the keys an unescaped key could equal */
    for (uint32_t i = 0; i < o->n; i++) {
      int plain = 1;
      for (const unsigned char *q = (const unsigned char *)o->p[i].key; *q && plain; q++)
        plain = *q >= 0x20 && *q != '"' && *q != '\\' && *q != 0x7F;
      if (plain) keys[nk++] = o->p[i].key;
    }
    qsort(keys, nk, sizeof *keys, cmp_str);
    js_puts(&body, "\"\\\"\" ");
    int rc = not_keys(c, &body, keys, nk, 0);
    free(keys);
    if (rc) return free(body.s), NULL;
    js_printf(&body, " %s", js_prim(c, P_SPACE));
  }
  js_printf(&body, " \":\" space %s", val);
  int rc = js_define(c, name, &body);
  free(body.s);
  return rc ? NULL : (o->kvx = name);
}

static const char *chain(jctx *c, jobj *o, uint32_t i, int first, const char **kv);

/* the chain's rule at i: first (nothing written yet) or rest */
static const char *chain(jctx *c, jobj *o, uint32_t i, int first, const char **kv) {
  char **slot = first ? &o->first[i] : &o->rest[i];
  if (*slot) return *slot;
  char hint[128];
  snprintf(hint, sizeof hint, "%s-%s%u", o->name, first ? "first" : "rest", i);
  const char *name = js_new_name(c, hint, 0);
  if (!name) return NULL;
  *slot = (char *)name;
  jb body = {0};
  if (i == o->n) {
    if (!o->addl)
      js_puts(&body, "\"\"");
    else {
      const char *x = extra_kv(c, o);
      if (!x) return NULL;
      if (first)
        js_printf(&body, "(%s (\",\" space %s)*)?", x, x);
      else
        js_printf(&body, "(\",\" space %s)*", x);
    }
  } else {
    const char *next = chain(c, o, i + 1, 0, kv);
    if (!next) return NULL;
    const char *sep = first ? "" : "\",\" space ";
    if (o->p[i].required)
      js_printf(&body, "%s%s %s", sep, kv[i], next);
    else {
      const char *skip = chain(c, o, i + 1, first, kv);
      if (!skip) return NULL;
      js_printf(&body, "%s%s %s | %s", sep, kv[i], next, skip);
    }
  }
  int rc = js_define(c, name, &body);
  free(body.s);
  return rc ? NULL : name;
}

static int object_body(jctx *c, jobj *o, const char *name, jb *out) {
  o->name = name;
  js_prim(c, P_SPACE);
  const char **kv = calloc(o->n + 1, sizeof *kv);
  o->first = calloc(o->n + 1, sizeof *o->first);
  o->rest = calloc(o->n + 1, sizeof *o->rest);
  if (!kv || !o->first || !o->rest) return free(kv), js_oom(c), -1;
  uint32_t w = 0;
  for (uint32_t i = 0; i < o->n; i++) { /* a property of schema false may not appear */
    if (!o->p[i].schema)
      return free(kv),
             js_err(c, WGLLM_ERR_INVALID_ARG, "required property '%s' at %s is in no allOf schema's properties",
                    o->p[i].key, o->p[i].ptr),
             -1;
    if (cJSON_IsFalse(o->p[i].schema)) {
      if (o->p[i].required)
        return free(kv),
               js_err(c, WGLLM_ERR_INVALID_ARG, "property '%s' at %s is required but its schema is false", o->p[i].key,
                      o->p[i].ptr),
               -1;
      free(o->p[i].ptr);
      continue;
    }
    o->p[w++] = o->p[i];
  }
  o->n = w;
  for (uint32_t i = 0; i < o->n; i++) {
    char hint[160];
    snprintf(hint, sizeof hint, "%s-%s", name, o->p[i].key);
    const char *val = rule_for(c, o->p[i].schema, o->p[i].ptr, hint);
    if (!val) return free(kv), -1;
    jb body = {0};
    char *ks = NULL;
    cJSON *kj = cJSON_CreateString(o->p[i].key);
    if (kj) ks = cJSON_PrintUnformatted(kj);
    cJSON_Delete(kj);
    if (!ks) return free(kv), js_oom(c), -1;
    js_lit(&body, ks, strlen(ks));
    free(ks);
    js_printf(&body, " space \":\" space %s", val);
    char h2[200];
    snprintf(h2, sizeof h2, "%s-kv", hint);
    const char *kn = js_new_name(c, h2, 0);
    if (!kn || js_define(c, kn, &body)) return free(body.s), free(kv), -1;
    free(body.s);
    kv[i] = kn;
  }
  const char *start = chain(c, o, 0, 1, kv);
  free(kv);
  if (!start) return -1;
  js_printf(out, "\"{\" space %s \"}\" space", start);
  return 0;
}

/* ---- arrays ---- */

static int array_body(jctx *c, const cJSON *s, const char *ptr, const char *name, jb *out) {
  const cJSON *prefix = js_get(s, "prefixItems"), *items = js_get(s, "items"), *rest = items;
  const char *rest_kw = "items";
  if (cJSON_IsArray(items)) { /* draft 4 tuples */
    if (prefix) return js_err(c, WGLLM_ERR_INVALID_ARG, "items at %s/items: a list beside prefixItems", ptr), -1;
    prefix = items;
    rest = js_get(s, "additionalItems");
    rest_kw = "additionalItems";
  } else if (js_get(s, "additionalItems") && !prefix)
    rest_kw = "items"; /* additionalItems without a tuple means nothing */
  if (prefix && !cJSON_IsArray(prefix))
    return js_err(c, WGLLM_ERR_INVALID_ARG, "prefixItems at %s/prefixItems must be a list of schemas", ptr), -1;
  long mn = 0, mx = -1;
  int has_mn = js_count_kw(c, s, "minItems", ptr, &mn), has_mx = js_count_kw(c, s, "maxItems", ptr, &mx);
  if (has_mn < 0 || has_mx < 0) return -1;
  if (has_mx && mx > JS_MAX_COUNT)
    return js_err(c, WGLLM_ERR_UNSUPPORTED, "maxItems at %s/maxItems: over %u is not supported", ptr, JS_MAX_COUNT), -1;
  int k = prefix ? cJSON_GetArraySize(prefix) : 0;
  if (cJSON_IsFalse(rest) && (!has_mx || mx > k)) has_mx = 1, mx = k;
  if (has_mx && mx < mn)
    return js_err(c, WGLLM_ERR_INVALID_ARG, "no array length fits minItems %ld and maxItems/items at %s", mn,
                  js_where(ptr)),
           -1;
  js_prim(c, P_SPACE);
  const char *rest_rule = NULL;
  if (!has_mx || mx > k) {
    char hint[160], *rp = js_ptr_join(ptr, rest_kw);
    snprintf(hint, sizeof hint, "%s-item", name);
    rest_rule = !rest ? js_prim(c, P_VALUE) : rp ? rule_for(c, rest, rp, hint) : js_oom(c);
    free(rp);
    if (!rest_rule) return -1;
  }
  const char **pr = calloc((size_t)k + 1, sizeof *pr);
  if (!pr) return js_oom(c), -1;
  for (int i = 0; i < k && (!has_mx || i < mx); i++) {
    char hint[160], *pp = js_ptr_join(ptr, prefix == items ? "items" : "prefixItems"),
                    *ip = pp ? js_ptr_index(pp, i) : NULL;
    snprintf(hint, sizeof hint, "%s-%d", name, i);
    pr[i] = ip ? rule_for(c, cJSON_GetArrayItem(prefix, i), ip, hint) : js_oom(c);
    free(pp), free(ip);
    if (!pr[i]) return free(pr), -1;
  }
  if (has_mx && mx == 0) {
    js_puts(out, "\"[\" space \"]\" space");
    free(pr);
    return 0;
  }
  js_puts(out, "\"[\" space ");
  if (!mn) js_puts(out, "(");
  js_printf(out, "%s", k ? pr[0] : rest_rule);
  /* items 1..: after i items written */
  int open = 0;
  for (long i = 1;; i++) {
    if (has_mx && i >= mx) break;
    if (i >= k) { /* the rest, all of one schema */
      long lo = mn > i ? mn - i : 0;
      if (has_mx)
        js_printf(out, " (\",\" space %s){%ld,%ld}", rest_rule, lo, mx - i);
      else
        js_printf(out, " (\",\" space %s){%ld,}", rest_rule, lo);
      break;
    }
    if (i < mn)
      js_printf(out, " \",\" space %s", pr[i]);
    else {
      js_printf(out, " (\",\" space %s", pr[i]);
      open++;
    }
  }
  for (; open; open--)
    js_puts(out, ")?");
  if (!mn) js_puts(out, ")?");
  js_puts(out, " \"]\" space");
  free(pr);
  return 0;
}

/* ---- anyOf, oneOf, allOf ---- */

/* the types a schema accepts, as a validator reads it (T_ALL when it does not say) */
static int schema_types(jctx *c, const cJSON *s, int depth) {
  s = deref(c, s);
  if (cJSON_IsFalse(s)) return 0;
  if (!cJSON_IsObject(s) || depth > 16) return T_ALL;
  const cJSON *k = js_get(s, "const"), *e = js_get(s, "enum"), *x;
  int bits = T_ALL;
  if (k)
    bits = js_value_types(k);
  else if (cJSON_IsArray(e)) {
    bits = 0;
    cJSON_ArrayForEach(x, e) bits |= js_value_types(x);
  }
  const cJSON *t = js_get(s, "type");
  if (t) {
    int tb = 0;
    if (cJSON_IsString(t))
      tb = js_type_bits(t->valuestring);
    else
      cJSON_ArrayForEach(x, t) tb |= cJSON_IsString(x) ? js_type_bits(x->valuestring) : 0;
    if (cJSON_IsTrue(js_get(s, "nullable"))) tb |= T_NULL;
    bits &= tb;
  }
  const char *comb[] = {"anyOf", "oneOf"};
  for (int i = 0; i < 2; i++) {
    const cJSON *l = js_get(s, comb[i]);
    if (!cJSON_IsArray(l)) continue;
    int u = 0;
    cJSON_ArrayForEach(x, l) u |= schema_types(c, x, depth + 1);
    bits &= u;
  }
  const cJSON *all = js_get(s, "allOf");
  if (cJSON_IsArray(all)) cJSON_ArrayForEach(x, all) bits &= schema_types(c, x, depth + 1);
  return bits;
}

/* the values a schema allows, when it lists them (const or enum), else NULL */
static const cJSON *listed(const jctx *c, const cJSON *s, int *single) {
  s = deref(c, s);
  if (!cJSON_IsObject(s)) return NULL;
  const cJSON *k = js_get(s, "const");
  if (k) return *single = 1, k;
  const cJSON *e = js_get(s, "enum");
  if (cJSON_IsArray(e)) return *single = 0, e->child;
  return NULL;
}

static int lists_disjoint(const jctx *c, const cJSON *a, const cJSON *b) {
  int sa = 0, sb = 0; /* set with la, lb (a compiler at -O3 cannot tell) */
  const cJSON *la = listed(c, a, &sa), *lb = listed(c, b, &sb);
  if (!la || !lb) return 0;
  for (const cJSON *x = la; x; x = sa ? NULL : x->next)
    for (const cJSON *y = lb; y; y = sb ? NULL : y->next)
      if (cJSON_Compare(x, y, 1)) return 0;
  return 1;
}

static int is_required(const cJSON *s, const char *key) {
  const cJSON *r = js_get(s, "required"), *x;
  cJSON_ArrayForEach(x, r) if (cJSON_IsString(x) && !strcmp(x->valuestring, key)) return 1;
  return 0;
}

/* does object schema b refuse an object with property key? */
static int refuses_key(const cJSON *b, const char *key) {
  const cJSON *p = js_get(js_get(b, "properties"), key);
  if (p) return cJSON_IsFalse(p);
  return cJSON_IsFalse(js_get(b, "additionalProperties"));
}

/* can no value match both a and b (oneOf's alternatives)? 1 when that is proven */
static int disjoint(jctx *c, const cJSON *a, const cJSON *b) {
  if (!(schema_types(c, a, 0) & schema_types(c, b, 0))) return 1;
  if (lists_disjoint(c, a, b)) return 1;
  a = deref(c, a), b = deref(c, b);
  if (!cJSON_IsObject(a) || !cJSON_IsObject(b)) return 0;
  if ((schema_types(c, a, 0) | schema_types(c, b, 0)) != T_OBJECT) return 0;
  const cJSON *pa = js_get(a, "properties"), *x;
  cJSON_ArrayForEach(x, pa) {
    const cJSON *y = js_get(js_get(b, "properties"), x->string);
    if (is_required(a, x->string) && is_required(b, x->string) && y && lists_disjoint(c, x, y)) return 1;
  }
  for (int side = 0; side < 2; side++) {
    const cJSON *p = side ? b : a, *q = side ? a : b;
    const cJSON *r = js_get(p, "required");
    cJSON_ArrayForEach(x, r) if (cJSON_IsString(x) && refuses_key(q, x->valuestring)) return 1;
  }
  return 0;
}

static int alternatives(jctx *c, const cJSON *s, const char *ptr, const char *name, const char *kw, jb *out) {
  static const char *const beside[] = {"anyOf", "oneOf", NULL};
  const cJSON *l = js_get(s, kw);
  const char *o = js_other_key(s, beside);
  if (o) return js_err(c, WGLLM_ERR_UNSUPPORTED, "'%s' beside %s at %s is not supported", o, kw, js_where(ptr)), -1;
  if (js_get(s, "anyOf") && js_get(s, "oneOf"))
    return js_err(c, WGLLM_ERR_UNSUPPORTED, "anyOf and oneOf together at %s are not supported", js_where(ptr)), -1;
  if (!cJSON_IsArray(l) || !cJSON_GetArraySize(l))
    return js_err(c, WGLLM_ERR_INVALID_ARG, "%s at %s/%s must be a non-empty list of schemas", kw, ptr, kw), -1;
  int n = cJSON_GetArraySize(l);
  if (!strcmp(kw, "oneOf"))
    for (int i = 0; i < n; i++)
      for (int j = i + 1; j < n; j++)
        if (!disjoint(c, cJSON_GetArrayItem(l, i), cJSON_GetArrayItem(l, j)))
          return js_err(c, WGLLM_ERR_UNSUPPORTED,
                        "oneOf at %s/oneOf: alternatives %d and %d may both match one value (not supported; anyOf is)",
                        ptr, i, j),
                 -1;
  char *lp = js_ptr_join(ptr, kw);
  if (!lp) return js_oom(c), -1;
  js_puts(out, "(");
  for (int i = 0; i < n; i++) {
    char hint[160], *ip = js_ptr_index(lp, i);
    snprintf(hint, sizeof hint, "%s-%d", name, i);
    const char *r = ip ? rule_for(c, cJSON_GetArrayItem(l, i), ip, hint) : js_oom(c);
    free(ip);
    if (!r) return free(lp), -1;
    js_printf(out, "%s%s", i ? " | " : "", r);
  }
  js_puts(out, ")");
  free(lp);
  return 0;
}

static int all_of(jctx *c, const cJSON *s, const char *ptr, const char *name, jb *out) {
  const cJSON *l = js_get(s, "allOf");
  if (!cJSON_IsArray(l) || !cJSON_GetArraySize(l))
    return js_err(c, WGLLM_ERR_INVALID_ARG, "allOf at %s/allOf must be a non-empty list of schemas", ptr), -1;
  static const char *const alone[] = {"allOf", NULL};
  char *lp = js_ptr_join(ptr, "allOf");
  if (!lp) return js_oom(c), -1;
  if (cJSON_GetArraySize(l) == 1 && !js_other_key(s, alone)) {
    char *ip = js_ptr_index(lp, 0);
    const char *r = ip ? rule_for(c, l->child, ip, name) : js_oom(c);
    free(ip), free(lp);
    if (!r) return -1;
    js_puts(out, r);
    return 0;
  }
  /* object schemas merged: properties, required, additionalProperties false */
  static const char *const objkw[] = {"type", "properties", "required", "additionalProperties", "allOf", NULL};
  jobj o = {0};
  int rc = 0, i = -1;
  for (const cJSON *part = s; part && !rc; part = (++i < cJSON_GetArraySize(l)) ? cJSON_GetArrayItem(l, i) : NULL) {
    char *pp = i < 0 ? js_dup(ptr) : js_ptr_index(lp, i);
    const cJSON *d = i < 0 ? part : deref(c, part);
    if (!pp) {
      rc = (js_oom(c), -1);
      break;
    }
    if (d != part) { /* a reference: its target's pointer */
      free(pp);
      pp = js_dup(js_get(part, "$ref")->valuestring + 1);
      if (!pp) {
        rc = (js_oom(c), -1);
        break;
      }
    }
    const char *bad = cJSON_IsObject(d) ? js_other_key(d, objkw) : "(not an object schema)";
    const cJSON *t = cJSON_IsObject(d) ? js_get(d, "type") : NULL;
    if (!bad && t && !(cJSON_IsString(t) && !strcmp(t->valuestring, "object"))) bad = "type";
    if (!bad && i >= 0 && js_get(d, "allOf")) bad = "allOf";
    if (bad)
      rc = (js_err(c, WGLLM_ERR_UNSUPPORTED,
                   "allOf at %s: only object schemas (properties, required) are merged; '%s' at %s is not supported",
                   js_where(ptr), bad, js_where(pp)),
            -1);
    else if (!(rc = js_check_keywords(c, d, pp)))
      rc = jobj_read(c, &o, d, pp, 1);
    free(pp);
  }
  /* a schema that allows no property but its own must have them all (else no object fits both) */
  for (i = -1; !rc && i < cJSON_GetArraySize(l); i++) {
    const cJSON *d = i < 0 ? s : deref(c, cJSON_GetArrayItem(l, i));
    char which[32];
    if (i < 0)
      snprintf(which, sizeof which, "the schema holding it");
    else
      snprintf(which, sizeof which, "schema %d", i);
    for (uint32_t k = 0; !rc && cJSON_IsFalse(js_get(d, "additionalProperties")) && k < o.n; k++)
      if (!js_get(js_get(d, "properties"), o.p[k].key))
        rc = (js_err(c, WGLLM_ERR_UNSUPPORTED,
                     "allOf at %s/allOf: %s allows no property but its own, and '%s' is another's", ptr, which,
                     o.p[k].key),
              -1);
  }
  free(lp);
  if (!rc) rc = object_body(c, &o, name, out);
  jobj_free(&o);
  return rc;
}

/* ---- schemas ---- */

/* the expression of schema s (an object or a boolean) */
static int body_for(jctx *c, const cJSON *s, const char *ptr, const char *name, jb *out) {
  if (cJSON_IsTrue(s)) return js_puts(out, js_prim(c, P_VALUE)), 0;
  if (cJSON_IsFalse(s))
    return js_err(c, WGLLM_ERR_INVALID_ARG, "schema false at %s allows no value", js_where(ptr)), -1;
  if (!cJSON_IsObject(s))
    return js_err(c, WGLLM_ERR_INVALID_ARG, "the schema at %s must be an object or a boolean", js_where(ptr)), -1;
  if (++c->depth > JS_MAX_DEPTH) {
    c->depth--;
    return js_err(c, WGLLM_ERR_UNSUPPORTED, "schemas nested over %d deep at %s", JS_MAX_DEPTH, js_where(ptr)), -1;
  }
  int rc = js_check_keywords(c, s, ptr);
  const cJSON *ref = js_get(s, "$ref");
  if (rc) {
  } else if (ref) {
    static const char *const beside[] = {"$ref", NULL};
    const char *o = js_other_key(s, beside);
    char *rp = js_ptr_join(ptr, "$ref");
    const char *r = NULL;
    if (o)
      js_err(c, WGLLM_ERR_UNSUPPORTED, "'%s' beside $ref at %s is not supported", o, js_where(ptr));
    else
      r = rp ? ref_rule(c, ref, rp) : js_oom(c);
    free(rp);
    if (r) js_puts(out, r);
    rc = r ? 0 : -1;
  } else if (js_get(s, "enum") || js_get(s, "const"))
    rc = js_enum_body(c, s, ptr, out);
  else if (js_get(s, "anyOf") || js_get(s, "oneOf"))
    rc = alternatives(c, s, ptr, name, js_get(s, "anyOf") ? "anyOf" : "oneOf", out);
  else if (js_get(s, "allOf"))
    rc = all_of(c, s, ptr, name, out);
  else {
    int types = js_declared_types(c, s, ptr);
    const cJSON *f = js_get(s, "format");
    if (types < 0)
      rc = -1;
    else if (f && !cJSON_IsString(f))
      rc = -1, js_err(c, WGLLM_ERR_INVALID_ARG, "'format' at %s/format must be a string", ptr);
    else if (f && !js_format_kind(f->valuestring))
      rc = -1, js_err(c, WGLLM_ERR_UNSUPPORTED,
                      "format '%s' at %s/format is not supported (date, time, date-time, uuid, email, ipv4, hostname, "
                      "int32, int64, float and double are)",
                      f->valuestring, ptr);
    else if (!js_get(s, "type")) { /* the type the keywords imply, else any value */
      static const struct {
        const char *kw;
        int t;
      } imply[] = {{"properties", T_OBJECT},
                   {"additionalProperties", T_OBJECT},
                   {"required", T_OBJECT},
                   {"items", T_ARRAY},
                   {"prefixItems", T_ARRAY},
                   {"minItems", T_ARRAY},
                   {"maxItems", T_ARRAY},
                   {"minLength", T_STRING},
                   {"maxLength", T_STRING},
                   {"format", T_STRING},
                   {"minimum", T_INT | T_FRAC},
                   {"maximum", T_INT | T_FRAC},
                   {"exclusiveMinimum", T_INT | T_FRAC},
                   {"exclusiveMaximum", T_INT | T_FRAC}};
      int t = 0;
      for (size_t i = 0; i < sizeof imply / sizeof *imply && !t; i++)
        if (js_get(s, imply[i].kw)) t = imply[i].t;
      types = t ? t | (types & T_NULL ? T_NULL : 0) : T_ALL;
    }
    if (!rc && types == T_ALL && !js_get(s, "type") && !cJSON_IsTrue(js_get(s, "nullable")))
      js_puts(out, js_prim(c, P_VALUE));
    else if (!rc) {
      static const int order[] = {T_OBJECT, T_ARRAY, T_STRING, T_INT | T_FRAC, T_INT, T_BOOL, T_NULL};
      int alts = 0, many = __builtin_popcount((unsigned)types & ~(types & T_FRAC ? T_INT : 0)) > 1;
      if (many) js_puts(out, "(");
      jbounds b;
      if ((types & T_INT) && js_read_bounds(c, s, ptr, &b)) rc = -1;
      for (size_t i = 0; i < sizeof order / sizeof *order && !rc; i++) {
        int t = order[i];
        if ((types & t) != t || (t == T_INT && (types & T_FRAC))) continue;
        if (alts++) js_puts(out, " | ");
        if (t == T_OBJECT) {
          jobj o = {0};
          char sub[160];
          snprintf(sub, sizeof sub, "%s%s", name, many ? "-object" : "");
          rc = jobj_read(c, &o, s, ptr, 0);
          if (!rc) {
            jb ob = {0};
            const char *on = many ? js_new_name(c, sub, 0) : name;
            if (!on)
              rc = -1;
            else if (!many)
              rc = object_body(c, &o, on, out);
            else if (!(rc = object_body(c, &o, on, &ob)) && !(rc = js_define(c, on, &ob)))
              js_puts(out, on);
            free(ob.s);
          }
          jobj_free(&o);
        } else if (t == T_ARRAY)
          rc = array_body(c, s, ptr, name, out);
        else if (t == T_STRING)
          rc = js_string_body(c, s, ptr, out);
        else if (t == (T_INT | T_FRAC))
          rc = js_number_body(c, s, ptr, &b, out);
        else if (t == T_INT)
          rc = js_integer_body(c, s, ptr, &b, out);
        else if (t == T_BOOL)
          js_puts(out, js_prim(c, P_BOOLEAN));
        else
          js_puts(out, js_prim(c, P_NULL));
      }
      if (many) js_puts(out, ")");
    }
  }
  c->depth--;
  if (!rc && out->oom) return js_oom(c), -1;
  return rc ? -1 : 0;
}

/* a rule for schema s; a bare reference or any value names the existing rule */
static const char *rule_for(jctx *c, const cJSON *s, const char *ptr, const char *hint) {
  if (cJSON_IsTrue(s) || (cJSON_IsObject(s) && !s->child)) return js_prim(c, P_VALUE);
  static const char *const ref_only[] = {"$ref", NULL};
  if (cJSON_IsObject(s) && js_get(s, "$ref") && !js_other_key(s, ref_only)) {
    if (js_check_keywords(c, s, ptr)) return NULL;
    char *rp = js_ptr_join(ptr, "$ref");
    const char *r = rp ? ref_rule(c, js_get(s, "$ref"), rp) : js_oom(c);
    free(rp);
    return r;
  }
  const char *name = js_new_name(c, hint, 0);
  if (!name) return NULL;
  jb body = {0};
  int rc = body_for(c, s, ptr, name, &body);
  if (!rc) rc = js_define(c, name, &body);
  free(body.s);
  return rc ? NULL : name;
}

/* the length of the valid UTF-8 character at s (no overlong forms, surrogates or code points past U+10FFFF), 0 if
   none */
static size_t utf8_char(const unsigned char *s) {
  if (s[0] < 0x80) return 1;
  size_t n = s[0] >= 0xC2 && s[0] <= 0xDF ? 2 : s[0] >= 0xE0 && s[0] <= 0xEF ? 3 : s[0] >= 0xF0 && s[0] <= 0xF4 ? 4 : 0;
  for (size_t i = 1; i < n; i++)
    if ((s[i] & 0xC0) != 0x80) return 0;
  if (n == 3 && ((s[0] == 0xE0 && s[1] < 0xA0) || (s[0] == 0xED && s[1] >= 0xA0))) return 0;
  if (n == 4 && ((s[0] == 0xF0 && s[1] < 0x90) || (s[0] == 0xF4 && s[1] >= 0x90))) return 0;
  return n;
}

/* every key and string of the schema is UTF-8 (they become the grammar's text); NULL, or the first that is not */
static const cJSON *bad_utf8(const cJSON *j, const char **what) {
  for (; j; j = j->next) {
    const char *ss[2] = {j->string, cJSON_IsString(j) ? j->valuestring : NULL};
    for (int k = 0; k < 2; k++)
      for (const unsigned char *p = (const unsigned char *)ss[k]; p && *p;) {
        size_t n = utf8_char(p);
        if (!n) {
          *what = k ? "a string" : "a key";
          return j;
        }
        p += n;
      }
    const cJSON *b = bad_utf8(j->child, what);
    if (b) return b;
  }
  return NULL;
}

/* the schema's GBNF text, unchecked */
static wgllm_status schema_text(const cJSON *schema, char **gbnf_out, llm_err *err) {
  *gbnf_out = NULL;
  const char *what = NULL;
  if (schema && bad_utf8(schema, &what))
    return llm_err_set(err, WGLLM_ERR_INVALID_ARG, "json schema: %s in it is not valid UTF-8", what);
  jctx c = {.root = schema, .err = err};
  if (!schema) return llm_err_set(err, WGLLM_ERR_INVALID_ARG, "json schema: no schema");
  jb body = {0};
  if (!js_new_name(&c, "root", 1) || body_for(&c, schema, "", "root", &body) || js_define(&c, "root", &body)) {
    free(body.s);
    js_ctx_free(&c);
    return c.st ? c.st : WGLLM_ERR_INTERNAL;
  }
  free(body.s);
  char *text = js_assemble(&c);
  wgllm_status st = c.st;
  js_ctx_free(&c);
  if (!text) return st ? st : WGLLM_ERR_OUT_OF_MEMORY;
  *gbnf_out = text;
  return WGLLM_OK;
}

/* the schema's text compiled. A schema whose references come back to themselves before any character (a $ref to
   "#" at the root, an anyOf whose first branch names its own schema) is refused here, by the grammar's
   left-recursion check: such a value would have to contain itself. */
static wgllm_status schema_compile(const cJSON *schema, char **text, grammar **out, llm_err *err) {
  wgllm_status st = schema_text(schema, text, err);
  if (!st) st = grammar_from_gbnf(*text, strlen(*text), out, err);
  if (st && *text) {
    llm_err_prefix(err, "json schema: the grammar made from the schema");
    free(*text);
    *text = NULL;
  }
  return st;
}

wgllm_status grammar_schema_to_gbnf(const cJSON *schema, char **gbnf_out, llm_err *err) {
  grammar *g = NULL;
  wgllm_status st = schema_compile(schema, gbnf_out, &g, err);
  grammar_free(g);
  return st;
}

wgllm_status grammar_from_json_schema(const cJSON *schema, grammar **out, llm_err *err) {
  *out = NULL;
  char *text = NULL;
  wgllm_status st = schema_compile(schema, &text, out, err);
  free(text);
  return st;
}

wgllm_status grammar_json_object(grammar **out, llm_err *err) {
  jctx c = {0};
  jb t = {0};
  js_prim(&c, P_OBJECT);
  js_puts(&t, "root ::= object\n");
  char *rest = js_assemble(&c);
  if (rest) js_puts(&t, rest);
  free(rest);
  js_ctx_free(&c);
  if (t.oom || !rest) {
    free(t.s);
    return llm_err_set(err, WGLLM_ERR_OUT_OF_MEMORY, "json object grammar: out of memory");
  }
  wgllm_status st = grammar_from_gbnf(t.s, t.n, out, err);
  free(t.s);
  return st;
}
