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
// --max-body 65536 --header-timeout 5 --body-timeout 5 --max-connections-per-ip 128. The attackers run in a child
// process at nice 19 (tests/server/soak_attack.mjs). Native server only: the Node server applies neither the
// per-address cap nor the head and body deadlines.
import fs from "node:fs";
import net from "node:net";
import { spawn } from "node:child_process";
import { check, finish, post } from "./util.mjs";
import { exchange } from "./soak_attack.mjs";

const SOAK_S = Number(process.env.SOAK_S || 35), BASE_S = Number(process.env.BASE_S || 8);
const HONEST = Number(process.env.HONEST || 3), MAX_TOKENS = 16;
const CROWD = Number(process.env.CROWD || 120); // connections per slowloris address (3 addresses)
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
const vmHwmKiB = () => Number(/VmHWM:\s+(\d+) kB/.exec(fs.readFileSync(`/proc/${process.env.WGLLM_SERVE_PID}/status`, "utf8"))[1]);

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

const t0 = Date.now(), until = t0 + SOAK_S * 1000;
// the attackers in a child process at nice 19: their flood of callbacks has its own event loop, so it cannot delay
// when this process sees an honest stream's events, and making the flood yields the CPU to the server and to
// lavapipe (the gaps measured are the server's, not the test's)
const attack = spawn("nice", ["-n", "19", process.execPath, new URL("./soak_attack.mjs", import.meta.url).pathname, String(CROWD)],
  { stdio: ["ignore", "inherit", "inherit", "ipc"] });
const attackStats = new Promise((resolve, reject) => {
  attack.once("message", resolve);
  attack.once("error", reject);
  attack.once("exit", (code) => reject(new Error(`the attackers' process ended (${code}) before its counts`)));
});
honestRuns = 0;
const underAttack = Math.max(...(await Promise.all([...Array(HONEST).keys()].map((i) => honestLoop(i, until)))));
attack.send("stop");
const stats = await attackStats;
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
