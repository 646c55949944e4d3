#!/usr/bin/env bash
# Device call 18 of docs/perf/31-moe (2026-12-06): the folded router as 792a524 has it (the gate/up's weights written
# before its main loop again, the router's rows first in the output projection, a workgroup a row; pack moe20) against
# the build before the fold (54a174c, pack moe18) and llama.cpp, decode at context 128 of Qwen3-30B-A3B and
# Mixtral-8x7B (folded) and gpt-oss-20b (not folded: its biases; the gate/up kernel it shares changed), llama.cpp and
# a profile on Qwen3 only (call 17 has Mixtral's); test_ops' folded-router cases first, and last the MoE block cases over tiles that call 17's run
# did not reach. Five files come back. Carry .gl, build-pack/moe18.tar.xz, build-pack/moe20.tar.xz and
# bench/peers/llamacpp/dist.
set -u
T0=$SECONDS
t() { echo "== $(( SECONDS - T0 )) s: $*" | tee -a "$OUT/log.txt"; }
for f in .gl/*.deb; do dpkg -x "$f" / 2>/dev/null; done; ldconfig
export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json
mkdir -p /tmp/b18 /tmp/b20 /tmp/llc
tar -C /tmp/b18 -xJf build-pack/moe18.tar.xz && tar -C /tmp/b20 -xJf build-pack/moe20.tar.xz
tar -xJf bench/peers/llamacpp/dist/llcbench-linux-x64-vulkan.tar.xz -C /tmp/llc
L=$(dirname "$(find /tmp/llc -name llcbench -type f | head -1)")
J=$OUT/results.jsonl
tag() { grep '^{' | sed "s/^{/{\"engine\": \"$1\", /" | tee -a "$J"; }
ops() { # seconds, filters...
  s=$1; shift
  ( cd tests && LD_LIBRARY_PATH=/tmp/b20 WGLLM_BIN=/tmp/b20 timeout $s stdbuf -oL -eL /tmp/b20/test_ops -v "$@" \
      >> "$OUT/test_ops.txt" 2>&1; echo "rc=$?" >> "$OUT/test_ops.txt" )
}
t "test_ops folded-router cases"
ops 60 -f gemv_router -f unnormed
grep -E "FAIL|cases|checks|rc=" "$OUT/test_ops.txt" | tail -4
bench() { # build model
  LD_LIBRARY_PATH=/tmp/$1 timeout 100 /tmp/$1/wgllm-bench -m /tmp/$2.gguf --prompt 128 --gen 32 --runs 3 --kv f16 \
    --json 2>>"$OUT/errors.txt" | tag "wgllm-$1"
}
for M in qwen3-30b-a3b gpt-oss-20b mixtral-8x7b; do
  t "write $M"
  LD_LIBRARY_PATH=/tmp/b20 /tmp/b20/wgllm-bench --synthetic $M --write-gguf /tmp/$M.gguf > /dev/null 2>>"$OUT/errors.txt"
  t "b20 $M"; bench b20 $M
  t "b18 $M"; bench b18 $M
  if [ $M = qwen3-30b-a3b ]; then
    t "b20 $M profile"
    LD_LIBRARY_PATH=/tmp/b20 timeout 60 /tmp/b20/wgllm-bench -m /tmp/$M.gguf --prompt 128 --gen 8 --runs 1 --kv f16 \
      --profile >> "$OUT/profiles.txt" 2>&1
    t "llama.cpp $M"
    timeout 80 $L/llcbench bench /tmp/$M.gguf --backend vulkan --ngl 99 --prompt 128 --gen 32 --runs 3 --kv f16 \
      --sample host 2>>"$OUT/errors.txt" | tag llama.cpp
  fi
  rm -f /tmp/$M.gguf
done
t "test_ops MoE block cases over tiles"
ops $(( 330 - (SECONDS - T0) )) -f moe_block/Q4_K/tiles -f moe_block/f32/tiles -f moe_block/q4gsw/tiles
grep -E "FAIL|cases|checks|rc=" "$OUT/test_ops.txt" | tail -6
t end
