#!/bin/bash
# Device call "M" (run on 2026-12-01 in the next session: results in callM_h200/): batched decode across
# sessions (issue 14 item 2) on the H200.
#   1. test_api (batched jobs give each job's own text, bit for bit) and test_ops -f gemv (the "_mt" variants on
#      the H200's subgroup-32 tuned plans);
#   2. single-stream decode, this build against the build before the "_mt" change (OLD=.devbin/old/wgllm-bench,
#      commit 27fff0b), 1B and 8B synthetic, alternated: the one-token GEMV text changed (NT loops), so its speed
#      must be unchanged;
#   3. wgllm-bench --parallel 2|4|8: N sessions decoding together, batched against one after another;
#   4. the served shape: the synthetic 1B with Llama 3's vocabulary (wgllm bench --write-gguf --vocab), `wgllm
#      serve --parallel 8`, serve_load.py with 1 and 8 streaming clients x 4 requests of 128 tokens (ignore_eos),
#      then the same server with --no-batch if it has one.
# Carry: [".devbin/M", ".devbin/old", "third_party/dawn/lib", ".gl"] (about 62.7 MiB with the tree: the limit is
# 64) with, in .devbin/M: stripped wgllm, libwgllm.so.0, wgllm-bench, test_api, test_ops (from build/, rebuilt at
# the commit measured), libmicrohttpd.so.12 (from /lib/x86_64-linux-gnu), llama3.tar.xz (third_party/tokenizers/
# llama3, xz) and serve_load.py (this folder's); .devbin/old/wgllm-bench (built from 27fff0b, the commit before the
# "_mt" GEMV, in a worktree: git worktree add /tmp/oldtree 27fff0b).
# Run: bash docs/perf/14-batched/callM.sh   (timeout_s 600; about 8 minutes)
set -u
R=$PWD
B=$R/.devbin/M
for f in .gl/*.deb; do dpkg -x $f / >/dev/null; done; ldconfig
export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json
export LD_LIBRARY_PATH=$B:$R/third_party/dawn/lib
date +%T; echo "== tests"
(cd tests && timeout 90 $B/test_api 2>&1 | tail -3; timeout 90 $B/test_ops -f gemv 2>&1 | grep -E "FAIL|test_ops:") \
  > $OUT/tests.txt 2>&1
cat $OUT/tests.txt
for m in llama-1b llama-8b; do
  for b in new old new old; do
    bin=$B/wgllm-bench; [ $b = old ] && bin=$R/.devbin/old/wgllm-bench
    date +%T; echo "== single $m $b"
    timeout 90 $bin --synthetic $m --prompt 128 --gen 64 --runs 3 --prefill-runs 1 --kv f16 --json \
      | sed "s/^{/{\"build\": \"$b\", /" >> $OUT/single.jsonl 2>> $OUT/errors.log
    [ $m = llama-8b ] && [ $b = old ] && break
  done
  for n in 2 4 8; do
    [ $m = llama-8b ] && [ $n != 8 ] && continue
    date +%T; echo "== parallel $m $n"
    timeout 120 $B/wgllm-bench --synthetic $m --prompt 128 --gen 64 --runs 3 --kv f16 --parallel $n --json \
      >> $OUT/parallel.jsonl 2>> $OUT/errors.log
  done
done
date +%T; echo "== served 1B"
mkdir -p /tmp/l3 && tar -xJf $B/llama3.tar.xz -C /tmp/l3
timeout 60 $B/wgllm-bench --synthetic llama-1b --write-gguf /tmp/l1b.gguf --vocab /tmp/l3/llama3 >> $OUT/errors.log 2>&1
for flags in "" "--no-batch"; do
  $B/wgllm serve -m /tmp/l1b.gguf --parallel 8 --ctx 1024 --port 8089 $flags > $OUT/serve$flags.log 2>&1 &
  sp=$!
  for i in $(seq 60); do curl -sf localhost:8089/health > /dev/null 2>&1 && break; sleep 1; done
  for c in 1 8; do
    timeout 150 python3 $B/serve_load.py 127.0.0.1 8089 $c 4 128 "serve$flags" >> $OUT/served.jsonl 2>> $OUT/errors.log
  done
  kill $sp; wait $sp 2>/dev/null
done
cat $OUT/single.jsonl $OUT/parallel.jsonl $OUT/served.jsonl 2>/dev/null | python3 -c "
import json, sys
for l in sys.stdin:
  j = json.loads(l)
  print({k: j.get(k) for k in ('build', 'label', 'model', 'parallel', 'mode', 'clients', 'decode_tok_s',
         'aggregate_tok_s', 'per_session_tok_s', 'mean_ttft_s', 'errors') if k in j})"
tail -5 $OUT/errors.log
date +%T
