// A static file server for the browser tests and the demo page (no dependencies): serves a directory on loopback,
// with the MIME types a page needs (.wasm as application/wasm for streaming compilation); a directory answers with
// its entries as JSON and the header x-wgllm-directory (web/wasi.js mounts the served tree that way). Used by run.mjs; also
// `node tests/web/serve.mjs DIR [PORT]` to open the demo page by hand.
import http from 'node:http';
import fs from 'node:fs';
import path from 'node:path';

const TYPES = { '.html': 'text/html', '.js': 'text/javascript', '.mjs': 'text/javascript', '.wasm': 'application/wasm',
  '.json': 'application/json', '.css': 'text/css', '.txt': 'text/plain; charset=utf-8' };

export function serve(root, port = 0) {
  root = path.resolve(root);
  const server = http.createServer((req, res) => {
    const url = new URL(req.url, 'http://x');
    const file = path.join(root, decodeURIComponent(url.pathname));
    if (!file.startsWith(root)) { res.writeHead(403).end(); return; }
    fs.stat(file, (err, st) => {
      if (!err && st.isDirectory()) { // a listing the wasm's file system (web/wasi.js) reads as a directory
        res.writeHead(200, { 'content-type': 'application/json', 'x-wgllm-directory': '1', 'cache-control': 'no-store' })
          .end(JSON.stringify(fs.readdirSync(file)));
        return;
      }
      if (err || !st.isFile()) { res.writeHead(404, { 'content-type': 'text/plain' }).end(`not found: ${url.pathname}`); return; }
      res.writeHead(200, { 'content-type': TYPES[path.extname(file)] || 'application/octet-stream',
        'content-length': st.size, 'cache-control': 'no-store' });
      fs.createReadStream(file).pipe(res);
    });
  });
  return new Promise((resolve) => server.listen(port, '127.0.0.1', () => resolve(server)));
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const s = await serve(process.argv[2] || '.', Number(process.argv[3] || 8000));
  console.log(`serving ${path.resolve(process.argv[2] || '.')} at http://127.0.0.1:${s.address().port}/`);
}
