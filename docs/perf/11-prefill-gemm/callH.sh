#!/bin/bash
# device call H: Q4_K_M prefill with the new GEMM and attention
set -u
R=$PWD
for f in .gl/*.deb; do dpkg -x $f / >/dev/null; done; ldconfig
export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json
export LD_LIBRARY_PATH=$R/.devbin:$R/third_party/dawn/lib
mkdir -p /tmp/llc && tar -xJf .peer/dist/llcbench-linux-x64-vulkan.tar.xz -C /tmp/llc && cp .devbin/llc_quantize /tmp/llc/lib/
date +%T
timeout 100 .devbin/wgllm bench --synthetic llama-8b --write-gguf /tmp/x8b.gguf > /dev/null 2>&1
timeout 120 /tmp/llc/lib/llc_quantize /tmp/x8b.gguf /tmp/x8b-q4km.gguf Q4_K_M > $OUT/quant.log 2>&1
date +%T
for f in x8b x8b-q4km; do
  timeout 90 .devbin/wgllm bench -m /tmp/$f.gguf --prompt 128,512 --kv f16 --gen 32 --runs 3 --prefill-runs 2 --json >> $OUT/h200_gguf_prefill.jsonl 2>> $OUT/errors.log
done
python3 -c "
import json
for l in open('$OUT/h200_gguf_prefill.jsonl'):
  j=json.loads(l); print(j['model'], j['context'], 'prefill', j['prefill_tok_s'], 'ttft_ms', j['ttft_ms'], 'decode', j['decode_tok_s'])"
date +%T
