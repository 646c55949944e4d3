/* Version and status names of the public API. */
#include "wgllm.h"

const char *wgllm_version(void) { return "0.1.0"; }

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
  }
  return "WGLLM_ERR_UNKNOWN";
}
