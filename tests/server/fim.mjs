// `suffix` of /v1/completions on a model with fill-in-the-middle tokens (tests/test_server_fim.sh: the qwen3 fixture
// with <|fim_prefix|> 317, <|fim_middle|> 318, <|fim_suffix|> 319): the request with a suffix is answered as the
// prompt <|fim_prefix|>PROMPT<|fim_suffix|>SUFFIX<|fim_middle|> given as ids (Qwen2.5-Coder's prefix-suffix-middle
// order; the tokenizer adds no BOS), greedy: the same text and prompt tokens, streamed or not, through the openai
// client; an empty suffix is no fill in the middle.
import { apiKey, baseURL, check, finish, loadOpenAI, port } from "./util.mjs";

const { OpenAI } = await loadOpenAI();
const client = new OpenAI({ baseURL, apiKey: apiKey || "none", maxRetries: 0, timeout: 120000 });
const tokenize = async (content) => {
  const r = await fetch(`http://127.0.0.1:${port}/tokenize`, {
    method: "POST", headers: { "Content-Type": "application/json" }, body: JSON.stringify({ content, parse_special: true }) });
  return (await r.json()).tokens;
};
const prefix = "def add(a, b):\n    ", suffix = "\n    return total\n";
const laid = await tokenize(`<|fim_prefix|>${prefix}<|fim_suffix|>${suffix}<|fim_middle|>`);
const pre = await tokenize(prefix), suf = await tokenize(suffix);
check(JSON.stringify(laid) === JSON.stringify([317, ...pre, 319, ...suf, 318]),
  "the markers are the tokenizer's added tokens 317 / 319 / 318 around the texts' own ids", laid);

const greedy = { model: "fim", max_tokens: 12, temperature: 0, ignore_eos: true };
const byIds = await client.completions.create({ ...greedy, prompt: laid });
const fim = await client.completions.create({ ...greedy, prompt: prefix, suffix });
check(fim.choices[0].text === byIds.choices[0].text && fim.choices[0].text.length > 0,
  "prompt + suffix: the text of the FIM layout given as ids", [fim.choices[0].text, byIds.choices[0].text]);
check(fim.usage.prompt_tokens === laid.length && byIds.usage.prompt_tokens === laid.length,
  "... the prompt's tokens are the layout's (markers included)", [fim.usage, laid.length]);
const plain = await client.completions.create({ ...greedy, prompt: prefix });
check(plain.usage.prompt_tokens === pre.length, "without the suffix: the prompt alone", plain.usage);

let streamed = "";
const stream = await client.completions.create({ ...greedy, prompt: prefix, suffix, stream: true });
for await (const c of stream) streamed += c.choices[0]?.text ?? "";
check(streamed === fim.choices[0].text, "streamed: the same text", [streamed, fim.choices[0].text]);
const empty = await client.completions.create({ ...greedy, prompt: prefix, suffix: "" });
check(empty.choices[0].text === plain.choices[0].text && empty.usage.prompt_tokens === pre.length,
  "an empty suffix changes nothing", empty.usage);
finish("fim");
