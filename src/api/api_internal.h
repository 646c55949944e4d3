/* What the files of the public API share and nothing else may call: the thread's last-error message, the log. */
#ifndef WGLLM_API_INTERNAL_H
#define WGLLM_API_INTERNAL_H
#include "wgllm.h"
/* Sets the message wgllm_last_error() returns on this thread. */
void api_set_last_error(const char *fmt, ...);
/* Sets it to "PATH: REASON", or to REASON alone where the reason already begins with the path (the GGUF reader
   and the config parser name the file themselves). Returns st. */
wgllm_status api_fail_at(wgllm_status st, const char *path, const char *reason);
/* Sends a message to the log callback (wgllm_set_log), if any. */
void api_log(wgllm_log_level level, const char *fmt, ...);
#endif
