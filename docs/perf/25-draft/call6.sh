#!/usr/bin/env bash
# Device call 6 (H200) of docs/perf/25-draft: call 4's build (draft3.tar.xz, steps encoded ahead) against call 5's
# (draft4.tar.xz, the verify rows' attention in one pair a bucket, twice) in one call, alternating: the 1B fast
# and the 8B fast `--spec 3`, and the default model's lookup (warm). Carry .gl, build-pack/draft3.tar.xz and
# build-pack/draft4.tar.xz. Its stdout is call6/out.txt.
set -u
for f in .gl/*.deb; do dpkg -x "$f" / 2>/dev/null; done; ldconfig
export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json
for b in draft3 draft4; do mkdir -p /tmp/$b && tar -C /tmp/$b -xJf build-pack/$b.tar.xz; done
P="Repeat the passage. In the beginning God created the heaven and the earth. And the earth was without form, and void; and darkness was upon the face of the deep. And the Spirit of God moved upon the face of the waters. Repeat the passage. In the beginning God created the heaven and the earth. And the earth"
for round in 1 2; do
  for b in draft3 draft4; do
    export LD_LIBRARY_PATH=/tmp/$b
    echo "== round $round, $b"
    for shape in llama-1b llama-8b; do
      timeout 120 /tmp/$b/wgllm-bench --synthetic $shape --spec 3 --prompt 128 --gen 64 --runs 3 --kv f16 \
        --precision-list fast 2>&1 | sed "s/^/$shape: /" | grep -v lookup
    done
    for run in cold warm; do
      timeout 60 /tmp/$b/wgllm run -m models/default.gguf -p "$P" -n 128 --temp 0 --stats --ignore-eos --spec-lookup \
        > /dev/null 2> /tmp/stats.txt
    done
    echo "default model lookup, warm: $(head -1 /tmp/stats.txt)"
  done
done
