// The WASI (preview1) calls wgllm.wasm (and the test programs built for the browser) make, over files JavaScript
// registers: this is the browser build's file access (the engine's stat/fopen/fread reach these). A file is an
// ArrayBuffer or typed array, a Blob / File (read a slice at a time: fd_read suspends the wasm through JSPI while
// the slice arrives), or a URL (fetched into a Blob when registered). A mount maps a path prefix to a URL prefix
// whose files are fetched when first opened (a server directory answers with the header x-wgllm-directory, as
// tests/web/serve.mjs does). Files the program creates live in memory. Paths are absolute under one preopened
// "/"; directories are implied by the files' paths. Standard output and error go to a callback line by line.
// No browser-only globals and no Node imports: on Node.js the caller passes a file-system backend (options.fs,
// node/lib/node_fs.mjs over node:fs), and paths not registered or mounted are then the machine's own files, read a
// range at a time; files the program writes are kept in memory and written back through it when closed.

const E = { SUCCESS: 0, BADF: 8, EXIST: 20, INVAL: 28, IO: 29, NOENT: 44, NOTDIR: 54, ISDIR: 31, NOSYS: 52 };
const FT = { DIRECTORY: 3, REGULAR: 4, CHAR: 2 };
const PREOPEN = 3;

export class WasiExit extends Error {
  constructor(code) { super(`exit(${code})`); this.code = code; }
}

// Returns { imports, attach(exports), addFile(path, source), removeFile(path), files, streamRange }.
// options: { args: [..], env: {K: V}, write(fd, text), mounts: { '/repo': 'http://host/' }, cwd: the directory
// relative paths the program passes to JavaScript (not through WASI) are relative to, fs: a file-system backend
// { stat(path) -> { dir: bool, size } | null, read(path, offset, length) -> Uint8Array, readdir(path) -> [names],
// writeFile(path, bytes), mkdir(path), unlink(path), rmdir(path), rename(from, to) } (synchronous; absolute paths;
// rename optional), writeRaw(fd, bytes):
// standard output and error unbuffered in place of write's lines, readStdin(max) -> Uint8Array (empty at the end) }
export function createWasi(options = {}) {
  let ex = null;
  const files = new Map(); // "/dir/name" -> { size, bytes (Uint8Array) | blob, writable }
  const dirs = new Set(['/']); // directories known apart from the files' paths (mounted ones, created ones)
  const missing = new Set(); // mounted paths the server does not have
  const listings = new Map(); // mounted directory -> the names the server listed
  const mounts = Object.entries(options.mounts || {});
  const fds = new Map(); // fd -> { path, file, pos } | { dir: path }
  let nextFd = PREOPEN + 1;
  const args = options.args || ['wgllm'];
  const env = Object.entries(options.env || {}).map(([k, v]) => `${k}=${v}`);
  const write = options.write || ((fd, text) => (fd === 2 ? console.error : console.log)(text));
  const hostFs = options.fs || null;
  const pending = { 1: '', 2: '' };
  const enc = new TextEncoder();
  const dec = new TextDecoder();
  const dv = () => new DataView(ex.memory.buffer);
  const u8 = () => new Uint8Array(ex.memory.buffer);
  const norm = (p) => {
    const out = [];
    for (const s of p.split('/')) {
      if (!s || s === '.') continue;
      if (s === '..') out.pop();
      else out.push(s);
    }
    return '/' + out.join('/');
  };
  // fetches a mounted path on first use: a file, a directory, or known missing
  const ensure = async (p) => {
    if (files.has(p) || dirs.has(p) || missing.has(p)) return;
    const m = mounts.find(([pre]) => p === pre || p.startsWith(pre + '/'));
    if (!m) {
      if (!hostFs) return;
      const st = hostFs.stat(p);
      if (!st) missing.add(p);
      else if (st.dir) { dirs.add(p); listings.set(p, hostFs.readdir(p)); }
      else files.set(p, { size: st.size, hostPath: p });
      return;
    }
    const r = await fetch(m[1] + p.slice(m[0].length).replace(/^\//, ''));
    if (!r.ok) { missing.add(p); return; }
    if (r.headers.get('x-wgllm-directory')) {
      dirs.add(p);
      try { listings.set(p, await r.json()); } catch (e) { listings.set(p, []); }
      return;
    }
    const blob = await r.blob();
    files.set(p, { size: blob.size, blob });
  };
  const pathAt = (dirfd, ptr, len) => {
    const rel = dec.decode(u8().subarray(ptr, ptr + len));
    const d = fds.get(dirfd);
    if (!d || d.dir === undefined) return null;
    return norm(rel.startsWith('/') ? rel : d.dir + '/' + rel);
  };
  const isDir = (p) => {
    if (dirs.has(p)) return true;
    const pre = p + '/';
    for (const k of files.keys()) if (k.startsWith(pre)) return true;
    return false;
  };
  const filestat = (ptr, type, size) => {
    const d = dv();
    for (let i = 0; i < 64; i += 8) d.setBigUint64(ptr + i, 0n, true);
    d.setUint8(ptr + 16, type);
    d.setBigUint64(ptr + 24, 1n, true); // nlink
    d.setBigUint64(ptr + 32, BigInt(size), true);
  };
  // bytes [offset, offset + length) of a file, as a Uint8Array (awaited for a Blob)
  const readRange = async (file, offset, length) => {
    const end = Math.min(file.size, offset + length);
    if (end <= offset) return new Uint8Array(0);
    if (file.bytes) return file.bytes.slice(offset, end);
    if (file.hostPath) return hostFs.read(file.hostPath, offset, end - offset);
    return new Uint8Array(await file.blob.slice(offset, end).arrayBuffer());
  };

  // a file the program wrote, written back to the machine's file (options.fs) when closed or synced: WASI's status
  const writeBack = (f) => {
    const file = f.file;
    if (!file || !file.dirty || !file.hostPath || !hostFs || !file.bytes) return E.SUCCESS;
    try { hostFs.writeFile(file.hostPath, file.bytes.subarray(0, file.size)); } catch (e) { return E.IO; }
    file.dirty = false;
    return E.SUCCESS;
  };

  const imports = {
    args_sizes_get(argc, bufSize) {
      dv().setUint32(argc, args.length, true);
      dv().setUint32(bufSize, args.reduce((n, a) => n + enc.encode(a).length + 1, 0), true);
      return E.SUCCESS;
    },
    args_get(argv, buf) {
      let p = buf;
      args.forEach((a, i) => {
        const b = enc.encode(a);
        dv().setUint32(argv + 4 * i, p, true);
        u8().set(b, p);
        u8()[p + b.length] = 0;
        p += b.length + 1;
      });
      return E.SUCCESS;
    },
    environ_sizes_get(count, bufSize) {
      dv().setUint32(count, env.length, true);
      dv().setUint32(bufSize, env.reduce((n, a) => n + enc.encode(a).length + 1, 0), true);
      return E.SUCCESS;
    },
    environ_get(environ, buf) {
      let p = buf;
      env.forEach((a, i) => {
        const b = enc.encode(a);
        dv().setUint32(environ + 4 * i, p, true);
        u8().set(b, p);
        u8()[p + b.length] = 0;
        p += b.length + 1;
      });
      return E.SUCCESS;
    },
    clock_res_get(id, out) { dv().setBigUint64(out, 1000n, true); return E.SUCCESS; },
    clock_time_get(id, precision, out) {
      const ns = id === 0 ? BigInt(Date.now()) * 1000000n : BigInt(Math.round(performance.now() * 1e6));
      dv().setBigUint64(out, ns, true);
      return E.SUCCESS;
    },
    random_get(buf, len) { crypto.getRandomValues(u8().subarray(buf, buf + len)); return E.SUCCESS; },
    proc_exit(code) { throw new WasiExit(code); },
    sched_yield() { return E.SUCCESS; },
    fd_write(fd, iovs, n, nwritten) {
      let total = 0;
      const chunks = [];
      for (let i = 0; i < n; i++) {
        const p = dv().getUint32(iovs + 8 * i, true), l = dv().getUint32(iovs + 8 * i + 4, true);
        chunks.push(u8().slice(p, p + l));
        total += l;
      }
      if (fd !== 1 && fd !== 2) {
        const f = fds.get(fd);
        if (!f || !f.file || !f.file.writable) return E.BADF;
        const file = f.file;
        file.dirty = true;
        if (f.append) f.pos = file.size;
        const end = f.pos + total;
        if (end > file.bytes.length) {
          const b = new Uint8Array(Math.max(end, 2 * file.bytes.length));
          b.set(file.bytes.subarray(0, file.size));
          file.bytes = b;
        }
        for (const c of chunks) { file.bytes.set(c, f.pos); f.pos += c.length; }
        file.size = Math.max(file.size, end);
        dv().setUint32(nwritten, total, true);
        return E.SUCCESS;
      }
      if (options.writeRaw) {
        for (const c of chunks) options.writeRaw(fd, c);
        dv().setUint32(nwritten, total, true);
        return E.SUCCESS;
      }
      let text = pending[fd];
      for (const c of chunks) text += dec.decode(c, { stream: true });
      const lines = text.split('\n');
      pending[fd] = lines.pop();
      for (const l of lines) write(fd, l);
      dv().setUint32(nwritten, total, true);
      return E.SUCCESS;
    },
    fd_read: new WebAssembly.Suspending(async (fd, iovs, n, nread) => {
      const f = fds.get(fd);
      let total = 0;
      if (fd === 0 && options.readStdin) { // one read of what standard input has, spread over the buffers
        let room = 0;
        for (let i = 0; i < n; i++) room += dv().getUint32(iovs + 8 * i + 4, true);
        const b = room ? options.readStdin(room) : new Uint8Array(0);
        for (let i = 0, at = 0; i < n && at < b.length; i++) {
          const p = dv().getUint32(iovs + 8 * i, true), l = Math.min(dv().getUint32(iovs + 8 * i + 4, true), b.length - at);
          u8().set(b.subarray(at, at + l), p);
          at += l;
        }
        dv().setUint32(nread, b.length, true);
        return E.SUCCESS;
      }
      if (!f || !f.file) return E.BADF;
      for (let i = 0; i < n; i++) {
        const p = dv().getUint32(iovs + 8 * i, true), l = dv().getUint32(iovs + 8 * i + 4, true);
        let b;
        try { b = await readRange(f.file, f.pos, l); } catch (e) { return E.IO; } // the file gone or unreadable
        u8().set(b, p);
        f.pos += b.length;
        total += b.length;
        if (b.length < l) break;
      }
      dv().setUint32(nread, total, true);
      return E.SUCCESS;
    }),
    fd_pread: new WebAssembly.Suspending(async (fd, iovs, n, offset, nread) => {
      const f = fds.get(fd);
      if (!f || !f.file) return E.BADF;
      let total = 0, pos = Number(offset);
      for (let i = 0; i < n; i++) {
        const p = dv().getUint32(iovs + 8 * i, true), l = dv().getUint32(iovs + 8 * i + 4, true);
        let b;
        try { b = await readRange(f.file, pos, l); } catch (e) { return E.IO; } // the file gone or unreadable
        u8().set(b, p);
        pos += b.length;
        total += b.length;
        if (b.length < l) break;
      }
      dv().setUint32(nread, total, true);
      return E.SUCCESS;
    }),
    fd_seek(fd, offset, whence, out) {
      const f = fds.get(fd);
      if (!f || !f.file) return E.BADF;
      const base = whence === 0 ? 0 : whence === 1 ? f.pos : f.file.size;
      const pos = base + Number(offset);
      if (pos < 0) return E.INVAL;
      f.pos = pos;
      dv().setBigUint64(out, BigInt(pos), true);
      return E.SUCCESS;
    },
    fd_tell(fd, out) {
      const f = fds.get(fd);
      if (!f || !f.file) return E.BADF;
      dv().setBigUint64(out, BigInt(f.pos), true);
      return E.SUCCESS;
    },
    fd_close(fd) {
      const f = fds.get(fd);
      if (!f || fd === PREOPEN) return E.BADF;
      fds.delete(fd);
      return writeBack(f);
    },
    fd_fdstat_get(fd, out) {
      const d = dv();
      const f = fds.get(fd);
      let type;
      if (fd <= 2) type = FT.CHAR;
      else if (!f) return E.BADF;
      else type = f.file ? FT.REGULAR : FT.DIRECTORY;
      d.setUint8(out, type);
      d.setUint16(out + 2, 0, true);
      d.setBigUint64(out + 8, 0xffffffffffffffffn, true); // rights
      d.setBigUint64(out + 16, 0xffffffffffffffffn, true);
      return E.SUCCESS;
    },
    fd_fdstat_set_flags(fd, flags) { return E.SUCCESS; },
    fd_filestat_get(fd, out) {
      const f = fds.get(fd);
      if (fd <= 2) { filestat(out, FT.CHAR, 0); return E.SUCCESS; }
      if (!f) return E.BADF;
      filestat(out, f.file ? FT.REGULAR : FT.DIRECTORY, f.file ? f.file.size : 0);
      return E.SUCCESS;
    },
    fd_prestat_get(fd, out) {
      if (fd !== PREOPEN) return E.BADF;
      dv().setUint32(out, 0, true); // a directory
      dv().setUint32(out + 4, 1, true); // "/"
      return E.SUCCESS;
    },
    fd_prestat_dir_name(fd, p, len) {
      if (fd !== PREOPEN) return E.BADF;
      u8()[p] = 47; // "/"
      return E.SUCCESS;
    },
    path_filestat_get: new WebAssembly.Suspending(async (dirfd, flags, ptr, len, out) => {
      const p = pathAt(dirfd, ptr, len);
      if (p === null) return E.BADF;
      await ensure(p);
      const f = files.get(p);
      if (f) filestat(out, FT.REGULAR, f.size);
      else if (isDir(p)) filestat(out, FT.DIRECTORY, 0);
      else return E.NOENT;
      return E.SUCCESS;
    }),
    // oflags: 1 O_CREAT, 2 O_DIRECTORY, 4 O_EXCL, 8 O_TRUNC; fdflags 1: append. Created files live in memory.
    path_open: new WebAssembly.Suspending(async (dirfd, dirflags, ptr, len, oflags, rightsBase, rightsInh, fdflags, out) => {
      const p = pathAt(dirfd, ptr, len);
      if (p === null) return E.BADF;
      await ensure(p);
      let f = files.get(p);
      if (f && (oflags & 4) && (oflags & 1)) return E.EXIST;
      if (!f && (oflags & 1) && !isDir(p)) {
        f = { size: 0, bytes: new Uint8Array(256), writable: true };
        files.set(p, f);
      }
      if (f && (oflags & 8)) {
        if (!f.writable) { const b = await readRange(f, 0, f.size); f.bytes = b; f.blob = null; f.writable = true; }
        f.size = 0;
        f.dirty = true;
      }
      if (f && hostFs && (oflags & 1) && !f.hostPath && !mounts.some(([pre]) => p.startsWith(pre + '/'))) {
        f.hostPath = p; // created: written to the machine's file when closed
        f.dirty = true;
      }
      const fd = nextFd++;
      if (f) {
        if (oflags & 2) return E.NOTDIR;
        if (!f.writable && (rightsBase & 64n)) { // opened for writing: an in-memory copy from now on
          f.bytes = await readRange(f, 0, f.size);
          f.blob = null;
          f.writable = true;
        }
        fds.set(fd, { path: p, file: f, pos: 0, append: (fdflags & 1) !== 0 });
      } else if (isDir(p)) fds.set(fd, { dir: p });
      else return E.NOENT;
      dv().setUint32(out, fd, true);
      return E.SUCCESS;
    }),
    path_unlink_file: new WebAssembly.Suspending(async (dirfd, ptr, len) => {
      const p = pathAt(dirfd, ptr, len);
      if (p === null) return E.BADF;
      await ensure(p);
      const f = files.get(p);
      if (!f) return E.NOENT;
      files.delete(p);
      missing.add(p);
      if (f.hostPath && hostFs) { try { hostFs.unlink(f.hostPath); } catch (e) { /* never written */ } }
      return E.SUCCESS;
    }),
    // rename(2) of a file (the CLI writes NAME.tmp.PID, then renames it onto NAME): in memory, and on the machine
    // (the backend's rename, or its bytes written at the new path and the old one removed) when it is there
    path_rename: new WebAssembly.Suspending(async (fd1, p1, l1, fd2, p2, l2) => {
      const a = pathAt(fd1, p1, l1), b = pathAt(fd2, p2, l2);
      if (a === null || b === null) return E.BADF;
      await ensure(a);
      await ensure(b);
      const f = files.get(a);
      if (!f) return isDir(a) ? E.NOSYS : E.NOENT; // directories are not renamed here
      if (isDir(b)) return E.ISDIR;
      if (a === b) return E.SUCCESS;
      const onHost = (q) => hostFs && !mounts.some(([pre]) => q === pre || q.startsWith(pre + '/'));
      if (f.hostPath && onHost(b)) {
        if (!f.dirty) { // on the machine as it is: moved there
          try {
            if (hostFs.rename) hostFs.rename(f.hostPath, b);
            else { hostFs.writeFile(b, await readRange(f, 0, f.size)); hostFs.unlink(f.hostPath); }
          } catch (e) { return E.IO; }
        }
        f.hostPath = b; // a file still open is written at its new name when closed
      }
      files.delete(a);
      missing.add(a);
      files.set(b, f);
      missing.delete(b);
      for (const e of fds.values()) if (e.path === a) e.path = b;
      return E.SUCCESS;
    }),
    path_create_directory: new WebAssembly.Suspending(async (dirfd, ptr, len) => {
      const p = pathAt(dirfd, ptr, len);
      if (p === null) return E.BADF;
      await ensure(p);
      if (isDir(p) || files.has(p)) return E.EXIST;
      if (hostFs && !mounts.some(([pre]) => p.startsWith(pre + '/'))) {
        try { hostFs.mkdir(p); } catch (e) { return E.NOENT; }
      }
      dirs.add(p);
      missing.delete(p);
      return E.SUCCESS;
    }),
    path_remove_directory(dirfd, ptr, len) {
      const p = pathAt(dirfd, ptr, len);
      if (p === null) return E.BADF;
      if (hostFs && dirs.has(p) && !mounts.some(([pre]) => p.startsWith(pre + '/'))) {
        try { hostFs.rmdir(p); } catch (e) { return E.INVAL; }
      }
      dirs.delete(p);
      missing.add(p);
      return E.SUCCESS;
    },
    fd_sync(fd) { const f = fds.get(fd); return f ? writeBack(f) : E.SUCCESS; },
    fd_datasync(fd) { const f = fds.get(fd); return f ? writeBack(f) : E.SUCCESS; },
    fd_filestat_set_size(fd, size) {
      const f = fds.get(fd);
      if (!f || !f.file || !f.file.writable) return E.BADF;
      const n = Number(size);
      if (n > f.file.bytes.length) { const b = new Uint8Array(n); b.set(f.file.bytes.subarray(0, f.file.size)); f.file.bytes = b; }
      f.file.size = n;
      return E.SUCCESS;
    },
    // the entries of a directory (a mounted one as the server listed it, else the files and directories under it)
    // as WASI dirents from index `cookie` on, as many as fit
    fd_readdir(fd, buf, len, cookie, bufused) {
      const f = fds.get(fd);
      if (!f || f.dir === undefined) return E.BADF;
      const pre = f.dir === '/' ? '/' : f.dir + '/';
      const names = new Set(listings.get(f.dir) || []);
      for (const k of [...files.keys(), ...dirs]) if (k.startsWith(pre) && k.length > pre.length) names.add(k.slice(pre.length).split('/')[0]);
      const list = ['.', '..', ...[...names].sort()];
      let at = 0;
      for (let i = Number(cookie); i < list.length && at < len; i++) {
        const name = enc.encode(list[i]);
        const p = norm(pre + list[i]);
        const type = i < 2 || isDir(p) ? FT.DIRECTORY : FT.REGULAR;
        const ent = new Uint8Array(24 + name.length);
        const d = new DataView(ent.buffer);
        d.setBigUint64(0, BigInt(i + 1), true); // d_next: the cookie of the next entry
        d.setBigUint64(8, BigInt(i + 1), true); // d_ino
        d.setUint32(16, name.length, true);
        d.setUint8(20, type);
        ent.set(name, 24);
        const n = Math.min(ent.length, len - at);
        u8().set(ent.subarray(0, n), buf + at);
        at += n;
      }
      dv().setUint32(bufused, at, true);
      return E.SUCCESS;
    },
    poll_oneoff() { return E.NOSYS; },
  };

  return {
    imports,
    attach(exports) { ex = exports; fds.set(PREOPEN, { dir: '/' }); },
    // source: ArrayBuffer, a typed array, a Blob or File, or a URL string (fetched now into a Blob)
    async addFile(path, source) {
      let file;
      if (typeof source === 'string' || source instanceof URL) {
        const r = await fetch(source);
        if (!r.ok) throw new Error(`fetching ${source}: HTTP ${r.status}`);
        const blob = await r.blob();
        file = { size: blob.size, blob };
      } else if (source instanceof ArrayBuffer) file = { size: source.byteLength, bytes: new Uint8Array(source) };
      else if (ArrayBuffer.isView(source)) {
        file = { size: source.byteLength, bytes: new Uint8Array(source.buffer, source.byteOffset, source.byteLength) };
      } else if (source && typeof source.slice === 'function' && typeof source.size === 'number') {
        file = { size: source.size, blob: source };
      } else throw new Error(`addFile ${path}: not an ArrayBuffer, typed array, Blob or URL`);
      files.set(norm(path), file);
      return file.size;
    },
    removeFile(path) { files.delete(norm(path)); },
    files,
    readRange,
    // the registered (or mounted) file at a path the program gave: { size, bytes | blob } or undefined
    async file(p) {
      const q = norm(p.startsWith('/') ? p : (options.cwd || '/') + '/' + p);
      await ensure(q);
      return files.get(q);
    },
    flush() { for (const fd of [1, 2]) if (pending[fd]) { write(fd, pending[fd]); pending[fd] = ''; } },
  };
}
