#!/usr/bin/env bash
# Device call 2 (H200) of docs/perf/25-draft: call 1's verify steps of the 8B fast were 1-2 ms slower than
# docs/perf/24-inflight's calls 4-7; the same bench with and without the synthetic 1B draft model loaded beside it
# (carry .gl and build-pack/draft.tar.xz). Its stdout is call2/out.txt.
for f in .gl/*.deb; do dpkg -x "$f" / 2>/dev/null; done; ldconfig; export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json; mkdir -p /tmp/b && tar -C /tmp/b -xJf build-pack/draft.tar.xz; export LD_LIBRARY_PATH=/tmp/b; for x in "" "--draft-synthetic llama-1b"; do echo "== extra: $x"; timeout 150 /tmp/b/wgllm-bench --synthetic llama-8b $x --spec 4 --prompt 128 --gen 64 --runs 3 --kv f16 --precision-list fast --json 2>&1 | python3 -c "import json,sys
for l in sys.stdin:
  try: d=json.loads(l)
  except Exception: print(l.strip()); continue
  print(d['mode'], d.get('drafts',''), d['tok_s'], d.get('ms_per_verify_step', d.get('ms_per_step')), d.get('verify_steps'))"; done
