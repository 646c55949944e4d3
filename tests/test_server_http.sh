#!/usr/bin/env bash
# `wgllm serve`'s HTTP edge (issue 27, items 3 and 4), on loopback with the default model: request framing,
# Content-Type, Host and Origin checks (tests/server/http_edge.mjs, raw sockets); slow and idle connections, a
# slowloris of 600 connections from one address beside an honest client (tests/server/slowloris.mjs); amplifying
# inputs: a 31.5 MB prompt beside a stream, JSON that would build far more than its bytes, /tokenize's pieces
# (tests/server/amplify.mjs).
# A lost device (WGLLM_TEST_DEVICE_LOSS_STEP): the requests in flight fail naming it, /health 503, the model reloaded
# and the same greedy text served; or, the model gone, the server exits 1 (tests/server/device_loss.mjs).
# Usage: tests/test_server_http.sh BUILD_DIR  (ctest runs it from the repository root). HTTP_PARTS="edge slow amp
# lost" (the default: all) picks parts; WGLLM_SERVE_IMPL=node runs them on the Node server (test_server_node runs
# edge and lost there: the slow and amplifying clients are the native transport's limits).
set -u
BUILD="$(cd "${1:?usage: tests/test_server_http.sh BUILD_DIR}" && pwd)"
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
TMP=$(mktemp -d)
. "$ROOT/tests/server/serve_lib.sh"
trap 'cleanup_servers; rm -rf "$TMP"' EXIT
need_tools curl node python3

PARTS=" ${HTTP_PARTS:-edge slow amp lost} "
part() { [[ "$PARTS" == *" $1 "* ]]; }
need_node_server

"${SERVE[@]}" -m "$MODEL" --port 0 --allowed-hosts 'a,http://x' 2>"$TMP/e1"
check "--allowed-hosts with a URL is a usage error" sh -c "test $? = 2 && grep -q 'not a host name' '$TMP/e1'"

if part edge; then
  echo "--- framing, Content-Type, Host, Origin"
  start_server edge -np 1 --max-body 4096 --allowed-hosts example.test || exit 1
  export WGLLM_SERVE_PORT=$SERVE_PORT WGLLM_SERVE_PID=$SERVE_PID
  if node "$ROOT/tests/server/http_edge.mjs"; then ok "http_edge"; else bad "http_edge"; fi
  stop_server "$SERVE_PID"
  check "SIGTERM: exit 0" test "$STOP_STATUS" = 0
fi

if part slow; then
  echo "--- slow and idle connections"
  start_server slow -np 2 --max-connections-per-ip 64 --header-timeout 3 --body-timeout 3 || exit 1
  export WGLLM_SERVE_PORT=$SERVE_PORT WGLLM_SERVE_PID=$SERVE_PID
  if timeout 120 node "$ROOT/tests/server/slowloris.mjs"; then ok "slowloris"; else bad "slowloris"; fi
  stop_server "$SERVE_PID"
  check "SIGTERM: exit 0" test "$STOP_STATUS" = 0
fi

if part amp; then
  echo "--- amplification: a 31.5 MB prompt beside a stream, JSON that builds more than its bytes, /tokenize's pieces"
  start_server amp -np 2 --max-body 33554432 --max-body-total 50000000 || exit 1
  export WGLLM_SERVE_PORT=$SERVE_PORT WGLLM_SERVE_PID=$SERVE_PID
  if timeout 300 node "$ROOT/tests/server/amplify.mjs"; then ok "amplify"; else bad "amplify"; fi
  stop_server "$SERVE_PID"
  check "SIGTERM: exit 0" test "$STOP_STATUS" = 0
fi

if part lost; then
  echo "--- a lost device (WGLLM_TEST_DEVICE_LOSS_STEP): the requests in flight fail, /health 503, the model reloaded"
  WARMUP=1 WGLLM_TEST_DEVICE_LOSS_STEP=30 start_server lost -np 2 || exit 1
  export WGLLM_SERVE_PORT=$SERVE_PORT WGLLM_SERVE_PID=$SERVE_PID WGLLM_SERVE_ERR="$TMP/lost.err"
  if DEVICE_LOSS_EXPECT=recover timeout 180 node "$ROOT/tests/server/device_loss.mjs"; then ok "device_loss (recovered)"; else
    bad "device_loss (recovered)"; tail -5 "$TMP/lost.err"; fi
  stop_server "$SERVE_PID"
  check "SIGTERM after the reload: exit 0" test "$STOP_STATUS" = 0

  echo "--- a lost device whose model cannot be opened again: the server exits 1, naming the loss"
  cp -r "$MODEL" "$TMP/gone-model"
  MODEL="$TMP/gone-model" WGLLM_TEST_DEVICE_LOSS_STEP=30 start_server gone -np 2 || exit 1
  rm -rf "$TMP/gone-model"
  export WGLLM_SERVE_PORT=$SERVE_PORT WGLLM_SERVE_PID=$SERVE_PID WGLLM_SERVE_ERR="$TMP/gone.err"
  if DEVICE_LOSS_EXPECT=exit timeout 180 node "$ROOT/tests/server/device_loss.mjs"; then ok "device_loss (exit)"; else
    bad "device_loss (exit)"; fi
  if kill -0 "$SERVE_PID" 2>/dev/null; then # device_loss.mjs waited 15 s for the exit: never wait on
    bad "the server still runs after the failed reload (killed)"
    kill -KILL "$SERVE_PID"
  fi
  wait "$SERVE_PID"
  check "the server's exit status after the failed reload: 1" test $? = 1
fi

echo "test_server_http: $([ $FAILED = 0 ] && echo "all passed" || echo "$FAILED FAILED")"
[ "$FAILED" = 0 ]
