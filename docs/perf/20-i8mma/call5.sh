#!/usr/bin/env bash
# Device call 5 (H200), on call 4's machine. Call 4's start took 526 s of the session's device time, so the table
# was cut to what this call and call 7 (the Node columns on this call's files, right after on the same machine)
# could take: the native figures are call 3's and call 8's, llama.cpp's 18-mma call 4's (the same weights through
# the same quantizer). 0. gemm_i8's conformance from wgllm_dev's table and gemm_f16's route and refusal cases;
# 1. the flush A/B: the synthetic 8B and 1B, fast, 128/512/2048, without (nf) and with the per-layer flush,
# alternated; the 8B's 2048 prompt in one chunk; 2. the Q4_K_M file (the 8B's Q4_0 GGUF through llama.cpp's
# quantizer) without and with; 3. profiles of the 8B's and the 1B's 512-token fast prefill.
# Carry build-pack/{node.xz.01,dawn.node.xz,wgllm-bench.wasm,test_ops.wasm,nf,quant.tar.xz,native.tar.xz}.
set -u
T0=$SECONDS
t() { echo "== $((SECONDS - T0)) s: $*" >> "$OUT/log.txt"; }
for f in .gl/*.deb; do dpkg -x "$f" /; done; ldconfig
export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json
cat build-pack/node.xz.* | xz -dc > /tmp/node && chmod +x /tmp/node
xz -dc build-pack/dawn.node.xz > /tmp/dawn.node
tar -C /tmp -xJf build-pack/native.tar.xz
mkdir -p /tmp/q && tar -C /tmp/q -xJf build-pack/quant.tar.xz
export WGLLM_DAWN_NODE=/tmp/dawn.node WGLLM_WASM_DIR=build-pack
B=/tmp/build-dev
( LD_LIBRARY_PATH=$B $B/wgllm-bench --synthetic llama-8b --write-gguf /tmp/x8b.gguf > /tmp/gguf.log 2>&1
  LD_LIBRARY_PATH=/tmp/q/lib /tmp/q/lib/llc_quantize /tmp/x8b.gguf /tmp/x8b-q4km.gguf Q4_K_M > /tmp/quant.log 2>&1
  echo $? > /tmp/files.done ) &
W="/tmp/node node/bin/wgllm.mjs bench"
t conformance
timeout 60 /tmp/node node/tools/run_wasm.mjs build-pack/test_ops.wasm -f gemm_i8/ -f gemm_f16/route -f gemm_f16/refuse \
  > "$OUT/conf.txt" 2>&1
A=$OUT/flush_ab.jsonl
PA="--kv f16 --gen 16 --runs 2 --prefill-runs 3 --json --precision-list fast"
run() { WGLLM_WASM_DIR=build-pack/$1 timeout 70 $W "${@:3}" $PA 2>> "$OUT/errors.txt" |
  grep '^{' | sed "s/^{/{\"build\": \"$1\", \"rep\": $2, /" >> "$A"; }
for rep in 1 2; do
  t "flush ab rep $rep"
  for b in nf .; do run $b $rep --synthetic llama-8b --prompt 128,512,2048; run $b $rep --synthetic llama-1b --prompt 128,512,2048; done
done
t "chunk 2048"
run . 1 --synthetic llama-8b --prompt 2048 --prefill-chunk 2048
t wait files
for i in $(seq 60); do [ -f /tmp/files.done ] && break; sleep 2; done
t q4km
for b in nf .; do run $b 1 -m /tmp/x8b-q4km.gguf --prompt 512,2048; done
t profile
timeout 50 $W --synthetic llama-8b --prompt 512 --precision-list fast --kv f16 --gen 8 --runs 2 --prefill-runs 2 \
  --profile > "$OUT/profile_8b_fast.txt" 2>&1
timeout 40 $W --synthetic llama-1b --prompt 512 --precision-list fast --kv f16 --gen 8 --runs 2 --prefill-runs 2 \
  --profile > "$OUT/profile_1b_fast.txt" 2>&1
t end
cat "$OUT/log.txt"; grep -E "^FAIL|test_ops:" "$OUT/conf.txt"; python3 - "$A" <<'PY'
import json, sys
for l in open(sys.argv[1]):
    r = json.loads(l)
    print(r["build"], r["rep"], r["model"][-14:], r["prompt_tokens"], r["prefill_tok_s"], r["ttft_ms"], r["prefill_cpu_ms"], r["decode_tok_s"])
PY
grep -v "^Warning" "$OUT/errors.txt" | grep -v "deprecated\|\^\^\|subgroupMatrix\|^\s*$\|^:\|Compilation\|warning" | tail -n 5
