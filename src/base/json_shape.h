/* The shape of a JSON text, measured before it is parsed: cJSON builds a node of some 80-150 bytes of heap for every
   value, so `[0,0,0,...]` costs about 40 times its size. Every JSON text the engine reads (config.json, the
   safetensors header and index, tokenizer.json, tokenizer_config.json) and the server's request bodies are checked
   here first, in one pass over the bytes that allocates nothing, against a count of values and a depth chosen for
   that input (docs/LIMITS.md). Dependency-free: the CLI and the server compile this file too (they see only the
   public header of the library). */
#ifndef WGLLM_JSON_SHAPE_H
#define WGLLM_JSON_SHAPE_H
#include <stddef.h>

typedef struct json_shape {
  size_t values; /* an upper bound of the values cJSON would make: 1 + containers + commas outside strings */
  size_t depth;  /* the deepest nesting of arrays and objects */
} json_shape;

/* The shape of s[0, n); strings are skipped with their escapes. Malformed text is left to the parser (the bound
   still holds for whatever it builds before failing). */
json_shape json_shape_of(const char *s, size_t n);

/* Depth of the JSON files the engine reads: real ones nest at most 5 deep (tokenizer.json). */
#define JSON_FILE_MAX_DEPTH 64

/* 0 when s[0, n) holds at most max_values values nested at most max_depth deep. Otherwise JSON_TOO_DEEP or
   JSON_TOO_MANY (depth is checked first), with msg (of cap bytes) saying so, e.g. "JSON holds about 45000002
   values; at most 1000000 are accepted"; the caller puts what the text is in front. */
enum { JSON_TOO_MANY = 1, JSON_TOO_DEEP = 2 };
int json_shape_check(const char *s, size_t n, size_t max_values, size_t max_depth, char *msg, size_t cap);

/* "\u0000" inside a JSON string is a NUL byte, where cJSON's C strings end. json_mark_nul_escapes returns a malloc'd
   copy of s[0, n) (NUL-terminated, *out_n its length; NULL when out of memory) with each such escape written as
   the byte mark (0xFF, which valid UTF-8 never holds), for a caller that reads its strings back with mark as NUL;
   json_nul_escape_at gives the first one's offset, or -1. */
char *json_mark_nul_escapes(const char *s, size_t n, unsigned char mark, size_t *out_n);
long json_nul_escape_at(const char *s, size_t n);
#endif
