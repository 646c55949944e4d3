#!/usr/bin/env python3
# tests/tools/embed_tokenizer.py OUT: a byte-level BPE tokenizer.json of exactly 320 tokens (the vocabulary of the
# qwen3_embed fixture, which has no tokenizer of its own): GPT-2's 256 byte characters and 64 merges, so that
# `wgllm serve` can load the fixture's directory (tests/test_server_embed.sh). No dependencies.
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
bl = {"type": "ByteLevel", "add_prefix_space": False, "trim_offsets": True, "use_regex": True}
json.dump({"version": "1.0", "truncation": None, "padding": None, "added_tokens": [], "normalizer": None, "pre_tokenizer": bl,
           "post_processor": None, "decoder": bl,
           "model": {"type": "BPE", "dropout": None, "unk_token": None, "continuing_subword_prefix": None, "end_of_word_suffix": None,
                     "fuse_unk": False, "byte_fallback": False, "vocab": vocab, "merges": [a + " " + b for a, b in merges]}},
          open(sys.argv[1], "w"), ensure_ascii=False)
