// Helpers of the `wgllm serve` tests (tests/test_server*.sh run them with node): the pinned openai client
// (third_party/node_modules/openai, fetched by scripts/bootstrap.sh), checks that count failures, raw HTTP
// exchanges over a socket (for requests no client library would send), and the server's resident memory.
import fs from "node:fs";
import net from "node:net";
import path from "node:path";
import { pathToFileURL } from "node:url";

const here = path.dirname(new URL(import.meta.url).pathname);
export const root = path.resolve(here, "../..");

export const port = Number(process.env.WGLLM_SERVE_PORT);
export const apiKey = process.env.WGLLM_SERVE_KEY || "";
export const baseURL = `http://127.0.0.1:${port}/v1`;
if (!port) throw new Error("WGLLM_SERVE_PORT is not set");

export async function loadOpenAI() {
  // openai 5 documents Node 20+; chat and completions need only fetch and web streams, which Debian's Node 18 has.
  // Its File check (uploads only) gets node:buffer's File there, as its own message advises.
  if (typeof File === "undefined") globalThis.File = (await import("node:buffer")).File;
  const dir = process.env.OPENAI_DIR || path.join(root, "third_party/node_modules/openai");
  if (!fs.existsSync(path.join(dir, "index.mjs"))) throw new Error(`no openai package in ${dir} (run scripts/bootstrap.sh)`);
  const mod = await import(pathToFileURL(path.join(dir, "index.mjs")).href);
  const pkg = JSON.parse(fs.readFileSync(path.join(dir, "package.json"), "utf8"));
  return { OpenAI: mod.default, version: pkg.version };
}

let failures = 0;
export function check(cond, what, detail) {
  if (cond) {
    console.log(`ok: ${what}`);
  } else {
    failures++;
    console.log(`FAILED: ${what}${detail !== undefined ? ": " + (typeof detail === "string" ? detail : JSON.stringify(detail)) : ""}`);
  }
}
export function finish(name) {
  console.log(`${name}: ${failures ? failures + " FAILED" : "all passed"}`);
  process.exit(failures ? 1 : 0);
}

// Sends bytes (a Buffer or string, or an array of them sent `gapMs` apart) and reads the answer until the server
// closes or `timeoutMs` pass; returns {status, head, body, closed}. closeAfterSend: the client shuts its socket right
// after sending (an early-closing client).
export function rawExchange(parts, { gapMs = 0, timeoutMs = 20000, closeAfterSend = false, until } = {}) {
  if (!Array.isArray(parts)) parts = [parts];
  return new Promise((resolve) => {
    const sock = net.connect(port, "127.0.0.1");
    const chunks = [];
    let done = false;
    const end = (closed) => {
      if (done) return;
      done = true;
      clearTimeout(timer);
      sock.destroy();
      const text = Buffer.concat(chunks).toString("latin1");
      const split = text.indexOf("\r\n\r\n");
      const head = split >= 0 ? text.slice(0, split) : text;
      const m = /^HTTP\/1\.[01] (\d{3})/.exec(head);
      resolve({ status: m ? Number(m[1]) : 0, head, body: split >= 0 ? text.slice(split + 4) : "", closed });
    };
    const timer = setTimeout(() => end(false), timeoutMs);
    sock.on("data", (d) => {
      chunks.push(d);
      if (until && until(Buffer.concat(chunks).toString("latin1"))) end(false);
    });
    sock.on("end", () => end(true));
    sock.on("close", () => end(true));
    sock.on("error", () => end(true));
    sock.on("connect", async () => {
      for (let i = 0; i < parts.length; i++) {
        if (i && gapMs) await new Promise((r) => setTimeout(r, gapMs));
        if (sock.destroyed) return;
        sock.write(parts[i]);
      }
      if (closeAfterSend) setTimeout(() => end(true), 50);
    });
  });
}

// A POST request's bytes with the API key and a correct Content-Length (unless headers override it).
export function post(pathname, body, headers = {}) {
  const b = Buffer.isBuffer(body) ? body : Buffer.from(body);
  const h = { Host: "127.0.0.1", "Content-Type": "application/json", "Content-Length": String(b.length), Connection: "close", ...headers };
  if (apiKey && !("Authorization" in headers)) h.Authorization = `Bearer ${apiKey}`;
  const lines = Object.entries(h).filter(([, v]) => v !== null).map(([k, v]) => `${k}: ${v}`);
  return Buffer.concat([Buffer.from(`POST ${pathname} HTTP/1.1\r\n${lines.join("\r\n")}\r\n\r\n`), b]);
}

export async function getJSON(pathname) {
  const r = await fetch(`http://127.0.0.1:${port}${pathname}`, { headers: apiKey ? { Authorization: `Bearer ${apiKey}` } : {} });
  return { status: r.status, json: await r.json() };
}

// The server's resident set in KiB (its pid from WGLLM_SERVE_PID), or 0 when unknown.
export function serverRssKiB() {
  const pid = process.env.WGLLM_SERVE_PID;
  if (!pid) return 0;
  const m = /VmRSS:\s+(\d+) kB/.exec(fs.readFileSync(`/proc/${pid}/status`, "utf8"));
  return m ? Number(m[1]) : 0;
}

// Waits until /health says no session is generating and nothing waits (or ms pass); returns the last /health.
export async function waitIdle(ms = 10000) {
  const t0 = Date.now();
  let h;
  do {
    h = (await getJSON("/health")).json;
    if (h.slots_processing === 0 && h.requests_waiting === 0) return h;
    await new Promise((r) => setTimeout(r, 50));
  } while (Date.now() - t0 < ms);
  return h;
}
