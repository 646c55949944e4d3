// Mixture-of-experts combine (src/ops/op_moe.c, op_moe_combine): out[t][n] = sum_j w[t][j] * y[t * k + j][n] for
// n < D, the slots in order j = 0..k-1 (f32), added to out's value when accumulate (the residual stream).
// y [T * k][D] f32 (the experts' rows, op_moe_linear's pair order), w [T][k] f32, out [T][D] f32.
//! variant f32: X=0
struct Params { D: u32, T: u32, k: u32, accumulate: u32 };
@group(0) @binding(0) var<uniform> p: Params;
@group(0) @binding(1) var<storage, read> y: array<f32>;
@group(0) @binding(2) var<storage, read> w: array<f32>;
@group(0) @binding(3) var<storage, read_write> out: array<f32>;

@compute @workgroup_size(256)
fn main(@builtin(global_invocation_id) gid: vec3u) {
  let n = gid.x;
  let t = gid.y;
  if (n >= p.D || t >= p.T) { return; }
  var s = 0.0;
  for (var j = 0u; j < p.k; j++) { s += w[t * p.k + j] * y[(t * p.k + j) * p.D + n]; }
  if (p.accumulate != 0u) { s += out[t * p.D + n]; }
  out[t * p.D + n] = s;
}
