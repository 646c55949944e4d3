// Flash-decoding, pass 2: combines the chunks of attn_split for each query head h:
// out[h*hd + d] = sum_c e^(m_c - M) acc_c[d] / sum_c e^(m_c - M) l_c, M = max_c m_c, over the chunks that hold
// keys (derived from pos[0], like pass 1). Variant "paged": workgroup (h, s) combines sequence s's chunks (its
// partials' block, its pos[s]) into out[s*out_stride + h*hd + d]. With Params.sinks (1 + the first head's index in
// sinks), head h's sink logit joins the denominator (gpt-oss: den + e^(sink - M), both rescaled to max(M, sink)).
//! variant f32: PAGED=0
//! variant paged: PAGED=1
struct Params { n_head: u32, n_kv_head: u32, head_dim: u32, ctx: u32,
                window: u32, max_chunks: u32, out_stride: u32, sinks: u32 };
@group(0) @binding(0) var<uniform> p: Params;
@group(0) @binding(1) var<storage, read> partial: array<f32>;
@group(0) @binding(2) var<storage, read> pos: array<u32>;
@group(0) @binding(3) var<storage, read_write> out: array<f32>;
@group(0) @binding(4) var<storage, read> sinks: array<f32>;
#include "lib/kv_range.wgsli"

override B: u32 = 128u; // chunk length of attn_split
const WG = 128u;

// The start of chunk c's record (acc[hd], m, l) for one query head, c clamped to the last chunk written
fn rec(cb: u32, c: u32, n_chunks: u32) -> u32 {
  return (cb + min(c, n_chunks - 1u) * (p.n_head / p.n_kv_head)) * (p.head_dim + 2u);
}

// Chunk c's (l, acc[d]) weighed by e^(m_c - M); 0 for an index past the last chunk
fn term(cb: u32, c: u32, n_chunks: u32, d: u32, M: f32) -> vec2<f32> {
  let b = rec(cb, c, n_chunks);
  let w = select(0.0, exp(partial[b + p.head_dim] - M), c < n_chunks);
  return w * vec2<f32>(partial[b + p.head_dim + 1u], partial[b + d]);
}

@compute @workgroup_size(128)
fn main(@builtin(local_invocation_id) lid: vec3u, @builtin(workgroup_id) wid: vec3u) {
  let h = wid.x;
  let sq = wid.y; // the sequence (0 unless paged)
  let hd = p.head_dim;
  let n_rep = p.n_head / p.n_kv_head;
  let kvh = h / n_rep;
  let r = h % n_rep;
  let pb = sq * p.n_kv_head * p.max_chunks; // the sequence's block of partials, in chunks
  let last = kv_last(pos[sq]);
  let first = kv_first(last, p.ctx, p.window);
  let n_chunks = min((last - (first / B) * B) / B + 1u, p.max_chunks); // never past the partials written
  let cb = (pb + kvh * p.max_chunks) * n_rep + r; // chunk c's record is at (cb + c * n_rep) * (hd + 2)
  // four chunks' loads in flight at a time; a chunk index past the last reads the last one again, which leaves the
  // max as it is and gets weight 0 below
  var M = -3.0e38;
  for (var c = 0u; c < n_chunks; c += 4u) {
    let m0 = partial[rec(cb, c, n_chunks) + hd];
    let m1 = partial[rec(cb, c + 1u, n_chunks) + hd];
    let m2 = partial[rec(cb, c + 2u, n_chunks) + hd];
    let m3 = partial[rec(cb, c + 3u, n_chunks) + hd];
    M = max(M, max(max(m0, m1), max(m2, m3)));
  }
  var a = 1.0; // the factor on the numerators: 1 without sinks
  var sk = 0.0;
  if (p.sinks != 0u) {
    sk = sinks[h + p.sinks - 1u];
    a = exp(M - max(M, sk));
  }
  for (var d = lid.x; d < hd; d += WG) {
    var dn = vec2<f32>(0.0); // (den, num)
    for (var c = 0u; c < n_chunks; c += 4u) {
      dn += term(cb, c, n_chunks, d, M) + term(cb, c + 1u, n_chunks, d, M) + term(cb, c + 2u, n_chunks, d, M) +
            term(cb, c + 3u, n_chunks, d, M);
    }
    var den = dn.x;
    let num = dn.y;
    if (p.sinks != 0u) { den = den * a + exp(sk - max(M, sk)); }
#if PAGED
    out[sq * p.out_stride + h * hd + d] = num * a / den;
#else
    out[h * hd + d] = num * a / den;
#endif
  }
}
