#!/usr/bin/env python3
"""Writes the seed corpora of the fuzz harnesses into tests/fuzz/corpus/<harness>/ (Python 3 standard library
only; the output is committed, so this runs only when the seeds change). Each seed is small (a few KB):
  gguf/            GGUF v2/v3 files: a tiny Llama (F32/F16/Q8_0/Q4_0 tensors, every metadata type, the
                   tokenizer.ggml.* arrays of both tokenizer types), a Qwen2 and a Gemma 3 shape, an unread tensor
                   type, nested arrays, rope_freqs
  gguf_tokenizer/  the structured inputs fuzz_gguf_tokenizer.c describes (flags, bos/eos, tokens, merges, text)
  safetensors/     model.safetensors files of the tiny Llama that fuzz_safetensors.c's config.json describes
                   (F32, F16, BF16, with __metadata__) and a few broken ones
  config_json/     the config.json files of tests/data/models and models/default, plus multimodal, Mistral and
                   rope-scaling variants
  tokenizer_json/  small tokenizer.json files: byte-level BPE (Split regex + ByteLevel), SentencePiece-style
                   (Prepend/Replace normalizers, byte fallback, the Replace/ByteFallback/Fuse/Strip decoders),
                   Metaspace and Digits pre-tokenizers, templates, added tokens; and the unsupported_*.json files
  encode/          byte 0 (tokenizer and flags, see fuzz_encode.c) + texts of tests/data/tokenizers/strings.json
  chat_template/   the templates of tests/data/chat (third_party's tokenizer_config.json templates are among them)
                   with a few of their conversations, small templates of other constructs, the named templates
Usage (from the repository root): python3 tests/fuzz/gen_seeds.py"""
import json
import os
import struct
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
OUT = os.path.join(ROOT, "tests", "fuzz", "corpus")


def put(harness, name, data):
    d = os.path.join(OUT, harness)
    os.makedirs(d, exist_ok=True)
    if isinstance(data, str):
        data = data.encode()
    with open(os.path.join(d, name), "wb") as f:
        f.write(data)


# ---- GGUF ----
T_U8, T_I8, T_U16, T_I16, T_U32, T_I32, T_F32, T_BOOL, T_STR, T_ARR, T_U64, T_I64, T_F64 = range(13)
FMT = {T_U8: "<B", T_I8: "<b", T_U16: "<H", T_I16: "<h", T_U32: "<I", T_I32: "<i", T_F32: "<f", T_BOOL: "<B",
       T_U64: "<Q", T_I64: "<q", T_F64: "<d"}
GGML = {"F32": (0, 1, 4), "F16": (1, 1, 2), "Q4_0": (2, 32, 18), "Q8_0": (8, 32, 34), "BF16": (30, 1, 2),
        "Q4_K": (12, 256, 144), "IQ2_XXS": (16, 256, 66)}


def gstr(s):
    b = s.encode() if isinstance(s, str) else s
    return struct.pack("<Q", len(b)) + b


def gval(t, v):
    if t == T_STR:
        return gstr(v)
    if t == T_ARR:
        et, items = v
        out = struct.pack("<IQ", et, len(items))
        return out + b"".join(gval(et, x) for x in items)
    return struct.pack(FMT[t], v)


def gguf(kvs, tensors, version=3, align=32):
    """kvs: [(key, type, value)]; tensors: [(name, ggml type name, ne innermost first, data bytes or None)]"""
    out = b"GGUF" + struct.pack("<IQQ", version, len(tensors), len(kvs))
    for k, t, v in kvs:
        out += gstr(k) + struct.pack("<I", t) + gval(t, v)
    offs, blobs, off = [], [], 0
    for name, ty, ne, data in tensors:
        tid, blk, bb = GGML[ty]
        n = 1
        for x in ne:
            n *= x
        size = n // blk * bb
        if data is None:
            data = bytes((i * 37 + 11) & 0xFF for i in range(size))
            if ty in ("F16", "BF16"):  # finite halves
                data = b"".join(struct.pack("<H", 0x3C00 + (i % 64)) for i in range(n))
            if ty == "F32":
                data = b"".join(struct.pack("<f", ((i % 17) - 8) / 16.0) for i in range(n))
        assert len(data) == size, (name, len(data), size)
        out += gstr(name) + struct.pack("<I", len(ne)) + b"".join(struct.pack("<Q", x) for x in ne)
        out += struct.pack("<IQ", tid, off)
        offs.append(off)
        blobs.append(data)
        off += (size + align - 1) // align * align
    out += b"\0" * ((-len(out)) % align)
    for b in blobs:
        out += b + b"\0" * ((-len(b)) % align)
    return out


def spm_vocab():
    toks = ["<unk>", "<s>", "</s>"] + ["<0x%02X>" % b for b in range(256)]
    toks += ["\u2581", "\u2581t", "he", "\u2581the", "\u2581a", "in", "\u2581H", "ello", "\u2581Hello", "o", "l", "e",
             "H", "t", "h", "a", "\u2581w", "or", "ld", "\u2581world"]
    types = [2, 3, 3] + [6] * 256 + [1] * (len(toks) - 259)
    scores = [0.0, 0.0, 0.0] + [0.0] * 256 + [-float(i) for i in range(len(toks) - 259)]
    return toks, types, scores


def bpe_vocab():
    bs = list(range(0x21, 0x7F)) + list(range(0xA1, 0xAD)) + list(range(0xAE, 0x100))
    cs, n = bs[:], 0
    for b in range(256):
        if b not in bs:
            bs.append(b)
            cs.append(256 + n)
            n += 1
    base = [chr(c) for b, c in sorted(zip(bs, cs))]
    merges = ["\u0120 t", "h e", "\u0120t he", "l l", "H e", "He ll", "Hell o", "\u0120 w", "o r", "\u0120w or",
              "l d", "\u0120wor ld"]
    toks = base + ["\u0120t", "he", "\u0120the", "ll", "He", "Hell", "Hello", "\u0120w", "or", "\u0120wor", "ld",
                   "\u0120world", "<|begin_of_text|>", "<|end_of_text|>", "<|eot_id|>"]
    types = [1] * (len(toks) - 3) + [3, 3, 3]
    return toks, types, merges


def llama_meta(arch="llama", n_embd=32, n_layer=1, n_head=4, n_kv=2, n_ff=64, ctx=128):
    return [("general.architecture", T_STR, arch), ("general.name", T_STR, "fuzz seed"),
            (arch + ".context_length", T_U32, ctx), (arch + ".embedding_length", T_U32, n_embd),
            (arch + ".block_count", T_U32, n_layer), (arch + ".feed_forward_length", T_U32, n_ff),
            (arch + ".attention.head_count", T_U32, n_head), (arch + ".attention.head_count_kv", T_U32, n_kv),
            (arch + ".attention.layer_norm_rms_epsilon", T_F32, 1e-5), (arch + ".rope.freq_base", T_F32, 10000.0)]


def llama_tensors(n_vocab, n_embd=32, n_layer=1, n_head=4, n_kv=2, n_ff=64, wtype="F32", bias=False, qk=False,
                  gemma=False):
    hd = n_embd // n_head
    ts = [("token_embd.weight", wtype, [n_embd, n_vocab], None), ("output_norm.weight", "F32", [n_embd], None)]
    for l in range(n_layer):
        p = "blk.%d." % l
        ts += [(p + "attn_norm.weight", "F32", [n_embd], None), (p + "ffn_norm.weight", "F32", [n_embd], None),
               (p + "attn_q.weight", wtype, [n_embd, n_head * hd], None),
               (p + "attn_k.weight", wtype, [n_embd, n_kv * hd], None),
               (p + "attn_v.weight", wtype, [n_embd, n_kv * hd], None),
               (p + "attn_output.weight", wtype, [n_head * hd, n_embd], None),
               (p + "ffn_gate.weight", wtype, [n_embd, n_ff], None), (p + "ffn_up.weight", wtype, [n_embd, n_ff], None),
               (p + "ffn_down.weight", wtype, [n_ff, n_embd], None)]
        if bias:
            ts += [(p + "attn_q.bias", "F32", [n_head * hd], None), (p + "attn_k.bias", "F32", [n_kv * hd], None),
                   (p + "attn_v.bias", "F32", [n_kv * hd], None)]
        if qk:
            ts += [(p + "attn_q_norm.weight", "F32", [hd], None), (p + "attn_k_norm.weight", "F32", [hd], None)]
        if gemma:
            ts += [(p + "post_attention_norm.weight", "F32", [n_embd], None),
                   (p + "post_ffw_norm.weight", "F32", [n_embd], None)]
    return ts


def gen_gguf():
    toks, types, scores = spm_vocab()
    spm_tok = [("tokenizer.ggml.model", T_STR, "llama"), ("tokenizer.ggml.tokens", T_ARR, (T_STR, toks)),
               ("tokenizer.ggml.scores", T_ARR, (T_F32, scores)), ("tokenizer.ggml.token_type", T_ARR, (T_I32, types)),
               ("tokenizer.ggml.bos_token_id", T_U32, 1), ("tokenizer.ggml.eos_token_id", T_U32, 2),
               ("tokenizer.ggml.add_bos_token", T_BOOL, 1), ("tokenizer.chat_template", T_STR, "{{ messages }}")]
    btoks, btypes, bmerges = bpe_vocab()
    bpe_tok = [("tokenizer.ggml.model", T_STR, "gpt2"), ("tokenizer.ggml.pre", T_STR, "llama-bpe"),
               ("tokenizer.ggml.tokens", T_ARR, (T_STR, btoks)), ("tokenizer.ggml.token_type", T_ARR, (T_I32, btypes)),
               ("tokenizer.ggml.merges", T_ARR, (T_STR, bmerges)), ("tokenizer.ggml.bos_token_id", T_U32, 256 + 12),
               ("tokenizer.ggml.eos_token_id", T_U32, 256 + 13)]
    # 1: tiny Llama, F16, SentencePiece tokenizer (no tensors beyond the model; vocab rows = tokens)
    n_v = len(toks)
    put("gguf", "llama_spm.gguf", gguf(llama_meta(n_embd=4, n_head=2, n_kv=1, n_ff=4) + spm_tok,
                                       llama_tensors(n_v, n_embd=4, n_head=2, n_kv=1, n_ff=4, wtype="F16")))
    # 2: Q8_0 / Q4_0 weights (rows of 32: an 8-row table, so no bos/eos ids), BPE tokenizer, v2
    put("gguf", "llama_bpe_q8.gguf",
        gguf(llama_meta(n_embd=32, n_head=4, n_kv=2, n_ff=32) + bpe_tok[:-2],
             llama_tensors(8, n_embd=32, n_head=4, n_kv=2, n_ff=32, wtype="Q8_0")[:2] +
             [("blk.0.attn_q.weight", "Q4_0", [32, 32], None),
              ("rope_freqs.weight", "F32", [4], struct.pack("<4f", 1.0, 1.0, 2.0, 4.0))],
             version=2))
    # 3: every metadata value type, nested arrays, a custom alignment, no tensors
    every = [("u8", T_U8, 200), ("i8", T_I8, -5), ("u16", T_U16, 60000), ("i16", T_I16, -300), ("u32", T_U32, 7),
             ("i32", T_I32, -7), ("f32", T_F32, 0.5), ("bool", T_BOOL, 1), ("str", T_STR, "caf\u00e9"),
             ("u64", T_U64, 1 << 40), ("i64", T_I64, -(1 << 40)), ("f64", T_F64, 3.25),
             ("arr.u8", T_ARR, (T_U8, [1, 2, 3])), ("arr.f64", T_ARR, (T_F64, [1.5])),
             ("arr.str", T_ARR, (T_STR, ["a", "", "bc"])), ("arr.nested", T_ARR, (T_ARR, [(T_U32, [1, 2]), (T_STR, ["x"])])),
             ("general.alignment", T_U32, 64)]
    put("gguf", "every_type.gguf", gguf(every, [("t.f16", "F16", [4, 2], None), ("t.bf16", "BF16", [3], None)],
                                        align=64))
    # 4: Qwen2 (biases) and Qwen3 (q/k norms) shapes, gpt2 tokenizer with qwen2 pre
    qt = [x if x[0] != "tokenizer.ggml.pre" else ("tokenizer.ggml.pre", T_STR, "qwen2") for x in bpe_tok]
    put("gguf", "qwen2.gguf", gguf(llama_meta("qwen2", n_embd=4, n_head=2, n_kv=1, n_ff=4) + qt,
                                   llama_tensors(len(btoks), n_embd=4, n_head=2, n_kv=1, n_ff=4, bias=True, wtype="F16")))
    put("gguf", "qwen3.gguf", gguf(llama_meta("qwen3", n_embd=8, n_head=2, n_kv=1, n_ff=8) +
                                   [("qwen3.attention.key_length", T_U32, 4)],
                                   llama_tensors(16, n_embd=8, n_head=2, n_kv=1, n_ff=8, qk=True)))
    # 5: Gemma 3 shape (sliding window, pattern), SentencePiece tokenizer without a space prefix
    gm = llama_meta("gemma3", n_embd=4, n_head=2, n_kv=1, n_ff=4, ctx=64) + [
        ("gemma3.attention.sliding_window", T_U32, 16), ("gemma3.attention.sliding_window_pattern", T_U32, 2),
        ("gemma3.attention.key_length", T_U32, 2), ("gemma3.attention.value_length", T_U32, 2),
        ("tokenizer.ggml.add_space_prefix", T_BOOL, 0)]
    put("gguf", "gemma3.gguf", gguf(gm + spm_tok, llama_tensors(n_v, n_embd=4, n_head=2, n_kv=1, n_ff=4, qk=True,
                                                                 gemma=True, wtype="F16")))
    # 6: tensors of types wgllm does not read (kept aside by gguf_open_any) beside one it reads, and a Q4_K
    put("gguf", "unread_types.gguf", gguf([("general.architecture", T_STR, "llama")],
                                          [("a.iq2", "IQ2_XXS", [256], None), ("b.q4k", "Q4_K", [256, 1], None),
                                           ("c.f32", "F32", [2, 2, 1, 1], None)]))
    # 7: an empty file of the right header and a header-only v3
    put("gguf", "header_only.gguf", gguf([], []))


# ---- GGUF tokenizer arrays (structured) ----
def gtok(f0, f1, bos, eos, tokens, merges, text):
    def esc(s):
        b = s.encode() if isinstance(s, str) else s
        return b"".join(b"\x01" + bytes([c]) if c in (10, 1) else bytes([c]) for c in b)
    def section(lines):  # an empty section is one newline
        return b"\n".join(esc(x) for x in lines) + b"\n\n" if lines else b"\n"
    body = section(tokens) + section(merges)
    return bytes([f0, f1, bos, eos]) + body + (text.encode() if isinstance(text, str) else text)


def gen_gguf_tokenizer():
    spm = ["<unk>", "<s>", "</s>", "\u2581", "\u2581H", "ello", "\u2581Hello", "\u2581w", "orld", "\u2581world", "H",
           "e", "l", "o", "w", "r", "d", "\u2581t", "he", "\u2581the", "[INST]", "~unused", "<0x0A>"]
    text = "Hello world\nthe [INST] caf\u00e9 \U0001F600"
    # llama: scores + types, bos/eos, add_bos, byte tokens appended
    put("gguf_tokenizer", "spm_scores_types", gtok(0x00 | 0x20 | 0x40, 0x01 | 0x02 | 0x04 | 0x80, 1, 2, spm, [], text))
    put("gguf_tokenizer", "spm_no_prefix", gtok(0x20 | 0x40 | 0x80, 0x01 | 0x80, 1, 2, spm, [], text))
    put("gguf_tokenizer", "spm_scores_only", gtok(0x20, 0x80, 1, 2, spm, [], " leading  spaces"))
    put("gguf_tokenizer", "spm_raw_types", gtok(0x20 | 0x40, 0x20 | 0x80, 0, 0, spm, [], text))
    btoks, btypes, bmerges = bpe_vocab()
    extra = btoks[256:]  # the byte tokens come from flag 0x80 (appended after these, so ids differ)
    for i, pre in enumerate(["default", "llama-bpe", "qwen2", "tekken", "smaug-bpe", "gpt-2"]):
        f0 = 0x01 | ((i + 1) << 2) | (0x40 if i % 2 else 0)
        put("gguf_tokenizer", "bpe_" + pre, gtok(f0, 0x80 | 0x03 | (0x08 if i == 2 else 0), 12, 13, extra, bmerges,
                                                  "Hello the world's 12345 caf\u00e9\r\n\t x"))
    put("gguf_tokenizer", "bpe_no_pre", gtok(0x01, 0x80, 0, 0, extra, bmerges[:4], "the world"))
    put("gguf_tokenizer", "bpe_short_arrays", gtok(0x01 | 0x40, 0x80 | 0x10, 0, 0, extra, bmerges, "Hello"))
    put("gguf_tokenizer", "bpe_u32_merges", gtok(0x01, 0x80 | 0x40, 0, 0, extra, bmerges, "Hello"))
    put("gguf_tokenizer", "bert", gtok(0x03, 0x00, 0, 0, ["a", "b"], [], "ab"))


# ---- safetensors ----
def st_file(tensors, meta=None, dtype_override=None):
    """tensors: [(name, dtype, shape)] with generated data"""
    hdr, blobs, off = {}, [], 0
    if meta is not None:
        hdr["__metadata__"] = meta
    for name, dt, shape in tensors:
        n = 1
        for x in shape:
            n *= x
        es = {"F32": 4, "F16": 2, "BF16": 2}.get(dt, 4)
        if dt == "F32":
            data = b"".join(struct.pack("<f", ((i % 7) - 3) / 8.0) for i in range(n))
        else:
            data = b"".join(struct.pack("<H", (0x3C00 if dt == "F16" else 0x3F80) + (i % 8)) for i in range(n))
        data = data[:n * es]
        hdr[name] = {"dtype": dtype_override or dt, "shape": shape, "data_offsets": [off, off + len(data)]}
        blobs.append(data)
        off += len(data)
    h = json.dumps(hdr, separators=(",", ":")).encode()
    h += b" " * ((-len(h)) % 8)
    return struct.pack("<Q", len(h)) + h + b"".join(blobs)


def tiny_llama(dt):
    p = "model.layers.0."
    return [("model.embed_tokens.weight", dt, [8, 4]), ("model.norm.weight", dt, [4]),
            (p + "input_layernorm.weight", dt, [4]), (p + "post_attention_layernorm.weight", dt, [4]),
            (p + "self_attn.q_proj.weight", dt, [4, 4]), (p + "self_attn.k_proj.weight", dt, [2, 4]),
            (p + "self_attn.v_proj.weight", dt, [2, 4]), (p + "self_attn.o_proj.weight", dt, [4, 4]),
            (p + "mlp.gate_proj.weight", dt, [4, 4]), (p + "mlp.up_proj.weight", dt, [4, 4]),
            (p + "mlp.down_proj.weight", dt, [4, 4])]


def gen_safetensors():
    put("safetensors", "tiny_llama_f32.safetensors", st_file(tiny_llama("F32"), meta={"format": "pt"}))
    put("safetensors", "tiny_llama_bf16.safetensors", st_file(tiny_llama("BF16")))
    put("safetensors", "tiny_llama_f16.safetensors", st_file(tiny_llama("F16")))
    put("safetensors", "scalars_empty.safetensors", st_file([("s", "F32", []), ("e", "F16", [0, 3]),
                                                             ("m", "BF16", [1, 2, 1, 2])]))
    put("safetensors", "unknown_dtype.safetensors", st_file([("x", "F32", [2])], dtype_override="I64"))
    put("safetensors", "empty_header.safetensors", struct.pack("<Q", 8) + b"{}      ")


# ---- config.json ----
def gen_config_json():
    srcs = sorted(os.listdir(os.path.join(ROOT, "tests", "data", "models")))
    for d in srcs:
        p = os.path.join(ROOT, "tests", "data", "models", d, "config.json")
        if os.path.exists(p):
            put("config_json", d + ".json", open(p, "rb").read())
    put("config_json", "default.json", open(os.path.join(ROOT, "models", "default", "config.json"), "rb").read())
    base = json.load(open(os.path.join(ROOT, "tests", "data", "models", "gemma3", "config.json")))
    put("config_json", "gemma3_multimodal.json",
        json.dumps({"model_type": "gemma3", "tie_word_embeddings": True, "text_config": base,
                    "vision_config": {"hidden_size": 8}}, indent=1))
    mistral = {"model_type": "mistral", "vocab_size": 32, "hidden_size": 16, "num_hidden_layers": 2,
               "num_attention_heads": 4, "num_key_value_heads": 2, "intermediate_size": 32, "sliding_window": 8,
               "rope_theta": 1e6, "rope_scaling": {"type": "linear", "factor": 2.0}, "bos_token_id": [1, 2],
               "eos_token_id": 2, "max_position_embeddings": 64, "partial_rotary_factor": 0.5}
    put("config_json", "mistral_window_linear.json", json.dumps(mistral, indent=1))
    q = dict(mistral, model_type="qwen2", use_sliding_window=False, rope_scaling=None, hidden_act="silu",
             query_pre_attn_scalar=8)
    put("config_json", "qwen2_no_window.json", json.dumps(q, indent=1))


# ---- tokenizer.json ----
def bl_tokenizer():
    btoks, _, bmerges = bpe_vocab()
    vocab = {t: i for i, t in enumerate(btoks[:-3])}
    n = len(vocab)
    return {
        "version": "1.0", "truncation": None, "padding": None,
        "added_tokens": [{"id": n + i, "content": c, "single_word": False, "lstrip": False, "rstrip": False,
                          "normalized": False, "special": True}
                         for i, c in enumerate(["<|begin_of_text|>", "<|end_of_text|>", "<|eot_id|>"])],
        "normalizer": None,
        "pre_tokenizer": {"type": "Sequence", "pretokenizers": [
            {"type": "Split", "pattern": {"Regex": "(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|"
                                                    "\\p{N}{1,3}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|"
                                                    "\\s+(?!\\S)|\\s+"},
             "behavior": "Isolated", "invert": False},
            {"type": "ByteLevel", "add_prefix_space": False, "trim_offsets": True, "use_regex": False}]},
        "post_processor": {"type": "TemplateProcessing",
                           "single": [{"SpecialToken": {"id": "<|begin_of_text|>", "type_id": 0}},
                                      {"Sequence": {"id": "A", "type_id": 0}}],
                           "pair": [], "special_tokens": {"<|begin_of_text|>": {"id": "<|begin_of_text|>",
                                                                                "ids": [n], "tokens": ["<|begin_of_text|>"]}}},
        "decoder": {"type": "ByteLevel", "add_prefix_space": True, "trim_offsets": True, "use_regex": True},
        "model": {"type": "BPE", "dropout": None, "unk_token": None, "continuing_subword_prefix": None,
                  "end_of_word_suffix": None, "fuse_unk": False, "byte_fallback": False, "ignore_merges": True,
                  "vocab": vocab, "merges": bmerges}}


def spm_tokenizer(gemma=False):
    pieces = ["<unk>", "<s>", "</s>"] + ["<0x%02X>" % b for b in range(256)] + [
        "\u2581", "\u2581t", "he", "\u2581the", "\u2581H", "ello", "\u2581Hello", "H", "e", "l", "o", "t", "h",
        "\u2581w", "or", "ld", "\u2581world", "w", "r", "d", "\u2581\u2581"]
    vocab = {p: i for i, p in enumerate(pieces)}
    merges = [["\u2581", "t"], ["h", "e"], ["\u2581t", "he"], ["\u2581", "H"], ["e", "l"], "\u2581 w", "o r",
              "l d", ["\u2581", "\u2581"]]
    merges = [m for m in merges if (m if isinstance(m, list) else m.split(" "))[0] + (m if isinstance(m, list) else m.split(" "))[1] in vocab]
    added = [{"id": i, "content": c, "single_word": False, "lstrip": False, "rstrip": False, "normalized": False,
              "special": True} for i, c in enumerate(["<unk>", "<s>", "</s>"])]
    if gemma:
        added.append({"id": len(pieces), "content": "<start_of_turn>", "single_word": False, "lstrip": False,
                      "rstrip": False, "normalized": False, "special": True})
        added.append({"id": len(pieces) + 1, "content": "\n\n", "single_word": False, "lstrip": False,
                      "rstrip": False, "normalized": False, "special": False})
        norm = {"type": "Replace", "pattern": {"String": " "}, "content": "\u2581"}
        pre = {"type": "Split", "pattern": {"String": " "}, "behavior": "MergedWithPrevious", "invert": False}
        dec = {"type": "Sequence", "decoders": [{"type": "Replace", "pattern": {"String": "\u2581"}, "content": " "},
                                                {"type": "ByteFallback"}, {"type": "Fuse"}]}
    else:
        norm = {"type": "Sequence", "normalizers": [{"type": "Prepend", "prepend": "\u2581"},
                                                    {"type": "Replace", "pattern": {"String": " "}, "content": "\u2581"}]}
        pre = None
        dec = {"type": "Sequence", "decoders": [{"type": "Replace", "pattern": {"String": "\u2581"}, "content": " "},
                                                {"type": "ByteFallback"}, {"type": "Fuse"},
                                                {"type": "Strip", "content": " ", "start": 1, "stop": 0}]}
    return {"version": "1.0", "added_tokens": added, "normalizer": norm, "pre_tokenizer": pre,
            "post_processor": {"type": "TemplateProcessing",
                               "single": [{"SpecialToken": {"id": "<s>", "type_id": 0}},
                                          {"Sequence": {"id": "A", "type_id": 0}}],
                               "special_tokens": {"<s>": {"id": "<s>", "ids": [1], "tokens": ["<s>"]}}},
            "decoder": dec,
            "model": {"type": "BPE", "dropout": None, "unk_token": "<unk>", "fuse_unk": True, "byte_fallback": True,
                      "vocab": vocab, "merges": merges}}


def gen_tokenizer_json():
    put("tokenizer_json", "byte_level.json", json.dumps(bl_tokenizer(), ensure_ascii=False))
    put("tokenizer_json", "spm_llama2.json", json.dumps(spm_tokenizer(), ensure_ascii=False))
    put("tokenizer_json", "spm_gemma.json", json.dumps(spm_tokenizer(True), ensure_ascii=False))
    t = spm_tokenizer()
    t["normalizer"] = {"type": "NFC"}
    t["pre_tokenizer"] = {"type": "Sequence", "pretokenizers": [
        {"type": "Metaspace", "replacement": "\u2581", "prepend_scheme": "first", "split": True},
        {"type": "Digits", "individual_digits": True}]}
    t["decoder"] = {"type": "Metaspace", "replacement": "\u2581", "prepend_scheme": "first", "split": True}
    t["added_tokens"].append({"id": 3, "content": "</s>", "single_word": True, "lstrip": True, "rstrip": True,
                              "normalized": True, "special": False})
    put("tokenizer_json", "metaspace_digits.json", json.dumps(t, ensure_ascii=False))
    b = bl_tokenizer()
    b["pre_tokenizer"] = {"type": "ByteLevel", "add_prefix_space": True, "use_regex": True}
    b["post_processor"] = {"type": "ByteLevel"}
    b["decoder"] = None
    b["model"]["ignore_merges"] = False
    put("tokenizer_json", "byte_level_gpt2_regex_no_decoder.json", json.dumps(b, ensure_ascii=False))
    b = bl_tokenizer()
    b["pre_tokenizer"] = {"type": "Split", "pattern": {"String": "o"}, "behavior": "Contiguous", "invert": True}
    b["normalizer"] = {"type": "Replace", "pattern": {"String": "ll"}, "content": "l"}
    put("tokenizer_json", "split_string_invert.json", json.dumps(b, ensure_ascii=False))
    for f in sorted(os.listdir(os.path.join(ROOT, "tests", "data", "tokenizers"))):
        if f.startswith("unsupported_"):
            put("tokenizer_json", f, open(os.path.join(ROOT, "tests", "data", "tokenizers", f), "rb").read())


# ---- encode ----
def gen_encode():
    strings = json.load(open(os.path.join(ROOT, "tests", "data", "tokenizers", "strings.json")))["strings"]
    pick = ["sentence", "leading_space", "space_runs", "newlines", "accents", "combining", "cjk", "emoji_zwj",
            "code_py", "long_digits", "contractions", "special_llama3", "special_gemma", "special_qwen",
            "special_llama2", "special_near", "metaspace_literal", "byte_fallback", "control_chars", "unicode_spaces",
            "specials_adjacent", "unicode_digits"]
    by = {s["name"]: s["text"] for s in strings}
    for i, name in enumerate(pick):
        tok = i % 5
        flags = (i // 5 % 4) << 3
        put("encode", "%02d_%s" % (i, name), bytes([tok | flags]) + by[name].encode()[:600])
    put("encode", "invalid_utf8", bytes([0]) + b"ok \xc3\x28 \xed\xa0\x80 \xf4\x90\x80\x80 \xc0\xaf end\xe2\x82")
    put("encode", "ids_llama3", bytes([0x20]) + b"".join(struct.pack("<I", x) for x in [128000, 9906, 1917, 128009, 198]))
    put("encode", "ids_gemma3_bytes", bytes([0x22]) + b"".join(struct.pack("<I", x) for x in [2, 238, 239, 240, 106, 107]))
    put("encode", "ids_llama2_bytes", bytes([0x23]) + b"".join(struct.pack("<I", x) for x in [1, 243, 162, 140, 131, 29871]))

# ---- chat_template ----
# small templates for the constructs the model templates use less (macros, recursion, namespace, set and filter
# blocks, loop controls, slices, string methods, tojson, tests); each a seed of its own with the first conversation
CHAT_CONSTRUCTS = {
    "macro_recursion": "{% macro f(n) %}{% if n > 0 %}{{ n }},{{ f(n - 1) }}{% endif %}{% endmacro %}{{ f(5) }}",
    "namespace_loop": "{% set ns = namespace(c=0) %}{% for m in messages if m.role != 'system' %}{% set ns.c = "
                      "ns.c + 1 %}{{ loop.index }}/{{ loop.length }} {{ m.role|upper }}{% if loop.last %}{% break %}"
                      "{% endif %}{% else %}none{% endfor %}{{ ns.c }}",
    "set_filter_blocks": "{% set x %}{{ messages|length }} {{ 'a' * 3 }}{% endset %}{% filter upper %}{{ x|trim }}"
                         "{% endfilter %}{{ x|replace('a', 'b')|indent(2) }}",
    "slices_methods": "{{ messages[::-1][0].content[1:3] }}{{ 'a,b,,c'.split(',')|join('|') }}{{ ' x '.strip() }}"
                      "{{ 'Ab'.startswith('A') }}{{ ('x' ~ 3)|wordcount }}{{ 'café'|title }}{{ 'é'[0] }}",
    "tojson_items": "{% for k, v in {'a': [1, 2.5, none, true], 'b': {'c': 'ü\\n'}}.items() %}{{ k }}={{ v|tojson }}"
                    "{% endfor %}{{ tools|tojson(indent=2) }}{{ messages|map(attribute='role')|unique|list }}",
    "tests_ops": "{{ 7 // 2 }} {{ 7 % 3 }} {{ 2 ** 10 }} {{ 1 if x is defined else 2 }} {{ messages is iterable }}"
                 "{{ 'a' in 'abc' }} {{ [1,2] + [3] }} {{ (1, 2) }} {{ range(3)|list }} {{ -1.5|abs|int }}"
                 "{{ raise_exception('stop') if messages|length > 99 }}{{ strftime_now('%Y-%m-%d') }}",
    "whitespace_control": "  {%- for m in messages -%}\n    {{- m.content -}}\n  {%+ if true %} x {% endif -%}\n"
                          "{%- endfor %}\n{# comment #}\n{% raw %}{{ raw }}{% endraw %}",
    "generation_tag": "{% for m in messages %}{% if m.role == 'assistant' %}{% generation %}{{ m.content }}"
                      "{% endgeneration %}{% else %}{{ m.content }}{% endif %}{% endfor %}",
}


def gen_chat_template():
    # input: byte 0 flags (bit 0 add_generation_prompt, bits 1-3 a named template, bits 4-5 a built-in
    # conversation, bit 6 bos/eos), the template, a NUL, then {"messages", "tools", "kwargs"} (fuzz_chat_template.c)
    picks = ["multi_turn", "tool_call_then_answer", "content_parts", "tools", "thinking_enabled", "unicode"]
    for f in sorted(os.listdir(os.path.join(ROOT, "tests", "data", "chat"))):
        d = json.load(open(os.path.join(ROOT, "tests", "data", "chat", f)))
        name = f[:-len(".json")]
        cases = {c["name"]: c for c in d["cases"]}
        for i, case in enumerate(p for p in picks if p in cases):
            v = dict(cases[case]["vars"])
            req = {"messages": v.pop("messages")}
            if v.get("tools"):
                req["tools"] = v.pop("tools")
            kwargs = {k: x for k, x in v.items() if k not in ("tools", "documents", "add_generation_prompt")}
            if kwargs:
                req["kwargs"] = kwargs
            flags = (1 if cases[case]["vars"].get("add_generation_prompt") else 0) | (i % 4) << 4
            put("chat_template", "%s_%s" % (name, case),
                bytes([flags]) + d["template"].encode() + b"\0" + json.dumps(req, ensure_ascii=False).encode())
        put("chat_template", "%s_builtin" % name, bytes([0x41]) + d["template"].encode())
    for name, t in CHAT_CONSTRUCTS.items():
        put("chat_template", "jinja_" + name, bytes([0x01]) + t.encode())
    for i, n in enumerate(["llama3", "chatml", "gemma", "llama2"]):
        put("chat_template", "named_" + n, bytes([(i + 1) << 1 | (i % 4) << 4 | 1]))


def main():
    gen_gguf()
    gen_gguf_tokenizer()
    gen_safetensors()
    gen_config_json()
    gen_tokenizer_json()
    gen_encode()
    gen_chat_template()
    for h in sorted(os.listdir(OUT)):
        d = os.path.join(OUT, h)
        sizes = [os.path.getsize(os.path.join(d, f)) for f in os.listdir(d)]
        print("%-16s %3d seeds, %6d bytes, largest %d" % (h, len(sizes), sum(sizes), max(sizes)))


if __name__ == "__main__":
    sys.exit(main())
