#!/usr/bin/env bash
# Device call 15 of docs/perf/31-moe (2026-12-06): call 14 measured da1b5c7's f32 expert tile 4x slower than the
# scalar tile it replaced; 3c75587 keeps the tiles' sums in named registers (moe_linear) or reads them at constant
# indices (matmul_q8 _moe). This call measures that candidate (pack moe15: 3c75587's wgllm-bench and test_ops) in
# both precisions at prefill 128/512 on the three shapes, the scalar tile (moe13) on Qwen3-30B-A3B (call 14's Qwen3
# results did not come back: a call returns 8 files), llama.cpp's Mixtral prefill 512 (call 14 reached its limit
# there), a profile of Qwen3's prefill 512, and test_ops' tile cases on the GPU. Everything goes to five files.
# Carry .gl, build-pack/moe13.tar.xz, build-pack/moe15.tar.xz and bench/peers/llamacpp/dist.
set -u
T0=$SECONDS
t() { echo "== $(( SECONDS - T0 )) s: $*" | tee -a "$OUT/log.txt"; }
for f in .gl/*.deb; do dpkg -x "$f" / 2>/dev/null; done; ldconfig
export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json
mkdir -p /tmp/b13 /tmp/b15 /tmp/llc
tar -C /tmp/b13 -xJf build-pack/moe13.tar.xz && tar -C /tmp/b15 -xJf build-pack/moe15.tar.xz &&
  tar -xJf bench/peers/llamacpp/dist/llcbench-linux-x64-vulkan.tar.xz -C /tmp/llc
L=$(dirname "$(find /tmp/llc -name llcbench -type f | head -1)")
J=$OUT/results.jsonl
tag() { grep '^{' | sed "s/^{/{\"engine\": \"$1\", /" | tee -a "$J"; }
bench() { # engine-build model precisions
  LD_LIBRARY_PATH=/tmp/$1 timeout 100 /tmp/$1/wgllm-bench -m /tmp/$2.gguf --prompt 128,512 --gen 8 --runs 3 --kv f16 \
    --precision-list $3 --json 2>>"$OUT/errors.txt" | tag "wgllm-$1"
}
t "test_ops tile cases (moe15)"
( cd tests && LD_LIBRARY_PATH=/tmp/b15 WGLLM_BIN=/tmp/b15 timeout 70 /tmp/b15/test_ops -f /tiles/ -f /per-expert/ \
    -f tiles_q8 > "$OUT/test_ops.txt" 2>&1; echo "rc=$?" >> "$OUT/test_ops.txt" )
grep -E "FAIL|cases|checks|rc=" "$OUT/test_ops.txt" | tail -6
M=gpt-oss-20b
t "write $M"
LD_LIBRARY_PATH=/tmp/b15 /tmp/b15/wgllm-bench --synthetic $M --write-gguf /tmp/$M.gguf > /dev/null 2>>"$OUT/errors.txt"
t "b15 $M prefill 128,512 exact,fast"; bench b15 $M exact,fast
rm -f /tmp/$M.gguf
M=qwen3-30b-a3b
t "write $M"
LD_LIBRARY_PATH=/tmp/b15 /tmp/b15/wgllm-bench --synthetic $M --write-gguf /tmp/$M.gguf > /dev/null 2>>"$OUT/errors.txt"
t "b15 $M prefill 128,512 exact,fast"; bench b15 $M exact,fast
t "b13 $M prefill 128,512 exact"; bench b13 $M exact
t "b15 $M profile of prefill 512"
LD_LIBRARY_PATH=/tmp/b15 timeout 60 /tmp/b15/wgllm-bench -m /tmp/$M.gguf --prompt 512 --gen 4 --runs 1 --kv f16 \
  --profile >> "$OUT/profiles.txt" 2>&1
rm -f /tmp/$M.gguf
M=mixtral-8x7b
t "write $M"
LD_LIBRARY_PATH=/tmp/b15 /tmp/b15/wgllm-bench --synthetic $M --write-gguf /tmp/$M.gguf > /dev/null 2>>"$OUT/errors.txt"
t "b15 $M prefill 128,512 exact,fast"; bench b15 $M exact,fast
t "llama.cpp $M prompt 512"
timeout 80 $L/llcbench bench /tmp/$M.gguf --backend vulkan --ngl 99 --prompt 512 --gen 8 --runs 3 --kv f16 \
  --sample host 2>>"$OUT/errors.txt" | tag llama.cpp
t end
