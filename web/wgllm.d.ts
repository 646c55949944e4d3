// Types of web/wgllm.js, the ES module over wgllm.wasm (make web copies both): what TypeScript users and editors
// check calls against. The module itself is plain JavaScript, served as it is.

/** A model's file(s): one .gguf (File, Blob, URL string, ArrayBuffer or typed array), a Hugging Face directory's
 * Files (an input's FileList or an array; their names as given), or a map of file name to any of those. */
export type ModelSource =
  | Blob
  | string
  | URL
  | ArrayBuffer
  | ArrayBufferView
  | FileList
  | File[]
  | Record<string, Blob | string | URL | ArrayBuffer | ArrayBufferView>;

export interface LoadOptions {
  /** a WebGPU GPU object: navigator.gpu in a page */
  gpu: unknown;
  /** wgllm.wasm: a URL, a fetch Response, its bytes or a compiled module (default: beside wgllm.js) */
  wasm?: string | URL | Response | ArrayBuffer | WebAssembly.Module;
  /** the engine's log lines (level 0 info, 1 warning); default: the console */
  log?: (level: number, message: string) => void;
  /** the engine's environment, e.g. { WGLLM_GPU_TIMEOUT_MS: '60000' } */
  env?: Record<string, string>;
  /** measurements: every dispatch timed in its own pass (slow) */
  profile?: boolean;
}

export interface ModelOptions {
  /** called as the weights reach the GPU with the fraction done; return true to cancel the load */
  onProgress?: (fraction: number) => boolean | void;
  /** 'q4': float weights quantized to 4 bits on load (default 'native': as the file stores them) */
  weights?: 'native' | 'q4';
  /** context length of the sessions, in tokens (default: 4096) */
  context?: number;
  /** weights only (for logits of given ids): text calls then fail */
  noTokenizer?: boolean;
  /** a named chat template in place of the model's own */
  chatTemplate?: 'llama3' | 'chatml' | 'gemma' | 'llama2' | 'none';
}

export interface ModelInfo {
  architecture: string;
  nVocab: number;
  nEmbd: number;
  nLayer: number;
  nHead: number;
  nHeadKv: number;
  headDim: number;
  nFf: number;
  trainContext: number;
  weightBytes: number;
  weights: string;
  adapter: string;
  /** "jinja" (the model's own), a named one, "none", or "unrunnable" (outside the supported Jinja subset) */
  chatTemplate: string;
  bos: number;
  eos: number;
}

export interface GenerateOptions {
  /** default 256 */
  maxTokens?: number;
  /** default 0.8; 0 is greedy */
  temperature?: number;
  topK?: number;
  topP?: number;
  minP?: number;
  repeatPenalty?: number;
  seed?: number;
  /** each piece of text as it becomes final (whole UTF-8 characters) */
  onText?: (text: string) => void;
}

export interface GenerateStats {
  promptTokens: number;
  cachedTokens: number;
  generatedTokens: number;
  prefillSeconds: number;
  decodeSeconds: number;
  /** wgllm_stop: 1 end of generation, 2 stop string, 3 token limit, 4 stopped (stop()), 5 context full */
  stop: number;
  stopReason: string;
}

export interface Message {
  role: 'system' | 'user' | 'assistant' | string;
  content: string;
}

export class WgllmError extends Error {
  /** the wgllm_status (1 invalid argument, 2 I/O, 3 format, 4 unsupported, 5 out of memory, 6 no adapter, 7 GPU,
   * 8 device lost, 9 internal) */
  status: number;
}

export interface Model {
  readonly info: ModelInfo;
  tokenize(text: string, options?: { addSpecial?: boolean }): Promise<Int32Array>;
  detokenize(ids: ArrayLike<number>): Promise<string>;
  generate(prompt: string, options?: GenerateOptions): Promise<{ text: string; stats: GenerateStats }>;
  chat(messages: Message[], options?: GenerateOptions): Promise<{ text: string; stats: GenerateStats }>;
  /** rows of nVocab logits: every prompt token's (one prefill), then each decode id's (the decode step) */
  logits(promptIds: ArrayLike<number>, decodeIds?: ArrayLike<number>): Promise<Float32Array>;
  /** ends a running generate / chat after the text it is emitting */
  stop(): void;
  free(): Promise<void>;
}

export interface Wgllm {
  readonly version: string;
  loadModel(source: ModelSource, options?: ModelOptions): Promise<Model>;
  /** the adapter the engine uses, as wgllm_describe_gpu's text */
  describeGpu(): Promise<string>;
}

/** Instantiates wgllm.wasm on the given GPU (needs JSPI: Chromium 137+). */
export function loadWgllm(options: LoadOptions): Promise<Wgllm>;
