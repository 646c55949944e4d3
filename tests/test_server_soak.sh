#!/usr/bin/env bash
# `wgllm serve` under a hostile soak (issue 27, item 8), on loopback with the default model: a slowloris crowd,
# oversized bodies and junk from many connections for 35 s while honest streaming clients keep their pace and lose
# nothing (tests/server/soak.mjs says what is checked). Native server only.
# Usage: tests/test_server_soak.sh BUILD_DIR  (ctest runs it from the repository root). SOAK_S, BASE_S, HONEST, CROWD
# change the soak's length, its baseline's, the honest clients and the slowloris connections per address.
set -u
BUILD="$(cd "${1:?usage: tests/test_server_soak.sh BUILD_DIR}" && pwd)"
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
TMP=$(mktemp -d)
. "$ROOT/tests/server/serve_lib.sh"
trap 'cleanup_servers; rm -rf "$TMP"' EXIT
need_tools node

start_server soak -np 4 --max-body 65536 --header-timeout 5 --body-timeout 5 --max-connections-per-ip 128 || exit 1
export WGLLM_SERVE_PORT=$SERVE_PORT WGLLM_SERVE_PID=$SERVE_PID
if timeout 150 node "$ROOT/tests/server/soak.mjs"; then ok "soak"; else bad "soak"; fi
stop_server "$SERVE_PID"
check "SIGTERM after the soak: exit 0" test "$STOP_STATUS" = 0

echo "test_server_soak: $([ $FAILED = 0 ] && echo "all passed" || echo "$FAILED FAILED")"
[ "$FAILED" = 0 ]
