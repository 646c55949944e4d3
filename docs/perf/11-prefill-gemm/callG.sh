#!/bin/bash
# device call G: prefill attention with key tiles shared by 8 tokens
set -u
R=$PWD
for f in .gl/*.deb; do dpkg -x $f / >/dev/null; done; ldconfig
export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json
export LD_LIBRARY_PATH=$R/.devbin:$R/third_party/dawn/lib
export WGLLM_BIN=$R/.devbin
date +%T; echo "== tests"
(cd tests && timeout 100 ../.devbin/test_ops -f attention -f matmul 2>&1 | grep -E "FAIL|test_ops:"; timeout 150 ../.devbin/test_models 2>&1 | grep -E "FAIL|checks"; timeout 60 ../.devbin/test_ops 2>&1 | tail -2) > $OUT/h200_tests.txt 2>&1; cat $OUT/h200_tests.txt
date +%T; echo "== e2e"
for m in llama-1b llama-8b; do
  timeout 200 .devbin/wgllm bench --synthetic $m --prompt 128,512,2048,8192 --kv f16 --gen 32 --runs 3 --prefill-runs 2 --json >> $OUT/h200_prefill.jsonl 2>> $OUT/errors.log
done
python3 -c "
import json
for l in open('$OUT/h200_prefill.jsonl'):
  j=json.loads(l); print(j['model'], j['context'], 'prefill', j['prefill_tok_s'], 'decode', j['decode_tok_s'])"
date +%T
