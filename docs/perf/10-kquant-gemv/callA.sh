#!/bin/bash
# device call A: fixtures, correctness on the H200, kernel sweep, first end-to-end K-quant figures
set -u
R=$PWD
for f in .gl/*.deb; do dpkg -x $f / >/dev/null; done; ldconfig
export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json
export LD_LIBRARY_PATH=$R/.devbin:$R/third_party/dawn/lib
export WGLLM_BIN=$R/.devbin
mkdir -p $OUT/refs
date +%T; echo "== make_refs"
(cd tools/refs && timeout 120 python3 make_refs.py $OUT/refs --only llama_q4km_gguf,llama_q4_0_q6k_gguf) > $OUT/make_refs.log 2>&1; tail -3 $OUT/make_refs.log
cp -r $OUT/refs/llama_q4km_gguf $OUT/refs/llama_q4_0_q6k_gguf tests/data/models/ 2>/dev/null
date +%T; echo "== test_ops gemv"
(cd tests && timeout 120 ../.devbin/test_ops -f gemv -f matvec/parts 2>&1 | grep -E "FAIL|test_ops:") | tee $OUT/h200_test_ops_gemv.txt
date +%T; echo "== test_models"
(cd tests && timeout 150 ../.devbin/test_models 2>&1) > $OUT/h200_test_models.txt; grep -E "FAIL|checks|q4km|q6k" $OUT/h200_test_models.txt | head -20
date +%T; echo "== sweep"
timeout 200 .devbin/bench_kernels --shapes 8b --types q4,q8,q4k,q5k,q6k --sweep --reps 32 > $OUT/h200_gemv_sweep_8b.txt 2>/dev/null
grep -E "default|BEST" $OUT/h200_gemv_sweep_8b.txt
date +%T; echo "== 8B GGUFs"
if [ ! -f /tmp/x8b-q4km.gguf ]; then
  timeout 100 .devbin/wgllm bench --synthetic llama-8b --write-gguf /tmp/x8b.gguf > /dev/null 2>&1
  LD_LIBRARY_PATH=$R/.llcq timeout 120 .llcq/llc_quantize /tmp/x8b.gguf /tmp/x8b-q4km.gguf Q4_K_M > $OUT/quant.log 2>&1
fi
ls -la /tmp/*.gguf
date +%T; echo "== bench"
for f in x8b x8b-q4km; do
  timeout 60 .devbin/wgllm bench -m /tmp/$f.gguf --prompt 128 --kv f16 --gen 32 --runs 3 --prefill-runs 1 --json >> $OUT/h200_e2e_A.jsonl 2>> $OUT/e2e_err.log
done
cat $OUT/h200_e2e_A.jsonl | cut -c1-400
date +%T
