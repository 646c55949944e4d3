#!/usr/bin/env bash
# Device call 12 of docs/perf/31-moe: batched decode with the pairs grouped by expert (op_moe_lists in the GEMV's
# tiles, kernels/gemv.wgsl "_moet"; build-pack/moe10.tar.xz) against the code before it (call 11's build,
# moe9.tar.xz) and llama.cpp, 8 sequences at context 128, for the three shapes in one call; decode at 128 and prefill
# 128/512 of moe10 against llama.cpp; and a candidate (moe11.tar.xz: wgllm-bench and libwgllm.so.0 of moe10 with the
# prompt's pass through the same GEMV tiles instead of kernels/moe_linear.wgsl's) on prefill 512. First test_ops'
# MoE cases on the GPU (subgroup variants), and bench_kernels' GEMV sweep of MXFP4 against Q4_K and Q8_0 on the 8B's
# shapes and one gpt-oss-20b expert's (as dense GEMVs), and gpt-oss-20b's decode with MXFP4 split in quants and exponents
# (moe12.tar.xz: wgllm-bench and bench_kernels of the working tree). Carry .gl, build-pack/moe9.tar.xz, moe10.tar.xz, moe11.tar.xz, moe12.tar.xz and
# bench/peers/llamacpp/dist.
set -u
T0=$SECONDS
t() { echo "== $(( SECONDS - T0 )) s: $*" | tee -a "$OUT/log.txt"; }
for f in .gl/*.deb; do dpkg -x "$f" / 2>/dev/null; done; ldconfig
export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json
mkdir -p /tmp/b9 /tmp/b /tmp/b11 /tmp/b12 /tmp/llc
tar -C /tmp/b9 -xJf build-pack/moe9.tar.xz && tar -C /tmp/b -xJf build-pack/moe10.tar.xz &&
  cp -a /tmp/b/. /tmp/b11/ && tar -C /tmp/b11 -xJf build-pack/moe11.tar.xz &&
  cp -a /tmp/b/. /tmp/b12/ && tar -C /tmp/b12 -xJf build-pack/moe12.tar.xz &&
  tar -xJf bench/peers/llamacpp/dist/llcbench-linux-x64-vulkan.tar.xz -C /tmp/llc
L=$(dirname "$(find /tmp/llc -name llcbench -type f | head -1)")
t "bench_kernels: the MXFP4 GEMV against Q4_K and Q8_0 on the same shapes"
( cd /tmp/b && LD_LIBRARY_PATH=/tmp/b timeout 60 ./bench_kernels --shapes goss --types mxfp4 --sweep > "$OUT/sweep.txt" 2>&1
  echo "rc=$? (above: moe10, MXFP4 as the file's 17-byte blocks; below: moe12, split)" >> "$OUT/sweep.txt"
  LD_LIBRARY_PATH=/tmp/b timeout 60 /tmp/b12/bench_kernels --shapes goss --types mxfp4 --sweep >> "$OUT/sweep.txt" 2>&1
  echo "rc=$? (below: moe12, the 8B's shapes)" >> "$OUT/sweep.txt"
  LD_LIBRARY_PATH=/tmp/b timeout 45 /tmp/b12/bench_kernels --shapes 8b --types mxfp4,q4k,q8 >> "$OUT/sweep.txt" 2>&1
  echo "rc=$?" >> "$OUT/sweep.txt" )
grep -E "default|rc=" "$OUT/sweep.txt" | grep -v lm_head | head -24
for M in gpt-oss-20b mixtral-8x7b qwen3-30b-a3b; do
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
  if [ $M = gpt-oss-20b ]; then
    t "b12 decode 128 + parallel 8"
    LD_LIBRARY_PATH=/tmp/b12 timeout 60 /tmp/b12/wgllm-bench -m /tmp/$M.gguf --prompt 128 --gen 32 --runs 3 --kv f16 \
      --json 2>>"$OUT/errors.txt" | tag wgllm-b12
    LD_LIBRARY_PATH=/tmp/b12 timeout 60 /tmp/b12/wgllm-bench -m /tmp/$M.gguf --parallel 8 --prompt 128 --gen 32 \
      --runs 3 --kv f16 --json --batched-only 2>>"$OUT/errors.txt" | tag wgllm-b12
  fi
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
t "test_ops MoE cases"
( cd tests && LD_LIBRARY_PATH=/tmp/b WGLLM_BIN=/tmp/b timeout 60 /tmp/b/test_ops -f gemv-tiles -f moe_lists -f moe_block \
    -f moe_linear -f moe_down > "$OUT/test_ops.txt" 2>&1; echo "rc=$?" >> "$OUT/test_ops.txt" )
grep -E "FAIL|cases|checks|rc=" "$OUT/test_ops.txt" | tail -6
t end
tail -5 "$OUT/errors.txt" 2>/dev/null
