#!/usr/bin/env bash
# Device call 10 of docs/perf/31-moe: call 9's build with the combined down projection kept to rows of at most 8 steps
# a lane (op_moe_down_combine_supports: Qwen3-30B-A3B's, not gpt-oss-20b's or Mixtral's, whose pairs' GEMV and combine
# run as in call 7). call1.sh's benches for the three shapes against llama.cpp (Mixtral without its profile), then
# bench_kernels' GEMV sweep on gpt-oss-20b's Q8_0 and Qwen3-30B-A3B's Q4_K attention projections and LM heads. Carry
# .gl, build-pack/moe8.tar.xz (stripped build-dev: wgllm, wgllm-bench, bench_kernels, libwgllm.so.0,
# libmicrohttpd.so.12, libwebgpu_wrapper.so) and bench/peers/llamacpp/dist.
set -u
export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json
for M in qwen3-30b-a3b gpt-oss-20b mixtral-8x7b; do
  rm -f /tmp/file.done
  skip=; [ $M = mixtral-8x7b ] && skip=1
  SKIP_PROFILE=$skip PACK=build-pack/moe8.tar.xz SKIP_TESTS=1 MODEL=$M bash docs/perf/31-moe/call1.sh
  rm -f /tmp/$M.gguf
  { echo "== info $M"; head -12 "$OUT/info_$M.txt"; cat "$OUT/write.txt"; } >> "$OUT/log.txt"
  mv "$OUT/info_$M.txt" "$OUT/write.txt" /tmp/ 2>/dev/null
done
( cd /tmp/b && LD_LIBRARY_PATH=/tmp/b timeout 150 ./bench_kernels --shapes goss --types q8 --sweep > "$OUT/sweep.txt" 2>&1
  LD_LIBRARY_PATH=/tmp/b timeout 100 ./bench_kernels --shapes q3moe --types q4k --sweep >> "$OUT/sweep.txt" 2>&1 )
grep default "$OUT/sweep.txt"
