#!/usr/bin/env python3
"""A Mixtral model made at test time from a dense Llama checkpoint (the bundled models/default), stdlib only:
tests/test_moe.c's end-to-end model with a real tokenizer and chat template.

Each layer's MLP becomes E experts that are copies of it (block_sparse_moe.experts.{e}.w1 / w3 / w2: gate, up,
down, as Mixtral's hub checkpoints name them) behind a random router (block_sparse_moe.gate.weight [E][H], the
dense weights' dtype); Mixtral's softmax over the chosen k sums to 1, so the model computes the dense one and
greedy text from both agrees. The tokenizer is copied; tokenizer_config.json gains Mistral's chat template
(tools/refs/chat_templates/mistral_v0.3.jinja), so `wgllm chat` runs the model's own template.

usage: make_mixtral_from_dense.py SRC OUT [--experts E] [--k K] [--seed S]
"""
import argparse
import json
import os
import random
import shutil
import struct
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from make_moe_fixture import read_safetensors, write_safetensors  # noqa: E402


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("src")
    ap.add_argument("out")
    ap.add_argument("--experts", type=int, default=4)
    ap.add_argument("--k", type=int, default=2)
    ap.add_argument("--seed", type=int, default=1)
    a = ap.parse_args()
    with open(os.path.join(a.src, "config.json")) as f:
        cfg = json.load(f)
    if cfg.get("model_type") != "llama":
        sys.exit("make_mixtral_from_dense.py: %s is not a llama checkpoint" % a.src)
    rng = random.Random(a.seed)
    src = read_safetensors(os.path.join(a.src, "model.safetensors"))
    H = cfg["hidden_size"]
    out = {}
    for name, (dtype, shape, blob) in src.items():
        if ".mlp." not in name:
            out[name] = (dtype, shape, blob)
            continue
        pre, part = name.split(".mlp.")
        w = {"gate_proj.weight": "w1", "up_proj.weight": "w3", "down_proj.weight": "w2"}[part]
        if w == "w1":  # the router once a layer, beside the first expert tensor
            if dtype not in ("F16", "F32"):
                sys.exit("make_mixtral_from_dense.py: %s is %s (F16 or F32 expected)" % (name, dtype))
            fmt = "<e" if dtype == "F16" else "<f"
            vals = [rng.gauss(0.0, 0.5) for _ in range(a.experts * H)]
            out[pre + ".block_sparse_moe.gate.weight"] = (dtype, [a.experts, H],
                                                          b"".join(struct.pack(fmt, v) for v in vals))
        for e in range(a.experts):
            out["%s.block_sparse_moe.experts.%d.%s.weight" % (pre, e, w)] = (dtype, shape, blob)
    os.makedirs(a.out, exist_ok=True)
    write_safetensors(os.path.join(a.out, "model.safetensors"), out)
    cfg.update({"architectures": ["MixtralForCausalLM"], "model_type": "mixtral", "num_local_experts": a.experts,
                "num_experts_per_tok": a.k, "router_aux_loss_coef": 0.02, "output_router_logits": False})
    with open(os.path.join(a.out, "config.json"), "w") as f:
        json.dump(cfg, f, indent=2)
    shutil.copy(os.path.join(a.src, "tokenizer.json"), a.out)
    with open(os.path.join(a.src, "tokenizer_config.json")) as f:
        tc = json.load(f)
    with open(os.path.join(HERE, "..", "..", "tools", "refs", "chat_templates", "mistral_v0.3.jinja")) as f:
        tc["chat_template"] = f.read()
    with open(os.path.join(a.out, "tokenizer_config.json"), "w") as f:
        json.dump(tc, f, indent=1)


if __name__ == "__main__":
    main()
