// Slow and idle connections against `wgllm serve` (issue 27, item 3): 600 connections from one address (127.0.0.2,
// a loopback address of its own) that never finish their request heads, trickling a byte a second (a slowloris),
// while a client on 127.0.0.1 streams a completion, asks /health and completes a request: /health answers within
// 2 s throughout, the stream's events keep coming, the address gets no more than its --max-connections-per-ip, the
// trickling connections are closed at --header-timeout (however often they send), and a body trickled past
// --body-timeout is cut, and a kept connection idle past --header-timeout (but within --timeout) still serves its
// next request. tests/test_server_http.sh starts the server with --max-connections-per-ip 64
// --header-timeout 3 --body-timeout 3.
import net from "node:net";
import { check, finish, port, post, rawExchange } from "./util.mjs";

const N = Number(process.env.SLOWLORIS_N || 600), PER_IP = 64, HEADER_TIMEOUT = 3;
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

// /health from 127.0.0.1: its status and how long it took
async function health() {
  const t0 = Date.now();
  const r = await rawExchange(`GET /health HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n`, { timeoutMs: 5000 });
  return { status: r.status, ms: Date.now() - t0 };
}

// a stream from 127.0.0.1, recording when each event came
function stream(maxTokens) {
  return new Promise((resolve) => {
    const times = [];
    const body = JSON.stringify({ prompt: "And God said", max_tokens: maxTokens, ignore_eos: true, stream: true, temperature: 0 });
    const sock = net.connect(port, "127.0.0.1");
    let text = "";
    sock.on("connect", () => sock.write(post("/v1/completions", body)));
    sock.on("data", (d) => {
      const s = d.toString("latin1");
      text += s;
      for (const _ of s.matchAll(/data: /g)) times.push(Date.now());
    });
    sock.on("close", () => resolve({ times, done: text.includes("data: [DONE]") }));
    sock.on("error", () => {});
  });
}

// ---- the crowd: N connections from 127.0.0.2, each a request head never finished, a byte a second
const crowd = [];
let accepted = 0, closedByServer = 0;
const t0 = Date.now();
for (let i = 0; i < N; i++) {
  const s = net.connect({ port, host: "127.0.0.1", localAddress: "127.0.0.2" });
  const c = { s, open: false, closedAt: 0 };
  s.on("connect", () => {
    c.open = true;
    s.write("GET /health HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Slow: ");
  });
  s.on("data", () => {}); // nothing is expected
  s.on("close", () => {
    c.closedAt = Date.now();
    closedByServer++;
  });
  s.on("error", () => {});
  crowd.push(c);
}
const trickle = setInterval(() => {
  for (const c of crowd) if (c.open && !c.closedAt && !c.s.destroyed) c.s.write("a");
}, 1000);
await sleep(1000);
// the address had at most --max-connections-per-ip connections; the rest were closed at accept
const held = crowd.filter((c) => c.open && !c.closedAt).length;
check(held > 0 && held <= PER_IP, `one address holds at most --max-connections-per-ip (${PER_IP}): ${held} of ${N} open`);

// ---- an honest client meanwhile
const streaming = stream(200);
let worst = 0, fails = 0;
for (let i = 0; i < 6; i++) {
  const r = await health();
  worst = Math.max(worst, r.ms);
  if (r.status !== 200) fails++;
  await sleep(300);
}
check(fails === 0 && worst <= 2000, `/health during the slowloris of ${N} connections: 200 within 2 s each (worst ${worst} ms)`, { fails, worst });
const comp = await rawExchange(post("/v1/completions", JSON.stringify({ prompt: "In the beginning", max_tokens: 4 })), { timeoutMs: 30000 });
check(comp.status === 200 && /"completion_tokens":4/.test(comp.body), "a completion during the slowloris: 200", { status: comp.status, body: comp.body.slice(0, 200) });


// ---- --header-timeout: the trickling connections are closed though they keep sending
await sleep((HEADER_TIMEOUT + 1.5) * 1000 - (Date.now() - t0));
const left = crowd.filter((c) => !c.closedAt).length;
check(left === 0, `--header-timeout ${HEADER_TIMEOUT}: every trickling connection closed ${((Date.now() - t0) / 1000).toFixed(1)} s after it began (${left} left)`);
clearInterval(trickle);
for (const c of crowd) c.s.destroy();

const st = await streaming;
let gap = 0;
for (let i = 1; i < st.times.length; i++) gap = Math.max(gap, st.times[i] - st.times[i - 1]);
console.log(`the stream beside the slowloris: ${st.times.length} events, the longest gap ${gap} ms`);
check(st.done && st.times.length > 100, "the stream beside the slowloris completed", { events: st.times.length, done: st.done });
// 1 s; a sanitized server (test-san: ASAN_OPTIONS is set, every host step several times slower, another test beside
// it) 2 s: it once gave 1189 ms there. A loop the slow connections held would stall past their 3 s header timeout.
const GAP_MS = process.env.ASAN_OPTIONS ? 2000 : 1000;
check(gap <= GAP_MS, `... no gap between its events over ${GAP_MS / 1000} s (${gap} ms)`);

// ---- --body-timeout: a body trickled a byte a second is cut
{
  const b0 = Date.now();
  const head = `POST /tokenize HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nContent-Length: 1000\r\n\r\n{"content": "`;
  const parts = [head, ...Array(20).fill("a")];
  const r = await rawExchange(parts, { gapMs: 1000, timeoutMs: 15000 });
  const s = (Date.now() - b0) / 1000;
  check(r.closed && s < HEADER_TIMEOUT + 3, `--body-timeout 3: a trickled body cut after ${s.toFixed(1)} s`, { status: r.status, s });
}
// ---- a kept connection idle past --header-timeout (within --timeout) still serves its next request
{
  const sock = net.connect(port, "127.0.0.1");
  let got = "";
  sock.on("data", (d) => (got += d.toString("latin1")));
  sock.on("error", () => {});
  await new Promise((r) => sock.on("connect", r));
  const req = "GET /health HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n";
  sock.write(req);
  await sleep(500);
  await sleep((HEADER_TIMEOUT + 1) * 1000);
  sock.write(req);
  await sleep(500);
  sock.destroy();
  check((got.match(/HTTP\/1\.1 200/g) || []).length === 2, `a kept connection idle ${HEADER_TIMEOUT + 1.5} s: its next request 200`, got.slice(0, 100));
}
const h = await health();
check(h.status === 200, "/health after all of it: 200");
finish("slowloris");
