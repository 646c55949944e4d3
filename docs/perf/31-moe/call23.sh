#!/usr/bin/env bash
# Device call 23 of docs/perf/31-moe (2026-12-06): the MXFP4 GEMV's layouts in the MoE step, after call 22's word
# steps (moe26, ce3a506) took q4gsw's layouts unswept. Builds of wgllm-bench (build-pack/, ignored by git; stripped
# Release, sharing moe26's Dawn): vA = moe26 with MXFP4's GLU rows (the experts' gate/up) on 128 lanes x 2 thread-rows
# x 4 rows, 4 steps unrolled (call 22's sweep: goss exp_gu 12.4 us against 28.1 for the default); vB = vA with the
# other MXFP4 rows (the experts' down) on 128 lanes x 1 thread-row (sweep: exp_down 8.3 against 8.8); vC = moe26 with
# MXFP4's batched GEMV at 4 tokens a dispatch, as before the word steps (call 22: batched 8 477.5 against 507.6).
# gpt-oss decode at 128 for each, batched 8 for moe26 and vC, llama.cpp beside, vB's profile, then Qwen3 decode
# (moe26 and llama.cpp) for the ratio on this host. Carry .gl, build-pack/moe26.tar.xz, vA.tar.xz, vB.tar.xz,
# vC.tar.xz and bench/peers/llamacpp/dist.
set -u
T0=$SECONDS
t() { echo "== $(( SECONDS - T0 )) s: $*" | tee -a "$OUT/log.txt"; }
for f in .gl/*.deb; do dpkg -x "$f" / 2>/dev/null; done; ldconfig
export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json
mkdir -p /tmp/b /tmp/vA /tmp/vB /tmp/vC /tmp/llc
tar -C /tmp/b -xJf build-pack/moe26.tar.xz
for v in vA vB vC; do tar -C /tmp/$v -xJf build-pack/$v.tar.xz; done
tar -xJf bench/peers/llamacpp/dist/llcbench-linux-x64-vulkan.tar.xz -C /tmp/llc
L=$(dirname "$(find /tmp/llc -name llcbench -type f | head -1)")
export LD_LIBRARY_PATH=/tmp/b
nvidia-smi --query-gpu=name,clocks.max.sm,clocks.max.mem --format=csv,noheader | tee -a "$OUT/log.txt"
J=$OUT/results.jsonl
tag() { grep '^{' | sed "s/^{/{\"engine\": \"$1\", /" | tee -a "$J"; }
bench() { # wgllm-bench engine-tag model [args, default decode at 128]
  local b=$1 e=$2 m=$3; shift 3
  [ $# -eq 0 ] && set -- --prompt 128 --gen 32
  timeout 100 $b -m /tmp/$m.gguf --runs 3 --kv f16 --json "$@" 2>>"$OUT/errors.txt" | tag "$e"
}
llc() { timeout 100 $L/llcbench bench /tmp/$1.gguf --backend vulkan --ngl 99 --runs 3 --kv f16 --sample host \
          "${@:2}" 2>>"$OUT/errors.txt" | tag llama.cpp; }
t "write gpt-oss-20b"
/tmp/b/wgllm-bench --synthetic gpt-oss-20b --write-gguf /tmp/gpt-oss-20b.gguf > /dev/null 2>>"$OUT/errors.txt"
for v in b vA vB b vA vB; do t "$v gpt-oss-20b"; bench /tmp/$v/wgllm-bench wgllm-$v gpt-oss-20b; done
t "llama.cpp gpt-oss-20b"; llc gpt-oss-20b --prompt 128 --gen 32
t "vB profile"
timeout 60 /tmp/vB/wgllm-bench -m /tmp/gpt-oss-20b.gguf --prompt 128 --gen 32 --runs 3 --kv f16 --profile 2>&1 |
  sed -n 1,16p > "$OUT/profile_vB.txt"
for v in b vC; do
  t "$v parallel 8"; bench /tmp/$v/wgllm-bench wgllm-$v gpt-oss-20b --parallel 8 --prompt 128 --gen 32 --batched-only
done
t "llama.cpp parallel 8"; llc gpt-oss-20b --prompt 128 --gen 32 --parallel 8
rm -f /tmp/gpt-oss-20b.gguf
t "write qwen3-30b-a3b"
/tmp/b/wgllm-bench --synthetic qwen3-30b-a3b --write-gguf /tmp/qwen3-30b-a3b.gguf > /dev/null 2>>"$OUT/errors.txt"
t "moe26 qwen3-30b-a3b"; bench /tmp/b/wgllm-bench wgllm-b qwen3-30b-a3b
t "llama.cpp qwen3-30b-a3b"; llc qwen3-30b-a3b --prompt 128 --gen 32
t end
