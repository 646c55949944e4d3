/* Version, status and precision names of the public API. */
#include "wgllm.h"

#define WGLLM_STR_(x) #x
#define WGLLM_STR(x) WGLLM_STR_(x)

/* built from the header's macros, so the string cannot drift from them */
const char *wgllm_version(void) {
  return WGLLM_STR(WGLLM_VERSION_MAJOR) "." WGLLM_STR(WGLLM_VERSION_MINOR) "." WGLLM_STR(WGLLM_VERSION_PATCH);
}

const char *wgllm_status_name(wgllm_status s) {
  switch (s) {
  case WGLLM_OK:
    return "WGLLM_OK";
  case WGLLM_ERR_INVALID_ARG:
    return "WGLLM_ERR_INVALID_ARG";
  case WGLLM_ERR_IO:
    return "WGLLM_ERR_IO";
  case WGLLM_ERR_FORMAT:
    return "WGLLM_ERR_FORMAT";
  case WGLLM_ERR_UNSUPPORTED:
    return "WGLLM_ERR_UNSUPPORTED";
  case WGLLM_ERR_OUT_OF_MEMORY:
    return "WGLLM_ERR_OUT_OF_MEMORY";
  case WGLLM_ERR_NO_ADAPTER:
    return "WGLLM_ERR_NO_ADAPTER";
  case WGLLM_ERR_GPU:
    return "WGLLM_ERR_GPU";
  case WGLLM_ERR_DEVICE_LOST:
    return "WGLLM_ERR_DEVICE_LOST";
  case WGLLM_ERR_INTERNAL:
    return "WGLLM_ERR_INTERNAL";
  case WGLLM_ERR_KV_FULL:
    return "WGLLM_ERR_KV_FULL";
  }
  return "WGLLM_ERR_UNKNOWN";
}

const char *wgllm_precision_name(wgllm_precision p) {
  switch (p) {
  case WGLLM_PRECISION_DEFAULT:
    return "default";
  case WGLLM_PRECISION_EXACT:
    return "exact";
  case WGLLM_PRECISION_FAST:
    return "fast";
  }
  return NULL;
}
