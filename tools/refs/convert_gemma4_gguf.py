#!/usr/bin/env python3
"""Makes the GGUF Gemma 4 fixtures by running llama.cpp's own converter (convert_hf_to_gguf.py of the llama.cpp
release the peers use, v0.5.0) on the committed Hugging Face Gemma 4 fixtures, so the files are exactly what a
user converting Gemma 4 gets: the gemma4 architecture's metadata (per-layer head_count_kv / feed_forward_length
arrays, key_length_swa, rope.dimension_count_swa, shared_kv_layers, the window pattern), the rope_freqs tensor
whose 1e30 entries mark the unrotated pairs, and the "gemma4" tokenizer model.

The HF fixtures have no tokenizer, and the converter needs one of the fixture's vocabulary size: a small one is
written here (Gemma's shape: BPE over characters with spaces as U+2581, byte fallback, splits at newline runs),
and the `tokenizers` library's encodings of some texts are kept beside the GGUF (tokens.json) as the reference
the GGUF "gemma4" tokenizer must reproduce. The reference logits are the HF fixture's (same weights: bf16 in,
bf16 out). Run on the device (torch, transformers, tokenizers):

  python3 convert_gemma4_gguf.py LLAMA_CPP_DIR OUT_DIR [CASE,CASE]   (the HF fixtures' names; default all)
"""
import json
import os
import shutil
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
MODELS = os.path.join(HERE, "..", "..", "tests", "data", "models")
CASES = [("gemma4_kv_shared", "gemma4_kv_shared_gguf"), ("gemma4_k_eq_v", "gemma4_k_eq_v_gguf"),
         ("gemma4_moe", "gemma4_moe_gguf")]
TEXTS = ["the cat sat on the mat", "  leading spaces and  double  spaces", "in the end\n\nand then\n\n\nit was",
         "\n\n\n\n", "one\ntwo\n", "Hello, World. Ünïcode and 日本 fall back to bytes", "ing thing singing",
         "trailing space ", "", "a\n \nb", "the\n\nthe  \n\n\n  the"]


def tiny_tokenizer(n_vocab):
    """n_vocab tokens: 4 specials, 256 byte tokens, characters, then merges in rank order."""
    specials = ["<pad>", "<eos>", "<bos>", "<unk>"]
    vocab = specials + ["<0x%02X>" % b for b in range(256)]
    chars = ["\u2581", "\n", ".", ","] + [chr(c) for c in range(ord("a"), ord("z") + 1)]
    vocab += chars
    merges = [("\u2581", "t"), ("h", "e"), ("\u2581t", "he"), ("i", "n"), ("a", "n"), ("e", "r"), ("o", "n"),
              ("r", "e"), ("a", "t"), ("e", "n"), ("n", "d"), ("\u2581", "a"), ("\u2581a", "nd"), ("i", "s"),
              ("o", "u"), ("i", "t"), ("e", "s"), ("o", "r"), ("\n", "\n"), ("\n\n", "\n"), ("\u2581", "\u2581"),
              ("\u2581", "i"), ("\u2581i", "n"), ("\u2581", "o"), ("\u2581o", "n"), ("n", "g"), ("in", "g"),
              ("\u2581", "s"), ("\u2581", "w"), ("\u2581", "c"), ("a", "t"), ("\u2581c", "at"), ("\u2581", "m"),
              ("\u2581m", "at"), ("\u2581s", "at"), ("\u2581", "e"), ("\u2581e", "nd"), ("t", "h"), ("th", "ing")]
    kept = []
    for a, b in merges:
        if len(vocab) >= n_vocab:
            break
        if a + b in vocab:
            continue
        vocab.append(a + b)
        kept.append(a + " " + b)
    while len(vocab) < n_vocab:  # pad with unreachable pieces (never produced: no merge makes them)
        vocab.append("<unused%d>" % len(vocab))
    added = [{"id": i, "content": t, "single_word": False, "lstrip": False, "rstrip": False, "normalized": False,
              "special": True} for i, t in enumerate(specials)]
    return {
        "version": "1.0", "truncation": None, "padding": None, "added_tokens": added,
        "normalizer": {"type": "Replace", "pattern": {"String": " "}, "content": "\u2581"},
        "pre_tokenizer": {"type": "Split", "pattern": {"Regex": "[^\\n]+|[\\n]+"}, "behavior": "Isolated",
                          "invert": False},
        "post_processor": {"type": "TemplateProcessing",
                           "single": [{"SpecialToken": {"id": "<bos>", "type_id": 0}},
                                      {"Sequence": {"id": "A", "type_id": 0}}],
                           "pair": [{"SpecialToken": {"id": "<bos>", "type_id": 0}},
                                    {"Sequence": {"id": "A", "type_id": 0}}, {"Sequence": {"id": "B", "type_id": 1}}],
                           "special_tokens": {"<bos>": {"id": "<bos>", "ids": [2], "tokens": ["<bos>"]}}},
        "decoder": {"type": "Sequence", "decoders": [
            {"type": "Replace", "pattern": {"String": "\u2581"}, "content": " "},
            {"type": "ByteFallback"}, {"type": "Fuse"}]},
        "model": {"type": "BPE", "dropout": None, "unk_token": "<unk>", "continuing_subword_prefix": None,
                  "end_of_word_suffix": None, "fuse_unk": True, "byte_fallback": True, "ignore_merges": False,
                  "vocab": {t: i for i, t in enumerate(vocab)}, "merges": kept},
    }


def main():
    llama, out = sys.argv[1], sys.argv[2]
    only = sys.argv[3].split(",") if len(sys.argv) > 3 else None
    import tokenizers
    for src, name in CASES:
        if only and src not in only:
            continue
        sdir = os.path.join(MODELS, src)
        cfg = json.load(open(os.path.join(sdir, "config.json")))
        work = tempfile.mkdtemp()
        for f in ("config.json", "model.safetensors"):
            shutil.copy(os.path.join(sdir, f), work)
        tj = tiny_tokenizer(cfg["vocab_size"])
        json.dump(tj, open(os.path.join(work, "tokenizer.json"), "w"), ensure_ascii=False)
        json.dump({"tokenizer_class": "PreTrainedTokenizerFast", "bos_token": "<bos>", "eos_token": "<eos>",
                   "pad_token": "<pad>", "unk_token": "<unk>", "add_bos_token": True, "add_eos_token": False},
                  open(os.path.join(work, "tokenizer_config.json"), "w"))
        odir = os.path.join(out, name)
        os.makedirs(odir, exist_ok=True)
        env = dict(os.environ, PYTHONPATH=os.path.join(llama, "gguf-py"))
        cmd = [sys.executable, os.path.join(llama, "convert_hf_to_gguf.py"), work, "--outtype", "bf16", "--outfile",
               os.path.join(odir, "model.gguf")]
        print("+", " ".join(cmd), flush=True)
        subprocess.run(cmd, check=True, env=env)
        shutil.copy(os.path.join(sdir, "logits.f32"), odir)
        ref = json.load(open(os.path.join(sdir, "ref.json")))
        ref["name"] = name
        ref["note"] = ("%s converted by llama.cpp v0.5.0's convert_hf_to_gguf.py (--outtype bf16) with a %d-token "
                       "tokenizer written by tools/refs/convert_gemma4_gguf.py; reference = the HF fixture's logits. "
                       "HF fixture: %s" % (src, cfg["vocab_size"], ref.get("note", "")))
        json.dump(ref, open(os.path.join(odir, "ref.json"), "w"), indent=1)
        tok = tokenizers.Tokenizer.from_file(os.path.join(work, "tokenizer.json"))
        enc = [{"text": t, "ids": tok.encode(t, add_special_tokens=False).ids,
                "ids_bos": tok.encode(t, add_special_tokens=True).ids} for t in TEXTS]
        json.dump({"tokenizers": tokenizers.__version__, "cases": enc}, open(os.path.join(odir, "tokens.json"), "w"),
                  indent=1, ensure_ascii=False)
        shutil.rmtree(work)
        print("wrote", odir, flush=True)


if __name__ == "__main__":
    main()
