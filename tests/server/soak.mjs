// A hostile soak of `wgllm serve` (issue 27, item 8): for SOAK_S seconds at once, a slowloris crowd (connections
// from 127.0.0.2-127.0.0.4 trickling their request heads a byte a second, reconnecting when closed), oversized
// bodies from 127.0.0.5 (a declared Content-Length past --max-body, and chunked bodies past it, the rest held back:
// each must be 413), junk from 127.0.0.6 (random bytes, malformed request lines and headers, bodies that are not
// JSON, clients that close midway), while HONEST streaming clients on 127.0.0.1 issue greedy chat completions in a
// loop. Checked: every honest request ends with its full MAX_TOKENS tokens and the text the same request got alone
// (nothing lost), the longest gap between an honest stream's events under attack within the longest gap measured
// without attackers (BASE_S seconds first) plus 0.5 s (issue 27's target is 0.5 s; on lavapipe one decode step of
// the batch can take a good part of it, so the bound is over the baseline), /health within 1 s throughout, and the
// server's peak memory (VmHWM) growing by at most 400 MB. The server (tests/test_server_soak.sh): -np 4
// --max-body 65536 --header-timeout 5 --body-timeout 5 --max-connections-per-ip 128. Native server only: the Node
// server applies neither the per-address cap nor the head and body deadlines.
import fs from "node:fs";
import net from "node:net";
import { check, finish, port, post } from "./util.mjs";

const SOAK_S = Number(process.env.SOAK_S || 35), BASE_S = Number(process.env.BASE_S || 8);
const HONEST = Number(process.env.HONEST || 3), MAX_TOKENS = 16, MAX_BODY = 65536;
const CROWD = Number(process.env.CROWD || 120); // connections per slowloris address (3 addresses)
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
const vmHwmKiB = () => Number(/VmHWM:\s+(\d+) kB/.exec(fs.readFileSync(`/proc/${process.env.WGLLM_SERVE_PID}/status`, "utf8"))[1]);

// one exchange from a local address: the answer's bytes, with when each piece came
function exchange(bytes, { from = "127.0.0.1", timeoutMs = 30000, hold = false } = {}) {
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

// ---- honest clients: a greedy chat completion streamed, its events' gaps, its text and its token count
const question = (i) => ({ messages: [{ role: "user", content: `Who was the ${["first", "second", "third", "fourth"][i % 4]} king?` }],
  max_tokens: MAX_TOKENS, temperature: 0, ignore_eos: true, stream: true, stream_options: { include_usage: true } });
async function honest(i) {
  const r = await exchange(post("/v1/chat/completions", JSON.stringify(question(i))), { timeoutMs: 60000 });
  const times = [];
  let text = "", tokens = -1, doneEvent = false, at = 0;
  const all = Buffer.concat(r.pieces.map((p) => p.d)).toString("utf8");
  // the time of each event: that of the piece its bytes ended in
  const ends = [];
  for (const p of r.pieces) ends.push((at += p.d.length));
  const raw = Buffer.concat(r.pieces.map((p) => p.d));
  for (const m of raw.toString("latin1").matchAll(/data: /g)) times.push(r.pieces[ends.findIndex((e) => e > m.index)].t);
  for (const m of all.matchAll(/^data: (.*)$/gm)) {
    if (m[1] === "[DONE]") { doneEvent = true; continue; }
    const j = JSON.parse(m[1]);
    if (j.choices?.[0]?.delta?.content) text += j.choices[0].delta.content;
    if (j.usage) tokens = j.usage.completion_tokens;
  }
  let gap = 0;
  for (let k = 1; k < times.length; k++) gap = Math.max(gap, times[k] - times[k - 1]);
  return { ok: r.status === 200 && doneEvent, status: r.status, text, tokens, gap };
}
const reference = [];
for (let i = 0; i < HONEST; i++) reference.push(await honest(i));
check(reference.every((r) => r.ok && r.tokens === MAX_TOKENS && r.text), `the ${HONEST} greedy chat requests alone: ${MAX_TOKENS} tokens each`,
  reference);

let honestRuns = 0, honestBad = [], worstGap = 0;
async function honestLoop(i, until) {
  let worst = 0;
  while (Date.now() < until) {
    const r = await honest(i);
    honestRuns++;
    if (!r.ok || r.tokens !== MAX_TOKENS || r.text !== reference[i].text) honestBad.push({ i, ...r });
    worst = Math.max(worst, r.gap);
  }
  return worst;
}

// ---- /health every 250 ms: the slowest answer
let healthWorst = 0, healthBad = 0, healthN = 0, polling = true;
const poller = (async () => {
  while (polling) {
    const t0 = Date.now();
    const r = await exchange(`GET /health HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n`, { timeoutMs: 3000 });
    const ms = Date.now() - t0;
    healthN++;
    healthWorst = Math.max(healthWorst, ms);
    if (r.status !== 200) healthBad++;
    await sleep(250);
  }
})();

// ---- the baseline: the honest clients alone
const hwm0 = vmHwmKiB();
const base = Math.max(...(await Promise.all([...Array(HONEST).keys()].map((i) => honestLoop(i, Date.now() + BASE_S * 1000)))));
const baseRuns = honestRuns;
console.log(`  baseline: ${baseRuns} honest streams in ${BASE_S} s without attackers, the longest gap ${base} ms`);
check(honestBad.length === 0, "the honest streams without attackers: all complete, the same text", honestBad.slice(0, 2));

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

const t0 = Date.now(), until = t0 + SOAK_S * 1000;
for (const from of ["127.0.0.2", "127.0.0.3", "127.0.0.4"]) for (let i = 0; i < CROWD; i++) slowloris(from);
const attackers = [...[...Array(8).keys()].map((k) => oversized(k)), ...[...Array(16).keys()].map(() => junk())];
honestRuns = 0;
const underAttack = Math.max(...(await Promise.all([...Array(HONEST).keys()].map((i) => honestLoop(i, until)))));
stop = true;
for (const s of crowd) s.destroy();
await Promise.all(attackers);
polling = false;
await poller;
const hwm1 = vmHwmKiB();

console.log(`  under attack for ${((Date.now() - t0) / 1000).toFixed(1)} s: ${honestRuns} honest streams, the longest gap ${underAttack} ms;` +
  ` slowloris ${stats.slowConnects} connections (${stats.slowClosed} closed by the server or at the end); ${stats.big} oversized bodies` +
  ` (${stats.big413} 413); ${stats.junk} junk exchanges (${stats.junkAnswered} answered); /health ${healthN} times, the slowest ${healthWorst} ms;` +
  ` VmHWM ${(hwm0 / 1024).toFixed(0)} -> ${(hwm1 / 1024).toFixed(0)} MB`);
check(honestRuns >= HONEST && honestBad.length === 0, `every honest stream under attack complete with ${MAX_TOKENS} tokens and the text it had alone (${honestRuns})`,
  honestBad.slice(0, 3));
check(underAttack <= base + 500, `the longest gap between an honest stream's events under attack (${underAttack} ms) within the baseline's (${base} ms) + 500 ms`);
check(healthBad === 0 && healthWorst <= 1000, `/health 200 within 1 s throughout (${healthN} polls, the slowest ${healthWorst} ms)`, { healthBad });
check(stats.big > 0 && stats.big413 === stats.big, `every oversized body answered 413 (${stats.big413} of ${stats.big})`, stats.bigOther);
check(stats.slowConnects > 3 * CROWD, `the slowloris connections were closed by the server and made again (${stats.slowConnects} made)`);
check(hwm1 - hwm0 <= 400 * 1024, `the server's peak memory grew ${((hwm1 - hwm0) / 1024).toFixed(1)} MB (at most 400 MB)`);
finish("soak");
