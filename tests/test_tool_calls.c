/* Tool calls in replies (src/chat/tool_calls.h): for every format, replies with hand-written results (plain text,
   one call, two calls, text around calls, nested arguments whose strings hold braces, quotes and unicode,
   malformed calls and unknown names kept as content, <think> blocks closed, left open at the end, absent, and
   opened by the prompt), each also streamed in every split into two pieces and in 1-byte pieces, the deltas
   concatenated equal to the whole parse (each call's arguments its fragments joined); calls committed at their
   header (cut off, broken, followed by wrapper text that does not match) and calls naming their function after the
   arguments; the call events of replies pushed a token at a time (the start, then fragments as they come, a UTF-8
   character held whole); harmony (gpt-oss): channels into reasoning and content whatever split_reasoning says,
   calls with the recipient after or before the channel, with and without <|constrain|>, arguments as a JSON string,
   a reply cut in a header or in the arguments, no markers left in content; the format detection from the fixtures'
   templates and the named
   templates; the call prefixes for tool_choice, completed and parsed back; Gemma's Python call lines; and the
   round trip: the assistant turn a model's own template (the fixtures of tests/data/chat) writes for a message with
   tool_calls, parsed, gives back the message's names and arguments, and so do the named templates. */
#include "chat.h"
#include "harness.h"
#include "tokenizer_load.h"
#include "tool_calls.h"
#include <cjson/cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* ---------- accumulating deltas ---------- */
typedef struct acc {
  char *content, *reasoning;
  size_t cn, rn;
  chat_tool_call calls[16];
  size_t n_calls;
  size_t fragments; /* call events received */
  int bad;          /* a push or finish failed, more than 16 calls, or an event out of order */
} acc;

static void app(char **s, size_t *n, const char *t, size_t k) {
  *s = realloc(*s, *n + k + 1);
  memcpy(*s + *n, t, k);
  *n += k;
  (*s)[*n] = 0;
}

/* a call's first event (id and name) starts it, later ones add to its arguments; an event of a call not started, a
   second start or a call started out of order is bad */
static void acc_add(acc *a, const chat_reply_delta *d) {
  app(&a->content, &a->cn, d->content, d->content_len);
  app(&a->reasoning, &a->rn, d->reasoning, d->reasoning_len);
  for (size_t i = 0; i < d->n_tool_calls; i++) {
    const chat_tool_call_delta *c = &d->tool_calls[i];
    if (c->id) {
      if (a->n_calls == 16 || c->index != (int)a->n_calls || !c->name) {
        a->bad = 1;
        return;
      }
      a->calls[a->n_calls++] = (chat_tool_call){c->index, strdup(c->id), strdup(c->name), strdup(c->arguments)};
      a->fragments++;
    } else if (c->index < 0 || (size_t)c->index >= a->n_calls || c->name || !c->arguments_len) {
      a->bad = 1;
      return;
    } else {
      chat_tool_call *t = &a->calls[c->index];
      size_t have = strlen(t->arguments);
      app(&t->arguments, &have, c->arguments, c->arguments_len);
      a->fragments++;
    }
  }
}

static void acc_free(acc *a) {
  free(a->content);
  free(a->reasoning);
  for (size_t i = 0; i < a->n_calls; i++) {
    free(a->calls[i].id);
    free(a->calls[i].name);
    free(a->calls[i].arguments);
  }
  memset(a, 0, sizeof *a);
}

/* text pushed as pieces ending at cuts[0] < cuts[1] < ... < len */
static void stream(chat_tool_format f, const chat_reply_opts *o, const char *text, const size_t *cuts, size_t ncuts,
                   acc *a) {
  memset(a, 0, sizeof *a);
  app(&a->content, &a->cn, "", 0);
  app(&a->reasoning, &a->rn, "", 0);
  chat_reply_stream *st = chat_reply_stream_create(f, o);
  chat_reply_delta d;
  size_t at = 0;
  for (size_t i = 0; i < ncuts && st; i++) {
    if (chat_reply_stream_push(st, text + at, cuts[i] - at, &d)) a->bad = 1;
    acc_add(a, &d);
    at = cuts[i];
  }
  if (!st || chat_reply_stream_finish(st, &d))
    a->bad = 1;
  else
    acc_add(a, &d);
  chat_reply_stream_free(st);
}

static int same_calls(const chat_tool_call *x, size_t nx, const chat_tool_call *y, size_t ny) {
  if (nx != ny) return 0;
  for (size_t i = 0; i < nx; i++)
    if (x[i].index != y[i].index || strcmp(x[i].name, y[i].name) || strcmp(x[i].arguments, y[i].arguments)) return 0;
  return 1;
}

/* "call_" + 24 letters and digits (Mistral's: 9 letters and digits, what its templates take), unique, indices 0, 1,
   ... */
static int ids_ok(chat_tool_format f, const chat_tool_call *c, size_t n) {
  size_t head = f == CHAT_TOOLS_MISTRAL ? 0 : 5, len = head + (f == CHAT_TOOLS_MISTRAL ? 9 : 24);
  for (size_t i = 0; i < n; i++) {
    if (c[i].index != (int)i || strlen(c[i].id) != len || strncmp(c[i].id, "call_", head)) return 0;
    for (size_t k = head; k < len; k++) {
      char ch = c[i].id[k];
      if (!((ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || (ch >= '0' && ch <= '9'))) return 0;
    }
    for (size_t j = 0; j < i; j++)
      if (!strcmp(c[i].id, c[j].id)) return 0;
  }
  return 1;
}

/* every split into two pieces and 1-byte pieces give the whole parse */
static void check_streaming(const char *what, chat_tool_format f, const chat_reply_opts *o, const char *text,
                            const chat_reply *whole) {
  size_t n = strlen(text);
  size_t *cuts = malloc((n + 2) * sizeof *cuts);
  int fails = 0;
  for (size_t k = 0; k <= n + 1 && fails < 3; k++) { /* k = n + 1: 1-byte pieces */
    size_t nc = 0;
    if (k <= n) {
      cuts[nc++] = k;
      cuts[nc++] = n;
    } else
      for (size_t i = 1; i <= n; i++)
        cuts[nc++] = i;
    acc a;
    stream(f, o, text, cuts, nc, &a);
    int ok = !a.bad && a.cn == whole->content_len && !memcmp(a.content, whole->content, a.cn) &&
             a.rn == whole->reasoning_len && !memcmp(a.reasoning, whole->reasoning, a.rn) &&
             same_calls(a.calls, a.n_calls, whole->tool_calls, whole->n_tool_calls) && ids_ok(f, a.calls, a.n_calls);
    CHECK(ok, "%s: streamed %s: content [%s] reasoning [%s] %zu calls%s%s, whole: [%s] [%s] %zu calls", what,
          k <= n ? "in two pieces" : "byte by byte", a.content, a.reasoning, a.n_calls, a.n_calls ? " first " : "",
          a.n_calls ? a.calls[0].arguments : "", whole->content, whole->reasoning, whole->n_tool_calls);
    if (!ok) {
      fails++;
      if (k <= n) fprintf(stderr, "  (split at %zu of %zu)\n", k, n);
    }
    acc_free(&a);
  }
  free(cuts);
}

/* ---------- hand-written replies ---------- */
enum { SPLIT = 1, OPEN = 2, KNOWN = 4 }; /* split_reasoning, thinking_open, only get_weather and get_time */

typedef struct pcase {
  const char *name;
  chat_tool_format f;
  int opts;
  const char *text, *content, *reasoning;
  const char *calls[3][2]; /* {name, arguments} */
} pcase;

#define L3 CHAT_TOOLS_LLAMA3_JSON
#define HE CHAT_TOOLS_HERMES
#define MI CHAT_TOOLS_MISTRAL
#define GE CHAT_TOOLS_GEMMA
#define G4 CHAT_TOOLS_GEMMA4
#define HA CHAT_TOOLS_HARMONY
#define NO CHAT_TOOLS_NONE
#define WEATHER "{\"city\":\"Paris\",\"unit\":\"celsius\"}"
/* nested arguments: strings with braces, brackets, quotes, escapes and unicode; numbers; literals */
#define NESTED_IN                                                                                                      \
  "{\"city\": \"Pa{r}is [x] \\\"q\\\" \\\\ \\u00e9 \xe6\x97\xa5\xe6\x9c\xac </tool_call> ```\", \"opts\": {\"deep\": " \
  "[1, {\"k\": \"}\"}], \"n\": -1.5e3, \"ok\": true, \"none\": null}}"
#define NESTED_OUT                                                                                                     \
  "{\"city\":\"Pa{r}is [x] \\\"q\\\" \\\\ \\u00e9 \xe6\x97\xa5\xe6\x9c\xac </tool_call> ```\",\"opts\":{\"deep\":"     \
  "[1,{\"k\":\"}\"}],\"n\":-1.5e3,\"ok\":true,\"none\":null}}"

static const pcase pcases[] = {
    /* Llama 3.x: the whole reply is the call (or calls), maybe after <|python_tag|> */
    {"l3_plain", L3, 0, "The capital of France is Paris.", "The capital of France is Paris.", "", {{0}}},
    {"l3_one",
     L3,
     0,
     "{\"name\": \"get_weather\", \"parameters\": {\"city\": \"Paris\", \"unit\": \"celsius\"}}",
     "",
     "",
     {{"get_weather", WEATHER}}},
    {"l3_python_tag",
     L3,
     0,
     "<|python_tag|>{\"name\": \"get_time\", \"parameters\": {}}",
     "",
     "",
     {{"get_time", "{}"}}},
    {"l3_arguments_key", L3, 0, "  \n{\"name\": \"get_time\", \"arguments\": {}}\n", "", "", {{"get_time", "{}"}}},
    {"l3_two_semicolon",
     L3,
     0,
     "{\"name\": \"get_weather\", \"parameters\": {\"city\": \"Paris\", \"unit\": \"celsius\"}}; {\"name\": "
     "\"get_time\", \"parameters\": {}}",
     "",
     "",
     {{"get_weather", WEATHER}, {"get_time", "{}"}}},
    {"l3_two_newline",
     L3,
     0,
     "{\"name\": \"get_time\", \"parameters\": {}}\n{\"name\": \"get_time\", \"parameters\": {}}",
     "",
     "",
     {{"get_time", "{}"}, {"get_time", "{}"}}},
    {"l3_text_before",
     L3,
     0,
     "Sure: {\"name\": \"get_time\", \"parameters\": {}}",
     "Sure: {\"name\": \"get_time\", \"parameters\": {}}",
     "",
     {{0}}},
    {"l3_text_after",
     L3,
     0,
     "{\"name\": \"get_time\", \"parameters\": {}}\n\nDone.",
     "Done.",
     "",
     {{"get_time", "{}"}}},
    {"l3_nested",
     L3,
     0,
     "{\"name\": \"get_weather\", \"parameters\": " NESTED_IN "}",
     "",
     "",
     {{"get_weather", NESTED_OUT}}},
    {"l3_string_arguments",
     L3,
     0,
     "{\"name\": \"get_weather\", \"parameters\": \"{\\\"city\\\": \\\"Paris\\\", \\\"unit\\\": \\\"celsius\\\"}\"}",
     "",
     "",
     {{"get_weather", WEATHER}}},
    /* committed at "parameters": { (the name came first), so the call object left open at the end is still a call
       (it was content when calls were taken only whole) */
    {"l3_unterminated",
     L3,
     0,
     "{\"name\": \"get_weather\", \"parameters\": {\"city\": \"Paris\"}",
     "",
     "",
     {{"get_weather", "{\"city\":\"Paris\"}"}}},
    /* cut off inside the arguments (max_tokens): the arguments are what was written */
    {"l3_cut_in_arguments",
     L3,
     0,
     "{\"name\": \"get_weather\", \"parameters\": {\"city\": \"Pa",
     "",
     "",
     {{"get_weather", "{\"city\":\"Pa"}}},
    /* the name after the arguments: taken whole at the object's end */
    {"l3_name_after_arguments",
     L3,
     0,
     "{\"parameters\": {\"city\": \"Paris\", \"unit\": \"celsius\"}, \"name\": \"get_weather\"}",
     "",
     "",
     {{"get_weather", WEATHER}}},
    /* the first "name" is not a string: no commit at the arguments, and the whole object is not a call */
    {"l3_name_not_string",
     L3,
     0,
     "{\"name\": 5, \"name\": \"get_time\", \"parameters\": {}}",
     "{\"name\": 5, \"name\": \"get_time\", \"parameters\": {}}",
     "",
     {{0}}},
    {"l3_name_after_arguments_cut",
     L3,
     0,
     "{\"parameters\": {\"city\": \"Paris\"}, \"name\": \"get_weather\"",
     "{\"parameters\": {\"city\": \"Paris\"}, \"name\": \"get_weather\"",
     "",
     {{0}}},
    {"l3_bad_json",
     L3,
     0,
     "{\"name\": get_weather, \"parameters\": {}}",
     "{\"name\": get_weather, \"parameters\": {}}",
     "",
     {{0}}},
    {"l3_not_a_call", L3, 0, "{\"answer\": 42}", "{\"answer\": 42}", "", {{0}}},
    {"l3_arguments_not_object",
     L3,
     0,
     "{\"name\": \"get_time\", \"parameters\": [1]}",
     "{\"name\": \"get_time\", \"parameters\": [1]}",
     "",
     {{0}}},
    {"l3_unknown_name",
     L3,
     KNOWN,
     "{\"name\": \"rm_rf\", \"parameters\": {}}",
     "{\"name\": \"rm_rf\", \"parameters\": {}}",
     "",
     {{0}}},
    {"l3_call_then_bad",
     L3,
     0,
     "{\"name\": \"get_time\", \"parameters\": {}}; {\"name\": oops}",
     "{\"name\": oops}",
     "",
     {{"get_time", "{}"}}},
    {"l3_whitespace_only", L3, 0, " \n ", " \n ", "", {{0}}},
    {"l3_think",
     L3,
     SPLIT,
     "<think>\nplan\n</think>\n\n{\"name\": \"get_time\", \"parameters\": {}}",
     "",
     "plan",
     {{"get_time", "{}"}}},
    /* Hermes (Qwen 2.5, Qwen 3): <tool_call> blocks anywhere */
    {"he_plain", HE, 0, "Hello! {\"name\": 1} <tool_ <tool_call", "Hello! {\"name\": 1} <tool_ <tool_call", "", {{0}}},
    {"he_one",
     HE,
     0,
     "<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\", \"unit\": "
     "\"celsius\"}}\n</tool_call>",
     "",
     "",
     {{"get_weather", WEATHER}}},
    {"he_two",
     HE,
     0,
     "<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\", \"unit\": \"celsius\"}}\n"
     "</tool_call>\n<tool_call>\n{\"name\": \"get_time\", \"arguments\": {}}\n</tool_call>",
     "",
     "",
     {{"get_weather", WEATHER}, {"get_time", "{}"}}},
    {"he_text_around",
     HE,
     0,
     "Let me check.\n\n<tool_call>\n{\"name\": \"get_time\", \"arguments\": {}}\n</tool_call>\nOne moment.",
     "Let me check.\nOne moment.",
     "",
     {{"get_time", "{}"}}},
    {"he_call_then_bad",
     HE,
     0,
     "<tool_call>{\"name\": \"get_time\", \"arguments\": {}}</tool_call>\n<tool_call>oops",
     "<tool_call>oops",
     "",
     {{"get_time", "{}"}}},
    {"he_nested",
     HE,
     0,
     "<tool_call>\n{\"name\": \"get_weather\", \"arguments\": " NESTED_IN "}\n</tool_call>",
     "",
     "",
     {{"get_weather", NESTED_OUT}}},
    {"he_string_arguments",
     HE,
     0,
     "<tool_call>\n{\"name\": \"get_weather\", \"arguments\": \"{\\\"city\\\": \\\"Paris\\\", \\\"unit\\\": "
     "\\\"celsius\\\"}\"}\n</tool_call>",
     "",
     "",
     {{"get_weather", WEATHER}}},
    /* the first call committed at its arguments' '{': its arguments end before the byte that is not JSON, and the
       text from there on is read after the call (it was all content when calls were taken only whole) */
    {"he_bad_json_then_good",
     HE,
     0,
     "<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": }}\n</tool_call>\n<tool_call>\n{\"name\": "
     "\"get_time\", \"arguments\": {}}\n</tool_call>",
     "}}\n</tool_call>",
     "",
     {{"get_weather", "{\"city\":"}, {"get_time", "{}"}}},
    /* bad JSON in the header, before the arguments: content as written, as before */
    {"he_bad_header",
     HE,
     0,
     "<tool_call>\n{\"name\": \"get_weather\" \"arguments\": {}}\n</tool_call>",
     "<tool_call>\n{\"name\": \"get_weather\" \"arguments\": {}}\n</tool_call>",
     "",
     {{0}}},
    /* a list is Mistral's form, not Hermes' */
    {"he_list",
     HE,
     0,
     "<tool_call>[{\"name\": \"get_time\", \"arguments\": {}}]</tool_call>",
     "<tool_call>[{\"name\": \"get_time\", \"arguments\": {}}]</tool_call>",
     "",
     {{0}}},
    {"he_cut_in_arguments",
     HE,
     0,
     "Hi\n<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Pa{r",
     "Hi",
     "",
     {{"get_weather", "{\"city\":\"Pa{r"}}},
    {"he_name_after_arguments",
     HE,
     KNOWN,
     "<tool_call>\n{\"arguments\": {\"city\": \"Paris\", \"unit\": \"celsius\"}, \"name\": "
     "\"get_weather\"}\n</tool_call>",
     "",
     "",
     {{"get_weather", WEATHER}}},
    {"he_name_after_arguments_unknown",
     HE,
     KNOWN,
     "<tool_call>\n{\"arguments\": {}, \"name\": \"rm_rf\"}\n</tool_call>",
     "<tool_call>\n{\"arguments\": {}, \"name\": \"rm_rf\"}\n</tool_call>",
     "",
     {{0}}},
    {"he_no_name",
     HE,
     0,
     "<tool_call>\n{\"arguments\": {}}\n</tool_call>",
     "<tool_call>\n{\"arguments\": {}}\n</tool_call>",
     "",
     {{0}}},
    {"he_unknown_name",
     HE,
     KNOWN,
     "Hi <tool_call>\n{\"name\": \"rm_rf\", \"arguments\": {}}\n</tool_call>",
     "Hi <tool_call>\n{\"name\": \"rm_rf\", \"arguments\": {}}\n</tool_call>",
     "",
     {{0}}},
    {"he_no_closing_tag",
     HE,
     0,
     "<tool_call>\n{\"name\": \"get_time\", \"arguments\": {}}\n",
     "",
     "",
     {{"get_time", "{}"}}},
    {"he_unterminated",
     HE,
     0,
     "x\n<tool_call>\n{\"name\": \"get_weather\", \"argu",
     "x\n<tool_call>\n{\"name\": \"get_weather\", \"argu",
     "",
     {{0}}},
    /* the call committed: the wrapper text that does not follow (junk where </tool_call> should be) is read after
       the call, as content (all of it was content when calls were taken only whole) */
    {"he_junk_after_object",
     HE,
     0,
     "<tool_call>\n{\"name\": \"get_time\", \"arguments\": {}} junk</tool_call>",
     "junk</tool_call>",
     "",
     {{"get_time", "{}"}}},
    {"he_think_closed",
     HE,
     SPLIT,
     "<think>\nThe user wants weather.\n</think>\n\n<tool_call>\n{\"name\": \"get_time\", \"arguments\": "
     "{}}\n</tool_call>",
     "",
     "The user wants weather.",
     {{"get_time", "{}"}}},
    {"he_think_empty", HE, SPLIT, "<think>\n\n</think>\n\nParis.", "Paris.", "", {{0}}},
    {"he_think_unclosed", HE, SPLIT, "<think>\nStill thinking about </thi", "", "Still thinking about </thi", {{0}}},
    {"he_think_absent", HE, SPLIT, "  Paris <think>x</think>", "  Paris <think>x</think>", "", {{0}}},
    {"he_think_holds_call", HE, SPLIT, "<think><tool_call>{}</think>ok", "ok", "<tool_call>{}", {{0}}},
    {"he_think_open",
     HE,
     SPLIT | OPEN,
     "I should call.\n</think>\n\n<tool_call>\n{\"name\": \"get_time\", "
     "\"arguments\": {}}\n</tool_call>",
     "",
     "I should call.",
     {{"get_time", "{}"}}},
    {"he_think_open_unclosed", HE, SPLIT | OPEN, "\n still  thinking \n", "", "still  thinking", {{0}}},
    {"he_think_not_split", HE, 0, "<think>a</think>b", "<think>a</think>b", "", {{0}}},
    /* Mistral: [TOOL_CALLS] [...] (v0.3) and [TOOL_CALLS]name[ARGS]{...} (tekken) */
    {"mi_plain", MI, 0, "Bonjour [TOOL", "Bonjour [TOOL", "", {{0}}},
    {"mi_one",
     MI,
     0,
     "[TOOL_CALLS] [{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\", \"unit\": \"celsius\"}, \"id\": "
     "\"abc123def\"}]",
     "",
     "",
     {{"get_weather", WEATHER}}},
    {"mi_two",
     MI,
     0,
     "[TOOL_CALLS] [{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\", \"unit\": \"celsius\"}}, "
     "{\"name\": \"get_time\", \"arguments\": {}}]",
     "",
     "",
     {{"get_weather", WEATHER}, {"get_time", "{}"}}},
    {"mi_tekken",
     MI,
     0,
     "[TOOL_CALLS]get_weather[ARGS]{\"city\": \"Paris\", \"unit\": \"celsius\"}[TOOL_CALLS]get_time[ARGS]{}",
     "",
     "",
     {{"get_weather", WEATHER}, {"get_time", "{}"}}},
    {"mi_tekken_call_id", MI, 0, "[TOOL_CALLS]get_time[CALL_ID]a1b2c3d4e[ARGS]{}", "", "", {{"get_time", "{}"}}},
    {"mi_text_before",
     MI,
     0,
     "Checking.\n[TOOL_CALLS] [{\"name\": \"get_time\", \"arguments\": {}}]",
     "Checking.",
     "",
     {{"get_time", "{}"}}},
    {"mi_nested",
     MI,
     0,
     "[TOOL_CALLS] [{\"name\": \"get_weather\", \"arguments\": " NESTED_IN "}]",
     "",
     "",
     {{"get_weather", NESTED_OUT}}},
    /* committed at the arguments' '{': the ']' that breaks them ends the call and is content (was all content) */
    {"mi_bad_json",
     MI,
     0,
     "[TOOL_CALLS] [{\"name\": \"get_weather\", \"arguments\": {]",
     "]",
     "",
     {{"get_weather", "{"}}},
    {"mi_empty_list", MI, 0, "[TOOL_CALLS] []", "[TOOL_CALLS] []", "", {{0}}},
    /* each object of the list commits on its own: get_time is a call, the list from the unknown function's object on
       is content (the whole list was content when calls were taken only whole) */
    {"mi_unknown_name",
     MI,
     KNOWN,
     "[TOOL_CALLS] [{\"name\": \"get_time\", \"arguments\": {}}, {\"name\": \"rm_rf\", \"arguments\": {}}]",
     "{\"name\": \"rm_rf\", \"arguments\": {}}]",
     "",
     {{"get_time", "{}"}}},
    {"mi_unknown_name_first",
     MI,
     KNOWN,
     "[TOOL_CALLS] [{\"name\": \"rm_rf\", \"arguments\": {}}, {\"name\": \"get_time\", \"arguments\": {}}]",
     "[TOOL_CALLS] [{\"name\": \"rm_rf\", \"arguments\": {}}, {\"name\": \"get_time\", \"arguments\": {}}]",
     "",
     {{0}}},
    {"mi_list_item_not_object",
     MI,
     0,
     "[TOOL_CALLS] [{\"name\": \"get_time\", \"arguments\": {}}, 5]",
     "5]",
     "",
     {{"get_time", "{}"}}},
    {"mi_list_name_after_arguments",
     MI,
     0,
     "[TOOL_CALLS] [{\"arguments\": {}, \"name\": \"get_time\"}, {\"name\": \"get_weather\", \"arguments\": "
     "{\"city\": \"Paris\", \"unit\": \"celsius\"}}]",
     "",
     "",
     {{"get_time", "{}"}, {"get_weather", WEATHER}}},
    /* tekken commits at [ARGS]{: "oops}" breaks the arguments and is content (was all content) */
    {"mi_tekken_bad", MI, 0, "[TOOL_CALLS]get_time[ARGS]{oops}", "oops}", "", {{"get_time", "{"}}},
    {"mi_tekken_unknown", MI, KNOWN, "[TOOL_CALLS]rm_rf[ARGS]{}", "[TOOL_CALLS]rm_rf[ARGS]{}", "", {{0}}},
    {"mi_think", MI, SPLIT, "<think>hm</think>[TOOL_CALLS]get_time[ARGS]{}", "", "hm", {{"get_time", "{}"}}},
    /* Gemma: ```tool_code blocks of Python calls */
    {"ge_plain",
     GE,
     0,
     "Here is code:\n```python\nprint(1)\n```\n``",
     "Here is code:\n```python\nprint(1)\n```\n``",
     "",
     {{0}}},
    {"ge_one",
     GE,
     0,
     "```tool_code\nget_weather(city=\"Paris\", unit='celsius')\n```",
     "",
     "",
     {{"get_weather", WEATHER}}},
    {"ge_two_lines",
     GE,
     0,
     "```tool_code\nget_weather(city=\"Paris\", unit=\"celsius\")\nget_time()\n```",
     "",
     "",
     {{"get_weather", WEATHER}, {"get_time", "{}"}}},
    {"ge_two_blocks",
     GE,
     0,
     "```tool_code\nget_time()\n```\n\n```tool_code\nprint(get_time())\n```",
     "",
     "",
     {{"get_time", "{}"}, {"get_time", "{}"}}},
    {"ge_text_before",
     GE,
     0,
     "I'll check.\n```tool_code\nget_time()\n```\nWait.",
     "I'll check.\nWait.",
     "",
     {{"get_time", "{}"}}},
    {"ge_nested_values",
     GE,
     0,
     "```tool_code\nget_weather(city=\"Pa{r}is [x] \\\"q\\\" \\\\ \\u00e9 \xe6\x97\xa5\xe6\x9c\xac)\", opts={'deep': "
     "[1, (2, 3.0)], \"n\": None}, flag=True, off=False, x=-.5, y=5., z=1_000, e=2E-3,)\n```",
     "",
     "",
     {{"get_weather", "{\"city\":\"Pa{r}is [x] \\\"q\\\" \\\\ \xc3\xa9 \xe6\x97\xa5\xe6\x9c\xac)\",\"opts\":{\"deep\":"
                      "[1,[2,3.0]],\"n\":null},\"flag\":true,\"off\":false,\"x\":-0.5,\"y\":5.0,\"z\":1000,"
                      "\"e\":2e-3}"}}},
    {"ge_bad_value",
     GE,
     0,
     "```tool_code\nget_weather(city=)\n```",
     "```tool_code\nget_weather(city=)\n```",
     "",
     {{0}}},
    {"ge_positional",
     GE,
     0,
     "```tool_code\nget_weather(\"Paris\")\n```",
     "```tool_code\nget_weather(\"Paris\")\n```",
     "",
     {{0}}},
    {"ge_unknown_name",
     GE,
     KNOWN,
     "```tool_code\nget_time()\nrm_rf()\n```",
     "```tool_code\nget_time()\nrm_rf()\n```",
     "",
     {{0}}},
    {"ge_no_fence_at_end", GE, 0, "```tool_code\nget_time()\n", "", "", {{"get_time", "{}"}}},
    {"ge_unterminated",
     GE,
     0,
     "```tool_code\nget_weather(city=\"Par",
     "```tool_code\nget_weather(city=\"Par",
     "",
     {{0}}},
    {"ge_think", GE, SPLIT, "<think>x</think>```tool_code\nget_time()\n```", "", "x", {{"get_time", "{}"}}},
    /* Gemma 4: <|tool_call>call:name{...}<tool_call|>, strings between <|"|> */
    {"g4_plain", G4, 0, "Hi <|tool", "Hi <|tool", "", {{0}}},
    {"g4_one",
     G4,
     0,
     "<|tool_call>call:get_weather{city:<|\"|>Paris<|\"|>,unit:<|\"|>celsius<|\"|>}<tool_call|>",
     "",
     "",
     {{"get_weather", WEATHER}}},
    {"g4_two",
     G4,
     0,
     "Checking.<|tool_call>call:get_time{}<tool_call|><|tool_call>call:get_weather{city:<|\"|>Paris<|\"|>,unit:<|\"|>"
     "celsius<|\"|>}<tool_call|>",
     "Checking.",
     "",
     {{"get_time", "{}"}, {"get_weather", WEATHER}}},
    {"g4_two_between_texts",
     G4,
     0,
     "A <|tool_call>call:get_time{}<tool_call|> <|tool_call>call:get_time{}<tool_call|> B\n",
     "A B\n",
     "",
     {{"get_time", "{}"}, {"get_time", "{}"}}},
    {"g4_nested",
     G4,
     0,
     "<|tool_call>call:get_weather{city:<|\"|>Pa{r}is \"q\" <tool_call|> \xc3\xa9<|\"|>,opts:{deep:[1,2.5,true,null],"
     "n:-3},flag:false}<tool_call|>",
     "",
     "",
     {{"get_weather", "{\"city\":\"Pa{r}is \\\"q\\\" <tool_call|> \xc3\xa9\",\"opts\":{\"deep\":[1,2.5,true,null],"
                      "\"n\":-3},\"flag\":false}"}}},
    {"g4_bad",
     G4,
     0,
     "<|tool_call>call:get_weather{city:}<tool_call|>",
     "<|tool_call>call:get_weather{city:}<tool_call|>",
     "",
     {{0}}},
    {"g4_unknown_name",
     G4,
     KNOWN,
     "<|tool_call>call:rm_rf{}<tool_call|>",
     "<|tool_call>call:rm_rf{}<tool_call|>",
     "",
     {{0}}},
    {"g4_unterminated", G4, 0, "<|tool_call>call:get_time{", "<|tool_call>call:get_time{", "", {{0}}},
    /* harmony (gpt-oss), as the parser gets it after a prompt ending in <|start|>assistant: analysis is reasoning
       (split_reasoning or not), final and commentary without a recipient content, a message to=functions.NAME a
       call; <|return|> and <|call|> end generation, so a reply usually comes without them */
    {"ha_plain",
     HA,
     0,
     "<|channel|>final<|message|>The capital of France is Paris.",
     "The capital of France is Paris.",
     "",
     {{0}}},
    {"ha_plain_no_markers", HA, 0, "Hello there.\n", "Hello there.\n", "", {{0}}},
    {"ha_think",
     HA,
     0,
     "<|channel|>analysis<|message|>User asks the capital. Easy.<|end|><|start|>assistant<|channel|>final<|message|>"
     "Paris.<|return|>",
     "Paris.",
     "User asks the capital. Easy.",
     {{0}}},
    {"ha_think_split",
     HA,
     SPLIT,
     "<|channel|>analysis<|message|> a \n b <|end|><|start|>assistant<|channel|>final<|message|> c ",
     " c ",
     " a \n b ",
     {{0}}},
    {"ha_think_cut", HA, 0, "<|channel|>analysis<|message|>Thinking about it", "", "Thinking about it", {{0}}},
    {"ha_think_cut_in_header",
     HA,
     0,
     "<|channel|>analysis<|message|>hmm<|end|><|start|>assistant<|channel|>fin",
     "",
     "hmm",
     {{0}}},
    {"ha_think_no_start",
     HA,
     0,
     "<|channel|>analysis<|message|>think<|channel|>final<|message|>answer",
     "answer",
     "think",
     {{0}}},
    {"ha_one",
     HA,
     0,
     "<|channel|>commentary to=functions.get_weather <|constrain|>json<|message|>{\"city\": \"Paris\", \"unit\": "
     "\"celsius\"}<|call|>",
     "",
     "",
     {{"get_weather", WEATHER}}},
    {"ha_one_after_analysis",
     HA,
     KNOWN,
     "<|channel|>analysis<|message|>Need the weather.<|end|><|start|>assistant<|channel|>commentary "
     "to=functions.get_weather <|constrain|>json<|message|>{\"city\": \"Paris\", \"unit\": \"celsius\"}",
     "",
     "Need the weather.",
     {{"get_weather", WEATHER}}},
    {"ha_one_recipient_first",
     HA,
     0,
     " to=functions.get_weather<|channel|>commentary json<|message|>{\"city\": \"Paris\", \"unit\": \"celsius\"}"
     "<|call|>",
     "",
     "",
     {{"get_weather", WEATHER}}},
    {"ha_one_start_recipient",
     HA,
     0,
     "<|channel|>analysis<|message|>x<|end|><|start|>assistant to=functions.get_time<|channel|>commentary json"
     "<|message|>{}<|call|>",
     "",
     "x",
     {{"get_time", "{}"}}},
    {"ha_one_no_constrain",
     HA,
     0,
     "<|channel|>commentary to=functions.get_time<|message|> {}",
     "",
     "",
     {{"get_time", "{}"}}},
    {"ha_one_preamble",
     HA,
     0,
     "<|channel|>commentary<|message|>Let me check.<|end|><|start|>assistant<|channel|>commentary "
     "to=functions.get_time <|constrain|>json<|message|>{\"zone\": \"UTC\"}<|call|>",
     "Let me check.",
     "",
     {{"get_time", "{\"zone\":\"UTC\"}"}}},
    {"ha_one_string_arguments",
     HA,
     0,
     " to=functions.get_weather<|channel|>commentary json<|message|>\"{\\\"city\\\": \\\"Paris\\\", \\\"unit\\\": "
     "\\\"celsius\\\"}\"<|call|>",
     "",
     "",
     {{"get_weather", WEATHER}}},
    {"ha_one_text_after",
     HA,
     0,
     "<|channel|>commentary to=functions.get_time<|message|>{} \n done<|call|>",
     "done",
     "",
     {{"get_time", "{}"}}},
    {"ha_two",
     HA,
     0,
     "<|channel|>commentary to=functions.get_time <|constrain|>json<|message|>{}<|call|><|start|>assistant"
     "<|channel|>commentary to=functions.get_weather <|constrain|>json<|message|>{\"city\": \"Paris\", \"unit\": "
     "\"celsius\"}<|call|>",
     "",
     "",
     {{"get_time", "{}"}, {"get_weather", WEATHER}}},
    {"ha_nested",
     HA,
     0,
     "<|channel|>commentary to=functions.get_weather <|constrain|>json<|message|>" NESTED_IN "<|call|>",
     "",
     "",
     {{"get_weather", NESTED_OUT}}},
    {"ha_unknown_name",
     HA,
     KNOWN,
     "<|channel|>commentary to=functions.rm_rf <|constrain|>json<|message|>{\"path\": \"/\"}<|call|>",
     "{\"path\": \"/\"}",
     "",
     {{0}}},
    {"ha_unknown_name_analysis",
     HA,
     KNOWN,
     "<|channel|>analysis to=browser.search code<|message|>{\"query\": \"x\"}<|call|>",
     "",
     "{\"query\": \"x\"}",
     {{0}}},
    {"ha_not_json",
     HA,
     0,
     "<|channel|>commentary to=functions.get_time<|message|>now please<|call|>",
     "now please",
     "",
     {{0}}},
    {"ha_bad_json",
     HA,
     0,
     "<|channel|>commentary to=functions.get_time<|message|>{\"zone\": oops}<|call|>",
     "oops}",
     "",
     {{"get_time", "{\"zone\":"}}},
    {"ha_cut_arguments",
     HA,
     0,
     "<|channel|>commentary to=functions.get_weather <|constrain|>json<|message|>{\"city\": \"Pa",
     "",
     "",
     {{"get_weather", "{\"city\":\"Pa"}}},
    {"ha_cut_after_message",
     HA,
     0,
     "<|channel|>commentary to=functions.get_weather <|constrain|>json<|message|>",
     "",
     "",
     {{0}}},
    {"ha_stray_ends", HA, 0, "<|end|><|message|>A<|return|>B<|start|>assistant<|message|>C", "ABC", "", {{0}}},
    {"ha_stray_header_markers",
     HA,
     0,
     "<|channel|>analysis<|message|>a<|message|>b<|constrain|>c<|end|><|message|><|message|>d",
     "d",
     "abc",
     {{0}}},
    /* no format: everything is content; reasoning still splits */
    {"none_call_is_text",
     NO,
     0,
     "<tool_call>\n{\"name\": \"get_time\", \"arguments\": {}}\n</tool_call>",
     "<tool_call>\n{\"name\": \"get_time\", \"arguments\": {}}\n</tool_call>",
     "",
     {{0}}},
    {"none_think", NO, SPLIT, "<think> a \n b </think> c ", "c ", "a \n b", {{0}}},
};

static void check_case(const pcase *c) {
  static const char *const known[] = {"get_weather", "get_time"};
  chat_reply_opts o = {.split_reasoning = !!(c->opts & SPLIT), .thinking_open = !!(c->opts & OPEN)};
  if (c->opts & KNOWN) {
    o.tool_names = known;
    o.n_tool_names = 2;
  }
  chat_reply r;
  llm_err err = {0};
  wgllm_status st = chat_reply_parse(c->f, c->text, strlen(c->text), &o, &r, &err);
  CHECK(!st, "%s: %s", c->name, err.msg);
  if (st) return;
  size_t nwant = 0;
  while (nwant < 3 && c->calls[nwant][0])
    nwant++;
  int ok = !strcmp(r.content, c->content) && r.content_len == strlen(c->content) &&
           !strcmp(r.reasoning, c->reasoning) && r.n_tool_calls == nwant && ids_ok(c->f, r.tool_calls, r.n_tool_calls);
  for (size_t i = 0; ok && i < nwant; i++)
    ok = !strcmp(r.tool_calls[i].name, c->calls[i][0]) && !strcmp(r.tool_calls[i].arguments, c->calls[i][1]);
  CHECK(ok, "%s (%s): content [%s] want [%s], reasoning [%s] want [%s], %zu calls want %zu%s%s%s%s", c->name,
        chat_tool_format_name(c->f), r.content, c->content, r.reasoning, c->reasoning, r.n_tool_calls, nwant,
        r.n_tool_calls ? ", first " : "", r.n_tool_calls ? r.tool_calls[0].name : "", r.n_tool_calls ? " " : "",
        r.n_tool_calls ? r.tool_calls[0].arguments : "");
  check_streaming(c->name, c->f, &o, c->text, &r);
  chat_reply_free(&r);
}

static void check_cases(void) {
  for (size_t i = 0; i < sizeof pcases / sizeof *pcases; i++)
    check_case(&pcases[i]);
  /* every format has every kind of case */
  static const char *const kinds[] = {"plain", "one", "two", "nested", "unknown_name", "think"};
  static const char *const pre[] = {"l3_", "he_", "mi_", "ge_", "g4_", "ha_"};
  for (size_t p = 0; p < 6; p++)
    for (size_t k = 0; k < 6; k++) {
      int found = 0;
      for (size_t i = 0; i < sizeof pcases / sizeof *pcases; i++)
        found |= !strncmp(pcases[i].name, pre[p], 3) && strstr(pcases[i].name + 3, kinds[k]) != NULL;
      if (!(p == 4 && k == 5)) /* Gemma 4's thinking channel is not <think> */
        CHECK(found, "no %s%s case", pre[p], kinds[k]);
    }
}

/* ---------- random replies from the formats' pieces: streamed in random pieces, the same as whole ---------- */
static void check_random(void) {
  static const char *const frag[] = {"<tool_call>",
                                     "</tool_call>",
                                     "\n",
                                     " ",
                                     "{",
                                     "}",
                                     "\"name\": \"get_time\"",
                                     ", ",
                                     "\"arguments\": {}",
                                     "\"parameters\": {\"a\": [1, \"}\"]}",
                                     "<think>",
                                     "</think>",
                                     "<thi",
                                     "</thin",
                                     "[TOOL_CALLS]",
                                     "[",
                                     "]",
                                     "get_time",
                                     "[ARGS]",
                                     "[CALL_ID]",
                                     "```tool_code\n",
                                     "```",
                                     "get_time()",
                                     "get_time(a=1, b='x')",
                                     "(",
                                     ")",
                                     "<|tool_call>",
                                     "call:get_time{",
                                     "<tool_call|>",
                                     "<|\"|>",
                                     "x",
                                     "\xc3\xa9",
                                     ";",
                                     "<|python_tag|>",
                                     "\"",
                                     "{\"name\": \"get_time\", \"parameters\": {}}",
                                     "<tool_call>\n{\"name\": \"get_time\", \"arguments\": {}}\n</tool_call>",
                                     "[TOOL_CALLS] [{\"name\": \"get_time\", \"arguments\": {}}]",
                                     "```tool_code\nget_time()\n```",
                                     "<|tool_call>call:get_time{a:<|\"|>}<|\"|>}<tool_call|>",
                                     "\\",
                                     "\t",
                                     "rm_rf",
                                     "<|channel|>",
                                     "<|message|>",
                                     "<|end|>",
                                     "<|start|>assistant",
                                     "<|call|>",
                                     "<|return|>",
                                     "<|constrain|>json",
                                     "analysis",
                                     "final",
                                     "commentary to=functions.get_time ",
                                     " to=functions.rm_rf",
                                     "<|chan",
                                     "<|channel|>analysis<|message|>",
                                     "<|channel|>commentary to=functions.get_time<|message|>{\"a\": 1}<|call|>",
                                     " to=functions.get_time<|channel|>commentary json<|message|>\"{}\""};
  static const char *const known[] = {"get_weather", "get_time"};
  th_rng rng = {42};
  int bad = 0;
  for (int f = 0; f <= (int)HA; f++)
    for (int t = 0; t < 400 && bad < 5; t++) {
      char text[2048] = "";
      int nf = 1 + (int)(th_u32(&rng) % 12);
      for (int k = 0; k < nf; k++)
        strcat(text, frag[th_u32(&rng) % (sizeof frag / sizeof *frag)]);
      unsigned bits = th_u32(&rng);
      chat_reply_opts o = {.split_reasoning = (int)(bits & 1), .thinking_open = (int)(bits >> 1 & 1)};
      if (bits & 4) {
        o.tool_names = known;
        o.n_tool_names = 2;
      }
      chat_reply whole;
      chat_reply_parse((chat_tool_format)f, text, strlen(text), &o, &whole, NULL);
      size_t n = strlen(text), cuts[64], nc = 0, at = 0;
      while (at < n && nc < 63) {
        at += 1 + th_u32(&rng) % 9;
        cuts[nc++] = at < n ? at : n;
      }
      if (!nc || cuts[nc - 1] != n) cuts[nc++] = n;
      acc a;
      stream((chat_tool_format)f, &o, text, cuts, nc, &a);
      int ok = !a.bad && a.cn == whole.content_len && !memcmp(a.content, whole.content, a.cn) &&
               !strcmp(a.reasoning, whole.reasoning) &&
               same_calls(a.calls, a.n_calls, whole.tool_calls, whole.n_tool_calls) &&
               ids_ok((chat_tool_format)f, a.calls, a.n_calls);
      CHECK(ok,
            "random reply %d (%s, opts %u) [%s]: streamed content [%s] reasoning [%s] %zu calls, whole [%s] [%s] "
            "%zu calls",
            t, chat_tool_format_name((chat_tool_format)f), bits & 7, text, a.content, a.reasoning, a.n_calls,
            whole.content, whole.reasoning, whole.n_tool_calls);
      bad += !ok;
      acc_free(&a);
      chat_reply_free(&whole);
    }
}

/* ---------- hostile and large replies ---------- */
static void check_hostile(void) {
  /* nesting past the JSON scanner's 128 levels stays content; so does a Python call nested as deep */
  char deep[600] = "<tool_call>\n{\"name\": \"f\", \"arguments\": ";
  for (int i = 0; i < 200; i++)
    strcat(deep, "[");
  chat_reply r;
  llm_err err = {0};
  wgllm_status st = chat_reply_parse(HE, deep, strlen(deep), NULL, &r, &err);
  CHECK(!st && !strcmp(r.content, deep) && !r.n_tool_calls, "deep nesting: %s", st ? err.msg : r.content);
  chat_reply_free(&r);
  char py[600] = "```tool_code\nf(a=";
  for (int i = 0; i < 200; i++)
    strcat(py, "[");
  strcat(py, ")\n```");
  st = chat_reply_parse(GE, py, strlen(py), NULL, &r, &err);
  CHECK(!st && !strcmp(r.content, py) && !r.n_tool_calls, "deep Python nesting: %s", st ? err.msg : r.content);
  chat_reply_free(&r);
  /* bytes that are not text: NULs and invalid UTF-8 stay content */
  static const char bin[] = "a\0b\xff<tool_call>\0";
  st = chat_reply_parse(HE, bin, sizeof bin - 1, NULL, &r, &err);
  CHECK(!st && r.content_len == sizeof bin - 1 && !memcmp(r.content, bin, sizeof bin - 1), "binary: %zu bytes",
        r.content_len);
  chat_reply_free(&r);
  st = chat_reply_parse(HE, NULL, 3, NULL, &r, &err);
  CHECK(st == WGLLM_ERR_INVALID_ARG && strstr(err.msg, "no text"), "NULL text: %s", err.msg);
  chat_reply_free(&r);
  /* a long call streamed in small pieces is read once (the JSON scanner resumes), and a long plain reply is not
     held back: each piece's text is out before the next */
  size_t big = 400000;
  char *text = malloc(big + 200);
  strcpy(text, "<tool_call>\n{\"name\": \"f\", \"arguments\": {\"s\": \"");
  size_t at = strlen(text);
  memset(text + at, 'x', big);
  strcpy(text + at + big, "\"}}\n</tool_call>");
  size_t n = strlen(text);
  clock_t t0 = clock();
  chat_reply_stream *s = chat_reply_stream_create(HE, NULL);
  chat_reply_delta d;
  size_t calls = 0, held_max = 0, out = 0, args = 0, args_behind = 0;
  for (size_t i = 0; i < n; i += 3) {
    chat_reply_stream_push(s, text + i, i + 3 <= n ? 3 : n - i, &d);
    for (size_t k = 0; k < d.n_tool_calls; k++) {
      calls += d.tool_calls[k].id != NULL;
      args += d.tool_calls[k].arguments_len;
    }
    size_t want = i + 3 <= n ? i + 3 : n; /* inside the string: {"s":" and every x pushed are out */
    if (want >= at && want <= at + big && args != 6 + (want - at)) args_behind++;
  }
  chat_reply_stream_finish(s, &d);
  calls += d.n_tool_calls;
  chat_reply_stream_free(s);
  double secs = (double)(clock() - t0) / CLOCKS_PER_SEC;
  CHECK(calls == 1 && args == big + 8 && !args_behind && secs < 5,
        "a 400 kB call in 3-byte pieces: %zu calls, %zu argument bytes, %zu pushes behind, in %.2f s", calls, args,
        args_behind, secs);
  memset(text, 'y', n);
  s = chat_reply_stream_create(HE, NULL);
  for (size_t i = 0; i < n; i += 3) {
    chat_reply_stream_push(s, text + i, i + 3 <= n ? 3 : n - i, &d);
    out += d.content_len;
    size_t want = i + 3 <= n ? i + 3 : n;
    if (want - out > held_max) held_max = want - out;
  }
  chat_reply_stream_finish(s, &d);
  chat_reply_stream_free(s);
  CHECK(held_max == 0, "plain text held back: up to %zu bytes", held_max);
  free(text);
  /* after finish, a push is refused */
  s = chat_reply_stream_create(HE, NULL);
  chat_reply_stream_finish(s, &d);
  CHECK(chat_reply_stream_push(s, "x", 1, &d) == WGLLM_ERR_INVALID_ARG && d.content_len == 0, "push after finish");
  chat_reply_stream_free(s);
  /* harmony: a header that does not reach <|message|> within 256 bytes is not one (its text content, its opening
     marker dropped); a request without functions (an empty list of names) makes a message to one content */
  char head[400] = "<|channel|>";
  memset(head + 11, 'x', 300);
  strcpy(head + 311, "<|message|>hi");
  st = chat_reply_parse(CHAT_TOOLS_HARMONY, head, strlen(head), NULL, &r, &err);
  head[311] = 0; /* the <|message|> astray in the body is dropped too */
  CHECK(!st && r.content_len == 302 && !strncmp(r.content, head + 11, 300) && !strcmp(r.content + 300, "hi") &&
            !r.reasoning[0],
        "harmony: a 300-byte header: [%.20s...]", r.content);
  strcpy(head + 311, "<|message|>hi");
  check_streaming("harmony: a 300-byte header", CHAT_TOOLS_HARMONY, NULL, head, &r);
  chat_reply_free(&r);
  static const char *const no_names[] = {NULL};
  chat_reply_opts none = {.tool_names = no_names, .n_tool_names = 0};
  const char *call = "<|channel|>analysis<|message|>t<|end|><|start|>assistant<|channel|>commentary "
                     "to=functions.get_time<|message|>{}<|call|>";
  st = chat_reply_parse(CHAT_TOOLS_HARMONY, call, strlen(call), &none, &r, &err);
  CHECK(!st && !strcmp(r.content, "{}") && !strcmp(r.reasoning, "t") && !r.n_tool_calls,
        "harmony without functions: content [%s] reasoning [%s] %zu calls", r.content, r.reasoning, r.n_tool_calls);
  chat_reply_free(&r);
  /* deterministic ids from a seed, different seeds differ */
  chat_reply_opts o1 = {.id_seed = 7}, o2 = {.id_seed = 8};
  const char *two = "<tool_call>{\"name\": \"a\", \"arguments\": {}}</tool_call><tool_call>{\"name\": \"b\", "
                    "\"arguments\": {}}</tool_call>";
  chat_reply a, b, c;
  chat_reply_parse(HE, two, strlen(two), &o1, &a, NULL);
  chat_reply_parse(HE, two, strlen(two), &o1, &b, NULL);
  chat_reply_parse(HE, two, strlen(two), &o2, &c, NULL);
  CHECK(a.n_tool_calls == 2 && b.n_tool_calls == 2 && c.n_tool_calls == 2 &&
            !strcmp(a.tool_calls[0].id, b.tool_calls[0].id) && strcmp(a.tool_calls[0].id, c.tool_calls[0].id) &&
            strcmp(a.tool_calls[0].id, a.tool_calls[1].id),
        "seeded ids");
  chat_reply_free(&a);
  chat_reply_free(&b);
  chat_reply_free(&c);
}

/* ---------- a call's events as its text arrives ---------- */
/* pieces pushed in turn (NULL ends; the last "event" is the finish's): each delta's call events written as
   "index:name:arguments" (name "-" on a later event), '|' between events, must equal want[k] */
static void check_events(const char *what, chat_tool_format f, const char *const *pieces, const char *const *want) {
  chat_reply_stream *s = chat_reply_stream_create(f, NULL);
  chat_reply_delta d;
  for (size_t k = 0;; k++) {
    int fin = !pieces[k];
    wgllm_status st =
        fin ? chat_reply_stream_finish(s, &d) : chat_reply_stream_push(s, pieces[k], strlen(pieces[k]), &d);
    char got[512] = "";
    for (size_t i = 0; i < d.n_tool_calls; i++) {
      const chat_tool_call_delta *c = &d.tool_calls[i];
      size_t l = strlen(got);
      snprintf(got + l, sizeof got - l, "%s%d:%s:%.*s", i ? "|" : "", c->index, c->id ? c->name : "-",
               (int)c->arguments_len, c->arguments);
    }
    CHECK(!st && !strcmp(got, want[k]), "%s: delta %zu: [%s] want [%s]", what, k, got, want[k]);
    if (fin) break;
  }
  chat_reply_stream_free(s);
}

static void check_fragments(void) {
  /* committed at the arguments' '{': the start event with id and name, then the arguments as they come */
  static const char *const he[] = {"<tool_call>\n{\"name\": \"get_weather\", \"arguments\": ",
                                   "{\"city\": ",
                                   "\"Pa",
                                   "ris\"",
                                   ", \"n\": 1",
                                   "2}}\n</tool",
                                   "_call>",
                                   NULL};
  static const char *const he_want[] = {
      "", "0:get_weather:{\"city\":", "0:-:\"Pa", "0:-:ris\"", "0:-:,\"n\":1", "0:-:2}", "", ""};
  check_events("hermes fragments", HE, he, he_want);
  /* two calls in one piece: the second's start after the first's rest */
  static const char *const two[] = {"[TOOL_CALLS]a[ARGS]{\"x\": [1,", " 2]}[TOOL_CALLS]b[ARGS]{}", NULL};
  static const char *const two_want[] = {"0:a:{\"x\":[1,", "0:-:2]}|1:b:{}", ""};
  check_events("tekken fragments", MI, two, two_want);
  /* a character cut between pieces is held back whole */
  static const char *const u8[] = {"{\"name\": \"f\", \"parameters\": {\"s\": \"\xc3", "\xa9\"}}", NULL};
  static const char *const u8_want[] = {"0:f:{\"s\":\"", "0:-:\xc3\xa9\"}", ""};
  check_events("utf-8 fragments", L3, u8, u8_want);
  /* the name after the arguments: nothing until the object ends, then the call whole */
  static const char *const late[] = {"[TOOL_CALLS] [{\"arguments\": {\"a\": ", "1}, \"name\": \"f\"", "}]", NULL};
  static const char *const late_want[] = {"", "", "0:f:{\"a\":1}", ""};
  check_events("name after the arguments", MI, late, late_want);
  /* cut off inside the arguments: nothing more at the finish */
  static const char *const cut[] = {"<tool_call>{\"name\": \"f\", \"arguments\": {\"a\": [", NULL};
  static const char *const cut_want[] = {"0:f:{\"a\":[", ""};
  check_events("cut off", HE, cut, cut_want);
  /* harmony: committed at the body's '{' after a header naming a function; nothing of the markers comes out */
  static const char *const ha[] = {"<|channel|>commentary to=functions.get_weather <|constrain|>json<|mess",
                                   "age|>{\"city\": ",
                                   "\"Pa",
                                   "ris\"}",
                                   "<|ca",
                                   "ll|>",
                                   NULL};
  static const char *const ha_want[] = {"", "0:get_weather:{\"city\":", "0:-:\"Pa", "0:-:ris\"}", "", "", ""};
  check_events("harmony fragments", HA, ha, ha_want);
}

/* ---------- detection ---------- */
static char *read_fixture(const char *name, cJSON **fx) {
  char path[256];
  snprintf(path, sizeof path, "data/chat/%s.json", name);
  size_t n;
  char *js = th_read_file(path, &n);
  *fx = js ? cJSON_Parse(js) : NULL;
  free(js);
  CHECK(*fx != NULL, "%s: no fixture", path);
  const char *t = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(*fx, "template"));
  return t ? strdup(t) : NULL;
}

static void check_detect(void) {
  static const struct {
    const char *fixture;
    chat_tool_format f;
  } fx[] = {{"llama3", NO}, /* Llama 3.0's template has no tools */
            {"llama3.2", L3},     {"qwen2.5", HE}, {"qwen3", HE},
            {"mistral_v0.3", MI}, {"gemma3", NO}, /* Gemma 3's own template ignores tools */
            {"llama2", NO},       {"gpt-oss", HA}, {"phi-3.5", NO}};
  for (size_t i = 0; i < sizeof fx / sizeof *fx; i++) {
    cJSON *j;
    char *t = read_fixture(fx[i].fixture, &j);
    chat_tool_format f = chat_tool_format_detect(t, -1);
    CHECK(f == fx[i].f, "%s: detected %s, want %s", fx[i].fixture, chat_tool_format_name(f),
          chat_tool_format_name(fx[i].f));
    /* a named template decides over the text */
    CHECK(chat_tool_format_detect(t, CHAT_CHATML) == HE, "%s + named chatml", fx[i].fixture);
    free(t);
    cJSON_Delete(j);
  }
  CHECK(chat_tool_format_detect(NULL, -1) == NO && chat_tool_format_detect(NULL, CHAT_NONE) == NO &&
            chat_tool_format_detect(NULL, CHAT_LLAMA3) == L3 && chat_tool_format_detect(NULL, CHAT_CHATML) == HE &&
            chat_tool_format_detect(NULL, CHAT_GEMMA) == GE && chat_tool_format_detect(NULL, CHAT_LLAMA2) == NO,
        "named templates");
  CHECK(chat_tool_format_detect("{{ '<|tool_call>call:' + name }}<tool_call|>", -1) == G4, "Gemma 4");
  CHECK(chat_tool_format_detect("wrap calls in ```tool_code", -1) == GE, "tool_code");
  CHECK(chat_tool_format_detect("{{ '<|python_tag|>' }}", -1) == L3, "python_tag");
  CHECK(chat_tool_format_detect("{{ '<|start|>assistant<|channel|>final<|message|>' }}", -1) == HA, "harmony");
  CHECK(!strcmp(chat_tool_format_name(HA), "harmony"), "harmony's name");
  CHECK(!strcmp(chat_tool_format_name(G4), "gemma4") && !strcmp(chat_tool_format_name((chat_tool_format)99), "none"),
        "names");
}

/* ---------- a harmony model's files: the format, its end tokens, its reply as the parser gets it ---------- */
/* tests/data/models/gpt_oss_gguf (gpt-oss's own template and special tokens over a small BPE; tok_* needs no GPU):
   its template is harmony; <|return|> ends generation and <|end|> does not (the model goes on from analysis to
   final); a reply's ids decoded with their special tokens (as the server decodes a harmony reply) parse into
   reasoning and content, and decoded without them leave no channel to read */
static void check_harmony_model(void) {
  tokenizer *t = NULL;
  char *tpl = NULL;
  llm_err err = {0};
  wgllm_status st = llm_load_tokenizer("data/models/gpt_oss_gguf/model.gguf", &t, &tpl, &err);
  CHECK(!st, "gpt_oss_gguf's tokenizer: %s", err.msg);
  if (st) return;
  CHECK(chat_tool_format_detect(tpl, -1) == HA, "gpt_oss_gguf's template: %s",
        chat_tool_format_name(chat_tool_format_detect(tpl, -1)));
  int32_t end = tok_find(t, "<|end|>"), ret = tok_find(t, "<|return|>"), start = tok_find(t, "<|start|>");
  CHECK(end >= 0 && ret >= 0 && !tok_is_eog(t, end) && tok_is_eog(t, ret) && !tok_is_eog(t, start),
        "gpt_oss_gguf: <|end|> (%d) not an end of generation, <|return|> (%d) one", end, ret);
  const char *reply = "<|channel|>analysis<|message|>the cat<|end|><|start|>assistant<|channel|>final<|message|>"
                      "sat on the mat";
  int32_t *ids = NULL;
  size_t n = 0;
  char *text = NULL, *plain = NULL;
  size_t len = 0, plen = 0;
  st = tok_encode(t, reply, strlen(reply), 0, 1, &ids, &n, &err);
  if (!st) st = tok_decode(t, ids, n, 0, &text, &len, &err);
  if (!st) st = tok_decode(t, ids, n, 1, &plain, &plen, &err);
  CHECK(!st && len == strlen(reply) && !memcmp(text, reply, len), "gpt_oss_gguf: the reply decoded with specials: %s",
        st ? err.msg : text);
  chat_reply r;
  if (!st && !chat_reply_parse(HA, text, len, NULL, &r, &err)) {
    CHECK(!strcmp(r.reasoning, "the cat") && !strcmp(r.content, "sat on the mat"),
          "gpt_oss_gguf: the decoded reply parsed: reasoning [%s] content [%s]", r.reasoning, r.content);
    chat_reply_free(&r);
  }
  CHECK(plain && !strstr(plain, "<|"), "gpt_oss_gguf: without specials the markers are gone: [%s]", plain ? plain : "");
  free(ids);
  free(text);
  free(plain);
  free(tpl);
  tok_free(t);
}

/* ---------- prefixes for tool_choice ---------- */
static void check_prefix(void) {
  static const struct {
    chat_tool_format f;
    const char *any, *named, *rest; /* rest: what the model writes after the named prefix */
  } px[] = {
      {L3, "{\"name\": \"", "{\"name\": \"get_weather\", \"parameters\": ", "{\"city\": \"Paris\"}}"},
      {HE, "<tool_call>\n{\"name\": \"",
       "<tool_call>\n{\"name\": \"get_weather\", \"arguments\": ", "{\"city\": \"Paris\"}}\n</tool_call>"},
      {MI, "[TOOL_CALLS] [{\"name\": \"",
       "[TOOL_CALLS] [{\"name\": \"get_weather\", \"arguments\": ", "{\"city\": \"Paris\"}}]"},
      {GE, "```tool_code\n", "```tool_code\nget_weather(", "city=\"Paris\")\n```"},
      {G4, "<|tool_call>call:", "<|tool_call>call:get_weather{", "city:<|\"|>Paris<|\"|>}<tool_call|>"},
      {HA, "<|channel|>commentary to=functions.",
       "<|channel|>commentary to=functions.get_weather <|constrain|>json<|message|>", "{\"city\": \"Paris\"}<|call|>"},
  };
  for (size_t i = 0; i < sizeof px / sizeof *px; i++) {
    char *a = NULL, *b = NULL;
    llm_err err = {0};
    wgllm_status s1 = chat_tool_prefix(px[i].f, NULL, &a, &err),
                 s2 = chat_tool_prefix(px[i].f, "get_weather", &b, &err);
    CHECK(!s1 && !s2 && !strcmp(a, px[i].any) && !strcmp(b, px[i].named), "%s prefix: [%s] [%s]",
          chat_tool_format_name(px[i].f), a ? a : err.msg, b ? b : err.msg);
    if (b) { /* the forced opening and what the model adds parse to the call */
      char text[512];
      snprintf(text, sizeof text, "%s%s", b, px[i].rest);
      chat_reply r;
      chat_reply_parse(px[i].f, text, strlen(text), NULL, &r, &err);
      CHECK(r.n_tool_calls == 1 && !strcmp(r.tool_calls[0].name, "get_weather") &&
                !strcmp(r.tool_calls[0].arguments, "{\"city\":\"Paris\"}") && !r.content[0],
            "%s: prefix + reply parse: %zu calls, content [%s]", chat_tool_format_name(px[i].f), r.n_tool_calls,
            r.content);
      chat_reply_free(&r);
    }
    free(a);
    free(b);
  }
  char *o = NULL;
  llm_err err = {0};
  { /* harmony's any-function prefix, the model writing the name, the rest of the header and the arguments */
    const char *text = "<|channel|>commentary to=functions.get_time <|constrain|>json<|message|>{\"zone\": \"UTC\"}";
    chat_reply r;
    CHECK(chat_tool_prefix(HA, NULL, &o, &err) == WGLLM_OK && !strncmp(text, o, strlen(o)), "harmony: [%s]",
          o ? o : err.msg);
    chat_reply_parse(HA, text, strlen(text), NULL, &r, &err);
    CHECK(r.n_tool_calls == 1 && !strcmp(r.tool_calls[0].name, "get_time") &&
              !strcmp(r.tool_calls[0].arguments, "{\"zone\":\"UTC\"}") && !r.content[0],
          "harmony: any-function prefix + reply: %zu calls, content [%s]", r.n_tool_calls, r.content);
    chat_reply_free(&r);
    free(o);
    o = NULL;
  }
  CHECK(chat_tool_prefix(NO, NULL, &o, &err) == WGLLM_ERR_UNSUPPORTED && !o && strstr(err.msg, "none"), "NONE: %s",
        err.msg);
  CHECK(chat_tool_prefix(HE, "bad\"name", &o, &err) == WGLLM_ERR_INVALID_ARG && !o && strstr(err.msg, "bad\"name"),
        "a name with a quote: %s", err.msg);
  CHECK(chat_tool_prefix(GE, "get-time", &o, &err) == WGLLM_ERR_INVALID_ARG && strstr(err.msg, "Python"),
        "a Gemma name that is not an identifier: %s", err.msg);
  CHECK(chat_tool_prefix(MI, "get-time.v2", &o, &err) == WGLLM_OK && !strcmp(o, "[TOOL_CALLS] [{\"name\": "
                                                                                "\"get-time.v2\", \"arguments\": "),
        "a name with '-' and '.': %s", o ? o : err.msg);
  free(o);
}

/* ---------- tool_choice for harmony: the header in the prompt, the arguments under the grammar ---------- */
static void check_forced_harmony(void) {
  const char *two =
      "[{\"type\": \"function\", \"function\": {\"name\": \"get_weather\", \"parameters\": {\"type\": "
      "\"object\", \"properties\": {\"city\": {\"type\": \"string\"}}, \"required\": [\"city\"]}}}, "
      "{\"type\": \"function\", \"function\": {\"name\": \"get_time\", \"parameters\": {\"type\": "
      "\"object\", \"properties\": {\"zone\": {\"enum\": [\"UTC\", \"CET\"]}}, \"required\": [\"zone\"]}}}]";
  cJSON *tools = cJSON_Parse(two), *one = cJSON_Parse(two);
  cJSON_DeleteItemFromArray(one, 1); /* get_weather alone */
  llm_err err = {0};
  char *p = NULL, *g = NULL;
  /* a named function: its whole header, and a grammar of its arguments alone (no name, no marker) */
  CHECK(chat_tool_call_prefix(HA, tools, "get_time", &p, &err) == WGLLM_OK && p &&
            !strcmp(p, "<|channel|>commentary to=functions.get_time <|constrain|>json<|message|>"),
        "harmony named: the prefix [%s]", p ? p : err.msg);
  CHECK(chat_tool_call_gbnf(HA, tools, "get_time", &g, &err) == WGLLM_OK && g && strstr(g, "root ::=") &&
            strstr(g, "zone") && strstr(g, "UTC") && !strstr(g, "city") && !strstr(g, "get_time") && !strstr(g, "<|"),
        "harmony named: the arguments' grammar: %s", g ? g : err.msg);
  { /* the parser fed the prefix, then what the grammar lets the model write: one call, nothing else */
    chat_reply_opts o = {.tool_names = (const char *const[]){"get_weather", "get_time"}, .n_tool_names = 2};
    const char *gen = "{\"zone\": \"CET\"}";
    size_t n = strlen(p ? p : "") + strlen(gen);
    char *text = malloc(n + 1);
    snprintf(text, n + 1, "%s%s", p ? p : "", gen);
    chat_reply r;
    chat_reply_parse(HA, text, n, &o, &r, &err);
    CHECK(r.n_tool_calls == 1 && !strcmp(r.tool_calls[0].name, "get_time") &&
              !strcmp(r.tool_calls[0].arguments, "{\"zone\":\"CET\"}") && !r.content[0] && !r.reasoning[0],
          "harmony named: prefix + arguments parsed: %zu calls, content [%s]", r.n_tool_calls, r.content);
    check_streaming("harmony: a forced call", HA, &o, text, &r);
    chat_reply_free(&r);
    free(text);
  }
  free(p);
  free(g);
  p = g = NULL;
  /* "required" with one tool: that tool, as named */
  CHECK(chat_tool_call_prefix(HA, one, NULL, &p, &err) == WGLLM_OK && p &&
            !strcmp(p, "<|channel|>commentary to=functions.get_weather <|constrain|>json<|message|>"),
        "harmony required, one tool: the prefix [%s]", p ? p : err.msg);
  CHECK(chat_tool_call_gbnf(HA, one, NULL, &g, &err) == WGLLM_OK && g && strstr(g, "city"),
        "harmony required, one tool: the grammar: %s", g ? g : err.msg);
  free(p);
  free(g);
  p = g = NULL;
  /* "required" over two tools: refused saying why; an unknown name named */
  CHECK(chat_tool_call_prefix(HA, tools, NULL, &p, &err) == WGLLM_ERR_UNSUPPORTED && !p && strstr(err.msg, "2 tools") &&
            strstr(err.msg, "<|message|>"),
        "harmony required over two tools: %s", err.msg);
  CHECK(chat_tool_call_gbnf(HA, tools, NULL, &g, &err) == WGLLM_ERR_UNSUPPORTED && !g && strstr(err.msg, "2 tools"),
        "harmony required over two tools, the grammar: %s", err.msg);
  CHECK(chat_tool_call_prefix(HA, tools, "nope", &p, &err) == WGLLM_ERR_INVALID_ARG && strstr(err.msg, "\"nope\""),
        "harmony: an unknown function: %s", err.msg);
  /* the JSON formats: no prefix (their grammar writes the whole call, marker and all) */
  CHECK(chat_tool_call_prefix(HE, tools, NULL, &p, &err) == WGLLM_OK && !p, "hermes: no prefix");
  CHECK(chat_tool_call_gbnf(HE, tools, NULL, &g, &err) == WGLLM_OK && g && strstr(g, "<tool_call>"),
        "hermes: the whole call's grammar: %s", g ? g : err.msg);
  free(g);
  cJSON_Delete(tools);
  cJSON_Delete(one);
}

/* ---------- Gemma's Python call lines ---------- */
static void check_python_call(void) {
  char *o = NULL;
  llm_err err = {0};
  const char *args = "{\"city\": \"Pa\\\"ris\\n\\u00e9\", \"n\": [1, -2.5e3, true, null], \"d\": {\"k\": {}}, "
                     "\"e\": []}";
  wgllm_status st = chat_tool_python_call("get_weather", args, &o, &err);
  const char *want = "get_weather(city=\"Pa\\\"ris\\n\xc3\xa9\", n=[1, -2.5e3, True, None], d={\"k\": {}}, e=[])";
  CHECK(!st && !strcmp(o, want), "python call: [%s] want [%s]", st ? err.msg : o, want);
  if (!st) { /* read back by the parser: the same object */
    char text[512];
    snprintf(text, sizeof text, "```tool_code\n%s\n```", o);
    chat_reply r;
    chat_reply_parse(GE, text, strlen(text), NULL, &r, &err);
    cJSON *x = cJSON_Parse(args), *y = r.n_tool_calls ? cJSON_Parse(r.tool_calls[0].arguments) : NULL;
    CHECK(r.n_tool_calls == 1 && cJSON_Compare(x, y, 1), "python call read back: %s",
          r.n_tool_calls ? r.tool_calls[0].arguments : r.content);
    cJSON_Delete(x);
    cJSON_Delete(y);
    chat_reply_free(&r);
  }
  free(o);
  st = chat_tool_python_call("f", "{}", &o, &err);
  CHECK(!st && !strcmp(o, "f()"), "no arguments: %s", o);
  free(o);
  st = chat_tool_python_call("f", "{\"a-b\": 1}", &o, &err);
  CHECK(st == WGLLM_ERR_INVALID_ARG && strstr(err.msg, "a-b") && strstr(err.msg, "identifier"), "key: %s", err.msg);
  st = chat_tool_python_call("f", "[1]", &o, &err);
  CHECK(st == WGLLM_ERR_INVALID_ARG && strstr(err.msg, "not a JSON object"), "list: %s", err.msg);
  st = chat_tool_python_call("f", "{\"a\": }", &o, &err);
  CHECK(st == WGLLM_ERR_INVALID_ARG, "bad JSON: %s", err.msg);
  st = chat_tool_python_call("1f", "{}", &o, &err);
  CHECK(st == WGLLM_ERR_INVALID_ARG && strstr(err.msg, "1f"), "name: %s", err.msg);
}

/* ---------- round trip through the templates ---------- */
static const char *const end_markers[] = {"<|eot_id|>", "<|im_end|>\n", "</s>", "<end_of_turn>\n", "<|call|>"};

static char *render(chat_renderer *r, const cJSON *msgs, const cJSON *tools, const cJSON *kwargs, int agp,
                    llm_err *err) {
  chat_request q = {msgs, tools, kwargs, agp};
  char *out = NULL;
  jinja_limits l = jinja_default_limits();
  l.now = (time_t)1721995200;
  return chat_renderer_apply(r, &q, &l, &out, err) ? NULL : out;
}

/* The assistant turn of vars' first message with tool_calls, as renderer r writes it, parsed in format f: the
   same names and arguments. Returns 1 when checked, 0 when the template refuses the conversation. */
static int round_trip(const char *what, chat_renderer *r, chat_tool_format f, const cJSON *vars) {
  const cJSON *msgs = cJSON_GetObjectItemCaseSensitive(vars, "messages");
  const cJSON *tools = cJSON_GetObjectItemCaseSensitive(vars, "tools");
  int k = 0, n = cJSON_GetArraySize(msgs);
  while (k < n && !cJSON_GetObjectItemCaseSensitive(cJSON_GetArrayItem(msgs, k), "tool_calls"))
    k++;
  if (k == n) return 0;
  cJSON *kw = cJSON_CreateObject(), *before = cJSON_CreateArray(), *upto = cJSON_CreateArray();
  const cJSON *it;
  cJSON_ArrayForEach(it, vars) {
    if (strcmp(it->string, "messages") && strcmp(it->string, "tools") && strcmp(it->string, "documents") &&
        strcmp(it->string, "add_generation_prompt"))
      cJSON_AddItemReferenceToObject(kw, it->string, (cJSON *)it);
  }
  for (int i = 0; i <= k; i++) {
    if (i < k) cJSON_AddItemReferenceToArray(before, cJSON_GetArrayItem(msgs, i));
    cJSON_AddItemReferenceToArray(upto, cJSON_GetArrayItem(msgs, i));
  }
  llm_err err = {0};
  char *a = render(r, before, cJSON_IsNull(tools) ? NULL : tools, kw, 1, &err);
  char *b = a ? render(r, upto, cJSON_IsNull(tools) ? NULL : tools, kw, 0, &err) : NULL;
  int checked = b != NULL;
  if (b) {
    size_t la = strlen(a), lb = strlen(b);
    CHECK(lb >= la && !memcmp(a, b, la), "%s: the prompt before the assistant turn is not a prefix", what);
    const char *reply = b + la;
    size_t rn = lb >= la ? lb - la : 0;
    for (size_t e = 0; e < sizeof end_markers / sizeof *end_markers; e++) {
      size_t ml = strlen(end_markers[e]);
      if (rn >= ml && !memcmp(reply + rn - ml, end_markers[e], ml)) {
        rn -= ml;
        break;
      }
    }
    chat_reply_opts o = {.split_reasoning = 1};
    chat_reply pr;
    chat_reply_parse(f, reply, rn, &o, &pr, &err);
    const cJSON *calls = cJSON_GetObjectItemCaseSensitive(cJSON_GetArrayItem(msgs, k), "tool_calls");
    int nc = cJSON_GetArraySize(calls);
    if (f == HA && nc > 1) nc = 1; /* gpt-oss's template writes a message's first call only */
    int ok = pr.n_tool_calls == (size_t)nc && !pr.content[0];
    for (int i = 0; ok && i < nc; i++) {
      const cJSON *fn = cJSON_GetObjectItemCaseSensitive(cJSON_GetArrayItem(calls, i), "function");
      const cJSON *args = cJSON_GetObjectItemCaseSensitive(fn, "arguments");
      cJSON *want = cJSON_IsString(args) ? cJSON_Parse(args->valuestring) : cJSON_Duplicate(args, 1);
      cJSON *got = cJSON_Parse(pr.tool_calls[i].arguments);
      char *compact = got ? cJSON_PrintUnformatted(got) : NULL;
      ok = !strcmp(pr.tool_calls[i].name, cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(fn, "name"))) &&
           cJSON_Compare(want, got, 1) && compact && !strcmp(compact, pr.tool_calls[i].arguments);
      free(compact);
      cJSON_Delete(want);
      cJSON_Delete(got);
    }
    CHECK(ok, "%s: the template's assistant turn [%.*s] parsed (%s) to %zu calls%s%s, content [%s]", what, (int)rn,
          reply, chat_tool_format_name(f), pr.n_tool_calls, pr.n_tool_calls ? ": " : "",
          pr.n_tool_calls ? pr.tool_calls[0].arguments : "", pr.content);
    chat_reply_free(&pr);
  }
  free(a);
  free(b);
  cJSON_Delete(kw);
  cJSON_Delete(before);
  cJSON_Delete(upto);
  return checked;
}

static void check_round_trips(void) {
  /* the models' own templates: every fixture case with a tool call (the ones a template refuses, Llama 3.2's two
     calls in one message, are counted out) */
  static const char *const own[] = {"llama3.2", "qwen2.5", "qwen3", "mistral_v0.3", "gpt-oss"};
  enum { N_OWN = sizeof own / sizeof *own };
  /* the named templates on the same conversations; Gemma's own template renders no calls (it refuses the tool
     role and ignores tool_calls), so its round trip is the named gemma template's */
  static const struct {
    const char *fixture, *named;
  } named[] = {{"llama3.2", "llama3"}, {"qwen3", "chatml"}, {"qwen2.5", "gemma"}};
  int checked = 0, refused = 0;
  for (size_t i = 0; i < N_OWN + 3; i++) {
    const char *name = i < N_OWN ? own[i] : named[i - N_OWN].fixture;
    cJSON *fx;
    char *t = read_fixture(name, &fx);
    chat_renderer *r = NULL;
    llm_err err = {0};
    wgllm_status st = chat_renderer_create(i < N_OWN ? NULL : named[i - N_OWN].named, t, NULL, &r, &err);
    CHECK(!st, "%s: %s", name, err.msg);
    chat_tool_format f =
        chat_tool_format_detect(i < N_OWN ? t : NULL, i < N_OWN ? -1 : chat_template_from_name(named[i - N_OWN].named));
    const cJSON *c;
    cJSON_ArrayForEach(c, cJSON_GetObjectItemCaseSensitive(fx, "cases")) {
      if (st) break;
      char what[160];
      snprintf(what, sizeof what, "%s (%s) / %s", name, i < N_OWN ? "own template" : named[i - N_OWN].named,
               cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(c, "name")));
      const cJSON *vars = cJSON_GetObjectItemCaseSensitive(c, "vars");
      const cJSON *msgs = cJSON_GetObjectItemCaseSensitive(vars, "messages");
      int has = 0;
      const cJSON *m;
      cJSON_ArrayForEach(m, msgs) has |= cJSON_GetObjectItemCaseSensitive(m, "tool_calls") != NULL;
      if (!has) continue;
      if (round_trip(what, r, f, vars))
        checked++;
      else
        refused++;
    }
    chat_renderer_free(r);
    free(t);
    cJSON_Delete(fx);
  }
  CHECK(checked >= 20 && refused <= 2, "round trips: %d checked, %d refused by their template", checked, refused);
  printf("test_tool_calls: %d round trips through the templates (%d conversations the template refuses)\n", checked,
         refused);
}

int main(void) {
  check_cases();
  check_random();
  check_hostile();
  check_fragments();
  check_detect();
  check_harmony_model();
  check_prefix();
  check_forced_harmony();
  check_python_call();
  check_round_trips();
  return th_finish("test_tool_calls");
}
