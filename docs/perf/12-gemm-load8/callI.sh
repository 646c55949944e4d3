#!/bin/bash
# device call I: the GEMM reading 8 weights a thread (wload8), prefill of q4gsw / Q4_0 / Q4_K_M, tests on the H200
set -u
R=$PWD
for f in .gl/*.deb; do dpkg -x $f / >/dev/null; done; ldconfig
export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json
export LD_LIBRARY_PATH=$R/.devbin:$R/third_party/dawn/lib
export WGLLM_BIN=$R/.devbin
# llama.cpp's quantizer with its CPU libraries only (.devbin/quant.tar.xz: libllama, libggml, -base, -cpu-haswell)
mkdir -p /tmp/llc/lib && tar -xJf .devbin/quant.tar.xz -C /tmp/llc/lib
date +%T; echo "== gemm"
timeout 150 .devbin/bench_kernels --gemm --shapes 8b --types q4,q8,q4k,q6k --reps 16 > $OUT/h200_gemm.txt 2>&1
grep -E "M=512 .*rows/thread 4|M=2048 .*rows/thread 4" $OUT/h200_gemm.txt | head -40
date +%T; echo "== synthetic prefill"
for m in llama-1b llama-8b; do
  timeout 200 .devbin/wgllm bench --synthetic $m --prompt 512,2048 --kv f16 --gen 32 --runs 3 --prefill-runs 2 --json >> $OUT/h200_prefill.jsonl 2>> $OUT/errors.log
done
date +%T; echo "== GGUF"
timeout 100 .devbin/wgllm bench --synthetic llama-8b --write-gguf /tmp/x8b.gguf > /dev/null 2>&1
LD_LIBRARY_PATH=/tmp/llc/lib timeout 120 /tmp/llc/lib/llc_quantize /tmp/x8b.gguf /tmp/x8b-q4km.gguf Q4_K_M > $OUT/quant.log 2>&1
for f in x8b x8b-q4km; do
  timeout 90 .devbin/wgllm bench -m /tmp/$f.gguf --prompt 128,512 --kv f16 --gen 32 --runs 3 --prefill-runs 2 --json >> $OUT/h200_gguf_prefill.jsonl 2>> $OUT/errors.log
done
python3 -c "
import json
for f in ('h200_prefill.jsonl','h200_gguf_prefill.jsonl'):
  for l in open('$OUT/'+f):
    j=json.loads(l); print(j['model'], j['context'], 'prefill', j['prefill_tok_s'], 'ttft_ms', j['ttft_ms'], 'decode', j['decode_tok_s'])"
date +%T; echo "== tests"
(cd tests && timeout 120 ../.devbin/test_ops -f matmul 2>&1 | grep -E "FAIL|test_ops:"; timeout 150 ../.devbin/test_models 2>&1 | grep -E "FAIL|checks|gemma4_.*gguf") > $OUT/h200_tests.txt 2>&1; cat $OUT/h200_tests.txt
tail -5 $OUT/errors.log
date +%T
