#!/usr/bin/env bash
# Device call 41 of docs/perf/31-moe (written 2026-12-07, after call 40): what call 39 left unmeasured and where
# batched decode's time goes. Builds: m34 (main before a7921b7: the fast precision's experts exact), var39's q8
# (a7921b7: the fast decode gate/up on the integer-dot GEMV) and q8d (the one-token down projection on it too,
# mkvars39.sh), var40's g (b491e15: batched decode's gate/up grouped by expert). First --profile of 8 sequences
# batched at 128 (g, fast and exact) on Mixtral-8x7B and Qwen3-30B-A3B: the kernels' shares of a batched step, never
# profiled for MoE; then Qwen3's and gpt-oss's fast decode m / q8, q8d on Mixtral and gpt-oss. Carry .gl, build-pack
# and bench/peers/llamacpp/dist (models/ and tests/data/models moved out of the tree for the upload). What would pass
# LIMIT s (default 560) is skipped.
set -u
T0=$SECONDS
t() { echo "== $(( SECONDS - T0 )) s: $*" | tee -a "$OUT/log.txt"; }
left() { [ $(( SECONDS - T0 + $1 )) -lt ${LIMIT:-560} ] || { t "skipped: $2"; false; }; }
for f in .gl/*.deb; do dpkg -x "$f" / 2>/dev/null; done; ldconfig
export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json
mkdir -p /tmp/b /tmp/var/m
tar -C /tmp/b -xJf build-pack/main28.tar.xz ./libwebgpu_wrapper.so && tar -C /tmp/var/m -xJf build-pack/m34.tar.xz &&
  tar -C /tmp/var -xJf build-pack/var39.tar.xz ./q8 ./q8d && tar -C /tmp/var -xJf build-pack/var40.tar.xz ./g
cp /tmp/var/m/libmicrohttpd.so.12 /tmp/b/
nvidia-smi --query-gpu=name,clocks.max.sm,clocks.max.mem --format=csv,noheader | tee -a "$OUT/log.txt"
tag() { grep '^{' | sed "s/^{/{\"engine\": \"$1\", \"shape\": \"$M\", /" | tee -a "$OUT/results.jsonl"; }
wg() { # seconds build label args...
  left $1 "$2 $M $3" || return; t "$2 $M $3"; local s=$1 w=$2; shift 3
  LD_LIBRARY_PATH=/tmp/b:/tmp/var/$w timeout $s /tmp/var/$w/wgllm-bench -m /tmp/$M.gguf --runs 3 --kv f16 --json "$@" \
    2>>"$OUT/errors.txt" | tag "wgllm-$w"
}
prof() { # seconds precision
  left $1 "g $M profile parallel 8 $2" || return; t "g $M profile parallel 8 $2"
  LD_LIBRARY_PATH=/tmp/b:/tmp/var/g timeout $1 /tmp/var/g/wgllm-bench -m /tmp/$M.gguf --runs 1 --kv f16 \
    --parallel 8 --prompt 128 --gen 16 --batched-only --precision-list $2 --profile > "$OUT/profile8_${M}_$2.txt" \
    2>>"$OUT/errors.txt"
}
write() { left 60 "$M" || return; t "write $M"
  LD_LIBRARY_PATH=/tmp/b:/tmp/var/m /tmp/var/m/wgllm-bench --synthetic $M --write-gguf /tmp/$M.gguf > /dev/null \
    2>>"$OUT/errors.txt"; }
D="--prompt 128 --gen 32"
M=mixtral-8x7b; if write; then
  prof 50 fast; prof 50 exact
  wg 45 q8d "decode 128 fast" $D --precision-list fast
  rm -f /tmp/$M.gguf; fi
M=qwen3-30b-a3b; if write; then
  prof 30 fast; prof 30 exact
  for w in m q8; do wg 30 $w "decode 128 fast" $D --precision-list fast; done
  rm -f /tmp/$M.gguf; fi
M=gpt-oss-20b; if write; then
  for w in m q8 q8d; do wg 30 $w "decode 128 fast" $D --precision-list fast; done
  rm -f /tmp/$M.gguf; fi
t end
