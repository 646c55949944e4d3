#!/usr/bin/env bash
# Device call 29 of docs/perf/31-moe (2026-12-07): main after call 27 (7c57900: the router beside reverted, attn_split
# on 256 threads, the routers' f32 GEMV on 128 workgroups) against efed18f (b, call 27's baseline) and llama.cpp,
# Qwen3-30B-A3B decode at 128, and test_ops' f32 GEMV and expert cases on the GPU. Packs: build-pack/m29.tar.xz
# (7c57900's wgllm, libwgllm.so.0, libmicrohttpd.so.12, wgllm-bench, test_ops, test_moe, test_models, bench_kernels), main28.tar.xz (efed18f's wgllm-bench, Dawn). Carry .gl, both packs and
# bench/peers/llamacpp/dist.
set -u
T0=$SECONDS
t() { echo "== $(( SECONDS - T0 )) s: $*" | tee -a "$OUT/log.txt"; }
for f in .gl/*.deb; do dpkg -x "$f" / 2>/dev/null; done; ldconfig
export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json
mkdir -p /tmp/b /tmp/m /tmp/llc
tar -C /tmp/b -xJf build-pack/main28.tar.xz ./libwebgpu_wrapper.so ./wgllm-bench && tar -C /tmp/m -xJf build-pack/m29.tar.xz
tar -xJf bench/peers/llamacpp/dist/llcbench-linux-x64-vulkan.tar.xz -C /tmp/llc
L=$(dirname "$(find /tmp/llc -name llcbench -type f | head -1)")
export LD_LIBRARY_PATH=/tmp/b
nvidia-smi --query-gpu=name --format=csv,noheader | tee -a "$OUT/log.txt"
tag() { grep '^{' | sed "s/^{/{\"engine\": \"$1\", /" | tee -a "$OUT/results.jsonl"; }
t "write qwen3-30b-a3b"
/tmp/m/wgllm-bench --synthetic qwen3-30b-a3b --write-gguf /tmp/q3.gguf > /dev/null 2>>"$OUT/errors.txt"
for e in m b m; do
  t "$e q3"
  timeout 40 /tmp/$e/wgllm-bench -m /tmp/q3.gguf --prompt 128 --gen 32 --runs 3 --kv f16 --json 2>>"$OUT/errors.txt" |
    tag "wgllm-$e"
done
t "test_ops f32 GEMV and expert GEMV cases"
( cd tests && timeout 30 /tmp/m/test_ops -f gemv/f32 -f gemv_experts 2>&1 | grep -E "^FAIL|^test_ops" | tee -a "$OUT/log.txt" )
t "llama.cpp q3"
timeout 40 $L/llcbench bench /tmp/q3.gguf --backend vulkan --ngl 99 --prompt 128 --gen 32 --runs 3 --kv f16 \
  --sample host 2>>"$OUT/errors.txt" | tag llama.cpp
t end
