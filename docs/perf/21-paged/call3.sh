#!/usr/bin/env bash
# Device call 3 (H200), carry .gl, build-pack/attnp.tar.xz (Dawn) and build-pack/attnr.tar.xz (bench_kernels with
# flash-decoding's forced chunk allowed up to 512 keys): bench_kernels --attn (chunks auto, 16 to 512) twice.
# (Run as one command line through the device tool; this file is that line.)
set -u; for f in .gl/*.deb; do dpkg -x "$f" / 2>/dev/null; done; ldconfig
export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json
mkdir -p /tmp/p /tmp/r && tar -C /tmp/p -xJf build-pack/attnp.tar.xz && tar -C /tmp/r -xJf build-pack/attnr.tar.xz
for rep in 1 2; do echo "== rep $rep" >> $OUT/attn.txt
  LD_LIBRARY_PATH=/tmp/p timeout 200 /tmp/r/bench_kernels --attn --shapes 1b,8b --types none 2>&1 | grep '^attn' >> $OUT/attn.txt
done; grep -E "pos (4000|8000).*(auto|128|256|512) +subgroups" $OUT/attn.txt
