// Decode GEMV for q4gsw weights, tuned for bandwidth: y[m, n] = sum_k x[m, k] * W[n, k] (+ bias), M <= 4.
// One row n per group of 32 threads (8 rows per workgroup); each thread streams 16-byte chunks (32 nibbles
// = one group of 32 along K) so neighbouring threads read neighbouring bytes, and dots them with 8 vec4 of x.
// Needs K % 32 == 0. Variant "sg" reduces with subgroupAdd (needs subgroups of exactly 32 lanes, checked by the
// op's predicate); "wg" reduces through workgroup memory on any device.
//! variant wg: SG=0
//! variant sg: SG=1 requires=subgroups
struct Params { M: u32, N: u32, K: u32, has_bias: u32 };
@group(0) @binding(0) var<uniform> p: Params;
@group(0) @binding(1) var<storage, read> x: array<vec4<f32>>;
@group(0) @binding(2) var<storage, read> w: array<vec4<u32>>;
@group(0) @binding(3) var<storage, read> bias: array<f32>;
@group(0) @binding(4) var<storage, read_write> y: array<f32>;
@group(0) @binding(5) var<storage, read> wscale: array<u32>;
override G: u32 = 32u;

#ifnot SG
var<workgroup> red: array<f32, 256>;
#endif

fn nib(wd: u32, i: u32) -> f32 { return f32((wd >> (4u * i)) & 15u) - 8.0; }

fn chunk_dot(c: vec4<u32>, xb: u32) -> f32 {
  var s = 0.0;
  for (var j = 0u; j < 4u; j++) {
    let wd = c[j];
    let x0 = x[xb + 2u * j];
    let x1 = x[xb + 2u * j + 1u];
    s += dot(vec4<f32>(nib(wd, 0u), nib(wd, 1u), nib(wd, 2u), nib(wd, 3u)), x0);
    s += dot(vec4<f32>(nib(wd, 4u), nib(wd, 5u), nib(wd, 6u), nib(wd, 7u)), x1);
  }
  return s;
}

@compute @workgroup_size(256)
fn main(@builtin(local_invocation_id) lid: vec3u, @builtin(workgroup_id) wid: vec3u,
        @builtin(num_workgroups) nwg: vec3u) {
  let lane = lid.x % 32u;
  let n = (wid.x + wid.y * nwg.x) * 8u + lid.x / 32u;
  let chunks = p.K / 32u;          // 16-byte chunks per row
  let gpc = p.K / G;               // scale groups per row
  var acc = array<f32, 4>(0.0, 0.0, 0.0, 0.0);
  if (n < p.N) {
    for (var c = lane; c < chunks; c += 32u) {
      let q = w[n * chunks + c];
      let g = n * gpc + (c * 32u) / G;
      let sc = unpack2x16float(wscale[g >> 1u])[g & 1u];
      for (var m = 0u; m < p.M; m++) { acc[m] += sc * chunk_dot(q, m * (p.K / 4u) + c * 8u); }
    }
  }
  for (var m = 0u; m < p.M; m++) {
#if SG
    let t = subgroupAdd(acc[m]);
#else
    red[lid.x] = acc[m];
    workgroupBarrier();
    for (var o = 16u; o > 0u; o >>= 1u) {
      if (lane < o) { red[lid.x] += red[lid.x + o]; }
      workgroupBarrier();
    }
    let t = red[lid.x - lane];
    workgroupBarrier();
#endif
    if (lane == 0u && n < p.N) {
      var v = t;
      if (p.has_bias != 0u) { v += bias[n]; }
      y[m * p.N + n] = v;
    }
  }
}
