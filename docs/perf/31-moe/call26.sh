#!/usr/bin/env bash
# Device call 26 of docs/perf/31-moe (written 2026-12-06, not yet run): Qwen3-30B-A3B's Q4_K expert gate/up layouts
# in its MoE step, as call 23 did for gpt-oss's MXFP4 (where the GLU layout alone took the step from 3,264 to 2,934
# us). Qwen3's gate/up expert GEMV (`gemv/q4k_sg_moer`) took 1,225 us of 4,386 in call 19's profile, about 0.56 TB/s
# (8 experts x 2 x 768 rows x 2,048 a layer); its plan is the dense Q4_K GLU one (32 lanes x 8 thread-rows x 2 rows,
# 2 steps unrolled: K = 2,048 is 64 steps, 2 a lane). Builds of wgllm-bench from 9fcfc78 with one change each to
# op_gemv_choose_plan's Q4_K/Q5_K GLU branch (`p.tk = one, p.tr = 8, p.r = 2, p.u = 2;` becomes): qA `p.tk = 2 *
# one, p.tr = 4, p.r = 2, p.u = 1;` (64 lanes, a step each), qB `p.tk = 2 * one, p.tr = 2, p.r = 4, p.u = 1;`, qC
# `p.tk = one, p.tr = 4, p.r = 4, p.u = 2;` (stripped Release, build-pack/qA.tar.xz etc., ignored by git, sharing
# moe27's Dawn; rebuild from those lines if the machine lost them). The change touches every Q4_K/Q5_K GLU GEMV
# (dense Q4_K_M MLPs too), so a layout that wins here needs the dense shapes checked, or its own MoE branch, before it
# lands. Carry .gl, build-pack/moe27.tar.xz, qA.tar.xz, qB.tar.xz, qC.tar.xz and bench/peers/llamacpp/dist.
set -u
T0=$SECONDS
t() { echo "== $(( SECONDS - T0 )) s: $*" | tee -a "$OUT/log.txt"; }
for f in .gl/*.deb; do dpkg -x "$f" / 2>/dev/null; done; ldconfig
export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json
mkdir -p /tmp/b /tmp/qA /tmp/qB /tmp/qC /tmp/llc
tar -C /tmp/b -xJf build-pack/moe27.tar.xz
for v in qA qB qC; do tar -C /tmp/$v -xJf build-pack/$v.tar.xz; done
tar -xJf bench/peers/llamacpp/dist/llcbench-linux-x64-vulkan.tar.xz -C /tmp/llc
L=$(dirname "$(find /tmp/llc -name llcbench -type f | head -1)")
export LD_LIBRARY_PATH=/tmp/b
nvidia-smi --query-gpu=name --format=csv,noheader | tee -a "$OUT/log.txt"
J=$OUT/results.jsonl
tag() { grep '^{' | sed "s/^{/{\"engine\": \"$1\", /" | tee -a "$J"; }
t "write qwen3-30b-a3b"
/tmp/b/wgllm-bench --synthetic qwen3-30b-a3b --write-gguf /tmp/q3.gguf > /dev/null 2>>"$OUT/errors.txt"
for v in b qA qB qC b qA qB qC; do
  t "$v qwen3-30b-a3b"
  timeout 100 /tmp/$v/wgllm-bench -m /tmp/q3.gguf --prompt 128 --gen 32 --runs 3 --kv f16 --json \
    2>>"$OUT/errors.txt" | tag "wgllm-$v"
done
t "llama.cpp qwen3-30b-a3b"
timeout 100 $L/llcbench bench /tmp/q3.gguf --backend vulkan --ngl 99 --prompt 128 --gen 32 --runs 3 --kv f16 \
  --sample host 2>>"$OUT/errors.txt" | tag llama.cpp
for v in b qB; do
  t "$v profile"
  timeout 60 /tmp/$v/wgllm-bench -m /tmp/q3.gguf --prompt 128 --gen 32 --runs 3 --kv f16 --profile 2>&1 |
    sed -n 1,18p >> "$OUT/profiles.txt"
done
t end
