"""The hostile inputs of tests/test_bounds.sh (issue 27), each written from the bundled model (models/default and
models/default.gguf) by plain byte writes, so that the biggest (100 MB) take well under a second.
Usage: python3 tests/tools/bounds_inputs.py KIND OUT [ARG]   (run from the repository root)
  tokenizer OUT KIND       OUT/tokenizer.json: the default one with a hostile pipeline (KIND: replace28,
                           bytelevel16, regex, recurse)
  zeros OUT MB [HEAD TAIL] OUT: HEAD + "0,0,...,0" + TAIL of about MB megabytes (valid JSON: [0,0,...] by default)
  st_zeros OUT MB          OUT: a safetensors file whose header is {"x":[0,0,...]} of about MB megabytes
  st_wide OUT MB VALUES    OUT: the default model.safetensors with a header of about MB megabytes that holds VALUES
                           JSON values: its tensors and a __metadata__ of short members and one long string
  wide OUT FILE MB VALUES  OUT: models/default/FILE (a JSON object) with such a "junk" member
  st_overlap OUT           OUT: the default model.safetensors with two tensors of the same size at one data range
  config OUT KEY=JSON...   OUT: the default config.json with each KEY set to JSON (KEY+=JSON: the pair added
                           before the existing one, a duplicate key)
  gguf_unused OUT N TYPE   OUT: models/default.gguf with N more tensors the model does not use, of ggml type TYPE
                           (0: F32, read; 16: IQ2_XXS, kept aside unread)
  gguf_keys OUT N          OUT: a GGUF of N u8 metadata keys and no tensors
  gguf_long OUT MIB        OUT: a GGUF whose one string value is MIB MiB (a sparse file: its bytes are zeros)
"""
import json
import os
import struct
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
DEFAULT = os.path.join(ROOT, "models", "default")
CHUNK = 1 << 20


def write_zeros_json(f, nbytes, head=b"[", tail=b"]"):
    """head + "0,0,...,0" + tail, about nbytes in all, written a megabyte at a time"""
    f.write(head)
    body = nbytes - len(head) - len(tail) - 1
    block = b"0," * (CHUNK // 2)
    while body >= len(block):
        f.write(block)
        body -= len(block)
    f.write(b"0," * (max(body, 0) // 2) + b"0" + tail)


def tokenizer(kind, out):
    tok = json.load(open(os.path.join(DEFAULT, "tokenizer.json")))
    if kind == "replace28":  # 28 chained Replace a -> aa: "a" would become 2^28 bytes
        tok["normalizer"] = {"type": "Sequence", "normalizers": [
            {"type": "Replace", "pattern": {"String": "a"}, "content": "aa"}] * 28}
    elif kind == "bytelevel16":  # each ByteLevel doubles non-ASCII text: 2^16 times
        tok["pre_tokenizer"] = {"type": "Sequence", "pretokenizers": [
            {"type": "ByteLevel", "add_prefix_space": False, "trim_offsets": True, "use_regex": False}] * 16}
    elif kind in ("regex", "recurse"):  # backtracking, and recursing forever
        pattern = "a{0,100}a{0,100}a{0,100}b|a" if kind == "regex" else "(?R)?a"
        tok["pre_tokenizer"] = {"type": "Split", "pattern": {"Regex": pattern}, "behavior": "Isolated",
                                "invert": False}
    else:
        sys.exit(f"bounds_inputs.py: unknown tokenizer kind {kind}")
    os.makedirs(out, exist_ok=True)
    json.dump(tok, open(os.path.join(out, "tokenizer.json"), "w"))


def read_st(path):
    data = open(path, "rb").read()
    n = struct.unpack_from("<Q", data)[0]
    return json.loads(data[8:8 + n]), data[8 + n:]


def write_st(path, header_bytes, body):
    header_bytes += b" " * (-len(header_bytes) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(header_bytes)) + header_bytes + body)


def st_zeros(out, mb):
    with open(out, "wb") as f:
        f.write(b"\0" * 8)
        write_zeros_json(f, mb * 1000000, b'{"x":[', b"]}")
        n = f.tell() - 8
        f.seek(0)
        f.write(struct.pack("<Q", n))


def shape_values(b):
    """the values src/base/json_shape.c counts in JSON text b: 1 + arrays and objects + commas outside strings"""
    n, i, in_str = 1, 0, False
    while i < len(b):
        c = b[i]
        if in_str:
            if c == 0x5C:  # a backslash: the escaped character is skipped
                i += 1
            elif c == 0x22:
                in_str = False
        elif c == 0x22:
            in_str = True
        elif c in b"[{,":
            n += 1
        i += 1
    return n


def json_wide(base, mb, values, member="junk"):
    """the JSON object base (bytes) with a member (named member) {"a": "", "a": "", ..., "pad": "xxx..."} added: mb
    megabytes in all holding `values` values as json_shape counts them, each member a node with two strings (the most
    heap a value takes in cJSON)"""
    head = base.rstrip()[:-1] + b',"' + member.encode() + b'":{'
    members = values - shape_values(head + b'"pad":""}}')
    pad = mb * 1000000 - len(head) - 7 * members - 12
    return head + b'"a":"",' * members + b'"pad":"' + b"x" * max(pad, 0) + b'"}}'


def st_wide(out, mb, values):
    """the default model.safetensors with its header made json_wide (the member __metadata__, which the loader
    skips): mb megabytes, `values` values"""
    header, body = read_st(os.path.join(DEFAULT, "model.safetensors"))
    header.pop("__metadata__", None)
    write_st(out, json_wide(json.dumps(header).encode(), mb, values, "__metadata__"), body)


def st_overlap(out):
    header, body = read_st(os.path.join(DEFAULT, "model.safetensors"))
    by_size = {}
    for name, e in header.items():
        if name == "__metadata__":
            continue
        size = e["data_offsets"][1] - e["data_offsets"][0]
        if size in by_size:  # the second of two equal sizes takes the first's bytes
            e["data_offsets"] = list(header[by_size[size]]["data_offsets"])
            break
        by_size[size] = name
    else:
        sys.exit("bounds_inputs.py: no two tensors of one size in the default model")
    write_st(out, json.dumps(header).encode(), body)


def config(out, pairs):
    text = open(os.path.join(DEFAULT, "config.json")).read().strip()
    assert text.startswith("{")
    cfg = json.loads(text)
    added = []
    for p in pairs:
        key, value = p.split("=", 1)
        if key.endswith("+"):
            added.append(json.dumps(key[:-1]) + ": " + value)
        else:
            cfg[key] = json.loads(value)
    body = json.dumps(cfg, indent=2)
    open(out, "w").write("{" + "".join(a + ",\n" for a in added) + body[1:])


def gguf_str(s):
    b = s.encode() if isinstance(s, str) else s
    return struct.pack("<Q", len(b)) + b


SCALAR = {0: 1, 1: 1, 2: 2, 3: 2, 4: 4, 5: 4, 6: 4, 7: 1, 10: 8, 11: 8, 12: 8}


def skip_value(buf, p, t):
    if t == 8:
        return p + 8 + struct.unpack_from("<Q", buf, p)[0]
    if t == 9:
        et, n = struct.unpack_from("<IQ", buf, p)
        p += 12
        for _ in range(n):
            p = skip_value(buf, p, et)
        return p
    return p + SCALAR[t]


def gguf_unused(out, n, gtype):
    """models/default.gguf's key/values and tensors as they are, then n tensors of 32 bytes each after its data that
    the model does not use: of ggml type gtype, 0 (F32, 8 elements) or 16 (IQ2_XXS, which wgllm keeps aside unread;
    256 elements, their bytes running to the next tensor)"""
    buf = open(os.path.join(ROOT, "models", "default.gguf"), "rb").read()
    n_t, n_kv = struct.unpack_from("<QQ", buf, 8)
    p = 24
    for _ in range(n_kv):
        p += 8 + struct.unpack_from("<Q", buf, p)[0]
        t = struct.unpack_from("<I", buf, p)[0]
        p = skip_value(buf, p + 4, t)
    kv_end = p
    for _ in range(n_t):
        p += 8 + struct.unpack_from("<Q", buf, p)[0]
        nd = struct.unpack_from("<I", buf, p)[0]
        p += 4 + 8 * nd + 12
    align = 32  # the default file's (no general.alignment key)
    data = buf[(p + align - 1) // align * align:]
    start = (len(data) + align - 1) // align * align
    infos = b"".join(gguf_str("unused.%06d" % i) + struct.pack("<IQIQ", 1, 8 if gtype == 0 else 256, gtype, start + 32 * i)
                     for i in range(n))
    head = buf[:8] + struct.pack("<QQ", n_t + n, n_kv) + buf[24:p] + infos
    with open(out, "wb") as f:
        f.write(head + b"\0" * (-len(head) % align) + data + b"\0" * (start - len(data) + 32 * n))


def gguf_keys(out, n):
    with open(out, "wb") as f:
        f.write(b"GGUF" + struct.pack("<IQQ", 3, 0, n))
        f.write(b"".join(gguf_str("k.%07d" % i) + struct.pack("<IB", 0, 1) for i in range(n)))


def gguf_long(out, mib):
    head = b"GGUF" + struct.pack("<IQQ", 3, 0, 1) + gguf_str("general.name") + struct.pack("<IQ", 8, mib << 20)
    with open(out, "wb") as f:
        f.write(head)
        f.truncate(len(head) + (mib << 20))


def main():
    kind, out, args = sys.argv[1], sys.argv[2], sys.argv[3:]
    if kind == "tokenizer":
        tokenizer(args[0], out)
    elif kind == "zeros":
        with open(out, "wb") as f:
            if len(args) > 1:
                write_zeros_json(f, int(args[0]) * 1000000, args[1].encode(), args[2].encode())
            else:
                write_zeros_json(f, int(args[0]) * 1000000)
    elif kind == "st_zeros":
        st_zeros(out, int(args[0]))
    elif kind == "st_wide":
        st_wide(out, int(args[0]), int(args[1]))
    elif kind == "wide":
        base = open(os.path.join(DEFAULT, args[0]), "rb").read()
        open(out, "wb").write(json_wide(base, int(args[1]), int(args[2])))
    elif kind == "st_overlap":
        st_overlap(out)
    elif kind == "config":
        config(out, args)
    elif kind == "gguf_unused":
        gguf_unused(out, int(args[0]), int(args[1]))
    elif kind == "gguf_keys":
        gguf_keys(out, int(args[0]))
    elif kind == "gguf_long":
        gguf_long(out, int(args[0]))
    else:
        sys.exit(f"bounds_inputs.py: unknown kind {kind}")


if __name__ == "__main__":
    main()
