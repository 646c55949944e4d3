// The browser tests: headless Chromium (Debian's, WebGPU on SwiftShader's Vulkan) driven by playwright-core
// (scripts/fetch_web.sh) runs the wasm build (make web, build-web/) on a page served from the repository, and
// each result is checked against the native build's (build/wgllm). Usage: node tests/web/run.mjs [NATIVE_BUILD]
// Prints one line per check and "web: N passed, N failed"; exits 1 on any failure.
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { createRequire } from 'node:module';
import { serve } from './serve.mjs';

const root = path.resolve(path.dirname(new URL(import.meta.url).pathname), '../..');
const native = path.resolve(root, process.argv[2] || 'build');
const require = createRequire(import.meta.url);
const { chromium } = require(path.join(root, 'third_party/node_modules/playwright-core'));
const CHROMIUM = process.env.WGLLM_CHROMIUM || '/usr/bin/chromium';
const FLAGS = ['--enable-unsafe-webgpu', '--enable-features=Vulkan', '--use-vulkan=swiftshader',
  '--use-webgpu-adapter=swiftshader', '--no-sandbox'];

// the op families and shapes test_ops runs in the browser (substrings of case names, test_ops --list)
const OPS = 'fill/,add/,mul/,rms_norm/,rope/,softmax/,argmax/';
let passed = 0, failed = 0;
const check = (ok, name, detail = '') => {
  if (ok) passed++; else failed++;
  console.log(`${ok ? 'ok  ' : 'FAIL'} ${name}${detail ? ': ' + detail : ''}`);
};

for (const f of ['build-web/wgllm.wasm', 'build-web/wgllm.js']) {
  if (!fs.existsSync(path.join(root, f))) { console.log(`web: ${f} is missing (make web)`); process.exit(1); }
}
const server = await serve(root);
const base = `http://127.0.0.1:${server.address().port}`;
const browser = await chromium.launch({ executablePath: CHROMIUM, headless: true, args: FLAGS });
const page = await browser.newPage();
const consoleLines = [];
page.on('console', (m) => consoleLines.push(m.text()));
page.on('pageerror', (e) => consoleLines.push(`page error: ${e.message}`));
await page.goto(`${base}/tests/web/test.html${process.env.WGLLM_WEB_PROFILE ? '?profile' : ''}`);
await page.waitForFunction(() => window.wgllmTestsReady === true, null, { timeout: 30000 });
const run = (name, arg) => page.evaluate(([n, a]) => window.wgllmTests[n](a), [name, arg]);

try {
  const only = process.env.WGLLM_WEB_CASES ? process.env.WGLLM_WEB_CASES.split(',') : null;
  const want = (n) => !only || only.includes(n);

  if (want('gpu')) {
    const text = await run('gpu');
    check(/adapter|subgroup/i.test(text), 'gpu: wgllm_describe_gpu through webgpu.js', text.split('\n')[0]);
  }

  // the tokenizer tests (tests/test_tokenizer.c), the same program built for the browser, on the same data
  if (want('tokenizer')) {
    const t0 = Date.now();
    const r = await run('program', { name: 'test_tokenizer' });
    const summary = r.lines.filter((l) => /passed|failed|FAIL/.test(l)).slice(-3).join(' | ');
    check(r.code === 0, 'tokenizer: test_tokenizer in the browser', `exit ${r.code}, ${Date.now() - t0} ms: ${summary}`);
    if (r.code !== 0) console.log(r.lines.slice(-40).join('\n'));
  }

  // op conformance (tests/test_ops.c, built for the browser): the cases that fit SwiftShader's time
  if (want('ops')) {
    const t0 = Date.now();
    const filters = (process.env.WGLLM_WEB_OPS || OPS).split(',');
    const r = await run('program', { name: 'test_ops', args: filters.flatMap((f) => ['-f', f]) });
    const summary = r.lines.filter((l) => /passed|failed/.test(l)).slice(-2).join(' | ');
    check(r.code === 0, 'ops: test_ops cases in the browser', `exit ${r.code}, ${Date.now() - t0} ms: ${summary}`);
    if (r.code !== 0 || process.env.WGLLM_WEB_VERBOSE) console.log(r.lines.slice(-60).join('\n'));
  }

  if (want('greedy')) {
    // the default model's greedy continuation, in the browser and natively (build/wgllm run), both formats
    const prompt = 'The LORD is my shepherd;';
    for (const model of ['models/default.gguf']) {
      const t0 = Date.now();
      const r = await run('greedy', { model: `/${model}`, prompt, maxTokens: Number(process.env.WGLLM_WEB_TOKENS || 8) });
      if (process.env.WGLLM_WEB_VERBOSE) console.log(JSON.stringify({ load: r.load, gen: r.gen, stats: r.stats, logs: r.logs, profile: r.profile }, null, 1));
      const out = execFileSync(path.join(native, 'wgllm'), ['run', '-m', path.join(root, model), '-p', prompt, '-n', String(Number(process.env.WGLLM_WEB_TOKENS || 8)),
        '--temp', '0'], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] });
      const nativeText = out.startsWith(prompt) ? out.slice(prompt.length).replace(/\n$/, '') : out;
      check(r.text === nativeText && r.stats.generatedTokens === Number(process.env.WGLLM_WEB_TOKENS || 8), `greedy ${model}: ${r.stats.generatedTokens} tokens equal to native`,
        r.text === nativeText ? `${(r.stats.generatedTokens / r.stats.decodeSeconds).toFixed(1)} tok/s, ${Date.now() - t0} ms`
          : `browser ${JSON.stringify(r.text)} vs native ${JSON.stringify(nativeText)}`);
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
