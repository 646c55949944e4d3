#!/usr/bin/env bash
# Device call 8 (H200), on call 7's machine, carry build-pack/ab.tar.xz (this tree's native wgllm-bench after the
# merges of issue 26's error record and issue 27's server work): native A/B against the previous session's build
# (build-dev, from native.tar.xz, already there), the synthetic 8B at 512 tokens, exact and fast, alternated.
# (Run as one command line through the device tool; this file is that line.)
set -u; for f in .gl/*.deb; do dpkg -x "$f" / 2>/dev/null; done; ldconfig
export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json
mkdir -p /tmp/ab && tar -C /tmp/ab -xJf build-pack/ab.tar.xz
P="--kv f16 --gen 32 --runs 3 --prefill-runs 2 --json --precision-list exact,fast"
for rep in 1 2; do for b in build-dev ab; do
  LD_LIBRARY_PATH=/tmp/build-dev timeout 60 /tmp/$b/wgllm-bench --synthetic llama-8b --prompt 512 $P 2>>$OUT/errors.txt |
    grep '^{' | sed "s/^{/{\"build\": \"$b\", \"rep\": $rep, /" >> $OUT/native_ab.jsonl
done; done
