#!/usr/bin/env bash
# Device call 4 (H200) of docs/perf/24-inflight, for issue 29: speculative decoding with prompt lookup. Carry .gl and
# build-pack/spec.tar.xz (wgllm, wgllm-bench, libwgllm.so.0, test_generate, libmicrohttpd, Dawn's
# libwebgpu_wrapper.so). Runs test_generate (its speculation cases); `wgllm-bench --spec 7` on the synthetic 8B and
# 1B (verify steps of 1-7 drafts from the plain run: every draft accepted; then prompt lookup), exact and fast; and
# the bundled default model (models/default.gguf) through `wgllm run --stats` with and without --spec-lookup on a
# passage the prompt repeats and on free text, the two texts compared.
set -u
T0=$SECONDS
t() { echo "== $(( SECONDS - T0 )) s: $*" | tee -a "$OUT/log.txt"; }
for f in .gl/*.deb; do dpkg -x "$f" / 2>/dev/null; done; ldconfig
export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json
mkdir -p /tmp/b && tar -C /tmp/b -xJf build-pack/spec.tar.xz
export LD_LIBRARY_PATH=/tmp/b
t tests
( cd tests && timeout 90 /tmp/b/test_generate; echo "rc=$?" ) > "$OUT/tests.txt" 2>&1
grep -E "FAIL|checks|rc=" "$OUT/tests.txt" | head
for s in llama-8b llama-1b; do
  t "$s --spec 7"
  timeout 150 /tmp/b/wgllm-bench --synthetic $s --spec 7 --prompt 128 --gen 64 --runs 3 --kv f16 \
    --precision-list exact,fast --json 2>>"$OUT/errors.txt" | tee -a "$OUT/spec.jsonl"
done
REP="Repeat the passage. In the beginning God created the heaven and the earth. And the earth was without form, and void; and darkness was upon the face of the deep. And the Spirit of God moved upon the face of the waters. Repeat the passage. In the beginning God created the heaven and the earth. And the earth"
FREE="And it came to pass in those days, that"
i=0
for p in "$REP" "$FREE"; do
  i=$((i + 1))
  for mode in plain lookup; do
    x=""; [ $mode = lookup ] && x="--spec-lookup"
    t "default model, prompt $i, $mode"
    timeout 60 /tmp/b/wgllm run -m models/default.gguf -p "$p" -n 128 --temp 0 --stats --ignore-eos $x \
      > "$OUT/text_${i}_$mode.txt" 2> "$OUT/stats_${i}_$mode.txt"
    tail -2 "$OUT/stats_${i}_$mode.txt"
  done
  cmp -s "$OUT/text_${i}_plain.txt" "$OUT/text_${i}_lookup.txt" && echo "prompt $i: same text" || echo "prompt $i: TEXT DIFFERS"
done | tee -a "$OUT/default_model.txt"
t end
tail -3 "$OUT/errors.txt" 2>/dev/null
