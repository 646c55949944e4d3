#!/usr/bin/env bash
# Device call 17 of docs/perf/31-moe (2026-12-06): the router folded into one token's attention projections
# (dbbdd37, pack moe19) against the build before it (54a174c, pack moe18) and llama.cpp, decode at context 128 of the
# Qwen3-30B-A3B and Mixtral-8x7B shapes (the two the fold takes), a profile of Qwen3's decode step (routing's share
# in-stream), test_ops' folded-router cases on the GPU first and its tile, lists and int8 tile cases last (-v: each
# case's verdict as it ends; calls 15 and 16 were cut off before their summary). Five files come back.
# Carry .gl, build-pack/moe18.tar.xz, build-pack/moe19.tar.xz and bench/peers/llamacpp/dist.
set -u
T0=$SECONDS
t() { echo "== $(( SECONDS - T0 )) s: $*" | tee -a "$OUT/log.txt"; }
for f in .gl/*.deb; do dpkg -x "$f" / 2>/dev/null; done; ldconfig
export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json
mkdir -p /tmp/b18 /tmp/b19 /tmp/llc
tar -C /tmp/b18 -xJf build-pack/moe18.tar.xz && tar -C /tmp/b19 -xJf build-pack/moe19.tar.xz
tar -xJf bench/peers/llamacpp/dist/llcbench-linux-x64-vulkan.tar.xz -C /tmp/llc
L=$(dirname "$(find /tmp/llc -name llcbench -type f | head -1)")
J=$OUT/results.jsonl
tag() { grep '^{' | sed "s/^{/{\"engine\": \"$1\", /" | tee -a "$J"; }
ops() { # seconds, filters...
  s=$1; shift
  ( cd tests && LD_LIBRARY_PATH=/tmp/b19 WGLLM_BIN=/tmp/b19 timeout $s stdbuf -oL -eL /tmp/b19/test_ops -v "$@" \
      >> "$OUT/test_ops.txt" 2>&1; echo "rc=$?" >> "$OUT/test_ops.txt" )
}
t "test_ops folded-router cases"
ops 90 -f gemv_router -f unnormed
grep -E "FAIL|cases|checks|rc=" "$OUT/test_ops.txt" | tail -4
bench() { # build model
  LD_LIBRARY_PATH=/tmp/$1 timeout 100 /tmp/$1/wgllm-bench -m /tmp/$2.gguf --prompt 128 --gen 32 --runs 3 --kv f16 \
    --json 2>>"$OUT/errors.txt" | tag "wgllm-$1"
}
for M in qwen3-30b-a3b mixtral-8x7b; do
  t "write $M"
  LD_LIBRARY_PATH=/tmp/b19 /tmp/b19/wgllm-bench --synthetic $M --write-gguf /tmp/$M.gguf > /dev/null 2>>"$OUT/errors.txt"
  t "b19 $M"; bench b19 $M
  t "b18 $M"; bench b18 $M
  t "llama.cpp $M"
  timeout 80 $L/llcbench bench /tmp/$M.gguf --backend vulkan --ngl 99 --prompt 128 --gen 32 --runs 3 --kv f16 \
    --sample host 2>>"$OUT/errors.txt" | tag llama.cpp
  t "b19 $M profile"
  LD_LIBRARY_PATH=/tmp/b19 timeout 60 /tmp/b19/wgllm-bench -m /tmp/$M.gguf --prompt 128 --gen 8 --runs 1 --kv f16 \
    --profile >> "$OUT/profiles.txt" 2>&1
  rm -f /tmp/$M.gguf
done
t "test_ops lists, tiles and int8 tiles"
ops $(( 570 - (SECONDS - T0) )) -f moe_lists -f tiles_q8 -f /tiles/
grep -E "FAIL|cases|checks|rc=" "$OUT/test_ops.txt" | tail -6
t end
