// Several models in one server, through the openai npm client (tests/test_server_models.sh starts the server with
// -m models/default and --models-dir holding two more names for the default model's files, --models-max 2):
// /v1/models lists all three with their context, the default loaded; a request names a model and is answered by it
// (loaded on that first use); loading a third unloads the least recently used idle one; a model held by a request in
// flight is never unloaded (the load that would need it answers 503 model_unavailable); an unknown name is 404.
import { apiKey, baseURL, check, finish, loadOpenAI } from "./util.mjs";

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

err = null;
try {
  await ask("gpt-4o");
} catch (e) {
  err = e;
}
check(err && err.status === 404 && err.code === "model_not_found" && /serves 'default', 'a', 'b'/.test(err.message),
  "an unknown model is 404 model_not_found, naming those served", err && err.message);
finish("models");
