#!/usr/bin/env bash
# POST /v1/embeddings of `wgllm serve` (tools/serve/serve_embed.c), through the openai npm client and raw requests
# (tests/server/embeddings.mjs): on the default model (a context of 64: every input form, base64, batches, the
# refusals and hostile bodies), then on the qwen3_embed fixture's GGUF (its pooling: the last token, L2-normalised;
# the vectors transformers gave in tests/data/models/qwen3_embed_gguf/emb_ref.json), and on the fixture's directory
# (no LM head: an embedding warm-up, chat and completions refused).
# Usage: tests/test_server_embed.sh BUILD_DIR (ctest runs it from the repository root).
set -u
BUILD="$(cd "${1:?usage: tests/test_server_embed.sh BUILD_DIR}" && pwd)"
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
TMP=$(mktemp -d)
. "$ROOT/tests/server/serve_lib.sh"
trap 'cleanup_servers; rm -rf "$TMP"' EXIT
need_tools node curl python3
need_node_server

start_server default -np 2 -c 64 || exit 1
if WGLLM_SERVE_PORT=$SERVE_PORT WGLLM_EMBED_CONTEXT=64 node "$ROOT/tests/server/embeddings.mjs"; then
  ok "embeddings on the default model"
else
  bad "embeddings on the default model"
fi
stop_server "$SERVE_PID"
check "SIGTERM: exit 0" test "$STOP_STATUS" = 0

MODEL="$ROOT/tests/data/models/qwen3_embed_gguf/model.gguf"
start_server fixture -np 1 -c 128 || exit 1
if WGLLM_SERVE_PORT=$SERVE_PORT WGLLM_EMBED_REF="$ROOT/tests/data/models/qwen3_embed_gguf/emb_ref.json" \
  node "$ROOT/tests/server/embeddings.mjs"; then
  ok "embeddings on the qwen3_embed GGUF: transformers' vectors"
else
  bad "embeddings on the qwen3_embed GGUF: transformers' vectors"
fi
stop_server "$SERVE_PID"

# the Qwen3-Embedding directory (no LM head) with a byte-level tokenizer of its 320 tokens beside its files: the
# warm-up is an embedding, chat and completions are 400 saying the model embeds only, the vectors are transformers'
mkdir "$TMP/embed_dir"
for f in config.json model.safetensors modules.json 1_Pooling; do
  ln -s "$ROOT/tests/data/models/qwen3_embed/$f" "$TMP/embed_dir/$f"
done
python3 "$ROOT/tests/tools/embed_tokenizer.py" "$TMP/embed_dir/tokenizer.json"
MODEL="$TMP/embed_dir"
WARMUP=1 start_server nohead -np 1 -c 128 || exit 1
check "a model without an LM head warms up (an embedding)" grep -q "^wgllm serve: warmed up" "$TMP/nohead.err"
for ep in chat/completions completions; do
  code=$(curl -s -o "$TMP/nohead.json" -w '%{http_code}' "http://127.0.0.1:$SERVE_PORT/v1/$ep" \
    -H "Content-Type: application/json" -d '{"messages": [{"role": "user", "content": "hi"}], "prompt": "the bee"}')
  check "/v1/$ep on a model without an LM head: 400 saying it embeds only" \
    sh -c "test $code = 400 && grep -q 'no LM head' '$TMP/nohead.json'"
done
if WGLLM_SERVE_PORT=$SERVE_PORT WGLLM_EMBED_REF="$ROOT/tests/data/models/qwen3_embed/emb_ref.json" \
  node "$ROOT/tests/server/embeddings.mjs"; then
  ok "embeddings on the qwen3_embed directory: transformers' vectors"
else
  bad "embeddings on the qwen3_embed directory: transformers' vectors"
fi
stop_server "$SERVE_PID"
echo "test_server_embed: $FAILED failed"
[ "$FAILED" = 0 ]
