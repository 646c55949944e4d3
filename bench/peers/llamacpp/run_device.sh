#!/usr/bin/env bash
# wgllm and llama.cpp (Vulkan backend, every layer on the GPU) side by side on the same synthetic Q4_0 GGUF files,
# on the GPU machine. Run it from the root of the wgllm checkout:
#   bash bench/peers/llamacpp/run_device.sh        (results: $OUT, or bench/peers/llamacpp/out; at most 6 files)
# It needs, carried (see README.md "On the GPU machine"): bench/peers/llamacpp/dist (llcbench-linux-x64-vulkan.tar.xz)
# or bench/peers/llamacpp/lib (fetch.sh makes both here: the GPU machine has no package registry), `.gl` (the Debian
# Vulkan/GL packages, README.md) and a wgllm built here: bench/peers/llamacpp/wgllm-bin, which pack_wgllm.sh fills
# (wgllm with its libraries and Dawn's), or third_party/dawn and a build named by WGLLM_BIN (or, where cmake finds
# the libcjson and PCRE2 headers there, third_party/dawn alone: it builds wgllm itself).
# Steps: Vulkan setup -> llcbench unpacked -> wgllm unpacked (or built) -> GGUFs written by `wgllm bench --synthetic
# NAME --write-gguf` -> `wgllm bench -m FILE --json` and `llcbench bench FILE` on each -> a logits check of both
# engines on a Q4_0 fixture -> llama.cpp's perplexity when PPL_TEXT is set -> one table.
# Settings (environment): MODELS ("llama-1b llama-8b"), PROMPT (128), GEN (64), RUNS (5), WG_KV ("f32 f16": one
# wgllm run each), LLC_KV ("f16,f32"), LLC_SAMPLE ("host,backend,none"), LLC_ARGS (more llcbench options),
# WGLLM_BIN (skip the build; default: pack_wgllm.sh's when carried), GGUF_DIR (/tmp), REWRITE=1 (rewrite existing
# GGUFs), CONF_REF (fixture dir with model.gguf + ref.json; default tests/data/models/llama_q4_0_gguf; "none" skips),
# VK_DRIVER_FILES (NVIDIA ICD), LLC_DIR (where fetch.sh put lib/ or dist/, default this folder), PPL_TEXT (a text
# file: `llcbench perplexity` of PPL_MODEL (models/default.gguf) at -c PPL_CTX (512) on Vulkan, f16 and f32 KV, JSON
# lines in perplexity.jsonl).
set -u
HERE="$(cd "$(dirname "$0")" && pwd)"
ROOT="$(cd "$HERE/../../.." && pwd)"  # the wgllm checkout this folder is in: relative paths below are from there
cd "$ROOT" || exit 1
OUT="${OUT:-$HERE/out}"
mkdir -p "$OUT"
exec > >(tee -a "$OUT/run_device.log") 2>&1
MODELS=${MODELS:-llama-1b llama-8b}
PROMPT=${PROMPT:-128} GEN=${GEN:-64} RUNS=${RUNS:-5}
WG_KV=${WG_KV:-f32 f16} LLC_KV=${LLC_KV:-f16,f32} LLC_SAMPLE=${LLC_SAMPLE:-host,backend,none} LLC_ARGS=${LLC_ARGS:-}
GGUF_DIR=${GGUF_DIR:-/tmp}
JSONL="$OUT/bench.jsonl"
: > "$JSONL"
say() { echo "== $*"; }
die() { echo "run_device.sh: $*" >&2; exit 1; }

# --- Vulkan: the packages carried in .gl (README.md), then the NVIDIA ICD
if ls "$ROOT"/.gl/*.deb >/dev/null 2>&1; then
  for f in "$ROOT"/.gl/*.deb; do dpkg -x "$f" /; done
  ldconfig
  say "unpacked $(ls "$ROOT"/.gl/*.deb | wc -l) packages from .gl"
else
  say "no .gl/*.deb: relying on the Vulkan loader bundled with llcbench and the system's libraries"
fi
export VK_DRIVER_FILES="${VK_DRIVER_FILES:-/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json}"
[ -f "$VK_DRIVER_FILES" ] || say "warning: VK_DRIVER_FILES=$VK_DRIVER_FILES does not exist"
command -v nvidia-smi >/dev/null && nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader

# --- llcbench and its libraries: lib/ as carried, else the packed copy unpacked to /tmp
D="${LLC_DIR:-$HERE}"  # where fetch.sh put lib/ or dist/
if [ -x "$D/lib/llcbench" ]; then
  LLC="$D/lib"
elif [ -f "$D/dist/llcbench-linux-x64-vulkan.tar.xz" ]; then
  mkdir -p /tmp/llcbench-peer
  if command -v xz >/dev/null; then
    tar -xJf "$D/dist/llcbench-linux-x64-vulkan.tar.xz" -C /tmp/llcbench-peer
  else
    python3 -c "import sys, tarfile; tarfile.open(sys.argv[1], 'r:xz').extractall(sys.argv[2])" \
      "$D/dist/llcbench-linux-x64-vulkan.tar.xz" /tmp/llcbench-peer
  fi
  LLC=/tmp/llcbench-peer/lib
else
  die "neither $D/lib/llcbench nor $D/dist/llcbench-linux-x64-vulkan.tar.xz: run fetch.sh and carry one of them"
fi
say "llcbench: $LLC"
for f in "$LLC/llcbench" "$LLC/libggml-vulkan.so"; do
  if ldd "$f" | grep -q "not found"; then ldd "$f" | grep "not found"; die "$f: missing libraries (above)"; fi
done
"$LLC/llcbench" devices

# --- wgllm
if [ -z "${WGLLM_BIN:-}" ] && [ -f "$HERE/wgllm-bin/wgllm-linux-x64.tar.xz" ]; then
  # pack_wgllm.sh's build: wgllm, libwgllm.so.0, libmicrohttpd.so.12 and Dawn's library in one folder
  mkdir -p /tmp/wgllm-peer
  if command -v xz >/dev/null; then
    tar -xJf "$HERE/wgllm-bin/wgllm-linux-x64.tar.xz" -C /tmp/wgllm-peer
  else
    python3 -c "import sys, tarfile; tarfile.open(sys.argv[1], 'r:xz').extractall(sys.argv[2])" \
      "$HERE/wgllm-bin/wgllm-linux-x64.tar.xz" /tmp/wgllm-peer
  fi
  WGLLM_BIN=/tmp/wgllm-peer/wgllm/wgllm
fi
if [ -n "${WGLLM_BIN:-}" ]; then
  BIN="$WGLLM_BIN"
  say "wgllm: prebuilt $BIN"
elif [ -f third_party/.bootstrap-v2 ] && [ -f third_party/tokenizers/gemma3/tokenizer.json ]; then
  say "wgllm: make build BUILD=build-peer"
  make build BUILD=build-peer JOBS="$(nproc)" > "$OUT/build.log" 2>&1 || { tail -30 "$OUT/build.log"; die "make failed"; }
  BIN=build-peer/wgllm
elif [ -f third_party/dawn/lib/libwebgpu_wrapper.so ]; then
  # Dawn carried without the tokenizers: `make` would try to bootstrap from the network, so configure directly
  say "wgllm: cmake build-peer (third_party/dawn carried, no bootstrap stamp)"
  { cmake -S . -B build-peer -DCMAKE_BUILD_TYPE=RelWithDebInfo &&
    cmake --build build-peer --target wgllm_cli -j "$(nproc)"; } > "$OUT/build.log" 2>&1 ||
    { tail -30 "$OUT/build.log"; die "wgllm build failed (needs libcjson-dev, libpcre2-dev; else carry a build and set WGLLM_BIN)"; }
  BIN=build-peer/wgllm
else
  die "no third_party/dawn to build wgllm with: carry it, or carry a build and set WGLLM_BIN"
fi
export LD_LIBRARY_PATH="$ROOT/third_party/dawn/lib:$(cd "$(dirname "$BIN")" && pwd)${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
"$BIN" info --gpu || die "wgllm sees no GPU"

# --- the same files for both engines
for m in $MODELS; do
  f="$GGUF_DIR/x${m#llama-}.gguf"
  if [ -s "$f" ] && [ "${REWRITE:-0}" != 1 ]; then say "reusing $f"; continue; fi
  say "writing $f"
  "$BIN" bench --synthetic "$m" --write-gguf "$f" || die "--write-gguf $m failed"
done
for m in $MODELS; do
  f="$GGUF_DIR/x${m#llama-}.gguf"
  ls -la "$f"
  for kv in $WG_KV; do
    say "wgllm bench -m $f --kv $kv"
    timeout 600 "$BIN" bench -m "$f" --prompt "$PROMPT" --gen "$GEN" --runs "$RUNS" --kv "$kv" --json |
      sed 's/^{/{"engine": "wgllm", /' | tee -a "$JSONL"
  done
  say "llcbench bench $f --backend vulkan --ngl 99 --kv $LLC_KV --sample $LLC_SAMPLE $LLC_ARGS"
  timeout 900 "$LLC/llcbench" bench "$f" --backend vulkan --ngl 99 --prompt "$PROMPT" --gen "$GEN" --runs "$RUNS" \
    --kv "$LLC_KV" --sample "$LLC_SAMPLE" $LLC_ARGS | tee -a "$JSONL"
done

# --- logits of both engines on a Q4_0 fixture (relative L2 per row)
CONF_REF=${CONF_REF:-tests/data/models/llama_q4_0_gguf}
if [ "$CONF_REF" != none ] && [ -f "$CONF_REF/model.gguf" ] && [ -f "$CONF_REF/ref.json" ]; then
  ids() { python3 -c "import json,sys; print(','.join(map(str, json.load(open(sys.argv[1]))[sys.argv[2]])))" "$CONF_REF/ref.json" "$1"; }
  P=$(ids prompt_ids) D=$(ids greedy_ids)
  say "logits on $CONF_REF"
  "$BIN" logits -m "$CONF_REF/model.gguf" --prompt-ids "$P" --decode-ids "$D" -o /tmp/conf_wgllm.f32
  for kv in f32 f16; do
    "$LLC/llcbench" logits "$CONF_REF/model.gguf" --backend vulkan --ngl 99 --kv "$kv" --prompt-ids "$P" \
      --decode-ids "$D" -o "/tmp/conf_llcpp_$kv.f32" $LLC_ARGS 2>/dev/null
  done
  python3 - "$CONF_REF" <<'EOF' | tee "$OUT/conformance.txt"
import array, json, math, os, sys
ref = sys.argv[1]
R, V = json.load(open(f"{ref}/ref.json"))["logits_shape"]
def load(p):
    a = array.array("f")
    if os.path.exists(p): a.frombytes(open(p, "rb").read())
    return a if len(a) == R * V else None
def cmp(x, y):  # worst row relative L2, confident top-1 misses (reference margin >= 0.05)
    worst, miss = 0.0, 0
    for r in range(R):
        a, b = x[r * V:(r + 1) * V], y[r * V:(r + 1) * V]
        worst = max(worst, math.sqrt(sum((p - q) ** 2 for p, q in zip(a, b))) / (math.sqrt(sum(p * p for p in a)) or 1))
        s = sorted(range(V), key=lambda i: -a[i])
        miss += a[s[0]] - a[s[1]] >= 0.05 and max(range(V), key=lambda i: b[i]) != s[0]
    return f"worst row rel-L2 {worst:.2e}, confident top-1 misses {miss}"
files = {"HF reference": f"{ref}/logits.f32", "wgllm": "/tmp/conf_wgllm.f32",
         "llama.cpp Vulkan f32 KV": "/tmp/conf_llcpp_f32.f32", "llama.cpp Vulkan f16 KV": "/tmp/conf_llcpp_f16.f32"}
L = {k: load(v) for k, v in files.items()}
for a, b in [("HF reference", "wgllm"), ("HF reference", "llama.cpp Vulkan f32 KV"),
             ("HF reference", "llama.cpp Vulkan f16 KV"), ("wgllm", "llama.cpp Vulkan f32 KV")]:
    print(f"{b} vs {a}: " + (cmp(L[a], L[b]) if L[a] and L[b] else "missing or wrong size"))
EOF
else
  say "no logits check (CONF_REF=$CONF_REF has no model.gguf + ref.json)"
fi

# --- llama.cpp's perplexity on the GPU (llama-perplexity's computation, README.md)
if [ -n "${PPL_TEXT:-}" ]; then
  PPL_MODEL=${PPL_MODEL:-models/default.gguf} PPL_CTX=${PPL_CTX:-512}
  for kv in f16 f32; do
    say "llcbench perplexity $PPL_MODEL -f $PPL_TEXT -c $PPL_CTX --backend vulkan --ngl 99 --kv $kv"
    timeout 600 "$LLC/llcbench" perplexity "$PPL_MODEL" -f "$PPL_TEXT" -c "$PPL_CTX" --backend vulkan --ngl 99 \
      --kv "$kv" $LLC_ARGS | tee -a "$OUT/perplexity.jsonl"
  done
fi

# --- the table
python3 - "$JSONL" <<'EOF' | tee "$OUT/summary.txt"
import json, sys
rows = [json.loads(l) for l in open(sys.argv[1]) if l.startswith("{")]
print(f"\n{'model':<14} {'engine':<10} {'KV':<4} {'FA':<15} {'sampling':<30} {'prefill tok/s':>13} {'decode tok/s':>12} {'ms/token':>9}")
for model in dict.fromkeys(r["model"] for r in rows):
    group = [r for r in rows if r["model"] == model]
    for r in group:
        eng = r.get("engine", "?")
        fa = r.get("flash_attn", "-")
        samp = r.get("sampling", "")[:30]
        print(f"{model.rsplit('/', 1)[-1]:<14} {eng:<10} {r['kv_dtype']:<4} {fa:<15} {samp:<30} {r['prefill_tok_s']:>13.1f} "
              f"{r['decode_tok_s']:>12.2f} {r['decode_ms_per_token']:>9.3f}")
    wg = {r["kv_dtype"]: r for r in group if r.get("engine") == "wgllm"}
    lc = [r for r in group if r.get("engine") == "llama.cpp"]
    for kv, w in wg.items():
        for l in lc:
            if l["kv_dtype"] == kv and l["sampling"].startswith("greedy (host"):
                print(f"  {kv} KV: wgllm / llama.cpp (host greedy): decode {w['decode_tok_s'] / l['decode_tok_s']:.2f}x, "
                      f"prefill {w['prefill_tok_s'] / l['prefill_tok_s']:.2f}x")
dev = next((r["device_desc"] for r in rows if "device_desc" in r), "?")
ad = next((r["adapter"] for r in rows if "adapter" in r), "?")
print(f"\nllama.cpp device: {dev}; wgllm adapter: {ad}")
EOF
say "done: $OUT"
