#!/usr/bin/env bash
# Fetches the King James Bible (public domain) from Debian's bible-kjv-text package and writes a plain-text
# corpus, one verse per line, without references ("In the beginning God created the heaven and the earth.").
#
#   tools/train_default/fetch_data.sh [OUT]        (default OUT: .devtools/data/kjv.txt)
#
# The package stores the text in its own compressed format (/usr/lib/bible.data), which only the `bible`
# program of the companion package bible-kjv reads, so both .debs are downloaded and unpacked into a temporary
# directory (nothing is installed); `bible -f` (pretty-printing off) prints "Ge1:1 In the beginning ..." per
# verse, and the reference is stripped. Needs apt (run `apt-get update` once first) and libreadline8.
set -euo pipefail
out="${1:-.devtools/data/kjv.txt}"
tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT

( cd "$tmp" && apt-get download bible-kjv-text bible-kjv ) >"$tmp/apt.log" 2>&1 || {
  cat "$tmp/apt.log" >&2; echo "fetch_data.sh: apt-get download failed (run apt-get update first?)" >&2; exit 1; }
for deb in "$tmp"/bible-kjv-text_*.deb "$tmp"/bible-kjv_*.deb; do
  echo "$(dpkg-deb -f "$deb" Package) $(dpkg-deb -f "$deb" Version)"
  dpkg-deb -x "$deb" "$tmp/root"
done

bible="$tmp/root/usr/bin/bible"
data="$tmp/root/usr/lib"
test -s "$data/bible.data" || { echo "fetch_data.sh: bible.data missing from the package" >&2; exit 1; }
# -f: pretty-printing off -> one verse per line, preceded by its reference ("1Sm3:4 ...").
"$bible" -f -p "$data" "Gen1:1-Rev22:21" >"$tmp/raw.txt" || {
  echo "fetch_data.sh: running the bible program failed (missing libreadline8? apt-get install libreadline8)" >&2
  exit 1; }

# Strip the reference ("Ge1:1 ", "1Sm3:4 ", "SSol2:1 "), squeeze blanks, drop empty lines.
sed -E -e 's/^[1-3]?[A-Za-z]+[0-9]+:[0-9]+[[:space:]]+//' -e 's/[[:space:]]+/ /g' -e 's/ $//' "$tmp/raw.txt" |
  awk 'length > 0' >"$tmp/kjv.txt"

lines=$(wc -l <"$tmp/kjv.txt")
if [ "$lines" -ne 31102 ]; then
  echo "fetch_data.sh: expected 31102 verses, got $lines" >&2; exit 1
fi
if grep -qE '^[1-3]?[A-Za-z]+[0-9]+:[0-9]+ ' "$tmp/kjv.txt"; then
  echo "fetch_data.sh: verse references left in the text" >&2; exit 1
fi
first=$(head -n 1 "$tmp/kjv.txt")
if [ "$first" != "In the beginning God created the heaven and the earth." ]; then
  echo "fetch_data.sh: unexpected first verse: $first" >&2; exit 1
fi

mkdir -p "$(dirname "$out")"
cp "$tmp/kjv.txt" "$out.tmp.$$"
mv -f "$out.tmp.$$" "$out"
echo "wrote $out: $lines verses, $(wc -c <"$out") bytes"
