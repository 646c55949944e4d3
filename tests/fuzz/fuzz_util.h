/* Helpers the fuzz harnesses of tests/fuzz share: handing an input to the path-based loaders (a memfd, or a
   file in a private /tmp directory), a fatal check that makes libFuzzer report a wrong result as a crash, the
   repository's own files (the reference tokenizers), and the tokenizer properties every harness that ends
   with a tokenizer asserts (encode, decode, the streaming decoder). No harness creates a WebGPU device. */
#ifndef WGLLM_FUZZ_UTIL_H
#define WGLLM_FUZZ_UTIL_H
#include "tokenizer.h"
#include <stddef.h>
#include <stdint.h>

/* the entry points libFuzzer calls (and tests/fuzz/replay_main.c, in ordinary builds) */
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerInitialize(int *argc, char ***argv);

/* aborts with the message (file:line first) when cond is false: the fuzzer reports it with the input */
#define FUZZ_CHECK(cond, ...)                                                                                          \
  do {                                                                                                                 \
    if (!(cond)) fuzz_fail(__FILE__, __LINE__, #cond, __VA_ARGS__);                                                    \
  } while (0)
_Noreturn void fuzz_fail(const char *file, int line, const char *cond, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

/* With FUZZ_VERBOSE set in the environment, prints the note (why an input was refused: for checking seeds). */
void fuzz_note(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* A path ("/proc/self/fd/N") naming a memfd that holds exactly data[size]; the same fd is reused by every call
   of one process (so what the previous call's loader mapped must be released first). */
const char *fuzz_memfd_path(const uint8_t *data, size_t size);
/* A private directory under /tmp made once per process (removed with its files at exit). */
const char *fuzz_tmpdir(void);
/* Writes data[size] to dir/name (replacing it); aborts on an I/O error. Returns the path (static buffer). */
const char *fuzz_write_file(const char *dir, const char *name, const void *data, size_t size);

/* The repository root (WGLLM_SOURCE_DIR, compiled in; the environment variable of that name overrides it). */
const char *fuzz_source_dir(void);

/* Strict UTF-8 check, independent of the tokenizer's (0 and *bad = first bad byte when invalid). */
int fuzz_utf8_valid(const char *text, size_t n, size_t *bad);

/* Checks on a loaded tokenizer t for one text (any bytes):
   - tok_encode refuses invalid UTF-8 with WGLLM_ERR_INVALID_ARG and accepts valid UTF-8;
   - every id it returns is in the vocabulary and tok_decode accepts the ids (with and without specials);
   - the streaming decoder (4-byte and large buffers) gives exactly the bytes of the whole decode, whenever
     the whole decode holds no U+FFFD (tokenizer.h: the two differ only on invalid byte runs).
   flags: bit 0 parse_special, bit 1 add_special. (Round trips are the encode harness's: they depend on the
   tokenizer.) */
void fuzz_check_tokenizer(const tokenizer *t, const char *text, size_t len, int flags);
/* Decode/stream agreement on arbitrary ids (reduced into the vocabulary, plus one out-of-range id that both
   must refuse/skip). */
void fuzz_check_ids(const tokenizer *t, const int32_t *ids, size_t n);
/* A few fixed texts through fuzz_check_tokenizer (no round-trip claim): for tokenizers the fuzzer built. */
void fuzz_exercise_tokenizer(const tokenizer *t);

#endif
