#!/usr/bin/env bash
# Device call 31 of docs/perf/31-moe (written 2026-12-07): why `--precision fast` decodes Qwen3-30B-A3B slower than
# exact (PERF.md: calls 15, 16, 28), and what the experts' ranking costs inside the decode gate/up. Main (m29, 7c57900)
# exact and fast with a profile of each, beside the one-change builds of mkvars31.sh (var31: fq, fx, nr), Qwen3 then
# Mixtral-8x7B (where fast gained). Carry .gl, build-pack/{main28,m29,var31}.tar.xz. What would pass LIMIT s
# (default 560) is skipped.
set -u
T0=$SECONDS
t() { echo "== $(( SECONDS - T0 )) s: $*" | tee -a "$OUT/log.txt"; }
left() { [ $(( SECONDS - T0 + $1 )) -lt ${LIMIT:-560} ] || { t "skipped: $2"; false; }; }
for f in .gl/*.deb; do dpkg -x "$f" / 2>/dev/null; done; ldconfig
export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json
mkdir -p /tmp/b /tmp/var/m
tar -C /tmp/b -xJf build-pack/main28.tar.xz ./libwebgpu_wrapper.so && tar -C /tmp/var/m -xJf build-pack/m29.tar.xz &&
  tar -C /tmp/var -xJf build-pack/var31.tar.xz
export LD_LIBRARY_PATH=/tmp/b
nvidia-smi --query-gpu=name,clocks.max.sm,clocks.max.mem --format=csv,noheader | tee -a "$OUT/log.txt"
tag() { grep '^{' | sed "s/^{/{\"engine\": \"wgllm-$1\", \"shape\": \"$M\", /" | tee -a "$OUT/results.jsonl"; }
run() { # seconds build precisions
  left $1 "$2 $M $3" || return; t "$2 $M $3"
  timeout $1 /tmp/var/$2/wgllm-bench -m /tmp/$M.gguf --prompt 128 --gen 32 --runs 3 --kv f16 --json \
    --precision-list $3 2>>"$OUT/errors.txt" | tag $2
}
prof() { # seconds build precision
  left $1 "$2 $M $3 profile" || return; t "$2 $M $3 profile"
  timeout $1 /tmp/var/$2/wgllm-bench -m /tmp/$M.gguf --prompt 128 --gen 32 --runs 3 --kv f16 --profile \
    --precision-list $3 > "$OUT/profile_${M}_$2_$3.txt" 2>&1
}
M=qwen3-30b-a3b
t "write $M"
/tmp/var/m/wgllm-bench --synthetic $M --write-gguf /tmp/$M.gguf > /dev/null 2>>"$OUT/errors.txt"
run 45 m exact,fast
run 35 fq fast
run 35 fx fast
run 35 nr exact
prof 40 m fast
run 35 m exact
rm -f /tmp/$M.gguf
M=mixtral-8x7b
if left 120 "$M"; then
  t "write $M"
  /tmp/var/m/wgllm-bench --synthetic $M --write-gguf /tmp/$M.gguf > /dev/null 2>>"$OUT/errors.txt"
  run 55 m exact,fast
  run 45 fq fast
  prof 50 m fast
fi
t end
