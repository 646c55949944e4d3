/* JSON's shape before parsing (see json_shape.h). */
#include "json_shape.h"
#include <stdio.h>

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
