/* Build-time generator: turns each WGSL template in kernels/ into its variants and writes them as
   one C table (gpu_kernel_sources), plus a header of their names (kernel_ids.h: K_<KERNEL> and
   V_<KERNEL>_<VARIANT> string macros, so an op naming a kernel or variant that does not exist fails to build).
   Each variant's row carries the size of its Params block and its binding list (group 0's bindings in order, one
   letter each: u uniform, r read-only storage, w read_write storage), which the recorder checks every dispatch
   against.
   A variant marked dev=1 (one for benchmarks or tests only) goes to a second table instead, dev_kernel_sources in
   OUT_DEV.c, which only the developer library wgllm_dev compiles (src/dev/dev_kernels.h).
   Variants are listed one a line, or as axes whose every combination is a variant (its name the axis names
   joined, "-" for none):
     //! axis f32: KV_F16=0 | f16: KV_F16=1
     //! axis -: SG=0 | sg: SG=1 requires=subgroups
   and `//! axis storage` is the weight-storage axis every weight-reading kernel shares (f32, f16, q4, q8, bf16
   and ggml's block types, one flag each: WF32, WF16, ..., WQ6_K; WBLK for every block type), declared here once.
   Templates declare variants in their header:
     //! variant f16: T=f16 ACC=f32 requires=shader-f16
   and use {{NAME}} substitutions and line directives  #if NAME / #ifnot NAME / #else / #endif
   (NAME is true when defined and not "0"), #define NAME VALUE (for the rest of the file, every variant) and
   #include "lib/x.wgsli" (a shared snippet, relative to the template, processed the same way). A variant
   requiring shader-f16 gets "enable f16;" prepended, subgroups "enable subgroups;", subgroup-matrix (requires= takes
   a comma list) "enable chromium_experimental_subgroup_matrix;". Any unknown {{NAME}}, unbalanced #if, missing include
   or template without variants fails the build. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAXDEF 32
typedef struct variant {
  char name[64];
  char keys[MAXDEF][64], vals[MAXDEF][128];
  int n;
  unsigned req;
  int dev; /* dev=1: into the developer table */
} variant;

static char *read_all(const char *path) {
  FILE *f = fopen(path, "rb");
  if (!f) {
    fprintf(stderr, "kernelgen: cannot open %s\n", path);
    exit(1);
  }
  fseek(f, 0, SEEK_END);
  long n = ftell(f);
  fseek(f, 0, SEEK_SET);
  char *b = malloc((size_t)n + 1);
  if (fread(b, 1, (size_t)n, f) != (size_t)n) {
    fprintf(stderr, "kernelgen: read %s failed\n", path);
    exit(1);
  }
  b[n] = 0;
  fclose(f);
  return b;
}

static const char *lookup(const variant *v, const char *k, size_t klen) {
  for (int i = 0; i < v->n; i++)
    if (strlen(v->keys[i]) == klen && !strncmp(v->keys[i], k, klen)) return v->vals[i];
  return NULL;
}

static void emit_c_string_char(FILE *o, char c) {
  if (c == '\\' || c == '"') fputc('\\', o);
  fputc(c, o);
}

static int parse_variant(const char *line, variant *v, const char *path, int ln) {
  memset(v, 0, sizeof *v);
  const char *p = line + strlen("//! variant");
  while (*p == ' ')
    p++;
  const char *c = strchr(p, ':');
  if (!c || c == p) {
    fprintf(stderr, "%s:%d: variant line needs 'NAME:'\n", path, ln);
    return 0;
  }
  snprintf(v->name, sizeof v->name, "%.*s", (int)(c - p), p);
  p = c + 1;
  while (*p) {
    while (*p == ' ' || *p == '\t')
      p++;
    if (!*p || *p == '\n') break;
    const char *e = p;
    while (*e && *e != ' ' && *e != '\t' && *e != '\n')
      e++;
    const char *eq = memchr(p, '=', (size_t)(e - p));
    if (!eq) {
      fprintf(stderr, "%s:%d: expected KEY=VALUE in variant line\n", path, ln);
      return 0;
    }
    if ((size_t)(eq - p) == 3 && !strncmp(p, "dev", 3)) {
      v->dev = eq[1] == '1';
    } else if ((size_t)(eq - p) == 8 && !strncmp(p, "requires", 8)) {
      if (strstr(eq + 1, "shader-f16") && strstr(eq + 1, "shader-f16") < e) v->req |= 1;
      if (strstr(eq + 1, "subgroups") && strstr(eq + 1, "subgroups") < e) v->req |= 2;
      if (strstr(eq + 1, "subgroup-matrix") && strstr(eq + 1, "subgroup-matrix") < e) v->req |= 4;
    } else {
      if (v->n == MAXDEF) {
        fprintf(stderr, "%s:%d: too many defines\n", path, ln);
        return 0;
      }
      snprintf(v->keys[v->n], 64, "%.*s", (int)(eq - p), p);
      snprintf(v->vals[v->n], 128, "%.*s", (int)(e - eq - 1), eq + 1);
      v->n++;
    }
    p = e;
  }
  return 1;
}

static int truthy(const variant *v, const char *name) {
  const char *val = lookup(v, name, strlen(name));
  return val && strcmp(val, "0") != 0;
}

/* Emits the template (or an included snippet) for one variant as C string literal lines. v may gain #defines. */
static int emit_lines(FILE *o, const char *src, variant *v, const char *path, int level) {
  int stack_active[32], stack_taken[32], depth = 0, active = 1, ln = 0;
  const char *p = src;
  while (*p) {
    const char *e = strchr(p, '\n');
    size_t len = e ? (size_t)(e - p) : strlen(p);
    ln++;
    char line[4096];
    if (len >= sizeof line) {
      fprintf(stderr, "%s:%d: line too long\n", path, ln);
      return 0;
    }
    memcpy(line, p, len);
    line[len] = 0;
    p += len + (e ? 1 : 0);
    const char *t = line;
    while (*t == ' ')
      t++;
    if (!strncmp(t, "#if", 3)) {
      int neg = !strncmp(t, "#ifnot ", 7);
      const char *name = t + (neg ? 7 : 4);
      if (depth == 32) {
        fprintf(stderr, "%s:%d: #if nesting too deep\n", path, ln);
        return 0;
      }
      int cond = truthy(v, name) ^ neg;
      stack_active[depth] = active;
      stack_taken[depth] = cond;
      depth++;
      active = active && cond;
      continue;
    }
    if (!strncmp(t, "#else", 5)) {
      if (!depth) {
        fprintf(stderr, "%s:%d: #else without #if\n", path, ln);
        return 0;
      }
      active = stack_active[depth - 1] && !stack_taken[depth - 1];
      continue;
    }
    if (!strncmp(t, "#endif", 6)) {
      if (!depth) {
        fprintf(stderr, "%s:%d: #endif without #if\n", path, ln);
        return 0;
      }
      depth--;
      active = stack_active[depth];
      continue;
    }
    if (!active) continue;
    if (!strncmp(t, "#define ", 8)) {
      char k[64], val[128];
      if (sscanf(t + 8, "%63s %127s", k, val) != 2 || v->n == MAXDEF) {
        fprintf(stderr, "%s:%d: bad #define\n", path, ln);
        return 0;
      }
      snprintf(v->keys[v->n], 64, "%s", k);
      snprintf(v->vals[v->n], 128, "%s", val);
      v->n++;
      continue;
    }
    if (!strncmp(t, "#include \"", 10)) {
      const char *q = t + 10, *e = strchr(q, '"');
      if (!e || level > 4) {
        fprintf(stderr, "%s:%d: bad #include\n", path, ln);
        return 0;
      }
      char inc[1024];
      const char *slash = strrchr(path, '/');
      snprintf(inc, sizeof inc, "%.*s%.*s", slash ? (int)(slash - path + 1) : 0, path, (int)(e - q), q);
      char *isrc = read_all(inc);
      int ok = emit_lines(o, isrc, v, inc, level + 1);
      free(isrc);
      if (!ok) return 0;
      continue;
    }
    if (!strncmp(t, "//", 2)) continue; /* comments stay in the template, not in the binary */
    fputs("  \"", o);
    for (const char *q = line; *q; q++) {
      if (q[0] == '{' && q[1] == '{') {
        const char *end = strstr(q, "}}");
        if (!end) {
          fprintf(stderr, "%s:%d: unterminated {{\n", path, ln);
          return 0;
        }
        const char *val = lookup(v, q + 2, (size_t)(end - q - 2));
        if (!val) {
          fprintf(stderr, "%s:%d: variant %s does not define %.*s\n", path, ln, v->name, (int)(end - q - 2), q + 2);
          return 0;
        }
        for (const char *c = val; *c; c++)
          emit_c_string_char(o, *c);
        q = end + 1;
        continue;
      }
      emit_c_string_char(o, *q);
    }
    fputs("\\n\"\n", o);
  }
  if (depth) {
    fprintf(stderr, "%s: unbalanced #if\n", path);
    return 0;
  }
  return 1;
}

/* Bytes of the template's `struct Params { ... };` uniform block when every field is a 4-byte scalar (u32, i32,
   f32), 0 when there is none or it has other types; the recorder checks the C side's block against it. */
static unsigned params_bytes(const char *src) {
  const char *s = strstr(src, "struct Params {");
  if (!s) return 0;
  const char *e = strstr(s, "};");
  if (!e) return 0;
  unsigned n = 0;
  for (const char *c = strchr(s, '{') + 1; c < e; c++) {
    if (*c != ':') continue;
    const char *t = c + 1;
    while (*t == ' ')
      t++;
    if (strncmp(t, "u32", 3) && strncmp(t, "i32", 3) && strncmp(t, "f32", 3)) return 0;
    n++;
  }
  return 4 * n;
}

/* The weight storages a kernel that reads weights is built for (names as op_wtype_variant gives them). */
static const char STORAGE_AXIS[] =
    "f32: WF32=1 | f16: WF16=1 | q4: WQ4=1 | q8: WQ8=1 | bf16: WBF16=1 | q4_1: WQ4_1=1 WBLK=1 WBLK_GEN=1 | "
    "q5_0: WQ5_0=1 WBLK=1 WBLK_GEN=1 | q5_1: WQ5_1=1 WBLK=1 WBLK_GEN=1 | q2k: WQ2_K=1 WBLK=1 WBLK_GEN=1 | "
    "q3k: WQ3_K=1 WBLK=1 WBLK_GEN=1 | q4k: WQ4_K=1 WBLK=1 | q5k: WQ5_K=1 WBLK=1 | q6k: WQ6_K=1 WBLK=1 | "
    "iq4nl: WIQ4_NL=1 WBLK=1 WBLK_GEN=1 | iq4xs: WIQ4_XS=1 WBLK=1 WBLK_GEN=1 | mxfp4: WMXFP4=1 WBLK=1";

#define MAXAXES 8
#define MAXALT 16
typedef struct axis {
  int n;
  char name[MAXALT][32];
  char rest[MAXALT][256];
} axis;

/* "a: K=V ... | b: K=V ..." into an axis; 0 on a malformed line */
static int parse_axis(const char *s, axis *ax, const char *path, int ln) {
  memset(ax, 0, sizeof *ax);
  while (*s) {
    while (*s == ' ')
      s++;
    const char *bar = strchr(s, '|'), *end = bar ? bar : s + strlen(s);
    const char *c = memchr(s, ':', (size_t)(end - s));
    if (!c || ax->n == MAXALT) {
      fprintf(stderr, "%s:%d: axis alternatives are 'NAME: KEY=VALUE ...' separated by '|'\n", path, ln);
      return 0;
    }
    size_t nl = (size_t)(c - s);
    while (nl && s[nl - 1] == ' ')
      nl--;
    snprintf(ax->name[ax->n], 32, "%.*s", (int)nl, s);
    if (!strcmp(ax->name[ax->n], "-")) ax->name[ax->n][0] = 0;
    snprintf(ax->rest[ax->n], 256, "%.*s", (int)(end - c - 1), c + 1);
    ax->n++;
    s = bar ? bar + 1 : end;
  }
  return ax->n > 0;
}

/* The variant's bindings of group 0 in the order of their numbers, one letter each: 'u' a uniform, 'r' read-only
   storage, 'w' read_write storage (out, up to GPU_MAX_BINDINGS + 1 letters); read from its emitted lines (comments
   and disabled lines are gone). 0 when a declaration is malformed, a number repeats or one is missing. */
#define MAX_KERNEL_BINDINGS 16
static int binding_list(const char *emitted, char out[MAX_KERNEL_BINDINGS + 1], const char *path, const char *variant) {
  char kind[MAX_KERNEL_BINDINGS] = {0};
  int n = 0;
  for (const char *b = strstr(emitted, "@binding("); b; b = strstr(b + 1, "@binding(")) {
    int num = atoi(b + 9);
    const char *var = strstr(b, "var<"), *eol = strchr(b, '\n');
    if (num < 0 || num >= MAX_KERNEL_BINDINGS || !var || (eol && var > eol)) {
      fprintf(stderr, "%s (%s): a binding declaration kernelgen cannot read: %.40s\n", path, variant, b);
      return 0;
    }
    char k = !strncmp(var, "var<uniform>", 12)                                              ? 'u'
             : !strncmp(var, "var<storage, read_write>", 24)                                ? 'w'
             : !strncmp(var, "var<storage, read>", 18) || !strncmp(var, "var<storage>", 12) ? 'r'
                                                                                            : 0;
    if (!k || kind[num]) {
      fprintf(stderr, "%s (%s): binding %d is %s\n", path, variant, num, k ? "declared twice" : "of an unknown kind");
      return 0;
    }
    kind[num] = k;
    if (num + 1 > n) n = num + 1;
  }
  for (int i = 0; i < n; i++)
    if (!kind[i]) {
      fprintf(stderr, "%s (%s): bindings 0..%d with %d missing\n", path, variant, n - 1, i);
      return 0;
    }
  memcpy(out, kind, (size_t)n);
  out[n] = 0;
  return 1;
}

/* Emits the variant's source lines and its binding list (bindings) into o. */
static int emit_variant(FILE *o, const char *src, const variant *v0, const char *path,
                        char bindings[MAX_KERNEL_BINDINGS + 1]) {
  variant v = *v0;     /* #defines add to a copy */
  FILE *t = tmpfile(); /* the lines once more, to read the bindings back from */
  if (!t) {
    fprintf(stderr, "kernelgen: no temporary file\n");
    return 0;
  }
  if (v.req & 1) fputs("  \"enable f16;\\n\"\n", t);
  if (v.req & 2) fputs("  \"enable subgroups;\\n\"\n", t);
  if (v.req & 4) fputs("  \"enable chromium_experimental_subgroup_matrix;\\n\"\n", t);
  int ok = emit_lines(t, src, &v, path, 0);
  long n = ftell(t);
  char *text = ok && n >= 0 ? malloc((size_t)n + 1) : NULL;
  rewind(t);
  ok = text && fread(text, 1, (size_t)n, t) == (size_t)n;
  fclose(t);
  if (ok) {
    text[n] = 0;
    fputs(text, o);
    ok = binding_list(text, bindings, path, v.name);
  }
  free(text);
  return ok;
}

int main(int argc, char **argv) {
  if (argc < 5) {
    fprintf(stderr, "usage: kernelgen OUT.c OUT_IDS.h OUT_DEV.c TEMPLATE.wgsl...\n");
    return 2;
  }
  FILE *o = fopen(argv[1], "w"), *ids = fopen(argv[2], "w"), *dev = fopen(argv[3], "w");
  if (!o || !ids || !dev) {
    fprintf(stderr, "kernelgen: cannot write %s, %s or %s\n", argv[1], argv[2], argv[3]);
    return 1;
  }
  fprintf(ids, "/* Generated by tools/kernelgen.c: the names of the kernels in kernels/ and of their variants. */\n"
               "#ifndef WGLLM_KERNEL_IDS_H\n#define WGLLM_KERNEL_IDS_H\n");
  fprintf(o, "/* Generated by tools/kernelgen.c from the templates in kernels/. Do not edit. */\n#include \"gpu.h\"\n");
  fprintf(o, "const gpu_kernel_source gpu_kernel_sources[] = {\n");
  fprintf(
      dev,
      "/* Generated by tools/kernelgen.c from the dev=1 variants of kernels/ (benchmarks and tests only: "
      "wgllm_dev). Do not edit. */\n#include \"dev_kernels.h\"\nconst gpu_kernel_source dev_kernel_sources[] = {\n");
  int total = 0, total_dev = 0;
  for (int a = 4; a < argc; a++) {
    const char *path = argv[a];
    char *src = read_all(path);
    const char *base = strrchr(path, '/');
    base = base ? base + 1 : path;
    char kname[128];
    snprintf(kname, sizeof kname, "%s", base);
    char *dot = strstr(kname, ".wgsl");
    if (dot) *dot = 0;
    char up[128];
    for (size_t i = 0; i <= strlen(kname); i++)
      up[i] = (char)(kname[i] >= 'a' && kname[i] <= 'z' ? kname[i] - 32 : kname[i]);
    fprintf(ids, "#define K_%s \"%s\"\n", up, kname);
    int nvar = 0, ln = 0;
    /* the variant lines: as written, then every combination of the axes */
    static char lines[256][1024];
    int n_lines = 0, n_axes = 0;
    static axis axes[MAXAXES];
    const char *p = src;
    while (*p) {
      const char *e = strchr(p, '\n');
      size_t len = e ? (size_t)(e - p) : strlen(p);
      ln++;
      if (!strncmp(p, "//! variant", 11) && n_lines < 256)
        snprintf(lines[n_lines++], sizeof lines[0], "%.*s", (int)len, p);
      if (!strncmp(p, "//! axis", 8)) {
        char line[1024];
        snprintf(line, sizeof line, "%.*s", (int)(len - 8), p + 8);
        const char *body = line;
        while (*body == ' ')
          body++;
        if (n_axes == MAXAXES || !parse_axis(!strcmp(body, "storage") ? STORAGE_AXIS : body, &axes[n_axes++], path, ln))
          return 1;
      }
      p += len + (e ? 1 : 0);
    }
    if (n_axes) {
      int idx[MAXAXES] = {0};
      for (;;) {
        char name[64] = "", rest[1024] = "";
        for (int a2 = 0; a2 < n_axes; a2++) {
          strncat(name, axes[a2].name[idx[a2]], sizeof name - strlen(name) - 1);
          strncat(rest, " ", sizeof rest - strlen(rest) - 1);
          strncat(rest, axes[a2].rest[idx[a2]], sizeof rest - strlen(rest) - 1);
        }
        if (n_lines < 256) snprintf(lines[n_lines++], sizeof lines[0], "//! variant %s:%s", name, rest);
        int a2 = n_axes - 1;
        while (a2 >= 0 && ++idx[a2] == axes[a2].n)
          idx[a2--] = 0;
        if (a2 < 0) break;
      }
    }
    for (int li = 0; li < n_lines; li++) {
      {
        const char *line = lines[li];
        variant v;
        if (!parse_variant(line, &v, path, li + 1)) return 1;
        FILE *to = v.dev ? dev : o;
        fprintf(to, "{\"%s\", \"%s\",\n", kname, v.name);
        char vup[64];
        for (size_t i = 0; i <= strlen(v.name); i++)
          vup[i] = (char)(v.name[i] >= 'a' && v.name[i] <= 'z' ? v.name[i] - 32 : v.name[i]);
        fprintf(ids, "#define V_%s_%s \"%s\"\n", up, vup, v.name);
        char bindings[MAX_KERNEL_BINDINGS + 1];
        if (!emit_variant(to, src, &v, path, bindings)) return 1;
        fprintf(to, "  , %uu, %uu, \"%s\"},\n", v.req, params_bytes(src), bindings);
        nvar++;
        if (v.dev)
          total_dev++;
        else
          total++;
      }
    }
    if (!nvar) {
      fprintf(stderr, "%s: no '//! variant' or '//! axis' lines\n", path);
      return 1;
    }
    free(src);
  }
  fprintf(o, "};\nconst size_t gpu_kernel_source_count = %d;\n", total);
  fclose(o);
  fprintf(dev,
          "{NULL, NULL, NULL, 0u, 0u}}; /* (so that the table is never empty) */\n"
          "const size_t dev_kernel_source_count = %d;\n",
          total_dev);
  fclose(dev);
  fprintf(ids, "#endif\n");
  fclose(ids);
  return 0;
}
