#!/usr/bin/env bash
# The rooms of src/ use only downward: a file's #include "x.h" must name a header of its own room or of a room before
# it in the layer order; given a build directory, every symbol a room's object files leave undefined must be defined
# by its own room or a room before it (else it comes from outside src/: libc, Dawn, cJSON, PCRE2, the generated
# kernel table); no room's headers include each other in a circle; no directory holds more than a third of the
# library's lines; and no run of six lines is repeated across the op files. src/dev (the developer code of
# wgllm_dev: synthetic models, the GGUF writer) comes last: it may use every room, none uses it.
# Usage (from the repository root): tests/test_layers.sh [BUILD_DIR]   (ctest passes its build directory)
set -u
build_dir=${1:-}
order=(base gpu ops format tokenizer grammar chat model arch runtime api dev)
rank() { local i; for i in "${!order[@]}"; do [ "${order[$i]}" = "$1" ] && { echo "$i"; return; }; done; echo -1; }
declare -A room_of
for d in "${order[@]}"; do
  for h in src/$d/*.h; do [ -e "$h" ] && room_of[$(basename "$h")]=$d; done
done
bad=0 checked=0
for d in src/*/; do # a new room must be placed in the order (src/ref is the CPU references, a test-only library)
  d=$(basename "$d")
  if [ "$(rank "$d")" = -1 ] && [ "$d" != ref ] && [ "$d" != generated ]; then
    echo "FAIL test_layers: src/$d is not in the layer order of tests/test_layers.sh"
    bad=$((bad + 1))
  fi
done
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

# Calls: the objects of the static library wgllm_internal (everything visible; src/dev's in wgllm_dev), one folder
# of them a room.
calls=0
if [ -n "$build_dir" ]; then
  # a room's objects: those of its sources (a build directory may still hold objects of files moved away)
  room_dir() {
    if [ "$1" = dev ]; then echo "$build_dir/CMakeFiles/wgllm_dev.dir/src/dev"; else
      echo "$build_dir/CMakeFiles/wgllm_internal.dir/src/$1"; fi
  }
  room_objects() {
    local c o
    for c in src/$1/*.c; do
      o=$(room_dir "$1")/$(basename "$c").o
      [ -e "$o" ] && echo "$o"
    done
  }
  declare -A def_room # symbol -> the room that defines it
  for d in "${order[@]}"; do
    n=$(room_objects "$d" | wc -l)
    if [ "$n" = 0 ]; then
      echo "FAIL test_layers: no object files in $(room_dir "$d") (build the library first)"
      bad=$((bad + 1))
      continue
    fi
    while read -r sym; do
      def_room[$sym]=$d
    done < <(nm --defined-only -g $(room_objects "$d") | awk 'NF == 3 { print $3 }')
  done
  for d in "${order[@]}"; do
    r=$(rank "$d")
    for o in $(room_objects "$d"); do
      for sym in $(nm -u "$o" | awk '{ print $2 }'); do
        to=${def_room[$sym]:-}
        [ -n "$to" ] || continue # defined outside src/'s rooms
        calls=$((calls + 1))
        if [ "$(rank "$to")" -gt "$r" ]; then
          echo "FAIL test_layers: src/$d/$(basename "$o" .o) ($d) uses $sym from $to, a room above it"
          bad=$((bad + 1))
        fi
      done
    done
  done
fi

total=$(cat src/*/*.c src/*/*.h | wc -l)
for d in src/*/; do
  n=$(cat "$d"*.c "$d"*.h 2>/dev/null | wc -l)
  if [ $((3 * n)) -gt "$total" ]; then
    echo "FAIL test_layers: $d holds $n of the library's $total lines (more than a third)"
    bad=$((bad + 1))
  fi
done
# no include circle inside a room: following a header's includes of its own room never leads back to it
declare -A incs
for d in "${order[@]}"; do
  for h in src/$d/*.h; do
    [ -e "$h" ] || continue
    incs[$h]=$(sed -n 's/^#include "\([^"]*\)".*/\1/p' "$h" | while read -r i; do
      [ -e "src/$d/$(basename "$i")" ] && echo "src/$d/$(basename "$i")"; done | tr '\n' ' ')
  done
done
for h in "${!incs[@]}"; do
  seen=" " todo="${incs[$h]}"
  while [ -n "${todo// /}" ]; do
    set -- $todo
    next=$1
    shift
    todo="$*"
    if [ "$next" = "$h" ]; then
      echo "FAIL test_layers: $h includes itself through a circle of its room's headers"
      bad=$((bad + 1))
      break
    fi
    case "$seen" in *" $next "*) continue ;; esac
    seen="$seen$next "
    todo="$todo ${incs[$next]:-}"
  done
done
# no run of six or more lines (not counting blank lines and lone braces) repeated across the op files: the dispatch
# boilerplate goes through op_dispatch
dup=$(awk 'FNR == 1 { n = 0 }
  { l = $0; gsub(/^[ \t]+|[ \t]+$/, "", l); if (l == "" || l == "}" || l == "{") next; w[n % 6] = l; n++
    if (n < 6) next
    k = w[(n - 6) % 6]; for (i = n - 5; i < n; i++) k = k "\n" w[i % 6]
    if ((k in from) && from[k] != FILENAME) { print FILENAME " and " from[k] ": " substr(k, 1, 60); exit }
    from[k] = FILENAME }' src/ops/op_*.c)
if [ -n "$dup" ]; then
  echo "FAIL test_layers: six lines repeated in $dup"
  bad=$((bad + 1))
fi
[ -n "$build_dir" ] || echo "test_layers: calls not checked (give the build directory: tests/test_layers.sh BUILD_DIR)"
echo "test_layers: $checked includes, $calls uses of symbols across files and $(ls -d src/*/ | wc -l) rooms checked," \
  "$bad failed"
[ "$bad" = 0 ]
