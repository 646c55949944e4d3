#!/usr/bin/env bash
# The PERF.md decode tables on the H200 machine (the setup lines that come first, .gl and VK_DRIVER_FILES: see
# bench/peers/llamacpp/README.md, "On the GPU machine"; llama.cpp on the same GGUF files is
# bench/peers/llamacpp/run_device.sh, run in the same call: PERF.md gives its command). Synthetic Llama-3.2-1B and
# Llama-3.1-8B shapes in q4gsw g32: the table at contexts 128 and 2048 with f32 and f16 KV, 8192 for 1B; sampled
# against greedy; the indirect flash-decoding grid; the disable_robustness toggle; per-kernel profiles; the q4 GEMV
# per projection with its probes and the flash-decoding chunk lengths (bench_kernels). About 6 minutes.
# Usage: BIN=build OUT=dir bench/run_h200.sh     (BIN holds wgllm and bench_kernels; JSON lines and logs in $OUT)
set -u
B=${BIN:-build}
OUT=${OUT:-bench-out}
mkdir -p "$OUT"
bench() { timeout 200 "$B/wgllm" bench "$@" --gen 64 --runs 5 --prefill-runs 1 --json; }
"$B/wgllm" info --gpu > "$OUT/info.txt" 2>&1
bench --synthetic llama-1b --prompt 128,2048 --kv-list f32,f16 >> "$OUT/table.jsonl" 2>> "$OUT/errors.log"
bench --synthetic llama-8b --prompt 128,2048 --kv-list f32,f16 >> "$OUT/table.jsonl" 2>> "$OUT/errors.log"
bench --synthetic llama-1b --prompt 8192 --kv f16 >> "$OUT/table.jsonl" 2>> "$OUT/errors.log"
for m in llama-1b llama-8b; do
  bench --synthetic $m --prompt 128 --kv f16 --sampled >> "$OUT/sampled.jsonl" 2>> "$OUT/errors.log"
done
# the worst-case grid inside a length bucket against the indirect grid; a cache far larger than the context
bench --synthetic llama-8b --prompt 128,2048 --kv f16 --attn-grid indirect >> "$OUT/extra.jsonl" 2>> "$OUT/errors.log"
bench --synthetic llama-1b --prompt 128 --ctx 8192 --kv f16 >> "$OUT/extra.jsonl" 2>> "$OUT/errors.log"
bench --synthetic llama-1b --prompt 128 --kv f16 --dawn-toggles disable_robustness >> "$OUT/extra.jsonl" 2>> "$OUT/errors.log"
for m in llama-1b llama-8b; do
  timeout 100 "$B/wgllm" bench --synthetic $m --prompt 128 --kv f16 --gen 16 --runs 2 --prefill-runs 1 --profile \
    >> "$OUT/profile.txt" 2>&1
done
timeout 150 "$B/bench_kernels" --shapes 1b,8b --probe --attn > "$OUT/kernels.txt" 2>&1
