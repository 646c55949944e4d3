#!/usr/bin/env bash
# Device call 2 (H200) of docs/perf/31-moe: the gpt-oss transformers fixtures (make_refs.py --only gpt_oss)
# and the GGUF one from llama.cpp v0.5.0's converter (tools/refs/convert_gpt_oss_gguf.py), then test_models on the
# GPU with them in place; the gpt-oss-20b shape (MXFP4 experts, Q8_0 otherwise) against llama.cpp on the same file.
# Carry .gl, build-pack/moe2.tar.xz (stripped build-dev: wgllm, wgllm-bench, libwgllm.so.0, test_models, test_moe,
# libmicrohttpd.so.12, libwebgpu_wrapper.so, and llcpp/: llama.cpp v0.5.0's convert_hf_to_gguf.py, conversion/ and
# gguf-py/ from the node-llama-cpp@3.22.1 bundle) and bench/peers/llamacpp/dist (llcbench).
set -u
T0=$SECONDS
t() { echo "== $(( SECONDS - T0 )) s: $*" | tee -a "$OUT/log.txt"; }
for f in .gl/*.deb; do dpkg -x "$f" / 2>/dev/null; done; ldconfig
export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json
mkdir -p /tmp/b /tmp/llc && tar -C /tmp/b -xJf build-pack/moe2.tar.xz &&
  tar -xJf bench/peers/llamacpp/dist/llcbench-linux-x64-vulkan.tar.xz -C /tmp/llc
export LD_LIBRARY_PATH=/tmp/b
L=$(dirname "$(find /tmp/llc -name llcbench -type f | head -1)")
M=${MODEL:-gpt-oss-20b}
J=$OUT/$M.jsonl
tag() { grep '^{' | sed "s/^{/{\"engine\": \"$1\", /" | tee -a "$J"; }
( /tmp/b/wgllm-bench --synthetic $M --write-gguf /tmp/$M.gguf > "$OUT/write.txt" 2>&1; echo done > /tmp/file.done ) &
if [ -z "${SKIP_TESTS:-}" ]; then
  t "fixtures"
  ( cd tools/refs && timeout 150 python3 make_refs.py /tmp/refs --only gpt_oss &&
    timeout 120 python3 convert_gpt_oss_gguf.py /tmp/b/llcpp /tmp/refs /tmp/refs ) > "$OUT/refs.txt" 2>&1
  echo "rc=$?" >> "$OUT/refs.txt"; grep -v "^INFO\|^DEBUG" "$OUT/refs.txt" | tail -12
  tar -C /tmp/refs -czf "$OUT/refs.tgz" . 2>/dev/null
  ( timeout 60 python3 tools/refs/make_chat_refs.py /tmp/chat && tar -C /tmp/chat -czf "$OUT/chat.tgz" . ) > "$OUT/chat.txt" 2>&1
  cp -r /tmp/refs/* tests/data/models/ 2>/dev/null
  for tst in test_models test_moe; do
    t "$tst"
    ( cd tests && WGLLM_BIN=/tmp/b timeout 200 /tmp/b/$tst > "$OUT/$tst.txt" 2>&1; echo "rc=$?" >> "$OUT/$tst.txt" )
    grep -E "FAIL|rc=|checks" "$OUT/$tst.txt" | tail -6; grep -E "gpt_oss|yarn" "$OUT/$tst.txt" | head -30
  done
fi
while [ ! -f /tmp/file.done ]; do sleep 1; done
t "written"; cat "$OUT/write.txt"; ls -la /tmp/$M.gguf
t "wgllm decode 128 + prefill 512"
timeout 150 /tmp/b/wgllm-bench -m /tmp/$M.gguf --prompt 128,512 --gen 32 --runs 3 --kv f16 --json 2>>"$OUT/errors.txt" | tag wgllm
t "wgllm parallel 8"
timeout 100 /tmp/b/wgllm-bench -m /tmp/$M.gguf --parallel 8 --prompt 128 --gen 32 --runs 3 --kv f16 --json --batched-only 2>>"$OUT/errors.txt" | tag wgllm
t "wgllm profile"
timeout 80 /tmp/b/wgllm-bench -m /tmp/$M.gguf --prompt 128 --gen 8 --runs 1 --kv f16 --profile > "$OUT/profile_$M.txt" 2>&1
head -45 "$OUT/profile_$M.txt"
for P in 128 512; do
  t "llama.cpp prompt $P"
  timeout 120 $L/llcbench bench /tmp/$M.gguf --backend vulkan --ngl 99 --prompt $P --gen 32 --runs 3 --kv f16 --sample host 2>>"$OUT/errors.txt" | tag llama.cpp
done
t "llama.cpp parallel 8"
timeout 120 $L/llcbench bench /tmp/$M.gguf --backend vulkan --ngl 99 --prompt 128 --gen 32 --runs 3 --kv f16 --sample host --parallel 8 2>>"$OUT/errors.txt" | tag llama.cpp
t end
tail -5 "$OUT/errors.txt" 2>/dev/null
