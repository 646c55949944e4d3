#!/usr/bin/env python3
# Served load of a running `wgllm serve`: C clients at once, each streaming R completions of max_tokens tokens
# (ignore_eos: every request decodes the full count; prompts of its own, "Client c request r: ..."), from the first
# request to the last [DONE]. Prints one JSON line: clients, requests, errors, tokens, seconds, aggregate tok/s,
# time to first token p50/p99 (ms, request sent to its first text) and inter-token latency p50/p99 (ms, between a
# stream's successive text chunks). Standard library only (the device has no pip).
#   serve_load.py HOST PORT CLIENTS REQUESTS MAX_TOKENS [LABEL]
import http.client, json, sys, threading, time

host, port = sys.argv[1], int(sys.argv[2])
clients, reqs, max_tokens = int(sys.argv[3]), int(sys.argv[4]), int(sys.argv[5])
label = sys.argv[6] if len(sys.argv) > 6 else ""
ttft, itl, errors, tokens = [], [], [], [0]
lock = threading.Lock()


def one(ci, ri):
    body = json.dumps({"model": "x", "prompt": "Client %d request %d: once upon a time, in a land far away," % (ci, ri),
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
    last, gaps, first, n = None, [], None, 0
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
        if j.get("usage"):
            n = j["usage"]["completion_tokens"]
        if j.get("choices") and j["choices"][0].get("text"):
            now = time.time()
            if first is None:
                first = now
            else:
                gaps.append(now - last)
            last = now
    with lock:
        if first is not None:
            ttft.append(first - t0)
        itl.extend(gaps)
        tokens[0] += n
        if n != max_tokens:
            errors.append("%d tokens, not %d" % (n, max_tokens))


def client(ci):
    for ri in range(reqs):
        try:
            one(ci, ri)
        except Exception as e:  # noqa: BLE001 - any failure is an error of the run
            with lock:
                errors.append(repr(e))


def pct(v, p):
    if not v:
        return None
    v = sorted(v)
    return round(v[min(len(v) - 1, int(p / 100.0 * len(v)))] * 1000, 2)


t0 = time.time()
ts = [threading.Thread(target=client, args=(i,)) for i in range(clients)]
for t in ts:
    t.start()
for t in ts:
    t.join()
dt = time.time() - t0
print(json.dumps({"label": label, "clients": clients, "requests": clients * reqs, "errors": len(errors),
                  "first_errors": errors[:3], "tokens": tokens[0], "seconds": round(dt, 3),
                  "aggregate_tok_s": round(tokens[0] / dt, 1), "ttft_ms_p50": pct(ttft, 50),
                  "ttft_ms_p99": pct(ttft, 99), "itl_ms_p50": pct(itl, 50), "itl_ms_p99": pct(itl, 99)}))
