#!/bin/bash
# device call 4 (issue 25): Dawn's device toggles measured (llama.cpp's WebGPU set), the op tests under them,
# the Gemma 4 decode profile
set -u
R=$PWD
T0=$SECONDS
t() { echo "== $(( SECONDS - T0 )) s: $*"; }
tar -xJf build-pack/dev.tar.xz
for f in .gl/*.deb; do dpkg -x $f / >/dev/null; done; ldconfig
export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json
export LD_LIBRARY_PATH=$R/build-dev
B=$R/build-dev
ALL=disable_robustness,disable_workgroup_init,skip_validation,disable_polyfills_on_integer_div_and_mod
J=$OUT/h200_toggles.jsonl
t decode regression: the GEMV and the 1B step before 51ed61f and now
timeout 60 $B/old/bench_kernels --shapes 1b,8b --types q4 > $OUT/h200_gemv_before_51ed61f.txt 2>&1
timeout 60 $B/old2/bench_kernels --shapes 1b,8b --types q4 > $OUT/h200_gemv_before_ad64aee.txt 2>&1
timeout 60 $B/bench_kernels --shapes 1b,8b --types q4 > $OUT/h200_gemv_now.txt 2>&1
for b in old2/wgllm-bench old/wgllm-bench wgllm-bench old2/wgllm-bench old/wgllm-bench wgllm-bench; do
  timeout 40 $B/$b --synthetic llama-1b --prompt 128 --kv f16 --gen 64 --runs 5 --prefill-runs 1 --json 2>>$OUT/errors.log | sed "s|^{|{\"bin\": \"$b\", |" >> $OUT/h200_decode_regression.jsonl
done
t the int8 GEMM on Q4_K after the scale fix
timeout 40 $B/bench_kernels --shapes 8b --gemm --types q4k > $OUT/h200_gemm_q4k_after.txt 2>&1
t toggles
for tg in none disable_robustness disable_workgroup_init skip_validation disable_polyfills_on_integer_div_and_mod $ALL; do
  a=""; [ $tg != none ] && a="--dawn-toggles $tg"
  timeout 60 $B/wgllm-bench --synthetic llama-1b --prompt 512 --precision-list exact,fast --kv f16 --gen 64 --runs 3 --prefill-runs 2 --json $a 2>>$OUT/errors.log | sed "s/^{/{\"toggles\": \"$tg\", /" >> $J
done
for tg in none $ALL; do
  a=""; [ $tg != none ] && a="--dawn-toggles $tg"
  timeout 80 $B/wgllm-bench --synthetic llama-8b --prompt 512 --precision-list exact,fast --kv f16 --gen 64 --runs 5 --prefill-runs 2 --json $a 2>>$OUT/errors.log | sed "s/^{/{\"toggles\": \"$tg\", /" >> $J
done
t gemma4 profile
timeout 60 $B/wgllm-bench --synthetic gemma4 --prompt 128 --kv f16 --gen 16 --runs 2 --prefill-runs 1 --profile > $OUT/h200_gemma4_profile.txt 2>&1
t tests under the toggles
(cd tests && WGLLM_TEST_DAWN_TOGGLES=$ALL timeout $(( 380 - (SECONDS - T0) )) $B/test_ops -f embedding -f rope -f attention -f flash -f matmul_q8 -f gemv/ -f sample -f argmax -f kv 2>&1 | grep -E "FAIL|test_ops:|adapter") > $OUT/h200_test_ops_toggles.txt 2>&1
t done
cat $OUT/h200_test_ops_toggles.txt
python3 - $J <<'PY'
import json,sys
for l in open(sys.argv[1]):
  try: j=json.loads(l)
  except Exception: continue
  print(j['model'], j['toggles'][:40], j['precision'], 'pp', j['prefill_tok_s'], 'tg', j['decode_tok_s'])
PY
head -40 $OUT/h200_gemma4_profile.txt
grep -h "gemv\|GB/s" $OUT/h200_gemv_before_ad64aee.txt | head -20; echo ---; grep -h "gemv\|GB/s" $OUT/h200_gemv_before_51ed61f.txt | head -20; echo ---; grep -h "gemv\|GB/s" $OUT/h200_gemv_now.txt | head -20
cut -c1-420 $OUT/h200_decode_regression.jsonl
grep "M=512 " $OUT/h200_gemm_q4k_after.txt
