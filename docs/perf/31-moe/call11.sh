#!/usr/bin/env bash
# Device call 11 of docs/perf/31-moe: call 10's build with the tuned GEMV's q8 thread-rows no longer narrowed where a lane
# takes two steps or more (op_gemv_choose_plan; gpt-oss-20b's Q8_0 QKV, K 2880, on 128 lanes). Decode at context 128
# of gpt-oss-20b and Qwen3-30B-A3B against llama.cpp in the same call. Carry .gl, build-pack/moe9.tar.xz (stripped
# build-dev: wgllm, wgllm-bench, libwgllm.so.0, libmicrohttpd.so.12, libwebgpu_wrapper.so) and
# bench/peers/llamacpp/dist.
set -u
for f in .gl/*.deb; do dpkg -x "$f" / 2>/dev/null; done; ldconfig
export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json
mkdir -p /tmp/b /tmp/llc && tar -C /tmp/b -xJf build-pack/moe9.tar.xz &&
  tar -xJf bench/peers/llamacpp/dist/llcbench-linux-x64-vulkan.tar.xz -C /tmp/llc
export LD_LIBRARY_PATH=/tmp/b
L=$(dirname "$(find /tmp/llc -name llcbench -type f | head -1)")
for M in gpt-oss-20b qwen3-30b-a3b; do
  J=$OUT/$M.jsonl
  /tmp/b/wgllm-bench --synthetic $M --write-gguf /tmp/$M.gguf > /dev/null 2>&1
  timeout 100 /tmp/b/wgllm-bench -m /tmp/$M.gguf --prompt 128 --gen 32 --runs 3 --kv f16 --json 2>>"$OUT/errors.txt" |
    grep '^{' | sed 's/^{/{"engine": "wgllm", /' | tee -a "$J"
  timeout 100 $L/llcbench bench /tmp/$M.gguf --backend vulkan --ngl 99 --prompt 128 --gen 32 --runs 3 --kv f16 --sample host 2>>"$OUT/errors.txt" |
    grep '^{' | sed 's/^{/{"engine": "llama.cpp", /' | tee -a "$J"
  rm -f /tmp/$M.gguf
done
