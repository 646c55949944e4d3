/* The kernel variants for benchmarks and tests only: the dev=1 variant lines of the templates in kernels/, which
   kernelgen writes into their own table (build/generated/kernels_dev_gen.c) that only wgllm_dev compiles, so the
   library holds none of them. A dispatch runs one by naming its source (gpu_dispatch_desc.source). */
#ifndef WGLLM_DEV_KERNELS_H
#define WGLLM_DEV_KERNELS_H
#include "gpu.h"

extern const gpu_kernel_source dev_kernel_sources[]; /* dev_kernel_source_count entries */
extern const size_t dev_kernel_source_count;
/* NULL when kernel/variant is not a developer variant */
const gpu_kernel_source *dev_kernel_find(const char *kernel, const char *variant);
#endif
