#!/usr/bin/env bash
# Device call 39 of docs/perf/31-moe (written 2026-12-07): the fast precision's decode with the experts' gate/up on the
# integer-dot GEMV (a7921b7, pack build-pack/var39.tar.xz: its wgllm, libwgllm.so.0, wgllm-bench, test_ops, test_moe)
# against main's m34 (gate/up exact in every precision), and q8d of mkvars39.sh (the down projection on it too where
# the combine is apart): on Mixtral-8x7B, gpt-oss-20b and Qwen3-30B-A3B (whose down projection folds the combine: no
# q8d) decode at context 128 and 8 sequences batched, all fast, m and q8, then q8d; then test_ops' pairs_q8 cases on
# the GPU and test_moe with q8's CLI. Carry .gl, build-pack and bench/peers/llamacpp/dist (move models/
# and tests/data/models out of the tree for the upload). What would pass LIMIT s (default 565) is skipped.
set -u
T0=$SECONDS
t() { echo "== $(( SECONDS - T0 )) s: $*" | tee -a "$OUT/log.txt"; }
left() { [ $(( SECONDS - T0 + $1 )) -lt ${LIMIT:-565} ] || { t "skipped: $2"; false; }; }
for f in .gl/*.deb; do dpkg -x "$f" / 2>/dev/null; done; ldconfig
export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json
mkdir -p /tmp/b /tmp/var/m tests/data
tar -C /tmp/b -xJf build-pack/main28.tar.xz ./libwebgpu_wrapper.so && tar -C /tmp/var/m -xJf build-pack/m34.tar.xz &&
  tar -C /tmp/var -xJf build-pack/var39.tar.xz ./q8 ./q8d && tar -C tests/data -xJf build-pack/fixtures.tar.xz &&
  tar -xJf build-pack/models.tar.xz && tar -xJf build-pack/tok.tar.xz
cp /tmp/var/m/libmicrohttpd.so.12 /tmp/b/
nvidia-smi --query-gpu=name,clocks.max.sm,clocks.max.mem --format=csv,noheader | tee -a "$OUT/log.txt"
tag() { grep '^{' | sed "s/^{/{\"engine\": \"$1\", \"shape\": \"$M\", /" | tee -a "$OUT/results.jsonl"; }
wg() { # seconds build label args...
  left $1 "$2 $M $3" || return; t "$2 $M $3"; local s=$1 w=$2; shift 3
  LD_LIBRARY_PATH=/tmp/b:/tmp/var/$w timeout $s /tmp/var/$w/wgllm-bench -m /tmp/$M.gguf --runs 3 --kv f16 --json "$@" \
    2>>"$OUT/errors.txt" | tag "wgllm-$w"
}
D="--prompt 128 --gen 32"
for M in mixtral-8x7b gpt-oss-20b qwen3-30b-a3b; do
  left 120 "$M" || continue
  t "write $M"
  LD_LIBRARY_PATH=/tmp/b:/tmp/var/m /tmp/var/m/wgllm-bench --synthetic $M --write-gguf /tmp/$M.gguf > /dev/null \
    2>>"$OUT/errors.txt"
  for w in m q8; do wg 45 $w "decode 128 fast" $D --precision-list fast; done
  for w in m q8; do wg 45 $w "parallel 8 fast" --parallel 8 $D --batched-only --precision-list fast; done
  if [ $M != qwen3-30b-a3b ]; then
    wg 45 q8d "decode 128 fast" $D --precision-list fast
    wg 45 q8d "parallel 8 fast" --parallel 8 $D --batched-only --precision-list fast
  fi
  rm -f /tmp/$M.gguf
done
if left 25 "test_ops"; then
  t "q8 test_ops pairs_q8 cases"
  ( cd tests && LD_LIBRARY_PATH=/tmp/b:/tmp/var/q8 timeout 25 /tmp/var/q8/test_ops -f pairs_q8 2>&1 |
    grep -E "^FAIL|^test_ops" | head -20 | tee -a "$OUT/log.txt" )
fi
if left 75 "test_moe"; then
  t "q8 test_moe"
  ( cd tests && LD_LIBRARY_PATH=/tmp/b:/tmp/var/q8 WGLLM_BIN=/tmp/var/q8 timeout 75 /tmp/var/q8/test_moe \
      > /tmp/test_moe.txt 2>&1; echo "rc=$?" >> /tmp/test_moe.txt )
  grep -E "^FAIL|fast" /tmp/test_moe.txt | head -10 | tee -a "$OUT/log.txt"
  grep -E "checks|rc=" /tmp/test_moe.txt | tail -2 | tee -a "$OUT/log.txt"; cp /tmp/test_moe.txt "$OUT/test_moe.txt"
fi
t end
