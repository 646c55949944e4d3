#!/usr/bin/env bash
# Installs the build into a temporary prefix (cmake --install), then builds examples/generate.c against the
# installed copy twice, through pkg-config and through find_package(wgllm), and runs both on the bundled model.
# Checks that the installed library has a versioned soname, exports only wgllm_* symbols, holds none of src/dev/'s
# code and finds Dawn in the prefix, not in the checkout.
# Usage (from the repository root): tests/test_install.sh BUILD_DIR
set -u
build=$(cd "$1" && pwd)
src=$(pwd)
tmp=$(mktemp -d /tmp/wgllm-install-XXXXXX)
trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL test_install: $*"; exit 1; }
checks=0
ok() { checks=$((checks + 1)); echo "  ok: $*"; }

cmake --install "$build" --prefix "$tmp/prefix" > "$tmp/install.log" 2>&1 || { cat "$tmp/install.log"; fail "cmake --install"; }
lib=$(ls "$tmp"/prefix/lib*/libwgllm.so.*.*.* 2>/dev/null | head -1)
[ -n "$lib" ] || fail "no versioned libwgllm.so.X.Y.Z in the prefix"
soname=$(readelf -d "$lib" | sed -n 's/.*Library soname: \[\(.*\)\]/\1/p')
[ "$soname" = "libwgllm.so.$(sed -n 's/#define WGLLM_VERSION_MAJOR //p' include/wgllm.h)" ] || fail "soname '$soname'"
ok "installed $lib, soname $soname"
others=$(nm -D --defined-only "$lib" | awk '{print $3}' | grep -v '^wgllm_')
[ -z "$others" ] || fail "the library exports symbols outside the API: $(echo $others | cut -c1-200)"
ok "exports only wgllm_* ($(nm -D --defined-only "$lib" | wc -l) symbols)"
# the developer code (src/dev/, the static wgllm_dev) is not in it at all: no hidden symbol of it either
if nm "$lib" > "$tmp/symbols" 2>/dev/null && [ -s "$tmp/symbols" ]; then
  dev=$(awk '{print $NF}' "$tmp/symbols" | grep -E '^(llm_model_synthetic|llm_synthetic_|gguf_writer_|gguf_sink_)')
  [ -z "$dev" ] || fail "the library holds developer code: $(echo $dev | cut -c1-200)"
  ok "no developer code (synthetic models, the GGUF writer) in it"
fi
readelf -d "$lib" | grep -q "$src" && fail "the installed library's RUNPATH points into the checkout"
dawn=$(LD_LIBRARY_PATH= ldd "$lib" | sed -n 's/.*libwebgpu_wrapper.so => \([^ ]*\).*/\1/p')
case "$dawn" in "$tmp"/prefix/*) ok "Dawn found at $dawn" ;; *) fail "Dawn resolved to '$dawn', not inside the prefix" ;; esac
[ -x "$tmp/prefix/bin/wgllm" ] || fail "no bin/wgllm"
"$tmp/prefix/bin/wgllm" --help > /dev/null 2>&1 || fail "installed wgllm --help"
LD_LIBRARY_PATH= "$tmp/prefix/bin/wgllm" bench --help > /dev/null 2>&1 || fail "installed wgllm bench (wgllm-bench) --help"
ok "bin/wgllm and bin/wgllm-bench run from the prefix"

pcdir=$(dirname "$(ls "$tmp"/prefix/lib*/pkgconfig/wgllm.pc)")
flags=$(PKG_CONFIG_PATH="$pcdir" pkg-config --cflags --libs wgllm) || fail "pkg-config --cflags --libs wgllm"
cc -std=c11 -Wall -Werror -o "$tmp/gen_pc" "$src/examples/generate.c" $flags || fail "compiling the example with: $flags"
ok "examples/generate.c built with pkg-config ($flags)"

mkdir -p "$tmp/cm"
cat > "$tmp/cm/CMakeLists.txt" <<CM
cmake_minimum_required(VERSION 3.20)
project(consumer C)
find_package(wgllm ${WGLLM_VERSION:-0} REQUIRED)
add_executable(gen_cm $src/examples/generate.c)
target_link_libraries(gen_cm PRIVATE wgllm::wgllm)
CM
{ cmake -S "$tmp/cm" -B "$tmp/cm/build" -DCMAKE_PREFIX_PATH="$tmp/prefix" && cmake --build "$tmp/cm/build"; } \
  > "$tmp/cm.log" 2>&1 || { cat "$tmp/cm.log"; fail "find_package(wgllm) consumer"; }
ok "examples/generate.c built with find_package(wgllm)"

libdir=$(dirname "$lib")
for exe in "$tmp/gen_pc" "$tmp/cm/build/gen_cm"; do
  out=$(LD_LIBRARY_PATH="$libdir" "$exe" models/default "In the beginning" 8 2>&1) || fail "$exe: $out"
  [ -n "$out" ] || fail "$exe printed nothing"
  ok "$(basename "$exe") generated: $(echo "$out" | tr '\n' ' ' | cut -c1-80)"
done
echo "test_install: $checks checks, 0 failed"
