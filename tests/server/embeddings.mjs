// POST /v1/embeddings of `wgllm serve` (tools/serve/serve_embed.c) through the official openai npm client and raw
// requests: every input form (a string, strings, token ids, arrays of ids), the client's default base64 decoded to
// the same floats as encoding_format "float", a batch in order and equal to its inputs alone, text equal to its ids,
// usage, "dimensions" refused unless it is the model's width, an input over the context a 400 naming its index,
// hostile bodies answered 400 / 413 with the server still up. With WGLLM_EMBED_REF (an emb_ref.json of
// tools/refs/make_refs.py's qwen3_embed case, the server on its model): the vectors transformers gave, the model's
// own pooling (last token, L2-normalised), relative L2 error at most 1e-4 (test_embed's bound).
import fs from "node:fs";
import { apiKey, baseURL, check, finish, getJSON, loadOpenAI, port } from "./util.mjs";

const { OpenAI, version } = await loadOpenAI();
console.log(`openai ${version} on node ${process.version}, ${baseURL}`);
const client = new OpenAI({ baseURL, apiKey: apiKey || "none", maxRetries: 0, timeout: 120000 });
const context = Number(process.env.WGLLM_EMBED_CONTEXT || 64);
const model = (await client.models.list()).data[0].id;
const headers = { "Content-Type": "application/json", ...(apiKey ? { Authorization: `Bearer ${apiKey}` } : {}) };
const raw = async (body) => {
  const r = await fetch(`http://127.0.0.1:${port}/v1/embeddings`, { method: "POST", headers, body: typeof body === "string" ? body : JSON.stringify(body) });
  return { status: r.status, json: await r.json().catch(() => null) };
};
const relL2 = (a, b) => {
  let e = 0, r = 0;
  for (let i = 0; i < b.length; i++) { e += (a[i] - b[i]) ** 2; r += b[i] ** 2; }
  return a.length === b.length ? Math.sqrt(e / (r || 1)) : Infinity;
};
const same = (a, b) => a.length === b.length && a.every((v, i) => Math.fround(v) === Math.fround(b[i]));

if (process.env.WGLLM_EMBED_REF) {
  const ref = JSON.parse(fs.readFileSync(process.env.WGLLM_EMBED_REF, "utf8"));
  const res = await client.embeddings.create({ model, input: ref.inputs.map((x) => x.ids), encoding_format: "float" });
  check(res.data.length === ref.inputs.length && res.data.every((d, i) => d.index === i), "fixture: one embedding an input, in order", res.data.length);
  let worst = 0;
  res.data.forEach((d, i) => { worst = Math.max(worst, relL2(d.embedding, ref.inputs[i].last_normalized)); });
  check(worst <= 1e-4, `fixture: the vectors transformers gave (last token, normalised): worst relative L2 ${worst.toExponential(3)}`, worst);
  const tokens = ref.inputs.reduce((n, x) => n + x.ids.length, 0);
  check(res.usage.prompt_tokens === tokens && res.usage.total_tokens === tokens, "fixture: usage counts every input's tokens", res.usage);
  finish("embeddings (fixture)");
}

// a string, as floats and as the client's default (base64, decoded by the client)
const asFloat = await client.embeddings.create({ model, input: "In the beginning", encoding_format: "float" });
const v = asFloat.data[0].embedding;
check(asFloat.object === "list" && asFloat.data.length === 1 && asFloat.data[0].object === "embedding" && asFloat.data[0].index === 0,
  "a string: OpenAI's list of one embedding", asFloat);
check(Array.isArray(v) && v.length > 0 && v.every(Number.isFinite), "a string: a vector of finite floats", v.length);
check(asFloat.model === model && asFloat.usage.prompt_tokens > 0 && asFloat.usage.total_tokens === asFloat.usage.prompt_tokens,
  "model and usage", { model: asFloat.model, usage: asFloat.usage });
const asB64 = await client.embeddings.create({ model, input: "In the beginning" });
check(same(asB64.data[0].embedding, v), "the client's default (base64) decodes to the same float32 values", asB64.data[0].embedding.slice(0, 4));
const b64 = await raw({ input: "In the beginning", encoding_format: "base64" });
const bytes = Buffer.from(b64.json.data[0].embedding, "base64");
check(b64.status === 200 && typeof b64.json.data[0].embedding === "string" && bytes.length === 4 * v.length &&
  same(Array.from({ length: v.length }, (_, i) => bytes.readFloatLE(4 * i)), v), "encoding_format base64: little-endian float32", b64.status);

// text equals its tokens (the model's BOS rules, as /tokenize with add_special gives them)
const tr = await fetch(`http://127.0.0.1:${port}/tokenize`, { method: "POST", headers, body: JSON.stringify({ content: "In the beginning", add_special: true }) });
const ids = (await tr.json()).tokens;
const byIds = await client.embeddings.create({ model, input: ids, encoding_format: "float" });
check(same(byIds.data[0].embedding, v) && byIds.usage.prompt_tokens === ids.length, "an array of ids: the text's embedding", ids);

// a batch in order, each as it is alone; arrays of ids among strings
const texts = ["And God said", "Let there be light", "and there was light"];
const batch = await client.embeddings.create({ model, input: texts, encoding_format: "float" });
const alone = await Promise.all(texts.map((t) => client.embeddings.create({ model, input: t, encoding_format: "float" })));
check(batch.data.length === 3 && batch.data.every((d, i) => d.index === i && same(d.embedding, alone[i].data[0].embedding)),
  "a batch of strings: in order, each the embedding it has alone", batch.data.map((d) => d.index));
check(batch.usage.prompt_tokens === alone.reduce((n, a) => n + a.usage.prompt_tokens, 0), "a batch's usage adds its inputs'", batch.usage);
const mixed = await raw({ input: [ids, [5, 6, 7], ids], encoding_format: "float" });
check(mixed.status === 200 && mixed.json.data.length === 3 && same(mixed.json.data[2].embedding, v) && same(mixed.json.data[0].embedding, v),
  "an array of arrays of ids", mixed.status);

// dimensions: the model's width or a 400 naming it
const full = await client.embeddings.create({ model, input: "x", dimensions: v.length, encoding_format: "float" });
check(full.data[0].embedding.length === v.length, "dimensions equal to the width is accepted", full.data[0].embedding.length);
try {
  await client.embeddings.create({ model, input: "x", dimensions: 8 });
  check(false, "dimensions 8: refused");
} catch (e) {
  check(e.status === 400 && e.param === "dimensions" && /dimensions/.test(e.message), "dimensions 8: 400 naming dimensions", e.message);
}
// over the context: a 400 naming the input
try {
  await client.embeddings.create({ model, input: [[5, 6], Array.from({ length: context + 1 }, (_, i) => 5 + (i % 50))] });
  check(false, "an input over the context: refused");
} catch (e) {
  check(e.status === 400 && /'input' 1\b/.test(e.message), "an input over the context: 400 naming input 1", e.message);
}
const exact = await client.embeddings.create({ model, input: [Array.from({ length: context }, (_, i) => 5 + (i % 50))], encoding_format: "float" });
check(exact.usage.prompt_tokens === context, "an input of exactly the context's tokens", exact.usage);

// hostile bodies
const refusals = [
  [{}, 400, /'input' is required/],
  [{ input: [] }, 400, /empty array/],
  [{ input: [[]] }, 400, /'input' 0 has no tokens/],
  [{ input: [[-1]] }, 400, /whole numbers/],
  [{ input: [[1.5]] }, 400, /whole numbers/],
  [{ input: [[1e12]] }, 400, /whole numbers/],
  [{ input: [[5, 6], [999999]] }, 400, /'input' 1: token 0 is id 999999/],
  [{ input: 5 }, 400, /must be a string/],
  [{ input: [{ a: 1 }] }, 400, /'input' 0 is neither/],
  [{ input: [[[1]]] }, 400, /'input' 0: token ids must be/],
  [{ input: "x", encoding_format: "hex" }, 400, /encoding_format/],
  [{ input: "x", dimensions: -3 }, 400, /dimensions/],
  [{ input: "x", stream: true }, 400, /'stream' is not a field/],
  [{ input: "x", model: "no-such-model" }, 404, /does not exist/],
  [{ input: Array.from({ length: 2049 }, () => "a") }, 413, /at most 2048/],
];
for (const [body, status, msg] of refusals) {
  const r = await raw(body);
  check(r.status === status && r.json && msg.test(r.json.error.message), `refused: ${JSON.stringify(body).slice(0, 60)} -> ${status}`, r);
}
const nul = await raw('{"input": "a\\u0000b", "encoding_format": "float"}');
check(nul.status === 200 && nul.json.data[0].embedding.length === v.length, "a string with a NUL byte is embedded", nul.status);
const many = await raw({ input: Array.from({ length: 64 }, (_, i) => [5 + i]), encoding_format: "float" });
check(many.status === 200 && many.json.data.length === 64 && many.json.data[63].index === 63, "64 inputs in one request", many.status);
check((await getJSON("/health")).status === 200, "the server is up after them");
finish("embeddings");
