#!/usr/bin/env bash
# Device call 3 (H200) of docs/perf/24-inflight: call 2's choice with up to 8 K slices where K has fewer than 128
# blocks (call 2's 16-block floor cost the 1B at 16 and 32 sequences). Carry .gl, build-pack/inflight3.tar.xz
# (wgllm-bench, libwgllm.so.0, test_ops, Dawn's libwebgpu_wrapper.so) and third_party/tokenizers/llama3. Runs the
# small-M op cases and the synthetic 8B and 1B at 16-64 sequences (fast, pool, two steps in flight).
set -u
T0=$SECONDS
t() { echo "== $(( SECONDS - T0 )) s: $*" | tee -a "$OUT/log.txt"; }
for f in .gl/*.deb; do dpkg -x "$f" / 2>/dev/null; done; ldconfig
export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json
mkdir -p /tmp/b && tar -C /tmp/b -xJf build-pack/inflight3.tar.xz
export LD_LIBRARY_PATH=/tmp/b
J=$OUT/table.txt
tag() { grep '^{' | sed "s/^{/{\"engine\": \"$1\", \"file\": \"$2\", /" | tee -a "$J"; }
( /tmp/b/wgllm-bench --synthetic llama-8b --write-gguf /tmp/x8b.gguf --vocab third_party/tokenizers/llama3 > /dev/null 2>&1
  /tmp/b/wgllm-bench --synthetic llama-1b --write-gguf /tmp/x1b.gguf --vocab third_party/tokenizers/llama3 > /dev/null 2>&1
  echo done > /tmp/files.done ) &
t tests
( cd tests && timeout 60 /tmp/b/test_ops -f small -f gemv_q8/predicate; echo "rc=$?" ) > "$OUT/tests.txt" 2>&1
grep -E "FAIL|checks|rc=" "$OUT/tests.txt" | head
while [ ! -f /tmp/files.done ]; do sleep 1; done
P="--prompt 128 --kv f16 --gen 32 --runs 3 --json --batched-only --precision-list fast"
for f in x8b x1b; do for n in 16 32 64; do
  t "$f pool $n fast"
  timeout 60 /tmp/b/wgllm-bench -m /tmp/$f.gguf --parallel $n --kv-pool $P 2>>"$OUT/errors.txt" | tag wgllm $f
done; done
t end
tail -3 "$OUT/errors.txt" 2>/dev/null
