#!/usr/bin/env bash
# Device call 6 of docs/perf/31-moe: call 5's build plus the f32 GEMV (the routers), the RMSNorm folded into the
# router's and the experts' gate/up GEMVs in decode, and the tuned GEMV for K of 24 steps (Qwen3-30B-A3B's down
# projection). test_ops' GEMV and MoE cases on the GPU, then call1.sh's benches for gpt-oss-20b, Qwen3-30B-A3B and
# Mixtral-8x7B (Mixtral without its profile, for the call's time). A call returns 8 files: the models' info and the
# GGUF writers' output go to log.txt. Carry .gl, build-pack/moe4.tar.xz (as call 5's) and bench/peers/llamacpp/dist.
set -u
for f in .gl/*.deb; do dpkg -x "$f" / 2>/dev/null; done; ldconfig
PACK=${PACK:-build-pack/moe4.tar.xz}
mkdir -p /tmp/b && tar -C /tmp/b -xJf $PACK
( cd tests && LD_LIBRARY_PATH=/tmp/b timeout 150 /tmp/b/test_ops -f gemv/ -f moe_ > "$OUT/test_ops.txt" 2>&1
  echo "rc=$?" >> "$OUT/test_ops.txt" )
grep -E "FAIL|cases:|checks|rc=" "$OUT/test_ops.txt" | tail -6 | tee -a "$OUT/log.txt"
for M in gpt-oss-20b qwen3-30b-a3b mixtral-8x7b; do
  rm -f /tmp/file.done
  skip=; [ $M = mixtral-8x7b ] && skip=1
  SKIP_PROFILE=$skip PACK=$PACK SKIP_TESTS=1 MODEL=$M bash docs/perf/31-moe/call1.sh
  rm -f /tmp/$M.gguf
  { echo "== info $M"; head -12 "$OUT/info_$M.txt"; cat "$OUT/write.txt"; } >> "$OUT/log.txt"
  mv "$OUT/info_$M.txt" "$OUT/write.txt" /tmp/ 2>/dev/null
done
