#!/usr/bin/env bash
# Packs a wgllm build made on this machine for run_device.sh on the GPU machine, which has neither a package
# registry nor the headers to build wgllm: wgllm, wgllm-bench (`wgllm bench` runs it from wgllm's folder),
# libwgllm.so.0, the libmicrohttpd wgllm links to and Dawn's libwebgpu_wrapper.so (third_party/dawn/lib), stripped,
# as wgllm-bin/wgllm-linux-x64.tar.xz beside this script (ignored by git; about 5 MiB: the checkout and what a
# device call carries must stay under 64 MiB, and Dawn's library alone is 21 MiB unpacked). run_device.sh unpacks
# it when it is there and WGLLM_BIN is unset.
#   make build && bench/peers/llamacpp/pack_wgllm.sh [BUILD_DIR]        (BUILD_DIR: default build)
set -euo pipefail
HERE="$(cd "$(dirname "$0")" && pwd)"
ROOT="$(cd "$HERE/../../.." && pwd)"
B="${1:-build}"
case "$B" in /*) ;; *) B="$ROOT/$B" ;; esac
DAWN="$ROOT/third_party/dawn/lib/libwebgpu_wrapper.so"
for f in "$B/wgllm" "$B/wgllm-bench" "$B/libwgllm.so.0" "$DAWN"; do
  [ -e "$f" ] || { echo "pack_wgllm.sh: no $f (make build makes it)" >&2; exit 1; }
done
W="$HERE/wgllm-bin"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
mkdir -p "$tmp/wgllm" "$W"
cp -L "$B/wgllm" "$B/wgllm-bench" "$B/libwgllm.so.0" "$DAWN" "$tmp/wgllm/"
mhd=$(ldd "$B/wgllm" | awk '/libmicrohttpd/ { print $3 }')
if [ -n "$mhd" ]; then cp -L "$mhd" "$tmp/wgllm/"; fi
chmod u+w "$tmp"/wgllm/*
strip --strip-unneeded "$tmp"/wgllm/*
tar -C "$tmp" -cf - wgllm | xz -6 -T0 > "$W/wgllm-linux-x64.tar.xz.tmp"
mv "$W/wgllm-linux-x64.tar.xz.tmp" "$W/wgllm-linux-x64.tar.xz"
echo "pack_wgllm.sh: $(du -sh "$W/wgllm-linux-x64.tar.xz" | cut -f1) $W/wgllm-linux-x64.tar.xz: $(cd "$tmp/wgllm" && echo *)" >&2
