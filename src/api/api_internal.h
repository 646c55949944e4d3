/* What the files of the public API share and nothing else may call: the thread's last-error message. */
#ifndef WGLLM_API_INTERNAL_H
#define WGLLM_API_INTERNAL_H
/* Sets the message wgllm_last_error() returns on this thread. */
void api_set_last_error(const char *fmt, ...);
#endif
