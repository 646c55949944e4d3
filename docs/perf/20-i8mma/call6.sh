#!/usr/bin/env bash
# Device call 6 (H200), on call 5's machine and its GGUF files: wgllm on Node (npm webgpu's Dawn). Carry
# build-pack/{dawn.node.xz,wgllm-bench.wasm,test_ops.wasm,nf} (nf/wgllm-bench.wasm: this tree without the per-layer
# flush; calls 2 and 3 ran --runs 1 --prefill-runs 3, which wrote past the bench's prefill array, fixed since: their
# Node figures are not results).
# 0. conformance: gemm_i8 (now run from wgllm_dev's table), gemm_f16's route and refusal cases;
# 1. the flush A/B: the synthetic 8B and 1B, fast, 128/512/2048, without and with it, alternated;
# 2. the 8B's 2048-token prompt in one chunk of 2048 (--prefill-chunk 2048) instead of two of 1024;
# 3. profiles of the fast prefill (call 5's Q4_0 files): the 8B at 512 and 2048 tokens, the 1B at 512. Call 7
#    follows.
set -u
T0=$SECONDS
t() { echo "== $((SECONDS - T0)) s: $*" >> "$OUT/log.txt"; }
for f in .gl/*.deb; do dpkg -x "$f" /; done; ldconfig
export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json
cat build-pack/node.xz.* | xz -dc > /tmp/node && chmod +x /tmp/node
xz -dc build-pack/dawn.node.xz > /tmp/dawn.node
export WGLLM_DAWN_NODE=/tmp/dawn.node WGLLM_WASM_DIR=build-pack
W="/tmp/node node/bin/wgllm.mjs bench"
t conformance
timeout 60 /tmp/node node/tools/run_wasm.mjs build-pack/test_ops.wasm -f gemm_i8/ -f gemm_f16/route -f gemm_f16/refuse \
  > "$OUT/conf.txt" 2>&1
A=$OUT/flush_ab.jsonl
PA="--kv f16 --gen 16 --runs 2 --prefill-runs 3 --json --precision-list fast"
for rep in 1 2; do
  t "flush ab rep $rep"
  for b in nf .; do
    for m in llama-8b llama-1b; do
      WGLLM_WASM_DIR=build-pack/$b timeout 60 $W --synthetic $m --prompt 128,512,2048 $PA 2>> "$OUT/errors.txt" |
        grep '^{' | sed "s/^{/{\"build\": \"$b\", \"rep\": $rep, /" >> "$A"
    done
  done
done
t "chunk 2048"
timeout 60 $W --synthetic llama-8b --prompt 2048 --prefill-chunk 2048 $PA 2>> "$OUT/errors.txt" |
  grep '^{' | sed 's/^{/{"build": "chunk2048", "rep": 1, /' >> "$A"
t profile
timeout 60 $W -m /tmp/x8b.gguf --prompt 512 --precision-list fast --kv f16 --gen 16 --runs 2 --prefill-runs 2 \
  --profile > "$OUT/profile_8b_fast.txt" 2>&1
timeout 60 $W -m /tmp/x8b.gguf --prompt 2048 --precision-list fast --kv f16 --gen 16 --runs 2 --prefill-runs 2 \
  --profile > "$OUT/profile_8b_2048_fast.txt" 2>&1
timeout 40 $W -m /tmp/x1b.gguf --prompt 512 --precision-list fast --kv f16 --gen 16 --runs 2 --prefill-runs 2 \
  --profile > "$OUT/profile_1b_fast.txt" 2>&1
t end
cat "$OUT/log.txt"; grep -E "^FAIL|test_ops:" "$OUT/conf.txt"; python3 - "$A" <<'PY'
import json, sys
for l in open(sys.argv[1]):
    r = json.loads(l)
    print(r["build"], r["rep"], r["model"], r["prompt_tokens"], r["prefill_tok_s"], r["ttft_ms"], r["prefill_cpu_ms"], r["decode_tok_s"])
PY
grep -v "^Warning" "$OUT/errors.txt" | grep -v "deprecated\|\^\^\|subgroupMatrix\|^\s*$\|^:\|Compilation\|warning" | tail -n 5
