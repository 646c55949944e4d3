#!/usr/bin/env bash
# Device call 16 of docs/perf/31-moe (2026-12-06): the experts' prompt tiles sized to the pairs an expert gets
# (op_moe_tile_m: 16, 32 or 64 pairs; 2d2184e) and the lists kernel without a pass over all pairs a thread (pack
# moe16, the commit after it) against 3c75587's 64-pair tiles (pack moe15), both precisions, prefill 128/512 on the
# three shapes; a profile of Qwen3-30B-A3B's prefill 512; test_ops' tile, lists and int8 tile cases on the GPU first
# (line-buffered: call 15's run was cut at 70 s with its output still buffered). Five files come back.
# Carry .gl, build-pack/moe15.tar.xz, build-pack/moe16.tar.xz and bench/peers/llamacpp/dist.
set -u
T0=$SECONDS
t() { echo "== $(( SECONDS - T0 )) s: $*" | tee -a "$OUT/log.txt"; }
for f in .gl/*.deb; do dpkg -x "$f" / 2>/dev/null; done; ldconfig
export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json
mkdir -p /tmp/b15 /tmp/b16
tar -C /tmp/b15 -xJf build-pack/moe15.tar.xz && tar -C /tmp/b16 -xJf build-pack/moe16.tar.xz
J=$OUT/results.jsonl
tag() { grep '^{' | sed "s/^{/{\"engine\": \"$1\", /" | tee -a "$J"; }
bench() { # build model
  LD_LIBRARY_PATH=/tmp/$1 timeout 100 /tmp/$1/wgllm-bench -m /tmp/$2.gguf --prompt 128,512 --gen 8 --runs 3 --kv f16 \
    --precision-list exact,fast --json 2>>"$OUT/errors.txt" | tag "wgllm-$1"
}
t "test_ops tile, lists and int8 tile cases (moe16)"
( cd tests && LD_LIBRARY_PATH=/tmp/b16 WGLLM_BIN=/tmp/b16 timeout 110 stdbuf -oL -eL /tmp/b16/test_ops -f /tiles/ \
    -f /per-expert/ -f tiles_q8 -f moe_lists -f moe_block > "$OUT/test_ops.txt" 2>&1; echo "rc=$?" >> "$OUT/test_ops.txt" )
grep -E "FAIL|cases|checks|rc=" "$OUT/test_ops.txt" | tail -6
for M in qwen3-30b-a3b gpt-oss-20b mixtral-8x7b; do
  t "write $M"
  LD_LIBRARY_PATH=/tmp/b16 /tmp/b16/wgllm-bench --synthetic $M --write-gguf /tmp/$M.gguf > /dev/null 2>>"$OUT/errors.txt"
  t "b16 $M"; bench b16 $M
  t "b15 $M"; bench b15 $M
  if [ $M = qwen3-30b-a3b ]; then
    t "b16 $M profile of prefill 512"
    LD_LIBRARY_PATH=/tmp/b16 timeout 60 /tmp/b16/wgllm-bench -m /tmp/$M.gguf --prompt 512 --gen 4 --runs 1 --kv f16 \
      --profile >> "$OUT/profiles.txt" 2>&1
  fi
  rm -f /tmp/$M.gguf
done
t end
