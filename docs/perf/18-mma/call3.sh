#!/usr/bin/env bash
# Device call 3 (H200): call2.sh's fast-precision half after the subgroup_id fix (call 2's exact and native runs
# stand): the tensor-core GEMM's conformance and speed, the engine's fast precision on Node. Same carry as call1.sh.
set -u
for f in .gl/*.deb; do dpkg -x "$f" /; done; ldconfig
export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json
cat build-pack/node.xz.* | xz -dc > /tmp/node && chmod +x /tmp/node
xz -dc build-pack/dawn.node.xz > /tmp/dawn.node
export WGLLM_DAWN_NODE=/tmp/dawn.node WGLLM_WASM_DIR=build-pack
T() { timeout "$1" /tmp/node node/tools/run_wasm.mjs build-pack/test_ops.wasm "${@:2}"; echo "exit $?"; }
T 120 -v -f matmul_mma/ > "$OUT/mma_conf.txt" 2>&1
T 120 --perf -f gemm_perf/mma > "$OUT/gemm_perf.txt" 2>&1
J=$OUT/bench.jsonl
nb() { local tag=$1 t=$2; shift 2; timeout "$t" /tmp/node node/bin/wgllm.mjs bench "$@" 2>>"$OUT/errors.txt" | grep '^{' | sed "s/^{/{\"engine\": \"$tag\", /" >> "$J"; }
P="--kv f16 --gen 32 --runs 3 --prefill-runs 2 --json"
nb node 150 --synthetic llama-8b --prompt 128,512,2048 --precision-list fast $P
nb node 80 --synthetic llama-1b --prompt 128,512,2048 --precision-list fast $P
nb node 80 --synthetic llama-8b --prompt 128 --parallel 8 --precision-list fast $P
timeout 60 /tmp/node node/bin/wgllm.mjs bench --synthetic llama-8b --prompt 512 --precision-list fast --kv f16 --gen 16 --runs 2 --prefill-runs 1 --profile > "$OUT/profile_8b_fast.txt" 2>&1
tail -n 3 "$OUT"/mma_conf.txt "$OUT"/gemm_perf.txt; cut -c1-300 "$J"; grep -v "^Warning" "$OUT/errors.txt" | grep -v deprecated | tail -n 5
