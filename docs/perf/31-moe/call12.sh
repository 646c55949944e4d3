#!/usr/bin/env bash
# Device call 12 of docs/perf/31-moe: batched decode with the pairs grouped by expert (op_moe_lists in the GEMV's
# tiles, kernels/gemv.wgsl "_moet"; build-pack/moe10.tar.xz) against the code before it (call 11's build,
# moe9.tar.xz) and llama.cpp, 8 sequences at context 128, for the three shapes in one call; decode at 128 and prefill
# 128/512 of moe10 against llama.cpp; and a candidate (moe11.tar.xz: wgllm-bench and libwgllm.so.0 of moe10 with the
# prompt's pass through the same GEMV tiles instead of kernels/moe_linear.wgsl's) on prefill 512. First test_ops'
# MoE cases on the GPU (subgroup variants). Carry .gl, build-pack/moe9.tar.xz, moe10.tar.xz, moe11.tar.xz and
# bench/peers/llamacpp/dist.
set -u
T0=$SECONDS
t() { echo "== $(( SECONDS - T0 )) s: $*" | tee -a "$OUT/log.txt"; }
for f in .gl/*.deb; do dpkg -x "$f" / 2>/dev/null; done; ldconfig
export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json
mkdir -p /tmp/b9 /tmp/b /tmp/b11 /tmp/llc
tar -C /tmp/b9 -xJf build-pack/moe9.tar.xz && tar -C /tmp/b -xJf build-pack/moe10.tar.xz &&
  cp -a /tmp/b/. /tmp/b11/ && tar -C /tmp/b11 -xJf build-pack/moe11.tar.xz &&
  tar -xJf bench/peers/llamacpp/dist/llcbench-linux-x64-vulkan.tar.xz -C /tmp/llc
L=$(dirname "$(find /tmp/llc -name llcbench -type f | head -1)")
t "test_ops MoE cases"
( cd tests && LD_LIBRARY_PATH=/tmp/b WGLLM_BIN=/tmp/b timeout 120 /tmp/b/test_ops -f gemv-tiles -f moe_lists -f moe_block \
    -f moe_linear -f moe_down > "$OUT/test_ops.txt" 2>&1; echo "rc=$?" >> "$OUT/test_ops.txt" )
grep -E "FAIL|cases|checks|rc=" "$OUT/test_ops.txt" | tail -6
for M in mixtral-8x7b qwen3-30b-a3b gpt-oss-20b; do
  J=$OUT/$M.jsonl
  tag() { grep '^{' | sed "s/^{/{\"engine\": \"$1\", /" | tee -a "$J"; }
  t "write $M"
  LD_LIBRARY_PATH=/tmp/b /tmp/b/wgllm-bench --synthetic $M --write-gguf /tmp/$M.gguf > /dev/null 2>>"$OUT/errors.txt"
  for e in b9 b; do
    t "$e parallel 8"
    LD_LIBRARY_PATH=/tmp/$e timeout 100 /tmp/$e/wgllm-bench -m /tmp/$M.gguf --parallel 8 --prompt 128 --gen 32 --runs 3 \
      --kv f16 --json --batched-only 2>>"$OUT/errors.txt" | tag "wgllm-$e"
  done
  t "llama.cpp parallel 8"
  timeout 100 $L/llcbench bench /tmp/$M.gguf --backend vulkan --ngl 99 --prompt 128 --gen 32 --runs 3 --kv f16 \
    --sample host --parallel 8 2>>"$OUT/errors.txt" | tag llama.cpp
  t "b decode 128 + prefill 512"
  LD_LIBRARY_PATH=/tmp/b timeout 100 /tmp/b/wgllm-bench -m /tmp/$M.gguf --prompt 128,512 --gen 32 --runs 3 --kv f16 \
    --json 2>>"$OUT/errors.txt" | tag wgllm-b
  t "b11 prefill 512"
  LD_LIBRARY_PATH=/tmp/b11 timeout 60 /tmp/b11/wgllm-bench -m /tmp/$M.gguf --prompt 512 --gen 4 --runs 3 --kv f16 \
    --json 2>>"$OUT/errors.txt" | tag wgllm-b11
  for P in 128 512; do
    t "llama.cpp prompt $P"
    timeout 80 $L/llcbench bench /tmp/$M.gguf --backend vulkan --ngl 99 --prompt $P --gen 32 --runs 3 --kv f16 \
      --sample host 2>>"$OUT/errors.txt" | tag llama.cpp
  done
  rm -f /tmp/$M.gguf
done
t end
tail -5 "$OUT/errors.txt" 2>/dev/null
