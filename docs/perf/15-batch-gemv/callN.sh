#!/bin/bash
# Device call "N": the batched-decode GEMV with each weight step decoded once for all tokens (kernels/gemv.wgsl
# decode/apply) against the build before it (10d1daf: the step decoded again for every token), and the profiles
# the misses of issues 12 and 14 need:
#   1. test_api and test_ops -f gemv on the H200;
#   2. bench_kernels --tokens 1,2,4,8: the q4gsw GEMV of each 1B / 8B projection against 1..8 tokens at once, for
#      the op's plan and fewer unrolled steps / row sums a lane;
#   3. wgllm-bench --parallel 8 (1B, 8B) and single-stream decode, new against old, alternated;
#   4. --profile of one batched step of 8 sessions (1B, 8B), and of the 8B prefill (the last 512-token chunk of a
#      2048-token prompt, and the decode step);
#   5. the served 1B (Llama 3 vocabulary), a warm-up request first, 1 and 8 streaming clients, batched and not.
# Carry: [".devbin/N", "third_party/dawn/lib", ".gl"]; .devbin/N: stripped wgllm, libwgllm.so.0, wgllm-bench,
# bench_kernels, test_api, test_ops of this build, wgllm-bench-old (10d1daf), libmicrohttpd.so.12, llama3.tar.xz,
# serve_load.py. Run: bash docs/perf/15-batch-gemv/callN.sh (timeout_s 600).
set -u
R=$PWD
B=$R/.devbin/N
for f in .gl/*.deb; do dpkg -x $f / >/dev/null; done; ldconfig
export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json
export LD_LIBRARY_PATH=$B:$R/third_party/dawn/lib
date +%T; echo "== tests"
(cd tests && timeout 90 $B/test_api 2>&1 | tail -2; timeout 90 $B/test_ops -f gemv 2>&1 | grep -E "FAIL|test_ops:") \
  > $OUT/tests.txt 2>&1
cat $OUT/tests.txt
date +%T; echo "== gemv tokens"
timeout 150 $B/bench_kernels --shapes 1b,8b --types q4 --tokens 1,2,4,8 --reps 32 > $OUT/gemv_tokens.txt 2>&1
grep -E "default|tokens" $OUT/gemv_tokens.txt
for m in llama-1b llama-8b; do
  for b in new old new old; do
    bin=$B/wgllm-bench; [ $b = old ] && bin=$B/wgllm-bench-old
    date +%T; echo "== $m $b"
    timeout 60 $bin --synthetic $m --prompt 128 --gen 64 --runs 3 --prefill-runs 1 --kv f16 --json \
      | sed "s/^{/{\"build\": \"$b\", /" >> $OUT/single.jsonl 2>> $OUT/errors.log
    timeout 90 $bin --synthetic $m --prompt 128 --gen 64 --runs 3 --kv f16 --parallel 8 --json \
      | sed "s/^{/{\"build\": \"$b\", /" >> $OUT/parallel.jsonl 2>> $OUT/errors.log
    [ $m = llama-8b ] && [ $b = old ] && break
  done
  date +%T; echo "== $m profiles"
  timeout 60 $B/wgllm-bench --synthetic $m --prompt 128 --gen 16 --runs 1 --kv f16 --parallel 8 --profile \
    > $OUT/profile_parallel8_$m.txt 2>&1
done
date +%T; echo "== 8B prefill profile"
timeout 90 $B/wgllm-bench --synthetic llama-8b --prompt 2048 --gen 8 --runs 1 --prefill-runs 1 --kv f16 --profile \
  > $OUT/profile_8b_2048.txt 2>&1
date +%T; echo "== served 1B"
mkdir -p /tmp/l3 && tar -xJf $B/llama3.tar.xz -C /tmp/l3
timeout 60 $B/wgllm-bench --synthetic llama-1b --write-gguf /tmp/l1b.gguf --vocab /tmp/l3/llama3 >> $OUT/errors.log 2>&1
for flags in "" "--no-batch"; do
  $B/wgllm serve -m /tmp/l1b.gguf --parallel 8 --ctx 1024 --port 8089 $flags > $OUT/serve$flags.log 2>&1 &
  sp=$!
  for i in $(seq 60); do curl -sf localhost:8089/health > /dev/null 2>&1 && break; sleep 1; done
  timeout 60 python3 $B/serve_load.py 127.0.0.1 8089 8 1 16 "warm-up$flags" >> $OUT/served.jsonl 2>> $OUT/errors.log
  for c in 1 8; do
    timeout 100 python3 $B/serve_load.py 127.0.0.1 8089 $c 4 128 "serve$flags" >> $OUT/served.jsonl 2>> $OUT/errors.log
  done
  kill $sp; wait $sp 2>/dev/null
done
cat $OUT/single.jsonl $OUT/parallel.jsonl $OUT/served.jsonl 2>/dev/null | python3 -c "
import json, sys
for l in sys.stdin:
  j = json.loads(l)
  print({k: j.get(k) for k in ('build', 'label', 'model', 'parallel', 'mode', 'clients', 'decode_tok_s',
         'aggregate_tok_s', 'ms_per_step', 'mean_ttft_s', 'mean_stream_tok_s', 'errors') if k in j})"
for f in $OUT/profile_*.txt; do echo "== $f"; grep -vE "^\{" $f | head -40; done
tail -5 $OUT/errors.log
date +%T
