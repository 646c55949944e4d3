#!/bin/bash
# The one-change build of docs/perf/31-moe/call38.sh: px, main (bd5aefe, engine code as 222474c) with batched decode's
# expert GEMV taking its pairs along the grid's x (kernels/gemv.wgsl's PF constant, src/ops/op_linear.c gemv_piece:
# the change is mkvars38_px.diff), built in build-rel with the diff applied, then reverted; a stripped wgllm-bench
# and test_ops in /tmp/var38/px, then `tar -C /tmp/var38 -cJf build-pack/var38.tar.xz .`. (Measured no faster in
# call 38 and not merged.)
set -e
cd "$(dirname "$0")/../../.."
git apply docs/perf/31-moe/mkvars38_px.diff
git diff --stat -- kernels/gemv.wgsl src/ops/op_linear.c | tail -1
cmake --build build-rel -j2 --target wgllm_bench test_ops > /tmp/var38_px.log 2>&1 ||
  { tail -20 /tmp/var38_px.log; git checkout -q kernels/gemv.wgsl src/ops/op_linear.c; exit 1; }
mkdir -p /tmp/var38/px && cp build-rel/wgllm-bench build-rel/test_ops /tmp/var38/px/ && strip /tmp/var38/px/*
git checkout -q kernels/gemv.wgsl src/ops/op_linear.c
cmake --build build-rel -j2 --target wgllm_bench test_ops > /dev/null
tar -C /tmp/var38 -cJf build-pack/var38.tar.xz .
