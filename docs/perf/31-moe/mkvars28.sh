#!/bin/bash
# The one-change builds of docs/perf/31-moe/call27.sh (rA, rB, qA-qD), each a stripped wgllm-bench in
# /tmp/var/NAME, built in a worktree of efed18f with op_linear.c edited as call27.sh's header says:
#   git worktree add /tmp/wtv efed18f
#   cmake -S /tmp/wtv -B /tmp/wtv/build -DCMAKE_BUILD_TYPE=Release -DDAWN_DIR=$PWD/third_party/dawn
#   bash docs/perf/31-moe/mkvars28.sh rA rB qA qB qC qD
# aW is b73c4b2's kernels/attn_split.wgsl, src/ops/op_attention.c and src/ops/ops.h on efed18f; aF and b are
# b73c4b2's and efed18f's own builds; then `tar -C /tmp/var -cJf build-pack/var28.tar.xz .`.
set -e
cd /tmp/wtv
F=src/ops/op_linear.c
for v in "$@"; do
  git checkout -q $F
  case $v in
    qA)
        python3 - <<PY
s=open("$F").read(); a="      if (glu)\n        p.tk = one, p.tr = 8, p.r = 2, p.u = 2;\n      else if (n_out >= 32768)\n        p.tk = one, p.tr = 4, p.r = 4, p.u = 1;\n      else\n        p.tk = 2 * one"
assert s.count(a)==1; open("$F","w").write(s.replace(a,a.replace("p.tk = one, p.tr = 8, p.r = 2, p.u = 2","p.tk = 2 * one, p.tr = 4, p.r = 2, p.u = 1")))
PY
        ;;
    qB|qC|qD)
        case $v in qB) R="p.tk = 2 * one, p.tr = 2, p.r = 4, p.u = 1";; qC) R="p.tk = one, p.tr = 4, p.r = 4, p.u = 2";; qD) R="p.tk = one, p.tr = 4, p.r = 2, p.u = 2";; esac
        python3 - <<PY
s=open("$F").read(); a="      if (glu)\n        p.tk = one, p.tr = 8, p.r = 2, p.u = 2;\n      else if (n_out >= 32768)\n        p.tk = one, p.tr = 4, p.r = 4, p.u = 1;\n      else\n        p.tk = 2 * one"
assert s.count(a)==1; open("$F","w").write(s.replace(a,a.replace("p.tk = one, p.tr = 8, p.r = 2, p.u = 2","$R")))
PY
        ;;
    rA|rB)
        case $v in rA) R="p.tk = 128, p.tr = 2, p.r = 1, p.u = 4";; rB) R="p.tk = 256, p.tr = 1, p.r = 1, p.u = 2";; esac
        python3 - <<PY
s=open("$F").read(); a="    } else if (glu) {\n      p.tk = one, p.tr = 8, p.r = 2, p.u = 4;"
assert s.count(a)==1; open("$F","w").write(s.replace(a,"    } else if (type == OP_W_F32) {\n      $R;\n"+a))
PY
        ;;
  esac
  git diff --stat | tail -1
  cmake --build build -j2 --target wgllm_bench > /tmp/var_$v.log 2>&1
  mkdir -p /tmp/var/$v && cp build/wgllm-bench /tmp/var/$v/ && strip /tmp/var/$v/wgllm-bench
done
git checkout -q $F
