#!/usr/bin/env python3
"""Makes the GGUF gpt-oss fixture by running llama.cpp's own converter (convert_hf_to_gguf.py of the llama.cpp
release the peers use, v0.5.0) on the MXFP4 Hugging Face fixture gpt_oss_mxfp4 (make_refs.py --only gpt_oss), so the
file is what a user converting openai's checkpoint gets: the gpt-oss architecture's metadata (sliding window, expert
counts, YaRN keys), its experts repacked from the checkpoint's blocks and scales into ggml's MXFP4 type, gate and up
split, biases and sinks, everything else --outtype bf16.

The fixture has no tokenizer and the converter needs one of its vocabulary size: a small byte-level BPE is written
here (GPT-2's byte alphabet, merges learned from a few sentences, gpt-oss's special tokens, o200k's pre-tokenizer
regex), with gpt-oss's own chat template (chat_templates/gpt-oss.jinja), so the file also chats as a real one does. The converter identifies a BPE pre-tokenizer by hashing its encoding of a test text, which a made-up
vocabulary cannot match; it is told "gpt-4o" (the name it gives gpt-oss's o200k_harmony) by replacing its
get_vocab_base_pre before it runs, nothing else. The `tokenizers` library's encodings of some texts are kept beside
the GGUF (tokens.json) as the reference the GGUF tokenizer must reproduce. The reference logits are the HF fixture's
(same weights). Run on the device (torch, transformers, tokenizers):

  python3 convert_gpt_oss_gguf.py LLAMA_CPP_DIR FIXTURES_DIR OUT_DIR   (FIXTURES_DIR holds gpt_oss_mxfp4)
"""
import json
import os
import shutil
import subprocess
import sys
import tempfile
from collections import Counter

O200K = ("[^\\r\\n\\p{L}\\p{N}]?[\\p{Lu}\\p{Lt}\\p{Lm}\\p{Lo}\\p{M}]*[\\p{Ll}\\p{Lm}\\p{Lo}\\p{M}]+"
         "(?i:'s|'t|'re|'ve|'m|'ll|'d)?|[^\\r\\n\\p{L}\\p{N}]?[\\p{Lu}\\p{Lt}\\p{Lm}\\p{Lo}\\p{M}]+"
         "[\\p{Ll}\\p{Lm}\\p{Lo}\\p{M}]*(?i:'s|'t|'re|'ve|'m|'ll|'d)?|\\p{N}{1,3}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n/]*|"
         "\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+")
SPECIALS = ["<|startoftext|>", "<|endoftext|>", "<|start|>", "<|end|>", "<|message|>", "<|channel|>", "<|return|>"]
CORPUS = ("the cat sat on the mat and then the dog ran in the end. It's 2024: they'll say THE END!\n"
          "in the beginning there was the word and the word was with the cat; singing things\n") * 3
TEXTS = ["the cat sat on the mat", "  leading spaces and  double  spaces", "in the end\n\nand then\n\n\nit was",
         "It's THE END they'll SAY", "numbers 1234567 and 3.14", "Hello, World. Ünïcode and 日本",
         "trailing space ", "", "a\n \nb", "<|start|>user<|message|>hi<|end|>"]


def byte_alphabet():
    """GPT-2's bytes_to_unicode: every byte as a printable character"""
    bs = list(range(ord("!"), ord("~") + 1)) + list(range(ord("¡"), ord("¬") + 1)) + list(range(ord("®"), ord("ÿ") + 1))
    cs = bs[:]
    n = 0
    for b in range(256):
        if b not in bs:
            bs.append(b)
            cs.append(256 + n)
            n += 1
    return {b: chr(c) for b, c in zip(bs, cs)}


def tiny_tokenizer(n_vocab):
    """n_vocab tokens: the 256 byte characters, merges learned greedily from CORPUS's words, the specials last."""
    import regex
    alpha = byte_alphabet()
    vocab = [alpha[b] for b in range(256)]
    words = Counter("".join(alpha[b] for b in w.encode()) for w in regex.findall(O200K, CORPUS))
    splits = {w: list(w) for w in words}
    merges = []
    while len(vocab) + len(SPECIALS) < n_vocab:
        pairs = Counter()
        for w, c in words.items():
            s = splits[w]
            for a, b in zip(s, s[1:]):
                pairs[a, b] += c
        if not pairs:
            break
        (a, b), _ = max(pairs.items(), key=lambda kv: (kv[1], kv[0]))
        merges.append(a + " " + b)
        vocab.append(a + b)
        for w in splits:
            s, out, i = splits[w], [], 0
            while i < len(s):
                if i + 1 < len(s) and s[i] == a and s[i + 1] == b:
                    out.append(a + b)
                    i += 2
                else:
                    out.append(s[i])
                    i += 1
            splits[w] = out
    while len(vocab) + len(SPECIALS) < n_vocab:
        vocab.append("<|reserved_%d|>" % len(vocab))
    first = len(vocab)
    vocab += SPECIALS
    added = [{"id": first + i, "content": t, "single_word": False, "lstrip": False, "rstrip": False,
              "normalized": False, "special": True} for i, t in enumerate(SPECIALS)]
    return {
        "version": "1.0", "truncation": None, "padding": None, "added_tokens": added, "normalizer": None,
        "pre_tokenizer": {"type": "Sequence", "pretokenizers": [
            {"type": "Split", "pattern": {"Regex": O200K}, "behavior": "Isolated", "invert": False},
            {"type": "ByteLevel", "add_prefix_space": False, "trim_offsets": True, "use_regex": False}]},
        "post_processor": None,
        "decoder": {"type": "ByteLevel", "add_prefix_space": True, "trim_offsets": True, "use_regex": True},
        "model": {"type": "BPE", "dropout": None, "unk_token": None, "continuing_subword_prefix": None,
                  "end_of_word_suffix": None, "fuse_unk": False, "byte_fallback": False, "ignore_merges": False,
                  "vocab": {t: i for i, t in enumerate(vocab)}, "merges": merges},
    }


RUN = """
import sys, runpy
sys.path.insert(0, {llama!r})
import conversion.base as base
base.TextModel.get_vocab_base_pre = lambda self, tokenizer: "gpt-4o"
sys.argv = {argv!r}
runpy.run_path({script!r}, run_name="__main__")
"""


def main():
    llama, fixtures, out = sys.argv[1], sys.argv[2], sys.argv[3]
    import tokenizers
    sdir = os.path.join(fixtures, "gpt_oss_mxfp4")
    cfg = json.load(open(os.path.join(sdir, "config.json")))
    work = tempfile.mkdtemp()
    for f in ("config.json", "model.safetensors"):
        shutil.copy(os.path.join(sdir, f), work)
    json.dump(tiny_tokenizer(cfg["vocab_size"]), open(os.path.join(work, "tokenizer.json"), "w"), ensure_ascii=False)
    template = open(os.path.join(os.path.dirname(os.path.abspath(__file__)), "chat_templates", "gpt-oss.jinja")).read()
    json.dump({"tokenizer_class": "PreTrainedTokenizerFast", "bos_token": "<|startoftext|>",
               "eos_token": "<|return|>", "pad_token": "<|endoftext|>", "add_bos_token": False,
               "add_eos_token": False, "chat_template": template},
              open(os.path.join(work, "tokenizer_config.json"), "w"))
    odir = os.path.join(out, "gpt_oss_gguf")
    os.makedirs(odir, exist_ok=True)
    script = os.path.join(llama, "convert_hf_to_gguf.py")
    argv = [script, work, "--outtype", "bf16", "--outfile", os.path.join(odir, "model.gguf")]
    env = dict(os.environ, PYTHONPATH=os.path.join(llama, "gguf-py"))
    print("+", " ".join(argv), flush=True)
    subprocess.run([sys.executable, "-c", RUN.format(llama=llama, argv=argv, script=script)], check=True, env=env)
    shutil.copy(os.path.join(sdir, "logits.f32"), odir)
    ref = json.load(open(os.path.join(sdir, "ref.json")))
    ref["name"] = "gpt_oss_gguf"
    ref["note"] = ("gpt_oss_mxfp4 converted by llama.cpp v0.5.0's convert_hf_to_gguf.py (--outtype bf16; its experts' "
                   "blocks repacked to MXFP4) with a %d-token byte-level BPE written by tools/refs/"
                   "convert_gpt_oss_gguf.py; reference = the HF fixture's logits" % cfg["vocab_size"])
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
