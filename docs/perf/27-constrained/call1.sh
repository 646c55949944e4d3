#!/usr/bin/env bash
# Device call 1 (H200) of docs/perf/27-constrained: constrained decoding's cost a token on the 8B shape, and the new
# kernels' conformance there. Carry .gl, third_party/tokenizers/llama3 and build-pack/constrained.tar.xz (stripped
# build-dev: wgllm, wgllm-bench, libwgllm.so.0, test_ops, test_generate, libwebgpu_wrapper.so, and
# /lib/x86_64-linux-gnu/libmicrohttpd.so.12, which the device lacks). test_ops' logit filter
# and logprobs cases and test_generate's verdicts; the synthetic Llama 8B (Q4_0 GGUF, Llama 3's tokenizer embedded)
# through `wgllm run`: plain (two steps in flight), with a JSON schema (-jf) and with any object (-j '{}'), 256
# tokens at temperature 0.8, seed 1, each run twice (the second warm: the pipelines made), --stats lines kept; then
# `wgllm serve` on it: two plain requests and one schema three times (the scheduler's grammar cache), their timings.
set -u
T0=$SECONDS
t() { echo "== $(( SECONDS - T0 )) s: $*" | tee -a "$OUT/log.txt"; }
for f in .gl/*.deb; do dpkg -x "$f" / 2>/dev/null; done; ldconfig
export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json
mkdir -p /tmp/b && tar -C /tmp/b -xJf "${PACK:-build-pack/constrained.tar.xz}" # PACK: call2.sh's
export LD_LIBRARY_PATH=/tmp/b
t "test_ops logit_filter, logprobs"
( cd tests && timeout 120 /tmp/b/test_ops -f logit_filter -f logprobs > "$OUT/test_ops.txt" 2>&1; echo "rc=$?" >> "$OUT/test_ops.txt" )
tail -3 "$OUT/test_ops.txt"
t "test_generate"
( cd tests && timeout 240 /tmp/b/test_generate > "$OUT/test_generate.txt" 2>&1; echo "rc=$?" >> "$OUT/test_generate.txt" )
grep -E "FAIL|filter|checks|rc=" "$OUT/test_generate.txt" | head -12
t "synthetic 8B GGUF with Llama 3's tokenizer"
timeout 200 /tmp/b/wgllm-bench --synthetic llama-8b --write-gguf /tmp/x8b.gguf --vocab third_party/tokenizers/llama3 \
  > "$OUT/write.txt" 2>&1
ls -la /tmp/x8b.gguf
SCHEMA=tests/data/grammar/schemas/ecommerce_order.json
[ -f $SCHEMA ] || SCHEMA=$(ls tests/data/grammar/schemas/*.json | head -1)
P="Write the order as JSON."
for mode in plain schema object; do
  x=(--ignore-eos); [ $mode = schema ] && x=(-jf $SCHEMA); [ $mode = object ] && x=(-j '{}')
  for run in cold warm; do
    t "8B $mode $run"
    timeout 120 /tmp/b/wgllm run -m /tmp/x8b.gguf -p "$P" -n 256 --temp 0.8 -s 1 --kv f16 --stats --no-display-prompt \
      "${x[@]}" > "$OUT/text_${mode}_$run.txt" 2> "$OUT/stats_${mode}_$run.txt"
    tail -1 "$OUT/stats_${mode}_$run.txt"
  done
done
for mode in schema object; do
  python3 -c "import json,sys; t=open(sys.argv[1]).read(); json.loads(t); print(sys.argv[1], 'parses:', len(t), 'bytes')" \
    "$OUT/text_${mode}_warm.txt" 2>&1 | tail -1
done
t "the server on the 8B: plain, then one schema three times (the grammar cache: compiled and masked once)"
/tmp/b/wgllm serve -m /tmp/x8b.gguf --port 18080 -np 1 -c 2048 --kv f16 > "$OUT/serve.out" 2> "$OUT/serve.err" &
SP=$!
for i in $(seq 1 600); do grep -q "listening on" "$OUT/serve.out" 2>/dev/null && break; sleep 0.5; done
python3 - "$SCHEMA" > "$OUT/serve_runs.txt" 2>&1 <<'PY'
import json, sys, time, urllib.request
schema = json.load(open(sys.argv[1]))
def post(body):
    req = urllib.request.Request("http://127.0.0.1:18080/v1/completions", json.dumps(body).encode(), {"Content-Type": "application/json"})
    t0 = time.time(); j = json.load(urllib.request.urlopen(req, timeout=300)); return j, time.time() - t0
base = {"prompt": "Write the order as JSON.", "max_tokens": 256, "temperature": 0.8, "seed": 1}
for name, extra in [("plain", {"ignore_eos": True}), ("plain", {"ignore_eos": True})] + [("schema", {"response_format": {"type": "json_schema", "json_schema": {"name": "o", "schema": schema}}})] * 3:
    j, secs = post(dict(base, **extra)); tm = j.get("timings", {})
    print(name, "tokens", j["usage"]["completion_tokens"], "decode tok/s %.1f" % tm.get("predicted_per_second", 0), "wall %.3f s" % secs, "finish", j["choices"][0]["finish_reason"])
m = urllib.request.urlopen("http://127.0.0.1:18080/metrics").read().decode()
print("\n".join(l for l in m.splitlines() if l.startswith("wgllm:grammars")))
PY
cat "$OUT/serve_runs.txt"
kill $SP; wait $SP
t "the default model: plain, schema"
for mode in plain schema; do
  x=(--ignore-eos); [ $mode = schema ] && x=(-jf $SCHEMA)
  for run in cold warm; do
    timeout 60 /tmp/b/wgllm run -m models/default -p "$P" -n 200 --temp 0.8 -s 1 --stats --no-display-prompt \
      "${x[@]}" > /dev/null 2> "$OUT/default_${mode}_$run.txt"
  done
  tail -1 "$OUT/default_${mode}_warm.txt"
done
t done
