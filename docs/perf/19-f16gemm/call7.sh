#!/usr/bin/env bash
# Device call 7 (H200): call6.sh again with the grid along M first (the workgroups in flight share W tiles in L2),
# 128-row tiles back (`_m128`, with `_k64` too), the 16-byte copies dropped; the GEMM timings twice (call 6's
# varied between identical runs). On npm webgpu's Dawn
# through Node: the conformance of dequant_f16, gemm_f16 and matmul_mma; the GEMM alone per variant and probe at
# the Llama-3.1-8B shape's projections and 512 tokens; the engine's fast prefill with it
# (synthetic 8B and 1B, q4gsw) and a per-kernel profile. Carry: build-pack/node.xz.00 and .gl in a call of its own
# first (the tree and the carry share 64 MiB), then build-pack/{node.xz.01,dawn.node.xz,test_ops.wasm,
# wgllm-bench.wasm}. Writes $OUT/*.txt and bench.jsonl.
set -u
T0=$SECONDS
t() { echo "== $((SECONDS - T0)) s: $*" >> "$OUT/log.txt"; }
for f in .gl/*.deb; do dpkg -x "$f" /; done; ldconfig
export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json
cat build-pack/node.xz.* | xz -dc > /tmp/node && chmod +x /tmp/node
xz -dc build-pack/dawn.node.xz > /tmp/dawn.node
export WGLLM_DAWN_NODE=/tmp/dawn.node WGLLM_WASM_DIR=build-pack
T() { timeout "$1" /tmp/node node/tools/run_wasm.mjs build-pack/test_ops.wasm "${@:2}"; echo "exit $?"; }
t conformance
T 90 -f matmul_mma/ -f gemm_f16/ -f dequant_f16/ > "$OUT/conf.txt" 2>&1
t gemm_perf
T 150 --perf -f gemm_perf/f16 > "$OUT/gemm_perf.txt" 2>&1
T 150 --perf -f gemm_perf/f16 > "$OUT/gemm_perf2.txt" 2>&1
t bench
J=$OUT/bench.jsonl
nb() {
  local t=$1
  shift
  timeout "$t" /tmp/node node/bin/wgllm.mjs bench "$@" 2>> "$OUT/errors.txt" | grep '^{' | sed 's/^{/{"engine": "node", /' >> "$J"
}
P="--kv f16 --gen 32 --runs 3 --prefill-runs 2 --json --precision-list fast"
nb 110 --synthetic llama-8b --prompt 512,2048 $P
nb 50 --synthetic llama-1b --prompt 512,2048 $P
t profile
timeout 45 /tmp/node node/bin/wgllm.mjs bench --synthetic llama-8b --prompt 512 --precision-list fast --kv f16 --gen 16 \
  --runs 2 --prefill-runs 1 --profile > "$OUT/profile_8b_fast.txt" 2>&1
t end
cat "$OUT/log.txt"
grep -E "^FAIL|test_ops:|^exit" "$OUT/conf.txt" | head -20
paste <(grep '^perf' "$OUT/gemm_perf.txt" | cut -c6-70,100-120,150-200) <(grep '^perf' "$OUT/gemm_perf2.txt" | cut -c100-120,150-200)
cut -c1-400 "$J"
grep -v "^Warning" "$OUT/errors.txt" | grep -iv "deprecated\|subgroupMatrix\|\^\^\|^\s*$" | tail -n 5
