#!/usr/bin/env bash
# Device call 2 (H200): as call1.sh (same carry, same two-call upload of node.xz.*), after the uniformity fix:
# the tensor-core GEMM's conformance and speed, then the engine on Node (exact, fast with and without subgroup
# matrices) beside native, on the synthetic Llama-3.1-8B and 3.2-1B shapes. Writes $OUT/*.txt, $OUT/bench.jsonl.
set -u
for f in .gl/*.deb; do dpkg -x "$f" /; done; ldconfig
export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json
cat build-pack/node.xz.* | xz -dc > /tmp/node && chmod +x /tmp/node
xz -dc build-pack/dawn.node.xz > /tmp/dawn.node
tar -C /tmp -xJf build-pack/native.tar.xz
B=/tmp/build-dev
export WGLLM_DAWN_NODE=/tmp/dawn.node WGLLM_WASM_DIR=build-pack
T() { timeout "$1" /tmp/node node/tools/run_wasm.mjs build-pack/test_ops.wasm "${@:2}"; echo "exit $?"; }
T 150 -v -f matmul_mma/ > "$OUT/mma_conf.txt" 2>&1
T 150 --perf -f gemm_perf/mma > "$OUT/gemm_perf.txt" 2>&1
J=$OUT/bench.jsonl
# node: wgllm bench on Node; NOSMAT: without the subgroup-matrix toggles (the int8 GEMM takes fast prefill)
nb() { local tag=$1 t=$2; shift 2; timeout "$t" /tmp/node node/bin/wgllm.mjs bench "$@" 2>>"$OUT/errors.txt" | grep '^{' | sed "s/^{/{\"engine\": \"$tag\", /" >> "$J"; }
vb() { local t=$1; shift; LD_LIBRARY_PATH=$B timeout "$t" $B/wgllm-bench "$@" 2>>"$OUT/errors.txt" | grep '^{' | sed "s/^{/{\"engine\": \"native\", /" >> "$J"; }
P="--kv f16 --gen 32 --runs 3 --prefill-runs 2 --json"
nb node 200 --synthetic llama-8b --prompt 128,512,2048 --precision-list exact,fast $P
nb node 100 --synthetic llama-1b --prompt 128,512,2048 --precision-list exact,fast $P
nb node 100 --synthetic llama-8b --prompt 128 --parallel 8 --precision-list exact,fast $P
nb node-pipeline3 60 --synthetic llama-8b --prompt 512 --pipeline 3 --precision-list exact $P
WGLLM_DAWN_FLAGS="backend=vulkan,enable-dawn-features=vulkan_enable_f16_on_nvidia,disable_robustness" nb node-nosmat 80 --synthetic llama-8b --prompt 512 --precision-list fast $P
vb 120 --synthetic llama-8b --prompt 128,2048 --precision-list exact,fast $P
vb 60 --synthetic llama-1b --prompt 128,2048 --precision-list exact,fast $P
timeout 60 /tmp/node node/bin/wgllm.mjs bench --synthetic llama-8b --prompt 512 --precision-list fast --kv f16 --gen 16 --runs 2 --prefill-runs 1 --profile > "$OUT/profile_8b_fast.txt" 2>&1
tail -3 "$OUT"/mma_conf.txt "$OUT"/gemm_perf.txt; cut -c1-300 "$J"; grep -v "^Warning" "$OUT/errors.txt" | tail -5
