#!/bin/bash
# The one-change builds of docs/perf/31-moe/call31.sh, each a stripped wgllm-bench in /tmp/var31/NAME, built from
# main (4ae1d5b) in build-rel with one file edited, then restored:
#   fq: the fast decode GEMV never quantizes x in its workgroups (op_gemv_fast_planned: wq = 0; the quantizer's
#       dispatch runs first)
#   fx: the fast pass's fused decode GEMVs stay exact (llm_gemv takes op_gemv; prefill and batched unchanged
#       where they do not use llm_gemv)
#   r0: timing only, wrong results: the decode gate/up ranks as main does but takes experts 0..k-1 (the ranking's
#       latency kept, its expert choice not)
#   nd: timing only, wrong results: the decode gate/up ranks and takes its experts as main does, but writes experts
#       0..k-1 for the down projection (the down's expert choice alone)
#   ub: the decode gate/up's expert read back through subgroupBroadcastFirst (subgroup-uniform to the compiler)
#   uw: the same through workgroupUniformLoad
#   nr: timing only, wrong results: the decode gate/up ("_moer") ranks nothing, takes experts 0..k-1 with weight
#       1/8 (routing's share inside the gate/up: this step against main's)
# then `tar -C /tmp/var31 -cJf build-pack/var31.tar.xz .`.
set -e
cd "$(dirname "$0")/../../.."
for v in "$@"; do
  case $v in
    fq) F=src/ops/op_linear_q8.c; A="    wq = wgs * T * K <= 2500000;"; R="    wq = 0 \&\& wgs * T * K <= 2500000;";;
    fx) F=src/arch/blocks.c; A="  if (f->fo->fast \&\& f->s->xq) {\n    op_gemv_opts fo"; R="  if (0 \&\& f->fo->fast \&\& f->s->xq) {\n    op_gemv_opts fo";;
    r0) F=kernels/gemv.wgsl; A="  let e = min(tk_si[q % p.k], p.E - 1u);"; R="  let e = q % p.k;";;
    ub) F=kernels/gemv.wgsl; A="  let e = min(tk_si[q % p.k], p.E - 1u);"
        R="#if SG\n  let e = subgroupBroadcastFirst(min(tk_si[q % p.k], p.E - 1u));\n#else\n  let e = min(tk_si[q % p.k], p.E - 1u);\n#endif";;
    uw) F=kernels/gemv.wgsl; A="  let e = min(tk_si[q % p.k], p.E - 1u);"; R="  let e = min(workgroupUniformLoad(\&tk_si[q % p.k]), p.E - 1u);";;
    nd) F=kernels/gemv.wgsl; A="      route[tq * p.k + j] = min(tk_si[j], p.E - 1u);"; R="      route[tq * p.k + j] = j;";;
    nr) F=kernels/gemv.wgsl
        A="  let s_all = topk_rank(tq, li, p.E, p.k, p.route_mode);\n  let e = min(tk_si[q % p.k], p.E - 1u);\n  if (wid.x == 0u \&\& q % p.k == 0u \&\& li == 0u) {\n    let v = topk_weights(s_all, p.k, p.route_mode);\n    for (var j = 0u; j < p.k; j++) {\n      route[tq * p.k + j] = min(tk_si[j], p.E - 1u);\n      route_w[tq * p.k + j] = v[j];"
        R="  let s_all = logits[tq * p.E] * 0.0;\n  let e = q % p.k;\n  if (wid.x == 0u \&\& q % p.k == 0u \&\& li == 0u) {\n    for (var j = 0u; j < p.k; j++) {\n      route[tq * p.k + j] = j;\n      route_w[tq * p.k + j] = 0.125 + s_all;";;
  esac
  python3 - "$F" "$A" "$R" <<'PY'
import sys
f,a,r=sys.argv[1],sys.argv[2].replace("\\n","\n").replace("\\&","&"),sys.argv[3].replace("\\n","\n").replace("\\&","&")
s=open(f).read(); assert s.count(a)==1, (f,a); open(f,"w").write(s.replace(a,r))
PY
  git diff --stat | tail -1
  cmake --build build-rel -j2 --target wgllm_bench > /tmp/var31_$v.log 2>&1 || { tail -20 /tmp/var31_$v.log; git checkout -q $F; exit 1; }
  mkdir -p /tmp/var31/$v && cp build-rel/wgllm-bench /tmp/var31/$v/ && strip /tmp/var31/$v/wgllm-bench
  git checkout -q $F
done
cmake --build build-rel -j2 --target wgllm_bench > /dev/null
