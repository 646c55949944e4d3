// Tensor-core GEMM for prefill in the fast precision (op_matmul_mma): Y[m, n] = sum_k X[m, k] * W[n, k] (+ bias[n])
// on subgroup matrices (Dawn's chromium_experimental_subgroup_matrix), f16 operands and f32 accumulation. X [M, K]
// f32 (rounded to f16 as it is staged, clamped to f16's range), W [N, K] in any weight storage
// (lib/weight_load.wgsli, dequantized to f32 then rounded to f16 as it is staged), Y [M, N] f32 with rows y_stride
// apart and columns from n_off (a weight in row parts runs a dispatch a part). K a multiple of 32; any M and N.
// The Params block and bindings are kernels/matmul.wgsl's, so the op records both the same way.
//
// A workgroup of 256 threads, 8 subgroups of 32 (the op's predicate: subgroups of exactly 32, the adapter offering
// f16 x f16 -> f32 at 16x16x16), owns TM rows (m) by TN = 128 columns (n) and walks K 32 a step: it stages
// X[TM][32] and W[128][32] as f16 in workgroup memory, row-major with XS - 32 halves of padding a row (the next
// step's values are fetched into registers while this step is multiplied). TM = 64: subgroup s owns rows
// 32 (s / 4).. and columns 32 (s % 4)..: 2 x 2 result matrices of 16 x 16; TM = 128 (`_m128`): rows 32 (s / 2)..
// and columns 64 (s % 2)..: 2 x 4 result matrices, half the W staging a multiply. Each step is two K-halves of 2
// left (X rows), 2 or 4 right (W rows read column-major: W^T) and their multiply-accumulates. At the end each
// result matrix goes through the subgroup's 16 x 16 f32 corner of workgroup memory, where its lanes add the bias
// and write the rows and columns inside Y.
//! axis storage
//! axis -: MMA=1 requires=shader-f16,subgroups,subgroup-matrix
//! axis -: M128=0 | _m128: M128=1
// The subgroup-matrix builtins want their offsets subgroup-uniform: the subgroup's index comes from
// @builtin(subgroup_id), which WGSL's analysis knows to be uniform in a subgroup (li / 32 is refused).
struct Params { M: u32, N: u32, K: u32, has_bias: u32, y_stride: u32, n_off: u32, _p0: u32, _p1: u32 };
@group(0) @binding(0) var<uniform> p: Params;
@group(0) @binding(1) var<storage, read> x: array<vec4<f32>>;
#define WBIND 2
#define SBIND 5
#include "lib/weight_load.wgsli"
@group(0) @binding(3) var<storage, read> bias: array<f32>;
@group(0) @binding(4) var<storage, read_write> y: array<f32>;

#if M128
const TM = 128u;
const XV = 4u; // vec4s of X a thread stages a step: row li / 2, columns 16 (li % 2)..
const SGM = 2u; // subgroups along n (the rest along m)
#else
const TM = 64u;
const XV = 2u; // row li / 4, columns 8 (li % 4)..
const SGM = 4u;
#endif
const TN = 128u;
const TK = 32u;
const XS = 40u; // halves a staged row: 32 values + 8 of padding (rows start in different banks)
var<workgroup> xs: array<f16, TM * XS>; // [TM][XS]: X[m0 + r][k0 + c] at xs[r * XS + c]
var<workgroup> ws: array<f16, TN * XS>; // [TN][XS]: W[n0 + r][k0 + c] at ws[r * XS + c]
var<workgroup> st: array<f32, 2048>;    // [8 subgroups][16 x 16]: a result matrix on its way out

// thread li's 4 XV X values of step k0 (0 past the last row)
fn load_x(m0: u32, k0: u32, li: u32) -> array<vec4<f32>, 4> {
  let per = 32u / (4u * XV); // threads a row
  let gm = m0 + li / per;
  let i = (min(gm, p.M - 1u) * p.K + k0 + 4u * XV * (li % per)) / 4u;
  let live = gm < p.M;
  var v: array<vec4<f32>, 4>;
  for (var j = 0u; j < XV; j++) { v[j] = select(vec4<f32>(0.0), x[i + j], live); }
  return v;
}

// thread li's 16 W values of step k0: row li / 2, columns 16 (li % 2).. (0 past the last row)
fn load_w(n0: u32, k0: u32, li: u32) -> array<f32, 16> {
  let gn = n0 + li / 2u;
  var v: array<f32, 16>;
  if (gn < p.N) {
    let e = gn * p.K + k0 + 16u * (li % 2u);
#if WQ4
    // q4gsw: the 16 nibbles are two words, one group's scale (G is a multiple of 16, e of 16)
    let w0 = w[e >> 3u];
    let w1 = w[(e >> 3u) + 1u];
    let g = e / G;
    let sc = unpack2x16float(wscale[g >> 1u])[g & 1u];
    for (var j = 0u; j < 8u; j++) {
      v[j] = (f32((w0 >> (4u * j)) & 15u) - 8.0) * sc;
      v[8u + j] = (f32((w1 >> (4u * j)) & 15u) - 8.0) * sc;
    }
#else
#if WBLK
    let a = wload8(e);
    let b = wload8(e + 8u);
    for (var j = 0u; j < 8u; j++) { v[j] = a[j]; v[8u + j] = b[j]; }
#else
    for (var j = 0u; j < 16u; j++) { v[j] = wload(e + j); }
#endif
#endif
  }
  return v;
}

fn h(v: f32) -> f16 { return f16(clamp(v, -65504.0, 65504.0)); }

// lane l of subgroup s writes its 8 of the 256 values of the result matrix staged at st[256 s..], the tile whose
// corner is (gm0, gn0) in Y
fn write_tile(s: u32, l: u32, gm0: u32, gn0: u32) {
  for (var i = 0u; i < 8u; i++) {
    let e = l + 32u * i;
    let gm = gm0 + e / 16u;
    let gn = gn0 + e % 16u;
    if (gm < p.M && gn < p.N) {
      var v = st[256u * s + e];
      if (p.has_bias != 0u) { v += bias[p.n_off + gn]; }
      y[gm * p.y_stride + p.n_off + gn] = v;
    }
  }
}

@compute @workgroup_size(256)
fn main(@builtin(local_invocation_index) li: u32, @builtin(workgroup_id) wid: vec3u,
        @builtin(subgroup_id) s: u32, @builtin(subgroup_invocation_id) l: u32) {
  let m0 = wid.y * TM;
  let n0 = wid.x * TN;
  let sm = 32u * (s / SGM); // the subgroup's rows and columns in the tile
  let sn = (TN / SGM) * (s % SGM);
  var c00: subgroup_matrix_result<f32, 16, 16>;
  var c01: subgroup_matrix_result<f32, 16, 16>;
  var c10: subgroup_matrix_result<f32, 16, 16>;
  var c11: subgroup_matrix_result<f32, 16, 16>;
#if M128
  var c02: subgroup_matrix_result<f32, 16, 16>;
  var c03: subgroup_matrix_result<f32, 16, 16>;
  var c12: subgroup_matrix_result<f32, 16, 16>;
  var c13: subgroup_matrix_result<f32, 16, 16>;
#endif
  var px = load_x(m0, 0u, li);
  var pw = load_w(n0, 0u, li);
  let per = 32u / (4u * XV);
  let xo = (li / per) * XS + 4u * XV * (li % per);
  let wo = (li / 2u) * XS + 16u * (li % 2u);
  for (var k0 = 0u; k0 < p.K; k0 += TK) {
    for (var i = 0u; i < XV; i++) {
      for (var j = 0u; j < 4u; j++) { xs[xo + 4u * i + j] = h(px[i][j]); }
    }
    for (var j = 0u; j < 16u; j++) { ws[wo + j] = h(pw[j]); }
    workgroupBarrier();
    if (k0 + TK < p.K) {
      px = load_x(m0, k0 + TK, li);
      pw = load_w(n0, k0 + TK, li);
    }
    for (var kk = 0u; kk < TK; kk += 16u) {
      let a0 = subgroupMatrixLoad<subgroup_matrix_left<f16, 16, 16>>(&xs, sm * XS + kk, false, XS);
      let a1 = subgroupMatrixLoad<subgroup_matrix_left<f16, 16, 16>>(&xs, (sm + 16u) * XS + kk, false, XS);
      let b0 = subgroupMatrixLoad<subgroup_matrix_right<f16, 16, 16>>(&ws, sn * XS + kk, true, XS);
      let b1 = subgroupMatrixLoad<subgroup_matrix_right<f16, 16, 16>>(&ws, (sn + 16u) * XS + kk, true, XS);
      c00 = subgroupMatrixMultiplyAccumulate(a0, b0, c00);
      c01 = subgroupMatrixMultiplyAccumulate(a0, b1, c01);
      c10 = subgroupMatrixMultiplyAccumulate(a1, b0, c10);
      c11 = subgroupMatrixMultiplyAccumulate(a1, b1, c11);
#if M128
      let b2 = subgroupMatrixLoad<subgroup_matrix_right<f16, 16, 16>>(&ws, (sn + 32u) * XS + kk, true, XS);
      let b3 = subgroupMatrixLoad<subgroup_matrix_right<f16, 16, 16>>(&ws, (sn + 48u) * XS + kk, true, XS);
      c02 = subgroupMatrixMultiplyAccumulate(a0, b2, c02);
      c03 = subgroupMatrixMultiplyAccumulate(a0, b3, c03);
      c12 = subgroupMatrixMultiplyAccumulate(a1, b2, c12);
      c13 = subgroupMatrixMultiplyAccumulate(a1, b3, c13);
#endif
    }
    workgroupBarrier();
  }
  let gm = m0 + sm;
  let gn = n0 + sn;
  subgroupMatrixStore(&st, 256u * s, c00, false, 16u);
  workgroupBarrier();
  write_tile(s, l, gm, gn);
  workgroupBarrier();
  subgroupMatrixStore(&st, 256u * s, c01, false, 16u);
  workgroupBarrier();
  write_tile(s, l, gm, gn + 16u);
  workgroupBarrier();
  subgroupMatrixStore(&st, 256u * s, c10, false, 16u);
  workgroupBarrier();
  write_tile(s, l, gm + 16u, gn);
  workgroupBarrier();
  subgroupMatrixStore(&st, 256u * s, c11, false, 16u);
  workgroupBarrier();
  write_tile(s, l, gm + 16u, gn + 16u);
#if M128
  workgroupBarrier();
  subgroupMatrixStore(&st, 256u * s, c02, false, 16u);
  workgroupBarrier();
  write_tile(s, l, gm, gn + 32u);
  workgroupBarrier();
  subgroupMatrixStore(&st, 256u * s, c03, false, 16u);
  workgroupBarrier();
  write_tile(s, l, gm, gn + 48u);
  workgroupBarrier();
  subgroupMatrixStore(&st, 256u * s, c12, false, 16u);
  workgroupBarrier();
  write_tile(s, l, gm + 16u, gn + 32u);
  workgroupBarrier();
  subgroupMatrixStore(&st, 256u * s, c13, false, 16u);
  workgroupBarrier();
  write_tile(s, l, gm + 16u, gn + 48u);
#endif
}
