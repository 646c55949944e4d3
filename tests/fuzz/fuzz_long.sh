#!/usr/bin/env bash
# A long libFuzzer campaign (issue 13) for a machine with no internet and no GPU (the H200 device's 16 cores):
# every harness of tests/fuzz at once, its forked workers sized so that the 16 cores are all busy, from the
# committed corpora, regressions and dictionaries; then each harness's corpus merged (-merge=1), and the logs,
# merged corpora, crash/timeout/oom files and a summary written to $OUT as one tar.
#
# Packing (here, on the build machine; .devbin is git-ignored and must stay small, < 20 MB):
#   make fuzz-build FUZZ_BUILD=build-fuzz-h13 && bash tests/fuzz/fuzz_long.sh --pack build-fuzz-h13
# packs each fuzz_<h> (ASan + UBSan + libFuzzer, debug info stripped, symbols kept so that reports name
# functions; build-fuzz-h13 keeps the unstripped ones for line numbers) into .devbin/fuzzers/fuzzers.tar.xz
# (2.3 MB for eight; unpacked to a /tmp folder at run time: 3 MB each would break the 20 MB), and
# beside it the shared libraries the harnesses need at run time: an empty stand-in libwebgpu_wrapper.so (the
# library links Dawn, no harness calls it: docs/perf/13-fuzz/callL.sh's approach), libcjson.so.1 and
# libpcre2-8.so.0 (absent on the device's base image). The reference tokenizers the encode harness loads are
# .devbin/toks.tar.xz (from third_party/tokenizers, git-ignored, so not in the tree that travels; --pack makes it).
#
# Running (on the device, from the repository root; the call must carry .devbin):
#   run(command="bash tests/fuzz/fuzz_long.sh", carry=[".devbin/fuzzers", ".devbin/toks.tar.xz"], timeout_s=600)
#   FUZZ_SECONDS (default 480) is each harness's fuzzing time; FUZZ_WORKERS="h=N ..." overrides the split below;
#   FUZZ_ONLY="h ..." runs some harnesses only; FUZZ_WORKERS_ALL=N gives each N; FUZZ_OUT (default $OUT) where the
#   tar goes. Local check: FUZZ_SECONDS=20 FUZZ_WORKERS_ALL=1 FUZZ_OUT=/tmp/x bash tests/fuzz/fuzz_long.sh
# Default split of 16 cores (16 x 480 s = 128 CPU-minutes): chat_template 4 and http_request 4 (new code, 32
# CPU-minutes each), gguf 2 and tokenizer_json 2 (16 each; gguf.c's key index is new), config_json, safetensors,
# gguf_tokenizer and encode 1 each (8 each, added to the 22-30 they have on unchanged code: docs/TESTING.md).
# Without http_request its 4 go to gguf (4) and config_json (3). libFuzzer options: -fork=N
# -ignore_crashes=1 -ignore_timeouts=1 -ignore_ooms=1 (the whole time is used, every finding kept) -timeout=1
# -rss_limit_mb=2048 -malloc_limit_mb=100, run.sh's -max_len per harness.
set -u
R=$(cd "$(dirname "$0")/../.." && pwd)
FZ=$R/.devbin/fuzzers

if [ "${1:-}" = --pack ]; then
  build=${2:?usage: fuzz_long.sh --pack BUILD_DIR}
  mkdir -p "$FZ"
  rm -f "$FZ"/fuzz_* "$FZ"/fuzzers.tar.xz
  tmp=$(mktemp -d)
  for b in "$build"/fuzz_*; do
    case $b in *_replay | *.*) continue ;; esac
    [ -x "$b" ] || continue
    strip --strip-debug -o "$tmp/$(basename "$b")" "$b"
  done
  tar -C "$tmp" -cJf "$FZ/fuzzers.tar.xz" .
  rm -rf "$tmp"
  echo 'void wgllm_fuzz_no_gpu(void) {}' | cc -shared -fPIC -x c - -o "$FZ/libwebgpu_wrapper.so" \
    -Wl,-soname,libwebgpu_wrapper.so
  for l in libcjson.so.1 libpcre2-8.so.0; do
    cp -L "$(ldconfig -p | awk -v l=$l '$1 == l && /x86-64/ {print $NF; exit}')" "$FZ/$l"
  done
  tar -tJf "$FZ/fuzzers.tar.xz"
  # the encode harness's reference tokenizers (fetched by the bootstrap into third_party/tokenizers)
  tar -C "$R/third_party" -cJf "$R/.devbin/toks.tar.xz" $(cd "$R/third_party" &&
    ls tokenizers/*/tokenizer.json tokenizers/*/tokenizer_config.json)
  du -sh "$FZ" "$R/.devbin"
  exit 0
fi

out=${FUZZ_OUT:-${OUT:?set OUT or FUZZ_OUT}}
secs=${FUZZ_SECONDS:-480}
work=$(mktemp -d /tmp/fuzz_long.XXXXXX)
mkdir -p "$out"
t0=$(date +%s)
# the binaries unpacked outside .devbin (which stays small); .devbin/fuzzers holds all they need besides libc and
# libstdc++: their libraries
BIN=$work/bin
mkdir -p "$BIN"
tar -C "$BIN" -xJf "$FZ/fuzzers.tar.xz" || { echo "fuzz_long: no $FZ/fuzzers.tar.xz (fuzz_long.sh --pack)"; exit 1; }
export LD_LIBRARY_PATH=$FZ
# the encode harness's tokenizers: WGLLM_SOURCE_DIR is a root holding third_party/tokenizers and models/
mkdir -p "$work/root/third_party"
tar -xJf "$R/.devbin/toks.tar.xz" -C "$work/root/third_party"
ln -s "$R/models" "$work/root/models"
export WGLLM_SOURCE_DIR=$work/root
export ASAN_OPTIONS=detect_leaks=1:abort_on_error=0:malloc_context_size=20
export UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1

harnesses=()
for b in "$BIN"/fuzz_*; do
  h=$(basename "$b" | sed 's/^fuzz_//')
  [ -n "${FUZZ_ONLY:-}" ] && [[ " $FUZZ_ONLY " != *" $h "* ]] && continue
  [ -x "$b" ] && harnesses+=("$h")
done
[ ${#harnesses[@]} -gt 0 ] || { echo "fuzz_long: no fuzzers in $FZ/fuzzers.tar.xz (fuzz_long.sh --pack)"; exit 1; }
have() { [ -x "$BIN/fuzz_$1" ]; }
workers() {
  if [ -n "${FUZZ_WORKERS_ALL:-}" ]; then echo "$FUZZ_WORKERS_ALL"; return; fi
  for kv in ${FUZZ_WORKERS:-}; do [ "${kv%%=*}" = "$1" ] && { echo "${kv#*=}"; return; }; done
  case $1 in
  chat_template | http_request) echo 4 ;;
  gguf) have http_request && echo 2 || echo 4 ;;
  config_json) have http_request && echo 1 || echo 3 ;;
  tokenizer_json) echo 2 ;;
  *) echo 1 ;;
  esac
}
max_len() {
  case $1 in
  gguf) echo 24576 ;;
  tokenizer_json | chat_template) echo 16384 ;;
  config_json | safetensors) echo 8192 ;;
  *) echo 4096 ;;
  esac
}
nproc
ldd "$BIN/fuzz_${harnesses[0]}" | grep -E 'not found' && { echo "fuzz_long: missing libraries"; exit 1; }
echo "fuzz_long: ${harnesses[*]}, $secs s each, from $(date +%T)"
: > "$work/summary.txt"
total=0
for h in "${harnesses[@]}"; do
  j=$(workers "$h")
  total=$((total + j))
  mkdir -p "$work/corpus/$h" "$work/crashes/$h" "$work/logs"
  dirs=("$work/corpus/$h")
  for d in "$R/tests/fuzz/corpus/$h" "$R/tests/fuzz/regressions/$h"; do [ -d "$d" ] && dirs+=("$d"); done
  opts=(-fork="$j" -ignore_crashes=1 -ignore_timeouts=1 -ignore_ooms=1 -max_total_time="$secs" -timeout=1
    -rss_limit_mb=2048 -malloc_limit_mb=100 -max_len="$(max_len "$h")" -print_final_stats=1
    -artifact_prefix="$work/crashes/$h/")
  [ -f "$R/tests/fuzz/dict/$h.dict" ] && opts+=(-dict="$R/tests/fuzz/dict/$h.dict")
  echo "$h: $j workers" | tee -a "$work/summary.txt"
  (
    cd "$work"
    "$BIN/fuzz_$h" "${opts[@]}" "${dirs[@]}" > "$work/logs/$h.log" 2>&1
    echo "$h: exit $?" >> "$work/summary.txt"
  ) &
done
echo "fuzz_long: $total workers on $(nproc) cores"
wait
t1=$(date +%s)
echo "fuzz_long: fuzzing took $((t1 - t0)) s; merging" | tee -a "$work/summary.txt"
for h in "${harnesses[@]}"; do
  mkdir -p "$work/merged/$h"
  ( timeout 30 "$BIN/fuzz_$h" -merge=1 -timeout=5 -rss_limit_mb=2048 -max_len="$(max_len "$h")" "$work/merged/$h" \
      "$work/corpus/$h" "$R/tests/fuzz/corpus/$h" > "$work/logs/$h.merge.log" 2>&1 || \
      echo "$h: merge exit $? (the unmerged corpus is kept)" >> "$work/summary.txt"
    [ -n "$(ls -A "$work/merged/$h")" ] || cp -r "$work/corpus/$h/." "$work/merged/$h/" ) &
done
wait
{
  echo "== per harness (stat lines from the fork-mode parent; CPU-s = workers x wall)"
  for h in "${harnesses[@]}"; do
    j=$(workers "$h")
    last=$(grep -E '^#[0-9]+' "$work/logs/$h.log" | tail -1)
    echo "$h: $j workers, about $((j * secs / 60)) CPU-minutes; last: ${last:-none}"
    echo "  crashes/timeouts/ooms: $(ls "$work/crashes/$h" | wc -l); merged corpus $(ls "$work/merged/$h" | wc -l) files"
    grep -E 'ERROR: |SUMMARY: |FUZZ CHECK FAILED|runtime error|INFO: fuzzed for' "$work/logs/$h.log" | sort | uniq -c |
      sort -rn | head -8 | sed 's/^/    /'
  done
  echo "total $(($(date +%s) - t0)) s"
} >> "$work/summary.txt"
cat "$work/summary.txt"
for h in "${harnesses[@]}"; do # the logs of fork mode are long: their ends and every report line
  { grep -E -B2 -A30 'ERROR: |FUZZ CHECK FAILED|runtime error' "$work/logs/$h.log" | head -c 3000000
    echo "== last 200 lines"; tail -n 200 "$work/logs/$h.log"; } > "$work/logs/$h.short.log"
  rm "$work/logs/$h.log"
done
tar -C "$work" -cJf "$out/fuzz_long.tar.xz" summary.txt logs merged crashes
ls -la "$out/fuzz_long.tar.xz"
[ "$(stat -c %s "$out/fuzz_long.tar.xz")" -lt 16000000 ] || echo "fuzz_long: WARNING: the tar is over 16 MB (the device returns files up to 16 MiB)"
rm -rf "$work"
