#!/usr/bin/env python3
"""Checks a train.py output directory against the engine, on this machine (no torch, no numpy needed):

  1. `wgllm info -m` loads hf/ and model.gguf with the expected hyperparameters;
  2. `wgllm logits` on hf/ and model.gguf reproduces ref/ and ref_gguf/ (the transformers logits of the
     same weights): max |diff| relative to the logits' range, and the same argmax on every row whose
     reference top-1 margin is larger than the difference;
  3. the engine's tokenizer, loaded from hf/ and from model.gguf, encodes every case of
     tokenizer_check.json to the ids HF tokenizers gave (tok_check.c, built here against libwgllm.so).

    python3 tools/train_default/check_outputs.py OUTDIR [--build build-train]

BUILD is a CMake build of the engine with the wgllm_cli target (cmake -S . -B build-train &&
cmake --build build-train --target wgllm_cli). Ends with "N passed, N failed".
"""
import argparse
import array
import json
import os
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
ap = argparse.ArgumentParser()
ap.add_argument("outdir")
ap.add_argument("--build", default=os.path.join(ROOT, "build-train"))
ap.add_argument("--rel-tol", type=float, default=1e-2, help="max |diff| / max |logit| allowed")
A = ap.parse_args()
passed = failed = 0


def check(name, ok, detail=""):
    global passed, failed
    passed += bool(ok)
    failed += not ok
    print(f"{'ok   ' if ok else 'FAIL '} {name}{'' if ok or not detail else ': ' + str(detail)}")


def run(cmd):
    p = subprocess.run(cmd, capture_output=True, text=True)
    return p.returncode, p.stdout + p.stderr


wgllm = os.path.join(A.build, "wgllm")
if not os.path.exists(wgllm):
    sys.exit(f"{wgllm} not built (cmake --build {A.build} --target wgllm_cli)")
hf, gguf = os.path.join(A.outdir, "hf"), os.path.join(A.outdir, "model.gguf")
cfg = json.load(open(os.path.join(hf, "config.json")))
want = (f"vocab {cfg['vocab_size']}, hidden {cfg['hidden_size']}, layers {cfg['num_hidden_layers']}, "
        f"heads {cfg['num_attention_heads']}, kv heads {cfg['num_key_value_heads']}, head_dim {cfg['head_dim']}, "
        f"ffn {cfg['intermediate_size']}")

# ---------------------------------------------------------------- info
for path in (hf, gguf):
    rc, out = run([wgllm, "info", "-m", path])
    print(out.rstrip())
    check(f"info {os.path.basename(path)}: loads, {want}", rc == 0 and want in out and "architecture: llama" in out, rc)
    check(f"info {os.path.basename(path)}: tied embeddings, bos/eos",
          f"tied embeddings yes" in out and f"bos {cfg['bos_token_id']}, eos {cfg['eos_token_id']}" in out)


# ---------------------------------------------------------------- logits
def read_f32(path):
    a = array.array("f")
    with open(path, "rb") as f:
        a.frombytes(f.read())
    if sys.byteorder != "little":
        a.byteswap()
    return a


tmpd = tempfile.mkdtemp(prefix="wgllm_check_")
for model, refdir in ((hf, "ref"), (gguf, "ref_gguf")):
    ref = json.load(open(os.path.join(A.outdir, refdir, "ref.json")))
    T, N, V = len(ref["prompt_ids"]), len(ref["greedy_ids"]), ref["logits_shape"][1]
    want_l = read_f32(os.path.join(A.outdir, refdir, ref["logits_file"]))
    out_f = os.path.join(tmpd, refdir + ".f32")
    rc, out = run([wgllm, "logits", "-m", model, "--prompt-ids", ",".join(map(str, ref["prompt_ids"])),
                   "--decode-ids", ",".join(map(str, ref["greedy_ids"])), "-o", out_f])
    if rc != 0:
        print(out)
        check(f"logits {refdir}: wgllm logits ran", False, rc)
        continue
    got = read_f32(out_f)
    check(f"logits {refdir}: shape [{T + N}, {V}]", len(got) == len(want_l) == (T + N) * V, (len(got), len(want_l)))
    if len(got) != len(want_l):
        continue
    diff = max(abs(a - b) for a, b in zip(got, want_l))
    scale = max(abs(b) for b in want_l)
    flips = []
    for r in range(T + N):
        g, w = got[r * V:(r + 1) * V], want_l[r * V:(r + 1) * V]
        ig, iw = max(range(V), key=g.__getitem__), max(range(V), key=w.__getitem__)
        top2 = sorted(w, reverse=True)[:2]
        if ig != iw and top2[0] - top2[1] > 2 * diff:
            flips.append((r, iw, ig))
    print(f"      {refdir}: max |diff| {diff:.3e}, max |logit| {scale:.2f}, relative {diff / scale:.2e}, "
          f"min top-1 margin {ref['min_top1_margin']:.3f}")
    check(f"logits {refdir}: max |diff| / max |logit| < {A.rel_tol}", diff / scale < A.rel_tol, diff / scale)
    check(f"logits {refdir}: same argmax on every row with a clear reference margin", not flips, flips)

# ---------------------------------------------------------------- tokenizer
tok_check = os.path.join(tmpd, "tok_check")
src = os.path.join(HERE, "tok_check.c")
dawn = os.path.join(ROOT, "third_party", "dawn", "lib")
rc, out = run(["cc", "-std=c11", "-O1", "-I", os.path.join(ROOT, "include"), "-I", os.path.join(ROOT, "src"),
               "-I", os.path.join(ROOT, "src", "model"), src, "-o", tok_check, "-L", A.build, "-lwgllm", "-lcjson",
               f"-Wl,-rpath,{os.path.abspath(A.build)}", f"-Wl,-rpath,{dawn}", f"-Wl,-rpath-link,{dawn}"])
check("tok_check.c builds against libwgllm.so", rc == 0, out)
if rc == 0:
    cases = os.path.join(A.outdir, "tokenizer_check.json")
    for model in (hf, gguf):
        rc, out = run([tok_check, model, cases])
        lines = out.strip().splitlines()
        fails = [i for i, ln in enumerate(lines) if ln.startswith("FAIL")]
        shown = lines[:fails[3]] + ["      ..."] if len(fails) > 3 else lines[:-1]
        print("\n".join(shown))
        check(f"tokenizer from {os.path.basename(model)}: all tokenizer_check.json cases", rc == 0,
              lines[-1] if lines else rc)
        if rc != 0:   # tell a missing bos apart from other differences
            d = json.load(open(cases))
            bos = cfg["bos_token_id"]
            for c in d["cases"]:
                c["ids"] = c["ids"][1:] if c["ids"][:1] == [bos] else c["ids"]
            nobos = os.path.join(tmpd, "nobos.json")
            json.dump(d, open(nobos, "w"))
            rc2, out2 = run([tok_check, model, nobos])
            print(f"      expecting no bos: {out2.strip().splitlines()[-1] if out2.strip() else rc2}" +
                  ("  -> only the bos is missing (for a GGUF: tokenizer.ggml.add_bos_token, a GGUF bool, was not "
                   "honoured)" if rc2 == 0 else ""))

print(f"{passed} passed, {failed} failed")
sys.exit(1 if failed else 0)
