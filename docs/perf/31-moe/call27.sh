#!/usr/bin/env bash
# Device call 27 of docs/perf/31-moe (written 2026-12-07): main (efed18f, engine code of b9471cb) on the GPU -- the
# MXFP4 e2m1 decode as normal f16s (9d5642d) and the MXFP4 layouts (0b52f1a) had run only on lavapipe -- then
# Qwen3-30B-A3B and gpt-oss-20b decode at 128 against llama.cpp with one-change builds beside main, test_ops' MXFP4 /
# GEMV / MoE cases and test_moe on the GPU (test_models too on an H200), a profile of main. The builds (wgllm-bench,
# stripped Release; a folder each in build-pack/var28.tar.xz, ignored by git; rebuilt from these lines in a worktree
# of main, op_linear.c edited):
#   qA..qD: op_gemv_choose_plan's Q4_K/Q5_K GLU line `p.tk = one, p.tr = 8, p.r = 2, p.u = 2;` becomes
#     qA `p.tk = 2 * one, p.tr = 4, p.r = 2, p.u = 1;`, qB `p.tk = 2 * one, p.tr = 2, p.r = 4, p.u = 1;`,
#     qC `p.tk = one, p.tr = 4, p.r = 4, p.u = 2;`, qD `p.tk = one, p.tr = 4, p.r = 2, p.u = 2;`
#     (Qwen3's gate/up expert GEMV `gemv/q4k_sg_moer` took 1,225 us of 4,386 in call 19's profile, ~0.56 TB/s).
#   rA, rB: the f32 GEMV (the routers only) gets a branch of its own before the GLU one, rA `p.tk = 128, p.tr = 2,
#     p.r = 1, p.u = 4;` (Qwen3's 128 router rows on 64 workgroups, from 16), rB `p.tk = 256, p.tr = 1, p.r = 1,
#     p.u = 2;` (128 workgroups): the router took 382.8 us of Qwen3's 4,386 us step in-stream (call 19).
#   aW (b73c4b2's attention change alone on efed18f): attn_split on 256 threads where a phase has 256
#     items or more (Qwen3's 8 q heads a KV head x 32 keys a chunk; gpt-oss's too): attention took 1,149 us of
#     Qwen3's 4,386 us step in-stream (call 19), its split 19.4 us a layer; its bench_kernels has a `narrow` row
#     (128 threads) beside the default for the split + reduce alone.
#   aF (b73c4b2): aW plus the router beside the output projection (gemv.wgsl "_rto" and
#     "_moerf", rebuilt from MOE.md's description of the lost branch fold3): no router dispatch in Qwen3's step.
# The tests run aF's own test_ops / test_moe / test_models (main 692236a = b73c4b2 + b1a232a's host-side refusal:
# aF's folder holds that build of wgllm-bench and the three tests), so the GPU runs the `beside` cases too.
# Carry .gl, build-pack/{main28,var28,fixtures,models,tok}.tar.xz and bench/peers/llamacpp/dist. What would pass
# LIMIT s (default 540) is skipped.
set -u
T0=$SECONDS
t() { echo "== $(( SECONDS - T0 )) s: $*" | tee -a "$OUT/log.txt"; }
left() { [ $(( SECONDS - T0 + $1 )) -lt ${LIMIT:-540} ] || { t "skipped: $2"; false; }; }
for f in .gl/*.deb; do dpkg -x "$f" / 2>/dev/null; done; ldconfig
export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json
mkdir -p /tmp/b /tmp/var /tmp/llc tests/data
tar -C /tmp/b -xJf build-pack/main28.tar.xz && tar -C /tmp/var -xJf build-pack/var28.tar.xz &&
  tar -C tests/data -xJf build-pack/fixtures.tar.xz && tar -xJf build-pack/models.tar.xz &&
  tar -xJf build-pack/tok.tar.xz
tar -xJf bench/peers/llamacpp/dist/llcbench-linux-x64-vulkan.tar.xz -C /tmp/llc
L=$(dirname "$(find /tmp/llc -name llcbench -type f | head -1)")
export LD_LIBRARY_PATH=/tmp/b
cp -r /tmp/b /tmp/var/b
nvidia-smi --query-gpu=name,clocks.max.sm,clocks.max.mem --format=csv,noheader | tee -a "$OUT/log.txt"
J=$OUT/results.jsonl
tag() { grep '^{' | sed "s/^{/{\"engine\": \"$1\", /" | tee -a "$J"; }
t "write qwen3-30b-a3b, gpt-oss-20b"
/tmp/b/wgllm-bench --synthetic qwen3-30b-a3b --write-gguf /tmp/q3.gguf > /dev/null 2>>"$OUT/errors.txt"
/tmp/b/wgllm-bench --synthetic gpt-oss-20b --write-gguf /tmp/goss.gguf > /dev/null 2>>"$OUT/errors.txt"
dec() { # build model
  left 30 "$1 $2" || return
  t "$1 $2"
  timeout 45 /tmp/var/$1/wgllm-bench -m /tmp/$2.gguf --prompt 128 --gen 32 --runs 3 --kv f16 --json \
    2>>"$OUT/errors.txt" | tag "wgllm-$1"
}
llc() {
  left 30 "llama.cpp $1" || return
  t "llama.cpp $1"
  timeout 45 $L/llcbench bench /tmp/$1.gguf --backend vulkan --ngl 99 --prompt 128 --gen 32 --runs 3 --kv f16 \
    --sample host 2>>"$OUT/errors.txt" | tag llama.cpp
}
# In the order of what issue 31 needs most, in case the call is cut: main (aF) and llama.cpp on both targets, b
# beside them, main's profile, the tests on the GPU, then the one-change builds.
dec aF q3; llc q3; dec b q3; dec aF goss; llc goss; dec b goss
if left 40 "aF profile"; then
  t "aF profile"
  timeout 40 /tmp/var/aF/wgllm-bench -m /tmp/q3.gguf --prompt 128 --gen 32 --runs 3 --kv f16 --profile 2>&1 |
    sed -n 1,24p > "$OUT/profile_aF.txt"
fi
t "test_ops MXFP4, GEMV and MoE cases"
( cd tests && WGLLM_BIN=/tmp/b timeout 90 /tmp/var/aF/test_ops -f MXFP4 -f gemv -f moe_ > /tmp/test_ops.txt 2>&1;
  echo "rc=$?" >> /tmp/test_ops.txt )
grep -E "^FAIL" /tmp/test_ops.txt | head -20 | tee -a "$OUT/log.txt"; tail -3 /tmp/test_ops.txt | tee -a "$OUT/log.txt"
cp /tmp/test_ops.txt "$OUT/test_ops.txt"
t "test_moe"
( cd tests && WGLLM_BIN=/tmp/b timeout 100 /tmp/var/aF/test_moe > /tmp/test_moe.txt 2>&1; echo "rc=$?" >> /tmp/test_moe.txt )
grep -E "^FAIL|checks|rc=" /tmp/test_moe.txt | tail -8 | tee -a "$OUT/log.txt"
cp /tmp/test_moe.txt "$OUT/test_moe.txt"
if nvidia-smi -L | grep -q H200 && left 130 "test_models"; then
t "test_models"
( cd tests && WGLLM_BIN=/tmp/b timeout 150 /tmp/var/aF/test_models > /tmp/test_models.txt 2>&1;
  echo "rc=$?" >> /tmp/test_models.txt )
grep -E "^FAIL|checks|rc=" /tmp/test_models.txt | tail -6 | tee -a "$OUT/log.txt"
fi
for v in aW rA rB aF b; do dec $v q3; done
dec aW goss
if left 60 "test_ops flash_decode"; then
t "test_ops flash_decode (the 256-thread split and the narrow modes)"
( cd tests && timeout 60 /tmp/var/aF/test_ops -f flash_decode > /tmp/test_fd.txt 2>&1; echo "rc=$?" >> /tmp/test_fd.txt )
grep -E "^FAIL" /tmp/test_fd.txt | head -10 | tee -a "$OUT/log.txt"; tail -3 /tmp/test_fd.txt | tee -a "$OUT/log.txt"
fi
for v in qA qC qD qB; do dec $v q3; done
if left 40 "b profile"; then
  t "b profile"
  timeout 40 /tmp/var/b/wgllm-bench -m /tmp/q3.gguf --prompt 128 --gen 32 --runs 3 --kv f16 --profile 2>&1 |
    sed -n 1,24p > "$OUT/profile_b.txt"
fi
rm -f /tmp/q3.gguf /tmp/goss.gguf
if left 60 "bench_kernels --attn"; then
  t "bench_kernels --attn (aW: auto, workgroup, narrow)"
  timeout 60 /tmp/var/aW/bench_kernels --attn --shapes 8b,q3moe --types none 2>&1 | grep '^attn' > "$OUT/attn.txt"
fi
t end
