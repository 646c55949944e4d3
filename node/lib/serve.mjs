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
import dns from 'node:dns/promises';
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
const OFF = { kind: 0, status: 4, streamed: 8, nHeaders: 12, headers: 16, data: 80, len: 84, path: 88, close: 92 };
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

// whether --host resolves to loopback addresses only (as serve_http_is_loopback: then Host is checked)
async function isLoopback(host) {
  try {
    const all = await dns.lookup(host, { all: true });
    return all.length > 0 && all.every((a) => (a.family === 4 ? a.address.startsWith('127.') : a.address === '::1'));
  } catch (e) {
    return false;
  }
}

// The answer to a request Node's HTTP parser refused (the handler never saw it), as the native transport answers
// the same framing: OpenAI's error object, the connection closed. Node refuses more than libmicrohttpd: two
// Content-Length headers even when they agree, and Transfer-Encoding headers given twice.
function framingError(err) {
  const reason = String(err.reason || err.message || err.code);
  let status = 400, type = 'invalid_request_error', code = 'bad_framing', message;
  if (err.code === 'HPE_UNEXPECTED_CONTENT_LENGTH') message = `the request's Content-Length headers are refused (${reason})`;
  else if (err.code === 'HPE_INVALID_TRANSFER_ENCODING' && /Content-Length/.test(reason))
    message = "Content-Length and Transfer-Encoding together are refused (request smuggling behind a proxy)";
  else if (err.code === 'HPE_INVALID_TRANSFER_ENCODING') message = `the request's Transfer-Encoding is refused (${reason})`;
  else if (err.code === 'HPE_HEADER_OVERFLOW') {
    status = 431;
    code = 'request_header_fields_too_large';
    message = 'the request head is over 32 KiB';
  } else {
    code = 'bad_request';
    message = `the request is not valid HTTP/1.1 (${reason})`;
  }
  const body = JSON.stringify({ error: { message, type, param: null, code } });
  return `HTTP/1.1 ${status} ${http.STATUS_CODES[status]}\r\nContent-Type: application/json\r\n` +
    `Content-Length: ${Buffer.byteLength(body)}\r\nConnection: close\r\n\r\n${body}`;
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

  const loopback = await isLoopback(host);
  gpuRef.gpu = await createGpu();
  const t0 = performance.now();
  const loaded = await w.load(loopback ? 1 : 0);
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
  // the device lost and the model not reloaded (serve_fatal): the server stops and exits 1
  let fatal = null, stopFatal = null;
  const stopped = new Promise((resolve) => { stopFatal = resolve; signals.onStop(resolve); });
  const kick = () => {
    if (stepping || stopping) return;
    stepping = (async () => {
      try {
        for (;;) {
          const more = await w.step();
          pumpAll();
          const why = cstr(ex.serve_fatal());
          if (why) {
            fatal = why;
            stopFatal();
            break;
          }
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
    // close: the request's body is not read (refused framing, a body over --max-body): the connection closes after
    if (d.getInt32(p + OFF.close, true)) headers.Connection = 'close';
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
        if (st.head.headers.Connection === 'close') st.closing = true;
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
    // the head as the native transport passes it: Host, Origin and Content-Type are checked there (403, 415), and
    // Transfer-Encoding (501 for a coding other than chunked); header values are bytes (latin1)
    const h = req.headers;
    const strs = [req.method, path, h.authorization, h['content-length'], h['transfer-encoding'], h.host, h.origin,
      h['content-type']].map((v) => (v === undefined ? 0 : alloc(Buffer.isBuffer(v) ? v : Buffer.from(v, 'latin1'))));
    st.x = ex.serve_request(...strs);
    for (const p of strs) if (p) ex.free(p);
    if (!st.x) {
      res.destroy();
      return;
    }
    sockets.set(req.socket, st);
    live.add(st);
    // the client has gone before its answer ended: its exchange goes (its task cancelled)
    res.on('close', () => { if (!st.finished) finish(st, res.writableFinished ? '' : ' (client closed)'); });
    res.on('error', () => {}); // a write to a client that has gone: 'close' follows
    if (!ex.serve_wants_body(st.x)) {
      // answered without the body (404, 401, 413, a file...): a body the client sends is not waited for
      if (h['transfer-encoding'] || Number(h['content-length']) > 0) {
        res.setHeader('Connection', 'close');
        st.closing = true;
      }
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
      } else if (!ex.serve_wants_body(st.x)) { // past --max-body (a chunked body): 413 now, the rest not waited for
        req.pause();
        ex.serve_run(st.x);
        pump(st);
      }
    });
    req.on('end', () => {
      if (st.finished || !ex.serve_wants_body(st.x)) return;
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
  // a request Node's parser refused: answered as the native transport answers bad framing (a request whose head
  // was handled and whose body then failed to parse: its exchange goes, and its answer, when not begun)
  const sockets = new WeakMap(); // socket -> its latest request's st
  server.on('clientError', (err, socket) => {
    const st = sockets.get(socket);
    // its answer is the connection's last (it says Connection: close), or under way: no second one
    const answered = st && (st.closing || (!st.finished && st.res.headersSent));
    if (st && !st.finished) finish(st, ' (bad framing)');
    if (err.code === 'ECONNRESET' || !socket.writable) socket.destroy();
    else if (answered) socket.end();
    else socket.end(framingError(err));
    setTimeout(() => socket.destroy(), 2000).unref();
  });
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
  await stopped;
  say(2, fatal ? `wgllm serve: exiting: ${fatal}\n` : `wgllm serve: ${signals.stopped()}: stopping\n`);
  stopping = true;
  server.close();
  server.closeAllConnections();
  for (const st of [...live]) {
    st.res.destroy();
    finish(st, ' (shutdown)');
  }
  if (stepping) await stepping;
  await w.stop();
  return fatal ? 1 : 0;
}

// run as a program: node node/lib/serve.mjs ARGS (what bin/wgllm.mjs's `serve` does)
if (process.argv[1] && import.meta.url === new URL(`file://${fs.realpathSync(process.argv[1])}`).href) {
  main(process.argv.slice(2)).then((code) => process.exit(code), (e) => {
    say(2, `wgllm serve: ${e && e.stack || e}\n`);
    process.exit(1);
  });
}
