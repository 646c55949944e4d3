#!/usr/bin/env bash
# Device call 10 (H200): the prefill attention kernel after call 9 (its matrices zeroed explicitly: call 9's
# conformance failed, every token with more than one key wrong), its conformance, then the engine's fast prefill
# on Node (synthetic 8B and 1B). Carry as call9.sh without native.tar.xz and ab.tar.xz.
set -u
for f in .gl/*.deb; do dpkg -x "$f" /; done; ldconfig
export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json
cat build-pack/node.xz.* | xz -dc > /tmp/node && chmod +x /tmp/node
xz -dc build-pack/dawn.node.xz > /tmp/dawn.node
export WGLLM_DAWN_NODE=/tmp/dawn.node WGLLM_WASM_DIR=build-pack
timeout 40 /tmp/node node/tools/run_wasm.mjs build-pack/test_ops.wasm -f attention/mma -f gemm_f16/f16/q4 > "$OUT/conf.txt" 2>&1
P="--kv f16 --gen 32 --runs 3 --prefill-runs 2 --json --precision-list fast"
timeout 60 /tmp/node node/bin/wgllm.mjs bench --synthetic llama-8b --prompt 128,512,2048 $P 2>> "$OUT/errors.txt" | grep '^{' > "$OUT/bench.jsonl"
timeout 30 /tmp/node node/bin/wgllm.mjs bench --synthetic llama-1b --prompt 128,512,2048 $P 2>> "$OUT/errors.txt" | grep '^{' >> "$OUT/bench.jsonl"
grep -E "^FAIL|test_ops:" "$OUT/conf.txt" | head -12
cut -c1-330 "$OUT/bench.jsonl"
