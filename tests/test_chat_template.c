/* Chat templates: the Jinja subset (src/chat/jinja.h) on small templates with hand-computed results, one or more
   for each construct; its errors, each naming the construct (unsupported filter, unbalanced tags,
   raise_exception, the loop, recursion, output, memory and step bounds); the fixtures of tests/data/chat/ (the
   models' own templates rendered by transformers' apply_chat_template on the device); and the chat renderer
   (src/chat/chat.h): the model's template, the named overrides, a template that does not parse refused.
   `test_chat_template --render-batch CASES.json` renders a JSON list of {template, vars} and prints a JSON list
   of {ok, out | error} (tools/refs/jinja_crosscheck.py compares that with Python's jinja2). */
#include "chat.h"
#include "harness.h"
#include "jinja.h"
#include "tokenizer_load.h"
#include <cjson/cJSON.h>
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* 2024-07-26 12:00:00 UTC: strftime_now's time in these tests */
#define FIXED_NOW ((time_t)1721995200)

static wgllm_status render(const char *tmpl, const char *vars_json, const jinja_limits *lim, char **out, llm_err *err) {
  jinja_template *t = NULL;
  *out = NULL;
  wgllm_status st = jinja_parse(tmpl, strlen(tmpl), &t, err);
  if (st) return st;
  cJSON *vars = vars_json ? cJSON_Parse(vars_json) : NULL;
  if (vars_json && !vars) {
    jinja_free(t);
    return llm_err_set(err, WGLLM_ERR_INTERNAL, "bad test JSON: %s", vars_json);
  }
  jinja_limits l = lim ? *lim : jinja_default_limits();
  if (!l.now) l.now = FIXED_NOW;
  st = jinja_render(t, vars, &l, out, NULL, err);
  cJSON_Delete(vars);
  jinja_free(t);
  return st;
}

static int render_batch(const char *path) {
  size_t n;
  char *js = th_read_file(path, &n);
  cJSON *cases = js ? cJSON_Parse(js) : NULL;
  free(js);
  if (!cJSON_IsArray(cases)) {
    fprintf(stderr, "test_chat_template: %s is not a JSON list\n", path);
    return 2;
  }
  cJSON *res = cJSON_CreateArray();
  const cJSON *it;
  cJSON_ArrayForEach(it, cases) {
    const cJSON *tp = cJSON_GetObjectItemCaseSensitive(it, "template");
    const cJSON *vars = cJSON_GetObjectItemCaseSensitive(it, "vars");
    cJSON *r = cJSON_CreateObject();
    char *out = NULL;
    llm_err err = {0};
    jinja_template *t = NULL;
    wgllm_status st = jinja_parse(tp->valuestring, strlen(tp->valuestring), &t, &err);
    if (!st) {
      jinja_limits l = jinja_default_limits();
      l.now = FIXED_NOW;
      st = jinja_render(t, vars, &l, &out, NULL, &err);
    }
    jinja_free(t);
    cJSON_AddBoolToObject(r, "ok", st == WGLLM_OK);
    if (st == WGLLM_OK)
      cJSON_AddStringToObject(r, "out", out);
    else {
      cJSON_AddStringToObject(r, "error", err.msg);
      cJSON_AddStringToObject(r, "status", wgllm_status_name(st));
    }
    free(out);
    cJSON_AddItemToArray(res, r);
  }
  char *s = cJSON_PrintUnformatted(res);
  fputs(s, stdout);
  free(s);
  cJSON_Delete(res);
  cJSON_Delete(cases);
  return 0;
}

/* ---------- hand-computed cases: one or more per construct ---------- */
typedef struct tcase {
  const char *name, *tmpl, *vars, *want;
} tcase;

static const tcase cases[] = {
    /* text, whitespace control, trim_blocks and lstrip_blocks (transformers' settings) */
    {"text", "Hello", NULL, "Hello"},
    {"variable", "{{ name }}", "{\"name\": \"Ann\"}", "Ann"},
    {"trim_blocks", "{% if true %}\nA\n{% endif %}\nB", NULL, "A\nB"},
    {"lstrip_blocks", "  {% if true %}A{% endif %}\n  B", NULL, "A  B"},
    {"lstrip_not_before_vars", "  {{ 'v' }}\n", NULL, "  v"},
    {"minus_strips", "a  {%- if true -%}  b  {%- endif -%}  c", NULL, "abc"},
    {"minus_on_print", "a {{- ' x ' -}} b", NULL, "a x b"},
    {"plus_keeps", "  {%+ if true %}x{% endif %}", NULL, "  x"},
    {"comment", "a{# note #}b\n  {# own line #}\nc", NULL, "ab\nc"},
    {"raw", "{% raw %}{{ x }}{% endraw %}", NULL, "{{ x }}"},
    {"newlines", "a\r\nb\n", NULL, "a\nb"},
    /* literals and operators */
    {"arithmetic", "{{ 7 // 2 }} {{ -7 // 2 }} {{ 7 % 3 }} {{ -7 % 3 }} {{ 7 / 2 }} {{ 2 ** 10 }} {{ 1 + 2 * 3 }}",
     NULL, "3 -4 1 2 3.5 1024 7"},
    {"float_repr", "{{ 0.1 + 0.2 }} {{ 1e16 }} {{ 1.0e-5 }} {{ 10 / 4 }} {{ 3.0 }} {{ 123456789.0 }}", NULL,
     "0.30000000000000004 1e+16 1e-05 2.5 3.0 123456789.0"},
    {"int_literals", "{{ 1_000 + 0x10 + 0o10 + 0b1 }}", NULL, "1025"},
    {"concat", "{{ 'a' ~ 1 ~ none ~ true }}", NULL, "a1NoneTrue"},
    {"string_escapes", "{{ 'it\\'s' }}|{{ \"\\u00e9\\x41\" }}|{{ 'a\\tb' }}|{{ 'a' 'b' }}", NULL,
     "it's|\xc3\xa9"
     "A|a\tb|ab"},
    {"logic",
     "{{ 1 < 2 < 3 }} {{ 'a' in 'cat' }} {{ 'z' not in 'cat' }} {{ none or 'x' }} {{ 0 and 1 }} {{ not none }}", NULL,
     "True True True x 0 True"},
    {"ternary", "{{ 'y' if flag else 'n' }}|{{ 'y' if none }}|", "{\"flag\": true}", "y||"},
    {"subscripts", "{{ xs[0] }} {{ xs[-1] }} {{ xs[::-1] }} {{ xs[1:] }} {{ s[::-1] }} {{ s[1:3] }} {{ s[-1] }}",
     "{\"xs\": [3, 1, 2], \"s\": \"h\xc3\xa9llo\"}", "3 2 [2, 1, 3] [1, 2] oll\xc3\xa9h \xc3\xa9l o"},
    {"attributes",
     "{{ m.role }} {{ m['content'] }} {{ m.missing is defined }} {{ m.get('x', 'd') }} {{ m.content.upper() }}",
     "{\"m\": {\"role\": \"user\", \"content\": \"hi\"}}", "user hi False d HI"},
    {"repr", "{{ ['a', 1, none, true, 1.5] }} {{ {'k': 'v'} }} {{ (1,) }} {{ [\"it's\"] }}", NULL,
     "['a', 1, None, True, 1.5] {'k': 'v'} (1,) [\"it's\"]"},
    /* statements */
    {"if_elif_else", "{% if n > 5 %}big{% elif n > 2 %}mid{% else %}small{% endif %}", "{\"n\": 3}", "mid"},
    {"for_loop",
     "{% for x in xs %}{{ loop.index }}{{ loop.index0 }}{{ loop.revindex }}{{ loop.first }}{{ loop.last }}"
     "{{ loop.length }}{{ x }};{% endfor %}",
     "{\"xs\": [\"a\", \"b\", \"c\"]}", "103TrueFalse3a;212FalseFalse3b;321FalseTrue3c;"},
    {"for_else", "{% for x in [] %}x{% else %}empty{% endfor %}", NULL, "empty"},
    {"for_items", "{% for k, v in d.items() %}{{ k }}={{ v }};{% endfor %}", "{\"d\": {\"b\": 1, \"a\": 2}}",
     "b=1;a=2;"},
    {"for_filter", "{% for x in [1, 2, 3, 4] if x is even %}{{ x }}{{ loop.index }}{{ loop.last }} {% endfor %}", NULL,
     "21False 42True "},
    {"break_continue",
     "{% for x in [1, 2, 3, 4] %}{% if x == 2 %}{% continue %}{% endif %}{% if x == 4 %}{% break %}{% endif %}{{ x }}"
     "{% endfor %}",
     NULL, "13"},
    {"loop_scope", "{% set a = 1 %}{% for x in [5] %}{% set a = x %}{% endfor %}{{ a }}", NULL, "1"},
    {"namespace",
     "{% set ns = namespace(t=0) %}{% for x in [1, 2, 3] %}{% set ns.t = ns.t + x %}{% endfor %}{{ ns.t }}", NULL, "6"},
    {"set_block", "{% set x %}v={{ 1 + 1 }}{% endset %}[{{ x }}]", NULL, "[v=2]"},
    {"set_unpack", "{% set a, b = 1, 2 %}{{ a + b }}", NULL, "3"},
    {"macro", "{% macro g(n, p='Hi') %}{{ p }} {{ n }}{% endmacro %}{{ g('A') }}, {{ g('B', p='Yo') }}", NULL,
     "Hi A, Yo B"},
    {"filter_block", "{% filter upper %}ab{% endfilter %}", NULL, "AB"},
    {"with", "{% with a = 2 %}{{ a }}{% endwith %}", NULL, "2"},
    {"generation", "{% generation %}x{% endgeneration %}", NULL, "x"},
    {"loop_cycle_previtem", "{% for x in [1, 2, 3] %}{{ loop.cycle('a', 'b') }}{{ loop.previtem }}{% endfor %}", NULL,
     "ab1a2"},
    /* filters */
    {"string_filters",
     "{{ '  x  '|trim }}|{{ 'ab'|upper }}|{{ 'AB'|lower }}|{{ 'hello world'|title }}|{{ 'hELLO'|capitalize }}|"
     "{{ 'a-b'|replace('-', '+') }}|{{ 'h\xc3\xa9llo'|length }}",
     NULL, "x|AB|ab|Hello World|Hello|a+b|5"},
    {"list_filters",
     "{{ [3, 1, 2]|sort|join(',') }}|{{ [1, 2]|first }}{{ [1, 2]|last }}|{{ [1, 1, 2]|unique|list }}|"
     "{{ [1, 2, 3]|reverse|list }}|{{ [1, 2]|length }}|{{ {'a': 1}|items|list }}",
     NULL, "1,2,3|12|[1, 2]|[3, 2, 1]|2|[('a', 1)]"},
    {"default_string", "{{ missing|default('d') }}|{{ ''|default('e', true) }}|{{ 5|string ~ 'x' }}|{{ none|string }}",
     NULL, "d|e|5x|None"},
    {"tojson", "{{ t|tojson }}",
     "{\"t\": {\"name\": \"f\", \"args\": {\"x\": \"\xc3\xa9\\\"\", \"n\": [1, 2.5, true, null]}}}",
     "{\"name\": \"f\", \"args\": {\"x\": \"\xc3\xa9\\\"\", \"n\": [1, 2.5, true, null]}}"},
    {"tojson_indent", "{{ {'a': [1, 2], 'b': {}}|tojson(indent=2) }}", NULL,
     "{\n  \"a\": [\n    1,\n    2\n  ],\n  \"b\": {}\n}"},
    {"select_map",
     "{{ ms|selectattr('role', 'equalto', 'user')|list|length }} {{ ms|map(attribute='role')|join(',') }} "
     "{{ ms|rejectattr('role', 'eq', 'user')|list|length }}",
     "{\"ms\": [{\"role\": \"user\"}, {\"role\": \"assistant\"}, {\"role\": \"user\"}]}", "2 user,assistant,user 1"},
    {"generator_is_true", "{% if [1, 2]|select('odd') %}y{% endif %}{% if []|select %}e{% endif %}", NULL, "ye"},
    {"numbers", "{{ '42'|int + 1 }} {{ '2.5'|float * 2 }} {{ 3.7|int }} {{ 2.5|round }} {{ 3.14159|round(2) }}", NULL,
     "43 5.0 3 2.0 3.14"},
    {"indent", "{{ 'a\\nb'|indent(2) }}", NULL, "a\n  b"},
    {"unicode_case",
     "{{ 'stra\xc3\x9f"
     "e'|upper }} {{ '\xce\xa3\xce\x91\xce\xa3'|lower }}",
     NULL, "STRASSE \xcf\x83\xce\xb1\xcf\x82"},
    /* tests */
    {"tests",
     "{{ 'a' is string }} {{ 1 is number }} {{ {} is mapping }} {{ [] is iterable }} {{ none is none }} "
     "{{ x is defined }} {{ 3 is odd }} {{ 6 is divisibleby 3 }} {{ x is not defined and 'k' not in {'a': 1} }}",
     NULL, "True True True True True False True True True"},
    /* methods */
    {"string_methods",
     "{{ ' a '.strip() }}|{{ 'x</think>y'.split('</think>')[-1] }}|{{ '\\n\\nhi'.lstrip('\\n') }}|"
     "{{ 'ab'.startswith('a') }}|{{ 'ab'.endswith('a') }}|{{ 'a b'.split() }}|{{ 'aXb'.lower() }}|{{ 'ab'.upper() }}|"
     "{{ 'a.b'.replace('.', '') }}|{{ 'hi there'.title() }}",
     NULL, "a|y|hi|True|False|['a', 'b']|axb|AB|ab|Hi There"},
    {"dict_methods", "{{ d.keys()|list }} {{ d.values()|list }} {{ d.get('a') }} {{ d.get('z') }} {{ d.items() }}",
     "{\"d\": {\"b\": 1, \"a\": 2}}", "['b', 'a'] [1, 2] 2 None dict_items([('b', 1), ('a', 2)])"},
    /* globals */
    {"globals", "{{ range(3)|list }} {{ range(1, 7, 2)|list }} {{ dict(a=1) }} {{ namespace(x=2).x }}", NULL,
     "[0, 1, 2] [1, 3, 5] {'a': 1} 2"},
    {"strftime_now", "{{ strftime_now('%d %b %Y') }}", NULL, "26 Jul 2024"},
    /* chat-shaped inputs */
    {"content_parts", "{% for p in m.content %}{% if p.type == 'text' %}{{ p.text }}{% endif %}{% endfor %}",
     "{\"m\": {\"content\": [{\"type\": \"text\", \"text\": \"a\"}, {\"type\": \"image\"}, "
     "{\"type\": \"text\", \"text\": \"b\"}]}}",
     "ab"},
    {"content_repr", "{{ m.content }}", "{\"m\": {\"content\": [{\"type\": \"text\", \"text\": \"a\\n\"}]}}",
     "[{'type': 'text', 'text': 'a\\n'}]"},
};

/* errors: each names the construct (and the line) */
typedef struct ecase {
  const char *name, *tmpl, *vars;
  wgllm_status st;
  const char *msg;
} ecase;

static const ecase ecases[] = {
    {"unknown_filter", "{{ x|xyz }}", NULL, WGLLM_ERR_UNSUPPORTED, "unknown filter 'xyz' at line 1"},
    {"unsupported_filter", "a\nb\n{{ x|wordwrap(3) }}", NULL, WGLLM_ERR_UNSUPPORTED,
     "unsupported filter 'wordwrap' at line 3"},
    {"unsupported_test", "{{ x is bogus }}", NULL, WGLLM_ERR_UNSUPPORTED, "unsupported test 'bogus' at line 1"},
    {"unsupported_tag", "{% include 'a' %}", NULL, WGLLM_ERR_UNSUPPORTED, "unsupported tag 'include' at line 1"},
    {"unknown_tag", "\n{% frob %}", NULL, WGLLM_ERR_FORMAT, "unknown tag 'frob' at line 2"},
    {"unclosed_if", "{% if true %}x", NULL, WGLLM_ERR_FORMAT, "the 'if' from line 1 is not closed (expected 'elif' or"},
    {"stray_end", "x{% endfor %}", NULL, WGLLM_ERR_FORMAT, "unexpected 'endfor' (no block is open) at line 1"},
    {"mismatched_end", "{% for x in y %}\n{% endif %}", NULL, WGLLM_ERR_FORMAT,
     "unexpected 'endif' (the 'for' from line 1 expects 'endfor') at line 2"},
    {"unclosed_print", "{{ x ", NULL, WGLLM_ERR_FORMAT, "the '{{' opened here is not closed at line 1"},
    {"unclosed_comment", "{# c", NULL, WGLLM_ERR_FORMAT, "missing end of comment tag"},
    {"unclosed_raw", "{% raw %}x", NULL, WGLLM_ERR_FORMAT, "missing end of raw directive"},
    {"unbalanced_paren", "{{ (1 }}", NULL, WGLLM_ERR_FORMAT, "unexpected '}', expected ')' at line 1"},
    {"unterminated_string", "{{ 'abc }}", NULL, WGLLM_ERR_FORMAT, "unterminated string literal at line 1"},
    {"bad_syntax", "{{ 1 +* 2 }}", NULL, WGLLM_ERR_FORMAT, "unexpected '*' at line 1"},
    {"break_outside_loop", "{% break %}", NULL, WGLLM_ERR_FORMAT, "'break' outside of a loop at line 1"},
    {"recursive_loop", "{% for x in y recursive %}{% endfor %}", NULL, WGLLM_ERR_UNSUPPORTED,
     "unsupported recursive for loop"},
    {"raise_exception", "\n{{ raise_exception('Roles must alternate') }}", NULL, WGLLM_ERR_INVALID_ARG,
     "raise_exception at line 2: Roles must alternate"},
    {"undefined_attribute", "{{ x.y }}", NULL, WGLLM_ERR_INVALID_ARG, "'x' is undefined (its attribute 'y' was read)"},
    {"type_error", "{{ 1 + 'a' }}", NULL, WGLLM_ERR_INVALID_ARG, "unsupported operand type(s) for +: 'int' and 'str'"},
    {"unsupported_method", "{{ 'x'.zfill(2) }}", NULL, WGLLM_ERR_UNSUPPORTED,
     "unsupported string method 'zfill' at line 1"},
    {"unsupported_function", "{{ cycler() }}", NULL, WGLLM_ERR_UNSUPPORTED, "unsupported function 'cycler' at line 1"},
    {"unsupported_dict_method", "{{ d.pop('a') }}", "{\"d\": {}}", WGLLM_ERR_UNSUPPORTED,
     "unsupported dict method 'pop'"},
    {"printf_format", "{{ 'a %s' % 1 }}", NULL, WGLLM_ERR_UNSUPPORTED, "printf-style string formatting"},
    {"none_is_not_iterable", "{{ 'a' in none }}", NULL, WGLLM_ERR_INVALID_ARG,
     "argument of type 'NoneType' is not iterable"},
    {"range_bound", "{{ range(200000)|length }}", NULL, WGLLM_ERR_INVALID_ARG, "range too big"},
    {"print_generator", "{{ [1]|map('string') }}", NULL, WGLLM_ERR_UNSUPPORTED, "printing a generator"},
    {"int_overflow", "{{ 10 ** 20 }}", NULL, WGLLM_ERR_UNSUPPORTED, "integer overflow in '**'"},
    {"macro_varargs", "{% macro m() %}{{ varargs }}{% endmacro %}", NULL, WGLLM_ERR_UNSUPPORTED,
     "unsupported 'varargs' in a macro at line 1"},
};

static void check_cases(void) {
  for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
    char *out = NULL;
    llm_err err = {0};
    wgllm_status st = render(cases[i].tmpl, cases[i].vars, NULL, &out, &err);
    CHECK(st == WGLLM_OK && out && !strcmp(out, cases[i].want), "%s: %s: got [%s] want [%s]", cases[i].name,
          st ? err.msg : "rendered", out ? out : "", cases[i].want);
    free(out);
  }
  for (size_t i = 0; i < sizeof ecases / sizeof *ecases; i++) {
    char *out = NULL;
    llm_err err = {0};
    wgllm_status st = render(ecases[i].tmpl, ecases[i].vars, NULL, &out, &err);
    CHECK(st == ecases[i].st && strstr(err.msg, ecases[i].msg), "%s: status %s, message [%s], want %s [%s]",
          ecases[i].name, wgllm_status_name(st), err.msg, wgllm_status_name(ecases[i].st), ecases[i].msg);
    CHECK(!out, "%s: output on failure", ecases[i].name);
    free(out);
  }
}

/* ---------- bounds: a hostile template fails fast, naming the limit ---------- */
static void check_limit(const char *name, const char *tmpl, jinja_limits lim, const char *msg) {
  char *out = NULL;
  llm_err err = {0};
  wgllm_status st = render(tmpl, NULL, &lim, &out, &err);
  CHECK(st == WGLLM_ERR_INVALID_ARG && strstr(err.msg, msg), "%s: %s [%s], want [%s]", name, wgllm_status_name(st),
        err.msg, msg);
  free(out);
}

static void check_limits(void) {
  jinja_limits d = jinja_default_limits(), l;
  CHECK(d.max_output == 16u << 20 && d.max_memory == (size_t)64 << 20 && d.max_iterations == 1000000 &&
            d.max_steps == 50000000 && d.max_depth == 64,
        "default limits changed: update docs/CHAT_TEMPLATES.md");
  l = d;
  l.max_iterations = 5000;
  check_limit("loop_bound", "{% for i in range(100) %}{% for j in range(100) %}{% endfor %}{% endfor %}", l,
              "more than 5000 loop iterations (max_iterations) at line 1");
  check_limit("recursion_bound", "{% macro r(n) %}{{ r(n + 1) }}{% endmacro %}\n{{ r(0) }}", d,
              "macro calls nested deeper than 64 (max_depth) at line 1");
  l = d;
  l.max_output = 1000;
  check_limit("output_bound", "{% for i in range(1000) %}0123456789{% endfor %}", l,
              "the rendered text exceeds 1000 bytes (max_output)");
  check_limit("string_doubling",
              "{% set ns = namespace(s='x') %}{% for i in range(64) %}{% set ns.s = ns.s ~ ns.s %}{% endfor %}", d,
              "max_output");
  check_limit("string_repeat", "{{ 'x' * 100000000000 }}", d, "max_output");
  check_limit("list_repeat", "{{ ([1] * 100000000)|length }}", d, "max_iterations");
  l = d;
  l.max_memory = 1 << 20;
  check_limit("memory_bound",
              "{% set ns = namespace(l=[]) %}{% for i in range(100000) %}{% set ns.l = ns.l + [i] %}{% endfor %}", l,
              "max_memory");
  /* text held in nested captures counts too: 60 macro levels each holding 40 kB */
  l.max_memory = 1 << 20;
  check_limit("capture_memory",
              "{% macro m(k) %}{{ 'x' * 40000 }}{% if k > 0 %}{{ m(k - 1) }}{% endif %}{% endmacro %}{{ m(60) }}", l,
              "max_memory");
  l = d;
  l.max_steps = 10000;
  check_limit("step_bound", "{% for i in range(50000) %}{% endfor %}", l, "more than 10000 steps (max_steps)");
  /* parse-time bounds */
  char *deep = malloc(3 * 300 + 16);
  llm_err err = {0};
  strcpy(deep, "{{ ");
  for (int i = 0; i < 300; i++)
    strcat(deep, "(");
  strcat(deep, "1");
  for (int i = 0; i < 300; i++)
    strcat(deep, ")");
  strcat(deep, " }}");
  jinja_template *t = NULL;
  wgllm_status st = jinja_parse(deep, strlen(deep), &t, &err);
  CHECK(st == WGLLM_ERR_UNSUPPORTED && strstr(err.msg, "nested deeper than 128"), "deep parentheses: %s", err.msg);
  jinja_free(t);
  free(deep);
  size_t big = JINJA_MAX_SOURCE + 1;
  char *huge = malloc(big);
  memset(huge, 'x', big);
  st = jinja_parse(huge, big, &t, &err);
  CHECK(st == WGLLM_ERR_UNSUPPORTED && strstr(err.msg, "over the"), "huge template: %s", err.msg);
  free(huge);
  /* deep blocks */
  char *blocks = malloc(200 * 26 + 16);
  blocks[0] = 0;
  for (int i = 0; i < 200; i++)
    strcat(blocks, "{% if true %}");
  st = jinja_parse(blocks, strlen(blocks), &t, &err);
  CHECK(st == WGLLM_ERR_UNSUPPORTED && strstr(err.msg, "nested deeper"), "deep blocks: %s", err.msg);
  free(blocks);
  /* the same template renders again after failures, and from the same parse */
  st = jinja_parse("{{ x }}", 7, &t, &err);
  CHECK(!st, "parse: %s", err.msg);
  for (int k = 0; k < 3 && !st; k++) {
    char *out = NULL;
    cJSON *v = cJSON_Parse(k == 1 ? "[1]" : "{\"x\": 5}");
    st = jinja_render(t, v, NULL, &out, NULL, &err);
    if (k == 1) {
      CHECK(st == WGLLM_ERR_INVALID_ARG, "variables that are not an object: %s", wgllm_status_name(st));
      st = WGLLM_OK;
    } else
      CHECK(!st && !strcmp(out, "5"), "re-render %d: %s", k, st ? err.msg : out);
    free(out);
    cJSON_Delete(v);
  }
  jinja_free(t);
}

/* ---------- fixtures: transformers' output for the models' own templates ---------- */
static int check_fixture(const char *path) {
  size_t n;
  char *js = th_read_file(path, &n);
  cJSON *fx = js ? cJSON_Parse(js) : NULL;
  free(js);
  const cJSON *tmpl = cJSON_GetObjectItemCaseSensitive(fx, "template"),
              *cs = cJSON_GetObjectItemCaseSensitive(fx, "cases");
  CHECK(cJSON_IsString(tmpl) && cJSON_IsArray(cs), "%s: not a chat fixture", path);
  if (!cJSON_IsString(tmpl) || !cJSON_IsArray(cs)) {
    cJSON_Delete(fx);
    return 0;
  }
  jinja_template *t = NULL;
  llm_err err = {0};
  wgllm_status st = jinja_parse(tmpl->valuestring, strlen(tmpl->valuestring), &t, &err);
  CHECK(!st, "%s: the template does not parse: %s", path, err.msg);
  int k = 0;
  const cJSON *c;
  cJSON_ArrayForEach(c, cs) {
    if (st) break;
    const char *name = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(c, "name"));
    const cJSON *vars = cJSON_GetObjectItemCaseSensitive(c, "vars");
    const char *want = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(c, "expected"));
    const char *werr = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(c, "error"));
    int raised = cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(c, "raised"));
    char *out = NULL;
    jinja_limits l = jinja_default_limits();
    l.now = FIXED_NOW;
    wgllm_status rs = jinja_render(t, vars, &l, &out, NULL, &err);
    if (want) {
      CHECK(rs == WGLLM_OK && !strcmp(out, want), "%s / %s: %s\n  got  [%s]\n  want [%s]", path, name,
            rs ? err.msg : "differs", out ? out : "", want);
    } else {
      CHECK(rs != WGLLM_OK, "%s / %s: rendered [%s] where transformers failed (%s)", path, name, out ? out : "",
            werr ? werr : "");
      if (raised && werr)
        CHECK(strstr(err.msg, werr) != NULL, "%s / %s: message [%s], want [%s]", path, name, err.msg, werr);
    }
    free(out);
    k++;
  }
  jinja_free(t);
  cJSON_Delete(fx);
  return k;
}

static void check_fixtures(void) {
  DIR *d = opendir("data/chat");
  int files = 0, total = 0;
  struct dirent *e;
  while (d && (e = readdir(d))) {
    size_t l = strlen(e->d_name);
    if (l < 6 || strcmp(e->d_name + l - 5, ".json")) continue;
    char path[512];
    snprintf(path, sizeof path, "data/chat/%s", e->d_name);
    total += check_fixture(path);
    files++;
  }
  if (d) closedir(d);
  printf("test_chat_template: %d fixture files, %d cases (%s)\n", files, total,
         files ? "transformers' apply_chat_template output" : "none yet: tools/refs/make_chat_refs.py makes them");
}

/* ---------- the named templates against the models' templates ---------- */
/* Each named template is meant to write what its family's template writes; the cases where it does not, and why.
   A case listed here must differ (else the table is stale); every other case must be equal, or fail where the
   model's template fails. */
typedef struct named_diff {
  const char *cases; /* space-separated case names */
  const char *why;
} named_diff;

static const struct named_fixture {
  const char *fixture, *named;
  int qwen_system; /* Qwen 2.5's default system message made explicit (the named chatml writes none) */
  named_diff diff[6];
} named_fixtures[] = {
    {"llama3",
     "llama3",
     0,
     {{"multi_turn_no_generation_prompt ends_with_assistant",
       "Llama 3.0's template writes the assistant header even when add_generation_prompt is false"},
      {"content_parts system_parts",
       "the template prints a list content as Python's repr; the named templates join the text parts"},
      {"whitespace", "the template trims every content; the plain named llama3 writes contents as given (its tool "
                     "format trims, as Llama 3.2's does)"},
      {"tools tools_no_system tool_call tool_call_arguments_string tool_call_then_answer two_tool_calls",
       "Llama 3.0's template has no tool format (it drops the tools and writes a 'tool' role); the named llama3 "
       "writes Llama 3.1/3.2's, compared with llama3.2.json"}}},
    {"llama3.2",
     "llama3",
     0,
     {{"system_user user_only multi_turn multi_turn_no_generation_prompt ends_with_assistant content_parts "
       "system_parts unicode empty_content whitespace roles_not_alternating",
       "Llama 3.2's template writes the Cutting Knowledge / Today Date system header in every prompt; the named "
       "llama3 writes it with tools only (without tools it is Llama 3.0's format, compared with llama3.json)"}}},
    {"qwen3",
     "chatml",
     0,
     {{"content_parts system_parts", "Qwen 3's template fails on a list content; the named templates join the text "
                                     "parts"},
      {"ends_with_assistant", "Qwen 3 writes an empty <think> block before the last assistant message after the last "
                              "user message; ChatML has no thinking"},
      {"thinking_disabled thinking_disabled_multi_turn",
       "enable_thinking false makes Qwen 3 open the reply with an empty <think> block; the named chatml does not "
       "read enable_thinking"},
      {"think_in_content reasoning_after_tool",
       "Qwen 3 moves an assistant's reasoning (reasoning_content, or a <think> block in its content) into a think "
       "block of its own; the named chatml writes the content as given"}}},
    {"qwen2.5",
     "chatml",
     1,
     {{"content_parts system_parts", "Qwen 2.5's template fails on a list content; the named templates join the text "
                                     "parts"},
      {"tool_call_arguments_string",
       "Qwen 2.5 writes arguments given as a string as a JSON string (tojson); the named chatml writes them as given, "
       "as Qwen 3 does (the object they hold)"}}},
    {"gemma3",
     "gemma",
     0,
     {{"content_parts whitespace", "Gemma 3's template trims contents (and each text part); the named gemma writes "
                                   "them as given"},
      {"roles_not_alternating", "Gemma 3's template refuses roles that do not alternate; the named gemma writes them"},
      {"tools tools_no_system", "Gemma 3's template drops the tools; the named gemma describes them in the first turn "
                                "(Gemma's function calling by prompt, docs/CHAT_TEMPLATES.md)"},
      {"tool_call tool_call_arguments_string tool_call_then_answer two_tool_calls",
       "Gemma 3's template refuses the tool role (roles must alternate); the named gemma writes calls as ```tool_code "
       "and results as ```tool_output"}}},
    {"llama2",
     "llama2",
     0,
     {{"content_parts system_parts", "Llama 2's template fails on a list content; the named templates join the text "
                                     "parts"},
      {"whitespace",
       "Llama 2's template strips the user and assistant contents; the named llama2 writes them as given"},
      {"roles_not_alternating", "Llama 2's template refuses roles that do not alternate; the named llama2 writes them"},
      {"tools tools_no_system",
       "Llama 2's template drops the tools; the named llama2 refuses them (Llama 2 has no tool format, and a request "
       "whose tools vanish is another request), saying to use the model's own template"}}},
};

/* Mistral v0.3 (tests/data/chat/mistral_v0.3.json) has no named template: the named llama2 is Llama 2's format
   (<<SYS>>, spaces around [/INST]), not Mistral's, and writing Mistral's [AVAILABLE_TOOLS] / [TOOL_CALLS] /
   [TOOL_RESULTS] into Llama 2's format would match neither model. Every tool case of that fixture is refused by
   the named llama2 with a message pointing to the model's own template. */

static int listed(const char *cases, const char *name) {
  size_t n = strlen(name);
  for (const char *p = cases; (p = strstr(p, name)); p += n)
    if ((p == cases || p[-1] == ' ') && (p[n] == ' ' || !p[n])) return 1;
  return 0;
}

static void check_named_fixtures(void) {
  int equal = 0, differ = 0;
  for (size_t f = 0; f < sizeof named_fixtures / sizeof *named_fixtures + 1; f++) {
    int mistral = f == sizeof named_fixtures / sizeof *named_fixtures;
    const struct named_fixture *nf = mistral ? NULL : &named_fixtures[f];
    char path[256];
    snprintf(path, sizeof path, "data/chat/%s.json", mistral ? "mistral_v0.3" : nf->fixture);
    size_t n;
    char *js = th_read_file(path, &n);
    cJSON *fx = js ? cJSON_Parse(js) : NULL;
    free(js);
    chat_renderer *r = NULL;
    llm_err err = {0};
    wgllm_status st = chat_renderer_create(mistral ? "llama2" : nf->named, NULL, NULL, &r, &err);
    CHECK(fx && !st, "%s: %s", path, fx ? err.msg : "no fixture");
    const cJSON *c;
    cJSON_ArrayForEach(c, cJSON_GetObjectItemCaseSensitive(fx, "cases")) {
      if (st) break;
      const char *name = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(c, "name"));
      const char *want = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(c, "expected"));
      const cJSON *vars = cJSON_GetObjectItemCaseSensitive(c, "vars");
      cJSON *msgs = cJSON_Duplicate(cJSON_GetObjectItemCaseSensitive(vars, "messages"), 1), *kw = cJSON_CreateObject();
      const cJSON *tools = cJSON_GetObjectItemCaseSensitive(vars, "tools"), *it;
      cJSON_ArrayForEach(it, vars) {
        static const char *const not_kw[] = {"messages",  "tools",    "documents", "add_generation_prompt",
                                             "bos_token", "eos_token"};
        int k = 0;
        while (k < 6 && strcmp(it->string, not_kw[k]))
          k++;
        if (k == 6) cJSON_AddItemReferenceToObject(kw, it->string, (cJSON *)it);
      }
      const char *role0 = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(cJSON_GetArrayItem(msgs, 0), "role"));
      if (!mistral && nf->qwen_system && (!role0 || strcmp(role0, "system"))) {
        cJSON *sys = cJSON_CreateObject();
        cJSON_AddStringToObject(sys, "role", "system");
        cJSON_AddStringToObject(sys, "content", "You are Qwen, created by Alibaba Cloud. You are a helpful assistant.");
        cJSON_InsertItemInArray(msgs, 0, sys);
      }
      chat_request q = {msgs, cJSON_IsNull(tools) ? NULL : tools, kw,
                        cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(vars, "add_generation_prompt"))};
      char *out = NULL;
      wgllm_status rs = chat_renderer_apply(r, &q, NULL, &out, &err);
      int same = want ? rs == WGLLM_OK && !strcmp(out, want) : rs != WGLLM_OK;
      const char *why = NULL;
      for (int d = 0; !mistral && d < 6 && nf->diff[d].cases; d++)
        if (listed(nf->diff[d].cases, name)) why = nf->diff[d].why;
      if (mistral) {
        int tool_case = cJSON_GetArraySize(tools) > 0 || strstr(name, "tool");
        if (tool_case)
          CHECK(rs == WGLLM_ERR_UNSUPPORTED && strstr(err.msg, "use the model's own chat template"),
                "%s / %s: the named llama2 should refuse Mistral's tools: %s", path, name, rs ? err.msg : out);
        differ++;
      } else if (why) {
        CHECK(!same, "%s / %s: listed as differing from the named %s (%s), but equal: update the table", path, name,
              nf->named, why);
        differ++;
      } else {
        CHECK(same, "%s / %s: the named %s template: %s\n  got  [%s]\n  want [%s]", path, name, nf->named,
              rs ? err.msg : "differs", out ? out : "", want ? want : "(an error)");
        equal++;
      }
      free(out);
      cJSON_Delete(msgs);
      cJSON_Delete(kw);
    }
    chat_renderer_free(r);
    cJSON_Delete(fx);
  }
  printf("test_chat_template: named templates on the fixtures: %d cases as the model's template, %d differing by "
         "design\n",
         equal, differ);
}

/* ---------- the renderer and the template's way in ---------- */
static const char *const qwen_like =
    "{%- if tools %}{{- '<|im_start|>system\\n# Tools' }}{%- for t in tools %}{{- '\\n' + t|tojson }}{%- endfor %}"
    "{{- '<|im_end|>\\n' }}{%- endif %}"
    "{%- for m in messages %}{{- '<|im_start|>' + m.role + '\\n' + m.content + '<|im_end|>\\n' }}{%- endfor %}"
    "{%- if add_generation_prompt %}{{- '<|im_start|>assistant\\n' }}"
    "{%- if enable_thinking is defined and enable_thinking is false %}{{- '<think>\\n\\n</think>\\n\\n' }}{%- endif %}"
    "{%- endif %}";

static char *apply(chat_renderer *r, const char *msgs, const char *tools, const char *kwargs, int agp, wgllm_status *st,
                   llm_err *err) {
  cJSON *m = cJSON_Parse(msgs), *t = tools ? cJSON_Parse(tools) : NULL, *k = kwargs ? cJSON_Parse(kwargs) : NULL;
  chat_request q = {m, t, k, agp};
  char *out = NULL;
  *st = chat_renderer_apply(r, &q, NULL, &out, err);
  cJSON_Delete(m);
  cJSON_Delete(t);
  cJSON_Delete(k);
  return out;
}

static void write_file(const char *path, const char *text) {
  FILE *f = fopen(path, "wb");
  if (f) {
    fputs(text, f);
    fclose(f);
  }
}

static void check_renderer(void) {
  llm_err err = {0};
  chat_renderer *r = NULL;
  wgllm_status st = chat_renderer_create(NULL, qwen_like, NULL, &r, &err);
  CHECK(!st && r && !strcmp(chat_renderer_name(r), "jinja") && !chat_renderer_adds_bos(r), "model template: %s",
        err.msg);
  if (!st) {
    const char *msgs = "[{\"role\": \"user\", \"content\": \"Hi\"}]";
    char *out = apply(r, msgs, NULL, NULL, 1, &st, &err);
    CHECK(!st && !strcmp(out, "<|im_start|>user\nHi<|im_end|>\n<|im_start|>assistant\n"), "render: %s",
          st ? err.msg : out);
    free(out);
    out = apply(r, msgs, "[{\"type\": \"function\", \"function\": {\"name\": \"f\"}}]", "{\"enable_thinking\": false}",
                1, &st, &err);
    CHECK(!st && !strcmp(out, "<|im_start|>system\n# Tools\n{\"type\": \"function\", \"function\": {\"name\": \"f\"}}"
                              "<|im_end|>\n<|im_start|>user\nHi<|im_end|>\n<|im_start|>assistant\n"
                              "<think>\n\n</think>\n\n"),
          "tools and enable_thinking: %s", st ? err.msg : out);
    free(out);
    out = apply(r, msgs, NULL, "{\"messages\": []}", 1, &st, &err);
    CHECK(st == WGLLM_ERR_INVALID_ARG && strstr(err.msg, "'messages'"), "kwargs setting messages: %s", err.msg);
    free(out);
    out = apply(r, "{\"role\": \"user\"}", NULL, NULL, 1, &st, &err);
    CHECK(st == WGLLM_ERR_INVALID_ARG, "messages not a list: %s", wgllm_status_name(st));
    free(out);
    out = apply(r, "[{\"role\": \"user\"}]", NULL, NULL, 1, &st, &err);
    CHECK(st == WGLLM_ERR_INVALID_ARG && strstr(err.msg, "undefined"), "content missing: %s", err.msg);
    free(out);
  }
  chat_renderer_free(r);
  /* a template outside the subset is an error at creation, naming the construct: no fallback */
  st = chat_renderer_create(NULL, "{{ messages|groupby('role') }}", NULL, &r, &err);
  CHECK(st == WGLLM_ERR_UNSUPPORTED && !r && strstr(err.msg, "unsupported filter 'groupby' at line 1"),
        "unrunnable: %s", err.msg);
  /* a named template overrides even a broken one */
  st = chat_renderer_create("chatml", "{{ messages|groupby('role') }}", NULL, &r, &err);
  CHECK(!st && !strcmp(chat_renderer_name(r), "chatml"), "forced name: %s", err.msg);
  if (!st) {
    char *out = apply(r,
                      "[{\"role\": \"user\", \"content\": [{\"type\": \"text\", \"text\": \"a\"}, "
                      "{\"type\": \"text\", \"text\": \"b\"}]}]",
                      NULL, NULL, 1, &st, &err);
    CHECK(!st && !strcmp(out, "<|im_start|>user\nab<|im_end|>\n<|im_start|>assistant\n"), "named: %s",
          st ? err.msg : out);
    free(out);
    /* tools: Qwen's format (check_named_fixtures compares it with the fixtures) */
    out = apply(r, "[{\"role\": \"user\", \"content\": \"x\"}]",
                "[{\"type\": \"function\", \"function\": {\"name\": \"f\"}}]", NULL, 1, &st, &err);
    CHECK(!st && strstr(out, "# Tools") && strstr(out, "\n{\"type\": \"function\", \"function\": {\"name\": \"f\"}}\n"),
          "named + tools: %s", st ? err.msg : out);
    free(out);
    /* tool_calls empty or null: no calls */
    out = apply(r,
                "[{\"role\": \"assistant\", \"content\": \"a\", \"tool_calls\": []}, {\"role\": \"user\", "
                "\"content\": \"b\", \"tool_calls\": null}]",
                NULL, NULL, 0, &st, &err);
    CHECK(!st && !strcmp(out, "<|im_start|>assistant\na<|im_end|>\n<|im_start|>user\nb<|im_end|>\n"),
          "named + empty tool calls: %s", st ? err.msg : out);
    free(out);
    out = apply(r, "[{\"role\": \"assistant\", \"content\": \"\", \"tool_calls\": {}}]", NULL, NULL, 1, &st, &err);
    CHECK(st == WGLLM_ERR_INVALID_ARG && strstr(err.msg, "message 0: tool_calls must be a list"), "tool_calls {}: %s",
          err.msg);
    free(out);
    out =
        apply(r, "[{\"role\": \"assistant\", \"content\": \"\", \"tool_calls\": [{\"function\": {\"name\": \"f\"}}]}]",
              NULL, NULL, 1, &st, &err);
    CHECK(st == WGLLM_ERR_INVALID_ARG && strstr(err.msg, "message 0: tool call 0 (f) has no arguments"),
          "a call without arguments: %s", err.msg);
    free(out);
  }
  chat_renderer_free(r);
  /* llama2 and none refuse tools and tool calls, naming the way out */
  for (int k = 0; k < 2; k++) {
    st = chat_renderer_create(k ? "none" : "llama2", NULL, NULL, &r, &err);
    char *out =
        apply(r, "[{\"role\": \"user\", \"content\": \"x\"}]", "[{\"type\": \"function\"}]", NULL, 1, &st, &err);
    CHECK(st == WGLLM_ERR_UNSUPPORTED && !out && strstr(err.msg, "cannot render tools") &&
              strstr(err.msg, "use the model's own chat template"),
          "%s + tools: %s", k ? "none" : "llama2", err.msg);
    out = apply(r, "[{\"role\": \"user\", \"content\": \"x\"}, {\"role\": \"tool\", \"content\": \"1\"}]", NULL, NULL,
                1, &st, &err);
    CHECK(st == WGLLM_ERR_UNSUPPORTED && !out && strstr(err.msg, "tool calls (message 1)"), "%s + tool result: %s",
          k ? "none" : "llama2", err.msg);
    chat_renderer_free(r);
  }
  /* the named gemma: a call's arguments must be keyword arguments */
  st = chat_renderer_create("gemma", NULL, NULL, &r, &err);
  if (!st) {
    char *out = apply(r,
                      "[{\"role\": \"user\", \"content\": \"x\"}, {\"role\": \"assistant\", \"content\": null, "
                      "\"tool_calls\": [{\"function\": {\"name\": \"f\", \"arguments\": \"{\\\"a b\\\": 1}\"}}]}]",
                      NULL, NULL, 0, &st, &err);
    CHECK(st == WGLLM_ERR_INVALID_ARG && strstr(err.msg, "message 1, tool call 0: argument \"a b\" of f"),
          "gemma call with a key that is no identifier: %s", err.msg);
    free(out);
    out = apply(r, "[{\"role\": \"system\", \"content\": \"s\"}]", "[{\"type\": \"function\"}]", NULL, 1, &st, &err);
    CHECK(st == WGLLM_ERR_INVALID_ARG && strstr(err.msg, "first turn"), "gemma tools without a turn: %s", err.msg);
    free(out);
  }
  chat_renderer_free(r);
  st = chat_renderer_create("nope", NULL, NULL, &r, &err);
  CHECK(st == WGLLM_ERR_INVALID_ARG && strstr(err.msg, "unknown"), "unknown name: %s", err.msg);
  st = chat_renderer_create(NULL, NULL, NULL, &r, &err);
  CHECK(!st && !strcmp(chat_renderer_name(r), "none") && chat_renderer_adds_bos(r), "no template: %s", err.msg);
  chat_renderer_free(r);

  /* the tokenizer's BOS and EOS reach the template; chat_template.jinja wins over tokenizer_config.json */
  char dir[] = "/tmp/wgllm_chat_XXXXXX";
  if (!mkdtemp(dir)) {
    CHECK(0, "mkdtemp");
    return;
  }
  char p1[256], p2[256], p3[256];
  size_t n;
  char *tj = th_read_file("../models/default/tokenizer.json", &n);
  CHECK(tj != NULL, "../models/default/tokenizer.json");
  snprintf(p1, sizeof p1, "%s/tokenizer.json", dir);
  snprintf(p2, sizeof p2, "%s/tokenizer_config.json", dir);
  snprintf(p3, sizeof p3, "%s/chat_template.jinja", dir);
  if (tj) write_file(p1, tj);
  free(tj);
  write_file(p2, "{\"bos_token\": \"<|begin_of_text|>\", \"eos_token\": \"<|end_of_text|>\", "
                 "\"chat_template\": \"config: {{ bos_token }}|{{ eos_token }}\"}");
  tokenizer *tok = NULL;
  char *jinja = NULL;
  st = llm_load_tokenizer(dir, &tok, &jinja, &err);
  CHECK(!st && jinja && !strcmp(jinja, "config: {{ bos_token }}|{{ eos_token }}"), "tokenizer_config template: %s",
        st      ? err.msg
        : jinja ? jinja
                : "(none)");
  if (!st) {
    st = chat_renderer_create(NULL, jinja, tok, &r, &err);
    char *out = st ? NULL : apply(r, "[]", NULL, NULL, 0, &st, &err);
    CHECK(!st && !strcmp(out, "config: <|begin_of_text|>|<|end_of_text|>"), "bos/eos: %s", st ? err.msg : out);
    free(out);
    chat_renderer_free(r);
  }
  free(jinja);
  tok_free(tok);
  write_file(p3, "file: {{ messages|length }}\n");
  tok = NULL;
  jinja = NULL;
  st = llm_load_tokenizer(dir, &tok, &jinja, &err);
  CHECK(!st && jinja && !strcmp(jinja, "file: {{ messages|length }}\n"), "chat_template.jinja: %s",
        st      ? err.msg
        : jinja ? jinja
                : "(none)");
  free(jinja);
  tok_free(tok);
  unlink(p1);
  unlink(p2);
  unlink(p3);
  rmdir(dir);
}

/* --dump-cases: the hand-computed cases as JSON, for tools/refs/jinja_crosscheck.py --test-cases */
static int dump_cases(void) {
  cJSON *a = cJSON_CreateArray();
  for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
    cJSON *o = cJSON_CreateObject();
    cJSON_AddStringToObject(o, "name", cases[i].name);
    cJSON_AddStringToObject(o, "template", cases[i].tmpl);
    cJSON_AddItemToObject(o, "vars", cases[i].vars ? cJSON_Parse(cases[i].vars) : cJSON_CreateObject());
    cJSON_AddStringToObject(o, "expected", cases[i].want);
    cJSON_AddItemToArray(a, o);
  }
  for (size_t i = 0; i < sizeof ecases / sizeof *ecases; i++) {
    cJSON *o = cJSON_CreateObject();
    cJSON_AddStringToObject(o, "name", ecases[i].name);
    cJSON_AddStringToObject(o, "template", ecases[i].tmpl);
    cJSON_AddItemToObject(o, "vars", ecases[i].vars ? cJSON_Parse(ecases[i].vars) : cJSON_CreateObject());
    cJSON_AddStringToObject(o, "error", ecases[i].msg);
    cJSON_AddBoolToObject(o, "unsupported", ecases[i].st == WGLLM_ERR_UNSUPPORTED);
    cJSON_AddItemToArray(a, o);
  }
  char *s = cJSON_PrintUnformatted(a);
  fputs(s, stdout);
  free(s);
  cJSON_Delete(a);
  return 0;
}

int main(int argc, char **argv) {
  if (argc == 3 && !strcmp(argv[1], "--render-batch")) return render_batch(argv[2]);
  if (argc == 2 && !strcmp(argv[1], "--dump-cases")) return dump_cases();
  check_cases();
  check_limits();
  check_fixtures();
  check_named_fixtures();
  check_renderer();
  return th_finish("test_chat_template");
}
