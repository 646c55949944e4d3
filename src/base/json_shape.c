/* JSON's shape before parsing (see json_shape.h). */
#include "json_shape.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

json_shape json_shape_of(const char *s, size_t n) {
  size_t v = 1, d = 0, dmax = 0;
  for (size_t i = 0; i < n; i++) {
    char c = s[i];
    if (c == '"') {
      for (i++; i < n && s[i] != '"'; i++)
        if (s[i] == '\\') i++; /* the escaped character, a quote included */
    } else if (c == '[' || c == '{') {
      v++;
      if (++d > dmax) dmax = d;
    } else if (c == ']' || c == '}') {
      if (d) d--;
    } else if (c == ',') {
      v++;
    }
  }
  return (json_shape){v, dmax};
}

int json_shape_check(const char *s, size_t n, size_t max_values, size_t max_depth, char *msg, size_t cap) {
  json_shape sh = json_shape_of(s, n);
  if (sh.depth > max_depth) {
    snprintf(msg, cap, "JSON nests %zu deep; at most %zu levels are accepted", sh.depth, max_depth);
    return JSON_TOO_DEEP;
  }
  if (sh.values > max_values) {
    snprintf(msg, cap, "JSON holds about %zu values; at most %zu are accepted", sh.values, max_values);
    return JSON_TOO_MANY;
  }
  if (cap) msg[0] = 0;
  return 0;
}

/* 1 when s[i] (inside a string, a backslash) starts a "\u0000" escape */
static int nul_escape(const char *s, size_t n, size_t i) {
  return i + 5 < n && s[i + 1] == 'u' && !memcmp(s + i + 2, "0000", 4);
}

char *json_mark_nul_escapes(const char *s, size_t n, unsigned char mark, size_t *out_n) {
  char *o = malloc(n + 1);
  if (!o) return NULL;
  size_t k = 0;
  int in_str = 0;
  for (size_t i = 0; i < n; i++) {
    char c = s[i];
    if (in_str && c == '\\' && nul_escape(s, n, i)) {
      o[k++] = (char)mark;
      i += 5;
      continue;
    }
    o[k++] = c;
    if (in_str && c == '\\' && i + 1 < n)
      o[k++] = s[++i];
    else if (c == '"')
      in_str = !in_str;
  }
  o[k] = 0;
  *out_n = k;
  return o;
}

long json_nul_escape_at(const char *s, size_t n) {
  int in_str = 0;
  for (size_t i = 0; i < n; i++) {
    if (in_str && s[i] == '\\') {
      if (nul_escape(s, n, i)) return (long)i;
      i++;
    } else if (s[i] == '"')
      in_str = !in_str;
  }
  return -1;
}
