/* `wgllm chat` (and `wgllm run -cnv`): an interactive chat through the public C API. Messages of any length,
   a line ending in \ goes on on the next; Ctrl-C stops the reply in progress and returns to the prompt, Ctrl-C
   at the prompt leaves; /regen, /save FILE and /load FILE (the conversation as JSON messages, read with cJSON),
   /reset. A model that answers in gpt-oss's harmony format (wgllm_model_tool_format "harmony") is generated with
   its special tokens kept and read through the reply parser: its final answer is printed and kept in the
   conversation, its analysis (reasoning) goes to stderr with -v and is not kept (gpt-oss's template drops the
   analysis of earlier turns), and no marker (<|channel|>, <|message|>, ...) is printed or kept. */
#include "cli.h"
#include "json_shape.h"
#include "wgllm.h"
#include <cjson/cJSON.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

typedef struct history {
  wgllm_message *m; /* role and content malloc'd */
  size_t n, cap;
  size_t n_fixed; /* the system message of -sys, kept by /reset */
} history;

static int push(history *h, const char *role, const char *content) {
  if (h->n == h->cap) {
    size_t cap = h->cap ? 2 * h->cap : 16;
    wgllm_message *g = realloc(h->m, cap * sizeof *g);
    if (!g) return -1;
    h->m = g;
    h->cap = cap;
  }
  char *r = strdup(role), *c = strdup(content);
  if (!r || !c) {
    free(r);
    free(c);
    return -1;
  }
  h->m[h->n++] = (wgllm_message){r, c};
  return 0;
}

static void pop(history *h) {
  h->n--;
  free((void *)h->m[h->n].role);
  free((void *)h->m[h->n].content);
}

typedef struct chat {
  cli_gen *g;
  wgllm_model *m;
  wgllm_session *s;
  uint32_t ctx;
  history h;
  uint32_t base_seed, turn; /* reply k samples with seed base + k: /regen gives another reply */
  int harmony;              /* the model's replies are harmony messages: parsed, not printed as generated */
} chat;

/* A harmony reply on its way: the parser, the final answer so far (what the history keeps) and what was shown */
typedef struct parsed_reply {
  wgllm_reply_parser *p;
  char *content;
  size_t len, cap;
  size_t reasoning_len;
  int verbose;   /* -v: the reasoning goes to stderr as it arrives */
  int in_reason; /* stderr is inside the "[reasoning]" block */
  int oom;
} parsed_reply;

static int stream_out(const char *text, size_t len, void *user);

/* One delta of the parser (JSON, taken): its content printed and kept, its reasoning on stderr with -v. A call's
   events do not come: chat offers no tools, so a message to a function is content. */
static void parsed_delta(parsed_reply *r, char *json) {
  cJSON *d = json ? cJSON_Parse(json) : NULL;
  if (json && !d) r->oom = 1;
  wgllm_free(json);
  const char *reason = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(d, "reasoning_content"));
  const char *content = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(d, "content"));
  if (reason) {
    size_t n = strlen(reason);
    r->reasoning_len += n;
    if (r->verbose) {
      if (!r->in_reason) fputs("[reasoning] ", stderr);
      r->in_reason = 1;
      fwrite(reason, 1, n, stderr);
      fflush(stderr);
    }
  }
  if (content) {
    size_t n = strlen(content);
    if (r->in_reason) fputc('\n', stderr); /* the reasoning's line ends before the answer */
    r->in_reason = 0;
    if (r->len + n + 1 > r->cap) {
      size_t cap = (r->len + n + 1) * 2;
      char *g = realloc(r->content, cap);
      if (!g) {
        r->oom = 1;
        cJSON_Delete(d);
        return;
      }
      r->content = g;
      r->cap = cap;
    }
    memcpy(r->content + r->len, content, n + 1);
    r->len += n;
    stream_out(content, n, NULL);
  }
  cJSON_Delete(d);
}

/* on_text of a harmony reply: the generated text (special tokens kept) through the parser */
static int stream_parsed(const char *text, size_t len, void *user) {
  parsed_reply *r = user;
  char *json = NULL;
  if (wgllm_reply_parser_push(r->p, text, len, &json)) r->oom = 1;
  parsed_delta(r, json);
  return cli_interrupted != 0 || r->oom; /* Ctrl-C: the reply stops here */
}

static int stream_out(const char *text, size_t len, void *user) {
  (void)user; /* NULL from parsed_delta */
  fwrite(text, 1, len, stdout);
  fflush(stdout);
  return cli_interrupted != 0; /* Ctrl-C: the reply stops here */
}

/* The tokens of the conversation's prompt as wgllm_chat renders it (special-token text in content parsed), or 0
   when it cannot be rendered (wgllm_chat then says why). */
static size_t prompt_tokens(chat *c) {
  cJSON *o = cJSON_CreateObject(), *a = cJSON_AddArrayToObject(o, "messages");
  for (size_t i = 0; a && i < c->h.n; i++) {
    cJSON *m = cJSON_CreateObject();
    cJSON_AddStringToObject(m, "role", c->h.m[i].role);
    cJSON_AddStringToObject(m, "content", c->h.m[i].content);
    cJSON_AddItemToArray(a, m);
  }
  cJSON_AddBoolToObject(o, "parse_special", 1);
  char *json = o ? cJSON_PrintUnformatted(o) : NULL;
  cJSON_Delete(o);
  int32_t *ids = NULL;
  size_t n = 0;
  if (!json || wgllm_chat_prompt(c->m, json, strlen(json), &ids, &n, NULL)) n = 0;
  wgllm_free(ids);
  cJSON_free(json);
  return n;
}

/* Context shift, as llama.cpp's chat keeps going past its context: while the conversation leaves less than a
   quarter of the context (or -n tokens, if fewer) for the reply, its oldest turn after the fixed system message goes
   (a user message and the replies after it); the last user message always stays. Says what went on stderr. */
static void fit_context(chat *c) {
  if (c->g->no_context_shift) return;
  uint32_t room = c->ctx / 4;
  if (c->g->gp.max_tokens < room) room = c->g->gp.max_tokens;
  size_t dropped = 0, n;
  history *h = &c->h;
  while ((n = prompt_tokens(c)) && n + room > c->ctx) {
    size_t first = h->n_fixed, end = first + 1;
    while (end < h->n && strcmp(h->m[end].role, "user"))
      end++;
    if (end >= h->n) break; /* the last user message alone: wgllm_chat says it is too long */
    for (size_t i = first; i < end; i++) {
      free((void *)h->m[i].role);
      free((void *)h->m[i].content);
    }
    memmove(h->m + first, h->m + end, (h->n - end) * sizeof *h->m);
    h->n -= end - first;
    dropped += end - first;
  }
  if (dropped)
    fprintf(stderr,
            "[context: the %zu oldest message%s dropped to fit the context of %u tokens (--no-context-shift "
            "keeps them)]\n",
            dropped, dropped == 1 ? "" : "s", c->ctx);
}

/* Generates the assistant's reply to the history and appends it (an interrupted reply as far as it got; a harmony
   reply's final answer alone). Returns 0, 1 for an error the chat survives (the history is as it was), -1 for one it
   does not. */
static int reply(chat *c) {
  wgllm_generate_params gp = c->g->gp;
  gp.seed = c->base_seed + c->turn++;
  if (gp.seed == WGLLM_SEED_RANDOM) gp.seed = 0; /* a seed still, not the API's "random" */
  gp.on_text = stream_out;
  parsed_reply pr = {.verbose = c->g->c.verbose};
  if (c->harmony) { /* the channels' markers are special tokens: kept in the text for the parser */
    wgllm_reply_options o = {0};
    if (wgllm_reply_parser_create(c->m, &o, &pr.p)) {
      fprintf(stderr, "wgllm chat: the reply parser: %s\n", wgllm_last_error());
      return -1;
    }
    gp.special = 1;
    gp.on_text = stream_parsed;
    gp.user = &pr;
  }
  fit_context(c);
  if (isatty(2) && c->h.n) { /* the new message's size, for the progress line of a long one */
    const char *last = c->h.m[c->h.n - 1].content;
    size_t n = 0;
    wgllm_tokenize(c->m, last, strlen(last), 0, NULL, 0, &n);
    cli_prefill_begin((uint32_t)n);
  }
  cli_interrupted = 0;
  cli_busy = 1; /* Ctrl-C stops the reply (and not the program) */
  char *text = NULL;
  wgllm_generate_stats st;
  wgllm_status r = wgllm_chat(c->s, c->h.m, c->h.n, &gp, &text, &st);
  cli_busy = 0;
  int interrupted = cli_interrupted;
  cli_interrupted = 0;
  if (pr.p) { /* what the parser held back (a marker's possible start, whitespace) */
    char *json = NULL;
    if (!r && wgllm_reply_parser_finish(pr.p, &json)) pr.oom = 1;
    parsed_delta(&pr, json);
    if (pr.in_reason) fputc('\n', stderr);
    wgllm_reply_parser_free(pr.p);
  }
  fputc('\n', stdout);
  fflush(stdout);
  if (r || pr.oom) {
    if (r)
      fprintf(stderr, "wgllm chat: %s (%s)%s\n", wgllm_session_error(c->s), wgllm_status_name(r),
              r == WGLLM_ERR_INVALID_ARG ? "; /reset or /load to go on" : "");
    else
      fprintf(stderr, "wgllm chat: out of memory reading the reply\n");
    wgllm_free(text);
    free(pr.content);
    return r == WGLLM_ERR_INVALID_ARG ? 1 : -1;
  }
  if (interrupted && st.stop == WGLLM_STOP_CALLBACK) fprintf(stderr, "[interrupted]\n");
  if (c->harmony && !pr.len && pr.reasoning_len && !pr.verbose)
    fprintf(stderr, "[the reply is %zu bytes of reasoning and no answer (-v shows the reasoning)]\n", pr.reasoning_len);
  if (c->g->stats) cli_print_stats(&st, NULL);
  int bad = push(&c->h, "assistant", c->harmony ? (pr.content ? pr.content : "") : text ? text : "");
  wgllm_free(text);
  free(pr.content);
  if (bad) {
    fprintf(stderr, "wgllm chat: out of memory\n");
    return -1;
  }
  return 0;
}

/* One message from stdin: lines ending in \ go on (joined by newlines). NULL at the end of input. */
static char *read_message(void) {
  char *msg = NULL, *line = NULL;
  size_t len = 0, cap = 0;
  int tty = isatty(0);
  fputs("> ", stdout);
  fflush(stdout);
  for (;;) {
    ssize_t got = getline(&line, &cap, stdin);
    if (got < 0) break;
    while (got > 0 && (line[got - 1] == '\n' || line[got - 1] == '\r'))
      line[--got] = 0;
    int more = got > 0 && line[got - 1] == '\\';
    if (more) line[--got] = 0;
    char *g = realloc(msg, len + (size_t)got + 2);
    if (!g) {
      free(msg);
      msg = NULL;
      break;
    }
    msg = g;
    if (len) msg[len++] = '\n';
    memcpy(msg + len, line, (size_t)got + 1);
    len += (size_t)got;
    if (!more) break;
    if (tty) {
      fputs(". ", stdout);
      fflush(stdout);
    }
  }
  free(line);
  return msg;
}

static void help(void) {
  fprintf(stderr, "  /regen       another reply to the last message\n"
                  "  /save FILE   write the conversation as JSON messages\n"
                  "  /load FILE   replace the conversation with the messages of FILE\n"
                  "  /reset       forget the conversation (the system message stays)\n"
                  "  /quit        leave (also /exit, end of input, Ctrl-C at the prompt)\n"
                  "  a line ending in \\ goes on on the next; Ctrl-C stops a reply; //text sends /text\n");
}

/* /regen: the last reply again with the next seed (or a first one, after /load ending in a user message) */
static int regen(chat *c) {
  history *h = &c->h;
  if (h->n > h->n_fixed && !strcmp(h->m[h->n - 1].role, "assistant")) {
    pop(h);
  }
  if (h->n == h->n_fixed || strcmp(h->m[h->n - 1].role, "user")) {
    fprintf(stderr, "wgllm chat: nothing to regenerate\n");
    return 0;
  }
  return reply(c) < 0 ? -1 : 0;
}

/* ---------- the conversation as JSON: [{"role": "user", "content": "..."}, ...] (the shape transformers'
   apply_chat_template and OpenAI's API take) ---------- */
static int put_json_string(FILE *f, const char *s) {
  cJSON *item = cJSON_CreateString(s);
  char *text = item ? cJSON_PrintUnformatted(item) : NULL; /* quoted and escaped; UTF-8 as it is */
  cJSON_Delete(item);
  if (!text) {
    errno = ENOMEM;
    return -1;
  }
  fputs(text, f);
  cJSON_free(text);
  return 0;
}

/* One message a line; returns 0, or -1 with errno set. */
static int history_save(const char *path, const wgllm_message *msgs, size_t n) {
  cli_out o;
  FILE *f = cli_out_open(&o, path); /* PATH.tmp.PID, renamed onto PATH once whole */
  if (!f) return -1;
  int bad = 0;
  fputs("[", f);
  for (size_t i = 0; i < n && !bad; i++) {
    fputs(i ? ",\n  {\"role\": " : "\n  {\"role\": ", f);
    bad = put_json_string(f, msgs[i].role);
    fputs(", \"content\": ", f);
    if (!bad) bad = put_json_string(f, msgs[i].content);
    fputs("}", f);
  }
  fputs(n ? "\n]\n" : "]\n", f);
  return cli_out_close(&o, bad);
}

static void history_free(wgllm_message *msgs, size_t n) {
  for (size_t i = 0; i < n; i++) {
    free((void *)msgs[i].role);
    free((void *)msgs[i].content);
  }
  free(msgs);
}

/* JSON values a /load file may hold (checked before cJSON builds them): some 300,000 messages. */
#define CLI_HISTORY_MAX_VALUES 1000000u

/* Reads an array of messages as history_save writes it, or an object with a "messages" array (other keys are ignored;
   in a message too). Roles must be system, user or assistant, strings valid UTF-8. *msgs and each role and content are
   malloc'd (history_free). Returns 0, or -1 with the reason in err. */
static int history_load(const char *path, wgllm_message **msgs, size_t *n, char *err, size_t errlen) {
  *msgs = NULL;
  *n = 0;
  size_t len;
  char *text = cli_read_file(path, &len);
  if (!text) {
    snprintf(err, errlen, "%s", strerror(errno));
    return -1;
  }
  size_t first = strspn(text, " \t\r\n");
  if (text[first] != '[' && text[first] != '{') {
    snprintf(err, errlen, "byte %zu: expected an array of messages", first);
    free(text);
    return -1;
  }
  char why[128]; /* the pre-check of every JSON text (src/base/json_shape.h) */
  if (json_shape_check(text, len, CLI_HISTORY_MAX_VALUES, JSON_FILE_MAX_DEPTH, why, sizeof why)) {
    snprintf(err, errlen, "%s", why);
    free(text);
    return -1;
  }
  long nul = json_nul_escape_at(text, len);
  if (nul >= 0) { /* refused, not cut there */
    snprintf(err, errlen, "byte %ld: a string holds \\u0000 (a NUL byte), which a chat message here cannot carry", nul);
    free(text);
    return -1;
  }
  const char *end = NULL;
  cJSON *root = cJSON_ParseWithLengthOpts(text, len, &end, 0);
  if (!root) {
    snprintf(err, errlen, "byte %ld: not valid JSON", end ? (long)(end - text) : 0L);
    free(text);
    return -1;
  }
  free(text);
  const cJSON *arr = cJSON_IsObject(root) ? cJSON_GetObjectItemCaseSensitive(root, "messages") : root;
  wgllm_message *v = NULL;
  size_t cnt = 0;
  if (!arr) {
    snprintf(err, errlen, "no \"messages\" array");
    goto bad;
  }
  if (!cJSON_IsArray(arr)) {
    snprintf(err, errlen, "expected an array of messages");
    goto bad;
  }
  size_t total = (size_t)cJSON_GetArraySize(arr);
  v = calloc(total ? total : 1, sizeof *v);
  if (!v) {
    snprintf(err, errlen, "out of memory");
    goto bad;
  }
  const cJSON *m;
  cJSON_ArrayForEach(m, arr) {
    if (!cJSON_IsObject(m)) {
      snprintf(err, errlen, "message %zu: a message must be an object", cnt + 1);
      goto bad;
    }
    const char *role = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(m, "role"));
    const char *content = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(m, "content"));
    if (!role || !content) {
      snprintf(err, errlen, "message %zu: a message needs a \"role\" and a \"content\" string", cnt + 1);
      goto bad;
    }
    if (strcmp(role, "system") && strcmp(role, "user") && strcmp(role, "assistant")) {
      snprintf(err, errlen, "message %zu: role \"%.64s\" is not system, user or assistant", cnt + 1, role);
      goto bad;
    }
    if (cli_utf8_invalid_at(content) >= 0) {
      snprintf(err, errlen, "message %zu: the content is not valid UTF-8", cnt + 1);
      goto bad;
    }
    v[cnt].role = strdup(role);
    v[cnt].content = strdup(content);
    cnt++;
    if (!v[cnt - 1].role || !v[cnt - 1].content) {
      snprintf(err, errlen, "out of memory");
      goto bad;
    }
  }
  cJSON_Delete(root);
  *msgs = v;
  *n = cnt;
  return 0;
bad:
  history_free(v, cnt);
  cJSON_Delete(root);
  return -1;
}

static int load(chat *c, const char *path) {
  wgllm_message *msgs;
  size_t n;
  char err[512];
  if (history_load(path, &msgs, &n, err, sizeof err)) {
    fprintf(stderr, "wgllm chat: /load %s: %s\n", path, err);
    return 0;
  }
  while (c->h.n)
    pop(&c->h);
  free(c->h.m);
  c->h.m = msgs;
  c->h.n = c->h.cap = n;
  c->h.n_fixed = n && !strcmp(msgs[0].role, "system");
  wgllm_session_reset(c->s);
  fprintf(stderr, "wgllm chat: loaded %zu messages from %s\n", n, path);
  return 0;
}

/* A line starting with '/' that names a command: runs it and returns 1 (2: leave, -1: a fatal error); 0 when
   the line is a message. */
static int command(chat *c, char *line) {
  if (line[0] != '/' || line[1] == '/') return 0;
  char *arg = line + strcspn(line, " \t");
  if (*arg) *arg++ = 0;
  arg += strspn(arg, " \t");
  const char *cmd = line + 1;
  if (!strcmp(cmd, "quit") || !strcmp(cmd, "exit")) return 2;
  if (!strcmp(cmd, "help")) {
    help();
  } else if (!strcmp(cmd, "reset") || !strcmp(cmd, "clear")) {
    while (c->h.n > c->h.n_fixed)
      pop(&c->h);
    wgllm_session_reset(c->s);
  } else if (!strcmp(cmd, "regen")) {
    if (regen(c)) return -1;
  } else if (!strcmp(cmd, "save") || !strcmp(cmd, "load")) {
    if (!*arg)
      fprintf(stderr, "wgllm chat: /%s needs a file name\n", cmd);
    else if (cmd[0] == 'l')
      load(c, arg);
    else if (history_save(arg, c->h.m, c->h.n))
      fprintf(stderr, "wgllm chat: /save %s: %s (the file is left as it was)\n", arg, strerror(errno));
    else
      fprintf(stderr, "wgllm chat: saved %zu messages to %s\n", c->h.n, arg);
  } else {
    fprintf(stderr, "wgllm chat: unknown command '/%s' (/help lists them; //text sends /text)\n", cmd);
  }
  return 1;
}

/* Sends a user message and prints the reply; returns -1 on a fatal error. */
static int send_message(chat *c, const char *text) {
  if (cli_utf8_invalid_at(text) >= 0) {
    fprintf(stderr, "wgllm chat: the message is not valid UTF-8 (byte %ld); not sent\n", cli_utf8_invalid_at(text));
    return 0;
  }
  if (push(&c->h, "user", text)) {
    fprintf(stderr, "wgllm chat: out of memory\n");
    return -1;
  }
  int r = reply(c);
  if (r) pop(&c->h); /* the message that could not be answered */
  return r < 0 ? -1 : 0;
}

int cli_chat_main(cli_gen *g) {
  cli_catch_sigint();
  chat c = {0};
  c.g = g;
  uint32_t ctx;
  int rc = cli_open(&g->c, 0, &c.m, &c.s, &ctx, 0);
  if (!rc && (rc = cli_gen_open_draft(g, c.m))) {
    wgllm_session_free(c.s);
    wgllm_model_free(c.m);
  }
  cli_busy = 0; /* from here Ctrl-C stops a reply in progress, or leaves */
  if (rc) return rc;
  c.ctx = ctx;
  c.harmony = !strcmp(wgllm_model_tool_format(c.m), "harmony");
  g->gp.context_shift = cli_context_shift(g); /* then -n may go past the context */
  g->gp.max_tokens = g->n_predict < 0 || (g->n_predict > ctx && !g->gp.context_shift) ? ctx : (uint32_t)g->n_predict;
  c.base_seed = g->gp.seed;
  if (g->c.verbose) cli_verbose_sampling(g);
  wgllm_model_info info;
  wgllm_model_get_info(c.m, &info);
  fprintf(stderr, "wgllm chat: %s on %s, template %s%s, context %u. /help lists the commands; Ctrl-C stops a reply.\n",
          info.architecture, info.adapter, info.chat_template,
          c.harmony ? " (harmony replies: the answer shown and kept; -v shows the reasoning)" : "", ctx);
  int status = 0;
  if (g->system && push(&c.h, "system", g->system)) status = -1;
  c.h.n_fixed = c.h.n;
  if (!status && g->prompt) {
    fputs("> ", stdout);
    fputs(g->prompt, stdout);
    fputc('\n', stdout);
    status = send_message(&c, g->prompt);
    if (g->single_turn) goto done;
  }
  while (!status) {
    char *line = read_message();
    if (!line) break;
    int k = line[0] ? command(&c, line) : 1;
    if (k == 0) status = send_message(&c, line[0] == '/' ? line + 1 : line);
    free(line);
    if (k == 2) break;
    if (k < 0) status = -1;
    if (g->single_turn && k == 0) break;
  }
done:
  while (c.h.n)
    pop(&c.h);
  free(c.h.m);
  wgllm_session_free(c.s);
  wgllm_model_free(c.m);
  return status ? 1 : 0;
}

int cli_chat(int argc, char **argv) {
  cli_gen g;
  int rc = cli_gen_parse(CLI_CMD_CHAT, argc, argv, &g);
  if (!rc) rc = cli_chat_main(&g);
  cli_gen_free(&g);
  return rc < 0 ? 0 : rc;
}
