#!/usr/bin/env bash
# Device call 2 (H200), carry .gl, build-pack/attnp.tar.xz (call 1's binaries and Dawn: "p") and
# build-pack/attnq.tar.xz (bench_kernels and test_ops with attn_split's loads unrolled by four: "q"): the
# conformance of q (flash_decode, paged_, hostile), then bench_kernels --attn and --attn-paged for p and q, twice,
# alternated.
# (Run as one command line through the device tool; this file is that line.)
set -u; for f in .gl/*.deb; do dpkg -x "$f" / 2>/dev/null; done; ldconfig
export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json
mkdir -p /tmp/p /tmp/q && tar -C /tmp/p -xJf build-pack/attnp.tar.xz && tar -C /tmp/q -xJf build-pack/attnq.tar.xz
cd tests && LD_LIBRARY_PATH=/tmp/p timeout 200 /tmp/q/test_ops -f paged_ -f flash_decode -f hostile > $OUT/test_ops_q.txt 2>&1
echo "test_ops rc=$?" >> $OUT/test_ops_q.txt; tail -3 $OUT/test_ops_q.txt
for rep in 1 2; do for b in p q; do
  echo "== $b rep $rep" >> $OUT/attn.txt; LD_LIBRARY_PATH=/tmp/p timeout 120 /tmp/$b/bench_kernels --attn --shapes 1b,8b --types none 2>&1 | grep '^attn' >> $OUT/attn.txt
  echo "== $b rep $rep" >> $OUT/attn_paged.txt; LD_LIBRARY_PATH=/tmp/p timeout 120 /tmp/$b/bench_kernels --attn-paged 2>&1 | grep '^attn' >> $OUT/attn_paged.txt
done; done
grep -c . $OUT/attn.txt $OUT/attn_paged.txt
