#!/usr/bin/env bash
# The PERF.md table in one run on the H200 machine (see ../shared/docs/DEVICE.md for the setup lines that come
# first): synthetic Llama-3.2-1B and Llama-3.1-8B shapes in q4gsw g32, f32 and f16 KV, contexts 128, 2048 and
# 8192; the flash-decoding grid (indirect vs worst case); the decode pipeline depth; per-kernel profiles.
# Usage: BIN=build/wgllm OUT=dir bench/run_h200.sh     (JSON lines and logs land in $OUT)
set -u
B=${BIN:-build/wgllm}
OUT=${OUT:-bench-out}
mkdir -p "$OUT"
"$B" info --gpu > "$OUT/info.txt" 2>&1
for m in llama-1b llama-8b; do
  timeout 300 "$B" bench --synthetic $m --prompt 128,2048,8192 --kv-list f32,f16 --gen 64 --runs 5 --prefill-runs 1 --json \
    >> "$OUT/table.jsonl" 2>> "$OUT/errors.log"
done
for g in indirect worst; do
  WGLLM_ATTN_GRID=$g timeout 200 "$B" bench --synthetic llama-8b --prompt 2048,8192 --kv f16 --gen 64 --runs 5 --prefill-runs 1 \
    --json >> "$OUT/grid.jsonl" 2>> "$OUT/errors.log"
done
for d in 1 2 3; do
  timeout 100 "$B" bench --synthetic llama-1b --prompt 128 --gen 64 --runs 5 --prefill-runs 1 --pipeline $d --json \
    >> "$OUT/pipeline.jsonl" 2>> "$OUT/errors.log"
done
for m in llama-1b llama-8b; do
  timeout 150 "$B" bench --synthetic $m --prompt 2048 --kv f16 --gen 64 --runs 5 --prefill-runs 1 --sampled --json \
    >> "$OUT/sampled.jsonl" 2>> "$OUT/errors.log"
done
timeout 100 "$B" bench --synthetic llama-1b --prompt 128 --gen 16 --runs 2 --prefill-runs 1 --profile > "$OUT/profile.txt" 2>&1
timeout 200 "$B" bench --synthetic llama-8b --prompt 2048 --kv f16 --gen 16 --runs 2 --prefill-runs 1 --profile >> "$OUT/profile.txt" 2>&1
