#!/usr/bin/env bash
# Device call 1 (H200) of docs/perf/23-smallm: the small-M GEMM of batched fast decode. Carry .gl,
# build-pack/smallm.tar.xz (this tree's wgllm, wgllm-bench, libwgllm.so.0, test_ops, test_generate, libmicrohttpd,
# Dawn's libwebgpu_wrapper.so) and bench/peers/llamacpp/dist (llcbench), third_party/tokenizers/llama3. Runs the
# small-M GEMM's op cases and test_generate there, benches the synthetic 8B and 1B Q4_0 GGUFs at 8-64 sequences on
# the pool (fast), llama.cpp's --parallel 8 and 32 on the same files, a profile of the 8B's 32-sequence step and
# `wgllm serve` on the 8B under 1-64 streaming clients; tables printed to stdout.
set -u
T0=$SECONDS
t() { echo "== $(( SECONDS - T0 )) s: $*" | tee -a "$OUT/log.txt"; }
for f in .gl/*.deb; do dpkg -x "$f" / 2>/dev/null; done; ldconfig
export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json
mkdir -p /tmp/b /tmp/llc && tar -C /tmp/b -xJf build-pack/smallm.tar.xz &&
  tar -xJf bench/peers/llamacpp/dist/llcbench-linux-x64-vulkan.tar.xz -C /tmp/llc
export LD_LIBRARY_PATH=/tmp/b
L=$(dirname "$(find /tmp/llc -name llcbench -type f | head -1)")
J=$OUT/table.txt
tag() { grep '^{' | sed "s/^{/{\"engine\": \"$1\", \"file\": \"$2\", /" | tee -a "$J"; }
( /tmp/b/wgllm-bench --synthetic llama-8b --write-gguf /tmp/x8b.gguf --vocab third_party/tokenizers/llama3 > /dev/null 2>&1
  /tmp/b/wgllm-bench --synthetic llama-1b --write-gguf /tmp/x1b.gguf --vocab third_party/tokenizers/llama3 > /dev/null 2>&1
  echo done > /tmp/files.done ) &
t tests
( cd tests && timeout 60 /tmp/b/test_ops -f small -f gemv_q8/predicate -f linear_q8; echo "rc=$?";
  timeout 60 /tmp/b/test_generate; echo "rc=$?" ) > "$OUT/tests.txt" 2>&1
tail -3 "$OUT/tests.txt"; grep -E "FAIL|rc=" "$OUT/tests.txt" | head
while [ ! -f /tmp/files.done ]; do sleep 1; done
P="--prompt 128 --kv f16 --gen 32 --runs 3 --json --batched-only --precision-list fast"
for f in x8b x1b; do for n in 8 16 32 64; do
  t "$f pool $n fast"
  timeout 60 /tmp/b/wgllm-bench -m /tmp/$f.gguf --parallel $n --kv-pool $P 2>>"$OUT/errors.txt" | tag wgllm $f
done; done
for f in x8b x1b; do for n in 8 32; do
  t "$f llama.cpp $n"
  timeout 40 $L/llcbench bench /tmp/$f.gguf --backend vulkan --ngl 99 --prompt 128 --gen 32 --runs 3 --kv f16 \
    --sample host --parallel $n 2>>"$OUT/errors.txt" | tag llama.cpp $f
done; done
t "profile 8b pool 32 fast"
timeout 40 /tmp/b/wgllm-bench -m /tmp/x8b.gguf --parallel 32 --kv-pool --prompt 128 --kv f16 --gen 8 --runs 1 --batched-only \
  --precision-list fast --profile > "$OUT/profile_8b_32_fast.txt" 2>&1
head -30 "$OUT/profile_8b_32_fast.txt" | grep -E "ms|%" | head -12
t "serve 8b fast"
/tmp/b/wgllm serve -m /tmp/x8b.gguf --port 8091 -np 64 -c 1024 --kv f16 --precision fast > "$OUT/serve.out" 2> "$OUT/serve.err" &
SP=$!
for i in $(seq 1 300); do grep -q "listening on" "$OUT/serve.out" 2>/dev/null && break; sleep 0.2; done
for c in 1 8 32 64; do
  r=4; [ $c -ge 32 ] && r=2
  timeout 60 python3 docs/perf/22-pool/serve_load.py 127.0.0.1 8091 $c $r 128 "8b fast" | tee -a "$OUT/served.txt"
done
kill -TERM $SP; wait $SP
t end
tail -3 "$OUT/errors.txt" 2>/dev/null
