#!/usr/bin/env python3
"""A Mixtral Hugging Face directory (config.json + model.safetensors, F32, the experts a tensor each) written as
llama.cpp's convert_hf_to_gguf.py writes Mixtral: a "llama" GGUF with llama.expert_count and
llama.expert_used_count, feed_forward_length an expert's width, attn_q / attn_k rows permuted for adjacent-pair RoPE,
the router blk.N.ffn_gate_inp [E][H] and the experts stacked per projection (ffn_gate_exps / ffn_up_exps [E][I][H],
ffn_down_exps [E][H][I]), everything F32, with the llama-style test tokenizer of tools/refs/make_refs.py's GGUF
fixtures (its vocabulary size the model's). ref.json and logits.f32 are copied beside it: the same weights, the same
transformers logits. Stdlib only (no numpy or torch).

It made tests/data/models/mixtral_gguf from tests/data/models/mixtral:
    python3 tests/tools/mixtral_gguf.py tests/data/models/mixtral tests/data/models/mixtral_gguf
"""
import json
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "tools", "gguf"))
sys.path.insert(0, HERE)
import gguf_writer as gw  # noqa: E402
import make_moe_fixture as moe_fixture  # noqa: E402


def read_safetensors(path):
    """name -> (shape, F32 bytes): make_moe_fixture.py's reader, F32 only"""
    out = {}
    for name, (dtype, shape, blob) in moe_fixture.read_safetensors(path).items():
        if dtype != "F32":
            sys.exit("%s: %s is %s (F32 only)" % (os.path.basename(sys.argv[0]), name, dtype))
        out[name] = (shape, blob)
    return out


def test_vocab_kv(V):
    """The llama-style test tokenizer of make_refs.py's GGUF fixtures as GGUF metadata: <unk> <s> </s>, 256 byte
    tokens, then V - 259 pieces of one letter repeated (phi3_gguf.py's too)"""
    toks = (["<unk>", "<s>", "</s>"] + ["<0x%02X>" % b for b in range(256)] +
            ["\u2581" + chr(97 + j % 26) * (1 + j // 26) for j in range(V - 259)])
    return [("tokenizer.ggml.model", "str", "llama"), ("tokenizer.ggml.tokens", ("arr", "str"), toks),
            ("tokenizer.ggml.scores", ("arr", "f32"), [0.0] * 259 + [-float(j) for j in range(V - 259)]),
            ("tokenizer.ggml.token_type", ("arr", "i32"), [2, 3, 3] + [6] * 256 + [1] * (V - 259)),
            ("tokenizer.ggml.bos_token_id", "u32", 1), ("tokenizer.ggml.eos_token_id", "u32", 2),
            ("tokenizer.ggml.unknown_token_id", "u32", 0)]


def copy_reference(src, out, how):
    """src's ref.json (named after out, its note saying how the GGUF was written) and logits.f32 beside the GGUF"""
    ref = json.load(open(os.path.join(src, "ref.json")))
    ref["name"] = os.path.basename(os.path.normpath(out))
    ref["note"] = "the weights of ../%s as %s" % (os.path.basename(os.path.normpath(src)), how)
    json.dump(ref, open(os.path.join(out, "ref.json"), "w"), indent=1)
    with open(os.path.join(src, "logits.f32"), "rb") as f, open(os.path.join(out, "logits.f32"), "wb") as g:
        g.write(f.read())


def permuted(shape, blob, n_head):
    """rows reordered as llama.cpp's converter orders attn_q / attn_k"""
    rows, cols = shape
    perm = gw.rope_permutation(rows, n_head)
    rb = cols * 4
    return b"".join(blob[perm[r] * rb:(perm[r] + 1) * rb] for r in range(rows))


def main():
    if len(sys.argv) != 3:
        sys.exit("usage: mixtral_gguf.py HF_DIR OUT_DIR")
    src, out = sys.argv[1], sys.argv[2]
    cfg = json.load(open(os.path.join(src, "config.json")))
    sd = read_safetensors(os.path.join(src, "model.safetensors"))
    H, L, E = cfg["hidden_size"], cfg["num_hidden_layers"], cfg["num_local_experts"]
    nh, nkv = cfg["num_attention_heads"], cfg["num_key_value_heads"]
    V = cfg["vocab_size"]

    def t(name, key, blob=None):
        shape, b = sd[key]
        return (name, gw.GGML_F32, list(reversed(shape)), b if blob is None else blob)

    ts = [t("token_embd.weight", "model.embed_tokens.weight"), t("output_norm.weight", "model.norm.weight"),
          t("output.weight", "lm_head.weight")]
    for i in range(L):
        p = "model.layers.%d." % i
        q, k = sd[p + "self_attn.q_proj.weight"], sd[p + "self_attn.k_proj.weight"]
        ts += [t("blk.%d.attn_norm.weight" % i, p + "input_layernorm.weight"),
               t("blk.%d.attn_q.weight" % i, p + "self_attn.q_proj.weight", permuted(q[0], q[1], nh)),
               t("blk.%d.attn_k.weight" % i, p + "self_attn.k_proj.weight", permuted(k[0], k[1], nkv)),
               t("blk.%d.attn_v.weight" % i, p + "self_attn.v_proj.weight"),
               t("blk.%d.attn_output.weight" % i, p + "self_attn.o_proj.weight"),
               t("blk.%d.ffn_norm.weight" % i, p + "post_attention_layernorm.weight"),
               t("blk.%d.ffn_gate_inp.weight" % i, p + "block_sparse_moe.gate.weight")]
        for w, g in (("w1", "ffn_gate_exps"), ("w3", "ffn_up_exps"), ("w2", "ffn_down_exps")):
            parts = [sd[p + "block_sparse_moe.experts.%d.%s.weight" % (e, w)] for e in range(E)]
            shape = parts[0][0]
            ts.append(("blk.%d.%s.weight" % (i, g), gw.GGML_F32, [shape[1], shape[0], E],
                       b"".join(b for _, b in parts)))
    rope = cfg.get("rope_parameters") or {}
    a = "llama"
    kv = [("general.architecture", "str", a), ("general.name", "str", "mixtral_gguf"), ("general.alignment", "u32", 32),
          ("general.file_type", "u32", 0), (a + ".context_length", "u32", cfg["max_position_embeddings"]),
          (a + ".embedding_length", "u32", H), (a + ".block_count", "u32", L),
          (a + ".feed_forward_length", "u32", cfg["intermediate_size"]),
          (a + ".attention.head_count", "u32", nh), (a + ".attention.head_count_kv", "u32", nkv),
          (a + ".rope.dimension_count", "u32", H // nh),
          (a + ".rope.freq_base", "f32", float(rope.get("rope_theta", cfg.get("rope_theta", 1e6)))),
          (a + ".attention.layer_norm_rms_epsilon", "f32", float(cfg["rms_norm_eps"])),
          (a + ".expert_count", "u32", E), (a + ".expert_used_count", "u32", cfg["num_experts_per_tok"])]
    kv += test_vocab_kv(V)
    os.makedirs(out, exist_ok=True)
    gw.write_gguf(os.path.join(out, "model.gguf"), kv, ts)
    copy_reference(src, out, "llama.cpp writes Mixtral (a llama GGUF, F32; tests/tools/mixtral_gguf.py)")

if __name__ == "__main__":
    main()
