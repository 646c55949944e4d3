/* File and text helpers of the command-line programs. */
#ifndef WGLLM_CLI_FILE_H
#define WGLLM_CLI_FILE_H
#include <stddef.h>
#include <stdio.h>

/* The offset of the first byte of s that is not valid UTF-8 (overlong, surrogate, past U+10FFFF, cut short),
   or -1 when all of it is. */
long cli_utf8_invalid_at(const char *s);
/* A whole file ("-": standard input) as a NUL-terminated string (malloc'd), its length in *len (may be NULL);
   NULL with errno set on failure. */
char *cli_read_file(const char *path, size_t *len);

/* Writing a file whole or not at all: cli_out_open creates PATH.tmp.PID beside PATH and cli_out_close renames it onto
   PATH when every write succeeded (failed 0, the stream without error, flushed, synced and closed); otherwise it
   removes the temporary file and PATH keeps what it held. A process killed in between leaves PATH whole and the
   temporary file beside it. */
typedef struct cli_out {
  FILE *f;
  const char *path;
  char tmp[4200];
} cli_out;
/* the stream to write (o->f), or NULL with errno set */
void *cli_out_open(cli_out *o, const char *path);
/* 0 when PATH now holds what was written, else -1 with errno set (the temporary file removed) */
int cli_out_close(cli_out *o, int failed);
#endif
