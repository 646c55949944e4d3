#!/usr/bin/env bash
# Device call 19 of docs/perf/31-moe (2026-12-06): flash-decoding with eight cache loads in flight a thread
# (attn_split's score and output loops) and four chunks' loads at a time in attn_reduce (pack moe21), against main
# before it (54a174c's engine: pack moe18 for wgllm-bench, base21 for bench_kernels with the q3moe attention shape):
# test_ops' flash-decoding cases on the GPU first; decode at context 128 of Qwen3-30B-A3B, gpt-oss-20b and the
# Llama-3.1-8B shape (Q4_0) with llama.cpp beside each, the 8B at context 1024 too, a profile of Qwen3's step; last
# bench_kernels --attn (split + reduce alone, 8B and Qwen3-30B-A3B heads) for both. Six files come back.
# Carry .gl, build-pack/moe18.tar.xz, build-pack/base21.tar.xz, build-pack/moe21.tar.xz and bench/peers/llamacpp/dist.
set -u
T0=$SECONDS
t() { echo "== $(( SECONDS - T0 )) s: $*" | tee -a "$OUT/log.txt"; }
for f in .gl/*.deb; do dpkg -x "$f" / 2>/dev/null; done; ldconfig
export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json
mkdir -p /tmp/b18 /tmp/b21 /tmp/base21 /tmp/llc
tar -C /tmp/b18 -xJf build-pack/moe18.tar.xz && tar -C /tmp/b21 -xJf build-pack/moe21.tar.xz &&
  tar -C /tmp/base21 -xJf build-pack/base21.tar.xz
tar -xJf bench/peers/llamacpp/dist/llcbench-linux-x64-vulkan.tar.xz -C /tmp/llc
L=$(dirname "$(find /tmp/llc -name llcbench -type f | head -1)")
J=$OUT/results.jsonl
tag() { grep '^{' | sed "s/^{/{\"engine\": \"$1\", /" | tee -a "$J"; }
t "test_ops flash-decoding cases (moe21)"
( cd tests && LD_LIBRARY_PATH=/tmp/b21 WGLLM_BIN=/tmp/b21 timeout 70 /tmp/b21/test_ops -f flash_decode -f paged_decode \
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
  LD_LIBRARY_PATH=/tmp/b21 /tmp/b21/wgllm-bench --synthetic $M --write-gguf /tmp/$M.gguf > /dev/null 2>>"$OUT/errors.txt"
  t "b21 $M"; bench b21 $M 128
  t "b18 $M"; bench b18 $M 128
  t "llama.cpp $M"; llc $M 128
  if [ $M = qwen3-30b-a3b ]; then
    t "b21 $M profile"
    LD_LIBRARY_PATH=/tmp/b21 timeout 60 /tmp/b21/wgllm-bench -m /tmp/$M.gguf --prompt 128 --gen 8 --runs 1 --kv f16 \
      --profile >> "$OUT/profiles.txt" 2>&1
  fi
  if [ $M = llama-8b ]; then
    t "b21 $M 1024"; bench b21 $M 1024
    t "b18 $M 1024"; bench b18 $M 1024
  fi
  rm -f /tmp/$M.gguf
done
for b in base21 b21; do
  t "bench_kernels --attn $b"
  echo "# $b" >> "$OUT/attn.txt"
  LD_LIBRARY_PATH=/tmp/$b timeout 60 /tmp/$b/bench_kernels --attn --shapes 8b,q3moe --types none 2>&1 | grep '^attn' \
    >> "$OUT/attn.txt"
done
t end
