#!/usr/bin/env bash
# The rooms of src/ call only downward: a file's #include "x.h" must name a header of its own room or of a room
# before it in the layer order, and no directory holds more than a third of the library's lines. src/dev (the
# developer code of wgllm_dev: synthetic models, the GGUF writer) comes last: it may use every room, none uses it.
# Usage (from the repository root): tests/test_layers.sh
set -u
order=(gpu ops format tokenizer model arch runtime api dev)
rank() { local i; for i in "${!order[@]}"; do [ "${order[$i]}" = "$1" ] && { echo "$i"; return; }; done; echo -1; }
declare -A room_of
for d in "${order[@]}"; do
  for h in src/$d/*.h; do [ -e "$h" ] && room_of[$(basename "$h")]=$d; done
done
bad=0 checked=0
for d in "${order[@]}"; do
  r=$(rank "$d")
  for f in src/$d/*.c src/$d/*.h; do
    [ -e "$f" ] || continue
    for inc in $(sed -n 's/^#include "\([^"]*\)".*/\1/p' "$f"); do
      h=$(basename "$inc")
      [ "$h" = wgllm.h ] && continue
      to=${room_of[$h]:-}
      [ -n "$to" ] || continue # a generated file or a header outside the rooms
      checked=$((checked + 1))
      if [ "$(rank "$to")" -gt "$r" ]; then
        echo "FAIL test_layers: $f ($d) includes $h from $to, a room above it"
        bad=$((bad + 1))
      fi
    done
  done
done
total=$(cat src/*/*.c src/*/*.h | wc -l)
for d in src/*/; do
  n=$(cat "$d"*.c "$d"*.h 2>/dev/null | wc -l)
  if [ $((3 * n)) -gt "$total" ]; then
    echo "FAIL test_layers: $d holds $n of the library's $total lines (more than a third)"
    bad=$((bad + 1))
  fi
done
echo "test_layers: $checked includes and $(ls -d src/*/ | wc -l) rooms checked, $bad failed"
[ "$bad" = 0 ]
