#!/usr/bin/env bash
# Device call 34 of docs/perf/31-moe (written 2026-12-07, not run yet): the ranking that counts four logits a word
# (6524f5c, pack build-pack/m34.tar.xz: its wgllm, libwgllm.so.0, libmicrohttpd.so.12, wgllm-bench, test_ops, test_moe,
# test_models, bench_kernels) against the count before it (m29: 7c57900) and the build that does not rank (nr of
# var31.tar.xz, wrong results, timing only), decode at 128 of Qwen3-30B-A3B (m34's profile too), gpt-oss-20b and
# Mixtral-8x7B with llama.cpp beside; then m34's test_ops routing / self-routed / expert cases and test_moe on the
# GPU, and bench_kernels' exact against int8 decode GEMVs on Q4_K / Q5_K / Q6_K / Q8_0 projection shapes (the fast
# precision's Qwen3 decode, PERF.md call 31). Carry .gl, build-pack/{main28,m29,m34,var31,fixtures,models,tok}.tar.xz and bench/peers/llamacpp/dist (move
# models/ and tests/data/models out of the tree for the upload). What would pass LIMIT s (default 560) is skipped.
set -u
T0=$SECONDS
t() { echo "== $(( SECONDS - T0 )) s: $*" | tee -a "$OUT/log.txt"; }
left() { [ $(( SECONDS - T0 + $1 )) -lt ${LIMIT:-560} ] || { t "skipped: $2"; false; }; }
for f in .gl/*.deb; do dpkg -x "$f" / 2>/dev/null; done; ldconfig
export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json
mkdir -p /tmp/b /tmp/var/o /tmp/var/m /tmp/llc tests/data
tar -C /tmp/b -xJf build-pack/main28.tar.xz ./libwebgpu_wrapper.so && tar -C /tmp/var/o -xJf build-pack/m29.tar.xz &&
  tar -C /tmp/var/m -xJf build-pack/m34.tar.xz && tar -C /tmp/var -xJf build-pack/var31.tar.xz ./nr &&
  tar -C tests/data -xJf build-pack/fixtures.tar.xz && tar -xJf build-pack/models.tar.xz && tar -xJf build-pack/tok.tar.xz
tar -xJf bench/peers/llamacpp/dist/llcbench-linux-x64-vulkan.tar.xz -C /tmp/llc
L=$(dirname "$(find /tmp/llc -name llcbench -type f | head -1)")
export LD_LIBRARY_PATH=/tmp/b:/tmp/var/m
nvidia-smi --query-gpu=name,clocks.max.sm,clocks.max.mem --format=csv,noheader | tee -a "$OUT/log.txt"
tag() { grep '^{' | sed "s/^{/{\"engine\": \"$1\", \"shape\": \"$M\", /" | tee -a "$OUT/results.jsonl"; }
run() { # seconds build
  left $1 "$2 $M" || return; t "$2 $M"
  timeout $1 /tmp/var/$2/wgllm-bench -m /tmp/$M.gguf --prompt 128 --gen 32 --runs 3 --kv f16 --json 2>>"$OUT/errors.txt" |
    tag wgllm-$2
}
llc() {
  left 40 "llama.cpp $M" || return; t "llama.cpp $M"
  timeout 40 $L/llcbench bench /tmp/$M.gguf --backend vulkan --ngl 99 --prompt 128 --gen 32 --runs 3 --kv f16 \
    --sample host 2>>"$OUT/errors.txt" | tag llama.cpp
}
for M in qwen3-30b-a3b gpt-oss-20b mixtral-8x7b; do
  left 90 "$M" || continue
  t "write $M"
  /tmp/var/m/wgllm-bench --synthetic $M --write-gguf /tmp/$M.gguf > /dev/null 2>>"$OUT/errors.txt"
  run 40 m; run 40 o
  if [ $M = qwen3-30b-a3b ]; then
    run 35 nr
    if left 40 "m profile"; then
      t "m $M profile"
      timeout 40 /tmp/var/m/wgllm-bench -m /tmp/$M.gguf --prompt 128 --gen 32 --runs 3 --kv f16 --profile \
        > "$OUT/profile_$M.txt" 2>&1
    fi
  fi
  llc
  run 40 m
  rm -f /tmp/$M.gguf
done
if left 40 "test_ops"; then
  t "test_ops routing, self-routed and expert cases"
  ( cd tests && timeout 40 /tmp/var/m/test_ops -f moe_route -f moe_linear -f gemv_experts 2>&1 |
    grep -E "^FAIL|^test_ops" | head -20 | tee -a "$OUT/log.txt" )
fi
if left 90 "test_moe"; then
  t "test_moe"
  ( cd tests && WGLLM_BIN=/tmp/var/m timeout 80 /tmp/var/m/test_moe > /tmp/test_moe.txt 2>&1; echo "rc=$?" >> /tmp/test_moe.txt )
  grep -E "^FAIL" /tmp/test_moe.txt | head -10 | tee -a "$OUT/log.txt"; grep -E "checks|rc=" /tmp/test_moe.txt | tail -2 | tee -a "$OUT/log.txt"
  cp /tmp/test_moe.txt "$OUT/test_moe.txt"
fi
if left 60 "bench_kernels --int8"; then
  t "bench_kernels --int8: exact and int8 decode GEMVs on Qwen3's and the 8B's (Mixtral's) projection shapes"
  timeout 55 /tmp/var/m/bench_kernels --shapes q3moe,8b --types q4k,q5k,q6k,q8 --int8 > "$OUT/int8.txt" 2>&1
fi
t end
