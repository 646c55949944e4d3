// wgllm in JavaScript: the C engine built for wasm32 (wgllm.wasm, `make web`) on the browser's WebGPU, as a small
// ES module. Load a model from a File (a .gguf), several Files (a Hugging Face directory: config.json,
// *.safetensors, tokenizer.json, ...), a URL or an ArrayBuffer; tokenize; generate with a callback per piece of
// text; stop; free. Every call into the wasm runs through JSPI (WebAssembly.promising), one at a time (the C code
// has one stack), and returns a Promise.
//
//   import { loadWgllm } from './wgllm.js';
//   const wg = await loadWgllm({ gpu: navigator.gpu, wasm: new URL('./wgllm.wasm', import.meta.url) });
//   const model = await wg.loadModel(file, { onProgress: (f) => ... });
//   const { text, stats } = await model.generate('In the beginning', { maxTokens: 64, onText: (t) => ... });
//   await model.free();
import { createWebGPU } from './webgpu.js';
import { createWasi } from './wasi.js';

const STATUS = ['OK', 'INVALID_ARG', 'IO', 'FORMAT', 'UNSUPPORTED', 'OUT_OF_MEMORY', 'NO_ADAPTER', 'GPU',
  'DEVICE_LOST', 'INTERNAL'];

export class WgllmError extends Error {
  constructor(status, message) {
    super(`${message} (WGLLM_ERR_${STATUS[status] || status})`);
    this.status = status;
  }
}

// options: { gpu (a WebGPU GPU object, required), wasm (URL, Response, ArrayBuffer or WebAssembly.Module; default
// ./wgllm.wasm beside this module), log(level, message), env ({NAME: value} for the engine, e.g.
// WGLLM_GPU_TIMEOUT_MS), fs and cwd (Node.js, node/index.mjs: web/wasi.js's file-system backend; loadModel then takes
// paths of the machine's files, relative ones to cwd) }
export async function loadWgllm(options = {}) {
  if (typeof WebAssembly.Suspending !== 'function' || typeof WebAssembly.promising !== 'function') {
    throw new Error('this JavaScript engine lacks JSPI (WebAssembly.Suspending / WebAssembly.promising): ' +
      'Chromium 137 or later has it');
  }
  if (!options.gpu) throw new Error('loadWgllm: options.gpu (a WebGPU GPU object, e.g. navigator.gpu) is required');
  const webgpu = createWebGPU(options.gpu, { profile: options.profile });
  const wasi = createWasi({ env: options.env || {}, write: options.write, fs: options.fs, cwd: options.cwd });
  const host = new Host(options.log);
  const streamed = { tensors: 0, bytes: 0 }; // weights streamed from files into GPU buffers
  host.imports.upload = uploadFromFile(wasi, webgpu, () => host.ex, streamed);
  const imports = { env: webgpu.imports, wasi_snapshot_preview1: wasi.imports, wgllm_host: host.imports };
  let src = options.wasm || new URL('./wgllm.wasm', import.meta.url);
  let instance;
  if (src instanceof WebAssembly.Module) instance = await WebAssembly.instantiate(src, imports);
  else {
    if (typeof src === 'string' || src instanceof URL) src = await fetch(src);
    if (src instanceof Response) {
      if (!src.ok) throw new Error(`fetching wgllm.wasm: HTTP ${src.status} for ${src.url}`);
      src = await src.arrayBuffer();
    }
    instance = (await WebAssembly.instantiate(src, imports)).instance;
  }
  const ex = instance.exports;
  webgpu.attach(ex);
  wasi.attach(ex);
  host.attach(ex);
  ex._initialize();
  ex.wgllm_web_init();
  const wg = new Wgllm(ex, wasi, host);
  wg.hostFiles = options.fs ? (options.cwd || '/') : null; // loadModel's strings are paths of the machine's files
  wg.gpuStats = webgpu.stats; // wgpuInstanceWaitAny's calls and time, for measurements
  wg.gpuProfile = webgpu.profile; // options.profile: GPU ns by pipeline
  wg.streamed = streamed;
  return wg;
}

// The import web/mapped_file_web.c streams weights with: bytes [offset, offset + n) of a registered file into a
// WebGPU buffer, a slice at a time (a File's bytes never enter wasm memory); resolves to 0, or 1 on failure.
export function uploadFromFile(wasi, webgpu, getExports, counts = { tensors: 0, bytes: 0 }) {
  const CHUNK = 8 << 20;
  return new WebAssembly.Suspending(async (pathPtr, offset, n, buffer, dstOffset) => {
    const ex = getExports();
    const m = new Uint8Array(ex.memory.buffer);
    let e = pathPtr;
    while (m[e]) e++;
    const path = new TextDecoder().decode(m.subarray(pathPtr, e));
    const f = await wasi.file(path);
    const rec = webgpu.objects.get(buffer);
    if (!f || !rec || !rec.buffer) return 1;
    const queue = rec.queue;
    const total = Number(n);
    for (let done = 0; done < total; done += CHUNK) {
      const bytes = await wasi.readRange(f, Number(offset) + done, Math.min(CHUNK, total - done));
      queue.writeBuffer(rec.buffer, Number(dstOffset) + done, bytes);
    }
    counts.tensors++;
    counts.bytes += total;
    return 0;
  });
}

// the wasm's imports of module "wgllm_host" (web/wgllm_web.c, web/mapped_file_web.c): log, load progress, streamed
// text, weights streamed from a file
class Host {
  constructor(log) {
    this.log = log || ((level, msg) => (level ? console.warn : console.info)('wgllm:', msg));
    this.callbacks = new Map(); // user number -> function
    this.next = 1;
    const dec = new TextDecoder();
    this.imports = {
      log: (level, p) => this.log(level, this.cstr(p)),
      progress: (fraction, user) => { const f = this.callbacks.get(user); return f && f(fraction) ? 1 : 0; },
      text: (p, n, user) => {
        const f = this.callbacks.get(user);
        return f && f(dec.decode(new Uint8Array(this.ex.memory.buffer, p, n).slice())) ? 1 : 0;
      },
    };
  }
  attach(ex) { this.ex = ex; }
  cstr(p) {
    if (!p) return '';
    const m = new Uint8Array(this.ex.memory.buffer);
    let e = p;
    while (m[e]) e++;
    return new TextDecoder().decode(m.subarray(p, e));
  }
  register(f) { const id = this.next++; this.callbacks.set(id, f); return id; }
  unregister(id) { this.callbacks.delete(id); }
}

class Wgllm {
  constructor(ex, wasi, host) {
    this.ex = ex;
    this.wasi = wasi;
    this.host = host;
    this.queue = Promise.resolve();
    this.nModels = 0;
    const p = (name) => WebAssembly.promising(ex[name]);
    // every export that can reach a suspending import (the GPU's waits, file reads) goes through JSPI
    this.c = {};
    for (const name of ['wgllm_model_create', 'wgllm_model_free', 'wgllm_session_create', 'wgllm_session_free',
      'wgllm_generate', 'wgllm_generate_n', 'wgllm_chat', 'wgllm_tokenize', 'wgllm_detokenize', 'wgllm_session_prefill',
      'wgllm_session_decode', 'wgllm_vocab_load', 'wgllm_vocab_tokenize', 'wgllm_vocab_free', 'wgllm_describe_gpu',
      'wgllm_describe_file', 'wgllm_model_get_info']) this.c[name] = p(name);
    this.version = host.cstr(ex.wgllm_version());
  }
  // runs f (async) after every call already queued: the C code has one stack
  serial(f) {
    const r = this.queue.then(f);
    this.queue = r.catch(() => {});
    return r;
  }
  cstring(s) {
    const b = new TextEncoder().encode(s);
    const p = this.ex.malloc(b.length + 1);
    const m = new Uint8Array(this.ex.memory.buffer);
    m.set(b, p);
    m[p + b.length] = 0;
    return [p, b.length];
  }
  lastError() { return this.host.cstr(this.ex.wgllm_last_error()); }

  // Registers a model's files under a path of its own: a .gguf file (File, URL, ArrayBuffer), or a directory's
  // files ([File, ...] or a FileList, their names as given; or { 'config.json': source, ... }); with a file-system
  // backend (Node), a string is the path of a file or directory of the machine. Returns the path.
  async addModelFiles(source) {
    if (typeof source === 'string' && this.hostFiles) {
      return source.startsWith('/') ? source : `${this.hostFiles}/${source}`; // read where it is (web/wasi.js's fs)
    }
    const dir = `/models/${++this.nModels}`;
    const named = (f) => f.webkitRelativePath ? f.webkitRelativePath.split('/').pop() : f.name;
    if (Array.isArray(source) || (typeof FileList !== 'undefined' && source instanceof FileList)) {
      for (const f of source) await this.wasi.addFile(`${dir}/${named(f)}`, f);
      return dir;
    }
    if (source && source.constructor === Object) {
      for (const [name, s] of Object.entries(source)) await this.wasi.addFile(`${dir}/${name}`, s);
      return dir;
    }
    const name = source && source.name ? source.name : 'model.gguf';
    await this.wasi.addFile(`${dir}/${name}`, source);
    return `${dir}/${name}`;
  }

  // options: { onProgress(fraction) (return true to cancel), weights: 'native' | 'q4', context (tokens, 0: the
  // model's trained length), noTokenizer (weights only: logits of given ids; text calls then fail), chatTemplate
  // ('llama3', 'chatml', 'gemma', 'llama2' or 'none' in place of the model's own) }
  loadModel(source, options = {}) {
    return this.serial(async () => {
      const path = await this.addModelFiles(source);
      const ex = this.ex;
      const user = this.host.register(options.onProgress || (() => 0));
      const [tmpl] = options.chatTemplate ? this.cstring(options.chatTemplate) : [0];
      const params = ex.wgllm_web_model_params(options.weights === 'q4' ? 1 : 0, user, options.noTokenizer ? 1 : 0, tmpl);
      const [cpath] = this.cstring(path);
      const out = ex.malloc(4);
      try {
        const st = await this.c.wgllm_model_create(cpath, params, out);
        if (st) throw new WgllmError(st, `loading ${source && source.name ? source.name : path}: ${this.lastError()}`);
        const m = new DataView(ex.memory.buffer).getUint32(out, true);
        return new Model(this, m, path, options);
      } finally {
        ex.free(out);
        ex.free(cpath);
        ex.free(params);
        if (tmpl) ex.free(tmpl);
        this.host.unregister(user);
      }
    });
  }

  // the adapter wgllm would use, as wgllm_describe_gpu's text
  describeGpu() {
    return this.serial(async () => {
      const out = this.ex.malloc(4);
      try {
        const st = await this.c.wgllm_describe_gpu(0, 0, out);
        const p = new DataView(this.ex.memory.buffer).getUint32(out, true);
        const text = this.host.cstr(p);
        this.ex.wgllm_free(p);
        if (st) throw new WgllmError(st, this.lastError() || text);
        return text;
      } finally { this.ex.free(out); }
    });
  }
}

class Model {
  constructor(wg, handle, path, options) {
    this.wg = wg;
    this.handle = handle;
    this.path = path;
    this.context = options.context || 0;
    this.session = 0;
    this.stopping = false;
    this.info = this.readInfo();
  }
  readInfo() {
    const ex = this.wg.ex;
    const p = ex.malloc(72);
    try {
      const st = ex.wgllm_model_get_info(this.handle, p);
      if (st) throw new WgllmError(st, this.error());
      const d = new DataView(ex.memory.buffer);
      const s = (o) => this.wg.host.cstr(d.getUint32(p + o, true));
      const u = (o) => d.getUint32(p + o, true);
      return { architecture: s(0), nVocab: u(4), nEmbd: u(8), nLayer: u(12), nHead: u(16), nHeadKv: u(20),
        headDim: u(24), nFf: u(28), trainContext: u(32), weightBytes: Number(d.getBigUint64(p + 40, true)),
        weights: s(48), adapter: s(52), chatTemplate: s(56), bos: d.getInt32(p + 60, true), eos: d.getInt32(p + 64, true) };
    } finally { ex.free(p); }
  }
  error() { return this.wg.host.cstr(this.wg.ex.wgllm_model_error(this.handle)); }
  check() { if (!this.handle) throw new Error('the model was freed'); }

  // text -> token ids (Int32Array); addSpecial: BOS/EOS as the model's tokenizer adds them
  tokenize(text, { addSpecial = true } = {}) {
    return this.wg.serial(async () => {
      this.check();
      const ex = this.wg.ex;
      const [p, n] = this.wg.cstring(text);
      const cap = n + 16;
      const ids = ex.malloc(4 * cap), cnt = ex.malloc(4);
      try {
        const st = await this.wg.c.wgllm_tokenize(this.handle, p, n, addSpecial ? 1 : 0, ids, cap, cnt);
        if (st) throw new WgllmError(st, this.error());
        const k = new DataView(ex.memory.buffer).getUint32(cnt, true);
        return new Int32Array(ex.memory.buffer, ids, Math.min(k, cap)).slice();
      } finally { ex.free(p); ex.free(ids); ex.free(cnt); }
    });
  }

  detokenize(ids) {
    return this.wg.serial(async () => {
      this.check();
      const ex = this.wg.ex;
      const p = ex.malloc(4 * ids.length + 4), out = ex.malloc(4);
      new Int32Array(ex.memory.buffer, p, ids.length).set(ids);
      try {
        const st = await this.wg.c.wgllm_detokenize(this.handle, p, ids.length, out);
        if (st) throw new WgllmError(st, this.error());
        const t = new DataView(ex.memory.buffer).getUint32(out, true);
        const s = this.wg.host.cstr(t);
        ex.wgllm_free(t);
        return s;
      } finally { ex.free(p); ex.free(out); }
    });
  }

  async ensureSession() {
    if (this.session) return;
    const ex = this.wg.ex;
    const sp = ex.wgllm_web_session_params(this.context);
    const out = ex.malloc(4);
    try {
      const st = await this.wg.c.wgllm_session_create(this.handle, sp, out);
      if (st) throw new WgllmError(st, this.wg.lastError());
      this.session = new DataView(ex.memory.buffer).getUint32(out, true);
    } finally { ex.free(sp); ex.free(out); }
  }

  // the generation's params, the text callback registered; returns [params pointer, callback id, collected text]
  genParams(o, acc) {
    const ex = this.wg.ex;
    const user = this.wg.host.register((t) => {
      acc.text += t;
      if (o.onText) o.onText(t);
      return this.stopping;
    });
    const p = ex.wgllm_web_generate_params(o.maxTokens ?? 256, o.temperature ?? 0.8, o.topK ?? 40, o.topP ?? 0.95,
      o.minP ?? 0.05, o.repeatPenalty ?? 1.0, o.seed ?? ((Math.random() * 2 ** 32) >>> 0), user);
    return [p, user];
  }
  readStats(p) {
    const d = new DataView(this.wg.ex.memory.buffer);
    return { promptTokens: d.getUint32(p, true), cachedTokens: d.getUint32(p + 4, true),
      generatedTokens: d.getUint32(p + 8, true), prefillSeconds: d.getFloat64(p + 16, true),
      decodeSeconds: d.getFloat64(p + 24, true), stop: d.getUint32(p + 32, true),
      stopReason: this.wg.host.cstr(d.getUint32(p + 36, true)) };
  }

  // Continues prompt. options: { maxTokens (256), temperature (0.8; 0: greedy), topK (40), topP (0.95), minP (0.05),
  // repeatPenalty (1: off), seed, onText(text) }. Returns { text, stats } (stats.decodeSeconds gives tok/s).
  generate(prompt, options = {}) {
    return this.wg.serial(async () => {
      this.check();
      await this.ensureSession();
      const ex = this.wg.ex;
      this.stopping = false;
      const acc = { text: '' };
      const [gp, user] = this.genParams(options, acc);
      const [cp, cn] = this.wg.cstring(prompt);
      const stats = ex.wgllm_web_stats();
      try {
        const st = await this.wg.c.wgllm_generate_n(this.session, cp, cn, gp, stats); // a NUL in the text is kept
        if (st) throw new WgllmError(st, this.wg.host.cstr(ex.wgllm_session_error(this.session)));
        return { text: acc.text, stats: this.readStats(stats) };
      } finally { ex.free(cp); ex.free(gp); ex.free(stats); this.wg.host.unregister(user); }
    });
  }

  // A chat reply: messages [{ role, content }] through the model's chat template; options as generate's.
  chat(messages, options = {}) {
    return this.wg.serial(async () => {
      this.check();
      await this.ensureSession();
      const ex = this.wg.ex;
      this.stopping = false;
      const acc = { text: '' };
      const [gp, user] = this.genParams(options, acc);
      // wgllm_message on wasm32: role, content, content_len (its bytes: a NUL in the text is kept)
      const arr = ex.malloc(12 * messages.length);
      const strs = [];
      for (let i = 0; i < messages.length; i++) {
        const [r] = this.wg.cstring(messages[i].role), [c, cn] = this.wg.cstring(messages[i].content);
        strs.push(r, c);
        const d = new DataView(ex.memory.buffer);
        d.setUint32(arr + 12 * i, r, true);
        d.setUint32(arr + 12 * i + 4, c, true);
        d.setUint32(arr + 12 * i + 8, cn, true);
      }
      const reply = ex.malloc(4), stats = ex.wgllm_web_stats();
      try {
        const st = await this.wg.c.wgllm_chat(this.session, arr, messages.length, gp, reply, stats);
        if (st) throw new WgllmError(st, this.wg.host.cstr(ex.wgllm_session_error(this.session)));
        const rp = new DataView(ex.memory.buffer).getUint32(reply, true);
        const text = this.wg.host.cstr(rp);
        ex.wgllm_free(rp);
        return { text, stats: this.readStats(stats) };
      } finally {
        for (const s of strs) ex.free(s);
        ex.free(arr); ex.free(reply); ex.free(stats); ex.free(gp);
        this.wg.host.unregister(user);
      }
    });
  }

  // The conformance interface (wgllm logits): on a session of its own, the prompt's ids evaluated in one prefill
  // (every row's logits) and then each of decodeIds through the recorded decode step; a Float32Array of
  // (prompt + decode) rows of nVocab logits.
  logits(promptIds, decodeIds = []) {
    return this.wg.serial(async () => {
      this.check();
      const ex = this.wg.ex, c = this.wg.c, V = this.info.nVocab;
      const T = promptIds.length, N = decodeIds.length;
      const sp = ex.wgllm_web_session_params(this.context), out = ex.malloc(4);
      const ids = ex.malloc(4 * T + 4), rows = ex.malloc(4 * V * (T + N));
      let s = 0;
      try {
        let st = await c.wgllm_session_create(this.handle, sp, out);
        if (st) throw new WgllmError(st, this.wg.lastError());
        s = new DataView(ex.memory.buffer).getUint32(out, true);
        new Int32Array(ex.memory.buffer, ids, T).set(promptIds);
        st = await c.wgllm_session_prefill(s, ids, T, rows, 1);
        for (let i = 0; !st && i < N; i++) st = await c.wgllm_session_decode(s, decodeIds[i], rows + 4 * V * (T + i));
        if (st) throw new WgllmError(st, this.wg.host.cstr(ex.wgllm_session_error(s)));
        return new Float32Array(ex.memory.buffer, rows, V * (T + N)).slice();
      } finally {
        if (s) await c.wgllm_session_free(s);
        ex.free(sp); ex.free(out); ex.free(ids); ex.free(rows);
      }
    });
  }

  // Asks a running generate / chat to end after the text it is emitting (its stats then say "callback").
  stop() { this.stopping = true; }

  // Frees the session and the model (the GPU buffers); the files stay registered until then.
  free() {
    this.stopping = true;
    return this.wg.serial(async () => {
      if (this.session) await this.wg.c.wgllm_session_free(this.session);
      if (this.handle) await this.wg.c.wgllm_model_free(this.handle);
      this.session = 0;
      this.handle = 0;
      for (const k of [...this.wg.wasi.files.keys()]) if (k === this.path || k.startsWith(this.path + '/')) this.wg.wasi.removeFile(k);
    });
  }
}
