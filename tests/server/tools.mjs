// Tool calls through the openai npm client, on a server whose chat template (a family's real one, or a named one)
// teaches the format WGLLM_TOOLS_FORMAT (/props' tool_format must say it): tool_choice "required" gives one call of
// a given function with arguments valid under its parameters (finish_reason "tool_calls"), a named function that
// one, streamed the same call as whole (greedy), the call's start first and its arguments in several chunks after it
// (OpenAI's delta form), also through the client's ChatCompletionStream; the round trip (the call, the tool's result, the answer) renders
// through the template; "none" and "auto" answer text; a format whose calls are not JSON refuses "required" (400).
// Harmony (gpt-oss): its channels parsed (no marker in content or reasoning); its forced calls are a named function
// or "required" with one tool (the prompt ends with the call's header), "required" over several tools is a 400.
import { apiKey, baseURL, check, finish, loadOpenAI } from "./util.mjs";

const want = process.env.WGLLM_TOOLS_FORMAT;
const { OpenAI } = await loadOpenAI();
const client = new OpenAI({ baseURL, apiKey: apiKey || "none", maxRetries: 0, timeout: 300000 });
const model = (await client.models.list()).data[0].id;
const props = await fetch(baseURL.replace(/\/v1$/, "/props"), { headers: apiKey ? { Authorization: `Bearer ${apiKey}` } : {} }).then((r) => r.json());
check(props.tool_format === want, `/props: tool_format ${want}`, props.tool_format);

const tools = [
  { type: "function", function: { name: "get_weather", description: "The weather in a city",
    parameters: { type: "object", properties: { city: { type: "string", maxLength: 12 }, unit: { type: "string", enum: ["celsius", "fahrenheit"] } }, required: ["city", "unit"] } } },
  { type: "function", function: { name: "get_time", description: "The time in a zone",
    parameters: { type: "object", properties: { zone: { type: "string", enum: ["UTC", "CET", "PST"] }, hour24: { type: "boolean" } }, required: ["zone"] } } },
];
const messages = [{ role: "system", content: "You call tools." }, { role: "user", content: "What is the weather in Paris?" }];
const json = (s) => { try { return JSON.parse(s); } catch { return undefined; } };
const validWeather = (a) => a && typeof a.city === "string" && [...a.city].length <= 12 && ["celsius", "fahrenheit"].includes(a.unit) && Object.keys(a).length === 2;
const validTime = (a) => a && ["UTC", "CET", "PST"].includes(a.zone) && (a.hour24 === undefined || typeof a.hour24 === "boolean");

if (want === "harmony") {
  // gpt-oss's harmony (tests/data/models/gpt_oss_gguf: a random model with gpt-oss's template and special tokens):
  // no marker reaches content or reasoning_content, greedy or sampled, whole or streamed; the reasoning of an
  // assistant turn with a call goes back to the template (its "thinking": the prompt grows)
  const markers = /<\|(channel|message|start|end|return|call|constrain)\|>/;
  // the fixture's <|start|> <|end|> <|message|> <|channel|> (ids 315-318) drawn often, so the replies hold headers
  const logit_bias = { 315: 4, 316: 4, 317: 4, 318: 4 };
  for (const seed of [1, 2, 3]) {
    const r = await client.chat.completions.create({ model, messages, tools, max_tokens: 48, temperature: 1, seed, logit_bias });
    const m = r.choices[0].message;
    check(!markers.test(m.content || "") && !markers.test(m.reasoning_content || ""), `harmony (seed ${seed}): no markers in content or reasoning`, m);
  }
  let streamed = "";
  for await (const chunk of await client.chat.completions.create({ model, messages, tools, max_tokens: 48, temperature: 1, seed: 1, logit_bias, stream: true }))
    for (const ch of chunk.choices) streamed += (ch.delta.content || "") + (ch.delta.reasoning_content || "");
  check(!markers.test(streamed), "harmony streamed: no markers", streamed);
  const call = { id: "call_1", type: "function", function: { name: "get_weather", arguments: JSON.stringify({ city: "Paris", unit: "celsius" }) } };
  const turn = (extra) => [...messages, { role: "assistant", content: null, tool_calls: [call], ...extra },
    { role: "tool", tool_call_id: "call_1", content: "21 C" }];
  const plain = await client.chat.completions.create({ model, messages: turn({}), tools, max_tokens: 1, temperature: 0 });
  const thought = await client.chat.completions.create({ model, messages: turn({ reasoning_content: "the user wants the weather" }), tools, max_tokens: 1, temperature: 0 });
  check(thought.usage.prompt_tokens > plain.usage.prompt_tokens + 5, `harmony: the call's reasoning_content rendered back (${plain.usage.prompt_tokens} -> ${thought.usage.prompt_tokens} prompt tokens)`, thought.usage);
}

// harmony forces a call by ending the prompt with the call's header (up to its special token <|message|>, which no
// grammar writes) and constraining the arguments: a named function, or "required" with one tool; "required" over
// several tools is refused (400 naming tool_choice, saying why), and the checks below force get_weather alone
const reqTools = want === "harmony" ? [tools[0]] : tools;
if (want === "harmony") {
  try {
    await client.chat.completions.create({ model, messages, tools, tool_choice: "required", max_tokens: 8 });
    check(false, "harmony: tool_choice required over two tools is refused", "answered 200");
  } catch (e) {
    check(e.status === 400 && e.error?.param === "tool_choice" && /<\|message\|>/.test(e.error?.message || ""),
      "harmony: tool_choice required over two tools is 400 naming tool_choice and the special token", e.error);
  }
}

if (want === "gemma" || want === "gemma4" || want === "none") {
  try {
    await client.chat.completions.create({ model, messages, tools, tool_choice: "required", max_tokens: 8 });
    check(false, `${want}: tool_choice required is refused`, "answered 200");
  } catch (e) {
    check(e.status === 400 && e.error?.param === "tool_choice", `${want}: tool_choice required is 400 naming tool_choice`, e.error);
  }
  const auto = await client.chat.completions.create({ model, messages, tools, max_tokens: 8, temperature: 0 });
  check(typeof auto.choices[0].message.content === "string", `${want}: tool_choice auto answers (text)`, auto.choices[0]);
  finish(`tools ${want}`);
}

// required: a call of one of the functions, valid arguments
for (const seed of [1, 2]) {
  const r = await client.chat.completions.create({ model, messages, tools: reqTools, tool_choice: "required", max_tokens: 300, temperature: 0.8, seed });
  const c = r.choices[0], calls = c.message.tool_calls || [];
  const a = json(calls[0]?.function.arguments);
  const ok = calls.length === 1 && calls[0].type === "function" && typeof calls[0].id === "string" &&
    (calls[0].function.name === "get_weather" ? validWeather(a) : calls[0].function.name === "get_time" && validTime(a));
  check(ok && c.finish_reason === "tool_calls", `${want} required (seed ${seed}): one call, arguments valid, finish_reason tool_calls`, c);
}

// a named function
const named = await client.chat.completions.create({ model, messages, tools, tool_choice: { type: "function", function: { name: "get_time" } }, max_tokens: 300, temperature: 0.8, seed: 4 });
const nc = named.choices[0].message.tool_calls || [];
check(nc.length === 1 && nc[0].function.name === "get_time" && validTime(json(nc[0].function.arguments)), `${want} named: a call of get_time`, named.choices[0]);

// streamed: the same call as whole (greedy), in OpenAI's delta form: a chunk with the call's start (id, type, name,
// arguments "") first, then the arguments in fragments, one tool_calls entry a chunk (the arguments of either
// function are several tokens, so more than one chunk)
const whole = await client.chat.completions.create({ model, messages, tools: reqTools, tool_choice: "required", max_tokens: 300, temperature: 0 });
const stream = await client.chat.completions.create({ model, messages, tools: reqTools, tool_choice: "required", max_tokens: 300, temperature: 0, stream: true });
const acc = [], entries = [];
let finishReason = null, text = "";
for await (const chunk of stream) {
  for (const ch of chunk.choices) {
    if (ch.finish_reason) finishReason = ch.finish_reason;
    if (ch.delta.content) text += ch.delta.content;
    if (ch.delta.tool_calls) entries.push(ch.delta.tool_calls);
    for (const d of ch.delta.tool_calls || []) {
      const slot = (acc[d.index] ||= { id: "", name: "", arguments: "" });
      if (d.id) slot.id = d.id;
      if (d.function?.name) slot.name += d.function.name;
      if (d.function?.arguments) slot.arguments += d.function.arguments;
    }
  }
}
const wc = whole.choices[0].message.tool_calls || [];
check(acc.length === 1 && wc.length === 1 && acc[0].name === wc[0].function.name && acc[0].arguments === wc[0].function.arguments && finishReason === "tool_calls" && text === "",
  `${want} streamed: the whole answer's call, in delta form`, { acc, whole: wc, finishReason, text });
const [head, ...frags] = entries.map((e) => e[0]);
check(entries.length > 1 && entries.every((e) => e.length === 1) &&
    head.index === 0 && /^call_[A-Za-z0-9]{24}$|^[A-Za-z0-9]{9}$/.test(head.id) && head.type === "function" &&
    head.function?.name === wc[0]?.function.name && head.function?.arguments === "" &&
    frags.length > 1 && frags.every((f) => f.index === 0 && f.id === undefined && f.type === undefined &&
      f.function?.name === undefined && typeof f.function?.arguments === "string" && f.function.arguments.length > 0),
  `${want} streamed: the start chunk (id, type, name, arguments "") first, then ${frags.length} chunks of arguments`, entries);
// the client's own accumulation (ChatCompletionStream joins the fragments) gives the whole answer's call
const helper = await client.chat.completions.stream({ model, messages, tools: reqTools, tool_choice: "required", max_tokens: 300, temperature: 0 }).finalChatCompletion();
const hc = helper.choices[0].message.tool_calls || [];
check(hc.length === 1 && typeof hc[0].id === "string" && hc[0].id.length > 0 && hc[0].type === "function" && hc[0].function.name === wc[0]?.function.name &&
    hc[0].function.arguments === wc[0]?.function.arguments && helper.choices[0].finish_reason === "tool_calls",
  `${want} streamed through the client's ChatCompletionStream: the whole answer's call`, helper.choices[0]);

// the round trip: the call, the tool's result, the answer (rendered by the template)
const call = wc[0];
const follow = [...messages,
  { role: "assistant", content: null, tool_calls: [{ id: call.id, type: "function", function: { name: call.function.name, arguments: call.function.arguments } }] },
  { role: "tool", tool_call_id: call.id, content: JSON.stringify({ temperature: 21, sky: "clear" }) }];
const answer = await client.chat.completions.create({ model, messages: follow, tools, tool_choice: "none", max_tokens: 12, temperature: 0, ignore_eos: true });
check(typeof answer.choices[0].message.content === "string" && answer.choices[0].message.content.length > 0 && !answer.choices[0].message.tool_calls,
  `${want} round trip: the tool's result renders and the answer is text`, answer.choices[0]);
const auto = await client.chat.completions.create({ model, messages: follow, tools, max_tokens: 12, temperature: 0 });
check(["stop", "length", "tool_calls"].includes(auto.choices[0].finish_reason), `${want} round trip with tool_choice auto: answered`, auto.choices[0]);

finish(`tools ${want}`);
