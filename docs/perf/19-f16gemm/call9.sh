#!/usr/bin/env bash
# Device call 9 (H200): call 8 again with its fixes (the attention kernel compiles: `pass` is a WGSL keyword;
# matmul_q8/fallback on tensor cores; test_ops natively with its library path), without the A/B. Call 8 ran after the house step merged (issue 26: op_dispatch, the arch split, src/dev, tools/common)
# and with prefill attention on subgroup matrices (attn_prefill_mma):
# 1. conformance on Node (npm webgpu's Dawn): matmul_mma, gemm_f16, dequant_f16 and every attention case;
# 2. the engine's fast prefill on Node (gemm_f16 128 x 128 with 64-wide steps, attn_prefill_mma), twice; a profile;
# 3. A/B of the native engine (bun-webgpu's Dawn): before the house step (native.tar.xz, the previous session's
#    build) and after it (ab.tar.xz: this tree's wgllm-bench, libwgllm and test_ops), alternated, exact and fast;
# 4. this tree's whole test_ops natively on the H200, then on Node, as far as the time allows.
# Carry: build-pack/node.xz.00 and .gl in a call of their own first, then build-pack/{node.xz.01,dawn.node.xz,
# test_ops.wasm,wgllm-bench.wasm,native.tar.xz,ab.tar.xz}. Writes $OUT/*.txt and *.jsonl.
set -u
T0=$SECONDS
t() { echo "== $((SECONDS - T0)) s: $*" >> "$OUT/log.txt"; }
for f in .gl/*.deb; do dpkg -x "$f" /; done; ldconfig
export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json
cat build-pack/node.xz.* | xz -dc > /tmp/node && chmod +x /tmp/node
xz -dc build-pack/dawn.node.xz > /tmp/dawn.node
tar -C /tmp -xJf build-pack/native.tar.xz
mkdir -p /tmp/ab && tar -C /tmp/ab -xJf build-pack/ab.tar.xz
cp -n /tmp/build-dev/libwebgpu_wrapper.so /tmp/build-dev/libmicrohttpd.so.12 /tmp/ab/
export WGLLM_DAWN_NODE=/tmp/dawn.node WGLLM_WASM_DIR=build-pack
T() { timeout "$1" /tmp/node node/tools/run_wasm.mjs build-pack/test_ops.wasm "${@:2}"; echo "exit $?"; }
t conformance
T 100 -f matmul_mma/ -f gemm_f16/ -f dequant_f16/ -f attention/ > "$OUT/conf.txt" 2>&1
t node bench
J=$OUT/bench.jsonl
tag() { grep '^{' | sed "s/^{/{\"engine\": \"$1\", /" >> "$J"; }
P="--kv f16 --gen 32 --runs 3 --prefill-runs 2 --json"
for rep in 1 2; do
  timeout 100 /tmp/node node/bin/wgllm.mjs bench --synthetic llama-8b --prompt 128,512,2048 --precision-list fast $P \
    2>> "$OUT/errors.txt" | tag "node-r$rep"
  timeout 50 /tmp/node node/bin/wgllm.mjs bench --synthetic llama-1b --prompt 128,512,2048 --precision-list fast $P \
    2>> "$OUT/errors.txt" | tag "node-r$rep"
done
t profile
timeout 45 /tmp/node node/bin/wgllm.mjs bench --synthetic llama-8b --prompt 512 --precision-list fast --kv f16 --gen 16 \
  --runs 2 --prefill-runs 1 --profile > "$OUT/profile_8b_fast.txt" 2>&1
t native test_ops
(cd /tmp/ab && LD_LIBRARY_PATH=/tmp/ab timeout 200 ./test_ops > "$OUT/test_ops_native.txt" 2>&1; echo "exit $?" >> "$OUT/test_ops_native.txt")
t node test_ops
left=$((400 - (SECONDS - T0)))
[ "$left" -gt 30 ] && T "$left" > "$OUT/test_ops_node.txt" 2>&1
t end
cat "$OUT/log.txt"
grep -E "^FAIL|test_ops:|^exit" "$OUT/conf.txt" | head -20
cut -c1-330 "$J"
python3 -c "
import json
for l in open('$A'):
    r=json.loads(l); print(r['build'], r['rep'], r['model'], r.get('precision'), 'prefill', r['prefill_tok_s'], 'decode', r['decode_tok_s'])
" 2> /dev/null || cut -c1-200 "$A"
tail -n 3 "$OUT/test_ops_native.txt" "$OUT/test_ops_node.txt" 2> /dev/null
grep -h "^FAIL " "$OUT/test_ops_native.txt" "$OUT/test_ops_node.txt" 2> /dev/null | head -10
grep -v "^Warning" "$OUT/errors.txt" | grep -iv "deprecated\|subgroupMatrix\|\^\^\|^\s*$" | tail -n 5
