#!/usr/bin/env python3
# Aggregate decode throughput of a running `wgllm serve`: N clients at once, each streaming R completions of
# max_tokens tokens (ignore_eos, so every request decodes the full count), the wall time from the first request to
# the last [DONE]. Prints one JSON line: clients, requests, tokens, seconds, aggregate tok/s, mean time to first
# token, mean per-stream decode tok/s. Standard library only (the device has no pip).
import http.client, json, sys, threading, time

host, port = sys.argv[1], int(sys.argv[2])
clients, reqs, max_tokens = int(sys.argv[3]), int(sys.argv[4]), int(sys.argv[5])
label = sys.argv[6] if len(sys.argv) > 6 else ""
results, errors = [], []
lock = threading.Lock()


def one(ci, ri):
    body = json.dumps({"model": "x", "prompt": "Client %d request %d: once upon a time" % (ci, ri),
                       "max_tokens": max_tokens, "temperature": 0.8, "seed": ci * 1000 + ri, "stream": True,
                       "ignore_eos": True, "stream_options": {"include_usage": True}})
    c = http.client.HTTPConnection(host, port, timeout=600)
    t0 = time.time()
    c.request("POST", "/v1/completions", body, {"Content-Type": "application/json"})
    r = c.getresponse()
    if r.status != 200:
        with lock:
            errors.append("status %d: %s" % (r.status, r.read()[:200]))
        return
    first, toks, buf = None, None, b""
    while True:
        line = r.readline()
        if not line:
            break
        line = line.strip()
        if not line.startswith(b"data: "):
            continue
        d = line[6:]
        if d == b"[DONE]":
            break
        j = json.loads(d)
        if first is None and j.get("choices") and j["choices"][0].get("text"):
            first = time.time()
        if j.get("usage"):
            toks = j["usage"]["completion_tokens"]
    t1 = time.time()
    c.close()
    with lock:
        results.append((t0, first or t1, t1, toks or 0))


def client(ci):
    for ri in range(reqs):
        try:
            one(ci, ri)
        except Exception as e:  # noqa
            with lock:
                errors.append(repr(e))


ts = [threading.Thread(target=client, args=(i,)) for i in range(clients)]
T0 = time.time()
for t in ts:
    t.start()
for t in ts:
    t.join()
T1 = time.time()
tok = sum(r[3] for r in results)
ttft = sum(r[1] - r[0] for r in results) / max(1, len(results))
per = sum(r[3] / max(1e-9, r[2] - r[1]) for r in results) / max(1, len(results))
print(json.dumps({"label": label, "clients": clients, "requests": len(results), "errors": len(errors),
                  "max_tokens": max_tokens, "completion_tokens": tok, "seconds": round(T1 - T0, 3),
                  "aggregate_tok_s": round(tok / (T1 - T0), 1), "mean_ttft_s": round(ttft, 3),
                  "mean_stream_tok_s": round(per, 1), "first_error": errors[0] if errors else None}))
