#!/usr/bin/env python3
"""What each precision costs against transformers, beside llama.cpp on the same files: for every GGUF fixture of
tests/data/models (logits transformers computed on the dequantized weights), the worst row's relative L2 error
of `wgllm logits --precision exact|fast` and of `llcbench logits` (llama.cpp), same prompt and teacher-forced
decode ids. Pure Python (no numpy).

  bench/peers/llamacpp/fixture_error.py [--wgllm build/wgllm] [--llcbench bench/peers/llamacpp/lib/llcbench]
                                        [--backend cpu|vulkan] [--out DIR]
Prints one line a fixture and engine; llama.cpp runs with an f32 KV cache and flash attention off (its most
exact attention), wgllm with its default f32 cache."""
import argparse, json, math, os, struct, subprocess, sys

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..", ".."))
FIXTURES = ["default_gguf", "llama_q4_0_gguf", "llama_q4_0_q6k_gguf", "llama_kquants_gguf", "llama_q4km_gguf",
            "gemma3_gguf"]


def floats(path):
    with open(path, "rb") as f:
        b = f.read()
    return struct.unpack("<%df" % (len(b) // 4), b)


def worst_row(got, ref, V):
    if len(got) != len(ref):
        return float("inf")
    w = 0.0
    for r in range(len(ref) // V):
        g, x = got[r * V:(r + 1) * V], ref[r * V:(r + 1) * V]
        num = sum((a - b) ** 2 for a, b in zip(g, x))
        den = sum(b * b for b in x)
        w = max(w, math.sqrt(num / den))
    return w


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--wgllm", default=os.path.join(ROOT, "build", "wgllm"))
    ap.add_argument("--llcbench", default=os.path.join(ROOT, "bench", "peers", "llamacpp", "lib", "llcbench"))
    ap.add_argument("--backend", default="cpu")
    ap.add_argument("--out", default="/tmp/fixture_error")
    a = ap.parse_args()
    os.makedirs(a.out, exist_ok=True)
    for name in FIXTURES:
        d = os.path.join(ROOT, "tests", "data", "models", name)
        ref = json.load(open(os.path.join(d, "ref.json")))
        model = os.path.join(d, "model.gguf")
        if not os.path.exists(model):
            model = os.path.join(ROOT, "models", "default.gguf")
        p = ",".join(str(i) for i in ref["prompt_ids"])
        g = ",".join(str(i) for i in ref["greedy_ids"])
        V = ref["logits_shape"][1]
        want = floats(os.path.join(d, "logits.f32"))
        runs = [("wgllm exact", [a.wgllm, "logits", "-m", model, "--precision", "exact"]),
                ("wgllm fast", [a.wgllm, "logits", "-m", model, "--precision", "fast"]),
                ("llama.cpp " + a.backend, [a.llcbench, "logits", model, "--backend", a.backend, "--kv", "f32",
                                             "--fa", "off"])]
        for label, cmd in runs:
            out = os.path.join(a.out, "%s_%s.f32" % (name, label.replace(" ", "_").replace(".", "")))
            r = subprocess.run(cmd + ["--prompt-ids", p, "--decode-ids", g, "-o", out], capture_output=True, text=True)
            e = worst_row(floats(out), want, V) if r.returncode == 0 and os.path.exists(out) else float("inf")
            why = "" if r.returncode == 0 else "  (failed: %s)" % (r.stderr.strip().splitlines() or ["?"])[-1][:120]
            print("%-20s %-16s worst row rel L2 %.4g%s" % (name, label, e, why), flush=True)


if __name__ == "__main__":
    sys.exit(main())
