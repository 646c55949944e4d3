#!/bin/bash
# device calls 6 and 7 (issue 25; 7 after the quantization choice below, the Q4_K_M file fixed, robustness off): the int8 decode GEMV quantizing in its workgroups; one table with llama.cpp beside every
# row (prefill 128/512/2048, decode, 8 batched; exact and fast), the error table, perplexity, the op and model tests
# KERNELS=1: also the int8 GEMV's kernel table; SHORT=1 (call 7): no error table, perplexity or test_models (call 6
# ran them), OPS_MORE=" " then leaves the exact GEMV's and the GEMM's op tests out too
set -u
R=$PWD
T0=$SECONDS
t() { echo "== $(( SECONDS - T0 )) s: $*"; }
tar -xJf build-pack/dev.tar.xz
for f in .gl/*.deb; do dpkg -x $f / >/dev/null; done; ldconfig
export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json
export LD_LIBRARY_PATH=$R/build-dev
B=$R/build-dev
mkdir -p /tmp/llc && tar -xJf bench/peers/llamacpp/dist/llcbench-linux-x64-vulkan.tar.xz -C /tmp/llc && cp $B/llc_quantize /tmp/llc/lib/
L=/tmp/llc/lib
( $B/wgllm-bench --synthetic llama-8b --write-gguf /tmp/x8b.gguf > /dev/null 2>&1
  LD_LIBRARY_PATH=$L:$B $L/llc_quantize /tmp/x8b.gguf /tmp/x8b-q4km.gguf Q4_K_M > /tmp/quant.log 2>&1 || tail -3 /tmp/quant.log >> $OUT/errors.log
  $B/wgllm-bench --synthetic llama-1b --write-gguf /tmp/x1b.gguf > /dev/null 2>&1; echo files done > /tmp/files.done ) &
J=$OUT/h200_table.jsonl
t tests
(cd tests && timeout 130 $B/test_ops -f gemv_q8 -f hostile ${OPS_MORE:--f gemv/ -f matmul_q8} 2>&1 | grep -E "FAIL|test_ops:|adapter") > $OUT/h200_test_ops.txt 2>&1; cat $OUT/h200_test_ops.txt
t kernels
[ -n "${KERNELS:-}" ] && timeout 100 $B/bench_kernels --shapes 1b,8b --types q4,q4k,q6k --int8 --tokens 1,8 > $OUT/h200_gemv_int8.txt 2>&1
while [ ! -f /tmp/files.done ]; do sleep 2; done; ls -la /tmp/*.gguf
t wgllm
for f in x8b x8b-q4km x1b; do
  timeout 100 $B/wgllm-bench -m /tmp/$f.gguf --prompt 128,512,2048 --precision-list exact,fast --kv f16 --gen 64 --runs 5 --prefill-runs 2 --json 2>>$OUT/errors.log | sed "s/^{/{\"engine\": \"wgllm\", \"file\": \"$f\", /" >> $J
done
for f in x8b x1b; do
  timeout 80 $B/wgllm-bench -m /tmp/$f.gguf --prompt 128 --parallel 8 --precision-list exact,fast --kv f16 --gen 64 --runs 3 --json 2>>$OUT/errors.log | sed "s/^{/{\"engine\": \"wgllm\", \"file\": \"$f\", /" >> $J
done
timeout 60 $B/wgllm-bench --synthetic gemma4 --prompt 128 --precision-list exact,fast --kv f16 --gen 64 --runs 5 --prefill-runs 1 --json 2>>$OUT/errors.log | sed "s/^{/{\"engine\": \"wgllm\", \"file\": \"gemma4\", /" >> $J
t llama.cpp
for f in x8b x8b-q4km x1b; do
  for p in 128 512 2048; do
    timeout 60 $L/llcbench bench /tmp/$f.gguf --backend vulkan --ngl 99 --prompt $p --gen 64 --runs 5 --kv f16 --sample backend 2>>$OUT/errors.log | sed "s/^{/{\"engine\": \"llama.cpp\", \"file\": \"$f\", /" >> $J
  done
done
for f in x8b x1b; do
  timeout 60 $L/llcbench bench /tmp/$f.gguf --backend vulkan --ngl 99 --prompt 128 --gen 64 --runs 3 --kv f16 --sample host --parallel 8 2>>$OUT/errors.log | sed "s/^{/{\"engine\": \"llama.cpp\", \"file\": \"$f\", /" >> $J
done
t robustness: the default, disable_robustness since the bounds audit, against Dawn robust access
for rob in 0 1; do
  for f in x8b x1b; do
    WGLLM_DAWN_ROBUSTNESS=$rob timeout 60 $B/wgllm-bench -m /tmp/$f.gguf --prompt 512 --precision-list exact,fast --kv f16 --gen 64 --runs 5 --prefill-runs 2 --json 2>>$OUT/errors.log | sed "s/^{/{\"engine\": \"wgllm\", \"file\": \"$f\", \"robust\": $rob, /" >> $J
  done
done
t profile
timeout 60 $B/wgllm-bench -m /tmp/x8b.gguf --prompt 128 --precision-list fast --kv f16 --gen 16 --runs 2 --prefill-runs 1 --profile > $OUT/h200_profile_8b_fast.txt 2>&1
t quality
[ -n "${SHORT:-}" ] || timeout 60 python3 bench/peers/llamacpp/fixture_error.py --wgllm $B/wgllm --llcbench $L/llcbench --backend vulkan > $OUT/h200_fixture_error.txt 2>&1
for p in exact fast; do
  [ -n "${SHORT:-}" ] || timeout 40 $B/wgllm perplexity -m models/default.gguf -f tests/data/text/kjv_revelation.txt -c 128 --precision $p 2>&1 | tail -1 >> $OUT/h200_perplexity.txt
done
[ -n "${SHORT:-}" ] || timeout 40 $L/llcbench perplexity models/default.gguf -f tests/data/text/kjv_revelation.txt -c 128 --batch 128 --backend vulkan 2>&1 | grep -i final >> $OUT/h200_perplexity.txt
t test_models
[ -n "${SHORT:-}" ] || (cd tests && WGLLM_BIN=$B timeout $(( 570 - (SECONDS - T0) )) $B/test_models 2>&1 | grep -E "FAIL|checks|fast") > $OUT/h200_test_models.txt 2>&1
t done
cat $OUT/h200_fixture_error.txt $OUT/h200_perplexity.txt; tail -3 $OUT/h200_test_models.txt
python3 - $J <<'PY'
import json,sys
for l in open(sys.argv[1]):
  try: j=json.loads(l)
  except Exception: continue
  print(j.get('engine'), j.get('file'), j.get('precision',''), j.get('prompt_tokens', j.get('context')), 'pp', j.get('prefill_tok_s'), 'tg', j.get('decode_tok_s'), 'ttft', j.get('ttft_s', ''), 'par', j.get('parallel', ''), j.get('mode', ''), j.get('aggregate_tok_s', ''), 'robust', j.get('robust', ''))
PY
[ -n "${KERNELS:-}" ] && grep -E "int8 tokens" $OUT/h200_gemv_int8.txt | head -40
head -12 $OUT/h200_profile_8b_fast.txt
