#!/usr/bin/env bash
# Device call 1 (H200) of docs/perf/26-spec-all: speculation and batched decode for every family and weight storage
# (Gemma 4's per-layer inputs and KV-shared layers, float weights through the GEMM of the rows). Carry .gl and
# build-pack/specall.tar.xz (stripped build-dev: wgllm, wgllm-bench, libwgllm.so.0, test_generate, test_kv_pool,
# test_api, libmicrohttpd.so.12, libwebgpu_wrapper.so). test_generate, test_kv_pool and test_api's verdicts; the
# synthetic Gemma 4 (q4gsw) `--spec 7` (drafts from the plain run: all accepted) fast and exact, and `--parallel 8`
# batched against one after another; the default model as stored (f32) plain, with lookup and with itself as the
# draft, and its `--parallel 8`.
set -u
T0=$SECONDS
t() { echo "== $(( SECONDS - T0 )) s: $*" | tee -a "$OUT/log.txt"; }
for f in .gl/*.deb; do dpkg -x "$f" / 2>/dev/null; done; ldconfig
export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json
mkdir -p /tmp/b && tar -C /tmp/b -xJf build-pack/specall.tar.xz
export LD_LIBRARY_PATH=/tmp/b
for tst in test_generate test_kv_pool test_api; do
  t "$tst"
  ( cd tests && timeout 200 /tmp/b/$tst > "$OUT/$tst.txt" 2>&1; echo "rc=$?" >> "$OUT/$tst.txt" )
  grep -E "FAIL|checks|rc=" "$OUT/$tst.txt" | head -8
done
summ() { python3 -c "import json,sys
for l in sys.stdin:
  try: d=json.loads(l)
  except Exception: continue
  print(' '.join(f'{k}={v}' for k, v in d.items() if not isinstance(v, (list, dict)) and k not in ('gpu', 'adapter', 'model_path')))"; }
for prec in fast exact; do
  t "gemma4 --spec 7, $prec"
  timeout 240 /tmp/b/wgllm-bench --synthetic gemma4 --spec 7 --prompt 128 --gen 64 --runs 3 --kv f16 \
    --precision-list $prec --json 2>>"$OUT/errors.txt" | tee -a "$OUT/gemma4_spec.jsonl" | summ
done
t "gemma4 --parallel 8, fast"
timeout 240 /tmp/b/wgllm-bench --synthetic gemma4 --parallel 8 --prompt 128 --gen 64 --runs 3 --kv f16 \
  --precision-list fast --json 2>>"$OUT/errors.txt" | tee -a "$OUT/gemma4_parallel.jsonl" | summ
t "default model (f32) --parallel 8"
timeout 120 /tmp/b/wgllm-bench -m models/default --parallel 8 --prompt 128 --gen 64 --runs 3 \
  --json 2>>"$OUT/errors.txt" | tee -a "$OUT/default_parallel.jsonl" | summ
t "default model (f32) --spec 7"
timeout 120 /tmp/b/wgllm-bench -m models/default --spec 7 --prompt 128 --gen 64 --runs 3 \
  --json 2>>"$OUT/errors.txt" | tee -a "$OUT/default_spec.jsonl" | summ
REP="Repeat the passage. In the beginning God created the heaven and the earth. And the earth was without form, and void; and darkness was upon the face of the deep. And the Spirit of God moved upon the face of the waters. Repeat the passage. In the beginning God created the heaven and the earth. And the earth"
for mode in plain lookup draft; do
  x=""; [ $mode = lookup ] && x="--spec-lookup"; [ $mode = draft ] && x="-md models/default"
  for run in cold warm; do
    timeout 60 /tmp/b/wgllm run -m models/default -p "$REP" -n 128 --temp 0 --stats --ignore-eos $x \
      > "/tmp/text_$mode.txt" 2> /tmp/stats.txt
    [ $run = warm ] && { echo "default model f32, $mode, warm:"; tail -2 /tmp/stats.txt; }
  done
done 2>&1 | tee "$OUT/default_run.txt"
for mode in lookup draft; do
  cmp -s /tmp/text_plain.txt "/tmp/text_$mode.txt" && echo "f32 $mode: same text" || echo "f32 $mode: TEXT DIFFERS"
done | tee -a "$OUT/default_run.txt"
t done
