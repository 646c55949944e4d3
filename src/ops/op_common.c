/* Helpers shared by the op files: grid splitting, failure reporting, weight-type variant names. */
#include "ops.h"
#include <stdarg.h>
#include <stdio.h>

gpu_context *op_ctx(const gpu_recorder *rec) { return gpu_recorder_context(rec); }

const char *op_wtype_variant(op_wtype t) {
  switch (t) {
  case OP_W_F16:
    return "f16";
  case OP_W_Q4:
    return "q4";
  case OP_W_Q8:
    return "q8";
  default:
    return "f32";
  }
}

const char *op_wtype_name(op_wtype t) {
  switch (t) {
  case OP_W_F16:
    return "f16";
  case OP_W_Q4:
    return "q4gsw";
  case OP_W_Q8:
    return "q8";
  default:
    return "f32";
  }
}

void op_grid_1d(const gpu_recorder *rec, uint32_t groups, uint32_t grid[3]) {
  uint32_t maxg = op_ctx(rec)->limits.maxComputeWorkgroupsPerDimension;
  if (groups == 0) groups = 1;
  if (groups <= maxg) {
    grid[0] = groups;
    grid[1] = 1;
  } else {
    grid[1] = (groups + maxg - 1) / maxg;
    grid[0] = (groups + grid[1] - 1) / grid[1];
  }
  grid[2] = 1;
}

wgllm_status op_fail(gpu_recorder *rec, wgllm_status s, const char *fmt, ...) {
  char msg[512];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  return gpu_recorder_fail(rec, s, msg);
}
