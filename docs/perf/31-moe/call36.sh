#!/usr/bin/env bash
# Device call 36 of docs/perf/31-moe (written 2026-12-07, for the machine call 35 ran on): main's build (pack m34:
# 222474c) on the GPU -- test_moe (every MoE family's HF and GGUF fixtures, run / chat / serve through its CLI),
# test_models (every dense family), test_ops' routing, self-routed and expert cases -- then the ranking's two counts
# (m34 against m29: 7c57900) at decode 128 on gpt-oss-20b and Mixtral-8x7B with m34's profiles, and bench_kernels'
# exact against int8 decode GEMVs on Q4_K / Q5_K / Q6_K / Q8_0 projection shapes (the fast precision's Qwen3 decode,
# PERF.md call 31). Carry .gl, build-pack and bench/peers/llamacpp/dist; move models/ and tests/data/models out of the
# tree for the upload (the packs hold them). What would pass LIMIT s (default 560) is skipped.
set -u
T0=$SECONDS
t() { echo "== $(( SECONDS - T0 )) s: $*" | tee -a "$OUT/log.txt"; }
left() { [ $(( SECONDS - T0 + $1 )) -lt ${LIMIT:-560} ] || { t "skipped: $2"; false; }; }
for f in .gl/*.deb; do dpkg -x "$f" / 2>/dev/null; done; ldconfig
export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json
mkdir -p /tmp/b /tmp/var/o /tmp/var/m tests/data
tar -C /tmp/b -xJf build-pack/main28.tar.xz ./libwebgpu_wrapper.so && tar -C /tmp/var/o -xJf build-pack/m29.tar.xz &&
  tar -C /tmp/var/m -xJf build-pack/m34.tar.xz && tar -C tests/data -xJf build-pack/fixtures.tar.xz &&
  tar -xJf build-pack/models.tar.xz && tar -xJf build-pack/tok.tar.xz
export LD_LIBRARY_PATH=/tmp/b:/tmp/var/m
nvidia-smi --query-gpu=name,clocks.max.sm,clocks.max.mem --format=csv,noheader | tee -a "$OUT/log.txt"
for x in moe models; do
  left 150 "test_$x" || continue
  t "test_$x"
  ( cd tests && WGLLM_BIN=/tmp/var/m timeout 140 /tmp/var/m/test_$x > /tmp/test_$x.txt 2>&1; echo "rc=$?" >> /tmp/test_$x.txt )
  grep -E "^FAIL" /tmp/test_$x.txt | head -12 | tee -a "$OUT/log.txt"
  grep -E "checks|rc=" /tmp/test_$x.txt | tail -3 | tee -a "$OUT/log.txt"
  cp /tmp/test_$x.txt "$OUT/test_$x.txt"
done
if left 40 "test_ops"; then
  t "test_ops routing, self-routed and expert cases"
  ( cd tests && timeout 40 /tmp/var/m/test_ops -f moe_route -f moe_linear -f gemv_experts 2>&1 |
    grep -E "^FAIL|^test_ops" | head -20 | tee -a "$OUT/log.txt" )
fi
tag() { grep '^{' | sed "s/^{/{\"engine\": \"$1\", \"shape\": \"$M\", /" | tee -a "$OUT/results.jsonl"; }
for M in gpt-oss-20b mixtral-8x7b; do
  left 120 "$M" || continue
  t "write $M"
  /tmp/var/m/wgllm-bench --synthetic $M --write-gguf /tmp/$M.gguf > /dev/null 2>>"$OUT/errors.txt"
  for w in m o m; do
    left 40 "$w $M" || continue; t "$w $M decode 128"
    timeout 40 /tmp/var/$w/wgllm-bench -m /tmp/$M.gguf --prompt 128 --gen 32 --runs 3 --kv f16 --json \
      2>>"$OUT/errors.txt" | tag wgllm-$w
  done
  if left 40 "m $M profile"; then
    t "m $M decode profile"
    timeout 40 /tmp/var/m/wgllm-bench -m /tmp/$M.gguf --prompt 128 --gen 32 --runs 3 --kv f16 --profile \
      > "$OUT/profile_$M.txt" 2>&1
  fi
  rm -f /tmp/$M.gguf
done
if left 60 "bench_kernels --int8"; then
  t "bench_kernels --int8: exact and int8 decode GEMVs on Qwen3's and the 8B's (Mixtral's) projection shapes"
  timeout 55 /tmp/var/m/bench_kernels --shapes q3moe,8b --types q4k,q5k,q6k,q8 --int8 > "$OUT/int8.txt" 2>&1
fi
t end
