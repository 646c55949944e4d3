#!/usr/bin/env bash
# Device call 43 of docs/perf/31-moe (written 2026-12-07 for the session of 2026-12-07/08): main (08c81c3) on the GPU
# -- test_moe (every MoE family's HF and GGUF fixtures, run / chat / serve through its CLI, batched fast steps with
# their groups), test_models (every dense family), test_ops' groups, pairs and lists cases -- then --profile of 8
# sequences batched at context 128 (fast and exact) on Qwen3-30B-A3B and Mixtral-8x7B: the kernels' shares of a
# batched MoE step, never profiled; then call 41's one-token fast decode runs: g against nq (the fast precision's
# experts exact) on Qwen3 and gpt-oss-20b, q8d (the down projection on the integer-dot GEMV) on Mixtral and gpt-oss.
# Packs: var42 (mkvars42.sh), m42 (main's CLI, library, test_moe, test_models, bench_kernels, stripped), fixtures
# (tests/data/models), models (models/), tok (third_party/tokenizers/gemma3). Carry .gl, build-pack and
# bench/peers/llamacpp/dist (models/ and tests/data/models moved out of the tree for the upload). What would pass
# LIMIT s (default 570) is skipped.
set -u
T0=$SECONDS
t() { echo "== $(( SECONDS - T0 )) s: $*" | tee -a "$OUT/log.txt"; }
left() { [ $(( SECONDS - T0 + $1 )) -lt ${LIMIT:-570} ] || { t "skipped: $2"; false; }; }
for f in .gl/*.deb; do dpkg -x "$f" / 2>/dev/null; done; ldconfig
export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json
mkdir -p /tmp/var /tmp/m42 tests/data
tar -C /tmp/var -xJf build-pack/var42.tar.xz && tar -C /tmp/m42 -xJf build-pack/m42.tar.xz &&
  tar -C tests/data -xJf build-pack/fixtures.tar.xz && tar -xJf build-pack/models.tar.xz && tar -xJf build-pack/tok.tar.xz
export LD_LIBRARY_PATH=/tmp/var:/tmp/m42
nvidia-smi --query-gpu=name,clocks.max.sm,clocks.max.mem --format=csv,noheader | tee -a "$OUT/log.txt"
for x in moe models; do
  left 160 "test_$x" || continue
  t "test_$x"
  ( cd tests && WGLLM_BIN=/tmp/m42 timeout 150 /tmp/m42/test_$x > /tmp/test_$x.txt 2>&1; echo "rc=$?" >> /tmp/test_$x.txt )
  grep -E "^FAIL" /tmp/test_$x.txt | head -12 | tee -a "$OUT/log.txt"
  grep -E "checks|rc=" /tmp/test_$x.txt | tail -3 | tee -a "$OUT/log.txt"
  cp /tmp/test_$x.txt "$OUT/test_$x.txt"
done
if left 45 "test_ops"; then
  t "test_ops groups, pairs, lists and refusal cases"
  ( cd tests && timeout 40 /tmp/var/g/test_ops -f groups_q8 -f pairs_q8 -f moe_lists -f moe_group_m -f moe_refuse 2>&1 |
    grep -E "^FAIL|^test_ops|adapter" | head -20 | tee -a "$OUT/log.txt" )
fi
tag() { grep '^{' | sed "s/^{/{\"engine\": \"$1\", \"shape\": \"$M\", /" | tee -a "$OUT/results.jsonl"; }
wg() { # seconds build label args...
  left $1 "$2 $M $3" || return; t "$2 $M $3"; local s=$1 w=$2; shift 3
  timeout $s /tmp/var/$w/wgllm-bench -m /tmp/$M.gguf --runs 3 --kv f16 --json "$@" 2>>"$OUT/errors.txt" | tag "wgllm-$w"
}
prof() { # seconds precision
  left $1 "g $M profile parallel 8 $2" || return; t "g $M profile parallel 8 $2"
  timeout $1 /tmp/var/g/wgllm-bench -m /tmp/$M.gguf --runs 1 --kv f16 --parallel 8 --prompt 128 --gen 16 \
    --batched-only --precision-list $2 --profile > "$OUT/profile8_${M}_$2.txt" 2>>"$OUT/errors.txt"
}
write() { left 50 "$M" || return; t "write $M"
  /tmp/var/g/wgllm-bench --synthetic $M --write-gguf /tmp/$M.gguf > /dev/null 2>>"$OUT/errors.txt"; }
D="--prompt 128 --gen 32 --precision-list fast"
M=qwen3-30b-a3b; if write; then
  prof 30 fast; prof 30 exact
  for w in nq g; do wg 30 $w "decode 128 fast" $D; done
  rm -f /tmp/$M.gguf; fi
M=mixtral-8x7b; if write; then
  prof 50 fast; prof 50 exact
  for w in g q8d; do wg 40 $w "decode 128 fast" $D; done
  rm -f /tmp/$M.gguf; fi
M=gpt-oss-20b; if write; then
  for w in nq g q8d; do wg 30 $w "decode 128 fast" $D; done
  rm -f /tmp/$M.gguf; fi
t end
