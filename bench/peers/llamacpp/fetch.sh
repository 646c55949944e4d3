#!/usr/bin/env bash
# Fetches prebuilt llama.cpp (release v0.5.0, as built by node-llama-cpp 3.22.1) from npm, checks each tarball
# against its pinned sha512 integrity, takes the matching headers from the llama.cpp git bundle that ships in
# the node-llama-cpp package (no vendored headers), and builds llcbench next to the libraries it needs.
#   bench/peers/llamacpp/fetch.sh   -> lib/ (llcbench + the .so files it loads), dist/llcbench-linux-x64-vulkan.tar.xz
# (both in this folder, or in $LLC_DIR). lib/, .pkg/ and dist/ are ignored by git (the repository's .gitignore).
# Needs: npm, openssl, git, tar, xz, cc. Re-running is cheap (the checked tarballs are kept in .pkg/); NO_XZ=1 skips
# the packing. Carry to the GPU machine (no package registry there) either bench/peers/llamacpp/dist (about 6 MiB) or
# bench/peers/llamacpp/lib (about 49 MiB); run_device.sh takes whichever it finds.
set -euo pipefail
HERE="$(cd "$(dirname "$0")" && pwd)"
D="${LLC_DIR:-$HERE}"  # where .pkg/, lib/ and dist/ go (LLC_DIR: elsewhere, e.g. when this folder is read-only)
PKG="$D/.pkg" LIB="$D/lib" DIST="$D/dist"

BIN_SPEC=@node-llama-cpp/linux-x64-vulkan@3.22.1
BIN_SRI='sha512-bBxqU+JOcBu1nb5Qj2zcMci+JByT1E8EajHvYodyNfVIPkEhXh+/HMwR1/BT7xP08YK0hks+kM8fglER0P8JEg=='
SRC_SPEC=node-llama-cpp@3.22.1  # ships llama/gitRelease.bundle: llama.cpp v0.5.0 squashed into one commit
SRC_SRI='sha512-bltIipuWmc123H7tMIgDGKSsSrhmhlQYeVUC48XTjVW7XGJJiJJyCdlTMzQ/LiWoPkGDpcL4FviDpgw7qfTiDw=='
SRC_COMMIT=de3ff815ea7d559ee917f063901b8986f038abc6  # HEAD of that bundle (llama.cpp CMakeLists: version 0.5.0)
CPU_VARIANT=${CPU_VARIANT:-haswell}  # one CPU backend (AVX2+FMA+F16C): any x86-64 GPU host of the last decade
NEEDED="libllama.vulkan.v0.5.0.so libggml.vulkan.v0.5.0.so libggml-base.so libggml-vulkan.so libggml-cpu-$CPU_VARIANT.so"
HEADERS="include/llama.h ggml/include/ggml.h ggml/include/ggml-backend.h ggml/include/ggml-alloc.h
         ggml/include/ggml-cpu.h ggml/include/ggml-opt.h ggml/include/gguf.h"

log() { echo "fetch.sh: $*" >&2; }
sri() { echo "sha512-$(openssl dgst -sha512 -binary "$1" | base64 -w0)"; }

# fetch_npm SPEC SRI OUT: npm pack into a scratch dir, check the integrity, keep the tarball as OUT
fetch_npm() {
  local spec="$1" want="$2" out="$3" tmp f got
  if [ -f "$out" ] && [ "$(sri "$out")" = "$want" ]; then log "$spec: cached, $want"; return 0; fi
  tmp=$(mktemp -d)
  log "npm pack $spec"
  (cd "$tmp" && npm pack --silent "$spec" >/dev/null)
  f=$(ls "$tmp"/*.tgz)
  got=$(sri "$f")
  log "$spec: $got"
  if [ "$got" != "$want" ]; then log "integrity mismatch for $spec: want $want"; rm -rf "$tmp"; exit 1; fi
  mv "$f" "$out"; rm -rf "$tmp"
}

mkdir -p "$PKG" "$LIB" "$DIST"
fetch_npm "$BIN_SPEC" "$BIN_SRI" "$PKG/linux-x64-vulkan.tgz"
fetch_npm "$SRC_SPEC" "$SRC_SRI" "$PKG/node-llama-cpp.tgz"

# the libraries llcbench loads (libllama-common.so and the other CPU variants are not needed)
rm -f "$LIB"/*.so "$LIB"/*.so.*
for f in $NEEDED; do
  tar -xzf "$PKG/linux-x64-vulkan.tgz" -C "$LIB" --strip-components=3 "package/bins/linux-x64-vulkan/$f"
done
tar -xzOf "$PKG/linux-x64-vulkan.tgz" package/bins/linux-x64-vulkan/_nlcBuildMetadata.json > "$LIB/_nlcBuildMetadata.json"
# the Vulkan loader of this machine (Debian 12 libvulkan1), for a GPU machine that has none; the ICD comes from there
for l in /usr/lib/x86_64-linux-gnu/libvulkan.so.1 /usr/lib64/libvulkan.so.1; do
  if [ -f "$l" ]; then cp -L "$l" "$LIB/libvulkan.so.1"; break; fi
done

# headers from the llama.cpp git bundle, at the pinned commit
if [ ! -f "$PKG/include/.commit" ] || [ "$(cat "$PKG/include/.commit")" != "$SRC_COMMIT" ]; then
  tmp=$(mktemp -d)
  tar -xzf "$PKG/node-llama-cpp.tgz" -C "$tmp" package/llama/gitRelease.bundle
  git init -q --bare "$tmp/src.git"
  git -C "$tmp/src.git" fetch -q "$tmp/package/llama/gitRelease.bundle" HEAD:refs/heads/release
  got=$(git -C "$tmp/src.git" rev-parse refs/heads/release)
  if [ "$got" != "$SRC_COMMIT" ]; then log "bundle HEAD is $got, want $SRC_COMMIT"; rm -rf "$tmp"; exit 1; fi
  rm -rf "$PKG/include"; mkdir -p "$PKG/include"
  for h in $HEADERS; do git -C "$tmp/src.git" show "$SRC_COMMIT:$h" > "$PKG/include/$(basename "$h")"; done
  echo "$SRC_COMMIT" > "$PKG/include/.commit"
  rm -rf "$tmp"
fi

log "building llcbench"
${CC:-cc} -O2 -std=c11 -Wall -Wextra -Wno-unused-parameter -I"$PKG/include" "$HERE/llcbench.c" -o "$LIB/llcbench" \
  -L"$LIB" -l:libllama.vulkan.v0.5.0.so -l:libggml.vulkan.v0.5.0.so -l:libggml-base.so -lm -Wl,-rpath,'$ORIGIN'
"$LIB/llcbench" devices >/dev/null

if [ "${NO_XZ:-0}" != 1 ]; then
  log "packing dist/llcbench-linux-x64-vulkan.tar.xz"
  tar -C "$D" -cf - lib | xz -6 -T1 > "$DIST/llcbench-linux-x64-vulkan.tar.xz.tmp"
  mv "$DIST/llcbench-linux-x64-vulkan.tar.xz.tmp" "$DIST/llcbench-linux-x64-vulkan.tar.xz"
fi
for f in "$LIB" "$DIST"/*.tar.xz; do [ -e "$f" ] && log "size $(du -sh "$f" | cut -f1) $f"; done
log "ready: $LIB/llcbench (llama.cpp $(cat "$PKG/include/.commit"), CPU backend $CPU_VARIANT)"
