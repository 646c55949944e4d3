/* Looking up the developer kernel variants (see dev_kernels.h). */
#include "dev_kernels.h"
#include <string.h>

const gpu_kernel_source *dev_kernel_find(const char *kernel, const char *variant) {
  for (size_t i = 0; i < dev_kernel_source_count; i++)
    if (!strcmp(dev_kernel_sources[i].kernel, kernel) && !strcmp(dev_kernel_sources[i].variant, variant))
      return &dev_kernel_sources[i];
  return NULL;
}
