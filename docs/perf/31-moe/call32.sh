#!/usr/bin/env bash
# Device call 32 of docs/perf/31-moe (written 2026-12-07): where the ranking's cost inside Qwen3-30B-A3B's decode
# gate/up lies (call 31: the step 341 us shorter when the gate/up ranks nothing, build nr). Main (m29) beside the
# one-change builds of mkvars31.sh (var31: nr, r0, ub, uw), Qwen3 decode at 128 exact, then gpt-oss-20b (main, ub, uw).
# Carry .gl, build-pack/{main28,m29,var31}.tar.xz. What would pass LIMIT s (default 420) is skipped.
set -u
T0=$SECONDS
t() { echo "== $(( SECONDS - T0 )) s: $*" | tee -a "$OUT/log.txt"; }
left() { [ $(( SECONDS - T0 + $1 )) -lt ${LIMIT:-420} ] || { t "skipped: $2"; false; }; }
for f in .gl/*.deb; do dpkg -x "$f" / 2>/dev/null; done; ldconfig
export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json
mkdir -p /tmp/b /tmp/var/m
tar -C /tmp/b -xJf build-pack/main28.tar.xz ./libwebgpu_wrapper.so && tar -C /tmp/var/m -xJf build-pack/m29.tar.xz &&
  tar -C /tmp/var -xJf build-pack/var31.tar.xz
export LD_LIBRARY_PATH=/tmp/b
nvidia-smi --query-gpu=name,clocks.max.sm,clocks.max.mem --format=csv,noheader | tee -a "$OUT/log.txt"
tag() { grep '^{' | sed "s/^{/{\"engine\": \"wgllm-$1\", \"shape\": \"$M\", /" | tee -a "$OUT/results.jsonl"; }
run() { # seconds build
  left $1 "$2 $M" || return; t "$2 $M"
  timeout $1 /tmp/var/$2/wgllm-bench -m /tmp/$M.gguf --prompt 128 --gen 32 --runs 3 --kv f16 --json 2>>"$OUT/errors.txt" |
    tag $2
}
M=qwen3-30b-a3b
t "write $M"
/tmp/var/m/wgllm-bench --synthetic $M --write-gguf /tmp/$M.gguf > /dev/null 2>>"$OUT/errors.txt"
for v in m nr r0 ub uw m; do run 35 $v; done
rm -f /tmp/$M.gguf
M=gpt-oss-20b
if left 90 "$M"; then
  t "write $M"
  /tmp/var/m/wgllm-bench --synthetic $M --write-gguf /tmp/$M.gguf > /dev/null 2>>"$OUT/errors.txt"
  for v in m ub uw; do run 30 $v; done
fi
t end
