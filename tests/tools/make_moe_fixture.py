#!/usr/bin/env python3
"""A Qwen3-MoE model made at test time from a dense Qwen3 fixture (tests/data/models/qwen3), stdlib only (no numpy or
torch): tests/test_moe.c's models.

Every layer the config makes sparse (transformers' Qwen3MoeDecoderLayer: not in mlp_only_layers and
(l + 1) % decoder_sparse_step == 0) gets a router (mlp.gate.weight [E][H], random) and E experts; the other layers
keep the dense MLP. With --identical every expert is a copy of the layer's dense MLP and norm_topk_prob is true, so
the chosen weights sum to 1 and the MoE FFN computes the dense MLP: the dense fixture's transformers logits hold
(ref.json and logits.f32 are copied). Without it the experts are random (of --width rows), at the dense weights'
scale.

Forms (--form): "each", one tensor an expert as the hub's checkpoints have them
(mlp.experts.{e}.gate_proj.weight [I][H], up_proj [I][H], down_proj [H][I]); "3d", transformers 5's fused experts
(mlp.experts.gate_up_proj [E][2I][H], gate rows then up rows of each expert; mlp.experts.down_proj [E][H][I]);
"gguf", llama.cpp's qwen3moe (blk.N.ffn_gate_inp [E][H], ffn_gate_exps / ffn_up_exps [E][I][H], ffn_down_exps
[E][H][I], F32; model.gguf in OUT).

Breakage for the bad-input tests: --drop NAME leaves a tensor out, --reshape NAME stores it with its first dimension
one less (its data cut to fit); --set KEY=JSON overrides a config.json field (after the others; GGUF: the metadata
written from it); --drop-key KEY leaves a GGUF metadata key out.

usage: make_moe_fixture.py SRC OUT [--form each|3d|gguf] [--experts E] [--k K] [--width I] [--identical]
                           [--norm 0|1] [--sparse-step N] [--mlp-only 0,1] [--seed S] [--drop NAME] [--reshape NAME]
                           [--set KEY=JSON]
"""
import argparse
import array
import json
import os
import random
import shutil
import struct
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "tools", "gguf"))


def read_safetensors(path):
    """name -> (dtype, shape, bytes), in file order"""
    with open(path, "rb") as f:
        raw = f.read()
    (hl,) = struct.unpack("<Q", raw[:8])
    header = json.loads(raw[8:8 + hl])
    data = raw[8 + hl:]
    out = {}
    for name, t in header.items():
        if name == "__metadata__":
            continue
        a, b = t["data_offsets"]
        out[name] = (t["dtype"], list(t["shape"]), data[a:b])
    return out


def write_safetensors(path, tensors):
    header, blobs, off = {}, [], 0
    for name, (dtype, shape, blob) in tensors.items():
        header[name] = {"dtype": dtype, "shape": shape, "data_offsets": [off, off + len(blob)]}
        blobs.append(blob)
        off += len(blob)
    hs = json.dumps(header, separators=(",", ":")).encode()
    hs += b" " * ((8 - len(hs) % 8) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(hs)))
        f.write(hs)
        for b in blobs:
            f.write(b)


def floats(blob):
    a = array.array("f")
    a.frombytes(blob)
    return a


def rms(blob):
    a = floats(blob)
    return (sum(x * x for x in a) / max(len(a), 1)) ** 0.5


def f16(x):
    return struct.unpack("<e", struct.pack("<e", x))[0]


def quantize(blob, cols, kind):
    """ggml's Q8_0 or Q4_0 blocks of an f32 [rows][cols] blob (blocks of 32 along a row), and the f32 blob of the values
    they hold. Any rounding gives a valid file: what the tests compare is the engine's reading of these blocks against
    the same values given as F32."""
    a = floats(blob)
    q, deq = bytearray(), array.array("f")
    if kind == "bf16":  # round to nearest even on the top 16 bits
        w = array.array("I")
        w.frombytes(blob)
        hi = array.array("H", (((x + 0x7FFF + ((x >> 16) & 1)) >> 16) & 0xFFFF for x in w))
        deq = array.array("I", (h << 16 for h in hi))
        return hi.tobytes(), deq.tobytes()
    for b0 in range(0, len(a), 32):
        blk = a[b0:b0 + 32]
        if kind == "q8_0":
            d = f16(max(abs(x) for x in blk) / 127.0)
            qs = [max(-128, min(127, round(x / d))) if d else 0 for x in blk]
            q += struct.pack("<e", d) + struct.pack("<32b", *qs)
            deq.extend(v * d for v in qs)
        else:  # q4_0: d = (the signed largest) / -8, q in 0..15 holding value (q - 8) * d
            m = max(blk, key=abs)
            d = f16(m / -8.0)
            qs = [max(0, min(15, int(x / d + 8.5))) if d else 8 for x in blk]
            q += struct.pack("<e", d) + bytes(qs[j] | (qs[j + 16] << 4) for j in range(16))
            deq.extend((v - 8) * d for v in qs)
    return bytes(q), deq.tobytes()


def randn(rng, n, scale):
    return array.array("f", (rng.gauss(0.0, scale) for _ in range(n))).tobytes()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("src")
    ap.add_argument("out")
    ap.add_argument("--form", default="each", choices=["each", "3d", "gguf"])
    ap.add_argument("--experts", type=int, default=4)
    ap.add_argument("--k", type=int, default=2)
    ap.add_argument("--width", type=int, default=0, help="an expert's rows (random experts; default the dense width)")
    ap.add_argument("--identical", action="store_true")
    ap.add_argument("--norm", type=int, default=None)
    ap.add_argument("--sparse-step", type=int, default=1)
    ap.add_argument("--mlp-only", default="")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--drop", action="append", default=[])
    ap.add_argument("--reshape", action="append", default=[])
    ap.add_argument("--set", action="append", default=[])
    ap.add_argument("--drop-key", action="append", default=[], help="a GGUF metadata key left out")
    ap.add_argument("--quant", default="", choices=["", "q8_0", "q4_0", "bf16"],
                    help="the experts' values rounded to ggml's Q8_0 / Q4_0 or to bf16: stored so in GGUF, as F32 "
                         "otherwise (bf16 with --bf16-hf: as BF16 tensors in the Hugging Face forms too)")
    ap.add_argument("--bf16-hf", action="store_true")
    ap.add_argument("--quant-up", default="", choices=["", "q8_0", "q4_0", "bf16"],
                    help="the up experts' rounding instead of --quant's (gate and up of different types)")
    a = ap.parse_args()
    rng = random.Random(a.seed)
    with open(os.path.join(a.src, "config.json")) as f:
        cfg = json.load(f)
    src = read_safetensors(os.path.join(a.src, "model.safetensors"))
    L, H, F = cfg["num_hidden_layers"], cfg["hidden_size"], cfg["intermediate_size"]
    E, k = a.experts, a.k
    I = F if a.identical else (a.width or F)
    norm = bool(a.norm) if a.norm is not None else a.identical
    mlp_only = [int(x) for x in a.mlp_only.split(",") if x != ""]
    sparse = [l not in mlp_only and (l + 1) % a.sparse_step == 0 for l in range(L)]
    cfg.update({"model_type": "qwen3_moe", "architectures": ["Qwen3MoeForCausalLM"], "num_experts": E,
                "num_experts_per_tok": k, "moe_intermediate_size": I, "norm_topk_prob": norm,
                "decoder_sparse_step": a.sparse_step, "mlp_only_layers": mlp_only, "output_router_logits": False,
                "router_aux_loss_coef": 0.001})
    for kv in a.set:
        key, val = kv.split("=", 1)
        cfg[key] = json.loads(val)
    # (name, [shape], f32 bytes) in HF naming; the experts in the form asked for
    out = {}
    qblocks = {}  # (layer, expert) -> [gate, up, down] blocks of --quant
    for name, (dtype, shape, blob) in src.items():
        assert dtype == "F32", name
        parts = name.split(".")
        if len(parts) > 3 and parts[1] == "layers" and parts[3] == "mlp" and sparse[int(parts[2])]:
            continue  # a sparse layer's dense MLP is replaced below
        out[name] = (shape, blob)
    for l in range(L):
        if not sparse[l]:
            continue
        p = "model.layers.%d.mlp." % l
        gate, up, down = (src[p + n + "_proj.weight"][2] for n in ("gate", "up", "down"))
        scale = rms(gate)
        # logits of about unit spread on the normed hidden state: the top k's weights far from 0 and 1 alike
        out[p + "gate.weight"] = ([E, H], randn(rng, E * H, H ** -0.5))
        ex = []
        for e in range(E):
            if a.identical:
                ex.append((gate, up, down))
            else:
                ex.append((randn(rng, I * H, scale), randn(rng, I * H, scale), randn(rng, H * I, scale)))
        if a.quant:  # each expert's blocks (GGUF) and the values they hold (F32, every form)
            cache = {}
            for e, t in enumerate(ex):
                kinds = [a.quant, a.quant_up or a.quant, a.quant]
                qd = [cache.setdefault((id(b), kinds[i]), quantize(b, H if i < 2 else I, kinds[i]))
                      for i, b in enumerate(t)]
                qblocks[(l, e)] = [x[0] for x in qd]
                ex[e] = tuple(x[1] for x in qd)
        bf = a.quant == "bf16" and a.bf16_hf
        hx = [qblocks[(l, e)] for e in range(E)] if bf else ex  # the tensors' bytes: bf16, or f32
        k = ("bf16",) if bf else ()
        if a.form == "3d":
            out[p + "experts.gate_up_proj"] = ([E, 2 * I, H], b"".join(g + u for g, u, _ in hx)) + k
            out[p + "experts.down_proj"] = ([E, H, I], b"".join(d for _, _, d in hx)) + k
        elif a.form == "each":
            for e, (g, u, d) in enumerate(hx):
                out[p + "experts.%d.gate_proj.weight" % e] = ([I, H], g) + k
                out[p + "experts.%d.up_proj.weight" % e] = ([I, H], u) + k
                out[p + "experts.%d.down_proj.weight" % e] = ([H, I], d) + k
        else:  # stacked as llama.cpp's qwen3moe; renamed below
            out[p + "experts.gate_exps"] = ([E, I, H], b"".join(g for g, _, _ in ex))
            out[p + "experts.up_exps"] = ([E, I, H], b"".join(u for _, u, _ in ex))
            out[p + "experts.down_exps"] = ([E, H, I], b"".join(d for _, _, d in ex))
    os.makedirs(a.out, exist_ok=True)
    for f in ("ref.json", "logits.f32"):
        if a.identical and os.path.exists(os.path.join(a.src, f)):
            shutil.copy(os.path.join(a.src, f), os.path.join(a.out, f))
    if a.form == "gguf":
        out = gguf_names(out)
        for l in range(L):  # the stacked experts in the blocks of --quant
            for i, n in enumerate(("ffn_gate_exps", "ffn_up_exps", "ffn_down_exps")):
                if (l, 0) in qblocks:
                    shape, _ = out["blk.%d.%s.weight" % (l, n)]
                    kind = a.quant_up if i == 1 and a.quant_up else a.quant
                    out["blk.%d.%s.weight" % (l, n)] = (shape, b"".join(qblocks[(l, e)][i] for e in range(E)), kind)
    for name in a.drop:
        del out[name]
    for name in a.reshape:
        shape, blob = out[name][:2]
        shape = [shape[0] - 1] + shape[1:]
        n = 2 if len(out[name]) > 2 and out[name][2] == "bf16" else 4
        for d in shape:
            n *= d
        out[name] = (shape, blob[:n]) + tuple(out[name][2:])
    if a.form == "gguf":
        write_gguf(os.path.join(a.out, "model.gguf"), cfg, out, sparse, a.drop_key)
        return
    with open(os.path.join(a.out, "config.json"), "w") as f:
        json.dump(cfg, f, indent=2)
    write_safetensors(os.path.join(a.out, "model.safetensors"),
                      {n: ("BF16" if v[2:] == ("bf16",) else "F32", v[0], v[1]) for n, v in out.items()})


GGUF_NAMES = {"input_layernorm.weight": "attn_norm.weight", "post_attention_layernorm.weight": "ffn_norm.weight",
              "self_attn.q_proj.weight": "attn_q.weight", "self_attn.k_proj.weight": "attn_k.weight",
              "self_attn.v_proj.weight": "attn_v.weight", "self_attn.o_proj.weight": "attn_output.weight",
              "self_attn.q_norm.weight": "attn_q_norm.weight", "self_attn.k_norm.weight": "attn_k_norm.weight",
              "mlp.gate_proj.weight": "ffn_gate.weight", "mlp.up_proj.weight": "ffn_up.weight",
              "mlp.down_proj.weight": "ffn_down.weight", "mlp.gate.weight": "ffn_gate_inp.weight",
              "mlp.experts.gate_exps": "ffn_gate_exps.weight", "mlp.experts.up_exps": "ffn_up_exps.weight",
              "mlp.experts.down_exps": "ffn_down_exps.weight"}


def gguf_names(out):
    g = {}
    for name, v in out.items():
        if name == "model.embed_tokens.weight":
            g["token_embd.weight"] = v
        elif name == "model.norm.weight":
            g["output_norm.weight"] = v
        elif name == "lm_head.weight":
            g["output.weight"] = v
        else:
            parts = name.split(".")
            g["blk.%s.%s" % (parts[2], GGUF_NAMES[".".join(parts[3:])])] = v
    return g


def write_gguf(path, cfg, tensors, sparse, drop_keys):
    import gguf_writer as gw
    assert all(sparse), "llama.cpp's qwen3moe makes every layer sparse"
    a = "qwen3moe"
    rope = cfg.get("rope_parameters") or {}
    kv = [("general.architecture", "str", a), ("general.name", "str", "qwen3_moe test"),
          (a + ".block_count", "u32", cfg["num_hidden_layers"]),
          (a + ".context_length", "u32", cfg["max_position_embeddings"]),
          (a + ".embedding_length", "u32", cfg["hidden_size"]),
          (a + ".feed_forward_length", "u32", cfg["intermediate_size"]),
          (a + ".attention.head_count", "u32", cfg["num_attention_heads"]),
          (a + ".attention.head_count_kv", "u32", cfg["num_key_value_heads"]),
          (a + ".attention.key_length", "u32", cfg["head_dim"]),
          (a + ".attention.value_length", "u32", cfg["head_dim"]),
          (a + ".rope.freq_base", "f32", float(rope.get("rope_theta", cfg.get("rope_theta", 10000.0)))),
          (a + ".attention.layer_norm_rms_epsilon", "f32", float(cfg["rms_norm_eps"])),
          (a + ".expert_count", "u32", cfg["num_experts"]),
          (a + ".expert_used_count", "u32", cfg["num_experts_per_tok"]),
          (a + ".expert_feed_forward_length", "u32", cfg["moe_intermediate_size"])]
    kv = [x for x in kv if x[0] not in drop_keys]
    types = {"": gw.GGML_F32, "q8_0": gw.GGML_Q8_0, "q4_0": gw.GGML_Q4_0, "bf16": gw.GGML_BF16}
    ts = [(name, types[v[2] if len(v) > 2 else ""], list(reversed(v[0])), v[1]) for name, v in tensors.items()]
    gw.write_gguf(path, kv, ts)


if __name__ == "__main__":
    main()
