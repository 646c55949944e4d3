#!/usr/bin/env bash
# Device call 8 of docs/perf/31-moe (the session's last device seconds): call 7's build with the folded norm and
# routing kept to one-token steps (src/arch/blocks.c moe_fuses_norm), so batched decode runs as in call 5. wgllm
# only (llama.cpp's figures are call 7's, on the same kind of card): 8 sessions batched, and decode at 128 to check
# the one-token step kept call 7's speed. Carry .gl, build-pack/moe6.tar.xz (wgllm, wgllm-bench, the libraries) and
# nothing else.
set -u
for f in .gl/*.deb; do dpkg -x "$f" / 2>/dev/null; done; ldconfig
mkdir -p /tmp/b && tar -C /tmp/b -xJf build-pack/moe6.tar.xz
export LD_LIBRARY_PATH=/tmp/b VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json
for M in gpt-oss-20b qwen3-30b-a3b; do
  /tmp/b/wgllm-bench --synthetic $M --write-gguf /tmp/$M.gguf > /dev/null 2>&1
  /tmp/b/wgllm-bench -m /tmp/$M.gguf --parallel 8 --prompt 128 --gen 32 --runs 3 --kv f16 --json --batched-only 2>>"$OUT/errors.txt" | tee -a "$OUT/$M.jsonl"
  /tmp/b/wgllm-bench -m /tmp/$M.gguf --prompt 128 --gen 32 --runs 3 --kv f16 --json 2>>"$OUT/errors.txt" | tee -a "$OUT/$M.jsonl"
  rm -f /tmp/$M.gguf
done
