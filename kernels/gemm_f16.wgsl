// Tensor-core GEMM on f16 operands (op_gemm_f16): Y[m, n] = sum_k X[m, k] * W[n, k] (+ bias[n]) on subgroup
// matrices (Dawn's chromium_experimental_subgroup_matrix), f32 sums. X [Mp][K] and W [Np][K] are f16 in u32 pairs
// (element k in the low half when k is even: kernels/dequant_f16.wgsl's output), their rows Mp, Np rounded up to
// 128 so that every tile reads inside them; Y [M][N] f32, rows y_stride apart, columns from n_off. K a multiple of
// 32. The Params block is kernels/matmul.wgsl's.
//
// A workgroup of 256 threads, 8 subgroups of 32 (the op's predicate: subgroups of exactly 32, the adapter offering
// f16 x f16 -> f32 at 16x16x16), owns TM rows by TN = 128 columns and walks K 32 a step. Staged (the default): it
// copies X[TM][32] and W[128][32] into workgroup memory as f16, rows XS = 40 halves apart (rows start in different
// banks for the matrix loads); thread li stages words u = li + 256 j of a tile of 16 words a row, row
// 8 (u / 128) + v / 2 + 4 (v % 2) with v = (u / 16) % 8, so that the two rows a subgroup writes at once are 4
// apart and fall in disjoint banks; the next step's words wait in registers while this step is multiplied.
// TM = 64: subgroup s owns rows 32 (s / 4).. and columns 32 (s % 4)..: 2 x 2 result matrices; TM = 128 (`_m128`):
// rows 32 (s / 2).., columns 64 (s % 2)..: 2 x 4. `_direct`: no workgroup memory, each subgroup loads its
// matrices straight from X and W. Results go straight to Y where the whole tile lies inside it
// and there is no bias; elsewhere through the subgroup's 16 x 16 corner of workgroup memory, where its lanes add the
// bias and write the rows and columns inside Y. `_nomma` and `_nostage` are the bench's probes (the staging
// without the multiplies; the multiplies on whatever workgroup memory holds): their results are not the product.
//! axis f16: MMA=1 requires=shader-f16,subgroups,subgroup-matrix
//! axis -: M128=0 | _m128: M128=1
//! axis -: MODE=0 | _direct: DIRECT=1 | _nomma: NOMMA=1 | _nostage: NOSTAGE=1
// The subgroup-matrix builtins want their offsets subgroup-uniform: the subgroup's index comes from
// @builtin(subgroup_id), which WGSL's analysis knows to be uniform in a subgroup.
struct Params { M: u32, N: u32, K: u32, has_bias: u32, y_stride: u32, n_off: u32, _p0: u32, _p1: u32 };
@group(0) @binding(0) var<uniform> p: Params;
#if DIRECT
@group(0) @binding(1) var<storage, read> x: array<f16>;
@group(0) @binding(2) var<storage, read> w: array<f16>;
#else
@group(0) @binding(1) var<storage, read> x: array<u32>;
@group(0) @binding(2) var<storage, read> w: array<u32>;
#endif
@group(0) @binding(3) var<storage, read> bias: array<f32>;
@group(0) @binding(4) var<storage, read_write> y: array<f32>;

#if M128
const TM = 128u;
const SGM = 2u; // subgroups along n (the rest along m)
#else
const TM = 64u;
const SGM = 4u;
#endif
const TN = 128u;
const TK = 32u;
const XS = 40u;
#ifnot DIRECT
var<workgroup> xs: array<f16, TM * XS>; // [TM][XS]: X[m0 + r][k0 + c] at xs[r * XS + c]
var<workgroup> ws: array<f16, TN * XS>; // [TN][XS]: W[n0 + r][k0 + c] at ws[r * XS + c]
#endif
var<workgroup> st: array<f32, 2048>; // [8 subgroups][16 x 16]: a result matrix on its way out

#ifnot DIRECT
// the staged row of word u (see the header)
fn srow(u: u32) -> u32 {
  let v = (u / 16u) % 8u;
  return 8u * (u / 128u) + v / 2u + 4u * (v % 2u);
}

// word j of thread li in the step at k0 of the tile whose first row is r0 (of x or w: row length K / 2 words)
fn ldx(r0: u32, k0: u32, li: u32, j: u32) -> u32 {
  let u = li + 256u * j;
  return x[(r0 + srow(u)) * (p.K / 2u) + k0 / 2u + u % 16u];
}
fn ldw(r0: u32, k0: u32, li: u32, j: u32) -> u32 {
  let u = li + 256u * j;
  return w[(r0 + srow(u)) * (p.K / 2u) + k0 / 2u + u % 16u];
}
fn stx(li: u32, j: u32, v: u32) {
  let u = li + 256u * j;
  let o = srow(u) * XS + 2u * (u % 16u);
  let h = bitcast<vec2<f16>>(v);
  xs[o] = h.x;
  xs[o + 1u] = h.y;
}
fn stw(li: u32, j: u32, v: u32) {
  let u = li + 256u * j;
  let o = srow(u) * XS + 2u * (u % 16u);
  let h = bitcast<vec2<f16>>(v);
  ws[o] = h.x;
  ws[o + 1u] = h.y;
}
#endif

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
#if DIRECT
  let xr = (m0 + sm) * p.K;
  let wr = (n0 + sn) * p.K;
  for (var k0 = 0u; k0 < p.K; k0 += 16u) {
    let a0 = subgroupMatrixLoad<subgroup_matrix_left<f16, 16, 16>>(&x, xr + k0, false, p.K);
    let a1 = subgroupMatrixLoad<subgroup_matrix_left<f16, 16, 16>>(&x, xr + 16u * p.K + k0, false, p.K);
    let b0 = subgroupMatrixLoad<subgroup_matrix_right<f16, 16, 16>>(&w, wr + k0, true, p.K);
    let b1 = subgroupMatrixLoad<subgroup_matrix_right<f16, 16, 16>>(&w, wr + 16u * p.K + k0, true, p.K);
    c00 = subgroupMatrixMultiplyAccumulate(a0, b0, c00);
    c01 = subgroupMatrixMultiplyAccumulate(a0, b1, c01);
    c10 = subgroupMatrixMultiplyAccumulate(a1, b0, c10);
    c11 = subgroupMatrixMultiplyAccumulate(a1, b1, c11);
#if M128
    let b2 = subgroupMatrixLoad<subgroup_matrix_right<f16, 16, 16>>(&w, wr + 32u * p.K + k0, true, p.K);
    let b3 = subgroupMatrixLoad<subgroup_matrix_right<f16, 16, 16>>(&w, wr + 48u * p.K + k0, true, p.K);
    c02 = subgroupMatrixMultiplyAccumulate(a0, b2, c02);
    c03 = subgroupMatrixMultiplyAccumulate(a0, b3, c03);
    c12 = subgroupMatrixMultiplyAccumulate(a1, b2, c12);
    c13 = subgroupMatrixMultiplyAccumulate(a1, b3, c13);
#endif
  }
#else
  // this step's words (TM = 64: X 4 a thread; 128: 8), W's 8
  var xa = vec4<u32>(ldx(m0, 0u, li, 0u), ldx(m0, 0u, li, 1u), ldx(m0, 0u, li, 2u), ldx(m0, 0u, li, 3u));
#if M128
  var xb = vec4<u32>(ldx(m0, 0u, li, 4u), ldx(m0, 0u, li, 5u), ldx(m0, 0u, li, 6u), ldx(m0, 0u, li, 7u));
#endif
  var wa = vec4<u32>(ldw(n0, 0u, li, 0u), ldw(n0, 0u, li, 1u), ldw(n0, 0u, li, 2u), ldw(n0, 0u, li, 3u));
  var wb = vec4<u32>(ldw(n0, 0u, li, 4u), ldw(n0, 0u, li, 5u), ldw(n0, 0u, li, 6u), ldw(n0, 0u, li, 7u));
  for (var k0 = 0u; k0 < p.K; k0 += TK) {
#ifnot NOSTAGE
    stx(li, 0u, xa.x);
    stx(li, 1u, xa.y);
    stx(li, 2u, xa.z);
    stx(li, 3u, xa.w);
#if M128
    stx(li, 4u, xb.x);
    stx(li, 5u, xb.y);
    stx(li, 6u, xb.z);
    stx(li, 7u, xb.w);
#endif
    stw(li, 0u, wa.x);
    stw(li, 1u, wa.y);
    stw(li, 2u, wa.z);
    stw(li, 3u, wa.w);
    stw(li, 4u, wb.x);
    stw(li, 5u, wb.y);
    stw(li, 6u, wb.z);
    stw(li, 7u, wb.w);
#endif
    workgroupBarrier();
#ifnot NOSTAGE
    if (k0 + TK < p.K) {
      let k1 = k0 + TK;
      xa = vec4<u32>(ldx(m0, k1, li, 0u), ldx(m0, k1, li, 1u), ldx(m0, k1, li, 2u), ldx(m0, k1, li, 3u));
#if M128
      xb = vec4<u32>(ldx(m0, k1, li, 4u), ldx(m0, k1, li, 5u), ldx(m0, k1, li, 6u), ldx(m0, k1, li, 7u));
#endif
      wa = vec4<u32>(ldw(n0, k1, li, 0u), ldw(n0, k1, li, 1u), ldw(n0, k1, li, 2u), ldw(n0, k1, li, 3u));
      wb = vec4<u32>(ldw(n0, k1, li, 4u), ldw(n0, k1, li, 5u), ldw(n0, k1, li, 6u), ldw(n0, k1, li, 7u));
    }
#endif
#ifnot NOMMA
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
#endif
    workgroupBarrier();
  }
#endif
  let gm = m0 + sm;
  let gn = n0 + sn;
  if (p.has_bias == 0u && m0 + TM <= p.M && n0 + TN <= p.N) { // the whole tile inside Y: straight there
    let o = gm * p.y_stride + p.n_off + gn;
    let o16 = 16u * p.y_stride;
    subgroupMatrixStore(&y, o, c00, false, p.y_stride);
    subgroupMatrixStore(&y, o + 16u, c01, false, p.y_stride);
    subgroupMatrixStore(&y, o + o16, c10, false, p.y_stride);
    subgroupMatrixStore(&y, o + o16 + 16u, c11, false, p.y_stride);
#if M128
    subgroupMatrixStore(&y, o + 32u, c02, false, p.y_stride);
    subgroupMatrixStore(&y, o + 48u, c03, false, p.y_stride);
    subgroupMatrixStore(&y, o + o16 + 32u, c12, false, p.y_stride);
    subgroupMatrixStore(&y, o + o16 + 48u, c13, false, p.y_stride);
#endif
    return;
  }
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
