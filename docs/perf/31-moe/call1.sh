#!/usr/bin/env bash
# Device call 1 (H200) of docs/perf/31-moe: the Qwen3-30B-A3B shape against llama.cpp on the same Q4_K_M-typed GGUF,
# the MoE and families fixtures once on the GPU, and the qwen3_yarn transformers fixture. Carry .gl,
# build-pack/moe.tar.xz (stripped build-dev: wgllm, wgllm-bench, libwgllm.so.0, test_models, test_moe,
# libmicrohttpd.so.12, libwebgpu_wrapper.so) and bench/peers/llamacpp/dist (llcbench).
set -u
T0=$SECONDS
t() { echo "== $(( SECONDS - T0 )) s: $*" | tee -a "$OUT/log.txt"; }
for f in .gl/*.deb; do dpkg -x "$f" / 2>/dev/null; done; ldconfig
export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json
mkdir -p /tmp/b /tmp/llc && tar -C /tmp/b -xJf ${PACK:-build-pack/moe.tar.xz} &&
  tar -xJf bench/peers/llamacpp/dist/llcbench-linux-x64-vulkan.tar.xz -C /tmp/llc
export LD_LIBRARY_PATH=/tmp/b
L=$(dirname "$(find /tmp/llc -name llcbench -type f | head -1)")
M=${MODEL:-qwen3-30b-a3b}
J=$OUT/$M.jsonl
tag() { grep '^{' | sed "s/^{/{\"engine\": \"$1\", /" | tee -a "$J"; }
( t "write $M"; /tmp/b/wgllm-bench --synthetic $M --write-gguf /tmp/$M.gguf > "$OUT/write.txt" 2>&1
  echo done > /tmp/file.done ) &
if [ -z "${SKIP_TESTS:-}" ]; then
  t "qwen3_yarn fixture"
  ( cd tools/refs && timeout 120 python3 make_refs.py /tmp/refs --only qwen3_yarn > "$OUT/refs.txt" 2>&1; echo "rc=$?" >> "$OUT/refs.txt" )
  tail -2 "$OUT/refs.txt"; tar -C /tmp/refs -czf "$OUT/refs.tgz" . 2>/dev/null
  for tst in test_moe test_models; do
    t "$tst"
    ( cd tests && WGLLM_BIN=/tmp/b timeout 250 /tmp/b/$tst > "$OUT/$tst.txt" 2>&1; echo "rc=$?" >> "$OUT/$tst.txt" )
    grep -E "FAIL|checks|passed|rc=" "$OUT/$tst.txt" | tail -4
  done
fi
while [ ! -f /tmp/file.done ]; do sleep 1; done
t "written"; cat "$OUT/write.txt"; ls -la /tmp/$M.gguf
/tmp/b/wgllm info -m /tmp/$M.gguf > "$OUT/info_$M.txt" 2>&1; head -20 "$OUT/info_$M.txt"
t "wgllm decode 128 + prefill 512"
timeout 200 /tmp/b/wgllm-bench -m /tmp/$M.gguf --prompt 128,512 --gen 32 --runs 3 --kv f16 --json 2>>"$OUT/errors.txt" | tag wgllm
t "wgllm parallel 8"
timeout 120 /tmp/b/wgllm-bench -m /tmp/$M.gguf --parallel 8 --prompt 128 --gen 32 --runs 3 --kv f16 --json --batched-only 2>>"$OUT/errors.txt" | tag wgllm
[ -n "${SKIP_PROFILE:-}" ] || t "wgllm profile"
[ -n "${SKIP_PROFILE:-}" ] || timeout 100 /tmp/b/wgllm-bench -m /tmp/$M.gguf --prompt 128 --gen 8 --runs 1 --kv f16 --profile > "$OUT/profile_$M.txt" 2>&1
[ -n "${SKIP_PROFILE:-}" ] || head -40 "$OUT/profile_$M.txt"
for P in 128 512; do
  t "llama.cpp prompt $P"
  timeout 150 $L/llcbench bench /tmp/$M.gguf --backend vulkan --ngl 99 --prompt $P --gen 32 --runs 3 --kv f16 --sample host 2>>"$OUT/errors.txt" | tag llama.cpp
done
t "llama.cpp parallel 8"
timeout 150 $L/llcbench bench /tmp/$M.gguf --backend vulkan --ngl 99 --prompt 128 --gen 32 --runs 3 --kv f16 --sample host --parallel 8 2>>"$OUT/errors.txt" | tag llama.cpp
t end
tail -5 "$OUT/errors.txt" 2>/dev/null
