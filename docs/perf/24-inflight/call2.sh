#!/usr/bin/env bash
# Device call 2 (H200) of docs/perf/24-inflight: the small-M GEMM's choice retuned from call 1's sweep (32-row tiles
# past 16 tokens, about 768 workgroups, at least 16 blocks a slice, at most 16 slices). Carry .gl,
# build-pack/inflight2.tar.xz (as call 1's), bench/peers/llamacpp/dist and third_party/tokenizers/llama3. Runs the
# small-M op cases and test_generate, the synthetic 8B and 1B at 16-64 sequences (fast, pool, two steps in flight),
# profiles of the 8B's 32- and 64-sequence steps, and `wgllm serve` on the 8B under 32 and 64 streaming clients.
set -u
T0=$SECONDS
t() { echo "== $(( SECONDS - T0 )) s: $*" | tee -a "$OUT/log.txt"; }
for f in .gl/*.deb; do dpkg -x "$f" / 2>/dev/null; done; ldconfig
export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json
mkdir -p /tmp/b && tar -C /tmp/b -xJf build-pack/inflight2.tar.xz
export LD_LIBRARY_PATH=/tmp/b
J=$OUT/table.txt
tag() { grep '^{' | sed "s/^{/{\"engine\": \"$1\", \"file\": \"$2\", /" | tee -a "$J"; }
( /tmp/b/wgllm-bench --synthetic llama-8b --write-gguf /tmp/x8b.gguf --vocab third_party/tokenizers/llama3 > /dev/null 2>&1
  /tmp/b/wgllm-bench --synthetic llama-1b --write-gguf /tmp/x1b.gguf --vocab third_party/tokenizers/llama3 > /dev/null 2>&1
  echo done > /tmp/files.done ) &
t tests
( cd tests && timeout 60 /tmp/b/test_ops -f step_ids -f small -f gemv_q8/predicate; echo "rc=$?";
  timeout 60 /tmp/b/test_generate; echo "rc=$?" ) > "$OUT/tests.txt" 2>&1
grep -E "FAIL|checks|rc=" "$OUT/tests.txt" | head
while [ ! -f /tmp/files.done ]; do sleep 1; done
P="--prompt 128 --kv f16 --gen 32 --runs 3 --json --batched-only --precision-list fast"
for f in x8b x1b; do for n in 8 16 32 64; do
  t "$f pool $n fast"
  timeout 60 /tmp/b/wgllm-bench -m /tmp/$f.gguf --parallel $n --kv-pool $P 2>>"$OUT/errors.txt" | tag wgllm $f
done; done
for n in 32 64; do
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
