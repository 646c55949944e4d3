// Dense tiled GEMM for prefill: Y[m, n] = sum_k X[m, k] * W[n, k] (+ bias[n]); X [M, K] f32, W [N, K] in any
// weight storage (lib/weight_load.wgsli), Y [M, N] f32. Any M, N, K (edges are bounds-checked).
//
// A workgroup of 256 threads (16 x 16) owns a tile of TM = 16 * RM rows (m) by 128 columns (n) and walks K in
// steps of 16: each step it stages X[TM][16] and W[128][16] (dequantized once, whatever the storage) in
// workgroup memory, K-major with a vec4 of padding a row (the next step's values are fetched into registers
// while a step is multiplied), and each thread accumulates RM x 8 outputs in
// registers: rows ty*4.. (and 64 + ty*4.. when RM = 8), columns tx*4.. and 64 + tx*4.., read as vec4s, so a step
// costs a thread RM/4 + 2 vec4 loads of workgroup memory for 8 * RM FMAs. RM = 4 (64-row tiles) is what the op
// uses: with the prefetch it measured faster than RM = 8 (fewer loads a FMA, half the workgroups) on every
// projection of the H200 bench (PERF.md).
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

override RM: u32 = 8u; // rows a thread: 4 or 8
override TM: u32 = 16u * RM;
const TN = 128u;
const TK = 16u;
const ROW4 = 33u; // vec4s a K row of the staged tiles: 128 values + one vec4 of padding (fewer bank conflicts)
var<workgroup> xs: array<vec4<f32>, 528>; // [TK][ROW4]: X[m0 + 4q + c][k0 + kk] at xs[kk * ROW4 + q][c]
var<workgroup> ws: array<vec4<f32>, 528>; // [TK][ROW4]: W[n0 + 4q + c][k0 + kk] likewise

// element l of the [TM][TK] X tile / [TN][TK] W tile of step k0 (row l / TK, column l % TK), 0 outside the matrix
fn load_x(m0: u32, k0: u32, l: u32) -> f32 {
  let gm = m0 + l / TK;
  let gk = k0 + l % TK;
  return select(0.0, x[gm * p.K + gk], gm < p.M && gk < p.K);
}
// Thread li's part of the [TN][TK] W tile of step k0, 0 outside the matrix. Two layouts, each the faster for its
// storages on the H200 (docs/perf/12-gemm-load8): ggml's block types read 8 consecutive elements of row li / 2
// (columns (li % 2) * 8 ..) with one wload8, decoding the block's scales once per 8 (where K is a multiple of 8);
// the other storages read one element each, row l / TK and column l % TK of elements l = li + 256 i, so 16 threads
// share a row's 16 consecutive elements (q4gsw: 28 TFLOP/s this way, 22-27 with wload8).
#if WBLK
fn w_row(li: u32, i: u32) -> u32 { return li / 2u; }
fn w_col(li: u32, i: u32) -> u32 { return (li % 2u) * 8u + i; }
fn load_w(n0: u32, k0: u32, li: u32) -> array<f32, 8> {
  let gn = n0 + li / 2u;
  let gk = k0 + (li % 2u) * 8u;
  var v: array<f32, 8>;
  if (gn < p.N) {
    if ((p.K & 7u) == 0u && gk + 8u <= p.K) {
      v = wload8(gn * p.K + gk);
    } else {
      for (var j = 0u; j < 8u; j++) { v[j] = select(0.0, wload(gn * p.K + gk + j), gk + j < p.K); }
    }
  }
  return v;
}
#else
fn w_row(li: u32, i: u32) -> u32 { return (li + 256u * i) / TK; }
fn w_col(li: u32, i: u32) -> u32 { return (li + 256u * i) % TK; }
fn load_w(n0: u32, k0: u32, li: u32) -> array<f32, 8> {
  var v: array<f32, 8>;
  for (var i = 0u; i < 8u; i++) {
    let gn = n0 + w_row(li, i);
    let gk = k0 + w_col(li, i);
    v[i] = select(0.0, wload(gn * p.K + gk), gn < p.N && gk < p.K);
  }
  return v;
}
#endif

@compute @workgroup_size(256)
fn main(@builtin(local_invocation_index) li: u32, @builtin(workgroup_id) wid: vec3u) {
  let m0 = wid.y * TM;
  let n0 = wid.x * TN;
  let tx = li % 16u; // n direction
  let ty = li / 16u; // m direction
  var acc: array<vec4<f32>, 16>; // [RM][2]: row i, column half jh -> columns jh * 64 + tx * 4 + 0..3
  for (var i = 0u; i < 16u; i++) { acc[i] = vec4<f32>(0.0); }
  // the next step's values are loaded into registers while this step's tiles are multiplied
  var px: array<f32, 8>; // [RM]: X elements li + 256 i of the tile
  var pw = load_w(n0, 0u, li); // element i at row w_row(li, i), column w_col(li, i) of the tile
  for (var i = 0u; i < RM; i++) { px[i] = load_x(m0, 0u, li + 256u * i); }
  for (var k0 = 0u; k0 < p.K; k0 += TK) {
    for (var i = 0u; i < RM; i++) {
      let l = li + 256u * i;
      xs[(l % TK) * ROW4 + (l / TK) / 4u][(l / TK) % 4u] = px[i];
    }
    for (var i = 0u; i < 8u; i++) {
      let wr = w_row(li, i);
      ws[w_col(li, i) * ROW4 + wr / 4u][wr % 4u] = pw[i];
    }
    workgroupBarrier();
    if (k0 + TK < p.K) {
      for (var i = 0u; i < RM; i++) { px[i] = load_x(m0, k0 + TK, li + 256u * i); }
      pw = load_w(n0, k0 + TK, li);
    }
    for (var kk = 0u; kk < TK; kk++) {
      let r = kk * ROW4;
      let b0 = ws[r + tx];
      let b1 = ws[r + 16u + tx];
      let a0 = xs[r + ty];
      for (var i = 0u; i < 4u; i++) {
        acc[2u * i] += a0[i] * b0;
        acc[2u * i + 1u] += a0[i] * b1;
      }
      if (RM == 8u) {
        let a1 = xs[r + 16u + ty];
        for (var i = 0u; i < 4u; i++) {
          acc[8u + 2u * i] += a1[i] * b0;
          acc[8u + 2u * i + 1u] += a1[i] * b1;
        }
      }
    }
    workgroupBarrier();
  }
  for (var i = 0u; i < RM; i++) {
    let gm = m0 + select(ty * 4u + i, 64u + ty * 4u + i - 4u, i >= 4u);
    if (gm >= p.M) { continue; }
    for (var jh = 0u; jh < 2u; jh++) {
      for (var j = 0u; j < 4u; j++) {
        let gn = n0 + jh * 64u + tx * 4u + j;
        if (gn >= p.N) { continue; }
        var v = acc[2u * i + jh][j];
        if (p.has_bias != 0u) { v += bias[p.n_off + gn]; }
        y[gm * p.y_stride + p.n_off + gn] = v;
      }
    }
  }
}
