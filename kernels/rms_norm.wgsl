// RMSNorm over the last dimension: out[r, i] = x[r, i] / sqrt(mean(x[r]^2) + eps) * (w[i] + w_offset).
// w_offset is 1 for Gemma's (1 + w) convention. One workgroup per row. Input row r starts at
// in_off + r * in_stride, or with group > 0 at in_off + (r / group) * in_gstride + (r % group) * in_stride, so
// per-head norms (Qwen3 q/k norm) run over the heads of every token of a fused QKV row in one dispatch;
// output row r at out_off + r * out_stride, or grouped the same way with out_gstride. With w2_from > 0 (and group),
// the rows from w2_from on in each group take the second weight w2 (Qwen3's q heads and then k heads of a token,
// each with its own norm weight, in one dispatch). Variant "add" adds the result to out (Gemma's norms after
// attention and the MLP, before the residual add).
//! variant f32: ACC=0
//! variant add: ACC=1
struct Params { n: u32, rows: u32, in_stride: u32, out_stride: u32, eps: f32, w_offset: f32, in_off: u32, group: u32,
                in_gstride: u32, out_off: u32, out_gstride: u32, w2_from: u32 };
@group(0) @binding(0) var<uniform> p: Params;
@group(0) @binding(1) var<storage, read> x: array<f32>;
@group(0) @binding(2) var<storage, read> w: array<f32>;
@group(0) @binding(3) var<storage, read_write> out: array<f32>;
@group(0) @binding(4) var<storage, read> w2: array<f32>;

var<workgroup> partial: array<f32, 256>;

@compute @workgroup_size(256)
fn main(@builtin(local_invocation_id) lid: vec3u, @builtin(workgroup_id) wid: vec3u,
        @builtin(num_workgroups) nwg: vec3u) {
  let row = wid.x + wid.y * nwg.x;
  if (row >= p.rows) { return; }
  var xb = p.in_off + row * p.in_stride;
  if (p.group > 0u) { xb = p.in_off + (row / p.group) * p.in_gstride + (row % p.group) * p.in_stride; }
  var ob = p.out_off + row * p.out_stride;
  if (p.group > 0u) { ob = p.out_off + (row / p.group) * p.out_gstride + (row % p.group) * p.out_stride; }
  var s = 0.0;
  for (var i = lid.x; i < p.n; i += 256u) {
    let v = x[xb + i];
    s += v * v;
  }
  partial[lid.x] = s;
  workgroupBarrier();
  for (var k = 128u; k > 0u; k >>= 1u) {
    if (lid.x < k) { partial[lid.x] += partial[lid.x + k]; }
    workgroupBarrier();
  }
  let inv = inverseSqrt(partial[0] / f32(p.n) + p.eps);
  let second = p.w2_from > 0u && p.group > 0u && row % p.group >= p.w2_from;
  for (var i = lid.x; i < p.n; i += 256u) {
    let wi = select(w[i], w2[i], second) + p.w_offset;
#if ACC
    out[ob + i] = out[ob + i] + x[xb + i] * inv * wi;
#else
    out[ob + i] = x[xb + i] * inv * wi;
#endif
  }
}
