// A WebGPU `GPU` object on Node.js from npm `webgpu`'s dawn.node (the Dawn project's Node binding, a newer Dawn than
// the native build links), with the Dawn flags wgllm wants chosen here, once per process:
//
//   import { createGpu } from './gpu.mjs';
//   const gpu = await createGpu();           // { subgroupMatrix: true } by default
//   const adapter = await gpu.requestAdapter();
//
// The flags are dawn.node's create() arguments ("key=value" strings). WGLLM_DAWN_FLAGS (a comma list of them; an
// item without "=" continues the item before it, so "backend=vulkan,enable-dawn-features=a,b" is two flags)
// replaces the choice. WGLLM_DAWN_NODE names a dawn.node file to load in place of the webgpu package's.
import fs from 'node:fs';
import path from 'node:path';
import { createRequire } from 'node:module';
import { fileURLToPath } from 'node:url';

const require = createRequire(import.meta.url);
const here = path.dirname(fileURLToPath(import.meta.url));
const NVIDIA = 0x10de; // PCI vendor id

// the webgpu package's dist/<platform>-<arch>/dawn.node: where Node resolves `webgpu` from this file (an installed
// package's dependency), else the repository's third_party/node_modules (scripts/fetch_node.sh)
export function dawnNodePath() {
  if (process.env.WGLLM_DAWN_NODE) return path.resolve(process.env.WGLLM_DAWN_NODE);
  const arch = process.platform === 'darwin' ? 'universal' : process.arch;
  const rel = path.join('dist', `${process.platform}-${arch}`, 'dawn.node');
  const dirs = [];
  try { dirs.push(path.dirname(require.resolve('webgpu/package.json'))); } catch (e) { /* not installed beside us */ }
  dirs.push(path.resolve(here, '../../third_party/node_modules/webgpu'));
  for (const d of dirs) if (fs.existsSync(path.join(d, rel))) return path.join(d, rel);
  throw new Error(`wgllm: npm's webgpu package (dawn.node for ${process.platform}-${arch}) is not installed: ` +
    `looked in ${dirs.join(', ')} (npm install webgpu@0.6.2, or scripts/fetch_node.sh in the repository)`);
}

let dawn = null;
// dawn.node's { create, globals }; its classes (GPUBufferUsage, GPUValidationError, ...) become globals where the
// names are free, as a page has them
export function loadDawn() {
  if (dawn) return dawn;
  dawn = require(dawnNodePath());
  for (const [k, v] of Object.entries(dawn.globals)) if (!(k in globalThis)) globalThis[k] = v;
  return dawn;
}

// WGLLM_DAWN_FLAGS as create() flags (see the header comment)
export function parseFlags(text) {
  const out = [];
  for (const item of text.split(',').map((s) => s.trim()).filter(Boolean)) {
    if (item.includes('=') || !out.length) out.push(item);
    else out[out.length - 1] += ',' + item;
  }
  return out;
}

// The flags for this machine: { flags, adapter: { vendor, vendorId, device, architecture } | null, reason }.
// options.subgroupMatrix (default true): open chromium-experimental-subgroup-matrix where the adapter can have it.
export async function chooseDawnFlags(options = {}) {
  if (process.env.WGLLM_DAWN_FLAGS !== undefined) {
    return { flags: parseFlags(process.env.WGLLM_DAWN_FLAGS), adapter: null, reason: 'WGLLM_DAWN_FLAGS' };
  }
  const { create } = loadDawn();
  // Vulkan always: the backend the native build and its measurements use (Dawn would otherwise pick OpenGL ES or
  // its null backend on some Linux machines), and the one whose toggles below exist
  const base = ['backend=vulkan'];
  // probe the adapter Dawn gives with the plain flags: which vendor it is decides the features to ask for
  const probe = await create(base).requestAdapter({ powerPreference: 'high-performance' });
  if (!probe) return { flags: base, adapter: null, reason: 'no adapter with backend=vulkan' };
  const info = probe.info || {};
  const vendorId = Number(info.vendorID ?? info.vendorId ?? 0); // dawn.node leaves it out; the name says it
  const adapter = { vendor: info.vendor || '', vendorId, device: info.device || info.description || '',
    architecture: info.architecture || '' };
  const isNvidia = vendorId === NVIDIA || /nvidia/i.test(`${adapter.vendor} ${adapter.device} ${adapter.architecture}`);
  const features = [];
  // vulkan_enable_f16_on_nvidia: Dawn blocks shader-f16 on NVIDIA's Vulkan driver by default (a driver bug it works
  // around); with the toggle the H200 offers shader-f16, which the subgroup-matrix configurations need
  if (isNvidia) features.push('vulkan_enable_f16_on_nvidia');
  if (options.subgroupMatrix !== false && isNvidia) {
    // allow_unsafe_apis: chromium-experimental-subgroup-matrix is an experimental feature, exposed only with unsafe
    // APIs allowed; use_vulkan_memory_model: Dawn offers it on Vulkan only with the Vulkan memory model in use
    // (measured on the H200: without both, no subgroup matrix)
    features.push('allow_unsafe_apis', 'use_vulkan_memory_model');
  }
  // disable_robustness: as natively (src/gpu/gpu_device.c), the kernels bound their indices themselves
  // (ARCHITECTURE.md, "Kernel bounds"); WGLLM_DAWN_ROBUSTNESS=1 keeps Dawn's bounds checks. web/webgpu.js cannot
  // pass the engine's device toggles (WebGPU has none), so the instance carries it.
  const robust = process.env.WGLLM_DAWN_ROBUSTNESS;
  if (!(robust && robust !== '0')) features.push('disable_robustness');
  const flags = features.length ? [...base, `enable-dawn-features=${features.join(',')}`] : [...base];
  // timestamp_quantization off, as natively: Dawn rounds timestamps to ~65 us otherwise, and the per-kernel
  // profiles (wgllm bench --profile, test_ops --perf) need the real values
  flags.push('disable-dawn-features=timestamp_quantization');
  return { flags, adapter, reason: isNvidia ? 'NVIDIA adapter' : 'adapter is not NVIDIA: no f16 or subgroup-matrix toggles' };
}

// A GPU object (navigator.gpu's interface) with chooseDawnFlags' flags. options: { subgroupMatrix (true),
// verbose (print the flags to stderr) }. The chosen flags are on the result as gpu.wgllmDawnFlags.
export async function createGpu(options = {}) {
  const choice = await chooseDawnFlags(options);
  if (options.verbose || process.env.WGLLM_DAWN_VERBOSE) {
    process.stderr.write(`wgllm: dawn.node flags ${JSON.stringify(choice.flags)} (${choice.reason})\n`);
  }
  const gpu = loadDawn().create(choice.flags);
  try { Object.defineProperty(gpu, 'wgllmDawnFlags', { value: choice.flags }); } catch (e) { /* a sealed object */ }
  return gpu;
}
