#!/usr/bin/env bash
# Device call 24 of docs/perf/31-moe (2026-12-06): gpt-oss batched decode (8 sessions) with call 23's vB layouts (the
# MXFP4 word steps, the experts' gate/up on 128 lanes x 2 thread-rows, their down on 128 lanes x 1) against moe25
# (call 21's block steps, the best batched figure so far: 505.2 and 507.6). Carry .gl, build-pack/moe26.tar.xz (Dawn),
# vB.tar.xz and moe25.tar.xz.
set -u
T0=$SECONDS
t() { echo "== $(( SECONDS - T0 )) s: $*" | tee -a "$OUT/log.txt"; }
for f in .gl/*.deb; do dpkg -x "$f" / 2>/dev/null; done; ldconfig
export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json
mkdir -p /tmp/b /tmp/vB /tmp/b25
tar -C /tmp/b -xJf build-pack/moe26.tar.xz && tar -C /tmp/vB -xJf build-pack/vB.tar.xz &&
  tar -C /tmp/b25 -xJf build-pack/moe25.tar.xz ./wgllm-bench
export LD_LIBRARY_PATH=/tmp/b
J=$OUT/results.jsonl
t "write gpt-oss-20b"
/tmp/b/wgllm-bench --synthetic gpt-oss-20b --write-gguf /tmp/gpt-oss-20b.gguf > /dev/null 2>>"$OUT/errors.txt"
for v in vB b25; do
  t "$v parallel 8"
  timeout 60 /tmp/$v/wgllm-bench -m /tmp/gpt-oss-20b.gguf --runs 3 --kv f16 --json --parallel 8 --prompt 128 --gen 32 \
    --batched-only 2>>"$OUT/errors.txt" | grep '^{' | sed "s/^{/{\"engine\": \"wgllm-$v\", /" | tee -a "$J"
done
t end
