/* The evaluator of the Jinja subset (see jinja.h): expressions with Python's operator semantics, statements
   with Jinja's scoping (a for loop's body is a fresh scope each iteration, so its assignments never leak:
   templates use namespace() for that; if blocks share their scope; macros and captured blocks get their own),
   loops with the loop object, loop filters, else and break/continue, macros, captured set and filter blocks, and
   the bounds of jinja_limits. */
#include "jinja_internal.h"
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define JE_MAX_RECURSION 1000 /* nested evaluation of nodes, whatever their kind: bounds the C stack */

struct jscope {
  jscope *parent;
  jdict vars;
};

jinja_limits jinja_default_limits(void) {
  jinja_limits l;
  memset(&l, 0, sizeof l);
  l.max_output = 16u << 20;
  l.max_memory = (size_t)64 << 20; /* 256 MiB let a 130-byte template hold 245 MB (issue 13: 100 MB) */
  l.max_iterations = 1000000;
  l.max_steps = 50000000;
  l.max_depth = 64;
  return l;
}

static jscope *scope_new(jctx *c, jscope *parent) {
  c->a->line = c->line;
  jscope *s = ja_alloc(c->a, sizeof *s);
  s->parent = parent;
  s->vars.n = 0;
  s->vars.cap = 4;
  s->vars.k = ja_alloc(c->a, 4 * sizeof(jv));
  s->vars.v = ja_alloc(c->a, 4 * sizeof(jv));
  return s;
}

static bool scope_get(const jscope *s, const char *name, size_t n, jv *out) {
  for (; s; s = s->parent)
    if (jd_gets(&s->vars, name, n, out)) return true;
  return false;
}

static void scope_set(jctx *c, jscope *s, const char *name, size_t n, jv v) {
  for (size_t i = 0; i < s->vars.n; i++)
    if (s->vars.k[i].n == n && !memcmp(s->vars.k[i].s, name, n)) {
      s->vars.v[i] = v;
      return;
    }
  jd_set(c, &s->vars, jv_strn(name, n), v);
}

static void step(jctx *c) {
  if (++c->steps > c->lim.max_steps)
    jctx_fail(c, WGLLM_ERR_INVALID_ARG, "the template ran more than %llu steps (max_steps)",
              (unsigned long long)c->lim.max_steps);
}

static jsb *cap_push(jctx *c) {
  if (c->ncaps >= (int)(sizeof c->caps / sizeof c->caps[0]) - 1)
    jctx_fail(c, WGLLM_ERR_INVALID_ARG, "macros and captured blocks nested too deeply");
  jsb *b = &c->caps[c->ncaps++];
  b->n = 0;
  return b;
}

static jv cap_pop(jctx *c, jsb *b) {
  jv s = jv_str_from_sb(c, b);
  c->ncaps--;
  return s;
}

static noreturn void fail_undef(jctx *c, jv v, const char *how) {
  char d[160];
  jv_undef_desc(v, d, sizeof d);
  jctx_fail(c, WGLLM_ERR_INVALID_ARG, "%s (%s)", d, how);
}

/* ---------- operators ---------- */
static const char *const binop_text[] = {"+", "-", "*", "/", "//", "%", "**", "~"};

static noreturn void bad_operands(jctx *c, int op, jv a, jv b) {
  jctx_fail(c, WGLLM_ERR_INVALID_ARG, "unsupported operand type(s) for %s: '%s' and '%s'", binop_text[op],
            jv_type_name(a), jv_type_name(b));
}

static jv repeat(jctx *c, jv seq, int64_t k) {
  if (k < 0) k = 0;
  if (seq.kind == JV_STR) {
    if (seq.n && (uint64_t)k > c->lim.max_output / seq.n)
      jctx_fail(c, WGLLM_ERR_INVALID_ARG, "a string repeated past max_output (%zu bytes)", c->lim.max_output);
    size_t total = seq.n * (size_t)k;
    jctx_work(c, total);
    c->a->line = c->line;
    char *p = ja_alloc(c->a, total + 1);
    for (int64_t i = 0; i < k; i++)
      memcpy(p + (size_t)i * seq.n, seq.s, seq.n);
    p[total] = 0;
    return jv_strn(p, total);
  }
  jv r = seq.sub == JL_TUPLE ? jv_tuple(c, 0) : jv_list(c, 0);
  for (int64_t i = 0; i < k; i++) {
    jctx_work(c, seq.l->n);
    for (size_t j = 0; j < seq.l->n; j++)
      jl_push(c, r.l, seq.l->v[j]);
  }
  return r;
}

static jv binop(jctx *c, int op, jv a, jv b) {
  if (op == OP_CONCAT) {
    jv x = jv_stringify(c, a), y = jv_stringify(c, b);
    if (x.n > c->lim.max_output - y.n)
      jctx_fail(c, WGLLM_ERR_INVALID_ARG, "a string longer than max_output (%zu bytes)", c->lim.max_output);
    c->a->line = c->line;
    char *p = ja_alloc(c->a, x.n + y.n + 1);
    memcpy(p, x.s, x.n);
    memcpy(p + x.n, y.s, y.n);
    p[x.n + y.n] = 0;
    jctx_work(c, x.n + y.n);
    return jv_strn(p, x.n + y.n);
  }
  if (a.kind == JV_STR && op == OP_MOD)
    jctx_fail(c, WGLLM_ERR_UNSUPPORTED, "unsupported printf-style string formatting ('%%' on a string)");
  if (op == OP_SUB && ((a.kind == JV_LIST && (a.sub == JL_KEYS || a.sub == JL_ITEMS)) ||
                       (b.kind == JV_LIST && (b.sub == JL_KEYS || b.sub == JL_ITEMS))))
    jctx_fail(c, WGLLM_ERR_UNSUPPORTED, "unsupported set difference of dict views");
  if (a.kind == JV_UNDEF) fail_undef(c, a, binop_text[op]);
  if (b.kind == JV_UNDEF) fail_undef(c, b, binop_text[op]);
  bool num = jv_is_num(a) && jv_is_num(b), ints = num && a.kind != JV_FLOAT && b.kind != JV_FLOAT;
  int64_t r;
  switch (op) {
  case OP_ADD:
    if (ints) {
      if (__builtin_add_overflow(a.i, b.i, &r)) break;
      return jv_int(r);
    }
    if (num) return jv_float(jv_num(a) + jv_num(b));
    if (a.kind == JV_STR && b.kind == JV_STR) {
      if (a.sub != JS_MARKUP && b.sub != JS_MARKUP) return binop(c, OP_CONCAT, a, b);
      jv r = binop(c, OP_CONCAT, jb_escape(c, a), jb_escape(c, b)); /* Markup + str escapes the str */
      r.sub = JS_MARKUP;
      return r;
    }
    if (jl_plain(a) && jl_plain(b) && a.sub == b.sub) {
      jv l = a.sub == JL_TUPLE ? jv_tuple(c, a.l->n + b.l->n) : jv_list(c, a.l->n + b.l->n);
      for (size_t i = 0; i < a.l->n; i++)
        jl_push(c, l.l, a.l->v[i]);
      for (size_t i = 0; i < b.l->n; i++)
        jl_push(c, l.l, b.l->v[i]);
      jctx_work(c, l.l->n);
      return l;
    }
    bad_operands(c, op, a, b);
  case OP_SUB:
    if (ints) {
      if (__builtin_sub_overflow(a.i, b.i, &r)) break;
      return jv_int(r);
    }
    if (num) return jv_float(jv_num(a) - jv_num(b));
    bad_operands(c, op, a, b);
  case OP_MUL:
    if (ints) {
      if (__builtin_mul_overflow(a.i, b.i, &r)) break;
      return jv_int(r);
    }
    if (num) return jv_float(jv_num(a) * jv_num(b));
    if ((a.kind == JV_STR || jl_plain(a)) && (b.kind == JV_INT || b.kind == JV_BOOL)) return repeat(c, a, b.i);
    if ((b.kind == JV_STR || jl_plain(b)) && (a.kind == JV_INT || a.kind == JV_BOOL)) return repeat(c, b, a.i);
    bad_operands(c, op, a, b);
  case OP_DIV:
    if (!num) bad_operands(c, op, a, b);
    if (jv_num(b) == 0) jctx_fail(c, WGLLM_ERR_INVALID_ARG, "division by zero");
    return jv_float(jv_num(a) / jv_num(b));
  case OP_FLOORDIV:
  case OP_MOD:
    if (!num) bad_operands(c, op, a, b);
    if (jv_num(b) == 0)
      jctx_fail(c, WGLLM_ERR_INVALID_ARG, "%s", op == OP_MOD ? "modulo by zero" : "integer division by zero");
    if (ints) {
      if (a.i == INT64_MIN && b.i == -1) break;
      int64_t q = a.i / b.i, m = a.i % b.i;
      if (m && ((m < 0) != (b.i < 0))) { /* Python floors */
        q--;
        m += b.i;
      }
      return jv_int(op == OP_MOD ? m : q);
    } else {
      /* CPython's float_divmod */
      double x = jv_num(a), y = jv_num(b), m = fmod(x, y), q = (x - m) / y;
      if (m) {
        if ((y < 0) != (m < 0)) {
          m += y;
          q -= 1.0;
        }
      } else
        m = copysign(0.0, y);
      if (op == OP_MOD) return jv_float(m);
      double f;
      if (q) {
        f = floor(q);
        if (q - f > 0.5) f += 1.0;
      } else
        f = copysign(0.0, x / y);
      return jv_float(f);
    }
  case OP_POW:
    if (!num) bad_operands(c, op, a, b);
    if (ints && b.i >= 0) {
      int64_t acc = 1, base = a.i, e = b.i;
      bool ovf = false;
      while (e > 0 && !ovf) {
        if (e & 1) ovf |= __builtin_mul_overflow(acc, base, &acc);
        e >>= 1;
        if (e) ovf |= __builtin_mul_overflow(base, base, &base);
      }
      if (ovf) break;
      return jv_int(acc);
    }
    if (jv_num(a) == 0 && jv_num(b) < 0)
      jctx_fail(c, WGLLM_ERR_INVALID_ARG, "0.0 cannot be raised to a negative power");
    return jv_float(pow(jv_num(a), jv_num(b)));
  default:
    break;
  }
  jctx_fail(c, WGLLM_ERR_UNSUPPORTED, "integer overflow in '%s' (Python's integers are unbounded, these are 64-bit)",
            binop_text[op]);
}

static bool compare(jctx *c, int op, jv a, jv b) {
  static const char *const t[] = {"==", "!=", "<", "<=", ">", ">="};
  switch (op) {
  case CMP_EQ:
    return jv_eq(a, b);
  case CMP_NE:
    return !jv_eq(a, b);
  case CMP_IN:
    return jb_contains(c, b, a);
  case CMP_NOTIN:
    return !jb_contains(c, b, a);
  default: {
    int r = jv_cmp(c, a, b, t[op]);
    return op == CMP_LT ? r < 0 : op == CMP_LE ? r <= 0 : op == CMP_GT ? r > 0 : r >= 0;
  }
  }
}

/* Python's slice of a list, tuple or string (by code points) */
static jv slice(jctx *c, jv x, jv a, jv b, jv s) {
  for (int k = 0; k < 3; k++) {
    jv v = k == 0 ? a : k == 1 ? b : s;
    if (v.kind != JV_NONE && v.kind != JV_INT && v.kind != JV_BOOL && v.kind != JV_UNDEF)
      jctx_fail(c, WGLLM_ERR_INVALID_ARG, "slice indices must be integers or None, not %s", jv_type_name(v));
  }
  if (x.kind == JV_UNDEF) fail_undef(c, x, "sliced");
  if (x.kind != JV_STR && !jl_plain(x)) /* a slice bypasses Jinja's getitem: Python's own error */
    jctx_fail(c, WGLLM_ERR_INVALID_ARG, "'%s' object is not subscriptable", jv_type_name(x));
  int64_t stp = s.kind == JV_INT || s.kind == JV_BOOL ? s.i : 1;
  if (stp == 0) jctx_fail(c, WGLLM_ERR_INVALID_ARG, "slice step cannot be zero");
  /* code point offsets of a string (one entry per character, plus the end) */
  size_t len;
  size_t *off = NULL;
  bool ascii = true;
  if (x.kind == JV_STR) {
    for (size_t i = 0; i < x.n && ascii; i++)
      ascii = (unsigned char)x.s[i] < 0x80;
    if (ascii)
      len = x.n;
    else {
      len = utf8_count(x.s, x.n);
      c->a->line = c->line;
      off = ja_alloc(c->a, (len + 1) * sizeof *off);
      size_t i = 0, k = 0;
      while (i < x.n) {
        off[k++] = i;
        utf8_next(x.s, x.n, &i);
      }
      off[k] = x.n;
    }
  } else
    len = x.l->n;
  int64_t L = (int64_t)len, lo, hi;
  bool has_a = a.kind == JV_INT || a.kind == JV_BOOL, has_b = b.kind == JV_INT || b.kind == JV_BOOL;
  if (stp > 0) {
    lo = has_a ? (a.i < 0 ? (a.i + L < 0 ? 0 : a.i + L) : (a.i > L ? L : a.i)) : 0;
    hi = has_b ? (b.i < 0 ? (b.i + L < 0 ? 0 : b.i + L) : (b.i > L ? L : b.i)) : L;
  } else {
    lo = has_a ? (a.i < 0 ? (a.i + L < 0 ? -1 : a.i + L) : (a.i >= L ? L - 1 : a.i)) : L - 1;
    hi = has_b ? (b.i < 0 ? (b.i + L < 0 ? -1 : b.i + L) : (b.i >= L ? L - 1 : b.i)) : -1;
  }
  jctx_work(c, len);
  if (x.kind == JV_LIST) {
    jv r = x.sub == JL_TUPLE ? jv_tuple(c, 0) : jv_list(c, 0);
    for (int64_t i = lo; stp > 0 ? i < hi : i > hi; i += stp)
      jl_push(c, r.l, x.l->v[i]);
    return r;
  }
  if (stp == 1) {
    if (hi <= lo) return jv_strn("", 0);
    size_t s0 = ascii ? (size_t)lo : off[lo], s1 = ascii ? (size_t)hi : off[hi];
    return jv_strn(x.s + s0, s1 - s0); /* strings are immutable: a slice may share its bytes */
  }
  jsb *sb = &c->caps[c->ncaps];
  if (c->ncaps >= (int)(sizeof c->caps / sizeof c->caps[0])) jctx_fail(c, WGLLM_ERR_INVALID_ARG, "nesting too deep");
  c->ncaps++;
  sb->n = 0;
  for (int64_t i = lo; stp > 0 ? i < hi : i > hi; i += stp) {
    size_t s0 = ascii ? (size_t)i : off[i], s1 = ascii ? (size_t)i + 1 : off[i + 1];
    jsb_put(c, sb, x.s + s0, s1 - s0);
  }
  jv r = jv_str_from_sb(c, sb);
  c->ncaps--;
  return r;
}

/* ---------- expressions ---------- */
static jv eval(jctx *c, const jnode *n, jscope *sc);

static void eval_args(jctx *c, const jnode *n, jscope *sc, jv **args, jv **kwv) {
  c->a->line = n->line;
  *args = n->nk ? ja_alloc(c->a, n->nk * sizeof(jv)) : NULL;
  *kwv = n->nk2 ? ja_alloc(c->a, n->nk2 * sizeof(jv)) : NULL;
  for (size_t i = 0; i < n->nk; i++)
    (*args)[i] = eval(c, n->kids[i], sc);
  for (size_t i = 0; i < n->nk2; i++)
    (*kwv)[i] = eval(c, n->kids2[i], sc);
}

static jv eval_call(jctx *c, const jnode *n, jscope *sc) {
  jv fn;
  const char *fname = NULL;
  size_t flen = 0;
  if (n->a->type == N_ATTR) {
    jv obj = eval(c, n->a->a, sc);
    c->line = n->line;
    fn = jb_getattr(c, obj, n->a->name, n->a->nlen);
    fname = n->a->name;
    flen = n->a->nlen;
  } else {
    fn = eval(c, n->a, sc);
    if (n->a->type == N_NAME) {
      fname = n->a->name;
      flen = n->a->nlen;
    }
  }
  jv *args, *kwv;
  eval_args(c, n, sc, &args, &kwv);
  c->line = n->line;
  if (fn.kind == JV_UNDEF) {
    static const char *const jinja_globals[] = {"cycler", "joiner", "lipsum"};
    for (size_t i = 0; i < 3 && fname; i++)
      if (flen == strlen(jinja_globals[i]) && !memcmp(fname, jinja_globals[i], flen))
        jctx_fail(c, WGLLM_ERR_UNSUPPORTED, "unsupported function '%.*s'", (int)flen, fname);
    fail_undef(c, fn, "called as a function");
  }
  if (fn.kind != JV_FUNC) jctx_fail(c, WGLLM_ERR_INVALID_ARG, "'%s' object is not callable", jv_type_name(fn));
  return jb_call(c, fn, args, n->nk, n->names, kwv, n->nn);
}

static jv eval_node(jctx *c, const jnode *n, jscope *sc);

static jv eval(jctx *c, const jnode *n, jscope *sc) {
  if (++c->rdepth > JE_MAX_RECURSION)
    jctx_fail(c, WGLLM_ERR_INVALID_ARG, "the template recursed deeper than %d levels", JE_MAX_RECURSION);
  jv v = eval_node(c, n, sc);
  c->rdepth--;
  return v;
}

static jv eval_node(jctx *c, const jnode *n, jscope *sc) {
  c->line = n->line;
  step(c);
  jv x, y;
  switch (n->type) {
  case N_LIT:
    return n->lit;
  case N_NAME:
    if (scope_get(sc, n->name, n->nlen, &x)) return x;
    if (jb_global(n->name, n->nlen, &x)) return x;
    return jv_undef(n->name, n->nlen);
  case N_ATTR:
    x = eval(c, n->a, sc);
    c->line = n->line;
    return jb_getattr(c, x, n->name, n->nlen);
  case N_ITEM:
    x = eval(c, n->a, sc);
    y = eval(c, n->b, sc);
    c->line = n->line;
    return jb_getitem(c, x, y);
  case N_SLICE: {
    x = eval(c, n->a, sc);
    jv p[3];
    const jnode *q[3] = {n->b, n->c, n->d};
    for (int k = 0; k < 3; k++)
      p[k] = q[k] ? eval(c, q[k], sc) : jv_none();
    c->line = n->line;
    return slice(c, x, p[0], p[1], p[2]);
  }
  case N_CALL:
    return eval_call(c, n, sc);
  case N_FILTER: {
    x = n->a ? eval(c, n->a, sc) : c->block_value;
    jv *args, *kwv;
    eval_args(c, n, sc, &args, &kwv);
    c->line = n->line;
    return jb_filter(c, n->id, x, args, n->nk, n->names, kwv, n->nn);
  }
  case N_TEST: {
    x = eval(c, n->a, sc);
    jv *args, *kwv;
    eval_args(c, n, sc, &args, &kwv);
    c->line = n->line;
    bool r = jb_test(c, n->id, x, args, n->nk);
    return jv_bool(n->neg ? !r : r);
  }
  case N_NEG:
  case N_POS:
    x = eval(c, n->a, sc);
    c->line = n->line;
    if (x.kind == JV_UNDEF) fail_undef(c, x, "unary operator");
    if (!jv_is_num(x))
      jctx_fail(c, WGLLM_ERR_INVALID_ARG, "bad operand type for unary %c: '%s'", n->type == N_NEG ? '-' : '+',
                jv_type_name(x));
    if (n->type == N_POS) return x.kind == JV_BOOL ? jv_int(x.i) : x;
    if (x.kind == JV_FLOAT) return jv_float(-x.f);
    if (x.i == INT64_MIN) jctx_fail(c, WGLLM_ERR_UNSUPPORTED, "integer overflow in unary '-'");
    return jv_int(-x.i);
  case N_NOT:
    return jv_bool(!jv_truthy(eval(c, n->a, sc)));
  case N_BIN:
    x = eval(c, n->a, sc);
    y = eval(c, n->b, sc);
    c->line = n->line;
    return binop(c, n->op, x, y);
  case N_CMP:
    x = eval(c, n->a, sc);
    for (size_t i = 0; i < n->nk; i++) {
      y = eval(c, n->kids[i], sc);
      c->line = n->line;
      if (!compare(c, n->ops[i], x, y)) return jv_bool(false);
      x = y;
    }
    return jv_bool(true);
  case N_AND:
    x = eval(c, n->a, sc);
    return jv_truthy(x) ? eval(c, n->b, sc) : x;
  case N_OR:
    x = eval(c, n->a, sc);
    return jv_truthy(x) ? x : eval(c, n->b, sc);
  case N_COND:
    if (jv_truthy(eval(c, n->a, sc))) return eval(c, n->b, sc);
    return n->c ? eval(c, n->c, sc) : jv_undef(NULL, 0);
  case N_LIST:
  case N_TUPLE:
    x = n->type == N_TUPLE ? jv_tuple(c, n->nk) : jv_list(c, n->nk);
    for (size_t i = 0; i < n->nk; i++)
      jl_push(c, x.l, eval(c, n->kids[i], sc));
    return x;
  case N_DICT:
    x = jv_dict(c, n->nk);
    for (size_t i = 0; i < n->nk; i++) {
      jv k = eval(c, n->kids[i], sc), v = eval(c, n->kids2[i], sc);
      c->line = n->line;
      if (!jv_hashable(k)) jctx_fail(c, WGLLM_ERR_INVALID_ARG, "unhashable type: '%s'", jv_type_name(k));
      jd_set(c, x.d, k, v);
    }
    return x;
  default:
    jctx_fail(c, WGLLM_ERR_INTERNAL, "node type %d is not an expression", n->type);
  }
}

/* ---------- statements ---------- */
enum { FLOW_NORMAL, FLOW_BREAK, FLOW_CONTINUE };

static int exec_body(jctx *c, jnode *const *kids, size_t nk, jscope *sc);

/* the items a target list unpacks (Python's a, b = v) */
static void assign(jctx *c, jscope *sc, const jnode *n, jv v) {
  if (!n->unpack) {
    scope_set(c, sc, n->names[0].s, n->names[0].n, v);
    return;
  }
  if (v.kind != JV_LIST && v.kind != JV_STR && !(v.kind == JV_DICT && v.sub == JD_DICT))
    jctx_fail(c, WGLLM_ERR_INVALID_ARG, "cannot unpack non-iterable %s object", jv_type_name(v));
  jv items = jb_iter_list(c, v);
  if (items.l->n != n->nn)
    jctx_fail(c, WGLLM_ERR_INVALID_ARG, "%s values to unpack (expected %zu, got %zu)",
              items.l->n < n->nn ? "not enough" : "too many", n->nn, items.l->n);
  for (size_t i = 0; i < n->nn; i++)
    scope_set(c, sc, n->names[i].s, n->names[i].n, items.l->v[i]);
}

static void count_iteration(jctx *c) {
  if (++c->iterations > c->lim.max_iterations)
    jctx_fail(c, WGLLM_ERR_INVALID_ARG, "the template ran more than %llu loop iterations (max_iterations)",
              (unsigned long long)c->lim.max_iterations);
}

static int exec_for(jctx *c, const jnode *n, jscope *sc) {
  jv it = eval(c, n->a, sc);
  c->line = n->line;
  if (it.kind == JV_NONE || jv_is_num(it) || it.kind == JV_FUNC || it.kind == JV_LOOP ||
      (it.kind == JV_DICT && it.sub == JD_NAMESPACE))
    jctx_fail(c, WGLLM_ERR_INVALID_ARG, "'%s' object is not iterable", jv_type_name(it));
  jv items = jb_iter_list(c, it);
  const jv *v = items.l->v;
  size_t cnt = items.l->n;
  jscope *isc = scope_new(c, sc);
  if (n->b) { /* {% for x in xs if cond %}: the loop sees only the items that pass */
    jv kept = jv_list(c, cnt);
    for (size_t i = 0; i < cnt; i++) {
      count_iteration(c);
      isc->vars.n = 0;
      assign(c, isc, n, v[i]);
      if (jv_truthy(eval(c, n->b, isc))) jl_push(c, kept.l, v[i]);
    }
    v = kept.l->v;
    cnt = kept.l->n;
  }
  if (!cnt) return n->nk2 ? exec_body(c, n->kids2, n->nk2, scope_new(c, sc)) : FLOW_NORMAL;
  c->a->line = n->line;
  jloop *lp = ja_alloc(c->a, sizeof *lp);
  lp->items = v;
  lp->n = cnt;
  jv lv = {JV_LOOP, 0, 0, {0}};
  lv.lp = lp;
  for (size_t i = 0; i < cnt; i++) {
    c->line = n->line;
    count_iteration(c);
    lp->i = i;
    isc->vars.n = 0; /* a fresh scope each iteration */
    assign(c, isc, n, v[i]);
    scope_set(c, isc, "loop", 4, lv);
    if (exec_body(c, n->kids, n->nk, isc) == FLOW_BREAK) break;
  }
  return FLOW_NORMAL;
}

/* renders a body into a string of its own */
static jv capture(jctx *c, jnode *const *kids, size_t nk, jscope *sc) {
  jsb *b = cap_push(c), *saved = c->out;
  c->out = b;
  exec_body(c, kids, nk, sc);
  c->out = saved;
  return cap_pop(c, b);
}

static jv apply_block_filters(jctx *c, const jnode *chain, jv body, jscope *sc) {
  if (!chain) return body;
  jv saved = c->block_value;
  c->block_value = body;
  jv r = eval(c, chain, sc);
  c->block_value = saved;
  return r;
}

static void set_ns_attr(jctx *c, jscope *sc, const jnode *n, jv v) {
  jv ns;
  if (!scope_get(sc, n->name, n->nlen, &ns) || ns.kind != JV_DICT || ns.sub != JD_NAMESPACE)
    jctx_fail(c, WGLLM_ERR_INVALID_ARG, "cannot assign attribute '%.*s' on '%.*s': it is not a namespace()",
              (int)n->names[0].n, n->names[0].s, (int)n->nlen, n->name);
  jd_set(c, ns.d, jv_strn(n->names[0].s, n->names[0].n), v);
}

static int exec_node(jctx *c, const jnode *n, jscope *sc) {
  c->line = n->line;
  step(c);
  switch (n->type) {
  case N_TEXT:
    jsb_put(c, c->out, n->lit.s, n->lit.n);
    return FLOW_NORMAL;
  case N_OUT: {
    /* the expression's temporaries die with it, unless a macro ran (it may have stored values in a namespace) */
    jarena_mark m = ja_mark(c->a);
    int calls = c->macro_calls;
    jv v = eval(c, n->a, sc);
    c->line = n->line;
    jv_to_str(c, v, c->out);
    if (calls == c->macro_calls) ja_release(c->a, m);
    return FLOW_NORMAL;
  }
  case N_IF: {
    jarena_mark m = ja_mark(c->a);
    int calls = c->macro_calls;
    bool t = jv_truthy(eval(c, n->a, sc));
    if (calls == c->macro_calls) ja_release(c->a, m);
    return t ? exec_body(c, n->kids, n->nk, sc) : exec_body(c, n->kids2, n->nk2, sc);
  }
  case N_FOR:
    return exec_for(c, n, sc);
  case N_SET:
    assign(c, sc, n, eval(c, n->a, sc));
    return FLOW_NORMAL;
  case N_SETATTR:
    set_ns_attr(c, sc, n, eval(c, n->a, sc));
    return FLOW_NORMAL;
  case N_SETBLOCK: {
    jv v = apply_block_filters(c, n->a, capture(c, n->kids, n->nk, scope_new(c, sc)), sc);
    c->line = n->line;
    if (n->op)
      set_ns_attr(c, sc, n, v);
    else
      assign(c, sc, n, v);
    return FLOW_NORMAL;
  }
  case N_MACRO: {
    c->a->line = n->line;
    jfunc *f = ja_alloc(c->a, sizeof *f);
    memset(f, 0, sizeof *f);
    f->kind = FN_MACRO;
    f->name = n->name;
    f->nlen = n->nlen;
    f->node = n;
    f->closure = sc;
    jv v = {JV_FUNC, 0, 0, {0}};
    v.fn = f;
    scope_set(c, sc, n->name, n->nlen, v);
    return FLOW_NORMAL;
  }
  case N_BREAK:
    return FLOW_BREAK;
  case N_CONTINUE:
    return FLOW_CONTINUE;
  case N_FILTERBLOCK: {
    jv v = apply_block_filters(c, n->a, capture(c, n->kids, n->nk, scope_new(c, sc)), sc);
    c->line = n->line;
    jv_to_str(c, v, c->out);
    return FLOW_NORMAL;
  }
  case N_WITH: {
    jscope *ws = scope_new(c, sc);
    for (size_t i = 0; i < n->nn; i++)
      scope_set(c, ws, n->names[i].s, n->names[i].n, eval(c, n->kids2[i], sc));
    return exec_body(c, n->kids, n->nk, ws);
  }
  case N_SCOPE:
    return exec_body(c, n->kids, n->nk, scope_new(c, sc));
  default:
    jctx_fail(c, WGLLM_ERR_INTERNAL, "node type %d is not a statement", n->type);
  }
}

static int exec_body(jctx *c, jnode *const *kids, size_t nk, jscope *sc) {
  if (++c->rdepth > JE_MAX_RECURSION)
    jctx_fail(c, WGLLM_ERR_INVALID_ARG, "the template recursed deeper than %d levels", JE_MAX_RECURSION);
  for (size_t i = 0; i < nk; i++) {
    int f = exec_node(c, kids[i], sc);
    if (f != FLOW_NORMAL) {
      c->rdepth--;
      return f;
    }
  }
  c->rdepth--;
  return FLOW_NORMAL;
}

jv je_call_macro(jctx *c, const jfunc *f, const jv *args, size_t na, const jname *kwn, const jv *kwv, size_t nkw) {
  const jnode *m = f->node;
  if (c->depth >= c->lim.max_depth)
    jctx_fail(c, WGLLM_ERR_INVALID_ARG, "macro calls nested deeper than %d (max_depth)", c->lim.max_depth);
  if (na > m->nn)
    jctx_fail(c, WGLLM_ERR_INVALID_ARG, "macro '%.*s' takes not more than %zu argument(s)", (int)m->nlen, m->name,
              m->nn);
  for (size_t k = 0; k < nkw; k++) {
    size_t i = 0;
    while (i < m->nn && !(m->names[i].n == kwn[k].n && !memcmp(m->names[i].s, kwn[k].s, kwn[k].n)))
      i++;
    if (i == m->nn)
      jctx_fail(c, WGLLM_ERR_INVALID_ARG, "macro '%.*s' takes no keyword argument '%.*s'", (int)m->nlen, m->name,
                (int)kwn[k].n, kwn[k].s);
    if (i < na)
      jctx_fail(c, WGLLM_ERR_INVALID_ARG, "macro '%.*s' got multiple values for argument '%.*s'", (int)m->nlen, m->name,
                (int)kwn[k].n, kwn[k].s);
  }
  jscope *ms = scope_new(c, f->closure);
  for (size_t i = 0; i < m->nn; i++) {
    jv v = jv_undef(m->names[i].s, m->names[i].n);
    bool given = false;
    if (i < na) {
      v = args[i];
      given = true;
    }
    for (size_t k = 0; k < nkw && !given; k++)
      if (m->names[i].n == kwn[k].n && !memcmp(m->names[i].s, kwn[k].s, kwn[k].n)) {
        v = kwv[k];
        given = true;
      }
    if (!given && m->kids2[i]) v = eval(c, m->kids2[i], ms);
    scope_set(c, ms, m->names[i].s, m->names[i].n, v);
  }
  c->macro_calls++;
  c->depth++;
  jv r = capture(c, m->kids, m->nk, ms);
  c->depth--;
  return r;
}

/* ---------- entry ---------- */
typedef struct render_state {
  jerr e;
  jarena a;
  jctx c;
} render_state;

static void render_free(render_state *R) {
  for (size_t i = 0; i < sizeof R->c.caps / sizeof R->c.caps[0]; i++)
    free(R->c.caps[i].p);
  ja_free_all(&R->a);
  free(R);
}

wgllm_status jinja_render(const jinja_template *t, const cJSON *vars, const jinja_limits *lim, char **out, size_t *len,
                          llm_err *err) {
  llm_err_clear(err);
  if (!out) return WGLLM_ERR_INVALID_ARG;
  *out = NULL;
  if (len) *len = 0;
  if (!t) return WGLLM_ERR_INVALID_ARG;
  render_state *R = calloc(1, sizeof *R);
  if (!R) {
    return llm_err_set(err, WGLLM_ERR_OUT_OF_MEMORY, "out of host memory");
  }
  jctx *c = &R->c;
  jinja_limits d = jinja_default_limits();
  c->lim = lim ? *lim : d;
  if (!c->lim.max_output) c->lim.max_output = d.max_output;
  if (!c->lim.max_memory) c->lim.max_memory = d.max_memory;
  if (!c->lim.max_iterations) c->lim.max_iterations = d.max_iterations;
  if (!c->lim.max_steps) c->lim.max_steps = d.max_steps;
  if (c->lim.max_depth <= 0) c->lim.max_depth = d.max_depth;
  if (!c->lim.now) c->lim.now = time(NULL);
  R->e.err = err;
  R->a.limit = c->lim.max_memory;
  R->a.extra = &c->text_bytes;
  R->a.e = &R->e;
  c->e = &R->e;
  c->a = &R->a;
  if (setjmp(R->e.jb)) {
    wgllm_status st = R->e.st;
    render_free(R);
    return st;
  }
  c->ncaps = 1;
  c->out = &c->caps[0];
  jsb_put(c, c->out, "", 0);
  jscope *root = scope_new(c, NULL);
  c->root = root;
  if (vars && !cJSON_IsNull(vars)) {
    if (!cJSON_IsObject(vars)) jctx_fail(c, WGLLM_ERR_INVALID_ARG, "the template's variables must be a JSON object");
    const cJSON *it;
    cJSON_ArrayForEach(it, vars) {
      if (!it->string) continue;
      scope_set(c, root, it->string, strlen(it->string), jv_from_cjson(c, it, 0));
    }
  }
  exec_body(c, t->body, t->nbody, root);
  jsb *o = &c->caps[0];
  if (!o->p) {
    o->p = malloc(1);
    if (!o->p) jctx_fail(c, WGLLM_ERR_OUT_OF_MEMORY, "out of host memory");
    o->p[0] = 0;
  }
  *out = o->p;
  if (len) *len = o->n;
  o->p = NULL;
  render_free(R);
  return WGLLM_OK;
}
