// HTTP framing and request-origin checks of `wgllm serve` (issue 27, item 4), over raw sockets: Content-Length
// headers that disagree or beside Transfer-Encoding (400), a transfer coding other than chunked (501 at once), a
// chunked body past --max-body (413 before the rest is sent), POSTs that are not application/json (415), a Host
// other than loopback's names or --allowed-hosts' (403, DNS rebinding) and an Origin other than the request's own
// (403). The server is started by tests/test_server_http.sh with --max-body 4096 --allowed-hosts example.test.
import { check, finish, port, rawExchange } from "./util.mjs";

const json = "Content-Type: application/json\r\n";
const tok = (body, head = json, host = "127.0.0.1") =>
  `POST /tokenize HTTP/1.1\r\nHost: ${host}\r\n${head}Content-Length: ${Buffer.byteLength(body)}\r\nConnection: close\r\n\r\n${body}`;
const TOK = '{"content": "In the beginning"}';

function errorOf(r) {
  try {
    return JSON.parse(r.body).error || {};
  } catch {
    return {};
  }
}

// expect(what, status, bytes, {code, within}): the status (and error code) within `within` ms
async function expect(what, status, bytes, { code, within = 3000, opts = {} } = {}) {
  const t0 = Date.now();
  const r = await rawExchange(bytes, { timeoutMs: within + 2000, ...opts });
  const ms = Date.now() - t0, e = errorOf(r);
  const ok = r.status === status && (code === undefined || e.code === code) && ms <= within;
  check(ok, `${what}: ${status}${code ? " " + code : ""} within ${within} ms`, { status: r.status, ms, body: r.body.slice(0, 200) });
  return r;
}

// ---- framing
await expect("Content-Length headers that disagree", 400,
  `POST /tokenize HTTP/1.1\r\nHost: 127.0.0.1\r\n${json}Content-Length: ${TOK.length}\r\nContent-Length: 200\r\n\r\n${TOK}`, { code: "bad_framing" });
await expect("Content-Length with Transfer-Encoding: chunked", 400,
  `POST /tokenize HTTP/1.1\r\nHost: 127.0.0.1\r\n${json}Content-Length: 5\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n`, { code: "bad_framing" });
await expect("Transfer-Encoding: gzip", 501,
  `POST /tokenize HTTP/1.1\r\nHost: 127.0.0.1\r\n${json}Transfer-Encoding: gzip\r\n\r\nabc`, { code: "unsupported_transfer_encoding", within: 1500 });
// a chunked body past --max-body (4096): the 413 comes while the client still holds the rest back
await expect("a chunked body past --max-body, the rest not sent", 413,
  `POST /tokenize HTTP/1.1\r\nHost: 127.0.0.1\r\n${json}Transfer-Encoding: chunked\r\n\r\n2000\r\n${"a".repeat(0x2000)}\r\n`,
  { code: "request_too_large", within: 1500 });
const chunked = `POST /tokenize HTTP/1.1\r\nHost: 127.0.0.1\r\n${json}Transfer-Encoding: chunked\r\nConnection: close\r\n\r\n${TOK.length.toString(16)}\r\n${TOK}\r\n0\r\n\r\n`;
await expect("a chunked body under the limit", 200, chunked);

// ---- Content-Type
await expect("a POST as text/plain", 415, tok(TOK, "Content-Type: text/plain\r\n"), { code: "unsupported_media_type" });
await expect("a POST as a form (curl -d)", 415, tok(TOK, "Content-Type: application/x-www-form-urlencoded\r\n"), { code: "unsupported_media_type" });
await expect("a POST without Content-Type", 415, tok(TOK, ""), { code: "unsupported_media_type" });
await expect("application/json; charset=utf-8", 200, tok(TOK, "Content-Type: Application/JSON; charset=utf-8\r\n"));

// ---- Host (the server listens on loopback)
await expect("Host: attacker.example", 403, tok(TOK, json, "attacker.example"), { code: "host_not_allowed" });
await expect("Host: attacker.example on GET /health", 403, `GET /health HTTP/1.1\r\nHost: attacker.example:${port}\r\nConnection: close\r\n\r\n`, { code: "host_not_allowed" });
await expect("Host: localhost.attacker.example", 403, tok(TOK, json, "localhost.attacker.example"), { code: "host_not_allowed" });
await expect("Host: 127.0.0.1.nip.io", 403, tok(TOK, json, `127.0.0.1.nip.io:${port}`), { code: "host_not_allowed" });
for (const h of ["localhost", `localhost:${port}`, "127.0.0.1", `127.0.0.1:${port}`, "[::1]", `[::1]:${port}`, "LOCALHOST", "example.test", `example.test:${port}`])
  await expect(`Host: ${h}`, 200, tok(TOK, json, h));

// ---- Origin: the request's own ("http://" + its Host) only
const withOrigin = (origin, host = `127.0.0.1:${port}`) => tok(TOK, `${json}Origin: ${origin}\r\n`, host);
await expect("Origin: http://attacker.example", 403, withOrigin("http://attacker.example"), { code: "origin_not_allowed" });
await expect("Origin: null", 403, withOrigin("null"), { code: "origin_not_allowed" });
await expect("Origin of another port", 403, withOrigin(`http://127.0.0.1:${port + 1}`), { code: "origin_not_allowed" });
await expect("Origin of GET /health from another site", 403,
  `GET /health HTTP/1.1\r\nHost: 127.0.0.1:${port}\r\nOrigin: https://attacker.example\r\nConnection: close\r\n\r\n`, { code: "origin_not_allowed" });
await expect("the server's own Origin", 200, withOrigin(`http://127.0.0.1:${port}`));
await expect("the server's own Origin by name", 200, withOrigin(`http://localhost:${port}`, `localhost:${port}`));

// ---- still serving
await expect("a completion after all that", 200,
  tok('{"prompt": "In the beginning", "max_tokens": 2}').replace("/tokenize", "/v1/completions"),
  { within: 60000 });
finish("http_edge");
