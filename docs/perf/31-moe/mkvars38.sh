#!/bin/bash
# The one-change build of docs/perf/31-moe/call38.sh: px, main (bd5aefe, engine code as 222474c) with the batched
# expert GEMV's pairs along the grid's x (kernels/gemv.wgsl PF, src/ops/op_linear.c gemv_piece), built in build-rel
# from the working tree that holds that change; a stripped wgllm-bench and test_ops in /tmp/var38/px, then
# `tar -C /tmp/var38 -cJf build-pack/var38.tar.xz .`.
set -e
cd "$(dirname "$0")/../../.."
git diff --stat -- kernels/gemv.wgsl src/ops/op_linear.c | tail -1
cmake --build build-rel -j2 --target wgllm_bench test_ops > /tmp/var38_px.log 2>&1 || { tail -20 /tmp/var38_px.log; exit 1; }
mkdir -p /tmp/var38/px && cp build-rel/wgllm-bench build-rel/test_ops /tmp/var38/px/ && strip /tmp/var38/px/*
tar -C /tmp/var38 -cJf build-pack/var38.tar.xz .
