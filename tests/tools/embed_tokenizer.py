#!/usr/bin/env python3
# tests/tools/embed_tokenizer.py OUT [--fim]: a byte-level BPE tokenizer.json of exactly 320 tokens (the vocabulary of
# the qwen3 and qwen3_embed fixtures, which have no tokenizer of their own): GPT-2's 256 byte characters and 64 merges,
# so that `wgllm serve` can load the fixture's directory (tests/test_server_embed.sh). --fim: the last three merges
# give their ids (317-319) to Qwen2.5-Coder's fill-in-the-middle markers <|fim_prefix|>, <|fim_middle|>,
# <|fim_suffix|>, added tokens as Qwen's tokenizer has them (not special). No dependencies.
import json, sys
bs = list(range(ord("!"), ord("~") + 1)) + list(range(ord("\xa1"), ord("\xac") + 1)) + list(range(ord("\xae"), ord("\xff") + 1))
cs, n = bs[:], 0
for b in range(256):
    if b not in bs:
        bs.append(b); cs.append(256 + n); n += 1
chars = [chr(c) for b, c in sorted(zip(bs, cs))]
vocab = {ch: i for i, ch in enumerate(chars)}
letters = "abcdefghijklmnopqrstuvwxyz"
merges = [("\u0120", c) for c in letters] + [(c, "e") for c in letters] + [("e", c) for c in "abcdfghiklmn"]
for a, b in merges:
    vocab[a + b] = len(vocab)
assert len(vocab) == 320
added = []
if "--fim" in sys.argv[2:]:
    merges = merges[:-3]
    for piece in list(vocab)[-3:]:
        del vocab[piece]
    for name in ("<|fim_prefix|>", "<|fim_middle|>", "<|fim_suffix|>"):
        added.append({"id": len(vocab), "content": name, "single_word": False, "lstrip": False, "rstrip": False,
                      "normalized": False, "special": False})
        vocab[name] = len(vocab)
    assert len(vocab) == 320 and vocab["<|fim_suffix|>"] == 319
bl = {"type": "ByteLevel", "add_prefix_space": False, "trim_offsets": True, "use_regex": True}
json.dump({"version": "1.0", "truncation": None, "padding": None, "added_tokens": added, "normalizer": None, "pre_tokenizer": bl,
           "post_processor": None, "decoder": bl,
           "model": {"type": "BPE", "dropout": None, "unk_token": None, "continuing_subword_prefix": None, "end_of_word_suffix": None,
                     "fuse_unk": False, "byte_fallback": False, "vocab": vocab, "merges": [a + " " + b for a, b in merges]}},
          open(sys.argv[1], "w"), ensure_ascii=False)
