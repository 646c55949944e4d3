// RMSNorm over the last dimension: out[r, i] = x[r, i] / sqrt(mean(x[r]^2) + eps) * (w[i] + w_offset).
// w_offset is 1 for Gemma's (1 + w) convention. One workgroup per row; rows may be strided (in_stride,
// out_stride in elements; the first row at element in_off) so per-head norms (Qwen3 q/k norm) run on [T, H, D] views in one dispatch.
//! variant f32: X=0
struct Params { n: u32, rows: u32, in_stride: u32, out_stride: u32, eps: f32, w_offset: f32, in_off: u32, _p1: u32 };
@group(0) @binding(0) var<uniform> p: Params;
@group(0) @binding(1) var<storage, read> x: array<f32>;
@group(0) @binding(2) var<storage, read> w: array<f32>;
@group(0) @binding(3) var<storage, read_write> out: array<f32>;

var<workgroup> partial: array<f32, 256>;

@compute @workgroup_size(256)
fn main(@builtin(local_invocation_id) lid: vec3u, @builtin(workgroup_id) wid: vec3u,
        @builtin(num_workgroups) nwg: vec3u) {
  let row = wid.x + wid.y * nwg.x;
  if (row >= p.rows) { return; }
  let xb = p.in_off + row * p.in_stride;
  let ob = row * p.out_stride;
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
  for (var i = lid.x; i < p.n; i += 256u) {
    out[ob + i] = x[xb + i] * inv * (w[i] + p.w_offset);
  }
}
