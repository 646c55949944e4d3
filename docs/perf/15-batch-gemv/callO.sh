#!/bin/bash
# Device call "O": this build (the batched GEMV decoding a step once for all tokens, one step at a time from 4
# tokens on) measured for PERF.md:
#   1. test_api, test_generate (batched jobs bit for bit their text alone, on the H200's plans), test_ops -f gemv;
#   2. single-stream decode and wgllm-bench --parallel 2|4|8 (1B), --parallel 8 (8B);
#   3. prefill chunk size: --prefill-chunk 512 | 1024 | 2048 at 512 / 2048 tokens (8B) and 2048 / 8192 (1B);
#   4. the served 1B (Llama 3 vocabulary): a warm-up request from 8 clients, then 1 and 8 streaming clients x 4
#      requests of 128 tokens, batched and with --no-batch.
# Carry: [".devbin/O", "third_party/dawn/lib", ".gl"]. Run: bash docs/perf/15-batch-gemv/callO.sh (timeout_s 600)
set -u
R=$PWD
B=$R/.devbin/O
for f in .gl/*.deb; do dpkg -x $f / >/dev/null; done; ldconfig
export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json
export LD_LIBRARY_PATH=$B:$R/third_party/dawn/lib
date +%T; echo "== tests"
(cd tests && timeout 60 $B/test_api 2>&1 | tail -1; timeout 120 $B/test_generate 2>&1 | tail -2;
 timeout 60 $B/test_ops -f gemv 2>&1 | grep -E "FAIL|test_ops:") > $OUT/tests.txt 2>&1
cat $OUT/tests.txt
for m in llama-1b llama-8b; do
  date +%T; echo "== $m single"
  timeout 60 $B/wgllm-bench --synthetic $m --prompt 128 --gen 64 --runs 3 --prefill-runs 1 --kv f16 --json \
    >> $OUT/single.jsonl 2>> $OUT/errors.log
  for n in 2 4 8; do
    [ $m = llama-8b ] && [ $n != 8 ] && continue
    date +%T; echo "== $m parallel $n"
    timeout 90 $B/wgllm-bench --synthetic $m --prompt 128 --gen 64 --runs 3 --kv f16 --parallel $n --json \
      >> $OUT/parallel.jsonl 2>> $OUT/errors.log
  done
done
for c in 512 1024 2048; do
  date +%T; echo "== prefill chunk $c"
  timeout 60 $B/wgllm-bench --synthetic llama-8b --prompt 512,2048 --gen 8 --runs 1 --prefill-runs 2 --kv f16 \
    --prefill-chunk $c --json | sed "s/^{/{\"chunk\": $c, /" >> $OUT/prefill_chunk.jsonl 2>> $OUT/errors.log
  timeout 60 $B/wgllm-bench --synthetic llama-1b --prompt 2048,8192 --gen 8 --runs 1 --prefill-runs 2 --kv f16 \
    --prefill-chunk $c --json | sed "s/^{/{\"chunk\": $c, /" >> $OUT/prefill_chunk.jsonl 2>> $OUT/errors.log
done
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
cat $OUT/single.jsonl $OUT/parallel.jsonl $OUT/prefill_chunk.jsonl $OUT/served.jsonl 2>/dev/null | python3 -c "
import json, sys
for l in sys.stdin:
  j = json.loads(l)
  print({k: j.get(k) for k in ('chunk', 'label', 'model', 'context', 'parallel', 'mode', 'clients', 'decode_tok_s',
         'prefill_tok_s', 'ttft_ms', 'aggregate_tok_s', 'ms_per_step', 'mean_ttft_s', 'mean_stream_tok_s', 'errors')
         if k in j})"
tail -5 $OUT/errors.log
date +%T
