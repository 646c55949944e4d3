// The chat page `wgllm serve` answers at / (web/chat/index.html), in headless Chromium (Debian's, driven by
// playwright-core from scripts/bootstrap.sh): it loads without the key, lists the model once given the key, sends a
// message with a system prompt and greedy settings and streams the reply (the text the API gives the same request),
// stops a long reply with Stop (the session freed), and renders markdown with the model's text escaped.
import fs from "node:fs";
import path from "node:path";
import { createRequire } from "node:module";
import { apiKey, check, finish, port, root, waitIdle } from "./util.mjs";

const CHROMIUM = process.env.WGLLM_CHROMIUM || "/usr/bin/chromium";
const pw = path.join(root, "third_party/node_modules/playwright-core");
if (!fs.existsSync(CHROMIUM) || !fs.existsSync(pw)) {
  console.log(`chat_page: FAILED: no browser (${CHROMIUM}) or no playwright-core (${pw}): scripts/bootstrap.sh installs them`);
  process.exit(1);
}
const { chromium } = createRequire(import.meta.url)(pw);
const base = `http://127.0.0.1:${port}`;
const browser = await chromium.launch({ executablePath: CHROMIUM, headless: true, args: ["--no-sandbox"] });
const page = await browser.newPage();
const errors = [];
page.on("pageerror", (e) => errors.push(e.message));
try {
  const r = await page.goto(`${base}/`);
  check(r.status() === 200 && (await page.title()) === "wgllm chat", "GET /: the chat page, without the key", r.status());
  if (apiKey) {
    await page.fill("#key", apiKey);
    await page.dispatchEvent("#key", "change");
  }
  await page.waitForFunction(() => document.querySelector("#model").value === "default", null, { timeout: 30000 });
  check(true, "the model list, from /v1/models");

  // a message: the reply streamed, the text of the same request to the API
  await page.click("details summary"); /* the system prompt's section opened */
  await page.fill("#system", "Answer as the scripture does.");
  await page.fill("#temperature", "0");
  await page.fill("#max_tokens", "16");
  await page.fill("#input", "In the beginning");
  await page.focus("#input");
  await page.keyboard.press("Enter");
  await page.waitForFunction(() => window.wgllmChat.state.messages.length === 2 && !window.wgllmChat.state.busy, null,
                             { timeout: 120000 });
  const shown = await page.evaluate(() => ({ text: window.wgllmChat.state.messages[1].content,
                                             chunks: window.wgllmChat.state.chunks,
                                             html: document.querySelector(".msg.assistant .body").innerHTML }));
  const headers = { "Content-Type": "application/json", ...(apiKey ? { Authorization: `Bearer ${apiKey}` } : {}) };
  const ref = await (await fetch(`${base}/v1/chat/completions`, {
    method: "POST", headers,
    body: JSON.stringify({ model: "default", temperature: 0, top_p: 0.95, max_tokens: 16,
                           messages: [{ role: "system", content: "Answer as the scripture does." },
                                      { role: "user", content: "In the beginning" }] }),
  })).json();
  const want = ref.choices[0].message.content;
  check(shown.text === want && want.length > 0, "send: the reply the API gives the same request", { shown: shown.text, want });
  check(shown.chunks > 1, `... streamed (${shown.chunks} chunks)`);
  check(shown.html.length > 0 && !shown.html.includes("<script"), "... rendered in the page");

  // Stop: a long reply cut short, marked, and its session back
  await page.fill("#max_tokens", "400");
  await page.fill("#input", "And God said");
  await page.click("#send");
  await page.waitForFunction(() => window.wgllmChat.state.chunks >= 2, null, { timeout: 60000 });
  await page.click("#stop");
  await page.waitForFunction(() => !window.wgllmChat.state.busy, null, { timeout: 30000 });
  const stopped = await page.evaluate(() => {
    const m = window.wgllmChat.state.messages;
    return { n: m.length, stopped: !!m[3]?.stopped, text: m[3]?.content || "", shown: document.querySelector(".msg.assistant:last-of-type .stopped") !== null };
  });
  check(stopped.n === 4 && stopped.stopped && stopped.text.length > 0 && stopped.shown, "Stop: the reply ends where it was, marked stopped", stopped);
  const idle = await waitIdle();
  check(idle.slots_processing === 0, "... and its session is freed", idle);

  // markdown: code, emphasis, lists and links rendered; the model's text never markup
  const html = await page.evaluate(() =>
    window.wgllmChat.renderMarkdown("# T\n**b** and *i* `x<y`\n\n```js\nif (a < b) {}\n```\n- one\n- two\n\n[l](https://e.x) <img src=x onerror=alert(1)>"));
  check(html.includes("<h1>T</h1>") && html.includes("<strong>b</strong>") && html.includes("<em>i</em>") &&
        html.includes("<code>x&lt;y</code>") && html.includes('<pre><code class="language-js">if (a &lt; b) {}</code></pre>') &&
        html.includes("<ul><li>one</li><li>two</li></ul>") && html.includes('<a href="https://e.x"') &&
        !html.includes("<img"), "markdown rendered, HTML in the text escaped", html);
  check(errors.length === 0, "no page errors", errors);
} catch (e) {
  check(false, "the chat page", String(e && e.stack || e));
} finally {
  await browser.close();
}
finish("chat_page");
