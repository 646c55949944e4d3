#!/usr/bin/env bash
# Device call 4 (H200), carry .gl, build-pack/attnp.tar.xz (Dawn's library), build-pack/ab.tar.xz (the previous
# session's final native wgllm-bench, "before") and build-pack/now.tar.xz (this tree's, after the merges of issue 27's
# branches and the paged attention: "now"): native A/B, synthetic 8B and 1B at 512 tokens, exact and fast, and 8
# sequences batched, alternated, two repetitions.
# (Run as one command line through the device tool; this file is that line.)
set -u; for f in .gl/*.deb; do dpkg -x "$f" / 2>/dev/null; done; ldconfig
export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json
mkdir -p /tmp/p /tmp/before /tmp/now && tar -C /tmp/p -xJf build-pack/attnp.tar.xz && tar -C /tmp/before -xJf build-pack/ab.tar.xz &&
  tar -C /tmp/now -xJf build-pack/now.tar.xz
P="--kv f16 --gen 32 --runs 3 --prefill-runs 2 --json --precision-list exact,fast"
for rep in 1 2; do for m in llama-8b llama-1b; do for b in before now; do
  LD_LIBRARY_PATH=/tmp/p timeout 90 /tmp/$b/wgllm-bench --synthetic $m --prompt 512 $P 2>>$OUT/errors.txt |
    grep '^{' | sed "s/^{/{\"build\": \"$b\", \"rep\": $rep, /" >> $OUT/native_ab.jsonl
  LD_LIBRARY_PATH=/tmp/p timeout 90 /tmp/$b/wgllm-bench --synthetic $m --prompt 128 --parallel 8 --kv f16 --gen 32 --runs 3 --json 2>>$OUT/errors.txt |
    grep '^{' | sed "s/^{/{\"build\": \"$b\", \"rep\": $rep, \"parallel\": 8, /" >> $OUT/native_ab.jsonl
done; done; done
wc -l $OUT/native_ab.jsonl; tail -5 $OUT/errors.txt
