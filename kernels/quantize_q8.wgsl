// Activations to int8 blocks for the fast precision's integer-dot kernels (op_quantize_q8; the CPU twin is
// ref_quantize_q8): x [M][K] f32 (rows contiguous) ->
//   q  [M][K/4] u32: element k as an int8 in byte k % 4 of word k / 4, q = round(x * 127 / amax) (ties to even),
//      so |q| <= 127;
//   ds [M][K/32] vec2<f32>: for each block of 32 elements of a row, d = amax / 127 (amax = max |x| over the
//      block; 0 for a block of zeros, whose q are 0) and d * sum(q) (what a weight type's minimum term needs).
// One thread a block; K a multiple of 32 (the op checks).
//! variant f32: X=0
struct Params { M: u32, K: u32, _p0: u32, _p1: u32 };
@group(0) @binding(0) var<uniform> p: Params;
@group(0) @binding(1) var<storage, read> x: array<vec4<f32>>;
@group(0) @binding(2) var<storage, read_write> q: array<vec2<u32>>;
@group(0) @binding(3) var<storage, read_write> ds: array<vec2<f32>>;

// four int8 (already within -127..127) in the bytes of a word, element 0 in the low byte
fn pack_i8(v: vec4<i32>) -> u32 {
  let b = bitcast<vec4<u32>>(v) & vec4<u32>(255u);
  return b.x | (b.y << 8u) | (b.z << 16u) | (b.w << 24u);
}

@compute @workgroup_size(64)
fn main(@builtin(global_invocation_id) gid: vec3u, @builtin(num_workgroups) nwg: vec3u) {
  let b = gid.x + gid.y * nwg.x * 64u; // block index over all rows: rows are contiguous, so block b is vec4s 8b..
  if (b >= p.M * (p.K / 32u)) { return; }
  var v: array<vec4<f32>, 8>;
  var amax = vec4<f32>(0.0);
  for (var i = 0u; i < 8u; i++) {
    v[i] = x[8u * b + i];
    amax = max(amax, abs(v[i]));
  }
  let a = max(max(amax.x, amax.y), max(amax.z, amax.w));
  let id = select(0.0, 127.0 / a, a > 0.0);
  var sum = vec4<i32>(0);
  for (var i = 0u; i < 4u; i++) {
    let q0 = vec4<i32>(clamp(round(v[2u * i] * id), vec4<f32>(-127.0), vec4<f32>(127.0)));
    let q1 = vec4<i32>(clamp(round(v[2u * i + 1u] * id), vec4<f32>(-127.0), vec4<f32>(127.0)));
    sum += q0 + q1;
    q[4u * b + i] = vec2<u32>(pack_i8(q0), pack_i8(q1));
  }
  let d = a / 127.0;
  ds[b] = vec2<f32>(d, d * f32(sum.x + sum.y + sum.z + sum.w));
}
