#!/bin/bash
# device call B: fixtures back, the sweep with per-shape warm-up, Q4_0 vs Q4_K_M end to end, llama.cpp beside
set -u
R=$PWD
for f in .gl/*.deb; do dpkg -x $f / >/dev/null; done; ldconfig
export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json
export LD_LIBRARY_PATH=$R/.devbin:$R/third_party/dawn/lib
export WGLLM_BIN=$R/.devbin
date +%T; echo "== make_refs"
(cd tools/refs && timeout 120 python3 make_refs.py /tmp/refs --only llama_q4km_gguf,llama_q4_0_q6k_gguf) > $OUT/make_refs.log 2>&1
tar -C /tmp/refs -cf $OUT/fixtures.tar llama_q4km_gguf llama_q4_0_q6k_gguf
cp -r /tmp/refs/llama_q4km_gguf /tmp/refs/llama_q4_0_q6k_gguf tests/data/models/
date +%T; echo "== tests"
(cd tests && timeout 100 ../.devbin/test_ops -f gemv -f matvec/parts 2>&1 | grep -E "FAIL|test_ops:"; timeout 150 ../.devbin/test_models 2>&1 | grep -E "FAIL|checks|q4km|q6k") > $OUT/h200_tests.txt 2>&1; cat $OUT/h200_tests.txt
mkdir -p /tmp/llc && tar -xJf .peer/dist/llcbench-linux-x64-vulkan.tar.xz -C /tmp/llc && cp .devbin/llc_quantize /tmp/llc/lib/
date +%T; echo "== GGUFs"
ls /tmp/*.gguf
if [ ! -f /tmp/x8b-q4km.gguf ]; then
  timeout 100 .devbin/wgllm bench --synthetic llama-8b --write-gguf /tmp/x8b.gguf > /dev/null 2>&1
  timeout 120 /tmp/llc/lib/llc_quantize /tmp/x8b.gguf /tmp/x8b-q4km.gguf Q4_K_M >> $OUT/errors.log 2>&1
fi
if [ ! -f /tmp/x1b-q4km.gguf ]; then
  timeout 60 .devbin/wgllm bench --synthetic llama-1b --write-gguf /tmp/x1b.gguf > /dev/null 2>&1
  timeout 60 /tmp/llc/lib/llc_quantize /tmp/x1b.gguf /tmp/x1b-q4km.gguf Q4_K_M >> $OUT/errors.log 2>&1
fi
date +%T; echo "== wgllm e2e"
for f in x8b x8b-q4km x1b x1b-q4km; do
  timeout 60 .devbin/wgllm bench -m /tmp/$f.gguf --prompt 128 --kv f16 --gen 64 --runs 5 --prefill-runs 1 --json >> $OUT/h200_e2e.jsonl 2>> $OUT/errors.log
done
python3 -c "
import json
for l in open('$OUT/h200_e2e.jsonl'):
  j=json.loads(l); print(j['model'], j['decode_tok_s'], j['gpu_us_per_step'], j['dispatches_per_token'], j['prefill_tok_s'])"
timeout 60 .devbin/wgllm bench -m /tmp/x8b-q4km.gguf --prompt 128 --kv f16 --gen 16 --runs 2 --prefill-runs 1 --profile > $OUT/h200_q4km_8b_profile.txt 2>&1
head -30 $OUT/h200_q4km_8b_profile.txt
date +%T; echo "== llama.cpp"
for f in x8b x8b-q4km x1b x1b-q4km; do
  timeout 100 /tmp/llc/lib/llcbench bench /tmp/$f.gguf --backend vulkan --ngl 99 --prompt 128 --gen 64 --runs 5 --kv f16 --sample backend,host >> $OUT/llc_bench.jsonl 2>> $OUT/errors.log
done
cut -c1-300 $OUT/llc_bench.jsonl
date +%T; echo "== sweep"
timeout 170 .devbin/bench_kernels --shapes 8b --types q4,q4k,q6k --sweep --reps 32 > $OUT/h200_gemv_sweep_8b.txt 2>/dev/null
grep -E "default|BEST" $OUT/h200_gemv_sweep_8b.txt
date +%T
