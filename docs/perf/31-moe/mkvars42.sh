#!/bin/bash
# The builds of docs/perf/31-moe/call42.sh, from the working tree (build-rel, Release, Dawn of third_party): the
# stripped wgllm-bench of each in /tmp/var42/NAME, Dawn's libwebgpu_wrapper.so in /tmp/var42, then
# build-pack/var42.tar.xz. Each build but g is main with src/arch/blocks.c edited (python below), then restored:
#   g    main as it is (batched decode's gate/up grouped by expert in the fast precision, OP_MOE_GROUPS); with test_ops
#   g0   no groups (op_moe_group_m's answer replaced by 0: each pair its own integer-dot GEMV, as var39's q8 was)
#   gd   the down projection grouped too (its rows quantized, the groups' integer-dot GEMV, the combine apart)
#   q8d  one-token decode's down projection on the integer-dot GEMV where the combine is apart (Mixtral, gpt-oss)
#   nq   the fast precision's experts exact in decode (q8_gu off: main before a7921b7's integer-dot gate/up)
#   lut  MXFP4's int8 bytes from the 16-entry table again (kernels/lib/weight_int8.wgsli mx_bytes as before 2026-12-08)
set -e
cd "$(dirname "$0")/../../.."
F=src/arch/blocks.c
KW=kernels/lib/weight_int8.wgsli
O=/tmp/var42
rm -rf $O && mkdir -p $O
cp $F /tmp/var42_blocks.c
cp $KW /tmp/var42_wi8.wgsli
restore() { cp /tmp/var42_blocks.c $F; cp /tmp/var42_wi8.wgsli $KW; }
trap restore EXIT
build() { # NAME: build wgllm_bench from the tree as it is into $O/NAME
  cmake --build build-rel -j2 --target wgllm_bench > /tmp/var42_$1.log 2>&1 || { tail -20 /tmp/var42_$1.log; exit 1; }
  mkdir -p $O/$1 && cp build-rel/wgllm-bench $O/$1/ && strip $O/$1/wgllm-bench
}
edit() { # NAME: main's blocks.c with the edit NAME, built
  restore
  python3 - "$F" "$1" "$KW" <<'PY'
import re, sys
f, name, kw = sys.argv[1], sys.argv[2], sys.argv[3]
if name == "lut":
    f = kw
s = open(f).read()
def rep(a, b):
    global s
    assert s.count(a) == 1, (name, a)
    s = s.replace(a, b)
gm = """  uint32_t gm = q8_gu && T > 1 ? op_moe_group_m(op_ctx(rec), I, D, 1, T * k, E) : 0;"""
if name == "g0":
    rep(gm, """  uint32_t gm = 0;""")
elif name == "nq":
    rep("""  int q8_gu = decode && f->fo->fast""", """  int q8_gu = 0 && decode && f->fo->fast""")
elif name == "gd":
    rep(gm, gm + """
  int q8_dn = gm && op_moe_linear_q8_supports(op_ctx(rec), &ly->exp_down, I, OP_MOE_GROUPS);""")
    rep("""  dn.route = decode ? OP_MOE_PAIRS : OP_MOE_TILES;""",
        """  dn.route = q8_dn ? OP_MOE_GROUPS : decode ? OP_MOE_PAIRS : OP_MOE_TILES;""")
    a = """  /* decode: the down projection and the combine in one GEMV"""
    rep(a, """  if (q8_dn) { /* [T*k][I] -> x_q, the groups' GEMV into [T*k][D], the combine */
    op_q8_rows_opts qd = {0};
    op_gemv_q8_supports(op_ctx(rec), &ly->exp_down, 1, I, &qd.perm);
    st = op_quantize_q8_rows(rec, V(s->moe_h), V(s->xq), T * k, I, &qd);
    if (!st) st = op_moe_linear_q8(rec, V(s->xq), &ly->exp_down, db, V(s->moe_y), &dn);
    return st ? st : op_moe_combine(rec, V(s->moe_y), V(s->moe_w), out, T, k, D, accumulate);
  }
""" + a)
elif name == "q8d":
    a = """  st = moe_linear(f, V(s->moe_h), T * k, &ly->exp_down, db, V(s->moe_y), &dn); /* [T*k][D] */"""
    rep(a, """  if (q8_gu && !gm && op_moe_linear_q8_supports(op_ctx(rec), &ly->exp_down, I, OP_MOE_PAIRS)) {
    op_q8_rows_opts qd = {0};
    op_gemv_q8_supports(op_ctx(rec), &ly->exp_down, 1, I, &qd.perm);
    st = op_quantize_q8_rows(rec, V(s->moe_h), V(s->xq), T * k, I, &qd);
    if (!st) st = op_moe_linear_q8(rec, V(s->xq), &ly->exp_down, db, V(s->moe_y), &dn);
  } else
""" + a)
elif name == "lut":
    a = s[s.index("fn mx_bytes(nib: u32) -> u32 {"):s.index("fn wq(n: u32, kb: u32, h: u32)", s.index("fn mx_bytes"))]
    rep(a, """const MXFP4I8 = array<u32, 16>(0x00u, 0x01u, 0x02u, 0x03u, 0x04u, 0x06u, 0x08u, 0x0Cu, 0x00u, 0xFFu, 0xFEu, 0xFDu,
                               0xFCu, 0xFAu, 0xF8u, 0xF4u);
fn mx_bytes(nib: u32) -> u32 {
  return MXFP4I8[nib & 15u] | (MXFP4I8[(nib >> 8u) & 15u] << 8u) | (MXFP4I8[(nib >> 16u) & 15u] << 16u) |
         (MXFP4I8[nib >> 24u] << 24u);
}
""")
else:
    raise SystemExit("unknown build " + name)
open(f, "w").write(s)
PY
  git diff -U0 $F $KW > /tmp/var42_$1.diff || true
  build $1
}
build g
cmake --build build-rel -j2 --target test_ops > /tmp/var42_t.log 2>&1 || { tail -20 /tmp/var42_t.log; exit 1; }
cp build-rel/test_ops $O/g/ && strip $O/g/test_ops
for v in g0 gd q8d nq lut; do edit $v; done
restore
cmake --build build-rel -j2 --target wgllm_bench > /dev/null
cp third_party/dawn/lib/libwebgpu_wrapper.so $O/ 2>/dev/null || cp "$(find third_party/dawn -name libwebgpu_wrapper.so | head -1)" $O/
strip $O/libwebgpu_wrapper.so || true
mkdir -p build-pack && tar -C $O -cJf build-pack/var42.tar.xz .
ls -la build-pack/var42.tar.xz
