// Load test of `wgllm serve` with the openai client: CLIENTS concurrent streaming clients (default 16), each sending
// REQUESTS chat completions one after another (default 8) of MAX_TOKENS tokens (default 8, ignore_eos). Every
// request must complete with exactly MAX_TOKENS tokens (usage), its streamed text equal to the text the same greedy
// request got alone before the load (no cross-talk between sessions), and no error; the server's resident memory
// after the load must stay within SLACK_KIB (default 16 MiB) of what it was after the first round. Prints the
// figures docs/TESTING.md records.
import { apiKey, baseURL, check, finish, loadOpenAI, serverRssKiB, waitIdle } from "./util.mjs";

const CLIENTS = Number(process.env.CLIENTS || 16);
const REQUESTS = Number(process.env.REQUESTS || 8);
const MAX_TOKENS = Number(process.env.MAX_TOKENS || 8);
const SLACK_KIB = Number(process.env.SLACK_KIB || 16384);

const { OpenAI, version } = await loadOpenAI();
const client = new OpenAI({ baseURL, apiKey: apiKey || "none", maxRetries: 0, timeout: 600000 });
const model = (await client.models.list()).data[0].id;
const subjects = ["the heaven", "the earth", "the waters", "the light", "the firmament", "the seas", "the grass", "the stars",
  "the fowl", "the cattle", "the garden", "the river", "the tree", "the serpent", "the ark", "the dove"];
const messagesOf = (c) => [{ role: "user", content: `Tell of ${subjects[c % subjects.length]}.` }];
const params = { model, max_tokens: MAX_TOKENS, ignore_eos: true, temperature: 0, seed: 1 };

// what each client's request gives alone
const reference = [];
for (let c = 0; c < CLIENTS; c++) {
  const r = await client.chat.completions.create({ ...params, messages: messagesOf(c) });
  reference.push(r.choices[0].message.content);
}
const rssBefore = serverRssKiB();

const stats = { ok: 0, wrongCount: 0, wrongText: 0, errors: [], ttft: [], total: [] };
let rssAfterFirst = 0, firstRoundDone = 0;
async function oneClient(c) {
  for (let i = 0; i < REQUESTS; i++) {
    const t0 = performance.now();
    let first = 0, text = "", usage = null;
    try {
      const stream = await client.chat.completions.create({ ...params, messages: messagesOf(c), stream: true, stream_options: { include_usage: true } });
      for await (const chunk of stream) {
        if (chunk.usage) usage = chunk.usage;
        const d = chunk.choices[0]?.delta?.content;
        if (d) {
          if (!first) first = performance.now() - t0;
          text += d;
        }
      }
    } catch (e) {
      stats.errors.push(`client ${c} request ${i}: ${e.status || ""} ${e.message}`);
      continue;
    }
    stats.total.push(performance.now() - t0);
    stats.ttft.push(first);
    if (!usage || usage.completion_tokens !== MAX_TOKENS) stats.wrongCount++;
    else if (text !== reference[c]) stats.wrongText++;
    else stats.ok++;
    if (i === 0 && ++firstRoundDone === CLIENTS) rssAfterFirst = serverRssKiB();
  }
}
const t0 = performance.now();
await Promise.all(Array.from({ length: CLIENTS }, (_, c) => oneClient(c)));
const wall = (performance.now() - t0) / 1000;
await waitIdle();
const rssEnd = serverRssKiB();

const pct = (a, p) => (a.length ? [...a].sort((x, y) => x - y)[Math.min(a.length - 1, Math.floor(p * a.length))] : NaN);
const n = CLIENTS * REQUESTS;
console.log(`load: openai ${version}, ${CLIENTS} streaming clients x ${REQUESTS} requests x ${MAX_TOKENS} tokens in ${wall.toFixed(1)} s: ` +
  `${stats.ok}/${n} right, ${(n * MAX_TOKENS / wall).toFixed(1)} generated tok/s in all, ` +
  `first token p50 ${pct(stats.ttft, 0.5).toFixed(0)} ms p95 ${pct(stats.ttft, 0.95).toFixed(0)} ms, ` +
  `request p50 ${pct(stats.total, 0.5).toFixed(0)} ms p95 ${pct(stats.total, 0.95).toFixed(0)} ms`);
console.log(`load: server RSS ${(rssBefore / 1024).toFixed(1)} MiB before, ${(rssAfterFirst / 1024).toFixed(1)} MiB after the first round, ` +
  `${(rssEnd / 1024).toFixed(1)} MiB at the end`);
check(stats.errors.length === 0, "no request failed", stats.errors.slice(0, 5));
check(stats.wrongCount === 0, `every request generated ${MAX_TOKENS} tokens`, stats.wrongCount);
check(stats.wrongText === 0, "every request's text is what it got alone", stats.wrongText);
check(stats.ok === n, `${n} requests completed`, stats.ok);
if (rssEnd && rssAfterFirst)
  check(rssEnd - rssAfterFirst <= SLACK_KIB, `server memory flat (grew ${rssEnd - rssAfterFirst} KiB after the first round, at most ${SLACK_KIB})`);
finish("load");
