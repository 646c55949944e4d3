#!/usr/bin/env bash
# NOT RUN and superseded by call27.sh (2026-12-07): its f3 and aS builds came from branches fold3 and attn16, which
# did not survive their session; the router beside the output projection is on main since b73c4b2.
# Device call 25 of docs/perf/31-moe (written 2026-12-06/07): main's changed kernels on the GPU (the e2m1 decode as
# normal f16s, 9d5642d, and the MXFP4 layouts of 0b52f1a had run only on lavapipe; test_moe's family fixtures had not
# run on a GPU), then Qwen3-30B-A3B decode at 128 with eight one-change builds beside main (pack moe27 = 9d5642d: the
# same engine code as b9471cb), llama.cpp in the same call.
# The builds (wgllm-bench, stripped Release, sharing moe27's Dawn; build-pack/var26.tar.xz, a folder each, ignored by
# git; rebuild from these lines if the machine lost them):
#   qA, qB, qC (from 9fcfc78), qD (from b9471cb): op_gemv_choose_plan's Q4_K/Q5_K GLU line `p.tk = one, p.tr = 8,
#     p.r = 2, p.u = 2;` becomes qA `p.tk = 2 * one, p.tr = 4, p.r = 2, p.u = 1;`, qB `p.tk = 2 * one, p.tr = 2,
#     p.r = 4, p.u = 1;`, qC `p.tk = one, p.tr = 4, p.r = 4, p.u = 2;`, qD `p.tk = one, p.tr = 4, p.r = 2, p.u = 2;`.
#     Qwen3's gate/up expert GEMV (`gemv/q4k_sg_moer`) took 1,225 us of 4,386 in call 19's profile, about 0.56 TB/s;
#     the same kind of change took gpt-oss's step from 3,264 to 2,934 us (call 23). It touches every Q4_K/Q5_K GLU
#     GEMV (dense Q4_K_M MLPs too): a winner needs the dense shapes checked, or its own MoE branch, before it lands.
#   aS (branch attn16, c53eb1b on b9471cb): op_attention.c's decode_chunks starts at 16 keys instead of 32
#     (Qwen3's 4 KV heads at positions under 512, 8 KV heads under 256): call 19's bench_kernels --attn gave Qwen3's
#     split + reduce at position 150 13.1 us with 16 against 15.9 with 32. Not to land as it is: test_generate's
#     gemma3 case fails with it (a session batched no longer gives its own ids alone: token 49 of 150 differs; a local
#     .ci/run and test_generate on main plus this change alone).
#   rA, rB (b9471cb): the f32 GEMV (the routers only: dense f32 layers take matvec) gets a branch of its own before the
#     GLU one, rA `p.tk = 128, p.tr = 2, p.r = 1, p.u = 4;` (Qwen3's 128 router rows on 64 workgroups, from 16), rB
#     `p.tk = 256, p.tr = 1, p.r = 1, p.u = 2;` (128 workgroups): the router took 382.8 us of Qwen3's step in-stream
#     (call 19), 8.0 a layer, where attention's reduce takes 4.6.
#   f3 (branch fold3, a56362a on b9471cb; 4a6027c adds its tests, 3598ab4 its MOE.md): the router beside the output
#     projection, no router dispatch: the one-token Wo GEMV (gemv.wgsl _rto) sums router . (h * (norm_w + offset))
#     over its rows into exact i32 limbs (lib/route_fx.wgsli), the gate/up (_moerf) ranks them; its test_ops
#     (4a6027c) runs the 15 `beside` cases.
# Carry .gl, build-pack/{moe27,var26,fixtures,models,tok}.tar.xz (tok: third_party/tokenizers/{qwen3,gemma3}/
# tokenizer_config.json, which test_moe's fixture scripts read) and bench/peers/llamacpp/dist. What would pass LIMIT s
# (default 540) is skipped (the call is given 600 s).
set -u
T0=$SECONDS
t() { echo "== $(( SECONDS - T0 )) s: $*" | tee -a "$OUT/log.txt"; }
left() { [ $(( SECONDS - T0 + $1 )) -lt ${LIMIT:-540} ] || { t "skipped: $2"; false; }; }
for f in .gl/*.deb; do dpkg -x "$f" / 2>/dev/null; done; ldconfig
export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json
mkdir -p /tmp/b /tmp/llc tests/data
tar -C /tmp/b -xJf build-pack/moe27.tar.xz && tar -C /tmp -xJf build-pack/var26.tar.xz &&
  tar -C tests/data -xJf build-pack/fixtures.tar.xz && tar -xJf build-pack/models.tar.xz &&
  tar -xJf build-pack/tok.tar.xz
tar -xJf bench/peers/llamacpp/dist/llcbench-linux-x64-vulkan.tar.xz -C /tmp/llc
L=$(dirname "$(find /tmp/llc -name llcbench -type f | head -1)")
export LD_LIBRARY_PATH=/tmp/b
nvidia-smi --query-gpu=name --format=csv,noheader | tee -a "$OUT/log.txt"
J=$OUT/results.jsonl
tag() { grep '^{' | sed "s/^{/{\"engine\": \"$1\", /" | tee -a "$J"; }
t "test_ops MXFP4, GEMV and MoE cases (moe27)"
( cd tests && WGLLM_BIN=/tmp/b timeout 90 /tmp/b/test_ops -f MXFP4 -f gemv -f moe_ > /tmp/test_ops.txt 2>&1;
  echo "rc=$?" >> /tmp/test_ops.txt )
grep -E "^FAIL" /tmp/test_ops.txt | head -20 | tee -a "$OUT/log.txt"; tail -3 /tmp/test_ops.txt | tee -a "$OUT/log.txt"
t "test_ops beside cases (f3)"
( cd tests && WGLLM_BIN=/tmp/b timeout 30 /tmp/f3/test_ops -f beside > /tmp/test_ops_f3.txt 2>&1;
  echo "rc=$?" >> /tmp/test_ops_f3.txt )
grep -E "^FAIL" /tmp/test_ops_f3.txt | head -10 | tee -a "$OUT/log.txt"
tail -3 /tmp/test_ops_f3.txt | tee -a "$OUT/log.txt"
t "write qwen3-30b-a3b"
/tmp/b/wgllm-bench --synthetic qwen3-30b-a3b --write-gguf /tmp/q3.gguf > /dev/null 2>>"$OUT/errors.txt"
q3() {
  left 30 "$1 qwen3-30b-a3b" || return
  t "$1 qwen3-30b-a3b"
  timeout 45 /tmp/$1/wgllm-bench -m /tmp/q3.gguf --prompt 128 --gen 32 --runs 3 --kv f16 --json \
    2>>"$OUT/errors.txt" | tag "wgllm-$1"
}
for v in b f3 aS; do q3 $v; done
t "llama.cpp qwen3-30b-a3b"
timeout 45 $L/llcbench bench /tmp/q3.gguf --backend vulkan --ngl 99 --prompt 128 --gen 32 --runs 3 --kv f16 \
  --sample host 2>>"$OUT/errors.txt" | tag llama.cpp
if left 40 "f3 profile"; then
  t "f3 profile"
  timeout 40 /tmp/f3/wgllm-bench -m /tmp/q3.gguf --prompt 128 --gen 32 --runs 3 --kv f16 --profile 2>&1 |
    sed -n 1,18p > "$OUT/profile_f3.txt"
fi
for v in rA rB qA qB qC qD f3 b; do q3 $v; done
rm -f /tmp/q3.gguf
if left 70 "test_moe"; then
  t "test_moe (moe27)"
  ( cd tests && WGLLM_BIN=/tmp/b timeout 100 /tmp/b/test_moe > /tmp/test_moe.txt 2>&1;
    echo "rc=$?" >> /tmp/test_moe.txt )
  grep -E "^FAIL|checks|rc=" /tmp/test_moe.txt | tail -8 | tee -a "$OUT/log.txt"
  cp /tmp/test_moe.txt "$OUT/test_moe.txt"
fi
if left 120 "test_models"; then
  t "test_models (moe27)"
  ( cd tests && WGLLM_BIN=/tmp/b timeout 140 /tmp/b/test_models > /tmp/test_models.txt 2>&1;
    echo "rc=$?" >> /tmp/test_models.txt )
  grep -E "^FAIL|checks|rc=" /tmp/test_models.txt | tail -6 | tee -a "$OUT/log.txt"
fi
t end
