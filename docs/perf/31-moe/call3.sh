#!/usr/bin/env bash
# Device call 3 (H200) of docs/perf/31-moe: the Qwen3-30B-A3B and Mixtral-8x7B shapes (llama.cpp's Q4_K_M types,
# random blocks) against llama.cpp on the same files: call1.sh's benches without its tests, one model after the
# other (each file removed after its runs). Carry what call1.sh needs (build-pack/moe.tar.xz: the same build as
# call2's).
set -u
for M in ${MODELS:-qwen3-30b-a3b mixtral-8x7b}; do
  rm -f /tmp/file.done
  SKIP_TESTS=1 MODEL=$M bash docs/perf/31-moe/call1.sh
  rm -f /tmp/$M.gguf
done
