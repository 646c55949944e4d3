#!/usr/bin/env bash
# Device call 6 (H200) of docs/perf/24-inflight, for issue 29: call 5 again with lookup resting after a step that accepted
# nothing (1, 2, 4 .. 64 plain steps). As call 5 otherwise: after call 4 a step's drafts were cut to 1, 3, 7
# or 15 (the batched decode's row counts: at most four sets of verify pipelines). Carry .gl and
# build-pack/spec3.tar.xz (as call 4's). test_generate's verdict; the default model with and without --spec-lookup
# (its first run of each prompt compiles the pipelines, so each prompt runs twice: the second is timed warm);
# `wgllm-bench --spec 7` on the synthetic 8B, fast.
set -u
T0=$SECONDS
t() { echo "== $(( SECONDS - T0 )) s: $*" | tee -a "$OUT/log.txt"; }
for f in .gl/*.deb; do dpkg -x "$f" / 2>/dev/null; done; ldconfig
export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json
mkdir -p /tmp/b && tar -C /tmp/b -xJf build-pack/spec3.tar.xz
export LD_LIBRARY_PATH=/tmp/b
t tests
( cd tests && timeout 90 /tmp/b/test_generate; echo "rc=$?" ) 2>&1 | grep -E "FAIL|checks|rc=" | tee "$OUT/tests.txt"
REP="Repeat the passage. In the beginning God created the heaven and the earth. And the earth was without form, and void; and darkness was upon the face of the deep. And the Spirit of God moved upon the face of the waters. Repeat the passage. In the beginning God created the heaven and the earth. And the earth"
FREE="And it came to pass in those days, that"
i=0
for p in "$REP" "$FREE"; do
  i=$((i + 1))
  for mode in plain lookup; do
    x=""; [ $mode = lookup ] && x="--spec-lookup"
    for run in cold warm; do
      t "default model, prompt $i, $mode, $run"
      timeout 60 /tmp/b/wgllm run -m models/default.gguf -p "$p" -n 128 --temp 0 --stats --ignore-eos $x \
        > "$OUT/text_${i}_$mode.txt" 2> "$OUT/stats_${i}_${mode}_$run.txt"
      tail -2 "$OUT/stats_${i}_${mode}_$run.txt"
    done
  done
  cmp -s "$OUT/text_${i}_plain.txt" "$OUT/text_${i}_lookup.txt" && echo "prompt $i: same text" || echo "prompt $i: TEXT DIFFERS"
done 2>&1 | tee -a "$OUT/default_model.txt"
rm -f "$OUT"/text_*.txt
t "llama-8b --spec 7 fast"
timeout 120 /tmp/b/wgllm-bench --synthetic llama-8b --spec 7 --prompt 128 --gen 64 --runs 3 --kv f16 \
  --precision-list fast --json 2>>"$OUT/errors.txt" | grep -E '"plain"|"lookup"' | tee -a "$OUT/spec.jsonl"
t end
