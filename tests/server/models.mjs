// Several models in one server, through the openai npm client (tests/test_server_models.sh starts the server with
// -m models/default and --models-dir holding two more names for the default model's files, --models-max 2):
// /v1/models lists all three with their context, the default loaded; a request names a model and is answered by it
// (loaded on that first use); loading a third unloads the least recently used idle one; a model held by a request in
// flight is never unloaded (the load that would need it answers 503 model_unavailable); /tokenize and /detokenize
// name a model in the body, /props and /slots in the query (?model=), each loading it as a request would; /metrics
// gives a series a loaded model, labelled with its name; an unknown name is 404 everywhere.
import { apiKey, baseURL, check, finish, getJSON, loadOpenAI, port } from "./util.mjs";

const { OpenAI } = await loadOpenAI();
const client = new OpenAI({ baseURL, apiKey: apiKey || "none", maxRetries: 0, timeout: 300000 });
const status = async () => Object.fromEntries((await client.models.list()).data.map((m) => [m.id, m]));

let m = await status();
check(Object.keys(m).join() === "default,a,b", "/v1/models lists the default then --models-dir's by name", Object.keys(m));
check(m.default.status.value === "loaded" && m.a.status.value === "unloaded" && m.b.status.value === "unloaded",
  "... the default loaded, the others not yet", m);
check(m.default.context_length === 256 && m.a.context_length === 256 && m.b.max_model_len === 256,
  "... each with its context (-c 256), loaded or not");

const ask = (model, extra = {}) =>
  client.completions.create({ model, prompt: "In the beginning", max_tokens: 6, temperature: 0, ...extra });
const d = await ask("default");
const a = await ask("a");
check(a.model === "a" && a.choices[0].text === d.choices[0].text, "a request naming 'a' is answered by it (the same weights: the same text)",
  [a.model, a.choices[0].text, d.choices[0].text]);
const none = await ask(undefined);
check(none.model === "default", "a request naming no model gets the default", none.model);
m = await status();
check(m.a.status.value === "loaded", "'a' is loaded after its first request");

const b = await client.chat.completions.create({ model: "b", messages: [{ role: "user", content: "hi" }], max_tokens: 4 });
m = await status();
check(b.model === "b" && b.choices[0].message.content.length > 0, "a chat naming 'b' is answered by it");
check(m.b.status.value === "loaded" && m.a.status.value === "unloaded" && m.default.status.value === "loaded",
  "--models-max 2: loading 'b' unloaded 'a' (least recently used and idle), never the default", m);

// 'b' held by a stream in flight: loading 'a' would need its place (the default is kept): 503, b untouched
const stream = await client.chat.completions.create({ model: "b", messages: [{ role: "user", content: "Tell me a story." }],
  max_tokens: 64, stream: true, ignore_eos: true });
const it = stream[Symbol.asyncIterator]();
await it.next(); // the stream has begun
let err = null;
try {
  await ask("a");
} catch (e) {
  err = e;
}
check(err && err.status === 503 && err.code === "model_unavailable" && /in use by a request/.test(err.message),
  "a load that would unload a model in use is 503 model_unavailable, saying so", err && [err.status, err.code, err.message]);
let chunks = 0;
for (let r = await it.next(); !r.done; r = await it.next()) chunks++;
check(chunks > 10, "... and the stream on 'b' went on to its end", chunks);
const a2 = await ask("a");
check(a2.model === "a" && a2.choices[0].text === d.choices[0].text, "once 'b' is idle, 'a' loads again (unloading 'b')");

const host = `http://127.0.0.1:${port}`;
const postJSON = async (p, body) => {
  const r = await fetch(host + p, { method: "POST", headers: { "Content-Type": "application/json" }, body: JSON.stringify(body) });
  return { status: r.status, json: await r.json() };
};
const td = await postJSON("/tokenize", { content: "In the beginning" });
const tb = await postJSON("/tokenize", { content: "In the beginning", model: "b" });
check(td.status === 200 && tb.status === 200 && tb.json.tokens.length > 1 && JSON.stringify(td.json.tokens) === JSON.stringify(tb.json.tokens),
  "/tokenize naming 'b' is answered by b's vocabulary (the same files: the same ids)", [td, tb]);
m = await status();
check(m.b.status.value === "loaded" && m.a.status.value === "unloaded", "... loading 'b' for it (unloading 'a')", m);
const dt = await postJSON("/detokenize", { tokens: tb.json.tokens, model: "a" });
check(dt.status === 200 && /beginning/.test(dt.json.content), "/detokenize naming 'a' loads it and answers", dt);
const tz = await postJSON("/tokenize", { content: "x", model: "zzz" });
const dz = await postJSON("/detokenize", { tokens: [1], model: "zzz" });
check(tz.status === 404 && dz.status === 404 && tz.json.error.code === "model_not_found" && /serves 'default', 'a', 'b'/.test(dz.json.error.message),
  "/tokenize and /detokenize naming a model not served: 404 model_not_found", [tz, dz]);
const pa = await getJSON("/props?model=a"), pd = await getJSON("/props");
check(pa.status === 200 && pa.json.model_alias === "a" && pa.json.n_ctx === 256 && pa.json.total_slots === 2 && pd.json.model_alias === "default",
  "/props?model=a describes 'a'; /props the default", [pa, pd.json.model_alias]);
const sb = await getJSON("/slots?model=b");
check(sb.status === 200 && Array.isArray(sb.json) && sb.json.length === 2 && sb.json[0].n_ctx === 256, "/slots?model=b: b's two sessions (loaded for it)", sb);
const pz = await getJSON("/props?model=zzz"), sz = await getJSON(`/slots?model=${"y".repeat(300)}`);
check(pz.status === 404 && sz.status === 404 && pz.json.error.code === "model_not_found", "/props and /slots naming a model not served (or a name too long for any): 404", [pz, sz]);
const mt = await (await fetch(host + "/metrics")).text();
m = await status();
const loaded = Object.keys(m).filter((k) => m[k].status.value === "loaded");
check(loaded.length === 2 && loaded.every((k) => new RegExp(`^wgllm:requests_total\\{model="${k}"\\} \\d+$`, "m").test(mt)) &&
  !/^wgllm:requests_total \d/m.test(mt) && (mt.match(/^# TYPE wgllm:requests_total /gm) || []).length === 1,
  "/metrics: one series a loaded model, labelled model=\"NAME\" (one TYPE line a metric)", [loaded, mt.slice(0, 400)]);
check(/^wgllm:requests_total\{model="default"\} [1-9]/m.test(mt), "... the default's counts its requests", mt.slice(0, 300));

err = null;
try {
  await ask("gpt-4o");
} catch (e) {
  err = e;
}
check(err && err.status === 404 && err.code === "model_not_found" && /serves 'default', 'a', 'b'/.test(err.message),
  "an unknown model is 404 model_not_found, naming those served", err && err.message);
finish("models");
