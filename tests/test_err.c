/* Tests of the error record (src/base/llm_err.h): llm_err_set records the status and the message and returns the
   status, a NULL record takes nothing, llm_err_prefix puts context before the reason, a long message is cut at the
   record's size, a message may be built from the record's own text; and records passed down through the rooms:
   a failing call below returns the status its record holds, with the message of the first cause. Run from tests/. */
#include "harness.h"
#include "llm_err.h"
#include "mapped_file.h"
#include "tensor_store.h"
#include <string.h>

static void test_record(void) {
  llm_err e = {0};
  CHECK(e.status == WGLLM_OK && !e.msg[0], "a zeroed record holds no error");
  wgllm_status st = llm_err_set(&e, WGLLM_ERR_FORMAT, "%s: byte %d", "file.gguf", 12);
  CHECK(st == WGLLM_ERR_FORMAT && e.status == WGLLM_ERR_FORMAT, "set returns and records the status");
  CHECK(!strcmp(e.msg, "file.gguf: byte 12"), "set formats the message: \"%s\"", e.msg);
  llm_err_prefix(&e, "loading %s", "model");
  CHECK(!strcmp(e.msg, "loading model: file.gguf: byte 12"), "prefix puts context first: \"%s\"", e.msg);
  CHECK(e.status == WGLLM_ERR_FORMAT, "prefix keeps the status");
  llm_err_set(&e, WGLLM_ERR_IO, "%s; and more", e.msg); /* the record's own text as an argument */
  CHECK(!strcmp(e.msg, "loading model: file.gguf: byte 12; and more"), "set from its own message: \"%s\"", e.msg);
  llm_err c;
  CHECK(llm_err_copy(&c, &e) == WGLLM_ERR_IO && !strcmp(c.msg, e.msg), "copy takes status and message");
  llm_err_clear(&e);
  CHECK(e.status == WGLLM_OK && !e.msg[0] && !strcmp(llm_err_msg(&e), ""), "clear empties the record");

  /* NULL: the caller does not want the message */
  CHECK(llm_err_set(NULL, WGLLM_ERR_UNSUPPORTED, "x %d", 1) == WGLLM_ERR_UNSUPPORTED, "set on NULL returns st");
  llm_err_prefix(NULL, "ctx");
  llm_err_clear(NULL);
  CHECK(!strcmp(llm_err_msg(NULL), ""), "a NULL record's message is empty");

  /* a message longer than the record is cut, terminated */
  char big[3000];
  memset(big, 'a', sizeof big - 1);
  big[sizeof big - 1] = 0;
  llm_err_set(&e, WGLLM_ERR_INTERNAL, "%s", big);
  CHECK(strlen(e.msg) == LLM_ERR_MSG_LEN - 1, "a long message is cut at %d bytes (%zu)", LLM_ERR_MSG_LEN - 1,
        strlen(e.msg));
  llm_err_prefix(&e, "%s", "ctx");
  CHECK(strlen(e.msg) == LLM_ERR_MSG_LEN - 1 && !strncmp(e.msg, "ctx: aaa", 8), "a prefixed long message is cut too");
}

/* records through the rooms: a missing file, a tensor store refusing a duplicate name */
static void test_passed_down(void) {
  llm_err e = {0};
  mapped_file *f = NULL;
  wgllm_status st = mf_open("data/no such file", &f, &e);
  CHECK(st == WGLLM_ERR_IO && e.status == st, "mf_open of a missing file: status %d, recorded %d", st, e.status);
  CHECK(strstr(e.msg, "data/no such file") != NULL, "the message names the file: \"%s\"", e.msg);
  CHECK(mf_open("data/no such file", &f, NULL) == WGLLM_ERR_IO, "a NULL record: the same status");
  llm_err_clear(&e);
  wt_store *s = wt_store_create(WT_FORMAT_GGUF);
  wt_tensor t = {.name = "w", .dtype = WT_F32, .n_dims = 1, .shape = {4, 1, 1, 1}, .file = "a"};
  CHECK(wt_store_add(s, &t, &e) == WGLLM_OK && e.status == WGLLM_OK && !e.msg[0], "a first tensor: no error");
  wt_tensor t2 = {.name = "w", .dtype = WT_F32, .n_dims = 1, .shape = {4, 1, 1, 1}, .file = "b"};
  st = wt_store_add(s, &t2, &e);
  CHECK(st == WGLLM_ERR_FORMAT && e.status == st &&
            !strcmp(e.msg, "b: duplicate tensor name 'w' (already loaded from a)"),
        "a duplicate tensor: status %d, recorded %d, \"%s\"", st, e.status, e.msg);
  wt_store_free(s);
}

int main(void) {
  test_record();
  test_passed_down();
  return th_finish("test_err");
}
