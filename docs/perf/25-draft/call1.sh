#!/usr/bin/env bash
# Device call 1 (H200) of docs/perf/25-draft, issue 29's draft-model proposer (main at a977939; carry .gl and
# build-pack/draft.tar.xz: wgllm, wgllm-bench, libwgllm.so.0, test_generate, libmicrohttpd, libwebgpu_wrapper.so).
# test_generate's verdict (draft_case among the rest); the default model plain, with --spec-lookup and with itself as
# the draft model (-md: every greedy draft accepted), each run twice (the second warm); `wgllm-bench --spec 7` on the
# synthetic 8B with the synthetic 1B as the draft model (random weights: the drafts' cost, not their acceptance),
# fast and exact; the same with the 8B as its own draft (every draft accepted: the draft path at full acceptance).
set -u
T0=$SECONDS
t() { echo "== $(( SECONDS - T0 )) s: $*" | tee -a "$OUT/log.txt"; }
for f in .gl/*.deb; do dpkg -x "$f" / 2>/dev/null; done; ldconfig
export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json
mkdir -p /tmp/b && tar -C /tmp/b -xJf build-pack/draft.tar.xz
export LD_LIBRARY_PATH=/tmp/b
t tests
( cd tests && timeout 120 /tmp/b/test_generate; echo "rc=$?" ) 2>&1 | grep -E "FAIL|checks|rc=" | tee "$OUT/tests.txt"
REP="Repeat the passage. In the beginning God created the heaven and the earth. And the earth was without form, and void; and darkness was upon the face of the deep. And the Spirit of God moved upon the face of the waters. Repeat the passage. In the beginning God created the heaven and the earth. And the earth"
FREE="And it came to pass in those days, that"
i=0
for p in "$REP" "$FREE"; do
  i=$((i + 1))
  for mode in plain lookup draft; do
    x=""; [ $mode = lookup ] && x="--spec-lookup"; [ $mode = draft ] && x="-md models/default.gguf"
    for run in cold warm; do
      t "default model, prompt $i, $mode, $run"
      timeout 60 /tmp/b/wgllm run -m models/default.gguf -p "$p" -n 128 --temp 0 --stats --ignore-eos $x \
        > "/tmp/text_${i}_$mode.txt" 2> "/tmp/stats.txt"
      tail -2 /tmp/stats.txt
    done
  done
  cmp -s "/tmp/text_${i}_plain.txt" "/tmp/text_${i}_lookup.txt" && echo "prompt $i: lookup same text" || echo "prompt $i: lookup TEXT DIFFERS"
  cmp -s "/tmp/text_${i}_plain.txt" "/tmp/text_${i}_draft.txt" && echo "prompt $i: draft same text" || echo "prompt $i: draft TEXT DIFFERS"
done 2>&1 | tee -a "$OUT/default_model.txt"
for prec in fast exact; do
  t "llama-8b --spec 7 --draft-synthetic llama-1b, $prec"
  timeout 150 /tmp/b/wgllm-bench --synthetic llama-8b --draft-synthetic llama-1b --spec 7 --prompt 128 --gen 64 \
    --runs 3 --kv f16 --precision-list $prec --json 2>>"$OUT/errors.txt" | tee -a "$OUT/spec_1b_draft.jsonl" | \
    python3 -c "import json,sys
for l in sys.stdin:
  d=json.loads(l); print(d['precision'], d['mode'], d.get('drafts',''), 'tok/s', d['tok_s'], 'x', d.get('speedup',''), 'step ms', d.get('ms_per_verify_step', d.get('ms_per_step')), 'proposing ms', d.get('ms_proposing_per_step',''), 'acc', d.get('acceptance',''), 'same', d.get('same_tokens',''))"
done
t "llama-8b --spec 7 --draft-synthetic llama-8b, fast"
timeout 150 /tmp/b/wgllm-bench --synthetic llama-8b --draft-synthetic llama-8b --spec 7 --prompt 128 --gen 64 \
  --runs 3 --kv f16 --precision-list fast --json 2>>"$OUT/errors.txt" | grep -E '"plain"|"draft model"' | \
  tee -a "$OUT/spec_8b_self.jsonl"
t end
