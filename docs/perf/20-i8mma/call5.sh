#!/usr/bin/env bash
# Device call 5 (H200), on call 4's machine: calls 2 and 3's prefill measurements again with the bench's fix (calls
# 2 and 3 ran --runs 1 --prefill-runs 3, which wrote past the bench's prefill array: their Node figures are not
# results). Carry build-pack/{node.xz.01,dawn.node.xz,wgllm-bench.wasm,test_ops.wasm,nf,native.tar.xz}:
# nf/wgllm-bench.wasm is the same tree without the per-layer flush.
# 0. gemm_i8's conformance again, now run from wgllm_dev's kernel table (its variants dev=1);
# 1. the GGUF files in the background (the synthetic 8B as Q4_0, then Q4_K_M by llama.cpp's quantizer);
# 2. Node, fast precision, the synthetic 8B and 1B at 128/512/2048 tokens, without and with the flush, alternated;
# 3. the same on the Q4_K_M file; 4. a profile of the 8B's 512-token fast prefill.
set -u
T0=$SECONDS
t() { echo "== $((SECONDS - T0)) s: $*" >> "$OUT/log.txt"; }
for f in .gl/*.deb; do dpkg -x "$f" /; done; ldconfig
export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json
cat build-pack/node.xz.* | xz -dc > /tmp/node && chmod +x /tmp/node
xz -dc build-pack/dawn.node.xz > /tmp/dawn.node
tar -C /tmp -xJf build-pack/native.tar.xz
mkdir -p /tmp/q && tar -C /tmp/q -xJf build-pack/quant.tar.xz
export WGLLM_DAWN_NODE=/tmp/dawn.node
B=/tmp/build-dev
( LD_LIBRARY_PATH=$B $B/wgllm-bench --synthetic llama-8b --write-gguf /tmp/x8b.gguf > /tmp/gguf.log 2>&1
  LD_LIBRARY_PATH=/tmp/q/lib /tmp/q/lib/llc_quantize /tmp/x8b.gguf /tmp/x8b-q4km.gguf Q4_K_M > /tmp/quant.log 2>&1
  echo $? > /tmp/files.done ) &
timeout 60 /tmp/node node/tools/run_wasm.mjs build-pack/test_ops.wasm -f gemm_i8/ -f gemm_f16/route -f gemm_f16/refuse > "$OUT/conf.txt" 2>&1
J=$OUT/prefill.jsonl
P="--kv f16 --gen 16 --runs 2 --prefill-runs 3 --json --precision-list fast"
run() { # build rep model-args...
  WGLLM_WASM_DIR=build-pack/$1 timeout 70 /tmp/node node/bin/wgllm.mjs bench "${@:3}" $P 2>> "$OUT/errors.txt" |
    grep '^{' | sed "s/^{/{\"build\": \"$1\", \"rep\": $2, /" >> "$J"
}
for rep in 1 2 3; do
  t "8b rep $rep"
  for b in nf .; do run $b $rep --synthetic llama-8b --prompt 128,512,2048; done
done
for rep in 1 2; do
  t "1b rep $rep"
  for b in nf .; do run $b $rep --synthetic llama-1b --prompt 128,512,2048; done
done
t wait files
for i in $(seq 60); do [ -f /tmp/files.done ] && break; sleep 2; done
for rep in 1 2; do
  t "q4km rep $rep"
  for b in nf .; do run $b $rep -m /tmp/x8b-q4km.gguf --prompt 512,2048; done
done
t profile
WGLLM_WASM_DIR=build-pack timeout 60 /tmp/node node/bin/wgllm.mjs bench --synthetic llama-8b --prompt 512 \
  --precision-list fast --kv f16 --gen 8 --runs 2 --prefill-runs 2 --profile > "$OUT/profile_8b_fast.txt" 2>&1
t end
cat "$OUT/log.txt"; grep -E "^FAIL|test_ops:" "$OUT/conf.txt"; python3 - "$J" <<'PY'
import json, sys
for l in open(sys.argv[1]):
    r = json.loads(l)
    print(r["build"], r["rep"], r["model"][-12:], r["prompt_tokens"], r["prefill_tok_s"], r["ttft_ms"], r["prefill_cpu_ms"], r["decode_tok_s"])
PY
grep -v "^Warning" "$OUT/errors.txt" | tail -n 5; cat /tmp/files.done
