// The attackers of tests/server/soak.mjs, run by it as a child process at nice 19 (`node soak_attack.mjs CROWD`, CROWD
// slowloris connections per address) until it sends "stop"; then the counts go back as one message. At nice 19 the
// flood's own making (this process's CPU) yields to the server and to lavapipe, whose "GPU" is the same CPU cores;
// the server's handling of the flood does not. Also exports exchange(), the one raw exchange both processes use.
import net from "node:net";
import { port, post } from "./util.mjs";

const MAX_BODY = 65536;

// one exchange from a local address: the answer's bytes, with when each piece came
export function exchange(bytes, { from = "127.0.0.1", timeoutMs = 30000, hold = false } = {}) {
  return new Promise((resolve) => {
    const s = net.connect({ port, host: "127.0.0.1", localAddress: from });
    const pieces = [];
    let done = false;
    const end = (how) => {
      if (done) return;
      done = true;
      clearTimeout(timer);
      s.destroy();
      const text = Buffer.concat(pieces.map((p) => p.d)).toString("latin1");
      const m = /^HTTP\/1\.1 (\d{3})/.exec(text);
      resolve({ status: m ? Number(m[1]) : 0, text, pieces, how });
    };
    const timer = setTimeout(() => end("timeout"), timeoutMs);
    s.on("connect", () => s.write(bytes)); // hold: the rest of a body never comes
    s.on("data", (d) => pieces.push({ t: Date.now(), d }));
    s.on("end", () => end("end"));
    s.on("close", () => end("close"));
    s.on("error", () => end("error"));
  });
}

// ---- the attackers
let stop = false;
const stats = { slowConnects: 0, slowClosed: 0, big: 0, big413: 0, bigOther: [], junk: 0, junkAnswered: 0 };
function slowloris(from) { // one connection trickling its head; a new one when the server closes it
  if (stop) return;
  const s = net.connect({ port, host: "127.0.0.1", localAddress: from });
  stats.slowConnects++;
  let timer = null;
  s.on("connect", () => {
    s.write("POST /v1/chat/completions HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Slow: ");
    timer = setInterval(() => { if (!s.destroyed) s.write("a"); }, 1000);
  });
  s.on("data", () => {});
  s.on("error", () => {});
  s.on("close", () => {
    clearInterval(timer);
    stats.slowClosed++;
    if (!stop) setTimeout(() => slowloris(from), 200 + Math.random() * 300);
  });
  crowd.push(s);
}
const crowd = [];
async function oversized(k) { // declared or chunked bodies past --max-body, the rest held back: 413 each
  while (!stop) {
    const chunked = k % 2 === 1;
    const head = `POST /v1/chat/completions HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n`;
    const bytes = chunked
      ? `${head}Transfer-Encoding: chunked\r\n\r\n${(MAX_BODY + 4096).toString(16)}\r\n${"x".repeat(MAX_BODY + 4096)}`
      : `${head}Content-Length: ${MAX_BODY * 64}\r\n\r\n{"messages": "${"x".repeat(1000)}`;
    const r = await exchange(bytes, { from: "127.0.0.5", timeoutMs: 5000 });
    stats.big++;
    if (r.status === 413) stats.big413++;
    else if (stats.bigOther.length < 5) stats.bigOther.push({ chunked, status: r.status, how: r.how, text: r.text.slice(0, 120) });
    k++;
  }
}
const junkOf = [
  () => Buffer.from(Array.from({ length: 1 + Math.floor(Math.random() * 4000) }, () => Math.floor(Math.random() * 256))),
  () => "GARBAGE / HTTP/1.1\r\n\r\n",
  () => "GET /health HTTP/9.9\r\nHost: 127.0.0.1\r\n\r\n",
  () => "POST /v1/chat/completions HTTP/1.1\r\nHost 127.0.0.1\r\nContent-Length: x\r\n\r\n",
  () => post("/v1/chat/completions", '{"messages": [{"role": "user", "content": "hi"}], "max_tokens": '),
  () => post("/v1/chat/completions", "\xff\xfe not json at all"),
  () => post("/v1/completions", JSON.stringify({ prompt: "x", max_tokens: -3 })),
  () => "POST /v1/completions HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nContent-Length: 5\r\nContent-Length: 7\r\n\r\n{}",
  () => `GET /${"a".repeat(40000)} HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n`,
  () => "POST /v1/completions HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n{\"pro", // then closes
];
async function junk() {
  while (!stop) {
    const k = Math.floor(Math.random() * junkOf.length);
    const r = await exchange(junkOf[k](), { from: "127.0.0.6", timeoutMs: k === junkOf.length - 1 ? 100 : 3000 });
    stats.junk++;
    if (r.status) stats.junkAnswered++;
  }
}

if (process.send) { // the child of soak.mjs, which has an IPC channel to it
  const CROWD = Number(process.argv[2]);
  for (const from of ["127.0.0.2", "127.0.0.3", "127.0.0.4"]) for (let i = 0; i < CROWD; i++) slowloris(from);
  const attackers = [...[...Array(8).keys()].map((k) => oversized(k)), ...[...Array(16).keys()].map(() => junk())];
  await new Promise((resolve) => process.once("message", resolve));
  stop = true;
  for (const s of crowd) s.destroy();
  await Promise.all(attackers);
  process.send(stats, () => process.disconnect());
}
