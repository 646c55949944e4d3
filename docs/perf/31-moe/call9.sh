#!/usr/bin/env bash
# Device call 9 of docs/perf/31-moe: the down projection and the combine in one GEMV (gemv.wgsl "_moec") and Qwen3's
# q/k head norms in the flash-decoding pass (attn_split.wgsl "ropeqkn"). test_ops' new cases and the GEMV and MoE
# ones on the GPU, then call1.sh's benches for gpt-oss-20b, Qwen3-30B-A3B and Mixtral-8x7B against llama.cpp
# (Mixtral without its profile). The batched runs measure the one-token folding limit (5519280) for the first time.
# Carry .gl, build-pack/moe7.tar.xz (stripped build-dev: wgllm, wgllm-bench, libwgllm.so.0, test_ops,
# libmicrohttpd.so.12, libwebgpu_wrapper.so) and bench/peers/llamacpp/dist.
set -u
for f in .gl/*.deb; do dpkg -x "$f" / 2>/dev/null; done; ldconfig
PACK=${PACK:-build-pack/moe7.tar.xz}
mkdir -p /tmp/b && tar -C /tmp/b -xJf $PACK
( cd tests && LD_LIBRARY_PATH=/tmp/b timeout 150 /tmp/b/test_ops -f moe_down_combine -f flash_decode_rope -f gemv/ -f moe_ > "$OUT/test_ops.txt" 2>&1
  echo "rc=$?" >> "$OUT/test_ops.txt" )
grep -E "FAIL|cases:|checks|rc=" "$OUT/test_ops.txt" | tail -6 | tee -a "$OUT/log.txt"
for M in qwen3-30b-a3b gpt-oss-20b mixtral-8x7b; do
  rm -f /tmp/file.done
  skip=; [ $M = mixtral-8x7b ] && skip=1
  SKIP_PROFILE=$skip PACK=$PACK SKIP_TESTS=1 MODEL=$M bash docs/perf/31-moe/call1.sh
  rm -f /tmp/$M.gguf
  { echo "== info $M"; head -12 "$OUT/info_$M.txt"; cat "$OUT/write.txt"; } >> "$OUT/log.txt"
  mv "$OUT/info_$M.txt" "$OUT/write.txt" /tmp/ 2>/dev/null
done
