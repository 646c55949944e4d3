#!/usr/bin/env bash
# Device call 25 of docs/perf/31-moe (written 2026-12-06, not yet run): main's e2m1 decode as normal f16s (9d5642d,
# lib/e2m1.wgsli's e2m1_fields: six more integer instructions a word) against call 23's vB (the same layouts with
# code 1 an f16 subnormal), and main's changed kernels on the GPU. Packs (build-pack/, ignored by git; rebuild with
# the recipe in README.md if the machine lost them): moe27 = 9d5642d (wgllm, wgllm-bench, test_ops, test_models,
# test_moe, bench_kernels, libwgllm.so.0, libmicrohttpd.so.12, Dawn); vB.tar.xz = call 23's wgllm-bench. Carry .gl,
# build-pack/moe27.tar.xz, vB.tar.xz, fixtures.tar.xz, models.tar.xz and bench/peers/llamacpp/dist.
set -u
T0=$SECONDS
t() { echo "== $(( SECONDS - T0 )) s: $*" | tee -a "$OUT/log.txt"; }
for f in .gl/*.deb; do dpkg -x "$f" / 2>/dev/null; done; ldconfig
export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json
mkdir -p /tmp/b /tmp/vB /tmp/llc tests/data
tar -C /tmp/b -xJf build-pack/moe27.tar.xz && tar -C /tmp/vB -xJf build-pack/vB.tar.xz &&
  tar -C tests/data -xJf build-pack/fixtures.tar.xz && tar -xJf build-pack/models.tar.xz
tar -xJf bench/peers/llamacpp/dist/llcbench-linux-x64-vulkan.tar.xz -C /tmp/llc
L=$(dirname "$(find /tmp/llc -name llcbench -type f | head -1)")
export LD_LIBRARY_PATH=/tmp/b
nvidia-smi --query-gpu=name --format=csv,noheader | tee -a "$OUT/log.txt"
t "test_ops MXFP4, GEMV and MoE cases (moe27)"
( cd tests && WGLLM_BIN=/tmp/b timeout 90 /tmp/b/test_ops -f MXFP4 -f gemv -f moe_ > /tmp/test_ops.txt 2>&1;
  echo "rc=$?" >> /tmp/test_ops.txt )
grep -E "^FAIL" /tmp/test_ops.txt | head -20 | tee -a "$OUT/log.txt"; tail -3 /tmp/test_ops.txt | tee -a "$OUT/log.txt"
J=$OUT/results.jsonl
tag() { grep '^{' | sed "s/^{/{\"engine\": \"$1\", /" | tee -a "$J"; }
t "write gpt-oss-20b"
/tmp/b/wgllm-bench --synthetic gpt-oss-20b --write-gguf /tmp/gpt-oss-20b.gguf > /dev/null 2>>"$OUT/errors.txt"
for v in b vB b vB; do
  t "$v gpt-oss-20b"
  timeout 100 /tmp/$v/wgllm-bench -m /tmp/gpt-oss-20b.gguf --prompt 128 --gen 32 --runs 3 --kv f16 --json \
    2>>"$OUT/errors.txt" | tag "wgllm-$v"
done
t "llama.cpp gpt-oss-20b"
timeout 100 $L/llcbench bench /tmp/gpt-oss-20b.gguf --backend vulkan --ngl 99 --prompt 128 --gen 32 --runs 3 --kv f16 \
  --sample host 2>>"$OUT/errors.txt" | tag llama.cpp
t "b profile"
timeout 60 /tmp/b/wgllm-bench -m /tmp/gpt-oss-20b.gguf --prompt 128 --gen 32 --runs 3 --kv f16 --profile 2>&1 |
  sed -n 1,16p > "$OUT/profile.txt"
rm -f /tmp/gpt-oss-20b.gguf
t "test_models (moe27)"
( cd tests && WGLLM_BIN=/tmp/b timeout 150 /tmp/b/test_models > /tmp/test_models.txt 2>&1; echo "rc=$?" >> /tmp/test_models.txt )
grep -E "^FAIL|checks|rc=" /tmp/test_models.txt | tail -6 | tee -a "$OUT/log.txt"
t end
