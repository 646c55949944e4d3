#!/usr/bin/env bash
# The resource bounds of issue 27 (item 8), one row of its table a check: each hostile input is written into a
# temporary directory from the bundled model (tests/tools/bounds_inputs.py) and the real CLI runs on it under
# tests/tools/bounded_run.c, which measures the CPU time and the peak RSS (wait4) and kills the command past twice its
# time bound + 5 s of wall time. Each row asserts the exit status, a message naming the problem (a regular expression
# over the output) and the bounds: a command's 2 s and 200 MB, 5 s and 600 MB where the file itself is near 100 MB
# (docs/LIMITS.md). Beside each row: what it cost before (the issue's figures, lavapipe machine) and which of its
# checks the old behaviour fails ("old:" the figures of a build of 3 Dec 2026 06:45, before issue 27's fixes, run
# under `ulimit -v 3000000`, and the check it failed). Prints one line a row with the figures measured.
# Usage: tests/test_bounds.sh BUILD_DIR  (ctest runs it from the repository root; ~35 s, ~100 MB of /tmp at a time)
set -u
BUILD="$(cd "${1:?usage: tests/test_bounds.sh BUILD_DIR}" && pwd)"
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
cd "$ROOT" || exit 1
WGLLM=$BUILD/wgllm RUN=$BUILD/bounded_run GEN="python3 tests/tools/bounds_inputs.py"
for f in "$WGLLM" "$RUN"; do [ -x "$f" ] || { echo "FAIL test_bounds: $f is not built"; exit 1; }; done
command -v python3 > /dev/null || { echo "FAIL test_bounds: python3 is needed to write the inputs"; exit 1; }
TMP=$(mktemp -d /tmp/wgllm-bounds-XXXXXX)
trap 'rm -rf "$TMP"' EXIT
PASSED=0 FAILED=0

# row NAME MAX_S MAX_MB RC REGEX COMMAND...: COMMAND (its stdin from $STDIN, else /dev/null) under bounded_run,
# its output kept in $TMP/out
row() {
  local name=$1 max_s=$2 max_mb=$3 rc=$4 regex=$5 fig st
  shift 5
  fig=$("$RUN" --max-s "$max_s" --max-mb "$max_mb" --rc "$rc" --out "$TMP/out" -- "$@" < "${STDIN:-/dev/null}")
  st=$?
  fig=${fig#bounded_run: }
  if [ "$st" = 0 ] && ! grep -qE -- "$regex" "$TMP/out"; then
    st=1
    fig="$fig; the output lacks /$regex/"
  fi
  if [ "$st" = 0 ]; then
    PASSED=$((PASSED + 1))
    echo "PASS $name: $fig"
  else
    FAILED=$((FAILED + 1))
    echo "FAIL $name: ${fig:-bounded_run failed}"
    head -c 1000 "$TMP/out" | sed 's/^/    /'
    echo
  fi
}

# check NAME COMMAND...: a further assertion on a row's output
check() {
  local name=$1
  shift
  if "$@"; then PASSED=$((PASSED + 1)); echo "PASS $name"; else FAILED=$((FAILED + 1)); echo "FAIL $name"; fi
}

# model DIR: a copy of models/default in DIR (links to its files), whose files a row then replaces
model() {
  rm -rf "$1"
  mkdir -p "$1"
  for f in models/default/*; do ln -s "$ROOT/$f" "$1/"; done
}

# what the bundled model gives, to compare with
"$WGLLM" info -m models/default > "$TMP/info_default" 2>&1
"$WGLLM" tokenize -m models/default "In the beginning" > "$TMP/ids_default" 2>&1

echo "--- the tokenizer pipeline (tokenizer.json of the bundled model with a hostile step; wgllm tokenize)"
# 40 s and 7 GB before: "a" doubled 28 times. Now refused at the step that takes the text past 16x
# (old: killed after 9 s of wall time at 907 MB)
$GEN tokenizer "$TMP/t_replace" replace28
row "28 chained Replace a -> aa normalizers, text \"a\"" 2 200 1 'normalizer [0-9]+ \(Replace\).*past' \
  "$WGLLM" tokenize -m "$TMP/t_replace" a
# 15.8 GB before: each ByteLevel doubles non-ASCII text, 2^16 times (old: killed after 9 s at 628 MB)
$GEN tokenizer "$TMP/t_bytelevel" bytelevel16
python3 -c 'import sys; sys.stdout.write("\u00e9" * 1000)' > "$TMP/e1000"
STDIN=$TMP/e1000 row "16 ByteLevel pre-tokenizers, text of 1,000 \"é\"" 2 200 1 'pre-tokenizer [0-9]+ \(ByteLevel\)' \
  "$WGLLM" tokenize -m "$TMP/t_bytelevel"
# 6.1 s on 5 KB, over 120 s on 100 KB before: backtracking without a bound (old: killed after 9 s)
$GEN tokenizer "$TMP/t_regex" regex
head -c 100000 /dev/zero | tr '\0' a > "$TMP/a100k"
STDIN=$TMP/a100k row "Split regex a{0,100}a{0,100}a{0,100}b|a on 100 KB of text" 2 200 1 \
  'a\{0,100\}a\{0,100\}a\{0,100\}b\|a' "$WGLLM" tokenize -m "$TMP/t_regex"
# loaded, then every prompt failed: now refused at load naming it (old: rc 1 without naming the pattern)
$GEN tokenizer "$TMP/t_recurse" recurse
row "Split regex (?R)?a" 2 200 1 '\(\?R\)\?a' "$WGLLM" tokenize -m "$TMP/t_recurse" a
model "$TMP/m_recurse"
rm "$TMP/m_recurse/tokenizer.json"
cp "$TMP/t_recurse/tokenizer.json" "$TMP/m_recurse/"
row "Split regex (?R)?a in a whole model directory (wgllm run -n 1)" 20 600 1 '\(\?R\)\?a' \
  "$WGLLM" run -m "$TMP/m_recurse" -p a -n 1 -s 1

echo "--- JSON files past their caps, and under them with a hostile shape (docs/LIMITS.md)"
# 4.1 GB and 23 s before (cJSON's nodes for [0,0,...]): refused by its size before it is read
# (old: 8.4 s of CPU, 2.9 GB)
model "$TMP/m_cfg"
rm "$TMP/m_cfg/config.json"
$GEN zeros "$TMP/m_cfg/config.json" 100 '{"a":[' ']}'
row "config.json of 100 MB" 5 600 1 'config.json: .*bytes.*cap' "$WGLLM" info -m "$TMP/m_cfg"
# under the 16 MiB cap, refused by the value count before cJSON builds anything (old: 596 MB)
$GEN zeros "$TMP/m_cfg/config.json" 15 '{"a":[' ']}'
row "config.json of 15 MB of [0,0,...] (under the size cap)" 2 200 1 'config.json: JSON holds about [0-9]+ values' \
  "$WGLLM" info -m "$TMP/m_cfg"
# the worst config.json still read: 16 MB, 500,000 values (the cap), each a member of two strings
$GEN wide "$TMP/m_cfg/config.json" config.json 16 500000
row "config.json of 16 MB at the value cap (read, the model described)" 2 200 0 'architecture: llama' \
  "$WGLLM" info -m "$TMP/m_cfg"
rm -rf "$TMP/m_cfg"
# 3.7 GB before: a 90 MB header under the 100 MiB cap, [0,0,...], refused by the value count
# (old: killed after 15 s at 2.7 GB)
model "$TMP/m_st"
rm "$TMP/m_st/model.safetensors"
$GEN st_zeros "$TMP/m_st/model.safetensors" 90
row "safetensors header of 90 MB of [0,0,...]" 5 600 1 "model.safetensors: the header's JSON holds about" \
  "$WGLLM" info -m "$TMP/m_st"
# the worst header still read: 90 MB, 2,000,000 values (the cap) of two strings each, then the model's tensors
# (within its bounds before too: this row keeps the cap itself within them)
$GEN st_wide "$TMP/m_st/model.safetensors" 90 2000000
row "safetensors header of 90 MB at the value cap (read, the model described)" 5 600 0 'tensors: +38,' \
  "$WGLLM" info -m "$TMP/m_st"
rm -rf "$TMP/m_st"
# 4.1 GB before: refused by its size before it is read (old: 7.4 s of CPU, 2.9 GB)
mkdir -p "$TMP/t_big"
$GEN zeros "$TMP/t_big/tokenizer.json" 100 '{"model":[' ']}'
row "tokenizer.json of 100 MB" 5 600 1 'tokenizer.json: .*bytes.*cap' "$WGLLM" tokenize -m "$TMP/t_big" a
# under the 64 MiB cap, refused by the value count (old: 5.5 s of CPU, 2.4 GB)
$GEN zeros "$TMP/t_big/tokenizer.json" 60 '{"model":[' ']}'
row "tokenizer.json of 60 MB of [0,0,...] (under the size cap)" 5 600 1 'tokenizer.json: JSON holds about [0-9]+ values' \
  "$WGLLM" tokenize -m "$TMP/t_big" a
# the worst tokenizer.json still read: 60 MB, 3,000,000 values (the cap), the bundled model's tokenizer beside them
$GEN wide "$TMP/t_big/tokenizer.json" tokenizer.json 60 3000000
row "tokenizer.json of 60 MB at the value cap (read, text tokenized)" 5 600 0 . \
  "$WGLLM" tokenize -m "$TMP/t_big" "In the beginning"
check "  its ids are the bundled model's" cmp -s "$TMP/out" "$TMP/ids_default"
rm -rf "$TMP/t_big"

echo "--- GGUF files"
# 84 s before (a scan of every offset for each unread tensor): binary search now (old: killed after 9 s)
$GEN gguf_unused "$TMP/unused16.gguf" 300000 16
row "300,000 tensors of a type wgllm does not read (wgllm info)" 2 200 1 \
  'not runnable: .*300000 tensors of ggml types wgllm does not read' "$WGLLM" info -m "$TMP/unused16.gguf"
rm "$TMP/unused16.gguf"
$GEN gguf_unused "$TMP/unused0.gguf" 300000 0
row "300,000 F32 tensors the model does not use (wgllm info)" 2 200 0 'tensors: +300038,' \
  "$WGLLM" info -m "$TMP/unused0.gguf"
row "300,000 F32 tensors the model does not use (wgllm run -n 1)" 20 600 0 . \
  "$WGLLM" run -m "$TMP/unused0.gguf" -p "In the beginning" -n 1 -s 1
rm "$TMP/unused0.gguf"
# read whole before: now refused by their count (old: rc 1 later, not naming the count: the message)
$GEN gguf_keys "$TMP/keys.gguf" 100000
row "GGUF of 100,000 metadata keys" 2 200 1 '100000 metadata keys.*at most 65536' "$WGLLM" info -m "$TMP/keys.gguf"
# refused by the section's cap before the copy (old: the string copied, 267 MB)
$GEN gguf_long "$TMP/long.gguf" 129
row "GGUF whose one string value is 129 MiB" 2 200 1 "metadata key 'general.name' .*past the key/value section's cap" \
  "$WGLLM" info -m "$TMP/long.gguf"
rm "$TMP/long.gguf"

# hung forever before (old: killed after 9 s of wall time)
echo "--- FIFOs where a file is expected: refused at once"
model "$TMP/m_fifo"
rm "$TMP/m_fifo/config.json"
mkfifo "$TMP/m_fifo/config.json"
row "config.json a FIFO" 2 200 1 'config.json: not a regular file' "$WGLLM" info -m "$TMP/m_fifo"
model "$TMP/m_fifo"
rm "$TMP/m_fifo/model.safetensors"
mkfifo "$TMP/m_fifo/model.safetensors"
row "model.safetensors a FIFO" 2 200 1 'model.safetensors: not a regular file' "$WGLLM" info -m "$TMP/m_fifo"

echo "--- what a file means (each compared with the bundled model's own)"
# cJSON took the first of two keys before (old: rms eps 0.25, the line compared)
model "$TMP/m_dup"
rm "$TMP/m_dup/config.json"
$GEN config "$TMP/m_dup/config.json" 'rms_norm_eps+=0.25'
row "config.json with rms_norm_eps twice (the last wins)" 2 200 0 'rms eps' "$WGLLM" info -m "$TMP/m_dup"
check "  its rms eps is the second's, the bundled model's" \
  test "$(grep 'rms eps' "$TMP/out")" = "$(grep 'rms eps' "$TMP/info_default")"
# refused naming the field (old: accepted, rc 0)
$GEN config "$TMP/m_dup/config.json" 'rms_norm_eps=0'
row "config.json with rms_norm_eps 0" 2 200 1 'rms_norm_eps' "$WGLLM" info -m "$TMP/m_dup"
# two tensors on one data range, refused naming both (old: accepted, rc 0)
model "$TMP/m_overlap"
rm "$TMP/m_overlap/model.safetensors"
$GEN st_overlap "$TMP/m_overlap/model.safetensors"
row "safetensors tensors with overlapping data_offsets" 2 200 1 'overlapping data_offsets' \
  "$WGLLM" info -m "$TMP/m_overlap"
# read as a directory (old: rc 1, "no tokenizer.json": the directory was taken for the tokenizer file)
model "$TMP/x.json"
row "a model directory named x.json" 2 200 0 . "$WGLLM" tokenize -m "$TMP/x.json" "In the beginning"
check "  its ids are the bundled model's" cmp -s "$TMP/out" "$TMP/ids_default"

echo "test_bounds: $PASSED passed, $FAILED failed"
[ "$FAILED" = 0 ]
