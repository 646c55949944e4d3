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
  var M = -3.0e38;
  for (var c = 0u; c < n_chunks; c++) {
    M = max(M, partial[((pb + kvh * p.max_chunks + c) * n_rep + r) * (hd + 2u) + hd]);
  }
  var den = 0.0;
  for (var c = 0u; c < n_chunks; c++) {
    let b = ((pb + kvh * p.max_chunks + c) * n_rep + r) * (hd + 2u);
    den += exp(partial[b + hd] - M) * partial[b + hd + 1u];
  }
  var a = 1.0; // the factor on the numerators: 1 without sinks
  if (p.sinks != 0u) {
    let sk = sinks[h + p.sinks - 1u];
    let mx = max(M, sk);
    a = exp(M - mx);
    den = den * a + exp(sk - mx);
  }
  for (var d = lid.x; d < hd; d += WG) {
    var num = 0.0;
    for (var c = 0u; c < n_chunks; c++) {
      let b = ((pb + kvh * p.max_chunks + c) * n_rep + r) * (hd + 2u);
      num += exp(partial[b + hd] - M) * partial[b + d];
    }
#if PAGED
    out[sq * p.out_stride + h * hd + d] = num * a / den;
#else
    out[h * hd + d] = num * a / den;
#endif
  }
}
