#!/usr/bin/env bash
# Device call 37 of docs/perf/31-moe (written 2026-12-07, not run yet): the ranking's fill bounded to the words the
# count reads (build fb of mkvars37.sh, pack build-pack/var37.tar.xz) against main (m34: 222474c's build), decode at
# 128 on Mixtral-8x7B (2.1% slower with the word count in calls 35-36), Qwen3-30B-A3B and gpt-oss-20b, each m, fb, m;
# then bench_kernels' sweep of the exact GEMV's layouts on the 8B's shapes in Q4_K and Q6_K (the GLU gate/up's plan
# streams 1,147 GB/s of Q4_K where the LM head's streams 1,713: call 36). Carry .gl, build-pack and
# bench/peers/llamacpp/dist. What would pass LIMIT s (default 560) is skipped.
set -u
T0=$SECONDS
t() { echo "== $(( SECONDS - T0 )) s: $*" | tee -a "$OUT/log.txt"; }
left() { [ $(( SECONDS - T0 + $1 )) -lt ${LIMIT:-560} ] || { t "skipped: $2"; false; }; }
for f in .gl/*.deb; do dpkg -x "$f" / 2>/dev/null; done; ldconfig
export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json
mkdir -p /tmp/b /tmp/var/m
tar -C /tmp/b -xJf build-pack/main28.tar.xz ./libwebgpu_wrapper.so && tar -C /tmp/var/m -xJf build-pack/m34.tar.xz &&
  tar -C /tmp/var -xJf build-pack/var37.tar.xz ./fb
export LD_LIBRARY_PATH=/tmp/b:/tmp/var/m
nvidia-smi --query-gpu=name,clocks.max.sm,clocks.max.mem --format=csv,noheader | tee -a "$OUT/log.txt"
tag() { grep '^{' | sed "s/^{/{\"engine\": \"$1\", \"shape\": \"$M\", /" | tee -a "$OUT/results.jsonl"; }
for M in mixtral-8x7b qwen3-30b-a3b gpt-oss-20b; do
  left 120 "$M" || continue
  t "write $M"
  /tmp/var/m/wgllm-bench --synthetic $M --write-gguf /tmp/$M.gguf > /dev/null 2>>"$OUT/errors.txt"
  for w in m fb m; do
    left 40 "$w $M" || continue; t "$w $M decode 128"
    timeout 40 /tmp/var/$w/wgllm-bench -m /tmp/$M.gguf --prompt 128 --gen 32 --runs 3 --kv f16 --json \
      2>>"$OUT/errors.txt" | tag wgllm-$w
  done
  rm -f /tmp/$M.gguf
done
if left 90 "bench_kernels --sweep"; then
  t "bench_kernels --sweep: the exact GEMV's layouts on the 8B's shapes, Q4_K and Q6_K"
  timeout 85 /tmp/var/m/bench_kernels --shapes 8b --types q4k,q6k --sweep > "$OUT/sweep.txt" 2>&1
fi
t end
