#!/usr/bin/env bash
# Device call 3 (H200), carry .gl, build-pack/attnp.tar.xz (Dawn's library), build-pack/pool3.tar.xz (this tree's
# wgllm, wgllm-bench, libwgllm.so.0, libmicrohttpd) and third_party/tokenizers/llama3: call 2 again with the
# batched prefill (the prefilling requests' chunks in one pass), the tables printed to stdout as well (call 2's
# table.jsonl did not come back).
set -u
T0=$SECONDS
t() { echo "== $(( SECONDS - T0 )) s: $*" >> "$OUT/log.txt"; }
for f in .gl/*.deb; do dpkg -x "$f" / 2>/dev/null; done; ldconfig
export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json
mkdir -p /tmp/p /tmp/b && tar -C /tmp/p -xJf build-pack/attnp.tar.xz && tar -C /tmp/b -xJf build-pack/pool3.tar.xz
export LD_LIBRARY_PATH=/tmp/b:/tmp/p
J=$OUT/table.jsonl
tag() { grep '^{' | sed "s/^{/{\"engine\": \"$1\", \"file\": \"$2\", /" >> "$J"; }
/tmp/b/wgllm-bench --synthetic llama-8b --write-gguf /tmp/x8b.gguf --vocab third_party/tokenizers/llama3 > /dev/null 2>>"$OUT/errors.txt"
/tmp/b/wgllm-bench --synthetic llama-1b --write-gguf /tmp/x1b.gguf --vocab third_party/tokenizers/llama3 > /dev/null 2>>"$OUT/errors.txt"
P="--prompt 128 --kv f16 --gen 32 --runs 3 --json --batched-only --precision-list fast"
for f in x8b x1b; do for n in 8 16 32 64; do
  t "$f pool $n fast"
  timeout 120 /tmp/b/wgllm-bench -m /tmp/$f.gguf --parallel $n --kv-pool $P 2>>"$OUT/errors.txt" | tag wgllm $f
done; done
t "profile 8b pool 32 fast"
timeout 60 /tmp/b/wgllm-bench -m /tmp/x8b.gguf --parallel 32 --kv-pool --prompt 128 --kv f16 --gen 8 --runs 1 --batched-only \
  --precision-list fast --profile > "$OUT/profile_8b_32_fast.txt" 2>&1
t "single stream 8b"
timeout 60 /tmp/b/wgllm-bench -m /tmp/x8b.gguf --prompt 128 --kv f16 --gen 64 --runs 3 --json --precision-list exact,fast 2>>"$OUT/errors.txt" | tag single x8b
for prec in fast exact; do
  t "serve 8b $prec"
  /tmp/b/wgllm serve -m /tmp/x8b.gguf --port 8091 -np 64 -c 1024 --kv f16 --precision $prec > "$OUT/serve_$prec.out" 2> "$OUT/serve_$prec.err" &
  SP=$!
  for i in $(seq 1 600); do grep -q "listening on" "$OUT/serve_$prec.out" 2>/dev/null && break; sleep 0.2; done
  t "listening $prec"
  for c in 1 8 32 64; do
    r=4; [ $c -ge 32 ] && r=2
    timeout 150 python3 docs/perf/22-pool/serve_load.py 127.0.0.1 8091 $c $r 128 "8b $prec" >> "$OUT/served.jsonl" 2>>"$OUT/errors.txt"
  done
  kill -TERM $SP; wait $SP
done
t end
cat "$J"; cat "$OUT/served.jsonl"; tail -3 "$OUT/errors.txt" 2>/dev/null
