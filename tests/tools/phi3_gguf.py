#!/usr/bin/env python3
"""A Phi-3 / Phi-4-mini Hugging Face directory (config.json + model.safetensors, F32) written as llama.cpp's
convert_hf_to_gguf.py writes phi3 (conversion/phi.py, Phi3MiniModel): general.architecture "phi3", blk.N.attn_qkv
(qkv_proj as it is: NeoX RoPE, no permutation), blk.N.ffn_up holding gate_up_proj, rope.dimension_count
int(partial_rotary_factor * hidden) // heads, the longrope factors as the tensors rope_factors_short.weight and
rope_factors_long.weight, rope.scaling.original_context_length and rope.scaling.attn_factor (sqrt(1 + ln(scale) /
ln(original)), scale = max_position_embeddings / original), attention.sliding_window when the config has one;
everything F32, with the llama-style test tokenizer of tests/tools/mixtral_gguf.py (its helpers). ref.json and logits.f32 are copied
beside it: the same weights, the same transformers logits. Stdlib only.

It made tests/data/models/phi3_gguf and phi4_mini_gguf:
    python3 tests/tools/phi3_gguf.py tests/data/models/phi3 tests/data/models/phi3_gguf
"""
import json
import math
import os
import struct
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "tools", "gguf"))
sys.path.insert(0, HERE)
import gguf_writer as gw  # noqa: E402
from mixtral_gguf import copy_reference, read_safetensors, test_vocab_kv  # noqa: E402


def main():
    if len(sys.argv) != 3:
        sys.exit("usage: phi3_gguf.py HF_DIR OUT_DIR")
    src, out = sys.argv[1], sys.argv[2]
    cfg = json.load(open(os.path.join(src, "config.json")))
    sd = read_safetensors(os.path.join(src, "model.safetensors"))
    H, L, V = cfg["hidden_size"], cfg["num_hidden_layers"], cfg["vocab_size"]
    nh, nkv = cfg["num_attention_heads"], cfg["num_key_value_heads"]
    rp = cfg.get("rope_parameters") or cfg.get("rope_scaling") or {}
    orig = rp.get("original_max_position_embeddings") or cfg["original_max_position_embeddings"]
    partial = rp.get("partial_rotary_factor", cfg.get("partial_rotary_factor", 1.0))
    rope_dims = int(partial * H) // nh
    scale = cfg["max_position_embeddings"] / orig
    attn_factor = math.sqrt(1 + math.log(scale) / math.log(orig)) if scale > 1.0 else 1.0

    def t(name, key):
        shape, b = sd[key]
        return (name, gw.GGML_F32, list(reversed(shape)), b)

    def vec(name, values):
        return (name, gw.GGML_F32, [len(values)], struct.pack("<%df" % len(values), *values))

    ts = [t("token_embd.weight", "model.embed_tokens.weight"), t("output_norm.weight", "model.norm.weight"),
          vec("rope_factors_long.weight", rp["long_factor"]), vec("rope_factors_short.weight", rp["short_factor"])]
    if not cfg.get("tie_word_embeddings", False):
        ts.append(t("output.weight", "lm_head.weight"))
    for i in range(L):
        p = "model.layers.%d." % i
        ts += [t("blk.%d.attn_norm.weight" % i, p + "input_layernorm.weight"),
               t("blk.%d.attn_qkv.weight" % i, p + "self_attn.qkv_proj.weight"),
               t("blk.%d.attn_output.weight" % i, p + "self_attn.o_proj.weight"),
               t("blk.%d.ffn_norm.weight" % i, p + "post_attention_layernorm.weight"),
               t("blk.%d.ffn_up.weight" % i, p + "mlp.gate_up_proj.weight"),
               t("blk.%d.ffn_down.weight" % i, p + "mlp.down_proj.weight")]
    a = "phi3"
    kv = [("general.architecture", "str", a), ("general.name", "str", os.path.basename(os.path.normpath(out))),
          ("general.alignment", "u32", 32), ("general.file_type", "u32", 0),
          (a + ".context_length", "u32", cfg["max_position_embeddings"]),
          (a + ".rope.scaling.original_context_length", "u32", orig), (a + ".embedding_length", "u32", H),
          (a + ".feed_forward_length", "u32", cfg["intermediate_size"]), (a + ".block_count", "u32", L),
          (a + ".attention.head_count", "u32", nh), (a + ".attention.head_count_kv", "u32", nkv),
          (a + ".attention.layer_norm_rms_epsilon", "f32", float(cfg["rms_norm_eps"])),
          (a + ".rope.dimension_count", "u32", rope_dims), (a + ".rope.freq_base", "f32", float(rp["rope_theta"])),
          (a + ".rope.scaling.attn_factor", "f32", attn_factor)] + test_vocab_kv(V)
    if cfg.get("sliding_window"):
        kv.append((a + ".attention.sliding_window", "u32", cfg["sliding_window"]))
    os.makedirs(out, exist_ok=True)
    gw.write_gguf(os.path.join(out, "model.gguf"), kv, ts)
    copy_reference(src, out, "llama.cpp writes phi3 (F32; tests/tools/phi3_gguf.py)")

if __name__ == "__main__":
    main()
