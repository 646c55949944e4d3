#!/usr/bin/env bash
# Device call 1 (H200) of docs/perf/24-inflight: two batched steps in flight and the small-M GEMM's tiles and slices.
# Carry .gl, build-pack/inflight.tar.xz (this tree's wgllm, wgllm-bench, libwgllm.so.0, test_ops, test_generate,
# bench_kernels, libmicrohttpd, Dawn's libwebgpu_wrapper.so), bench/peers/llamacpp/dist (llcbench) and
# third_party/tokenizers/llama3. Runs the new op cases and test_generate there; bench_kernels' int8 sweep of the
# small-M GEMM (4-64 tokens, every tile, 1-16 K slices) on the 8B and 1B projections; the synthetic 8B and 1B Q4_0
# GGUFs at 8-64 sequences on the pool (fast) with two steps in flight (the default) and one (--pipeline 1);
# llama.cpp's --parallel 8 and 32 on the same files; profiles of the 8B's 8- and 32-sequence steps; `wgllm serve` on
# the 8B under 1-64 streaming clients. Tables to stdout.
set -u
T0=$SECONDS
t() { echo "== $(( SECONDS - T0 )) s: $*" | tee -a "$OUT/log.txt"; }
for f in .gl/*.deb; do dpkg -x "$f" / 2>/dev/null; done; ldconfig
export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json
mkdir -p /tmp/b /tmp/llc && tar -C /tmp/b -xJf build-pack/inflight.tar.xz &&
  tar -xJf bench/peers/llamacpp/dist/llcbench-linux-x64-vulkan.tar.xz -C /tmp/llc
export LD_LIBRARY_PATH=/tmp/b
L=$(dirname "$(find /tmp/llc -name llcbench -type f | head -1)")
J=$OUT/table.txt
tag() { grep '^{' | sed "s/^{/{\"engine\": \"$1\", \"file\": \"$2\", /" | tee -a "$J"; }
( /tmp/b/wgllm-bench --synthetic llama-8b --write-gguf /tmp/x8b.gguf --vocab third_party/tokenizers/llama3 > /dev/null 2>&1
  /tmp/b/wgllm-bench --synthetic llama-1b --write-gguf /tmp/x1b.gguf --vocab third_party/tokenizers/llama3 > /dev/null 2>&1
  echo done > /tmp/files.done ) &
t tests
( cd tests && timeout 60 /tmp/b/test_ops -f step_ids -f small -f gemv_q8/predicate; echo "rc=$?";
  timeout 60 /tmp/b/test_generate; echo "rc=$?" ) > "$OUT/tests.txt" 2>&1
grep -E "FAIL|checks|rc=" "$OUT/tests.txt" | head
t sweep
timeout 150 /tmp/b/bench_kernels --shapes 8b,1b --types q4 --int8-sweep --tokens 4,8,16,32,64 --reps 32 \
  > "$OUT/sweep.txt" 2>&1; echo "rc=$?" >> "$OUT/sweep.txt"
while [ ! -f /tmp/files.done ]; do sleep 1; done
P="--prompt 128 --kv f16 --gen 32 --runs 3 --json --batched-only --precision-list fast"
for f in x8b x1b; do for n in 8 16 32 64; do
  t "$f pool $n fast, 2 in flight"
  timeout 60 /tmp/b/wgllm-bench -m /tmp/$f.gguf --parallel $n --kv-pool $P 2>>"$OUT/errors.txt" | tag wgllm $f
done; for n in 8 32; do
  t "$f pool $n fast, 1 in flight"
  timeout 60 /tmp/b/wgllm-bench -m /tmp/$f.gguf --parallel $n --kv-pool --pipeline 1 $P 2>>"$OUT/errors.txt" | tag wgllm $f
done; done
for f in x8b x1b; do for n in 8 32; do
  t "$f llama.cpp $n"
  timeout 40 $L/llcbench bench /tmp/$f.gguf --backend vulkan --ngl 99 --prompt 128 --gen 32 --runs 3 --kv f16 \
    --sample host --parallel $n 2>>"$OUT/errors.txt" | tag llama.cpp $f
done; done
for n in 8 32; do
  t "profile 8b pool $n fast"
  timeout 40 /tmp/b/wgllm-bench -m /tmp/x8b.gguf --parallel $n --kv-pool --prompt 128 --kv f16 --gen 8 --runs 1 \
    --batched-only --precision-list fast --profile > "$OUT/profile_8b_${n}_fast.txt" 2>&1
  head -14 "$OUT/profile_8b_${n}_fast.txt"
done
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
