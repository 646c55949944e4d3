/* Internals of the Jinja subset (jinja.h), shared by its four files: jinja_value.c (arena, values, Python's
   str/repr/json.dumps, comparisons, UTF-8 and case helpers), jinja_parse.c (lexer and parser to the AST),
   jinja_eval.c (the evaluator, scopes, loops, macros) and jinja_builtins.c (filters, tests, methods, globals).
   Every value and AST node lives in an arena; an error unwinds by longjmp to jinja_parse / jinja_render, which
   then free the arenas, so nothing leaks and no path forgets a check. */
#ifndef WGLLM_JINJA_INTERNAL_H
#define WGLLM_JINJA_INTERNAL_H
#include "jinja.h"
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdnoreturn.h>

/* ---- errors ---- */
typedef struct jerr {
  jmp_buf jb;
  llm_err *err; /* NULL: no message wanted */
  wgllm_status st;
} jerr;
/* formats the message, appends " at line N" when line > 0, and jumps to the entry point */
noreturn void jfail(jerr *e, wgllm_status st, int line, const char *fmt, ...) __attribute__((format(printf, 4, 5)));

/* ---- arena ---- */
typedef struct jarena_block {
  struct jarena_block *next;
  size_t used, cap;
} jarena_block;
typedef struct jarena {
  jarena_block *head;
  size_t total, limit; /* bytes held; past limit (counting *extra): an error */
  const size_t *extra; /* bytes held elsewhere against the same limit (a render's text buffers) */
  jerr *e;
  int line; /* for the error message */
} jarena;
typedef struct jarena_mark {
  jarena_block *head;
  size_t used, total;
} jarena_mark;
void *ja_alloc(jarena *a, size_t n); /* never NULL: fails through a->e */
void ja_free_all(jarena *a);
jarena_mark ja_mark(const jarena *a);
void ja_release(jarena *a, jarena_mark m); /* frees what was allocated after m */
char *ja_strdup(jarena *a, const char *s, size_t n);

/* ---- values ---- */
enum { JV_UNDEF, JV_NONE, JV_BOOL, JV_INT, JV_FLOAT, JV_STR, JV_LIST, JV_DICT, JV_FUNC, JV_LOOP };
/* jv.sub of a list: a list, a tuple, a generator (what Jinja's lazy filters return: always true, iterated once,
   no len() and no index), or a dict view (d.items(), d.keys(), d.values(): printed as dict_items([...]), no index) */
enum { JL_LIST = 0, JL_TUPLE = 1, JL_GEN = 2, JL_ITEMS = 3, JL_KEYS = 4, JL_VALUES = 5 };
enum { JD_DICT = 0, JD_NAMESPACE = 1 }; /* jv.sub of a dict */
enum { JS_STR = 0, JS_MARKUP = 1 };     /* jv.sub of a string: markupsafe's Markup (escape, safe) */
typedef struct jlist jlist;
typedef struct jdict jdict;
typedef struct jfunc jfunc;
typedef struct jloop jloop;
typedef struct jv {
  uint8_t kind, sub;
  size_t n; /* string: bytes; undefined: length of its name */
  union {
    int64_t i; /* bool, int */
    double f;
    const char *s; /* string (not NUL-terminated); undefined: its name or NULL */
    jlist *l;
    jdict *d;
    jfunc *fn;
    jloop *lp;
  };
} jv;
struct jlist {
  jv *v;
  size_t n, cap;
  bool consumed;   /* a generator that was iterated */
  const char *err; /* a generator whose input was wrong: Jinja's lazy filters fail when iterated */
};
struct jdict { /* insertion-ordered, as Python's dict */
  jv *k, *v;
  size_t n, cap;
};

typedef struct jnode jnode;
typedef struct jscope jscope;
enum { FN_BUILTIN, FN_MACRO, FN_METHOD };
struct jfunc {
  int kind, id;
  const char *name; /* method or macro name */
  size_t nlen;
  jv self;           /* a method's object */
  const jnode *node; /* a macro's definition */
  jscope *closure;
};
struct jloop {
  const jv *items;
  size_t i, n;
};

static inline jv jv_undef(const char *name, size_t n) {
  jv v = {JV_UNDEF, 0, n, {0}};
  v.s = name;
  return v;
}
static inline jv jv_none(void) { return (jv){JV_NONE, 0, 0, {0}}; }
static inline jv jv_bool(bool b) { return (jv){JV_BOOL, 0, 0, {.i = b}}; }
static inline jv jv_int(int64_t i) { return (jv){JV_INT, 0, 0, {.i = i}}; }
static inline jv jv_float(double f) { return (jv){JV_FLOAT, 0, 0, {.f = f}}; }
static inline jv jv_strn(const char *s, size_t n) { return (jv){JV_STR, 0, n, {.s = s}}; }
static inline bool jv_is_num(jv v) { return v.kind == JV_BOOL || v.kind == JV_INT || v.kind == JV_FLOAT; }
static inline double jv_num(jv v) { return v.kind == JV_FLOAT ? v.f : (double)v.i; }
static inline bool jl_plain(jv v) { return v.kind == JV_LIST && v.sub <= JL_TUPLE; } /* a list or a tuple */

/* ---- the render context ---- */
typedef struct jsb { /* a growable byte buffer (malloc'd; bounded by max_output) */
  char *p;
  size_t n, cap;
} jsb;
typedef struct jctx {
  jerr *e;
  jarena *a;
  jinja_limits lim;
  jsb *out;     /* where text goes now (the output or a capture) */
  jsb caps[80]; /* capture buffers for macros, set blocks and filter blocks: [depth] */
  int ncaps;
  size_t text_bytes; /* capacity of caps[], counted against max_memory with the arena */
  uint64_t steps, iterations;
  int depth;       /* macro calls in progress */
  int rdepth;      /* nested evaluation, for the C stack */
  int line;        /* line of the node being evaluated, for error messages */
  int macro_calls; /* bumped by each macro call: a temporary arena region is released only without one */
  jscope *root;
  jv block_value; /* the body of a {% filter %} block, for its filter chain */
} jctx;

void jsb_put(jctx *c, jsb *b, const char *s, size_t n);
void jsb_putc(jctx *c, jsb *b, char ch);
void jsb_printf(jctx *c, jsb *b, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
void jctx_work(jctx *c, size_t bytes); /* counts scanning work against max_steps */
noreturn void jctx_fail(jctx *c, wgllm_status st, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

jv jv_str(jctx *c, const char *s, size_t n); /* copies into the arena */
jv jv_str_from_sb(jctx *c, const jsb *b);
jv jv_list(jctx *c, size_t cap);
jv jv_tuple(jctx *c, size_t cap);
void jl_push(jctx *c, jlist *l, jv v);
jv jv_dict(jctx *c, size_t cap);
void jd_set(jctx *c, jdict *d, jv k, jv v);
bool jd_get(const jdict *d, jv k, jv *v);
bool jd_gets(const jdict *d, const char *k, size_t n, jv *v);
jv jv_from_cjson(jctx *c, const cJSON *j, int depth);

const char *jv_type_name(jv v); /* Python's: "str", "int", "NoneType", "dict", "Undefined", ... */
bool jv_truthy(jv v);
bool jv_eq(jv a, jv b);
int jv_cmp(jctx *c, jv a, jv b, const char *op); /* <0, 0, >0; an error when Python would refuse */
void jv_to_str(jctx *c, jv v, jsb *b);           /* str(v) */
void jv_to_repr(jctx *c, jv v, jsb *b);          /* repr(v) */
jv jv_stringify(jctx *c, jv v);                  /* str(v) as a string value (strings as they are) */
typedef struct jjson_opts {
  bool ensure_ascii, sort_keys;
  const char *indent; /* NULL: none */
  size_t indent_n;
  const char *item_sep, *key_sep;
  size_t item_sep_n, key_sep_n;
} jjson_opts;
void jv_to_json(jctx *c, jv v, const jjson_opts *o, jsb *b, int level);
void py_float_repr(double d, char out[32]);
/* the undefined value's description for messages: "'x' is undefined" */
void jv_undef_desc(jv v, char *buf, size_t cap);

/* ---- text ---- */
uint32_t utf8_next(const char *s, size_t n, size_t *i); /* an invalid byte is itself (one step) */
void utf8_put(jctx *c, jsb *b, uint32_t cp);
size_t utf8_count(const char *s, size_t n); /* code points */
bool uc_isspace(uint32_t cp);               /* Python's str.isspace */
uint32_t uc_upper(uint32_t cp);             /* simple mappings: ASCII, Latin-1, Latin Extended-A, Greek, Cyrillic */
uint32_t uc_lower(uint32_t cp);
bool uc_iscased(uint32_t cp);
void str_upper(jctx *c, const char *s, size_t n, jsb *b); /* full mappings where Python's differ (ß -> SS) */
void str_lower(jctx *c, const char *s, size_t n, jsb *b);
void str_lower_range(jctx *c, const char *s, size_t n, size_t a, size_t e, jsb *b); /* s[a..e) with s as context */

/* ---- the AST ---- */
enum {
  /* expressions */
  N_LIT,
  N_NAME,
  N_ATTR,
  N_ITEM,
  N_SLICE,
  N_CALL,
  N_FILTER,
  N_TEST,
  N_NEG,
  N_POS,
  N_NOT,
  N_BIN,
  N_CMP,
  N_AND,
  N_OR,
  N_COND,
  N_LIST,
  N_TUPLE,
  N_DICT,
  /* statements */
  N_TEXT,
  N_OUT,
  N_IF,
  N_FOR,
  N_SET,
  N_SETATTR,
  N_SETBLOCK,
  N_MACRO,
  N_BREAK,
  N_CONTINUE,
  N_FILTERBLOCK,
  N_WITH,
  N_SCOPE
};
/* binary and comparison operators */
enum { OP_ADD, OP_SUB, OP_MUL, OP_DIV, OP_FLOORDIV, OP_MOD, OP_POW, OP_CONCAT };
enum { CMP_EQ, CMP_NE, CMP_LT, CMP_LE, CMP_GT, CMP_GE, CMP_IN, CMP_NOTIN };
typedef struct jname {
  const char *s;
  size_t n;
} jname;
struct jnode {
  uint8_t type, op, neg, unpack; /* unpack: the targets are a tuple */
  int line;
  int id; /* filter / test id */
  const char *name;
  size_t nlen;
  jv lit;
  jnode *a, *b, *c, *d;
  jnode **kids; /* operands, items, positional args, dict keys, a block's body */
  size_t nk;
  jnode **kids2; /* keyword values, dict values, the else body, macro defaults (NULL: none), with values */
  size_t nk2;
  jname *names; /* keyword names, assignment / loop targets, macro parameters */
  size_t nn;
  uint8_t *ops; /* N_CMP: the operator before each of kids */
};

struct jinja_template {
  jarena arena;
  jnode **body;
  size_t nbody;
};

/* ---- builtins (jinja_builtins.c) ---- */
int jb_filter_id(const char *name, size_t n); /* -1: not in the subset */
int jb_test_id(const char *name, size_t n);
bool jb_known_filter(const char *name, size_t n); /* one of Jinja's own (so the message says "unsupported") */
jv jb_filter(jctx *c, int id, jv x, const jv *args, size_t na, const jname *kwn, const jv *kwv, size_t nkw);
bool jb_test(jctx *c, int id, jv x, const jv *args, size_t na);
/* x.name: a bound method, a dict's item, a loop attribute, or undefined */
jv jb_getattr(jctx *c, jv x, const char *name, size_t n);
/* x[k] (k a string tries the item, then the attribute, as Jinja's getitem) */
jv jb_getitem(jctx *c, jv x, jv k);
jv jb_call(jctx *c, jv fn, const jv *args, size_t na, const jname *kwn, const jv *kwv, size_t nkw);
bool jb_global(const char *name, size_t n, jv *out); /* range, namespace, dict, raise_exception, strftime_now */
/* iteration: the items of a list, the keys of a dict, the characters of a string; undefined: none */
jv jb_iter_list(jctx *c, jv x);
bool jb_contains(jctx *c, jv box, jv x); /* x in box */
jv jb_escape(jctx *c, jv s);
bool jv_hashable(jv v);
/* what Python can put in a dict or a set */ /* markupsafe.escape of a string: a Markup (a Markup stays as it is) */

/* ---- the evaluator (jinja_eval.c), for the builtins ---- */
jv je_call_macro(jctx *c, const jfunc *f, const jv *args, size_t na, const jname *kwn, const jv *kwv, size_t nkw);
#endif
