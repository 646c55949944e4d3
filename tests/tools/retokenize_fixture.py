#!/usr/bin/env python3
"""A random fixture model given a real tokenizer and chat template, stdlib only (tests/test_moe.c runs Gemma 4's MoE
block through run, chat and serve on it): the embedding tables (model.embed_tokens, and Gemma 4's
model.embed_tokens_per_layer) regrown to the tokenizer's vocabulary (the fixture's rows first, random rows of the same
scale after), the config's vocab sizes and bos / eos / pad ids the tokenizer's, the tokenizer copied and the chat
template written into tokenizer_config.json. The model stays random: its text is checked for agreement between run,
chat and serve, not against a reference.

usage: retokenize_fixture.py FIXTURE TOKENIZER_DIR TEMPLATE_CONFIG OUT [--seed S]
  TEMPLATE_CONFIG: a tokenizer_config.json whose chat_template is used
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


def rows(dtype, n, width, rng):
    vals = [rng.gauss(0.0, 0.05) for _ in range(n * width)]
    if dtype == "F32":
        return b"".join(struct.pack("<f", v) for v in vals)
    if dtype == "F16":
        return b"".join(struct.pack("<e", v) for v in vals)
    if dtype == "BF16":
        return b"".join(struct.pack("<I", struct.unpack("<I", struct.pack("<f", v))[0])[2:] for v in vals)
    sys.exit("retokenize_fixture.py: an embedding of %s (F32, F16 or BF16 expected)" % dtype)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("fixture")
    ap.add_argument("tokenizer")
    ap.add_argument("template")
    ap.add_argument("out")
    ap.add_argument("--seed", type=int, default=1)
    a = ap.parse_args()
    rng = random.Random(a.seed)
    with open(os.path.join(a.fixture, "config.json")) as f:
        cfg = json.load(f)
    with open(os.path.join(a.tokenizer, "config.json")) as f:
        tcfg = json.load(f)
    V = tcfg["vocab_size"]
    if V < cfg["vocab_size"]:
        sys.exit("retokenize_fixture.py: the tokenizer's %d tokens are fewer than the fixture's %d" % (V, cfg["vocab_size"]))
    t = read_safetensors(os.path.join(a.fixture, "model.safetensors"))
    for name in ("model.embed_tokens.weight", "model.embed_tokens_per_layer.weight"):
        if name not in t:
            continue
        dtype, shape, blob = t[name]
        t[name] = (dtype, [V, shape[1]], blob + rows(dtype, V - shape[0], shape[1], rng))
    if "lm_head.weight" in t:
        sys.exit("retokenize_fixture.py: untied LM heads are not regrown")
    os.makedirs(a.out, exist_ok=True)
    write_safetensors(os.path.join(a.out, "model.safetensors"), t)
    cfg["vocab_size"] = V
    if "vocab_size_per_layer_input" in cfg:
        cfg["vocab_size_per_layer_input"] = V
    for k in ("bos_token_id", "eos_token_id", "pad_token_id"):
        cfg[k] = tcfg.get(k)
    with open(os.path.join(a.out, "config.json"), "w") as f:
        json.dump(cfg, f, indent=2)
    shutil.copy(os.path.join(a.tokenizer, "tokenizer.json"), a.out)
    with open(os.path.join(a.tokenizer, "tokenizer_config.json")) as f:
        tc = json.load(f)
    with open(a.template) as f:
        tc["chat_template"] = json.load(f)["chat_template"]
    with open(os.path.join(a.out, "tokenizer_config.json"), "w") as f:
        json.dump(tc, f, indent=1)


if __name__ == "__main__":
    main()
