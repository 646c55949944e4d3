#!/usr/bin/env bash
# `wgllm serve`'s structured output and tool calls through the openai npm client, on the default model:
# tests/server/structured.mjs (every schema of tests/data/grammar/schemas/ as response_format json_schema, each answer
# parsed and validated; json_object, GBNF, llama-server's json_schema, refusals, logit_bias), then
# tests/server/tools.mjs on servers whose chat template teaches each tool format: the named chatml (hermes) and llama3
# (llama3_json), the real Qwen 3, Llama 3.2 and Mistral v0.3 templates of tests/data/chat/ (--chat-template-file) and
# the named gemma (tool_code: "required" refused), and gpt-oss's harmony on tests/data/models/gpt_oss_gguf (a random
# model with gpt-oss's template and special tokens: no marker in content or reasoning, the reasoning of a call sent
# back to the template, forced calls through the call's header in the prompt: a named function and "required" with one
# tool; "required" over two tools refused). The sanitized build (ASAN_OPTIONS set: some 3 times slower) runs
# 6 of the schemas and two of the templates.
# Usage: tests/test_server_tools.sh BUILD_DIR (ctest runs it from the repository root).
set -u
BUILD="$(cd "${1:?usage: tests/test_server_tools.sh BUILD_DIR}" && pwd)"
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
TMP=$(mktemp -d)
. "$ROOT/tests/server/serve_lib.sh"
trap 'cleanup_servers; rm -rf "$TMP"' EXIT
need_tools node
SAN=${ASAN_OPTIONS:+1}

start_server structured -np 2 || exit 1
echo "--- structured output: $(ls "$ROOT"/tests/data/grammar/schemas/*.json | wc -l) schemas${SAN:+ (6 of them: sanitized build)}"
if WGLLM_SERVE_PORT=$SERVE_PORT WGLLM_SERVE_KEY= WGLLM_STRUCTURED_SUBSET=${SAN:+6} node "$ROOT/tests/server/structured.mjs"; then
  ok "structured output"
else
  bad "structured output"
fi
stop_server "$SERVE_PID"

# the family templates of the chat fixtures, as files
for f in qwen3 llama3.2 mistral_v0.3; do
  node -e 'const j = JSON.parse(require("fs").readFileSync(process.argv[1], "utf8")); process.stdout.write(j.template)' \
    "$ROOT/tests/data/chat/$f.json" >"$TMP/$f.jinja"
done
runs=("chatml hermes --chat-template chatml" "mistral mistral --chat-template-file $TMP/mistral_v0.3.jinja")
[ -z "$SAN" ] && runs+=("llama3 llama3_json --chat-template llama3" "qwen3 hermes --chat-template-file $TMP/qwen3.jinja"
  "llama3.2 llama3_json --chat-template-file $TMP/llama3.2.jinja" "gemma gemma --chat-template gemma")
for r in "${runs[@]}"; do
  read -r name format args <<<"$r"
  # -c 1536: a tools prompt of these templates is some 700 tokens of the default model (its trained 512 is exceeded;
  # the format, not the text, is under test)
  start_server "tools_$name" -np 1 -c 1536 $args || exit 1
  echo "--- tool calls: $name ($format)"
  if WGLLM_SERVE_PORT=$SERVE_PORT WGLLM_SERVE_KEY= WGLLM_TOOLS_FORMAT=$format node "$ROOT/tests/server/tools.mjs"; then
    ok "tools $name"
  else
    bad "tools $name"
  fi
  stop_server "$SERVE_PID"
done
# gpt-oss's harmony: the replies' channels parsed, and forced calls, on a model of its template and tokenizer
MODEL="$ROOT/tests/data/models/gpt_oss_gguf/model.gguf" start_server tools_harmony -np 1 -c 2048 || exit 1
echo "--- tool calls: gpt_oss_gguf (harmony)"
if WGLLM_SERVE_PORT=$SERVE_PORT WGLLM_SERVE_KEY= WGLLM_TOOLS_FORMAT=harmony node "$ROOT/tests/server/tools.mjs"; then
  ok "tools harmony"
else
  bad "tools harmony"
fi
stop_server "$SERVE_PID"
echo "test_server_tools: $([ $FAILED = 0 ] && echo "all passed" || echo "$FAILED FAILED")"
[ "$FAILED" = 0 ]
