// Activations to int8 blocks for the fast precision's integer-dot kernels (op_quantize_q8, op_quantize_q8_rows;
// the CPU twin is ref_quantize_q8): x [M][K] f32 (rows contiguous) ->
//   q  [M][K/4] u32: element k as an int8 in byte k % 4 of word k / 4, q = round(x * 127 / amax) (ties to even),
//      so |q| <= 127;
//   ds [M][K/32] vec2<f32>: for each block of 32 elements of a row, d = amax / 127 (amax = max |x| over the
//      block; 0 for a block of zeros, whose q are 0) and d * sum(q) (what a weight type's minimum term needs).
// Variant f32 (prefill): one thread a block of any row. Variant row (decode, M = 1..8 tokens): a workgroup a row,
// which may first apply the RMSNorm a projection starts with (has_norm: x' = x / rms(x) * (norm_w + w_offset), the
// quantized values those of x'), and may store the words of each group of 8 elements evens first (perm:
// word 2j = elements 8j, 8j + 2, 8j + 4, 8j + 6 and word 2j + 1 the odd ones, the order of q4gsw's low and high
// nibbles, so kernels/gemv_q8.wgsl dots a nibble word with two masks and no shuffles). K a multiple of 32 (the
// ops check).
//! variant f32: ROW=0
//! variant row: ROW=1
struct Params { M: u32, K: u32, has_norm: u32, perm: u32, eps: f32, w_offset: f32, _p0: u32, _p1: u32 };
@group(0) @binding(0) var<uniform> p: Params;
@group(0) @binding(1) var<storage, read> x: array<vec4<f32>>;
@group(0) @binding(2) var<storage, read_write> q: array<vec2<u32>>;
@group(0) @binding(3) var<storage, read_write> ds: array<vec2<f32>>;

#include "lib/quant_int8.wgsli"

// block b (its 32 values, already normed, in v) -> its words and (d, d * sum q)
fn store_block(b: u32, v: ptr<function, array<vec4<f32>, 8>>, perm: bool) {
  var w: array<vec2<u32>, 4>;
  ds[b] = quant_block(v, perm, &w);
  for (var i = 0u; i < 4u; i++) { q[4u * b + i] = w[i]; }
}

#if ROW
@group(0) @binding(4) var<storage, read> norm_w: array<vec4<f32>>;
const WG = 128u;
var<workgroup> red: array<f32, WG>;

@compute @workgroup_size(WG)
fn main(@builtin(local_invocation_index) li: u32, @builtin(workgroup_id) wid: vec3u) {
  let row = min(wid.x, p.M - 1u);
  let nv = p.K / 4u;
  let x0 = row * nv;
  var sc = 1.0;
  if (p.has_norm != 0u) {
    var ss = 0.0;
    for (var i = li; i < nv; i += WG) {
      let v = x[x0 + i];
      ss += dot(v, v);
    }
    red[li] = ss;
    workgroupBarrier();
    for (var k = WG / 2u; k > 0u; k >>= 1u) {
      if (li < k) { red[li] += red[li + k]; }
      workgroupBarrier();
    }
    sc = inverseSqrt(red[0] / f32(p.K) + p.eps);
  }
  let nb = p.K / 32u;
  for (var b = li; b < nb; b += WG) {
    var v: array<vec4<f32>, 8>;
    for (var i = 0u; i < 8u; i++) {
      v[i] = x[x0 + 8u * b + i];
      if (p.has_norm != 0u) { v[i] = v[i] * sc * (norm_w[8u * b + i] + vec4<f32>(p.w_offset)); }
    }
    store_block(row * nb + b, &v, p.perm != 0u);
  }
}
#else
@compute @workgroup_size(64)
fn main(@builtin(global_invocation_id) gid: vec3u, @builtin(num_workgroups) nwg: vec3u) {
  let b = gid.x + gid.y * nwg.x * 64u; // block index over all rows: rows are contiguous, so block b is vec4s 8b..
  if (b >= p.M * (p.K / 32u)) { return; }
  var v: array<vec4<f32>, 8>;
  for (var i = 0u; i < 8u; i++) { v[i] = x[8u * b + i]; }
  store_block(b, &v, false);
}
#endif
