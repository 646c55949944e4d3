#!/usr/bin/env bash
# Device call 13 of docs/perf/31-moe: the build of this stop (MXFP4 split in quants and exponents, 124f37d; batched
# decode by pair again, cfe8c4d reverted; pack build-pack/moe13.tar.xz: stripped build-dev wgllm, wgllm-bench, test_ops,
# test_models, libwgllm.so.0, Dawn, libmicrohttpd). First test_ops' MXFP4, GEMV and MoE cases on the GPU, then the
# Qwen3-30B-A3B shape against llama.cpp (decode at 128 and 512, prefill, 8 sequences: call 12 ended before it), gpt-oss-20b
# decode and 8 sequences, Mixtral-8x7B's 8 sequences (the grouping reverted), and test_models last (the fixtures moved
# out of the upload for its size fail: listed in the output). Carry .gl, build-pack/moe13.tar.xz and
# bench/peers/llamacpp/dist.
set -u
T0=$SECONDS
t() { echo "== $(( SECONDS - T0 )) s: $*" | tee -a "$OUT/log.txt"; }
for f in .gl/*.deb; do dpkg -x "$f" / 2>/dev/null; done; ldconfig
export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json
mkdir -p /tmp/b /tmp/llc
tar -C /tmp/b -xJf build-pack/moe13.tar.xz && tar -xJf bench/peers/llamacpp/dist/llcbench-linux-x64-vulkan.tar.xz -C /tmp/llc
L=$(dirname "$(find /tmp/llc -name llcbench -type f | head -1)")
t "test_ops MXFP4, GEMV and MoE cases"
( cd tests && LD_LIBRARY_PATH=/tmp/b WGLLM_BIN=/tmp/b timeout 100 /tmp/b/test_ops -f MXFP4 -f mxfp4 -f gemv/ -f moe_ \
    > "$OUT/test_ops.txt" 2>&1; echo "rc=$?" >> "$OUT/test_ops.txt" )
grep -E "FAIL|cases|checks|rc=" "$OUT/test_ops.txt" | tail -6
tag() { grep '^{' | sed "s/^{/{\"engine\": \"$1\", /" | tee -a "$J"; }
run_model() { # M, what: full | decode-p8 | p8
  M=$1 J=$OUT/$M.jsonl
  t "write $M"
  LD_LIBRARY_PATH=/tmp/b /tmp/b/wgllm-bench --synthetic $M --write-gguf /tmp/$M.gguf > /dev/null 2>>"$OUT/errors.txt"
  if [ $2 != p8 ]; then
    t "$M decode"
    LD_LIBRARY_PATH=/tmp/b timeout 100 /tmp/b/wgllm-bench -m /tmp/$M.gguf --prompt $([ $2 = full ] && echo 128,512 || echo 128) \
      --gen 32 --runs 3 --kv f16 --json 2>>"$OUT/errors.txt" | tag wgllm
  fi
  t "$M parallel 8"
  LD_LIBRARY_PATH=/tmp/b timeout 100 /tmp/b/wgllm-bench -m /tmp/$M.gguf --parallel 8 --prompt 128 --gen 32 --runs 3 \
    --kv f16 --json --batched-only 2>>"$OUT/errors.txt" | tag wgllm
  if [ $2 = full ]; then
    t "llama.cpp parallel 8"
    timeout 100 $L/llcbench bench /tmp/$M.gguf --backend vulkan --ngl 99 --prompt 128 --gen 32 --runs 3 --kv f16 \
      --sample host --parallel 8 2>>"$OUT/errors.txt" | tag llama.cpp
  fi
  if [ $2 != p8 ]; then
    for P in $([ $2 = full ] && echo 128 512 || echo 128); do
      t "llama.cpp prompt $P"
      timeout 80 $L/llcbench bench /tmp/$M.gguf --backend vulkan --ngl 99 --prompt $P --gen 32 --runs 3 --kv f16 \
        --sample host 2>>"$OUT/errors.txt" | tag llama.cpp
    done
  fi
  rm -f /tmp/$M.gguf
}
run_model qwen3-30b-a3b full
run_model gpt-oss-20b decode-p8
run_model mixtral-8x7b p8
t "test_models"
( cd tests && LD_LIBRARY_PATH=/tmp/b WGLLM_BIN=/tmp/b timeout $(( 585 - (SECONDS - T0) )) /tmp/b/test_models \
    > "$OUT/test_models.txt" 2>&1; echo "rc=$?" >> "$OUT/test_models.txt" )
grep -E "^FAIL|checks|rc=" "$OUT/test_models.txt" | tail -12
t end
tail -5 "$OUT/errors.txt" 2>/dev/null
