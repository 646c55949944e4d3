#!/bin/bash
# Device call "P": a job that decodes alone in wgllm_jobs_step (one served client) keeps two steps queued, as
# wgllm_job_step and wgllm_generate do, instead of one step at a time. A/B in one call, the same machine:
#   1. test_api on the H200 (jobs stepped alone and together give their text alone);
#   2. wgllm-bench single-stream 1B (the engine's rate, no HTTP);
#   3. the served 1B (Llama 3 vocabulary), build O (before: docs/perf/15-batch-gemv) and P (this build): a warm-up
#      round of 8 clients, then 1 and 8 streaming clients x 4 requests of 128 tokens; P also with --no-batch.
# The binaries (stripped; O: wgllm, libwgllm.so.0, libmicrohttpd.so.12; P: those, test_api, wgllm-bench, the Llama 3
# tokenizer, serve_load.py) and Dawn's library in one .devbin/callP.tar.xz (O/ P/ dawn/), so the tree and the carry
# stay under the device's 64 MiB. Carry: [".devbin/callP.tar.xz", ".gl"].
# Run: bash docs/perf/16-served-pipeline/callP.sh (callP_h200/). ROUNDS=N (call P2: ROUNDS=3 SERVED_ONLY=1,
# callP2_h200/) repeats the warm-up and the 1- and 8-client rounds N times on each server, without the tests and bench.
set -u
R=$PWD
D=/tmp/callP
mkdir -p $D && tar -xJf .devbin/callP.tar.xz -C $D
for f in .gl/*.deb; do dpkg -x $f / >/dev/null; done; ldconfig
export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json
P=$D/P
ROUNDS=${ROUNDS:-1}
date +%T; echo "== tests"
[ -n "${SERVED_ONLY:-}" ] || (cd tests && LD_LIBRARY_PATH=$P:$D/dawn timeout 90 $P/test_api 2>&1 | tail -2) | tee $OUT/tests.txt
[ -n "${SERVED_ONLY:-}" ] || LD_LIBRARY_PATH=$P:$D/dawn timeout 60 $P/wgllm-bench --synthetic llama-1b --prompt 128 --gen 64 \
  --runs 3 --prefill-runs 1 --kv f16 --json >> $OUT/single.jsonl 2>> $OUT/errors.log
mkdir -p /tmp/l3 && tar -xJf $P/llama3.tar.xz -C /tmp/l3
LD_LIBRARY_PATH=$P:$D/dawn timeout 60 $P/wgllm-bench --synthetic llama-1b --write-gguf /tmp/l1b.gguf \
  --vocab /tmp/l3/llama3 >> $OUT/errors.log 2>&1
runs=("O " "P " "P --no-batch")
[ -n "${SERVED_ONLY:-}" ] && runs=("O " "P ")
for run in "${runs[@]}"; do
  b=${run%% *}; flags=${run#* }; B=$D/$b
  date +%T; echo "== served 1B, build $b $flags"
  LD_LIBRARY_PATH=$B:$D/dawn $B/wgllm serve -m /tmp/l1b.gguf --parallel 8 --ctx 1024 --port 8089 \
    $flags > $OUT/serve_$b$flags.log 2>&1 &
  sp=$!
  for i in $(seq 60); do curl -sf localhost:8089/health > /dev/null 2>&1 && break; sleep 1; done
  for r in $(seq $ROUNDS); do
    timeout 60 python3 $P/serve_load.py 127.0.0.1 8089 8 1 16 "warm-up $b$flags" >> $OUT/served.jsonl 2>> $OUT/errors.log
    for c in 1 8; do
      timeout 100 python3 $P/serve_load.py 127.0.0.1 8089 $c 4 128 "serve $b$flags" >> $OUT/served.jsonl \
        2>> $OUT/errors.log
    done
  done
  kill $sp; wait $sp 2>/dev/null
done
cat $OUT/single.jsonl $OUT/served.jsonl 2>/dev/null | python3 -c "
import json, sys
for l in sys.stdin:
  j = json.loads(l)
  print({k: j.get(k) for k in ('label', 'model', 'clients', 'decode_tok_s', 'prefill_tok_s', 'aggregate_tok_s',
         'mean_ttft_s', 'mean_stream_tok_s', 'errors') if k in j})"
tail -5 $OUT/errors.log
date +%T
