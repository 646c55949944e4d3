#!/usr/bin/env bash
# Scale-out as docs/SERVING.md shows it: two `wgllm serve` instances behind nginx (Debian's) with
# tests/server/nginx.conf, all on loopback. 16 concurrent requests through nginx, streamed and not, must all be
# answered 200 with their token counts, both instances must have served some, a stream must come through unbuffered
# (its events before its end), and requests nginx sends to a full instance must go to the other one
# (proxy_next_upstream http_503).
# Usage: tests/test_server_nginx.sh BUILD_DIR
set -u
BUILD="$(cd "${1:?usage: tests/test_server_nginx.sh BUILD_DIR}" && pwd)"
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
TMP=$(mktemp -d)
chmod 755 "$TMP" # nginx's worker (nobody, when run as root) writes its temporary files here
. "$ROOT/tests/server/serve_lib.sh"
NGINX=$(command -v nginx || echo /usr/sbin/nginx)
NGINX_PID=""
trap '[ -n "$NGINX_PID" ] && kill "$NGINX_PID" 2>/dev/null; cleanup_servers; rm -rf "$TMP"' EXIT
need_tools curl node
need_node_server
[ -x "$NGINX" ] || {
  echo "nginx is needed (scripts/bootstrap.sh installs it)"
  exit 1
}

# instance a queues nothing (a request beyond its 4 sessions is 503, which nginx passes to b); b queues up to 16
start_server a -v -np 4 --queue 0 || exit 1
PORT_A=$SERVE_PORT
start_server b -v -np 4 --queue 16 || exit 1
PORT_B=$SERVE_PORT
PORT=$(free_port)
mkdir -p "$TMP/nginx"
chmod 777 "$TMP/nginx"
sed -e "s|@PREFIX@|$TMP/nginx|g" -e "s|@PORT_A@|$PORT_A|g" -e "s|@PORT_B@|$PORT_B|g" -e "s|@PORT@|$PORT|g" \
  "$ROOT/tests/server/nginx.conf" >"$TMP/nginx.conf"
"$NGINX" -t -c "$TMP/nginx.conf" -p "$TMP/nginx" >"$TMP/nginx-t.log" 2>&1 || {
  echo "nginx refuses the configuration:"
  cat "$TMP/nginx-t.log"
  exit 1
}
"$NGINX" -c "$TMP/nginx.conf" -p "$TMP/nginx" >"$TMP/nginx.log" 2>&1 &
NGINX_PID=$!
URL=http://127.0.0.1:$PORT
for _ in $(seq 1 100); do curl -s -o /dev/null "$URL/health" && break; sleep 0.1; done
ok "nginx on port $PORT in front of instances on $PORT_A and $PORT_B"

# 16 requests at once, spread by nginx (least_conn); those a full instance a refuses go to b: all must end 200
for i in $(seq 1 16); do
  if [ $((i % 2)) = 0 ]; then
    curl -sN -o "$TMP/r$i" -w '%{http_code}' "$URL/v1/completions" \
      "${JSON_CT[@]}" -d "{\"prompt\": \"In the beginning $i\", \"max_tokens\": 6, \"ignore_eos\": true, \"stream\": true, \"stream_options\": {\"include_usage\": true}}" >"$TMP/c$i" &
  else
    curl -s -o "$TMP/r$i" -w '%{http_code}' "$URL/v1/chat/completions" \
      "${JSON_CT[@]}" -d "{\"messages\": [{\"role\": \"user\", \"content\": \"Hello $i\"}], \"max_tokens\": 6, \"ignore_eos\": true}" >"$TMP/c$i" &
  fi
done
wait_all() { for j in $(jobs -p); do [ "$j" = "$NGINX_PID" ] || [[ " ${SERVER_PIDS[*]} " == *" $j "* ]] || wait "$j"; done; }
wait_all
answered=0 right=0
for i in $(seq 1 16); do
  [ "$(cat "$TMP/c$i")" = 200 ] && answered=$((answered + 1))
  if grep -q '"completion_tokens":6' "$TMP/r$i"; then right=$((right + 1)); fi
done
check "16 concurrent requests through nginx: all 200 ($answered)" test "$answered" = 16
check "... each with its 6 tokens ($right)" test "$right" = 16
served_a=$(grep -c "^wgllm serve: POST /v1/[a-z/]*completions 200" "$TMP/a.err")
served_b=$(grep -c "^wgllm serve: POST /v1/[a-z/]*completions 200" "$TMP/b.err")
check "both instances served requests (a: $served_a, b: $served_b)" test "$served_a" -gt 0 -a "$served_b" -gt 0
check "... 16 in all" test $((served_a + served_b)) = 16
echo "(a refused $(grep -c "^wgllm serve: POST .* 503" "$TMP/a.err") of them as full; nginx passed those to b)"

# a full instance: a's 4 sessions busy with long streams sent to it directly; 4 requests through nginx (which
# picks a first, having no connection to it) are refused there and answered by b
LONG_PIDS=()
for i in 1 2 3 4; do
  curl -sN -o /dev/null "http://127.0.0.1:$PORT_A/v1/completions" \
    "${JSON_CT[@]}" -d '{"prompt": "And God said", "max_tokens": 400, "ignore_eos": true, "stream": true}' &
  LONG_PIDS+=($!)
done
for _ in $(seq 1 200); do
  curl -s -o "$TMP/ha" "http://127.0.0.1:$PORT_A/health"
  grep -q '"slots_processing":4' "$TMP/ha" && break
  sleep 0.1
done
refused_before=$(grep -c "^wgllm serve: POST .* 503" "$TMP/a.err")
for i in 1 2 3 4; do
  curl -s -o "$TMP/f$i" -w '%{http_code}' "$URL/v1/completions" "${JSON_CT[@]}" -d '{"prompt": "Let there be", "max_tokens": 3}' >"$TMP/fc$i"
done
failover=0
for i in 1 2 3 4; do [ "$(cat "$TMP/fc$i")" = 200 ] && grep -q '"completion_tokens":3' "$TMP/f$i" && failover=$((failover + 1)); done
refused=$(($(grep -c "^wgllm serve: POST .* 503" "$TMP/a.err") - refused_before))
check "a full instance: 4 requests through nginx answered 200 ($failover)" test "$failover" = 4
check "... after a refused them 503 ($refused) and nginx passed them on" test "$refused" -ge 1
kill "${LONG_PIDS[@]}" 2>/dev/null
wait "${LONG_PIDS[@]}" 2>/dev/null

# a stream through nginx arrives as it is generated: its first event well before its end
node -e '
  const t0 = Date.now();
  fetch(process.argv[1] + "/v1/completions", { method: "POST", headers: { "Content-Type": "application/json" }, body: JSON.stringify({ prompt: "And God said", max_tokens: 60, ignore_eos: true, stream: true }) })
    .then(async (r) => {
      let first = 0, text = "";
      for await (const part of r.body) { if (!first) first = Date.now() - t0; text += Buffer.from(part).toString(); }
      const total = Date.now() - t0;
      console.log(`stream through nginx: first bytes after ${first} ms, the end after ${total} ms`);
      const ok = r.status === 200 && first < total / 2 && text.trimEnd().endsWith("data: [DONE]");
      if (!ok) console.log(`status ${r.status}: ${text.slice(0, 300)}`);
      process.exit(ok ? 0 : 1);
    });' "$URL"
check "a stream through nginx is not buffered" test $? = 0
echo "test_server_nginx: $([ $FAILED = 0 ] && echo "all passed" || echo "$FAILED FAILED")"
[ "$FAILED" = 0 ]
