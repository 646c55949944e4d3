#!/usr/bin/env bash
# Device call 5 (H200), on call 4's machine: the GGUF files and the native engines on them. Carry
# build-pack/{node.xz.01,native.tar.xz,quant.tar.xz,ab.tar.xz} and bench/peers/llamacpp/dist.
# 1. the same files as every column of the table: the synthetic 8B and 1B as Q4_0 GGUF (wgllm bench --write-gguf),
#    the 8B requantized to Q4_K_M by llama.cpp's quantizer;
# 2. llama.cpp's Vulkan backend on them (bench/peers/llamacpp: prefill 128/512/2048, decode, 8 sequences batched);
# 3. native wgllm (bun-webgpu's Dawn: no subgroup matrices), this tree (ab.tar.xz: with the per-layer flush),
#    exact and fast. Writes $OUT/table.jsonl (rows tagged engine and file).
set -u
T0=$SECONDS
t() { echo "== $((SECONDS - T0)) s: $*" >> "$OUT/log.txt"; }
for f in .gl/*.deb; do dpkg -x "$f" /; done; ldconfig
export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json
tar -C /tmp -xJf build-pack/native.tar.xz
mkdir -p /tmp/q /tmp/ab /tmp/llc && tar -C /tmp/q -xJf build-pack/quant.tar.xz && tar -C /tmp/ab -xJf build-pack/ab.tar.xz
tar -xJf bench/peers/llamacpp/dist/llcbench-linux-x64-vulkan.tar.xz -C /tmp/llc
B=/tmp/build-dev L=/tmp/llc/lib
t files
LD_LIBRARY_PATH=$B $B/wgllm-bench --synthetic llama-8b --write-gguf /tmp/x8b.gguf > /tmp/gguf.log 2>&1 &
LD_LIBRARY_PATH=$B $B/wgllm-bench --synthetic llama-1b --write-gguf /tmp/x1b.gguf >> /tmp/gguf.log 2>&1
wait
LD_LIBRARY_PATH=/tmp/q/lib /tmp/q/lib/llc_quantize /tmp/x8b.gguf /tmp/x8b-q4km.gguf Q4_K_M > /tmp/quant.log 2>&1 ||
  tail -3 /tmp/quant.log >> "$OUT/errors.txt"
ls -la /tmp/*.gguf > "$OUT/files.txt"
J=$OUT/table.jsonl
tag() { grep '^{' | sed "s/^{/{\"engine\": \"$1\", \"file\": \"$2\", /" >> "$J"; }
P="--kv f16 --gen 32 --runs 3 --prefill-runs 3 --json"
for f in x8b x8b-q4km x1b; do
  t "llama.cpp $f"
  for p in 128 512 2048; do
    timeout 60 $L/llcbench bench /tmp/$f.gguf --backend vulkan --ngl 99 --prompt $p --gen 32 --runs 3 --kv f16 \
      --sample backend 2>> "$OUT/errors.txt" | tag llama.cpp $f
  done
  t "native $f"
  LD_LIBRARY_PATH=$B timeout 100 /tmp/ab/wgllm-bench -m /tmp/$f.gguf --prompt 128,512,2048 --precision-list exact,fast \
    $P 2>> "$OUT/errors.txt" | tag native $f
done
for f in x8b x1b; do
  t "batched $f"
  timeout 60 $L/llcbench bench /tmp/$f.gguf --backend vulkan --ngl 99 --prompt 128 --gen 32 --runs 3 --kv f16 \
    --sample host --parallel 8 2>> "$OUT/errors.txt" | tag llama.cpp $f
  LD_LIBRARY_PATH=$B timeout 60 /tmp/ab/wgllm-bench -m /tmp/$f.gguf --prompt 128 --parallel 8 --precision-list exact,fast \
    --kv f16 --gen 32 --runs 3 --json 2>> "$OUT/errors.txt" | tag native $f
done
t end
cat "$OUT/log.txt" "$OUT/files.txt"; wc -l "$J"; grep -v "^Warning" "$OUT/errors.txt" | tail -n 5
