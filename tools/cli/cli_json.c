/* The chat's /save and /load: a conversation as JSON messages, [{"role": "user", "content": "..."}, ...] (the
   shape transformers' apply_chat_template and OpenAI's API take). A small reader of its own: the CLI links only
   libwgllm. */
#include "cli.h"
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void put_string(FILE *f, const char *s) {
  fputc('"', f);
  for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
    switch (*p) {
    case '"':
      fputs("\\\"", f);
      break;
    case '\\':
      fputs("\\\\", f);
      break;
    case '\n':
      fputs("\\n", f);
      break;
    case '\r':
      fputs("\\r", f);
      break;
    case '\t':
      fputs("\\t", f);
      break;
    default:
      if (*p < 0x20)
        fprintf(f, "\\u%04x", *p);
      else
        fputc(*p, f); /* UTF-8 as it is */
    }
  }
  fputc('"', f);
}

int cli_json_save(const char *path, const wgllm_message *msgs, size_t n) {
  FILE *f = fopen(path, "w");
  if (!f) return -1;
  fputs("[", f);
  for (size_t i = 0; i < n; i++) {
    fputs(i ? ",\n  {\"role\": " : "\n  {\"role\": ", f);
    put_string(f, msgs[i].role);
    fputs(", \"content\": ", f);
    put_string(f, msgs[i].content);
    fputs("}", f);
  }
  fputs(n ? "\n]\n" : "]\n", f);
  int bad = ferror(f);
  if (fclose(f) || bad) {
    if (!errno) errno = EIO;
    return -1;
  }
  return 0;
}

typedef struct reader {
  const char *p, *start, *end;
  char *err;
  size_t errlen;
} reader;

static int fail(reader *r, const char *fmt, ...) {
  if (r->err[0]) return -1; /* the first reason stays */
  int off = snprintf(r->err, r->errlen, "byte %ld: ", (long)(r->p - r->start));
  va_list ap;
  va_start(ap, fmt);
  if (off > 0 && (size_t)off < r->errlen) vsnprintf(r->err + off, r->errlen - (size_t)off, fmt, ap);
  va_end(ap);
  return -1;
}

static void skip_ws(reader *r) {
  while (r->p < r->end && (*r->p == ' ' || *r->p == '\t' || *r->p == '\n' || *r->p == '\r'))
    r->p++;
}

static int hex4(reader *r, unsigned *v) {
  *v = 0;
  for (int i = 0; i < 4; i++, r->p++) {
    if (r->p >= r->end) return fail(r, "a \\u escape is cut short");
    char c = *r->p;
    unsigned d = c >= '0' && c <= '9'   ? (unsigned)(c - '0')
                 : c >= 'a' && c <= 'f' ? (unsigned)(c - 'a' + 10)
                 : c >= 'A' && c <= 'F' ? (unsigned)(c - 'A' + 10)
                                        : 16;
    if (d == 16) return fail(r, "a \\u escape needs four hex digits");
    *v = *v << 4 | d;
  }
  return 0;
}

/* A string at r->p (the opening quote), as malloc'd UTF-8 in *out (NULL: skipped). */
static int string(reader *r, char **out) {
  if (r->p >= r->end || *r->p != '"') return fail(r, "expected a string");
  r->p++;
  size_t cap = 64, n = 0;
  char *s = out ? malloc(cap) : NULL;
  if (out && !s) return fail(r, "out of memory");
  for (;;) {
    if (r->p >= r->end) {
      free(s);
      return fail(r, "a string is not closed");
    }
    unsigned char c = (unsigned char)*r->p++;
    char buf[4];
    size_t k = 0;
    if (c == '"') break;
    if (c < 0x20) {
      free(s);
      r->p--;
      return fail(r, "a control character inside a string");
    }
    if (c != '\\') {
      buf[k++] = (char)c;
    } else {
      if (r->p >= r->end) {
        free(s);
        return fail(r, "a string is not closed");
      }
      char e = *r->p++;
      const char *simple = strchr("\"\\/bfnrt", e);
      if (simple && e) {
        buf[k++] = "\"\\/\b\f\n\r\t"[simple - "\"\\/bfnrt"];
      } else if (e == 'u') {
        unsigned cp;
        if (hex4(r, &cp)) {
          free(s);
          return -1;
        }
        if (cp >= 0xD800 && cp <= 0xDBFF) { /* a surrogate pair */
          unsigned lo;
          if (r->end - r->p < 2 || r->p[0] != '\\' || r->p[1] != 'u') {
            free(s);
            return fail(r, "a lone surrogate \\u%04x", cp);
          }
          r->p += 2;
          if (hex4(r, &lo)) {
            free(s);
            return -1;
          }
          if (lo < 0xDC00 || lo > 0xDFFF) {
            free(s);
            return fail(r, "a lone surrogate \\u%04x", cp);
          }
          cp = 0x10000 + ((cp - 0xD800) << 10) + (lo - 0xDC00);
        } else if (cp >= 0xDC00 && cp <= 0xDFFF) {
          free(s);
          return fail(r, "a lone surrogate \\u%04x", cp);
        }
        if (cp == 0) {
          free(s);
          return fail(r, "a NUL character (\\u0000) in a string");
        }
        if (cp < 0x80) {
          buf[k++] = (char)cp;
        } else if (cp < 0x800) {
          buf[k++] = (char)(0xC0 | cp >> 6);
          buf[k++] = (char)(0x80 | (cp & 0x3F));
        } else if (cp < 0x10000) {
          buf[k++] = (char)(0xE0 | cp >> 12);
          buf[k++] = (char)(0x80 | (cp >> 6 & 0x3F));
          buf[k++] = (char)(0x80 | (cp & 0x3F));
        } else {
          buf[k++] = (char)(0xF0 | cp >> 18);
          buf[k++] = (char)(0x80 | (cp >> 12 & 0x3F));
          buf[k++] = (char)(0x80 | (cp >> 6 & 0x3F));
          buf[k++] = (char)(0x80 | (cp & 0x3F));
        }
      } else {
        free(s);
        r->p--;
        return fail(r, "an unknown escape \\%c", e);
      }
    }
    if (!s) continue;
    if (n + k + 1 > cap) {
      char *g = realloc(s, cap *= 2);
      if (!g) {
        free(s);
        return fail(r, "out of memory");
      }
      s = g;
    }
    memcpy(s + n, buf, k);
    n += k;
  }
  if (s) {
    s[n] = 0;
    if (cli_utf8_invalid_at(s) >= 0) {
      free(s);
      return fail(r, "a string is not valid UTF-8");
    }
    *out = s;
  }
  return 0;
}

/* Skips any value (nesting bounded). */
static int skip_value(reader *r, int depth) {
  skip_ws(r);
  if (depth > 64) return fail(r, "nested too deeply");
  if (r->p >= r->end) return fail(r, "expected a value");
  char c = *r->p;
  if (c == '"') return string(r, NULL);
  if (c == '{' || c == '[') {
    char close = c == '{' ? '}' : ']';
    r->p++;
    skip_ws(r);
    if (r->p < r->end && *r->p == close) {
      r->p++;
      return 0;
    }
    for (;;) {
      if (c == '{') {
        skip_ws(r);
        if (string(r, NULL)) return -1;
        skip_ws(r);
        if (r->p >= r->end || *r->p != ':') return fail(r, "expected ':'");
        r->p++;
      }
      if (skip_value(r, depth + 1)) return -1;
      skip_ws(r);
      if (r->p < r->end && *r->p == ',') {
        r->p++;
        continue;
      }
      if (r->p < r->end && *r->p == close) {
        r->p++;
        return 0;
      }
      return fail(r, "expected ',' or '%c'", close);
    }
  }
  const char *q = r->p; /* a number, true, false, null */
  while (q < r->end && strchr("+-.0123456789eEtruefalsn", *q))
    q++;
  if (q == r->p) return fail(r, "unexpected '%c'", c);
  r->p = q;
  return 0;
}

/* {"role": ..., "content": ...} (other keys skipped) */
static int message(reader *r, wgllm_message *m) {
  char *role = NULL, *content = NULL;
  skip_ws(r);
  if (r->p >= r->end || *r->p != '{') return fail(r, "a message must be an object");
  r->p++;
  skip_ws(r);
  if (r->p < r->end && *r->p == '}') {
    r->p++;
  } else {
    for (;;) {
      char *key;
      skip_ws(r);
      if (string(r, &key)) goto bad;
      skip_ws(r);
      if (r->p >= r->end || *r->p != ':') {
        free(key);
        fail(r, "expected ':'");
        goto bad;
      }
      r->p++;
      skip_ws(r);
      char **slot = !strcmp(key, "role") ? &role : !strcmp(key, "content") ? &content : NULL;
      free(key);
      if (slot) {
        free(*slot);
        *slot = NULL;
        if (string(r, slot)) goto bad;
      } else if (skip_value(r, 1)) {
        goto bad;
      }
      skip_ws(r);
      if (r->p < r->end && *r->p == ',') {
        r->p++;
        continue;
      }
      if (r->p < r->end && *r->p == '}') {
        r->p++;
        break;
      }
      fail(r, "expected ',' or '}'");
      goto bad;
    }
  }
  if (!role || !content) {
    fail(r, "a message needs a \"role\" and a \"content\" string");
    goto bad;
  }
  if (strcmp(role, "system") && strcmp(role, "user") && strcmp(role, "assistant")) {
    fail(r, "role \"%s\" is not system, user or assistant", role);
    goto bad;
  }
  m->role = role;
  m->content = content;
  return 0;
bad:
  free(role);
  free(content);
  return -1;
}

void cli_json_free(wgllm_message *msgs, size_t n) {
  for (size_t i = 0; i < n; i++) {
    free((void *)msgs[i].role);
    free((void *)msgs[i].content);
  }
  free(msgs);
}

int cli_json_load(const char *path, wgllm_message **msgs, size_t *n, char *err, size_t errlen) {
  *msgs = NULL;
  *n = 0;
  err[0] = 0;
  size_t len;
  char *text = cli_read_file(path, &len);
  if (!text) {
    snprintf(err, errlen, "%s", strerror(errno));
    return -1;
  }
  reader r = {text, text, text + len, err, errlen};
  wgllm_message *v = NULL;
  size_t cnt = 0, cap = 0;
  skip_ws(&r);
  if (r.p < r.end && *r.p == '{') { /* {"messages": [...], ...} */
    r.p++;
    int found = 0;
    for (;;) {
      char *key;
      skip_ws(&r);
      if (string(&r, &key)) goto bad;
      skip_ws(&r);
      if (r.p >= r.end || *r.p != ':') {
        free(key);
        fail(&r, "expected ':'");
        goto bad;
      }
      r.p++;
      skip_ws(&r);
      int is_msgs = !strcmp(key, "messages");
      free(key);
      if (is_msgs) {
        found = 1;
        break;
      }
      if (skip_value(&r, 1)) goto bad;
      skip_ws(&r);
      if (r.p < r.end && *r.p == ',') {
        r.p++;
        continue;
      }
      fail(&r, "no \"messages\" array");
      goto bad;
    }
    (void)found;
  }
  if (r.p >= r.end || *r.p != '[') {
    fail(&r, "expected an array of messages");
    goto bad;
  }
  r.p++;
  skip_ws(&r);
  if (r.p < r.end && *r.p == ']') {
    r.p++;
  } else {
    for (;;) {
      if (cnt == cap) {
        cap = cap ? 2 * cap : 16;
        wgllm_message *g = realloc(v, cap * sizeof *g);
        if (!g) {
          fail(&r, "out of memory");
          goto bad;
        }
        v = g;
      }
      if (message(&r, &v[cnt])) goto bad;
      cnt++;
      skip_ws(&r);
      if (r.p < r.end && *r.p == ',') {
        r.p++;
        continue;
      }
      if (r.p < r.end && *r.p == ']') {
        r.p++;
        break;
      }
      fail(&r, "expected ',' or ']'");
      goto bad;
    }
  }
  free(text);
  *msgs = v;
  *n = cnt;
  return 0;
bad:
  cli_json_free(v, cnt);
  free(text);
  return -1;
}
