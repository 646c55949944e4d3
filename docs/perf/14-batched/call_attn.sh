#!/bin/bash
# device call "attn": prefill attention with K/V tiles shared by the query heads of one KV head
# (kernels/attn_prefill_gqa.wgsl, issue 12 item 2) against the one-head tiled kernel (attn_prefill_tiled.wgsl),
# one build, both in this call:
#   1. bench_kernels --attn-prefill: one layer's prefill attention over prompts of 512 / 2048 / 8192 tokens (chunks
#      of 512, f16 KV), Llama-3.2-1B (32/8 heads, 64 dims) and Llama-3.1-8B (32/8, 128) shapes, from each kernel of
#      op_attention's order (gqa, tiled, untiled, workgroup), with the gqa plan and the device's workgroup memory;
#   2. wgllm-bench (what `wgllm bench` runs) --synthetic llama-1b|llama-8b --prompt 512,2048,8192 --kv f16 --gen 16
#      --runs 2 --prefill-runs 2 --json, with WGLLM_BENCH_ATTN_PREFILL=gqa (the default order) and =tiled (the old
#      kernel), interleaved a model at a time;
#   0. first, test_ops -f attention and test_kv_ring on the H200 (its subgroup size 32 takes other plans than lavapipe's 8).
# Built here (build-h12, RelWithDebInfo) and carried stripped in .devbin/attn:
#   mkdir -p .devbin/attn && for b in wgllm-bench bench_kernels test_ops test_kv_ring; do
#     strip -o .devbin/attn/$b build-h12/$b; done
# run: carry [".devbin/call_attn.sh", ".devbin/attn", "third_party/dawn/lib", ".gl"], command
#   bash .devbin/call_attn.sh        (about 6-8 minutes; timeout_s 600; what is in $OUT comes back even if cut)
set -u
R=$PWD
B=$R/.devbin/attn
for f in .gl/*.deb; do dpkg -x $f / >/dev/null; done; ldconfig
export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json
export LD_LIBRARY_PATH=$B:$R/third_party/dawn/lib
date +%T; echo "== tests"
(cd tests && timeout 120 $B/test_ops -f attention -f gemv -f matvec 2>&1 | grep -E "FAIL|NOT SUPPORTED|test_ops:";
 timeout 60 $B/test_kv_ring 2>&1 | grep -E "FAIL|rings|checks") > $OUT/tests.txt 2>&1
cat $OUT/tests.txt
date +%T; echo "== prefill attention alone"
timeout 120 $B/bench_kernels --attn-prefill --shapes 1b,8b > $OUT/attn_kernels.txt 2>> $OUT/errors.log
grep -E "attn_prefill|adapter" $OUT/attn_kernels.txt
for m in llama-1b llama-8b; do
  for k in gqa tiled; do
    date +%T; echo "== $m $k"
    t=100; [ $m = llama-8b ] && t=170
    WGLLM_BENCH_ATTN_PREFILL=$k timeout $t $B/wgllm-bench --synthetic $m --prompt 512,2048,8192 --kv f16 --gen 16 \
      --runs 2 --prefill-runs 2 --json >> $OUT/prefill_$k.jsonl 2>> $OUT/errors.log
  done
done
python3 -c "
import json
for k in ('gqa', 'tiled'):
  try: lines = open('$OUT/prefill_' + k + '.jsonl').read().split('\n')
  except OSError: continue
  for l in lines:
    if not l.strip(): continue
    j = json.loads(l); print(k, j.get('model'), j.get('context'), 'prefill', j.get('prefill_tok_s'), 'ttft_ms',
                             j.get('ttft_ms'), 'decode', j.get('decode_tok_s'))"
tail -5 $OUT/errors.log
date +%T
