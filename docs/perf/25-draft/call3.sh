#!/usr/bin/env bash
# Device call 3 (H200) of docs/perf/25-draft: where the verify step's time goes. `wgllm-bench --spec 4 --profile`
# on the synthetic 8B, fast and exact: the plain step's and each verify step's time alone on the GPU
# (gpu_recorder_time) beside its wall time a step, and the per-kernel profiles of the plain step and of the verify
# steps of 1 and 4 drafts (carry .gl and build-pack/draft2.tar.xz: wgllm-bench, libwgllm.so.0,
# libwebgpu_wrapper.so). Its stdout is call3/out.txt.
for f in .gl/*.deb; do dpkg -x "$f" / 2>/dev/null; done; ldconfig
export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json
mkdir -p /tmp/b && tar -C /tmp/b -xJf build-pack/draft2.tar.xz; export LD_LIBRARY_PATH=/tmp/b
for prec in fast exact; do
  echo "== llama-8b $prec"
  timeout 200 /tmp/b/wgllm-bench --synthetic llama-8b --spec 4 --prompt 128 --gen 64 --runs 3 --kv f16 \
    --precision-list $prec --profile 2>&1
done
