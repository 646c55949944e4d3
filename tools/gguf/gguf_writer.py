"""The project's one GGUF writer in Python: a GGUF v3 writer (and a small reader for checks) in llama.cpp's
conventions, its quantizers (Q8_0, Q4_0, bit-exact with ggml's reference quantize_row_*_ref), and the Llama
export that tools/train_default/train.py uses (the layout llama.cpp's convert_hf_to_gguf.py writes: dims
innermost first, attn_q/attn_k rows permuted for adjacent-pair RoPE, Q8_0 linear weights and embedding, F32
norms, byte-level BPE ("gpt2") tokenizer metadata). tools/refs/make_refs.py writes its GGUF fixtures with
write_gguf, q4_0, q8_0 and permute_rows_np. (The C side has one writer too: src/dev/gguf_write.h.)

Pure Python + struct; numpy is used when the weights are numpy arrays (the training machine), and a plain
Python path (PyMat) gives byte-identical output without numpy (tests on machines that lack it). q4_0 has
only the numpy path.

File layout (GGUF v3, little-endian):
    "GGUF", u32 version=3, u64 n_tensors, u64 n_kv
    n_kv x { string key, u32 type, value }            string = u64 length + UTF-8 bytes
    n_tensors x { string name, u32 n_dims, u64 ne[n_dims] (innermost first), u32 ggml_type, u64 offset }
    zero padding to general.alignment, then the data section; offsets are relative to its start and aligned.
"""
import math
import os
import struct

try:
    import numpy as np
except ImportError:  # the pure-Python path still works
    np = None

GGML_F32, GGML_F16, GGML_Q4_0, GGML_Q8_0, GGML_BF16 = 0, 1, 2, 8, 30
QK8_0 = 32                      # Q8_0 block: f16 scale + 32 int8
Q8_0_BLOCK_BYTES = 2 + QK8_0
QK4_0 = 32                      # Q4_0 block: f16 scale + 16 bytes of nibbles
Q4_0_BLOCK_BYTES = 2 + QK4_0 // 2
# ggml type id: (elements a block, bytes a block) of Q4_1, Q5_0, Q5_1, the K-quants, IQ4_NL and IQ4_XS
BLOCK_TYPES = {3: (32, 20), 6: (32, 22), 7: (32, 24), 10: (256, 84), 11: (256, 110), 12: (256, 144),
               13: (256, 176), 14: (256, 210), 20: (32, 18), 23: (256, 136)}
FTYPE_MOSTLY_Q8_0 = 7           # general.file_type
ALIGNMENT = 32

# GGUF value types
_GT = {"u8": 0, "i8": 1, "u16": 2, "i16": 3, "u32": 4, "i32": 5, "f32": 6, "bool": 7, "str": 8, "arr": 9,
       "u64": 10, "i64": 11, "f64": 12}
_FMT = {"u8": "<B", "i8": "<b", "u16": "<H", "i16": "<h", "u32": "<I", "i32": "<i", "f32": "<f", "bool": "<?",
        "u64": "<Q", "i64": "<q", "f64": "<d"}


# ---------------------------------------------------------------- container

def _gstr(s):
    b = s.encode("utf-8")
    return struct.pack("<Q", len(b)) + b


def _val(t, v):
    if t == "str":
        return _gstr(v)
    return struct.pack(_FMT[t], v)


def tensor_nbytes(ggml_type, ne):
    n = 1
    for x in ne:
        n *= x
    if ggml_type == GGML_F32:
        return 4 * n
    if ggml_type in (GGML_F16, GGML_BF16):
        return 2 * n
    if ggml_type == GGML_Q8_0:
        assert ne[0] % QK8_0 == 0, f"Q8_0 rows must be a multiple of {QK8_0} (ne[0]={ne[0]})"
        return n // QK8_0 * Q8_0_BLOCK_BYTES
    if ggml_type == GGML_Q4_0:
        assert ne[0] % QK4_0 == 0, f"Q4_0 rows must be a multiple of {QK4_0} (ne[0]={ne[0]})"
        return n // QK4_0 * Q4_0_BLOCK_BYTES
    if ggml_type in BLOCK_TYPES:  # the other block types (ggml_blocks.py makes their data)
        qk, bb = BLOCK_TYPES[ggml_type]
        assert ne[0] % qk == 0, f"ggml type {ggml_type}: rows must be a multiple of {qk} (ne[0]={ne[0]})"
        return n // qk * bb
    raise ValueError(f"unsupported ggml type {ggml_type}")


def _as_bytes(data):
    """bytes / bytearray as they are; a numpy array (the quantizers' blobs, float arrays) as its raw bytes."""
    return data if isinstance(data, (bytes, bytearray)) else data.tobytes()


def write_gguf(path, kv, tensors, alignment=ALIGNMENT):
    """kv: list of (key, type, value); type is a scalar type name ("u32", "f32", "str", "bool", ...) or
    ("arr", elem_type) with a list value. tensors: list of (name, ggml_type, ne, data), ne innermost first, data
    bytes or a numpy array (its raw bytes). Writes path atomically (a temporary file renamed over it). Returns
    the file size."""
    tensors = [(name, gtype, ne, _as_bytes(data)) for name, gtype, ne, data in tensors]
    keys = [k for k, _, _ in kv]
    assert len(set(keys)) == len(keys), "duplicate GGUF keys"
    names = [t[0] for t in tensors]
    assert len(set(names)) == len(names), "duplicate tensor names"
    align_kv = [v for k, _, v in kv if k == "general.alignment"]
    assert not align_kv or align_kv[0] == alignment, "general.alignment disagrees with the layout"

    head = bytearray(b"GGUF")
    head += struct.pack("<IQQ", 3, len(tensors), len(kv))
    for key, t, v in kv:
        head += _gstr(key)
        if isinstance(t, tuple):
            assert t[0] == "arr" and t[1] in _GT and t[1] != "arr", t
            head += struct.pack("<IIQ", _GT["arr"], _GT[t[1]], len(v))
            if t[1] == "str":
                head += b"".join(_gstr(x) for x in v)
            else:
                head += struct.pack("<%d%s" % (len(v), _FMT[t[1]][1]), *v)
        else:
            head += struct.pack("<I", _GT[t]) + _val(t, v)
    offs, off = [], 0
    for name, gtype, ne, data in tensors:
        want = tensor_nbytes(gtype, ne)
        assert len(data) == want, f"{name}: {len(data)} bytes, type {gtype} ne {list(ne)} needs {want}"
        head += _gstr(name) + struct.pack("<I", len(ne)) + b"".join(struct.pack("<Q", x) for x in ne)
        head += struct.pack("<IQ", gtype, off)
        offs.append(off)
        off = (off + len(data) + alignment - 1) // alignment * alignment
    head += b"\0" * ((-len(head)) % alignment)
    tmp = f"{path}.tmp.{os.getpid()}"
    with open(tmp, "wb") as f:
        f.write(head)
        pos = 0
        for (name, _, _, data), o in zip(tensors, offs):
            f.write(b"\0" * (o - pos))
            f.write(data)
            pos = o + len(data)
        f.flush()
        os.fsync(f.fileno())
        size = f.tell()
    os.replace(tmp, path)
    return size


def read_gguf(path):
    """Minimal reader for checks: returns (kv dict key -> value, tensors dict name -> (ggml_type, ne, bytes))."""
    buf = open(path, "rb").read()
    p = 0

    def rd(fmt):
        nonlocal p
        v = struct.unpack_from(fmt, buf, p)
        p += struct.calcsize(fmt)
        return v[0] if len(v) == 1 else v

    def rstr():
        nonlocal p
        n = rd("<Q")
        s = buf[p:p + n].decode("utf-8")
        p += n
        return s

    inv = {v: k for k, v in _GT.items()}

    def rval(t):
        name = inv[t]
        return rstr() if name == "str" else rd(_FMT[name])

    assert buf[:4] == b"GGUF", "not a GGUF file"
    p = 4
    version, n_t, n_kv = rd("<IQQ")
    assert version == 3, version
    kv = {}
    for _ in range(n_kv):
        key = rstr()
        t = rd("<I")
        if inv[t] == "arr":
            et, n = rd("<IQ")
            kv[key] = [rval(et) for _ in range(n)]
        else:
            kv[key] = rval(t)
    infos = []
    for _ in range(n_t):
        name = rstr()
        nd = rd("<I")
        ne = [rd("<Q") for _ in range(nd)]
        gtype, off = rd("<IQ")
        infos.append((name, gtype, ne, off))
    align = kv.get("general.alignment", ALIGNMENT)
    base = (p + align - 1) // align * align
    tensors = {}
    for name, gtype, ne, off in infos:
        assert off % align == 0, f"{name}: offset {off} not aligned to {align}"
        n = tensor_nbytes(gtype, ne)
        assert base + off + n <= len(buf), f"{name}: data past the end of the file"
        tensors[name] = (gtype, ne, buf[base + off:base + off + n])
    return kv, tensors


# ---------------------------------------------------------------- matrices without numpy

class PyMat:
    """A row-major float matrix (or vector when cols is None) for the numpy-free path."""

    def __init__(self, rows, cols, data):
        n = rows * (cols or 1)
        assert len(data) == n, (rows, cols, len(data))
        self.rows, self.cols, self.data = rows, cols, [float(x) for x in data]

    @property
    def shape(self):
        return (self.rows,) if self.cols is None else (self.rows, self.cols)


def _shape(w):
    return tuple(w.shape)


def _f32(x):
    return struct.unpack("<f", struct.pack("<f", x))[0]


def _roundf(x):
    """C roundf: halves away from zero (x is a float32 value held in a double: x +- 0.5 is exact)."""
    return int(math.floor(x + 0.5)) if x >= 0 else -int(math.floor(-x + 0.5))


# ---------------------------------------------------------------- quantization (ggml quantize_row_q8_0_ref)

def q8_0(w, ties_to_even=False):
    """Q8_0 of a 2-D [rows, cols] matrix, blocks of 32 along each row: d = max|x| / 127 (stored as f16),
    q = roundf(x / d) computed as x * (1/d) in float32, as ggml's reference quantizer does.
    Returns (row_blobs, dequantized) where row_blobs is a list of per-row bytes (pure path) or a uint8 array
    [rows, row_bytes] (numpy path), and dequantized = q * f16(d) in the input's representation.
    ties_to_even: round exact halves of x * (1/d) to even (numpy's round) instead of away from zero (C
    roundf). Not ggml's rule; make_refs.py's committed fixtures were quantized that way, so it passes it to
    regenerate them byte for byte. The two differ only where x * (1/d) is exactly k + 0.5 with k even."""
    if isinstance(w, PyMat):
        return _q8_0_py(w, ties_to_even)
    assert np is not None
    return _q8_0_np(w, ties_to_even)


def _q8_0_np(w, ties_to_even=False):
    assert w.ndim == 2 and w.shape[1] % QK8_0 == 0, w.shape
    r, c = w.shape
    b = np.ascontiguousarray(w, dtype=np.float32).reshape(r, c // QK8_0, QK8_0)
    amax = np.abs(b).max(-1)
    d = (amax / np.float32(127.0)).astype(np.float32)
    inv = np.zeros_like(d)
    nz = d != 0
    inv[nz] = np.float32(1.0) / d[nz]
    x0 = (b * inv[..., None]).astype(np.float32).astype(np.float64)   # the float32 product, held exactly
    q = (np.round(x0) if ties_to_even else np.sign(x0) * np.floor(np.abs(x0) + 0.5)).astype(np.int8)
    d16 = d.astype(np.float16)
    blob = np.concatenate([d16.view(np.uint8).reshape(r, c // QK8_0, 2), q.view(np.uint8)], -1)
    deq = (q.astype(np.float32) * d16.astype(np.float32)[..., None]).reshape(r, c)
    return blob.reshape(r, c // QK8_0 * Q8_0_BLOCK_BYTES), deq


def _q8_0_py(w, ties_to_even=False):
    assert w.cols is not None and w.cols % QK8_0 == 0, w.shape
    rows, deq = [], []
    for i in range(w.rows):
        row = bytearray()
        for j in range(0, w.cols, QK8_0):
            blk = [_f32(x) for x in w.data[i * w.cols + j:i * w.cols + j + QK8_0]]
            amax = max(abs(x) for x in blk)
            d = _f32(amax / 127.0)
            inv = _f32(1.0 / d) if d != 0 else 0.0
            rnd = round if ties_to_even else _roundf   # Python's round: halves to even
            q = [max(-128, min(127, rnd(_f32(x * inv)))) for x in blk]
            d16b = struct.pack("<e", d)
            d16 = struct.unpack("<e", d16b)[0]
            row += d16b + struct.pack("<32b", *q)
            deq.extend(_f32(x * d16) for x in q)
        rows.append(bytes(row))
    return rows, PyMat(w.rows, w.cols, deq)


def dequantize_q8_0(data, ne):
    """Inverse of the stored form: flat list of floats (pure Python; for checks)."""
    n = len(data) // Q8_0_BLOCK_BYTES
    out = []
    for k in range(n):
        blk = data[k * Q8_0_BLOCK_BYTES:(k + 1) * Q8_0_BLOCK_BYTES]
        d = struct.unpack_from("<e", blk, 0)[0]
        out.extend(_f32(q * d) for q in struct.unpack_from("<32b", blk, 2))
    assert len(out) == ne[0] * ne[1]
    return out


# ---------------------------------------------------------------- quantization (ggml quantize_row_q4_0_ref)

def q4_0(w):
    """Q4_0 of a 2-D numpy [rows, cols] matrix, blocks of 32 along each row, as ggml's reference quantizer:
    m = the element of largest |x| (signed), d = m / -8 (stored as f16), q = min(15, int(x * (1/d) + 8.5))
    (truncation), byte j of a block holding q[j] (low nibble) and q[j + 16] (high nibble).
    Returns (blob, dequantized): blob a uint8 array [rows, row_bytes], dequantized = (q - 8) * f16(d)."""
    assert np is not None, "q4_0 needs numpy"
    r, c = w.shape
    assert c % QK4_0 == 0, w.shape
    b = w.reshape(r, c // QK4_0, QK4_0).astype(np.float32)
    mx = np.take_along_axis(b, np.abs(b).argmax(-1)[..., None], -1)[..., 0]
    d = mx / -8.0
    inv = np.where(d != 0, 1.0 / np.where(d != 0, d, 1), 0)
    q = np.minimum(15, (b * inv[..., None] + 8.5).astype(np.int8)).astype(np.uint8)
    d16 = d.astype(np.float16)
    blob = np.concatenate([d16.view(np.uint8).reshape(r, c // QK4_0, 2),
                           (q[..., :16] | (q[..., 16:] << 4)).astype(np.uint8)], -1)
    deq = ((q.astype(np.float32) - 8.0) * d16.astype(np.float32)[..., None]).reshape(r, c)
    return blob.reshape(r, c // QK4_0 * Q4_0_BLOCK_BYTES), deq


# ---------------------------------------------------------------- the Llama q/k permutation

def rope_permutation(rows, n_head):
    """Row order llama.cpp's converter gives attn_q/attn_k: new[r] = old[perm[r]], the same as
    w.reshape(n_head, 2, rows // n_head // 2, cols).swapaxes(1, 2).reshape(rows, cols): within each head,
    HF's half-split pairs (i, i + hd/2) become adjacent rows (2i, 2i+1)."""
    assert rows % (2 * n_head) == 0, (rows, n_head)
    half = rows // n_head // 2
    return [h * 2 * half + j * half + i for h in range(n_head) for i in range(half) for j in range(2)]


def permute_rows_np(w, n_head):
    """convert_hf_to_gguf.py's form (numpy): the same row order as rope_permutation."""
    r = w.shape[0]
    return w.reshape(n_head, 2, r // n_head // 2, *w.shape[1:]).swapaxes(1, 2).reshape(w.shape)


# ---------------------------------------------------------------- Llama export

HF_LINEARS = [("self_attn.q_proj", "attn_q"), ("self_attn.k_proj", "attn_k"), ("self_attn.v_proj", "attn_v"),
              ("self_attn.o_proj", "attn_output"), ("mlp.gate_proj", "ffn_gate"), ("mlp.up_proj", "ffn_up"),
              ("mlp.down_proj", "ffn_down")]


def _f32_bytes(w):
    if isinstance(w, PyMat):
        return struct.pack("<%df" % len(w.data), *w.data)
    return np.ascontiguousarray(w, dtype="<f4").tobytes()


def _q8_tensor(w, perm=None):
    """(bytes, dequantized unpermuted) for a 2-D weight; rows quantize independently, so permuting the
    quantized rows equals quantizing the permuted matrix."""
    blobs, deq = q8_0(w)
    if isinstance(w, PyMat):
        order = perm if perm is not None else range(w.rows)
        return b"".join(blobs[i] for i in order), deq
    if perm is not None:
        blobs = blobs[np.asarray(perm)]
    return np.ascontiguousarray(blobs).tobytes(), deq


def llama_gguf_kv(hp, tok, name):
    """Metadata as llama.cpp's converter writes it for a Llama with a byte-level BPE (Llama 3 style) vocab.
    hp: dict with vocab_size, hidden_size, intermediate_size, num_hidden_layers, num_attention_heads,
    num_key_value_heads, head_dim, max_position_embeddings, rope_theta, rms_norm_eps.
    tok: dict with tokens (list of str by id), token_types (list of int), merges (list of "a b"), bos, eos."""
    V = hp["vocab_size"]
    assert len(tok["tokens"]) == V and len(tok["token_types"]) == V, (len(tok["tokens"]), V)
    assert all(" " in m for m in tok["merges"])
    return [
        ("general.architecture", "str", "llama"),
        ("general.type", "str", "model"),
        ("general.name", "str", name),
        ("general.alignment", "u32", ALIGNMENT),
        ("general.file_type", "u32", FTYPE_MOSTLY_Q8_0),
        ("general.quantization_version", "u32", 2),
        ("llama.context_length", "u32", hp["max_position_embeddings"]),
        ("llama.embedding_length", "u32", hp["hidden_size"]),
        ("llama.block_count", "u32", hp["num_hidden_layers"]),
        ("llama.feed_forward_length", "u32", hp["intermediate_size"]),
        ("llama.rope.dimension_count", "u32", hp["head_dim"]),
        ("llama.attention.head_count", "u32", hp["num_attention_heads"]),
        ("llama.attention.head_count_kv", "u32", hp["num_key_value_heads"]),
        ("llama.attention.key_length", "u32", hp["head_dim"]),
        ("llama.attention.value_length", "u32", hp["head_dim"]),
        ("llama.attention.layer_norm_rms_epsilon", "f32", hp["rms_norm_eps"]),
        ("llama.rope.freq_base", "f32", hp["rope_theta"]),
        ("llama.vocab_size", "u32", V),
        ("tokenizer.ggml.model", "str", "gpt2"),
        ("tokenizer.ggml.pre", "str", "llama-bpe"),
        ("tokenizer.ggml.tokens", ("arr", "str"), list(tok["tokens"])),
        ("tokenizer.ggml.token_type", ("arr", "i32"), list(tok["token_types"])),
        ("tokenizer.ggml.merges", ("arr", "str"), list(tok["merges"])),
        ("tokenizer.ggml.bos_token_id", "u32", tok["bos"]),
        ("tokenizer.ggml.eos_token_id", "u32", tok["eos"]),
        ("tokenizer.ggml.add_bos_token", "bool", True),
        ("tokenizer.ggml.add_eos_token", "bool", False),
    ]


def export_llama_gguf(path, hp, sd, tok, name):
    """Writes a tied-embedding Llama as GGUF. sd maps Hugging Face names (model.embed_tokens.weight,
    model.norm.weight, model.layers.N.<proj>.weight, ...) to numpy float32 arrays or PyMat. Returns
    (file size, deq) where deq maps the HF names of the quantized tensors to their dequantized values
    (unpermuted, HF layout): load them into a copy of the model to get the GGUF model's reference."""
    H, V, I = hp["hidden_size"], hp["vocab_size"], hp["intermediate_size"]
    nh, nkv, hd = hp["num_attention_heads"], hp["num_key_value_heads"], hp["head_dim"]
    expect = {"self_attn.q_proj": (nh * hd, H), "self_attn.k_proj": (nkv * hd, H), "self_attn.v_proj": (nkv * hd, H),
              "self_attn.o_proj": (H, nh * hd), "mlp.gate_proj": (I, H), "mlp.up_proj": (I, H),
              "mlp.down_proj": (H, I)}
    assert "lm_head.weight" not in sd or sd["lm_head.weight"] is sd["model.embed_tokens.weight"] or \
        _shape(sd["lm_head.weight"]) == (V, H), "lm_head"
    deq, ts = {}, []

    emb = sd["model.embed_tokens.weight"]
    assert _shape(emb) == (V, H), _shape(emb)
    blob, deq["model.embed_tokens.weight"] = _q8_tensor(emb)
    ts.append(("token_embd.weight", GGML_Q8_0, [H, V], blob))
    norm = sd["model.norm.weight"]
    assert _shape(norm) == (H,), _shape(norm)
    ts.append(("output_norm.weight", GGML_F32, [H], _f32_bytes(norm)))
    for i in range(hp["num_hidden_layers"]):
        p = f"model.layers.{i}."
        for hf, gg in (("input_layernorm", "attn_norm"), ("post_attention_layernorm", "ffn_norm")):
            w = sd[p + hf + ".weight"]
            assert _shape(w) == (H,), (hf, _shape(w))
            ts.append((f"blk.{i}.{gg}.weight", GGML_F32, [H], _f32_bytes(w)))
        for hf, gg in HF_LINEARS:
            w = sd[p + hf + ".weight"]
            assert _shape(w) == expect[hf], (p + hf, _shape(w), expect[hf])
            perm = rope_permutation(w.shape[0], nh) if gg == "attn_q" else \
                rope_permutation(w.shape[0], nkv) if gg == "attn_k" else None
            blob, deq[p + hf + ".weight"] = _q8_tensor(w, perm)
            ts.append((f"blk.{i}.{gg}.weight", GGML_Q8_0, [w.shape[1], w.shape[0]], blob))
    # llama.cpp's order: token_embd, output_norm, then blk.N.* (the loader looks tensors up by name anyway)
    size = write_gguf(path, llama_gguf_kv(hp, tok, name), ts)
    return size, deq


# ---------------------------------------------------------------- tokenizer.json -> GGUF arrays

def tokenizer_arrays(tokenizer_json, bos_text, eos_text):
    """tokens by id (byte-level strings as stored), token types (3 control for special added tokens,
    4 user-defined for other added tokens, 1 normal), merges as "a b", bos/eos ids, from a parsed
    tokenizer.json (dict)."""
    model = tokenizer_json["model"]
    assert model["type"] == "BPE", model["type"]
    by_id = {}
    for t, i in model["vocab"].items():
        assert i not in by_id, f"id {i} twice in the vocab"
        by_id[i] = t
    types = {}
    for a in tokenizer_json.get("added_tokens", []):
        if a["id"] in by_id:
            assert by_id[a["id"]] == a["content"], (a, by_id[a["id"]])
        by_id[a["id"]] = a["content"]
        types[a["id"]] = 3 if a.get("special") else 4
    n = max(by_id) + 1
    missing = [i for i in range(n) if i not in by_id]
    assert not missing, f"ids without tokens: {missing[:10]}"
    tokens = [by_id[i] for i in range(n)]
    merges = [m if isinstance(m, str) else " ".join(m) for m in model.get("merges", [])]
    for m in merges:
        assert m.count(" ") == 1, f"merge {m!r} is not two byte-level pieces"
    ids = {t: i for i, t in enumerate(tokens)}
    return {"tokens": tokens, "token_types": [types.get(i, 1) for i in range(n)], "merges": merges,
            "bos": ids[bos_text], "eos": ids[eos_text]}
