// Dense tiled GEMM for prefill: Y[m, n] = sum_k X[m, k] * W[n, k] (+ bias[n]); X [M, K] f32, W [N, K]
// f32, f16 (packed pairs), q4gsw or q8 (see matvec.wgsl), Y [M, N] f32. 64x64 output tile per workgroup, 16-wide K steps through
// workgroup memory, 4x4 outputs per thread. Any M, N, K (edges are bounds-checked).
//! axis storage
// A weight split into parts (over the binding limit) runs one dispatch a part: its N rows land at columns
// n_off.. of y rows of y_stride (n_off 0, y_stride N when whole); the bias is indexed the same way.
struct Params { M: u32, N: u32, K: u32, has_bias: u32, y_stride: u32, n_off: u32, _p0: u32, _p1: u32 };
@group(0) @binding(0) var<uniform> p: Params;
@group(0) @binding(1) var<storage, read> x: array<f32>;
#define WBIND 2
#define SBIND 5
#include "lib/weight_load.wgsli"
@group(0) @binding(3) var<storage, read> bias: array<f32>;
@group(0) @binding(4) var<storage, read_write> y: array<f32>;

const TM = 64u;
const TN = 64u;
const TK = 16u;
var<workgroup> xs: array<f32, 1024>; // [TM][TK]
var<workgroup> ws: array<f32, 1024>; // [TN][TK]

@compute @workgroup_size(256)
fn main(@builtin(local_invocation_id) lid: vec3u, @builtin(workgroup_id) wid: vec3u) {
  let m0 = wid.y * TM;
  let n0 = wid.x * TN;
  let tx = lid.x % 16u; // n direction
  let ty = lid.x / 16u; // m direction
  var acc: array<f32, 16>;
  for (var i = 0u; i < 16u; i++) { acc[i] = 0.0; }
  for (var k0 = 0u; k0 < p.K; k0 += TK) {
    for (var l = lid.x; l < TM * TK; l += 256u) {
      let mm = l / TK;
      let kk = l % TK;
      let gm = m0 + mm;
      let gk = k0 + kk;
      xs[l] = select(0.0, x[gm * p.K + gk], gm < p.M && gk < p.K);
      let gn = n0 + mm;
      ws[l] = select(0.0, wload(gn * p.K + gk), gn < p.N && gk < p.K);
    }
    workgroupBarrier();
    for (var kk = 0u; kk < TK; kk++) {
      var xv: array<f32, 4>;
      var wv: array<f32, 4>;
      for (var i = 0u; i < 4u; i++) {
        xv[i] = xs[(ty * 4u + i) * TK + kk];
        wv[i] = ws[(tx + i * 16u) * TK + kk];
      }
      for (var i = 0u; i < 4u; i++) {
        for (var j = 0u; j < 4u; j++) { acc[i * 4u + j] += xv[i] * wv[j]; }
      }
    }
    workgroupBarrier();
  }
  for (var i = 0u; i < 4u; i++) {
    let gm = m0 + ty * 4u + i;
    if (gm >= p.M) { continue; }
    for (var j = 0u; j < 4u; j++) {
      let gn = n0 + tx + j * 16u;
      if (gn >= p.N) { continue; }
      var v = acc[i * 4u + j];
      if (p.has_bias != 0u) { v += bias[p.n_off + gn]; }
      y[gm * p.y_stride + p.n_off + gn] = v;
    }
  }
}
