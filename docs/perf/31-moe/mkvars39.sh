#!/bin/bash
# The one-change build of docs/perf/31-moe/call39.sh: q8d, main (a7921b7: the fast precision's decode gate/up on the
# integer-dot GEMV) with decode's down projection on it too where the combine is apart (Mixtral, gpt-oss: moe_h
# quantized, one dispatch for all pairs, then op_moe_linear_q8's pairs), built in build-rel with src/arch/blocks.c
# edited, then restored; a stripped wgllm-bench in /tmp/var39/q8d. Run after /tmp/var39/q8 holds main's build, then
# `tar -C /tmp/var39 -cJf build-pack/var39.tar.xz .`.
set -e
cd "$(dirname "$0")/../../.."
F=src/arch/blocks.c
python3 - "$F" <<'PY'
import sys
f=sys.argv[1]; s=open(f).read()
a="""  st = moe_linear(f, V(s->moe_h), T * k, &ly->exp_down, db, V(s->moe_y), &dn); /* [T*k][D] */"""
r="""  if (q8_gu && op_moe_linear_q8_supports(op_ctx(rec), &ly->exp_down, I, OP_MOE_PAIRS)) {
    op_q8_rows_opts qd = {0};
    op_gemv_q8_supports(op_ctx(rec), &ly->exp_down, 1, I, &qd.perm);
    st = op_quantize_q8_rows(rec, V(s->moe_h), V(s->xq), T * k, I, &qd);
    if (!st) st = op_moe_linear_q8(rec, V(s->xq), &ly->exp_down, db, V(s->moe_y), &dn);
  } else
    st = moe_linear(f, V(s->moe_h), T * k, &ly->exp_down, db, V(s->moe_y), &dn); /* [T*k][D] */"""
assert s.count(a)==1; open(f,"w").write(s.replace(a,r))
PY
git diff --stat | tail -1
cmake --build build-rel -j2 --target wgllm_bench > /tmp/var39_q8d.log 2>&1 || { tail -20 /tmp/var39_q8d.log; git checkout -q $F; exit 1; }
mkdir -p /tmp/var39/q8d && cp build-rel/wgllm-bench /tmp/var39/q8d/ && strip /tmp/var39/q8d/wgllm-bench
git checkout -q $F
cmake --build build-rel -j2 --target wgllm_bench > /dev/null
tar -C /tmp/var39 -cJf build-pack/var39.tar.xz .
