#!/usr/bin/env bash
# Device call 35 of docs/perf/31-moe (written 2026-12-07): issue 31's speed table with main's build (pack m34:
# 222474c, the ranking that counts four logits a word), as call 28 ran it -- Qwen3-30B-A3B, gpt-oss-20b and
# Mixtral-8x7B written as GGUF, each run by wgllm and by llama.cpp on the same file: decode at context 128, prefill
# 512 (wgllm: exact and fast), 8 sequences batched -- plus, on Qwen3, m34's in-stream profile, the count before it
# (m29: 7c57900) and the build that does not rank (nr of var31, wrong results, timing only) at decode 128; after
# Qwen3, m34's test_moe (every MoE family's fixtures through its CLI) and test_ops' routing, self-routed and expert
# cases on the GPU. Carry .gl, build-pack and bench/peers/llamacpp/dist; move models/ and tests/data/models out of the
# tree for the upload (the packs hold them). What would pass LIMIT s (default 570) is skipped.
set -u
T0=$SECONDS
t() { echo "== $(( SECONDS - T0 )) s: $*" | tee -a "$OUT/log.txt"; }
left() { [ $(( SECONDS - T0 + $1 )) -lt ${LIMIT:-570} ] || { t "skipped: $2"; false; }; }
for f in .gl/*.deb; do dpkg -x "$f" / 2>/dev/null; done; ldconfig
export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json
mkdir -p /tmp/b /tmp/var/o /tmp/var/m /tmp/llc tests/data
tar -C /tmp/b -xJf build-pack/main28.tar.xz ./libwebgpu_wrapper.so && tar -C /tmp/var/o -xJf build-pack/m29.tar.xz &&
  tar -C /tmp/var/m -xJf build-pack/m34.tar.xz && tar -C /tmp/var -xJf build-pack/var31.tar.xz ./nr &&
  tar -C tests/data -xJf build-pack/fixtures.tar.xz && tar -xJf build-pack/models.tar.xz && tar -xJf build-pack/tok.tar.xz
tar -xJf bench/peers/llamacpp/dist/llcbench-linux-x64-vulkan.tar.xz -C /tmp/llc
L=$(dirname "$(find /tmp/llc -name llcbench -type f | head -1)")
export LD_LIBRARY_PATH=/tmp/b:/tmp/var/m
nvidia-smi --query-gpu=name,clocks.max.sm,clocks.max.mem --format=csv,noheader | tee -a "$OUT/log.txt"
J=$OUT/results.jsonl
tag() { grep '^{' | sed "s/^{/{\"engine\": \"$1\", \"shape\": \"$M\", /" | tee -a "$J"; }
wg() { # seconds build label args...
  left $1 "$2 $M $3" || return; t "$2 $M $3"; local s=$1 w=$2; shift 3
  timeout $s /tmp/var/$w/wgllm-bench -m /tmp/$M.gguf --runs 3 --kv f16 --json "$@" 2>>"$OUT/errors.txt" | tag "wgllm-$w"
}
llc() { # seconds label args...
  left $1 "llama.cpp $M $2" || return; t "llama.cpp $M $2"; local s=$1; shift 2
  timeout $s $L/llcbench bench /tmp/$M.gguf --backend vulkan --ngl 99 --runs 3 --kv f16 --sample host "$@" \
    2>>"$OUT/errors.txt" | tag llama.cpp
}
D="--prompt 128 --gen 32"
for M in qwen3-30b-a3b gpt-oss-20b mixtral-8x7b; do
  left 60 "$M" || continue
  t "write $M"
  /tmp/var/m/wgllm-bench --synthetic $M --write-gguf /tmp/$M.gguf > /dev/null 2>>"$OUT/errors.txt"
  wg 45 m "decode 128" $D
  if [ $M = qwen3-30b-a3b ]; then wg 40 o "decode 128" $D; wg 35 nr "decode 128" $D; fi
  llc 45 "decode 128" $D
  wg 60 m "prefill 512" --prompt 512 --gen 8 --precision-list exact,fast
  llc 45 "prefill 512" --prompt 512 --gen 8
  wg 60 m "parallel 8" --parallel 8 $D --batched-only
  llc 60 "parallel 8" --parallel 8 $D
  if [ $M = qwen3-30b-a3b ]; then
    if left 40 "m profile"; then
      t "m $M decode profile"
      timeout 40 /tmp/var/m/wgllm-bench -m /tmp/$M.gguf $D --runs 3 --kv f16 --profile > "$OUT/profile_$M.txt" 2>&1
    fi
    if left 70 "test_moe"; then
      t "test_moe"
      ( cd tests && WGLLM_BIN=/tmp/var/m timeout 70 /tmp/var/m/test_moe > /tmp/test_moe.txt 2>&1; echo "rc=$?" >> /tmp/test_moe.txt )
      grep -E "^FAIL" /tmp/test_moe.txt | head -10 | tee -a "$OUT/log.txt"
      grep -E "checks|rc=" /tmp/test_moe.txt | tail -2 | tee -a "$OUT/log.txt"; cp /tmp/test_moe.txt "$OUT/test_moe.txt"
    fi
    if left 20 "test_ops"; then
      t "test_ops routing, self-routed and expert cases"
      ( cd tests && timeout 20 /tmp/var/m/test_ops -f moe_route -f moe_linear -f gemv_experts 2>&1 |
        grep -E "^FAIL|^test_ops" | head -20 | tee -a "$OUT/log.txt" )
    fi
  fi
  rm -f /tmp/$M.gguf
done
t end
