#!/usr/bin/env bash
# Device call 2 (H200) of docs/perf/26-spec-all: test_generate at 36fe841 (its spec_every_model_case added after
# call 1: 14 fixtures as stored, lookup and the model as its own draft against plain greedy). Carry .gl and
# build-pack/specall2.tar.xz (stripped build-dev test_generate, libwebgpu_wrapper.so).
set -u
for f in .gl/*.deb; do dpkg -x "$f" / 2>/dev/null; done; ldconfig
export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json
mkdir -p /tmp/b2 && tar -C /tmp/b2 -xJf build-pack/specall2.tar.xz
export LD_LIBRARY_PATH=/tmp/b2
( cd tests && time timeout 300 /tmp/b2/test_generate > "$OUT/test_generate.txt" 2>&1; echo "rc=$?" >> "$OUT/test_generate.txt" )
grep -E "FAIL|checks|rc=|chi2" "$OUT/test_generate.txt" | head -20
