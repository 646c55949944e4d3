#!/usr/bin/env bash
# Device call 44 of docs/perf/31-moe (written 2026-12-08): what calls 42-43 left, first MXFP4's int8 decode without a
# table. Builds (build-pack/var42.tar.xz from mkvars42.sh, main after 2026-12-08): g (main: mx_bytes bytewise), lut
# (mx_bytes from the 16-entry table, as before), g0 (no groups), gd, q8d, nq. gpt-oss-20b: lut against g in the fast
# precision at decode 128, prefill 512 (exact beside), 8 and 32 sequences, llama.cpp at 32; Qwen3-30B-A3B: g0 against
# g at 32 sequences (groups of 2), nq against g at decode 128, llama.cpp at 32; Mixtral-8x7B: llama.cpp at 32, gd at 8
# sequences, q8d at decode 128; then test_moe (pack m42 with fixtures / models / tok, as call43.sh) and test_ops' MoE
# int8 cases on the GPU. Carry .gl, build-pack and bench/peers/llamacpp/dist (models/ and tests/data/models moved out of
# the tree for the upload). What would pass LIMIT s (default 570) is skipped.
set -u
T0=$SECONDS
t() { echo "== $(( SECONDS - T0 )) s: $*" | tee -a "$OUT/log.txt"; }
left() { [ $(( SECONDS - T0 + $1 )) -lt ${LIMIT:-570} ] || { t "skipped: $2"; false; }; }
for f in .gl/*.deb; do dpkg -x "$f" / 2>/dev/null; done; ldconfig
export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json
mkdir -p /tmp/var /tmp/llc /tmp/m42 tests/data
tar -C /tmp/var -xJf build-pack/var42.tar.xz && tar -C /tmp/m42 -xJf build-pack/m42.tar.xz
tar -xJf bench/peers/llamacpp/dist/llcbench-linux-x64-vulkan.tar.xz -C /tmp/llc
L=$(dirname "$(find /tmp/llc -name llcbench -type f | head -1)")
nvidia-smi --query-gpu=name,clocks.max.sm,clocks.max.mem --format=csv,noheader | tee -a "$OUT/log.txt"
tag() { grep '^{' | sed "s/^{/{\"engine\": \"$1\", \"shape\": \"$M\", /" | tee -a "$OUT/results.jsonl"; }
wg() { # seconds build label args...
  left $1 "$2 $M $3" || return; t "$2 $M $3"; local s=$1 w=$2; shift 3
  LD_LIBRARY_PATH=/tmp/var timeout $s /tmp/var/$w/wgllm-bench -m /tmp/$M.gguf --runs 3 --kv f16 --json "$@" \
    2>>"$OUT/errors.txt" | tag "wgllm-$w"
}
llc() { # seconds label args...
  left $1 "llama.cpp $M $2" || return; t "llama.cpp $M $2"; local s=$1; shift 2
  timeout $s $L/llcbench bench /tmp/$M.gguf --backend vulkan --ngl 99 --runs 3 --kv f16 --sample host "$@" \
    2>>"$OUT/errors.txt" | tag llama.cpp
}
write() { left 60 "$M" || return; t "write $M"
  LD_LIBRARY_PATH=/tmp/var /tmp/var/g/wgllm-bench --synthetic $M --write-gguf /tmp/$M.gguf > /dev/null \
    2>>"$OUT/errors.txt"; }
D="--prompt 128 --gen 32 --precision-list fast"
P8="--parallel 8 --prompt 128 --gen 32 --batched-only --precision-list fast"
P32="--parallel 32 --prompt 128 --gen 16 --batched-only --precision-list fast"
L32="--parallel 32 --prompt 128 --gen 16"
M=gpt-oss-20b; if write; then
  for w in lut g; do wg 30 $w "decode 128 fast" $D; done
  for w in lut g; do wg 35 $w "prefill 512 exact,fast" --prompt 512 --gen 8 --precision-list exact,fast; done
  for w in lut g; do wg 35 $w "parallel 8 fast" $P8; done
  for w in lut g; do wg 40 $w "parallel 32 fast" $P32; done
  llc 40 "parallel 32" $L32
  rm -f /tmp/$M.gguf; fi
M=qwen3-30b-a3b; if write; then
  for w in g0 g; do wg 40 $w "parallel 32 fast" $P32; done
  for w in nq g; do wg 30 $w "decode 128 fast" $D; done
  llc 40 "parallel 32" $L32
  rm -f /tmp/$M.gguf; fi
M=mixtral-8x7b; if write; then
  llc 50 "parallel 32" $L32
  wg 50 gd "parallel 8 fast" $P8
  for w in g q8d; do wg 40 $w "decode 128 fast" $D; done
  rm -f /tmp/$M.gguf; fi
if left 35 "test_ops"; then
  t "test_ops MoE int8 cases"
  ( cd tests && LD_LIBRARY_PATH=/tmp/var timeout 30 /tmp/var/g/test_ops -f groups_q8 -f pairs_q8 -f tiles_q8 \
    -f moe_lists -f moe_refuse -f gemv_q8 2>&1 | grep -E "^FAIL|^test_ops|adapter" | head -20 | tee -a "$OUT/log.txt" )
fi
if left 100 "test_moe"; then
  t "test_moe"
  tar -C tests/data -xJf build-pack/fixtures.tar.xz && tar -xJf build-pack/models.tar.xz && tar -xJf build-pack/tok.tar.xz
  ( cd tests && LD_LIBRARY_PATH=/tmp/var:/tmp/m42 WGLLM_BIN=/tmp/m42 timeout 90 /tmp/m42/test_moe > /tmp/test_moe.txt 2>&1
    echo "rc=$?" >> /tmp/test_moe.txt )
  grep -E "^FAIL" /tmp/test_moe.txt | head -12 | tee -a "$OUT/log.txt"
  grep -E "checks|rc=" /tmp/test_moe.txt | tail -3 | tee -a "$OUT/log.txt"
  cp /tmp/test_moe.txt "$OUT/test_moe.txt"
fi
t end
