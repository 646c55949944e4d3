#!/usr/bin/env bash
# Device call 33 of docs/perf/31-moe (written 2026-12-07): call 32 left open whether the 341-359 us that build nr saves
# come from the gate/up's ranking or from the down projection reading experts 0..k-1: build nd (mkvars31.sh) keeps
# the ranking and the gate/up's experts and gives the down experts 0..k-1. Qwen3-30B-A3B decode at 128, main, nd, nr.
# Carry .gl, build-pack/{main28,m29,var31}.tar.xz.
set -u
T0=$SECONDS
t() { echo "== $(( SECONDS - T0 )) s: $*" | tee -a "$OUT/log.txt"; }
for f in .gl/*.deb; do dpkg -x "$f" / 2>/dev/null; done; ldconfig
export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json
mkdir -p /tmp/b /tmp/var/m
tar -C /tmp/b -xJf build-pack/main28.tar.xz ./libwebgpu_wrapper.so && tar -C /tmp/var/m -xJf build-pack/m29.tar.xz &&
  tar -C /tmp/var -xJf build-pack/var31.tar.xz
export LD_LIBRARY_PATH=/tmp/b
nvidia-smi --query-gpu=name --format=csv,noheader | tee -a "$OUT/log.txt"
M=qwen3-30b-a3b
t "write $M"
/tmp/var/m/wgllm-bench --synthetic $M --write-gguf /tmp/$M.gguf > /dev/null 2>>"$OUT/errors.txt"
for v in m nd nr; do
  t "$v $M"
  timeout 30 /tmp/var/$v/wgllm-bench -m /tmp/$M.gguf --prompt 128 --gen 32 --runs 3 --kv f16 --json 2>>"$OUT/errors.txt" |
    grep '^{' | sed "s/^{/{\"engine\": \"wgllm-$v\", \"shape\": \"$M\", /" | tee -a "$OUT/results.jsonl"
done
t end
