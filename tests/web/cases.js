// The browser tests' cases, run inside the page (tests/web/test.html) by tests/web/run.mjs: each takes its
// arguments from the runner and returns what the runner checks, or throws. They use the built module the way a
// page would (BUILD/wgllm.js, the page's ?build=, build-web by default), served with the repository.
const B = '/' + (new URLSearchParams(location.search).get('build') || 'build-web');
const { loadWgllm } = await import(`${B}/wgllm.js`);

let wg = null;
const logs = [];
async function engine() {
  if (!wg) wg = await loadWgllm({ gpu: navigator.gpu, wasm: `${B}/wgllm.wasm`, profile: new URLSearchParams(location.search).has('profile'), log: (l, m) => logs.push(m) });
  return wg;
}

// the adapter's description (wgllm_describe_gpu): instance, adapter, device, limits through web/webgpu.js
export async function gpu() {
  return (await engine()).describeGpu();
}

// greedy generation: { text, stats } of `prompt` continued by `maxTokens` tokens at temperature 0
export async function greedy({ model, prompt, maxTokens }) {
  const w = await engine();
  const t0 = performance.now();
  const before = { ...w.streamed };
  const m = await w.loadModel(model);
  const load = { ms: performance.now() - t0, ...w.gpuStats,
    streamed: { tensors: w.streamed.tensors - before.tensors, bytes: w.streamed.bytes - before.bytes } };
  try {
    const pieces = [];
    const r = await m.generate(prompt, { maxTokens, temperature: 0, onText: (t) => pieces.push(t) });
    return { text: r.text, streamed: load.streamed, pieces: pieces.length, stats: r.stats, info: m.info, logs, load, gen: { ...w.gpuStats }, profile: w.gpuProfile ? [...w.gpuProfile].sort((a, b) => b[1][1] - a[1][1]).slice(0, 15) : null };
  } finally {
    await m.free();
  }
}

// a C test program built for the browser (BUILD/tests/NAME.wasm, web/web.mk) run to its end:
// its files are the served repository mounted at /repo (it runs in /repo/tests, as ctest runs it), its GPU
// the page's. Returns { code, lines } (its exit status and its output).
export async function program({ name, args = [] }) {
  const { createWebGPU } = await import(`${B}/webgpu.js`);
  const { createWasi, WasiExit } = await import(`${B}/wasi.js`);
  const lines = [];
  const webgpu = createWebGPU(navigator.gpu);
  const { uploadFromFile } = await import(`${B}/wgllm.js`);
  const wasi = createWasi({ args: [name, ...args], env: { WGLLM_CWD: '/repo/tests' }, write: (fd, t) => lines.push(t),
    mounts: { '/repo': `${location.origin}/` }, cwd: '/repo/tests' });
  const bytes = await (await fetch(`${B}/tests/${name}.wasm`)).arrayBuffer();
  let instance = null;
  const wgllm_host = { upload: uploadFromFile(wasi, webgpu, () => instance.exports) };
  ({ instance } = await WebAssembly.instantiate(bytes, { env: webgpu.imports, wasi_snapshot_preview1: wasi.imports,
    wgllm_host }));
  webgpu.attach(instance.exports);
  wasi.attach(instance.exports);
  let code = 0;
  try {
    // a reactor (web/web.mk): the constructors (web/wasm_cwd.c sets the working dir), then main with the arguments
    await WebAssembly.promising(instance.exports._initialize)();
    code = await WebAssembly.promising(instance.exports.__main_void)();
    await WebAssembly.promising(instance.exports.exit)(code); // flushes stdio, then proc_exit
  } catch (e) {
    if (e instanceof WasiExit) code = e.code;
    else { lines.push(`exception: ${e.stack || e.message}`); code = -1; }
  }
  wasi.flush();
  return { code, lines };
}

// a model fixture of tests/data/models (as tests/test_models.c's conformance): the logits of its prompt and greedy
// ids against transformers' reference; returns the worst row's relative L2 error and the rows whose top-1 differs
// where the reference's margin is at least 0.05. model: the fixture's own files unless given.
export async function fixture({ name, model }) {
  const dir = `/tests/data/models/${name}`;
  const ref = await (await fetch(`${dir}/ref.json`)).json();
  const want = new Float32Array(await (await fetch(`${dir}/logits.f32`)).arrayBuffer());
  let source = model;
  if (!source) {
    const has = async (f) => (await fetch(`${dir}/${f}`, { method: 'HEAD' })).ok;
    if (await has('model.gguf')) source = `${dir}/model.gguf`;
    else {
      source = {};
      for (const f of ['config.json', 'model.safetensors', 'tokenizer.json', 'tokenizer_config.json'])
        if (await has(f)) source[f] = `${dir}/${f}`;
    }
  }
  const w = await engine();
  const t0 = performance.now();
  const m = await w.loadModel(source, { noTokenizer: true });
  try {
    const got = await m.logits(ref.prompt_ids, ref.greedy_ids);
    const V = ref.logits_shape[1], rows = ref.prompt_ids.length + ref.greedy_ids.length;
    if (got.length !== want.length || V !== m.info.nVocab) throw new Error(`${name}: ${got.length} logits, the reference has ${want.length}`);
    let worst = 0, top1Bad = 0;
    for (let r = 0; r < rows; r++) {
      let num = 0, den = 0, ia = 0, ib = 0;
      for (let i = 0; i < V; i++) {
        const a = want[r * V + i], b = got[r * V + i];
        num += Number.isFinite(b) ? (a - b) * (a - b) : Infinity;
        den += a * a;
        if (a > want[r * V + ia]) ia = i;
        if (b > got[r * V + ib]) ib = i;
      }
      let second = -1;
      for (let i = 0; i < V; i++) if (i !== ia && (second < 0 || want[r * V + i] > want[r * V + second])) second = i;
      const e = Math.sqrt(num / den);
      if (!(e <= worst)) worst = e;
      if (want[r * V + ia] - want[r * V + second] >= 0.05 && ia !== ib) top1Bad++;
    }
    return { worst, top1Bad, rows, ms: performance.now() - t0 };
  } finally {
    await m.free();
  }
}

// a file that is not a model: the load fails with a WgllmError naming the file and the format's complaint
export async function badModel() {
  const w = await engine();
  try {
    await w.loadModel(new File(['GGUF but not really a model file: its counts are text........'], 'broken.gguf'));
    return { ok: false, message: 'loaded' };
  } catch (e) {
    return { ok: e.name === 'Error' && e.status !== undefined, message: e.message };
  }
}

// A measurement (run.mjs's opt-in case "regex"): the tokenizer's built-in pre-tokenizer patterns
// (src/tokenizer/tokenizer.c's RE_*) matched by PCRE2 as the engine compiles them (build/tests/web/regex_spans.wasm)
// and by this browser's RegExp (\s rewritten the same way, flags "gu"), on every text of the tokenizer tests.
// Returns, a pattern, how many texts give the same spans and the first that does not.
export async function regex() {
  const src = await (await fetch('/src/tokenizer/tokenizer.c')).text();
  const pats = [];
  for (const m of src.matchAll(/static const char (RE_\w+)\[\] =\s*((?:"(?:[^"\\]|\\.)*"\s*)+);/g)) {
    const body = [...m[2].matchAll(/"((?:[^"\\]|\\.)*)"/g)].map((x) => x[1]).join('');
    pats.push([m[1], body.replace(/\\(.)/g, '$1')]);
  }
  const r = await program({ name: 'web/regex_spans', args: pats.map((p) => p[1]) });
  const lines = r.lines.filter((l) => /^\d+ \d+/.test(l));
  const texts = [];
  for (const f of ['/tests/data/tokenizers/strings.json', '/tests/data/tokenizers/default_check.json']) {
    const j = await (await fetch(f)).json();
    for (const it of j.strings || j.cases) if (typeof it.text === 'string') texts.push(it.text);
  }
  // tok_compile_regex's rewrite: \s and \S as Oniguruma's White_Space, inside and outside classes
  const WS = '\\t-\\r\\x20\\x85\\xA0\\u1680\\u2000-\\u200A\\u2028\\u2029\\u202F\\u205F\\u3000';
  const rewrite = (p) => {
    let out = '', inClass = false;
    for (let i = 0; i < p.length; i++) {
      const c = p[i];
      if (c === '\\' && i + 1 < p.length) {
        const d = p[++i];
        out += d === 's' ? (inClass ? WS : `[${WS}]`) : d === 'S' && !inClass ? `[^${WS}]` : c + d;
        continue;
      }
      if (!inClass && c === '[') {
        inClass = true;
        out += c;
        if (p[i + 1] === '^') out += p[++i];
        if (p[i + 1] === ']') out += p[++i];
        continue;
      }
      if (inClass && c === ']') inClass = false;
      out += c;
    }
    return out;
  };
  const enc = new TextEncoder();
  const result = [];
  pats.forEach(([name, pat], pi) => {
    let re;
    try { re = new RegExp(rewrite(pat), 'gu'); } catch (e) { result.push({ name, error: e.message }); return; }
    let equal = 0, first = null;
    texts.forEach((s, ti) => {
      const bytesBefore = new Array(s.length + 1).fill(0); // UTF-16 index -> UTF-8 byte offset
      for (let i = 0, b = 0; i <= s.length; i++) {
        bytesBefore[i] = b;
        if (i < s.length) {
          const cp = s.codePointAt(i);
          const n = enc.encode(String.fromCodePoint(cp)).length;
          if (cp > 0xffff) { bytesBefore[i + 1] = b + n; i++; }
          b += n;
          if (cp > 0xffff) bytesBefore[i + 1] = b;
        }
      }
      let spans = `${pi} ${ti}`;
      re.lastIndex = 0;
      for (let m; (m = re.exec(s));) {
        spans += ` ${bytesBefore[m.index]}-${bytesBefore[m.index + m[0].length]}`;
        if (!m[0].length) re.lastIndex = m.index + (s.codePointAt(m.index) > 0xffff ? 2 : 1);
        if (re.lastIndex > s.length) break;
      }
      const want = lines.find((l) => l === spans || l.startsWith(`${pi} ${ti} `) || l === `${pi} ${ti}`);
      if (want === spans && spans.split(' ').length > 2 === (s.length > 0)) equal++;
      else if (!first) first = { text: s.slice(0, 80), pcre2: want, regexp: spans };
    });
    result.push({ name, equal, total: texts.length, first });
  });
  return { result, pcre2Lines: lines.length, code: r.code };
}

// a chat reply (wgllm_chat: the messages through a chat template, then greedy generation) from the bundled model with
// a named template in place of its own (it has none)
export async function chat({ model, template, content, maxTokens }) {
  const w = await engine();
  const m = await w.loadModel(model, { chatTemplate: template });
  try {
    const r = await m.chat([{ role: 'user', content }], { maxTokens, temperature: 0 });
    return { text: r.text, stats: r.stats, template: m.info.chatTemplate };
  } finally {
    await m.free();
  }
}
