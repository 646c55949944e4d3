#!/usr/bin/env bash
# Device call 1 (H200), carry .gl, build-pack/attnp.tar.xz (Dawn's library), build-pack/pool1.tar.xz (this tree's
# wgllm-bench, test_kv_pool, test_generate) and bench/peers/llamacpp/dist: the KV pool's tests on the H200, then
# batched decode of 8, 16, 32 and 64 sequences on one pool (exact and fast) against 8 with caches of their own, and
# llama.cpp's --parallel 8 and 32 on the same synthetic GGUFs. Writes $OUT/tests.txt, $OUT/table.jsonl.
set -u
T0=$SECONDS
t() { echo "== $(( SECONDS - T0 )) s: $*" >> "$OUT/log.txt"; }
for f in .gl/*.deb; do dpkg -x "$f" / 2>/dev/null; done; ldconfig
export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json
mkdir -p /tmp/p /tmp/b /tmp/llc && tar -C /tmp/p -xJf build-pack/attnp.tar.xz && tar -C /tmp/b -xJf build-pack/pool1.tar.xz &&
  tar -xJf bench/peers/llamacpp/dist/llcbench-linux-x64-vulkan.tar.xz -C /tmp/llc
export LD_LIBRARY_PATH=/tmp/p
L=/tmp/llc/lib
J=$OUT/table.jsonl
tag() { grep '^{' | sed "s/^{/{\"engine\": \"$1\", \"file\": \"$2\", /" >> "$J"; }
( /tmp/b/wgllm-bench --synthetic llama-8b --write-gguf /tmp/x8b.gguf > /dev/null 2>&1
  /tmp/b/wgllm-bench --synthetic llama-1b --write-gguf /tmp/x1b.gguf > /dev/null 2>&1; echo done > /tmp/files.done ) &
t tests
( cd tests && timeout 150 /tmp/b/test_kv_pool; echo "rc=$?"; timeout 100 /tmp/b/test_generate; echo "rc=$?" ) > "$OUT/tests.txt" 2>&1
while [ ! -f /tmp/files.done ]; do sleep 2; done
P="--prompt 128 --kv f16 --gen 32 --runs 3 --json --batched-only --precision-list exact,fast"
for f in x8b x1b; do
  t "$f own 8"
  timeout 120 /tmp/b/wgllm-bench -m /tmp/$f.gguf --parallel 8 $P 2>>"$OUT/errors.txt" | tag wgllm $f
  for n in 8 16 32 64; do
    t "$f pool $n"
    timeout 150 /tmp/b/wgllm-bench -m /tmp/$f.gguf --parallel $n --kv-pool $P 2>>"$OUT/errors.txt" | tag wgllm $f
  done
  for n in 8 32; do
    t "$f llama.cpp $n"
    timeout 90 $L/llcbench bench /tmp/$f.gguf --backend vulkan --ngl 99 --prompt 128 --gen 32 --runs 3 --kv f16 \
      --sample host --parallel $n 2>>"$OUT/errors.txt" | tag llama.cpp $f
  done
done
t "profile 8b pool 32 exact"
timeout 120 /tmp/b/wgllm-bench -m /tmp/x8b.gguf --parallel 32 --kv-pool --prompt 128 --kv f16 --gen 8 --runs 1 --batched-only --profile > "$OUT/profile_8b_32.txt" 2>&1
t end
wc -l "$J"; tail -3 "$OUT/errors.txt" 2>/dev/null; tail -4 "$OUT/tests.txt"
