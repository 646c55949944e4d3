#!/usr/bin/env bash
# Device call 22 of docs/perf/31-moe (2026-12-06): the MXFP4 GEMV a word a step (kernels/gemv.wgsl, ce3a506: q4gsw's
# steps, so a block's four lanes read its x side by side, where a block a lane read its 8 x vec4s at a 128-byte
# stride between lanes) against call 21's block steps. Packs (build-pack/, ignored by git; stripped Release builds):
# moe26 = the word steps (wgllm, wgllm-bench, test_ops, test_models, test_moe, bench_kernels, libwgllm.so.0,
# libmicrohttpd.so.12, Dawn); moe25 = call 21's build (block steps, e2m1 through f16 pairs). Fixtures and the default
# model travel as build-pack/fixtures.tar.xz and models.tar.xz (moved out of the tree for the upload limit), with
# Gemma 3's tokenizer_config.json (test_moe's Gemma 4 chat test). In the order of what matters most: conformance of
# the changed GEMV on the GPU, gpt-oss decode (moe26, moe25, llama.cpp), the GEMV alone, gpt-oss's profile, batched 8,
# the fixtures, a sweep of the MXFP4 layouts. Carry .gl, build-pack/moe26.tar.xz, moe25.tar.xz, fixtures.tar.xz,
# models.tar.xz, bench/peers/llamacpp/dist and third_party/tokenizers/gemma3/tokenizer_config.json.
set -u
T0=$SECONDS
t() { echo "== $(( SECONDS - T0 )) s: $*" | tee -a "$OUT/log.txt"; }
for f in .gl/*.deb; do dpkg -x "$f" / 2>/dev/null; done; ldconfig
export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json
mkdir -p /tmp/b /tmp/b25 /tmp/llc tests/data
tar -C /tmp/b -xJf build-pack/moe26.tar.xz && tar -C /tmp/b25 -xJf build-pack/moe25.tar.xz &&
  tar -C tests/data -xJf build-pack/fixtures.tar.xz && tar -xJf build-pack/models.tar.xz
tar -xJf bench/peers/llamacpp/dist/llcbench-linux-x64-vulkan.tar.xz -C /tmp/llc
L=$(dirname "$(find /tmp/llc -name llcbench -type f | head -1)")
export LD_LIBRARY_PATH=/tmp/b
nvidia-smi --query-gpu=name,clocks.max.sm,clocks.max.mem --format=csv,noheader | tee -a "$OUT/log.txt"
t "test_ops MXFP4, GEMV and MoE cases (moe26)"
( cd tests && WGLLM_BIN=/tmp/b timeout 90 /tmp/b/test_ops -f MXFP4 -f gemv -f moe_ > /tmp/test_ops.txt 2>&1;
  echo "rc=$?" >> /tmp/test_ops.txt )
grep -E "^FAIL" /tmp/test_ops.txt | head -20 | tee -a "$OUT/log.txt"; tail -3 /tmp/test_ops.txt | tee -a "$OUT/log.txt"
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
t "moe26 gpt-oss-20b"; bench /tmp/b/wgllm-bench wgllm-moe26 gpt-oss-20b
t "moe25 gpt-oss-20b"; bench /tmp/b25/wgllm-bench wgllm-moe25 gpt-oss-20b
t "llama.cpp gpt-oss-20b"; llc gpt-oss-20b --prompt 128 --gen 32
t "moe26 gpt-oss-20b again"; bench /tmp/b/wgllm-bench wgllm-moe26 gpt-oss-20b
t "bench_kernels mxfp4 (moe25, moe26)"
for e in b25 b; do
  echo "### $e" >> "$OUT/gemv.txt"
  timeout 40 /tmp/$e/bench_kernels --shapes 8b,goss --types mxfp4,q4k 2>&1 | grep -v refused >> "$OUT/gemv.txt"
done
t "moe26 gpt-oss-20b profile"
timeout 60 /tmp/b/wgllm-bench -m /tmp/gpt-oss-20b.gguf --prompt 128 --gen 32 --runs 3 --kv f16 --profile \
  > "$OUT/profile_gpt-oss-20b.txt" 2>&1
t "gpt-oss parallel 8 (moe26, moe25)"
bench /tmp/b/wgllm-bench wgllm-moe26 gpt-oss-20b --parallel 8 --prompt 128 --gen 32 --batched-only
bench /tmp/b25/wgllm-bench wgllm-moe25 gpt-oss-20b --parallel 8 --prompt 128 --gen 32 --batched-only
rm -f /tmp/gpt-oss-20b.gguf
t "test_models (moe26)"
( cd tests && WGLLM_BIN=/tmp/b timeout 150 /tmp/b/test_models > /tmp/test_models.txt 2>&1; echo "rc=$?" >> /tmp/test_models.txt )
grep -E "^FAIL|checks|rc=" /tmp/test_models.txt | tail -6 | tee -a "$OUT/log.txt"
t "test_moe (moe26)"
( cd tests && WGLLM_BIN=/tmp/b timeout 100 /tmp/b/test_moe > /tmp/test_moe.txt 2>&1; echo "rc=$?" >> /tmp/test_moe.txt )
grep -E "^FAIL|checks|rc=" /tmp/test_moe.txt | tail -6 | tee -a "$OUT/log.txt"
( cd tests && python3 tools/make_family_from_dense.py ../models/default /tmp/fam --family qwen3_moe --experts 4 --k 2 \
    2>&1 | tail -5 | tee -a "$OUT/log.txt"; python3 --version | tee -a "$OUT/log.txt" )
t "bench_kernels --sweep mxfp4 goss,8b (moe26)"
timeout 100 /tmp/b/bench_kernels --shapes goss,8b --types mxfp4 --sweep 2>&1 | grep -v refused > "$OUT/sweep.txt"
t end
