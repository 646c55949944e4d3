// web/wasi.js's file-system backend on Node.js (its options.fs): the machine's files by absolute path, synchronous
// (a read is a range of a file, so a model's weights are never read whole), and standard streams unbuffered.
import fs from 'node:fs';

export const nodeFs = {
  // { dir, size } or null when the path does not exist (or cannot be seen)
  stat(p) {
    try {
      const st = fs.statSync(p);
      return { dir: st.isDirectory(), size: st.size };
    } catch (e) { return null; }
  },
  read(p, offset, length) {
    const out = new Uint8Array(length);
    const fd = fs.openSync(p, 'r');
    try {
      let done = 0;
      while (done < length) {
        const n = fs.readSync(fd, out, done, length - done, offset + done);
        if (n <= 0) break;
        done += n;
      }
      return done === length ? out : out.subarray(0, done);
    } finally { fs.closeSync(fd); }
  },
  readdir(p) { try { return fs.readdirSync(p); } catch (e) { return []; } },
  writeFile(p, bytes) { fs.writeFileSync(p, bytes); },
  mkdir(p) { fs.mkdirSync(p); },
  unlink(p) { fs.unlinkSync(p); },
  rename(from, to) { fs.renameSync(from, to); },
  rmdir(p) { fs.rmdirSync(p); },
};

// writes all of bytes to a file descriptor (1, 2), waiting out a non-blocking pipe that is full
export function writeAll(fd, bytes) {
  let done = 0;
  while (done < bytes.length) {
    try {
      done += fs.writeSync(fd, bytes, done, bytes.length - done);
    } catch (e) {
      if (e.code !== 'EAGAIN') throw e;
      Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, 1);
    }
  }
}

// up to max bytes of standard input (what one read gives; empty at its end)
export function readStdin(max) {
  const b = new Uint8Array(Math.max(1, Math.min(max, 1 << 16)));
  for (;;) {
    try {
      return b.subarray(0, fs.readSync(0, b, 0, b.length, null));
    } catch (e) {
      if (e.code === 'EOF') return new Uint8Array(0);
      if (e.code !== 'EAGAIN') throw e;
      Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, 5);
    }
  }
}
