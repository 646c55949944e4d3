#!/usr/bin/env bash
# Device call 38 of docs/perf/31-moe (written 2026-12-07): call 37's question (fb of var37: the ranking's fill bounded
# to the words the count reads, against main's m34, decode at 128, m fb m) and the batched expert GEMV with its pairs
# along the grid's x (px of var38, mkvars38.sh: the workgroups of one row block start together for every pair of a
# batched step, so pairs of one expert read its rows from the cache) against m34, 8 sequences at context 128, m px m;
# on Mixtral-8x7B, Qwen3-30B-A3B and gpt-oss-20b, then px's test_ops pairs and combined cases on the GPU. Carry .gl,
# build-pack and bench/peers/llamacpp/dist. What would pass LIMIT s (default 565) is skipped.
set -u
T0=$SECONDS
t() { echo "== $(( SECONDS - T0 )) s: $*" | tee -a "$OUT/log.txt"; }
left() { [ $(( SECONDS - T0 + $1 )) -lt ${LIMIT:-565} ] || { t "skipped: $2"; false; }; }
for f in .gl/*.deb; do dpkg -x "$f" / 2>/dev/null; done; ldconfig
export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json
mkdir -p /tmp/b /tmp/var/m
tar -C /tmp/b -xJf build-pack/main28.tar.xz ./libwebgpu_wrapper.so && tar -C /tmp/var/m -xJf build-pack/m34.tar.xz &&
  tar -C /tmp/var -xJf build-pack/var37.tar.xz ./fb && tar -C /tmp/var -xJf build-pack/var38.tar.xz ./px
export LD_LIBRARY_PATH=/tmp/b:/tmp/var/m
nvidia-smi --query-gpu=name,clocks.max.sm,clocks.max.mem --format=csv,noheader | tee -a "$OUT/log.txt"
tag() { grep '^{' | sed "s/^{/{\"engine\": \"$1\", \"shape\": \"$M\", /" | tee -a "$OUT/results.jsonl"; }
wg() { # seconds build label args...
  left $1 "$2 $M $3" || return; t "$2 $M $3"; local s=$1 w=$2; shift 3
  timeout $s /tmp/var/$w/wgllm-bench -m /tmp/$M.gguf --runs 3 --kv f16 --json "$@" 2>>"$OUT/errors.txt" | tag "wgllm-$w"
}
D="--prompt 128 --gen 32"
for M in mixtral-8x7b qwen3-30b-a3b gpt-oss-20b; do
  left 100 "$M" || continue
  t "write $M"
  /tmp/var/m/wgllm-bench --synthetic $M --write-gguf /tmp/$M.gguf > /dev/null 2>>"$OUT/errors.txt"
  for w in m px m; do wg 45 $w "parallel 8" --parallel 8 $D --batched-only; done
  if [ $M != gpt-oss-20b ]; then for w in m fb m; do wg 40 $w "decode 128" $D; done; fi
  rm -f /tmp/$M.gguf
done
if left 30 "test_ops"; then
  t "px test_ops pairs and combined cases"
  ( cd tests && timeout 30 /tmp/var/px/test_ops -f /pairs/ -f moe_down_combine 2>&1 | tail -3 ) | tee -a "$OUT/log.txt"
fi
t end
