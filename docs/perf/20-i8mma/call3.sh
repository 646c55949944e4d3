#!/usr/bin/env bash
# Device call 3 (H200), on call 2's machine: carry build-pack/ab.tar.xz (this tree's native wgllm-bench with the
# per-layer flush and without it, wgllm-bench-nf). Node on the Q4_K_M file call 2 made (llama.cpp's quantizer from
# the synthetic 8B's Q4_0 GGUF); native A/B of the flush; a profile of the 8B's fast prefill on Node.
set -u
T0=$SECONDS
t() { echo "== $((SECONDS - T0)) s: $*" >> "$OUT/log.txt"; }
for f in .gl/*.deb; do dpkg -x "$f" /; done; ldconfig
export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json
[ -x /tmp/node ] || { cat build-pack/node.xz.* | xz -dc > /tmp/node && chmod +x /tmp/node; }
[ -f /tmp/dawn.node ] || xz -dc build-pack/dawn.node.xz > /tmp/dawn.node
[ -d /tmp/build-dev ] || tar -C /tmp -xJf build-pack/native.tar.xz
mkdir -p /tmp/ab && tar -C /tmp/ab -xJf build-pack/ab.tar.xz
export WGLLM_DAWN_NODE=/tmp/dawn.node WGLLM_WASM_DIR=build-pack
t wait files
for i in $(seq 100); do [ -f /tmp/files.done ] && break; sleep 2; done
cat /tmp/files.done /tmp/gguf.log /tmp/quant.log 2>/dev/null | tail -4 > "$OUT/files.txt"; ls -la /tmp/*.gguf >> "$OUT/files.txt"
J=$OUT/q4km.jsonl
P="--kv f16 --gen 8 --runs 1 --prefill-runs 3 --json"
t q4km node
timeout 100 /tmp/node node/bin/wgllm.mjs bench -m /tmp/x8b-q4km.gguf --prompt 512,2048 --precision-list fast $P \
  2>> "$OUT/errors.txt" | grep '^{' | sed 's/^{/{"engine": "node", /' >> "$J"
t native ab
A=$OUT/native_ab.jsonl
for b in wgllm-bench-nf wgllm-bench; do
  LD_LIBRARY_PATH=/tmp/build-dev timeout 80 /tmp/ab/$b --synthetic llama-8b --prompt 512,2048 --precision-list exact,fast $P \
    2>> "$OUT/errors.txt" | grep '^{' | sed "s/^{/{\"build\": \"$b\", /" >> "$A"
done
t profile
timeout 60 /tmp/node node/bin/wgllm.mjs bench --synthetic llama-8b --prompt 512 --precision-list fast --kv f16 --gen 8 \
  --runs 1 --prefill-runs 1 --profile > "$OUT/profile_8b_fast.txt" 2>&1
t end
cat "$OUT/log.txt" "$OUT/files.txt"; cut -c1-420 "$J" "$A"; grep -v "^Warning" "$OUT/errors.txt" | tail -n 5
