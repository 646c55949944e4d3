#!/usr/bin/env bash
# `wgllm serve` with several models: the option errors (an --alias per -m, names distinct, --models-dir's contents,
# --models-max, --models-memory), then tests/server/models.mjs through the openai client on a server of three names
# for the default model's files (-m models/default, --models-dir with its GGUF and its directory, --models-max 2), and
# a --models-memory budget the default already fills (a load is 503, saying so), and a model lost with its device
# whose files are gone (unloaded at its next request and loaded again).
# Usage: tests/test_server_models.sh BUILD_DIR (ctest runs it from the repository root).
set -u
BUILD="$(cd "${1:?usage: tests/test_server_models.sh BUILD_DIR}" && pwd)"
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
TMP=$(mktemp -d)
. "$ROOT/tests/server/serve_lib.sh"
trap 'cleanup_servers; rm -rf "$TMP"' EXIT
need_tools node curl

mkdir -p "$TMP/dir" "$TMP/empty"
ln -s "$ROOT/models/default.gguf" "$TMP/dir/a.gguf"
ln -s "$ROOT/models/default" "$TMP/dir/b"
echo "not a model" >"$TMP/dir/notes.txt"

"${SERVE[@]}" -m "$MODEL" --alias x --alias y --port 0 2>"$TMP/e1"
check "two --alias for one -m: exit 2" test $? = 2
check "... saying the k-th names the k-th" grep -q "alias is given 2 times for 1 models" "$TMP/e1"
"${SERVE[@]}" -m "$MODEL" -m "$MODEL" --port 0 2>"$TMP/e2"
check "two models of one name: exit 2" test $? = 2
check "... naming it and --alias" grep -q "two models are named 'default'.*name them with --alias" "$TMP/e2"
"${SERVE[@]}" -m "$MODEL" --models-dir "$TMP/empty" --port 0 2>"$TMP/e3"
check "--models-dir without models: exit 2" test $? = 2
check "... saying what it looks for" grep -q "no .gguf file or Hugging Face directory" "$TMP/e3"
"${SERVE[@]}" -m "$MODEL" --models-memory 12 --port 0 2>"$TMP/e4"
check "--models-memory without a unit: exit 2" test $? = 2
"${SERVE[@]}" -m "$MODEL" --models-dir "$TMP/dir" --models-max 1 --port 0 2>"$TMP/e5"
check "--models-max 1 with several models: exit 2" test $? = 2
check "... saying the default stays loaded" grep -q "models-max 1 leaves no room" "$TMP/e5"

start_server models --models-dir "$TMP/dir" --models-max 2 -c 256 -np 2 || exit 1
if WGLLM_SERVE_PORT=$SERVE_PORT node "$ROOT/tests/server/models.mjs"; then ok "several models"; else bad "several models"; fi
check "the log says what it loaded and unloaded" grep -q "unloading 'a' (least recently used)" "$TMP/models.err"
stop_server "$SERVE_PID"
check "stopped with models loaded: exit 0" test "$STOP_STATUS" = 0

start_server budget --models-dir "$TMP/dir" --models-memory 1MiB -c 256 -np 1 || exit 1
code=$(curl -s -o "$TMP/b1" -w '%{http_code}' "${JSON_CT[@]}" "http://127.0.0.1:$SERVE_PORT/v1/completions" \
  -d '{"model": "a", "prompt": "x", "max_tokens": 1}')
check "--models-memory the default fills: a load is 503" test "$code" = 503
check "... naming the budget" grep -q "models-memory" "$TMP/b1"
code=$(curl -s -o "$TMP/b2" -w '%{http_code}' "${JSON_CT[@]}" "http://127.0.0.1:$SERVE_PORT/v1/completions" \
  -d '{"prompt": "x", "max_tokens": 1}')
check "... the default still answers" test "$code" = 200
stop_server "$SERVE_PID"

# a model other than the default lost with its device and unable to reload (its files gone): it is unloaded at the
# next request naming it and loaded again (refused while its files are gone, answered once they are back); the
# default answers throughout
cp -r "$ROOT/models/default" "$TMP/gone-b"
WGLLM_TEST_DEVICE_LOSS_STEP=8 start_server lost -m "$TMP/gone-b" --alias default --alias b -c 256 -np 1 || exit 1
url="http://127.0.0.1:$SERVE_PORT"
ask_b() { curl -s -o "$TMP/$1" -w '%{http_code}' "${JSON_CT[@]}" "$url/v1/completions" \
  -d "{\"model\": \"${3:-b}\", \"prompt\": \"In the beginning\", \"max_tokens\": $2, \"temperature\": 0, \"ignore_eos\": true}"; }
check "'b' loads and answers" test "$(ask_b l1 2)" = 200
rm -rf "$TMP/gone-b"
code=$(ask_b l2 24)
check "the device lost under a request on 'b': 503" test "$code" = 503
state=""
for _ in $(seq 1 100); do
  state=$(curl -s "$url/v1/models" | node -e 'let s="";process.stdin.on("data",d=>s+=d).on("end",()=>{const m=JSON.parse(s).data.find(x=>x.id==="b");console.log(m.status.value)})')
  [ "$state" = failed ] && break
  sleep 0.2
done
check "/v1/models: 'b' failed once its reload failed" test "$state" = failed
check "... the default still answers" test "$(ask_b l3 2 default)" = 200
code=$(ask_b l4 2)
check "a request on 'b' with its files gone: 500 model_load_failed (it was unloaded and loaded again)" test "$code" = 500
check "... naming the failed load" grep -q "model_load_failed" "$TMP/l4"
check "the log says why it was unloaded" grep -q "unloading 'b' (its device was lost and it did not reload)" "$TMP/lost.err"
cp -r "$ROOT/models/default" "$TMP/gone-b"
check "its files back: 'b' loads and answers again" test "$(ask_b l5 2)" = 200
stop_server "$SERVE_PID"
check "stopped: exit 0" test "$STOP_STATUS" = 0

[ "$FAILED" = 0 ] && echo "test_server_models: all passed" || echo "test_server_models: $FAILED FAILED"
[ "$FAILED" = 0 ]
