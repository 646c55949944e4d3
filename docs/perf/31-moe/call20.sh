#!/usr/bin/env bash
# Device call 20 of docs/perf/31-moe (2026-12-06): the flash-decoding pass with RoPE folded in, two changes measured
# apart against call 19's build (pack moe21: f145eac, eight cache loads in flight a thread): moe22 adds the half-split
# RoPE's branch-free vec4 path (the partner vec4 and four angles loaded at once); moe23 also keeps the appended
# token's K and V in workgroup memory for the workgroup that appends them (no storage barrier, no read-back).
# test_ops' flash-decoding cases on the GPU (moe23) first; then decode at context 128 of Qwen3-30B-A3B and
# gpt-oss-20b for each build with llama.cpp beside, a profile of moe23's Qwen3 step, the Llama-3.1-8B shape for moe23
# and moe21. Five files come back. Carry .gl, build-pack/moe21.tar.xz, moe22.tar.xz, moe23.tar.xz and
# bench/peers/llamacpp/dist.
set -u
T0=$SECONDS
t() { echo "== $(( SECONDS - T0 )) s: $*" | tee -a "$OUT/log.txt"; }
for f in .gl/*.deb; do dpkg -x "$f" / 2>/dev/null; done; ldconfig
export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json
mkdir -p /tmp/b21 /tmp/b22 /tmp/b23 /tmp/llc
for b in 21 22 23; do tar -C /tmp/b$b -xJf build-pack/moe$b.tar.xz; done
tar -xJf bench/peers/llamacpp/dist/llcbench-linux-x64-vulkan.tar.xz -C /tmp/llc
L=$(dirname "$(find /tmp/llc -name llcbench -type f | head -1)")
J=$OUT/results.jsonl
tag() { grep '^{' | sed "s/^{/{\"engine\": \"$1\", /" | tee -a "$J"; }
t "test_ops flash-decoding cases (moe23)"
( cd tests && LD_LIBRARY_PATH=/tmp/b23 WGLLM_BIN=/tmp/b23 timeout 70 /tmp/b23/test_ops -f flash_decode -f paged_decode \
    -f hostile/flash_decode > "$OUT/test_ops.txt" 2>&1; echo "rc=$?" >> "$OUT/test_ops.txt" )
tail -3 "$OUT/test_ops.txt"
bench() { # build model prompt
  LD_LIBRARY_PATH=/tmp/$1 timeout 100 /tmp/$1/wgllm-bench -m /tmp/$2.gguf --prompt $3 --gen 32 --runs 3 --kv f16 \
    --json 2>>"$OUT/errors.txt" | tag "wgllm-$1"
}
llc() { # model prompt
  timeout 80 $L/llcbench bench /tmp/$1.gguf --backend vulkan --ngl 99 --prompt $2 --gen 32 --runs 3 --kv f16 \
    --sample host 2>>"$OUT/errors.txt" | tag llama.cpp
}
for M in qwen3-30b-a3b gpt-oss-20b llama-8b; do
  t "write $M"
  LD_LIBRARY_PATH=/tmp/b23 /tmp/b23/wgllm-bench --synthetic $M --write-gguf /tmp/$M.gguf > /dev/null 2>>"$OUT/errors.txt"
  for b in b23 b22 b21; do
    [ $M = llama-8b ] && [ $b = b22 ] && continue
    t "$b $M"; bench $b $M 128
  done
  [ $M = llama-8b ] || { t "llama.cpp $M"; llc $M 128; }
  if [ $M = qwen3-30b-a3b ]; then
    t "b23 $M profile"
    LD_LIBRARY_PATH=/tmp/b23 timeout 60 /tmp/b23/wgllm-bench -m /tmp/$M.gguf --prompt 128 --gen 8 --runs 1 --kv f16 \
      --profile >> "$OUT/profiles.txt" 2>&1
  fi
  rm -f /tmp/$M.gguf
done
t end
