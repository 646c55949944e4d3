#!/usr/bin/env bash
# `suffix` (fill in the middle) of /v1/completions end to end: the qwen3 fixture's directory with a byte-level
# tokenizer of its 320 tokens whose last three are Qwen2.5-Coder's FIM markers (tests/tools/embed_tokenizer.py --fim),
# served; tests/server/fim.mjs checks that a prompt with a suffix is the model continuing
# <|fim_prefix|>PROMPT<|fim_suffix|>SUFFIX<|fim_middle|> as ids, greedy, the same text and token counts.
# Usage: tests/test_server_fim.sh BUILD_DIR (ctest runs it from the repository root).
set -u
BUILD="$(cd "${1:?usage: tests/test_server_fim.sh BUILD_DIR}" && pwd)"
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
TMP=$(mktemp -d)
. "$ROOT/tests/server/serve_lib.sh"
trap 'cleanup_servers; rm -rf "$TMP"' EXIT
need_tools node curl python3

mkdir "$TMP/fim"
for f in config.json model.safetensors; do
  ln -s "$ROOT/tests/data/models/qwen3/$f" "$TMP/fim/$f"
done
python3 "$ROOT/tests/tools/embed_tokenizer.py" "$TMP/fim/tokenizer.json" --fim
MODEL="$TMP/fim"
start_server fim -np 1 -c 128 || exit 1
if WGLLM_SERVE_PORT=$SERVE_PORT node "$ROOT/tests/server/fim.mjs"; then ok "suffix: fill in the middle"; else
  bad "suffix: fill in the middle"; fi
stop_server "$SERVE_PID"
check "stopped: exit 0" test "$STOP_STATUS" = 0
[ "$FAILED" = 0 ] && echo "test_server_fim: all passed" || echo "test_server_fim: $FAILED FAILED"
[ "$FAILED" = 0 ]
