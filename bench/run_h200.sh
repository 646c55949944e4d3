#!/usr/bin/env bash
# The PERF.md tables in one run on the H200 machine (see ../shared/docs/DEVICE.md for the setup lines that come
# first): synthetic Llama-3.2-1B and Llama-3.1-8B shapes in q4gsw g32 at contexts 128, 2048 and 8192 with f32 and
# f16 KV; the q4 GEMV per projection (achieved GB/s) and the dependent-dispatch cost (bench_kernels); the
# flash-decoding grid (indirect vs worst case); sampled vs greedy decode; Dawn toggles; per-kernel profiles.
# llama.cpp on the same GGUF files is ../shared/peers/llamacpp/run_device.sh (PERF.md says how it was run).
# Usage: BIN=build OUT=dir bench/run_h200.sh     (JSON lines and logs land in $OUT)
set -u
B=${BIN:-build}
OUT=${OUT:-bench-out}
mkdir -p "$OUT"
"$B/wgllm" info --gpu > "$OUT/info.txt" 2>&1
timeout 120 "$B/bench_kernels" --shapes 1b,8b > "$OUT/kernels.txt" 2>&1
timeout 200 "$B/wgllm" bench --synthetic llama-1b --prompt 128,2048,8192 --kv-list f32,f16 --gen 64 --runs 5 \
  --prefill-runs 1 --json >> "$OUT/table.jsonl" 2>> "$OUT/errors.log"
timeout 200 "$B/wgllm" bench --synthetic llama-8b --prompt 128,2048 --kv-list f32,f16 --gen 64 --runs 5 \
  --prefill-runs 1 --json >> "$OUT/table.jsonl" 2>> "$OUT/errors.log"
timeout 150 "$B/wgllm" bench --synthetic llama-8b --prompt 8192 --kv f16 --gen 64 --runs 5 --prefill-runs 1 --json \
  >> "$OUT/table.jsonl" 2>> "$OUT/errors.log"
# the worst-case grid inside a length bucket against the indirect grid
WGLLM_ATTN_GRID=indirect timeout 150 "$B/wgllm" bench --synthetic llama-8b --prompt 128,2048 --kv f16 --gen 64 --runs 5 \
  --prefill-runs 1 --json >> "$OUT/extra.jsonl" 2>> "$OUT/errors.log"
for m in llama-1b llama-8b; do
  timeout 150 "$B/wgllm" bench --synthetic $m --prompt 128,2048 --kv f16 --gen 64 --runs 5 --prefill-runs 1 --sampled \
    --json >> "$OUT/extra.jsonl" 2>> "$OUT/errors.log"
  timeout 100 "$B/wgllm" bench --synthetic $m --prompt 128 --kv f16 --gen 64 --runs 5 --prefill-runs 1 --json \
    --dawn-toggles disable_robustness >> "$OUT/extra.jsonl" 2>> "$OUT/errors.log"
  timeout 100 "$B/wgllm" bench --synthetic $m --prompt 128 --kv f16 --gen 16 --runs 2 --prefill-runs 1 --profile \
    >> "$OUT/profile.txt" 2>&1
done
