"""ggml's block types for reference fixtures: random blocks of every type wgllm reads and their dequantization
in numpy, following ggml-quants.c (checked bit for bit against llama.cpp's own ggml on the golden vectors in
tests/data/quant: `python3 tools/gguf/ggml_blocks.py tests/data/quant`). A fixture whose weights ARE these
dequantized values is exactly representable in the type, so the reference needs no quantizer.

    blob, w = random_blocks("Q6_K", rows, cols, rng)   # uint8 [rows, row_bytes], float32 [rows, cols]
"""
import sys

import numpy as np

# name: (ggml type id, elements a block, bytes a block)
TYPES = {"Q4_0": (2, 32, 18), "Q4_1": (3, 32, 20), "Q5_0": (6, 32, 22), "Q5_1": (7, 32, 24), "Q8_0": (8, 32, 34),
         "Q2_K": (10, 256, 84), "Q3_K": (11, 256, 110), "Q4_K": (12, 256, 144), "Q5_K": (13, 256, 176),
         "Q6_K": (14, 256, 210), "IQ4_NL": (20, 32, 18), "IQ4_XS": (23, 256, 136)}
IQ4NL = np.array([-127, -104, -83, -65, -49, -35, -22, -10, 1, 13, 25, 38, 53, 69, 89, 113], dtype=np.float32)


def _h(b, off):  # f16 at byte off of every block -> float32 [nb]
    return b[:, off:off + 2].copy().view(np.float16)[:, 0].astype(np.float32)


def _scale_min_k4(scales):  # [nb, 12] -> 6-bit scales, mins [nb, 8] (ggml's get_scale_min_k4)
    q = scales.astype(np.uint16)
    d = np.empty((q.shape[0], 8), np.uint16); m = np.empty_like(d)
    d[:, :4] = q[:, 0:4] & 63; m[:, :4] = q[:, 4:8] & 63
    d[:, 4:] = (q[:, 8:12] & 0xF) | ((q[:, 0:4] >> 6) << 4)
    m[:, 4:] = (q[:, 8:12] >> 4) | ((q[:, 4:8] >> 6) << 4)
    return d.astype(np.float32), m.astype(np.float32)


def dequantize(name, blob, n):
    """float32 [n] of n elements stored as blocks of `name` (a uint8 array)."""
    _, qk, bb = TYPES[name]
    b = np.frombuffer(bytes(blob), np.uint8).reshape(-1, bb)
    nb = b.shape[0]
    f32 = np.float32
    if name in ("Q4_0", "Q4_1", "Q5_0", "Q5_1", "IQ4_NL"):
        d = _h(b, 0)
        qs = b[:, {"Q4_0": 2, "Q4_1": 4, "Q5_0": 6, "Q5_1": 8, "IQ4_NL": 2}[name]:]
        lo, hi = (qs & 0xF).astype(np.int32), (qs >> 4).astype(np.int32)
        if name in ("Q5_0", "Q5_1"):
            qh = b[:, {"Q5_0": 2, "Q5_1": 4}[name]:][:, :4].copy().view("<u4")[:, 0].astype(np.int64)
            j = np.arange(16)
            lo = lo | (((qh[:, None] >> j) << 4) & 0x10).astype(np.int32)
            hi = hi | ((qh[:, None] >> (j + 12)) & 0x10).astype(np.int32)
        x = np.concatenate([lo, hi], 1)
        if name == "Q4_0": y = (x - 8).astype(f32) * d[:, None]
        elif name == "Q5_0": y = (x - 16).astype(f32) * d[:, None]
        elif name == "IQ4_NL": y = d[:, None] * IQ4NL[x]
        else: y = x.astype(f32) * d[:, None] + _h(b, 2)[:, None]
        return y.reshape(-1)[:n]
    if name == "Q8_0":
        return (b[:, 2:].view(np.int8).astype(f32) * _h(b, 0)[:, None]).reshape(-1)[:n]
    if name == "Q2_K":
        sc, q, d, mn = b[:, :16], b[:, 16:80], _h(b, 80), _h(b, 82)
        y = np.empty((nb, 256), f32)
        for half in range(2):
            for j in range(4):
                for part in range(2):
                    s = sc[:, half * 8 + 2 * j + part]
                    dl = d * (s & 0xF).astype(f32); ml = mn * (s >> 4).astype(f32)
                    v = ((q[:, half * 32 + part * 16: half * 32 + part * 16 + 16] >> (2 * j)) & 3).astype(f32)
                    o = half * 128 + j * 32 + part * 16
                    y[:, o:o + 16] = dl[:, None] * v - ml[:, None]
        return y.reshape(-1)[:n]
    if name == "Q3_K":
        hm, q, d = b[:, :32], b[:, 32:96], _h(b, 108)
        aux = b[:, 96:108].copy().view("<u4").astype(np.uint32)  # [nb, 3]
        k1, k2 = np.uint32(0x03030303), np.uint32(0x0f0f0f0f)
        a0, a1, tmp = aux[:, 0], aux[:, 1], aux[:, 2]
        s = np.stack([(a0 & k2) | (((tmp >> 0) & k1) << 4), (a1 & k2) | (((tmp >> 2) & k1) << 4),
                      ((a0 >> 4) & k2) | (((tmp >> 4) & k1) << 4), ((a1 >> 4) & k2) | (((tmp >> 6) & k1) << 4)], 1)
        scales = s.astype("<u4").view(np.int8).reshape(nb, 16).astype(np.int32)
        y = np.empty((nb, 256), f32)
        isc = 0
        m = 1
        for half in range(2):
            for j in range(4):
                for part in range(2):
                    dl = d * (scales[:, isc] - 32).astype(f32); isc += 1
                    sl = slice(half * 32 + part * 16, half * 32 + part * 16 + 16)
                    v = ((q[:, sl] >> (2 * j)) & 3).astype(np.int32) - np.where(hm[:, part * 16: part * 16 + 16] & m, 0, 4)
                    o = half * 128 + j * 32 + part * 16
                    y[:, o:o + 16] = dl[:, None] * v.astype(f32)
                m <<= 1
        return y.reshape(-1)[:n]
    if name in ("Q4_K", "Q5_K"):
        d, mn = _h(b, 0), _h(b, 2)
        sc, mm = _scale_min_k4(b[:, 4:16])
        if name == "Q4_K": ql, qh = b[:, 16:144], None
        else: qh, ql = b[:, 16:48], b[:, 48:176]
        y = np.empty((nb, 256), f32)
        for g in range(4):
            q = ql[:, g * 32:(g + 1) * 32]
            lo, hi = (q & 0xF).astype(f32), (q >> 4).astype(f32)
            if qh is not None:
                lo = lo + np.where(qh & (1 << (2 * g)), 16, 0).astype(f32)
                hi = hi + np.where(qh & (2 << (2 * g)), 16, 0).astype(f32)
            d1, m1 = d * sc[:, 2 * g], mn * mm[:, 2 * g]
            d2, m2 = d * sc[:, 2 * g + 1], mn * mm[:, 2 * g + 1]
            y[:, g * 64: g * 64 + 32] = d1[:, None] * lo - m1[:, None]
            y[:, g * 64 + 32: g * 64 + 64] = d2[:, None] * hi - m2[:, None]
        return y.reshape(-1)[:n]
    if name == "Q6_K":
        ql, qh, sc, d = b[:, :128], b[:, 128:192], b[:, 192:208].view(np.int8).astype(f32), _h(b, 208)
        y = np.empty((nb, 256), f32)
        for h in range(2):
            L, Q, S = ql[:, 64 * h: 64 * h + 64], qh[:, 32 * h: 32 * h + 32], sc[:, 8 * h: 8 * h + 8]
            q1 = ((L[:, :32] & 0xF) | (((Q >> 0) & 3) << 4)).astype(np.int32) - 32
            q2 = ((L[:, 32:] & 0xF) | (((Q >> 2) & 3) << 4)).astype(np.int32) - 32
            q3 = ((L[:, :32] >> 4) | (((Q >> 4) & 3) << 4)).astype(np.int32) - 32
            q4 = ((L[:, 32:] >> 4) | (((Q >> 6) & 3) << 4)).astype(np.int32) - 32
            isx = np.arange(32) // 16
            for k, qq in enumerate((q1, q2, q3, q4)):
                y[:, 128 * h + 32 * k: 128 * h + 32 * k + 32] = (d[:, None] * S[:, isx + 2 * k]) * qq.astype(f32)
        return y.reshape(-1)[:n]
    if name == "IQ4_XS":
        d, sh, sl, qs = _h(b, 0), b[:, 2:4].copy().view("<u2")[:, 0].astype(np.int32), b[:, 4:8], b[:, 8:136]
        y = np.empty((nb, 256), f32)
        for ib in range(8):
            ls = ((sl[:, ib // 2] >> (4 * (ib % 2))) & 0xF).astype(np.int32) | (((sh >> (2 * ib)) & 3) << 4)
            dl = d * (ls - 32).astype(f32)
            q = qs[:, 16 * ib: 16 * ib + 16]
            y[:, 32 * ib: 32 * ib + 16] = dl[:, None] * IQ4NL[q & 0xF]
            y[:, 32 * ib + 16: 32 * ib + 32] = dl[:, None] * IQ4NL[q >> 4]
        return y.reshape(-1)[:n]
    raise ValueError(name)


def random_blocks(name, rows, cols, rng, scale=0.02):
    """Random blocks of `name` for a [rows, cols] matrix (cols a multiple of the block): random bytes, with the
    f16 scales set to moderate values so the weights are of size ~scale. Returns (blob [rows, row_bytes] uint8,
    the dequantized float32 [rows, cols])."""
    _, qk, bb = TYPES[name]
    assert cols % qk == 0, (name, cols)
    nb = rows * cols // qk
    b = rng.integers(0, 256, size=(nb, bb), dtype=np.uint8)
    def put(off, vals):
        b[:, off:off + 2] = np.asarray(vals, np.float16).reshape(nb, 1).view(np.uint8).reshape(nb, 2)
    u = lambda lo, hi: rng.uniform(lo, hi, nb)
    if name in ("Q4_0", "Q5_0"): put(0, u(0.5, 1.5) * scale / 8)
    elif name in ("Q4_1", "Q5_1"): put(0, u(0.5, 1.5) * scale / 8); put(2, -u(0.5, 1.5) * scale * (1.0 if name == "Q4_1" else 2.0))
    elif name == "Q8_0": put(0, u(0.5, 1.5) * scale / 64)
    elif name == "IQ4_NL": put(0, u(0.5, 1.5) * scale / 64)
    elif name == "Q2_K": put(80, u(0.5, 1.5) * scale / 20); put(82, u(0.5, 1.5) * scale / 30)
    elif name == "Q3_K": put(108, u(0.5, 1.5) * scale / 64)
    elif name in ("Q4_K", "Q5_K"): put(0, u(0.5, 1.5) * scale / 200); put(2, u(0.5, 1.5) * scale / 120)
    elif name == "Q6_K": put(208, u(0.5, 1.5) * scale / 1000)
    elif name == "IQ4_XS": put(0, u(0.5, 1.5) * scale / 1500)
    w = dequantize(name, b.reshape(-1), rows * cols).reshape(rows, cols)
    return b.reshape(rows, cols // qk * bb), w


if __name__ == "__main__":  # check against the golden vectors made with ggml itself
    import os, struct
    d, bad = sys.argv[1], 0
    for name in TYPES:
        raw = open(os.path.join(d, name + ".bin"), "rb").read()
        n = struct.unpack_from("<I", raw, 0)[0]
        nbytes = struct.unpack_from("<I", raw, 4 + 4 * n)[0]
        blob = raw[8 + 4 * n: 8 + 4 * n + nbytes]
        want = np.frombuffer(raw[8 + 4 * n + nbytes:], "<f4")
        got = dequantize(name, np.frombuffer(blob, np.uint8), n)
        diff = int((got.view(np.uint32) != want.view(np.uint32)).sum())
        bad += diff != 0
        print(f"{name:7s} {diff} of {n} elements differ from ggml")
    sys.exit(1 if bad else 0)
