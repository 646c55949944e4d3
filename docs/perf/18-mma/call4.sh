#!/usr/bin/env bash
# Device call 4 (H200): issue 33's table in one call. The same GGUF files (wgllm-bench --write-gguf of the synthetic
# Llama-3.1-8B and 3.2-1B shapes, the 8B also requantized to Q4_K_M by llama.cpp's quantizer) through: native
# wgllm (bun-webgpu's Dawn), wgllm on Node (npm webgpu's newer Dawn) with and without subgroup matrices, llama.cpp's
# Vulkan backend. Prefill 128/512/2048, decode at the prompt's context, 8 sessions batched; the tensor-core GEMM's
# kernel times; a per-kernel profile of the 8B's fast prefill on Node. Carry as call1.sh plus
# bench/peers/llamacpp/dist; native.tar.xz holds llc_quantize too. Writes $OUT/table.jsonl and *.txt.
set -u
T0=$SECONDS
t() { echo "== $(( SECONDS - T0 )) s: $*" >> "$OUT/log.txt"; }
for f in .gl/*.deb; do dpkg -x "$f" /; done; ldconfig
export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json
cat build-pack/node.xz.* | xz -dc > /tmp/node && chmod +x /tmp/node
xz -dc build-pack/dawn.node.xz > /tmp/dawn.node
tar -C /tmp -xJf build-pack/native.tar.xz
B=/tmp/build-dev
mkdir -p /tmp/llc && tar -xJf bench/peers/llamacpp/dist/llcbench-linux-x64-vulkan.tar.xz -C /tmp/llc && cp $B/llc_quantize /tmp/llc/lib/
L=/tmp/llc/lib
export WGLLM_DAWN_NODE=/tmp/dawn.node WGLLM_WASM_DIR=build-pack
( LD_LIBRARY_PATH=$B $B/wgllm-bench --synthetic llama-8b --write-gguf /tmp/x8b.gguf > /dev/null 2>&1
  LD_LIBRARY_PATH=$L:$B $L/llc_quantize /tmp/x8b.gguf /tmp/x8b-q4km.gguf Q4_K_M > /tmp/quant.log 2>&1 || tail -3 /tmp/quant.log >> "$OUT/errors.txt"
  LD_LIBRARY_PATH=$B $B/wgllm-bench --synthetic llama-1b --write-gguf /tmp/x1b.gguf > /dev/null 2>&1; echo done > /tmp/files.done ) &
t kernels
timeout 120 /tmp/node node/tools/run_wasm.mjs build-pack/test_ops.wasm --perf -f gemm_perf/mma > "$OUT/gemm_perf.txt" 2>&1
while [ ! -f /tmp/files.done ]; do sleep 2; done
J=$OUT/table.jsonl
P="--kv f16 --gen 32 --runs 3 --prefill-runs 2 --json"
tag() { sed "s/^{/{\"engine\": \"$1\", \"file\": \"$2\", /" | grep '^{' >> "$J"; }
NOSMAT="backend=vulkan,enable-dawn-features=vulkan_enable_f16_on_nvidia,disable_robustness,disable-dawn-features=timestamp_quantization"
for f in x8b x8b-q4km x1b; do
  t "$f"
  timeout 120 /tmp/node node/bin/wgllm.mjs bench -m /tmp/$f.gguf --prompt 128,512,2048 --precision-list exact,fast $P 2>>"$OUT/errors.txt" | tag node $f
  WGLLM_DAWN_FLAGS=$NOSMAT timeout 80 /tmp/node node/bin/wgllm.mjs bench -m /tmp/$f.gguf --prompt 512,2048 --precision-list fast $P 2>>"$OUT/errors.txt" | tag node-nosmat $f
  LD_LIBRARY_PATH=$B timeout 100 $B/wgllm-bench -m /tmp/$f.gguf --prompt 128,512,2048 --precision-list exact,fast $P 2>>"$OUT/errors.txt" | tag native $f
  for p in 128 512 2048; do
    timeout 60 $L/llcbench bench /tmp/$f.gguf --backend vulkan --ngl 99 --prompt $p --gen 32 --runs 3 --kv f16 --sample backend 2>>"$OUT/errors.txt" | tag llama.cpp $f
  done
done
for f in x8b x1b; do
  t "batched $f"
  timeout 80 /tmp/node node/bin/wgllm.mjs bench -m /tmp/$f.gguf --prompt 128 --parallel 8 --precision-list exact,fast --kv f16 --gen 32 --runs 3 --json 2>>"$OUT/errors.txt" | tag node $f
  LD_LIBRARY_PATH=$B timeout 60 $B/wgllm-bench -m /tmp/$f.gguf --prompt 128 --parallel 8 --precision-list exact,fast --kv f16 --gen 32 --runs 3 --json 2>>"$OUT/errors.txt" | tag native $f
  timeout 60 $L/llcbench bench /tmp/$f.gguf --backend vulkan --ngl 99 --prompt 128 --gen 32 --runs 3 --kv f16 --sample host --parallel 8 2>>"$OUT/errors.txt" | tag llama.cpp $f
done
t profile
timeout 60 /tmp/node node/bin/wgllm.mjs bench -m /tmp/x8b.gguf --prompt 512 --precision-list fast --kv f16 --gen 16 --runs 2 --prefill-runs 1 --profile > "$OUT/profile_8b_fast.txt" 2>&1
t end
cat "$OUT/log.txt"; grep '^perf' "$OUT/gemm_perf.txt" | cut -c1-160; wc -l "$J"; grep -v "^Warning" "$OUT/errors.txt" | grep -iv "deprecated\|subgroupMatrix\|\^\^\|^\s*$" | tail -n 5
