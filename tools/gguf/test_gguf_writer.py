#!/usr/bin/env python3
"""Checks gguf_writer.py without torch: writes a tiny random Llama (byte-level BPE vocab, tied embeddings,
GQA) the way tools/train_default/train.py does, reads it back with an independent parse, and, when the
engine's CLI is built, loads it with `wgllm info -m`. With numpy available it also checks that the numpy path
(the one train.py takes) gives byte-identical Q8_0 blocks and files, checks Q4_0 (the quantizer
tools/refs/make_refs.py uses) against hand-computed blocks, and writes and reads back a file of every tensor
type with numpy-array data, as make_refs.py passes it.

    python3 tools/gguf/test_gguf_writer.py [--out /tmp/wgllm_gguf_writer_test.gguf] [--wgllm PATH]

PATH defaults to build-train/wgllm (build: cmake -S . -B build-train && cmake --build build-train
--target wgllm_cli); without it the engine check is skipped (reported). Ends with "N passed, N failed".
"""
import argparse
import math
import os
import random
import struct
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import gguf_writer as gw  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(HERE))
ap = argparse.ArgumentParser()
ap.add_argument("--out", default="/tmp/wgllm_gguf_writer_test.gguf")
ap.add_argument("--wgllm", default=os.path.join(ROOT, "build-train", "wgllm"))
A = ap.parse_args()

passed, failed = 0, 0


def check(name, ok, detail=""):
    global passed, failed
    if ok:
        passed += 1
        print(f"ok    {name}")
    else:
        failed += 1
        print(f"FAIL  {name} {detail}")


def bytes_to_unicode():
    bs = list(range(ord("!"), ord("~") + 1)) + list(range(0xA1, 0xAD)) + list(range(0xAE, 0x100))
    cs, n = bs[:], 0
    for b in range(256):
        if b not in bs:
            bs.append(b)
            cs.append(256 + n)
            n += 1
    return {b: chr(c) for b, c in zip(bs, cs)}


# ---------------------------------------------------------------- a tiny model and vocab
HP = dict(vocab_size=300, hidden_size=64, intermediate_size=96, num_hidden_layers=2, num_attention_heads=4,
          num_key_value_heads=2, head_dim=16, max_position_embeddings=128, rope_theta=10000.0, rms_norm_eps=1e-5)
V, H, I, L = HP["vocab_size"], HP["hidden_size"], HP["intermediate_size"], HP["num_hidden_layers"]
NH, NKV, HD = HP["num_attention_heads"], HP["num_key_value_heads"], HP["head_dim"]
rng = random.Random(5)

b2u = bytes_to_unicode()
tokens = [b2u[b] for b in range(256)]
merges = []
for w in ["Ġthe", "Ġand", "Ġof", "Ġunto", "Ġthat", "Ġshall", "Ġhe", "Ġin", "ĠLORD", "Ġhis", "Ġa", "Ġthey", "Ġbe",
          "Ġis", "Ġhim", "Ġnot", "Ġthem", "Ġwith", "Ġall", "Ġfor", "Ġthou", "Ġthy", "Ġwas", "Ġwhich", "Ġmy"]:
    cur = w[0]
    for ch in w[1:]:
        if cur + ch not in tokens and len(tokens) < V - 2:
            merges.append(f"{cur} {ch}")
            tokens.append(cur + ch)
        cur += ch
while len(tokens) < V - 2:   # filler merges of two existing tokens
    a, b = rng.choice(tokens[256:]), rng.choice(tokens[:256])
    if a + b not in tokens:
        merges.append(f"{a} {b}")
        tokens.append(a + b)
tokens += ["<|begin_of_text|>", "<|end_of_text|>"]
tok_json = {"model": {"type": "BPE", "vocab": {t: i for i, t in enumerate(tokens[:-2])},
                      "merges": [m.split(" ") for m in merges[: len(merges) // 2]] + merges[len(merges) // 2:]},
            "added_tokens": [{"id": V - 2, "content": "<|begin_of_text|>", "special": True},
                             {"id": V - 1, "content": "<|end_of_text|>", "special": True}]}
TOK = gw.tokenizer_arrays(tok_json, "<|begin_of_text|>", "<|end_of_text|>")
check("tokenizer_arrays: tokens by id", TOK["tokens"] == tokens)
check("tokenizer_arrays: merges as 'a b' (list and string forms)", TOK["merges"] == merges)
check("tokenizer_arrays: types 1 normal / 3 control", TOK["token_types"] == [1] * (V - 2) + [3, 3])
check("tokenizer_arrays: bos/eos", (TOK["bos"], TOK["eos"]) == (V - 2, V - 1))


def rand_mat(r, c, std=0.05):
    return gw.PyMat(r, c, [rng.gauss(0, std) for _ in range(r * c)])


def rand_vec(n):
    return gw.PyMat(n, None, [1.0 + 0.2 * rng.gauss(0, 1) for _ in range(n)])


sd = {"model.embed_tokens.weight": rand_mat(V, H, 0.1), "model.norm.weight": rand_vec(H)}
shapes = {"self_attn.q_proj": (NH * HD, H), "self_attn.k_proj": (NKV * HD, H), "self_attn.v_proj": (NKV * HD, H),
          "self_attn.o_proj": (H, NH * HD), "mlp.gate_proj": (I, H), "mlp.up_proj": (I, H), "mlp.down_proj": (H, I)}
for i in range(L):
    sd[f"model.layers.{i}.input_layernorm.weight"] = rand_vec(H)
    sd[f"model.layers.{i}.post_attention_layernorm.weight"] = rand_vec(H)
    for k, (r, c) in shapes.items():
        # larger q/k so attention is far from uniform and a wrong RoPE layout shows in the logits
        sd[f"model.layers.{i}.{k}.weight"] = rand_mat(r, c, 0.3 if k in ("self_attn.q_proj", "self_attn.k_proj") else 0.05)
# an all-zero block and exact halves, to exercise d = 0 and roundf's halves-away-from-zero
emb = sd["model.embed_tokens.weight"].data
emb[0:32] = [0.0] * 32
HALVES = [127.0] + [(k - 15) + 0.5 for k in range(31)]   # d = 1 exactly: q = roundf(x)
emb[32:64] = HALVES

# ---------------------------------------------------------------- Q8_0 by hand
blob, deq = gw.q8_0(gw.PyMat(1, 32, [k / 31.0 for k in range(32)]))
d = struct.unpack("<e", blob[0][:2])[0]
qs = list(struct.unpack("<32b", blob[0][2:]))
check("q8_0: scale = f16(max/127)", d == struct.unpack("<e", struct.pack("<e", 1.0 / 127))[0], d)
check("q8_0: q = roundf(x*127)", qs == [int(math.floor(k / 31.0 * 127 + 0.5)) for k in range(32)], qs)
blob, _ = gw.q8_0(gw.PyMat(1, 32, HALVES))
qs = list(struct.unpack("<32b", blob[0][2:]))
check("q8_0: halves round away from zero (C roundf)", qs == [127] + [k - 15 + (1 if k >= 15 else 0) for k in range(31)], qs)
blob, _ = gw.q8_0(gw.PyMat(1, 32, HALVES), ties_to_even=True)
qs = list(struct.unpack("<32b", blob[0][2:]))
check("q8_0 ties_to_even (make_refs.py's fixtures): halves round to even", qs == [127] + [round(k - 14.5) for k in range(31)],
      qs)

# ---------------------------------------------------------------- permutation semantics
perm = gw.rope_permutation(NH * HD, NH)
want = []
for h in range(NH):
    for i in range(HD // 2):
        want += [h * HD + i, h * HD + i + HD // 2]
check("rope_permutation: half-split pairs (i, i+hd/2) become adjacent rows", perm == want)

# ---------------------------------------------------------------- write and read back
size, deq = gw.export_llama_gguf(A.out, HP, sd, TOK, "wgllm-test-tiny")
check("export: file written", os.path.getsize(A.out) == size and not any(
    f.startswith(os.path.basename(A.out) + ".tmp") for f in os.listdir(os.path.dirname(A.out) or ".")))
kv, ts = gw.read_gguf(A.out)
want_kv = {"general.architecture": "llama", "general.alignment": 32, "general.file_type": 7,
           "llama.context_length": 128, "llama.embedding_length": H, "llama.block_count": L,
           "llama.feed_forward_length": I, "llama.rope.dimension_count": HD, "llama.attention.head_count": NH,
           "llama.attention.head_count_kv": NKV, "llama.attention.key_length": HD, "llama.attention.value_length": HD,
           "llama.vocab_size": V, "tokenizer.ggml.model": "gpt2", "tokenizer.ggml.pre": "llama-bpe",
           "tokenizer.ggml.bos_token_id": V - 2, "tokenizer.ggml.eos_token_id": V - 1,
           "tokenizer.ggml.add_bos_token": True, "tokenizer.ggml.tokens": tokens, "tokenizer.ggml.merges": merges,
           "tokenizer.ggml.token_type": [1] * (V - 2) + [3, 3]}
bad = [k for k, v in want_kv.items() if kv.get(k) != v]
check("read back: metadata", not bad, bad)
check("read back: eps / freq_base as f32", abs(kv["llama.attention.layer_norm_rms_epsilon"] - 1e-5) < 1e-12 and
      kv["llama.rope.freq_base"] == 10000.0)
names = ["token_embd.weight", "output_norm.weight"] + [f"blk.{i}.{n}.weight" for i in range(L) for n in
                                                       ["attn_norm", "ffn_norm", "attn_q", "attn_k", "attn_v",
                                                        "attn_output", "ffn_gate", "ffn_up", "ffn_down"]]
check("read back: tensor names (tied: no output.weight)", sorted(ts) == sorted(names), sorted(ts))
raw = open(A.out, "rb").read()
check("read back: data section aligned", all(raw.find(t[2]) % 32 == 0 for t in ts.values() if len(t[2]) > 64))
ok = True
for i in range(L):
    for n, hf in [("attn_norm", "input_layernorm"), ("ffn_norm", "post_attention_layernorm")]:
        gt, ne, data = ts[f"blk.{i}.{n}.weight"]
        vals = list(struct.unpack("<%df" % H, data))
        ok &= gt == 0 and ne == [H] and vals == [gw._f32(x) for x in sd[f"model.layers.{i}.{hf}.weight"].data]
check("read back: norms F32 [H], exact", ok)


def unperm(flat, rows, cols, p):
    out = [None] * (rows * cols)
    for new, old in enumerate(p):
        out[old * cols:(old + 1) * cols] = flat[new * cols:(new + 1) * cols]
    return out


ok, worst = True, 0.0
for gg, hf in [("token_embd", "model.embed_tokens")] + [(f"blk.{i}.{g}", f"model.layers.{i}.{h}")
                                                        for i in range(L) for h, g in gw.HF_LINEARS]:
    gt, ne, data = ts[gg + ".weight"]
    w = sd[hf + ".weight"]
    ok &= gt == 8 and ne == [w.cols, w.rows]
    vals = gw.dequantize_q8_0(data, ne)
    if gg.endswith("attn_q"):
        vals = unperm(vals, w.rows, w.cols, gw.rope_permutation(w.rows, NH))
    elif gg.endswith("attn_k"):
        vals = unperm(vals, w.rows, w.cols, gw.rope_permutation(w.rows, NKV))
    ok &= vals == deq[hf + ".weight"].data
    for b in range(0, len(vals), 32):   # each value within half a quantization step of the original
        orig = w.data[b:b + 32]
        step = max(abs(x) for x in orig) / 127
        worst = max(worst, max(abs(x - y) for x, y in zip(vals[b:b + 32], orig)) / (step or 1))
check("read back: Q8_0 [in, out], q/k un-permute to the dequantized originals", ok)
check("read back: Q8_0 error <= 0.5 step + f16 scale rounding", worst <= 0.5 + 127 / 2048 + 1e-6, worst)

# ---------------------------------------------------------------- numpy path (the one train.py takes)
try:
    import numpy as np
except ImportError:
    np = None
if np is None:
    print("skip  numpy path: numpy is not installed for this python")
else:
    w = np.array(sd["model.layers.0.self_attn.q_proj.weight"].data, dtype=np.float32).reshape(NH * HD, H)
    check("numpy: permute_rows_np == rope_permutation", np.array_equal(gw.permute_rows_np(w, NH), w[perm]))
    r = np.random.default_rng(3)
    m = (r.standard_normal((48, 96)) * np.exp(r.uniform(-6, 2, (48, 1)))).astype(np.float32)
    m[0, :32] = 0
    m[1, :32] = np.arange(32, dtype=np.float32) - 15.5
    m[2, :32] = (np.arange(32, dtype=np.float32) - 16) / 2
    b_np, d_np = gw.q8_0(m)
    b_py, d_py = gw.q8_0(gw.PyMat(48, 96, m.ravel().tolist()))
    check("numpy: Q8_0 bytes == pure Python", b_np.tobytes() == b"".join(b_py))
    check("numpy: Q8_0 dequantized == pure Python", np.array_equal(d_np.ravel(), np.array(d_py.data, np.float32)))
    m2 = m.copy()
    m2[3, :32] = HALVES
    b_np, _ = gw.q8_0(m2, ties_to_even=True)
    b_py, _ = gw.q8_0(gw.PyMat(48, 96, m2.ravel().tolist()), ties_to_even=True)
    check("numpy: Q8_0 ties_to_even bytes == pure Python, and differ from roundf's at the halves",
          b_np.tobytes() == b"".join(b_py) and b_np.tobytes() != gw.q8_0(m2)[0].tobytes())
    sd_np = {k: np.array(v.data, dtype=np.float32).reshape(v.shape) for k, v in sd.items()}
    out_np = A.out + ".np.gguf"
    gw.export_llama_gguf(out_np, HP, sd_np, TOK, "wgllm-test-tiny")
    check("numpy: exported file byte-identical to the pure-Python one", open(out_np, "rb").read() == raw)
    os.remove(out_np)

    # Q4_0 by hand (ggml quantize_row_q4_0_ref): x = (k - 16) / 4, so m = -4, d = 0.5, q = min(15, int(2x + 8.5))
    blk = (np.arange(32, dtype=np.float32) - 16) / 4
    b4, d4 = gw.q4_0(np.concatenate([blk, np.zeros(32, np.float32)])[None])
    q = [min(15, int(k / 2 + 0.5)) for k in range(32)]
    check("q4_0: scale = f16(m / -8), then nibbles j | j+16 << 4",
          b4.tobytes()[:18] == struct.pack("<e", 0.5) + bytes(q[j] | q[j + 16] << 4 for j in range(16)), b4[0, :18])
    check("q4_0: a zero block is d = -0 (0 / -8, as in ggml), every code 8", b4.tobytes()[18:] == b"\0\x80" + b"\x88" * 16,
          b4.tobytes()[18:])
    check("q4_0: dequantized = (q - 8) * d", d4[0].tolist() == [(k - 8) * 0.5 for k in q] + [0.0] * 32)
    m4 = (r.standard_normal((8, 64)) * 0.1).astype(np.float32)
    b4, d4 = gw.q4_0(m4)
    step = np.abs(m4.reshape(8, 2, 32)).max(-1, keepdims=True) / 8
    err4 = (np.abs(d4 - m4).reshape(8, 2, 32) / step).max()
    check("q4_0: blob [rows, row bytes], error <= 1 step (clamped max side)", b4.shape == (8, 36) and err4 <= 1 + 1e-3,
          (b4.shape, err4))
    # a file of every tensor type, data as numpy arrays (the quantizers' blobs) and as bytes
    out_t = A.out + ".types.gguf"
    b8, _ = gw.q8_0(m4)
    bf16 = (m4[0].view(np.uint32) >> 16).astype(np.uint16)
    tens = [("q4", gw.GGML_Q4_0, [64, 8], b4), ("q8", gw.GGML_Q8_0, [64, 8], b8),
            ("f16", gw.GGML_F16, [64], m4[0].astype(np.float16)), ("bf16", gw.GGML_BF16, [64], bf16),
            ("f32", gw.GGML_F32, [64, 8], m4)]
    gw.write_gguf(out_t, [("general.alignment", "u32", 32), ("k.f64", "f64", -2.5)], tens)
    kv_t, ts_t = gw.read_gguf(out_t)
    check("write_gguf: numpy-array data read back as its bytes", kv_t == {"general.alignment": 32, "k.f64": -2.5} and
          all(ts_t[n] == (gt, ne, d.tobytes()) for n, gt, ne, d in tens))
    raw_t = open(out_t, "rb").read()
    gw.write_gguf(out_t, [("general.alignment", "u32", 32), ("k.f64", "f64", -2.5)],
                  [(n, gt, ne, d.tobytes()) for n, gt, ne, d in tens])
    check("write_gguf: the same file from bytes", open(out_t, "rb").read() == raw_t)
    os.remove(out_t)

# ---------------------------------------------------------------- the engine
if not os.path.exists(A.wgllm):
    print(f"skip  wgllm info: {A.wgllm} not built")
else:
    p = subprocess.run([A.wgllm, "info", "-m", A.out], capture_output=True, text=True)
    print(p.stdout + p.stderr)
    o = p.stdout
    check("wgllm info: loads", p.returncode == 0, p.returncode)
    check("wgllm info: architecture llama", "architecture: llama" in o)
    check("wgllm info: hyperparameters",
          f"vocab {V}, hidden {H}, layers {L}, heads {NH}, kv heads {NKV}, head_dim {HD}, ffn {I}" in o)
    check("wgllm info: rope / eps / context", "theta 10000" in o and "adjacent pairs, 16 dims" in o and
          "train context 128" in o and "rms eps 1e-05" in o)
    check("wgllm info: tied, bos/eos", f"tied embeddings yes" in o and f"bos {V - 2}, eos {V - 1}" in o)
    n_q8, n_f32 = 1 + 7 * L, 1 + 2 * L
    check("wgllm info: tensor types", f"{len(names)}," in o and any(
        ln.split()[:2] == ["Q8_0", str(n_q8)] for ln in o.splitlines()) and any(
        ln.split()[:2] == ["F32", str(n_f32)] for ln in o.splitlines()))

    # The engine's logits against a numpy forward in Hugging Face's conventions (half-split RoPE on the
    # unpermuted, dequantized weights): catches a permutation or layout that reads back consistently but
    # means something else to llama.cpp-style loaders.
    if np is None:
        print("skip  wgllm logits vs numpy reference: numpy is not installed for this python")
    else:
        W = {k: np.array(v.data, np.float64).reshape(v.shape) for k, v in sd.items()}
        W.update({k: np.array(v.data, np.float64).reshape(v.shape) for k, v in deq.items()})

        def rms(x, w):
            return x / np.sqrt((x * x).mean(-1, keepdims=True) + HP["rms_norm_eps"]) * w

        def rope(x, pos):   # x [T, heads, HD], HF rotate_half
            inv = 1.0 / HP["rope_theta"] ** (np.arange(0, HD, 2) / HD)
            ang = pos[:, None] * inv[None]
            cos, sin = np.cos(np.concatenate([ang, ang], -1))[:, None], np.sin(np.concatenate([ang, ang], -1))[:, None]
            rot = np.concatenate([-x[..., HD // 2:], x[..., :HD // 2]], -1)
            return x * cos + rot * sin

        def forward(ids):
            T = len(ids)
            x = W["model.embed_tokens.weight"][ids]
            pos = np.arange(T, dtype=np.float64)
            mask = np.triu(np.full((T, T), -np.inf), 1)
            for i in range(L):
                p = f"model.layers.{i}."
                h = rms(x, W[p + "input_layernorm.weight"])
                q = rope((h @ W[p + "self_attn.q_proj.weight"].T).reshape(T, NH, HD), pos)
                k = rope((h @ W[p + "self_attn.k_proj.weight"].T).reshape(T, NKV, HD), pos)
                v = (h @ W[p + "self_attn.v_proj.weight"].T).reshape(T, NKV, HD)
                k, v = np.repeat(k, NH // NKV, 1), np.repeat(v, NH // NKV, 1)
                s = np.einsum("thd,shd->hts", q, k) / math.sqrt(HD) + mask
                s = np.exp(s - s.max(-1, keepdims=True))
                s /= s.sum(-1, keepdims=True)
                o = np.einsum("hts,shd->thd", s, v).reshape(T, NH * HD)
                x = x + o @ W[p + "self_attn.o_proj.weight"].T
                h = rms(x, W[p + "post_attention_layernorm.weight"])
                g = h @ W[p + "mlp.gate_proj.weight"].T
                x = x + ((g / (1 + np.exp(-g))) * (h @ W[p + "mlp.up_proj.weight"].T)) @ W[p + "mlp.down_proj.weight"].T
            return rms(x, W["model.norm.weight"]) @ W["model.embed_tokens.weight"].T

        prompt, dec = [V - 2, 5, 260, 17, 33, 290, 101, 7, 64, 0, 3, 270], [9, 280, 44]
        out_f32 = A.out + ".logits.f32"
        p = subprocess.run([A.wgllm, "logits", "-m", A.out, "--prompt-ids", ",".join(map(str, prompt)),
                            "--decode-ids", ",".join(map(str, dec)), "-o", out_f32], capture_output=True, text=True)
        if p.returncode != 0:
            print(p.stdout + p.stderr)
            print("skip  wgllm logits vs numpy reference: wgllm logits failed (no WebGPU adapter?)")
        else:
            got = np.fromfile(out_f32, dtype="<f4").reshape(len(prompt) + len(dec), V)
            ref = forward(prompt + dec)
            err = np.abs(got - ref).max() / np.abs(ref).max()
            print(f"      wgllm logits vs numpy: max |diff| / max |logit| = {err:.2e}")
            check("wgllm logits match a numpy Llama forward (relative error < 1e-3)", err < 1e-3, err)
            check("wgllm logits: same argmax per row", (got.argmax(-1) == ref.argmax(-1)).all())
            os.remove(out_f32)

print(f"{passed} passed, {failed} failed")
sys.exit(1 if failed else 0)
