// Dense GEMV for decode (few rows of x): y[m, n] = sum_k x[m, k] * W[n, k] (+ bias[n]).
// W is [N, K] row-major: f32, f16 (read as packed pairs, so it needs no shader-f16), q4gsw (4-bit signed,
// one f16 scale per group of G along K) or q8 (int8, one f16 scale per 32).
// A workgroup computes 8 outputs n for one m: 8 groups of 32 threads stride over K, then reduce. ggml's block
// types: each lane takes 8 elements of a sub-block at a time (wdot8 in lib/weight_load.wgsli).
//! axis storage
// A weight split into parts (over the binding limit) runs one dispatch a part: its N rows land at columns
// n_off.. of y rows of y_stride (n_off 0, y_stride N when whole); the bias is indexed the same way.
struct Params { M: u32, N: u32, K: u32, has_bias: u32, y_stride: u32, n_off: u32, _p0: u32, _p1: u32 };
@group(0) @binding(0) var<uniform> p: Params;
@group(0) @binding(1) var<storage, read> x: array<f32>;
#define WBIND 2
#define SBIND 5
#define WDOT8 1
#include "lib/weight_load.wgsli"
@group(0) @binding(3) var<storage, read> bias: array<f32>;
@group(0) @binding(4) var<storage, read_write> y: array<f32>;

var<workgroup> red: array<f32, 256>;

@compute @workgroup_size(256)
fn main(@builtin(local_invocation_id) lid: vec3u, @builtin(workgroup_id) wid: vec3u) {
  let lane = lid.x % 32u;
  let r = lid.x / 32u;
  let n = wid.x * 8u + r;
  let m = wid.y;
  var s = 0.0;
  if (n < p.N) {
    let wb = n * p.K;
    let xb = m * p.K;
#if WBLK
    // block types: a lane takes 8 elements of one sub-block at a time (K is whole blocks)
    for (var k = lane * 8u; k < p.K; k += 256u) { s += wdot8(wb + k, xb + k); }
#else
    for (var k = lane; k < p.K; k += 32u) { s += x[xb + k] * wload(wb + k); }
#endif
  }
  red[lid.x] = s;
  workgroupBarrier();
  for (var o = 16u; o > 0u; o >>= 1u) {
    if (lane < o) { red[lid.x] += red[lid.x + o]; }
    workgroupBarrier();
  }
  if (lane == 0u && n < p.N) {
    var v = red[lid.x];
    if (p.has_bias != 0u) { v += bias[p.n_off + n]; }
    y[m * p.y_stride + p.n_off + n] = v;
  }
}
