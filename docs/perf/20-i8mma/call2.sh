#!/usr/bin/env bash
# Device call 2 (H200), on call 1's machine: issue 33's int8 tensor-core GEMM and the prefill pass submitted a layer
# at a time. Carry build-pack/{node.xz.01,dawn.node.xz,test_ops.wasm,wgllm-bench.wasm,nf} (nf/wgllm-bench.wasm: the
# same tree without the per-layer flush) plus native.tar.xz (the previous native build: libwebgpu_wrapper, for
# call 3).
# 1. conformance on Node: gemm_i8 (every storage it takes, the Q6_K refusal), and the f16 GEMM and matmul_q8 beside;
# 2. the 8B's projections at 512 tokens: gemm_i8 (with the activations' quantization) against the default f16
#    GEMM (its conversions timed apart) and the integer-dot GEMM;
# 3. the GGUF files for call 3 (the synthetic 8B, then Q4_K_M by llama.cpp's quantizer), in the background;
# 4. Node, fast prefill of the synthetic 8B and 1B, without and with the per-layer flush, alternated.
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
setsid bash -c "LD_LIBRARY_PATH=$B $B/wgllm-bench --synthetic llama-8b --write-gguf /tmp/x8b.gguf > /tmp/gguf.log 2>&1;
  LD_LIBRARY_PATH=/tmp/q/lib /tmp/q/lib/llc_quantize /tmp/x8b.gguf /tmp/x8b-q4km.gguf Q4_K_M > /tmp/quant.log 2>&1;
  echo \$? > /tmp/files.done" < /dev/null > /dev/null 2>&1 &
T() { timeout "$1" /tmp/node node/tools/run_wasm.mjs build-pack/test_ops.wasm "${@:2}"; echo "exit $?"; }
t conformance
T 100 -f gemm_i8/ -f gemm_f16/f16/q4gsw -f matmul_q8/q4gsw > "$OUT/conf.txt" 2>&1
t gemm_perf
T 120 --perf -f gemm_perf/i8mma/ -f gemm_perf/f16_k64_m128/ -f gemm_perf/q8/ > "$OUT/gemm_perf.txt" 2>&1
t node prefill ab
J=$OUT/prefill.jsonl
P="--kv f16 --gen 8 --runs 1 --prefill-runs 3 --json --precision-list fast"
for rep in 1 2; do
  for b in nf .; do
    WGLLM_WASM_DIR=build-pack/$b timeout 70 /tmp/node node/bin/wgllm.mjs bench --synthetic llama-8b --prompt 512,2048 $P \
      2>> "$OUT/errors.txt" | grep '^{' | sed "s/^{/{\"build\": \"$b\", \"rep\": $rep, /" >> "$J"
  done
done
for b in nf .; do
  WGLLM_WASM_DIR=build-pack/$b timeout 40 /tmp/node node/bin/wgllm.mjs bench --synthetic llama-1b --prompt 512,2048 $P \
    2>> "$OUT/errors.txt" | grep '^{' | sed "s/^{/{\"build\": \"$b\", \"rep\": 1, /" >> "$J"
done
t end
cat "$OUT/log.txt"; grep -E "^FAIL|test_ops:" "$OUT/conf.txt" | head -12; grep '^perf' "$OUT/gemm_perf.txt" | cut -c1-150
cut -c1-400 "$J"; grep -v "^Warning" "$OUT/errors.txt" | tail -n 5; cat /tmp/files.done 2>/dev/null; tail -2 /tmp/gguf.log
