#!/bin/bash
# Device call "Q": the server's warm-up (serve_sched.c's warm_up: a short generation on 1, 2, 4 and 8 sessions
# before listening). The served 1B (Llama 3 vocabulary) started with --no-warmup, then with the warm-up, each
# with NVIDIA's shader disk cache off (__GL_SHADER_DISK_CACHE=0, so the second start compiles as the first did):
# the seconds to listening, a first round of 8 clients x 16 tokens (its time to first token is what the warm-up
# saves), then 1 and 8 clients x 4 requests of 128 tokens.
# The binaries (stripped: wgllm, wgllm-bench, libwgllm.so.0, libmicrohttpd.so.12, the Llama 3 tokenizer,
# serve_load.py) and Dawn's library in .devbin/callQ.tar.xz (Q/ dawn/). Carry: [".devbin/callQ.tar.xz", ".gl"].
# Run: bash docs/perf/16-served-pipeline/callQ.sh (outputs in callQ_h200/)
set -u
D=/tmp/callQ
mkdir -p $D && tar -xJf .devbin/callQ.tar.xz -C $D
for f in .gl/*.deb; do dpkg -x $f / >/dev/null; done; ldconfig
export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json
export LD_LIBRARY_PATH=$D/Q:$D/dawn
export __GL_SHADER_DISK_CACHE=0
B=$D/Q
mkdir -p /tmp/l3 && tar -xJf $B/llama3.tar.xz -C /tmp/l3
timeout 60 $B/wgllm-bench --synthetic llama-1b --write-gguf /tmp/l1b.gguf --vocab /tmp/l3/llama3 >> $OUT/errors.log 2>&1
for flags in "--no-warmup" ""; do
  date +%T; echo "== served 1B $flags"
  t0=$(date +%s.%N)
  $B/wgllm serve -m /tmp/l1b.gguf --parallel 8 --ctx 1024 --port 8089 $flags > $OUT/serve$flags.log 2>&1 &
  sp=$!
  for i in $(seq 600); do curl -sf localhost:8089/health > /dev/null 2>&1 && break; sleep 0.1; done
  t1=$(date +%s.%N)
  echo "{\"label\": \"start$flags\", \"seconds_to_health\": $(python3 -c "print(round($t1 - $t0, 2))")}" >> $OUT/served.jsonl
  timeout 60 python3 $B/serve_load.py 127.0.0.1 8089 8 1 16 "first round$flags" >> $OUT/served.jsonl 2>> $OUT/errors.log
  for c in 1 8; do
    timeout 100 python3 $B/serve_load.py 127.0.0.1 8089 $c 4 128 "serve$flags" >> $OUT/served.jsonl 2>> $OUT/errors.log
  done
  kill $sp; wait $sp 2>/dev/null
done
cat $OUT/served.jsonl
grep -h "warmed up" $OUT/serve*.log
tail -5 $OUT/errors.log
date +%T
