#!/bin/bash
# device call K: the final layout (block types 8 elements a thread, the rest one element each) end to end, the
# GEMM table, and the tests on the H200 (test_ops matmul, test_models with the committed CLI, test_gpu_faults)
set -u
R=$PWD
for f in .gl/*.deb; do dpkg -x $f / >/dev/null; done; ldconfig
export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json
export LD_LIBRARY_PATH=$R/.devbin:$R/third_party/dawn/lib
export WGLLM_BIN=$R/.devbin
mkdir -p /tmp/llc/lib && tar -xJf .devbin/quant.tar.xz -C /tmp/llc/lib
date +%T; echo "== gemm"
timeout 100 .devbin/bench_kernels --gemm --shapes 8b --types q4,q4k,q6k --reps 16 2>&1 | grep "rows/thread 4" > $OUT/h200_gemm.txt
grep -E "M=512|M=2048" $OUT/h200_gemm.txt
date +%T; echo "== synthetic"
for m in llama-1b llama-8b; do
  timeout 200 .devbin/wgllm-bench --synthetic $m --prompt 128,512,2048 --kv f16 --gen 32 --runs 3 --prefill-runs 2 --json >> $OUT/h200_prefill.jsonl 2>> $OUT/errors.log
done
date +%T; echo "== GGUF"
timeout 100 .devbin/wgllm-bench --synthetic llama-8b --write-gguf /tmp/x8b.gguf > /dev/null 2>&1
LD_LIBRARY_PATH=/tmp/llc/lib timeout 120 /tmp/llc/lib/llc_quantize /tmp/x8b.gguf /tmp/x8b-q4km.gguf Q4_K_M > $OUT/quant.log 2>&1
for f in x8b x8b-q4km; do
  timeout 90 .devbin/wgllm-bench -m /tmp/$f.gguf --prompt 128,512 --kv f16 --gen 32 --runs 3 --prefill-runs 2 --json >> $OUT/h200_gguf_prefill.jsonl 2>> $OUT/errors.log
done
python3 -c "
import json
for f in ('h200_prefill.jsonl','h200_gguf_prefill.jsonl'):
  for l in open('$OUT/'+f):
    j=json.loads(l); print(j['model'], j['context'], 'prefill', j['prefill_tok_s'], 'ttft_ms', j['ttft_ms'], 'decode', j['decode_tok_s'])"
date +%T; echo "== tests"
(cd tests && timeout 100 ../.devbin/test_ops -f matmul 2>&1 | grep -E "FAIL|test_ops:"; timeout 200 ../.devbin/test_models 2>&1 | grep -E "FAIL|checks|split|gemma4_.*gguf"; timeout 60 ../.devbin/test_gpu_faults 2>&1 | grep -E "FAIL|->|checks") > $OUT/h200_tests.txt 2>&1; cat $OUT/h200_tests.txt
tail -5 $OUT/errors.log
date +%T
