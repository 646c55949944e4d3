// Malformed and hostile requests against `wgllm serve`, over raw sockets: each must get its 4xx with OpenAI's error
// object (the field named where there is one), and the server must keep serving: a normal request succeeds after
// them, and clients that vanish mid-request or mid-stream leave no session busy.
import { check, finish, getJSON, post, rawExchange, waitIdle } from "./util.mjs";

function errorOf(r) {
  try {
    return JSON.parse(r.body).error || null;
  } catch {
    return null;
  }
}

async function expect(what, status, bytes, { param, opts } = {}) {
  const r = await rawExchange(bytes, opts);
  const e = errorOf(r);
  const ok = r.status === status && e && typeof e.message === "string" && (param === undefined || e.param === param);
  check(ok, `${what}: ${status}${param ? " (param " + param + ")" : ""}`, { status: r.status, body: r.body.slice(0, 300) });
  return r;
}

const chat = "/v1/chat/completions", comp = "/v1/completions";
const msg = [{ role: "user", content: "Hi" }];
const body = (o) => JSON.stringify(o);

await expect("bad JSON", 400, post(chat, '{"messages": [{"role": "user", "content": "Hi"}'));
await expect("JSON with trailing bytes", 400, post(chat, body({ messages: msg }) + " x"));
await expect("a body that is not an object", 400, post(chat, "[1, 2, 3]"));
await expect("an empty body", 400, post(chat, ""));
await expect("messages a string", 400, post(chat, body({ messages: "Hi" })), { param: "messages" });
await expect("content a number", 400, post(chat, body({ messages: [{ role: "user", content: 5 }] })), { param: "messages[0]" });
await expect("an unknown role", 400, post(chat, body({ messages: [{ role: "wizard", content: "x" }] })), { param: "messages[0]" });
await expect("an image part", 400, post(chat, body({ messages: [{ role: "user", content: [{ type: "image_url", image_url: { url: "x" } }] }] })), { param: "messages[0]" });
await expect("max_tokens a string", 400, post(chat, body({ messages: msg, max_tokens: "5" })), { param: "max_tokens" });
await expect("max_tokens negative", 400, post(chat, body({ messages: msg, max_tokens: -5 })), { param: "max_tokens" });
await expect("max_tokens 0", 400, post(comp, body({ prompt: "x", max_tokens: 0 })), { param: "max_tokens" });
await expect("max_tokens fractional", 400, post(comp, body({ prompt: "x", max_tokens: 2.5 })), { param: "max_tokens" });
await expect("max_tokens past 1e18", 400, post(comp, body({ prompt: "x", max_tokens: 1e19 })), { param: "max_tokens" });
await expect("max_completion_tokens negative", 400, post(chat, body({ messages: msg, max_completion_tokens: -1 })), { param: "max_completion_tokens" });
await expect("temperature over 2", 400, post(chat, body({ messages: msg, temperature: 7 })), { param: "temperature" });
await expect("temperature a string", 400, post(chat, body({ messages: msg, temperature: "hot" })), { param: "temperature" });
await expect("temperature 1e-40 (a denormal float)", 400, post(chat, body({ messages: msg, temperature: 1e-40 })), { param: "temperature" });
await expect("repeat_penalty 1e-82 (0 as a float)", 400, post(comp, body({ prompt: "x", repeat_penalty: 1e-82 })), { param: "repeat_penalty" });
await expect("repeat_penalty 0", 400, post(comp, body({ prompt: "x", repeat_penalty: 0 })), { param: "repeat_penalty" });
await expect("top_p negative", 400, post(chat, body({ messages: msg, top_p: -0.5 })), { param: "top_p" });
await expect("top_k a string", 400, post(chat, body({ messages: msg, top_k: "all" })), { param: "top_k" });
await expect("top_k fractional", 400, post(chat, body({ messages: msg, top_k: 2.5 })), { param: "top_k" });
await expect("a model not served", 404, post(chat, body({ model: "gpt-4o", messages: msg })), { param: "model" });
await expect("stream a string", 400, post(chat, body({ messages: msg, stream: "yes" })), { param: "stream" });
await expect("stop a number", 400, post(comp, body({ prompt: "x", stop: 3 })), { param: "stop" });
await expect("five stop strings", 400, post(comp, body({ prompt: "x", stop: ["a", "b", "c", "d", "e"] })), { param: "stop" });
await expect("an empty stop string", 400, post(comp, body({ prompt: "x", stop: [""] })), { param: "stop" });
await expect("n = 1000", 400, post(chat, body({ messages: msg, n: 1000 })), { param: "n" });
await expect("n = 0", 400, post(chat, body({ messages: msg, n: 0 })), { param: "n" });
await expect("suffix a number", 400, post(comp, body({ prompt: "x", suffix: 3 })), { param: "suffix" });
await expect("frequency_penalty over 2", 400, post(chat, body({ messages: msg, frequency_penalty: 2.5 })), { param: "frequency_penalty" });
await expect("presence_penalty under -2", 400, post(comp, body({ prompt: "x", presence_penalty: -3 })), { param: "presence_penalty" });
await expect("presence_penalty a string", 400, post(chat, body({ messages: msg, presence_penalty: "0.5" })), { param: "presence_penalty" });
await expect("logprobs a string", 400, post(chat, body({ messages: msg, logprobs: "yes" })), { param: "logprobs" });
await expect("top_logprobs without logprobs", 400, post(chat, body({ messages: msg, top_logprobs: 3 })), { param: "top_logprobs" });
await expect("top_logprobs 21", 400, post(chat, body({ messages: msg, logprobs: true, top_logprobs: 21 })), { param: "top_logprobs" });
await expect("completions' logprobs 6", 400, post(comp, body({ prompt: "x", logprobs: 6 })), { param: "logprobs" });
await expect("a GBNF grammar that does not parse (not ignored)", 400, post(comp, body({ prompt: "x", grammar: "root ::= (\"a\"" })), { param: "grammar" });
await expect("llama-server's json_schema not an object", 400, post(chat, body({ messages: msg, json_schema: 7 })), { param: "json_schema" });
await expect("tool_choice required without tools", 400, post(chat, body({ messages: msg, tools: [], tool_choice: "required" })), { param: "tool_choice" });
await expect("tool_choice naming a function not given", 400, post(chat, body({ messages: msg, tools: [{ type: "function", function: { name: "f" } }], tool_choice: { type: "function", function: { name: "g" } } })), { param: "tool_choice" });
await expect("a tool without a name", 400, post(chat, body({ messages: msg, tools: [{ type: "function", function: {} }] })), { param: "tools" });
await expect("logit_bias an array", 400, post(comp, body({ prompt: "x", logit_bias: [1, 2] })), { param: "logit_bias" });
await expect("the deprecated functions", 400, post(chat, body({ messages: msg, functions: [{ name: "f" }] })), { param: "functions" });
await expect("audio output", 400, post(chat, body({ messages: msg, modalities: ["text", "audio"] })), { param: "modalities" });
await expect("echo a string", 400, post(comp, body({ prompt: "x", echo: "yes" })), { param: "echo" });
await expect("prompt missing", 400, post(comp, body({ max_tokens: 2 })), { param: "prompt" });
await expect("prompt ids out of the vocabulary", 400, post(comp, body({ prompt: [1, 2, 99999999] })), { param: "prompt" });
await expect("prompt ids negative", 400, post(comp, body({ prompt: [1, -2] })), { param: "prompt" });
await expect("several prompts", 400, post(comp, body({ prompt: ["a", "b"] })), { param: "prompt" });
await expect("a prompt longer than the context", 400, post(comp, body({ prompt: "and the ".repeat(6000), max_tokens: 2 })), { param: "prompt" });
await expect("deeply nested JSON", 400, post(chat, "[".repeat(100000)));
// invalid UTF-8: a lone continuation byte, an overlong encoding, a surrogate, cut short
for (const [name, bytes] of [["a lone continuation byte", [0x80]], ["an overlong '/'", [0xc0, 0xaf]], ["a UTF-8 surrogate", [0xed, 0xa0, 0x80]], ["a cut sequence", [0xe2, 0x82]]]) {
  const b = Buffer.concat([Buffer.from('{"messages": [{"role": "user", "content": "'), Buffer.from(bytes), Buffer.from('"}]}')]);
  await expect(`invalid UTF-8 (${name})`, 400, post(chat, b));
}
await expect("a lone UTF-16 surrogate escape", 400, post(chat, '{"messages": [{"role": "user", "content": "\\ud800"}]}'));
await expect("tokenize: content a number", 400, post("/tokenize", body({ content: 5 })), { param: "content" });
await expect("detokenize: an id out of the vocabulary", 400, post("/detokenize", body({ tokens: [1, 1e9] })), { param: "tokens" });
await expect("detokenize: tokens a string", 400, post("/detokenize", body({ tokens: "1,2" })), { param: "tokens" });

// sizes: a declared huge body is refused before it is sent; a chunked one past the limit once it has come
await expect("Content-Length over the limit", 413, post(chat, "{}", { "Content-Length": "100000000000" }));
{
  const big = Buffer.alloc(9 << 20, 0x20);
  const head = `POST ${chat} HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nAuthorization: Bearer ${process.env.WGLLM_SERVE_KEY || ""}\r\nTransfer-Encoding: chunked\r\nConnection: close\r\n\r\n`;
  const chunked = Buffer.concat([Buffer.from(head), Buffer.from(big.length.toString(16) + "\r\n"), big, Buffer.from("\r\n0\r\n\r\n")]);
  await expect("a chunked body over the limit", 413, chunked, { opts: { timeoutMs: 60000 } });
}
// routes, methods, keys
await expect("an unknown path", 404, `GET /v1/nothing HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n`);
await expect("GET on a POST endpoint", 405, `GET ${chat} HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n`);
if (process.env.WGLLM_SERVE_KEY) {
  await expect("no API key", 401, post(chat, body({ messages: msg }), { Authorization: null }));
  await expect("a wrong API key", 401, post(chat, body({ messages: msg }), { Authorization: "Bearer nope" }));
}

// slow clients: the headers and body a few bytes at a time still get their answer
{
  const req = post(comp, body({ prompt: "In the beginning", max_tokens: 2 }));
  const parts = [];
  for (let i = 0; i < req.length; i += 40) parts.push(req.subarray(i, i + 40));
  const r = await rawExchange(parts, { gapMs: 30 });
  check(r.status === 200 && JSON.parse(r.body).usage.completion_tokens === 2, `a slow client (${parts.length} pieces, 30 ms apart): 200`, { status: r.status });
}
// early-closing clients: half the headers, half the body, and a whole request, each then closed at once
const whole = post(comp, body({ prompt: "And God said", max_tokens: 40, ignore_eos: true }));
await rawExchange(whole.subarray(0, 30), { closeAfterSend: true });
await rawExchange(whole.subarray(0, whole.length - 10), { closeAfterSend: true });
await rawExchange(whole, { closeAfterSend: true });
// a streaming client that goes away after its first event: its generation stops and its session is freed
const t0 = Date.now();
const streamReq = post(comp, body({ prompt: "And God said", max_tokens: 400, ignore_eos: true, stream: true }));
const first = await rawExchange(streamReq, { until: (t) => t.includes("data: {") });
check(first.status === 200, "a stream that the client leaves after its first event started", { status: first.status, body: first.body.slice(0, 300) });
const idle = await waitIdle(15000);
const took = Date.now() - t0;
check(idle.slots_processing === 0 && idle.requests_waiting === 0, `disconnected clients left no session busy (idle after ${took} ms; 400 tokens would take far longer)`, idle);

// the server keeps serving
const after = await rawExchange(post(chat, body({ messages: msg, max_tokens: 3, ignore_eos: true })));
check(after.status === 200 && JSON.parse(after.body).usage.completion_tokens === 3, "a normal request after all of them: 200", { status: after.status });
const h = await getJSON("/health");
check(h.status === 200 && h.json.status === "ok", "/health: ok", h);
finish("hostile");
