// Structured output and logit bias through the openai npm client: every schema of tests/data/grammar/schemas/ as
// response_format json_schema (each answer must parse and validate, closed before max_tokens where the limit
// nears: the figure SERVING.md gives), json_object,
// llama-server's "grammar" (GBNF) and "json_schema" fields, streamed answers equal to whole ones, refusals (a
// malformed grammar or schema is 400 naming where), and logit_bias (a banned token never comes, a favoured one
// always does). WGLLM_STRUCTURED_OUT=FILE: the per-schema results as JSON lines (for docs/perf).
import fs from "node:fs";
import path from "node:path";
import { apiKey, baseURL, check, finish, loadOpenAI, root } from "./util.mjs";

const { OpenAI } = await loadOpenAI();
const client = new OpenAI({ baseURL, apiKey: apiKey || "none", maxRetries: 0, timeout: 300000 });
const model = (await client.models.list()).data[0].id;
const maxTokens = Number(process.env.WGLLM_STRUCTURED_MAX_TOKENS || 224);

// A JSON schema validator for what the grammar supports (types, properties, required, additionalProperties,
// enum, const, items, prefixItems, min/maxItems, min/maxLength, minimum/maximum/exclusive*, anyOf/oneOf/allOf,
// $ref to #/$defs or #/definitions): returns the first violation's JSON pointer and reason, or null.
function validate(schema, v, root_ = schema, at = "") {
  if (schema === true || schema === undefined) return null;
  if (schema === false) return `${at}: no value allowed`;
  if (schema.$ref) {
    const parts = schema.$ref.replace(/^#\//, "").split("/");
    let s = root_;
    for (const p of parts) s = s?.[p.replace(/~1/g, "/").replace(/~0/g, "~")];
    if (s === undefined) return `${at}: $ref ${schema.$ref} not found`;
    return validate(s, v, root_, at);
  }
  const typeOf = (x) => (x === null ? "null" : Array.isArray(x) ? "array" : Number.isInteger(x) ? "integer" : typeof x);
  if (schema.nullable === true && v === null) return null; // OpenAPI 3.0's nullable
  if (schema.type !== undefined) {
    const types = Array.isArray(schema.type) ? schema.type : [schema.type];
    const t = typeOf(v);
    if (!types.some((ty) => ty === t || (ty === "number" && t === "integer"))) return `${at}: ${t} is not ${types.join("|")}`;
  }
  if (schema.enum && !schema.enum.some((e) => JSON.stringify(e) === JSON.stringify(v))) return `${at}: not in enum`;
  if ("const" in schema && JSON.stringify(schema.const) !== JSON.stringify(v)) return `${at}: not the const`;
  if (typeof v === "string") {
    const n = [...v].length;
    if (schema.minLength !== undefined && n < schema.minLength) return `${at}: shorter than ${schema.minLength}`;
    if (schema.maxLength !== undefined && n > schema.maxLength) return `${at}: longer than ${schema.maxLength}`;
    if (schema.pattern && !new RegExp(schema.pattern, "u").test(v)) return `${at}: does not match ${schema.pattern}`;
    if (schema.format === "date" && !/^\d{4}-\d{2}-\d{2}$/.test(v)) return `${at}: not a date`;
    if (schema.format === "date-time" && !/^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?(Z|[+-]\d{2}:\d{2})$/.test(v)) return `${at}: not a date-time`;
    if (schema.format === "uuid" && !/^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$/.test(v)) return `${at}: not a uuid`;
  }
  if (typeof v === "number") {
    // draft 4's boolean exclusiveMinimum / exclusiveMaximum make minimum / maximum exclusive
    const xmin = schema.exclusiveMinimum === true ? schema.minimum : typeof schema.exclusiveMinimum === "number" ? schema.exclusiveMinimum : undefined;
    const xmax = schema.exclusiveMaximum === true ? schema.maximum : typeof schema.exclusiveMaximum === "number" ? schema.exclusiveMaximum : undefined;
    if (schema.minimum !== undefined && v < schema.minimum) return `${at}: below ${schema.minimum}`;
    if (schema.maximum !== undefined && v > schema.maximum) return `${at}: above ${schema.maximum}`;
    if (xmin !== undefined && v <= xmin) return `${at}: not above ${xmin}`;
    if (xmax !== undefined && v >= xmax) return `${at}: not below ${xmax}`;
  }
  if (Array.isArray(v)) {
    if (schema.minItems !== undefined && v.length < schema.minItems) return `${at}: fewer than ${schema.minItems} items`;
    if (schema.maxItems !== undefined && v.length > schema.maxItems) return `${at}: more than ${schema.maxItems} items`;
    // draft 4's items as an array is prefixItems, additionalItems the rest
    const tuple = Array.isArray(schema.items);
    const pre = schema.prefixItems || (tuple ? schema.items : []);
    const rest = tuple ? schema.additionalItems : schema.items;
    for (let i = 0; i < v.length; i++) {
      const s = i < pre.length ? pre[i] : rest;
      const e = validate(s, v[i], root_, `${at}/${i}`);
      if (e) return e;
    }
  }
  if (v && typeof v === "object" && !Array.isArray(v)) {
    for (const r of schema.required || []) if (!(r in v)) return `${at}: '${r}' missing`;
    const props = schema.properties || {};
    for (const [k, x] of Object.entries(v)) {
      if (k in props) {
        const e = validate(props[k], x, root_, `${at}/${k}`);
        if (e) return e;
      } else if (schema.additionalProperties === false) {
        return `${at}: '${k}' not allowed`;
      } else if (typeof schema.additionalProperties === "object") {
        const e = validate(schema.additionalProperties, x, root_, `${at}/${k}`);
        if (e) return e;
      }
    }
    if (schema.minProperties !== undefined && Object.keys(v).length < schema.minProperties) return `${at}: too few properties`;
    if (schema.maxProperties !== undefined && Object.keys(v).length > schema.maxProperties) return `${at}: too many properties`;
  }
  for (const s of schema.allOf || []) {
    const e = validate(s, v, root_, at);
    if (e) return e;
  }
  if (schema.anyOf && !schema.anyOf.some((s) => !validate(s, v, root_, at))) return `${at}: matches no anyOf`;
  if (schema.oneOf && schema.oneOf.filter((s) => !validate(s, v, root_, at)).length !== 1) return `${at}: not exactly one of oneOf`;
  return null;
}

const messages = (what) => [
  { role: "system", content: "You answer in JSON." },
  { role: "user", content: `Give me ${what}.` },
];

// ---- every schema of the set, each answer parsed and validated
const dir = path.join(root, "tests/data/grammar/schemas");
const all = fs.readdirSync(dir).filter((f) => f.endsWith(".json")).sort();
// WGLLM_STRUCTURED_SUBSET=N: every (63 / N)th schema only (the sanitized build, some 3 times slower)
const subset = Number(process.env.WGLLM_STRUCTURED_SUBSET || 0);
const files = subset ? all.filter((_, i) => i % Math.ceil(all.length / subset) === 0) : all;
const out = process.env.WGLLM_STRUCTURED_OUT ? fs.openSync(process.env.WGLLM_STRUCTURED_OUT, "w") : null;
let valid = 0, tokens = 0, seconds = 0;
// two requests at a time (the server's two sessions), in the set's order
async function one(i) {
  const f = files[i];
  const schema = JSON.parse(fs.readFileSync(path.join(dir, f), "utf8"));
  const t0 = performance.now();
  const r = await client.chat.completions.create({
    model, messages: messages(f.replace(/\.json$/, "")), max_tokens: maxTokens, temperature: 0.7, seed: 1000 + i,
    response_format: { type: "json_schema", json_schema: { name: f.replace(/\W/g, "_"), schema, strict: true } },
  });
  const dt = (performance.now() - t0) / 1000;
  const text = r.choices[0].message.content;
  let why = null;
  try {
    why = validate(schema, JSON.parse(text));
  } catch (e) {
    why = `does not parse: ${e.message} (finish_reason ${r.choices[0].finish_reason})`;
  }
  if (!why) valid++;
  tokens += r.usage.completion_tokens;
  seconds += dt;
  if (out) fs.writeSync(out, JSON.stringify({ schema: f, ok: !why, why, finish: r.choices[0].finish_reason, tokens: r.usage.completion_tokens, seconds: dt, text }) + "\n");
  check(!why, `json_schema ${f}: the answer parses and validates (${r.usage.completion_tokens} tokens, ${r.choices[0].finish_reason})`, why ? { why, text } : undefined);
}
let next = 0;
await Promise.all([0, 1].map(async () => { while (next < files.length) await one(next++); }));
check(all.length >= 50, `the schema set has at least 50 schemas (${all.length}; ${files.length} run)`);
console.log(`json_schema: ${valid} of ${files.length} answers valid, ${tokens} tokens in ${seconds.toFixed(1)} s`);

// ---- streamed: the same text as whole (greedy), in several chunks
const person = JSON.parse(fs.readFileSync(path.join(dir, all[0]), "utf8"));
const rf = { type: "json_schema", json_schema: { name: "x", schema: person } };
const whole = await client.chat.completions.create({ model, messages: messages("one"), max_tokens: maxTokens, temperature: 0, response_format: rf });
const stream = await client.chat.completions.create({ model, messages: messages("one"), max_tokens: maxTokens, temperature: 0, response_format: rf, stream: true });
let streamed = "", chunks = 0;
for await (const c of stream) for (const ch of c.choices) if (ch.delta.content) { streamed += ch.delta.content; chunks++; }
check(streamed === whole.choices[0].message.content && chunks > 1, "json_schema streamed: the whole answer, in chunks", { streamed, whole: whole.choices[0].message.content });

// ---- json_object: any object
for (let seed = 0; seed < 3; seed++) {
  const r = await client.chat.completions.create({ model, messages: messages("an object"), max_tokens: maxTokens, temperature: 0.8, seed, response_format: { type: "json_object" } });
  let ok = false;
  try {
    const v = JSON.parse(r.choices[0].message.content);
    ok = v !== null && typeof v === "object" && !Array.isArray(v);
  } catch {}
  check(ok, `json_object (seed ${seed}): an object (${r.choices[0].finish_reason})`, r.choices[0]);
}

// ---- llama-server's fields: grammar (GBNF) on completions, json_schema
const gbnf = 'root ::= "The answer is " ("yes" | "no") "."';
const g = await client.completions.create({ model, prompt: "Question: is it so?", max_tokens: 20, temperature: 1, seed: 3, grammar: gbnf });
check(/^The answer is (yes|no)\.$/.test(g.choices[0].text) && g.choices[0].finish_reason === "stop", "grammar: the text is a sentence of the GBNF and ends there", g.choices[0]);
const digits = await client.completions.create({ model, prompt: "Numbers:", max_tokens: 30, temperature: 1, seed: 4, grammar: "root ::= [0-9]{3,5} \" \" [a-z]+ \"!\"" });
check(/^[0-9]{3,5} [a-z]+!$/.test(digits.choices[0].text), "grammar: classes and bounded repetition", digits.choices[0]);
const js = await client.chat.completions.create({ model, messages: messages("a number"), max_tokens: 50, temperature: 1, seed: 5, json_schema: { type: "integer", minimum: 0, maximum: 99 } });
const jv = JSON.parse(js.choices[0].message.content);
check(Number.isInteger(jv) && jv >= 0 && jv <= 99, "json_schema field: an integer in range", js.choices[0]);

// ---- refusals: 400 naming the problem
async function refused(params, param, pattern, what) {
  try {
    await client.chat.completions.create({ model, messages: messages("x"), max_tokens: 4, ...params });
    check(false, what, "answered 200");
  } catch (e) {
    check(e.status === 400 && e.error?.param === param && pattern.test(e.error?.message || e.message), what, { status: e.status, error: e.error });
  }
}
await refused({ grammar: 'root ::= "a" | ' + "(" }, "grammar", /1:\d+/, "a GBNF syntax error is 400 naming line:column");
await refused({ grammar: "root ::= undefined-rule" }, "grammar", /undefined-rule/, "an undefined GBNF rule is 400 naming it");
await refused({ response_format: { type: "json_schema", json_schema: { name: "x", schema: { type: "object", properties: { a: { type: "string", pattern: "^(a|b" } } } } } },
  "response_format", /pattern/, "a schema keyword outside the support (or a bad pattern) is 400 naming it");
await refused({ response_format: { type: "json_schema", json_schema: { name: "x", schema: { type: "strin" } } } }, "response_format", /strin/, "an unknown type is 400 naming it");
await refused({ response_format: { type: "json_schema", json_schema: { name: "x", schema: { $ref: "#/$defs/none" } } } }, "response_format", /none/, "a $ref to nothing is 400 naming it");
await refused({ response_format: { type: "yaml" } }, "response_format", /yaml/, "an unknown response_format type is 400");
await refused({ grammar: 'root ::= "a"', response_format: { type: "json_object" } }, "grammar", /both constrain/, "two constraints at once are 400");
await refused({ logit_bias: { "x": 1 } }, "logit_bias", /not a token id/, "logit_bias: a key that is not an id is 400");
await refused({ logit_bias: { "5": 101 } }, "logit_bias", /-100 to 100/, "logit_bias: a bias out of range is 400");
await refused({ logit_bias: { "99999999": 1 } }, null, /outside the vocabulary/, "logit_bias: an id past the vocabulary is 400");

// ---- logit_bias: the greedy first token banned never comes; a favoured one always does (one token's text tokenizes
// back to that token: the default model's byte-level BPE made it by merges)
const prompt = "In the beginning";
const tokenize = (content) => fetch(baseURL.replace(/\/v1$/, "/tokenize"), {
  method: "POST", headers: { "Content-Type": "application/json", ...(apiKey ? { Authorization: `Bearer ${apiKey}` } : {}) },
  body: JSON.stringify({ content }),
}).then((r) => r.json());
const single = await client.completions.create({ model, prompt, max_tokens: 1, temperature: 0, ignore_eos: true });
const piece = single.choices[0].text;
const ids = (await tokenize(piece)).tokens;
check(ids.length === 1, "logit_bias: the greedy first token's text is one token", { piece, ids });
const banned = await client.completions.create({ model, prompt, max_tokens: 1, temperature: 0, ignore_eos: true, logit_bias: { [ids[0]]: -100 } });
check(banned.choices[0].text !== piece, "logit_bias -100: the greedy first token is not drawn", { piece, banned: banned.choices[0].text });
const fav = await client.completions.create({ model, prompt, max_tokens: 6, temperature: 1, seed: 9, ignore_eos: true, logit_bias: { [ids[0]]: 100 } });
check(fav.choices[0].text === piece.repeat(6), "logit_bias +100: every token is the favoured one", { piece, text: fav.choices[0].text });

if (out) fs.closeSync(out);
finish("structured");
