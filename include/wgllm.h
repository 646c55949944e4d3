/* wgllm public C API: status codes, version, GPU info. Later issues add models and sessions here.
   All handles are opaque; every fallible call returns a wgllm_status and leaves a message on its handle. */
#ifndef WGLLM_H
#define WGLLM_H
#include <stddef.h>
#include <stdint.h>
#ifdef __cplusplus
extern "C" {
#endif

#define WGLLM_VERSION_MAJOR 0
#define WGLLM_VERSION_MINOR 1
#define WGLLM_VERSION_PATCH 0

typedef enum wgllm_status {
  WGLLM_OK = 0,
  WGLLM_ERR_INVALID_ARG = 1,  /* a caller-supplied value is out of range or malformed */
  WGLLM_ERR_IO = 2,           /* a file could not be opened, read or mapped */
  WGLLM_ERR_FORMAT = 3,       /* a file is corrupt, truncated or inconsistent */
  WGLLM_ERR_UNSUPPORTED = 4,  /* valid input the engine does not handle (architecture, dtype, shape) */
  WGLLM_ERR_OUT_OF_MEMORY = 5,/* host or device memory was refused */
  WGLLM_ERR_NO_ADAPTER = 6,   /* no WebGPU adapter / device could be created */
  WGLLM_ERR_GPU = 7,          /* a WebGPU validation or internal error */
  WGLLM_ERR_DEVICE_LOST = 8,  /* the device was lost; the handle must be recreated */
  WGLLM_ERR_INTERNAL = 9      /* a bug in wgllm */
} wgllm_status;

/* "0.1.0" */
const char *wgllm_version(void);
/* Short constant name of a status ("WGLLM_ERR_FORMAT"). */
const char *wgllm_status_name(wgllm_status s);

#ifdef __cplusplus
}
#endif
#endif
