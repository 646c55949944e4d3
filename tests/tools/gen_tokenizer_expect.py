#!/usr/bin/env python3
"""Generates tests/data/tokenizers/expected.json with Hugging Face `tokenizers` (the authority the C
tokenizer must match exactly) from the four reference tokenizer.json files and the test strings.

Per tokenizer and string it records:
  ids                   encode(text, add_special_tokens=False).ids
  ids_special           encode(text, add_special_tokens=True).ids
  ids_literal           the same as ids but with special tokens in the text not recognized
                        (Tokenizer.encode_special_tokens = True; the C side's parse_special=0)
  decoded               decode(ids, skip_special_tokens=False)
  decoded_special       decode(ids_special, skip_special_tokens=False)
  decoded_special_skip  decode(ids_special, skip_special_tokens=True)

Usage (from the repository root, after scripts/fetch_tokenizers.sh; needs `pip install tokenizers`):
  python3 tests/tools/gen_tokenizer_expect.py \
      --tokenizer llama2=third_party/tokenizers/llama2/tokenizer.json \
      --tokenizer llama3=third_party/tokenizers/llama3/tokenizer.json \
      --tokenizer qwen3=third_party/tokenizers/qwen3/tokenizer.json \
      --tokenizer gemma3=third_party/tokenizers/gemma3/tokenizer.json \
      --strings tests/data/tokenizers/strings.json --out tests/data/tokenizers/expected.json
Without --tokenizer the four default paths above are used.

Where Python `tokenizers` is not installed, gen_tokenizer_expect.mjs --impl hf runs the same Rust core through
its official node binding (npm `tokenizers`) and writes the same file without ids_literal.
"""
import argparse
import json
import platform
import sys

NAMES = ["llama2", "llama3", "qwen3", "gemma3"]


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--tokenizer", action="append", default=[], metavar="NAME=PATH",
                    help="a tokenizer.json to encode with, under the name the C test uses")
    ap.add_argument("--strings", default="tests/data/tokenizers/strings.json")
    ap.add_argument("--out", default="tests/data/tokenizers/expected.json")
    args = ap.parse_args()

    import tokenizers
    from tokenizers import Tokenizer

    paths = {n: f"third_party/tokenizers/{n}/tokenizer.json" for n in NAMES}
    for spec in args.tokenizer:
        name, _, path = spec.partition("=")
        if not path:
            sys.exit(f"--tokenizer wants NAME=PATH, got {spec!r}")
        paths[name] = path

    with open(args.strings, encoding="utf-8") as f:
        strings = json.load(f)["strings"]

    out = {
        "generator": "hf-tokenizers",
        "generator_version": f"tokenizers {tokenizers.__version__}, Python {platform.python_version()}",
        "comment": "Made by tests/tools/gen_tokenizer_expect.py with Hugging Face tokenizers (the authority).",
        "tokenizers": {},
    }
    for name, path in paths.items():
        tok = Tokenizer.from_file(path)
        has_literal = hasattr(tok, "encode_special_tokens")
        cases = {}
        for s in strings:
            text = s["text"]
            ids = tok.encode(text, add_special_tokens=False).ids
            ids_special = tok.encode(text, add_special_tokens=True).ids
            case = {
                "ids": ids,
                "ids_special": ids_special,
                "decoded": tok.decode(ids, skip_special_tokens=False),
                "decoded_special": tok.decode(ids_special, skip_special_tokens=False),
                "decoded_special_skip": tok.decode(ids_special, skip_special_tokens=True),
            }
            if has_literal:
                tok.encode_special_tokens = True
                case["ids_literal"] = tok.encode(text, add_special_tokens=False).ids
                tok.encode_special_tokens = False
            cases[s["name"]] = case
        out["tokenizers"][name] = {"file": path, "cases": cases}
        print(f"{name}: {len(strings)} strings{'' if has_literal else ' (no encode_special_tokens: ids_literal left out)'}",
              file=sys.stderr)

    text = json.dumps(out, ensure_ascii=False, separators=(",", ":"))
    with open(args.out, "w", encoding="utf-8") as f:
        f.write(text.replace('{"ids"', '\n{"ids"') + "\n")


if __name__ == "__main__":
    main()
