// The browser tests: headless Chromium (Debian's, WebGPU on SwiftShader's Vulkan) driven by playwright-core
// (scripts/fetch_web.sh) runs the wasm build (make web, build-web/) on a page served from the repository, and
// each result is checked against the native build's (build/wgllm).
// Usage: node tests/web/run.mjs [NATIVE_BUILD [WEB_BUILD]] (default build and build-web, relative to the repository)
// Prints one line per check and "web: N passed, N failed"; exits 1 on any failure.
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { createRequire } from 'node:module';
import { serve } from './serve.mjs';

const root = path.resolve(path.dirname(new URL(import.meta.url).pathname), '../..');
const native = path.resolve(root, process.argv[2] || 'build');
const webBuild = path.relative(root, path.resolve(root, process.argv[3] || 'build-web'));
const require = createRequire(import.meta.url);
const { chromium } = require(path.join(root, 'third_party/node_modules/playwright-core'));
const CHROMIUM = process.env.WGLLM_CHROMIUM || '/usr/bin/chromium';
// WebGPU on SwiftShader's Vulkan (no GPU needed); WGLLM_CHROMIUM_FLAGS replaces them (a machine with a GPU)
const FLAGS = process.env.WGLLM_CHROMIUM_FLAGS ? process.env.WGLLM_CHROMIUM_FLAGS.split(/\s+/).filter(Boolean)
  : ['--enable-unsafe-webgpu', '--enable-features=Vulkan', '--use-vulkan=swiftshader', '--use-webgpu-adapter=swiftshader',
    '--no-sandbox'];

// the op families and shapes test_ops runs in the browser (substrings of case names, test_ops --list): "mul/" takes
// matmul of every storage too. Left out for SwiftShader's time (WGLLM_WEB_OPS runs them): the fused decode GEMV
// ("plan=default": 109 cases pass in 193 s; its forced tuned plans need subgroups of 8 to 64, which SwiftShader's 4
// are not, and the op refuses them: test_ops counts those as failures), flash-decoding's 672 cases and the MoE
// router's ("softmax/n=": the softmax op's cases, not moe_route/softmax/...).
const OPS = 'fill/,add/,mul/,rms_norm/,rope/,softmax/n=,argmax/,embedding/,glu/,rope_kv/,flash_decode_rope/,attention/,' +
  'attention_ring/';
// "N checks, 0 failed" of a test program of the native build, run as ctest runs it: what the browser's run must say
const nativeChecks = (name) => {
  let out = '';
  try {
    out = execFileSync(path.join(native, name), { cwd: path.join(root, 'tests'), encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] });
  } catch (e) { out = String(e.stdout || ''); }
  const m = out.match(/\d+ checks, \d+ failed/g);
  return m ? m[m.length - 1] : `(${name} natively printed no summary)`;
};
let passed = 0, failed = 0;
const check = (ok, name, detail = '') => {
  if (ok) passed++; else failed++;
  console.log(`${ok ? 'ok  ' : 'FAIL'} ${name}${detail ? ': ' + detail : ''}`);
};

for (const f of ['wgllm.wasm', 'wgllm.js', 'tests/test_ops.wasm', 'tests/test_tokenizer.wasm', 'tests/test_chat_template.wasm']) {
  if (!fs.existsSync(path.join(root, webBuild, f))) {
    console.log(`web: ${webBuild}/${f} is missing (make -f web/web.mk WEB_BUILD=${webBuild} all tests)`);
    process.exit(1);
  }
}
const server = await serve(root);
const base = `http://127.0.0.1:${server.address().port}`;
const browser = await chromium.launch({ executablePath: CHROMIUM, headless: true, args: FLAGS });
const page = await browser.newPage();
const consoleLines = [];
page.on('console', (m) => consoleLines.push(m.text()));
page.on('pageerror', (e) => consoleLines.push(`page error: ${e.message}`));
await page.goto(`${base}/tests/web/test.html?build=${encodeURIComponent(webBuild)}${process.env.WGLLM_WEB_PROFILE ? '&profile' : ''}`);
await page.waitForFunction(() => window.wgllmTestsReady === true, null, { timeout: 30000 });
const run = (name, arg) => page.evaluate(([n, a]) => window.wgllmTests[n](a), [name, arg]);

try {
  const only = process.env.WGLLM_WEB_CASES ? process.env.WGLLM_WEB_CASES.split(',') : null;
  const want = (n) => !only || only.includes(n);
  const MEASUREMENTS = ['regex']; // run only when named in WGLLM_WEB_CASES: they report numbers, they do not pass or fail

  // PCRE2 (as the engine compiles its patterns) against the browser's RegExp on the tokenizer tests' texts
  if (only && only.includes('regex')) {
    const r = await run('regex');
    for (const p of r.result) {
      console.log(`measure regex ${p.name} (PCRE2: ${r.pcre2Lines} span lines, exit ${r.code}): ${p.error ? 'RegExp refuses it: ' + p.error
        : `${p.equal} of ${p.total} texts give PCRE2's spans${p.first ? '; first differing: ' + JSON.stringify(p.first) : ''}`}`);
    }
  }

  if (want('gpu')) {
    const text = await run('gpu');
    check(/adapter|subgroup/i.test(text), 'gpu: wgllm_describe_gpu through webgpu.js', text.split('\n')[0]);
  }

  if (want('errors')) {
    const r = await run('badModel');
    check(r.ok && /broken\.gguf/.test(r.message) && /WGLLM_ERR_/.test(r.message), 'errors: a broken GGUF is refused naming it',
      r.message);
  }

  // the tokenizer tests (tests/test_tokenizer.c), the same program built for the browser, on the same data
  if (want('tokenizer')) {
    const t0 = Date.now();
    const r = await run('program', { name: 'test_tokenizer' });
    const summary = r.lines.filter((l) => /passed|failed|FAIL/.test(l)).slice(-3).join(' | ');
    const nat = nativeChecks('test_tokenizer');
    check(r.code === 0 && summary.includes(nat), 'tokenizer: test_tokenizer in the browser, every native check',
      `exit ${r.code}, ${Date.now() - t0} ms: ${summary} (native: ${nat})`);
    if (r.code !== 0) console.log(r.lines.slice(-40).join('\n'));
  }

  // the chat template tests (tests/test_chat_template.c): the Jinja subset, its errors (longjmp on wasm exceptions)
  if (want('chat')) {
    const t0 = Date.now();
    const r = await run('program', { name: 'test_chat_template' });
    const summary = r.lines.filter((l) => /checks|passed|failed|FAIL/.test(l)).slice(-2).join(' | ');
    const nat = nativeChecks('test_chat_template');
    check(r.code === 0 && summary.includes(nat), 'chat: test_chat_template in the browser, every native check',
      `exit ${r.code}, ${Date.now() - t0} ms: ${summary} (native: ${nat})`);
    if (r.code !== 0) console.log(r.lines.slice(-40).join('\n'));
  }

  // op conformance (tests/test_ops.c, built for the browser): the cases that fit SwiftShader's time
  if (want('ops')) {
    const t0 = Date.now();
    const filters = (process.env.WGLLM_WEB_OPS || OPS).split(',');
    const r = await run('program', { name: 'test_ops', args: filters.flatMap((f) => ['-f', f]) });
    const summary = r.lines.filter((l) => /passed|failed/.test(l)).slice(-2).join(' | ');
    check(r.code === 0, 'ops: test_ops cases in the browser', `exit ${r.code}, ${Date.now() - t0} ms: ${summary}`);
    if (r.code !== 0 || process.env.WGLLM_WEB_VERBOSE) {
      const fails = r.lines.filter((l) => /FAIL|fail/.test(l));
      console.log((fails.length ? fails.slice(0, 40) : r.lines.slice(-60)).join('\n'));
    }
  }

  // model fixtures (tests/data/models): logits against transformers' within test_models' native bound (1e-3, and
  // top-1 equal where the reference's margin is at least 0.05)
  if (want('fixtures')) {
    // (left out for SwiftShader's time: the bundled model's GGUF, 21 rows in ~100 s, which the greedy comparison below
    // covers, and llama_q4km_gguf, 65 s, whose K-quant kernels the op cases cover; both pass: WGLLM_WEB_FIXTURES=all)
    const all = process.env.WGLLM_WEB_FIXTURES === 'all';
    for (const [name, model, bound] of [['llama_gqa', null, 1e-3], ['qwen3', null, 1e-3], ['gemma3', null, 1e-3],
      ...(all ? [['llama_q4km_gguf', null, 1e-3], ['default_gguf', '/models/default.gguf', 2e-3]] : [])]) {
      const r = await run('fixture', { name, model });
      check(r.worst <= bound && r.top1Bad === 0, `fixture ${name}: logits within ${bound}`,
        `worst row rel L2 ${r.worst.toExponential(2)}, top-1 differs on ${r.top1Bad} of ${r.rows} rows, ${Math.round(r.ms)} ms`);
    }
  }

  // a chat reply through the model's chat template (a named one here) equal to `wgllm chat`'s
  if (want('chatreply')) {
    const content = 'Who made the heaven?';
    const r = await run('chat', { model: '/models/default.gguf', template: 'chatml', content, maxTokens: 6 });
    const out = execFileSync(path.join(native, 'wgllm'), ['chat', '-m', path.join(root, 'models/default.gguf'),
      '--chat-template', 'chatml', '--temp', '0', '-n', '6'], { input: content + '\n', encoding: 'utf8',
      stdio: ['pipe', 'pipe', 'ignore'] });
    const nativeReply = out.replace(/^> /, '').split('\n> ')[0].trim();
    check(r.text.trim() === nativeReply && r.stats.generatedTokens === 6, 'chat reply through the chatml template equal to native',
      `browser ${JSON.stringify(r.text)} vs native ${JSON.stringify(nativeReply)}; template ${r.template}`);
  }

  if (want('greedy')) {
    // the default model's greedy continuation, in the browser and natively (build/wgllm run), both formats: the
    // GGUF (Q8_0, repacked on the CPU a tensor at a time) and the Hugging Face directory (f32, every matrix streamed
    // from its file into the GPU by JavaScript)
    const prompt = 'The LORD is my shepherd;';
    const dir = ['config.json', 'model.safetensors', 'tokenizer.json', 'tokenizer_config.json'];
    for (const [model, tokens] of [['models/default.gguf', 8], ['models/default', 4]]) {
      const t0 = Date.now();
      const n = Number(process.env.WGLLM_WEB_TOKENS || tokens);
      const source = model.endsWith('.gguf') ? `/${model}` : Object.fromEntries(dir.map((f) => [f, `/${model}/${f}`]));
      const r = await run('greedy', { model: source, prompt, maxTokens: n });
      if (process.env.WGLLM_WEB_VERBOSE) console.log(JSON.stringify({ load: r.load, gen: r.gen, stats: r.stats, logs: r.logs, profile: r.profile }, null, 1));
      const out = execFileSync(path.join(native, 'wgllm'), ['run', '-m', path.join(root, model), '-p', prompt, '-n', String(n),
        '--temp', '0'], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] });
      const nativeText = out.startsWith(prompt) ? out.slice(prompt.length).replace(/\n$/, '') : out;
      const streamedOk = model.endsWith('.gguf') || r.streamed.tensors > 0;
      check(r.text === nativeText && r.stats.generatedTokens === n && streamedOk,
        `greedy ${model}: ${r.stats.generatedTokens} tokens equal to native`,
        r.text === nativeText ? `${(r.stats.generatedTokens / r.stats.decodeSeconds).toFixed(2)} tok/s, ${Date.now() - t0} ms; ` +
          `${r.streamed.tensors} tensors (${(r.streamed.bytes / 1048576).toFixed(1)} MiB) streamed from the file`
          : `browser ${JSON.stringify(r.text)} vs native ${JSON.stringify(nativeText)}`);
    }
  }
  // the demo page end to end (web/index.html, web/demo.js, as make web lays them out): pick the bundled model's
  // directory in its directory input, load with progress, send a text, see the reply stream, stop it, and the page
  // says it stopped
  if (want('demo')) {
    const t0 = Date.now();
    const demo = await browser.newPage();
    const lines = [];
    demo.on('pageerror', (e) => lines.push(`page error: ${e.message}`));
    try {
      await demo.goto(`${base}/${webBuild}/index.html`);
      await demo.waitForFunction(() => /ready/.test(document.getElementById('status').textContent), null, { timeout: 60000 });
      await demo.setInputFiles('#dir', path.join(root, 'models/default'));
      await demo.waitForFunction(() => /loaded/.test(document.getElementById('status').textContent), null, { timeout: 120000 });
      const info = await demo.textContent('#info');
      await demo.fill('#max', '64');
      await demo.fill('#input', 'And God said');
      await demo.click('#send');
      // streamed: the reply grows past the prompt while the generation runs (Stop is enabled)
      await demo.waitForFunction(() => {
        const a = document.querySelector('.assistant');
        return a && a.textContent.length > 'And God said'.length + 2 && !document.getElementById('stop').disabled;
      }, null, { timeout: 300000 });
      const partial = await demo.textContent('.assistant');
      await demo.click('#stop');
      await demo.waitForFunction(() => document.querySelector('.assistant').dataset.stop, null, { timeout: 300000 });
      const stop = await demo.evaluate(() => document.querySelector('.assistant').dataset.stop);
      const reply = await demo.textContent('.assistant');
      const speed = await demo.textContent('#speed');
      // the bundled model has no chat template: the page continues the text (the reply starts with it)
      check(/llama/.test(info) && /continuation/.test(info) && stop === 'stopped by callback' && reply.startsWith(partial) &&
        reply.startsWith('And God said') && reply.length > partial.length - 1 && /tok\/s/.test(speed) && !lines.length,
        'demo: load a picked model directory, send, stream, stop', `${Date.now() - t0} ms; stop: ${stop}; ${speed}; ` +
        `reply ${JSON.stringify(reply.slice(0, 60))}${lines.length ? '; ' + lines.join('; ') : ''}`);
    } finally {
      await demo.close();
    }
  }
} catch (e) {
  check(false, 'browser run', e.message);
  console.log(consoleLines.slice(-30).join('\n'));
} finally {
  await browser.close();
  server.close();
}
console.log(`web: ${passed} passed, ${failed} failed`);
process.exit(failed ? 1 : 0);
