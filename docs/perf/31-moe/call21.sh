#!/usr/bin/env bash
# Device call 21 of docs/perf/31-moe (2026-12-06): MXFP4's e2m1 codes widened through f16 pairs (lib/e2m1.wgsli)
# instead of a workgroup-memory table a weight, in the decode GEMV (kernels/gemv.wgsl: gpt-oss's expert GEMVs) and in
# lib/weight_load.wgsli (the prefill tiles, matvec, the embedding). Packs (build-pack/, ignored by git; stripped
# Release builds): moe25 = this change on a2c3209 (wgllm, wgllm-bench, test_ops, test_models, test_moe, bench_kernels,
# libwgllm.so.0, libmicrohttpd.so.12, Dawn); b24 = a2c3209's wgllm-bench and bench_kernels (the same engine as
# call 20's moe24: 8c3cf93, never measured on a GPU); moe21b = f145eac's wgllm-bench (call 19's build). Fixtures and
# the default model travel as build-pack/fixtures.tar.xz (tests/data/models) and models.tar.xz (models/), moved out of
# the tree for the upload limit. In the order of what matters most, in case the call is cut: conformance of the
# changed kernels on the GPU, gpt-oss decode (moe25, b24, llama.cpp), the GEMV alone before and after, gpt-oss's
# profile, Qwen3 decode (moe25: 8c3cf93 on the GPU; moe21b; llama.cpp), every fixture on the GPU, gpt-oss prefill and
# batched 8, a sweep of the MXFP4 GEMV's layouts. Carry .gl, build-pack/moe25.tar.xz, b24.tar.xz, moe21b.tar.xz,
# fixtures.tar.xz, models.tar.xz and bench/peers/llamacpp/dist.
set -u
T0=$SECONDS
t() { echo "== $(( SECONDS - T0 )) s: $*" | tee -a "$OUT/log.txt"; }
for f in .gl/*.deb; do dpkg -x "$f" / 2>/dev/null; done; ldconfig
export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json
mkdir -p /tmp/b /tmp/b24 /tmp/b21 /tmp/llc tests/data
tar -C /tmp/b -xJf build-pack/moe25.tar.xz && tar -C /tmp/b24 -xJf build-pack/b24.tar.xz &&
  tar -C /tmp/b21 -xJf build-pack/moe21b.tar.xz && tar -C tests/data -xJf build-pack/fixtures.tar.xz &&
  tar -xJf build-pack/models.tar.xz
tar -xJf bench/peers/llamacpp/dist/llcbench-linux-x64-vulkan.tar.xz -C /tmp/llc
L=$(dirname "$(find /tmp/llc -name llcbench -type f | head -1)")
export LD_LIBRARY_PATH=/tmp/b
nvidia-smi --query-gpu=name,clocks.max.sm,clocks.max.mem --format=csv > "$OUT/gpu.txt" 2>&1
t "test_ops MXFP4, GEMV, MoE and flash-decoding cases (moe25)"
( cd tests && WGLLM_BIN=/tmp/b timeout 120 /tmp/b/test_ops -f MXFP4 -f gemv -f moe_ -f flash_decode -f paged_decode \
    -f hostile/flash_decode > "$OUT/test_ops.txt" 2>&1; echo "rc=$?" >> "$OUT/test_ops.txt" )
tail -3 "$OUT/test_ops.txt"
J=$OUT/results.jsonl
tag() { grep '^{' | sed "s/^{/{\"engine\": \"$1\", /" | tee -a "$J"; }
bench() { # wgllm-bench engine-tag model [args, default decode at 128]
  local b=$1 e=$2 m=$3; shift 3
  [ $# -eq 0 ] && set -- --prompt 128 --gen 32
  timeout 100 $b -m /tmp/$m.gguf --runs 3 --kv f16 --json "$@" 2>>"$OUT/errors.txt" | tag "$e"
}
llc() { timeout 100 $L/llcbench bench /tmp/$1.gguf --backend vulkan --ngl 99 --runs 3 --kv f16 --sample host \
          "${@:2}" 2>>"$OUT/errors.txt" | tag llama.cpp; }
write() { t "write $1"; /tmp/b/wgllm-bench --synthetic $1 --write-gguf /tmp/$1.gguf > /dev/null 2>>"$OUT/errors.txt"; }
write gpt-oss-20b
t "moe25 gpt-oss-20b"; bench /tmp/b/wgllm-bench wgllm-moe25 gpt-oss-20b
t "b24 gpt-oss-20b"; bench /tmp/b24/wgllm-bench wgllm-b24 gpt-oss-20b
t "llama.cpp gpt-oss-20b"; llc gpt-oss-20b --prompt 128 --gen 32
t "bench_kernels mxfp4 (b24, moe25)"
for e in b24 b; do
  echo "### $e" >> "$OUT/gemv.txt"
  timeout 40 /tmp/$e/bench_kernels --shapes 8b,goss --types mxfp4,q4k >> "$OUT/gemv.txt" 2>&1
done
t "moe25 gpt-oss-20b profile"
timeout 60 /tmp/b/wgllm-bench -m /tmp/gpt-oss-20b.gguf --prompt 128 --gen 32 --runs 3 --kv f16 --profile \
  > "$OUT/profile_gpt-oss-20b.txt" 2>&1
write qwen3-30b-a3b
t "moe25 qwen3-30b-a3b"; bench /tmp/b/wgllm-bench wgllm-moe25 qwen3-30b-a3b
t "moe21b qwen3-30b-a3b"; bench /tmp/b21/wgllm-bench wgllm-moe21b qwen3-30b-a3b
t "llama.cpp qwen3-30b-a3b"; llc qwen3-30b-a3b --prompt 128 --gen 32
rm -f /tmp/qwen3-30b-a3b.gguf
for tst in test_models test_moe; do
  t "$tst"
  ( cd tests && WGLLM_BIN=/tmp/b timeout $([ $tst = test_models ] && echo 150 || echo 90) /tmp/b/$tst \
      > "$OUT/$tst.txt" 2>&1; echo "rc=$?" >> "$OUT/$tst.txt" )
  grep -E "^FAIL|checks|rc=" "$OUT/$tst.txt" | tail -4
done
t "gpt-oss prefill 512 (moe25, b24, llama.cpp)"
bench /tmp/b/wgllm-bench wgllm-moe25 gpt-oss-20b --prompt 512 --gen 8
bench /tmp/b24/wgllm-bench wgllm-b24 gpt-oss-20b --prompt 512 --gen 8
llc gpt-oss-20b --prompt 512 --gen 8
t "gpt-oss parallel 8 (moe25, b24, llama.cpp)"
bench /tmp/b/wgllm-bench wgllm-moe25 gpt-oss-20b --parallel 8 --prompt 128 --gen 32 --batched-only
bench /tmp/b24/wgllm-bench wgllm-b24 gpt-oss-20b --parallel 8 --prompt 128 --gen 32 --batched-only
llc gpt-oss-20b --prompt 128 --gen 32 --parallel 8
t "bench_kernels --sweep mxfp4 goss,8b (moe25)"
timeout 90 /tmp/b/bench_kernels --shapes goss,8b --types mxfp4 --sweep > "$OUT/sweep.txt" 2>&1
t end
