/* What the two files of the JSON schema converter share (json_schema.c: the schema's structure: $ref, objects,
   arrays, anyOf / oneOf / allOf; json_schema_values.c: the GBNF text and its rule names, the shared rules, the
   keywords, strings, numbers and enums) and nothing else may use. */
#ifndef WGLLM_JSON_SCHEMA_INT_H
#define WGLLM_JSON_SCHEMA_INT_H
#include "grammar_int.h"
#include <cjson/cJSON.h>

#define JS_MAX_DEPTH 64             /* nested schemas followed while generating one rule */
#define JS_MAX_TEXT (8u << 20)      /* bytes of GBNF text */
#define JS_MAX_MAG 9999999999999999 /* the largest magnitude written (16 digits, as unbounded numbers) */
#define JS_MAX_COUNT 10000          /* maxLength, maxItems: the grammar's repetition bound */

/* growable text (oom set once an allocation failed: the text is then incomplete) */
typedef struct jb {
  char *s;
  size_t n, cap;
  int oom;
} jb;

/* the shared rules, written when first used */
enum {
  P_SPACE,
  P_CHAR,
  P_STRING,
  P_INTEGRAL,
  P_NUMBER,
  P_INTEGER,
  P_BOOLEAN,
  P_NULL,
  P_VALUE,
  P_OBJECT,
  P_ARRAY,
  P_DATE,
  P_TIME,
  P_DATE_STRING,
  P_TIME_STRING,
  P_DATE_TIME_STRING,
  P_UUID_STRING,
  P_EMAIL_STRING,
  P_IPV4_STRING,
  P_HOST_LABEL,
  P_HOSTNAME_STRING,
  P_FREE_CHAR,
  P_COUNT
};

/* a conversion: the schema, its first error, the rule names and texts made so far, the $ref targets written */
typedef struct jctx {
  const cJSON *root;
  llm_err *err;
  wgllm_status st;
  char **names; /* every rule name taken */
  uint32_t n_names, cap_names;
  jb defs; /* the rules other than root */
  jb root_def;
  char **ref_keys, **ref_names;
  uint32_t n_refs, cap_refs;
  uint32_t prims_used;
  int depth;
} jctx;

/* JSON value types as bits (T_INT: a number without fraction, T_FRAC: one with) */
enum { T_NULL = 1, T_BOOL = 2, T_OBJECT = 4, T_ARRAY = 8, T_STRING = 16, T_INT = 32, T_FRAC = 64, T_ALL = 127 };

/* a number's bounds (minimum / exclusiveMinimum / maximum / exclusiveMaximum, draft 4's boolean forms too) */
typedef struct jbounds {
  int has_lo, has_hi, lo_x, hi_x; /* _x: exclusive */
  double lo, hi;
  const char *lo_kw, *hi_kw;
} jbounds;

static inline const cJSON *js_get(const cJSON *s, const char *k) { return cJSON_GetObjectItemCaseSensitive(s, k); }

/* a pointer for messages ("" is the root) */
static inline const char *js_where(const char *ptr) { return *ptr ? ptr : "the root"; }

/* text */
char *js_dup(const char *s);
void js_put(jb *b, const char *s, size_t n);
void js_puts(jb *b, const char *s);
void js_printf(jb *b, const char *fmt, ...) LLM_ERR_PRINTF(2, 3);
void js_lit(jb *b, const char *s, size_t n);     /* a GBNF string literal of n bytes of UTF-8 */
int js_json_lit(jctx *c, jb *b, const cJSON *v); /* a value as compact JSON, as a GBNF literal */

/* errors: the first is kept (c->st); both return NULL so a caller can return them */
void *js_err(jctx *c, wgllm_status st, const char *fmt, ...) LLM_ERR_PRINTF(3, 4);
void *js_oom(jctx *c);
char *js_ptr_join(const char *ptr, const char *key); /* ptr + "/" + key escaped (malloc'd) */
char *js_ptr_index(const char *ptr, int i);

/* rules */
const char *js_prim(jctx *c, int p);                             /* a shared rule's name, marked used */
const char *js_new_name(jctx *c, const char *hint, int is_root); /* a rule name from hint, unique */
int js_define(jctx *c, const char *name, const jb *body);        /* name ::= body */
char *js_assemble(jctx *c); /* the whole text: root, the rules, the shared rules used (malloc'd) */
void js_ctx_free(jctx *c);

/* keywords */
int js_check_keywords(jctx *c, const cJSON *s, const char *ptr); /* refuses the unsupported ones */
/* the first key of s that is neither an annotation nor in allowed (NULL-terminated), or NULL */
const char *js_other_key(const cJSON *s, const char *const *allowed);
/* a non-negative integer keyword: 1 and *v, 0 when absent, -1 refused */
int js_count_kw(jctx *c, const cJSON *s, const char *k, const char *ptr, long *v);
int js_format_kind(const char *f); /* 1 a string format, 2 a number format, 0 not supported */
int js_type_bits(const char *t);   /* T_* of a type name, 0 when unknown */
int js_value_types(const cJSON *v);
int js_declared_types(jctx *c, const cJSON *s, const char *ptr); /* "type" and "nullable" as T_*; -1 refused */

/* the expressions of values */
int js_string_body(jctx *c, const cJSON *s, const char *ptr, jb *out);
int js_read_bounds(jctx *c, const cJSON *s, const char *ptr, jbounds *b);
int js_integer_body(jctx *c, const cJSON *s, const char *ptr, const jbounds *b, jb *out);
int js_number_body(jctx *c, const cJSON *s, const char *ptr, const jbounds *b, jb *out);
int js_enum_body(jctx *c, const cJSON *s, const char *ptr, jb *out); /* enum or const */
#endif
