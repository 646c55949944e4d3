#!/usr/bin/env bash
# Runs the libFuzzer harnesses built in BUILD_DIR (make fuzz-build) for SECONDS each, one after another.
# Usage (from the repository root): tests/fuzz/run.sh BUILD_DIR SECONDS [HARNESS...]   (default: all of them)
# Each harness reads its committed seeds (tests/fuzz/corpus/<h>/) and regression inputs
# (tests/fuzz/regressions/<h>/) and its dictionary (tests/fuzz/dict/<h>.dict), and writes the inputs it finds
# interesting into BUILD_DIR/fuzz-corpus/<h>/ (kept between runs, never in the tree). A crash, leak, sanitizer
# report, timeout (-timeout, seconds per input) or harness check failure stops it and leaves the input in
# BUILD_DIR/fuzz-artifacts/<h>/: minimize it (the binary with -minimize_crash=1 -runs=10000 ARTIFACT), fix the
# bug, and commit the minimized input under tests/fuzz/regressions/<h>/ so fuzz_replay_<h> replays it.
# Prints one line a harness, then "fuzz: N passed, N failed"; exits non-zero when any failed.
set -u
build=${1:?usage: tests/fuzz/run.sh BUILD_DIR SECONDS [HARNESS...]}
secs=${2:?usage: tests/fuzz/run.sh BUILD_DIR SECONDS [HARNESS...]}
shift 2
src=$(cd "$(dirname "$0")" && pwd)
names=("$@")
if [ ${#names[@]} -eq 0 ]; then
  for f in "$src"/fuzz_*.c; do
    n=$(basename "$f" .c)
    [ "$n" = fuzz_util ] || names+=("${n#fuzz_}")
  done
fi
# largest input each harness mutates to (seeds may be larger; libFuzzer keeps them whole)
max_len() {
  case "$1" in
  gguf) echo 24576 ;;
  tokenizer_json) echo 16384 ;;
  chat_template) echo 16384 ;;
  config_json | safetensors) echo 8192 ;;
  *) echo 4096 ;;
  esac
}
export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=0}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}
passed=0
failed=0
for h in "${names[@]}"; do
  bin="$build/fuzz_$h"
  work="$build/fuzz-corpus/$h"
  art="$build/fuzz-artifacts/$h"
  log="$build/fuzz-logs/$h.log"
  mkdir -p "$work" "$art" "$(dirname "$log")"
  if [ ! -x "$bin" ]; then
    echo "fuzz $h: FAILED: no $bin (make fuzz-build)"
    failed=$((failed + 1))
    continue
  fi
  dirs=("$work")
  for d in "$src/corpus/$h" "$src/regressions/$h"; do [ -d "$d" ] && dirs+=("$d"); done
  opts=(-max_total_time="$secs" -timeout=30 -rss_limit_mb=3072 -max_len="$(max_len "$h")" -print_final_stats=1
    -artifact_prefix="$art/")
  [ -f "$src/dict/$h.dict" ] && opts+=(-dict="$src/dict/$h.dict")
  start=$(date +%s)
  "$bin" "${opts[@]}" "${dirs[@]}" > "$log" 2>&1
  rc=$?
  took=$(($(date +%s) - start))
  execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -1)
  cov=$(grep -oE 'cov: [0-9]+ ft: [0-9]+' "$log" | tail -1)
  if [ "$rc" = 0 ]; then
    echo "fuzz $h: ok, ${execs:-?} runs in ${took} s (${cov:-no coverage line}), corpus $(ls "$work" | wc -l) files"
    passed=$((passed + 1))
  else
    echo "fuzz $h: FAILED (exit $rc after ${took} s; log $log); the input:"
    ls -1 "$art" | sed "s|^|  $art/|"
    grep -E '^(==[0-9]+==ERROR|SUMMARY|FUZZ CHECK FAILED|.*runtime error)' "$log" | head -5 | sed 's/^/  /'
    tail -n 40 "$log" | sed 's/^/  | /'
    failed=$((failed + 1))
  fi
done
echo "fuzz: $passed passed, $failed failed"
[ "$failed" = 0 ]
