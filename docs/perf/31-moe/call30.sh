#!/usr/bin/env bash
# Device call 30 of docs/perf/31-moe (written 2026-12-07, run right after call 28 on the same machine): main's own
# fixtures on the GPU -- test_moe (every MoE family's HF and GGUF fixtures, run / chat / serve through main's CLI) and
# test_models (every dense family) -- then call 29's comparison: main (7c57900, m29) against efed18f (b) and llama.cpp,
# Qwen3-30B-A3B decode at 128, and test_ops' f32 GEMV and expert cases. Carry .gl, build-pack/{main28,m29,fixtures,
# models,tok}.tar.xz and bench/peers/llamacpp/dist. What would pass LIMIT s (default 560) is skipped.
set -u
T0=$SECONDS
t() { echo "== $(( SECONDS - T0 )) s: $*" | tee -a "$OUT/log.txt"; }
left() { [ $(( SECONDS - T0 + $1 )) -lt ${LIMIT:-560} ] || { t "skipped: $2"; false; }; }
for f in .gl/*.deb; do dpkg -x "$f" / 2>/dev/null; done; ldconfig
export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json
mkdir -p /tmp/b /tmp/m /tmp/llc tests/data
tar -C /tmp/b -xJf build-pack/main28.tar.xz ./libwebgpu_wrapper.so ./wgllm-bench && tar -C /tmp/m -xJf build-pack/m29.tar.xz &&
  tar -C tests/data -xJf build-pack/fixtures.tar.xz && tar -xJf build-pack/models.tar.xz && tar -xJf build-pack/tok.tar.xz
tar -xJf bench/peers/llamacpp/dist/llcbench-linux-x64-vulkan.tar.xz -C /tmp/llc
L=$(dirname "$(find /tmp/llc -name llcbench -type f | head -1)")
export LD_LIBRARY_PATH=/tmp/b:/tmp/m
nvidia-smi --query-gpu=name,clocks.max.sm,clocks.max.mem --format=csv,noheader | tee -a "$OUT/log.txt"
tag() { grep '^{' | sed "s/^{/{\"engine\": \"$1\", /" | tee -a "$OUT/results.jsonl"; }
for x in moe models; do
  left 60 "test_$x" || continue
  t "test_$x"
  ( cd tests && WGLLM_BIN=/tmp/m timeout $(( ${LIMIT:-560} - SECONDS + T0 - 150 )) /tmp/m/test_$x > /tmp/test_$x.txt 2>&1
    echo "rc=$?" >> /tmp/test_$x.txt )
  grep -E "^FAIL" /tmp/test_$x.txt | head -12 | tee -a "$OUT/log.txt"; grep -E "checks|rc=" /tmp/test_$x.txt | tail -3 | tee -a "$OUT/log.txt"
  cp /tmp/test_$x.txt "$OUT/test_$x.txt"
done
t "write qwen3-30b-a3b"
/tmp/m/wgllm-bench --synthetic qwen3-30b-a3b --write-gguf /tmp/q3.gguf > /dev/null 2>>"$OUT/errors.txt"
for e in m b; do
  left 25 "$e q3" || continue
  t "$e q3"
  timeout 40 /tmp/$e/wgllm-bench -m /tmp/q3.gguf --prompt 128 --gen 32 --runs 3 --kv f16 --json 2>>"$OUT/errors.txt" |
    tag "wgllm-$e"
done
if left 25 "llama.cpp q3"; then
  t "llama.cpp q3"
  timeout 40 $L/llcbench bench /tmp/q3.gguf --backend vulkan --ngl 99 --prompt 128 --gen 32 --runs 3 --kv f16 \
    --sample host 2>>"$OUT/errors.txt" | tag llama.cpp
fi
if left 30 "test_ops f32 GEMV and expert GEMV"; then
  t "test_ops f32 GEMV and expert GEMV cases"
  ( cd tests && timeout 30 /tmp/m/test_ops -f gemv/f32 -f gemv_experts 2>&1 | grep -E "^FAIL|^test_ops" | tee -a "$OUT/log.txt" )
fi
t end
