// Tensor-core GEMM on f16 operands (op_gemm_f16): Y[m, n] = sum_k X[m, k] * W[n, k] (+ bias[n]) on subgroup
// matrices (Dawn's chromium_experimental_subgroup_matrix), f32 sums. X [Mp][K] and W [Np][K] are f16 in u32 pairs
// (element k in the low half when k is even: kernels/dequant_f16.wgsl's output), their rows Mp, Np rounded up to
// 128 so that every tile reads inside them; Y [M][N] f32, rows y_stride apart, columns from n_off. K a multiple of
// TK. The Params block is kernels/matmul.wgsl's.
//
// A workgroup of 256 threads, 8 subgroups of 32 (the op's predicate: subgroups of exactly 32, the adapter offering
// f16 x f16 -> f32 at 16x16x16), owns TM rows by 128 columns. TM = 64: subgroup s owns rows 32 (s / 4).. and
// columns 32 (s % 4)..: 2 x 2 result matrices of 16 x 16; TM = 128 (`_m128`): rows 32 (s / 2).., columns
// 64 (s % 2)..: 2 x 4. The grid runs along M first (workgroup_id.x: the row tile), so the workgroups in flight
// share their W tiles in the L2 cache and W streams from memory about once. It walks K TK a step (32, or 64:
// `_k64`), copying X[TM][TK] and W[128][TK] into workgroup memory as f16, rows XS = TK + 8 halves apart (the rows
// of a matrix load start in different banks), the next step's words waiting in registers while this step is
// multiplied. Each thread copies words: a subgroup's 32 lanes read 128 consecutive bytes (with TK = 32 the two rows
// a subgroup writes at once are 4 apart, in disjoint banks); a thread's rows are r0, r0 + RS, ..., so its
// addresses are a base plus multiples of a stride, computed once. Results go straight to Y where the whole tile
// lies inside it and there is no bias; elsewhere through the subgroup's 16 x 16 corner of workgroup memory, where
// its lanes add the bias and write the rows and columns inside Y. `_nomma` and `_nostage` are the bench's probes
// (the copies without the multiplies; the multiplies on whatever workgroup memory holds): their results are not
// the product; dev=1, they are in wgllm_dev's table only (src/dev/gemm_f16_probe.c runs them).
//! axis f16: MMA=1 requires=shader-f16,subgroups,subgroup-matrix
//! axis -: K64=0 TK=32 | _k64: K64=1 TK=64
//! axis -: M128=0 | _m128: M128=1
//! axis -: MODE=0 | _nomma: NOMMA=1 dev=1 | _nostage: NOSTAGE=1 dev=1
// The subgroup-matrix builtins want their offsets subgroup-uniform: the subgroup's index comes from
// @builtin(subgroup_id), which WGSL's analysis knows to be uniform in a subgroup.
struct Params { M: u32, N: u32, K: u32, has_bias: u32, y_stride: u32, n_off: u32, _p0: u32, _p1: u32 };
@group(0) @binding(0) var<uniform> p: Params;
@group(0) @binding(1) var<storage, read> x: array<u32>;
@group(0) @binding(2) var<storage, read> w: array<u32>;
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
const TK = {{TK}}u;
const XS = TK + 8u;
const WR = TK / 2u; // words a staged row
const RS = 256u / WR; // rows between a thread's words
var<workgroup> xs: array<f16, TM * XS>; // [TM][XS]: X[m0 + r][k0 + c] at xs[r * XS + c]
var<workgroup> ws: array<f16, TN * XS>; // [TN][XS]: W[n0 + r][k0 + c] at ws[r * XS + c]
var<workgroup> st: array<f32, 2048>;    // [8 subgroups][16 x 16]: a result matrix on its way out

// the thread's first row in a staged tile (see the header)
fn first_row(li: u32) -> u32 {
#if K64
  return li / WR;
#else
  let v = (li / 16u) % 8u; // TK = 32: two rows a subgroup, made 4 apart
  return 8u * (li / 128u) + v / 2u + 4u * (v % 2u);
#endif
}

// group g of the thread's words of this step (its words 4 g .. 4 g + 3): from index b (its first word at k0), rs
// words between its rows
fn ldx(b: u32, rs: u32, g: u32) -> vec4<u32> {
  let i = b + 4u * g * rs;
  return vec4<u32>(x[i], x[i + rs], x[i + 2u * rs], x[i + 3u * rs]);
}
fn ldw(b: u32, rs: u32, g: u32) -> vec4<u32> {
  let i = b + 4u * g * rs;
  return vec4<u32>(w[i], w[i + rs], w[i + 2u * rs], w[i + 3u * rs]);
}
// the same group into workgroup memory from half o (the thread's first word)
fn stx(o: u32, g: u32, v: vec4<u32>) {
  for (var i = 0u; i < 4u; i++) {
    let a = o + (4u * g + i) * RS * XS;
    let h = bitcast<vec2<f16>>(v[i]);
    xs[a] = h.x;
    xs[a + 1u] = h.y;
  }
}
fn stw(o: u32, g: u32, v: vec4<u32>) {
  for (var i = 0u; i < 4u; i++) {
    let a = o + (4u * g + i) * RS * XS;
    let h = bitcast<vec2<f16>>(v[i]);
    ws[a] = h.x;
    ws[a + 1u] = h.y;
  }
}

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
  let m0 = wid.x * TM; // along M first: see the header
  let n0 = wid.y * TN;
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
  // the thread's words: X rows m0 + r0 + RS i, W rows n0 + r0 + RS i, at word c0 of each row; X has TM TK / 2048
  // groups of 4 words a thread (xa, xc, xe, xg), W TK / 16 (wa, wc, we, wg)
  let r0 = first_row(li);
  let c0 = li % WR;
  let ku = p.K / 2u; // words a row of X or W
  let rs = RS * ku;
  let xb = (m0 + r0) * ku + c0;
  let wb = (n0 + r0) * ku + c0;
  let so = r0 * XS + 2u * c0;
  var xa = ldx(xb, rs, 0u);
#if M128
  var xc = ldx(xb, rs, 1u);
#if K64
  var xe = ldx(xb, rs, 2u);
  var xg = ldx(xb, rs, 3u);
#endif
#else
#if K64
  var xc = ldx(xb, rs, 1u);
#endif
#endif
  var wa = ldw(wb, rs, 0u);
  var wc = ldw(wb, rs, 1u);
#if K64
  var we = ldw(wb, rs, 2u);
  var wg = ldw(wb, rs, 3u);
#endif
  for (var k0 = 0u; k0 < p.K; k0 += TK) {
#ifnot NOSTAGE
    stx(so, 0u, xa);
#if M128
    stx(so, 1u, xc);
#if K64
    stx(so, 2u, xe);
    stx(so, 3u, xg);
#endif
#else
#if K64
    stx(so, 1u, xc);
#endif
#endif
    stw(so, 0u, wa);
    stw(so, 1u, wc);
#if K64
    stw(so, 2u, we);
    stw(so, 3u, wg);
#endif
#endif
    workgroupBarrier();
#ifnot NOSTAGE
    if (k0 + TK < p.K) {
      let k1 = (k0 + TK) / 2u;
      xa = ldx(xb + k1, rs, 0u);
#if M128
      xc = ldx(xb + k1, rs, 1u);
#if K64
      xe = ldx(xb + k1, rs, 2u);
      xg = ldx(xb + k1, rs, 3u);
#endif
#else
#if K64
      xc = ldx(xb + k1, rs, 1u);
#endif
#endif
      wa = ldw(wb + k1, rs, 0u);
      wc = ldw(wb + k1, rs, 1u);
#if K64
      we = ldw(wb + k1, rs, 2u);
      wg = ldw(wb + k1, rs, 3u);
#endif
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
