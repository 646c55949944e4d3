// `wgllm serve` on Node.js: the native server's request handling (tools/serve/: options, scheduler, request handler,
// OpenAI parsing, built into wgllm-serve.wasm by web/web.mk) with Node's own http server as the transport, in place
// of libmicrohttpd. Every request becomes an exchange of the wasm handler (its head, its body, then its answer
// pulled piece by piece: status and headers, bytes, end); server-sent events go out as the scheduler writes them.
// The scheduler has no thread here: the event loop steps it (one batched GPU step a call, the wasm suspended through
// JSPI while the GPU works, so requests keep being read) while work remains. A client that goes away frees its
// exchange, which cancels its task and frees its session, as natively. docs/SERVING.md, "The Node server".
//
//   import { main } from './serve.mjs';
//   process.exitCode = await main(['-m', 'models/default.gguf', '--port', '8080']);   // until SIGINT / SIGTERM
import fs from 'node:fs';
import http from 'node:http';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { createGpu } from './gpu.mjs';
import { requireJspi } from './jspi.mjs';
import { nodeFs, writeAll } from './node_fs.mjs';
import * as runner from './runner.mjs';

// serve_out's kinds and layout (tools/serve/serve_handler.h; serve_wasm.c asserts the offsets)
const OUT = { WAIT: 0, HEAD: 1, DATA: 2, FILE: 3, END: 4, ABORT: 5 };
const OFF = { kind: 0, status: 4, streamed: 8, nHeaders: 12, headers: 16, data: 48, len: 52, path: 56 };
const ERRNO_TEXT = { EADDRINUSE: 'Address already in use', EADDRNOTAVAIL: 'Cannot assign requested address',
  EACCES: 'Permission denied' };

const say = (fd, text) => writeAll(fd, Buffer.from(text));

// wgllm-serve.wasm: where runner.mjs finds the programs (WGLLM_WASM_DIR, the repository's build-web/, the
// package's wasm/)
function servePath() {
  if (runner.wasmPath) return runner.wasmPath('wgllm-serve.wasm');
  const here = path.dirname(fileURLToPath(import.meta.url));
  const dirs = [process.env.WGLLM_WASM_DIR, path.resolve(here, '../../build-web'), path.resolve(here, '../wasm')];
  for (const d of dirs) if (d && fs.existsSync(path.join(d, 'wgllm-serve.wasm'))) return path.join(d, 'wgllm-serve.wasm');
  throw new Error(`wgllm: wgllm-serve.wasm not found in ${dirs.filter(Boolean).join(', ')} ` +
    '(make -f web/web.mk WEB_BUILD=build-web programs)');
}

// The wasm program and the calls into it: strings in and out of its memory, its exports (those that reach the GPU
// through JSPI)
async function instantiate(gpuRef) {
  requireJspi();
  const { createWebGPU, createWasi, uploadFromFile } = await runner.webModules();
  const mod = await WebAssembly.compile(fs.readFileSync(servePath()));
  // the GPU object is made after the options parse (--help and usage errors need none): webgpu.js asks it for an
  // adapter only when the model loads
  const webgpu = createWebGPU({ requestAdapter: (o) => gpuRef.gpu.requestAdapter(o) });
  const env = { ...process.env, WGLLM_CWD: process.cwd() }; // relative paths as natively (web/wasm_cwd.c)
  const wasi = createWasi({ args: ['wgllm'], env, cwd: process.cwd(), fs: nodeFs, writeRaw: (fd, b) => writeAll(fd, b) });
  let instance = null;
  const imports = { env: webgpu.imports, wasi_snapshot_preview1: wasi.imports,
    wgllm_host: { upload: uploadFromFile(wasi, webgpu, () => instance.exports) } };
  instance = await WebAssembly.instantiate(mod, imports);
  const ex = instance.exports;
  webgpu.attach(ex);
  wasi.attach(ex);
  await WebAssembly.promising(ex._initialize)(); // constructors (the working directory)
  const u8 = () => new Uint8Array(ex.memory.buffer);
  const dv = () => new DataView(ex.memory.buffer);
  const cstr = (p) => {
    if (!p) return null;
    const m = u8();
    let e = p;
    while (m[e]) e++;
    return Buffer.from(m.subarray(p, e)).toString('utf8');
  };
  const alloc = (bytes) => { // a NUL-terminated copy of bytes (Buffer or string)
    const b = Buffer.isBuffer(bytes) ? bytes : Buffer.from(String(bytes));
    const p = ex.malloc(b.length + 1);
    u8().set(b, p);
    u8()[p + b.length] = 0;
    return p;
  };
  return { ex, cstr, alloc, u8, dv, load: WebAssembly.promising(ex.serve_load),
    step: WebAssembly.promising(ex.serve_step), stop: WebAssembly.promising(ex.serve_stop) };
}

// MHD's unescaping of the path: %XX decoded to its byte, the query cut off
function requestPath(url) {
  const raw = url.split('?')[0];
  const bytes = [];
  for (let i = 0; i < raw.length; i++) {
    if (raw[i] === '%' && /^[0-9a-fA-F]{2}$/.test(raw.slice(i + 1, i + 3))) {
      bytes.push(parseInt(raw.slice(i + 1, i + 3), 16));
      i += 2;
    } else bytes.push(...Buffer.from(raw[i], 'latin1'));
  }
  const b = Buffer.from(bytes);
  const nul = b.indexOf(0);
  return nul >= 0 ? b.subarray(0, nul) : b;
}

// whether host:port can be bound now (as serve_http_check_port does natively): null, or the reason
function checkPort(host, port) {
  if (!port) return Promise.resolve(null);
  return new Promise((resolve) => {
    const s = http.createServer();
    s.once('error', (e) => resolve(`cannot listen on ${host} port ${port}: ${ERRNO_TEXT[e.code] || e.message}`));
    s.listen(port, host, () => s.close(() => resolve(null)));
  });
}

export async function main(argv) {
  // SIGINT / SIGTERM: before the server listens they end the load and warm-up after its current step (exit 0, as
  // natively, where they stay pending until then); later they stop the server
  let stopSignal = null, stopServer = null, ex = null;
  const onSignal = (name) => {
    if (stopSignal) return;
    stopSignal = name;
    if (stopServer) stopServer();
    else if (ex) ex.serve_request_stop();
  };
  const sigint = () => onSignal('SIGINT'), sigterm = () => onSignal('SIGTERM');
  process.on('SIGINT', sigint);
  process.on('SIGTERM', sigterm);
  try {
    return await serve(argv, {
      stopped: () => stopSignal,
      onStop: (f) => { stopServer = f; if (stopSignal) f(); },
      attach: (e) => { ex = e; if (stopSignal) ex.serve_request_stop(); },
    });
  } finally {
    process.off('SIGINT', sigint);
    process.off('SIGTERM', sigterm);
  }
}

async function serve(argv, signals) {
  const gpuRef = { gpu: null };
  const w = await instantiate(gpuRef);
  const { ex, cstr, alloc, dv } = w;
  signals.attach(ex);
  // the options, parsed by the native code (serve_options.c): --help, usage errors and exit statuses as natively
  const args = ['serve', ...argv].map((a) => alloc(a));
  const argvPtr = ex.malloc(4 * args.length);
  args.forEach((p, i) => dv().setUint32(argvPtr + 4 * i, p, true));
  // through JSPI: --web's and --api-key-file's files are looked at through WASI, whose file calls may suspend
  const parsed = await WebAssembly.promising(ex.serve_parse)(args.length, argvPtr); // argv stays: options point into it
  if (parsed >= 0) return parsed;
  const host = cstr(ex.serve_host()), port = ex.serve_port(), timeoutS = ex.serve_timeout();
  const verbose = ex.serve_verbose();
  const portError = await checkPort(host, port);
  if (portError) {
    say(2, `wgllm serve: ${portError}\n`);
    return 1;
  }

  gpuRef.gpu = await createGpu();
  const t0 = performance.now();
  const loaded = await w.load();
  if (loaded) return loaded;
  if (signals.stopped()) { // the signal came after the warm-up's last check
    await w.stop();
    return 0;
  }
  if (ex.serve_warm_up()) {
    say(2, `wgllm serve: warmed up in ${((performance.now() - t0) / 1000).toFixed(2)} s (sessions made and ` +
      'pipelines built; --no-warmup skips it)\n');
  }

  // ---- the scheduler on the event loop: steps while work remains, the waiting exchanges pumped after each
  const live = new Set(); // exchanges not yet finished
  let stepping = null, stopping = false;
  const kick = () => {
    if (stepping || stopping) return;
    stepping = (async () => {
      try {
        for (;;) {
          const more = await w.step();
          pumpAll();
          if (!more || stopping) break;
          await new Promise((r) => setImmediate(r)); // the sockets' events between steps
        }
      } catch (e) {
        say(2, `wgllm serve: the scheduler failed: ${e && e.stack || e}\n`);
        process.exit(1);
      } finally {
        stepping = null;
      }
    })();
  };
  const pumpAll = () => { for (const st of [...live]) if (st.waiting) pump(st); };

  // one request: st = { x, req, res, t0, what, streamed, head, finished, waiting }
  const finish = (st, how = '') => {
    if (st.finished) return;
    st.finished = true;
    live.delete(st);
    if (verbose) {
      const tp = ex.serve_tokens(st.x);
      const gen = dv().getUint32(tp, true), batched = dv().getUint32(tp + 4, true);
      say(2, `wgllm serve: ${st.what} ${ex.serve_status(st.x)}, ${gen} tokens (${batched} batched), ` +
        `${((performance.now() - st.t0) / 1000).toFixed(3)} s${how}\n`);
    }
    ex.serve_free(st.x); // a task not finished is cancelled: its job and session freed at the next step
    st.x = 0;
    kick();
  };
  const readHead = (p) => {
    const d = dv();
    const headers = {};
    const n = d.getUint32(p + OFF.nHeaders, true);
    for (let i = 0; i < n; i++) {
      headers[cstr(d.getUint32(p + OFF.headers + 8 * i, true))] = cstr(d.getUint32(p + OFF.headers + 8 * i + 4, true));
    }
    return { status: d.getInt32(p + OFF.status, true), streamed: d.getInt32(p + OFF.streamed, true), headers };
  };
  // sends what the exchange has; leaves it waiting for the scheduler's next step when it has nothing yet
  const pump = (st) => {
    st.waiting = false;
    while (!st.finished) {
      const p = ex.serve_next(st.x);
      const kind = dv().getUint32(p + OFF.kind, true);
      if (kind === OUT.WAIT) {
        st.waiting = true;
        return;
      }
      if (kind === OUT.HEAD) {
        st.head = readHead(p);
        if (st.head.streamed) {
          st.res.writeHead(st.head.status, st.head.headers);
          st.res.flushHeaders();
        }
      } else if (kind === OUT.DATA) {
        const d = dv();
        const bytes = Buffer.from(new Uint8Array(ex.memory.buffer, d.getUint32(p + OFF.data, true),
          d.getUint32(p + OFF.len, true)));
        if (st.head.streamed) st.res.write(bytes);
        else {
          st.res.writeHead(st.head.status, { ...st.head.headers, 'Content-Length': bytes.length });
          st.res.write(bytes);
        }
      } else if (kind === OUT.FILE) {
        const head = readHead(p), file = cstr(dv().getUint32(p + OFF.path, true));
        let size = -1;
        try {
          const s = fs.statSync(file);
          if (s.isFile()) size = s.size;
        } catch (e) { /* not there */ }
        if (size < 0) {
          ex.serve_no_file(st.x);
          continue;
        }
        st.res.writeHead(head.status, { ...head.headers, 'Content-Length': size });
        if (st.req.method === 'HEAD') {
          st.res.end();
          finish(st);
          return;
        }
        const stream = fs.createReadStream(file);
        stream.on('error', () => st.res.destroy());
        stream.on('end', () => finish(st));
        stream.pipe(st.res);
        st.waiting = false;
        return;
      } else if (kind === OUT.END) {
        st.res.end();
        finish(st);
      } else { // ABORT
        st.res.destroy();
        finish(st, ' (connection error)');
      }
    }
  };

  const onRequest = (req, res) => {
    const path = requestPath(req.url);
    const st = { x: 0, req, res, t0: performance.now(), waiting: false, finished: false, head: null,
      what: `${req.method.slice(0, 8)} ${path.toString('latin1').slice(0, 80)}` };
    const strs = [alloc(req.method), alloc(path)];
    const auth = req.headers.authorization, clen = req.headers['content-length'];
    if (auth !== undefined) strs.push(alloc(Buffer.from(auth, 'latin1')));
    if (clen !== undefined) strs.push(alloc(clen));
    st.x = ex.serve_request(strs[0], strs[1], auth !== undefined ? strs[2] : 0,
      clen !== undefined ? strs[strs.length - 1] : 0);
    for (const p of strs) ex.free(p);
    if (!st.x) {
      res.destroy();
      return;
    }
    live.add(st);
    // the client has gone before its answer ended: its exchange goes (its task cancelled)
    res.on('close', () => { if (!st.finished) finish(st, res.writableFinished ? '' : ' (client closed)'); });
    res.on('error', () => {}); // a write to a client that has gone: 'close' follows
    if (!ex.serve_wants_body(st.x)) {
      // answered without the body (404, 401, 413, a file...): a body the client sends is not waited for
      if (req.headers['transfer-encoding'] || Number(clen) > 0) res.setHeader('Connection', 'close');
      req.resume();
      pump(st);
      return;
    }
    req.on('data', (chunk) => {
      if (st.finished) return;
      const p = ex.malloc(chunk.length || 1);
      new Uint8Array(ex.memory.buffer).set(chunk, p);
      const rc = ex.serve_body(st.x, p, chunk.length);
      ex.free(p);
      if (rc) {
        res.destroy();
        finish(st, ' (out of memory)');
      }
    });
    req.on('end', () => {
      if (st.finished) return;
      ex.serve_run(st.x);
      pump(st);
      kick();
    });
  };
  // headers up to 32 KiB, as libmicrohttpd's connection memory takes (more: 431); no limit on a request's total time,
  // only the idle timeout below (a slow client that keeps sending is served, as natively)
  const server = http.createServer({ requestTimeout: 0, keepAliveTimeout: timeoutS * 1000, maxHeaderSize: 32 << 10 },
    onRequest);
  server.maxConnections = ex.serve_max_connections();
  // the idle timeout: a connection that sends or reads nothing for --timeout seconds closes, but not while its
  // request waits for the model (that is not the client's idleness)
  server.setTimeout(timeoutS * 1000, (socket) => {
    const busy = [...live].some((st) => st.req.socket === socket);
    if (busy) socket.setTimeout(timeoutS * 1000);
    else socket.destroy();
  });
  const listenError = await new Promise((resolve) => {
    server.once('error', resolve);
    server.listen(port, host, () => resolve(null));
  });
  if (listenError) {
    say(2, `wgllm serve: cannot listen on ${host} port ${port}: ${ERRNO_TEXT[listenError.code] || listenError.message}\n`);
    await w.stop();
    return 1;
  }
  say(1, `wgllm serve: ${cstr(ex.serve_banner(server.address().port))}\n`);

  // ---- until SIGINT / SIGTERM
  await new Promise((resolve) => signals.onStop(resolve));
  say(2, `wgllm serve: ${signals.stopped()}: stopping\n`);
  stopping = true;
  server.close();
  server.closeAllConnections();
  for (const st of [...live]) {
    st.res.destroy();
    finish(st, ' (shutdown)');
  }
  if (stepping) await stepping;
  await w.stop();
  return 0;
}

// run as a program: node node/lib/serve.mjs ARGS (what bin/wgllm.mjs's `serve` does)
if (process.argv[1] && import.meta.url === new URL(`file://${fs.realpathSync(process.argv[1])}`).href) {
  main(process.argv.slice(2)).then((code) => process.exit(code), (e) => {
    say(2, `wgllm serve: ${e && e.stack || e}\n`);
    process.exit(1);
  });
}
