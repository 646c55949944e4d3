// Tensor-core GEMM on int8 operands (dev_gemm_i8, src/dev/gemm_i8.c: a measured and rejected design, kept as developer
// variants for the bench and its conformance cases: 44-47 TFLOP/s on the H200 against 73-195 for kernels/gemm_f16.wgsl,
// docs/PERF.md): Y[m, n] = sum_k X[m, k] * W[n, k] (+ bias[n])
// with the math of kernels/matmul_q8.wgsl (X as int8 blocks of 32 from kernels/quantize_q8.wgsl: x_q, d_x and
// d_x * sum x_q a block; W a block-quantized weight in its own storage read as int8 w_q and factors (s, c) through
// lib/weight_int8.wgsli), so that a block of 32 contributes
//   d_x * s * dot(x_q, w_q) + c * (d_x * sum x_q)
// but with each block's dot products as one i8 x i8 -> i32 subgroup-matrix multiply of 16 x 16 x 32 (Dawn's
// chromium_experimental_subgroup_matrix) instead of dot4I8Packed. The result matrices are opaque and every block
// has its own factors, so each block's i32 matrices go through workgroup memory, where each lane scales its 8
// values of each into f32 sums kept in registers. Storages whose two half blocks have their own scale (Q6_K:
// WHALF) have no variant: a 32-deep multiply cannot apply two. Y [M][N] f32, rows y_stride apart, columns from n_off
// (a weight in row parts runs a dispatch a part). K a multiple of 32 (256 for the K-quants); any M and N.
//
// A workgroup of 256 threads, 8 subgroups of 32 (the op's predicate: subgroups of exactly 32, the adapter offering
// i8 x i8 -> i32 at 16x16x32), owns 64 rows by 128 columns; subgroup s owns rows 32 (s / 4).. and columns
// 32 (s % 4)..: 2 x 2 result matrices. The grid runs along M first (workgroup_id.x: the row tile), so the
// workgroups in flight share their W tiles in the L2 cache. It walks K a block a step: X's 64 x 8 words and W's
// 128 x 8 words staged in workgroup memory row-major, rows XW words apart (16 bytes of padding), with the blocks'
// factors; the next block's words wait in registers while this one is multiplied. Three barriers a block: staged,
// results stored, results read.
//! variant q4: WQ4=1 requires=subgroups,subgroup-matrix dev=1
//! variant q8: WQ8=1 requires=subgroups,subgroup-matrix dev=1
//! variant q4_1: WBLK=1 WQ4_1=1 requires=subgroups,subgroup-matrix dev=1
//! variant q5_0: WBLK=1 WQ5_0=1 requires=subgroups,subgroup-matrix dev=1
//! variant q5_1: WBLK=1 WQ5_1=1 requires=subgroups,subgroup-matrix dev=1
//! variant q4k: WBLK=1 WQ4_K=1 requires=subgroups,subgroup-matrix dev=1
//! variant q5k: WBLK=1 WQ5_K=1 requires=subgroups,subgroup-matrix dev=1
//! variant iq4nl: WBLK=1 WIQ4_NL=1 requires=subgroups,subgroup-matrix dev=1
//! variant iq4xs: WBLK=1 WIQ4_XS=1 requires=subgroups,subgroup-matrix dev=1
// The subgroup-matrix builtins want their offsets subgroup-uniform: the subgroup's index comes from
// @builtin(subgroup_id), which WGSL's analysis knows to be uniform in a subgroup.
struct Params { M: u32, N: u32, K: u32, has_bias: u32, y_stride: u32, n_off: u32, _p0: u32, _p1: u32 };
@group(0) @binding(0) var<uniform> p: Params;
@group(0) @binding(1) var<storage, read> xq: array<u32>;       // [M][K/4]
@group(0) @binding(2) var<storage, read> xds: array<vec2<f32>>; // [M][K/32]: d_x, d_x * sum x_q
#define WBIND 3
#define SBIND 6
#include "lib/weight_int8.wgsli"
@group(0) @binding(4) var<storage, read> bias: array<f32>;
@group(0) @binding(5) var<storage, read_write> y: array<f32>;

const XW = 12u; // words between staged rows: a block's 8 and 4 of padding (rows start 16-byte aligned)
var<workgroup> xs: array<i32, 768>;   // [64][XW]: word j of row r at xs[r * XW + j] (bytes: 4 XW a row)
var<workgroup> ws: array<i32, 1536>;  // [128][XW]
var<workgroup> xf: array<vec2<f32>, 64>;  // the rows' d_x, d_x * sum x_q of the block
var<workgroup> wf: array<vec2<f32>, 128>; // the columns' s, c of the block
var<workgroup> st: array<i32, 8192>;  // [8 subgroups][4 matrices][16 x 16]: the block's sums on their way to f32

// thread li's X word i of block kb: row li / 8 + 32 i of the tile, word li % 8 (0 past the last row)
fn load_x(m0: u32, kb: u32, li: u32, i: u32) -> u32 {
  let r = m0 + li / 8u + 32u * i;
  return select(0u, xq[min(r, p.M - 1u) * (p.K / 4u) + 8u * kb + li % 8u], r < p.M);
}

@compute @workgroup_size(256)
fn main(@builtin(local_invocation_index) li: u32, @builtin(workgroup_id) wid: vec3u,
        @builtin(subgroup_id) s: u32, @builtin(subgroup_invocation_id) l: u32) {
  let m0 = wid.x * 64u; // along M first: see the header
  let n0 = wid.y * 128u;
  let sm = 32u * (s / 4u); // the subgroup's rows and columns in the tile
  let sn = 32u * (s % 4u);
  let wn = li / 2u; // the W row (output column) this thread stages, and its half block
  let wh = li % 2u;
  let wrow = min(n0 + wn, p.N - 1u); // rows past the end read the last one, their factors 0
  let wlive = n0 + wn < p.N;
  let lr = l / 16u; // the lane's rows lr + 2 i and column lc of each 16 x 16 result (row-major in st)
  let lc = l % 16u;
  var acc: array<f32, 32>; // [2 x 2 matrices][8 rows]
  for (var i = 0u; i < 32u; i++) { acc[i] = 0.0; }
  let nkb = p.K / 32u;
  var px0 = load_x(m0, 0u, li, 0u);
  var px1 = load_x(m0, 0u, li, 1u);
  var pw = wq(wrow, 0u, wh);
  for (var kb = 0u; kb < nkb; kb++) {
    let xr = li / 8u;
    let xw = li % 8u;
    xs[xr * XW + xw] = bitcast<i32>(px0);
    xs[(xr + 32u) * XW + xw] = bitcast<i32>(px1);
    for (var j = 0u; j < 4u; j++) { ws[wn * XW + 4u * wh + j] = bitcast<i32>(pw[j]); }
    if (li < 64u) {
      xf[li] = select(vec2<f32>(0.0), xds[min(m0 + li, p.M - 1u) * nkb + kb], m0 + li < p.M);
    }
    if (wh == 0u) {
      let f = select(vec2<f32>(0.0), wfac(wrow, kb, 0u), wlive);
      wf[wn] = vec2<f32>(f.x, select(0.0, f.y, WMIN));
    }
    workgroupBarrier();
    if (kb + 1u < nkb) {
      px0 = load_x(m0, kb + 1u, li, 0u);
      px1 = load_x(m0, kb + 1u, li, 1u);
      pw = wq(wrow, kb + 1u, wh);
    }
    let a0 = subgroupMatrixLoad<subgroup_matrix_left<i8, 32, 16>>(&xs, sm * 4u * XW, false, 4u * XW);
    let a1 = subgroupMatrixLoad<subgroup_matrix_left<i8, 32, 16>>(&xs, (sm + 16u) * 4u * XW, false, 4u * XW);
    let b0 = subgroupMatrixLoad<subgroup_matrix_right<i8, 16, 32>>(&ws, sn * 4u * XW, true, 4u * XW);
    let b1 = subgroupMatrixLoad<subgroup_matrix_right<i8, 16, 32>>(&ws, (sn + 16u) * 4u * XW, true, 4u * XW);
    let z = subgroup_matrix_result<i32, 16, 16>();
    subgroupMatrixStore(&st, 1024u * s, subgroupMatrixMultiplyAccumulate(a0, b0, z), false, 16u);
    subgroupMatrixStore(&st, 1024u * s + 256u, subgroupMatrixMultiplyAccumulate(a0, b1, z), false, 16u);
    subgroupMatrixStore(&st, 1024u * s + 512u, subgroupMatrixMultiplyAccumulate(a1, b0, z), false, 16u);
    subgroupMatrixStore(&st, 1024u * s + 768u, subgroupMatrixMultiplyAccumulate(a1, b1, z), false, 16u);
    workgroupBarrier();
    let f0 = wf[sn + lc];
    let f1 = wf[sn + 16u + lc];
    for (var t = 0u; t < 2u; t++) { // the matrix row t: rows sm + 16 t + lr + 2 i
      for (var i = 0u; i < 8u; i++) {
        let xv = xf[sm + 16u * t + lr + 2u * i];
        let e = 1024u * s + 512u * t + 16u * (lr + 2u * i) + lc;
        acc[16u * t + i] += f32(st[e]) * (xv.x * f0.x) + xv.y * f0.y;
        acc[16u * t + 8u + i] += f32(st[e + 256u]) * (xv.x * f1.x) + xv.y * f1.y;
      }
    }
    workgroupBarrier();
  }
  for (var t = 0u; t < 2u; t++) {
    for (var i = 0u; i < 8u; i++) {
      let gm = m0 + sm + 16u * t + lr + 2u * i;
      if (gm >= p.M) { continue; }
      for (var j = 0u; j < 2u; j++) {
        let gn = n0 + sn + 16u * j + lc;
        if (gn >= p.N) { continue; }
        var v = acc[16u * t + 8u * j + i];
        if (p.has_bias != 0u) { v += bias[p.n_off + gn]; }
        y[gm * p.y_stride + p.n_off + gn] = v;
      }
    }
  }
}
