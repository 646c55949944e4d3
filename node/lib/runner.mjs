// Runs a wgllm program built for wasm32-wasi (web/web.mk: the CLI build-web/wgllm-cli.wasm, the bench
// build-web/wgllm-bench.wasm, the test programs build-web/tests/*.wasm, or any WASI command) on Node.js, as the native
// program runs: its arguments, the process's environment and working directory, the machine's files (web/wasi.js over
// node:fs), standard output and error unbuffered to the process's own, standard input, and the WebGPU of dawn.node
// (createGpu). Resolves to the program's exit status.
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { createGpu } from './gpu.mjs';
import { requireJspi } from './jspi.mjs';
import { nodeFs, readStdin, writeAll } from './node_fs.mjs';

const here = path.dirname(fileURLToPath(import.meta.url));

// In the repository (node/ beside web/web.mk) the sources' own web/*.js and build-web/'s wasm, so an edit or a
// rebuild is what runs; in the npm package the copies `make -f web/web.mk node` staged into node/web and node/wasm
const repoRoot = path.resolve(here, '../..');
const inRepo = fs.existsSync(path.join(repoRoot, 'web', 'web.mk'));

export function webDir() {
  const d = inRepo ? path.join(repoRoot, 'web') : path.resolve(here, '../web');
  if (fs.existsSync(path.join(d, 'wasi.js')) && fs.existsSync(path.join(d, 'webgpu.js'))) return d;
  throw new Error(`wgllm: web/wasi.js and web/webgpu.js not found in ${d}`);
}

// a built wasm file by name (wgllm.wasm, wgllm-cli.wasm, wgllm-bench.wasm): in WGLLM_WASM_DIR, else the repository's
// build-web/ (make -f web/web.mk programs) or the package's wasm/
export function wasmPath(name) {
  const d = process.env.WGLLM_WASM_DIR || (inRepo ? path.join(repoRoot, 'build-web') : path.resolve(here, '../wasm'));
  if (fs.existsSync(path.join(d, name))) return path.join(d, name);
  throw new Error(`wgllm: ${name} not found in ${d}${inRepo ? ' (make -f web/web.mk WEB_BUILD=build-web all programs, ' +
    'or WGLLM_WASM_DIR=the build directory)' : ''}`);
}

export async function webModules() {
  const d = webDir();
  const load = (f) => import(pathToFileURL(path.join(d, f)).href);
  const [webgpu, wasi, wgllm] = await Promise.all([load('webgpu.js'), load('wasi.js'), load('wgllm.js')]);
  return { createWebGPU: webgpu.createWebGPU, createWasi: wasi.createWasi, WasiExit: wasi.WasiExit,
    uploadFromFile: wgllm.uploadFromFile };
}

const compiled = new Map(); // wasm path -> WebAssembly.Module

// Runs the program at wasmPath with argv (argv[0] is the program's name as it sees it). options: { gpu (a GPU object;
// default createGpu()), env (default process.env), cwd (default process.cwd()), benchWasm (what the CLI's `bench`
// runs: wgllm-bench.wasm beside wasmPath by default) }. Resolves to the exit status.
export async function runWasm(wasmPath, argv, options = {}) {
  requireJspi();
  const { createWebGPU, createWasi, WasiExit, uploadFromFile } = await webModules();
  let mod = compiled.get(wasmPath);
  if (!mod) {
    mod = await WebAssembly.compile(fs.readFileSync(wasmPath));
    compiled.set(wasmPath, mod);
  }
  const gpu = options.gpu || await createGpu();
  const cwd = path.resolve(options.cwd || process.cwd());
  const webgpu = createWebGPU(gpu);
  // WGLLM_CWD: the working directory web/wasm_cwd.c changes to before main (WASI starts every program at "/")
  const env = { ...(options.env || process.env), WGLLM_CWD: cwd };
  const wasi = createWasi({ args: argv, env, cwd, fs: nodeFs, writeRaw: (fd, b) => writeAll(fd, b), readStdin });
  let instance = null;
  // the CLI's `wgllm bench ARGS` (web/cli_web.c): wgllm-bench.wasm run to its end on the same GPU object while the
  // CLI waits, suspended
  const runBench = new WebAssembly.Suspending(async (argc, argvPtr) => {
    const m = new Uint8Array(instance.exports.memory.buffer), d = new DataView(instance.exports.memory.buffer);
    const args = [];
    for (let i = 0; i < argc; i++) {
      const p = d.getUint32(argvPtr + 4 * i, true);
      let e = p;
      while (m[e]) e++;
      args.push(new TextDecoder().decode(m.subarray(p, e)));
    }
    const bench = options.benchWasm || path.join(path.dirname(wasmPath), 'wgllm-bench.wasm');
    if (!fs.existsSync(bench)) return -1;
    return runWasm(bench, args, { ...options, gpu });
  });
  const imports = { env: webgpu.imports, wasi_snapshot_preview1: wasi.imports,
    wgllm_host: { upload: uploadFromFile(wasi, webgpu, () => instance.exports), run_bench: runBench } };
  for (const imp of WebAssembly.Module.imports(mod)) {
    if (!imports[imp.module] || !(imp.name in imports[imp.module])) {
      throw new Error(`wgllm: ${wasmPath} imports ${imp.module}.${imp.name}, which this runner does not provide`);
    }
  }
  instance = await WebAssembly.instantiate(mod, imports);
  const ex = instance.exports;
  webgpu.attach(ex);
  wasi.attach(ex);
  const call = (name, ...a) => WebAssembly.promising(ex[name])(...a);
  let code = 0;
  try {
    if (ex._start) await call('_start'); // a WASI command: main, then exit
    else { // a reactor (web/web.mk's programs): the constructors, main, then exit (stdio flushed, proc_exit)
      if (ex._initialize) await call('_initialize');
      code = await call('__main_void');
      await call('exit', code);
    }
  } catch (e) {
    if (e instanceof WasiExit) code = e.code;
    else throw e;
  }
  return code;
}
