/* File and text helpers of the command-line programs. */
#ifndef WGLLM_CLI_FILE_H
#define WGLLM_CLI_FILE_H
#include <stddef.h>

/* The offset of the first byte of s that is not valid UTF-8 (overlong, surrogate, past U+10FFFF, cut short),
   or -1 when all of it is. */
long cli_utf8_invalid_at(const char *s);
/* A whole file ("-": standard input) as a NUL-terminated string (malloc'd), its length in *len (may be NULL);
   NULL with errno set on failure. */
char *cli_read_file(const char *path, size_t *len);
#endif
