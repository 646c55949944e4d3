#!/usr/bin/env bash
# Device call 1 (H200), carry .gl and build-pack/attnp.tar.xz (this tree's native bench_kernels and test_ops,
# Release, stripped, with Dawn's libwebgpu_wrapper.so): the paged attention's conformance on the H200
# (test_ops -f paged_ -f flash_decode), then bench_kernels --attn-paged (decode attention of 1-64 sequences: a
# split + reduce pair a sequence, as the batched decode runs it today, against one pair for all over a paged pool).
# (Run as one command line through the device tool; this file is that line.)
set -u; for f in .gl/*.deb; do dpkg -x "$f" / 2>/dev/null; done; ldconfig
export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json
mkdir -p /tmp/ap && tar -C /tmp/ap -xJf build-pack/attnp.tar.xz
cd tests && LD_LIBRARY_PATH=/tmp/ap timeout 200 /tmp/ap/test_ops -f paged_ -f flash_decode > $OUT/test_ops.txt 2>&1
echo "test_ops rc=$?" >> $OUT/test_ops.txt; tail -3 $OUT/test_ops.txt
LD_LIBRARY_PATH=/tmp/ap timeout 300 /tmp/ap/bench_kernels --attn-paged > $OUT/attn_paged.txt 2>&1; cat $OUT/attn_paged.txt
