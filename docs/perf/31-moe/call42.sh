#!/usr/bin/env bash
# Device call 42 of docs/perf/31-moe (written 2026-12-07 for the session of 2026-12-07/08): call 40's runs on a fresh
# pack. Builds (build-pack/var42.tar.xz, mkvars42.sh, all from main at 08c81c3): g, main (batched decode's gate/up
# pairs grouped by expert in the fast precision, OP_MOE_GROUPS, groups of 2/4/8 by op_moe_group_m); g0, the same with
# no groups (each pair its own integer-dot GEMV, as var39's q8); gd, the down projection grouped too. Mixtral-8x7B at
# 8 sequences (groups of 2) and 32 (8); Qwen3-30B-A3B (2) and gpt-oss-20b (4) at 32; all --precision-list fast;
# llama.cpp at 32 sequences beside (never run before); then, as time is left, test_ops' groups, pairs and lists cases
# and test_moe (pack m42, with fixtures / models / tok: see call43.sh) on the GPU. Carry .gl, build-pack and
# bench/peers/llamacpp/dist (models/ and tests/data/models moved out of the tree for the upload). What would pass
# LIMIT s (default 570) is skipped; NOLLC=1 skips llama.cpp and gd (a short call: g0 against g only), NOMIX=1 Mixtral.
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
llc() { # seconds label args... (NOLLC=1: none)
  [ -z "${NOLLC:-}" ] || return 0
  left $1 "llama.cpp $M $2" || return; t "llama.cpp $M $2"; local s=$1; shift 2
  timeout $s $L/llcbench bench /tmp/$M.gguf --backend vulkan --ngl 99 --runs 3 --kv f16 --sample host "$@" \
    2>>"$OUT/errors.txt" | tag llama.cpp
}
write() { left 60 "$M" || return; t "write $M"
  LD_LIBRARY_PATH=/tmp/var /tmp/var/g/wgllm-bench --synthetic $M --write-gguf /tmp/$M.gguf > /dev/null \
    2>>"$OUT/errors.txt"; }
P8="--parallel 8 --prompt 128 --gen 32 --batched-only --precision-list fast"
P32="--parallel 32 --prompt 128 --gen 16 --batched-only --precision-list fast"
M=mixtral-8x7b; if [ -z "${NOMIX:-}" ] && write; then
  for w in g0 g; do wg 50 $w "parallel 8 fast" $P8; done
  for w in g0 g; do wg 60 $w "parallel 32 fast" $P32; done
  llc 50 "parallel 32" --parallel 32 --prompt 128 --gen 16
  [ -n "${NOLLC:-}" ] || wg 50 gd "parallel 8 fast" $P8
  rm -f /tmp/$M.gguf; fi
M=gpt-oss-20b; if write; then
  for w in g0 g; do wg 40 $w "parallel 32 fast" $P32; done
  llc 40 "parallel 32" --parallel 32 --prompt 128 --gen 16
  rm -f /tmp/$M.gguf; fi
M=qwen3-30b-a3b; if write; then
  for w in g0 g; do wg 40 $w "parallel 32 fast" $P32; done
  llc 40 "parallel 32" --parallel 32 --prompt 128 --gen 16
  rm -f /tmp/$M.gguf; fi
if left 35 "test_ops"; then
  t "test_ops groups, pairs, lists and refusal cases"
  ( cd tests && LD_LIBRARY_PATH=/tmp/var timeout 30 /tmp/var/g/test_ops -f groups_q8 -f pairs_q8 -f moe_lists \
    -f moe_group_m -f moe_refuse 2>&1 | grep -E "^FAIL|^test_ops|adapter" | head -20 | tee -a "$OUT/log.txt" )
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
