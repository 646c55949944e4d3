#!/usr/bin/env bash
# Device call 40 of docs/perf/31-moe (written 2026-12-07): batched decode grouped by expert in the fast precision.
# Builds (build-pack/var40.tar.xz, mkvars40.sh): g, main with the gate/up's pairs of a batched step grouped by expert
# where there are at least two an expert on average (OP_MOE_GROUPS: the integer-dot GEMV a group of 2, 4 or 8 pairs),
# gd, the same with the down projection grouped too; against var39's q8 (a7921b7, main before: each pair its own
# GEMV). Mixtral-8x7B at 8 sequences (groups of 2) and 32 (8); Qwen3-30B-A3B (groups of 2) and gpt-oss-20b (4) at 32;
# all --precision-list fast; then test_ops' groups_q8 and moe_lists cases with g's test_ops. Carry .gl, build-pack
# and bench/peers/llamacpp/dist (models/ and tests/data/models moved out of the tree for the upload). What would pass
# LIMIT s (default 560) is skipped.
set -u
T0=$SECONDS
t() { echo "== $(( SECONDS - T0 )) s: $*" | tee -a "$OUT/log.txt"; }
left() { [ $(( SECONDS - T0 + $1 )) -lt ${LIMIT:-560} ] || { t "skipped: $2"; false; }; }
for f in .gl/*.deb; do dpkg -x "$f" / 2>/dev/null; done; ldconfig
export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json
mkdir -p /tmp/b /tmp/var/m tests/data
tar -C /tmp/b -xJf build-pack/main28.tar.xz ./libwebgpu_wrapper.so && tar -C /tmp/var/m -xJf build-pack/m34.tar.xz &&
  tar -C /tmp/var -xJf build-pack/var39.tar.xz ./q8 && tar -C /tmp/var -xJf build-pack/var40.tar.xz &&
  tar -C tests/data -xJf build-pack/fixtures.tar.xz
cp /tmp/var/m/libmicrohttpd.so.12 /tmp/b/
nvidia-smi --query-gpu=name,clocks.max.sm,clocks.max.mem --format=csv,noheader | tee -a "$OUT/log.txt"
tag() { grep '^{' | sed "s/^{/{\"engine\": \"$1\", \"shape\": \"$M\", /" | tee -a "$OUT/results.jsonl"; }
wg() { # seconds build label args...
  left $1 "$2 $M $3" || return; t "$2 $M $3"; local s=$1 w=$2; shift 3
  LD_LIBRARY_PATH=/tmp/b:/tmp/var/$w timeout $s /tmp/var/$w/wgllm-bench -m /tmp/$M.gguf --runs 3 --kv f16 --json "$@" \
    2>>"$OUT/errors.txt" | tag "wgllm-$w"
}
write() { left 60 "$M" || return; t "write $M"
  LD_LIBRARY_PATH=/tmp/b:/tmp/var/m /tmp/var/m/wgllm-bench --synthetic $M --write-gguf /tmp/$M.gguf > /dev/null \
    2>>"$OUT/errors.txt"; }
P8="--parallel 8 --prompt 128 --gen 32 --batched-only --precision-list fast"
P32="--parallel 32 --prompt 128 --gen 16 --batched-only --precision-list fast"
M=mixtral-8x7b; if write; then
  for w in q8 g gd; do wg 45 $w "parallel 8 fast" $P8; done
  for w in q8 g; do wg 60 $w "parallel 32 fast" $P32; done
  rm -f /tmp/$M.gguf; fi
M=qwen3-30b-a3b; if write; then
  for w in q8 g; do wg 40 $w "parallel 32 fast" $P32; done
  rm -f /tmp/$M.gguf; fi
M=gpt-oss-20b; if write; then
  for w in q8 g; do wg 40 $w "parallel 32 fast" $P32; done
  rm -f /tmp/$M.gguf; fi
if left 25 "test_ops"; then
  t "g test_ops groups_q8 and moe_lists cases"
  ( cd tests && LD_LIBRARY_PATH=/tmp/b:/tmp/var/g timeout 25 /tmp/var/g/test_ops -f groups_q8 -f moe_lists 2>&1 |
    grep -E "^FAIL|^test_ops|adapter" | head -20 | tee -a "$OUT/log.txt" )
fi
t end
