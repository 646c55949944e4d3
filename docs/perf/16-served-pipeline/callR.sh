#!/bin/bash
# Device call "R": the final build of 2026-12-02 (59d764c) on the H200: test_api and test_generate (jobs stepped
# alone, together, pipelined and batched give their text alone), then the served 1B (Llama 3 vocabulary, default
# warm-up) with 1 and 8 streaming clients x 4 requests of 128 tokens.
# Binaries (stripped) and Dawn's library in .devbin/callR.tar.xz (R/ dawn/). Carry: [".devbin/callR.tar.xz", ".gl"].
# Run: bash docs/perf/16-served-pipeline/callR.sh (outputs in callR_h200/)
set -u
D=/tmp/callR
mkdir -p $D && tar -xJf .devbin/callR.tar.xz -C $D
for f in .gl/*.deb; do dpkg -x $f / >/dev/null; done; ldconfig
export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json
export LD_LIBRARY_PATH=$D/R:$D/dawn
B=$D/R
date +%T; echo "== tests"
(cd tests && timeout 90 $B/test_api 2>&1 | tail -1; timeout 150 $B/test_generate 2>&1 | tail -2) | tee $OUT/tests.txt
mkdir -p /tmp/l3 && tar -xJf $B/llama3.tar.xz -C /tmp/l3
timeout 60 $B/wgllm-bench --synthetic llama-1b --write-gguf /tmp/l1b.gguf --vocab /tmp/l3/llama3 >> $OUT/errors.log 2>&1
date +%T; echo "== served 1B"
$B/wgllm serve -m /tmp/l1b.gguf --parallel 8 --ctx 1024 --port 8089 > $OUT/serve.log 2>&1 &
sp=$!
for i in $(seq 600); do curl -sf localhost:8089/health > /dev/null 2>&1 && break; sleep 0.1; done
for c in 1 8 1 8; do
  timeout 100 python3 $B/serve_load.py 127.0.0.1 8089 $c 4 128 "serve" >> $OUT/served.jsonl 2>> $OUT/errors.log
done
kill $sp; wait $sp 2>/dev/null
cat $OUT/served.jsonl
grep -h "warmed up" $OUT/serve.log
tail -5 $OUT/errors.log
date +%T
