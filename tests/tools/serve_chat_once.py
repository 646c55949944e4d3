#!/usr/bin/env python3
"""One chat completion from `wgllm serve` (stdlib only): starts BIN serve -m MODEL on PORT, waits for /health, posts
one user message (greedy, max_tokens N) to /v1/chat/completions, prints the reply's content to stdout, stops the
server. Exit 1 when the server does not come up or the answer is not a chat completion. tests/test_moe.c uses it.

usage: serve_chat_once.py BIN MODEL PORT MESSAGE N
"""
import json
import subprocess
import sys
import time
import urllib.request


def main():
    binary, model, port, message, n = sys.argv[1:6]
    url = "http://127.0.0.1:%s" % port
    srv = subprocess.Popen([binary, "serve", "-m", model, "--port", port], stdout=subprocess.DEVNULL,
                           stderr=subprocess.DEVNULL)
    try:
        for _ in range(240):
            if srv.poll() is not None:
                sys.exit("serve_chat_once.py: the server exited (%d)" % srv.returncode)
            try:
                urllib.request.urlopen(url + "/health", timeout=2).read()
                break
            except Exception:
                time.sleep(0.5)
        body = {"messages": [{"role": "user", "content": message}], "max_tokens": int(n), "temperature": 0}
        req = urllib.request.Request(url + "/v1/chat/completions", data=json.dumps(body).encode(),
                                     headers={"Content-Type": "application/json"})
        r = json.loads(urllib.request.urlopen(req, timeout=300).read())
        sys.stdout.write(r["choices"][0]["message"]["content"])
    finally:
        srv.terminate()
        srv.wait(timeout=30)


if __name__ == "__main__":
    main()
