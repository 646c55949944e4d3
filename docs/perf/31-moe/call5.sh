#!/usr/bin/env bash
# Device call 5 of docs/perf/31-moe: the expert GEMV of decode in the tuned GEMV's layouts (kernels/gemv.wgsl
# "_moe", MXFP4 in the GEMV). test_ops' GEMV and MoE cases on the GPU first (the tuned layouts with 32-lane
# subgroups), then call1.sh's benches for each of MODELS. Carry .gl, build-pack/moe3.tar.xz (stripped build-dev:
# wgllm, wgllm-bench, libwgllm.so.0, test_ops, libmicrohttpd.so.12, libwebgpu_wrapper.so) and
# bench/peers/llamacpp/dist.
set -u
for f in .gl/*.deb; do dpkg -x "$f" / 2>/dev/null; done; ldconfig
mkdir -p /tmp/b && tar -C /tmp/b -xJf build-pack/moe3.tar.xz
( cd tests && LD_LIBRARY_PATH=/tmp/b timeout 150 /tmp/b/test_ops -f gemv/ -f moe_ > "$OUT/test_ops.txt" 2>&1
  echo "rc=$?" >> "$OUT/test_ops.txt" )
grep -E "FAIL|cases:|checks|rc=" "$OUT/test_ops.txt" | tail -6
for M in ${MODELS:-gpt-oss-20b qwen3-30b-a3b}; do
  rm -f /tmp/file.done
  PACK=build-pack/moe3.tar.xz SKIP_TESTS=1 MODEL=$M bash docs/perf/31-moe/call1.sh
  rm -f /tmp/$M.gguf
done
