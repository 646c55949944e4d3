#!/usr/bin/env bash
# The browser tests (ctest's test_web): builds the wasm library and the test programs for the browser
# (web/web.mk, into BUILD/web) and runs tests/web/run.mjs: headless Chromium (Debian's, WebGPU on SwiftShader)
# driven by playwright-core, both installed by scripts/bootstrap.sh. Skipped (exit 77) only when the machine has
# no chromium at all. Usage: tests/test_web.sh BUILD (the native build, whose wgllm the results are compared with)
set -uo pipefail
cd "$(dirname "$0")/.." || exit 1
build=${1:-build}
chromium=${WGLLM_CHROMIUM:-/usr/bin/chromium}
if [ ! -x "$chromium" ]; then
  echo "test_web: SKIPPED: no browser at $chromium (scripts/bootstrap.sh installs Debian's chromium)"
  exit 77
fi
web="$build/web"
if ! make --no-print-directory -s -f web/web.mk WEB_BUILD="$web" -j 2 all tests >"$build/web-build.log" 2>&1; then
  tail -40 "$build/web-build.log"
  echo "test_web: the browser build failed (make -f web/web.mk WEB_BUILD=$web; log: $build/web-build.log)"
  exit 1
fi
exec node tests/web/run.mjs "$build" "$web"
