#!/bin/bash
# device call J: three W-tile load layouts of the prefill GEMM, each a build of bench_kernels and wgllm-bench (.devbin/vA, vB, vC):
#   vB 16 threads a row, one element each (the layout before this step), vC 32 rows a warp with 8 elements a thread
#   (wload8, li % 128), vA 2 threads a row with 8 elements each (wload8, li / 2); then prefill end to end per layout
set -u
R=$PWD
for f in .gl/*.deb; do dpkg -x $f / >/dev/null; done; ldconfig
export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json
mkdir -p /tmp/llc/lib && tar -xJf .devbin/quant.tar.xz -C /tmp/llc/lib
date +%T
export LD_LIBRARY_PATH=$R/third_party/dawn/lib
timeout 100 .devbin/vB/wgllm-bench --synthetic llama-8b --write-gguf /tmp/x8b.gguf > /dev/null 2>&1
LD_LIBRARY_PATH=/tmp/llc/lib timeout 120 /tmp/llc/lib/llc_quantize /tmp/x8b.gguf /tmp/x8b-q4km.gguf Q4_K_M > $OUT/quant.log 2>&1
date +%T
for v in vB vC vA; do
  echo "== $v gemm"
  timeout 100 .devbin/$v/bench_kernels --gemm --shapes 8b --types q4,q4k,q6k --reps 16 2>&1 | grep "rows/thread 4" | sed "s/^/$v /" >> $OUT/h200_gemm_layouts.txt
  grep "^$v" $OUT/h200_gemm_layouts.txt | grep -E "M=512|M=2048"
  for f in x8b x8b-q4km; do
    timeout 90 .devbin/$v/wgllm-bench -m /tmp/$f.gguf --prompt 512 --kv f16 --gen 16 --runs 2 --prefill-runs 2 --json | sed "s/^{/{\"layout\":\"$v\",/" >> $OUT/h200_gguf_prefill.jsonl 2>> $OUT/errors.log
  done
  timeout 120 .devbin/$v/wgllm-bench --synthetic llama-8b --prompt 512,2048 --kv f16 --gen 16 --runs 2 --prefill-runs 2 --json | sed "s/^{/{\"layout\":\"$v\",/" >> $OUT/h200_prefill.jsonl 2>> $OUT/errors.log
  timeout 60 .devbin/$v/wgllm-bench --synthetic llama-1b --prompt 512 --kv f16 --gen 16 --runs 2 --prefill-runs 2 --json | sed "s/^{/{\"layout\":\"$v\",/" >> $OUT/h200_prefill.jsonl 2>> $OUT/errors.log
  date +%T
done
python3 -c "
import json
for f in ('h200_prefill.jsonl','h200_gguf_prefill.jsonl'):
  for l in open('$OUT/'+f):
    j=json.loads(l); print(j['layout'], j['model'], j['context'], 'prefill', j['prefill_tok_s'], 'ttft_ms', j['ttft_ms'], 'decode', j['decode_tok_s'])"
tail -5 $OUT/errors.log
date +%T
