#!/bin/bash
# The one-change builds of docs/perf/31-moe/call37.sh, each a stripped wgllm-bench in /tmp/var37/NAME, built from
# main (7f34a2a, engine code as 222474c) in build-rel with one file edited, then restored:
#   fb: the ranking's fill writes only the words the count reads (ceil(E / 4), not 64 for every E): Mixtral-8x7B's
#       step was 2.1% slower with the word count (calls 35-36), whose fill writes 64 words where the old one wrote E
#       floats' worth of live values
# then `tar -C /tmp/var37 -cJf build-pack/var37.tar.xz .`.
set -e
cd "$(dirname "$0")/../../.."
for v in "$@"; do
  case $v in
    fb) F=kernels/lib/moe_topk.wgsli
        A="  for (var w = li; w < 64u; w += TOPK_WG) { // a thread a word"
        R="  for (var w = li; w < (E + 3u) / 4u; w += TOPK_WG) { // a thread a word";;
  esac
  python3 - "$F" "$A" "$R" <<'PY'
import sys
f,a,r=sys.argv[1],sys.argv[2].replace("\\n","\n").replace("\\&","&"),sys.argv[3].replace("\\n","\n").replace("\\&","&")
s=open(f).read(); assert s.count(a)==1, (f,a); open(f,"w").write(s.replace(a,r))
PY
  git diff --stat | tail -1
  cmake --build build-rel -j2 --target wgllm_bench > /tmp/var37_$v.log 2>&1 || { tail -20 /tmp/var37_$v.log; git checkout -q $F; exit 1; }
  mkdir -p /tmp/var37/$v && cp build-rel/wgllm-bench /tmp/var37/$v/ && strip /tmp/var37/$v/wgllm-bench
  git checkout -q $F
done
cmake --build build-rel -j2 --target wgllm_bench > /dev/null
