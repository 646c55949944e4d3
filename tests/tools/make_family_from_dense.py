#!/usr/bin/env python3
"""A model of another family made at test time from a dense Llama checkpoint (the bundled models/default), stdlib
only: tests/test_moe.c's end-to-end models, each with a real tokenizer and its family's chat template.

--family mixtral: each layer's MLP becomes E experts that are copies of it (block_sparse_moe.experts.{e}.w1 / w3 /
  w2: gate, up, down, as Mixtral's hub checkpoints name them) behind a random router (block_sparse_moe.gate.weight
  [E][H]); Mixtral's softmax over the chosen k sums to 1, so the model computes the dense one. Mistral's template.
--family phi3: the same weights in Phi-3's fused form (self_attn.qkv_proj = q | k | v rows, mlp.gate_up_proj = gate
  | up rows), full rotary, no rope scaling: the dense model's math. Phi-3.5's template.
--family qwen3: the dense model plus Qwen3's per-head q_norm and k_norm (random weights near 1, from --seed alone).
  Qwen3's template (third_party/tokenizers/qwen3).
--family qwen3_moe: that Qwen3 with each MLP as E expert copies (mlp.experts.{e}.gate_proj / up_proj / down_proj)
  behind a random router (mlp.gate.weight), norm_topk_prob true: the qwen3 family's math, its template.
The tokenizer is copied; tokenizer_config.json gains the chat template, so `wgllm chat` runs the model's own.

usage: make_family_from_dense.py SRC OUT [--family F] [--experts E] [--k K] [--seed S]
"""
import argparse
import json
import os
import random
import shutil
import struct
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.join(HERE, "..", "..")
sys.path.insert(0, HERE)
from make_moe_fixture import read_safetensors, write_safetensors  # noqa: E402

TEMPLATES = {"mixtral": "tools/refs/chat_templates/mistral_v0.3.jinja",
             "phi3": "tools/refs/chat_templates/phi-3.5.jinja",
             "qwen3": "third_party/tokenizers/qwen3/tokenizer_config.json",
             "qwen3_moe": "third_party/tokenizers/qwen3/tokenizer_config.json"}


def pack(dtype, vals):
    fmt = {"F16": "<e", "F32": "<f"}.get(dtype)
    if not fmt:
        sys.exit("make_family_from_dense.py: weights of %s (F16 or F32 expected)" % dtype)
    return b"".join(struct.pack(fmt, v) for v in vals)


def template(family):
    path = os.path.join(ROOT, TEMPLATES[family])
    with open(path) as f:
        return json.load(f)["chat_template"] if path.endswith(".json") else f.read()


def experts(out, pre, part, tensor, names, E, H, router, rng):
    """part's tensor copied to E experts named names[part] % e, the router [E][H] beside the first"""
    dtype, shape, blob = tensor
    if part == "gate_proj.weight":
        out[router] = (dtype, [E, H], pack(dtype, [rng.gauss(0.0, 0.5) for _ in range(E * H)]))
    for e in range(E):
        out[pre + names[part] % e] = (dtype, shape, blob)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("src")
    ap.add_argument("out")
    ap.add_argument("--family", default="mixtral", choices=sorted(TEMPLATES))
    ap.add_argument("--experts", type=int, default=4)
    ap.add_argument("--k", type=int, default=2)
    ap.add_argument("--seed", type=int, default=1)
    a = ap.parse_args()
    with open(os.path.join(a.src, "config.json")) as f:
        cfg = json.load(f)
    if cfg.get("model_type") != "llama":
        sys.exit("make_family_from_dense.py: %s is not a llama checkpoint" % a.src)
    rng = random.Random(a.seed)
    norm_rng = random.Random(a.seed + 1000)  # the q/k norms alike in qwen3 and qwen3_moe
    src = read_safetensors(os.path.join(a.src, "model.safetensors"))
    H, L, hd = cfg["hidden_size"], cfg["num_hidden_layers"], cfg["head_dim"]
    out = {}
    fam = a.family
    if fam == "mixtral":
        names = {"gate_proj.weight": "block_sparse_moe.experts.%d.w1.weight",
                 "up_proj.weight": "block_sparse_moe.experts.%d.w3.weight",
                 "down_proj.weight": "block_sparse_moe.experts.%d.w2.weight"}
    else:
        names = {p: "mlp.experts.%d." + p for p in ("gate_proj.weight", "up_proj.weight", "down_proj.weight")}
    for name, t in src.items():
        if fam in ("mixtral", "qwen3_moe") and ".mlp." in name:
            pre, part = name.split(".mlp.")
            router = pre + (".block_sparse_moe.gate.weight" if fam == "mixtral" else ".mlp.gate.weight")
            experts(out, pre + ".", part, t, names, a.experts, H, router, rng)
        elif fam == "phi3" and name.endswith(("q_proj.weight", "mlp.gate_proj.weight")):
            q = name.endswith("q_proj.weight")
            parts = [name.replace("q_proj", p) for p in ("q_proj", "k_proj", "v_proj")] if q else \
                [name.replace("gate_proj", p) for p in ("gate_proj", "up_proj")]
            ts = [src[p] for p in parts]
            rows = sum(s[1][0] for s in ts)
            fused = name.replace("q_proj", "qkv_proj") if q else name.replace("gate_proj", "gate_up_proj")
            out[fused] = (t[0], [rows, t[1][1]], b"".join(s[2] for s in ts))
        elif fam == "phi3" and name.endswith(("k_proj.weight", "v_proj.weight", "mlp.up_proj.weight")):
            continue
        else:
            out[name] = t
    if fam in ("qwen3", "qwen3_moe"):
        dtype = src["model.norm.weight"][0]
        for l in range(L):
            for n in ("q_norm", "k_norm"):
                out["model.layers.%d.self_attn.%s.weight" % (l, n)] = (
                    dtype, [hd], pack(dtype, [norm_rng.gauss(1.0, 0.2) for _ in range(hd)]))
    os.makedirs(a.out, exist_ok=True)
    write_safetensors(os.path.join(a.out, "model.safetensors"), out)
    if fam == "mixtral":
        cfg.update({"architectures": ["MixtralForCausalLM"], "model_type": "mixtral", "num_local_experts": a.experts,
                    "num_experts_per_tok": a.k, "router_aux_loss_coef": 0.02, "output_router_logits": False})
    elif fam == "phi3":
        cfg.update({"architectures": ["Phi3ForCausalLM"], "model_type": "phi3", "partial_rotary_factor": 1.0,
                    "sliding_window": None, "original_max_position_embeddings": cfg["max_position_embeddings"]})
        for k in ("attention_bias", "mlp_bias", "pretraining_tp"):
            cfg.pop(k, None)
    else:
        cfg.update({"architectures": ["Qwen3ForCausalLM"], "model_type": "qwen3", "use_sliding_window": False,
                    "sliding_window": None, "max_window_layers": L})
        if fam == "qwen3_moe":
            cfg.update({"architectures": ["Qwen3MoeForCausalLM"], "model_type": "qwen3_moe",
                        "num_experts": a.experts, "num_local_experts": a.experts, "num_experts_per_tok": a.k,
                        "moe_intermediate_size": cfg["intermediate_size"], "norm_topk_prob": True,
                        "decoder_sparse_step": 1, "mlp_only_layers": [], "router_aux_loss_coef": 0.001,
                        "output_router_logits": False})
        cfg.pop("pretraining_tp", None)
        cfg.pop("mlp_bias", None)
    with open(os.path.join(a.out, "config.json"), "w") as f:
        json.dump(cfg, f, indent=2)
    shutil.copy(os.path.join(a.src, "tokenizer.json"), a.out)
    with open(os.path.join(a.src, "tokenizer_config.json")) as f:
        tc = json.load(f)
    tc["chat_template"] = template(fam)
    with open(os.path.join(a.out, "tokenizer_config.json"), "w") as f:
        json.dump(tc, f, indent=1)


if __name__ == "__main__":
    main()
