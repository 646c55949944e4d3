#!/usr/bin/env bash
# Device call 20 of docs/perf/31-moe (2026-12-06): this stop's build (8c3cf93; pack moe24: stripped Release wgllm,
# wgllm-bench, test_ops, test_models, test_moe, libwgllm.so.0, libmicrohttpd.so.12, Dawn) on the GPU: test_ops'
# flash-decoding cases, every transformers and llama.cpp fixture (test_models, test_moe; the fixtures and the default
# model travel as build-pack/fixtures.tar.xz of tests/data/models and build-pack/models.tar.xz of models/, moved out
# of the tree for the upload limit). Then the flash-decoding pass with RoPE folded in, two changes apart: moe21b
# (f145eac's wgllm-bench: eight cache loads in flight a thread), moe22b (plus the half-split RoPE's branch-free vec4
# path: the partner vec4 and four angles loaded at once), moe24 (plus the appended token's K and V kept in workgroup
# memory by the workgroup that appends them: no storage barrier, no read-back). Decode at context 128 of
# Qwen3-30B-A3B and gpt-oss-20b for each build with llama.cpp beside, a profile of Qwen3's step (moe24), the
# Llama-3.1-8B shape for moe24 and moe21b; in the order of what matters most, in case the call is cut. Carry .gl, build-pack/moe24.tar.xz, moe21b.tar.xz, moe22b.tar.xz,
# fixtures.tar.xz, models.tar.xz and bench/peers/llamacpp/dist.
set -u
T0=$SECONDS
t() { echo "== $(( SECONDS - T0 )) s: $*" | tee -a "$OUT/log.txt"; }
for f in .gl/*.deb; do dpkg -x "$f" / 2>/dev/null; done; ldconfig
export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json
mkdir -p /tmp/b /tmp/b21 /tmp/b22 /tmp/llc tests/data
tar -C /tmp/b -xJf build-pack/moe24.tar.xz && tar -C /tmp/b21 -xJf build-pack/moe21b.tar.xz &&
  tar -C /tmp/b22 -xJf build-pack/moe22b.tar.xz && tar -C tests/data -xJf build-pack/fixtures.tar.xz &&
  tar -xJf build-pack/models.tar.xz
tar -xJf bench/peers/llamacpp/dist/llcbench-linux-x64-vulkan.tar.xz -C /tmp/llc
L=$(dirname "$(find /tmp/llc -name llcbench -type f | head -1)")
export LD_LIBRARY_PATH=/tmp/b
t "test_ops flash-decoding cases"
( cd tests && WGLLM_BIN=/tmp/b timeout 60 /tmp/b/test_ops -f flash_decode -f paged_decode -f hostile/flash_decode \
    > "$OUT/test_ops.txt" 2>&1; echo "rc=$?" >> "$OUT/test_ops.txt" )
tail -3 "$OUT/test_ops.txt"
J=$OUT/results.jsonl
tag() { grep '^{' | sed "s/^{/{\"engine\": \"$1\", /" | tee -a "$J"; }
bench() { # wgllm-bench engine-tag model
  timeout 100 $1 -m /tmp/$3.gguf --prompt 128 --gen 32 --runs 3 --kv f16 --json 2>>"$OUT/errors.txt" | tag "$2"
}
write() { t "write $1"; /tmp/b/wgllm-bench --synthetic $1 --write-gguf /tmp/$1.gguf > /dev/null 2>>"$OUT/errors.txt"; }
# in the order of what matters most, in case the call is cut: the builds against each other and llama.cpp, the
# fixtures, then the attribution (moe22b), the profile and the 8B
write qwen3-30b-a3b
write gpt-oss-20b
for M in qwen3-30b-a3b gpt-oss-20b; do
  t "moe24 $M"; bench /tmp/b/wgllm-bench wgllm-moe24 $M
  t "moe21b $M"; bench /tmp/b21/wgllm-bench wgllm-moe21b $M
  t "llama.cpp $M"
  timeout 80 $L/llcbench bench /tmp/$M.gguf --backend vulkan --ngl 99 --prompt 128 --gen 32 --runs 3 --kv f16 \
    --sample host 2>>"$OUT/errors.txt" | tag llama.cpp
done
for tst in test_models test_moe; do
  t "$tst"
  ( cd tests && WGLLM_BIN=/tmp/b timeout $([ $tst = test_models ] && echo 150 || echo 90) /tmp/b/$tst \
      > "$OUT/$tst.txt" 2>&1; echo "rc=$?" >> "$OUT/$tst.txt" )
  grep -E "^FAIL|checks|rc=" "$OUT/$tst.txt" | tail -4
done
for M in qwen3-30b-a3b gpt-oss-20b; do t "moe22b $M"; bench /tmp/b22/wgllm-bench wgllm-moe22b $M; done
t "moe24 qwen3-30b-a3b profile"
timeout 60 /tmp/b/wgllm-bench -m /tmp/qwen3-30b-a3b.gguf --prompt 128 --gen 8 --runs 1 --kv f16 --profile \
  >> "$OUT/profiles.txt" 2>&1
rm -f /tmp/qwen3-30b-a3b.gguf /tmp/gpt-oss-20b.gguf
write llama-8b
t "moe24 llama-8b"; bench /tmp/b/wgllm-bench wgllm-moe24 llama-8b
t "moe21b llama-8b"; bench /tmp/b21/wgllm-bench wgllm-moe21b llama-8b
t end
