// `wgllm serve` through the official openai npm client (pinned in scripts/bootstrap.sh): models.list,
// chat.completions.create and completions.create whole and streamed (the streamed text must be the whole one, the
// usage chunk and finish_reason as OpenAI sends them), presence/frequency penalties, stop strings, the cached prefix of a repeated prompt, a
// second request finishing while a long one streams, and the client's error classes for 400 and 401.
import { apiKey, baseURL, check, finish, loadOpenAI, waitIdle } from "./util.mjs";

const { OpenAI, version } = await loadOpenAI();
console.log(`openai ${version} on node ${process.version}, ${baseURL}`);
const client = new OpenAI({ baseURL, apiKey: apiKey || "none", maxRetries: 0, timeout: 120000 });
const messages = [{ role: "system", content: "Answer briefly." }, { role: "user", content: "Who made the heaven?" }];
const greedy = { temperature: 0, seed: 7 };

const models = await client.models.list();
check(models.data.length === 1 && typeof models.data[0].id === "string", "models.list: one model", models.data);
const model = models.data[0].id;

// chat, whole
const whole = await client.chat.completions.create({ model, messages, max_tokens: 12, ignore_eos: true, ...greedy });
const text = whole.choices[0].message.content;
check(whole.object === "chat.completion" && whole.choices.length === 1, "chat: one chat.completion choice", whole);
check(typeof text === "string" && text.length > 0, "chat: the reply is text", text);
check(whole.choices[0].finish_reason === "length", "chat: finish_reason length at max_tokens", whole.choices[0]);
check(whole.usage.completion_tokens === 12, "chat: usage.completion_tokens = max_tokens", whole.usage);
check(whole.usage.total_tokens === whole.usage.prompt_tokens + 12 && whole.usage.prompt_tokens > 0, "chat: usage adds up", whole.usage);

// chat, streamed: the same text (greedy, same prompt), role first, usage last
const stream = await client.chat.completions.create({
  model, messages, max_tokens: 12, ignore_eos: true, stream: true, stream_options: { include_usage: true }, ...greedy,
});
let streamed = "", roles = 0, finishReason = null, usage = null, chunks = 0;
for await (const chunk of stream) {
  chunks++;
  if (chunk.usage) usage = chunk.usage;
  for (const c of chunk.choices) {
    if (c.delta.role) roles++;
    if (c.delta.content) streamed += c.delta.content;
    if (c.finish_reason) finishReason = c.finish_reason;
  }
}
check(streamed === text, "chat stream: the streamed text is the whole reply", { streamed, text });
check(roles === 1 && finishReason === "length", "chat stream: one role delta, finish_reason length", { roles, finishReason });
check(usage && usage.completion_tokens === 12, "chat stream: include_usage gives the usage chunk", usage);
check(usage && usage.prompt_tokens_details.cached_tokens > 0, "chat stream: the repeated prompt reused the cached prefix", usage);
check(chunks >= 3, "chat stream: text came in several chunks", chunks);

// completions, whole and streamed
const prompt = "In the beginning";
const comp = await client.completions.create({ model, prompt, max_tokens: 10, ignore_eos: true, ...greedy });
check(comp.object === "text_completion" && comp.choices[0].text.length > 0, "completions: text", comp);
check(comp.usage.completion_tokens === 10 && comp.choices[0].finish_reason === "length", "completions: usage and finish_reason", comp);
const cstream = await client.completions.create({ model, prompt, max_tokens: 10, ignore_eos: true, stream: true, ...greedy });
let ctext = "";
for await (const chunk of cstream) for (const c of chunk.choices) ctext += c.text;
check(ctext === comp.choices[0].text, "completions stream: the streamed text is the whole one", { ctext, whole: comp.choices[0].text });

// OpenAI's presence and frequency penalties are accepted and reach the sampler (the prompt's tokens and the
// continuation's are penalised: the greedy text changes); 0 is off
const pen = await client.completions.create({ model, prompt, max_tokens: 10, ignore_eos: true, presence_penalty: 2, frequency_penalty: 2, ...greedy });
check(pen.usage.completion_tokens === 10 && pen.choices[0].text !== comp.choices[0].text, "completions: presence_penalty / frequency_penalty change the greedy text", { pen: pen.choices[0].text, plain: comp.choices[0].text });
const pen0 = await client.completions.create({ model, prompt, max_tokens: 10, ignore_eos: true, presence_penalty: 0, frequency_penalty: 0, ...greedy });
check(pen0.choices[0].text === comp.choices[0].text, "completions: presence_penalty / frequency_penalty 0 are off", { pen0: pen0.choices[0].text, plain: comp.choices[0].text });

// a stop string: the text ends before it, finish_reason stop
const words = comp.choices[0].text.split(" ").filter((w) => w.length > 1);
if (words.length >= 3) {
  const stopWord = " " + words[2];
  const cut = comp.choices[0].text.slice(0, comp.choices[0].text.indexOf(stopWord));
  const st = await client.completions.create({ model, prompt, max_tokens: 10, stop: [stopWord], ...greedy });
  check(st.choices[0].text === cut && st.choices[0].finish_reason === "stop", `completions: stop ${JSON.stringify(stopWord)}`, st.choices[0]);
} else {
  check(false, "completions: a continuation with three words to stop at", comp.choices[0].text);
}

// a second request finishes while a long one is still streaming (no waiting for the first to end)
const long = await client.completions.create({ model, prompt: "And God said", max_tokens: 120, ignore_eos: true, stream: true, ...greedy });
const it = long[Symbol.asyncIterator]();
await it.next(); // the long one has started
const t0 = Date.now();
const short = await client.chat.completions.create({ model, messages, max_tokens: 2, ignore_eos: true, ...greedy });
const shortDone = Date.now() - t0;
let longChunks = 1, longLeft = false;
for (let r = await it.next(); !r.done; r = await it.next()) {
  longChunks++;
  if (r.value.choices[0]?.finish_reason === null && !longLeft) longLeft = true;
}
check(short.usage.completion_tokens === 2, "concurrency: the short request completed", short.usage);
check(longLeft && longChunks > 10, `concurrency: the short one (${shortDone} ms) finished while the long one streamed (${longChunks} chunks)`);

// errors as the client's classes, with OpenAI's fields
try {
  await client.chat.completions.create({ model, messages, n: 20 });
  check(false, "n = 20 is refused");
} catch (e) {
  check(e instanceof OpenAI.BadRequestError && e.status === 400 && e.param === "n", "n = 20: BadRequestError, param n", { status: e.status, param: e.param, message: e.message });
}
try {
  await client.chat.completions.create({ model, messages: [], max_tokens: 4 });
  check(false, "empty messages are refused");
} catch (e) {
  check(e instanceof OpenAI.BadRequestError && e.param === "messages", "empty messages: BadRequestError, param messages", { status: e.status, param: e.param });
}
try {
  await client.chat.completions.create({ model: "gpt-4o", messages, max_tokens: 2 });
  check(false, "a model the server does not serve is refused");
} catch (e) {
  check(e instanceof OpenAI.NotFoundError && e.status === 404 && e.code === "model_not_found", "model gpt-4o: NotFoundError, model_not_found", { status: e.status, code: e.code });
}
if (apiKey) {
  const wrong = new OpenAI({ baseURL, apiKey: apiKey + "x", maxRetries: 0 });
  try {
    await wrong.chat.completions.create({ model, messages, max_tokens: 2 });
    check(false, "a wrong API key is refused");
  } catch (e) {
    check(e instanceof OpenAI.AuthenticationError && e.status === 401, "a wrong API key: AuthenticationError 401", { status: e.status });
  }
}
// n > 1: each choice its own sequence (seed + k where a seed is given), the prompt's tokens counted once
const hot = { temperature: 1.5, top_k: 0, top_p: 1, min_p: 0, max_tokens: 12, ignore_eos: true };
const three = await client.completions.create({ model, prompt: "And he said", n: 3, seed: 5, ...hot });
const seed6 = await client.completions.create({ model, prompt: "And he said", seed: 6, ...hot });
check(three.choices.length === 3 && three.choices.every((c, i) => c.index === i && c.finish_reason === "length"),
  "completions n 3: three choices, indices 0..2", three.choices);
check(three.choices[1].text === seed6.choices[0].text, "... choice 1 is seed 6's text (seed + its index)",
  [three.choices[1].text, seed6.choices[0].text]);
check(new Set(three.choices.map((c) => c.text)).size > 1, "... the choices differ at temperature 1.5");
check(three.usage.completion_tokens === 36 && three.usage.prompt_tokens === seed6.usage.prompt_tokens &&
  three.usage.total_tokens === 36 + three.usage.prompt_tokens, "... usage: the prompt once, the choices' tokens added", three.usage);
const chat2 = await client.chat.completions.create({ model, messages, n: 2, max_tokens: 4, ...greedy });
check(chat2.choices.length === 2 && chat2.choices[1].index === 1 && chat2.choices[0].message.content === chat2.choices[1].message.content,
  "chat n 2 at temperature 0: two equal choices", chat2.choices);
// n > 1 streamed: each choice's chunks carry its index; joined, each is the text the whole answer gives
const sthree = await client.completions.create({ model, prompt: "And he said", n: 3, seed: 5, stream: true,
  stream_options: { include_usage: true }, ...hot });
const texts = ["", "", ""], finishes = [];
let susage = null;
for await (const c of sthree) {
  if (c.usage) susage = c.usage;
  for (const ch of c.choices) {
    texts[ch.index] += ch.text;
    if (ch.finish_reason) finishes.push(ch.index);
  }
}
check(texts.every((t, i) => t === three.choices[i].text), "completions n 3 streamed: each choice's chunks joined are its whole text",
  [texts, three.choices.map((c) => c.text)]);
check(finishes.length === 3 && new Set(finishes).size === 3, "... one finish_reason a choice", finishes);
check(susage && susage.completion_tokens === 36 && susage.prompt_tokens === three.usage.prompt_tokens,
  "... the usage chunk: the prompt once, the choices' tokens added", susage);
const schat = await client.chat.completions.create({ model, messages, n: 2, max_tokens: 4, stream: true, ...greedy });
const ctexts = ["", ""], croles = [];
for await (const c of schat)
  for (const ch of c.choices) {
    if (ch.delta.role) croles.push(ch.index);
    ctexts[ch.index] += ch.delta.content ?? "";
  }
check(croles.join() === "0,1" && ctexts[0] === chat2.choices[0].message.content && ctexts[1] === chat2.choices[1].message.content,
  "chat n 2 streamed: a role chunk a choice, each choice's text the whole answer's", [croles, ctexts]);
for (const [what, body, param] of [
  ["n 17", { messages, n: 17 }, "n"],
  ["n 0", { messages, n: 0 }, "n"],
]) {
  try {
    await client.chat.completions.create({ model, ...body });
    check(false, `${what} is refused`);
  } catch (e) {
    check(e.status === 400 && e.param === param, `${what}: 400 naming '${param}'`, { status: e.status, param: e.param, message: e.message });
  }
}
// suffix (fill in the middle): the default model has no such tokens, which the 400 says
try {
  await client.completions.create({ model, prompt: "def f(", suffix: "    return x", max_tokens: 4 });
  check(false, "suffix on a model without fill-in-the-middle tokens is refused");
} catch (e) {
  check(e.status === 400 && e.param === "suffix" && /fill-in-the-middle tokens/.test(e.message),
    "suffix without fill-in-the-middle tokens: 400 naming 'suffix' and why", { status: e.status, message: e.message });
}
const emptySuffix = await client.completions.create({ model, prompt, suffix: "", max_tokens: 10, ignore_eos: true, ...greedy });
check(emptySuffix.choices[0].text === comp.choices[0].text, "an empty suffix changes nothing");

const idle = await waitIdle();
check(idle.slots_processing === 0, "every session is idle at the end", idle);
finish("openai_client");
