#!/usr/bin/env bash
# Device call 7 (H200) of docs/perf/25-draft: main's speculation (draft5.tar.xz: call 5's attention pair a bucket,
# the positions in one write) against call 4's build (draft3.tar.xz) once more, alternating (the default model's
# lookup, warm; the 1B and 8B fast `--spec 3`), then draft5's final figures as call 5 took them. Carry .gl,
# build-pack/draft3.tar.xz and build-pack/draft5.tar.xz. Its stdout is call7/out.txt.
set -u
for f in .gl/*.deb; do dpkg -x "$f" / 2>/dev/null; done; ldconfig
export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json
for b in draft3 draft5; do mkdir -p /tmp/$b && tar -C /tmp/$b -xJf build-pack/$b.tar.xz; done
REP="Repeat the passage. In the beginning God created the heaven and the earth. And the earth was without form, and void; and darkness was upon the face of the deep. And the Spirit of God moved upon the face of the waters. Repeat the passage. In the beginning God created the heaven and the earth. And the earth"
FREE="And it came to pass in those days, that"
( cd tests && LD_LIBRARY_PATH=/tmp/draft5 timeout 150 /tmp/draft5/test_generate; echo "rc=$?" ) 2>&1 | grep -E "FAIL|checks|rc=|chi2"
for round in 1 2; do
  for b in draft3 draft5; do
    export LD_LIBRARY_PATH=/tmp/$b
    echo "== round $round, $b"
    for shape in llama-1b llama-8b; do
      timeout 120 /tmp/$b/wgllm-bench --synthetic $shape --spec 3 --prompt 128 --gen 64 --runs 3 --kv f16 \
        --precision-list fast 2>&1 | sed "s/^/$shape: /" | grep -v lookup
    done
    for run in cold warm warm2; do
      timeout 60 /tmp/$b/wgllm run -m models/default.gguf -p "$REP" -n 128 --temp 0 --stats --ignore-eos --spec-lookup \
        > /dev/null 2> /tmp/stats.txt
      [ $run = cold ] || echo "default model lookup, $run: $(head -1 /tmp/stats.txt)"
    done
  done
done
export LD_LIBRARY_PATH=/tmp/draft5
for prec in fast exact; do
  echo "== final: llama-8b $prec, draft llama-1b"
  timeout 200 /tmp/draft5/wgllm-bench --synthetic llama-8b --draft-synthetic llama-1b --spec 7 --prompt 128 --gen 64 \
    --runs 3 --kv f16 --precision-list $prec 2>&1
done
echo "== final: llama-1b fast"
timeout 200 /tmp/draft5/wgllm-bench --synthetic llama-1b --spec 7 --prompt 128 --gen 64 --runs 3 --kv f16 \
  --precision-list fast 2>&1
i=0
for p in "$REP" "$FREE"; do
  i=$((i + 1))
  for mode in plain lookup draft; do
    x=""; [ $mode = lookup ] && x="--spec-lookup"; [ $mode = draft ] && x="-md models/default.gguf"
    for run in cold warm; do
      timeout 60 /tmp/draft5/wgllm run -m models/default.gguf -p "$p" -n 128 --temp 0 --stats --ignore-eos $x \
        > "/tmp/text_${i}_$mode.txt" 2> /tmp/stats.txt
      [ $run = warm ] && { echo "final: default model, prompt $i, $mode, warm:"; tail -2 /tmp/stats.txt; }
    done
  done
  cmp -s "/tmp/text_${i}_plain.txt" "/tmp/text_${i}_lookup.txt" && echo "prompt $i: lookup same text" || echo "prompt $i: lookup TEXT DIFFERS"
  cmp -s "/tmp/text_${i}_plain.txt" "/tmp/text_${i}_draft.txt" && echo "prompt $i: draft same text" || echo "prompt $i: draft TEXT DIFFERS"
done
