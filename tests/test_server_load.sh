#!/usr/bin/env bash
# Load test of `wgllm serve` (docs/TESTING.md records its figures): the default model with 16 sessions on its KV
# pool, and tests/server/load.mjs's 20 concurrent streaming openai clients x 3 requests x 8 tokens (a fifth of them
# queued at any time); every request must complete with its token count and text, and the server's memory stay flat.
# Then a pool of one context under 8 sessions: 8 clients whose requests wait for blocks and are evicted and
# recomputed, each still with its text.
# Usage: tests/test_server_load.sh BUILD_DIR  (CLIENTS, REQUESTS, MAX_TOKENS, PARALLEL override the sizes; SERVE_ARGS
# adds server options, e.g. "--weights q4" or "--weights q4 --no-batch")
set -u
BUILD="$(cd "${1:?usage: tests/test_server_load.sh BUILD_DIR}" && pwd)"
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
TMP=$(mktemp -d)
. "$ROOT/tests/server/serve_lib.sh"
trap 'cleanup_servers; rm -rf "$TMP"' EXIT
need_tools node
need_node_server
# Under ASan freed memory waits in a quarantine (256 MiB, and 1 MiB a thread, by default) before it is reused,
# so the server's RSS grows while the quarantine fills whatever the server holds; bounded at 8 MiB (64 KiB a
# thread), RSS again measures what the server keeps (freed memory is still poisoned while it is quarantined).
if grep -q '^WGLLM_ASAN:BOOL=ON' "$BUILD/CMakeCache.txt" 2>/dev/null; then
  export ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}quarantine_size_mb=8:thread_local_quarantine_size_kb=64"
fi
# shellcheck disable=SC2086 # SERVE_ARGS: options, split on spaces
start_server load -np "${PARALLEL:-16}" ${SERVE_ARGS:-} || exit 1
export WGLLM_SERVE_PORT=$SERVE_PORT WGLLM_SERVE_PID=$SERVE_PID
CLIENTS=${CLIENTS:-20} REQUESTS=${REQUESTS:-3} node "$ROOT/tests/server/load.mjs"
rc=$?
stop_server "$SERVE_PID"
if [ "$STOP_STATUS" != 0 ]; then
  echo "FAILED: the server exited $STOP_STATUS on SIGTERM"
  tail -n 20 "$TMP/load.err"
  rc=1
fi
[ -n "${SERVE_ARGS:-}" ] && exit $rc # the pressure run is the default configuration's
# a pool of 512 tokens (one context of the default model) under 8 sessions of 48-token requests (about 550 tokens
# at once)
start_server pressure -np 8 --kv-pool 512 || exit 1
export WGLLM_SERVE_PORT=$SERVE_PORT WGLLM_SERVE_PID=$SERVE_PID
CLIENTS=8 REQUESTS=2 MAX_TOKENS=48 node "$ROOT/tests/server/load.mjs" || rc=1
stop_server "$SERVE_PID"
if [ "$STOP_STATUS" != 0 ]; then
  echo "FAILED: the pressure server exited $STOP_STATUS on SIGTERM"
  tail -n 20 "$TMP/pressure.err"
  rc=1
fi
exit $rc
