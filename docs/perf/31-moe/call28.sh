#!/usr/bin/env bash
# Device call 28 of docs/perf/31-moe (written 2026-12-07): issue 31's speed table on one call -- Qwen3-30B-A3B,
# gpt-oss-20b and Mixtral-8x7B shapes written as GGUF, each run by wgllm (build $W of var28, default m: main 7c57900
# from build-pack/m29.tar.xz) and by
# llama.cpp on the same file: decode at context 128, prefill 512 (wgllm: exact and fast), 8 sequences batched, and
# wgllm's in-stream profile of the decode step (routing's share). Needs main28 (Dawn) and m29 (main's build), or var28
# for another W: carry .gl, build-pack/main28.tar.xz, m29.tar.xz (var28.tar.xz) and bench/peers/llamacpp/dist. What would
# pass LIMIT s (default 570) is skipped; the shapes run in the order of the targets.
set -u
T0=$SECONDS
W=${W:-m}
t() { echo "== $(( SECONDS - T0 )) s: $*" | tee -a "$OUT/log.txt"; }
left() { [ $(( SECONDS - T0 + $1 )) -lt ${LIMIT:-570} ] || { t "skipped: $2"; false; }; }
for f in .gl/*.deb; do dpkg -x "$f" / 2>/dev/null; done; ldconfig
export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json
mkdir -p /tmp/b /tmp/var /tmp/llc
tar -C /tmp/b -xJf build-pack/main28.tar.xz ./libwebgpu_wrapper.so
if [ $W = m ]; then mkdir -p /tmp/var/m && tar -C /tmp/var/m -xJf build-pack/m29.tar.xz
else tar -C /tmp/var -xJf build-pack/var28.tar.xz ./$W; fi
tar -xJf bench/peers/llamacpp/dist/llcbench-linux-x64-vulkan.tar.xz -C /tmp/llc
L=$(dirname "$(find /tmp/llc -name llcbench -type f | head -1)")
export LD_LIBRARY_PATH=/tmp/b
B=/tmp/var/$W/wgllm-bench
nvidia-smi --query-gpu=name,clocks.max.sm,clocks.max.mem --format=csv,noheader | tee -a "$OUT/log.txt"
J=$OUT/results.jsonl
tag() { grep '^{' | sed "s/^{/{\"engine\": \"$1\", \"shape\": \"$M\", /" | tee -a "$J"; }
wg() { # seconds label args...
  left $1 "wgllm $M $2" || return; t "wgllm $M $2"; local s=$1; shift 2
  timeout $s $B -m /tmp/$M.gguf --runs 3 --kv f16 --json "$@" 2>>"$OUT/errors.txt" | tag "wgllm-$W"
}
llc() { # seconds label args...
  left $1 "llama.cpp $M $2" || return; t "llama.cpp $M $2"; local s=$1; shift 2
  timeout $s $L/llcbench bench /tmp/$M.gguf --backend vulkan --ngl 99 --runs 3 --kv f16 --sample host "$@" \
    2>>"$OUT/errors.txt" | tag llama.cpp
}
for M in qwen3-30b-a3b gpt-oss-20b mixtral-8x7b; do
  left 60 "$M" || continue
  t "write $M"
  $B --synthetic $M --write-gguf /tmp/$M.gguf > /dev/null 2>>"$OUT/errors.txt"
  wg 45 "decode 128" --prompt 128 --gen 32
  llc 45 "decode 128" --prompt 128 --gen 32
  wg 60 "prefill 512" --prompt 512 --gen 8 --precision-list exact,fast
  llc 45 "prefill 512" --prompt 512 --gen 8
  wg 60 "parallel 8" --parallel 8 --prompt 128 --gen 32 --batched-only
  llc 60 "parallel 8" --parallel 8 --prompt 128 --gen 32
  if left 50 "$M profile"; then
    t "wgllm $M decode profile"
    timeout 50 $B -m /tmp/$M.gguf --prompt 128 --gen 32 --runs 3 --kv f16 --profile > "$OUT/profile_$M.txt" 2>&1
  fi
  rm -f /tmp/$M.gguf
done
t end
