#!/bin/bash
# device call 5 (issue 25): the int8 decode GEMV (kernels/gemv_q8.wgsl) against the f32 one, its layouts, its
# effect on decode (one token, 8 batched) and Gemma 4, its op tests on the H200
set -u
R=$PWD
T0=$SECONDS
t() { echo "== $(( SECONDS - T0 )) s: $*"; }
tar -xJf build-pack/dev.tar.xz
for f in .gl/*.deb; do dpkg -x $f / >/dev/null; done; ldconfig
export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json
export LD_LIBRARY_PATH=$R/build-dev
B=$R/build-dev
J=$OUT/h200_decode.jsonl
t tests
(cd tests && timeout 100 $B/test_ops -f gemv_q8 -f gemv/ 2>&1 | grep -E "FAIL|test_ops:|adapter") > $OUT/h200_test_ops.txt 2>&1; cat $OUT/h200_test_ops.txt
t kernels
timeout 150 $B/bench_kernels --shapes 1b,8b --types q4,q4k,q6k --int8-sweep --tokens 1,8 > $OUT/h200_gemv_int8.txt 2>&1
t e2e
for s in llama-1b llama-8b gemma4; do
  timeout 60 $B/wgllm-bench --synthetic $s --prompt 128 --precision-list exact,fast --kv f16 --gen 64 --runs 5 --prefill-runs 1 --json 2>>$OUT/errors.log >> $J
done
for s in llama-1b llama-8b; do
  timeout 60 $B/wgllm-bench --synthetic $s --prompt 128 --parallel 8 --precision-list exact,fast --kv f16 --gen 64 --runs 3 --json 2>>$OUT/errors.log >> $J
done
t profiles
timeout 60 $B/wgllm-bench --synthetic llama-8b --prompt 128 --precision-list fast --kv f16 --gen 16 --runs 2 --prefill-runs 1 --profile > $OUT/h200_profile_8b_fast.txt 2>&1
timeout 60 $B/wgllm-bench --synthetic llama-1b --prompt 128 --precision-list fast --kv f16 --gen 16 --runs 2 --prefill-runs 1 --profile > $OUT/h200_profile_1b_fast.txt 2>&1
t done
python3 - $J <<'PY'
import json,sys
for l in open(sys.argv[1]):
  try: j=json.loads(l)
  except Exception: continue
  print(j.get('model'), j.get('precision'), 'pp', j.get('prefill_tok_s'), 'tg', j.get('decode_tok_s'), 'gpu_us', j.get('gpu_us_per_step', ''), 'par', j.get('parallel',''), j.get('mode',''), j.get('aggregate_tok_s',''))
PY
grep -E "default|int8 tokens . default" $OUT/h200_gemv_int8.txt
head -30 $OUT/h200_profile_8b_fast.txt
