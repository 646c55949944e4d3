// A lost GPU device under `wgllm serve` (issue 27, item 7). The server runs with WGLLM_TEST_DEVICE_LOSS_STEP=N (a
// test-only hook of the library: the device is lost, through Dawn's ForceLoss, at the model's Nth job step), so the
// loss lands while a streaming and a whole request are generating. Checked: the stream gets an error event naming
// the loss before its end, the whole request a 503 `device_lost` error object, /health a 503 with the reason while
// the model is reloaded, and then (DEVICE_LOSS_EXPECT=recover) /health 200 again within RECOVER_S and the same
// greedy request answered with the text it had before the loss; or (DEVICE_LOSS_EXPECT=exit: the model can no longer
// be opened) the server exits non-zero within EXIT_S, naming the loss on stderr, with idle and half-sent connections
// still open. The server's pid: WGLLM_SERVE_PID; its stderr: WGLLM_SERVE_ERR.
import fs from "node:fs";
import net from "node:net";
import { check, finish, port, post, rawExchange } from "./util.mjs";

const EXPECT = process.env.DEVICE_LOSS_EXPECT || "recover";
const RECOVER_S = Number(process.env.RECOVER_S || 60), EXIT_S = Number(process.env.EXIT_S || 15);
const pid = Number(process.env.WGLLM_SERVE_PID);
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
const alive = () => { try { process.kill(pid, 0); return true; } catch { return false; } };

async function health() {
  const r = await rawExchange(`GET /health HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n`, { timeoutMs: 5000 });
  let json = null;
  try { json = JSON.parse(r.body); } catch { /* not JSON */ }
  return { status: r.status, json };
}

const greedy = { prompt: "In the beginning", max_tokens: 8, temperature: 0, ignore_eos: true };
async function complete(body, timeoutMs = 60000) {
  const r = await rawExchange(post("/v1/completions", JSON.stringify(body)), { timeoutMs });
  let json = null;
  try { json = JSON.parse(r.body); } catch { /* not JSON */ }
  return { status: r.status, json, body: r.body };
}

// 1. the reference: the greedy text before the loss (9 of the N steps)
const before = await complete(greedy);
check(before.status === 200 && before.json?.choices?.[0]?.text, "a greedy completion before the loss", before.body);

// 2. a stream and a whole request, each far longer than the steps left: the loss lands while both generate.
// /health is asked every 20 ms meanwhile, from the first failure on.
const t0 = Date.now();
const long = { prompt: "And God said", max_tokens: 400, temperature: 0, ignore_eos: true };
const streamed = rawExchange(post("/v1/completions", JSON.stringify({ ...long, stream: true })), { timeoutMs: 60000 });
const whole = complete(long);
const healths = [];
const recovered = () => { // a 200 after a 503
  const i = healths.findIndex((h) => h.status === 503);
  return i >= 0 && healths.slice(i).some((h) => h.status === 200);
};
let polling = true;
const poller = (async () => {
  while (polling) {
    const h = await health();
    healths.push({ ...h, t: Date.now() - t0 });
    if (EXPECT === "recover" && recovered()) break;
    if (EXPECT === "exit" && !alive()) break;
    await sleep(20);
  }
})();

const [s, w] = await Promise.all([streamed, whole]);
const events = [...s.body.matchAll(/^data: (.*)$/gm)].map((m) => m[1]);
const errEvent = events.map((e) => { try { return JSON.parse(e); } catch { return null; } }).find((e) => e && e.error);
check(s.status === 200 && events.some((e) => e.includes('"text"')), "the stream had text before the loss", s.body.slice(0, 300));
check(errEvent && /device was lost/.test(errEvent.error.message) && errEvent.error.code === "device_lost",
  "the stream's error event names the device loss", errEvent || s.body.slice(-400));
check(w.status === 503 && w.json?.error?.code === "device_lost" && /device was lost/.test(w.json.error.message),
  "the whole request: 503 device_lost naming the loss", w.body);
console.log(`  the requests ended ${Date.now() - t0} ms after they began: ${JSON.stringify(w.json?.error?.message)}`);

if (EXPECT === "recover") {
  // a new request while the model is reloaded is refused, naming the loss (when it comes before the reload ends)
  const during = await complete(greedy);
  check(during.status === 200 || (during.status === 503 && during.json?.error?.code === "device_lost"),
    "a request right after the loss: 503 device_lost, or served once reloaded", during.body);
  const deadline = Date.now() + RECOVER_S * 1000;
  while (Date.now() < deadline && !recovered()) await sleep(50);
  polling = false;
  await poller;
  const lost = healths.filter((h) => h.status === 503);
  check(lost.length > 0 && lost.every((h) => h.json?.error?.code === "device_lost" && /device was lost/.test(h.json.error.message)),
    `/health 503 with the reason while reloading (${lost.length} of ${healths.length} polls)`, lost[0] || healths.slice(-3));
  const back = healths.find((h) => h.status === 200 && h.t > (lost[0]?.t ?? Infinity));
  check(back && back.json?.status === "ok", `/health 200 again (after ${back?.t} ms)`, healths.slice(-3));
  const after = await complete(greedy);
  check(after.status === 200 && after.json?.choices?.[0]?.text === before.json?.choices?.[0]?.text,
    "the same greedy request after the reload: the same text", { before: before.json?.choices?.[0]?.text, after: after.body });
  check(alive(), "the server still runs");
} else {
  // connections the server must not wait for: an idle one and one whose head never ends
  const idle = net.connect(port, "127.0.0.1");
  const half = net.connect(port, "127.0.0.1", () => half.write("POST /v1/completions HTTP/1.1\r\nHost: 127.0.0.1\r\n"));
  for (const c of [idle, half]) c.on("error", () => {});
  const deadline = Date.now() + EXIT_S * 1000;
  while (alive() && Date.now() < deadline) await sleep(50);
  polling = false;
  await poller;
  check(!alive(), `the server exited within ${EXIT_S} s of the loss (${Date.now() - t0} ms after the requests began)`);
  // the window between the failed reload and the exit is short: what /health answered in it, if it was asked
  const lost = healths.filter((h) => h.status === 503), i = healths.findIndex((h) => h.status === 503);
  check(lost.every((h) => h.json?.error?.code === "device_lost") && (i < 0 || healths.slice(i).every((h) => h.status !== 200)),
    `/health after the loss: 503 device_lost until the exit, never 200 (${lost.length} of ${healths.length} polls 503)`,
    healths.slice(-3));
  idle.destroy();
  half.destroy();
  const err = process.env.WGLLM_SERVE_ERR ? fs.readFileSync(process.env.WGLLM_SERVE_ERR, "utf8") : "";
  check(/exiting: the GPU device was lost \(.*device lost.*\) and the model could not be reloaded: -m .*gone-model: .+/.test(err),
    "stderr names the loss and why the model was not reloaded", err.slice(-600));
}
finish("device_loss");
