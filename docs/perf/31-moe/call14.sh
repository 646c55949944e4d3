#!/usr/bin/env bash
# Device call 14 of docs/perf/31-moe (2026-12-06, run on an H100 with pack moe14 = 143a4a4): the prefill expert tiles rewritten as the dense
# prefill GEMM's tile (kernels/moe_linear.wgsl "_tile": 64 pairs x 128 weight rows, 4 x 8 outputs a thread in
# registers) against the scalar tile before it, prefill 128 and 512 on the three shapes with llama.cpp beside, after
# test_ops' tile and per-expert cases and the MoE blocks on the GPU; and (added with 2f279e4 / 11a12b0) the fast
# precision's integer-dot expert tiles (op_moe_linear_q8, MXFP4 among them): test_ops' tiles_q8 and MXFP4 int8 cases
# and moe14's prefill in both precisions; (added with 143a4a4) moe14's decode at 128 with --profile's in-stream
# column (each kernel's cost as the step less the step without it), routing's share of a decode step. Packs (build-pack/, ignored by git; stripped
# Release builds, the moe13 recipe of call13.sh): moe13.tar.xz from 2002566 (the scalar tiles), moe14.tar.xz from the
# commit that rewrote them (wgllm-bench, test_ops, libwgllm.so.0, Dawn). Carry .gl, build-pack/moe13.tar.xz,
# build-pack/moe14.tar.xz and bench/peers/llamacpp/dist.
set -u
T0=$SECONDS
t() { echo "== $(( SECONDS - T0 )) s: $*" | tee -a "$OUT/log.txt"; }
for f in .gl/*.deb; do dpkg -x "$f" / 2>/dev/null; done; ldconfig
export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json
mkdir -p /tmp/b13 /tmp/b14 /tmp/llc
tar -C /tmp/b13 -xJf build-pack/moe13.tar.xz && tar -C /tmp/b14 -xJf build-pack/moe14.tar.xz &&
  tar -xJf bench/peers/llamacpp/dist/llcbench-linux-x64-vulkan.tar.xz -C /tmp/llc
L=$(dirname "$(find /tmp/llc -name llcbench -type f | head -1)")
t "test_ops tile, per-expert and block cases (moe14)"
( cd tests && LD_LIBRARY_PATH=/tmp/b14 WGLLM_BIN=/tmp/b14 timeout 90 /tmp/b14/test_ops -f /tiles/ -f /per-expert/ \
    -f moe_block -f moe_lists -f tiles_q8 -f q8/MXFP4 > "$OUT/test_ops.txt" 2>&1; echo "rc=$?" >> "$OUT/test_ops.txt" )
grep -E "FAIL|cases|checks|rc=" "$OUT/test_ops.txt" | tail -6
for M in gpt-oss-20b qwen3-30b-a3b mixtral-8x7b; do
  J=$OUT/$M.jsonl
  tag() { grep '^{' | sed "s/^{/{\"engine\": \"$1\", /" | tee -a "$J"; }
  t "write $M"
  LD_LIBRARY_PATH=/tmp/b14 /tmp/b14/wgllm-bench --synthetic $M --write-gguf /tmp/$M.gguf > /dev/null 2>>"$OUT/errors.txt"
  for e in b13 b14; do
    P=exact
    [ $e = b14 ] && P=exact,fast
    t "$e prefill 128,512 ($P)"
    LD_LIBRARY_PATH=/tmp/$e timeout 100 /tmp/$e/wgllm-bench -m /tmp/$M.gguf --prompt 128,512 --gen 8 --runs 3 --kv f16 \
      --precision-list $P --json 2>>"$OUT/errors.txt" | tag "wgllm-$e"
  done
  t "b14 decode at 128 with the in-stream profile (routing's share)"
  LD_LIBRARY_PATH=/tmp/b14 timeout 60 /tmp/b14/wgllm-bench -m /tmp/$M.gguf --prompt 128 --gen 32 --runs 3 --kv f16 \
    --profile > "$OUT/profile128_$M.txt" 2>&1
  t "b14 profile of prefill 512"
  LD_LIBRARY_PATH=/tmp/b14 timeout 60 /tmp/b14/wgllm-bench -m /tmp/$M.gguf --prompt 512 --gen 4 --runs 1 --kv f16 \
    --profile >> "$OUT/profiles.txt" 2>&1
  t "llama.cpp prompt 512"
  timeout 80 $L/llcbench bench /tmp/$M.gguf --backend vulkan --ngl 99 --prompt 512 --gen 8 --runs 3 --kv f16 \
    --sample host 2>>"$OUT/errors.txt" | tag llama.cpp
  rm -f /tmp/$M.gguf
done
t end
tail -5 "$OUT/errors.txt" 2>/dev/null
