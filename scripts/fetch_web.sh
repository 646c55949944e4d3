#!/usr/bin/env bash
# Fetches what the browser build (make web) and its tests need beyond Debian's binary packages: the source packages
# of cJSON and PCRE2 from Debian's archive (the wasm library compiles them itself; the native build links Debian's
# libcjson and libpcre2-8 of the same upstream versions), each file checked against its pinned sha256 and unpacked
# with dpkg-source (Debian's patches applied) into third_party/web/src/<name>/, and npm's playwright-core (the
# browser tests' driver, pointed at Debian's chromium) into third_party/node_modules/playwright-core, checked
# against its pinned sha512 integrity. Idempotent: when every stamp matches it returns at once, offline.
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
DEPS="$ROOT/third_party"
CACHE="$DEPS/cache"
SRC="$DEPS/web/src"
ARCHIVE=http://deb.debian.org/debian/pool/main

# name  directory in the archive  files (the .dsc first), each "file sha256"
CJSON=(cjson c/cjson
  "cjson_1.7.15-1+deb12u4.dsc 764c2de141d680f4fb4cada30c526dacaa30ead061b9b9c34f2b81e2df0f8439"
  "cjson_1.7.15.orig.tar.gz 5308fd4bd90cef7aa060558514de6a1a4a0819974a26e6ed13973c5f624c24b2"
  "cjson_1.7.15-1+deb12u4.debian.tar.xz afd19a970966cf534ff1e9ec077d710a5e7e78eb4ec9b499c8bdc32e55da12cb")
# 10.42-1: the source of bookworm's release; bookworm-security's 10.42-1+deb12u2 (the native library) backports fixes
# of the JIT and of malformed-pattern handling, neither of which changes what a valid pattern matches
PCRE2=(pcre2 p/pcre2
  "pcre2_10.42-1.dsc 726dafe7a8d07332d4df61edf23f384ddb158b2b263846273d1103b6b9a7c176"
  "pcre2_10.42.orig.tar.gz c33b418e3b936ee3153de2c61cc638e7e4fe3156022a5c77d0711bcbb9d64f1f"
  "pcre2_10.42-1.diff.gz 8267c3acacb04e8a077235f676187393e295443fc16ff46ddbe5f6476879c8cb")
PW_PKG=playwright-core@1.55.0
PW_SRI='sha512-GvZs4vU3U5ro2nZpeiwyb0zuFaqb9sUiAJuyrWpcGouD8y9/HLgGbNRjIph7zU9D3hnPaisMl9zG9CgFi/biIg=='
PW_DIR="$DEPS/node_modules/playwright-core"

log() { echo "fetch_web: $*" >&2; }

# fetch_source NAME DIR FILE-SHA...: downloads and checks each file, unpacks the .dsc with dpkg-source
fetch_source() {
  local name=$1 dir=$2
  shift 2
  local want="$*" stamp="$SRC/$name/.stamp"
  if [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$want" ]; then return 0; fi
  mkdir -p "$CACHE/debsrc"
  local dsc=""
  for entry in "$@"; do
    local f sha
    read -r f sha <<<"$entry"
    local path="$CACHE/debsrc/$f"
    if [ ! -f "$path" ] || [ "$(sha256sum "$path" | cut -d' ' -f1)" != "$sha" ]; then
      log "downloading $ARCHIVE/$dir/$f"
      curl -sSfL -o "$path.tmp" "$ARCHIVE/$dir/${f//+/%2b}" || { log "cannot download $f"; exit 1; }
      local got
      got=$(sha256sum "$path.tmp" | cut -d' ' -f1)
      if [ "$got" != "$sha" ]; then
        log "sha256 mismatch for $f: got $got, want $sha"
        rm -f "$path.tmp"
        exit 1
      fi
      mv "$path.tmp" "$path"
    fi
    case "$f" in *.dsc) dsc=$path ;; esac
  done
  rm -rf "$SRC/$name" "$SRC/$name.tmp"
  mkdir -p "$SRC"
  # the .dsc's own checksums were pinned above; its signature would need Debian's developer keyring
  dpkg-source --no-check -x "$dsc" "$SRC/$name.tmp" >/dev/null
  mv "$SRC/$name.tmp" "$SRC/$name"
  echo "$want" >"$stamp"
}

fetch_source "${CJSON[@]}"
fetch_source "${PCRE2[@]}"

if [ "$(cat "$PW_DIR/.stamp" 2>/dev/null)" != "$PW_SRI" ]; then
  mkdir -p "$CACHE"
  tgz="$CACHE/playwright-core.tgz"
  if [ ! -f "$tgz" ] || [ "sha512-$(openssl dgst -sha512 -binary "$tgz" | base64 -w0)" != "$PW_SRI" ]; then
    tmp=$(mktemp -d)
    log "npm pack $PW_PKG"
    (cd "$tmp" && npm pack --silent "$PW_PKG" >/dev/null)
    f=$(ls "$tmp"/*.tgz)
    got="sha512-$(openssl dgst -sha512 -binary "$f" | base64 -w0)"
    if [ "$got" != "$PW_SRI" ]; then
      log "integrity mismatch for $PW_PKG: got $got, want $PW_SRI"
      rm -rf "$tmp"
      exit 1
    fi
    mv "$f" "$tgz"
    rm -rf "$tmp"
  fi
  rm -rf "$PW_DIR" && mkdir -p "$PW_DIR"
  tar -xzf "$tgz" -C "$PW_DIR" --strip-components=1
  echo "$PW_SRI" >"$PW_DIR/.stamp"
fi
