#!/usr/bin/env bash
# Device call 5 (H200) of docs/perf/25-draft: the verify rows' attention in one pair a length bucket (twice: the first appends every row's K and V), with call 4's steps encoded ahead. Carry .gl
# and build-pack/draft4.tar.xz (wgllm, wgllm-bench, libwgllm.so.0, test_generate, libmicrohttpd,
# libwebgpu_wrapper.so). test_generate; `wgllm-bench --spec 7` on the synthetic 8B (fast, exact) and 1B (fast) with
# the synthetic 1B as the 8B's draft; the default model plain, --spec-lookup and -md itself (warm runs). Its stdout
# is call5/out.txt.
set -u
for f in .gl/*.deb; do dpkg -x "$f" / 2>/dev/null; done; ldconfig
export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json
mkdir -p /tmp/b && tar -C /tmp/b -xJf build-pack/draft4.tar.xz; export LD_LIBRARY_PATH=/tmp/b
( cd tests && timeout 120 /tmp/b/test_generate; echo "rc=$?" ) 2>&1 | grep -E "FAIL|checks|rc="
for prec in fast exact; do
  echo "== llama-8b $prec, draft llama-1b"
  timeout 200 /tmp/b/wgllm-bench --synthetic llama-8b --draft-synthetic llama-1b --spec 7 --prompt 128 --gen 64 \
    --runs 3 --kv f16 --precision-list $prec 2>&1
done
echo "== llama-1b fast"
timeout 200 /tmp/b/wgllm-bench --synthetic llama-1b --spec 7 --prompt 128 --gen 64 --runs 3 --kv f16 \
  --precision-list fast 2>&1
echo "== llama-8b fast, profile"
timeout 200 /tmp/b/wgllm-bench --synthetic llama-8b --spec 4 --prompt 128 --gen 64 --runs 3 --kv f16 --precision-list fast --profile 2>&1 | grep -A12 "verify step of 4 drafts alone"
REP="Repeat the passage. In the beginning God created the heaven and the earth. And the earth was without form, and void; and darkness was upon the face of the deep. And the Spirit of God moved upon the face of the waters. Repeat the passage. In the beginning God created the heaven and the earth. And the earth"
FREE="And it came to pass in those days, that"
i=0
for p in "$REP" "$FREE"; do
  i=$((i + 1))
  for mode in plain lookup draft; do
    x=""; [ $mode = lookup ] && x="--spec-lookup"; [ $mode = draft ] && x="-md models/default.gguf"
    for run in cold warm; do
      timeout 60 /tmp/b/wgllm run -m models/default.gguf -p "$p" -n 128 --temp 0 --stats --ignore-eos $x \
        > "/tmp/text_${i}_$mode.txt" 2> /tmp/stats.txt
      [ $run = warm ] && { echo "default model, prompt $i, $mode, warm:"; tail -2 /tmp/stats.txt; }
    done
  done
  cmp -s "/tmp/text_${i}_plain.txt" "/tmp/text_${i}_lookup.txt" && echo "prompt $i: lookup same text" || echo "prompt $i: lookup TEXT DIFFERS"
  cmp -s "/tmp/text_${i}_plain.txt" "/tmp/text_${i}_draft.txt" && echo "prompt $i: draft same text" || echo "prompt $i: draft TEXT DIFFERS"
done
