// Inputs that cost `wgllm serve` far more than their size, or hold other clients (issue 27, item 3): a prompt of
// tens of MB (over the context) sent while another client streams must not stall the stream (its rendering and
// tokenizing run on a worker, not on the scheduler's thread); a body whose unknown field is a long array, or JSON
// nested deep, is refused before cJSON builds it (the server's peak memory barely moves); /tokenize with_pieces
// answers at most 65536 tokens, and its pieces are JSON strings that make the text again.
// A body that would take the buffers of the bodies being received past --max-body-total is 503 at once.
// tests/test_server_http.sh starts the server with -np 2 --max-body 33554432 --max-body-total 50000000.
import fs from "node:fs";
import net from "node:net";
import { check, finish, port, post, rawExchange } from "./util.mjs";

const pid = process.env.WGLLM_SERVE_PID;
const hwmKiB = () => Number(/VmHWM:\s+(\d+) kB/.exec(fs.readFileSync(`/proc/${pid}/status`, "utf8"))[1]);
const errorOf = (r) => {
  try {
    return JSON.parse(r.body).error || {};
  } catch {
    return {};
  }
};

function stream(maxTokens, onFirst) {
  return new Promise((resolve) => {
    const times = [];
    const body = JSON.stringify({ prompt: "And God said", max_tokens: maxTokens, ignore_eos: true, stream: true, temperature: 0 });
    const sock = net.connect(port, "127.0.0.1");
    let text = "";
    sock.on("connect", () => sock.write(post("/v1/completions", body)));
    sock.on("data", (d) => {
      const s = d.toString("latin1");
      text += s;
      for (const _ of s.matchAll(/data: /g)) {
        times.push(Date.now());
        if (times.length === 3) onFirst();
      }
    });
    sock.on("close", () => resolve({ times, done: text.includes("data: [DONE]") }));
    sock.on("error", () => {});
  });
}

// ---- JSON that would build far more than its bytes
{
  const before = hwmKiB();
  const junk = "[" + "0,".repeat(4 << 20) + "0]"; // 8 MB: 4 M values
  for (let i = 0; i < 3; i++) {
    const r = await rawExchange(post("/v1/completions", `{"prompt": "x", "max_tokens": 1, "junk": ${junk}}`), { timeoutMs: 60000 });
    if (i === 0) check(r.status === 413 && /values/.test(errorOf(r).message), "an unknown field of 4 M array values: 413 naming the values", { status: r.status, body: r.body.slice(0, 200) });
  }
  const grew = (hwmKiB() - before) >> 10;
  check(grew < 100, `... the server's peak memory grew ${grew} MB over three of them (< 100)`);
  const deep = `{"prompt": "x", "max_tokens": 1, "junk": ${"[".repeat(200)}${"]".repeat(200)}}`;
  const r = await rawExchange(post("/v1/completions", deep));
  check(r.status === 400 && /nests 201 deep/.test(errorOf(r).message), "JSON nested 201 deep: 400 naming the depth", { status: r.status, body: r.body.slice(0, 200) });
}

// ---- a 31.5 MB prompt beside a stream (the JSON cases first: this one sets the peak memory)
{
  const big = "and the ".repeat(30 << 17); // 31.5 MB: about 7.9 M tokens, far over the context
  let bigDone;
  const results = [];
  // the bodies made before the stream starts (making them would stall this process's own event loop)
  const reqs = [post("/v1/completions", JSON.stringify({ prompt: big, max_tokens: 2 })),
    post("/v1/chat/completions", JSON.stringify({ messages: [{ role: "user", content: big }], max_tokens: 2 }))];
  const st = await stream(300, () => {
    bigDone = (async () => {
      const t0 = Date.now();
      for (const q of reqs) results.push(await rawExchange(q, { timeoutMs: 120000 }));
      return Date.now() - t0;
    })();
  });
  const ms = await bigDone;
  let gap = 0, at = 0;
  for (let i = 1; i < st.times.length; i++) if (st.times[i] - st.times[i - 1] > gap) (gap = st.times[i] - st.times[i - 1]), (at = i);
  console.log(`a stream beside two prompts of 31.5 MB (answered in ${ms} ms): ${st.times.length} events, the longest gap ${gap} ms (event ${at})`);
  check(results.every((r) => r.status === 400 && errorOf(r).code === "context_length_exceeded"), "the 31.5 MB prompts: 400 context_length_exceeded",
    results.map((r) => [r.status, r.body.slice(0, 160)]));
  check(st.done, "the stream completed");
  check(gap <= 1000, `... no gap between its events over 1 s while the prompts were tokenized (${gap} ms)`);
}

// ---- --max-body-total (50000000 here): a body that would take the bodies being received past it is 503 at once
{
  const held = net.connect(port, "127.0.0.1");
  await new Promise((r) => held.on("connect", r));
  held.on("error", () => {});
  held.write(`POST /v1/completions HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nContent-Length: 30000000\r\n\r\n{"prompt": "`);
  held.write(Buffer.alloc(1 << 20, 0x61)); // 1 MB of the 30 MB declared: the server holds a buffer of 30 MB
  await new Promise((r) => setTimeout(r, 500));
  const t0 = Date.now();
  const q = `POST /v1/completions HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nContent-Length: 30000000\r\n\r\n{"prompt": "${"a".repeat(1 << 16)}`;
  const r = await rawExchange(q, { timeoutMs: 5000 });
  check(r.status === 503 && errorOf(r).code === "server_busy" && Date.now() - t0 < 2000,
    "a second 30 MB body while one is held, --max-body-total 50000000: 503 at once", { status: r.status, ms: Date.now() - t0, body: r.body.slice(0, 200) });
  held.destroy();
  await new Promise((r) => setTimeout(r, 300));
  const ok = await rawExchange(post("/v1/completions", JSON.stringify({ prompt: "In the beginning", max_tokens: 2 })), { timeoutMs: 30000 });
  check(ok.status === 200, "... and once it has gone, a request: 200", { status: ok.status, body: ok.body.slice(0, 200) });
}

// ---- /tokenize with_pieces
{
  const text = 'He said "stop"\\ then\n\ttab \u0001 ünïcödé 漢字 <|eot_id|>';
  const r = await rawExchange(post("/tokenize", JSON.stringify({ content: text, with_pieces: true, parse_special: false })));
  let joined = null;
  try {
    joined = JSON.parse(r.body).tokens.map((t) => (typeof t.piece === "string" ? t.piece : Buffer.from(t.piece).toString("latin1"))).join("");
  } catch {}
  check(r.status === 200 && joined !== null, "/tokenize with_pieces: valid JSON", r.body.slice(0, 300));
  const plain = await rawExchange(post("/tokenize", JSON.stringify({ content: "a b c d", with_pieces: false })));
  check(plain.status === 200 && /^\{"tokens":\[[0-9,]+\]\}$/.test(plain.body), "/tokenize without pieces: the ids", plain.body.slice(0, 200));
  const many = await rawExchange(post("/tokenize", JSON.stringify({ content: "and the ".repeat(40000), with_pieces: true })), { timeoutMs: 60000 });
  check(many.status === 413 && /with_pieces answers at most 65536/.test(errorOf(many).message), "/tokenize with_pieces of 80000 tokens: 413", { status: many.status, body: many.body.slice(0, 200) });
  const ids = await rawExchange(post("/tokenize", JSON.stringify({ content: "and the ".repeat(40000) })), { timeoutMs: 60000 });
  check(ids.status === 200 && JSON.parse(ids.body).tokens.length >= 80000, "... without pieces: 200, every id");
}
finish("amplify");
