#!/usr/bin/env bash
# Device call 7 (H200), on call 5's machine (nothing carried; call 6 was not run, nor the x1b file made): the table's Node columns on call 5's files: exact and
# fast (tensor cores), fast without subgroup matrices (Dawn's flags without the subgroup-matrix toggles); 8 sequences
# batched. Writes $OUT/table.jsonl.
set -u
T0=$SECONDS
t() { echo "== $((SECONDS - T0)) s: $*" >> "$OUT/log.txt"; }
for f in .gl/*.deb; do dpkg -x "$f" /; done; ldconfig
export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json
[ -x /tmp/node ] || { cat build-pack/node.xz.* | xz -dc > /tmp/node && chmod +x /tmp/node; }
[ -f /tmp/dawn.node ] || xz -dc build-pack/dawn.node.xz > /tmp/dawn.node
export WGLLM_DAWN_NODE=/tmp/dawn.node WGLLM_WASM_DIR=build-pack
W="/tmp/node node/bin/wgllm.mjs bench"
J=$OUT/table.jsonl
tag() { grep '^{' | sed "s/^{/{\"engine\": \"$1\", \"file\": \"$2\", /" >> "$J"; }
P="--kv f16 --gen 32 --runs 3 --prefill-runs 3 --json"
NOSMAT="backend=vulkan,enable-dawn-features=vulkan_enable_f16_on_nvidia,disable_robustness,disable-dawn-features=timestamp_quantization"
for f in x8b x8b-q4km x1b; do
  t "node $f"
  timeout 140 $W -m /tmp/$f.gguf --prompt 128,512,2048 --precision-list exact,fast $P 2>> "$OUT/errors.txt" | tag node $f
  WGLLM_DAWN_FLAGS=$NOSMAT timeout 60 $W -m /tmp/$f.gguf --prompt 512,2048 --precision-list fast $P \
    2>> "$OUT/errors.txt" | tag node-nosmat $f
done
for f in x8b x1b; do
  t "batched $f"
  timeout 60 $W -m /tmp/$f.gguf --prompt 128 --parallel 8 --precision-list exact,fast --kv f16 --gen 32 --runs 3 --json \
    2>> "$OUT/errors.txt" | tag node $f
done
t end
cat "$OUT/log.txt"; wc -l "$J"; grep -v "^Warning" "$OUT/errors.txt" | grep -v "deprecated\|\^\^\|subgroupMatrix\|^\s*$\|^:\|Compilation\|warning" | tail -n 5
