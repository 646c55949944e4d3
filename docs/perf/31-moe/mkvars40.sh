#!/bin/bash
# The builds of docs/perf/31-moe/call40.sh, from the working tree (build-rel): g, main with batched decode's groups
# (the gate/up's pairs grouped by expert, OP_MOE_GROUPS, in the fast precision), and gd, the same with the down
# projection grouped too (its rows quantized, the groups' integer-dot GEMV, the combine apart; src/arch/blocks.c
# edited, then restored); stripped wgllm-bench and test_ops into /tmp/var40/NAME, then build-pack/var40.tar.xz.
set -e
cd "$(dirname "$0")/../../.."
F=src/arch/blocks.c
mkdir -p /tmp/var40/g /tmp/var40/gd
cmake --build build-rel -j2 --target wgllm_bench test_ops > /tmp/var40.log 2>&1 || { tail -20 /tmp/var40.log; exit 1; }
cp build-rel/wgllm-bench build-rel/test_ops /tmp/var40/g/ && strip /tmp/var40/g/*
cp $F /tmp/var40_blocks.c
python3 - "$F" <<'PY'
import sys
f=sys.argv[1]; s=open(f).read()
a="""  uint32_t gm = q8_gu && T > 1 ? op_moe_group_m(op_ctx(rec), I, D, 1, T * k, E) : 0;"""
b=a+"""
  int q8_dn = gm && op_moe_linear_q8_supports(op_ctx(rec), &ly->exp_down, I, OP_MOE_GROUPS);"""
assert s.count(a)==1; s=s.replace(a,b)
a="""  dn.route = decode ? OP_MOE_PAIRS : OP_MOE_TILES;"""
b="""  dn.route = q8_dn ? OP_MOE_GROUPS : decode ? OP_MOE_PAIRS : OP_MOE_TILES;"""
assert s.count(a)==1; s=s.replace(a,b)
a="""  /* decode: the down projection and the combine in one GEMV"""
b="""  if (q8_dn) { /* [T*k][I] -> x_q, the groups' GEMV into [T*k][D], the combine */
    op_q8_rows_opts qd = {0};
    op_gemv_q8_supports(op_ctx(rec), &ly->exp_down, 1, I, &qd.perm);
    st = op_quantize_q8_rows(rec, V(s->moe_h), V(s->xq), T * k, I, &qd);
    if (!st) st = op_moe_linear_q8(rec, V(s->xq), &ly->exp_down, db, V(s->moe_y), &dn);
    return st ? st : op_moe_combine(rec, V(s->moe_y), V(s->moe_w), out, T, k, D, accumulate);
  }
""" + a
assert s.count(a)==1; s=s.replace(a,b)
open(f,"w").write(s)
PY
git diff -U0 $F > /tmp/var40/gd/blocks.diff || true
cmake --build build-rel -j2 --target wgllm_bench > /tmp/var40.log 2>&1 || { tail -20 /tmp/var40.log; cp /tmp/var40_blocks.c $F; exit 1; }
cp build-rel/wgllm-bench /tmp/var40/gd/ && strip /tmp/var40/gd/wgllm-bench
cp /tmp/var40_blocks.c $F
cmake --build build-rel -j2 --target wgllm_bench > /dev/null
tar -C /tmp/var40 -cJf build-pack/var40.tar.xz .
