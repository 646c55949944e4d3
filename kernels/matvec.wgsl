// Dense GEMV for decode (few rows of x): y[m, n] = sum_k x[m, k] * W[n, k] (+ bias[n]).
// W is [N, K] row-major in any weight storage (lib/weight_load.wgsli): f32, f16 and bf16 (packed pairs, so no
// shader-f16), q4gsw, q8 and ggml's block types.
// A workgroup computes 8 outputs n for MB rows m (1, 2, 4 or 8): 8 groups of 32 threads stride over K, each weight
// element loaded once for the MB rows, then reduce. Each row's sum is taken in the same order whatever MB and M
// are (lane l adds k = l, l + 32, ... (block types: 8 elements of one sub-block from 8 l on, a step of 256) in turn,
// then the 32 lanes' halving tree), so a row's result is the same bits alone or in a batch: a decode step's rows
// are those of one session's step (llm_linear).
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

override MB: u32 = 1u; // rows of x a workgroup: 1, 2, 4 or 8
var<workgroup> red: array<f32, 2048>; // [MB][256]

@compute @workgroup_size(256)
fn main(@builtin(local_invocation_id) lid: vec3u, @builtin(workgroup_id) wid: vec3u) {
  let lane = lid.x % 32u;
  let r = lid.x / 32u;
  let n = wid.x * 8u + r;
  let m0 = wid.y * MB;
  // rows past M (the last workgroup's) repeat row M - 1 and are not written: every loop runs MB times
  var s: array<f32, 8>; // [MB]
  for (var j = 0u; j < 8u; j++) { s[j] = 0.0; }
  if (n < p.N) {
    let wb = n * p.K;
#if WBLK
    // block types: a lane takes 8 elements of one sub-block at a time (K is whole blocks)
    for (var k = lane * 8u; k < p.K; k += 256u) {
      let w8 = wload8(wb + k);
      for (var j = 0u; j < MB; j++) {
        let xb = min(m0 + j, p.M - 1u) * p.K + k;
        var d = 0.0;
        for (var e = 0u; e < 8u; e++) { d += x[xb + e] * w8[e]; }
        s[j] += d;
      }
    }
#else
    for (var k = lane; k < p.K; k += 32u) {
      let wv = wload(wb + k);
      for (var j = 0u; j < MB; j++) { s[j] += x[min(m0 + j, p.M - 1u) * p.K + k] * wv; }
    }
#endif
  }
  for (var j = 0u; j < MB; j++) { red[j * 256u + lid.x] = s[j]; }
  workgroupBarrier();
  for (var o = 16u; o > 0u; o >>= 1u) {
    if (lane < o) {
      for (var j = 0u; j < MB; j++) { red[j * 256u + lid.x] += red[j * 256u + lid.x + o]; }
    }
    workgroupBarrier();
  }
  if (lane == 0u && n < p.N) {
    for (var j = 0u; j < MB && m0 + j < p.M; j++) {
      var v = red[j * 256u + lid.x];
      if (p.has_bias != 0u) { v += bias[p.n_off + n]; }
      y[(m0 + j) * p.y_stride + p.n_off + n] = v;
    }
  }
}
