// Text is text (issue 27 item 5), against `wgllm serve`: a JSON string's "\u0000" is a NUL byte kept with its string
// (a completion's prompt, /tokenize's content, a stop string, a chat message's content), never a silent cut; and
// special-token text typed in a chat message's content is tokenized as that text, unless the server was started with
// --parse-special-in-content (WGLLM_SERVE_PARSE_SPECIAL=1 says so) or the request says "parse_special": true.
// The special token is the model's EOS (WGLLM_SERVE_MODEL's tokenizer_config.json and tokenizer.json).
import fs from "node:fs";
import path from "node:path";
import { apiKey, check, finish, port, root } from "./util.mjs";

const parsedByDefault = process.env.WGLLM_SERVE_PARSE_SPECIAL === "1";
const model = path.resolve(root, process.env.WGLLM_SERVE_MODEL || "models/default");

async function postJSON(pathname, o) {
  const headers = { "Content-Type": "application/json" };
  if (apiKey) headers.Authorization = `Bearer ${apiKey}`;
  const r = await fetch(`http://127.0.0.1:${port}${pathname}`, { method: "POST", headers, body: JSON.stringify(o) });
  let json = null;
  try {
    json = await r.json();
  } catch {}
  return { status: r.status, json };
}
const tokens = async (content, o = {}) => (await postJSON("/tokenize", { content, ...o })).json.tokens;
const promptTokens = async (o) => {
  const r = await postJSON("/v1/chat/completions", { max_tokens: 1, temperature: 0, ...o });
  return r.status === 200 ? r.json.usage.prompt_tokens : -r.status;
};

// ---- NUL bytes
const nulText = "In\u0000 the beginning";
const ids = await tokens(nulText, { parse_special: false });
const back = await postJSON("/detokenize", { tokens: ids });
check(back.status === 200 && back.json.content === nulText, '/tokenize of "In\\u0000 the beginning": the NUL kept (detokenized back whole)', back.json);
check((await tokens(nulText)).length > (await tokens("In")).length + 1, "/tokenize: the text after the NUL tokenized too");

const withBos = await tokens(nulText, { add_special: true });
const comp = await postJSON("/v1/completions", { prompt: nulText, max_tokens: 1, temperature: 0 });
const upToNul = await tokens("In", { add_special: true });
check(comp.status === 200 && comp.json.usage.prompt_tokens === withBos.length && withBos.length > upToNul.length + 1,
  `a completion's prompt with a NUL: all of it (${withBos.length} tokens, ${upToNul.length} up to the NUL)`, comp.json);

const ref = await postJSON("/v1/completions", { prompt: "In the beginning", max_tokens: 4, temperature: 0, ignore_eos: true });
const text = ref.status === 200 ? ref.json.choices[0].text : "";
check(text.length > 0, "stop reference: a greedy completion", ref.json);
if (text.length > 0) {
  const c = text[0];
  const held = await postJSON("/v1/completions", { prompt: "In the beginning", max_tokens: 4, temperature: 0, ignore_eos: true, stop: [c + "\u0000"] });
  check(held.status === 200 && held.json.choices[0].finish_reason === "length" && held.json.choices[0].text === text,
    `a stop string ${JSON.stringify(c + "\u0000")} is matched whole: not at ${JSON.stringify(c)}`, held.json);
  const cut = await postJSON("/v1/completions", { prompt: "In the beginning", max_tokens: 4, temperature: 0, ignore_eos: true, stop: [c] });
  check(cut.status === 200 && cut.json.choices[0].finish_reason === "stop", `... while ${JSON.stringify(c)} alone stops`, cut.json);
}

const user = (content) => ({ messages: [{ role: "user", content }] });
const pNul = await promptTokens(user("x\u0000y"));
const pNoNul = await promptTokens(user("xy"));
check(pNul > pNoNul && pNoNul > 0, `a chat message's content with a NUL: kept (${pNul} prompt tokens, ${pNoNul} without it)`);
const pParts = await promptTokens(user([{ type: "text", text: "x\u0000y" }]));
check(pParts === pNul, `... in a text part too (${pParts})`);

// ---- special-token text in a chat message's content
const cfg = JSON.parse(fs.readFileSync(path.join(model, "tokenizer_config.json"), "utf8"));
const eos = typeof cfg.eos_token === "string" ? cfg.eos_token : cfg.eos_token.content;
const added = JSON.parse(fs.readFileSync(path.join(model, "tokenizer.json"), "utf8")).added_tokens.find((t) => t.content === eos);
check(added && added.special, `the model's EOS ${eos} is a special token (id ${added && added.id})`);
const content = `a ${eos} b`;
const asText = (await tokens(content, { parse_special: false })).length;
const asToken = await tokens(content, { parse_special: true });
check(asToken.includes(added.id) && asText > asToken.length, `/tokenize: "${content}" is ${asText} tokens as text, ${asToken.length} parsed`);
const pDefault = await promptTokens(user(content));
const pText = await promptTokens({ ...user(content), parse_special: false });
const pToken = await promptTokens({ ...user(content), parse_special: true });
check(pDefault === (parsedByDefault ? pToken : pText),
  `"${content}" in content: ${parsedByDefault ? "its token (--parse-special-in-content)" : "text"} by default (${pDefault} prompt tokens; as text ${pText}, parsed ${pToken})`);
check(pText - pToken === asText - asToken.length, `... "parse_special" false / true: the content's text tokens or its token (${pText} - ${pToken} = ${asText} - ${asToken.length})`);
const badField = await postJSON("/v1/chat/completions", { ...user("x"), max_tokens: 1, parse_special: "yes" });
check(badField.status === 400 && badField.json.error.param === "parse_special", "\"parse_special\": \"yes\" is 400 naming the field", badField.json);
finish("text");
