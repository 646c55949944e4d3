#!/bin/bash
# device call L (and M: the same after the two fixes, 250 s, workers re-spread: gguf and tokenizer_json 5,
# gguf_tokenizer and safetensors 2, encode and config_json 1; run as `bash callL.sh M`): every libFuzzer harness of tests/fuzz (ASan + UBSan, built by make fuzz-build, stripped) on the
# device's 16 CPU cores at once for 520 s (no GPU: the harnesses load Dawn's library but never call it, so an empty
# stand-in is linked in its place), each with 2 forked workers (gguf and encode 3), -timeout=2 -rss_limit_mb=2048.
set -u
R=$PWD
export LD_LIBRARY_PATH=$R/.devbin/stub WGLLM_SOURCE_DIR=$R
export ASAN_OPTIONS=detect_leaks=1:abort_on_error=0 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
for f in .gl/*.deb; do dpkg -x $f / >/dev/null; done; ldconfig  # libcjson, libpcre2
mkdir -p third_party && tar -xJf .devbin/toks.tar.xz -C third_party
nproc; date +%T
maxlen() { case $1 in gguf) echo 24576 ;; tokenizer_json) echo 16384 ;; config_json|safetensors) echo 8192 ;; *) echo 4096 ;; esac; }
for h in config_json encode gguf gguf_tokenizer safetensors tokenizer_json; do
  mkdir -p /tmp/fz/$h $OUT/art_$h
  j=2; case $h in gguf|encode) j=3 ;; esac
  T=520
  if [ "${1:-}" = M ]; then T=250; case $h in gguf|tokenizer_json) j=5 ;; gguf_tokenizer|safetensors) j=2 ;; *) j=1 ;; esac; fi
  dirs="/tmp/fz/$h tests/fuzz/corpus/$h"; [ -d tests/fuzz/regressions/$h ] && dirs="$dirs tests/fuzz/regressions/$h"
  dict=""; [ -f tests/fuzz/dict/$h.dict ] && dict="-dict=tests/fuzz/dict/$h.dict"
  ( .devbin/fuzz/fuzz_$h -fork=$j -max_total_time=$T -timeout=2 -rss_limit_mb=2048 -max_len=$(maxlen $h) $dict \
      -artifact_prefix=$OUT/art_$h/ $dirs > $OUT/fuzz_$h.log 2>&1; echo "$h exit $?" >> $OUT/summary.txt ) &
done
wait
date +%T
cat $OUT/summary.txt
for h in config_json encode gguf gguf_tokenizer safetensors tokenizer_json; do
  echo "== $h: $(grep -cE '^#[0-9]+' $OUT/fuzz_$h.log) status lines"; grep -E "^#[0-9]+" $OUT/fuzz_$h.log | tail -1
  grep -E "ERROR|SUMMARY|FUZZ CHECK|runtime error|crash|timeout|oom" $OUT/fuzz_$h.log | head -5
  ls $OUT/art_$h | head -3
done
for h in config_json encode gguf gguf_tokenizer safetensors tokenizer_json; do tail -c 20000 $OUT/fuzz_$h.log > $OUT/fuzz_$h.tail; rm $OUT/fuzz_$h.log; done
cd $OUT && tar -czf fuzz.tgz summary.txt fuzz_*.tail art_* && rm -rf fuzz_*.tail art_*
